/* SPDX-License-Identifier: BSD-3-Clause */
/* How a flush of a file-backed device makes its zones durable
 * (lib/storage/store.c, sync_zones): a flush that took several written
 * zones syncs the file system that holds them, once (syncfs); one that
 * took a single zone syncs that zone's file (fdatasync).  On FUSE, whose
 * syncfs need not reach the server's disk, every zone file gets its own
 * fdatasync.  syncfs, fdatasync and fstatfs are wrapped (-Wl,--wrap):
 * the test counts the syncs, makes them fail, and makes the backing_dir
 * look like FUSE.
 *
 * A flush whose sync fails fails with EIO, and its zones are still to be
 * made durable: the next flush syncs them again, and only them.
 */
#include <pthread.h>
#include <sys/vfs.h>
#include <linux/magic.h>

#include "files-model.h"

#define NR_WRITTEN 20           /* zones written before a flush */
#define FAIL_A 7

int __real_fdatasync (int fd);
int __wrap_fdatasync (int fd);
int __real_syncfs (int fd);
int __wrap_syncfs (int fd);
int __real_fstatfs (int fd, struct statfs *buf);
int __wrap_fstatfs (int fd, struct statfs *buf);

static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned fdatasyncs, syncfses;
static bool synced[NR_WRITTEN];   /* by fdatasync, since reset () */
static bool fail_syncfs, fail_zone_a, look_like_fuse;
static char syncfs_path[4200];    /* what the last syncfs was given */

/* The path of the file or directory fd is open on. */
static void
fd_path (int fd, char *buf, size_t len)
{
  char link[64];
  ssize_t l;

  snprintf (link, sizeof link, "/proc/self/fd/%d", fd);
  l = readlink (link, buf, len - 1);
  buf[l > 0 ? l : 0] = '\0';
}

/* The conventional zone fd's file is, or -1. */
static int
zone_of (int fd)
{
  char path[4200];
  const char *base;
  unsigned z;

  fd_path (fd, path, sizeof path);
  base = strrchr (path, '/');
  if (base == NULL || sscanf (base, "/cnv-%u", &z) != 1 || z >= NR_WRITTEN)
    return -1;
  return (int) z;
}

int
__wrap_fdatasync (int fd)
{
  int z = zone_of (fd);

  pthread_mutex_lock (&count_lock);
  fdatasyncs++;
  if (z == FAIL_A && fail_zone_a) {
    pthread_mutex_unlock (&count_lock);
    errno = EIO;
    return -1;
  }
  if (z >= 0)
    synced[z] = true;
  pthread_mutex_unlock (&count_lock);
  return __real_fdatasync (fd);
}

int
__wrap_syncfs (int fd)
{
  pthread_mutex_lock (&count_lock);
  syncfses++;
  fd_path (fd, syncfs_path, sizeof syncfs_path);
  pthread_mutex_unlock (&count_lock);
  if (fail_syncfs) {
    errno = EIO;
    return -1;
  }
  return __real_syncfs (fd);
}

int
__wrap_fstatfs (int fd, struct statfs *buf)
{
  int r = __real_fstatfs (fd, buf);

  if (r == 0 && look_like_fuse)
    buf->f_type = FUSE_SUPER_MAGIC;
  return r;
}

static void
reset (void)
{
  pthread_mutex_lock (&count_lock);
  fdatasyncs = syncfses = 0;
  memset (synced, 0, sizeof synced);
  syncfs_path[0] = '\0';
  pthread_mutex_unlock (&count_lock);
}

static unsigned
nr_synced (void)
{
  unsigned n = 0;

  for (int z = 0; z < NR_WRITTEN; z++)
    n += synced[z];
  return n;
}

static void
write_all (struct zn_dev *d, unsigned tag)
{
  for (uint32_t z = 0; z < NR_WRITTEN; z++)
    CHECK_EQ (write_tag (d, CZ (z), 8, tag + z, false), 0);
}

