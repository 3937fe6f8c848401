/* The NBD protocol of zonednull-server: fixed newstyle handshake and
 * transmission, with structured replies and two metadata contexts.
 *
 * Every length and offset a client sends is checked before it is used; a
 * client that breaks the framing is disconnected, one that asks for
 * something invalid gets the protocol's error and may carry on.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zonednull/control.h"
#include "zonednull/zoned.h"
#include "session.h"

/* ---- protocol constants (the NBD protocol document) ----------------- */

#define NBDMAGIC            UINT64_C (0x4e42444d41474943)
#define IHAVEOPT            UINT64_C (0x49484156454f5054)
#define REPLY_MAGIC         UINT64_C (0x3e889045565a9)
#define REQUEST_MAGIC       UINT32_C (0x25609513)
#define SIMPLE_REPLY_MAGIC  UINT32_C (0x67446698)
#define STRUCT_REPLY_MAGIC  UINT32_C (0x668e33ef)

#define FLAG_FIXED_NEWSTYLE 1
#define FLAG_NO_ZEROES      2

enum {
  OPT_EXPORT_NAME = 1, OPT_ABORT = 2, OPT_LIST = 3, OPT_STARTTLS = 5,
  OPT_INFO = 6, OPT_GO = 7, OPT_STRUCTURED_REPLY = 8,
  OPT_LIST_META_CONTEXT = 9, OPT_SET_META_CONTEXT = 10,
};

#define REP_ACK           1
#define REP_SERVER        2
#define REP_INFO          3
#define REP_META_CONTEXT  4
#define REP_ERR_UNSUP     (UINT32_C (1) << 31 | 1)
#define REP_ERR_POLICY    (UINT32_C (1) << 31 | 2)
#define REP_ERR_INVALID   (UINT32_C (1) << 31 | 3)
#define REP_ERR_TLS_REQD  (UINT32_C (1) << 31 | 5)
#define REP_ERR_UNKNOWN   (UINT32_C (1) << 31 | 6)
#define REP_ERR_TOO_BIG   (UINT32_C (1) << 31 | 9)

enum { INFO_EXPORT = 0, INFO_NAME = 1, INFO_DESCRIPTION = 2, INFO_BLOCK_SIZE = 3 };

#define TF_HAS_FLAGS       (1u << 0)
#define TF_READ_ONLY       (1u << 1)
#define TF_SEND_FLUSH      (1u << 2)
#define TF_SEND_FUA        (1u << 3)
#define TF_SEND_TRIM       (1u << 5)
#define TF_CAN_MULTI_CONN  (1u << 8)

enum {
  CMD_READ = 0, CMD_WRITE = 1, CMD_DISC = 2, CMD_FLUSH = 3, CMD_TRIM = 4,
  CMD_CACHE = 5, CMD_WRITE_ZEROES = 6, CMD_BLOCK_STATUS = 7,
};

#define CMD_FLAG_FUA      (1u << 0)
#define CMD_FLAG_DF       (1u << 2)
#define CMD_FLAG_REQ_ONE  (1u << 3)
#define CMD_FLAGS_KNOWN   (CMD_FLAG_FUA | (1u << 1) | CMD_FLAG_DF \
                           | CMD_FLAG_REQ_ONE | (1u << 4))

#define REPLY_FLAG_DONE     1
#define REPLY_OFFSET_DATA   1
#define REPLY_OFFSET_HOLE   2
#define REPLY_BLOCK_STATUS  5
#define REPLY_ERROR         (1u << 15 | 1)

#define STATE_HOLE 1

/* NBD's error numbers. */
enum {
  NBD_EPERM = 1, NBD_EIO = 5, NBD_ENOMEM = 12, NBD_EINVAL = 22,
  NBD_ENOSPC = 28, NBD_EOVERFLOW = 75, NBD_ENOTSUP = 95,
};

/* Metadata contexts of the data export, by id. */
enum { CTX_ALLOCATION = 1, CTX_ZONES = 2 };
static const char *const context_names[] = {
  [CTX_ALLOCATION] = "base:allocation",
  [CTX_ZONES] = "zonednull:zones",
};

/* Bounds a client cannot push past. */
#define MAX_OPTION_LEN   (64 * 1024)
#define MAX_REQUEST      (32 * 1024 * 1024)  /* advertised maximum block size */
#define MAX_NAME         4096                /* NBD's limit on string lengths */
/* Options before GO: enough for a client that asks about every export
 * (nbdinfo --list sends two per export), not for one that never ends.
 */
#define MAX_OPTIONS_BASE 1024
#define MAX_OPTIONS_PER_EXPORT 8
#define REPORT_BATCH     64
/* An empty output buffer larger than this is freed. */
#define OUTBUF_KEEP      (1024 * 1024)

/* ---- the session ------------------------------------------------------- */

enum phase { PH_CLIENT_FLAGS, PH_OPTIONS, PH_TRANSMISSION };

struct session {
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
  /* A data export opened as "nullbN/session/ID": the session its failures
   * are logged for (NULL: the device-wide log).
   */
  struct zn_control_session *zsession;
  struct outbuf out;
  size_t ready;                 /* out's bytes that may be sent */
  /* Ends (offsets in out) of the replies held for completion, FIFO. */
  size_t *held;
  unsigned held_head, held_count, held_cap;
  uint64_t next_id;             /* of the next data request */
  int forced_error;             /* the admitted request fails with it */
  struct parked *parked;        /* writes waiting for a write pointer */
  bool disc;                    /* NBD_CMD_DISC came */
};

struct parked {
  uint64_t id, cookie, offset;
  uint32_t count;
  bool fua;
  unsigned char *data;
  struct parked *next;
};

/* ---- output -------------------------------------------------------------- */

static void
out_grow (struct outbuf *b, size_t more)
{
  size_t cap;
  unsigned char *p;

  if (b->len + more <= b->cap)
    return;
  cap = b->cap ? b->cap : 4096;
  while (cap < b->len + more)
    cap *= 2;
  p = realloc (b->data, cap);
  if (p == NULL) {
    fputs ("zonednull-server: out of memory\n", stderr);
    abort ();
  }
  b->data = p;
  b->cap = cap;
}

