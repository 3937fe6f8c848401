/* SPDX-License-Identifier: BSD-3-Clause */
/* The NVMe/TCP session without a network: hand-built PDUs in through
 * nvme_session_input, the queued PDUs out through nvme_session_output,
 * as the connection layer drives it.  The handshake with and without
 * digests, Connect, properties, identify data, logs, features,
 * in-capsule and R2T writes, reads, zone append, zone reports and
 * management, a ZNS resource error, CC.EN and CC.SHN (commands refused
 * before enable, I/O queues closed on a reset or shutdown), and the
 * Error Information log that names the field of each failure.
 */
#include "model/fault.h"
#include "nvme-session.h"

/* ---- the cases ------------------------------------------------------------ */

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
  CHECK_EQ (NVME_CAP_MQES (cap), 64);   /* a Linux host: 64 tags */
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
  CHECK_EQ (le16toh (idc->maxcmd), 65);
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

/* An I/O queue of controller a, which has read once. */
static void
io_queue (struct host *io, const struct host *a)
{
  host_open (io, 6, &sv);
  ic (io, false, false);
  CHECK_EQ (connect (io, 1, SUBNQN, HOSTNQN, a->cntlid, 0), 0);
  CHECK_EQ (rw (io, nvme_cmd_read, 0, 8, NULL, false), 0);
}

