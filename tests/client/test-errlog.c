/* SPDX-License-Identifier: BSD-3-Clause */
/* Error logs: exact errnos per data connection, against both servers
 * (nbdkit with the plugin, then zonednull-server).  Two clients fail the
 * same request (type, offset, length) with different errnos, each asking
 * only afterwards: each must get its own.  Error logs are isolated from
 * plain connections both ways, malformed export names of error logs are
 * refused, the ERRLOG_ERRNO wire rules hold, the logs keep their bounds
 * (64 failures per error log; every attached error log and the 256 most
 * recently detached per device), and a server without error logs
 * (nbdkit's exportname filter refusing the names) is served through the
 * device-wide log.  Outcomes only, never speed.
 *
 * Device: 8 zones of 1 MiB (2048 sectors), zone 0 conventional, at most
 * 1 open zone; two devices.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libnbd.h>

#include "../common/check.h"
#include "wire/control-wire.h"
#include "../common/server-fixture.h"
#include "zonednull/client.h"

#define ZS 2048                         /* zone size, sectors */
#define ZB ((uint64_t) ZS * 512)        /* zone size, bytes */
#define NR_ZONES 8
#define BLOCK 4096
/* The request both clients fail: one block, one block into zone 2. */
#define R_OFF (2 * ZB + BLOCK)

static const char *const default_device[] = {
  "size=8", "zone_size=1", "zone_nr_conv=1", "zone_max_open=1",
  "memory_backed=1", "nr_devices=2", NULL,
};

static unsigned char block[BLOCK];

/* The errno error log errlog (0: the device-wide log) holds for a
 * write of one block at off must be want (0: none).
 */
