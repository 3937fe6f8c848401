/* SPDX-License-Identifier: BSD-3-Clause */
/* zonednull-fio: the data path, libnbd's asynchronous calls on the job's
 * connections, with the zone write locks of zone_write_lock=1.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <time.h>

#include "util/clock.h"
#include "util/fifo.h"
#include "internal.h"

static void
list_push (struct zf_req_list *l, struct zf_req *r)
{
  ZN_FIFO_PUSH (l->head, l->tail, r, next);
  l->count++;
}

static struct zf_req *
list_pop (struct zf_req_list *l)
{
  struct zf_req *r;

  ZN_FIFO_POP (l->head, l->tail, r, next);
  if (r)
    l->count--;
  return r;
}

static void
sent_push (struct zf_engine *e, struct zf_req *r)
{
  r->deadline_ms = e->timeout_ms ? zn_now_ms () + e->timeout_ms : -1;
  r->sent_next = NULL;
  r->sent_prev = e->sent_tail;
  if (e->sent_tail)
    e->sent_tail->sent_next = r;
  else
    e->sent_head = r;
  e->sent_tail = r;
}

static void
sent_remove (struct zf_engine *e, struct zf_req *r)
{
  if (r->sent_prev)
    r->sent_prev->sent_next = r->sent_next;
  else
    e->sent_head = r->sent_next;
  if (r->sent_next)
    r->sent_next->sent_prev = r->sent_prev;
  else
    e->sent_tail = r->sent_prev;
  r->sent_prev = r->sent_next = NULL;
}

/* ---- data path ---------------------------------------------------------- */

/* libnbd's completion callback: only records the result.  The follow-up
 * (zone lock, exact errno) needs libnbd calls, which are not allowed on
 * this handle from within its own callback.
 */
static int
on_complete (void *user_data, int *error)
{
  struct zf_req *r = user_data;

  r->error = *error;
  sent_remove (r->e, r);
  list_push (&r->e->finished, r);
  return 1;                     /* retire the command */
}

/* Sends r on its connection.  Returns 0, or a positive errno when libnbd
 * refused to queue it (then the callback never runs).
 */
static int
send_req (struct zf_engine *e, struct zf_req *r)
{
  struct io_u *io_u = r->io_u;
  struct nbd_handle *h = e->conns[r->conn].h;
  nbd_completion_callback cb = { .callback = on_complete, .user_data = r };
  int64_t cookie;

  switch (io_u->ddir) {
  case DDIR_READ:
    cookie = nbd_aio_pread (h, io_u->xfer_buf, io_u->xfer_buflen,
                            io_u->offset, cb, 0);
    break;
  case DDIR_WRITE:
    cookie = nbd_aio_pwrite (h, io_u->xfer_buf, io_u->xfer_buflen,
                             io_u->offset, cb, 0);
    break;
  case DDIR_TRIM:
    cookie = nbd_aio_trim (h, io_u->xfer_buflen, io_u->offset, cb, 0);
    break;
  default:                      /* the sync family */
    cookie = nbd_aio_flush (h, cb, 0);
    break;
  }
  if (cookie == -1) {
    int err = nbd_get_errno ();

    log_err ("%s: %s\n", ENGINE, nbd_get_error ());
    return err > 0 ? err : EIO;
  }
  sent_push (e, r);
  return 0;
}

/* The sequential zone whose write lock a write needs, or -1. */
static int64_t
locked_zone (const struct zf_engine *e, const struct io_u *io_u)
{
  uint64_t zone;

  if (e->locks == NULL || io_u->ddir != DDIR_WRITE || e->zone_bytes == 0)
    return -1;
  zone = io_u->offset / e->zone_bytes;
  if (zone < e->nr_conv || zone >= e->nr_zones)
    return -1;
  return (int64_t) zone;
}

static unsigned
pick_conn (struct zf_engine *e, const struct io_u *io_u)
{
  /* One zone, one connection: a zone's writes leave in fio's order,
   * which a server that pipelines zoned writes relies on.
   */
  if (io_u->ddir == DDIR_WRITE && e->zone_bytes)
    return (unsigned) ((io_u->offset / e->zone_bytes) % e->nconns);
  /* Flushes cover writes completed on any connection (multi-conn). */
  if (io_u->ddir != DDIR_READ)
    return 0;
  e->next_read = (e->next_read + 1) % e->nconns;
  return e->next_read;
}

static uint32_t
nbd_cmd_of (enum fio_ddir ddir)
{
  switch (ddir) {
  case DDIR_READ: return ZN_NBD_CMD_READ;
  case DDIR_WRITE: return ZN_NBD_CMD_WRITE;
  case DDIR_TRIM: return ZN_NBD_CMD_TRIM;
  default: return UINT32_MAX;   /* flush: no device errno to ask for */
  }
}

