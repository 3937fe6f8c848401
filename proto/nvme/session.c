/* SPDX-License-Identifier: BSD-3-Clause */
/* The NVMe/TCP session (session.h): framing and checking of the host's
 * PDUs, digests, the R2T flow of writes, and the output.
 *
 * A command is taken from its capsule into a request (struct nvme_req).
 * One that carries its data in the capsule, or has none to receive, is
 * ready at once; a write whose data comes with H2CData gets an R2T for
 * all of it, and is ready once the last H2CData arrived.  Ready
 * requests are carried out in order; one that must wait (no tag, no
 * room for its reply) stops the input there, as an NBD request does.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isa-l/crc.h>
#include <nvme/types.h>

#include "util/fifo.h"
#include "conn.h"
#include "internal.h"

/* The content type of a TLS handshake record, a ClientHello's first byte. */
#define TLS_RECORD_HANDSHAKE 22

/* ---- CRC32C ---------------------------------------------------------------
 *
 * The digests' CRC32C is ISA-L's iSCSI CRC (the same polynomial), which
 * uses the CPU's CRC32 instructions: data digests cover every byte.
 */
uint32_t
nvme_crc32c (const void *data, size_t len)
{
  return ~crc32_iscsi ((unsigned char *) data, (int) len, ~0u);
}

/* ---- output --------------------------------------------------------------- */

_Noreturn void
nvme_out_of_memory (const struct nvme_session *s)
{
  fprintf (stderr, "%s: out of memory\n", s->sv->program);
  abort ();
}

void
nvme_log (const struct nvme_session *s, const char *fmt, ...)
{
  va_list ap;

  if (!s->sv->verbose)
    return;
  fprintf (stderr, "%s: nvme: ", s->sv->program);
  va_start (ap, fmt);
  vfprintf (stderr, fmt, ap);
  va_end (ap);
  fputc ('\n', stderr);
}

unsigned char *
nvme_out_reserve (struct nvme_session *s, size_t n)
{
  unsigned char *p;

  if (s->out_len + n > s->out_cap) {
    size_t cap = s->out_cap ? s->out_cap : 4096;

    while (cap < s->out_len + n)
      cap *= 2;
    p = realloc (s->out, cap);
    if (p == NULL)
      nvme_out_of_memory (s);
    s->out = p;
    s->out_cap = cap;
  }
  p = s->out + s->out_len;
  s->out_len += n;
  return p;
}

void
nvme_out_unreserve (struct nvme_session *s, size_t n)
{
  s->out_len -= n;
}

static size_t
hdgst_len (const struct nvme_session *s)
{
  return s->hdgst ? PDU_DIGEST_LEN : 0;
}

/* A PDU header of hlen bytes (its common header filled in), with its
 * header digest when negotiated; the caller fills the rest.
 */
static unsigned char *
pdu_begin (struct nvme_session *s, uint8_t type, uint8_t flags, uint8_t hlen,
           uint8_t pdo, uint32_t plen)
{
  unsigned char *h = nvme_out_reserve (s, hlen + hdgst_len (s));

  memset (h, 0, hlen);
  h[0] = type;
  h[1] = flags | (s->hdgst ? PDU_F_HDGST : 0);
  h[2] = hlen;
  h[3] = pdo;
  put_le32 (h + 4, plen);
  return h;
}

static void
pdu_end_header (struct nvme_session *s, unsigned char *h)
{
  if (s->hdgst)
    put_le32 (h + h[2], nvme_crc32c (h, h[2]));
}

void
nvme_reply_at (struct nvme_session *s, const struct nvme_cmd *cmd, uint16_t status,
          uint64_t result, uint16_t loc)
{
  unsigned char *h = pdu_begin (s, PDU_CAPSULE_RESP, 0, PDU_RESP_LEN, 0,
                                PDU_RESP_LEN + hdgst_len (s));
  unsigned char *cqe = h + PDU_CH_LEN;

  put_le64 (cqe, result);
  put_le16 (cqe + 8, s->sqflow_off ? 0xffff : s->sqhd);
  put_le16 (cqe + 10, s->qid);
  put_le16 (cqe + 12, cmd->cid);
  put_le16 (cqe + 14, (uint16_t) (status << 1));
  pdu_end_header (s, h);
  if (status && nvme_queue_ctrl (s))
    nvme_ctrl_log_error (s->ctrl, s->qid, cmd, status, loc);
  if (s->sv->stats && !s->holding)
    s->sv->stats->reply (s->owner, s->arrival, s->out_len - s->out_start);
}

