/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of the device model's geometry and configuration against
 * null_blk's rules (doc/zone-rules.md, cited as "zone-rules N.M" below).
 */
#include "model.h"

/* ------------------------------------------------------------------ */
/* Geometry and configuration (zone-rules 1) */

static void
test_defaults (void)
{
  struct zn_config c;
  struct zn_dev *d;
  const struct zn_geometry *g;

  zn_config_init (&c);
  CHECK_EQ (c.size, 256000);
  CHECK_EQ (c.zone_size, 256);
  CHECK_EQ (c.zone_capacity, 0);
  CHECK_EQ (c.zone_nr_conv, 0);
  CHECK_EQ (c.zone_max_open, 0);
  CHECK_EQ (c.zone_max_active, 0);
  CHECK_EQ (c.blocksize, 512);
  CHECK_EQ (c.max_sectors, 0);
  CHECK (!c.memory_backed);

  d = create (&c);
  g = zn_dev_geometry (d);
  CHECK_EQ (g->capacity, UINT64_C (256000) * 2048);
  CHECK_EQ (g->zone_sectors, 256 * 2048);
  CHECK_EQ (g->zone_capacity, 256 * 2048);
  CHECK_EQ (g->nr_zones, 1000);
  CHECK_EQ (g->nr_conv, 0);
  CHECK_EQ (g->max_open, 0);
  CHECK_EQ (g->max_active, 0);
  CHECK_EQ (g->block_size, 512);
  CHECK_EQ (g->max_sectors, 255);
  CHECK (!g->memory_backed);
  zn_dev_destroy (d);
}

static void
test_geometry_basic (void)
{
  struct zn_dev *d = mk (8, 1, 1, 0, 0, 0);
  const struct zn_geometry *g = zn_dev_geometry (d);
  struct zn_zone zs[8];
  unsigned i;

  CHECK_EQ (g->capacity, 8 * 2048);
  CHECK_EQ (g->zone_sectors, Z);
  CHECK_EQ (g->zone_capacity, Z);
  CHECK_EQ (g->nr_zones, 8);
  CHECK_EQ (g->nr_conv, 0);
  CHECK (g->memory_backed);
  CHECK_EQ (zn_report_zones (d, 0, zs, 8), 8);
  for (i = 0; i < 8; i++) {
    CHECK_EQ (zs[i].start, i * Z);
    CHECK_EQ (zs[i].len, Z);
    CHECK_EQ (zs[i].capacity, Z);
    CHECK_EQ (zs[i].wp, i * Z);
    CHECK_EQ (zs[i].type, ZN_ZONE_SEQWRITE_REQ);
    CHECK_EQ (zs[i].cond, ZN_COND_EMPTY);
  }
  EXPECT_COUNTERS (d, 0, 0, 0);
  zn_dev_destroy (d);
}

/* zone-rules 1.3, 1.4: a runt last zone is shorter and not conventional. */
static void
test_geometry_runt (void)
{
  struct zn_dev *d = mk_nomem (1000, 256, 256, 1, 0, 0);
  const struct zn_geometry *g = zn_dev_geometry (d);
  struct zn_zone zs[4];

  CHECK_EQ (g->capacity, 1000 * 2048);
  CHECK_EQ (g->nr_zones, 4);
  CHECK_EQ (g->nr_conv, 1);
  CHECK_EQ (zn_report_zones (d, 0, zs, 4), 4);
  CHECK_EQ (zs[0].type, ZN_ZONE_CONVENTIONAL);
  CHECK_EQ (zs[0].cond, ZN_COND_NOT_WP);
  CHECK_EQ (zs[0].wp, zs[0].start + zs[0].len);
  CHECK_EQ (zs[0].len, 524288);
  CHECK_EQ (zs[0].capacity, 524288);
  CHECK_EQ (zs[2].len, 524288);
  CHECK_EQ (zs[3].start, 1572864);
  CHECK_EQ (zs[3].len, 475136);
  CHECK_EQ (zs[3].capacity, 475136);
  CHECK_EQ (zs[3].wp, 1572864);
  CHECK_EQ (zs[3].type, ZN_ZONE_SEQWRITE_REQ);
  CHECK_EQ (zs[3].cond, ZN_COND_EMPTY);

  CHECK_EQ (wr (d, 1572864, 8, 0), 0);
  EXPECT_ZONE (d, 3, ZN_COND_IMP_OPEN, 8);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_FINISH, 1572864, 475136), 0);
  EXPECT_ZONE (d, 3, ZN_COND_FULL, 475136);
  zn_dev_destroy (d);

  /* zone_capacity 0 means zone_size, so a runt is accepted. */
  d = mk_nomem (1000, 256, 0, 1, 0, 0);
  CHECK_EQ (zn_dev_geometry (d)->zone_capacity, 524288);
  zn_dev_destroy (d);
}