#define EXPECT_LOGGED(c, errlog, off, want)                             \
  do {                                                                  \
    int logged_ = -1;                                                   \
    EXPECT_OK (c, zn_client_errlog_errno (c, errlog, ZN_NBD_CMD_WRITE,  \
                                          off, BLOCK, &logged_));       \
    if (logged_ != (want)) {                                            \
      fprintf (stderr, "%s:%d: %s: error log %016llx has errno %d (%s) " \
               "for the write at %llu, expected %s\n", __FILE__,        \
               __LINE__, fixture_target, (unsigned long long) (errlog), \
               logged_, logged_ ? zn_errno_name (logged_) : "none",     \
               (unsigned long long) (off), #want);                      \
      exit (EXIT_FAILURE);                                              \
    }                                                                   \
  } while (0)

/* As EXPECT_LOGGED, for the client's own data connection. */
#define EXPECT_OWN(c, off, want)                                        \
  do {                                                                  \
    int own_ = -1;                                                      \
    EXPECT_OK (c, zn_client_data_errno (c, ZN_NBD_CMD_WRITE, off, BLOCK, \
                                        &own_));                        \
    if (own_ != (want)) {                                               \
      fprintf (stderr, "%s:%d: %s: the client's own connection has "    \
               "errno %d (%s) for the write at %llu, expected %s\n",    \
               __FILE__, __LINE__, fixture_target, own_,                \
               own_ ? zn_errno_name (own_) : "none",                    \
               (unsigned long long) (off), #want);                      \
      exit (EXIT_FAILURE);                                              \
    }                                                                   \
  } while (0)

/* A write of one block that the server must fail (its errno unasked). */
static void
write_fails (struct nbd_handle *h, uint64_t off)
{
  if (nbd_pwrite (h, block, BLOCK, off, 0) != -1) {
    fprintf (stderr, "%s: the write at %llu succeeded\n", fixture_target,
             (unsigned long long) off);
    exit (EXIT_FAILURE);
  }
}

static void
write_ok (struct nbd_handle *h, uint64_t off)
{
  if (nbd_pwrite (h, block, BLOCK, off, 0) == -1) {
    fprintf (stderr, "%s: the write at %llu: %s\n", fixture_target,
             (unsigned long long) off, nbd_get_error ());
    exit (EXIT_FAILURE);
  }
}

/* A plain libnbd connection to export name on the server's socket; NULL
 * when the server refuses it (the reason in *why).
 */
static struct nbd_handle *
raw_connect (const struct spawned *s, const char *name, char *why,
             size_t whylen)
{
  struct nbd_handle *h = nbd_create ();

  CHECK (h != NULL);
  CHECK (nbd_set_export_name (h, name) == 0);
  if (nbd_connect_unix (h, s->sock) == -1) {
    if (why)
      snprintf (why, whylen, "%s", nbd_get_error ());
    nbd_close (h);
    return NULL;
  }
  return h;
}

static void
raw_close (struct nbd_handle *h)
{
  nbd_shutdown (h, 0);
  nbd_close (h);
}

static struct nbd_handle *
open_data_ok (struct zn_client *c, uint64_t *errlog)
{
  struct nbd_handle *h = zn_client_open_data (c, errlog);

  if (h == NULL) {
    fprintf (stderr, "%s: zn_client_open_data: %s\n", fixture_target,
             zn_client_error (c));
    exit (EXIT_FAILURE);
  }
  return h;
}

static void
reset_all (struct zn_client *c)
{
  EXPECT_OK (c, zn_client_zone_mgmt (c, ZN_OP_RESET, 0,
                                     (uint64_t) NR_ZONES * ZS));
}

/* The data connections the device's queues count now. */
static uint32_t
connections (struct zn_client *c)
{
  struct zn_control_queue_info q;

  EXPECT_OK (c, zn_client_queue_info (c, &q));
  return q.device.connections;
}

/* Waits until the server has closed all but want data connections: both
 * servers detach a connection's error log before they stop counting it.
 * The bound only turns a server that never closes one into a failure
 * with the count, instead of a hang.
 */
static void
wait_connections (struct zn_client *c, uint32_t want)
{
  uint32_t have;

  for (unsigned ms = 0; (have = connections (c)) != want; ms++) {
    struct timespec tick = { 0, 1000 * 1000 };

    if (ms == 120 * 1000) {
      fprintf (stderr, "test-errlog: the server still counts %" PRIu32
               " connections, not %" PRIu32 ", after 120 s\n", have, want);
      exit (EXIT_FAILURE);
    }
    nanosleep (&tick, NULL);
  }
}

/* Two clients, each with an error log of its own, fail the same write
 * with different errnos at different times and ask only afterwards.  With
 * one device-wide log the first would get the second's errno.
 */
static void
test_exact (const struct spawned *s)
{
  struct zn_client *a = connect_ok (s->uri), *b = connect_ok (s->uri);
  struct nbd_handle *ha = zn_client_data_handle (a);
  struct nbd_handle *hb = zn_client_data_handle (b);
  struct nbd_handle *h1, *h2, *h3, *plain;
  uint64_t s1 = 0, s2 = 0, s3 = 0;
  int err;

  reset_all (a);
  /* A: zone 2 is EMPTY, the write is not at its write pointer: EIO. */
  write_fails (ha, R_OFF);
  /* Now the write is at the write pointer of a CLOSED zone while another
   * zone is explicitly open: ETOOMANYREFS.
   */
  write_ok (hb, 2 * ZB);
  EXPECT_OK (b, zn_client_zone_mgmt (b, ZN_OP_CLOSE, 2 * ZS, ZS));
  EXPECT_OK (b, zn_client_zone_mgmt (b, ZN_OP_OPEN, 3 * ZS, ZS));
  write_fails (hb, R_OFF);
  EXPECT_OWN (a, R_OFF, EIO);
  EXPECT_OWN (b, R_OFF, ETOOMANYREFS);
  EXPECT_OWN (a, R_OFF, EIO);
  /* The library's own calls ask the same way. */
  EXPECT_ERRNO (b, zn_client_pwrite (b, block, BLOCK, R_OFF), ETOOMANYREFS);
  /* Failures in error logs stay out of the device-wide log. */
  EXPECT_LOGGED (a, 0, R_OFF, 0);

  /* The same with connections of zn_client_open_data, the errnos the
   * other way round, each asked through either client's control channel.
   */
  h1 = open_data_ok (a, &s1);
  h2 = open_data_ok (b, &s2);
  CHECK (s1 != 0 && s2 != 0 && s1 != s2);
  CHECK_EQ (nbd_get_size (h1), (int64_t) NR_ZONES * ZB);
  write_fails (h1, R_OFF);                        /* ETOOMANYREFS */
  EXPECT_OK (a, zn_client_zone_mgmt (a, ZN_OP_CLOSE, 3 * ZS, ZS));
  write_ok (h2, 2 * ZB + BLOCK);                  /* zone 2 IMP_OPEN */
  write_fails (h2, R_OFF);                        /* EIO: behind the wp */
  EXPECT_LOGGED (a, s1, R_OFF, ETOOMANYREFS);
  EXPECT_LOGGED (a, s2, R_OFF, EIO);
  EXPECT_LOGGED (b, s1, R_OFF, ETOOMANYREFS);
  EXPECT_LOGGED (b, s2, R_OFF, EIO);
  /* Only the command type, offset and length that failed. */
  err = -1;
  EXPECT_OK (a, zn_client_errlog_errno (a, s1, ZN_NBD_CMD_READ, R_OFF,
                                        BLOCK, &err));
  CHECK_EQ (err, 0);
  EXPECT_LOGGED (a, s1, R_OFF + BLOCK, 0);
  err = -1;
  EXPECT_OK (a, zn_client_errlog_errno (a, s1, ZN_NBD_CMD_WRITE, R_OFF,
                                        2 * BLOCK, &err));
  CHECK_EQ (err, 0);
  /* The clients' own error logs are untouched. */
  EXPECT_OWN (a, R_OFF, EIO);
  EXPECT_OWN (b, R_OFF, ETOOMANYREFS);

  /* A plain connection logs to the device-wide log only, and an error log
   * that never failed has nothing, whatever plain connections do.
   */
  plain = raw_connect (s, "", NULL, 0);
  CHECK (plain != NULL);
  EXPECT_LOGGED (a, 0, R_OFF, 0);
  write_fails (plain, R_OFF);                     /* EIO */
  EXPECT_LOGGED (a, 0, R_OFF, EIO);
  EXPECT_LOGGED (b, 0, R_OFF, EIO);
  h3 = open_data_ok (a, &s3);
  EXPECT_LOGGED (a, s3, R_OFF, 0);
  EXPECT_LOGGED (a, s1, R_OFF, ETOOMANYREFS);
  EXPECT_OWN (b, R_OFF, ETOOMANYREFS);
  /* A later failure of the same write replaces the earlier errno. */
  write_fails (h1, R_OFF);                        /* now EIO */
  EXPECT_LOGGED (a, s1, R_OFF, EIO);

  /* A connection with an error log is the device: data written through it
   * reads back through the others.
   */
  {
    unsigned char in[BLOCK];

    memset (block, 0x5a, sizeof block);
    write_ok (h3, 2 * ZB + 2 * BLOCK);
    CHECK (nbd_pread (plain, in, sizeof in, 2 * ZB + 2 * BLOCK, 0) == 0);
    CHECK (memcmp (in, block, sizeof in) == 0);
    memset (block, 0, sizeof block);
  }

  raw_close (plain);
  raw_close (h1);
  raw_close (h2);
  raw_close (h3);
  zn_client_close (a);
  zn_client_close (b);
}

/* Export names of error logs: valid ones for every device, malformed ones
 * refused with a message naming the rule.
 */
static void
test_names (const struct spawned *s)
{
  static const char *const good[] = {
    "nullb0/session/0123456789abcdef", "nullb0/session/0123456789ABCDEF",
    "nullb1/session/ffffffffffffffff", "nullb1/session/0000000000000001",
  };
  static const char *const bad[] = {
    "nullb0/session/", "nullb0/session/xyz", "nullb0/session/0123456789abcdeg",
    "nullb0/session/0000000000000000", "nullb0/session/0123456789abcdef0",
    "nullb0/session/0123456789abcde", "nullb1/session/-123456789abcdef",
    "nullb0/session/0123456789abcdef/", "nullb0/session/ 123456789abcdef",
  };
  char why[1024], uri[400], log[16384];

  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    struct nbd_handle *h = raw_connect (s, good[i], why, sizeof why);

    if (h == NULL) {
      fprintf (stderr, "%s: '%s' refused: %s\n", fixture_target, good[i], why);
      exit (EXIT_FAILURE);
    }
    CHECK_EQ (nbd_get_size (h), (int64_t) NR_ZONES * ZB);
    CHECK_EQ (nbd_can_trim (h), 1);
    raw_close (h);
  }
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    struct nbd_handle *h = raw_connect (s, bad[i], why, sizeof why);

    if (h != NULL) {
      fprintf (stderr, "%s: '%s' accepted\n", fixture_target, bad[i]);
      exit (EXIT_FAILURE);
    }
  }
  /* No device 2, so no error logs of it. */
  CHECK (raw_connect (s, "nullb2/session/0123456789abcdef", NULL, 0) == NULL);
  /* nbdkit keeps the plugin's message in its log; zonednull-server sends
   * it in its reply, which libnbd 1.14 does not pass on, so ask nbdinfo
   * (libnbd's debug output has it).
   */
  if (!fixture_native) {
    spawn_log (s, log, sizeof log);
    if (strstr (log, "export 'nullb0/session/xyz': an error log's export is "
                "nullbN/session/ID, ID being 16 hex digits") == NULL) {
      fprintf (stderr, "%s: no message for the malformed export name in "
               "the log:\n%s\n", fixture_target, log);
      exit (EXIT_FAILURE);
    }
  }

  /* A client on nullb1 has an error log of nullb1. */
  server_uri (uri, sizeof uri, s, "nullb1");
  {
    struct zn_client *c = connect_ok (uri);
    uint64_t sid = 0;
    struct nbd_handle *h = open_data_ok (c, &sid);

    reset_all (c);
    write_fails (zn_client_data_handle (c), R_OFF);
    write_fails (h, R_OFF + BLOCK);
    EXPECT_OWN (c, R_OFF, EIO);
    EXPECT_LOGGED (c, sid, R_OFF + BLOCK, EIO);
    EXPECT_LOGGED (c, sid, R_OFF, 0);
    EXPECT_LOGGED (c, 0, R_OFF, 0);
    raw_close (h);
    zn_client_close (c);
  }
}

