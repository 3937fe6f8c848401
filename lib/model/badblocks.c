/* SPDX-License-Identifier: BSD-3-Clause */
/* null_blk's bad blocks (configfs "badblocks"): ranges of 512-byte
 * sectors whatever the block size.  A read or write that overlaps one
 * fails with EIO and transfers nothing (6.1, 6.12); 7.3 can clear the
 * entry met (badblocks_once) and transfer the part before it
 * (badblocks_partial_io).
 *
 * The table behaves as the kernel's struct badblocks, which null_blk
 * uses: one page of entries (ZN_BADBLOCKS_MAX with 4 KiB pages), each at
 * most ZN_BADBLOCKS_MAX_LEN sectors, sorted and disjoint.  A set merges
 * into a neighbour while the entry stays within the length limit; a long
 * range takes several entries.  When the table fills, a set stops where
 * it is (what was added stays) and fails with ENOSPC, and a clear that
 * would split an entry in a full table leaves that entry alone.  Being
 * bounded, the table is allocated once; lookups are a binary search.
 * Changes are rare and checks frequent: a read-write lock, and a count
 * that lets the data path skip the lock when there are none.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/dev.h"

struct zn_bb_range {
  uint64_t start, end;           /* sectors, [start, end) */
};

/* The kernel's struct badblocks: sorted, disjoint ranges, allocated at
 * the first set; nr mirrors used for the lockless check that there are
 * none.
 */
struct zn_badblocks {
  pthread_rwlock_t lock;
  struct zn_bb_range *ranges;
  size_t used;
  atomic_size_t nr;
};

int
badblocks_init (struct zn_dev *dev)
{
  dev->bb = calloc (1, sizeof *dev->bb);
  if (dev->bb == NULL)
    return -ENOMEM;
  pthread_rwlock_init (&dev->bb->lock, NULL);
  return 0;
}

void
badblocks_free (struct zn_dev *dev)
{
  if (dev->bb == NULL)
    return;
  pthread_rwlock_destroy (&dev->bb->lock);
  free (dev->bb->ranges);
  free (dev->bb);
}

/* The last entry starting at or before sector, or -1. */
static ptrdiff_t
bb_find (const struct zn_dev *dev, uint64_t sector)
{
  size_t lo = 0, hi = dev->bb->used;

  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;

    if (dev->bb->ranges[mid].start <= sector)
      lo = mid + 1;
    else
      hi = mid;
  }
  return (ptrdiff_t) lo - 1;
}

static int badblocks_change (struct zn_dev *dev, uint64_t first,
                             uint64_t last, bool bad);

/* null_handle_badblocks of 7.3: whether [sector, sector + n) meets a bad
 * entry, and which: the first it meets, as the kernel names it.  With
 * badblocks_once that entry is cleared; with badblocks_partial_io *good
 * is the part before it (its start rounded down to the block size),
 * which the request still transfers before it fails.  Otherwise, and on
 * 6.1 and 6.12, *good is 0.
 */
bool
badblocks_check (struct zn_dev *dev, uint64_t sector, uint64_t n,
                 uint64_t *good)
{
  uint64_t first = 0, end = 0, lbs = dev->geo.block_size >> ZN_SECTOR_SHIFT;
  bool hit = false;
  ptrdiff_t i;

  *good = 0;
  if (n == 0 || atomic_load_explicit (&dev->bb->nr, memory_order_acquire) == 0)
    return false;
  pthread_rwlock_rdlock (&dev->bb->lock);
  /* Entries are disjoint and sorted: the one starting at or before the
   * request's first sector, if it reaches into it, else the next one.
   */
  i = bb_find (dev, sector);
  if (i < 0 || dev->bb->ranges[i].end <= sector)
    i++;
  if ((size_t) i < dev->bb->used && dev->bb->ranges[i].start < sector + n
      && dev->bb->ranges[i].end > sector) {
    first = dev->bb->ranges[i].start;
    end = dev->bb->ranges[i].end;
    hit = true;
  }
  pthread_rwlock_unlock (&dev->bb->lock);
  if (!hit)
    return false;
  if (dev->badblocks_once)
    badblocks_change (dev, first, end - 1, false);
  if (dev->badblocks_partial_io) {
    first -= first % lbs;
    if (sector < first)
      *good = first - sector;
  }
  return true;
}

