/* Unit tests of the zonednull device model against null_blk's zone rules
 * (doc/zone-rules.md, cited as "zone-rules N.M" below).
 *
 * Most tests use 1 MiB zones (2048 sectors) so that the zone numbers in the
 * comments map to sectors as zone * 2048.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <strings.h>

#include "zoned.h"
#include "../common/check.h"
#include "../common/dev.h"

#define Z 2048                  /* sectors in a 1 MiB zone */
#define MAX_ZONES 64

/* ------------------------------------------------------------------ */
/* Helpers */

static struct zn_config
cfg (uint64_t size, uint64_t zone_size, uint64_t zone_cap, uint32_t conv,
     uint32_t max_open, uint32_t max_active)
{
  struct zn_config c = geometry_config (size, zone_size, zone_cap, conv, 512);

  c.zone_max_open = max_open;
  c.zone_max_active = max_active;
  c.memory_backed = true;
  return c;
}

static struct zn_dev *
mk (uint64_t size, uint64_t zone_size, uint64_t zone_cap, uint32_t conv,
    uint32_t max_open, uint32_t max_active)
{
  struct zn_config c = cfg (size, zone_size, zone_cap, conv,
                            max_open, max_active);
  return create (&c);
}

/* The same without memory backing, for large devices. */
static struct zn_dev *
mk_nomem (uint64_t size, uint64_t zone_size, uint64_t zone_cap,
          uint32_t conv, uint32_t max_open, uint32_t max_active)
{
  struct zn_config c = cfg (size, zone_size, zone_cap, conv,
                            max_open, max_active);
  c.memory_backed = false;
  return create (&c);
}

/* Expects zn_dev_create to fail with EINVAL and a message naming param. */
#define EXPECT_BAD_CONFIG(c, param)                                     \
  do {                                                                  \
    char bc_err_[256] = "";                                             \
    errno = 0;                                                          \
    CHECK (zn_dev_create ((c), bc_err_, sizeof bc_err_) == NULL);       \
    CHECK_EQ (errno, EINVAL);                                           \
    if (strstr (bc_err_, (param)) == NULL)                              \
      fprintf (stderr, "message \"%s\" does not name %s\n",             \
               bc_err_, (param));                                       \
    CHECK (strstr (bc_err_, (param)) != NULL);                          \
    errno = 0;                                                          \
    CHECK (zn_dev_create ((c), NULL, 0) == NULL);                       \
    CHECK_EQ (errno, EINVAL);                                           \
  } while (0)

static uint64_t
zstart (struct zn_dev *d, uint32_t zone)
{
  return (uint64_t) zone * zn_dev_geometry (d)->zone_sectors;
}

static struct zn_zone
zone_at (struct zn_dev *d, uint32_t zone)
{
  struct zn_zone z;

  memset (&z, 0xAB, sizeof z);
  CHECK_EQ (zn_report_zones (d, zstart (d, zone), &z, 1), 1);
  return z;
}

#define EXPECT_ZONE(d, zone, cond_, wp_off)                             \
  do {                                                                  \
    struct zn_zone ez_ = zone_at ((d), (zone));                         \
    CHECK_EQ (ez_.cond, (cond_));                                       \
    CHECK_EQ (ez_.wp - ez_.start, (wp_off));                            \
  } while (0)

#define EXPECT_ZONE_NO_WP(d, zone, cond_)                               \
  do {                                                                  \
    struct zn_zone ez_ = zone_at ((d), (zone));                         \
    CHECK_EQ (ez_.cond, (cond_));                                       \
    CHECK (ez_.wp == UINT64_MAX);                                       \
  } while (0)

#define EXPECT_COUNTERS(d, imp_, exp_, closed_)                         \
  do {                                                                  \
    struct zn_counters ec_;                                             \
    memset (&ec_, 0xAB, sizeof ec_);                                    \
    zn_get_counters ((d), &ec_);                                        \
    CHECK_EQ (ec_.imp_open, (imp_));                                    \
    CHECK_EQ (ec_.exp_open, (exp_));                                    \
    CHECK_EQ (ec_.closed, (closed_));                                   \
  } while (0)

/* A zone op on exactly one zone. */
static int
op1 (struct zn_dev *d, enum zn_zone_op op, uint32_t zone)
{
  return zn_zone_mgmt (d, op, zstart (d, zone),
                       zn_dev_geometry (d)->zone_sectors);
}

/* A zone op on zones [first, first+count). */
static int
opn (struct zn_dev *d, enum zn_zone_op op, uint32_t first, uint32_t count)
{
  return zn_zone_mgmt (d, op, zstart (d, first),
                       (uint64_t) count * zn_dev_geometry (d)->zone_sectors);
}

static void *
xmalloc (size_t n)
{
  void *p = malloc (n ? n : 1);
  CHECK (p != NULL);
  return p;
}

static int
wr (struct zn_dev *d, uint64_t sector, uint64_t nr, unsigned tag)
{
  void *buf = xmalloc (nr * ZN_SECTOR_SIZE);
  int r;

  fill_pattern (buf, sector, nr, tag);
  r = zn_write (d, buf, sector, nr);
  free (buf);
  return r;
}

/* Write at an offset relative to a zone's start. */
static int
wrz (struct zn_dev *d, uint32_t zone, uint64_t off, uint64_t nr)
{
  return wr (d, zstart (d, zone) + off, nr, 0);
}

/* Reads [sector, sector+nr) and checks it holds the pattern with tag. */
static bool
reads_pattern (struct zn_dev *d, uint64_t sector, uint64_t nr, unsigned tag)
{
  unsigned char *buf = xmalloc (nr * ZN_SECTOR_SIZE);
  unsigned char *want = xmalloc (nr * ZN_SECTOR_SIZE);
  bool ok;
  int r;

  memset (buf, 0xA5, nr * ZN_SECTOR_SIZE);
  fill_pattern (want, sector, nr, tag);
  r = zn_read (d, buf, sector, nr);
  ok = r == 0 && memcmp (buf, want, nr * ZN_SECTOR_SIZE) == 0;
  if (!ok)
    fprintf (stderr, "read %" PRIu64 "+%" PRIu64 ": r=%d, pattern %u "
             "expected\n", sector, nr, r, tag);
  free (want);
  free (buf);
  return ok;
}

/* Reads [sector, sector+nr) and checks every byte is b. */
static bool
reads_fill (struct zn_dev *d, uint64_t sector, uint64_t nr, unsigned char b)
{
  unsigned char *buf = xmalloc (nr * ZN_SECTOR_SIZE);
  bool ok;
  uint64_t i;
  int r;

  memset (buf, 0xA5, nr * ZN_SECTOR_SIZE);
  r = zn_read (d, buf, sector, nr);
  ok = r == 0;
  for (i = 0; ok && i < nr * ZN_SECTOR_SIZE; i++)
    if (buf[i] != b) {
      fprintf (stderr, "read %" PRIu64 "+%" PRIu64 ": byte %" PRIu64
               " is 0x%02x, expected 0x%02x\n", sector, nr, i, buf[i], b);
      ok = false;
    }
  if (r != 0)
    fprintf (stderr, "read %" PRIu64 "+%" PRIu64 ": r=%d\n", sector, nr, r);
  free (buf);
  return ok;
}

/* The whole observable state, to check that failed ops change nothing. */
struct snapshot {
  unsigned n;
  struct zn_zone zones[MAX_ZONES];
  struct zn_counters c;
};

static void
snap (struct zn_dev *d, struct snapshot *s)
{
  memset (s, 0, sizeof *s);
  s->n = zn_report_zones (d, 0, s->zones, MAX_ZONES);
  CHECK_EQ (s->n, zn_dev_geometry (d)->nr_zones);
  zn_get_counters (d, &s->c);
}

static bool
same_state (struct zn_dev *d, const struct snapshot *before)
{
  struct snapshot now;
  unsigned i;

  snap (d, &now);
  if (now.c.imp_open != before->c.imp_open
      || now.c.exp_open != before->c.exp_open
      || now.c.closed != before->c.closed) {
    fprintf (stderr, "counters changed\n");
    return false;
  }
  for (i = 0; i < now.n; i++)
    if (now.zones[i].cond != before->zones[i].cond
        || now.zones[i].wp != before->zones[i].wp) {
      fprintf (stderr, "zone %u changed\n", i);
      return false;
    }
  return true;
}

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

/* ------------------------------------------------------------------ */
/* State machine without limits (zone-rules 4, 5.2).  Zone 0 is
 * conventional.
 */

static void
test_from_empty (void)
{
  struct zn_dev *d = mk (8, 1, 0, 1, 0, 0);

  CHECK_EQ (op1 (d, ZN_OP_OPEN, 1), 0);
  EXPECT_ZONE (d, 1, ZN_COND_EXP_OPEN, 0);
  EXPECT_COUNTERS (d, 0, 1, 0);

  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 2), -EIO);
  EXPECT_ZONE (d, 2, ZN_COND_EMPTY, 0);
  EXPECT_COUNTERS (d, 0, 1, 0);

  CHECK_EQ (op1 (d, ZN_OP_FINISH, 3), 0);
  EXPECT_ZONE (d, 3, ZN_COND_FULL, Z);
  EXPECT_COUNTERS (d, 0, 1, 0);

  CHECK_EQ (op1 (d, ZN_OP_RESET, 4), 0);
  EXPECT_ZONE (d, 4, ZN_COND_EMPTY, 0);
  EXPECT_COUNTERS (d, 0, 1, 0);

  /* Write at the wp of an EMPTY zone: implicitly opened. */
  CHECK_EQ (wrz (d, 5, 0, 8), 0);
  EXPECT_ZONE (d, 5, ZN_COND_IMP_OPEN, 8);
  EXPECT_COUNTERS (d, 1, 1, 0);
  zn_dev_destroy (d);
}

static void
test_from_imp_open (void)
{
  struct zn_dev *d = mk (8, 1, 0, 1, 0, 0);

  CHECK_EQ (wrz (d, 1, 0, 8), 0);
  EXPECT_COUNTERS (d, 1, 0, 0);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 1), 0);
  EXPECT_ZONE (d, 1, ZN_COND_EXP_OPEN, 8);
  EXPECT_COUNTERS (d, 0, 1, 0);

  CHECK_EQ (wrz (d, 2, 0, 8), 0);
  EXPECT_COUNTERS (d, 1, 1, 0);
  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 2), 0);
  EXPECT_ZONE (d, 2, ZN_COND_CLOSED, 8);
  EXPECT_COUNTERS (d, 0, 1, 1);

  CHECK_EQ (wrz (d, 3, 0, 8), 0);
  EXPECT_COUNTERS (d, 1, 1, 1);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 3), 0);
  EXPECT_ZONE (d, 3, ZN_COND_FULL, Z);
  EXPECT_COUNTERS (d, 0, 1, 1);

  CHECK_EQ (wrz (d, 4, 0, 8), 0);
  EXPECT_COUNTERS (d, 1, 1, 1);
  CHECK_EQ (op1 (d, ZN_OP_RESET, 4), 0);
  EXPECT_ZONE (d, 4, ZN_COND_EMPTY, 0);
  EXPECT_COUNTERS (d, 0, 1, 1);
  zn_dev_destroy (d);
}

