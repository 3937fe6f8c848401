/* nbdkit-zonednull-plugin: Linux null_blk's zoned device (6.1) over NBD.
 *
 * The zone rules live in the model library (include/zonednull/zoned.h);
 * this file only turns NBD requests into model calls and model errors
 * into NBD errors and log lines.  NBD has no zone commands, so zones are
 * driven through the data path: writes at the write pointer, TRIM of
 * whole zones as a zone reset, and block status showing the write
 * pointers as the boundary between data and hole.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "zonednull/control.h"
#include "zonednull/zoned.h"

/* Every zone table update happens under the model's own locks. */
#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

/* Callbacks have fixed signatures; most ignore the handle and flags. */
#define UNUSED __attribute__ ((unused))

#define MIB (UINT64_C (1) << 20)
#define MAX_REQUEST (32 * 1024 * 1024)  /* advertised maximum block size */
#define REPORT_BATCH 64                 /* zones per zn_report_zones call */

/* null_blk's parameters as given on the command line, over its defaults. */
static struct zn_config cfg;

/* zone_readonly / zone_offline settings, kept in command line order
 * because each one toggles, as a write to the configfs attribute does.
 */
struct cond_setting {
  bool offline;
  uint64_t sector;
};
static struct cond_setting *cond_settings;
static size_t nr_cond_settings;

/* The one device that every connection sees, as with a real disk. */
static struct zn_dev *dev;

/* A shortcut to the device's geometry, valid once dev exists. */
static const struct zn_geometry *geo;

/* The zone control channel of dev, served as a second export. */
static struct zn_control *ctl;

/* NBD command types, as the control channel names failed data requests. */
#define NBD_CMD_READ 0
#define NBD_CMD_WRITE 1
#define NBD_CMD_TRIM 4

/* Per connection: which export it opened, and for the control export the
 * result of its last command.
 */
struct handle {
  bool control;
  bool readonly;
  struct zn_control_conn conn;
};

static void
zonednull_load (void)
{
  zn_config_init (&cfg);
}

/* null_blk takes sizes in MiB.  A bare number keeps that meaning, so the
 * same values work here and in configfs; a suffixed size such as 64M or
 * 1G is accepted for convenience but must still be whole MiB.
 */
static int
parse_mib (const char *key, const char *value, uint64_t *mib)
{
  size_t len = strlen (value);
  bool bare;
  int64_t bytes;

  if (len > 2 && value[0] == '0' && (value[1] == 'x' || value[1] == 'X'))
    bare = strspn (value + 2, "0123456789abcdefABCDEF") == len - 2;
  else
    bare = len > 0 && strspn (value, "0123456789") == len;
  if (bare)
    return nbdkit_parse_uint64_t (key, value, mib);

  bytes = nbdkit_parse_size (value);
  if (bytes == -1) {
    nbdkit_error ("%s=%s: expected MiB (a bare number) or a size such as "
                  "64M or 1G", key, value);
    return -1;
  }
  if (bytes % MIB) {
    nbdkit_error ("%s=%s: must be a whole number of MiB "
                  "(null_blk sizes are in MiB; a bare number means MiB)",
                  key, value);
    return -1;
  }
  *mib = (uint64_t) bytes / MIB;
  return 0;
}

static int
add_cond_setting (const char *key, const char *value, bool offline)
{
  struct cond_setting *p;
  uint64_t sector;

  if (nbdkit_parse_uint64_t (key, value, &sector) == -1)
    return -1;
  p = realloc (cond_settings, (nr_cond_settings + 1) * sizeof *p);
  if (p == NULL) {
    nbdkit_error ("realloc: %m");
    return -1;
  }
  cond_settings = p;
  cond_settings[nr_cond_settings++] = (struct cond_setting) {
    .offline = offline, .sector = sector,
  };
  return 0;
}

