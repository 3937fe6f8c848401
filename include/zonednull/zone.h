/* SPDX-License-Identifier: BSD-3-Clause */
/* zonednull: zones as a client sees them.  The types of a zone report and
 * of a zone operation, shared by the device model and libzonednull-client.
 *
 * Units follow the kernel: everything is in 512-byte sectors whatever the
 * device's logical block size.
 */
#ifndef ZONEDNULL_ZONE_H
#define ZONEDNULL_ZONE_H

#include <stdint.h>

#define ZN_SECTOR_SHIFT 9
#define ZN_SECTOR_SIZE 512

/* The kernels whose null_blk is modelled: the ones the real-kernel tier
 * verifies.  Versions in between are not guessed at.  The control
 * header's flags carry the one a device emulates (ZN_CONTROL_KERNEL_MASK).
 */
enum zn_kernel {
  ZN_KERNEL_6_1 = 0,        /* Debian 12 */
  ZN_KERNEL_6_12,           /* Debian 13, bookworm-backports */
  ZN_KERNEL_7_3,            /* trixie-backports */
};

/* Zone types and conditions carry the kernel's (blkzoned.h) values. */
enum zn_zone_type {
  ZN_ZONE_CONVENTIONAL = 1,
  ZN_ZONE_SEQWRITE_REQ = 2,
};

enum zn_zone_cond {
  ZN_COND_NOT_WP = 0x0,
  ZN_COND_EMPTY = 0x1,
  ZN_COND_IMP_OPEN = 0x2,
  ZN_COND_EXP_OPEN = 0x3,
  ZN_COND_CLOSED = 0x4,
  ZN_COND_READONLY = 0xD,
  ZN_COND_FULL = 0xE,
  ZN_COND_OFFLINE = 0xF,
};

/* One zone as a zone report shows it (all in sectors, wp absolute). */
struct zn_zone {
  uint64_t start;
  uint64_t len;
  uint64_t capacity;
  uint64_t wp;              /* all-ones for READONLY and OFFLINE zones */
  uint8_t type;             /* enum zn_zone_type */
  uint8_t cond;             /* enum zn_zone_cond */
};

enum zn_zone_op {
  ZN_OP_OPEN,
  ZN_OP_CLOSE,
  ZN_OP_FINISH,
  ZN_OP_RESET,
};

/* The bad block table, the kernel's struct badblocks: at most
 * ZN_BADBLOCKS_MAX entries of at most ZN_BADBLOCKS_MAX_LEN sectors.
 */
#define ZN_BADBLOCKS_MAX 512        /* PAGE_SIZE / 8 with 4 KiB pages */
#define ZN_BADBLOCKS_MAX_LEN 512    /* sectors in one entry */

/* Short names for logs and reports: "EMPTY", "IMP_OPEN", ..., "reset".
 * Inline, so that clients which do not link the model (the CLI, the
 * client library, the fio engine) have them too.
 */
static inline const char *
zn_cond_name (uint8_t cond)
{
  switch (cond) {
  case ZN_COND_NOT_WP: return "NOT_WP";
  case ZN_COND_EMPTY: return "EMPTY";
  case ZN_COND_IMP_OPEN: return "IMP_OPEN";
  case ZN_COND_EXP_OPEN: return "EXP_OPEN";
  case ZN_COND_CLOSED: return "CLOSED";
  case ZN_COND_READONLY: return "READONLY";
  case ZN_COND_FULL: return "FULL";
  case ZN_COND_OFFLINE: return "OFFLINE";
  default: return "UNKNOWN";
  }
}

static inline const char *
zn_op_name (enum zn_zone_op op)
{
  switch (op) {
  case ZN_OP_OPEN: return "open";
  case ZN_OP_CLOSE: return "close";
  case ZN_OP_FINISH: return "finish";
  case ZN_OP_RESET: return "reset";
  default: return "unknown";
  }
}

#endif /* ZONEDNULL_ZONE_H */