void
nvme_reply (struct nvme_session *s, const struct nvme_cmd *cmd, uint16_t status,
       uint64_t result)
{
  nvme_reply_at (s, cmd, status, result, LOC_NONE);
}

void
nvme_fail (struct nvme_session *s, const struct nvme_cmd *cmd, uint16_t status,
      uint16_t loc)
{
  nvme_reply_at (s, cmd, status, 0, loc);
}

/* Where C2HData's data start: after the header and its digest, aligned
 * to the host's HPDA.
 */
static size_t
c2h_pdo (const struct nvme_session *s)
{
  size_t pdo = PDU_DATA_LEN + hdgst_len (s);

  return (pdo + s->hpda - 1) / s->hpda * s->hpda;
}

size_t
nvme_reply_bound (const struct nvme_session *s, size_t len)
{
  return c2h_pdo (s) + len + PDU_DIGEST_LEN + PDU_RESP_LEN + PDU_DIGEST_LEN;
}

unsigned char *
nvme_c2h_begin (struct nvme_session *s, const struct nvme_cmd *cmd, size_t len)
{
  size_t pdo = c2h_pdo (s), dd = s->ddgst ? PDU_DIGEST_LEN : 0;
  unsigned char *h = pdu_begin (s, PDU_C2H_DATA,
                                PDU_F_DATA_LAST | (dd ? PDU_F_DDGST : 0),
                                PDU_DATA_LEN, (uint8_t) pdo,
                                (uint32_t) (pdo + len + dd));

  put_le16 (h + DATA_CCCID, cmd->cid);
  put_le32 (h + DATA_OFFSET, 0);
  put_le32 (h + DATA_LENGTH, (uint32_t) len);
  pdu_end_header (s, h);
  memset (nvme_out_reserve (s, pdo - PDU_DATA_LEN - hdgst_len (s)), 0,
          pdo - PDU_DATA_LEN - hdgst_len (s));
  return nvme_out_reserve (s, len);
}

void
nvme_c2h_end (struct nvme_session *s, size_t len)
{
  if (s->ddgst) {
    const unsigned char *data = s->out + s->out_len - len;

    put_le32 (nvme_out_reserve (s, PDU_DIGEST_LEN), nvme_crc32c (data, len));
  }
}

void
nvme_c2h_cancel (struct nvme_session *s, size_t len)
{
  nvme_out_unreserve (s, c2h_pdo (s) + len);
}

void
nvme_reply_data (struct nvme_session *s, const struct nvme_cmd *cmd,
            const void *data, size_t len)
{
  if (len > cmd->sgl_len)
    len = cmd->sgl_len;
  if (len > 0) {
    memcpy (nvme_c2h_begin (s, cmd, len), data, len);
    nvme_c2h_end (s, len);
  }
  nvme_reply (s, cmd, 0, 0);
}

void
nvme_hold_reply (struct nvme_session *s, size_t mark, const uint64_t *id)
{
  struct held_replies *q = id ? &s->delayed : &s->held;

  if (!park_hold_reply_add (q, 0, s->out + mark, s->out_len - mark))
    nvme_out_of_memory (s);
  q->tail->arrival = s->arrival;
  if (id)
    q->tail->id = *id;
  s->out_len = mark;
}

/* Queues a held reply's output. */
static void
release (struct nvme_session *s, struct held *h)
{
  if (s->cut) {
    free (h);
    return;
  }
  memcpy (nvme_out_reserve (s, h->len), h->data, h->len);
  if (s->sv->stats)
    s->sv->stats->reply (s->owner, h->arrival, s->out_len - s->out_start);
  free (h);
}

void
nvme_session_release (struct nvme_session *s, uint64_t id)
{
  struct held *h = park_hold_reply_take (&s->delayed, id);

  if (h)
    release (s, h);
}

bool
nvme_session_complete_one (struct nvme_session *s)
{
  struct held *h = park_hold_reply_next (&s->held);

  if (h == NULL)
    return false;
  release (s, h);
  return true;
}

/* Where the output to send ends: the replies of commands that finish
 * after a TermReq are built (their tags and data are accounted for as
 * usual) but go nowhere.
 */
static size_t
out_end (const struct nvme_session *s)
{
  return s->cut ? s->out_cut : s->out_len;
}

/* Nothing queued from now on is sent. */
static void
cut_output (struct nvme_session *s)
{
  s->dead = true;
  if (!s->cut) {
    s->cut = true;
    s->out_cut = s->out_len;
  }
}

