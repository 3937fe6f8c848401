/* SPDX-License-Identifier: BSD-3-Clause */
/* pipeline_zoned_writes in the device model: writes ahead of the write
 * pointer wait for it (many at once, in any order), writes behind it or to
 * a full zone fail at once, and a waiting write gives up with a clear code
 * on timeout, on a failed write at the wp, on a reset, and when too many
 * wait.  Off, the strict rule holds.  Waiting is observed through
 * zn_get_pipeline_stats, so no check depends on timing; the wait bounds
 * are generous except where the timeout itself is tested.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "../common/check.h"
#include "../common/dev.h"
#include "model/zoned.h"

#define BLOCK_SECTORS 8            /* 4 KiB writes */
#define NR_WRITES 32

/* Run again with one lock for all zones: the results must not change. */
static bool device_lock;

static struct zn_dev *
make_dev (bool pipeline, uint32_t wait_ms, uint32_t max_waiting,
          uint32_t max_open, uint32_t max_active)
{
  struct zn_config cfg;

  zn_config_init (&cfg);
  cfg.size = 8;
  cfg.zone_size = 1;
  cfg.memory_backed = true;
  cfg.zone_max_open = max_open;
  cfg.zone_max_active = max_active;
  cfg.pipeline_zoned_writes = pipeline;
  cfg.pipeline_wait_ms = wait_ms;
  cfg.pipeline_max_waiting = max_waiting;
  cfg.device_lock = device_lock;
  return create (&cfg);
}

static uint64_t
wp_of (struct zn_dev *dev, uint64_t sector)
{
  struct zn_zone z;

  CHECK_EQ (zn_report_zones (dev, sector, &z, 1), 1);
  return z.wp;
}

static uint8_t
cond_of (struct zn_dev *dev, uint64_t sector)
{
  struct zn_zone z;

  CHECK_EQ (zn_report_zones (dev, sector, &z, 1), 1);
  return z.cond;
}

static struct zn_pipeline_stats
stats (struct zn_dev *dev)
{
  struct zn_pipeline_stats s;

  zn_get_pipeline_stats (dev, &s);
  return s;
}

static void
wait_for_waiting (struct zn_dev *dev, uint32_t n)
{
  while (stats (dev).waiting < n)
    sched_yield ();
}

struct writer {
  pthread_t thread;
  struct zn_dev *dev;
  uint64_t sector;
  unsigned char buf[BLOCK_SECTORS * ZN_SECTOR_SIZE];
  int ret;
};

static void *
writer_run (void *arg)
{
  struct writer *w = arg;

  w->ret = zn_write (w->dev, w->buf, w->sector, BLOCK_SECTORS);
  return NULL;
}

static void
start_writer (struct writer *w, struct zn_dev *dev, uint64_t sector)
{
  w->dev = dev;
  w->sector = sector;
  memset (w->buf, (int) (sector / BLOCK_SECTORS) + 1, sizeof w->buf);
  CHECK_EQ (pthread_create (&w->thread, NULL, writer_run, w), 0);
}

static int
join_writer (struct writer *w)
{
  CHECK_EQ (pthread_join (w->thread, NULL), 0);
  return w->ret;
}

/* Every write of zone 1 but the first is started in reverse order and
 * waits; the first then lets them all through, in offset order.
 */
static void
test_out_of_order (void)
{
  struct zn_dev *dev = make_dev (true, 60000, 0, 0, 0);
  const uint64_t zone = 2048;
  struct writer *w = calloc (NR_WRITES, sizeof *w);
  unsigned char got[BLOCK_SECTORS * ZN_SECTOR_SIZE];

  CHECK (w != NULL);
  for (int i = NR_WRITES - 1; i >= 1; i--) {
    start_writer (&w[i], dev, zone + (uint64_t) i * BLOCK_SECTORS);
    wait_for_waiting (dev, NR_WRITES - i);
  }
  CHECK_EQ (wp_of (dev, zone), zone);
  CHECK_EQ (cond_of (dev, zone), ZN_COND_EMPTY);   /* waiting changes nothing */
  start_writer (&w[0], dev, zone);
  for (int i = 0; i < NR_WRITES; i++)
    CHECK_EQ (join_writer (&w[i]), 0);
  CHECK_EQ (wp_of (dev, zone), zone + NR_WRITES * BLOCK_SECTORS);
  for (int i = 0; i < NR_WRITES; i++) {
    CHECK_EQ (zn_read (dev, got, zone + (uint64_t) i * BLOCK_SECTORS,
                       BLOCK_SECTORS), 0);
    CHECK (memcmp (got, w[i].buf, sizeof got) == 0);
  }
  CHECK_EQ (stats (dev).waited, NR_WRITES - 1);
  CHECK_EQ (stats (dev).waiting, 0);
  CHECK_EQ (stats (dev).timeouts, 0);
  free (w);
  zn_dev_destroy (dev);
}

