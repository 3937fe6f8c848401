/* SPDX-License-Identifier: BSD-3-Clause */
/* zonednull-server's scheduling of requests (see scheduler.h).
 *
 * The tag sets, pools and counters are the plugin's (lib/model/queue.c); what
 * the plugin does by sleeping in a worker thread is done here by holding
 * the reply.  A request takes a tag before it is applied; with irqmode=2
 * its reply is released, and the tag freed, completion_nsec after the tag
 * was taken.  A connection whose next request finds no tag waits in its
 * pool's FIFO and stops reading requests until a tag is freed.
 *
 * The fault settings hold requests back too (model/fault.h): a delayed
 * reply keeps its tag until it is due, a request that timed out keeps
 * its tag until its connection ends, and a requeued one is run again
 * after blk-mq's resource delay, with its tag.
 *
 * A request answered later than it runs holds its writes' entries of the
 * write log until its answer goes (lib/powerfail/wlog.h): the scheduler
 * brackets the run from admission (or resume) to finish, and completes
 * the hold where it frees the tag.
 *
 * Each event loop (--threads) schedules its own connections: what is
 * per loop is thread-local here, and the devices' tags and write
 * pointers are the model's, shared under its locks.  A loop that frees
 * tags or moves write pointers kicks the loops with connections waiting
 * for a tag or writes parked for a write pointer (kick_others).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>

#include <ev.h>

#include "util/clock.h"
#include "model/fault.h"
#include "model/queue.h"
#include "model/zoned.h"
#include "powerfail/wlog.h"
#include "util/fifo.h"
#include "io-pool.h"
#include "scheduler.h"

/* A tag taken. */
struct tag {
  struct served_device *d;
  struct zn_request rq;
  uint64_t start;               /* when it was taken: CLOCK_MONOTONIC ns */
};

/* A tag held by a request that timed out. */
struct stuck {
  struct tag tag;
  struct stuck *next;
};

/* A connection as the scheduler sees it. */
struct sconn {
  struct net_conn *conn;
  const struct sched_session_ops *ops;  /* its session's protocol */
  unsigned held;                /* its requests in the completion ring */
  unsigned delayed;             /* its replies in the delayed list */
  struct tag running;           /* of its latest admission or resume */
  struct stuck *stuck;
  bool waiting;                 /* in wd's pool's FIFO for a tag */
  struct served_device *wd;
  struct sconn *wait_next;
  bool throttled;               /* waiting for the mbps budget */
  struct sconn *throttle_next;
  struct pending *pending;      /* its parked writes */
  unsigned offloaded;           /* its requests on the storage workers */
  bool closed;                  /* its connection is gone: freed with the
                                   last of them */
  bool to_flush;                /* replies came from the workers */
  struct sconn *flush_next;
  struct sconn *next, *prev;
  /* Its hardware queue of each device, from the device's first request
   * (an NVMe/TCP queue carries every namespace's); -1 before.
   */
  int queue[];
};

/* What the server serves, the same for every loop. */
static struct {
  struct served_device *devices;
  unsigned nr_devices;
  bool delayed;                 /* replies wait for complete_one */
} served_, *served = &served_;
static struct zn_queue_config qcfg;
static uint64_t pipeline_wait_ns;

/* ---- the loops -------------------------------------------------------------- */

#define MAX_LOOPS 256

struct shard {
  struct ev_loop *loop;
  ev_async kick;
  /* Its connections waiting for a tag and its parked requests: what
   * another loop's freed tag or applied write may let go on.
   */
  atomic_uint sleepers;
};
static struct shard *shards[MAX_LOOPS];       /* added under shards_lock */
static atomic_uint nr_shards;
static pthread_mutex_t shards_lock = PTHREAD_MUTEX_INITIALIZER;

static _Thread_local struct shard *me;
static _Thread_local struct ev_loop *loop;
static _Thread_local struct sconn *sconns;      /* the loop's connections */
/* A request ran or a tag was freed since the loop last kicked the
 * others.
 */
static _Thread_local bool changed;
/* While a request the storage workers ran is answered: the write log's
 * hold of its run, for sched_finish.
 */
static _Thread_local bool completing;
static _Thread_local struct zn_wlog_hold *completing_hold;

static _Noreturn void
out_of_memory (void)
{
  fputs ("zonednull-server: out of memory\n", stderr);
  abort ();
}

/* ---- tags and timed completion --------------------------------------------
 *
 * completion_nsec is the same for every request, so completions come due
 * in the order tags were taken: one ring, and one timerfd armed for its
 * head (libev's timers have millisecond resolution under epoll, too
 * coarse for 10 us completions).
 */
struct wait_fifo {
  struct sconn *head, *tail;
};
/* tagset t, pool p: waits[t * pools + p] */
static _Thread_local struct wait_fifo *waits;
static unsigned nr_fifos;

