/* SPDX-License-Identifier: BSD-3-Clause */
/* Bad blocks and the volatile write cache in the device model: ranges
 * merge and split like the kernel's badblocks, reads and writes that
 * overlap one fail with EIO and transfer nothing, and a zoned write is
 * opened before the check (6.1).  Writes neither flushed nor FUA are lost
 * at a power cycle, which also rebuilds the zones.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../common/check.h"
#include "../common/dev.h"
#include "model/zoned.h"

static struct zn_dev *
make_dev (void)
{
  struct zn_config cfg;

  zn_config_init (&cfg);
  cfg.size = 8;
  cfg.zone_size = 1;
  cfg.zone_nr_conv = 1;
  cfg.memory_backed = true;
  return create (&cfg);
}

static void
expect_ranges (struct zn_dev *dev, size_t n, const uint64_t *want)
{
  uint64_t first[8], last[8];

  CHECK_EQ (zn_badblocks_list (dev, first, last, 8), n);
  for (size_t i = 0; i < n; i++) {
    CHECK_EQ (first[i], want[2 * i]);
    CHECK_EQ (last[i], want[2 * i + 1]);
  }
}

static void
test_ranges (void)
{
  struct zn_dev *dev = make_dev ();

  CHECK_EQ (zn_badblocks_parse (dev, "+10-19"), 0);
  CHECK_EQ (zn_badblocks_parse (dev, "+30-39"), 0);
  expect_ranges (dev, 2, (uint64_t[]) { 10, 19, 30, 39 });
  CHECK_EQ (zn_badblocks_parse (dev, "+20-29"), 0);        /* bridges */
  expect_ranges (dev, 1, (uint64_t[]) { 10, 39 });
  CHECK_EQ (zn_badblocks_parse (dev, "-15-24"), 0);        /* splits */
  expect_ranges (dev, 2, (uint64_t[]) { 10, 14, 25, 39 });
  CHECK_EQ (zn_badblocks_parse (dev, "-0-100"), 0);
  expect_ranges (dev, 0, NULL);
  CHECK_EQ (zn_badblocks_parse (dev, "+9-8"), -EINVAL);    /* A > B */
  CHECK_EQ (zn_badblocks_parse (dev, "10-20"), -EINVAL);
  CHECK_EQ (zn_badblocks_parse (dev, "+10"), -EINVAL);
  CHECK_EQ (zn_badblocks_parse (dev, "+1-2x"), -EINVAL);
  zn_dev_destroy (dev);
}

static size_t
nr_entries (struct zn_dev *dev)
{
  return zn_badblocks_list (dev, NULL, NULL, 0);
}

/* The kernel's table (issue 15): 512 entries of at most 512 sectors.  A
 * set beyond it is ENOSPC and keeps what fitted; a clear that would split
 * an entry of a full table leaves it.  An unbounded table let a control
 * client make every I/O walk 80k ranges.
 */
