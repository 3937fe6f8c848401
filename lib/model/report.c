/* SPDX-License-Identifier: BSD-3-Clause */
/* Zone reports and the device's counters, for the front ends and the
 * control channel.  A zone is copied under its lock and the resource lock
 * (an implicit close changes an open zone's condition under the latter
 * alone), and with zone write plugs (kernel=6.12, 7.3) a report brings the
 * plug's write pointer back to the driver's, as the block layer does.
 */
#include <errno.h>

#include "model/dev.h"

/* Zone lock and resource lock held. */
static void
report_one (struct zn_dev *dev, struct zone *z, struct zn_zone *out)
{
  ZONE_ASSERT_HELD (z);
  RES_ASSERT_HELD (dev);
  *out = (struct zn_zone) {
    .start = z->start, .len = z->len, .capacity = z->capacity,
    .wp = z->wp, .type = z->type, .cond = z->cond,
  };
  if (dev->wplugs && z->type != ZN_ZONE_CONVENTIONAL)
    wplug_report (dev, z, out->cond, out->wp);
}

/* null_blk: null_report_zones () */
unsigned
zn_report_zones (struct zn_dev *dev, uint64_t sector,
                 struct zn_zone *zones, unsigned max)
{
  unsigned n = 0;

  if (sector >= dev->geo.capacity)
    return 0;
  for (uint64_t i = sector >> dev->zone_shift;
       i < dev->geo.nr_zones && n < max; i++, n++) {
    struct zone *z = &dev->zones[i];

    zone_lock (z);
    res_lock (dev);
    report_one (dev, z, &zones[n]);
    res_unlock (dev);
    zone_unlock (z);
  }
  return n;
}

int
zn_report_zones_nowait (struct zn_dev *dev, uint64_t sector,
                        struct zn_zone *zones, unsigned max)
{
  unsigned n = 0;
  bool busy = false;

  if (sector >= dev->geo.capacity)
    return 0;
  zn_nowait = true;
  for (uint64_t i = sector >> dev->zone_shift;
       i < dev->geo.nr_zones && n < max && !busy; i++) {
    struct zone *z = &dev->zones[i];

    busy = !zone_res_lock_or_again (dev, z);
    if (!busy) {
      report_one (dev, z, &zones[n++]);
      res_unlock (dev);
      zone_unlock (z);
    }
  }
  zn_nowait = false;
  return busy ? -EAGAIN : (int) n;
}

/* Zones and counters at one instant: the control channel's snapshot. */
unsigned
zn_report_snapshot (struct zn_dev *dev, uint32_t first, struct zn_zone *zones,
                    unsigned max, struct zn_counters *counters)
{
  uint32_t nr = dev->geo.nr_zones;
  uint32_t end = first >= nr ? first : nr - first < max ? nr : first + max;
  /* The counters cover every zone, so every zone must hold still. */
  uint32_t lo = counters ? 0 : first, hi = counters ? nr : end;

  dev_lock_zones (dev, lo, hi, true);
  res_lock (dev);
  for (uint32_t i = first; i < end; i++)
    report_one (dev, &dev->zones[i], &zones[i - first]);
  if (counters) {
    counters->imp_open = count (&dev->nr_imp_open);
    counters->exp_open = count (&dev->nr_exp_open);
    counters->closed = count (&dev->nr_closed);
  }
  res_unlock (dev);
  dev_lock_zones (dev, lo, hi, false);
  return end > first ? end - first : 0;
}

void
zn_get_counters (struct zn_dev *dev, struct zn_counters *counters)
{
  res_lock (dev);
  counters->imp_open = count (&dev->nr_imp_open);
  counters->exp_open = count (&dev->nr_exp_open);
  counters->closed = count (&dev->nr_closed);
  res_unlock (dev);
}
