/* SPDX-License-Identifier: BSD-3-Clause */
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

#include "frontend/control.h"
#include "model/crash.h"
#include "model/fault.h"
#include "model/queue.h"
#include "util/escape.h"
#include "wire/control-wire.h"
#include "powerfail/wlog.h"
#include "wire/wlog-format.h"
#include "model/zoned.h"

struct logged_error {
  uint32_t nbd_cmd;
  uint64_t offset;
  uint64_t count;
  int err;
};

/* An error log of its own, for the data connections opened with its id
 * (see control.h).  It lives in a hash
 * table by id while attached or kept; an error log with no connection is
 * also on the idle list, most recently detached first, and the oldest is
 * dropped once ZN_CONTROL_ERRLOGS are idle.
 */
struct zn_control_errlog {
  uint64_t id;
  unsigned refs;                /* connections attached */
  struct zn_control_errlog *hnext;
  struct zn_control_errlog *iprev, *inext;
  unsigned log_next;
  unsigned log_used;
  struct logged_error log[ZN_CONTROL_ERRLOG_SIZE];
};

#define ERRLOG_BUCKETS 1024

struct zn_control {
  struct zn_dev *dev;
  /* Guards the device-wide log and every error log. */
  pthread_mutex_t log_lock;
  struct logged_error log[ZN_CONTROL_ERROR_LOG];   /* a ring */
  unsigned log_next;
  unsigned log_used;
  struct zn_control_errlog *buckets[ERRLOG_BUCKETS];
  struct zn_control_errlog *idle_head, *idle_tail;
  unsigned nr_idle;
  /* The queue section: the device's queues and fixed settings. */
  struct zn_queues *qs;
  struct zn_control_queue_info qinfo;
  /* Fault rules: whether the front end carries them out, and whether it
   * can hold a request back (a rule's timeout or delay).
   */
  bool faults, faults_hold;
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
  for (unsigned i = 0; i < ERRLOG_BUCKETS; i++)
    while (ctl->buckets[i]) {
      struct zn_control_errlog *s = ctl->buckets[i];

      ctl->buckets[i] = s->hnext;
      free (s);
    }
  pthread_mutex_destroy (&ctl->log_lock);
  free (ctl);
}

/* The largest APPEND must fit in one write at offset 0, and on a device
 * of few zones its data is longer than the descriptors.
 */
static uint64_t
faults_offset (const struct zn_control *ctl)
{
  const struct zn_geometry *geo = zn_dev_geometry (ctl->dev);

  return zn_control_faults_offset (geo->nr_zones, geo->max_append_sectors);
}

uint64_t
zn_control_size (const struct zn_control *ctl)
{
  return faults_offset (ctl)
    + (ctl->faults ? ZN_CONTROL_FAULT_RULES * ZN_CONTROL_FAULT_SIZE : 0);
}

void
zn_control_allow_faults (struct zn_control *ctl, bool hold)
{
  ctl->faults = true;
  ctl->faults_hold = hold;
}

/* A ring of size entries; called with log_lock held. */
static void
ring_add (struct logged_error *ring, unsigned size, unsigned *next,
          unsigned *used, uint32_t nbd_cmd, uint64_t offset, uint64_t count,
          int err)
{
  ring[*next] = (struct logged_error) {
    .nbd_cmd = nbd_cmd, .offset = offset, .count = count, .err = err,
  };
  *next = (*next + 1) % size;
  if (*used < size)
    (*used)++;
}

/* The most recent failure of that request wins: a client asks right after
 * its own request failed.
 */
static int
ring_find (const struct logged_error *ring, unsigned size, unsigned next,
           unsigned used, uint32_t nbd_cmd, uint64_t offset, uint64_t count)
{
  for (unsigned i = 1; i <= used; i++) {
    const struct logged_error *e = &ring[(next + size - i) % size];

    if (e->nbd_cmd == nbd_cmd && e->offset == offset && e->count == count)
      return e->err;
  }
  return 0;
}

