/* SPDX-License-Identifier: BSD-3-Clause */
/* The metadata file, DIR/zonednull.meta: the geometry a restart must
 * keep, the READONLY and OFFLINE zones and the bad blocks, none of which
 * the zone files can hold.  It is rewritten whole through a temporary
 * file, so that a crash leaves the old one or the new one.
 */
#include "util/escape.h"
#include "storage/store-dir.h"

static void
geometry_of (const struct zn_dev *dev, struct meta_geometry *m)
{
  const uint64_t mib = (1 << 20) >> ZN_SECTOR_SHIFT;

  m->size = dev->geo.capacity / mib;
  m->zone_size = dev->geo.zone_sectors / mib;
  m->zone_capacity = dev->geo.zone_capacity / mib;
  m->zone_nr_conv = dev->geo.nr_conv;
  m->blocksize = dev->geo.block_size;
}

int
store_meta_write_locked (struct zn_dev *dev)
{
  struct zn_store *st = dev->store;
  struct meta_geometry m;
  FILE *fp;
  int fd, ret = 0;

  geometry_of (dev, &m);
  /* A new file, not one found there (a link to follow): what an earlier
   * write left goes first.
   */
  if (unlinkat (st->dirfd, META_TMP, 0) < 0 && errno != ENOENT)
    return -errno;
  fd = openat (st->dirfd, META_TMP, O_WRONLY | O_CREAT | O_EXCL | IN_DIR,
               0600);
  if (fd < 0 || (fp = fdopen (fd, "w")) == NULL) {
    ret = -errno;
    if (fd >= 0)
      close (fd);
    return ret;
  }
  fprintf (fp, "# zonednull backing_dir: the geometry this directory was "
           "made with, and\n# what the zone files cannot hold.  The zone "
           "files are zloop's layout.\n");
  fprintf (fp, "format %d\nsize %" PRIu64 "\nzone_size %" PRIu64
           "\nzone_capacity %" PRIu64 "\nzone_nr_conv %" PRIu64
           "\nblocksize %" PRIu64 "\n", META_FORMAT, m.size, m.zone_size,
           m.zone_capacity, m.zone_nr_conv, m.blocksize);
  fprintf (fp, "generation %016" PRIx64 "\n", dev->generation);
  for (uint32_t i = 0; i < dev->geo.nr_zones; i++)
    if (st->special[i])
      fprintf (fp, "%s %" PRIu32 "\n", st->special[i] == ZN_COND_READONLY
               ? "readonly" : "offline", i);
  for (size_t i = 0; i < st->bb->nr; i++)
    fprintf (fp, "badblocks %" PRIu64 " %" PRIu64 "\n", st->bb->first[i],
             st->bb->last[i]);
  if (fflush (fp) || fdatasync (fd))
    ret = -errno;
  if (fclose (fp) && ret == 0)
    ret = -errno;
  if (ret == 0 && renameat (st->dirfd, META_TMP, st->dirfd, META_NAME))
    ret = -errno;
  if (ret == 0 && fsync (st->dirfd))
    ret = -errno;
  return ret;
}

int
store_save_meta (struct zn_dev *dev, const struct zn_bb_list *bb)
{
  struct zn_store *st = dev->store;
  int r;

  if (st == NULL)
    return 0;
  pthread_mutex_lock (&st->meta_lock);
  st->bb->nr = bb->nr;
  memcpy (st->bb->first, bb->first, bb->nr * sizeof *bb->first);
  memcpy (st->bb->last, bb->last, bb->nr * sizeof *bb->last);
  /* At the open, the directory's bad blocks come back through here and
   * the open writes the file once.
   */
  if (!st->ready) {
    pthread_mutex_unlock (&st->meta_lock);
    return 0;
  }
  r = store_meta_write_locked (dev);
  pthread_mutex_unlock (&st->meta_lock);
  if (r < 0) {
    fprintf (stderr, "zonednull: backing_dir %s: writing " META_NAME
             ": %s\n", st->dir, strerror (-r));
    return -EIO;
  }
  return 0;
}

/* Records that z is now READONLY, OFFLINE or (0) neither. */
void
store_set_special (struct zn_dev *dev, struct zone *z, uint8_t cond)
{
  struct zn_store *st = dev->store;

  pthread_mutex_lock (&st->meta_lock);
  st->special[zone_no (dev, z)] = cond;
  pthread_mutex_unlock (&st->meta_lock);
}

/* Adds the rule a badblocks line broke to the refusal naming it. */
int
store_bb_refusal (char *err, size_t errlen, int r)
{
  size_t len;

  if (err == NULL || errlen == 0) {
    errno = r == -ENOMEM ? ENOMEM : EINVAL;
    return -errno;
  }
  len = strlen (err);
  if (r == -EINVAL)
    store_refuse (err + len, errlen - len, EINVAL, "the first sector must be at "
            "most the last, and the last below 2^64 - 1");
  else if (r == -ENOSPC)
    store_refuse (err + len, errlen - len, EINVAL, "more bad blocks than the "
            "table holds (%d entries of at most %d sectors)",
            ZN_BADBLOCKS_MAX, ZN_BADBLOCKS_MAX_LEN);
  else
    store_refuse (err + len, errlen - len, -r, "%s", strerror (-r));
  errno = r == -ENOMEM ? ENOMEM : EINVAL;
  return -errno;
}

/* Reads DIR/zonednull.meta into *m, the special zones and *bb; 0 when
 * there is none, 1 when read, -1 with a message.
 */
