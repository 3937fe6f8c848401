/* SPDX-License-Identifier: BSD-3-Clause */
/* zonednull-ublk: the null_blk zoned device model as a real host-managed
 * zoned block device, /dev/ublkbN, through Linux's ublk driver.
 *
 * The main thread does the control commands and waits for a stop
 * signal; each hardware queue has a thread (queue-local.c); the control
 * socket, for the zonednull CLI, has another (control-socket.c).  With
 * --connect=URI the zones live on a remote zonednull server instead of in
 * the process, and each queue has a thread, an NBD data connection and a
 * control worker (queue-remote.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <linux/capability.h>

#include "zonednull/client.h"
#include "frontend/control.h"
#include "model/queue.h"
#include "model/zoned.h"
#include "config/params.h"
#include "util/pidfile.h"
#include "ublk-abi.h"
#include "ctrl.h"
#include "queue-local.h"
#include "control-socket.h"
#include "queue-remote.h"
#include "ring.h"

#define PROG "zonednull-ublk"
#define RUN_DIR "/run/zonednull-ublk"

/* Command line settings. */
static const char *pidfile;             /* -P: written once started */
static bool foreground;                 /* -f: do not daemonize */
static const char *control_socket;      /* --control-socket, or default */
static bool no_control_socket;          /* --no-control-socket */
static const char *connect_uri;         /* --connect: the remote server */
static unsigned timeout_s = 30;         /* --timeout: per request */
static unsigned reconnect_s;            /* --reconnect: the window, or 0 */
static bool recovery;                   /* --recovery: a daemon may take over */
static bool recover;                    /* --recover=N: take over ublkbN */
static uint32_t recover_id;
static bool stats;                      /* --stats */
static unsigned opt_queues, opt_depth;  /* --queues, --depth (0: server's) */

/* Everything one run sets up, so that teardown undoes exactly that. */
struct run {
  struct zn_params params;
  struct zn_dev *dev;
  struct zn_tagset *tagset;
  struct zn_queues *qs;
  struct zu_ctrl ctrl;
  uint32_t dev_id;
  bool added, started;
  struct zu_device d;
  struct zu_queue **queues;
  struct zu_rqueue **rqueues;   /* --connect */
  struct zn_geometry rgeo;      /* --connect: the server's geometry */
  uint64_t cache_size;          /* a volatile write cache: FUA, flush */
  bool backing_dir;             /* zones in files: the kernel must flush */
  unsigned nr_queues;           /* started */
  struct zu_control_socket *control_socket;
  char socket_path[108];
  bool default_socket;
  bool pidfile_written;
  int ready_fd;                 /* daemon: the parent waits on it */
};

static void __attribute__ ((format (printf, 1, 2)))
error (const char *fmt, ...)
{
  va_list ap;

  fputs (PROG ": ", stderr);
  va_start (ap, fmt);
  vfprintf (stderr, fmt, ap);
  va_end (ap);
  fputc ('\n', stderr);
}

/* ---- what ublk cannot express ------------------------------------------ */

/* Refused before anything is created, each naming its key. */
static int
check_expressible (const struct zn_params *p)
{
  const struct zn_queue_config *q = &p->queue;

  if (p->nr_devices != 1) {
    error ("nr_devices=%" PRIu32 ": zonednull-ublk serves one device per "
           "process; start one process per device", p->nr_devices);
    return -1;
  }
  if (q->hw_queue_depth > ZU_MAX_QUEUE_DEPTH) {
    error ("hw_queue_depth=%" PRIu32 ": ublk allows at most %d tags per "
           "queue", q->hw_queue_depth, ZU_MAX_QUEUE_DEPTH);
    return -1;
  }
  if (q->submit_queues > ZU_MAX_NR_QUEUES) {
    error ("submit_queues=%" PRIu32 ": ublk allows at most %d queues",
           q->submit_queues, ZU_MAX_NR_QUEUES);
    return -1;
  }
  /* ublk gives every queue its own hw_queue_depth kernel tags; one pool
   * shared by all queues would let the kernel send more requests than
   * null_blk has tags.
   */
  if (q->shared_tag_bitmap && q->submit_queues > 1) {
    error ("shared_tag_bitmap=1 with submit_queues=%" PRIu32 ": ublk has "
           "no tag space shared between queues", q->submit_queues);
    return -1;
  }
  return 0;
}

static int
check_geometry (const struct zn_geometry *geo, const struct zn_config *cfg)
{
  /* ublk counts dev_sectors / chunk_sectors zones and reports no more, so
   * the kernel's zone revalidation would find the capacity not covered.
   */
  if (geo->capacity % geo->zone_sectors != 0 && connect_uri) {
    error ("%s: the server's device has %" PRIu64 " sectors, not a "
           "multiple of its zone size of %" PRIu64 " sectors: ublk cannot "
           "expose a smaller last zone", connect_uri, geo->capacity,
           geo->zone_sectors);
    return -1;
  }
  if (geo->capacity % geo->zone_sectors != 0) {
    error ("size=%" PRIu64 " is not a multiple of zone_size=%" PRIu64
           ": ublk cannot expose a smaller last zone", cfg->size,
           cfg->zone_size);
    return -1;
  }
  if (geo->capacity / geo->zone_sectors > UINT32_MAX
      || geo->zone_sectors > UINT32_MAX) {
    error ("zone_size=%" PRIu64 ": too large for ublk's chunk_sectors",
           cfg->zone_size);
    return -1;
  }
  return 0;
}

/* ---- privileges and kernel support -------------------------------------- */

