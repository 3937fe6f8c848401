/* SPDX-License-Identifier: BSD-3-Clause */
/* What differs between the kernels whose null_blk is modelled: 6.1, 6.12
 * and 7.3.  Each test sets up the situation the kernel sources describe
 * and checks what a user of /dev/nullb0 would get; most would pass on the
 * 6.1 model and fail on the newer behaviour, or the other way round.
 */
#include <errno.h>
#include <string.h>

#include "../common/check.h"
#include "../common/dev.h"

#define MIB_SECTORS 2048u

/* 8 MiB, 1 MiB zones, memory-backed, on kernel k. */
static struct zn_config
small (enum zn_kernel k)
{
  struct zn_config cfg;

  zn_config_init (&cfg);
  cfg.kernel = k;
  cfg.size = 8;
  cfg.zone_size = 1;
  cfg.memory_backed = true;
  return cfg;
}

/* A device whose NBD front end emulates the zone write plug. */
static struct zn_dev *
plugged (const struct zn_config *cfg)
{
  struct zn_dev *d = create (cfg);
  char err[256] = "";

  if (zn_dev_write_plugging (d, err, sizeof err) < 0) {
    fprintf (stderr, "zn_dev_write_plugging: %s\n", err);
    exit (EXIT_FAILURE);
  }
  return d;
}

static struct zn_zone
zone (struct zn_dev *d, uint32_t zno)
{
  struct zn_zone z;

  CHECK_EQ (zn_report_zones (d, (uint64_t) zno * MIB_SECTORS, &z, 1), 1);
  return z;
}

static unsigned char buf[256 * 512];

static int
wr (struct zn_dev *d, uint64_t sector, uint64_t n)
{
  fill_pattern (buf, sector, n, 1);
  return zn_write (d, buf, sector, n);
}

/* ---- kernel= and the keys of newer kernels ---------------------------- */

static void
refused (const struct zn_config *cfg, const char *want)
{
  char err[256] = "";
  struct zn_dev *d = zn_dev_create (cfg, err, sizeof err);

  CHECK (d == NULL);
  CHECK_EQ (errno, EINVAL);
  if (strstr (err, want) == NULL) {
    fprintf (stderr, "message '%s' lacks '%s'\n", err, want);
    exit (EXIT_FAILURE);
  }
}

static void
test_kernel_names (void)
{
  enum zn_kernel k;

  CHECK_EQ (zn_kernel_parse ("6.1", &k), 0);
  CHECK_EQ (k, ZN_KERNEL_6_1);
  CHECK_EQ (zn_kernel_parse ("6.12", &k), 0);
  CHECK_EQ (k, ZN_KERNEL_6_12);
  CHECK_EQ (zn_kernel_parse ("7.3", &k), 0);
  CHECK_EQ (k, ZN_KERNEL_7_3);
  /* Versions in between are not guessed at. */
  CHECK_EQ (zn_kernel_parse ("6.15", &k), -EINVAL);
  CHECK_EQ (zn_kernel_parse ("6", &k), -EINVAL);
  CHECK_EQ (zn_kernel_parse ("6.1.0", &k), -EINVAL);
  CHECK (strcmp (zn_kernel_name (ZN_KERNEL_6_12), "6.12") == 0);
}

/* A key given for a kernel that lacks it is refused, naming both, even
 * when its value is the default.
 */
static void
test_newer_keys_refused (void)
{
  static const struct { uint32_t bit; const char *msg; enum zn_kernel k; } t[] = {
    { ZN_GIVEN_ZONE_FULL, "zone_full: null_blk of Linux 6.1 has no zone_full",
      ZN_KERNEL_6_1 },
    { ZN_GIVEN_ZONE_APPEND_MAX_SECTORS,
      "zone_append_max_sectors: null_blk of Linux 6.1", ZN_KERNEL_6_1 },
    { ZN_GIVEN_FUA, "fua: null_blk of Linux 6.1 has no fua", ZN_KERNEL_6_1 },
    { ZN_GIVEN_BADBLOCKS_ONCE, "badblocks_once: null_blk of Linux 6.12",
      ZN_KERNEL_6_12 },
    { ZN_GIVEN_BADBLOCKS_PARTIAL_IO,
      "badblocks_partial_io: null_blk of Linux 6.12", ZN_KERNEL_6_12 },
  };

  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    struct zn_config cfg = small (t[i].k);

    cfg.given = t[i].bit;
    refused (&cfg, t[i].msg);
    cfg.kernel = ZN_KERNEL_7_3;
    zn_dev_destroy (create (&cfg));
  }
}

