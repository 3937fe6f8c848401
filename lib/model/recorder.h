/* SPDX-License-Identifier: BSD-3-Clause */
/* What the model tells a recorder of its requests: the write log
 * (lib/powerfail/wlog.c) is one, attached by zn_dev_create.  The model
 * calls these where a request has succeeded and before it completes, so
 * that a log never misses a request a host saw completed; it knows
 * nothing of logs, and a device without a recorder skips them all.  The
 * write log may hold a write until its front end completes the request
 * (lib/powerfail/wlog.h), so that a flush_ref counts completed writes
 * only.
 *
 * A hook that returns int returns 0, or -EIO when the recording failed:
 * the request then fails.  Each is called with the locks its comment
 * names.
 */
#ifndef ZONEDNULL_RECORDER_H
#define ZONEDNULL_RECORDER_H

#include <stdbool.h>
#include <stdint.h>

#include "zonednull/zone.h"

struct zn_dev;
struct zone;

/* Where a flush stands in the record: taken before the back end flushes,
 * handed back after it succeeded.
 */
struct zn_flush_ref {
  uint64_t gen;                 /* which log: 0 = none was on */
  uint64_t ref;                 /* entries recorded before the flush */
};

struct zn_recorder {
  /* Whether anything may ever be recorded: the model then keeps the
   * data of writes even with nothing to store it (memory_backed=0).
   */
  bool (*may_record) (const struct zn_dev *dev);
  /* Before a request changes zone z (its lock held). */
  void (*touch) (struct zn_dev *dev, struct zone *z);
  /* Whether a power cycle, which changes every zone at once, must wait
   * (the model then answers -EAGAIN).
   */
  bool (*busy) (struct zn_dev *dev);
  /* A write part of n sectors at sector that reached the back end, which
   * the host asked for as FUA, or as a zone append.  The zone lock held.
   */
  int (*write) (struct zn_dev *dev, struct zone *z, uint64_t sector,
                uint64_t n, const void *buf, bool fua, bool append);
  /* A zone reset, open, close or finish that succeeded; the zone lock
   * held.
   */
  int (*zone_op) (struct zn_dev *dev, struct zone *z, enum zn_zone_op op);
  /* The zone became READONLY, OFFLINE or (0) neither; the zone lock held. */
  int (*cond) (struct zn_dev *dev, struct zone *z, uint8_t cond);
  struct zn_flush_ref (*flush_ref) (struct zn_dev *dev);
  int (*flush) (struct zn_dev *dev, struct zn_flush_ref ref);
  /* A power cycle, every zone lock held: power_begin before the back
   * end's reload, dropped for each unflushed write the reload lost,
   * power_end after it.
   */
  void (*power_begin) (struct zn_dev *dev);
  void (*dropped) (struct zn_dev *dev, uint32_t zone, uint64_t off,
                   uint64_t len);
  int (*power_end) (struct zn_dev *dev);
  /* Before the device goes: the recorder's own work ends (quiesce),
   * then, once the back end is gone, its state is freed.
   */
  void (*quiesce) (struct zn_dev *dev);
  void (*free) (struct zn_dev *dev);
};

#endif
