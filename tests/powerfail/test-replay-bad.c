/* SPDX-License-Identifier: BSD-3-Clause */
/* Bad logs: each is refused with a message that names the entry, its
 * byte offset and the rule; no state is written from them.
 */
#include "powerfail.h"
#include "powerfail/replay.h"

static char path[512];

static struct wg g;

static void
start (uint32_t bs, const char *extra)
{
  wg_open (&g, path, bs, 8, 1, 1, 2, extra);
}

/* Closes the log and expects want in the error of opening it and
 * replaying it to its end.
 */
static void
expect (const char *name, const char *want)
{
  struct zn_replay_plan p;
  struct zn_wlog_reader *log;
  char err[1024] = "";
  int r = -1;

  if (g.fp)
    wg_close (&g);
  log = zn_wlog_read_open (path, err, sizeof err);
  if (log) {
    r = zn_replay_plan (log, NULL, &p, err, sizeof err);
    if (r == 0)
      zn_replay_plan_free (&p);
    zn_wlog_read_close (log);
  }
  printf ("%-22s %s\n", name, err);
  if (r == 0 || strstr (err, want) == NULL) {
    fprintf (stderr, "%s: expected an error with '%s', got '%s'\n", name,
             want, r == 0 ? "success" : err);
    exit (EXIT_FAILURE);
  }
  wg_free (&g);
}

/* Some good entries, so that the bad one is not entry 1. */
static void
prelude (void)
{
  wg_write (&g, 0, 8, 0);
  wg_write (&g, 3 * 2048, 8, ZN_WLOG_FUA);
  wg_flush (&g, 2);
}

static void
patch (uint64_t off, const void *bytes, size_t len)
{
  FILE *fp = fopen (path, "r+");

  CHECK (fp != NULL);
  CHECK (fseek (fp, (long) off, SEEK_SET) == 0);
  CHECK (fwrite (bytes, 1, len, fp) == len);
  CHECK (fclose (fp) == 0);
}

static void
corrupt_entries (void)
{
  unsigned char buf[4096] = { 1 };

  start (4096, NULL);
  prelude ();
  wg_raw (&g, 0, 2 * 2048, 8, 0, 7, 0, buf);
  expect ("byte 32", "entry 4 (byte 28672): byte 32 is not zero");

  start (4096, NULL);
  prelude ();
  wg_raw (&g, 0, 2 * 2048, 8, 4096, 0, 0, buf);
  expect ("data_len", "entry 4 (byte 28672): data_len 4096: 0 in a write "
          "entry");

  start (4096, NULL);
  prelude ();
  wg_raw (&g, UINT64_C (1) << 40, 2 * 2048, 8, 0, 0, 0, buf);
  expect ("unknown flag", "entry 4 (byte 28672): unknown flag bits "
          "0x10000000000");

  start (4096, NULL);
  prelude ();
  wg_raw (&g, ZN_WLOG_FLUSH | ZN_WLOG_FUA, 0, 0, 0, 0, 0, NULL);
  expect ("flag combination", "entry 4 (byte 28672): flags 0x3 are no "
          "entry of the table");

  start (4096, NULL);
  prelude ();
  wg_raw (&g, 0, 8 * 2048, 8, 0, 0, 0, buf);
  expect ("sector out of range", "entry 4 (byte 28672): sectors 2048+1 (of "
          "4096 bytes) lie outside the device's 2048");

  start (4096, NULL);
  prelude ();
  wg_raw (&g, 0, 2048 - 8, 16, 0, 0, 0, NULL);
  expect ("across zones", "entry 4 (byte 28672): sectors 255+2 cross the "
          "end of zone 0");

  start (512, NULL);
  prelude ();
  wg_raw (&g, ZN_WLOG_DISCARD | ZN_WLOG_RESET, 3 * 2048 + 8, 2040, 0, 0, 0,
          NULL);
  expect ("reset not at start", "entry 4 (byte 10752): a reset at sector "
          "6152, not at the start of a zone");

  start (512, NULL);
  prelude ();
  wg_raw (&g, ZN_WLOG_DISCARD | ZN_WLOG_RESET, 3 * 2048, 8, 0, 0, 0, NULL);
  expect ("reset of a part", "entry 4 (byte 10752): a reset of 8 sectors: "
          "not the whole zone's 2048");

  start (512, NULL);
  prelude ();
  wg_raw (&g, ZN_WLOG_APPEND, 8, 8, 0, 0, 0, buf);
  expect ("append to conv", "entry 4 (byte 10752): an append in zone 0, a "
          "conventional zone");

  start (512, NULL);
  prelude ();
  wg_raw (&g, ZN_WLOG_FLUSH, 0, 0, 0, 0, 9, NULL);
  expect ("flush ref", "entry 4 (byte 10752): ref 9: a flush covers at most "
          "the entries before it");

  start (512, NULL);
  prelude ();
  wg_raw (&g, ZN_WLOG_MARK, 0, 0, 5, 0, 0, "a b c");
  expect ("mark name", "entry 4 (byte 10752): mark name 'a b c': byte 1 is "
          "not printable ASCII but space");

  start (512, NULL);
  prelude ();
  wg_raw (&g, ZN_WLOG_DISCARD | ZN_WLOG_WP, 3 * 2048, 2048, 0, 0, 0, NULL);
  expect ("wp without power", "entry 4 (byte 10752): a wp entry that does "
          "not follow a power entry");
}