static int
parse_bool (const char *key, const char *value, bool *b)
{
  int r = nbdkit_parse_bool (value);

  if (r == -1) {
    nbdkit_error ("%s=%s: expected a boolean (1/0, true/false, on/off)",
                  key, value);
    return -1;
  }
  *b = r;
  return 0;
}

static int
zonednull_config (const char *key, const char *value)
{
  if (strcmp (key, "size") == 0)
    return parse_mib (key, value, &cfg.size);
  else if (strcmp (key, "zone_size") == 0)
    return parse_mib (key, value, &cfg.zone_size);
  else if (strcmp (key, "zone_capacity") == 0)
    return parse_mib (key, value, &cfg.zone_capacity);
  else if (strcmp (key, "zone_nr_conv") == 0)
    return nbdkit_parse_uint32_t (key, value, &cfg.zone_nr_conv);
  else if (strcmp (key, "zone_max_open") == 0)
    return nbdkit_parse_uint32_t (key, value, &cfg.zone_max_open);
  else if (strcmp (key, "zone_max_active") == 0)
    return nbdkit_parse_uint32_t (key, value, &cfg.zone_max_active);
  else if (strcmp (key, "blocksize") == 0 || strcmp (key, "bs") == 0)
    return nbdkit_parse_uint32_t (key, value, &cfg.blocksize);
  else if (strcmp (key, "max_sectors") == 0)
    return nbdkit_parse_uint32_t (key, value, &cfg.max_sectors);
  else if (strcmp (key, "memory_backed") == 0)
    return parse_bool (key, value, &cfg.memory_backed);
  else if (strcmp (key, "zoned") == 0) {
    bool zoned;

    if (parse_bool (key, value, &zoned) == -1)
      return -1;
    if (!zoned) {
      nbdkit_error ("zoned=%s: zonednull emulates null_blk's zoned mode only; "
                    "use nbdkit's memory or null plugin for a plain disk",
                    value);
      return -1;
    }
    return 0;
  }
  else if (strcmp (key, "zone_readonly") == 0)
    return add_cond_setting (key, value, false);
  else if (strcmp (key, "zone_offline") == 0)
    return add_cond_setting (key, value, true);
  else {
    nbdkit_error ("unknown parameter '%s' (see nbdkit zonednull --help)", key);
    return -1;
  }
}

/* Text for the errors the model returns.  The open and active limits are
 * named, since their errno texts say nothing about zones.  strerror is
 * avoided on request paths: with the sanitizer runtimes preloaded into
 * nbdkit, calling it from worker threads deadlocked nbdkit at exit.
 */
static const char *
error_text (int err)
{
  switch (err) {
  case EIO:
    return "Input/output error";
  case EINVAL:
    return "Invalid argument";
  case ENOSPC:
    return "No space left on device";
  case ENOMEM:
    return "Cannot allocate memory";
  case EOPNOTSUPP:
    return "Operation not supported";
  case ETOOMANYREFS:
    return "open zones exceeded (ETOOMANYREFS, sent as EINVAL)";
  case EOVERFLOW:
    return "active zones exceeded (EOVERFLOW, sent as EINVAL)";
  default:
    return "unexpected error";
  }
}

/* The configfs attributes are written after power-on, so the model
 * decides what is valid; only the message is made more specific here.
 */
static int
apply_cond_setting (const struct cond_setting *s)
{
  const char *key = s->offline ? "zone_offline" : "zone_readonly";
  int r;

  r = s->offline ? zn_zone_set_offline (dev, s->sector)
                 : zn_zone_set_readonly (dev, s->sector);
  if (r == 0)
    return 0;
  if (s->sector >= geo->capacity)
    nbdkit_error ("%s=%" PRIu64 ": sector is past the end of the device "
                  "(%" PRIu64 " sectors); it must lie in a sequential zone",
                  key, s->sector, geo->capacity);
  else if (s->sector / geo->zone_sectors < geo->nr_conv)
    nbdkit_error ("%s=%" PRIu64 ": sector is in conventional zone %" PRIu64
                  "; only sequential zones can be made %s",
                  key, s->sector, s->sector / geo->zone_sectors,
                  s->offline ? "offline" : "read-only");
  else
    nbdkit_error ("%s=%" PRIu64 ": %s", key, s->sector, error_text (-r));
  return -1;
}

