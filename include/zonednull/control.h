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
 * The export is rounded up to a multiple of 4096 bytes; bytes past the
 * last descriptor read as zero.  Reads work on a read-only server.
 *
 * A command is a 32-byte write at offset 0.  The write succeeds when the
 * command was well formed and executed, whatever its outcome; the exact
 * errno is then in the header page's result fields (read it back on the
 * same connection).  A malformed command fails the write with EINVAL.  On
 * a read-only server (nbdkit -r) every write, hence every command, fails
 * with EPERM.
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
 *  80  u32 closed                      84  u32 reserved (0)
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
 *  24  u64 reserved (0)
 *
 * ZN_CMD_DATA_ERRNO asks for the exact errno of a failed data request on
 * the device's data export: sector and nr_sectors carry the request's byte
 * offset and length, and the low 32 bits of the reserved field its NBD
 * command type (NBD_CMD_READ 0, WRITE 1, TRIM 4, WRITE_ZEROES 6).  The
 * result is the errno of the most recent failed request that matches, or 0
 * if none of the last ZN_CONTROL_ERROR_LOG failures matches.
 */
#ifndef ZONEDNULL_CONTROL_H
#define ZONEDNULL_CONTROL_H

#include <stdbool.h>
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

/* Header flags. */
#define ZN_CONTROL_F_MEMORY_BACKED (1u << 0)
#define ZN_CONTROL_F_READONLY (1u << 1)         /* server refuses changes */

enum zn_command {
  ZN_CMD_OPEN = 1,
  ZN_CMD_CLOSE = 2,
  ZN_CMD_FINISH = 3,
  ZN_CMD_RESET = 4,          /* over the whole device: reset-all */
  ZN_CMD_READONLY = 5,       /* toggle, as configfs zone_readonly */
  ZN_CMD_OFFLINE = 6,        /* toggle, as configfs zone_offline */
  ZN_CMD_DATA_ERRNO = 7,
};

/* ---- encoding (lib/control-wire.c; used by both sides) ---------------- */

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
  uint64_t result_seq;
  uint32_t result_op;
  uint32_t result_errno;
  uint64_t result_sector;
  uint64_t result_nr_sectors;
};

struct zn_zone;

void zn_control_encode_header (void *page, const struct zn_control_info *info);
/* Returns 0, or -EPROTO when the magic, version or sizes do not match. */
int zn_control_decode_header (const void *page, struct zn_control_info *info);
void zn_control_encode_zone (void *desc, const struct zn_zone *zone);
void zn_control_decode_zone (const void *desc, struct zn_zone *zone);
void zn_control_encode_command (void *buf, enum zn_command op,
                                uint64_t sector, uint64_t nr_sectors,
                                uint64_t arg);
/* Returns 0, or -EINVAL for a bad magic or an unknown op. */
int zn_control_decode_command (const void *buf, enum zn_command *op,
                               uint64_t *sector, uint64_t *nr_sectors,
                               uint64_t *arg);

/* ---- server side (lib/control.c), for the NBD adapters ----------------- */

struct zn_dev;
struct zn_control;            /* one per device */

/* The result of a connection's last command; zero it at connect. */
struct zn_control_conn {
  uint64_t seq;
  uint32_t op;
  uint32_t err;
  uint64_t sector;
  uint64_t nr_sectors;
};

struct zn_control *zn_control_create (struct zn_dev *dev);
void zn_control_destroy (struct zn_control *ctl);
uint64_t zn_control_size (const struct zn_control *ctl);

/* Remembers a failed data request (err is a positive errno). */
void zn_control_log_error (struct zn_control *ctl, uint32_t nbd_cmd,
                           uint64_t offset, uint64_t count, int err);

/* Return 0 or a negative errno for the NBD request itself. */
int zn_control_pread (struct zn_control *ctl, const struct zn_control_conn *conn,
                      bool readonly, void *buf, uint64_t count, uint64_t offset);
int zn_control_pwrite (struct zn_control *ctl, struct zn_control_conn *conn,
                       const void *buf, uint64_t count, uint64_t offset);

#endif /* ZONEDNULL_CONTROL_H */
