/* SPDX-License-Identifier: BSD-3-Clause */
/* A flush of many written zones of a file-backed device submits their
 * fdatasyncs at once through io_uring (lib/storage/store.c, sync_zones),
 * in batches that keep the zone files open few.  liburing's calls are
 * wrapped (-Wl,--wrap): io_uring_submit sees each batch's fsyncs (and
 * can point one at no file, fd -1, so that the kernel fails it with
 * EBADF), io_uring_queue_init can fail as when io_uring is disabled,
 * and fdatasync counts the syncs made one after another.
 *
 * The rules: every written zone is synced once, by the ring when it
 * works (no fdatasync) and by fdatasync when it does not; a zone whose
 * sync fails fails the flush and is synced again by the next one; a
 * refused io_uring gives the same results as a working one, and at
 * most one line on stderr however often it is refused.  A device keeps
 * its rings: a later flush makes none.
 */
#include <pthread.h>

#include "files-model.h"

#ifndef ZN_WITH_LIBURING
int
main (void)
{
  printf ("test-files-model-fanout: SKIP: built without liburing\n");
  return 77;
}
#else
#include <liburing.h>

#define NR_WRITTEN 100          /* zones written before each flush */
#define FAIL_A 37
#define FAIL_B 70

int __real_fdatasync (int fd);
int __wrap_fdatasync (int fd);
int __real_io_uring_queue_init (unsigned entries, struct io_uring *ring,
                                unsigned flags);
int __wrap_io_uring_queue_init (unsigned entries, struct io_uring *ring,
                                unsigned flags);
int __real_io_uring_submit (struct io_uring *ring);
int __wrap_io_uring_submit (struct io_uring *ring);

static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *dev_dir;     /* the device's backing_dir */
static unsigned fdatasyncs, sqes, submits, inits;
static int most_fds;            /* zone files open at a submission */
static int init_errno;          /* io_uring_queue_init fails with it */
static bool fail_zones;         /* FAIL_A and FAIL_B's syncs fail */
static bool synced[NR_WRITTEN]; /* by either path, since reset () */
static unsigned synced_twice;

/* The conventional zone fd's file is, or -1. */
static int
zone_of (int fd)
{
  char path[64], link[4200];
  const char *base;
  ssize_t l;
  unsigned z;

  snprintf (path, sizeof path, "/proc/self/fd/%d", fd);
  l = readlink (path, link, sizeof link - 1);
  if (l <= 0)
    return -1;
  link[l] = '\0';
  base = strrchr (link, '/');
  if (base == NULL || sscanf (base, "/cnv-%u", &z) != 1 || z >= NR_WRITTEN)
    return -1;
  return (int) z;
}

static bool
to_fail (int z)
{
  return fail_zones && (z == FAIL_A || z == FAIL_B);
}

static void
mark_synced (int z)
{
  if (z < 0)
    return;
  synced_twice += synced[z];
  synced[z] = true;
}

int
__wrap_fdatasync (int fd)
{
  int z = zone_of (fd);

  pthread_mutex_lock (&count_lock);
  fdatasyncs++;
  if (to_fail (z)) {
    pthread_mutex_unlock (&count_lock);
    errno = EIO;
    return -1;
  }
  mark_synced (z);
  pthread_mutex_unlock (&count_lock);
  return __real_fdatasync (fd);
}

int
__wrap_io_uring_queue_init (unsigned entries, struct io_uring *ring,
                            unsigned flags)
{
  pthread_mutex_lock (&count_lock);
  inits++;
  pthread_mutex_unlock (&count_lock);
  if (init_errno)
    return -init_errno;
  return __real_io_uring_queue_init (entries, ring, flags);
}

int
__wrap_io_uring_submit (struct io_uring *ring)
{
  int fds = dev_dir ? fds_in (dev_dir) : 0;

  pthread_mutex_lock (&count_lock);
  submits++;
  most_fds = fds > most_fds ? fds : most_fds;
  for (unsigned h = ring->sq.sqe_head; h != ring->sq.sqe_tail; h++) {
    struct io_uring_sqe *sqe = &ring->sq.sqes[h & ring->sq.ring_mask];
    int z = zone_of (sqe->fd);

    CHECK_EQ (sqe->opcode, IORING_OP_FSYNC);
    CHECK (sqe->fsync_flags & IORING_FSYNC_DATASYNC);
    sqes++;
    if (to_fail (z))
      sqe->fd = -1;             /* the kernel answers EBADF */
    else
      mark_synced (z);
  }
  pthread_mutex_unlock (&count_lock);
  return __real_io_uring_submit (ring);
}