/* ERRLOG_ERRNO on the wire: exactly 48 bytes, argument and reserved
 * bytes zero, error log not 0; a malformed one fails the write with EINVAL
 * and leaves the result alone.
 */
static void
test_wire (const struct spawned *s)
{
  struct nbd_handle *ctl = raw_connect (s, "nullb0/control", NULL, 0);
  unsigned char buf[ZN_COMMAND_SIZE + ZN_ERRLOG_ERRNO_SIZE + 8];
  unsigned char page[ZN_CONTROL_HEADER_SIZE];
  struct zn_control_info info;
  uint64_t seq;

  CHECK (ctl != NULL);
  CHECK (nbd_pread (ctl, page, sizeof page, 0, 0) == 0);
  CHECK_EQ (zn_control_decode_header (page, &info), 0);
  seq = info.result_seq;

  /* Well formed: an unknown error log has nothing. */
  zn_control_encode_errlog_errno (buf, 0x77, ZN_NBD_CMD_WRITE, R_OFF, BLOCK);
  CHECK (nbd_pwrite (ctl, buf, ZN_COMMAND_SIZE + ZN_ERRLOG_ERRNO_SIZE, 0, 0)
         == 0);
  CHECK (nbd_pread (ctl, page, sizeof page, 0, 0) == 0);
  CHECK_EQ (zn_control_decode_header (page, &info), 0);
  CHECK_EQ (info.result_seq, seq + 1);
  CHECK_EQ (info.result_op, ZN_CMD_ERRLOG_ERRNO);
  CHECK_EQ (info.result_errno, 0);
  CHECK_EQ (info.result_sector, R_OFF);
  CHECK_EQ (info.result_nr_sectors, BLOCK);

  /* The command without its payload, or with more. */
  CHECK (nbd_pwrite (ctl, buf, ZN_COMMAND_SIZE, 0, 0) == -1);
  CHECK_EQ (nbd_get_errno (), EINVAL);
  memset (buf + ZN_COMMAND_SIZE + ZN_ERRLOG_ERRNO_SIZE, 0, 8);
  CHECK (nbd_pwrite (ctl, buf, sizeof buf, 0, 0) == -1);
  CHECK_EQ (nbd_get_errno (), EINVAL);
  /* Error log 0, a non-zero argument, non-zero reserved bytes. */
  zn_control_encode_errlog_errno (buf, 0, ZN_NBD_CMD_WRITE, R_OFF, BLOCK);
  CHECK (nbd_pwrite (ctl, buf, ZN_COMMAND_SIZE + ZN_ERRLOG_ERRNO_SIZE, 0, 0)
         == -1);
  CHECK_EQ (nbd_get_errno (), EINVAL);
  zn_control_encode_errlog_errno (buf, 0x77, ZN_NBD_CMD_WRITE, R_OFF, BLOCK);
  buf[31] = 1;
  CHECK (nbd_pwrite (ctl, buf, ZN_COMMAND_SIZE + ZN_ERRLOG_ERRNO_SIZE, 0, 0)
         == -1);
  CHECK_EQ (nbd_get_errno (), EINVAL);
  zn_control_encode_errlog_errno (buf, 0x77, ZN_NBD_CMD_WRITE, R_OFF, BLOCK);
  buf[ZN_COMMAND_SIZE + 15] = 1;
  CHECK (nbd_pwrite (ctl, buf, ZN_COMMAND_SIZE + ZN_ERRLOG_ERRNO_SIZE, 0, 0)
         == -1);
  CHECK_EQ (nbd_get_errno (), EINVAL);
  /* Not at offset 0. */
  zn_control_encode_errlog_errno (buf, 0x77, ZN_NBD_CMD_WRITE, R_OFF, BLOCK);
  CHECK (nbd_pwrite (ctl, buf, ZN_COMMAND_SIZE + ZN_ERRLOG_ERRNO_SIZE, 512,
                     0) == -1);
  CHECK_EQ (nbd_get_errno (), EINVAL);
  CHECK (nbd_pread (ctl, page, sizeof page, 0, 0) == 0);
  CHECK_EQ (zn_control_decode_header (page, &info), 0);
  CHECK_EQ (info.result_seq, seq + 1);
  raw_close (ctl);
}