const unsigned char *
nvme_session_output (struct nvme_session *s, size_t *len)
{
  *len = out_end (s) - s->out_start;
  return s->out + s->out_start;
}

size_t
nvme_session_ready (const struct nvme_session *s)
{
  return out_end (s) - s->out_start;
}

/* The output counts from the start of its buffer: the bytes sent before
 * out_start are memory the host made us touch until they are reclaimed.
 * So do the buffers of the writes parked for their write pointer.
 */
size_t
nvme_session_holds (const struct nvme_session *s)
{
  return s->out_len + s->held.bytes + s->delayed.bytes
         + s->r2t_bytes + s->offloaded_bytes + s->parked.bytes
         + nvme_auth_holds (s);
}

void
nvme_session_sent (struct nvme_session *s, size_t n)
{
  s->out_start += n;
  if (s->out_start == out_end (s)) {
    s->out_start = s->out_len = s->out_cut = 0;
    /* A drained buffer goes back unless park_output_keep lets it stay. */
    if (!park_output_keep (&s->out_kept, s->out_cap)) {
      free (s->out);
      s->out = NULL;
      s->out_cap = 0;
    }
  }
  /* The bytes sent go back once they are at least as many as those
   * queued: each byte sent pays for at most one byte moved, where a
   * fixed step would move a long queue again at every step.
   */
  else if (s->out_start >= s->out_len - s->out_start) {
    memmove (s->out, s->out + s->out_start, s->out_len - s->out_start);
    s->out_len -= s->out_start;
    if (s->cut)
      s->out_cut -= s->out_start;
    s->out_start = 0;
  }
}

/* ---- fatal errors ------------------------------------------------------------ */

static const char *
fes_name (uint16_t fes)
{
  switch (fes) {
  case FES_INVALID_HEADER: return "invalid PDU header field";
  case FES_SEQUENCE: return "PDU sequence error";
  case FES_HDGST: return "header digest error";
  case FES_OUT_OF_RANGE: return "data transfer out of range";
  case FES_LIMIT_EXCEEDED: return "data transfer limit exceeded";
  default: return "unsupported parameter";
  }
}

/* A C2HTermReq for the PDU at pdu: the connection closes once it is
 * sent.  Returns -1 for the caller to return.
 */
static int
terminate (struct nvme_session *s, const unsigned char *pdu,
           const struct pdu_ch *ch, uint16_t fes, uint32_t fei,
           const char *why)
{
  size_t copy = ch->hlen < PDU_TERM_MAX_COPY ? ch->hlen : PDU_TERM_MAX_COPY;
  unsigned char *h;

  if (copy > s->pdu_avail)
    copy = s->pdu_avail;
  fprintf (stderr, "%s: nvme: PDU type 0x%02x: %s: %s; connection closed\n",
           s->sv->program, ch->type, fes_name (fes), why);
  /* TermReqs carry no digests. */
  h = nvme_out_reserve (s, PDU_TERM_LEN + copy);
  memset (h, 0, PDU_TERM_LEN);
  h[0] = PDU_C2H_TERM;
  h[2] = PDU_TERM_LEN;
  put_le32 (h + 4, (uint32_t) (PDU_TERM_LEN + copy));
  put_le16 (h + TERM_FES, fes);
  put_le32 (h + TERM_FEI, fei);
  memcpy (h + PDU_TERM_LEN, pdu, copy);
  cut_output (s);
  return -1;
}

/* ---- requests ----------------------------------------------------------------- */

static void
req_free (struct nvme_session *s, struct nvme_req *rq)
{
  free (rq->data);
  free (rq);
  s->nr_reqs--;
}

static void
ready_push (struct nvme_session *s, struct nvme_req *rq)
{
  rq->state = RQ_READY;
  ZN_FIFO_PUSH (s->ready_head, s->ready_tail, rq, next);
}

/* Whether cmd may have its data sent after an R2T: 0, or the status it
 * fails with before any buffer is granted (execute's own, in execute's
 * order: a queue that has not authenticated gets no write buffer for a
 * command execute would refuse).  Only Connect, on a queue not connected
 * yet, and Write and Zone Append of an I/O queue, within MDTS, take data
 * from the host.
 */
