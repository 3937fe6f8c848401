/* zonednull-server: the null_blk zoned device over NBD from one libev
 * event loop.
 *
 * Each connection is a byte stream fed to a protocol session
 * (session.c); all replies produced by one read are sent with one write,
 * so a client that pipelines many requests costs one system call per
 * batch in each direction instead of a thread per request.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <netdb.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <ev.h>

#include "zonednull/control.h"
#include "zonednull/queue.h"
#include "zonednull/zoned.h"
#include "params.h"
#include "pidfile.h"
#include "session.h"
#include "tls.h"

#define READ_CHUNK (256 * 1024)
/* A write request carries at most 32 MiB (the advertised maximum). */
#define MAX_INBUF (33 * 1024 * 1024)

/* Command line settings. */
static const char *unix_path;           /* -U: listen on this socket */
static const char *ipaddr = "127.0.0.1"; /* -i: TCP address */
static const char *port = "10809";      /* -p: TCP port */
static const char *pidfile;             /* -P: written once listening */
static bool foreground;                 /* -f: do not daemonize */
static bool verbose;                    /* -v: log connections */
static bool exit_with_parent;           /* stop when the parent exits */
static uint64_t busy_poll_ns = 20000;   /* --busy-poll: awake after input */
static double handshake_timeout = 60.;  /* --timeout: seconds, 0 for none */
static struct tls_settings tls_settings; /* --tls, --tls-psk, ... */

static struct served served;
static struct zn_queue_config qcfg;
static int listen_fd = -1;
static ev_io listen_watcher;

struct conn {
  int fd;
  ev_io rio, wio;
  struct session *session;
  struct tls_conn *tls;         /* after STARTTLS */
  bool handshaking;             /* the TLS handshake is under way */
  unsigned char *in;
  size_t in_len, in_cap;
  bool closing;                 /* take no more requests; once every
                                   admitted one is answered and the
                                   output sent, close */
  bool eof;                     /* the client sends no more */
  bool gone;                    /* nor takes replies: they are dropped */
  ev_timer handshake;           /* --timeout, until transmission */
  /* Its hardware queue, once a device export was chosen. */
  struct served_device *d;
  unsigned queue;
  unsigned held;                /* its requests in the completion ring */
  bool waiting;                 /* in its pool's FIFO for a tag */
  struct conn *wait_next;
  bool throttled;               /* waiting for the mbps budget */
  struct conn *throttle_next;
  struct pending *pending;      /* its parked writes */
  size_t queued;                /* its output, as last counted */
  bool out_blocked;             /* a request waits for room for its reply */
  struct conn *blocked_next;
  struct conn *next, *prev;
};

static struct conn *conns;      /* every open connection, for shutdown */
static unsigned nr_conns;
static unsigned long nr_conns_total;

/* ---- the output budget -----------------------------------------------------
 *
 * Replies wait in memory until their client reads them, so a client that
 * sends reads and never reads the replies would hold memory without
 * bound.  Each connection may hold SESSION_OUTPUT_LIMIT, and all of them
 * together OUTPUT_TOTAL_LIMIT, as each takes requests: a request whose
 * reply does not fit waits, and its connection stops being read, until
 * its own replies are read or others' are.  Past the total, a connection
 * gets no more than its fair share of it, so those that do not read
 * cannot take the room of those that do; and a reply that leaves a
 * connection at most OUTPUT_GUARANTEED queued is always taken, so that a
 * client that reads its replies is served whatever the others hold.  The
 * output held is thus at most OUTPUT_TOTAL_LIMIT plus OUTPUT_GUARANTEED
 * per connection.
 */
#define OUTPUT_TOTAL_LIMIT ((size_t) 256 << 20)
#define OUTPUT_GUARANTEED (((size_t) 1 << 20) + 4096)  /* 1 MiB and headers */

static size_t output_total;     /* sum of the connections' queued */
static bool output_freed;       /* output_total went down since the retry */
static struct conn *blocked_head, *blocked_tail;  /* FIFO of out_blocked */

/* Counts what the connection's session holds now. */
static void
account (struct conn *c)
{
  size_t now = session_output (c->session)->len;

  if (now < c->queued)
    output_freed = true;
  output_total = output_total - c->queued + now;
  c->queued = now;
}

static void
blocked_remove (struct conn *c)
{
  struct conn **pp, *prev = NULL;

  if (!c->out_blocked)
    return;
  for (pp = &blocked_head; *pp != c; pp = &(*pp)->blocked_next)
    prev = *pp;
  *pp = c->blocked_next;
  if (blocked_tail == c)
    blocked_tail = prev;
  c->out_blocked = false;
}

/* served.room: may the connection take a request of this reply bound? */
static bool
room (void *owner, size_t queued, size_t reply)
{
  struct conn *c = owner;
  size_t mine = queued + reply, others = output_total - c->queued;
  bool ok;

  if (mine <= OUTPUT_GUARANTEED)
    ok = true;
  else if (others + mine > OUTPUT_TOTAL_LIMIT)
    ok = false;
  else if (queued == 0)
    ok = true;                  /* one request of any size at a time */
  else
    ok = mine <= SESSION_OUTPUT_LIMIT && mine <= OUTPUT_TOTAL_LIMIT / nr_conns;
  if (!ok && !c->out_blocked) {
    c->out_blocked = true;
    c->blocked_next = NULL;
    if (blocked_tail)
      blocked_tail->blocked_next = c;
    else
      blocked_head = c;
    blocked_tail = c;
  }
  return ok;
}

/* ---- tags and timed completion --------------------------------------------
 *
 * The tag sets, pools and counters are the plugin's (lib/queue.c); what
 * the plugin does by sleeping in a worker thread is done here by holding
 * the reply.  A request takes a tag before it is applied; with irqmode=2
 * its reply is released, and the tag freed, completion_nsec after the tag
 * was taken.  A connection whose next request finds no tag waits in its
 * pool's FIFO and stops reading requests until a tag is freed.
 *
 * completion_nsec is the same for every request, so completions come due
 * in the order tags were taken: one ring, and one timerfd armed for its
 * head (libev's timers have millisecond resolution under epoll, too
 * coarse for 10 us completions).
 */
static struct zn_tagset **tagsets;
static unsigned nr_tagsets;

