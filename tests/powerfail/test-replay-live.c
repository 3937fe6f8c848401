/* SPDX-License-Identifier: BSD-3-Clause */
/* Replay of a log to its end equals the live device (issue 34): a model
 * device with log_writes= on (lib/powerfail/wlog.c, the device's own writer), a
 * random workload through the model (writes, FUA, appends, flushes,
 * resets, finishes, opens, closes, READONLY, power cycles with a cache
 * and marks), then the log replayed to its end (zonednull replay's
 * lib/powerfail/replay.c) and the state compared with the device: every zone's
 * report and every byte.  A zone open on the device is CLOSED (or
 * EMPTY, if nothing is written in it) in the state, which a power-on
 * finds with no zone open; that is the one difference allowed.  ZN_SEEDS sets how many devices (default 24).
 *
 * The devices keep their zones in a backing_dir, but one in four in
 * memory, and those have no power cycle: over memory, as in null_blk, a
 * power cycle keeps the pages past a zone's new wp, and a later finish
 * shows them again, where zone files (and zloop, and the replay) read
 * zeros.  The log does not record bytes a device dropped.  (A zone made
 * READONLY has its cached writes written back first, so that a power
 * cycle cannot drop writes that its wp, all-ones, no longer shows.)
 *
 * Then a crash: a device with a volatile cache runs the workload without
 * power cycles, marks its end and loses power (zn_power_cycle, which
 * drops every unflushed write); the log replayed to the mark with
 * --crash=none must be that device too.  A finish writes a zone's cache
 * back on the device, so the replay must count it as making the zone's
 * writes durable (doc/power-fail.md, section 2).
 *
 * In the run to the end, one request in three is answered later, as
 * irqmode=2 answers them (zn_wlog_defer ... zn_wlog_complete), up to 8
 * at once, completed in random order, some only after the log's stop:
 * its writes go in the log when it completes, and the replay must still
 * be the device, so each zone's entries must be in the order they ran.
 */
#include "powerfail.h"
#include "powerfail/replay.h"
#include "powerfail/wlog.h"

static uint64_t rng;

static uint64_t
rnd (uint64_t n)
{
  uint64_t x = (rng += UINT64_C (0x9e3779b97f4a7c15));

  x = (x ^ (x >> 30)) * UINT64_C (0xbf58476d1ce4e5b9);
  x = (x ^ (x >> 27)) * UINT64_C (0x94d049bb133111eb);
  return (x ^ (x >> 31)) % n;
}

static void
fill (unsigned char *buf, uint64_t bytes)
{
  for (uint64_t i = 0; i < bytes; i++)
    buf[i] = (unsigned char) (rnd (255) + 1);
}

/* One request, chosen at random; a refusal is fine (it is not logged). */
static void
one_op (struct zn_dev *dev, uint32_t spb, bool power,
        unsigned *marks)
{
  static unsigned char buf[248 << 9];
  const struct zn_geometry *g = zn_dev_geometry (dev);
  uint32_t z = (uint32_t) rnd (g->nr_zones);
  uint64_t start = z * g->zone_sectors, nr = (1 + rnd (31)) * spb, at;
  unsigned pick = (unsigned) rnd (100);
  bool fua = rnd (4) == 0;
  struct zn_zone zone;
  char name[16];

  CHECK_EQ (zn_report_zones (dev, start, &zone, 1), 1);
  fill (buf, nr << 9);
  if (pick < 5)
    zn_flush (dev);
  else if (pick < 7) {
    snprintf (name, sizeof name, "m%u", ++*marks);
    CHECK_EQ (zn_wlog_mark (dev, name, strlen (name)), 0);
  }
  else if (pick < 8 && power)
    zn_power_cycle (dev);
  else if (pick < 9 && z >= g->nr_conv)
    zn_zone_set_readonly (dev, start);
  else if (z < g->nr_conv)
    zn_write_why (dev, buf, start + rnd (g->zone_sectors / spb - 31) * spb,
                  nr, fua, &(enum zn_reason) { 0 });
  else if (pick < 14)
    zn_zone_mgmt (dev, ZN_OP_RESET, start, g->zone_sectors);
  else if (pick < 17)
    zn_zone_mgmt (dev, ZN_OP_FINISH, start, g->zone_sectors);
  else if (pick < 20)
    zn_zone_mgmt (dev, ZN_OP_OPEN, start, g->zone_sectors);
  else if (pick < 23)
    zn_zone_mgmt (dev, ZN_OP_CLOSE, start, g->zone_sectors);
  else if (pick < 45)
    zn_zone_append (dev, buf, start, nr, fua, &at);
  else if (zone.wp < start + zone.capacity)
    zn_write_why (dev, buf, zone.wp, nr < start + zone.capacity - zone.wp
                  ? nr : start + zone.capacity - zone.wp, fua,
                  &(enum zn_reason) { 0 });
}

