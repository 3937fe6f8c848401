/* SPDX-License-Identifier: BSD-3-Clause */
/* null_blk's configuration rules at power-on (6.1, and where they differ
 * 6.12 and 7.3): what is rejected, what is silently clamped, and the
 * geometry that results.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "model/dev.h"

#define MIB_SECTORS (UINT64_C(1) << (20 - ZN_SECTOR_SHIFT))
#define DEFAULT_MAX_SECTORS 255   /* BLK_SAFE_MAX_SECTORS */
#define BLK_DEF_MAX_SECTORS 2560
#define MIN_MAX_SECTORS 8         /* one page */
/* The largest size (and cache_size), MiB, whose bytes fit in an int64_t. */
#define ZN_MAX_SIZE_MIB ((uint64_t) INT64_MAX >> 20)

void
zn_config_init (struct zn_config *cfg)
{
  *cfg = (struct zn_config) {
    .size = 250 * 1024,
    .zone_size = 256,
    .zone_capacity = 0,
    .zone_nr_conv = 0,
    .zone_max_open = 0,
    .zone_max_active = 0,
    .blocksize = 512,
    .max_sectors = 0,
    .memory_backed = false,
    .kernel = ZN_KERNEL_6_1,
    .zone_append_max_sectors = INT32_MAX,   /* null_blk's INT_MAX */
    .fua = true,
  };
  zn_fault_attr_init (&cfg->timeout_inject);
  zn_fault_attr_init (&cfg->requeue_inject);
}

static const char *const kernel_names[] = {
  [ZN_KERNEL_6_1] = "6.1", [ZN_KERNEL_6_12] = "6.12", [ZN_KERNEL_7_3] = "7.3",
};

const char *
zn_kernel_name (enum zn_kernel k)
{
  return (unsigned) k < sizeof kernel_names / sizeof kernel_names[0]
    ? kernel_names[k] : "unknown";
}

int
zn_kernel_parse (const char *s, enum zn_kernel *k)
{
  for (unsigned i = 0; i < sizeof kernel_names / sizeof kernel_names[0]; i++)
    if (strcmp (s, kernel_names[i]) == 0) {
      *k = (enum zn_kernel) i;
      return 0;
    }
  return -EINVAL;
}

/* The attributes newer kernels added, with the release that added them
 * and the first modelled kernel that has them.
 */
static const struct {
  uint32_t bit;
  const char *key, *since;
  enum zn_kernel first;
} newer_keys[] = {
  { ZN_GIVEN_ZONE_APPEND_MAX_SECTORS, "zone_append_max_sectors", "6.10",
    ZN_KERNEL_6_12 },
  { ZN_GIVEN_FUA, "fua", "6.10", ZN_KERNEL_6_12 },
  { ZN_GIVEN_ZONE_FULL, "zone_full", "6.11", ZN_KERNEL_6_12 },
  { ZN_GIVEN_BADBLOCKS_ONCE, "badblocks_once", "6.15", ZN_KERNEL_7_3 },
  { ZN_GIVEN_BADBLOCKS_PARTIAL_IO, "badblocks_partial_io", "6.15",
    ZN_KERNEL_7_3 },
};

static int
reject (char *err, size_t errlen, const char *fmt, ...)
{
  va_list ap;

  if (err && errlen) {
    va_start (ap, fmt);
    vsnprintf (err, errlen, fmt, ap);
    va_end (ap);
  }
  errno = EINVAL;
  return -EINVAL;
}

static bool
is_power_of_2 (uint64_t v)
{
  return v && !(v & (v - 1));
}

/* The keys' values, each on its own and against each other, before any
 * is derived from them.
 */
static int
check_config (const struct zn_config *cfg, uint64_t zone_capacity,
              char *err, size_t errlen)
{
  if ((unsigned) cfg->kernel >= sizeof kernel_names / sizeof kernel_names[0])
    return reject (err, errlen, "kernel: must be 6.1, 6.12 or 7.3");
  for (unsigned i = 0; i < sizeof newer_keys / sizeof newer_keys[0]; i++)
    if ((cfg->given & newer_keys[i].bit) && cfg->kernel < newer_keys[i].first)
      return reject (err, errlen, "%s: null_blk of Linux %s has no %s (it "
                     "came with %s); choose kernel=%s or later",
                     newer_keys[i].key, zn_kernel_name (cfg->kernel),
                     newer_keys[i].key, newer_keys[i].since,
                     zn_kernel_name (newer_keys[i].first));

  if (!is_power_of_2 (cfg->blocksize) || cfg->blocksize < 512 || cfg->blocksize > 4096)
    return reject (err, errlen,
                   "%s: must be a power of 2 from 512 to 4096 bytes (got %" PRIu32 ")",
                   cfg->blocksize_key ? cfg->blocksize_key : "blocksize",
                   cfg->blocksize);
  if (!is_power_of_2 (cfg->zone_size))
    return reject (err, errlen,
                   "zone_size: must be a non-zero power of 2 MiB (got %" PRIu64 ")",
                   cfg->zone_size);
  /* Every front end gives the size in bytes as a signed 64-bit number
   * (NBD's export size is one to libnbd, nbdkit's get_size returns
   * int64_t), and sectors are bytes >> 9: bytes must stay below 2^63.
   */
  if (cfg->size > ZN_MAX_SIZE_MIB)
    return reject (err, errlen, "size: %" PRIu64 " MiB is too large (at most "
                   "%" PRIu64 " MiB, 8 EiB less 1 MiB)", cfg->size,
                   ZN_MAX_SIZE_MIB);
  /* cache_size is MiB too, and its bytes must fit the same way; a wrapped
   * value would give a smaller cache or none.  Refused even when not
   * memory-backed, where it is then forced to 0: the number is wrong.
   */
  if (cfg->cache_size > ZN_MAX_SIZE_MIB)
    return reject (err, errlen, "cache_size: %" PRIu64 " MiB is too large "
                   "(at most %" PRIu64 " MiB)", cfg->cache_size,
                   ZN_MAX_SIZE_MIB);
  /* null_blk reports a size of 0 as a zone larger than the device, which
   * points at the wrong key.
   */
  if (cfg->size == 0)
    return reject (err, errlen, "size: must be at least 1 MiB (got 0)");
  if (cfg->zone_size > cfg->size)
    return reject (err, errlen,
                   "zone_size: %" PRIu64 " MiB is larger than size (%" PRIu64 " MiB)",
                   cfg->zone_size, cfg->size);
  if (zone_capacity > cfg->zone_size)
    return reject (err, errlen,
                   "zone_capacity: %" PRIu64 " MiB is larger than zone_size (%" PRIu64 " MiB)",
                   zone_capacity, cfg->zone_size);
  if (zone_capacity != cfg->zone_size && cfg->size % cfg->zone_size)
    return reject (err, errlen,
                   "zone_capacity: must equal zone_size when size (%" PRIu64
                   " MiB) is not a multiple of zone_size (%" PRIu64
                   " MiB), since the last zone would be smaller",
                   cfg->size, cfg->zone_size);
  return 0;
}

