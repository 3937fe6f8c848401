/* SPDX-License-Identifier: BSD-3-Clause */
/* The NBD transmission phase: requests on the export the handshake
 * chose, each admitted by the program (tags, bandwidth, parked writes)
 * before it runs, its reply held until the program releases it when
 * completions are timed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/control.h"
#include "model/fault.h"
#include "model/zoned.h"
#include "powerfail/wlog.h"
#include "internal.h"
#include "frontend/nbd-zones.h"

/* A failed data request, for DATA_ERRNO or the error log's ERRLOG_ERRNO. */
static void
log_failure (struct nbd_session *s, uint32_t nbd_cmd, uint64_t offset,
             uint32_t count, int err)
{
  zn_control_errlog_add (s->d->ctl, s->errlog, nbd_cmd, offset,
                                count, err);
}

static uint32_t
nbd_error (int err)
{
  switch (err) {
  case EPERM: return NBD_EPERM;
  case EIO: return NBD_EIO;
  case ENOMEM: return NBD_ENOMEM;
  case ENOSPC: return NBD_ENOSPC;
  case EOPNOTSUPP: return NBD_ENOTSUP;
  /* The open and active zone limits: NBD has no code for them; the exact
   * errno is kept for the control channel.
   */
  default: return NBD_EINVAL;
  }
}

static void
reply_simple (struct nbd_session *s, uint64_t cookie, uint32_t error)
{
  out_simple_reply (s, &(struct nbd_simple_reply) {
    .error = error, .cookie = cookie,
  });
}

static void
chunk_header (struct nbd_session *s, uint16_t flags, uint16_t type,
              uint64_t cookie, uint32_t len)
{
  out_chunk (s, &(struct nbd_chunk) {
    .flags = flags, .type = type, .cookie = cookie, .len = len,
  });
}

/* A failed request: the error, and with structured replies a message. */
static void
reply_error (struct nbd_session *s, uint64_t cookie, int err,
             const char *fmt, ...)
{
  struct message m;
  va_list ap;

  if (!s->structured) {
    reply_simple (s, cookie, nbd_error (err));
    return;
  }
  va_start (ap, fmt);
  nbd_format_message (&m, fmt, ap);
  va_end (ap);
  chunk_header (s, REPLY_FLAG_DONE, REPLY_ERROR, cookie, 6 + (uint32_t) m.len);
  out_be32 (s, nbd_error (err));
  out_be16 (s, m.len);
  out_bytes (s, m.text, m.len);
}

/* Success without payload: a simple reply even with structured replies,
 * as the protocol allows for every command but READ and BLOCK_STATUS.
 * Its 16 bytes are one receive for a client, a chunk's 20 are two.
 */
static void
reply_ok (struct nbd_session *s, uint64_t cookie)
{
  reply_simple (s, cookie, 0);
}

/* A data request the model failed: in the error logs with its exact
 * errno, and answered with the errno a user of the block device gets,
 * and why.
 */
static void
reply_failure (struct nbd_session *s, uint64_t cookie, uint32_t nbd_cmd,
               const char *what, uint64_t offset, uint32_t count, int err,
               enum zn_reason why)
{
  const struct zn_geometry *geo = zn_dev_geometry (s->d->dev);
  char text[512];

  log_failure (s, nbd_cmd, offset, count, err);
  reply_error (s, cookie, zn_block_errno (err), "%s",
               zn_request_error_text (text, sizeof text, what, offset, count,
                                      geo->zone_sectors << ZN_SECTOR_SHIFT,
                                      err, why));
}

/* A data request under the fault settings: decided before it runs, and
 * whether it runs at all.  The verdict stays in s->fault: run_request
 * answers a request that times out or is requeued not at all, or not
 * yet, and holds a delayed answer back.
 */
static bool
fault_skips (struct nbd_session *s, enum zn_fault_op op, uint64_t offset,
             uint64_t count, uint64_t bytes, struct zn_fault *f)
{
  zn_fault_decide (s->d->dev, op, offset >> ZN_SECTOR_SHIFT,
                   count >> ZN_SECTOR_SHIFT, bytes, f);
  s->fault = *f;
  return f->action != ZN_FAULT_PASS && f->action != ZN_FAULT_FAIL_AFTER;
}

/* No answer now: the request timed out or was requeued. */
static bool
withheld (const struct nbd_session *s)
{
  return s->fault.action == ZN_FAULT_TIMEOUT
         || s->fault.action == ZN_FAULT_REQUEUE;
}

static bool
all_zero (const unsigned char *p, size_t n)
{
  return p[0] == 0 && memcmp (p, p + 1, n - 1) == 0;
}

/* How many zones BLOCK_STATUS rq describes: those over its range, or with
 * REQ_ONE the first (its first extent ends within it: extents are not
 * merged past the first).
 */
static unsigned
status_zone_count (struct zn_dev *dev, const struct nbd_request *rq)
{
  uint64_t zone_bytes = zn_dev_geometry (dev)->zone_sectors << ZN_SECTOR_SHIFT;

  if (rq->flags & CMD_FLAG_REQ_ONE)
    return 1;
  return (unsigned) ((rq->offset + rq->count - 1) / zone_bytes
                     - rq->offset / zone_bytes + 1);
}