static uint64_t
min_u64 (uint64_t a, uint64_t b)
{
  return a < b ? a : b;
}

static void
bb_insert (struct zn_dev *dev, size_t at, uint64_t start, uint64_t end)
{
  memmove (&dev->bb->ranges[at + 1], &dev->bb->ranges[at],
           (dev->bb->used - at) * sizeof dev->bb->ranges[0]);
  dev->bb->ranges[at] = (struct zn_bb_range) { start, end };
  dev->bb->used++;
}

static void
bb_delete (struct zn_dev *dev, size_t at)
{
  memmove (&dev->bb->ranges[at], &dev->bb->ranges[at + 1],
           (dev->bb->used - at - 1) * sizeof dev->bb->ranges[0]);
  dev->bb->used--;
}

/* Entries at and after i join when they touch and fit in one entry. */
static bool
bb_try_join (struct zn_dev *dev, ptrdiff_t i)
{
  struct zn_bb_range *a, *b;

  if (i < 0 || (size_t) i + 1 >= dev->bb->used)
    return false;
  a = &dev->bb->ranges[i];
  b = &dev->bb->ranges[i + 1];
  if (a->end != b->start
      || (a->end - a->start) + (b->end - b->start) > ZN_BADBLOCKS_MAX_LEN)
    return false;
  a->end = b->end;
  bb_delete (dev, i + 1);
  return true;
}

/* Marks [s, s + n) bad from its head, one piece a step, as the kernel:
 * a piece already bad is skipped, one just after an entry with room
 * extends it (up to the next entry), anything else takes a new entry
 * (up to the next entry and the length limit).
 */
static int
bb_set_locked (struct zn_dev *dev, uint64_t s, uint64_t n)
{
  ptrdiff_t i = -1;

  while (n > 0) {
    uint64_t take;
    struct zn_bb_range *e;

    if (dev->bb->used == ZN_BADBLOCKS_MAX)
      return -ENOSPC;
    i = bb_find (dev, s);
    e = i >= 0 ? &dev->bb->ranges[i] : NULL;
    /* Two touching entries that fit in one are joined before going on. */
    if (e && e->start == s && bb_try_join (dev, i - 1))
      continue;
    if (e && s < e->end)
      take = min_u64 (n, e->end - s);
    else if (e && s == e->end && e->end - e->start < ZN_BADBLOCKS_MAX_LEN) {
      take = min_u64 (n, ZN_BADBLOCKS_MAX_LEN - (e->end - e->start));
      if ((size_t) i + 1 < dev->bb->used)
        take = min_u64 (take, dev->bb->ranges[i + 1].start - e->end);
      e->end += take;
    }
    else {
      take = min_u64 (n, ZN_BADBLOCKS_MAX_LEN);
      if ((size_t) (i + 1) < dev->bb->used)
        take = min_u64 (take, dev->bb->ranges[i + 1].start - s);
      bb_insert (dev, (size_t) (i + 1), s, s + take);
      i++;
    }
    s += take;
    n -= take;
  }
  bb_try_join (dev, i);
  return 0;
}

/* Marks [s, s + n) good.  Splitting an entry needs a free one; in a full
 * table that entry stays bad, and the clear fails only if it changed
 * nothing else.
 */
