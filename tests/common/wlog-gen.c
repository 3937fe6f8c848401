/* SPDX-License-Identifier: BSD-3-Clause */
/* The tests' write log maker (wlog-gen.h). */
#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "wlog-gen.h"

uint64_t
wg_rand (struct wg *g)
{
  uint64_t x = (g->rng += UINT64_C (0x9e3779b97f4a7c15));

  x = (x ^ (x >> 30)) * UINT64_C (0xbf58476d1ce4e5b9);
  x = (x ^ (x >> 27)) * UINT64_C (0x94d049bb133111eb);
  return x ^ (x >> 31);
}

static void
put (struct wg *g, const void *buf, size_t len)
{
  CHECK (fwrite (buf, 1, len, g->fp) == len);
}

static struct wg_ent *
keep (struct wg *g)
{
  if (g->n == g->cap) {
    g->cap = g->cap ? 2 * g->cap : 64;
    g->ents = realloc (g->ents, g->cap * sizeof *g->ents);
    CHECK (g->ents != NULL);
  }
  memset (&g->ents[g->n], 0, sizeof g->ents[g->n]);
  return &g->ents[g->n++];
}

void
wg_raw (struct wg *g, uint64_t flags, uint64_t sector, uint64_t nr,
        uint64_t data_len, uint64_t zero, uint64_t ref, const void *data)
{
  unsigned char blk[4096] = { 0 };
  struct zn_wlog_entry e = {
    .sector = htole64 (sector / g->spb), .nr_sectors = htole64 (nr / g->spb),
    .flags = htole64 (flags), .data_len = htole64 (data_len),
    .zero = htole64 (zero), .ref = htole64 (ref),
  };
  struct wg_ent *k = keep (g);

  k->flags = flags;
  k->sector = sector;
  k->nr = nr;
  k->ref = ref;
  k->zone = (uint32_t) (sector / g->zone_sectors);
  memcpy (blk, &e, sizeof e);
  if (flags & ZN_WLOG_MARK) {
    size_t at = flags == ZN_WLOG_MARK ? 32 : sizeof e;

    CHECK (data_len < g->bs - at);
    memcpy (blk + at, data, data_len);
    snprintf (k->mark, sizeof k->mark, "%.*s", (int) data_len,
              (const char *) data);
  }
  put (g, blk, g->bs);
  if (data && !(flags & ZN_WLOG_MARK)) {
    k->data = malloc (nr << 9);
    CHECK (k->data != NULL);
    memcpy (k->data, data, nr << 9);
    put (g, data, nr << 9);
  }
}

void
wg_open (struct wg *g, const char *path, uint32_t bs, unsigned size_mib,
         unsigned zone_mib, unsigned cap_mib, unsigned nr_conv,
         const char *extra)
{
  struct zn_wlog_super s = { .magic = htole64 (ZN_WLOG_MAGIC),
                             .version = htole64 (ZN_WLOG_VERSION),
                             .sectorsize = htole32 (bs) };
  unsigned char blk[4096] = { 0 };
  char text[512];

  memset (g, 0, sizeof *g);
  g->fp = fopen (path, "w");
  CHECK (g->fp != NULL);
  g->bs = bs;
  g->spb = bs >> 9;
  g->zone_sectors = (uint64_t) zone_mib << 11;
  g->zone_cap = (uint64_t) cap_mib << 11;
  g->nr_zones = (size_mib + zone_mib - 1) / zone_mib;
  g->nr_conv = nr_conv;
  g->wp = calloc (g->nr_zones, sizeof *g->wp);
  CHECK (g->wp != NULL);
  for (uint32_t z = 0; z < g->nr_zones; z++)
    g->wp[z] = z * g->zone_sectors;
  memcpy (blk, &s, sizeof s);
  put (g, blk, bs);
  snprintf (text, sizeof text, "blocksize=%u zone_size=%u zone_capacity=%u "
            "zone_nr_conv=%u size=%u nr_zones=%u cache=1 kernel=6.1%s%s",
            bs, zone_mib, cap_mib, nr_conv, size_mib, g->nr_zones,
            extra ? " " : "", extra ? extra : "");
  wg_raw (g, ZN_WLOG_MARK | ZN_WLOG_GEOMETRY, 0, 0, strlen (text), 0, 0,
          text);
}

void
wg_free (struct wg *g)
{
  for (uint64_t i = 0; i < g->n; i++)
    free (g->ents[i].data);
  free (g->ents);
  free (g->wp);
  g->ents = NULL;
  g->wp = NULL;
}

