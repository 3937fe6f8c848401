/* SPDX-License-Identifier: BSD-3-Clause */
/* NVMe/TCP's TLS pre-shared keys: the interchange format, the PSK
 * identities and the HKDF derivations (see tls-psk.h).  Every primitive
 * is GnuTLS's (HKDF, HMAC, base64) or ISA-L's (the format's CRC-32, as auth.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <gnutls/gnutls.h>
#include <gnutls/crypto.h>
#include <isa-l/crc.h>

#include "session.h"
#include "tls-psk.h"
#include "util/secret-file.h"

#define KEY_PREFIX "NVMeTLSkey-1:"
#define DISCOVERY_NQN "nqn.2014-08.org.nvmexpress.discovery"

struct host_key {
  char hostnqn[NVME_NQN_MAX + 1];
  unsigned char hmac;           /* the format's HH: 0 none, 1 SHA-256 */
  unsigned char key[NVME_TLS_PSK_MAX];
  size_t len;
};

static struct host_key *keys;
static unsigned nr_keys;
static char subsys[NVME_NQN_MAX + 1];
static bool compat;

/* ---- the interchange format ------------------------------------------------ */

/* NVMeTLSkey-1:HH:BASE64: into k; -1 with the rule it broke. */
static int
parse_key (const char *text, struct host_key *k, char *why, size_t whylen)
{
  const char *b64 = text + strlen (KEY_PREFIX) + 3, *end;
  gnutls_datum_t in, out = { NULL, 0 };
  uint32_t crc;
  int r = -1;

  if (strncmp (text, KEY_PREFIX, strlen (KEY_PREFIX)) != 0
      || strlen (text) < strlen (KEY_PREFIX) + 3
      || text[strlen (KEY_PREFIX) + 2] != ':') {
    snprintf (why, whylen, "not a key in the format NVMeTLSkey-1:HH:BASE64: "
              "(nvme gen-tls-key)");
    return -1;
  }
  if (strncmp (text + strlen (KEY_PREFIX), "00", 2) == 0)
    k->hmac = 0;
  else if (strncmp (text + strlen (KEY_PREFIX), "01", 2) == 0)
    k->hmac = 1;
  else if (strncmp (text + strlen (KEY_PREFIX), "02", 2) == 0) {
    snprintf (why, whylen, "a SHA-384 key (02): its TLS_AES_256_GCM_SHA384 "
              "handshake needs GnuTLS 3.8.1's SHA-384 PSK binders; use "
              "nvme gen-tls-key --hmac=1");
    return -1;
  }
  else {
    snprintf (why, whylen, "the hash HH must be 00 (none) or 01 (SHA-256)");
    return -1;
  }
  end = strchr (b64, ':');
  if (end == NULL || end[1] != '\0') {
    snprintf (why, whylen, "the key must end with one ':' after its base64");
    return -1;
  }
  in.data = (unsigned char *) b64;
  in.size = (unsigned) (end - b64);
  if (gnutls_base64_decode2 (&in, &out) < 0) {
    snprintf (why, whylen, "the key is not valid base64");
    return -1;
  }
  if (out.size != 32 + 4) {
    snprintf (why, whylen, "the key must hold 32 bytes and their CRC-32 "
              "(it holds %u bytes; 48-byte SHA-384 keys are not supported)",
              out.size);
    goto out;
  }
  crc = crc32_gzip_refl (0, out.data, 32);
  if ((out.data[32] | out.data[33] << 8 | out.data[34] << 16
       | (uint32_t) out.data[35] << 24) != crc) {
    snprintf (why, whylen,
              "the key's CRC-32 does not match (a key mistyped?)");
    goto out;
  }
  memcpy (k->key, out.data, 32);
  k->len = 32;
  r = 0;
 out:
  gnutls_memset (out.data, 0, out.size);
  gnutls_free (out.data);
  return r;
}

