/* SPDX-License-Identifier: BSD-3-Clause */
/* TLS for the connection layer, on GnuTLS: credentials, sessions, and
 * non-blocking handshake and record I/O (see tls.h).
 *
 * Keys and certificates are checked at start-up, so a bad file stops the
 * server with its name instead of failing every client later.  PSK keys
 * are kept in memory and looked up by a callback, which lets a handshake
 * with an unknown user be logged as such.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "util/escape.h"
#include "util/secret-file.h"
#include "tls.h"

/* A name from the client, escaped for the log (escape.h): 32 bytes
 * whatever they are, up to 128 if printable.
 */
#define LOGGED_NAME ZN_ESCAPED_SIZE (32)

struct psk_key {
  char *user;
  unsigned char *key;
  size_t len;
};

static struct tls_settings settings;
static gnutls_priority_t priority;
static gnutls_psk_server_credentials_t psk_cred;
static gnutls_certificate_credentials_t x509_cred;
static struct psk_key *psk_keys;
static size_t nr_psk_keys;
static bool initialized;        /* gnutls_global_init was called */
/* NVMe/TCP's: */
static gnutls_priority_t nvme_priority;
static gnutls_psk_server_credentials_t nvme_cred;
static tls_psk_fn *nvme_psk;

/* TLS 1.3 with TP 8011's suite for SHA-256 PSKs, with or without an
 * (EC)DHE exchange, as Linux's tlshd offers.
 */
#define NVME_PRIORITY "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:" \
                      "+PSK:+DHE-PSK:+ECDHE-PSK"

/* The longest PSK identity kept: two NQNs of 223 bytes, the prefix and a
 * SHA-384 digest's base64.
 */
#define IDENTITY_MAX 600

struct tls_conn {
  gnutls_session_t s;
  int fd;
  /* Bytes from the socket not yet taken by GnuTLS: first those read
   * before the handshake began, then one recv's worth at a time, so that
   * a batch of small records (libnbd sends a record per request) costs
   * one system call instead of two per record.
   */
  unsigned char *raw;
  size_t raw_pos, raw_len, raw_cap;
  unsigned long long taken;     /* bytes GnuTLS has taken from raw */
  /* What tls_recv met, maybe behind data it returned first: */
  bool ended;                   /* the end of the client's input */
  bool close_notify;            /* announced in TLS */
  int failure;                  /* a record that failed */
  enum tls_profile profile;
  struct tls_io_count *count;   /* --stats: NULL, or where to count */
  char error[1024];
  char peer[ZN_ESCAPED_SIZE (160)];
  char psk_user[LOGGED_NAME];   /* the known user the client named */
  char identity[IDENTITY_MAX + 1];  /* NVMe/TCP's, raw, once accepted */
};

static void __attribute__ ((format (printf, 3, 4)))
say (char *buf, size_t len, const char *fmt, ...)
{
  va_list ap;

  va_start (ap, fmt);
  vsnprintf (buf, len, fmt, ap);
  va_end (ap);
}

