/* SPDX-License-Identifier: BSD-3-Clause */
/* Pipelined writes (pipeline_zoned_writes): a write to a sequential zone
 * ahead of its write pointer waits, up to pipeline_wait_ms, for the writes
 * before it instead of failing, as the "pipelining zoned writes" series
 * lets a driver that keeps each queue's order do.  null_blk has no such
 * code: zoned.c calls pipeline_wait where null_zone_write checks the wp,
 * and pipeline_wake_waiters wherever the wp moves or the zone stops taking writes.
 * A thread that can block waits on a condition variable; an event loop
 * uses zn_pipeline_begin, zn_pipeline_poll and zn_pipeline_end instead.
 *
 * Everything here runs under the zone lock, but the count of a zone's
 * waiting writes, which an event loop's wait ends without it.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "model/dev.h"

struct zn_pipeline {
  pthread_condattr_t condattr;  /* CLOCK_MONOTONIC, for the waiters */
  uint32_t wait_ms;
  uint32_t max_waiting;
  /* Counted without a lock: waits on different zones run at once. */
  atomic_uint waiting;
  atomic_ullong waited;
  atomic_ullong timeouts;
  atomic_ullong failed;
};

int
pipeline_init (struct zn_dev *dev, const struct zn_config *cfg)
{
  struct zn_pipeline *pl;

  if (!cfg->pipeline_zoned_writes)
    return 0;
  pl = calloc (1, sizeof *pl);
  if (!pl)
    return -ENOMEM;
  pl->wait_ms = cfg->pipeline_wait_ms ? cfg->pipeline_wait_ms
                                      : ZN_PIPELINE_WAIT_MS;
  pl->max_waiting = cfg->pipeline_max_waiting ? cfg->pipeline_max_waiting
                                              : ZN_PIPELINE_MAX_WAITING;
  pthread_condattr_init (&pl->condattr);
  pthread_condattr_setclock (&pl->condattr, CLOCK_MONOTONIC);
  dev->pipeline = pl;
  return 0;
}

void
pipeline_free (struct zn_dev *dev)
{
  if (!dev->pipeline)
    return;
  pthread_condattr_destroy (&dev->pipeline->condattr);
  free (dev->pipeline);
  dev->pipeline = NULL;
}

void
pipeline_wake_waiters (struct zone *z, bool give_up)
{
  ZONE_ASSERT_HELD (z);
  if (give_up)
    z->fail_gen++;
  for (struct wp_waiter *w = z->waiters; w; w = w->next)
    if (give_up || w->sector <= z->wp)
      pthread_cond_signal (&w->cond);
}

/* An implicit close may change the cond of an open zone under the
 * resource lock alone, so cond is read under it.
 */
static uint8_t
zone_cond (struct zn_dev *dev, struct zone *z)
{
  uint8_t cond;

  res_lock (dev);
  cond = z->cond;
  res_unlock (dev);
  return cond;
}

static bool
writable_cond (uint8_t cond)
{
  return cond != ZN_COND_FULL && cond != ZN_COND_READONLY
    && cond != ZN_COND_OFFLINE;
}

/* Whether a write of n sectors at sector, to zone z in condition cond,
 * must wait for the wp (1, and it is counted as waiting until wait_end),
 * may go now (0), or may not wait because pipeline_max_waiting writes
 * already do (-EBUSY).  Writes that can never succeed (behind the wp,
 * past the capacity, to a FULL, READONLY or OFFLINE zone) do not wait:
 * the ordinary checks then fail them at once.  Zone lock held.
 */
static int
wait_begin (struct zn_dev *dev, struct zone *z, uint64_t sector, uint64_t n,
            uint8_t cond)
{
  struct zn_pipeline *pl = dev->pipeline;

  ZONE_ASSERT_HELD (z);
  if (sector <= z->wp || sector + n > z->start + z->capacity
      || !writable_cond (cond))
    return 0;
  if (atomic_load (&z->nr_waiting) >= pl->max_waiting) {
    atomic_fetch_add (&pl->failed, 1);
    return -EBUSY;
  }
  atomic_fetch_add (&z->nr_waiting, 1);
  atomic_fetch_add (&pl->waiting, 1);
  atomic_fetch_add (&pl->waited, 1);
  return ZN_PIPELINE_WAIT;
}

/* A wait is over, with result 0, -ETIMEDOUT or -EIO. */
static void
wait_end (struct zn_dev *dev, struct zone *z, int result)
{
  struct zn_pipeline *pl = dev->pipeline;

  atomic_fetch_sub (&z->nr_waiting, 1);
  atomic_fetch_sub (&pl->waiting, 1);
  if (result)
    atomic_fetch_add (result == -ETIMEDOUT ? &pl->timeouts : &pl->failed, 1);
}

