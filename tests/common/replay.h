/* SPDX-License-Identifier: BSD-3-Clause */
/* What the parts of the trace replayer share: replay.c (the ops, one
 * file, main), replay-dev.c (the device under test: the model in
 * process, or a server over NBD) and replay-trace.c (reading a trace, its
 * header, and reporting a difference).
 */
#ifndef ZONEDNULL_TESTS_REPLAY_H
#define ZONEDNULL_TESTS_REPLAY_H

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "zonednull/client.h"
#include "model/zoned.h"
#include "spawn.h"
#include "trace-format.h"

enum { RC_MATCH = 0, RC_MISMATCH = 1, RC_TROUBLE = 2 };

/* Far above anything the recorder issues (31 blocks); stops a corrupted
 * nsect from turning into a multi-gigabyte allocation.
 */
#define MAX_IO_BYTES (UINT64_C(256) << 20)

/* ---- the device under test ------------------------------------------- */

/* What the header says to set up: the configfs values (the kernel from
 * line 1) and the bad ranges, "+A-B", in the order they were written.
 */
struct trace_cfg {
  struct zn_config cfg;
  char **badblocks;
  size_t nr_badblocks;
};

/* What header line 5 describes, in a form any backend can supply: an NBD
 * backend will fill it from the server rather than from the model.
 */
struct dev_info {
  uint64_t capacity;        /* sectors */
  uint64_t zone_sectors;
  uint32_t nr_zones;
  uint32_t lbs, pbs;        /* bytes */
  uint32_t max_open, max_active;
  uint32_t max_sectors;
};

/* Every call the replay makes on a device goes through here, so that a
 * transport (NBD) can later stand in for the in-process model.  Data calls
 * return the bytes transferred or a negative errno, which keeps the
 * recorder's "+<bytes>" short-transfer result expressible.
 */
struct backend {
  const char *name;
  /* NULL on failure, with a message in err; *refused tells whether the
   * device refused the configuration (rather than being unreachable).
   */
  void *(*open) (const struct trace_cfg *tc, bool *refused, char *err,
                 size_t errlen);
  void (*close) (void *h);
  int (*info) (void *h, struct dev_info *info);
  int64_t (*read) (void *h, void *buf, uint64_t sector, uint64_t nsect);
  int64_t (*write) (void *h, const void *buf, uint64_t sector, uint64_t nsect);
  int (*zone_mgmt) (void *h, enum zn_zone_op op, uint64_t sector, uint64_t nsect);
  /* Zones from the first one; the count written or a negative errno. */
  int64_t (*report) (void *h, struct zn_zone *zones, unsigned max);
};

/* The traces are what a user of /dev/nullb0 saw, so the model gets the
 * block layer's zone write plugging of the trace's kernel in front.
 */

/* ---- replay-dev.c ----------------------------------------------------- */

extern const struct backend model_backend;
extern const struct backend nbd_backend;

/* Set by --nbdkit (start a server per trace) or --connect (use one). */
extern const char *nbdkit_plugin;
extern const char *connect_uri;
/* --tls-psk: nbdkit requires TLS with this psktool file, and the client
 * connects as its first user.
 */
extern const char *tls_psk;
extern char tls_user[256];

/* ---- replay-trace.c --------------------------------------------------- */

void die_oom (void);

/* A growable string: lines are as long as the device has zones. */
struct strbuf {
  char *s;
  size_t len, cap;
};

void sb_reset (struct strbuf *sb);
void sb_printf (struct strbuf *sb, const char *fmt, ...);
void format_io_result (struct strbuf *sb, int64_t r, uint64_t wanted);
char cond_letter (uint8_t cond);
bool parse_u64 (const char *s, const char **end, uint64_t *val);

struct reader {
  const char *path;
  FILE *fp;
  char *line;
  size_t cap;
  unsigned long lineno;
};

int next_line (struct reader *r);
int malformed (const struct reader *r, const char *fmt, ...);
int expect_line (struct reader *r, const char *prefix, const char *what);
int compare_line (const struct reader *r, const char *actual, bool op_line);
int parse_kernel (const struct reader *r, enum zn_kernel *k);
void trace_cfg_free (struct trace_cfg *tc);
int parse_config (const struct reader *r, struct trace_cfg *tc);
int parse_recorder (const struct reader *r, uint64_t *seed, uint64_t *nops,
                    uint64_t *first);
void format_geometry (struct strbuf *sb, const struct dev_info *info);
void format_zone (struct strbuf *sb, unsigned n, const struct zn_zone *z);

#endif
