/* SPDX-License-Identifier: BSD-3-Clause */
/* DH-HMAC-CHAP on the controller's side (auth.h): the secrets, the
 * messages and the exchange of one queue.
 *
 * The host sends Negotiate, reads the Challenge, sends its Reply, reads
 * Success1 and, when it asked to authenticate the controller too, sends
 * Success2.  A message out of turn, a wrong transaction or a wrong
 * response gets Failure1 at the host's next Authentication Receive; the
 * queue is closed once that is sent (nvmet fails its controller).  The
 * commands themselves succeed: the outcome is in the messages.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gmp.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <isa-l/crc.h>
#include <nettle/base64.h>
#include <nettle/bignum.h>
#include <nettle/hmac.h>
#include <nettle/memops.h>
#include <nettle/sha2.h>
#include <nvme/types.h>

#include "auth.h"
#include "util/clock.h"
#include "util/escape.h"
#include "internal.h"

/* The Security Protocol of DH-HMAC-CHAP, and its SP-specific bytes. */
#define AUTH_SECP 0xe9
#define AUTH_SPSP 0x01

/* Message classes and identifiers. */
enum { MSG_COMMON = 0x00, MSG_DHCHAP = 0x01 };
enum {
  ID_NEGOTIATE = 0x00, ID_CHALLENGE = 0x01, ID_REPLY = 0x02,
  ID_SUCCESS1 = 0x03, ID_SUCCESS2 = 0x04, ID_FAILURE2 = 0xf0,
  ID_FAILURE1 = 0xf1,
};
/* Failure reason (REASON_FAILED) and its explanations. */
enum {
  REASON_FAILED = 0x01,
  FAIL_FAILED = 0x01, FAIL_CONCAT_MISMATCH = 0x03, FAIL_HASH_UNUSABLE = 0x04,
  FAIL_DHGROUP_UNUSABLE = 0x05, FAIL_INCORRECT_PAYLOAD = 0x06,
  FAIL_INCORRECT_MESSAGE = 0x07,
};

/* Where the messages' fields are (byte offsets). */
#define MSG_TYPE 0
#define MSG_ID 1
#define MSG_TID 4
/* Negotiate: SC_C, NAPD, then one protocol descriptor: AUTHID, HALEN,
 * DHLEN, the hash identifiers at 4 and the group identifiers at 34.
 */
#define NEG_SC_C 6
#define NEG_NAPD 7
#define NEG_DESC 8
#define DESC_AUTHID 0
#define DESC_HALEN 2
#define DESC_DHLEN 3
#define DESC_HASHES 4
#define DESC_GROUPS 34
#define DESC_MAX_IDS 30
#define DESC_LEN 64
#define DHCHAP_AUTHID 0x01
/* Challenge, Reply and Success1 share their first eight bytes. */
#define MSG_HL 6
#define CHAL_HASHID 8
#define CHAL_DHGID 9
#define CHAL_DHVLEN 10
#define CHAL_SEQNUM 12
#define CHAL_VALUE 16
#define REPLY_CVALID 8
#define REPLY_DHVLEN 10
#define REPLY_SEQNUM 12
#define REPLY_VALUE 16
#define SUCC1_RVALID 8
#define SUCC1_VALUE 16
#define FAIL_RESCODE 6
#define FAIL_RESCODE_EXP 7
#define FAILURE_LEN 8
#define HEADER_LEN 16

/* The groups, by identifier: NULL-group 0, then ffdhe2048 to 8192. */
#define AUTH_GROUPS 6
#define MAX_DH_BYTES 1024

enum step {
  STEP_NEGOTIATE, STEP_CHALLENGE, STEP_REPLY, STEP_SUCCESS1,
  STEP_SUCCESS2, STEP_FAILURE1,
};

/* One queue's exchange, from Negotiate to its end. */
struct auth_state {
  enum step step;
  uint8_t failure;              /* the explanation Failure1 gives */
  uint16_t tid;
  uint8_t hash, group;
  uint32_t s1, s2;
  bool c2_valid;
  unsigned char c1[AUTH_MAX_HASH], c2[AUTH_MAX_HASH];
  size_t dh_len;                /* the group's value size, 0: none */
  unsigned char skey[MAX_DH_BYTES];
  mpz_t priv;
};