void
wg_close (struct wg *g)
{
  uint64_t n = htole64 (g->n);

  CHECK (fseek (g->fp, 16, SEEK_SET) == 0);
  put (g, &n, sizeof n);
  CHECK (fclose (g->fp) == 0);
  g->fp = NULL;
}

void
wg_write (struct wg *g, uint64_t sector, uint64_t nr, uint64_t flags)
{
  unsigned char *buf = malloc (nr << 9);
  uint32_t z = (uint32_t) (sector / g->zone_sectors);

  CHECK (buf != NULL);
  for (uint64_t i = 0; i < nr << 9; i += 8) {
    uint64_t r = wg_rand (g) | 1;       /* never a block of zeros */

    memcpy (buf + i, &r, 8);
  }
  wg_raw (g, flags, sector, nr, 0, 0, 0, buf);
  if (g->wp[z] < sector + nr)
    g->wp[z] = sector + nr;
  free (buf);
}

void
wg_zone_op (struct wg *g, uint64_t flags, uint32_t zone)
{
  uint64_t start = zone * g->zone_sectors;

  wg_raw (g, flags, start, flags & ZN_WLOG_RESET ? g->zone_sectors : 0, 0, 0,
          0, NULL);
  if (flags & ZN_WLOG_RESET)
    g->wp[zone] = start;
  if (flags & ZN_WLOG_FINISH)
    g->wp[zone] = start + g->zone_cap;
}

void
wg_flush (struct wg *g, uint64_t ref)
{
  wg_raw (g, ZN_WLOG_FLUSH, 0, 0, 0, 0, ref, NULL);
}

void
wg_mark (struct wg *g, const char *name)
{
  wg_raw (g, ZN_WLOG_MARK, 0, 0, strlen (name), 0, 0, name);
}

static void
random_seq (struct wg *g, uint32_t z, uint64_t fua)
{
  uint64_t start = z * g->zone_sectors, room = start + g->zone_cap - g->wp[z];
  /* One draw a statement: C leaves the order of two in one expression
   * open, and a seed must make the same log in every build.
   */
  uint64_t most = wg_rand (g) % 8 ? 8 : 64;
  uint64_t nr = (1 + wg_rand (g) % most) * g->spb;
  unsigned pick = wg_rand (g) % 16;

  /* The model splits a write at max_sectors (248 of 4096-byte blocks),
   * and logs its parts: no entry is longer.
   */
  if (nr > 248)
    nr = 248;

  if (pick == 0 || room == 0)
    wg_zone_op (g, ZN_WLOG_DISCARD | ZN_WLOG_RESET, z);
  else if (pick == 1)
    wg_zone_op (g, ZN_WLOG_FINISH, z);
  else if (pick == 2)
    wg_zone_op (g, ZN_WLOG_OPEN, z);
  else if (pick == 3 && g->wp[z] > start)
    wg_zone_op (g, ZN_WLOG_CLOSE, z);
  else
    wg_write (g, g->wp[z], nr < room ? nr : room,
              fua | (pick < 7 ? ZN_WLOG_APPEND : 0));
}

void
wg_workload (struct wg *g, uint64_t seed, unsigned n)
{
  unsigned marks = 0;

  g->rng = seed;
  for (unsigned i = 0; i < n; i++) {
    unsigned pick = wg_rand (g) % 100;
    uint32_t z = (uint32_t) (wg_rand (g) % g->nr_zones);
    uint64_t fua = wg_rand (g) % 5 == 0 ? ZN_WLOG_FUA : 0;
    char name[16];

    if (pick < 8) {
      uint64_t back = wg_rand (g) % (g->n < 4 ? g->n : 4);

      wg_flush (g, g->n - back);
    }
    else if (pick < 10) {
      snprintf (name, sizeof name, "m%u", ++marks);
      wg_mark (g, name);
    }
    else if (pick < 11)
      wg_raw (g, ZN_WLOG_POWER, 0, 0, 0, 0, 0, NULL);
    else if (z >= g->nr_conv)
      random_seq (g, z, fua);
    else {
      uint64_t end = (z + 1) * g->zone_sectors;
      uint64_t nr = (1 + wg_rand (g) % 8) * g->spb;

      /* Fresh ranges, so that each write's survival shows. */
      if (g->wp[z] + nr <= end)
        wg_write (g, g->wp[z], nr, fua);
    }
  }
}
