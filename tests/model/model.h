/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers of the device model's unit tests (test-model-config.c,
 * test-model-zones.c, test-model-io.c): configurations, zone ops,
 * patterned writes and snapshots of the whole zone state.
 *
 * Most tests use 1 MiB zones (2048 sectors) so that the zone numbers in the
 * comments map to sectors as zone * 2048.
 */
#ifndef ZONEDNULL_TESTS_MODEL_H
#define ZONEDNULL_TESTS_MODEL_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <strings.h>

#include "model/zoned.h"
#include "../common/check.h"
#include "../common/dev.h"

#define Z 2048                  /* sectors in a 1 MiB zone */
#define MAX_ZONES 64

/* ------------------------------------------------------------------ */
/* Helpers */

static inline struct zn_config
cfg (uint64_t size, uint64_t zone_size, uint64_t zone_cap, uint32_t conv,
     uint32_t max_open, uint32_t max_active)
{
  struct zn_config c = geometry_config (size, zone_size, zone_cap, conv, 512);

  c.zone_max_open = max_open;
  c.zone_max_active = max_active;
  c.memory_backed = true;
  return c;
}

static inline struct zn_dev *
mk (uint64_t size, uint64_t zone_size, uint64_t zone_cap, uint32_t conv,
    uint32_t max_open, uint32_t max_active)
{
  struct zn_config c = cfg (size, zone_size, zone_cap, conv,
                            max_open, max_active);
  return create (&c);
}

/* The same without memory backing, for large devices. */
static inline struct zn_dev *
mk_nomem (uint64_t size, uint64_t zone_size, uint64_t zone_cap,
          uint32_t conv, uint32_t max_open, uint32_t max_active)
{
  struct zn_config c = cfg (size, zone_size, zone_cap, conv,
                            max_open, max_active);
  c.memory_backed = false;
  return create (&c);
}

/* Expects zn_dev_create to fail with EINVAL and a message naming param. */
#define EXPECT_BAD_CONFIG(c, param)                                     \
  do {                                                                  \
    char bc_err_[256] = "";                                             \
    errno = 0;                                                          \
    CHECK (zn_dev_create ((c), bc_err_, sizeof bc_err_) == NULL);       \
    CHECK_EQ (errno, EINVAL);                                           \
    if (strstr (bc_err_, (param)) == NULL)                              \
      fprintf (stderr, "message \"%s\" does not name %s\n",             \
               bc_err_, (param));                                       \
    CHECK (strstr (bc_err_, (param)) != NULL);                          \
    errno = 0;                                                          \
    CHECK (zn_dev_create ((c), NULL, 0) == NULL);                       \
    CHECK_EQ (errno, EINVAL);                                           \
  } while (0)

static inline uint64_t
zstart (struct zn_dev *d, uint32_t zone)
{
  return (uint64_t) zone * zn_dev_geometry (d)->zone_sectors;
}

static inline struct zn_zone
zone_at (struct zn_dev *d, uint32_t zone)
{
  struct zn_zone z;

  memset (&z, 0xAB, sizeof z);
  CHECK_EQ (zn_report_zones (d, zstart (d, zone), &z, 1), 1);
  return z;
}

#define EXPECT_ZONE(d, zone, cond_, wp_off)                             \
  do {                                                                  \
    struct zn_zone ez_ = zone_at ((d), (zone));                         \
    CHECK_EQ (ez_.cond, (cond_));                                       \
    CHECK_EQ (ez_.wp - ez_.start, (wp_off));                            \
  } while (0)

#define EXPECT_ZONE_NO_WP(d, zone, cond_)                               \
  do {                                                                  \
    struct zn_zone ez_ = zone_at ((d), (zone));                         \
    CHECK_EQ (ez_.cond, (cond_));                                       \
    CHECK (ez_.wp == UINT64_MAX);                                       \
  } while (0)

#define EXPECT_COUNTERS(d, imp_, exp_, closed_)                         \
  do {                                                                  \
    struct zn_counters ec_;                                             \
    memset (&ec_, 0xAB, sizeof ec_);                                    \
    zn_get_counters ((d), &ec_);                                        \
    CHECK_EQ (ec_.imp_open, (imp_));                                    \
    CHECK_EQ (ec_.exp_open, (exp_));                                    \
    CHECK_EQ (ec_.closed, (closed_));                                   \
  } while (0)

/* A zone op on exactly one zone. */
static inline int
op1 (struct zn_dev *d, enum zn_zone_op op, uint32_t zone)
{
  return zn_zone_mgmt (d, op, zstart (d, zone),
                       zn_dev_geometry (d)->zone_sectors);
}