static int
zonednull_config_complete (void)
{
  char err[256] = "";

  dev = zn_dev_create (&cfg, err, sizeof err);
  if (dev == NULL) {
    nbdkit_error ("%s", err[0] ? err : error_text (errno));
    return -1;
  }
  geo = zn_dev_geometry (dev);
  ctl = zn_control_create (dev);
  if (ctl == NULL) {
    nbdkit_error ("out of memory for the control channel");
    return -1;
  }

  for (size_t i = 0; i < nr_cond_settings; i++)
    if (apply_cond_setting (&cond_settings[i]) == -1)
      return -1;
  free (cond_settings);
  cond_settings = NULL;
  nr_cond_settings = 0;
  return 0;
}

#define zonednull_config_help \
  "size=<MiB>              Device size (default 256000).\n" \
  "zone_size=<MiB>         Zone length, a power of 2 (default 256).\n" \
  "zone_capacity=<MiB>     Writable part of a zone (default zone_size).\n" \
  "zone_nr_conv=<N>        Leading conventional zones (default 0).\n" \
  "zone_max_open=<N>       Limit on open zones (default 0, no limit).\n" \
  "zone_max_active=<N>     Limit on open+closed zones (default 0).\n" \
  "blocksize=<BYTES>       Block size 512..4096, alias bs (default 512).\n" \
  "max_sectors=<SECTORS>   Largest unsplit request (default 255).\n" \
  "memory_backed=<BOOL>    Keep written data (default false).\n" \
  "zoned=true              Only zoned mode is emulated.\n" \
  "zone_readonly=<SECTOR>  Toggle READONLY on its zone (repeatable).\n" \
  "zone_offline=<SECTOR>   Toggle OFFLINE on its zone (repeatable).\n" \
  "MiB values also take a suffix (64M, 1G) but must be whole MiB."

static int
zonednull_list_exports (int readonly UNUSED, int is_tls UNUSED,
                        struct nbdkit_exports *exports)
{
  if (nbdkit_add_export (exports, ZN_DEFAULT_DEVICE,
                         "null_blk zoned device") == -1
      || nbdkit_add_export (exports, ZN_DEFAULT_DEVICE ZN_CONTROL_SUFFIX,
                            "zone control (zonednull-control(5))") == -1)
    return -1;
  return 0;
}

static const char *
zonednull_default_export (int readonly UNUSED, int is_tls UNUSED)
{
  return ZN_DEFAULT_DEVICE;
}

static void *
zonednull_open (int readonly)
{
  const char *name = nbdkit_export_name ();
  struct handle *h;

  if (name == NULL)
    name = "";
  h = calloc (1, sizeof *h);
  if (h == NULL) {
    nbdkit_error ("calloc: out of memory");
    return NULL;
  }
  h->readonly = readonly;
  if (strcmp (name, ZN_DEFAULT_DEVICE ZN_CONTROL_SUFFIX) == 0)
    h->control = true;
  else if (strcmp (name, "") != 0 && strcmp (name, ZN_DEFAULT_DEVICE) != 0) {
    nbdkit_error ("no export named '%s' (exports: '" ZN_DEFAULT_DEVICE
                  "' and '" ZN_DEFAULT_DEVICE ZN_CONTROL_SUFFIX "')", name);
    free (h);
    return NULL;
  }
  return h;
}

static void
zonednull_close (void *handle)
{
  free (handle);
}

static int64_t
zonednull_get_size (void *handle)
{
  struct handle *h = handle;

  if (h->control)
    return (int64_t) zn_control_size (ctl);
  return (int64_t) (geo->capacity << ZN_SECTOR_SHIFT);
}