static void
out_bytes (struct outbuf *b, const void *data, size_t n)
{
  out_grow (b, n);
  memcpy (b->data + b->len, data, n);
  b->len += n;
}

static void
out_be16 (struct outbuf *b, uint16_t v)
{
  unsigned char x[2] = { (unsigned char) (v >> 8), (unsigned char) v };
  out_bytes (b, x, 2);
}

static void
out_be32 (struct outbuf *b, uint32_t v)
{
  out_be16 (b, (uint16_t) (v >> 16));
  out_be16 (b, (uint16_t) v);
}

static void
out_be64 (struct outbuf *b, uint64_t v)
{
  out_be32 (b, (uint32_t) (v >> 32));
  out_be32 (b, (uint32_t) v);
}

/* Room for n bytes at the end, filled by the caller. */
static unsigned char *
out_reserve (struct outbuf *b, size_t n)
{
  unsigned char *p;

  out_grow (b, n);
  p = b->data + b->len;
  b->len += n;
  return p;
}

static void
outbuf_consume (struct outbuf *b, size_t n)
{
  if (n >= b->len) {
    b->len = 0;
    return;
  }
  memmove (b->data, b->data + n, b->len - n);
  b->len -= n;
}

static uint16_t
be16 (const unsigned char *p)
{
  return (uint16_t) (p[0] << 8 | p[1]);
}

static uint32_t
be32 (const unsigned char *p)
{
  return (uint32_t) be16 (p) << 16 | be16 (p + 2);
}

static uint64_t
be64 (const unsigned char *p)
{
  return (uint64_t) be32 (p) << 32 | be32 (p + 4);
}

/* ---- exports ------------------------------------------------------------- */

/* nullbN is a device, nullbN/control its zone control, nullbN/session/ID
 * the device for a session (*session is then ID, otherwise 0); "" is
 * nullb0.  NULL for an unknown name, with *bad set when it is a session's
 * name with a malformed ID.
 */
static const struct served_device *
find_export (const struct served *sv, const char *name, size_t len,
             bool *control, uint64_t *session, bool *bad)
{
  *session = 0;
  *bad = false;
  if (len == 0)
    return &sv->devices[0];
  for (unsigned i = 0; i < sv->nr_devices; i++) {
    const struct served_device *d = &sv->devices[i];
    int r;

    if (len == strlen (d->name) && memcmp (name, d->name, len) == 0) {
      *control = false;
      return d;
    }
    if (len == strlen (d->control_name)
        && memcmp (name, d->control_name, len) == 0) {
      *control = true;
      return d;
    }
    r = zn_control_parse_session_name (name, len, d->name, session);
    if (r == 1) {
      *control = false;
      return d;
    }
    if (r < 0) {
      *bad = true;
      return NULL;
    }
  }
  return NULL;
}

/* The export chosen for transmission; false when out of memory for its
 * session.
 */
static bool
choose_export (struct session *s, const struct served_device *d,
               bool control, uint64_t session)
{
  struct zn_control_session *zs = NULL;

  if (session && (zs = zn_control_session_attach (d->ctl, session)) == NULL)
    return false;
  s->d = d;
  s->control = control;
  s->zsession = zs;
  return true;
}

/* A failed data request, for DATA_ERRNO or the session's SESSION_ERRNO. */
static void
log_failure (struct session *s, uint32_t nbd_cmd, uint64_t offset,
             uint32_t count, int err)
{
  zn_control_session_log_error (s->d->ctl, s->zsession, nbd_cmd, offset,
                                count, err);
}

static const char *
export_name (const struct served_device *d, bool control)
{
  return control ? d->control_name : d->name;
}

static uint64_t
export_size (const struct served_device *d, bool control)
{
  if (control)
    return zn_control_size (d->ctl);
  return zn_dev_geometry (d->dev)->capacity << ZN_SECTOR_SHIFT;
}

/* FUA as the device advertises it: on 6.10 and later null_blk only with
 * cache_size and fua.
 */
static uint16_t
export_flags (const struct session *s, const struct served_device *d,
              bool control)
{
  uint16_t f = TF_HAS_FLAGS | TF_SEND_FLUSH | TF_CAN_MULTI_CONN;

  if (s->sv->readonly)
    f |= TF_READ_ONLY;
  if (!control) {
    if (zn_dev_geometry (d->dev)->fua)
      f |= TF_SEND_FUA;
    if (!s->sv->readonly)
      f |= TF_SEND_TRIM;
  }
  return f;
}

/* ---- handshake ----------------------------------------------------------- */

static void
opt_reply (struct session *s, uint32_t opt, uint32_t type, const void *data,
           uint32_t len)
{
  out_be64 (&s->out, REPLY_MAGIC);
  out_be32 (&s->out, opt);
  out_be32 (&s->out, type);
  out_be32 (&s->out, len);
  if (len)
    out_bytes (&s->out, data, len);
}

/* An error reply with a message for the human at the client. */
/* Error messages for the client, cut to fit (NBD caps strings anyway). */
struct message {
  char text[256];
  uint16_t len;
};

static void
format_message (struct message *m, const char *fmt, va_list ap)
{
  int n = vsnprintf (m->text, sizeof m->text, fmt, ap);

  if (n < 0)
    n = 0;
  if ((size_t) n >= sizeof m->text)
    n = sizeof m->text - 1;
  m->len = (uint16_t) n;
}

static void
opt_error (struct session *s, uint32_t opt, uint32_t type, const char *fmt, ...)
{
  struct message m;
  va_list ap;

  va_start (ap, fmt);
  format_message (&m, fmt, ap);
  va_end (ap);
  opt_reply (s, opt, type, m.text, m.len);
}

static void
reply_server (struct session *s, uint32_t opt, const char *name,
              const char *description)
{
  size_t nl = strlen (name), dl = strlen (description);

  out_be64 (&s->out, REPLY_MAGIC);
  out_be32 (&s->out, opt);
  out_be32 (&s->out, REP_SERVER);
  out_be32 (&s->out, (uint32_t) (4 + nl + dl));
  out_be32 (&s->out, (uint32_t) nl);
  out_bytes (&s->out, name, nl);
  out_bytes (&s->out, description, dl);
}

