/* SPDX-License-Identifier: BSD-3-Clause */
/* Two flushes of a file-backed device at once, as the plugin's threads
 * run them: a flush covers the writes completed before it, even while an
 * earlier flush is still syncing the zones it took.  fdatasync is wrapped (-Wl,--wrap=fdatasync): the first one
 * after the test arms it is held until the test lets it go.  Flush A
 * takes the zone written and is held in its fdatasync; flush B, started
 * then, must not return while A's sync of that write is held.  The test
 * knows B is waiting, not late, by its thread's state in /proc: asleep.
 *
 * Flushes sync side by side: with A held syncing zone 0, flush B of a
 * write to zone 1 made after A took its zones syncs zone 1 at once (its
 * fdatasync is called while A's is held), and still returns only after
 * A.  When A's fdatasync fails, B, which covers A's write, fails too.
 *
 * When A's sync ends, every later flush that is done waiting returns:
 * B, whose own sync ended first, and C, which had nothing of its own to
 * sync, are let go together, and when A's fdatasync failed both fail.
 *
 * An event loop's reads and writes never wait for a disk: while a FUA
 * write to a sequential zone is held in its fdatasync (with its zone's
 * lock and the resource lock), zn_write_nowait to another sequential zone
 * and zn_read_nowait fail with -EAGAIN at once, having changed nothing,
 * and a write to a conventional zone, which needs neither lock, goes in.
 * So does zn_report_zones_nowait of the zone (or of any zone, as the
 * resource lock is held), which reports it once the sync is done.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>

#include "files-model.h"

int __real_fdatasync (int fd);
int __wrap_fdatasync (int fd);

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static bool armed, held, released;
static bool fail_held;          /* the held fdatasync fails with EIO */
static unsigned calls;          /* fdatasyncs begun since arming */

/* The first fdatasync after arming waits for the release. */
int
__wrap_fdatasync (int fd)
{
  bool was_held = false;

  pthread_mutex_lock (&gate_lock);
  calls++;
  pthread_cond_broadcast (&gate_cond);
  if (armed) {
    armed = false;
    held = was_held = true;
    pthread_cond_broadcast (&gate_cond);
    while (!released)
      pthread_cond_wait (&gate_cond, &gate_lock);
    held = false;
  }
  pthread_mutex_unlock (&gate_lock);
  if (was_held && fail_held) {
    errno = EIO;
    return -1;
  }
  return __real_fdatasync (fd);
}

/* Arms the gate: the next fdatasync is held. */
static void
arm (bool fail)
{
  pthread_mutex_lock (&gate_lock);
  armed = true;
  released = false;
  fail_held = fail;
  calls = 0;
  pthread_mutex_unlock (&gate_lock);
}

static void
wait_held (void)
{
  pthread_mutex_lock (&gate_lock);
  while (!held)
    pthread_cond_wait (&gate_cond, &gate_lock);
  pthread_mutex_unlock (&gate_lock);
}

static void
release (void)
{
  pthread_mutex_lock (&gate_lock);
  released = true;
  pthread_cond_broadcast (&gate_cond);
  pthread_mutex_unlock (&gate_lock);
}

/* A flush never let go hangs its join: the test fails instead of the
 * suite stalling.
 */
static void
on_alarm (int sig)
{
  static const char msg[] = "a flush did not return within 60 s of the "
    "release of the fdatasync held before it\n";

  (void) sig;
  if (write (2, msg, sizeof msg - 1) < 0)
    _exit (1);
  _exit (1);
}

struct flusher {
  struct zn_dev *d;
  pthread_t thread;
  atomic_int tid;
  atomic_bool returned;
  bool sync_done_before;        /* A's sync was let go when it returned */
  int ret;
};

static void *
flush_thread (void *arg)
{
  struct flusher *f = arg;

  atomic_store (&f->tid, (int) syscall (SYS_gettid));
  f->ret = zn_flush (f->d);
  pthread_mutex_lock (&gate_lock);
  f->sync_done_before = released && !held;
  pthread_mutex_unlock (&gate_lock);
  atomic_store (&f->returned, true);
  return NULL;
}

/* The thread's state letter in /proc (R, S, D...), or 0. */
static char
thread_state (int tid)
{
  char path[64], buf[512], *p;
  FILE *fp;

  snprintf (path, sizeof path, "/proc/self/task/%d/stat", tid);
  fp = fopen (path, "r");
  if (fp == NULL)
    return 0;
  p = fgets (buf, sizeof buf, fp);
  fclose (fp);
  if (p == NULL || (p = strrchr (buf, ')')) == NULL || p[1] != ' ')
    return 0;
  return p[2];
}

