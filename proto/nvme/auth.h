/* SPDX-License-Identifier: BSD-3-Clause */
/* NVMe in-band authentication, DH-HMAC-CHAP (NVMe base spec 8.3.4,
 * as nvmet has it): the hosts' secrets (--nvme-host) and the exchange
 * each queue of a controller whose host has a secret goes through, in
 * Authentication Send and Receive commands, before it reaches a
 * namespace.
 *
 * libnvme 1.3's <nvme/types.h> has the two fabrics command types and
 * the Authentication Required status, not the messages: their layout
 * is here, as byte offsets.  Every primitive comes from Nettle (HMAC,
 * SHA-2, base64, the bignums over GMP), GnuTLS (random bytes, the
 * FFDHE primes) and ISA-L (the secret's CRC-32).
 */
#ifndef ZONEDNULL_PROTO_NVME_AUTH_H
#define ZONEDNULL_PROTO_NVME_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "session.h"

/* The hash functions' identifiers, and the longest digest (SHA-512). */
enum { AUTH_SHA256 = 1, AUTH_SHA384 = 2, AUTH_SHA512 = 3 };
#define AUTH_MAX_HASH 64

/* A secret of the DHHC-1 format: its key (32, 48 or 64 bytes) and the
 * hash that transforms it (0: none).
 */
struct auth_key {
  uint8_t transform;
  uint8_t len;
  unsigned char key[AUTH_MAX_HASH];
};

/* A host of --nvme-host: its NQN, its secret and, for bidirectional
 * authentication, the controller's.
 */
struct nvme_host_secret {
  char hostnqn[NVME_NQN_MAX + 1];
  struct auth_key host;
  bool has_ctrl;
  struct auth_key ctrl;
};

/* Decodes a "DHHC-1:XX:BASE64:" secret (the last colon may be left
 * out) into key: NULL, or what is wrong with it (the secret itself is
 * never part of the message).
 */
const char *nvme_auth_parse_secret (const char *text, size_t len,
                               struct auth_key *key);
/* Decodes HOSTNQN:SECRET[:CTRL_SECRET]: NULL, or what is wrong. */
const char *nvme_auth_parse_host (const char *text, struct nvme_host_secret *h);

/* The secret of hostnqn, or NULL. */
const struct nvme_host_secret *nvme_auth_host_secret (const struct nvme_served *sv,
                                                 const char *hostnqn);

struct nvme_session;
struct nvme_cmd;
struct auth_state;

/* Authentication Send (fctype 05h) and Receive (06h), on any queue of
 * a controller.
 */
void nvme_auth_command (struct nvme_session *s, const struct nvme_cmd *cmd,
                   const unsigned char *data, uint32_t len);
/* The largest Authentication Send data taken after an R2T: a Reply
 * with SHA-512 and an ffdhe8192 value, with room to spare.
 */
#define AUTH_SEND_MAX 4096
/* What a queue's exchange holds, while it runs (the output budget). */
size_t nvme_auth_holds (const struct nvme_session *s);
void nvme_auth_free (struct nvme_session *s);

#endif
