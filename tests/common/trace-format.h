/* SPDX-License-Identifier: BSD-3-Clause */
/* What the trace recorder (tests/kernel/zntrace.c, in the guest) and the
 * replayer (tests/common/replay.c) must compute alike: the data a write stores,
 * the checksum of a read, and the errno names; see "Write data" and "Read
 * checksum" in tests/traces/README.md.
 */
#ifndef ZONEDNULL_TESTS_TRACE_FORMAT_H
#define ZONEDNULL_TESTS_TRACE_FORMAT_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#define GOLDEN UINT64_C(0x9E3779B97F4A7C15)

static inline uint64_t
mix64 (uint64_t z)
{
  z += GOLDEN;
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

/* The buffer of op number op writing at byte offset. */
static inline void
fill_pattern (unsigned char *buf, size_t nbytes, uint64_t op, uint64_t seed,
              uint64_t offset)
{
  uint64_t salt = (op << 40) ^ (seed * GOLDEN);

  for (size_t k = 0; k + 8 <= nbytes; k += 8) {
    uint64_t w = mix64 (salt ^ (offset + k));

    /* Byte by byte so the result is little-endian on any host. */
    for (unsigned b = 0; b < 8; b++)
      buf[k + b] = (unsigned char) (w >> (8 * b));
  }
}

static inline uint64_t
fnv1a64 (const unsigned char *p, size_t n)
{
  uint64_t h = UINT64_C(0xcbf29ce484222325);

  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * UINT64_C(0x100000001b3);
  return h;
}

/* The errno names the recorder knows; anything else it prints as E?. */
static inline const char *
errno_name (int e)
{
  switch (e) {
  case EIO: return "EIO";
  case EINVAL: return "EINVAL";
  case ETOOMANYREFS: return "ETOOMANYREFS";
  case EOVERFLOW: return "EOVERFLOW";
  case ENOSPC: return "ENOSPC";
  case EBUSY: return "EBUSY";
  case EAGAIN: return "EAGAIN";
  case ENOTTY: return "ENOTTY";
  case EOPNOTSUPP: return "EOPNOTSUPP";
  case EBADF: return "EBADF";
  case ENXIO: return "ENXIO";
  case ENODATA: return "ENODATA";
  default: return "E?";
  }
}

#endif
