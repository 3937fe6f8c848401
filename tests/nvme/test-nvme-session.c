/* The NVMe/TCP session without a network: hand-built PDUs in through
 * nvme_session_input, the queued PDUs out through nvme_session_output,
 * as the connection layer drives it.  The handshake with and without
 * digests, Connect (admin, I/O, refusals), properties, identify data,
 * logs, features, in-capsule and R2T writes, reads, zone append, zone
 * reports and management, a ZNS resource error, the checks of every
 * PDU field (TermReq), keep-alive (KATO near 2^32 ms too), CC.EN and
 * CC.SHN (commands refused before enable, I/O queues closed on a reset
 * or shutdown), teardown, commands refused before an R2T, the output
 * budget over every reply and R2T buffer, and the Error Information log
 * that names the field of each failure.
 *
 * Device: 64 MiB of 8 MiB zones (16384 blocks of 512 bytes), no
 * conventional zones, at most one open zone, memory-backed.
 */
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
/* The output budget: room says no while room_no; fits, while fits_no.
 * What the session said it holds, and asked for, the last time.
 */
static bool room_no, fits_no;
static unsigned room_asked, fits_asked;
static size_t asked_queued, asked_more;

static void
abort_conn (void *owner)
{
  aborted[(int *) owner - owners] = true;
}

static void
idle_timeout (void *owner, unsigned ms)
{
  idle_ms[(int *) owner - owners] = ms;
}

static struct admission
admit (void *owner, void *session, const struct data_request *rq)
{
  (void) owner;
  (void) session;
  (void) rq;
  if (admit_later > 0) {
    admit_later--;
    return (struct admission) { ADMIT_LATER, 0 };
  }
  if (admit_err) {
    struct admission a = { ADMIT_NOW, admit_err };

    admit_err = 0;
    return a;
  }
  return (struct admission) { ADMIT_NOW, 0 };
}

static bool
room (void *owner, size_t queued, size_t reply)
{
  (void) owner;
  room_asked++;
  asked_queued = queued;
  asked_more = reply;
  return !room_no;
}

static bool
fits (void *owner, size_t queued, size_t more)
{
  (void) owner;
  fits_asked++;
  asked_queued = queued;
  asked_more = more;
  return !fits_no;
}

static uint32_t
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

static void
host_open (struct host *h, int conn, const struct nvme_served *served)
{
  memset (h, 0, sizeof *h);
  h->conn = conn;
  h->s = nvme_session_new (served, &owners[conn]);
  CHECK (h->s != NULL);
}

/* Feeds a whole PDU; returns what the session's input returned. */
static long
feed (struct host *h, const unsigned char *pdu, size_t len)
{
  return nvme_session_input (h->s, pdu, len);
}

static void send_h2c (struct host *h, uint16_t cccid, uint16_t ttag,
                      uint32_t off, uint32_t len);

/* Takes every PDU queued; stops after a CapsuleResp or TermReq (true)
 * or when the output is empty (false).
 */
static bool
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
static size_t
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

static void
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

static void
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
static void
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
static bool
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

static uint16_t
command (struct host *h, uint8_t opcode, uint32_t nsid, const uint32_t *cdw,
         unsigned ncdw, uint32_t sgl_len, const void *data, size_t dlen)
{
  unsigned char q[SQE_LEN];

  sqe (h, q, opcode, nsid, cdw, ncdw, sgl_len,
       dlen ? SGL_DATA_OFFSET : SGL_TRANSPORT);
  CHECK (exchange (h, q, data, dlen));
  return h->status;
}

static uint16_t
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

static uint64_t
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

static uint16_t
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

static void
enable (struct host *h)
{
  uint32_t cc = CC_ENABLED;

  CHECK_EQ (prop_get (h, 0x1c, false) & 1, 0);
  CHECK_EQ (prop_set (h, 0x14, cc), 0);
  CHECK_EQ (prop_get (h, 0x14, false), cc);
  CHECK_EQ (prop_get (h, 0x1c, false) & 1, 1);       /* CSTS.RDY */
}

static uint16_t
identify (struct host *h, uint8_t cns, uint32_t nsid, uint8_t csi)
{
  uint32_t cdw[2] = { cns, (uint32_t) csi << 24 };

  return command (h, nvme_admin_identify, nsid, cdw, 2, 4096, NULL, 0);
}

static uint16_t
get_log (struct host *h, uint8_t lid, uint32_t len, uint8_t csi)
{
  uint32_t numd = len / 4 - 1;
  uint32_t cdw[5] = { lid | (numd & 0xffff) << 16, numd >> 16, 0, 0,
                      (uint32_t) csi << 24 };

  return command (h, nvme_admin_get_log_page, 0xffffffff, cdw, 5, len,
                  NULL, 0);
}

static uint16_t
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

static uint16_t
zone_send (struct host *h, uint64_t slba, uint8_t zsa, bool all)
{
  uint32_t cdw[4] = { (uint32_t) slba, (uint32_t) (slba >> 32), 0,
                      zsa | (all ? 1u << 8 : 0) };

  return command (h, nvme_zns_cmd_mgmt_send, 1, cdw, 4, 0, NULL, 0);
}

#define ERR(sct, sc) ((sct) << 8 | (sc) | NVME_SC_DNR)

/* ---- the cases ------------------------------------------------------------ */

static unsigned char wbuf[256 * 1024];