/* ---- the hashes --------------------------------------------------------- */

union hmac_ctx {
  struct hmac_sha256_ctx sha256;
  struct hmac_sha384_ctx sha384;
  struct hmac_sha512_ctx sha512;
};

struct hmac {
  const struct nettle_hash *hash;
  union hmac_ctx ctx;
};

static const struct nettle_hash *
hash_of (uint8_t id)
{
  switch (id) {
  case AUTH_SHA256: return &nettle_sha256;
  case AUTH_SHA384: return &nettle_sha384;
  case AUTH_SHA512: return &nettle_sha512;
  default: return NULL;
  }
}

static size_t
hash_len (uint8_t id)
{
  const struct nettle_hash *h = hash_of (id);

  return h ? h->digest_size : 0;
}

/* The hmac_ctx's outer, inner and state parts, as nettle's generic
 * HMAC functions take them.
 */
#define HMAC_PARTS(m, x) \
  ((m)->hash == &nettle_sha256 ? (void *) &(m)->ctx.sha256.x \
   : (m)->hash == &nettle_sha384 ? (void *) &(m)->ctx.sha384.x \
   : (void *) &(m)->ctx.sha512.x)

static void
hmac_start (struct hmac *m, uint8_t id, const unsigned char *key, size_t len)
{
  m->hash = hash_of (id);
  hmac_set_key (HMAC_PARTS (m, outer), HMAC_PARTS (m, inner),
                HMAC_PARTS (m, state), m->hash, len, key);
}

static void
hmac_add (struct hmac *m, const void *data, size_t len)
{
  hmac_update (HMAC_PARTS (m, state), m->hash, len, data);
}

static void
hmac_end (struct hmac *m, unsigned char *out)
{
  hmac_digest (HMAC_PARTS (m, outer), HMAC_PARTS (m, inner),
               HMAC_PARTS (m, state), m->hash, m->hash->digest_size, out);
  gnutls_memset (&m->ctx, 0, sizeof m->ctx);
}

/* ---- the secrets ------------------------------------------------------- */

#define SECRET_PREFIX "DHHC-1:"

const char *
nvme_auth_parse_secret (const char *text, size_t len, struct auth_key *key)
{
  const size_t plen = strlen (SECRET_PREFIX);
  unsigned char raw[BASE64_DECODE_LENGTH (128)];
  struct base64_decode_ctx b64;
  size_t n = sizeof raw, b64_len;
  uint32_t crc;

  if (len < plen + 3 || memcmp (text, SECRET_PREFIX, plen) != 0
      || text[plen + 2] != ':')
    return "not of the form DHHC-1:XX:BASE64:";
  if (text[plen] != '0' || text[plen + 1] < '0' || text[plen + 1] > '3')
    return "its key transformation XX is not 00, 01, 02 or 03";
  key->transform = (uint8_t) (text[plen + 1] - '0');
  text += plen + 3;
  len -= plen + 3;
  b64_len = len > 0 && text[len - 1] == ':' ? len - 1 : len;
  if (memchr (text, ':', b64_len) || b64_len > 128)
    return "its key is not one base64 string of 36, 52 or 68 bytes";
  base64_decode_init (&b64);
  if (!base64_decode_update (&b64, &n, raw, b64_len, text)
      || !base64_decode_final (&b64))
    return "its key is not valid base64";
  if (n != 36 && n != 52 && n != 68)
    return "its key is not 32, 48 or 64 bytes long (with its CRC-32)";
  n -= 4;
  /* A transformed key is as long as its hash's digest: the Linux host
   * keys its HMAC with as many bytes of the transformed key as the
   * secret has.
   */
  if (key->transform && n != hash_len (key->transform)) {
    gnutls_memset (raw, 0, sizeof raw);
    return "a key transformed with SHA-256, SHA-384 or SHA-512 (XX 01, 02 "
           "or 03) must be 32, 48 or 64 bytes long";
  }
  crc = crc32_gzip_refl (0, raw, n);
  if (get_le32 (raw + n) != crc) {
    gnutls_memset (raw, 0, sizeof raw);
    return "its CRC-32 does not match its key";
  }
  key->len = (uint8_t) n;
  memcpy (key->key, raw, n);
  gnutls_memset (raw, 0, sizeof raw);
  return NULL;
}

