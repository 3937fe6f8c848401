/* SPDX-License-Identifier: BSD-3-Clause */
/* The fuzz targets' finish hook (served.h), for both protocols' sessions:
 * replies are held as with irqmode=2, every fourth delayed instead (as a
 * fault rule's delay would) under its id in fuzz_delayed_ids, for the
 * target to release with the held ones.
 */
#ifndef ZONEDNULL_PROTO_FUZZ_FINISH_H
#define ZONEDNULL_PROTO_FUZZ_FINISH_H

#include <stdbool.h>
#include <stdint.h>

#include "served.h"

static uint64_t fuzz_delayed_ids[64];
static unsigned fuzz_nr_delayed, fuzz_finished;

static enum reply_hold
fuzz_finish (void *owner, uint64_t id, bool tagged, enum finish_outcome outcome,
             uint64_t delay_ns)
{
  (void) owner;
  (void) delay_ns;
  if (!tagged || outcome != FINISH_ANSWERED)
    return REPLY_NOW;
  if (++fuzz_finished % 4 == 0 && fuzz_nr_delayed < 64) {
    fuzz_delayed_ids[fuzz_nr_delayed++] = id;
    return REPLY_DELAYED;
  }
  return REPLY_HELD;
}

#endif
