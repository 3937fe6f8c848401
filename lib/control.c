/* The server side of the zone control channel: renders the header page
 * and the zone descriptors on reads, and executes commands on writes.
 * Any NBD server hosting the device model routes its control export here.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zonednull/control.h"
#include "zonednull/queue.h"
#include "zonednull/zoned.h"

struct logged_error {
  uint32_t nbd_cmd;
  uint64_t offset;
  uint64_t count;
  int err;
};

struct zn_control {
  struct zn_dev *dev;
  pthread_mutex_t log_lock;
  struct logged_error log[ZN_CONTROL_ERROR_LOG];   /* a ring */
  unsigned log_next;
  unsigned log_used;
  /* The queue section: the device's queues and fixed settings. */
  struct zn_queues *qs;
  struct zn_control_queue_info qinfo;
};

#define ZONE_BATCH 256

struct zn_control *
zn_control_create (struct zn_dev *dev)
{
  struct zn_control *ctl = calloc (1, sizeof *ctl);

  if (!ctl)
    return NULL;
  ctl->dev = dev;
  pthread_mutex_init (&ctl->log_lock, NULL);
  return ctl;
}

void
zn_control_set_queues (struct zn_control *ctl, struct zn_queues *qs,
                       const struct zn_queue_config *qcfg,
                       const struct zn_config *cfg,
                       uint32_t index, uint32_t nr_devices)
{
  ctl->qs = qs;
  ctl->qinfo = (struct zn_control_queue_info) {
    .queue_flags = (qcfg->shared_tags ? ZN_QUEUE_F_SHARED_TAGS : 0)
      | (qcfg->shared_tag_bitmap ? ZN_QUEUE_F_SHARED_TAG_BITMAP : 0)
      | (cfg->pipeline_zoned_writes ? ZN_QUEUE_F_PIPELINE : 0),
    .device_index = index,
    .nr_devices = nr_devices,
    .irqmode = qcfg->irqmode,
    .hw_queue_depth = qcfg->hw_queue_depth,
    .completion_nsec = qcfg->completion_nsec,
    .submit_queues = qcfg->submit_queues,
    .tag_pools = qcfg->shared_tag_bitmap ? 1 : qcfg->submit_queues,
    .mbps = qcfg->mbps,
    .pipeline_wait_ms = cfg->pipeline_wait_ms
      ? cfg->pipeline_wait_ms : ZN_PIPELINE_WAIT_MS,
    .pipeline_max_waiting = cfg->pipeline_max_waiting
      ? cfg->pipeline_max_waiting : ZN_PIPELINE_MAX_WAITING,
  };
}

static void
copy_stats (struct zn_control_queue_stats *to, const struct zn_queue_stats *from)
{
  *to = (struct zn_control_queue_stats) {
    .in_use = from->in_use, .peak = from->peak, .waited = from->waited,
    .completed = from->completed, .connections = from->connections,
  };
}

static void
render_queues (struct zn_control *ctl, unsigned char *page)
{
  struct zn_control_queue_info q = ctl->qinfo;
  struct zn_queue_stats dev, queues[ZN_CONTROL_MAX_QUEUES];
  struct zn_pipeline_stats pl;
  unsigned n;

  n = zn_queues_stats (ctl->qs, &dev, queues, ZN_CONTROL_MAX_QUEUES);
  copy_stats (&q.device, &dev);
  for (unsigned i = 0; i < n; i++)
    copy_stats (&q.queues[i], &queues[i]);
  zn_get_pipeline_stats (ctl->dev, &pl);
  q.pipeline_waiting = pl.waiting;
  q.pipeline_waited = pl.waited;
  q.pipeline_timeouts = pl.timeouts;
  q.pipeline_failed = pl.failed;
  q.nr_badblocks = (uint32_t) zn_badblocks_list (ctl->dev, NULL, NULL, 0);
  zn_cache_stats (ctl->dev, &q.cache_size, &q.cache_dirty);
  zn_control_encode_queues (page, &q);
}

void
zn_control_destroy (struct zn_control *ctl)
{
  if (!ctl)
    return;
  pthread_mutex_destroy (&ctl->log_lock);
  free (ctl);
}

/* The largest APPEND must fit in one write at offset 0, and on a device
 * of few zones its data is longer than the descriptors.
 */
uint64_t
zn_control_size (const struct zn_control *ctl)
{
  const struct zn_geometry *geo = zn_dev_geometry (ctl->dev);
  uint64_t end = ZN_CONTROL_HEADER_SIZE
    + (uint64_t) geo->nr_zones * ZN_CONTROL_ZONE_SIZE;
  uint64_t append = ZN_COMMAND_SIZE
    + ((uint64_t) geo->max_append_sectors << ZN_SECTOR_SHIFT);

  if (append > end)
    end = append;
  return (end + ZN_CONTROL_HEADER_SIZE - 1) / ZN_CONTROL_HEADER_SIZE
    * ZN_CONTROL_HEADER_SIZE;
}

