/* SPDX-License-Identifier: BSD-3-Clause */
/* Text from the network, made safe for a log line.
 *
 * A client chooses its export name, its PSK identity and its option data
 * before it has authenticated, so logging them raw would let anyone who
 * can connect end the server's log line and forge the next, or send
 * escape sequences to the terminal of whoever reads the log.
 */
#ifndef ZONEDNULL_ESCAPE_H
#define ZONEDNULL_ESCAPE_H

#include <stddef.h>

/* Bytes that fit in a buffer of zn_escape for n bytes of input, however
 * they are escaped ("\xHH" is the longest), with the terminating NUL.
 */
#define ZN_ESCAPED_SIZE(n) (4 * (size_t) (n) + 1)

/* The len bytes at data in buf, as C writes them in a string: printable
 * ASCII as it is, backslash as "\\", "\n", "\r", "\t", and every other
 * byte as "\xHH".  What does not fit in size is cut at a whole escape
 * and marked "...".  Returns buf.
 */
const char *zn_escape (char *buf, size_t size, const void *data, size_t len);

#endif