/* Reports up to nr zones from the one holding byte offset into zones:
 * how many, or with nowait -EAGAIN when a storage thread holds one.
 */
static int
status_zones (struct zn_dev *dev, uint64_t offset, struct zn_zone *zones,
              unsigned nr, bool nowait)
{
  uint64_t sector = offset >> ZN_SECTOR_SHIFT;
  unsigned got = 0;

  while (got < nr) {
    int n = nowait ? zn_report_zones_nowait (dev, sector, zones + got,
                                             nr - got)
                   : (int) zn_report_zones (dev, sector, zones + got,
                                            nr - got);

    if (n < 0)
      return n;
    if (n == 0)
      break;
    got += (unsigned) n;
    sector = zones[got - 1].start + zones[got - 1].len;
  }
  return (int) got;
}

/* ---- requests run off the loop --------------------------------------------
 *
 * A data request of the device whose fault verdict lets it run may go to
 * the program's workers (served.h's offload_fn): its model call runs
 * there, on a copy of a write's data or into a buffer of a read's, and
 * job_done answers it on the loop, as the request would have been
 * answered had it run at once.
 */
struct nbd_job {
  struct served_job job;
  struct nbd_request rq;
  uint64_t id;
  bool tagged;
  uint64_t arrival;
  struct zn_fault fault;
  unsigned char *data;          /* a read's buffer, a write's copy */
  int r;                        /* the model's result */
  enum zn_reason why;
  /* A request of the control export: the connection's state, which the
   * session takes back when it is answered.
   */
  bool control, readonly;
  struct zn_control_conn conn;
  char control_why[256];
};

static void
job_run (struct served_job *job)
{
  struct nbd_job *j = (struct nbd_job *) job;
  struct zn_dev *dev = job->dev->dev;
  uint64_t sector = j->rq.offset >> ZN_SECTOR_SHIFT;
  uint32_t sectors = j->rq.count >> ZN_SECTOR_SHIFT;

  if (j->control) {
    j->r = j->rq.type == CMD_READ
           ? zn_control_pread (job->dev->ctl, &j->conn, j->readonly, j->data,
                               j->rq.count, j->rq.offset)
           : zn_control_pwrite (job->dev->ctl, &j->conn, j->data, j->rq.count,
                                j->rq.offset, j->control_why,
                                sizeof j->control_why);
    return;
  }
  switch (j->rq.type) {
  case CMD_READ:
    j->r = zn_read_why (dev, j->data, sector, sectors, &j->why);
    break;
  case CMD_WRITE:
    j->r = zn_write_why (dev, j->data, sector, sectors,
                         j->rq.flags & CMD_FLAG_FUA, &j->why);
    break;
  case CMD_FLUSH:
    j->r = zn_flush (dev);
    break;
  case CMD_BLOCK_STATUS:
    j->r = status_zones (dev, j->rq.offset, (struct zn_zone *) j->data,
                         status_zone_count (dev, &j->rq), false);
    break;
  default:
    j->r = zn_zone_mgmt_why (dev, ZN_OP_RESET, sector, sectors, &j->why);
    break;
  }
}

/* A write without FUA may go into the page cache from the loop. */
static bool
job_try_write (struct served_job *job)
{
  struct nbd_job *j = (struct nbd_job *) job;

  j->r = zn_write_nowait (job->dev->dev, j->data,
                          j->rq.offset >> ZN_SECTOR_SHIFT,
                          j->rq.count >> ZN_SECTOR_SHIFT, &j->why);
  return j->r != -EAGAIN;
}

static void
job_share (struct served_job *job, const struct served_job *ran)
{
  struct nbd_job *j = (struct nbd_job *) job;
  const struct nbd_job *r = (const struct nbd_job *) ran;

  j->r = r->r;
  j->why = r->why;
}

static void job_done (void *session, struct served_job *job);

/* The memory a job of rq holds: a read's buffer, a write's copy, a block
 * status's zones.
 */
static size_t
job_bytes (const struct nbd_session *s, const struct nbd_request *rq)
{
  if (rq->type == CMD_READ || rq->type == CMD_WRITE)
    return rq->count;
  if (rq->type == CMD_BLOCK_STATUS)
    return status_zone_count (s->d->dev, rq) * sizeof (struct zn_zone);
  return 0;
}

/* The request being run (s->run), with the fault verdict f, goes to the
 * program's workers if it takes it.  A write's and a zone reset's key
 * is their zone's, so that a zone's writes run in the order they came.
 */