/* Where the secret after an NQN begins: the first ":DHHC-1:" (an NQN
 * has colons of its own).
 */
static const char *
secret_start (const char *text)
{
  const char *p = strstr (text, ":" SECRET_PREFIX);

  return p ? p + 1 : NULL;
}

const char *
nvme_auth_parse_host (const char *text, struct nvme_host_secret *h)
{
  const char *first = secret_start (text), *second;
  const char *why;

  memset (h, 0, sizeof *h);
  if (first == NULL)
    return "no DHHC-1 secret after the host NQN (HOSTNQN:SECRET[:CTRL_SECRET])";
  if (first - 1 == text || (size_t) (first - 1 - text) > NVME_NQN_MAX)
    return "the host NQN is empty or longer than 223 bytes";
  memcpy (h->hostnqn, text, (size_t) (first - 1 - text));
  second = secret_start (first + strlen (SECRET_PREFIX));
  why = nvme_auth_parse_secret (first, second ? (size_t) (second - 1 - first)
                                         : strlen (first), &h->host);
  if (why)
    return why;
  if (second == NULL)
    return NULL;
  h->has_ctrl = true;
  return nvme_auth_parse_secret (second, strlen (second), &h->ctrl);
}

const struct nvme_host_secret *
nvme_auth_host_secret (const struct nvme_served *sv, const char *hostnqn)
{
  for (unsigned i = 0; i < sv->nr_hosts; i++)
    if (strcmp (sv->hosts[i].hostnqn, hostnqn) == 0)
      return &sv->hosts[i];
  return NULL;
}

/* The key a response is computed with: the secret's, or its HMAC over
 * the NQN and "NVMe-over-Fabrics" with the hash it names.  Returns its
 * length.
 */
static size_t
transformed (const struct auth_key *key, const char *nqn, unsigned char *out)
{
  static const char label[] = "NVMe-over-Fabrics";
  struct hmac m;

  if (key->transform == 0) {
    memcpy (out, key->key, key->len);
    return key->len;
  }
  hmac_start (&m, key->transform, key->key, key->len);
  hmac_add (&m, nqn, strlen (nqn));
  hmac_add (&m, label, strlen (label));
  hmac_end (&m, out);
  return hash_len (key->transform);
}

/* ---- Diffie-Hellman ---------------------------------------------------- */

struct group {
  const gnutls_datum_t *prime, *generator;
  const unsigned *key_bits;
};

static const struct group *
group_of (uint8_t id)
{
  static const struct group groups[AUTH_GROUPS] = {
    [1] = { &gnutls_ffdhe_2048_group_prime, &gnutls_ffdhe_2048_group_generator,
            &gnutls_ffdhe_2048_key_bits },
    [2] = { &gnutls_ffdhe_3072_group_prime, &gnutls_ffdhe_3072_group_generator,
            &gnutls_ffdhe_3072_key_bits },
    [3] = { &gnutls_ffdhe_4096_group_prime, &gnutls_ffdhe_4096_group_generator,
            &gnutls_ffdhe_4096_key_bits },
    [4] = { &gnutls_ffdhe_6144_group_prime, &gnutls_ffdhe_6144_group_generator,
            &gnutls_ffdhe_6144_key_bits },
    [5] = { &gnutls_ffdhe_8192_group_prime, &gnutls_ffdhe_8192_group_generator,
            &gnutls_ffdhe_8192_key_bits },
  };

  return id > 0 && id < AUTH_GROUPS ? &groups[id] : NULL;
}

static void
mpz_of (mpz_t x, const gnutls_datum_t *d)
{
  nettle_mpz_init_set_str_256_u (x, d->size, d->data);
}

/* A fresh private exponent for a's group, and its public value into
 * out (dh_len bytes, big-endian).
 */
