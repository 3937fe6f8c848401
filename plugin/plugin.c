/* SPDX-License-Identifier: BSD-3-Clause */
/* nbdkit-zonednull-plugin: Linux null_blk's zoned device over NBD, as
 * the null_blk of Linux 6.1, 6.12 or 7.3 behaves (kernel=).
 *
 * The zone rules live in the model library (lib/model/zoned.h);
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

#include "frontend/control.h"
#include "model/fault.h"
#include "model/queue.h"
#include "model/zoned.h"
#include "powerfail/wlog.h"
#include "util/clock.h"
#include "util/escape.h"
#include "frontend/nbd-zones.h"
#include "config/params.h"

/* Every zone table update happens under the model's own locks; see
 * zonednull_thread_model for when requests still run one at a time.
 */
#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

/* Callbacks have fixed signatures; most ignore the handle and flags. */
#define UNUSED __attribute__ ((unused))

#define MIB (UINT64_C (1) << 20)
#define MAX_REQUEST (32 * 1024 * 1024)  /* advertised maximum block size */
#define REPORT_BATCH 64                 /* zones per zn_report_zones call */
#define REQUEUE_DELAY_NS 3000000        /* blk-mq's BLK_MQ_RESOURCE_DELAY */

static int zonednull_thread_model (void);

/* The command line's parameters (lib/config/params.c, shared with
 * zonednull-server and zonednull-ublk): null_blk's over its defaults.
 */
static struct zn_params params;

/* One device: its zones, its control channel (a second export) and its
 * hardware queues.  Every connection to a device sees the same zones, as
 * with a real disk.
 */
struct device {
  char name[16];                /* "nullbN" */
  char control_name[32];        /* "nullbN/control" */
  struct zn_dev *dev;
  const struct zn_geometry *geo;
  struct zn_control *ctl;
  struct zn_queues *qs;
};
static struct device *devices;

/* One tag set per device, or one for all with shared_tags. */
static struct zn_tagset **tagsets;
static uint32_t nr_tagsets;

/* NBD command types, as the control channel names failed data requests. */
#define NBD_CMD_READ 0
#define NBD_CMD_WRITE 1
#define NBD_CMD_FLUSH 3
#define NBD_CMD_TRIM 4

/* Per connection: which export it opened, and for the control export the
 * result of its last command.
 */
struct handle {
  struct device *d;
  bool control;
  bool readonly;
  unsigned queue;               /* data export: the hardware queue it feeds */
  struct zn_control_conn conn;
  /* Data export "nullbN/session/ID": the error log its failures go to
   * (NULL: the device-wide log).
   */
  struct zn_control_errlog *errlog;
};

static void
zonednull_load (void)
{
  params_init (&params);
  params.help = "nbdkit zonednull --help";
}

static int
zonednull_config (const char *key, const char *value)
{
  char err[256];

  if (params_set_key (&params, key, value, err, sizeof err) < 0) {
    nbdkit_error ("%s", err);
    return -1;
  }
  return 0;
}

static int
create_device (struct device *d, uint32_t index)
{
  char err[256] = "", dir[4096];
  struct zn_config cfg;

  snprintf (d->name, sizeof d->name, "nullb%" PRIu32, index);
  snprintf (d->control_name, sizeof d->control_name, "%s" ZN_CONTROL_SUFFIX,
            d->name);
  d->dev = zn_dev_create (params_device_config (&params, index, &cfg, dir,
                                                sizeof dir),
                          err, sizeof err);
  if (d->dev == NULL) {
    nbdkit_error ("%s", err[0] ? err : zn_errno_name (errno));
    return -1;
  }
  /* NBD clients see the device as /dev/nullb0's users do, behind the
   * block layer's zone write plugs (6.10+).
   */
  if (zn_dev_write_plugging (d->dev, err, sizeof err) < 0) {
    nbdkit_error ("%s", err);
    return -1;
  }
  d->geo = zn_dev_geometry (d->dev);
  d->qs = zn_queues_create (tagsets[params.queue.shared_tags ? 0 : index],
                            &params.queue);
  d->ctl = zn_control_create (d->dev);
  if (d->qs == NULL || d->ctl == NULL) {
    nbdkit_error ("out of memory for %s", d->name);
    return -1;
  }
  zn_control_set_queues (d->ctl, d->qs, &params.queue, &params.cfg, index,
                         params.nr_devices);
  /* A timeout holds a thread: only when others serve the connection. */
  zn_control_allow_faults (d->ctl, zonednull_thread_model ()
                                   == NBDKIT_THREAD_MODEL_PARALLEL);
  /* The configfs attributes are written after power-on. */
  if (params_apply (&params, d->dev, err, sizeof err) < 0) {
    nbdkit_error ("%s", err);
    return -1;
  }
  return 0;
}