/* zone-rules 1.7: a runt last zone with zone_capacity < zone_size is
 * refused.
 */
static void
test_geometry_runt_cap_rejected (void)
{
  struct zn_config c = cfg (1000, 256, 200, 1, 0, 0);
  EXPECT_BAD_CONFIG (&c, "zone_capacity");
}

static void
test_geometry_cap_gap (void)
{
  struct zn_dev *d = mk (16, 2, 1, 0, 0, 0);
  const struct zn_geometry *g = zn_dev_geometry (d);
  struct zn_zone zs[8];
  unsigned i;

  CHECK_EQ (g->nr_zones, 8);
  CHECK_EQ (g->zone_sectors, 4096);
  CHECK_EQ (g->zone_capacity, 2048);
  CHECK_EQ (zn_report_zones (d, 0, zs, 8), 8);
  for (i = 0; i < 8; i++) {
    CHECK_EQ (zs[i].start, i * 4096);
    CHECK_EQ (zs[i].len, 4096);
    CHECK_EQ (zs[i].capacity, 2048);
  }
  zn_dev_destroy (d);
}

/* zone-rules 1.4: at least one sequential zone always exists. */
static void
test_geometry_conv_clamp (void)
{
  uint32_t conv[] = { 7, 8, 100 };
  unsigned i;

  for (i = 0; i < sizeof conv / sizeof conv[0]; i++) {
    struct zn_dev *d = mk (8, 1, 0, conv[i], 0, 0);
    CHECK_EQ (zn_dev_geometry (d)->nr_conv, 7);
    CHECK_EQ (zone_at (d, 6).type, ZN_ZONE_CONVENTIONAL);
    CHECK_EQ (zone_at (d, 7).type, ZN_ZONE_SEQWRITE_REQ);
    EXPECT_ZONE (d, 7, ZN_COND_EMPTY, 0);
    zn_dev_destroy (d);
  }
}

/* A size whose bytes reach 2^63 would wrap the export size (issue 15,
 * B): size is MiB, so the largest is 2^43 - 1 MiB.  Memory is allocated
 * per zone, so the largest accepted device needs few, large zones.
 */
static void
test_config_size_overflow (void)
{
  struct zn_config c;
  struct zn_dev *d;

  c = cfg (UINT64_C (1) << 44, UINT64_C (1) << 24, 0, 0, 0, 0);
  EXPECT_BAD_CONFIG (&c, "size");            /* 2^64 bytes: was 0 */
  c = cfg ((UINT64_C (1) << 44) + 16, 16, 0, 0, 0, 0);
  EXPECT_BAD_CONFIG (&c, "size");            /* was 16 MiB */
  c = cfg (UINT64_C (1) << 43, UINT64_C (1) << 23, 0, 0, 0, 0);
  EXPECT_BAD_CONFIG (&c, "size");            /* 2^63 bytes */
  c = cfg (UINT64_MAX, UINT64_C (1) << 63, 0, 0, 0, 0);
  EXPECT_BAD_CONFIG (&c, "size");

  /* The largest size, 2^43 - 1 MiB, in two zones of 2^42 MiB (the last
   * a runt): not memory-backed, so nothing per byte is allocated.
   */
  c = cfg ((UINT64_C (1) << 43) - 1, UINT64_C (1) << 42, 0, 0, 0, 0);
  c.memory_backed = false;
  d = create (&c);
  CHECK_EQ (zn_dev_geometry (d)->nr_zones, 2);
  CHECK_EQ (zn_dev_geometry (d)->capacity, ((UINT64_C (1) << 43) - 1) << 11);
  CHECK (zn_dev_geometry (d)->capacity << 9 <= (uint64_t) INT64_MAX);
  zn_dev_destroy (d);
}

/* cache_size is MiB; its bytes wrapped (issue 15, C): 2^44 MiB gave no
 * cache, 2^44 + 1 MiB a cache of 1 MiB.  Refused, memory-backed or not.
 */
