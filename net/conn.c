/* SPDX-License-Identifier: BSD-3-Clause */
/* The connection layer (see conn.h).
 *
 * Each connection is a byte stream fed to its protocol's session; all
 * replies produced by one read are sent with one write, so a client that
 * pipelines many requests costs one system call per batch in each
 * direction instead of a thread per request.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <ev.h>

#include "util/clock.h"
#include "conn.h"
#include "util/fifo.h"
#include "tls.h"

#define READ_CHUNK (256 * 1024)

/* A listening socket and what it serves. */
struct listener {
  struct net_server *srv;
  int fd;
  bool tcp;
  const struct net_protocol *proto;
  void *arg;
  const struct net_sched *sched;
  ev_io watcher;
  /* Out of file descriptors, the listening socket stays readable:
   * accepting pauses for a moment instead of spinning on EMFILE.
   */
  ev_timer pause;
  bool failing;                 /* said once until an accept succeeds */
  /* net_serve_spread: the listeners, one per server, whose servers take
   * the connections this one accepts in turn; NULL: it keeps them.  A
   * peer's listener (fd -1) accepts nothing itself.
   */
  struct listener **peers;
  unsigned nr_peers, turn;
  struct listener *next;
};

/* A connection another server's listener accepted for this one. */
struct handoff {
  struct listener *l;
  int fd;
  struct handoff *next;
};

struct net_conn {
  struct net_server *srv;
  const struct listener *l;
  int fd;
  ev_io rio, wio;
  void *session;
  void *sched;                  /* l->sched's state, or NULL */
  struct tls_conn *tls;         /* after STARTTLS */
  bool handshaking;             /* the TLS handshake is under way */
  unsigned char *in;
  size_t in_len, in_cap;
  bool closing;                 /* take no more requests; once every
                                   admitted one is answered and the
                                   output sent, close */
  bool eof;                     /* the client sends no more */
  bool gone;                    /* nor takes replies: they are dropped */
  ev_timer handshake;           /* the handshake timeout */
  ev_timer idle;                /* net_conn_idle_timeout's, repeat: ms */
  ev_timer abort;               /* net_conn_abort's, due at once */
  /* net_conn_abort_async's: on its server's aborts list (handoff_lock). */
  bool abort_posted;
  struct net_conn *abort_next;
  size_t queued;                /* its output, as last counted */
  bool out_blocked;             /* a request waits for room for its reply */
  struct net_conn *blocked_next;
  struct net_conn *next, *prev;
  /* --stats: when the last recv returned, the bytes of output sent so
   * far, and the replies queued and not all sent yet, their ends counted
   * in the same bytes: replies[replies_head, replies_len).
   */
  uint64_t recv_ns;
  uint64_t out_sent;
  struct pending_reply *replies;
  size_t replies_head, replies_len, replies_cap;
};

struct pending_reply {
  uint64_t end;
  uint64_t arrival;             /* 0: not timed */
};

/* ---- the output budget -----------------------------------------------------
 *
 * Replies wait in memory until their client reads them, so a client that
 * sends reads and never reads the replies would hold memory without
 * bound.  Each connection may hold NET_OUTPUT_LIMIT, and all of them
 * together OUTPUT_TOTAL_LIMIT, as each takes requests: a request whose
 * reply does not fit waits, and its connection stops being read, until
 * its own replies are read or others' are.  Past the total, a connection
 * gets no more than its fair share of it, so those that do not read
 * cannot take the room of those that do; and a reply that leaves a
 * connection at most OUTPUT_GUARANTEED queued is always taken, so that a
 * client that reads its replies is served whatever the others hold.  The
 * output held is thus at most OUTPUT_TOTAL_LIMIT plus OUTPUT_GUARANTEED
 * per connection.  A protocol that holds more for its client than its
 * output (NVMe/TCP's R2T buffers, the room of output already sent that
 * its buffer has not taken back, the data of writes parked for their
 * write pointer) counts that too (proto->holds), and asks net_fits
 * before taking more of it.
 */
#define OUTPUT_TOTAL_LIMIT ((size_t) 256 << 20)
/* --stats's histogram of reply times: four buckets per power of two. */
#define HIST_BUCKETS (62 * 4 + 4)
#define OUTPUT_GUARANTEED (((size_t) 1 << 20) + 4096)  /* 1 MiB and headers */