static uint16_t
r2t_status (const struct nvme_session *s, const struct nvme_cmd *cmd,
            uint16_t *loc)
{
  uint16_t st;

  if (s->ctrl == NULL && nvme_cmd_is_connect (cmd)) {
    *loc = LOC_SGL_LEN;
    return cmd->sgl_len > ADMIN_INLINE_DATA
           ? ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD) : 0;
  }
  if (nvme_queue_ctrl (s) == NULL || nvme_cmd_is_connect (cmd))
    return ERR (NVME_SCT_GENERIC, NVME_SC_CMD_SEQ_ERROR);
  if (nvme_cmd_is_auth (cmd)) {
    *loc = LOC_SGL_LEN;
    return cmd->sgl_len > AUTH_SEND_MAX
           ? ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD) : 0;
  }
  if (cmd->opcode != nvme_admin_fabrics && !nvme_session_established (s))
    return ERR (NVME_SCT_GENERIC, NVME_SC_AUTH_REQUIRED);
  if (cmd->opcode != nvme_admin_fabrics && !nvme_queue_ready (s))
    return ERR (NVME_SCT_GENERIC, NVME_SC_CMD_SEQ_ERROR);
  st = s->qid > 0 ? nvme_io_data_status (s, cmd) : nvme_admin_data_status (cmd);
  *loc = st == ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_OPCODE) ? LOC_OPCODE
                                                               : LOC_SGL_LEN;
  return st;
}

static uint32_t
inline_limit (const struct nvme_session *s)
{
  return s->ctrl && s->qid > 0 ? IO_INLINE_DATA : ADMIN_INLINE_DATA;
}

/* A command capsule, with dlen bytes of in-capsule data (dgst_ok: their
 * digest matched).
 */
static int
capsule (struct nvme_session *s, const unsigned char *pdu,
         const struct pdu_ch *ch, const unsigned char *data, uint32_t dlen,
         bool dgst_ok)
{
  struct nvme_req *rq;
  struct nvme_cmd cmd;
  unsigned limit = s->ctrl ? s->sqsize + 1u : 1u;
  bool to_ctrl;

  nvme_cmd_parse (pdu + PDU_CH_LEN, &cmd);
  if (s->nr_reqs >= limit)
    return terminate (s, pdu, ch, FES_SEQUENCE, 0,
                      "more commands outstanding than the queue's size");
  if (s->ctrl)
    s->sqhd = (uint16_t) ((s->sqhd + 1u) % (s->sqsize + 1u));
  rq = calloc (1, sizeof *rq);
  if (rq == NULL)
    nvme_out_of_memory (s);
  s->nr_reqs++;
  memcpy (rq->sqe, pdu + PDU_CH_LEN, SQE_LEN);
  rq->cmd = cmd;
  rq->loc = LOC_NONE;
  to_ctrl = nvme_cmd_to_ctrl (&cmd);

  if (!dgst_ok)
    rq->status = SC (NVME_SCT_GENERIC, NVME_SC_TRAN_TPORT_ERROR);
  else if (dlen > 0) {
    if (cmd.sgl_type != SGL_DATA_OFFSET) {
      rq->status = ERR (NVME_SCT_GENERIC, NVME_SC_SGL_INVALID_TYPE);
      rq->loc = LOC_SGL_TYPE;
    }
    else if (cmd.sgl_addr != 0) {
      rq->status = ERR (NVME_SCT_GENERIC, NVME_SC_SGL_INVALID_OFFSET);
      rq->loc = LOC_SGL_ADDR;
    }
    else if (cmd.sgl_len != dlen || dlen > inline_limit (s)) {
      rq->status = ERR (NVME_SCT_GENERIC, NVME_SC_SGL_INVALID_DATA);
      rq->loc = LOC_SGL_LEN;
    }
    else if ((rq->data = malloc (dlen)) == NULL)
      nvme_out_of_memory (s);
    else {
      memcpy (rq->data, data, dlen);
      rq->len = dlen;
    }
  }
  else if (to_ctrl && cmd.sgl_len > 0) {
    if (cmd.sgl_type != SGL_TRANSPORT) {
      rq->status = ERR (NVME_SCT_GENERIC, NVME_SC_SGL_INVALID_DATA);
      rq->loc = LOC_SGL_TYPE;
    }
    else if ((rq->status = r2t_status (s, &cmd, &rq->loc)) == 0) {
      /* Its data come after an R2T (start_r2ts). */
      struct nvme_req **tail;

      rq->state = RQ_WAIT_R2T;
      rq->len = cmd.sgl_len;
      for (tail = &s->xfers; *tail; tail = &(*tail)->next)
        ;
      *tail = rq;
      return 0;
    }
  }
  ready_push (s, rq);
  return 0;
}

static bool
ttag_in_use (const struct nvme_session *s, uint16_t ttag)
{
  for (const struct nvme_req *rq = s->xfers; rq; rq = rq->next)
    if (rq->state == RQ_H2C && rq->ttag == ttag)
      return true;
  return false;
}

