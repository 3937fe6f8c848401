/* SPDX-License-Identifier: BSD-3-Clause */
/* The model's failure reasons: their texts and the errno rules every
 * front end shares (errors.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>

#include "model/errors.h"

enum zn_reason
zn_reason_of (int err)
{
  switch (err) {
  case EIO: return ZN_REASON_IO;
  case ETOOMANYREFS: return ZN_REASON_OPEN_LIMIT;
  case EOVERFLOW: return ZN_REASON_ACTIVE_LIMIT;
  case ETIMEDOUT: return ZN_REASON_PIPELINE_TIMEOUT;
  case EBUSY: return ZN_REASON_PIPELINE_BUSY;
  case ENOSPC: return ZN_REASON_NO_SPACE;
  case ENOMEM: return ZN_REASON_NO_MEMORY;
  case EOPNOTSUPP: return ZN_REASON_NOT_SUPPORTED;
  default: return ZN_REASON_NONE;
  }
}

enum zn_reason
zn_pipeline_reason (int err)
{
  return err == EIO ? ZN_REASON_PIPELINE_FAILED : zn_reason_of (err);
}

const char *
zn_reason_text (enum zn_reason why)
{
  static const char *const text[] = {
    [ZN_REASON_NONE] = "",
    [ZN_REASON_MISALIGNED] = "not aligned to the logical block size "
      "(or, for a zone operation, to zones)",
    [ZN_REASON_OUT_OF_RANGE] = "past the end of the device",
    [ZN_REASON_EMPTY] = "no sectors",
    [ZN_REASON_NOT_SUPPORTED] = "not supported",
    [ZN_REASON_NOT_AT_WP] = "not at the zone's write pointer",
    [ZN_REASON_PAST_CAPACITY] = "past the zone's capacity",
    [ZN_REASON_FULL] = "the zone is FULL",
    [ZN_REASON_READONLY] = "the zone is READONLY",
    [ZN_REASON_OFFLINE] = "the zone is OFFLINE",
    [ZN_REASON_CONVENTIONAL] = "the zone is conventional",
    [ZN_REASON_NOT_ZONE_START] = "a zone append must start at a zone's "
      "first sector",
    [ZN_REASON_APPEND_TOO_LONG] = "longer than max_append_sectors",
    [ZN_REASON_BAD_TRANSITION] = "not allowed in the zone's condition",
    [ZN_REASON_PLUG_STALE] = "the zone write plug awaits a zone report "
      "after a failed write",
    [ZN_REASON_BAD_BLOCK] = "a bad block",
    [ZN_REASON_IO] = "the backing store failed",
    [ZN_REASON_OPEN_LIMIT] = "open zones exceeded",
    [ZN_REASON_ACTIVE_LIMIT] = "active zones exceeded",
    [ZN_REASON_PIPELINE_TIMEOUT] = "pipelined write: the write pointer "
      "did not reach it within pipeline_wait_ms",
    [ZN_REASON_PIPELINE_BUSY] = "pipelined write: pipeline_max_waiting "
      "writes already wait on this zone",
    [ZN_REASON_PIPELINE_FAILED] = "pipelined write: the zone changed or "
      "a write before it failed while it waited",
    [ZN_REASON_NO_SPACE] = "no space left for the data",
    [ZN_REASON_NO_MEMORY] = "out of memory",
    [ZN_REASON_INJECTED] = "injected by a fault rule",
  };

  if ((unsigned) why >= sizeof text / sizeof text[0] || text[why] == NULL)
    return "unknown reason";
  return text[why];
}

int
zn_block_errno (int err)
{
  return err == ETIMEDOUT || err == EBUSY ? EIO : err;
}

const char *
zn_error_text (char *buf, size_t len, int err, enum zn_reason why)
{
  int sent = zn_block_errno (err);

  snprintf (buf, len, "%s%s%s%s%s", zn_errno_name (err),
            sent != err ? ", sent as " : "",
            sent != err ? zn_errno_name (sent) : "",
            why != ZN_REASON_NONE ? ": " : "", zn_reason_text (why));
  return buf;
}

const char *
zn_request_error_text (char *buf, size_t len, const char *what,
                       uint64_t offset, uint64_t count, uint64_t zone_bytes,
                       int err, enum zn_reason why)
{
  uint64_t first = offset / zone_bytes;
  uint64_t last = count ? (offset + count - 1) / zone_bytes : first;
  char text[256], zones[64] = "";

  zn_error_text (text, sizeof text, err, why);
  if (count && first == last)
    snprintf (zones, sizeof zones, " in zone %" PRIu64, first);
  else if (count)
    snprintf (zones, sizeof zones, " in zones %" PRIu64 " to %" PRIu64,
              first, last);
  if (count)
    snprintf (buf, len, "%s: offset %" PRIu64 " length %" PRIu64 "%s: %s",
              what, offset, count, zones, text);
  else
    snprintf (buf, len, "%s: %s", what, text);
  return buf;
}
