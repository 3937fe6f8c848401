/* SPDX-License-Identifier: BSD-3-Clause */
/* zonednull-ublk's in-process hardware queues: each serves its ublk
 * queue (ring.c) from the device model.
 *
 * Nothing here is shared between queues but the model (thread-safe) and
 * the queue model's counters.  Requests are applied to the model as soon
 * as they arrive, as null_blk does at submission; only their completion
 * (the commit) can be held back, by an io_uring timeout, for irqmode=2,
 * mbps and the fault settings' delays (lib/model/fault.h).  A request
 * they time out is never committed until the device stops: then it fails
 * with EIO, as ublk_drv fails a dead daemon's, since STOP_DEV waits for
 * every request.  One they requeue is asked about again 3 ms later (blk-mq's
 * resource delay): ublk has no requeue, and a retry is all a host sees
 * of one.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <linux/blkzoned.h>

#include "model/fault.h"
#include "powerfail/wlog.h"
#include "util/clock.h"
#include "util/fifo.h"
#include "queue-local.h"

#define REQUEUE_DELAY_NS 3000000

/* The kinds of CQE a queue has besides the ring's. */
enum {
  UD_DUE = ZU_UD_OWN,           /* a timed completion came due */
  UD_THROTTLE,                  /* the mbps budget may allow more */
  UD_REQUEUE,                   /* a requeued request is due again */
  UD_RELEASE,                   /* the device stops: end held requests */
};

struct slot {
  struct zn_request rq;
  bool tagged;                  /* holds a tag of the queue model */
  bool held;                    /* timed out: never committed, until the
                                   device stops */
  int result;
  uint64_t lba;                 /* where a zone append landed */
  struct __kernel_timespec due; /* read by the kernel at submission */
  struct zn_wlog_hold *hold;    /* its writes, for the log at the commit */
  struct slot *next;            /* in the throttled FIFO */
};

struct zu_queue {
  struct zu_ring r;             /* first: ring.c's callbacks get &q->r */
  struct slot *slots;
  unsigned char *buf;           /* one request's data at a time */
  struct zn_zone *zones;        /* a zone report's worth */
  unsigned max_zones;
  /* memory_backed=0 without a write log: nothing reads a write's data,
   * so it is not copied in (a pread per write, about 40 us of a QD1
   * write under TCG, the whole gap to a server that does nothing).
   */
  bool skip_write_data;
  bool released;                /* release_fd came: hold nothing more */
  struct slot *throttled, *throttled_tail;
  bool throttle_armed;
  struct __kernel_timespec throttle_ts;
};

static struct __kernel_timespec
kts_of_ns (uint64_t ns)
{
  return (struct __kernel_timespec) {
    .tv_sec = (long long) (ns / 1000000000u),
    .tv_nsec = (long long) (ns % 1000000000u),
  };
}

/* ---- serving one request ------------------------------------------------ */

static int
report_zones (struct zu_queue *q, unsigned tag, uint64_t sector,
              unsigned nr_zones)
{
  unsigned want = nr_zones < q->max_zones ? nr_zones : q->max_zones;
  unsigned got = zn_report_zones (q->r.d->dev, sector, q->zones, want);

  zu_report_fill (q->r.d, q->buf, q->zones, got);
  return zu_ring_put_report (&q->r, tag, q->buf);
}

static int
zone_mgmt (struct zu_queue *q, enum zn_zone_op op, uint64_t sector)
{
  return zn_zone_mgmt (q->r.d->dev, op, sector, q->r.d->geo->zone_sectors);
}

