/* SPDX-License-Identifier: BSD-3-Clause */
/* The zone state machine of null_blk (drivers/block/null_blk/zoned.c in
 * Linux 6.1, and where they differ 6.12 and 7.3) plus the checks and
 * splitting the block layer does in front of it.  This file is the
 * driver's twin: its functions come in the driver's order, each marked
 * with the kernel function it models, one small function per operation
 * and the open/active resource checks in one place.  What the driver does
 * not have lives beside it: pipelined writes (pipeline.c), the power
 * cycle (power.c), reports (report.c), the data (the back ends).
 *
 * Locking follows the driver's "improve zone locking" design: one lock per
 * zone, and the resource lock only when open or active limits are set.
 * Lock order: zone lock, then resource lock.  Each function that relies
 * on a lock asserts it (ZN_ASSERT_HELD, model/dev.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "model/dev.h"

#define ALL_ONES UINT64_MAX

static void
inc (atomic_uint *c)
{
  atomic_fetch_add_explicit (c, 1, memory_order_relaxed);
}

static void
dec (atomic_uint *c)
{
  atomic_fetch_sub_explicit (c, 1, memory_order_relaxed);
}

/* A failure of the zone rules: -EIO, and why. */
static int
fail (enum zn_reason *why, enum zn_reason reason)
{
  *why = reason;
  return -EIO;
}

static int
fail_errno (enum zn_reason *why, enum zn_reason reason, int err)
{
  *why = reason;
  return -err;
}

/* ---- device ------------------------------------------------------------ */

/* The zone tables are made up front, as null_blk does.  Ones that need
 * more than half the machine's memory together (a size given in bytes
 * instead of MiB, say, or many devices) would only end with the OOM
 * killer, after a long time of paging: refused before any is allocated.
 */
/* null_blk: null_init_zoned_dev (), its kvmalloc_array () of the zones */
int
zn_zone_table_check (const struct zn_config *cfg, uint32_t nr_devices,
                     char *err, size_t errlen)
{
  long pages = sysconf (_SC_PHYS_PAGES), page_size = sysconf (_SC_PAGESIZE);
  struct zn_geometry geo;
  double need, half;

  if (zn_geometry_from_config (cfg, &geo, err, errlen) < 0)
    return -EINVAL;
  need = (double) nr_devices * geo.nr_zones * sizeof (struct zone);
  half = (double) pages * (double) page_size / 2;
  if (pages <= 0 || page_size <= 0 || need <= half)
    return 0;
  if (err && errlen) {
    if (nr_devices == 1)
      snprintf (err, errlen, "size=%" PRIu64 " zone_size=%" PRIu64 ": %"
                PRIu32 " zones need %.1f GiB of zone table (%zu bytes a "
                "zone), more than half of this machine's %.1f GiB of memory",
                cfg->size, cfg->zone_size, geo.nr_zones, need / (1 << 30),
                sizeof (struct zone), 2 * half / (1 << 30));
    else
      snprintf (err, errlen, "nr_devices=%" PRIu32 " size=%" PRIu64
                " zone_size=%" PRIu64 ": %" PRIu32 " devices of %" PRIu32
                " zones need %.1f GiB of zone table together (%zu bytes a "
                "zone), more than half of this machine's %.1f GiB of memory",
                nr_devices, cfg->size, cfg->zone_size, nr_devices,
                geo.nr_zones, need / (1 << 30), sizeof (struct zone),
                2 * half / (1 << 30));
  }
  return -ENOMEM;
}

/* Random, so that two devices, or two starts of one in memory, never
 * share it; never 0, which a client reads as "the server has none".
 */