static void
test_from_exp_open (void)
{
  struct zn_dev *d = mk (8, 1, 0, 1, 0, 0);

  /* OPEN of EXP_OPEN: no change. */
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 1), 0);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 1), 0);
  EXPECT_ZONE (d, 1, ZN_COND_EXP_OPEN, 0);
  EXPECT_COUNTERS (d, 0, 1, 0);

  /* A write keeps EXP_OPEN. */
  CHECK_EQ (wrz (d, 1, 0, 16), 0);
  EXPECT_ZONE (d, 1, ZN_COND_EXP_OPEN, 16);
  EXPECT_COUNTERS (d, 0, 1, 0);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 1), 0);
  EXPECT_ZONE (d, 1, ZN_COND_EXP_OPEN, 16);

  /* CLOSE: CLOSED when written, EMPTY when wp == start. */
  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 1), 0);
  EXPECT_ZONE (d, 1, ZN_COND_CLOSED, 16);
  EXPECT_COUNTERS (d, 0, 0, 1);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 2), 0);
  EXPECT_COUNTERS (d, 0, 1, 1);
  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 2), 0);
  EXPECT_ZONE (d, 2, ZN_COND_EMPTY, 0);
  EXPECT_COUNTERS (d, 0, 0, 1);

  CHECK_EQ (op1 (d, ZN_OP_OPEN, 3), 0);
  CHECK_EQ (wrz (d, 3, 0, 8), 0);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 3), 0);
  EXPECT_ZONE (d, 3, ZN_COND_FULL, Z);
  EXPECT_COUNTERS (d, 0, 0, 1);

  CHECK_EQ (op1 (d, ZN_OP_OPEN, 4), 0);
  CHECK_EQ (wrz (d, 4, 0, 8), 0);
  CHECK_EQ (op1 (d, ZN_OP_RESET, 4), 0);
  EXPECT_ZONE (d, 4, ZN_COND_EMPTY, 0);
  EXPECT_COUNTERS (d, 0, 0, 1);

  /* Filling an EXP_OPEN zone by writes makes it FULL (exp-1). */
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 5), 0);
  EXPECT_COUNTERS (d, 0, 1, 1);
  CHECK_EQ (wrz (d, 5, 0, Z), 0);
  EXPECT_ZONE (d, 5, ZN_COND_FULL, Z);
  EXPECT_COUNTERS (d, 0, 0, 1);
  zn_dev_destroy (d);
}

static void
test_from_closed (void)
{
  struct zn_dev *d = mk (8, 1, 0, 1, 0, 0);
  uint32_t i;

  for (i = 1; i <= 5; i++) {
    CHECK_EQ (wrz (d, i, 0, 8), 0);
    CHECK_EQ (op1 (d, ZN_OP_CLOSE, i), 0);
    EXPECT_ZONE (d, i, ZN_COND_CLOSED, 8);
  }
  EXPECT_COUNTERS (d, 0, 0, 5);

  CHECK_EQ (op1 (d, ZN_OP_OPEN, 1), 0);
  EXPECT_ZONE (d, 1, ZN_COND_EXP_OPEN, 8);
  EXPECT_COUNTERS (d, 0, 1, 4);

  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 2), 0);
  EXPECT_ZONE (d, 2, ZN_COND_CLOSED, 8);
  EXPECT_COUNTERS (d, 0, 1, 4);

  CHECK_EQ (op1 (d, ZN_OP_FINISH, 3), 0);
  EXPECT_ZONE (d, 3, ZN_COND_FULL, Z);
  EXPECT_COUNTERS (d, 0, 1, 3);

  CHECK_EQ (op1 (d, ZN_OP_RESET, 4), 0);
  EXPECT_ZONE (d, 4, ZN_COND_EMPTY, 0);
  EXPECT_COUNTERS (d, 0, 1, 2);

  /* zone-rules 4, step 5: a write at the wp of a CLOSED zone reopens it. */
  CHECK_EQ (wrz (d, 5, 8, 8), 0);
  EXPECT_ZONE (d, 5, ZN_COND_IMP_OPEN, 16);
  EXPECT_COUNTERS (d, 1, 1, 1);
  zn_dev_destroy (d);
}

static void
test_from_full (void)
{
  struct zn_dev *d = mk (8, 1, 0, 1, 0, 0);
  uint32_t i;

  for (i = 1; i <= 4; i++) {
    CHECK_EQ (wrz (d, i, 0, Z), 0);
    EXPECT_ZONE (d, i, ZN_COND_FULL, Z);
  }
  EXPECT_COUNTERS (d, 0, 0, 0);

  CHECK_EQ (op1 (d, ZN_OP_OPEN, 1), -EIO);
  EXPECT_ZONE (d, 1, ZN_COND_FULL, Z);
  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 2), -EIO);
  EXPECT_ZONE (d, 2, ZN_COND_FULL, Z);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 3), 0);
  EXPECT_ZONE (d, 3, ZN_COND_FULL, Z);
  CHECK_EQ (op1 (d, ZN_OP_RESET, 4), 0);
  EXPECT_ZONE (d, 4, ZN_COND_EMPTY, 0);
  EXPECT_COUNTERS (d, 0, 0, 0);
  zn_dev_destroy (d);
}

/* zone-rules 4, 5.2: conventional zones have no state. */
static void
test_conventional (void)
{
  struct zn_dev *d = mk (8, 1, 0, 2, 0, 0);
  enum zn_zone_op ops[] = { ZN_OP_OPEN, ZN_OP_CLOSE, ZN_OP_FINISH,
                            ZN_OP_RESET };
  unsigned i;

  for (i = 0; i < 4; i++) {
    CHECK_EQ (op1 (d, ops[i], 0), -EIO);
    CHECK_EQ (op1 (d, ops[i], 1), -EIO);
  }
  /* Writes anywhere, in any order, overwriting. */
  CHECK_EQ (wrz (d, 0, 100, 8), 0);
  CHECK_EQ (wrz (d, 0, 8, 8), 0);
  CHECK_EQ (wrz (d, 0, 8, 8), 0);
  CHECK_EQ (wrz (d, 1, Z - 8, 8), 0);
  CHECK_EQ (wrz (d, 0, 0, 2 * Z), 0);
  for (i = 0; i < 2; i++) {
    struct zn_zone z = zone_at (d, i);
    CHECK_EQ (z.type, ZN_ZONE_CONVENTIONAL);
    CHECK_EQ (z.cond, ZN_COND_NOT_WP);
    CHECK_EQ (z.wp, z.start + z.len);
    CHECK_EQ (z.capacity, Z);
  }
  EXPECT_COUNTERS (d, 0, 0, 0);
  zn_dev_destroy (d);
}

/* zone-rules 4, steps 1 to 3 and 7. */
static void
test_write_wp_rules (void)
{
  struct zn_dev *d = mk (16, 2, 1, 0, 0, 0); /* len 4096, cap 2048 */
  struct snapshot s;

  /* Ahead of the wp of an EMPTY zone. */
  snap (d, &s);
  CHECK_EQ (wrz (d, 1, 8, 8), -EIO);
  CHECK (same_state (d, &s));

  CHECK_EQ (wrz (d, 1, 0, 16), 0);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 16);
  snap (d, &s);
  CHECK_EQ (wrz (d, 1, 8, 8), -EIO);            /* behind */
  CHECK_EQ (wrz (d, 1, 0, 8), -EIO);            /* at start */
  CHECK_EQ (wrz (d, 1, 24, 8), -EIO);           /* ahead */
  CHECK (same_state (d, &s));
  CHECK_EQ (wrz (d, 1, 16, 8), 0);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 24);

  /* Past the capacity: rejected as a whole, nothing written. */
  CHECK_EQ (wrz (d, 1, 24, 2048 - 24 - 8), 0);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 2040);
  snap (d, &s);
  CHECK_EQ (wrz (d, 1, 2040, 16), -EIO);
  CHECK (same_state (d, &s));
  CHECK (reads_fill (d, zstart (d, 1) + 2040, 16, 0xFF));

  /* Filling to the capacity: FULL with wp = start + cap. */
  CHECK_EQ (wrz (d, 1, 2040, 8), 0);
  EXPECT_ZONE (d, 1, ZN_COND_FULL, 2048);
  EXPECT_COUNTERS (d, 0, 0, 0);

  /* Writes to FULL: at start, at the old wp, in the gap. */
  snap (d, &s);
  CHECK_EQ (wrz (d, 1, 0, 8), -EIO);
  CHECK_EQ (wrz (d, 1, 2048, 8), -EIO);
  CHECK_EQ (wrz (d, 1, 4088, 8), -EIO);
  CHECK (same_state (d, &s));

  /* Finish: FULL with wp = start + len (zone-rules 5.2, rule 2). */
  CHECK_EQ (wrz (d, 2, 0, 8), 0);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 2), 0);
  EXPECT_ZONE (d, 2, ZN_COND_FULL, 4096);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 3), 0);
  EXPECT_ZONE (d, 3, ZN_COND_FULL, 4096);
  /* Finish of FULL keeps start + cap on 6.1 (zone-rules 11.1). */
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 1), 0);
  EXPECT_ZONE (d, 1, ZN_COND_FULL, 2048);
  EXPECT_COUNTERS (d, 0, 0, 0);
  zn_dev_destroy (d);
}

/* ------------------------------------------------------------------ */
/* Open and active slots (zone-rules 3) */

/* c4 geometry: zone 0 conventional, 1..7 sequential, open 2, active 3. */
static struct zn_dev *
mk_c4 (void)
{
  struct zn_dev *d = mk (8, 1, 1, 1, 2, 3);
  CHECK_EQ (zn_dev_geometry (d)->max_open, 2);
  CHECK_EQ (zn_dev_geometry (d)->max_active, 3);
  return d;
}

static void
test_limits_open_and_active (void)
{
  struct zn_dev *d = mk_c4 ();
  struct snapshot s;

  CHECK_EQ (wrz (d, 1, 0, 8), 0);
  CHECK_EQ (wrz (d, 2, 0, 8), 0);
  EXPECT_COUNTERS (d, 2, 0, 0);

  /* Open slots full, active 2 < 3: zone 1 (the cursor starts at nr_conv)
   * is closed implicitly.
   */
  CHECK_EQ (wrz (d, 3, 0, 8), 0);
  EXPECT_ZONE (d, 1, ZN_COND_CLOSED, 8);
  EXPECT_ZONE (d, 2, ZN_COND_IMP_OPEN, 8);
  EXPECT_ZONE (d, 3, ZN_COND_IMP_OPEN, 8);
  EXPECT_COUNTERS (d, 2, 0, 1);

  /* active == max_active: every activation fails with EOVERFLOW even
   * though the open check would fail too (3.6); nothing changes (3.7).
   */
  snap (d, &s);
  CHECK_EQ (wrz (d, 4, 0, 8), -EOVERFLOW);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 4), -EOVERFLOW);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 4), -EOVERFLOW);
  CHECK (same_state (d, &s));

  /* 3.3: a CLOSED target needs an open slot; the implicit close is refused
   * because active == max_active, although reopening zone 1 would not
   * change the active count.
   */
  CHECK_EQ (wrz (d, 1, 8, 8), -ETOOMANYREFS);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 1), -ETOOMANYREFS);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 1), -ETOOMANYREFS);
  CHECK (same_state (d, &s));

  /* Ops that need no resources still work. */
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 2), 0);         /* IMP -> EXP, no check */
  EXPECT_COUNTERS (d, 1, 1, 1);
  CHECK_EQ (wrz (d, 2, 8, 8), 0);
  EXPECT_ZONE (d, 2, ZN_COND_EXP_OPEN, 16);

  /* Free an open slot: zone 1 can be reopened by a write. */
  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 3), 0);
  EXPECT_COUNTERS (d, 0, 1, 2);
  CHECK_EQ (wrz (d, 1, 8, 8), 0);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 16);
  EXPECT_COUNTERS (d, 1, 1, 1);

  /* Free an active slot: finish of EMPTY activates, and as the open
   * slots are full (zone 1 IMP, zone 2 EXP) closes zone 1 implicitly:
   * the scan starts after the last victim (zone 2) and wraps.
   */
  CHECK_EQ (op1 (d, ZN_OP_RESET, 3), 0);
  EXPECT_COUNTERS (d, 1, 1, 0);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 4), 0);
  EXPECT_ZONE (d, 4, ZN_COND_FULL, Z);
  EXPECT_ZONE (d, 1, ZN_COND_CLOSED, 16);
  EXPECT_ZONE (d, 2, ZN_COND_EXP_OPEN, 16);
  EXPECT_COUNTERS (d, 0, 1, 1);

  CHECK_EQ (op1 (d, ZN_OP_OPEN, 5), 0);
  EXPECT_ZONE (d, 5, ZN_COND_EXP_OPEN, 0);
  EXPECT_COUNTERS (d, 0, 2, 1);

  /* No IMP_OPEN zone left: EOVERFLOW for EMPTY (active is 3),
   * ETOOMANYREFS for CLOSED.
   */
  snap (d, &s);
  CHECK_EQ (wrz (d, 6, 0, 8), -EOVERFLOW);
  CHECK_EQ (wrz (d, 1, 16, 8), -ETOOMANYREFS);
  CHECK (same_state (d, &s));

  /* Closing an EXP_OPEN zone at its start frees both slots. */
  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 5), 0);
  EXPECT_ZONE (d, 5, ZN_COND_EMPTY, 0);
  EXPECT_COUNTERS (d, 0, 1, 1);
  CHECK_EQ (wrz (d, 6, 0, 8), 0);
  EXPECT_COUNTERS (d, 1, 1, 1);
  zn_dev_destroy (d);
}

