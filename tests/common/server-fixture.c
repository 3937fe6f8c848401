/* SPDX-License-Identifier: BSD-3-Clause */
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <libnbd.h>

#include "zonednull/client.h"
#include "check.h"
#include "server-fixture.h"

#define MAX_ARGS 32
#define MAX_SERVERS 4

bool fixture_native;
const char *fixture_target = "nbdkit zonednull";

static char tmpdir[200];

/* Servers still running, killed at exit when a check fails mid-test. */
static struct spawned *running[MAX_SERVERS];

static void
forget (struct spawned *s)
{
  for (int i = 0; i < MAX_SERVERS; i++)
    if (running[i] == s)
      running[i] = NULL;
}

/* After a failed check the test's connections are still open, so the
 * servers are killed rather than asked to finish them.
 */
static void
cleanup (void)
{
  for (int i = 0; i < MAX_SERVERS; i++)
    if (running[i]) {
      struct spawned *s = running[i];

      running[i] = NULL;
      spawn_stop (s, SIGKILL);
    }
  rmdir (tmpdir);
}

void
fixture_init (const char *test, const char *name, bool need_server)
{
  const char *t = getenv ("TMPDIR");

  if (getenv ("ZONEDNULL_PLUGIN") == NULL
      || (need_server && getenv ("ZONEDNULL_SERVER") == NULL)) {
    fprintf (stderr, "%s: SKIP: ZONEDNULL_PLUGIN%s is not set; run through "
             "'make check'\n", test,
             need_server ? " or ZONEDNULL_SERVER" : "");
    exit (77);
  }
  snprintf (tmpdir, sizeof tmpdir, "%s/zonednull-%s.XXXXXX",
            t && *t ? t : "/tmp", name);
  CHECK (mkdtemp (tmpdir) != NULL);
  atexit (cleanup);
}

const char *
fixture_dir (void)
{
  return tmpdir;
}

void
fixture_use (bool native)
{
  if (native)
    CHECK (getenv ("ZONEDNULL_SERVER") != NULL);
  fixture_native = native;
  fixture_target = native ? "zonednull-server" : "nbdkit zonednull";
}

static void
add_args (const char **argv, size_t *n, const char *const *args)
{
  for (; args && *args; args++) {
    CHECK (*n < MAX_ARGS - 1);
    argv[(*n)++] = *args;
  }
}

void
server_start (struct spawned *s, const char *name, const char *const *args,
              const struct server_opts *o)
{
  static const struct server_opts none;
  const char *nbdkit = getenv ("NBDKIT");
  const char *preload = getenv ("ZONEDNULL_PRELOAD");
  /* The event loops (tests/local.mk). */
  const char *threads = getenv ("ZONEDNULL_SERVER_THREADS");
  char threads_arg[64];
  const char *argv[MAX_ARGS];
  size_t n = 0;
  int i = 0, status, r;

  if (o == NULL)
    o = &none;
  spawn_paths (s, tmpdir, name);
  if (fixture_native) {
    argv[n++] = getenv ("ZONEDNULL_SERVER");
    preload = NULL;             /* linked with the sanitizers itself */
    if (threads && *threads) {
      snprintf (threads_arg, sizeof threads_arg, "--threads=%s", threads);
      argv[n++] = threads_arg;
    }
  }
  else
    argv[n++] = nbdkit && *nbdkit ? nbdkit : "nbdkit";
  argv[n++] = "-f";
  argv[n++] = "--exit-with-parent";
  argv[n++] = "-U";
  argv[n++] = s->sock;
  argv[n++] = "-P";
  argv[n++] = s->pidfile;
  if (o->readonly)
    argv[n++] = "-r";
  if (!fixture_native) {
    add_args (argv, &n, o->nbdkit);
    argv[n++] = o->plugin ? o->plugin : getenv ("ZONEDNULL_PLUGIN");
  }
  add_args (argv, &n, args);
  add_args (argv, &n, o->more);
  argv[n] = NULL;

  while (i < MAX_SERVERS && running[i])
    i++;
  CHECK (i < MAX_SERVERS);
  running[i] = s;
  r = spawn_server (s, (char **) argv, preload, &status);
  if (r == -1) {
    char log[4096];

    forget (s);
    spawn_log (s, log, sizeof log);
    fprintf (stderr, "%s\n%s exited at startup (status %d)\n",
             log, argv[0], status);
    spawn_stop (s, SIGTERM);
    exit (EXIT_FAILURE);
  }
  CHECK_EQ (r, 0);
}

void
server_stop (struct spawned *s)
{
  forget (s);
  CHECK_EQ (spawn_stop (s, SIGTERM), 0);
}

void
server_uri (char *buf, size_t len, const struct spawned *s,
            const char *export)
{
  snprintf (buf, len, "nbd+unix:///%s?socket=%s", export, s->sock);
}

struct zn_client *
connect_ok (const char *uri)
{
  char err[1024];
  struct zn_client *c = zn_client_connect (uri, err, sizeof err);

  if (c == NULL) {
    fprintf (stderr, "%s: zn_client_connect (%s): %s\n", fixture_target,
             uri, err);
    exit (EXIT_FAILURE);
  }
  return c;
}

struct nbd_handle *
nbd_connect_ok (const struct spawned *s, const char *export)
{
  struct nbd_handle *h = nbd_create ();
  char uri[600];

  CHECK (h != NULL);
  server_uri (uri, sizeof uri, s, export);
  if (nbd_connect_uri (h, uri) == -1) {
    fprintf (stderr, "%s: nbd_connect_uri %s: %s\n", fixture_target, uri,
             nbd_get_error ());
    exit (EXIT_FAILURE);
  }
  return h;
}

struct zn_zone
report_zone (struct zn_client *c, uint64_t zone_sectors, unsigned idx)
{
  struct zn_zone z;

  CHECK_EQ (zn_client_report (c, (uint64_t) idx * zone_sectors, &z, 1), 1);
  return z;
}

void
expect_zone_in (struct zn_client *c, uint64_t zone_sectors, unsigned idx,
                uint8_t cond, uint64_t wp)
{
  struct zn_zone z = report_zone (c, zone_sectors, idx);

  if (z.cond != cond || z.wp != wp) {
    fprintf (stderr, "%s: zone %u: cond 0x%x wp %llu, expected cond 0x%x "
             "wp %llu\n", fixture_target, idx, z.cond,
             (unsigned long long) z.wp, cond, (unsigned long long) wp);
    exit (EXIT_FAILURE);
  }
}

int
aio_completed (void *user_data, int *error)
{
  struct aio_result *r = user_data;

  r->done = true;
  r->err = *error;
  return 1;                     /* retire the command */
}
