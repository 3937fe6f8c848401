/* SPDX-License-Identifier: BSD-3-Clause */
/* ublk-null: the cheapest ublk server there is, as the benchmarks'
 * anchor for zonednull-ublk.
 *
 *   ublk-null [SIZE_MIB [LOGICAL_BLOCK_SIZE [QUEUE_DEPTH [ZONE_MIB]]]]
 *
 * A disk of SIZE_MIB (default 1024) with the given logical block size
 * (default 512) and one hardware queue of QUEUE_DEPTH tags (default 64).
 * Every request completes at once: user copy is on and the server never
 * reads or writes the data, so a read returns whatever the kernel's pages
 * held.  What this measures is the round trip of a request through
 * ublk_drv and io_uring on this kernel, which no ublk server can beat.
 * Prints /dev/ublkbN on stdout once the disk exists; SIGTERM or SIGINT
 * stops and deletes it.
 *
 * Without ZONE_MIB the disk is plain and every request succeeds.  With
 * it the disk is host-managed zoned, sequential zones of ZONE_MIB (SIZE_MIB
 * a multiple of it) without open or active limits, as zonednull-ublk
 * declares its own: the block layer then plugs its writes per zone as it
 * does zonednull-ublk's, which the plain disk never pays.  The server
 * keeps only each zone's condition and write pointer, answers zone reports
 * from them, and fails a write off the write pointer or past the zone's
 * end with EIO; a zone append returns the sector it landed at.  Needs
 * root and a ublk_drv with zoned devices (Linux 6.6 and later).
 *
 * Written from the ublk UAPI (ublk/ublk-abi.h) and Linux's
 * Documentation/block/ublk.rst; talks to /dev/ublk-control through the
 * project's ublk/ctrl.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>

#include <linux/blkzoned.h>

#include <liburing.h>

#include "ublk-abi.h"
#include "ctrl.h"

#define PROG "ublk-null"
#define SECTOR_SHIFT 9
#define STOP_TAG UINT64_MAX     /* user_data of the stop eventfd's poll */
#define IO_BUF_BYTES (512 * 1024)

struct zone {
  uint64_t wp;                  /* sectors */
  uint8_t cond;                 /* BLK_ZONE_COND_* */
};

struct server {
  struct zu_ctrl ctrl;
  uint32_t dev_id;
  unsigned depth;
  int cdev_fd;
  int stop_fd;
  const struct zu_io_desc *descs;
  size_t descs_len;
  struct io_uring ring;
  bool ring_ready;
  /* Zoned mode: zone_sectors > 0.  Only the queue thread touches these. */
  uint64_t zone_sectors;
  uint32_t nr_zones;
  struct zone *zones;
  struct blk_zone *report;      /* IO_BUF_BYTES: one report at a time */
  /* The queue thread's fetches are submitted (ready) or failed (error). */
  pthread_mutex_t lock;
  pthread_cond_t cond;
  bool ready;
  int error;
};

static void
queue_cmd (struct server *s, unsigned tag, uint32_t op, int32_t result,
           uint64_t addr)
{
  struct io_uring_sqe *sqe;
  struct zu_io_cmd cmd = { .q_id = 0, .tag = (uint16_t) tag,
                           .result = result, .addr = addr };

  /* The ring holds a command per tag and the stop poll: never full. */
  while ((sqe = io_uring_get_sqe (&s->ring)) == NULL)
    io_uring_submit (&s->ring);
  memset (sqe, 0, sizeof *sqe);
  sqe->opcode = IORING_OP_URING_CMD;
  sqe->fd = s->cdev_fd;
  sqe->cmd_op = op;
  memcpy (sqe->cmd, &cmd, sizeof cmd);
  io_uring_sqe_set_data64 (sqe, tag);
}

/* Success with nothing moved: a read or write completes all its bytes,
 * anything else (there is nothing else without flush or discard
 * attributes) with 0.
 */
