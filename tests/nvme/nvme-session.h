/* SPDX-License-Identifier: BSD-3-Clause */
/* The NVMe/TCP session without a network, for test-nvme-session-io.c and
 * test-nvme-session-checks.c: the connection layer's hooks, recording what
 * the session asked of them, and a host that builds PDUs, feeds them in
 * through nvme_session_input and drains the replies.
 *
 * Device: 64 MiB of 8 MiB zones (16384 blocks of 512 bytes), no
 * conventional zones, at most one open zone, memory-backed.
 */
#ifndef ZONEDNULL_TESTS_NVME_SESSION_H
#define ZONEDNULL_TESTS_NVME_SESSION_H

#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nvme/types.h>

#include "../common/check.h"
#include "../common/dev.h"
#include "pdu.h"
#include "session.h"

#define ZONE_LBAS 16384
#define HOSTNQN "nqn.2014-08.org.nvmexpress:uuid:6d1b3c1e-0000-4000-8000-00000000abcd"
#define SUBNQN "nqn.2026-12.org.zonednull:test:4420"
#define DISCOVERY "nqn.2014-08.org.nvmexpress.discovery"

static struct served_device devices[1];
static struct nvme_served sv;

/* What the session asked of the connection layer. */
static int owners[8];                   /* a connection is its index */
static unsigned idle_ms[8];
static bool aborted[8];
static int admit_later;                 /* ADMIT_LATER this many times */
static int admit_err;                   /* the next admission fails with it */
static bool admit_park;                 /* the next admission parks it, */
static uint64_t parked_id;              /* whose id this is */
/* The output budget: room says no while room_no; fits, while fits_no.
 * What the session said it holds, and asked for, the last time.
 */
static bool room_no, fits_no;
static unsigned room_asked, fits_asked;
static size_t asked_queued, asked_more;

static inline void
abort_conn (void *owner)
{
  aborted[(int *) owner - owners] = true;
}

static inline void
idle_timeout (void *owner, unsigned ms)
{
  idle_ms[(int *) owner - owners] = ms;
}

static inline struct admission
admit (void *owner, void *session, const struct data_request *rq)
{
  (void) owner;
  (void) session;
  if (admit_later > 0) {
    admit_later--;
    return (struct admission) { ADMIT_LATER, 0 };
  }
  if (admit_err) {
    struct admission a = { ADMIT_NOW, admit_err };

    admit_err = 0;
    return a;
  }
  if (admit_park) {
    admit_park = false;
    parked_id = rq->id;
    return (struct admission) { ADMIT_PARK, 0 };
  }
  return (struct admission) { ADMIT_NOW, 0 };
}

static inline bool
room (void *owner, size_t queued, size_t reply)
{
  (void) owner;
  room_asked++;
  asked_queued = queued;
  asked_more = reply;
  return !room_no;
}

static inline bool
fits (void *owner, size_t queued, size_t more)
{
  (void) owner;
  fits_asked++;
  asked_queued = queued;
  asked_more = more;
  return !fits_no;
}

static inline uint32_t
crc (const void *p, size_t n)
{
  /* Bitwise, independent of the session's ISA-L. */
  const unsigned char *b = p;
  uint32_t c = 0xffffffff;

  while (n--) {
    c ^= *b++;
    for (int k = 0; k < 8; k++)
      c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
  }
  return ~c;
}

/* What the session told finish last: a reply with a delay is kept for
 * nvme_session_release, every other goes at once.
 */
static enum finish_outcome finish_outcome;
static uint64_t finish_id, finish_delay_ns;

static inline enum reply_hold
finish (void *owner, uint64_t id, bool tagged, enum finish_outcome outcome,
        uint64_t delay_ns)
{
  (void) owner;
  finish_id = id;
  finish_outcome = outcome;
  finish_delay_ns = delay_ns;
  return tagged && outcome == FINISH_ANSWERED && delay_ns ? REPLY_DELAYED
                                                           : REPLY_NOW;
}

/* ---- a host -------------------------------------------------------------- */

struct host {
  struct nvme_session *s;
  int conn;
  bool hd, dd;
  uint16_t cid;
  uint16_t cntlid;
  const unsigned char *pending;         /* a write's data for R2Ts */
  /* The last reply: */
  uint16_t status;
  uint64_t result;
  uint16_t sqid;
  _Alignas (8) unsigned char data[256 * 1024];
  size_t data_len;
  unsigned r2ts;
  uint16_t fes;                         /* of a C2HTermReq, or 0 */
  uint32_t fei;
};

