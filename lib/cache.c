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
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "zoned-internal.h"

struct zn_undo {
  struct zn_undo *prev, *next;   /* oldest at dev->undo_head */
  uint32_t zone;
  uint64_t off, len;             /* bytes within the zone */
  unsigned char *old;            /* what the write overwrote */
};

void
cache_init (struct zn_dev *dev, uint64_t cache_bytes)
{
  pthread_mutex_init (&dev->cache_lock, NULL);
  dev->cache_bytes = cache_bytes;
}

static void
unlink_undo (struct zn_dev *dev, struct zn_undo *u)
{
  if (u->prev)
    u->prev->next = u->next;
  else
    dev->undo_head = u->next;
  if (u->next)
    u->next->prev = u->prev;
  else
    dev->undo_tail = u->prev;
  dev->dirty_bytes -= u->len;
  free (u->old);
  free (u);
}

static void
append_undo (struct zn_dev *dev, struct zn_undo *u)
{
  u->next = NULL;
  u->prev = dev->undo_tail;
  if (dev->undo_tail)
    dev->undo_tail->next = u;
  else
    dev->undo_head = u;
  dev->undo_tail = u;
  dev->dirty_bytes += u->len;
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
  v->off = from;
  v->len = to - from;
  memcpy (v->old, u->old + (from - u->off), v->len);
  v->prev = u;
  v->next = u->next;
  if (u->next)
    u->next->prev = v;
  else
    dev->undo_tail = v;
  u->next = v;
  dev->dirty_bytes += v->len;
  return 0;
}

/* Makes [off, off + len) of zone zno durable: cuts it out of every undo
 * record, keeping the parts outside.
 */
static int
write_back_range (struct zn_dev *dev, uint32_t zno, uint64_t off, uint64_t len)
{
  uint64_t end = off + len;

  for (struct zn_undo *u = dev->undo_head, *next; u; u = next) {
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
      dev->dirty_bytes -= uend - off;
      u->len = off - u->off;
    }
    else if (uend > end) {                /* keep the tail */
      memmove (u->old, u->old + (end - u->off), uend - end);
      dev->dirty_bytes -= end - u->off;
      u->len = uend - end;
      u->off = end;
    }
    else
      unlink_undo (dev, u);
  }
  return 0;
}

/* Called with z's lock held, before a conventional zone's data changes. */
int
cache_before_write (struct zn_dev *dev, struct zone *z, uint64_t off,
                    uint64_t len, bool fua)
{
  uint32_t zno = (uint32_t) (z - dev->zones);
  struct zn_undo *u;
  int ret = 0;

  pthread_mutex_lock (&dev->cache_lock);
  if (fua) {
    ret = write_back_range (dev, zno, off, len);
    goto out;
  }
  u = calloc (1, sizeof *u);
  if (!u || !(u->old = malloc (len))) {
    free (u);
    ret = -ENOMEM;
    goto out;
  }
  u->zone = zno;
  u->off = off;
  u->len = len;
  pages_copy_out (&z->pages, off, u->old, len);
  append_undo (dev, u);
  /* A full cache writes back its oldest data. */
  while (dev->dirty_bytes > dev->cache_bytes && dev->undo_head != u)
    unlink_undo (dev, dev->undo_head);
 out:
  pthread_mutex_unlock (&dev->cache_lock);
  return ret;
}

int
zn_flush (struct zn_dev *dev)
{
  pthread_mutex_lock (&dev->cache_lock);
  while (dev->undo_head)
    unlink_undo (dev, dev->undo_head);
  pthread_mutex_unlock (&dev->cache_lock);
  return 0;
}

/* Called with every zone lock held: the unflushed writes are undone. */
void
cache_power_loss (struct zn_dev *dev)
{
  pthread_mutex_lock (&dev->cache_lock);
  while (dev->undo_tail) {
    struct zn_undo *u = dev->undo_tail;

    pages_copy_in (&dev->zones[u->zone].pages, u->off, u->old, u->len);
    unlink_undo (dev, u);
  }
  pthread_mutex_unlock (&dev->cache_lock);
}

void
cache_free (struct zn_dev *dev)
{
  zn_flush (dev);
  pthread_mutex_destroy (&dev->cache_lock);
}

void
zn_cache_stats (struct zn_dev *dev, uint64_t *size, uint64_t *dirty)
{
  pthread_mutex_lock (&dev->cache_lock);
  *size = dev->cache_bytes;
  *dirty = dev->dirty_bytes;
  pthread_mutex_unlock (&dev->cache_lock);
}
