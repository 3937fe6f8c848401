/* SPDX-License-Identifier: BSD-3-Clause */
/* Fault rules as text (fault-rule.h). */
#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/errno-name.h"
#include "wire/fault-rule.h"

static const char *const op_names[ZN_FOP_NR] = {
  [ZN_FOP_READ] = "read", [ZN_FOP_WRITE] = "write",
  [ZN_FOP_APPEND] = "append", [ZN_FOP_RESET] = "reset",
  [ZN_FOP_OPEN] = "open", [ZN_FOP_CLOSE] = "close",
  [ZN_FOP_FINISH] = "finish", [ZN_FOP_FLUSH] = "flush",
};

const char *
zn_fault_op_name (enum zn_fault_op op)
{
  return (unsigned) op < ZN_FOP_NR ? op_names[op] : NULL;
}

static int
parse_u64 (const char *s, uint64_t max, uint64_t *v)
{
  char *end;
  unsigned long long n;

  if (!isdigit ((unsigned char) *s))
    return -EINVAL;
  errno = 0;
  n = strtoull (s, &end, 10);
  if (errno || *end || n > max)
    return -EINVAL;
  *v = n;
  return 0;
}

/* "A" or "A-B", both at most max. */
static int
parse_range (const char *s, uint64_t max, uint64_t *a, uint64_t *b)
{
  char buf[64];
  char *dash;

  if (strlen (s) >= sizeof buf)
    return -EINVAL;
  strcpy (buf, s);
  dash = strchr (buf, '-');
  if (dash)
    *dash = '\0';
  if (parse_u64 (buf, max, a) < 0)
    return -EINVAL;
  if (!dash) {
    *b = *a;
    return 0;
  }
  return parse_u64 (dash + 1, max, b) < 0 || *b < *a ? -EINVAL : 0;
}

static int
parse_ops (const char *s, uint32_t *ops)
{
  char buf[128];
  char *save, *tok;

  if (strlen (s) >= sizeof buf)
    return -EINVAL;
  strcpy (buf, s);
  *ops = 0;
  for (tok = strtok_r (buf, ",", &save); tok;
       tok = strtok_r (NULL, ",", &save)) {
    int op;

    for (op = 0; op < ZN_FOP_NR; op++)
      if (strcmp (tok, op_names[op]) == 0)
        break;
    if (op == ZN_FOP_NR)
      return -EINVAL;
    *ops |= 1u << op;
  }
  return *ops ? 0 : -EINVAL;
}

/* SCT:SC, each in hexadecimal (0x optional), as nvme-cli shows them;
 * SCT at most 7, and not 0:0 (success); ",retry" clears DNR, so that a
 * host retries the command.
 */
static int
parse_nvme_status (const char *s, uint16_t *status)
{
  char *end;
  unsigned long sct, sc;
  bool retry = false;

  errno = 0;
  sct = strtoul (s, &end, 16);
  if (errno || end == s || *end != ':' || sct > 7)
    return -EINVAL;
  s = end + 1;
  sc = strtoul (s, &end, 16);
  if (strcmp (end, ",retry") == 0)
    retry = true;
  else if (*end)
    return -EINVAL;
  if (errno || end == s || sc > 0xff || (sct == 0 && sc == 0))
    return -EINVAL;
  *status = (uint16_t) (sct << 8 | sc | (retry ? ZN_FAULT_NVME_RETRY : 0));
  return 0;
}

static int
bad_word (char *err, size_t errlen, const char *word, const char *rule)
{
  snprintf (err, errlen, "fault rule: '%s': %s", word, rule);
  return -EINVAL;
}

