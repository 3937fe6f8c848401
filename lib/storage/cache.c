/* SPDX-License-Identifier: BSD-3-Clause */
/* null_blk's volatile write cache (cache_size, memory-backed only), as far
 * as it can be observed: data written without FUA and not flushed is lost
 * when the device is powered off and on.
 *
 * A power-on rebuilds every sequential zone EMPTY, and a sequential zone
 * reads 0xFF from its write pointer on, so what the cache held for a
 * sequential zone can never be read after a power cycle.  Only
 * conventional zones can show the loss.  So instead of a second copy of
 * the data, writes to conventional zones keep an undo record (the bytes
 * they overwrote) until the cache writes them back: FLUSH writes back
 * everything, FUA writes back their own range, and a full cache writes
 * back its oldest records.  A power cycle replays the records that are
 * left, newest first.  Reads see the newest data either way.
 *
 * With backing_dir the records are the other way round: they hold the
 * new data, which reaches the zone file only at write-back.  So a power
 * cycle, or a process that dies, loses exactly the writes neither flushed
 * nor written with FUA, in every zone: the files hold the rest, and a
 * sequential zone comes back with its wp at its last durable byte.  Reads
 * lay the records over the file, oldest first.
 *
 * A power cycle may keep some of those writes instead (zn_power_cycle_keep,
 * doc/power-fail.md's section 2): then only the records of the writes it
 * drops are undone, or only those of the writes it keeps written back.
 *
 * So the cache is a back end (backend.h) on top of another, with two
 * tables: cache_undo_backend over pages, cache_file_backend over a store.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "storage/storage.h"
#include "model/dev.h"

struct zn_undo {
  struct zn_undo *prev, *next;   /* oldest at dev->cache->head */
  uint32_t zone;
  uint64_t off, len;             /* bytes within the zone */
  uint64_t write;                /* which write: a FUA can split its
                                    record in two (split_undo) */
  bool keep;                     /* survives the power cycle */
  unsigned char *old;            /* the bytes the write overwrote; with
                                    backing_dir the bytes it wrote */
};

/* The cache's state, dev->cache, which only this file reads. */
struct zn_cache {
  pthread_mutex_t lock;
  uint64_t bytes;                /* cache_size */
  uint64_t dirty;
  struct zn_undo *head, *tail;
  uint32_t *count;               /* backing_dir: records a zone has */
  uint64_t write_id;             /* the last write given a record */
  /* A power cycle's scratch: two counts a zone (keep_records). */
  uint64_t *keep_counts;
  const struct zn_backend *under; /* what the cache is on */
};

static void
unlink_undo (struct zn_dev *dev, struct zn_undo *u)
{
  if (u->prev)
    u->prev->next = u->next;
  else
    dev->cache->head = u->next;
  if (u->next)
    u->next->prev = u->prev;
  else
    dev->cache->tail = u->prev;
  dev->cache->dirty -= u->len;
  if (dev->cache->count)
    dev->cache->count[u->zone]--;
  free (u->old);
  free (u);
}

static void
append_undo (struct zn_dev *dev, struct zn_undo *u)
{
  u->next = NULL;
  u->prev = dev->cache->tail;
  if (dev->cache->tail)
    dev->cache->tail->next = u;
  else
    dev->cache->head = u;
  dev->cache->tail = u;
  dev->cache->dirty += u->len;
  if (dev->cache->count)
    dev->cache->count[u->zone]++;
}

/* The newest record, for len bytes at off of zone zno, for the caller to
 * fill; NULL without memory.
 */
static struct zn_undo *
new_record (struct zn_dev *dev, uint32_t zno, uint64_t off, uint64_t len)
{
  struct zn_undo *u = calloc (1, sizeof *u);

  if (!u || !(u->old = malloc (len))) {
    free (u);
    return NULL;
  }
  u->zone = zno;
  u->off = off;
  u->len = len;
  u->write = ++dev->cache->write_id;
  append_undo (dev, u);
  return u;
}

/* A copy of bytes [from, to) of u, placed after u in the list. */
static int
split_undo (struct zn_dev *dev, struct zn_undo *u, uint64_t from, uint64_t to)
{
  struct zn_undo *v = calloc (1, sizeof *v);

  if (!v || !(v->old = malloc (to - from))) {
    free (v);
    return -ENOMEM;
  }
  v->zone = u->zone;
  v->write = u->write;
  v->off = from;
  v->len = to - from;
  memcpy (v->old, u->old + (from - u->off), v->len);
  v->prev = u;
  v->next = u->next;
  if (u->next)
    u->next->prev = v;
  else
    dev->cache->tail = v;
  u->next = v;
  dev->cache->dirty += v->len;
  if (dev->cache->count)
    dev->cache->count[v->zone]++;
  return 0;
}

