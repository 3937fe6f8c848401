/* zonednull-ublk --connect: serving a ublk queue from a remote zonednull
 * server.  See queue-remote.h for the shape.
 *
 * Ownership: the queue thread alone touches the ring, the character
 * device, the data connection and the slots' states; the worker thread
 * alone calls its zn_client.  They meet in two lists under one mutex:
 * jobs (queue -> worker, with a condition variable) and results
 * (worker -> queue, with an eventfd the ring reads).
 *
 * Failure: a dead connection (libnbd retires every command in flight
 * with an error at once) or a request older than the device's timeout
 * (then the queue shuts the data socket down, so that libnbd retires
 * them, and abandons the worker's current call) marks the whole device
 * dead: every request from then on, and every one still waiting, fails
 * with EIO.  There is no reconnection; the loss is reported on stderr
 * and in syslog.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <linux/blkzoned.h>

#include <libnbd.h>

#include "zonednull/client.h"
#include "fifo.h"
#include "queue-remote.h"

/* Each queue's data connection has an error log of its own
 * (zn_client_open_data), so the errno the server recorded for a failed
 * request is that request's, whatever other clients fail meanwhile.
 */

/* ---- the queue ----------------------------------------------------------- */

/* The kinds of CQE a queue has besides the ring's. */
enum {
  UD_NBD_IN = ZU_UD_OWN,        /* the data socket is readable */
  UD_NBD_OUT,                   /* ... writable */
  UD_WORKER,                    /* the worker posted results */
  UD_TICK,                      /* once a second: timeouts */
};

enum slot_state {
  S_IDLE,                       /* the kernel has the tag */
  S_NBD,                        /* a data request is in flight */
  S_NBD_DONE,                   /* ... its reply came: on the ready list */
  S_JOB,                        /* with the worker */
  S_JOB_DONE,                   /* back from the worker: on the results */
};

enum job {
  J_NONE,
  J_MGMT,                       /* zone open/close/finish/reset(-all) */
  J_REPORT,
  J_APPEND,
  J_ERRNO,                      /* the exact errno of a failed data request */
};

struct rslot {
  struct zu_rqueue *q;
  unsigned tag;
  enum slot_state state;
  struct zu_io_desc iod;
  unsigned char *buf;           /* allocated at first use */
  struct timespec since;        /* when it went to NBD or the worker */
  /* The data request. */
  uint32_t nbd_cmd;
  int nbd_err;                  /* libnbd's errno, 0 on success */
  /* The worker's job and answer. */
  enum job job;
  enum zn_zone_op op;
  uint64_t sector, nr_sectors;
  bool fua;
  int job_result;               /* count or -errno */
  int job_errno;                /* J_ERRNO: the device's errno or 0 */
  uint64_t lba;
  bool abandoned;               /* timed out while the worker had it */
  struct rslot *next;
};

struct zu_rqueue {
  struct zu_ring r;             /* first: ring.c's callbacks get &q->r */
  struct rslot *slots;
  /* The data connection. */
  struct nbd_handle *h;
  uint64_t errlog;
  bool h_dead;                  /* libnbd said so, or we shut it down */
  bool in_armed, out_armed;
  bool can_flush, can_fua;
  struct rslot *ready;          /* replies arrived, not yet committed */
  struct __kernel_timespec tick;
  /* The worker. */
  struct zn_client *c;
  pthread_t worker;
  bool worker_started;
  int efd;                      /* worker -> queue: results posted */
  bool efd_armed;
  uint64_t efd_count;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  struct rslot *jobs, *jobs_tail; /* under lock */
  struct rslot *results;        /* under lock */
  struct rslot *current;        /* under lock: what the worker runs */
  bool worker_stop;             /* under lock */
  struct zn_zone *zones;        /* the worker's report buffer */
  unsigned max_zones;
};

static void
lost (struct zu_rqueue *q, const char *why)
{
  bool was = atomic_exchange (&q->r.d->dead, true);

  if (!was) {
    fprintf (stderr, "zonednull-ublk: /dev/ublkb%" PRIu32 ": lost the "
             "server (queue %u: %s); every request now fails with EIO; "
             "stop zonednull-ublk and start it again once the server is "
             "back\n", q->r.d->dev_id, q->r.id, why);
    syslog (LOG_ERR, "/dev/ublkb%" PRIu32 ": lost the server (queue %u: "
            "%s); every request now fails with EIO", q->r.d->dev_id, q->r.id,
            why);
  }
}

