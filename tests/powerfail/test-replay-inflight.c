/* SPDX-License-Identifier: BSD-3-Clause */
/* A flush covers only the writes completed before it came (issue 44,
 * item 2; doc/power-fail.md, section 1): a write whose request is
 * answered later than it ran (zn_wlog_defer ... zn_wlog_complete, as a
 * front end brackets an irqmode=2 request) goes in the log when it
 * completes.  A flush received while two writes are in flight does not
 * cover them, and replay yields the state "the writes in flight lost, the
 * flush done", while a write completed before the flush is durable in
 * every state.
 *
 * Then the order the log keeps: a held write goes in before a later
 * write of its sequential zone, before a later write over its blocks in
 * a conventional zone but not before one beside them, before a zone
 * operation of its zone, a power cycle, the log's stop and the device's;
 * a mark its request made follows it.  A held write whose entry cannot
 * be written when it completes stops the log, which its stop reports.
 */
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "powerfail.h"
#include "powerfail/replay.h"
#include "powerfail/wlog.h"

#define ZS 2048                 /* sectors a zone: 1 MiB */

static unsigned char buf[64 << 9];

static struct zn_dev *
device (const char *log, const char *dir)
{
  struct zn_config cfg;
  char err[1024];
  struct zn_dev *dev;

  zn_config_init (&cfg);
  cfg.size = 8;
  cfg.zone_size = 1;
  cfg.zone_nr_conv = 2;
  cfg.memory_backed = true;
  cfg.log_writes = log;
  cfg.backing_dir = dir;
  cfg.backing_dir_nofollow = true;
  dev = zn_dev_create (&cfg, err, sizeof err);
  if (dev == NULL)
    fprintf (stderr, "%s\n", err);
  CHECK (dev != NULL);
  return dev;
}

static void
write_at (struct zn_dev *dev, uint64_t sector, uint64_t n, int byte)
{
  memset (buf, byte, n << 9);
  CHECK_EQ (zn_write (dev, buf, sector, n), 0);
}

/* A write answered later: its hold. */
static struct zn_wlog_hold *
write_held (struct zn_dev *dev, uint64_t sector, uint64_t n, int byte)
{
  struct zn_wlog_hold *h;

  zn_wlog_defer ();
  write_at (dev, sector, n, byte);
  h = zn_wlog_deferred ();
  CHECK (h != NULL);
  return h;
}

static void
mark (struct zn_dev *dev, const char *name)
{
  CHECK_EQ (zn_wlog_mark (dev, name, strlen (name)), 0);
}

/* The log's entries, as the reader checks them. */
static struct zn_wlog_rec *
entries (const char *log, uint64_t *n)
{
  char err[1024];
  struct zn_wlog_reader *r = zn_wlog_read_open (log, err, sizeof err);
  struct zn_wlog_rec *recs;
  int ret;

  if (r == NULL)
    fprintf (stderr, "%s\n", err);
  CHECK (r != NULL);
  *n = zn_wlog_read_nr_entries (r);
  recs = calloc (*n, sizeof *recs);
  CHECK (recs != NULL);
  for (uint64_t i = 0; (ret = zn_wlog_read_next (r, &recs[i], err,
                                                 sizeof err)) > 0; i++)
    CHECK (i + 1 <= *n);
  if (ret < 0)
    fprintf (stderr, "%s\n", err);
  CHECK_EQ (ret, 0);
  zn_wlog_read_close (r);
  return recs;
}

/* The number of the write entry at sector (the first from entry from). */
static uint64_t
write_no (const struct zn_wlog_rec *recs, uint64_t n, uint64_t from,
          uint64_t sector)
{
  for (uint64_t i = from; i < n; i++)
    if (recs[i].kind == ZN_WLOG_K_WRITE && recs[i].sector == sector)
      return i;
  fprintf (stderr, "no write entry at sector %" PRIu64 " in the log\n",
           sector);
  exit (EXIT_FAILURE);
}

static uint64_t
kind_no (const struct zn_wlog_rec *recs, uint64_t n, enum zn_wlog_kind kind,
         const char *name)
{
  for (uint64_t i = 0; i < n; i++)
    if (recs[i].kind == kind
        && (name == NULL || strcmp (recs[i].mark, name) == 0))
      return i;
  fprintf (stderr, "no %s entry %s in the log\n", zn_wlog_kind_name (kind),
           name ? name : "");
  exit (EXIT_FAILURE);
}

static bool
all_bytes (const unsigned char *p, size_t n, int byte)
{
  for (size_t i = 0; i < n; i++)
    if (p[i] != byte)
      return false;
  return true;
}

/* The flush came while writes to zone 3 (sequential) and zone 0
 * (conventional) were in flight; one to zone 2 had completed.
 */
