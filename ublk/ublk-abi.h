/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/* The ublk user-space ABI of Linux 6.6 and later, as far as zonednull-ublk
 * needs it: the command numbers, flags and structure layouts of Linux's
 * include/uapi/linux/ublk_cmd.h, under that header's licence (the
 * syscall note lets any program use the kernel's interface), with the
 * names changed.  The rest of zonednull is BSD-3-Clause (LICENSE).
 *
 * Debian 12's linux-libc-dev (6.1) has an older <linux/ublk_cmd.h> without
 * user copy, zoned devices or the ioctl-encoded opcodes, under the same
 * include guard, so the values are spelled out here instead.  Names carry
 * a ZU_ prefix so that they can never clash with a system header.
 */
#ifndef ZONEDNULL_UBLK_ABI_H
#define ZONEDNULL_UBLK_ABI_H

#include <stdint.h>

/* Control commands on /dev/ublk-control (ioctl-encoded, 32-byte argument). */
#define ZU_CMD_GET_DEV_INFO  0x80207502u
#define ZU_CMD_ADD_DEV       0xC0207504u
#define ZU_CMD_DEL_DEV       0xC0207505u
#define ZU_CMD_START_DEV     0xC0207506u
#define ZU_CMD_STOP_DEV      0xC0207507u
#define ZU_CMD_SET_PARAMS    0xC0207508u
#define ZU_CMD_GET_PARAMS    0x80207509u
#define ZU_CMD_GET_FEATURES  0x80207513u
#define ZU_CMD_START_USER_RECOVERY 0xC0207510u
#define ZU_CMD_END_USER_RECOVERY   0xC0207511u

/* I/O commands on /dev/ublkcN (16-byte argument). */
#define ZU_IO_FETCH_REQ            0xC0107520u
#define ZU_IO_COMMIT_AND_FETCH_REQ 0xC0107521u

/* Results of a fetch: a request is ready, or the device is going away. */
#define ZU_IO_RES_OK     0
#define ZU_IO_RES_ABORT  (-19)          /* -ENODEV */

/* Device flags (ublksrv_ctrl_dev_info.flags, GET_FEATURES). */
#define ZU_F_USER_RECOVERY    (UINT64_C (1) << 3)
#define ZU_F_CMD_IOCTL_ENCODE (UINT64_C (1) << 6)
#define ZU_F_USER_COPY        (UINT64_C (1) << 7)
#define ZU_F_ZONED            (UINT64_C (1) << 8)

/* Device states (ublksrv_ctrl_dev_info.state). */
#define ZU_S_DEV_DEAD     0
#define ZU_S_DEV_LIVE     1
#define ZU_S_DEV_QUIESCED 2
#define ZU_S_DEV_FAIL_IO  3

/* Parameter types and basic attributes. */
#define ZU_PARAM_TYPE_BASIC   1u
#define ZU_PARAM_TYPE_DISCARD 2u
#define ZU_PARAM_TYPE_DEVT    4u
#define ZU_PARAM_TYPE_ZONED   8u

#define ZU_ATTR_READ_ONLY      (1u << 0)
#define ZU_ATTR_ROTATIONAL     (1u << 1)
#define ZU_ATTR_VOLATILE_CACHE (1u << 2)
#define ZU_ATTR_FUA            (1u << 3)

/* Operations in ublksrv_io_desc.op_flags & 0xff, and its flags. */
enum {
  ZU_OP_READ = 0,
  ZU_OP_WRITE = 1,
  ZU_OP_FLUSH = 2,
  ZU_OP_DISCARD = 3,
  ZU_OP_WRITE_SAME = 4,
  ZU_OP_WRITE_ZEROES = 5,
  ZU_OP_ZONE_OPEN = 10,
  ZU_OP_ZONE_CLOSE = 11,
  ZU_OP_ZONE_FINISH = 12,
  ZU_OP_ZONE_APPEND = 13,
  ZU_OP_ZONE_RESET_ALL = 14,
  ZU_OP_ZONE_RESET = 15,
  ZU_OP_REPORT_ZONES = 18,
  ZU_NR_OPS
};
#define ZU_IO_F_FUA (1u << 13)

