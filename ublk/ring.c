/* SPDX-License-Identifier: BSD-3-Clause */
/* zonednull-ublk: a hardware queue's ublk side.  See ring.h.
 *
 * ublk hands each tag of a queue to the thread that fetched it, so every
 * queue has its own thread and ring, and that thread alone touches them.
 * It never sleeps except in io_uring_enter.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <linux/blkzoned.h>

#include "util/clock.h"
#include "ring.h"

/* ---- the device ---------------------------------------------------------- */

int
zu_block_errno (int err)
{
  /* These survive ublk_drv's errno_to_blk_status and come back to the
   * application unchanged, as null_blk's statuses would; anything else is
   * a plain I/O error, as null_blk fails such a request.
   */
  switch (-zn_block_errno (-err)) {
  case 0:
  case -EIO:
  case -EINVAL:
  case -ENOSPC:
  case -EOPNOTSUPP:
  case -ETOOMANYREFS:           /* BLK_STS_ZONE_OPEN_RESOURCE */
  case -EOVERFLOW:              /* BLK_STS_ZONE_ACTIVE_RESOURCE */
    return err;
  default:
    return -EIO;
  }
}

uint64_t
zu_data_bytes (const struct zu_io_desc *iod)
{
  switch (iod->op_flags & 0xff) {
  case ZU_OP_READ:
  case ZU_OP_WRITE:
  case ZU_OP_ZONE_APPEND:
    return (uint64_t) iod->nr_sectors << ZN_SECTOR_SHIFT;
  default:
    return 0;
  }
}

void
zu_served_summary (struct zu_device *d, char *buf, size_t len)
{
  static const struct { unsigned op; const char *name; } names[] = {
    { ZU_OP_READ, "reads" }, { ZU_OP_WRITE, "writes" },
    { ZU_OP_ZONE_APPEND, "zone appends" }, { ZU_OP_FLUSH, "flushes" },
    { ZU_OP_REPORT_ZONES, "zone reports" }, { ZU_OP_ZONE_OPEN, "opens" },
    { ZU_OP_ZONE_CLOSE, "closes" }, { ZU_OP_ZONE_FINISH, "finishes" },
    { ZU_OP_ZONE_RESET, "resets" }, { ZU_OP_ZONE_RESET_ALL, "resets of all zones" },
  };
  size_t used = 0;

  buf[0] = '\0';
  for (size_t i = 0; i < sizeof names / sizeof names[0] && used < len; i++) {
    int n = snprintf (buf + used, len - used, "%s%llu %s", i ? ", " : "",
                      atomic_load (&d->served[names[i].op]), names[i].name);
    if (n < 0)
      break;
    used += (size_t) n;
  }
}

/* A queue thread says its fetches are submitted (err 0) or failed, with
 * what failed (why, naming the queue).
 */
static void
report_ready (struct zu_device *d, int err, const char *why)
{
  pthread_mutex_lock (&d->lock);
  d->nr_ready++;
  if (err && d->error == 0) {
    d->error = err;
    snprintf (d->error_msg, sizeof d->error_msg, "%s", why);
  }
  pthread_cond_broadcast (&d->cond);
  pthread_mutex_unlock (&d->lock);
}

int
zu_queues_wait_ready (struct zu_device *d, unsigned nr_started, char *err,
                      size_t errlen)
{
  int e;

  pthread_mutex_lock (&d->lock);
  while (d->nr_ready < nr_started)
    pthread_cond_wait (&d->cond, &d->lock);
  e = d->error;
  if (e)
    snprintf (err, errlen, "%s", d->error_msg);
  pthread_mutex_unlock (&d->lock);
  return e;
}

/* ---- --stats ----------------------------------------------------------------
 *
 * Counted only with d->stats.  A request is timed from the return of
 * the wait that reaped its FETCH or COMMIT completion to the call that
 * submits its COMMIT_AND_FETCH_REQ: the time ublk's request spends in
 * this process, a timed completion (irqmode=2) or the NBD round trip
 * (--connect) included.
 */

static void
stat_add (atomic_ullong *c, uint64_t v)
{
  atomic_store_explicit (c, atomic_load_explicit (c, memory_order_relaxed)
                         + v, memory_order_relaxed);
}

static void
stat_max (atomic_ullong *c, uint64_t v)
{
  if (v > atomic_load_explicit (c, memory_order_relaxed))
    atomic_store_explicit (c, v, memory_order_relaxed);
}

static void
stat_time (atomic_ullong *sum, atomic_ullong *max, uint64_t ns)
{
  stat_add (sum, ns);
  stat_max (max, ns);
}

