/* SPDX-License-Identifier: BSD-3-Clause */
/* splitmix64's finalizer: every input bit reaches every output bit.  The
 * reproducible draws of the crash policies and the fault rules: a seed
 * and a position give the same value on every machine and run.
 */
#ifndef ZONEDNULL_MIX_H
#define ZONEDNULL_MIX_H

#include <stdint.h>

static inline uint64_t
zn_mix (uint64_t x)
{
  x += UINT64_C (0x9e3779b97f4a7c15);
  x = (x ^ (x >> 30)) * UINT64_C (0xbf58476d1ce4e5b9);
  x = (x ^ (x >> 27)) * UINT64_C (0x94d049bb133111eb);
  return x ^ (x >> 31);
}

#endif
