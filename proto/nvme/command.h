/* SPDX-License-Identifier: BSD-3-Clause */
/* An NVMe command as named fields: the submission queue entry's common
 * part, taken from the capsule, and the command dwords of each command
 * family the session serves, decoded once before it runs.  The values
 * of the fields (opcodes, CNS, LIDs, FIDs, ZSA, ...) are libnvme's
 * <nvme/types.h> enums.
 *
 * A field's location is its byte offset in the 64-byte entry, which is
 * what a failing command reports: Connect's IPO, and the Parameter Error
 * Location of the Error Information log page (nvmet's error_loc).
 */
#ifndef ZONEDNULL_PROTO_NVME_COMMAND_H
#define ZONEDNULL_PROTO_NVME_COMMAND_H

#include <stdbool.h>
#include <stdint.h>

/* Where each field is: SQE byte offsets. */
enum sqe_loc {
  LOC_OPCODE = 0, LOC_FLAGS = 1, LOC_NSID = 4,
  LOC_FCTYPE = 4,               /* fabrics commands: in place of NSID */
  LOC_SGL_ADDR = 24, LOC_SGL_LEN = 32, LOC_SGL_TYPE = 39,
  LOC_CDW10 = 40,
  /* Connect */
  LOC_RECFMT = 40, LOC_QID = 42, LOC_SQSIZE = 44, LOC_CATTR = 46,
  LOC_KATO = 48,
  /* Property Get and Set */
  LOC_ATTRIB = 40, LOC_PROP_OFFSET = 44, LOC_PROP_VALUE = 48,
  /* Authentication Send and Receive: TL or AL */
  LOC_SPSP0 = 41, LOC_SPSP1 = 42, LOC_SECP = 43, LOC_AUTH_LEN = 44,
  /* Identify */
  LOC_CNS = 40, LOC_CNTID = 42, LOC_ID_CSI = 47,
  /* Get Log Page */
  LOC_LID = 40, LOC_LSP = 41, LOC_NUMDL = 42, LOC_NUMDU = 44, LOC_LPO = 48,
  LOC_LOG_CSI = 59,
  /* Get and Set Features */
  LOC_FID = 40, LOC_SEL = 41, LOC_SV = 43, LOC_FEAT_VALUE = 44,
  /* Read, Write, Write Zeroes, Zone Append, Zone Management */
  LOC_SLBA = 40, LOC_NLB = 48, LOC_CONTROL = 50,
  LOC_ZM_NUMD = 48, LOC_ZSA = 52, LOC_ZRA = 52, LOC_SELECT_ALL = 53,
  LOC_ZRASF = 53, LOC_PARTIAL = 54,
  LOC_NONE = 0xffff,            /* no field in particular */
};

/* The families whose dwords are decoded; the union member of each. */
enum cmd_family {
  CF_OTHER,                     /* nothing beyond the common part */
  CF_CONNECT, CF_PROP, CF_AUTH, CF_IDENTIFY, CF_LOG, CF_FEATURES,
  CF_RW,                        /* read, write, write zeroes, append */
  CF_ZMS, CF_ZMR,               /* zone management send, receive */
};

struct cmd_connect {
  uint16_t recfmt, qid, sqsize; /* sqsize 0-based */
  uint8_t cattr;
  uint32_t kato;                /* ms */
};

struct cmd_prop {
  uint8_t attrib;               /* size: 0 four bytes, 1 eight, 2-7
                                   reserved */
  uint32_t offset;
  uint64_t value;               /* Set's */
};

struct cmd_auth {
  uint8_t secp, spsp0, spsp1;
  uint32_t len;                 /* Send's TL, Receive's AL */
};

struct cmd_identify {
  uint8_t cns, csi;
  uint16_t cntid;
};

struct cmd_log {
  uint8_t lid, lsp, csi;
  uint64_t numd;                /* 1-based */
  uint64_t lpo;
};

struct cmd_features {
  uint8_t fid, sel;             /* sel: Get's */
  bool save;                    /* Set's SV */
  uint32_t value;               /* dword 11 */
};

struct cmd_rw {
  uint64_t slba;
  uint32_t nlb;                 /* 1-based */
  uint16_t control;             /* enum nvme_io_control_flags */
};

struct cmd_zms {
  uint64_t slba;
  uint8_t zsa;
  bool select_all;
};

struct cmd_zmr {
  uint64_t slba;
  uint64_t numd;                /* 1-based */
  uint8_t zra, zrasf;
  bool partial;
};

struct nvme_cmd {
  /* The common part, from the capsule. */
  uint8_t opcode, flags;
  uint8_t fctype;               /* fabrics commands */
  uint16_t cid;
  uint32_t nsid;
  uint64_t sgl_addr;
  uint32_t sgl_len;
  uint8_t sgl_type;
  /* The dwords, once the queue is known (nvme_cmd_decode). */
  enum cmd_family family;
  union {
    struct cmd_connect connect;
    struct cmd_prop prop;
    struct cmd_auth auth;
    struct cmd_identify identify;
    struct cmd_log log;
    struct cmd_features features;
    struct cmd_rw rw;
    struct cmd_zms zms;
    struct cmd_zmr zmr;
  } u;
};

/* The common part of the SQE at sqe (SQE_LEN bytes). */
void nvme_cmd_parse (const unsigned char *sqe, struct nvme_cmd *cmd);
/* The dwords of the SQE at sqe into cmd's family member; io_queue: the
 * command came on an I/O queue (admin and I/O opcodes overlap).
 */
void nvme_cmd_decode (const unsigned char *sqe, bool io_queue,
                      struct nvme_cmd *cmd);
/* Connect, whichever queue it came on. */
bool nvme_cmd_is_connect (const struct nvme_cmd *cmd);
/* Authentication Send or Receive, whichever queue it came on. */
bool nvme_cmd_is_auth (const struct nvme_cmd *cmd);
/* Whether cmd may take data from the host: the opcode's data transfer
 * bit, which every fabrics command has set, but Authentication Receive,
 * whose FCTYPE says it sends.
 */
bool nvme_cmd_to_ctrl (const struct nvme_cmd *cmd);
/* The LBA a command names (its SLBA), or 0. */
uint64_t nvme_cmd_lba (const struct nvme_cmd *cmd);

#endif
