/* SPDX-License-Identifier: BSD-3-Clause */
/* One NBD connection, as a byte-stream state machine: the protocol of
 * zonednull-server and of zonednull-ublk's control socket.
 *
 * No sockets here: the connection layer (net/conn.h, through
 * nbd_protocol) feeds what it reads and sends what the session queued.
 * That keeps the protocol testable and fuzzable without a network
 * (proto/nbd/fuzz-session.c).
 */
#ifndef ZONEDNULL_PROTO_NBD_SESSION_H
#define ZONEDNULL_PROTO_NBD_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conn.h"
#include "served.h"
#include "tls.h"

struct nbd_session;

/* What every connection of the server shares. */
struct served {
  const char *program;          /* names the messages it prints */
  struct served_device *devices;
  unsigned nr_devices;
  bool readonly;                /* -r: no write, trim or control command */
  enum tls_mode tls;            /* --tls: STARTTLS off, allowed or needed */
  /* Asked before each data request, and told once it ran (served.h);
   * NULL admits everything, and sends every reply at once.
   */
  admit_fn *admit;
  finish_fn *finish;
  /* Offered each data request of a device that runs (served.h); NULL:
   * every request runs in nbd_session_input.
   */
  offload_fn *offload;
  /* Asked before each request of the transmission phase, with the bytes
   * of output the session holds and a bound on the request's reply: true
   * to take it, false to stop nbd_session_input there (the request is offered
   * again later).  NULL: only NBD_SESSION_OUTPUT_LIMIT applies.  net_room
   * is the connection layer's output budget.
   */
  bool (*room) (void *owner, size_t queued, size_t reply);
  /* --stats: each request of the transmission phase is timed from its
   * arrival to its reply (served.h); NULL: not.
   */
  const struct served_stats *stats;
};

/* Bytes waiting to be sent: len from data on, with room for cap.  What
 * was sent stays before data, in the allocation at base, until the room
 * is wanted: moving the rest down after every partial send copied a
 * multi-megabyte queue again and again.
 */
struct outbuf {
  unsigned char *data;
  size_t len, cap;
  unsigned char *base;
};

/* owner is passed to sv->admit. */
struct nbd_session *nbd_session_new (const struct served *sv, void *owner);
void nbd_session_free (struct nbd_session *s);

/* nbd_session_input stops taking requests once this much output is queued, so
 * that a client sending many large reads without reading the replies
 * cannot make the server buffer without bound.  One reply can add up to
 * the 32 MiB maximum request on top; served.room, when set, bounds it
 * more tightly.
 */
#define NBD_SESSION_OUTPUT_LIMIT NET_OUTPUT_LIMIT

/* Consumes a prefix of the len bytes at data and queues the replies.
 * Returns how many bytes were consumed (the rest must be offered again
 * with more data appended), or -1 when the connection must be closed
 * after the queued output is sent: the client disconnected, aborted, or
 * broke the protocol.  After NBD_CMD_DISC, replies still held wait for
 * nbd_session_complete_one and parked writes for nbd_session_resume as before,
 * since they must be answered first; otherwise all output is ready.
 */
long nbd_session_input (struct nbd_session *s, const unsigned char *data,
                        size_t len);

/* The replies queued so far, the ones still held (irqmode=2) at the end. */
struct outbuf *nbd_session_output (struct nbd_session *s);

/* How many bytes at the start of the output may be sent now. */
size_t nbd_session_ready (const struct nbd_session *s);

/* What the session holds for its client, as the output budget counts
 * it: the output and the replies delayed by the fault settings.
 */
size_t nbd_session_holds (const struct nbd_session *s);

/* The caller sent the first n ready bytes. */
void nbd_session_sent (struct nbd_session *s, size_t n);

/* With delayed replies: releases the reply of the oldest admitted request
 * (it completed); returns false when none is held.
 */
bool nbd_session_complete_one (struct nbd_session *s);

/* Runs the parked request id (or, with err, fails it with that negative
 * errno) and queues its reply as served.finish says.
 */
void nbd_session_resume (struct nbd_session *s, uint64_t id, int err);

/* Releases the reply delayed under id (REPLY_DELAYED). */
void nbd_session_release (struct nbd_session *s, uint64_t id);

/* After an acknowledged NBD_OPT_STARTTLS: nbd_session_input consumed nothing
 * beyond it, and the caller must send the output in the clear, run the
 * TLS handshake on the bytes that follow, then call nbd_session_tls_started.
 */
bool nbd_session_starttls (const struct nbd_session *s);
void nbd_session_tls_started (struct nbd_session *s);

/* Options refused with NBD_REP_ERR_TLS_REQD (or EXPORT_NAME dropped) under
 * --tls=require, for the log.
 */
unsigned nbd_session_tls_refused (const struct nbd_session *s);

/* The device chosen, once in the transmission phase (NULL before), and
 * whether its control export was chosen.
 */
const struct served_device *nbd_session_device (const struct nbd_session *s,
                                            bool *control);

/* The session as the connection layer's protocol; its open takes the
 * struct served.
 */
extern const struct net_protocol nbd_protocol;

/* The session's side of the scheduler (served.h). */
extern const struct sched_session_ops nbd_sched_ops;

#endif