struct net_server {
  struct ev_loop *loop;
  struct net_settings set;
  struct listener *listeners;
  struct net_conn *conns;       /* every open connection, for shutdown */
  unsigned nr_conns;
  /* Its connections, and those handed to it not started yet: what the
   * loop that accepts weighs when it hands one over (next_peer).
   */
  atomic_uint load;
  unsigned long nr_accepted;
  size_t output_total;          /* sum of the connections' queued */
  bool output_freed;            /* output_total went down since the retry */
  struct net_conn *blocked_head, *blocked_tail;  /* FIFO of out_blocked */
  ev_prepare budget_watcher;
  ev_idle busy_poll_watcher;
  uint64_t busy_poll_until;
  /* --stats (net_server_print_stats) */
  ev_prepare stats_watcher;
  struct tls_io_count io;
  uint64_t requests, sleeps, busy_polls, busy_poll_ns, busy_poll_start;
  uint64_t timed, reply_ns_sum, reply_ns_max;
  uint64_t reply_hist[HIST_BUCKETS];  /* the timed replies, hist_bucket */
  size_t output_limit;          /* its share of OUTPUT_TOTAL_LIMIT */
  /* Connections handed to this server's loop from another's, and its
   * connections other loops asked to close (net_conn_abort_async).
   */
  pthread_mutex_t handoff_lock;
  struct handoff *handoff_head, *handoff_tail;
  struct net_conn *aborts;
  ev_async handoff_wake;
};

/* Counts what the connection's session holds now. */
static void
account (struct net_conn *c)
{
  struct net_server *srv = c->srv;
  size_t now;

  if (c->l->proto->holds)
    now = c->l->proto->holds (c->session);
  else
    c->l->proto->output (c->session, &now);
  if (now < c->queued)
    srv->output_freed = true;
  srv->output_total = srv->output_total - c->queued + now;
  c->queued = now;
}

static void
blocked_remove (struct net_conn *c)
{
  struct net_server *srv = c->srv;

  if (!c->out_blocked)
    return;
  ZN_FIFO_REMOVE (struct net_conn, srv->blocked_head, srv->blocked_tail, c,
                  blocked_next);
  c->out_blocked = false;
}

bool
net_fits (void *owner, size_t queued, size_t more)
{
  struct net_conn *c = owner;
  struct net_server *srv = c->srv;
  size_t mine = queued + more, others = srv->output_total - c->queued;

  if (mine <= OUTPUT_GUARANTEED)
    return true;
  if (others + mine > srv->output_limit)
    return false;
  if (queued == 0)
    return true;                /* one request of any size at a time */
  return mine <= NET_OUTPUT_LIMIT
         && mine <= srv->output_limit / srv->nr_conns;
}

bool
net_room (void *owner, size_t queued, size_t reply)
{
  struct net_conn *c = owner;
  struct net_server *srv = c->srv;
  bool ok = net_fits (owner, queued, reply);

  if (!ok && !c->out_blocked) {
    c->out_blocked = true;
    ZN_FIFO_PUSH (srv->blocked_head, srv->blocked_tail, c, blocked_next);
  }
  return ok;
}

/* ---- the scheduler's view -------------------------------------------------- */

static bool
sched_waiting (const struct net_conn *c)
{
  return c->sched && c->l->sched->waiting && c->l->sched->waiting (c->sched);
}

static void
sched_stop_waiting (struct net_conn *c)
{
  if (c->sched && c->l->sched->stop_waiting)
    c->l->sched->stop_waiting (c->sched);
}

static bool
sched_in_flight (const struct net_conn *c, bool input_left)
{
  return c->sched && c->l->sched->in_flight (c->sched, input_left);
}

static void
after_event (const struct listener *l)
{
  if (l->sched && l->sched->after_event)
    l->sched->after_event (l->sched->arg);
}

/* ---- --stats ------------------------------------------------------------------
 *
 * Counted only with net_settings.stats, each behind one branch.  A
 * request is timed from its arrival, when the recv after which its
 * session took it returned (net_stats_arrival), to the return of the
 * send that carried the last byte of its reply: the session tells where
 * that byte is in its output (net_stats_reply), and conn_send times the
 * replies it completes.
 */

/* Every loop iteration polls: with the busy-poll watcher active without
 * blocking, otherwise with a timeout, where it may sleep.
 */
static void
stats_prepare (struct ev_loop *loop, ev_prepare *w, int revents)
{
  struct net_server *srv = w->data;

  (void) loop;
  (void) revents;
  if (ev_is_active (&srv->busy_poll_watcher)) {
    srv->busy_polls++;
    srv->busy_poll_start = zn_now_ns ();
  }
  else
    srv->sleeps++;
}

static void
stats_recv (struct net_conn *c, ssize_t n)
{
  if (c->tls == NULL) {         /* tls.c counts its own */
    c->srv->io.recv_calls++;
    c->srv->io.recv_bytes += n > 0 ? (uint64_t) n : 0;
  }
  if (n > 0)
    c->recv_ns = zn_now_ns ();
}

/* Below 4 one bucket per value, then four per power of two: the value's
 * highest bit and the two below it.
 */
