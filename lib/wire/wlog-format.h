/* SPDX-License-Identifier: BSD-3-Clause */
/* The write log's file layout (doc/power-fail.md, section 1;
 * zonednull-log(5)): dm-log-writes' super and entries, with zone
 * operations as flag bits its readers skip or take as a discard.  Shared
 * by the writer (wlog.c) and the reader (wlog-read.c).
 */
#ifndef ZONEDNULL_WLOG_FORMAT_H
#define ZONEDNULL_WLOG_FORMAT_H

#include <stdint.h>

#define ZN_WLOG_MAGIC UINT64_C (0x6a736677736872)
#define ZN_WLOG_VERSION 1

/* dm-log-writes' own flags */
#define ZN_WLOG_FLUSH     (UINT64_C (1) << 0)
#define ZN_WLOG_FUA       (UINT64_C (1) << 1)
#define ZN_WLOG_DISCARD   (UINT64_C (1) << 2)
#define ZN_WLOG_MARK      (UINT64_C (1) << 3)
#define ZN_WLOG_METADATA  (UINT64_C (1) << 4)
/* zonednull's */
#define ZN_WLOG_APPEND    (UINT64_C (1) << 8)
#define ZN_WLOG_RESET     (UINT64_C (1) << 9)
#define ZN_WLOG_OPEN      (UINT64_C (1) << 10)
#define ZN_WLOG_CLOSE     (UINT64_C (1) << 11)
#define ZN_WLOG_FINISH    (UINT64_C (1) << 12)
#define ZN_WLOG_POWER     (UINT64_C (1) << 13)
#define ZN_WLOG_WP        (UINT64_C (1) << 14)
#define ZN_WLOG_RESTORE   (UINT64_C (1) << 15)
#define ZN_WLOG_SNAPSHOT  (UINT64_C (1) << 16)
#define ZN_WLOG_GEOMETRY  (UINT64_C (1) << 17)
#define ZN_WLOG_COND      (UINT64_C (1) << 18)

/* Block 0.  The rest of the block is zero. */
struct zn_wlog_super {
  uint64_t magic;
  uint64_t version;
  uint64_t nr_entries;
  uint32_t sectorsize;
} __attribute__ ((packed));

/* The start of each entry's block.  A mark's name (data_len bytes)
 * starts at byte 32 instead of zero and ref; the geometry's text
 * (data_len bytes) follows ref, at byte 48.
 */
struct zn_wlog_entry {
  uint64_t sector;
  uint64_t nr_sectors;
  uint64_t flags;
  uint64_t data_len;
  uint64_t zero;                /* dm-log-writes' readers want byte 32 0 */
  uint64_t ref;                 /* FLUSH: entries it covers; COND: cond */
} __attribute__ ((packed));

/* The longest mark name: printable ASCII but space, and short enough for
 * a log line.
 */
#define ZN_WLOG_MARK_MAX 64

#endif