/* Room in the output budget for an R2T of len bytes and its buffer.
 * With none in flight the session waits for it as a reply does (its
 * connection is not read meanwhile: nothing it holds needs reading);
 * with some, their data must still be read, so it only asks, and asks
 * again as their data come.
 */
static bool
r2t_room (const struct nvme_session *s, uint32_t len)
{
  const struct nvme_served *sv = s->sv;
  size_t n = PDU_R2T_LEN + hdgst_len (s) + len;

  if (s->r2t_bytes == 0)
    return sv->room == NULL || sv->room (s->owner, nvme_session_holds (s), n);
  return sv->fits == NULL || sv->fits (s->owner, nvme_session_holds (s), n);
}

/* R2Ts for the writes waiting for one, in order, while their buffers
 * fit R2T_BUFFER_LIMIT (the first always does) and the output budget:
 * what a host may make the server hold is bounded whatever its queue
 * depth, and whatever its number of queues.
 */
static void
start_r2ts (struct nvme_session *s)
{
  for (struct nvme_req *rq = s->xfers; rq; rq = rq->next) {
    unsigned char *h;

    if (rq->state != RQ_WAIT_R2T)
      continue;
    if (s->r2t_bytes > 0 && s->r2t_bytes + rq->len > R2T_BUFFER_LIMIT)
      return;
    if (!r2t_room (s, rq->len))
      return;
    if ((rq->data = malloc (rq->len)) == NULL)
      nvme_out_of_memory (s);
    while (ttag_in_use (s, s->next_ttag))
      s->next_ttag++;
    rq->ttag = s->next_ttag++;
    rq->state = RQ_H2C;
    s->r2t_bytes += rq->len;
    h = pdu_begin (s, PDU_R2T, 0, PDU_R2T_LEN, 0,
                   PDU_R2T_LEN + hdgst_len (s));
    put_le16 (h + DATA_CCCID, rq->cmd.cid);
    put_le16 (h + DATA_TTAG, rq->ttag);
    put_le32 (h + DATA_OFFSET, 0);
    put_le32 (h + DATA_LENGTH, rq->len);
    pdu_end_header (s, h);
  }
}

/* An H2CData PDU; data: its dlen bytes. */
static int
h2c_data (struct nvme_session *s, const unsigned char *pdu,
          const struct pdu_ch *ch, const unsigned char *data, uint32_t dlen,
          bool dgst_ok)
{
  struct pdu_data d = pdu_data_decode (pdu);
  uint32_t datal = d.datal;
  struct nvme_req *rq, **pp;
  bool last = ch->flags & PDU_F_DATA_LAST;

  for (pp = &s->xfers; (rq = *pp) != NULL; pp = &rq->next)
    if (rq->state == RQ_H2C && rq->ttag == d.ttag)
      break;
  if (rq == NULL)
    return terminate (s, pdu, ch, FES_INVALID_HEADER, DATA_TTAG,
                      "no R2T has this transfer tag");
  if (rq->cmd.cid != d.cccid)
    return terminate (s, pdu, ch, FES_INVALID_HEADER, DATA_CCCID,
                      "the command id is not the R2T's");
  if (datal != dlen)
    return terminate (s, pdu, ch, FES_INVALID_HEADER, DATA_LENGTH,
                      "DATAL is not the PDU's data length");
  if (datal == 0)
    return terminate (s, pdu, ch, FES_INVALID_HEADER, DATA_LENGTH,
                      "DATAL is 0");
  if (datal > NVME_MAX_H2C_DATA)
    return terminate (s, pdu, ch, FES_LIMIT_EXCEEDED, DATA_LENGTH,
                      "DATAL exceeds MAXH2CDATA");
  if (d.datao != rq->got || datal > rq->len - rq->got)
    return terminate (s, pdu, ch, FES_OUT_OF_RANGE, DATA_OFFSET,
                      "DATAO and DATAL are not the next data of the R2T");
  if (last != (rq->got + datal == rq->len))
    return terminate (s, pdu, ch, FES_SEQUENCE, 1,
                      last ? "LAST_PDU before the end of the R2T's data"
                           : "the R2T's last data without LAST_PDU");
  memcpy (rq->data + rq->got, data, datal);
  rq->got += datal;
  if (!dgst_ok)
    rq->status = SC (NVME_SCT_GENERIC, NVME_SC_TRAN_TPORT_ERROR);
  if (last) {
    *pp = rq->next;
    s->r2t_bytes -= rq->len;
    ready_push (s, rq);
  }
  return 0;
}

