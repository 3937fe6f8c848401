/* SPDX-License-Identifier: BSD-3-Clause */
/* A device as an NVMe namespace of the Zoned Namespace command set: its
 * identify data, its logs, its zone reports and zone management, and the
 * status of a failed command.  No PDUs and no queues here: the NVMe/TCP
 * session (session.c) parses the commands and calls these.
 *
 * LBAs are blocks of the device's block size; a status is the CQE's
 * status field without the phase bit: (SCT << 8) | SC, with
 * NVME_SC_DNR set on every error, so that the host does not retry what
 * null_blk would have failed once.
 */
#ifndef ZONEDNULL_PROTO_NVME_ZNS_H
#define ZONEDNULL_PROTO_NVME_ZNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nvme/types.h>

#include "model/errors.h"
#include "model/fault.h"
#include "zonednull/zone.h"

struct zn_dev;
struct zn_geometry;

/* Whether a device of geometry g can be a ZNS namespace, which has no
 * conventional zones and no smaller last zone (the Linux host refuses
 * both, as does nvmet): 0, or -1 with a message naming the key
 * (zone_nr_conv, size) and the rule.
 */
int nvme_zns_check (const struct zn_geometry *g, char *err, size_t errlen);

/* Identify, CNS 0x00: the namespace (size, capacity, one LBA format of
 * the block size).
 */
void nvme_zns_id_ns (struct zn_dev *dev, struct nvme_id_ns *id);

/* Identify, CNS 0x05 with the ZNS CSI: zone size, MOR and MAR (0-based,
 * 0xffffffff for no limit), no zone operation characteristics.
 */
void nvme_zns_id_ns_zns (struct zn_dev *dev, struct nvme_zns_id_ns *id);

/* Identify, CNS 0x06 with the ZNS CSI: ZASL, the zone append limit, as
 * a power of two of the minimum memory page size (4 KiB), from the
 * smallest max_append_sectors of the devices.
 */
void nvme_zns_id_ctrl_zns (struct zn_dev *const *devs, unsigned nr_devs,
                           struct nvme_zns_id_ctrl *id);

/* Get Log Page 0x05, commands supported and effects, for the command set
 * csi (NVME_CSI_NVM or NVME_CSI_ZNS): the admin commands the session
 * serves and the I/O commands of that set, zone append and zone
 * management among ZNS's.
 */
void nvme_zns_effects (uint8_t csi, struct nvme_cmd_effects_log *log);

/* Runs an I/O command on dev and returns its status (0: success).
 * slba and nlb are the command's (nlb 1-based here); data is the
 * write's payload or the read's buffer, nlb blocks long.  Zone append
 * sets *result to the LBA the data landed at.  *f (set to ZN_FAULT_PASS
 * by the caller) gets the fault settings' verdict, if the command got as
 * far as asking: with ZN_FAULT_TIMEOUT it did not run and must not be
 * answered, and its delay_ns holds the answer back.
 */
uint16_t nvme_zns_read (struct zn_dev *dev, uint64_t slba, uint32_t nlb,
                        void *data, struct zn_fault *f);
uint16_t nvme_zns_write (struct zn_dev *dev, uint64_t slba, uint32_t nlb,
                         bool fua, const void *data, struct zn_fault *f);
uint16_t nvme_zns_write_zeroes (struct zn_dev *dev, uint64_t slba,
                                uint32_t nlb, bool fua, struct zn_fault *f);
uint16_t nvme_zns_append (struct zn_dev *dev, uint64_t zslba, uint32_t nlb,
                          bool fua, const void *data, uint64_t *result,
                          struct zn_fault *f);
uint16_t nvme_zns_flush (struct zn_dev *dev, struct zn_fault *f);

/* Zone Management Send: action zsa (enum nvme_zns_send_action) on the
 * zone starting at slba, or with select_all on every zone the action
 * applies to; *f as for the I/O commands.
 */
uint16_t nvme_zns_mgmt_send (struct zn_dev *dev, uint64_t slba, uint8_t zsa,
                             bool select_all, struct zn_fault *f);

/* An I/O command (the ones above, and Zone Management Send) in three
 * steps, so that its model call, which may wait for a disk, can run on
 * another thread: nvme_zns_begin (the checks, and the fault settings'
 * verdict, op->f) and nvme_zns_end (the status, the fault's outcome
 * applied) on the thread that serves the namespace, nvme_zns_run
 * anywhere, since it touches only op and dev.  The functions above are
 * the three in a row.
 */
enum nvme_zns_kind {
  NVME_ZNS_OP_READ,
  NVME_ZNS_OP_WRITE,
  NVME_ZNS_OP_WRITE_ZEROES,
  NVME_ZNS_OP_APPEND,
  NVME_ZNS_OP_FLUSH,
  NVME_ZNS_OP_MGMT_SEND,
};

struct nvme_zns_op {
  /* The command, filled in by the caller. */
  enum nvme_zns_kind kind;
  uint64_t slba;
  uint32_t nlb;                 /* 1-based */
  bool fua;
  uint8_t zsa;                  /* Zone Management Send's */
  bool select_all;
  void *buf;                    /* a read's */
  const void *data;             /* a write's or an append's */
  /* Set by nvme_zns_begin. */
  struct zn_fault f;
  bool runs;                    /* the fault settings let the model run */
  bool mgmt;
  enum zn_fault_op fop;
  enum zn_zone_op zop;
  uint64_t sector, nr_sectors;
  /* Set by nvme_zns_run. */
  int r;
  enum zn_reason why;
  uint64_t landed;
  uint16_t status;              /* a select-all action's (send_all) */
};

/* 0, or the status op fails with before the fault settings are asked
 * (then neither run nor end is called).
 */
uint16_t nvme_zns_begin (struct zn_dev *dev, struct nvme_zns_op *op);
void nvme_zns_run (struct zn_dev *dev, struct nvme_zns_op *op);
/* The status; a successful append's LBA in *result. */
uint16_t nvme_zns_end (struct zn_dev *dev, struct nvme_zns_op *op,
                       uint64_t *result);

/* Zone Management Receive: a zone report (zra NVME_ZNS_ZRA_REPORT_ZONES)
 * of the zones from the one holding slba, filtered by zrasf (enum
 * nvme_zns_report_options' state values), into buf of len bytes (a
 * header of 64 bytes then 64-byte descriptors, as many as fit).  With
 * partial, the header counts the descriptors returned; without, every
 * matching zone from slba to the end.  Extended reports are refused
 * (Invalid Field).  With busy, for an event loop: when a zone's lock is
 * held by another thread (a storage thread's write), *busy is set and
 * nothing else is meaningful; the report is to be made where it may wait.
 */
uint16_t nvme_zns_mgmt_recv (struct zn_dev *dev, uint64_t slba, uint8_t zra,
                             uint8_t zrasf, bool partial, void *buf,
                             size_t len, bool *busy);

/* The status of a model errno and the reason that came with it
 * (lib/model/errors.h): ETOOMANYREFS -> Too Many Open Zones, EOVERFLOW -> Too
 * Many Active Zones (which the Linux host turns back into those errnos);
 * EIO -> the ZNS status that names the reason (Zone Is Full, Read Only,
 * Offline, Invalid Write, Boundary Error), or Internal Error when none
 * does (a bad block); EINVAL -> Invalid Field or LBA Out of Range.
 */
uint16_t nvme_zns_status (int err, enum zn_reason why);

#endif
