/* SPDX-License-Identifier: BSD-3-Clause */
/* The NBD handshake: the client's flags, then options until it chooses
 * an export (NBD_OPT_GO or NBD_OPT_EXPORT_NAME).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/control.h"
#include "model/zoned.h"
#include "internal.h"

static const char *const context_names[] = {
  [CTX_ALLOCATION] = "base:allocation",
  [CTX_ZONES] = "zonednull:zones",
};

/* Options before GO: enough for a client that asks about every export
 * (nbdinfo --list sends two per export), not for one that never ends.
 */
#define MAX_OPTIONS_BASE 1024
#define MAX_OPTIONS_PER_EXPORT 8

static const char *
export_name (const struct served_device *d, bool control)
{
  return control ? d->control_name : d->name;
}

static void
opt_reply (struct nbd_session *s, uint32_t opt, uint32_t type,
           const void *data, uint32_t len)
{
  out_option_reply (s, &(struct nbd_option_reply) {
    .opt = opt, .type = type, .len = len,
  });
  if (len)
    out_bytes (s, data, len);
}

/* An error reply with a message for the human at the client. */
static void
opt_error (struct nbd_session *s, uint32_t opt, uint32_t type,
           const char *fmt, ...)
{
  struct message m;
  va_list ap;

  va_start (ap, fmt);
  nbd_format_message (&m, fmt, ap);
  va_end (ap);
  opt_reply (s, opt, type, m.text, m.len);
}

static void
reply_server (struct nbd_session *s, uint32_t opt, const char *name,
              const char *description)
{
  size_t nl = strlen (name), dl = strlen (description);

  out_option_reply (s, &(struct nbd_option_reply) {
    .opt = opt, .type = REP_SERVER, .len = (uint32_t) (4 + nl + dl),
  });
  out_be32 (s, (uint32_t) nl);
  out_bytes (s, name, nl);
  out_bytes (s, description, dl);
}

static void
reply_info_export (struct nbd_session *s, uint32_t opt,
                   const struct served_device *d, bool control)
{
  out_option_reply (s, &(struct nbd_option_reply) {
    .opt = opt, .type = REP_INFO, .len = 12,
  });
  out_be16 (s, INFO_EXPORT);
  out_be64 (s, nbd_export_size (d, control));
  out_be16 (s, nbd_export_flags (s, d, control));
}

/* The block layer's rules: requests in logical blocks, no larger than
 * the advertised maximum.  The control export takes any byte range.
 */
static void
reply_info_block_size (struct nbd_session *s, uint32_t opt,
                       const struct served_device *d, bool control)
{
  uint32_t lbs = zn_dev_geometry (d->dev)->block_size;

  out_option_reply (s, &(struct nbd_option_reply) {
    .opt = opt, .type = REP_INFO, .len = 14,
  });
  out_be16 (s, INFO_BLOCK_SIZE);
  out_be32 (s, control ? 1 : lbs);
  out_be32 (s, lbs > 4096 ? lbs : 4096);
  out_be32 (s, MAX_REQUEST);
}

static void
reply_info_string (struct nbd_session *s, uint32_t opt, uint16_t type,
                   const char *text)
{
  size_t n = strlen (text);

  out_option_reply (s, &(struct nbd_option_reply) {
    .opt = opt, .type = REP_INFO, .len = (uint32_t) (2 + n),
  });
  out_be16 (s, type);
  out_bytes (s, text, n);
}

static const char *
export_description (bool control)
{
  return control ? "zone control (zonednull-control(5))"
                 : "null_blk zoned device";
}

/* No metadata context: block status gets EINVAL. */
static void
meta_clear (struct nbd_session *s)
{
  memset (s->meta, 0, sizeof s->meta);
  s->meta_any = false;
  s->meta_d = NULL;
}

/* Contexts chosen for another export do not carry over to the export
 * chosen (NBD_OPT_GO or NBD_OPT_EXPORT_NAME).
 */
static void
meta_keep_for (struct nbd_session *s, const struct served_device *d,
               bool control)
{
  if (s->meta_d != d || s->meta_control != control)
    meta_clear (s);
}