static void
test_admin_and_io (bool digests)
{
  struct host a, io;
  const struct nvme_id_ctrl *idc;
  const struct nvme_id_ns *idns;
  const struct nvme_zns_id_ns *zns;
  const struct nvme_cmd_effects_log *eff;
  uint64_t cap;

  memset (idle_ms, 0, sizeof idle_ms);
  memset (aborted, 0, sizeof aborted);
  host_open (&a, 0, &sv);
  ic (&a, digests, digests);
  /* Before Connect, nothing else. */
  CHECK_EQ (identify (&a, NVME_IDENTIFY_CNS_CTRL, 0, 0),
            ERR (0, NVME_SC_CMD_SEQ_ERROR));
  CHECK_EQ (connect (&a, 0, SUBNQN, HOSTNQN, 0xffff, 5000), 0);
  CHECK (a.cntlid != 0);
  CHECK_EQ (idle_ms[0], 6000);          /* KATO and a second's grace */
  CHECK (nvme_session_connected (a.s));

  cap = prop_get (&a, 0, true);
  CHECK_EQ (NVME_CAP_MQES (cap), 63);
  CHECK (NVME_CAP_CSS (cap) & NVME_CAP_CSS_CSI);
  CHECK (NVME_CAP_CSS (cap) & NVME_CAP_CSS_NVM);
  CHECK_EQ (prop_get (&a, 8, false), 0x10400);
  enable (&a);

  CHECK_EQ (identify (&a, NVME_IDENTIFY_CNS_CTRL, 0, 0), 0);
  CHECK_EQ (a.data_len, 4096);
  idc = (const struct nvme_id_ctrl *) a.data;
  CHECK_EQ (le16toh (idc->cntlid), a.cntlid);
  CHECK (le16toh (idc->kas) != 0);
  CHECK (le32toh (idc->sgls) & 1);
  CHECK_EQ (le32toh (idc->ioccsz), (64 + 8192) / 16);
  CHECK_EQ (le32toh (idc->iorcsz), 1);
  CHECK_EQ (idc->cmic, 0);
  CHECK_EQ (idc->mdts, 5);              /* 255 sectors: 128 KiB */
  CHECK_EQ (le32toh (idc->nn), 1);
  CHECK_EQ (idc->sqes, 0x66);
  CHECK_EQ (idc->cqes, 0x44);
  CHECK_EQ (le16toh (idc->maxcmd), 64);
  CHECK (idc->lpa & NVME_CTRL_LPA_CMD_EFFECTS);
  CHECK_EQ (idc->cntrltype, NVME_CTRL_CNTRLTYPE_IO);
  CHECK (strcmp (idc->subnqn, SUBNQN) == 0);

  CHECK_EQ (identify (&a, NVME_IDENTIFY_CNS_NS, 1, 0), 0);
  idns = (const struct nvme_id_ns *) a.data;
  CHECK_EQ (le64toh (idns->nsze), 8 * ZONE_LBAS);
  CHECK_EQ (idns->nmic, 0);
  CHECK_EQ (identify (&a, NVME_IDENTIFY_CNS_NS, 2, 0),
            ERR (0, NVME_SC_INVALID_NS));
  CHECK_EQ (identify (&a, NVME_IDENTIFY_CNS_NS_ACTIVE_LIST, 0, 0), 0);
  CHECK_EQ (get_le32 (a.data), 1);
  CHECK_EQ (get_le32 (a.data + 4), 0);
  CHECK_EQ (identify (&a, NVME_IDENTIFY_CNS_NS_DESC_LIST, 1, 0), 0);
  {
    bool csi = false;

    for (size_t off = 0; off + 4 <= 4096 && a.data[off]; )
      if (a.data[off] == NVME_NIDT_CSI) {
        CHECK_EQ (a.data[off + 4], NVME_CSI_ZNS);
        csi = true;
        break;
      }
      else
        off += 4 + a.data[off + 1];
    CHECK (csi);
  }
  CHECK_EQ (identify (&a, NVME_IDENTIFY_CNS_CSI_NS, 1, NVME_CSI_ZNS), 0);
  zns = (const struct nvme_zns_id_ns *) a.data;
  CHECK_EQ (le64toh (zns->lbafe[0].zsze), ZONE_LBAS);
  CHECK_EQ (le32toh (zns->mor), 0);     /* zone_max_open=1, 0-based */
  CHECK_EQ (le32toh (zns->mar), 0xffffffff);
  CHECK_EQ (identify (&a, NVME_IDENTIFY_CNS_CSI_CTRL, 0, NVME_CSI_ZNS), 0);
  CHECK_EQ (identify (&a, NVME_IDENTIFY_CNS_CSI_CTRL, 0, NVME_CSI_NVM), 0);
  CHECK_EQ (identify (&a, 0x1f, 0, 0), ERR (0, NVME_SC_INVALID_FIELD));

  CHECK_EQ (get_log (&a, NVME_LOG_LID_CMD_EFFECTS, 4096, NVME_CSI_ZNS), 0);
  eff = (const struct nvme_cmd_effects_log *) a.data;
  CHECK (le32toh (eff->iocs[nvme_zns_cmd_append]) & NVME_CMD_EFFECTS_CSUPP);
  CHECK_EQ (get_log (&a, NVME_LOG_LID_SMART, 512, 0), 0);
  CHECK_EQ (get_log (&a, NVME_LOG_LID_ERROR, 64, 0), 0);
  CHECK_EQ (get_log (&a, NVME_LOG_LID_DISCOVER, 1024, 0),
            ERR (1, NVME_SC_INVALID_LOG_PAGE));

  {
    uint32_t nq[2] = { NVME_FEAT_FID_NUM_QUEUES, 7 | 7 << 16 };
    uint32_t kato[2] = { NVME_FEAT_FID_KATO, 10000 };

    CHECK_EQ (command (&a, nvme_admin_set_features, 0, nq, 2, 0, NULL, 0), 0);
    CHECK_EQ (a.result, 1 | 1 << 16);    /* submit_queues=2, 0-based */
    CHECK_EQ (command (&a, nvme_admin_set_features, 0, kato, 2, 0, NULL, 0), 0);
    CHECK_EQ (idle_ms[0], 11000);
  }
  CHECK_EQ (command (&a, nvme_admin_keep_alive, 0, NULL, 0, 0, NULL, 0), 0);
  CHECK_EQ (command (&a, 0x99, 0, NULL, 0, 0, NULL, 0),
            ERR (0, NVME_SC_INVALID_OPCODE));
  {
    /* Asynchronous events: held, AERL + 1 of them. */
    unsigned char q[SQE_LEN];

    for (int i = 0; i < 4; i++) {
      size_t plen;

      sqe (&a, q, nvme_admin_async_event, 0, NULL, 0, 0, SGL_TRANSPORT);
      plen = build (&a, pdu_buf, PDU_CAPSULE_CMD, 0, PDU_CMD_LEN, q, NULL, 0);
      CHECK_EQ (feed (&a, pdu_buf, plen), (long) plen);
      CHECK (!drain (&a));
    }
    CHECK_EQ (command (&a, nvme_admin_async_event, 0, NULL, 0, 0, NULL, 0),
              ERR (1, NVME_SC_ASYNC_LIMIT));
  }

  /* I/O queues: an unknown controller, another host, then the queue. */
  host_open (&io, 1, &sv);
  ic (&io, digests, digests);
  CHECK_EQ (connect (&io, 1, SUBNQN, HOSTNQN, (uint16_t) (a.cntlid + 100), 0),
            ERR (1, NVME_SC_CONNECT_INVALID_PARAM));
  CHECK_EQ (io.result, 1 << 16 | 16);   /* IPO: the data's CNTLID */
  CHECK_EQ (connect (&io, 1, SUBNQN, "nqn.2014-08.org.example:other",
                     a.cntlid, 0), ERR (1, NVME_SC_CONNECT_INVALID_PARAM));
  CHECK_EQ (io.result, 1 << 16 | 512);
  CHECK_EQ (connect (&io, 3, SUBNQN, HOSTNQN, a.cntlid, 0),
            ERR (1, NVME_SC_CONNECT_INVALID_PARAM));
  CHECK_EQ (io.result, 42);             /* IPO: the command's QID */
  CHECK_EQ (connect (&io, 1, SUBNQN, HOSTNQN, a.cntlid, 0), 0);
  CHECK_EQ (io.sqid, 1);

  /* A write in the capsule, one after R2Ts, read back. */
  for (size_t i = 0; i < sizeof wbuf; i++)
    wbuf[i] = (unsigned char) (i * 7 + (i >> 9));
  CHECK_EQ (rw (&io, nvme_cmd_write, 0, 8, wbuf, true), 0);
  CHECK_EQ (io.r2ts, 0);
  CHECK_EQ (rw (&io, nvme_cmd_write, 8, 128, wbuf + 4096, false), 0);
  CHECK_EQ (io.r2ts, 1);
  CHECK_EQ (rw (&io, nvme_cmd_read, 0, 136, NULL, false), 0);
  CHECK_EQ (io.data_len, 136 * 512);
  CHECK (memcmp (io.data, wbuf, 136 * 512) == 0);
  /* A write the scheduler fails as it admits it (pipeline_max_waiting:
   * EBUSY) fails as a pipelined write that never reached its write
   * pointer does, and writes nothing (the report below has the write
   * pointer still at 136).
   */
  admit_err = -EBUSY;
  CHECK_EQ (rw (&io, nvme_cmd_write, 136, 8, wbuf, true),
            ERR (1, NVME_SC_ZNS_INVALID_WRITE));
  CHECK_EQ (admit_err, 0);
  /* Past MDTS: refused, a write before any R2T. */
  CHECK_EQ (rw (&io, nvme_cmd_read, 0, 257, NULL, false),
            ERR (0, NVME_SC_INVALID_FIELD));
  CHECK_EQ (rw (&io, nvme_cmd_write, 0, 257, wbuf, false),
            ERR (0, NVME_SC_INVALID_FIELD));
  CHECK_EQ (io.r2ts, 0);

  /* Zone append returns the LBA written. */
  CHECK_EQ (rw (&io, nvme_zns_cmd_append, ZONE_LBAS, 8, wbuf, true), 0);
  CHECK_EQ (io.result, ZONE_LBAS);
  CHECK_EQ (rw (&io, nvme_zns_cmd_append, ZONE_LBAS, 8, wbuf, true), 0);
  CHECK_EQ (io.result, ZONE_LBAS + 8);

  /* A partial report of all zones from zone 0. */
  {
    uint32_t cdw[4] = { 0, 0, 4096 / 4 - 1,
                        NVME_ZNS_ZRA_REPORT_ZONES | 1u << 16 };

    CHECK_EQ (command (&io, nvme_zns_cmd_mgmt_recv, 1, cdw, 4, 4096, NULL, 0),
              0);
    CHECK_EQ (io.data_len, 4096);
    CHECK_EQ (get_le64 (io.data), 8);                   /* nr_zones */
    CHECK_EQ (get_le64 (io.data + 64 + 24), 136);       /* zone 0's wp */
    CHECK_EQ (get_le64 (io.data + 128 + 16), ZONE_LBAS);
    CHECK_EQ (get_le64 (io.data + 128 + 24), ZONE_LBAS + 16);
  }

  /* Too Many Open Zones: zone_max_open=1. */
  CHECK_EQ (zone_send (&io, 2 * ZONE_LBAS, NVME_ZNS_ZSA_OPEN, false), 0);
  CHECK_EQ (zone_send (&io, 3 * ZONE_LBAS, NVME_ZNS_ZSA_OPEN, false),
            ERR (1, NVME_SC_ZNS_TOO_MANY_OPENS));
  CHECK_EQ (zone_send (&io, 0, NVME_ZNS_ZSA_RESET, true), 0);

  /* Wrong namespace, unknown opcode. */
  {
    uint32_t cdw[3] = { 0, 0, 0 };

    CHECK_EQ (command (&io, nvme_cmd_read, 7, cdw, 3, 512, NULL, 0),
              ERR (0, NVME_SC_INVALID_NS));
    CHECK_EQ (command (&io, 0x7c, 1, cdw, 3, 0, NULL, 0),
              ERR (0, NVME_SC_INVALID_OPCODE));
  }

  /* A tag that is not there now: the command waits, input stops. */
  {
    uint32_t cdw[3] = { 0, 0, 0 };
    unsigned char q[SQE_LEN];
    size_t plen;

    admit_later = 1;
    sqe (&io, q, nvme_cmd_read, 1, cdw, 3, 512, SGL_TRANSPORT);
    plen = build (&io, pdu_buf, PDU_CAPSULE_CMD, 0, PDU_CMD_LEN, q, NULL, 0);
    io.data_len = 0;
    CHECK_EQ (feed (&io, pdu_buf, plen), (long) plen);
    CHECK (!drain (&io));               /* waiting: no reply yet */
    CHECK_EQ (admit_later, 0);
    CHECK_EQ (feed (&io, pdu_buf, 0), 0);
    CHECK (drain (&io));
    CHECK_EQ (io.status, 0);
  }

  /* The admin queue goes: its controller takes the I/O queue along. */
  nvme_session_free (a.s);
  CHECK (aborted[1]);
  CHECK (!nvme_session_connected (io.s));
  nvme_session_free (io.s);
}

