/* SPDX-License-Identifier: BSD-3-Clause */
/* A power cycle that keeps part of the write cache (zn_power_cycle_keep)
 * leaves a state that doc/power-fail.md's section 2 allows, with the page
 * cache and with backing_dir.  A random workload of flushed, FUA and
 * unflushed writes runs on a fresh device; after the power cycle every
 * byte and every wp is checked against a reference built from the rules
 * alone: the durable writes (FUA, flushed, and in a sequential zone with
 * backing_dir those before a FUA of the zone) and, of the pending ones,
 * a prefix of each sequential zone's and each conventional write whole
 * or not, as the policy draws them, applied in order; under torn:SEED
 * also the first blocks of the write after a sequential zone's prefix,
 * and a conventional write's blocks each on its own when the draw tears
 * it (512-byte blocks: a write's sectors).  Without backing_dir the
 * sequential zones start over EMPTY whatever is kept.
 */
#include "files-model.h"
#include "model/crash.h"

#define NR_ZONES 8
#define NR_CONV 3
#define ZS MIB_SECTORS
#define NR_OPS 160
#define MAX_LEN 16
#define CONV_SPAN 64          /* conventional writes land in the first
                                 64 sectors of the zone: they overlap */
#define NR_SEEDS 48

struct op {
  bool flush;
  uint32_t zone;
  uint64_t sector, n;
  unsigned tag;
  bool fua;
};

struct workload {
  struct op ops[NR_OPS];
  size_t nr;
};