static void
truncated (void)
{
  uint64_t n = 100;

  start (4096, NULL);
  prelude ();
  wg_write (&g, 2 * 2048, 64, 0);
  wg_close (&g);
  CHECK (truncate (path, 4096 * 8) == 0);
  expect ("data past EOF", "entry 4 (byte 28672): its 8 blocks of data run "
          "past the end of the file (truncated log?)");

  start (4096, NULL);
  prelude ();
  wg_close (&g);
  CHECK (truncate (path, 4096 * 6) == 0);
  expect ("entry past EOF", "entry 3 (byte 24576): the file ends before "
          "it: the super counts 4 entries (truncated log?)");

  start (4096, NULL);
  prelude ();
  wg_close (&g);
  patch (16, &n, sizeof n);
  expect ("nr_entries", "nr_entries 100 in the super: the file's");
}

static void
geometry (void)
{
  uint32_t bs;

  /* The later word wins, as on a command line. */
  start (512, "blocksize=4096");
  expect ("sectorsize", "entry 0 (byte 512): the geometry's blocksize 4096 "
          "is not the super's sectorsize 512");

  bs = 512;
  start (4096, NULL);
  wg_close (&g);
  patch (24, &bs, sizeof bs);
  expect ("sectorsize patched", "entry 0 (byte 512): entry 0 must be the "
          "geometry");

  start (4096, "zone_max_open=3");
  expect ("unknown key", "entry 0 (byte 4096): the geometry: unknown key "
          "'zone_max_open'");

  start (4096, "nr_zones=9");
  expect ("nr_zones", "the geometry says nr_zones=9");

  bs = 1000;
  start (4096, NULL);
  wg_close (&g);
  patch (24, &bs, sizeof bs);
  expect ("bad sectorsize", "sectorsize 1000 in the super: must be a power "
          "of 2 from 512 to 4096");
}

static void
unknown_mark (void)
{
  struct zn_replay_plan p;
  struct zn_wlog_reader *log;
  char err[1024];

  start (512, NULL);
  prelude ();
  wg_mark (&g, "here");
  wg_close (&g);
  log = zn_wlog_read_open (path, err, sizeof err);
  CHECK (log != NULL);
  CHECK (zn_replay_plan (log, "there", &p, err, sizeof err) < 0);
  printf ("%-22s %s\n", "unknown mark", err);
  CHECK (strstr (err, "--to there: no mark of that name in the log's 5 "
                 "entries") != NULL);
  CHECK (zn_replay_plan (log, "7", &p, err, sizeof err) < 0);
  printf ("%-22s %s\n", "entry past the end", err);
  CHECK (strstr (err, "--to 7: the log's entries are 0 to 4") != NULL);
  zn_wlog_read_close (log);
  wg_free (&g);
}

/* A model's refusal names the entry: a write not at its zone's wp. */
static void
refused (void)
{
  struct zn_replay_plan p;
  struct zn_wlog_reader *log;
  char err[1024], dir[600];
  bool k[8];
  uint64_t whole[8] = { 0 };
  struct zn_replay_state st = { .k = k, .torn = whole };

  start (512, NULL);
  prelude ();
  wg_write (&g, 4 * 2048 + 8, 8, ZN_WLOG_FUA);
  wg_close (&g);
  log = zn_wlog_read_open (path, err, sizeof err);
  CHECK (log != NULL);
  CHECK (zn_replay_plan (log, NULL, &p, err, sizeof err) == 0);
  CHECK (p.end <= 8);
  for (uint64_t i = 0; i < p.end; i++)
    k[i] = true;
  snprintf (dir, sizeof dir, "%s.state", path);
  CHECK (zn_replay_write (&p, &st, dir, err, sizeof err) < 0);
  printf ("%-22s %s\n", "refused by the model", err);
  CHECK (strstr (err, "entry 4 (byte 10752): the model refused the write of "
                 "sectors 8200+8 (zone 4): EIO") != NULL);
  rm_tree (dir);
  zn_replay_plan_free (&p);
  zn_wlog_read_close (log);
  wg_free (&g);
}

int
main (void)
{
  char *tmp = scratch ();

  snprintf (path, sizeof path, "%s/log", tmp);
  corrupt_entries ();
  truncated ();
  geometry ();
  unknown_mark ();
  refused ();
  rm_tree (tmp);
  return 0;
}