static void
check_flush (const char *log, const char *tmp)
{
  struct zn_wlog_reader *r;
  struct zn_replay_plan p;
  struct zn_keep enumerate = { .kind = ZN_KEEP_ENUMERATE, .max = 64 };
  char err[1024], dir[512];
  uint64_t n, w0, w1, w2, flush, nr_states;
  struct zn_wlog_rec *recs = entries (log, &n);
  unsigned char *data = malloc (8 << 9);
  struct zn_replay_state st;
  struct zn_dev *state;
  struct zn_zone zone;
  struct wg g = {
    .bs = 512, .zone_sectors = ZS, .zone_cap = ZS, .nr_zones = 8,
    .nr_conv = 2,
  };

  CHECK (data != NULL);
  w0 = write_no (recs, n, 0, 2 * ZS);
  w1 = write_no (recs, n, 0, 3 * ZS);
  w2 = write_no (recs, n, 0, 0);
  flush = kind_no (recs, n, ZN_WLOG_K_FLUSH, NULL);
  printf ("write done before the flush: entry %" PRIu64 "; in flight: %"
          PRIu64 " and %" PRIu64 "; the flush: entry %" PRIu64 " ref %"
          PRIu64 "\n", w0, w1, w2, flush, recs[flush].ref);
  if (recs[flush].ref > w1 || recs[flush].ref > w2) {
    fprintf (stderr, "FAIL: the flush's ref %" PRIu64 " covers writes that "
             "were in flight when it came (entries %" PRIu64 " and %" PRIu64
             ")\n", recs[flush].ref, w1, w2);
    exit (EXIT_FAILURE);
  }
  CHECK (recs[flush].ref > w0);
  /* They completed after the flush: their entries come after its mark. */
  CHECK (w1 > kind_no (recs, n, ZN_WLOG_K_MARK, "flushed"));
  CHECK (w2 > kind_no (recs, n, ZN_WLOG_K_MARK, "flushed"));

  r = zn_wlog_read_open (log, err, sizeof err);
  CHECK (r != NULL);
  if (zn_replay_plan (r, "completed", &p, err, sizeof err) < 0) {
    fprintf (stderr, "%s\n", err);
    exit (EXIT_FAILURE);
  }
  CHECK_EQ (p.fate[w0], ZN_FATE_DURABLE);
  CHECK_EQ (p.fate[w1], ZN_FATE_PENDING);
  CHECK_EQ (p.fate[w2], ZN_FATE_PENDING);
  nr_states = zn_replay_nr_states (&p, &enumerate);
  printf ("states after the flush: %" PRIu64 "\n", nr_states);
  CHECK_EQ (nr_states, 4);
  CHECK_EQ (zn_replay_state_init (&p, &st), 0);
  /* State 0: both writes in flight lost, the flush done. */
  zn_replay_choose (&p, &enumerate, 0, &st);
  CHECK (st.k[w0] && !st.k[w1] && !st.k[w2]);
  snprintf (dir, sizeof dir, "%s/state0", tmp);
  if (zn_replay_write (&p, &st, dir, err, sizeof err) < 0) {
    fprintf (stderr, "%s\n", err);
    exit (EXIT_FAILURE);
  }
  state = open_state (&g, dir);
  CHECK_EQ (zn_read (state, data, 2 * ZS, 8), 0);
  CHECK (all_bytes (data, 8 << 9, 0xa0));
  CHECK_EQ (zn_report_zones (state, 3 * ZS, &zone, 1), 1);
  CHECK_EQ (zone.wp, 3 * ZS);
  CHECK_EQ (zn_read (state, data, 0, 8), 0);
  CHECK (all_bytes (data, 8 << 9, 0));
  zn_dev_destroy (state);
  rm_tree (dir);
  zn_replay_state_free (&st);
  zn_replay_plan_free (&p);
  zn_wlog_read_close (r);
  free (recs);
  free (data);
}

/* The order of the rest of the log written by main. */
static void
check_order (const char *log)
{
  uint64_t n, m = 0;
  struct zn_wlog_rec *recs = entries (log, &n);
  uint64_t w3, w4, w5, w6, w7, w8, reset, fault_mark, w9, w10, power, w11;

  m = kind_no (recs, n, ZN_WLOG_K_MARK, "order");
  /* Sequential zone 4: the held write before the later one. */
  w3 = write_no (recs, n, m, 4 * ZS);
  w4 = write_no (recs, n, m, 4 * ZS + 8);
  CHECK (w3 < w4);
  CHECK (w3 < kind_no (recs, n, ZN_WLOG_K_MARK, "seq-done"));
  /* Conventional zone 1: a write beside the held one goes first, one
   * over its blocks after it.
   */
  w5 = write_no (recs, n, m, ZS);
  w6 = write_no (recs, n, m, ZS + 64);
  w7 = write_no (recs, n, w5 + 1, ZS + 4);
  CHECK (w6 < w5);
  CHECK (w5 < w7);
  /* Zone 5: before its reset. */
  w8 = write_no (recs, n, m, 5 * ZS);
  reset = kind_no (recs, n, ZN_WLOG_K_RESET, NULL);
  CHECK (w8 < reset);
  /* A request's mark follows its write. */
  w9 = write_no (recs, n, m, 6 * ZS);
  fault_mark = kind_no (recs, n, ZN_WLOG_K_MARK, "after-w9");
  CHECK (w9 < fault_mark);
  CHECK (fault_mark > kind_no (recs, n, ZN_WLOG_K_MARK, "w9-ran"));
  /* A power cycle. */
  w10 = write_no (recs, n, m, 7 * ZS);
  power = kind_no (recs, n, ZN_WLOG_K_POWER, NULL);
  CHECK (w10 < power);
  /* The log's stop: the last entry. */
  w11 = write_no (recs, n, power, 6 * ZS + 8);
  CHECK_EQ (w11, n - 1);
  free (recs);
}

