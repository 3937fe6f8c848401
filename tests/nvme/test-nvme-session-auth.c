/* SPDX-License-Identifier: BSD-3-Clause */
/* DH-HMAC-CHAP in the NVMe/TCP session, without a network: the secrets'
 * format, the Authentication Send and Receive fields, a queue that has
 * not authenticated (Authentication Required, a write refused before
 * any R2T or buffer), an exchange with the
 * NULL group (the host's response computed here with Nettle), a wrong
 * response and a message out of turn (Failure1, the queue closed), and
 * what an exchange holds.  tests/nvme/test-server-nvme-auth.sh runs the
 * DH groups and bidirectional authentication over TCP.
 */
#include <nettle/hmac.h>

#include "nvme-session.h"
#include "auth.h"

/* 32 bytes of 0x11, untransformed, with the CRC-32 zlib computes. */
#define KEY11 "ERERERERERERERERERERERERERERERERERERERERER"
#define SECRET "DHHC-1:00:" KEY11 "HYIEm8:"
#define OTHER_SECRET "DHHC-1:00:IiIiIiIiIiIiIiIiIiIiIiIiIiIiIiIiIiIiIiIiIiIGuf2I:"
#define AUTH_SPSP (1u << 8 | 1u << 16 | 0xe9u << 24)

static struct nvme_host_secret host_secret;

static void
test_secrets (void)
{
  struct auth_key k;
  struct nvme_host_secret h;

  CHECK (nvme_auth_parse_secret (SECRET, strlen (SECRET), &k) == NULL);
  CHECK_EQ (k.transform, 0);
  CHECK_EQ (k.len, 32);
  CHECK_EQ (k.key[0], 0x11);
  CHECK_EQ (k.key[31], 0x11);
  /* The last colon may be left out. */
  CHECK (nvme_auth_parse_secret (SECRET, strlen (SECRET) - 1, &k) == NULL);
  CHECK (strstr (nvme_auth_parse_secret ("DHHC-1:00:" KEY11 "HYIEm9:", 59, &k),
                 "CRC-32"));
  CHECK (strstr (nvme_auth_parse_secret ("DHHC-1:04:" KEY11 "HYIEm8:", 59, &k), "XX"));
  CHECK (strstr (nvme_auth_parse_secret ("DHHC-1:00:AAAA:", 15, &k), "32, 48"));
  CHECK (strstr (nvme_auth_parse_secret ("DHHC-1:00:!!!!:", 15, &k), "base64"));
  CHECK (strstr (nvme_auth_parse_secret ("DHHC-2:00:AAAA:", 15, &k), "form"));
  /* 32 bytes cannot be a SHA-512 transformation's key. */
  CHECK (strstr (nvme_auth_parse_secret ("DHHC-1:03:" KEY11 "HYIEm8:", 59, &k),
                 "must be"));

  CHECK (nvme_auth_parse_host (HOSTNQN ":" SECRET, &h) == NULL);
  CHECK_EQ (strcmp (h.hostnqn, HOSTNQN), 0);
  CHECK (!h.has_ctrl);
  CHECK (nvme_auth_parse_host (HOSTNQN ":" SECRET ":" OTHER_SECRET, &h) == NULL);
  CHECK (h.has_ctrl);
  CHECK_EQ (h.ctrl.key[0], 0x22);
  CHECK (nvme_auth_parse_host (HOSTNQN ":" SECRET OTHER_SECRET, &h) == NULL);
  CHECK (h.has_ctrl);
  CHECK (strstr (nvme_auth_parse_host (HOSTNQN, &h), "no DHHC-1 secret"));
  CHECK (strstr (nvme_auth_parse_host (":" SECRET, &h), "empty"));
}

/* ---- the commands -------------------------------------------------------- */