/* Waits until a write of n sectors at sector, ahead of the wp, is at the
 * wp.  A waiting write changes no zone state.
 */
int
pipeline_wait (struct zn_dev *dev, struct zone *z, uint64_t sector, uint64_t n)
{
  struct timespec deadline;
  struct wp_waiter me;
  uint64_t gen = z->fail_gen;
  int ret = wait_begin (dev, z, sector, n, zone_cond (dev, z));

  if (ret != ZN_PIPELINE_WAIT)
    return ret;
  ret = 0;
  clock_gettime (CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += dev->pipeline->wait_ms / 1000;
  deadline.tv_nsec += (long) (dev->pipeline->wait_ms % 1000) * 1000000;
  if (deadline.tv_nsec >= 1000000000) {
    deadline.tv_sec++;
    deadline.tv_nsec -= 1000000000;
  }
  me.sector = sector;
  pthread_cond_init (&me.cond, &dev->pipeline->condattr);
  me.next = z->waiters;
  z->waiters = &me;
  while (sector > z->wp && gen == z->fail_gen
         && writable_cond (zone_cond (dev, z))) {
    if (pthread_cond_timedwait (&me.cond, z->mutex, &deadline) == ETIMEDOUT
        && sector > z->wp && gen == z->fail_gen) {
      ret = -ETIMEDOUT;
      break;
    }
  }
  for (struct wp_waiter **p = &z->waiters; *p; p = &(*p)->next)
    if (*p == &me) {
      *p = me.next;
      break;
    }
  pthread_cond_destroy (&me.cond);
  if (ret == 0 && gen != z->fail_gen)
    ret = -EIO;
  wait_end (dev, z, ret);
  return ret;
}

/* zone_res_lock_or_again, waiting for the locks unless nowait (a
 * storage thread may hold them while it writes the zone, or syncs it for
 * a FUA write).
 */
static bool
lock_for_loop (struct zn_dev *dev, struct zone *z, bool nowait)
{
  bool was = zn_nowait, locked;

  zn_nowait = nowait;
  locked = zone_res_lock_or_again (dev, z);
  zn_nowait = was;
  return locked;
}

static void
unlock_for_loop (struct zn_dev *dev, struct zone *z)
{
  res_unlock (dev);
  zone_unlock (z);
}

/* The same wait for an event loop, which cannot block: see zoned.h.  Only
 * a request's first part can be ahead of a write pointer (its later parts
 * start where it left off, or at a zone start).
 */
int
zn_pipeline_begin (struct zn_dev *dev, uint64_t sector, uint64_t nr_sectors,
                   bool nowait, struct zn_pipeline_wait *w)
{
  struct zone *z;
  uint64_t n;
  int ret;

  if (!dev->pipeline || nr_sectors == 0 || sector >= dev->geo.capacity)
    return 0;
  z = zone_of (dev, sector);
  if (z->type == ZN_ZONE_CONVENTIONAL)
    return 0;
  n = z->start + z->len - sector < nr_sectors ? z->start + z->len - sector
                                              : nr_sectors;
  if (!lock_for_loop (dev, z, nowait))
    return -EAGAIN;
  ret = wait_begin (dev, z, sector, n, z->cond);
  if (ret == ZN_PIPELINE_WAIT)
    *w = (struct zn_pipeline_wait) { .sector = sector, .gen = z->fail_gen };
  unlock_for_loop (dev, z);
  return ret;
}

int
zn_pipeline_poll (struct zn_dev *dev, const struct zn_pipeline_wait *w,
                  bool nowait)
{
  struct zone *z = zone_of (dev, w->sector);
  int ret;

  if (!lock_for_loop (dev, z, nowait))
    return -EAGAIN;
  if (w->gen != z->fail_gen)
    ret = -EIO;
  else
    ret = w->sector > z->wp && writable_cond (z->cond) ? ZN_PIPELINE_WAIT
                                                       : 0;
  unlock_for_loop (dev, z);
  return ret;
}

void
zn_pipeline_end (struct zn_dev *dev, const struct zn_pipeline_wait *w,
                 int result)
{
  wait_end (dev, zone_of (dev, w->sector), result);
}

void
zn_get_pipeline_stats (struct zn_dev *dev, struct zn_pipeline_stats *s)
{
  struct zn_pipeline *pl = dev->pipeline;

  *s = (struct zn_pipeline_stats) { 0 };
  if (pl)
    *s = (struct zn_pipeline_stats) {
      .waiting = atomic_load (&pl->waiting),
      .waited = atomic_load (&pl->waited),
      .timeouts = atomic_load (&pl->timeouts),
      .failed = atomic_load (&pl->failed),
    };
}
