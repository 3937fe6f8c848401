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

/* Once, naming the file: the log has a hole from here on, so it stops. */
static int
stop_failed (struct zn_wlog *w, int err)
{
  fprintf (stderr, "zonednull: write log %s: writing entry %" PRIu64
           ": %s; the log stops here and the request fails\n", w->label,
           w->nr_entries, strerror (err));
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

/* ---- hooks -------------------------------------------------------------- */

static int
wlog_write (struct zn_dev *dev, struct zone *z, uint64_t sector, uint64_t n,
            const void *buf, bool fua, bool append)
{
  (void) z;
  ZONE_ASSERT_HELD (z);
  return log_entry (dev, 0, (fua ? ZN_WLOG_FUA : 0)
                    | (append ? ZN_WLOG_APPEND : 0), sector, n, 0, buf);
}

static int
wlog_zone_op (struct zn_dev *dev, struct zone *z, enum zn_zone_op op)
{
  static const uint64_t flags[] = {
    [ZN_OP_OPEN] = ZN_WLOG_OPEN, [ZN_OP_CLOSE] = ZN_WLOG_CLOSE,
    [ZN_OP_FINISH] = ZN_WLOG_FINISH,
  };

  ZONE_ASSERT_HELD (z);
  /* A reset is a discard of the zone to dm-log-writes' readers. */
  if (op == ZN_OP_RESET)
    return log_entry (dev, 0, ZN_WLOG_DISCARD | ZN_WLOG_RESET, z->start,
                      z->len, 0, NULL);
  return log_entry (dev, 0, flags[op], z->start, 0, 0, NULL);
}

static int
wlog_cond (struct zn_dev *dev, struct zone *z, uint8_t cond)
{
  ZONE_ASSERT_HELD (z);
  return log_entry (dev, 0, ZN_WLOG_COND, z->start, 0, cond, NULL);
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

static void
wlog_snapshot_wait (struct zn_dev *dev)
{
  if (dev->wlog)
    join_copier (dev->wlog);
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
  if (atomic_load (&w->on))
    ret = append (dev, ZN_WLOG_MARK, 0, 0, 0, name, len, NULL);
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
  .quiesce = wlog_snapshot_wait,
  .free = wlog_free,
};