static inline void
host_open (struct host *h, int conn, const struct nvme_served *served)
{
  memset (h, 0, sizeof *h);
  h->conn = conn;
  h->s = nvme_session_new (served, &owners[conn]);
  CHECK (h->s != NULL);
}

/* Feeds a whole PDU; returns what the session's input returned. */
static inline long
feed (struct host *h, const unsigned char *pdu, size_t len)
{
  return nvme_session_input (h->s, pdu, len);
}

static inline void send_h2c (struct host *h, uint16_t cccid,
                             uint16_t ttag, uint32_t off, uint32_t len);

/* Takes every PDU queued; stops after a CapsuleResp or TermReq (true)
 * or when the output is empty (false).
 */
static inline bool
drain (struct host *h)
{
  for (;;) {
    size_t len;
    const unsigned char *p = nvme_session_output (h->s, &len);
    uint32_t plen;
    uint8_t type;

    if (len == 0)
      return false;
    CHECK (len >= PDU_CH_LEN);
    plen = get_le32 (p + 4);
    CHECK (plen <= len);
    type = p[0];
    if (type != PDU_C2H_TERM && type != PDU_IC_RESP && h->hd) {
      CHECK (p[1] & PDU_F_HDGST);
      CHECK_EQ (get_le32 (p + p[2]), crc (p, p[2]));
    }
    switch (type) {
    case PDU_CAPSULE_RESP:
      CHECK_EQ (plen, PDU_RESP_LEN + (h->hd ? 4 : 0));
      h->result = get_le64 (p + 8);
      h->sqid = get_le16 (p + 18);
      CHECK_EQ (get_le16 (p + 20), h->cid);
      h->status = get_le16 (p + 22) >> 1;
      nvme_session_sent (h->s, plen);
      return true;
    case PDU_C2H_DATA: {
      uint32_t dl = get_le32 (p + DATA_LENGTH), pdo = p[3];

      CHECK_EQ (get_le16 (p + DATA_CCCID), h->cid);
      CHECK_EQ (get_le32 (p + DATA_OFFSET), h->data_len);
      CHECK (p[1] & PDU_F_DATA_LAST);
      CHECK_EQ (plen, pdo + dl + (h->dd ? 4 : 0));
      if (h->dd)
        CHECK_EQ (get_le32 (p + pdo + dl), crc (p + pdo, dl));
      CHECK (h->data_len + dl <= sizeof h->data);
      memcpy (h->data + h->data_len, p + pdo, dl);
      h->data_len += dl;
      nvme_session_sent (h->s, plen);
      break;
    }
    case PDU_R2T: {
      uint16_t ttag = get_le16 (p + DATA_TTAG);
      uint32_t off = get_le32 (p + DATA_OFFSET), rl = get_le32 (p + DATA_LENGTH);

      CHECK_EQ (get_le16 (p + DATA_CCCID), h->cid);
      nvme_session_sent (h->s, plen);
      h->r2ts++;
      send_h2c (h, h->cid, ttag, off, rl);
      break;
    }
    case PDU_C2H_TERM:
      h->fes = get_le16 (p + TERM_FES);
      h->fei = get_le32 (p + TERM_FEI);
      nvme_session_sent (h->s, plen);
      return true;
    default:
      fprintf (stderr, "unexpected PDU type %u\n", type);
      exit (EXIT_FAILURE);
    }
  }
}

/* A PDU of hlen header bytes (common header filled here) and data. */
static inline size_t
build (const struct host *h, unsigned char *pdu, uint8_t type, uint8_t flags,
       uint8_t hlen, const unsigned char *hdr_rest, const void *data,
       size_t dlen)
{
  size_t hd = h->hd ? 4 : 0, dd = h->dd && dlen ? 4 : 0;
  size_t plen = hlen + hd + dlen + dd;

  memset (pdu, 0, hlen);
  pdu[0] = type;
  pdu[1] = flags | (h->hd ? PDU_F_HDGST : 0) | (dd ? PDU_F_DDGST : 0);
  pdu[2] = hlen;
  pdu[3] = dlen ? (uint8_t) (hlen + hd) : 0;
  put_le32 (pdu + 4, (uint32_t) plen);
  memcpy (pdu + PDU_CH_LEN, hdr_rest, hlen - PDU_CH_LEN);
  if (hd)
    put_le32 (pdu + hlen, crc (pdu, hlen));
  if (dlen)
    memcpy (pdu + hlen + hd, data, dlen);
  if (dd)
    put_le32 (pdu + hlen + hd + dlen, crc (data, dlen));
  return plen;
}

static unsigned char pdu_buf[NVME_MAX_PDU + 256];