static unsigned
hist_bucket (uint64_t ns)
{
  unsigned bits = ns ? 64 - (unsigned) __builtin_clzll (ns) : 0;

  if (bits <= 2)
    return (unsigned) ns;
  return (bits - 2) * 4 + (unsigned) ((ns >> (bits - 3)) & 3);
}

static void
stats_replied (struct net_server *srv, uint64_t arrival, uint64_t now)
{
  uint64_t ns = now > arrival ? now - arrival : 0;

  srv->requests++;
  if (arrival == 0)
    return;
  srv->timed++;
  srv->reply_ns_sum += ns;
  if (ns > srv->reply_ns_max)
    srv->reply_ns_max = ns;
  srv->reply_hist[hist_bucket (ns)]++;
}

/* A send of conn_send returned n, with sent bytes of this batch gone. */
static void
stats_send (struct net_conn *c, ssize_t n, size_t sent)
{
  uint64_t now = 0;

  if (c->tls == NULL) {
    c->srv->io.send_calls++;
    c->srv->io.send_bytes += n > 0 ? (uint64_t) n : 0;
  }
  while (c->replies_head < c->replies_len
         && c->replies[c->replies_head].end <= c->out_sent + sent) {
    if (now == 0)
      now = zn_now_ns ();
    stats_replied (c->srv, c->replies[c->replies_head++].arrival, now);
  }
  if (c->replies_head == c->replies_len)
    c->replies_head = c->replies_len = 0;
}

/* The batch of conn_send is over: sent bytes went, or were dropped with
 * the replies in them when the client is gone.
 */
static void
stats_sent (struct net_conn *c, size_t sent)
{
  c->out_sent += sent;
  if (c->gone)
    c->replies_head = c->replies_len = 0;
}

uint64_t
net_stats_arrival (void *owner)
{
  return ((const struct net_conn *) owner)->recv_ns;
}

void
net_stats_reply (void *owner, uint64_t arrival, size_t end)
{
  struct net_conn *c = owner;

  if (c->replies_len == c->replies_cap && c->replies_head > 0) {
    memmove (c->replies, c->replies + c->replies_head,
             (c->replies_len - c->replies_head) * sizeof *c->replies);
    c->replies_len -= c->replies_head;
    c->replies_head = 0;
  }
  if (c->replies_len == c->replies_cap) {
    size_t cap = c->replies_cap ? 2 * c->replies_cap : 16;
    struct pending_reply *p = realloc (c->replies, cap * sizeof *p);

    if (p == NULL) {            /* counted, not timed */
      c->srv->requests++;
      return;
    }
    c->replies = p;
    c->replies_cap = cap;
  }
  c->replies[c->replies_len++] = (struct pending_reply) {
    .end = c->out_sent + end, .arrival = arrival,
  };
}

/* The middle of the bucket that holds the median: within an eighth of
 * it.
 */
static uint64_t
reply_p50 (const struct net_server *srv)
{
  uint64_t seen = 0;

  for (unsigned b = 0; b < HIST_BUCKETS && srv->timed; b++) {
    unsigned shift = b < 4 ? 0 : b / 4 - 1;
    uint64_t lo = b < 4 ? b : (uint64_t) (4 + b % 4) << shift;
    uint64_t mid = lo + (((uint64_t) 1 << shift) - 1) / 2;

    seen += srv->reply_hist[b];
    if (2 * seen >= srv->timed)
      return mid < srv->reply_ns_max ? mid : srv->reply_ns_max;
  }
  return 0;
}

void
net_server_print_stats (const struct net_server *srv)
{
  char loop[32] = "";

  /* With several loops, each prints its own line. */
  if (srv->set.loops > 1)
    snprintf (loop, sizeof loop, " loop=%u", srv->set.loop_id);
  fprintf (stderr, "%s: stats: requests=%" PRIu64 " loop_iterations=%u "
           "sleeps=%" PRIu64 " busy_polls=%" PRIu64 " busy_poll_ns=%" PRIu64
           " recv_calls=%" PRIu64 " recv_bytes=%" PRIu64 " send_calls=%"
           PRIu64 " send_bytes=%" PRIu64 " reply_ns_sum=%" PRIu64
           " reply_ns_max=%" PRIu64 " reply_ns_p50=%" PRIu64
           " connections=%u%s\n",
           srv->set.program, srv->requests, ev_iteration (srv->loop),
           srv->sleeps, srv->busy_polls, srv->busy_poll_ns,
           srv->io.recv_calls, srv->io.recv_bytes, srv->io.send_calls,
           srv->io.send_bytes, srv->reply_ns_sum, srv->reply_ns_max,
           reply_p50 (srv), srv->nr_conns, loop);
}

/* ---- connections ----------------------------------------------------------- */

