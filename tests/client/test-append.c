/* SPDX-License-Identifier: BSD-3-Clause */
/* Zone append over NBD (ZN_CMD_APPEND), against both servers: nbdkit
 * with the plugin, then zonednull-server.  The client library's landed
 * sectors, the data read back through the data export, each refusal's
 * exact errno, the wire rules of the control export, and appenders on
 * their own connections racing to fill one zone, whose pieces must tile
 * it and read back with their checksums.  Outcomes only, never speed.
 *
 * Device: 8 zones of 1 MiB (2048 sectors), zone 0 conventional, at most 2
 * open and 3 active zones; max_sectors 255, so max_append_sectors 255.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libnbd.h>

#include "../common/check.h"
#include "wire/control-wire.h"
#include "../common/server-fixture.h"
#include "zonednull/client.h"

#define ZS 2048                         /* zone size, sectors */
#define NR_ZONES 8
#define MAX_APPEND 255                  /* the device's max_append_sectors */
#define APPENDERS 4
#define MAX_PIECES ZS                   /* one sector each at worst */

static const char *const default_device[] = {
  "size=8", "zone_size=1", "zone_nr_conv=1", "zone_max_open=2",
  "zone_max_active=3", "memory_backed=1", NULL,
};

#define expect_zone(c, idx, cond, wp) expect_zone_in (c, ZS, idx, cond, wp)

/* FNV-1a over a piece: a checksum kept apart from the data it checks. */
static uint64_t
checksum (const unsigned char *p, size_t len)
{
  uint64_t h = UINT64_C(0xcbf29ce484222325);

  for (size_t i = 0; i < len; i++)
    h = (h ^ p[i]) * UINT64_C(0x100000001b3);
  return h;
}

/* A piece's data: every sector starts with its appender, sequence number
 * and index in the piece, and the rest is a stream seeded by them, so a
 * piece read back at the wrong place or mixed with another fails both
 * the header check and the checksum.
 */
static void
fill_piece (unsigned char *buf, unsigned id, unsigned seq, uint64_t sectors)
{
  uint64_t x = (uint64_t) id << 32 | seq;

  for (uint64_t s = 0; s < sectors; s++) {
    unsigned char *p = buf + s * 512;

    memcpy (p, "ZNAP", 4);
    memcpy (p + 4, &id, 4);
    memcpy (p + 8, &seq, 4);
    memcpy (p + 12, &s, 8);
    for (size_t i = 20; i < 512; i++) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      p[i] = (unsigned char) x;
    }
  }
}

static unsigned char *
piece (unsigned id, unsigned seq, uint64_t sectors)
{
  unsigned char *buf = malloc (sectors ? sectors * 512 : 1);

  CHECK (buf != NULL);
  fill_piece (buf, id, seq, sectors);
  return buf;
}

/* Appends sectors of piece (id, seq) at zone idx; returns 0 or -errno
 * and the landed sector in *at.
 */
static int
append_piece (struct zn_client *c, unsigned idx, unsigned id, unsigned seq,
              uint64_t sectors, uint64_t *at)
{
  unsigned char *buf = piece (id, seq, sectors);
  int r = zn_client_append (c, buf, (uint64_t) idx * ZS, sectors, at);

  free (buf);
  return r;
}

static void
expect_data (struct zn_client *c, uint64_t sector, unsigned id, unsigned seq,
             uint64_t sectors)
{
  unsigned char *want = piece (id, seq, sectors);
  unsigned char *got = malloc (sectors * 512);

  CHECK (got != NULL);
  EXPECT_OK (c, zn_client_pread (c, got, sectors * 512, sector * 512));
  if (memcmp (got, want, sectors * 512) != 0) {
    fprintf (stderr, "%s: sectors %llu+%llu do not hold piece %u/%u\n",
             fixture_target, (unsigned long long) sector,
             (unsigned long long) sectors, id, seq);
    exit (EXIT_FAILURE);
  }
  free (got);
  free (want);
}

