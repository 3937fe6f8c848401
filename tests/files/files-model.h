/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers of the tests of file-backed zones against the model
 * (test-files-model-*.c): a temporary directory for the run, devices
 * in it, patterned writes, and checks of refusals and of what DIR holds.
 */
#ifndef ZONEDNULL_TESTS_FILES_MODEL_H
#define ZONEDNULL_TESTS_FILES_MODEL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "model/zoned.h"
#include "config/params.h"
#include "../common/check.h"
#include "../common/dev.h"

#define MIB_SECTORS 2048
#define META "zonednull.meta"
/* lib/storage/store.c's FD_SLOTS, the zone files a device keeps open, and the
 * one its filler of a new directory's files may hold.
 */
#define MAX_ZONE_FDS (64 + 1)

static char top[512];          /* this run's temporary directory */

/* ---- helpers ------------------------------------------------------------ */

static inline int
rm_entry (const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
  (void) sb; (void) flag; (void) ftw;
  return remove (path);
}

static inline void
rm_tree (const char *path)
{
  nftw (path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A new, absent path under top (the device makes it). */
static inline const char *
path_in_top (char *buf, size_t len, const char *name)
{
  snprintf (buf, len, "%s/%s", top, name);
  rm_tree (buf);
  return buf;
}

static inline struct zn_config
store_cfg (uint64_t size, uint64_t zone_size, uint64_t cap, uint32_t conv,
           uint32_t blocksize, const char *dir)
{
  struct zn_config c = geometry_config (size, zone_size, cap, conv,
                                       blocksize);

  c.backing_dir = dir;
  return c;
}

static inline struct zn_zone
zone_at (struct zn_dev *d, uint32_t zno)
{
  struct zn_zone z;

  CHECK_EQ (zn_report_zones (d, (uint64_t) zno * zn_dev_geometry (d)->
                             zone_sectors, &z, 1), 1);
  return z;
}

static inline uint64_t
zstart (struct zn_dev *d, uint32_t zno)
{
  return (uint64_t) zno * zn_dev_geometry (d)->zone_sectors;
}

#define EXPECT_ZONE(d, zno, cond_, wp_off)                              \
  do {                                                                  \
    struct zn_zone ez_ = zone_at ((d), (zno));                          \
    CHECK_EQ (ez_.cond, (cond_));                                       \
    CHECK_EQ (ez_.wp - ez_.start, (wp_off));                            \
  } while (0)

#define EXPECT_COUNTERS(d, imp_, exp_, closed_)                         \
  do {                                                                  \
    struct zn_counters ec_;                                             \
    zn_get_counters ((d), &ec_);                                        \
    CHECK_EQ (ec_.imp_open, (imp_));                                    \
    CHECK_EQ (ec_.exp_open, (exp_));                                    \
    CHECK_EQ (ec_.closed, (closed_));                                   \
  } while (0)

/* Writes the pattern of tag at sector; 0 or the errno. */
static inline int
write_tag (struct zn_dev *d, uint64_t sector, uint64_t n, unsigned tag,
           bool fua)
{
  unsigned char *buf = malloc (n * ZN_SECTOR_SIZE);
  int r;

  CHECK (buf != NULL);
  fill_pattern (buf, sector, n, tag);
  r = fua ? zn_write_fua (d, buf, sector, n) : zn_write (d, buf, sector, n);
  free (buf);
  return r;
}

/* Appends to zone zno and checks that the data landed at want. */
static inline void
append_tag (struct zn_dev *d, uint32_t zno, uint64_t n, unsigned tag,
            bool fua, uint64_t want)
{
  unsigned char *buf = malloc (n * ZN_SECTOR_SIZE);
  uint64_t at = 0;

  CHECK (buf != NULL);
  fill_pattern (buf, want, n, tag);
  CHECK_EQ (zn_zone_append (d, buf, zstart (d, zno), n, fua, &at), 0);
  CHECK_EQ (at, want);
  free (buf);
}

/* What n sectors at sector must read as: the pattern of tag, zeros
 * (never written) or 0xFF (at or past the wp).
 */
#define ZEROS (-1)
#define ONES (-2)

static inline void
expect_data (struct zn_dev *d, uint64_t sector, uint64_t n, int tag)
{
  unsigned char *got = malloc (n * ZN_SECTOR_SIZE);
  unsigned char *want = malloc (n * ZN_SECTOR_SIZE);

  CHECK (got && want);
  if (tag >= 0)
    fill_pattern (want, sector, n, (unsigned) tag);
  else
    memset (want, tag == ZEROS ? 0 : 0xFF, n * ZN_SECTOR_SIZE);
  CHECK_EQ (zn_read (d, got, sector, n), 0);
  if (memcmp (got, want, n * ZN_SECTOR_SIZE) != 0) {
    fprintf (stderr, "data of sectors %" PRIu64 "+%" PRIu64 " differ from "
             "%d\n", sector, n, tag);
    CHECK (!"data as expected");
  }
  free (got);
  free (want);
}

static inline int
create_errno (const struct zn_config *c, char *err, size_t errlen)
{
  struct zn_dev *d;

  err[0] = '\0';
  errno = 0;
  d = zn_dev_create (c, err, errlen);
  if (d) {
    zn_dev_destroy (d);
    fprintf (stderr, "zn_dev_create accepted what it must refuse\n");
    return 0;
  }
  return errno;
}

static inline void
expect_in (const char *msg, const char *part)
{
  if (strstr (msg, part) == NULL) {
    fprintf (stderr, "message \"%s\" does not name \"%s\"\n", msg, part);
    CHECK (!"the message names the cause");
  }
}

/* Every name, size, mode and mtime in dir, the directory's own mtime and
 * the metadata file's text: anything a refused start could change.
 */
static inline char *
listing (const char *dir)
{
  struct dirent **names;
  struct stat sb;
  char path[4200], line[512];
  size_t cap = 1 << 16, len = 0;
  char *out = malloc (cap);
  int n = scandir (dir, &names, NULL, alphasort);
  FILE *fp;

  CHECK (out != NULL);
  out[0] = '\0';
  if (n < 0)
    return out;                 /* absent: an empty listing */
  CHECK (stat (dir, &sb) == 0);
  len += (size_t) snprintf (out, cap, ". %ld.%09ld\n", (long) sb.st_mtim.tv_sec,
                            sb.st_mtim.tv_nsec);
  for (int i = 0; i < n; i++) {
    snprintf (path, sizeof path, "%s/%s", dir, names[i]->d_name);
    CHECK (lstat (path, &sb) == 0);
    snprintf (line, sizeof line, "%s %jd %o %ld.%09ld\n", names[i]->d_name,
              (intmax_t) sb.st_size, (unsigned) sb.st_mode,
              (long) sb.st_mtim.tv_sec, sb.st_mtim.tv_nsec);
    while (len + strlen (line) + 1 > cap)
      CHECK ((out = realloc (out, cap *= 2)) != NULL);
    strcpy (out + len, line);
    len += strlen (line);
    free (names[i]);
  }
  free (names);
  snprintf (path, sizeof path, "%s/" META, dir);
  if ((fp = fopen (path, "r")) != NULL) {
    while (fgets (line, sizeof line, fp)) {
      while (len + strlen (line) + 1 > cap)
        CHECK ((out = realloc (out, cap *= 2)) != NULL);
      strcpy (out + len, line);
      len += strlen (line);
    }
    fclose (fp);
  }
  return out;
}

/* The metadata file of dir, as text, in buf. */
static inline void
read_meta (const char *dir, char *buf, size_t len)
{
  char path[4200];
  FILE *fp;
  size_t n;

  snprintf (path, sizeof path, "%s/" META, dir);
  fp = fopen (path, "r");
  CHECK (fp != NULL);
  n = fread (buf, 1, len - 1, fp);
  buf[n] = '\0';
  fclose (fp);
}

#define EXPECT_UNCHANGED(before, dir)                                   \
  do {                                                                  \
    char *after_ = listing (dir);                                       \
    if (strcmp ((before), after_) != 0)                                 \
      fprintf (stderr, "before:\n%s\nafter:\n%s\n", (before), after_);  \
    CHECK (strcmp ((before), after_) == 0);                             \
    free (after_);                                                      \
  } while (0)

/* Expects a refusal with errno want naming each of the parts, and no
 * change in dir.
 */
static inline void
expect_refused (const struct zn_config *c, int want, const char *dir,
                const char *part1, const char *part2)
{
  char err[512];
  char *before = listing (dir);
  int e = create_errno (c, err, sizeof err);

  if (e != want)
    fprintf (stderr, "refusal: errno %d (%s), expected %d; \"%s\"\n", e,
             strerror (e), want, err);
  CHECK_EQ (e, want);
  expect_in (err, c->backing_dir);
  if (part1)
    expect_in (err, part1);
  if (part2)
    expect_in (err, part2);
  EXPECT_UNCHANGED (before, dir);
  free (before);
}

static inline void
set_file_size (const char *dir, const char *name, off_t size)
{
  char path[4200];

  snprintf (path, sizeof path, "%s/%s", dir, name);
  CHECK (truncate (path, size) == 0);
}

static inline off_t
file_size (const char *dir, const char *name)
{
  char path[4200];
  struct stat sb;

  snprintf (path, sizeof path, "%s/%s", dir, name);
  if (stat (path, &sb) < 0)
    return -1;
  return sb.st_size;
}

/* Descriptors of this process open on a file in dir. */
static inline int
fds_in (const char *dir)
{
  char link[4200], prefix[4200];
  size_t plen = (size_t) snprintf (prefix, sizeof prefix, "%s/", dir);
  DIR *d = opendir ("/proc/self/fd");
  struct dirent *e;
  int n = 0;

  CHECK (d != NULL);
  while ((e = readdir (d)) != NULL) {
    char path[300];
    ssize_t l;

    snprintf (path, sizeof path, "/proc/self/fd/%s", e->d_name);
    l = readlink (path, link, sizeof link - 1);
    if (l <= 0)
      continue;
    link[l] = '\0';
    if (strncmp (link, prefix, plen) == 0)
      n++;
  }
  closedir (d);
  return n;
}

static inline double
now (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}


static inline void
write_file (const char *dir, const char *name, off_t size, uint64_t sector,
            uint64_t nr, unsigned tag)
{
  char path[4200];
  unsigned char *buf = malloc (nr * ZN_SECTOR_SIZE + 1);
  int fd;

  CHECK (buf != NULL);
  snprintf (path, sizeof path, "%s/%s", dir, name);
  fd = open (path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  CHECK (fd >= 0);
  CHECK (ftruncate (fd, size) == 0);
  if (nr) {
    /* The zone's data at its offset in the zone: sector is absolute. */
    uint64_t zone_off = (sector % (2 * MIB_SECTORS)) * ZN_SECTOR_SIZE;

    fill_pattern (buf, sector, nr, tag);
    CHECK (pwrite (fd, buf, nr * ZN_SECTOR_SIZE, (off_t) zone_off)
           == (ssize_t) (nr * ZN_SECTOR_SIZE));
  }
  CHECK (close (fd) == 0);
  free (buf);
}

/* zone_size=2 MiB, zone_capacity=1 MiB, 2 conventional zones, 8 zones. */

/* Zones 0 and 1 conventional, 2.. sequential, 1 MiB each. */
#define CZ(z) ((uint64_t) (z) * MIB_SECTORS)

static pid_t main_pid;

/* A failed CHECK exits: the temporary directory goes too, but only from
 * this process, not from a forked child that fails.
 */
static inline void
remove_top (void)
{
  if (getpid () == main_pid)
    rm_tree (top);
}


/* The run's temporary directory, removed at exit. */
static inline void
make_top (void)
{
  const char *tmp = getenv ("TMPDIR");

  snprintf (top, sizeof top, "%s/test-files-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  CHECK (mkdtemp (top) != NULL);
  main_pid = getpid ();
  atexit (remove_top);
}

#endif
