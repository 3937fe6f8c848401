/* SPDX-License-Identifier: BSD-3-Clause */
/* null_blk's queueing model: tag pools with FIFO waiting, hardware queues
 * fed by connections, completion timing and the mbps throttle.
 *
 * The kernel applies a request at submission and completes it later: with
 * irqmode=2 an hrtimer fires completion_nsec after the request was
 * started, and the tag stays allocated until then.  An NBD server built on
 * nbdkit's v2 API can only reply by returning from the callback, so the
 * "timer" here is an absolute-time sleep of the worker thread; that is why
 * nbdkit's -t must be at least hw_queue_depth for the tags, not the
 * threads, to be the limit (see nbdkit-zonednull-plugin(1)).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>

#include "model/queue.h"

#define NSEC_PER_SEC 1000000000LL
#define THROTTLE_TICK_NSEC 20000000LL  /* null_blk refills every 20 ms */

/* A request waiting for a tag, on its own condition variable: a freed
 * tag is handed straight to the longest waiter, which alone is woken (a
 * broadcast woke every waiter per completion, which collapsed throughput
 * once nbdkit's threads outnumbered the tags).
 */
struct tag_waiter {
  pthread_cond_t cond;
  bool granted;
  struct tag_waiter *next;
};

/* One pool of tags; waiters queue in FIFO order. */
struct pool {
  pthread_mutex_t lock;
  uint32_t free;
  struct tag_waiter *head, *tail;
};

struct zn_tagset {
  uint32_t depth;
  uint32_t nr_pools;
  struct pool *pools;
};

/* Counters of one hardware queue; atomic because several pools (one per
 * queue) update the device's sums concurrently.
 */
struct hwq {
  atomic_uint in_use;
  atomic_uint peak;
  atomic_ullong waited;
  atomic_ullong completed;
  atomic_uint connections;
};

struct zn_queues {
  struct zn_tagset *set;
  struct zn_queue_config cfg;
  atomic_uint next_conn;       /* connections attached so far */
  struct hwq dev;              /* whole-device sums and peak */
  struct hwq *hwqs;
  /* The mbps token bucket. */
  pthread_mutex_t throttle_lock;
  int64_t tokens;              /* bytes; negative while in debt */
  int64_t budget;              /* bytes per tick */
  struct timespec next_tick;
};

void
zn_queue_config_init (struct zn_queue_config *cfg)
{
  *cfg = (struct zn_queue_config) {
    .irqmode = 1,
    .completion_nsec = 10000,
    .hw_queue_depth = 64,
    .submit_queues = 1,
  };
}

int
zn_queue_config_check (struct zn_queue_config *cfg, char *err, size_t errlen)
{
  if (cfg->irqmode > 2) {
    snprintf (err, errlen, "irqmode: %u is not 0 (none), 1 (softirq) or "
              "2 (timer)", cfg->irqmode);
    return -EINVAL;
  }
  /* The delay is added to a timespec as an int64_t (add_nsec): larger
   * values wrapped to negative delays, completing at once or never.
   * INT64_MAX ns, 292 years, added to CLOCK_MONOTONIC cannot overflow a
   * 64-bit time_t, nor the server's unsigned nanosecond due times.
   */
  if (cfg->completion_nsec > (uint64_t) INT64_MAX) {
    snprintf (err, errlen, "completion_nsec: %" PRIu64 " is more than %"
              PRId64 ", the longest delay a signed 64-bit count of "
              "nanoseconds holds", cfg->completion_nsec, INT64_MAX);
    return -EINVAL;
  }
  if (cfg->hw_queue_depth == 0) {
    snprintf (err, errlen, "hw_queue_depth: must be at least 1 "
              "(blk-mq rejects 0 tags)");
    return -EINVAL;
  }
  if (cfg->hw_queue_depth > 65536) {
    snprintf (err, errlen, "hw_queue_depth: %u is more than blk-mq's "
              "maximum of 65536 tags", cfg->hw_queue_depth);
    return -EINVAL;
  }
  if (cfg->submit_queues == 0)
    cfg->submit_queues = 1;         /* null_blk: <= 0 becomes 1 */
  if (cfg->submit_queues > ZN_QUEUE_MAX_QUEUES) {
    snprintf (err, errlen, "submit_queues: %u is more than %u, the most "
              "the control channel reports", cfg->submit_queues,
              ZN_QUEUE_MAX_QUEUES);
    return -EINVAL;
  }
  if (cfg->mbps > ZN_MBPS_MAX)
    cfg->mbps = ZN_MBPS_MAX;        /* null_blk caps it silently */
  return 0;
}

