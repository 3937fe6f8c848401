/* SPDX-License-Identifier: BSD-3-Clause */
/* zonednull: the Linux null_blk zoned device model, as null_blk of Linux
 * 6.1 (the default), 6.12 or 7.3 behaves (struct zn_config's kernel).
 *
 * This library knows nothing about NBD or any other transport: the nbdkit
 * plugin, the native server and the tests are thin adapters over it.
 *
 * Units follow the kernel: configuration sizes are in MiB as in null_blk,
 * everything else is in 512-byte sectors whatever the logical block size.
 * Every operation returns 0 or the negative errno an application would get
 * from the real driver through the block layer.  All calls are thread-safe.
*
 * Not installed: the model is linked into the programs, and clients see
 * only zonednull/zone.h's types, through libzonednull-client.
 */
#ifndef ZONEDNULL_LIB_ZONED_H
#define ZONEDNULL_LIB_ZONED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zonednull/zone.h"
#include "model/errors.h"
#include "util/fault-attr.h"

/* "6.1", "6.12", "7.3" */
const char *zn_kernel_name (enum zn_kernel k);
/* The inverse: 0, or -EINVAL for any other string. */
int zn_kernel_parse (const char *s, enum zn_kernel *k);

/* Bits of zn_config's given: the keys that exist only in newer kernels,
 * so that one given for a kernel that lacks it is refused even with its
 * default value.
 */
#define ZN_GIVEN_ZONE_FULL               (1u << 0)
#define ZN_GIVEN_ZONE_APPEND_MAX_SECTORS (1u << 1)
#define ZN_GIVEN_FUA                     (1u << 2)
#define ZN_GIVEN_BADBLOCKS_ONCE          (1u << 3)
#define ZN_GIVEN_BADBLOCKS_PARTIAL_IO    (1u << 4)

/* null_blk parameters, with null_blk's names and units. */
struct zn_config {
  enum zn_kernel kernel;    /* whose null_blk; default 6.1 */
  uint64_t size;            /* device size, MiB */
  uint64_t zone_size;       /* zone length, MiB, power of 2 */
  uint64_t zone_capacity;   /* writable part of a zone, MiB; 0 = zone_size */
  uint32_t zone_nr_conv;    /* leading conventional zones */
  uint32_t zone_max_open;   /* 0 = no limit */
  uint32_t zone_max_active; /* 0 = no limit */
  uint32_t blocksize;       /* logical = physical block size, bytes */
  uint32_t max_sectors;     /* largest request before splitting; 0 = 255 */
  bool memory_backed;       /* keep written data */
  /* Pipelined zoned writes (doc/zone-rules.md, 12), off by default: a
   * write to a sequential zone that lies ahead of the write pointer waits,
   * up to pipeline_wait_ms and with at most pipeline_max_waiting writes
   * waiting per zone, until the write pointer reaches it.  Off, every
   * write is judged at once, as null_blk does.
   */
  bool pipeline_zoned_writes;
  uint32_t pipeline_wait_ms;      /* 0 = ZN_PIPELINE_WAIT_MS */
  uint32_t pipeline_max_waiting;  /* 0 = ZN_PIPELINE_MAX_WAITING */
  /* One lock for all zones instead of one per zone, as null_blk had
   * before "improve zone locking" (5.12): same results, less parallelism.
   * For the zone-locking benchmark.
   */
  bool device_lock;
  /* null_blk's cache_size, MiB: a volatile write cache.  Forced to 0
   * unless memory_backed, as in null_blk.
   */
  uint64_t cache_size;
  /* The key blocksize was given as, for messages: "bs" or "blocksize";
   * NULL = "blocksize".  Not a setting.
   */
  const char *blocksize_key;
  /* Attributes of newer kernels (refused for older ones, see given). */
  bool zone_full;                   /* 6.11: sequential zones start FULL */
  uint32_t zone_append_max_sectors; /* 6.10: default INT32_MAX; 0 = the
                                       block layer emulates zone append */
  bool fua;                         /* 6.10: default 1; FUA advertised
                                       only with a cache and fua */
  bool badblocks_once;              /* 6.15: a bad range hit is cleared */
  bool badblocks_partial_io;        /* 6.15: transfer up to the first bad
                                       block, then fail */
  uint32_t given;                   /* ZN_GIVEN_* of the keys set */
  /* Keep the zones in files in this directory, in zloop's layout, so
   * that they outlive the process (implies memory_backed); NULL: in
   * memory.  Not copied: it must live as long as the device.  Nothing
   * in it is followed if a symbolic link; the directory itself is (the
   * operator named it, and systemd's DynamicUser makes a StateDirectory
   * one) unless backing_dir_nofollow: DIR/nullbI of nr_devices > 1 lies
   * in the operator's DIR.
   */
  const char *backing_dir;
  bool backing_dir_nofollow;
  /* The write log (zonednull-log(5)): a new file it is written to from
   * the device's creation, and the directory in which the control
   * channel may start one; NULL: none.  Not copied.
   */
  const char *log_writes;
  const char *log_dir;
  /* null_blk's fault injection (timeout=, requeue=; lib/model/fault.h),
   * and how long each zone operation takes to complete, in ns (0: as
   * long as any request).
   */
  struct zn_fault_attr timeout_inject;
  struct zn_fault_attr requeue_inject;
  uint64_t zone_reset_nsec;
  uint64_t zone_open_nsec;
  uint64_t zone_close_nsec;
  uint64_t zone_finish_nsec;
  uint64_t zone_append_nsec;
};