static uint64_t
rnd (uint64_t *s)
{
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* Runs a random workload from wseed on d, recording it in w. */
static void
run_workload (struct zn_dev *d, uint64_t wseed, struct workload *w)
{
  uint64_t s = wseed * 2654435761u + 1, wp[NR_ZONES] = { 0 };

  w->nr = 0;
  for (unsigned i = 0; i < NR_OPS; i++) {
    struct op *o = &w->ops[w->nr];

    memset (o, 0, sizeof *o);
    /* Flushes in the first half only: the second is all pending. */
    if (rnd (&s) % 16 == 0 && i < NR_OPS / 2) {
      o->flush = true;
      CHECK_EQ (zn_flush (d), 0);
      w->nr++;
      continue;
    }
    o->zone = (uint32_t) (rnd (&s) % NR_ZONES);
    o->n = 1 + rnd (&s) % MAX_LEN;
    o->fua = rnd (&s) % 6 == 0;
    o->tag = i + 1;
    if (o->zone < NR_CONV)
      o->sector = zstart (d, o->zone) + rnd (&s) % (CONV_SPAN - o->n);
    else {
      o->sector = zstart (d, o->zone) + wp[o->zone];
      wp[o->zone] += o->n;
    }
    CHECK_EQ (write_tag (d, o->sector, o->n, o->tag, o->fua), 0);
    w->nr++;
  }
}

static bool
covers (const struct op *o, uint64_t sector)
{
  return !o->flush && sector >= o->sector && sector < o->sector + o->n;
}

/* Whether write i was durable at the power cycle. */
static bool
durable (const struct workload *w, size_t i, bool files)
{
  const struct op *o = &w->ops[i];

  if (o->fua)
    return true;
  for (size_t j = i + 1; j < w->nr; j++)
    if (w->ops[j].flush
        || (files && o->zone >= NR_CONV && w->ops[j].zone == o->zone
            && w->ops[j].fua))
      return true;
  return false;
}

/* Whether every sector of pending write i was overwritten by a later FUA
 * write: the cache holds nothing of it any more, so it has no place
 * among the zone's pending writes.
 */
static bool
gone (const struct workload *w, size_t i)
{
  const struct op *o = &w->ops[i];

  for (uint64_t s = o->sector; s < o->sector + o->n; s++) {
    bool hit = false;

    for (size_t j = i + 1; j < w->nr && !hit; j++)
      hit = w->ops[j].fua && covers (&w->ops[j], s);
    if (!hit)
      return false;
  }
  return true;
}

/* Writes the reference found torn: some of their blocks kept. */
static unsigned nr_torn;

static uint32_t
whole (const struct op *o)
{
  return (UINT32_C (1) << o->n) - 1;
}

/* Of pending write o, at place pos among its zone's n pending writes,
 * which sectors (a mask) keep keeps.
 */
static uint32_t
kept_of (const struct zn_keep *keep, const struct op *o, uint64_t pos,
         uint64_t n)
{
  uint64_t prefix, first = o->sector - o->zone * ZS;
  uint32_t m = 0;

  if (o->zone >= NR_CONV) {
    prefix = zn_keep_prefix (keep, o->zone, n);
    return pos < prefix ? whole (o) : pos > prefix ? 0
      : (UINT32_C (1) << zn_keep_torn_prefix (keep, o->zone, pos, o->n)) - 1;
  }
  if (!zn_keep_torn (keep, o->zone, pos))
    return zn_keep_write (keep, o->zone, pos) ? whole (o) : 0;
  for (uint64_t b = 0; b < o->n; b++)
    m |= (uint32_t) zn_keep_block (keep, o->zone, pos, first + b) << b;
  return m;
}

/* The reference: which sectors of each write the state holds (a mask,
 * applied[i]).
 */
static void
reference (const struct workload *w, const struct zn_keep *keep, bool files,
           uint32_t *applied)
{
  uint64_t n[NR_ZONES] = { 0 }, at[NR_ZONES] = { 0 };
  bool pending[NR_OPS];

  for (size_t i = 0; i < w->nr; i++) {
    const struct op *o = &w->ops[i];

    applied[i] = 0;
    pending[i] = !o->flush && !durable (w, i, files) && !gone (w, i);
    if (pending[i])
      n[o->zone]++;
    else if (!o->flush && durable (w, i, files))
      applied[i] = whole (o);
  }
  for (size_t i = 0; i < w->nr; i++) {
    const struct op *o = &w->ops[i];
    uint64_t pos;

    if (!pending[i])
      continue;
    pos = at[o->zone]++;
    applied[i] = kept_of (keep, o, pos, n[o->zone]);
    nr_torn += applied[i] != 0 && applied[i] != whole (o);
  }
}

/* What each sector of zone z must hold: the tag of the last applied
 * write over it, or ZEROS; and the wp a sequential zone has.
 */
static uint64_t
expected_zone (const struct workload *w, const uint32_t *applied, uint32_t z,
               struct zn_dev *d, int *tags)
{
  uint64_t wp = 0;

  for (uint64_t s = 0; s < ZS; s++)
    tags[s] = ZEROS;
  for (size_t i = 0; i < w->nr; i++) {
    const struct op *o = &w->ops[i];

    if (o->zone != z)
      continue;
    for (uint64_t s = o->sector; s < o->sector + o->n; s++)
      if (applied[i] >> (s - o->sector) & 1) {
        tags[s - zstart (d, z)] = (int) o->tag;
        if (s + 1 - zstart (d, z) > wp)
          wp = s + 1 - zstart (d, z);
      }
  }
  return wp;
}

static void
expect_tags (struct zn_dev *d, uint32_t z, const int *tags, uint64_t len)
{
  for (uint64_t s = 0, e; s < len; s = e) {
    for (e = s + 1; e < len && tags[e] == tags[s]; e++)
      ;
    expect_data (d, zstart (d, z) + s, e - s, tags[s]);
  }
}

/* The device against the reference, zone by zone. */
static void
expect_state (struct zn_dev *d, const struct workload *w,
              const struct zn_keep *keep, bool files)
{
  uint32_t applied[NR_OPS];
  int tags[ZS];

  reference (w, keep, files, applied);
  for (uint32_t z = 0; z < NR_ZONES; z++) {
    uint64_t wp = expected_zone (w, applied, z, d, tags);

    if (z < NR_CONV)
      expect_tags (d, z, tags, CONV_SPAN);
    else if (!files)
      EXPECT_ZONE (d, z, ZN_COND_EMPTY, 0);
    else {
      EXPECT_ZONE (d, z, wp ? ZN_COND_CLOSED : ZN_COND_EMPTY, wp);
      expect_tags (d, z, tags, wp);
    }
  }
}

/* FNV-1a of what the workload can have written: the conventional zones'
 * first CONV_SPAN sectors and, with backing_dir, the sequential zones'
 * data up to their wps, and those wps.
 */
static uint64_t
fingerprint (struct zn_dev *d, bool files)
{
  unsigned char *buf = malloc (ZS * ZN_SECTOR_SIZE);
  uint64_t h = UINT64_C (0xcbf29ce484222325);

  CHECK (buf != NULL);
  for (uint32_t z = 0; z < (files ? NR_ZONES : NR_CONV); z++) {
    uint64_t len = z < NR_CONV ? CONV_SPAN : zone_at (d, z).wp - zstart (d, z);

    if (len)
      CHECK_EQ (zn_read (d, buf, zstart (d, z), len), 0);
    for (uint64_t i = 0; i < len * ZN_SECTOR_SIZE; i++)
      h = (h ^ buf[i]) * UINT64_C (0x100000001b3);
    h = (h ^ len) * UINT64_C (0x100000001b3);
  }
  free (buf);
  return h;
}

static struct zn_dev *
new_device (bool files, char *dir, size_t len)
{
  struct zn_config c = geometry_config (NR_ZONES, 1, 0, NR_CONV, 512);

  c.memory_backed = true;
  c.cache_size = 4;
  if (files)
    c.backing_dir = path_in_top (dir, len, "keep");
  return create (&c);
}

/* Workload wseed, then a power cycle under policy; checked, and its
 * fingerprint returned.  *before is the fingerprint before the cycle.
 */
static uint64_t
cycle (bool files, uint64_t wseed, const char *policy, uint64_t *before)
{
  static struct workload w;
  char dir[1024], err[256];
  struct zn_keep keep;
  struct zn_dev *d = new_device (files, dir, sizeof dir);
  uint64_t h;

  CHECK_EQ (zn_keep_parse (policy, false, &keep, err, sizeof err), 0);
  run_workload (d, wseed, &w);
  if (before)
    *before = fingerprint (d, files);
  CHECK_EQ (zn_power_cycle_keep (d, &keep), 0);
  expect_state (d, &w, &keep, files);
  h = fingerprint (d, files);
  zn_dev_destroy (d);
  if (files) {
    /* What the files hold is the state: a restart shows it again. */
    struct zn_config c = geometry_config (NR_ZONES, 1, 0, NR_CONV, 512);

    c.memory_backed = true;
    c.cache_size = 4;
    c.backing_dir = dir;
    d = create (&c);
    expect_state (d, &w, &keep, files);
    zn_dev_destroy (d);
    rm_tree (dir);
  }
  return h;
}

/* KIND:1 to KIND:NR_SEEDS on one workload, each state the reference's:
 * seeds draw different states, and a seed the same one again; then other
 * workloads, checked against the reference only.
 */
static void
draw_seeds (bool files, const char *kind)
{
  uint64_t hs[NR_SEEDS];
  unsigned distinct = 0;
  char policy[32];

  for (unsigned i = 0; i < NR_SEEDS; i++) {
    snprintf (policy, sizeof policy, "%s:%u", kind, i + 1);
    hs[i] = cycle (files, 1, policy, NULL);
    distinct++;
    for (unsigned j = 0; j < i; j++)
      if (hs[j] == hs[i]) {
        distinct--;
        break;
      }
  }
  fprintf (stderr, "%s: %s: %u distinct states of %d seeds\n",
           files ? "backing_dir" : "page cache", kind, distinct, NR_SEEDS);
  CHECK (distinct >= NR_SEEDS / 2);
  for (unsigned i = 0; i < 4; i++) {
    snprintf (policy, sizeof policy, "%s:%u", kind, i + 1);
    CHECK_EQ (cycle (files, 1, policy, NULL), hs[i]);
  }
  for (uint64_t wseed = 2; wseed < 10; wseed++)
    for (unsigned i = 0; i < 8; i++) {
      snprintf (policy, sizeof policy, "%s:%u", kind, i + 100);
      cycle (files, wseed, policy, NULL);
    }
}

static void
test_policies (bool files)
{
  uint64_t before, none, all;

  none = cycle (files, 1, "none", &before);
  all = cycle (files, 1, "all", NULL);
  CHECK (none != all);
  /* all: the state as reads saw it (the sequential zones of the page
   * cache start over whatever is kept, and are not in the fingerprint).
   */
  CHECK_EQ (all, before);
  draw_seeds (files, "random");
}

/* torn:SEED: every state the reference's, torn writes among them. */
static void
test_torn (bool files)
{
  nr_torn = 0;
  draw_seeds (files, "torn");
  fprintf (stderr, "%s: %u torn writes\n", files ? "backing_dir" : "page cache",
           nr_torn);
  CHECK (nr_torn > 0);
}

/* A FUA write in the middle of a pending one splits its record; the
 * power cycle keeps both parts or neither.
 */
static void
test_split_write (bool files)
{
  char dir[1024], policy[32], err[256];
  unsigned both = 0, neither = 0;

  for (unsigned seed = 1; seed <= 32; seed++) {
    struct zn_dev *d = new_device (files, dir, sizeof dir);
    struct zn_keep keep;
    unsigned char head[4 * ZN_SECTOR_SIZE], want[4 * ZN_SECTOR_SIZE];

    snprintf (policy, sizeof policy, "random:%u", seed);
    CHECK_EQ (zn_keep_parse (policy, false, &keep, err, sizeof err), 0);
    CHECK_EQ (write_tag (d, 0, 16, 1, false), 0);
    CHECK_EQ (write_tag (d, 4, 4, 2, true), 0);
    CHECK_EQ (zn_power_cycle_keep (d, &keep), 0);
    expect_data (d, 4, 4, 2);
    CHECK_EQ (zn_read (d, head, 0, 4), 0);
    fill_pattern (want, 0, 4, 1);
    if (memcmp (head, want, sizeof head) == 0) {
      expect_data (d, 8, 8, 1);
      both++;
    }
    else {
      expect_data (d, 0, 4, ZEROS);
      expect_data (d, 8, 8, ZEROS);
      neither++;
    }
    zn_dev_destroy (d);
    if (files)
      rm_tree (dir);
  }
  CHECK (both > 0 && neither > 0);
}

/* enumerate is replay's: one power cycle cannot leave every state. */
static void
test_enumerate_refused (void)
{
  char dir[1024], err[256];
  struct zn_dev *d = new_device (false, dir, sizeof dir);
  struct zn_keep keep;
  uint64_t size, dirty;

  CHECK_EQ (zn_keep_parse ("enumerate", true, &keep, err, sizeof err), 0);
  CHECK_EQ (write_tag (d, 0, 8, 1, false), 0);
  CHECK_EQ (zn_power_cycle_keep (d, &keep), -EINVAL);
  zn_cache_stats (d, &size, &dirty);
  CHECK_EQ (dirty, 8 * ZN_SECTOR_SIZE);
  expect_data (d, 0, 8, 1);
  zn_dev_destroy (d);
}

int
main (void)
{
  make_top ();
  test_enumerate_refused ();
  test_split_write (false);
  test_split_write (true);
  test_policies (false);
  test_policies (true);
  test_torn (false);
  test_torn (true);
  return 0;
}
