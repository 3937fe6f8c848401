/* SPDX-License-Identifier: BSD-3-Clause */
/* zonednull zone control channel, wire format version 1.
 *
 * NBD has no zone commands and nbdkit cannot add metadata contexts, so each
 * device has a second, named export: its control export, called
 * "<device>/control" (the device "" is "nullb0", so its control export is
 * "nullb0/control").  It is an ordinary NBD export that any client can use:
 *
 *   [0, 4096)                      header page: geometry, limits, counters,
 *                                  and the result of this connection's last
 *                                  command
 *   [4096, 4096 + 64 * nr_zones)   one 64-byte descriptor per zone, live
 *
 * The export is at least 32 + 512 * max_append_sectors bytes, so that the
 * largest APPEND fits in one write, and is rounded up to a multiple of
 * 4096 bytes; bytes past the last descriptor read as zero.  Reads work on
 * a read-only server.
 *
 * A command is a 32-byte write at offset 0; an APPEND's write carries its
 * data after those 32 bytes, an ERRLOG_ERRNO's its payload, a MARK's and
 * a LOG_START's a name.  The write
 * succeeds when the command was well formed and executed, whatever its
 * outcome; the exact errno is then in the header page's result fields
 * (read it back on the same connection).
 * A malformed command fails the write with EINVAL.  On a read-only server
 * (nbdkit -r) every write, hence every command, fails with EPERM.  The
 * result is per connection: a client must not have two commands in
 * flight on one connection.
 *
 * All integers are big-endian, as in NBD.  Layouts (byte offsets):
 *
 * Header page
 *   0  u64 magic ZN_CONTROL_MAGIC       8  u32 version (1)
 *  12  u32 header size (4096)          16  u32 zone descriptor size (64)
 *  20  u32 nr_zones                    24  u64 capacity (sectors)
 *  32  u64 zone_sectors                40  u64 zone_capacity (sectors)
 *  48  u32 nr_conv                     52  u32 max_open (0 = none)
 *  56  u32 max_active (0 = none)       60  u32 block_size (bytes)
 *  64  u32 max_sectors                 68  u32 flags (ZN_CONTROL_F_*)
 *  72  u32 imp_open                    76  u32 exp_open
 *  80  u32 closed                      84  u32 max_append_sectors (0: no
 *                                          APPEND; older servers)
 *  88  u64 result_seq: commands executed on this connection
 *  96  u32 result_op                  100  u32 result_errno (0 = success)
 * 104  u64 result_sector              112  u64 result_nr_sectors
 * 120  ... zero up to 4096
 *
 * Zone descriptor
 *   0  u64 start   8 u64 len   16 u64 capacity   24 u64 wp (all in sectors;
 *      wp all-ones for READONLY and OFFLINE)
 *  32  u8 type (1 conventional, 2 sequential write required)
 *  33  u8 cond (blkzoned.h values)  34 ... zero up to 64
 *
 * Command (32 bytes)
 *   0  u32 magic ZN_COMMAND_MAGIC      4  u32 op (ZN_CMD_*)
 *   8  u64 sector                     16  u64 nr_sectors
 *  24  u64 argument (0 unless the op says otherwise)
 *
 * ZN_CMD_APPEND is a zone append (REQ_OP_ZONE_APPEND): sector is the
 * start of a sequential zone, nr_sectors the data's length, bit 0 of the
 * argument FUA (ZN_APPEND_F_FUA; other bits must be zero), and the write
 * is exactly 32 + 512 * nr_sectors bytes: the command, then the data.  It
 * is atomic against every other write to the zone, from any connection.
 * On success result_sector is the sector the data landed at; the errnos
 * are those of a zone append on the device (EIO for a conventional zone,
 * a sector that is not a zone start, more than max_append_sectors, a FULL
 * zone or data past the zone capacity; ETOOMANYREFS and EOVERFLOW for the
 * limits; EINVAL for an empty or unaligned length).
 *
 * ZN_CMD_DATA_ERRNO asks for the exact errno of a failed data request on
 * the device's data export: sector and nr_sectors carry the request's byte
 * offset and length, and the low 32 bits of the argument its NBD
 * command type (NBD_CMD_READ 0, WRITE 1, TRIM 4, WRITE_ZEROES 6).  The
 * result is the errno of the most recent failed request that matches, or 0
 * if none of the last ZN_CONTROL_ERROR_LOG failures matches.  That log is
 * shared by every plain connection of the device (failures on connections
 * with an error log of their own are not in it), so when several clients
 * fail the same request at once, the answer may be another client's.
 *
 * Error logs of their own make the answer exact.  A data connection may
 * have one: the client picks a random 64-bit id other than 0 and opens
 * the data export "<device>/session/<id>", the id as exactly 16 hex
 * digits (ZN_ERRLOG_INFIX; the device "" is "nullb0", so its names are
 * "nullb0/session/0123456789abcdef").  Any other name that starts with
 * "<device>/session/" is refused.  Such a connection is the device's data
 * export in every way, except that its failed requests are logged in the
 * error log of that id, which keeps the last ZN_CONTROL_ERRLOG_SIZE
 * failures, never in the device-wide one.  Several connections may share
 * an id (and its log).  A server keeps every error log that has a
 * connection open, and the ZN_CONTROL_ERRLOGS most recently used ones
 * without one (older ones are dropped, their failures forgotten), per
 * device; that bounds its memory to (open data connections +
 * ZN_CONTROL_ERRLOGS) error logs of a fixed size.  A server without error
 * logs refuses the name as an unknown export: a client then falls back to
 * the plain name and DATA_ERRNO.
 *
 * ZN_CMD_POWER_CYCLE powers the device off and on.  nr_sectors says what
 * it keeps of the writes neither flushed nor written with FUA
 * (ZN_POWER_KEEP_*; the rules are zonednull(1)'s, power-cycle --keep):
 * 0 none of them, as null_blk; 1 all; 2 what a draw from the seed in
 * sector keeps, the same for the same seed and writes; 3 the same with
 * writes torn at logical blocks (torn:SEED).  sector is 0 otherwise.
 * Another nr_sectors, or a seed with 0 or 1, fails the write with
 * EINVAL.  Servers that take a policy set ZN_CONTROL_F_POWER_KEEP;
 * older ones ignore both fields and keep none.  Servers that take 3 set
 * ZN_CONTROL_F_POWER_TORN too; older ones fail it with EINVAL.
 *
 * ZN_CMD_ERRLOG_ERRNO asks an error log: sector and nr_sectors carry the
 * request's byte offset and length as for DATA_ERRNO, the argument is 0,
 * and the write is exactly 32 + ZN_ERRLOG_ERRNO_SIZE bytes: the command,
 * then
 *   32  u64 error log id (not 0)   40  u32 NBD command type   44  u32 zero
 * The result is the errno of the log's most recent failed request of that
 * type, offset and length, or 0 if none matches (or the id is unknown:
 * never opened, or dropped).  Older servers refuse the op as unknown
 * (EINVAL on the write).
 *
 * The write log (zonednull-log(5)).  ZN_CMD_MARK adds a mark to it, and
 * ZN_CMD_LOG_START starts one; each write is the command (sector,
 * nr_sectors and argument zero) then the name, and nothing else: exactly
 * 32 + the name's length bytes.  A mark's name is 1 to ZN_WLOG_MARK_MAX
 * (64) bytes of printable ASCII other than space; a log's name is a new
 * file of the server's log_dir: 1 to 255 bytes of A-Z a-z 0-9 . _ -,
 * not starting with a dot.  Another name fails the write with EINVAL.
 * The results: MARK, ENOENT when no log is on; LOG_START, EPERM when the
 * server has no log_dir, EBUSY when a log is on, EEXIST when the file
 * exists (a log is never written over, and no symbolic link followed).
 * A log's snapshot of the device is copied behind LOG_START, a zone at
 * a time; LOG_STOP answers EAGAIN until it is all copied, as
 * POWER_CYCLE does (ask again).
 * ZN_CMD_LOG_STOP (a plain 32-byte command) stops the log:
 * ENOENT when none is on, EIO when it had stopped already on a write
 * error (the server's log says which; the file is intact up to there).
 * Older servers refuse the ops as unknown (EINVAL on the write).
 *
 * ZN_CMD_GENERATION (a plain 32-byte command, sector, nr_sectors and
 * argument zero) asks which device this is: result_errno 0 and
 * result_sector the device's generation, a random value other than 0
 * drawn when the device was made.  A backing_dir keeps it, so a server
 * restarted on the same directory answers the same; zones in memory get
 * a new one at each start.  A client that reconnects compares it with
 * the one it had: the same value says its data is still there.  Older
 * servers refuse the op as unknown (EINVAL on the write).
 *
 * Fault rules (doc/faults.md), on servers that set ZN_CONTROL_F_FAULTS;
 * others refuse the ops as unknown (EINVAL on the write).
 * ZN_CMD_FAULT_ADD is the command (sector, nr_sectors and argument zero)
 * then the rule's text, 1 to 255 bytes of printable ASCII, spaces
 * between its words, and nothing else.  A text that is not a rule fails
 * the write with EINVAL (the server's log says which word broke which
 * rule).  The result: result_sector the rule's id, or ENOSPC when the
 * device has ZN_CONTROL_FAULT_RULES rules already, or EOPNOTSUPP for a
 * rule the server cannot carry out (a timeout or a delay: zonednull-server
 * always, the nbdkit plugin while it serves a connection's requests one
 * at a time).
 * ZN_CMD_FAULT_CLEAR (a plain 32-byte command) removes rule sector, or
 * every rule with sector 0: ENOENT for no such rule.
 * The fault table, the device's rules in order, follows the zone
 * descriptors at the next multiple of 4096 bytes, where the export
 * would otherwise end: offset zn_control_faults_offset, ZN_CONTROL_FAULT_RULES
 * records of ZN_CONTROL_FAULT_SIZE bytes, the export being that much
 * longer.  A record:
 *   0  u32 rule id (0: no rule; the rules come first)   4  u32 zero
 *   8  u64 requests the rule took  16  u64 ... on which it fired
 *  24  the rule's text, NUL-terminated, as FAULT_ADD takes it
 */
