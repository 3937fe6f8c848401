/* zonednull-ublk's hardware queues.
 *
 * ublk hands each tag of a queue to the thread that fetched it, so every
 * queue has its own thread and ring, and nothing here is shared between
 * queues but the model (thread-safe) and the queue model's counters.
 * Requests are applied to the model as soon as they arrive, as null_blk
 * does at submission; only their completion (the commit) can be held
 * back, by an io_uring timeout, for irqmode=2 and mbps.  A queue thread
 * never sleeps except in io_uring_enter.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <linux/blkzoned.h>

#include <liburing.h>

#include "ublk-abi.h"
#include "io.h"

/* What a CQE is about: the kind in the top byte, the tag below. */
enum {
  UD_IO = 0,                    /* a fetch or commit-and-fetch came back */
  UD_DUE = 1,                   /* a timed completion came due */
  UD_THROTTLE = 2,              /* the mbps budget may allow more */
  UD_STOP = 3,                  /* stop_fd became readable */
};
#define UD(kind, tag) ((uint64_t) (kind) << 56 | (tag))
#define UD_KIND(ud) ((unsigned) ((ud) >> 56))
#define UD_TAG(ud) ((unsigned) ((ud) & 0xffff))

struct slot {
  struct zn_request rq;
  bool tagged;                  /* holds a tag of the queue model */
  int result;
  uint64_t lba;                 /* where a zone append landed */
  struct __kernel_timespec due; /* read by the kernel at submission */
  struct slot *next;            /* in the throttled FIFO */
};

struct zu_queue {
  struct zu_device *d;
  unsigned id;
  struct io_uring ring;
  bool ring_ready;
  struct zu_io_desc *descs;
  size_t descs_len;
  struct slot *slots;
  unsigned char *buf;           /* one request's data at a time */
  struct zn_zone *zones;        /* a zone report's worth */
  unsigned max_zones;
  struct slot *throttled, *throttled_tail;
  bool throttle_armed;
  struct __kernel_timespec throttle_ts;
  unsigned dead_tags;           /* aborted: the device is going away */
  bool done;
  pthread_t thread;
  bool thread_started;
};

int
zu_block_errno (int err)
{
  /* These survive ublk_drv's errno_to_blk_status and come back to the
   * application unchanged, as null_blk's statuses would.  The model's
   * pipelining reasons (ETIMEDOUT, EBUSY) and anything else are a plain
   * I/O error, as null_blk fails such a request.
   */
  switch (err) {
  case 0:
  case -EIO:
  case -EINVAL:
  case -ENOSPC:
  case -EOPNOTSUPP:
  case -ETOOMANYREFS:           /* BLK_STS_ZONE_OPEN_RESOURCE */
  case -EOVERFLOW:              /* BLK_STS_ZONE_ACTIVE_RESOURCE */
    return err;
  default:
    return -EIO;
  }
}

static struct io_uring_sqe *
get_sqe (struct zu_queue *q)
{
  struct io_uring_sqe *sqe;

  /* The ring has room for a command and a timer per tag plus the two
   * singletons, so a full SQ only means not yet submitted.
   */
  while ((sqe = io_uring_get_sqe (&q->ring)) == NULL)
    io_uring_submit (&q->ring);
  return sqe;
}

static void
submit_io_cmd (struct zu_queue *q, unsigned tag, uint32_t op, int result,
               uint64_t addr)
{
  struct io_uring_sqe *sqe = get_sqe (q);
  struct zu_io_cmd cmd = {
    .q_id = (uint16_t) q->id, .tag = (uint16_t) tag, .result = result,
    .addr = addr,
  };

  memset (sqe, 0, sizeof *sqe);
  sqe->opcode = IORING_OP_URING_CMD;
  sqe->fd = q->d->cdev_fd;
  sqe->cmd_op = op;
  memcpy (sqe->cmd, &cmd, sizeof cmd);
  io_uring_sqe_set_data64 (sqe, UD (UD_IO, tag));
}

static void
submit_timer (struct zu_queue *q, struct __kernel_timespec *ts, uint64_t ud)
{
  struct io_uring_sqe *sqe = get_sqe (q);

  io_uring_prep_timeout (sqe, ts, 0, IORING_TIMEOUT_ABS);
  io_uring_sqe_set_data64 (sqe, ud);
}

static struct __kernel_timespec
kts_of_ns (uint64_t ns)
{
  return (struct __kernel_timespec) {
    .tv_sec = (long long) (ns / 1000000000u),
    .tv_nsec = (long long) (ns % 1000000000u),
  };
}

/* ---- serving one request ------------------------------------------------ */