static int
zonednull_config_complete (void)
{
  char err[256] = "";

  if (params_check (&params, err, sizeof err) < 0) {
    nbdkit_error ("%s", err);
    return -1;
  }
  /* null_blk's shared tag set is one tag set for all devices. */
  nr_tagsets = params.queue.shared_tags ? 1 : params.nr_devices;
  tagsets = calloc (nr_tagsets, sizeof *tagsets);
  devices = calloc (params.nr_devices, sizeof *devices);
  if (tagsets == NULL || devices == NULL) {
    nbdkit_error ("calloc: out of memory");
    return -1;
  }
  for (uint32_t i = 0; i < nr_tagsets; i++) {
    tagsets[i] = zn_tagset_create (&params.queue);
    if (tagsets[i] == NULL) {
      nbdkit_error ("out of memory for %" PRIu32 " tags",
                    params.queue.hw_queue_depth);
      return -1;
    }
  }
  for (uint32_t i = 0; i < params.nr_devices; i++)
    if (create_device (&devices[i], i) == -1)
      return -1;

  return 0;
}

/* nbdkit's worker threads serve a connection's requests in parallel,
 * which reorders them: a client's sequential writes then reach a zone
 * out of order, and all but the first of each batch fail or wait.  That
 * parallelism is needed only by requests that sleep in the plugin (timed
 * completion, the mbps budget, a pipelined write waiting for a request
 * behind it on the same connection, a fault's timeout, requeue or
 * delay); without those, a connection's
 * requests run in the order they were sent, as zonednull-server runs
 * them, and connections still run in parallel.
 */
static int
zonednull_thread_model (void)
{
  bool requests_sleep = zn_queue_timed (&params.queue)
                        || params.queue.mbps > 0
                        || params.cfg.pipeline_zoned_writes
                        || params_faults_given (&params);

  return requests_sleep ? NBDKIT_THREAD_MODEL_PARALLEL
                        : NBDKIT_THREAD_MODEL_SERIALIZE_REQUESTS;
}

static int
zonednull_list_exports (int readonly UNUSED, int is_tls UNUSED,
                        struct nbdkit_exports *exports)
{
  for (uint32_t i = 0; i < params.nr_devices; i++)
    if (nbdkit_add_export (exports, devices[i].name,
                           "null_blk zoned device") == -1
        || nbdkit_add_export (exports, devices[i].control_name,
                              "zone control (zonednull-control(5))") == -1)
      return -1;
  return 0;
}

static const char *
zonednull_default_export (int readonly UNUSED, int is_tls UNUSED)
{
  return ZN_DEFAULT_DEVICE;
}

/* "" is nullb0, as the default export.  A data export may be named
 * "nullbN/session/ID" (zonednull-control(5)): *errlog is then ID, the id
 * of its error log, otherwise 0.  *bad is set for such a name with a
 * malformed id.
 */
static struct device *
find_device (const char *name, bool *control, uint64_t *errlog, bool *bad)
{
  *errlog = 0;
  *bad = false;
  if (strcmp (name, "") == 0)
    name = ZN_DEFAULT_DEVICE;
  for (uint32_t i = 0; i < params.nr_devices; i++) {
    int r;

    if (strcmp (name, devices[i].name) == 0) {
      *control = false;
      return &devices[i];
    }
    if (strcmp (name, devices[i].control_name) == 0) {
      *control = true;
      return &devices[i];
    }
    r = zn_control_parse_errlog_name (name, strlen (name), devices[i].name,
                                       errlog);
    if (r == 1) {
      *control = false;
      return &devices[i];
    }
    if (r < 0) {
      *bad = true;
      return NULL;
    }
  }
  return NULL;
}