static void
finish (struct zu_rqueue *q, struct rslot *s, int result)
{
  s->state = S_IDLE;
  zu_ring_commit (&q->r, s->tag, result,
                  s->iod.op_flags % 256 == ZU_OP_ZONE_APPEND && result >= 0
                  ? s->lba : 0);
}

static double
age (const struct timespec *since, const struct timespec *now)
{
  return (double) (now->tv_sec - since->tv_sec)
    + (double) (now->tv_nsec - since->tv_nsec) / 1e9;
}

static int
ensure_buf (struct zu_rqueue *q, struct rslot *s)
{
  if (s->buf == NULL)
    s->buf = malloc (q->r.d->buf_bytes);
  return s->buf ? 0 : -ENOMEM;
}

/* ---- the worker ---------------------------------------------------------- */

static void
post_job (struct zu_rqueue *q, struct rslot *s, enum job job)
{
  s->job = job;
  s->state = S_JOB;
  s->abandoned = false;
  clock_gettime (CLOCK_MONOTONIC, &s->since);
  pthread_mutex_lock (&q->lock);
  ZN_FIFO_PUSH (q->jobs, q->jobs_tail, s, next);
  pthread_cond_signal (&q->cond);
  pthread_mutex_unlock (&q->lock);
}

static void
run_job (struct zu_rqueue *q, struct rslot *s)
{
  struct zn_client *c = q->c;
  int r;

  switch (s->job) {
  case J_MGMT:
    s->job_result = zn_client_zone_mgmt (c, s->op, s->sector, s->nr_sectors);
    break;
  case J_REPORT:
    s->job_result = zn_client_report (c, s->sector, q->zones,
                                      s->nr_sectors < q->max_zones
                                      ? (unsigned) s->nr_sectors
                                      : q->max_zones);
    if (s->job_result >= 0)
      zu_report_fill (q->r.d, s->buf, q->zones, (unsigned) s->job_result);
    break;
  case J_APPEND:
    s->lba = 0;
    s->job_result = s->fua
      ? zn_client_append_fua (c, s->buf, s->sector, s->nr_sectors, &s->lba)
      : zn_client_append (c, s->buf, s->sector, s->nr_sectors, &s->lba);
    break;
  case J_ERRNO:
    s->job_errno = 0;
    r = zn_client_errlog_errno (c, q->errlog, s->nbd_cmd,
                    s->iod.start_sector << ZN_SECTOR_SHIFT,
                    (uint64_t) s->iod.nr_sectors << ZN_SECTOR_SHIFT,
                    &s->job_errno);
    s->job_result = r;
    break;
  case J_NONE:
    s->job_result = -EIO;
    break;
  }
  /* A device errno is an answer.  A timeout leaves the client unusable
   * (the library never polls it again), so the server is lost as when
   * the tick finds a late request; a broken answer is the server's fault:
   * both are said, never turned into a silent EIO.
   */
  if (s->job_result == -ETIMEDOUT)
    lost (q, zn_client_error (c));
  else if (s->job_result == -EPROTO)
    fprintf (stderr, "zonednull-ublk: /dev/ublkb%" PRIu32 ": queue %u: %s\n",
             q->r.d->dev_id, q->r.id, zn_client_error (c));
}

static void *
worker_main (void *arg)
{
  struct zu_rqueue *q = arg;

  pthread_mutex_lock (&q->lock);
  for (;;) {
    struct rslot *s;

    while (q->jobs == NULL && !q->worker_stop)
      pthread_cond_wait (&q->cond, &q->lock);
    if (q->worker_stop && q->jobs == NULL)
      break;
    s = q->jobs;
    q->jobs = s->next;
    if (q->jobs == NULL)
      q->jobs_tail = NULL;
    q->current = s;
    pthread_mutex_unlock (&q->lock);

    run_job (q, s);

    pthread_mutex_lock (&q->lock);
    q->current = NULL;
    if (s->abandoned)
      s->abandoned = false;     /* already failed by the queue */
    else {
      s->next = q->results;
      q->results = s;
    }
    pthread_mutex_unlock (&q->lock);
    eventfd_write (q->efd, 1);
  }
  pthread_mutex_unlock (&q->lock);
  /* zn_client_close says goodbye and waits for the server to close the
   * connections: not for a server that was lost.  The queue does not
   * wait for this thread forever either (rqueue_free).
   */
  if (!atomic_load (&q->r.d->dead))
    zn_client_close (q->c);
  q->c = NULL;
  return NULL;
}

