/* SPDX-License-Identifier: BSD-3-Clause */
/* The write log (wlog.h; the layout is wlog-format.h, the design
 * doc/power-fail.md): one file, appended to under one lock, each entry
 * in the file before the request it records completes.
 *
 * The hooks run where the model has done a request and holds the zone's
 * lock, so a zone's entries are in the order its requests took effect.
 * A log starts with every zone lock held, and it is on from then until a
 * stop, or until its first failed write, after which it records nothing
 * more: a log with a hole in it would replay to a state that never was.
 *
 * What the device holds when a log starts is its snapshot.  LOG_START
 * only marks every zone as still to copy; a thread then copies them one
 * at a time, each under its own lock, and a request that is about to
 * change a zone not yet copied copies it first (wlog_touch).  So a
 * zone's SNAPSHOT entries come before any entry of a change to it, and
 * the device, and the event loop of a server, wait for one zone's copy
 * at most, never for the whole device's.
 *
 * A write goes in the log when its request completes to the host, as
 * dm-log-writes logs it, so that a flush's ref counts only writes
 * completed before it came.  A front end whose request completes after it
 * ran (irqmode=2, a delayed reply) brackets running it (zn_wlog_defer,
 * zn_wlog_deferred): the write entries it makes are held, with their
 * data, until zn_wlog_complete.  Replay applies a zone's entries in log
 * order, so a held entry goes in before any later entry of its zone that
 * must follow it: in a sequential zone every later entry, in a
 * conventional zone a later write over its blocks, and a zone operation
 * or condition; a power cycle, a stop of the log and the device's end
 * append them all.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/uio.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/escape.h"
#include "wire/control-wire.h"
#include "powerfail/wlog.h"
#include "wire/wlog-format.h"
#include "model/dev.h"

/* The hooks the model calls (recorder.h), defined at the end. */
static const struct zn_recorder wlog_recorder;

/* A snapshot reads and writes the device's data this much at a time. */
#define CHUNK (UINT64_C (1) << 20)
/* A snapshot reads the device's data and writes it all to the log: a
 * LOG_START waits after the last snapshot's end this many times the time
 * it took, so that snapshots take at most a tenth of the device's time,
 * however a client loops.  A snapshot shorter than SNAPSHOT_FREE_NS (a
 * small or empty device) asks for none.
 */
#define SNAPSHOT_REST 9
#define SNAPSHOT_FREE_NS 10000000u

struct dropped {
  uint32_t zone;
  uint64_t off, len;             /* bytes within the zone */
};

#define NO_ZONE UINT32_MAX

/* An entry held until its request completes: a write, or a mark its
 * request made (a failure after the write, fault-after:).
 */
struct held {
  struct held *zone_prev, *zone_next;   /* its zone's, as they ran */
  struct held *req_prev, *req_next;     /* its request's */
  struct zn_wlog_hold *hold;
  uint32_t zone;                 /* NO_ZONE: a mark */
  bool must;                     /* must precede the entry being appended */
  uint64_t flags, sector, n;
  size_t len;                    /* bytes at data: a write's, a mark's name */
  unsigned char data[];
};

/* The entries of one request that completes later. */
struct zn_wlog_hold {
  struct zn_dev *dev;
  struct held *first, *last;
  struct zn_wlog_hold *prev, *next;     /* the log's holds */
};

/* The calling thread runs a request that completes later (zn_wlog_defer),
 * and the hold its entries went to so far.
 */
static _Thread_local bool deferring;
static _Thread_local struct zn_wlog_hold *deferred;

struct zn_wlog {
  pthread_mutex_t lock;          /* the file, its tail, its count */
  atomic_bool on;                /* read without the lock by the hooks */
  int fd;
  char label[ZN_ESCAPED_SIZE (256)]; /* the file, escaped, for messages */
  char *dir;                     /* log_dir, or NULL */
  uint64_t nr_entries;
  uint64_t tail;                 /* where the next entry goes, bytes */
  uint64_t gen;                  /* the logs started so far */
  uint64_t snap_end, snap_ns;    /* the last snapshot: its end, its time */
  uint64_t snap_start;
  /* The snapshot being copied: the zones still to copy (each entry read
   * and written under its zone's lock), and the thread that copies them.
   */
  atomic_bool copying;
  uint8_t *pending;
  pthread_t copier;
  bool copier_joinable;
  int failed;                    /* the errno that stopped the log */
  unsigned char *block;          /* one entry's block, under the lock */
  /* A power cycle's, under every zone lock: the zones before it, and
   * the ranges of conventional zones the cache dropped.
   */
  bool powering;
  bool dropped_lost;             /* no memory to remember a range */
  uint64_t *old_wp;
  uint8_t *old_cond;
  struct dropped *dropped;
  size_t nr_dropped, dropped_cap;
  /* Entries held until their requests complete, under the lock: every
   * hold not yet completed, each zone's held entries as they ran, and
   * the bytes held (at most ZN_WLOG_HOLD_MAX).
   */
  struct zn_wlog_hold *holds;
  struct held **zone_first, **zone_last;
  uint64_t held_bytes;
  bool completing;               /* appending held entries, no request's */
};

static uint32_t
block_size (const struct zn_dev *dev)
{
  return dev->geo.block_size;
}

/* 512-byte sectors to the log's blocks. */
static uint64_t
blocks (const struct zn_dev *dev, uint64_t sectors)
{
  return sectors / (block_size (dev) >> ZN_SECTOR_SHIFT);
}