/* Landed sectors and data, and every refusal with its exact errno. */
static void
test_append (struct zn_client *c)
{
  struct zn_control_info info;
  uint64_t at = 0;

  EXPECT_OK (c, zn_client_info (c, &info));
  CHECK_EQ (info.max_append_sectors, MAX_APPEND);

  EXPECT_OK (c, append_piece (c, 1, 0, 1, 8, &at));
  CHECK_EQ (at, ZS);
  EXPECT_OK (c, append_piece (c, 1, 0, 2, 16, &at));
  CHECK_EQ (at, ZS + 8);
  expect_zone (c, 1, ZN_COND_IMP_OPEN, ZS + 24);
  /* The largest append there is, and a written pointer is optional. */
  EXPECT_OK (c, append_piece (c, 1, 0, 3, MAX_APPEND, NULL));
  expect_zone (c, 1, ZN_COND_IMP_OPEN, ZS + 24 + MAX_APPEND);
  expect_data (c, ZS, 0, 1, 8);
  expect_data (c, ZS + 8, 0, 2, 16);
  expect_data (c, ZS + 24, 0, 3, MAX_APPEND);
  /* An ordinary write at the wp follows the appended data. */
  {
    unsigned char buf[4096];

    fill_piece (buf, 0, 4, 8);
    EXPECT_OK (c, zn_client_pwrite (c, buf, sizeof buf,
                                    (uint64_t) (ZS + 24 + MAX_APPEND) * 512));
    EXPECT_OK (c, append_piece (c, 1, 0, 5, 1, &at));
    CHECK_EQ (at, ZS + 24 + MAX_APPEND + 8);
  }
  EXPECT_OK (c, zn_client_zone_mgmt (c, ZN_OP_RESET, ZS, ZS));

  /* The block layer's refusals: a conventional zone, a sector that is
   * not a zone start, an append it would have to split.
   */
  EXPECT_ERRNO (c, append_piece (c, 0, 0, 6, 8, &at), EIO);
  {
    unsigned char buf[512] = { 0 };

    EXPECT_ERRNO (c, zn_client_append (c, buf, ZS + 8, 1, &at), EIO);
    EXPECT_ERRNO (c, zn_client_append (c, buf, 8, 1, &at), EIO);
    EXPECT_ERRNO (c, zn_client_append (c, buf, (uint64_t) NR_ZONES * ZS, 1,
                                       &at), EINVAL);
    EXPECT_ERRNO (c, zn_client_append (c, buf, ZS, 0, &at), EINVAL);
  }
  EXPECT_ERRNO (c, append_piece (c, 1, 0, 7, MAX_APPEND + 1, &at), EIO);
  CHECK (strstr (zn_client_error (c), "max_append_sectors") != NULL);
  expect_zone (c, 1, ZN_COND_EMPTY, ZS);

  /* A full zone, and data past the capacity of a nearly full one. */
  EXPECT_OK (c, zn_client_zone_mgmt (c, ZN_OP_FINISH, 2 * ZS, ZS));
  EXPECT_ERRNO (c, append_piece (c, 2, 0, 8, 1, &at), EIO);
  for (unsigned i = 0; i < ZS / 128; i++) {
    EXPECT_OK (c, append_piece (c, 1, 1, i, i + 1 < ZS / 128 ? 128 : 120, &at));
    CHECK_EQ (at, ZS + (uint64_t) i * 128);
  }
  expect_zone (c, 1, ZN_COND_IMP_OPEN, 2 * ZS - 8);
  EXPECT_ERRNO (c, append_piece (c, 1, 1, 99, 16, &at), EIO);
  expect_zone (c, 1, ZN_COND_IMP_OPEN, 2 * ZS - 8);
  EXPECT_OK (c, append_piece (c, 1, 1, 100, 8, &at));
  CHECK_EQ (at, 2 * ZS - 8);
  expect_zone (c, 1, ZN_COND_FULL, 2 * ZS);
  EXPECT_ERRNO (c, append_piece (c, 1, 1, 101, 1, &at), EIO);
  expect_data (c, ZS + 128, 1, 1, 128);
  expect_data (c, 2 * ZS - 8, 1, 100, 8);
  EXPECT_OK (c, zn_client_zone_mgmt (c, ZN_OP_RESET, 0, NR_ZONES * ZS));

  /* READONLY and OFFLINE zones. */
  EXPECT_OK (c, zn_client_set_readonly (c, 5 * ZS));
  EXPECT_ERRNO (c, append_piece (c, 5, 0, 9, 1, &at), EIO);
  EXPECT_OK (c, zn_client_set_readonly (c, 5 * ZS));
  EXPECT_OK (c, zn_client_set_offline (c, 5 * ZS));
  EXPECT_ERRNO (c, append_piece (c, 5, 0, 10, 1, &at), EIO);
  EXPECT_OK (c, zn_client_set_offline (c, 5 * ZS));

  /* The limits: two explicitly open zones leave no open slot. */
  EXPECT_OK (c, zn_client_zone_mgmt (c, ZN_OP_OPEN, 3 * ZS, ZS));
  EXPECT_OK (c, zn_client_zone_mgmt (c, ZN_OP_OPEN, 4 * ZS, ZS));
  EXPECT_ERRNO (c, append_piece (c, 5, 0, 11, 8, &at), ETOOMANYREFS);
  expect_zone (c, 5, ZN_COND_EMPTY, 5 * ZS);
  /* Appending to an open zone needs no slot. */
  EXPECT_OK (c, append_piece (c, 3, 0, 12, 8, &at));
  CHECK_EQ (at, 3 * ZS);
  expect_zone (c, 3, ZN_COND_EXP_OPEN, 3 * ZS + 8);
  /* Zone 3 closed: 1 open, 2 active; a third active zone is allowed,
   * then a fourth is not.
   */
  EXPECT_OK (c, zn_client_zone_mgmt (c, ZN_OP_CLOSE, 3 * ZS, ZS));
  EXPECT_OK (c, append_piece (c, 5, 0, 13, 8, &at));
  CHECK_EQ (at, 5 * ZS);
  expect_zone (c, 5, ZN_COND_IMP_OPEN, 5 * ZS + 8);
  EXPECT_ERRNO (c, append_piece (c, 6, 0, 14, 8, &at), EOVERFLOW);
  expect_zone (c, 6, ZN_COND_EMPTY, 6 * ZS);
  /* And the closed zone cannot reopen: every active slot is taken and
   * null_blk will not close the implicitly open one then.
   */
  EXPECT_ERRNO (c, append_piece (c, 3, 0, 15, 8, &at), ETOOMANYREFS);
  expect_zone (c, 3, ZN_COND_CLOSED, 3 * ZS + 8);
  expect_data (c, 3 * ZS, 0, 12, 8);
  expect_data (c, 5 * ZS, 0, 13, 8);
  EXPECT_OK (c, zn_client_zone_mgmt (c, ZN_OP_RESET, 0, NR_ZONES * ZS));

  /* FUA appends land like the others. */
  {
    unsigned char *buf = piece (0, 16, 8);

    EXPECT_OK (c, zn_client_append_fua (c, buf, 7 * ZS, 8, &at));
    CHECK_EQ (at, 7 * ZS);
    free (buf);
    expect_data (c, 7 * ZS, 0, 16, 8);
  }
  EXPECT_OK (c, zn_client_zone_mgmt (c, ZN_OP_RESET, 0, NR_ZONES * ZS));
}

