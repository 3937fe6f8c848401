/* SPDX-License-Identifier: BSD-3-Clause */
/* libzonednull-client against the nbdkit plugin: each test starts nbdkit
 * on a Unix socket in a private directory, connects by URI, and checks
 * results, exact errnos and zone states.  Default device: 8 zones of 1 MiB
 * (2048 sectors), zone 0 conventional, at most 2 open and 3 active zones.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include <libnbd.h>

#include "zonednull/client.h"
#include "../common/check.h"
#include "../common/server-fixture.h"

#define ZS 2048                         /* zone size, sectors */
#define ZB (ZS * 512)                   /* zone size, bytes */
#define NR_ZONES 8
#define ALL_ONES UINT64_MAX

static const char *const default_device[] = {
  "size=8", "zone_size=1", "zone_nr_conv=1", "zone_max_open=2",
  "zone_max_active=3", "memory_backed=1", NULL,
};

/* The connection must fail with a message containing want. */
static void
connect_fails (const char *uri, const char *want)
{
  char err[1024] = "";
  struct zn_client *c = zn_client_connect (uri, err, sizeof err);

  if (c != NULL || strstr (err, want) == NULL) {
    fprintf (stderr, "zn_client_connect (%s): expected failure with '%s', "
             "got %s: '%s'\n", uri, want, c ? "success" : "failure", err);
    exit (EXIT_FAILURE);
  }
}

#define zone(c, idx) report_zone (c, ZS, idx)
#define expect_zone(c, idx, cond, wp) expect_zone_in (c, ZS, idx, cond, wp)

/* Writes sectors at sector with a pattern; returns 0 or -errno. */
static int
write_sectors (struct zn_client *c, uint64_t sector, size_t sectors)
{
  unsigned char *buf = malloc (sectors * 512);
  int r;

  CHECK (buf != NULL);
  for (size_t i = 0; i < sectors * 512; i++)
    buf[i] = (unsigned char) (sector * 7 + i);
  r = zn_client_pwrite (c, buf, sectors * 512, sector * 512);
  free (buf);
  return r;
}

/* The counters of the header must equal a recount of the report. */
static void
check_counters (struct zn_client *c)
{
  struct zn_zone zones[NR_ZONES];
  struct zn_control_info info;
  uint32_t imp = 0, exp = 0, closed = 0;
  int n = zn_client_report (c, 0, zones, NR_ZONES);

  CHECK_EQ (n, NR_ZONES);
  for (int i = 0; i < n; i++) {
    imp += zones[i].cond == ZN_COND_IMP_OPEN;
    exp += zones[i].cond == ZN_COND_EXP_OPEN;
    closed += zones[i].cond == ZN_COND_CLOSED;
  }
  EXPECT_OK (c, zn_client_info (c, &info));
  CHECK_EQ (info.imp_open, imp);
  CHECK_EQ (info.exp_open, exp);
  CHECK_EQ (info.closed, closed);
}

static void
test_connect_errors (const struct spawned *s)
{
  char uri[600];

  connect_fails ("nbd://", "names no host");
  connect_fails ("nbds://alice@:10809/", "names no host");
  connect_fails ("foo://x", "unknown NBD URI scheme");
  connect_fails ("", "no URI");
  server_uri (uri, sizeof uri, s, "nosuch");
  connect_fails (uri, "nosuch");
  snprintf (uri, sizeof uri, "nbd+unix:///?socket=%s/absent.sock",
            fixture_dir ());
  connect_fails (uri, "No such file or directory");
  CHECK (zn_client_connect ("nbd://", NULL, 0) == NULL);
}