static void
test_table_full (void)
{
  struct zn_dev *dev = make_dev ();
  static uint64_t first[ZN_BADBLOCKS_MAX + 1], last[ZN_BADBLOCKS_MAX + 1];
  static unsigned char buf[512];

  /* A long range takes one entry per 512 sectors, merged as it can. */
  CHECK_EQ (zn_badblocks_set (dev, 0, 2047), 0);
  expect_ranges (dev, 4, (uint64_t[]) { 0, 511, 512, 1023, 1024, 1535,
                                        1536, 2047 });
  CHECK_EQ (zn_badblocks_set (dev, 2048, 2099), 0);   /* a new entry */
  CHECK_EQ (nr_entries (dev), 5);
  CHECK_EQ (zn_badblocks_clear (dev, 0, 9999), 0);
  CHECK_EQ (zn_badblocks_set (dev, 0, 99), 0);
  CHECK_EQ (zn_badblocks_set (dev, 100, 699), 0);    /* fills the first */
  expect_ranges (dev, 2, (uint64_t[]) { 0, 511, 512, 699 });
  CHECK_EQ (zn_badblocks_clear (dev, 0, 9999), 0);
  /* The most one set can cover. */
  CHECK_EQ (zn_badblocks_set (dev, 0, ZN_BADBLOCKS_MAX * 512 - 1), 0);
  CHECK_EQ (nr_entries (dev), ZN_BADBLOCKS_MAX);
  CHECK_EQ (zn_badblocks_clear (dev, 0, UINT64_MAX - 1), 0);
  CHECK_EQ (zn_badblocks_set (dev, 0, ZN_BADBLOCKS_MAX * 512), -ENOSPC);
  CHECK_EQ (nr_entries (dev), ZN_BADBLOCKS_MAX);
  CHECK_EQ (zn_badblocks_list (dev, first, last, ZN_BADBLOCKS_MAX + 1),
            ZN_BADBLOCKS_MAX);
  CHECK_EQ (last[ZN_BADBLOCKS_MAX - 1], ZN_BADBLOCKS_MAX * 512 - 1);
  CHECK_EQ (zn_badblocks_clear (dev, 0, UINT64_MAX - 1), 0);
  CHECK_EQ (nr_entries (dev), 0);

  /* 512 single sectors, three apart, fill the table. */
  for (uint64_t i = 0; i < ZN_BADBLOCKS_MAX; i++)
    CHECK_EQ (zn_badblocks_set (dev, 3 * i, 3 * i), 0);
  CHECK_EQ (nr_entries (dev), ZN_BADBLOCKS_MAX);
  CHECK_EQ (zn_badblocks_set (dev, 2, 2), -ENOSPC);
  /* The kernel checks for room first: even a sector already bad. */
  CHECK_EQ (zn_badblocks_set (dev, 3, 3), -ENOSPC);
  CHECK_EQ (zn_read (dev, buf, 2, 1), 0);
  CHECK_EQ (zn_read (dev, buf, 3, 1), -EIO);
  CHECK_EQ (nr_entries (dev), ZN_BADBLOCKS_MAX);
  /* Freeing one makes room for one; a set of two pieces keeps the first. */
  CHECK_EQ (zn_badblocks_clear (dev, 3, 3), 0);
  CHECK_EQ (zn_badblocks_set (dev, 10000, 10000 + 599), -ENOSPC);
  CHECK_EQ (zn_read (dev, buf, 10000 + 511, 1), -EIO);
  CHECK_EQ (zn_read (dev, buf, 10000 + 512, 1), 0);
  CHECK_EQ (nr_entries (dev), ZN_BADBLOCKS_MAX);
  /* Shrinking an entry needs no room; splitting one does. */
  CHECK_EQ (zn_badblocks_clear (dev, 10000, 10009), 0);
  CHECK_EQ (zn_read (dev, buf, 10009, 1), 0);
  CHECK_EQ (zn_badblocks_clear (dev, 10100, 10100), -ENOSPC);
  CHECK_EQ (zn_read (dev, buf, 10100, 1), -EIO);
  /* ... unless the same clear changes something else too. */
  CHECK_EQ (zn_badblocks_clear (dev, 10200, 10200 + 400), 0);
  CHECK_EQ (zn_read (dev, buf, 10200, 1), 0);
  CHECK_EQ (zn_read (dev, buf, 10199, 1), -EIO);
  CHECK_EQ (zn_badblocks_clear (dev, 0, 12000), 0);
  CHECK_EQ (nr_entries (dev), 0);
  zn_dev_destroy (dev);
}

/* Random sets and clears within a space too small to fill the table,
 * against a bitmap: every sector's state, and the entries sorted,
 * disjoint and within the length limit.
 */