static inline void
send_h2c (struct host *h, uint16_t cccid, uint16_t ttag, uint32_t off,
          uint32_t len)
{
  /* In 32 KiB pieces, to cross several PDUs. */
  for (uint32_t done = 0; done < len; ) {
    uint32_t n = len - done < 32768 ? len - done : 32768;
    unsigned char rest[16] = { 0 };
    size_t plen;

    put_le16 (rest, cccid);
    put_le16 (rest + 2, ttag);
    put_le32 (rest + 4, off + done);
    put_le32 (rest + 8, n);
    plen = build (h, pdu_buf, PDU_H2C_DATA,
                  done + n == len ? PDU_F_DATA_LAST : 0, PDU_DATA_LEN, rest,
                  h->pending + off + done, n);
    CHECK_EQ (feed (h, pdu_buf, plen), (long) plen);
    done += n;
  }
}

static inline void
ic (struct host *h, bool hd, bool dd)
{
  unsigned char pdu[PDU_IC_LEN] = { PDU_IC_REQ, 0, PDU_IC_LEN, 0 };
  size_t len;
  const unsigned char *p;

  put_le32 (pdu + 4, PDU_IC_LEN);
  pdu[IC_DGST] = (hd ? IC_DGST_HDGST : 0) | (dd ? IC_DGST_DDGST : 0);
  CHECK_EQ (feed (h, pdu, sizeof pdu), PDU_IC_LEN);
  p = nvme_session_output (h->s, &len);
  CHECK_EQ (len, PDU_IC_LEN);
  CHECK_EQ (p[0], PDU_IC_RESP);
  CHECK_EQ (get_le32 (p + 4), PDU_IC_LEN);
  CHECK_EQ (get_le16 (p + IC_PFV), 0);
  CHECK_EQ (p[IC_CPDA], 0);
  CHECK_EQ (p[IC_DGST], pdu[IC_DGST]);
  CHECK_EQ (get_le32 (p + IC_MAXH2CDATA), NVME_MAX_H2C_DATA);
  nvme_session_sent (h->s, len);
  h->hd = hd;
  h->dd = dd;
}

/* An SQE: opcode, nsid, cdw10.., the SGL (length, type). */
static inline void
sqe (struct host *h, unsigned char *q, uint8_t opcode, uint32_t nsid,
     const uint32_t *cdw, unsigned ncdw, uint32_t sgl_len, uint8_t sgl_type)
{
  memset (q, 0, SQE_LEN);
  q[0] = opcode;
  q[1] = 0x40;
  put_le16 (q + 2, ++h->cid);
  put_le32 (q + 4, nsid);
  put_le32 (q + SQE_SGL_LEN, sgl_len);
  q[SQE_SGL_TYPE] = sgl_type;
  for (unsigned i = 0; i < ncdw; i++)
    put_le32 (q + 40 + 4 * i, cdw[i]);
}

/* Sends a capsule with dlen bytes in it and runs the exchange to its
 * reply; false when the session ended it (TermReq).
 */
static inline bool
exchange (struct host *h, const unsigned char *q, const void *data,
          size_t dlen)
{
  size_t plen = build (h, pdu_buf, PDU_CAPSULE_CMD, 0, PDU_CMD_LEN, q + 0,
                       data, dlen);
  long used;

  h->data_len = 0;
  h->status = 0xffff;
  h->fes = 0;
  used = feed (h, pdu_buf, plen);
  if (used == -1) {
    CHECK (drain (h));
    CHECK (h->fes != 0);
    return false;
  }
  CHECK_EQ (used, (long) plen);
  return drain (h);
}

static inline uint16_t
command (struct host *h, uint8_t opcode, uint32_t nsid, const uint32_t *cdw,
         unsigned ncdw, uint32_t sgl_len, const void *data, size_t dlen)
{
  unsigned char q[SQE_LEN];

  sqe (h, q, opcode, nsid, cdw, ncdw, sgl_len,
       dlen ? SGL_DATA_OFFSET : SGL_TRANSPORT);
  CHECK (exchange (h, q, data, dlen));
  return h->status;
}

static inline uint16_t
connect (struct host *h, uint16_t qid, const char *subnqn, const char *hostnqn,
         uint16_t cntlid, uint32_t kato)
{
  unsigned char data[1024] = { 0 };
  uint32_t cdw[3] = { (uint32_t) qid << 16, 31, kato };
  unsigned char q[SQE_LEN];

  put_le16 (data + 16, cntlid);
  strcpy ((char *) data + 256, subnqn);
  strcpy ((char *) data + 512, hostnqn);
  sqe (h, q, nvme_admin_fabrics, 0, cdw, 3, sizeof data, SGL_DATA_OFFSET);
  q[4] = nvme_fabrics_type_connect;
  CHECK (exchange (h, q, data, sizeof data));
  if (h->status == 0 && qid == 0)
    h->cntlid = (uint16_t) h->result;
  return h->status;
}