static bool
have_cap_sys_admin (void)
{
  struct __user_cap_header_struct h = {
    .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0,
  };
  struct __user_cap_data_struct data[2];

  if (syscall (SYS_capget, &h, data) != 0)
    return geteuid () == 0;
  return (data[CAP_SYS_ADMIN / 32].effective
          & (UINT32_C (1) << (CAP_SYS_ADMIN % 32))) != 0;
}

static int
preflight (void)
{
  struct stat st;

  if (stat (ZU_CONTROL_DEVICE, &st) == -1) {
    if (errno == ENOENT)
      error (ZU_CONTROL_DEVICE " is missing: the ublk driver is not "
             "loaded (modprobe ublk_drv)");
    else
      error (ZU_CONTROL_DEVICE ": %s", strerror (errno));
    return -1;
  }
  /* Zoned ublk devices cannot be unprivileged. */
  if (!have_cap_sys_admin ()) {
    error ("a zoned ublk device needs root (CAP_SYS_ADMIN)");
    return -1;
  }
  return 0;
}

static int
check_features (struct run *r)
{
  uint64_t features = 0;
  int v = zu_ctrl_cmd (&r->ctrl, ZU_CMD_GET_FEATURES, UINT32_MAX, &features,
                       sizeof features, 0);

  if (v < 0) {
    error ("this kernel's ublk driver has no GET_FEATURES (%s): zoned ublk "
           "devices need Linux 6.6 or later", strerror (-v));
    return -1;
  }
  if (!(features & ZU_F_ZONED) || !(features & ZU_F_USER_COPY)) {
    error ("this kernel's ublk driver has no zoned devices (features "
           "0x%" PRIx64 "): it needs CONFIG_BLK_DEV_ZONED and Linux 6.6 or "
           "later", features);
    return -1;
  }
  if ((recovery || recover) && !(features & ZU_F_USER_RECOVERY)) {
    error ("this kernel's ublk driver has no user recovery (features "
           "0x%" PRIx64 ")", features);
    return -1;
  }
  return 0;
}

/* ---- the ublk device ---------------------------------------------------- */

static uint32_t
io_buf_bytes (const struct zn_geometry *geo)
{
  uint32_t page = (uint32_t) sysconf (_SC_PAGESIZE);

  /* The kernel rounds this down to pages and then requires max_sectors
   * to fit, so round up.
   */
  return (geo->max_sectors * ZN_SECTOR_SIZE + page - 1) / page * page;
}

static int
add_device (struct run *r)
{
  const struct zn_geometry *geo = r->d.geo;
  struct zu_dev_info info = {
    .nr_hw_queues = (uint16_t) r->params.queue.submit_queues,
    .queue_depth = (uint16_t) r->params.queue.hw_queue_depth,
    .max_io_buf_bytes = io_buf_bytes (geo),
    .dev_id = UINT32_MAX,               /* the kernel picks N */
    .ublksrv_pid = getpid (),
    .flags = ZU_F_USER_COPY | ZU_F_ZONED | ZU_F_CMD_IOCTL_ENCODE
      | (recovery ? ZU_F_USER_RECOVERY : 0),
    /* Ours to use: the device's generation, which a daemon taking over
     * (--recover) compares with its own.
     */
    .ublksrv_flags = r->d.generation,
  };
  int v = zu_ctrl_cmd (&r->ctrl, ZU_CMD_ADD_DEV, UINT32_MAX, &info,
                       sizeof info, 0);

  if (v < 0) {
    error ("ADD_DEV: %s", strerror (-v));
    return -1;
  }
  r->dev_id = info.dev_id;
  r->added = true;
  if (!(info.flags & ZU_F_ZONED)) {
    error ("ADD_DEV: the kernel dropped the zoned flag");
    return -1;
  }
  return 0;
}

/* The character device appears once udev (or devtmpfs) made it. */
static int
open_cdev (struct run *r)
{
  char path[64];

  snprintf (path, sizeof path, "/dev/ublkc%" PRIu32, r->dev_id);
  for (int i = 0; i < 500; i++) {
    r->d.cdev_fd = open (path, O_RDWR | O_CLOEXEC);
    if (r->d.cdev_fd != -1 || errno != ENOENT)
      break;
    nanosleep (&(struct timespec) { 0, 10000000 }, NULL);
  }
  if (r->d.cdev_fd == -1) {
    error ("%s: %s", path, strerror (errno));
    return -1;
  }
  return 0;
}

static unsigned
log2_of (uint32_t v)
{
  unsigned s = 0;

  while ((UINT32_C (1) << (s + 1)) <= v)
    s++;
  return s;
}

/* What null_blk shows for the same configuration (zn_dev_geometry). */
static int
set_params (struct run *r)
{
  const struct zn_geometry *geo = r->d.geo;
  unsigned shift = log2_of (geo->block_size);
  struct zu_params p = { .len = sizeof p,
                         .types = ZU_PARAM_TYPE_BASIC | ZU_PARAM_TYPE_ZONED };
  int v;

  /* null_blk advertises a write cache, and FUA with it, only when it
   * has one (cache_size > 0 and memory_backed); from 6.10 FUA also needs
   * fua (geo->fua).  Zone files sit in the host's page cache, a volatile
   * cache too: with backing_dir the kernel must send its flushes, so that
   * an fsync reaches the disk.
   */
  if (r->cache_size > 0 || r->backing_dir)
    p.basic.attrs = ZU_ATTR_VOLATILE_CACHE | (geo->fua ? ZU_ATTR_FUA : 0);
  p.basic.logical_bs_shift = (uint8_t) shift;
  p.basic.physical_bs_shift = (uint8_t) shift;
  /* ublk sets io_min and io_opt to 1 << shift: the block size is what
   * null_blk's io_min comes to.
   */
  p.basic.io_min_shift = (uint8_t) shift;
  p.basic.io_opt_shift = (uint8_t) shift;
  p.basic.max_sectors = geo->max_sectors;
  p.basic.chunk_sectors = (uint32_t) geo->zone_sectors;
  p.basic.dev_sectors = geo->capacity;
  p.zoned.max_open_zones = geo->max_open;
  p.zoned.max_active_zones = geo->max_active;
  p.zoned.max_zone_append_sectors = geo->max_append_sectors;
  v = zu_ctrl_cmd (&r->ctrl, ZU_CMD_SET_PARAMS, r->dev_id, &p, sizeof p, 0);
  if (v < 0) {
    error ("SET_PARAMS: %s", strerror (-v));
    return -1;
  }
  return 0;
}

