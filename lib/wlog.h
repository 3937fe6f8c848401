/* SPDX-License-Identifier: BSD-3-Clause */
/* The write log (log_writes=FILE; zonednull-log(5), doc/power-fail.md):
 * every request the device completed, in completion order, in
 * dm-log-writes' layout (wlog-format.h).
 *
 * The model calls the hooks below where a request has succeeded and
 * before it completes, so that a log never misses a request a host saw
 * completed.  A hook returns 0, or -EIO when the log could not be
 * written: then the request fails and the log stops for good (said once
 * on stderr, naming the file).  With no log on, the hooks do nothing.
 */
#ifndef ZONEDNULL_WLOG_H
#define ZONEDNULL_WLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zonednull/zone.h"

struct zn_dev;
struct zone;
struct zn_config;

/* ---- the device's log, for zoned.c and the control channel ---------- */

/* zn_dev_create: the log's state, and with log_writes the log, started
 * on the new device; -1 with a message naming the key otherwise.
 */
int wlog_init (struct zn_dev *dev, const struct zn_config *cfg,
               char *err, size_t errlen);
/* zn_dev_destroy: stops the log and frees its state. */
void wlog_free (struct zn_dev *dev);

/* A new log in log_dir called name: [A-Za-z0-9._-], not starting with a
 * dot.  0, or a negative errno with a message in err: EINVAL (the name),
 * EPERM (no log_dir), EBUSY (a log is on), EEXIST, or what open said.
 */
int zn_wlog_start_named (struct zn_dev *dev, const char *name, size_t len,
                         char *err, size_t errlen);
/* Stops the log: 0, -ENOENT when none is on, -EAGAIN while its snapshot
 * is still being copied (ask again), or the error that stopped it on its
 * own (-EIO), which the stop reports once.
 */
int zn_wlog_stop (struct zn_dev *dev);
/* A MARK entry: 1 to ZN_WLOG_MARK_MAX bytes of printable ASCII but
 * space (-EINVAL), on a log that is on (-ENOENT).
 */
int zn_wlog_mark (struct zn_dev *dev, const char *name, size_t len);
/* Whether a log is on. */
bool zn_wlog_on (struct zn_dev *dev);
/* Whether a log is or may ever be on: log_writes= started one at
 * creation, or log_dir= lets the control channel start one.  Without
 * either, none ever starts.
 */
bool wlog_may_record (const struct zn_dev *dev);

/* ---- hooks in the model --------------------------------------------- */

/* Before a request changes zone z (its lock held): while a log's
 * snapshot is being copied, z is copied first if it is still to copy.
 */
void wlog_touch (struct zn_dev *dev, struct zone *z);
/* Whether a log's snapshot is being copied: a power cycle, which would
 * change every zone at once, waits for its end (-EAGAIN).
 */
bool wlog_copying (struct zn_dev *dev);
/* Waits for a snapshot's copier to end, before the device goes. */
void wlog_snapshot_wait (struct zn_dev *dev);

/* A write part of n sectors at sector that reached the back end; flags
 * ZN_WLOG_FUA, ZN_WLOG_APPEND.  The zone lock held.
 */
int wlog_write (struct zn_dev *dev, struct zone *z, uint64_t sector,
                uint64_t n, const void *buf, uint64_t flags);
/* A zone reset, open, close or finish that succeeded; the zone lock
 * held.
 */
int wlog_zone_op (struct zn_dev *dev, struct zone *z, enum zn_zone_op op);
/* The zone became READONLY, OFFLINE or (0) neither; the zone lock held. */
int wlog_cond (struct zn_dev *dev, struct zone *z, uint8_t cond);

/* A flush: wlog_flush_ref before it asks the back end, wlog_flush after
 * it succeeded, with what wlog_flush_ref returned.
 */
struct wlog_ref {
  uint64_t gen;                 /* which log: 0 = none was on */
  uint64_t ref;                 /* entries logged before the flush */
};
struct wlog_ref wlog_flush_ref (struct zn_dev *dev);
int wlog_flush (struct zn_dev *dev, struct wlog_ref ref);

/* A power cycle, every zone lock held: wlog_power_begin before the back
 * end's reload, wlog_power_end after it (the POWER entry, then the WP
 * and RESTORE entries of what the reload dropped).
 */
void wlog_power_begin (struct zn_dev *dev);
int wlog_power_end (struct zn_dev *dev);
/* cache.c, during the reload: the unflushed writes of bytes [off, off +
 * len) of zone zone are gone.
 */
void wlog_dropped (struct zn_dev *dev, uint32_t zone, uint64_t off,
                   uint64_t len);

#endif