static bool
offload (struct nbd_session *s, const struct zn_fault *f)
{
  const struct nbd_request *rq = s->run.rq;
  const struct zn_geometry *geo = zn_dev_geometry (s->d->dev);
  struct nbd_job *j;
  size_t bytes = job_bytes (s, rq);

  if (!s->d->offload || s->sv->offload == NULL)
    return false;
  j = calloc (1, sizeof *j);
  if (j == NULL || (bytes && (j->data = malloc (bytes)) == NULL)) {
    free (j);
    return false;               /* run at once, which needs no memory */
  }
  j->job = (struct served_job) {
    .dev = s->d, .run = job_run, .done = job_done,
    .untagged = !s->run.tagged,
  };
  if (s->control) {
    j->control = true;
    j->readonly = s->sv->readonly;
    j->conn = s->conn;
  }
  if ((rq->type == CMD_WRITE || rq->type == CMD_TRIM) && !s->control)
    j->job.key = 1 + (uint64_t) (s->d - s->sv->devices)
                 + (rq->offset >> ZN_SECTOR_SHIFT) / geo->zone_sectors
                   * s->sv->nr_devices;
  j->rq = *rq;
  j->id = s->run.id;
  j->tagged = s->run.tagged;
  j->arrival = s->arrival;
  j->fault = *f;
  if (rq->type == CMD_FLUSH)
    j->job.share = job_share;
  if (rq->type == CMD_WRITE) {
    memcpy (j->data, s->run.payload, bytes);
    if (!(rq->flags & CMD_FLAG_FUA) && !s->control)
      j->job.try_run = job_try_write;
  }
  /* Counted first: job_done may come before offload returns. */
  s->offloaded++;
  s->offloaded_bytes += bytes;
  if (!s->sv->offload (s->owner, &j->job)) {
    s->offloaded--;
    s->offloaded_bytes -= bytes;
    free (j->data);
    free (j);
    return false;
  }
  s->run.offloaded = true;
  return true;
}

/* ---- the commands ---- */

/* A read of the device ran: r (its verdict applied), its data at buf. */
static void
read_reply (struct nbd_session *s, uint64_t cookie, uint64_t offset,
            uint32_t count, int r, enum zn_reason why,
            const unsigned char *buf)
{
  if (r < 0) {
    reply_failure (s, cookie, CMD_READ, "read", offset, count, -r, why);
    return;
  }
  /* A read of zeros, as every read of an unwritten or memoryless device
   * is, goes as a hole: 32 bytes instead of the data, and one receive
   * and one copy less for the client (qemu-nbd does the same).  A single
   * chunk, so NBD_CMD_FLAG_DF is honoured too.
   */
  if (s->structured && count > 0 && all_zero (buf, count)) {
    chunk_header (s, REPLY_FLAG_DONE, REPLY_OFFSET_HOLE, cookie, 12);
    out_be64 (s, offset);
    out_be32 (s, count);
    return;
  }
  if (s->structured) {
    chunk_header (s, REPLY_FLAG_DONE, REPLY_OFFSET_DATA, cookie, 8 + count);
    out_be64 (s, offset);
  }
  else
    reply_simple (s, cookie, 0);
  /* cmd_read read in place, behind the header. */
  if (s->out.data + s->out.len != buf)
    memcpy (out_reserve (s, count), buf, count);
  else
    s->out.len += count;
}

/* The reply of control export request rq: r, a read's data at buf, a
 * write's failure explained in why.
 */
static void
control_reply (struct nbd_session *s, const struct nbd_request *rq, int r,
               const unsigned char *buf, const char *why)
{
  if (r < 0 && rq->type == CMD_READ)
    reply_error (s, rq->cookie, -r, "read: offset %" PRIu64 " length %"
                 PRIu32 ": %s", rq->offset, rq->count, zn_errno_name (-r));
  else if (r < 0)
    reply_error (s, rq->cookie, -r, "control: %s", why);
  else if (rq->type == CMD_READ)
    read_reply (s, rq->cookie, rq->offset, rq->count, 0, ZN_REASON_NONE, buf);
  else
    reply_ok (s, rq->cookie);
}

static void
cmd_read (struct nbd_session *s, uint64_t cookie, uint64_t offset,
          uint32_t count)
{
  size_t header = s->structured ? NBD_CHUNK_SIZE + 8 : NBD_SIMPLE_REPLY_SIZE;
  size_t mark = s->out.len;
  unsigned char *buf;
  enum zn_reason why = ZN_REASON_NONE;
  struct zn_fault f;
  int r;

  if (s->control) {
    const struct zn_fault pass = { .action = ZN_FAULT_PASS };

    if (s->d->offload && offload (s, &pass))
      return;
    buf = out_reserve (s, header + count) + header;
    r = zn_control_pread (s->d->ctl, &s->conn, s->sv->readonly, buf, count,
                          offset);
    s->out.len = mark;
    control_reply (s, s->run.rq, r, buf, NULL);
    return;
  }
  if (fault_skips (s, ZN_FOP_READ, offset, count, count, &f)) {
    if (!withheld (s))
      read_reply (s, cookie, offset, count,
                  zn_fault_outcome (s->d->dev, &f, ZN_FOP_READ,
                                    offset >> ZN_SECTOR_SHIFT, 0, &why),
                  why, NULL);
    return;
  }
  /* Read straight into the output buffer, behind the reply header; with
   * workers to wait for it, only if the data is at hand.
   */
  buf = out_reserve (s, header + count) + header;
  r = s->d->offload ? zn_read_nowait (s->d->dev, buf,
                                       offset >> ZN_SECTOR_SHIFT,
                                       count >> ZN_SECTOR_SHIFT, &why)
                     : -EAGAIN;
  if (r == -EAGAIN) {
    s->out.len = mark;
    if (offload (s, &f))
      return;
    buf = out_reserve (s, header + count) + header;
    r = zn_read_why (s->d->dev, buf, offset >> ZN_SECTOR_SHIFT,
                     count >> ZN_SECTOR_SHIFT, &why);
  }
  r = zn_fault_outcome (s->d->dev, &f, ZN_FOP_READ,
                        offset >> ZN_SECTOR_SHIFT, r, &why);
  s->out.len = mark;
  read_reply (s, cookie, offset, count, r, why, buf);
}