/* Makes [off, off + len) of zone zno durable: cuts it out of every undo
 * record, keeping the parts outside.
 */
static int
write_back_range (struct zn_dev *dev, uint32_t zno, uint64_t off, uint64_t len)
{
  uint64_t end = off + len;

  for (struct zn_undo *u = dev->cache->head, *next; u; u = next) {
    uint64_t uend = u->off + u->len;

    next = u->next;
    if (u->zone != zno || uend <= off || u->off >= end)
      continue;
    if (u->off < off) {                   /* keep the head ... */
      if (uend > end) {                   /* ... and the tail */
        if (split_undo (dev, u, end, uend) < 0)
          return -ENOMEM;
        next = u->next->next;
      }
      dev->cache->dirty -= uend - off;
      u->len = off - u->off;
    }
    else if (uend > end) {                /* keep the tail */
      memmove (u->old, u->old + (end - u->off), uend - end);
      dev->cache->dirty -= end - u->off;
      u->len = uend - end;
      u->off = end;
    }
    else
      unlink_undo (dev, u);
  }
  return 0;
}

/* The back end under the cache: the zone file gets a record at
 * write-back.
 */
static int
write_back (struct zn_dev *dev, struct zn_undo *u)
{
  int ret = dev->cache->under->write (dev, &dev->zones[u->zone], u->off,
                                     u->old, u->len, false);

  if (ret == 0)
    unlink_undo (dev, u);
  return ret;
}

/* backing_dir: every record of zone zno into its file, oldest first. */
static int
write_back_zone (struct zn_dev *dev, uint32_t zno)
{
  for (struct zn_undo *u = dev->cache->head, *next; u; u = next) {
    int ret;

    next = u->next;
    if (u->zone == zno && (ret = write_back (dev, u)) != 0)
      return ret;
  }
  return 0;
}

static uint32_t
zone_index (struct zn_dev *dev, struct zone *z)
{
  return (uint32_t) (z - dev->zones);
}

static int
under_read (struct zn_dev *dev, struct zone *z, uint64_t off, void *buf,
            uint64_t len, uint64_t valid)
{
  return dev->cache->under->read (dev, z, off, buf, len, valid);
}

static int
under_reset (struct zn_dev *dev, struct zone *z)
{
  return dev->cache->under->reset (dev, z);
}

static int
under_finish (struct zn_dev *dev, struct zone *z)
{
  return dev->cache->under->finish (dev, z);
}

static void
under_set_cond (struct zn_dev *dev, struct zone *z, uint8_t cond)
{
  dev->cache->under->set_cond (dev, z, cond);
}

static int
under_save_meta (struct zn_dev *dev, const struct zn_bb_list *bb)
{
  return dev->cache->under->save_meta (dev, bb);
}

/* The records of one write lie side by side: a split puts its copy right
 * after the record, and new records go at the end.
 */
static bool
same_write (const struct zn_undo *u)
{
  return u->prev && u->prev->write == u->write;
}

/* Cuts u in two at byte at of its zone, u->off < at < u->off + u->len:
 * u keeps the head, a record after it of the same write the tail.
 */
static int
cut_record (struct zn_dev *dev, struct zn_undo *u, uint64_t at)
{
  uint64_t end = u->off + u->len;

  if (split_undo (dev, u, at, end) < 0)
    return -ENOMEM;
  dev->cache->dirty -= end - at;
  u->len = at - u->off;
  return 0;
}

/* torn:SEED (doc/power-fail.md, section 2): record u of pending write i
 * of its zone, cut where the blocks the power loss kept of it end: in a
 * sequential zone, of the write after the kept prefix, its first blocks;
 * in a conventional zone, of a torn write, each run of blocks kept or
 * lost alike.  The last piece, to go on from.  Without memory for a cut
 * the rest of the record goes as its piece before goes: still a state
 * the rules allow, if not the seed's.
 */