/* A trim in zonemode=zbd is a zone reset, and fio's write pointer cache
 * must follow it: fio does the reset through our reset_wp hook.  Returns
 * 1 when done (io_u->error set), 0 to send an NBD trim instead (a zone
 * without write pointer).
 */
static int
zbd_trim (struct thread_data *td, struct io_u *io_u)
{
  int ret;

  if (td->o.zone_mode != ZONE_MODE_ZBD || io_u->file->zbd_info == NULL)
    return 0;
  ret = zbd_do_io_u_trim (td, io_u);
  if (ret == 0)
    return 0;
  io_u->error = ret < 0 ? -ret : 0;
  return 1;
}

enum fio_q_status
zf_queue (struct thread_data *td, struct io_u *io_u)
{
  struct zf_engine *e = td->io_ops_data;
  struct zf_req *r = io_u->engine_data;
  int64_t zone;
  int err;

  fio_ro_check (td, io_u);
  io_u->error = 0;
  r->error = 0;
  r->holds_zone = false;
  r->nbd_cmd = nbd_cmd_of (io_u->ddir);

  if (e->lost) {
    io_u->error = ETIMEDOUT;
    return FIO_Q_COMPLETED;
  }

  if (ddir_rw (io_u->ddir) && io_u->xfer_buflen > e->max_request) {
    log_err ("%s: a %llu-byte request is over the server's maximum of %u "
             "bytes: lower bs\n", ENGINE, io_u->xfer_buflen, e->max_request);
    io_u->error = EINVAL;
    return FIO_Q_COMPLETED;
  }
  if (io_u->ddir == DDIR_TRIM && zbd_trim (td, io_u))
    return FIO_Q_COMPLETED;
  if (io_u->ddir != DDIR_READ && io_u->ddir != DDIR_WRITE
      && io_u->ddir != DDIR_TRIM && !ddir_sync (io_u->ddir)) {
    io_u->error = EINVAL;
    return FIO_Q_COMPLETED;
  }

  r->conn = pick_conn (e, io_u);
  zone = locked_zone (e, io_u);
  if (zone >= 0) {
    struct zf_zone_lock *l = &e->locks[zone];

    if (l->busy) {
      /* Sent when the zone's write in flight completes. */
      list_push (&l->waiting, r);
      return FIO_Q_QUEUED;
    }
    l->busy = true;
    r->holds_zone = true;
  }
  err = send_req (e, r);
  if (err) {
    if (r->holds_zone)
      e->locks[zone].busy = false;   /* nobody waits: it was free */
    r->holds_zone = false;
    io_u->error = err;
    return FIO_Q_COMPLETED;
  }
  return FIO_Q_QUEUED;
}

/* The exact errno the device gave, which NBD cannot carry (for example
 * ETOOMANYREFS over the open limit arrives as EINVAL).
 */
static int
device_errno (struct zf_engine *e, const struct zf_req *r)
{
  const struct zf_conn *conn = &e->conns[r->conn];
  int err = 0;

  if (r->nbd_cmd == UINT32_MAX || e->zc == NULL)
    return r->error;
  /* Each connection's error log answers for its own requests alone. */
  if (!conn->owned
      ? zn_client_data_errno (e->zc, r->nbd_cmd, r->io_u->offset,
                              r->io_u->xfer_buflen, &err) < 0
      : zn_client_errlog_errno (e->zc, conn->errlog, r->nbd_cmd,
                                 r->io_u->offset, r->io_u->xfer_buflen,
                                 &err) < 0)
    return r->error;
  return err ? err : r->error;
}

/* Passes r's zone lock to the next waiting write, sending it; writes that
 * cannot be sent complete at once with their error.
 */
static void
release_zone (struct zf_engine *e, struct zf_req *r)
{
  struct zf_zone_lock *l =
    &e->locks[r->io_u->offset / e->zone_bytes];
  struct zf_req *next;

  r->holds_zone = false;
  while ((next = list_pop (&l->waiting)) != NULL) {
    int err;

    next->holds_zone = true;
    err = send_req (e, next);
    if (err == 0)
      return;
    next->holds_zone = false;
    next->error = err;
    next->nbd_cmd = UINT32_MAX;  /* never reached the device */
    list_push (&e->ready, next);
  }
  l->busy = false;
}

/* Moves what libnbd completed to the ready list. */
static void
reap_finished (struct zf_engine *e)
{
  struct zf_req *r;

  while ((r = list_pop (&e->finished)) != NULL) {
    if (r->holds_zone)
      release_zone (e, r);
    if (r->error)
      r->error = device_errno (e, r);
    list_push (&e->ready, r);
  }
}

static unsigned
in_flight (const struct zf_engine *e)
{
  unsigned n = 0;

  for (unsigned i = 0; i < e->nconns; i++) {
    int k = nbd_aio_in_flight (e->conns[i].h);

    if (k > 0)
      n += (unsigned) k;
  }
  return n;
}

