/* null_blk's bad blocks (configfs "badblocks"): ranges of 512-byte
 * sectors whatever the block size.  A read or write that overlaps one
 * fails with EIO and transfers nothing (6.1, 6.12); 7.3 can clear a range
 * when it is hit (badblocks_once) and transfer the part before it
 * (badblocks_partial_io).  Kept as a sorted array of
 * disjoint ranges; changes are rare, checks frequent, so a read-write lock
 * and a count that lets the data path skip the lock when there are none.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zoned-internal.h"

void
badblocks_init (struct zn_dev *dev)
{
  pthread_rwlock_init (&dev->bb_lock, NULL);
}

void
badblocks_free (struct zn_dev *dev)
{
  pthread_rwlock_destroy (&dev->bb_lock);
  free (dev->bb);
}

/* Whether [sector, sector + n) overlaps a bad range. */
bool
badblocks_hit (struct zn_dev *dev, uint64_t sector, uint64_t n)
{
  bool hit = false;

  if (atomic_load_explicit (&dev->nr_bb, memory_order_acquire) == 0)
    return false;
  pthread_rwlock_rdlock (&dev->bb_lock);
  for (size_t i = 0; i < dev->bb_used && dev->bb[i].start < sector + n; i++)
    if (dev->bb[i].end > sector) {
      hit = true;
      break;
    }
  pthread_rwlock_unlock (&dev->bb_lock);
  return hit;
}

static int badblocks_change (struct zn_dev *dev, uint64_t first,
                             uint64_t last, bool bad);

/* The kernel stores a range as entries of at most 512 sectors (BB_MAX_LEN)
 * and names the first entry an I/O meets.
 */
#define BB_MAX_LEN 512

/* null_handle_badblocks of 7.3: whether [sector, sector + n) meets a bad
 * range.  With badblocks_once the entry met is cleared; with
 * badblocks_partial_io *good is the part before that entry (its start
 * rounded down to the block size), which the request still transfers
 * before it fails.  Otherwise, and on 6.1 and 6.12, *good is 0.
 */
bool
badblocks_check (struct zn_dev *dev, uint64_t sector, uint64_t n,
                 uint64_t *good)
{
  uint64_t first = 0, end = 0, lbs = dev->geo.block_size >> ZN_SECTOR_SHIFT;
  bool hit = false;

  *good = 0;
  if (atomic_load_explicit (&dev->nr_bb, memory_order_acquire) == 0)
    return false;
  pthread_rwlock_rdlock (&dev->bb_lock);
  for (size_t i = 0; i < dev->bb_used && dev->bb[i].start < sector + n; i++)
    if (dev->bb[i].end > sector) {
      const struct zn_bb_range *r = &dev->bb[i];
      uint64_t at = r->start < sector ? sector : r->start;

      first = r->start + (at - r->start) / BB_MAX_LEN * BB_MAX_LEN;
      end = r->end - first < BB_MAX_LEN ? r->end : first + BB_MAX_LEN;
      hit = true;
      break;
    }
  pthread_rwlock_unlock (&dev->bb_lock);
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

/* Sets [first, last] bad (bad = true) or good, merging neighbours. */
static int
badblocks_change (struct zn_dev *dev, uint64_t first, uint64_t last, bool bad)
{
  uint64_t start = first, end = last + 1;
  struct zn_bb_range *out;
  size_t n = 0;

  if (first > last || last == UINT64_MAX)
    return -EINVAL;
  pthread_rwlock_wrlock (&dev->bb_lock);
  /* At most one more range than now (a clear can split one in two). */
  out = malloc ((dev->bb_used + 2) * sizeof *out);
  if (!out) {
    pthread_rwlock_unlock (&dev->bb_lock);
    return -ENOMEM;
  }
  for (size_t i = 0; i < dev->bb_used; i++) {
    struct zn_bb_range r = dev->bb[i];

    if (r.end < start || r.start > end || (!bad && (r.end == start || r.start == end))) {
      out[n++] = r;               /* apart (touching counts for merging) */
      continue;
    }
    if (bad) {                    /* absorb into the new range */
      if (r.start < start) start = r.start;
      if (r.end > end) end = r.end;
      continue;
    }
    if (r.start < start)          /* keep the parts outside the cleared one */
      out[n++] = (struct zn_bb_range) { r.start, start };
    if (r.end > end)
      out[n++] = (struct zn_bb_range) { end, r.end };
  }
  if (bad)
    out[n++] = (struct zn_bb_range) { start, end };
  /* Sorted by start (insertion sort: the array is small). */
  for (size_t i = 1; i < n; i++)
    for (size_t j = i; j > 0 && out[j - 1].start > out[j].start; j--) {
      struct zn_bb_range t = out[j];
      out[j] = out[j - 1];
      out[j - 1] = t;
    }
  free (dev->bb);
  dev->bb = out;
  dev->bb_used = n;
  atomic_store_explicit (&dev->nr_bb, n, memory_order_release);
  pthread_rwlock_unlock (&dev->bb_lock);
  return 0;
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

  pthread_rwlock_rdlock (&dev->bb_lock);
  n = dev->bb_used;
  for (size_t i = 0; i < n && i < max; i++) {
    first[i] = dev->bb[i].start;
    last[i] = dev->bb[i].end - 1;
  }
  pthread_rwlock_unlock (&dev->bb_lock);
  return n;
}