static void
dh_public (struct auth_state *a, unsigned char *out)
{
  const struct group *g = group_of (a->group);
  unsigned char rnd[MAX_DH_BYTES];
  size_t n = (*g->key_bits + 7) / 8;
  mpz_t p, gen, pub;

  gnutls_rnd (GNUTLS_RND_KEY, rnd, n);
  nettle_mpz_set_str_256_u (a->priv, n, rnd);
  gnutls_memset (rnd, 0, n);
  mpz_of (p, g->prime);
  mpz_of (gen, g->generator);
  mpz_init (pub);
  mpz_powm_sec (pub, gen, a->priv, p);
  nettle_mpz_get_str_256 (a->dh_len, out, pub);
  mpz_clears (p, gen, pub, NULL);
}

/* The session key from the host's value (dh_len bytes): false when the
 * value is not one of the group's (1 < y < p - 1).
 */
static bool
dh_session_key (struct auth_state *a, const unsigned char *value)
{
  const struct group *g = group_of (a->group);
  mpz_t p, y, k;
  bool ok;

  mpz_of (p, g->prime);
  nettle_mpz_init_set_str_256_u (y, a->dh_len, value);
  mpz_init (k);
  mpz_sub_ui (k, p, 1);
  ok = mpz_cmp_ui (y, 1) > 0 && mpz_cmp (y, k) < 0;
  if (ok) {
    mpz_powm_sec (k, y, a->priv, p);
    nettle_mpz_get_str_256 (a->dh_len, a->skey, k);
  }
  mpz_clears (p, y, k, NULL);
  return ok;
}

/* The challenge a response covers: c itself with the NULL group, else
 * the HMAC of c keyed with the hash of the session key.
 */
static const unsigned char *
augmented (const struct auth_state *a, const unsigned char *c,
           unsigned char *out)
{
  unsigned char hk[AUTH_MAX_HASH];
  const struct nettle_hash *h = hash_of (a->hash);
  union { struct sha256_ctx s256; struct sha512_ctx s512; } ctx;
  struct hmac m;

  if (a->dh_len == 0)
    return c;
  h->init (&ctx);
  h->update (&ctx, a->dh_len, a->skey);
  h->digest (&ctx, h->digest_size, hk);
  hmac_start (&m, a->hash, hk, h->digest_size);
  hmac_add (&m, c, h->digest_size);
  hmac_end (&m, out);
  gnutls_memset (hk, 0, sizeof hk);
  return out;
}

/* A response: HMAC(key, C || SEQNUM || TID || SC_C || role || one NQN
 * || 0 || the other), as the host and the controller each compute it.
 */
static void
response (const struct auth_state *a, const struct auth_key *key,
          const char *key_nqn, const unsigned char *c, uint32_t seq,
          const char *role, const char *nqn1, const char *nqn2,
          unsigned char *out)
{
  unsigned char k[AUTH_MAX_HASH], aug[AUTH_MAX_HASH], buf[4];
  size_t klen = transformed (key, key_nqn, k);
  const unsigned char *chal = augmented (a, c, aug);
  struct hmac m;

  hmac_start (&m, a->hash, k, klen);
  hmac_add (&m, chal, hash_len (a->hash));
  put_le32 (buf, seq);
  hmac_add (&m, buf, 4);
  put_le16 (buf, a->tid);
  hmac_add (&m, buf, 2);
  buf[0] = 0;                   /* SC_C: no secure channel */
  hmac_add (&m, buf, 1);
  hmac_add (&m, role, strlen (role));
  hmac_add (&m, nqn1, strlen (nqn1));
  hmac_add (&m, buf, 1);
  hmac_add (&m, nqn2, strlen (nqn2));
  hmac_end (&m, out);
  gnutls_memset (k, 0, sizeof k);
}

/* ---- what a peer may make the server compute ------------------------------ */

/* A modular exponentiation in a big group takes the event loop tens of
 * milliseconds, and a host need not hold a secret to ask for one: a
 * Negotiate with a public host NQN is enough.  So the exchanges of a
 * queue are bounded (one at a time, as nvmet's, and a few
 * re-authentications), and each loop's time in Diffie-Hellman is a
 * budget, per host NQN and for all hosts, of which an exchange must
 * find some left or fail.  A budget is a bucket of nanoseconds
 * that refills at rate per second, up to twice that.
 */
