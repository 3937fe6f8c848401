/* SPDX-License-Identifier: BSD-3-Clause */
/* The NBD session: fixed newstyle handshake (handshake.c) and
 * transmission (transmission.c), with structured replies and two
 * metadata contexts.  Here: the output, the exports and the state
 * machine that hands each unit of input to its phase.
 *
 * Every length and offset a client sends is checked before it is used; a
 * client that breaks the framing is disconnected, one that asks for
 * something invalid gets the protocol's error and may carry on.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/control.h"
#include "model/zoned.h"
#include "powerfail/wlog.h"
#include "internal.h"

/* ---- output -------------------------------------------------------------- */

_Noreturn void
nbd_session_out_of_memory (const struct nbd_session *s)
{
  fprintf (stderr, "%s: out of memory\n", s->sv->program);
  abort ();
}

/* The bytes sent before the queue, whose room the buffer still holds. */
static size_t
outbuf_sent (const struct outbuf *b)
{
  return b->base ? (size_t) (b->data - b->base) : 0;
}

/* The bytes sent before the queue go back once they are at least as many
 * as those queued: each byte sent pays for at most one byte moved, and
 * what nbd_session_holds counts falls as the client reads, so that a
 * connection at its budget takes requests again before it drains.
 */
static void
outbuf_reclaim (struct outbuf *b)
{
  size_t sent = outbuf_sent (b);

  if (sent == 0 || sent < b->len)
    return;
  memmove (b->base, b->data, b->len);
  b->data = b->base;
  b->cap += sent;
}

void
nbd_out_grow (struct nbd_session *s, size_t more)
{
  struct outbuf *b = &s->out;
  size_t sent, cap;
  unsigned char *p;

  if (b->len + more <= b->cap)
    return;
  outbuf_reclaim (b);
  if (b->len + more <= b->cap)
    return;
  sent = outbuf_sent (b);
  cap = sent + b->cap;
  if (cap == 0)
    cap = 4096;
  while (cap < sent + b->len + more)
    cap *= 2;
  p = realloc (b->base, cap);
  if (p == NULL)
    nbd_session_out_of_memory (s);
  b->base = p;
  b->data = p + sent;
  b->cap = cap - sent;
}

static void
outbuf_consume (struct outbuf *b, size_t n)
{
  if (n >= b->len) {
    b->cap += outbuf_sent (b);
    b->data = b->base;
    b->len = 0;
    return;
  }
  b->data += n;
  b->len -= n;
  b->cap -= n;
}

void
nbd_format_message (struct message *m, const char *fmt, va_list ap)
{
  int n = vsnprintf (m->text, sizeof m->text, fmt, ap);

  if (n < 0)
    n = 0;
  if ((size_t) n >= sizeof m->text)
    n = sizeof m->text - 1;
  m->len = (uint16_t) n;
}

/* ---- exports ------------------------------------------------------------- */