/* The request's ublk result: bytes moved, 0, or -errno. */
static int
serve (struct zu_queue *q, unsigned tag, const struct zu_io_desc *iod,
       uint64_t *lba)
{
  struct zn_dev *dev = q->r.d->dev;
  bool fua = (iod->op_flags & ZU_IO_F_FUA) != 0;
  uint64_t sector = iod->start_sector, n = iod->nr_sectors;
  size_t bytes = (size_t) zu_data_bytes (iod);
  int r;

  if (bytes > q->r.d->buf_bytes)
    return -EIO;                /* larger than the max_sectors we set */
  switch (iod->op_flags & 0xff) {
  case ZU_OP_READ:
    r = zn_read (dev, q->buf, sector, n);
    if (r == 0)
      r = zu_ring_copy_out (&q->r, tag, q->buf, bytes);
    return r ? zu_block_errno (r) : (int) bytes;
  case ZU_OP_WRITE:
    r = q->skip_write_data ? 0
      : zu_ring_copy_in (&q->r, tag, q->buf, bytes);
    if (r == 0)
      r = fua ? zn_write_fua (dev, q->buf, sector, n)
        : zn_write (dev, q->buf, sector, n);
    return r ? zu_block_errno (r) : (int) bytes;
  case ZU_OP_ZONE_APPEND:
    r = q->skip_write_data ? 0
      : zu_ring_copy_in (&q->r, tag, q->buf, bytes);
    if (r == 0)
      r = zn_zone_append (dev, q->buf, sector, n, fua, lba);
    return r ? zu_block_errno (r) : (int) bytes;
  case ZU_OP_FLUSH:
    return zu_block_errno (zn_flush (dev));
  case ZU_OP_ZONE_OPEN:
    return zu_block_errno (zone_mgmt (q, ZN_OP_OPEN, sector));
  case ZU_OP_ZONE_CLOSE:
    return zu_block_errno (zone_mgmt (q, ZN_OP_CLOSE, sector));
  case ZU_OP_ZONE_FINISH:
    return zu_block_errno (zone_mgmt (q, ZN_OP_FINISH, sector));
  case ZU_OP_ZONE_RESET:
    return zu_block_errno (zone_mgmt (q, ZN_OP_RESET, sector));
  case ZU_OP_ZONE_RESET_ALL:
    return zu_block_errno (zn_zone_mgmt (dev, ZN_OP_RESET, 0,
                                         q->r.d->geo->capacity));
  case ZU_OP_REPORT_ZONES:
    return report_zones (q, tag, sector, iod->nr_sectors);
  default:
    /* Discard and write-zeroes are not advertised (null_blk's zoned
     * mode has neither); anything else is unknown to null_blk too.
     */
    return -EOPNOTSUPP;
  }
}

/* The fault settings' name for the request's operation; ZN_FOP_NR for a
 * zone report, which they do not touch.
 */
static enum zn_fault_op
fault_op (const struct zu_io_desc *iod)
{
  switch (iod->op_flags & 0xff) {
  case ZU_OP_READ: return ZN_FOP_READ;
  case ZU_OP_WRITE: return ZN_FOP_WRITE;
  case ZU_OP_ZONE_APPEND: return ZN_FOP_APPEND;
  case ZU_OP_FLUSH: return ZN_FOP_FLUSH;
  case ZU_OP_ZONE_OPEN: return ZN_FOP_OPEN;
  case ZU_OP_ZONE_CLOSE: return ZN_FOP_CLOSE;
  case ZU_OP_ZONE_FINISH: return ZN_FOP_FINISH;
  case ZU_OP_ZONE_RESET:
  case ZU_OP_ZONE_RESET_ALL: return ZN_FOP_RESET;
  default: return ZN_FOP_NR;
  }
}

/* ---- completion --------------------------------------------------------- */

static void
commit (struct zu_queue *q, unsigned tag)
{
  struct slot *s = &q->slots[tag];

  /* The model's tag is free before the kernel can reuse the tag. */
  if (s->tagged)
    zn_queue_complete (q->r.d->qs, &s->rq);
  s->tagged = false;
  zn_wlog_complete (s->hold);
  s->hold = NULL;
  zu_ring_commit (&q->r, tag, s->result, s->lba);
}