static int32_t
complete_at_once (const struct zu_io_desc *iod)
{
  switch (iod->op_flags & 0xff) {
  case ZU_OP_READ:
  case ZU_OP_WRITE:
    return (int32_t) (iod->nr_sectors << SECTOR_SHIFT);
  default:
    return 0;
  }
}

/* ---- zoned mode: the zone table, nothing else ----------------------------- */

static struct zone *
zone_at (struct server *s, uint64_t sector)
{
  uint64_t i = sector / s->zone_sectors;

  return i < s->nr_zones ? &s->zones[i] : NULL;
}

static uint64_t
zone_start (struct server *s, const struct zone *z)
{
  return (uint64_t) (z - s->zones) * s->zone_sectors;
}

/* A write of n sectors at sector: it must start at the write pointer and
 * stay in the zone, as on any host-managed device.
 */
static int32_t
zone_write (struct server *s, uint64_t sector, uint64_t n, bool append,
            uint64_t *lba)
{
  struct zone *z = zone_at (s, sector);
  uint64_t end;

  if (z == NULL || n == 0)
    return -EIO;
  end = zone_start (s, z) + s->zone_sectors;
  if (append)
    sector = z->wp;
  if (z->cond == BLK_ZONE_COND_FULL || sector != z->wp || n > end - sector)
    return -EIO;
  /* ublk_drv refuses (EINVAL) a commit that names an address for
   * anything but an append, and the tag is then lost with its request.
   */
  if (append)
    *lba = sector;
  z->wp += n;
  if (z->wp == end)
    z->cond = BLK_ZONE_COND_FULL;
  else if (z->cond != BLK_ZONE_COND_EXP_OPEN)
    z->cond = BLK_ZONE_COND_IMP_OPEN;
  return (int32_t) (n << SECTOR_SHIFT);
}

static int32_t
zone_mgmt (struct server *s, unsigned op, uint64_t sector)
{
  struct zone *z = zone_at (s, sector);
  uint64_t start;

  if (z == NULL || sector % s->zone_sectors)
    return -EIO;
  start = zone_start (s, z);
  switch (op) {
  case ZU_OP_ZONE_RESET:
    z->wp = start;
    z->cond = BLK_ZONE_COND_EMPTY;
    break;
  case ZU_OP_ZONE_FINISH:
    z->wp = start + s->zone_sectors;
    z->cond = BLK_ZONE_COND_FULL;
    break;
  case ZU_OP_ZONE_OPEN:
    if (z->cond != BLK_ZONE_COND_FULL)
      z->cond = BLK_ZONE_COND_EXP_OPEN;
    break;
  case ZU_OP_ZONE_CLOSE:
    if (z->cond == BLK_ZONE_COND_IMP_OPEN
        || z->cond == BLK_ZONE_COND_EXP_OPEN)
      z->cond = z->wp == start ? BLK_ZONE_COND_EMPTY : BLK_ZONE_COND_CLOSED;
    break;
  }
  return 0;
}

/* REPORT_ZONES: the records from sector's zone on, zeros after them (a
 * zero-length record ends a report), the whole buffer written back so
 * that the result covers the kernel's buffer, as zonednull-ublk does.
 */
static int32_t
report_zones (struct server *s, unsigned tag, uint64_t sector,
              uint32_t want)
{
  struct zone *z = zone_at (s, sector);
  uint32_t max = IO_BUF_BYTES / sizeof *s->report, n = 0;
  ssize_t w;

  memset (s->report, 0, IO_BUF_BYTES);
  if (z == NULL)
    return -EIO;
  for (uint32_t i = (uint32_t) (z - s->zones);
       i < s->nr_zones && n < want && n < max; i++, n++)
    s->report[n] = (struct blk_zone) {
      .start = (uint64_t) i * s->zone_sectors, .len = s->zone_sectors,
      .capacity = s->zone_sectors, .wp = s->zones[i].wp,
      .type = BLK_ZONE_TYPE_SEQWRITE_REQ, .cond = s->zones[i].cond,
    };
  w = pwrite (s->cdev_fd, s->report, IO_BUF_BYTES,
              (off_t) zu_user_copy_pos (0, tag));
  if (w <= 0) {
    fprintf (stderr, PROG ": tag %u: REPORT_ZONES: pwrite: %s\n", tag,
             w == 0 ? "nothing written" : strerror (errno));
    return -EIO;
  }
  return (int32_t) w;
}