/* One poll(2) over every connection with commands in flight, then lets
 * libnbd read replies and send what is queued.  Returns the number of
 * ready descriptors, 0 on timeout, -1 on error.
 */
static int
poll_conns (struct zf_engine *e, int timeout_ms)
{
  struct pollfd fds[MAX_CONNS];
  unsigned idx[MAX_CONNS], n = 0;
  int r;

  for (unsigned i = 0; i < e->nconns; i++) {
    struct nbd_handle *h = e->conns[i].h;
    unsigned dir;
    int fd;

    if (nbd_aio_in_flight (h) <= 0)
      continue;
    fd = nbd_aio_get_fd (h);
    if (fd == -1) {
      log_err ("%s: connection %u: %s\n", ENGINE, i, nbd_get_error ());
      return -1;
    }
    dir = nbd_aio_get_direction (h);
    fds[n].fd = fd;
    fds[n].events = (dir & LIBNBD_AIO_DIRECTION_READ ? POLLIN : 0)
                    | (dir & LIBNBD_AIO_DIRECTION_WRITE ? POLLOUT : 0);
    fds[n].revents = 0;
    idx[n++] = i;
  }
  if (n == 0)
    return 0;
  r = poll (fds, n, timeout_ms);
  if (r == -1) {
    if (errno == EINTR)
      return 0;
    log_err ("%s: poll: %s\n", ENGINE, strerror (errno));
    return -1;
  }
  for (unsigned k = 0; k < n; k++) {
    struct nbd_handle *h = e->conns[idx[k]].h;
    int rc = 0;

    if (fds[k].revents & (POLLIN | POLLHUP | POLLERR))
      rc = nbd_aio_notify_read (h);
    if (rc == 0 && (fds[k].revents & POLLOUT))
      rc = nbd_aio_notify_write (h);
    if (rc == -1) {
      log_err ("%s: connection %u: %s\n", ENGINE, idx[k], nbd_get_error ());
      return -1;
    }
  }
  return r;
}

/* The oldest request on the wire is past its deadline: the server stopped
 * answering, or trickles.  Every connection is given up at once, so that
 * nothing is polled again, and the job fails with ETIMEDOUT.
 */
static int
give_up (struct zf_engine *e)
{
  const struct zf_req *r = e->sent_head;

  log_err ("%s: %s of %llu bytes at %llu: no answer from the server "
           "within server_timeout=%u s; giving up the connections\n",
           ENGINE, io_ddir_name (r->io_u->ddir),
           (unsigned long long) r->io_u->xfer_buflen,
           (unsigned long long) r->io_u->offset, e->timeout_ms / 1000);
  e->lost = true;
  zn_client_abandon (e->zc);
  return -ETIMEDOUT;
}

int
zf_getevents (struct thread_data *td, unsigned int min, unsigned int max,
              const struct timespec *t)
{
  struct zf_engine *e = td->io_ops_data;
  int64_t until = -1;

  if (e->lost)
    return -ETIMEDOUT;
  if (t)
    until = zn_now_ms () + t->tv_sec * 1000 + t->tv_nsec / 1000000;
  /* Replies already on the sockets count even when fio asks for no more
   * than are ready (min = 0 with iodepth_batch_complete_min=0): without a
   * look at the sockets such calls would never see a completion.  When
   * more are needed, the loop's poll looks anyway: a poll without
   * waiting first would cost every QD1 write a system call for nothing.
   */
  if (e->ready.count >= min && poll_conns (e, 0) < 0)
    return -1;
  for (;;) {
    int64_t wake = until;
    int timeout = -1;

    reap_finished (e);
    if (e->ready.count >= min || in_flight (e) == 0)
      break;
    if (e->sent_head && e->sent_head->deadline_ms >= 0) {
      if (e->sent_head->deadline_ms <= zn_now_ms ())
        return give_up (e);
      if (wake < 0 || e->sent_head->deadline_ms < wake)
        wake = e->sent_head->deadline_ms;
    }
    if (wake >= 0) {
      int64_t left = wake - zn_now_ms ();

      if (left <= 0 && wake == until)
        break;
      timeout = left <= 0 ? 0 : left > INT_MAX ? INT_MAX : (int) left;
    }
    if (poll_conns (e, timeout) < 0)
      return -1;
  }
  return (int) (e->ready.count < max ? e->ready.count : max);
}

/* fio asks for events 0 .. n-1 in order after getevents() returned n. */
struct io_u *
zf_event (struct thread_data *td, int event)
{
  struct zf_engine *e = td->io_ops_data;
  struct zf_req *r = list_pop (&e->ready);

  (void) event;
  if (r == NULL)
    return NULL;
  r->io_u->error = r->error;
  return r->io_u;
}