/* A worker's answer becomes the request's ublk result. */
static int
job_result (struct zu_rqueue *q, struct rslot *s)
{
  size_t bytes = (size_t) s->iod.nr_sectors << ZN_SECTOR_SHIFT;
  int err;

  switch (s->job) {
  case J_MGMT:
    return zu_block_errno (s->job_result);
  case J_REPORT:
    if (s->job_result < 0)
      return zu_block_errno (s->job_result);
    return zu_ring_put_report (&q->r, s->tag, s->buf);
  case J_APPEND:
    return s->job_result < 0 ? zu_block_errno (s->job_result) : (int) bytes;
  case J_ERRNO:
    /* The device's own errno if the server has it, else NBD's. */
    err = s->job_result == 0 && s->job_errno > 0 ? s->job_errno : s->nbd_err;
    return zu_block_errno (-err);
  case J_NONE:
    break;
  }
  return -EIO;
}

static void
take_results (struct zu_rqueue *q)
{
  struct rslot *s;

  pthread_mutex_lock (&q->lock);
  s = q->results;
  q->results = NULL;
  pthread_mutex_unlock (&q->lock);
  while (s) {
    struct rslot *next = s->next;

    if (s->state == S_JOB)
      finish (q, s, job_result (q, s));
    s = next;
  }
}

/* ---- the data connection ------------------------------------------------- */

static bool
conn_gone (int err)
{
  return err == ENOTCONN || err == ESHUTDOWN || err == ECONNRESET
    || err == EPIPE || err == ECONNABORTED || err == ETIMEDOUT;
}

static int
nbd_done (void *user_data, int *error)
{
  struct rslot *s = user_data;
  struct zu_rqueue *q = s->q;

  /* Called by libnbd from the queue thread, with the handle locked:
   * only note the result; the loop commits it.
   */
  if (s->state == S_NBD) {
    if (q->r.d->stats)
      zu_ring_count_nbd (&q->r, &s->since);
    s->nbd_err = *error;
    s->state = S_NBD_DONE;
    s->next = q->ready;
    q->ready = s;
  }
  return 1;                     /* retire the command */
}

static void
take_replies (struct zu_rqueue *q)
{
  while (q->ready) {
    struct rslot *s = q->ready;
    size_t bytes = (size_t) s->iod.nr_sectors << ZN_SECTOR_SHIFT;
    int r;

    q->ready = s->next;
    if (s->state != S_NBD_DONE)
      continue;
    if (s->nbd_err == 0) {
      switch (s->iod.op_flags & 0xff) {
      case ZU_OP_READ:
        r = zu_ring_copy_out (&q->r, s->tag, s->buf, bytes);
        finish (q, s, r ? r : (int) bytes);
        break;
      case ZU_OP_WRITE:
        finish (q, s, (int) bytes);
        break;
      default:
        finish (q, s, 0);
        break;
      }
    }
    else if (conn_gone (s->nbd_err) || atomic_load (&q->r.d->dead)) {
      if (conn_gone (s->nbd_err))
        lost (q, strerror (s->nbd_err));
      finish (q, s, -EIO);
    }
    else if (s->nbd_cmd == ZN_NBD_CMD_READ
             || s->nbd_cmd == ZN_NBD_CMD_WRITE)
      post_job (q, s, J_ERRNO);    /* which errno the device gave */
    else
      finish (q, s, zu_block_errno (-s->nbd_err));
  }
}

static void
check_conn (struct zu_rqueue *q)
{
  if (!q->h_dead && (nbd_aio_is_dead (q->h) || nbd_aio_is_closed (q->h))) {
    q->h_dead = true;
    lost (q, nbd_get_error () && *nbd_get_error () ? nbd_get_error ()
          : "the data connection closed");
  }
}

static void
arm_polls (struct zu_rqueue *q)
{
  unsigned dir;
  int fd;

  if (q->h_dead)
    return;
  fd = nbd_aio_get_fd (q->h);
  if (fd == -1)
    return;
  dir = nbd_aio_get_direction (q->h);
  if (!q->in_armed) {
    zu_ring_poll (&q->r, fd, POLLIN, ZU_UD (UD_NBD_IN, 0));
    q->in_armed = true;
  }
  if (!q->out_armed && (dir & LIBNBD_AIO_DIRECTION_WRITE)) {
    zu_ring_poll (&q->r, fd, POLLOUT, ZU_UD (UD_NBD_OUT, 0));
    q->out_armed = true;
  }
}