/* An io_uring_enter is about to take the commits queued since the last. */
static void
stats_submitting (struct zu_ring *r)
{
  uint64_t now;

  stat_add (&r->stats.enters, 1);
  if (r->nr_committing == 0)
    return;
  now = zn_now_ns ();
  for (unsigned i = 0; i < r->nr_committing; i++)
    stat_time (&r->stats.commit_ns_sum, &r->stats.commit_ns_max,
               now - r->request_ns[r->committing[i]]);
  stat_add (&r->stats.requests, r->nr_committing);
  r->nr_committing = 0;
}

void
zu_ring_count_nbd (struct zu_ring *r, const struct timespec *since)
{
  uint64_t then = zn_ns_of (*since), now = zn_now_ns ();

  stat_add (&r->stats.nbd_requests, 1);
  stat_time (&r->stats.nbd_ns_sum, &r->stats.nbd_ns_max,
             now > then ? now - then : 0);
}

void
zu_ring_print_stats (struct zu_ring *r, bool nbd)
{
  struct zu_ring_stats *st = &r->stats;
  char more[160] = "";

  if (nbd)
    snprintf (more, sizeof more, " nbd_requests=%llu nbd_ns_sum=%llu "
              "nbd_ns_max=%llu", atomic_load (&st->nbd_requests),
              atomic_load (&st->nbd_ns_sum), atomic_load (&st->nbd_ns_max));
  fprintf (stderr, "zonednull-ublk: stats: queue=%u enters=%llu cqes=%llu "
           "requests=%llu commit_ns_sum=%llu commit_ns_max=%llu%s\n", r->id,
           atomic_load (&st->enters), atomic_load (&st->cqes),
           atomic_load (&st->requests), atomic_load (&st->commit_ns_sum),
           atomic_load (&st->commit_ns_max), more);
}

/* ---- submissions ---------------------------------------------------------- */

struct io_uring_sqe *
zu_ring_sqe (struct zu_ring *r)
{
  struct io_uring_sqe *sqe;

  /* The ring has room for all the kind keeps outstanding (its nr_sqes),
   * so a full SQ only means not yet submitted.
   */
  while ((sqe = io_uring_get_sqe (&r->ring)) == NULL) {
    if (r->d->stats)
      stats_submitting (r);
    io_uring_submit (&r->ring);
  }
  return sqe;
}

static void
submit_io_cmd (struct zu_ring *r, unsigned tag, uint32_t op, int result,
               uint64_t addr)
{
  struct io_uring_sqe *sqe = zu_ring_sqe (r);
  struct zu_io_cmd cmd = {
    .q_id = (uint16_t) r->id, .tag = (uint16_t) tag, .result = result,
    .addr = addr,
  };

  memset (sqe, 0, sizeof *sqe);
  sqe->opcode = IORING_OP_URING_CMD;
  sqe->fd = r->d->cdev_fd;
  sqe->cmd_op = op;
  memcpy (sqe->cmd, &cmd, sizeof cmd);
  io_uring_sqe_set_data64 (sqe, ZU_UD (ZU_UD_IO, tag));
}

void
zu_ring_commit (struct zu_ring *r, unsigned tag, int result, uint64_t addr)
{
  if (r->d->stats && r->nr_committing < r->d->depth)
    r->committing[r->nr_committing++] = tag;
  submit_io_cmd (r, tag, ZU_IO_COMMIT_AND_FETCH_REQ, result, addr);
}

void
zu_ring_timeout (struct zu_ring *r, struct __kernel_timespec *ts,
                 unsigned flags, uint64_t ud)
{
  struct io_uring_sqe *sqe = zu_ring_sqe (r);

  io_uring_prep_timeout (sqe, ts, 0, flags);
  io_uring_sqe_set_data64 (sqe, ud);
}

void
zu_ring_poll (struct zu_ring *r, int fd, unsigned mask, uint64_t ud)
{
  struct io_uring_sqe *sqe = zu_ring_sqe (r);

  io_uring_prep_poll_add (sqe, fd, mask);
  io_uring_sqe_set_data64 (sqe, ud);
}

/* ---- a request's data ------------------------------------------------------ */

void
zu_ring_count (struct zu_ring *r, const struct zu_io_desc *iod)
{
  unsigned op = iod->op_flags & 0xff;

  if (op < ZU_NR_OPS)
    atomic_fetch_add_explicit (&r->d->served[op], 1, memory_order_relaxed);
}