/* A zone op on zones [first, first+count). */
static inline int
opn (struct zn_dev *d, enum zn_zone_op op, uint32_t first, uint32_t count)
{
  return zn_zone_mgmt (d, op, zstart (d, first),
                       (uint64_t) count * zn_dev_geometry (d)->zone_sectors);
}

static inline void *
xmalloc (size_t n)
{
  void *p = malloc (n ? n : 1);
  CHECK (p != NULL);
  return p;
}

static inline int
wr (struct zn_dev *d, uint64_t sector, uint64_t nr, unsigned tag)
{
  void *buf = xmalloc (nr * ZN_SECTOR_SIZE);
  int r;

  fill_pattern (buf, sector, nr, tag);
  r = zn_write (d, buf, sector, nr);
  free (buf);
  return r;
}

/* Write at an offset relative to a zone's start. */
static inline int
wrz (struct zn_dev *d, uint32_t zone, uint64_t off, uint64_t nr)
{
  return wr (d, zstart (d, zone) + off, nr, 0);
}

/* Reads [sector, sector+nr) and checks it holds the pattern with tag. */
static inline bool
reads_pattern (struct zn_dev *d, uint64_t sector, uint64_t nr, unsigned tag)
{
  unsigned char *buf = xmalloc (nr * ZN_SECTOR_SIZE);
  unsigned char *want = xmalloc (nr * ZN_SECTOR_SIZE);
  bool ok;
  int r;

  memset (buf, 0xA5, nr * ZN_SECTOR_SIZE);
  fill_pattern (want, sector, nr, tag);
  r = zn_read (d, buf, sector, nr);
  ok = r == 0 && memcmp (buf, want, nr * ZN_SECTOR_SIZE) == 0;
  if (!ok)
    fprintf (stderr, "read %" PRIu64 "+%" PRIu64 ": r=%d, pattern %u "
             "expected\n", sector, nr, r, tag);
  free (want);
  free (buf);
  return ok;
}

/* Reads [sector, sector+nr) and checks every byte is b. */
static inline bool
reads_fill (struct zn_dev *d, uint64_t sector, uint64_t nr, unsigned char b)
{
  unsigned char *buf = xmalloc (nr * ZN_SECTOR_SIZE);
  bool ok;
  uint64_t i;
  int r;

  memset (buf, 0xA5, nr * ZN_SECTOR_SIZE);
  r = zn_read (d, buf, sector, nr);
  ok = r == 0;
  for (i = 0; ok && i < nr * ZN_SECTOR_SIZE; i++)
    if (buf[i] != b) {
      fprintf (stderr, "read %" PRIu64 "+%" PRIu64 ": byte %" PRIu64
               " is 0x%02x, expected 0x%02x\n", sector, nr, i, buf[i], b);
      ok = false;
    }
  if (r != 0)
    fprintf (stderr, "read %" PRIu64 "+%" PRIu64 ": r=%d\n", sector, nr, r);
  free (buf);
  return ok;
}

/* The whole observable state, to check that failed ops change nothing. */
struct snapshot {
  unsigned n;
  struct zn_zone zones[MAX_ZONES];
  struct zn_counters c;
};

static inline void
snap (struct zn_dev *d, struct snapshot *s)
{
  memset (s, 0, sizeof *s);
  s->n = zn_report_zones (d, 0, s->zones, MAX_ZONES);
  CHECK_EQ (s->n, zn_dev_geometry (d)->nr_zones);
  zn_get_counters (d, &s->c);
}

static inline bool
same_state (struct zn_dev *d, const struct snapshot *before)
{
  struct snapshot now;
  unsigned i;

  snap (d, &now);
  if (now.c.imp_open != before->c.imp_open
      || now.c.exp_open != before->c.exp_open
      || now.c.closed != before->c.closed) {
    fprintf (stderr, "counters changed\n");
    return false;
  }
  for (i = 0; i < now.n; i++)
    if (now.zones[i].cond != before->zones[i].cond
        || now.zones[i].wp != before->zones[i].wp) {
      fprintf (stderr, "zone %u changed\n", i);
      return false;
    }
  return true;
}


/* c4 geometry: zone 0 conventional, 1..7 sequential, open 2, active 3. */
static inline struct zn_dev *
mk_c4 (void)
{
  struct zn_dev *d = mk (8, 1, 1, 1, 2, 3);
  CHECK_EQ (zn_dev_geometry (d)->max_open, 2);
  CHECK_EQ (zn_dev_geometry (d)->max_active, 3);
  return d;
}

#endif
