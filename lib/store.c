#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "escape.h"
#include "backend.h"
#include "store.h"
#include "zoned-internal.h"

#define META_NAME "zonednull.meta"
#define META_TMP ".zonednull.meta.new"
#define META_FORMAT 1
/* Zone files kept open, most recently used first: a device has up to
 * millions of zones, and a descriptor each would pass any RLIMIT_NOFILE.
 */
#define FD_SLOTS 64
/* Every file in DIR is opened with these: whoever can write in DIR could
 * otherwise make a name a link and have the device truncate and write any
 * file the process can, or make it a FIFO and block the open for good.
 * O_NONBLOCK does nothing to a regular file, and nothing else is kept.
 */
#define IN_DIR (O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)
/* Not an errno: a name in DIR that is not a regular file.  Only messages
 * see it; callers get EIO or EINVAL.
 */
#define NOT_REGULAR (1 << 20)

struct fd_slot {
  uint32_t zone;
  int fd;
  int refs;
  int prev, next;                /* LRU order; -1 ends */
};

struct zn_store {
  char *dir;
  int dirfd;                     /* held with flock (LOCK_EX) */
  bool restored;
  bool ready;                    /* opened: changes go to the metadata */
  pthread_mutex_t fd_lock;
  struct fd_slot slots[FD_SLOTS];
  int nr_slots;
  int lru_head, lru_tail;
  int32_t *zone_slot;            /* per zone: its slot or -1 */
  /* Zones written since the last flush, for fdatasync. */
  pthread_mutex_t sync_lock;
  uint32_t *touched;
  size_t nr_touched;
  uint8_t *is_touched;
  /* What the metadata file holds besides the geometry. */
  pthread_mutex_t meta_lock;
  uint8_t *special;              /* per zone: 0, READONLY or OFFLINE */
  /* The last I/O error logged, so that a full disk logs once. */
  int last_errno;
  /* Makes the zone files a new directory lacks, behind the device. */
  pthread_t filler;
  bool fill_pending;             /* files to make, no filler yet */
  bool filling;                  /* the filler runs (or ran) */
  atomic_bool stopping;          /* an orderly stop waits for the filler */
};

struct zone_file {
  int fd;
  int slot;                      /* -1: a descriptor of its own */
};

/* ---- messages ----------------------------------------------------------- */

static int
refuse (char *err, size_t errlen, int errnum, const char *fmt, ...)
{
  va_list ap;

  if (err && errlen) {
    va_start (ap, fmt);
    vsnprintf (err, errlen, fmt, ap);
    va_end (ap);
  }
  errno = errnum;
  return -1;
}

static const char *
cause (int errnum)
{
  if (errnum == ELOOP)          /* O_NOFOLLOW met a link */
    return "a symbolic link, which zonednull does not follow";
  if (errnum == NOT_REGULAR)
    return "not a regular file";
  return strerror (errnum);
}

/* Opens name in DIR, refusing a link and anything but a regular file.
 * Returns the descriptor or -errno (-NOT_REGULAR).
 */
static int
open_in_dir (int dirfd, const char *name, int flags)
{
  int fd = openat (dirfd, name, flags | IN_DIR, 0600);
  struct stat sb;

  if (fd < 0)
    return -errno;
  if (fstat (fd, &sb) < 0)
    sb.st_mode = 0;
  if (!S_ISREG (sb.st_mode)) {
    close (fd);
    return -NOT_REGULAR;
  }
  return fd;
}

/* An I/O error has no caller to report it to but the client, which sees
 * EIO: the cause and the file go to stderr (nbdkit's log, the servers'
 * log), once until the next success.
 */
static int
file_error (struct zn_store *st, const char *what, const char *file,
            int errnum)
{
  if (errnum != st->last_errno)
    fprintf (stderr, "zonednull: backing_dir %s: %s %s: %s\n", st->dir, what,
             file, cause (errnum));
  st->last_errno = errnum;
  return -EIO;
}

static void
zone_file_name (const struct zn_dev *dev, uint32_t zno, char *buf, size_t len)
{
  snprintf (buf, len, "%s-%06" PRIu32, zno < dev->geo.nr_conv ? "cnv" : "seq",
            zno);
}

static int
io_error (struct zn_dev *dev, const char *what, uint32_t zno, int errnum)
{
  char name[32];

  zone_file_name (dev, zno, name, sizeof name);
  return file_error (dev->store, what, name, errnum);
}

/* ---- the descriptor cache ---------------------------------------------- */

static void
lru_unlink (struct zn_store *st, int s)
{
  struct fd_slot *e = &st->slots[s];

  if (e->prev >= 0)
    st->slots[e->prev].next = e->next;
  else
    st->lru_head = e->next;
  if (e->next >= 0)
    st->slots[e->next].prev = e->prev;
  else
    st->lru_tail = e->prev;
}