/* max_sectors below a page: 6.1 raised it to one, 6.10+ refuses it. */
static void
test_max_sectors_below_page (void)
{
  struct zn_config cfg = small (ZN_KERNEL_6_1);
  struct zn_dev *d;

  cfg.max_sectors = 4;
  d = create (&cfg);
  CHECK_EQ (zn_dev_geometry (d)->max_sectors, 8);
  zn_dev_destroy (d);
  cfg.kernel = ZN_KERNEL_6_12;
  refused (&cfg, "max_sectors: 4 is less than a page");
}

/* ---- null_blk's own changes ----------------------------------------- */

/* zone_full (6.11): sequential zones start FULL at their capacity. */
static void
test_zone_full (void)
{
  struct zn_config cfg = small (ZN_KERNEL_6_12);
  struct zn_dev *d;
  struct zn_zone z;

  cfg.zone_capacity = 1;
  cfg.size = 16;
  cfg.zone_size = 2;
  cfg.zone_nr_conv = 1;
  cfg.zone_full = true;
  cfg.given = ZN_GIVEN_ZONE_FULL;
  d = create (&cfg);
  CHECK (zn_dev_zone_full (d));
  CHECK_EQ (zone (d, 0).cond, ZN_COND_NOT_WP);
  z = zone (d, 2);
  CHECK_EQ (z.cond, ZN_COND_FULL);
  CHECK_EQ (z.wp, z.start + MIB_SECTORS);
  CHECK_EQ (wr (d, z.start, 8), -EIO);
  /* Reading below the wp gives the zeros nothing wrote, not 0xFF. */
  CHECK_EQ (zn_read (d, buf, z.start, 8), 0);
  CHECK_EQ (buf[0], 0);
  /* A power cycle builds the zones again: FULL again. */
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_RESET, z.start, 2 * MIB_SECTORS), 0);
  CHECK_EQ (zone (d, 2).cond, ZN_COND_EMPTY);
  CHECK_EQ (zn_power_cycle (d), 0);
  CHECK_EQ (zone (d, 2).cond, ZN_COND_FULL);
  CHECK_EQ (zone (d, 2).wp, z.start + MIB_SECTORS);
  zn_dev_destroy (d);
}

/* FINISH of a FULL zone: from 6.10 without limits the wp moves to the
 * zone's end; with limits, and on 6.1, it stays at the capacity.
 */
static void
finish_full (enum zn_kernel k, uint32_t max_open, uint64_t want_wp_off)
{
  struct zn_config cfg = small (k);
  struct zn_dev *d;

  cfg.size = 8;
  cfg.zone_size = 2;
  cfg.zone_capacity = 1;
  cfg.zone_max_open = max_open;
  d = create (&cfg);
  for (uint64_t s = 0; s < MIB_SECTORS; s += 128)
    CHECK_EQ (wr (d, s, 128), 0);
  CHECK_EQ (zone (d, 0).cond, ZN_COND_FULL);
  CHECK_EQ (zone (d, 0).wp, MIB_SECTORS);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_FINISH, 0, 2 * MIB_SECTORS), 0);
  CHECK_EQ (zone (d, 0).cond, ZN_COND_FULL);
  CHECK_EQ (zone (d, 0).wp, want_wp_off);
  zn_dev_destroy (d);
}