static void
test_concurrent_flushes (void)
{
  char dir[1024];
  struct zn_config c = store_cfg (16, 2, 2, 2, 512,
                                  path_in_top (dir, sizeof dir, "flush"));
  struct zn_dev *d = create (&c);
  struct flusher a = { .d = d }, b = { .d = d };
  const struct timespec tick = { 0, 1000 * 1000 };

  /* Every zone file is there before anything is held. */
  CHECK_EQ (zn_dev_sync_files (d, NULL, 0), 0);
  CHECK_EQ (write_tag (d, 0, 8, 1, false), 0);
  pthread_mutex_lock (&gate_lock);
  armed = true;
  pthread_mutex_unlock (&gate_lock);
  CHECK_EQ (pthread_create (&a.thread, NULL, flush_thread, &a), 0);
  pthread_mutex_lock (&gate_lock);
  while (!held)
    pthread_cond_wait (&gate_cond, &gate_lock);
  pthread_mutex_unlock (&gate_lock);

  /* The write completed before B: B covers it, and it is in A's hands. */
  CHECK_EQ (pthread_create (&b.thread, NULL, flush_thread, &b), 0);
  for (;;) {
    int tid = atomic_load (&b.tid);

    if (atomic_load (&b.returned)) {
      fprintf (stderr, "flush B returned (%d) while the earlier flush's "
               "fdatasync of the write completed before B was held\n", b.ret);
      CHECK (!"B waits for A's sync");
    }
    if (tid && thread_state (tid) == 'S')
      break;                    /* B waits, as it must */
    nanosleep (&tick, NULL);
  }
  alarm (60);
  pthread_mutex_lock (&gate_lock);
  released = true;
  pthread_cond_broadcast (&gate_cond);
  pthread_mutex_unlock (&gate_lock);
  CHECK_EQ (pthread_join (a.thread, NULL), 0);
  CHECK_EQ (pthread_join (b.thread, NULL), 0);
  alarm (0);
  CHECK_EQ (a.ret, 0);
  CHECK_EQ (b.ret, 0);
  CHECK (b.sync_done_before);
  zn_dev_destroy (d);
  rm_tree (dir);
}

/* Flush A held syncing zone 0; flush B of zone 1 written after A took
 * its zones.  fail: A's fdatasync fails.
 */
/* A flushes zone 0 and is held in its fdatasync (failing it with fail);
 * meanwhile zone 1 is written and B flushes.
 */
static void
held_then_second (struct zn_dev *d, bool fail, struct flusher *a,
                  struct flusher *b)
{
  CHECK_EQ (zn_dev_sync_files (d, NULL, 0), 0);
  CHECK_EQ (write_tag (d, 0, 8, 1, false), 0);
  arm (fail);
  CHECK_EQ (pthread_create (&a->thread, NULL, flush_thread, a), 0);
  wait_held ();
  CHECK_EQ (write_tag (d, 4096, 8, 2, false), 0);
  CHECK_EQ (pthread_create (&b->thread, NULL, flush_thread, b), 0);
}

static void
test_side_by_side (bool fail)
{
  char dir[1024];
  struct zn_config c = store_cfg (16, 2, 2, 2, 512,
                                  path_in_top (dir, sizeof dir, "side"));
  struct zn_dev *d = create (&c);
  struct flusher a = { .d = d }, b = { .d = d };
  const struct timespec tick = { 0, 1000 * 1000 };
  unsigned n;

  held_then_second (d, fail, &a, &b);
  /* B's own fdatasync comes while A's is held: side by side.  Then B
   * waits for A.
   */
  for (;;) {
    int tid = atomic_load (&b.tid);

    pthread_mutex_lock (&gate_lock);
    n = calls;
    pthread_mutex_unlock (&gate_lock);
    if (n >= 2)
      break;
    /* Asleep before its fdatasync: B waits for A instead of syncing. */
    if (atomic_load (&b.returned) || (tid && thread_state (tid) == 'S')) {
      fprintf (stderr, "flush B %s without syncing zone 1 while flush A's "
               "fdatasync was held\n",
               atomic_load (&b.returned) ? "returned" : "waits");
      release ();
      CHECK (!"B syncs its zone beside A");
    }
    nanosleep (&tick, NULL);
  }
  for (;;) {
    int tid = atomic_load (&b.tid);

    if (atomic_load (&b.returned)) {
      fprintf (stderr, "flush B returned (%d) before flush A, whose sync "
               "covers a write completed before B\n", b.ret);
      CHECK (!"B waits for A");
    }
    if (tid && thread_state (tid) == 'S')
      break;
    nanosleep (&tick, NULL);
  }
  alarm (60);
  release ();
  CHECK_EQ (pthread_join (a.thread, NULL), 0);
  CHECK_EQ (pthread_join (b.thread, NULL), 0);
  alarm (0);
  if (fail) {
    CHECK_EQ (a.ret, -EIO);
    if (b.ret != -EIO)
      fprintf (stderr, "flush B returned %d although flush A's sync of a "
               "write completed before B failed\n", b.ret);
    CHECK_EQ (b.ret, -EIO);
    /* The zone A failed to sync is synced by the next flush. */
    CHECK_EQ (zn_flush (d), 0);
  }
  else {
    CHECK_EQ (a.ret, 0);
    CHECK_EQ (b.ret, 0);
  }
  zn_dev_destroy (d);
  rm_tree (dir);
}

