/* SPDX-License-Identifier: BSD-3-Clause */
/* One NVMe/TCP connection (an admin or I/O queue of a controller, or a
 * discovery controller's admin queue) as a byte-stream state machine:
 * PDUs in, PDUs queued out.  zonednull-server's second protocol, beside
 * NBD.
 *
 * No sockets here: the connection layer (net/conn.h, through
 * nvme_protocol) feeds what it reads and sends what the session queued,
 * so the protocol is tested and fuzzed without a network
 * (tests/nvme/test-nvme-session-*.c, proto/nvme/fuzz-session.c).
 *
 * The subsystem has one namespace per served device: nullbN is
 * namespace N+1.  Its controllers live in a registry shared by every
 * session of the process, whichever thread serves it.
 */
#ifndef ZONEDNULL_PROTO_NVME_SESSION_H
#define ZONEDNULL_PROTO_NVME_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "served.h"

struct nvme_session;
struct nvme_host_secret;

/* The largest NQN, without its terminating NUL (NVMe base spec). */
#define NVME_NQN_MAX 223

/* What every NVMe/TCP connection of the server shares. */
struct nvme_served {
  const char *program;          /* names the messages */
  bool verbose;                 /* log controllers and refusals */
  struct served_device *devices;
  unsigned nr_devices;
  bool readonly;                /* -r: writes fail, namespaces read-only */
  /* As struct served's (proto/nbd/session.h): admission of each data
   * request, and the output budget; NULL admits everything.  Every
   * command, failing or not, waits for room for its largest reply
   * before it is carried out, and each R2T for room for its PDU and
   * its data's buffer: queued is all the session holds
   * (nvme_session_holds).  finish: told once each admitted command ran,
   * it says where the reply goes; NULL: out at once.
   */
  admit_fn *admit;
  finish_fn *finish;
  /* Takes the commands of a namespace whose device is marked offload
   * that may wait for its disk (served.h); NULL: each runs at once.
   */
  offload_fn *offload;
  bool (*room) (void *owner, size_t queued, size_t reply);
  /* As room, but without stopping the input (net_fits): asked for an
   * R2T while others are in flight, whose data must still be read.
   */
  bool (*fits) (void *owner, size_t queued, size_t more);
  /* Closes the connection owner (another session's), once the current
   * event is over: a controller's I/O queues go with its admin queue.
   * Called from the admin queue's thread, which may be another than
   * owner's, while owner's session is still open.
   */
  void (*abort) (void *owner);
  /* The connection owner is closed after ms without input (0: never):
   * the keep-alive timeout of a controller's admin queue.
   */
  void (*idle_timeout) (void *owner, unsigned ms);
  /* --stats: each command is timed from its arrival to its reply
   * (served.h); NULL: not.
   */
  const struct served_stats *stats;
  char subnqn[NVME_NQN_MAX + 1];
  /* --nvme-allow-host: the host NQNs that may connect to the subsystem;
   * none: any host.
   */
  const char *const *allowed_hosts;
  unsigned nr_allowed_hosts;
  /* --nvme-host: the hosts that may connect to the subsystem, each with
   * its DH-HMAC-CHAP secret, which it must prove on every queue (auth.h).
   * With --nvme-allow-host too, a host must be on both lists.  Whether
   * hosts must authenticate is auth_required, set when the option was
   * given, never read from the number of hosts: a list left empty by a
   * mistake must let no one in.
   */
  bool auth_required;
  const struct nvme_host_secret *hosts;
  unsigned nr_hosts;
  /* TLS on the port (--tls with --nvme-tls-key): none, allowed (a host
   * that opens with a TLS record gets TLS, one that opens with an ICReq
   * the clear text) or required (TLS from the first byte, so a clear
   * ICReq fails the handshake, as on nvmet's port with TREQ "required").
   * The discovery log says which, and on a TLS queue Connect must name
   * the host and subsystem of the PSK identity.
   */
  enum { NVME_TLS_NONE, NVME_TLS_ALLOWED, NVME_TLS_REQUIRED } tls;
  /* The port the discovery log page lists. */
  char traddr[64];
  char trsvcid[32];
  bool ipv6;
  /* I/O queues per controller (submit_queues) and their depth
   * (hw_queue_depth).
   */
  unsigned max_queues;
  unsigned queue_depth;
};

/* The default subsystem NQN: nqn.2026-12.org.zonednull:HOST:PORT, unique
 * per server, so that two servers are two subsystems on one host.
 */
void nvme_default_nqn (char *nqn, size_t len, const char *port);

/* owner is the connection, passed to the hooks of sv. */
struct nvme_session *nvme_session_new (const struct nvme_served *sv,
                                       void *owner);
void nvme_session_free (struct nvme_session *s);

/* Consumes a prefix of the len bytes at data (whole PDUs) and queues the
 * replies.  Returns how many bytes were consumed, or -1 when the
 * connection must be closed once the queued output is sent (a
 * C2HTermReq, or the host's H2CTermReq).
 */
long nvme_session_input (struct nvme_session *s, const unsigned char *data,
                         size_t len);

/* The output queued, and how many of its first bytes may go now (the
 * rest is held for complete_one, irqmode=2).
 */
const unsigned char *nvme_session_output (struct nvme_session *s,
                                          size_t *len);
size_t nvme_session_ready (const struct nvme_session *s);
/* What the session holds for its host, as the output budget counts it:
 * the output, the replies held for complete_one or delayed, the
 * buffers of the writes granted an R2T, and the data of the commands on
 * the program's workers.
 */
size_t nvme_session_holds (const struct nvme_session *s);
void nvme_session_sent (struct nvme_session *s, size_t n);

bool nvme_session_complete_one (struct nvme_session *s);
void nvme_session_resume (struct nvme_session *s, uint64_t id, int err);
void nvme_session_release (struct nvme_session *s, uint64_t id);

/* The connection layer should run the TLS handshake now (the port
 * requires it, or the host opened with a TLS record).
 */
bool nvme_session_starttls (const struct nvme_session *s);
/* The handshake succeeded with this PSK identity (raw). */
void nvme_session_tls_started (struct nvme_session *s,
                               const char *psk_identity);

/* Past Connect: the session is a controller's queue. */
bool nvme_session_connected (const struct nvme_session *s);
/* Past Connect and, where its controller's host has a secret, past
 * authentication: the handshake timeout covers both.
 */
bool nvme_session_established (const struct nvme_session *s);

/* The largest PDU a host may send: an H2CData of MAXH2CDATA, or a
 * command capsule with the most in-capsule data, with digests.
 */
#define NVME_MAX_H2C_DATA (128 * 1024)
#define NVME_MAX_PDU (NVME_MAX_H2C_DATA + 64)

/* The session as the connection layer's protocol (its open takes the
 * struct nvme_served), and its side of the scheduler.
 */
struct net_protocol;
extern const struct net_protocol nvme_protocol;
extern const struct sched_session_ops nvme_sched_ops;

#endif