static void
test_geometry_and_report (struct zn_client *c)
{
  struct zn_control_info info;
  struct zn_zone zones[NR_ZONES + 4];

  EXPECT_OK (c, zn_client_info (c, &info));
  CHECK_EQ (info.version, ZN_CONTROL_VERSION);
  CHECK_EQ (info.nr_zones, NR_ZONES);
  CHECK_EQ (info.capacity, NR_ZONES * ZS);
  CHECK_EQ (info.zone_sectors, ZS);
  CHECK_EQ (info.zone_capacity, ZS);
  CHECK_EQ (info.nr_conv, 1);
  CHECK_EQ (info.max_open, 2);
  CHECK_EQ (info.max_active, 3);
  CHECK_EQ (info.block_size, 512);
  CHECK (info.flags & ZN_CONTROL_F_MEMORY_BACKED);
  CHECK (!(info.flags & ZN_CONTROL_F_READONLY));
  CHECK_EQ (info.imp_open + info.exp_open + info.closed, 0);

  CHECK_EQ (zn_client_report (c, 0, zones, NR_ZONES + 4), NR_ZONES);
  CHECK_EQ (zones[0].type, ZN_ZONE_CONVENTIONAL);
  CHECK_EQ (zones[0].cond, ZN_COND_NOT_WP);
  for (unsigned i = 1; i < NR_ZONES; i++) {
    CHECK_EQ (zones[i].start, (uint64_t) i * ZS);
    CHECK_EQ (zones[i].len, ZS);
    CHECK_EQ (zones[i].capacity, ZS);
    CHECK_EQ (zones[i].type, ZN_ZONE_SEQWRITE_REQ);
    CHECK_EQ (zones[i].cond, ZN_COND_EMPTY);
    CHECK_EQ (zones[i].wp, zones[i].start);
  }
  /* From the zone holding a sector, at most max, nothing past the end. */
  CHECK_EQ (zn_client_report (c, ZS + 1, zones, 2), 2);
  CHECK_EQ (zones[0].start, ZS);
  CHECK_EQ (zones[1].start, 2 * ZS);
  CHECK_EQ (zn_client_report (c, 7 * ZS + 5, zones, 4), 1);
  CHECK_EQ (zones[0].start, 7 * ZS);
  CHECK_EQ (zn_client_report (c, NR_ZONES * ZS, zones, 4), 0);
  CHECK_EQ (zn_client_report (c, 0, zones, 0), 0);
}

static void
test_writes (struct zn_client *c)
{
  unsigned char got[4096], want[4096];

  EXPECT_OK (c, write_sectors (c, ZS, 8));
  expect_zone (c, 1, ZN_COND_IMP_OPEN, ZS + 8);
  EXPECT_OK (c, write_sectors (c, ZS + 8, 16));
  EXPECT_OK (c, write_sectors (c, 3 * ZS, 1));
  expect_zone (c, 1, ZN_COND_IMP_OPEN, ZS + 24);
  expect_zone (c, 3, ZN_COND_IMP_OPEN, 3 * ZS + 1);
  check_counters (c);

  for (size_t i = 0; i < sizeof want; i++)
    want[i] = (unsigned char) (ZS * 7 + i);
  EXPECT_OK (c, zn_client_pread (c, got, sizeof got, (uint64_t) ZS * 512));
  CHECK (memcmp (got, want, sizeof got) == 0);

  /* Behind and ahead of the write pointer: null_blk says EIO. */
  EXPECT_ERRNO (c, write_sectors (c, ZS, 8), EIO);
  EXPECT_ERRNO (c, write_sectors (c, ZS + 100, 8), EIO);
  expect_zone (c, 1, ZN_COND_IMP_OPEN, ZS + 24);
  /* Not aligned to the 512-byte block. */
  EXPECT_ERRNO (c, zn_client_pwrite (c, want, 100, (uint64_t) ZS * 512), EINVAL);
  EXPECT_ERRNO (c, zn_client_pwrite (c, want, 512, (uint64_t) ZS * 512 + 1), EINVAL);
  /* Conventional zones take writes anywhere. */
  EXPECT_OK (c, write_sectors (c, 100, 8));
  EXPECT_OK (c, write_sectors (c, 10, 8));
  CHECK_EQ (zone (c, 0).cond, ZN_COND_NOT_WP);

  EXPECT_OK (c, zn_client_zone_mgmt (c, ZN_OP_RESET, 0, NR_ZONES * ZS));
  for (unsigned i = 1; i < NR_ZONES; i++)
    expect_zone (c, i, ZN_COND_EMPTY, (uint64_t) i * ZS);
  check_counters (c);
}