static void
conn_free (struct net_conn *c)
{
  struct net_server *srv = c->srv;

  ev_io_stop (srv->loop, &c->rio);
  ev_io_stop (srv->loop, &c->wio);
  ev_timer_stop (srv->loop, &c->handshake);
  ev_timer_stop (srv->loop, &c->idle);
  ev_timer_stop (srv->loop, &c->abort);
  c->l->proto->close (c->session, c);
  /* After the close: until then another loop may still post c. */
  pthread_mutex_lock (&srv->handoff_lock);
  if (c->abort_posted) {
    struct net_conn **pp = &srv->aborts;

    while (*pp != c)
      pp = &(*pp)->abort_next;
    *pp = c->abort_next;
  }
  pthread_mutex_unlock (&srv->handoff_lock);
  tls_conn_free (c->tls);
  close (c->fd);
  if (c->prev)
    c->prev->next = c->next;
  else
    srv->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  blocked_remove (c);
  srv->output_total -= c->queued;
  srv->output_freed = true;
  srv->nr_conns--;
  atomic_fetch_sub (&srv->load, 1);
  /* Requests in flight complete without it (the scheduler's business). */
  if (c->sched)
    c->l->sched->close (c->sched);
  if (srv->set.verbose)
    fprintf (stderr, "%s: connection %d closed\n", srv->set.program, c->fd);
  free (c->in);
  free (c->replies);
  free (c);
}

/* The client can take no more replies.  Requests not started yet are
 * dropped, as nbdkit stops reading a dead connection; those in flight
 * still complete, their replies dropped.  False when the connection was
 * freed.
 */
static bool
conn_lost (struct net_conn *c)
{
  c->gone = c->eof = c->closing = true;
  c->in_len = 0;
  sched_stop_waiting (c);
  blocked_remove (c);
  if (sched_in_flight (c, false))
    return true;
  conn_free (c);
  return false;
}

/* Whether the client is still owed something: requests in flight (the
 * scheduler's), received requests that wait for a tag, bandwidth or room
 * for their replies, or replies not sent yet.  A client may end its
 * input right after its last requests (with a request to disconnect or
 * without, or with a shutdown of its side of the socket while it reads
 * the replies); they are carried out and answered all the same, as
 * nbdkit's threads finish theirs.
 */
static bool
conn_owed (const struct net_conn *c)
{
  return sched_in_flight (c, c->in_len > 0 && !c->closing)
         || c->l->proto->ready (c->session) > 0;
}

/* After the client's end of input: no more requests once nothing waits. */
static void
conn_check_end (struct net_conn *c)
{
  if (c->eof && !sched_waiting (c) && !c->out_blocked)
    c->closing = true;
}

/* A failed TLS session is logged with its reason. */
static void
conn_tls_log (const struct net_conn *c)
{
  fprintf (stderr, "%s: connection %d: %s\n", c->srv->set.program, c->fd,
           tls_error (c->tls));
}

/* Sends what the session may send; false when the connection is gone. */
static bool
conn_send (struct net_conn *c)
{
  const struct net_protocol *proto = c->l->proto;
  size_t ready = proto->ready (c->session), sent = 0, len;
  const unsigned char *data = proto->output (c->session, &len);

  while (sent < ready && !c->gone) {
    ssize_t n = c->tls ? tls_send (c->tls, data + sent, ready - sent)
                       : send (c->fd, data + sent, ready - sent, MSG_NOSIGNAL);

    if (c->srv->set.stats)
      stats_send (c, n, n > 0 ? sent + (size_t) n : sent);
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
    if (!conn_lost (c))
      return false;
  }
  if (c->gone)
    sent = ready;
  if (c->srv->set.stats)
    stats_sent (c, sent);
  proto->sent (c->session, sent);
  account (c);
  return true;
}

/* One step of the TLS handshake; the watchers follow what GnuTLS waits
 * for, so a slow handshake holds up no other connection.
 */