static void
issue (struct zu_rqueue *q, struct rslot *s, uint32_t nbd_cmd, size_t bytes,
       bool fua)
{
  uint64_t offset = s->iod.start_sector << ZN_SECTOR_SHIFT;
  nbd_completion_callback cb = { .callback = nbd_done, .user_data = s };
  uint32_t flags = fua && q->can_fua ? LIBNBD_CMD_FLAG_FUA : 0;
  int64_t cookie;

  s->nbd_cmd = nbd_cmd;
  s->nbd_err = 0;
  s->state = S_NBD;
  clock_gettime (CLOCK_MONOTONIC, &s->since);
  if (nbd_cmd == ZN_NBD_CMD_READ)
    cookie = nbd_aio_pread (q->h, s->buf, bytes, offset, cb, 0);
  else if (nbd_cmd == ZN_NBD_CMD_WRITE)
    cookie = nbd_aio_pwrite (q->h, s->buf, bytes, offset, cb, flags);
  else
    cookie = nbd_aio_flush (q->h, cb, 0);
  if (cookie == -1 && s->state == S_NBD) {
    /* Not issued, so libnbd never calls back. */
    check_conn (q);
    finish (q, s, -EIO);
  }
}

/* ---- serving a request ---------------------------------------------------- */

static void
start_request (struct zu_rqueue *q, unsigned tag)
{
  struct rslot *s = &q->slots[tag];
  const struct zn_geometry *geo = q->r.d->geo;
  unsigned op;
  size_t bytes;

  s->iod = q->r.descs[tag];
  op = s->iod.op_flags & 0xff;
  zu_ring_count (&q->r, &s->iod);
  s->fua = (s->iod.op_flags & ZU_IO_F_FUA) != 0;
  s->sector = s->iod.start_sector;
  s->nr_sectors = s->iod.nr_sectors;
  s->lba = 0;
  bytes = (size_t) zu_data_bytes (&s->iod);

  if (atomic_load (&q->r.d->dead) || q->h_dead) {
    finish (q, s, -EIO);
    return;
  }
  if (bytes > q->r.d->buf_bytes || ensure_buf (q, s) < 0) {
    finish (q, s, -EIO);
    return;
  }
  switch (op) {
  case ZU_OP_READ:
    issue (q, s, ZN_NBD_CMD_READ, bytes, false);
    return;
  case ZU_OP_WRITE:
    if (zu_ring_copy_in (&q->r, s->tag, s->buf, bytes) < 0) {
      finish (q, s, -EIO);
      return;
    }
    issue (q, s, ZN_NBD_CMD_WRITE, bytes, s->fua);
    return;
  case ZU_OP_FLUSH:
    if (!q->can_flush) {
      finish (q, s, 0);
      return;
    }
    issue (q, s, UINT32_MAX, 0, false);
    return;
  case ZU_OP_ZONE_APPEND:
    if (zu_ring_copy_in (&q->r, s->tag, s->buf, bytes) < 0) {
      finish (q, s, -EIO);
      return;
    }
    post_job (q, s, J_APPEND);
    return;
  case ZU_OP_ZONE_OPEN:
  case ZU_OP_ZONE_CLOSE:
  case ZU_OP_ZONE_FINISH:
  case ZU_OP_ZONE_RESET:
    s->op = op == ZU_OP_ZONE_OPEN ? ZN_OP_OPEN
      : op == ZU_OP_ZONE_CLOSE ? ZN_OP_CLOSE
      : op == ZU_OP_ZONE_FINISH ? ZN_OP_FINISH : ZN_OP_RESET;
    s->nr_sectors = geo->zone_sectors;
    post_job (q, s, J_MGMT);
    return;
  case ZU_OP_ZONE_RESET_ALL:
    s->op = ZN_OP_RESET;
    s->sector = 0;
    s->nr_sectors = geo->capacity;
    post_job (q, s, J_MGMT);
    return;
  case ZU_OP_REPORT_ZONES:
    post_job (q, s, J_REPORT);
    return;
  default:
    finish (q, s, -EOPNOTSUPP);
    return;
  }
}

/* ---- timeouts ------------------------------------------------------------- */