static bool
cond_gone (uint8_t cond)
{
  return cond == ZN_COND_READONLY || cond == ZN_COND_OFFLINE;
}

/* ---- the file ----------------------------------------------------------- */

static int
pwritev_all (int fd, struct iovec *iov, int n, uint64_t off)
{
  while (n > 0) {
    ssize_t r = pwritev (fd, iov, n, (off_t) off);

    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return -errno;
    if (r == 0)
      return -ENOSPC;
    off += (uint64_t) r;
    while (n > 0 && (size_t) r >= iov->iov_len) {
      r -= (ssize_t) iov->iov_len;
      iov++;
      n--;
    }
    if (n > 0) {
      iov->iov_base = (char *) iov->iov_base + r;
      iov->iov_len -= (size_t) r;
    }
  }
  return 0;
}

static int
write_count (struct zn_wlog *w, uint64_t nr)
{
  uint64_t le = htole64 (nr);
  struct iovec iov = { &le, sizeof le };

  return pwritev_all (w->fd, &iov, 1,
                      offsetof (struct zn_wlog_super, nr_entries));
}

static void drop_held (struct zn_wlog *w);

/* Once, naming the file: the log has a hole from here on, so it stops.
 * A request that completed already keeps its success: the log's stop
 * says EIO.
 */
static int
stop_failed (struct zn_wlog *w, int err)
{
  fprintf (stderr, "zonednull: write log %s: writing entry %" PRIu64
           ": %s; the log stops here and %s\n", w->label,
           w->nr_entries, strerror (err), w->completing
           ? "a held write is not in it (its request's answer stands)"
           : "the request fails");
  drop_held (w);
  atomic_store (&w->on, false);
  close (w->fd);
  w->fd = -1;
  w->failed = EIO;
  return -EIO;
}

/* One entry, the lock held: its block and its data at the tail, then the
 * count in the super; data follows the block unless the entry is a
 * discard.
 */
static int
append (struct zn_dev *dev, uint64_t flags, uint64_t sector, uint64_t n,
        uint64_t ref, const void *text, size_t text_len, const void *data)
{
  struct zn_wlog *w = dev->wlog;
  uint32_t bs = block_size (dev);
  struct zn_wlog_entry e = {
    .sector = htole64 (blocks (dev, sector)),
    .nr_sectors = htole64 (blocks (dev, n)),
    .flags = htole64 (flags),
    .data_len = htole64 (text_len),
    .ref = htole64 (ref),
  };
  struct iovec iov[2] = { { w->block, bs }, { (void *) data, 0 } };
  int ret;

  memset (w->block, 0, bs);
  memcpy (w->block, &e, sizeof e);
  /* A mark's name goes at byte 32, where dm-log-writes puts it; the
   * geometry after zero and ref, since its readers refuse a nonzero byte
   * 32 in an entry whose flags are not exactly MARK.
   */
  if (text)
    memcpy (w->block + (flags == ZN_WLOG_MARK ? 32 : sizeof e), text,
            text_len);
  if (data && !(flags & ZN_WLOG_DISCARD))
    iov[1].iov_len = n << ZN_SECTOR_SHIFT;
  ret = pwritev_all (w->fd, iov, iov[1].iov_len ? 2 : 1, w->tail);
  if (ret == 0)
    ret = write_count (w, w->nr_entries + 1);
  if (ret)
    return stop_failed (w, -ret);
  w->tail += bs + iov[1].iov_len;
  w->nr_entries++;
  return 0;
}

/* An entry of the log that is on (of log gen, unless 0); 0 with none. */
static int
log_entry (struct zn_dev *dev, uint64_t gen, uint64_t flags, uint64_t sector,
           uint64_t n, uint64_t ref, const void *data)
{
  struct zn_wlog *w = dev->wlog;
  int ret = 0;

  if (!atomic_load (&w->on))
    return 0;
  pthread_mutex_lock (&w->lock);
  if (atomic_load (&w->on) && (gen == 0 || gen == w->gen))
    ret = append (dev, flags, sector, n, ref, NULL, 0, data);
  pthread_mutex_unlock (&w->lock);
  return ret;
}

/* A power cycle's record that could not be made: the log stops. */
static int
fail_log (struct zn_dev *dev, int err)
{
  struct zn_wlog *w = dev->wlog;
  int ret = 0;

  pthread_mutex_lock (&w->lock);
  if (atomic_load (&w->on))
    ret = stop_failed (w, err);
  pthread_mutex_unlock (&w->lock);
  return ret;
}

/* ---- entries held until their requests complete ------------------------- */

static void
unlink_held (struct zn_wlog *w, struct held *e)
{
  struct zn_wlog_hold *h = e->hold;

  if (e->zone != NO_ZONE) {
    if (e->zone_prev)
      e->zone_prev->zone_next = e->zone_next;
    else
      w->zone_first[e->zone] = e->zone_next;
    if (e->zone_next)
      e->zone_next->zone_prev = e->zone_prev;
    else
      w->zone_last[e->zone] = e->zone_prev;
  }
  if (e->req_prev)
    e->req_prev->req_next = e->req_next;
  else
    h->first = e->req_next;
  if (e->req_next)
    e->req_next->req_prev = e->req_prev;
  else
    h->last = e->req_prev;
  w->held_bytes -= sizeof *e + e->len;
  free (e);
}

