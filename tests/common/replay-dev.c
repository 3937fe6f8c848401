/* SPDX-License-Identifier: BSD-3-Clause */
/* The device under test for the trace replayer: the model in process, or
 * a server over NBD (started per trace with --nbdkit, or running, with
 * --connect), both behind struct backend.
 */
#include "replay.h"

static void *
model_open (const struct trace_cfg *tc, bool *refused, char *err, size_t errlen)
{
  struct zn_dev *dev;

  *refused = true;
  dev = zn_dev_create (&tc->cfg, err, errlen);
  if (dev && zn_dev_write_plugging (dev, err, errlen) < 0) {
    zn_dev_destroy (dev);
    return NULL;
  }
  for (size_t i = 0; dev && i < tc->nr_badblocks; i++)
    if (zn_badblocks_parse (dev, tc->badblocks[i]) < 0) {
      snprintf (err, errlen, "badblocks=%s: refused", tc->badblocks[i]);
      zn_dev_destroy (dev);
      return NULL;
    }
  return dev;
}

static void
model_close (void *h)
{
  zn_dev_destroy (h);
}

static int
model_info (void *h, struct dev_info *info)
{
  const struct zn_geometry *geo = zn_dev_geometry (h);

  /* null_blk has a single block size for both. */
  *info = (struct dev_info) {
    .capacity = geo->capacity,
    .zone_sectors = geo->zone_sectors,
    .nr_zones = geo->nr_zones,
    .lbs = geo->block_size,
    .pbs = geo->block_size,
    .max_open = geo->max_open,
    .max_active = geo->max_active,
    .max_sectors = geo->max_sectors,
  };
  return 0;
}

static int64_t
model_read (void *h, void *buf, uint64_t sector, uint64_t nsect)
{
  int r = zn_read (h, buf, sector, nsect);
  return r < 0 ? r : (int64_t) (nsect << ZN_SECTOR_SHIFT);
}

static int64_t
model_write (void *h, const void *buf, uint64_t sector, uint64_t nsect)
{
  int r = zn_write (h, buf, sector, nsect);
  return r < 0 ? r : (int64_t) (nsect << ZN_SECTOR_SHIFT);
}

static int
model_zone_mgmt (void *h, enum zn_zone_op op, uint64_t sector, uint64_t nsect)
{
  return zn_zone_mgmt (h, op, sector, nsect);
}

static int64_t
model_report (void *h, struct zn_zone *zones, unsigned max)
{
  return zn_report_zones (h, 0, zones, max);
}

const struct backend model_backend = {
  .name = "model",
  .open = model_open,
  .close = model_close,
  .info = model_info,
  .read = model_read,
  .write = model_write,
  .zone_mgmt = model_zone_mgmt,
  .report = model_report,
};

/* ---- the device over NBD ---------------------------------------------- */

const char *nbdkit_plugin;
const char *connect_uri;
const char *tls_psk;
char tls_user[256];

struct nbd_dev {
  struct zn_client *client;
  struct spawned server;        /* pid 0 when connected to a running one */
  char dir[200];                /* holds the socket, pidfile and log */
};

/* Runs `nbdkit -f -U DIR/dev.sock -P DIR/dev.pid PLUGIN KEY=VALUE...` with
 * the trace's configuration and waits until it listens.
 * ZONEDNULL_PRELOAD is preloaded into it, as the shell tests do, for a
 * plugin built with the sanitizers.  A refusal comes with nbdkit's
 * startup messages (why it refused the configuration) in err.
 */
