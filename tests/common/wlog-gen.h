/* SPDX-License-Identifier: BSD-3-Clause */
/* A write log made by the tests (lib/wire/wlog-format.h's layout), before and
 * apart from the device's own writer: entries written as asked, a random
 * workload that stays valid, and corrupt entries on request.  It keeps
 * every entry it wrote, in the model's 512-byte sectors, for the tests'
 * own reading of doc/power-fail.md's rules.
 */
#ifndef ZONEDNULL_TESTS_WLOG_GEN_H
#define ZONEDNULL_TESTS_WLOG_GEN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "wire/wlog-format.h"

struct wg_ent {
  uint64_t flags;
  uint32_t zone;
  uint64_t sector, nr;          /* 512-byte sectors */
  uint64_t ref;
  unsigned char *data;          /* nr << 9 bytes, or NULL */
  char mark[ZN_WLOG_MARK_MAX + 1];
};

struct wg {
  FILE *fp;
  uint32_t bs, spb;
  uint64_t zone_sectors, zone_cap; /* 512-byte sectors */
  uint32_t nr_zones, nr_conv;
  uint64_t *wp;                 /* per zone: a sequential zone's wp, a
                                   conventional zone's next free sector */
  struct wg_ent *ents;
  uint64_t n, cap;
  uint64_t rng;
};

/* A log of a device of size_mib in zones of zone_mib (capacity cap_mib),
 * nr_conv conventional, logical blocks of bs bytes; entry 0 written.
 * extra: words added to the geometry text, or NULL.
 */
void wg_open (struct wg *g, const char *path, uint32_t bs, unsigned size_mib,
              unsigned zone_mib, unsigned cap_mib, unsigned nr_conv,
              const char *extra);
/* Writes nr_entries into the super and closes; frees what it kept. */
void wg_close (struct wg *g);
void wg_free (struct wg *g);

/* One entry as given (sectors in 512-byte units, data of nr sectors or
 * NULL for none): for the corrupt ones too.  zero is bytes 32-39.
 */
void wg_raw (struct wg *g, uint64_t flags, uint64_t sector, uint64_t nr,
             uint64_t data_len, uint64_t zero, uint64_t ref,
             const void *data);
/* Random data written at sector (and its wp moved), as a write or an
 * append, with or without FUA.
 */
void wg_write (struct wg *g, uint64_t sector, uint64_t nr, uint64_t flags);
void wg_zone_op (struct wg *g, uint64_t flags, uint32_t zone);
void wg_flush (struct wg *g, uint64_t ref);
void wg_mark (struct wg *g, const char *name);

/* n random requests that a device would have completed: writes at the wp
 * and appends in sequential zones, writes to fresh ranges of the
 * conventional zones, FUA, flushes, resets, finishes, opens, closes,
 * power cycles and marks "m1", "m2", ...
 */
void wg_workload (struct wg *g, uint64_t seed, unsigned n);

uint64_t wg_rand (struct wg *g);

#endif
