/* SPDX-License-Identifier: BSD-3-Clause */
/* Parked requests and held replies, shared by the sessions (see park.h). */
#include <stdlib.h>
#include <string.h>

#include "util/fifo.h"
#include "park.h"

bool
park_request (struct parked_requests *q, uint64_t id, const void *req,
            size_t req_len, unsigned char *data)
{
  struct parked *p = malloc (sizeof *p + req_len);

  if (p == NULL)
    return false;
  p->id = id;
  p->arrival = 0;
  p->data = data;
  memcpy (p->req, req, req_len);
  ZN_FIFO_PUSH (q->head, q->tail, p, next);
  return true;
}

struct parked *
park_take (struct parked_requests *q, uint64_t id)
{
  struct parked *p;

  for (p = q->head; p && p->id != id; p = p->next)
    ;
  if (p)
    ZN_FIFO_REMOVE (struct parked, q->head, q->tail, p, next);
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