/* User copy: where request (q, tag)'s data is, for pread/pwrite on the
 * character device.  Descriptors of queue q are mmapped at q times the
 * room for the largest queue.
 */
#define ZU_IO_BUF_OFFSET   UINT64_C (0x80000000)
#define ZU_TAG_OFF         25
#define ZU_QID_OFF         41
#define ZU_MAX_QUEUE_DEPTH 4096
#define ZU_MAX_NR_QUEUES   4096

static inline uint64_t
zu_user_copy_pos (unsigned q, unsigned tag)
{
  return ZU_IO_BUF_OFFSET + ((uint64_t) q << ZU_QID_OFF)
    + ((uint64_t) tag << ZU_TAG_OFF);
}

struct zu_ctrl_cmd {
  uint32_t dev_id;
  uint16_t queue_id;
  uint16_t len;
  uint64_t addr;
  uint64_t data[1];
  uint16_t dev_path_len;
  uint16_t pad;
  uint32_t reserved;
};

struct zu_dev_info {
  uint16_t nr_hw_queues;
  uint16_t queue_depth;
  uint16_t state;
  uint16_t pad0;
  uint32_t max_io_buf_bytes;
  uint32_t dev_id;
  int32_t ublksrv_pid;
  uint32_t pad1;
  uint64_t flags;
  uint64_t ublksrv_flags;
  uint32_t owner_uid;
  uint32_t owner_gid;
  uint64_t reserved1;
  uint64_t reserved2;
};

struct zu_io_desc {
  uint32_t op_flags;
  uint32_t nr_sectors;              /* nr_zones for REPORT_ZONES */
  uint64_t start_sector;
  uint64_t addr;
};

struct zu_io_cmd {
  uint16_t q_id;
  uint16_t tag;
  int32_t result;
  uint64_t addr;                    /* zone_append_lba for ZONE_APPEND */
};

struct zu_param_basic {
  uint32_t attrs;
  uint8_t logical_bs_shift;
  uint8_t physical_bs_shift;
  uint8_t io_opt_shift;
  uint8_t io_min_shift;
  uint32_t max_sectors;
  uint32_t chunk_sectors;
  uint64_t dev_sectors;
  uint64_t virt_boundary_mask;
};

struct zu_param_discard {
  uint32_t discard_alignment;
  uint32_t discard_granularity;
  uint32_t max_discard_sectors;
  uint32_t max_write_zeroes_sectors;
  uint16_t max_discard_segments;
  uint16_t reserved0;
};

struct zu_param_devt {
  uint32_t char_major;
  uint32_t char_minor;
  uint32_t disk_major;
  uint32_t disk_minor;
};

struct zu_param_zoned {
  uint32_t max_open_zones;
  uint32_t max_active_zones;
  uint32_t max_zone_append_sectors;
  uint8_t reserved[20];
};

struct zu_params {
  uint32_t len;
  uint32_t types;
  struct zu_param_basic basic;
  struct zu_param_discard discard;
  struct zu_param_devt devt;
  struct zu_param_zoned zoned;
};

/* The kernel reads these layouts byte for byte. */
_Static_assert (sizeof (struct zu_ctrl_cmd) == 32, "ublksrv_ctrl_cmd");
_Static_assert (sizeof (struct zu_dev_info) == 64, "ublksrv_ctrl_dev_info");
_Static_assert (sizeof (struct zu_io_desc) == 24, "ublksrv_io_desc");
_Static_assert (sizeof (struct zu_io_cmd) == 16, "ublksrv_io_cmd");
_Static_assert (sizeof (struct zu_params) == 112, "ublk_params");
_Static_assert (__builtin_offsetof (struct zu_params, zoned) == 76,
                "ublk_params.zoned");

#endif
