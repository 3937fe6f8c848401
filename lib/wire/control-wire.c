/* SPDX-License-Identifier: BSD-3-Clause */
/* Byte layout of the control channel (see include/zonednull/control.h).
 * Shared by the server side and the client library, so the format is
 * written down in exactly one place.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "wire/control-wire.h"
#include "wire/fault-rule.h"
#include "wire/wlog-format.h"

static uint64_t
get64 (const unsigned char *p)
{
  uint64_t v = 0;
  for (int i = 0; i < 8; i++)
    v = (v << 8) | p[i];
  return v;
}

static uint32_t
get32 (const unsigned char *p)
{
  return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3];
}

static void
put64 (unsigned char *p, uint64_t v)
{
  for (int i = 7; i >= 0; i--, v >>= 8)
    p[i] = (unsigned char) v;
}

static void
put32 (unsigned char *p, uint32_t v)
{
  for (int i = 3; i >= 0; i--, v >>= 8)
    p[i] = (unsigned char) v;
}

void
zn_control_encode_header (void *page, const struct zn_control_info *info)
{
  unsigned char *p = page;

  memset (p, 0, ZN_CONTROL_HEADER_SIZE);
  put64 (p + 0, ZN_CONTROL_MAGIC);
  put32 (p + 8, ZN_CONTROL_VERSION);
  put32 (p + 12, ZN_CONTROL_HEADER_SIZE);
  put32 (p + 16, ZN_CONTROL_ZONE_SIZE);
  put32 (p + 20, info->nr_zones);
  put64 (p + 24, info->capacity);
  put64 (p + 32, info->zone_sectors);
  put64 (p + 40, info->zone_capacity);
  put32 (p + 48, info->nr_conv);
  put32 (p + 52, info->max_open);
  put32 (p + 56, info->max_active);
  put32 (p + 60, info->block_size);
  put32 (p + 64, info->max_sectors);
  put32 (p + 68, info->flags);
  put32 (p + 72, info->imp_open);
  put32 (p + 76, info->exp_open);
  put32 (p + 80, info->closed);
  put32 (p + 84, info->max_append_sectors);
  put64 (p + 88, info->result_seq);
  put32 (p + 96, info->result_op);
  put32 (p + 100, info->result_errno);
  put64 (p + 104, info->result_sector);
  put64 (p + 112, info->result_nr_sectors);
}

int
zn_control_decode_header (const void *page, struct zn_control_info *info)
{
  const unsigned char *p = page;

  if (get64 (p) != ZN_CONTROL_MAGIC || get32 (p + 8) != ZN_CONTROL_VERSION
      || get32 (p + 12) != ZN_CONTROL_HEADER_SIZE
      || get32 (p + 16) != ZN_CONTROL_ZONE_SIZE)
    return -EPROTO;
  *info = (struct zn_control_info) {
    .version = get32 (p + 8),
    .nr_zones = get32 (p + 20),
    .capacity = get64 (p + 24),
    .zone_sectors = get64 (p + 32),
    .zone_capacity = get64 (p + 40),
    .nr_conv = get32 (p + 48),
    .max_open = get32 (p + 52),
    .max_active = get32 (p + 56),
    .block_size = get32 (p + 60),
    .max_sectors = get32 (p + 64),
    .flags = get32 (p + 68),
    .imp_open = get32 (p + 72),
    .exp_open = get32 (p + 76),
    .closed = get32 (p + 80),
    .max_append_sectors = get32 (p + 84),
    .result_seq = get64 (p + 88),
    .result_op = get32 (p + 96),
    .result_errno = get32 (p + 100),
    .result_sector = get64 (p + 104),
    .result_nr_sectors = get64 (p + 112),
  };
  return 0;
}

static void
put_queue_stats (unsigned char *p, const struct zn_control_queue_stats *s)
{
  put32 (p + 0, s->in_use);
  put32 (p + 4, s->peak);
  put64 (p + 8, s->waited);
  put64 (p + 16, s->completed);
  put32 (p + 24, s->connections);
  put32 (p + 28, 0);
}

static void
get_queue_stats (const unsigned char *p, struct zn_control_queue_stats *s)
{
  *s = (struct zn_control_queue_stats) {
    .in_use = get32 (p + 0),
    .peak = get32 (p + 4),
    .waited = get64 (p + 8),
    .completed = get64 (p + 16),
    .connections = get32 (p + 24),
  };
}

void
zn_control_encode_queues (void *page, const struct zn_control_queue_info *q)
{
  unsigned char *p = page;
  uint32_t nq = q->submit_queues < ZN_CONTROL_MAX_QUEUES
    ? q->submit_queues : ZN_CONTROL_MAX_QUEUES;

  put32 (p + 68, get32 (p + 68) | ZN_CONTROL_F_QUEUES);
  put32 (p + 120, ZN_CONTROL_QUEUE_ENTRIES - ZN_CONTROL_QUEUES_OFFSET
         + nq * ZN_CONTROL_QUEUE_ENTRY_SIZE);
  put32 (p + 124, q->queue_flags);
  put32 (p + 128, q->device_index);
  put32 (p + 132, q->nr_devices);
  put32 (p + 136, q->irqmode);
  put32 (p + 140, q->hw_queue_depth);
  put64 (p + 144, q->completion_nsec);
  put32 (p + 152, nq);
  put32 (p + 156, q->tag_pools);
  put32 (p + 160, q->mbps);
  put32 (p + 164, q->pipeline_wait_ms);
  put32 (p + 168, q->pipeline_max_waiting);
  put32 (p + 172, q->pipeline_waiting);
  put64 (p + 176, q->pipeline_waited);
  put64 (p + 184, q->pipeline_timeouts);
  put64 (p + 192, q->pipeline_failed);
  put_queue_stats (p + 200, &q->device);
  put32 (p + 232, q->nr_badblocks);
  put64 (p + 240, q->cache_size);
  put64 (p + 248, q->cache_dirty);
  for (uint32_t i = 0; i < nq; i++)
    put_queue_stats (p + ZN_CONTROL_QUEUE_ENTRIES
                     + i * ZN_CONTROL_QUEUE_ENTRY_SIZE, &q->queues[i]);
}

int
zn_control_decode_queues (const void *page, struct zn_control_queue_info *q)
{
  const unsigned char *p = page;
  uint32_t nq = get32 (p + 152);

  if (!(get32 (p + 68) & ZN_CONTROL_F_QUEUES) || nq > ZN_CONTROL_MAX_QUEUES
      || get32 (p + 120) < ZN_CONTROL_QUEUE_ENTRIES - ZN_CONTROL_QUEUES_OFFSET
         + nq * ZN_CONTROL_QUEUE_ENTRY_SIZE)
    return -ENOENT;
  memset (q, 0, sizeof *q);
  q->queue_flags = get32 (p + 124);
  q->device_index = get32 (p + 128);
  q->nr_devices = get32 (p + 132);
  q->irqmode = get32 (p + 136);
  q->hw_queue_depth = get32 (p + 140);
  q->completion_nsec = get64 (p + 144);
  q->submit_queues = nq;
  q->tag_pools = get32 (p + 156);
  q->mbps = get32 (p + 160);
  q->pipeline_wait_ms = get32 (p + 164);
  q->pipeline_max_waiting = get32 (p + 168);
  q->pipeline_waiting = get32 (p + 172);
  q->pipeline_waited = get64 (p + 176);
  q->pipeline_timeouts = get64 (p + 184);
  q->pipeline_failed = get64 (p + 192);
  get_queue_stats (p + 200, &q->device);
  q->nr_badblocks = get32 (p + 232);
  q->cache_size = get64 (p + 240);
  q->cache_dirty = get64 (p + 248);
  for (uint32_t i = 0; i < nq; i++)
    get_queue_stats (p + ZN_CONTROL_QUEUE_ENTRIES
                     + i * ZN_CONTROL_QUEUE_ENTRY_SIZE, &q->queues[i]);
  return 0;
}

void
zn_control_encode_zone (void *desc, const struct zn_zone *zone)
{
  unsigned char *p = desc;

  memset (p, 0, ZN_CONTROL_ZONE_SIZE);
  put64 (p + 0, zone->start);
  put64 (p + 8, zone->len);
  put64 (p + 16, zone->capacity);
  put64 (p + 24, zone->wp);
  p[32] = zone->type;
  p[33] = zone->cond;
}

void
zn_control_decode_zone (const void *desc, struct zn_zone *zone)
{
  const unsigned char *p = desc;

  *zone = (struct zn_zone) {
    .start = get64 (p + 0),
    .len = get64 (p + 8),
    .capacity = get64 (p + 16),
    .wp = get64 (p + 24),
    .type = p[32],
    .cond = p[33],
  };
}

void
zn_control_encode_command (void *buf, enum zn_command op,
                           uint64_t sector, uint64_t nr_sectors, uint64_t arg)
{
  unsigned char *p = buf;

  put32 (p + 0, ZN_COMMAND_MAGIC);
  put32 (p + 4, (uint32_t) op);
  put64 (p + 8, sector);
  put64 (p + 16, nr_sectors);
  put64 (p + 24, arg);
}

int
zn_control_decode_command (const void *buf, enum zn_command *op,
                           uint64_t *sector, uint64_t *nr_sectors, uint64_t *arg)
{
  const unsigned char *p = buf;
  uint32_t code = get32 (p + 4);

  if (get32 (p) != ZN_COMMAND_MAGIC || code < ZN_CMD_OPEN
      || code > ZN_CMD_FAULT_CLEAR)
    return -EINVAL;
  *op = (enum zn_command) code;
  *sector = get64 (p + 8);
  *nr_sectors = get64 (p + 16);
  *arg = get64 (p + 24);
  return 0;
}

int
zn_control_errlog_name (char *buf, size_t len, const char *device,
                        uint64_t errlog)
{
  if (errlog == 0)
    return -EINVAL;
  if (device == NULL || *device == '\0')
    device = ZN_DEFAULT_DEVICE;
  return snprintf (buf, len, "%s" ZN_ERRLOG_INFIX "%016" PRIx64,
                   device, errlog);
}

int
zn_control_parse_errlog_name (const char *name, size_t len,
                              const char *device, uint64_t *errlog)
{
  size_t dl = strlen (device), il = strlen (ZN_ERRLOG_INFIX);
  uint64_t id = 0;

  if (len < dl + il || memcmp (name, device, dl) != 0
      || memcmp (name + dl, ZN_ERRLOG_INFIX, il) != 0)
    return 0;
  name += dl + il;
  len -= dl + il;
  if (len != ZN_ERRLOG_ID_DIGITS)
    return -EINVAL;
  for (size_t i = 0; i < len; i++) {
    char ch = name[i];
    unsigned v;

    if (ch >= '0' && ch <= '9')
      v = (unsigned) (ch - '0');
    else if (ch >= 'a' && ch <= 'f')
      v = (unsigned) (ch - 'a' + 10);
    else if (ch >= 'A' && ch <= 'F')
      v = (unsigned) (ch - 'A' + 10);
    else
      return -EINVAL;
    id = id << 4 | v;
  }
  if (id == 0)
    return -EINVAL;
  *errlog = id;
  return 1;
}

void
zn_control_encode_errlog_errno (void *buf, uint64_t errlog,
                                uint32_t nbd_cmd, uint64_t offset,
                                uint64_t count)
{
  unsigned char *p = buf;

  zn_control_encode_command (p, ZN_CMD_ERRLOG_ERRNO, offset, count, 0);
  put64 (p + ZN_COMMAND_SIZE, errlog);
  put32 (p + ZN_COMMAND_SIZE + 8, nbd_cmd);
  put32 (p + ZN_COMMAND_SIZE + 12, 0);
}

bool
zn_control_mark_name_ok (const char *name, size_t len)
{
  if (len == 0 || len > ZN_WLOG_MARK_MAX)
    return false;
  for (size_t i = 0; i < len; i++)
    if (name[i] <= ' ' || name[i] > '~')
      return false;
  return true;
}

bool
zn_control_log_name_ok (const char *name, size_t len)
{
  /* A leading '-' would read as an option to the tools that take the
   * file's name next (rm, cp, zonednull replay).
   */
  if (len == 0 || len > 255 || name[0] == '.' || name[0] == '-')
    return false;
  for (size_t i = 0; i < len; i++)
    if (name[i] == '\0'
        || !strchr ("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                    "0123456789._-", name[i]))
      return false;
  return true;
}

int
zn_control_keep_check (uint64_t keep, uint64_t seed, char *why,
                       size_t whylen)
{
  if (keep > ZN_POWER_KEEP_TORN) {
    snprintf (why, whylen, "keep policy %" PRIu64 " is none of %d none, "
              "%d all, %d random, %d torn", keep, ZN_POWER_KEEP_NONE,
              ZN_POWER_KEEP_ALL, ZN_POWER_KEEP_RANDOM, ZN_POWER_KEEP_TORN);
    return -EINVAL;
  }
  if (keep != ZN_POWER_KEEP_RANDOM && keep != ZN_POWER_KEEP_TORN
      && seed != 0) {
    snprintf (why, whylen, "the seed (%" PRIu64 ") must be 0 unless the "
              "keep policy is %d, random, or %d, torn", seed,
              ZN_POWER_KEEP_RANDOM, ZN_POWER_KEEP_TORN);
    return -EINVAL;
  }
  return 0;
}

uint64_t
zn_control_faults_offset (uint32_t nr_zones, uint32_t max_append_sectors)
{
  uint64_t end = ZN_CONTROL_HEADER_SIZE
    + (uint64_t) nr_zones * ZN_CONTROL_ZONE_SIZE;
  uint64_t append = ZN_COMMAND_SIZE
    + ((uint64_t) max_append_sectors << ZN_SECTOR_SHIFT);

  if (append > end)
    end = append;
  return (end + ZN_CONTROL_HEADER_SIZE - 1) / ZN_CONTROL_HEADER_SIZE
    * ZN_CONTROL_HEADER_SIZE;
}

void
zn_fault_record_encode (const struct zn_fault_rule *rule, unsigned char *rec)
{
  memset (rec, 0, ZN_CONTROL_FAULT_SIZE);
  put32 (rec, rule->id);
  put64 (rec + 8, rule->matched);
  put64 (rec + 16, rule->hits);
  zn_fault_rule_format (rule, (char *) rec + ZN_CONTROL_FAULT_TEXT,
                        ZN_CONTROL_FAULT_SIZE - ZN_CONTROL_FAULT_TEXT);
}

bool
zn_fault_record_decode (const unsigned char *rec, uint32_t *id,
                        uint64_t *matched, uint64_t *hits, char *text,
                        size_t textlen)
{
  const char *t = (const char *) rec + ZN_CONTROL_FAULT_TEXT;
  size_t n = strnlen (t, ZN_CONTROL_FAULT_SIZE - ZN_CONTROL_FAULT_TEXT);

  *id = get32 (rec);
  if (*id == 0 || n == ZN_CONTROL_FAULT_SIZE - ZN_CONTROL_FAULT_TEXT
      || n >= textlen)
    return false;
  for (size_t i = 0; i < n; i++)
    if (t[i] < 0x20 || t[i] > 0x7e)
      return false;
  *matched = get64 (rec + 8);
  *hits = get64 (rec + 16);
  memcpy (text, t, n + 1);
  return true;
}