/* ETOOMANYREFS for an EMPTY target: active has room, open slots are all
 * taken by EXP_OPEN zones, which are never closed implicitly (3.5).
 */
static void
test_limits_exp_open_not_victim (void)
{
  struct zn_dev *d = mk (8, 1, 1, 0, 2, 0);
  struct snapshot s;

  CHECK_EQ (op1 (d, ZN_OP_OPEN, 0), 0);
  CHECK_EQ (wrz (d, 1, 0, 8), 0);
  EXPECT_COUNTERS (d, 1, 1, 0);

  /* The cursor (0) points at the EXP_OPEN zone 0; zone 1 is chosen. */
  CHECK_EQ (wrz (d, 2, 0, 8), 0);
  EXPECT_ZONE (d, 0, ZN_COND_EXP_OPEN, 0);
  EXPECT_ZONE (d, 1, ZN_COND_CLOSED, 8);
  EXPECT_ZONE (d, 2, ZN_COND_IMP_OPEN, 8);
  EXPECT_COUNTERS (d, 1, 1, 1);

  CHECK_EQ (op1 (d, ZN_OP_OPEN, 3), 0);
  EXPECT_ZONE (d, 2, ZN_COND_CLOSED, 8);
  EXPECT_ZONE (d, 3, ZN_COND_EXP_OPEN, 0);
  EXPECT_COUNTERS (d, 0, 2, 2);

  snap (d, &s);
  CHECK_EQ (wrz (d, 4, 0, 8), -ETOOMANYREFS);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 4), -ETOOMANYREFS);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 4), -ETOOMANYREFS);
  CHECK_EQ (wrz (d, 1, 8, 8), -ETOOMANYREFS);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 1), -ETOOMANYREFS);
  /* Finish of CLOSED needs an open slot (zone-rules 5.2). */
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 1), -ETOOMANYREFS);
  CHECK (same_state (d, &s));

  /* Writes to EXP_OPEN zones need nothing. */
  CHECK_EQ (wrz (d, 0, 0, 8), 0);
  EXPECT_ZONE (d, 0, ZN_COND_EXP_OPEN, 8);

  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 3), 0);
  EXPECT_ZONE (d, 3, ZN_COND_EMPTY, 0);
  EXPECT_COUNTERS (d, 0, 1, 2);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 1), 0);
  EXPECT_ZONE (d, 1, ZN_COND_FULL, Z);
  EXPECT_COUNTERS (d, 0, 1, 1);
  zn_dev_destroy (d);
}

/* Finish of a CLOSED zone with open slots full takes a slot by closing an
 * IMP_OPEN zone implicitly.
 */
static void
test_limits_finish_closed_implicit_close (void)
{
  struct zn_dev *d = mk (8, 1, 1, 1, 2, 0);

  CHECK_EQ (wrz (d, 1, 0, 8), 0);
  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 1), 0);
  CHECK_EQ (wrz (d, 2, 0, 8), 0);
  CHECK_EQ (wrz (d, 3, 0, 8), 0);
  EXPECT_COUNTERS (d, 2, 0, 1);

  CHECK_EQ (op1 (d, ZN_OP_FINISH, 1), 0);
  EXPECT_ZONE (d, 1, ZN_COND_FULL, Z);
  EXPECT_ZONE (d, 2, ZN_COND_CLOSED, 8);
  EXPECT_ZONE (d, 3, ZN_COND_IMP_OPEN, 8);
  EXPECT_COUNTERS (d, 1, 0, 1);

  /* Finish of EMPTY can close another zone implicitly too. */
  CHECK_EQ (wrz (d, 4, 0, 8), 0);
  EXPECT_COUNTERS (d, 2, 0, 1);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 5), 0);
  EXPECT_ZONE (d, 5, ZN_COND_FULL, Z);
  EXPECT_ZONE (d, 3, ZN_COND_CLOSED, 8);
  EXPECT_ZONE (d, 4, ZN_COND_IMP_OPEN, 8);
  EXPECT_COUNTERS (d, 1, 0, 2);
  zn_dev_destroy (d);
}

/* zone-rules 3.4: round-robin victim selection from a cursor that only
 * power-on sets.
 */
static void
test_limits_round_robin (void)
{
  struct zn_dev *d = mk (8, 1, 1, 0, 2, 0);

  CHECK_EQ (wrz (d, 0, 0, 8), 0);
  CHECK_EQ (wrz (d, 1, 0, 8), 0);

  CHECK_EQ (wrz (d, 2, 0, 8), 0);               /* victim 0, cursor 1 */
  EXPECT_ZONE (d, 0, ZN_COND_CLOSED, 8);
  EXPECT_COUNTERS (d, 2, 0, 1);

  CHECK_EQ (wrz (d, 0, 8, 8), 0);               /* victim 1, cursor 2 */
  EXPECT_ZONE (d, 0, ZN_COND_IMP_OPEN, 16);
  EXPECT_ZONE (d, 1, ZN_COND_CLOSED, 8);
  EXPECT_COUNTERS (d, 2, 0, 1);

  CHECK_EQ (wrz (d, 3, 0, 8), 0);               /* victim 2, cursor 3 */
  EXPECT_ZONE (d, 2, ZN_COND_CLOSED, 8);
  EXPECT_COUNTERS (d, 2, 0, 2);

  /* Zone 0 is the lowest IMP_OPEN zone, but the cursor is at 3. */
  CHECK_EQ (wrz (d, 4, 0, 8), 0);               /* victim 3, cursor 4 */
  EXPECT_ZONE (d, 0, ZN_COND_IMP_OPEN, 16);
  EXPECT_ZONE (d, 3, ZN_COND_CLOSED, 8);
  EXPECT_ZONE (d, 4, ZN_COND_IMP_OPEN, 8);
  EXPECT_COUNTERS (d, 2, 0, 3);

  /* Reset-all does not move the cursor: with zones 1 and 5 open, the
   * scan from 4 finds zone 5 first.
   */
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_RESET, 0, zn_dev_geometry (d)->capacity),
            0);
  EXPECT_COUNTERS (d, 0, 0, 0);
  CHECK_EQ (wrz (d, 5, 0, 8), 0);
  CHECK_EQ (wrz (d, 1, 0, 8), 0);
  CHECK_EQ (wrz (d, 2, 0, 8), 0);               /* victim 5, cursor 6 */
  EXPECT_ZONE (d, 5, ZN_COND_CLOSED, 8);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 8);
  EXPECT_COUNTERS (d, 2, 0, 1);

  /* Wrap around: 6 and 7 hold no IMP_OPEN zone, so zone 1 is next. */
  CHECK_EQ (wrz (d, 7, 0, 8), 0);               /* victim 1, cursor 2 */
  EXPECT_ZONE (d, 1, ZN_COND_CLOSED, 8);
  EXPECT_ZONE (d, 2, ZN_COND_IMP_OPEN, 8);
  EXPECT_ZONE (d, 7, ZN_COND_IMP_OPEN, 8);
  CHECK_EQ (wrz (d, 6, 0, 8), 0);               /* victim 2, cursor 3 */
  EXPECT_ZONE (d, 2, ZN_COND_CLOSED, 8);
  EXPECT_ZONE (d, 7, ZN_COND_IMP_OPEN, 8);
  EXPECT_COUNTERS (d, 2, 0, 3);

  /* A per-zone reset does not move it either: with zones 0 and 7 open
   * the scan from 3 finds zone 7.
   */
  CHECK_EQ (op1 (d, ZN_OP_RESET, 6), 0);
  EXPECT_COUNTERS (d, 1, 0, 3);
  CHECK_EQ (wrz (d, 0, 0, 8), 0);
  EXPECT_COUNTERS (d, 2, 0, 3);
  CHECK_EQ (wrz (d, 1, 8, 8), 0);               /* victim 7, cursor 0 */
  EXPECT_ZONE (d, 7, ZN_COND_CLOSED, 8);
  EXPECT_ZONE (d, 0, ZN_COND_IMP_OPEN, 8);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 16);
  EXPECT_COUNTERS (d, 2, 0, 3);
  zn_dev_destroy (d);
}

/* zone-rules 3.4: the scan wraps from the last zone back to nr_conv. */
static void
test_limits_cursor_wraps_to_nr_conv (void)
{
  struct zn_dev *d = mk (8, 1, 1, 1, 2, 0);

  CHECK_EQ (wrz (d, 7, 0, 8), 0);
  CHECK_EQ (wrz (d, 6, 0, 8), 0);
  CHECK_EQ (wrz (d, 1, 0, 8), 0);               /* victim 6, cursor 7 */
  EXPECT_ZONE (d, 6, ZN_COND_CLOSED, 8);
  CHECK_EQ (wrz (d, 2, 0, 8), 0);               /* victim 7, cursor 1 */
  EXPECT_ZONE (d, 7, ZN_COND_CLOSED, 8);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 8);
  CHECK_EQ (wrz (d, 3, 0, 8), 0);               /* victim 1, cursor 2 */
  EXPECT_ZONE (d, 1, ZN_COND_CLOSED, 8);
  EXPECT_ZONE (d, 2, ZN_COND_IMP_OPEN, 8);
  EXPECT_ZONE (d, 3, ZN_COND_IMP_OPEN, 8);
  EXPECT_COUNTERS (d, 2, 0, 3);
  CHECK_EQ (zone_at (d, 0).cond, ZN_COND_NOT_WP);
  zn_dev_destroy (d);
}

/* c7: active limit only.  With max_open 0 there is no open check. */
static void
test_limits_active_only (void)
{
  struct zn_dev *d = mk (8, 1, 1, 0, 0, 2);
  struct snapshot s;

  CHECK_EQ (zn_dev_geometry (d)->max_open, 0);
  CHECK_EQ (zn_dev_geometry (d)->max_active, 2);
  CHECK_EQ (wrz (d, 0, 0, 8), 0);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 1), 0);
  snap (d, &s);
  CHECK_EQ (wrz (d, 2, 0, 8), -EOVERFLOW);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 2), -EOVERFLOW);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 2), -EOVERFLOW);
  CHECK (same_state (d, &s));

  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 0), 0);
  EXPECT_COUNTERS (d, 0, 1, 1);
  CHECK_EQ (wrz (d, 2, 0, 8), -EOVERFLOW);
  CHECK_EQ (wrz (d, 0, 8, 8), 0);               /* CLOSED: no limit hit */
  EXPECT_COUNTERS (d, 1, 1, 0);

  /* A zone filled by writes releases its active slot. */
  CHECK_EQ (wrz (d, 0, 16, Z - 16), 0);
  EXPECT_ZONE (d, 0, ZN_COND_FULL, Z);
  EXPECT_COUNTERS (d, 0, 1, 0);
  CHECK_EQ (wrz (d, 2, 0, 8), 0);
  EXPECT_COUNTERS (d, 1, 1, 0);
  zn_dev_destroy (d);
}