/* The log stopped with a hole: what it held will never go in. */
static void
drop_held (struct zn_wlog *w)
{
  for (struct zn_wlog_hold *h = w->holds; h; h = h->next)
    while (h->first)
      unlink_held (w, h->first);
}

/* Held entry e appended, the lock held.  On failure the log has stopped
 * and every held entry is gone, e too.
 */
static int
append_held (struct zn_dev *dev, struct held *e)
{
  int ret = e->zone == NO_ZONE
    ? append (dev, e->flags, 0, 0, 0, e->data, e->len, NULL)
    : append (dev, e->flags, e->sector, e->n, 0, NULL, 0,
              e->len ? e->data : NULL);

  if (ret == 0)
    unlink_held (dev->wlog, e);
  return ret;
}

static bool
overlaps (uint64_t a, uint64_t an, uint64_t b, uint64_t bn)
{
  return a < b + bn && b < a + an;
}

/* Before an entry of zone over [sector, sector + n) that ran after end
 * (NULL: after every held entry of the zone), the held ones it must
 * follow, appended in the order they ran: with all, or in a sequential
 * zone, every one (replay applies a sequential zone's writes in order,
 * and what lies before a write the device wrote is written too); in a
 * conventional zone those whose blocks it overwrites, and those theirs
 * overwrite.  The lock held.
 */
static int
append_before (struct zn_dev *dev, uint32_t zone, struct held *end,
               uint64_t sector, uint64_t n, bool all)
{
  struct zn_wlog *w = dev->wlog;
  struct held *e, *next;

  if (w->zone_first == NULL || w->zone_first[zone] == end)
    return 0;
  all = all || dev->zones[zone].type != ZN_ZONE_CONVENTIONAL;
  for (e = end ? end->zone_prev : w->zone_last[zone]; e; e = e->zone_prev) {
    e->must = all || overlaps (e->sector, e->n, sector, n);
    for (struct held *m = e->zone_next; !e->must && m != end;
         m = m->zone_next)
      e->must = m->must && overlaps (e->sector, e->n, m->sector, m->n);
  }
  for (e = w->zone_first[zone]; e != end; e = next) {
    int ret;

    next = e->zone_next;
    if (e->must && (ret = append_held (dev, e)) != 0)
      return ret;
  }
  return 0;
}

/* Hold h's entries appended, each after those of its zone it follows. */
static int
append_hold (struct zn_dev *dev, struct zn_wlog_hold *h)
{
  while (h->first) {
    struct held *e = h->first;
    int ret = e->zone == NO_ZONE ? 0
      : append_before (dev, e->zone, e, e->sector, e->n, false);

    if (ret == 0)
      ret = append_held (dev, e);
    if (ret)
      return ret;
  }
  return 0;
}

/* Every held entry appended: a power cycle, the log's stop, the device's. */
static int
append_all_held (struct zn_dev *dev)
{
  struct zn_wlog *w = dev->wlog;
  int ret = 0;

  w->completing = true;
  for (struct zn_wlog_hold *h = w->holds; h && ret == 0; h = h->next)
    ret = append_hold (dev, h);
  w->completing = false;
  return ret;
}

/* Holds an entry of the request the calling thread runs, if it deferred
 * its completion (zn_wlog_defer), the lock held.  False when the entry
 * is not held and goes in now: a request completed at once, data over
 * ZN_WLOG_HOLD_MAX held already, or no memory.
 */
static bool
hold_entry (struct zn_dev *dev, uint32_t zone, uint64_t flags,
            uint64_t sector, uint64_t n, const void *data, size_t len)
{
  struct zn_wlog *w = dev->wlog;
  struct zn_wlog_hold *h = deferred;
  struct held *e;

  if (!deferring || (h && h->dev != dev)
      || w->held_bytes + sizeof *e + len > ZN_WLOG_HOLD_MAX)
    return false;
  if (w->zone_first == NULL) {
    w->zone_first = calloc (dev->geo.nr_zones, sizeof *w->zone_first);
    w->zone_last = calloc (dev->geo.nr_zones, sizeof *w->zone_last);
    if (!w->zone_first || !w->zone_last) {
      free (w->zone_first);
      free (w->zone_last);
      w->zone_first = w->zone_last = NULL;
      return false;
    }
  }
  if (h == NULL) {
    if ((h = calloc (1, sizeof *h)) == NULL)
      return false;
    h->dev = dev;
    h->next = w->holds;
    if (w->holds)
      w->holds->prev = h;
    w->holds = deferred = h;
  }
  if ((e = malloc (sizeof *e + len)) == NULL)
    return false;
  memset (e, 0, sizeof *e);
  e->hold = h;
  e->zone = zone;
  e->flags = flags;
  e->sector = sector;
  e->n = n;
  e->len = len;
  if (len)
    memcpy (e->data, data, len);
  e->req_prev = h->last;
  *(h->last ? &h->last->req_next : &h->first) = e;
  h->last = e;
  if (zone != NO_ZONE) {
    e->zone_prev = w->zone_last[zone];
    *(e->zone_prev ? &e->zone_prev->zone_next : &w->zone_first[zone]) = e;
    w->zone_last[zone] = e;
  }
  w->held_bytes += sizeof *e + len;
  return true;
}

void
zn_wlog_defer (void)
{
  deferring = true;
}

struct zn_wlog_hold *
zn_wlog_deferred (void)
{
  struct zn_wlog_hold *h = deferred;

  deferring = false;
  deferred = NULL;
  return h;
}