/* User copy moves the request's data with pread/pwrite on the character
 * device; a short count means the request is not what its descriptor
 * says, an I/O error either way.
 *
 * They stay synchronous calls of the queue thread.  The character
 * device has no FMODE_NOWAIT (through 6.12 at least) and cannot be
 * polled, so io_uring hands an IORING_OP_READ or WRITE on it to an
 * io-wq worker: on 6.12, 4 KiB random reads at QD16 with the copy out
 * as an IORING_OP_WRITE linked to the commit ran at 0.51x the IOPS of
 * pwrite, with a worker woken for a fifth of the reads.  No ublk
 * feature bit (GET_FEATURES) says otherwise.  And one 4 KiB memcpy
 * more per write changed neither IOPS nor the queue thread's CPU time
 * measurably (about 200 us per write at QD1 under TCG), so the data
 * goes through the queue's buffer rather than straight into the
 * zone's memory.
 */
int
zu_ring_copy_in (struct zu_ring *r, unsigned tag, void *buf, size_t bytes)
{
  ssize_t n = pread (r->d->cdev_fd, buf, bytes,
                     (off_t) zu_user_copy_pos (r->id, tag));

  return n == (ssize_t) bytes ? 0 : -EIO;
}

int
zu_ring_copy_out (struct zu_ring *r, unsigned tag, const void *buf,
                  size_t bytes)
{
  ssize_t n = pwrite (r->d->cdev_fd, buf, bytes,
                      (off_t) zu_user_copy_pos (r->id, tag));

  return n == (ssize_t) bytes ? 0 : -EIO;
}

void
zu_report_fill (struct zu_device *d, void *buf, const struct zn_zone *zones,
                unsigned n)
{
  struct blk_zone *bz = buf;

  memset (buf, 0, d->buf_bytes);
  for (unsigned i = 0; i < n; i++)
    bz[i] = (struct blk_zone) {
      .start = zones[i].start, .len = zones[i].len, .wp = zones[i].wp,
      .type = zones[i].type, .cond = zones[i].cond,
      .capacity = zones[i].capacity,
    };
}

/* REPORT_ZONES: the kernel's buffer may be larger than the zones it asks
 * for, and a result short of its length would requeue the request.  So
 * the whole buffer goes out, records first and zeros after (a
 * zero-length record ends a report); pwrite copies what fits and says how
 * much that was, which is the result.
 */
int
zu_ring_put_report (struct zu_ring *r, unsigned tag, const void *buf)
{
  ssize_t n = pwrite (r->d->cdev_fd, buf, r->d->buf_bytes,
                      (off_t) zu_user_copy_pos (r->id, tag));

  return n > 0 ? (int) n : -EIO;
}

/* ---- the thread ------------------------------------------------------------ */

static void
handle_cqe (struct zu_ring *r, const struct io_uring_cqe *cqe)
{
  unsigned tag = ZU_UD_TAG (cqe->user_data);

  switch (ZU_UD_KIND (cqe->user_data)) {
  case ZU_UD_IO:
    if (cqe->res == ZU_IO_RES_OK && r->d->stats && tag < r->d->depth)
      r->request_ns[tag] = r->reaped_ns;
    if (cqe->res == ZU_IO_RES_OK)
      r->ops->request (r, tag);
    else {
      if (cqe->res != ZU_IO_RES_ABORT)
        fprintf (stderr, "zonednull-ublk: queue %u tag %u: %s\n", r->id,
                 tag, strerror (-cqe->res));
      if (++r->dead_tags == r->d->depth)
        r->done = true;
    }
    break;
  case ZU_UD_STOP:
    r->done = true;
    break;
  default:
    if (r->ops->cqe)
      r->ops->cqe (r, cqe);
    break;
  }
}

/* The ring of the calling thread, which alone will ever submit to it
 * and wait on it, as ublk wants of a queue's server anyway.  With
 * SINGLE_ISSUER and DEFER_TASKRUN (Linux 6.1) ublk's and io_uring's task
 * work for the ring (a new request, a completed timer) runs only when
 * this thread asks for completions, in the io_uring_enter it makes
 * anyway: nothing interrupts it between requests.  COOP_TASKRUN (5.19)
 * at least spares it the interrupt.  A kernel that knows neither
 * refuses the flags with EINVAL: then the plain ring.
 */
static int
ring_create (struct zu_ring *r, char *err, size_t errlen)
{
  static const unsigned flag_sets[] = {
    IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
    IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
    0,
  };
  int e = -EINVAL;

  for (size_t i = 0; i < sizeof flag_sets / sizeof flag_sets[0]; i++) {
    struct io_uring_params p = { .flags = flag_sets[i] };

    e = io_uring_queue_init_params (r->entries, &r->ring, &p);
    if (e == 0) {
      r->ring_ready = true;
      return 0;
    }
    if (e != -EINVAL)
      break;
  }
  snprintf (err, errlen, "queue %u: io_uring_queue_init: %s", r->id,
            strerror (-e));
  return e;
}