static bool
start_server (struct nbd_dev *d, const struct trace_cfg *tc, bool *refused,
              char *err, size_t errlen)
{
  const struct zn_config *cfg = &tc->cfg;
  char keys[16][48];
  const char *nbdkit = getenv ("NBDKIT");
  const char *tmp = getenv ("TMPDIR");
  char **argv;
  int argc = 0, nkeys = 0, status, started;

  snprintf (d->dir, sizeof d->dir, "%s/zonednull-replay.XXXXXX",
            tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp (d->dir)) {
    snprintf (err, errlen, "mkdtemp: %s", strerror (errno));
    d->dir[0] = '\0';
    return false;
  }
  spawn_paths (&d->server, d->dir, "dev");

  snprintf (keys[nkeys++], 48, "size=%" PRIu64, cfg->size);
  snprintf (keys[nkeys++], 48, "zone_size=%" PRIu64, cfg->zone_size);
  if (cfg->zone_capacity)
    snprintf (keys[nkeys++], 48, "zone_capacity=%" PRIu64, cfg->zone_capacity);
  snprintf (keys[nkeys++], 48, "zone_nr_conv=%" PRIu32, cfg->zone_nr_conv);
  snprintf (keys[nkeys++], 48, "zone_max_open=%" PRIu32, cfg->zone_max_open);
  snprintf (keys[nkeys++], 48, "zone_max_active=%" PRIu32, cfg->zone_max_active);
  snprintf (keys[nkeys++], 48, "blocksize=%" PRIu32, cfg->blocksize);
  if (cfg->max_sectors)
    snprintf (keys[nkeys++], 48, "max_sectors=%" PRIu32, cfg->max_sectors);
  snprintf (keys[nkeys++], 48, "memory_backed=%d", cfg->memory_backed ? 1 : 0);
  if (cfg->kernel != ZN_KERNEL_6_1)
    snprintf (keys[nkeys++], 48, "kernel=%s", zn_kernel_name (cfg->kernel));
  if (cfg->given & ZN_GIVEN_ZONE_FULL)
    snprintf (keys[nkeys++], 48, "zone_full=%d", cfg->zone_full);
  if (cfg->given & ZN_GIVEN_ZONE_APPEND_MAX_SECTORS)
    snprintf (keys[nkeys++], 48, "zone_append_max_sectors=%" PRIu32,
              cfg->zone_append_max_sectors);
  if (cfg->given & ZN_GIVEN_FUA)
    snprintf (keys[nkeys++], 48, "fua=%d", cfg->fua);
  if (cfg->given & ZN_GIVEN_BADBLOCKS_ONCE)
    snprintf (keys[nkeys++], 48, "badblocks_once=%d", cfg->badblocks_once);
  if (cfg->given & ZN_GIVEN_BADBLOCKS_PARTIAL_IO)
    snprintf (keys[nkeys++], 48, "badblocks_partial_io=%d",
              cfg->badblocks_partial_io);

  argv = calloc (12 + (size_t) nkeys + 2 * tc->nr_badblocks, sizeof *argv);
  if (!argv)
    die_oom ();
  argv[argc++] = (char *) (nbdkit && *nbdkit ? nbdkit : "nbdkit");
  argv[argc++] = "-f";
  argv[argc++] = "--exit-with-parent";
  argv[argc++] = "-U";
  argv[argc++] = d->server.sock;
  argv[argc++] = "-P";
  argv[argc++] = d->server.pidfile;
  if (tls_psk) {
    argv[argc++] = "--tls=require";
    argv[argc++] = (char *) tls_psk;   /* --tls-psk=FILE */
  }
  argv[argc++] = (char *) nbdkit_plugin;
  for (int i = 0; i < nkeys; i++)
    argv[argc++] = keys[i];
  for (size_t i = 0; i < tc->nr_badblocks; i++) {
    size_t n = strlen (tc->badblocks[i]) + sizeof "badblocks=";

    argv[argc] = malloc (n);
    if (!argv[argc])
      die_oom ();
    snprintf (argv[argc++], n, "badblocks=%s", tc->badblocks[i]);
  }
  argv[argc] = NULL;

  started = spawn_server (&d->server, argv, getenv ("ZONEDNULL_PRELOAD"),
                          &status);
  for (int i = argc - (int) tc->nr_badblocks; i < argc; i++)
    free (argv[i]);
  free (argv);
  switch (started) {
  case 0:
    return true;
  case -1:
    *refused = status != -1 && WIFEXITED (status)
      && WEXITSTATUS (status) == 1;
    spawn_log (&d->server, err, errlen);
    if (err[0] == '\0')
      snprintf (err, errlen, "nbdkit exited at startup");
    return false;
  default:
    snprintf (err, errlen, "nbdkit did not start listening within 60 s");
    return false;
  }
}