static void
lru_push (struct zn_store *st, int s)
{
  struct fd_slot *e = &st->slots[s];

  e->prev = -1;
  e->next = st->lru_head;
  if (st->lru_head >= 0)
    st->slots[st->lru_head].prev = s;
  else
    st->lru_tail = s;
  st->lru_head = s;
}

/* The descriptor, or -errno. */
static int
open_zone_file (struct zn_dev *dev, uint32_t zno)
{
  char name[32];

  zone_file_name (dev, zno, name, sizeof name);
  return open_in_dir (dev->store->dirfd, name, O_RDWR | O_CREAT);
}

static void *fill_files (void *arg);

static int
file_get (struct zn_dev *dev, uint32_t zno, struct zone_file *f)
{
  struct zn_store *st = dev->store;
  int s, fd;

  pthread_mutex_lock (&st->fd_lock);
  if (st->fill_pending) {
    st->filling = pthread_create (&st->filler, NULL, fill_files, dev) == 0;
    st->fill_pending = !st->filling;
  }
  s = st->zone_slot[zno];
  if (s >= 0) {
    st->slots[s].refs++;
    lru_unlink (st, s);
    lru_push (st, s);
    pthread_mutex_unlock (&st->fd_lock);
    *f = (struct zone_file) { st->slots[s].fd, s };
    return 0;
  }
  fd = open_zone_file (dev, zno);
  if (fd < 0) {
    pthread_mutex_unlock (&st->fd_lock);
    return fd;
  }
  if (st->nr_slots < FD_SLOTS)
    s = st->nr_slots++;
  else {
    for (s = st->lru_tail; s >= 0 && st->slots[s].refs; s = st->slots[s].prev)
      ;
    if (s < 0) {                /* every cached file is in use */
      pthread_mutex_unlock (&st->fd_lock);
      *f = (struct zone_file) { fd, -1 };
      return 0;
    }
    lru_unlink (st, s);
    close (st->slots[s].fd);
    st->zone_slot[st->slots[s].zone] = -1;
  }
  st->slots[s] = (struct fd_slot) { .zone = zno, .fd = fd, .refs = 1 };
  st->zone_slot[zno] = s;
  lru_push (st, s);
  pthread_mutex_unlock (&st->fd_lock);
  *f = (struct zone_file) { fd, s };
  return 0;
}

static void
file_put (struct zn_dev *dev, struct zone_file *f)
{
  struct zn_store *st = dev->store;

  if (f->slot < 0) {
    close (f->fd);
    return;
  }
  pthread_mutex_lock (&st->fd_lock);
  st->slots[f->slot].refs--;
  pthread_mutex_unlock (&st->fd_lock);
}

static void
touch (struct zn_store *st, uint32_t zno)
{
  pthread_mutex_lock (&st->sync_lock);
  if (!st->is_touched[zno]) {
    st->is_touched[zno] = 1;
    st->touched[st->nr_touched++] = zno;
  }
  pthread_mutex_unlock (&st->sync_lock);
}

/* ---- data --------------------------------------------------------------- */

static uint32_t
zone_no (const struct zn_dev *dev, const struct zone *z)
{
  return (uint32_t) (z - dev->zones);
}

/* Moves len bytes between buf and the file at off, through the end of a
 * file being read.  Returns the bytes moved, or -errno.
 */
static int64_t
transfer (int fd, unsigned char *buf, uint64_t len, uint64_t off, bool write)
{
  uint64_t done = 0;

  while (done < len) {
    ssize_t n = write
      ? pwrite (fd, buf + done, len - done, (off_t) (off + done))
      : pread (fd, buf + done, len - done, (off_t) (off + done));

    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return -errno;
    if (n == 0)                 /* past the end: never written */
      break;
    done += (uint64_t) n;
  }
  return (int64_t) done;
}

/* A zone's data, with its lock held (store_write also from the cache's
 * write-back, which the cache lock serialises instead); offsets are bytes
 * in the zone.  Every failure is -EIO, as a block device reports it.
 */
static int
store_read (struct zn_dev *dev, struct zone *z, uint64_t off, void *buf,
            uint64_t len)
{
  uint32_t zno = zone_no (dev, z);
  struct zone_file f;
  int64_t done;
  int r = file_get (dev, zno, &f);

  ZONE_ASSERT_HELD (z);
  if (r < 0)
    return io_error (dev, "opening", zno, -r);
  done = transfer (f.fd, buf, len, off, false);
  file_put (dev, &f);
  if (done < 0)
    return io_error (dev, "reading", zno, (int) -done);
  memset ((unsigned char *) buf + done, 0, len - (uint64_t) done);
  return 0;
}