static void *
zonednull_open (int readonly)
{
  const char *name = nbdkit_export_name ();
  struct handle *h;
  uint64_t errlog;
  bool bad;
  /* For the log: the client chose the name (escape.h). */
  char logged[ZN_ESCAPED_SIZE (64)];

  if (name == NULL)
    name = "";
  zn_escape (logged, sizeof logged, name, strlen (name));
  h = calloc (1, sizeof *h);
  if (h == NULL) {
    nbdkit_error ("calloc: out of memory");
    return NULL;
  }
  h->readonly = readonly;
  h->d = find_device (name, &h->control, &errlog, &bad);
  if (h->d == NULL && bad) {
    nbdkit_error ("export '%s': an error log's export is nullbN"
                  ZN_ERRLOG_INFIX
                  "ID, ID being %d hex digits, not all zero "
                  "(zonednull-control(5))", logged, ZN_ERRLOG_ID_DIGITS);
    free (h);
    return NULL;
  }
  if (h->d == NULL) {
    nbdkit_error ("no export named '%s' (exports: nullb0 to nullb%" PRIu32
                  ", each with /control and /session/ID)", logged,
                  params.nr_devices - 1);
    free (h);
    return NULL;
  }
  if (errlog) {
    h->errlog = zn_control_errlog_attach (h->d->ctl, errlog);
    if (h->errlog == NULL) {
      nbdkit_error ("export '%s': out of memory for the error log", logged);
      free (h);
      return NULL;
    }
  }
  /* Each connection to a data export is one hardware queue's submitter. */
  if (!h->control)
    h->queue = zn_queues_attach (h->d->qs);
  return h;
}

static void
zonednull_close (void *handle)
{
  struct handle *h = handle;

  /* The error log first: once the queue counts the connection gone, its
   * error log is idle (tests wait for that).
   */
  zn_control_errlog_detach (h->d->ctl, h->errlog);
  if (!h->control)
    zn_queues_detach (h->d->qs, h->queue);
  free (h);
}

static int64_t
zonednull_get_size (void *handle)
{
  struct handle *h = handle;

  if (h->control)
    return (int64_t) zn_control_size (h->d->ctl);
  return (int64_t) (h->d->geo->capacity << ZN_SECTOR_SHIFT);
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
  uint32_t bs = h->d->geo->block_size;

  *minimum = h->control ? 1 : bs;
  *preferred = bs > 4096 ? bs : 4096;
  *maximum = MAX_REQUEST;
  return 0;
}

/* All connections share one zone table and one cache, so FLUSH and FUA on
 * one connection cover the writes of every connection.
 */
static int
zonednull_can_multi_conn (void *handle UNUSED)
{
  return 1;
}

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

/* FUA is passed to the model: with a cache (cache_size) a FUA write is
 * durable at once, as null_blk writes it around its cache.  From 6.10
 * null_blk advertises FUA only with cache_size and fua, and so does the
 * data export; the control export keeps it for appends.
 */
static int
zonednull_can_fua (void *handle)
{
  struct handle *h = handle;

  return h->control || h->d->geo->fua ? NBDKIT_FUA_NATIVE : NBDKIT_FUA_NONE;
}

/* nbdkit advertises the block size but does not enforce it. */
static int
check_alignment (struct device *d, const char *what, uint32_t count,
                 uint64_t offset)
{
  uint32_t bs = d->geo->block_size;

  if (offset % bs) {
    nbdkit_error ("%s: offset %" PRIu64 " is not a multiple of the "
                  "block size %" PRIu32, what, offset, bs);
    nbdkit_set_error (EINVAL);
    return -1;
  }
  if (count % bs) {
    nbdkit_error ("%s: length %" PRIu32 " is not a multiple of the "
                  "block size %" PRIu32, what, count, bs);
    nbdkit_set_error (EINVAL);
    return -1;
  }
  return 0;
}

/* A failed data request: logged, remembered for DATA_ERRNO (or the
 * connection's error log, for ERRLOG_ERRNO), sent.
 */
static int
data_error (struct handle *h, const char *what, uint32_t nbd_cmd,
            uint32_t count, uint64_t offset, int err, enum zn_reason why)
{
  struct device *d = h->d;

  char text[512];

  nbdkit_error ("%s: %s", d->name,
                zn_request_error_text (text, sizeof text, what, offset, count,
                                       d->geo->zone_sectors << ZN_SECTOR_SHIFT,
                                       err, why));
  zn_control_errlog_add (d->ctl, h->errlog, nbd_cmd, offset, count,
                                err);
  nbdkit_set_error (zn_block_errno (err));
  return -1;
}