static void
test_random (void)
{
  enum { SPACE = 900 };
  struct zn_dev *dev = make_dev ();
  static bool want[SPACE];
  static uint64_t first[ZN_BADBLOCKS_MAX], last[ZN_BADBLOCKS_MAX];
  static unsigned char buf[8 * 512];
  unsigned seed = 15;

  for (int round = 0; round < 3000; round++) {
    uint64_t a = (uint64_t) rand_r (&seed) % SPACE;
    uint64_t len = 1 + (uint64_t) rand_r (&seed) % (round % 7 == 0 ? 700 : 9);
    bool bad = rand_r (&seed) % 3 != 0;
    size_t n;

    if (a + len > SPACE)
      len = SPACE - a;
    CHECK_EQ ((bad ? zn_badblocks_set : zn_badblocks_clear)
              (dev, a, a + len - 1), 0);
    for (uint64_t s = a; s < a + len; s++)
      want[s] = bad;
    n = zn_badblocks_list (dev, first, last, ZN_BADBLOCKS_MAX);
    CHECK (n <= ZN_BADBLOCKS_MAX);
    for (size_t i = 0; i < n; i++) {
      CHECK (first[i] <= last[i]);
      CHECK (last[i] - first[i] < ZN_BADBLOCKS_MAX_LEN);
      CHECK (i == 0 || last[i - 1] < first[i]);
      for (uint64_t s = first[i]; s <= last[i]; s++)
        CHECK (want[s]);
    }
    {
      size_t nbad = 0, listed = 0;

      for (size_t s = 0; s < SPACE; s++)
        nbad += want[s];
      for (size_t i = 0; i < n; i++)
        listed += last[i] - first[i] + 1;
      CHECK_EQ (listed, nbad);
    }
    /* Lookups: a read fails exactly when one of its sectors is bad. */
    for (int k = 0; k < 4; k++) {
      uint64_t s = (uint64_t) rand_r (&seed) % (SPACE - 8);
      uint64_t m = 1 + (uint64_t) rand_r (&seed) % 8;
      bool hit = false;

      for (uint64_t j = s; j < s + m; j++)
        hit |= want[j];
      CHECK_EQ (zn_read (dev, buf, s, m), hit ? -EIO : 0);
    }
  }
  zn_dev_destroy (dev);
}

static void
test_io (void)
{
  struct zn_dev *dev = make_dev ();
  static unsigned char buf[8 * 512], got[8 * 512];
  struct zn_zone z;
  struct zn_counters c;

  memset (buf, 0xAB, sizeof buf);
  /* Conventional zone 0: sector 5 is bad. */
  CHECK_EQ (zn_badblocks_set (dev, 5, 5), 0);
  CHECK_EQ (zn_write (dev, buf, 0, 8), -EIO);
  CHECK_EQ (zn_read (dev, got, 0, 8), -EIO);
  CHECK_EQ (zn_write (dev, buf, 8, 8), 0);
  CHECK_EQ (zn_read (dev, got, 8, 8), 0);

  /* Sequential zone 1 (sectors 2048...): the write fails, the zone is
   * IMP_OPEN nonetheless, its wp has not moved.
   */
  CHECK_EQ (zn_badblocks_set (dev, 2050, 2050), 0);
  CHECK_EQ (zn_write (dev, buf, 2048, 8), -EIO);
  CHECK_EQ (zn_report_zones (dev, 2048, &z, 1), 1);
  CHECK_EQ (z.cond, ZN_COND_IMP_OPEN);
  CHECK_EQ (z.wp, 2048);
  zn_get_counters (dev, &c);
  CHECK_EQ (c.imp_open, 1);
  /* Cleared, the same write succeeds. */
  CHECK_EQ (zn_badblocks_clear (dev, 2050, 2050), 0);
  CHECK_EQ (zn_write (dev, buf, 2048, 8), 0);
  CHECK_EQ (zn_read (dev, got, 2048, 8), 0);
  CHECK (memcmp (got, buf, sizeof buf) == 0);
  /* Zone operations are not checked. */
  CHECK_EQ (zn_badblocks_set (dev, 2048, 4095), 0);
  CHECK_EQ (zn_zone_mgmt (dev, ZN_OP_RESET, 2048, 2048), 0);
  zn_dev_destroy (dev);
}

static struct zn_dev *
make_cached (uint64_t cache_size, bool memory_backed)
{
  struct zn_config cfg;

  zn_config_init (&cfg);
  cfg.size = 8;
  cfg.zone_size = 1;
  cfg.zone_nr_conv = 3;
  cfg.zone_max_open = 2;
  cfg.memory_backed = memory_backed;
  cfg.cache_size = cache_size;
  return create (&cfg);
}