static struct zn_undo *
tear (struct zn_dev *dev, const struct zn_keep *keep, struct zn_undo *u,
      uint64_t i, uint64_t prefix)
{
  uint64_t bs = dev->geo.block_size;

  if (dev->zones[u->zone].type != ZN_ZONE_CONVENTIONAL) {
    uint64_t t = i == prefix && !same_write (u)
      ? zn_keep_torn_prefix (keep, u->zone, i, u->len / bs) : 0;

    if (t == 0 || t * bs >= u->len || cut_record (dev, u, u->off + t * bs) < 0)
      return u;
    u->keep = true;
    u->next->keep = false;
    return u->next;
  }
  if (!zn_keep_torn (keep, u->zone, i))
    return u;
  for (;;) {
    uint64_t b = u->off / bs, last = (u->off + u->len) / bs, end = b + 1;

    u->keep = zn_keep_block (keep, u->zone, i, b);
    while (end < last && zn_keep_block (keep, u->zone, i, end) == u->keep)
      end++;
    if (end == last || cut_record (dev, u, end * bs) < 0)
      return u;
    u->next->keep = !u->keep;
    u = u->next;
  }
}

/* Whether each record survives a power cycle under keep: of each
 * sequential zone's pending writes a prefix, of each conventional zone's
 * each write or not, all the records of a write together; torn:SEED cuts
 * records where a write tears (tear).  A write's place is among the
 * writes the cache still holds for its zone.
 */
static void
keep_records (struct zn_dev *dev, const struct zn_keep *keep)
{
  uint64_t *n = dev->cache->keep_counts, *at = n + dev->geo.nr_zones;

  memset (n, 0, 2 * dev->geo.nr_zones * sizeof *n);
  for (struct zn_undo *u = dev->cache->head; u; u = u->next)
    if (!same_write (u))
      n[u->zone]++;
  for (struct zn_undo *u = dev->cache->head; u; u = u->next) {
    bool conv = dev->zones[u->zone].type == ZN_ZONE_CONVENTIONAL;
    uint64_t i, prefix = conv ? 0 : zn_keep_prefix (keep, u->zone,
                                                    n[u->zone]);

    if (same_write (u)) {
      u->keep = u->prev->keep;
      i = at[u->zone] - 1;
    }
    else {
      i = at[u->zone]++;
      u->keep = conv ? zn_keep_write (keep, u->zone, i) : i < prefix;
    }
    if (keep->kind == ZN_KEEP_TORN)
      u = tear (dev, keep, u, i, prefix);
  }
}

/* ---- over memory: undo records ------------------------------------------ */

/* Only a conventional zone's data can show the loss (see above).  The
 * record of the bytes the write overwrites is made first, and goes again
 * if the write fails.
 */
static int
undo_write (struct zn_dev *dev, struct zone *z, uint64_t off,
            const void *buf, uint64_t len, bool fua)
{
  const struct zn_backend *under = dev->cache->under;
  uint32_t zno = zone_index (dev, z);
  struct zn_undo *u = NULL;
  int ret;

  ZONE_ASSERT_HELD (z);
  if (z->type != ZN_ZONE_CONVENTIONAL)
    return under->write (dev, z, off, buf, len, fua);
  pthread_mutex_lock (&dev->cache->lock);
  if (fua)
    ret = write_back_range (dev, zno, off, len);
  else if ((u = new_record (dev, zno, off, len)) == NULL)
    ret = -ENOMEM;
  else
    ret = under->read (dev, z, off, u->old, len, len);
  if (ret == 0)
    ret = under->write (dev, z, off, buf, len, fua);
  if (ret && u)
    unlink_undo (dev, u);
  /* A full cache writes back its oldest data. */
  while (ret == 0 && u && dev->cache->dirty > dev->cache->bytes
         && dev->cache->head != u)
    unlink_undo (dev, dev->cache->head);
  pthread_mutex_unlock (&dev->cache->lock);
  return ret;
}

static int
undo_flush (struct zn_dev *dev)
{
  pthread_mutex_lock (&dev->cache->lock);
  while (dev->cache->head)
    unlink_undo (dev, dev->cache->head);
  pthread_mutex_unlock (&dev->cache->lock);
  return dev->cache->under->flush (dev);
}

/* Where a newer write that survives overlaps u, the zone holds already
 * what it must keep (undo_reload goes newest first): u's undo record
 * takes those bytes from the zone, so undoing u leaves them.
 */
static void
spare_survivors (struct zn_dev *dev, struct zn_undo *u)
{
  struct zone *z = &dev->zones[u->zone];

  for (struct zn_undo *v = u->next; v; v = v->next) {
    uint64_t from = v->off > u->off ? v->off : u->off;
    uint64_t to = v->off + v->len < u->off + u->len
      ? v->off + v->len : u->off + u->len;

    if (v->keep && v->zone == u->zone && from < to)
      under_read (dev, z, from, u->old + (from - u->off), to - from,
                  to - from);
  }
}

