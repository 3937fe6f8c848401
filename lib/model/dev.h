/* SPDX-License-Identifier: BSD-3-Clause */
/* The device structure and its locks (dev.c), shared by the model's
 * files: zoned.c (the zone state machine), pipeline.c (pipelined writes),
 * power.c (the power cycle), report.c (zone reports), and the rest, and
 * by what stands on the model: the back ends fill in their parts of a
 * zone, and the write log reads the zones it copies.
 */
#ifndef ZONEDNULL_DEV_H
#define ZONEDNULL_DEV_H

#include <pthread.h>
#include <stdatomic.h>

#include "model/crash.h"
#include "model/zoned.h"
#include "model/backend.h"
#include "model/recorder.h"


/* A zone's memory, which lib/storage/pages.c maps and fills. */
struct zn_pages {
  unsigned char *data;      /* NULL until the zone is first written */
  uint64_t bytes;
};

struct wp_waiter {
  uint64_t sector;
  pthread_cond_t cond;
  struct wp_waiter *next;
};

struct zone {
  /* Serialises everything on this zone.  Under limits, an implicit close
   * changes another zone's cond holding only the resource lock, so cond of
   * an open or closed zone is read and written under both.
   */
  pthread_mutex_t lock;
  pthread_mutex_t *mutex;        /* &lock, or the device lock (device_lock) */
  uint64_t start;
  uint64_t len;
  uint64_t capacity;
  uint64_t wp;
  uint8_t type;
  uint8_t cond;
  struct zn_pages pages;
  /* Pipelined writes only: the writes waiting for the wp, each on its own
   * condition variable so that a wp move wakes only the write it reaches;
   * fail_gen changes when they must all give up.
   */
  struct wp_waiter *waiters;
  atomic_uint nr_waiting;         /* read and ended without the lock */
  uint64_t fail_gen;
};

struct zn_dev {
  struct zn_geometry geo;
  uint64_t generation;           /* zn_dev_generation () */
  unsigned zone_shift;           /* log2 (zone_sectors) */
  bool need_res_mgmt;            /* limits enforced: take res_lock */
  pthread_mutex_t res_lock;      /* counters and implicit-close cursor */
  pthread_mutex_t dev_lock;      /* every zone's lock with device_lock */
  /* Atomic because without limits zones on different locks update them. */
  atomic_uint nr_imp_open;
  atomic_uint nr_exp_open;
  atomic_uint nr_closed;
  uint32_t imp_close_cursor;     /* next zone to try for an implicit close */
  struct zone *zones;
  /* Pipelined writes (pipeline.c), NULL without pipeline_zoned_writes. */
  struct zn_pipeline *pipeline;
  /* Fault injection, fault rules and latencies (fault.c). */
  struct zn_faults *faults;
  /* Bad blocks: their table, which only badblocks.c reads. */
  struct zn_badblocks *bb;
  /* The volatile write cache (cache.c), NULL without one. */
  struct zn_cache *cache;
  /* Kernel-specific behaviour (6.12, 7.3). */
  bool zone_full;
  bool badblocks_once;
  bool badblocks_partial_io;
  /* The block layer's zone write plugs (wplug.c), NULL when the front
   * end did not ask for them.
   */
  struct zn_wplug *wplugs;
  /* backing_dir (store.c), NULL when the data lives in memory; what it
   * tells the model: whether it held a device before, its path, and the
   * wait for the zone files it is still making.
   */
  struct zn_store *store;
  bool restored;
  const char *backing_dir;
  int (*files_made) (struct zn_dev *dev, char *err, size_t errlen);
  /* Where the data is (backend.h), and with a cache what it is on. */
  const struct zn_backend *backend;
  /* What records the device's requests (recorder.h), NULL for none; the
   * write log's state, which only the log reads.
   */
  const struct zn_recorder *rec;
  struct zn_wlog *wlog;
};

/* ---- locks ------------------------------------------------------------ */

/* The locking rules are checked, not only written down, in a debug build
 * (configure --enable-debug, and --enable-sanitizers): there the model's
 * mutexes are error-checking, which lets ZN_ASSERT_HELD ask whether this
 * thread owns one, and a rule broken aborts with the file and line.  A
 * release build compiles the checks away.
 */
#ifdef ZN_DEBUG_LOCKS
void zn_assert_held (pthread_mutex_t *m, const char *what,
                     const char *file, int line);
# define ZN_ASSERT_HELD_AS(m, name) \
  zn_assert_held ((m), (name), __FILE__, __LINE__)
#else
# define ZN_ASSERT_HELD_AS(m, name) ((void) 0)
#endif
#define ZN_ASSERT_HELD(m) ZN_ASSERT_HELD_AS (m, #m)

void zn_mutex_init (pthread_mutex_t *m);

/* A read by zn_read_nowait: on this thread, a lock held by another
 * thread or data not in memory make the read fail with -EAGAIN instead
 * of waiting (the back ends check it too).
 */
extern _Thread_local bool zn_nowait;

/* Takes m, or with zn_nowait and m held elsewhere, nothing: false. */
static inline bool
lock_or_again (pthread_mutex_t *m)
{
  if (zn_nowait)
    return pthread_mutex_trylock (m) == 0;
  pthread_mutex_lock (m);
  return true;
}

/* null_blk: null_lock_zone (), null_unlock_zone () */
static inline void
zone_lock (struct zone *z)
{
  pthread_mutex_lock (z->mutex);
}

static inline void
zone_unlock (struct zone *z)
{
  pthread_mutex_unlock (z->mutex);
}

