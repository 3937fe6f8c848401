/* SPDX-License-Identifier: BSD-3-Clause */
/* Fixtures for the C tests that drive the device model directly. */
#ifndef ZONEDNULL_TESTS_DEV_H
#define ZONEDNULL_TESTS_DEV_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/zoned.h"

/* A configuration of this geometry (sizes in MiB), null_blk's defaults
 * otherwise.
 */
static inline struct zn_config
geometry_config (uint64_t size, uint64_t zone_size, uint64_t zone_capacity,
                 uint32_t nr_conv, uint32_t blocksize)
{
  struct zn_config c;

  zn_config_init (&c);
  c.size = size;
  c.zone_size = zone_size;
  c.zone_capacity = zone_capacity;
  c.zone_nr_conv = nr_conv;
  c.blocksize = blocksize;
  c.max_sectors = 0;
  return c;
}

/* zn_dev_create, or the test fails with the reason. */
static inline struct zn_dev *
create (const struct zn_config *cfg)
{
  char err[256] = "";
  struct zn_dev *d = zn_dev_create (cfg, err, sizeof err);

  if (d == NULL) {
    fprintf (stderr, "zn_dev_create failed: %s\n", err);
    exit (EXIT_FAILURE);
  }
  return d;
}

/* Each 8-byte word of test data depends on its absolute byte offset and
 * on a tag, so stale or misplaced data is detected.
 */
static inline uint64_t
pattern_word (uint64_t byte_off, unsigned tag)
{
  uint64_t x = (byte_off + 1) * UINT64_C (0x9E3779B97F4A7C15);

  x ^= (uint64_t) (tag + 1) * UINT64_C (0xC2B2AE3D27D4EB4F);
  x ^= x >> 29;
  return x | 1;                 /* never all zeros */
}

static inline void
fill_pattern (void *buf, uint64_t sector, uint64_t nr, unsigned tag)
{
  unsigned char *p = buf;

  for (uint64_t i = 0; i < nr * ZN_SECTOR_SIZE; i += 8) {
    uint64_t w = pattern_word (sector * ZN_SECTOR_SIZE + i, tag);

    memcpy (p + i, &w, 8);
  }
}

#endif
