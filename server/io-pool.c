/* SPDX-License-Identifier: BSD-3-Clause */
/* zonednull-server's storage workers (see io-pool.h).
 *
 * One lock guards the queues: a worker holds it twice per work, which
 * is little beside the system calls the work makes.  The loop learns of
 * finished work through an ev_async, so a burst of completions costs it
 * one wake-up.
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

static struct {
  pthread_mutex_t lock;
  pthread_cond_t work;
  struct io_work *ready_head, *ready_tail;
  struct io_work *done_head, *done_tail;
  struct io_work *keys[BUCKETS];
  bool stopping;
  pthread_t *threads;
  unsigned nr_threads;
  struct ev_loop *loop;
  ev_async wake;
  void (*complete) (struct io_work *w);
  void (*batch_end) (void);
} pool = {
  .lock = PTHREAD_MUTEX_INITIALIZER, .work = PTHREAD_COND_INITIALIZER,
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
    ZN_FIFO_PUSH (pool.done_head, pool.done_tail, w, next);
    ev_async_send (pool.loop, &pool.wake);
  }
  pthread_mutex_unlock (&pool.lock);
  return NULL;
}

/* Completes the work done so far, in the order it ended. */
static void
drain (void)
{
  struct io_work *w;

  pthread_mutex_lock (&pool.lock);
  w = pool.done_head;
  pool.done_head = pool.done_tail = NULL;
  pthread_mutex_unlock (&pool.lock);
  while (w) {
    struct io_work *next = w->next;

    pool.complete (w);
    w = next;
  }
  pool.batch_end ();
}

static void
wake_cb (struct ev_loop *loop, ev_async *a, int revents)
{
  (void) loop;
  (void) a;
  (void) revents;
  drain ();
}

int
io_pool_start (struct ev_loop *loop, unsigned workers,
               void (*complete) (struct io_work *w),
               void (*batch_end) (void))
{
  pool.threads = calloc (workers, sizeof *pool.threads);
  if (pool.threads == NULL) {
    fputs ("zonednull-server: out of memory\n", stderr);
    return -1;
  }
  pool.loop = loop;
  pool.complete = complete;
  pool.batch_end = batch_end;
  pool.stopping = false;
  ev_async_init (&pool.wake, wake_cb);
  ev_async_start (loop, &pool.wake);
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
io_pool_submit (struct io_work *w)
{
  struct io_work *head;

  w->after = NULL;
  w->bucket_next = NULL;
  pthread_mutex_lock (&pool.lock);
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
  ev_async_stop (pool.loop, &pool.wake);
  drain ();
  free (pool.threads);
  pool.threads = NULL;
  pool.nr_threads = 0;
}
