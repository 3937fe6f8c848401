/* SPDX-License-Identifier: BSD-3-Clause */
/* The connection layer: any byte-stream protocol served from a libev
 * loop, on TCP or Unix sockets, with or without TLS.
 *
 * The layer owns the sockets, each connection's input and output
 * buffers, the output budget shared by all connections, the handshake
 * timeout, the upgrade to TLS and the draining of a connection whose
 * client went away.  A protocol is a session per connection behind
 * struct net_protocol: bytes in, replies out.  A program that schedules
 * requests (tags, timers, bandwidth) adds struct net_sched; its admission
 * decisions reach the session through the protocol's own hooks.
 *
 * Each listening socket carries one protocol, so protocols sit side by
 * side on different ports of one server.
 */
#ifndef ZONEDNULL_NET_CONN_H
#define ZONEDNULL_NET_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ev.h>

struct net_server;
struct net_conn;

/* A protocol's session on one connection. */
struct net_protocol {
  /* A session for connection c; NULL when out of memory. */
  void *(*open) (void *arg, struct net_conn *c);
  void (*close) (void *session, struct net_conn *c);
  /* Consumes a prefix of the len bytes at data; returns how many (the
   * rest is offered again with more appended), or -1: close once the
   * output is sent and nothing is in flight.
   */
  long (*input) (void *session, const unsigned char *data, size_t len);
  /* The output queued (*len bytes), and how much of it may go now. */
  const unsigned char *(*output) (void *session, size_t *len);
  size_t (*ready) (const void *session);
  void (*sent) (void *session, size_t n);
  /* What the session holds for its client, as the output budget counts
   * it: its output, with replies held for their completion and the
   * buffers of data it asked the client for.  NULL: the output.
   */
  size_t (*holds) (const void *session);
  /* An upgrade to TLS was acknowledged (or, for NVMe/TCP, TLS comes
   * first): once the output is sent, the layer runs the TLS handshake
   * with the credentials of tls_profile (tls.h's enum tls_profile) and
   * calls tls_started, with the PSK identity the peer used, raw (NULL
   * without one).  NULL: never.
   */
  bool (*starttls) (const void *session);
  void (*tls_started) (void *session, const char *psk_identity);
  int tls_profile;
  /* The handshake is over: the handshake timeout no longer applies. */
  bool (*established) (const void *session);
  /* The largest unit of input: a full buffer of this size that the
   * session cannot use is a framing error.
   */
  size_t max_input;
};

/* A program's scheduling of requests; every hook gets the state its open
 * returned for the connection.
 */
struct net_sched {
  void *(*open) (void *arg, struct net_conn *c);   /* NULL: out of memory */
  void (*close) (void *st);
  /* After the session took input; may be NULL. */
  void (*input) (void *st);
  /* The connection's next request waits for a tag or bandwidth (not for
   * output room, which is the layer's own): reading on would not help.
   * May be NULL, with stop_waiting: nothing ever waits.
   */
  bool (*waiting) (const void *st);
  /* The client is gone or broke the protocol: it waits no more.  May be
   * NULL.
   */
  void (*stop_waiting) (void *st);
  /* Requests the client sent are still to be carried out; input_left:
   * received requests not started yet.
   */
  bool (*in_flight) (const void *st, bool input_left);
  /* After every socket event (the scheduler retries what waits). */
  void (*after_event) (void *arg);
  void *arg;
};

struct net_settings {
  const char *program;          /* names the messages */
  bool verbose;                 /* log connections */
  double handshake_timeout;     /* seconds to get established; 0: none */
  uint64_t busy_poll_ns;        /* poll without sleeping after input */
  bool stats;                   /* count (net_server_print_stats) */
  unsigned loops;               /* servers whose loops share the output
                                   budget; 0 counts as 1 */
  unsigned loop_id;             /* this one's number, in its stats line */
};

struct net_server *net_server_new (struct ev_loop *loop,
                                   const struct net_settings *set);

/* Serves proto (its open gets arg) on the listening socket fd, which the
 * server then owns.  tcp: set TCP_NODELAY on each connection.  -1 when
 * out of memory.
 */
int net_serve (struct net_server *srv, int fd, bool tcp,
               const struct net_protocol *proto, void *arg,
               const struct net_sched *sched);

/* Serves proto on fd as net_serve does, the connections spread over the
 * n servers in turn, each on its own loop: srvs[0] accepts them and owns
 * fd, and gives every other to the next server's loop.  -1 when out of
 * memory.
 */