#define AUTH_EXCHANGES_MAX 4
#define DH_SERVER_NS_PER_S 250000000u    /* a quarter of the loop */
#define DH_HOST_NS_PER_S 100000000u
#define DH_HOST_BUCKETS 64               /* host NQNs, hashed */

struct dh_budget {
  uint64_t at;                  /* of the last refill, ns */
  int64_t left;                 /* ns */
};

/* Each event loop's time is its own (zonednull-server --threads). */
static _Thread_local struct dh_budget server_budget,
                                      host_budget[DH_HOST_BUCKETS];

static void
refill (struct dh_budget *b, uint64_t now, uint32_t rate)
{
  int64_t cap = 2 * (int64_t) rate;
  /* Ten seconds fill any bucket; longer would overflow the product. */
  uint64_t idle = now - b->at < 10000000000u ? now - b->at : 10000000000u;

  if (b->at == 0)
    b->left = cap;
  else {
    b->left += (int64_t) (idle * rate / 1000000000u);
    if (b->left > cap)
      b->left = cap;
  }
  b->at = now;
}

static struct dh_budget *
host_budget_of (const char *hostnqn)
{
  uint32_t h = 2166136261u;           /* FNV-1a */

  for (const unsigned char *p = (const unsigned char *) hostnqn; *p; p++)
    h = (h ^ *p) * 16777619u;
  return &host_budget[h % DH_HOST_BUCKETS];
}

/* Whether s's host may have the loop compute one more exponentiation. */
static bool
dh_allowed (const struct nvme_session *s)
{
  uint64_t now = zn_now_ns ();
  struct dh_budget *host = host_budget_of (s->ctrl->hostnqn);

  refill (&server_budget, now, DH_SERVER_NS_PER_S);
  refill (host, now, DH_HOST_NS_PER_S);
  return server_budget.left > 0 && host->left > 0;
}

static void
dh_spent (const struct nvme_session *s, uint64_t since)
{
  int64_t ns = (int64_t) (zn_now_ns () - since);

  server_budget.left -= ns;
  host_budget_of (s->ctrl->hostnqn)->left -= ns;
}

static void
dh_refused (const struct nvme_session *s)
{
  char host[ZN_ESCAPED_SIZE (NVME_NQN_MAX)];

  fprintf (stderr, "%s: nvme: host %s, queue %u: Diffie-Hellman refused: "
           "the %s's budget of the event loop's time is spent\n",
           s->sv->program,
           zn_escape (host, sizeof host, s->ctrl->hostnqn,
                      strlen (s->ctrl->hostnqn)), s->qid,
           server_budget.left > 0 ? "host NQN" : "server");
}

/* ---- the exchange -------------------------------------------------------- */

static struct auth_state *
state_of (struct nvme_session *s)
{
  if (s->auth == NULL) {
    s->auth = calloc (1, sizeof *s->auth);
    if (s->auth == NULL)
      nvme_out_of_memory (s);
    mpz_init (s->auth->priv);
  }
  return s->auth;
}

void
nvme_auth_free (struct nvme_session *s)
{
  size_t n;

  if (s->auth == NULL)
    return;
  /* The private exponent's limbs, before GMP frees them. */
  n = mpz_size (s->auth->priv);
  if (n)
    mpn_zero (mpz_limbs_modify (s->auth->priv, (mp_size_t) n), (mp_size_t) n);
  mpz_clear (s->auth->priv);
  gnutls_memset (s->auth, 0, sizeof *s->auth);
  free (s->auth);
  s->auth = NULL;
}

size_t
nvme_auth_holds (const struct nvme_session *s)
{
  return s->auth ? sizeof *s->auth : 0;
}

static uint8_t
failed (struct auth_state *a, uint8_t why)
{
  a->step = STEP_FAILURE1;
  a->failure = why;
  return why;
}

/* The first identifier of ids (n of them) that ok takes, or -1. */
static int
first_of (const unsigned char *ids, unsigned n, bool (*ok) (uint8_t))
{
  for (unsigned i = 0; i < n; i++)
    if (ok (ids[i]))
      return ids[i];
  return -1;
}

static bool hash_ok (uint8_t id) { return hash_of (id) != NULL; }
static bool group_ok (uint8_t id) { return group_of (id) != NULL; }
static bool null_ok (uint8_t id) { return id == 0; }