struct completion {
  uint64_t due;                 /* CLOCK_MONOTONIC ns */
  struct sconn *c;              /* NULL once the connection closed */
  struct zn_queues *qs;
  struct zn_request rq;
  struct zn_wlog_hold *hold;
};
static _Thread_local struct completion *ring;
static _Thread_local unsigned ring_head, ring_count, ring_cap;
static _Thread_local int timer_fd = -1;
static _Thread_local ev_io timer_watcher;

/* Replies the fault settings delay, by when they are due: each holds
 * its request's tag (qs NULL: a control command's, which took none).
 * Fewer than the tags, plus the control commands a session's output
 * budget lets in, so a sorted list.
 */
struct delayed {
  uint64_t due;
  struct sconn *c;              /* NULL once the connection closed */
  uint64_t id;
  struct zn_queues *qs;
  struct zn_request rq;
  struct zn_wlog_hold *hold;
  struct delayed *next;
};
static _Thread_local struct delayed *delayed_head;

static void
arm_timer (void)
{
  struct itimerspec its = { { 0, 0 }, { 0, 0 } };

  if (ring_count > 0 || delayed_head) {
    uint64_t due = ring_count > 0 ? ring[ring_head].due : UINT64_MAX;

    if (delayed_head && delayed_head->due < due)
      due = delayed_head->due;

    its.it_value.tv_sec = (time_t) (due / 1000000000u);
    its.it_value.tv_nsec = (long) (due % 1000000000u);
    if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
      its.it_value.tv_nsec = 1;
  }
  timerfd_settime (timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* A completion never comes due before the one queued ahead of it: a
 * parked write that waited past its own due time completes at once.
 */
static void
ring_push (struct sconn *c, struct served_device *d,
           const struct zn_request *rq, struct zn_wlog_hold *hold)
{
  uint64_t due = zn_ns_of (zn_request_due (d->qs, rq));

  if (ring_count == ring_cap) {
    unsigned cap = ring_cap ? ring_cap * 2 : 256;
    struct completion *p = malloc (cap * sizeof *p);

    if (p == NULL)
      out_of_memory ();
    for (unsigned i = 0; i < ring_count; i++)
      p[i] = ring[(ring_head + i) % ring_cap];
    free (ring);
    ring = p;
    ring_head = 0;
    ring_cap = cap;
  }
  if (ring_count > 0 && ring[(ring_head + ring_count - 1) % ring_cap].due > due)
    due = ring[(ring_head + ring_count - 1) % ring_cap].due;
  ring[(ring_head + ring_count++) % ring_cap] = (struct completion) {
    .due = due, .c = c, .qs = d->qs, .rq = *rq, .hold = hold,
  };
  c->held++;
  if (ring_count == 1)
    arm_timer ();
}

static void
delayed_add (struct sconn *c, uint64_t id, uint64_t due, const struct tag *t,
             struct zn_wlog_hold *hold)
{
  struct delayed *e = malloc (sizeof *e), **pp;

  if (e == NULL)
    out_of_memory ();
  *e = (struct delayed) { .due = due, .c = c, .id = id, .hold = hold };
  if (t) {
    e->qs = t->d->qs;
    e->rq = t->rq;
  }
  for (pp = &delayed_head; *pp && (*pp)->due <= due; pp = &(*pp)->next)
    ;
  e->next = *pp;
  *pp = e;
  c->delayed++;
  if (delayed_head == e)
    arm_timer ();
}

/* Releases the delayed replies that are due, and their tags. */
static void
delayed_release (uint64_t now)
{
  while (delayed_head && delayed_head->due <= now) {
    struct delayed *e = delayed_head;

    delayed_head = e->next;
    zn_wlog_complete (e->hold);
    if (e->c) {
      e->c->ops->release (net_conn_session (e->c->conn), e->id);
      e->c->delayed--;
    }
    if (e->qs)
      zn_queue_complete (e->qs, &e->rq);
    changed = true;
    free (e);
  }
}

static struct wait_fifo *
fifo_of (const struct sconn *c)
{
  unsigned pools = qcfg.shared_tag_bitmap ? 1 : qcfg.submit_queues;
  unsigned set = qcfg.shared_tags ? 0 : (unsigned) (c->wd - served->devices);

  return &waits[set * pools + zn_queues_pool (c->wd->qs,
                                              c->queue[c->wd - served->devices])];
}

static void
wait_add (struct sconn *c, struct served_device *d)
{
  struct wait_fifo *w;

  c->wd = d;
  w = fifo_of (c);
  c->waiting = true;
  ZN_FIFO_PUSH (w->head, w->tail, c, wait_next);
  atomic_fetch_add (&me->sleepers, 1);
}

static void
wait_remove (struct sconn *c)
{
  struct wait_fifo *w;

  if (!c->waiting)
    return;
  w = fifo_of (c);
  ZN_FIFO_REMOVE (struct sconn, w->head, w->tail, c, wait_next);
  c->waiting = false;
  atomic_fetch_sub (&me->sleepers, 1);
}

/* ---- the mbps budget -------------------------------------------------------
 *
 * Connections over their device's budget retry at its next tick (null_blk's
 * 20 ms ticks: libev's timer resolution is enough).
 */
static _Thread_local struct sconn *throttled;
static _Thread_local ev_timer throttle_timer;
static _Thread_local uint64_t throttle_due;     /* when it fires, ns */

static void
throttle_add (struct sconn *c, uint64_t until)
{
  uint64_t now = zn_now_ns ();

  c->throttled = true;
  c->throttle_next = throttled;
  throttled = c;
  if (ev_is_active (&throttle_timer) && throttle_due <= until)
    return;
  ev_timer_stop (loop, &throttle_timer);
  ev_timer_set (&throttle_timer, until > now ? (double) (until - now) / 1e9 : 0.,
                0.);
  ev_timer_start (loop, &throttle_timer);
  throttle_due = until;
}

static void
throttle_remove (struct sconn *c)
{
  struct sconn **pp;

  if (!c->throttled)
    return;
  for (pp = &throttled; *pp != c; pp = &(*pp)->throttle_next)
    ;
  *pp = c->throttle_next;
  c->throttled = false;
}

/* Whether d's requests may be answered later than they run. */
static bool
completes_later (const struct served_device *d)
{
  return served->delayed || zn_fault_armed (d->dev);
}

/* ---- parked writes ---------------------------------------------------------
 *
 * pipeline_zoned_writes: a write ahead of its zone's write pointer is
 * parked, holding its tag, while its connection goes on with the requests
 * behind it (NBD replies may come in any order); it is applied once the
 * write pointer reaches it, or failed when the wait fails or exceeds
 * pipeline_wait_ms.  On a backing_dir device a storage thread holds a
 * zone's lock while it writes the zone, through the fdatasync of a FUA
 * write: a write whose zone is held so is parked too, undecided, and
 * looks again after the next event or blk-mq's resource delay, never
 * waiting for the disk on the loop.
 */
enum parked_as {
  PARKED_WAITING,               /* for the write pointer, until deadline */
  PARKED_REQUEUED,              /* run again at deadline, no wait */
  PARKED_UNDECIDED,             /* its zone held by a storage thread */
};
struct pending {
  uint64_t id;                  /* the session's */
  enum parked_as as;
  uint64_t sector, nr_sectors;  /* the write, undecided */
  struct zn_pipeline_wait wait;
  uint64_t deadline;            /* CLOCK_MONOTONIC ns */
  uint64_t due;                 /* when the timer looks again */
  struct tag tag;
  struct pending *next;
};
static _Thread_local unsigned nr_pending;
static _Thread_local ev_timer pipeline_timer;

/* blk-mq's delay before it asks a driver again for a request the driver
 * had no resources for (BLK_MQ_RESOURCE_DELAY).
 */
#define REQUEUE_DELAY_NS 3000000

static struct pending *
pending_add (struct sconn *c, uint64_t id, enum parked_as as,
             const struct zn_pipeline_wait *w, const struct tag *t)
{
  struct pending *p = malloc (sizeof *p);
  uint64_t now = zn_now_ns ();

  if (p == NULL)
    out_of_memory ();
  *p = (struct pending) {
    .id = id, .as = as, .tag = *t, .next = c->pending,
    .deadline = as == PARKED_REQUEUED ? now + REQUEUE_DELAY_NS
                                      : t->start + pipeline_wait_ns,
  };
  p->due = as == PARKED_UNDECIDED ? now + REQUEUE_DELAY_NS : p->deadline;
  if (w)
    p->wait = *w;
  c->pending = p;
  nr_pending++;
  atomic_fetch_add (&me->sleepers, 1);
  return p;
}

/* What came of parked write p by now: ZN_PIPELINE_WAIT while it must
 * wait on, else the error it is run with (0: applied).
 */
static int
pending_outcome (struct pending *p, uint64_t now)
{
  const struct served_device *d = p->tag.d;
  int err;

  if (p->as == PARKED_REQUEUED)
    return now < p->deadline ? ZN_PIPELINE_WAIT : 0;
  if (p->as == PARKED_UNDECIDED) {
    err = zn_pipeline_begin (d->dev, p->sector, p->nr_sectors, d->offload,
                             &p->wait);
    if (err == -EAGAIN) {
      p->due = now + REQUEUE_DELAY_NS;
      return ZN_PIPELINE_WAIT;
    }
    if (err != ZN_PIPELINE_WAIT)
      return err;
    p->as = PARKED_WAITING;
  }
  p->due = p->deadline;
  err = zn_pipeline_poll (d->dev, &p->wait, d->offload);
  if (err == -EAGAIN) {
    /* Past its bound it must still be judged once under the lock. */
    p->due = now < p->deadline ? p->deadline : now + REQUEUE_DELAY_NS;
    return ZN_PIPELINE_WAIT;
  }
  if (err == ZN_PIPELINE_WAIT && now >= p->deadline)
    err = -ETIMEDOUT;
  if (err != ZN_PIPELINE_WAIT)
    zn_pipeline_end (d->dev, &p->wait, err);
  return err;
}

/* Applies or fails c's parked writes whose wait is over; true when any
 * was.
 */
static bool
pipeline_resume (struct sconn *c, uint64_t now)
{
  void *s = net_conn_session (c->conn);
  bool resumed = false;

  for (struct pending **pp = &c->pending; *pp; ) {
    struct pending *p = *pp;
    int err = pending_outcome (p, now);

    if (err == ZN_PIPELINE_WAIT) {
      pp = &p->next;
      continue;
    }
    *pp = p->next;
    nr_pending--;
    atomic_fetch_sub (&me->sleepers, 1);
    /* The session tells sched_finish what came of it, which may park
     * it again (at the head of c->pending, due later).
     */
    c->running = p->tag;
    if (completes_later (p->tag.d))
      zn_wlog_defer ();
    c->ops->resume (s, p->id, err);
    /* finish took the hold, unless the session had no such request. */
    zn_wlog_complete (zn_wlog_deferred ());
    free (p);
    resumed = true;
  }
  return resumed;
}

/* After an event on this loop that ran requests or freed tags: the
 * other loops' connections waiting for a tag, and their writes parked
 * for a write pointer, try again.  A loop counts its sleepers before it
 * tries once more itself, and this one looks at the count after its
 * change, so one of the two sees the other's.
 */
static void
kick_others (void)
{
  unsigned n = atomic_load (&nr_shards);

  if (!changed)
    return;
  changed = false;
  for (unsigned i = 0; i < n; i++)
    if (shards[i] != me && atomic_load (&shards[i]->sleepers) > 0)
      ev_async_send (shards[i]->loop, &shards[i]->kick);
}

/* Applies or fails the parked writes whose wait is over; each applied
 * write can end the wait of others, so until nothing changes.  Then the
 * timer is armed for the earliest deadline left.  Called after every
 * event, so with nothing parked it returns at once (a timer armed for a
 * write that has gone since only fires once, to no effect).
 */
static void
pipeline_retry (void)
{
  uint64_t first = UINT64_MAX;
  bool progress = true;

  kick_others ();
  if (nr_pending == 0)
    return;
  while (progress) {
    uint64_t now = zn_now_ns ();

    progress = false;
    for (struct sconn *c = sconns, *next; c; c = next) {
      next = c->next;
      if (pipeline_resume (c, now)) {
        progress = true;
        net_conn_flush (c->conn);
      }
    }
  }
  kick_others ();
  for (struct sconn *c = sconns; c && nr_pending > 0; c = c->next)
    for (struct pending *p = c->pending; p; p = p->next)
      if (p->due < first)
        first = p->due;
  ev_timer_stop (loop, &pipeline_timer);
  if (first != UINT64_MAX) {
    uint64_t now = zn_now_ns ();

    ev_timer_set (&pipeline_timer,
                  first > now ? (double) (first - now) / 1e9 : 0., 0.);
    ev_timer_start (loop, &pipeline_timer);
  }
}

/* ---- admission -------------------------------------------------------------- */

/* A connection feeds one hardware queue of a device from its first
 * request to it.
 */
static unsigned
attach (struct sconn *c, const struct served_device *d)
{
  int *q = &c->queue[d - served->devices];

  if (*q < 0)
    *q = (int) zn_queues_attach (d->qs);
  return (unsigned) *q;
}

/* The next data request of the connection may start once the mbps budget
 * allows and it gets a tag; a pipelined write ahead of its write pointer
 * is then parked.
 */
struct admission
sched_admit (void *owner, void *s, const struct data_request *drq)
{
  struct sconn *c = net_conn_sched (owner);
  struct served_device *d = &served->devices[drq->dev - served->devices];
  unsigned queue = attach (c, d);
  struct tag t = { .d = d };
  struct zn_pipeline_wait w;
  uint64_t until;
  int v = 0;
  const struct admission later = { ADMIT_LATER, 0 };

  (void) s;
  if (c->throttled)
    return later;
  if (drq->bytes && (until = zn_queue_throttled_until (d->qs)) != 0) {
    throttle_add (c, until);
    return later;
  }
  if (c->waiting && c->wd != d)
    wait_remove (c);
  if (!zn_queue_try_begin (d->qs, queue, !c->waiting, &t.rq)) {
    if (c->waiting)
      return later;
    /* Counted as waiting first: a tag another loop frees from now on
     * kicks this one, and one freed before is found here.
     */
    wait_add (c, d);
    if (!zn_queue_try_begin (d->qs, queue, false, &t.rq))
      return later;
  }
  wait_remove (c);
  zn_queue_charge (d->qs, drq->bytes);
  if (drq->write)
    v = zn_pipeline_begin (d->dev, drq->offset >> ZN_SECTOR_SHIFT,
                           drq->count >> ZN_SECTOR_SHIFT, d->offload, &w);
  t.start = zn_now_ns ();
  if (v == ZN_PIPELINE_WAIT) {
    pending_add (c, drq->id, PARKED_WAITING, &w, &t);
    return (struct admission) { ADMIT_PARK, 0 };
  }
  if (v == -EAGAIN) {
    struct pending *p = pending_add (c, drq->id, PARKED_UNDECIDED, NULL, &t);

    p->sector = drq->offset >> ZN_SECTOR_SHIFT;
    p->nr_sectors = drq->count >> ZN_SECTOR_SHIFT;
    return (struct admission) { ADMIT_PARK, 0 };
  }
  c->running = t;
  if (completes_later (d))
    zn_wlog_defer ();
  return (struct admission) { ADMIT_NOW, v };
}

/* What the session ran (the tag of c->running, if tagged) came to. */
enum reply_hold
sched_finish (void *owner, uint64_t id, bool tagged,
              enum finish_outcome outcome, uint64_t delay_ns)
{
  struct sconn *c = net_conn_sched (owner);
  struct tag *t = &c->running;
  struct zn_wlog_hold *hold;
  uint64_t due;

  /* A control command's own write (an APPEND) is the session's to hold. */
  if (!tagged) {
    if (outcome != FINISH_ANSWERED || delay_ns == 0)
      return REPLY_NOW;
    delayed_add (c, id, zn_now_ns () + delay_ns, NULL, NULL);
    return REPLY_DELAYED;
  }
  changed = true;
  hold = completing ? completing_hold : zn_wlog_deferred ();
  /* A request timed out or requeued did not run. */
  if (outcome != FINISH_ANSWERED)
    zn_wlog_complete (hold);
  switch (outcome) {
  case FINISH_TIMED_OUT: {
    struct stuck *st = malloc (sizeof *st);

    if (st == NULL)
      out_of_memory ();
    *st = (struct stuck) { .tag = *t, .next = c->stuck };
    c->stuck = st;
    return REPLY_NOW;
  }
  case FINISH_REQUEUED:
    pending_add (c, id, PARKED_REQUEUED, NULL, t);
    return REPLY_NOW;
  default:
    break;
  }
  if (delay_ns) {
    due = t->start + delay_ns;
    if (served->delayed && zn_ns_of (zn_request_due (t->d->qs, &t->rq)) > due)
      due = zn_ns_of (zn_request_due (t->d->qs, &t->rq));
    delayed_add (c, id, due, t, hold);
    return REPLY_DELAYED;
  }
  if (served->delayed) {
    ring_push (c, t->d, &t->rq, hold);
    return REPLY_HELD;
  }
  zn_wlog_complete (hold);
  zn_queue_complete (t->d->qs, &t->rq);
  return REPLY_NOW;
}

/* ---- storage off the loop ------------------------------------------------------
 *
 * A request of a device with backing_dir runs on the storage workers
 * (io-pool.h) and keeps its tag until it is answered back on the loop.
 * Its run on a worker is bracketed there for the write log: it is
 * answered later than it runs, whatever the fault settings say.
 */
struct offload {
  struct io_work work;
  struct served_job *job;
  struct sconn *c;
  struct tag tag;
  struct zn_wlog_hold *hold;
  struct offload *batch_next;   /* the flushes run with it, or waiting */
};

/* A device's flushes on this loop: one on the workers at a time, with
 * those it answers for, and those that came since it was handed over,
 * which the next run answers for.  Each flush took a storage thread of
 * its own before, to wait in lib/storage for the same syncs as the
 * others; now a burst of flushes costs one hand-off there and back.
 */
struct flush_queue {
  struct offload *running;
  struct offload *head, *tail;
};

static bool pool_started;
static _Thread_local struct io_sink *sink;
static _Thread_local struct sconn *to_flush;
static _Thread_local struct flush_queue *flushes;       /* per device */
/* The loop is stopping: a flush queued behind another runs here. */
static _Thread_local bool sink_stopping;

static void
offload_run (struct io_work *w)
{
  struct offload *o = (struct offload *) w;

  /* A request that took no tag is not bracketed on the loop either: a
   * control APPEND holds its own entry when it is answered later.
   */
  if (o->job->untagged) {
    o->job->run (o->job);
    return;
  }
  zn_wlog_defer ();
  o->job->run (o->job);
  o->hold = zn_wlog_deferred ();
}

bool
sched_offload (void *owner, struct served_job *job)
{
  struct sconn *c = net_conn_sched (owner);
  const struct served_device *d = job->dev;
  struct offload *o;

  /* What waits for no disk runs here, unless it must follow work of its
   * zone still on the workers.
   */
  if (job->try_run && !(job->key && io_pool_busy (job->key))
      && job->try_run (job)) {
    job->done (net_conn_session (c->conn), job);
    return true;
  }
  o = malloc (sizeof *o);
  if (o == NULL)
    return false;
  *o = (struct offload) {
    .work = { .run = offload_run, .key = job->key },
    .job = job, .c = c,
  };
  /* The bracket admission opened on the loop held nothing: the request
   * runs on the worker.
   */
  if (!job->untagged) {
    o->tag = c->running;
    if (completes_later (d))
      zn_wlog_complete (zn_wlog_deferred ());
  }
  c->offloaded++;
  if (job->share) {
    struct flush_queue *q = &flushes[d - served->devices];

    if (q->running) {
      ZN_FIFO_PUSH (q->head, q->tail, o, batch_next);
      return true;
    }
    q->running = o;
  }
  io_pool_submit (sink, &o->work);
  return true;
}

static void wake_waiters (void);

/* A worker ran o: its session answers it, or, its connection gone, its
 * tag and write-log hold are freed.  The replies go out, one send per
 * connection, once the batch is answered (sched_offload_flush).
 */
static void
offload_answer (struct offload *o)
{
  struct sconn *c = o->c;

  c->offloaded--;
  changed = true;
  if (c->closed) {
    zn_wlog_complete (o->hold);
    if (!o->job->untagged)
      zn_queue_complete (o->tag.d->qs, &o->tag.rq);
    o->job->done (NULL, o->job);
    if (c->offloaded == 0)
      free (c);
  }
  else {
    if (!o->job->untagged)
      c->running = o->tag;
    completing = true;
    completing_hold = o->hold;
    o->job->done (net_conn_session (c->conn), o->job);
    completing = false;
    if (!c->to_flush) {
      c->to_flush = true;
      c->flush_next = to_flush;
      to_flush = c;
    }
  }
  free (o);
}

/* The flush o ran: it and those it ran for are answered, and the
 * flushes that came meanwhile go to the workers as one.
 */
static void
flush_complete (struct offload *o)
{
  struct flush_queue *q = &flushes[o->job->dev - served->devices];

  while (o) {
    struct offload *next = q->head;

    q->head = q->tail = NULL;
    for (struct offload *f = o->batch_next; f; f = f->batch_next)
      f->job->share (f->job, o->job);
    while (o) {
      struct offload *f = o->batch_next;

      offload_answer (o);
      o = f;
    }
    q->running = next;
    if (next && !sink_stopping) {
      io_pool_submit (sink, &next->work);
      break;
    }
    if (next)
      offload_run (&next->work);
    o = next;
  }
}

static void
offload_complete (struct io_work *w)
{
  struct offload *o = (struct offload *) w;

  if (o->job->share)
    flush_complete (o);
  else
    offload_answer (o);
}

/* After a batch of completions from the workers. */
static void
offload_batch_end (void)
{
  while (to_flush) {
    struct sconn *c = to_flush;

    to_flush = c->flush_next;
    c->to_flush = false;
    net_conn_flush (c->conn);
  }
  wake_waiters ();
  pipeline_retry ();
}

/* ---- events ------------------------------------------------------------------ */

/* Completions that came due release their replies and tags; then the
 * connections waiting for tags go on, longest waiter first.
 */
static void
timer_cb (struct ev_loop *l, ev_io *w, int revents)
{
  uint64_t expirations, now;
  struct sconn *c;

  (void) l;
  (void) revents;
  if (read (w->fd, &expirations, sizeof expirations) < 0 && errno != EAGAIN)
    return;
  now = zn_now_ns ();
  while (ring_count > 0 && ring[ring_head].due <= now) {
    struct completion e = ring[ring_head];

    ring_head = (ring_head + 1) % ring_cap;
    ring_count--;
    zn_wlog_complete (e.hold);
    if (e.c) {
      e.c->ops->complete_one (net_conn_session (e.c->conn));
      e.c->held--;
    }
    zn_queue_complete (e.qs, &e.rq);
    changed = true;
  }
  delayed_release (now);
  /* One send per connection for all its completed replies. */
  for (c = sconns; c; ) {
    struct sconn *next = c->next;

    if (c->ops->ready (net_conn_session (c->conn)) > 0)
      net_conn_flush (c->conn);
    c = next;
  }
  wake_waiters ();
  arm_timer ();
  pipeline_retry ();
}

/* Tags were freed: the connections waiting for one go on, longest
 * waiter first.
 */
static void
wake_waiters (void)
{
  struct sconn *c;

  for (unsigned i = 0; i < nr_fifos; i++)
    while ((c = waits[i].head) != NULL) {
      net_conn_take_input (c->conn);
      net_conn_flush (c->conn);
      if (waits[i].head == c)
        break;                  /* still no tag for it */
    }
}

/* Another loop freed tags or moved write pointers. */
static void
kick_cb (struct ev_loop *l, ev_async *w, int revents)
{
  (void) l;
  (void) w;
  (void) revents;
  wake_waiters ();
  pipeline_retry ();
}

static void
pipeline_cb (struct ev_loop *l, ev_timer *w, int revents)
{
  (void) l;
  (void) w;
  (void) revents;
  pipeline_retry ();
}

/* A tick of the mbps budget: the throttled connections try again. */
static void
throttle_cb (struct ev_loop *l, ev_timer *w, int revents)
{
  struct sconn *c = throttled, *next;

  (void) l;
  (void) w;
  (void) revents;
  throttled = NULL;
  for (; c; c = next) {
    next = c->throttle_next;
    c->throttled = false;
    net_conn_take_input (c->conn);
    net_conn_flush (c->conn);
  }
  pipeline_retry ();
}

/* ---- the connection layer's hooks -------------------------------------------- */

static void *
sconn_open (void *arg, struct net_conn *conn)
{
  struct sconn *c = calloc (1, sizeof *c
                            + served->nr_devices * sizeof c->queue[0]);

  if (c == NULL)
    return NULL;
  c->conn = conn;
  c->ops = arg;
  for (unsigned i = 0; i < served->nr_devices; i++)
    c->queue[i] = -1;
  c->next = sconns;
  if (sconns)
    sconns->prev = c;
  sconns = c;
  return c;
}

static void
sconn_close (void *st)
{
  struct sconn *c = st;

  if (c->prev)
    c->prev->next = c->next;
  else
    sconns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  /* Its requests stay in flight, holding their tags, until they are due,
   * as a request of a vanished submitter would in the kernel.
   */
  for (unsigned i = 0; c->held > 0 && i < ring_count; i++) {
    struct completion *e = &ring[(ring_head + i) % ring_cap];

    if (e->c == c) {
      e->c = NULL;
      c->held--;
    }
  }
  for (struct delayed *e = delayed_head; c->delayed > 0 && e; e = e->next)
    if (e->c == c) {
      e->c = NULL;
      c->delayed--;
    }
  /* The host that would have timed them out is gone. */
  while (c->stuck) {
    struct stuck *st = c->stuck;

    c->stuck = st->next;
    zn_queue_complete (st->tag.d->qs, &st->tag.rq);
    free (st);
    changed = true;
  }
  wait_remove (c);
  throttle_remove (c);
  /* Its parked requests will never be answered; their tags are free. */
  while (c->pending) {
    struct pending *p = c->pending;

    c->pending = p->next;
    if (p->as == PARKED_WAITING)
      zn_pipeline_end (p->tag.d->dev, &p->wait, -EIO);
    zn_queue_complete (p->tag.d->qs, &p->tag.rq);
    free (p);
    nr_pending--;
    atomic_fetch_sub (&me->sleepers, 1);
    changed = true;
  }
  for (unsigned i = 0; i < served->nr_devices; i++)
    if (c->queue[i] >= 0)
      zn_queues_detach (served->devices[i].qs, (unsigned) c->queue[i]);
  /* Its requests on the workers free it with the last of them. */
  c->conn = NULL;
  c->closed = true;
  if (c->offloaded == 0)
    free (c);
}

static void
sconn_input (void *st)
{
  struct sconn *c = st;
  const struct served_device *d;

  if (c->ops->device && (d = c->ops->device (net_conn_session (c->conn))))
    attach (c, d);
}

static bool
sconn_waiting (const void *st)
{
  const struct sconn *c = st;

  return c->waiting || c->throttled;
}

static void
sconn_stop_waiting (void *st)
{
  wait_remove (st);
  throttle_remove (st);
}

/* Parked requests, held or delayed replies, or, once the session
 * serves requests, received requests that wait for a tag, the mbps
 * budget or room for their replies.  Not the requests that timed out:
 * they are never answered.
 */
static bool
sconn_in_flight (const void *st, bool input_left)
{
  const struct sconn *c = st;

  return c->pending || c->held > 0 || c->delayed > 0 || c->offloaded > 0
    || (input_left && c->ops->serving (net_conn_session (c->conn)));
}

static void
after_event (void *arg)
{
  (void) arg;
  pipeline_retry ();
}

struct net_sched
sched_hooks (const struct sched_session_ops *ops)
{
  return (struct net_sched) {
    .open = sconn_open, .close = sconn_close, .input = sconn_input,
    .waiting = sconn_waiting,
    .stop_waiting = sconn_stop_waiting, .in_flight = sconn_in_flight,
    .after_event = after_event, .arg = (void *) ops,
  };
}

int
sched_init (struct served_device *devices, unsigned nr_devices, bool delayed,
            const struct zn_queue_config *q, uint64_t wait_ns,
            unsigned io_threads)
{
  unsigned nr_tagsets = q->shared_tags ? 1 : nr_devices;

  served_.devices = devices;
  served_.nr_devices = nr_devices;
  served_.delayed = delayed;
  qcfg = *q;
  pipeline_wait_ns = wait_ns;
  nr_fifos = nr_tagsets * (qcfg.shared_tag_bitmap ? 1 : qcfg.submit_queues);
  if (io_threads > 0) {
    if (io_pool_start (io_threads) == -1)
      return -1;
    pool_started = true;
    for (unsigned i = 0; i < nr_devices; i++)
      devices[i].offload = zn_dev_backing_dir (devices[i].dev) != NULL;
  }
  return 0;
}

int
sched_loop_start (struct ev_loop *l)
{
  unsigned n;

  if ((me = calloc (1, sizeof *me)) == NULL
      || (waits = calloc (nr_fifos, sizeof *waits)) == NULL) {
    fputs ("zonednull-server: out of memory\n", stderr);
    return -1;
  }
  loop = l;
  me->loop = l;
  /* The default 50 us of timer slack would be half a typical
   * completion_nsec; it is each thread's own.
   */
  if (served->delayed)
    prctl (PR_SET_TIMERSLACK, 1UL);
  timer_fd = timerfd_create (CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (timer_fd == -1) {
    fprintf (stderr, "zonednull-server: timerfd_create: %s\n",
             strerror (errno));
    return -1;
  }
  ev_io_init (&timer_watcher, timer_cb, timer_fd, EV_READ);
  ev_io_start (loop, &timer_watcher);
  ev_init (&throttle_timer, throttle_cb);
  ev_init (&pipeline_timer, pipeline_cb);
  ev_async_init (&me->kick, kick_cb);
  ev_async_start (loop, &me->kick);
  if (pool_started
      && ((flushes = calloc (served->nr_devices, sizeof *flushes)) == NULL
          || (sink = io_pool_sink (loop, offload_complete,
                                   offload_batch_end)) == NULL)) {
    fputs ("zonednull-server: out of memory\n", stderr);
    return -1;
  }
  /* Published last: another loop may kick this one from now on. */
  pthread_mutex_lock (&shards_lock);
  n = atomic_load (&nr_shards);
  if (n < MAX_LOOPS) {
    shards[n] = me;
    atomic_store (&nr_shards, n + 1);
  }
  pthread_mutex_unlock (&shards_lock);
  if (n == MAX_LOOPS) {
    fputs ("zonednull-server: too many loops\n", stderr);
    return -1;
  }
  return 0;
}

void
sched_loop_stop (void)
{
  /* The loop's connections are closed: what the workers still run for
   * them is answered to no one, and its writes go in the write log
   * before the devices stop.
   */
  sink_stopping = true;
  io_pool_sink_stop (sink);
  sink = NULL;
  free (flushes);
  flushes = NULL;
  if (timer_fd != -1) {
    ev_io_stop (loop, &timer_watcher);
    ev_timer_stop (loop, &throttle_timer);
    ev_timer_stop (loop, &pipeline_timer);
    close (timer_fd);
    timer_fd = -1;
  }
  if (me)
    ev_async_stop (loop, &me->kick);
  free (waits);
  waits = NULL;
  /* The devices stop next: the writes of replies never sent go in the
   * write log before their stop's flush.
   */
  for (unsigned i = 0; i < ring_count; i++)
    zn_wlog_complete (ring[(ring_head + i) % ring_cap].hold);
  ring_count = 0;
  free (ring);
  ring = NULL;
  while (delayed_head) {
    struct delayed *e = delayed_head;

    delayed_head = e->next;
    zn_wlog_complete (e->hold);
    free (e);
  }
}

void
sched_stop (void)
{
  unsigned n = atomic_load (&nr_shards);

  /* Every loop stopped. */
  if (pool_started) {
    io_pool_stop ();
    pool_started = false;
  }
  for (unsigned i = 0; i < n; i++) {
    free (shards[i]);
    shards[i] = NULL;
  }
  atomic_store (&nr_shards, 0);
}
