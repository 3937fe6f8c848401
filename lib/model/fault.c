/* SPDX-License-Identifier: BSD-3-Clause */
/* Failures on demand (fault.h): null_blk's timeout= and requeue=, the
 * fault rules, and the zone-operation latencies.  All of a device's fault
 * state sits under one lock, taken only while the device has any: the
 * counts of the rules and of the kernel's attributes must see the
 * requests one at a time to be reproducible.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/dev.h"
#include "model/fault.h"
#include "util/mix.h"

struct zn_faults {
  atomic_bool armed;            /* anything below to consult */
  pthread_mutex_t lock;
  struct zn_fault_attr timeout, requeue;
  uint64_t latency_ns[ZN_FOP_NR];
  struct zn_fault_rule rules[ZN_FAULT_MAX_RULES];
  size_t nr_rules;
  uint32_t next_id;
};

static bool
attr_set (const struct zn_fault_attr *a)
{
  return a->probability != 0;
}

/* Called with the lock held, or before the device is shared. */
static void
rearm (struct zn_faults *f)
{
  bool armed = f->nr_rules || attr_set (&f->timeout)
               || attr_set (&f->requeue);

  for (int op = 0; op < ZN_FOP_NR; op++)
    armed |= f->latency_ns[op] != 0;
  atomic_store (&f->armed, armed);
}

int
fault_init (struct zn_dev *dev, const struct zn_config *cfg)
{
  struct zn_faults *f = calloc (1, sizeof *f);

  if (!f)
    return -ENOMEM;
  zn_mutex_init (&f->lock);
  f->timeout = cfg->timeout_inject;
  f->requeue = cfg->requeue_inject;
  f->latency_ns[ZN_FOP_RESET] = cfg->zone_reset_nsec;
  f->latency_ns[ZN_FOP_OPEN] = cfg->zone_open_nsec;
  f->latency_ns[ZN_FOP_CLOSE] = cfg->zone_close_nsec;
  f->latency_ns[ZN_FOP_FINISH] = cfg->zone_finish_nsec;
  f->latency_ns[ZN_FOP_APPEND] = cfg->zone_append_nsec;
  f->next_id = 1;
  rearm (f);
  dev->faults = f;
  return 0;
}

void
fault_free (struct zn_dev *dev)
{
  if (!dev->faults)
    return;
  pthread_mutex_destroy (&dev->faults->lock);
  free (dev->faults);
  dev->faults = NULL;
}

bool
zn_fault_armed (struct zn_dev *dev)
{
  return atomic_load (&dev->faults->armed);
}

/* ---- Rules on the device ------------------------------------------- */

int
zn_fault_add (struct zn_dev *dev, const struct zn_fault_rule *rule,
              uint32_t *id)
{
  struct zn_faults *f = dev->faults;
  int ret = -ENOSPC;

  pthread_mutex_lock (&f->lock);
  if (f->nr_rules < ZN_FAULT_MAX_RULES) {
    struct zn_fault_rule *r = &f->rules[f->nr_rules++];

    *r = *rule;
    r->id = f->next_id++;
    r->matched = r->hits = 0;
    if (id)
      *id = r->id;
    rearm (f);
    ret = 0;
  }
  pthread_mutex_unlock (&f->lock);
  return ret;
}

int
zn_fault_clear (struct zn_dev *dev, uint32_t id)
{
  struct zn_faults *f = dev->faults;
  int ret = id ? -ENOENT : 0;

  pthread_mutex_lock (&f->lock);
  if (id == 0)
    f->nr_rules = 0;
  for (size_t i = 0; id && i < f->nr_rules; i++)
    if (f->rules[i].id == id) {
      memmove (&f->rules[i], &f->rules[i + 1],
               (f->nr_rules - i - 1) * sizeof f->rules[0]);
      f->nr_rules--;
      ret = 0;
      break;
    }
  rearm (f);
  pthread_mutex_unlock (&f->lock);
  return ret;
}

size_t
zn_fault_list (struct zn_dev *dev, struct zn_fault_rule *rules, size_t max)
{
  struct zn_faults *f = dev->faults;
  size_t n;

  pthread_mutex_lock (&f->lock);
  n = f->nr_rules;
  memcpy (rules, f->rules, (n < max ? n : max) * sizeof *rules);
  pthread_mutex_unlock (&f->lock);
  return n;
}

/* ---- The decision --------------------------------------------------- */

static bool
rule_takes (const struct zn_fault_rule *r, enum zn_fault_op op,
            uint64_t sector, uint64_t nr_sectors)
{
  if (r->ops && !(r->ops & (1u << op)))
    return false;
  if (op == ZN_FOP_FLUSH)
    return true;
  return sector <= r->last && (nr_sectors == 0 || sector + nr_sectors - 1
                                                   >= r->first);
}

/* Whether rule r, which takes the request, fires on it. */
static bool
rule_fires (struct zn_fault_rule *r)
{
  uint64_t n = r->matched++;

  if (r->count && r->hits >= r->count)
    return false;
  if (r->probability < 100
      && zn_mix (zn_mix (r->seed) ^ n) % 100 >= r->probability)
    return false;
  r->hits++;
  return true;
}

void
zn_fault_decide (struct zn_dev *dev, enum zn_fault_op op, uint64_t sector,
                 uint64_t nr_sectors, uint64_t bytes, struct zn_fault *out)
{
  struct zn_faults *f = dev->faults;
  bool timeout, requeue;

  *out = (struct zn_fault) { .action = ZN_FAULT_PASS };
  if (!atomic_load_explicit (&f->armed, memory_order_relaxed))
    return;
  pthread_mutex_lock (&f->lock);
  /* null_queue_rq's order: both are asked, each counting the request,
   * and a requeue wins over a timeout.
   */
  timeout = zn_fault_attr_should_fail (&f->timeout, bytes);
  requeue = zn_fault_attr_should_fail (&f->requeue, bytes);
  if (requeue)
    out->action = ZN_FAULT_REQUEUE;
  else if (timeout)
    out->action = ZN_FAULT_TIMEOUT;
  else
    for (size_t i = 0; i < f->nr_rules; i++) {
      struct zn_fault_rule *r = &f->rules[i];

      if (!rule_takes (r, op, sector, nr_sectors) || !rule_fires (r))
        continue;
      out->rule = r->id;
      out->delay_ns = (uint64_t) r->delay_ms * 1000000;
      if (r->timeout)
        out->action = ZN_FAULT_TIMEOUT;
      else if (r->err) {
        out->action = r->after ? ZN_FAULT_FAIL_AFTER : ZN_FAULT_FAIL;
        out->err = -r->err;
        out->nvme_status = r->nvme_status;
      }
      break;
    }
  if (out->action != ZN_FAULT_TIMEOUT && out->action != ZN_FAULT_REQUEUE)
    out->delay_ns += f->latency_ns[op];
  pthread_mutex_unlock (&f->lock);
}

int
zn_fault_result (const struct zn_fault *fault, int ret, enum zn_reason *why)
{
  if (fault->action == ZN_FAULT_FAIL
      || (fault->action == ZN_FAULT_FAIL_AFTER && ret == 0)) {
    if (why)
      *why = ZN_REASON_INJECTED;
    return fault->err;
  }
  return ret;
}