int
zn_geometry_from_config (const struct zn_config *cfg, struct zn_geometry *geo,
                         char *err, size_t errlen)
{
  uint64_t zone_capacity = cfg->zone_capacity ? cfg->zone_capacity : cfg->zone_size;
  uint64_t nr_zones, nr_conv, nr_seq, max_open, max_active, max_sectors;
  uint32_t lbs_sectors, append_max;
  bool newer = cfg->kernel >= ZN_KERNEL_6_12;
  int r = check_config (cfg, zone_capacity, err, errlen);

  if (r != 0)
    return r;

  nr_zones = (cfg->size + cfg->zone_size - 1) / cfg->zone_size;
  if (nr_zones > UINT32_MAX)
    return reject (err, errlen,
                   "zone_size: %" PRIu64 " MiB gives more than 2^32 zones",
                   cfg->zone_size);

  /* The kernel clamps rather than rejects: there is always one sequential
   * zone, and a limit that cannot be reached is no limit at all.
   */
  nr_conv = cfg->zone_nr_conv < nr_zones ? cfg->zone_nr_conv : nr_zones - 1;
  nr_seq = nr_zones - nr_conv;
  max_active = cfg->zone_max_active >= nr_seq ? 0 : cfg->zone_max_active;
  max_open = cfg->zone_max_open;
  if (max_active && max_open > max_active)
    max_open = max_active;
  else if (max_open >= nr_seq)
    max_open = 0;

  lbs_sectors = cfg->blocksize >> ZN_SECTOR_SHIFT;
  max_sectors = cfg->max_sectors ? cfg->max_sectors : DEFAULT_MAX_SECTORS;
  if (max_sectors > BLK_DEF_MAX_SECTORS)
    max_sectors = BLK_DEF_MAX_SECTORS;
  /* 6.1 raised a limit below a page to one page; the atomic queue limits
   * of 6.10 refuse it, and the device does not power on.
   */
  if (max_sectors < MIN_MAX_SECTORS && newer)
    return reject (err, errlen, "max_sectors: %" PRIu64 " is less than a page "
                   "(%d sectors), which Linux %s refuses (6.1 raised it to a "
                   "page)", max_sectors, MIN_MAX_SECTORS,
                   zn_kernel_name (cfg->kernel));
  if (max_sectors < MIN_MAX_SECTORS)
    max_sectors = MIN_MAX_SECTORS;
  max_sectors -= max_sectors % lbs_sectors;

  /* The block layer's append limit: one zone, one request.  From 6.10
   * null_blk lowers it to zone_append_max_sectors, rounded down to the
   * block size and at most the zone capacity; 0 there makes the block
   * layer emulate zone append with writes, under the same limit as 6.1.
   */
  append_max = (uint32_t) (max_sectors < cfg->zone_size * MIB_SECTORS
                           ? max_sectors : cfg->zone_size * MIB_SECTORS);
  if (newer) {
    uint64_t v = cfg->zone_append_max_sectors;

    v -= v % lbs_sectors;
    if (v > zone_capacity * MIB_SECTORS)
      v = zone_capacity * MIB_SECTORS;
    if (v && v < append_max)
      append_max = (uint32_t) v;
  }

  *geo = (struct zn_geometry) {
    .capacity = cfg->size * MIB_SECTORS,
    .zone_sectors = cfg->zone_size * MIB_SECTORS,
    .zone_capacity = zone_capacity * MIB_SECTORS,
    .nr_zones = (uint32_t) nr_zones,
    .nr_conv = (uint32_t) nr_conv,
    .max_open = (uint32_t) max_open,
    .max_active = (uint32_t) max_active,
    .block_size = cfg->blocksize,
    .max_sectors = (uint32_t) max_sectors,
    .max_append_sectors = append_max,
    .memory_backed = cfg->memory_backed || cfg->backing_dir,
    .kernel = cfg->kernel,
    .append_emulated = newer && cfg->zone_append_max_sectors
                       < lbs_sectors,
    .fua = !newer || (cfg->fua && cfg->cache_size
                      && (cfg->memory_backed || cfg->backing_dir)),
  };
  return 0;
}