/* A failed write to a sequential zone leaves its file as it was. */
static int
store_write (struct zn_dev *dev, struct zone *z, uint64_t off,
             const void *buf, uint64_t len)
{
  uint32_t zno = zone_no (dev, z);
  struct zone_file f;
  int64_t done;
  int r = file_get (dev, zno, &f);

  if (r < 0)
    return io_error (dev, "opening", zno, -r);
  done = transfer (f.fd, (unsigned char *) buf, len, off, true);
  if (done >= 0 && (uint64_t) done < len)
    done = -ENOSPC;
  /* The size of a sequential zone's file is its wp: a partial write
   * (ENOSPC) must not move it.
   */
  if (done < 0 && z->type == ZN_ZONE_SEQWRITE_REQ
      && ftruncate (f.fd, (off_t) off) < 0)
    done = -errno;
  file_put (dev, &f);
  if (done < 0)
    return io_error (dev, "writing", zno, (int) -done);
  dev->store->last_errno = 0;
  touch (dev->store, zno);
  return 0;
}

static int
store_sync_zone (struct zn_dev *dev, struct zone *z)
{
  uint32_t zno = zone_no (dev, z);
  struct zone_file f;
  int r = file_get (dev, zno, &f);

  ZONE_ASSERT_HELD (z);
  if (r < 0)
    return io_error (dev, "opening", zno, -r);
  r = fdatasync (f.fd) ? errno : 0;
  file_put (dev, &f);
  return r ? io_error (dev, "syncing", zno, r) : 0;
}

static int
store_truncate (struct zn_dev *dev, struct zone *z, uint64_t size)
{
  uint32_t zno = zone_no (dev, z);
  struct zone_file f;
  int r = file_get (dev, zno, &f);

  ZONE_ASSERT_HELD (z);
  if (r < 0)
    return io_error (dev, "opening", zno, -r);
  r = ftruncate (f.fd, (off_t) size) ? errno : 0;
  file_put (dev, &f);
  if (r)
    return io_error (dev, "truncating", zno, r);
  touch (dev->store, zno);
  return 0;
}

/* fdatasync of every zone file written since the last one. */
static int
store_flush (struct zn_dev *dev)
{
  struct zn_store *st = dev->store;
  uint32_t *zones;
  size_t n;
  int ret = 0;

  pthread_mutex_lock (&st->sync_lock);
  n = st->nr_touched;
  zones = malloc ((n ? n : 1) * sizeof *zones);
  if (zones == NULL) {
    pthread_mutex_unlock (&st->sync_lock);
    return -ENOMEM;
  }
  memcpy (zones, st->touched, n * sizeof *zones);
  for (size_t i = 0; i < n; i++)
    st->is_touched[zones[i]] = 0;
  st->nr_touched = 0;
  pthread_mutex_unlock (&st->sync_lock);

  for (size_t i = 0; i < n; i++) {
    struct zone_file f;
    int r = file_get (dev, zones[i], &f);

    if (r == 0) {
      r = fdatasync (f.fd) ? -errno : 0;
      file_put (dev, &f);
    }
    if (r < 0) {
      touch (st, zones[i]);     /* still to be made durable */
      ret = io_error (dev, "syncing", zones[i], -r);
    }
  }
  free (zones);
  return ret;
}

/* ---- zone state from the files ---------------------------------------- */

static void
set_seq_zone (struct zone *z, uint8_t special, uint64_t file_sectors,
              unsigned *nr_closed)
{
  if (special) {
    z->cond = special;
    z->wp = UINT64_MAX;
  }
  else if (file_sectors == 0) {
    z->cond = ZN_COND_EMPTY;
    z->wp = z->start;
  }
  else if (file_sectors == z->capacity) {
    z->cond = ZN_COND_FULL;
    z->wp = z->start + z->capacity;
  }
  else {
    z->cond = ZN_COND_CLOSED;
    z->wp = z->start + file_sectors;
    ++*nr_closed;
  }
}

/* A power-on: each sequential zone's condition and wp from its file
 * (READONLY and OFFLINE zones stay), and the closed zones recounted.
 */