/* The bounds: an error log keeps its last ZN_CONTROL_ERRLOG_SIZE failures;
 * a device keeps every attached error log and the ZN_CONTROL_ERRLOGS most
 * recently detached ones, so error logs that come and go cannot grow the
 * server without limit.
 */
static void
test_bounds (const struct spawned *s)
{
  struct zn_client *c = connect_ok (s->uri);
  struct nbd_handle *h, *live;
  uint64_t sid = 0, lid = 0;
  const uint64_t zone4 = 4 * ZB, zone5 = 5 * ZB, zone6 = 6 * ZB;
  const uint64_t first = UINT64_C(0x5e55000000000000);
  uint32_t base;
  char name[64];

  reset_all (c);
  /* One error log, ZN_CONTROL_ERRLOG_SIZE + 1 failures (all EIO: zone 4 is
   * EMPTY and none is at its write pointer): the first is forgotten.
   */
  h = open_data_ok (c, &sid);
  for (unsigned k = 1; k <= ZN_CONTROL_ERRLOG_SIZE + 1; k++)
    write_fails (h, zone4 + k * BLOCK);
  EXPECT_LOGGED (c, sid, zone4 + BLOCK, 0);
  EXPECT_LOGGED (c, sid, zone4 + 2 * BLOCK, EIO);
  EXPECT_LOGGED (c, sid, zone4 + (ZN_CONTROL_ERRLOG_SIZE + 1) * BLOCK, EIO);
  raw_close (h);

  /* A live error log is never dropped, however many come and go after it. */
  live = open_data_ok (c, &lid);
  write_fails (live, zone5 + BLOCK);
  base = connections (c);
  for (unsigned i = 0; i <= ZN_CONTROL_ERRLOGS; i++) {
    CHECK (zn_control_errlog_name (name, sizeof name, "nullb0", first + i)
           > 0);
    h = raw_connect (s, name, NULL, 0);
    CHECK (h != NULL);
    write_fails (h, zone6 + BLOCK);
    raw_close (h);
    /* Detached in this order, so the oldest is the first. */
    wait_connections (c, base);
  }
  EXPECT_LOGGED (c, first, zone6 + BLOCK, 0);
  EXPECT_LOGGED (c, first + 1, zone6 + BLOCK, EIO);
  EXPECT_LOGGED (c, first + ZN_CONTROL_ERRLOGS, zone6 + BLOCK, EIO);
  EXPECT_LOGGED (c, lid, zone5 + BLOCK, EIO);
  /* An error log found again is the same, with its failures. */
  CHECK (zn_control_errlog_name (name, sizeof name, "", first + 1) > 0);
  h = raw_connect (s, name, NULL, 0);
  CHECK (h != NULL);
  write_fails (h, zone6 + 2 * BLOCK);
  raw_close (h);
  wait_connections (c, base);
  EXPECT_LOGGED (c, first + 1, zone6 + BLOCK, EIO);
  EXPECT_LOGGED (c, first + 1, zone6 + 2 * BLOCK, EIO);
  /* Found again, first + 1 is the most recently detached; the oldest
   * is first + 2, dropped when the live error log detaches, which then is
   * the most recent itself: the next error log to come and go drops
   * first + 3, not it.
   */
  raw_close (live);
  wait_connections (c, base - 1);
  EXPECT_LOGGED (c, first + 2, zone6 + BLOCK, 0);
  EXPECT_LOGGED (c, first + 3, zone6 + BLOCK, EIO);
  EXPECT_LOGGED (c, lid, zone5 + BLOCK, EIO);
  CHECK (zn_control_errlog_name (name, sizeof name, "nullb0", first) > 0);
  h = raw_connect (s, name, NULL, 0);
  CHECK (h != NULL);
  raw_close (h);
  wait_connections (c, base - 1);
  EXPECT_LOGGED (c, first + 3, zone6 + BLOCK, 0);
  EXPECT_LOGGED (c, first + 4, zone6 + BLOCK, EIO);
  EXPECT_LOGGED (c, first + 1, zone6 + 2 * BLOCK, EIO);
  EXPECT_LOGGED (c, lid, zone5 + BLOCK, EIO);
  zn_client_close (c);
}