/* Data requests run between request_begin and request_end: they hold a
 * tag of their queue's pool, are applied at once as null_blk applies them
 * at submission, and are answered when their completion is due.
 */
struct request {
  struct zn_request rq;
  struct zn_fault fault;
  uint64_t start;               /* zn_now_ns; 0 without fault settings */
};

/* A request that times out: never answered, its thread held until the
 * client goes or nbdkit stops; then -1 with ESHUTDOWN to return.
 */
static void
hold_forever (void)
{
  while (nbdkit_nanosleep (3600, 0) == 0)
    ;
  nbdkit_set_error (ESHUTDOWN);
}

/* Takes a tag and asks the fault settings about the request, as
 * null_queue_rq does once it has one.  A requeue gives the tag back and
 * asks again after blk-mq's resource delay: NBD cannot tell a client to
 * retry, and a retry is all a host sees of a requeue.  A timeout is never
 * answered: the thread holds the request and its tag until the client
 * goes or nbdkit stops (-1, ESHUTDOWN), while other threads serve the
 * connection.  0 otherwise, and rq->fault says what follows.
 */
static int
request_begin (struct handle *h, enum zn_fault_op op, uint64_t offset,
               uint64_t count, uint64_t bytes, struct request *rq)
{
  struct device *d = h->d;

  for (;;) {
    rq->start = zn_fault_armed (d->dev) ? zn_now_ns () : 0;
    zn_queue_begin (d->qs, h->queue, bytes, &rq->rq);
    zn_fault_decide (d->dev, op, offset >> ZN_SECTOR_SHIFT,
                     count >> ZN_SECTOR_SHIFT, bytes, &rq->fault);
    if (rq->fault.action == ZN_FAULT_REQUEUE) {
      zn_queue_complete (d->qs, &rq->rq);
      if (nbdkit_nanosleep (0, REQUEUE_DELAY_NS) == -1)
        return -1;
      continue;
    }
    if (rq->fault.action == ZN_FAULT_TIMEOUT) {
      nbdkit_debug ("%s: %s at offset %" PRIu64 " length %" PRIu64
                    " times out: it is never answered", d->name,
                    zn_fault_op_name (op), offset, count);
      hold_forever ();
      zn_queue_complete (d->qs, &rq->rq);
      return -1;
    }
    /* Answered later than it runs: its writes go in the write log when
     * it is (request_end).
     */
    if (zn_queue_timed (&params.queue) || rq->fault.delay_ns)
      zn_wlog_defer ();
    return 0;
  }
}

/* Sleeps until ns have passed since start (zn_now_ns, or 0: now), early
 * if nbdkit stops.
 */
static void
sleep_until (uint64_t start, uint64_t ns)
{
  uint64_t now;

  if (ns == 0)
    return;
  now = zn_now_ns ();
  if (start == 0)
    start = now;
  if (now - start < ns) {
    uint64_t left = ns - (now - start);

    nbdkit_nanosleep (left / 1000000000, left % 1000000000);
  }
}

/* A zone command of the control channel that fault settings hold: for
 * ever (a timeout, as request_begin's), or until its delay has passed
 * since start.
 */
static int
control_hold (struct handle *h, uint64_t start)
{
  if (h->conn.hold_ns == ZN_CONTROL_HOLD_FOREVER) {
    nbdkit_debug ("%s: control command times out: it is never answered",
                  h->d->name);
    hold_forever ();
    return -1;
  }
  sleep_until (start, h->conn.hold_ns);
  return 0;
}

/* Holds the answer until the fault's delay (a rule's, a zone operation's
 * latency) and irqmode=2's completion have both passed.
 */
static void
request_end (struct handle *h, struct request *rq)
{
  struct zn_wlog_hold *hold = zn_wlog_deferred ();

  sleep_until (rq->start, rq->fault.delay_ns);
  zn_queue_end (h->d->qs, &rq->rq);
  zn_wlog_complete (hold);
}