/* A controller, enabled, on admin queue a, and an I/O queue of it. */
static void
controller (struct host *a, struct host *io)
{
  host_open (a, 0, &sv);
  ic (a, false, false);
  CHECK_EQ (connect (a, 0, SUBNQN, HOSTNQN, 0xffff, 0), 0);
  enable (a);
  io_queue (io, a);
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

/* An I/O queue's Connect to a that is not enabled is refused. */
static void
expect_no_io_queue (struct host *io, struct host *a)
{
  host_open (io, 6, &sv);
  ic (io, false, false);
  CHECK_EQ (connect (io, 1, SUBNQN, HOSTNQN, a->cntlid, 0),
            ERR (0, NVME_SC_CMD_SEQ_ERROR));
  nvme_session_free (io->s);
}

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
  expect_no_io_queue (&io, &a);
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
  expect_no_io_queue (&io, &a);

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

/* Sends a Read, or a Write with its data in the capsule, and takes what
 * comes back: true for a reply (its status in h->status).
 */
static bool
rw_answered (struct host *h, uint8_t opcode, uint64_t slba, uint32_t nlb,
             const unsigned char *data)
{
  uint32_t cdw[3] = { (uint32_t) slba, (uint32_t) (slba >> 32), nlb - 1 };
  unsigned char q[SQE_LEN];
  size_t plen;

  sqe (h, q, opcode, 1, cdw, 3, nlb * 512,
       data ? SGL_DATA_OFFSET : SGL_TRANSPORT);
  plen = build (h, pdu_buf, PDU_CAPSULE_CMD, 0, PDU_CMD_LEN, q, data,
                data ? nlb * 512 : 0);
  h->data_len = 0;
  h->status = 0xffff;
  CHECK_EQ (feed (h, pdu_buf, plen), (long) plen);
  return drain (h);
}

static uint64_t
wp_of (uint64_t zone)
{
  struct zn_zone z;

  CHECK_EQ (zn_report_zones (devices[0].dev, zone * ZONE_LBAS, &z, 1), 1u);
  return z.wp;
}

/* The fault settings hold commands back: a write that times out is
 * neither applied nor answered while the queue goes on, and a delayed
 * read's reply waits for its release.  A C2HTermReq is the last PDU: a
 * reply released after it is not sent.
 */
static void
test_faults (void)
{
  struct zn_dev *dev = devices[0].dev;
  const struct zn_geometry *g = zn_dev_geometry (dev);
  static const char *const rules[] = {
    "op=write zone=2 timeout count=1", "op=read zone=2 delay=40 count=1",
    "op=read zone=3 delay=40 count=1",
  };
  struct host a, io;
  size_t len;

  for (unsigned i = 0; i < 3; i++) {
    struct zn_fault_rule r;
    char why[256];

    CHECK_EQ (zn_fault_rule_parse (rules[i], g->capacity, g->zone_sectors,
                                   &r, why, sizeof why), 0);
    CHECK_EQ (zn_fault_add (dev, &r, NULL), 0);
  }
  controller (&a, &io);
  memset (wbuf, 0x5a, 4096);

  CHECK (!rw_answered (&io, nvme_cmd_write, 2 * ZONE_LBAS, 8, wbuf));
  CHECK_EQ (finish_outcome, FINISH_TIMED_OUT);
  CHECK_EQ (wp_of (2), 2u * ZONE_LBAS);
  CHECK (rw_answered (&io, nvme_cmd_write, 2 * ZONE_LBAS, 8, wbuf));
  CHECK_EQ (io.status, 0);
  CHECK_EQ (wp_of (2), 2u * ZONE_LBAS + 8);

  CHECK (!rw_answered (&io, nvme_cmd_read, 2 * ZONE_LBAS, 8, NULL));
  CHECK_EQ (finish_outcome, FINISH_ANSWERED);
  CHECK_EQ (finish_delay_ns, 40000000u);
  nvme_session_release (io.s, finish_id);
  CHECK (drain (&io));
  CHECK_EQ (io.status, 0);
  CHECK_EQ (io.data_len, 4096u);
  CHECK (memcmp (io.data, wbuf, 4096) == 0);

  CHECK (!rw_answered (&io, nvme_cmd_read, 3 * ZONE_LBAS, 8, NULL));
  CHECK_EQ (finish_outcome, FINISH_ANSWERED);
  memset (pdu_buf, 0, 64);
  pdu_buf[0] = PDU_CAPSULE_CMD;
  pdu_buf[2] = 64;                      /* HLEN is 72 */
  put_le32 (pdu_buf + 4, 64);
  CHECK_EQ (feed (&io, pdu_buf, 64), -1);
  CHECK (drain (&io));
  CHECK_EQ (io.fes, FES_INVALID_HEADER);
  nvme_session_release (io.s, finish_id);
  nvme_session_output (io.s, &len);
  CHECK_EQ (len, 0u);
  CHECK_EQ (nvme_session_ready (io.s), 0u);

  zn_fault_clear (dev, 0);
  nvme_session_free (io.s);
  nvme_session_free (a.s);
}

/* The program's workers, as the scheduler offers them (served.h's
 * offload_fn): the jobs are kept here for the test to run and answer.
 */
static struct served_job *jobs[8];
static unsigned nr_jobs;

static bool
take_job (void *owner, struct served_job *job)
{
  (void) owner;
  CHECK (nr_jobs < 8);
  jobs[nr_jobs++] = job;
  return true;
}

/* The oldest job runs, as a worker would, and is answered to session
 * (NULL: its connection closed).
 */
static void
run_job (void *session)
{
  struct served_job *job = jobs[0];

  CHECK (nr_jobs > 0);
  memmove (jobs, jobs + 1, --nr_jobs * sizeof jobs[0]);
  job->run (job);
  job->done (session, job);
}

/* Sends a Zone Management Send (zsa) of the zone at slba. */
static bool
zone_action_answered (struct host *h, uint64_t slba, uint8_t zsa)
{
  uint32_t cdw[4] = { (uint32_t) slba, (uint32_t) (slba >> 32), 0, zsa };
  unsigned char q[SQE_LEN];
  size_t plen;

  sqe (h, q, nvme_zns_cmd_mgmt_send, 1, cdw, 4, 0, SGL_TRANSPORT);
  plen = build (h, pdu_buf, PDU_CAPSULE_CMD, 0, PDU_CMD_LEN, q, NULL, 0);
  h->status = 0xffff;
  CHECK_EQ (feed (h, pdu_buf, plen), (long) plen);
  return drain (h);
}

/* A namespace whose device is marked offload: a write, a FUA write, an
 * append, a flush and a zone reset are answered only once their job ran
 * (the zone's key on the writes and the reset, 0 on the flush), each
 * with the status it has when run at once, a write's data counted in
 * what the session holds meanwhile; a read of data at hand is answered
 * at once; and a job whose session is gone is answered to no one
 * (sanitizers check that nothing touches the session then).
 */
static void
test_offload (void)
{
  struct host a, io;
  size_t held;

  devices[0].offload = true;
  sv.offload = take_job;
  controller (&a, &io);
  CHECK_EQ (nr_jobs, 0u);       /* io_queue's read: data at hand */
  memset (wbuf, 0x3c, 4096);

  held = nvme_session_holds (io.s);
  CHECK (!rw_answered (&io, nvme_cmd_write, 3 * ZONE_LBAS, 8, wbuf));
  CHECK_EQ (nr_jobs, 1u);
  CHECK_EQ (jobs[0]->key, 1u + 3);
  CHECK (jobs[0]->try_run != NULL);
  CHECK_EQ (nvme_session_holds (io.s), held + 4096);
  CHECK_EQ (wp_of (3), 3u * ZONE_LBAS);
  run_job (io.s);
  CHECK (drain (&io));
  CHECK_EQ (io.status, 0);
  CHECK_EQ (wp_of (3), 3u * ZONE_LBAS + 8);
  CHECK_EQ (nvme_session_holds (io.s), held);

  /* Off the write pointer: the model's status, from the job. */
  CHECK (!rw_answered (&io, nvme_cmd_write, 3 * ZONE_LBAS + 64, 8, wbuf));
  run_job (io.s);
  CHECK (drain (&io));
  CHECK_EQ (io.status, ERR (1, NVME_SC_ZNS_INVALID_WRITE));

  CHECK (rw_answered (&io, nvme_cmd_read, 3 * ZONE_LBAS, 8, NULL));
  CHECK_EQ (nr_jobs, 0u);
  CHECK_EQ (io.status, 0);
  CHECK (memcmp (io.data, wbuf, 4096) == 0);

  {
    uint32_t cdw[3] = { 4 * ZONE_LBAS, 0, 7 | NVME_IO_FUA << 16 };
    unsigned char q[SQE_LEN];
    size_t plen;

    sqe (&io, q, nvme_cmd_write, 1, cdw, 3, 4096, SGL_DATA_OFFSET);
    plen = build (&io, pdu_buf, PDU_CAPSULE_CMD, 0, PDU_CMD_LEN, q, wbuf,
                  4096);
    CHECK_EQ (feed (&io, pdu_buf, plen), (long) plen);
    CHECK (!drain (&io));
    CHECK_EQ (nr_jobs, 1u);
    CHECK (jobs[0]->try_run == NULL);
    run_job (io.s);
    CHECK (drain (&io));
    CHECK_EQ (io.status, 0);
  }

  CHECK (!rw_answered (&io, nvme_zns_cmd_append, 5 * ZONE_LBAS, 8, wbuf));
  CHECK_EQ (jobs[0]->key, 1u + 5);
  run_job (io.s);
  CHECK (drain (&io));
  CHECK_EQ (io.status, 0);
  CHECK_EQ (io.result, 5u * ZONE_LBAS);

  io.status = 0xffff;
  {
    unsigned char q[SQE_LEN];
    size_t plen;

    sqe (&io, q, nvme_cmd_flush, 1, NULL, 0, 0, SGL_TRANSPORT);
    plen = build (&io, pdu_buf, PDU_CAPSULE_CMD, 0, PDU_CMD_LEN, q, NULL, 0);
    CHECK_EQ (feed (&io, pdu_buf, plen), (long) plen);
    CHECK (!drain (&io));
    CHECK_EQ (jobs[0]->key, 0u);
    run_job (io.s);
    CHECK (drain (&io));
    CHECK_EQ (io.status, 0);
  }

  CHECK (!zone_action_answered (&io, 3 * ZONE_LBAS, NVME_ZNS_ZSA_RESET));
  CHECK_EQ (jobs[0]->key, 1u + 3);
  CHECK_EQ (wp_of (3), 3u * ZONE_LBAS + 8);
  run_job (io.s);
  CHECK (drain (&io));
  CHECK_EQ (io.status, 0);
  CHECK_EQ (wp_of (3), 3u * ZONE_LBAS);

  /* The connection closes with a write on the workers: it still goes
   * in, and its answer goes to no one.
   */
  CHECK (!rw_answered (&io, nvme_cmd_write, 3 * ZONE_LBAS, 8, wbuf));
  nvme_session_free (io.s);
  run_job (NULL);
  CHECK_EQ (wp_of (3), 3u * ZONE_LBAS + 8);

  nvme_session_free (a.s);
  sv.offload = NULL;
  devices[0].offload = false;
}

/* The output budget counts the output from the start of its buffer: the
 * bytes sent before the queue count until they are taken back, which
 * happens once they are as many as those still queued, and the rest then
 * moves down whole.
 */
static void
test_output_room (void)
{
  uint32_t cdw[3] = { 0, 0, 7 };
  unsigned char q[SQE_LEN];
  unsigned char *copy;
  const unsigned char *p;
  size_t len, rest, held, half;
  struct host a, io;

  controller (&a, &io);
  for (int i = 0; i < 4; i++) {
    size_t plen;

    sqe (&io, q, nvme_cmd_read, 1, cdw, 3, 4096, SGL_TRANSPORT);
    plen = build (&io, pdu_buf, PDU_CAPSULE_CMD, 0, PDU_CMD_LEN, q, NULL, 0);
    CHECK_EQ (feed (&io, pdu_buf, plen), (long) plen);
  }
  p = nvme_session_output (io.s, &len);
  CHECK (len > 4 * 4096);
  held = nvme_session_holds (io.s);
  CHECK_EQ (held, len);
  copy = malloc (len);
  CHECK (copy != NULL);
  memcpy (copy, p, len);

  nvme_session_sent (io.s, len / 4);
  CHECK_EQ (nvme_session_holds (io.s), held);
  p = nvme_session_output (io.s, &rest);
  CHECK_EQ (rest, len - len / 4);
  CHECK (memcmp (p, copy + len / 4, rest) == 0);

  half = len / 2 + 1;
  nvme_session_sent (io.s, half - len / 4);
  p = nvme_session_output (io.s, &rest);
  CHECK_EQ (rest, len - half);
  CHECK_EQ (nvme_session_holds (io.s), rest);
  CHECK (memcmp (p, copy + half, rest) == 0);

  nvme_session_sent (io.s, rest);
  CHECK_EQ (nvme_session_holds (io.s), 0u);
  free (copy);
  nvme_session_free (io.s);
  nvme_session_free (a.s);
}

/* A write parked for its write pointer keeps its data, which the output
 * budget counts until it is resumed; and the write asked for room for
 * that data before it was taken.
 */
static void
test_parked_room (void)
{
  uint32_t cdw[3] = { 0, 0, 7 };
  unsigned char q[SQE_LEN];
  size_t plen, len;
  struct host a, io;

  sv.room = room;
  controller (&a, &io);
  CHECK_EQ (zone_send (&io, 0, NVME_ZNS_ZSA_RESET, true), 0);
  admit_park = true;
  room_asked = 0;
  sqe (&io, q, nvme_cmd_write, 1, cdw, 3, 4096, SGL_DATA_OFFSET);
  plen = build (&io, pdu_buf, PDU_CAPSULE_CMD, 0, PDU_CMD_LEN, q, wbuf, 4096);
  CHECK_EQ (feed (&io, pdu_buf, plen), (long) plen);
  CHECK (!admit_park);
  CHECK (room_asked > 0);
  CHECK (asked_more >= 4096);
  nvme_session_output (io.s, &len);
  CHECK_EQ (len, 0u);                           /* no reply yet */
  CHECK_EQ (nvme_session_holds (io.s), 4096u);
  nvme_session_resume (io.s, parked_id, 0);
  CHECK (drain (&io));
  CHECK_EQ (io.status, 0);
  CHECK_EQ (nvme_session_holds (io.s), 0u);
  nvme_session_free (io.s);
  nvme_session_free (a.s);
  sv.room = NULL;
}

int
main (void)
{
  char nqn[NVME_NQN_MAX + 1];

  serve_init ();

  nvme_default_nqn (nqn, sizeof nqn, "4420");
  CHECK (strncmp (nqn, "nqn.2026-12.org.zonednull:", 26) == 0);
  CHECK (strcmp (nqn + strlen (nqn) - 5, ":4420") == 0);

  test_admin_and_io (false);
  test_admin_and_io (true);
  test_enable ();
  test_error_log ();
  test_faults ();
  test_offload ();
  test_output_room ();
  test_parked_room ();
  zn_dev_destroy (devices[0].dev);
  return 0;
}
