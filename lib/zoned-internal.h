/* The device structure, shared by the geometry and state-machine files. */
#ifndef ZONEDNULL_ZONED_INTERNAL_H
#define ZONEDNULL_ZONED_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "zoned.h"
#include "pages.h"

struct zn_bb_range {
  uint64_t start, end;           /* sectors, [start, end) */
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
  uint32_t nr_waiting;
  uint64_t fail_gen;
};

struct zn_dev {
  struct zn_geometry geo;
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
  bool pipeline;                 /* pipeline_zoned_writes */
  pthread_condattr_t wp_condattr; /* CLOCK_MONOTONIC, for the waiters */
  uint32_t pipeline_wait_ms;
  uint32_t pipeline_max_waiting;
  /* Bad blocks (badblocks.c). */
  pthread_rwlock_t bb_lock;
  struct zn_bb_range *bb;
  size_t bb_used;
  atomic_size_t nr_bb;
  /* The volatile write cache (cache.c). */
  pthread_mutex_t cache_lock;
  uint64_t cache_bytes;          /* cache_size; 0 = no cache */
  uint64_t dirty_bytes;
  struct zn_undo *undo_head, *undo_tail;
  uint32_t *cache_count;         /* backing_dir: records a zone has */
  atomic_uint pl_waiting;
  atomic_ullong pl_waited;
  atomic_ullong pl_timeouts;
  atomic_ullong pl_failed;
  /* Kernel-specific behaviour (6.12, 7.3). */
  bool zone_full;
  bool badblocks_once;
  bool badblocks_partial_io;
  /* The block layer's zone write plugs (wplug.c), NULL when the front
   * end did not ask for them.
   */
  struct zn_wplug *wplugs;
  /* backing_dir (store.c), NULL when the data lives in memory. */
  struct zn_store *store;
};

/* geometry.c: null_blk's power-on validation and clamping. */
int zn_geometry_from_config (const struct zn_config *cfg,
                             struct zn_geometry *geo,
                             char *err, size_t errlen);

/* cache.c */
struct zn_undo;
void cache_init (struct zn_dev *dev, uint64_t cache_bytes);
void cache_free (struct zn_dev *dev);
int cache_before_write (struct zn_dev *dev, struct zone *z, uint64_t off,
                        uint64_t len, bool fua);
void cache_power_loss (struct zn_dev *dev);
/* With backing_dir the cache holds the written data itself, and the zone
 * file gets it at write-back (zone lock held for z).
 */
int cache_write (struct zn_dev *dev, struct zone *z, uint64_t off,
                 const void *buf, uint64_t len, bool fua);
int cache_read (struct zn_dev *dev, struct zone *z, uint64_t off,
                void *buf, uint64_t len);
void cache_drop_zone (struct zn_dev *dev, struct zone *z);
int cache_write_back_zone (struct zn_dev *dev, struct zone *z);

/* wplug.c, all with the zone lock held */
void wplug_free (struct zn_dev *dev);
int wplug_prepare (struct zn_dev *dev, struct zone *z, uint64_t *sector,
                   uint64_t n, bool append);
void wplug_complete (struct zn_dev *dev, struct zone *z, int ret);
void wplug_native_append (struct zn_dev *dev, struct zone *z);
void wplug_zone_mgmt (struct zn_dev *dev, struct zone *z, enum zn_zone_op op);
void wplug_remove_all (struct zn_dev *dev);
void wplug_report (struct zn_dev *dev, struct zone *z, uint8_t cond,
                   uint64_t wp);

/* badblocks.c */
void badblocks_init (struct zn_dev *dev);
void badblocks_free (struct zn_dev *dev);
bool badblocks_check (struct zn_dev *dev, uint64_t sector, uint64_t n,
                      uint64_t *good);

#endif