/* The pending writes the power cycle drops are undone, newest first. */
static int
undo_reload (struct zn_dev *dev, const struct zn_keep *keep,
             zn_dropped_fn *dropped)
{
  const struct zn_backend *under = dev->cache->under;

  ALL_ZONES_ASSERT_HELD (dev);
  pthread_mutex_lock (&dev->cache->lock);
  keep_records (dev, keep);
  for (struct zn_undo *u = dev->cache->tail; u; u = u->prev) {
    if (u->keep)
      continue;
    dropped (dev, u->zone, u->off, u->len);
    spare_survivors (dev, u);
    dev->cache->under->write (dev, &dev->zones[u->zone], u->off, u->old,
                             u->len, false);
  }
  while (dev->cache->tail)
    unlink_undo (dev, dev->cache->tail);
  pthread_mutex_unlock (&dev->cache->lock);
  return under->reload ? under->reload (dev, keep, dropped) : 0;
}

static void cache_destroy (struct zn_cache *c);

/* An orderly stop writes the cache back, as a drive does at shutdown. */
static void
cache_free (struct zn_dev *dev)
{
  const struct zn_backend *under = dev->cache->under;

  dev->backend->flush (dev);
  cache_destroy (dev->cache);
  dev->cache = NULL;
  dev->backend = under;
  under->free (dev);
}

static const struct zn_backend cache_undo_backend = {
  .name = "cache over memory",
  .read = under_read,
  .write = undo_write,
  .reset = under_reset,
  .finish = under_finish,
  .set_cond = under_set_cond,
  .save_meta = under_save_meta,
  .flush = undo_flush,
  .reload = undo_reload,
  .free = cache_free,
};

/* ---- over files: write-back records ------------------------------------- */

static int
wb_write (struct zn_dev *dev, struct zone *z, uint64_t off,
          const void *buf, uint64_t len, bool fua)
{
  uint32_t zno = zone_index (dev, z);
  struct zn_undo *u;
  int ret = 0;

  pthread_mutex_lock (&dev->cache->lock);
  if (fua) {
    /* A sequential zone's file holds a prefix of the zone: what the
     * cache holds before this write is written back first.
     */
    if (z->type == ZN_ZONE_SEQWRITE_REQ)
      ret = write_back_zone (dev, zno);
    else
      ret = write_back_range (dev, zno, off, len);
    if (ret == 0)
      ret = dev->cache->under->write (dev, z, off, buf, len, true);
    goto out;
  }
  u = new_record (dev, zno, off, len);
  if (u == NULL) {
    ret = -ENOMEM;
    goto out;
  }
  memcpy (u->old, buf, len);
  /* A full cache writes back its oldest data; if the disk refuses it,
   * the data stays cached and a flush reports the error.
   */
  while (dev->cache->dirty > dev->cache->bytes && dev->cache->head != u)
    if (write_back (dev, dev->cache->head) < 0)
      break;
 out:
  pthread_mutex_unlock (&dev->cache->lock);
  return ret;
}

/* The records lie over the file, oldest first. */
static int
wb_read (struct zn_dev *dev, struct zone *z, uint64_t off, void *buf,
         uint64_t len, uint64_t valid)
{
  uint32_t zno = zone_index (dev, z);
  uint64_t end = off + valid;
  int ret = 0;

  if (valid == 0) {
    fill_past_wp (buf, len, 0);
    return 0;
  }
  /* A write-back holds the lock while it writes the files. */
  if (!lock_or_again (&dev->cache->lock))
    return -EAGAIN;
  /* With the zone lock held no record of z can be added; one can only be
   * written back, so with none now the file alone is the data.
   */
  if (dev->cache->count[zno] == 0) {
    pthread_mutex_unlock (&dev->cache->lock);
    return under_read (dev, z, off, buf, len, valid);
  }
  ret = under_read (dev, z, off, buf, valid, valid);
  for (struct zn_undo *u = dev->cache->head; u && ret == 0; u = u->next) {
    uint64_t from = u->off > off ? u->off : off;
    uint64_t to = u->off + u->len < end ? u->off + u->len : end;

    if (u->zone == zno && from < to)
      memcpy ((unsigned char *) buf + (from - off), u->old + (from - u->off),
              to - from);
  }
  pthread_mutex_unlock (&dev->cache->lock);
  if (ret == 0)
    fill_past_wp (buf, len, valid);
  return ret;
}

