/* SPDX-License-Identifier: BSD-3-Clause */
/* Where a device keeps its zones' data: one table of operations, as
 * nbdkit's allocators have, so that the zone state machine (zoned.c) says
 * what happens to the data and not how each store does it.  The model
 * defines the table and calls only through it; lib/storage/ fills it in
 * (storage.h):
 *
 *   null     memory_backed=0: nothing kept, reads return zeros (pages.c)
 *   pages    memory_backed=1: a mapping a zone (pages.c)
 *   store    backing_dir: a file a zone, in zloop's layout (store.c)
 *   cache    cache_size: the volatile write cache on top of pages or a
 *            store (cache.c); what it holds is lost at a power cycle
 *
 * Offsets and lengths are bytes within the zone.  Every operation on a
 * zone is called with the zone's lock held, and in a sequential zone
 * before the write pointer moves: a zone file's size is its wp, so the
 * data is in before the wp says so.
 */
#ifndef ZONEDNULL_BACKEND_H
#define ZONEDNULL_BACKEND_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "zonednull/zone.h"

struct zn_dev;
struct zone;
struct zn_keep;

/* The device's bad blocks, as the model lists them for save_meta. */
struct zn_bb_list {
  size_t nr;
  uint64_t first[ZN_BADBLOCKS_MAX], last[ZN_BADBLOCKS_MAX]; /* inclusive */
};

/* Bytes [off, off + len) of zone zone, written but not durable, are lost. */
typedef void zn_dropped_fn (struct zn_dev *dev, uint32_t zone, uint64_t off,
                            uint64_t len);

struct zn_backend {
  const char *name;
  /* The data outlives a power cycle (a file), or the zones start over. */
  bool keeps_data;
  /* Writes go nowhere (memory_backed=0). */
  bool drops_writes;
  /* len bytes at off; the first valid of them are below the wp, and the
   * rest read as null_blk's memory backing shows them (fill_past_wp).
   */
  int (*read) (struct zn_dev *dev, struct zone *z, uint64_t off, void *buf,
               uint64_t len, uint64_t valid);
  /* FUA: durable before it returns.  Nothing changes on failure. */
  int (*write) (struct zn_dev *dev, struct zone *z, uint64_t off,
                const void *buf, uint64_t len, bool fua);
  /* A reset: the zone's data goes and it reads as zeros again. */
  int (*reset) (struct zn_dev *dev, struct zone *z);
  /* A finish: the zone holds data up to its capacity. */
  int (*finish) (struct zn_dev *dev, struct zone *z);
  /* The zone is READONLY, OFFLINE or (0) neither; save_meta makes that,
   * and the bad blocks, outlive the process.
   */
  void (*set_cond) (struct zn_dev *dev, struct zone *z, uint8_t cond);
  int (*save_meta) (struct zn_dev *dev, const struct zn_bb_list *bb);
  /* The first offset at or after off, below end, where the zone may hold
   * data other than zeros, or end: what a snapshot of a sparse device
   * skips.  NULL: anywhere may.
   */
  uint64_t (*next_data) (struct zn_dev *dev, struct zone *z, uint64_t off,
                         uint64_t end);
  /* FLUSH: everything written is durable. */
  int (*flush) (struct zn_dev *dev);
  /* The power-on after a power cycle, every zone lock held: the pending
   * writes keep does not keep are lost, each told to dropped, and each
   * sequential zone is set from what the back end kept.  NULL: nothing
   * to do.  A back end that does not keep_data has its zones made anew
   * by the model after it.
   */
  int (*reload) (struct zn_dev *dev, const struct zn_keep *keep,
                 zn_dropped_fn *dropped);
  /* An orderly stop. */
  void (*free) (struct zn_dev *dev);
};


/* At and past the wp null_blk's memory backing reads 0xFF. */
static inline void
fill_past_wp (void *buf, uint64_t len, uint64_t valid)
{
  memset ((unsigned char *) buf + valid, 0xFF, len - valid);
}

#endif
