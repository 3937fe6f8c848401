/* SPDX-License-Identifier: BSD-3-Clause */
/* zonednull-ublk --connect: the queues of a device whose zones live on a
 * remote zonednull server (nbdkit zonednull or zonednull-server).
 *
 * Each ublk queue has one thread and one io_uring (ring.h), as in-process,
 * plus:
 *   - one NBD data connection, driven asynchronously from that ring
 *     (nbd_aio_pread/pwrite/flush; POLL_ADD on nbd_aio_get_fd, then
 *     nbd_aio_notify_read/write), so a READ, WRITE or FLUSH completes
 *     when its NBD reply arrives, without a thread per request;
 *   - one control worker thread with a zn_client of its own, for the
 *     synchronous control-channel calls (zone operations, REPORT_ZONES,
 *     ZONE_APPEND, and the exact errno of a failed data request), which
 *     posts its results back to the queue's ring through an eventfd.
 */
#ifndef ZONEDNULL_UBLK_QUEUE_REMOTE_H
#define ZONEDNULL_UBLK_QUEUE_REMOTE_H

#include <stddef.h>

#include "ring.h"

struct zu_rqueue;

/* Connects queue q's data connection and its worker's client to uri,
 * maps its descriptors and starts its two threads.  NULL with a message
 * on failure.
 */
struct zu_rqueue *zu_rqueue_start (struct zu_device *d, unsigned q,
                                   const char *uri, char *err,
                                   size_t errlen);

/* After stop_fd became readable: waits for the threads and frees the
 * queue.  A worker still blocked in a call to a server that stopped
 * answering is left behind (the process is about to exit).
 */
void zu_rqueue_join (struct zu_rqueue *q);

/* Its ring, for its --stats. */
struct zu_ring *zu_rqueue_ring (struct zu_rqueue *q);

#endif