#define ZN_PIPELINE_WAIT_MS 1000
#define ZN_PIPELINE_MAX_WAITING 1024

/* null_blk's defaults (configfs device: size = 250 GiB, 256 MiB zones),
 * kernel 6.1.
 */
void zn_config_init (struct zn_config *cfg);

/* The device as the kernel exposes it after validation and clamping. */
struct zn_geometry {
  uint64_t capacity;        /* sectors */
  uint64_t zone_sectors;    /* power of 2 */
  uint64_t zone_capacity;   /* sectors, of every sequential zone but a runt */
  uint32_t nr_zones;
  uint32_t nr_conv;
  uint32_t max_open;        /* clamped; 0 = no limit */
  uint32_t max_active;      /* clamped; 0 = no limit */
  uint32_t block_size;      /* bytes */
  uint32_t max_sectors;     /* rounded down to the block size */
  uint32_t max_append_sectors; /* largest zone append: min (max_sectors,
                                  zone_sectors), the block layer's limit;
                                  from 6.10 zone_append_max_sectors too */
  bool memory_backed;
  enum zn_kernel kernel;
  bool append_emulated;     /* zone_append_max_sectors=0 (6.10+): appends
                               become writes in the zone write plug */
  bool fua;                 /* FUA is advertised: always on 6.1, as
                               zonednull always did; from 6.10 only with
                               cache_size and fua, as null_blk */
};

/* Zone counters, as null_blk keeps them. */
struct zn_counters {
  uint32_t imp_open;
  uint32_t exp_open;
  uint32_t closed;
};

struct zn_dev;

/* Validates cfg as null_blk does at power-on.  On failure returns NULL,
 * sets errno (EINVAL or ENOMEM) and, if err is not NULL, writes a message
 * naming the parameter and the rule it broke.
 */
struct zn_dev *zn_dev_create (const struct zn_config *cfg,
                              char *err, size_t errlen);
void zn_dev_destroy (struct zn_dev *dev);
/* The model alone: no back end for its data (lib/storage/attach.c puts
 * one in) and no recorder of its requests (zn_dev_create, in
 * lib/frontend/device.c, attaches the write log).
 */
struct zn_dev *zn_model_create (const struct zn_config *cfg,
                                char *err, size_t errlen);

/* For front ends that stand for /dev/nullb0 itself (the NBD servers and
 * the trace replay): puts the block layer's zone write plugging of 6.10
 * and later in front of the device, as a user of /dev/nullb0 on that
 * kernel meets it (a per-zone cached write pointer that refuses writes
 * not at it before null_blk sees them, flagged for an update from the
 * next zone report when a write fails; see lib/model/wplug.c).  Nothing for
 * kernel 6.1.  zonednull-ublk must not call it: its host's block layer
 * plugs the writes of /dev/ublkbN already.  Call it before any I/O.
 * Returns -EINVAL with a message when the configuration cannot have it
 * (pipeline_zoned_writes waits for writes that the plug refuses), or
 * -ENOMEM.
 */