/* A server that refuses the export names of error logs (as one predating
 * them does): the client falls back to the plain name and the device-wide
 * log.
 */
static void
test_no_errlogs (void)
{
  static const char *const strict[] = {
    "exportname-strict=true", "exportname=nullb0",
    "exportname=nullb0/control", NULL,
  };
  static const char *const filter[] = { "--filter=exportname", NULL };
  struct spawned s;
  struct zn_client *c;
  struct nbd_handle *h;
  uint64_t sid = 1;
  char uri[400];

  server_start (&s, "old", default_device,
                &(struct server_opts) { .nbdkit = filter, .more = strict });
  CHECK (raw_connect (&s, "nullb0/session/0123456789abcdef", NULL, 0) == NULL);
  server_uri (uri, sizeof uri, &s, "nullb0");
  c = connect_ok (uri);
  reset_all (c);
  EXPECT_ERRNO (c, zn_client_pwrite (c, block, BLOCK, R_OFF), EIO);
  EXPECT_OK (c, zn_client_pwrite (c, block, BLOCK, 2 * ZB));
  EXPECT_OK (c, zn_client_zone_mgmt (c, ZN_OP_CLOSE, 2 * ZS, ZS));
  EXPECT_OK (c, zn_client_zone_mgmt (c, ZN_OP_OPEN, 3 * ZS, ZS));
  EXPECT_ERRNO (c, zn_client_pwrite (c, block, BLOCK, R_OFF), ETOOMANYREFS);
  h = open_data_ok (c, &sid);
  CHECK_EQ (sid, 0);
  EXPECT_OK (c, zn_client_zone_mgmt (c, ZN_OP_CLOSE, 3 * ZS, ZS));
  write_fails (h, R_OFF + BLOCK);
  EXPECT_LOGGED (c, 0, R_OFF + BLOCK, EIO);
  EXPECT_LOGGED (c, sid, R_OFF + BLOCK, EIO);
  EXPECT_OWN (c, R_OFF + BLOCK, EIO);
  raw_close (h);
  zn_client_close (c);
  server_stop (&s);
}

static void
run_all (void)
{
  struct spawned s;

  server_start (&s, "dev", default_device, NULL);
  test_exact (&s);
  test_names (&s);
  test_wire (&s);
  test_bounds (&s);
  server_stop (&s);
  if (!fixture_native)
    test_no_errlogs ();
}

int
main (void)
{
  fixture_init (__FILE__, "errlog", true);
  fixture_use (false);
  run_all ();
  fixture_use (true);
  run_all ();
  printf ("test-errlog: all checks passed on both servers\n");
  return EXIT_SUCCESS;
}