/* A session that must end with a C2HTermReq with fes, for pdu. */
static void
expect_term (const unsigned char *pdu, size_t len, bool hd, uint16_t fes,
             bool connected)
{
  struct host h;
  long r;

  host_open (&h, 2, &sv);
  ic (&h, hd, false);
  if (connected)
    CHECK_EQ (connect (&h, 0, SUBNQN, HOSTNQN, 0xffff, 0), 0);
  r = feed (&h, pdu, len);
  CHECK_EQ (r, -1);
  CHECK (drain (&h));
  CHECK_EQ (h.fes, fes);
  nvme_session_free (h.s);
}

static void
test_bad_pdus (void)
{
  unsigned char p[256];
  struct host h;

  /* A CapsuleCmd whose HLEN is not 72. */
  memset (p, 0, sizeof p);
  p[0] = PDU_CAPSULE_CMD;
  p[2] = 64;
  put_le32 (p + 4, 64);
  expect_term (p, 64, false, FES_INVALID_HEADER, false);
  /* PLEN beyond the largest PDU: refused from the header alone. */
  p[2] = PDU_CMD_LEN;
  put_le32 (p + 4, NVME_MAX_PDU + 1);
  expect_term (p, PDU_CH_LEN, false, FES_INVALID_HEADER, false);
  /* PLEN shorter than the header. */
  put_le32 (p + 4, 40);
  expect_term (p, PDU_CH_LEN, false, FES_INVALID_HEADER, false);
  /* A type only a controller sends. */
  p[0] = PDU_C2H_DATA;
  p[2] = PDU_DATA_LEN;
  put_le32 (p + 4, PDU_DATA_LEN);
  expect_term (p, PDU_DATA_LEN, false, FES_INVALID_HEADER, false);
  /* H2CData for no R2T. */
  p[0] = PDU_H2C_DATA;
  put_le32 (p + 4, PDU_DATA_LEN + 4);
  p[3] = PDU_DATA_LEN;
  put_le32 (p + DATA_LENGTH, 4);
  expect_term (p, PDU_DATA_LEN + 4, false, FES_INVALID_HEADER, true);
  /* A header digest that does not match. */
  memset (p, 0, sizeof p);
  p[0] = PDU_CAPSULE_CMD;
  p[1] = PDU_F_HDGST;
  p[2] = PDU_CMD_LEN;
  put_le32 (p + 4, PDU_CMD_LEN + 4);
  put_le32 (p + PDU_CMD_LEN, 0x12345678);
  expect_term (p, PDU_CMD_LEN + 4, true, FES_HDGST, false);

  /* A data digest that does not match fails the command, no more. */
  host_open (&h, 2, &sv);
  ic (&h, false, true);
  CHECK_EQ (connect (&h, 0, SUBNQN, HOSTNQN, 0xffff, 0), 0);
  enable (&h);
  {
    unsigned char q[SQE_LEN], data[1024] = { 0 };
    size_t plen;

    strcpy ((char *) data + 256, SUBNQN);
    strcpy ((char *) data + 512, HOSTNQN);
    sqe (&h, q, nvme_admin_fabrics, 0, NULL, 0, sizeof data, SGL_DATA_OFFSET);
    q[4] = nvme_fabrics_type_connect;
    plen = build (&h, pdu_buf, PDU_CAPSULE_CMD, 0, PDU_CMD_LEN, q, data,
                  sizeof data);
    pdu_buf[plen - 1] ^= 0xff;
    CHECK_EQ (feed (&h, pdu_buf, plen), (long) plen);
    CHECK (drain (&h));
    CHECK_EQ (h.status, NVME_SC_TRAN_TPORT_ERROR);
  }
  CHECK_EQ (command (&h, nvme_admin_keep_alive, 0, NULL, 0, 0, NULL, 0), 0);
  nvme_session_free (h.s);

  /* The host ends it with H2CTermReq. */
  host_open (&h, 2, &sv);
  ic (&h, false, false);
  memset (p, 0, sizeof p);
  p[0] = PDU_H2C_TERM;
  p[2] = PDU_TERM_LEN;
  put_le32 (p + 4, PDU_TERM_LEN);
  CHECK_EQ (feed (&h, p, PDU_TERM_LEN), -1);
  nvme_session_free (h.s);
}

