/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: the DH-HMAC-CHAP exchange of one queue (auth.c).
 *
 * The session fuzzer reaches the exchange with raw bytes, which never
 * hold a correct response, so it never sees a host authenticate.  Here
 * the target plays the host: the input is a script of messages, each
 * wrapped in a valid Authentication Send or Receive capsule, and the
 * Reply can be the right one, computed from the exchange's own state as
 * a host with the secret would (this file includes auth.c for that),
 * then mutated at a position and by a value the input picks.
 *
 * Invariants checked: a queue authenticates only after a Reply whose
 * response, DH value and header the script did not touch, and after an
 * untouched one-way Reply of the NULL group it does; the session
 * consumes every capsule whole; sanitizers do the rest (leaks included:
 * the session is freed with the exchange still running).
 */
#include "auth.c"

#include <stdint.h>

#include "pdu.h"
#include "session.h"
#include "model/zoned.h"
#include "fuzz-finish.h"

static struct served_device devices[1];
static struct nvme_host_secret secrets[2];
static struct nvme_served sv = {
  .program = "fuzz-nvme-auth", .devices = devices, .nr_devices = 1,
  .traddr = "127.0.0.1", .trsvcid = "4420", .max_queues = 2,
  .queue_depth = 32, .subnqn = "nqn.2026-12.org.zonednull:fuzz:4420",
  .hosts = secrets, .nr_hosts = 2, .auth_required = true,
};
static const char *const hostnqns[2] = {
  "nqn.2014-08.org.nvmexpress:uuid:one-way",
  "nqn.2014-08.org.nvmexpress:uuid:two-way",
};

static bool
room (void *owner, size_t queued, size_t reply)
{
  (void) owner;
  (void) queued;
  (void) reply;
  return true;
}

static struct admission
admit (void *owner, void *s, const struct data_request *rq)
{
  (void) owner;
  (void) s;
  (void) rq;
  return (struct admission) { ADMIT_NOW, 0 };
}

static void
ignore (void *owner)
{
  (void) owner;
}

static void
ignore_idle (void *owner, unsigned ms)
{
  (void) owner;
  (void) ms;
}

static void
setup (void)
{
  struct zn_config cfg;
  char err[256] = "";
  /* The one-way host's key is transformed with SHA-256; the two-way
   * host also authenticates the controller.
   */
  static const char one_way[] = "nqn.2014-08.org.nvmexpress:uuid:one-way:"
    "DHHC-1:01:ERERERERERERERERERERERERERERERERERERERERERHYIEm8:";
  static const char two_way[] = "nqn.2014-08.org.nvmexpress:uuid:two-way:"
    "DHHC-1:00:ERERERERERERERERERERERERERERERERERERERERERHYIEm8:"
    "DHHC-1:00:ERERERERERERERERERERERERERERERERERERERERERHYIEm8:";

  zn_config_init (&cfg);
  cfg.size = 8;
  cfg.zone_size = 1;
  cfg.memory_backed = true;
  devices[0].dev = zn_dev_create (&cfg, err, sizeof err);
  if (devices[0].dev == NULL || nvme_auth_parse_host (one_way, &secrets[0])
      || nvme_auth_parse_host (two_way, &secrets[1])) {
    fprintf (stderr, "fuzz-nvme-auth: setup failed %s\n", err);
    abort ();
  }
  sv.admit = admit;
  sv.finish = fuzz_finish;
  sv.room = room;
  sv.fits = room;
  sv.abort = ignore;
  sv.idle_timeout = ignore_idle;
}

/* ---- the host's side of the wire ---------------------------------------- */

static void
drain (struct nvme_session *s)
{
  size_t len;

  while (nvme_session_complete_one (s))
    ;
  for (unsigned i = 0; i < fuzz_nr_delayed; i++)
    nvme_session_release (s, fuzz_delayed_ids[i]);
  fuzz_nr_delayed = 0;
  nvme_session_output (s, &len);
  nvme_session_sent (s, len);
}

/* Feeds one capsule; false once the session is gone (it closed the
 * queue, as after Failure1).
 */
static bool
feed (struct nvme_session *s, const unsigned char *pdu, size_t len)
{
  long used = nvme_session_input (s, pdu, len);

  if (used < 0)
    return false;
  if ((size_t) used != len)
    abort ();                   /* a whole capsule is taken whole */
  drain (s);
  return !s->dead;
}

