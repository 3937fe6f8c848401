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

struct io_work {
  void (*run) (struct io_work *w);      /* on a worker */
  uint64_t key;
  /* The pool's. */
  struct io_work *next;         /* in the ready, done or a key's queue */
  struct io_work *after;        /* the next work of the same key */
  struct io_work *bucket_next;  /* the keys in flight, by hash */
};

/* Starts workers threads on loop; each work, once run, is handed to
 * complete on the loop's thread, in the order the work ended, and
 * batch_end follows each batch of them.  -1 with a message on stderr.
 */
int io_pool_start (struct ev_loop *loop, unsigned workers,
                   void (*complete) (struct io_work *w),
                   void (*batch_end) (void));

/* From the loop's thread. */
void io_pool_submit (struct io_work *w);

/* Whether work of key (not 0) is in flight: run or queued.  From the
 * loop's thread, which alone submits, so a false stays true until it
 * submits again.
 */
bool io_pool_busy (uint64_t key);

/* Runs what was submitted to its end, stops the workers, and completes
 * every work (on the calling thread, the loop's).  Does nothing when the
 * pool was not started.
 */
void io_pool_stop (void);

#endif