int
main (void)
{
  char *tmp = scratch ();
  char log[512], log2[512], dir[512];
  struct zn_dev *dev;
  struct zn_wlog_hold *h1, *h2, *h3, *h5, *h8, *h9, *h10, *h11;
  uint64_t n;
  struct zn_wlog_rec *recs;

  snprintf (log, sizeof log, "%s/inflight.log", tmp);
  snprintf (dir, sizeof dir, "%s/dev", tmp);
  dev = device (log, dir);

  write_at (dev, 2 * ZS, 8, 0xa0);             /* completed at once */
  h1 = write_held (dev, 3 * ZS, 8, 0xa1);      /* in flight */
  h2 = write_held (dev, 0, 8, 0xa2);
  CHECK_EQ (zn_flush (dev), 0);
  mark (dev, "flushed");
  zn_wlog_complete (h1);
  zn_wlog_complete (h2);
  mark (dev, "completed");

  mark (dev, "order");
  h3 = write_held (dev, 4 * ZS, 8, 0xb3);
  write_at (dev, 4 * ZS + 8, 8, 0xb4);
  mark (dev, "seq-done");
  zn_wlog_complete (h3);
  h5 = write_held (dev, ZS, 8, 0xb5);
  write_at (dev, ZS + 64, 8, 0xb6);            /* beside it */
  write_at (dev, ZS + 4, 8, 0xb7);             /* over its last blocks */
  zn_wlog_complete (h5);
  h8 = write_held (dev, 5 * ZS, 8, 0xb8);
  CHECK_EQ (zn_zone_mgmt (dev, ZN_OP_RESET, 5 * ZS, ZS), 0);
  zn_wlog_complete (h8);
  zn_wlog_defer ();
  write_at (dev, 6 * ZS, 8, 0xb9);
  mark (dev, "after-w9");                      /* fault-after's, say */
  h9 = zn_wlog_deferred ();
  CHECK (h9 != NULL);
  mark (dev, "w9-ran");
  zn_wlog_complete (h9);
  h10 = write_held (dev, 7 * ZS, 8, 0xba);
  CHECK_EQ (zn_power_cycle (dev), 0);
  zn_wlog_complete (h10);
  h11 = write_held (dev, 6 * ZS + 8, 8, 0xbb);
  CHECK_EQ (zn_wlog_stop (dev), 0);
  zn_wlog_complete (h11);                      /* after the stop: nothing */
  zn_dev_destroy (dev);

  check_flush (log, tmp);
  check_order (log);

  /* The device stops with a write held: it goes in before the stop's
   * flush, which covers it, and the hold is freed with the device.
   */
  snprintf (log2, sizeof log2, "%s/stop.log", tmp);
  rm_tree (dir);
  dev = device (log2, dir);
  h1 = write_held (dev, 3 * ZS, 8, 0xc1);
  (void) h1;
  zn_dev_destroy (dev);
  recs = entries (log2, &n);
  CHECK_EQ (recs[n - 1].kind, ZN_WLOG_K_FLUSH);
  CHECK (write_no (recs, n, 0, 3 * ZS) < recs[n - 1].ref);
  free (recs);

  /* The file cannot grow when the held write completes: the log stops
   * there, whole up to the entry before, and its stop says EIO.
   */
  {
    struct rlimit old, lim;
    struct stat st;
    char log3[512];

    snprintf (log3, sizeof log3, "%s/full.log", tmp);
    rm_tree (dir);
    dev = device (log3, dir);
    h1 = write_held (dev, 3 * ZS, 8, 0xd1);
    signal (SIGXFSZ, SIG_IGN);
    CHECK (stat (log3, &st) == 0);
    CHECK (getrlimit (RLIMIT_FSIZE, &old) == 0);
    lim = old;
    lim.rlim_cur = (rlim_t) st.st_size;
    CHECK (setrlimit (RLIMIT_FSIZE, &lim) == 0);
    zn_wlog_complete (h1);
    CHECK (setrlimit (RLIMIT_FSIZE, &old) == 0);
    CHECK (!zn_wlog_on (dev));
    CHECK_EQ (zn_wlog_stop (dev), -EIO);
    zn_dev_destroy (dev);
    recs = entries (log3, &n);
    CHECK_EQ (n, 1);                           /* the geometry */
    free (recs);
  }

  rm_tree (tmp);
  puts ("ok");
  return 0;
}