/* An admin capsule: the 64-byte command, then in-capsule data. */
static size_t
capsule (unsigned char *pdu, uint8_t fctype, uint32_t cdw10, uint32_t cdw11,
         const unsigned char *data, uint32_t len)
{
  unsigned char *q = pdu + PDU_CH_LEN;

  memset (pdu, 0, PDU_CMD_LEN);
  pdu[0] = PDU_CAPSULE_CMD;
  pdu[2] = PDU_CMD_LEN;
  pdu[3] = PDU_CMD_LEN;
  put_le32 (pdu + 4, PDU_CMD_LEN + len);
  q[0] = 0x7f;
  q[4] = fctype;
  put_le16 (q + 2, 1);
  put_le32 (q + SQE_SGL_LEN, len);
  q[SQE_SGL_TYPE] = SGL_DATA_OFFSET;
  put_le32 (q + 40, cdw10);
  put_le32 (q + 44, cdw11);
  if (len)
    memcpy (pdu + PDU_CMD_LEN, data, len);
  return PDU_CMD_LEN + len;
}

static unsigned char pdu[PDU_CMD_LEN + 2 * AUTH_SEND_MAX];

static bool
prelude (struct nvme_session *s, const char *hostnqn)
{
  unsigned char ic[PDU_IC_LEN] = { PDU_IC_REQ, 0, PDU_IC_LEN, 0 };
  unsigned char data[1024] = { 0 };

  put_le32 (ic + 4, PDU_IC_LEN);
  if (!feed (s, ic, sizeof ic))
    return false;
  put_le16 (data + 16, 0xffff);
  strcpy ((char *) data + 256, sv.subnqn);
  strcpy ((char *) data + 512, hostnqn);
  return feed (s, pdu, capsule (pdu, 1, 0, 15, data, sizeof data));
}

#define SPSP (1u << 8 | 1u << 16 | 0xe9u << 24)

static bool
send_msg (struct nvme_session *s, const unsigned char *msg, uint32_t len)
{
  /* The command's own checks (SECP, lengths) are the session fuzzer's. */
  return feed (s, pdu, capsule (pdu, nvme_fabrics_type_auth_send, SPSP, len,
                                msg, len));
}

static bool
receive_msg (struct nvme_session *s, uint32_t al)
{
  size_t n = capsule (pdu, nvme_fabrics_type_auth_receive, SPSP, al, NULL, 0);

  put_le32 (pdu + PDU_CH_LEN + SQE_SGL_LEN, al);
  pdu[PDU_CH_LEN + SQE_SGL_TYPE] = SGL_TRANSPORT;
  return feed (s, pdu, n);
}

/* ---- the script ------------------------------------------------------------ */

struct script {
  const uint8_t *p;
  size_t left;
};

static unsigned
take (struct script *sc, unsigned bytes)
{
  unsigned v = 0;

  while (bytes-- && sc->left) {
    v = v << 8 | *sc->p++;
    sc->left--;
  }
  return v;
}

/* Flips a byte of msg where the script says; the offset it flipped, or
 * -1 when it left msg alone.
 */
static long
mutate (struct script *sc, unsigned char *msg, uint32_t len)
{
  unsigned how = take (sc, 1), where = take (sc, 2), xor = take (sc, 1);

  if (!(how & 1) || len == 0 || xor == 0)
    return -1;
  msg[where % len] ^= (unsigned char) xor;
  return (long) (where % len);
}

/* The Reply a host with the secret sends to the Challenge the queue
 * sent, from the exchange's own state (the challenge, its sequence
 * number, the controller's DH value from its private exponent); its
 * length, and in *forged whether the script changed what proves it.
 */
