/* SPDX-License-Identifier: BSD-3-Clause */
/* The queueing model (lib/model/queue.c): null_blk's parameter rules, the
 * connection-to-queue mapping, tag pools (per queue, shared bitmap,
 * shared tag set), FIFO waiting, the counters, and the completion and
 * throttle delays as lower bounds.  Waiting is observed through the
 * "waited" counter, which counts a request when it starts to wait, so no
 * test depends on timing.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "../common/check.h"
#include "model/queue.h"

static struct zn_queue_config
config (uint32_t depth, uint32_t queues, bool shared_bitmap)
{
  struct zn_queue_config cfg;
  char err[128];

  zn_queue_config_init (&cfg);
  cfg.hw_queue_depth = depth;
  cfg.submit_queues = queues;
  cfg.shared_tag_bitmap = shared_bitmap;
  cfg.irqmode = 0;
  CHECK_EQ (zn_queue_config_check (&cfg, err, sizeof err), 0);
  return cfg;
}

static void
test_config (void)
{
  struct zn_queue_config cfg;
  char err[128];

  zn_queue_config_init (&cfg);
  CHECK_EQ (cfg.irqmode, 1);
  CHECK_EQ (cfg.completion_nsec, 10000);
  CHECK_EQ (cfg.hw_queue_depth, 64);
  CHECK_EQ (cfg.submit_queues, 1);
  CHECK (!cfg.shared_tags && !cfg.shared_tag_bitmap && cfg.mbps == 0);

  cfg.irqmode = 3;
  CHECK_EQ (zn_queue_config_check (&cfg, err, sizeof err), -EINVAL);
  CHECK (strstr (err, "irqmode") != NULL);

  zn_queue_config_init (&cfg);
  cfg.hw_queue_depth = 0;
  CHECK_EQ (zn_queue_config_check (&cfg, err, sizeof err), -EINVAL);
  CHECK (strstr (err, "hw_queue_depth") != NULL);

  zn_queue_config_init (&cfg);
  cfg.submit_queues = 0;
  cfg.mbps = 100000;
  CHECK_EQ (zn_queue_config_check (&cfg, err, sizeof err), 0);
  CHECK_EQ (cfg.submit_queues, 1);
  CHECK_EQ (cfg.mbps, ZN_MBPS_MAX);

  cfg.submit_queues = ZN_QUEUE_MAX_QUEUES + 1;
  CHECK_EQ (zn_queue_config_check (&cfg, err, sizeof err), -EINVAL);
  CHECK (strstr (err, "submit_queues") != NULL);

  /* completion_nsec is a signed 64-bit delay (issue 15, D): larger values
   * wrapped negative, completing at once or never.
   */
  zn_queue_config_init (&cfg);
  cfg.irqmode = 2;
  cfg.completion_nsec = UINT64_MAX;
  CHECK_EQ (zn_queue_config_check (&cfg, err, sizeof err), -EINVAL);
  CHECK (strstr (err, "completion_nsec") != NULL);
  cfg.completion_nsec = (uint64_t) INT64_MAX + 1;
  CHECK_EQ (zn_queue_config_check (&cfg, err, sizeof err), -EINVAL);
  CHECK (strstr (err, "completion_nsec") != NULL);
  cfg.irqmode = 1;                  /* refused whatever the irqmode */
  CHECK_EQ (zn_queue_config_check (&cfg, err, sizeof err), -EINVAL);
  cfg.irqmode = 2;
  cfg.completion_nsec = INT64_MAX;
  CHECK_EQ (zn_queue_config_check (&cfg, err, sizeof err), 0);
}

static void
test_attach (void)
{
  struct zn_queue_config cfg = config (4, 3, false);
  struct zn_tagset *set = zn_tagset_create (&cfg);
  struct zn_queues *qs = zn_queues_create (set, &cfg);
  struct zn_queue_stats dev, q[3];
  struct zn_request rq[5];

  CHECK (set && qs);
  /* A pool per queue, of hw_queue_depth tags each. */
  for (unsigned k = 0; k < 3; k++)
    CHECK_EQ (zn_queues_pool (qs, k), k);
  for (unsigned i = 0; i < 4; i++)
    CHECK (zn_queue_try_begin (qs, 2, true, &rq[i]));
  CHECK (!zn_queue_try_begin (qs, 2, true, &rq[4]));
  CHECK (zn_queue_try_begin (qs, 1, true, &rq[4]));
  for (unsigned i = 0; i < 5; i++)
    zn_queue_complete (qs, &rq[i]);
  for (unsigned k = 0; k < 7; k++)
    CHECK_EQ (zn_queues_attach (qs), k % 3);
  CHECK_EQ (zn_queues_stats (qs, &dev, q, 3), 3);
  CHECK_EQ (dev.connections, 7);
  CHECK_EQ (q[0].connections, 3);
  CHECK_EQ (q[1].connections, 2);
  CHECK_EQ (q[2].connections, 2);
  zn_queues_detach (qs, 0);
  zn_queues_stats (qs, &dev, q, 3);
  CHECK_EQ (q[0].connections, 2);
  CHECK_EQ (dev.connections, 6);
  zn_queues_destroy (qs);
  zn_tagset_destroy (set);
}