static int
hex_value (int c)
{
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* One "username:hexkey" line of psktool's format. */
static int
psk_parse_line (char *line, unsigned lineno, char *err, size_t errlen)
{
  char *colon = strchr (line, ':'), *hex;
  size_t hexlen;
  struct psk_key k, *p;

  if (colon == NULL || colon == line) {
    say (err, errlen, "--tls-psk %s: line %u: not username:hexkey (psktool's "
         "format)", settings.pskfile, lineno);
    return -1;
  }
  *colon = '\0';
  hex = colon + 1;
  hexlen = strlen (hex);
  if (hexlen == 0 || hexlen % 2) {
    say (err, errlen, "--tls-psk %s: line %u: user '%s': the key must be an "
         "even, non-zero number of hex digits", settings.pskfile, lineno, line);
    return -1;
  }
  for (size_t i = 0; i < nr_psk_keys; i++)
    if (strcmp (psk_keys[i].user, line) == 0) {
      say (err, errlen, "--tls-psk %s: line %u: user '%s' appears twice",
           settings.pskfile, lineno, line);
      return -1;
    }
  k.len = hexlen / 2;
  k.key = malloc (k.len);
  k.user = strdup (line);
  p = realloc (psk_keys, (nr_psk_keys + 1) * sizeof *p);
  if (k.key == NULL || k.user == NULL || p == NULL) {
    free (k.key);
    free (k.user);
    if (p)
      psk_keys = p;
    say (err, errlen, "--tls-psk %s: out of memory", settings.pskfile);
    return -1;
  }
  psk_keys = p;
  for (size_t i = 0; i < k.len; i++) {
    int hi = hex_value (hex[2 * i]), lo = hex_value (hex[2 * i + 1]);

    if (hi < 0 || lo < 0) {
      say (err, errlen, "--tls-psk %s: line %u: user '%s': the key has a "
           "character that is not a hex digit", settings.pskfile, lineno, line);
      free (k.key);
      free (k.user);
      return -1;
    }
    k.key[i] = (unsigned char) (hi << 4 | lo);
  }
  psk_keys[nr_psk_keys++] = k;
  return 0;
}

static int
psk_load (char *err, size_t errlen)
{
  char *line = NULL, where[64 + 4096];
  size_t cap = 0;
  ssize_t n;
  unsigned lineno = 0;
  int r = 0;
  FILE *fp;

  snprintf (where, sizeof where, "--tls-psk %s", settings.pskfile);
  fp = zn_secret_file_open (settings.pskfile, where, err, errlen);
  if (fp == NULL)
    return -1;
  while (r == 0 && (n = getline (&line, &cap, fp)) != -1) {
    lineno++;
    if (memchr (line, '\0', (size_t) n)) {
      say (err, errlen, "--tls-psk %s: line %u: holds a NUL byte",
           settings.pskfile, lineno);
      r = -1;
      break;
    }
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
      line[--n] = '\0';
    if (n > 0)
      r = psk_parse_line (line, lineno, err, errlen);
  }
  if (line)
    gnutls_memset (line, 0, cap);
  free (line);
  fclose (fp);
  if (r == 0 && nr_psk_keys == 0) {
    say (err, errlen, "--tls-psk %s: no username:hexkey line (make one with "
         "psktool -u USER -p %s)", settings.pskfile, settings.pskfile);
    r = -1;
  }
  return r;
}

static int
psk_lookup (gnutls_session_t s, const char *user, gnutls_datum_t *key)
{
  struct tls_conn *t = gnutls_session_get_ptr (s);
  char name[LOGGED_NAME];

  for (size_t i = 0; i < nr_psk_keys; i++)
    if (strcmp (psk_keys[i].user, user) == 0) {
      key->data = gnutls_malloc (psk_keys[i].len);
      if (key->data == NULL)
        return -1;
      memcpy (key->data, psk_keys[i].key, psk_keys[i].len);
      key->size = (unsigned) psk_keys[i].len;
      zn_escape (t->psk_user, sizeof t->psk_user, user, strlen (user));
      return 0;
    }
  say (t->error, sizeof t->error, "unknown PSK user '%s' (not in %s)",
       zn_escape (name, sizeof name, user, strlen (user)), settings.pskfile);
  return -1;
}

/* NVMe/TCP: the key derived for the identity, or the reason there is
 * none, with the identity escaped.
 */
static int
nvme_lookup (gnutls_session_t s, const char *identity, gnutls_datum_t *key)
{
  struct tls_conn *t = gnutls_session_get_ptr (s);
  char name[ZN_ESCAPED_SIZE (160)], why[256];
  unsigned char psk[64];
  size_t len = 0, n = strlen (identity);

  zn_escape (name, sizeof name, identity, n);
  if (n > IDENTITY_MAX) {
    say (t->error, sizeof t->error, "PSK identity '%s' refused: longer "
         "than %d bytes", name, IDENTITY_MAX);
    return -1;
  }
  if (nvme_psk (identity, psk, &len, why, sizeof why) == -1) {
    say (t->error, sizeof t->error, "PSK identity '%s' refused: %s", name,
         why);
    return -1;
  }
  key->data = gnutls_malloc (len);
  if (key->data != NULL)
    memcpy (key->data, psk, len);
  memset (psk, 0, sizeof psk);
  if (key->data == NULL)
    return -1;
  key->size = (unsigned) len;
  memcpy (t->identity, identity, n + 1);
  return 0;
}

int
tls_init_nvme (tls_psk_fn *psk, char *err, size_t errlen)
{
  int r;

  if (!initialized && gnutls_global_init () < 0) {
    say (err, errlen, "gnutls_global_init failed");
    return -1;
  }
  initialized = true;
  nvme_psk = psk;
  if (gnutls_psk_allocate_server_credentials (&nvme_cred) < 0) {
    say (err, errlen, "out of memory for TLS credentials");
    return -1;
  }
  gnutls_psk_set_server_credentials_function (nvme_cred, nvme_lookup);
  gnutls_psk_set_server_known_dh_params (nvme_cred, GNUTLS_SEC_PARAM_MEDIUM);
  r = gnutls_priority_init (&nvme_priority, NVME_PRIORITY, NULL);
  if (r < 0) {
    say (err, errlen, "TLS priority %s: %s", NVME_PRIORITY,
         gnutls_strerror (r));
    return -1;
  }
  return 0;
}

/* DIR/NAME must be readable. */
static int
cert_file (char *path, size_t len, const char *name, char *err, size_t errlen)
{
  snprintf (path, len, "%s/%s", settings.certdir, name);
  if (access (path, R_OK) == -1) {
    say (err, errlen, "--tls-certificates %s: %s: %s", settings.certdir,
         path, strerror (errno));
    return -1;
  }
  return 0;
}

static int
x509_load (char *err, size_t errlen)
{
  char ca[4096], crl[4096], cert[4096], key[4096];
  int r;

  if (gnutls_certificate_allocate_credentials (&x509_cred) < 0) {
    say (err, errlen, "out of memory for TLS credentials");
    return -1;
  }
  if (cert_file (cert, sizeof cert, "server-cert.pem", err, errlen) == -1
      || cert_file (key, sizeof key, "server-key.pem", err, errlen) == -1)
    return -1;
  r = gnutls_certificate_set_x509_key_file (x509_cred, cert, key,
                                            GNUTLS_X509_FMT_PEM);
  if (r < 0) {
    say (err, errlen, "--tls-certificates %s: %s and %s: %s", settings.certdir,
         cert, key, gnutls_strerror (r));
    return -1;
  }
  /* The CA is what client certificates are checked against. */
  snprintf (ca, sizeof ca, "%s/ca-cert.pem", settings.certdir);
  if (settings.verify_peer || access (ca, F_OK) == 0) {
    if (cert_file (ca, sizeof ca, "ca-cert.pem", err, errlen) == -1)
      return -1;
    r = gnutls_certificate_set_x509_trust_file (x509_cred, ca,
                                                GNUTLS_X509_FMT_PEM);
    if (r <= 0) {
      say (err, errlen, "--tls-certificates %s: %s: %s", settings.certdir, ca,
           r == 0 ? "no certificate in it" : gnutls_strerror (r));
      return -1;
    }
  }
  snprintf (crl, sizeof crl, "%s/ca-crl.pem", settings.certdir);
  if (access (crl, F_OK) == 0
      && (r = gnutls_certificate_set_x509_crl_file (x509_cred, crl,
                                                    GNUTLS_X509_FMT_PEM)) < 0) {
    say (err, errlen, "--tls-certificates %s: %s: %s", settings.certdir, crl,
         gnutls_strerror (r));
    return -1;
  }
  return 0;
}

int
tls_init (const struct tls_settings *set, char *err, size_t errlen)
{
  const char *prio;
  int r;

  settings = *set;
  if (settings.mode == TLS_OFF)
    return 0;
  if (settings.pskfile == NULL && settings.certdir == NULL) {
    say (err, errlen, "--tls=%s needs --tls-psk=FILE or "
         "--tls-certificates=DIR", settings.mode == TLS_ON ? "on" : "require");
    return -1;
  }
  if (settings.pskfile && settings.verify_peer) {
    say (err, errlen, "--tls-verify-peer checks X.509 client certificates; "
         "with --tls-psk the key already authenticates the client");
    return -1;
  }
  if (gnutls_global_init () < 0) {
    say (err, errlen, "gnutls_global_init failed");
    return -1;
  }
  initialized = true;
  if (settings.pskfile) {
    if (psk_load (err, errlen) == -1)
      return -1;
    if (gnutls_psk_allocate_server_credentials (&psk_cred) < 0) {
      say (err, errlen, "out of memory for TLS credentials");
      return -1;
    }
    gnutls_psk_set_server_credentials_function (psk_cred, psk_lookup);
    gnutls_psk_set_server_known_dh_params (psk_cred, GNUTLS_SEC_PARAM_MEDIUM);
    /* libnbd and nbdkit offer the same PSK key exchanges. */
    prio = "NORMAL:+ECDHE-PSK:+DHE-PSK:+PSK";
  }
  else {
    if (x509_load (err, errlen) == -1)
      return -1;
    prio = "NORMAL";
  }
  r = gnutls_priority_init (&priority, prio, NULL);
  if (r < 0) {
    say (err, errlen, "TLS priority %s: %s", prio, gnutls_strerror (r));
    return -1;
  }
  return 0;
}

void
tls_deinit (void)
{
  if (!initialized)
    return;
  if (priority)
    gnutls_priority_deinit (priority);
  if (psk_cred)
    gnutls_psk_free_server_credentials (psk_cred);
  if (x509_cred)
    gnutls_certificate_free_credentials (x509_cred);
  if (nvme_priority)
    gnutls_priority_deinit (nvme_priority);
  if (nvme_cred)
    gnutls_psk_free_server_credentials (nvme_cred);
  nvme_priority = NULL;
  nvme_cred = NULL;
  for (size_t i = 0; i < nr_psk_keys; i++) {
    /* Keys do not outlive the server in freed memory. */
    memset (psk_keys[i].key, 0, psk_keys[i].len);
    free (psk_keys[i].key);
    free (psk_keys[i].user);
  }
  free (psk_keys);
  psk_keys = NULL;
  nr_psk_keys = 0;
  priority = NULL;
  psk_cred = NULL;
  x509_cred = NULL;
  gnutls_global_deinit ();
  initialized = false;
}

/* ---- transport: through the raw buffer ----------------------------------- */

#define RAW_SIZE (64 * 1024)

static ssize_t
pull (gnutls_transport_ptr_t p, void *buf, size_t len)
{
  struct tls_conn *t = p;
  size_t n;

  if (t->raw_len == 0) {
    ssize_t r = recv (t->fd, t->raw, t->raw_cap, 0);

    if (t->count) {
      t->count->recv_calls++;
      t->count->recv_bytes += r > 0 ? (uint64_t) r : 0;
    }
    if (r <= 0)
      return r;
    t->raw_pos = 0;
    t->raw_len = (size_t) r;
  }
  n = len < t->raw_len ? len : t->raw_len;
  memcpy (buf, t->raw + t->raw_pos, n);
  t->raw_pos += n;
  t->raw_len -= n;
  t->taken += n;
  return (ssize_t) n;
}

static int
pull_timeout (gnutls_transport_ptr_t p, unsigned ms)
{
  struct tls_conn *t = p;
  struct pollfd pfd = { .fd = t->fd, .events = POLLIN };

  if (t->raw_len > 0)
    return 1;
  return poll (&pfd, 1, ms == GNUTLS_INDEFINITE_TIMEOUT ? -1 : (int) ms);
}

static ssize_t
push (gnutls_transport_ptr_t p, const void *buf, size_t len)
{
  struct tls_conn *t = p;
  ssize_t r = send (t->fd, buf, len, MSG_NOSIGNAL);

  if (t->count) {
    t->count->send_calls++;
    t->count->send_bytes += r > 0 ? (uint64_t) r : 0;
  }
  return r;
}

struct tls_conn *
tls_conn_new (int fd, const void *early, size_t len, enum tls_profile profile)
{
  struct tls_conn *t = calloc (1, sizeof *t);
  gnutls_session_t s;

  if (t == NULL)
    return NULL;
  t->raw_cap = len > RAW_SIZE ? len : RAW_SIZE;
  if ((t->raw = malloc (t->raw_cap)) == NULL) {
    free (t);
    return NULL;
  }
  if (len > 0)
    memcpy (t->raw, early, len);
  t->raw_len = len;
  t->fd = fd;
  t->profile = profile;
  if (gnutls_init (&s, GNUTLS_SERVER | GNUTLS_NONBLOCK) < 0) {
    free (t->raw);
    free (t);
    return NULL;
  }
  t->s = s;
  gnutls_session_set_ptr (s, t);
  if (profile == TLS_PROFILE_NVME
      ? gnutls_priority_set (s, nvme_priority) < 0
        || gnutls_credentials_set (s, GNUTLS_CRD_PSK, nvme_cred) < 0
      : gnutls_priority_set (s, priority) < 0
        || (psk_cred
            ? gnutls_credentials_set (s, GNUTLS_CRD_PSK, psk_cred)
            : gnutls_credentials_set (s, GNUTLS_CRD_CERTIFICATE,
                                      x509_cred)) < 0) {
    tls_conn_free (t);
    return NULL;
  }
  if (profile == TLS_PROFILE_NBD && x509_cred && settings.verify_peer) {
    gnutls_certificate_server_set_request (s, GNUTLS_CERT_REQUIRE);
    /* Without the CA's name a client offers the certificate it has, so
     * an untrusted one is refused as such, not as missing.
     */
    gnutls_certificate_send_x509_rdn_sequence (s, 1);
    /* No host name: a client certificate is checked against the CA only. */
    gnutls_session_set_verify_cert (s, NULL, 0);
  }
  gnutls_transport_set_ptr (s, t);
  gnutls_transport_set_pull_function (s, pull);
  gnutls_transport_set_pull_timeout_function (s, pull_timeout);
  gnutls_transport_set_push_function (s, push);
  return t;
}

void
tls_conn_count (struct tls_conn *t, struct tls_io_count *count)
{
  t->count = count;
}

void
tls_conn_free (struct tls_conn *t)
{
  if (t == NULL)
    return;
  /* One try at close_notify once there is a session to close; a client
   * that is not reading loses it.
   */
  if (t->peer[0])
    gnutls_bye (t->s, GNUTLS_SHUT_WR);
  gnutls_deinit (t->s);
  free (t->raw);
  free (t);
}

static void
describe_peer (struct tls_conn *t)
{
  const gnutls_datum_t *certs;
  unsigned nr = 0;
  gnutls_x509_crt_t crt;
  gnutls_datum_t dn;
  char name[ZN_ESCAPED_SIZE (150)];

  if (t->profile == TLS_PROFILE_NVME) {
    say (t->peer, sizeof t->peer, "PSK identity '%s'",
         zn_escape (name, sizeof name, t->identity, strlen (t->identity)));
    return;
  }
  if (psk_cred) {
    const char *user = gnutls_psk_server_get_username (t->s);

    say (t->peer, sizeof t->peer, "PSK user '%s'",
         zn_escape (name, sizeof name, user, user ? strlen (user) : 0));
    return;
  }
  say (t->peer, sizeof t->peer, "X.509, no client certificate");
  certs = gnutls_certificate_get_peers (t->s, &nr);
  if (certs == NULL || nr == 0 || gnutls_x509_crt_init (&crt) < 0)
    return;
  if (gnutls_x509_crt_import (crt, &certs[0], GNUTLS_X509_FMT_DER) == 0
      && gnutls_x509_crt_get_dn2 (crt, &dn) == 0) {
    say (t->peer, sizeof t->peer, "client certificate '%s'",
         zn_escape (name, sizeof name, dn.data, dn.size));
    gnutls_free (dn.data);
  }
  gnutls_x509_crt_deinit (crt);
}

static void
handshake_failed (struct tls_conn *t, int r)
{
  gnutls_datum_t out;

  if (t->error[0])
    return;                     /* the PSK lookup said why */
  /* A known identity whose handshake fails was derived from another
   * key (TLS 1.3 reports a bad binder as an illegal parameter).
   */
  if (t->profile == TLS_PROFILE_NVME) {
    char name[ZN_ESCAPED_SIZE (160)];

    if (t->identity[0])
      say (t->error, sizeof t->error, "TLS handshake failed for PSK "
           "identity '%s' (the host's key is not its --nvme-tls-key, or "
           "the host derives as --nvme-tls-compat says otherwise?): %s",
           zn_escape (name, sizeof name, t->identity, strlen (t->identity)),
           gnutls_strerror (r));
    else
      say (t->error, sizeof t->error, "TLS handshake failed: %s",
           gnutls_strerror (r));
    return;
  }
  if (r == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR
      && gnutls_certificate_verification_status_print
           (gnutls_session_get_verify_cert_status (t->s), GNUTLS_CRT_X509,
            &out, 0) == 0) {
    say (t->error, sizeof t->error, "client certificate refused "
         "(--tls-verify-peer): %s", out.data);
    gnutls_free (out.data);
    return;
  }
  /* A known user whose handshake fails has, most likely, another key
   * (TLS 1.3 then reports a bad binder as an illegal parameter).
   */
  if (t->psk_user[0])
    say (t->error, sizeof t->error, "TLS handshake failed for PSK user "
         "'%s' (a key that is not the one in %s?): %s", t->psk_user,
         settings.pskfile, gnutls_strerror (r));
  else if ((r == GNUTLS_E_NO_CERTIFICATE_FOUND || r == GNUTLS_E_CERTIFICATE_REQUIRED)
      && settings.verify_peer)
    say (t->error, sizeof t->error, "TLS handshake failed: the client sent "
         "no certificate (--tls-verify-peer)");
  else
    say (t->error, sizeof t->error, "TLS handshake failed: %s",
         gnutls_strerror (r));
}

/* GnuTLS says GNUTLS_E_AGAIN not only when the socket has no more: also
 * after a record that completes nothing by itself (the first part of a
 * handshake message over 16 KiB, an empty record, a message after the
 * handshake), with the next records already read into raw.  No socket
 * event announces those, so the call is made again, as long as GnuTLS
 * took input in the last one (so a call that makes no progress cannot
 * spin).
 */
static bool
again_at_once (const struct tls_conn *t, unsigned long long taken_before)
{
  return t->raw_len > 0 && t->taken != taken_before
         && gnutls_record_get_direction (t->s) == 0;
}

int
tls_handshake (struct tls_conn *t)
{
  unsigned long long before;
  int r;

  do {
    before = t->taken;
    r = gnutls_handshake (t->s);
  } while ((r < 0 && r != GNUTLS_E_AGAIN && !gnutls_error_is_fatal (r))
           || (r == GNUTLS_E_AGAIN && again_at_once (t, before)));
  if (r == GNUTLS_E_SUCCESS) {
    describe_peer (t);
    return 1;
  }
  if (r == GNUTLS_E_AGAIN)
    return 0;
  handshake_failed (t, r);
  return -1;
}

bool
tls_wants_write (const struct tls_conn *t)
{
  return gnutls_record_get_direction (t->s) == 1;
}

/* One record at a time would cost the event loop a turn, and the client
 * a reply batch, per request: libnbd sends each request as a record of
 * its own.  So every record that has arrived is taken.  An end or an
 * error met after some data is kept, and returned by the next call
 * without asking GnuTLS again (tls_pending reports it, since the socket
 * will not).
 */
ssize_t
tls_recv (struct tls_conn *t, void *buf, size_t len)
{
  size_t got = 0;

  while (got < len && !t->ended && t->failure == 0) {
    unsigned long long before = t->taken;
    ssize_t r = gnutls_record_recv (t->s, (char *) buf + got, len - got);

    if (r > 0)
      got += (size_t) r;
    else if (r == 0 || r == GNUTLS_E_PREMATURE_TERMINATION) {
      /* Without close_notify, a client that closes has simply gone. */
      t->ended = true;
      t->close_notify = r == 0;
    }
    else if (r == GNUTLS_E_AGAIN) {
      if (!again_at_once (t, before))
        break;
    }
    else if (r != GNUTLS_E_INTERRUPTED && gnutls_error_is_fatal ((int) r))
      t->failure = (int) r;
  }
  if (got > 0)
    return (ssize_t) got;
  if (t->failure) {
    say (t->error, sizeof t->error, "TLS: %s", gnutls_strerror (t->failure));
    errno = EPROTO;
    return -1;
  }
  if (t->ended)
    return 0;
  errno = EAGAIN;
  return -1;
}

ssize_t
tls_send (struct tls_conn *t, const void *buf, size_t len)
{
  for (;;) {
    /* After GNUTLS_E_AGAIN the caller offers the same bytes again (the
     * session's output is consumed only once sent), as GnuTLS requires.
     */
    ssize_t r = gnutls_record_send (t->s, buf, len);

    if (r >= 0)
      return r;
    if (r == GNUTLS_E_AGAIN) {
      errno = EAGAIN;
      return -1;
    }
    if (r == GNUTLS_E_INTERRUPTED)
      continue;
    say (t->error, sizeof t->error, "TLS: %s", gnutls_strerror ((int) r));
    errno = EPROTO;
    return -1;
  }
}

bool
tls_pending (const struct tls_conn *t)
{
  return gnutls_record_check_pending (t->s) > 0 || t->raw_len > 0
         || t->ended || t->failure;
}

bool
tls_close_notify (const struct tls_conn *t)
{
  return t->close_notify;
}

const char *
tls_error (const struct tls_conn *t)
{
  return t->error[0] ? t->error : "no error";
}

const char *
tls_peer (const struct tls_conn *t)
{
  return t->peer;
}

const char *
tls_psk_identity (const struct tls_conn *t)
{
  return t->identity[0] ? t->identity : NULL;
}