static int
zonednull_pread (void *handle, void *buf, uint32_t count,
                 uint64_t offset, uint32_t flags UNUSED)
{
  struct handle *h = handle;
  struct request rq;
  enum zn_reason why;
  int r;

  if (h->control) {
    r = zn_control_pread (h->d->ctl, &h->conn, h->readonly, buf, count, offset);
    if (r < 0) {
      nbdkit_error ("control: read at offset %" PRIu64 " length %" PRIu32
                    " is outside the control export", offset, count);
      nbdkit_set_error (-r);
      return -1;
    }
    return 0;
  }
  /* nbdkit refuses zero-length requests before calling a plugin (EINVAL;
   * ENOSPC for writes) and zonednull-server does the same.  Should one
   * reach us anyway, through a filter, it is a no-op, as in nbdkit's own
   * plugins (memory, null): no tag, no error.
   */
  if (count == 0)
    return 0;
  if (check_alignment (h->d, "pread", count, offset) == -1)
    return -1;
  if (request_begin (h, ZN_FOP_READ, offset, count, count, &rq) == -1)
    return -1;
  why = ZN_REASON_NONE;
  r = rq.fault.action == ZN_FAULT_FAIL ? 0
      : zn_read_why (h->d->dev, buf, offset >> ZN_SECTOR_SHIFT,
                     count >> ZN_SECTOR_SHIFT, &why);
  r = zn_fault_outcome (h->d->dev, &rq.fault, ZN_FOP_READ,
                        offset >> ZN_SECTOR_SHIFT, r, &why);
  request_end (h, &rq);
  if (r < 0)
    return data_error (h, "pread", NBD_CMD_READ, count, offset, -r, why);
  return 0;
}

static int
zonednull_pwrite (void *handle, const void *buf, uint32_t count,
                  uint64_t offset, uint32_t flags)
{
  struct handle *h = handle;
  struct request rq;
  enum zn_reason reason;
  int r;

  if (h->control) {
    char why[256] = "";

    rq.start = zn_fault_armed (h->d->dev) ? zn_now_ns () : 0;
    r = zn_control_pwrite (h->d->ctl, &h->conn, buf, count, offset,
                           why, sizeof why);
    if (r < 0) {
      nbdkit_error ("control: %s", why);
      nbdkit_set_error (-r);
      return -1;
    }
    r = control_hold (h, rq.start);
    zn_control_complete (&h->conn);
    return r;
  }
  if (count == 0)                      /* a no-op, as in zonednull_pread */
    return 0;
  if (check_alignment (h->d, "pwrite", count, offset) == -1)
    return -1;
  if (request_begin (h, ZN_FOP_WRITE, offset, count, count, &rq) == -1)
    return -1;
  reason = ZN_REASON_NONE;
  r = rq.fault.action == ZN_FAULT_FAIL ? 0
      : zn_write_why (h->d->dev, buf, offset >> ZN_SECTOR_SHIFT,
                      count >> ZN_SECTOR_SHIFT, flags & NBDKIT_FLAG_FUA,
                      &reason);
  r = zn_fault_outcome (h->d->dev, &rq.fault, ZN_FOP_WRITE,
                        offset >> ZN_SECTOR_SHIFT, r, &reason);
  request_end (h, &rq);
  if (r < 0)
    return data_error (h, "pwrite", NBD_CMD_WRITE, count, offset, -r,
                       reason);
  return 0;
}

/* Writes back the volatile cache (cache_size) and, with backing_dir,
 * syncs the zone files written; otherwise a no-op.  A flush is a request
 * that takes a tag and completes like the others.
 */
static int
zonednull_flush (void *handle, uint32_t flags UNUSED)
{
  struct handle *h = handle;
  struct request rq;
  enum zn_reason why = ZN_REASON_NONE;
  int r;

  if (h->control)
    return 0;
  if (request_begin (h, ZN_FOP_FLUSH, 0, 0, 0, &rq) == -1)
    return -1;
  r = rq.fault.action == ZN_FAULT_FAIL ? 0 : zn_flush (h->d->dev);
  if (r < 0)
    why = zn_reason_of (-r);
  r = zn_fault_outcome (h->d->dev, &rq.fault, ZN_FOP_FLUSH, 0, r, &why);
  request_end (h, &rq);
  if (r < 0)
    return data_error (h, "flush", NBD_CMD_FLUSH, 0, 0, -r, why);
  return 0;
}

/* zoned null_blk never advertises discard.  TRIM is the one NBD command
 * that can carry a zone reset, so it is given exactly the meaning of
 * BLKRESETZONE and nothing looser (lib/frontend/nbd-zones.h): a trim that is not a
 * reset is refused rather than silently ignored.
 */