static uint64_t
new_generation (void)
{
  uint64_t g = 0;

  while (g == 0)
    if (getrandom (&g, sizeof g, 0) != (ssize_t) sizeof g) {
      struct timespec ts;

      clock_gettime (CLOCK_REALTIME, &ts);
      g = ((uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec)
        ^ ((uint64_t) getpid () << 40);
    }
  return g;
}

/* null_blk: null_init_zoned_dev () */
struct zn_dev *
zn_model_create (const struct zn_config *cfg, char *err, size_t errlen)
{
  struct zn_dev *dev;
  struct zn_geometry geo;
  int r;

  if (zn_geometry_from_config (cfg, &geo, err, errlen) < 0)
    return NULL;
  r = zn_zone_table_check (cfg, 1, err, errlen);
  if (r < 0) {
    errno = -r;
    return NULL;
  }

  dev = calloc (1, sizeof *dev);
  if (dev)
    dev->zones = calloc (geo.nr_zones, sizeof *dev->zones);
  if (!dev || !dev->zones) {
    free (dev);
    if (err && errlen)
      snprintf (err, errlen, "out of memory for %u zones", geo.nr_zones);
    errno = ENOMEM;
    return NULL;
  }

  dev->geo = geo;
  dev->generation = new_generation ();
  dev->zone_shift = __builtin_ctzll (geo.zone_sectors);
  dev->need_res_mgmt = geo.max_open || geo.max_active;
  dev->imp_close_cursor = geo.nr_conv;
  if (badblocks_init (dev) < 0 || pipeline_init (dev, cfg) < 0
      || fault_init (dev, cfg) < 0) {
    badblocks_free (dev);
    pipeline_free (dev);
    free (dev->zones);
    free (dev);
    if (err && errlen)
      snprintf (err, errlen, "out of memory for the device's tables");
    errno = ENOMEM;
    return NULL;
  }
  zn_mutex_init (&dev->res_lock);
  zn_mutex_init (&dev->dev_lock);
  if (geo.kernel >= ZN_KERNEL_6_12)
    dev->zone_full = cfg->zone_full;
  if (geo.kernel >= ZN_KERNEL_7_3) {
    dev->badblocks_once = cfg->badblocks_once;
    dev->badblocks_partial_io = cfg->badblocks_partial_io;
  }

  for (uint32_t i = 0; i < geo.nr_zones; i++) {
    struct zone *z = &dev->zones[i];

    zn_mutex_init (&z->lock);
    z->mutex = cfg->device_lock ? &dev->dev_lock : &z->lock;
    z->start = (uint64_t) i * geo.zone_sectors;
    z->len = geo.capacity - z->start < geo.zone_sectors
      ? geo.capacity - z->start : geo.zone_sectors;
    if (i < geo.nr_conv) {
      z->type = ZN_ZONE_CONVENTIONAL;
      z->cond = ZN_COND_NOT_WP;
      z->capacity = z->len;
      z->wp = z->start + z->len;
    }
    else {
      z->type = ZN_ZONE_SEQWRITE_REQ;
      z->capacity = z->len < geo.zone_capacity ? z->len : geo.zone_capacity;
      /* zone_full (6.11): FULL as if written to the capacity. */
      z->cond = dev->zone_full ? ZN_COND_FULL : ZN_COND_EMPTY;
      z->wp = dev->zone_full ? z->start + z->capacity : z->start;
    }
  }
  return dev;
}

/* null_blk: null_free_zoned_dev () */
int
zn_dev_sync_files (struct zn_dev *dev, char *err, size_t errlen)
{
  return dev->files_made ? dev->files_made (dev, err, errlen) : 0;
}

void
zn_dev_destroy (struct zn_dev *dev)
{
  if (!dev)
    return;
  struct zn_flush_ref ref;

  /* A snapshot being copied needs the zones and the back end. */
  if (dev->rec)
    dev->rec->quiesce (dev);
  /* The cache goes to the zone files, and the store's filler, which takes
   * zone locks, ends before the locks do.  That write-back is a flush the
   * log must hold, or replay would count the writes it saved as pending.
   */
  ref = rec_flush_ref (dev);
  if (dev->backend)
    dev->backend->free (dev);
  rec_flush (dev, ref);
  for (uint32_t i = 0; i < dev->geo.nr_zones; i++)
    pthread_mutex_destroy (&dev->zones[i].lock);
  pthread_mutex_destroy (&dev->res_lock);
  pthread_mutex_destroy (&dev->dev_lock);
  badblocks_free (dev);
  wplug_free (dev);
  if (dev->rec)
    dev->rec->free (dev);
  pipeline_free (dev);
  fault_free (dev);
  free (dev->zones);
  free (dev);
}

/* null_blk: null_register_zoned_dev (), the limits the disk reports */
const struct zn_geometry *
zn_dev_geometry (const struct zn_dev *dev)
{
  return &dev->geo;
}

uint64_t
zn_dev_generation (const struct zn_dev *dev)
{
  return dev->generation;
}

bool
zn_dev_restored (const struct zn_dev *dev)
{
  return dev->restored;
}

const char *
zn_dev_backing_dir (const struct zn_dev *dev)
{
  return dev->backing_dir;
}

bool
zn_dev_zone_full (const struct zn_dev *dev)
{
  return dev->zone_full;
}

bool
zn_dev_uses_write_data (const struct zn_dev *dev)
{
  return !dev->backend->drops_writes
    || (dev->rec && dev->rec->may_record (dev));
}

/* null_blk: null_report_zones () is zn_report_zones, in report.c. */

/* ---- reads ------------------------------------------------------------- */

static uint64_t
zone_bytes (const struct zone *z, uint64_t sector)
{
  return (sector - z->start) << ZN_SECTOR_SHIFT;
}

/* Below the wp a zone reads its data (zeros where nothing was written);
 * at and past the wp null_blk's memory backing fills the buffer with 0xFF.
 * Sectors, read under the zone lock.
 */
/* null_blk: null_zone_valid_read_len () */
static uint64_t
valid_read_len (const struct zone *z, uint64_t wp, uint64_t sector,
                uint64_t n)
{
  if (z->type == ZN_ZONE_CONVENTIONAL || wp >= sector + n)
    return n;
  return wp > sector ? wp - sector : 0;
}

/* null_blk: null_process_zoned_cmd (), its default case (a read) */
static int
read_zone (struct zn_dev *dev, struct zone *z, void *buf,
           uint64_t sector, uint64_t n, enum zn_reason *why)
{
  uint64_t valid, wp;
  uint8_t cond;
  int ret;

  if (!zone_res_lock_or_again (dev, z))
    return -EAGAIN;
  cond = z->cond;
  wp = z->wp;
  res_unlock (dev);

  /* A read that meets a bad block fails whole, partial or not: the
   * request completes with the error.
   */
  if (cond == ZN_COND_OFFLINE || badblocks_check (dev, sector, n, &valid)) {
    *why = cond == ZN_COND_OFFLINE ? ZN_REASON_OFFLINE : ZN_REASON_BAD_BLOCK;
    ret = -EIO;
  }
  else
    ret = dev->backend->read (dev, z, zone_bytes (z, sector), buf,
                              n << ZN_SECTOR_SHIFT,
                              valid_read_len (z, wp, sector, n)
                              << ZN_SECTOR_SHIFT);
  zone_unlock (z);
  return ret;
}

/* ---- resource checks (resource lock held) ------------------------------ */

/* Moves an IMP_OPEN or EXP_OPEN zone to CLOSED, or to EMPTY if nothing was
 * written to it.
 */
/* null_blk: __null_close_zone () */
static void
close_open_zone (struct zn_dev *dev, struct zone *z)
{
  RES_ASSERT_HELD (dev);
  if (z->cond == ZN_COND_IMP_OPEN)
    dec (&dev->nr_imp_open);
  else
    dec (&dev->nr_exp_open);

  if (z->wp == z->start)
    z->cond = ZN_COND_EMPTY;
  else {
    z->cond = ZN_COND_CLOSED;
    inc (&dev->nr_closed);
  }
}

/* Closes the first IMP_OPEN zone found round-robin from the cursor.  The
 * victim's own lock is not taken, as in the driver: its cond is only ever
 * touched under the resource lock while limits are enforced.
 */
/* null_blk: null_close_imp_open_zone () */
static void
close_imp_open_zone (struct zn_dev *dev)
{
  uint32_t nr_conv = dev->geo.nr_conv, nr_zones = dev->geo.nr_zones;
  uint32_t zno = dev->imp_close_cursor;

  RES_ASSERT_HELD (dev);
  if (zno >= nr_zones)
    zno = nr_conv;
  for (uint32_t i = nr_conv; i < nr_zones; i++) {
    struct zone *z = &dev->zones[zno];

    if (++zno >= nr_zones)
      zno = nr_conv;
    if (z->cond == ZN_COND_IMP_OPEN) {
      close_open_zone (dev, z);
      dev->imp_close_cursor = zno;
      return;
    }
  }
}

/* null_blk: null_check_active () */
static int
check_active (struct zn_dev *dev)
{
  unsigned active = count (&dev->nr_imp_open) + count (&dev->nr_exp_open)
    + count (&dev->nr_closed);

  RES_ASSERT_HELD (dev);
  if (!dev->geo.max_active || active < dev->geo.max_active)
    return 0;
  return -EOVERFLOW;
}

/* The implicit close is refused while active is at its limit even when the
 * target is CLOSED (so opening it would not add an active zone): the
 * kernel's quirk (null_check_open; doc/zone-rules.md, 3.3), which the
 * traces confirm.
 */
/* null_blk: null_check_open () */
static int
check_open (struct zn_dev *dev)
{
  unsigned open = count (&dev->nr_imp_open) + count (&dev->nr_exp_open);

  RES_ASSERT_HELD (dev);
  if (!dev->geo.max_open || open < dev->geo.max_open)
    return 0;
  if (count (&dev->nr_imp_open) && check_active (dev) == 0) {
    close_imp_open_zone (dev);
    return 0;
  }
  return -ETOOMANYREFS;
}

/* Whether the EMPTY or CLOSED zone z may become open. */
/* null_blk: null_check_zone_resources () */
static int
check_zone_resources (struct zn_dev *dev, struct zone *z)
{
  ZONE_ASSERT_HELD (z);
  RES_ASSERT_HELD (dev);
  if (z->cond == ZN_COND_EMPTY) {
    int ret = check_active (dev);
    if (ret)
      return ret;
  }
  return check_open (dev);
}

/* ---- writes (zone lock held) ------------------------------------------- */

/* Checks a write of n sectors at sector and opens the zone implicitly:
 * null_zone_write up to its call of null_process_cmd (doc/zone-rules.md,
 * section 4, steps 1 to 5).  Nothing changes on failure.
 */
/* null_blk: null_zone_write (), up to null_process_cmd () */
static int
write_open_zone (struct zn_dev *dev, struct zone *z, uint64_t sector,
                 uint64_t n, enum zn_reason *why)
{
  int ret;

  ZONE_ASSERT_HELD (z);
  RES_ASSERT_HELD (dev);
  switch (z->cond) {
  case ZN_COND_FULL:
    return fail (why, ZN_REASON_FULL);
  case ZN_COND_READONLY:
    return fail (why, ZN_REASON_READONLY);
  case ZN_COND_OFFLINE:
    return fail (why, ZN_REASON_OFFLINE);
  }
  if (sector != z->wp)
    return fail (why, ZN_REASON_NOT_AT_WP);
  if (z->wp + n > z->start + z->capacity)
    return fail (why, ZN_REASON_PAST_CAPACITY);

  switch (z->cond) {
  case ZN_COND_EMPTY:
    ret = check_zone_resources (dev, z);
    if (ret)
      return ret;
    inc (&dev->nr_imp_open);
    z->cond = ZN_COND_IMP_OPEN;
    break;
  case ZN_COND_CLOSED:
    ret = check_zone_resources (dev, z);
    if (ret)
      return ret;
    dec (&dev->nr_closed);
    inc (&dev->nr_imp_open);
    z->cond = ZN_COND_IMP_OPEN;
    break;
  }
  return 0;
}

/* null_blk: null_zone_write (), after null_process_cmd () */
static void
advance_wp (struct zn_dev *dev, struct zone *z, uint64_t n)
{
  ZONE_ASSERT_HELD (z);
  RES_ASSERT_HELD (dev);
  z->wp += n;
  if (z->wp != z->start + z->capacity)
    return;
  if (z->cond == ZN_COND_EXP_OPEN)
    dec (&dev->nr_exp_open);
  else if (z->cond == ZN_COND_IMP_OPEN)
    dec (&dev->nr_imp_open);
  z->cond = ZN_COND_FULL;
}

/* The back end's write of n sectors, whose failure is its own reason. */
static int
backend_write (struct zn_dev *dev, struct zone *z, uint64_t off,
             const void *buf, uint64_t n, bool fua, enum zn_reason *why)
{
  int ret = dev->backend->write (dev, z, off, buf, n << ZN_SECTOR_SHIFT, fua);

  if (ret)
    *why = zn_reason_of (-ret);
  return ret;
}

/* A write, or with append a zone append, which takes the write pointer
 * as its sector under the zone lock (and reports it in *sector): the one
 * place the two differ, as in null_blk's null_zone_write.
 */
/* null_blk: null_zone_write () */
static int
write_zone (struct zn_dev *dev, struct zone *z, const void *buf,
            uint64_t *sectorp, uint64_t n, bool fua, bool append,
            enum zn_reason *why)
{
  uint64_t sector = *sectorp, off, xfer = 0;
  const bool asked_append = append;
  bool plugged = false;
  int ret = 0, bb_ret = 0;

  if (!lock_or_again (z->mutex))
    return -EAGAIN;
  rec_touch (dev, z);
  /* The block layer's zone write plug comes first.  An emulated append
   * is a write at the plug's wp by the time null_blk sees it.
   */
  if (dev->wplugs && z->type != ZN_ZONE_CONVENTIONAL) {
    if (append && !dev->geo.append_emulated)
      wplug_native_append (dev, z);
    else {
      ret = wplug_prepare (dev, z, &sector, n, append, why);
      if (ret) {
        zone_unlock (z);
        return ret;
      }
      *sectorp = sector;
      append = false;
      plugged = true;
    }
  }
  if (append)
    *sectorp = sector = z->wp;
  off = zone_bytes (z, sector);
  if (z->type == ZN_ZONE_CONVENTIONAL) {
    if (badblocks_check (dev, sector, n, &xfer))
      bb_ret = fail (why, ZN_REASON_BAD_BLOCK);
    else
      xfer = n;
    if (xfer)
      ret = backend_write (dev, z, off, buf, xfer, fua, why);
    if (xfer && ret == 0 && rec_write (dev, z, sector, xfer, buf, fua, asked_append))
      ret = fail (why, ZN_REASON_IO);
  }
  else {
    bool at_wp;

    if (dev->pipeline && !append
        && (ret = pipeline_wait (dev, z, sector, n)) != 0) {
      zone_unlock (z);
      *why = zn_pipeline_reason (-ret);
      return ret;
    }
    at_wp = sector == z->wp;
    /* The data goes in and the wp moves under the resource lock, so an
     * implicit close of this zone by another writer meanwhile sees a
     * consistent zone.  A FUA write holds it over its fdatasync.
     */
    if (dev->need_res_mgmt && !lock_or_again (&dev->res_lock)) {
      zone_unlock (z);
      return -EAGAIN;
    }
    ret = write_open_zone (dev, z, sector, n, why);
    /* Step 6 of zone-rules 4 (null_process_cmd, called by null_zone_write
     * after the zone is opened): the zone stays open when a bad block
     * fails the write.
     * With badblocks_partial_io (7.3) the part before the bad block is
     * written and the wp moves past it, and the write still fails.
     */
    if (ret == 0 && badblocks_check (dev, sector, n, &xfer)) {
      bb_ret = fail (why, ZN_REASON_BAD_BLOCK);
      if (xfer == 0)
        ret = -EIO;
    }
    else
      xfer = n;
    /* A zone file's size is its wp: the data goes in before the wp
     * moves, and a failed write leaves both where they were.
     */
    if (ret == 0)
      ret = backend_write (dev, z, off, buf, xfer, fua, why);
    /* What reached the zone is logged even if the log then fails it: the
     * wp moves over it all the same.
     */
    if (ret == 0 && rec_write (dev, z, sector, xfer, buf, fua, asked_append))
      bb_ret = fail (why, ZN_REASON_IO);
    if (ret == 0)
      advance_wp (dev, z, xfer);
    if (ret == 0)
      ret = bb_ret;
    res_unlock (dev);
    /* The writes queued behind a failed write at the wp cannot succeed;
     * a failed append moved nothing and leaves them waiting.
     */
    if (dev->pipeline && (ret == 0 || (at_wp && !append)))
      pipeline_wake_waiters (z, ret != 0);
    if (plugged)
      wplug_complete (dev, z, ret);
  }
  zone_unlock (z);
  return ret ? ret : bb_ret;
}

/* ---- zone operations (zone lock and resource lock held) ---------------- */

/* null_blk: null_open_zone () */
static int
open_zone (struct zn_dev *dev, struct zone *z)
{
  int ret;

  ZONE_ASSERT_HELD (z);
  RES_ASSERT_HELD (dev);
  switch (z->cond) {
  case ZN_COND_EXP_OPEN:
    return 0;
  case ZN_COND_EMPTY:
    ret = check_zone_resources (dev, z);
    if (ret)
      return ret;
    break;
  case ZN_COND_IMP_OPEN:
    dec (&dev->nr_imp_open);
    break;
  case ZN_COND_CLOSED:
    ret = check_zone_resources (dev, z);
    if (ret)
      return ret;
    dec (&dev->nr_closed);
    break;
  default:
    return -EIO;
  }
  z->cond = ZN_COND_EXP_OPEN;
  inc (&dev->nr_exp_open);
  return 0;
}

/* null_blk: null_close_zone () */
static int
close_zone (struct zn_dev *dev, struct zone *z)
{
  ZONE_ASSERT_HELD (z);
  RES_ASSERT_HELD (dev);
  switch (z->cond) {
  case ZN_COND_CLOSED:
    return 0;
  case ZN_COND_IMP_OPEN:
  case ZN_COND_EXP_OPEN:
    close_open_zone (dev, z);
    return 0;
  default:
    return -EIO;
  }
}

/* null_blk: null_finish_zone () */
static int
finish_zone (struct zn_dev *dev, struct zone *z)
{
  int ret;

  ZONE_ASSERT_HELD (z);
  RES_ASSERT_HELD (dev);
  switch (z->cond) {
  case ZN_COND_FULL:
    /* From 6.10 only a device with limits returns early; without them a
     * FULL zone gets its wp moved to the zone's end like any other.
     */
    if (dev->need_res_mgmt || dev->geo.kernel < ZN_KERNEL_6_12)
      return 0;
    break;
  case ZN_COND_EMPTY:
    ret = check_zone_resources (dev, z);
    if (ret)
      return ret;
    break;
  case ZN_COND_IMP_OPEN:
    dec (&dev->nr_imp_open);
    break;
  case ZN_COND_EXP_OPEN:
    dec (&dev->nr_exp_open);
    break;
  case ZN_COND_CLOSED:
    ret = check_zone_resources (dev, z);
    if (ret)
      return ret;
    dec (&dev->nr_closed);
    break;
  default:
    return -EIO;
  }
  z->cond = ZN_COND_FULL;
  z->wp = z->start + z->len;
  return 0;
}

/* The caller discards the zone's data when this returns 0. */
/* null_blk: null_reset_zone () */
static int
reset_zone (struct zn_dev *dev, struct zone *z)
{
  ZONE_ASSERT_HELD (z);
  RES_ASSERT_HELD (dev);
  switch (z->cond) {
  case ZN_COND_EMPTY:
  case ZN_COND_FULL:
    break;
  case ZN_COND_IMP_OPEN:
    dec (&dev->nr_imp_open);
    break;
  case ZN_COND_EXP_OPEN:
    dec (&dev->nr_exp_open);
    break;
  case ZN_COND_CLOSED:
    dec (&dev->nr_closed);
    break;
  default:
    return -EIO;
  }
  z->cond = ZN_COND_EMPTY;
  z->wp = z->start;
  return 0;
}

/* ---- zone management --------------------------------------------------- */

/* chain_ok: no zone before this one in the range failed.  The range's
 * bios are chained, so from 6.10 an earlier failure reaches this zone's
 * bio and its completion leaves the zone write plug alone.
 */
/* null_blk: null_zone_mgmt () */
static int
zone_mgmt_one (struct zn_dev *dev, struct zone *z, enum zn_zone_op op,
               bool chain_ok, enum zn_reason *why)
{
  int ret;

  zone_lock (z);
  rec_touch (dev, z);
  res_lock (dev);
  if (z->type == ZN_ZONE_CONVENTIONAL)
    ret = fail (why, ZN_REASON_CONVENTIONAL);
  else if (z->cond == ZN_COND_READONLY)
    ret = fail (why, ZN_REASON_READONLY);
  else if (z->cond == ZN_COND_OFFLINE)
    ret = fail (why, ZN_REASON_OFFLINE);
  else {
    switch (op) {
    case ZN_OP_OPEN: ret = open_zone (dev, z); break;
    case ZN_OP_CLOSE: ret = close_zone (dev, z); break;
    case ZN_OP_FINISH: ret = finish_zone (dev, z); break;
    case ZN_OP_RESET: ret = reset_zone (dev, z); break;
    default: ret = -EOPNOTSUPP; break;
    }
    /* The transitions fail with EIO only from a condition they do not
     * leave; the limits say their own reason.
     */
    *why = ret == -EIO ? ZN_REASON_BAD_TRANSITION : zn_reason_of (-ret);
  }
  res_unlock (dev);
  if (ret == 0 && chain_ok && dev->wplugs)
    wplug_zone_mgmt (dev, z, op);
  if (ret == 0 && op == ZN_OP_RESET)
    ret = dev->backend->reset (dev, z);
  else if (ret == 0 && op == ZN_OP_FINISH)
    ret = dev->backend->finish (dev, z);
  if (ret == 0 && (op == ZN_OP_RESET || op == ZN_OP_FINISH))
    pipeline_wake_waiters (z, true);
  if (ret == 0 && rec_zone_op (dev, z, op))
    ret = fail (why, ZN_REASON_IO);
  zone_unlock (z);
  return ret;
}

/* Resets every sequential zone that is not EMPTY, READONLY or OFFLINE. */
/* null_blk: null_zone_mgmt (), REQ_OP_ZONE_RESET_ALL */
static int
reset_all (struct zn_dev *dev)
{
  int ret = 0;

  for (uint32_t i = dev->geo.nr_conv; i < dev->geo.nr_zones; i++) {
    struct zone *z = &dev->zones[i];
    bool discard = false;

    zone_lock (z);
    rec_touch (dev, z);
    res_lock (dev);
    if (z->cond != ZN_COND_EMPTY && z->cond != ZN_COND_READONLY
        && z->cond != ZN_COND_OFFLINE)
      discard = reset_zone (dev, z) == 0;
    res_unlock (dev);
    if (discard) {
      dev->backend->reset (dev, z);
      pipeline_wake_waiters (z, true);
      if (rec_zone_op (dev, z, ZN_OP_RESET))
        ret = -EIO;
    }
    if (dev->wplugs)
      wplug_zone_mgmt (dev, z, ZN_OP_RESET);
    zone_unlock (z);
  }
  return ret;
}

/* block layer: blkdev_zone_mgmt () */
int
zn_zone_mgmt_why (struct zn_dev *dev, enum zn_zone_op op, uint64_t sector,
                  uint64_t nr_sectors, enum zn_reason *why)
{
  uint64_t capacity = dev->geo.capacity, mask = dev->geo.zone_sectors - 1;
  uint64_t end = sector + nr_sectors;
  int ret = 0;

  *why = ZN_REASON_NONE;
  if (op < ZN_OP_OPEN || op > ZN_OP_RESET)
    return fail_errno (why, ZN_REASON_NOT_SUPPORTED, EOPNOTSUPP);
  if (nr_sectors == 0)
    return fail_errno (why, ZN_REASON_EMPTY, EINVAL);
  if (end < sector || end > capacity)
    return fail_errno (why, ZN_REASON_OUT_OF_RANGE, EINVAL);
  if ((sector & mask) || ((nr_sectors & mask) && end != capacity))
    return fail_errno (why, ZN_REASON_MISALIGNED, EINVAL);
  if (op == ZN_OP_RESET && sector == 0 && nr_sectors == capacity)
    return reset_all (dev);

  for (; sector < end; sector += dev->geo.zone_sectors) {
    enum zn_reason zone_why = ZN_REASON_NONE;
    int zone_ret = zone_mgmt_one (dev, zone_of (dev, sector), op, ret == 0,
                                  &zone_why);
    if (zone_ret) {
      ret = zone_ret;
      *why = zone_why;
    }
  }
  return ret;
}

int
zn_zone_mgmt (struct zn_dev *dev, enum zn_zone_op op,
              uint64_t sector, uint64_t nr_sectors)
{
  enum zn_reason why;

  return zn_zone_mgmt_why (dev, op, sector, nr_sectors, &why);
}

/* ---- requests ---------------------------------------------------------- */

/* The block layer's checks: aligned to the logical block, inside the device. */
/* block layer: bio_check_eod () and the logical block size */
static int
check_request (const struct zn_dev *dev, uint64_t sector, uint64_t nr_sectors,
               enum zn_reason *why)
{
  uint64_t lbs_mask = (dev->geo.block_size >> ZN_SECTOR_SHIFT) - 1;

  if ((sector | nr_sectors) & lbs_mask)
    return fail_errno (why, ZN_REASON_MISALIGNED, EINVAL);
  if (sector > dev->geo.capacity || nr_sectors > dev->geo.capacity - sector)
    return fail_errno (why, ZN_REASON_OUT_OF_RANGE, EINVAL);
  return 0;
}

typedef int (*part_fn) (struct zn_dev *, struct zone *, void *,
                        uint64_t, uint64_t, enum zn_reason *);

/* Splits like the block layer (zone boundaries, max_sectors).  Every part
 * is attempted and the last error wins, as with chained bios.  The reason
 * given is that of the first part that failed with that errno: a part
 * that fails leaves the next to fail because of it (a write not at the
 * write pointer it did not move), and the first is the one that says why.
 */
/* block layer: __bio_split_to_limits () */
static int
for_each_part (struct zn_dev *dev, part_fn fn, void *buf,
               uint64_t sector, uint64_t nr_sectors, enum zn_reason *why)
{
  int ret;

  *why = ZN_REASON_NONE;
  ret = check_request (dev, sector, nr_sectors, why);
  if (ret)
    return ret;
  while (nr_sectors) {
    struct zone *z = zone_of (dev, sector);
    uint64_t n = z->start + z->len - sector;
    enum zn_reason part_why = ZN_REASON_NONE;
    int part_ret;

    if (n > dev->geo.max_sectors)
      n = dev->geo.max_sectors;
    if (n > nr_sectors)
      n = nr_sectors;
    part_ret = fn (dev, z, buf, sector, n, &part_why);
    if (part_ret == -EAGAIN && zn_nowait)
      return part_ret;          /* tried again whole, waiting */
    if (part_ret) {
      if (part_ret != ret)
        *why = part_why == ZN_REASON_NONE ? zn_reason_of (-part_ret)
          : part_why;
      ret = part_ret;
    }
    buf = (unsigned char *) buf + (n << ZN_SECTOR_SHIFT);
    sector += n;
    nr_sectors -= n;
  }
  return ret;
}

/* null_blk: null_process_zoned_cmd (), REQ_OP_READ */
int
zn_read_why (struct zn_dev *dev, void *buf, uint64_t sector,
             uint64_t nr_sectors, enum zn_reason *why)
{
  return for_each_part (dev, read_zone, buf, sector, nr_sectors, why);
}

int
zn_read_nowait (struct zn_dev *dev, void *buf, uint64_t sector,
                uint64_t nr_sectors, enum zn_reason *why)
{
  int ret;

  zn_nowait = true;
  ret = for_each_part (dev, read_zone, buf, sector, nr_sectors, why);
  zn_nowait = false;
  return ret;
}

int
zn_read (struct zn_dev *dev, void *buf, uint64_t sector, uint64_t nr_sectors)
{
  enum zn_reason why;

  return zn_read_why (dev, buf, sector, nr_sectors, &why);
}

static int
write_part (struct zn_dev *dev, struct zone *z, void *buf,
            uint64_t sector, uint64_t n, enum zn_reason *why)
{
  return write_zone (dev, z, buf, &sector, n, false, false, why);
}

static int
write_part_fua (struct zn_dev *dev, struct zone *z, void *buf,
                uint64_t sector, uint64_t n, enum zn_reason *why)
{
  return write_zone (dev, z, buf, &sector, n, true, false, why);
}

/* Only a write that is one part, with no cache or zone write plug to
 * wait for, and that could only wait for its zone's lock: a write that
 * fails with -EAGAIN must have changed nothing.
 */
int
zn_write_nowait (struct zn_dev *dev, const void *buf, uint64_t sector,
                 uint64_t nr_sectors, enum zn_reason *why)
{
  struct zone *z;
  int ret;

  if (dev->cache || dev->wplugs || nr_sectors == 0
      || nr_sectors > dev->geo.max_sectors
      || check_request (dev, sector, nr_sectors, why))
    return -EAGAIN;
  z = zone_of (dev, sector);
  if (sector + nr_sectors > z->start + z->len)
    return -EAGAIN;
  zn_nowait = true;
  ret = for_each_part (dev, write_part, (void *) buf, sector, nr_sectors, why);
  zn_nowait = false;
  return ret;
}

/* null_blk: null_process_zoned_cmd (), REQ_OP_WRITE */
int
zn_write_why (struct zn_dev *dev, const void *buf, uint64_t sector,
              uint64_t nr_sectors, bool fua, enum zn_reason *why)
{
  /* The part function never writes through buf. */
  return for_each_part (dev, fua ? write_part_fua : write_part, (void *) buf,
                        sector, nr_sectors, why);
}

int
zn_write (struct zn_dev *dev, const void *buf, uint64_t sector, uint64_t nr_sectors)
{
  enum zn_reason why;

  return zn_write_why (dev, buf, sector, nr_sectors, false, &why);
}

int
zn_write_fua (struct zn_dev *dev, const void *buf, uint64_t sector,
              uint64_t nr_sectors)
{
  enum zn_reason why;

  return zn_write_why (dev, buf, sector, nr_sectors, true, &why);
}

/* null_blk: null_handle_flush () (main.c) */
int
zn_flush (struct zn_dev *dev)
{
  struct zn_flush_ref ref = rec_flush_ref (dev);
  int ret = dev->backend->flush (dev);

  return ret ? ret : rec_flush (dev, ref);
}

/* The block layer's checks come first (blk_check_zone_append): an append
 * must start a sequential zone and fit the append limit, since it cannot
 * be split.  A FULL, READONLY or OFFLINE zone and data past the capacity
 * then fail in write_open_zone, as a write at the wp would.
 */
/* null_blk: null_process_zoned_cmd (), REQ_OP_ZONE_APPEND */
int
zn_zone_append_why (struct zn_dev *dev, const void *buf, uint64_t sector,
                    uint64_t nr_sectors, bool fua, uint64_t *written,
                    enum zn_reason *why)
{
  struct zone *z;
  int ret;

  *why = ZN_REASON_NONE;
  if (nr_sectors == 0)
    return fail_errno (why, ZN_REASON_EMPTY, EINVAL);
  ret = check_request (dev, sector, nr_sectors, why);
  if (ret)
    return ret;
  z = zone_of (dev, sector);
  if (z->type == ZN_ZONE_CONVENTIONAL)
    return fail (why, ZN_REASON_CONVENTIONAL);
  if (sector != z->start)
    return fail (why, ZN_REASON_NOT_ZONE_START);
  if (nr_sectors > dev->geo.max_append_sectors)
    return fail (why, ZN_REASON_APPEND_TOO_LONG);
  ret = write_zone (dev, z, buf, &sector, nr_sectors, fua, true, why);
  if (ret == 0 && written)
    *written = sector;
  if (ret && *why == ZN_REASON_NONE)
    *why = zn_reason_of (-ret);
  return ret;
}

int
zn_zone_append (struct zn_dev *dev, const void *buf, uint64_t sector,
                uint64_t nr_sectors, bool fua, uint64_t *written)
{
  enum zn_reason why;

  return zn_zone_append_why (dev, buf, sector, nr_sectors, fua, written,
                             &why);
}

/* ---- zone conditions (configfs) ---------------------------------------- */

/* configfs zone_readonly / zone_offline. */
/* null_blk: null_set_zone_cond () */
static int
set_zone_cond (struct zn_dev *dev, uint64_t sector, uint8_t cond)
{
  struct zone *z;
  bool discard = false;
  int ret, log_ret;

  if (sector >= dev->geo.capacity)
    return -EINVAL;
  z = zone_of (dev, sector);
  if (z->type == ZN_ZONE_CONVENTIONAL)
    return -EINVAL;

  zone_lock (z);
  rec_touch (dev, z);
  res_lock (dev);
  if (z->cond == cond) {
    z->cond = ZN_COND_EMPTY;
    z->wp = z->start;
    discard = true;
  }
  else {
    /* The driver ignores the finish result: a CLOSED zone with no open
     * slot keeps counting as closed.  Kept, since it is observable.
     */
    if (z->cond != ZN_COND_READONLY && z->cond != ZN_COND_OFFLINE)
      finish_zone (dev, z);
    z->cond = cond;
    z->wp = ALL_ONES;
  }
  res_unlock (dev);
  if (discard)
    dev->backend->reset (dev, z);
  pipeline_wake_waiters (z, true);
  dev->backend->set_cond (dev, z, discard ? 0 : cond);
  log_ret = rec_cond (dev, z, discard ? 0 : cond);
  zone_unlock (z);
  ret = badblocks_save (dev);
  return ret ? ret : log_ret;
}

/* null_blk: zone_cond_store () */
int
zn_zone_set_readonly (struct zn_dev *dev, uint64_t sector)
{
  return set_zone_cond (dev, sector, ZN_COND_READONLY);
}

int
zn_zone_set_offline (struct zn_dev *dev, uint64_t sector)
{
  return set_zone_cond (dev, sector, ZN_COND_OFFLINE);
}