/* Sectors [sector, sector + 8) hold byte v everywhere. */
static bool
holds (struct zn_dev *dev, uint64_t sector, int v)
{
  static unsigned char got[8 * 512];

  CHECK_EQ (zn_read (dev, got, sector, 8), 0);
  for (size_t i = 0; i < sizeof got; i++)
    if (got[i] != v)
      return false;
  return true;
}

static void
put (struct zn_dev *dev, uint64_t sector, int v, bool fua)
{
  static unsigned char buf[8 * 512];

  memset (buf, v, sizeof buf);
  CHECK_EQ ((fua ? zn_write_fua : zn_write) (dev, buf, sector, 8), 0);
}

static void
test_cache (void)
{
  struct zn_dev *dev = make_cached (1, true);
  static unsigned char mib[1 << 20];
  uint64_t size, dirty;
  struct zn_zone z;
  struct zn_counters c;

  put (dev, 0, 0xA1, true);          /* FUA: durable */
  put (dev, 8, 0xB2, false);         /* cached, then flushed: durable */
  put (dev, 16, 0xC3, false);        /* same */
  CHECK_EQ (zn_flush (dev), 0);
  put (dev, 24, 0xD4, false);        /* lost */
  put (dev, 32, 0xE5, true);
  put (dev, 32, 0xF6, false);        /* lost: the FUA data comes back */
  put (dev, 40, 0x17, false);
  put (dev, 44, 0x28, true);         /* FUA over half of a cached write */
  CHECK (holds (dev, 8, 0xB2));      /* reads see the cache */
  zn_cache_stats (dev, &size, &dirty);
  CHECK_EQ (size, 1 << 20);
  CHECK_EQ (dirty, (8 + 8 + 4) * 512);

  /* A sequential zone, open, with a write in it. */
  put (dev, 3 * 2048, 0x39, false);
  CHECK_EQ (zn_power_cycle (dev), 0);
  CHECK (holds (dev, 0, 0xA1));
  CHECK (holds (dev, 8, 0xB2));
  CHECK (holds (dev, 16, 0xC3));
  CHECK (holds (dev, 24, 0));
  CHECK (holds (dev, 32, 0xE5));
  {
    static unsigned char got[8 * 512];

    CHECK_EQ (zn_read (dev, got, 40, 8), 0);
    for (size_t i = 0; i < sizeof got; i++)
      CHECK_EQ (got[i], i < 4 * 512 ? 0 : 0x28);
  }
  zn_cache_stats (dev, &size, &dirty);
  CHECK_EQ (dirty, 0);
  CHECK_EQ (zn_report_zones (dev, 3 * 2048, &z, 1), 1);
  CHECK_EQ (z.cond, ZN_COND_EMPTY);
  CHECK_EQ (z.wp, 3 * 2048);
  CHECK (holds (dev, 3 * 2048, 0xFF));   /* past the wp */
  zn_get_counters (dev, &c);
  CHECK_EQ (c.imp_open + c.exp_open + c.closed, 0);

  /* A full cache writes back its oldest data: zone 0's MiB survives,
   * zone 1's does not.
   */
  memset (mib, 0x5A, sizeof mib);
  CHECK_EQ (zn_write (dev, mib, 0, 2048), 0);
  memset (mib, 0x6B, sizeof mib);
  CHECK_EQ (zn_write (dev, mib, 2048, 2048), 0);
  zn_cache_stats (dev, &size, &dirty);
  CHECK_EQ (dirty, 1 << 20);
  CHECK_EQ (zn_power_cycle (dev), 0);
  CHECK (holds (dev, 0, 0x5A));
  CHECK (holds (dev, 2040, 0x5A));
  CHECK (holds (dev, 2048, 0));
  zn_dev_destroy (dev);

  /* Not memory-backed: no cache (null_blk forces cache_size to 0). */
  dev = make_cached (1, false);
  zn_cache_stats (dev, &size, &dirty);
  CHECK_EQ (size, 0);
  zn_dev_destroy (dev);
}

int
main (void)
{
  test_ranges ();
  test_table_full ();
  test_random ();
  test_io ();
  test_cache ();
  printf ("test-badblocks: all checks passed\n");
  return 0;
}
