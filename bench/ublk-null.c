/* ublk-null: the cheapest ublk server there is, as the benchmarks'
 * anchor for zonednull-ublk.
 *
 *   ublk-null [SIZE_MIB [LOGICAL_BLOCK_SIZE [QUEUE_DEPTH]]]
 *
 * A plain (not zoned) disk of SIZE_MIB (default 1024) with the given
 * logical block size (default 512) and one hardware queue of QUEUE_DEPTH
 * tags (default 64).  Every request completes at once with success: user
 * copy is on and the server never reads or writes the data, so a read
 * returns whatever the kernel's pages held.  What this measures is the
 * round trip of a request through ublk_drv and io_uring on this kernel,
 * which no ublk server can beat.  Prints /dev/ublkbN on stdout once the
 * disk exists; SIGTERM or SIGINT stops and deletes it.
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

#include <liburing.h>

#include "ublk-abi.h"
#include "ctrl.h"

#define PROG "ublk-null"
#define SECTOR_SHIFT 9
#define STOP_TAG UINT64_MAX     /* user_data of the stop eventfd's poll */

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
  /* The queue thread's fetches are submitted (ready) or failed (error). */
  pthread_mutex_t lock;
  pthread_cond_t cond;
  bool ready;
  int error;
};

static void
queue_cmd (struct server *s, unsigned tag, uint32_t op, int32_t result)
{
  struct io_uring_sqe *sqe;
  struct zu_io_cmd cmd = { .q_id = 0, .tag = (uint16_t) tag,
                           .result = result };

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
    queue_cmd (s, tag, ZU_IO_FETCH_REQ, 0);
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
      else if (cqe->res == ZU_IO_RES_OK)
        queue_cmd (s, (unsigned) tag, ZU_IO_COMMIT_AND_FETCH_REQ,
                   complete_at_once (&s->descs[tag]));
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
    .max_io_buf_bytes = 512 * 1024, .dev_id = UINT32_MAX,
    .ublksrv_pid = getpid (),
    .flags = ZU_F_USER_COPY | ZU_F_CMD_IOCTL_ENCODE,
  };
  struct zu_params p = { .len = sizeof p, .types = ZU_PARAM_TYPE_BASIC };
  int v;

  v = zu_ctrl_cmd (&s->ctrl, ZU_CMD_ADD_DEV, UINT32_MAX, &info, sizeof info,
                   0);
  if (v < 0) {
    fprintf (stderr, PROG ": ADD_DEV: %s\n", strerror (-v));
    return -1;
  }
  s->dev_id = info.dev_id;
  p.basic.logical_bs_shift = (uint8_t) bs_shift;
  p.basic.physical_bs_shift = (uint8_t) bs_shift;
  p.basic.io_min_shift = (uint8_t) bs_shift;
  p.basic.io_opt_shift = (uint8_t) bs_shift;
  p.basic.max_sectors = info.max_io_buf_bytes >> SECTOR_SHIFT;
  p.basic.dev_sectors = bytes >> SECTOR_SHIFT;
  v = zu_ctrl_cmd (&s->ctrl, ZU_CMD_SET_PARAMS, s->dev_id, &p, sizeof p, 0);
  if (v < 0) {
    fprintf (stderr, PROG ": SET_PARAMS: %s\n", strerror (-v));
    return -1;
  }
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
  unsigned long size_mib = 1024, bs = 512, depth = 64;
  unsigned bs_shift;
  sigset_t stop_signals;
  pthread_t thread;
  bool added = false, thread_started = false, started = false;
  int status = EXIT_FAILURE, v, sig;

  if (argc > 4 || (argc > 1 && argv[1][0] == '-')) {
    fprintf (stderr, "usage: " PROG " [SIZE_MIB [LOGICAL_BLOCK_SIZE "
             "[QUEUE_DEPTH]]]\n");
    return EXIT_FAILURE;
  }
  if ((argc > 1 && parse_uint ("SIZE_MIB", argv[1], 1UL << 30, &size_mib))
      || (argc > 2 && parse_uint ("LOGICAL_BLOCK_SIZE", argv[2], 4096, &bs))
      || (argc > 3 && parse_uint ("QUEUE_DEPTH", argv[3], ZU_MAX_QUEUE_DEPTH,
                                  &depth)))
    return EXIT_FAILURE;
  bs_shift = log2_exact (bs);
  if (bs_shift < SECTOR_SHIFT) {
    fprintf (stderr, PROG ": LOGICAL_BLOCK_SIZE: %lu is not a power of two "
             "from 512 to 4096\n", bs);
    return EXIT_FAILURE;
  }
  s.depth = (unsigned) depth;

  /* The queue thread must not take the stop signals: main waits for them. */
  sigemptyset (&stop_signals);
  sigaddset (&stop_signals, SIGTERM);
  sigaddset (&stop_signals, SIGINT);
  pthread_sigmask (SIG_BLOCK, &stop_signals, NULL);

  v = zu_ctrl_open (&s.ctrl);
  if (v < 0) {
    fprintf (stderr, PROG ": " ZU_CONTROL_DEVICE ": %s\n", strerror (-v));
    return EXIT_FAILURE;
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
  return status;
}