void
zn_wlog_complete (struct zn_wlog_hold *h)
{
  struct zn_wlog *w;

  if (h == NULL)
    return;
  w = h->dev->wlog;
  pthread_mutex_lock (&w->lock);
  w->completing = true;
  if (atomic_load (&w->on))
    append_hold (h->dev, h);
  w->completing = false;
  while (h->first)
    unlink_held (w, h->first);
  if (h->prev)
    h->prev->next = h->next;
  else
    w->holds = h->next;
  if (h->next)
    h->next->prev = h->prev;
  pthread_mutex_unlock (&w->lock);
  free (h);
}

/* ---- hooks -------------------------------------------------------------- */

static int
wlog_write (struct zn_dev *dev, struct zone *z, uint64_t sector, uint64_t n,
            const void *buf, bool fua, bool append_)
{
  struct zn_wlog *w = dev->wlog;
  uint32_t zone = (uint32_t) (z - dev->zones);
  uint64_t flags = (fua ? ZN_WLOG_FUA : 0) | (append_ ? ZN_WLOG_APPEND : 0);
  int ret = 0;

  ZONE_ASSERT_HELD (z);
  if (!atomic_load (&w->on))
    return 0;
  pthread_mutex_lock (&w->lock);
  if (atomic_load (&w->on)
      && !hold_entry (dev, zone, flags, sector, n, buf,
                      buf ? n << ZN_SECTOR_SHIFT : 0)) {
    ret = append_before (dev, zone, NULL, sector, n, false);
    if (ret == 0)
      ret = append (dev, flags, sector, n, 0, NULL, 0, buf);
  }
  pthread_mutex_unlock (&w->lock);
  return ret;
}

/* An entry of zone z that every held one of the zone comes before. */
static int
zone_entry (struct zn_dev *dev, struct zone *z, uint64_t flags,
            uint64_t sector, uint64_t n, uint64_t ref)
{
  struct zn_wlog *w = dev->wlog;
  int ret = 0;

  ZONE_ASSERT_HELD (z);
  if (!atomic_load (&w->on))
    return 0;
  pthread_mutex_lock (&w->lock);
  if (atomic_load (&w->on)) {
    ret = append_before (dev, (uint32_t) (z - dev->zones), NULL, 0, 0, true);
    if (ret == 0)
      ret = append (dev, flags, sector, n, ref, NULL, 0, NULL);
  }
  pthread_mutex_unlock (&w->lock);
  return ret;
}

static int
wlog_zone_op (struct zn_dev *dev, struct zone *z, enum zn_zone_op op)
{
  static const uint64_t flags[] = {
    [ZN_OP_OPEN] = ZN_WLOG_OPEN, [ZN_OP_CLOSE] = ZN_WLOG_CLOSE,
    [ZN_OP_FINISH] = ZN_WLOG_FINISH,
  };

  /* A reset is a discard of the zone to dm-log-writes' readers. */
  if (op == ZN_OP_RESET)
    return zone_entry (dev, z, ZN_WLOG_DISCARD | ZN_WLOG_RESET, z->start,
                       z->len, 0);
  return zone_entry (dev, z, flags[op], z->start, 0, 0);
}

static int
wlog_cond (struct zn_dev *dev, struct zone *z, uint8_t cond)
{
  return zone_entry (dev, z, ZN_WLOG_COND, z->start, 0, cond);
}

static struct zn_flush_ref
wlog_flush_ref (struct zn_dev *dev)
{
  struct zn_wlog *w = dev->wlog;
  struct zn_flush_ref r = { 0, 0 };

  /* A device whose creation failed has no log state yet. */
  if (w == NULL || !atomic_load (&w->on))
    return r;
  pthread_mutex_lock (&w->lock);
  if (atomic_load (&w->on))
    r = (struct zn_flush_ref) { w->gen, w->nr_entries };
  pthread_mutex_unlock (&w->lock);
  return r;
}

/* A flush asked for before this log started covers nothing in it. */
static int
wlog_flush (struct zn_dev *dev, struct zn_flush_ref ref)
{
  if (ref.gen == 0)
    return 0;
  return log_entry (dev, ref.gen, ZN_WLOG_FLUSH, 0, 0, ref.ref, NULL);
}

static void
wlog_power_begin (struct zn_dev *dev)
{
  struct zn_wlog *w = dev->wlog;

  ALL_ZONES_ASSERT_HELD (dev);
  w->powering = atomic_load (&w->on);
  if (!w->powering)
    return;
  w->nr_dropped = 0;
  w->dropped_lost = false;
  for (uint32_t i = 0; i < dev->geo.nr_zones; i++) {
    w->old_wp[i] = dev->zones[i].wp;
    w->old_cond[i] = dev->zones[i].cond;
  }
}

static void
wlog_dropped (struct zn_dev *dev, uint32_t zone, uint64_t off, uint64_t len)
{
  struct zn_wlog *w = dev->wlog;

  /* A sequential zone's loss is its wp, which power_end compares. */
  if (!w->powering || zone >= dev->geo.nr_conv)
    return;
  if (w->nr_dropped == w->dropped_cap) {
    size_t cap = w->dropped_cap ? 2 * w->dropped_cap : 64;
    struct dropped *d = realloc (w->dropped, cap * sizeof *d);

    if (d == NULL) {
      w->dropped_lost = true;
      return;
    }
    w->dropped = d;
    w->dropped_cap = cap;
  }
  w->dropped[w->nr_dropped++] = (struct dropped) { zone, off, len };
}