static inline uint64_t
prop_get (struct host *h, uint32_t offset, bool eight)
{
  uint32_t cdw[2] = { eight, offset };
  unsigned char q[SQE_LEN];

  sqe (h, q, nvme_admin_fabrics, 0, cdw, 2, 0, SGL_TRANSPORT);
  q[4] = nvme_fabrics_type_property_get;
  CHECK (exchange (h, q, NULL, 0));
  CHECK_EQ (h->status, 0);
  return h->result;
}

static inline uint16_t
prop_set (struct host *h, uint32_t offset, uint32_t value)
{
  uint32_t cdw[3] = { 0, offset, value };
  unsigned char q[SQE_LEN];

  sqe (h, q, nvme_admin_fabrics, 0, cdw, 3, 0, SGL_TRANSPORT);
  q[4] = nvme_fabrics_type_property_set;
  CHECK (exchange (h, q, NULL, 0));
  return h->status;
}

/* The Linux host's CC, enabled. */
#define CC_ENABLED (1 | NVME_CC_CSS_CSI << NVME_CC_CSS_SHIFT \
                    | 6 << NVME_CC_IOSQES_SHIFT | 4 << NVME_CC_IOCQES_SHIFT)

static inline void
enable (struct host *h)
{
  uint32_t cc = CC_ENABLED;

  CHECK_EQ (prop_get (h, 0x1c, false) & 1, 0);
  CHECK_EQ (prop_set (h, 0x14, cc), 0);
  CHECK_EQ (prop_get (h, 0x14, false), cc);
  CHECK_EQ (prop_get (h, 0x1c, false) & 1, 1);       /* CSTS.RDY */
}

static inline uint16_t
identify (struct host *h, uint8_t cns, uint32_t nsid, uint8_t csi)
{
  uint32_t cdw[2] = { cns, (uint32_t) csi << 24 };

  return command (h, nvme_admin_identify, nsid, cdw, 2, 4096, NULL, 0);
}

static inline uint16_t
get_log (struct host *h, uint8_t lid, uint32_t len, uint8_t csi)
{
  uint32_t numd = len / 4 - 1;
  uint32_t cdw[5] = { lid | (numd & 0xffff) << 16, numd >> 16, 0, 0,
                      (uint32_t) csi << 24 };

  return command (h, nvme_admin_get_log_page, 0xffffffff, cdw, 5, len,
                  NULL, 0);
}

static inline uint16_t
rw (struct host *h, uint8_t opcode, uint64_t slba, uint32_t nlb,
    const unsigned char *data, bool inline_data)
{
  uint32_t cdw[3] = { (uint32_t) slba, (uint32_t) (slba >> 32), nlb - 1 };
  unsigned char q[SQE_LEN];

  h->pending = data;
  h->r2ts = 0;
  sqe (h, q, opcode, 1, cdw, 3, nlb * 512,
       inline_data ? SGL_DATA_OFFSET : SGL_TRANSPORT);
  CHECK (exchange (h, q, data, inline_data ? nlb * 512 : 0));
  return h->status;
}

static inline uint16_t
zone_send (struct host *h, uint64_t slba, uint8_t zsa, bool all)
{
  uint32_t cdw[4] = { (uint32_t) slba, (uint32_t) (slba >> 32), 0,
                      zsa | (all ? 1u << 8 : 0) };

  return command (h, nvme_zns_cmd_mgmt_send, 1, cdw, 4, 0, NULL, 0);
}

/* internal.h's, for a test that includes it first. */
#ifndef ERR
#define ERR(sct, sc) ((sct) << 8 | (sc) | NVME_SC_DNR)
#endif


static unsigned char wbuf[256 * 1024];

/* The device and the served table every host connects to. */
static inline void
serve_init (void)
{
  struct zn_config cfg = geometry_config (64, 8, 0, 0, 512);

  cfg.zone_max_open = 1;
  cfg.memory_backed = true;
  devices[0].dev = create (&cfg);
  strcpy (devices[0].name, "nullb0");
  sv = (struct nvme_served) {
    .program = "test-nvme-session", .devices = devices, .nr_devices = 1,
    .admit = admit, .finish = finish, .abort = abort_conn,
    .idle_timeout = idle_timeout,
    .traddr = "127.0.0.1", .trsvcid = "4420",
    .max_queues = 2, .queue_depth = 64,
  };
  strcpy (sv.subnqn, SUBNQN);
}

#endif