/* The most a command makes the session hold: its reply, with data only
 * for an opcode that moves data to the host, or the data it brought,
 * which a write parked for its write pointer keeps (its transfer bits);
 * at most what its SGL asks and the queue ever moves.
 */
static size_t
reply_max (const struct nvme_session *s, const struct nvme_cmd *cmd)
{
  uint64_t max = s->qid > 0 ? nvme_max_transfer (s->sv) : MAX_ADMIN_DATA;
  uint64_t len = cmd->opcode & 3 ? cmd->sgl_len : 0;

  return nvme_reply_bound (s, len < max ? len : max);
}

/* Carries out a ready request: 1 when done, 0 when it must wait.
 * Every request, the failing ones too, first waits for room for its
 * reply, so that a host that does not read stops being read.  The
 * buffers of R2Ts in flight are left out of the session's share here:
 * waiting for them to go would wait for input this wait stops reading.
 */
static int
execute (struct nvme_session *s, struct nvme_req *rq)
{
  const struct nvme_cmd *cmd = &rq->cmd;

  if (s->sv->room && !s->sv->room (s->owner, nvme_session_holds (s)
                                   - s->r2t_bytes, reply_max (s, cmd)))
    return 0;
  if (rq->status) {
    nvme_fail (s, cmd, rq->status, rq->loc);
    return 1;
  }
  if (!rq->decoded) {
    nvme_cmd_decode (rq->sqe, s->qid > 0, &rq->cmd);
    rq->decoded = true;
  }
  if (nvme_cmd_is_connect (cmd)) {
    nvme_fabrics_connect (s, cmd, rq->data, rq->len);
    return 1;
  }
  if (nvme_queue_ctrl (s) == NULL) {
    nvme_reply (s, cmd, ERR (NVME_SCT_GENERIC, NVME_SC_CMD_SEQ_ERROR), 0);
    return 1;
  }
  if (nvme_cmd_is_auth (cmd)) {
    nvme_auth_command (s, cmd, rq->data, rq->len);
    return 1;
  }
  /* A queue that must authenticate and has not: only the fabrics
   * commands (the properties), as nvmet.
   */
  if (!nvme_session_established (s) && cmd->opcode != nvme_admin_fabrics) {
    nvme_reply (s, cmd, ERR (NVME_SCT_GENERIC, NVME_SC_AUTH_REQUIRED), 0);
    return 1;
  }
  /* Before CC.EN, and after a reset or a shutdown, as nvmet answers. */
  if (cmd->opcode != nvme_admin_fabrics && !nvme_queue_ready (s)) {
    nvme_reply (s, cmd, ERR (NVME_SCT_GENERIC, NVME_SC_CMD_SEQ_ERROR), 0);
    return 1;
  }
  if (s->qid > 0)
    return nvme_io_command (s, cmd, &rq->data, rq->len);
  if (cmd->opcode == nvme_admin_fabrics)
    nvme_fabrics_command (s, cmd);
  else
    nvme_admin_command (s, cmd, rq->data, rq->len);
  return 1;
}

/* The ready requests, in order; false when one must wait. */
static bool
run_ready (struct nvme_session *s)
{
  struct nvme_req *rq;

  while ((rq = s->ready_head) != NULL && !s->dead) {
    int done;

    if (s->sv->stats)
      s->arrival = s->sv->stats->arrival (s->owner);
    done = execute (s, rq);
    s->arrival = 0;
    if (done == 0)
      return false;
    ZN_FIFO_POP (s->ready_head, s->ready_tail, rq, next);
    req_free (s, rq);
  }
  return true;
}

/* ---- PDUs ------------------------------------------------------------------ */

static int
ic_req (struct nvme_session *s, const unsigned char *pdu,
        const struct pdu_ch *ch)
{
  struct pdu_icreq ic = pdu_icreq_decode (pdu);
  unsigned char *h;

  if (s->ic_done)
    return terminate (s, pdu, ch, FES_SEQUENCE, 0, "a second ICReq");
  if (ic.pfv != 0)
    return terminate (s, pdu, ch, FES_UNSUPPORTED, IC_PFV,
                      "PFV is not 0 (NVMe/TCP 1.0)");
  if (ic.hpda > 31)
    return terminate (s, pdu, ch, FES_INVALID_HEADER, IC_HPDA,
                      "HPDA exceeds 31");
  s->hpda = (ic.hpda + 1u) * 4;
  s->hdgst = ic.dgst & IC_DGST_HDGST;
  s->ddgst = ic.dgst & IC_DGST_DDGST;
  s->ic_done = true;
  h = nvme_out_reserve (s, PDU_IC_LEN);
  memset (h, 0, PDU_IC_LEN);
  h[0] = PDU_IC_RESP;
  h[2] = PDU_IC_LEN;
  put_le32 (h + 4, PDU_IC_LEN);
  h[IC_DGST] = (s->hdgst ? IC_DGST_HDGST : 0) | (s->ddgst ? IC_DGST_DDGST : 0);
  put_le32 (h + IC_MAXH2CDATA, NVME_MAX_H2C_DATA);
  return 0;
}