static void
test_finish_full (void)
{
  finish_full (ZN_KERNEL_6_1, 0, MIB_SECTORS);
  finish_full (ZN_KERNEL_6_12, 0, 2 * MIB_SECTORS);
  finish_full (ZN_KERNEL_7_3, 0, 2 * MIB_SECTORS);
  finish_full (ZN_KERNEL_6_12, 2, MIB_SECTORS);
}

/* zone_append_max_sectors (6.10): rounded down to the block size, at most
 * the zone capacity, and the append limit; 0 emulates appends.
 */
static void
test_zone_append_max_sectors (void)
{
  struct zn_config cfg = small (ZN_KERNEL_6_12);
  struct zn_dev *d;
  uint64_t at;

  cfg.blocksize = 4096;
  cfg.zone_append_max_sectors = 100;     /* 96 after rounding to 8 */
  cfg.given = ZN_GIVEN_ZONE_APPEND_MAX_SECTORS;
  d = create (&cfg);
  CHECK_EQ (zn_dev_geometry (d)->max_append_sectors, 96);
  CHECK (!zn_dev_geometry (d)->append_emulated);
  CHECK_EQ (zn_zone_append (d, buf, MIB_SECTORS, 104, false, &at), -EIO);
  CHECK_EQ (zn_zone_append (d, buf, MIB_SECTORS, 96, false, &at), 0);
  CHECK_EQ (at, MIB_SECTORS);
  zn_dev_destroy (d);

  /* Not set: the 6.1 limit, min (max_sectors, zone size). */
  cfg.given = 0;
  cfg.zone_append_max_sectors = INT32_MAX;
  d = create (&cfg);
  CHECK_EQ (zn_dev_geometry (d)->max_append_sectors, 248);
  zn_dev_destroy (d);

  cfg.zone_append_max_sectors = 0;
  cfg.given = ZN_GIVEN_ZONE_APPEND_MAX_SECTORS;
  d = create (&cfg);
  CHECK (zn_dev_geometry (d)->append_emulated);
  CHECK_EQ (zn_dev_geometry (d)->max_append_sectors, 248);
  zn_dev_destroy (d);

  /* On 6.1 the field means nothing. */
  cfg.kernel = ZN_KERNEL_6_1;
  cfg.given = 0;
  d = create (&cfg);
  CHECK_EQ (zn_dev_geometry (d)->max_append_sectors, 248);
  CHECK (!zn_dev_geometry (d)->append_emulated);
  zn_dev_destroy (d);
}

/* FUA: zonednull's 6.1 always advertises it; 6.10+ only with a cache and
 * fua.
 */
static void
test_fua (void)
{
  struct zn_config cfg = small (ZN_KERNEL_6_1);
  struct zn_dev *d;

  d = create (&cfg);
  CHECK (zn_dev_geometry (d)->fua);
  zn_dev_destroy (d);
  cfg.kernel = ZN_KERNEL_6_12;
  d = create (&cfg);
  CHECK (!zn_dev_geometry (d)->fua);
  zn_dev_destroy (d);
  cfg.cache_size = 1;
  d = create (&cfg);
  CHECK (zn_dev_geometry (d)->fua);
  zn_dev_destroy (d);
  cfg.fua = false;
  cfg.given = ZN_GIVEN_FUA;
  d = create (&cfg);
  CHECK (!zn_dev_geometry (d)->fua);
  zn_dev_destroy (d);
}

/* badblocks_once (7.3): a bad range hit once is good again. */
static void
test_badblocks_once (void)
{
  struct zn_config cfg = small (ZN_KERNEL_7_3);
  struct zn_dev *d;
  uint64_t first, last;

  cfg.badblocks_once = true;
  cfg.given = ZN_GIVEN_BADBLOCKS_ONCE;
  d = create (&cfg);
  CHECK_EQ (zn_badblocks_set (d, 100, 109), 0);
  CHECK_EQ (zn_read (d, buf, 96, 8), -EIO);
  CHECK_EQ (zn_badblocks_list (d, &first, &last, 1), 0);
  CHECK_EQ (zn_read (d, buf, 96, 8), 0);
  zn_dev_destroy (d);

  /* 6.12 has no such attribute: the range stays. */
  cfg.kernel = ZN_KERNEL_6_12;
  cfg.given = 0;
  d = create (&cfg);
  CHECK_EQ (zn_badblocks_set (d, 100, 109), 0);
  CHECK_EQ (zn_read (d, buf, 96, 8), -EIO);
  CHECK_EQ (zn_read (d, buf, 96, 8), -EIO);
  zn_dev_destroy (d);
}