/* User copy moves the request's data with pread/pwrite on the character
 * device; a short count means the request is not what its descriptor
 * says, an I/O error either way.
 */
static int
copy_in (struct zu_queue *q, unsigned tag, size_t bytes)
{
  ssize_t n = pread (q->d->cdev_fd, q->buf, bytes,
                     (off_t) zu_user_copy_pos (q->id, tag));

  return n == (ssize_t) bytes ? 0 : -EIO;
}

static int
copy_out (struct zu_queue *q, unsigned tag, size_t bytes)
{
  ssize_t n = pwrite (q->d->cdev_fd, q->buf, bytes,
                      (off_t) zu_user_copy_pos (q->id, tag));

  return n == (ssize_t) bytes ? 0 : -EIO;
}

/* REPORT_ZONES: the kernel's buffer may be larger than the zones it asks
 * for, and a result short of its length would requeue the request.  So
 * the whole scratch buffer goes out, records first and zeros after (a
 * zero-length record ends a report); pwrite copies what fits and says how
 * much that was, which is the result.
 */
static int
report_zones (struct zu_queue *q, unsigned tag, uint64_t sector,
              unsigned nr_zones)
{
  unsigned want = nr_zones < q->max_zones ? nr_zones : q->max_zones;
  unsigned got = zn_report_zones (q->d->dev, sector, q->zones, want);
  struct blk_zone *bz = (struct blk_zone *) (void *) q->buf;
  ssize_t n;

  memset (q->buf, 0, q->d->buf_bytes);
  for (unsigned i = 0; i < got; i++)
    bz[i] = (struct blk_zone) {
      .start = q->zones[i].start, .len = q->zones[i].len,
      .wp = q->zones[i].wp, .type = q->zones[i].type,
      .cond = q->zones[i].cond, .capacity = q->zones[i].capacity,
    };
  n = pwrite (q->d->cdev_fd, q->buf, q->d->buf_bytes,
              (off_t) zu_user_copy_pos (q->id, tag));
  return n > 0 ? (int) n : -EIO;
}

static int
zone_mgmt (struct zu_queue *q, enum zn_zone_op op, uint64_t sector)
{
  return zn_zone_mgmt (q->d->dev, op, sector, q->d->geo->zone_sectors);
}

/* Bytes of data the request carries (what mbps charges). */
static uint64_t
data_bytes (const struct zu_io_desc *iod)
{
  switch (iod->op_flags & 0xff) {
  case ZU_OP_READ:
  case ZU_OP_WRITE:
  case ZU_OP_ZONE_APPEND:
    return (uint64_t) iod->nr_sectors << ZN_SECTOR_SHIFT;
  default:
    return 0;
  }
}

/* The request's ublk result: bytes moved, 0, or -errno. */
static int
serve (struct zu_queue *q, unsigned tag, const struct zu_io_desc *iod,
       uint64_t *lba)
{
  struct zn_dev *dev = q->d->dev;
  bool fua = (iod->op_flags & ZU_IO_F_FUA) != 0;
  uint64_t sector = iod->start_sector, n = iod->nr_sectors;
  size_t bytes = (size_t) data_bytes (iod);
  int r;

  if (bytes > q->d->buf_bytes)
    return -EIO;                /* larger than the max_sectors we set */
  switch (iod->op_flags & 0xff) {
  case ZU_OP_READ:
    r = zn_read (dev, q->buf, sector, n);
    if (r == 0)
      r = copy_out (q, tag, bytes);
    return r ? zu_block_errno (r) : (int) bytes;
  case ZU_OP_WRITE:
    r = copy_in (q, tag, bytes);
    if (r == 0)
      r = fua ? zn_write_fua (dev, q->buf, sector, n)
        : zn_write (dev, q->buf, sector, n);
    return r ? zu_block_errno (r) : (int) bytes;
  case ZU_OP_ZONE_APPEND:
    r = copy_in (q, tag, bytes);
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
                                         q->d->geo->capacity));
  case ZU_OP_REPORT_ZONES:
    return report_zones (q, tag, sector, iod->nr_sectors);
  default:
    /* Discard and write-zeroes are not advertised (null_blk's zoned
     * mode has neither); anything else is unknown to null_blk too.
     */
    return -EOPNOTSUPP;
  }
}

/* ---- completion --------------------------------------------------------- */

static void
commit (struct zu_queue *q, unsigned tag)
{
  struct slot *s = &q->slots[tag];

  /* The model's tag is free before the kernel can reuse the tag. */
  if (s->tagged)
    zn_queue_complete (q->d->qs, &s->rq);
  s->tagged = false;
  submit_io_cmd (q, tag, ZU_IO_COMMIT_AND_FETCH_REQ, s->result, s->lba);
}