/* The header length each type the host may send has; 0: none may. */
static unsigned
expected_hlen (uint8_t type)
{
  switch (type) {
  case PDU_IC_REQ: return PDU_IC_LEN;
  case PDU_H2C_TERM: return PDU_TERM_LEN;
  case PDU_CAPSULE_CMD: return PDU_CMD_LEN;
  case PDU_H2C_DATA: return PDU_DATA_LEN;
  default: return 0;
  }
}

/* Checks the common header before waiting for the rest of the PDU, so
 * that a bad length is refused at once.  0, or -1 (TermReq queued).
 */
static int
check_header (struct nvme_session *s, const unsigned char *pdu,
              const struct pdu_ch *ch)
{
  uint8_t type = ch->type, hlen = ch->hlen;
  uint32_t plen = ch->plen, min;
  unsigned want = expected_hlen (type);
  size_t hd = type == PDU_IC_REQ || type == PDU_H2C_TERM ? 0 : hdgst_len (s);

  if (want == 0)
    return terminate (s, pdu, ch, FES_INVALID_HEADER, 0,
                      "not a PDU type a host sends");
  if (!s->ic_done && type != PDU_IC_REQ && type != PDU_H2C_TERM)
    return terminate (s, pdu, ch, FES_SEQUENCE, 0, "a PDU before ICReq");
  if (hlen != want)
    return terminate (s, pdu, ch, FES_INVALID_HEADER, 2,
                      "HLEN is not the PDU type's");
  min = hlen + (uint32_t) hd;
  if (type == PDU_IC_REQ && plen != PDU_IC_LEN)
    return terminate (s, pdu, ch, FES_INVALID_HEADER, 4, "PLEN is not 128");
  if (plen < min)
    return terminate (s, pdu, ch, FES_INVALID_HEADER, 4,
                      "PLEN is shorter than the header");
  if (type == PDU_H2C_TERM ? plen > PDU_TERM_LEN + PDU_TERM_MAX_COPY + 24
                           : plen > NVME_MAX_PDU)
    return terminate (s, pdu, ch, FES_INVALID_HEADER, 4,
                      "PLEN exceeds the largest PDU");
  if ((type == PDU_CAPSULE_CMD || type == PDU_H2C_DATA) && plen > min
      && (ch->pdo < min || ch->pdo > plen))
    return terminate (s, pdu, ch, FES_INVALID_HEADER, 3,
                      "PDO is not between the header and PLEN");
  if (s->hdgst && hd && !(ch->flags & PDU_F_HDGST))
    return terminate (s, pdu, ch, FES_INVALID_HEADER, 1,
                      "no HDGST flag, but header digests were negotiated");
  return 0;
}

/* One whole PDU of plen bytes at pdu. */
static int
handle_pdu (struct nvme_session *s, const unsigned char *pdu,
            const struct pdu_ch *ch)
{
  uint8_t type = ch->type, hlen = ch->hlen;
  uint32_t plen = ch->plen;
  size_t hd = type == PDU_IC_REQ || type == PDU_H2C_TERM ? 0 : hdgst_len (s);
  const unsigned char *data = NULL;
  uint32_t dlen = 0;
  bool dgst_ok = true;

  if (hd && get_le32 (pdu + hlen) != nvme_crc32c (pdu, hlen))
    return terminate (s, pdu, ch, FES_HDGST, 0, "header digest mismatch");
  if (type == PDU_IC_REQ)
    return ic_req (s, pdu, ch);
  if (type == PDU_H2C_TERM) {
    fprintf (stderr, "%s: nvme: the host ended the connection "
             "(H2CTermReq, status %u)\n", s->sv->program,
             get_le16 (pdu + TERM_FES));
    cut_output (s);
    return -1;
  }
  if (plen > hlen + hd) {
    size_t dd = s->ddgst ? PDU_DIGEST_LEN : 0;

    if (plen - ch->pdo <= dd)
      return terminate (s, pdu, ch, FES_INVALID_HEADER, 4,
                        "PLEN leaves no data after PDO");
    /* As nvmet: a host that leaves the flag out is out of step with
     * the digests it negotiated, not hit by a corrupted byte.
     */
    if (dd && !(ch->flags & PDU_F_DDGST))
      return terminate (s, pdu, ch, FES_INVALID_HEADER, 1,
                        "no DDGST flag, but data digests were negotiated");
    data = pdu + ch->pdo;
    dlen = (uint32_t) (plen - ch->pdo - dd);
    if (dd && get_le32 (data + dlen) != nvme_crc32c (data, dlen)) {
      dgst_ok = false;
      nvme_log (s, "data digest mismatch: the command fails with a "
                "transient transport error");
    }
  }
  if (type == PDU_CAPSULE_CMD)
    return capsule (s, pdu, ch, data, dlen, dgst_ok);
  return h2c_data (s, pdu, ch, data, dlen, dgst_ok);
}