/* A zone that changed between READONLY/OFFLINE and neither gets a COND
 * entry; one that came back with a lower wp a WP entry.
 */
static int
power_zone (struct zn_dev *dev, uint32_t i)
{
  struct zn_wlog *w = dev->wlog;
  struct zone *z = &dev->zones[i];
  uint8_t was = w->old_cond[i];

  if (cond_gone (was) || cond_gone (z->cond)) {
    if (was == z->cond)
      return 0;
    return log_entry (dev, 0, ZN_WLOG_COND, z->start, 0,
                      cond_gone (z->cond) ? z->cond : 0, NULL);
  }
  if (z->wp >= w->old_wp[i])
    return 0;
  return log_entry (dev, 0, ZN_WLOG_DISCARD | ZN_WLOG_WP, z->wp,
                    z->start + z->len - z->wp, 0, NULL);
}

/* What a conventional zone holds now where the cache dropped writes. */
static int
restore_range (struct zn_dev *dev, const struct dropped *d,
               unsigned char *buf)
{
  struct zone *z = &dev->zones[d->zone];

  for (uint64_t off = d->off; off < d->off + d->len; off += CHUNK) {
    uint64_t len = d->off + d->len - off < CHUNK ? d->off + d->len - off
      : CHUNK;
    int ret = dev->backend->read (dev, z, off, buf, len, len);

    if (ret)
      return fail_log (dev, -ret);
    ret = log_entry (dev, 0, ZN_WLOG_FUA | ZN_WLOG_RESTORE,
                     z->start + (off >> ZN_SECTOR_SHIFT),
                     len >> ZN_SECTOR_SHIFT, 0, buf);
    if (ret)
      return ret;
  }
  return 0;
}

static int
wlog_power_end (struct zn_dev *dev)
{
  struct zn_wlog *w = dev->wlog;
  unsigned char *buf = NULL;
  int ret;

  ALL_ZONES_ASSERT_HELD (dev);
  if (!w->powering)
    return 0;
  w->powering = false;
  pthread_mutex_lock (&w->lock);
  ret = atomic_load (&w->on) ? append_all_held (dev) : 0;
  pthread_mutex_unlock (&w->lock);
  if (ret == 0)
    ret = log_entry (dev, 0, ZN_WLOG_POWER, 0, 0, 0, NULL);
  for (uint32_t i = dev->geo.nr_conv; i < dev->geo.nr_zones && !ret; i++)
    ret = power_zone (dev, i);
  if (!ret && w->nr_dropped && (buf = malloc (CHUNK)) == NULL)
    w->dropped_lost = true;
  if (!ret && w->dropped_lost)
    ret = fail_log (dev, ENOMEM);
  for (size_t i = 0; i < w->nr_dropped && !ret; i++)
    ret = restore_range (dev, &w->dropped[i], buf);
  free (buf);
  return ret;
}

/* ---- starting and stopping ---------------------------------------------- */

/* The first block: magic, version, count 0, block size. */
static int
write_super (struct zn_dev *dev)
{
  struct zn_wlog *w = dev->wlog;
  struct zn_wlog_super s = {
    .magic = htole64 (ZN_WLOG_MAGIC),
    .version = htole64 (ZN_WLOG_VERSION),
    .sectorsize = htole32 (block_size (dev)),
  };
  struct iovec iov = { w->block, block_size (dev) };

  memset (w->block, 0, block_size (dev));
  memcpy (w->block, &s, sizeof s);
  w->tail = block_size (dev);
  w->nr_entries = 0;
  return pwritev_all (w->fd, &iov, 1, 0);
}

/* Entry 0: what replay needs to make the same device. */
static int
write_geometry (struct zn_dev *dev)
{
  const struct zn_geometry *g = &dev->geo;
  char text[256];
  int len = snprintf (text, sizeof text, "blocksize=%" PRIu32
                      " zone_size=%" PRIu64 " zone_capacity=%" PRIu64
                      " zone_nr_conv=%" PRIu32 " size=%" PRIu64
                      " nr_zones=%" PRIu32 " cache=%d kernel=%s",
                      g->block_size, g->zone_sectors >> 11,
                      g->zone_capacity >> 11, g->nr_conv, g->capacity >> 11,
                      g->nr_zones, dev->cache != NULL,
                      zn_kernel_name (g->kernel));

  return append (dev, ZN_WLOG_MARK | ZN_WLOG_GEOMETRY, 0, 0, 0, text,
                 (size_t) len, NULL);
}

static bool
zero (const unsigned char *p, size_t n)
{
  return p[0] == 0 && memcmp (p, p + 1, n - 1) == 0;
}

/* One SNAPSHOT entry for each run of nonzero blocks in buf, which holds
 * len bytes at off of conventional zone z.
 */
/* append, under the log's lock: a snapshot's entries may now be written
 * while requests to other zones log theirs.
 */
static int
append_locked (struct zn_dev *dev, uint64_t flags, uint64_t sector,
               uint64_t n, uint64_t ref, const void *data)
{
  struct zn_wlog *w = dev->wlog;
  int ret = -EIO;

  pthread_mutex_lock (&w->lock);
  if (w->fd >= 0)
    ret = append (dev, flags, sector, n, ref, NULL, 0, data);
  pthread_mutex_unlock (&w->lock);
  return ret;
}

