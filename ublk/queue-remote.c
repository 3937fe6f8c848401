/* SPDX-License-Identifier: BSD-3-Clause */
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
 * them, and abandons the worker's current call) loses the server.
 * Without --reconnect that is final: every request from then on, and
 * every one still waiting, fails with EIO.  With it the queue holds its
 * requests, and the worker connects again until the window closes; the
 * server must answer the generation the device had, or its data is not
 * this device's and the loss is final.  Then the held requests go again,
 * except a write that may have landed: a write to a sequential zone is
 * resent only where the zone's write pointer is still at its start (one
 * at or past its end landed), by the worker, in sector order, as are the
 * writes to sequential zones until those are done; a zone append that
 * may have landed fails with EIO, since where it landed is unknown.
 * Reads, flushes, writes to conventional zones (the same bytes at the
 * same place) and zone management (the same end state) go again as they
 * are.  Each loss and its outcome are reported on stderr and in syslog.
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
#include "util/fifo.h"
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
  S_HELD,                       /* waiting for the server to be back */
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
  J_WRITE,                      /* a write to a sequential zone, resent */
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
  bool maybe_sent;              /* held after it was sent: it may have run */
  bool errno_held;              /* held while its errno was asked */
  struct rslot *next;
};

struct zu_rqueue {
  struct zu_ring r;             /* first: ring.c's callbacks get &q->r */
  struct rslot *slots;
  const char *uri;
  /* Reconnection (--reconnect), the queue thread's side. */
  bool reconnecting;            /* requests are held */
  struct timespec lost_at;
  unsigned resuming;            /* J_WRITEs with the worker */
  uint16_t conn_gen;            /* tags the data socket's polls */
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
  bool want_reconnect;          /* under lock: queue -> worker */
  int reconnected;              /* under lock: 1 done, -1 given up */
  struct nbd_handle *new_h;     /* under lock: ... the new connection */
  uint64_t new_errlog;
  char reconnect_why[384];
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

static void lose (struct zu_rqueue *q, const char *why);
static void hold (struct rslot *s, bool maybe_sent);
static void resume (struct zu_rqueue *q, struct nbd_handle *h,
                    uint64_t errlog);
static void give_up (struct zu_rqueue *q, const char *why);

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

/* Whether sector lies in a sequential zone. */
static bool
sequential (struct zu_rqueue *q, uint64_t sector)
{
  const struct zn_geometry *geo = q->r.d->geo;

  return sector / geo->zone_sectors >= geo->nr_conv;
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

/* Where the write pointer of the zone holding sector is: 0, or -errno
 * (-EIO for a READONLY or OFFLINE zone, which has none).
 */
static int
zone_wp (struct zu_rqueue *q, uint64_t sector, uint64_t *wp)
{
  uint64_t zs = q->r.d->geo->zone_sectors;
  struct zn_zone z;
  int r = zn_client_report (q->c, sector - sector % zs, &z, 1);

  if (r < 0)
    return r;
  if (r != 1 || z.wp == UINT64_MAX)
    return -EIO;
  *wp = z.wp;
  return 0;
}

/* A held write to a sequential zone, after a reconnection.  If it was
 * sent before, the zone's write pointer says whether it ran: at or past
 * its end, it did (nothing else can have moved the pointer past it,
 * since the host sends a zone's writes in order); at its start, it did
 * not, and it goes again; elsewhere it may have run in part, and only
 * EIO is honest.  A resent write that fails may have lost the race with
 * its first copy, still on its way on the old connection: the pointer
 * says so again.
 */
static int
resend_write (struct zu_rqueue *q, struct rslot *s)
{
  uint64_t end = s->sector + s->nr_sectors, wp;
  size_t bytes = (size_t) s->nr_sectors << ZN_SECTOR_SHIFT;
  uint64_t offset = s->sector << ZN_SECTOR_SHIFT;
  int r;

  if (s->maybe_sent) {
    r = zone_wp (q, s->sector, &wp);
    if (r < 0)
      return r;
    if (wp >= end)
      return 0;
    if (wp != s->sector) {
      fprintf (stderr, "zonednull-ublk: /dev/ublkb%" PRIu32 ": queue %u: "
               "the write of sectors %" PRIu64 "+%" PRIu64 " sent before "
               "the server was lost is not resent: its zone's write "
               "pointer is at %" PRIu64 ", so it may have landed in part; "
               "it fails with EIO\n", q->r.d->dev_id, q->r.id, s->sector,
               s->nr_sectors, wp);
      return -EIO;
    }
  }
  r = s->fua ? zn_client_pwrite_fua (q->c, s->buf, bytes, offset)
    : zn_client_pwrite (q->c, s->buf, bytes, offset);
  if (r < 0 && r != -ETIMEDOUT && s->maybe_sent
      && zone_wp (q, s->sector, &wp) == 0 && wp >= end)
    return 0;
  return r;
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
  case J_WRITE:
    s->job_result = resend_write (q, s);
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
  if (s->job_result == -ETIMEDOUT && !q->r.d->reconnect_s)
    lost (q, zn_client_error (c));
  else if (s->job_result == -EPROTO)
    fprintf (stderr, "zonednull-ublk: /dev/ublkb%" PRIu32 ": queue %u: %s\n",
             q->r.d->dev_id, q->r.id, zn_client_error (c));
}

/* Sleeps up to ms, or until the queue stops; whether it stops. */
static bool
worker_nap (struct zu_rqueue *q, long ms)
{
  struct timespec until;
  bool stop;

  clock_gettime (CLOCK_REALTIME, &until);
  until.tv_sec += ms / 1000;
  until.tv_nsec += (ms % 1000) * 1000000L;
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock (&q->lock);
  while (!q->worker_stop
         && pthread_cond_timedwait (&q->cond, &q->lock, &until) == 0)
    ;
  stop = q->worker_stop;
  pthread_mutex_unlock (&q->lock);
  return stop;
}

/* The worker's side of a loss: gives the old client up, then connects
 * again, once a second, until the window closes.  A server that answers
 * with another generation serves another device: that ends it at once.
 * The outcome goes to the queue (reconnected, new_h).
 */
static void
reconnect (struct zu_rqueue *q)
{
  struct zu_device *d = q->r.d;
  struct timespec now;
  char why[384] = "";
  struct nbd_handle *h = NULL;
  uint64_t errlog = 0;
  bool final = false;
  double waited;

  if (q->c) {
    zn_client_abandon (q->c);
    zn_client_close (q->c);
    q->c = NULL;
  }
  for (;;) {
    struct zn_client *c;
    uint64_t gen = 0;
    long left_ms;
    int r;

    clock_gettime (CLOCK_MONOTONIC, &now);
    waited = age (&q->lost_at, &now);
    left_ms = (long) ((d->reconnect_s - waited) * 1000);
    if (left_ms <= 0)
      break;
    c = zn_client_connect_timeout (q->uri, left_ms < d->timeout_s * 1000L
                                   ? (unsigned) left_ms : d->timeout_s * 1000u,
                                   why, sizeof why);
    if (c) {
      r = zn_client_generation (c, &gen);
      if (r < 0) {
        snprintf (why, sizeof why, "%s", zn_client_error (c));
        final = r != -ETIMEDOUT;
      }
      else if (gen != d->generation) {
        snprintf (why, sizeof why, "the server now serves another device "
                  "(generation %016" PRIx64 ", was %016" PRIx64 "): what "
                  "was written to this one is not there", gen,
                  d->generation);
        final = true;
      }
      else if ((h = zn_client_open_data (c, &errlog)) == NULL)
        snprintf (why, sizeof why, "data connection: %s",
                  zn_client_error (c));
      if (h) {
        q->c = c;
        break;
      }
      zn_client_abandon (c);
      zn_client_close (c);
      if (final)
        break;
    }
    if (worker_nap (q, 1000))
      break;
  }
  pthread_mutex_lock (&q->lock);
  if (h) {
    q->reconnected = 1;
    q->new_h = h;
    q->new_errlog = errlog;
  }
  else {
    q->reconnected = -1;
    snprintf (q->reconnect_why, sizeof q->reconnect_why, "%s",
              why[0] ? why : "the queue stopped");
  }
  pthread_mutex_unlock (&q->lock);
}

static void *
worker_main (void *arg)
{
  struct zu_rqueue *q = arg;

  pthread_mutex_lock (&q->lock);
  for (;;) {
    struct rslot *s;

    while (q->jobs == NULL && !q->worker_stop && !q->want_reconnect)
      pthread_cond_wait (&q->cond, &q->lock);
    if (q->worker_stop && (q->jobs == NULL || q->want_reconnect))
      break;
    if (q->want_reconnect) {
      q->want_reconnect = false;
      pthread_mutex_unlock (&q->lock);
      reconnect (q);
      pthread_mutex_lock (&q->lock);
      eventfd_write (q->efd, 1);
      continue;
    }
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
    /* Still under the lock: the loop's test of the job list and its wait
     * must be one step, or a job posted between them waits for the next.
     */
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
  case J_WRITE:
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
  struct nbd_handle *h;
  struct rslot *s;
  uint64_t errlog;
  char why[sizeof q->reconnect_why];
  int outcome;

  pthread_mutex_lock (&q->lock);
  s = q->results;
  q->results = NULL;
  outcome = q->reconnected;
  q->reconnected = 0;
  h = q->new_h;
  q->new_h = NULL;
  errlog = q->new_errlog;
  memcpy (why, q->reconnect_why, sizeof why);
  pthread_mutex_unlock (&q->lock);
  while (s) {
    struct rslot *next = s->next;

    if (s->state == S_JOB && s->job == J_WRITE)
      q->resuming--;
    if (s->state == S_JOB && s->job_result == -ETIMEDOUT
        && q->r.d->reconnect_s && !atomic_load (&q->r.d->dead)) {
      lose (q, "the server did not answer a control request in time");
      hold (s, true);
    }
    else if (s->state == S_JOB)
      finish (q, s, job_result (q, s));
    s = next;
  }
  if (outcome == 1)
    resume (q, h, errlog);
  else if (outcome == -1)
    give_up (q, why);
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
    else if (q->r.d->reconnect_s && !atomic_load (&q->r.d->dead)
             && (q->reconnecting || conn_gone (s->nbd_err))) {
      lose (q, strerror (s->nbd_err));
      hold (s, true);
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
    lose (q, nbd_get_error () && *nbd_get_error () ? nbd_get_error ()
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
    zu_ring_poll (&q->r, fd, POLLIN, ZU_UD (UD_NBD_IN, q->conn_gen));
    q->in_armed = true;
  }
  if (!q->out_armed && (dir & LIBNBD_AIO_DIRECTION_WRITE)) {
    zu_ring_poll (&q->r, fd, POLLOUT, ZU_UD (UD_NBD_OUT, q->conn_gen));
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
    if (q->reconnecting)
      hold (s, false);
    else
      finish (q, s, -EIO);
  }
}

/* ---- serving a request ---------------------------------------------------- */

static void dispatch (struct zu_rqueue *q, struct rslot *s);

static void
start_request (struct zu_rqueue *q, unsigned tag)
{
  struct rslot *s = &q->slots[tag];
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

  if (atomic_load (&q->r.d->dead) || (q->h_dead && !q->reconnecting)) {
    finish (q, s, -EIO);
    return;
  }
  if (bytes > q->r.d->buf_bytes || ensure_buf (q, s) < 0) {
    finish (q, s, -EIO);
    return;
  }
  if (q->reconnecting) {
    if ((op == ZU_OP_WRITE || op == ZU_OP_ZONE_APPEND)
        && zu_ring_copy_in (&q->r, s->tag, s->buf, bytes) < 0) {
      finish (q, s, -EIO);
      return;
    }
    hold (s, false);
    return;
  }
  dispatch (q, s);
}

/* Sends the request s (its data copied in again for a write). */
static void
dispatch (struct zu_rqueue *q, struct rslot *s)
{
  const struct zn_geometry *geo = q->r.d->geo;
  unsigned op = s->iod.op_flags & 0xff;
  size_t bytes = (size_t) zu_data_bytes (&s->iod);

  if (op == ZU_OP_WRITE && q->resuming && sequential (q, s->sector)) {
    if (zu_ring_copy_in (&q->r, s->tag, s->buf, bytes) < 0) {
      finish (q, s, -EIO);
      return;
    }
    s->maybe_sent = false;
    q->resuming++;
    post_job (q, s, J_WRITE);
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

/* ---- reconnection ----------------------------------------------------------- */

static void
hold (struct rslot *s, bool maybe_sent)
{
  s->errno_held = s->state == S_JOB && s->job == J_ERRNO;
  s->maybe_sent = maybe_sent;
  s->state = S_HELD;
}

/* The server is gone (or too slow to wait for): with --reconnect, hold
 * every request and let the worker connect again; without, the device
 * is lost.
 */
static void
lose (struct zu_rqueue *q, const char *why)
{
  struct rslot *queued, *current;

  if (!q->r.d->reconnect_s || atomic_load (&q->r.d->dead)) {
    lost (q, why);
    return;
  }
  if (q->reconnecting)
    return;
  q->reconnecting = true;
  clock_gettime (CLOCK_MONOTONIC, &q->lost_at);
  fprintf (stderr, "zonednull-ublk: /dev/ublkb%" PRIu32 ": queue %u lost "
           "the server (%s); its requests wait while it reconnects, for up "
           "to %u s\n", q->r.d->dev_id, q->r.id, why, q->r.d->reconnect_s);
  syslog (LOG_WARNING, "/dev/ublkb%" PRIu32 ": queue %u lost the server "
          "(%s); reconnecting for up to %u s", q->r.d->dev_id, q->r.id, why,
          q->r.d->reconnect_s);
  /* libnbd sees the end of the stream and retires every command in
   * flight (nbd_done; take_replies holds them).
   */
  if (!q->h_dead) {
    int fd = nbd_aio_get_fd (q->h);

    q->h_dead = true;
    if (fd != -1)
      shutdown (fd, SHUT_RDWR);
    nbd_aio_notify_read (q->h);
  }
  /* What the worker has not started was never sent; what it runs may
   * have been: its answer is dropped, whenever it comes.
   */
  pthread_mutex_lock (&q->lock);
  queued = q->jobs;
  q->jobs = q->jobs_tail = NULL;
  current = q->current;
  if (current && current->state == S_JOB)
    current->abandoned = true;
  q->want_reconnect = true;
  pthread_cond_signal (&q->cond);
  pthread_mutex_unlock (&q->lock);
  if (current && current->state == S_JOB)
    hold (current, true);
  while (queued) {
    struct rslot *next = queued->next;

    if (queued->state == S_JOB)
      hold (queued, false);
    queued = next;
  }
  q->resuming = 0;
}

static int
by_sector (const void *a, const void *b)
{
  const struct rslot *x = *(struct rslot *const *) a;
  const struct rslot *y = *(struct rslot *const *) b;

  return x->sector < y->sector ? -1 : x->sector > y->sector;
}

/* The same device is back on h: the held requests go again, by the
 * rules at the top of this file.
 */
static void
resume (struct zu_rqueue *q, struct nbd_handle *h, uint64_t errlog)
{
  struct rslot **writes = NULL;
  unsigned nr_writes = 0, nr_held = 0;
  struct timespec now;

  if (atomic_load (&q->r.d->dead) || !q->reconnecting) {
    nbd_close (h);
    return;
  }
  nbd_close (q->h);
  q->h = h;
  q->errlog = errlog;
  q->h_dead = false;
  q->in_armed = q->out_armed = false;
  q->conn_gen++;
  q->reconnecting = false;
  clock_gettime (CLOCK_MONOTONIC, &now);
  writes = malloc (q->r.d->depth * sizeof *writes);
  for (unsigned t = 0; t < q->r.d->depth; t++) {
    struct rslot *s = &q->slots[t];
    unsigned op = s->iod.op_flags & 0xff;

    if (s->state != S_HELD)
      continue;
    nr_held++;
    if (s->errno_held) {
      finish (q, s, zu_block_errno (-s->nbd_err));
      continue;
    }
    if (op == ZU_OP_WRITE && sequential (q, s->sector) && writes)
      writes[nr_writes++] = s;   /* its data is in s->buf */
    else if (op == ZU_OP_WRITE && sequential (q, s->sector))
      finish (q, s, -EIO);       /* no memory to put them in order */
    else if (op == ZU_OP_ZONE_APPEND && s->maybe_sent) {
      fprintf (stderr, "zonednull-ublk: /dev/ublkb%" PRIu32 ": queue %u: "
               "a zone append to sector %" PRIu64 " sent before the "
               "server was lost fails with EIO: it may have landed, and "
               "where is unknown\n", q->r.d->dev_id, q->r.id, s->sector);
      finish (q, s, -EIO);
    }
    else
      dispatch (q, s);
  }
  /* In sector order, one at a time, so that a zone's writes land as the
   * host sent them.
   */
  qsort (writes, nr_writes, sizeof *writes, by_sector);
  for (unsigned i = 0; i < nr_writes; i++) {
    q->resuming++;
    post_job (q, writes[i], J_WRITE);
  }
  free (writes);
  fprintf (stderr, "zonednull-ublk: /dev/ublkb%" PRIu32 ": queue %u "
           "reconnected to the same device after %.1f s; %u held "
           "request%s go again\n", q->r.d->dev_id, q->r.id,
           age (&q->lost_at, &now), nr_held, nr_held == 1 ? "" : "s");
  syslog (LOG_NOTICE, "/dev/ublkb%" PRIu32 ": queue %u reconnected after "
          "%.1f s", q->r.d->dev_id, q->r.id, age (&q->lost_at, &now));
}

/* The window closed, or the server serves another device: the loss is
 * final, as without --reconnect.
 */
static void
give_up (struct zu_rqueue *q, const char *why)
{
  if (!q->reconnecting)
    return;
  q->reconnecting = false;
  lost (q, why);
  for (unsigned t = 0; t < q->r.d->depth; t++)
    if (q->slots[t].state == S_HELD)
      finish (q, &q->slots[t], -EIO);
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
  if (nbd_late && !q->h_dead && q->r.d->reconnect_s
      && !atomic_load (&q->r.d->dead))
    lose (q, "the server did not answer a data request in time");
  else if (nbd_late && !q->h_dead) {
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
  if (job_late && q->r.d->reconnect_s && !atomic_load (&q->r.d->dead))
    lose (q, "the server did not answer a control request in time");
  else if (job_late) {
    lost (q, "the server did not answer a control request in time");
    abandon_jobs (q);
  }
  /* The worker bounds its attempts by the window; this bounds a worker
   * stuck in a call that never returns.
   */
  if (q->reconnecting
      && age (&q->lost_at, &now) > q->r.d->reconnect_s + q->r.d->timeout_s + 5.0)
    give_up (q, "the control worker did not come back from the server");
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
    if (ZU_UD_TAG (cqe->user_data) != q->conn_gen)
      break;                    /* a poll of a connection given up */
    q->in_armed = false;
    if (!q->h_dead) {
      nbd_aio_notify_read (q->h);
      check_conn (q);
    }
    break;
  case UD_NBD_OUT:
    if (ZU_UD_TAG (cqe->user_data) != q->conn_gen)
      break;
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
  if (q->new_h)
    nbd_close (q->new_h);
  q->new_h = NULL;
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
  q->uri = uri;
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
