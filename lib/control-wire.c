/* Byte layout of the control channel (see include/zonednull/control.h).
 * Shared by the server side and the client library, so the format is
 * written down in exactly one place.
 */
#include <errno.h>
#include <string.h>

#include "zonednull/control.h"
#include "zonednull/zoned.h"

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
    .result_seq = get64 (p + 88),
    .result_op = get32 (p + 96),
    .result_errno = get32 (p + 100),
    .result_sector = get64 (p + 104),
    .result_nr_sectors = get64 (p + 112),
  };
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

  if (get32 (p) != ZN_COMMAND_MAGIC || code < ZN_CMD_OPEN || code > ZN_CMD_DATA_ERRNO)
    return -EINVAL;
  *op = (enum zn_command) code;
  *sector = get64 (p + 8);
  *nr_sectors = get64 (p + 16);
  *arg = get64 (p + 24);
  return 0;
}
