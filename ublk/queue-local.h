/* SPDX-License-Identifier: BSD-3-Clause */
/* zonednull-ublk's in-process hardware queues: one thread and one
 * io_uring each (ring.h), serving the requests of its ublk queue from
 * the device model.
 */
#ifndef ZONEDNULL_UBLK_QUEUE_LOCAL_H
#define ZONEDNULL_UBLK_QUEUE_LOCAL_H

#include <stddef.h>

#include "ring.h"

struct zu_queue;

/* Maps queue q's descriptors and starts its thread, which fetches every
 * tag.  NULL with a message on failure.
 */
struct zu_queue *zu_queue_start (struct zu_device *d, unsigned q,
                                 char *err, size_t errlen);

/* After stop_fd became readable: waits for the thread and frees it. */
void zu_queue_join (struct zu_queue *q);

/* Its ring, for its --stats. */
struct zu_ring *zu_queue_ring (struct zu_queue *q);

#endif