/* The control export's rules, spoken raw through libnbd. */
static struct zn_control_info
raw_header (struct nbd_handle *h)
{
  unsigned char page[ZN_CONTROL_HEADER_SIZE];
  struct zn_control_info info;

  CHECK_EQ (nbd_pread (h, page, sizeof page, 0, 0), 0);
  CHECK_EQ (zn_control_decode_header (page, &info), 0);
  return info;
}

static void
test_wire (const struct spawned *s)
{
  /* The largest append: the command, then 255 sectors. */
  size_t big = ZN_COMMAND_SIZE + MAX_APPEND * 512;
  struct nbd_handle *h = nbd_connect_ok (s, "nullb0/control");
  unsigned char *buf = calloc (1, big + 512);
  struct zn_control_info info;
  int64_t size = nbd_get_size (h);
  uint64_t seq;

  int64_t end = (int64_t) ((big + 4095) / 4096 * 4096);

  CHECK (buf != NULL);
  info = raw_header (h);
  /* Room for the largest append, rounded to pages, zeros past the zones;
   * then the fault table of a server that takes fault rules.
   */
  CHECK_EQ (size, end + (info.flags & ZN_CONTROL_F_FAULTS
                         ? ZN_CONTROL_FAULT_RULES * ZN_CONTROL_FAULT_SIZE
                         : 0));
  CHECK_EQ (nbd_pread (h, buf, (size_t) end - 4096 - NR_ZONES * 64,
                       4096 + NR_ZONES * 64, 0), 0);
  for (int64_t i = 0; i < end - 4096 - NR_ZONES * 64; i++)
    CHECK_EQ (buf[i], 0);
  CHECK_EQ (info.max_append_sectors, MAX_APPEND);
  seq = info.result_seq;

  /* One write carries the command and its data. */
  zn_control_encode_command (buf, ZN_CMD_APPEND, ZS, MAX_APPEND, 0);
  fill_piece (buf + ZN_COMMAND_SIZE, 2, 0, MAX_APPEND);
  CHECK_EQ (nbd_pwrite (h, buf, big, 0, 0), 0);
  info = raw_header (h);
  CHECK_EQ (info.result_seq, seq + 1);
  CHECK_EQ (info.result_op, ZN_CMD_APPEND);
  CHECK_EQ (info.result_errno, 0);
  CHECK_EQ (info.result_sector, ZS);
  CHECK_EQ (info.result_nr_sectors, MAX_APPEND);
  /* With FUA (bit 0 of the argument). */
  zn_control_encode_command (buf, ZN_CMD_APPEND, ZS, 1, ZN_APPEND_F_FUA);
  CHECK_EQ (nbd_pwrite (h, buf, ZN_COMMAND_SIZE + 512, 0, 0), 0);
  info = raw_header (h);
  CHECK_EQ (info.result_errno, 0);
  CHECK_EQ (info.result_sector, ZS + MAX_APPEND);
  /* A refusal by the device: the write succeeds, the errno is the
   * result's, and the sector is the command's.
   */
  zn_control_encode_command (buf, ZN_CMD_APPEND, 0, 1, 0);
  CHECK_EQ (nbd_pwrite (h, buf, ZN_COMMAND_SIZE + 512, 0, 0), 0);
  info = raw_header (h);
  CHECK_EQ (info.result_seq, seq + 3);
  CHECK_EQ (info.result_errno, EIO);
  CHECK_EQ (info.result_sector, 0);

  /* Malformed: the length does not match nr_sectors (short and long), an
   * unknown argument bit, data after another command, the write not at
   * offset 0.  Each fails the write with EINVAL and executes nothing.
   */
  zn_control_encode_command (buf, ZN_CMD_APPEND, ZS, 2, 0);
  CHECK_EQ (nbd_pwrite (h, buf, ZN_COMMAND_SIZE + 512, 0, 0), -1);
  CHECK_EQ (nbd_get_errno (), EINVAL);
  CHECK_EQ (nbd_pwrite (h, buf, ZN_COMMAND_SIZE + 3 * 512, 0, 0), -1);
  CHECK_EQ (nbd_get_errno (), EINVAL);
  CHECK_EQ (nbd_pwrite (h, buf, ZN_COMMAND_SIZE + 2 * 512 + 1, 0, 0), -1);
  CHECK_EQ (nbd_get_errno (), EINVAL);
  zn_control_encode_command (buf, ZN_CMD_APPEND, ZS, 1, 2);
  CHECK_EQ (nbd_pwrite (h, buf, ZN_COMMAND_SIZE + 512, 0, 0), -1);
  CHECK_EQ (nbd_get_errno (), EINVAL);
  zn_control_encode_command (buf, ZN_CMD_RESET, ZS, ZS, 0);
  CHECK_EQ (nbd_pwrite (h, buf, ZN_COMMAND_SIZE + 512, 0, 0), -1);
  CHECK_EQ (nbd_get_errno (), EINVAL);
  zn_control_encode_command (buf, ZN_CMD_APPEND, ZS, 1, 0);
  CHECK_EQ (nbd_pwrite (h, buf, ZN_COMMAND_SIZE + 512, 512, 0), -1);
  CHECK_EQ (nbd_get_errno (), EINVAL);
  /* One sector more than the largest append: past the end of the
   * export, NBD's ENOSPC or the server's EINVAL; inside it (a fault table
   * follows), an append the device refuses with EIO.
   */
  zn_control_encode_command (buf, ZN_CMD_APPEND, ZS, MAX_APPEND + 1, 0);
  if (nbd_pwrite (h, buf, big + 512, 0, 0) == -1) {
    CHECK (nbd_get_errno () == ENOSPC || nbd_get_errno () == EINVAL);
    info = raw_header (h);
    CHECK_EQ (info.result_seq, seq + 3);
  }
  else {
    CHECK (info.flags & ZN_CONTROL_F_FAULTS);
    info = raw_header (h);
    CHECK_EQ (info.result_seq, seq + 4);
    CHECK_EQ (info.result_errno, EIO);
  }

  CHECK_EQ (nbd_shutdown (h, 0), 0);
  nbd_close (h);
  free (buf);

  /* Nothing but the two good appends reached the zone. */
  {
    struct zn_client *c = connect_ok (s->uri);

    expect_zone (c, 1, ZN_COND_IMP_OPEN, ZS + MAX_APPEND + 1);
    expect_data (c, ZS, 2, 0, MAX_APPEND);
    EXPECT_OK (c, zn_client_zone_mgmt (c, ZN_OP_RESET, 0, NR_ZONES * ZS));
    zn_client_close (c);
  }
}