int zn_dev_write_plugging (struct zn_dev *dev, char *err, size_t errlen);

/* With backing_dir: waits until every zone file exists (a new
 * directory's are made behind the device).  -errno, with a message
 * naming the file, when one could not be made (no inode left, a file
 * size limit).  What an offline writer such as replay calls before it
 * says it succeeded.
 */
int zn_dev_sync_files (struct zn_dev *dev, char *err, size_t errlen);
const struct zn_geometry *zn_dev_geometry (const struct zn_dev *dev);
/* Which device this is: a random value, never 0, drawn when the device
 * was made.  A backing_dir keeps it, so the same directory restarted is
 * the same device; zones in memory get a new one at each start.  A
 * client that reconnects compares it to know its data is still there.
 */
uint64_t zn_dev_generation (const struct zn_dev *dev);
/* Whether the device came back from a backing_dir that held one. */
bool zn_dev_restored (const struct zn_dev *dev);
/* The directory that holds the zones, or NULL when they are in memory. */
const char *zn_dev_backing_dir (const struct zn_dev *dev);
/* Whether the sequential zones powered on FULL (zone_full, 6.11+). */
bool zn_dev_zone_full (const struct zn_dev *dev);
/* Whether a write's data goes anywhere: a back end that keeps it
 * (memory_backed=1) or a write log that records it (log_writes= or
 * log_dir=).  Fixed when the device is made, so a server that gets
 * false may hand zn_write and zn_zone_append a buffer it never filled.
 */
bool zn_dev_uses_write_data (const struct zn_dev *dev);
/* The geometry a device of cfg gets: null_blk's power-on validation and
 * clamping (geometry.c).  -EINVAL with a message naming the parameter.
 */
int zn_geometry_from_config (const struct zn_config *cfg,
                             struct zn_geometry *geo,
                             char *err, size_t errlen);
/* Whether nr_devices devices of cfg may be made: their zone tables
 * together must fit in half of the machine's physical memory.  -ENOMEM
 * with a message naming nr_devices, size and zone_size (or -EINVAL with
 * the geometry's own message) when not; zn_dev_create checks one device.
 */
int zn_zone_table_check (const struct zn_config *cfg, uint32_t nr_devices,
                         char *err, size_t errlen);

/* Data path.  Requests must be aligned to the block size and lie within
 * the device (else -EINVAL).  Like the block layer, a request is split at
 * zone boundaries and at max_sectors; every part is attempted in ascending
 * order and the errno of the highest failing part is returned.
 *
 * With pipeline_zoned_writes, a write ahead of its zone's write pointer
 * waits for it.  It fails with -ETIMEDOUT when the wait bound passes, with
 * -EBUSY when pipeline_max_waiting writes already wait on the zone, and
 * with -EIO when, while it waits, a write at the write pointer fails or the
 * zone is reset, finished, or made READONLY or OFFLINE.  These two extra
 * codes exist only to say why; adapters send EIO for both, as null_blk
 * would fail such a write (zn_block_errno).
 */
int zn_read (struct zn_dev *dev, void *buf, uint64_t sector, uint64_t nr_sectors);
int zn_write (struct zn_dev *dev, const void *buf,
              uint64_t sector, uint64_t nr_sectors);
/* A write with FUA: with a cache, its data is durable when it returns. */
int zn_write_fua (struct zn_dev *dev, const void *buf,
                  uint64_t sector, uint64_t nr_sectors);
/* zn_read, zn_write (zn_write_fua with fua), and below zn_zone_append
 * and zn_zone_mgmt, that also say in *why why they failed (errors.h),
 * as the failing check knew it: a front end must not guess it from the
 * zones afterwards.  ZN_REASON_NONE on success.  When parts fail, the
 * reason is the errno's part's.
 */
int zn_read_why (struct zn_dev *dev, void *buf, uint64_t sector,
                 uint64_t nr_sectors, enum zn_reason *why);
int zn_write_why (struct zn_dev *dev, const void *buf, uint64_t sector,
                  uint64_t nr_sectors, bool fua, enum zn_reason *why);
/* zn_read_why, or -EAGAIN, having changed nothing, when it would wait: a
 * zone's lock is held by another thread, or its data is not in memory
 * (backing_dir's pages not cached).  For an event loop that hands the
 * reads that would wait to threads.
 */
