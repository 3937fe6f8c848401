/* SPDX-License-Identifier: BSD-3-Clause */
/* zn_escape: names from the network, made safe for a log line. */
#include <string.h>

#include "../common/check.h"
#include "util/escape.h"

static void
check_escape (size_t size, const char *in, size_t len, const char *expected)
{
  char buf[64];

  CHECK (size <= sizeof buf);
  memset (buf, 'Z', sizeof buf);
  zn_escape (buf, size, in, len);
  if (strcmp (buf, expected) != 0) {
    fprintf (stderr, "zn_escape (%zu, ...) gave '%s', expected '%s'\n",
             size, buf, expected);
    exit (EXIT_FAILURE);
  }
  /* Nothing written past the buffer. */
  for (size_t i = size; i < sizeof buf; i++)
    CHECK (buf[i] == 'Z');
}

int
main (void)
{
  static const char hostile[] = "evil\n\x1b[31mred\\\t\r\x7f\x80\xff";

  check_escape (64, "alice", 5, "alice");
  check_escape (64, "", 0, "");
  check_escape (64, hostile, sizeof hostile - 1,
                "evil\\n\\x1b[31mred\\\\\\t\\r\\x7f\\x80\\xff");
  /* An embedded NUL is a byte like any other. */
  check_escape (64, "a\0b", 3, "a\\x00b");
  /* Exactly the room there is: no cut. */
  check_escape (6, "abcde", 5, "abcde");
  check_escape (ZN_ESCAPED_SIZE (3), "\x01\x02\x03", 3, "\\x01\\x02\\x03");
  /* Too long: cut at a whole escape, marked. */
  check_escape (6, "abcdef", 6, "ab...");
  check_escape (10, "\x1b\x1b\x1b", 3, "\\x1b...");
  check_escape (8, "a\nb\nc", 5, "a\\nb\\nc");
  check_escape (7, "a\nb\nc", 5, "a\\n...");
  check_escape (4, "abcd", 4, "...");
  check_escape (3, "abcd", 4, "");
  check_escape (1, "a", 1, "");
  return 0;
}