static void
start_request (struct zu_queue *q, unsigned tag)
{
  struct zu_device *d = q->r.d;
  struct slot *s = &q->slots[tag];
  struct zu_io_desc iod = q->r.descs[tag];
  uint64_t bytes = zu_data_bytes (&iod);
  enum zn_fault_op op = fault_op (&iod);
  struct zn_fault f = { .action = ZN_FAULT_PASS };
  /* When the request came in, for the fault settings' delays alone. */
  uint64_t now = zn_fault_armed (d->dev) ? zn_now_ns () : 0, due = 0;
  bool later;

  /* The kernel never has more than depth requests of this queue out,
   * and its tags are the model's pool, so a tag is always free; the
   * queue model gives the tag time and the counters.
   */
  zu_ring_count (&q->r, &iod);
  s->tagged = zn_queue_try_begin (d->qs, q->r.id, true, &s->rq);
  if (bytes)
    zn_queue_charge (d->qs, bytes);
  if (op != ZN_FOP_NR)
    zn_fault_decide (d->dev, op, iod.start_sector, iod.nr_sectors, bytes,
                     &f);
  if (f.action == ZN_FAULT_REQUEUE) {
    if (s->tagged)
      zn_queue_complete (d->qs, &s->rq);
    s->tagged = false;
    s->due = kts_of_ns ((now ? now : zn_now_ns ()) + REQUEUE_DELAY_NS);
    zu_ring_timeout (&q->r, &s->due, IORING_TIMEOUT_ABS,
                     ZU_UD (UD_REQUEUE, tag));
    return;
  }
  if (f.action == ZN_FAULT_TIMEOUT && !q->released) {
    s->held = true;             /* the tag stays taken, as null_blk's */
    return;
  }
  if (f.action == ZN_FAULT_TIMEOUT) {
    s->result = -EIO;
    commit (q, tag);
    return;
  }
  s->lba = 0;
  /* Committed later: its writes go in the write log at the commit. */
  later = (d->timed && s->tagged) || f.delay_ns;
  if (later)
    zn_wlog_defer ();
  s->result = f.action == ZN_FAULT_FAIL ? 0 : serve (q, tag, &iod, &s->lba);
  if (op != ZN_FOP_NR && s->result >= 0) {
    int e = zn_fault_outcome (d->dev, &f, op, iod.start_sector, 0, NULL);

    if (e < 0)
      s->result = zu_block_errno (e);
  }
  if (later)
    s->hold = zn_wlog_deferred ();
  if (d->timed && s->tagged)
    due = zn_ns_of (zn_request_due (d->qs, &s->rq));
  if (f.delay_ns && !now)
    now = zn_now_ns ();
  if (f.delay_ns && now + f.delay_ns > due)
    due = now + f.delay_ns;
  if (due) {
    s->due = kts_of_ns (due);
    zu_ring_timeout (&q->r, &s->due, IORING_TIMEOUT_ABS,
                     ZU_UD (UD_DUE, tag));
    return;
  }
  commit (q, tag);
}

/* mbps: requests over the budget wait, in order, for the time the queue
 * model names; later requests queue behind them rather than overtake.
 */
static void
throttle_push (struct zu_queue *q, unsigned tag)
{
  struct slot *s = &q->slots[tag];

  ZN_FIFO_PUSH (q->throttled, q->throttled_tail, s, next);
}

static void
throttle_arm (struct zu_queue *q, uint64_t until)
{
  if (q->throttle_armed)
    return;
  q->throttle_ts = kts_of_ns (until);
  q->throttle_armed = true;
  zu_ring_timeout (&q->r, &q->throttle_ts, IORING_TIMEOUT_ABS,
                   ZU_UD (UD_THROTTLE, 0));
}

static void
throttle_run (struct zu_queue *q)
{
  while (q->throttled) {
    struct slot *s = q->throttled;
    unsigned tag = (unsigned) (s - q->slots);
    uint64_t until;

    if (zu_data_bytes (&q->r.descs[tag]) > 0
        && (until = zn_queue_throttled_until (q->r.d->qs)) != 0) {
      throttle_arm (q, until);
      return;
    }
    q->throttled = s->next;
    if (q->throttled == NULL)
      q->throttled_tail = NULL;
    start_request (q, tag);
  }
}