/* A write or a zone reset (nbd_cmd) of the device ran: r, its verdict
 * applied.
 */
static void
reply_result (struct nbd_session *s, uint64_t cookie, uint32_t nbd_cmd,
              uint64_t offset, uint32_t count, int r, enum zn_reason reason)
{
  if (r < 0)
    reply_failure (s, cookie, nbd_cmd, nbd_cmd == CMD_WRITE ? "write" : "trim",
                   offset, count, -r, reason);
  else
    reply_ok (s, cookie);
}

static void
cmd_write (struct nbd_session *s, uint64_t cookie, uint64_t offset,
           uint32_t count, bool fua, const unsigned char *data)
{
  char why[256] = "";
  enum zn_reason reason = ZN_REASON_NONE;
  struct zn_fault f;
  int r;

  if (s->control) {
    const struct zn_fault pass = { .action = ZN_FAULT_PASS };

    if (s->d->offload && offload (s, &pass))
      return;
    r = zn_control_pwrite (s->d->ctl, &s->conn, data, count, offset,
                           why, sizeof why);
    control_reply (s, s->run.rq, r, NULL, why);
    return;
  }
  if (s->forced_error) {
    /* The scheduler failed its pipelined wait. */
    r = s->forced_error;
    reason = zn_pipeline_reason (-s->forced_error);
  }
  else if (fault_skips (s, ZN_FOP_WRITE, offset, count, count, &f))
    r = 0;
  else if (offload (s, &f))
    return;
  else
    r = zn_write_why (s->d->dev, data, offset >> ZN_SECTOR_SHIFT,
                      count >> ZN_SECTOR_SHIFT, fua, &reason);
  if (!s->forced_error)
    r = zn_fault_outcome (s->d->dev, &f, ZN_FOP_WRITE,
                          offset >> ZN_SECTOR_SHIFT, r, &reason);
  s->forced_error = 0;
  reply_result (s, cookie, CMD_WRITE, offset, count, r, reason);
}

/* A flush of the device ran: r, its verdict applied. */
static void
flush_reply (struct nbd_session *s, uint64_t cookie, int r,
             enum zn_reason why)
{
  /* With backing_dir a flush reaches the disk, and can fail. */
  if (r < 0 && why == ZN_REASON_INJECTED)
    reply_failure (s, cookie, CMD_FLUSH, "flush", 0, 0, -r, why);
  else if (r < 0)
    reply_error (s, cookie, EIO, "flush: %s", strerror (-r));
  else
    reply_ok (s, cookie);
}

/* TRIM is the one NBD command that can carry a zone reset
 * (lib/frontend/nbd-zones.h).
 */
static void
cmd_trim (struct nbd_session *s, uint64_t cookie, uint64_t offset,
          uint32_t count)
{
  char why[200];
  enum zn_reason reason = ZN_REASON_NONE;
  struct zn_fault f;
  int r;

  if ((r = zn_nbd_trim_check (zn_dev_geometry (s->d->dev), offset, count,
                              why, sizeof why)) != 0) {
    reply_error (s, cookie, r, "trim: %s", why);
    return;
  }
  if (fault_skips (s, ZN_FOP_RESET, offset, count, 0, &f))
    r = 0;
  else if (offload (s, &f))
    return;
  else
    r = zn_zone_mgmt_why (s->d->dev, ZN_OP_RESET, offset >> ZN_SECTOR_SHIFT,
                          (uint64_t) count >> ZN_SECTOR_SHIFT, &reason);
  r = zn_fault_outcome (s->d->dev, &f, ZN_FOP_RESET,
                        offset >> ZN_SECTOR_SHIFT, r, &reason);
  reply_result (s, cookie, CMD_TRIM, offset, count, r, reason);
}

static void
cmd_flush (struct nbd_session *s, uint64_t cookie)
{
  struct zn_fault f = { .action = ZN_FAULT_PASS };
  enum zn_reason why = ZN_REASON_NONE;
  int r;

  if (s->control) {
    reply_ok (s, cookie);
    return;
  }
  if (fault_skips (s, ZN_FOP_FLUSH, 0, 0, 0, &f))
    r = 0;
  else if (offload (s, &f))
    return;
  else
    r = zn_flush (s->d->dev);
  r = zn_fault_outcome (s->d->dev, &f, ZN_FOP_FLUSH, 0, r, &why);
  flush_reply (s, cookie, r, why);
}

struct extents {
  struct nbd_session *s;
  uint32_t count;
  uint64_t next;                /* byte offset the next extent starts at */
  uint64_t end;                 /* clip here */
  bool one;
  uint32_t last_flags;
};

