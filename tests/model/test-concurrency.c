/* SPDX-License-Identifier: BSD-3-Clause */
/* Concurrency tests of the zonednull device model: the calls are
 * documented as thread-safe, so racing threads must leave a device whose
 * counters, limits and zone states are consistent (doc/zone-rules.md,
 * sections 2, 3 and 10).
 * Iteration counts are bounded so that this also runs quickly under
 * valgrind and ASan; nothing here depends on timing.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/zoned.h"
#include "../common/check.h"
#include "../common/dev.h"

#define NTHREADS 8
#define BLK 8                   /* sectors per 4 KiB block */
#define MAX_ZONES 64

static void *
xmalloc (size_t n)
{
  void *p = malloc (n);
  CHECK (p != NULL);
  return p;
}

static bool
sector_is (const unsigned char *p, unsigned char b)
{
  unsigned i;

  for (i = 0; i < ZN_SECTOR_SIZE; i++)
    if (p[i] != b)
      return false;
  return true;
}

static bool
sector_is_pattern (const unsigned char *p, uint64_t sector, unsigned tag)
{
  unsigned char want[ZN_SECTOR_SIZE];

  fill_pattern (want, sector, 1, tag);
  return memcmp (p, want, ZN_SECTOR_SIZE) == 0;
}

/* Per-thread PRNG (xorshift64*), seeded deterministically. */
static uint64_t
rnd (uint64_t *s)
{
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * UINT64_C (0x2545F4914F6CDD1D);
}

/* ------------------------------------------------------------------ */
/* (a) Parallel sequential fill: each thread owns some zones. */

struct fill_arg {
  struct zn_dev *dev;
  unsigned id;
  unsigned zones_per_thread;
};

static void *
fill_worker (void *p)
{
  struct fill_arg *a = p;
  const struct zn_geometry *g = zn_dev_geometry (a->dev);
  unsigned char buf[BLK * ZN_SECTOR_SIZE];
  uint64_t off;
  unsigned k;

  /* Interleave this thread's zones so several are open at once. */
  for (off = 0; off < g->zone_capacity; off += BLK)
    for (k = 0; k < a->zones_per_thread; k++) {
      uint32_t zone = a->id + k * NTHREADS;
      uint64_t sector = zone * g->zone_sectors + off;
      fill_pattern (buf, sector, BLK, 0);
      CHECK_EQ (zn_write (a->dev, buf, sector, BLK), 0);
    }
  return NULL;
}

static void
test_parallel_fill (void)
{
  struct zn_config c;
  struct zn_dev *d;
  const struct zn_geometry *g;
  pthread_t th[NTHREADS];
  struct fill_arg args[NTHREADS];
  struct zn_zone zones[MAX_ZONES];
  struct zn_counters cnt;
  unsigned char *buf;
  unsigned i, n;

  /* 16 zones of 4096 sectors with capacity 2048: two per thread. */
  zn_config_init (&c);
  c.size = 32;
  c.zone_size = 2;
  c.zone_capacity = 1;
  c.memory_backed = true;
  d = create (&c);
  g = zn_dev_geometry (d);
  CHECK_EQ (g->nr_zones, 2 * NTHREADS);

  for (i = 0; i < NTHREADS; i++) {
    args[i].dev = d;
    args[i].id = i;
    args[i].zones_per_thread = 2;
    CHECK_EQ (pthread_create (&th[i], NULL, fill_worker, &args[i]), 0);
  }
  for (i = 0; i < NTHREADS; i++)
    CHECK_EQ (pthread_join (th[i], NULL), 0);

  n = zn_report_zones (d, 0, zones, MAX_ZONES);
  CHECK_EQ (n, g->nr_zones);
  for (i = 0; i < n; i++) {
    CHECK_EQ (zones[i].cond, ZN_COND_FULL);
    CHECK_EQ (zones[i].wp, zones[i].start + zones[i].capacity);
    CHECK_EQ (zones[i].capacity, 2048);
  }
  memset (&cnt, 0xAB, sizeof cnt);
  zn_get_counters (d, &cnt);
  CHECK_EQ (cnt.imp_open, 0);
  CHECK_EQ (cnt.exp_open, 0);
  CHECK_EQ (cnt.closed, 0);

  buf = xmalloc (g->zone_sectors * ZN_SECTOR_SIZE);
  for (i = 0; i < n; i++) {
    uint64_t s;
    memset (buf, 0xA5, g->zone_sectors * ZN_SECTOR_SIZE);
    CHECK_EQ (zn_read (d, buf, zones[i].start, zones[i].len), 0);
    for (s = 0; s < zones[i].len; s++) {
      const unsigned char *p = buf + s * ZN_SECTOR_SIZE;
      if (s < zones[i].capacity)
        CHECK (sector_is_pattern (p, zones[i].start + s, 0));
      else
        CHECK (sector_is (p, 0xFF));  /* [cap, len) gap, zone-rules 8.1 */
    }
  }
  free (buf);
  zn_dev_destroy (d);
}