static int
bb_clear_locked (struct zn_dev *dev, uint64_t s, uint64_t n)
{
  bool done = false;

  while (n > 0) {
    ptrdiff_t i = bb_find (dev, s);
    struct zn_bb_range *e = i >= 0 ? &dev->bb->ranges[i] : NULL;
    uint64_t take = n;

    if (e && e->start < s && e->end > s + n) {      /* inside: split */
      if (dev->bb->used == ZN_BADBLOCKS_MAX)
        break;
      bb_insert (dev, (size_t) i + 1, s + n, e->end);
      dev->bb->ranges[i].end = s;
    }
    else if (e && s < e->end) {                     /* head or tail */
      take = min_u64 (n, e->end - s);
      if (e->start < s)
        e->end = s;
      else if (e->end - e->start > take)
        e->start += take;
      else
        bb_delete (dev, (size_t) i);
    }
    else if ((size_t) (i + 1) < dev->bb->used
             && dev->bb->ranges[i + 1].start - s < n)       /* a gap, then bad */
      take = dev->bb->ranges[i + 1].start - s;
    s += take;
    n -= take;
    done = true;
  }
  return done ? 0 : -ENOSPC;
}

static int
badblocks_change (struct zn_dev *dev, uint64_t first, uint64_t last, bool bad)
{
  int r;

  if (first > last || last == UINT64_MAX)
    return -EINVAL;
  pthread_rwlock_wrlock (&dev->bb->lock);
  if (dev->bb->ranges == NULL) {
    dev->bb->ranges = malloc (ZN_BADBLOCKS_MAX * sizeof *dev->bb->ranges);
    if (dev->bb->ranges == NULL) {
      pthread_rwlock_unlock (&dev->bb->lock);
      return -ENOMEM;
    }
  }
  r = bad ? bb_set_locked (dev, first, last - first + 1)
          : bb_clear_locked (dev, first, last - first + 1);
  atomic_store_explicit (&dev->bb->nr, dev->bb->used, memory_order_release);
  pthread_rwlock_unlock (&dev->bb->lock);
  /* Kept with backing_dir, even the part of a set that did not fit. */
  if (badblocks_save (dev) < 0 && r == 0)
    r = -EIO;
  return r;
}

int
badblocks_save (struct zn_dev *dev)
{
  struct zn_bb_list *bb = malloc (sizeof *bb);
  int r;

  if (bb == NULL)
    return -EIO;
  bb->nr = zn_badblocks_list (dev, bb->first, bb->last, ZN_BADBLOCKS_MAX);
  if (bb->nr > ZN_BADBLOCKS_MAX)
    bb->nr = ZN_BADBLOCKS_MAX;
  r = dev->backend->save_meta (dev, bb);
  free (bb);
  return r;
}

int
zn_badblocks_set (struct zn_dev *dev, uint64_t first, uint64_t last)
{
  return badblocks_change (dev, first, last, true);
}

int
zn_badblocks_clear (struct zn_dev *dev, uint64_t first, uint64_t last)
{
  return badblocks_change (dev, first, last, false);
}

/* configfs syntax: "+A-B" sets and "-A-B" clears the inclusive range. */
int
zn_badblocks_parse (struct zn_dev *dev, const char *spec)
{
  unsigned long long a, b;
  char sign, dash, extra;

  if (sscanf (spec, " %c%llu%c%llu %c", &sign, &a, &dash, &b, &extra) != 4
      || (sign != '+' && sign != '-') || dash != '-')
    return -EINVAL;
  return sign == '+' ? zn_badblocks_set (dev, a, b)
                     : zn_badblocks_clear (dev, a, b);
}

size_t
zn_badblocks_list (struct zn_dev *dev, uint64_t *first, uint64_t *last,
                   size_t max)
{
  size_t n;

  pthread_rwlock_rdlock (&dev->bb->lock);
  n = dev->bb->used;
  for (size_t i = 0; i < n && i < max; i++) {
    first[i] = dev->bb->ranges[i].start;
    last[i] = dev->bb->ranges[i].end - 1;
  }
  pthread_rwlock_unlock (&dev->bb->lock);
  return n;
}