static void
test_refusals (void)
{
  static const char *const allowed[] = { "nqn.2014-08.org.example:allowed" };
  struct nvme_served only = sv;
  struct host h;

  host_open (&h, 3, &sv);
  ic (&h, false, false);
  CHECK_EQ (connect (&h, 0, "nqn.2014-08.org.example:nothere", HOSTNQN,
                     0xffff, 0), ERR (1, NVME_SC_CONNECT_INVALID_PARAM));
  CHECK_EQ (h.result, 1 << 16 | 256);
  nvme_session_free (h.s);

  only.allowed_hosts = allowed;
  only.nr_allowed_hosts = 1;
  host_open (&h, 3, &only);
  ic (&h, false, false);
  CHECK_EQ (connect (&h, 0, SUBNQN, HOSTNQN, 0xffff, 0),
            ERR (1, NVME_SC_CONNECT_INVALID_HOST));
  CHECK_EQ (h.result, 1 << 16 | 512);
  CHECK_EQ (connect (&h, 0, SUBNQN, allowed[0], 0xffff, 0), 0);
  nvme_session_free (h.s);

  /* The discovery controller: any host, but the log lists the
   * subsystem only to an allowed one.
   */
  host_open (&h, 3, &only);
  ic (&h, false, false);
  CHECK_EQ (connect (&h, 0, DISCOVERY, HOSTNQN, 0xffff, 0), 0);
  CHECK_EQ (idle_ms[3], 121000);        /* KATO 0: two minutes */
  enable (&h);
  CHECK_EQ (get_log (&h, NVME_LOG_LID_DISCOVER, 3072, 0), 0);
  CHECK_EQ (get_le64 (h.data + 8), 1);
  CHECK_EQ (h.data[1024 + 2], NVME_NQN_CURR);
  nvme_session_free (h.s);
  host_open (&h, 3, &only);
  ic (&h, false, false);
  CHECK_EQ (connect (&h, 0, DISCOVERY, allowed[0], 0xffff, 0), 0);
  enable (&h);
  CHECK_EQ (get_log (&h, NVME_LOG_LID_DISCOVER, 3072, 0), 0);
  CHECK_EQ (get_le64 (h.data + 8), 2);
  CHECK_EQ (h.data[1024 + 0], NVMF_TRTYPE_TCP);
  CHECK_EQ (h.data[1024 + 1], NVMF_ADDR_FAMILY_IP4);
  CHECK_EQ (h.data[1024 + 2], NVME_NQN_NVME);
  CHECK (strcmp ((char *) h.data + 1024 + 256, SUBNQN) == 0);
  CHECK (memcmp (h.data + 1024 + 32, "4420 ", 5) == 0);
  CHECK (memcmp (h.data + 1024 + 512, "127.0.0.1 ", 10) == 0);
  CHECK_EQ (identify (&h, NVME_IDENTIFY_CNS_CTRL, 0, 0), 0);
  CHECK_EQ (((struct nvme_id_ctrl *) h.data)->cntrltype,
            NVME_CTRL_CNTRLTYPE_DISCOVERY);
  nvme_session_free (h.s);

  /* -r: the namespace is write-protected. */
  {
    struct nvme_served ro = sv;

    ro.readonly = true;
    host_open (&h, 3, &ro);
    ic (&h, false, false);
    CHECK_EQ (connect (&h, 0, SUBNQN, HOSTNQN, 0xffff, 0), 0);
    enable (&h);
    CHECK_EQ (identify (&h, NVME_IDENTIFY_CNS_NS, 1, 0), 0);
    CHECK (((struct nvme_id_ns *) h.data)->nsattr & 1);
    {
      struct host io;

      host_open (&io, 4, &ro);
      ic (&io, false, false);
      CHECK_EQ (connect (&io, 1, SUBNQN, HOSTNQN, h.cntlid, 0), 0);
      CHECK_EQ (rw (&io, nvme_cmd_write, 0, 8, wbuf, true),
                ERR (0, NVME_SC_NS_WRITE_PROTECTED));
      nvme_session_free (h.s);
      CHECK (aborted[4]);
      nvme_session_free (io.s);
    }
  }
}

