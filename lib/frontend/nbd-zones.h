/* SPDX-License-Identifier: BSD-3-Clause */
/* The NBD-to-zone rules that every NBD front end (the nbdkit plugin, the
 * NBD session of zonednull-server and zonednull-ublk) shares.  NBD has no
 * zone commands, so a zoned device speaks through two of its ordinary
 * ones: TRIM of whole zones is a zone reset, and block status shows the
 * write pointers.  The front ends only format the replies.
 */
#ifndef ZONEDNULL_NBD_ZONES_H
#define ZONEDNULL_NBD_ZONES_H

#include <stddef.h>
#include <stdint.h>

#include "model/zoned.h"

/* TRIM means exactly BLKRESETZONE: whole zones, sequential ones unless
 * it covers the whole device (reset-all, which skips conventional
 * zones).  0 when [offset, offset + count) bytes is such a reset, or
 * EINVAL with the reason in why (e.g. "zone 0 is conventional; ...").
 */
int zn_nbd_trim_check (const struct zn_geometry *geo, uint64_t offset,
                       uint64_t count, char *why, size_t whylen);

/* Extents of one zone for block status, in sectors. */
struct zn_extent {
  uint64_t start, end;          /* [start, end); may be empty */
  uint32_t flags;
};

/* The views of a zone: base:allocation (data up to the write pointer, a
 * hole after it) and zonednull:zones (the zone's condition and type, and
 * where writing has not reached; see zonednull-server(8)).
 */
enum zn_extent_view { ZN_VIEW_ALLOCATION, ZN_VIEW_ZONES };

/* base:allocation's hole.  Never ZERO: null_blk reads 0xFF past the
 * write pointer.
 */
#define ZN_EXTENT_HOLE 1u
/* zonednull:zones: the condition in bits 0-3, the type in 4-7, and: */
#define ZN_EXTENT_UNWRITTEN  (1u << 8)   /* from the write pointer on */
#define ZN_EXTENT_BEYOND_CAP (1u << 9)   /* past the zone's capacity */

/* Fills at most three extents for zone z, in order; returns how many. */
unsigned zn_zone_extents (const struct zn_zone *z, enum zn_extent_view view,
                          struct zn_extent out[3]);

#endif