/* A request run by a thread: begins (perhaps waiting), records the order
 * in which it got its tag, and ends when told to.
 */
struct worker {
  pthread_t thread;
  struct zn_queues *qs;
  unsigned queue;
  struct zn_request rq;
  atomic_int order;              /* 0 until the tag is held */
  atomic_bool release;
};

static atomic_int tag_order;

static void *
worker_run (void *arg)
{
  struct worker *w = arg;

  zn_queue_begin (w->qs, w->queue, 4096, &w->rq);
  atomic_store (&w->order, atomic_fetch_add (&tag_order, 1) + 1);
  while (!atomic_load (&w->release))
    sched_yield ();
  zn_queue_end (w->qs, &w->rq);
  return NULL;
}

static void
start_worker (struct worker *w, struct zn_queues *qs, unsigned queue)
{
  memset (w, 0, sizeof *w);
  w->qs = qs;
  w->queue = queue;
  CHECK_EQ (pthread_create (&w->thread, NULL, worker_run, w), 0);
}

static void
finish_worker (struct worker *w)
{
  atomic_store (&w->release, true);
  CHECK_EQ (pthread_join (w->thread, NULL), 0);
}

static struct zn_queue_stats
queue_stats (struct zn_queues *qs, unsigned queue)
{
  struct zn_queue_stats q[ZN_QUEUE_MAX_QUEUES];

  zn_queues_stats (qs, NULL, q, ZN_QUEUE_MAX_QUEUES);
  return q[queue];
}

static struct zn_queue_stats
device_stats (struct zn_queues *qs)
{
  struct zn_queue_stats dev;

  zn_queues_stats (qs, &dev, NULL, 0);
  return dev;
}

static void
wait_for_waiters (struct zn_queues *qs, uint64_t n)
{
  while (device_stats (qs).waited < n)
    sched_yield ();
}

static void
wait_for_tag (struct worker *w)
{
  while (atomic_load (&w->order) == 0)
    sched_yield ();
}

/* With every tag held, requests wait, never fail, and get tags in the
 * order they started waiting.
 */
static void
test_fifo (void)
{
  struct zn_queue_config cfg = config (2, 1, false);
  struct zn_tagset *set = zn_tagset_create (&cfg);
  struct zn_queues *qs = zn_queues_create (set, &cfg);
  struct worker holders[2], waiters[3];
  struct zn_queue_stats s;

  atomic_store (&tag_order, 0);
  for (int i = 0; i < 2; i++) {
    start_worker (&holders[i], qs, 0);
    wait_for_tag (&holders[i]);
  }
  s = device_stats (qs);
  CHECK_EQ (s.in_use, 2);
  CHECK_EQ (s.waited, 0);

  for (int i = 0; i < 3; i++) {
    start_worker (&waiters[i], qs, 0);
    wait_for_waiters (qs, i + 1);
  }
  CHECK_EQ (device_stats (qs).in_use, 2);
  for (int i = 0; i < 3; i++)
    CHECK_EQ (atomic_load (&waiters[i].order), 0);

  /* Each freed tag goes to the longest waiter. */
  finish_worker (&holders[0]);
  wait_for_tag (&waiters[0]);
  CHECK_EQ (atomic_load (&waiters[0].order), 3);
  CHECK_EQ (atomic_load (&waiters[1].order), 0);
  finish_worker (&holders[1]);
  wait_for_tag (&waiters[1]);
  CHECK_EQ (atomic_load (&waiters[1].order), 4);
  CHECK_EQ (atomic_load (&waiters[2].order), 0);
  finish_worker (&waiters[0]);
  wait_for_tag (&waiters[2]);
  CHECK_EQ (atomic_load (&waiters[2].order), 5);
  finish_worker (&waiters[1]);
  finish_worker (&waiters[2]);

  s = queue_stats (qs, 0);
  CHECK_EQ (s.in_use, 0);
  CHECK_EQ (s.peak, 2);
  CHECK_EQ (s.waited, 3);
  CHECK_EQ (s.completed, 5);
  s = device_stats (qs);
  CHECK_EQ (s.peak, 2);
  CHECK_EQ (s.completed, 5);
  zn_queues_destroy (qs);
  zn_tagset_destroy (set);
}

/* Per-queue pools: a full queue 0 leaves queue 1 free.  Shared bitmap:
 * queue 1 waits for queue 0's tags.
 */