int
nvme_tls_key_add (const char *spec, const char *where,
                  char *err, size_t errlen)
{
  const char *at = strstr (spec, ":" KEY_PREFIX);
  struct host_key k = { .len = 0 }, *p;
  char why[256];
  size_t n;

  if (at == NULL || at == spec) {
    snprintf (err, errlen, "%s: not HOSTNQN:NVMeTLSkey-1:HH:BASE64:", where);
    return -1;
  }
  n = (size_t) (at - spec);
  if (n > NVME_NQN_MAX || memchr (spec, ' ', n)) {
    snprintf (err, errlen, "%s: the host NQN must be 1 to %d bytes without "
              "spaces", where, NVME_NQN_MAX);
    return -1;
  }
  memcpy (k.hostnqn, spec, n);
  for (unsigned i = 0; i < nr_keys; i++)
    if (strcmp (keys[i].hostnqn, k.hostnqn) == 0) {
      snprintf (err, errlen, "%s: host %s has a key already", where,
                k.hostnqn);
      return -1;
    }
  if (parse_key (at + 1, &k, why, sizeof why) == -1) {
    snprintf (err, errlen, "%s: host %s: %s", where, k.hostnqn, why);
    return -1;
  }
  p = realloc (keys, (nr_keys + 1) * sizeof *p);
  if (p == NULL) {
    gnutls_memset (&k, 0, sizeof k);
    snprintf (err, errlen, "%s: out of memory", where);
    return -1;
  }
  keys = p;
  keys[nr_keys++] = k;
  gnutls_memset (&k, 0, sizeof k);
  return 0;
}

int
nvme_tls_keys_load (const char *path, char *err, size_t errlen)
{
  char *line = NULL, where[512];
  size_t cap = 0;
  ssize_t n;
  unsigned lineno = 0, before = nr_keys;
  int r = 0;
  FILE *fp;

  snprintf (where, sizeof where, "--nvme-tls-keys %s", path);
  fp = zn_secret_file_open (path, where, err, errlen);
  if (fp == NULL)
    return -1;
  while (r == 0 && (n = getline (&line, &cap, fp)) != -1) {
    lineno++;
    if (memchr (line, '\0', (size_t) n)) {
      snprintf (err, errlen, "--nvme-tls-keys %s: line %u: holds a NUL byte",
                path, lineno);
      r = -1;
      break;
    }
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'
                     || line[n - 1] == ' '))
      line[--n] = '\0';
    if (n == 0 || line[0] == '#')
      continue;
    snprintf (where, sizeof where, "--nvme-tls-keys %s: line %u", path,
              lineno);
    r = nvme_tls_key_add (line, where, err, errlen);
  }
  /* A key file without a key would leave the port in clear text. */
  if (r == 0 && nr_keys == before) {
    snprintf (err, errlen, "--nvme-tls-keys %s: holds no key (no "
              "HOSTNQN:NVMeTLSkey-1:... line)", path);
    r = -1;
  }
  if (line)
    gnutls_memset (line, 0, cap);
  free (line);
  fclose (fp);
  return r;
}

unsigned
nvme_tls_nr_keys (void)
{
  return nr_keys;
}

void
nvme_tls_configure (const char *subnqn, bool use_compat)
{
  snprintf (subsys, sizeof subsys, "%s", subnqn);
  compat = use_compat;
}

void
nvme_tls_keys_free (void)
{
  if (keys)
    gnutls_memset (keys, 0, nr_keys * sizeof *keys);
  free (keys);
  keys = NULL;
  nr_keys = 0;
}

/* ---- identities -------------------------------------------------------------- */

struct identity {
  int version;                  /* 0, or 1 with a digest */
  int hash;                     /* 1 SHA-256, 2 SHA-384 */
  char hostnqn[NVME_NQN_MAX + 1];
  char subnqn[NVME_NQN_MAX + 1];
  char digest[128];
};