/* The model rejects unaligned requests like the block layer, so clients
 * must know the logical block size.  Larger requests are split by the
 * model the way the block layer splits them, so the maximum is generous.
 */
static int
zonednull_block_size (void *handle,
                      uint32_t *minimum, uint32_t *preferred, uint32_t *maximum)
{
  struct handle *h = handle;

  *minimum = h->control ? 1 : geo->block_size;
  *preferred = geo->block_size > 4096 ? geo->block_size : 4096;
  *maximum = MAX_REQUEST;
  return 0;
}

/* All connections share one zone table and nothing is cached, so FLUSH
 * and FUA on one connection cover the writes of every connection.
 */
static int
zonednull_can_multi_conn (void *handle UNUSED)
{
  return 1;
}

/* A write is in the zone table and the store before it returns, so FUA
 * needs no extra work.
 */
/* TRIM (a zone reset) and block status (the write pointers) are for the
 * data export only.
 */
static int
zonednull_can_trim (void *handle)
{
  struct handle *h = handle;

  return !h->control;
}

static int
zonednull_can_extents (void *handle)
{
  struct handle *h = handle;

  return !h->control;
}

static int
zonednull_can_fua (void *handle UNUSED)
{
  return NBDKIT_FUA_NATIVE;
}

/* Describes the zones a request touches for an error message, e.g.
 * "zone 1 (IMP_OPEN, wp 2056)".  The state is read after the failure, so
 * under concurrent writers it is a hint, not evidence.
 */
static void
describe_zone (char *buf, size_t len, const struct zn_zone *z)
{
  if (z->type == ZN_ZONE_SEQWRITE_REQ && z->wp != UINT64_MAX)
    snprintf (buf, len, "%s, wp %" PRIu64, zn_cond_name (z->cond), z->wp);
  else
    snprintf (buf, len, "%s", zn_cond_name (z->cond));
}

static void
request_error (const char *what, uint32_t count, uint64_t offset, int err)
{
  uint64_t first = (offset >> ZN_SECTOR_SHIFT) / geo->zone_sectors;
  uint64_t last = ((offset + count - 1) >> ZN_SECTOR_SHIFT) / geo->zone_sectors;
  struct zn_zone z;
  char first_desc[64] = "", last_desc[64] = "";

  if (zn_report_zones (dev, first * geo->zone_sectors, &z, 1) == 1)
    describe_zone (first_desc, sizeof first_desc, &z);
  if (first == last) {
    nbdkit_error ("%s: offset %" PRIu64 " length %" PRIu32
                  " in zone %" PRIu64 " (%s): %s",
                  what, offset, count, first, first_desc, error_text (err));
    return;
  }
  if (zn_report_zones (dev, last * geo->zone_sectors, &z, 1) == 1)
    describe_zone (last_desc, sizeof last_desc, &z);
  nbdkit_error ("%s: offset %" PRIu64 " length %" PRIu32
                " in zones %" PRIu64 " to %" PRIu64
                " (first %s; last %s): %s",
                what, offset, count, first, last, first_desc, last_desc,
                error_text (err));
}

/* nbdkit advertises the block size but does not enforce it. */
static int
check_alignment (const char *what, uint32_t count, uint64_t offset)
{
  if (offset % geo->block_size) {
    nbdkit_error ("%s: offset %" PRIu64 " is not a multiple of the "
                  "block size %" PRIu32, what, offset, geo->block_size);
    nbdkit_set_error (EINVAL);
    return -1;
  }
  if (count % geo->block_size) {
    nbdkit_error ("%s: length %" PRIu32 " is not a multiple of the "
                  "block size %" PRIu32, what, count, geo->block_size);
    nbdkit_set_error (EINVAL);
    return -1;
  }
  return 0;
}