static uint16_t
auth_send (struct host *h, const void *msg, size_t len, uint32_t spsp,
           uint32_t tl)
{
  uint32_t cdw[2] = { spsp, tl };
  unsigned char q[SQE_LEN];

  sqe (h, q, nvme_admin_fabrics, 0, cdw, 2, (uint32_t) len, SGL_DATA_OFFSET);
  q[4] = nvme_fabrics_type_auth_send;
  CHECK (exchange (h, q, msg, len));
  return h->status;
}

/* An Authentication Receive; *closed: the session closes the connection
 * once its reply is sent.
 */
static uint16_t
auth_receive (struct host *h, uint32_t al, bool *closed)
{
  uint32_t cdw[2] = { AUTH_SPSP, al };
  unsigned char q[SQE_LEN];
  size_t plen;
  long used;

  sqe (h, q, nvme_admin_fabrics, 0, cdw, 2, al, SGL_TRANSPORT);
  q[4] = nvme_fabrics_type_auth_receive;
  plen = build (h, pdu_buf, PDU_CAPSULE_CMD, 0, PDU_CMD_LEN, q, NULL, 0);
  h->data_len = 0;
  h->status = 0xffff;
  used = feed (h, pdu_buf, plen);
  *closed = used == -1;
  CHECK (drain (h));
  return h->status;
}

static void
negotiate_msg (unsigned char *m, uint16_t tid, uint8_t hash, uint8_t group)
{
  memset (m, 0, 72);
  put_le16 (m + 4, tid);
  m[7] = 1;                     /* NAPD */
  m[8] = 1;                     /* AUTHID: DH-HMAC-CHAP */
  m[10] = 1;                    /* HALEN */
  m[11] = 1;                    /* DHLEN */
  m[12] = hash;
  m[42] = group;
}

/* The host's response with the NULL group and SHA-256. */
static void
host_response (const unsigned char *c1, uint32_t s1, uint16_t tid,
               const unsigned char *key, unsigned char *out)
{
  struct hmac_sha256_ctx m;
  unsigned char b[7];

  hmac_sha256_set_key (&m, 32, key);
  hmac_sha256_update (&m, 32, c1);
  put_le32 (b, s1);
  put_le16 (b + 4, tid);
  b[6] = 0;
  hmac_sha256_update (&m, 7, b);
  hmac_sha256_update (&m, 8, (const uint8_t *) "HostHost");
  hmac_sha256_update (&m, strlen (HOSTNQN), (const uint8_t *) HOSTNQN);
  hmac_sha256_update (&m, 1, b + 6);
  hmac_sha256_update (&m, strlen (SUBNQN), (const uint8_t *) SUBNQN);
  hmac_sha256_digest (&m, 32, out);
}

static void
reply_msg (unsigned char *m, uint16_t tid, const unsigned char *r)
{
  memset (m, 0, 16 + 64);
  m[0] = 1;
  m[1] = 2;
  put_le16 (m + 4, tid);
  m[6] = 32;
  memcpy (m + 16, r, 32);
}

static void
admin_connected (struct host *a)
{
  host_open (a, 0, &sv);
  ic (a, false, false);
  CHECK_EQ (connect (a, 0, SUBNQN, HOSTNQN, 0xffff, 0), 0);
  /* AUTHREQ.ATR: the host must authenticate. */
  CHECK (a->result & 1u << 17);
  CHECK (!nvme_session_established (a->s));
}

