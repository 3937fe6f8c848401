/* SPDX-License-Identifier: BSD-3-Clause */
/* The write log (log_writes=FILE; zonednull-log(5), doc/power-fail.md):
 * every request the device completed, in completion order, in
 * dm-log-writes' layout (wlog-format.h).
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

#endif