static int
find_logged_error (struct zn_control *ctl, uint32_t nbd_cmd,
                   uint64_t offset, uint64_t count)
{
  int err;

  pthread_mutex_lock (&ctl->log_lock);
  err = ring_find (ctl->log, ZN_CONTROL_ERROR_LOG, ctl->log_next,
                   ctl->log_used, nbd_cmd, offset, count);
  pthread_mutex_unlock (&ctl->log_lock);
  return err;
}

/* ---- error logs --------------------------------------------------------- */

static unsigned
bucket_of (uint64_t id)
{
  /* Clients pick ids at random; the multiply spreads any that are not. */
  return (unsigned) ((id * UINT64_C(0x9e3779b97f4a7c15)) >> 54)
    % ERRLOG_BUCKETS;
}

/* With log_lock held. */
static struct zn_control_errlog *
errlog_find (struct zn_control *ctl, uint64_t id)
{
  struct zn_control_errlog *s = ctl->buckets[bucket_of (id)];

  while (s && s->id != id)
    s = s->hnext;
  return s;
}

static void
idle_unlink (struct zn_control *ctl, struct zn_control_errlog *s)
{
  if (s->iprev)
    s->iprev->inext = s->inext;
  else
    ctl->idle_head = s->inext;
  if (s->inext)
    s->inext->iprev = s->iprev;
  else
    ctl->idle_tail = s->iprev;
  s->iprev = s->inext = NULL;
  ctl->nr_idle--;
}

static void
errlog_drop (struct zn_control *ctl, struct zn_control_errlog *s)
{
  struct zn_control_errlog **pp = &ctl->buckets[bucket_of (s->id)];

  while (*pp != s)
    pp = &(*pp)->hnext;
  *pp = s->hnext;
  idle_unlink (ctl, s);
  free (s);
}

struct zn_control_errlog *
zn_control_errlog_attach (struct zn_control *ctl, uint64_t id)
{
  struct zn_control_errlog *s;

  pthread_mutex_lock (&ctl->log_lock);
  s = errlog_find (ctl, id);
  if (s) {
    if (s->refs == 0)
      idle_unlink (ctl, s);
  }
  else if ((s = calloc (1, sizeof *s)) != NULL) {
    unsigned b = bucket_of (id);

    s->id = id;
    s->hnext = ctl->buckets[b];
    ctl->buckets[b] = s;
  }
  if (s)
    s->refs++;
  pthread_mutex_unlock (&ctl->log_lock);
  return s;
}

void
zn_control_errlog_detach (struct zn_control *ctl, struct zn_control_errlog *s)
{
  if (s == NULL)
    return;
  pthread_mutex_lock (&ctl->log_lock);
  if (--s->refs == 0) {
    s->inext = ctl->idle_head;
    s->iprev = NULL;
    if (ctl->idle_head)
      ctl->idle_head->iprev = s;
    else
      ctl->idle_tail = s;
    ctl->idle_head = s;
    ctl->nr_idle++;
    while (ctl->nr_idle > ZN_CONTROL_ERRLOGS)
      errlog_drop (ctl, ctl->idle_tail);
  }
  pthread_mutex_unlock (&ctl->log_lock);
}

void
zn_control_errlog_add (struct zn_control *ctl, struct zn_control_errlog *log,
                       uint32_t nbd_cmd, uint64_t offset, uint64_t count,
                       int err)
{
  pthread_mutex_lock (&ctl->log_lock);
  if (log)
    ring_add (log->log, ZN_CONTROL_ERRLOG_SIZE, &log->log_next,
              &log->log_used, nbd_cmd, offset, count, err);
  else
    ring_add (ctl->log, ZN_CONTROL_ERROR_LOG, &ctl->log_next, &ctl->log_used,
              nbd_cmd, offset, count, err);
  pthread_mutex_unlock (&ctl->log_lock);
}

