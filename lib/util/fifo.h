/* SPDX-License-Identifier: BSD-3-Clause */
/* Intrusive FIFOs: a head, a tail, and a link member in each item.  The
 * queues of waiting connections, throttled requests and jobs in the
 * programs, the parked writes and held replies of the sessions, and the
 * fio engine's queues are all this one shape.
 */
#ifndef ZONEDNULL_FIFO_H
#define ZONEDNULL_FIFO_H

/* Appends item, whose link member is the next pointer. */
#define ZN_FIFO_PUSH(head, tail, item, link)    \
  do {                                          \
    (item)->link = NULL;                        \
    if (tail)                                   \
      (tail)->link = (item);                    \
    else                                        \
      (head) = (item);                          \
    (tail) = (item);                            \
  } while (0)

/* Takes the first item out into item, NULL when there is none. */
#define ZN_FIFO_POP(head, tail, item, link)     \
  do {                                          \
    (item) = (head);                            \
    if (item) {                                 \
      (head) = (item)->link;                    \
      if ((head) == NULL)                       \
        (tail) = NULL;                          \
      (item)->link = NULL;                      \
    }                                           \
  } while (0)

/* Takes item, which must be queued, out from wherever it is. */
#define ZN_FIFO_REMOVE(type, head, tail, item, link)            \
  do {                                                          \
    type **pp_, *prev_ = NULL;                                  \
    for (pp_ = &(head); *pp_ != (item); pp_ = &(*pp_)->link)    \
      prev_ = *pp_;                                             \
    *pp_ = (item)->link;                                        \
    if ((tail) == (item))                                       \
      (tail) = prev_;                                           \
  } while (0)

#endif