void
zn_control_log_error (struct zn_control *ctl, uint32_t nbd_cmd,
                      uint64_t offset, uint64_t count, int err)
{
  pthread_mutex_lock (&ctl->log_lock);
  ctl->log[ctl->log_next] = (struct logged_error) {
    .nbd_cmd = nbd_cmd, .offset = offset, .count = count, .err = err,
  };
  ctl->log_next = (ctl->log_next + 1) % ZN_CONTROL_ERROR_LOG;
  if (ctl->log_used < ZN_CONTROL_ERROR_LOG)
    ctl->log_used++;
  pthread_mutex_unlock (&ctl->log_lock);
}

/* The most recent failure of that request wins: a client asks right after
 * its own request failed.
 */
static int
find_logged_error (struct zn_control *ctl, uint32_t nbd_cmd,
                   uint64_t offset, uint64_t count)
{
  int err = 0;

  pthread_mutex_lock (&ctl->log_lock);
  for (unsigned i = 1; i <= ctl->log_used; i++) {
    const struct logged_error *e =
      &ctl->log[(ctl->log_next + ZN_CONTROL_ERROR_LOG - i) % ZN_CONTROL_ERROR_LOG];

    if (e->nbd_cmd == nbd_cmd && e->offset == offset && e->count == count) {
      err = e->err;
      break;
    }
  }
  pthread_mutex_unlock (&ctl->log_lock);
  return err;
}

static void
render_header (struct zn_control *ctl, const struct zn_control_conn *conn,
               bool readonly, unsigned char *page)
{
  const struct zn_geometry *geo = zn_dev_geometry (ctl->dev);
  struct zn_counters counters;

  zn_get_counters (ctl->dev, &counters);
  zn_control_encode_header (page, &(struct zn_control_info) {
    .version = ZN_CONTROL_VERSION,
    .nr_zones = geo->nr_zones,
    .capacity = geo->capacity,
    .zone_sectors = geo->zone_sectors,
    .zone_capacity = geo->zone_capacity,
    .nr_conv = geo->nr_conv,
    .max_open = geo->max_open,
    .max_active = geo->max_active,
    .block_size = geo->block_size,
    .max_sectors = geo->max_sectors,
    .flags = (geo->memory_backed ? ZN_CONTROL_F_MEMORY_BACKED : 0)
      | (readonly ? ZN_CONTROL_F_READONLY : 0),
    .imp_open = counters.imp_open,
    .exp_open = counters.exp_open,
    .closed = counters.closed,
    .max_append_sectors = geo->max_append_sectors,
    .result_seq = conn->seq,
    .result_op = conn->op,
    .result_errno = conn->err,
    .result_sector = conn->sector,
    .result_nr_sectors = conn->nr_sectors,
  });
  if (ctl->qs)
    render_queues (ctl, page);
}

/* Copies descriptors covering [offset, offset+count) of the zone area,
 * zeros past the last zone.
 */
static void
render_zones (struct zn_control *ctl, unsigned char *buf,
              uint64_t count, uint64_t offset)
{
  const struct zn_geometry *geo = zn_dev_geometry (ctl->dev);
  struct zn_zone zones[ZONE_BATCH];
  unsigned char desc[ZN_CONTROL_ZONE_SIZE];

  while (count) {
    uint64_t idx = offset / ZN_CONTROL_ZONE_SIZE;
    uint64_t want = (offset % ZN_CONTROL_ZONE_SIZE + count + ZN_CONTROL_ZONE_SIZE - 1)
      / ZN_CONTROL_ZONE_SIZE;
    unsigned got;

    if (idx >= geo->nr_zones) {
      memset (buf, 0, count);
      return;
    }
    got = zn_report_zones (ctl->dev, idx * geo->zone_sectors, zones,
                           want < ZONE_BATCH ? (unsigned) want : ZONE_BATCH);
    for (unsigned i = 0; i < got && count; i++) {
      uint64_t in = offset % ZN_CONTROL_ZONE_SIZE;
      uint64_t n = ZN_CONTROL_ZONE_SIZE - in < count ? ZN_CONTROL_ZONE_SIZE - in : count;

      zn_control_encode_zone (desc, &zones[i]);
      memcpy (buf, desc + in, n);
      buf += n;
      offset += n;
      count -= n;
    }
  }
}

int
zn_control_pread (struct zn_control *ctl, const struct zn_control_conn *conn,
                  bool readonly, void *buf, uint64_t count, uint64_t offset)
{
  unsigned char *dst = buf;

  if (offset > zn_control_size (ctl) || count > zn_control_size (ctl) - offset)
    return -EINVAL;
  if (offset < ZN_CONTROL_HEADER_SIZE && count) {
    unsigned char page[ZN_CONTROL_HEADER_SIZE];
    uint64_t n = ZN_CONTROL_HEADER_SIZE - offset < count
      ? ZN_CONTROL_HEADER_SIZE - offset : count;

    render_header (ctl, conn, readonly, page);
    memcpy (dst, page + offset, n);
    dst += n;
    offset += n;
    count -= n;
  }
  if (count)
    render_zones (ctl, dst, count, offset - ZN_CONTROL_HEADER_SIZE);
  return 0;
}