/* Waits until f's thread sleeps (waiting for A), failing if it returns. */
static void
expect_waiting (struct flusher *f, const char *name)
{
  const struct timespec tick = { 0, 1000 * 1000 };

  for (;;) {
    int tid = atomic_load (&f->tid);

    if (atomic_load (&f->returned)) {
      fprintf (stderr, "flush %s returned (%d) while flush A's fdatasync of "
               "a write completed before it was held\n", name, f->ret);
      release ();
      CHECK (!"a later flush waits for A");
    }
    if (tid && thread_state (tid) == 'S')
      return;
    nanosleep (&tick, NULL);
  }
}

/* Flush A held syncing zone 0; flush B of zone 1, written after A took its
 * zones, syncs it beside A; flush C, with nothing written since B, has no
 * sync of its own.  Both wait for A, then return.  fail: A's fdatasync
 * fails, and so do B and C, which cover A's write.
 */
static void
test_release_together (bool fail)
{
  char dir[1024];
  struct zn_config c = store_cfg (16, 2, 2, 2, 512,
                                  path_in_top (dir, sizeof dir, "together"));
  struct zn_dev *d = create (&c);
  struct flusher a = { .d = d }, b = { .d = d }, cf = { .d = d };
  const struct timespec tick = { 0, 1000 * 1000 };
  int want = fail ? -EIO : 0;

  held_then_second (d, fail, &a, &b);
  /* B's fdatasync of zone 1 (the second since arming) is done before C. */
  for (;;) {
    unsigned n;

    pthread_mutex_lock (&gate_lock);
    n = calls;
    pthread_mutex_unlock (&gate_lock);
    if (n >= 2)
      break;
    if (atomic_load (&b.returned)) {
      release ();
      CHECK (!"B syncs zone 1 and waits");
    }
    nanosleep (&tick, NULL);
  }
  expect_waiting (&b, "B");
  CHECK_EQ (pthread_create (&cf.thread, NULL, flush_thread, &cf), 0);
  expect_waiting (&cf, "C");
  alarm (60);
  release ();
  CHECK_EQ (pthread_join (a.thread, NULL), 0);
  CHECK_EQ (pthread_join (b.thread, NULL), 0);
  CHECK_EQ (pthread_join (cf.thread, NULL), 0);
  alarm (0);
  CHECK_EQ (a.ret, want);
  if (b.ret != want || cf.ret != want)
    fprintf (stderr, "flushes B and C returned %d and %d after flush A's "
                     "sync %s\n", b.ret, cf.ret, fail ? "failed" : "ended");
  CHECK_EQ (b.ret, want);
  CHECK_EQ (cf.ret, want);
  CHECK (b.sync_done_before && cf.sync_done_before);
  if (fail)                     /* the zone A failed to sync, again */
    CHECK_EQ (zn_flush (d), 0);
  zn_dev_destroy (d);
  rm_tree (dir);
}

struct nowait_writer {
  struct zn_dev *d;
  uint64_t sector;
  unsigned tag;
  atomic_int tid;
  atomic_bool returned;
  int ret;
};