static void
test_fields (void)
{
  struct host a;
  unsigned char *m = wbuf;

  admin_connected (&a);
  negotiate_msg (m, 1, 1, 0);
  CHECK_EQ (auth_send (&a, m, 72, AUTH_SPSP & ~0xff000000u, 72),
            ERR (0, NVME_SC_INVALID_FIELD));
  CHECK_EQ (auth_send (&a, m, 72, AUTH_SPSP & ~0xff00u, 72),
            ERR (0, NVME_SC_INVALID_FIELD));
  CHECK_EQ (auth_send (&a, m, 72, AUTH_SPSP & ~0xff0000u, 72),
            ERR (0, NVME_SC_INVALID_FIELD));
  CHECK_EQ (auth_send (&a, m, 72, AUTH_SPSP, 0),
            ERR (0, NVME_SC_INVALID_FIELD));
  CHECK_EQ (auth_send (&a, m, 72, AUTH_SPSP, 80),
            ERR (0, NVME_SC_SGL_INVALID_DATA));
  /* Before authentication: the properties, nothing else. */
  CHECK_EQ (prop_get (&a, 0x08, false), 0x00010400);
  enable (&a);
  CHECK_EQ (identify (&a, NVME_IDENTIFY_CNS_CTRL, 0, 0),
            ERR (0, NVME_SC_AUTH_REQUIRED));
  CHECK_EQ (command (&a, nvme_admin_keep_alive, 0, NULL, 0, 0, NULL, 0),
            ERR (0, NVME_SC_AUTH_REQUIRED));
  nvme_session_free (a.s);
}

/* A write with its data to come after an R2T, on queue h that has not
 * authenticated: refused at once, no R2T, no buffer held for its data
 * (it was granted an R2T and up to MDTS of buffer, then refused).
 */
static void
write_before_auth (struct host *h)
{
  uint32_t cdw[3] = { 0, 0, 15 };
  unsigned char q[SQE_LEN];
  size_t plen, len;

  sqe (h, q, nvme_cmd_write, 1, cdw, 3, 16 * 512, SGL_TRANSPORT);
  plen = build (h, pdu_buf, PDU_CAPSULE_CMD, 0, PDU_CMD_LEN, q, NULL, 0);
  CHECK_EQ (feed (h, pdu_buf, plen), (long) plen);
  nvme_session_output (h->s, &len);
  CHECK_EQ (len, PDU_RESP_LEN);
  CHECK_EQ (nvme_session_holds (h->s), PDU_RESP_LEN);
  h->pending = wbuf;
  h->r2ts = 0;
  CHECK (drain (h));
  CHECK_EQ (h->r2ts, 0);
  CHECK_EQ (h->status, ERR (0, NVME_SC_AUTH_REQUIRED));
  CHECK_EQ (nvme_session_holds (h->s), 0);
}

static void
test_exchange (void)
{
  struct host a, io;
  unsigned char m[80], c1[32], r[32];
  uint32_t s1;
  bool closed;

  admin_connected (&a);
  negotiate_msg (m, 7, 1, 0);
  CHECK_EQ (auth_send (&a, m, 72, AUTH_SPSP, 72), 0);
  CHECK (nvme_session_holds (a.s) > 0);
  /* Too short for the Challenge: refused, the Challenge still comes. */
  CHECK_EQ (auth_receive (&a, 16, &closed), ERR (0, NVME_SC_INVALID_FIELD));
  CHECK (!closed);
  CHECK_EQ (auth_receive (&a, 4096, &closed), 0);
  CHECK (!closed);
  CHECK_EQ (a.data_len, 16 + 32);
  CHECK_EQ (a.data[1], 0x01);   /* Challenge */
  CHECK_EQ (get_le16 (a.data + 4), 7);
  CHECK_EQ (a.data[6], 32);     /* HL */
  CHECK_EQ (a.data[8], 1);      /* SHA-256 */
  CHECK_EQ (a.data[9], 0);      /* NULL group */
  s1 = get_le32 (a.data + 12);
  CHECK (s1 != 0);
  memcpy (c1, a.data + 16, 32);
  host_response (c1, s1, 7, host_secret.host.key, r);
  reply_msg (m, 7, r);
  CHECK_EQ (auth_send (&a, m, 16 + 64, AUTH_SPSP, 16 + 64), 0);
  CHECK_EQ (auth_receive (&a, 4096, &closed), 0);
  CHECK (!closed);
  CHECK_EQ (a.data[1], 0x03);   /* Success1 */
  CHECK_EQ (a.data[8], 0);      /* no controller response */
  CHECK (nvme_session_established (a.s));
  CHECK_EQ (nvme_session_holds (a.s), 0);
  enable (&a);
  CHECK_EQ (identify (&a, NVME_IDENTIFY_CNS_CTRL, 0, 0), 0);

  /* The I/O queue must authenticate too. */
  host_open (&io, 1, &sv);
  ic (&io, false, false);
  CHECK_EQ (connect (&io, 1, SUBNQN, HOSTNQN, a.cntlid, 0), 0);
  CHECK (io.result & 1u << 17);
  CHECK_EQ (command (&io, nvme_cmd_flush, 1, NULL, 0, 0, NULL, 0),
            ERR (0, NVME_SC_AUTH_REQUIRED));
  write_before_auth (&io);
  /* A Reply before Negotiate: out of turn. */
  CHECK_EQ (auth_send (&io, m, 16 + 64, AUTH_SPSP, 16 + 64), 0);
  CHECK_EQ (auth_receive (&io, 4096, &closed), 0);
  CHECK (closed);
  CHECK_EQ (io.data[1], 0xf1);  /* Failure1 */
  CHECK_EQ (io.data[6], 0x01);
  CHECK_EQ (io.data[7], 0x07);  /* incorrect message */
  nvme_session_free (io.s);
  nvme_session_free (a.s);
}