static void
arm_tick (struct zu_rqueue *q)
{
  q->tick = (struct __kernel_timespec) { .tv_sec = 1, .tv_nsec = 0 };
  zu_ring_timeout (&q->r, &q->tick, 0, ZU_UD (UD_TICK, 0));
}

/* Fails every request the worker holds or has not started. */
static void
abandon_jobs (struct zu_rqueue *q)
{
  struct rslot *s, *queued;

  pthread_mutex_lock (&q->lock);
  queued = q->jobs;
  q->jobs = q->jobs_tail = NULL;
  if (q->current && q->current->state == S_JOB)
    q->current->abandoned = true;
  s = q->current;
  pthread_mutex_unlock (&q->lock);
  if (s && s->state == S_JOB)
    finish (q, s, -EIO);
  while (queued) {
    struct rslot *next = queued->next;

    if (queued->state == S_JOB)
      finish (q, queued, -EIO);
    queued = next;
  }
}

static void
tick (struct zu_rqueue *q)
{
  struct timespec now;
  double limit = (double) q->r.d->timeout_s;
  bool nbd_late = false, job_late = false;

  clock_gettime (CLOCK_MONOTONIC, &now);
  for (unsigned t = 0; t < q->r.d->depth; t++) {
    struct rslot *s = &q->slots[t];

    if (s->state == S_NBD && age (&s->since, &now) > limit)
      nbd_late = true;
    if (s->state == S_JOB && age (&s->since, &now) > limit)
      job_late = true;
  }
  if (nbd_late && !q->h_dead) {
    int fd = nbd_aio_get_fd (q->h);

    lost (q, "the server did not answer a data request in time");
    /* libnbd sees the end of the stream and retires every command in
     * flight with an error, calling nbd_done for each.
     */
    if (fd != -1)
      shutdown (fd, SHUT_RDWR);
    nbd_aio_notify_read (q->h);
    check_conn (q);
    if (!q->h_dead) {
      q->h_dead = true;
      nbd_aio_disconnect (q->h, 0);
    }
  }
  if (job_late) {
    lost (q, "the server did not answer a control request in time");
    abandon_jobs (q);
  }
  arm_tick (q);
}

/* ---- the ring's callbacks ------------------------------------------------- */

static struct zu_rqueue *
rqueue_of (struct zu_ring *r)
{
  return (struct zu_rqueue *) (void *) r;  /* r is the first member */
}

static void
arm_worker_read (struct zu_rqueue *q)
{
  struct io_uring_sqe *sqe = zu_ring_sqe (&q->r);

  io_uring_prep_read (sqe, q->efd, &q->efd_count, sizeof q->efd_count, 0);
  io_uring_sqe_set_data64 (sqe, ZU_UD (UD_WORKER, 0));
  q->efd_armed = true;
}

static void
arm (struct zu_ring *r)
{
  struct zu_rqueue *q = rqueue_of (r);

  arm_worker_read (q);
  arm_tick (q);
  arm_polls (q);
}

static void
new_request (struct zu_ring *r, unsigned tag)
{
  start_request (rqueue_of (r), tag);
}

static void
handle_cqe (struct zu_ring *r, const struct io_uring_cqe *cqe)
{
  struct zu_rqueue *q = rqueue_of (r);

  switch (ZU_UD_KIND (cqe->user_data)) {
  case UD_NBD_IN:
    q->in_armed = false;
    if (!q->h_dead) {
      nbd_aio_notify_read (q->h);
      check_conn (q);
    }
    break;
  case UD_NBD_OUT:
    q->out_armed = false;
    if (!q->h_dead) {
      nbd_aio_notify_write (q->h);
      check_conn (q);
    }
    break;
  case UD_WORKER:
    q->efd_armed = false;
    take_results (q);
    if (!r->done)
      arm_worker_read (q);
    break;
  case UD_TICK:
    tick (q);
    break;
  }
}

/* libnbd's callbacks only note replies (nbd_done); they are committed,
 * and the socket polls armed again, once per batch of CQEs.
 */
static void
after_batch (struct zu_ring *r)
{
  struct zu_rqueue *q = rqueue_of (r);

  take_replies (q);
  arm_polls (q);
}

static const struct zu_ring_ops rqueue_ops = {
  .arm = arm,
  .request = new_request,
  .cqe = handle_cqe,
  .batch = after_batch,
};

/* ---- setup and teardown ---------------------------------------------------- */

