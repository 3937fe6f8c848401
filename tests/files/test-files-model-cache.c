/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests of file-backed zones (backing_dir) with cache_size against the
 * model: a power cycle and a killed process lose exactly the unflushed
 * writes, an orderly stop none.
 */
#include "files-model.h"

/* ---- the volatile cache ------------------------------------------------ */


static struct zn_config
cache_cfg (char *dir, size_t len, const char *name)
{
  struct zn_config c = store_cfg (16, 1, 0, 2, 512,
                                  path_in_top (dir, len, name));

  c.cache_size = 4;
  return c;
}

/* Flushed, FUA and unflushed writes in every kind of zone. */
static void
cache_writes (struct zn_dev *d)
{
  uint64_t size, dirty;

  /* Durable: flushed. */
  CHECK_EQ (write_tag (d, 0, 64, 1, false), 0);
  CHECK_EQ (write_tag (d, CZ (2), 64, 1, false), 0);
  CHECK_EQ (write_tag (d, CZ (6), MIB_SECTORS, 1, false), 0);   /* FULL */
  CHECK_EQ (zn_flush (d), 0);

  CHECK_EQ (write_tag (d, 32, 64, 2, false), 0);       /* over flushed data */
  CHECK_EQ (write_tag (d, 200, 8, 3, true), 0);
  CHECK_EQ (write_tag (d, CZ (1), 16, 4, false), 0);
  /* A FUA write in the middle of an unflushed one. */
  CHECK_EQ (write_tag (d, 300, 16, 5, false), 0);
  CHECK_EQ (write_tag (d, 304, 8, 6, true), 0);

  CHECK_EQ (write_tag (d, CZ (2) + 64, 32, 2, false), 0);
  /* A FUA write makes the zone's earlier writes durable too: a file
   * holds a prefix of its zone.
   */
  CHECK_EQ (write_tag (d, CZ (3), 16, 2, false), 0);
  CHECK_EQ (write_tag (d, CZ (3) + 16, 16, 3, true), 0);
  CHECK_EQ (write_tag (d, CZ (3) + 32, 16, 4, false), 0);
  append_tag (d, 4, 8, 2, true, CZ (4));
  append_tag (d, 4, 8, 3, false, CZ (4) + 8);
  CHECK_EQ (write_tag (d, CZ (5), 16, 2, false), 0);
  /* A finish writes the zone back. */
  CHECK_EQ (write_tag (d, CZ (7), 16, 2, false), 0);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_FINISH, CZ (7), MIB_SECTORS), 0);
  CHECK_EQ (write_tag (d, CZ (8), 16, 2, false), 0);
  CHECK_EQ (zn_zone_set_readonly (d, CZ (8)), 0);

  zn_cache_stats (d, &size, &dirty);
  CHECK_EQ (size, 4 << 20);
  CHECK (dirty > 0);
}

/* All of cache_writes, as it reads before any loss. */
static void
expect_all_writes (struct zn_dev *d)
{
  expect_data (d, 0, 32, 1);
  expect_data (d, 32, 64, 2);
  expect_data (d, 200, 8, 3);
  expect_data (d, CZ (1), 16, 4);
  expect_data (d, 300, 4, 5);
  expect_data (d, 304, 8, 6);
  expect_data (d, 312, 4, 5);
  EXPECT_ZONE (d, 2, ZN_COND_IMP_OPEN, 96);
  expect_data (d, CZ (2), 64, 1);
  expect_data (d, CZ (2) + 64, 32, 2);
  EXPECT_ZONE (d, 3, ZN_COND_IMP_OPEN, 48);
  expect_data (d, CZ (3) + 32, 16, 4);
  EXPECT_ZONE (d, 4, ZN_COND_IMP_OPEN, 16);
  expect_data (d, CZ (4) + 8, 8, 3);
  EXPECT_ZONE (d, 5, ZN_COND_IMP_OPEN, 16);
  expect_data (d, CZ (5), 16, 2);
}

/* What survives a loss of the cache: the flushed, the FUA writes and
 * what they made durable, the finished zone; nothing else.
 */
