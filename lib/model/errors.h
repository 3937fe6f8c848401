/* SPDX-License-Identifier: BSD-3-Clause */
/* One vocabulary for the model's failures, for every front end.
 *
 * The model returns a negative errno, as the block layer would hand it to
 * an application, and says why in an enum zn_reason (zn_write_why and
 * friends in zoned.h).  Each front end translates the pair into its own
 * protocol (an NBD error and its message, an NVMe status, a ublk result)
 * from the reason, never by looking at the zone again afterwards: by
 * then another command may have changed it.
 */
#ifndef ZONEDNULL_LIB_ERRORS_H
#define ZONEDNULL_LIB_ERRORS_H

#include <stddef.h>
#include <stdint.h>

#include "util/errno-name.h"

enum zn_reason {
  ZN_REASON_NONE,               /* success, or an errno that says it all */
  /* EINVAL, the block layer's checks */
  ZN_REASON_MISALIGNED,         /* not whole logical blocks or zones */
  ZN_REASON_OUT_OF_RANGE,       /* past the end of the device */
  ZN_REASON_EMPTY,              /* no sectors */
  /* EOPNOTSUPP */
  ZN_REASON_NOT_SUPPORTED,      /* not a zone operation the device has */
  /* EIO, zone rules */
  ZN_REASON_NOT_AT_WP,          /* a write off the zone's write pointer */
  ZN_REASON_PAST_CAPACITY,      /* data past the zone's capacity */
  ZN_REASON_FULL,
  ZN_REASON_READONLY,
  ZN_REASON_OFFLINE,
  ZN_REASON_CONVENTIONAL,       /* a zone operation or append on one */
  ZN_REASON_NOT_ZONE_START,     /* an append that does not start a zone */
  ZN_REASON_APPEND_TOO_LONG,    /* more than max_append_sectors */
  ZN_REASON_BAD_TRANSITION,     /* no such transition from the zone's
                                   condition (open a FULL zone, ...) */
  ZN_REASON_PLUG_STALE,         /* the zone write plug refuses writes
                                   until a zone report after a failure */
  ZN_REASON_BAD_BLOCK,
  ZN_REASON_IO,                 /* the backing store failed */
  /* ETOOMANYREFS, EOVERFLOW */
  ZN_REASON_OPEN_LIMIT,
  ZN_REASON_ACTIVE_LIMIT,
  /* pipeline_zoned_writes: ETIMEDOUT, EBUSY, EIO */
  ZN_REASON_PIPELINE_TIMEOUT,
  ZN_REASON_PIPELINE_BUSY,
  ZN_REASON_PIPELINE_FAILED,    /* the zone was reset or finished, or a
                                   write at its wp failed, meanwhile */
  /* ENOSPC, ENOMEM */
  ZN_REASON_NO_SPACE,
  ZN_REASON_NO_MEMORY,
  /* any errno: a fault rule (fault.h) failed the request */
  ZN_REASON_INJECTED,
};

/* The reason an errno alone gives, for failures whose site said none:
 * the limits, the pipelined wait's own codes, store errors.
 */
enum zn_reason zn_reason_of (int err);
/* The reason for a pipelined write's wait that failed outside the model
 * (an event loop's zn_pipeline_begin, _poll or its bound): err is
 * ETIMEDOUT, EBUSY or EIO.
 */
enum zn_reason zn_pipeline_reason (int err);
/* A few words, e.g. "the zone is FULL"; "" for ZN_REASON_NONE. */
const char *zn_reason_text (enum zn_reason why);

/* The errno (positive) that reaches a user of the block device: a
 * pipelined write's ETIMEDOUT and EBUSY are EIO, as null_blk would fail
 * the write; every other errno is itself.  Messages and the control
 * channel's error logs keep the exact errno.
 */
int zn_block_errno (int err);

/* For a log line or an error reply: the errno's name, what a user of the
 * block device gets instead if that differs, and the reason, e.g.
 * "ETIMEDOUT, sent as EIO: pipelined write: ..." or "EIO: the zone is
 * FULL".  Returns buf.
 */
const char *zn_error_text (char *buf, size_t len, int err,
                           enum zn_reason why);

/* A failed request of count bytes at offset, for the NBD front ends'
 * logs and error replies: "pwrite: offset 1048576 length 4096 in zone 1:
 * EIO: not at the zone's write pointer" (zones A to B when it spans
 * more, none for a flush's count 0).  Returns buf.
 */
const char *zn_request_error_text (char *buf, size_t len, const char *what,
                                   uint64_t offset, uint64_t count,
                                   uint64_t zone_bytes, int err,
                                   enum zn_reason why);


#endif /* ZONEDNULL_LIB_ERRORS_H */