static void
test_ranges (struct zn_client *c)
{
  /* The block layer's range rules. */
  EXPECT_ERRNO (c, zn_client_zone_mgmt (c, ZN_OP_OPEN, ZS + 8, ZS), EINVAL);
  EXPECT_ERRNO (c, zn_client_zone_mgmt (c, ZN_OP_OPEN, ZS, 100), EINVAL);
  EXPECT_ERRNO (c, zn_client_zone_mgmt (c, ZN_OP_RESET, ZS, 0), EINVAL);
  EXPECT_ERRNO (c, zn_client_zone_mgmt (c, ZN_OP_FINISH, 7 * ZS, 2 * ZS), EINVAL);
  EXPECT_ERRNO (c, zn_client_zone_mgmt (c, ZN_OP_CLOSE, NR_ZONES * ZS, ZS), EINVAL);
  EXPECT_ERRNO (c, zn_client_zone_mgmt (c, ZN_OP_RESET, ALL_ONES - ZS + 1, ZS),
                EINVAL);
  /* Conventional zones have no zone operations. */
  EXPECT_ERRNO (c, zn_client_zone_mgmt (c, ZN_OP_OPEN, 0, ZS), EIO);
  EXPECT_ERRNO (c, zn_client_zone_mgmt (c, (enum zn_zone_op) 42, ZS, ZS), EINVAL);
  CHECK (zn_client_error (c)[0] != '\0');
  check_counters (c);

  /* Explicit open, close, finish, and a write to a full zone. */
  EXPECT_OK (c, zn_client_zone_mgmt (c, ZN_OP_OPEN, 4 * ZS, ZS));
  expect_zone (c, 4, ZN_COND_EXP_OPEN, 4 * ZS);
  EXPECT_OK (c, zn_client_zone_mgmt (c, ZN_OP_CLOSE, 4 * ZS, ZS));
  /* An empty zone that is closed goes back to EMPTY. */
  expect_zone (c, 4, ZN_COND_EMPTY, 4 * ZS);
  EXPECT_OK (c, write_sectors (c, 4 * ZS, 8));
  EXPECT_OK (c, zn_client_zone_mgmt (c, ZN_OP_CLOSE, 4 * ZS, ZS));
  expect_zone (c, 4, ZN_COND_CLOSED, 4 * ZS + 8);
  EXPECT_OK (c, zn_client_zone_mgmt (c, ZN_OP_FINISH, 4 * ZS, ZS));
  expect_zone (c, 4, ZN_COND_FULL, 5 * ZS);
  EXPECT_ERRNO (c, write_sectors (c, 5 * ZS - 8, 8), EIO);
  /* The last zone's range may be given up to the end. */
  EXPECT_OK (c, zn_client_zone_mgmt (c, ZN_OP_FINISH, 7 * ZS, ZS));
  expect_zone (c, 7, ZN_COND_FULL, 8 * ZS);
  check_counters (c);
  EXPECT_OK (c, zn_client_zone_mgmt (c, ZN_OP_RESET, ZS, 7 * ZS));
  check_counters (c);
}

/* The open limit (2) and the active limit (3), on zone operations and on
 * data writes.  NBD flattens both errnos to EINVAL; the client library
 * gets them back through the control channel.
 */
