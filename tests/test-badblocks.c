/* Bad blocks in the device model: ranges merge and split like the
 * kernel's badblocks, reads and writes that overlap one fail with EIO and
 * transfer nothing, and a zoned write is opened before the check (6.1).
 */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "zonednull/zoned.h"

static struct zn_dev *
make_dev (void)
{
  struct zn_config cfg;
  char err[256];
  struct zn_dev *dev;

  zn_config_init (&cfg);
  cfg.size = 8;
  cfg.zone_size = 1;
  cfg.zone_nr_conv = 1;
  cfg.memory_backed = true;
  dev = zn_dev_create (&cfg, err, sizeof err);
  CHECK (dev != NULL);
  return dev;
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

int
main (void)
{
  test_ranges ();
  test_io ();
  printf ("test-badblocks: all checks passed\n");
  return 0;
}