/* ------------------------------------------------------------------ */
/* (b) Racing zone ops on shared zones, with a counter monitor. */

struct race {
  const char *name;
  uint64_t size, zone_size, zone_capacity;
  uint32_t nr_conv, max_open, max_active;
  uint32_t first_zone, nr_zones_in_play;
  unsigned iters;
  bool memory_backed;
  bool reset_all;               /* sometimes reset the whole device */
};

struct race_arg {
  struct zn_dev *dev;
  const struct race *r;
  uint64_t seed;
};

static atomic_bool race_done;

static bool
allowed_result (int r, bool limits)
{
  if (r == 0 || r == -EIO)
    return true;
  return limits && (r == -EOVERFLOW || r == -ETOOMANYREFS);
}

static void *
race_worker (void *p)
{
  struct race_arg *a = p;
  const struct race *r = a->r;
  const struct zn_geometry *g = zn_dev_geometry (a->dev);
  const bool limits = g->max_open != 0 || g->max_active != 0;
  unsigned char buf[8 * BLK * ZN_SECTOR_SIZE];
  uint64_t s = a->seed;
  unsigned i;

  for (i = 0; i < r->iters; i++) {
    uint32_t zone = r->first_zone
                    + (uint32_t) (rnd (&s) % r->nr_zones_in_play);
    uint64_t start = zone * g->zone_sectors;
    unsigned what = rnd (&s) % 16;
    int res;

    if (what < 6) {
      /* Write at the wp read from a report; another thread may move it
       * in between, in which case EIO is the right answer.
       */
      struct zn_zone z;
      uint64_t nr = BLK * (1 + rnd (&s) % 8);
      CHECK_EQ (zn_report_zones (a->dev, start, &z, 1), 1);
      if (z.wp < z.start || z.wp >= z.start + z.len)
        continue;               /* FULL by finish, READONLY, ... */
      if (z.wp + nr > z.start + z.len)
        nr = z.start + z.len - z.wp;
      fill_pattern (buf, z.wp, nr, 0);
      res = zn_write (a->dev, buf, z.wp, nr);
    }
    else if (what < 8) {
      uint64_t off = BLK * (rnd (&s) % (g->zone_sectors / BLK - 8));
      res = zn_read (a->dev, buf, start + off, 8 * BLK);
      CHECK_EQ (res, 0);
    }
    else if (what < 15 || !r->reset_all) {
      static const enum zn_zone_op ops[] = {
        ZN_OP_OPEN, ZN_OP_CLOSE, ZN_OP_FINISH, ZN_OP_RESET,
      };
      enum zn_zone_op op = ops[rnd (&s) % 4];
      res = zn_zone_mgmt (a->dev, op, start, g->zone_sectors);
    }
    else if (rnd (&s) % 8 == 0) {
      res = zn_zone_mgmt (a->dev, ZN_OP_RESET, 0, g->capacity);
      CHECK_EQ (res, 0);
    }
    else
      continue;

    if (!allowed_result (res, limits))
      fprintf (stderr, "%s: unexpected result %d\n", r->name, res);
    CHECK (allowed_result (res, limits));
  }
  return NULL;
}