/* KATO near 2^32 ms, from Connect and from Set Features: cut to what
 * the idle timer takes with its grace, never wrapped round to a short
 * timeout.
 */
static void
test_kato (void)
{
  uint32_t huge[2] = { NVME_FEAT_FID_KATO, 0xffffffff };
  uint32_t some[2] = { NVME_FEAT_FID_KATO, 5000 };
  uint32_t get[1] = { NVME_FEAT_FID_KATO };
  struct host a;

  host_open (&a, 5, &sv);
  ic (&a, false, false);
  CHECK_EQ (connect (&a, 0, SUBNQN, HOSTNQN, 0xffff, 0xffffffff), 0);
  CHECK_EQ (idle_ms[5], 0xffffffff);
  enable (&a);
  CHECK_EQ (command (&a, nvme_admin_get_features, 0, get, 1, 0, NULL, 0), 0);
  CHECK_EQ (a.result, 0xffffffff - 1000);
  CHECK_EQ (command (&a, nvme_admin_set_features, 0, some, 2, 0, NULL, 0), 0);
  CHECK_EQ (idle_ms[5], 6000);
  CHECK_EQ (command (&a, nvme_admin_set_features, 0, huge, 2, 0, NULL, 0), 0);
  CHECK_EQ (a.result, 0xffffffff - 1000);
  CHECK_EQ (idle_ms[5], 0xffffffff);
  huge[1] = 0xffffffff - 1000;
  CHECK_EQ (command (&a, nvme_admin_set_features, 0, huge, 2, 0, NULL, 0), 0);
  CHECK_EQ (idle_ms[5], 0xffffffff);
  nvme_session_free (a.s);
}

/* An I/O queue of admin queue a's controller, connected. */
static void
io_queue (struct host *io, const struct host *a)
{
  host_open (io, 6, &sv);
  ic (io, false, false);
  CHECK_EQ (connect (io, 1, SUBNQN, HOSTNQN, a->cntlid, 0), 0);
  CHECK_EQ (rw (io, nvme_cmd_read, 0, 8, NULL, false), 0);
}

/* The Error Information log (01h) of controller a, whole: entry i. */
static const struct nvme_error_log_page *
error_entry (struct host *a, unsigned i)
{
  CHECK_EQ (get_log (a, NVME_LOG_LID_ERROR, 64 * 64, 0), 0);
  CHECK_EQ (a->data_len, 64 * 64);
  return (const struct nvme_error_log_page *) a->data + i;
}

/* The newest entry is the failure of command cid on queue sqid with
 * status st, at the SQE field loc (byte offset), for lba and nsid.
 */
static void
expect_error (struct host *a, uint16_t cid, uint16_t sqid, uint16_t st,
              uint16_t loc, uint64_t lba, uint32_t nsid)
{
  const struct nvme_error_log_page *e = error_entry (a, 0);

  CHECK_EQ (le16toh (e->cmdid), cid);
  CHECK_EQ (le16toh (e->sqid), sqid);
  CHECK_EQ (le16toh (e->status_field), st << 1);
  CHECK_EQ (le16toh (e->parm_error_location), loc);
  CHECK_EQ (le64toh (e->lba), lba);
  CHECK_EQ (le32toh (e->nsid), nsid);
}

/* A failing command names the field at fault, in the Error Information
 * log of its controller (as nvmet's error_loc), newest first, 64
 * entries at most (ELPE 63).
 */
