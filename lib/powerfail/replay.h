/* SPDX-License-Identifier: BSD-3-Clause */
/* Replay of a write log (doc/power-fail.md, sections 2 and 3): which
 * writes are durable at a point of the log, which are pending and how
 * each policy chooses among them, and the state written through the
 * model into a backing_dir.  `zonednull replay` is a front end to this.
 */
#ifndef ZONEDNULL_REPLAY_H
#define ZONEDNULL_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model/crash.h"
#include "powerfail/wlog-read.h"

enum zn_fate {
  ZN_FATE_OP,                   /* not a write: applied as it is */
  ZN_FATE_DURABLE,              /* a write every state keeps */
  ZN_FATE_PENDING,              /* a write a crash state may lose */
  ZN_FATE_WIPED,                /* a pending write a later reset erased */
};

/* A zone's pending writes, in log order: of a sequential zone those
 * since its last reset, of a conventional zone all.
 */
struct zn_replay_group {
  uint32_t zone;
  bool seq;
  uint64_t n;
  uint64_t *entries;            /* their entry numbers */
};

/* What the rules and torn:SEED need of an entry: 24 bytes where the
 * entry read is 136, so that a long log's plan stays small.  The entries
 * themselves are read again, one at a time, as the state is written.
 */
struct zn_replay_entry {
  uint64_t ref;                 /* FLUSH: entries covered; COND: cond */
  uint32_t zone;
  uint32_t block, nblocks;      /* data: its first logical block's index
                                   in the zone, and how many */
  uint8_t kind;                 /* enum zn_wlog_kind */
  bool fua;
};

struct zn_replay_plan {
  struct zn_wlog_reader *log;
  uint64_t end;                 /* entries 0..end-1 are replayed */
  struct zn_replay_entry *ents; /* [end] */
  struct zn_wlog_rec last;      /* entry end - 1, whole */
  uint64_t rewrite;             /* bytes WP entries rewrite of zones */
  uint64_t carried;             /* bytes of data the entries carry */
  enum zn_fate *fate;           /* [end] */
  struct zn_replay_group *groups; /* by zone, ascending */
  size_t nr_groups;
};

/* The entry --to names: the first mark of that name, or an entry
 * number (to a decimal number); NULL to: the log's last entry.
 */
struct zn_replay_to {
  const char *mark;             /* NULL: by number */
  uint64_t no;
};
/* A negative errno with a message for a number past the log's entries. */
int zn_replay_to_parse (struct zn_wlog_reader *log, const char *to,
                        struct zn_replay_to *t, char *err, size_t errlen);
bool zn_replay_to_reached (const struct zn_replay_to *t,
                           const struct zn_wlog_rec *rec);
/* At the log's end without reaching t: a negative errno with a message for a
 * mark the log lacks, 0 otherwise.
 */
int zn_replay_to_missed (struct zn_wlog_reader *log,
                         const struct zn_replay_to *t, char *err,
                         size_t errlen);

/* Reads the log through the mark named to (its first), or through entry number
 * to if to is a decimal number; NULL to: to the end.  Then decides each
 * entry's fate.  A negative errno with a message naming the entry, or the mark
 * that is not in the log.
 */
int zn_replay_plan (struct zn_wlog_reader *log, const char *to,
                    struct zn_replay_plan *plan, char *err, size_t errlen);
void zn_replay_plan_free (struct zn_replay_plan *plan);

/* The states a policy makes: 1, but for enumerate the distinct choices
 * (at most keep->max).
 */
uint64_t zn_replay_nr_states (const struct zn_replay_plan *plan,
                              const struct zn_keep *keep);
/* One crash state: what it keeps of each entry i < plan->end. */
struct zn_replay_state {
  struct zn_keep keep;          /* the policy that chose it */
  bool *k;                      /* [end]: applied, whole or torn */
  uint64_t *torn;               /* [end]: 0, whole; else 1 + its place
                                   among its zone's pending writes, whose
                                   blocks torn:SEED draws (crash.h) */
};
/* Arrays for plan's entries; -ENOMEM. */
int zn_replay_state_init (const struct zn_replay_plan *plan,
                          struct zn_replay_state *st);
void zn_replay_state_free (struct zn_replay_state *st);

/* State number state of keep (0 unless enumerate) into st.  Durable
 * writes and zone operations are always applied whole; wiped writes
 * never; only torn:SEED tears a write.
 */
void zn_replay_choose (const struct zn_replay_plan *plan,
                       const struct zn_keep *keep, uint64_t state,
                       struct zn_replay_state *st);
/* One line for a state: "zone Z: kept K of N (entries ...)" for each
 * zone with pending writes, with the blocks a torn one kept, or "no
 * pending writes".
 */
void zn_replay_describe (const struct zn_replay_plan *plan,
                         const struct zn_replay_state *st, FILE *fp);

/* Applies the kept entries (of a torn one its kept blocks) in log order
 * through the model, to a new device of the log's geometry with
 * backing_dir=dir (not followed if a symbolic link), which must be empty
 * or absent.  A negative errno with a message naming the entry the model
 * refused.
 */
int zn_replay_write (const struct zn_replay_plan *plan,
                     const struct zn_replay_state *st, const char *dir,
                     char *err, size_t errlen);

/* Whether dir may receive a state: absent (then made, mode 0700), or an empty
 * directory that is not a symbolic link.  A negative errno with a message.
 */
int zn_replay_target_dir (const char *dir, char *err, size_t errlen);

#endif