struct monitor_arg {
  struct zn_dev *dev;
  const struct race *r;
  unsigned long samples;
};

/* Samples the counters while the workers run.  Every sample must respect
 * the limits; without limits each counter is bounded by the zones in play
 * (this also catches a transient unsigned underflow).
 */
static void *
monitor (void *p)
{
  struct monitor_arg *m = p;
  const struct zn_geometry *g = zn_dev_geometry (m->dev);
  const uint32_t nr_seq = g->nr_zones - g->nr_conv;

  do {
    struct zn_counters c;
    uint32_t open, active;

    zn_get_counters (m->dev, &c);
    open = c.imp_open + c.exp_open;
    active = open + c.closed;
    if (g->max_open != 0 && open > g->max_open)
      fprintf (stderr, "%s: sample %lu: open %u > %u\n", m->r->name,
               m->samples, open, g->max_open);
    if (g->max_open != 0)
      CHECK (open <= g->max_open);
    if (g->max_active != 0 && active > g->max_active)
      fprintf (stderr, "%s: sample %lu: active %u > %u\n", m->r->name,
               m->samples, active, g->max_active);
    if (g->max_active != 0)
      CHECK (active <= g->max_active);
    CHECK (c.imp_open <= m->r->nr_zones_in_play);
    CHECK (c.exp_open <= m->r->nr_zones_in_play);
    CHECK (c.closed <= m->r->nr_zones_in_play);
    CHECK (active <= nr_seq);
    m->samples++;
    sched_yield ();
  } while (!atomic_load (&race_done));
  return NULL;
}

/* Checks the final state: counters match a recount of the report, the
 * limits hold, every zone is self-consistent, and (memory-backed) the
 * data of each zone obeys zone-rules 8.1 for its final wp.
 */
static void
check_final_state (struct zn_dev *d, const struct race *r)
{
  const struct zn_geometry *g = zn_dev_geometry (d);
  struct zn_zone zones[MAX_ZONES];
  struct zn_counters c;
  uint32_t imp = 0, exp = 0, closed = 0;
  unsigned char *buf;
  unsigned i, n;

  n = zn_report_zones (d, 0, zones, MAX_ZONES);
  CHECK_EQ (n, g->nr_zones);
  zn_get_counters (d, &c);

  for (i = 0; i < n; i++) {
    const struct zn_zone *z = &zones[i];

    if (i < g->nr_conv) {
      CHECK_EQ (z->cond, ZN_COND_NOT_WP);
      CHECK_EQ (z->wp, z->start + z->len);
      continue;
    }
    switch (z->cond) {
    case ZN_COND_EMPTY:
      CHECK_EQ (z->wp, z->start);
      break;
    case ZN_COND_FULL:
      CHECK (z->wp == z->start + z->capacity || z->wp == z->start + z->len);
      break;
    case ZN_COND_IMP_OPEN:
    case ZN_COND_EXP_OPEN:
    case ZN_COND_CLOSED:
      CHECK (z->wp >= z->start);
      CHECK (z->wp < z->start + z->capacity);
      if (z->cond == ZN_COND_CLOSED)
        CHECK (z->wp > z->start);
      if (z->cond == ZN_COND_IMP_OPEN)
        imp++;
      else if (z->cond == ZN_COND_EXP_OPEN)
        exp++;
      else
        closed++;
      break;
    default:
      fprintf (stderr, "%s: zone %u has cond 0x%x\n", r->name, i, z->cond);
      CHECK (false);
    }
    /* Zones outside the play area are never touched, but for reset-all. */
    if (i < r->first_zone || i >= r->first_zone + r->nr_zones_in_play)
      CHECK_EQ (z->cond, ZN_COND_EMPTY);
  }

  if (c.imp_open != imp || c.exp_open != exp || c.closed != closed)
    fprintf (stderr, "%s: counters %u/%u/%u, report %u/%u/%u\n", r->name,
             c.imp_open, c.exp_open, c.closed, imp, exp, closed);
  CHECK_EQ (c.imp_open, imp);
  CHECK_EQ (c.exp_open, exp);
  CHECK_EQ (c.closed, closed);
  if (g->max_open != 0)
    CHECK (imp + exp <= g->max_open);
  if (g->max_active != 0)
    CHECK (imp + exp + closed <= g->max_active);

  if (!r->memory_backed)
    return;
  buf = xmalloc (g->zone_sectors * ZN_SECTOR_SIZE);
  for (i = r->first_zone; i < r->first_zone + r->nr_zones_in_play; i++) {
    const struct zn_zone *z = &zones[i];
    uint64_t s;

    CHECK_EQ (zn_read (d, buf, z->start, z->len), 0);
    for (s = 0; s < z->len; s++) {
      const unsigned char *p = buf + s * ZN_SECTOR_SIZE;
      if (z->start + s < z->wp)
        /* Written since the last reset, or the tail of a finish. */
        CHECK (sector_is_pattern (p, z->start + s, 0) || sector_is (p, 0));
      else
        CHECK (sector_is (p, 0xFF));
    }
  }
  free (buf);
}

