/* SPDX-License-Identifier: BSD-3-Clause */
/* The NBD-to-zone rules (see nbd-zones.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "frontend/nbd-zones.h"

int
zn_nbd_trim_check (const struct zn_geometry *geo, uint64_t offset,
                   uint64_t count, char *why, size_t whylen)
{
  uint64_t zone_bytes = geo->zone_sectors << ZN_SECTOR_SHIFT;
  uint64_t size = geo->capacity << ZN_SECTOR_SHIFT;
  uint64_t end = offset + count;

  if (count == 0 || offset % zone_bytes || (count % zone_bytes && end != size)) {
    snprintf (why, whylen, "offset %" PRIu64 " length %" PRIu64
              " does not cover whole zones of %" PRIu64 " bytes",
              offset, count, zone_bytes);
    return EINVAL;
  }
  if (offset / zone_bytes < geo->nr_conv && !(offset == 0 && end == size)) {
    snprintf (why, whylen, "zone %" PRIu64 " is conventional; only "
              "sequential zones can be reset", offset / zone_bytes);
    return EINVAL;
  }
  return 0;
}

unsigned
zn_zone_extents (const struct zn_zone *z, enum zn_extent_view view,
                 struct zn_extent out[3])
{
  uint64_t zend = z->start + z->len;

  if (view == ZN_VIEW_ALLOCATION) {
    /* A READONLY zone reads its data everywhere; an OFFLINE zone cannot
     * be read at all.
     */
    uint64_t data_end =
      z->type == ZN_ZONE_CONVENTIONAL || z->cond == ZN_COND_READONLY ? zend
      : z->cond == ZN_COND_OFFLINE ? z->start : z->wp;

    out[0] = (struct zn_extent) { z->start, data_end, 0 };
    out[1] = (struct zn_extent) { data_end, zend, ZN_EXTENT_HOLE };
    return 2;
  }
  else {
    uint32_t st = (uint32_t) z->cond | (uint32_t) z->type << 4;
    uint64_t wp = z->wp, cap_end = z->start + z->capacity;

    if (z->type == ZN_ZONE_CONVENTIONAL) {
      out[0] = (struct zn_extent) { z->start, zend, st };
      return 1;
    }
    if (wp == UINT64_MAX || wp < z->start)
      wp = z->start;              /* no write pointer (READONLY, OFFLINE) */
    if (wp > cap_end)
      wp = cap_end;
    out[0] = (struct zn_extent) { z->start, wp, st };
    out[1] = (struct zn_extent) { wp, cap_end, st | ZN_EXTENT_UNWRITTEN };
    out[2] = (struct zn_extent) { cap_end, zend, st | ZN_EXTENT_BEYOND_CAP };
    return 3;
  }
}