static void
test_wrong_response (void)
{
  struct host a;
  unsigned char m[80], r[32];
  bool closed;

  admin_connected (&a);
  negotiate_msg (m, 3, 1, 0);
  CHECK_EQ (auth_send (&a, m, 72, AUTH_SPSP, 72), 0);
  CHECK_EQ (auth_receive (&a, 4096, &closed), 0);
  /* The right response to another challenge. */
  host_response (a.data + 16, get_le32 (a.data + 12) + 1, 3,
                 host_secret.host.key, r);
  reply_msg (m, 3, r);
  CHECK_EQ (auth_send (&a, m, 16 + 64, AUTH_SPSP, 16 + 64), 0);
  CHECK (!nvme_session_established (a.s));
  CHECK_EQ (auth_receive (&a, 4096, &closed), 0);
  CHECK (closed);
  CHECK_EQ (a.data[1], 0xf1);
  CHECK_EQ (a.data[7], 0x01);   /* failed */
  CHECK (!nvme_session_established (a.s));
  nvme_session_free (a.s);

  /* No hash the controller has. */
  admin_connected (&a);
  negotiate_msg (m, 3, 9, 0);
  CHECK_EQ (auth_send (&a, m, 72, AUTH_SPSP, 72), 0);
  CHECK_EQ (auth_receive (&a, 4096, &closed), 0);
  CHECK (closed);
  CHECK_EQ (a.data[7], 0x04);   /* hash unusable */
  nvme_session_free (a.s);
}

/* --nvme-host given leaves the subsystem closed to a host without a
 * secret, even when no host has one: an empty list is not "everyone".
 */
static void
test_no_hosts (void)
{
  struct nvme_served none = sv;
  struct host a;

  none.hosts = NULL;
  none.nr_hosts = 0;
  host_open (&a, 0, &none);
  ic (&a, false, false);
  CHECK (connect (&a, 0, SUBNQN, HOSTNQN, 0xffff, 0) != 0);
  CHECK (!nvme_session_established (a.s));
  nvme_session_free (a.s);
}

int
main (void)
{
  serve_init ();
  test_secrets ();
  CHECK (nvme_auth_parse_host (HOSTNQN ":" SECRET, &host_secret) == NULL);
  sv.hosts = &host_secret;
  sv.nr_hosts = 1;
  sv.auth_required = true;
  test_fields ();
  test_exchange ();
  test_wrong_response ();
  test_no_hosts ();
  zn_dev_destroy (devices[0].dev);
  return 0;
}
