/* zonednull-ublk's control socket: the device's NBD exports (nullb0 and
 * nullb0/control) on a Unix socket, so that the zonednull CLI reaches the
 * model behind /dev/ublkbN.  The protocol is zonednull-server's session
 * (server/session.c); this is only its event loop, in a thread of its own.
 */
#ifndef ZONEDNULL_UBLK_NBD_H
#define ZONEDNULL_UBLK_NBD_H

#include <stddef.h>

#include "zonednull/queue.h"
#include "zonednull/zoned.h"

struct zu_nbd;

/* Listens on path (replacing a stale socket) and starts the thread.  NULL
 * with a message on failure.
 */
struct zu_nbd *zu_nbd_start (const char *path, struct zn_dev *dev,
                             struct zn_queues *qs,
                             const struct zn_queue_config *qcfg,
                             const struct zn_config *cfg,
                             char *err, size_t errlen);

/* Stops the thread, closes every connection and removes the socket. */
void zu_nbd_stop (struct zu_nbd *n);

#endif