static int
snapshot_nonzero (struct zn_dev *dev, struct zone *z, uint64_t off,
                  const unsigned char *buf, uint64_t len)
{
  uint32_t bs = block_size (dev);

  for (uint64_t i = 0; i < len;) {
    uint64_t run = i;
    int ret;

    while (run < len && !zero (buf + run, bs))
      run += bs;
    if (run > i
        && (ret = append_locked (dev, ZN_WLOG_FUA | ZN_WLOG_SNAPSHOT,
                                 z->start + ((off + i) >> ZN_SECTOR_SHIFT),
                                 (run - i) >> ZN_SECTOR_SHIFT, 0,
                                 buf + i)) != 0)
      return ret;
    i = run + bs;
  }
  return 0;
}

/* The data of zone z: a sequential zone's up to its wp, a conventional
 * zone's nonzero blocks; a READONLY or OFFLINE zone is its condition.
 */
static int
snapshot_zone (struct zn_dev *dev, struct zone *z, unsigned char *buf)
{
  uint64_t end = z->len;

  if (cond_gone (z->cond))
    return append_locked (dev, ZN_WLOG_COND, z->start, 0, z->cond, NULL);
  if (z->type != ZN_ZONE_CONVENTIONAL)
    end = (z->wp < z->start + z->capacity ? z->wp : z->start + z->capacity)
      - z->start;
  end <<= ZN_SECTOR_SHIFT;
  for (uint64_t off = 0; off < end; off += CHUNK) {
    uint64_t len;
    int ret;

    /* A conventional zone's holes are zeros, which it leaves out; a
     * sequential zone's data must come whole, up to its wp.
     */
    if (z->type == ZN_ZONE_CONVENTIONAL && dev->backend->next_data) {
      off = dev->backend->next_data (dev, z, off, end);
      off -= off % block_size (dev);
      if (off >= end)
        break;
    }
    len = end - off < CHUNK ? end - off : CHUNK;
    ret = dev->backend->read (dev, z, off, buf, len, len);

    if (ret == 0 && z->type == ZN_ZONE_CONVENTIONAL)
      ret = snapshot_nonzero (dev, z, off, buf, len);
    else if (ret == 0)
      ret = append_locked (dev, ZN_WLOG_FUA | ZN_WLOG_SNAPSHOT,
                           z->start + (off >> ZN_SECTOR_SHIFT),
                           len >> ZN_SECTOR_SHIFT, 0, buf);
    if (ret)
      return ret;
  }
  return 0;
}

/* Zone z (its lock held) copied if it is still to copy.  A failure
 * stops the log, as any write to it that fails does.
 */
static int
copy_zone (struct zn_dev *dev, struct zone *z, unsigned char *buf)
{
  struct zn_wlog *w = dev->wlog;
  uint32_t i = (uint32_t) (z - dev->zones);
  int ret;

  ZONE_ASSERT_HELD (z);
  if (!w->pending[i])
    return 0;
  w->pending[i] = 0;
  ret = snapshot_zone (dev, z, buf);
  if (ret)
    fail_log (dev, ret == -EIO ? EIO : -ret);
  return ret;
}

/* The copier: every zone, in order, each under its own lock. */
static void *
copier_main (void *arg)
{
  struct zn_dev *dev = arg;
  struct zn_wlog *w = dev->wlog;
  unsigned char *buf = malloc (CHUNK);

  if (buf == NULL)
    fail_log (dev, ENOMEM);
  for (uint32_t i = 0; i < dev->geo.nr_zones && buf; i++) {
    struct zone *z = &dev->zones[i];

    zone_lock (z);
    if (copy_zone (dev, z, buf))
      i = dev->geo.nr_zones;
    zone_unlock (z);
  }
  free (buf);
  pthread_mutex_lock (&w->lock);
  w->snap_end = zn_now_ns ();
  w->snap_ns = w->snap_end - w->snap_start;
  atomic_store (&w->copying, false);
  pthread_mutex_unlock (&w->lock);
  return NULL;
}

/* The copier of the last log, once it ended. */
static void
join_copier (struct zn_wlog *w)
{
  if (w->copier_joinable)
    pthread_join (w->copier, NULL);
  w->copier_joinable = false;
}

static void
wlog_touch (struct zn_dev *dev, struct zone *z)
{
  struct zn_wlog *w = dev->wlog;
  unsigned char *buf;

  ZONE_ASSERT_HELD (z);
  if (!atomic_load (&w->copying) || !w->pending[z - dev->zones])
    return;
  buf = malloc (CHUNK);
  if (buf == NULL) {
    fail_log (dev, ENOMEM);
    return;
  }
  copy_zone (dev, z, buf);
  free (buf);
}

/* The device stops: its copier ends, and what is held goes in, before
 * the stop's flush.
 */
static void
wlog_quiesce (struct zn_dev *dev)
{
  struct zn_wlog *w = dev->wlog;

  if (!w)
    return;
  join_copier (w);
  pthread_mutex_lock (&w->lock);
  if (atomic_load (&w->on))
    append_all_held (dev);
  pthread_mutex_unlock (&w->lock);
}

static bool
wlog_copying (struct zn_dev *dev)
{
  return dev->wlog && atomic_load (&dev->wlog->copying);
}

/* Flushed first, so that every SNAPSHOT entry is durable data; then
 * every zone is still to copy.
 */
