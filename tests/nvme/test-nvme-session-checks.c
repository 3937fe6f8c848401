/* SPDX-License-Identifier: BSD-3-Clause */
/* The NVMe/TCP session without a network, refusing what it must: the
 * checks of every PDU field (TermReq; the digest flags), Connect refusals, the search of a
 * free controller ID (one lap, then Controller Busy), keep-alive (KATO
 * near 2^32 ms too), the features (no Save and Select; the volatile
 * write cache on; Number of Queues not once I/O queues exist), the
 * properties each with its own size, the SGL length of Identify and Get
 * Log Page, teardown, commands refused before an R2T, and the
 * output budget over every reply and R2T buffer.
 */
#include "internal.h"
#include "nvme-session.h"

/* ---- the cases ------------------------------------------------------------ */

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
  /* Data without the DDGST flag, digests negotiated: a fatal error, as
   * a missing HDGST flag is.
   */
  {
    unsigned char q[SQE_LEN], data[1024] = { 0 };
    size_t plen;

    sqe (&h, q, nvme_admin_fabrics, 0, NULL, 0, sizeof data, SGL_DATA_OFFSET);
    q[4] = nvme_fabrics_type_connect;
    plen = build (&h, pdu_buf, PDU_CAPSULE_CMD, 0, PDU_CMD_LEN, q, data,
                  sizeof data);
    pdu_buf[1] &= (unsigned char) ~PDU_F_DDGST;
    CHECK_EQ (feed (&h, pdu_buf, plen), -1);
    CHECK (drain (&h));
    CHECK_EQ (h.fes, FES_INVALID_HEADER);
  }
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

/* Get Features (sel: SEL) or Set Features (value; save: SV) of fid. */
static uint16_t
feature (struct host *h, bool set, uint8_t fid, uint8_t sel, bool save,
         uint32_t value)
{
  uint32_t cdw[2] = { fid | (uint32_t) sel << 8 | (save ? 1u << 31 : 0),
                      value };

  return command (h, set ? nvme_admin_set_features : nvme_admin_get_features,
                  0, cdw, set ? 2 : 1, 0, NULL, 0);
}

/* The field the newest entry of h's Error Information log names. */
static uint16_t
last_error_loc (struct host *h)
{
  CHECK_EQ (get_log (h, NVME_LOG_LID_ERROR, 64 * 64, 0), 0);
  return get_le16 (h->data + 14);
}

/* ONCS has no Save and Select: Get Features with a SEL other than
 * current, and Set Features with SV, fail with Invalid Field (both were
 * served as though the field were 0).
 */
static void
test_save_select (void)
{
  struct host a;

  host_open (&a, 5, &sv);
  ic (&a, false, false);
  CHECK_EQ (connect (&a, 0, SUBNQN, HOSTNQN, 0xffff, 0), 0);
  enable (&a);
  CHECK_EQ (identify (&a, NVME_IDENTIFY_CNS_CTRL, 0, 0), 0);
  CHECK_EQ (le16toh (((struct nvme_id_ctrl *) a.data)->oncs)
            & NVME_CTRL_ONCS_SAVE_FEATURES, 0);
  CHECK_EQ (feature (&a, false, NVME_FEAT_FID_KATO, 0, false, 0), 0);
  for (uint8_t sel = 1; sel < 8; sel++) {
    CHECK_EQ (feature (&a, false, NVME_FEAT_FID_KATO, sel, false, 0),
              ERR (0, NVME_SC_INVALID_FIELD));
    CHECK_EQ (last_error_loc (&a), 41);
  }
  CHECK_EQ (feature (&a, true, NVME_FEAT_FID_KATO, 0, true, 3000),
            ERR (0, NVME_SC_INVALID_FIELD));
  CHECK_EQ (last_error_loc (&a), 43);
  CHECK_EQ (feature (&a, false, NVME_FEAT_FID_KATO, 0, false, 0), 0);
  CHECK_EQ (a.result, 0);               /* not set */
  CHECK_EQ (feature (&a, true, NVME_FEAT_FID_KATO, 0, false, 3000), 0);
  CHECK_EQ (feature (&a, true, NVME_FEAT_FID_ASYNC_EVENT, 0, true, 0),
            ERR (0, NVME_SC_INVALID_FIELD));
  nvme_session_free (a.s);
}

/* An admin queue of served, connected to subnqn and enabled. */
static void
admin_enabled (struct host *a, const struct nvme_served *served,
               const char *subnqn)
{
  host_open (a, 5, served);
  ic (a, false, false);
  CHECK_EQ (connect (a, 0, subnqn, HOSTNQN, 0xffff, 0), 0);
  enable (a);
}

