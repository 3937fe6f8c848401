/* SPDX-License-Identifier: BSD-3-Clause */
/* zonednull: null_blk's queueing model (tags, hardware queues, completion
 * timing, bandwidth throttle), without any transport.
 *
 * null_blk applies every request synchronously at submission and defers
 * only its completion.  An adapter therefore brackets each request:
 *
 *   zn_queue_begin    waits FIFO for a tag of the request's pool (never
 *                     fails), then for the mbps budget
 *   ... apply the request to the device model ...
 *   zn_queue_end      with irqmode=2 sleeps until completion_nsec after the
 *                     tag was obtained, then frees the tag
 *
 * A tag set holds the tag pools: one per hardware queue (hw_queue_depth
 * tags each) or, with shared_tag_bitmap, one pool of hw_queue_depth tags
 * for all queues.  Each device has its own tag set, or all devices share
 * one (shared_tags).  Hardware queue q of any device draws from pool q (or
 * pool 0 with shared_tag_bitmap).  Connection k of a device feeds queue
 * k mod submit_queues.  All calls are thread-safe.
 */
#ifndef ZONEDNULL_QUEUE_H
#define ZONEDNULL_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define ZN_QUEUE_MAX_QUEUES 120      /* what the control header can show */
#define ZN_MBPS_MAX 40960            /* null_blk's cap */

/* null_blk's queueing parameters, with its names, units and defaults. */
struct zn_queue_config {
  uint32_t irqmode;            /* 0 inline, 1 softirq, 2 timer */
  uint64_t completion_nsec;    /* completion delay with irqmode=2 */
  uint32_t hw_queue_depth;     /* tags per pool */
  uint32_t submit_queues;      /* hardware queues per device */
  bool shared_tags;            /* devices share one tag set */
  bool shared_tag_bitmap;      /* one pool for all queues of the tag set */
  uint32_t mbps;               /* MiB/s per device, 0 = unlimited */
};

/* irqmode=1, completion_nsec=10000, hw_queue_depth=64, submit_queues=1. */
void zn_queue_config_init (struct zn_queue_config *cfg);

/* Applies null_blk's validation and clamping: irqmode 0..2,
 * hw_queue_depth > 0, submit_queues <= 0 becomes 1, mbps capped at 40960.
 * Returns 0, or -EINVAL with a message naming the key and the rule.
 */
int zn_queue_config_check (struct zn_queue_config *cfg, char *err, size_t errlen);

/* Whether requests complete completion_nsec after their tag (irqmode=2
 * with a delay) rather than at once.
 */
bool zn_queue_timed (const struct zn_queue_config *cfg);

/* Counters of one hardware queue, or of a whole device (summed, with the
 * device's own peak).  All but in_use only grow.
 */
struct zn_queue_stats {
  uint32_t in_use;             /* tags held now */
  uint32_t peak;               /* most tags held at once */
  uint64_t waited;             /* requests that found no free tag (counted
                                  when they start to wait) */
  uint64_t completed;          /* requests that released their tag */
  uint32_t connections;        /* connections attached (queues only) */
};

struct zn_tagset;
struct zn_queues;             /* one device's hardware queues */

/* A tag set with the pools that cfg asks for. */
struct zn_tagset *zn_tagset_create (const struct zn_queue_config *cfg);
void zn_tagset_destroy (struct zn_tagset *set);

/* The hardware queues of one device, drawing tags from set (which must
 * outlive them).
 */
struct zn_queues *zn_queues_create (struct zn_tagset *set,
                                    const struct zn_queue_config *cfg);
void zn_queues_destroy (struct zn_queues *qs);

/* Attaches a new connection; returns its queue (k mod submit_queues for
 * the k-th connection).  zn_queues_detach when it closes.
 */
unsigned zn_queues_attach (struct zn_queues *qs);
void zn_queues_detach (struct zn_queues *qs, unsigned queue);

/* One request between begin and end. */
struct zn_request {
  unsigned queue;
  struct timespec tag_time;    /* CLOCK_MONOTONIC when the tag was got */
};

void zn_queue_begin (struct zn_queues *qs, unsigned queue, uint64_t bytes,
                     struct zn_request *rq);
void zn_queue_end (struct zn_queues *qs, struct zn_request *rq);

/* The same for an event loop, which must not block.  zn_queue_try_begin
 * takes a tag only if one is free and no thread waits for it; otherwise
 * it returns false, and the caller queues the request itself (FIFO per
 * pool, see zn_queues_pool) and tries again when a tag is freed.  A
 * request counts once in "waited": pass first_try on its first attempt
 * only.  When zn_request_due comes, the caller sends the reply and calls
 * zn_queue_complete, which frees the tag.
 *
 * The mbps throttle: zn_queue_throttled_until is 0 when a request may
 * start now, else the CLOCK_MONOTONIC time in ns to try again;
 * zn_queue_charge pays for a request that started.
 */
uint64_t zn_queue_throttled_until (struct zn_queues *qs);
void zn_queue_charge (struct zn_queues *qs, uint64_t bytes);
bool zn_queue_try_begin (struct zn_queues *qs, unsigned queue, bool first_try,
                         struct zn_request *rq);
struct timespec zn_request_due (const struct zn_queues *qs,
                                const struct zn_request *rq);
void zn_queue_complete (struct zn_queues *qs, struct zn_request *rq);

/* The pool of the tag set that a hardware queue draws from. */
unsigned zn_queues_pool (const struct zn_queues *qs, unsigned queue);

/* Copies the device's counters to *dev and those of up to max queues to
 * queues[]; returns the number of queues.
 */
unsigned zn_queues_stats (struct zn_queues *qs, struct zn_queue_stats *dev,
                          struct zn_queue_stats *queues, unsigned max);

#endif /* ZONEDNULL_QUEUE_H */