int zn_read_nowait (struct zn_dev *dev, void *buf, uint64_t sector,
                    uint64_t nr_sectors, enum zn_reason *why);
/* zn_write_why without FUA, or -EAGAIN, having changed nothing, unless
 * it can only wait for its zone's lock, briefly: one part (within a zone
 * and max_sectors), no volatile cache (cache_size) and no zone write
 * plug (kernel=6.12, 7.3).  A write into the page cache does not wait
 * for the disk; the event loop runs it at once.
 */
int zn_write_nowait (struct zn_dev *dev, const void *buf, uint64_t sector,
                     uint64_t nr_sectors, enum zn_reason *why);

/* Zone append (REQ_OP_ZONE_APPEND): writes nr_sectors at the write
 * pointer of the sequential zone that starts at sector and sets *written
 * to the sector the data landed at.  The checks, implicit open, resource
 * limits and errors are those of a write at the write pointer; it is one
 * part, never split, and atomic against other writes to the zone.  As the
 * block layer and null_blk refuse them: -EIO for a sector that is not the
 * start of a sequential zone (a conventional zone included), for more than
 * max_append_sectors, and for data past the zone's capacity; -EINVAL for
 * a request that is empty, unaligned or past the end of the device.
 * With fua, as zn_write_fua.
 */
int zn_zone_append (struct zn_dev *dev, const void *buf, uint64_t sector,
                    uint64_t nr_sectors, bool fua, uint64_t *written);
int zn_zone_append_why (struct zn_dev *dev, const void *buf, uint64_t sector,
                        uint64_t nr_sectors, bool fua, uint64_t *written,
                        enum zn_reason *why);

/* The volatile write cache (cache_size).  zn_flush makes every completed
 * write durable (a no-op without a cache).  zn_power_cycle is configfs
 * power=0 then power=1: the cache is dropped without write-back, so
 * writes neither flushed nor written with FUA are lost, and the zones
 * are rebuilt (every sequential zone EMPTY, or FULL with zone_full,
 * counters zero, READONLY and OFFLINE cleared, implicit-close cursor at
 * the first sequential zone, no zone write plugs).
 * Stored data and bad blocks survive.  Writes waiting for their wp fail.
 * zn_power_cycle_keep keeps of the unflushed writes what keep says
 * (crash.h; -EINVAL for ZN_KEEP_ENUMERATE), by the rules of doc/power-fail.md's
 * section 2: a prefix of each sequential zone's, each write of a
 * conventional zone whole or not at all.  Without backing_dir every
 * sequential zone starts over anyway, so only conventional zones show it.
 */
struct zn_keep;
int zn_flush (struct zn_dev *dev);
int zn_power_cycle (struct zn_dev *dev);
int zn_power_cycle_keep (struct zn_dev *dev, const struct zn_keep *keep);
/* Cache size and bytes not yet written back, both in bytes. */
void zn_cache_stats (struct zn_dev *dev, uint64_t *size, uint64_t *dirty);

/* BLKOPENZONE, BLKCLOSEZONE, BLKFINISHZONE, BLKRESETZONE over a range, with
 * the block layer's range rules; a reset of the whole device is reset-all.
 */
int zn_zone_mgmt (struct zn_dev *dev, enum zn_zone_op op,
                  uint64_t sector, uint64_t nr_sectors);
int zn_zone_mgmt_why (struct zn_dev *dev, enum zn_zone_op op, uint64_t sector,
                      uint64_t nr_sectors, enum zn_reason *why);

/* configfs zone_readonly / zone_offline: toggles the zone holding sector. */
int zn_zone_set_readonly (struct zn_dev *dev, uint64_t sector);
int zn_zone_set_offline (struct zn_dev *dev, uint64_t sector);

/* Reports up to max zones starting with the zone holding sector.
 * Returns the number of zones written (0 past the end).
 */
unsigned zn_report_zones (struct zn_dev *dev, uint64_t sector,
                          struct zn_zone *zones, unsigned max);
/* zn_report_zones, or -EAGAIN when a zone's lock is held by another
 * thread: a write of backing_dir on a storage thread holds it while the
 * disk takes the data (and syncs it, with FUA), which an event loop must
 * not wait for.
 */
