/* null_blk's configuration rules at power-on (6.1): what is rejected,
 * what is silently clamped, and the geometry that results.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "zoned-internal.h"

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
  };
}

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

int
zn_geometry_from_config (const struct zn_config *cfg, struct zn_geometry *geo,
                         char *err, size_t errlen)
{
  uint64_t zone_capacity = cfg->zone_capacity ? cfg->zone_capacity : cfg->zone_size;
  uint64_t nr_zones, nr_conv, nr_seq, max_open, max_active, max_sectors;
  uint32_t lbs_sectors;

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
  if (max_sectors < MIN_MAX_SECTORS)
    max_sectors = MIN_MAX_SECTORS;
  max_sectors -= max_sectors % lbs_sectors;

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
    .max_append_sectors = (uint32_t) (max_sectors < cfg->zone_size * MIB_SECTORS
                                      ? max_sectors : cfg->zone_size * MIB_SECTORS),
    .memory_backed = cfg->memory_backed,
  };
  return 0;
}