static void nbd_close (void *h);

static void *
nbd_open (const struct trace_cfg *tc, bool *refused, char *err, size_t errlen)
{
  struct nbd_dev *d = calloc (1, sizeof *d);
  char uri[1024];

  if (!d) {
    snprintf (err, errlen, "out of memory");
    return NULL;
  }
  if (connect_uri)
    snprintf (uri, sizeof uri, "%s", connect_uri);
  else {
    if (!start_server (d, tc, refused, err, errlen)) {
      nbd_close (d);
      return NULL;
    }
    if (tls_psk)
      snprintf (uri, sizeof uri, "nbds+unix://%s@/?socket=%s&tls-psk-file=%s",
                tls_user, d->server.sock, tls_psk + strlen ("--tls-psk="));
    else
      snprintf (uri, sizeof uri, "%s", d->server.uri);
  }
  d->client = zn_client_connect (uri, err, errlen);
  if (!d->client) {
    nbd_close (d);
    return NULL;
  }
  return d;
}

static void
nbd_close (void *h)
{
  struct nbd_dev *d = h;

  zn_client_close (d->client);
  if (d->dir[0]) {
    spawn_stop (&d->server, SIGTERM);
    rmdir (d->dir);
  }
  free (d);
}

static int
nbd_info (void *h, struct dev_info *info)
{
  struct nbd_dev *d = h;
  struct zn_control_info ci;

  if (zn_client_info (d->client, &ci) < 0) {
    fprintf (stderr, "replay: %s\n", zn_client_error (d->client));
    return -1;
  }
  *info = (struct dev_info) {
    .capacity = ci.capacity,
    .zone_sectors = ci.zone_sectors,
    .nr_zones = ci.nr_zones,
    .lbs = ci.block_size,
    .pbs = ci.block_size,
    .max_open = ci.max_open,
    .max_active = ci.max_active,
    .max_sectors = ci.max_sectors,
  };
  return 0;
}

static int64_t
nbd_read (void *h, void *buf, uint64_t sector, uint64_t nsect)
{
  struct nbd_dev *d = h;
  size_t n = (size_t) (nsect << ZN_SECTOR_SHIFT);
  int r = zn_client_pread (d->client, buf, n, sector << ZN_SECTOR_SHIFT);

  return r < 0 ? r : (int64_t) n;
}

static int64_t
nbd_write (void *h, const void *buf, uint64_t sector, uint64_t nsect)
{
  struct nbd_dev *d = h;
  size_t n = (size_t) (nsect << ZN_SECTOR_SHIFT);
  int r = zn_client_pwrite (d->client, buf, n, sector << ZN_SECTOR_SHIFT);

  return r < 0 ? r : (int64_t) n;
}

static int
nbd_zone_mgmt (void *h, enum zn_zone_op op, uint64_t sector, uint64_t nsect)
{
  struct nbd_dev *d = h;

  return zn_client_zone_mgmt (d->client, op, sector, nsect);
}

static int64_t
nbd_report (void *h, struct zn_zone *zones, unsigned max)
{
  struct nbd_dev *d = h;

  return zn_client_report (d->client, 0, zones, max);
}

const struct backend nbd_backend = {
  .name = "NBD server",
  .open = nbd_open,
  .close = nbd_close,
  .info = nbd_info,
  .read = nbd_read,
  .write = nbd_write,
  .zone_mgmt = nbd_zone_mgmt,
  .report = nbd_report,
};