static int
execute (struct zn_control *ctl, enum zn_command op,
         uint64_t sector, uint64_t nr_sectors, uint64_t arg)
{
  switch (op) {
  case ZN_CMD_OPEN:
    return zn_zone_mgmt (ctl->dev, ZN_OP_OPEN, sector, nr_sectors);
  case ZN_CMD_CLOSE:
    return zn_zone_mgmt (ctl->dev, ZN_OP_CLOSE, sector, nr_sectors);
  case ZN_CMD_FINISH:
    return zn_zone_mgmt (ctl->dev, ZN_OP_FINISH, sector, nr_sectors);
  case ZN_CMD_RESET:
    return zn_zone_mgmt (ctl->dev, ZN_OP_RESET, sector, nr_sectors);
  case ZN_CMD_READONLY:
    return zn_zone_set_readonly (ctl->dev, sector);
  case ZN_CMD_OFFLINE:
    return zn_zone_set_offline (ctl->dev, sector);
  case ZN_CMD_DATA_ERRNO:
    return -find_logged_error (ctl, (uint32_t) arg, sector, nr_sectors);
  case ZN_CMD_POWER_CYCLE:
    return zn_power_cycle (ctl->dev);
  case ZN_CMD_APPEND:           /* carries data: see append */
    break;
  case ZN_CMD_BADBLOCKS_SET:
  case ZN_CMD_BADBLOCKS_CLEAR:
    if (nr_sectors == 0 || sector + nr_sectors < sector)
      return -EINVAL;
    return op == ZN_CMD_BADBLOCKS_SET
      ? zn_badblocks_set (ctl->dev, sector, sector + nr_sectors - 1)
      : zn_badblocks_clear (ctl->dev, sector, sector + nr_sectors - 1);
  }
  return -EINVAL;
}

/* An APPEND's data follows its command in the same write, so the append
 * is one NBD request: no other command of the connection can come
 * between the data and its result.
 */
static int
append (struct zn_control *ctl, struct zn_control_conn *conn,
        const unsigned char *data, uint64_t count, uint64_t sector,
        uint64_t nr_sectors, uint64_t arg, char *why, size_t whylen)
{
  uint64_t data_len = count - ZN_COMMAND_SIZE;
  uint64_t landed = sector;
  int r;

  if (arg & ~(uint64_t) ZN_APPEND_F_FUA) {
    snprintf (why, whylen, "APPEND: unknown argument bits 0x%" PRIx64
              " (only bit 0, FUA, is defined)", arg & ~(uint64_t) ZN_APPEND_F_FUA);
    return -EINVAL;
  }
  if (nr_sectors > UINT64_MAX >> ZN_SECTOR_SHIFT
      || data_len != nr_sectors << ZN_SECTOR_SHIFT) {
    snprintf (why, whylen, "APPEND of %" PRIu64 " sectors must be one write "
              "of %d + 512 * %" PRIu64 " bytes at offset 0, the command then "
              "its data; got %" PRIu64 " bytes", nr_sectors, ZN_COMMAND_SIZE,
              nr_sectors, count);
    return -EINVAL;
  }
  r = zn_zone_append (ctl->dev, data + ZN_COMMAND_SIZE, sector, nr_sectors,
                      arg & ZN_APPEND_F_FUA, &landed);
  conn->err = (uint32_t) -r;
  conn->seq++;
  conn->op = ZN_CMD_APPEND;
  conn->sector = r == 0 ? landed : sector;
  conn->nr_sectors = nr_sectors;
  return 0;
}

int
zn_control_pwrite (struct zn_control *ctl, struct zn_control_conn *conn,
                   const void *buf, uint64_t count, uint64_t offset,
                   char *why, size_t whylen)
{
  enum zn_command op;
  uint64_t sector, nr_sectors, arg;

  if (offset != 0 || count < ZN_COMMAND_SIZE) {
    snprintf (why, whylen, "a command is one write at offset 0 of at least "
              "%d bytes (zonednull-control(5)); got %" PRIu64 " bytes at "
              "offset %" PRIu64, ZN_COMMAND_SIZE, count, offset);
    return -EINVAL;
  }
  if (zn_control_decode_command (buf, &op, &sector, &nr_sectors, &arg) < 0) {
    snprintf (why, whylen, "the command has a bad magic or an unknown op "
              "(zonednull-control(5))");
    return -EINVAL;
  }
  if (op == ZN_CMD_APPEND)
    return append (ctl, conn, buf, count, sector, nr_sectors, arg,
                   why, whylen);
  if (count != ZN_COMMAND_SIZE) {
    snprintf (why, whylen, "a command other than APPEND is exactly %d bytes "
              "(zonednull-control(5)); got %" PRIu64 " bytes",
              ZN_COMMAND_SIZE, count);
    return -EINVAL;
  }

  conn->err = (uint32_t) -execute (ctl, op, sector, nr_sectors, arg);
  conn->seq++;
  conn->op = op;
  conn->sector = sector;
  conn->nr_sectors = nr_sectors;
  return 0;
}
