/* SPDX-License-Identifier: BSD-3-Clause */
/* zonednull-ublk: what every hardware queue does on the ublk side,
 * whichever kind serves its requests (in-process from the model,
 * queue-local.c; from a remote server, queue-remote.c): its thread and
 * io_uring on /dev/ublkcN, the mapping of its descriptors, FETCH_REQ for every tag
 * and COMMIT_AND_FETCH_REQ, the stop poll, timers, the user copy of a
 * request's data, and the handshake that tells the main thread the
 * fetches are in.  A queue kind embeds a struct zu_ring and says through
 * zu_ring_ops only how it serves a request and what else it waits for.
 */
#ifndef ZONEDNULL_UBLK_RING_H
#define ZONEDNULL_UBLK_RING_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <liburing.h>

#include "model/queue.h"
#include "model/zoned.h"
#include "ublk-abi.h"

/* What all queues of the device share. */
struct zu_device {
  struct zn_dev *dev;
  const struct zn_geometry *geo;
  struct zn_queues *qs;
  bool timed;                   /* irqmode=2 with a delay */
  int cdev_fd;                  /* /dev/ublkcN */
  int stop_fd;                  /* eventfd: readable once the queues stop */
  int release_fd;               /* eventfd: readable once requests held
                                   for ever must end (the stop's start) */
  unsigned nr_queues, depth;
  size_t buf_bytes;             /* the largest request's data */
  /* Queues report here once their fetches are submitted (or failed). */
  pthread_mutex_t lock;
  pthread_cond_t cond;
  unsigned nr_ready;
  int error;                    /* the first queue's failure, -errno */
  char error_msg[256];          /* ... and what failed, naming the queue */
  /* Requests served, by ublk operation (op_flags & 0xff), for the line
   * printed at exit: the one way to see, say, that btrfs wrote with zone
   * appends.
   */
  atomic_ullong served[ZU_NR_OPS];
  /* --connect only (queue-remote.c): the request timeout, how long a
   * queue tries to reconnect to the same device, and whether the server
   * was lost for good (then every request fails with EIO).
   */
  unsigned timeout_s;
  unsigned reconnect_s;         /* --reconnect: 0, the loss is final */
  uint64_t generation;          /* the device's, from the server */
  atomic_bool dead;
  uint32_t dev_id;
  bool stats;                   /* --stats: each ring counts (zu_ring_stats) */
};

/* "N reads, M writes, ..." of the operations served, into buf. */
void zu_served_summary (struct zu_device *d, char *buf, size_t len);

/* Waits until every started queue made its ring and submitted its
 * fetches; 0, or -errno with the first failure's message in err.
 */
int zu_queues_wait_ready (struct zu_device *d, unsigned nr_started,
                          char *err, size_t errlen);

/* The errno a model or server result becomes in the ublk result, chosen
 * so that the application sees what it would see on null_blk.
 */
int zu_block_errno (int err);

/* Bytes of data the request carries: those of a read, write or zone
 * append, 0 for the rest.
 */
uint64_t zu_data_bytes (const struct zu_io_desc *iod);

/* What a CQE is about: the kind in the top byte, the tag below. */
#define ZU_UD(kind, tag) ((uint64_t) (kind) << 56 | (tag))
#define ZU_UD_KIND(ud) ((unsigned) ((ud) >> 56))
#define ZU_UD_TAG(ud) ((unsigned) ((ud) & 0xffff))
enum {
  ZU_UD_IO = 0,                 /* a fetch or commit-and-fetch came back */
  ZU_UD_STOP = 1,               /* stop_fd became readable */
  ZU_UD_OWN = 2,                /* the first kind a queue kind defines */
};

struct zu_ring;

/* --stats: what a queue's thread did.  The thread alone writes them;
 * the main thread reads them at SIGUSR1, hence atomics, relaxed.
 */
struct zu_ring_stats {
  atomic_ullong enters;         /* io_uring_submit{,_and_wait} calls */
  atomic_ullong cqes;           /* CQEs reaped */
  atomic_ullong requests;       /* COMMIT_AND_FETCH_REQs submitted */
  /* From the FETCH or COMMIT completion that brought a request being
   * reaped to the submission of its COMMIT_AND_FETCH_REQ.
   */
  atomic_ullong commit_ns_sum, commit_ns_max;
  /* --connect: data requests from their nbd_aio_* call to the reply. */
  atomic_ullong nbd_requests, nbd_ns_sum, nbd_ns_max;
};