/* c6: open limit only (3). */
static void
test_limits_open_only (void)
{
  struct zn_dev *d = mk (8, 1, 1, 0, 3, 0);
  uint32_t i;

  for (i = 0; i < 3; i++)
    CHECK_EQ (wrz (d, i, 0, 8), 0);
  EXPECT_COUNTERS (d, 3, 0, 0);
  /* Each new zone closes one, round-robin; the active count grows freely. */
  for (i = 3; i < 8; i++) {
    CHECK_EQ (wrz (d, i, 0, 8), 0);
    EXPECT_ZONE (d, i - 3, ZN_COND_CLOSED, 8);
  }
  EXPECT_COUNTERS (d, 3, 0, 5);
  zn_dev_destroy (d);
}

/* ------------------------------------------------------------------ */
/* Zone management ranges (zone-rules 5.1) */

static void
test_zone_mgmt_range_errors (void)
{
  struct zn_dev *d = mk (8, 1, 0, 1, 0, 0);
  uint64_t cap = zn_dev_geometry (d)->capacity;
  enum zn_zone_op ops[] = { ZN_OP_OPEN, ZN_OP_CLOSE, ZN_OP_FINISH,
                            ZN_OP_RESET };
  struct snapshot s;
  unsigned i;

  CHECK_EQ (wrz (d, 2, 0, 8), 0);
  snap (d, &s);
  for (i = 0; i < 4; i++) {
    CHECK_EQ (zn_zone_mgmt (d, ops[i], Z, 0), -EINVAL);
    CHECK_EQ (zn_zone_mgmt (d, ops[i], Z + 8, Z), -EINVAL);
    CHECK_EQ (zn_zone_mgmt (d, ops[i], 2 * Z + 8, Z), -EINVAL);
    CHECK_EQ (zn_zone_mgmt (d, ops[i], Z, Z / 2), -EINVAL);
    CHECK_EQ (zn_zone_mgmt (d, ops[i], 2 * Z, Z + Z / 2), -EINVAL);
    CHECK_EQ (zn_zone_mgmt (d, ops[i], cap, Z), -EINVAL);
    CHECK_EQ (zn_zone_mgmt (d, ops[i], cap - Z, 2 * Z), -EINVAL);
    CHECK_EQ (zn_zone_mgmt (d, ops[i], 0, cap + Z), -EINVAL);
    CHECK_EQ (zn_zone_mgmt (d, ops[i], 8, cap - 8), -EINVAL);
  }
  CHECK (same_state (d, &s));
  zn_dev_destroy (d);
}

/* A range ending at the end of a runt zone needs no zone multiple. */
static void
test_zone_mgmt_runt_range (void)
{
  struct zn_dev *d = mk_nomem (1000, 256, 256, 1, 0, 0);
  const uint64_t zs = 524288, runt_start = 1572864, runt_len = 475136;

  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_OPEN, runt_start, runt_len), 0);
  EXPECT_ZONE (d, 3, ZN_COND_EXP_OPEN, 0);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_OPEN, runt_start, zs), -EINVAL);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_OPEN, runt_start, runt_len - 8),
            -EINVAL);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_FINISH, 2 * zs, zs + runt_len), 0);
  EXPECT_ZONE (d, 2, ZN_COND_FULL, zs);
  EXPECT_ZONE (d, 3, ZN_COND_FULL, runt_len);
  EXPECT_COUNTERS (d, 0, 0, 0);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_RESET, runt_start, runt_len), 0);
  EXPECT_ZONE (d, 3, ZN_COND_EMPTY, 0);
  EXPECT_ZONE (d, 2, ZN_COND_FULL, zs);
  zn_dev_destroy (d);
}

/* Multi-zone ranges: every zone is attempted, no rollback, and the errno
 * is that of the highest failing zone.
 */
static void
test_zone_mgmt_multi (void)
{
  struct zn_dev *d = mk (8, 1, 0, 1, 0, 0);

  CHECK_EQ (wrz (d, 1, 0, 8), 0);
  CHECK_EQ (wrz (d, 3, 0, 8), 0);
  CHECK_EQ (opn (d, ZN_OP_CLOSE, 1, 3), -EIO);  /* zone 2 is EMPTY */
  EXPECT_ZONE (d, 1, ZN_COND_CLOSED, 8);
  EXPECT_ZONE (d, 2, ZN_COND_EMPTY, 0);
  EXPECT_ZONE (d, 3, ZN_COND_CLOSED, 8);
  EXPECT_COUNTERS (d, 0, 0, 2);

  CHECK_EQ (opn (d, ZN_OP_OPEN, 1, 3), 0);
  EXPECT_ZONE (d, 1, ZN_COND_EXP_OPEN, 8);
  EXPECT_ZONE (d, 2, ZN_COND_EXP_OPEN, 0);
  EXPECT_ZONE (d, 3, ZN_COND_EXP_OPEN, 8);
  EXPECT_COUNTERS (d, 0, 3, 0);

  CHECK_EQ (opn (d, ZN_OP_FINISH, 2, 3), 0);
  EXPECT_ZONE (d, 4, ZN_COND_FULL, Z);
  EXPECT_COUNTERS (d, 0, 1, 0);

  /* The conventional zone 0 fails; zone 1 is still handled. */
  CHECK_EQ (opn (d, ZN_OP_CLOSE, 0, 2), -EIO);
  EXPECT_ZONE (d, 1, ZN_COND_CLOSED, 8);
  CHECK_EQ (opn (d, ZN_OP_RESET, 0, 7), -EIO);   /* not the whole device */
  for (uint32_t i = 1; i < 8; i++)
    EXPECT_ZONE (d, i, ZN_COND_EMPTY, 0);
  EXPECT_COUNTERS (d, 0, 0, 0);
  zn_dev_destroy (d);

  /* Two different errnos: the higher zone's wins, in both orders. */
  d = mk_c4 ();
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 5), 0);
  CHECK_EQ (wrz (d, 1, 0, 8), 0);
  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 1), 0);
  CHECK_EQ (wrz (d, 2, 0, 8), 0);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 3), 0);
  EXPECT_COUNTERS (d, 1, 1, 1);
  CHECK_EQ (opn (d, ZN_OP_OPEN, 4, 2), -EIO);         /* EOVERFLOW, EIO */
  CHECK_EQ (opn (d, ZN_OP_OPEN, 5, 2), -EOVERFLOW);   /* EIO, EOVERFLOW */
  CHECK_EQ (opn (d, ZN_OP_OPEN, 6, 2), -EOVERFLOW);
  CHECK_EQ (opn (d, ZN_OP_CLOSE, 5, 2), -EIO);        /* FULL, EMPTY */
  CHECK_EQ (opn (d, ZN_OP_OPEN, 1, 2), -ETOOMANYREFS);/* ETOOMANYREFS, 0 */
  EXPECT_ZONE (d, 1, ZN_COND_CLOSED, 8);
  EXPECT_ZONE (d, 2, ZN_COND_EXP_OPEN, 8);
  EXPECT_COUNTERS (d, 0, 2, 1);
  zn_dev_destroy (d);
}

static void
test_reset_all (void)
{
  struct zn_dev *d = mk (8, 1, 0, 1, 0, 0);
  uint64_t cap = zn_dev_geometry (d)->capacity;

  CHECK_EQ (wrz (d, 0, 0, 16), 0);              /* conventional data */
  CHECK_EQ (wrz (d, 1, 0, 8), 0);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 2), 0);
  CHECK_EQ (wrz (d, 3, 0, 8), 0);
  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 3), 0);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 4), 0);
  CHECK_EQ (wrz (d, 5, 0, 8), 0);
  CHECK_EQ (zn_zone_set_readonly (d, zstart (d, 5)), 0);
  CHECK_EQ (zn_zone_set_offline (d, zstart (d, 6)), 0);

  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_RESET, 0, cap), 0);
  for (uint32_t i = 1; i <= 4; i++)
    EXPECT_ZONE (d, i, ZN_COND_EMPTY, 0);
  EXPECT_ZONE_NO_WP (d, 5, ZN_COND_READONLY);
  EXPECT_ZONE_NO_WP (d, 6, ZN_COND_OFFLINE);
  EXPECT_ZONE (d, 7, ZN_COND_EMPTY, 0);
  EXPECT_COUNTERS (d, 0, 0, 0);
  CHECK_EQ (zone_at (d, 0).cond, ZN_COND_NOT_WP);
  CHECK (reads_pattern (d, 0, 16, 0));
  CHECK (reads_fill (d, zstart (d, 1), 8, 0xFF));
  CHECK (reads_fill (d, zstart (d, 4), 8, 0xFF));

  /* A range over just the sequential zones is an ordinary multi-zone
   * reset: it fails on READONLY/OFFLINE but resets the others.
   */
  CHECK_EQ (wrz (d, 1, 0, 8), 0);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_RESET, Z, cap - Z), -EIO);
  EXPECT_ZONE (d, 1, ZN_COND_EMPTY, 0);
  EXPECT_COUNTERS (d, 0, 0, 0);

  /* Reset-all of an idle device is fine too. */
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_RESET, 0, cap), 0);
  zn_dev_destroy (d);
}

/* ------------------------------------------------------------------ */
/* READONLY / OFFLINE injection (zone-rules 6) */

