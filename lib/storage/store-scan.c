/* SPDX-License-Identifier: BSD-3-Clause */
/* The check of DIR at a start: every name that is a zone file's must be
 * zloop's name of a zone of this device, a regular file, and no longer
 * than the zone; the sequential zones' sizes are their write pointers.
 */
#include <dirent.h>
#include <stdlib.h>

#include "storage/store-dir.h"

/* The file name in DIR must be a regular file, not a link to one.  0, or
 * -1 with a message.
 */
static int
check_kind (int dirfd, const char *dir, const char *name, struct stat *sb,
            char *err, size_t errlen)
{
  if (fstatat (dirfd, name, sb, AT_SYMLINK_NOFOLLOW) < 0) {
    int e = errno;

    return store_refuse (err, errlen, e, "backing_dir=%s: %s: %s", dir, name,
                   strerror (e));
  }
  if (S_ISLNK (sb->st_mode))
    return store_refuse (err, errlen, ELOOP, "backing_dir=%s: %s is %s", dir, name,
                   cause (ELOOP));
  if (!S_ISREG (sb->st_mode))
    return store_refuse (err, errlen, EINVAL, "backing_dir=%s: %s is %s", dir, name,
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
    return store_refuse (err, errlen, EINVAL, "backing_dir=%s: %s names a zone "
                   "past the last zone (%" PRIu32 ") of size=%" PRIu64
                   " zone_size=%" PRIu64, dir, name,
                   dev->geo.nr_zones - 1, dev->geo.capacity >> 11,
                   dev->geo.zone_sectors >> 11);
  *zno = (uint32_t) n;
  if (conv != (*zno < dev->geo.nr_conv))
    return store_refuse (err, errlen, EINVAL, "zone_nr_conv=%" PRIu32 ": "
                   "backing_dir=%s has %s, a %s zone file, for zone %"
                   PRIu32, dev->geo.nr_conv, dir, name,
                   conv ? "conventional" : "sequential", *zno);
  zone_file_name (dev, *zno, zloop_name, sizeof zloop_name);
  if (strcmp (name, zloop_name) == 0)
    return 1;
  if (fstatat (dirfd, zloop_name, &sb, AT_SYMLINK_NOFOLLOW) == 0)
    return store_refuse (err, errlen, EINVAL, "backing_dir=%s: %s and %s are both "
                   "files of zone %" PRIu32 "; zloop's is %s", dir, name,
                   zloop_name, *zno, zloop_name);
  return store_refuse (err, errlen, EINVAL, "backing_dir=%s: %s is not zloop's "
                 "name for zone %" PRIu32 ", %s", dir, name, *zno, zloop_name);
}

/* Checks every zone file in DIR and records the sizes of the sequential
 * ones (sectors).  Returns the number of zone files, or -1.
 */
long
store_scan_files (struct zn_dev *dev, const char *dir, uint64_t *seq_sectors,
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
    return store_refuse (err, errlen, errno, "backing_dir=%s: %s", dir,
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
      found = store_refuse (err, errlen, EINVAL, "backing_dir=%s: %s holds %jd "
                      "bytes, more than the zone's %s (%" PRIu64 " bytes)",
                      dir, name, (intmax_t) sb.st_size,
                      conv ? "size" : "capacity",
                      (conv ? z->len : z->capacity) << ZN_SECTOR_SHIFT);
      break;
    }
    if (!conv && (uint64_t) sb.st_size % lbs) {
      found = store_refuse (err, errlen, EINVAL, "backing_dir=%s: %s holds %jd "
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
