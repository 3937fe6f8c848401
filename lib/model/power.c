/* SPDX-License-Identifier: BSD-3-Clause */
/* The power cycle (configfs "power" written 0 then 1): what a device keeps
 * over it and what it loses.  In null_blk, nullb_device_power_store in
 * main.c frees the zones (null_free_zoned_dev) and makes them again
 * (null_init_zoned_dev); here the zone table stays and is set back to
 * its power-on state under every zone lock, so that a front end's
 * requests in flight meet either the old device or the new one.
 */
#include <errno.h>

#include "model/dev.h"

/* Power-on builds the zones again, FULL with zone_full, when the back end
 * keeps nothing across (with backing_dir the zones come from the zone
 * files instead, as a restart does).
 */
static void
zones_power_on (struct zn_dev *dev)
{
  ALL_ZONES_ASSERT_HELD (dev);
  for (uint32_t i = dev->geo.nr_conv; i < dev->geo.nr_zones; i++) {
    struct zone *z = &dev->zones[i];

    z->cond = dev->zone_full ? ZN_COND_FULL : ZN_COND_EMPTY;
    z->wp = dev->zone_full ? z->start + z->capacity : z->start;
  }
}

/* What the back end's reload lost, for the recorder. */
static void
dropped (struct zn_dev *dev, uint32_t zone, uint64_t off, uint64_t len)
{
  if (dev->rec)
    dev->rec->dropped (dev, zone, off, len);
}

/* null_blk: nullb_device_power_store (), which keeps nothing of its
 * cache; keep chooses what survives instead (doc/power-fail.md, 2).
 */
int
zn_power_cycle_keep (struct zn_dev *dev, const struct zn_keep *keep)
{
  int ret;

  /* One power cycle leaves one state, not every one. */
  if (keep->kind == ZN_KEEP_ENUMERATE)
    return -EINVAL;
  dev_lock_zones (dev, 0, dev->geo.nr_zones, true);
  /* It would change every zone at once, those a log's snapshot has not
   * copied yet among them.
   */
  if (dev->rec && dev->rec->busy (dev)) {
    dev_lock_zones (dev, 0, dev->geo.nr_zones, false);
    return -EAGAIN;
  }
  res_lock (dev);
  atomic_store (&dev->nr_imp_open, 0);
  atomic_store (&dev->nr_exp_open, 0);
  atomic_store (&dev->nr_closed, 0);
  if (dev->rec)
    dev->rec->power_begin (dev);
  ret = dev->backend->reload ? dev->backend->reload (dev, keep, dropped) : 0;
  if (!dev->backend->keeps_data)
    zones_power_on (dev);
  if (dev->rec && dev->rec->power_end (dev) && ret == 0)
    ret = -EIO;
  for (uint32_t i = dev->geo.nr_conv; i < dev->geo.nr_zones; i++)
    pipeline_wake_waiters (&dev->zones[i], true);
  dev->imp_close_cursor = dev->geo.nr_conv;
  if (dev->wplugs)
    wplug_remove_all (dev);
  res_unlock (dev);
  dev_lock_zones (dev, 0, dev->geo.nr_zones, false);
  return ret;
}

int
zn_power_cycle (struct zn_dev *dev)
{
  const struct zn_keep none = { .kind = ZN_KEEP_NONE };

  return zn_power_cycle_keep (dev, &none);
}