static void
test_limits (struct zn_client *c)
{
  struct nbd_handle *h = zn_client_data_handle (c);
  unsigned char buf[512] = { 0 };
  int err = -1;

  EXPECT_OK (c, zn_client_zone_mgmt (c, ZN_OP_OPEN, 1 * ZS, ZS));
  EXPECT_OK (c, zn_client_zone_mgmt (c, ZN_OP_OPEN, 2 * ZS, ZS));
  /* Two explicitly open zones, none implicitly open to close. */
  EXPECT_ERRNO (c, zn_client_zone_mgmt (c, ZN_OP_OPEN, 3 * ZS, ZS), ETOOMANYREFS);
  EXPECT_ERRNO (c, write_sectors (c, 3 * ZS, 1), ETOOMANYREFS);
  expect_zone (c, 3, ZN_COND_EMPTY, 3 * ZS);

  /* The raw NBD error, then the exact one from the control channel. */
  CHECK (nbd_pwrite (h, buf, sizeof buf, (uint64_t) 3 * ZB, 0) == -1);
  CHECK_EQ (nbd_get_errno (), EINVAL);
  EXPECT_OK (c, zn_client_data_errno (c, ZN_NBD_CMD_WRITE, (uint64_t) 3 * ZB,
                                      sizeof buf, &err));
  CHECK_EQ (err, ETOOMANYREFS);
  /* A request that never failed has no errno on record. */
  EXPECT_OK (c, zn_client_data_errno (c, ZN_NBD_CMD_WRITE, (uint64_t) 6 * ZB,
                                      4096, &err));
  CHECK_EQ (err, 0);

  /* Close zone 1 (written, so it stays CLOSED): 1 open, 2 active. */
  EXPECT_OK (c, write_sectors (c, ZS, 8));
  EXPECT_OK (c, zn_client_zone_mgmt (c, ZN_OP_CLOSE, ZS, ZS));
  expect_zone (c, 1, ZN_COND_CLOSED, ZS + 8);
  /* A third active zone is allowed, a fourth is not. */
  EXPECT_OK (c, write_sectors (c, 3 * ZS, 8));
  expect_zone (c, 3, ZN_COND_IMP_OPEN, 3 * ZS + 8);
  check_counters (c);
  EXPECT_ERRNO (c, zn_client_zone_mgmt (c, ZN_OP_OPEN, 4 * ZS, ZS), EOVERFLOW);
  EXPECT_ERRNO (c, write_sectors (c, 4 * ZS, 8), EOVERFLOW);
  CHECK (nbd_pwrite (h, buf, sizeof buf, (uint64_t) 4 * ZB, 0) == -1);
  CHECK_EQ (nbd_get_errno (), EINVAL);
  EXPECT_OK (c, zn_client_data_errno (c, ZN_NBD_CMD_WRITE, (uint64_t) 4 * ZB,
                                      sizeof buf, &err));
  CHECK_EQ (err, EOVERFLOW);
  expect_zone (c, 4, ZN_COND_EMPTY, 4 * ZS);

  /* Opening or finishing the closed zone needs an open slot.  null_blk
   * frees one by closing an implicitly open zone (3) only while the
   * active limit has room, and all 3 active zones are in use.
   */
  EXPECT_ERRNO (c, zn_client_zone_mgmt (c, ZN_OP_OPEN, ZS, ZS), ETOOMANYREFS);
  EXPECT_ERRNO (c, zn_client_zone_mgmt (c, ZN_OP_FINISH, ZS, ZS), ETOOMANYREFS);
  expect_zone (c, 1, ZN_COND_CLOSED, ZS + 8);
  expect_zone (c, 3, ZN_COND_IMP_OPEN, 3 * ZS + 8);
  check_counters (c);
  /* Finishing zone 3 frees both an open and an active slot. */
  EXPECT_OK (c, zn_client_zone_mgmt (c, ZN_OP_FINISH, 3 * ZS, ZS));
  expect_zone (c, 3, ZN_COND_FULL, 4 * ZS);
  EXPECT_OK (c, zn_client_zone_mgmt (c, ZN_OP_OPEN, ZS, ZS));
  expect_zone (c, 1, ZN_COND_EXP_OPEN, ZS + 8);
  check_counters (c);

  EXPECT_OK (c, zn_client_zone_mgmt (c, ZN_OP_RESET, 0, NR_ZONES * ZS));
  check_counters (c);
}