/* Volatile Write Cache: with VWC present in Identify, WCE reads 1 (it
 * read 0, the cache seemingly off) and may be set to 1 only, the cache
 * staying on; without, WCE reads 0 and Set Features is refused.
 */
static void
test_vwc (void)
{
  struct served_device cached[1];
  struct nvme_served c = sv;
  struct zn_config cfg = geometry_config (64, 8, 0, 0, 512);
  struct host a;

  admin_enabled (&a, &sv, SUBNQN);
  CHECK_EQ (identify (&a, NVME_IDENTIFY_CNS_CTRL, 0, 0), 0);
  CHECK_EQ (((struct nvme_id_ctrl *) a.data)->vwc & NVME_CTRL_VWC_PRESENT, 0);
  CHECK_EQ (feature (&a, false, NVME_FEAT_FID_VOLATILE_WC, 0, false, 0), 0);
  CHECK_EQ (a.result, 0);
  CHECK_EQ (feature (&a, true, NVME_FEAT_FID_VOLATILE_WC, 0, false, 1),
            ERR (0, NVME_SC_INVALID_FIELD));
  CHECK_EQ (last_error_loc (&a), 40);
  CHECK_EQ (feature (&a, true, NVME_FEAT_FID_VOLATILE_WC, 0, false, 0),
            ERR (0, NVME_SC_INVALID_FIELD));
  nvme_session_free (a.s);

  memset (cached, 0, sizeof cached);
  cfg.memory_backed = true;
  cfg.cache_size = 1;
  cached[0].dev = create (&cfg);
  strcpy (cached[0].name, "nullb0");
  c.devices = cached;
  admin_enabled (&a, &c, SUBNQN);
  CHECK_EQ (identify (&a, NVME_IDENTIFY_CNS_CTRL, 0, 0), 0);
  CHECK (((struct nvme_id_ctrl *) a.data)->vwc & NVME_CTRL_VWC_PRESENT);
  CHECK_EQ (feature (&a, false, NVME_FEAT_FID_VOLATILE_WC, 0, false, 0), 0);
  CHECK_EQ (a.result, 1);
  CHECK_EQ (feature (&a, true, NVME_FEAT_FID_VOLATILE_WC, 0, false, 1), 0);
  CHECK_EQ (feature (&a, true, NVME_FEAT_FID_VOLATILE_WC, 0, false, 0),
            ERR (0, NVME_SC_INVALID_FIELD));
  CHECK_EQ (last_error_loc (&a), 44);
  CHECK_EQ (feature (&a, false, NVME_FEAT_FID_VOLATILE_WC, 0, false, 0), 0);
  CHECK_EQ (a.result, 1);
  nvme_session_free (a.s);

  /* A discovery controller has no cache, whatever the devices have. */
  admin_enabled (&a, &c, DISCOVERY);
  CHECK_EQ (feature (&a, false, NVME_FEAT_FID_VOLATILE_WC, 0, false, 0), 0);
  CHECK_EQ (a.result, 0);
  CHECK_EQ (feature (&a, true, NVME_FEAT_FID_VOLATILE_WC, 0, false, 1),
            ERR (0, NVME_SC_INVALID_FIELD));
  nvme_session_free (a.s);
  zn_dev_destroy (cached[0].dev);
}

/* Set Features Number of Queues once an I/O queue is connected fails
 * with Command Sequence Error (it changed the number granted under the
 * queues' feet); before, and once they have gone, it is served.
 */
static void
test_nr_queues_late (void)
{
  struct host a, io;

  admin_enabled (&a, &sv, SUBNQN);
  CHECK_EQ (feature (&a, true, NVME_FEAT_FID_NUM_QUEUES, 0, false, 0), 0);
  CHECK_EQ (a.result, 0);               /* one queue, 0-based */
  host_open (&io, 6, &sv);
  ic (&io, false, false);
  CHECK_EQ (connect (&io, 1, SUBNQN, HOSTNQN, a.cntlid, 0), 0);
  CHECK_EQ (feature (&a, true, NVME_FEAT_FID_NUM_QUEUES, 0, false,
                     1u << 16 | 1u), ERR (0, NVME_SC_CMD_SEQ_ERROR));
  CHECK_EQ (feature (&a, false, NVME_FEAT_FID_NUM_QUEUES, 0, false, 0), 0);
  CHECK_EQ (a.result, 0);
  /* Its QID is still the only one granted. */
  {
    struct host io2;

    host_open (&io2, 7, &sv);
    ic (&io2, false, false);
    CHECK_EQ (connect (&io2, 2, SUBNQN, HOSTNQN, a.cntlid, 0),
              ERR (1, NVME_SC_CONNECT_INVALID_PARAM));
    nvme_session_free (io2.s);
  }
  nvme_session_free (io.s);
  CHECK_EQ (feature (&a, true, NVME_FEAT_FID_NUM_QUEUES, 0, false,
                     1u << 16 | 1u), 0);
  CHECK_EQ (a.result, 1u << 16 | 1u);
  nvme_session_free (a.s);
}