static void
reset (void)
{
  pthread_mutex_lock (&count_lock);
  fdatasyncs = sqes = submits = inits = 0;
  synced_twice = 0;
  most_fds = 0;
  memset (synced, 0, sizeof synced);
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

static struct zn_dev *
device (char *dir, size_t len, const char *name)
{
  /* 128 zones of 1 MiB, NR_WRITTEN of them conventional: more than the
   * descriptor cache holds.
   */
  struct zn_config c = store_cfg (128, 1, 0, NR_WRITTEN, 512,
                                  path_in_top (dir, len, name));
  struct zn_dev *d = create (&c);

  dev_dir = dir;
  return d;
}

static void
write_all (struct zn_dev *d, unsigned tag)
{
  for (uint32_t z = 0; z < NR_WRITTEN; z++)
    CHECK_EQ (write_tag (d, CZ (z), 8, tag + z, false), 0);
}

/* Every written zone synced once; ring: by io_uring, not fdatasync. */
static void
expect_all_synced (bool ring)
{
  if (nr_synced () != NR_WRITTEN || synced_twice)
    fprintf (stderr, "%u of %d written zones synced (%u twice)\n",
             nr_synced (), NR_WRITTEN, synced_twice);
  CHECK_EQ (nr_synced (), NR_WRITTEN);
  CHECK_EQ (synced_twice, 0);
  if (ring) {
    if (fdatasyncs)
      fprintf (stderr, "the flush made %u fdatasyncs one after another "
               "with io_uring at hand\n", fdatasyncs);
    CHECK_EQ (fdatasyncs, 0);
    CHECK_EQ (sqes, NR_WRITTEN);
    /* Several at once, yet in batches: the zone files open stay few. */
    CHECK (submits > 1 && submits < NR_WRITTEN / 2);
    if (most_fds > MAX_ZONE_FDS)
      fprintf (stderr, "%d zone files open at a submission\n", most_fds);
    CHECK (most_fds <= MAX_ZONE_FDS);
  }
  else {
    CHECK_EQ (sqes, 0);
    CHECK_EQ (fdatasyncs, NR_WRITTEN);
  }
}

/* A flush of NR_WRITTEN zones, then one with FAIL_A and FAIL_B's syncs
 * failing, whose next flush syncs those two zones again and only them.
 */
static void
test_flush (const char *name, bool ring)
{
  char dir[1024];
  struct zn_dev *d = device (dir, sizeof dir, name);
  int r;

  CHECK_EQ (zn_dev_sync_files (d, NULL, 0), 0);
  write_all (d, 1);
  reset ();
  CHECK_EQ (zn_flush (d), 0);
  expect_all_synced (ring);

  /* Nothing written since: nothing to sync. */
  reset ();
  CHECK_EQ (zn_flush (d), 0);
  CHECK_EQ (fdatasyncs + sqes, 0);

  write_all (d, 1000);
  reset ();
  fail_zones = true;
  r = zn_flush (d);
  fail_zones = false;
  if (r != -EIO)
    fprintf (stderr, "a flush whose syncs of zones %d and %d failed "
             "returned %d\n", FAIL_A, FAIL_B, r);
  CHECK_EQ (r, -EIO);
  CHECK_EQ (nr_synced (), NR_WRITTEN - 2);
  /* The first flush's ring served this one: a ring costs more system
   * time to make than a flush's fsyncs, and a failed fsync leaves it fit.
   */
  if (ring && inits)
    fprintf (stderr, "a flush made %u io_uring rings although an earlier "
             "flush of the device had one\n", inits);
  CHECK_EQ (ring ? inits : 0, 0);

  /* The two zones are still to be made durable, and only they. */
  reset ();
  r = zn_flush (d);
  if (r != 0 || nr_synced () != 2 || !synced[FAIL_A] || !synced[FAIL_B])
    fprintf (stderr, "the flush after the failure returned %d and synced "
             "%u zones (%d: %s, %d: %s)\n", r, nr_synced (), FAIL_A,
             synced[FAIL_A] ? "yes" : "no", FAIL_B,
             synced[FAIL_B] ? "yes" : "no");
  CHECK_EQ (r, 0);
  CHECK_EQ (nr_synced (), 2);
  CHECK (synced[FAIL_A] && synced[FAIL_B]);
  CHECK_EQ (ring ? fdatasyncs : sqes, 0);
  expect_data (d, CZ (FAIL_A), 8, 1000 + FAIL_A);
  zn_dev_destroy (d);
  rm_tree (dir);
  dev_dir = NULL;
}

/* Lines of the file that say io_uring is not there. */
static int
refusals (const char *path)
{
  char line[1024];
  FILE *fp = fopen (path, "r");
  int n = 0;

  CHECK (fp != NULL);
  while (fgets (line, sizeof line, fp))
    n += strstr (line, "io_uring") != NULL;
  fclose (fp);
  return n;
}

int
main (void)
{
  struct io_uring probe;
  char log[600];
  int saved, fd;

  make_top ();
  if (__real_io_uring_queue_init (4, &probe, 0) < 0) {
    printf ("test-files-model-fanout: SKIP: io_uring is not available\n");
    return 77;
  }
  io_uring_queue_exit (&probe);
  test_flush ("ring", true);

  /* io_uring refused: the same results, one fdatasync after another.
   * ENOMEM may pass, so each flush tries again; ENOSYS does not, so the
   * flushes after it stop trying.  One line on stderr in all.
   */
  snprintf (log, sizeof log, "%s/stderr", top);
  fflush (stderr);
  saved = dup (2);
  fd = open (log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  CHECK (saved >= 0 && fd >= 0);
  CHECK (dup2 (fd, 2) == 2);
  close (fd);
  init_errno = ENOMEM;
  test_flush ("nomem", false);
  init_errno = ENOSYS;
  test_flush ("nosys", false);
  init_errno = 0;
  reset ();
  test_flush ("after-nosys", false);
  CHECK_EQ (inits, 0);
  fflush (stderr);
  CHECK (dup2 (saved, 2) == 2);
  close (saved);
  if (refusals (log) != 1)
    fprintf (stderr, "%d lines on stderr about io_uring, not one\n",
             refusals (log));
  CHECK_EQ (refusals (log), 1);
  printf ("test-files-model-fanout: all tests passed\n");
  return EXIT_SUCCESS;
}
#endif