/* badblocks_partial_io (7.3): a write transfers up to the first bad
 * block, rounded down to the block size, the wp moves past that part,
 * and the write still fails.
 */
static void
test_badblocks_partial_io (void)
{
  struct zn_config cfg = small (ZN_KERNEL_7_3);
  struct zn_dev *d;
  unsigned char want[512];

  cfg.blocksize = 4096;
  cfg.badblocks_partial_io = true;
  cfg.given = ZN_GIVEN_BADBLOCKS_PARTIAL_IO;
  d = create (&cfg);
  CHECK_EQ (zn_badblocks_set (d, MIB_SECTORS + 21, MIB_SECTORS + 22), 0);
  CHECK_EQ (wr (d, MIB_SECTORS, 64), -EIO);
  CHECK_EQ (zone (d, 1).cond, ZN_COND_IMP_OPEN);
  CHECK_EQ (zone (d, 1).wp, MIB_SECTORS + 16);
  fill_pattern (want, MIB_SECTORS + 8, 1, 1);
  CHECK_EQ (zn_read (d, buf, MIB_SECTORS + 8, 8), 0);
  CHECK (memcmp (buf, want, 512) == 0);
  /* A write starting in the bad block transfers nothing. */
  CHECK_EQ (wr (d, MIB_SECTORS + 16, 8), -EIO);
  CHECK_EQ (zone (d, 1).wp, MIB_SECTORS + 16);
  zn_dev_destroy (d);

  /* Without it nothing is written and the wp stays (the zone opens). */
  cfg.badblocks_partial_io = false;
  d = create (&cfg);
  CHECK_EQ (zn_badblocks_set (d, MIB_SECTORS + 21, MIB_SECTORS + 22), 0);
  CHECK_EQ (wr (d, MIB_SECTORS, 64), -EIO);
  CHECK_EQ (zone (d, 1).cond, ZN_COND_IMP_OPEN);
  CHECK_EQ (zone (d, 1).wp, MIB_SECTORS);
  zn_dev_destroy (d);
}

/* ---- the block layer's zone write plugging ---------------------------- */

/* The c5_all difference, made on purpose: a two-zone reset whose first
 * zone is conventional resets the second zone on the device, but the
 * chained error keeps the plug's old wp; a write at the real wp fails,
 * and the zone report after the error brings the plug back in step.
 */
