/* SPDX-License-Identifier: BSD-3-Clause */
/* The pre-shared keys of NVMe/TCP's TLS (TP 8011), as a Linux host
 * derives them: a configured key per host NQN, in the PSK interchange
 * format `nvme gen-tls-key` prints (NVMeTLSkey-1:HH:base64(key, CRC-32):),
 * its retained PSK, the PSK identity the host sends in its ClientHello
 * ("NVMe0R01 HOSTNQN SUBNQN", or "NVMe1R01 HOSTNQN SUBNQN DIGEST") and
 * the TLS PSK both ends derive from the two.
 *
 * nvme-cli derives the retained and TLS PSKs in two ways: as RFC 8446's
 * HKDF-Expand-Label since 2.15, and before that (and with its --compat)
 * with a label that lacks the length bytes and a little-endian length.
 * The identity does not tell which the host used, so the server is told
 * (--nvme-tls-compat).
 *
 * The keys are process-wide, like net/tls.c's credentials: loaded once
 * at start-up, looked up from the TLS handshake's PSK callback.
 */
#ifndef ZONEDNULL_PROTO_NVME_TLS_PSK_H
#define ZONEDNULL_PROTO_NVME_TLS_PSK_H

#include <stdbool.h>
#include <stddef.h>

/* A TLS PSK: 32 bytes for SHA-256, 48 for SHA-384. */
#define NVME_TLS_PSK_MAX 48

/* One HOSTNQN:NVMeTLSkey-1:HH:...: key; where names it in err (the
 * option, or the file and line).
 */
int nvme_tls_key_add (const char *spec, const char *where,
                      char *err, size_t errlen);

/* A file of such lines (blank lines and # comments skipped): opened
 * without following a symlink, and refused unless only its owner may
 * read it.
 */
int nvme_tls_keys_load (const char *path, char *err, size_t errlen);

unsigned nvme_tls_nr_keys (void);

/* The subsystem identities may name (besides the discovery NQN), and the
 * derivation (compat: nvme-cli's before 2.15).
 */
void nvme_tls_configure (const char *subnqn, bool compat);

/* Forgets every key, overwriting it first. */
void nvme_tls_keys_free (void);

/* The TLS PSK of the identity a host sent (*len bytes at psk), or -1 and
 * why it has none: a malformed identity, another subsystem, a host with
 * no key, a digest that another key made.
 */
int nvme_tls_psk (const char *identity, unsigned char *psk, size_t *len,
                  char *why, size_t whylen);

#endif