/* ---- the ring's callbacks ------------------------------------------------ */

static struct zu_queue *
queue_of (struct zu_ring *r)
{
  return (struct zu_queue *) (void *) r;    /* r is the first member */
}

static void
new_request (struct zu_ring *r, unsigned tag)
{
  struct zu_queue *q = queue_of (r);
  uint64_t until;

  if (q->throttled == NULL
      && (zu_data_bytes (&r->descs[tag]) == 0
          || (until = zn_queue_throttled_until (r->d->qs)) == 0)) {
    start_request (q, tag);
    return;
  }
  throttle_push (q, tag);
  throttle_run (q);
}

static void
handle_cqe (struct zu_ring *r, const struct io_uring_cqe *cqe)
{
  struct zu_queue *q = queue_of (r);

  switch (ZU_UD_KIND (cqe->user_data)) {
  case UD_DUE:
    commit (q, ZU_UD_TAG (cqe->user_data));
    break;
  case UD_THROTTLE:
    q->throttle_armed = false;
    throttle_run (q);
    break;
  case UD_REQUEUE:
    start_request (q, ZU_UD_TAG (cqe->user_data));
    break;
  case UD_RELEASE:
    q->released = true;
    for (unsigned tag = 0; tag < r->d->depth; tag++)
      if (q->slots[tag].held) {
        q->slots[tag].held = false;
        q->slots[tag].result = -EIO;
        commit (q, tag);
      }
    break;
  }
}

static void
arm (struct zu_ring *r)
{
  zu_ring_poll (r, r->d->release_fd, POLLIN, ZU_UD (UD_RELEASE, 0));
}

static const struct zu_ring_ops queue_ops = {
  .arm = arm,
  .request = new_request,
  .cqe = handle_cqe,
};

/* ---- setup and teardown --------------------------------------------------- */

static void
queue_free (struct zu_queue *q)
{
  zu_ring_close (&q->r);
  /* Requests never committed: the device stops next, and its log takes
   * their writes before the stop's flush.
   */
  for (unsigned tag = 0; q->slots && tag < q->r.d->depth; tag++)
    zn_wlog_complete (q->slots[tag].hold);
  free (q->slots);
  free (q->buf);
  free (q->zones);
  free (q);
}

struct zu_ring *
zu_queue_ring (struct zu_queue *q)
{
  return &q->r;
}

void
zu_queue_join (struct zu_queue *q)
{
  zu_ring_join (&q->r);
  queue_free (q);
}

struct zu_queue *
zu_queue_start (struct zu_device *d, unsigned id, char *err, size_t errlen)
{
  struct zu_queue *q = calloc (1, sizeof *q);

  if (q == NULL)
    goto nomem;
  q->r.d = d;
  q->r.id = id;
  q->max_zones = (unsigned) (d->buf_bytes / sizeof (struct blk_zone));
  q->skip_write_data = !zn_dev_uses_write_data (d->dev);
  q->slots = calloc (d->depth, sizeof *q->slots);
  q->buf = malloc (d->buf_bytes);
  q->zones = calloc (q->max_zones ? q->max_zones : 1, sizeof *q->zones);
  if (q->slots == NULL || q->buf == NULL || q->zones == NULL)
    goto nomem;
  /* A command and a completion timer per tag, the throttle timer, the
   * stop poll and the release poll.
   */
  if (zu_ring_open (&q->r, 2 * d->depth + 3, err, errlen) < 0
      || zu_ring_start (&q->r, &queue_ops, err, errlen) < 0)
    goto fail;
  return q;

nomem:
  snprintf (err, errlen, "out of memory for queue %u", id);
fail:
  if (q)
    queue_free (q);
  return NULL;
}