static void
test_plug_partly_failed_reset (void)
{
  struct zn_config cfg = small (ZN_KERNEL_6_12);
  struct zn_dev *d;
  struct zn_zone zones[8];

  cfg.zone_nr_conv = 1;
  d = plugged (&cfg);
  CHECK_EQ (wr (d, MIB_SECTORS, 64), 0);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_RESET, 0, 2 * MIB_SECTORS), -EIO);
  CHECK_EQ (zone (d, 1).cond, ZN_COND_EMPTY);
  CHECK_EQ (wr (d, MIB_SECTORS, 8), -EIO);
  CHECK_EQ (zone (d, 1).cond, ZN_COND_EMPTY);    /* the report syncs */
  CHECK_EQ (wr (d, MIB_SECTORS, 8), 0);
  zn_dev_destroy (d);

  /* Without a report the plug keeps refusing every write to the zone. */
  d = plugged (&cfg);
  CHECK_EQ (wr (d, MIB_SECTORS, 64), 0);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_RESET, 0, 2 * MIB_SECTORS), -EIO);
  CHECK_EQ (wr (d, MIB_SECTORS, 8), -EIO);
  CHECK_EQ (wr (d, MIB_SECTORS, 8), -EIO);
  CHECK_EQ (wr (d, MIB_SECTORS + 64, 8), -EIO);
  /* A reset that succeeds (alone, or first in its range) resets it. */
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_RESET, MIB_SECTORS, MIB_SECTORS), 0);
  CHECK_EQ (wr (d, MIB_SECTORS, 8), 0);
  zn_dev_destroy (d);

  /* The same zone reset with the conventional zone after it: no chained
   * error reaches it, the plug is reset too.
   */
  cfg.zone_nr_conv = 0;
  d = plugged (&cfg);
  CHECK_EQ (wr (d, 0, 64), 0);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_RESET, 0, 2 * MIB_SECTORS), 0);
  CHECK_EQ (wr (d, 0, 8), 0);
  zn_dev_destroy (d);

  /* 6.1, and a front end that does not plug (ublk, whose host plugs),
   * accept the write at once.
   */
  cfg.zone_nr_conv = 1;
  for (int i = 0; i < 2; i++) {
    cfg.kernel = i == 0 ? ZN_KERNEL_6_1 : ZN_KERNEL_6_12;
    d = i == 0 ? plugged (&cfg) : create (&cfg);
    CHECK_EQ (wr (d, MIB_SECTORS, 64), 0);
    CHECK_EQ (zn_zone_mgmt (d, ZN_OP_RESET, 0, 2 * MIB_SECTORS), -EIO);
    CHECK_EQ (wr (d, MIB_SECTORS, 8), 0);
    CHECK_EQ (zn_report_zones (d, 0, zones, 8), 8);
    zn_dev_destroy (d);
  }
}

/* A write the driver fails flags the plug: the next write, at the right
 * place, fails too until a zone report.
 */
static void
test_plug_error_needs_report (void)
{
  struct zn_config cfg = small (ZN_KERNEL_7_3);
  struct zn_dev *d;

  d = plugged (&cfg);
  CHECK_EQ (zn_badblocks_set (d, MIB_SECTORS + 8, MIB_SECTORS + 8), 0);
  CHECK_EQ (wr (d, MIB_SECTORS, 8), 0);
  CHECK_EQ (wr (d, MIB_SECTORS + 8, 8), -EIO);    /* the bad block */
  CHECK_EQ (zn_badblocks_clear (d, MIB_SECTORS + 8, MIB_SECTORS + 8), 0);
  /* The failed write flagged the plug, so a report puts the plug back
   * at the driver's wp, behind what the failed write had claimed.
   */
  CHECK_EQ (zone (d, 1).wp, MIB_SECTORS + 8);
  CHECK_EQ (wr (d, MIB_SECTORS + 8, 8), 0);
  /* Without a report the flag fails the write at the driver's wp. */
  CHECK_EQ (zn_badblocks_set (d, MIB_SECTORS + 16, MIB_SECTORS + 16), 0);
  CHECK_EQ (wr (d, MIB_SECTORS + 16, 8), -EIO);
  CHECK_EQ (zn_badblocks_clear (d, MIB_SECTORS + 16, MIB_SECTORS + 16), 0);
  CHECK_EQ (wr (d, MIB_SECTORS + 16, 8), -EIO);   /* the plug's flag */
  CHECK_EQ (zone (d, 1).wp, MIB_SECTORS + 16);
  CHECK_EQ (wr (d, MIB_SECTORS + 16, 8), 0);
  /* Ahead of the wp: refused by the plug, and flagged likewise. */
  CHECK_EQ (wr (d, MIB_SECTORS + 40, 8), -EIO);
  CHECK_EQ (wr (d, MIB_SECTORS + 24, 8), -EIO);
  CHECK_EQ (zone (d, 1).wp, MIB_SECTORS + 24);
  CHECK_EQ (wr (d, MIB_SECTORS + 24, 8), 0);
  /* A finish brings it back too (the plug goes with the full zone). */
  CHECK_EQ (wr (d, MIB_SECTORS + 8, 8), -EIO);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_FINISH, MIB_SECTORS, MIB_SECTORS), 0);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_RESET, MIB_SECTORS, MIB_SECTORS), 0);
  CHECK_EQ (wr (d, MIB_SECTORS, 8), 0);
  /* So does a power cycle: a new disk has no plugs. */
  CHECK_EQ (wr (d, MIB_SECTORS + 64, 8), -EIO);
  CHECK_EQ (zn_power_cycle (d), 0);
  CHECK_EQ (wr (d, MIB_SECTORS, 8), 0);
  zn_dev_destroy (d);
}

