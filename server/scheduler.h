/* SPDX-License-Identifier: BSD-3-Clause */
/* zonednull-server's scheduling of requests: tags and timed completion,
 * the mbps budget, parked writes (pipeline_zoned_writes), and the
 * requests the fault settings hold back.  It plugs
 * into the connection layer as its struct net_sched, and into the NBD
 * session as its admission hook.
 */
#ifndef ZONEDNULL_SERVER_SCHEDULER_H
#define ZONEDNULL_SERVER_SCHEDULER_H

#include <stdint.h>

#include <ev.h>

#include "model/queue.h"
#include "conn.h"
#include "served.h"

/* Schedules the requests to the devices (their queues made with qcfg);
 * delayed: irqmode=2, replies are held until they complete.  io_threads:
 * the storage workers that run the requests of devices with backing_dir
 * (sched_offload), shared by every loop; 0: the loops run them.  Once,
 * before any loop starts; -1 with a message on stderr.
 */
int sched_init (struct served_device *devices, unsigned nr_devices,
                bool delayed, const struct zn_queue_config *qcfg,
                uint64_t pipeline_wait_ns, unsigned io_threads);

/* On the thread of each event loop (--threads), before it serves: its
 * connections are scheduled from it.  -1 with a message on stderr.
 */
int sched_loop_start (struct ev_loop *loop);

/* On the loop's thread, after its connections closed. */
void sched_loop_stop (void);

/* After every loop stopped. */
void sched_stop (void);

/* The admission hook of every protocol's sessions. */
struct admission sched_admit (void *owner, void *session,
                              const struct data_request *rq);

/* The finish hook of every protocol's sessions (served.h). */
enum reply_hold sched_finish (void *owner, uint64_t id, bool tagged,
                              enum finish_outcome outcome, uint64_t delay_ns);

/* The offload hook of every protocol's sessions (served.h): a request of
 * a device with backing_dir goes to the storage workers.
 */
bool sched_offload (void *owner, struct served_job *job);

/* The connection layer's hooks for the connections of a protocol whose
 * sessions ops drives.
 */
struct net_sched sched_hooks (const struct sched_session_ops *ops);

#endif
