/* SPDX-License-Identifier: BSD-3-Clause */
/* zonednull-server's storage workers (see io-pool.h).
 *
 * One lock guards the queues: a worker holds it twice per work, which
 * is little beside the system calls the work makes.  A loop learns of
 * its finished work through its sink's ev_async, so a burst of
 * completions costs it one wake-up.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/fifo.h"
#include "util/mix.h"
#include "io-pool.h"

/* The keys in flight (run or queued), each once, with its queue behind
 * it through ->after.  At most the number of tags are in flight.
 */
#define BUCKETS 256

struct io_sink {
  struct ev_loop *loop;
  ev_async wake;
  struct io_work *done_head, *done_tail;        /* under pool.lock */
  unsigned in_flight;                           /* under pool.lock */
  void (*complete) (struct io_work *w);
  void (*batch_end) (void);
};

static struct {
  pthread_mutex_t lock;
  pthread_cond_t work;
  pthread_cond_t ran;           /* a sink being stopped lost a work */
  struct io_work *ready_head, *ready_tail;
  struct io_work *keys[BUCKETS];
  bool stopping;
  pthread_t *threads;
  unsigned nr_threads;
} pool = {
  .lock = PTHREAD_MUTEX_INITIALIZER, .work = PTHREAD_COND_INITIALIZER,
  .ran = PTHREAD_COND_INITIALIZER,
};

static struct io_work **
bucket (uint64_t key)
{
  return &pool.keys[zn_mix (key) % BUCKETS];
}

/* The work of key in flight that runs first; NULL when none is. */
static struct io_work *
key_head (uint64_t key)
{
  for (struct io_work *w = *bucket (key); w; w = w->bucket_next)
    if (w->key == key)
      return w;
  return NULL;
}

/* w of its key ran: the next of the key, if any, takes its place. */
static void
key_done (struct io_work *w)
{
  struct io_work **pp = bucket (w->key);

  while (*pp != w)
    pp = &(*pp)->bucket_next;
  if (w->after) {
    w->after->bucket_next = w->bucket_next;
    *pp = w->after;
    ZN_FIFO_PUSH (pool.ready_head, pool.ready_tail, w->after, next);
  }
  else
    *pp = w->bucket_next;
}

static void *
worker (void *arg)
{
  (void) arg;
  pthread_mutex_lock (&pool.lock);
  for (;;) {
    struct io_work *w;

    while (pool.ready_head == NULL && !pool.stopping)
      pthread_cond_wait (&pool.work, &pool.lock);
    if (pool.ready_head == NULL)
      break;
    ZN_FIFO_POP (pool.ready_head, pool.ready_tail, w, next);
    pthread_mutex_unlock (&pool.lock);
    w->run (w);
    pthread_mutex_lock (&pool.lock);
    if (w->key) {
      key_done (w);
      if (pool.ready_head)
        pthread_cond_signal (&pool.work);
    }
    ZN_FIFO_PUSH (w->sink->done_head, w->sink->done_tail, w, next);
    if (--w->sink->in_flight == 0)
      pthread_cond_broadcast (&pool.ran);
    ev_async_send (w->sink->loop, &w->sink->wake);
  }
  pthread_mutex_unlock (&pool.lock);
  return NULL;
}

/* Completes the sink's work done so far, in the order it ended. */
static void
drain (struct io_sink *sink)
{
  struct io_work *w;

  pthread_mutex_lock (&pool.lock);
  w = sink->done_head;
  sink->done_head = sink->done_tail = NULL;
  pthread_mutex_unlock (&pool.lock);
  while (w) {
    struct io_work *next = w->next;

    sink->complete (w);
    w = next;
  }
  sink->batch_end ();
}

static void
wake_cb (struct ev_loop *loop, ev_async *a, int revents)
{
  (void) loop;
  (void) revents;
  drain (a->data);
}

struct io_sink *
io_pool_sink (struct ev_loop *loop, void (*complete) (struct io_work *w),
              void (*batch_end) (void))
{
  struct io_sink *sink = calloc (1, sizeof *sink);

  if (sink == NULL)
    return NULL;
  sink->loop = loop;
  sink->complete = complete;
  sink->batch_end = batch_end;
  ev_async_init (&sink->wake, wake_cb);
  sink->wake.data = sink;
  ev_async_start (loop, &sink->wake);
  return sink;
}

void
io_pool_sink_stop (struct io_sink *sink)
{
  if (sink == NULL)
    return;
  pthread_mutex_lock (&pool.lock);
  while (sink->in_flight > 0)
    pthread_cond_wait (&pool.ran, &pool.lock);
  pthread_mutex_unlock (&pool.lock);
  ev_async_stop (sink->loop, &sink->wake);
  drain (sink);
  free (sink);
}

int
io_pool_start (unsigned workers)
{
  pool.threads = calloc (workers, sizeof *pool.threads);
  if (pool.threads == NULL) {
    fputs ("zonednull-server: out of memory\n", stderr);
    return -1;
  }
  pool.stopping = false;
  for (unsigned i = 0; i < workers; i++) {
    int err = pthread_create (&pool.threads[i], NULL, worker, NULL);

    if (err) {
      fprintf (stderr, "zonednull-server: starting storage worker %u: %s\n",
               i, strerror (err));
      pool.nr_threads = i;
      io_pool_stop ();
      return -1;
    }
  }
  pool.nr_threads = workers;
  return 0;
}

void
io_pool_submit (struct io_sink *sink, struct io_work *w)
{
  struct io_work *head;

  w->after = NULL;
  w->bucket_next = NULL;
  w->sink = sink;
  pthread_mutex_lock (&pool.lock);
  sink->in_flight++;
  if (w->key == 0)
    ZN_FIFO_PUSH (pool.ready_head, pool.ready_tail, w, next);
  else if ((head = key_head (w->key)) != NULL) {
    while (head->after)
      head = head->after;
    head->after = w;
  }
  else {
    struct io_work **b = bucket (w->key);

    w->bucket_next = *b;
    *b = w;
    ZN_FIFO_PUSH (pool.ready_head, pool.ready_tail, w, next);
  }
  pthread_cond_signal (&pool.work);
  pthread_mutex_unlock (&pool.lock);
}

bool
io_pool_busy (uint64_t key)
{
  bool busy;

  pthread_mutex_lock (&pool.lock);
  busy = key_head (key) != NULL;
  pthread_mutex_unlock (&pool.lock);
  return busy;
}

void
io_pool_stop (void)
{
  if (pool.threads == NULL)
    return;
  pthread_mutex_lock (&pool.lock);
  pool.stopping = true;
  pthread_cond_broadcast (&pool.work);
  pthread_mutex_unlock (&pool.lock);
  for (unsigned i = 0; i < pool.nr_threads; i++)
    pthread_join (pool.threads[i], NULL);
  free (pool.threads);
  pool.threads = NULL;
  pool.nr_threads = 0;
}
