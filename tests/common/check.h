/* SPDX-License-Identifier: BSD-3-Clause */
/* Minimal assertions for the C tests: report the failing expression and
 * its location, then exit non-zero so automake counts a failure.
 */
#ifndef ZONEDNULL_TESTS_CHECK_H
#define ZONEDNULL_TESTS_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(expr)                                                     \
  do {                                                                  \
    if (!(expr)) {                                                      \
      fprintf (stderr, "%s:%d: CHECK failed: %s\n",                     \
               __FILE__, __LINE__, #expr);                              \
      exit (EXIT_FAILURE);                                              \
    }                                                                   \
  } while (0)

/* Compares two integers and prints both values when they differ. */
#define CHECK_EQ(actual, expected)                                      \
  do {                                                                  \
    long long check_a_ = (long long) (actual);                          \
    long long check_e_ = (long long) (expected);                        \
    if (check_a_ != check_e_) {                                         \
      fprintf (stderr, "%s:%d: %s is %lld, expected %s = %lld\n",       \
               __FILE__, __LINE__, #actual, check_a_, #expected,        \
               check_e_);                                               \
      exit (EXIT_FAILURE);                                              \
    }                                                                   \
  } while (0)

/* qsort's order of records by sector, for records whose first member is
 * the uint64_t sector (a pointer to a struct is one to its first member).
 */
static inline int
by_first_sector (const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

  return x < y ? -1 : x > y;
}

#endif