static void
test_inject_basic (void)
{
  struct zn_dev *d = mk (8, 1, 0, 1, 0, 0);
  uint64_t cap = zn_dev_geometry (d)->capacity;
  enum zn_zone_op ops[] = { ZN_OP_OPEN, ZN_OP_CLOSE, ZN_OP_FINISH,
                            ZN_OP_RESET };
  unsigned char buf[4096];
  unsigned i;

  CHECK_EQ (zn_zone_set_readonly (d, 0), -EINVAL);       /* conventional */
  CHECK_EQ (zn_zone_set_offline (d, Z - 1), -EINVAL);
  CHECK_EQ (zn_zone_set_readonly (d, cap), -EINVAL);     /* out of range */
  CHECK_EQ (zn_zone_set_offline (d, cap + Z), -EINVAL);

  /* READONLY: the sector need not be the zone start. */
  CHECK_EQ (wrz (d, 1, 0, 8), 0);
  EXPECT_COUNTERS (d, 1, 0, 0);
  CHECK_EQ (zn_zone_set_readonly (d, zstart (d, 1) + 100), 0);
  EXPECT_ZONE_NO_WP (d, 1, ZN_COND_READONLY);
  EXPECT_COUNTERS (d, 0, 0, 0);                 /* finished first */
  /* Reads succeed: data below the old wp, zeros after (zone-rules 8.1). */
  CHECK (reads_pattern (d, zstart (d, 1), 8, 0));
  CHECK (reads_fill (d, zstart (d, 1) + 8, 24, 0x00));
  CHECK_EQ (wrz (d, 1, 8, 8), -EIO);
  CHECK_EQ (wrz (d, 1, 0, 8), -EIO);
  for (i = 0; i < 4; i++)
    CHECK_EQ (op1 (d, ops[i], 1), -EIO);
  EXPECT_ZONE_NO_WP (d, 1, ZN_COND_READONLY);

  /* READONLY -> OFFLINE directly; OFFLINE reads fail. */
  CHECK_EQ (zn_zone_set_offline (d, zstart (d, 1)), 0);
  EXPECT_ZONE_NO_WP (d, 1, ZN_COND_OFFLINE);
  CHECK_EQ (zn_read (d, buf, zstart (d, 1), 8), -EIO);
  CHECK_EQ (zn_read (d, buf, zstart (d, 1) + Z - 8, 8), -EIO);
  CHECK_EQ (wrz (d, 1, 0, 8), -EIO);
  for (i = 0; i < 4; i++)
    CHECK_EQ (op1 (d, ops[i], 1), -EIO);
  /* A read crossing into the OFFLINE zone fails. */
  CHECK_EQ (zn_read (d, buf, zstart (d, 1) - 4, 8), -EIO);
  EXPECT_COUNTERS (d, 0, 0, 0);

  /* OFFLINE -> READONLY directly. */
  CHECK_EQ (zn_zone_set_readonly (d, zstart (d, 1)), 0);
  EXPECT_ZONE_NO_WP (d, 1, ZN_COND_READONLY);
  CHECK (reads_pattern (d, zstart (d, 1), 8, 0));

  /* Toggling the same cond again: EMPTY, data discarded. */
  CHECK_EQ (zn_zone_set_readonly (d, zstart (d, 1)), 0);
  EXPECT_ZONE (d, 1, ZN_COND_EMPTY, 0);
  CHECK (reads_fill (d, zstart (d, 1), 16, 0xFF));
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 1), 0);
  CHECK (reads_fill (d, zstart (d, 1), 16, 0x00));
  CHECK_EQ (op1 (d, ZN_OP_RESET, 1), 0);
  CHECK_EQ (wrz (d, 1, 0, 8), 0);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 8);

  /* OFFLINE on/off from scratch, on a CLOSED zone. */
  CHECK_EQ (wrz (d, 2, 0, 8), 0);
  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 2), 0);
  EXPECT_COUNTERS (d, 1, 0, 1);
  CHECK_EQ (zn_zone_set_offline (d, zstart (d, 2)), 0);
  EXPECT_ZONE_NO_WP (d, 2, ZN_COND_OFFLINE);
  EXPECT_COUNTERS (d, 1, 0, 0);
  CHECK_EQ (zn_zone_set_offline (d, zstart (d, 2)), 0);
  EXPECT_ZONE (d, 2, ZN_COND_EMPTY, 0);
  CHECK (reads_fill (d, zstart (d, 2), 8, 0xFF));

  /* EXP_OPEN, EMPTY and FULL zones too. */
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 3), 0);
  CHECK_EQ (zn_zone_set_readonly (d, zstart (d, 3)), 0);
  CHECK_EQ (zn_zone_set_readonly (d, zstart (d, 4)), 0);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 5), 0);
  CHECK_EQ (zn_zone_set_offline (d, zstart (d, 5)), 0);
  EXPECT_ZONE_NO_WP (d, 3, ZN_COND_READONLY);
  EXPECT_ZONE_NO_WP (d, 4, ZN_COND_READONLY);
  EXPECT_ZONE_NO_WP (d, 5, ZN_COND_OFFLINE);
  EXPECT_COUNTERS (d, 1, 0, 0);
  zn_dev_destroy (d);
}

/* zone-rules 6.3: the finish done before READONLY/OFFLINE ignores its
 * result.
 */
static void
test_inject_finish_side_effects (void)
{
  struct zn_dev *d = mk_c4 ();

  /* CLOSED zone, open slots full with EXP_OPEN zones: the finish fails,
   * so the zone's closed count leaks.
   */
  CHECK_EQ (wrz (d, 1, 0, 8), 0);
  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 1), 0);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 2), 0);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 3), 0);
  EXPECT_COUNTERS (d, 0, 2, 1);
  CHECK_EQ (zn_zone_set_readonly (d, zstart (d, 1)), 0);
  EXPECT_ZONE_NO_WP (d, 1, ZN_COND_READONLY);
  EXPECT_COUNTERS (d, 0, 2, 1);
  /* The leaked count still uses an active slot. */
  CHECK_EQ (wrz (d, 4, 0, 8), -EOVERFLOW);
  /* Toggling back to EMPTY does not touch the counters either. */
  CHECK_EQ (zn_zone_set_readonly (d, zstart (d, 1)), 0);
  EXPECT_ZONE (d, 1, ZN_COND_EMPTY, 0);
  EXPECT_COUNTERS (d, 0, 2, 1);
  zn_dev_destroy (d);

  /* CLOSED zone, open slots full, one IMP_OPEN: the finish closes it
   * implicitly before the zone goes OFFLINE.
   */
  d = mk (8, 1, 1, 1, 2, 0);
  CHECK_EQ (wrz (d, 1, 0, 8), 0);
  CHECK_EQ (wrz (d, 2, 0, 8), 0);
  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 1), 0);
  CHECK_EQ (wrz (d, 3, 0, 8), 0);
  EXPECT_COUNTERS (d, 2, 0, 1);
  CHECK_EQ (zn_zone_set_offline (d, zstart (d, 1)), 0);
  EXPECT_ZONE_NO_WP (d, 1, ZN_COND_OFFLINE);
  EXPECT_ZONE (d, 2, ZN_COND_CLOSED, 8);
  EXPECT_ZONE (d, 3, ZN_COND_IMP_OPEN, 8);
  EXPECT_COUNTERS (d, 1, 0, 1);
  zn_dev_destroy (d);
}

/* ------------------------------------------------------------------ */
/* Read content (zone-rules 8) */

static void
test_read_content (void)
{
  struct zn_dev *d = mk (16, 2, 1, 1, 0, 0);   /* len 4096, cap 2048 */
  const uint64_t L = 4096, C = 2048;
  uint64_t z1 = zstart (d, 1), z2 = zstart (d, 2), z3 = zstart (d, 3);

  /* Conventional: zeros until written, written data anywhere. */
  CHECK (reads_fill (d, 0, 256, 0x00));
  CHECK_EQ (wr (d, 100, 8, 1), 0);
  CHECK (reads_pattern (d, 100, 8, 1));
  CHECK (reads_fill (d, 108, 8, 0x00));
  CHECK (reads_fill (d, 92, 8, 0x00));
  CHECK_EQ (wr (d, 104, 8, 2), 0);
  CHECK (reads_pattern (d, 100, 4, 1));
  CHECK (reads_pattern (d, 104, 8, 2));

  /* Sequential: data below wp, 0xFF at and past it. */
  CHECK (reads_fill (d, z1, 64, 0xFF));
  CHECK_EQ (wr (d, z1, 16, 1), 0);
  CHECK (reads_pattern (d, z1, 16, 1));
  CHECK (reads_fill (d, z1 + 16, 16, 0xFF));
  CHECK (reads_fill (d, z1 + C, L - C, 0xFF));
  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 1), 0);
  CHECK (reads_pattern (d, z1, 16, 1));
  CHECK (reads_fill (d, z1 + 16, 16, 0xFF));

  /* Finished: the unwritten tail, gap included, reads as zeros. */
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 1), 0);
  CHECK (reads_pattern (d, z1, 16, 1));
  CHECK (reads_fill (d, z1 + 16, L - 16, 0x00));

  /* Filled by writes: the [cap, len) gap reads as 0xFF. */
  CHECK_EQ (wr (d, z2, C, 3), 0);
  EXPECT_ZONE (d, 2, ZN_COND_FULL, C);
  CHECK (reads_pattern (d, z2, C, 3));
  CHECK (reads_fill (d, z2 + C, L - C, 0xFF));

  /* A read crossing zones follows each zone's rule. */
  CHECK (reads_fill (d, z2 - 8, 8, 0x00));
  CHECK (reads_pattern (d, z2, 8, 3));
  {
    unsigned char *buf = xmalloc (16 * ZN_SECTOR_SIZE);
    unsigned char *want = xmalloc (8 * ZN_SECTOR_SIZE);
    unsigned i;
    CHECK_EQ (zn_read (d, buf, z2 - 8, 16), 0);
    for (i = 0; i < 8 * ZN_SECTOR_SIZE; i++)
      CHECK_EQ (buf[i], 0x00);
    fill_pattern (want, z2, 8, 3);
    CHECK (memcmp (buf + 8 * ZN_SECTOR_SIZE, want, 8 * ZN_SECTOR_SIZE) == 0);
    CHECK_EQ (zn_read (d, buf, z3 - 8, 16), 0);
    for (i = 0; i < 16 * ZN_SECTOR_SIZE; i++)
      CHECK_EQ (buf[i], 0xFF);
    free (want);
    free (buf);
  }

  /* Reset discards data: old data never comes back below a new wp. */
  CHECK_EQ (op1 (d, ZN_OP_RESET, 1), 0);
  CHECK (reads_fill (d, z1, 32, 0xFF));
  CHECK_EQ (wr (d, z1, 8, 4), 0);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 1), 0);
  CHECK (reads_pattern (d, z1, 8, 4));
  CHECK (reads_fill (d, z1 + 8, 8, 0x00));
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_RESET, 0, zn_dev_geometry (d)->capacity),
            0);
  CHECK (reads_fill (d, z2, C, 0xFF));
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 2), 0);
  CHECK (reads_fill (d, z2, L, 0x00));
  CHECK (reads_pattern (d, 104, 8, 2));         /* conventional kept */

  /* A failed write stores nothing. */
  CHECK_EQ (wr (d, z3 + 8, 8, 5), -EIO);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 3), 0);
  CHECK (reads_fill (d, z3, 16, 0x00));
  zn_dev_destroy (d);
}

/* zone-rules 8.2: without memory backing every read returns zeros (a
 * deliberate difference).
 */
static void
test_read_not_memory_backed (void)
{
  struct zn_config c = cfg (8, 1, 0, 1, 0, 0);
  struct zn_dev *d;

  c.memory_backed = false;
  d = create (&c);
  CHECK (!zn_dev_geometry (d)->memory_backed);
  CHECK_EQ (wr (d, 8, 8, 1), 0);
  CHECK (reads_fill (d, 0, 32, 0x00));
  CHECK_EQ (wrz (d, 1, 0, 16), 0);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 16);     /* state as usual */
  CHECK (reads_fill (d, zstart (d, 1), 64, 0x00));
  CHECK_EQ (wrz (d, 1, 0, 8), -EIO);            /* rules as usual */
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 1), 0);
  CHECK (reads_fill (d, zstart (d, 1), Z, 0x00));
  CHECK (reads_fill (d, zstart (d, 2), 16, 0x00));
  zn_dev_destroy (d);
}

static long
nr_mappings (void)
{
  FILE *fp = fopen ("/proc/self/maps", "r");
  long n = 0;
  int c;

  CHECK (fp != NULL);
  while ((c = getc (fp)) != EOF)
    n += c == '\n';
  fclose (fp);
  return n;
}

/* Zone memory stays one merged mapping whatever the order of resets:
 * unmapping every other zone would leave a mapping per zone, and past
 * vm.max_map_count (65530) resets and first writes would fail.
 */