static void
reply_info_export (struct session *s, uint32_t opt,
                   const struct served_device *d, bool control)
{
  out_be64 (&s->out, REPLY_MAGIC);
  out_be32 (&s->out, opt);
  out_be32 (&s->out, REP_INFO);
  out_be32 (&s->out, 12);
  out_be16 (&s->out, INFO_EXPORT);
  out_be64 (&s->out, export_size (d, control));
  out_be16 (&s->out, export_flags (s, d, control));
}

/* The block layer's rules: requests in logical blocks, no larger than
 * the advertised maximum.  The control export takes any byte range.
 */
static void
reply_info_block_size (struct session *s, uint32_t opt,
                       const struct served_device *d, bool control)
{
  uint32_t lbs = zn_dev_geometry (d->dev)->block_size;

  out_be64 (&s->out, REPLY_MAGIC);
  out_be32 (&s->out, opt);
  out_be32 (&s->out, REP_INFO);
  out_be32 (&s->out, 14);
  out_be16 (&s->out, INFO_BLOCK_SIZE);
  out_be32 (&s->out, control ? 1 : lbs);
  out_be32 (&s->out, lbs > 4096 ? lbs : 4096);
  out_be32 (&s->out, MAX_REQUEST);
}

static void
reply_info_string (struct session *s, uint32_t opt, uint16_t type,
                   const char *text)
{
  size_t n = strlen (text);

  out_be64 (&s->out, REPLY_MAGIC);
  out_be32 (&s->out, opt);
  out_be32 (&s->out, REP_INFO);
  out_be32 (&s->out, (uint32_t) (2 + n));
  out_be16 (&s->out, type);
  out_bytes (&s->out, text, n);
}

static const char *
export_description (bool control)
{
  return control ? "zone control (zonednull-control(5))"
                 : "null_blk zoned device";
}

/* The old-style option: no error is possible, a bad name disconnects. */
static long
opt_export_name (struct session *s, const unsigned char *data, uint32_t len)
{
  const struct served_device *d;
  bool control = false, bad;
  uint64_t session;
  unsigned char zeroes[124] = { 0 };

  d = find_export (s->sv, (const char *) data, len, &control, &session, &bad);
  if (d == NULL || !choose_export (s, d, control, session))
    return -1;
  out_be64 (&s->out, export_size (d, control));
  out_be16 (&s->out, export_flags (s, d, control));
  if (!s->no_zeroes)
    out_bytes (&s->out, zeroes, sizeof zeroes);
  s->phase = PH_TRANSMISSION;
  return 0;
}

