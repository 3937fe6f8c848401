/* SPDX-License-Identifier: BSD-3-Clause */
/* The fixture of the C tests that talk to a server over NBD: a private
 * directory, servers started in it on sockets of their own (nbdkit with
 * a plugin, or zonednull-server; tests/common/spawn.h does the starting), their
 * clean-up when a check fails, and the checks and connections the tests
 * share.  Every failure names the server under test (fixture_target) and
 * exits non-zero.
 */
#ifndef ZONEDNULL_TESTS_SERVER_FIXTURE_H
#define ZONEDNULL_TESTS_SERVER_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <libnbd.h>

#include "zonednull/client.h"
#include "spawn.h"

/* zonednull-server rather than nbdkit, and its name for messages. */
extern bool fixture_native;
extern const char *fixture_target;

/* Skips the test (exit 77) unless make check set ZONEDNULL_PLUGIN (and
 * ZONEDNULL_SERVER when need_server), makes the directory
 * $TMPDIR/zonednull-name.XXXXXX, and at exit kills the servers still
 * running and removes it.  The target is nbdkit until fixture_use.
 */
void fixture_init (const char *test, const char *name, bool need_server);

/* The directory of fixture_init. */
const char *fixture_dir (void);

/* The servers to start from now on: zonednull-server when native, else
 * nbdkit with the plugin.
 */
void fixture_use (bool native);

struct server_opts {
  bool readonly;                        /* -r */
  const char *plugin;                   /* nbdkit's; NULL: $ZONEDNULL_PLUGIN */
  const char *const *nbdkit;            /* nbdkit's own options, NULL-ended */
  const char *const *more;              /* arguments after args, NULL-ended */
};

/* Starts the server (nbdkit -f --exit-with-parent -U SOCK -P PIDFILE
 * [-r] [NBDKIT...] PLUGIN ARGS... MORE..., or zonednull-server with the
 * same but for NBDKIT and PLUGIN) on a socket of its own named name;
 * returns once it listens.  o may be NULL.  A server that exits at
 * startup fails the test with its log.
 */
void server_start (struct spawned *s, const char *name,
                   const char *const *args, const struct server_opts *o);

/* Stops it with SIGTERM; the test fails unless it was running. */
void server_stop (struct spawned *s);

/* nbd+unix:///EXPORT?socket=SOCK in buf. */
void server_uri (char *buf, size_t len, const struct spawned *s,
                 const char *export);

/* zn_client_connect, or the test fails with the reason. */
struct zn_client *connect_ok (const char *uri);

/* A plain libnbd connection to export, or the test fails. */
struct nbd_handle *nbd_connect_ok (const struct spawned *s,
                                   const char *export);

/* A call that returns 0 or -errno must give exactly want. */
#define EXPECT_ERRNO(c, expr, want)                                     \
  do {                                                                  \
    int expect_r_ = (expr);                                             \
    if (expect_r_ != -(want)) {                                         \
      fprintf (stderr, "%s:%d: %s: %s returned %d (%s), expected -%s "  \
               "(message: %s)\n", __FILE__, __LINE__, fixture_target,   \
               #expr, expect_r_,                                        \
               expect_r_ < 0 ? zn_errno_name (-expect_r_) : "success",  \
               #want, zn_client_error (c));                             \
      exit (EXIT_FAILURE);                                              \
    }                                                                   \
  } while (0)

#define EXPECT_OK(c, expr) EXPECT_ERRNO (c, expr, 0)

/* One aio request's outcome: aio_completed, as a libnbd completion
 * callback with the result as user_data, fills it in and retires the
 * command.
 */
struct aio_result {
  bool done;
  int err;
};
int aio_completed (void *user_data, int *error);

/* Zone idx of a device whose zones are zone_sectors long, by report. */
struct zn_zone report_zone (struct zn_client *c, uint64_t zone_sectors,
                            unsigned idx);

/* Zone idx must have condition cond and write pointer wp. */
void expect_zone_in (struct zn_client *c, uint64_t zone_sectors,
                     unsigned idx, uint8_t cond, uint64_t wp);

#endif