/* Adds [x->start, x->end) sectors as one extent (merged with the last one
 * if the state is the same, as clients expect no redundant splits).
 */
static void
extent_add (struct extents *e, const struct zn_extent *x)
{
  struct outbuf *out = &e->s->out;
  uint64_t from = x->start << ZN_SECTOR_SHIFT, to = x->end << ZN_SECTOR_SHIFT;

  if (to > e->end)
    to = e->end;
  if (from < e->next)
    from = e->next;
  if (to <= from || (e->one && e->count == 1))
    return;
  if (e->count > 0 && e->last_flags == x->flags
      && to - from + be32 (out->data + out->len - NBD_EXTENT_SIZE) <= UINT32_MAX) {
    unsigned char *last = out->data + out->len - NBD_EXTENT_SIZE;

    put_be32 (last, be32 (last) + (uint32_t) (to - from));
  }
  else {
    out_be32 (e->s, (uint32_t) (to - from));   /* struct nbd_extent */
    out_be32 (e->s, x->flags);
    e->count++;
  }
  e->last_flags = x->flags;
  e->next = to;
}

/* One BLOCK_STATUS chunk for context ctx over [offset, offset + count),
 * from the zones over it.
 */
static void
block_status_chunk (struct nbd_session *s, uint64_t cookie, int ctx, bool last,
                    uint64_t offset, uint32_t count, bool one,
                    const struct zn_zone *zones, unsigned nr)
{
  struct extents e = {
    .s = s, .next = offset, .end = offset + count, .one = one,
  };
  enum zn_extent_view view = ctx == CTX_ALLOCATION ? ZN_VIEW_ALLOCATION
                                                   : ZN_VIEW_ZONES;
  size_t mark = s->out.len;

  chunk_header (s, last ? REPLY_FLAG_DONE : 0, REPLY_BLOCK_STATUS, cookie, 0);
  out_be32 (s, (uint32_t) ctx);
  for (unsigned i = 0; i < nr; i++) {
    struct zn_extent x[3];
    unsigned nx = zn_zone_extents (&zones[i], view, x);

    for (unsigned j = 0; j < nx; j++)
      extent_add (&e, &x[j]);
    /* zonednull:zones keeps zones apart even when their states are
     * equal.
     */
    if (view == ZN_VIEW_ZONES)
      e.last_flags = UINT32_MAX;
  }
  /* Fill in the chunk length now that the extents are known. */
  put_be32 (s->out.data + mark + NBD_CHUNK_LEN_AT,
            (uint32_t) (s->out.len - mark - NBD_CHUNK_SIZE));
}

/* A chunk per context negotiated, from the zones over the range. */
static void
block_status_reply (struct nbd_session *s, uint64_t cookie, uint64_t offset,
                    uint32_t count, uint16_t flags, const struct zn_zone *zones,
                    unsigned nr)
{
  int last = s->meta[CTX_ZONES] ? CTX_ZONES : CTX_ALLOCATION;

  for (int ctx = CTX_ALLOCATION; ctx <= CTX_ZONES; ctx++)
    if (s->meta[ctx])
      block_status_chunk (s, cookie, ctx, ctx == last, offset, count,
                          flags & CMD_FLAG_REQ_ONE, zones, nr);
}

/* Both contexts describe one report of the zones, taken on the loop
 * unless a storage thread holds one of them: then on the workers, as
 * the loop must not wait for a disk.
 */
static void
cmd_block_status (struct nbd_session *s, uint64_t cookie, uint64_t offset,
                  uint32_t count, uint16_t flags)
{
  const struct zn_fault pass = { .action = ZN_FAULT_PASS };
  struct zn_dev *dev;
  struct zn_zone *zones;
  unsigned nr;
  int n;

  if (!s->structured || !s->meta_any || s->control) {
    reply_error (s, cookie, EINVAL, "block status: no metadata context was "
                 "negotiated for this export");
    return;
  }
  dev = s->d->dev;
  nr = status_zone_count (dev, s->run.rq);
  zones = malloc (nr * sizeof *zones);
  if (zones == NULL)
    nbd_session_out_of_memory (s);
  n = s->d->offload ? status_zones (dev, offset, zones, nr, true) : -EAGAIN;
  if (n == -EAGAIN) {
    if (offload (s, &pass)) {
      free (zones);
      return;
    }
    n = status_zones (dev, offset, zones, nr, false);
  }
  block_status_reply (s, cookie, offset, count, flags, zones, (unsigned) n);
  free (zones);
}