struct zu_ring_ops {
  /* In the thread, before the first submission: the kind's own standing
   * SQEs (NULL: none).
   */
  void (*arm) (struct zu_ring *r);
  /* The kernel handed over a request: r->descs[tag] says what it is.
   * The kind ends it with zu_ring_commit, now or later.
   */
  void (*request) (struct zu_ring *r, unsigned tag);
  /* A CQE of a kind from ZU_UD_OWN on (NULL: there are none). */
  void (*cqe) (struct zu_ring *r, const struct io_uring_cqe *cqe);
  /* After each batch of CQEs (NULL: nothing to do). */
  void (*batch) (struct zu_ring *r);
};

struct zu_ring {
  /* Set by the queue kind before zu_ring_open. */
  struct zu_device *d;
  unsigned id;
  /* The kernel's descriptors, by tag. */
  struct zu_io_desc *descs;
  /* Set to leave the loop (the thread then returns). */
  bool done;
  /* ring.c's own. */
  struct io_uring ring;
  unsigned entries;
  bool ring_ready;
  size_t descs_len;
  unsigned dead_tags;
  const struct zu_ring_ops *ops;
  pthread_t thread;
  bool thread_started;
  /* --stats: the counts, when the last wait for CQEs returned, when each
   * tag's request was reaped, and the tags committed since the last
   * submission.
   */
  struct zu_ring_stats stats;
  uint64_t reaped_ns;
  uint64_t *request_ns;
  unsigned *committing;
  unsigned nr_committing;
};

/* Maps the descriptors of queue r->id and sizes the ring for nr_sqes
 * SQEs, the most the kind keeps outstanding; the thread makes the ring
 * itself (zu_ring_start).  0, or -1 with a message; either way
 * zu_ring_close undoes it.
 */
int zu_ring_open (struct zu_ring *r, unsigned nr_sqes, char *err,
                  size_t errlen);

/* Starts the thread, which makes its ring, fetches every tag, arms the
 * stop poll and then serves through ops until the device stops.  0, or
 * -1 with a message; the thread's own failures come through
 * zu_queues_wait_ready.
 */
int zu_ring_start (struct zu_ring *r, const struct zu_ring_ops *ops,
                   char *err, size_t errlen);

/* Waits for the thread, if it was started; with --stats, then prints
 * its counts (zu_ring_print_stats).
 */
void zu_ring_join (struct zu_ring *r);

/* --stats: "zonednull-ublk: stats: queue=Q key=value ..." on stderr, with
 * the NBD round trips too if nbd.
 */
void zu_ring_print_stats (struct zu_ring *r, bool nbd);

/* Closes the ring (which cancels the fetches the kernel still holds)
 * and unmaps the descriptors; again is harmless.
 */
void zu_ring_close (struct zu_ring *r);

/* ---- in the thread -------------------------------------------------- */

/* The next SQE, submitting what is queued if the SQ is full. */
struct io_uring_sqe *zu_ring_sqe (struct zu_ring *r);

/* Ends the request of tag with result (bytes, 0 or -errno; addr the
 * sector a zone append landed at) and fetches the tag's next one.
 */
void zu_ring_commit (struct zu_ring *r, unsigned tag, int result,
                     uint64_t addr);

/* An io_uring timeout (flags: 0 or IORING_TIMEOUT_ABS); *ts is read at
 * submission, so it must live until then.
 */
void zu_ring_timeout (struct zu_ring *r, struct __kernel_timespec *ts,
                      unsigned flags, uint64_t ud);

/* A one-shot poll of fd for mask. */
void zu_ring_poll (struct zu_ring *r, int fd, unsigned mask, uint64_t ud);

/* --stats: a data request's NBD round trip, sent at since (CLOCK_MONOTONIC)
 * and answered now.
 */
void zu_ring_count_nbd (struct zu_ring *r, const struct timespec *since);

/* Counts the request in the device's served counters. */
void zu_ring_count (struct zu_ring *r, const struct zu_io_desc *iod);

/* The request's data with user copy: in from the kernel (a write or
 * zone append) or out to it (a read).  0 or -EIO.
 */
int zu_ring_copy_in (struct zu_ring *r, unsigned tag, void *buf,
                     size_t bytes);
int zu_ring_copy_out (struct zu_ring *r, unsigned tag, const void *buf,
                      size_t bytes);

/* A zone report: zu_report_fill writes the records of zones[0..n) into
 * buf (d->buf_bytes) and zeros after them, zu_ring_put_report hands the
 * whole buffer to the kernel and returns the request's result.
 */
void zu_report_fill (struct zu_device *d, void *buf,
                     const struct zn_zone *zones, unsigned n);
int zu_ring_put_report (struct zu_ring *r, unsigned tag, const void *buf);

#endif