static int
zonednull_pread (void *handle, void *buf, uint32_t count,
                 uint64_t offset, uint32_t flags UNUSED)
{
  struct handle *h = handle;
  int r;

  if (h->control) {
    r = zn_control_pread (ctl, &h->conn, h->readonly, buf, count, offset);
    if (r < 0) {
      nbdkit_error ("control: read at offset %" PRIu64 " length %" PRIu32
                    " is outside the control export", offset, count);
      nbdkit_set_error (-r);
      return -1;
    }
    return 0;
  }
  if (check_alignment ("pread", count, offset) == -1)
    return -1;
  r = zn_read (dev, buf, offset >> ZN_SECTOR_SHIFT, count >> ZN_SECTOR_SHIFT);
  if (r < 0) {
    request_error ("pread", count, offset, -r);
    zn_control_log_error (ctl, NBD_CMD_READ, offset, count, -r);
    nbdkit_set_error (-r);
    return -1;
  }
  return 0;
}

static int
zonednull_pwrite (void *handle, const void *buf, uint32_t count,
                  uint64_t offset, uint32_t flags UNUSED)
{
  struct handle *h = handle;
  int r;

  if (h->control) {
    r = zn_control_pwrite (ctl, &h->conn, buf, count, offset);
    if (r < 0) {
      nbdkit_error ("control: a command is one %d-byte write at offset 0 "
                    "with a valid magic and op (zonednull-control(5)); got "
                    "%" PRIu32 " bytes at offset %" PRIu64,
                    ZN_COMMAND_SIZE, count, offset);
      nbdkit_set_error (-r);
      return -1;
    }
    return 0;
  }
  if (check_alignment ("pwrite", count, offset) == -1)
    return -1;
  r = zn_write (dev, buf, offset >> ZN_SECTOR_SHIFT, count >> ZN_SECTOR_SHIFT);
  if (r < 0) {
    request_error ("pwrite", count, offset, -r);
    zn_control_log_error (ctl, NBD_CMD_WRITE, offset, count, -r);
    nbdkit_set_error (-r);
    return -1;
  }
  return 0;
}

/* There is no volatile cache: null_blk's cache_size is not offered. */
static int
zonednull_flush (void *handle UNUSED, uint32_t flags UNUSED)
{
  return 0;
}

/* zoned null_blk never advertises discard.  TRIM is the one NBD command
 * that can carry a zone reset, so it is given exactly the meaning of
 * BLKRESETZONE and nothing looser: a trim that is not a reset is refused
 * rather than silently ignored.
 */
static int
zonednull_trim (void *handle UNUSED, uint32_t count, uint64_t offset,
                uint32_t flags UNUSED)
{
  uint64_t zone_bytes = geo->zone_sectors << ZN_SECTOR_SHIFT;
  uint64_t size = geo->capacity << ZN_SECTOR_SHIFT;
  uint64_t end = offset + count;
  uint64_t first, last;
  int r;

  if (count == 0 || offset % zone_bytes
      || (count % zone_bytes && end != size)) {
    nbdkit_error ("trim: offset %" PRIu64 " length %" PRIu32
                  " does not cover whole zones of %" PRIu64 " bytes",
                  offset, count, zone_bytes);
    nbdkit_set_error (EINVAL);
    return -1;
  }

  first = offset / zone_bytes;
  last = (end - 1) / zone_bytes;
  /* The whole device is reset-all, which skips conventional zones. */
  if (first < geo->nr_conv && !(offset == 0 && end == size)) {
    nbdkit_error ("trim: zone %" PRIu64 " is conventional; "
                  "only sequential zones can be reset", first);
    nbdkit_set_error (EINVAL);
    return -1;
  }

  r = zn_zone_mgmt (dev, ZN_OP_RESET, offset >> ZN_SECTOR_SHIFT,
                    (uint64_t) count >> ZN_SECTOR_SHIFT);
  if (r < 0) {
    if (first == last)
      request_error ("trim", count, offset, -r);
    else
      nbdkit_error ("trim: offset %" PRIu64 " length %" PRIu32
                    ": reset of zones %" PRIu64 " to %" PRIu64
                    " failed (a READONLY or OFFLINE zone cannot be reset): %s",
                    offset, count, first, last, error_text (-r));
    zn_control_log_error (ctl, NBD_CMD_TRIM, offset, count, -r);
    nbdkit_set_error (-r);
    return -1;
  }
  return 0;
}