static uint32_t
genuine_reply (struct nvme_session *s, struct script *sc, unsigned char *msg,
               bool *forged, bool *must_pass)
{
  const struct auth_state *a = s->auth;
  struct auth_state host = { 0 };
  size_t hl = hash_len (a->hash);
  bool c2 = take (sc, 1) & 1;
  uint32_t len = REPLY_VALUE + 2 * hl + a->dh_len;
  long at;

  memset (msg, 0, len);
  host.hash = a->hash;
  host.group = a->group;
  host.tid = a->tid;
  host.dh_len = a->dh_len;
  mpz_init (host.priv);
  msg[MSG_TYPE] = MSG_DHCHAP;
  msg[MSG_ID] = ID_REPLY;
  put_le16 (msg + MSG_TID, a->tid);
  msg[MSG_HL] = (uint8_t) hl;
  msg[REPLY_CVALID] = c2;
  put_le16 (msg + REPLY_DHVLEN, (uint16_t) a->dh_len);
  put_le32 (msg + REPLY_SEQNUM, c2 ? 1 + take (sc, 2) : 0);
  if (c2)
    memset (msg + REPLY_VALUE + hl, 0x5a, hl);
  if (a->dh_len) {
    /* The controller's value is g^priv; the session key the host
     * derives from it with its own exponent is the one the controller
     * will derive from the host's value.
     */
    const struct group *g = group_of (a->group);
    unsigned char ctrl_value[MAX_DH_BYTES];
    mpz_t p, gen, pub;

    mpz_of (p, g->prime);
    mpz_of (gen, g->generator);
    mpz_init (pub);
    mpz_powm_sec (pub, gen, a->priv, p);
    nettle_mpz_get_str_256 (a->dh_len, ctrl_value, pub);
    mpz_clears (p, gen, pub, NULL);
    dh_public (&host, msg + REPLY_VALUE + 2 * hl);
    if (!dh_session_key (&host, ctrl_value))
      abort ();
  }
  response (&host, &s->ctrl->secret->host, s->ctrl->hostnqn, a->c1, a->s1,
            "HostHost", s->ctrl->hostnqn, s->sv->subnqn, msg + REPLY_VALUE);
  mpz_clear (host.priv);
  at = mutate (sc, msg, len);
  /* Untouched, one-way and without Diffie-Hellman (whose budget may
   * refuse it), the Reply must authenticate the queue.
   */
  *must_pass = at < 0 && !c2 && a->dh_len == 0;
  /* What proves the host: the type, the identifier, the transaction,
   * HL, DHVLEN, the response and the DH value.  The reserved bytes,
   * CVALID, SEQNUM and C2 may change.
   */
  *forged = at >= 0 && (at <= MSG_ID || (at >= MSG_TID && at <= MSG_HL)
                        || (at >= REPLY_DHVLEN && at < REPLY_SEQNUM)
                        || (at >= REPLY_VALUE && at < (long) (REPLY_VALUE + hl))
                        || at >= (long) (REPLY_VALUE + 2 * hl));
  return len;
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  static unsigned char msg[2 * AUTH_SEND_MAX];
  struct script sc = { data, size };
  struct nvme_session *s;
  bool forged = true, was_auth = false, must_pass = false;

  if (devices[0].dev == NULL)
    setup ();
  s = nvme_session_new (&sv, NULL);
  if (!prelude (s, hostnqns[take (&sc, 1) & 1]))
    goto out;
  while (sc.left) {
    unsigned op = take (&sc, 1) % 6;
    uint32_t len = 0;
    bool alive = true;

    switch (op) {
    case 0: {                   /* Negotiate, hash and group chosen */
      unsigned char *desc = msg + NEG_DESC;
      unsigned groups = take (&sc, 1);

      len = NEG_DESC + DESC_LEN;
      memset (msg, 0, len);
      put_le16 (msg + MSG_TID, (uint16_t) take (&sc, 2));
      msg[NEG_NAPD] = 1;
      desc[DESC_AUTHID] = DHCHAP_AUTHID;
      desc[DESC_HALEN] = 1;
      desc[DESC_HASHES] = (uint8_t) (take (&sc, 1) % 5);
      /* Mostly the NULL group and ffdhe2048: the big groups' cost is
       * the DH budget's to bound, and slows the search down.
       */
      desc[DESC_DHLEN] = 1;
      desc[DESC_GROUPS] = (uint8_t) (groups % 16 < 10 ? 0 : groups % 16 < 15
                                     ? 1 : groups % 7);
      mutate (&sc, msg, len);
      forged = true;
      alive = send_msg (s, msg, len);
      break;
    }
    case 1:                     /* Receive, with the length chosen */
      alive = receive_msg (s, take (&sc, 1) & 1 ? 4096 : take (&sc, 2));
      break;
    case 2:                     /* the right Reply, maybe mutated */
      if (s->auth == NULL || s->auth->step != STEP_REPLY
          || s->ctrl == NULL || s->ctrl->secret == NULL)
        break;
      len = genuine_reply (s, &sc, msg, &forged, &must_pass);
      alive = send_msg (s, msg, len);
      if (must_pass && (!alive || !s->authenticated))
        abort ();               /* the right Reply was refused */
      break;
    case 3:                     /* Success2, or Failure2 */
      len = HEADER_LEN;
      memset (msg, 0, len);
      msg[MSG_TYPE] = MSG_DHCHAP;
      msg[MSG_ID] = take (&sc, 1) & 1 ? ID_FAILURE2 : ID_SUCCESS2;
      put_le16 (msg + MSG_TID, s->auth ? s->auth->tid : 0);
      msg[FAIL_RESCODE] = REASON_FAILED;
      msg[FAIL_RESCODE_EXP] = (uint8_t) take (&sc, 1);
      mutate (&sc, msg, len);
      alive = send_msg (s, msg, len);
      break;
    default:                    /* any message: bytes of the script */
      len = take (&sc, 1) * 4 % AUTH_SEND_MAX + 1;
      if (len > sc.left)
        len = (uint32_t) sc.left;
      if (len == 0)
        break;
      memcpy (msg, sc.p, len);
      sc.p += len;
      sc.left -= len;
      forged = true;
      alive = send_msg (s, msg, len);
      break;
    }
    if (!alive)
      break;
    if (s->authenticated && !was_auth && forged)
      abort ();                 /* a forged Reply authenticated */
    was_auth = s->authenticated;
  }
 out:
  nvme_session_free (s);
  return 0;
}