/* Checks a request's range; 0, or the errno to reply with (and a message). */
static int
check_request (struct nbd_session *s, uint16_t type, uint16_t flags,
               uint64_t offset, uint32_t count, char *why, size_t whylen)
{
  uint64_t size = nbd_export_size (s->d, s->control);
  uint32_t lbs = zn_dev_geometry (s->d->dev)->block_size;

  if (flags & ~CMD_FLAGS_KNOWN) {
    snprintf (why, whylen, "unknown command flags 0x%" PRIx16, flags);
    return EINVAL;
  }
  if (s->sv->readonly && (type == CMD_WRITE || type == CMD_TRIM)) {
    snprintf (why, whylen, "the server is read-only (-r)");
    return EPERM;
  }
  if ((type == CMD_TRIM || type == CMD_BLOCK_STATUS) && s->control) {
    snprintf (why, whylen, "the control export takes reads and writes only");
    return EINVAL;
  }
  /* nbdkit refuses a zero-length request of any kind but flush before it
   * reaches a plugin, as ENOSPC for a write and EINVAL otherwise; so does
   * this server.  A zero-length read has no valid structured reply: an
   * OFFSET_DATA chunk is at least 9 bytes.
   */
  if (count == 0 && type != CMD_FLUSH) {
    snprintf (why, whylen, "offset %" PRIu64 ": zero-length request", offset);
    return type == CMD_WRITE ? ENOSPC : EINVAL;
  }
  /* The protocol's ENOSPC for a write past the end, as nbdkit has it. */
  if (offset > size || count > size - offset) {
    snprintf (why, whylen, "offset %" PRIu64 " length %" PRIu32 " is beyond "
              "the end of the export (%" PRIu64 " bytes)", offset, count, size);
    return type == CMD_WRITE ? ENOSPC : EINVAL;
  }
  if ((type == CMD_READ || type == CMD_WRITE || type == CMD_BLOCK_STATUS)
      && !s->control && (offset % lbs || count % lbs)) {
    snprintf (why, whylen, "offset %" PRIu64 " length %" PRIu32 " is not a "
              "multiple of the block size %" PRIu32, offset, count, lbs);
    return EINVAL;
  }
  return 0;
}

static const char *
command_name (uint16_t type)
{
  static const char *const names[] = {
    "read", "write", "disconnect", "flush", "trim", "cache", "write zeroes",
    "block status",
  };
  return type < sizeof names / sizeof names[0] ? names[type] : "command";
}

/* Keeps the reply just queued, in the output, until
 * nbd_session_complete_one releases it.
 */
static void
hold_reply (struct nbd_session *s)
{
  if (!park_hold_reply_add (&s->held, s->out.len, NULL, 0))
    nbd_session_out_of_memory (s);
}

/* Takes the reply just queued, from mark on, out of the output until
 * nbd_session_release releases it.
 */
static void
delay_reply (struct nbd_session *s, uint64_t id, size_t mark)
{
  if (!park_hold_reply_add (&s->delayed, 0, s->out.data + mark,
                            s->out.len - mark))
    nbd_session_out_of_memory (s);
  s->delayed.tail->id = id;
  s->delayed.tail->arrival = s->arrival;
  /* A control command's write goes in the write log with its reply. */
  s->delayed.tail->hold = s->conn.hold;
  s->conn.hold = NULL;
  s->out.len = mark;
}

/* --stats: the reply of the request being handled is all queued. */
static void
replied (struct nbd_session *s)
{
  if (s->sv->stats)
    s->sv->stats->reply (s->owner, s->arrival, s->out.len);
}

/* Keeps an admitted request aside, with a write's data, until
 * nbd_session_resume; handle_request has checked it.
 */
static void
park (struct nbd_session *s, uint64_t id, const struct nbd_request *rq,
      const unsigned char *payload)
{
  unsigned char *data = NULL;

  if (rq->type == CMD_WRITE) {
    data = malloc (rq->count ? rq->count : 1);
    if (data == NULL)
      nbd_session_out_of_memory (s);
    memcpy (data, payload, rq->count);
  }
  if (!park_request (&s->parked, id, rq, sizeof *rq, data, rq->count))
    nbd_session_out_of_memory (s);
  s->parked.tail->arrival = s->arrival;
}

/* What the program says of a request that ran; without a program, the
 * reply goes at once.
 */
static enum reply_hold
finish (struct nbd_session *s, uint64_t id, bool tagged,
        enum finish_outcome outcome, uint64_t delay_ns)
{
  return s->sv->finish ? s->sv->finish (s->owner, id, tagged, outcome,
                                        delay_ns)
                       : REPLY_NOW;
}

/* What comes of a request whose reply, if any, is queued from mark on:
 * the program is told, and the reply goes, or is kept back as the
 * control channel (conn.hold_ns) or the fault settings say.
 */
static void
conclude (struct nbd_session *s, uint64_t id, const struct nbd_request *rq,
          const unsigned char *payload, bool tagged, size_t mark)
{
  enum finish_outcome outcome = FINISH_ANSWERED;
  uint64_t delay_ns;

  s->forced_error = 0;
  delay_ns = s->control ? s->conn.hold_ns : s->fault.delay_ns;
  if (s->control ? delay_ns == ZN_CONTROL_HOLD_FOREVER
                 : s->fault.action == ZN_FAULT_TIMEOUT)
    outcome = FINISH_TIMED_OUT;
  else if (s->fault.action == ZN_FAULT_REQUEUE) {
    park (s, id, rq, payload);
    outcome = FINISH_REQUEUED;
  }
  if (outcome != FINISH_ANSWERED) {
    s->out.len = mark;
    finish (s, id, tagged, outcome, 0);
    zn_control_complete (&s->conn);
    return;
  }
  switch (finish (s, id, tagged, outcome, delay_ns)) {
  case REPLY_DELAYED:
    delay_reply (s, id, mark);
    return;
  case REPLY_HELD:
    replied (s);
    hold_reply (s);
    return;
  default:
    zn_control_complete (&s->conn);
    replied (s);
    if (s->held.count == 0)
      s->ready = s->out.len;
    return;
  }
}

