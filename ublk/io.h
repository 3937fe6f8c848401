/* zonednull-ublk's hardware queues: one thread and one io_uring each,
 * serving the requests of its ublk queue from the device model.
 */
#ifndef ZONEDNULL_UBLK_IO_H
#define ZONEDNULL_UBLK_IO_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zonednull/queue.h"
#include "zonednull/zoned.h"
#include "ublk-abi.h"

/* What all queues of the device share. */
struct zu_device {
  struct zn_dev *dev;
  const struct zn_geometry *geo;
  struct zn_queues *qs;
  bool timed;                   /* irqmode=2 with a delay */
  int cdev_fd;                  /* /dev/ublkcN */
  int stop_fd;                  /* eventfd: readable once the queues stop */
  unsigned nr_queues, depth;
  size_t buf_bytes;             /* the largest request's data */
  /* Queues report here once their fetches are submitted (or failed). */
  pthread_mutex_t lock;
  pthread_cond_t cond;
  unsigned nr_ready;
  int error;                    /* the first queue's failure, -errno */
  /* Requests served, by ublk operation (op_flags & 0xff), for the line
   * printed at exit: the one way to see, say, that btrfs wrote with zone
   * appends.
   */
  atomic_ullong served[ZU_NR_OPS];
  /* --connect only (remote.c): the request timeout, and whether the
   * server was lost (then every request fails with EIO).
   */
  unsigned timeout_s;
  atomic_bool dead;
  uint32_t dev_id;
};

/* "N reads, M writes, ..." of the operations served, into buf. */
void zu_served_summary (struct zu_device *d, char *buf, size_t len);

struct zu_queue;

/* Maps queue q's descriptors and starts its thread, which fetches every
 * tag.  NULL with a message on failure.
 */
struct zu_queue *zu_queue_start (struct zu_device *d, unsigned q,
                                 char *err, size_t errlen);

/* A queue thread says its fetches are submitted (err 0) or failed. */
void zu_queue_report_ready (struct zu_device *d, int err);

/* Waits until every started queue submitted its fetches; 0 or -errno. */
int zu_queues_wait_ready (struct zu_device *d, unsigned nr_started);

/* After stop_fd became readable: waits for the thread and frees it. */
void zu_queue_join (struct zu_queue *q);

/* The errno a model result becomes in the ublk result, chosen so that
 * the application sees what it would see on null_blk.
 */
int zu_block_errno (int err);

#endif