/* Negotiate: the host's first hash, and its first FFDHE group (a
 * replayed exchange then fails), or the NULL group if it offers only
 * that.
 */
static uint8_t
negotiate (struct auth_state *a, const unsigned char *d, uint32_t len)
{
  const unsigned char *desc = d + NEG_DESC;
  int hash, group;

  if (len < NEG_DESC + DESC_LEN)
    return failed (a, FAIL_INCORRECT_PAYLOAD);
  a->tid = get_le16 (d + MSG_TID);
  if (d[NEG_SC_C] != 0)
    return failed (a, FAIL_CONCAT_MISMATCH);
  if (d[NEG_NAPD] != 1)
    return failed (a, FAIL_HASH_UNUSABLE);
  if (desc[DESC_AUTHID] != DHCHAP_AUTHID || desc[DESC_HALEN] > DESC_MAX_IDS
      || desc[DESC_DHLEN] > DESC_MAX_IDS)
    return failed (a, FAIL_INCORRECT_PAYLOAD);
  hash = first_of (desc + DESC_HASHES, desc[DESC_HALEN], hash_ok);
  if (hash < 0)
    return failed (a, FAIL_HASH_UNUSABLE);
  group = first_of (desc + DESC_GROUPS, desc[DESC_DHLEN], group_ok);
  if (group < 0)
    group = first_of (desc + DESC_GROUPS, desc[DESC_DHLEN], null_ok);
  if (group < 0)
    return failed (a, FAIL_DHGROUP_UNUSABLE);
  a->hash = (uint8_t) hash;
  a->group = (uint8_t) group;
  a->dh_len = group ? group_of (a->group)->prime->size : 0;
  a->step = STEP_CHALLENGE;
  return 0;
}

static uint8_t
reply_msg (struct nvme_session *s, struct auth_state *a,
           const unsigned char *d, uint32_t len)
{
  const struct nvme_host_secret *h = s->ctrl->secret;
  size_t hl, dhvlen;
  unsigned char want[AUTH_MAX_HASH];

  if (len < HEADER_LEN)
    return failed (a, FAIL_INCORRECT_PAYLOAD);
  hl = d[MSG_HL];
  dhvlen = get_le16 (d + REPLY_DHVLEN);
  if (REPLY_VALUE + 2 * hl + dhvlen > len)
    return failed (a, FAIL_INCORRECT_PAYLOAD);
  if (dhvlen != a->dh_len)
    return failed (a, a->dh_len ? FAIL_DHGROUP_UNUSABLE
                                : FAIL_INCORRECT_PAYLOAD);
  if (dhvlen && !dh_allowed (s)) {
    dh_refused (s);
    return failed (a, FAIL_FAILED);
  }
  if (dhvlen) {
    uint64_t start = zn_now_ns ();
    bool ok = dh_session_key (a, d + REPLY_VALUE + 2 * hl);

    dh_spent (s, start);
    if (!ok)
      return failed (a, FAIL_DHGROUP_UNUSABLE);
  }
  if (h == NULL || hl != hash_len (a->hash))
    return failed (a, FAIL_FAILED);
  response (a, &h->host, s->ctrl->hostnqn, a->c1, a->s1, "HostHost",
            s->ctrl->hostnqn, s->sv->subnqn, want);
  if (!nettle_memeql_sec (want, d + REPLY_VALUE, hl))
    return failed (a, FAIL_FAILED);
  a->s2 = get_le32 (d + REPLY_SEQNUM);
  a->c2_valid = d[REPLY_CVALID] && a->s2 != 0;
  if (a->c2_valid)
    memcpy (a->c2, d + REPLY_VALUE + hl, hl);
  else if (!nvme_fabrics_bind (s))
    return failed (a, FAIL_FAILED);
  else
    s->authenticated = true;
  a->step = STEP_SUCCESS1;
  return 0;
}

/* The queue is closed once its Failure1 is sent, or at the host's
 * Failure2: the host starts again on a new connection.
 */