struct wait_fifo {
  struct conn *head, *tail;
};
static struct wait_fifo *waits;  /* tagset t, pool p: waits[t * pools + p] */

struct completion {
  uint64_t due;                 /* CLOCK_MONOTONIC ns */
  struct conn *c;               /* NULL once the connection closed */
  struct zn_queues *qs;
  struct zn_request rq;
};
static struct completion *ring;
static unsigned ring_head, ring_count, ring_cap;
static int timer_fd = -1;
static ev_io timer_watcher;

static uint64_t
ns_of (struct timespec ts)
{
  return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static uint64_t
now_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ns_of (ts);
}

static void
arm_timer (void)
{
  struct itimerspec its = { { 0, 0 }, { 0, 0 } };

  if (ring_count > 0) {
    uint64_t due = ring[ring_head].due;

    its.it_value.tv_sec = (time_t) (due / 1000000000u);
    its.it_value.tv_nsec = (long) (due % 1000000000u);
    if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
      its.it_value.tv_nsec = 1;
  }
  timerfd_settime (timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* A completion never comes due before the one queued ahead of it: a
 * parked write that waited past its own due time completes at once.
 */
static void
ring_push (struct conn *c, const struct zn_request *rq)
{
  uint64_t due = ns_of (zn_request_due (c->d->qs, rq));

  if (ring_count == ring_cap) {
    unsigned cap = ring_cap ? ring_cap * 2 : 256;
    struct completion *p = malloc (cap * sizeof *p);

    if (p == NULL) {
      fputs ("zonednull-server: out of memory\n", stderr);
      abort ();
    }
    for (unsigned i = 0; i < ring_count; i++)
      p[i] = ring[(ring_head + i) % ring_cap];
    free (ring);
    ring = p;
    ring_head = 0;
    ring_cap = cap;
  }
  if (ring_count > 0 && ring[(ring_head + ring_count - 1) % ring_cap].due > due)
    due = ring[(ring_head + ring_count - 1) % ring_cap].due;
  ring[(ring_head + ring_count++) % ring_cap] = (struct completion) {
    .due = due, .c = c, .qs = c->d->qs, .rq = *rq,
  };
  c->held++;
  if (ring_count == 1)
    arm_timer ();
}

static struct wait_fifo *
fifo_of (const struct conn *c)
{
  unsigned pools = qcfg.shared_tag_bitmap ? 1 : qcfg.submit_queues;
  unsigned set = qcfg.shared_tags ? 0 : (unsigned) (c->d - served.devices);

  return &waits[set * pools + zn_queues_pool (c->d->qs, c->queue)];
}

static void
wait_add (struct conn *c)
{
  struct wait_fifo *w = fifo_of (c);

  c->waiting = true;
  c->wait_next = NULL;
  if (w->tail)
    w->tail->wait_next = c;
  else
    w->head = c;
  w->tail = c;
}

static void
wait_remove (struct conn *c)
{
  struct wait_fifo *w;
  struct conn **pp, *prev = NULL;

  if (!c->waiting)
    return;
  w = fifo_of (c);
  for (pp = &w->head; *pp != c; pp = &(*pp)->wait_next)
    prev = *pp;
  *pp = c->wait_next;
  if (w->tail == c)
    w->tail = prev;
  c->waiting = false;
}

/* mbps: connections over their device's budget retry at its next tick
 * (null_blk's 20 ms ticks: libev's timer resolution is enough).
 */
static struct conn *throttled;
static ev_timer throttle_timer;
static uint64_t throttle_due;   /* when throttle_timer fires, ns */

static void
throttle_add (struct conn *c, uint64_t until)
{
  struct ev_loop *loop = ev_default_loop (0);
  uint64_t now = now_ns ();

  c->throttled = true;
  c->throttle_next = throttled;
  throttled = c;
  if (ev_is_active (&throttle_timer) && throttle_due <= until)
    return;
  ev_timer_stop (loop, &throttle_timer);
  ev_timer_set (&throttle_timer, until > now ? (double) (until - now) / 1e9 : 0.,
                0.);
  ev_timer_start (loop, &throttle_timer);
  throttle_due = until;
}

static void
throttle_remove (struct conn *c)
{
  struct conn **pp;

  if (!c->throttled)
    return;
  for (pp = &throttled; *pp != c; pp = &(*pp)->throttle_next)
    ;
  *pp = c->throttle_next;
  c->throttled = false;
}

/* pipeline_zoned_writes: a write ahead of its zone's write pointer is
 * parked, holding its tag, while its connection goes on with the requests
 * behind it (NBD replies may come in any order); it is applied once the
 * write pointer reaches it, or failed when the wait fails or exceeds
 * pipeline_wait_ms.
 */
struct pending {
  uint64_t id;                  /* the session's */
  struct zn_pipeline_wait wait;
  uint64_t deadline;            /* CLOCK_MONOTONIC ns */
  struct zn_request rq;         /* its tag */
  struct pending *next;
};
static unsigned nr_pending;
static uint64_t pipeline_wait_ns;
static ev_timer pipeline_timer;

static void pipeline_retry (struct ev_loop *loop);

static void
pending_add (struct conn *c, uint64_t id, const struct zn_pipeline_wait *w,
             const struct zn_request *rq)
{
  struct pending *p = malloc (sizeof *p);

  if (p == NULL) {
    fputs ("zonednull-server: out of memory\n", stderr);
    abort ();
  }
  *p = (struct pending) {
    .id = id, .wait = *w, .deadline = now_ns () + pipeline_wait_ns,
    .rq = *rq, .next = c->pending,
  };
  c->pending = p;
  nr_pending++;
}

/* A connection feeds a hardware queue once it chose a device export. */
static void
attach (struct conn *c)
{
  bool control;
  const struct served_device *d;

  if (c->d)
    return;
  d = session_device (c->session, &control);
  if (d == NULL || control)
    return;
  c->d = &served.devices[d - served.devices];
  c->queue = zn_queues_attach (c->d->qs);
}

/* served.admit: the next data request of the connection may start once
 * the mbps budget allows and it gets a tag; a pipelined write ahead of
 * its write pointer is then parked.
 */
static int
admit (void *owner, struct session *s, const struct data_request *drq)
{
  struct conn *c = owner;
  struct zn_request rq;
  struct zn_pipeline_wait w;
  uint64_t until;
  int v = 0;

  (void) s;
  attach (c);
  if (c->throttled)
    return ADMIT_LATER;
  if (drq->bytes && (until = zn_queue_throttled_until (c->d->qs)) != 0) {
    throttle_add (c, until);
    return ADMIT_LATER;
  }
  if (!zn_queue_try_begin (c->d->qs, c->queue, !c->waiting, &rq)) {
    if (!c->waiting)
      wait_add (c);
    return ADMIT_LATER;
  }
  wait_remove (c);
  zn_queue_charge (c->d->qs, drq->bytes);
  if (drq->write)
    v = zn_pipeline_begin (c->d->dev, drq->offset >> ZN_SECTOR_SHIFT,
                           drq->count >> ZN_SECTOR_SHIFT, &w);
  if (v == 1) {
    pending_add (c, drq->id, &w, &rq);
    return ADMIT_PARK;
  }
  if (served.delayed)
    ring_push (c, &rq);
  else
    zn_queue_complete (c->d->qs, &rq);
  return v < 0 ? -v : 0;
}

static void
conn_free (struct ev_loop *loop, struct conn *c)
{
  ev_io_stop (loop, &c->rio);
  ev_io_stop (loop, &c->wio);
  ev_timer_stop (loop, &c->handshake);
  if (session_tls_refused (c->session) > 0)
    fprintf (stderr, "zonednull-server: connection %d: %u options refused "
             "before NBD_OPT_STARTTLS (--tls=require)\n", c->fd,
             session_tls_refused (c->session));
  tls_conn_free (c->tls);
  close (c->fd);
  if (c->prev)
    c->prev->next = c->next;
  else
    conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  /* Its requests stay in flight, holding their tags, until they are due,
   * as a request of a vanished submitter would in the kernel.
   */
  for (unsigned i = 0; c->held > 0 && i < ring_count; i++) {
    struct completion *e = &ring[(ring_head + i) % ring_cap];

    if (e->c == c) {
      e->c = NULL;
      c->held--;
    }
  }
  wait_remove (c);
  throttle_remove (c);
  blocked_remove (c);
  output_total -= c->queued;
  output_freed = true;
  nr_conns--;
  /* Its parked writes will never be answered; their tags are free. */
  while (c->pending) {
    struct pending *p = c->pending;

    c->pending = p->next;
    zn_pipeline_end (c->d->dev, &p->wait, -EIO);
    zn_queue_complete (c->d->qs, &p->rq);
    free (p);
    nr_pending--;
  }
  if (c->d)
    zn_queues_detach (c->d->qs, c->queue);
  if (verbose)
    fprintf (stderr, "zonednull-server: connection %d closed\n", c->fd);
  session_free (c->session);
  free (c->in);
  free (c);
}

/* Whether the client is still owed something: parked writes, held
 * replies, received requests that wait for a tag, the mbps budget or
 * room for their replies, or replies not sent yet.  A client may end its
 * input right after its last requests (with NBD_CMD_DISC or without, or
 * with a shutdown of its side of the socket while it reads the replies);
 * they are carried out and answered all the same, as nbdkit's threads
 * finish theirs.
 */
static bool
conn_outstanding (const struct conn *c)
{
  return c->pending || c->held > 0 || session_ready (c->session) > 0
         || (c->d && c->in_len > 0 && !c->closing);
}

/* The client can take no more replies.  Requests not started yet are
 * dropped, as nbdkit stops reading a dead connection; those in flight
 * (parked writes, held replies) still complete, their replies dropped.
 * False when the connection was freed.
 */
static bool
conn_lost (struct ev_loop *loop, struct conn *c)
{
  c->gone = c->eof = c->closing = true;
  c->in_len = 0;
  wait_remove (c);
  throttle_remove (c);
  blocked_remove (c);
  if (c->pending || c->held > 0)
    return true;
  conn_free (loop, c);
  return false;
}

/* After the client's end of input: no more requests once nothing waits. */
static void
conn_check_end (struct conn *c)
{
  if (c->eof && !c->waiting && !c->throttled && !c->out_blocked)
    c->closing = true;
}

/* A failed TLS session is logged with its reason. */
static void
conn_tls_log (const struct conn *c)
{
  fprintf (stderr, "zonednull-server: connection %d: %s\n", c->fd,
           tls_error (c->tls));
}

/* A failed TLS session is logged with its reason, the client dropped. */
static void
conn_tls_failed (struct ev_loop *loop, struct conn *c)
{
  conn_tls_log (c);
  conn_free (loop, c);
}

/* Sends what the session may send; false when the connection is gone. */
static bool
conn_send (struct ev_loop *loop, struct conn *c)
{
  size_t ready = session_ready (c->session), sent = 0;
  const unsigned char *data = session_output (c->session)->data;

  while (sent < ready && !c->gone) {
    ssize_t n = c->tls ? tls_send (c->tls, data + sent, ready - sent)
                       : send (c->fd, data + sent, ready - sent, MSG_NOSIGNAL);

    if (n > 0) {
      sent += (size_t) n;
      continue;
    }
    if (n == -1 && errno == EINTR)
      continue;
    if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
      break;
    if (n == -1 && errno == EPROTO && c->tls)
      conn_tls_log (c);
    if (!conn_lost (loop, c))
      return false;
  }
  if (c->gone)
    sent = ready;
  session_sent (c->session, sent);
  account (c);
  return true;
}

/* One step of the TLS handshake; the watchers follow what GnuTLS waits
 * for, so a slow handshake holds up no other connection.
 */
static void
conn_handshake (struct ev_loop *loop, struct conn *c)
{
  int r = tls_handshake (c->tls);

  if (r < 0) {
    conn_tls_failed (loop, c);
    return;
  }
  if (r == 0) {
    bool w = tls_wants_write (c->tls);

    if (w) {
      ev_io_stop (loop, &c->rio);
      ev_io_start (loop, &c->wio);
    }
    else {
      ev_io_stop (loop, &c->wio);
      ev_io_start (loop, &c->rio);
    }
    return;
  }
  c->handshaking = false;
  session_tls_started (c->session);
  if (verbose)
    fprintf (stderr, "zonednull-server: connection %d: TLS, %s\n", c->fd,
             tls_peer (c->tls));
  ev_io_stop (loop, &c->wio);
  ev_io_start (loop, &c->rio);
  /* Options sent right behind the handshake may sit inside GnuTLS. */
  ev_feed_event (loop, &c->rio, EV_READ);
}

/* The STARTTLS reply is out: what the client sends next is TLS, and so
 * is what it sent already (it should have waited for the reply).
 */
static void
conn_start_tls (struct ev_loop *loop, struct conn *c)
{
  c->tls = tls_conn_new (c->fd, c->in, c->in_len);
  c->in_len = 0;
  if (c->tls == NULL) {
    fprintf (stderr, "zonednull-server: connection %d: out of memory for "
             "a TLS session\n", c->fd);
    conn_free (loop, c);
    return;
  }
  c->handshaking = true;
  conn_handshake (loop, c);
}

/* Hands buffered input to the session, as far as tags allow. */
static void
conn_process (struct conn *c)
{
  long used;
  bool control;

  blocked_remove (c);
  used = session_input (c->session, c->in, c->in_len);
  account (c);
  attach (c);
  if (ev_is_active (&c->handshake) && session_device (c->session, &control))
    ev_timer_stop (ev_default_loop (0), &c->handshake);
  if (used < 0) {
    c->closing = true;
    c->in_len = 0;
    wait_remove (c);
    throttle_remove (c);
    return;
  }
  memmove (c->in, c->in + used, c->in_len - (size_t) used);
  c->in_len -= (size_t) used;
  conn_check_end (c);
  /* A full buffer the session cannot use, with room for output and a
   * tag, is a framing error (no request is that large).
   */
  if (c->in_len == c->in_cap && c->in_cap >= MAX_INBUF && !c->waiting
      && !c->throttled && !c->out_blocked
      && session_output (c->session)->len < SESSION_OUTPUT_LIMIT)
    c->closing = true;
}

/* Sends, takes more buffered requests while output and tags allow, and
 * chooses which events to wait for.
 */
static void
conn_flush (struct ev_loop *loop, struct conn *c)
{
  for (;;) {
    if (!conn_send (loop, c))
      return;
    if (session_ready (c->session) > 0 || c->closing || c->in_len == 0
        || c->waiting || c->throttled)
      break;
    /* Requests held back by the output budget. */
    conn_process (c);
    if (session_ready (c->session) == 0)
      break;
  }

  if (session_ready (c->session) > 0)
    ev_io_start (loop, &c->wio);
  else {
    ev_io_stop (loop, &c->wio);
    if (c->closing && !c->pending && c->held == 0) {
      conn_free (loop, c);
      return;
    }
    if (session_starttls (c->session)) {
      conn_start_tls (loop, c);
      return;
    }
  }
  /* Reading resumes once there is room for the reply. */
  if (c->closing || c->eof || c->out_blocked)
    ev_io_stop (loop, &c->rio);
  else {
    ev_io_start (loop, &c->rio);
    /* No socket event announces what GnuTLS has decrypted already. */
    if (c->tls && tls_pending (c->tls))
      ev_feed_event (loop, &c->rio, EV_READ);
  }
}

/* Completions that came due release their replies and tags; then the
 * connections waiting for tags go on, longest waiter first.
 */
static void
timer_cb (struct ev_loop *loop, ev_io *w, int revents)
{
  uint64_t expirations, now;
  unsigned nr_fifos = nr_tagsets * (qcfg.shared_tag_bitmap ? 1 : qcfg.submit_queues);
  struct conn *c;

  (void) revents;
  if (read (w->fd, &expirations, sizeof expirations) < 0 && errno != EAGAIN)
    return;
  now = now_ns ();
  while (ring_count > 0 && ring[ring_head].due <= now) {
    struct completion e = ring[ring_head];

    ring_head = (ring_head + 1) % ring_cap;
    ring_count--;
    if (e.c) {
      session_complete_one (e.c->session);
      e.c->held--;
    }
    zn_queue_complete (e.qs, &e.rq);
  }
  /* One send per connection for all its completed replies. */
  for (c = conns; c; ) {
    struct conn *next = c->next;

    if (session_ready (c->session) > 0)
      conn_flush (loop, c);
    c = next;
  }
  for (unsigned i = 0; i < nr_fifos; i++)
    while ((c = waits[i].head) != NULL) {
      conn_process (c);
      conn_flush (loop, c);
      if (waits[i].head == c)
        break;                  /* still no tag for it */
    }
  arm_timer ();
  pipeline_retry (loop);
}

/* Applies or fails the parked writes whose wait is over; each applied
 * write can end the wait of others, so until nothing changes.  Then the
 * timer is armed for the earliest deadline left.  Called after every
 * event, so with nothing parked it returns at once (a timer armed for a
 * write that has gone since only fires once, to no effect).
 */
static void
pipeline_retry (struct ev_loop *loop)
{
  uint64_t first = UINT64_MAX;
  bool progress = true;

  if (nr_pending == 0)
    return;
  while (progress) {
    uint64_t now = now_ns ();

    progress = false;
    for (struct conn *c = conns, *next; c; c = next) {
      bool resumed = false;

      next = c->next;
      for (struct pending **pp = &c->pending; *pp; ) {
        struct pending *p = *pp;
        int v = zn_pipeline_poll (c->d->dev, &p->wait), err;

        if (v == 1 && now < p->deadline) {
          pp = &p->next;
          continue;
        }
        err = v == 1 ? ETIMEDOUT : -v;
        *pp = p->next;
        nr_pending--;
        zn_pipeline_end (c->d->dev, &p->wait, -err);
        session_resume (c->session, p->id, err, served.delayed);
        if (served.delayed)
          ring_push (c, &p->rq);
        else
          zn_queue_complete (c->d->qs, &p->rq);
        free (p);
        resumed = progress = true;
      }
      if (resumed)
        conn_flush (loop, c);
    }
  }
  for (struct conn *c = conns; c && nr_pending > 0; c = c->next)
    for (struct pending *p = c->pending; p; p = p->next)
      if (p->deadline < first)
        first = p->deadline;
  ev_timer_stop (loop, &pipeline_timer);
  if (first != UINT64_MAX) {
    uint64_t now = now_ns ();

    ev_timer_set (&pipeline_timer,
                  first > now ? (double) (first - now) / 1e9 : 0., 0.);
    ev_timer_start (loop, &pipeline_timer);
  }
}

static void
pipeline_cb (struct ev_loop *loop, ev_timer *w, int revents)
{
  (void) w;
  (void) revents;
  pipeline_retry (loop);
}

/* A tick of the mbps budget: the throttled connections try again. */
static void
throttle_cb (struct ev_loop *loop, ev_timer *w, int revents)
{
  struct conn *c = throttled, *next;

  (void) w;
  (void) revents;
  throttled = NULL;
  for (; c; c = next) {
    next = c->throttle_next;
    c->throttled = false;
    conn_process (c);
    conn_flush (loop, c);
  }
  pipeline_retry (loop);
}

/* Once output has gone, the connections that wait for room try again,
 * longest waiter first, before the loop sleeps.  Past the total none
 * can be given room, so they are left alone: those waiting for their
 * own replies to go are retried by their own conn_flush.
 */
static ev_prepare budget_watcher;

static void
budget_retry (struct ev_loop *loop, ev_prepare *w, int revents)
{
  (void) w;
  (void) revents;
  if (!output_freed || output_total >= OUTPUT_TOTAL_LIMIT)
    return;
  output_freed = false;
  for (struct conn *c = blocked_head, *end = blocked_tail, *next; c; c = next) {
    size_t before = c->in_len;
    bool last = c == end;

    next = c->blocked_next;
    conn_process (c);
    if (c->in_len != before || !c->out_blocked)
      conn_flush (loop, c);
    if (last)
      break;
  }
}

/* ---- busy polling ----------------------------------------------------------
 *
 * After input the loop keeps polling without sleeping for busy_poll_ns,
 * so that a client's next request finds the server awake.  Otherwise
 * every request of a client that keeps a queue full wakes a sleeping
 * process, and on a virtual machine that wakeup costs more than the
 * request (qemu's iothreads poll for the same reason).  An active idle
 * watcher is how libev polls without blocking.
 */
static ev_idle busy_poll_watcher;
static uint64_t busy_poll_until;

static void
busy_poll_cb (struct ev_loop *loop, ev_idle *w, int revents)
{
  (void) revents;
  if (now_ns () >= busy_poll_until)
    ev_idle_stop (loop, w);
}

static void
busy_poll (struct ev_loop *loop)
{
  if (busy_poll_ns == 0)
    return;
  busy_poll_until = now_ns () + busy_poll_ns;
  ev_idle_start (loop, &busy_poll_watcher);
}

static void
conn_readable (struct ev_loop *loop, ev_io *w, int revents)
{
  struct conn *c = w->data;
  ssize_t n;

  (void) revents;
  if (c->handshaking) {
    conn_handshake (loop, c);
    return;
  }
  if (c->in_cap - c->in_len < READ_CHUNK && c->in_cap < MAX_INBUF) {
    size_t cap = c->in_cap ? c->in_cap * 2 : READ_CHUNK * 2;
    unsigned char *p;

    if (cap > MAX_INBUF)
      cap = MAX_INBUF;
    p = realloc (c->in, cap);
    if (p == NULL) {
      conn_free (loop, c);
      return;
    }
    c->in = p;
    c->in_cap = cap;
  }
  if (c->in_len == c->in_cap) {
    /* Full: wait for the output to drain (conn_flush resumes). */
    ev_io_stop (loop, &c->rio);
    return;
  }
  n = c->tls ? tls_recv (c->tls, c->in + c->in_len, c->in_cap - c->in_len)
             : recv (c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
  if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return;
  if (n == -1 && errno == EPROTO && c->tls)
    conn_tls_log (c);
  if (n < 0) {
    conn_lost (loop, c);
    return;
  }
  if (n == 0 && verbose && c->tls && tls_close_notify (c->tls))
    fprintf (stderr, "zonednull-server: connection %d: the client ended "
             "TLS (close_notify)\n", c->fd);
  if (n == 0 && !conn_outstanding (c)) {
    conn_free (loop, c);
    return;
  }
  if (n == 0) {
    c->eof = true;
    conn_check_end (c);
    conn_flush (loop, c);
    pipeline_retry (loop);
    return;
  }
  c->in_len += (size_t) n;
  conn_process (c);
  conn_flush (loop, c);
  pipeline_retry (loop);
  busy_poll (loop);
}

static void
conn_writable (struct ev_loop *loop, ev_io *w, int revents)
{
  struct conn *c = w->data;

  (void) revents;
  if (c->handshaking) {
    conn_handshake (loop, c);
    return;
  }
  conn_flush (loop, c);
  pipeline_retry (loop);
}

/* A connection that has not reached the transmission phase --timeout
 * after it was accepted is cut off, so that clients that connect and
 * stall cannot hold the server's descriptors.  The timer covers the
 * whole handshake, whatever it consists of.
 */
static void
handshake_expired (struct ev_loop *loop, ev_timer *w, int revents)
{
  struct conn *c = w->data;

  (void) revents;
  if (verbose)
    fprintf (stderr, "zonednull-server: connection %d: handshake not "
             "finished within %g s (--timeout), closed\n", c->fd,
             handshake_timeout);
  conn_free (loop, c);
}

/* Out of file descriptors, the listening socket stays readable: accepting
 * pauses for a moment instead of spinning on EMFILE.
 */
static ev_timer accept_pause;
static bool accept_failing;     /* said once until an accept succeeds */

static void
accept_resume_cb (struct ev_loop *loop, ev_timer *w, int revents)
{
  (void) w;
  (void) revents;
  ev_io_start (loop, &listen_watcher);
}

static void
accept_cb (struct ev_loop *loop, ev_io *w, int revents)
{
  struct conn *c;
  int fd, one = 1;

  (void) revents;
  fd = accept4 (w->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd == -1) {
    if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS
        || errno == ENOMEM) {
      if (!accept_failing)
        fprintf (stderr, "zonednull-server: accept: %s; new connections "
                 "wait\n", strerror (errno));
      accept_failing = true;
      ev_io_stop (loop, &listen_watcher);
      ev_timer_set (&accept_pause, 0.1, 0.);
      ev_timer_start (loop, &accept_pause);
    }
    return;
  }
  accept_failing = false;
  if (!unix_path)
    setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  c = calloc (1, sizeof *c);
  if (c == NULL || (c->session = session_new (&served, c)) == NULL) {
    free (c);
    close (fd);
    return;
  }
  c->fd = fd;
  ev_io_init (&c->rio, conn_readable, fd, EV_READ);
  ev_io_init (&c->wio, conn_writable, fd, EV_WRITE);
  c->rio.data = c->wio.data = c;
  ev_timer_init (&c->handshake, handshake_expired, handshake_timeout, 0.);
  c->handshake.data = c;
  if (handshake_timeout > 0)
    ev_timer_start (loop, &c->handshake);
  c->next = conns;
  if (conns)
    conns->prev = c;
  conns = c;
  nr_conns++;
  nr_conns_total++;
  if (verbose)
    fprintf (stderr, "zonednull-server: connection %d accepted\n", fd);
  conn_flush (loop, c);         /* the greeting */
}

static void
stop_cb (struct ev_loop *loop, ev_signal *w, int revents)
{
  (void) w;
  (void) revents;
  ev_break (loop, EVBREAK_ALL);
}

static int
listen_unix (const char *path)
{
  struct sockaddr_un sun = { .sun_family = AF_UNIX };
  struct stat st;
  int fd;

  if (strlen (path) >= sizeof sun.sun_path) {
    fprintf (stderr, "zonednull-server: -U %s: path longer than %zu bytes\n",
             path, sizeof sun.sun_path - 1);
    return -1;
  }
  /* Replace a stale socket, never another kind of file. */
  if (lstat (path, &st) == 0) {
    if (!S_ISSOCK (st.st_mode)) {
      fprintf (stderr, "zonednull-server: -U %s: exists and is not a socket\n", path);
      return -1;
    }
    unlink (path);
  }
  strcpy (sun.sun_path, path);
  fd = socket (AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd == -1 || bind (fd, (struct sockaddr *) &sun, sizeof sun) == -1
      || listen (fd, SOMAXCONN) == -1) {
    fprintf (stderr, "zonednull-server: -U %s: %s\n", path, strerror (errno));
    if (fd != -1)
      close (fd);
    return -1;
  }
  return fd;
}

static int
listen_tcp (const char *addr, const char *service)
{
  struct addrinfo hints = {
    .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
    .ai_flags = AI_PASSIVE | AI_NUMERICSERV,
  };
  struct addrinfo *ai, *a;
  int fd = -1, r, one = 1, saved = 0;

  r = getaddrinfo (addr, service, &hints, &ai);
  if (r != 0) {
    fprintf (stderr, "zonednull-server: -i %s -p %s: %s\n", addr, service,
             gai_strerror (r));
    return -1;
  }
  for (a = ai; a; a = a->ai_next) {
    fd = socket (a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                 a->ai_protocol);
    if (fd == -1)
      continue;
    setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind (fd, a->ai_addr, a->ai_addrlen) == 0 && listen (fd, SOMAXCONN) == 0)
      break;
    saved = errno;
    close (fd);
    fd = -1;
  }
  freeaddrinfo (ai);
  if (fd == -1)
    fprintf (stderr, "zonednull-server: cannot listen on %s port %s: %s\n",
             addr, service, strerror (saved));
  return fd;
}

/* nullb0 ... nullb<nr_devices-1>, with their tag sets, as the plugin
 * makes them.
 */
static int
devices_create (const struct zn_params *p, char *err, size_t errlen)
{
  unsigned nr_pools = qcfg.shared_tag_bitmap ? 1 : qcfg.submit_queues;

  nr_tagsets = qcfg.shared_tags ? 1 : p->nr_devices;
  tagsets = calloc (nr_tagsets, sizeof *tagsets);
  waits = calloc ((size_t) nr_tagsets * nr_pools, sizeof *waits);
  served.devices = calloc (p->nr_devices, sizeof *served.devices);
  if (tagsets == NULL || waits == NULL || served.devices == NULL) {
    snprintf (err, errlen, "out of memory");
    return -1;
  }
  for (unsigned i = 0; i < nr_tagsets; i++)
    if ((tagsets[i] = zn_tagset_create (&qcfg)) == NULL) {
      snprintf (err, errlen, "out of memory for %" PRIu32 " tags",
                qcfg.hw_queue_depth);
      return -1;
    }
  for (unsigned i = 0; i < p->nr_devices; i++) {
    struct served_device *d = &served.devices[i];

    served.nr_devices = i + 1;
    snprintf (d->name, sizeof d->name, "nullb%u", i);
    snprintf (d->control_name, sizeof d->control_name, "%s"
              ZN_CONTROL_SUFFIX, d->name);
    d->dev = zn_dev_create (&p->cfg, err, errlen);
    if (d->dev == NULL) {
      if (err[0] == '\0')
        snprintf (err, errlen, "%s", strerror (errno));
      return -1;
    }
    /* An NBD client sees the device as /dev/nullb0's users do, behind
     * the block layer's zone write plugs (6.10+).
     */
    if (zn_dev_write_plugging (d->dev, err, errlen) == -1)
      return -1;
    if (params_apply (p, d->dev, err, errlen) == -1)
      return -1;
    d->qs = zn_queues_create (tagsets[qcfg.shared_tags ? 0 : i], &qcfg);
    d->ctl = zn_control_create (d->dev);
    if (d->qs == NULL || d->ctl == NULL) {
      snprintf (err, errlen, "out of memory for %s", d->name);
      return -1;
    }
    zn_control_set_queues (d->ctl, d->qs, &qcfg, &p->cfg, i, p->nr_devices);
  }
  return 0;
}

static void
devices_destroy (void)
{
  for (unsigned i = 0; i < served.nr_devices; i++) {
    zn_control_destroy (served.devices[i].ctl);
    zn_queues_destroy (served.devices[i].qs);
    zn_dev_destroy (served.devices[i].dev);
  }
  free (served.devices);
  for (unsigned i = 0; tagsets && i < nr_tagsets; i++)
    zn_tagset_destroy (tagsets[i]);
  free (tagsets);
  free (waits);
  free (ring);
}

static void
usage (FILE *fp)
{
  fputs ("Usage: zonednull-server [OPTIONS] [KEY=VALUE...]\n"
         "Serves Linux null_blk's zoned device over NBD from an event loop.\n"
         "\n"
         "Options:\n"
         " -U, --unix PATH      listen on a Unix socket\n"
         " -i, --ipaddr ADDR    TCP address (default 127.0.0.1)\n"
         " -p, --port PORT      TCP port (default 10809)\n"
         " -f, --foreground     do not become a daemon\n"
         " -P, --pidfile FILE   write the PID once listening\n"
         " -r, --readonly       refuse writes, trims and zone commands\n"
         " -v, --verbose        log connections to stderr\n"
         "     --exit-with-parent  stop (as on SIGTERM) when the parent exits\n"
         "     --busy-poll US   poll without sleeping for US microseconds after\n"
         "                      a request (default 20; 0: always sleep)\n"
         "     --timeout S      close a connection that has not finished its\n"
         "                      handshake S seconds after connecting (default\n"
         "                      60; 0: never)\n"
         "     --tls=off|on|require  refuse, allow or require NBD_OPT_STARTTLS\n"
         "     --tls-psk=FILE   TLS with the pre-shared keys of FILE (psktool's\n"
         "                      username:hexkey lines)\n"
         "     --tls-certificates=DIR  TLS with X.509: DIR/server-cert.pem,\n"
         "                      server-key.pem, ca-cert.pem (ca-crl.pem)\n"
         "     --tls-verify-peer  clients need a certificate signed by ca-cert.pem\n"
         " -h, --help           this text\n"
         " -V, --version        the version\n"
         "\n"
         "Device parameters, KEY=VALUE, as the nbdkit plugin's (see\n"
         "nbdkit-zonednull-plugin(1)):\n", fp);
  params_print_help (fp);
  fputs ("\n"
         "Exports: nullb0 (the default) ... nullb<nr_devices-1>, each with\n"
         "/control (zonednull-control(5)).  See zonednull-server(8).\n", fp);
}

/* --busy-poll US: whole microseconds, at most one second. */
static int
parse_busy_poll (const char *arg)
{
  char *end;
  unsigned long us;

  errno = 0;
  us = strtoul (arg, &end, 10);
  if (errno || end == arg || *end || arg[0] == '-' || us > 1000000) {
    fprintf (stderr, "zonednull-server: --busy-poll '%s': must be a whole "
             "number of microseconds from 0 to 1000000\n", arg);
    return -1;
  }
  busy_poll_ns = (uint64_t) us * 1000u;
  return 0;
}

/* --timeout S: seconds, fractions allowed, at most a day. */
static int
parse_timeout (const char *arg)
{
  char *end;
  double t;

  errno = 0;
  t = strtod (arg, &end);
  if (errno || end == arg || *end || !(t >= 0. && t <= 86400.)) {
    fprintf (stderr, "zonednull-server: --timeout '%s': must be a number of "
             "seconds from 0 (no limit) to 86400\n", arg);
    return -1;
  }
  handshake_timeout = t;
  return 0;
}

/* -p PORT: a number from 1 to 65535, or a service name for getaddrinfo
 * (which would take 99999 as port 34463).
 */
static int
parse_port (const char *arg)
{
  char *end;
  unsigned long n;

  if (arg[0] >= '0' && arg[0] <= '9') {
    errno = 0;
    n = strtoul (arg, &end, 10);
    if (errno || *end || n == 0 || n > 65535) {
      fprintf (stderr, "zonednull-server: -p '%s': a port number must be "
               "from 1 to 65535\n", arg);
      return -1;
    }
  }
  port = arg;
  return 0;
}

/* Long options without a short one. */
enum {
  OPT_TLS = 256, OPT_TLS_PSK, OPT_TLS_CERTIFICATES, OPT_TLS_VERIFY_PEER,
};

/* --tls: nbdkit's three words. */
static int
parse_tls (const char *arg)
{
  if (strcmp (arg, "off") == 0)
    tls_settings.mode = TLS_OFF;
  else if (strcmp (arg, "on") == 0)
    tls_settings.mode = TLS_ON;
  else if (strcmp (arg, "require") == 0)
    tls_settings.mode = TLS_REQUIRE;
  else {
    fprintf (stderr, "zonednull-server: --tls '%s': must be off, on or "
             "require\n", arg);
    return -1;
  }
  return 0;
}

static void
shutdown_all (struct ev_loop *loop)
{
  while (conns)
    conn_free (loop, conns);
  if (listen_fd != -1)
    close (listen_fd);
  if (unix_path)
    unlink (unix_path);
  if (pidfile)
    unlink (pidfile);
}

/* Listening, but the pidfile is not written yet: the socket goes, the
 * pidfile path is not ours to remove.
 */
static int
stop_before_serving (int status)
{
  pidfile = NULL;
  shutdown_all (NULL);
  devices_destroy ();
  tls_deinit ();
  return status;
}

int
main (int argc, char **argv)
{
  static const struct option long_options[] = {
    { "unix", required_argument, NULL, 'U' },
    { "ipaddr", required_argument, NULL, 'i' },
    { "port", required_argument, NULL, 'p' },
    { "foreground", no_argument, NULL, 'f' },
    { "pidfile", required_argument, NULL, 'P' },
    { "readonly", no_argument, NULL, 'r' },
    { "verbose", no_argument, NULL, 'v' },
    { "exit-with-parent", no_argument, NULL, 'E' },
    { "busy-poll", required_argument, NULL, 'B' },
    { "timeout", required_argument, NULL, 'T' },
    { "tls", required_argument, NULL, OPT_TLS },
    { "tls-psk", required_argument, NULL, OPT_TLS_PSK },
    { "tls-certificates", required_argument, NULL, OPT_TLS_CERTIFICATES },
    { "tls-verify-peer", no_argument, NULL, OPT_TLS_VERIFY_PEER },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 },
  };
  struct zn_params params;
  struct ev_loop *loop;
  /* As nbdkit does, a hangup or quit stops the server like SIGTERM. */
  static const int stop_signals[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT };
  ev_signal stoppers[sizeof stop_signals / sizeof stop_signals[0]];
  char err[512] = "";
  int c;

  /* Output buffers over 1 MiB are mapped on their own and go back to
   * the system once sent; glibc would otherwise raise this threshold
   * after the first such buffer is freed and keep later ones in its heap.
   */
  mallopt (M_MMAP_THRESHOLD, 1 << 20);
  params_init (&params);
  while ((c = getopt_long (argc, argv, "U:i:p:fP:rvhV", long_options, NULL)) != -1) {
    switch (c) {
    case 'U': unix_path = optarg; break;
    case 'i': ipaddr = optarg; break;
    case 'p':
      if (parse_port (optarg) == -1)
        return 2;
      break;
    case 'f': foreground = true; break;
    case 'P': pidfile = optarg; break;
    case 'r': served.readonly = true; break;
    case 'v': verbose = true; break;
    case 'E': exit_with_parent = true; break;
    case 'B':
      if (parse_busy_poll (optarg) == -1)
        return 2;
      break;
    case 'T':
      if (parse_timeout (optarg) == -1)
        return 2;
      break;
    case OPT_TLS:
      if (parse_tls (optarg) == -1)
        return 2;
      break;
    case OPT_TLS_PSK: tls_settings.pskfile = optarg; break;
    case OPT_TLS_CERTIFICATES: tls_settings.certdir = optarg; break;
    case OPT_TLS_VERIFY_PEER: tls_settings.verify_peer = true; break;
    case 'h': usage (stdout); return EXIT_SUCCESS;
    case 'V': printf ("zonednull-server %s\n", PACKAGE_VERSION); return EXIT_SUCCESS;
    default: usage (stderr); return 2;
    }
  }
  if (exit_with_parent && !foreground) {
    fputs ("zonednull-server: --exit-with-parent needs -f\n", stderr);
    return 2;
  }
  if (tls_settings.mode == TLS_OFF
      && (tls_settings.pskfile || tls_settings.certdir
          || tls_settings.verify_peer)) {
    fprintf (stderr, "zonednull-server: %s needs --tls=on or --tls=require\n",
             tls_settings.pskfile ? "--tls-psk" : tls_settings.certdir
             ? "--tls-certificates" : "--tls-verify-peer");
    return 2;
  }
  for (int i = optind; i < argc; i++)
    if (params_set (&params, argv[i], err, sizeof err) == -1) {
      fprintf (stderr, "zonednull-server: %s\n", err);
      params_free (&params);
      return EXIT_FAILURE;
    }

  if (params_check (&params, err, sizeof err) == -1) {
    fprintf (stderr, "zonednull-server: %s\n", err);
    params_free (&params);
    return EXIT_FAILURE;
  }
  if (tls_init (&tls_settings, err, sizeof err) == -1) {
    fprintf (stderr, "zonednull-server: %s\n", err);
    params_free (&params);
    tls_deinit ();
    return EXIT_FAILURE;
  }
  served.tls = tls_settings.mode;
  qcfg = params.queue;
  pipeline_wait_ns = (uint64_t) (params.cfg.pipeline_wait_ms
                                 ? params.cfg.pipeline_wait_ms
                                 : ZN_PIPELINE_WAIT_MS) * 1000000u;
  served.delayed = zn_queue_timed (&qcfg);
  served.admit = admit;
  served.room = room;
  if (devices_create (&params, err, sizeof err) == -1) {
    fprintf (stderr, "zonednull-server: %s\n", err);
    params_free (&params);
    devices_destroy ();
    tls_deinit ();
    return EXIT_FAILURE;
  }
  params_free (&params);

  listen_fd = unix_path ? listen_unix (unix_path) : listen_tcp (ipaddr, port);
  if (listen_fd == -1) {
    devices_destroy ();
    tls_deinit ();
    return EXIT_FAILURE;
  }
  /* The death signal goes through the loop like a real SIGTERM, so the
   * socket and pidfile are removed.  Checked after arming: the parent may
   * already be gone.
   */
  if (exit_with_parent) {
    prctl (PR_SET_PDEATHSIG, SIGTERM);
    if (getppid () == 1)
      return stop_before_serving (EXIT_SUCCESS);
  }
  if (!foreground && daemon (1, 0) == -1) {
    fprintf (stderr, "zonednull-server: daemon: %s\n", strerror (errno));
    return stop_before_serving (EXIT_FAILURE);
  }
  if (pidfile && zn_write_pidfile (pidfile) == -1) {
    fprintf (stderr, "zonednull-server: -P %s: %s\n", pidfile,
             strerror (errno));
    return stop_before_serving (EXIT_FAILURE);
  }

  signal (SIGPIPE, SIG_IGN);
  loop = ev_default_loop (EVFLAG_AUTO);
  ev_io_init (&listen_watcher, accept_cb, listen_fd, EV_READ);
  ev_io_start (loop, &listen_watcher);
  /* The default 50 us of timer slack would be half a typical
   * completion_nsec.
   */
  if (served.delayed)
    prctl (PR_SET_TIMERSLACK, 1UL);
  timer_fd = timerfd_create (CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (timer_fd == -1) {
    fprintf (stderr, "zonednull-server: timerfd_create: %s\n", strerror (errno));
    return EXIT_FAILURE;
  }
  ev_io_init (&timer_watcher, timer_cb, timer_fd, EV_READ);
  ev_io_start (loop, &timer_watcher);
  ev_init (&throttle_timer, throttle_cb);
  ev_init (&pipeline_timer, pipeline_cb);
  ev_init (&accept_pause, accept_resume_cb);
  for (size_t i = 0; i < sizeof stoppers / sizeof stoppers[0]; i++) {
    ev_signal_init (&stoppers[i], stop_cb, stop_signals[i]);
    ev_signal_start (loop, &stoppers[i]);
  }
  ev_idle_init (&busy_poll_watcher, busy_poll_cb);
  ev_prepare_init (&budget_watcher, budget_retry);
  ev_prepare_start (loop, &budget_watcher);

  ev_run (loop, 0);

  ev_idle_stop (loop, &busy_poll_watcher);
  ev_prepare_stop (loop, &budget_watcher);

  ev_io_stop (loop, &listen_watcher);
  for (size_t i = 0; i < sizeof stoppers / sizeof stoppers[0]; i++)
    ev_signal_stop (loop, &stoppers[i]);
  ev_io_stop (loop, &timer_watcher);
  ev_timer_stop (loop, &throttle_timer);
  ev_timer_stop (loop, &pipeline_timer);
  ev_timer_stop (loop, &accept_pause);
  shutdown_all (loop);
  close (timer_fd);
  ev_loop_destroy (loop);
  devices_destroy ();
  tls_deinit ();
  if (verbose)
    fprintf (stderr, "zonednull-server: stopped after %lu connections\n",
             nr_conns_total);
  return EXIT_SUCCESS;
}
