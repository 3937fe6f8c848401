/* SPDX-License-Identifier: BSD-3-Clause */
/* zonednull-ublk's control socket: the device's NBD exports (nullb0 and
 * nullb0/control) on a Unix socket, so that the zonednull CLI reaches the
 * model behind /dev/ublkbN.  The protocol is the NBD session
 * (proto/nbd/) over the connection layer (net/), on an event loop in a
 * thread of its own.
 */
#ifndef ZONEDNULL_UBLK_CONTROL_SOCKET_H
#define ZONEDNULL_UBLK_CONTROL_SOCKET_H

#include <stddef.h>

#include "model/queue.h"
#include "model/zoned.h"

struct zu_control_socket;

/* Listens on path (replacing a stale socket) and starts the thread.  NULL
 * with a message on failure.
 */
struct zu_control_socket *
zu_control_socket_start (const char *path, struct zn_dev *dev,
                         struct zn_queues *qs,
                         const struct zn_queue_config *qcfg,
                         const struct zn_config *cfg,
                         char *err, size_t errlen);

/* Stops the thread, closes every connection and removes the socket. */
void zu_control_socket_stop (struct zu_control_socket *cs);

#endif
