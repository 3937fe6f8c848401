/* SPDX-License-Identifier: BSD-3-Clause */
/* What a protocol's session and the program serving it share: the
 * devices, and the admission of data requests by the program's scheduler
 * (tags, timers, bandwidth, parked writes).  NBD and NVMe/TCP sessions
 * both speak it, so one scheduler serves both.
 */
#ifndef ZONEDNULL_PROTO_SERVED_H
#define ZONEDNULL_PROTO_SERVED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct zn_dev;
struct zn_control;
struct zn_queues;

/* One device: exports nullbN and nullbN/control. */
struct served_device {
  char name[16];
  char control_name[32];
  struct zn_dev *dev;
  struct zn_control *ctl;
  struct zn_queues *qs;         /* the transport's, for its tags */
  bool offload;                 /* its requests may wait for a disk: the
                                   program's offload_fn takes them */
};

/* A data request (read, write, flush or trim of a device) about to start.
 * id numbers the session's requests, so that a parked write can be
 * resumed by it.
 */
struct data_request {
  uint64_t id;
  const struct served_device *dev;
  bool write;
  uint64_t offset;
  uint32_t count;
  uint64_t bytes;               /* moved: a read's or write's count */
};

/* How admit answers a data request. */
enum admit_outcome {
  ADMIT_NOW,                    /* start it: it took a tag */
  ADMIT_LATER,                  /* not now: the session stops taking input
                                   here and offers it again later */
  ADMIT_PARK,                   /* a write that waits for its zone's write
                                   pointer, with its tag: the session keeps
                                   it aside and goes on; resume applies it */
};

struct admission {
  enum admit_outcome outcome;
  int err;                      /* with ADMIT_NOW: 0, or the negative errno
                                   the request fails with */
};

/* Asked before each data request.  owner is the connection the session
 * was opened for.
 */
typedef struct admission admit_fn (void *owner, void *session,
                                   const struct data_request *rq);

/* What a request came to under the fault settings (model/fault.h), as
 * the session tells the program once it ran it.
 */
enum finish_outcome {
  FINISH_ANSWERED,              /* its reply is queued */
  FINISH_TIMED_OUT,             /* no reply, ever; it keeps its tag until
                                   the connection ends */
  FINISH_REQUEUED,              /* no reply yet: the session parked it, and
                                   resume runs it again */
};

/* Where the reply just queued goes. */
enum reply_hold {
  REPLY_NOW,                    /* out with the rest of the output */
  REPLY_HELD,                   /* held for complete_one (irqmode=2) */
  REPLY_DELAYED,                /* held under the request's id for release */
};

/* Told after each request admitted with ADMIT_NOW, and each resumed, has
 * run: with tagged, the request that took the tag of the latest admission
 * or resume; without, a control-channel request that took none.
 * delay_ns: its answer is due that long after it was admitted.
 */
typedef enum reply_hold finish_fn (void *owner, uint64_t id, bool tagged,
                                   enum finish_outcome outcome,
                                   uint64_t delay_ns);

/* A request's storage work, which the program may run off its event
 * loop (offload_fn): run touches only the job and its device, never the
 * session, which may be gone by then; done then answers on the loop's
 * thread, with the session, or with NULL when its connection closed,
 * when it only frees the job.  Jobs of the same nonzero key run one at a
 * time, in the order they were offloaded (a zone's writes and resets);
 * key 0 in any order (reads, flushes).
 */
struct served_job {
  const struct served_device *dev;
  uint64_t key;
  bool untagged;                /* not admitted (a zone report): it holds
                                   no tag and no write-log entry */
  void (*run) (struct served_job *job);
  void (*done) (void *session, struct served_job *job);
  /* May be NULL.  Runs the job at once, on the loop, when it waits for
   * no disk (a write into the page cache): true; or false, having
   * changed nothing.  The program tries it only when no job of the same
   * key is in flight, and then calls done at once.
   */
  bool (*try_run) (struct served_job *job);
  /* Set for a flush of the device.  A flush covers the writes completed
   * before it begins, so flushes that wait to begin together may be run
   * once: the program runs one of them and calls share for each of the
   * others, with the one that ran, before it calls their done.
   */
  void (*share) (struct served_job *job, const struct served_job *ran);
};

/* Asked, for a request of a device marked offload just admitted or
 * resumed (the one finish would be told of), instead of running job->run
 * at once: true when the program took it, and will call job->done and,
 * through it, finish later; false: the session runs it now.
 */
typedef bool offload_fn (void *owner, struct served_job *job);

/* The session's side of the scheduler, one per protocol: the scheduler
 * calls these for a connection's session.
 */
struct sched_session_ops {
  /* Releases the reply held for the oldest admitted request (irqmode=2);
   * false when none is held.
   */
  bool (*complete_one) (void *session);
  /* Runs the parked request id (a write that waited for its write
   * pointer, or a request requeued), or fails it with err (a negative
   * errno), and tells finish as after an admission.
   */
  void (*resume) (void *session, uint64_t id, int err);
  /* Releases the reply held under id (REPLY_DELAYED). */
  void (*release) (void *session, uint64_t id);
  /* Bytes of output that may be sent now. */
  size_t (*ready) (const void *session);
  /* The session takes data requests (past its handshake): input it
   * holds then is requests in flight.
   */
  bool (*serving) (const void *session);
  /* The one device the connection serves, once known (an NBD export, so
   * that the connection counts on its queue from then); NULL: each
   * request names its own (NVMe/TCP namespaces).  May be NULL.
   */
  const struct served_device *(*device) (const void *session);
};

/* --stats: the connection layer times each request from its arrival to
 * the send that carries the last byte of its reply (net_stats_arrival,
 * net_stats_reply in net/conn.h).  A session with none (NULL) skips all
 * of it.
 */
struct served_stats {
  /* When the input the session is taking arrived: CLOCK_MONOTONIC, ns. */
  uint64_t (*arrival) (void *owner);
  /* A request's whole reply is in the session's output, its last byte
   * end bytes past the first one not sent; arrival: its request's, 0 for
   * a reply not timed.
   */
  void (*reply) (void *owner, uint64_t arrival, size_t end);
};

#endif
