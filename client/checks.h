/* SPDX-License-Identifier: BSD-3-Clause */
/* libzonednull-client: the rules of zonednull-control(5) that every
 * header and zone descriptor from a server must keep.  Programs on the
 * library divide by the zone size, index arrays by zone number and hand
 * write pointers to fio, which asserts on them: nothing unchecked may
 * reach them.  Each check returns 0, or -EPROTO with a message in why
 * naming the field and the rule.
 */
#ifndef ZONEDNULL_CLIENT_CHECKS_H
#define ZONEDNULL_CLIENT_CHECKS_H

#include <stddef.h>
#include <stdint.h>

#include "zonednull/control.h"
#include "zonednull/zone.h"

/* A decoded header: geometry, limits and zone counters. */
int zn_check_geometry (const struct zn_control_info *info, char *why,
                       size_t len);
/* A header read after connect keeps the geometry read at connect. */
int zn_check_same_geometry (const struct zn_control_info *was,
                            const struct zn_control_info *now, char *why,
                            size_t len);
/* Descriptor idx of a device of geometry geo. */
int zn_check_zone (const struct zn_control_info *geo, uint64_t idx,
                   const struct zn_zone *z, char *why, size_t len);
/* Why a control export's first page is not a version 1 header. */
void zn_describe_bad_header (const unsigned char *page, char *msg,
                             size_t len);

#endif /* ZONEDNULL_CLIENT_CHECKS_H */