static int
store_reload (struct zn_dev *dev)
{
  struct zn_store *st = dev->store;
  unsigned nr_closed = 0;
  int ret = 0;

  ALL_ZONES_ASSERT_HELD (dev);
  for (uint32_t i = dev->geo.nr_conv; i < dev->geo.nr_zones; i++) {
    struct zone *z = &dev->zones[i];
    char name[32];
    struct stat sb;
    uint64_t sectors = 0;

    zone_file_name (dev, i, name, sizeof name);
    if (fstatat (st->dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
      if (errno != ENOENT)
        ret = io_error (dev, "reading the size of", i, errno);
    }
    else if (!S_ISREG (sb.st_mode))
      ret = io_error (dev, "reading the size of", i,
                      S_ISLNK (sb.st_mode) ? ELOOP : NOT_REGULAR);
    else
      sectors = (uint64_t) sb.st_size >> ZN_SECTOR_SHIFT;
    if (sectors > z->capacity)
      sectors = z->capacity;
    set_seq_zone (z, st->special[i], sectors, &nr_closed);
  }
  atomic_store (&dev->nr_closed, nr_closed);
  return ret;
}

/* ---- the metadata file -------------------------------------------------- */

/* The keys a restart must keep, as given on the command line. */
struct meta_geometry {
  uint64_t size, zone_size, zone_capacity, zone_nr_conv, blocksize;
};

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

static int
meta_write_locked (struct zn_dev *dev)
{
  struct zn_store *st = dev->store;
  struct meta_geometry m;
  uint64_t first[ZN_BADBLOCKS_MAX], last[ZN_BADBLOCKS_MAX];
  size_t nr_bb = zn_badblocks_list (dev, first, last, ZN_BADBLOCKS_MAX);
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
  for (uint32_t i = 0; i < dev->geo.nr_zones; i++)
    if (st->special[i])
      fprintf (fp, "%s %" PRIu32 "\n", st->special[i] == ZN_COND_READONLY
               ? "readonly" : "offline", i);
  for (size_t i = 0; i < nr_bb && i < ZN_BADBLOCKS_MAX; i++)
    fprintf (fp, "badblocks %" PRIu64 " %" PRIu64 "\n", first[i], last[i]);
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
store_save_meta (struct zn_dev *dev)
{
  struct zn_store *st = dev->store;
  int r;

  if (st == NULL || !st->ready)
    return 0;
  pthread_mutex_lock (&st->meta_lock);
  r = meta_write_locked (dev);
  pthread_mutex_unlock (&st->meta_lock);
  if (r < 0) {
    fprintf (stderr, "zonednull: backing_dir %s: writing " META_NAME
             ": %s\n", st->dir, strerror (-r));
    return -EIO;
  }
  return 0;
}

/* Records that z is now READONLY, OFFLINE or (0) neither. */
static void
store_set_special (struct zn_dev *dev, struct zone *z, uint8_t cond)
{
  struct zn_store *st = dev->store;

  pthread_mutex_lock (&st->meta_lock);
  st->special[zone_no (dev, z)] = cond;
  pthread_mutex_unlock (&st->meta_lock);
}

/* Reads DIR/zonednull.meta into *m, the special zones and *bb; 0 when
 * there is none, 1 when read, -1 with a message.
 */
struct bb_entry { uint64_t first, last; int lineno; };

static int geometry_check (const struct zn_dev *dev, const char *dir,
                           const struct meta_geometry *had, char *err,
                           size_t errlen);

/* Adds the rule a badblocks line broke to the refusal naming it. */
static int
bb_refusal (char *err, size_t errlen, int r)
{
  size_t len;

  if (err == NULL || errlen == 0) {
    errno = r == -ENOMEM ? ENOMEM : EINVAL;
    return -1;
  }
  len = strlen (err);
  if (r == -EINVAL)
    refuse (err + len, errlen - len, EINVAL, "the first sector must be at "
            "most the last, and the last below 2^64 - 1");
  else if (r == -ENOSPC)
    refuse (err + len, errlen - len, EINVAL, "more bad blocks than the "
            "table holds (%d entries of at most %d sectors)",
            ZN_BADBLOCKS_MAX, ZN_BADBLOCKS_MAX_LEN);
  else
    refuse (err + len, errlen - len, -r, "%s", strerror (-r));
  return -1;
}

static int
meta_read (struct zn_dev *dev, const char *dir, struct meta_geometry *m,
           struct bb_entry *bb, size_t *nr_bb, char *err, size_t errlen)
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
    return refuse (err, errlen, fd == -ELOOP ? ELOOP : EINVAL, "backing_dir="
                   "%s: " META_NAME " is %s", dir, cause (-fd));
  if (fd < 0 || (fp = fdopen (fd, "r")) == NULL) {
    int e = fd < 0 ? -fd : errno;

    if (fd >= 0)
      close (fd);
    return refuse (err, errlen, EIO, "backing_dir=%s: reading " META_NAME
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
    if (n < 2)
      goto bad;
#define GEO(k) else if (strcmp (key, #k) == 0 && n == 2) m->k = a, seen++
    if (strcmp (key, "format") == 0 && n == 2) {
      if (a != META_FORMAT) {
        fclose (fp);
        return refuse (err, errlen, EINVAL, "backing_dir=%s: " META_NAME
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
        refuse (err, errlen, EINVAL, "backing_dir=%s: " META_NAME " line %d: "
                "badblocks %llu %llu: ", dir, lineno, a, b);
        return bb_refusal (err, errlen, a > b ? -EINVAL : -ENOSPC);
      }
      bb[(*nr_bb)++] = (struct bb_entry) { a, b, lineno };
    }
    else
      goto bad;
  }
  fclose (fp);
  if (seen != 5)
    return refuse (err, errlen, EINVAL, "backing_dir=%s: " META_NAME " lacks "
                   "a geometry key (size, zone_size, zone_capacity, "
                   "zone_nr_conv, blocksize)", dir);
  if (stray_lineno) {
    if (geometry_check (dev, dir, m, err, errlen) < 0)
      return -1;
    return refuse (err, errlen, EINVAL, "backing_dir=%s: " META_NAME " line "
                   "%d names no sequential zone: \"%s\"", dir, stray_lineno,
                   stray);
  }
  return 1;
 bad:
  fclose (fp);
  zn_escape (shown, sizeof shown, line, strcspn (line, "\n"));
  return refuse (err, errlen, EINVAL, "backing_dir=%s: " META_NAME " line %d "
                 "is not understood: \"%s\"", dir, lineno, shown);
}

static int
geometry_check (const struct zn_dev *dev, const char *dir,
                const struct meta_geometry *had, char *err, size_t errlen)
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
  return refuse (err, errlen, EINVAL, "%s=%" PRIu64 ": backing_dir=%s holds "
                 "a device made with %s=%" PRIu64 "; a restart must keep "
                 "size, zone_size, zone_capacity, zone_nr_conv and blocksize",
                 key, is, dir, key, was);
}

/* ---- opening ------------------------------------------------------------ */

/* The file name in DIR must be a regular file, not a link to one.  0, or
 * -1 with a message.
 */
static int
check_kind (int dirfd, const char *dir, const char *name, struct stat *sb,
            char *err, size_t errlen)
{
  if (fstatat (dirfd, name, sb, AT_SYMLINK_NOFOLLOW) < 0) {
    int e = errno;

    return refuse (err, errlen, e, "backing_dir=%s: %s: %s", dir, name,
                   strerror (e));
  }
  if (S_ISLNK (sb->st_mode))
    return refuse (err, errlen, ELOOP, "backing_dir=%s: %s is %s", dir, name,
                   cause (ELOOP));
  if (!S_ISREG (sb->st_mode))
    return refuse (err, errlen, EINVAL, "backing_dir=%s: %s is %s", dir, name,
                   cause (NOT_REGULAR));
  return 0;
}

/* Whether name is a zone file of this device: 1 with *zno, 0 if not named
 * as one, -1 with a message if named as one but not as zloop names zone
 * *zno (six digits, more from zone 1,000,000 on; zloop opens no other
 * name), or of no zone of this device.  Two names of one zone would
 * leave the write pointer to whichever readdir lists last.
 */
static int
zone_of_name (const struct zn_dev *dev, int dirfd, const char *dir,
              const char *name, uint32_t *zno, char *err, size_t errlen)
{
  bool conv = strncmp (name, "cnv-", 4) == 0;
  size_t digits;
  unsigned long long n;
  char zloop_name[32];
  struct stat sb;

  if (!conv && strncmp (name, "seq-", 4) != 0)
    return 0;
  digits = strspn (name + 4, "0123456789");
  if (digits == 0 || name[4 + digits] != '\0')
    return 0;                   /* not named as a zone file: left alone */
  errno = 0;
  n = strtoull (name + 4, NULL, 10);
  if (errno || n >= dev->geo.nr_zones)
    return refuse (err, errlen, EINVAL, "backing_dir=%s: %s names a zone "
                   "past the last zone (%" PRIu32 ") of size=%" PRIu64
                   " zone_size=%" PRIu64, dir, name,
                   dev->geo.nr_zones - 1, dev->geo.capacity >> 11,
                   dev->geo.zone_sectors >> 11);
  *zno = (uint32_t) n;
  if (conv != (*zno < dev->geo.nr_conv))
    return refuse (err, errlen, EINVAL, "zone_nr_conv=%" PRIu32 ": "
                   "backing_dir=%s has %s, a %s zone file, for zone %"
                   PRIu32, dev->geo.nr_conv, dir, name,
                   conv ? "conventional" : "sequential", *zno);
  zone_file_name (dev, *zno, zloop_name, sizeof zloop_name);
  if (strcmp (name, zloop_name) == 0)
    return 1;
  if (fstatat (dirfd, zloop_name, &sb, AT_SYMLINK_NOFOLLOW) == 0)
    return refuse (err, errlen, EINVAL, "backing_dir=%s: %s and %s are both "
                   "files of zone %" PRIu32 "; zloop's is %s", dir, name,
                   zloop_name, *zno, zloop_name);
  return refuse (err, errlen, EINVAL, "backing_dir=%s: %s is not zloop's "
                 "name for zone %" PRIu32 ", %s", dir, name, *zno, zloop_name);
}

/* Checks every zone file in DIR and records the sizes of the sequential
 * ones (sectors).  Returns the number of zone files, or -1.
 */
static long
scan_files (struct zn_dev *dev, const char *dir, uint64_t *seq_sectors,
            char *err, size_t errlen)
{
  struct zn_store *st = dev->store;
  uint64_t lbs = dev->geo.block_size;
  long found = 0;
  int fd = openat (st->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct dirent *e;
  DIR *d;

  if (fd < 0 || (d = fdopendir (fd)) == NULL) {
    if (fd >= 0)
      close (fd);
    return refuse (err, errlen, errno, "backing_dir=%s: %s", dir,
                   strerror (errno));
  }
  /* A refusal names the file: e->d_name lives until closedir. */
  while ((e = readdir (d)) != NULL) {
    const char *name = e->d_name;
    bool tmp = strcmp (name, META_TMP) == 0;   /* rewritten at start */
    uint32_t zno = 0;
    struct stat sb;
    struct zone *z;
    bool conv;
    int r = tmp ? 0 : zone_of_name (dev, st->dirfd, dir, name, &zno, err,
                                    errlen);

    if (r < 0 || ((r > 0 || tmp)
                  && check_kind (st->dirfd, dir, name, &sb, err,
                                 errlen) < 0)) {
      found = -1;
      break;
    }
    if (r == 0)
      continue;
    z = &dev->zones[zno];
    conv = zno < dev->geo.nr_conv;
    if ((uint64_t) sb.st_size > (conv ? z->len : z->capacity)
                                << ZN_SECTOR_SHIFT) {
      found = refuse (err, errlen, EINVAL, "backing_dir=%s: %s holds %jd "
                      "bytes, more than the zone's %s (%" PRIu64 " bytes)",
                      dir, name, (intmax_t) sb.st_size,
                      conv ? "size" : "capacity",
                      (conv ? z->len : z->capacity) << ZN_SECTOR_SHIFT);
      break;
    }
    if (!conv && (uint64_t) sb.st_size % lbs) {
      found = refuse (err, errlen, EINVAL, "backing_dir=%s: %s holds %jd "
                      "bytes, not a whole number of %" PRIu64 "-byte blocks",
                      dir, name, (intmax_t) sb.st_size, lbs);
      break;
    }
    if (!conv)
      seq_sectors[zno] = (uint64_t) sb.st_size >> ZN_SECTOR_SHIFT;
    found++;
  }
  if (found < 0) {
    int e2 = errno;
    closedir (d);
    errno = e2;
    return found;
  }
  closedir (d);
  return found;
}

/* Every zone file that DIR lacks, as zloop makes them, so that the
 * directory is a zloop device too: a conventional zone's file as long as
 * the zone, a sequential zone's empty.  A missing file reads as an empty
 * zone meanwhile, so the device need not wait for 81,920 files of a
 * 20 TiB device (up to a minute on a busy disk): this runs beside it,
 * each file under its zone's lock.  An orderly stop waits for it, so that
 * zloop can open what zonednull leaves; after a crash the next start
 * makes the rest.  It starts with the first zone file used, not with the
 * device: the programs fork to become daemons after making their devices
 * (a thread does not follow a fork), and nbdkit reopens its standard
 * descriptors meanwhile.
 */
static void *
fill_files (void *arg)
{
  struct zn_dev *dev = arg;
  struct zn_store *st = dev->store;

  for (uint32_t i = 0; i < dev->geo.nr_zones; i++) {
    struct zone *z = &dev->zones[i];
    bool conv = i < dev->geo.nr_conv;
    char name[32];
    struct stat sb;
    int fd, e = 0;

    zone_file_name (dev, i, name, sizeof name);
    /* Once, so that a slow stop says why. */
    if (atomic_exchange (&st->stopping, false))
      fprintf (stderr, "zonednull: backing_dir %s: making the zone files "
               "from %s on before stopping\n", st->dir, name);
    pthread_mutex_lock (z->mutex);
    fd = open_in_dir (st->dirfd, name, O_RDWR | O_CREAT | (conv ? 0 : O_EXCL));
    if (fd < 0 && fd != -EEXIST)
      e = -fd;
    else if (fd >= 0 && conv && (fstat (fd, &sb) < 0
                                 || ((uint64_t) sb.st_size
                                     < z->len << ZN_SECTOR_SHIFT
                                     && ftruncate (fd, (off_t) (z->len
                                       << ZN_SECTOR_SHIFT)) < 0)))
      e = errno;
    pthread_mutex_unlock (z->mutex);
    if (fd >= 0)
      close (fd);
    if (e) {
      fprintf (stderr, "zonednull: backing_dir %s: making %s: %s\n",
               st->dir, name, cause (e));
      break;
    }
  }
  fsync (st->dirfd);
  return NULL;
}

/* A new device with zone_full: its FULL zones need their files at once,
 * since a missing file means an empty zone.
 */
static int
make_files (struct zn_dev *dev, const char *dir, char *err, size_t errlen)
{
  for (uint32_t i = 0; i < dev->geo.nr_zones; i++) {
    struct zone *z = &dev->zones[i];
    int fd = open_zone_file (dev, i);
    uint64_t size = 0;

    if (i < dev->geo.nr_conv)
      size = z->len << ZN_SECTOR_SHIFT;
    else if (z->cond == ZN_COND_FULL)          /* zone_full */
      size = z->capacity << ZN_SECTOR_SHIFT;
    if (fd < 0 || (size && ftruncate (fd, (off_t) size))) {
      char name[32];
      int e = fd < 0 ? -fd : errno;

      if (fd >= 0)
        close (fd);
      zone_file_name (dev, i, name, sizeof name);
      return refuse (err, errlen, e == NOT_REGULAR ? EINVAL : e,
                     "backing_dir=%s: making %s: %s", dir, name, cause (e));
    }
    close (fd);
  }
  return fsync (dev->store->dirfd);
}

static int
open_dir (const char *dir, bool nofollow, bool *made, char *err,
          size_t errlen)
{
  int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0);
  int fd = open (dir, flags);
  struct stat sb;

  *made = false;
  if (fd < 0 && errno == ENOENT) {
    if (mkdir (dir, 0700) < 0)
      return refuse (err, errlen, errno, "backing_dir=%s: cannot be made: %s",
                     dir, strerror (errno));
    *made = true;
    fd = open (dir, flags);
  }
  /* O_NOFOLLOW with O_DIRECTORY says ENOTDIR for a link. */
  if (fd < 0 && nofollow && errno == ENOTDIR && lstat (dir, &sb) == 0
      && S_ISLNK (sb.st_mode))
    return refuse (err, errlen, ELOOP, "backing_dir=%s: is %s", dir,
                   cause (ELOOP));
  if (fd < 0)
    return refuse (err, errlen, errno, "backing_dir=%s: %s", dir,
                   strerror (errno));
  if (flock (fd, LOCK_EX | LOCK_NB) < 0) {
    int e = errno;
    close (fd);
    if (e == EWOULDBLOCK)
      return refuse (err, errlen, EBUSY, "backing_dir=%s: another running "
                     "zonednull holds this directory", dir);
    return refuse (err, errlen, e, "backing_dir=%s: locking: %s", dir,
                   strerror (e));
  }
  if (faccessat (fd, ".", W_OK | X_OK, AT_EACCESS) < 0) {
    int e = errno;
    close (fd);
    return refuse (err, errlen, e, "backing_dir=%s: cannot be written: %s",
                   dir, strerror (e));
  }
  return fd;
}

int
store_open (struct zn_dev *dev, const char *dir, bool nofollow, char *err,
            size_t errlen)
{
  struct zn_store *st = calloc (1, sizeof *st);
  uint32_t nr_zones = dev->geo.nr_zones;
  uint64_t *seq_sectors = NULL;
  struct meta_geometry had = { 0 };
  struct bb_entry *bb = NULL;
  size_t nr_bb = 0;
  unsigned nr_closed = 0;
  bool made = false;
  long found;
  int has_meta, r;

  if (st == NULL)
    return refuse (err, errlen, ENOMEM, "out of memory");
  dev->store = st;
  st->dirfd = -1;
  st->lru_head = st->lru_tail = -1;
  pthread_mutex_init (&st->fd_lock, NULL);
  pthread_mutex_init (&st->sync_lock, NULL);
  pthread_mutex_init (&st->meta_lock, NULL);
  st->dir = strdup (dir);
  st->zone_slot = malloc (nr_zones * sizeof *st->zone_slot);
  st->touched = malloc (nr_zones * sizeof *st->touched);
  st->is_touched = calloc (nr_zones, 1);
  st->special = calloc (nr_zones, 1);
  seq_sectors = calloc (nr_zones, sizeof *seq_sectors);
  bb = malloc (ZN_BADBLOCKS_MAX * sizeof *bb);
  if (!st->dir || !st->zone_slot || !st->touched || !st->is_touched
      || !st->special || !seq_sectors || !bb) {
    refuse (err, errlen, ENOMEM, "out of memory for %" PRIu32 " zone files",
            nr_zones);
    goto fail;
  }
  for (uint32_t i = 0; i < nr_zones; i++)
    st->zone_slot[i] = -1;

  st->dirfd = open_dir (dir, nofollow, &made, err, errlen);
  if (st->dirfd < 0)
    goto fail;
  has_meta = meta_read (dev, dir, &had, bb, &nr_bb, err, errlen);
  if (has_meta < 0 || (has_meta && geometry_check (dev, dir, &had, err,
                                                   errlen) < 0))
    goto fail;
  found = scan_files (dev, dir, seq_sectors, err, errlen);
  if (found < 0)
    goto fail;
  st->restored = has_meta || found > 0;

  if (st->restored) {
    for (uint32_t i = dev->geo.nr_conv; i < nr_zones; i++)
      set_seq_zone (&dev->zones[i], st->special[i], seq_sectors[i],
                    &nr_closed);
    if (dev->geo.max_active && nr_closed > dev->geo.max_active) {
      refuse (err, errlen, EINVAL, "zone_max_active=%" PRIu32 ": backing_dir="
              "%s holds %u CLOSED zones (written, not full), more than the "
              "limit lets be active", dev->geo.max_active, dir, nr_closed);
      goto fail;
    }
    atomic_store (&dev->nr_closed, nr_closed);
    for (size_t i = 0; i < nr_bb; i++) {
      r = zn_badblocks_set (dev, bb[i].first, bb[i].last);
      if (r < 0) {
        refuse (err, errlen, EINVAL, "backing_dir=%s: " META_NAME " line %d: "
                "badblocks %" PRIu64 " %" PRIu64 ": ", dir, bb[i].lineno,
                bb[i].first, bb[i].last);
        bb_refusal (err, errlen, r);
        goto fail;
      }
    }
  }
  else if (dev->zone_full && make_files (dev, dir, err, errlen) < 0)
    goto fail;
  r = meta_write_locked (dev);
  if (r < 0) {
    refuse (err, errlen, -r, "backing_dir=%s: writing " META_NAME ": %s",
            dir, strerror (-r));
    goto fail;
  }
  st->ready = true;
  if ((uint64_t) found < nr_zones && !(!st->restored && dev->zone_full))
    st->fill_pending = true;
  free (seq_sectors);
  free (bb);
  return 0;

 fail:
  if (made && st->dirfd >= 0)
    unlinkat (AT_FDCWD, dir, AT_REMOVEDIR);   /* only if still empty */
  free (seq_sectors);
  free (bb);
  store_close (dev);
  return -1;
}

bool
store_restored (const struct zn_dev *dev)
{
  return dev->store && dev->store->restored;
}

const char *
store_dir (const struct zn_dev *dev)
{
  return dev->store ? dev->store->dir : NULL;
}

void
store_close (struct zn_dev *dev)
{
  struct zn_store *st = dev->store;

  if (st == NULL)
    return;
  if (st->fill_pending)         /* no zone file used: no zone lock held */
    fill_files (dev);
  if (st->filling) {
    atomic_store (&st->stopping, true);
    pthread_join (st->filler, NULL);
  }
  for (int s = 0; s < st->nr_slots; s++)
    close (st->slots[s].fd);
  if (st->dirfd >= 0)
    close (st->dirfd);                 /* and with it the lock */
  pthread_mutex_destroy (&st->fd_lock);
  pthread_mutex_destroy (&st->sync_lock);
  pthread_mutex_destroy (&st->meta_lock);
  free (st->dir);
  free (st->zone_slot);
  free (st->touched);
  free (st->is_touched);
  free (st->special);
  free (st);
  dev->store = NULL;
}

/* ---- the back end ------------------------------------------------------- */

static int
file_read (struct zn_dev *dev, struct zone *z, uint64_t off, void *buf,
           uint64_t len, uint64_t valid)
{
  int ret = valid ? store_read (dev, z, off, buf, valid) : 0;

  if (ret == 0)
    fill_past_wp (buf, len, valid);
  return ret;
}

static int
file_write (struct zn_dev *dev, struct zone *z, uint64_t off,
            const void *buf, uint64_t len, bool fua)
{
  int ret = store_write (dev, z, off, buf, len);

  return ret == 0 && fua ? store_sync_zone (dev, z) : ret;
}

/* A reset empties the zone's file and a finish fills it to the capacity,
 * as zloop does; both are durable at once.
 */
static int
file_size (struct zn_dev *dev, struct zone *z, uint64_t size)
{
  int ret = store_truncate (dev, z, size);

  return ret ? ret : store_sync_zone (dev, z);
}

static int
file_reset (struct zn_dev *dev, struct zone *z)
{
  return file_size (dev, z, 0);
}

static int
file_finish (struct zn_dev *dev, struct zone *z)
{
  return file_size (dev, z, z->capacity << ZN_SECTOR_SHIFT);
}

/* An orderly stop makes what was written durable. */
static void
file_free (struct zn_dev *dev)
{
  store_flush (dev);
  store_close (dev);
}

const struct zn_backend store_backend = {
  .name = "store",
  .keeps_data = true,
  .read = file_read,
  .write = file_write,
  .reset = file_reset,
  .finish = file_finish,
  .set_cond = store_set_special,
  .save_meta = store_save_meta,
  .flush = store_flush,
  .reload = store_reload,
  .free = file_free,
};