/* --recover=N: the device stays, quiesced, after the daemon that served
 * it died (it was added with --recovery); this process takes it over if
 * it serves the same device: the same generation and geometry.  The old
 * daemon's exit may still be under way, hence the wait on EBUSY.
 */
static int
recover_device (struct run *r)
{
  const struct zn_geometry *geo = r->d.geo;
  struct zu_dev_info info = { 0 };
  struct zu_params p = { .len = sizeof p };
  const char *key = NULL;
  uint64_t had = 0, is = 0;
  int v;

  v = zu_ctrl_cmd (&r->ctrl, ZU_CMD_GET_DEV_INFO, recover_id, &info,
                   sizeof info, 0);
  if (v < 0) {
    error ("--recover=%" PRIu32 ": /dev/ublkb%" PRIu32 ": %s", recover_id,
           recover_id, v == -ENODEV ? "no such ublk device" : strerror (-v));
    return -1;
  }
  if (!(info.flags & ZU_F_USER_RECOVERY) || !(info.flags & ZU_F_ZONED)) {
    error ("--recover=%" PRIu32 ": /dev/ublkb%" PRIu32 " was not started "
           "by zonednull-ublk --recovery (flags 0x%" PRIx64 ")", recover_id,
           recover_id, info.flags);
    return -1;
  }
  /* The kernel answers EBUSY while the old daemon's exit is under way:
   * one that still runs is refused at once.
   */
  if (info.state == ZU_S_DEV_LIVE && info.ublksrv_pid > 0
      && (kill (info.ublksrv_pid, 0) == 0 || errno == EPERM)) {
    error ("--recover=%" PRIu32 ": /dev/ublkb%" PRIu32 " is served by "
           "PID %" PRId32 ", still running", recover_id, recover_id,
           info.ublksrv_pid);
    return -1;
  }
  if (info.ublksrv_flags != r->d.generation) {
    error ("--recover=%" PRIu32 ": /dev/ublkb%" PRIu32 " served the device "
           "of generation %016" PRIx64 "; this one is %016" PRIx64 ": "
           "another device, whose data is not what the host wrote (zones "
           "in memory die with the process that held them)", recover_id,
           recover_id, (uint64_t) info.ublksrv_flags, r->d.generation);
    return -1;
  }
  v = zu_ctrl_cmd (&r->ctrl, ZU_CMD_GET_PARAMS, recover_id, &p, sizeof p, 0);
  if (v < 0) {
    error ("--recover=%" PRIu32 ": GET_PARAMS: %s", recover_id,
           strerror (-v));
    return -1;
  }
#define CMP(k, a, b) if (!key && (uint64_t) (a) != (uint64_t) (b)) \
    key = k, had = (uint64_t) (a), is = (uint64_t) (b)
  CMP ("capacity (sectors)", p.basic.dev_sectors, geo->capacity);
  CMP ("zone size (sectors)", p.basic.chunk_sectors, geo->zone_sectors);
  CMP ("block size shift", p.basic.logical_bs_shift,
       log2_of (geo->block_size));
  CMP ("max_open_zones", p.zoned.max_open_zones, geo->max_open);
  CMP ("max_active_zones", p.zoned.max_active_zones, geo->max_active);
  if (!connect_uri) {
    CMP ("submit_queues", info.nr_hw_queues, r->params.queue.submit_queues);
    CMP ("hw_queue_depth", info.queue_depth, r->params.queue.hw_queue_depth);
  }
#undef CMP
  if (key) {
    error ("--recover=%" PRIu32 ": /dev/ublkb%" PRIu32 " has %s %" PRIu64
           "; this device has %" PRIu64, recover_id, recover_id, key, had,
           is);
    return -1;
  }
  /* The kernel's queues are the device's: --connect follows them. */
  r->params.queue.submit_queues = info.nr_hw_queues;
  r->params.queue.hw_queue_depth = info.queue_depth;
  r->d.nr_queues = info.nr_hw_queues;
  r->d.depth = info.queue_depth;
  for (int i = 0; i < 100; i++) {
    v = zu_ctrl_cmd (&r->ctrl, ZU_CMD_START_USER_RECOVERY, recover_id,
                     NULL, 0, 0);
    if (v != -EBUSY)
      break;
    nanosleep (&(struct timespec) { 0, 100000000 }, NULL);
  }
  if (v < 0) {
    error ("--recover=%" PRIu32 ": START_USER_RECOVERY: %s%s", recover_id,
           strerror (-v), v == -EBUSY ? " (the daemon serving it is "
           "still running, or its exit is not over after 10 s)" : "");
    return -1;
  }
  r->dev_id = recover_id;
  return 0;
}

/* END_USER_RECOVERY returns once every queue fetched its tags; then the
 * kernel sends the requests it held.
 */