/* The result of a request to the zoned disk; *lba where an append
 * landed.
 */
static int32_t
serve_zoned (struct server *s, unsigned tag, const struct zu_io_desc *iod,
             uint64_t *lba)
{
  unsigned op = iod->op_flags & 0xff;

  switch (op) {
  case ZU_OP_READ:
    return (int32_t) (iod->nr_sectors << SECTOR_SHIFT);
  case ZU_OP_WRITE:
  case ZU_OP_ZONE_APPEND:
    return zone_write (s, iod->start_sector, iod->nr_sectors,
                       op == ZU_OP_ZONE_APPEND, lba);
  case ZU_OP_ZONE_RESET_ALL:
    for (uint32_t i = 0; i < s->nr_zones; i++)
      zone_mgmt (s, ZU_OP_ZONE_RESET, (uint64_t) i * s->zone_sectors);
    return 0;
  case ZU_OP_ZONE_RESET:
  case ZU_OP_ZONE_FINISH:
  case ZU_OP_ZONE_OPEN:
  case ZU_OP_ZONE_CLOSE:
    return zone_mgmt (s, op, iod->start_sector);
  case ZU_OP_REPORT_ZONES:
    return report_zones (s, tag, iod->start_sector, iod->nr_sectors);
  case ZU_OP_FLUSH:
    return 0;
  default:
    return -EOPNOTSUPP;
  }
}

static void
set_ready (struct server *s, int err)
{
  pthread_mutex_lock (&s->lock);
  s->ready = true;
  s->error = err;
  pthread_cond_broadcast (&s->cond);
  pthread_mutex_unlock (&s->lock);
}

/* ublk binds a tag to the thread that fetched it: this thread alone
 * serves the queue, and sleeps only in io_uring_enter.
 */
static void *
queue_main (void *arg)
{
  struct server *s = arg;
  struct io_uring_sqe *sqe;
  unsigned aborted = 0;
  bool done = false;
  int err;

  /* Made here, with the flags zonednull-ublk's queues take (ublk/ring.c),
   * so that this stays the limit of a ublk server done well.
   */
  struct io_uring_params p = {
    .flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
  };
  err = io_uring_queue_init_params (s->depth + 1, &s->ring, &p);
  if (err == -EINVAL)
    err = io_uring_queue_init (s->depth + 1, &s->ring, 0);
  if (err < 0) {
    set_ready (s, err);
    return NULL;
  }
  s->ring_ready = true;
  for (unsigned tag = 0; tag < s->depth; tag++)
    queue_cmd (s, tag, ZU_IO_FETCH_REQ, 0, 0);
  sqe = io_uring_get_sqe (&s->ring);
  io_uring_prep_poll_add (sqe, s->stop_fd, POLLIN);
  io_uring_sqe_set_data64 (sqe, STOP_TAG);
  err = io_uring_submit (&s->ring);
  set_ready (s, err < 0 ? err : 0);
  if (err < 0)
    return NULL;

  while (!done) {
    struct io_uring_cqe *cqe;
    unsigned head, seen = 0;

    err = io_uring_submit_and_wait (&s->ring, 1);
    if (err < 0 && err != -EINTR) {
      fprintf (stderr, PROG ": io_uring: %s\n", strerror (-err));
      break;
    }
    io_uring_for_each_cqe (&s->ring, head, cqe) {
      uint64_t tag = io_uring_cqe_get_data64 (cqe);

      seen++;
      if (tag == STOP_TAG)
        done = true;
      else if (cqe->res == ZU_IO_RES_OK) {
        uint64_t lba = 0;
        int32_t res = s->zones
          ? serve_zoned (s, (unsigned) tag, &s->descs[tag], &lba)
          : complete_at_once (&s->descs[tag]);

        queue_cmd (s, (unsigned) tag, ZU_IO_COMMIT_AND_FETCH_REQ, res, lba);
      }
      else {
        if (cqe->res != ZU_IO_RES_ABORT)
          fprintf (stderr, PROG ": tag %" PRIu64 ": %s\n", tag,
                   strerror (-cqe->res));
        if (++aborted == s->depth)
          done = true;
      }
    }
    io_uring_cq_advance (&s->ring, seen);
  }
  return NULL;
}