static int
zonednull_trim (void *handle, uint32_t count, uint64_t offset,
                uint32_t flags UNUSED)
{
  struct handle *h = handle;
  struct device *d = h->d;
  struct request rq;
  enum zn_reason reason;
  char why[200];
  int r;

  if (count == 0)                      /* a no-op, as in zonednull_pread */
    return 0;
  if ((r = zn_nbd_trim_check (d->geo, offset, count, why, sizeof why)) != 0) {
    nbdkit_error ("trim: %s", why);
    nbdkit_set_error (r);
    return -1;
  }

  /* A zone reset carries no data: it takes a tag, not bandwidth. */
  if (request_begin (h, ZN_FOP_RESET, offset, count, 0, &rq) == -1)
    return -1;
  reason = ZN_REASON_NONE;
  r = rq.fault.action == ZN_FAULT_FAIL ? 0
      : zn_zone_mgmt_why (d->dev, ZN_OP_RESET, offset >> ZN_SECTOR_SHIFT,
                          (uint64_t) count >> ZN_SECTOR_SHIFT, &reason);
  r = zn_fault_outcome (d->dev, &rq.fault, ZN_FOP_RESET,
                        offset >> ZN_SECTOR_SHIFT, r, &reason);
  request_end (h, &rq);
  if (r < 0)
    return data_error (h, "trim", NBD_CMD_TRIM, count, offset, -r, reason);
  return 0;
}

/* Data up to each write pointer, a hole after it (lib/frontend/nbd-zones.h).
 * Block status is a report, not an I/O request: it takes no tag.
 */
static int
zonednull_extents (void *handle, uint32_t count, uint64_t offset,
                   uint32_t flags, struct nbdkit_extents *extents)
{
  struct handle *h = handle;
  uint64_t sector = offset >> ZN_SECTOR_SHIFT;
  uint64_t end = (offset + count) >> ZN_SECTOR_SHIFT;
  struct zn_zone zones[REPORT_BATCH];
  unsigned n;

  while (sector < end
         && (n = zn_report_zones (h->d->dev, sector, zones, REPORT_BATCH)) > 0) {
    for (unsigned i = 0; i < n && sector < end; i++) {
      struct zn_extent x[3];
      unsigned nx = zn_zone_extents (&zones[i], ZN_VIEW_ALLOCATION, x);

      for (unsigned j = 0; j < nx; j++)
        if (x[j].end > x[j].start
            && nbdkit_add_extent (extents, x[j].start << ZN_SECTOR_SHIFT,
                                  (x[j].end - x[j].start) << ZN_SECTOR_SHIFT,
                                  x[j].flags & ZN_EXTENT_HOLE
                                  ? NBDKIT_EXTENT_HOLE : 0) == -1)
          return -1;
      sector = zones[i].start + zones[i].len;
      if (flags & NBDKIT_FLAG_REQ_ONE)
        return 0;
    }
  }
  return 0;
}

static void
zonednull_unload (void)
{
  for (uint32_t i = 0; devices && i < params.nr_devices; i++) {
    zn_control_destroy (devices[i].ctl);
    zn_queues_destroy (devices[i].qs);
    zn_dev_destroy (devices[i].dev);
  }
  for (uint32_t i = 0; tagsets && i < nr_tagsets; i++)
    zn_tagset_destroy (tagsets[i]);
  free (devices);
  free (tagsets);
  params_free (&params);
}

static struct nbdkit_plugin plugin = {
  .name              = "zonednull",
  .longname          = "nbdkit null_blk zoned device plugin",
#ifdef PACKAGE_VERSION
  .version           = PACKAGE_VERSION,
#endif
  .description       = "Linux null_blk's zoned block device (kernel 6.1, "
                       "6.12 or 7.3) over NBD, without root",
  .load              = zonednull_load,
  .unload            = zonednull_unload,
  .config            = zonednull_config,
  .config_complete   = zonednull_config_complete,
  .thread_model      = zonednull_thread_model,
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

/* nbdkit reads config_help from the struct that plugin_init returns,
 * right after loading the plugin, so the text from lib/config/params.c's table
 * has to be there before: a constructor runs at dlopen, ahead of that.
 */
static void __attribute__ ((constructor))
zonednull_fill_config_help (void)
{
  static char *text;
  size_t len;
  FILE *fp = open_memstream (&text, &len);

  if (fp == NULL)
    return;
  params_print_help (fp);
  fputs ("Use nbdkit -t >= hw_queue_depth with irqmode=2 (see the man page).",
         fp);
  if (fclose (fp) == 0)
    plugin.config_help = text;
}