static int
wb_reset (struct zn_dev *dev, struct zone *z)
{
  uint32_t zno = zone_index (dev, z);

  pthread_mutex_lock (&dev->cache->lock);
  for (struct zn_undo *u = dev->cache->head, *next; u; u = next) {
    next = u->next;
    if (u->zone == zno)
      unlink_undo (dev, u);
  }
  pthread_mutex_unlock (&dev->cache->lock);
  return under_reset (dev, z);
}

static int
wb_finish (struct zn_dev *dev, struct zone *z)
{
  int ret;

  pthread_mutex_lock (&dev->cache->lock);
  ret = write_back_zone (dev, zone_index (dev, z));
  pthread_mutex_unlock (&dev->cache->lock);
  return ret ? ret : under_finish (dev, z);
}

/* A zone taken out of service keeps what was written to it: its wp reads
 * all-ones from now on, so nothing (a power cycle, the write log) could
 * say later which of its writes the cache had dropped.  If the disk
 * refuses, the data stays cached, as a full cache's does.  (Over pages a
 * power cycle starts the sequential zones over anyway.)
 */
static void
wb_set_cond (struct zn_dev *dev, struct zone *z, uint8_t cond)
{
  if (cond == ZN_COND_READONLY || cond == ZN_COND_OFFLINE) {
    pthread_mutex_lock (&dev->cache->lock);
    write_back_zone (dev, zone_index (dev, z));
    pthread_mutex_unlock (&dev->cache->lock);
  }
  under_set_cond (dev, z, cond);
}

static int
wb_flush (struct zn_dev *dev)
{
  int ret = 0;

  pthread_mutex_lock (&dev->cache->lock);
  while (dev->cache->head && ret == 0)
    ret = write_back (dev, dev->cache->head);
  pthread_mutex_unlock (&dev->cache->lock);
  return ret ? ret : dev->cache->under->flush (dev);
}

/* The files keep what was written back and the pending writes the power
 * cycle keeps, written back now, oldest first, so that each sequential
 * zone's file ends at its prefix.  An error stops the write-back there:
 * what is left is lost (a prefix still), and the error is the cycle's.
 */
static int
wb_reload (struct zn_dev *dev, const struct zn_keep *keep,
           zn_dropped_fn *dropped)
{
  int ret = 0, r;

  ALL_ZONES_ASSERT_HELD (dev);
  pthread_mutex_lock (&dev->cache->lock);
  keep_records (dev, keep);
  while (dev->cache->head) {
    struct zn_undo *u = dev->cache->head;

    if (u->keep && ret == 0 && (ret = write_back (dev, u)) == 0)
      continue;
    dropped (dev, u->zone, u->off, u->len);
    unlink_undo (dev, u);
  }
  pthread_mutex_unlock (&dev->cache->lock);
  r = dev->cache->under->reload (dev, keep, dropped);
  return ret ? ret : r;
}

static const struct zn_backend cache_file_backend = {
  .name = "cache over files",
  .keeps_data = true,
  .read = wb_read,
  .write = wb_write,
  .reset = wb_reset,
  .finish = wb_finish,
  .set_cond = wb_set_cond,
  .save_meta = under_save_meta,
  .flush = wb_flush,
  .reload = wb_reload,
  .free = cache_free,
};

static void
cache_destroy (struct zn_cache *c)
{
  if (!c)
    return;
  pthread_mutex_destroy (&c->lock);
  free (c->count);
  free (c->keep_counts);
  free (c);
}

int
cache_over (struct zn_dev *dev, uint64_t bytes)
{
  struct zn_cache *c = calloc (1, sizeof *c);

  if (!c)
    return -ENOMEM;
  pthread_mutex_init (&c->lock, NULL);
  c->bytes = bytes;
  c->under = dev->backend;
  c->keep_counts = calloc (2 * (size_t) dev->geo.nr_zones,
                           sizeof *c->keep_counts);
  if (c->under->keeps_data)
    c->count = calloc (dev->geo.nr_zones, sizeof *c->count);
  if (!c->keep_counts || (c->under->keeps_data && !c->count)) {
    cache_destroy (c);
    return -ENOMEM;
  }
  dev->cache = c;
  dev->backend = c->under->keeps_data ? &cache_file_backend
                                      : &cache_undo_backend;
  return 0;
}

void
zn_cache_stats (struct zn_dev *dev, uint64_t *size, uint64_t *dirty)
{
  struct zn_cache *c = dev->cache;

  *size = *dirty = 0;
  if (!c)
    return;
  pthread_mutex_lock (&c->lock);
  *size = c->bytes;
  *dirty = c->dirty;
  pthread_mutex_unlock (&c->lock);
}
