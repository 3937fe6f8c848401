/* SPDX-License-Identifier: BSD-3-Clause */
/* Failures on demand: null_blk's fault injection (timeout=, requeue=),
 * fault rules aimed at operations, sectors and moments, and zone-operation
 * latencies.  See doc/faults.md for the rules in full.
 *
 * A front end asks zn_fault_decide once for each request it takes, before
 * it applies it, as null_blk's null_queue_rq asks should_timeout_request
 * and should_requeue_request; what it must do with the answer:
 *
 *   ZN_FAULT_PASS        apply the request and answer it
 *   ZN_FAULT_FAIL        answer it with the error, without applying it
 *   ZN_FAULT_FAIL_AFTER  apply it; if that succeeded, answer the error
 *                        (the data landed and the write pointer moved)
 *   ZN_FAULT_TIMEOUT     neither apply nor answer it, ever: the host's
 *                        timeout handling must act (null_blk's
 *                        fake_timeout).  Free it when the connection ends.
 *   ZN_FAULT_REQUEUE     do not apply it; the transport's nearest thing
 *                        to a requeue (doc/faults.md), and a request
 *                        retried counts again
 *
 * and, for every answer, hold it delay_ns after the request came in
 * (later than irqmode=2's completion, if that is later).
 * zn_fault_result applies a FAIL or FAIL_AFTER to the model's result.
 */
#ifndef ZONEDNULL_FAULT_H
#define ZONEDNULL_FAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/errors.h"
#include "wire/fault-rule.h"

struct zn_dev;

/* Adds a rule after the others (the first that fires decides); *id is
 * its number.  -ENOSPC when ZN_FAULT_MAX_RULES are set.
 */
int zn_fault_add (struct zn_dev *dev, const struct zn_fault_rule *rule,
                  uint32_t *id);
/* Removes rule id, or every rule with id 0; -ENOENT for no such rule. */
int zn_fault_clear (struct zn_dev *dev, uint32_t id);
/* Copies up to max rules, in order, with their counts; returns how many
 * there are.
 */
size_t zn_fault_list (struct zn_dev *dev, struct zn_fault_rule *rules,
                      size_t max);

enum zn_fault_action {
  ZN_FAULT_PASS, ZN_FAULT_FAIL, ZN_FAULT_FAIL_AFTER, ZN_FAULT_TIMEOUT,
  ZN_FAULT_REQUEUE,
};

struct zn_fault {
  enum zn_fault_action action;
  int err;                      /* negative errno, for FAIL and FAIL_AFTER */
  uint16_t nvme_status;         /* the rule's, or 0 */
  uint64_t delay_ns;            /* a rule's delay and the op's latency */
  uint32_t rule;                /* the rule that fired; 0 for timeout=,
                                   requeue= or a latency alone */
};

/* What to do with a request of op over [sector, sector + nr_sectors)
 * carrying bytes of data.  Thread-safe; one lock-free load when the
 * device has no fault settings.
 */
void zn_fault_decide (struct zn_dev *dev, enum zn_fault_op op,
                      uint64_t sector, uint64_t nr_sectors, uint64_t bytes,
                      struct zn_fault *fault);

/* The request's result: ret (the model's, or 0 when a FAIL kept it from
 * running) unless fault fails it; then fault->err, with *why
 * ZN_REASON_INJECTED.
 */
int zn_fault_result (const struct zn_fault *fault, int ret,
                     enum zn_reason *why);

/* zn_fault_result, and for a FAIL_AFTER whose request was applied a mark
 * "fault-after:OP:SECTOR" in the write log, if one is on, so that a
 * reader of the log knows that the host saw the request fail although
 * its data is there (lib/frontend/device.c).  What front ends call.
 */
int zn_fault_outcome (struct zn_dev *dev, const struct zn_fault *fault,
                      enum zn_fault_op op, uint64_t sector, int ret,
                      enum zn_reason *why);

/* Whether the device has fault settings at all (start parameters or
 * rules).
 */
bool zn_fault_armed (struct zn_dev *dev);

#endif