static void
test_readonly_offline (struct zn_client *c)
{
  unsigned char buf[512];
  struct zn_zone z;

  EXPECT_OK (c, zn_client_set_readonly (c, 5 * ZS + 17));
  z = zone (c, 5);
  CHECK_EQ (z.cond, ZN_COND_READONLY);
  CHECK (z.wp == ALL_ONES);
  EXPECT_ERRNO (c, write_sectors (c, 5 * ZS, 1), EIO);
  EXPECT_ERRNO (c, zn_client_zone_mgmt (c, ZN_OP_OPEN, 5 * ZS, ZS), EIO);
  EXPECT_OK (c, zn_client_pread (c, buf, sizeof buf, (uint64_t) 5 * ZB));
  EXPECT_OK (c, zn_client_set_readonly (c, 5 * ZS));
  expect_zone (c, 5, ZN_COND_EMPTY, 5 * ZS);

  EXPECT_OK (c, write_sectors (c, 6 * ZS, 8));
  EXPECT_OK (c, zn_client_set_offline (c, 6 * ZS));
  z = zone (c, 6);
  CHECK_EQ (z.cond, ZN_COND_OFFLINE);
  CHECK (z.wp == ALL_ONES);
  EXPECT_ERRNO (c, zn_client_pread (c, buf, sizeof buf, (uint64_t) 6 * ZB), EIO);
  EXPECT_ERRNO (c, write_sectors (c, 6 * ZS, 1), EIO);
  EXPECT_ERRNO (c, zn_client_zone_mgmt (c, ZN_OP_RESET, 6 * ZS, ZS), EIO);
  check_counters (c);
  EXPECT_OK (c, zn_client_set_offline (c, 6 * ZS));
  expect_zone (c, 6, ZN_COND_EMPTY, 6 * ZS);

  /* Not for conventional zones, nor past the end. */
  EXPECT_ERRNO (c, zn_client_set_readonly (c, 0), EINVAL);
  EXPECT_ERRNO (c, zn_client_set_offline (c, NR_ZONES * ZS), EINVAL);
  check_counters (c);
}

static void
test_readonly_server (void)
{
  struct spawned s;
  struct zn_control_info info;
  struct zn_zone zones[NR_ZONES];
  struct zn_client *c;
  unsigned char buf[512] = { 0 };

  server_start (&s, "ro", default_device,
                &(struct server_opts) { .readonly = true });
  c = connect_ok (s.uri);
  EXPECT_OK (c, zn_client_info (c, &info));
  CHECK (info.flags & ZN_CONTROL_F_READONLY);
  CHECK_EQ (zn_client_report (c, 0, zones, NR_ZONES), NR_ZONES);
  EXPECT_OK (c, zn_client_pread (c, buf, sizeof buf, ZB));

  EXPECT_ERRNO (c, zn_client_zone_mgmt (c, ZN_OP_RESET, ZS, ZS), EPERM);
  CHECK (strstr (zn_client_error (c), "read-only") != NULL);
  EXPECT_ERRNO (c, zn_client_zone_mgmt (c, ZN_OP_OPEN, ZS, ZS), EPERM);
  EXPECT_ERRNO (c, zn_client_set_readonly (c, ZS), EPERM);
  EXPECT_ERRNO (c, zn_client_set_offline (c, ZS), EPERM);
  EXPECT_ERRNO (c, zn_client_pwrite (c, buf, sizeof buf, ZB), EPERM);
  /* Nothing changed. */
  CHECK_EQ (zn_client_report (c, 0, zones, NR_ZONES), NR_ZONES);
  for (unsigned i = 1; i < NR_ZONES; i++)
    CHECK_EQ (zones[i].cond, ZN_COND_EMPTY);
  zn_client_close (c);
  server_stop (&s);
}

/* A server that is not zonednull: nbdkit's memory plugin serves any
 * export name, so the control export opens but holds no header.
 */
static void
test_not_zonednull (void)
{
  static const char *const args[] = { "1M", NULL };
  struct spawned s;

  server_start (&s, "memory", args,
                &(struct server_opts) { .plugin = "memory" });
  connect_fails (s.uri, "not a zonednull server");
  server_stop (&s);
}