static int
parse_uint (const char *what, const char *text, unsigned long max,
            unsigned long *out)
{
  char *end;

  errno = 0;
  *out = strtoul (text, &end, 10);
  if (errno || end == text || *end || *out == 0 || *out > max) {
    fprintf (stderr, PROG ": %s: '%s' is not a number from 1 to %lu\n",
             what, text, max);
    return -1;
  }
  return 0;
}

static unsigned
log2_exact (unsigned long v)
{
  unsigned s = 0;

  while ((1UL << s) < v)
    s++;
  return (1UL << s) == v ? s : 0;
}

static int
add_and_set_params (struct server *s, uint64_t bytes, unsigned bs_shift)
{
  struct zu_dev_info info = {
    .nr_hw_queues = 1, .queue_depth = (uint16_t) s->depth,
    .max_io_buf_bytes = IO_BUF_BYTES, .dev_id = UINT32_MAX,
    .ublksrv_pid = getpid (),
    .flags = ZU_F_USER_COPY | ZU_F_CMD_IOCTL_ENCODE,
  };
  struct zu_params p = { .len = sizeof p, .types = ZU_PARAM_TYPE_BASIC };
  int v;

  if (s->zone_sectors)
    info.flags |= ZU_F_ZONED;
  v = zu_ctrl_cmd (&s->ctrl, ZU_CMD_ADD_DEV, UINT32_MAX, &info, sizeof info,
                   0);
  if (v < 0) {
    fprintf (stderr, PROG ": ADD_DEV: %s%s\n", strerror (-v),
             s->zone_sectors ? " (a zoned disk needs root and Linux 6.6 "
             "or later)" : "");
    return -1;
  }
  s->dev_id = info.dev_id;
  if (s->zone_sectors && !(info.flags & ZU_F_ZONED)) {
    fprintf (stderr, PROG ": ADD_DEV: the kernel dropped the zoned flag\n");
    return -1;
  }
  p.basic.logical_bs_shift = (uint8_t) bs_shift;
  p.basic.physical_bs_shift = (uint8_t) bs_shift;
  p.basic.io_min_shift = (uint8_t) bs_shift;
  p.basic.io_opt_shift = (uint8_t) bs_shift;
  p.basic.max_sectors = info.max_io_buf_bytes >> SECTOR_SHIFT;
  p.basic.dev_sectors = bytes >> SECTOR_SHIFT;
  if (s->zone_sectors) {
    p.types |= ZU_PARAM_TYPE_ZONED;
    p.basic.chunk_sectors = (uint32_t) s->zone_sectors;
    p.zoned.max_zone_append_sectors = p.basic.max_sectors;
  }
  v = zu_ctrl_cmd (&s->ctrl, ZU_CMD_SET_PARAMS, s->dev_id, &p, sizeof p, 0);
  if (v < 0) {
    fprintf (stderr, PROG ": SET_PARAMS: %s\n", strerror (-v));
    return -1;
  }
  return 0;
}