static void
opt_info_go (struct session *s, uint32_t opt, const unsigned char *data,
             uint32_t len)
{
  uint32_t nl;
  uint16_t nr;
  const struct served_device *d;
  bool control = false, want_name = false, want_desc = false, bad;
  uint64_t session;
  char session_name[64];

  if (len < 6 || (nl = be32 (data)) > len - 6
      || (nr = be16 (data + 4 + nl), len != 6 + nl + 2u * nr)) {
    opt_error (s, opt, REP_ERR_INVALID, "%s: malformed request",
               opt == OPT_GO ? "NBD_OPT_GO" : "NBD_OPT_INFO");
    return;
  }
  d = find_export (s->sv, (const char *) data + 4, nl, &control, &session,
                   &bad);
  if (d == NULL && bad) {
    opt_error (s, opt, REP_ERR_INVALID, "export '%.*s': a session's name is "
               "nullbN" ZN_SESSION_INFIX "ID, ID being %d hex digits, not "
               "all zero (zonednull-control(5))",
               (int) (nl > 200 ? 200 : nl), (const char *) data + 4,
               ZN_SESSION_ID_DIGITS);
    return;
  }
  if (d == NULL) {
    opt_error (s, opt, REP_ERR_UNKNOWN, "no export named '%.*s' (exports: "
               "nullb0 to nullb%u, each with /control and /session/ID)",
               (int) (nl > 200 ? 200 : nl), (const char *) data + 4,
               s->sv->nr_devices - 1);
    return;
  }
  for (uint16_t i = 0; i < nr; i++) {
    uint16_t type = be16 (data + 6 + nl + 2u * i);

    want_name |= type == INFO_NAME;
    want_desc |= type == INFO_DESCRIPTION;
  }
  if (opt == OPT_GO && !choose_export (s, d, control, session)) {
    /* The client may fall back to the plain name. */
    opt_error (s, opt, REP_ERR_UNKNOWN,
               "out of memory for the session");
    return;
  }
  reply_info_export (s, opt, d, control);
  reply_info_block_size (s, opt, d, control);
  if (want_name && session) {
    zn_control_session_name (session_name, sizeof session_name, d->name,
                             session);
    reply_info_string (s, opt, INFO_NAME, session_name);
  }
  else if (want_name)
    reply_info_string (s, opt, INFO_NAME, export_name (d, control));
  if (want_desc)
    reply_info_string (s, opt, INFO_DESCRIPTION, export_description (control));
  opt_reply (s, opt, REP_ACK, NULL, 0);
  if (opt == OPT_GO) {
    /* Contexts chosen for another export do not carry over. */
    if (s->meta_d != d || s->meta_control != control)
      memset (s->meta, 0, sizeof s->meta), s->meta_any = false;
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
opt_meta_context (struct session *s, uint32_t opt, const unsigned char *data,
                  uint32_t len)
{
  bool list = opt == OPT_LIST_META_CONTEXT;
  const char *what = list ? "NBD_OPT_LIST_META_CONTEXT" : "NBD_OPT_SET_META_CONTEXT";
  const struct served_device *d;
  bool control = false, chosen[3] = { false, false, false }, bad;
  uint64_t session;
  uint32_t nl, nq, pos;

  if (!list && !s->structured) {
    opt_error (s, opt, REP_ERR_INVALID, "%s: structured replies were not "
               "negotiated", what);
    return;
  }
  if (len < 8 || (nl = be32 (data)) > len - 8) {
    opt_error (s, opt, REP_ERR_INVALID, "%s: malformed request", what);
    return;
  }
  nq = be32 (data + 4 + nl);
  /* Validate the whole list before answering anything. */
  pos = 8 + nl;
  for (uint32_t i = 0; i < nq; i++) {
    uint32_t ql;

    if (len - pos < 4 || (ql = be32 (data + pos)) > len - pos - 4 || ql > MAX_NAME) {
      opt_error (s, opt, REP_ERR_INVALID, "%s: malformed query list", what);
      return;
    }
    pos += 4 + ql;
  }
  if (pos != len) {
    opt_error (s, opt, REP_ERR_INVALID, "%s: trailing bytes", what);
    return;
  }
  d = find_export (s->sv, (const char *) data + 4, nl, &control, &session,
                   &bad);
  if (d == NULL) {
    opt_error (s, opt, bad ? REP_ERR_INVALID : REP_ERR_UNKNOWN,
               "%s: no export named '%.*s'", what,
               (int) (nl > 200 ? 200 : nl), (const char *) data + 4);
    return;
  }

  pos = 8 + nl;
  for (uint32_t i = 0; i < nq; i++) {
    uint32_t ql = be32 (data + pos);

    for (int ctx = CTX_ALLOCATION; ctx <= CTX_ZONES; ctx++)
      if (!control && query_matches ((const char *) data + pos + 4, ql, ctx, list))
        chosen[ctx] = true;
    pos += 4 + ql;
  }
  if (list && nq == 0 && !control)
    chosen[CTX_ALLOCATION] = chosen[CTX_ZONES] = true;

  for (int ctx = CTX_ALLOCATION; ctx <= CTX_ZONES; ctx++) {
    size_t n;

    if (!chosen[ctx])
      continue;
    n = strlen (context_names[ctx]);
    out_be64 (&s->out, REPLY_MAGIC);
    out_be32 (&s->out, opt);
    out_be32 (&s->out, REP_META_CONTEXT);
    out_be32 (&s->out, (uint32_t) (4 + n));
    out_be32 (&s->out, list ? 0 : (uint32_t) ctx);
    out_bytes (&s->out, context_names[ctx], n);
  }
  if (!list) {
    memcpy (s->meta, chosen, sizeof s->meta);
    s->meta_any = chosen[CTX_ALLOCATION] || chosen[CTX_ZONES];
    s->meta_d = d;
    s->meta_control = control;
  }
  opt_reply (s, opt, REP_ACK, NULL, 0);
}

/* NBD_OPT_STARTTLS: acknowledged in the clear; session_input stops
 * there, and the transport upgrades before it offers more input.
 */
static void
opt_starttls (struct session *s, uint32_t len)
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
handle_option (struct session *s, uint32_t opt, const unsigned char *data,
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

/* ---- transmission -------------------------------------------------------- */

static uint32_t
nbd_error (int err)
{
  switch (err) {
  case EPERM: return NBD_EPERM;
  case EIO: return NBD_EIO;
  case ENOMEM: return NBD_ENOMEM;
  case ENOSPC: return NBD_ENOSPC;
  case EOPNOTSUPP: return NBD_ENOTSUP;
  /* The open and active zone limits: NBD has no code for them; the exact
   * errno is kept for the control channel.
   */
  default: return NBD_EINVAL;
  }
}

static void
reply_simple (struct session *s, uint64_t cookie, uint32_t error)
{
  out_be32 (&s->out, SIMPLE_REPLY_MAGIC);
  out_be32 (&s->out, error);
  out_be64 (&s->out, cookie);
}

static void
chunk_header (struct session *s, uint16_t flags, uint16_t type,
              uint64_t cookie, uint32_t len)
{
  out_be32 (&s->out, STRUCT_REPLY_MAGIC);
  out_be16 (&s->out, flags);
  out_be16 (&s->out, type);
  out_be64 (&s->out, cookie);
  out_be32 (&s->out, len);
}

/* A failed request: the error, and with structured replies a message. */
static void
reply_error (struct session *s, uint64_t cookie, int err, const char *fmt, ...)
{
  struct message m;
  va_list ap;

  if (!s->structured) {
    reply_simple (s, cookie, nbd_error (err));
    return;
  }
  va_start (ap, fmt);
  format_message (&m, fmt, ap);
  va_end (ap);
  chunk_header (s, REPLY_FLAG_DONE, REPLY_ERROR, cookie, 6 + (uint32_t) m.len);
  out_be32 (&s->out, nbd_error (err));
  out_be16 (&s->out, m.len);
  out_bytes (&s->out, m.text, m.len);
}

/* Success without payload: a simple reply even with structured replies,
 * as the protocol allows for every command but READ and BLOCK_STATUS.
 * Its 16 bytes are one receive for a client, a chunk's 20 are two.
 */
static void
reply_ok (struct session *s, uint64_t cookie)
{
  reply_simple (s, cookie, 0);
}

static const char *
errno_name (int err)
{
  switch (err) {
  case EIO: return "EIO";
  case EINVAL: return "EINVAL";
  case ETOOMANYREFS: return "ETOOMANYREFS: open zones exceeded";
  case EOVERFLOW: return "EOVERFLOW: active zones exceeded";
  case ENOMEM: return "ENOMEM";
  case EPERM: return "EPERM";
  case ETIMEDOUT: return "EIO: waited pipeline_wait_ms for the write pointer";
  case EBUSY: return "EIO: pipeline_max_waiting writes already wait";
  default: return "error";
  }
}

static bool
all_zero (const unsigned char *p, size_t n)
{
  return p[0] == 0 && memcmp (p, p + 1, n - 1) == 0;
}

static void
cmd_read (struct session *s, uint64_t cookie, uint64_t offset, uint32_t count)
{
  const struct zn_geometry *geo = zn_dev_geometry (s->d->dev);
  size_t header = s->structured ? 20 + 8 : 16;
  size_t mark = s->out.len;
  unsigned char *buf;
  int r;

  /* Read straight into the output buffer, behind the reply header. */
  buf = out_reserve (&s->out, header + count) + header;
  if (s->control)
    r = zn_control_pread (s->d->ctl, &s->conn, s->sv->readonly, buf, count, offset);
  else {
    r = zn_read (s->d->dev, buf, offset >> ZN_SECTOR_SHIFT, count >> ZN_SECTOR_SHIFT);
    if (r < 0)
      log_failure (s, CMD_READ, offset, count, -r);
  }
  if (r < 0) {
    s->out.len = mark;
    reply_error (s, cookie, -r, "read: offset %" PRIu64 " length %" PRIu32
                 " in zone %" PRIu64 ": %s", offset, count,
                 (offset >> ZN_SECTOR_SHIFT) / geo->zone_sectors, errno_name (-r));
    return;
  }
  s->out.len = mark;
  /* A read of zeros, as every read of an unwritten or memoryless device
   * is, goes as a hole: 32 bytes instead of the data, and one receive
   * and one copy less for the client (qemu-nbd does the same).  A single
   * chunk, so NBD_CMD_FLAG_DF is honoured too.
   */
  if (s->structured && count > 0 && all_zero (buf, count)) {
    chunk_header (s, REPLY_FLAG_DONE, REPLY_OFFSET_HOLE, cookie, 12);
    out_be64 (&s->out, offset);
    out_be32 (&s->out, count);
    return;
  }
  if (s->structured) {
    chunk_header (s, REPLY_FLAG_DONE, REPLY_OFFSET_DATA, cookie, 8 + count);
    out_be64 (&s->out, offset);
  }
  else
    reply_simple (s, cookie, 0);
  s->out.len += count;
}

static void
cmd_write (struct session *s, uint64_t cookie, uint64_t offset, uint32_t count,
           bool fua, const unsigned char *data)
{
  const struct zn_geometry *geo = zn_dev_geometry (s->d->dev);
  char why[256] = "";
  int r;

  if (s->control)
    r = zn_control_pwrite (s->d->ctl, &s->conn, data, count, offset,
                           why, sizeof why);
  else {
    r = s->forced_error ? -s->forced_error
      : (fua ? zn_write_fua : zn_write)
          (s->d->dev, data, offset >> ZN_SECTOR_SHIFT, count >> ZN_SECTOR_SHIFT);
    s->forced_error = 0;
    if (r < 0)
      log_failure (s, CMD_WRITE, offset, count, -r);
  }
  if (r < 0) {
    if (s->control)
      reply_error (s, cookie, -r, "control: %s", why);
    else
      /* A pipelined write's reasons for failing are EIO on the wire, as
       * null_blk would fail it; the control channel keeps the reason.
       */
      reply_error (s, cookie, r == -ETIMEDOUT || r == -EBUSY ? EIO : -r,
                   "write: offset %" PRIu64 " length %" PRIu32
                   " in zone %" PRIu64 ": %s", offset, count,
                   (offset >> ZN_SECTOR_SHIFT) / geo->zone_sectors,
                   errno_name (-r));
    return;
  }
  reply_ok (s, cookie);
}

/* TRIM is the one NBD command that can carry a zone reset, so it means
 * exactly BLKRESETZONE: whole zones, sequential ones unless it covers the
 * whole device (reset-all).
 */
static void
cmd_trim (struct session *s, uint64_t cookie, uint64_t offset, uint32_t count)
{
  const struct zn_geometry *geo = zn_dev_geometry (s->d->dev);
  uint64_t zone_bytes = geo->zone_sectors << ZN_SECTOR_SHIFT;
  uint64_t size = geo->capacity << ZN_SECTOR_SHIFT;
  uint64_t end = offset + count;
  int r;

  if (count == 0 || offset % zone_bytes || (count % zone_bytes && end != size)) {
    reply_error (s, cookie, EINVAL, "trim: offset %" PRIu64 " length %" PRIu32
                 " does not cover whole zones of %" PRIu64 " bytes",
                 offset, count, zone_bytes);
    return;
  }
  if (offset / zone_bytes < geo->nr_conv && !(offset == 0 && end == size)) {
    reply_error (s, cookie, EINVAL, "trim: zone %" PRIu64 " is conventional; "
                 "only sequential zones can be reset", offset / zone_bytes);
    return;
  }
  r = zn_zone_mgmt (s->d->dev, ZN_OP_RESET, offset >> ZN_SECTOR_SHIFT,
                    (uint64_t) count >> ZN_SECTOR_SHIFT);
  if (r < 0) {
    log_failure (s, CMD_TRIM, offset, count, -r);
    reply_error (s, cookie, -r, "trim: reset of zones %" PRIu64 " to %" PRIu64
                 " failed (a READONLY or OFFLINE zone cannot be reset): %s",
                 offset / zone_bytes, (end - 1) / zone_bytes, errno_name (-r));
    return;
  }
  reply_ok (s, cookie);
}

/* The zonednull:zones status word; see zonednull-server(8). */
#define ZSTATE_UNWRITTEN  (1u << 8)
#define ZSTATE_BEYOND_CAP (1u << 9)

static uint32_t
zone_state (const struct zn_zone *z)
{
  return (uint32_t) z->cond | (uint32_t) z->type << 4;
}

struct extents {
  struct outbuf *out;
  uint32_t count;
  uint64_t next;                /* byte offset the next extent starts at */
  uint64_t end;                 /* clip here */
  bool one;
};

/* Adds [start, end) sectors as one extent (merged with the last one if the
 * state is the same, as clients expect no redundant splits).
 */
static void
extent_add (struct extents *e, uint64_t start, uint64_t end, uint32_t flags,
            uint32_t *last_flags)
{
  uint64_t from = start << ZN_SECTOR_SHIFT, to = end << ZN_SECTOR_SHIFT;

  if (to > e->end)
    to = e->end;
  if (from < e->next)
    from = e->next;
  if (to <= from || (e->one && e->count == 1))
    return;
  if (e->count > 0 && *last_flags == flags
      && to - from + be32 (e->out->data + e->out->len - 8) <= UINT32_MAX) {
    uint32_t len = be32 (e->out->data + e->out->len - 8) + (uint32_t) (to - from);
    unsigned char *p = e->out->data + e->out->len - 8;

    p[0] = (unsigned char) (len >> 24);
    p[1] = (unsigned char) (len >> 16);
    p[2] = (unsigned char) (len >> 8);
    p[3] = (unsigned char) len;
  }
  else {
    out_be32 (e->out, (uint32_t) (to - from));
    out_be32 (e->out, flags);
    e->count++;
  }
  *last_flags = flags;
  e->next = to;
}

/* One BLOCK_STATUS chunk for context ctx over [offset, offset + count). */
static void
block_status_chunk (struct session *s, uint64_t cookie, int ctx, bool last,
                    uint64_t offset, uint32_t count, bool one)
{
  struct extents e = {
    .out = &s->out, .next = offset, .end = offset + count, .one = one,
  };
  size_t mark = s->out.len;
  uint64_t sector = offset >> ZN_SECTOR_SHIFT;
  struct zn_zone zones[REPORT_BATCH];
  uint32_t last_flags = 0;
  unsigned n;

  chunk_header (s, last ? REPLY_FLAG_DONE : 0, REPLY_BLOCK_STATUS, cookie, 0);
  out_be32 (&s->out, (uint32_t) ctx);
  while (e.next < e.end && !(one && e.count == 1)
         && (n = zn_report_zones (s->d->dev, sector, zones, REPORT_BATCH)) > 0) {
    for (unsigned i = 0; i < n; i++) {
      const struct zn_zone *z = &zones[i];
      uint64_t zend = z->start + z->len;

      if (ctx == CTX_ALLOCATION) {
        /* Data up to the write pointer, a hole after it; never ZERO, as
         * null_blk reads 0xFF there.
         */
        uint64_t data_end =
          z->type == ZN_ZONE_CONVENTIONAL || z->cond == ZN_COND_READONLY ? zend
          : z->cond == ZN_COND_OFFLINE ? z->start : z->wp;

        extent_add (&e, z->start, data_end, 0, &last_flags);
        extent_add (&e, data_end, zend, STATE_HOLE, &last_flags);
      }
      else {
        uint32_t st = zone_state (z);
        uint64_t wp = z->wp, cap_end = z->start + z->capacity;

        if (z->type == ZN_ZONE_CONVENTIONAL) {
          extent_add (&e, z->start, zend, st, &last_flags);
        }
        else {
          if (wp == UINT64_MAX || wp < z->start)
            wp = z->start;          /* no write pointer (READONLY, OFFLINE) */
          if (wp > cap_end)
            wp = cap_end;
          extent_add (&e, z->start, wp, st, &last_flags);
          extent_add (&e, wp, cap_end, st | ZSTATE_UNWRITTEN, &last_flags);
          extent_add (&e, cap_end, zend, st | ZSTATE_BEYOND_CAP, &last_flags);
        }
        /* Keep zones apart even when their states are equal. */
        last_flags = UINT32_MAX;
      }
      sector = zend;
    }
  }
  /* Fill in the chunk length now that the extents are known. */
  {
    uint32_t len = (uint32_t) (s->out.len - mark - 20);
    unsigned char *p = s->out.data + mark + 16;

    p[0] = (unsigned char) (len >> 24);
    p[1] = (unsigned char) (len >> 16);
    p[2] = (unsigned char) (len >> 8);
    p[3] = (unsigned char) len;
  }
}

static void
cmd_block_status (struct session *s, uint64_t cookie, uint64_t offset,
                  uint32_t count, uint16_t flags)
{
  int last = s->meta[CTX_ZONES] ? CTX_ZONES : CTX_ALLOCATION;

  if (!s->structured || !s->meta_any || s->control) {
    reply_error (s, cookie, EINVAL, "block status: no metadata context was "
                 "negotiated for this export");
    return;
  }
  for (int ctx = CTX_ALLOCATION; ctx <= CTX_ZONES; ctx++)
    if (s->meta[ctx])
      block_status_chunk (s, cookie, ctx, ctx == last, offset, count,
                          flags & CMD_FLAG_REQ_ONE);
}

/* Checks a request's range; 0, or the errno to reply with (and a message). */
static int
check_request (struct session *s, uint16_t type, uint16_t flags,
               uint64_t offset, uint32_t count, char *why, size_t whylen)
{
  uint64_t size = export_size (s->d, s->control);
  uint32_t lbs = zn_dev_geometry (s->d->dev)->block_size;

  if (flags & ~CMD_FLAGS_KNOWN) {
    snprintf (why, whylen, "unknown command flags 0x%" PRIx16, flags);
    return EINVAL;
  }
  if (s->sv->readonly && (type == CMD_WRITE || type == CMD_TRIM)) {
    snprintf (why, whylen, "the server is read-only (-r)");
    return EPERM;
  }
  if ((type == CMD_TRIM || type == CMD_BLOCK_STATUS) && s->control) {
    snprintf (why, whylen, "the control export takes reads and writes only");
    return EINVAL;
  }
  /* nbdkit refuses a zero-length request of any kind but flush before it
   * reaches a plugin, as ENOSPC for a write and EINVAL otherwise; so does
   * this server.  A zero-length read has no valid structured reply: an
   * OFFSET_DATA chunk is at least 9 bytes.
   */
  if (count == 0 && type != CMD_FLUSH) {
    snprintf (why, whylen, "offset %" PRIu64 ": zero-length request", offset);
    return type == CMD_WRITE ? ENOSPC : EINVAL;
  }
  /* The protocol's ENOSPC for a write past the end, as nbdkit has it. */
  if (offset > size || count > size - offset) {
    snprintf (why, whylen, "offset %" PRIu64 " length %" PRIu32 " is beyond "
              "the end of the export (%" PRIu64 " bytes)", offset, count, size);
    return type == CMD_WRITE ? ENOSPC : EINVAL;
  }
  if ((type == CMD_READ || type == CMD_WRITE) && !s->control
      && (offset % lbs || count % lbs)) {
    snprintf (why, whylen, "offset %" PRIu64 " length %" PRIu32 " is not a "
              "multiple of the block size %" PRIu32, offset, count, lbs);
    return EINVAL;
  }
  return 0;
}

static const char *
command_name (uint16_t type)
{
  static const char *const names[] = {
    "read", "write", "disconnect", "flush", "trim", "cache", "write zeroes",
    "block status",
  };
  return type < sizeof names / sizeof names[0] ? names[type] : "command";
}

/* Keeps the reply just queued until session_complete_one releases it. */
static void
hold_reply (struct session *s)
{
  if (s->held_count == s->held_cap) {
    unsigned cap = s->held_cap ? s->held_cap * 2 : 64;
    size_t *p = malloc (cap * sizeof *p);

    if (p == NULL) {
      fputs ("zonednull-server: out of memory\n", stderr);
      abort ();
    }
    for (unsigned i = 0; i < s->held_count; i++)
      p[i] = s->held[(s->held_head + i) % s->held_cap];
    free (s->held);
    s->held = p;
    s->held_head = 0;
    s->held_cap = cap;
  }
  s->held[(s->held_head + s->held_count++) % s->held_cap] = s->out.len;
}

/* Keeps an admitted write aside until session_resume; handle_request
 * has checked it.
 */
static long
park (struct session *s, const unsigned char *data)
{
  uint32_t count = be32 (data + 24);
  struct parked *p = malloc (sizeof *p), **tail;

  if (p == NULL || (p->data = malloc (count ? count : 1)) == NULL) {
    fputs ("zonednull-server: out of memory\n", stderr);
    abort ();
  }
  p->id = s->next_id - 1;
  p->cookie = be64 (data + 8);
  p->offset = be64 (data + 16);
  p->count = count;
  p->fua = be16 (data + 4) & CMD_FLAG_FUA;
  memcpy (p->data, data + 28, count);
  p->next = NULL;
  for (tail = &s->parked; *tail; tail = &(*tail)->next)
    ;
  *tail = p;
  return 28 + (long) count;
}

/* At most how many bytes of output a request's reply takes: a read's
 * data, a block status's extents (at most three per zone and context),
 * or a simple reply or an error with its message (which can be longer
 * than a small read).
 */
static size_t
reply_bound (const struct session *s, uint16_t type, uint32_t count)
{
  const size_t small = 20 + 6 + sizeof ((struct message *) 0)->text;

  if (type == CMD_READ && count <= MAX_REQUEST && count > small - 28)
    return 20 + 8 + (size_t) count;
  if (type == CMD_BLOCK_STATUS && s->d && !s->control) {
    uint64_t zone_bytes = zn_dev_geometry (s->d->dev)->zone_sectors
                          << ZN_SECTOR_SHIFT;

    return small + 2 * (24 + (count / zone_bytes + 2) * 3 * 8);
  }
  return small;
}

/* One request whose header is at data (28 bytes) and whose payload, for a
 * write, follows.
 */
static long
handle_request (struct session *s, const unsigned char *data, size_t avail)
{
  uint16_t flags = be16 (data + 4), type = be16 (data + 6);
  uint64_t cookie = be64 (data + 8), offset = be64 (data + 16);
  uint32_t count = be32 (data + 24);
  char why[200];
  long used = 28;
  bool tagged;
  int err;

  if (be32 (data) != REQUEST_MAGIC)
    return -1;
  if (type == CMD_WRITE) {
    /* The payload cannot be skipped safely if it is absurdly large. */
    if (count > MAX_REQUEST) {
      reply_error (s, cookie, EINVAL, "write of %" PRIu32 " bytes exceeds "
                   "the maximum of %d", count, MAX_REQUEST);
      return -1;
    }
    if (avail < 28 + (size_t) count)
      return 0;
  }
  /* The requests before it are carried out as usual (held replies wait
   * for their completions, parked writes for their write pointers); the
   * server closes once they are answered.
   */
  if (type == CMD_DISC) {
    s->disc = true;
    return -1;
  }
  if (s->sv->room && !s->sv->room (s->owner, s->out.len,
                                   reply_bound (s, type, count)))
    return 0;

  if ((type == CMD_READ) && count > MAX_REQUEST) {
    reply_error (s, cookie, EINVAL, "read of %" PRIu32 " bytes exceeds the "
                 "maximum of %d", count, MAX_REQUEST);
    return 28;
  }
  if (type != CMD_READ && type != CMD_WRITE && type != CMD_FLUSH
      && type != CMD_TRIM && type != CMD_BLOCK_STATUS) {
    reply_error (s, cookie, EINVAL, "%s (type %" PRIu16 ") is not supported",
                 command_name (type), type);
    return 28;
  }
  err = check_request (s, type, flags, offset, count, why, sizeof why);
  if (err) {
    reply_error (s, cookie, err, "%s: %s", command_name (type), why);
    return 28 + (type == CMD_WRITE ? (long) count : 0);
  }

  /* A valid read, write, flush or trim of a device takes a tag, as the
   * plugin's data callbacks do; a request refused above takes none.
   */
  tagged = !s->control && type != CMD_BLOCK_STATUS;
  if (tagged && s->sv->admit) {
    struct data_request rq = {
      .id = s->next_id, .write = type == CMD_WRITE, .offset = offset,
      .count = count, .bytes = type == CMD_READ || type == CMD_WRITE ? count : 0,
    };
    int v = s->sv->admit (s->owner, s, &rq);

    if (v == ADMIT_LATER)
      return 0;
    s->next_id++;
    if (v == ADMIT_PARK)
      return park (s, data);
    s->forced_error = v;
  }

  switch (type) {
  case CMD_READ:
    cmd_read (s, cookie, offset, count);
    break;
  case CMD_WRITE:
    /* With cache_size, FUA writes around the volatile cache. */
    cmd_write (s, cookie, offset, count, flags & CMD_FLAG_FUA, data + 28);
    used += count;
    break;
  case CMD_FLUSH:
    if (!s->control)
      zn_flush (s->d->dev);
    reply_ok (s, cookie);
    break;
  case CMD_TRIM:
    cmd_trim (s, cookie, offset, count);
    break;
  default:
    cmd_block_status (s, cookie, offset, count, flags);
    break;
  }
  s->forced_error = 0;
  if (tagged && s->sv->delayed)
    hold_reply (s);
  return used;
}

/* ---- the state machine --------------------------------------------------- */

struct session *
session_new (const struct served *sv, void *owner)
{
  struct session *s = calloc (1, sizeof *s);

  if (s == NULL)
    return NULL;
  s->sv = sv;
  s->owner = owner;
  out_be64 (&s->out, NBDMAGIC);
  out_be64 (&s->out, IHAVEOPT);
  out_be16 (&s->out, FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES);
  s->ready = s->out.len;
  return s;
}

void
session_free (struct session *s)
{
  if (s == NULL)
    return;
  if (s->zsession)
    zn_control_session_detach (s->d->ctl, s->zsession);
  free (s->out.data);
  free (s->held);
  while (s->parked) {
    struct parked *p = s->parked;

    s->parked = p->next;
    free (p->data);
    free (p);
  }
  free (s);
}

struct outbuf *
session_output (struct session *s)
{
  return &s->out;
}

const struct served_device *
session_device (const struct session *s, bool *control)
{
  if (s->phase != PH_TRANSMISSION)
    return NULL;
  *control = s->control;
  return s->d;
}

bool
session_complete_one (struct session *s)
{
  if (s->held_count == 0)
    return false;
  s->ready = s->held[s->held_head];
  s->held_head = (s->held_head + 1) % s->held_cap;
  if (--s->held_count == 0)
    s->ready = s->out.len;
  return true;
}

size_t
session_ready (const struct session *s)
{
  return s->ready;
}

void
session_sent (struct session *s, size_t n)
{
  outbuf_consume (&s->out, n);
  s->ready -= n;
  for (unsigned i = 0; i < s->held_count; i++)
    s->held[(s->held_head + i) % s->held_cap] -= n;
  /* A large buffer, once empty, goes back: what the server holds for
   * output is what is queued, not the most a connection ever queued.
   */
  if (s->out.len == 0 && s->out.cap > OUTBUF_KEEP) {
    free (s->out.data);
    s->out.data = NULL;
    s->out.cap = 0;
  }
}


void
session_resume (struct session *s, uint64_t id, int err, bool hold)
{
  struct parked **pp, *p;

  for (pp = &s->parked; *pp && (*pp)->id != id; pp = &(*pp)->next)
    ;
  if ((p = *pp) == NULL)
    return;
  *pp = p->next;
  s->forced_error = err;
  cmd_write (s, p->cookie, p->offset, p->count, p->fua, p->data);
  if (hold)
    hold_reply (s);
  else if (s->held_count == 0)
    s->ready = s->out.len;
  free (p->data);
  free (p);
}

bool
session_starttls (const struct session *s)
{
  return s->starttls;
}

void
session_tls_started (struct session *s)
{
  s->starttls = false;
  s->tls = true;
  /* What was negotiated in the clear does not carry over (NBD protocol,
   * "TLS support"): the client negotiates again inside TLS.
   */
  s->structured = false;
  memset (s->meta, 0, sizeof s->meta);
  s->meta_any = false;
  s->meta_d = NULL;
}

unsigned
session_tls_refused (const struct session *s)
{
  return s->tls_refused;
}

static unsigned
max_options (const struct session *s)
{
  /* Each device has a data export and a control export. */
  return MAX_OPTIONS_BASE + 2 * s->sv->nr_devices * MAX_OPTIONS_PER_EXPORT;
}

/* One step: consumes one unit (flags, option, request) or nothing. */
static long
step (struct session *s, const unsigned char *data, size_t len)
{
  switch (s->phase) {
  case PH_CLIENT_FLAGS: {
    uint32_t flags;

    if (len < 4)
      return 0;
    flags = be32 (data);
    /* Only fixed newstyle is spoken; unknown flags must disconnect. */
    if (!(flags & FLAG_FIXED_NEWSTYLE) || (flags & ~(uint32_t) 3))
      return -1;
    s->no_zeroes = flags & FLAG_NO_ZEROES;
    s->phase = PH_OPTIONS;
    return 4;
  }
  case PH_OPTIONS: {
    uint32_t opt, olen;
    long r;

    if (len < 16)
      return 0;
    if (be64 (data) != IHAVEOPT)
      return -1;
    opt = be32 (data + 8);
    olen = be32 (data + 12);
    if (olen > MAX_OPTION_LEN) {
      /* Too big to buffer: say so, then drop the client (the data cannot
       * be skipped without reading it all).
       */
      opt_error (s, opt, REP_ERR_TOO_BIG, "option of %" PRIu32 " bytes is "
                 "too large", olen);
      return -1;
    }
    if (len < 16 + (size_t) olen)
      return 0;
    if (++s->options_seen > max_options (s)) {
      opt_error (s, opt, REP_ERR_POLICY, "more than %u options before "
                 "NBD_OPT_GO", max_options (s));
      return -1;
    }
    r = handle_option (s, opt, data + 16, olen);
    return r < 0 ? -1 : 16 + (long) olen;
  }
  case PH_TRANSMISSION:
    return len < 28 ? 0 : handle_request (s, data, len);
  }
  return -1;
}

long
session_input (struct session *s, const unsigned char *data, size_t len)
{
  size_t used = 0;

  /* What follows STARTTLS is TLS, not NBD.  In the transmission phase
   * served.room, when set, decides alone.
   */
  while ((s->out.len < SESSION_OUTPUT_LIMIT
          || (s->phase == PH_TRANSMISSION && s->sv->room)) && !s->starttls) {
    long r = step (s, data + used, len - used);

    if (r < 0) {
      /* What was queued goes out before the connection closes, at once
       * unless the client asked to disconnect.
       */
      while (!s->disc && session_complete_one (s))
        ;
      if (s->held_count == 0)
        s->ready = s->out.len;
      return -1;
    }
    if (r == 0)
      break;
    used += (size_t) r;
    if (s->held_count == 0)
      s->ready = s->out.len;
  }
  if (s->held_count == 0)
    s->ready = s->out.len;
  return (long) used;
}