bool
zn_queue_timed (const struct zn_queue_config *cfg)
{
  return cfg->irqmode == 2 && cfg->completion_nsec > 0;
}

/* ---- time ---------------------------------------------------------------- */

static void
now (struct timespec *ts)
{
  clock_gettime (CLOCK_MONOTONIC, ts);
}

static void
add_nsec (struct timespec *ts, int64_t nsec)
{
  int64_t t = ts->tv_nsec + nsec % NSEC_PER_SEC;

  ts->tv_sec += nsec / NSEC_PER_SEC + t / NSEC_PER_SEC;
  ts->tv_nsec = t % NSEC_PER_SEC;
}

static bool
before (const struct timespec *a, const struct timespec *b)
{
  return a->tv_sec < b->tv_sec
    || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* Linux delays a sleeping thread's wakeup by its timer slack (50 us by
 * default), which would add half the 100 us completion time of the seed
 * experiments (bench/README.md).  The kernel's hrtimer has no such slack,
 * so each sleeping thread asks for 1 ns once.
 */
static void
sleep_until (const struct timespec *deadline)
{
  static _Thread_local bool slack_set;

  if (!slack_set) {
    prctl (PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    slack_set = true;
  }
  while (clock_nanosleep (CLOCK_MONOTONIC, TIMER_ABSTIME, deadline, NULL)
         == EINTR)
    ;
}

/* ---- tag sets ------------------------------------------------------------- */

struct zn_tagset *
zn_tagset_create (const struct zn_queue_config *cfg)
{
  struct zn_tagset *set = calloc (1, sizeof *set);

  if (!set)
    return NULL;
  set->depth = cfg->hw_queue_depth;
  set->nr_pools = cfg->shared_tag_bitmap ? 1 : cfg->submit_queues;
  set->pools = calloc (set->nr_pools, sizeof *set->pools);
  if (!set->pools) {
    free (set);
    return NULL;
  }
  for (uint32_t i = 0; i < set->nr_pools; i++) {
    pthread_mutex_init (&set->pools[i].lock, NULL);
    set->pools[i].free = set->depth;
  }
  return set;
}

void
zn_tagset_destroy (struct zn_tagset *set)
{
  if (!set)
    return;
  for (uint32_t i = 0; i < set->nr_pools; i++) {
    pthread_mutex_destroy (&set->pools[i].lock);
  }
  free (set->pools);
  free (set);
}

/* Takes a tag, waiting in FIFO order.  A request that finds no free tag
 * (or others already waiting) is counted in its queue's and device's
 * "waited" before it sleeps, so the count shows who is waiting now.
 */
static void
pool_get (struct pool *p, struct hwq *q, struct hwq *dev)
{
  struct tag_waiter me = { .granted = false };

  pthread_mutex_lock (&p->lock);
  if (p->head == NULL && p->free > 0) {
    p->free--;
    pthread_mutex_unlock (&p->lock);
    return;
  }
  atomic_fetch_add (&q->waited, 1);
  atomic_fetch_add (&dev->waited, 1);
  pthread_cond_init (&me.cond, NULL);
  if (p->tail)
    p->tail->next = &me;
  else
    p->head = &me;
  p->tail = &me;
  while (!me.granted)
    pthread_cond_wait (&me.cond, &p->lock);
  pthread_mutex_unlock (&p->lock);
  pthread_cond_destroy (&me.cond);
}

/* Hands the tag to the longest waiter, if any. */
static void
pool_put (struct pool *p)
{
  struct tag_waiter *w;

  pthread_mutex_lock (&p->lock);
  w = p->head;
  if (w) {
    p->head = w->next;
    if (p->head == NULL)
      p->tail = NULL;
    w->granted = true;
    pthread_cond_signal (&w->cond);
  }
  else
    p->free++;
  pthread_mutex_unlock (&p->lock);
}

/* ---- one device's queues ----------------------------------------------------- */

struct zn_queues *
zn_queues_create (struct zn_tagset *set, const struct zn_queue_config *cfg)
{
  struct zn_queues *qs = calloc (1, sizeof *qs);

  if (!qs)
    return NULL;
  qs->hwqs = calloc (cfg->submit_queues, sizeof *qs->hwqs);
  if (!qs->hwqs) {
    free (qs);
    return NULL;
  }
  qs->set = set;
  qs->cfg = *cfg;
  pthread_mutex_init (&qs->throttle_lock, NULL);
  /* null_blk: mbps * 2^20 / (1000 ms / 20 ms) bytes per tick. */
  qs->budget = (int64_t) cfg->mbps * (1 << 20) / 50;
  qs->tokens = qs->budget;
  now (&qs->next_tick);
  add_nsec (&qs->next_tick, THROTTLE_TICK_NSEC);
  return qs;
}

void
zn_queues_destroy (struct zn_queues *qs)
{
  if (!qs)
    return;
  pthread_mutex_destroy (&qs->throttle_lock);
  free (qs->hwqs);
  free (qs);
}

unsigned
zn_queues_attach (struct zn_queues *qs)
{
  unsigned k = atomic_fetch_add (&qs->next_conn, 1);
  unsigned queue = k % qs->cfg.submit_queues;

  atomic_fetch_add (&qs->hwqs[queue].connections, 1);
  atomic_fetch_add (&qs->dev.connections, 1);
  return queue;
}

void
zn_queues_detach (struct zn_queues *qs, unsigned queue)
{
  atomic_fetch_sub (&qs->hwqs[queue].connections, 1);
  atomic_fetch_sub (&qs->dev.connections, 1);
}

static struct pool *
pool_of (struct zn_queues *qs, unsigned queue)
{
  return &qs->set->pools[qs->set->nr_pools == 1 ? 0 : queue];
}

static void
note_peak (atomic_uint *peak, unsigned in_use)
{
  unsigned old = atomic_load (peak);

  while (in_use > old && !atomic_compare_exchange_weak (peak, &old, in_use))
    ;
}

static void
count_get (struct hwq *q)
{
  note_peak (&q->peak, atomic_fetch_add (&q->in_use, 1) + 1);
}

static void
count_put (struct hwq *q)
{
  atomic_fetch_sub (&q->in_use, 1);
  atomic_fetch_add (&q->completed, 1);
}

/* Over budget a request is delayed to a later tick, never failed.  Unused
 * budget does not accumulate beyond one tick.  Unlike the kernel, which
 * requeues a request until one tick's budget covers it (forever when it
 * never does), a request passes whenever the bucket is not in debt and
 * its size is paid back from later ticks, so any request size works and
 * the long-run rate is exactly mbps.
 */
/* Adds the budget of the ticks that passed; under throttle_lock. */
static void
refill (struct zn_queues *qs)
{
  struct timespec t;

  now (&t);
  while (!before (&t, &qs->next_tick)) {
    qs->tokens += qs->budget;
    if (qs->tokens > qs->budget)
      qs->tokens = qs->budget;
    add_nsec (&qs->next_tick, THROTTLE_TICK_NSEC);
  }
}

static void
throttle (struct zn_queues *qs, uint64_t bytes)
{
  struct timespec t;

  pthread_mutex_lock (&qs->throttle_lock);
  for (;;) {
    refill (qs);
    if (qs->tokens > 0) {
      qs->tokens -= (int64_t) bytes;
      break;
    }
    t = qs->next_tick;
    pthread_mutex_unlock (&qs->throttle_lock);
    sleep_until (&t);
    pthread_mutex_lock (&qs->throttle_lock);
  }
  pthread_mutex_unlock (&qs->throttle_lock);
}

void
zn_queue_begin (struct zn_queues *qs, unsigned queue, uint64_t bytes,
                struct zn_request *rq)
{
  pool_get (pool_of (qs, queue), &qs->hwqs[queue], &qs->dev);
  now (&rq->tag_time);
  rq->queue = queue;
  count_get (&qs->hwqs[queue]);
  count_get (&qs->dev);
  if (qs->cfg.mbps && bytes)
    throttle (qs, bytes);
}

void
zn_queue_end (struct zn_queues *qs, struct zn_request *rq)
{
  if (zn_queue_timed (&qs->cfg)) {
    struct timespec deadline = rq->tag_time;

    add_nsec (&deadline, (int64_t) qs->cfg.completion_nsec);
    sleep_until (&deadline);
  }
  zn_queue_complete (qs, rq);
}

bool
zn_queue_try_begin (struct zn_queues *qs, unsigned queue, bool first_try,
                    struct zn_request *rq)
{
  struct pool *p = pool_of (qs, queue);
  bool got;

  pthread_mutex_lock (&p->lock);
  got = p->head == NULL && p->free > 0;
  if (got)
    p->free--;
  pthread_mutex_unlock (&p->lock);
  if (!got) {
    if (first_try) {
      atomic_fetch_add (&qs->hwqs[queue].waited, 1);
      atomic_fetch_add (&qs->dev.waited, 1);
    }
    return false;
  }
  now (&rq->tag_time);
  rq->queue = queue;
  count_get (&qs->hwqs[queue]);
  count_get (&qs->dev);
  return true;
}

void
zn_queue_complete (struct zn_queues *qs, struct zn_request *rq)
{
  /* Counted before the tag is free, so in_use never exceeds the depth. */
  count_put (&qs->hwqs[rq->queue]);
  count_put (&qs->dev);
  pool_put (pool_of (qs, rq->queue));
}

uint64_t
zn_queue_throttled_until (struct zn_queues *qs)
{
  uint64_t until = 0;

  if (!qs->cfg.mbps)
    return 0;
  pthread_mutex_lock (&qs->throttle_lock);
  refill (qs);
  if (qs->tokens <= 0)
    until = (uint64_t) qs->next_tick.tv_sec * NSEC_PER_SEC
            + (uint64_t) qs->next_tick.tv_nsec;
  pthread_mutex_unlock (&qs->throttle_lock);
  return until;
}

void
zn_queue_charge (struct zn_queues *qs, uint64_t bytes)
{
  if (!qs->cfg.mbps)
    return;
  pthread_mutex_lock (&qs->throttle_lock);
  qs->tokens -= (int64_t) bytes;
  pthread_mutex_unlock (&qs->throttle_lock);
}

unsigned
zn_queues_pool (const struct zn_queues *qs, unsigned queue)
{
  return qs->set->nr_pools == 1 ? 0 : queue;
}

struct timespec
zn_request_due (const struct zn_queues *qs, const struct zn_request *rq)
{
  struct timespec due = rq->tag_time;

  if (qs->cfg.irqmode == 2)
    add_nsec (&due, (int64_t) qs->cfg.completion_nsec);
  return due;
}

static void
read_hwq (struct hwq *q, struct zn_queue_stats *s)
{
  *s = (struct zn_queue_stats) {
    .in_use = atomic_load (&q->in_use),
    .peak = atomic_load (&q->peak),
    .waited = atomic_load (&q->waited),
    .completed = atomic_load (&q->completed),
    .connections = atomic_load (&q->connections),
  };
}

unsigned
zn_queues_stats (struct zn_queues *qs, struct zn_queue_stats *dev,
                 struct zn_queue_stats *queues, unsigned max)
{
  unsigned n = qs->cfg.submit_queues < max ? qs->cfg.submit_queues : max;

  if (dev)
    read_hwq (&qs->dev, dev);
  for (unsigned i = 0; i < n; i++)
    read_hwq (&qs->hwqs[i], &queues[i]);
  return n;
}