static int
end_recovery (struct run *r)
{
  int v = zu_ctrl_cmd (&r->ctrl, ZU_CMD_END_USER_RECOVERY, r->dev_id, NULL,
                       0, (uint64_t) getpid ());

  if (v < 0) {
    error ("END_USER_RECOVERY: %s", strerror (-v));
    return -1;
  }
  r->added = r->started = true;
  return 0;
}

static int
start_queues (struct run *r)
{
  char err[256];
  int v;

  r->queues = calloc (r->d.nr_queues, sizeof *r->queues);
  if (r->queues == NULL) {
    error ("out of memory");
    return -1;
  }
  if (connect_uri) {
    r->rqueues = calloc (r->d.nr_queues, sizeof *r->rqueues);
    if (r->rqueues == NULL) {
      error ("out of memory");
      return -1;
    }
  }
  for (unsigned q = 0; q < r->d.nr_queues; q++) {
    void *started = connect_uri
      ? (void *) (r->rqueues[q] = zu_rqueue_start (&r->d, q, connect_uri,
                                                   err, sizeof err))
      : (void *) (r->queues[q] = zu_queue_start (&r->d, q, err, sizeof err));

    if (started == NULL) {
      error ("%s", err);
      break;
    }
    r->nr_queues = q + 1;
  }
  v = zu_queues_wait_ready (&r->d, r->nr_queues, err, sizeof err);
  if (v < 0) {
    error ("%s", err);
    return -1;
  }
  return r->nr_queues == r->d.nr_queues ? 0 : -1;
}

/* START_DEV returns once the kernel read every zone through the queues
 * and added the disk.
 */
static int
start_device (struct run *r)
{
  int v = zu_ctrl_cmd (&r->ctrl, ZU_CMD_START_DEV, r->dev_id, NULL, 0,
                       (uint64_t) getpid ());

  if (v < 0) {
    error ("START_DEV: %s%s", strerror (-v),
           v == -EINVAL ? " (the kernel refused the zone layout or the "
           "parameters; see dmesg)" : "");
    return -1;
  }
  r->started = true;
  return 0;
}

/* The elevator Linux gives null_blk of this configuration by default.
 * Before 6.10 a zoned queue required ELEVATOR_F_ZBD_SEQ_WRITE, so
 * elevator_init_mq took elevator_get_by_features: mq-deadline for null_blk
 * and ublk alike.  Since zone write plugging, elevator_get_default picks
 * mq-deadline only for one hardware queue or for tags shared between
 * hardware queues (BLK_MQ_F_TAG_HCTX_SHARED, null_blk's
 * shared_tag_bitmap).  null_init_tag_set adds null_blk's poll queue to
 * submit_queues, so it always has two or more; with shared_tags its
 * devices use the module's tag set, which has no shared bitmap.
 */
static const char *
nullb_default_scheduler (const struct zn_queue_config *q)
{
  struct utsname u;
  unsigned major = 0, minor = 0;

  if (uname (&u) == 0)
    sscanf (u.release, "%u.%u", &major, &minor);
  if (major < 6 || (major == 6 && minor < 10))
    return "mq-deadline";
  return q->shared_tag_bitmap && !q->shared_tags ? "mq-deadline" : "none";
}

/* ublk has one hardware queue per ublk queue and no poll queue, so with
 * one queue the kernel gives it mq-deadline where null_blk gets none.
 * The scheduler is set once, before the device is announced; a scheduler
 * other than the kernel's two defaults was chosen by someone (a udev
 * rule) and is left alone.  Failing to set it is not fatal: the device
 * works under either.
 */
static void
match_nullb_scheduler (struct run *r)
{
  const char *want = nullb_default_scheduler (&r->params.queue);
  char path[64], line[256] = "", *cur, *end;
  FILE *fp;
  int fd;

  snprintf (path, sizeof path, "/sys/block/ublkb%" PRIu32
            "/queue/scheduler", r->dev_id);
  fp = fopen (path, "r");
  if (fp == NULL || fgets (line, sizeof line, fp) == NULL) {
    fprintf (stderr, PROG ": warning: %s: %s; the I/O scheduler is the "
             "kernel's, not null_blk's (%s)\n", path,
             fp ? "empty" : strerror (errno), want);
    if (fp)
      fclose (fp);
    return;
  }
  fclose (fp);
  cur = strchr (line, '[');
  end = cur ? strchr (cur, ']') : NULL;
  if (cur == NULL || end == NULL)
    return;                     /* no scheduler can be set (NO_SCHED) */
  *end = '\0';
  cur++;
  if (strcmp (cur, want) == 0
      || (strcmp (cur, "none") != 0 && strcmp (cur, "mq-deadline") != 0))
    return;
  fd = open (path, O_WRONLY | O_CLOEXEC);
  if (fd == -1 || write (fd, want, strlen (want)) == -1)
    fprintf (stderr, PROG ": warning: %s: writing %s: %s; the I/O "
             "scheduler stays %s\n", path, want, strerror (errno), cur);
  if (fd != -1)
    close (fd);
}

static int
start_control_socket (struct run *r)
{
  const struct zn_params *p = &r->params;
  char err[256];

  if (no_control_socket)
    return 0;
  if (control_socket)
    snprintf (r->socket_path, sizeof r->socket_path, "%s", control_socket);
  else {
    if (mkdir (RUN_DIR, 0755) == -1 && errno != EEXIST) {
      error (RUN_DIR ": %s (use --control-socket=PATH or "
             "--no-control-socket)", strerror (errno));
      return -1;
    }
    snprintf (r->socket_path, sizeof r->socket_path,
              RUN_DIR "/ublkb%" PRIu32 ".sock", r->dev_id);
    r->default_socket = true;
  }
  r->control_socket = zu_control_socket_start (r->socket_path, r->dev, r->qs,
                                               &p->queue, &p->cfg,
                                               err, sizeof err);
  if (r->control_socket == NULL) {
    error ("%s", err);
    return -1;
  }
  return 0;
}

