/* SPDX-License-Identifier: BSD-3-Clause */
/* TLS for the connection layer's connections, on GnuTLS.
 *
 * The credentials are loaded once at start-up; each connection whose
 * protocol asks for the upgrade (NBD_OPT_STARTTLS) gets a session on its
 * non-blocking socket.  Nothing
 * here blocks: every call returns at once, and the caller waits for the
 * event tls_wants_write names.
 */
#ifndef ZONEDNULL_NET_TLS_H
#define ZONEDNULL_NET_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum tls_mode { TLS_OFF, TLS_ON, TLS_REQUIRE };

struct tls_settings {
  enum tls_mode mode;
  const char *certdir;          /* --tls-certificates */
  const char *pskfile;          /* --tls-psk (wins over certdir) */
  bool verify_peer;             /* --tls-verify-peer */
};

/* Loads the credentials; -1 with a message naming the option and file. */
int tls_init (const struct tls_settings *set, char *err, size_t errlen);
void tls_deinit (void);

/* NVMe/TCP's TLS (TP 8011), a second set of credentials beside NBD's:
 * TLS 1.3 only, TLS_AES_128_GCM_SHA256, and PSKs that psk finds by the
 * identity the host sends (the NVMe layer derives them): 0 with the key,
 * or -1 with why in a message of whylen bytes.
 */
typedef int tls_psk_fn (const char *identity, unsigned char *key,
                        size_t *len, char *why, size_t whylen);
int tls_init_nvme (tls_psk_fn *psk, char *err, size_t errlen);

/* The credentials a connection's handshake uses. */
enum tls_profile { TLS_PROFILE_NBD, TLS_PROFILE_NVME };

struct tls_conn;

/* A server session on fd.  The len bytes at early were read from fd
 * before the handshake began (after NBD's STARTTLS reply, or NVMe/TCP's
 * first bytes) and are the first the handshake sees.
 */
struct tls_conn *tls_conn_new (int fd, const void *early, size_t len,
                               enum tls_profile profile);
void tls_conn_free (struct tls_conn *t);

/* The system calls a connection makes on its socket, and their bytes
 * (what went over the wire: records, not their plaintext).
 */
struct tls_io_count {
  uint64_t recv_calls, recv_bytes, send_calls, send_bytes;
};

/* Counts t's recv and send calls into count from now on (NULL: stop). */
void tls_conn_count (struct tls_conn *t, struct tls_io_count *count);

/* 1 once the handshake is done, 0 while it waits for the socket, -1 when
 * it failed (tls_error says why).
 */
int tls_handshake (struct tls_conn *t);

/* The event the last call that returned "again" waits for. */
bool tls_wants_write (const struct tls_conn *t);

/* As recv and send on a non-blocking socket: -1 with EAGAIN to wait, or
 * with EPROTO when the TLS session failed (tls_error says why).  The end
 * of the client's input (0), or a record that fails, found behind data
 * is returned by the next tls_recv.
 */
ssize_t tls_recv (struct tls_conn *t, void *buf, size_t len);
ssize_t tls_send (struct tls_conn *t, const void *buf, size_t len);

/* Input that no socket event will announce: bytes held inside
 * (decrypted) or beneath GnuTLS (read from the socket, not yet
 * decrypted), or the end or failure that tls_recv has yet to return.
 */
bool tls_pending (const struct tls_conn *t);

/* The end tls_recv returned was the client's close_notify (not a bare
 * end of the connection).
 */
bool tls_close_notify (const struct tls_conn *t);

const char *tls_error (const struct tls_conn *t);

/* Who the peer authenticated as, for the log ("PSK user alice"). */
const char *tls_peer (const struct tls_conn *t);

/* The PSK identity the peer authenticated with, raw (not for a log);
 * NULL without one.
 */
const char *tls_psk_identity (const struct tls_conn *t);

#endif