static void
test_reset_keeps_mappings (void)
{
  const uint32_t nr = 2000;
  struct zn_dev *d = mk (nr, 1, 0, 0, 0, 0);
  long before;

  for (uint32_t i = 0; i < nr; i++)
    CHECK_EQ (wrz (d, i, 0, 8), 0);
  before = nr_mappings ();
  for (uint32_t i = 0; i < nr; i += 2)
    CHECK_EQ (op1 (d, ZN_OP_RESET, i), 0);
  CHECK (nr_mappings () < before + 16);
  /* Reset zones read as before: 0xFF past the wp, zeros once finished. */
  CHECK (reads_fill (d, zstart (d, 0), 8, 0xFF));
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 0), 0);
  CHECK (reads_fill (d, zstart (d, 0), 8, 0x00));
  CHECK_EQ (wrz (d, 2, 0, 8), 0);
  CHECK (reads_pattern (d, zstart (d, 2), 8, 0));
  CHECK (reads_pattern (d, zstart (d, 1), 8, 0));
  zn_dev_destroy (d);
}

/* ------------------------------------------------------------------ */
/* Requests (zone-rules 9) */

static void
test_request_bounds_alignment (void)
{
  struct zn_config c = cfg (8, 1, 0, 1, 0, 0);
  unsigned char *buf = xmalloc (16 * ZN_SECTOR_SIZE);
  struct snapshot s;
  struct zn_dev *d;
  uint64_t cap;

  memset (buf, 0x5A, 16 * ZN_SECTOR_SIZE);
  d = create (&c);
  cap = zn_dev_geometry (d)->capacity;
  snap (d, &s);
  CHECK_EQ (zn_read (d, buf, cap - 8, 16), -EINVAL);
  CHECK_EQ (zn_read (d, buf, cap, 1), -EINVAL);
  CHECK_EQ (zn_write (d, buf, cap - 8, 16), -EINVAL);
  CHECK_EQ (zn_write (d, buf, cap, 8), -EINVAL);
  CHECK_EQ (zn_write (d, buf, UINT64_MAX - 4, 8), -EINVAL);
  CHECK (same_state (d, &s));
  /* The last sectors of the device are fine. */
  CHECK_EQ (zn_write (d, buf, zstart (d, 7), 8), 0);
  CHECK_EQ (zn_read (d, buf, cap - 8, 8), 0);
  /* Any sector is aligned with 512-byte blocks. */
  CHECK_EQ (zn_write (d, buf, 3, 1), 0);
  CHECK_EQ (zn_read (d, buf, 3, 1), 0);
  zn_dev_destroy (d);

  c.blocksize = 4096;
  d = create (&c);
  snap (d, &s);
  CHECK_EQ (zn_write (d, buf, 1, 8), -EINVAL);
  CHECK_EQ (zn_write (d, buf, 8, 1), -EINVAL);
  CHECK_EQ (zn_write (d, buf, 8, 12), -EINVAL);
  CHECK_EQ (zn_write (d, buf, zstart (d, 1) + 4, 8), -EINVAL);
  CHECK_EQ (zn_write (d, buf, zstart (d, 1), 4), -EINVAL);
  CHECK_EQ (zn_read (d, buf, 4, 8), -EINVAL);
  CHECK_EQ (zn_read (d, buf, 0, 7), -EINVAL);
  CHECK_EQ (zn_read (d, buf, cap - 8, 16), -EINVAL);
  CHECK (same_state (d, &s));
  CHECK_EQ (zn_write (d, buf, zstart (d, 1), 16), 0);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 16);
  CHECK_EQ (zn_read (d, buf, 8, 8), 0);
  zn_dev_destroy (d);
  free (buf);
}

/* zone-rules 9.3: split at zone boundaries, no rollback, highest failing
 * part.
 */
static void
test_write_zone_crossing (void)
{
  struct zn_dev *d = mk (8, 1, 0, 1, 0, 0);

  /* Conventional then the start of an EMPTY zone: both parts succeed. */
  CHECK_EQ (wr (d, Z - 8, 16, 1), 0);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 8);
  CHECK (reads_pattern (d, Z - 8, 16, 1));

  /* The upper part is behind the wp: EIO, but the conventional part is
   * written anyway and zone 1 is untouched.
   */
  CHECK_EQ (wr (d, Z - 8, 16, 2), -EIO);
  CHECK (reads_pattern (d, Z - 8, 8, 2));
  CHECK (reads_pattern (d, Z, 8, 1));
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 8);

  /* The conventional rule never spills into the next zone. */
  CHECK_EQ (wr (d, Z - 8, 24, 3), -EIO);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 8);
  CHECK (reads_pattern (d, Z, 8, 1));
  CHECK (reads_fill (d, Z + 8, 8, 0xFF));

  /* Lower part fails (not at zone 1's wp), upper part (start of EMPTY
   * zone 2) succeeds and is kept.
   */
  CHECK_EQ (wr (d, 2 * Z - 8, 16, 4), -EIO);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 8);
  EXPECT_ZONE (d, 2, ZN_COND_IMP_OPEN, 8);
  CHECK (reads_pattern (d, 2 * Z, 8, 4));
  EXPECT_COUNTERS (d, 2, 0, 0);

  /* Both parts at their wps: zone 3 filled and zone 4 started. */
  CHECK_EQ (wr (d, Z + 8, Z - 8, 5), 0);
  EXPECT_ZONE (d, 1, ZN_COND_FULL, Z);
  CHECK_EQ (wr (d, 3 * Z, Z + 8, 6), 0);        /* zone 3 full + zone 4 */
  EXPECT_ZONE (d, 3, ZN_COND_FULL, Z);
  EXPECT_ZONE (d, 4, ZN_COND_IMP_OPEN, 8);
  CHECK (reads_pattern (d, 3 * Z, Z + 8, 6));
  zn_dev_destroy (d);

  /* Lower part EIO (FULL zone 4), upper part EOVERFLOW (zone 5 needs an
   * active slot): the higher part's errno is returned.
   */
  d = mk_c4 ();
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 4), 0);
  CHECK_EQ (wrz (d, 1, 0, 8), 0);
  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 1), 0);
  CHECK_EQ (wrz (d, 2, 0, 8), 0);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 3), 0);
  CHECK_EQ (wr (d, 5 * Z - 8, 16, 0), -EOVERFLOW);
  EXPECT_ZONE (d, 5, ZN_COND_EMPTY, 0);
  /* Lower EIO, upper ETOOMANYREFS: an active slot is free but the open
   * slots hold only EXP_OPEN zones.
   */
  CHECK_EQ (op1 (d, ZN_OP_RESET, 1), 0);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 2), 0);
  EXPECT_COUNTERS (d, 0, 2, 0);
  CHECK_EQ (wr (d, 5 * Z - 8, 16, 0), -ETOOMANYREFS);
  EXPECT_ZONE (d, 5, ZN_COND_EMPTY, 0);
  EXPECT_COUNTERS (d, 0, 2, 0);
  zn_dev_destroy (d);
}

/* zone-rules 9.2: requests above max_sectors are processed as if split. */
static void
test_write_max_sectors_split (void)
{
  struct zn_config c = cfg (8, 1, 0, 0, 0, 0);
  struct zn_dev *d = create (&c);

  CHECK_EQ (wr (d, zstart (d, 1), 1000, 1), 0);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 1000);
  CHECK (reads_pattern (d, zstart (d, 1), 1000, 1));
  CHECK_EQ (wr (d, zstart (d, 2), Z, 1), 0);
  EXPECT_ZONE (d, 2, ZN_COND_FULL, Z);
  CHECK (reads_pattern (d, zstart (d, 2), Z, 1));
  EXPECT_COUNTERS (d, 1, 0, 0);

  zn_dev_destroy (d);

  /* The parts (255, 255, 2) run in order: the first fits and is kept,
   * the second runs past the capacity, the third is not at the wp.
   */
  d = mk (16, 2, 1, 0, 0, 0);                  /* len 4096, cap 2048 */
  CHECK_EQ (wr (d, zstart (d, 1), 2048 - 256, 2), 0);
  CHECK_EQ (wr (d, zstart (d, 1) + 2048 - 256, 512, 2), -EIO);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 2047);
  CHECK (reads_pattern (d, zstart (d, 1), 2047, 2));
  CHECK (reads_fill (d, zstart (d, 1) + 2047, 1, 0xFF));
  zn_dev_destroy (d);

  c.blocksize = 4096;
  d = create (&c);
  CHECK_EQ (zn_dev_geometry (d)->max_sectors, 248);
  CHECK_EQ (wr (d, zstart (d, 1), 1024, 1), 0);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 1024);
  CHECK (reads_pattern (d, zstart (d, 1), 1024, 1));
  zn_dev_destroy (d);

  c.blocksize = 512;
  c.max_sectors = 100;
  d = create (&c);
  CHECK_EQ (wr (d, zstart (d, 1), 300, 1), 0);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 300);
  zn_dev_destroy (d);
}

/* What a zone reports (zone-rules 7) */
static void
test_report_zones (void)
{
  struct zn_dev *d = mk (8, 1, 0, 1, 0, 0);
  uint64_t cap = zn_dev_geometry (d)->capacity;
  struct zn_zone zs[10];

  memset (zs, 0, sizeof zs);
  CHECK_EQ (zn_report_zones (d, 5, zs, 1), 1);
  CHECK_EQ (zs[0].start, 0);
  CHECK_EQ (zs[0].type, ZN_ZONE_CONVENTIONAL);
  CHECK_EQ (zs[0].cond, ZN_COND_NOT_WP);
  CHECK_EQ (zs[0].wp, Z);

  CHECK_EQ (wrz (d, 2, 0, 24), 0);
  CHECK_EQ (zn_report_zones (d, Z + 7, zs, 3), 3);
  CHECK_EQ (zs[0].start, Z);
  CHECK_EQ (zs[1].start, 2 * Z);
  CHECK_EQ (zs[1].wp, 2 * Z + 24);
  CHECK_EQ (zs[1].cond, ZN_COND_IMP_OPEN);
  CHECK_EQ (zs[1].type, ZN_ZONE_SEQWRITE_REQ);
  CHECK_EQ (zs[1].len, Z);
  CHECK_EQ (zs[1].capacity, Z);
  CHECK_EQ (zs[2].start, 3 * Z);

  CHECK_EQ (zn_report_zones (d, 0, zs, 10), 8);
  CHECK_EQ (zn_report_zones (d, cap - 1, zs, 10), 1);
  CHECK_EQ (zs[0].start, 7 * Z);
  CHECK_EQ (zn_report_zones (d, 6 * Z, zs, 10), 2);
  CHECK_EQ (zn_report_zones (d, cap, zs, 10), 0);
  CHECK_EQ (zn_report_zones (d, cap + 12345, zs, 10), 0);
  CHECK_EQ (zn_report_zones (d, 0, zs, 0), 0);
  zn_dev_destroy (d);
}

static void
test_names (void)
{
  struct {
    uint8_t cond;
    const char *name;
  } conds[] = {
    { ZN_COND_NOT_WP, "NOT_WP" }, { ZN_COND_EMPTY, "EMPTY" },
    { ZN_COND_IMP_OPEN, "IMP_OPEN" }, { ZN_COND_EXP_OPEN, "EXP_OPEN" },
    { ZN_COND_CLOSED, "CLOSED" }, { ZN_COND_READONLY, "READONLY" },
    { ZN_COND_FULL, "FULL" }, { ZN_COND_OFFLINE, "OFFLINE" },
  };
  struct {
    enum zn_zone_op op;
    const char *name;
  } ops[] = {
    { ZN_OP_OPEN, "open" }, { ZN_OP_CLOSE, "close" },
    { ZN_OP_FINISH, "finish" }, { ZN_OP_RESET, "reset" },
  };
  unsigned i;

  for (i = 0; i < sizeof conds / sizeof conds[0]; i++) {
    const char *n = zn_cond_name (conds[i].cond);
    CHECK (n != NULL);
    if (strcmp (n, conds[i].name) != 0)
      fprintf (stderr, "cond 0x%x: \"%s\"\n", conds[i].cond, n);
    CHECK (strcmp (n, conds[i].name) == 0);
  }
  /* Unknown values still give a printable name. */
  CHECK (zn_cond_name (0x7) != NULL);
  CHECK (zn_cond_name (0xFF) != NULL);
  /* The header does not fix the case of op names. */
  for (i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    const char *n = zn_op_name (ops[i].op);
    CHECK (n != NULL);
    if (strcasecmp (n, ops[i].name) != 0)
      fprintf (stderr, "op %d: \"%s\"\n", (int) ops[i].op, n);
    CHECK (strcasecmp (n, ops[i].name) == 0);
  }
}