/* The next space-free word of *p into buf; false if none fits. */
static bool
word (const char **p, char *buf, size_t size)
{
  size_t n = strcspn (*p, " ");

  if (n == 0 || n >= size)
    return false;
  memcpy (buf, *p, n);
  buf[n] = '\0';
  *p += n;
  if (**p == ' ')
    (*p)++;
  return true;
}

static int
parse_identity (const char *text, struct identity *id, char *why,
                size_t whylen)
{
  const char *p = text + 9;

  if (strncmp (text, "NVMe", 4) != 0 || (text[4] != '0' && text[4] != '1')
      || (text[5] != 'R' && text[5] != 'G') || text[6] != '0'
      || (text[7] != '1' && text[7] != '2') || text[8] != ' ') {
    snprintf (why, whylen, "not an NVMe/TCP PSK identity (NVMe0R01 HOSTNQN "
              "SUBNQN, or NVMe1R01 ... DIGEST)");
    return -1;
  }
  id->version = text[4] - '0';
  id->hash = text[7] - '0';
  if (!word (&p, id->hostnqn, sizeof id->hostnqn)
      || !word (&p, id->subnqn, sizeof id->subnqn)
      || (id->version == 1 && !word (&p, id->digest, sizeof id->digest))
      || *p != '\0') {
    snprintf (why, whylen, "a version %d identity has %s", id->version,
              id->version ? "a host NQN, a subsystem NQN and a PSK digest"
              : "a host NQN and a subsystem NQN");
    return -1;
  }
  if (text[5] == 'G') {
    snprintf (why, whylen, "a generated PSK (from DH-HMAC-CHAP's secure "
              "channel concatenation), which this server does not make");
    return -1;
  }
  return 0;
}

/* ---- derivations ------------------------------------------------------------- */

/* RFC 8446's HkdfLabel for HKDF-Expand-Label(secret, label, context, len):
 * the length (big-endian), then label and context each behind its length
 * byte.  nvme-cli before 2.15 wrote the length little-endian and the
 * label and context without their length bytes (compat).  Returns the
 * info's length, 0 if a part is too long for a length byte.
 */
static size_t
hkdf_label (unsigned char *info, size_t size, size_t len, const char *label,
            const char *context, size_t ctxlen)
{
  size_t lablen = 6 + strlen (label), n = 0;

  if ((!compat && (lablen > 255 || ctxlen > 255))
      || 4 + lablen + ctxlen > size)
    return 0;
  info[n++] = (unsigned char) (compat ? len & 0xff : len >> 8);
  info[n++] = (unsigned char) (compat ? len >> 8 : len & 0xff);
  if (!compat)
    info[n++] = (unsigned char) lablen;
  memcpy (info + n, "tls13 ", 6);
  memcpy (info + n + 6, label, lablen - 6);
  n += lablen;
  if (!compat)
    info[n++] = (unsigned char) ctxlen;
  memcpy (info + n, context, ctxlen);
  return n + ctxlen;
}

/* HKDF-Expand-Label (HKDF-Extract (0, in), label, context, len) into out. */
static int
expand_label (const unsigned char *in, size_t len, const char *label,
              const char *context, size_t ctxlen, unsigned char *out)
{
  unsigned char prk[NVME_TLS_PSK_MAX], info[600];
  gnutls_datum_t key = { (unsigned char *) in, (unsigned) len };
  gnutls_datum_t salt = { (unsigned char *) "", 0 }, inf;
  size_t n = hkdf_label (info, sizeof info, len, label, context, ctxlen);
  int r;

  if (n == 0)
    return -1;
  inf = (gnutls_datum_t) { info, (unsigned) n };
  r = gnutls_hkdf_extract (GNUTLS_MAC_SHA256, &key, &salt, prk);
  if (r == 0) {
    key = (gnutls_datum_t) { prk, 32 };
    r = gnutls_hkdf_expand (GNUTLS_MAC_SHA256, &key, &inf, out, len);
  }
  gnutls_memset (prk, 0, sizeof prk);
  return r < 0 ? -1 : 0;
}