/* After a reset-all the device must be as good as new: every limit slot
 * is usable again (no leaked counts).
 */
static void
check_recovers (struct zn_dev *d)
{
  const struct zn_geometry *g = zn_dev_geometry (d);
  struct zn_counters c;
  uint32_t i, nr_seq = g->nr_zones - g->nr_conv;
  uint32_t want = g->max_open ? g->max_open : g->max_active;
  unsigned char buf[BLK * ZN_SECTOR_SIZE];

  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_RESET, 0, g->capacity), 0);
  zn_get_counters (d, &c);
  CHECK_EQ (c.imp_open, 0);
  CHECK_EQ (c.exp_open, 0);
  CHECK_EQ (c.closed, 0);
  if (want == 0 || want > nr_seq)
    want = nr_seq;
  memset (buf, 0x3C, sizeof buf);
  for (i = 0; i < want; i++)
    CHECK_EQ (zn_zone_mgmt (d, ZN_OP_OPEN,
                            (g->nr_conv + i) * g->zone_sectors,
                            g->zone_sectors), 0);
  zn_get_counters (d, &c);
  CHECK_EQ (c.exp_open, want);
  if (g->max_open != 0 && want < nr_seq)
    CHECK_EQ (zn_write (d, buf, (g->nr_conv + want) * g->zone_sectors, BLK),
              -ETOOMANYREFS);
}

static void
run_race (const struct race *r)
{
  struct zn_config c;
  struct zn_dev *d;
  pthread_t th[NTHREADS], mon;
  struct race_arg args[NTHREADS];
  struct monitor_arg m;
  unsigned i;

  zn_config_init (&c);
  c.size = r->size;
  c.zone_size = r->zone_size;
  c.zone_capacity = r->zone_capacity;
  c.zone_nr_conv = r->nr_conv;
  c.zone_max_open = r->max_open;
  c.zone_max_active = r->max_active;
  c.memory_backed = r->memory_backed;
  d = create (&c);
  CHECK_EQ (zn_dev_geometry (d)->max_open, r->max_open);
  CHECK_EQ (zn_dev_geometry (d)->max_active, r->max_active);
  CHECK (r->first_zone + r->nr_zones_in_play <= zn_dev_geometry (d)->nr_zones);

  atomic_store (&race_done, false);
  m.dev = d;
  m.r = r;
  m.samples = 0;
  CHECK_EQ (pthread_create (&mon, NULL, monitor, &m), 0);
  for (i = 0; i < NTHREADS; i++) {
    args[i].dev = d;
    args[i].r = r;
    args[i].seed = UINT64_C (0x1234567) * (i + 1) + r->iters;
    CHECK_EQ (pthread_create (&th[i], NULL, race_worker, &args[i]), 0);
  }
  for (i = 0; i < NTHREADS; i++)
    CHECK_EQ (pthread_join (th[i], NULL), 0);
  atomic_store (&race_done, true);
  CHECK_EQ (pthread_join (mon, NULL), 0);
  CHECK (m.samples >= 1);

  check_final_state (d, r);
  check_recovers (d);
  printf ("%s: %lu counter samples\n", r->name, m.samples);
  zn_dev_destroy (d);
}