int zn_report_zones_nowait (struct zn_dev *dev, uint64_t sector,
                            struct zn_zone *zones, unsigned max);
/* Zones first, first + 1, ... (up to max) and, unless counters is NULL,
 * the counters, all from one instant: the zones involved are locked at
 * once (every zone for the counters), where zn_report_zones locks one at
 * a time and can show a transition that changed two zones, or a zone and
 * a counter, half done.  For the control export's reads.  Returns the
 * number of zones written.
 */
unsigned zn_report_snapshot (struct zn_dev *dev, uint32_t first,
                             struct zn_zone *zones, unsigned max,
                             struct zn_counters *counters);

void zn_get_counters (struct zn_dev *dev, struct zn_counters *counters);

/* Pipelined writes, over the whole device. */
struct zn_pipeline_stats {
  uint32_t waiting;         /* writes waiting for their wp now */
  uint64_t waited;          /* writes that had to wait */
  uint64_t timeouts;        /* ... and gave up at the bound (ETIMEDOUT) */
  uint64_t failed;          /* ... and failed for another reason */
};

void zn_get_pipeline_stats (struct zn_dev *dev, struct zn_pipeline_stats *s);

/* The pipelined wait for an event loop, which must not block in zn_write.
 * zn_pipeline_begin: 0 if the write may be applied now (with
 * pipeline_zoned_writes off, always), ZN_PIPELINE_WAIT if it must wait
 * for its zone's write pointer (*w describes the wait), -EBUSY if
 * pipeline_max_waiting writes already wait on the zone.  While it waits,
 * zn_pipeline_poll is ZN_PIPELINE_WAIT, then 0 once zn_write may be
 * called (it will not block), or -EIO if the wait failed as zn_write's
 * would.  The caller bounds the wait with pipeline_wait_ms, and calls
 * zn_pipeline_end once with the outcome (0, -EIO or -ETIMEDOUT) for the
 * counters; zn_pipeline_end takes no lock.  With nowait, zn_pipeline_begin
 * and zn_pipeline_poll do not wait for a lock that another thread holds
 * (a storage thread writing the zone, or syncing it for a FUA write):
 * they return -EAGAIN, having changed nothing, and the caller asks again
 * later.
 */
#define ZN_PIPELINE_WAIT 1
struct zn_pipeline_wait {
  uint64_t sector;
  uint64_t gen;
};
int zn_pipeline_begin (struct zn_dev *dev, uint64_t sector,
                       uint64_t nr_sectors, bool nowait,
                       struct zn_pipeline_wait *w);
int zn_pipeline_poll (struct zn_dev *dev, const struct zn_pipeline_wait *w,
                      bool nowait);
void zn_pipeline_end (struct zn_dev *dev, const struct zn_pipeline_wait *w,
                      int result);

/* Bad blocks, as null_blk's configfs "badblocks": inclusive ranges of
 * 512-byte sectors.  A read or write part that overlaps one fails with
 * -EIO and transfers nothing; a zoned write has already opened its zone
 * when the check runs (6.1), but its wp does not move.  On 7.3 the entry
 * met is cleared with badblocks_once, and with badblocks_partial_io a
 * write part stores what lies before it and moves the wp by that much
 * (the part still fails).  Set and clear merge and split ranges; first >
 * last is -EINVAL.  The table is the kernel's struct badblocks: at most
 * ZN_BADBLOCKS_MAX entries of at most ZN_BADBLOCKS_MAX_LEN sectors.  A
 * set that does not fit fails with -ENOSPC and keeps the part it added,
 * as the kernel's; a clear that can only split an entry of a full table
 * is -ENOSPC too.
 */
int zn_badblocks_set (struct zn_dev *dev, uint64_t first, uint64_t last);
int zn_badblocks_clear (struct zn_dev *dev, uint64_t first, uint64_t last);
/* "+A-B" sets, "-A-B" clears; anything else is -EINVAL. */
int zn_badblocks_parse (struct zn_dev *dev, const char *spec);
/* Copies up to max entries; returns how many there are. */
size_t zn_badblocks_list (struct zn_dev *dev, uint64_t *first, uint64_t *last,
                          size_t max);

#endif /* ZONEDNULL_LIB_ZONED_H */