static void *
nowait_thread (void *arg)
{
  struct nowait_writer *w = arg;
  unsigned char buf[8 * ZN_SECTOR_SIZE];
  enum zn_reason why;

  atomic_store (&w->tid, (int) syscall (SYS_gettid));
  fill_pattern (buf, w->sector, 8, w->tag);
  w->ret = zn_write_nowait (w->d, buf, w->sector, 8, &why);
  atomic_store (&w->returned, true);
  return NULL;
}

/* zn_write_nowait of 8 sectors at sector, on its own thread: its result,
 * or the test fails if the thread falls asleep instead of returning.
 */
static int
write_nowait (struct zn_dev *d, uint64_t sector, unsigned tag)
{
  struct nowait_writer w = { .d = d, .sector = sector, .tag = tag };
  const struct timespec tick = { 0, 1000 * 1000 };
  pthread_t t;

  CHECK_EQ (pthread_create (&t, NULL, nowait_thread, &w), 0);
  while (!atomic_load (&w.returned)) {
    int tid = atomic_load (&w.tid);

    if (tid && thread_state (tid) == 'S') {
      fprintf (stderr, "zn_write_nowait at sector %" PRIu64 " waits for a "
               "lock held by a FUA write's fdatasync\n", sector);
      release ();
      CHECK (!"zn_write_nowait returns at once");
    }
    nanosleep (&tick, NULL);
  }
  CHECK_EQ (pthread_join (t, NULL), 0);
  return w.ret;
}

static void *
fua_thread (void *arg)
{
  struct flusher *f = arg;

  f->ret = write_tag (f->d, zstart (f->d, 2), 8, 1, true);
  atomic_store (&f->returned, true);
  return NULL;
}

static void
test_nowait_beside_fua (void)
{
  char dir[1024];
  struct zn_config c = store_cfg (16, 2, 2, 2, 512,
                                  path_in_top (dir, sizeof dir, "nowait"));
  struct zn_dev *d;
  struct flusher fua = { 0 };
  unsigned char buf[8 * ZN_SECTOR_SIZE];
  enum zn_reason why;
  struct zn_zone z, zones[16];

  c.zone_max_open = 4;          /* the resource lock is taken */
  d = create (&c);
  fua.d = d;
  CHECK_EQ (zn_dev_sync_files (d, NULL, 0), 0);
  arm (false);
  CHECK_EQ (pthread_create (&fua.thread, NULL, fua_thread, &fua), 0);
  wait_held ();

  CHECK_EQ (write_nowait (d, zstart (d, 3), 2), -EAGAIN);
  CHECK_EQ (zn_read_nowait (d, buf, zstart (d, 2), 8, &why), -EAGAIN);
  CHECK_EQ (write_nowait (d, zstart (d, 1), 3), 0);
  CHECK_EQ (zn_report_zones_nowait (d, zstart (d, 2), &z, 1), -EAGAIN);
  CHECK_EQ (zn_report_zones_nowait (d, 0, &z, 1), -EAGAIN);

  release ();
  CHECK_EQ (pthread_join (fua.thread, NULL), 0);
  CHECK_EQ (fua.ret, 0);
  CHECK_EQ (zn_report_zones_nowait (d, zstart (d, 2), &z, 1), 1);
  CHECK_EQ (z.wp, zstart (d, 2) + 8);
  CHECK_EQ (z.cond, ZN_COND_IMP_OPEN);
  CHECK_EQ (zn_report_zones_nowait (d, 0, zones, 16),
            (int) zn_dev_geometry (d)->nr_zones);
  /* (A zone report takes the resource lock: only now.) */
  CHECK_EQ (zone_at (d, 3).wp, zstart (d, 3));
  CHECK_EQ (zone_at (d, 3).cond, ZN_COND_EMPTY);
  CHECK_EQ (write_nowait (d, zstart (d, 3), 2), 0);
  CHECK_EQ (zone_at (d, 3).wp, zstart (d, 3) + 8);
  CHECK_EQ (zn_read_nowait (d, buf, zstart (d, 1), 8, &why), 0);
  expect_data (d, zstart (d, 1), 8, 3);
  expect_data (d, zstart (d, 3), 8, 2);
  zn_dev_destroy (d);
  rm_tree (dir);
}

int
main (void)
{
  make_top ();
  signal (SIGALRM, on_alarm);
  test_concurrent_flushes ();
  test_side_by_side (false);
  test_side_by_side (true);
  test_release_together (false);
  test_release_together (true);
  test_nowait_beside_fua ();
  printf ("test-files-model-flush: all tests passed\n");
  return EXIT_SUCCESS;
}