static void
give_up (struct nvme_session *s, const char *what, uint8_t why)
{
  char host[ZN_ESCAPED_SIZE (NVME_NQN_MAX)];

  fprintf (stderr, "%s: nvme: host %s, queue %u: authentication failed: "
           "%s (reason %u)\n", s->sv->program,
           zn_escape (host, sizeof host, s->ctrl->hostnqn,
                      strlen (s->ctrl->hostnqn)),
           s->qid, what, why);
  s->authenticated = false;
  s->dead = true;
  nvme_auth_free (s);
}

static void
auth_send (struct nvme_session *s, const unsigned char *d, uint32_t len)
{
  struct auth_state *a = state_of (s);

  if (len < FAILURE_LEN
      || (d[MSG_TYPE] != MSG_COMMON && d[MSG_TYPE] != MSG_DHCHAP)) {
    failed (a, FAIL_INCORRECT_MESSAGE);
    return;
  }
  if (d[MSG_TYPE] == MSG_COMMON) {
    /* One exchange at a time on a queue, and a few in its life. */
    if (d[MSG_ID] != ID_NEGOTIATE || a->step != STEP_NEGOTIATE)
      failed (a, FAIL_INCORRECT_MESSAGE);
    else if (++s->auth_exchanges > AUTH_EXCHANGES_MAX) {
      nvme_log (s, "queue %u: more than %u authentication exchanges",
                s->qid, AUTH_EXCHANGES_MAX);
      failed (a, FAIL_FAILED);
    } else
      negotiate (a, d, len);
    return;
  }
  if (d[MSG_ID] == ID_FAILURE2) {
    give_up (s, "the host did not accept the controller's response",
             d[FAIL_RESCODE_EXP]);
    return;
  }
  if ((d[MSG_ID] == ID_REPLY && a->step != STEP_REPLY)
      || (d[MSG_ID] == ID_SUCCESS2 && a->step != STEP_SUCCESS2)
      || (d[MSG_ID] != ID_REPLY && d[MSG_ID] != ID_SUCCESS2)) {
    failed (a, FAIL_INCORRECT_MESSAGE);
    return;
  }
  if (get_le16 (d + MSG_TID) != a->tid) {
    failed (a, FAIL_INCORRECT_PAYLOAD);
    return;
  }
  if (d[MSG_ID] == ID_REPLY) {
    reply_msg (s, a, d, len);
    return;
  }
  if (!nvme_fabrics_bind (s)) {
    give_up (s, "another queue authenticated for this QID first", FAIL_FAILED);
    return;
  }
  s->authenticated = true;
  nvme_log (s, "queue %u: host and controller authenticated", s->qid);
  nvme_auth_free (s);
}

/* The message Authentication Receive returns, into out (room enough
 * for the largest): its length.
 */
static size_t
challenge_msg (const struct nvme_session *s, struct auth_state *a,
               unsigned char *out)
{
  size_t hl = hash_len (a->hash);

  out[MSG_TYPE] = MSG_DHCHAP;
  out[MSG_ID] = ID_CHALLENGE;
  put_le16 (out + MSG_TID, a->tid);
  out[MSG_HL] = (uint8_t) hl;
  out[CHAL_HASHID] = a->hash;
  out[CHAL_DHGID] = a->group;
  put_le16 (out + CHAL_DHVLEN, (uint16_t) a->dh_len);
  do
    gnutls_rnd (GNUTLS_RND_NONCE, &a->s1, sizeof a->s1);
  while (a->s1 == 0);
  put_le32 (out + CHAL_SEQNUM, a->s1);
  gnutls_rnd (GNUTLS_RND_NONCE, a->c1, hl);
  memcpy (out + CHAL_VALUE, a->c1, hl);
  if (a->dh_len) {
    uint64_t start = zn_now_ns ();

    dh_public (a, out + CHAL_VALUE + hl);
    dh_spent (s, start);
  }
  a->step = STEP_REPLY;
  return CHAL_VALUE + hl + a->dh_len;
}

static size_t
failure1_msg (const struct auth_state *a, unsigned char *out)
{
  out[MSG_TYPE] = MSG_COMMON;
  out[MSG_ID] = ID_FAILURE1;
  put_le16 (out + MSG_TID, a->tid);
  out[FAIL_RESCODE] = REASON_FAILED;
  out[FAIL_RESCODE_EXP] = a->failure;
  return FAILURE_LEN;
}