int
store_meta_read (struct zn_dev *dev, const char *dir, struct meta_geometry *m,
                 struct bb_entry *bb, size_t *nr_bb, char *err,
                 size_t errlen)
{
  struct zn_store *st = dev->store;
  char line[256], key[32], stray[64] = "", shown[80];
  unsigned seen = 0;
  int fd, lineno = 0, stray_lineno = 0;
  FILE *fp;

  fd = open_in_dir (st->dirfd, META_NAME, O_RDONLY);
  if (fd == -ENOENT)
    return 0;
  if (fd == -ELOOP || fd == -NOT_REGULAR)
    return store_refuse (err, errlen, fd == -ELOOP ? ELOOP : EINVAL, "backing_dir="
                   "%s: " META_NAME " is %s", dir, cause (-fd));
  if (fd < 0 || (fp = fdopen (fd, "r")) == NULL) {
    int e = fd < 0 ? -fd : errno;

    if (fd >= 0)
      close (fd);
    return store_refuse (err, errlen, EIO, "backing_dir=%s: reading " META_NAME
                   ": %s", dir, strerror (e));
  }
  *nr_bb = 0;
  while (fgets (line, sizeof line, fp)) {
    unsigned long long a = 0, b = 0;
    int n;

    lineno++;
    if (line[0] == '#' || line[0] == '\n')
      continue;
    n = sscanf (line, "%31s %llu %llu", key, &a, &b);
    if (strcmp (key, "generation") == 0) {
      /* Written by this zonednull; older ones had none, and the device
       * keeps the one it drew, written from now on.
       */
      char hex[17], *end;
      unsigned long long g;

      if (sscanf (line, "%*s %16[0-9a-f]", hex) != 1 || strlen (hex) != 16
          || (g = strtoull (hex, &end, 16)) == 0 || *end
          || line[strlen ("generation ") + 16] != '\n')
        goto bad;
      dev->generation = g;
      continue;
    }
    if (n < 2)
      goto bad;
#define GEO(k) else if (strcmp (key, #k) == 0 && n == 2) m->k = a, seen++
    if (strcmp (key, "format") == 0 && n == 2) {
      if (a != META_FORMAT) {
        fclose (fp);
        return store_refuse (err, errlen, EINVAL, "backing_dir=%s: " META_NAME
                       " is format %llu; this zonednull reads format %d",
                       dir, a, META_FORMAT);
      }
    }
    GEO (size); GEO (zone_size); GEO (zone_capacity); GEO (zone_nr_conv);
    GEO (blocksize);
#undef GEO
    else if ((strcmp (key, "readonly") == 0 || strcmp (key, "offline") == 0)
             && n == 2 && a >= dev->geo.nr_conv && a < dev->geo.nr_zones)
      st->special[a] = key[0] == 'r' ? ZN_COND_READONLY : ZN_COND_OFFLINE;
    else if ((strcmp (key, "readonly") == 0 || strcmp (key, "offline") == 0)
             && n == 2) {
      /* Not a sequential zone of this geometry: a restart with another
       * geometry, which the refusal must name, not this line.
       */
      if (!stray_lineno) {
        stray_lineno = lineno;
        zn_escape (stray, sizeof stray, line, strcspn (line, "\n"));
      }
    }
    else if (strcmp (key, "badblocks") == 0 && n == 3) {
      if (a > b || *nr_bb == ZN_BADBLOCKS_MAX) {
        fclose (fp);
        store_refuse (err, errlen, EINVAL, "backing_dir=%s: " META_NAME " line %d: "
                "badblocks %llu %llu: ", dir, lineno, a, b);
        return store_bb_refusal (err, errlen, a > b ? -EINVAL : -ENOSPC);
      }
      bb[(*nr_bb)++] = (struct bb_entry) { a, b, lineno };
    }
    else
      goto bad;
  }
  fclose (fp);
  if (seen != 5)
    return store_refuse (err, errlen, EINVAL, "backing_dir=%s: " META_NAME " lacks "
                   "a geometry key (size, zone_size, zone_capacity, "
                   "zone_nr_conv, blocksize)", dir);
  if (stray_lineno) {
    int r = store_geometry_check (dev, dir, m, err, errlen);

    if (r < 0)
      return r;
    return store_refuse (err, errlen, EINVAL, "backing_dir=%s: " META_NAME " line "
                   "%d names no sequential zone: \"%s\"", dir, stray_lineno,
                   stray);
  }
  return 1;
 bad:
  fclose (fp);
  zn_escape (shown, sizeof shown, line, strcspn (line, "\n"));
  return store_refuse (err, errlen, EINVAL, "backing_dir=%s: " META_NAME " line %d "
                 "is not understood: \"%s\"", dir, lineno, shown);
}

int
store_geometry_check (const struct zn_dev *dev, const char *dir,
                      const struct meta_geometry *had, char *err,
                      size_t errlen)
{
  struct meta_geometry now;
  const char *key = NULL;
  uint64_t was = 0, is = 0;

  geometry_of (dev, &now);
#define CMP(k) if (!key && had->k != now.k) key = #k, was = had->k, is = now.k
  CMP (size); CMP (zone_size); CMP (zone_capacity); CMP (zone_nr_conv);
  CMP (blocksize);
#undef CMP
  if (!key)
    return 0;
  return store_refuse (err, errlen, EINVAL, "%s=%" PRIu64 ": backing_dir=%s holds "
                 "a device made with %s=%" PRIu64 "; a restart must keep "
                 "size, zone_size, zone_capacity, zone_nr_conv and blocksize",
                 key, is, dir, key, was);
}
