/* SPDX-License-Identifier: BSD-3-Clause */
/* Parked requests, held replies and kept output buffers, shared by the
 * sessions (see park.h).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "util/fifo.h"
#include "park.h"

bool
park_request (struct parked_requests *q, uint64_t id, const void *req,
              size_t req_len, unsigned char *data, size_t data_len)
{
  struct parked *p = malloc (sizeof *p + req_len);

  if (p == NULL)
    return false;
  p->id = id;
  p->arrival = 0;
  p->data = data;
  p->data_len = data ? data_len : 0;
  memcpy (p->req, req, req_len);
  ZN_FIFO_PUSH (q->head, q->tail, p, next);
  q->bytes += p->data_len;
  return true;
}

struct parked *
park_take (struct parked_requests *q, uint64_t id)
{
  struct parked *p;

  for (p = q->head; p && p->id != id; p = p->next)
    ;
  if (p) {
    ZN_FIFO_REMOVE (struct parked, q->head, q->tail, p, next);
    q->bytes -= p->data_len;
  }
  return p;
}

void
park_free (struct parked *p)
{
  free (p->data);
  free (p);
}

void
park_clear (struct parked_requests *q)
{
  while (q->head) {
    struct parked *p;

    ZN_FIFO_POP (q->head, q->tail, p, next);
    park_free (p);
  }
  q->bytes = 0;
}

bool
park_hold_reply_add (struct held_replies *q, size_t end, const void *data,
                size_t len)
{
  struct held *h = malloc (sizeof *h + len);

  if (h == NULL)
    return false;
  h->id = 0;
  h->end = end;
  h->len = len;
  h->arrival = 0;
  h->hold = NULL;
  if (len > 0)
    memcpy (h->data, data, len);
  ZN_FIFO_PUSH (q->head, q->tail, h, next);
  q->count++;
  q->bytes += len;
  return true;
}

struct held *
park_hold_reply_next (struct held_replies *q)
{
  struct held *h;

  ZN_FIFO_POP (q->head, q->tail, h, next);
  if (h) {
    q->count--;
    q->bytes -= h->len;
  }
  return h;
}

struct held *
park_hold_reply_take (struct held_replies *q, uint64_t id)
{
  struct held *h;

  for (h = q->head; h && h->id != id; h = h->next)
    ;
  if (h) {
    ZN_FIFO_REMOVE (struct held, q->head, q->tail, h, next);
    q->count--;
    q->bytes -= h->len;
  }
  return h;
}

void
park_hold_reply_clear (struct held_replies *q)
{
  struct held *h;

  while ((h = park_hold_reply_next (q)) != NULL)
    free (h);
}

/* ---- kept output buffers ------------------------------------------------- */

/* The bytes past NET_OUTPUT_KEEP_ALWAYS of every kept buffer, all
 * sessions of all loops together.
 */
static _Atomic size_t kept_beyond;

bool
park_output_keep (size_t *kept, size_t cap)
{
  size_t want = cap > NET_OUTPUT_KEEP_ALWAYS ? cap - NET_OUTPUT_KEEP_ALWAYS : 0;
  size_t now;

  if (cap > NET_OUTPUT_KEEP) {
    park_output_unkeep (kept);
    return false;
  }
  if (want <= *kept) {
    if (want < *kept)
      atomic_fetch_sub (&kept_beyond, *kept - want);
    *kept = want;
    return true;
  }
  now = atomic_load (&kept_beyond);
  do {
    if (now + (want - *kept) > NET_OUTPUT_KEPT_MAX) {
      park_output_unkeep (kept);
      return false;
    }
  } while (!atomic_compare_exchange_weak (&kept_beyond, &now,
                                          now + (want - *kept)));
  *kept = want;
  return true;
}

void
park_output_unkeep (size_t *kept)
{
  if (*kept)
    atomic_fetch_sub (&kept_beyond, *kept);
  *kept = 0;
}