static void
test_error_log (void)
{
  struct host a, io;
  uint64_t count;

  host_open (&a, 0, &sv);
  ic (&a, false, false);
  CHECK_EQ (connect (&a, 0, SUBNQN, HOSTNQN, 0xffff, 0), 0);
  enable (&a);
  CHECK_EQ (identify (&a, NVME_IDENTIFY_CNS_CTRL, 0, 0), 0);
  CHECK_EQ (((const struct nvme_id_ctrl *) a.data)->elpe, 63);
  CHECK_EQ (le64toh (error_entry (&a, 0)->error_count), 0);

  /* Identify: an unknown CNS (cdw10's byte 0), a namespace not there. */
  CHECK_EQ (identify (&a, 0x1f, 0, 0), ERR (0, NVME_SC_INVALID_FIELD));
  expect_error (&a, a.cid, 0, ERR (0, NVME_SC_INVALID_FIELD), 40, 0, 0);
  CHECK_EQ (le64toh (error_entry (&a, 0)->error_count), 1);
  CHECK_EQ (identify (&a, NVME_IDENTIFY_CNS_NS, 9, 0),
            ERR (0, NVME_SC_INVALID_NS));
  expect_error (&a, a.cid, 0, ERR (0, NVME_SC_INVALID_NS), 4, 0, 9);
  CHECK_EQ (identify (&a, NVME_IDENTIFY_CNS_CSI_NS, 1, 7),
            ERR (0, NVME_SC_INVALID_FIELD));
  expect_error (&a, a.cid, 0, ERR (0, NVME_SC_INVALID_FIELD), 47, 0, 1);
  /* Set Features with an unknown FID; Get Log Page with an unknown LID. */
  {
    uint32_t cdw[2] = { 0x7e, 1 };

    CHECK_EQ (command (&a, nvme_admin_set_features, 0, cdw, 2, 0, NULL, 0),
              ERR (0, NVME_SC_INVALID_FIELD));
    expect_error (&a, a.cid, 0, ERR (0, NVME_SC_INVALID_FIELD), 40, 0, 0);
  }
  CHECK_EQ (get_log (&a, 0x7e, 512, 0), ERR (1, NVME_SC_INVALID_LOG_PAGE));
  expect_error (&a, a.cid, 0, ERR (1, NVME_SC_INVALID_LOG_PAGE), 40, 0,
                0xffffffff);
  /* A property that is not there: its offset (cdw11). */
  {
    uint32_t cdw[2] = { 0, 0x40 };
    unsigned char q[SQE_LEN];

    sqe (&a, q, nvme_admin_fabrics, 0, cdw, 2, 0, SGL_TRANSPORT);
    q[4] = nvme_fabrics_type_property_get;
    CHECK (exchange (&a, q, NULL, 0));
    CHECK_EQ (a.status, ERR (0, NVME_SC_INVALID_FIELD));
    expect_error (&a, a.cid, 0, ERR (0, NVME_SC_INVALID_FIELD), 44, 0, 0);
  }

  /* An I/O queue's Connect with a QID beyond those granted goes to the
   * controller it names, as the queue it asked for.
   */
  host_open (&io, 6, &sv);
  ic (&io, false, false);
  CHECK_EQ (connect (&io, 3, SUBNQN, HOSTNQN, a.cntlid, 0),
            ERR (1, NVME_SC_CONNECT_INVALID_PARAM));
  expect_error (&a, io.cid, 3, ERR (1, NVME_SC_CONNECT_INVALID_PARAM), 42,
                0, 0);
  CHECK_EQ (connect (&io, 1, SUBNQN, HOSTNQN, a.cntlid, 0), 0);

  /* A read past the namespace: SLBA, on queue 1, with its LBA. */
  CHECK_EQ (rw (&io, nvme_cmd_read, 8 * ZONE_LBAS, 1, NULL, false),
            ERR (0, NVME_SC_LBA_RANGE));
  expect_error (&a, io.cid, 1, ERR (0, NVME_SC_LBA_RANGE), 40,
                8 * ZONE_LBAS, 1);
  /* Past MDTS: NLB.  A zone action that is not one: ZSA. */
  CHECK_EQ (rw (&io, nvme_cmd_read, 0, 257, NULL, false),
            ERR (0, NVME_SC_INVALID_FIELD));
  expect_error (&a, io.cid, 1, ERR (0, NVME_SC_INVALID_FIELD), 48, 0, 1);
  CHECK_EQ (zone_send (&io, ZONE_LBAS, 0x7, false),
            ERR (0, NVME_SC_INVALID_FIELD));
  expect_error (&a, io.cid, 1, ERR (0, NVME_SC_INVALID_FIELD), 52,
                ZONE_LBAS, 1);
  /* A zone append off a zone start: SLBA. */
  CHECK_EQ (rw (&io, nvme_zns_cmd_append, 1, 8, wbuf, true),
            ERR (0, NVME_SC_INVALID_FIELD));
  expect_error (&a, io.cid, 1, ERR (0, NVME_SC_INVALID_FIELD), 40, 1, 1);
  count = le64toh (error_entry (&a, 0)->error_count);
  CHECK_EQ (count, 11);

  /* More errors than entries: the newest 64, newest first, the oldest
   * overwritten; past the 64 entries the page reads as zeroes.
   */
  for (int i = 0; i < 70; i++)
    CHECK_EQ (identify (&a, 0x1f, 0, 0), ERR (0, NVME_SC_INVALID_FIELD));
  count += 70;
  for (unsigned i = 0; i < 64; i++)
    CHECK_EQ (le64toh (error_entry (&a, i)->error_count), count - i);
  CHECK_EQ (get_log (&a, NVME_LOG_LID_ERROR, 65 * 64, 0), 0);
  {
    const struct nvme_error_log_page *e
      = (const struct nvme_error_log_page *) a.data + 64;

    CHECK_EQ (e->error_count, 0);
    CHECK_EQ (e->cmdid, 0);
  }
  nvme_session_free (a.s);
  nvme_session_free (io.s);
}

/* CC.EN and CC.SHN as nvmet has them: before CC.EN only the fabrics
 * commands run; a reset (CC.EN 1 to 0) and a shutdown close the I/O
 * queues and refuse all but the properties until CC.EN is set again.
 */
static void
test_enable (void)
{
  uint32_t shn = CC_ENABLED | NVME_CC_SHN_NORMAL << NVME_CC_SHN_SHIFT;
  struct host a, io;
  uint64_t csts;

  memset (aborted, 0, sizeof aborted);
  host_open (&a, 5, &sv);
  ic (&a, false, false);
  CHECK_EQ (connect (&a, 0, SUBNQN, HOSTNQN, 0xffff, 0), 0);
  CHECK_EQ (identify (&a, NVME_IDENTIFY_CNS_CTRL, 0, 0),
            ERR (0, NVME_SC_CMD_SEQ_ERROR));
  CHECK_EQ (command (&a, nvme_admin_keep_alive, 0, NULL, 0, 0, NULL, 0),
            ERR (0, NVME_SC_CMD_SEQ_ERROR));
  host_open (&io, 6, &sv);
  ic (&io, false, false);
  CHECK_EQ (connect (&io, 1, SUBNQN, HOSTNQN, a.cntlid, 0),
            ERR (0, NVME_SC_CMD_SEQ_ERROR));
  nvme_session_free (io.s);
  enable (&a);
  CHECK_EQ (identify (&a, NVME_IDENTIFY_CNS_CTRL, 0, 0), 0);
  io_queue (&io, &a);

  CHECK_EQ (prop_set (&a, 0x14, CC_ENABLED & ~1u), 0);
  CHECK (aborted[6]);
  CHECK (!nvme_session_connected (io.s));
  CHECK_EQ (rw (&io, nvme_cmd_read, 0, 8, NULL, false),
            ERR (0, NVME_SC_CMD_SEQ_ERROR));
  nvme_session_free (io.s);
  CHECK_EQ (prop_get (&a, 0x1c, false), 0);
  CHECK_EQ (identify (&a, NVME_IDENTIFY_CNS_CTRL, 0, 0),
            ERR (0, NVME_SC_CMD_SEQ_ERROR));
  host_open (&io, 6, &sv);
  ic (&io, false, false);
  CHECK_EQ (connect (&io, 1, SUBNQN, HOSTNQN, a.cntlid, 0),
            ERR (0, NVME_SC_CMD_SEQ_ERROR));
  nvme_session_free (io.s);

  /* Enabled again, the controller serves new I/O queues. */
  enable (&a);
  CHECK_EQ (identify (&a, NVME_IDENTIFY_CNS_CTRL, 0, 0), 0);
  aborted[6] = false;
  io_queue (&io, &a);

  CHECK_EQ (prop_set (&a, 0x14, shn), 0);
  csts = prop_get (&a, 0x1c, false);
  CHECK_EQ (NVME_CSTS_SHST (csts), NVME_CSTS_SHST_CMPLT);
  CHECK_EQ (NVME_CSTS_RDY (csts), 0);
  CHECK (aborted[6]);
  CHECK_EQ (rw (&io, nvme_cmd_read, 0, 8, NULL, false),
            ERR (0, NVME_SC_CMD_SEQ_ERROR));
  nvme_session_free (io.s);
  CHECK_EQ (identify (&a, NVME_IDENTIFY_CNS_CTRL, 0, 0),
            ERR (0, NVME_SC_CMD_SEQ_ERROR));
  /* A reset after the shutdown, then CC.EN: ready again. */
  CHECK_EQ (prop_set (&a, 0x14, 0), 0);
  CHECK_EQ (prop_get (&a, 0x1c, false), 0);
  enable (&a);
  CHECK_EQ (identify (&a, NVME_IDENTIFY_CNS_CTRL, 0, 0), 0);
  nvme_session_free (a.s);
}

