/* SPDX-License-Identifier: BSD-3-Clause */
/* The NVMe/TCP transport's PDUs (NVMe/TCP Transport Specification 1.0),
 * which libnvme's <nvme/types.h> does not define, and the 64-byte
 * command and 16-byte completion as they travel in capsules.
 *
 * Everything on the wire is little-endian and packed, so fields are read
 * and written at their byte offsets (get_le*, put_le*) rather than
 * through packed structures.
 */
#ifndef ZONEDNULL_PROTO_NVME_PDU_H
#define ZONEDNULL_PROTO_NVME_PDU_H

#include <stdint.h>
#include <string.h>

/* PDU types. */
enum {
  PDU_IC_REQ = 0x00,
  PDU_IC_RESP = 0x01,
  PDU_H2C_TERM = 0x02,
  PDU_C2H_TERM = 0x03,
  PDU_CAPSULE_CMD = 0x04,
  PDU_CAPSULE_RESP = 0x05,
  PDU_H2C_DATA = 0x06,
  PDU_C2H_DATA = 0x07,
  PDU_R2T = 0x09,
};

/* The common header's flags. */
enum {
  PDU_F_HDGST = 1 << 0,
  PDU_F_DDGST = 1 << 1,
  PDU_F_DATA_LAST = 1 << 2,
  PDU_F_DATA_SUCCESS = 1 << 3,
};

/* The common header: type, flags, hlen, pdo, plen (le32). */
#define PDU_CH_LEN 8
#define PDU_DIGEST_LEN 4

/* Header lengths (hlen) of each type. */
#define PDU_IC_LEN 128          /* ICReq and ICResp, whole PDU */
#define PDU_CMD_LEN 72          /* CapsuleCmd: header and command */
#define PDU_RESP_LEN 24         /* CapsuleResp: header and completion */
#define PDU_DATA_LEN 24         /* H2CData, C2HData */
#define PDU_R2T_LEN 24
#define PDU_TERM_LEN 24         /* then the PDU header in error */
#define PDU_TERM_MAX_COPY 128   /* at most that much of it */

/* ICReq: pfv (le16) at 8, hpda at 10, dgst at 11, maxr2t (le32) at 12.
 * ICResp: pfv at 8, cpda at 10, dgst at 11, maxh2cdata (le32) at 12.
 */
#define IC_PFV 8
#define IC_HPDA 10
#define IC_CPDA 10
#define IC_DGST 11
#define IC_MAXR2T 12
#define IC_MAXH2CDATA 12
#define IC_DGST_HDGST 1
#define IC_DGST_DDGST 2

/* Data PDUs and R2T: cccid (le16) at 8, ttag (le16) at 10, offset
 * (le32) at 12, length (le32) at 16.
 */
#define DATA_CCCID 8
#define DATA_TTAG 10
#define DATA_OFFSET 12
#define DATA_LENGTH 16

/* TermReq: fes (le16) at 8, fei (le32) at 10. */
#define TERM_FES 8
#define TERM_FEI 10

/* Fatal error status of a C2HTermReq. */
enum {
  FES_INVALID_HEADER = 0x01,    /* fei: the byte offset of the field */
  FES_SEQUENCE = 0x02,
  FES_HDGST = 0x03,
  FES_OUT_OF_RANGE = 0x04,
  FES_LIMIT_EXCEEDED = 0x05,
  FES_UNSUPPORTED = 0x06,       /* fei: the offset, as for 0x01 */
};

/* The submission queue entry (64 bytes): opcode, flags, cid (le16),
 * nsid (le32) at 4, the SGL at 24 (address le64, length le32 at 32,
 * type at 39), cdw10-15 at 40.
 */
#define SQE_LEN 64
#define SQE_SGL_ADDR 24
#define SQE_SGL_LEN 32
#define SQE_SGL_TYPE 39
/* SGL descriptor types the Linux host sends (type << 4 | subtype). */
#define SGL_DATA_OFFSET 0x01    /* data block, offset: in-capsule data */
#define SGL_TRANSPORT 0x5a      /* transport data block: R2T or C2HData */

/* The completion queue entry (16 bytes): result (le64), sqhd (le16),
 * sqid (le16), cid, status (le16, phase in bit 0).
 */
#define CQE_LEN 16

static inline uint16_t
get_le16 (const unsigned char *p)
{
  return (uint16_t) (p[0] | p[1] << 8);
}

static inline uint32_t
get_le32 (const unsigned char *p)
{
  return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16
         | (uint32_t) p[3] << 24;
}

static inline uint64_t
get_le64 (const unsigned char *p)
{
  return (uint64_t) get_le32 (p) | (uint64_t) get_le32 (p + 4) << 32;
}

/* The common header of every PDU. */
struct pdu_ch {
  uint8_t type, flags, hlen, pdo;
  uint32_t plen;
};

/* ICReq's fields. */
struct pdu_icreq {
  uint16_t pfv;
  uint8_t hpda, dgst;
  uint32_t maxr2t;
};

/* The fields of H2CData (and of C2HData and R2T). */
struct pdu_data {
  uint16_t cccid, ttag;
  uint32_t datao, datal;
};

static inline struct pdu_ch
pdu_ch_decode (const unsigned char *p)
{
  return (struct pdu_ch) {
    .type = p[0], .flags = p[1], .hlen = p[2], .pdo = p[3],
    .plen = get_le32 (p + 4),
  };
}

static inline struct pdu_icreq
pdu_icreq_decode (const unsigned char *p)
{
  return (struct pdu_icreq) {
    .pfv = get_le16 (p + IC_PFV), .hpda = p[IC_HPDA], .dgst = p[IC_DGST],
    .maxr2t = get_le32 (p + IC_MAXR2T),
  };
}

static inline struct pdu_data
pdu_data_decode (const unsigned char *p)
{
  return (struct pdu_data) {
    .cccid = get_le16 (p + DATA_CCCID), .ttag = get_le16 (p + DATA_TTAG),
    .datao = get_le32 (p + DATA_OFFSET), .datal = get_le32 (p + DATA_LENGTH),
  };
}

static inline void
put_le16 (unsigned char *p, uint16_t v)
{
  p[0] = (unsigned char) v;
  p[1] = (unsigned char) (v >> 8);
}

static inline void
put_le32 (unsigned char *p, uint32_t v)
{
  put_le16 (p, (uint16_t) v);
  put_le16 (p + 2, (uint16_t) (v >> 16));
}

static inline void
put_le64 (unsigned char *p, uint64_t v)
{
  put_le32 (p, (uint32_t) v);
  put_le32 (p + 4, (uint32_t) (v >> 32));
}

#endif