static void
start_request (struct zu_queue *q, unsigned tag)
{
  struct slot *s = &q->slots[tag];
  struct zu_io_desc iod = q->descs[tag];
  uint64_t bytes = data_bytes (&iod);

  /* The kernel never has more than depth requests of this queue out,
   * and its tags are the model's pool, so a tag is always free; the
   * queue model gives the tag time and the counters.
   */
  if ((iod.op_flags & 0xff) < ZU_NR_OPS)
    atomic_fetch_add_explicit (&q->d->served[iod.op_flags & 0xff], 1,
                               memory_order_relaxed);
  s->tagged = zn_queue_try_begin (q->d->qs, q->id, true, &s->rq);
  if (bytes)
    zn_queue_charge (q->d->qs, bytes);
  s->lba = 0;
  s->result = serve (q, tag, &iod, &s->lba);
  if (q->d->timed && s->tagged) {
    struct timespec due = zn_request_due (q->d->qs, &s->rq);

    s->due = (struct __kernel_timespec) {
      .tv_sec = due.tv_sec, .tv_nsec = due.tv_nsec,
    };
    submit_timer (q, &s->due, UD (UD_DUE, tag));
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

  s->next = NULL;
  if (q->throttled_tail)
    q->throttled_tail->next = s;
  else
    q->throttled = s;
  q->throttled_tail = s;
}

static void
throttle_arm (struct zu_queue *q, uint64_t until)
{
  if (q->throttle_armed)
    return;
  q->throttle_ts = kts_of_ns (until);
  q->throttle_armed = true;
  submit_timer (q, &q->throttle_ts, UD (UD_THROTTLE, 0));
}

static void
throttle_run (struct zu_queue *q)
{
  while (q->throttled) {
    struct slot *s = q->throttled;
    unsigned tag = (unsigned) (s - q->slots);
    uint64_t until;

    if (data_bytes (&q->descs[tag]) > 0
        && (until = zn_queue_throttled_until (q->d->qs)) != 0) {
      throttle_arm (q, until);
      return;
    }
    q->throttled = s->next;
    if (q->throttled == NULL)
      q->throttled_tail = NULL;
    start_request (q, tag);
  }
}

static void
new_request (struct zu_queue *q, unsigned tag)
{
  uint64_t until;

  if (q->throttled == NULL
      && (data_bytes (&q->descs[tag]) == 0
          || (until = zn_queue_throttled_until (q->d->qs)) == 0)) {
    start_request (q, tag);
    return;
  }
  throttle_push (q, tag);
  throttle_run (q);
}

static void
handle_cqe (struct zu_queue *q, const struct io_uring_cqe *cqe)
{
  unsigned tag = UD_TAG (cqe->user_data);

  switch (UD_KIND (cqe->user_data)) {
  case UD_IO:
    if (cqe->res == ZU_IO_RES_OK)
      new_request (q, tag);
    else {
      if (cqe->res != ZU_IO_RES_ABORT)
        fprintf (stderr, "zonednull-ublk: queue %u tag %u: %s\n", q->id,
                 tag, strerror (-cqe->res));
      if (++q->dead_tags == q->d->depth)
        q->done = true;
    }
    break;
  case UD_DUE:
    commit (q, tag);
    break;
  case UD_THROTTLE:
    q->throttle_armed = false;
    throttle_run (q);
    break;
  case UD_STOP:
    q->done = true;
    break;
  }
}

/* ---- the thread ---------------------------------------------------------- */

void
zu_queue_report_ready (struct zu_device *d, int err)
{
  pthread_mutex_lock (&d->lock);
  d->nr_ready++;
  if (err && d->error == 0)
    d->error = err;
  pthread_cond_broadcast (&d->cond);
  pthread_mutex_unlock (&d->lock);
}

int
zu_queues_wait_ready (struct zu_device *d, unsigned nr_started)
{
  int err;

  pthread_mutex_lock (&d->lock);
  while (d->nr_ready < nr_started)
    pthread_cond_wait (&d->cond, &d->lock);
  err = d->error;
  pthread_mutex_unlock (&d->lock);
  return err;
}

static void *
queue_main (void *arg)
{
  struct zu_queue *q = arg;
  struct io_uring_sqe *sqe;
  int r;

  /* ublk makes the thread that fetches a tag its only server. */
  for (unsigned tag = 0; tag < q->d->depth; tag++)
    submit_io_cmd (q, tag, ZU_IO_FETCH_REQ, 0, 0);
  sqe = get_sqe (q);
  io_uring_prep_poll_add (sqe, q->d->stop_fd, POLLIN);
  io_uring_sqe_set_data64 (sqe, UD (UD_STOP, 0));
  r = io_uring_submit (&q->ring);
  zu_queue_report_ready (q->d, r < 0 ? r : 0);
  if (r < 0)
    return NULL;

  while (!q->done) {
    struct io_uring_cqe *cqe;
    unsigned head, seen = 0;

    r = io_uring_submit_and_wait (&q->ring, 1);
    if (r < 0 && r != -EINTR) {
      fprintf (stderr, "zonednull-ublk: queue %u: io_uring: %s\n", q->id,
               strerror (-r));
      break;
    }
    io_uring_for_each_cqe (&q->ring, head, cqe) {
      handle_cqe (q, cqe);
      seen++;
    }
    io_uring_cq_advance (&q->ring, seen);
  }
  return NULL;
}

static void
queue_free (struct zu_queue *q)
{
  /* Closing the ring cancels fetches the kernel still holds. */
  if (q->ring_ready)
    io_uring_queue_exit (&q->ring);
  if (q->descs)
    munmap (q->descs, q->descs_len);
  free (q->slots);
  free (q->buf);
  free (q->zones);
  free (q);
}

void
zu_served_summary (struct zu_device *d, char *buf, size_t len)
{
  static const struct { unsigned op; const char *name; } names[] = {
    { ZU_OP_READ, "reads" }, { ZU_OP_WRITE, "writes" },
    { ZU_OP_ZONE_APPEND, "zone appends" }, { ZU_OP_FLUSH, "flushes" },
    { ZU_OP_REPORT_ZONES, "zone reports" }, { ZU_OP_ZONE_OPEN, "opens" },
    { ZU_OP_ZONE_CLOSE, "closes" }, { ZU_OP_ZONE_FINISH, "finishes" },
    { ZU_OP_ZONE_RESET, "resets" }, { ZU_OP_ZONE_RESET_ALL, "resets of all zones" },
  };
  size_t used = 0;

  buf[0] = '\0';
  for (size_t i = 0; i < sizeof names / sizeof names[0] && used < len; i++) {
    int n = snprintf (buf + used, len - used, "%s%llu %s", i ? ", " : "",
                      atomic_load (&d->served[names[i].op]), names[i].name);
    if (n < 0)
      break;
    used += (size_t) n;
  }
}

void
zu_queue_join (struct zu_queue *q)
{
  if (q->thread_started)
    pthread_join (q->thread, NULL);
  queue_free (q);
}

static unsigned
ring_entries (unsigned depth)
{
  unsigned n = 1;

  /* A command and a completion timer per tag, the throttle timer and
   * the stop poll.
   */
  while (n < 2 * depth + 2)
    n <<= 1;
  return n;
}

struct zu_queue *
zu_queue_start (struct zu_device *d, unsigned id, char *err, size_t errlen)
{
  long page = sysconf (_SC_PAGESIZE);
  struct zu_queue *q = calloc (1, sizeof *q);
  size_t per_queue = ZU_MAX_QUEUE_DEPTH * sizeof (struct zu_io_desc);
  int r;

  if (q == NULL)
    goto nomem;
  q->d = d;
  q->id = id;
  q->max_zones = (unsigned) (d->buf_bytes / sizeof (struct blk_zone));
  q->slots = calloc (d->depth, sizeof *q->slots);
  q->buf = malloc (d->buf_bytes);
  q->zones = calloc (q->max_zones ? q->max_zones : 1, sizeof *q->zones);
  if (q->slots == NULL || q->buf == NULL || q->zones == NULL)
    goto nomem;
  q->descs_len = (d->depth * sizeof (struct zu_io_desc) + (size_t) page - 1)
    / (size_t) page * (size_t) page;
  q->descs = mmap (NULL, q->descs_len, PROT_READ, MAP_SHARED | MAP_POPULATE,
                   d->cdev_fd, (off_t) (id * per_queue));
  if (q->descs == MAP_FAILED) {
    q->descs = NULL;
    snprintf (err, errlen, "queue %u: mmap of the descriptors: %s", id,
              strerror (errno));
    goto fail;
  }
  r = io_uring_queue_init (ring_entries (d->depth), &q->ring, 0);
  if (r < 0) {
    snprintf (err, errlen, "queue %u: io_uring_queue_init: %s", id,
              strerror (-r));
    goto fail;
  }
  q->ring_ready = true;
  r = pthread_create (&q->thread, NULL, queue_main, q);
  if (r != 0) {
    snprintf (err, errlen, "queue %u: pthread_create: %s", id, strerror (r));
    goto fail;
  }
  q->thread_started = true;
  return q;

nomem:
  snprintf (err, errlen, "out of memory for queue %u", id);
fail:
  if (q)
    queue_free (q);
  return NULL;
}
