/* SPDX-License-Identifier: BSD-3-Clause */
/* The write log (log_writes=FILE; zonednull-log(5), doc/power-fail.md):
 * every request the device completed, in completion order, in
 * dm-log-writes' layout (wlog-format.h); a zone's entries in the order
 * its requests ran.
 *
 * It is the model's recorder (recorder.h): a hook that cannot write the
 * log returns -EIO, the request fails and the log stops for good (said
 * once on stderr, naming the file).  With no log on, the hooks do
 * nothing.
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

/* zn_dev_create: the log's state, the device's recorder from now on
 * (zn_dev_destroy frees it), and with log_writes the log, started on the
 * new device; a negative errno with a message naming the key otherwise.
 */
int wlog_init (struct zn_dev *dev, const struct zn_config *cfg,
               char *err, size_t errlen);

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

/* ---- requests that complete after they ran, for the front ends ------- */

/* A write is in the log once its request completes to the host, so that
 * a flush covers only the writes completed before it came (section 1 of
 * doc/power-fail.md).  A front end that answers a request later than it
 * runs it (irqmode=2, a delayed reply) brackets the run on the thread
 * that runs it:
 *
 *   zn_wlog_defer ();
 *   ... zn_write (dev, ...) ...
 *   hold = zn_wlog_deferred ();
 *   ... when the host is to see it complete:
 *   zn_wlog_complete (hold);
 *
 * The write entries made in between are held, with their data, and go in
 * the log at zn_wlog_complete, or before, when a later entry of their
 * zone must follow them, the log stops, a power cycle comes or the device
 * stops.  Without the bracket a write goes in as it runs.  hold is NULL
 * when nothing was held; completing NULL does nothing.  A hold not
 * completed when the device goes is freed with it.
 */
void zn_wlog_defer (void);
struct zn_wlog_hold *zn_wlog_deferred (void);
void zn_wlog_complete (struct zn_wlog_hold *hold);

/* The data a device holds for requests not yet completed, at most: past
 * it, a write goes in the log as it runs, and a flush then covers it.
 * Four times what the default 64 tags of 128 KiB writes (max_sectors
 * 255) hold, so that only a peer that fills deep queues with large
 * writes meets it.
 */
#define ZN_WLOG_HOLD_MAX (UINT64_C (32) << 20)

#endif
