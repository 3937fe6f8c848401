/* SPDX-License-Identifier: BSD-3-Clause */
/* zn_escape (see escape.h). */
#include <stdio.h>
#include <string.h>

#include "util/escape.h"

/* One byte's escape into e (room for 5), its length returned. */
static size_t
escape_byte (char *e, unsigned char b)
{
  switch (b) {
  case '\\': memcpy (e, "\\\\", 3); return 2;
  case '\n': memcpy (e, "\\n", 3); return 2;
  case '\r': memcpy (e, "\\r", 3); return 2;
  case '\t': memcpy (e, "\\t", 3); return 2;
  }
  /* Bytes from 0x80 up are escaped too: C1 controls (a lone 0x9b is
   * CSI) mean something to some terminals, and names here are ASCII.
   */
  if (b >= 0x20 && b < 0x7f) {
    e[0] = (char) b;
    e[1] = '\0';
    return 1;
  }
  snprintf (e, 5, "\\x%02x", b);
  return 4;
}

const char *
zn_escape (char *buf, size_t size, const void *data, size_t len)
{
  static const char cut[] = "...";
  const unsigned char *p = data;
  size_t total = 0, limit, o = 0;
  char e[5];

  if (size == 0)
    return buf;
  for (size_t i = 0; i < len && total < size; i++)
    total += escape_byte (e, p[i]);
  /* Cut short, the text keeps room for the mark that says so. */
  limit = total < size ? size - 1
          : size > sizeof cut ? size - sizeof cut : 0;
  for (size_t i = 0; i < len; i++) {
    size_t n = escape_byte (e, p[i]);

    if (o + n > limit)
      break;
    memcpy (buf + o, e, n);
    o += n;
  }
  if (total >= size && size >= sizeof cut) {
    memcpy (buf + o, cut, sizeof cut);
    return buf;
  }
  buf[o] = '\0';
  return buf;
}
