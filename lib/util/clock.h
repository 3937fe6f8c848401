/* SPDX-License-Identifier: BSD-3-Clause */
/* The monotonic clock, in nanoseconds: what the server's timers and
 * budgets and the --stats counters of both daemons measure with; and in
 * milliseconds, the client library's and the fio engine's deadlines.
 */
#ifndef ZONEDNULL_CLOCK_H
#define ZONEDNULL_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t
zn_ns_of (struct timespec ts)
{
  return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static inline uint64_t
zn_now_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return zn_ns_of (ts);
}

static inline int64_t
zn_now_ms (void)
{
  return (int64_t) (zn_now_ns () / 1000000u);
}

#endif
