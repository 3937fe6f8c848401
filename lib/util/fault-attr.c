/* SPDX-License-Identifier: BSD-3-Clause */
/* The kernel's fault attribute: see fault-attr.h for the rules. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/fault-attr.h"
#include "util/mix.h"

void
zn_fault_attr_init (struct zn_fault_attr *attr)
{
  *attr = (struct zn_fault_attr) { .interval = 1, .times = 1 };
}

/* One decimal number of text at *p, then sep; false if there is none. */
static bool
number (const char **p, char sep, bool negative_ok, int64_t min, int64_t max,
        int64_t *v)
{
  const char *s = *p;
  char *end;
  long long n;

  if (!(*s >= '0' && *s <= '9') && !(negative_ok && *s == '-'))
    return false;
  errno = 0;
  n = strtoll (s, &end, 10);
  if (errno || end == s || *end != sep || n < min || n > max)
    return false;
  *v = n;
  *p = sep ? end + 1 : end;
  return true;
}

int
zn_fault_attr_parse (struct zn_fault_attr *attr, const char *key,
                     const char *text, char *err, size_t errlen)
{
  const char *p = text;
  int64_t interval, probability, space, times;

  zn_fault_attr_init (attr);
  if (*text == '\0')
    return 0;
  if (!number (&p, ',', false, 0, UINT32_MAX, &interval)
      || !number (&p, ',', false, 0, 100, &probability)
      || !number (&p, ',', false, 0, INT_MAX, &space)
      || !number (&p, '\0', true, -1, INT_MAX, &times)) {
    snprintf (err, errlen, "%s: '%s' is not <interval>,<probability>,"
              "<space>,<times>: four integers, probability a percentage "
              "(0 to 100), space 0 or more bytes, times -1 (no bound) or "
              "more", key, text);
    return -EINVAL;
  }
  attr->interval = (uint64_t) interval;
  attr->probability = (uint64_t) probability;
  attr->space = space;
  attr->times = times;
  return 0;
}

bool
zn_fault_attr_should_fail (struct zn_fault_attr *attr, uint64_t size)
{
  if (attr->probability == 0 || attr->times == 0)
    return false;
  if (attr->space > 0 && (uint64_t) attr->space > size) {
    attr->space -= (int64_t) size;
    return false;
  }
  if (attr->interval > 1 && ++attr->count % attr->interval)
    return false;
  if (attr->probability <= zn_mix (attr->draws++) % 100)
    return false;
  if (attr->times > 0)
    attr->times--;
  return true;
}