static void
test_races (void)
{
  static const struct race races[] = {
    /* All threads on one zone, no limits. */
    { "one zone, no limits", 8, 1, 0, 1, 0, 0, 3, 1, 1500, true, false },
    /* One zone with cap < len (FULL at start+cap or start+len). */
    { "one zone, cap < len", 16, 2, 1, 0, 0, 0, 2, 1, 1500, true, false },
    /* One zone under limits. */
    { "one zone, limits", 8, 1, 0, 1, 2, 3, 1, 1, 1500, true, false },
    /* Five zones under limits: implicit closes, EOVERFLOW, reset-all. */
    { "five zones, limits", 8, 1, 0, 1, 2, 3, 1, 5, 2000, true, true },
    { "seven zones, limits, no data", 8, 1, 0, 1, 2, 3, 1, 7, 2000, false,
      true },
    /* Open limit only: the active count can grow. */
    { "six zones, open limit", 8, 1, 0, 0, 3, 0, 1, 6, 1500, true, true },
  };
  unsigned i;

  for (i = 0; i < sizeof races / sizeof races[0]; i++)
    run_race (&races[i]);
}

/* ------------------------------------------------------------------ */
/* (c) Zone appends racing with each other and with writes at the wp on
 * one zone: every success lands at its own place, the successes tile the
 * zone from its start to its capacity without overlap or gap, and each
 * reads back as written.
 */

#define APPEND_ZONE_MIB 16
#define APPENDERS 4
#define WP_WRITERS 4
#define APPEND_MAX_OPS 20000

struct landed {
  uint64_t at, nr;
  unsigned tag;
};
_Static_assert (offsetof (struct landed, at) == 0,
                "by_first_sector sorts by the first member");

struct append_arg {
  struct zn_dev *dev;
  unsigned id;
  bool writer;                  /* writes at the wp it last saw instead */
  uint64_t seed;
  struct landed *done;
  unsigned nr_done;
};

static void *
append_worker (void *p)
{
  struct append_arg *a = p;
  uint64_t start = zn_dev_geometry (a->dev)->zone_sectors;   /* zone 1 */
  unsigned char *buf = xmalloc (8 * BLK * ZN_SECTOR_SIZE);

  for (unsigned k = 0; k < APPEND_MAX_OPS; k++) {
    uint64_t nr = (1 + rnd (&a->seed) % 8) * BLK, at = UINT64_MAX;
    unsigned tag = a->id * APPEND_MAX_OPS + k;
    struct zn_zone z;
    int r;

    CHECK_EQ (zn_report_zones (a->dev, start, &z, 1), 1);
    if (z.cond == ZN_COND_FULL)
      break;
    fill_pattern (buf, 0, nr, tag);
    if (a->writer) {
      if (z.wp + nr > z.start + z.capacity)
        continue;               /* would be refused, or reach the next zone */
      at = z.wp;
      r = zn_write (a->dev, buf, at, nr);
    }
    else {
      r = zn_zone_append (a->dev, buf, start, nr, false, &at);
      CHECK (r != 0 || (at >= start && at + nr <= start + z.capacity));
      /* The wp only grows here, so an append may fail only if it no
       * longer fits: it takes whatever wp it finds, however others race.
       */
      if (r == -EIO) {
        CHECK_EQ (zn_report_zones (a->dev, start, &z, 1), 1);
        CHECK (z.cond == ZN_COND_FULL || z.wp + nr > z.start + z.capacity);
      }
    }
    /* Failures: the zone filled, nr did not fit, or (a writer) the wp
     * moved under it.  None of them may have written anything.
     */
    CHECK (r == 0 || r == -EIO);
    if (r == 0)
      a->done[a->nr_done++] = (struct landed) { at, nr, tag };
  }
  free (buf);
  return NULL;
}