/* The old-style option: no error is possible, a bad name disconnects. */
static long
opt_export_name (struct nbd_session *s, const unsigned char *data,
                 uint32_t len)
{
  const struct served_device *d;
  bool control = false, bad;
  uint64_t errlog;
  unsigned char zeroes[124] = { 0 };

  d = nbd_find_export (s->sv, (const char *) data, len, &control, &errlog, &bad);
  if (d == NULL || !nbd_choose_export (s, d, control, errlog))
    return -1;
  meta_keep_for (s, d, control);
  out_be64 (s, nbd_export_size (d, control));
  out_be16 (s, nbd_export_flags (s, d, control));
  if (!s->no_zeroes)
    out_bytes (s, zeroes, sizeof zeroes);
  s->phase = PH_TRANSMISSION;
  return 0;
}

static void
opt_info_go (struct nbd_session *s, uint32_t opt, const unsigned char *data,
             uint32_t len)
{
  struct nbd_info_request rq;
  const struct served_device *d;
  bool control = false, want_name = false, want_desc = false, bad;
  uint64_t errlog;
  char errlog_name[64];
  int shown;

  if (!nbd_info_request_decode (data, len, &rq)) {
    opt_error (s, opt, REP_ERR_INVALID, "%s: malformed request",
               opt == OPT_GO ? "NBD_OPT_GO" : "NBD_OPT_INFO");
    return;
  }
  shown = (int) (rq.name_len > 200 ? 200 : rq.name_len);
  d = nbd_find_export (s->sv, rq.name, rq.name_len, &control, &errlog, &bad);
  if (d == NULL && bad) {
    opt_error (s, opt, REP_ERR_INVALID, "export '%.*s': an error log's "
               "export is nullbN" ZN_ERRLOG_INFIX "ID, ID being %d hex "
               "digits, not all zero (zonednull-control(5))", shown, rq.name,
               ZN_ERRLOG_ID_DIGITS);
    return;
  }
  if (d == NULL) {
    opt_error (s, opt, REP_ERR_UNKNOWN, "no export named '%.*s' (exports: "
               "nullb0 to nullb%u, each with /control and /session/ID)",
               shown, rq.name, s->sv->nr_devices - 1);
    return;
  }
  for (uint16_t i = 0; i < rq.nr_infos; i++) {
    uint16_t type = be16 (rq.infos + 2u * i);

    want_name |= type == INFO_NAME;
    want_desc |= type == INFO_DESCRIPTION;
  }
  if (opt == OPT_GO && !nbd_choose_export (s, d, control, errlog)) {
    /* The client may fall back to the plain name. */
    opt_error (s, opt, REP_ERR_UNKNOWN,
               "out of memory for the error log");
    return;
  }
  reply_info_export (s, opt, d, control);
  reply_info_block_size (s, opt, d, control);
  if (want_name && errlog) {
    zn_control_errlog_name (errlog_name, sizeof errlog_name, d->name,
                             errlog);
    reply_info_string (s, opt, INFO_NAME, errlog_name);
  }
  else if (want_name)
    reply_info_string (s, opt, INFO_NAME, export_name (d, control));
  if (want_desc)
    reply_info_string (s, opt, INFO_DESCRIPTION, export_description (control));
  opt_reply (s, opt, REP_ACK, NULL, 0);
  if (opt == OPT_GO) {
    meta_keep_for (s, d, control);
    s->phase = PH_TRANSMISSION;
  }
}

/* Which contexts a query names: an exact name, or for LIST a namespace
 * prefix ("base:", "zonednull:") that stands for all of its contexts.
 */
static bool
query_matches (const char *q, uint32_t qlen, int ctx, bool list)
{
  const char *name = context_names[ctx];
  size_t nlen = strlen (name);

  if (qlen == nlen && memcmp (q, name, nlen) == 0)
    return true;
  return list && qlen > 0 && q[qlen - 1] == ':' && qlen < nlen
         && memcmp (q, name, qlen) == 0;
}