/* Writes that can never reach the wp fail at once, without waiting. */
static void
test_fail_at_once (bool pipeline)
{
  struct zn_dev *dev = make_dev (pipeline, 60000, 0, 0, 0);
  static unsigned char buf[4 * BLOCK_SECTORS * ZN_SECTOR_SIZE];

  CHECK_EQ (zn_write (dev, buf, 0, BLOCK_SECTORS), 0);
  CHECK_EQ (zn_write (dev, buf, 0, BLOCK_SECTORS), -EIO);          /* behind */
  CHECK_EQ (zn_zone_mgmt (dev, ZN_OP_FINISH, 2048, 2048), 0);
  CHECK_EQ (zn_write (dev, buf, 2048 + 64, BLOCK_SECTORS), -EIO);  /* full */
  CHECK_EQ (zn_zone_set_offline (dev, 4096), 0);
  CHECK_EQ (zn_write (dev, buf, 4096 + 64, BLOCK_SECTORS), -EIO);
  if (!pipeline)          /* strict: ahead of the wp is EIO at once too */
    CHECK_EQ (zn_write (dev, buf, 6144 + 64, BLOCK_SECTORS), -EIO);
  CHECK_EQ (stats (dev).waited, 0);
  CHECK_EQ (wp_of (dev, 0), BLOCK_SECTORS);
  zn_dev_destroy (dev);
}

static void
test_timeout (void)
{
  struct zn_dev *dev = make_dev (true, 20, 0, 0, 0);
  static unsigned char buf[4 * BLOCK_SECTORS * ZN_SECTOR_SIZE];

  CHECK_EQ (zn_write (dev, buf, BLOCK_SECTORS, BLOCK_SECTORS), -ETIMEDOUT);
  CHECK_EQ (stats (dev).timeouts, 1);
  CHECK_EQ (cond_of (dev, 0), ZN_COND_EMPTY);
  CHECK_EQ (wp_of (dev, 0), 0);
  /* The gap is still fillable afterwards. */
  CHECK_EQ (zn_write (dev, buf, 0, 2 * BLOCK_SECTORS), 0);
  zn_dev_destroy (dev);
}

/* A waiting write gives up (EIO) when the write at the wp fails: here the
 * active limit is reached, so zone 2's first write fails with EOVERFLOW.
 */
static void
test_failed_predecessor (void)
{
  struct zn_dev *dev = make_dev (true, 60000, 0, 1, 1);
  static unsigned char buf[4 * BLOCK_SECTORS * ZN_SECTOR_SIZE];
  struct writer w;

  CHECK_EQ (zn_write (dev, buf, 0, BLOCK_SECTORS), 0);    /* zone 0 active */
  start_writer (&w, dev, 4096 + BLOCK_SECTORS);
  wait_for_waiting (dev, 1);
  CHECK_EQ (zn_write (dev, buf, 4096, BLOCK_SECTORS), -EOVERFLOW);
  CHECK_EQ (join_writer (&w), -EIO);
  CHECK_EQ (cond_of (dev, 4096), ZN_COND_EMPTY);
  CHECK_EQ (stats (dev).failed, 1);
  zn_dev_destroy (dev);
}

/* A reset of the zone, or making it READONLY, ends the wait with EIO. */
static void
test_reset_ends_wait (bool readonly)
{
  struct zn_dev *dev = make_dev (true, 60000, 0, 0, 0);
  struct writer w;

  start_writer (&w, dev, 2048 + BLOCK_SECTORS);
  wait_for_waiting (dev, 1);
  if (readonly)
    CHECK_EQ (zn_zone_set_readonly (dev, 2048), 0);
  else
    CHECK_EQ (zn_zone_mgmt (dev, ZN_OP_RESET, 2048, 2048), 0);
  CHECK_EQ (join_writer (&w), -EIO);
  CHECK_EQ (cond_of (dev, 2048), readonly ? ZN_COND_READONLY : ZN_COND_EMPTY);
  zn_dev_destroy (dev);
}

/* At most pipeline_max_waiting writes wait per zone; more fail (EBUSY). */
static void
test_max_waiting (void)
{
  struct zn_dev *dev = make_dev (true, 60000, 1, 0, 0);
  static unsigned char buf[4 * BLOCK_SECTORS * ZN_SECTOR_SIZE];
  struct writer w;

  start_writer (&w, dev, 2 * BLOCK_SECTORS);
  wait_for_waiting (dev, 1);
  CHECK_EQ (zn_write (dev, buf, 3 * BLOCK_SECTORS, BLOCK_SECTORS), -EBUSY);
  /* Another zone has its own budget. */
  CHECK_EQ (zn_write (dev, buf, 2048, BLOCK_SECTORS), 0);
  CHECK_EQ (zn_write (dev, buf, 0, 2 * BLOCK_SECTORS), 0);
  CHECK_EQ (join_writer (&w), 0);
  CHECK_EQ (wp_of (dev, 0), 3 * BLOCK_SECTORS);
  zn_dev_destroy (dev);
}

int
main (void)
{
  device_lock = true;
  test_out_of_order ();
  test_failed_predecessor ();
  device_lock = false;
  test_out_of_order ();
  test_fail_at_once (true);
  test_fail_at_once (false);
  test_timeout ();
  test_failed_predecessor ();
  test_reset_ends_wait (false);
  test_reset_ends_wait (true);
  test_max_waiting ();
  printf ("test-pipeline: all checks passed\n");
  return 0;
}