static int
parse_word (char *word, uint64_t capacity, uint64_t zone_sectors,
            struct zn_fault_rule *r, uint64_t *offset, uint64_t *length,
            bool *range_in_bytes, bool *when_given, char *err, size_t errlen)
{
  char *eq = strchr (word, '=');
  const char *v = eq ? eq + 1 : "";
  uint64_t a, b;

  if (eq)
    *eq = '\0';
  if (strcmp (word, "timeout") == 0 && !eq) {
    r->timeout = true;
    return 0;
  }
  if (!eq || !*v) {
    if (eq)
      *eq = '=';
    return bad_word (err, errlen, word, "not KEY=VALUE (keys: op, zone, "
                     "offset, length, error, nvme-status, when, count, "
                     "probability, delay; and timeout alone)");
  }
  if (strcmp (word, "op") == 0) {
    if (parse_ops (v, &r->ops) < 0)
      goto bad;
  }
  else if (strcmp (word, "zone") == 0) {
    if (*range_in_bytes || parse_range (v, UINT32_MAX, &a, &b) < 0
        || b >= (capacity + zone_sectors - 1) / zone_sectors)
      goto bad;
    r->first = a * zone_sectors;
    r->last = (b + 1) * zone_sectors - 1;
    if (r->last >= capacity)
      r->last = capacity - 1;
  }
  else if (strcmp (word, "offset") == 0 || strcmp (word, "length") == 0) {
    if (r->first || r->last != UINT64_MAX
        || parse_u64 (v, UINT64_MAX, &a) < 0)
      goto bad;
    *(word[0] == 'o' ? offset : length) = a;
    *range_in_bytes = true;
  }
  else if (strcmp (word, "error") == 0) {
    r->err = zn_errno_value (v);
    if (r->err == 0)
      goto bad;
  }
  else if (strcmp (word, "nvme-status") == 0) {
    if (parse_nvme_status (v, &r->nvme_status) < 0)
      goto bad;
  }
  else if (strcmp (word, "when") == 0) {
    if (strcmp (v, "before") == 0)
      r->after = false;
    else if (strcmp (v, "after") == 0)
      r->after = true;
    else
      goto bad;
    *when_given = true;
  }
  else if (strcmp (word, "count") == 0) {
    if (parse_u64 (v, UINT64_MAX, &r->count) < 0 || r->count == 0)
      goto bad;
  }
  else if (strcmp (word, "probability") == 0) {
    char buf[64];
    char *comma;

    if (strlen (v) >= sizeof buf)
      goto bad;
    strcpy (buf, v);
    comma = strchr (buf, ',');
    if (comma)
      *comma = '\0';
    if (parse_u64 (buf, 100, &a) < 0 || a == 0
        || (comma && parse_u64 (comma + 1, UINT64_MAX, &r->seed) < 0))
      goto bad;
    r->probability = (uint32_t) a;
  }
  else if (strcmp (word, "delay") == 0) {
    if (parse_u64 (v, ZN_FAULT_MAX_DELAY_MS, &a) < 0)
      goto bad;
    r->delay_ms = (uint32_t) a;
  }
  else {
    *eq = '=';
    return bad_word (err, errlen, word, "no such key (keys: op, zone, "
                     "offset, length, error, nvme-status, when, count, "
                     "probability, delay, timeout)");
  }
  return 0;

 bad:
  *eq = '=';
  {
    static const struct { const char *key, *rule; } rules[] = {
      { "op", "a comma-separated list of read, write, append, reset, open, "
        "close, finish, flush" },
      { "zone", "a zone N or zones N-M of the device, M not below N, and "
        "not with offset or length" },
      { "offset", "a number of bytes, not with zone" },
      { "length", "a number of bytes, not with zone" },
      { "error", "an errno name such as EIO, ENOSPC, ETOOMANYREFS" },
      { "nvme-status", "SCT:SC in hexadecimal, SCT 0 to 7, not 0:0, then "
        "',retry' or nothing" },
      { "when", "before or after" },
      { "count", "a number above 0" },
      { "probability", "P or P,SEED: P a percentage from 1 to 100, SEED a "
        "number" },
      { "delay", "milliseconds, at most 3600000" },
    };
    size_t keylen = (size_t) (eq - word);

    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
      if (strlen (rules[i].key) == keylen
          && strncmp (rules[i].key, word, keylen) == 0)
        return bad_word (err, errlen, word, rules[i].rule);
    return bad_word (err, errlen, word, "a bad value");
  }
}