#ifndef ZONEDNULL_CONTROL_H
#define ZONEDNULL_CONTROL_H

#include <stdint.h>

#define ZN_CONTROL_VERSION 1
#define ZN_CONTROL_MAGIC UINT64_C(0x5a4f4e45444e554c)   /* "ZONEDNUL" */
#define ZN_COMMAND_MAGIC UINT32_C(0x5a4e434d)           /* "ZNCM" */
#define ZN_CONTROL_SUFFIX "/control"
#define ZN_DEFAULT_DEVICE "nullb0"
#define ZN_CONTROL_HEADER_SIZE 4096
#define ZN_CONTROL_ZONE_SIZE 64
#define ZN_COMMAND_SIZE 32
#define ZN_CONTROL_ERROR_LOG 256
#define ZN_ERRLOG_INFIX "/session/"    /* 0.1.0 called error logs sessions */
#define ZN_ERRLOG_ID_DIGITS 16
#define ZN_ERRLOG_ERRNO_SIZE 16       /* ERRLOG_ERRNO's payload */
#define ZN_CONTROL_ERRLOG_SIZE 64      /* failures kept per error log */
#define ZN_CONTROL_ERRLOGS 256        /* error logs kept without a
                                         connection */

/* Header flags. */
#define ZN_CONTROL_F_MEMORY_BACKED (1u << 0)
#define ZN_CONTROL_F_READONLY (1u << 1)         /* server refuses changes */
#define ZN_CONTROL_F_QUEUES (1u << 2)           /* queue section present */
/* Kernel-specific parts, zero from servers that model 6.1 only (older
 * ones included): the data export does not advertise FUA (6.10+ without
 * cache_size and fua), sequential zones started FULL (zone_full), zone
 * append is emulated by the block layer (zone_append_max_sectors=0).
 */