/* Property Get (set: Set) with this ATTRIB byte: the status. */
static uint16_t
property (struct host *h, bool set, uint8_t attrib, uint32_t offset,
          uint32_t value)
{
  uint32_t cdw[3] = { attrib, offset, value };
  unsigned char q[SQE_LEN];

  sqe (h, q, nvme_admin_fabrics, 0, cdw, 3, 0, SGL_TRANSPORT);
  q[4] = set ? nvme_fabrics_type_property_set
             : nvme_fabrics_type_property_get;
  CHECK (exchange (h, q, NULL, 0));
  return h->status;
}

/* A property is accessed with its own size, as nvmet has it: CAP in
 * eight bytes, VS, CC and CSTS in four (half a CAP, and eight bytes of
 * the others, were served); the reserved sizes 2 to 7 are refused (they
 * were taken as four bytes).  Each refusal names ATTRIB in the Error
 * Information log.
 */
static void
test_property_sizes (void)
{
  static const uint32_t four[] = { 0x08, 0x14, 0x1c };
  struct host a;

  admin_enabled (&a, &sv, SUBNQN);
  /* The Linux host's accesses. */
  CHECK_EQ (property (&a, false, 1, 0x00, 0), 0);
  CHECK (a.result >> 32 != 0);          /* CAP.CSS */
  for (unsigned i = 0; i < 3; i++)
    CHECK_EQ (property (&a, false, 0, four[i], 0), 0);
  CHECK_EQ (property (&a, true, 0, 0x14, CC_ENABLED), 0);

  CHECK_EQ (property (&a, false, 0, 0x00, 0), ERR (0, NVME_SC_INVALID_FIELD));
  CHECK_EQ (last_error_loc (&a), 40);
  for (unsigned i = 0; i < 3; i++) {
    CHECK_EQ (property (&a, false, 1, four[i], 0),
              ERR (0, NVME_SC_INVALID_FIELD));
    CHECK_EQ (last_error_loc (&a), 40);
  }
  for (uint8_t attrib = 2; attrib < 8; attrib++) {
    CHECK_EQ (property (&a, false, attrib, 0x08, 0),
              ERR (0, NVME_SC_INVALID_FIELD));
    CHECK_EQ (last_error_loc (&a), 40);
    CHECK_EQ (property (&a, true, attrib, 0x14, CC_ENABLED),
              ERR (0, NVME_SC_INVALID_FIELD));
    CHECK_EQ (last_error_loc (&a), 40);
  }
  CHECK_EQ (property (&a, true, 1, 0x14, CC_ENABLED),
            ERR (0, NVME_SC_INVALID_FIELD));
  CHECK_EQ (last_error_loc (&a), 40);
  /* No property there, or not one that may be set: the offset. */
  CHECK_EQ (property (&a, false, 0, 0x04, 0), ERR (0, NVME_SC_INVALID_FIELD));
  CHECK_EQ (last_error_loc (&a), 44);
  CHECK_EQ (property (&a, true, 0, 0x1c, 0), ERR (0, NVME_SC_INVALID_FIELD));
  CHECK_EQ (last_error_loc (&a), 44);
  /* Still enabled: no refused Set reached CC. */
  CHECK_EQ (prop_get (&a, 0x14, false), CC_ENABLED);
  nvme_session_free (a.s);
}

/* Identify and Get Log Page whose SGL asks for another length than
 * the command's data: Data SGL Length Invalid, no data (they were cut
 * short, or fewer bytes sent, and succeeded).
 */
