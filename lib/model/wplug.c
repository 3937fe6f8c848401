/* SPDX-License-Identifier: BSD-3-Clause */
/* Zone write plugging, the block layer's (block/blk-zoned.c) since Linux
 * 6.10, as far as a user of /dev/nullb0 can see it.
 *
 * The block layer keeps, for each sequential zone being written, a plug
 * with its own idea of the write pointer (wp_offset).  A write is checked
 * against it before null_blk sees the write: not at wp_offset, or to a
 * zone the plug thinks full, fails with EIO without reaching the driver.
 * A write that passes moves wp_offset at once.  A write that fails, there
 * or in the driver, flags the plug as needing a write pointer update, and
 * every later write to the zone fails until a zone report (which reads the
 * driver's wp into the plug), a reset or a finish brings it back.  Reset
 * and finish set wp_offset when their bio completes without error; with a
 * range of zones the bios are chained, so one zone's error reaches the
 * bios of the zones after it and their plugs are left as they were,
 * although the driver did reset those zones.  A plug goes away when its
 * wp_offset is 0 or at the capacity; a write to a zone without one makes
 * a new plug that takes that write's offset as the write pointer.
 *
 * One write at a time reaches the driver per zone, in the order the plug
 * saw them, so running all of this under the zone lock is the kernel's
 * serialisation.  The kernel's queueing of writes behind a write in
 * flight, and the abort of those on an error, leave no trace here: a
 * queued write would meet the same checks when its turn came.
 *
 * zoned.c calls these with the zone lock held, and only when the front
 * end asked for plugging (zn_dev_write_plugging).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "model/dev.h"

struct zn_wplug {
  uint64_t wp_offset;       /* sectors from the zone start */
  bool hashed;              /* the plug exists */
  bool need_wp_update;      /* BLK_ZONE_WPLUG_NEED_WP_UPDATE */
};

static struct zn_wplug *
plug_of (struct zn_dev *dev, struct zone *z)
{
  return &dev->wplugs[z - dev->zones];
}

int
zn_dev_write_plugging (struct zn_dev *dev, char *err, size_t errlen)
{
  if (dev->geo.kernel < ZN_KERNEL_6_12 || dev->wplugs)
    return 0;
  if (dev->pipeline) {
    if (err && errlen)
      snprintf (err, errlen, "pipeline_zoned_writes: not with kernel=%s, "
                "whose zone write plugging fails a write that is not at "
                "the write pointer before null_blk sees it",
                zn_kernel_name (dev->geo.kernel));
    return -EINVAL;
  }
  dev->wplugs = calloc (dev->geo.nr_zones, sizeof *dev->wplugs);
  if (!dev->wplugs) {
    if (err && errlen)
      snprintf (err, errlen, "out of memory for %u zone write plugs",
                dev->geo.nr_zones);
    return -ENOMEM;
  }
  return 0;
}

void
wplug_free (struct zn_dev *dev)
{
  free (dev->wplugs);
  dev->wplugs = NULL;
}

static void
plug_remove (struct zn_wplug *p)
{
  *p = (struct zn_wplug) { 0 };
}

/* disk_zone_wplug_set_wp_offset: the write pointer is known again. */
static void
plug_set_wp (struct zone *z, struct zn_wplug *p, uint64_t wp_offset)
{
  p->wp_offset = wp_offset;
  p->need_wp_update = false;
  if (wp_offset == 0 || wp_offset >= z->capacity)
    plug_remove (p);
}

/* blk_zone_wplug_handle_write and blk_zone_wplug_prepare_bio, for a write
 * of n sectors at *sector.  An emulated zone append becomes a write at
 * the plug's write pointer, which *sector then holds.  0 lets the write
 * go on to the driver; -EIO fails it here.
 */
int
wplug_prepare (struct zn_dev *dev, struct zone *z, uint64_t *sector,
               uint64_t n, bool append, enum zn_reason *why)
{
  struct zn_wplug *p = plug_of (dev, z);

  ZONE_ASSERT_HELD (z);
  if (!p->hashed)
    *p = (struct zn_wplug) {
      .hashed = true, .wp_offset = *sector - z->start,
    };
  if (p->need_wp_update || p->wp_offset >= z->capacity
      || (!append && *sector - z->start != p->wp_offset)) {
    *why = p->need_wp_update ? ZN_REASON_PLUG_STALE
      : p->wp_offset >= z->capacity ? ZN_REASON_FULL : ZN_REASON_NOT_AT_WP;
    /* The failed bio's completion flags the plug. */
    p->need_wp_update = true;
    return -EIO;
  }
  if (append)
    *sector = z->start + p->wp_offset;
  p->wp_offset += n;
  return 0;
}

/* The completion of a write that wplug_prepare let through: an error
 * flags the plug, and a plug at the zone's start or capacity goes.
 */
void
wplug_complete (struct zn_dev *dev, struct zone *z, int ret)
{
  struct zn_wplug *p = plug_of (dev, z);

  ZONE_ASSERT_HELD (z);
  if (ret)
    p->need_wp_update = true;
  if (p->wp_offset == 0 || p->wp_offset >= z->capacity)
    plug_remove (p);
}

/* A native zone append does not use the plug, and removes the zone's so
 * that none is left behind if appends fill the zone.
 */
void
wplug_native_append (struct zn_dev *dev, struct zone *z)
{
  ZONE_ASSERT_HELD (z);
  plug_remove (plug_of (dev, z));
}

/* A reset (to 0) or finish (to the zone size) whose bio completed without
 * error, its own or a chained one's.
 */
void
wplug_zone_mgmt (struct zn_dev *dev, struct zone *z, enum zn_zone_op op)
{
  struct zn_wplug *p = plug_of (dev, z);

  ZONE_ASSERT_HELD (z);
  if (!p->hashed)
    return;
  if (op == ZN_OP_RESET)
    plug_set_wp (z, p, 0);
  else if (op == ZN_OP_FINISH)
    plug_set_wp (z, p, z->len);
}

/* Reset-all, and a power cycle (a new disk has no plugs for zones that
 * are all EMPTY).
 */
void
wplug_remove_all (struct zn_dev *dev)
{
  ALL_ZONES_ASSERT_HELD (dev);
  for (uint32_t i = 0; i < dev->geo.nr_zones; i++)
    plug_remove (&dev->wplugs[i]);
}

/* disk_zone_wplug_sync_wp_offset: a zone report updates a flagged plug
 * with the driver's write pointer; zones without a valid one (FULL,
 * READONLY, OFFLINE) count as full and lose the plug.
 */
void
wplug_report (struct zn_dev *dev, struct zone *z, uint8_t cond, uint64_t wp)
{
  struct zn_wplug *p = plug_of (dev, z);
  uint64_t wp_offset;

  ZONE_ASSERT_HELD (z);
  if (!p->hashed || !p->need_wp_update)
    return;
  switch (cond) {
  case ZN_COND_IMP_OPEN:
  case ZN_COND_EXP_OPEN:
  case ZN_COND_CLOSED:
    wp_offset = wp - z->start;
    break;
  case ZN_COND_EMPTY:
    wp_offset = 0;
    break;
  default:
    wp_offset = UINT64_MAX;
    break;
  }
  plug_set_wp (z, p, wp_offset);
}