static void
test_config_cache_size_overflow (void)
{
  struct zn_config c;
  struct zn_dev *d;
  uint64_t bytes, dirty;

  c = cfg (8, 1, 0, 0, 0, 0);
  c.cache_size = UINT64_C (1) << 44;
  EXPECT_BAD_CONFIG (&c, "cache_size");
  c.cache_size = (UINT64_C (1) << 44) + 1;
  EXPECT_BAD_CONFIG (&c, "cache_size");
  c.cache_size = UINT64_C (1) << 43;
  EXPECT_BAD_CONFIG (&c, "cache_size");
  c.cache_size = UINT64_MAX;
  EXPECT_BAD_CONFIG (&c, "cache_size");
  c.memory_backed = false;
  EXPECT_BAD_CONFIG (&c, "cache_size");

  /* The largest, 2^43 - 1 MiB, is a cache that never fills. */
  c = cfg (8, 1, 0, 0, 0, 0);
  c.cache_size = (UINT64_C (1) << 43) - 1;
  d = create (&c);
  zn_cache_stats (d, &bytes, &dirty);
  CHECK_EQ (bytes, ((UINT64_C (1) << 43) - 1) << 20);
  CHECK_EQ (dirty, 0);
  zn_dev_destroy (d);
}

static void
test_config_zone_size (void)
{
  struct zn_config c;
  struct zn_dev *d;

  c = cfg (8, 0, 0, 0, 0, 0);
  EXPECT_BAD_CONFIG (&c, "zone_size");
  c = cfg (12, 3, 0, 0, 0, 0);
  EXPECT_BAD_CONFIG (&c, "zone_size");
  c = cfg (8, 16, 0, 0, 0, 0);
  EXPECT_BAD_CONFIG (&c, "zone_size");

  /* zone_size == size is fine: a single sequential zone. */
  d = mk (8, 8, 0, 0, 0, 0);
  CHECK_EQ (zn_dev_geometry (d)->nr_zones, 1);
  CHECK_EQ (zn_dev_geometry (d)->nr_conv, 0);
  zn_dev_destroy (d);
}

/* A zone table larger than half the machine's memory is refused before
 * it is allocated: 2^32 - 1 zones of some hundred bytes each is far more
 * than any test machine has.
 */
static void
test_config_zone_table_too_large (void)
{
  struct zn_config c = cfg (UINT32_MAX, 1, 0, 0, 0, 0);
  char err[256] = "";

  if ((double) sysconf (_SC_PHYS_PAGES) * sysconf (_SC_PAGESIZE) > 0x1p40)
    return;                     /* a machine with more than 1 TiB */
  errno = 0;
  CHECK (zn_dev_create (&c, err, sizeof err) == NULL);
  CHECK_EQ (errno, ENOMEM);
  if (strstr (err, "size=4294967295 zone_size=1: 4294967295 zones need") == NULL
      || strstr (err, "zone table") == NULL)
    fprintf (stderr, "message: %s\n", err);
  CHECK (strstr (err, "size=4294967295 zone_size=1: 4294967295 zones need")
         != NULL);
  CHECK (strstr (err, "zone table") != NULL);
}

static void
test_config_zone_capacity (void)
{
  struct zn_config c = cfg (8, 1, 2, 0, 0, 0);
  EXPECT_BAD_CONFIG (&c, "zone_capacity");
  c = cfg (16, 2, 3, 0, 0, 0);
  EXPECT_BAD_CONFIG (&c, "zone_capacity");
}

static void
test_config_blocksize (void)
{
  uint32_t bad[] = { 0, 256, 1000, 3072, 8192 };
  uint32_t good[] = { 512, 1024, 2048, 4096 };
  unsigned i;

  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    struct zn_config c = cfg (8, 1, 0, 0, 0, 0);
    c.blocksize = bad[i];
    EXPECT_BAD_CONFIG (&c, "blocksize");
  }
  for (i = 0; i < sizeof good / sizeof good[0]; i++) {
    struct zn_config c = cfg (8, 1, 0, 0, 0, 0);
    struct zn_dev *d;
    c.blocksize = good[i];
    d = create (&c);
    CHECK_EQ (zn_dev_geometry (d)->block_size, good[i]);
    zn_dev_destroy (d);
  }
}