/* Requests answered later, not yet completed. */
#define MAX_HELD 8
static struct zn_wlog_hold *held[MAX_HELD];
static unsigned nr_held;

/* Completes some of them, in random order, or all. */
static void
complete_held (bool all)
{
  while (nr_held > 0 && (all || rnd (4) == 0)) {
    unsigned i = (unsigned) rnd (nr_held);

    zn_wlog_complete (held[i]);
    held[i] = held[--nr_held];
  }
}

/* One request; without crash, answered later one time in three. */
static void
one_request (struct zn_dev *dev, uint32_t spb, bool power, bool crash,
             unsigned *marks)
{
  bool later = !crash && nr_held < MAX_HELD && rnd (3) == 0;
  struct zn_wlog_hold *h;

  if (later)
    zn_wlog_defer ();
  one_op (dev, spb, power, marks);
  if (later && (h = zn_wlog_deferred ()) != NULL)
    held[nr_held++] = h;
  if (!crash)
    complete_held (false);
}

/* What a power-on makes of a zone: none is open. */
static uint8_t
cond_class (const struct zn_zone *z)
{
  if (z->cond != ZN_COND_IMP_OPEN && z->cond != ZN_COND_EXP_OPEN)
    return z->cond;
  return z->wp == z->start ? ZN_COND_EMPTY : ZN_COND_CLOSED;
}

static void
compare (struct zn_dev *live, struct zn_dev *state, uint64_t seed)
{
  const struct zn_geometry *g = zn_dev_geometry (live);
  uint64_t chunk = g->zone_sectors;
  unsigned char *a = malloc (chunk << 9), *b = malloc (chunk << 9);

  CHECK (a && b);
  for (uint32_t i = 0; i < g->nr_zones; i++) {
    uint64_t start = i * g->zone_sectors;
    struct zn_zone x, y;

    CHECK_EQ (zn_report_zones (live, start, &x, 1), 1);
    CHECK_EQ (zn_report_zones (state, start, &y, 1), 1);
    if (x.wp != y.wp || cond_class (&x) != cond_class (&y)
        || x.type != y.type || x.capacity != y.capacity)
      fprintf (stderr, "seed %" PRIu64 ": zone %u: the device has wp %"
               PRIu64 " %s, the replay wp %" PRIu64 " %s\n", seed, i, x.wp,
               zn_cond_name (x.cond), y.wp, zn_cond_name (y.cond));
    CHECK_EQ (x.wp, y.wp);
    CHECK_EQ (cond_class (&x), cond_class (&y));
    CHECK_EQ (x.type, y.type);
    CHECK_EQ (x.capacity, y.capacity);
    CHECK_EQ (zn_read (live, a, start, chunk), 0);
    CHECK_EQ (zn_read (state, b, start, chunk), 0);
    for (uint64_t off = 0; off < chunk << 9; off++)
      if (a[off] != b[off]) {
        fprintf (stderr, "seed %" PRIu64 ": zone %u: byte %" PRIu64 " is "
                 "%#x on the device, %#x in the replay\n", seed, i, off,
                 a[off], b[off]);
        exit (EXIT_FAILURE);
      }
  }
  free (a);
  free (b);
}

/* The log replayed through mark to (NULL: to its end) with policy keep,
 * into dir, as a device of the workload's geometry.
 */
