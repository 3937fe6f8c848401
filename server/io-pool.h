/* SPDX-License-Identifier: BSD-3-Clause */
/* zonednull-server's storage workers: the calls into the model that
 * wait for a disk (the pread, pwrite and fdatasync of backing_dir's zone
 * files) run on a few threads, so that the event loop never waits for
 * them, and complete back on the loop.
 *
 * Work items with the same key run one at a time, in the order they were
 * submitted: the writes of a zone reach the model in the order its
 * client sent them, as when the loop ran them.  Key 0 runs in any order.
 */
#ifndef ZONEDNULL_SERVER_IO_POOL_H
#define ZONEDNULL_SERVER_IO_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include <ev.h>

struct io_sink;

struct io_work {
  void (*run) (struct io_work *w);      /* on a worker */
  uint64_t key;
  /* The pool's. */
  struct io_sink *sink;         /* where it completes */
  struct io_work *next;         /* in the ready, done or a key's queue */
  struct io_work *after;        /* the next work of the same key */
  struct io_work *bucket_next;  /* the keys in flight, by hash */
};

/* Starts workers threads, which every event loop shares: a zone's
 * writes keep their order whichever loop submits them.  -1 with a
 * message on stderr.
 */
int io_pool_start (unsigned workers);

/* Where the work a loop submits comes back: each work, once run, is
 * handed to complete on the loop's thread, in the order the work ended,
 * and batch_end follows each batch of them.  Called on the loop's
 * thread; NULL when out of memory.
 */
struct io_sink *io_pool_sink (struct ev_loop *loop,
                              void (*complete) (struct io_work *w),
                              void (*batch_end) (void));

/* From the sink's loop's thread. */
void io_pool_submit (struct io_sink *sink, struct io_work *w);

/* Whether work of key (not 0) is in flight: run or queued. */
bool io_pool_busy (uint64_t key);

/* Waits for the work submitted through sink to be run and completes it,
 * on the calling thread, the sink's loop's; then frees the sink.
 */
void io_pool_sink_stop (struct io_sink *sink);

/* Stops the workers, once every sink is stopped.  Does nothing when the
 * pool was not started.
 */
void io_pool_stop (void);

#endif
