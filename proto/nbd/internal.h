/* SPDX-License-Identifier: BSD-3-Clause */
/* What the NBD session's parts share: the session itself, its output
 * functions, the exports, and the two phases' entry points.
 * handshake.c speaks the handshake, transmission.c the transmission
 * phase, session.c the rest.
 */
#ifndef ZONEDNULL_PROTO_NBD_INTERNAL_H
#define ZONEDNULL_PROTO_NBD_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "frontend/control.h"
#include "model/fault.h"
#include "park.h"
#include "session.h"
#include "wire.h"

/* Metadata contexts of the data export, by id. */
enum { CTX_ALLOCATION = 1, CTX_ZONES = 2 };

/* Bounds a client cannot push past. */
#define MAX_OPTION_LEN   (64 * 1024)
#define MAX_REQUEST      (32 * 1024 * 1024)  /* advertised maximum block size */
#define MAX_NAME         4096                /* NBD's limit on string lengths */

enum phase { PH_CLIENT_FLAGS, PH_OPTIONS, PH_TRANSMISSION };

struct nbd_session {
  const struct served *sv;
  void *owner;                  /* for sv->admit */
  enum phase phase;
  bool no_zeroes;
  bool structured;
  unsigned options_seen;
  bool tls;                     /* the transport upgraded to TLS */
  bool starttls;                /* STARTTLS acknowledged, upgrade next */
  unsigned tls_refused;         /* options refused for want of TLS */
  /* The export of the transmission phase. */
  const struct served_device *d;
  bool control;
  /* Contexts chosen by SET_META_CONTEXT for this export. */
  bool meta[3];
  bool meta_any;
  const struct served_device *meta_d;
  bool meta_control;
  struct zn_control_conn conn;
  /* A data export opened as "nullbN/session/ID": the error log its failures
   * are logged for (NULL: the device-wide log).
   */
  struct zn_control_errlog *errlog;
  struct outbuf out;
  size_t out_kept;              /* park_output_keep's share */
  size_t ready;                 /* out's bytes that may be sent */
  /* The replies held for completion: their ends in out. */
  struct held_replies held;
  /* The replies delayed by the fault settings, out of out until their
   * release.
   */
  struct held_replies delayed;
  /* The fault settings' verdict on the request being run. */
  struct zn_fault fault;
  uint64_t next_id;             /* of the next data request */
  int forced_error;             /* the admitted request fails with it
                                   (a negative errno) */
  /* Writes waiting for a write pointer and requests requeued: each a
   * struct nbd_request.
   */
  struct parked_requests parked;
  /* The request run_request runs, for offload (transmission.c). */
  struct {
    uint64_t id;
    const struct nbd_request *rq;
    const unsigned char *payload;
    bool tagged;
    bool offloaded;             /* the program's workers took it */
  } run;
  unsigned offloaded;           /* requests on the program's workers */
  size_t offloaded_bytes;       /* the data they hold */
  bool disc;                    /* NBD_CMD_DISC came */
  uint64_t arrival;             /* --stats: the request's being handled */
};

/* ---- output ---- *
 *
 * Inline, since every reply is made of these: the session's queue, grown
 * by nbd_out_grow (session.c) when full.
 */

void nbd_out_grow (struct nbd_session *s, size_t more);

static inline void
out_bytes (struct nbd_session *s, const void *data, size_t n)
{
  if (s->out.len + n > s->out.cap)
    nbd_out_grow (s, n);
  memcpy (s->out.data + s->out.len, data, n);
  s->out.len += n;
}

static inline void
out_be16 (struct nbd_session *s, uint16_t v)
{
  unsigned char b[2];

  put_be16 (b, v);
  out_bytes (s, b, sizeof b);
}

static inline void
out_be32 (struct nbd_session *s, uint32_t v)
{
  unsigned char b[4];

  put_be32 (b, v);
  out_bytes (s, b, sizeof b);
}

static inline void
out_be64 (struct nbd_session *s, uint64_t v)
{
  unsigned char b[8];

  put_be64 (b, v);
  out_bytes (s, b, sizeof b);
}

/* Room for n bytes at the end, filled by the caller. */
static inline unsigned char *
out_reserve (struct nbd_session *s, size_t n)
{
  unsigned char *p;

  if (s->out.len + n > s->out.cap)
    nbd_out_grow (s, n);
  p = s->out.data + s->out.len;
  s->out.len += n;
  return p;
}

static inline void
out_option_reply (struct nbd_session *s, const struct nbd_option_reply *r)
{
  unsigned char b[20];

  put_be64 (b, REPLY_MAGIC);
  put_be32 (b + 8, r->opt);
  put_be32 (b + 12, r->type);
  put_be32 (b + 16, r->len);
  out_bytes (s, b, sizeof b);
}

static inline void
out_simple_reply (struct nbd_session *s, const struct nbd_simple_reply *r)
{
  unsigned char b[NBD_SIMPLE_REPLY_SIZE];

  put_be32 (b, SIMPLE_REPLY_MAGIC);
  put_be32 (b + 4, r->error);
  put_be64 (b + 8, r->cookie);
  out_bytes (s, b, sizeof b);
}

static inline void
out_chunk (struct nbd_session *s, const struct nbd_chunk *c)
{
  unsigned char b[NBD_CHUNK_SIZE];

  put_be32 (b, STRUCT_REPLY_MAGIC);
  put_be16 (b + 4, c->flags);
  put_be16 (b + 6, c->type);
  put_be64 (b + 8, c->cookie);
  put_be32 (b + NBD_CHUNK_LEN_AT, c->len);
  out_bytes (s, b, sizeof b);
}

/* Prints "PROGRAM: out of memory" and aborts. */
_Noreturn void nbd_session_out_of_memory (const struct nbd_session *s);

/* Error messages for the client, cut to fit (NBD caps strings anyway). */
struct message {
  char text[256];
  uint16_t len;
};

void nbd_format_message (struct message *m, const char *fmt, va_list ap);

/* ---- exports (session.c) ---- */

/* nullbN is a device, nullbN/control its zone control, nullbN/session/ID
 * the device with error log ID (*errlog is then ID, otherwise 0); "" is
 * nullb0.  NULL for an unknown name, with *bad set when it is an error log's
 * name with a malformed ID.
 */
const struct served_device *nbd_find_export (const struct served *sv,
                                         const char *name, size_t len,
                                         bool *control, uint64_t *errlog,
                                         bool *bad);
/* The export chosen for transmission; false when out of memory for its
 * error log.
 */
bool nbd_choose_export (struct nbd_session *s, const struct served_device *d,
                    bool control, uint64_t errlog);
uint64_t nbd_export_size (const struct served_device *d, bool control);
uint16_t nbd_export_flags (const struct nbd_session *s,
                       const struct served_device *d, bool control);

/* ---- the phases ---- */

/* One unit of the handshake (the client's flags or an option) at data,
 * or nothing: bytes consumed, 0 for more input, -1 to disconnect.
 */
long nbd_handshake_step (struct nbd_session *s, const unsigned char *data,
                     size_t len);

/* One request at data, or nothing; as nbd_handshake_step. */
long nbd_transmission_step (struct nbd_session *s, const unsigned char *data,
                        size_t len);

#endif
