/* SPDX-License-Identifier: BSD-3-Clause */
/* NBD on the wire (the NBD protocol document): its constants, and the
 * requests and replies as named structures with their codecs.
 */
#ifndef ZONEDNULL_PROTO_NBD_WIRE_H
#define ZONEDNULL_PROTO_NBD_WIRE_H

#include <stdbool.h>
#include <stdint.h>

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
#define TF_SEND_DF         (1u << 7)
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

/* NBD's error numbers. */
enum {
  NBD_EPERM = 1, NBD_EIO = 5, NBD_ENOMEM = 12, NBD_EINVAL = 22,
  NBD_ENOSPC = 28, NBD_EOVERFLOW = 75, NBD_ENOTSUP = 95,
};

static inline uint16_t
be16 (const unsigned char *p)
{
  return (uint16_t) (p[0] << 8 | p[1]);
}

static inline uint32_t
be32 (const unsigned char *p)
{
  return (uint32_t) be16 (p) << 16 | be16 (p + 2);
}

static inline uint64_t
be64 (const unsigned char *p)
{
  return (uint64_t) be32 (p) << 32 | be32 (p + 4);
}

static inline void
put_be16 (unsigned char *p, uint16_t v)
{
  p[0] = (unsigned char) (v >> 8);
  p[1] = (unsigned char) v;
}

static inline void
put_be32 (unsigned char *p, uint32_t v)
{
  put_be16 (p, (uint16_t) (v >> 16));
  put_be16 (p + 2, (uint16_t) v);
}

static inline void
put_be64 (unsigned char *p, uint64_t v)
{
  put_be32 (p, (uint32_t) (v >> 32));
  put_be32 (p + 4, (uint32_t) v);
}

/* ---- from the client ---- */

/* The client's flags, right after the greeting. */
#define NBD_CLIENT_FLAGS_SIZE 4

/* An option's header; its len bytes of data follow. */
struct nbd_option {
  uint64_t magic;               /* IHAVEOPT */
  uint32_t opt;
  uint32_t len;
};
#define NBD_OPTION_SIZE 16

static inline void
nbd_option_decode (const unsigned char *p, struct nbd_option *o)
{
  o->magic = be64 (p);
  o->opt = be32 (p + 8);
  o->len = be32 (p + 12);
}

/* NBD_OPT_INFO's and NBD_OPT_GO's data: an export name and the
 * information requests.
 */
struct nbd_info_request {
  const char *name;
  uint32_t name_len;
  uint16_t nr_infos;
  const unsigned char *infos;   /* nr_infos 16-bit types */
};

/* false when the len bytes at data are malformed. */
static inline bool
nbd_info_request_decode (const unsigned char *data, uint32_t len,
                         struct nbd_info_request *r)
{
  if (len < 6 || (r->name_len = be32 (data)) > len - 6)
    return false;
  r->name = (const char *) data + 4;
  r->nr_infos = be16 (data + 4 + r->name_len);
  r->infos = data + 6 + r->name_len;
  return len == 6 + r->name_len + 2u * r->nr_infos;
}

/* NBD_OPT_LIST_META_CONTEXT's and NBD_OPT_SET_META_CONTEXT's data: an
 * export name and the queries, each a 32-bit length and a string.
 */
struct nbd_meta_request {
  const char *name;
  uint32_t name_len;
  uint32_t nr_queries;
  const unsigned char *queries;
};

enum nbd_meta_check {
  NBD_META_OK, NBD_META_MALFORMED, NBD_META_BAD_QUERIES, NBD_META_TRAILING,
};

/* Checks the whole request, each query at most max_query bytes. */
static inline enum nbd_meta_check
nbd_meta_request_decode (const unsigned char *data, uint32_t len,
                         uint32_t max_query, struct nbd_meta_request *r)
{
  uint32_t pos;

  if (len < 8 || (r->name_len = be32 (data)) > len - 8)
    return NBD_META_MALFORMED;
  r->name = (const char *) data + 4;
  r->nr_queries = be32 (data + 4 + r->name_len);
  r->queries = data + 8 + r->name_len;
  pos = 8 + r->name_len;
  for (uint32_t i = 0; i < r->nr_queries; i++) {
    uint32_t ql;

    if (len - pos < 4 || (ql = be32 (data + pos)) > len - pos - 4
        || ql > max_query)
      return NBD_META_BAD_QUERIES;
    pos += 4 + ql;
  }
  return pos == len ? NBD_META_OK : NBD_META_TRAILING;
}

struct nbd_meta_query {
  const char *name;
  uint32_t len;
};

/* The query at *p, in a request nbd_meta_request_decode checked; *p
 * moves past it.
 */
static inline struct nbd_meta_query
nbd_meta_query_next (const unsigned char **p)
{
  struct nbd_meta_query q = { (const char *) *p + 4, be32 (*p) };

  *p += 4 + q.len;
  return q;
}

/* A request's header; a write's count bytes of data follow. */
struct nbd_request {
  uint32_t magic;               /* REQUEST_MAGIC */
  uint16_t flags;
  uint16_t type;
  uint64_t cookie;
  uint64_t offset;
  uint32_t count;
};
#define NBD_REQUEST_SIZE 28

static inline void
nbd_request_decode (const unsigned char *p, struct nbd_request *rq)
{
  rq->magic = be32 (p);
  rq->flags = be16 (p + 4);
  rq->type = be16 (p + 6);
  rq->cookie = be64 (p + 8);
  rq->offset = be64 (p + 16);
  rq->count = be32 (p + 24);
}

/* ---- to the client (encoded by the session's output functions) ---- */

/* An option reply's header (REPLY_MAGIC first); len bytes follow. */
struct nbd_option_reply {
  uint32_t opt;
  uint32_t type;                /* REP_* */
  uint32_t len;
};

/* A simple reply (SIMPLE_REPLY_MAGIC first), 16 bytes. */
struct nbd_simple_reply {
  uint32_t error;               /* NBD_E* or 0 */
  uint64_t cookie;
};
#define NBD_SIMPLE_REPLY_SIZE 16

/* A structured reply chunk's header (STRUCT_REPLY_MAGIC first), 20 bytes;
 * len bytes of payload follow.
 */
struct nbd_chunk {
  uint16_t flags;               /* REPLY_FLAG_DONE */
  uint16_t type;                /* REPLY_* */
  uint64_t cookie;
  uint32_t len;
};
#define NBD_CHUNK_SIZE 20
#define NBD_CHUNK_LEN_AT 16     /* where len sits, to fill in later */

/* A block status chunk's payload: the context id, then descriptors. */
struct nbd_extent {
  uint32_t len;
  uint32_t flags;
};
#define NBD_EXTENT_SIZE 8

#endif