static void
test_append_race (void)
{
  struct zn_config c;
  struct zn_dev *d;
  struct append_arg args[APPENDERS + WP_WRITERS];
  pthread_t th[APPENDERS + WP_WRITERS];
  struct landed *all;
  unsigned n = 0, appended = 0;
  uint64_t start, next;
  struct zn_zone z;

  zn_config_init (&c);
  c.size = 2 * APPEND_ZONE_MIB;
  c.zone_size = APPEND_ZONE_MIB;
  c.zone_nr_conv = 0;
  c.memory_backed = true;
  d = create (&c);
  start = zn_dev_geometry (d)->zone_sectors;
  for (unsigned i = 0; i < APPENDERS + WP_WRITERS; i++) {
    args[i] = (struct append_arg) {
      .dev = d, .id = i, .writer = i >= APPENDERS,
      .seed = 0x9E3779B97F4A7C15u * (i + 1),
      .done = xmalloc (APPEND_MAX_OPS * sizeof (struct landed)),
    };
    CHECK_EQ (pthread_create (&th[i], NULL, append_worker, &args[i]), 0);
  }
  for (unsigned i = 0; i < APPENDERS + WP_WRITERS; i++)
    CHECK_EQ (pthread_join (th[i], NULL), 0);

  all = xmalloc ((APPENDERS + WP_WRITERS) * APPEND_MAX_OPS * sizeof *all);
  for (unsigned i = 0; i < APPENDERS + WP_WRITERS; i++) {
    memcpy (all + n, args[i].done, args[i].nr_done * sizeof *all);
    n += args[i].nr_done;
    if (!args[i].writer)
      appended += args[i].nr_done;
    free (args[i].done);
  }
  qsort (all, n, sizeof *all, by_first_sector);
  next = start;
  for (unsigned i = 0; i < n; i++) {
    unsigned char *got = xmalloc (all[i].nr * ZN_SECTOR_SIZE);
    unsigned char *want = xmalloc (all[i].nr * ZN_SECTOR_SIZE);

    if (all[i].at != next)
      fprintf (stderr, "append race: data at %" PRIu64 ", expected %" PRIu64
               " (an overlap or a gap)\n", all[i].at, next);
    CHECK_EQ (all[i].at, next);
    fill_pattern (want, 0, all[i].nr, all[i].tag);
    CHECK_EQ (zn_read (d, got, all[i].at, all[i].nr), 0);
    CHECK (memcmp (got, want, all[i].nr * ZN_SECTOR_SIZE) == 0);
    next += all[i].nr;
    free (want);
    free (got);
  }
  CHECK_EQ (zn_report_zones (d, start, &z, 1), 1);
  CHECK_EQ (z.cond, ZN_COND_FULL);
  CHECK_EQ (next, z.start + z.capacity);
  /* How many writes win against the appenders is up to the scheduler. */
  CHECK (appended > 0);
  printf ("append race: %u appends and %u writes at the wp tile the zone\n",
          appended, n - appended);
  free (all);
  zn_dev_destroy (d);
}

int
main (void)
{
  test_parallel_fill ();
  test_races ();
  test_append_race ();
  printf ("test-concurrency: all tests passed\n");
  return EXIT_SUCCESS;
}