static void
expect_syncs (const char *what, unsigned want_syncfs, unsigned want_fdatasync)
{
  if (syncfses != want_syncfs || fdatasyncs != want_fdatasync)
    fprintf (stderr, "%s: %u syncfs and %u fdatasync, expected %u and %u\n",
             what, syncfses, fdatasyncs, want_syncfs, want_fdatasync);
  CHECK_EQ (syncfses, want_syncfs);
  CHECK_EQ (fdatasyncs, want_fdatasync);
}

/* Not FUSE: several zones, one syncfs of the backing_dir; one zone, its
 * fdatasync; a failed syncfs leaves every zone it took to the next flush.
 */
static void
test_syncfs (void)
{
  char dir[1024], real[4200];
  struct zn_config c = store_cfg (64, 1, 0, NR_WRITTEN, 512,
                                  path_in_top (dir, sizeof dir, "local"));
  struct zn_dev *d = create (&c);
  int r;

  CHECK (realpath (dir, real) != NULL);
  CHECK_EQ (zn_dev_sync_files (d, NULL, 0), 0);
  write_all (d, 1);
  reset ();
  CHECK_EQ (zn_flush (d), 0);
  expect_syncs ("a flush of 20 zones", 1, 0);
  if (strcmp (syncfs_path, real) != 0)
    fprintf (stderr, "syncfs of %s, not of the backing_dir %s\n",
             syncfs_path, real);
  CHECK (strcmp (syncfs_path, real) == 0);

  /* Nothing written since: nothing to sync. */
  reset ();
  CHECK_EQ (zn_flush (d), 0);
  expect_syncs ("a flush with nothing written", 0, 0);

  CHECK_EQ (write_tag (d, CZ (FAIL_A), 8, 500, false), 0);
  reset ();
  CHECK_EQ (zn_flush (d), 0);
  expect_syncs ("a flush of one zone", 0, 1);
  CHECK (synced[FAIL_A]);

  write_all (d, 1000);
  reset ();
  fail_syncfs = true;
  r = zn_flush (d);
  fail_syncfs = false;
  if (r != -EIO)
    fprintf (stderr, "a flush whose syncfs failed returned %d\n", r);
  CHECK_EQ (r, -EIO);
  reset ();
  CHECK_EQ (zn_flush (d), 0);
  expect_syncs ("the flush after a failed syncfs", 1, 0);
  expect_data (d, CZ (FAIL_A), 8, 1000 + FAIL_A);
  zn_dev_destroy (d);
  rm_tree (dir);
}

/* FUSE: each zone file its fdatasync, and a failed one is synced again
 * by the next flush, alone.
 */
static void
test_fuse (void)
{
  char dir[1024];
  struct zn_config c = store_cfg (64, 1, 0, NR_WRITTEN, 512,
                                  path_in_top (dir, sizeof dir, "fuse"));
  struct zn_dev *d;
  int r;

  look_like_fuse = true;
  d = create (&c);
  look_like_fuse = false;
  CHECK_EQ (zn_dev_sync_files (d, NULL, 0), 0);
  write_all (d, 1);
  reset ();
  CHECK_EQ (zn_flush (d), 0);
  expect_syncs ("a flush of 20 zones on FUSE", 0, NR_WRITTEN);
  CHECK_EQ (nr_synced (), NR_WRITTEN);

  write_all (d, 1000);
  reset ();
  fail_zone_a = true;
  r = zn_flush (d);
  fail_zone_a = false;
  CHECK_EQ (r, -EIO);
  CHECK_EQ (nr_synced (), NR_WRITTEN - 1);
  reset ();
  CHECK_EQ (zn_flush (d), 0);
  expect_syncs ("the flush after a failed fdatasync on FUSE", 0, 1);
  CHECK (synced[FAIL_A]);
  expect_data (d, CZ (FAIL_A), 8, 1000 + FAIL_A);
  zn_dev_destroy (d);
  rm_tree (dir);
}

int
main (void)
{
  make_top ();
  test_syncfs ();
  test_fuse ();
  printf ("test-files-model-syncfs: all tests passed\n");
  return EXIT_SUCCESS;
}
