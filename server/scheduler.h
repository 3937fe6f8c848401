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

/* Schedules the requests to the devices (their queues made with qcfg)
 * from loop; delayed: irqmode=2, replies are held until they complete.
 * io_threads: the storage workers that run the requests of devices with
 * backing_dir (sched_offload); 0: the loop runs them.  -1 with a message
 * on stderr.
 */
int sched_start (struct ev_loop *loop, struct served_device *devices,
                 unsigned nr_devices, bool delayed,
                 const struct zn_queue_config *qcfg, uint64_t pipeline_wait_ns,
                 unsigned io_threads);

/* After every connection closed. */
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