/* Emulated zone append (zone_append_max_sectors=0) writes at the plug's
 * wp, so a stale plug makes it fail; a native one removes the plug.
 */
static void
test_plug_append (void)
{
  struct zn_config cfg = small (ZN_KERNEL_6_12);
  struct zn_dev *d;
  uint64_t at;

  cfg.zone_nr_conv = 1;
  cfg.zone_append_max_sectors = 0;
  cfg.given = ZN_GIVEN_ZONE_APPEND_MAX_SECTORS;
  d = plugged (&cfg);
  CHECK_EQ (zn_zone_append (d, buf, MIB_SECTORS, 8, false, &at), 0);
  CHECK_EQ (at, MIB_SECTORS);
  CHECK_EQ (zn_zone_append (d, buf, MIB_SECTORS, 8, false, &at), 0);
  CHECK_EQ (at, MIB_SECTORS + 8);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_RESET, 0, 2 * MIB_SECTORS), -EIO);
  CHECK_EQ (zn_zone_append (d, buf, MIB_SECTORS, 8, false, &at), -EIO);
  CHECK_EQ (zone (d, 1).wp, MIB_SECTORS);
  CHECK_EQ (zn_zone_append (d, buf, MIB_SECTORS, 8, false, &at), 0);
  CHECK_EQ (at, MIB_SECTORS);
  zn_dev_destroy (d);

  cfg.given = 0;
  cfg.zone_append_max_sectors = INT32_MAX;
  d = plugged (&cfg);
  CHECK_EQ (wr (d, MIB_SECTORS, 8), 0);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_RESET, 0, 2 * MIB_SECTORS), -EIO);
  /* The native append goes to the driver, which takes it at the wp,
   * and drops the stale plug: a write after it is judged afresh.
   */
  CHECK_EQ (zn_zone_append (d, buf, MIB_SECTORS, 8, false, &at), 0);
  CHECK_EQ (at, MIB_SECTORS);
  CHECK_EQ (wr (d, MIB_SECTORS + 8, 8), 0);
  zn_dev_destroy (d);
}

/* The plug refuses what pipeline_zoned_writes would wait for. */
static void
test_plug_pipeline_refused (void)
{
  struct zn_config cfg = small (ZN_KERNEL_6_12);
  struct zn_dev *d;
  char err[256] = "";

  cfg.pipeline_zoned_writes = true;
  d = create (&cfg);
  CHECK_EQ (zn_dev_write_plugging (d, err, sizeof err), -EINVAL);
  CHECK (strstr (err, "pipeline_zoned_writes: not with kernel=6.12") != NULL);
  zn_dev_destroy (d);
  cfg.kernel = ZN_KERNEL_6_1;      /* nothing to plug on 6.1 */
  d = create (&cfg);
  CHECK_EQ (zn_dev_write_plugging (d, err, sizeof err), 0);
  zn_dev_destroy (d);
}

int
main (void)
{
  test_kernel_names ();
  test_newer_keys_refused ();
  test_max_sectors_below_page ();
  test_zone_full ();
  test_finish_full ();
  test_zone_append_max_sectors ();
  test_fua ();
  test_badblocks_once ();
  test_badblocks_partial_io ();
  test_plug_partly_failed_reset ();
  test_plug_error_needs_report ();
  test_plug_append ();
  test_plug_pipeline_refused ();
  return 0;
}