/* Stops what was started, in the order the kernel needs: STOP_DEV
 * drains in-flight I/O, so the queues keep serving until it returns;
 * DEL_DEV waits for the character device to be closed.
 */
static void
teardown (struct run *r)
{
  int v;

  /* Requests that fault settings hold for ever would keep STOP_DEV from
   * draining: they fail first, as ublk_drv fails them for a daemon that
   * died.
   */
  if (r->d.release_fd != -1)
    eventfd_write (r->d.release_fd, 1);
  if (r->started) {
    v = zu_ctrl_cmd (&r->ctrl, ZU_CMD_STOP_DEV, r->dev_id, NULL, 0, 0);
    if (v < 0)
      error ("STOP_DEV: %s", strerror (-v));
  }
  if (r->d.stop_fd != -1)
    eventfd_write (r->d.stop_fd, 1);
  for (unsigned q = 0; q < r->nr_queues; q++)
    if (connect_uri)
      zu_rqueue_join (r->rqueues[q]);
    else
      zu_queue_join (r->queues[q]);
  free (r->queues);
  free (r->rqueues);
  if (r->started) {
    char served[512];

    zu_served_summary (&r->d, served, sizeof served);
    fprintf (stderr, PROG ": /dev/ublkb%" PRIu32 " served %s\n", r->dev_id,
             served);
  }
  if (r->d.stop_fd != -1)
    close (r->d.stop_fd);
  if (r->d.release_fd != -1)
    close (r->d.release_fd);
  if (r->d.cdev_fd != -1)
    close (r->d.cdev_fd);
  if (r->added) {
    v = zu_ctrl_cmd (&r->ctrl, ZU_CMD_DEL_DEV, r->dev_id, NULL, 0, 0);
    if (v < 0)
      error ("DEL_DEV: %s", strerror (-v));
  }
  zu_ctrl_close (&r->ctrl);
  zu_control_socket_stop (r->control_socket);
  if (r->default_socket)
    rmdir (RUN_DIR);            /* unless another instance uses it */
  if (r->pidfile_written)
    unlink (pidfile);
}

/* ---- daemon ------------------------------------------------------------- */

/* The parent stays until the device is started, so that what it prints
 * (the device path) is usable the moment it exits, and its exit status
 * says whether starting worked.  ublk binds each queue to the thread
 * that fetched it, so the process that serves must be the one that sets
 * the device up: hence a fork before anything is created in the kernel.
 */