static struct zn_dev *
replayed (const char *log, const char *to, enum zn_keep_kind keep,
          const char *dir, uint32_t bs, uint64_t seed)
{
  struct zn_replay_plan p;
  struct zn_wlog_reader *r;
  struct wg g = { 0 };
  char err[1024];
  struct zn_dev *state;
  struct zn_replay_state st;

  r = zn_wlog_read_open (log, err, sizeof err);
  if (r == NULL || zn_replay_plan (r, to, &p, err, sizeof err) < 0) {
    fprintf (stderr, "seed %" PRIu64 ": %s\n", seed, err);
    exit (EXIT_FAILURE);
  }
  CHECK_EQ (zn_replay_state_init (&p, &st), 0);
  zn_replay_choose (&p, &(struct zn_keep) { .kind = keep }, 0, &st);
  if (zn_replay_write (&p, &st, dir, err, sizeof err) < 0) {
    fprintf (stderr, "seed %" PRIu64 ": %s\n", seed, err);
    exit (EXIT_FAILURE);
  }
  g.bs = bs;
  g.zone_sectors = g.zone_cap = 2048;
  g.nr_zones = 8;
  g.nr_conv = 2;
  state = open_state (&g, dir);
  zn_replay_state_free (&st);
  zn_replay_plan_free (&p);
  zn_wlog_read_close (r);
  return state;
}

/* The workload on a device of seed, its log replayed to its end and
 * compared with it.  With crash, the device has a volatile cache and
 * zone files and no power cycle during the workload; it then marks the
 * end and loses power (a power cycle that keeps no unflushed write),
 * and the replay to the mark with --crash=none is compared instead.
 */
static void
one_device (const char *tmp, uint64_t seed, bool crash)
{
  char log[512], dir[512], devdir[512], err[1024];
  const char *what = crash ? "crash" : "live";
  bool files = crash || seed % 4 != 0;
  struct zn_config cfg;
  struct zn_dev *live, *state;
  unsigned marks = 0;

  rng = seed;
  snprintf (log, sizeof log, "%s/%s-%" PRIu64 ".log", tmp, what, seed);
  snprintf (dir, sizeof dir, "%s/%s-%" PRIu64, tmp, what, seed);
  snprintf (devdir, sizeof devdir, "%s/%s-dev-%" PRIu64, tmp, what, seed);
  zn_config_init (&cfg);
  cfg.blocksize = seed % 2 ? 4096 : 512;
  cfg.size = 8;
  cfg.zone_size = 1;
  cfg.zone_nr_conv = 2;
  cfg.memory_backed = true;
  cfg.cache_size = crash || seed % 3 ? 1 : 0;
  cfg.log_writes = log;
  cfg.backing_dir = files ? devdir : NULL;
  live = zn_dev_create (&cfg, err, sizeof err);
  if (live == NULL)
    fprintf (stderr, "%s\n", err);
  CHECK (live != NULL);
  for (unsigned i = 0; i < 400; i++)
    one_request (live, cfg.blocksize >> 9, files && !crash, crash, &marks);
  if (crash) {
    CHECK_EQ (zn_wlog_mark (live, "crash", 5), 0);
    CHECK_EQ (zn_power_cycle (live), 0);
  }
  /* Half the requests still held complete before the stop, the rest go
   * in with it.
   */
  for (unsigned i = nr_held / 2; i > 0; i--)
    zn_wlog_complete (held[--nr_held]);
  CHECK_EQ (zn_wlog_stop (live), 0);
  complete_held (true);
  state = replayed (log, crash ? "crash" : NULL,
                    crash ? ZN_KEEP_NONE : ZN_KEEP_ALL, dir, cfg.blocksize,
                    seed);
  compare (live, state, seed);
  zn_dev_destroy (state);
  zn_dev_destroy (live);
  rm_tree (dir);
  rm_tree (devdir);
  remove (log);
}

int
main (void)
{
  const char *env = getenv ("ZN_SEEDS");
  uint64_t seeds = env ? strtoull (env, NULL, 10) : 24;
  char *tmp = scratch ();

  for (uint64_t seed = 1; seed <= seeds; seed++) {
    one_device (tmp, seed, false);
    one_device (tmp, seed, true);
  }
  rm_tree (tmp);
  printf ("%" PRIu64 " devices: the replay of each log to its end is the "
          "device, and to a crash with --crash=none the device after a "
          "power cycle, every zone and byte\n", seeds);
  return 0;
}