static int
find_errlog_error (struct zn_control *ctl, uint64_t id, uint32_t nbd_cmd,
                   uint64_t offset, uint64_t count)
{
  struct zn_control_errlog *s;
  int err = 0;

  pthread_mutex_lock (&ctl->log_lock);
  s = errlog_find (ctl, id);
  if (s)
    err = ring_find (s->log, ZN_CONTROL_ERRLOG_SIZE, s->log_next,
                     s->log_used, nbd_cmd, offset, count);
  pthread_mutex_unlock (&ctl->log_lock);
  return err;
}

static void
render_header (struct zn_control *ctl, const struct zn_control_conn *conn,
               bool readonly, const struct zn_counters *c,
               unsigned char *page)
{
  const struct zn_geometry *geo = zn_dev_geometry (ctl->dev);

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
      | (readonly ? ZN_CONTROL_F_READONLY : 0)
      | (geo->fua ? 0 : ZN_CONTROL_F_NO_FUA)
      | (zn_dev_zone_full (ctl->dev) ? ZN_CONTROL_F_ZONE_FULL : 0)
      | (geo->append_emulated ? ZN_CONTROL_F_APPEND_EMULATED : 0)
      | (ctl->faults ? ZN_CONTROL_F_FAULTS : 0)
      | (zn_dev_backing_dir (ctl->dev) ? ZN_CONTROL_F_BACKING_DIR : 0)
      | ZN_CONTROL_F_POWER_KEEP | ZN_CONTROL_F_POWER_TORN
      | (uint32_t) geo->kernel << ZN_CONTROL_KERNEL_SHIFT,
    .imp_open = c->imp_open,
    .exp_open = c->exp_open,
    .closed = c->closed,
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

/* Copies the descriptors of zones (from zone first, got of them)
 * covering [offset, offset+count) of the zone area, zeros past them.
 */
static void
render_zones (const struct zn_zone *zones, uint64_t first, unsigned got,
              unsigned char *buf, uint64_t count, uint64_t offset)
{
  unsigned char desc[ZN_CONTROL_ZONE_SIZE];

  while (count) {
    uint64_t idx = offset / ZN_CONTROL_ZONE_SIZE;
    uint64_t in = offset % ZN_CONTROL_ZONE_SIZE;
    uint64_t n = ZN_CONTROL_ZONE_SIZE - in < count ? ZN_CONTROL_ZONE_SIZE - in : count;

    if (idx >= first + got) {
      memset (buf, 0, count);
      return;
    }
    zn_control_encode_zone (desc, &zones[idx - first]);
    memcpy (buf, desc + in, n);
    buf += n;
    offset += n;
    count -= n;
  }
}

/* The fault table's bytes [off, off + len). */
static void
render_faults (struct zn_control *ctl, unsigned char *dst, uint64_t len,
               uint64_t off)
{
  struct zn_fault_rule rules[ZN_CONTROL_FAULT_RULES];
  size_t n = zn_fault_list (ctl->dev, rules, ZN_CONTROL_FAULT_RULES);
  unsigned char rec[ZN_CONTROL_FAULT_SIZE];

  if (n > ZN_CONTROL_FAULT_RULES)
    n = ZN_CONTROL_FAULT_RULES;
  while (len) {
    uint64_t i = off / ZN_CONTROL_FAULT_SIZE, in = off % ZN_CONTROL_FAULT_SIZE;
    uint64_t take = ZN_CONTROL_FAULT_SIZE - in < len
      ? ZN_CONTROL_FAULT_SIZE - in : len;

    if (i < n)
      zn_fault_record_encode (&rules[i], rec);
    else
      memset (rec, 0, sizeof rec);
    memcpy (dst, rec + in, take);
    dst += take;
    off += take;
    len -= take;
  }
}

/* One read is one snapshot: the header's counters and every descriptor
 * in the read come from one instant (zn_report_snapshot), so a client
 * that reads the header and the zones together sees them agree.
 */
int
zn_control_pread (struct zn_control *ctl, const struct zn_control_conn *conn,
                  bool readonly, void *buf, uint64_t count, uint64_t offset)
{
  const struct zn_geometry *geo = zn_dev_geometry (ctl->dev);
  unsigned char *dst = buf;
  bool header = offset < ZN_CONTROL_HEADER_SIZE && count;
  uint64_t end = offset + count, first = 0, nz = 0;
  struct zn_zone batch[ZONE_BATCH], *zones = batch;
  struct zn_counters counters;
  unsigned got = 0;

  if (offset > zn_control_size (ctl) || count > zn_control_size (ctl) - offset)
    return -EINVAL;
  if (end > ZN_CONTROL_HEADER_SIZE) {
    uint64_t zoff = offset > ZN_CONTROL_HEADER_SIZE
      ? offset - ZN_CONTROL_HEADER_SIZE : 0;
    uint64_t last = (end - ZN_CONTROL_HEADER_SIZE - 1) / ZN_CONTROL_ZONE_SIZE;

    first = zoff / ZN_CONTROL_ZONE_SIZE;
    if (first < geo->nr_zones)
      nz = (last < geo->nr_zones ? last + 1 : geo->nr_zones) - first;
  }
  if (nz > ZONE_BATCH && (zones = malloc (nz * sizeof *zones)) == NULL)
    return -ENOMEM;
  if (nz)
    got = zn_report_snapshot (ctl->dev, (uint32_t) first, zones,
                              (unsigned) nz, header ? &counters : NULL);
  else if (header)
    zn_get_counters (ctl->dev, &counters);
  if (header) {
    unsigned char page[ZN_CONTROL_HEADER_SIZE];
    uint64_t n = ZN_CONTROL_HEADER_SIZE - offset < count
      ? ZN_CONTROL_HEADER_SIZE - offset : count;

    render_header (ctl, conn, readonly, &counters, page);
    memcpy (dst, page + offset, n);
    dst += n;
    offset += n;
    count -= n;
  }
  if (count) {
    uint64_t table = faults_offset (ctl);
    uint64_t n = offset < table ? (table - offset < count ? table - offset
                                                          : count) : 0;

    if (n)
      render_zones (zones, first, got, dst, n,
                    offset - ZN_CONTROL_HEADER_SIZE);
    if (count > n)
      render_faults (ctl, dst + n, count - n, offset + n - table);
  }
  if (zones != batch)
    free (zones);
  return 0;
}

/* FAULT_ADD: the rule's text follows the command, as a MARK's name does.
 * A text that is not a rule is a malformed command; the message names
 * the word, escaped, since a client chose it.
 */
static int
fault_add (struct zn_control *ctl, struct zn_control_conn *conn,
           const unsigned char *data, uint64_t count, uint64_t sector,
           uint64_t nr_sectors, uint64_t arg, char *why, size_t whylen)
{
  const struct zn_geometry *geo = zn_dev_geometry (ctl->dev);
  const char *text = (const char *) data + ZN_COMMAND_SIZE;
  uint64_t len = count - ZN_COMMAND_SIZE;
  char spec[ZN_FAULT_SPEC_MAX], err[512], safe[1024];
  struct zn_fault_rule rule;
  uint32_t id = 0;
  int r;

  if (sector || nr_sectors || arg) {
    snprintf (why, whylen, "FAULT_ADD: sector, nr_sectors and the argument "
              "must be zero; the rule follows the command");
    return -EINVAL;
  }
  if (len == 0 || len >= sizeof spec) {
    snprintf (why, whylen, "FAULT_ADD: the rule must be 1 to %d bytes; got "
              "%" PRIu64, ZN_FAULT_SPEC_MAX - 1, len);
    return -EINVAL;
  }
  for (uint64_t i = 0; i < len; i++)
    if (text[i] < 0x20 || text[i] > 0x7e) {
      snprintf (why, whylen, "FAULT_ADD: the rule must be printable ASCII; "
                "byte %" PRIu64 " is not", i);
      return -EINVAL;
    }
  memcpy (spec, text, len);
  spec[len] = '\0';
  if (zn_fault_rule_parse (spec, geo->capacity, geo->zone_sectors, &rule,
                           err, sizeof err) < 0) {
    zn_escape (safe, sizeof safe, err, strlen (err));
    snprintf (why, whylen, "FAULT_ADD: %s", safe);
    return -EINVAL;
  }
  if ((rule.timeout || rule.delay_ms) && !ctl->faults_hold)
    r = -EOPNOTSUPP;
  else
    r = zn_fault_add (ctl->dev, &rule, &id);
  conn->err = (uint32_t) -r;
  conn->seq++;
  conn->op = ZN_CMD_FAULT_ADD;
  conn->sector = id;
  conn->nr_sectors = 0;
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
  case ZN_CMD_POWER_CYCLE: {
    /* power_cycle_args has checked both; the wire's values are the
     * model's (crash.h).
     */
    struct zn_keep keep = {
      .kind = (enum zn_keep_kind) nr_sectors,
      .seed = sector,
    };

    return zn_power_cycle_keep (ctl->dev, &keep);
  }
  case ZN_CMD_LOG_STOP:
    return zn_wlog_stop (ctl->dev);
  case ZN_CMD_GENERATION:      /* its answer is the result's sector */
    return 0;
  case ZN_CMD_FAULT_CLEAR:
    if (nr_sectors || arg || sector > UINT32_MAX)
      return -EINVAL;
    return zn_fault_clear (ctl->dev, (uint32_t) sector);
  case ZN_CMD_FAULT_ADD:        /* carries a rule: see fault_add */
  case ZN_CMD_APPEND:           /* carries data: see append */
  case ZN_CMD_ERRLOG_ERRNO:    /* carries a payload: see errlog_errno */
  case ZN_CMD_MARK:            /* carry a name: see log_command */
  case ZN_CMD_LOG_START:
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

/* The fault settings' verdict on a zone command: a requeue is asked
 * again after blk-mq's resource delay (the client sees only the wait), and
 * what is to be held goes to conn->hold_ns for the front end.  With no
 * fault rules taken, every command passes.
 */
#define REQUEUE_DELAY_NS 3000000

static void
fault_begin (struct zn_control *ctl, struct zn_control_conn *conn,
             enum zn_fault_op op, uint64_t sector, uint64_t nr_sectors,
             struct zn_fault *f)
{
  uint64_t bytes = op == ZN_FOP_APPEND ? nr_sectors << ZN_SECTOR_SHIFT : 0;

  conn->hold_ns = 0;
  *f = (struct zn_fault) { .action = ZN_FAULT_PASS };
  if (!ctl->faults)
    return;
  for (;;) {
    zn_fault_decide (ctl->dev, op, sector, nr_sectors, bytes, f);
    if (f->action != ZN_FAULT_REQUEUE)
      break;
    conn->hold_ns += REQUEUE_DELAY_NS;
  }
  conn->hold_ns = f->action == ZN_FAULT_TIMEOUT ? ZN_CONTROL_HOLD_FOREVER
                                                : conn->hold_ns + f->delay_ns;
}

/* A zone command (OPEN, CLOSE, FINISH, RESET) under the fault settings. */
static int
zone_command (struct zn_control *ctl, struct zn_control_conn *conn,
              enum zn_command op, uint64_t sector, uint64_t nr_sectors,
              uint64_t arg)
{
  static const enum zn_fault_op fops[] = {
    [ZN_CMD_OPEN] = ZN_FOP_OPEN, [ZN_CMD_CLOSE] = ZN_FOP_CLOSE,
    [ZN_CMD_FINISH] = ZN_FOP_FINISH, [ZN_CMD_RESET] = ZN_FOP_RESET,
  };
  struct zn_fault f;
  int r;

  fault_begin (ctl, conn, fops[op], sector, nr_sectors, &f);
  r = f.action == ZN_FAULT_FAIL || f.action == ZN_FAULT_TIMEOUT ? 0
      : execute (ctl, op, sector, nr_sectors, arg);
  return zn_fault_outcome (ctl->dev, &f, fops[op], sector, r, NULL);
}

void
zn_control_complete (struct zn_control_conn *conn)
{
  zn_wlog_complete (conn->hold);
  conn->hold = NULL;
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
  {
    struct zn_fault f;
    bool later;

    fault_begin (ctl, conn, ZN_FOP_APPEND, sector, nr_sectors, &f);
    /* Answered later: the write log takes the append when it is. */
    later = conn->hold_ns != 0 && conn->hold_ns != ZN_CONTROL_HOLD_FOREVER;
    if (later) {
      zn_control_complete (conn);
      zn_wlog_defer ();
    }
    r = f.action == ZN_FAULT_FAIL || f.action == ZN_FAULT_TIMEOUT ? 0
        : zn_zone_append (ctl->dev, data + ZN_COMMAND_SIZE, sector,
                          nr_sectors, arg & ZN_APPEND_F_FUA, &landed);
    r = zn_fault_outcome (ctl->dev, &f, ZN_FOP_APPEND, landed, r, NULL);
    if (later)
      conn->hold = zn_wlog_deferred ();
  }
  conn->err = (uint32_t) -r;
  conn->seq++;
  conn->op = ZN_CMD_APPEND;
  conn->sector = r == 0 ? landed : sector;
  conn->nr_sectors = nr_sectors;
  return 0;
}

static uint64_t
payload64 (const unsigned char *p)
{
  uint64_t v = 0;

  for (int i = 0; i < 8; i++)
    v = v << 8 | p[i];
  return v;
}

static uint32_t
payload32 (const unsigned char *p)
{
  return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16
    | (uint32_t) p[2] << 8 | p[3];
}

/* ERRLOG_ERRNO: the error log's id and the NBD command type follow the
 * command, as an APPEND's data does.
 */
static int
errlog_errno (struct zn_control *ctl, struct zn_control_conn *conn,
              const unsigned char *data, uint64_t count, uint64_t offset,
              uint64_t length, uint64_t arg, char *why, size_t whylen)
{
  const unsigned char *p = data + ZN_COMMAND_SIZE;
  uint64_t id;

  if (count != ZN_COMMAND_SIZE + ZN_ERRLOG_ERRNO_SIZE) {
    snprintf (why, whylen, "ERRLOG_ERRNO must be one write of %d + %d bytes "
              "at offset 0, the command then the error log's id and the NBD "
              "command type; got %" PRIu64 " bytes", ZN_COMMAND_SIZE,
              ZN_ERRLOG_ERRNO_SIZE, count);
    return -EINVAL;
  }
  id = payload64 (p);
  if (arg != 0 || payload32 (p + 12) != 0) {
    snprintf (why, whylen, "ERRLOG_ERRNO: the argument and the payload's "
              "bytes 12 to 15 must be zero");
    return -EINVAL;
  }
  if (id == 0) {
    snprintf (why, whylen, "ERRLOG_ERRNO: error log 0 is none (ask "
              "DATA_ERRNO for plain connections)");
    return -EINVAL;
  }
  conn->err = (uint32_t) find_errlog_error (ctl, id, payload32 (p + 8),
                                            offset, length);
  conn->seq++;
  conn->op = ZN_CMD_ERRLOG_ERRNO;
  conn->sector = offset;
  conn->nr_sectors = length;
  return 0;
}

/* POWER_CYCLE's policy: old clients send 0, 0, which is none. */
static int
power_cycle_args (uint64_t sector, uint64_t nr_sectors, char *why,
                  size_t whylen)
{
  char rule[160];
  int r = zn_control_keep_check (nr_sectors, sector, rule, sizeof rule);

  if (r < 0)
    snprintf (why, whylen, "POWER_CYCLE: nr_sectors %" PRIu64 " (the keep "
              "policy) and sector %" PRIu64 " (its seed): %s", nr_sectors,
              sector, rule);
  return r;
}

/* MARK and LOG_START: the name follows the command, as an APPEND's data
 * does.  A bad name is a malformed command; the messages leave the name
 * out, since a client chose it.
 */
static int
log_command (struct zn_control *ctl, struct zn_control_conn *conn,
             enum zn_command op, const unsigned char *data, uint64_t count,
             uint64_t sector, uint64_t nr_sectors, uint64_t arg, char *why,
             size_t whylen)
{
  const char *what = op == ZN_CMD_MARK ? "MARK" : "LOG_START";
  const char *name = (const char *) data + ZN_COMMAND_SIZE;
  size_t len = count - ZN_COMMAND_SIZE;
  char err[512];
  int r;

  if (sector || nr_sectors || arg) {
    snprintf (why, whylen, "%s: sector, nr_sectors and the argument must be "
              "zero; the name follows the command", what);
    return -EINVAL;
  }
  if (op == ZN_CMD_MARK) {
    if (!zn_control_mark_name_ok (name, len)) {
      snprintf (why, whylen, "MARK: the name must be 1 to %d bytes of "
                "printable ASCII other than space; got %" PRIu64 " bytes",
                ZN_WLOG_MARK_MAX, (uint64_t) len);
      return -EINVAL;
    }
    r = zn_wlog_mark (ctl->dev, name, len);
  }
  else if ((r = zn_wlog_start_named (ctl->dev, name, len, err,
                                     sizeof err)) == -EINVAL) {
    snprintf (why, whylen, "%s", err);
    return -EINVAL;
  }
  else if (r == -EAGAIN)
    fprintf (stderr, "zonednull: %s\n", err);
  conn->err = (uint32_t) -r;
  conn->seq++;
  conn->op = op;
  conn->sector = 0;
  conn->nr_sectors = 0;
  return 0;
}

int
zn_control_pwrite (struct zn_control *ctl, struct zn_control_conn *conn,
                   const void *buf, uint64_t count, uint64_t offset,
                   char *why, size_t whylen)
{
  enum zn_command op;
  uint64_t sector, nr_sectors, arg;

  conn->hold_ns = 0;

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
  if (op == ZN_CMD_ERRLOG_ERRNO)
    return errlog_errno (ctl, conn, buf, count, sector, nr_sectors, arg,
                         why, whylen);
  if (op == ZN_CMD_MARK || op == ZN_CMD_LOG_START)
    return log_command (ctl, conn, op, buf, count, sector, nr_sectors, arg,
                        why, whylen);
  if ((op == ZN_CMD_FAULT_ADD || op == ZN_CMD_FAULT_CLEAR) && !ctl->faults) {
    snprintf (why, whylen, "FAULT_ADD and FAULT_CLEAR: this server does not "
              "inject faults (no ZN_CONTROL_F_FAULTS)");
    return -EINVAL;
  }
  if (op == ZN_CMD_FAULT_ADD)
    return fault_add (ctl, conn, buf, count, sector, nr_sectors, arg, why,
                      whylen);
  if (count != ZN_COMMAND_SIZE) {
    snprintf (why, whylen, "a command other than APPEND, ERRLOG_ERRNO, MARK, "
              "LOG_START and FAULT_ADD is exactly %d bytes (zonednull-control(5)); got %" PRIu64
              " bytes",
              ZN_COMMAND_SIZE, count);
    return -EINVAL;
  }
  if (op == ZN_CMD_POWER_CYCLE
      && power_cycle_args (sector, nr_sectors, why, whylen) < 0)
    return -EINVAL;

  if (op == ZN_CMD_GENERATION && (sector || nr_sectors || arg)) {
    snprintf (why, whylen, "GENERATION's sector, nr_sectors and argument "
              "are zero (zonednull-control(5))");
    return -EINVAL;
  }

  if (op >= ZN_CMD_OPEN && op <= ZN_CMD_RESET)
    conn->err = (uint32_t) -zone_command (ctl, conn, op, sector, nr_sectors,
                                          arg);
  else
    conn->err = (uint32_t) -execute (ctl, op, sector, nr_sectors, arg);
  if (op == ZN_CMD_GENERATION)
    sector = zn_dev_generation (ctl->dev);
  conn->seq++;
  conn->op = op;
  conn->sector = sector;
  conn->nr_sectors = nr_sectors;
  return 0;
}