#define ZN_CONTROL_F_NO_FUA (1u << 3)
#define ZN_CONTROL_F_ZONE_FULL (1u << 4)
#define ZN_CONTROL_F_APPEND_EMULATED (1u << 5)
/* The zones live in files (backing_dir), behind the host's page cache:
 * a client should send flushes for its data to survive a host crash.
 */
#define ZN_CONTROL_F_BACKING_DIR (1u << 6)
/* POWER_CYCLE takes a keep policy (ZN_POWER_KEEP_*). */
#define ZN_CONTROL_F_POWER_KEEP (1u << 7)
/* Bits 8 to 15: whose null_blk the device emulates, enum zn_kernel
 * (0 = 6.1).
 */
/* FAULT_ADD, FAULT_CLEAR and the fault table. */
#define ZN_CONTROL_F_FAULTS (1u << 16)
/* POWER_CYCLE takes ZN_POWER_KEEP_TORN. */
#define ZN_CONTROL_F_POWER_TORN (1u << 17)
#define ZN_CONTROL_KERNEL_SHIFT 8
#define ZN_CONTROL_KERNEL_MASK (0xffu << ZN_CONTROL_KERNEL_SHIFT)

/* The queue section: a compatible extension of version 1.  It lives in
 * bytes that version 1 servers leave zero and version 1 clients ignore,
 * and ZN_CONTROL_F_QUEUES says it is there:
 *
 * 120  u32 section size (bytes from 120)  124  u32 queue flags (below)
 * 128  u32 device index                  132  u32 nr_devices
 * 136  u32 irqmode                       140  u32 hw_queue_depth
 * 144  u64 completion_nsec
 * 152  u32 submit_queues                 156  u32 tag pools in the tag set
 * 160  u32 mbps (0 = unlimited)          164  u32 pipeline_wait_ms
 * 168  u32 pipeline_max_waiting          172  u32 pipelined writes waiting
 * 176  u64 pipelined writes that waited  184  u64 ... that timed out
 * 192  u64 ... that failed otherwise
 * 200  device counters (a queue entry, below)
 * 232  u32 bad block ranges          236  u32 zero
 * 240  u64 cache size (bytes)        248  u64 cache bytes not written back
 * 256  one 32-byte entry per hardware queue (submit_queues of them):
 *        0 u32 tags in use   4 u32 peak in use   8 u64 requests that waited
 *       16 u64 requests completed   24 u32 connections   28 u32 zero
 */