const struct served_device *
nbd_find_export (const struct served *sv, const char *name, size_t len,
             bool *control, uint64_t *errlog, bool *bad)
{
  *errlog = 0;
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
    r = zn_control_parse_errlog_name (name, len, d->name, errlog);
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

bool
nbd_choose_export (struct nbd_session *s, const struct served_device *d,
               bool control, uint64_t errlog)
{
  struct zn_control_errlog *log = NULL;

  if (errlog && (log = zn_control_errlog_attach (d->ctl, errlog)) == NULL)
    return false;
  s->d = d;
  s->control = control;
  s->errlog = log;
  return true;
}

uint64_t
nbd_export_size (const struct served_device *d, bool control)
{
  if (control)
    return zn_control_size (d->ctl);
  return zn_dev_geometry (d->dev)->capacity << ZN_SECTOR_SHIFT;
}

/* FUA as the device advertises it: on 6.10 and later null_blk only with
 * cache_size and fua.
 */
uint16_t
nbd_export_flags (const struct nbd_session *s, const struct served_device *d,
              bool control)
{
  uint16_t f = TF_HAS_FLAGS | TF_SEND_FLUSH | TF_CAN_MULTI_CONN;

  if (s->sv->readonly)
    f |= TF_READ_ONLY;
  /* Every read is answered in one chunk, as the flag promises; the
   * protocol allows it only with structured replies.
   */
  if (s->structured)
    f |= TF_SEND_DF;
  if (!control) {
    if (zn_dev_geometry (d->dev)->fua)
      f |= TF_SEND_FUA;
    if (!s->sv->readonly)
      f |= TF_SEND_TRIM;
  }
  return f;
}

/* ---- the state machine --------------------------------------------------- */

struct nbd_session *
nbd_session_new (const struct served *sv, void *owner)
{
  struct nbd_session *s = calloc (1, sizeof *s);

  if (s == NULL)
    return NULL;
  s->sv = sv;
  s->owner = owner;
  out_be64 (s, NBDMAGIC);
  out_be64 (s, IHAVEOPT);
  out_be16 (s, FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES);
  s->ready = s->out.len;
  return s;
}

void
nbd_session_free (struct nbd_session *s)
{
  if (s == NULL)
    return;
  if (s->errlog)
    zn_control_errlog_detach (s->d->ctl, s->errlog);
  park_output_unkeep (&s->out_kept);
  free (s->out.base);
  /* Delayed control commands whose replies will not go: done all the
   * same for the write log, which would hold their writes until the
   * device stops.
   */
  for (struct held *h = s->delayed.head; h; h = h->next)
    zn_wlog_complete (h->hold);
  zn_control_complete (&s->conn);
  park_hold_reply_clear (&s->held);
  park_hold_reply_clear (&s->delayed);
  park_clear (&s->parked);
  free (s);
}

struct outbuf *
nbd_session_output (struct nbd_session *s)
{
  return &s->out;
}

const struct served_device *
nbd_session_device (const struct nbd_session *s, bool *control)
{
  if (s->phase != PH_TRANSMISSION)
    return NULL;
  *control = s->control;
  return s->d;
}

size_t
nbd_session_ready (const struct nbd_session *s)
{
  return s->ready;
}

/* The output counts from the start of its buffer: the bytes sent before
 * the queue are memory the client made us touch until they are
 * reclaimed.  So do the copies of the writes parked for their write
 * pointer, which wait as long as pipeline_wait_ms.
 */
size_t
nbd_session_holds (const struct nbd_session *s)
{
  return outbuf_sent (&s->out) + s->out.len + s->delayed.bytes
         + s->offloaded_bytes + s->parked.bytes;
}

void
nbd_session_sent (struct nbd_session *s, size_t n)
{
  outbuf_consume (&s->out, n);
  outbuf_reclaim (&s->out);
  s->ready -= n;
  for (struct held *h = s->held.head; h; h = h->next)
    h->end -= n;
  /* A drained buffer goes back unless park_output_keep lets it stay:
   * what the server holds for output is what is queued, not the most a
   * connection ever queued.
   */
  if (s->out.len == 0 && !park_output_keep (&s->out_kept, s->out.cap)) {
    free (s->out.base);
    s->out.base = s->out.data = NULL;
    s->out.cap = 0;
  }
}

bool
nbd_session_starttls (const struct nbd_session *s)
{
  return s->starttls;
}

void
nbd_session_tls_started (struct nbd_session *s)
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
nbd_session_tls_refused (const struct nbd_session *s)
{
  return s->tls_refused;
}

long
nbd_session_input (struct nbd_session *s, const unsigned char *data,
                   size_t len)
{
  size_t used = 0;

  /* What follows STARTTLS is TLS, not NBD.  In the transmission phase
   * served.room, when set, decides alone.
   */
  while ((s->out.len < NBD_SESSION_OUTPUT_LIMIT
          || (s->phase == PH_TRANSMISSION && s->sv->room)) && !s->starttls) {
    long r = s->phase == PH_TRANSMISSION
             ? nbd_transmission_step (s, data + used, len - used)
             : nbd_handshake_step (s, data + used, len - used);

    if (r < 0) {
      /* What was queued goes out before the connection closes, at once
       * unless the client asked to disconnect.
       */
      while (!s->disc && nbd_session_complete_one (s))
        ;
      while (!s->disc && s->delayed.head)
        nbd_session_release (s, s->delayed.head->id);
      if (s->held.count == 0)
        s->ready = s->out.len;
      return -1;
    }
    if (r == 0)
      break;
    used += (size_t) r;
    if (s->held.count == 0)
      s->ready = s->out.len;
  }
  if (s->held.count == 0)
    s->ready = s->out.len;
  return (long) used;
}