static void
opt_meta_context (struct nbd_session *s, uint32_t opt,
                  const unsigned char *data, uint32_t len)
{
  bool list = opt == OPT_LIST_META_CONTEXT;
  const char *what = list ? "NBD_OPT_LIST_META_CONTEXT" : "NBD_OPT_SET_META_CONTEXT";
  const struct served_device *d;
  bool control = false, chosen[3] = { false, false, false }, bad;
  uint64_t errlog;
  struct nbd_meta_request rq;
  const unsigned char *q;

  /* It replaces the contexts chosen before even when it fails. */
  if (!list)
    meta_clear (s);
  if (!list && !s->structured) {
    opt_error (s, opt, REP_ERR_INVALID, "%s: structured replies were not "
               "negotiated", what);
    return;
  }
  switch (nbd_meta_request_decode (data, len, MAX_NAME, &rq)) {
  case NBD_META_OK:
    break;
  case NBD_META_MALFORMED:
    opt_error (s, opt, REP_ERR_INVALID, "%s: malformed request", what);
    return;
  case NBD_META_BAD_QUERIES:
    opt_error (s, opt, REP_ERR_INVALID, "%s: malformed query list", what);
    return;
  case NBD_META_TRAILING:
    opt_error (s, opt, REP_ERR_INVALID, "%s: trailing bytes", what);
    return;
  }
  d = nbd_find_export (s->sv, rq.name, rq.name_len, &control, &errlog, &bad);
  if (d == NULL) {
    opt_error (s, opt, bad ? REP_ERR_INVALID : REP_ERR_UNKNOWN,
               "%s: no export named '%.*s'", what,
               (int) (rq.name_len > 200 ? 200 : rq.name_len), rq.name);
    return;
  }

  q = rq.queries;
  for (uint32_t i = 0; i < rq.nr_queries; i++) {
    struct nbd_meta_query query = nbd_meta_query_next (&q);

    for (int ctx = CTX_ALLOCATION; ctx <= CTX_ZONES; ctx++)
      if (!control && query_matches (query.name, query.len, ctx, list))
        chosen[ctx] = true;
  }
  if (list && rq.nr_queries == 0 && !control)
    chosen[CTX_ALLOCATION] = chosen[CTX_ZONES] = true;

  for (int ctx = CTX_ALLOCATION; ctx <= CTX_ZONES; ctx++) {
    size_t n;

    if (!chosen[ctx])
      continue;
    n = strlen (context_names[ctx]);
    out_option_reply (s, &(struct nbd_option_reply) {
      .opt = opt, .type = REP_META_CONTEXT, .len = (uint32_t) (4 + n),
    });
    out_be32 (s, list ? 0 : (uint32_t) ctx);
    out_bytes (s, context_names[ctx], n);
  }
  if (!list) {
    memcpy (s->meta, chosen, sizeof s->meta);
    s->meta_any = chosen[CTX_ALLOCATION] || chosen[CTX_ZONES];
    s->meta_d = d;
    s->meta_control = control;
  }
  opt_reply (s, opt, REP_ACK, NULL, 0);
}

/* NBD_OPT_STARTTLS: acknowledged in the clear; nbd_session_input stops
 * there, and the transport upgrades before it offers more input.
 */
static void
opt_starttls (struct nbd_session *s, uint32_t len)
{
  if (s->sv->tls == TLS_OFF)
    opt_error (s, OPT_STARTTLS, REP_ERR_UNSUP, "TLS is off on this server "
               "(zonednull-server --tls)");
  else if (len != 0)
    opt_error (s, OPT_STARTTLS, REP_ERR_INVALID, "NBD_OPT_STARTTLS takes no "
               "data");
  else if (s->tls)
    opt_error (s, OPT_STARTTLS, REP_ERR_INVALID, "TLS is already in use");
  else {
    opt_reply (s, OPT_STARTTLS, REP_ACK, NULL, 0);
    s->starttls = true;
  }
}