static int
snapshot_begin (struct zn_dev *dev)
{
  struct zn_wlog *w = dev->wlog;
  int ret = dev->backend->flush (dev);

  if (ret)
    return ret;
  if (!w->pending && !(w->pending = malloc (dev->geo.nr_zones)))
    return -ENOMEM;
  memset (w->pending, 1, dev->geo.nr_zones);
  w->snap_start = zn_now_ns ();
  return 0;
}

/* Every zone lock held, the file just made: the super, the geometry and,
 * if the device may hold data, the snapshot.
 */
static int
begin_log (struct zn_dev *dev, int fd, bool take_snapshot, bool background)
{
  struct zn_wlog *w = dev->wlog;
  uint32_t n = dev->geo.nr_zones;
  int ret;

  if (!w->old_wp) {
    w->old_wp = calloc (n, sizeof *w->old_wp);
    w->old_cond = calloc (n, sizeof *w->old_cond);
    if (!w->old_wp || !w->old_cond)
      return -ENOMEM;
  }
  w->fd = fd;
  w->failed = 0;
  ret = write_super (dev);
  if (ret == 0)
    ret = write_geometry (dev);
  if (ret == 0 && take_snapshot && dev->geo.memory_backed)
    ret = snapshot_begin (dev);
  /* At a device's creation (log_writes=) nobody waits: copied here. */
  if (ret == 0 && take_snapshot && dev->geo.memory_backed && !background) {
    unsigned char *buf = malloc (CHUNK);

    for (uint32_t i = 0; i < dev->geo.nr_zones && ret == 0; i++)
      ret = buf ? copy_zone (dev, &dev->zones[i], buf) : -ENOMEM;
    free (buf);
    w->snap_end = zn_now_ns ();
    w->snap_ns = w->snap_end - w->snap_start;
    take_snapshot = false;
  }
  if (ret == 0 && w->fd < 0)
    ret = -EIO;
  if (ret == 0) {
    w->gen++;
    atomic_store (&w->on, true);
  }
  /* The copier starts with the zone locks still held: it waits for the
   * first, and a request for a zone it has not reached copies that zone.
   */
  if (ret == 0 && take_snapshot && dev->geo.memory_backed) {
    atomic_store (&w->copying, true);
    ret = -pthread_create (&w->copier, NULL, copier_main, dev);
    if (ret) {
      atomic_store (&w->copying, false);
      atomic_store (&w->on, false);
    }
    w->copier_joinable = ret == 0;
  }
  return ret;
}

/* Opens dir/name (dirfd AT_FDCWD: the path name) for a new log and
 * starts it; the file goes again if it cannot be started.  path names
 * it in messages.
 */
static int
start (struct zn_dev *dev, int dirfd, const char *name, const char *path,
       const char *what, bool take_snapshot, bool background, char *err,
       size_t errlen)
{
  struct zn_wlog *w = dev->wlog;
  int fd, ret;

  dev_lock_zones (dev, 0, dev->geo.nr_zones, true);
  if (!atomic_load (&w->copying))
    join_copier (w);
  if (atomic_load (&w->on) || w->failed || atomic_load (&w->copying)) {
    dev_lock_zones (dev, 0, dev->geo.nr_zones, false);
    snprintf (err, errlen, "%s: a write log is on already (%s); stop it "
              "first", what, w->label);
    return -EBUSY;
  }
  if (take_snapshot && w->snap_ns >= SNAPSHOT_FREE_NS
      && zn_now_ns () < w->snap_end + SNAPSHOT_REST * w->snap_ns) {
    uint64_t wait = w->snap_end + SNAPSHOT_REST * w->snap_ns - zn_now_ns ();

    dev_lock_zones (dev, 0, dev->geo.nr_zones, false);
    snprintf (err, errlen, "%s: the last log's snapshot of this device took "
              "%" PRIu64 " ms; the next may start %d times that after it, in "
              "%" PRIu64 " ms", what,
              w->snap_ns / 1000000, SNAPSHOT_REST, wait / 1000000 + 1);
    return -EAGAIN;
  }
  fd = openat (dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW
               | O_CLOEXEC, 0600);
  if (fd < 0) {
    ret = -errno;
    dev_lock_zones (dev, 0, dev->geo.nr_zones, false);
    snprintf (err, errlen, "%s: %s%s", what, strerror (-ret),
              ret == -EEXIST ? " (a log is never written over; name a "
              "new file)" : "");
    return ret;
  }
  zn_escape (w->label, sizeof w->label, path, strlen (path));
  ret = begin_log (dev, fd, take_snapshot, background);
  dev_lock_zones (dev, 0, dev->geo.nr_zones, false);
  if (ret) {
    snprintf (err, errlen, "%s: writing the log's start: %s", what,
              strerror (-ret));
    if (w->fd >= 0)
      close (w->fd);
    w->fd = -1;
    w->failed = 0;
    unlinkat (dirfd, name, 0);
  }
  return ret;
}