static int
retained_psk (const struct host_key *k, unsigned char *out)
{
  if (k->hmac == 0) {
    memcpy (out, k->key, k->len);
    return 0;
  }
  return expand_label (k->key, k->len, "HostNQN", k->hostnqn,
                       strlen (k->hostnqn), out);
}

/* The PSK digest of a version 1 identity: base64 of HMAC (retained,
 * "HOSTNQN SUBNQN NVMe-over-Fabrics").
 */
static int
psk_digest (const unsigned char *retained, size_t len, const char *hostnqn,
            const char *subnqn, char *out, size_t size)
{
  char text[2 * NVME_NQN_MAX + 32];
  unsigned char mac[NVME_TLS_PSK_MAX];
  gnutls_datum_t in = { mac, (unsigned) len }, b64 = { NULL, 0 };
  int n = snprintf (text, sizeof text, "%s %s NVMe-over-Fabrics", hostnqn,
                    subnqn);

  if (gnutls_hmac_fast (GNUTLS_MAC_SHA256, retained, len, text, (size_t) n,
                        mac) < 0
      || gnutls_base64_encode2 (&in, &b64) < 0)
    return -1;
  snprintf (out, size, "%.*s", (int) b64.size, b64.data);
  gnutls_free (b64.data);
  return 0;
}

static const struct host_key *
find_key (const char *hostnqn)
{
  for (unsigned i = 0; i < nr_keys; i++)
    if (strcmp (keys[i].hostnqn, hostnqn) == 0)
      return &keys[i];
  return NULL;
}

/* The identity's subsystem and hash, and the host's key. */
static const struct host_key *
check_identity (const struct identity *id, char *why, size_t whylen)
{
  const struct host_key *k;

  if (strcmp (id->subnqn, subsys) != 0
      && strcmp (id->subnqn, DISCOVERY_NQN) != 0) {
    snprintf (why, whylen, "the identity names another subsystem");
    return NULL;
  }
  if (id->hash != 1) {
    snprintf (why, whylen, "a SHA-384 identity (R02): only SHA-256 keys are "
              "served");
    return NULL;
  }
  if ((k = find_key (id->hostnqn)) == NULL)
    snprintf (why, whylen, "no key for this host (--nvme-tls-key)");
  return k;
}

int
nvme_tls_psk (const char *identity, unsigned char *psk, size_t *len,
              char *why, size_t whylen)
{
  struct identity id;
  const struct host_key *k;
  unsigned char retained[NVME_TLS_PSK_MAX];
  char digest[128], context[160];
  int r = -1;

  if (parse_identity (identity, &id, why, whylen) == -1
      || (k = check_identity (&id, why, whylen)) == NULL)
    return -1;
  if (retained_psk (k, retained) == -1) {
    snprintf (why, whylen, "the retained PSK could not be derived");
    goto out;
  }
  if (id.version == 0)
    r = expand_label (retained, k->len, "nvme-tls-psk", identity,
                      strlen (identity), psk);
  else if (psk_digest (retained, k->len, id.hostnqn, id.subnqn, digest,
                       sizeof digest) == 0) {
    if (strcmp (digest, id.digest) != 0) {
      snprintf (why, whylen, "the identity's PSK digest is another key's (or "
                "another derivation's: --nvme-tls-compat)");
      goto out;
    }
    snprintf (context, sizeof context, "%02d %s", id.hash, digest);
    r = expand_label (retained, k->len, "nvme-tls-psk", context,
                      strlen (context), psk);
  }
  if (r == -1)
    snprintf (why, whylen, "the TLS PSK could not be derived (an identity too "
              "long for RFC 8446's label?)");
  *len = k->len;
 out:
  gnutls_memset (retained, 0, sizeof retained);
  return r;
}