static void
expect_durable_writes (struct zn_dev *d)
{
  uint64_t size, dirty;

  zn_cache_stats (d, &size, &dirty);
  CHECK_EQ (dirty, 0);
  expect_data (d, 0, 64, 1);
  expect_data (d, 64, 136, ZEROS);
  expect_data (d, 200, 8, 3);
  expect_data (d, 208, 92, ZEROS);
  expect_data (d, 300, 4, ZEROS);
  expect_data (d, 304, 8, 6);
  expect_data (d, 312, 8, ZEROS);
  expect_data (d, CZ (1), 16, ZEROS);
  EXPECT_ZONE (d, 2, ZN_COND_CLOSED, 64);
  expect_data (d, CZ (2), 64, 1);
  expect_data (d, CZ (2) + 64, 8, ONES);
  EXPECT_ZONE (d, 3, ZN_COND_CLOSED, 32);
  expect_data (d, CZ (3), 16, 2);
  expect_data (d, CZ (3) + 16, 16, 3);
  EXPECT_ZONE (d, 4, ZN_COND_CLOSED, 8);
  expect_data (d, CZ (4), 8, 2);
  EXPECT_ZONE (d, 5, ZN_COND_EMPTY, 0);
  EXPECT_ZONE (d, 6, ZN_COND_FULL, MIB_SECTORS);
  expect_data (d, CZ (6), MIB_SECTORS, 1);
  EXPECT_ZONE (d, 7, ZN_COND_FULL, MIB_SECTORS);
  expect_data (d, CZ (7), 16, 2);
  expect_data (d, CZ (7) + 16, MIB_SECTORS - 16, ZEROS);
  /* READONLY stays, and so does what was written before it: a zone taken
   * out of service has its cache written back first.
   */
  CHECK_EQ (zone_at (d, 8).cond, ZN_COND_READONLY);
  expect_data (d, CZ (8), 16, 2);
  EXPECT_COUNTERS (d, 0, 0, 3);
}

static void
test_cache_power_cycle (void)
{
  char dir[1024];
  struct zn_config c = cache_cfg (dir, sizeof dir, "cache-pc");
  struct zn_dev *d = create (&c);

  cache_writes (d);
  expect_all_writes (d);
  CHECK_EQ (zn_power_cycle (d), 0);
  expect_durable_writes (d);
  /* A second power cycle has nothing more to lose. */
  CHECK_EQ (zn_power_cycle (d), 0);
  expect_durable_writes (d);
  zn_dev_destroy (d);
  /* ... and neither has a restart. */
  d = create (&c);
  expect_durable_writes (d);
  zn_dev_destroy (d);
  rm_tree (dir);
}

static void
test_cache_crash (void)
{
  char dir[1024];
  struct zn_config c = cache_cfg (dir, sizeof dir, "cache-crash");
  struct zn_dev *d;
  int status;
  pid_t pid = fork ();

  CHECK (pid >= 0);
  if (pid == 0) {
    d = create (&c);
    cache_writes (d);
    expect_all_writes (d);
    raise (SIGKILL);            /* no zn_dev_destroy: no write-back */
    _exit (1);
  }
  CHECK (waitpid (pid, &status, 0) == pid);
  CHECK (WIFSIGNALED (status) && WTERMSIG (status) == SIGKILL);
  d = create (&c);
  CHECK (zn_dev_restored (d));
  expect_durable_writes (d);
  zn_dev_destroy (d);
  rm_tree (dir);
}

/* An orderly stop writes the cache back: nothing is lost. */
static void
test_cache_orderly_stop (void)
{
  char dir[1024];
  struct zn_config c = cache_cfg (dir, sizeof dir, "cache-stop");
  struct zn_dev *d = create (&c);

  cache_writes (d);
  zn_dev_destroy (d);
  d = create (&c);
  expect_data (d, 0, 32, 1);
  expect_data (d, 32, 64, 2);
  expect_data (d, 300, 4, 5);
  expect_data (d, 304, 8, 6);
  expect_data (d, CZ (1), 16, 4);
  EXPECT_ZONE (d, 2, ZN_COND_CLOSED, 96);
  expect_data (d, CZ (2) + 64, 32, 2);
  EXPECT_ZONE (d, 3, ZN_COND_CLOSED, 48);
  EXPECT_ZONE (d, 4, ZN_COND_CLOSED, 16);
  EXPECT_ZONE (d, 5, ZN_COND_CLOSED, 16);
  expect_data (d, CZ (5), 16, 2);
  expect_data (d, CZ (8), 16, 2);
  zn_dev_destroy (d);
  rm_tree (dir);
}

int
main (void)
{
  make_top ();

  test_cache_power_cycle ();
  test_cache_crash ();
  test_cache_orderly_stop ();

  printf ("test-files-model-cache: all tests passed\n");
  return EXIT_SUCCESS;
}