/* Runs rq, admitted as id if tagged (payload: a write's data), and
 * queues its reply (conclude), unless the program's workers took it.
 */
static void
run_request (struct nbd_session *s, uint64_t id, const struct nbd_request *rq,
             const unsigned char *payload, bool tagged)
{
  size_t mark = s->out.len;

  s->fault = (struct zn_fault) { .action = ZN_FAULT_PASS };
  s->conn.hold_ns = 0;
  s->run.id = id;
  s->run.rq = rq;
  s->run.payload = payload;
  s->run.tagged = tagged;
  s->run.offloaded = false;
  switch (rq->type) {
  case CMD_READ:
    cmd_read (s, rq->cookie, rq->offset, rq->count);
    break;
  case CMD_WRITE:
    /* With cache_size, FUA writes around the volatile cache. */
    cmd_write (s, rq->cookie, rq->offset, rq->count,
               rq->flags & CMD_FLAG_FUA, payload);
    break;
  case CMD_FLUSH:
    cmd_flush (s, rq->cookie);
    break;
  case CMD_TRIM:
    cmd_trim (s, rq->cookie, rq->offset, rq->count);
    break;
  default:
    cmd_block_status (s, rq->cookie, rq->offset, rq->count, rq->flags);
    break;
  }
  if (s->run.offloaded) {
    s->forced_error = 0;
    return;
  }
  conclude (s, id, rq, payload, tagged, mark);
}

/* A request run by the program's workers is answered, on the loop. */
static void
job_done (void *session, struct served_job *job)
{
  struct nbd_job *j = (struct nbd_job *) job;
  struct nbd_session *s = session;
  const struct nbd_request *rq = &j->rq;
  size_t mark;
  int r;

  if (s) {
    mark = s->out.len;
    s->offloaded--;
    s->offloaded_bytes -= job_bytes (s, rq);
    s->fault = j->fault;
    s->conn.hold_ns = 0;
    s->arrival = j->arrival;
    if (j->control) {
      s->conn = j->conn;
      j->conn.hold = NULL;
      control_reply (s, rq, j->r, j->data, j->control_why);
    }
    else switch (rq->type) {
    case CMD_READ:
      r = zn_fault_outcome (s->d->dev, &j->fault, ZN_FOP_READ,
                            rq->offset >> ZN_SECTOR_SHIFT, j->r, &j->why);
      read_reply (s, rq->cookie, rq->offset, rq->count, r, j->why, j->data);
      break;
    case CMD_WRITE:
      r = zn_fault_outcome (s->d->dev, &j->fault, ZN_FOP_WRITE,
                            rq->offset >> ZN_SECTOR_SHIFT, j->r, &j->why);
      reply_result (s, rq->cookie, CMD_WRITE, rq->offset, rq->count, r,
                    j->why);
      break;
    case CMD_FLUSH:
      r = zn_fault_outcome (s->d->dev, &j->fault, ZN_FOP_FLUSH, 0, j->r,
                            &j->why);
      flush_reply (s, rq->cookie, r, j->why);
      break;
    case CMD_BLOCK_STATUS:
      block_status_reply (s, rq->cookie, rq->offset, rq->count, rq->flags,
                          (const struct zn_zone *) j->data, (unsigned) j->r);
      break;
    default:
      r = zn_fault_outcome (s->d->dev, &j->fault, ZN_FOP_RESET,
                            rq->offset >> ZN_SECTOR_SHIFT, j->r, &j->why);
      reply_result (s, rq->cookie, CMD_TRIM, rq->offset, rq->count, r,
                    j->why);
      break;
    }
    conclude (s, j->id, rq, NULL, j->tagged, mark);
  }
  /* A control APPEND's write-log entry, with no one to answer. */
  zn_control_complete (&j->conn);
  free (j->data);
  free (j);
}

/* At most how many bytes a request makes the session hold: its reply,
 * that is a read's data, a block status's extents (at most three per
 * zone and context), or a simple reply or an error with its message
 * (which can be longer than a small read); and a write's data, copied
 * while the write is parked for its write pointer or on the storage
 * threads.
 */
static size_t
reply_bound (const struct nbd_session *s, uint16_t type, uint32_t count)
{
  const size_t small = NBD_CHUNK_SIZE + 6 + sizeof ((struct message *) 0)->text;

  if (type == CMD_WRITE)
    return small + (size_t) count;
  if (type == CMD_READ && count <= MAX_REQUEST
      && count > small - NBD_CHUNK_SIZE - 8)
    return NBD_CHUNK_SIZE + 8 + (size_t) count;
  if (type == CMD_BLOCK_STATUS && s->d && !s->control) {
    uint64_t zone_bytes = zn_dev_geometry (s->d->dev)->zone_sectors
                          << ZN_SECTOR_SHIFT;

    return small + 2 * (24 + (count / zone_bytes + 2) * 3 * 8);
  }
  return small;
}