/* zone-rules 1.10: max_sectors is rounded down to whole blocks. */
static void
test_config_max_sectors (void)
{
  struct {
    uint32_t bs, in, out;
  } t[] = {
    { 512, 0, 255 }, { 4096, 0, 248 }, { 1024, 0, 254 },
    { 512, 100, 100 }, { 4096, 100, 96 }, { 4096, 64, 64 },
  };
  unsigned i;

  for (i = 0; i < sizeof t / sizeof t[0]; i++) {
    struct zn_config c = cfg (8, 1, 0, 0, 0, 0);
    struct zn_dev *d;
    c.blocksize = t[i].bs;
    c.max_sectors = t[i].in;
    d = create (&c);
    CHECK_EQ (zn_dev_geometry (d)->max_sectors, t[i].out);
    zn_dev_destroy (d);
  }
}

/* zone-rules 1.8 (a), (b), (c). */
static void
test_limit_clamping (void)
{
  struct {
    uint64_t size;
    uint32_t conv, open, active;
    uint32_t want_open, want_active;
  } t[] = {
    /* 8 sequential zones */
    { 8, 0, 0, 8, 0, 0 },       /* (a) active == nr_seq */
    { 8, 0, 0, 9, 0, 0 },       /* (a) active > nr_seq */
    { 8, 0, 0, 7, 0, 7 },
    { 8, 0, 5, 3, 3, 3 },       /* (b) */
    { 8, 0, 3, 3, 3, 3 },       /* (b) needs open > active */
    { 8, 0, 8, 0, 0, 0 },       /* (c) open == nr_seq */
    { 8, 0, 9, 0, 0, 0 },       /* (c) */
    { 8, 0, 7, 0, 7, 0 },
    { 8, 0, 9, 3, 3, 3 },       /* (b) applied, so (c) is not */
    { 8, 0, 9, 8, 0, 0 },       /* (a) disables active, then (c) */
    { 8, 0, 5, 8, 5, 0 },       /* (a) only */
    { 8, 0, 8, 7, 7, 7 },       /* (b) */
    { 8, 0, 2, 3, 2, 3 },       /* c4: kept */
    /* conv 1: 7 sequential zones */
    { 8, 1, 0, 7, 0, 0 },
    { 8, 1, 7, 0, 0, 0 },
    { 8, 1, 7, 7, 0, 0 },
    { 8, 1, 6, 6, 6, 6 },
    { 8, 1, 2, 3, 2, 3 },
  };
  unsigned i;

  for (i = 0; i < sizeof t / sizeof t[0]; i++) {
    struct zn_dev *d = mk (t[i].size, 1, 0, t[i].conv, t[i].open,
                           t[i].active);
    const struct zn_geometry *g = zn_dev_geometry (d);
    if (g->max_open != t[i].want_open || g->max_active != t[i].want_active)
      fprintf (stderr, "case %u: open %u active %u\n", i,
               g->max_open, g->max_active);
    CHECK_EQ (g->max_open, t[i].want_open);
    CHECK_EQ (g->max_active, t[i].want_active);
    zn_dev_destroy (d);
  }
}

/* zone-rules 1.9: once clamped to 0, the limit is really gone. */
static void
test_clamped_limit_not_enforced (void)
{
  struct zn_dev *d = mk (8, 1, 0, 0, 8, 0);
  uint32_t i;

  for (i = 0; i < 8; i++)
    CHECK_EQ (wrz (d, i, 0, 8), 0);
  EXPECT_COUNTERS (d, 8, 0, 0);
  for (i = 0; i < 8; i++)
    EXPECT_ZONE (d, i, ZN_COND_IMP_OPEN, 8);
  zn_dev_destroy (d);
}

int
main (void)
{
  test_defaults ();
  test_geometry_basic ();
  test_geometry_runt ();
  test_geometry_runt_cap_rejected ();
  test_geometry_cap_gap ();
  test_geometry_conv_clamp ();
  test_config_zone_size ();
  test_config_size_overflow ();
  test_config_cache_size_overflow ();
  test_config_zone_table_too_large ();
  test_config_zone_capacity ();
  test_config_blocksize ();
  test_config_max_sectors ();
  test_limit_clamping ();
  test_clamped_limit_not_enforced ();

  printf ("test-model-config: all tests passed\n");
  return EXIT_SUCCESS;
}