#define ZN_CONTROL_QUEUES_OFFSET 120
#define ZN_CONTROL_QUEUE_ENTRIES 256
#define ZN_CONTROL_QUEUE_ENTRY_SIZE 32
#define ZN_CONTROL_MAX_QUEUES 120

#define ZN_QUEUE_F_SHARED_TAGS (1u << 0)
#define ZN_QUEUE_F_SHARED_TAG_BITMAP (1u << 1)
#define ZN_QUEUE_F_PIPELINE (1u << 2)          /* pipeline_zoned_writes */

enum zn_command {
  ZN_CMD_OPEN = 1,
  ZN_CMD_CLOSE = 2,
  ZN_CMD_FINISH = 3,
  ZN_CMD_RESET = 4,          /* over the whole device: reset-all */
  ZN_CMD_READONLY = 5,       /* toggle, as configfs zone_readonly */
  ZN_CMD_OFFLINE = 6,        /* toggle, as configfs zone_offline */
  ZN_CMD_DATA_ERRNO = 7,
  ZN_CMD_BADBLOCKS_SET = 8,  /* [sector, sector + nr_sectors) becomes bad */
  ZN_CMD_BADBLOCKS_CLEAR = 9, /* ... becomes good again */
  ZN_CMD_POWER_CYCLE = 10,   /* configfs power=0, power=1 */
  ZN_CMD_APPEND = 11,        /* zone append; the data follows the command */
  ZN_CMD_ERRLOG_ERRNO = 12,  /* DATA_ERRNO for one error log; payload
                                follows */
  ZN_CMD_MARK = 13,          /* a mark in the write log; the name follows */
  ZN_CMD_LOG_START = 14,     /* a write log in log_dir; the name follows */
  ZN_CMD_LOG_STOP = 15,
  ZN_CMD_GENERATION = 16,    /* which device this is: result_sector */
  ZN_CMD_FAULT_ADD = 17,     /* a fault rule; its text follows */
  ZN_CMD_FAULT_CLEAR = 18,   /* rule sector, or all with 0 */
};

#define ZN_CONTROL_FAULT_RULES 64
#define ZN_CONTROL_FAULT_SIZE 256
#define ZN_CONTROL_FAULT_TEXT 24   /* where a record's text starts */

#define ZN_APPEND_F_FUA (1u << 0)   /* APPEND's argument: write with FUA */

/* POWER_CYCLE's nr_sectors: what survives of the unflushed writes. */
#define ZN_POWER_KEEP_NONE 0
#define ZN_POWER_KEEP_ALL 1
#define ZN_POWER_KEEP_RANDOM 2        /* drawn from the seed in sector */
#define ZN_POWER_KEEP_TORN 3          /* the same, writes torn at blocks */

struct zn_control_info {
  uint32_t version;
  uint32_t nr_zones;
  uint64_t capacity;
  uint64_t zone_sectors;
  uint64_t zone_capacity;
  uint32_t nr_conv;
  uint32_t max_open;
  uint32_t max_active;
  uint32_t block_size;
  uint32_t max_sectors;
  uint32_t flags;
  uint32_t imp_open;
  uint32_t exp_open;
  uint32_t closed;
  uint32_t max_append_sectors; /* 0: the server has no APPEND */
  uint64_t result_seq;
  uint32_t result_op;
  uint32_t result_errno;
  uint64_t result_sector;
  uint64_t result_nr_sectors;
};

struct zn_control_queue_stats {
  uint32_t in_use;             /* tags held now */
  uint32_t peak;               /* most tags held at once */
  uint64_t waited;             /* requests that found no free tag */
  uint64_t completed;          /* requests completed */
  uint32_t connections;        /* connections feeding it */
};

struct zn_control_queue_info {
  uint32_t queue_flags;        /* ZN_QUEUE_F_* */
  uint32_t device_index;
  uint32_t nr_devices;
  uint32_t irqmode;
  uint32_t hw_queue_depth;
  uint64_t completion_nsec;
  uint32_t submit_queues;
  uint32_t tag_pools;
  uint32_t mbps;
  uint32_t pipeline_wait_ms;
  uint32_t pipeline_max_waiting;
  uint32_t pipeline_waiting;
  uint64_t pipeline_waited;
  uint64_t pipeline_timeouts;
  uint64_t pipeline_failed;
  uint32_t nr_badblocks;       /* bad block ranges */
  uint64_t cache_size;         /* volatile write cache, bytes (0: none) */
  uint64_t cache_dirty;        /* bytes not yet written back */
  struct zn_control_queue_stats device;
  struct zn_control_queue_stats queues[ZN_CONTROL_MAX_QUEUES];
};

#endif /* ZONEDNULL_CONTROL_H */