static void *
ring_main (void *arg)
{
  struct zu_ring *r = arg;
  char why[256];
  int err;

  err = ring_create (r, why, sizeof why);
  if (err < 0) {
    report_ready (r->d, err, why);
    return NULL;
  }
  /* ublk makes the thread that fetches a tag its only server. */
  for (unsigned tag = 0; tag < r->d->depth; tag++)
    submit_io_cmd (r, tag, ZU_IO_FETCH_REQ, 0, 0);
  zu_ring_poll (r, r->d->stop_fd, POLLIN, ZU_UD (ZU_UD_STOP, 0));
  if (r->ops->arm)
    r->ops->arm (r);
  if (r->d->stats)
    stats_submitting (r);
  err = io_uring_submit (&r->ring);
  if (err < 0)
    snprintf (why, sizeof why, "queue %u: fetching requests: %s", r->id,
              strerror (-err));
  report_ready (r->d, err < 0 ? err : 0, why);
  if (err < 0)
    return NULL;

  while (!r->done) {
    struct io_uring_cqe *cqe;
    unsigned head, seen = 0;

    if (r->d->stats)
      stats_submitting (r);
    err = io_uring_submit_and_wait (&r->ring, 1);
    if (r->d->stats)
      r->reaped_ns = zn_now_ns ();
    if (err < 0 && err != -EINTR) {
      fprintf (stderr, "zonednull-ublk: queue %u: io_uring: %s\n", r->id,
               strerror (-err));
      break;
    }
    io_uring_for_each_cqe (&r->ring, head, cqe) {
      handle_cqe (r, cqe);
      seen++;
    }
    io_uring_cq_advance (&r->ring, seen);
    if (r->d->stats)
      stat_add (&r->stats.cqes, seen);
    if (r->ops->batch)
      r->ops->batch (r);
  }
  return NULL;
}

/* ---- setup and teardown ----------------------------------------------------- */

int
zu_ring_open (struct zu_ring *r, unsigned nr_sqes, char *err, size_t errlen)
{
  size_t page = (size_t) sysconf (_SC_PAGESIZE);
  size_t per_queue = ZU_MAX_QUEUE_DEPTH * sizeof (struct zu_io_desc);
  unsigned entries = 1;

  r->descs_len = (r->d->depth * sizeof (struct zu_io_desc) + page - 1)
    / page * page;
  r->descs = mmap (NULL, r->descs_len, PROT_READ, MAP_SHARED | MAP_POPULATE,
                   r->d->cdev_fd, (off_t) (r->id * per_queue));
  if (r->descs == MAP_FAILED) {
    r->descs = NULL;
    snprintf (err, errlen, "queue %u: mmap of the descriptors: %s", r->id,
              strerror (errno));
    return -1;
  }
  while (entries < nr_sqes)
    entries <<= 1;
  r->entries = entries;         /* the thread makes the ring */
  if (r->d->stats) {
    r->request_ns = calloc (r->d->depth, sizeof *r->request_ns);
    r->committing = calloc (r->d->depth, sizeof *r->committing);
    if (r->request_ns == NULL || r->committing == NULL) {
      snprintf (err, errlen, "queue %u: out of memory", r->id);
      return -1;
    }
  }
  return 0;
}

int
zu_ring_start (struct zu_ring *r, const struct zu_ring_ops *ops, char *err,
               size_t errlen)
{
  int e;

  r->ops = ops;
  e = pthread_create (&r->thread, NULL, ring_main, r);
  if (e != 0) {
    snprintf (err, errlen, "queue %u: pthread_create: %s", r->id,
              strerror (e));
    return -1;
  }
  r->thread_started = true;
  return 0;
}

void
zu_ring_join (struct zu_ring *r)
{
  if (r->thread_started) {
    pthread_join (r->thread, NULL);
    if (r->d->stats)            /* timeout_s: set with --connect only */
      zu_ring_print_stats (r, r->d->timeout_s > 0);
  }
  r->thread_started = false;
}

void
zu_ring_close (struct zu_ring *r)
{
  if (r->ring_ready)
    io_uring_queue_exit (&r->ring);
  r->ring_ready = false;
  if (r->descs)
    munmap (r->descs, r->descs_len);
  r->descs = NULL;
  free (r->request_ns);
  free (r->committing);
  r->request_ns = NULL;
  r->committing = NULL;
}
