/* zonednull-server's scheduling of requests: tags and timed completion,
 * the mbps budget, and parked writes (pipeline_zoned_writes).  It plugs
 * into the connection layer as its struct net_sched, and into the NBD
 * session as its admission hook.
 */
#ifndef ZONEDNULL_SERVER_SCHEDULER_H
#define ZONEDNULL_SERVER_SCHEDULER_H

#include <stdint.h>

#include <ev.h>

#include "zonednull/queue.h"
#include "conn.h"
#include "session.h"

/* Schedules the requests to sv's devices (their queues made with qcfg)
 * from loop.  -1 with a message on stderr.
 */
int sched_start (struct ev_loop *loop, struct served *sv,
                 const struct zn_queue_config *qcfg, uint64_t pipeline_wait_ns);

/* After every connection closed. */
void sched_stop (void);

/* served.admit. */
int sched_admit (void *owner, struct session *s, const struct data_request *rq);

extern const struct net_sched sched_hooks;

#endif