static int
daemonize (struct run *r)
{
  int fds[2];
  pid_t pid;

  if (pipe2 (fds, O_CLOEXEC) == -1) {
    error ("pipe: %s", strerror (errno));
    return -1;
  }
  fflush (stdout);
  pid = fork ();
  if (pid == -1) {
    error ("fork: %s", strerror (errno));
    return -1;
  }
  if (pid > 0) {
    char line[256];
    ssize_t n;
    int status = 0;

    close (fds[1]);
    n = read (fds[0], line, sizeof line - 1);
    if (n > 0) {
      fwrite (line, 1, (size_t) n, stdout);
      exit (fflush (stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE);
    }
    while (waitpid (pid, &status, 0) == -1 && errno == EINTR)
      ;
    exit (WIFEXITED (status) && WEXITSTATUS (status) != 0
          ? WEXITSTATUS (status) : EXIT_FAILURE);
  }
  close (fds[0]);
  r->ready_fd = fds[1];
  setsid ();
  return 0;
}

/* Tells the user (and the parent) that the device is there. */
static int
announce (struct run *r)
{
  char line[64];
  int n = snprintf (line, sizeof line, "/dev/ublkb%" PRIu32 "\n", r->dev_id);

  if (pidfile) {
    int e = zn_write_pidfile (pidfile);

    if (e < 0) {
      error ("-P %s: %s", pidfile, strerror (-e));
      return -1;
    }
    r->pidfile_written = true;
  }
  if (connect_uri)
    fprintf (stderr, PROG ": /dev/ublkb%" PRIu32 " started; its zones are "
             "on %s (%u queue%s of %u tags)\n", r->dev_id, connect_uri,
             r->d.nr_queues, r->d.nr_queues == 1 ? "" : "s", r->d.depth);
  if (r->control_socket)
    fprintf (stderr, PROG ": /dev/ublkb%" PRIu32 " started; control: "
             "zonednull info 'nbd+unix:///" ZN_DEFAULT_DEVICE "?socket=%s'\n",
             r->dev_id, r->socket_path);
  if (r->ready_fd == -1) {
    fputs (line, stdout);
    fflush (stdout);
    return 0;
  }
  if (write (r->ready_fd, line, (size_t) n) != n)
    return -1;
  close (r->ready_fd);
  r->ready_fd = -1;
  /* The parent is gone: nobody reads our output any more. */
  int null = open ("/dev/null", O_RDWR);
  if (null != -1) {
    dup2 (null, STDIN_FILENO);
    dup2 (null, STDOUT_FILENO);
    dup2 (null, STDERR_FILENO);
    if (null > STDERR_FILENO)
      close (null);
  }
  return 0;
}

/* ---- main --------------------------------------------------------------- */

static int
create_model (struct run *r)
{
  struct zn_queue_config *qcfg = &r->params.queue;
  char err[512] = "";

  r->dev = zn_dev_create (&r->params.cfg, err, sizeof err);
  if (r->dev == NULL) {
    error ("%s", err[0] ? err : strerror (errno));
    return -1;
  }
  r->backing_dir = zn_dev_backing_dir (r->dev) != NULL;
  if (params_apply (&r->params, r->dev, err, sizeof err) < 0) {
    error ("%s", err);
    return -1;
  }
  r->d.dev = r->dev;
  r->d.generation = zn_dev_generation (r->dev);
  r->d.geo = zn_dev_geometry (r->dev);
  if (check_geometry (r->d.geo, &r->params.cfg) == -1)
    return -1;
  r->tagset = zn_tagset_create (qcfg);
  r->qs = r->tagset ? zn_queues_create (r->tagset, qcfg) : NULL;
  if (r->qs == NULL) {
    error ("out of memory for %" PRIu32 " tags", qcfg->hw_queue_depth);
    return -1;
  }
  /* Queue q of the model is ublk queue q. */
  for (unsigned q = 0; q < qcfg->submit_queues; q++)
    zn_queues_attach (r->qs);
  r->d.qs = r->qs;
  r->d.timed = zn_queue_timed (qcfg);
  r->d.nr_queues = qcfg->submit_queues;
  r->d.depth = qcfg->hw_queue_depth;
  r->d.buf_bytes = io_buf_bytes (r->d.geo);
  {
    uint64_t dirty;

    zn_cache_stats (r->dev, &r->cache_size, &dirty);
  }
  return 0;
}

/* --connect: the device is the server's.  Its geometry and limits come
 * from the control header, its queues and write cache from the header's
 * queue section (when the server has one); --queues and --depth
 * override the queues.
 */
static int
connect_remote (struct run *r)
{
  struct zn_control_info info;
  struct zn_control_queue_info qi;
  struct zn_geometry *g = &r->rgeo;
  char why[1024] = "";
  struct zn_client *c = zn_client_connect_timeout (connect_uri,
                                                   timeout_s * 1000u, why,
                                                   sizeof why);
  unsigned queues = 1, depth = 64;
  int v;

  if (c == NULL) {
    bool tls = strncmp (connect_uri, "nbds", 4) == 0;

    error ("--connect=%s: %s%s", connect_uri, why,
           tls ? " (TLS was asked for: the server refused it, or the "
           "certificates or PSK do not match)" : "");
    return -1;
  }
  v = zn_client_info (c, &info);
  if (v < 0) {
    error ("--connect=%s: %s", connect_uri, zn_client_error (c));
    zn_client_close (c);
    return -1;
  }
  if (zn_client_queue_info (c, &qi) == 0) {
    queues = qi.submit_queues ? qi.submit_queues : 1;
    depth = qi.hw_queue_depth ? qi.hw_queue_depth : 64;
    r->cache_size = qi.cache_size;
    r->params.queue.shared_tags = (qi.queue_flags
                                   & ZN_QUEUE_F_SHARED_TAGS) != 0;
    r->params.queue.shared_tag_bitmap = (qi.queue_flags
                                         & ZN_QUEUE_F_SHARED_TAG_BITMAP) != 0;
  }
  /* What tells the same device from another when it comes back. */
  v = zn_client_generation (c, &r->d.generation);
  if (v < 0 && (reconnect_s || recovery || recover || v != -EOPNOTSUPP)) {
    error ("%s%s: %s%s", reconnect_s ? "--reconnect: " : recovery
           ? "--recovery: " : recover ? "--recover: " : "", connect_uri,
           zn_client_error (c), v == -EOPNOTSUPP ? "; without a generation "
           "the same device cannot be told from another" : "");
    zn_client_close (c);
    return -1;
  }
  zn_client_close (c);
  if (info.max_append_sectors == 0) {
    error ("--connect=%s: the server has no zone append (an older "
           "zonednull): zoned ublk devices need it", connect_uri);
    return -1;
  }
  *g = (struct zn_geometry) {
    .capacity = info.capacity, .zone_sectors = info.zone_sectors,
    .zone_capacity = info.zone_capacity, .nr_zones = info.nr_zones,
    .nr_conv = info.nr_conv, .max_open = info.max_open,
    .max_active = info.max_active, .block_size = info.block_size,
    .max_sectors = info.max_sectors,
    .max_append_sectors = info.max_append_sectors,
    .memory_backed = (info.flags & ZN_CONTROL_F_MEMORY_BACKED) != 0,
    .kernel = (enum zn_kernel) ((info.flags & ZN_CONTROL_KERNEL_MASK)
                                >> ZN_CONTROL_KERNEL_SHIFT),
    .fua = (info.flags & ZN_CONTROL_F_NO_FUA) == 0,
  };
  r->backing_dir = (info.flags & ZN_CONTROL_F_BACKING_DIR) != 0;
  if (info.flags & ZN_CONTROL_F_READONLY) {
    error ("--connect=%s: the server is read-only: a zoned device that "
           "refuses every write is of no use", connect_uri);
    return -1;
  }
  if (check_geometry (g, &r->params.cfg) == -1)
    return -1;
  if (opt_queues)
    queues = opt_queues;
  if (opt_depth)
    depth = opt_depth;
  if (queues > ZU_MAX_NR_QUEUES)
    queues = ZU_MAX_NR_QUEUES;
  if (depth > ZU_MAX_QUEUE_DEPTH)
    depth = ZU_MAX_QUEUE_DEPTH;
  r->params.queue.submit_queues = queues;
  r->params.queue.hw_queue_depth = depth;
  r->d.geo = g;
  r->d.nr_queues = queues;
  r->d.depth = depth;
  r->d.buf_bytes = io_buf_bytes (g);
  r->d.timeout_s = timeout_s;
  r->d.reconnect_s = reconnect_s;
  return 0;
}

static void
destroy_model (struct run *r)
{
  if (r->qs)
    for (unsigned q = 0; q < r->params.queue.submit_queues; q++)
      zn_queues_detach (r->qs, q);
  zn_queues_destroy (r->qs);
  zn_tagset_destroy (r->tagset);
  zn_dev_destroy (r->dev);
}

/* Until a stop signal; with --stats, SIGUSR1 prints each queue's counts. */
static int
wait_for_stop (struct run *r)
{
  sigset_t set;
  int sig, e;

  sigemptyset (&set);
  sigaddset (&set, SIGTERM);
  sigaddset (&set, SIGINT);
  sigaddset (&set, SIGHUP);
  sigaddset (&set, SIGQUIT);
  if (stats)
    sigaddset (&set, SIGUSR1);
  while ((e = sigwait (&set, &sig)) == 0 && sig == SIGUSR1)
    for (unsigned q = 0; q < r->nr_queues; q++)
      zu_ring_print_stats (connect_uri ? zu_rqueue_ring (r->rqueues[q])
                                       : zu_queue_ring (r->queues[q]),
                           connect_uri != NULL);
  return e;
}

/* Creates, starts and serves the device until a stop signal. */
static int
serve (struct run *r)
{
  int v;

  if ((v = zu_ctrl_open (&r->ctrl)) < 0) {
    error (ZU_CONTROL_DEVICE ": %s", strerror (-v));
    return -1;
  }
  if (recovery && !connect_uri && !r->backing_dir) {
    error ("--recover%s: the zones are in this process's memory and die "
           "with it; recovery needs them to outlive it (backing_dir= or "
           "--connect)", recover ? "" : "y");
    return -1;
  }
  if (recover) {
    if (check_features (r) == -1 || recover_device (r) == -1
        || open_cdev (r) == -1)
      return -1;
  }
  else if (check_features (r) == -1 || add_device (r) == -1
           || open_cdev (r) == -1 || set_params (r) == -1)
    return -1;
  r->d.stop_fd = eventfd (0, EFD_CLOEXEC);
  r->d.release_fd = eventfd (0, EFD_CLOEXEC);
  if (r->d.stop_fd == -1 || r->d.release_fd == -1) {
    error ("eventfd: %s", strerror (errno));
    return -1;
  }
  r->d.dev_id = r->dev_id;
  if (start_queues (r) == -1
      || (!connect_uri && start_control_socket (r) == -1)
      || (recover ? end_recovery (r) : start_device (r)) == -1)
    return -1;
  /* A device taken over keeps the scheduler it had. */
  if (!recover)
    match_nullb_scheduler (r);
  if (announce (r) == -1)
    return -1;
  wait_for_stop (r);
  return 0;
}

static void
usage (FILE *fp)
{
  fputs ("Usage: zonednull-ublk [OPTIONS] [KEY=VALUE...]\n"
         "       zonednull-ublk [OPTIONS] --connect=URI\n"
         "Exposes Linux null_blk's zoned device model as /dev/ublkbN through\n"
         "the ublk driver (Linux 6.6+, ublk_drv, root).\n"
         "\n"
         "Options:\n"
         " -f, --foreground          do not become a daemon\n"
         " -P, --pidfile FILE        write the PID once the device is started\n"
         "     --control-socket PATH serve nullb0 and nullb0/control over NBD\n"
         "                           on this Unix socket (default\n"
         "                           " RUN_DIR "/ublkbN.sock)\n"
         "     --no-control-socket   no control socket\n"
         " -c, --connect URI         the zones live on this zonednull server\n"
         "                           (nbd://HOST[:PORT]/[EXPORT],\n"
         "                           nbd+unix:///[EXPORT]?socket=PATH, TLS)\n"
         "     --timeout SECONDS     with --connect: fail a request the\n"
         "                           server does not answer in time (30)\n"
         "     --reconnect SECONDS   with --connect: when the server is lost\n"
         "                           or late, hold the requests and connect\n"
         "                           again to the same device for up to\n"
         "                           SECONDS (0, the default: fail them)\n"
         "     --recovery            let a new zonednull-ublk take the device\n"
         "                           over if this one dies (ublk user\n"
         "                           recovery; the kernel holds its I/O)\n"
         "     --recover N           take over /dev/ublkbN, whose daemon\n"
         "                           died, serving the same device (same\n"
         "                           --connect, or the same backing_dir)\n"
         "     --queues N            with --connect: ublk queues, one NBD\n"
         "                           connection each (the server's\n"
         "                           submit_queues)\n"
         "     --depth N             with --connect: tags per queue (the\n"
         "                           server's hw_queue_depth)\n"
         "     --stats               count each queue's io_uring_enter calls,\n"
         "                           CQEs and requests, time each request;\n"
         "                           print a line per queue on stderr at\n"
         "                           SIGUSR1 and at exit (needs -f to be seen)\n"
         " -h, --help                this text\n"
         " -V, --version             the version\n"
         "\n"
         "Prints the device path (/dev/ublkbN) on stdout once it is started.\n"
         "\n"
         "Device parameters, KEY=VALUE, as zonednull-server's (see\n"
         "nbdkit-zonednull-plugin(1)); nr_devices must be 1:\n", fp);
  params_print_help (fp);
  fputs ("\nSee zonednull-ublk(8).\n", fp);
}

static bool timeout_set;

static int
parse_count (const char *opt, const char *arg, unsigned min, unsigned max,
             unsigned *out)
{
  char *end;
  unsigned long v;

  errno = 0;
  v = strtoul (arg, &end, 10);
  if (errno || end == arg || *end || v < min || v > max) {
    error ("%s=%s: expected a whole number from %u to %u", opt, arg, min,
           max);
    return -1;
  }
  *out = (unsigned) v;
  if (strcmp (opt, "--timeout") == 0 || strcmp (opt, "--reconnect") == 0)
    timeout_set = true;
  return 0;
}

static int
parse_args (int argc, char **argv, struct zn_params *p)
{
  static const struct option long_options[] = {
    { "foreground", no_argument, NULL, 'f' },
    { "pidfile", required_argument, NULL, 'P' },
    { "control-socket", required_argument, NULL, 'C' },
    { "no-control-socket", no_argument, NULL, 'N' },
    { "connect", required_argument, NULL, 'c' },
    { "timeout", required_argument, NULL, 'T' },
    { "reconnect", required_argument, NULL, 'R' },
    { "recovery", no_argument, NULL, 'Y' },
    { "recover", required_argument, NULL, 'y' },
    { "queues", required_argument, NULL, 'Q' },
    { "depth", required_argument, NULL, 'D' },
    { "stats", no_argument, NULL, 'S' },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 },
  };
  char err[512] = "";
  int c;

  while ((c = getopt_long (argc, argv, "fP:c:hV", long_options, NULL))
         != -1) {
    switch (c) {
    case 'f': foreground = true; break;
    case 'P': pidfile = optarg; break;
    case 'C': control_socket = optarg; break;
    case 'N': no_control_socket = true; break;
    case 'c': connect_uri = optarg; break;
    case 'T':
      if (parse_count ("--timeout", optarg, 1, 86400, &timeout_s) == -1)
        return 2;
      break;
    case 'R':
      if (parse_count ("--reconnect", optarg, 0, 86400, &reconnect_s) == -1)
        return 2;
      break;
    case 'Y': recovery = true; break;
    case 'y': {
      unsigned id;

      if (parse_count ("--recover", optarg, 0, INT32_MAX, &id) == -1)
        return 2;
      recover = true;
      recovery = true;
      recover_id = id;
      break;
    }
    case 'Q':
      if (parse_count ("--queues", optarg, 1, ZU_MAX_NR_QUEUES,
                       &opt_queues) == -1)
        return 2;
      break;
    case 'D':
      if (parse_count ("--depth", optarg, 1, ZU_MAX_QUEUE_DEPTH,
                       &opt_depth) == -1)
        return 2;
      break;
    case 'S': stats = true; break;
    case 'h': usage (stdout); exit (EXIT_SUCCESS);
    case 'V': printf (PROG " %s\n", PACKAGE_VERSION); exit (EXIT_SUCCESS);
    default: usage (stderr); return 2;
    }
  }
  if (connect_uri) {
    /* The server defines the device. */
    if (optind < argc) {
      const char *eq = strchr (argv[optind], '=');

      error ("%.*s: device parameters are the server's with --connect; "
             "set them where %s is served", eq ? (int) (eq - argv[optind])
             : (int) strlen (argv[optind]), argv[optind], connect_uri);
      return EXIT_FAILURE;
    }
    if (control_socket || no_control_socket) {
      error ("--control-socket and --no-control-socket are for the "
             "in-process device: with --connect, use the server (%s) "
             "for zone control", connect_uri);
      return EXIT_FAILURE;
    }
    return 0;
  }
  if (timeout_set || opt_queues || opt_depth) {
    error ("--timeout, --reconnect, --queues and --depth go with "
           "--connect; without it, use irqmode, submit_queues and "
           "hw_queue_depth");
    return EXIT_FAILURE;
  }
  for (int i = optind; i < argc; i++)
    if (params_set (p, argv[i], err, sizeof err) < 0) {
      error ("%s", err);
      return EXIT_FAILURE;
    }
  if (params_check (p, err, sizeof err) < 0) {
    error ("%s", err);
    return EXIT_FAILURE;
  }
  return check_expressible (p) == -1 ? EXIT_FAILURE : 0;
}