/* One option; data holds its len bytes. */
static long
handle_option (struct nbd_session *s, uint32_t opt, const unsigned char *data,
               uint32_t len)
{
  /* --tls=require: before the upgrade nothing is answered but STARTTLS
   * and ABORT, as the protocol says, and the refusal names no export.
   * EXPORT_NAME has no error reply: the client is dropped.
   */
  if (s->sv->tls == TLS_REQUIRE && !s->tls && opt != OPT_STARTTLS
      && opt != OPT_ABORT) {
    s->tls_refused++;
    if (opt == OPT_EXPORT_NAME)
      return -1;
    opt_error (s, opt, REP_ERR_TLS_REQD, "TLS is required: send "
               "NBD_OPT_STARTTLS first");
    return 0;
  }
  switch (opt) {
  case OPT_EXPORT_NAME:
    return opt_export_name (s, data, len);
  case OPT_ABORT:
    opt_reply (s, opt, REP_ACK, NULL, 0);
    return -1;
  case OPT_LIST:
    if (len != 0) {
      opt_error (s, opt, REP_ERR_INVALID, "NBD_OPT_LIST takes no data");
      return 0;
    }
    for (unsigned i = 0; i < s->sv->nr_devices; i++) {
      reply_server (s, opt, s->sv->devices[i].name, export_description (false));
      reply_server (s, opt, s->sv->devices[i].control_name,
                    export_description (true));
    }
    opt_reply (s, opt, REP_ACK, NULL, 0);
    return 0;
  case OPT_INFO:
  case OPT_GO:
    opt_info_go (s, opt, data, len);
    return 0;
  case OPT_STRUCTURED_REPLY:
    if (len != 0) {
      opt_error (s, opt, REP_ERR_INVALID, "NBD_OPT_STRUCTURED_REPLY takes no data");
      return 0;
    }
    s->structured = true;
    opt_reply (s, opt, REP_ACK, NULL, 0);
    return 0;
  case OPT_LIST_META_CONTEXT:
  case OPT_SET_META_CONTEXT:
    opt_meta_context (s, opt, data, len);
    return 0;
  case OPT_STARTTLS:
    opt_starttls (s, len);
    return 0;
  default:
    opt_error (s, opt, REP_ERR_UNSUP, "option %" PRIu32 " is not supported", opt);
    return 0;
  }
}

static unsigned
max_options (const struct nbd_session *s)
{
  /* Each device has a data export and a control export. */
  return MAX_OPTIONS_BASE + 2 * s->sv->nr_devices * MAX_OPTIONS_PER_EXPORT;
}

/* The client's flags: only fixed newstyle is spoken; unknown flags must
 * disconnect.
 */
static long
client_flags (struct nbd_session *s, const unsigned char *data, size_t len)
{
  uint32_t flags;

  if (len < NBD_CLIENT_FLAGS_SIZE)
    return 0;
  flags = be32 (data);
  if (!(flags & FLAG_FIXED_NEWSTYLE) || (flags & ~(uint32_t) 3))
    return -1;
  s->no_zeroes = flags & FLAG_NO_ZEROES;
  s->phase = PH_OPTIONS;
  return NBD_CLIENT_FLAGS_SIZE;
}

long
nbd_handshake_step (struct nbd_session *s, const unsigned char *data, size_t len)
{
  struct nbd_option o;

  if (s->phase == PH_CLIENT_FLAGS)
    return client_flags (s, data, len);
  if (len < NBD_OPTION_SIZE)
    return 0;
  nbd_option_decode (data, &o);
  if (o.magic != IHAVEOPT)
    return -1;
  if (o.len > MAX_OPTION_LEN) {
    /* Too big to buffer: say so, then drop the client (the data cannot
     * be skipped without reading it all).
     */
    opt_error (s, o.opt, REP_ERR_TOO_BIG, "option of %" PRIu32 " bytes is "
               "too large", o.len);
    return -1;
  }
  if (len < NBD_OPTION_SIZE + (size_t) o.len)
    return 0;
  if (++s->options_seen > max_options (s)) {
    opt_error (s, o.opt, REP_ERR_POLICY, "more than %u options before "
               "NBD_OPT_GO", max_options (s));
    return -1;
  }
  if (handle_option (s, o.opt, data + NBD_OPTION_SIZE, o.len) < 0)
    return -1;
  return NBD_OPTION_SIZE + (long) o.len;
}
