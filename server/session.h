/* One NBD connection of zonednull-server, as a byte-stream state machine.
 *
 * No sockets here: the event loop feeds what it reads and sends what the
 * session queued.  That keeps the protocol testable and fuzzable without a
 * network (server/fuzz-session.c).
 */
#ifndef ZONEDNULL_SERVER_SESSION_H
#define ZONEDNULL_SERVER_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct zn_dev;
struct zn_control;

/* What every connection of the server shares. */
struct served_device {
  struct zn_dev *dev;
  struct zn_control *ctl;
  bool readonly;                /* -r: no write, trim or control command */
};

/* Bytes waiting to be sent. */
struct outbuf {
  unsigned char *data;
  size_t len, cap;
};

struct session;

struct session *session_new (const struct served_device *sd);
void session_free (struct session *s);

/* session_input stops taking requests once this much output is queued, so
 * that a client sending many large reads without reading the replies
 * cannot make the server buffer without bound.  One reply can add up to
 * the 32 MiB maximum request on top.
 */
#define SESSION_OUTPUT_LIMIT (32 * 1024 * 1024)

/* Consumes a prefix of the len bytes at data and queues the replies.
 * Returns how many bytes were consumed (the rest must be offered again
 * with more data appended), or -1 when the connection must be closed
 * after the queued output is sent: the client disconnected, aborted, or
 * broke the protocol.
 */
long session_input (struct session *s, const unsigned char *data, size_t len);

/* The replies queued so far; the caller removes what it sent. */
struct outbuf *session_output (struct session *s);

/* The export chosen, once in the transmission phase; NULL before. */
const char *session_export (const struct session *s);

/* Drops the first n bytes of an outbuf. */
void outbuf_consume (struct outbuf *b, size_t n);

#endif