static void
test_pools (bool shared_bitmap)
{
  struct zn_queue_config cfg = config (2, 2, shared_bitmap);
  struct zn_tagset *set = zn_tagset_create (&cfg);
  struct zn_queues *qs = zn_queues_create (set, &cfg);
  struct worker holders[2], other;

  CHECK_EQ (zn_queues_pool (qs, 1), shared_bitmap ? 0 : 1);
  atomic_store (&tag_order, 0);
  for (int i = 0; i < 2; i++) {
    start_worker (&holders[i], qs, 0);
    wait_for_tag (&holders[i]);
  }
  start_worker (&other, qs, 1);
  if (shared_bitmap) {
    wait_for_waiters (qs, 1);
    CHECK_EQ (queue_stats (qs, 1).waited, 1);
    CHECK_EQ (queue_stats (qs, 1).in_use, 0);
    finish_worker (&holders[0]);
    wait_for_tag (&other);
  }
  else {
    wait_for_tag (&other);
    CHECK_EQ (device_stats (qs).waited, 0);
    CHECK_EQ (device_stats (qs).peak, 3);
    finish_worker (&holders[0]);
  }
  finish_worker (&holders[1]);
  finish_worker (&other);
  CHECK_EQ (queue_stats (qs, 0).completed, 2);
  CHECK_EQ (queue_stats (qs, 1).completed, 1);
  zn_queues_destroy (qs);
  zn_tagset_destroy (set);
}

/* shared_tags: two devices on one tag set share queue 0's pool; the
 * counters stay per device.
 */
static void
test_shared_tags (void)
{
  struct zn_queue_config cfg = config (1, 1, false);
  struct zn_tagset *set = zn_tagset_create (&cfg);
  struct zn_queues *a = zn_queues_create (set, &cfg);
  struct zn_queues *b = zn_queues_create (set, &cfg);
  struct worker wa, wb;

  atomic_store (&tag_order, 0);
  start_worker (&wa, a, 0);
  wait_for_tag (&wa);
  start_worker (&wb, b, 0);
  wait_for_waiters (b, 1);
  CHECK_EQ (device_stats (a).waited, 0);
  CHECK_EQ (device_stats (b).in_use, 0);
  finish_worker (&wa);
  wait_for_tag (&wb);
  finish_worker (&wb);
  CHECK_EQ (device_stats (a).completed, 1);
  CHECK_EQ (device_stats (b).completed, 1);
  CHECK_EQ (device_stats (b).waited, 1);
  zn_queues_destroy (a);
  zn_queues_destroy (b);
  zn_tagset_destroy (set);
}

static int64_t
elapsed_nsec (const struct timespec *a, const struct timespec *b)
{
  return (b->tv_sec - a->tv_sec) * 1000000000LL + (b->tv_nsec - a->tv_nsec);
}

/* irqmode=2: a request completes no earlier than completion_nsec after it
 * got its tag; irqmode 0 and 1 do not wait.  Only the lower bound is
 * asserted: how much later is for bench/.
 */
static void
test_completion (void)
{
  struct zn_queue_config cfg = config (4, 1, false);
  struct zn_tagset *set;
  struct zn_queues *qs;
  struct zn_request rq;
  struct timespec end;

  cfg.irqmode = 2;
  cfg.completion_nsec = 3000000;
  set = zn_tagset_create (&cfg);
  qs = zn_queues_create (set, &cfg);
  for (int i = 0; i < 3; i++) {
    zn_queue_begin (qs, 0, 4096, &rq);
    zn_queue_end (qs, &rq);
    clock_gettime (CLOCK_MONOTONIC, &end);
    CHECK (elapsed_nsec (&rq.tag_time, &end) >= 3000000);
  }
  CHECK_EQ (device_stats (qs).completed, 3);
  zn_queues_destroy (qs);
  zn_tagset_destroy (set);
}

/* mbps: 5 MiB at 10 MiB/s cannot pass before the bucket has been refilled
 * for at least 4 MiB minus one tick's budget: about 0.38 s.
 */
static void
test_throttle (void)
{
  struct zn_queue_config cfg = config (4, 1, false);
  struct zn_tagset *set;
  struct zn_queues *qs;
  struct zn_request rq;
  struct timespec start, end;
  const int64_t budget = 10 * (1 << 20) / 50;
  const int64_t ticks = (4 * (1 << 20) - budget) / budget;

  cfg.mbps = 10;
  set = zn_tagset_create (&cfg);
  qs = zn_queues_create (set, &cfg);
  clock_gettime (CLOCK_MONOTONIC, &start);
  for (int i = 0; i < 5; i++) {
    zn_queue_begin (qs, 0, 1 << 20, &rq);
    zn_queue_end (qs, &rq);
  }
  clock_gettime (CLOCK_MONOTONIC, &end);
  /* The first tick may come almost at once. */
  CHECK (elapsed_nsec (&start, &end) >= (ticks - 1) * 20000000);
  /* Zero-length requests cost nothing and are never delayed below. */
  zn_queue_begin (qs, 0, 0, &rq);
  zn_queue_end (qs, &rq);
  zn_queues_destroy (qs);
  zn_tagset_destroy (set);
}

int
main (void)
{
  test_config ();
  test_attach ();
  test_fifo ();
  test_pools (false);
  test_pools (true);
  test_shared_tags ();
  test_completion ();
  test_throttle ();
  printf ("test-queue: all checks passed\n");
  return 0;
}
