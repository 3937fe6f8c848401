/* SPDX-License-Identifier: BSD-3-Clause */
/* What a session sets aside for the scheduler (served.h), in either
 * protocol: requests parked (writes admitted with ADMIT_PARK, requests
 * requeued), kept until resume, and the replies held until their
 * requests complete: irqmode=2's, released by complete_one oldest first,
 * and delayed ones, released by their request's id.  All are FIFOs
 * (lib/util/fifo.h).
 */
#ifndef ZONEDNULL_PROTO_PARK_H
#define ZONEDNULL_PROTO_PARK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct zn_wlog_hold;

/* A parked request: the session's id for it, its data (a write's), and
 * the protocol's request as the session decoded it (req_len bytes at
 * req).
 */
struct parked {
  struct parked *next;
  uint64_t id;
  uint64_t arrival;             /* --stats: the request's (served.h); 0
                                   until the session sets it */
  unsigned char *data;
  size_t data_len;
  _Alignas (max_align_t) unsigned char req[];
};

struct parked_requests {
  struct parked *head, *tail;
  /* In the data of the requests parked: memory the client made us hold,
   * which its session's output budget counts (holds).
   */
  size_t bytes;
};

/* Parks the request id, copying req and taking data (malloc'd, data_len
 * bytes, or NULL) over; false when out of memory.
 */
bool park_request (struct parked_requests *q, uint64_t id, const void *req,
                   size_t req_len, unsigned char *data, size_t data_len);

/* Takes the parked request id out; NULL when there is none. */
struct parked *park_take (struct parked_requests *q, uint64_t id);

/* Frees p and its data. */
void park_free (struct parked *p);

/* Frees every parked request. */
void park_clear (struct parked_requests *q);

/* A held reply.  A session whose output waits behind its oldest held
 * reply (NBD) keeps the reply in its output and notes only where it ends
 * there (end); one whose other output goes on (NVMe/TCP: R2Ts, replies
 * that took no tag) takes the reply's len bytes out into data.
 */
struct held {
  struct held *next;
  uint64_t id;                  /* the request's, for park_hold_reply_take */
  size_t end;
  size_t len;
  uint64_t arrival;             /* --stats: the request's (served.h) */
  /* A control command's write, for the write log when the reply goes
   * (zn_control_complete); NULL for the rest.
   */
  struct zn_wlog_hold *hold;
  unsigned char data[];
};

struct held_replies {
  struct held *head, *tail;
  unsigned count;
  size_t bytes;                 /* in the data of the replies held */
};

/* Holds a reply that ends at end in the output, with the len bytes at
 * data (none for a session that keeps it in its output); false when out
 * of memory.
 */
bool park_hold_reply_add (struct held_replies *q, size_t end, const void *data,
                     size_t len);

/* The oldest held reply, taken out (the caller frees it); NULL when none
 * is held.
 */
struct held *park_hold_reply_next (struct held_replies *q);

/* Takes the held reply of request id out (the caller frees it); NULL
 * when none is held.
 */
struct held *park_hold_reply_take (struct held_replies *q, uint64_t id);

/* Frees every held reply. */
void park_hold_reply_clear (struct held_replies *q);

/* Whether a session may keep its drained output buffer of cap bytes for
 * its next replies (net/conn.h, NET_OUTPUT_KEEP): false when it must
 * free it.  *kept is the session's share of the program's kept bytes,
 * updated; 0 for a new session.
 */
bool park_output_keep (size_t *kept, size_t cap);

/* Gives the session's share back, when its buffer is freed. */
void park_output_unkeep (size_t *kept);

#endif
