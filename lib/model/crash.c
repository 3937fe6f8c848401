/* SPDX-License-Identifier: BSD-3-Clause */
/* The crash policies (crash.h).  A draw depends only on the seed, the
 * zone and the write's place in it, not on the order the zones are
 * visited or on other zones, so a seed names one state however the log
 * or the cache is walked.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/crash.h"
#include "util/mix.h"

static uint64_t
draw (uint64_t seed, uint32_t zone, uint64_t salt, uint64_t what)
{
  return zn_mix (zn_mix (zn_mix (seed) ^ zone) ^ salt ^ zn_mix (what));
}

static int
parse_u64 (const char *s, uint64_t *v)
{
  char *end;

  int base = 10;

  if (*s < '0' || *s > '9')
    return -EINVAL;
  /* Decimal, or hexadecimal after 0x: a leading 0 is not octal, so that
   * random:010 is the seed 10 that a user who wrote it meant.
   */
  if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s += 2;
    if (!isxdigit ((unsigned char) *s))
      return -EINVAL;
  }
  errno = 0;
  *v = strtoull (s, &end, base);
  return errno || *end ? -1 : 0;
}

int
zn_keep_parse (const char *text, bool allow_enumerate, struct zn_keep *keep,
               char *err, size_t errlen)
{
  memset (keep, 0, sizeof *keep);
  if (strcmp (text, "none") == 0)
    keep->kind = ZN_KEEP_NONE;
  else if (strcmp (text, "all") == 0)
    keep->kind = ZN_KEEP_ALL;
  else if (strncmp (text, "random:", 7) == 0) {
    keep->kind = ZN_KEEP_RANDOM;
    if (parse_u64 (text + 7, &keep->seed) < 0)
      goto bad;
  }
  else if (strncmp (text, "torn:", 5) == 0) {
    keep->kind = ZN_KEEP_TORN;
    if (parse_u64 (text + 5, &keep->seed) < 0)
      goto bad;
  }
  else if (allow_enumerate && strncmp (text, "enumerate", 9) == 0) {
    keep->kind = ZN_KEEP_ENUMERATE;
    keep->max = 64;
    if (text[9] == ':') {
      if (parse_u64 (text + 10, &keep->max) < 0 || keep->max == 0)
        goto bad;
    }
    else if (text[9])
      goto bad;
  }
  else
    goto bad;
  return 0;
 bad:
  snprintf (err, errlen, "'%s' is not a policy: none, all, random:SEED%s "
            "(SEED a number%s)", text,
            allow_enumerate ? ", torn:SEED or enumerate[:MAX]"
                            : " or torn:SEED",
            allow_enumerate ? ", MAX above 0" : "");
  return -EINVAL;
}

uint64_t
zn_keep_prefix (const struct zn_keep *keep, uint32_t zone, uint64_t n)
{
  switch (keep->kind) {
  case ZN_KEEP_NONE:
    return 0;
  case ZN_KEEP_ALL:
    return n;
  default:
    return n == 0 ? 0 : draw (keep->seed, zone, 1, n) % (n + 1);
  }
}

bool
zn_keep_write (const struct zn_keep *keep, uint32_t zone, uint64_t i)
{
  switch (keep->kind) {
  case ZN_KEEP_NONE:
    return false;
  case ZN_KEEP_ALL:
    return true;
  default:
    return draw (keep->seed, zone, 2, i) & 1;
  }
}

uint64_t
zn_keep_torn_prefix (const struct zn_keep *keep, uint32_t zone, uint64_t i,
                     uint64_t nblocks)
{
  if (keep->kind != ZN_KEEP_TORN || nblocks < 2)
    return 0;
  return draw (keep->seed, zone, 3, i) % nblocks;
}

bool
zn_keep_torn (const struct zn_keep *keep, uint32_t zone, uint64_t i)
{
  return keep->kind == ZN_KEEP_TORN && (draw (keep->seed, zone, 4, i) & 1);
}

bool
zn_keep_block (const struct zn_keep *keep, uint32_t zone, uint64_t i,
               uint64_t block)
{
  return zn_mix (draw (keep->seed, zone, 5, i) ^ block) & 1;
}