/* ------------------------------------------------------------------ */
/* Why a request failed, as the model says it (lib/errors.h) */

/* Writes nr sectors at sector; returns the errno and sets *why. */
static int
write_why (struct zn_dev *d, uint64_t sector, uint64_t nr, enum zn_reason *why)
{
  void *buf = xmalloc (nr * ZN_SECTOR_SIZE);
  int r;

  memset (buf, 0xa5, nr * ZN_SECTOR_SIZE);
  *why = ZN_REASON_BAD_BLOCK;   /* to see that success clears it */
  r = zn_write_why (d, buf, sector, nr, false, why);
  free (buf);
  return r;
}

#define CHECK_WHY(call, err, reason)                                    \
  do {                                                                  \
    enum zn_reason cw_why_ = ZN_REASON_NONE;                            \
    int cw_r_ = call;                                                   \
    if (cw_r_ != (err) || cw_why_ != (reason))                          \
      fprintf (stderr, "%s: %d (%s), want %d (%s)\n", #call, cw_r_,    \
               zn_reason_text (cw_why_), (err), zn_reason_text (reason)); \
    CHECK_EQ (cw_r_, (err));                                            \
    CHECK_EQ (cw_why_, (reason));                                       \
  } while (0)

static void
test_reasons_one_zone (void)
{
  /* Zone 0 conventional, then 1 MiB sequential zones. */
  struct zn_dev *d = mk (16, 1, 0, 1, 0, 0);
  unsigned char buf[256 * ZN_SECTOR_SIZE] = { 0 };
  uint64_t at;

  CHECK_WHY (write_why (d, Z, 8, &cw_why_), 0, ZN_REASON_NONE);
  CHECK_WHY (write_why (d, Z + 16, 8, &cw_why_), -EIO, ZN_REASON_NOT_AT_WP);
  CHECK_WHY (write_why (d, 16 * Z, 8, &cw_why_), -EINVAL,
             ZN_REASON_OUT_OF_RANGE);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_FINISH, 2 * Z, Z), 0);
  CHECK_WHY (write_why (d, 2 * Z + 8, 8, &cw_why_), -EIO, ZN_REASON_FULL);
  CHECK_EQ (zn_zone_set_readonly (d, 3 * Z), 0);
  CHECK_WHY (write_why (d, 3 * Z, 8, &cw_why_), -EIO, ZN_REASON_READONLY);
  CHECK_EQ (zn_zone_set_offline (d, 4 * Z), 0);
  CHECK_WHY (write_why (d, 4 * Z, 8, &cw_why_), -EIO, ZN_REASON_OFFLINE);
  CHECK_WHY (zn_read_why (d, buf, 4 * Z, 1, &cw_why_), -EIO,
             ZN_REASON_OFFLINE);
  CHECK_EQ (zn_badblocks_set (d, 5 * Z + 4, 5 * Z + 4), 0);
  CHECK_WHY (write_why (d, 5 * Z, 8, &cw_why_), -EIO, ZN_REASON_BAD_BLOCK);
  CHECK_EQ (zn_badblocks_set (d, 4, 4), 0);
  CHECK_WHY (write_why (d, 0, 8, &cw_why_), -EIO, ZN_REASON_BAD_BLOCK);
  CHECK_WHY (zn_read_why (d, buf, 4, 1, &cw_why_), -EIO, ZN_REASON_BAD_BLOCK);
  /* Split at the zone boundary: the reason of the part that failed. */
  CHECK_WHY (write_why (d, Z - 8, 24, &cw_why_), -EIO, ZN_REASON_NOT_AT_WP);

  /* Zone management. */
  CHECK_WHY (zn_zone_mgmt_why (d, ZN_OP_OPEN, 0, Z, &cw_why_), -EIO,
             ZN_REASON_CONVENTIONAL);
  CHECK_WHY (zn_zone_mgmt_why (d, ZN_OP_OPEN, 2 * Z, Z, &cw_why_), -EIO,
             ZN_REASON_BAD_TRANSITION);
  CHECK_WHY (zn_zone_mgmt_why (d, ZN_OP_RESET, 3 * Z, Z, &cw_why_), -EIO,
             ZN_REASON_READONLY);
  CHECK_WHY (zn_zone_mgmt_why (d, ZN_OP_RESET, 4 * Z, Z, &cw_why_), -EIO,
             ZN_REASON_OFFLINE);
  CHECK_WHY (zn_zone_mgmt_why (d, ZN_OP_OPEN, Z + 8, Z, &cw_why_), -EINVAL,
             ZN_REASON_MISALIGNED);
  CHECK_WHY (zn_zone_mgmt_why (d, ZN_OP_OPEN, Z, 0, &cw_why_), -EINVAL,
             ZN_REASON_EMPTY);
  CHECK_WHY (zn_zone_mgmt_why (d, ZN_OP_OPEN, 15 * Z, 2 * Z, &cw_why_),
             -EINVAL, ZN_REASON_OUT_OF_RANGE);
  CHECK_WHY (zn_zone_mgmt_why (d, (enum zn_zone_op) 99, Z, Z, &cw_why_),
             -EOPNOTSUPP, ZN_REASON_NOT_SUPPORTED);
  CHECK_WHY (zn_zone_mgmt_why (d, ZN_OP_RESET, Z, Z, &cw_why_), 0,
             ZN_REASON_NONE);

  /* Zone append. */
  CHECK_WHY (zn_zone_append_why (d, buf, 0, 8, false, &at, &cw_why_), -EIO,
             ZN_REASON_CONVENTIONAL);
  CHECK_WHY (zn_zone_append_why (d, buf, Z + 8, 8, false, &at, &cw_why_),
             -EIO, ZN_REASON_NOT_ZONE_START);
  CHECK_WHY (zn_zone_append_why (d, buf, Z, 0, false, &at, &cw_why_),
             -EINVAL, ZN_REASON_EMPTY);
  CHECK_WHY (zn_zone_append_why (d, buf, Z,
                                 zn_dev_geometry (d)->max_append_sectors + 1,
                                 false, &at, &cw_why_),
             -EIO, ZN_REASON_APPEND_TOO_LONG);
  CHECK_WHY (zn_zone_append_why (d, buf, 2 * Z, 8, false, &at, &cw_why_),
             -EIO, ZN_REASON_FULL);
  zn_dev_destroy (d);
}

/* 2 MiB zones of 1 MiB capacity, one open zone, two active. */
static void
test_reasons_limits (void)
{
  struct zn_dev *d = mk (16, 2, 1, 0, 1, 2);

  CHECK_WHY (write_why (d, 0, Z - 8, &cw_why_), 0, ZN_REASON_NONE);
  CHECK_WHY (write_why (d, Z - 8, 16, &cw_why_), -EIO,
             ZN_REASON_PAST_CAPACITY);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_OPEN, 0, 2 * Z), 0);
  CHECK_WHY (write_why (d, 2 * Z, 8, &cw_why_), -ETOOMANYREFS,
             ZN_REASON_OPEN_LIMIT);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_CLOSE, 0, 2 * Z), 0);
  CHECK_WHY (write_why (d, 2 * Z, 8, &cw_why_), 0, ZN_REASON_NONE);
  CHECK_WHY (write_why (d, 4 * Z, 8, &cw_why_), -EOVERFLOW,
             ZN_REASON_ACTIVE_LIMIT);
  CHECK_WHY (zn_zone_mgmt_why (d, ZN_OP_OPEN, 4 * Z, 2 * Z, &cw_why_),
             -EOVERFLOW, ZN_REASON_ACTIVE_LIMIT);
  zn_dev_destroy (d);
}

/* pipeline_zoned_writes: a write ahead of the wp that nothing brings the
 * wp to gives up at the bound; the block layer's zone write plug (6.12)
 * refuses a write off its wp, then every write until a zone report.
 */
static void
test_reasons_pipeline_and_plug (void)
{
  struct zn_config c = cfg (16, 1, 0, 0, 0, 0);
  struct zn_dev *d;
  char err[256];

  c.pipeline_zoned_writes = true;
  c.pipeline_wait_ms = 1;
  d = create (&c);
  CHECK_WHY (write_why (d, 8, 8, &cw_why_), -ETIMEDOUT,
             ZN_REASON_PIPELINE_TIMEOUT);
  zn_dev_destroy (d);

  c = cfg (16, 1, 0, 0, 0, 0);
  c.kernel = ZN_KERNEL_6_12;
  d = create (&c);
  CHECK_EQ (zn_dev_write_plugging (d, err, sizeof err), 0);
  CHECK_WHY (write_why (d, 0, 8, &cw_why_), 0, ZN_REASON_NONE);
  CHECK_WHY (write_why (d, 16, 8, &cw_why_), -EIO, ZN_REASON_NOT_AT_WP);
  CHECK_WHY (write_why (d, 8, 8, &cw_why_), -EIO, ZN_REASON_PLUG_STALE);
  zn_dev_destroy (d);
}

/* One name table, one text per reason, one rule for the block device. */
static void
test_error_vocabulary (void)
{
  char buf[256];

  CHECK (strcmp (zn_errno_name (EIO), "EIO") == 0);
  CHECK (strcmp (zn_errno_name (ETOOMANYREFS), "ETOOMANYREFS") == 0);
  CHECK (strcmp (zn_errno_name (-1), "EUNKNOWN") == 0);
  CHECK_EQ (zn_block_errno (ETIMEDOUT), EIO);
  CHECK_EQ (zn_block_errno (EBUSY), EIO);
  CHECK_EQ (zn_block_errno (EOVERFLOW), EOVERFLOW);
  CHECK_EQ (zn_block_errno (0), 0);
  for (int r = ZN_REASON_NONE + 1; r <= ZN_REASON_NO_MEMORY; r++) {
    CHECK (zn_reason_text (r)[0] != '\0');
    CHECK (strcmp (zn_reason_text (r), "unknown reason") != 0);
    for (int q = ZN_REASON_NONE + 1; q < r; q++)
      CHECK (strcmp (zn_reason_text (q), zn_reason_text (r)) != 0);
  }
  CHECK (strcmp (zn_reason_text (ZN_REASON_NO_MEMORY + 1),
                 "unknown reason") == 0);
  CHECK (strcmp (zn_error_text (buf, sizeof buf, EIO, ZN_REASON_FULL),
                 "EIO: the zone is FULL") == 0);
  CHECK (strcmp (zn_error_text (buf, sizeof buf, ENOMEM, ZN_REASON_NONE),
                 "ENOMEM") == 0);
  CHECK (strncmp (zn_error_text (buf, sizeof buf, ETIMEDOUT,
                                 ZN_REASON_PIPELINE_TIMEOUT),
                  "ETIMEDOUT, sent as EIO: pipelined write", 39) == 0);
  CHECK (strcmp (zn_request_error_text (buf, sizeof buf, "write", 1048576,
                                        4096, 1048576, EIO,
                                        ZN_REASON_NOT_AT_WP),
                 "write: offset 1048576 length 4096 in zone 1: EIO: not at "
                 "the zone's write pointer") == 0);
  CHECK (strcmp (zn_request_error_text (buf, sizeof buf, "trim", 0,
                                        2097152, 1048576, EIO,
                                        ZN_REASON_READONLY),
                 "trim: offset 0 length 2097152 in zones 0 to 1: EIO: the "
                 "zone is READONLY") == 0);
  CHECK (strcmp (zn_request_error_text (buf, sizeof buf, "flush", 0, 0,
                                        1048576, ENOSPC,
                                        ZN_REASON_NO_SPACE),
                 "flush: ENOSPC: no space left for the data") == 0);
}