static size_t
success1_msg (struct nvme_session *s, struct auth_state *a, unsigned char *out)
{
  const struct nvme_host_secret *h = s->ctrl->secret;
  size_t hl = hash_len (a->hash);

  if (a->c2_valid && !h->has_ctrl) {
    failed (a, FAIL_FAILED);
    return failure1_msg (a, out);
  }
  out[MSG_TYPE] = MSG_DHCHAP;
  out[MSG_ID] = ID_SUCCESS1;
  put_le16 (out + MSG_TID, a->tid);
  out[MSG_HL] = (uint8_t) hl;
  if (!a->c2_valid)
    return SUCC1_VALUE;
  out[SUCC1_RVALID] = 1;
  response (a, &h->ctrl, s->sv->subnqn, a->c2, a->s2, "Controller",
            s->sv->subnqn, s->ctrl->hostnqn, out + SUCC1_VALUE);
  a->step = STEP_SUCCESS2;
  return SUCC1_VALUE + hl;
}

static void
auth_receive (struct nvme_session *s, const struct nvme_cmd *cmd,
              uint32_t al)
{
  struct auth_state *a = state_of (s);
  unsigned char out[HEADER_LEN + AUTH_MAX_HASH + MAX_DH_BYTES] = { 0 };
  enum step before = a->step;
  uint8_t before_failure = a->failure;
  size_t n;

  switch (a->step) {
  case STEP_CHALLENGE:
    if (a->dh_len && !dh_allowed (s)) {
      dh_refused (s);
      failed (a, FAIL_FAILED);
      n = failure1_msg (a, out);
    } else
      n = challenge_msg (s, a, out);
    break;
  case STEP_SUCCESS1:
    n = success1_msg (s, a, out);
    break;
  case STEP_FAILURE1:
    n = failure1_msg (a, out);
    break;
  default:
    failed (a, FAIL_FAILED);
    n = failure1_msg (a, out);
    break;
  }
  if (al < n) {
    /* The host asked for too little: the message waits for its next
     * Receive, as if this one had not come.
     */
    a->step = before;
    a->failure = before_failure;
    nvme_fail (s, cmd, ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD),
          LOC_AUTH_LEN);
    return;
  }
  nvme_reply_data (s, cmd, out, n);
  if (out[MSG_ID] == ID_FAILURE1)
    give_up (s, "Failure1 sent", a->failure);
  else if (a->step == STEP_SUCCESS1) {
    /* Unidirectional: done. */
    nvme_log (s, "queue %u: host authenticated", s->qid);
    nvme_auth_free (s);
  }
}

/* 0, or the status an Authentication Send or Receive fails with. */
static uint16_t
check_auth (const struct nvme_cmd *cmd, uint32_t len, uint16_t *loc)
{
  const struct cmd_auth *c = &cmd->u.auth;

  *loc = LOC_SECP;
  if (c->secp != AUTH_SECP)
    return ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD);
  *loc = LOC_SPSP0;
  if (c->spsp0 != AUTH_SPSP)
    return ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD);
  *loc = LOC_SPSP1;
  if (c->spsp1 != AUTH_SPSP)
    return ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD);
  *loc = LOC_AUTH_LEN;
  if (c->len == 0)
    return ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD);
  *loc = LOC_SGL_LEN;
  if (cmd->fctype == nvme_fabrics_type_auth_send
      ? len != c->len : cmd->sgl_len != c->len)
    return ERR (NVME_SCT_GENERIC, NVME_SC_SGL_INVALID_DATA);
  return 0;
}

void
nvme_auth_command (struct nvme_session *s, const struct nvme_cmd *cmd,
              const unsigned char *data, uint32_t len)
{
  uint16_t loc, st = check_auth (cmd, len, &loc);

  if (st) {
    nvme_fail (s, cmd, st, loc);
    return;
  }
  if (cmd->fctype == nvme_fabrics_type_auth_receive) {
    auth_receive (s, cmd, cmd->u.auth.len);
    return;
  }
  auth_send (s, data, len);
  nvme_reply (s, cmd, 0, 0);
}