/* A capsule that must be refused before any R2T: the first PDU back is
 * its CapsuleResp with status st.
 */
static void
no_r2t (struct host *h, uint8_t opcode, uint32_t sgl_len, uint16_t st)
{
  unsigned char q[SQE_LEN];

  h->pending = wbuf;
  h->r2ts = 0;
  sqe (h, q, opcode, 0, NULL, 0, sgl_len, SGL_TRANSPORT);
  CHECK (exchange (h, q, NULL, 0));
  CHECK_EQ (h->r2ts, 0);
  CHECK_EQ (h->status, st);
}

/* Commands with data for the controller but no use for it get no R2T
 * (issue 32: an admin queue, even a discovery controller's, granted
 * megabytes of R2T buffers for opcodes that take no data).
 */
static void
test_no_r2t (void)
{
  struct host a, io, d;

  host_open (&a, 5, &sv);
  ic (&a, false, false);
  /* Before Connect: only Connect takes data. */
  no_r2t (&a, nvme_admin_set_features, 4096,
          ERR (0, NVME_SC_CMD_SEQ_ERROR));
  CHECK_EQ (connect (&a, 0, SUBNQN, HOSTNQN, 0xffff, 0), 0);
  /* Before CC.EN, as execute answers. */
  no_r2t (&a, 0xc1, 8000, ERR (0, NVME_SC_CMD_SEQ_ERROR));
  enable (&a);
  no_r2t (&a, 0xc1, 8000, ERR (0, NVME_SC_INVALID_OPCODE));
  no_r2t (&a, 0x05, 4096, ERR (0, NVME_SC_INVALID_OPCODE));
  no_r2t (&a, nvme_admin_set_features, 4096,
          ERR (0, NVME_SC_SGL_INVALID_DATA));
  no_r2t (&a, nvme_admin_fabrics, 1024, ERR (0, NVME_SC_SGL_INVALID_DATA));
  /* A second Connect on a connected queue. */
  {
    unsigned char q[SQE_LEN];

    a.pending = wbuf;
    a.r2ts = 0;
    sqe (&a, q, nvme_admin_fabrics, 0, NULL, 0, 1024, SGL_TRANSPORT);
    q[4] = nvme_fabrics_type_connect;
    CHECK (exchange (&a, q, NULL, 0));
    CHECK_EQ (a.r2ts, 0);
    CHECK_EQ (a.status, ERR (0, NVME_SC_CMD_SEQ_ERROR));
  }
  host_open (&io, 6, &sv);
  ic (&io, false, false);
  CHECK_EQ (connect (&io, 1, SUBNQN, HOSTNQN, a.cntlid, 0), 0);
  no_r2t (&io, 0x81, 4096, ERR (0, NVME_SC_INVALID_OPCODE));
  no_r2t (&io, nvme_zns_cmd_mgmt_send, 4096,
          ERR (0, NVME_SC_SGL_INVALID_DATA));
  /* A write still gets its R2T. */
  CHECK_EQ (rw (&io, nvme_cmd_write, 0, 16, wbuf, false), 0);
  CHECK_EQ (io.r2ts, 1);
  nvme_session_free (a.s);
  nvme_session_free (io.s);

  host_open (&d, 5, &sv);
  ic (&d, false, false);
  CHECK_EQ (connect (&d, 0, DISCOVERY, HOSTNQN, 0xffff, 0), 0);
  enable (&d);
  no_r2t (&d, 0xc1, 8000, ERR (0, NVME_SC_INVALID_OPCODE));
  no_r2t (&d, nvme_admin_set_features, 8000,
          ERR (0, NVME_SC_SGL_INVALID_DATA));
  nvme_session_free (d.s);
}

/* Feeds the capsule q; returns what the session's input returned. */
static long
feed_capsule (struct host *h, const unsigned char *q)
{
  size_t plen = build (h, pdu_buf, PDU_CAPSULE_CMD, 0, PDU_CMD_LEN, q,
                       NULL, 0);

  return feed (h, pdu_buf, plen);
}

/* The output budget covers every reply: failing commands wait for room
 * as others do (issue 32: they were answered whatever the budget said),
 * and R2T buffers count in what the session holds.
 */