static void
rqueue_free (struct zu_rqueue *q)
{
  if (q->h) {
    /* Say goodbye unless the server is gone; never wait for it. */
    if (!q->h_dead && !atomic_load (&q->r.d->dead))
      nbd_aio_disconnect (q->h, 0);
    nbd_close (q->h);
  }
  q->h = NULL;
  if (q->worker_started) {
    struct timespec until;

    pthread_mutex_lock (&q->lock);
    q->worker_stop = true;
    pthread_cond_signal (&q->cond);
    pthread_mutex_unlock (&q->lock);
    /* A worker blocked on a server that stopped answering would never
     * return: after a grace period, leave it, and the queue it may still
     * touch, to the exit.
     */
    clock_gettime (CLOCK_REALTIME, &until);
    until.tv_sec += 2;
    if (pthread_timedjoin_np (q->worker, NULL, &until) != 0) {
      fprintf (stderr, "zonednull-ublk: queue %u: the control worker is "
               "still waiting for the server; leaving it\n", q->r.id);
      pthread_detach (q->worker);
      /* The worker never touches the ring or the descriptors; the
       * mapping holds the character device open, and DEL_DEV waits for
       * its last close.
       */
      zu_ring_close (&q->r);
      return;
    }
  }
  else if (q->c)
    zn_client_close (q->c);
  zu_ring_close (&q->r);
  if (q->efd != -1)
    close (q->efd);
  if (q->slots)
    for (unsigned t = 0; t < q->r.d->depth; t++)
      free (q->slots[t].buf);
  free (q->slots);
  free (q->zones);
  pthread_mutex_destroy (&q->lock);
  pthread_cond_destroy (&q->cond);
  free (q);
}

struct zu_ring *
zu_rqueue_ring (struct zu_rqueue *q)
{
  return &q->r;
}

void
zu_rqueue_join (struct zu_rqueue *q)
{
  zu_ring_join (&q->r);
  rqueue_free (q);
}

struct zu_rqueue *
zu_rqueue_start (struct zu_device *d, unsigned id, const char *uri,
                 char *err, size_t errlen)
{
  struct zu_rqueue *q = calloc (1, sizeof *q);
  char why[512];
  int r;

  if (q == NULL)
    goto nomem;
  q->r.d = d;
  q->r.id = id;
  q->efd = -1;
  pthread_mutex_init (&q->lock, NULL);
  pthread_cond_init (&q->cond, NULL);
  q->max_zones = (unsigned) (d->buf_bytes / sizeof (struct blk_zone));
  q->slots = calloc (d->depth, sizeof *q->slots);
  q->zones = calloc (q->max_zones ? q->max_zones : 1, sizeof *q->zones);
  if (q->slots == NULL || q->zones == NULL)
    goto nomem;
  for (unsigned t = 0; t < d->depth; t++) {
    q->slots[t].q = q;
    q->slots[t].tag = t;
  }

  q->c = zn_client_connect_timeout (uri, d->timeout_s * 1000u, why,
                                   sizeof why);
  if (q->c == NULL) {
    snprintf (err, errlen, "queue %u: %s: %s", id, uri, why);
    goto fail;
  }
  q->h = zn_client_open_data (q->c, &q->errlog);
  if (q->h == NULL) {
    snprintf (err, errlen, "queue %u: data connection to %s: %s", id, uri,
              zn_client_error (q->c));
    goto fail;
  }
  q->can_flush = nbd_can_flush (q->h) == 1;
  q->can_fua = nbd_can_fua (q->h) == 1;

  q->efd = eventfd (0, EFD_CLOEXEC);
  if (q->efd == -1) {
    snprintf (err, errlen, "queue %u: eventfd: %s", id, strerror (errno));
    goto fail;
  }
  /* A command per tag, the stop poll, the two socket polls, the eventfd
   * read and the tick.
   */
  if (zu_ring_open (&q->r, d->depth + 8, err, errlen) < 0)
    goto fail;
  r = pthread_create (&q->worker, NULL, worker_main, q);
  if (r != 0) {
    snprintf (err, errlen, "queue %u: pthread_create: %s", id, strerror (r));
    goto fail;
  }
  q->worker_started = true;
  if (zu_ring_start (&q->r, &rqueue_ops, err, errlen) < 0)
    goto fail;
  return q;

nomem:
  snprintf (err, errlen, "out of memory for queue %u", id);
fail:
  if (q)
    rqueue_free (q);
  return NULL;
}