/* null_blk: null_lock_zone_res (), null_unlock_zone_res () */
static inline void
res_lock (struct zn_dev *dev)
{
  if (dev->need_res_mgmt)
    pthread_mutex_lock (&dev->res_lock);
}

static inline void
res_unlock (struct zn_dev *dev)
{
  if (dev->need_res_mgmt)
    pthread_mutex_unlock (&dev->res_lock);
}

/* The zone's lock and the resource lock, under which a zone's cond and
 * wp are read (a sequential zone's writer holds both over its back end's
 * write); with zn_nowait and either held elsewhere, neither: false.
 */
static inline bool
zone_res_lock_or_again (struct zn_dev *dev, struct zone *z)
{
  if (!lock_or_again (z->mutex))
    return false;
  if (dev->need_res_mgmt && !lock_or_again (&dev->res_lock)) {
    zone_unlock (z);
    return false;
  }
  return true;
}

#define ZONE_ASSERT_HELD(z) ZN_ASSERT_HELD_AS ((z)->mutex, "the zone lock")
/* The resource lock is only taken while limits are enforced. */
#define RES_ASSERT_HELD(dev) \
  do { \
    if ((dev)->need_res_mgmt) \
      ZN_ASSERT_HELD_AS (&(dev)->res_lock, "the resource lock"); \
  } while (0)

/* Power cycle and snapshot: every zone held still. */
#ifdef ZN_DEBUG_LOCKS
# define ALL_ZONES_ASSERT_HELD(dev) \
  for (uint32_t zi_ = 0; zi_ < (dev)->geo.nr_zones; zi_++) \
    ZONE_ASSERT_HELD (&(dev)->zones[zi_])
#else
# define ALL_ZONES_ASSERT_HELD(dev) ((void) 0)
#endif

/* null_blk: null_zone_no () */
static inline struct zone *
zone_of (struct zn_dev *dev, uint64_t sector)
{
  return &dev->zones[sector >> dev->zone_shift];
}

static inline unsigned
count (atomic_uint *c)
{
  return atomic_load_explicit (c, memory_order_relaxed);
}

/* The zone locks [first, end) in zone order (once with device_lock),
 * taken or released.
 */
void dev_lock_zones (struct zn_dev *dev, uint32_t first, uint32_t end, bool lock);

/* pipeline.c, with the zone lock held: the wait of a write ahead of the
 * write pointer, and the wake-up of such writes when it moves (with
 * give_up they fail).
 */
int pipeline_wait (struct zn_dev *dev, struct zone *z, uint64_t sector,
                   uint64_t n);
void pipeline_wake_waiters (struct zone *z, bool give_up);
/* dev->pipeline from the configuration (left NULL without
 * pipeline_zoned_writes); -ENOMEM.
 */
int pipeline_init (struct zn_dev *dev, const struct zn_config *cfg);
void pipeline_free (struct zn_dev *dev);
/* fault.c: dev->faults from the configuration; -ENOMEM. */
int fault_init (struct zn_dev *dev, const struct zn_config *cfg);
void fault_free (struct zn_dev *dev);

/* wplug.c, all with the zone lock held */
void wplug_free (struct zn_dev *dev);
int wplug_prepare (struct zn_dev *dev, struct zone *z, uint64_t *sector,
                   uint64_t n, bool append, enum zn_reason *why);
void wplug_complete (struct zn_dev *dev, struct zone *z, int ret);
void wplug_native_append (struct zn_dev *dev, struct zone *z);
void wplug_zone_mgmt (struct zn_dev *dev, struct zone *z, enum zn_zone_op op);
void wplug_remove_all (struct zn_dev *dev);
void wplug_report (struct zn_dev *dev, struct zone *z, uint8_t cond,
                   uint64_t wp);

/* ---- the recorder's hooks (recorder.h), where there is one ---------- */

static inline void
rec_touch (struct zn_dev *dev, struct zone *z)
{
  if (dev->rec)
    dev->rec->touch (dev, z);
}

static inline int
rec_write (struct zn_dev *dev, struct zone *z, uint64_t sector, uint64_t n,
           const void *buf, bool fua, bool append)
{
  return dev->rec ? dev->rec->write (dev, z, sector, n, buf, fua, append) : 0;
}

static inline int
rec_zone_op (struct zn_dev *dev, struct zone *z, enum zn_zone_op op)
{
  return dev->rec ? dev->rec->zone_op (dev, z, op) : 0;
}

static inline int
rec_cond (struct zn_dev *dev, struct zone *z, uint8_t cond)
{
  return dev->rec ? dev->rec->cond (dev, z, cond) : 0;
}

static inline struct zn_flush_ref
rec_flush_ref (struct zn_dev *dev)
{
  return dev->rec ? dev->rec->flush_ref (dev) : (struct zn_flush_ref) { 0, 0 };
}

static inline int
rec_flush (struct zn_dev *dev, struct zn_flush_ref ref)
{
  return dev->rec ? dev->rec->flush (dev, ref) : 0;
}

/* badblocks.c; init is -ENOMEM or 0. */
int badblocks_init (struct zn_dev *dev);
void badblocks_free (struct zn_dev *dev);
/* The back end keeps the bad blocks (with backing_dir, in its metadata
 * file): 0 or -EIO.
 */
int badblocks_save (struct zn_dev *dev);
bool badblocks_check (struct zn_dev *dev, uint64_t sector, uint64_t n,
                      uint64_t *good);

#endif