/* ---- appenders racing on one zone ------------------------------------ */

struct landed {
  uint64_t sector;
  uint64_t sectors;
  unsigned id, seq;
  uint64_t sum;                         /* checksum of the data sent */
};
_Static_assert (offsetof (struct landed, sector) == 0,
                "by_first_sector sorts by the first member");

struct appender {
  const char *uri;
  unsigned id;
  unsigned n;                           /* pieces landed */
  struct landed pieces[MAX_PIECES];
  int failures;
  char error[1100];
};

/* Piece lengths from 1 to 64 sectors, drawn from the appender and its
 * sequence number so that every run sends the same data.
 */
static uint64_t
piece_sectors (unsigned id, unsigned seq)
{
  uint64_t x = ((uint64_t) id * 2654435761u) ^ ((uint64_t) seq * 40503u);

  return 1 + (x ^ (x >> 7)) % 64;
}

static void *
appender (void *arg)
{
  struct appender *a = arg;
  char err[1024];
  struct zn_client *c = zn_client_connect (a->uri, err, sizeof err);
  unsigned seq = 0;

  if (c == NULL) {
    snprintf (a->error, sizeof a->error, "connect: %s", err);
    a->failures++;
    return NULL;
  }
  /* Until the zone is full: a piece longer than the room left fails
   * with EIO, and is sent again no longer than that room.
   */
  for (uint64_t want = piece_sectors (a->id, seq);;) {
    unsigned char *buf = piece (a->id, seq, want);
    uint64_t at = 0;
    int r = (a->id % 2 ? zn_client_append_fua : zn_client_append)
      (c, buf, ZS, want, &at);

    if (r == 0) {
      CHECK (a->n < MAX_PIECES);
      a->pieces[a->n++] = (struct landed) {
        .sector = at, .sectors = want, .id = a->id, .seq = seq,
        .sum = checksum (buf, want * 512),
      };
      free (buf);
      want = piece_sectors (a->id, ++seq);
      continue;
    }
    free (buf);
    if (r != -EIO) {
      snprintf (a->error, sizeof a->error, "append: %s: %s",
                zn_errno_name (-r), zn_client_error (c));
      a->failures++;
      break;
    }
    {
      struct zn_zone z;
      uint64_t room;

      if (zn_client_report (c, ZS, &z, 1) != 1) {
        snprintf (a->error, sizeof a->error, "report: %s",
                  zn_client_error (c));
        a->failures++;
        break;
      }
      if (z.cond == ZN_COND_FULL)
        break;
      room = z.start + z.capacity - z.wp;
      if (room >= want) {
        /* Room enough yet EIO: the append was refused for no reason. */
        snprintf (a->error, sizeof a->error, "append of %llu sectors "
                  "failed with EIO with %llu sectors free",
                  (unsigned long long) want, (unsigned long long) room);
        a->failures++;
        break;
      }
      want = room;
    }
  }
  zn_client_close (c);
  return NULL;
}