/* Every zone empty, and the buffer zone reports are made in. */
static int
make_zones (struct server *s, unsigned long size_mib, unsigned long zone_mib)
{
  if (size_mib % zone_mib) {
    fprintf (stderr, PROG ": ZONE_MIB: SIZE_MIB %lu is not a multiple of "
             "%lu\n", size_mib, zone_mib);
    return -1;
  }
  s->zone_sectors = (uint64_t) zone_mib << (20 - SECTOR_SHIFT);
  s->nr_zones = (uint32_t) (size_mib / zone_mib);
  s->zones = calloc (s->nr_zones, sizeof *s->zones);
  s->report = malloc (IO_BUF_BYTES);
  if (s->zones == NULL || s->report == NULL) {
    fprintf (stderr, PROG ": out of memory for %" PRIu32 " zones\n",
             s->nr_zones);
    return -1;
  }
  for (uint32_t i = 0; i < s->nr_zones; i++)
    s->zones[i] = (struct zone) { .wp = (uint64_t) i * s->zone_sectors,
                                  .cond = BLK_ZONE_COND_EMPTY };
  return 0;
}

static int
open_queue (struct server *s)
{
  size_t page = (size_t) sysconf (_SC_PAGESIZE);
  char path[64];
  void *m;

  /* udev or devtmpfs makes the character device a moment after ADD_DEV. */
  snprintf (path, sizeof path, "/dev/ublkc%" PRIu32, s->dev_id);
  for (int i = 0; i < 500; i++) {
    s->cdev_fd = open (path, O_RDWR | O_CLOEXEC);
    if (s->cdev_fd != -1 || errno != ENOENT)
      break;
    nanosleep (&(struct timespec) { 0, 10000000 }, NULL);
  }
  if (s->cdev_fd == -1) {
    fprintf (stderr, PROG ": %s: %s\n", path, strerror (errno));
    return -1;
  }
  /* Queue 0's descriptors sit at offset 0. */
  s->descs_len = (s->depth * sizeof *s->descs + page - 1) / page * page;
  m = mmap (NULL, s->descs_len, PROT_READ, MAP_SHARED | MAP_POPULATE,
            s->cdev_fd, 0);
  if (m == MAP_FAILED) {
    fprintf (stderr, PROG ": mmap of %s: %s\n", path, strerror (errno));
    return -1;
  }
  s->descs = m;
  return 0;
}