/* Data up to each write pointer, a hole after it.  The hole is not marked
 * ZERO because null_blk reads 0xFF past the write pointer.  A READONLY
 * zone reads its data everywhere; an OFFLINE zone cannot be read at all.
 */
static int
zonednull_extents (void *handle UNUSED, uint32_t count, uint64_t offset,
                   uint32_t flags, struct nbdkit_extents *extents)
{
  uint64_t sector = offset >> ZN_SECTOR_SHIFT;
  uint64_t end = (offset + count) >> ZN_SECTOR_SHIFT;
  struct zn_zone zones[REPORT_BATCH];
  unsigned n;

  while (sector < end
         && (n = zn_report_zones (dev, sector, zones, REPORT_BATCH)) > 0) {
    for (unsigned i = 0; i < n && sector < end; i++) {
      const struct zn_zone *z = &zones[i];
      uint64_t zend = z->start + z->len;
      uint64_t data_end;

      if (z->type == ZN_ZONE_CONVENTIONAL || z->cond == ZN_COND_READONLY)
        data_end = zend;
      else if (z->cond == ZN_COND_OFFLINE)
        data_end = z->start;
      else
        data_end = z->wp;

      if (data_end > z->start
          && nbdkit_add_extent (extents, z->start << ZN_SECTOR_SHIFT,
                                (data_end - z->start) << ZN_SECTOR_SHIFT,
                                0) == -1)
        return -1;
      if (zend > data_end
          && nbdkit_add_extent (extents, data_end << ZN_SECTOR_SHIFT,
                                (zend - data_end) << ZN_SECTOR_SHIFT,
                                NBDKIT_EXTENT_HOLE) == -1)
        return -1;
      sector = zend;
      if (flags & NBDKIT_FLAG_REQ_ONE)
        return 0;
    }
  }
  return 0;
}

static void
zonednull_unload (void)
{
  zn_control_destroy (ctl);
  zn_dev_destroy (dev);
  free (cond_settings);
}

static struct nbdkit_plugin plugin = {
  .name              = "zonednull",
  .longname          = "nbdkit null_blk zoned device plugin",
#ifdef PACKAGE_VERSION
  .version           = PACKAGE_VERSION,
#endif
  .description       = "Linux null_blk's zoned block device (kernel 6.1) "
                       "over NBD, without root",
  .load              = zonednull_load,
  .unload            = zonednull_unload,
  .config            = zonednull_config,
  .config_complete   = zonednull_config_complete,
  .config_help       = zonednull_config_help,
  .magic_config_key  = "size",
  .list_exports      = zonednull_list_exports,
  .default_export    = zonednull_default_export,
  .open              = zonednull_open,
  .close             = zonednull_close,
  .get_size          = zonednull_get_size,
  .block_size        = zonednull_block_size,
  .can_multi_conn    = zonednull_can_multi_conn,
  .can_trim          = zonednull_can_trim,
  .can_extents       = zonednull_can_extents,
  .can_fua           = zonednull_can_fua,
  .pread             = zonednull_pread,
  .pwrite            = zonednull_pwrite,
  .flush             = zonednull_flush,
  .trim              = zonednull_trim,
  .extents           = zonednull_extents,
  /* No .zero: nbdkit then writes zeroes through pwrite, which is what the
   * block layer does for null_blk, so the zone write rules apply.
   */
};

NBDKIT_REGISTER_PLUGIN (plugin)