static void
test_budget (void)
{
  struct nvme_served b = sv;
  struct host h, a, io;
  unsigned char q1[SQE_LEN], q2[SQE_LEN];
  size_t len;

  b.room = room;
  b.fits = fits;

  /* Identify before Connect: no room, no reply, no further input. */
  host_open (&h, 5, &b);
  ic (&h, false, false);
  room_no = true;
  room_asked = 0;
  sqe (&h, q1, nvme_admin_identify, 0, NULL, 0, 4096, SGL_TRANSPORT);
  CHECK_EQ (feed_capsule (&h, q1), PDU_CMD_LEN);
  CHECK_EQ (room_asked, 1);
  /* C2HData and CapsuleResp, digests or not. */
  CHECK_EQ (asked_more, PDU_DATA_LEN + 4096 + PDU_RESP_LEN + 8);
  nvme_session_output (h.s, &len);
  CHECK_EQ (len, 0);
  sqe (&h, q2, 0xff, 0, NULL, 0, 0, SGL_TRANSPORT);
  CHECK_EQ (feed_capsule (&h, q2), 0);
  CHECK_EQ (nvme_session_holds (h.s), 0);
  /* Room: both are answered, in order. */
  room_no = false;
  CHECK_EQ (feed_capsule (&h, q2), PDU_CMD_LEN);
  nvme_session_output (h.s, &len);
  CHECK_EQ (len, 2 * PDU_RESP_LEN);
  CHECK_EQ (nvme_session_holds (h.s), 2 * PDU_RESP_LEN);
  h.cid = 1;
  CHECK (drain (&h));
  CHECK_EQ (h.status, ERR (0, NVME_SC_CMD_SEQ_ERROR));
  h.cid = 2;
  CHECK (drain (&h));
  CHECK_EQ (h.status, ERR (0, NVME_SC_CMD_SEQ_ERROR));
  nvme_session_free (h.s);

  /* An I/O queue: NSID 0, an invalid opcode and a bad SGL type wait
   * for room as a read does.
   */
  host_open (&a, 5, &b);
  ic (&a, false, false);
  CHECK_EQ (connect (&a, 0, SUBNQN, HOSTNQN, 0xffff, 0), 0);
  enable (&a);
  host_open (&io, 6, &b);
  ic (&io, false, false);
  CHECK_EQ (connect (&io, 1, SUBNQN, HOSTNQN, a.cntlid, 0), 0);
  {
    static const struct { uint8_t opcode, sgl_type; uint32_t nsid; } bad[] = {
      { nvme_cmd_read, SGL_TRANSPORT, 0 },
      { 0x55, SGL_TRANSPORT, 1 },
      { nvme_cmd_write, 0x00, 1 },
    };
    static const uint16_t st[] = {
      ERR (0, NVME_SC_INVALID_NS), ERR (0, NVME_SC_INVALID_OPCODE),
      ERR (0, NVME_SC_SGL_INVALID_DATA),
    };
    uint32_t cdw[3] = { 0, 0, 7 };

    for (unsigned i = 0; i < 3; i++) {
      room_no = true;
      room_asked = 0;
      sqe (&io, q1, bad[i].opcode, bad[i].nsid, cdw, 3, 4096, bad[i].sgl_type);
      CHECK_EQ (feed_capsule (&io, q1), PDU_CMD_LEN);
      CHECK_EQ (room_asked, 1);
      nvme_session_output (io.s, &len);
      CHECK_EQ (len, 0);
      CHECK_EQ (feed_capsule (&io, q1), 0);
      room_no = false;
      CHECK_EQ (feed (&io, pdu_buf, 0), 0);
      CHECK (drain (&io));
      CHECK_EQ (io.status, st[i]);
    }
  }

  /* R2Ts: the first asks room, the next only whether they fit, and
   * their buffers count in what the session holds.
   */
  CHECK_EQ (zone_send (&io, 0, NVME_ZNS_ZSA_RESET, true), 0);
  room_asked = fits_asked = 0;
  io.pending = wbuf;
  {
    uint32_t cdw[3] = { 0, 0, 127 };

    sqe (&io, q1, nvme_cmd_write, 1, cdw, 3, 65536, SGL_TRANSPORT);
    CHECK_EQ (feed_capsule (&io, q1), PDU_CMD_LEN);
    CHECK_EQ (room_asked, 1);
    CHECK_EQ (asked_queued, 0);
    CHECK_EQ (asked_more, PDU_R2T_LEN + 65536);
    fits_no = true;
    cdw[0] = 128;
    io.pending = wbuf;
    sqe (&io, q2, nvme_cmd_write, 1, cdw, 3, 65536, SGL_TRANSPORT);
    CHECK_EQ (feed_capsule (&io, q2), PDU_CMD_LEN);
    CHECK_EQ (fits_asked, 1);
    CHECK_EQ (room_asked, 1);
    CHECK_EQ (asked_queued, PDU_R2T_LEN + 65536);
    CHECK_EQ (asked_more, PDU_R2T_LEN + 65536);
    nvme_session_output (io.s, &len);
    CHECK_EQ (len, PDU_R2T_LEN);            /* one R2T only */
    CHECK_EQ (nvme_session_holds (io.s), PDU_R2T_LEN + 65536);
    /* The first's data come in; then, none in flight, the second asks
     * room for its R2T, and gets it.
     */
    {
      const unsigned char *p = nvme_session_output (io.s, &len);
      uint16_t ttag = get_le16 (p + DATA_TTAG);

      CHECK_EQ (p[0], PDU_R2T);
      nvme_session_sent (io.s, len);
      send_h2c (&io, (uint16_t) (io.cid - 1), ttag, 0, 65536);
    }
    CHECK (fits_asked > 1);
    CHECK_EQ (room_asked, 3);   /* the first's reply, the second's R2T */
    io.cid--;
    CHECK (drain (&io));
    CHECK_EQ (io.status, 0);
    io.cid++;
    io.r2ts = 0;
    CHECK (drain (&io));
    CHECK_EQ (io.status, 0);
    CHECK_EQ (io.r2ts, 1);
    CHECK_EQ (nvme_session_holds (io.s), 0);
  }
  nvme_session_free (a.s);
  nvme_session_free (io.s);
}

int
main (void)
{
  struct zn_config cfg = geometry_config (64, 8, 0, 0, 512);
  char nqn[NVME_NQN_MAX + 1];

  cfg.zone_max_open = 1;
  cfg.memory_backed = true;
  devices[0].dev = create (&cfg);
  strcpy (devices[0].name, "nullb0");
  sv = (struct nvme_served) {
    .program = "test-nvme-session", .devices = devices, .nr_devices = 1,
    .admit = admit, .abort = abort_conn, .idle_timeout = idle_timeout,
    .traddr = "127.0.0.1", .trsvcid = "4420",
    .max_queues = 2, .queue_depth = 64,
  };
  strcpy (sv.subnqn, SUBNQN);

  nvme_default_nqn (nqn, sizeof nqn, "4420");
  CHECK (strncmp (nqn, "nqn.2026-12.org.zonednull:", 26) == 0);
  CHECK (strcmp (nqn + strlen (nqn) - 5, ":4420") == 0);

  test_admin_and_io (false);
  test_admin_and_io (true);
  test_bad_pdus ();
  test_refusals ();
  test_kato ();
  test_enable ();
  test_no_r2t ();
  test_budget ();
  test_error_log ();
  zn_dev_destroy (devices[0].dev);
  return 0;
}