/* One request rq, the avail bytes at payload following its header (a
 * write's data).
 */
static long
handle_request (struct nbd_session *s, const struct nbd_request *rq,
                const unsigned char *payload, size_t avail)
{
  uint16_t flags = rq->flags, type = rq->type;
  uint64_t cookie = rq->cookie, offset = rq->offset;
  uint32_t count = rq->count;
  char why[200];
  long used = NBD_REQUEST_SIZE + (type == CMD_WRITE ? (long) count : 0);
  uint64_t id;
  bool tagged;
  int err;

  if (rq->magic != REQUEST_MAGIC)
    return -1;
  /* A control command's result is the next read's: the control export's
   * requests run one after another, on the loop or on the workers.
   */
  if (s->control && s->offloaded)
    return 0;
  if (type == CMD_WRITE) {
    /* The payload cannot be skipped safely if it is absurdly large. */
    if (count > MAX_REQUEST) {
      reply_error (s, cookie, EINVAL, "write of %" PRIu32 " bytes exceeds "
                   "the maximum of %d", count, MAX_REQUEST);
      replied (s);
      return -1;
    }
    if (avail < (size_t) count)
      return 0;
  }
  /* The requests before it are carried out as usual (held replies wait
   * for their completions, parked writes for their write pointers); the
   * server closes once they are answered.
   */
  if (type == CMD_DISC) {
    s->disc = true;
    return -1;
  }
  if (s->sv->room && !s->sv->room (s->owner, nbd_session_holds (s),
                                   reply_bound (s, type, count)))
    return 0;

  if ((type == CMD_READ) && count > MAX_REQUEST) {
    reply_error (s, cookie, EINVAL, "read of %" PRIu32 " bytes exceeds the "
                 "maximum of %d", count, MAX_REQUEST);
    replied (s);
    return NBD_REQUEST_SIZE;
  }
  if (type != CMD_READ && type != CMD_WRITE && type != CMD_FLUSH
      && type != CMD_TRIM && type != CMD_BLOCK_STATUS) {
    reply_error (s, cookie, EINVAL, "%s (type %" PRIu16 ") is not supported",
                 command_name (type), type);
    replied (s);
    return NBD_REQUEST_SIZE;
  }
  err = check_request (s, type, flags, offset, count, why, sizeof why);
  if (err) {
    reply_error (s, cookie, err, "%s: %s", command_name (type), why);
    replied (s);
    return NBD_REQUEST_SIZE + (type == CMD_WRITE ? (long) count : 0);
  }

  /* A valid read, write, flush or trim of a device takes a tag, as the
   * plugin's data callbacks do; a request refused above takes none.
   */
  tagged = !s->control && type != CMD_BLOCK_STATUS;
  id = s->next_id;
  if (tagged && s->sv->admit) {
    struct data_request drq = {
      .id = id, .dev = s->d, .write = type == CMD_WRITE,
      .offset = offset,
      .count = count, .bytes = type == CMD_READ || type == CMD_WRITE ? count : 0,
    };
    struct admission a = s->sv->admit (s->owner, s, &drq);

    if (a.outcome == ADMIT_LATER)
      return 0;
    if (a.outcome == ADMIT_PARK) {
      s->next_id++;
      park (s, id, rq, payload);
      return used;
    }
    s->forced_error = a.err;
  }
  s->next_id++;
  run_request (s, id, rq, payload, tagged);
  return used;
}

long
nbd_transmission_step (struct nbd_session *s, const unsigned char *data,
                   size_t len)
{
  struct nbd_request rq;

  if (len < NBD_REQUEST_SIZE)
    return 0;
  nbd_request_decode (data, &rq);
  if (s->sv->stats)
    s->arrival = s->sv->stats->arrival (s->owner);
  return handle_request (s, &rq, data + NBD_REQUEST_SIZE,
                         len - NBD_REQUEST_SIZE);
}


void
nbd_session_release (struct nbd_session *s, uint64_t id)
{
  struct held *h = park_hold_reply_take (&s->delayed, id);

  if (h == NULL)
    return;
  zn_wlog_complete (h->hold);
  memcpy (out_reserve (s, h->len), h->data, h->len);
  if (s->sv->stats)
    s->sv->stats->reply (s->owner, h->arrival, s->out.len);
  if (s->held.count == 0)
    s->ready = s->out.len;
  free (h);
}

bool
nbd_session_complete_one (struct nbd_session *s)
{
  struct held *h = park_hold_reply_next (&s->held);

  if (h == NULL)
    return false;
  s->ready = s->held.count ? h->end : s->out.len;
  free (h);
  return true;
}

void
nbd_session_resume (struct nbd_session *s, uint64_t id, int err)
{
  struct parked *p = park_take (&s->parked, id);

  if (p == NULL)
    return;
  s->forced_error = err;
  s->arrival = p->arrival;
  run_request (s, id, (const struct nbd_request *) p->req, p->data, true);
  park_free (p);
}