/* ------------------------------------------------------------------ */
/* Zone append (null_blk's null_zone_write with append, and the block
 * layer's blk_check_zone_append in front of it)
 */

/* Appends nr sectors of the pattern tag (laid out as if at sector 0) to
 * the zone; *at gets the sector it landed at, or all-ones on failure.
 */
static int
app (struct zn_dev *d, uint32_t zone, uint64_t nr, unsigned tag, uint64_t *at)
{
  void *buf = xmalloc (nr * ZN_SECTOR_SIZE);
  uint64_t written = UINT64_MAX;
  int r;

  fill_pattern (buf, 0, nr, tag);
  r = zn_zone_append (d, buf, zstart (d, zone), nr, false, &written);
  free (buf);
  if (at)
    *at = written;
  return r;
}

/* Whether [sector, sector+nr) holds what app wrote with tag. */
static bool
reads_appended (struct zn_dev *d, uint64_t sector, uint64_t nr, unsigned tag)
{
  unsigned char *buf = xmalloc (nr * ZN_SECTOR_SIZE);
  unsigned char *want = xmalloc (nr * ZN_SECTOR_SIZE);
  bool ok;

  fill_pattern (want, 0, nr, tag);
  ok = zn_read (d, buf, sector, nr) == 0
    && memcmp (buf, want, nr * ZN_SECTOR_SIZE) == 0;
  free (want);
  free (buf);
  return ok;
}

static void
test_append_basic (void)
{
  struct zn_dev *d = mk (8, 1, 1, 1, 0, 0);
  uint64_t at;

  CHECK_EQ (zn_dev_geometry (d)->max_append_sectors, 255);
  CHECK_EQ (app (d, 1, 16, 1, &at), 0);
  CHECK_EQ (at, zstart (d, 1));
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 16);
  EXPECT_COUNTERS (d, 1, 0, 0);
  CHECK_EQ (app (d, 1, 8, 2, &at), 0);
  CHECK_EQ (at, zstart (d, 1) + 16);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 24);
  CHECK (reads_appended (d, zstart (d, 1), 16, 1));
  CHECK (reads_appended (d, zstart (d, 1) + 16, 8, 2));
  CHECK (reads_fill (d, zstart (d, 1) + 24, 8, 0xFF));

  /* An append and a write at the wp share one wp. */
  CHECK_EQ (wrz (d, 1, 24, 8), 0);
  CHECK_EQ (app (d, 1, 8, 3, &at), 0);
  CHECK_EQ (at, zstart (d, 1) + 32);

  /* Appends to an explicitly opened or a closed zone keep or reopen it. */
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 2), 0);
  CHECK_EQ (app (d, 2, 8, 4, &at), 0);
  EXPECT_ZONE (d, 2, ZN_COND_EXP_OPEN, 8);
  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 2), 0);
  EXPECT_ZONE (d, 2, ZN_COND_CLOSED, 8);
  CHECK_EQ (app (d, 2, 8, 5, &at), 0);
  CHECK_EQ (at, zstart (d, 2) + 8);
  EXPECT_ZONE (d, 2, ZN_COND_IMP_OPEN, 16);
  EXPECT_COUNTERS (d, 2, 0, 0);

  /* The largest append fits exactly; the written sector may be NULL. */
  {
    void *buf = xmalloc (255 * ZN_SECTOR_SIZE);
    memset (buf, 0x5A, 255 * ZN_SECTOR_SIZE);
    CHECK_EQ (zn_zone_append (d, buf, zstart (d, 3), 255, true, NULL), 0);
    free (buf);
  }
  EXPECT_ZONE (d, 3, ZN_COND_IMP_OPEN, 255);
  zn_dev_destroy (d);
}

static void
test_append_refused (void)
{
  struct zn_dev *d = mk (16, 2, 1, 1, 0, 0);   /* len 4096, cap 2048 */
  struct snapshot s;
  uint64_t at;
  void *buf = xmalloc (4096 * ZN_SECTOR_SIZE);

  memset (buf, 0x33, 4096 * ZN_SECTOR_SIZE);
  CHECK_EQ (app (d, 1, 8, 1, NULL), 0);
  snap (d, &s);
  /* Conventional zones take no appends. */
  CHECK_EQ (app (d, 0, 8, 1, &at), -EIO);
  CHECK (at == UINT64_MAX);
  /* Not at a zone start: not even at the wp. */
  CHECK_EQ (zn_zone_append (d, buf, zstart (d, 1) + 8, 8, false, &at), -EIO);
  CHECK_EQ (zn_zone_append (d, buf, zstart (d, 2) + 2048, 8, false, &at), -EIO);
  /* Never split: over the append limit. */
  CHECK_EQ (zn_zone_append (d, buf, zstart (d, 2), 256, false, &at), -EIO);
  /* Block layer checks. */
  CHECK_EQ (zn_zone_append (d, buf, zstart (d, 2), 0, false, &at), -EINVAL);
  CHECK_EQ (zn_zone_append (d, buf, zn_dev_geometry (d)->capacity, 8, false,
                            &at), -EINVAL);
  CHECK (same_state (d, &s));

  /* Past the capacity: refused whole, nothing written. */
  CHECK_EQ (wrz (d, 1, 8, 2048 - 16), 0);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 2040);
  snap (d, &s);
  CHECK_EQ (app (d, 1, 16, 2, &at), -EIO);
  CHECK (same_state (d, &s));
  CHECK (reads_fill (d, zstart (d, 1) + 2040, 16, 0xFF));
  CHECK_EQ (app (d, 1, 8, 2, &at), 0);
  CHECK_EQ (at, zstart (d, 1) + 2040);
  EXPECT_ZONE (d, 1, ZN_COND_FULL, 2048);
  EXPECT_COUNTERS (d, 0, 0, 0);
  /* FULL, READONLY and OFFLINE zones take none. */
  CHECK_EQ (app (d, 1, 8, 3, &at), -EIO);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 2), 0);
  CHECK_EQ (app (d, 2, 8, 3, &at), -EIO);
  CHECK_EQ (zn_zone_set_readonly (d, zstart (d, 3)), 0);
  CHECK_EQ (app (d, 3, 8, 3, &at), -EIO);
  CHECK_EQ (zn_zone_set_offline (d, zstart (d, 4)), 0);
  CHECK_EQ (app (d, 4, 8, 3, &at), -EIO);
  EXPECT_ZONE_NO_WP (d, 4, ZN_COND_OFFLINE);
  /* After a reset the zone takes appends from its start again. */
  CHECK_EQ (op1 (d, ZN_OP_RESET, 1), 0);
  CHECK_EQ (app (d, 1, 8, 4, &at), 0);
  CHECK_EQ (at, zstart (d, 1));
  free (buf);
  zn_dev_destroy (d);
}

/* 4 KiB blocks: the append limit is max_sectors rounded down to a block,
 * and sub-block appends are refused as any unaligned request.
 */
static void
test_append_block_size (void)
{
  struct zn_config c = cfg (8, 1, 1, 0, 0, 0);
  struct zn_dev *d;
  uint64_t at;

  c.blocksize = 4096;
  d = create (&c);
  CHECK_EQ (zn_dev_geometry (d)->max_append_sectors, 248);
  CHECK_EQ (app (d, 1, 1, 1, &at), -EINVAL);
  CHECK_EQ (app (d, 1, 256, 1, &at), -EIO);
  CHECK_EQ (app (d, 1, 248, 1, &at), 0);
  CHECK_EQ (app (d, 1, 8, 2, &at), 0);
  CHECK_EQ (at, zstart (d, 1) + 248);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 256);
  zn_dev_destroy (d);
}

/* Resource checks are those of a write at the wp (zone-rules 3, 4). */
static void
test_append_limits (void)
{
  struct zn_dev *d = mk_c4 ();                 /* open 2, active 3 */
  struct snapshot s;
  uint64_t at;

  /* Implicit close of the first IMP_OPEN zone, round-robin. */
  CHECK_EQ (app (d, 1, 8, 1, NULL), 0);
  CHECK_EQ (app (d, 2, 8, 1, NULL), 0);
  CHECK_EQ (app (d, 3, 8, 1, &at), 0);
  CHECK_EQ (at, zstart (d, 3));
  EXPECT_ZONE (d, 1, ZN_COND_CLOSED, 8);
  EXPECT_ZONE (d, 3, ZN_COND_IMP_OPEN, 8);
  EXPECT_COUNTERS (d, 2, 0, 1);
  /* Active limit: three active, an EMPTY zone is refused. */
  snap (d, &s);
  CHECK_EQ (app (d, 4, 8, 1, NULL), -EOVERFLOW);
  CHECK (same_state (d, &s));
  /* Open limit with both open zones explicit: no victim. */
  CHECK_EQ (op1 (d, ZN_OP_RESET, 3), 0);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 2), 0);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 4), 0);
  EXPECT_COUNTERS (d, 0, 2, 1);
  snap (d, &s);
  CHECK_EQ (app (d, 1, 8, 1, NULL), -ETOOMANYREFS);
  CHECK (same_state (d, &s));
  zn_dev_destroy (d);
}

/* A bad block fails an append as a write: the zone is already open. */
static void
test_append_badblocks (void)
{
  struct zn_dev *d = mk (8, 1, 1, 0, 0, 0);
  uint64_t at;

  CHECK_EQ (zn_badblocks_set (d, zstart (d, 1) + 8, zstart (d, 1) + 8), 0);
  CHECK_EQ (app (d, 1, 8, 1, &at), 0);
  CHECK_EQ (app (d, 1, 8, 2, &at), -EIO);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 8);
  CHECK_EQ (app (d, 2, 16, 1, &at), 0);
  CHECK_EQ (zn_badblocks_set (d, zstart (d, 3), zstart (d, 3)), 0);
  CHECK_EQ (app (d, 3, 8, 1, &at), -EIO);
  EXPECT_ZONE (d, 3, ZN_COND_IMP_OPEN, 0);
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

  test_from_empty ();
  test_from_imp_open ();
  test_from_exp_open ();
  test_from_closed ();
  test_from_full ();
  test_conventional ();
  test_write_wp_rules ();

  test_limits_open_and_active ();
  test_limits_exp_open_not_victim ();
  test_limits_finish_closed_implicit_close ();
  test_limits_round_robin ();
  test_limits_cursor_wraps_to_nr_conv ();
  test_limits_active_only ();
  test_limits_open_only ();

  test_zone_mgmt_range_errors ();
  test_zone_mgmt_runt_range ();
  test_zone_mgmt_multi ();
  test_reset_all ();

  test_inject_basic ();
  test_inject_finish_side_effects ();

  test_read_content ();
  test_read_not_memory_backed ();
  test_reset_keeps_mappings ();

  test_request_bounds_alignment ();
  test_write_zone_crossing ();
  test_write_max_sectors_split ();
  test_report_zones ();
  test_names ();
  test_reasons_one_zone ();
  test_reasons_limits ();
  test_reasons_pipeline_and_plug ();
  test_error_vocabulary ();

  test_append_basic ();
  test_append_refused ();
  test_append_block_size ();
  test_append_limits ();
  test_append_badblocks ();

  printf ("test-model: all tests passed\n");
  return EXIT_SUCCESS;
}