int net_serve_spread (struct net_server **srvs, unsigned n, int fd, bool tcp,
                      const struct net_protocol *proto, void *arg,
                      const struct net_sched *sched);

/* Closes every connection and listening socket. */
void net_server_free (struct net_server *srv);

/* Connections accepted so far. */
unsigned long net_server_accepted (const struct net_server *srv);

/* With net_settings.stats: prints the counters since the start as one
 * line on stderr, "PROGRAM: stats: key=value ..." (zonednull-server(8),
 * --stats, says what each key counts).
 */
void net_server_print_stats (const struct net_server *srv);

/* Listening sockets.  what names the option in the message put in err
 * (e.g. "-U"); a stale Unix socket is replaced, another file never.
 */
int net_listen_unix (const char *path, const char *what,
                     char *err, size_t errlen);
int net_listen_tcp (const char *addr, const char *port,
                    char *err, size_t errlen);

/* ---- for the protocol's and the scheduler's hooks ---- */

void *net_conn_session (const struct net_conn *c);
int net_conn_fd (const struct net_conn *c);   /* names it in messages */
const char *net_conn_program (const struct net_conn *c);
void *net_conn_sched (const struct net_conn *c);

/* Offers the buffered input to the session again (what waited for a tag
 * or bandwidth).
 */
void net_conn_take_input (struct net_conn *c);

/* Sends what is ready, takes input the output budget held back, and
 * closes a connection that is done: c may be gone afterwards.
 */
void net_conn_flush (struct net_conn *c);

/* Closes connection c, as if its client had gone, once the current
 * event is over (so that a session may close another connection from
 * its own hooks): requests in flight still complete, their replies
 * dropped.
 */
void net_conn_abort (struct net_conn *c);
/* As net_conn_abort, from any thread, c's loop's or another's: c's own
 * loop closes it.  The caller must know c open until the call returns
 * (its session's close, which runs first when c closes, not over).
 */
void net_conn_abort_async (struct net_conn *c);

/* Closes connection c, as net_conn_abort, after ms milliseconds without
 * input from its client (a protocol's keep-alive timeout); 0: never.
 */
void net_conn_idle_timeout (struct net_conn *c, unsigned ms);

/* The output budget, as a session's admission hook: may connection c
 * (the session's owner) take a request whose reply is at most reply
 * bytes, with queued bytes of output held?  When not, the layer offers
 * the input again once output has gone.
 */
bool net_room (void *c, size_t queued, size_t reply);

/* As net_room, but only asks: the connection is read on, and not
 * offered its input again for this.  For a session that must go on
 * reading to free what it holds (NVMe/TCP's data after an R2T).
 */
bool net_fits (void *c, size_t queued, size_t more);

/* With net_settings.stats, a session's struct served_stats
 * (proto/served.h): when the input it takes arrived, and a request's
 * reply queued, timed when its last byte is sent.
 */
uint64_t net_stats_arrival (void *c);
void net_stats_reply (void *c, uint64_t arrival, size_t end);

/* Output a connection may always hold: a session keeps its own queue
 * under this when nothing else bounds it.
 */
#define NET_OUTPUT_LIMIT (32 * 1024 * 1024)

/* A session's output buffer, once drained, may be kept up to this size
 * (a connection's whole queue) and is freed past it.  One freed at each
 * drain costs a munmap, and its next growth mremaps and faults the pages
 * in again; with several loops each munmap also interrupts the CPUs
 * running the others (a TLB shootdown).  With 128 KiB reads two loops
 * were slower than one while buffers past 1 MiB were freed, and one
 * connection at depth 64 lost three quarters of its reads while those
 * past 4 MiB were (bench/README.md, "Large reads, and output buffers
 * kept").
 */
#define NET_OUTPUT_KEEP NET_OUTPUT_LIMIT
/* A drained buffer up to this size is always kept (part of the 1 MiB per
 * connection zonednull-server(8) allows); past it, up to NET_OUTPUT_KEEP,
 * only while all of a program's sessions together keep no more than
 * NET_OUTPUT_KEPT_MAX beyond it: a peer can make us keep a buffer, so
 * what is kept is bounded like what is queued (proto/park.h).
 */
#define NET_OUTPUT_KEEP_ALWAYS (1024 * 1024)
#define NET_OUTPUT_KEPT_MAX (64 * 1024 * 1024)

#endif