static void
test_race (const struct spawned *s)
{
  struct appender *a = calloc (APPENDERS, sizeof *a);
  struct landed *all = calloc (MAX_PIECES * APPENDERS, sizeof *all);
  pthread_t t[APPENDERS];
  unsigned char *zone_data = malloc (ZS * 512);
  struct zn_client *c;
  unsigned n = 0;
  uint64_t next = ZS;

  CHECK (a != NULL && all != NULL && zone_data != NULL);
  for (unsigned i = 0; i < APPENDERS; i++) {
    a[i].uri = s->uri;
    a[i].id = 11 + i;
    CHECK (pthread_create (&t[i], NULL, appender, &a[i]) == 0);
  }
  for (unsigned i = 0; i < APPENDERS; i++)
    CHECK (pthread_join (t[i], NULL) == 0);
  for (unsigned i = 0; i < APPENDERS; i++) {
    if (a[i].failures) {
      fprintf (stderr, "%s: appender %u: %s\n", fixture_target, a[i].id,
               a[i].error);
      exit (EXIT_FAILURE);
    }
    memcpy (all + n, a[i].pieces, a[i].n * sizeof *all);
    n += a[i].n;
  }

  /* The pieces tile the zone: no overlap, no gap, up to its capacity. */
  qsort (all, n, sizeof *all, by_first_sector);
  for (unsigned i = 0; i < n; i++) {
    if (all[i].sector != next) {
      fprintf (stderr, "%s: piece %u/%u landed at %llu, expected %llu\n",
               fixture_target, all[i].id, all[i].seq,
               (unsigned long long) all[i].sector,
               (unsigned long long) next);
      exit (EXIT_FAILURE);
    }
    next += all[i].sectors;
  }
  CHECK_EQ (next, 2 * ZS);

  /* Each piece reads back at its sector with its checksum. */
  c = connect_ok (s->uri);
  expect_zone (c, 1, ZN_COND_FULL, 2 * ZS);
  EXPECT_OK (c, zn_client_pread (c, zone_data, ZS * 512, (uint64_t) ZS * 512));
  for (unsigned i = 0; i < n; i++) {
    const unsigned char *p = zone_data + (all[i].sector - ZS) * 512;
    unsigned id, seq;

    memcpy (&id, p + 4, 4);
    memcpy (&seq, p + 8, 4);
    if (id != all[i].id || seq != all[i].seq
        || checksum (p, all[i].sectors * 512) != all[i].sum) {
      fprintf (stderr, "%s: sectors %llu+%llu hold piece %u/%u, expected "
               "%u/%u with its checksum\n", fixture_target,
               (unsigned long long) all[i].sector,
               (unsigned long long) all[i].sectors, id, seq, all[i].id,
               all[i].seq);
      exit (EXIT_FAILURE);
    }
  }
  EXPECT_OK (c, zn_client_zone_mgmt (c, ZN_OP_RESET, 0, NR_ZONES * ZS));
  zn_client_close (c);
  free (zone_data);
  free (all);
  free (a);
}