int
zn_fault_rule_parse (const char *spec, uint64_t capacity,
                     uint64_t zone_sectors, struct zn_fault_rule *r,
                     char *err, size_t errlen)
{
  char buf[ZN_FAULT_SPEC_MAX];
  char *save, *word;
  uint64_t offset = 0, length = 0;
  bool in_bytes = false, when_given = false;
  int ret;

  *r = (struct zn_fault_rule) { .last = UINT64_MAX, .probability = 100 };
  if (strlen (spec) >= sizeof buf) {
    snprintf (err, errlen, "fault rule: longer than %d bytes",
              ZN_FAULT_SPEC_MAX - 1);
    return -EINVAL;
  }
  strcpy (buf, spec);
  for (word = strtok_r (buf, " \t", &save); word;
       word = strtok_r (NULL, " \t", &save))
    if ((ret = parse_word (word, capacity, zone_sectors, r, &offset, &length, &in_bytes,
                           &when_given, err, errlen)) < 0)
      return ret;
  if (in_bytes) {
    if (length == 0 || offset % 512 || length % 512 || offset >= capacity
        * 512 || length > capacity * 512 - offset) {
      snprintf (err, errlen, "fault rule: offset=%" PRIu64 " length=%"
                PRIu64 ": the range must be whole 512-byte sectors inside "
                "the device (%" PRIu64 " bytes), length above 0", offset,
                length, capacity * 512);
      return -EINVAL;
    }
    r->first = offset / 512;
    r->last = r->first + length / 512 - 1;
  }
  if (r->timeout && (r->err || r->nvme_status || when_given)) {
    snprintf (err, errlen, "fault rule: timeout: a request that is never "
              "answered fails with nothing; not with error, nvme-status "
              "or when");
    return -EINVAL;
  }
  if (r->nvme_status && !r->err)
    r->err = EIO;               /* what the other front ends send */
  if (when_given && !r->err) {
    snprintf (err, errlen, "fault rule: when: says when an error is "
              "given; give error= or nvme-status= too");
    return -EINVAL;
  }
  if (!r->err && !r->timeout && !r->delay_ms) {
    snprintf (err, errlen, "fault rule: '%s' does nothing: give error=, "
              "nvme-status=, timeout or delay=", spec);
    return -EINVAL;
  }
  /* A read that fails "after" would be a read that failed with its data
   * in the buffer: no different from before.
   */
  if (r->after && (r->ops == 0 || (r->ops & (1u << ZN_FOP_READ)))) {
    snprintf (err, errlen, "fault rule: when=after: only for operations "
              "that change the device; give op= without read");
    return -EINVAL;
  }
  return 0;
}

void
zn_fault_rule_format (const struct zn_fault_rule *r, char *buf, size_t len)
{
  size_t n = 0;

#define ADD(...) do {                                                   \
    if (n < len)                                                        \
      n += (size_t) snprintf (buf + n, len - n, __VA_ARGS__);           \
  } while (0)
  if (len)
    buf[0] = '\0';
  if (r->ops) {
    const char *sep = "op=";

    for (int op = 0; op < ZN_FOP_NR; op++)
      if (r->ops & (1u << op)) {
        ADD ("%s%s", sep, op_names[op]);
        sep = ",";
      }
  }
  if (r->first != 0 || r->last != UINT64_MAX)
    ADD ("%soffset=%" PRIu64 " length=%" PRIu64, n ? " " : "",
         r->first * 512, (r->last - r->first + 1) * 512);
  if (r->timeout)
    ADD ("%stimeout", n ? " " : "");
  if (r->err)
    ADD ("%serror=%s", n ? " " : "", zn_errno_name (r->err));
  if (r->nvme_status)
    ADD (" nvme-status=%x:%02x%s", (r->nvme_status >> 8) & 7,
         r->nvme_status & 0xff,
         r->nvme_status & ZN_FAULT_NVME_RETRY ? ",retry" : "");
  if (r->err)
    ADD (" when=%s", r->after ? "after" : "before");
  if (r->count)
    ADD (" count=%" PRIu64, r->count);
  if (r->probability != 100 || r->seed)
    ADD (" probability=%" PRIu32 ",%" PRIu64, r->probability, r->seed);
  if (r->delay_ms)
    ADD ("%sdelay=%" PRIu32, n ? " " : "", r->delay_ms);
#undef ADD
}
