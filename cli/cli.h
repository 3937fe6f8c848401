/* SPDX-License-Identifier: BSD-3-Clause */
/* What the zonednull CLI's files share: the commands, the options of a
 * run, and the ways out.
 */
#ifndef ZONEDNULL_CLI_H
#define ZONEDNULL_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "zonednull/client.h"
#include "model/crash.h"

#define PROG "zonednull"

enum kind {
  K_REPORT, K_CAPACITY, K_ACTION, K_INFO, K_TOGGLE, K_BADBLOCKS, K_POWER,
  K_APPEND, K_MARK, K_LOG, K_FAULT,
};

struct command {
  const char *name;
  enum kind kind;
  int op;                       /* enum zn_zone_op, or READONLY/OFFLINE */
  const char *help;
};

struct options {
  const struct command *cmd;
  const char *uri;
  uint64_t offset;
  uint64_t length;
  uint32_t count;
  bool have_offset, have_length, have_count;
  bool verbose, json, clear;
  /* append: the data, from a file or one repeated byte. */
  const char *file;
  uint8_t pattern;
  bool have_pattern, fua;
  /* Seconds any wait for the server may take; 0: forever. */
  unsigned timeout;
  /* mark NAME, log start NAME, log stop (name NULL); fault's add, list
   * or clear.
   */
  const char *name;
  /* fault add: the rule's words; fault clear: the rule (0: all). */
  const char *rule;
  uint32_t fault_id;
  /* power-cycle: what it keeps of the unflushed writes. */
  const char *keep_text;
  struct zn_keep keep;
};

/* main.c: a bad command line (exit 2), a failed request (exit 1). */
void cli_usage_error (const char *fmt, ...)
  __attribute__ ((noreturn, format (printf, 1, 2)));
void cli_die_client (struct zn_client *c, const char *what, int r)
  __attribute__ ((noreturn));

/* main.c: a number as -o and -l take it. */
bool cli_parse_number (const char *s, uint64_t *value);

/* fault.c: fault add WORD... | list | clear [ID] before the URI;
 * returns the index of the URI.
 */
int cli_fault_args (struct options *o, int argc, char **argv, int optind);
void cli_cmd_fault (struct zn_client *c, const struct options *o);

/* log.c: the words of mark and log before the URI (from argv[optind]);
 * returns the index of the URI.
 */
int cli_log_args (struct options *o, int argc, char **argv, int optind);
void cli_cmd_log (struct zn_client *c, const struct options *o);

#endif