long
nvme_session_input (struct nvme_session *s, const unsigned char *data,
                    size_t len)
{
  size_t used = 0;

  /* On a port that allows TLS, a TLS record's first byte (a handshake,
   * 22) is never an ICReq's (PDU type 0): the input waits for the
   * handshake.
   */
  if (s->sv->tls == NVME_TLS_ALLOWED && !s->tls_on && !s->ic_done
      && len > 0 && data[0] == TLS_RECORD_HANDSHAKE) {
    s->tls_wanted = true;
    return 0;
  }
  for (;;) {
    struct pdu_ch ch;

    if (s->dead)
      return -1;
    if (!run_ready (s))
      break;
    if (s->dead)
      return -1;
    start_r2ts (s);
    if (len - used < PDU_CH_LEN)
      break;
    s->pdu_avail = len - used;
    ch = pdu_ch_decode (data + used);
    if (check_header (s, data + used, &ch) == -1)
      return -1;
    if (len - used < ch.plen)
      break;
    if (handle_pdu (s, data + used, &ch) == -1)
      return -1;
    used += ch.plen;
  }
  return (long) used;
}

/* ---- the session -------------------------------------------------------------- */

struct nvme_session *
nvme_session_new (const struct nvme_served *sv, void *owner)
{
  struct nvme_session *s = calloc (1, sizeof *s);

  if (s == NULL)
    return NULL;
  s->sv = sv;
  s->owner = owner;
  s->hpda = 4;
  return s;
}

void
nvme_session_free (struct nvme_session *s)
{
  if (s == NULL)
    return;
  nvme_fabrics_detach (s);
  while (s->ready_head) {
    struct nvme_req *rq = s->ready_head;

    s->ready_head = rq->next;
    req_free (s, rq);
  }
  while (s->xfers) {
    struct nvme_req *rq = s->xfers;

    s->xfers = rq->next;
    req_free (s, rq);
  }
  park_clear (&s->parked);
  park_hold_reply_clear (&s->held);
  park_hold_reply_clear (&s->delayed);
  nvme_auth_free (s);
  park_output_unkeep (&s->out_kept);
  free (s->out);
  free (s);
}

bool
nvme_session_starttls (const struct nvme_session *s)
{
  return !s->tls_on && (s->tls_wanted || s->sv->tls == NVME_TLS_REQUIRED);
}

void
nvme_session_tls_started (struct nvme_session *s, const char *psk_identity)
{
  s->tls_on = true;
  s->tls_wanted = false;
  /* "NVMe0R01 HOSTNQN SUBNQN[ DIGEST]": the PSK callback accepted only
   * well-formed identities (proto/nvme/tls-psk.c), whose NQNs fit.
   */
  if (psk_identity == NULL
      || sscanf (psk_identity, "%*s %223s %223s", s->tls_hostnqn,
                 s->tls_subnqn) != 2)
    s->dead = true;
}

bool
nvme_session_connected (const struct nvme_session *s)
{
  return nvme_queue_ctrl (s) != NULL;
}

bool
nvme_session_established (const struct nvme_session *s)
{
  const struct nvme_ctrl *c = nvme_queue_ctrl (s);

  return c != NULL && (c->secret == NULL || s->authenticated);
}

void
nvme_session_resume (struct nvme_session *s, uint64_t id, int err)
{
  struct parked *p = park_take (&s->parked, id);

  if (p == NULL)
    return;
  s->arrival = p->arrival;
  nvme_io_resume (s, id, (const struct nvme_cmd *) p->req, &p->data, err);
  s->arrival = 0;
  park_free (p);
}