/* More zones than one 1 MiB pread of descriptors holds. */
static void
test_large_report (void)
{
  static const char *const args[] = {
    "size=17000", "zone_size=1", "zone_nr_conv=3", NULL,
  };
  struct spawned s;
  struct zn_client *c;
  struct zn_zone *zones = calloc (17001, sizeof *zones);
  int n;

  CHECK (zones != NULL);
  server_start (&s, "large", args, NULL);
  c = connect_ok (s.uri);
  n = zn_client_report (c, 0, zones, 17001);
  CHECK_EQ (n, 17000);
  for (int i = 0; i < n; i++) {
    CHECK_EQ (zones[i].start, (uint64_t) i * ZS);
    CHECK_EQ (zones[i].type, i < 3 ? ZN_ZONE_CONVENTIONAL : ZN_ZONE_SEQWRITE_REQ);
  }
  n = zn_client_report (c, (uint64_t) 16383 * ZS, zones, 17001);
  CHECK_EQ (n, 17000 - 16383);
  CHECK_EQ (zones[n - 1].start, (uint64_t) 16999 * ZS);
  zn_client_close (c);
  server_stop (&s);
  free (zones);
}

/* Two clients on separate threads cycle their own zones through
 * write, open, close, finish and reset.  Each keeps at most one zone
 * active, so the limits (2 open, 3 active) never refuse anything, and at
 * the end the counters must match the zones.
 */
struct worker {
  const char *uri;
  unsigned first_zone;
  int failures;
};

static void *
worker (void *arg)
{
  struct worker *w = arg;
  struct zn_client *c = connect_ok (w->uri);

  for (unsigned round = 0; round < 50; round++) {
    unsigned z = w->first_zone + round % 3;
    uint64_t start = (uint64_t) z * ZS;

    w->failures += write_sectors (c, start, 8) != 0;
    w->failures += zn_client_zone_mgmt (c, ZN_OP_CLOSE, start, ZS) != 0;
    w->failures += zn_client_zone_mgmt (c, ZN_OP_OPEN, start, ZS) != 0;
    if (round % 2)
      w->failures += zn_client_zone_mgmt (c, ZN_OP_FINISH, start, ZS) != 0;
    w->failures += zn_client_zone_mgmt (c, ZN_OP_RESET, start, ZS) != 0;
  }
  /* Leave one zone closed and one explicitly open per client. */
  w->failures += write_sectors (c, (uint64_t) w->first_zone * ZS, 8) != 0;
  w->failures += zn_client_zone_mgmt (c, ZN_OP_CLOSE,
                                      (uint64_t) w->first_zone * ZS, ZS) != 0;
  zn_client_close (c);
  return NULL;
}

static void
test_concurrent_clients (const struct spawned *s)
{
  struct worker w[2] = {
    { s->uri, 1, 0 },
    { s->uri, 4, 0 },
  };
  pthread_t t[2];
  struct zn_client *c;
  struct zn_control_info info;

  for (int i = 0; i < 2; i++)
    CHECK (pthread_create (&t[i], NULL, worker, &w[i]) == 0);
  for (int i = 0; i < 2; i++)
    CHECK (pthread_join (t[i], NULL) == 0);
  CHECK_EQ (w[0].failures, 0);
  CHECK_EQ (w[1].failures, 0);

  c = connect_ok (s->uri);
  expect_zone (c, 1, ZN_COND_CLOSED, ZS + 8);
  expect_zone (c, 4, ZN_COND_CLOSED, 4 * ZS + 8);
  EXPECT_OK (c, zn_client_info (c, &info));
  CHECK_EQ (info.closed, 2);
  CHECK_EQ (info.imp_open + info.exp_open, 0);
  check_counters (c);
  EXPECT_OK (c, zn_client_zone_mgmt (c, ZN_OP_RESET, 0, NR_ZONES * ZS));
  zn_client_close (c);
}

int
main (void)
{
  struct spawned s;
  struct zn_client *c;
  char uri[600];

  fixture_init (__FILE__, "client", false);
  server_start (&s, "dev", default_device, NULL);
  test_connect_errors (&s);
  c = connect_ok (s.uri);
  test_geometry_and_report (c);
  test_writes (c);
  test_ranges (c);
  test_limits (c);
  test_readonly_offline (c);
  zn_client_close (c);

  /* The default device by its name. */
  server_uri (uri, sizeof uri, &s, ZN_DEFAULT_DEVICE);
  c = connect_ok (uri);
  check_counters (c);
  zn_client_close (c);

  test_concurrent_clients (&s);
  server_stop (&s);

  test_readonly_server ();
  test_not_zonednull ();
  test_large_report ();

  return EXIT_SUCCESS;
}
