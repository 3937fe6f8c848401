/* SPDX-License-Identifier: BSD-3-Clause */
/* libzonednull-client: what a server sends, checked against the rules
 * of zonednull-control(5) before any program on the library uses it.
 * See checks.h.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "zonednull/control.h"
#include "zonednull/zone.h"

#include "checks.h"
#include "wire/control-wire.h"

/* Every header and descriptor is checked here, once, against the rules
 * of zonednull-control(5): programs on this library divide by the zone
 * size, index arrays by zone number and hand write pointers to fio, which
 * asserts on them.
 */

/* The largest capacity whose size in bytes NBD can carry (a signed
 * 64-bit number).
 */
#define MAX_CAPACITY ((uint64_t) INT64_MAX >> ZN_SECTOR_SHIFT)

static bool
is_power_of_2 (uint64_t v)
{
  return v && !(v & (v - 1));
}

static int __attribute__ ((format (printf, 3, 4)))
bad_header (char *why, size_t len, const char *fmt, ...)
{
  va_list ap;
  int n = snprintf (why, len, "invalid control header from the server: ");

  va_start (ap, fmt);
  if (n >= 0 && (size_t) n < len)
    vsnprintf (why + n, len - (size_t) n, fmt, ap);
  va_end (ap);
  return -EPROTO;
}

void
zn_describe_bad_header (const unsigned char *p, char *msg, size_t len)
{
  uint64_t magic = 0;
  uint32_t version = 0;

  for (int i = 0; i < 8; i++)
    magic = magic << 8 | p[i];
  for (int i = 8; i < 12; i++)
    version = version << 8 | p[i];
  if (magic != ZN_CONTROL_MAGIC)
    snprintf (msg, len, "wrong magic in the control header");
  else if (version != ZN_CONTROL_VERSION)
    snprintf (msg, len, "control channel version %u, this client speaks "
              "version %u", version, ZN_CONTROL_VERSION);
  else
    snprintf (msg, len, "unexpected header or descriptor size in the "
              "control header");
}

int
zn_check_geometry (const struct zn_control_info *i, char *why, size_t len)
{
  uint64_t zones, nr_seq;

  if (!is_power_of_2 (i->zone_sectors))
    return bad_header (why, len, "zone_sectors %llu is not a power of 2",
                       (unsigned long long) i->zone_sectors);
  if (i->capacity == 0 || i->capacity > MAX_CAPACITY)
    return bad_header (why, len, "capacity %llu is not between 1 and %llu sectors "
                       "(an NBD export of at most 2^63 - 1 bytes)",
                       (unsigned long long) i->capacity,
                       (unsigned long long) MAX_CAPACITY);
  if (i->zone_sectors > i->capacity)
    return bad_header (why, len, "zone_sectors %llu is more than the capacity "
                       "(%llu sectors)", (unsigned long long) i->zone_sectors,
                       (unsigned long long) i->capacity);
  zones = i->capacity / i->zone_sectors + (i->capacity % i->zone_sectors != 0);
  if (i->nr_zones != zones)
    return bad_header (why, len, "nr_zones %u, but a capacity of %llu sectors in "
                       "zones of %llu makes %llu zones", i->nr_zones,
                       (unsigned long long) i->capacity,
                       (unsigned long long) i->zone_sectors,
                       (unsigned long long) zones);
  if (i->zone_capacity == 0 || i->zone_capacity > i->zone_sectors)
    return bad_header (why, len, "zone_capacity %llu is not between 1 and "
                       "zone_sectors (%llu)",
                       (unsigned long long) i->zone_capacity,
                       (unsigned long long) i->zone_sectors);
  if (i->nr_conv >= i->nr_zones)
    return bad_header (why, len, "nr_conv %u leaves none of the %u zones "
                       "sequential", i->nr_conv, i->nr_zones);
  nr_seq = i->nr_zones - i->nr_conv;
  if (i->max_open > nr_seq || i->max_active > nr_seq)
    return bad_header (why, len, "%s %u is more than the %llu sequential zones",
                       i->max_open > nr_seq ? "max_open" : "max_active",
                       i->max_open > nr_seq ? i->max_open : i->max_active,
                       (unsigned long long) nr_seq);
  if (i->max_open && i->max_active && i->max_open > i->max_active)
    return bad_header (why, len, "max_open %u is more than max_active %u",
                       i->max_open, i->max_active);
  if (!is_power_of_2 (i->block_size) || i->block_size < ZN_SECTOR_SIZE
      || i->block_size / ZN_SECTOR_SIZE > i->zone_sectors)
    return bad_header (why, len, "block_size %u is not a power of 2 from 512 bytes "
                       "to the zone size", i->block_size);
  if (i->max_sectors == 0)
    return bad_header (why, len, "max_sectors is 0");
  if (i->max_append_sectors > i->zone_capacity)
    return bad_header (why, len, "max_append_sectors %u is more than zone_capacity "
                       "(%llu)", i->max_append_sectors,
                       (unsigned long long) i->zone_capacity);
  if ((uint64_t) i->imp_open + i->exp_open + i->closed > nr_seq)
    return bad_header (why, len, "imp_open %u, exp_open %u and closed %u make more "
                       "than the %llu sequential zones", i->imp_open,
                       i->exp_open, i->closed, (unsigned long long) nr_seq);
  if (i->result_errno > 4095)
    return bad_header (why, len, "result_errno %u is no errno", i->result_errno);
  return 0;
}