int
main (int argc, char **argv)
{
  struct run r = { .ready_fd = -1,
                   .d = { .cdev_fd = -1, .stop_fd = -1, .release_fd = -1 } };
  sigset_t stop;
  int status;

  r.ctrl.fd = -1;
  pthread_mutex_init (&r.d.lock, NULL);
  pthread_cond_init (&r.d.cond, NULL);
  params_init (&r.params);
  status = parse_args (argc, argv, &r.params);
  r.d.stats = stats;
  if (status == 0 && ((connect_uri ? connect_remote (&r) : create_model (&r))
                      == -1 || preflight () == -1))
    status = EXIT_FAILURE;
  if (status == 0) {
    /* Stop signals wait for sigwait, in every thread created later. */
    sigemptyset (&stop);
    sigaddset (&stop, SIGTERM);
    sigaddset (&stop, SIGINT);
    sigaddset (&stop, SIGHUP);
    sigaddset (&stop, SIGQUIT);
    if (stats)
      sigaddset (&stop, SIGUSR1);
    pthread_sigmask (SIG_BLOCK, &stop, NULL);
    signal (SIGPIPE, SIG_IGN);
    if ((!foreground && daemonize (&r) == -1) || serve (&r) == -1)
      status = EXIT_FAILURE;
    teardown (&r);
  }
  destroy_model (&r);
  params_free (&r.params);
  pthread_cond_destroy (&r.d.cond);
  pthread_mutex_destroy (&r.d.lock);
  return status;
}