static void
test_data_lengths (void)
{
  static const uint32_t id_len[] = { 0, 512, 4092, 4100, 8192 };
  uint32_t id_cdw[2] = { NVME_IDENTIFY_CNS_CTRL, 0 };
  /* The Error Information log, 4096 bytes: NUMD 1023, 0-based. */
  uint32_t log_cdw[2] = { NVME_LOG_LID_ERROR | 1023u << 16, 0 };
  struct host a;

  admin_enabled (&a, &sv, SUBNQN);
  for (unsigned i = 0; i < sizeof id_len / sizeof *id_len; i++) {
    CHECK_EQ (command (&a, nvme_admin_identify, 0, id_cdw, 2, id_len[i],
                       NULL, 0), ERR (0, NVME_SC_SGL_INVALID_DATA));
    CHECK_EQ (a.data_len, 0);
    CHECK_EQ (last_error_loc (&a), 32);
  }
  for (unsigned i = 0; i < sizeof id_len / sizeof *id_len; i++) {
    CHECK_EQ (command (&a, nvme_admin_get_log_page, 0xffffffff, log_cdw, 2,
                       id_len[i], NULL, 0), ERR (0, NVME_SC_SGL_INVALID_DATA));
    CHECK_EQ (a.data_len, 0);
    CHECK_EQ (last_error_loc (&a), 32);
  }
  /* The lengths the Linux host sends. */
  CHECK_EQ (command (&a, nvme_admin_identify, 0, id_cdw, 2, 4096, NULL, 0), 0);
  CHECK_EQ (a.data_len, 4096);
  CHECK_EQ (command (&a, nvme_admin_get_log_page, 0xffffffff, log_cdw, 2,
                     4096, NULL, 0), 0);
  CHECK_EQ (a.data_len, 4096);
  CHECK_EQ (get_log (&a, NVME_LOG_LID_SMART, 512, 0), 0);
  CHECK_EQ (a.data_len, 512);
  nvme_session_free (a.s);
}

/* An I/O queue of admin queue a's controller, connected. */

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

/* Controller IDs: the IDs a table marks as in use. */
static bool cntlid_used[0x10000];

static bool
cntlid_in_table (const void *arg, uint16_t id)
{
  (void) arg;
  return cntlid_used[id];
}

/* The search of a free controller ID wraps round within 1..0xffef and
 * gives up after one lap (it looped for ever under the registry's lock
 * once every ID was in use, and the server hung).
 */
static void
test_cntlid (void)
{
  uint16_t next = 1;

  CHECK_EQ (nvme_cntlid_pick (&next, cntlid_in_table, NULL), 1);
  CHECK_EQ (next, 2);
  cntlid_used[2] = cntlid_used[3] = true;
  CHECK_EQ (nvme_cntlid_pick (&next, cntlid_in_table, NULL), 4);
  CHECK_EQ (next, 5);
  /* The last ID, then round to the first free one. */
  next = NVME_CNTLID_MAX;
  CHECK_EQ (nvme_cntlid_pick (&next, cntlid_in_table, NULL), 0xffef);
  CHECK_EQ (next, 1);
  cntlid_used[1] = true;
  CHECK_EQ (nvme_cntlid_pick (&next, cntlid_in_table, NULL), 4);
  /* A cursor out of range starts at 1. */
  next = 0xfff5;
  CHECK_EQ (nvme_cntlid_pick (&next, cntlid_in_table, NULL), 4);
  /* One free ID, found from anywhere. */
  for (unsigned id = 1; id <= NVME_CNTLID_MAX; id++)
    cntlid_used[id] = id != 0x8000;
  next = 0x8001;
  CHECK_EQ (nvme_cntlid_pick (&next, cntlid_in_table, NULL), 0x8000);
  CHECK_EQ (next, 0x8001);
  /* None: 0 after one lap, the cursor where it was. */
  cntlid_used[0x8000] = true;
  next = 77;
  CHECK_EQ (nvme_cntlid_pick (&next, cntlid_in_table, NULL), 0);
  CHECK_EQ (next, 77);
  /* The IDs 0xfff0 and above are never offered. */
  for (unsigned id = 1; id <= NVME_CNTLID_MAX; id++)
    cntlid_used[id] = false;
  for (unsigned n = 0; n < NVME_CNTLID_MAX; n++) {
    uint16_t id = nvme_cntlid_pick (&next, cntlid_in_table, NULL);

    CHECK (id >= 1 && id <= NVME_CNTLID_MAX && !cntlid_used[id]);
    cntlid_used[id] = true;
  }
  CHECK_EQ (nvme_cntlid_pick (&next, cntlid_in_table, NULL), 0);
}

int
main (void)
{
  serve_init ();

  test_cntlid ();

  test_bad_pdus ();
  test_refusals ();
  test_kato ();
  test_save_select ();
  test_vwc ();
  test_nr_queues_late ();
  test_property_sizes ();
  test_data_lengths ();
  test_no_r2t ();
  test_budget ();
  zn_dev_destroy (devices[0].dev);
  return 0;
}