int
zn_check_same_geometry (const struct zn_control_info *g,
                        const struct zn_control_info *i, char *why,
                        size_t len)
{
  static const struct { const char *name; size_t offset, size; } fields[] = {
#define FIELD(f) { #f, offsetof (struct zn_control_info, f), \
                   sizeof ((struct zn_control_info *) 0)->f }
    FIELD (nr_zones), FIELD (capacity), FIELD (zone_sectors),
    FIELD (zone_capacity), FIELD (nr_conv), FIELD (max_open),
    FIELD (max_active), FIELD (block_size), FIELD (max_sectors),
    FIELD (flags), FIELD (max_append_sectors),
#undef FIELD
  };

  for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++) {
    uint64_t was = 0, now = 0;

    if (fields[k].size == sizeof (uint32_t)) {
      uint32_t a, b;

      memcpy (&a, (const char *) g + fields[k].offset, sizeof a);
      memcpy (&b, (const char *) i + fields[k].offset, sizeof b);
      was = a;
      now = b;
    }
    else {
      memcpy (&was, (const char *) g + fields[k].offset, sizeof was);
      memcpy (&now, (const char *) i + fields[k].offset, sizeof now);
    }
    if (was != now)
      return bad_header (why, len, "%s changed from %llu to %llu while connected",
                         fields[k].name, (unsigned long long) was,
                         (unsigned long long) now);
  }
  return 0;
}

static int __attribute__ ((format (printf, 4, 5)))
bad_zone (char *why, size_t len, uint64_t idx, const char *fmt, ...)
{
  va_list ap;
  int n = snprintf (why, len, "invalid zone descriptor from the server: "
                    "zone %llu: ", (unsigned long long) idx);

  va_start (ap, fmt);
  if (n >= 0 && (size_t) n < len)
    vsnprintf (why + n, len - (size_t) n, fmt, ap);
  va_end (ap);
  return -EPROTO;
}

/* As null_blk lays zones out. */
int
zn_check_zone (const struct zn_control_info *g, uint64_t idx,
               const struct zn_zone *z, char *why, size_t whylen)
{
  uint64_t start = idx * g->zone_sectors;
  uint64_t len = g->capacity - start < g->zone_sectors
    ? g->capacity - start : g->zone_sectors;
  uint64_t cap = len < g->zone_capacity ? len : g->zone_capacity;
  uint64_t lo, hi;

  if (z->start != start || z->len != len)
    return bad_zone (why, whylen, idx, "start %llu and len %llu, expected %llu and "
                     "%llu", (unsigned long long) z->start,
                     (unsigned long long) z->len,
                     (unsigned long long) start, (unsigned long long) len);
  if (idx < g->nr_conv) {
    if (z->type != ZN_ZONE_CONVENTIONAL || z->cond != ZN_COND_NOT_WP)
      return bad_zone (why, whylen, idx, "type %u and condition %u, expected a "
                       "conventional zone (type 1, condition 0) among the "
                       "first nr_conv (%u)", z->type, z->cond, g->nr_conv);
    if (z->capacity != len)
      return bad_zone (why, whylen, idx, "capacity %llu, expected the conventional "
                       "zone's len (%llu)", (unsigned long long) z->capacity,
                       (unsigned long long) len);
    return 0;
  }
  if (z->type != ZN_ZONE_SEQWRITE_REQ)
    return bad_zone (why, whylen, idx, "type %u, expected 2 (sequential write "
                     "required) after the first nr_conv (%u)", z->type,
                     g->nr_conv);
  if (z->capacity != cap)
    return bad_zone (why, whylen, idx, "capacity %llu, expected %llu (zone_capacity, "
                     "or len when less)", (unsigned long long) z->capacity,
                     (unsigned long long) cap);
  switch (z->cond) {
  case ZN_COND_EMPTY:
    lo = hi = start;
    break;
  case ZN_COND_IMP_OPEN:
  case ZN_COND_EXP_OPEN:
  case ZN_COND_CLOSED:
    lo = start;
    hi = start + cap - 1;
    break;
  case ZN_COND_FULL:
    /* At the capacity once written there, at the end after a finish. */
    lo = start + cap;
    hi = start + len;
    break;
  case ZN_COND_READONLY:
  case ZN_COND_OFFLINE:
    lo = hi = UINT64_MAX;
    break;
  default:
    return bad_zone (why, whylen, idx, "condition 0x%x is not a sequential zone's "
                     "(1-4, 0xd-0xf)", z->cond);
  }
  if (z->wp < lo || z->wp > hi)
    return bad_zone (why, whylen, idx, "write pointer %llu is outside [%llu, %llu], "
                     "the range for condition %s", (unsigned long long) z->wp,
                     (unsigned long long) lo, (unsigned long long) hi,
                     zn_cond_name (z->cond));
  return 0;
}

