/* SPDX-License-Identifier: BSD-3-Clause */
/* What a power loss may keep of the writes a device had not made durable:
 * the policies of `zonednull replay --crash` and `zonednull power-cycle
 * --keep`, and the draws that make random:SEED reproducible.  The rules
 * they follow are doc/power-fail.md's section 2.
 */
#ifndef ZONEDNULL_CRASH_H
#define ZONEDNULL_CRASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zonednull/control.h"

/* One form of the policy from the command line to the model: the first
 * four are the control channel's POWER_CYCLE values.
 */
enum zn_keep_kind {
  ZN_KEEP_NONE = ZN_POWER_KEEP_NONE,     /* every pending write is lost */
  ZN_KEEP_ALL = ZN_POWER_KEEP_ALL,       /* every pending write survives */
  ZN_KEEP_RANDOM = ZN_POWER_KEEP_RANDOM, /* drawn from seed */
  ZN_KEEP_TORN = ZN_POWER_KEEP_TORN,     /* drawn from seed, writes torn
                                            at block boundaries */
  ZN_KEEP_ENUMERATE,            /* replay only: every distinct state, at
                                   most max */
};

struct zn_keep {
  enum zn_keep_kind kind;
  uint64_t seed;                /* ZN_KEEP_RANDOM, ZN_KEEP_TORN */
  uint64_t max;                 /* ZN_KEEP_ENUMERATE */
};

/* "none", "all", "random:SEED", "torn:SEED" and, with allow_enumerate,
 * "enumerate[:MAX]".  0, or -EINVAL with a message in err naming what
 * is wrong.
 */
int zn_keep_parse (const char *text, bool allow_enumerate,
                   struct zn_keep *keep, char *err, size_t errlen);

/* Of the n pending writes of sequential zone zone, in order, how many
 * survive (a prefix, 0..n).  Not for ZN_KEEP_ENUMERATE.
 */
uint64_t zn_keep_prefix (const struct zn_keep *keep, uint32_t zone,
                         uint64_t n);

/* Whether pending write i (0-based, in order) of conventional zone zone
 * survives.  Not for ZN_KEEP_ENUMERATE.
 */
bool zn_keep_write (const struct zn_keep *keep, uint32_t zone, uint64_t i);

/* torn:SEED's tears (doc/power-fail.md, section 2); for other policies
 * no write is torn.  Of sequential zone zone's pending write i, the one
 * after the kept prefix, a power loss left its first blocks: how many,
 * of its nblocks (0 to nblocks - 1).
 */
uint64_t zn_keep_torn_prefix (const struct zn_keep *keep, uint32_t zone,
                              uint64_t i, uint64_t nblocks);
/* Whether conventional zone zone's pending write i is torn: then each of
 * its blocks is kept or not by zn_keep_block, not the whole write by
 * zn_keep_write.
 */
bool zn_keep_torn (const struct zn_keep *keep, uint32_t zone, uint64_t i);
/* Whether block block (its index in the zone, in logical blocks) of
 * torn write i of conventional zone zone survives.  Indexed in the zone,
 * not in the write, so that a write the device holds in pieces draws as
 * one.
 */
bool zn_keep_block (const struct zn_keep *keep, uint32_t zone, uint64_t i,
                    uint64_t block);

#endif