static void
conn_handshake (struct net_conn *c)
{
  struct ev_loop *loop = c->srv->loop;
  int r = tls_handshake (c->tls);

  if (r < 0) {
    conn_tls_log (c);
    conn_free (c);
    return;
  }
  if (r == 0) {
    if (tls_wants_write (c->tls)) {
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
  c->l->proto->tls_started (c->session, tls_psk_identity (c->tls));
  if (c->srv->set.verbose)
    fprintf (stderr, "%s: connection %d: TLS, %s\n", c->srv->set.program,
             c->fd, tls_peer (c->tls));
  ev_io_stop (loop, &c->wio);
  ev_io_start (loop, &c->rio);
  /* Options sent right behind the handshake may sit inside GnuTLS. */
  ev_feed_event (loop, &c->rio, EV_READ);
}

/* The STARTTLS reply is out: what the client sends next is TLS, and so
 * is what it sent already (it should have waited for the reply).
 */
static void
conn_start_tls (struct net_conn *c)
{
  c->tls = tls_conn_new (c->fd, c->in, c->in_len,
                         (enum tls_profile) c->l->proto->tls_profile);
  c->in_len = 0;
  if (c->tls == NULL) {
    fprintf (stderr, "%s: connection %d: out of memory for a TLS session\n",
             c->srv->set.program, c->fd);
    conn_free (c);
    return;
  }
  if (c->srv->set.stats)
    tls_conn_count (c->tls, &c->srv->io);
  c->handshaking = true;
  conn_handshake (c);
}

void
net_conn_take_input (struct net_conn *c)
{
  const struct net_protocol *proto = c->l->proto;
  long used;
  size_t len;

  blocked_remove (c);
  used = proto->input (c->session, c->in, c->in_len);
  account (c);
  if (c->sched && c->l->sched->input)
    c->l->sched->input (c->sched);
  if (ev_is_active (&c->handshake) && proto->established (c->session))
    ev_timer_stop (c->srv->loop, &c->handshake);
  if (used < 0) {
    c->closing = true;
    c->in_len = 0;
    sched_stop_waiting (c);
    return;
  }
  memmove (c->in, c->in + used, c->in_len - (size_t) used);
  c->in_len -= (size_t) used;
  conn_check_end (c);
  /* A full buffer the session cannot use, with room for output and a
   * tag, and nothing of its own still to answer (the control export takes
   * no request while one runs on the storage threads), is a framing
   * error (no request is that large).
   */
  if (c->in_len == c->in_cap && c->in_cap >= proto->max_input
      && !sched_waiting (c) && !c->out_blocked && !sched_in_flight (c, false)
      && (proto->output (c->session, &len), len < NET_OUTPUT_LIMIT))
    c->closing = true;
}

void
net_conn_flush (struct net_conn *c)
{
  const struct net_protocol *proto = c->l->proto;
  struct ev_loop *loop = c->srv->loop;

  for (;;) {
    if (!conn_send (c))
      return;
    if (proto->ready (c->session) > 0 || c->closing || c->in_len == 0
        || sched_waiting (c))
      break;
    /* Requests held back by the output budget. */
    net_conn_take_input (c);
    if (proto->ready (c->session) == 0)
      break;
  }

  if (proto->ready (c->session) > 0)
    ev_io_start (loop, &c->wio);
  else {
    ev_io_stop (loop, &c->wio);
    if (c->closing && !sched_in_flight (c, false)) {
      conn_free (c);
      return;
    }
    if (proto->starttls && proto->starttls (c->session)) {
      conn_start_tls (c);
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

/* Once output has gone, the connections that wait for room try again,
 * longest waiter first, before the loop sleeps.  Past the total none
 * can be given room, so they are left alone: those waiting for their
 * own replies to go are retried by their own net_conn_flush.
 */
static void
budget_retry (struct ev_loop *loop, ev_prepare *w, int revents)
{
  struct net_server *srv = w->data;

  (void) loop;
  (void) revents;
  if (!srv->output_freed || srv->output_total >= srv->output_limit)
    return;
  srv->output_freed = false;
  for (struct net_conn *c = srv->blocked_head, *end = srv->blocked_tail, *next;
       c; c = next) {
    size_t before = c->in_len;
    bool last = c == end;

    next = c->blocked_next;
    net_conn_take_input (c);
    if (c->in_len != before || !c->out_blocked)
      net_conn_flush (c);
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
static void
busy_poll_cb (struct ev_loop *loop, ev_idle *w, int revents)
{
  struct net_server *srv = w->data;
  uint64_t now = zn_now_ns ();

  (void) revents;
  if (srv->set.stats)
    srv->busy_poll_ns += now - srv->busy_poll_start;
  if (now >= srv->busy_poll_until)
    ev_idle_stop (loop, w);
}

static void
busy_poll (struct net_server *srv)
{
  if (srv->set.busy_poll_ns == 0)
    return;
  srv->busy_poll_until = zn_now_ns () + srv->set.busy_poll_ns;
  ev_idle_start (srv->loop, &srv->busy_poll_watcher);
}

/* Room for a read: the buffer grows up to the protocol's largest unit.
 * False when the connection was freed or the buffer is full.
 */
static bool
conn_make_room (struct net_conn *c)
{
  size_t max = c->l->proto->max_input;

  if (c->in_cap - c->in_len < READ_CHUNK && c->in_cap < max) {
    size_t cap = c->in_cap ? c->in_cap * 2 : READ_CHUNK * 2;
    unsigned char *p;

    if (cap > max)
      cap = max;
    p = realloc (c->in, cap);
    if (p == NULL) {
      conn_free (c);
      return false;
    }
    c->in = p;
    c->in_cap = cap;
  }
  if (c->in_len == c->in_cap) {
    /* Full: wait for the output to drain (net_conn_flush resumes). */
    ev_io_stop (c->srv->loop, &c->rio);
    return false;
  }
  return true;
}

static void
conn_readable (struct ev_loop *loop, ev_io *w, int revents)
{
  struct net_conn *c = w->data;
  struct net_server *srv = c->srv;
  const struct listener *l = c->l;
  ssize_t n;

  (void) loop;
  (void) revents;
  if (c->handshaking) {
    conn_handshake (c);
    return;
  }
  if (!conn_make_room (c))
    return;
  n = c->tls ? tls_recv (c->tls, c->in + c->in_len, c->in_cap - c->in_len)
             : recv (c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
  if (srv->set.stats)
    stats_recv (c, n);
  if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return;
  if (n == -1 && errno == EPROTO && c->tls)
    conn_tls_log (c);
  if (n < 0) {
    conn_lost (c);
    return;
  }
  if (n == 0 && srv->set.verbose && c->tls && tls_close_notify (c->tls))
    fprintf (stderr, "%s: connection %d: the client ended TLS "
             "(close_notify)\n", srv->set.program, c->fd);
  if (n == 0 && !conn_owed (c)) {
    conn_free (c);
    return;
  }
  if (n == 0) {
    c->eof = true;
    conn_check_end (c);
    net_conn_flush (c);
  }
  else {
    c->in_len += (size_t) n;
    if (ev_is_active (&c->idle))
      ev_timer_again (loop, &c->idle);
    net_conn_take_input (c);
    net_conn_flush (c);
  }
  after_event (l);
  if (n > 0)
    busy_poll (srv);
}

static void
conn_writable (struct ev_loop *loop, ev_io *w, int revents)
{
  struct net_conn *c = w->data;
  const struct listener *l = c->l;

  (void) loop;
  (void) revents;
  if (c->handshaking) {
    conn_handshake (c);
    return;
  }
  net_conn_flush (c);
  after_event (l);
}

/* A connection that is not established within the handshake timeout
 * after it was accepted is cut off, so that clients that connect and
 * stall cannot hold the server's descriptors.  The timer covers the
 * whole handshake, whatever it consists of.
 */
static void
handshake_expired (struct ev_loop *loop, ev_timer *w, int revents)
{
  struct net_conn *c = w->data;

  (void) loop;
  (void) revents;
  if (c->srv->set.verbose)
    fprintf (stderr, "%s: connection %d: handshake not finished within "
             "%g s (--timeout), closed\n", c->srv->set.program, c->fd,
             c->srv->set.handshake_timeout);
  conn_free (c);
}

static void
idle_expired (struct ev_loop *loop, ev_timer *w, int revents)
{
  struct net_conn *c = w->data;

  (void) loop;
  (void) revents;
  fprintf (stderr, "%s: connection %d: no input for %g s (keep-alive "
           "timeout), closed\n", c->srv->set.program, c->fd, w->repeat);
  ev_timer_stop (c->srv->loop, w);
  conn_lost (c);
}

static void
abort_cb (struct ev_loop *loop, ev_timer *w, int revents)
{
  struct net_conn *c = w->data;

  (void) loop;
  (void) revents;
  if (c->srv->set.verbose)
    fprintf (stderr, "%s: connection %d closed by its protocol\n",
             c->srv->set.program, c->fd);
  conn_lost (c);
}

void
net_conn_abort (struct net_conn *c)
{
  if (c->gone)
    return;
  /* No more input meanwhile. */
  ev_io_stop (c->srv->loop, &c->rio);
  c->closing = true;
  if (!ev_is_active (&c->abort)) {
    ev_timer_set (&c->abort, 0., 0.);
    ev_timer_start (c->srv->loop, &c->abort);
  }
}

void
net_conn_abort_async (struct net_conn *c)
{
  struct net_server *srv = c->srv;

  pthread_mutex_lock (&srv->handoff_lock);
  if (!c->abort_posted) {
    c->abort_posted = true;
    c->abort_next = srv->aborts;
    srv->aborts = c;
  }
  pthread_mutex_unlock (&srv->handoff_lock);
  ev_async_send (srv->loop, &srv->handoff_wake);
}

void
net_conn_idle_timeout (struct net_conn *c, unsigned ms)
{
  ev_timer_stop (c->srv->loop, &c->idle);
  if (ms == 0)
    return;
  c->idle.repeat = ms / 1000.;
  ev_timer_again (c->srv->loop, &c->idle);
}

static void
accept_resume_cb (struct ev_loop *loop, ev_timer *w, int revents)
{
  struct listener *l = w->data;

  (void) revents;
  ev_io_start (loop, &l->watcher);
}

/* A new connection's state: its session and the scheduler's. */
static struct net_conn *
conn_new (struct listener *l, int fd)
{
  struct net_conn *c = calloc (1, sizeof *c);

  if (c == NULL)
    return NULL;
  c->srv = l->srv;
  c->l = l;
  c->fd = fd;
  if ((c->session = l->proto->open (l->arg, c)) == NULL) {
    free (c);
    return NULL;
  }
  if (l->sched && (c->sched = l->sched->open (l->sched->arg, c)) == NULL) {
    l->proto->close (c->session, c);
    free (c);
    return NULL;
  }
  return c;
}

static void conn_start (struct listener *l, int fd);

/* Gives fd to the loop of l's server, which starts it (handoff_cb). */
static void
handoff (struct listener *l, int fd)
{
  struct net_server *srv = l->srv;
  struct handoff *h = malloc (sizeof *h);

  if (h == NULL) {
    atomic_fetch_sub (&srv->load, 1);
    close (fd);
    return;
  }
  *h = (struct handoff) { .l = l, .fd = fd };
  pthread_mutex_lock (&srv->handoff_lock);
  ZN_FIFO_PUSH (srv->handoff_head, srv->handoff_tail, h, next);
  pthread_mutex_unlock (&srv->handoff_lock);
  ev_async_send (srv->loop, &srv->handoff_wake);
}

static void
handoff_cb (struct ev_loop *loop, ev_async *w, int revents)
{
  struct net_server *srv = w->data;
  struct handoff *h;
  struct net_conn *c;

  (void) loop;
  (void) revents;
  pthread_mutex_lock (&srv->handoff_lock);
  h = srv->handoff_head;
  srv->handoff_head = srv->handoff_tail = NULL;
  /* net_conn_abort frees nothing at once: the list stays valid. */
  while ((c = srv->aborts) != NULL) {
    srv->aborts = c->abort_next;
    c->abort_posted = false;
    net_conn_abort (c);
  }
  pthread_mutex_unlock (&srv->handoff_lock);
  while (h) {
    struct handoff *next = h->next;

    conn_start (h->l, h->fd);
    free (h);
    h = next;
  }
}

/* The listener, of l's peers, whose server has the fewest connections;
 * among equals the next in turn, so that connections that all stay open
 * go to the loops in turn.
 */
static struct listener *
next_peer (struct listener *l)
{
  unsigned best = 0, least = UINT_MAX;

  for (unsigned i = 0; i < l->nr_peers; i++) {
    unsigned k = (l->turn + i) % l->nr_peers;
    unsigned load = atomic_load (&l->peers[k]->srv->load);

    if (load < least) {
      least = load;
      best = k;
    }
  }
  l->turn = best + 1;
  return l->peers[best];
}

static void
accept_cb (struct ev_loop *loop, ev_io *w, int revents)
{
  struct listener *l = w->data;
  struct net_server *srv = l->srv;
  struct listener *to;
  int fd, one = 1;

  (void) revents;
  fd = accept4 (w->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd == -1) {
    if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS
        || errno == ENOMEM) {
      if (!l->failing)
        fprintf (stderr, "%s: accept: %s; new connections wait\n",
                 srv->set.program, strerror (errno));
      l->failing = true;
      ev_io_stop (loop, &l->watcher);
      ev_timer_set (&l->pause, 0.1, 0.);
      ev_timer_start (loop, &l->pause);
    }
    return;
  }
  l->failing = false;
  if (l->tcp)
    setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  to = l->peers ? next_peer (l) : l;
  atomic_fetch_add (&to->srv->load, 1);
  if (to != l)
    handoff (to, fd);
  else
    conn_start (l, fd);
}

/* Starts serving fd, accepted for l, on l's server's loop. */
static void
conn_start (struct listener *l, int fd)
{
  struct net_server *srv = l->srv;
  struct ev_loop *loop = srv->loop;
  struct net_conn *c;

  if ((c = conn_new (l, fd)) == NULL) {
    atomic_fetch_sub (&srv->load, 1);
    close (fd);
    return;
  }
  ev_io_init (&c->rio, conn_readable, fd, EV_READ);
  ev_io_init (&c->wio, conn_writable, fd, EV_WRITE);
  c->rio.data = c->wio.data = c;
  ev_timer_init (&c->handshake, handshake_expired, srv->set.handshake_timeout,
                 0.);
  c->handshake.data = c;
  ev_init (&c->idle, idle_expired);
  c->idle.data = c;
  ev_init (&c->abort, abort_cb);
  c->abort.data = c;
  if (srv->set.handshake_timeout > 0)
    ev_timer_start (loop, &c->handshake);
  c->next = srv->conns;
  if (srv->conns)
    srv->conns->prev = c;
  srv->conns = c;
  srv->nr_conns++;
  srv->nr_accepted++;
  if (srv->set.verbose)
    fprintf (stderr, "%s: connection %d accepted\n", srv->set.program, fd);
  net_conn_flush (c);           /* the greeting */
}

/* ---- the server ------------------------------------------------------------ */

struct net_server *
net_server_new (struct ev_loop *loop, const struct net_settings *set)
{
  struct net_server *srv = calloc (1, sizeof *srv);

  if (srv == NULL)
    return NULL;
  srv->loop = loop;
  srv->set = *set;
  srv->output_limit = OUTPUT_TOTAL_LIMIT / (set->loops > 1 ? set->loops : 1);
  pthread_mutex_init (&srv->handoff_lock, NULL);
  ev_async_init (&srv->handoff_wake, handoff_cb);
  srv->handoff_wake.data = srv;
  ev_async_start (loop, &srv->handoff_wake);
  ev_idle_init (&srv->busy_poll_watcher, busy_poll_cb);
  srv->busy_poll_watcher.data = srv;
  ev_prepare_init (&srv->budget_watcher, budget_retry);
  srv->budget_watcher.data = srv;
  ev_prepare_start (loop, &srv->budget_watcher);
  ev_prepare_init (&srv->stats_watcher, stats_prepare);
  srv->stats_watcher.data = srv;
  if (set->stats)
    ev_prepare_start (loop, &srv->stats_watcher);
  return srv;
}

int
net_serve (struct net_server *srv, int fd, bool tcp,
           const struct net_protocol *proto, void *arg,
           const struct net_sched *sched)
{
  struct listener *l = calloc (1, sizeof *l);

  if (l == NULL)
    return -1;
  *l = (struct listener) {
    .srv = srv, .fd = fd, .tcp = tcp, .proto = proto, .arg = arg,
    .sched = sched, .next = srv->listeners,
  };
  srv->listeners = l;
  ev_io_init (&l->watcher, accept_cb, fd, EV_READ);
  l->watcher.data = l;
  ev_init (&l->pause, accept_resume_cb);
  l->pause.data = l;
  if (fd != -1)
    ev_io_start (srv->loop, &l->watcher);
  return 0;
}

int
net_serve_spread (struct net_server **srvs, unsigned n, int fd, bool tcp,
                  const struct net_protocol *proto, void *arg,
                  const struct net_sched *sched)
{
  struct listener **peers;

  if (n == 1)
    return net_serve (srvs[0], fd, tcp, proto, arg, sched);
  if ((peers = calloc (n, sizeof *peers)) == NULL)
    return -1;
  for (unsigned i = n; i-- > 0; ) {
    if (net_serve (srvs[i], i ? -1 : fd, tcp, proto, arg, sched) == -1) {
      free (peers);
      return -1;
    }
    peers[i] = srvs[i]->listeners;
  }
  peers[0]->peers = peers;
  peers[0]->nr_peers = n;
  return 0;
}

void
net_server_free (struct net_server *srv)
{
  if (srv == NULL)
    return;
  ev_async_stop (srv->loop, &srv->handoff_wake);
  /* Handed over but not started: the loop that accepted them is
   * stopped.
   */
  while (srv->handoff_head) {
    struct handoff *h = srv->handoff_head;

    srv->handoff_head = h->next;
    close (h->fd);
    free (h);
  }
  ev_idle_stop (srv->loop, &srv->busy_poll_watcher);
  ev_prepare_stop (srv->loop, &srv->budget_watcher);
  ev_prepare_stop (srv->loop, &srv->stats_watcher);
  /* Connections first: each closes through its listener's protocol. */
  while (srv->conns)
    conn_free (srv->conns);
  pthread_mutex_destroy (&srv->handoff_lock);
  while (srv->listeners) {
    struct listener *l = srv->listeners;

    srv->listeners = l->next;
    ev_io_stop (srv->loop, &l->watcher);
    ev_timer_stop (srv->loop, &l->pause);
    if (l->fd != -1)
      close (l->fd);
    free (l->peers);
    free (l);
  }
  free (srv);
}

unsigned long
net_server_accepted (const struct net_server *srv)
{
  return srv->nr_accepted;
}

void *
net_conn_session (const struct net_conn *c)
{
  return c->session;
}

void *
net_conn_sched (const struct net_conn *c)
{
  return c->sched;
}

int
net_conn_fd (const struct net_conn *c)
{
  return c->fd;
}

const char *
net_conn_program (const struct net_conn *c)
{
  return c->srv->set.program;
}