int
main (int argc, char *argv[])
{
  struct server s = { .cdev_fd = -1, .stop_fd = -1,
                      .lock = PTHREAD_MUTEX_INITIALIZER,
                      .cond = PTHREAD_COND_INITIALIZER };
  unsigned long size_mib = 1024, bs = 512, depth = 64, zone_mib = 0;
  unsigned bs_shift;
  sigset_t stop_signals;
  pthread_t thread;
  bool added = false, thread_started = false, started = false;
  int status = EXIT_FAILURE, v, sig;

  if (argc > 5 || (argc > 1 && argv[1][0] == '-')) {
    fprintf (stderr, "usage: " PROG " [SIZE_MIB [LOGICAL_BLOCK_SIZE "
             "[QUEUE_DEPTH [ZONE_MIB]]]]\n");
    return EXIT_FAILURE;
  }
  if ((argc > 1 && parse_uint ("SIZE_MIB", argv[1], 1UL << 30, &size_mib))
      || (argc > 2 && parse_uint ("LOGICAL_BLOCK_SIZE", argv[2], 4096, &bs))
      || (argc > 3 && parse_uint ("QUEUE_DEPTH", argv[3], ZU_MAX_QUEUE_DEPTH,
                                  &depth))
      || (argc > 4 && parse_uint ("ZONE_MIB", argv[4], 1UL << 20,
                                  &zone_mib)))
    return EXIT_FAILURE;
  bs_shift = log2_exact (bs);
  if (bs_shift < SECTOR_SHIFT) {
    fprintf (stderr, PROG ": LOGICAL_BLOCK_SIZE: %lu is not a power of two "
             "from 512 to 4096\n", bs);
    return EXIT_FAILURE;
  }
  s.depth = (unsigned) depth;
  if (zone_mib && make_zones (&s, size_mib, zone_mib) == -1)
    goto out_free;

  /* The queue thread must not take the stop signals: main waits for them. */
  sigemptyset (&stop_signals);
  sigaddset (&stop_signals, SIGTERM);
  sigaddset (&stop_signals, SIGINT);
  pthread_sigmask (SIG_BLOCK, &stop_signals, NULL);

  v = zu_ctrl_open (&s.ctrl);
  if (v < 0) {
    fprintf (stderr, PROG ": " ZU_CONTROL_DEVICE ": %s\n", strerror (-v));
    goto out_free;
  }
  if (add_and_set_params (&s, (uint64_t) size_mib << 20, bs_shift) == -1)
    goto out;
  added = true;
  if (open_queue (&s) == -1)
    goto out;
  s.stop_fd = eventfd (0, EFD_CLOEXEC);
  if (s.stop_fd == -1) {
    fprintf (stderr, PROG ": eventfd: %s\n", strerror (errno));
    goto out;
  }
  v = pthread_create (&thread, NULL, queue_main, &s);
  if (v != 0) {
    fprintf (stderr, PROG ": pthread_create: %s\n", strerror (v));
    goto out;
  }
  thread_started = true;
  pthread_mutex_lock (&s.lock);
  while (!s.ready)
    pthread_cond_wait (&s.cond, &s.lock);
  pthread_mutex_unlock (&s.lock);
  if (s.error) {
    fprintf (stderr, PROG ": setting up the queue (io_uring, fetches): %s\n",
             strerror (-s.error));
    goto out;
  }
  /* START_DEV waits until every tag is fetched, then adds the disk (and
   * reads its partition table through the queue thread).
   */
  v = zu_ctrl_cmd (&s.ctrl, ZU_CMD_START_DEV, s.dev_id, NULL, 0,
                   (uint64_t) getpid ());
  if (v < 0) {
    fprintf (stderr, PROG ": START_DEV: %s\n", strerror (-v));
    goto out;
  }
  started = true;
  printf ("/dev/ublkb%" PRIu32 "\n", s.dev_id);
  fflush (stdout);
  do
    v = sigwait (&stop_signals, &sig);
  while (v == EINTR);
  status = EXIT_SUCCESS;

out:
  /* STOP_DEV drains what is in flight, so the queue serves until it
   * returns; DEL_DEV waits for the character device to be closed.
   */
  if (started) {
    v = zu_ctrl_cmd (&s.ctrl, ZU_CMD_STOP_DEV, s.dev_id, NULL, 0, 0);
    if (v < 0) {
      fprintf (stderr, PROG ": STOP_DEV: %s\n", strerror (-v));
      status = EXIT_FAILURE;
    }
  }
  if (thread_started) {
    eventfd_write (s.stop_fd, 1);
    pthread_join (thread, NULL);
  }
  if (s.ring_ready)
    io_uring_queue_exit (&s.ring);
  if (s.descs)
    munmap ((void *) s.descs, s.descs_len);
  if (s.stop_fd != -1)
    close (s.stop_fd);
  if (s.cdev_fd != -1)
    close (s.cdev_fd);
  if (added) {
    v = zu_ctrl_cmd (&s.ctrl, ZU_CMD_DEL_DEV, s.dev_id, NULL, 0, 0);
    if (v < 0) {
      fprintf (stderr, PROG ": DEL_DEV: %s\n", strerror (-v));
      status = EXIT_FAILURE;
    }
  }
  zu_ctrl_close (&s.ctrl);
out_free:
  free (s.zones);
  free (s.report);
  return status;
}
