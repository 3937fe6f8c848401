/* SPDX-License-Identifier: BSD-3-Clause */
/* A fault rule (lib/model/fault.h) as text: what the fault= parameter,
 * the control channel's FAULT_ADD and its fault table carry, parsed the
 * same way by the server that applies it and the client that sends it.
 * The rules themselves are in doc/faults.md.
 */
#ifndef ZONEDNULL_FAULT_RULE_H
#define ZONEDNULL_FAULT_RULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum zn_fault_op {
  ZN_FOP_READ, ZN_FOP_WRITE, ZN_FOP_APPEND, ZN_FOP_RESET, ZN_FOP_OPEN,
  ZN_FOP_CLOSE, ZN_FOP_FINISH, ZN_FOP_FLUSH,
  ZN_FOP_NR
};

/* "read", "write", ...; NULL past the last. */
const char *zn_fault_op_name (enum zn_fault_op op);

#define ZN_FAULT_MAX_RULES 64         /* rules per device */
#define ZN_FAULT_NVME_RETRY 0x8000    /* nvme-status=...,retry: DNR clear */
#define ZN_FAULT_MAX_DELAY_MS 3600000 /* an hour */
#define ZN_FAULT_SPEC_MAX 256         /* a rule's text, with its NUL */

struct zn_fault_rule {
  uint32_t ops;                 /* 1 << ZN_FOP_*; 0 = every operation */
  uint64_t first, last;         /* sectors, inclusive: the rule takes the
                                   requests that overlap them (a flush has
                                   none and is always in range) */
  int err;                      /* positive errno; 0 = no failure */
  uint16_t nvme_status;         /* (SCT << 8) | SC for NVMe/TCP, with
                                   ZN_FAULT_NVME_RETRY; 0 = the front
                                   end's own for err */
  bool after;                   /* fail once the request was applied */
  bool timeout;                 /* never answer */
  uint64_t count;               /* fires at most this often; 0 = no bound */
  uint32_t probability;         /* percent, 1 to 100 */
  uint64_t seed;                /* of the probability's draws */
  uint32_t delay_ms;            /* answer this much later */
  /* Kept by the device: */
  uint32_t id;                  /* from 1, never reused by a device */
  uint64_t matched;             /* requests it took (op and range) */
  uint64_t hits;                /* ... on which it fired */
};

/* Parses a rule: space-separated KEY=VALUE words,
 *   op=OP[,OP...]  zone=N[-M] | offset=BYTES length=BYTES
 *   error=ERRNO  nvme-status=SCT:SC[,retry]  when=before|after  timeout
 *   count=N  probability=P[,SEED]  delay=MS
 * against the device's capacity and zone length, in sectors.  -EINVAL with a
 * message naming the word and the rule it broke.
 */
int zn_fault_rule_parse (const char *spec, uint64_t capacity,
                         uint64_t zone_sectors, struct zn_fault_rule *rule,
                         char *err, size_t errlen);
/* The rule as zn_fault_rule_parse takes it (sectors as offset and length
 * in bytes), in at most len bytes.
 */
void zn_fault_rule_format (const struct zn_fault_rule *rule,
                           char *buf, size_t len);

#endif