int
wlog_init (struct zn_dev *dev, const struct zn_config *cfg, char *err,
           size_t errlen)
{
  struct zn_wlog *w = calloc (1, sizeof *w);
  char what[ZN_ESCAPED_SIZE (256) + 16];

  if (!w || !(w->block = malloc (dev->geo.block_size))
      || (cfg->log_dir && !(w->dir = strdup (cfg->log_dir)))) {
    if (w)
      free (w->block);
    free (w);
    snprintf (err, errlen, "out of memory for the write log");
    return -ENOMEM;
  }
  zn_mutex_init (&w->lock);
  w->fd = -1;
  dev->wlog = w;
  dev->rec = &wlog_recorder;
  /* Checked now, not at the first LOG_START, whose client could only be
   * told that the server is misconfigured.
   */
  if (w->dir) {
    int fd = open (w->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (fd < 0) {
      int e = errno;

      snprintf (err, errlen, "log_dir=%s: %s (the directory where clients "
                "start write logs)", w->dir, strerror (e));
      return -e;
    }
    close (fd);
  }
  if (!cfg->log_writes)
    return 0;
  snprintf (what, sizeof what, "log_writes=%s", cfg->log_writes);
  /* From its creation, a device holds data only if its files did. */
  return start (dev, AT_FDCWD, cfg->log_writes, cfg->log_writes, what,
                zn_dev_restored (dev), false, err, errlen);
}

static void
wlog_free (struct zn_dev *dev)
{
  struct zn_wlog *w = dev->wlog;

  if (!w)
    return;
  /* The copier ends with the last zone: a log is never left without
   * part of its snapshot.
   */
  join_copier (w);
  if (w->fd >= 0)
    close (w->fd);
  /* A hold no front end completed: its entries went in at quiesce. */
  drop_held (w);
  while (w->holds) {
    struct zn_wlog_hold *h = w->holds;

    w->holds = h->next;
    free (h);
  }
  free (w->zone_first);
  free (w->zone_last);
  pthread_mutex_destroy (&w->lock);
  free (w->dir);
  free (w->block);
  free (w->old_wp);
  free (w->old_cond);
  free (w->dropped);
  free (w->pending);
  free (w);
  dev->wlog = NULL;
}

int
zn_wlog_start_named (struct zn_dev *dev, const char *name, size_t len,
                     char *err, size_t errlen)
{
  struct zn_wlog *w = dev->wlog;
  char copy[256], what[ZN_ESCAPED_SIZE (256) + 16], *path;
  int dirfd, ret;

  if (!zn_control_log_name_ok (name, len)) {
    snprintf (err, errlen, "LOG_START: the name must be 1 to 255 bytes of "
              "A-Z a-z 0-9 . _ -, not starting with a dot or a dash (a file of "
              "log_dir)");
    return -EINVAL;
  }
  memcpy (copy, name, len);
  copy[len] = '\0';
  snprintf (what, sizeof what, "LOG_START %s", copy);
  if (!w->dir) {
    snprintf (err, errlen, "%s: the server has no log_dir=DIR, where logs "
              "may be started", what);
    return -EPERM;
  }

  /* log_dir itself is the operator's, and followed. */
  dirfd = open (w->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0) {
    ret = -errno;
    snprintf (err, errlen, "%s: log_dir=%s: %s", what, w->dir,
              strerror (-ret));
    return ret;
  }
  if (asprintf (&path, "%s/%s", w->dir, copy) < 0) {
    close (dirfd);
    snprintf (err, errlen, "%s: out of memory", what);
    return -ENOMEM;
  }
  ret = start (dev, dirfd, copy, path, what, true, true, err, errlen);
  free (path);
  close (dirfd);
  return ret;
}

int
zn_wlog_stop (struct zn_dev *dev)
{
  struct zn_wlog *w = dev->wlog;
  int ret = 0;

  /* A log whose snapshot is not all written is not whole yet: the client
   * asks again (the client library does, until it is).
   */
  if (atomic_load (&w->copying))
    return -EAGAIN;
  join_copier (w);
  pthread_mutex_lock (&w->lock);
  if (atomic_load (&w->on))
    append_all_held (dev);
  if (w->failed)
    ret = -w->failed;
  else if (!atomic_load (&w->on))
    ret = -ENOENT;
  else if (fdatasync (w->fd) < 0)
    ret = -errno;
  atomic_store (&w->on, false);
  if (w->fd >= 0)
    close (w->fd);
  w->fd = -1;
  w->failed = 0;
  pthread_mutex_unlock (&w->lock);
  return ret;
}

int
zn_wlog_mark (struct zn_dev *dev, const char *name, size_t len)
{
  struct zn_wlog *w = dev->wlog;
  int ret = -ENOENT;

  if (!zn_control_mark_name_ok (name, len))
    return -EINVAL;
  pthread_mutex_lock (&w->lock);
  /* A mark a request makes (fault-after:) follows its write. */
  if (atomic_load (&w->on))
    ret = hold_entry (dev, NO_ZONE, ZN_WLOG_MARK, 0, 0, name, len) ? 0
      : append (dev, ZN_WLOG_MARK, 0, 0, 0, name, len, NULL);
  pthread_mutex_unlock (&w->lock);
  return ret;
}

static bool
wlog_may_record (const struct zn_dev *dev)
{
  /* gen only moves in start (), which without a dir runs only at
   * creation (log_writes=).
   */
  return dev->wlog->dir != NULL || dev->wlog->gen > 0;
}

bool
zn_wlog_on (struct zn_dev *dev)
{
  return atomic_load (&dev->wlog->on);
}

static const struct zn_recorder wlog_recorder = {
  .may_record = wlog_may_record,
  .touch = wlog_touch,
  .busy = wlog_copying,
  .write = wlog_write,
  .zone_op = wlog_zone_op,
  .cond = wlog_cond,
  .flush_ref = wlog_flush_ref,
  .flush = wlog_flush,
  .power_begin = wlog_power_begin,
  .dropped = wlog_dropped,
  .power_end = wlog_power_end,
  .quiesce = wlog_quiesce,
  .free = wlog_free,
};
