/* SPDX-License-Identifier: BSD-3-Clause */
/* The control export of a device (zonednull-control(5)), as the NBD
 * servers serve it: the header page, the zone descriptors, the commands
 * and the error logs.
 */
#ifndef ZONEDNULL_LIB_CONTROL_H
#define ZONEDNULL_LIB_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/control-wire.h"

struct zn_dev;
struct zn_control;            /* one per device */

/* The result of a connection's last command; zero it at connect. */
struct zn_control_conn {
  uint64_t seq;
  uint32_t op;
  uint32_t err;
  uint64_t sector;
  uint64_t nr_sectors;
  /* After a zone command or APPEND: how long the front end holds its
   * answer (fault rules' delays, zone-operation latencies), in ns;
   * ZN_CONTROL_HOLD_FOREVER for a timeout, never answered.
   */
  uint64_t hold_ns;
  /* An APPEND held hold_ns: its write's entry, for the write log when
   * the front end answers it (zn_control_complete).
   */
  struct zn_wlog_hold *hold;
};
#define ZN_CONTROL_HOLD_FOREVER UINT64_MAX

/* The front end answers the connection's command it held (hold_ns): its
 * write goes in the write log (lib/powerfail/wlog.h).  Does nothing for
 * a command answered at once.
 */
void zn_control_complete (struct zn_control_conn *conn);

struct zn_control *zn_control_create (struct zn_dev *dev);

/* Makes the header carry the queue section of device index (of
 * nr_devices), with the queueing and pipelining settings it runs with.
 */
struct zn_queues;
struct zn_queue_config;
struct zn_config;
void zn_control_set_queues (struct zn_control *ctl, struct zn_queues *qs,
                            const struct zn_queue_config *qcfg,
                            const struct zn_config *cfg,
                            uint32_t index, uint32_t nr_devices);
void zn_control_destroy (struct zn_control *ctl);
/* The front end carries out fault rules (lib/model/fault.h): FAULT_ADD
 * and FAULT_CLEAR are taken and the fault table is shown.  hold: it can
 * hold a request back while it serves the next, so a rule may time
 * requests out or delay them.
 */
void zn_control_allow_faults (struct zn_control *ctl, bool hold);
uint64_t zn_control_size (const struct zn_control *ctl);

/* Error logs: a data connection to "<device>/session/<id>" attaches to
 * the error log of that id at open (creating it, or finding it again) and
 * detaches at close.  attach returns NULL only when out of memory.  An
 * error log stays while attached; detached, it is kept among the
 * ZN_CONTROL_ERRLOGS most recently detached ones.
 */
struct zn_control_errlog;
struct zn_control_errlog *zn_control_errlog_attach (struct zn_control *ctl,
                                                    uint64_t id);
void zn_control_errlog_detach (struct zn_control *ctl,
                               struct zn_control_errlog *log);
/* Remembers a failed data request (err is a positive errno) in the
 * connection's error log; NULL (a plain connection) is the device-wide
 * log that DATA_ERRNO asks.
 */
void zn_control_errlog_add (struct zn_control *ctl,
                            struct zn_control_errlog *log,
                            uint32_t nbd_cmd, uint64_t offset,
                            uint64_t count, int err);

/* Return 0 or a negative errno for the NBD request itself.  A write that
 * is refused as malformed (-EINVAL) leaves in why a message naming the
 * rule it broke, for the server's log or the NBD error reply.
 */
int zn_control_pread (struct zn_control *ctl, const struct zn_control_conn *conn,
                      bool readonly, void *buf, uint64_t count, uint64_t offset);
int zn_control_pwrite (struct zn_control *ctl, struct zn_control_conn *conn,
                       const void *buf, uint64_t count, uint64_t offset,
                       char *why, size_t whylen);

#endif /* ZONEDNULL_LIB_CONTROL_H */