static void
test_readonly_server (void)
{
  struct spawned s;
  struct zn_client *c;
  unsigned char buf[512] = { 0 };
  uint64_t at = 0;

  server_start (&s, "ro", default_device,
                &(struct server_opts) { .readonly = true });
  c = connect_ok (s.uri);
  EXPECT_ERRNO (c, zn_client_append (c, buf, ZS, 1, &at), EPERM);
  CHECK (strstr (zn_client_error (c), "read-only") != NULL);
  expect_zone (c, 1, ZN_COND_EMPTY, ZS);
  zn_client_close (c);
  server_stop (&s);
}

/* With 4096-byte blocks, an append of part of a block is the block
 * layer's EINVAL.
 */
static void
test_block_size (void)
{
  static const char *const args[] = {
    "size=8", "zone_size=1", "blocksize=4096", "memory_backed=1", NULL,
  };
  struct spawned s;
  struct zn_client *c;
  unsigned char *buf = piece (3, 0, 16);
  uint64_t at = 0;

  server_start (&s, "bs4k", args, NULL);
  c = connect_ok (s.uri);
  EXPECT_ERRNO (c, zn_client_append (c, buf, ZS, 1, &at), EINVAL);
  EXPECT_ERRNO (c, zn_client_append (c, buf, ZS, 12, &at), EINVAL);
  EXPECT_OK (c, zn_client_append (c, buf, ZS, 16, &at));
  CHECK_EQ (at, ZS);
  expect_data (c, ZS, 3, 0, 16);
  zn_client_close (c);
  server_stop (&s);
  free (buf);
}

static void
run_all (void)
{
  struct spawned s;
  struct zn_client *c;

  server_start (&s, "dev", default_device, NULL);
  c = connect_ok (s.uri);
  test_append (c);
  zn_client_close (c);
  test_wire (&s);
  test_race (&s);
  /* A second race on the same server: the zone was reset in between. */
  test_race (&s);
  server_stop (&s);
  test_readonly_server ();
  test_block_size ();
}

int
main (void)
{
  fixture_init (__FILE__, "append", true);
  fixture_use (false);
  run_all ();
  fixture_use (true);
  run_all ();
  printf ("test-append: all checks passed on both servers\n");
  return EXIT_SUCCESS;
}
