/* SPDX-License-Identifier: BSD-3-Clause */
/* The kernel's fault attribute (lib/fault-inject.c), as null_blk's
 * timeout= and requeue= set it: "<interval>,<probability>,<space>,<times>".
 *
 * Each request the device takes is one call of zn_fault_attr_should_fail,
 * with its data length in bytes (0 for a flush or a zone operation).  The
 * checks run in the kernel's order, and the order decides the counts:
 *   1. probability 0: no failure, and nothing is counted;
 *   2. times 0: no failure (times -1 never runs out);
 *   3. space above the request's length: the length is taken from space,
 *      no failure (so space counts bytes, and a request of 0 bytes passes
 *      while any space is left);
 *   4. interval above 1: the call is counted, and only every interval-th
 *      counted call goes on;
 *   5. a draw below probability (a percentage) fails the request, and
 *      times, unless -1, goes down by one.
 * The kernel draws from a random source; here the draws come from a fixed
 * sequence, so the same requests fail in every run.
 */
#ifndef ZONEDNULL_FAULT_ATTR_H
#define ZONEDNULL_FAULT_ATTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct zn_fault_attr {
  uint64_t interval;
  uint64_t probability;         /* percent, 0 to 100 */
  int64_t space;                /* bytes */
  int64_t times;                /* -1: no bound */
  uint64_t count;               /* calls counted for interval */
  uint64_t draws;               /* draws taken, the sequence's position */
};

/* The kernel's FAULT_ATTR_INITIALIZER: interval 1, probability 0, space 0,
 * times 1; such an attribute never fails.
 */
void zn_fault_attr_init (struct zn_fault_attr *attr);

/* Parses the four numbers of text into attr; "" leaves it unset, as
 * null_blk does with an empty module parameter.  The kernel's ranges:
 * interval and probability unsigned (probability at most 100), space
 * and times ints, times -1 or more, space 0 or more.  -EINVAL with a
 * message naming key and the rule.
 */
int zn_fault_attr_parse (struct zn_fault_attr *attr, const char *key,
                         const char *text, char *err, size_t errlen);

/* Whether the call (a request of size bytes) fails.  Not thread-safe. */
bool zn_fault_attr_should_fail (struct zn_fault_attr *attr, uint64_t size);

#endif
