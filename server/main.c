/* SPDX-License-Identifier: BSD-3-Clause */
/* zonednull-server: the null_blk zoned device over NBD, and over
 * NVMe/TCP with --nvme, from libev event loops, one per thread
 * (--threads): options, devices, the loops and main.
 *
 * The connections are the connection layer's (net/conn.c), each an NBD
 * session (proto/nbd/) or an NVMe/TCP one (proto/nvme/); the requests of
 * both are scheduled by scheduler.c.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <inttypes.h>
#include <malloc.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#include <ev.h>

#include "frontend/control.h"
#include "model/queue.h"
#include "model/zoned.h"
#include "conn.h"
#include "nbd/session.h"
#include "nvme/session.h"
#include "nvme/tls-psk.h"
#include "nvme/zns.h"
#include "nvme-hosts.h"
#include "config/params.h"
#include "util/pidfile.h"
#include "scheduler.h"
#include "tls.h"

/* Command line settings. */
static const char *unix_path;           /* -U: listen on this socket */
static const char *ipaddr = "127.0.0.1"; /* -i: TCP address */
static const char *port = "10809";      /* -p: TCP port */
static bool port_set;                   /* -p given */
static const char *pidfile;             /* -P: written once listening */
static bool foreground;                 /* -f: do not daemonize */
static bool verbose;                    /* -v: log connections */
static bool exit_with_parent;           /* stop when the parent exits */
static uint64_t busy_poll_ns = 20000;   /* --busy-poll: awake after input */
static unsigned io_threads = 16;       /* --io-threads: storage workers */
static unsigned threads;                /* --threads: event loops; 0 until
                                           set, then the CPUs' count */
static double handshake_timeout = 60.;  /* --timeout: seconds, 0 for none */
static struct tls_settings tls_settings; /* --tls, --tls-psk, ... */
static const char *nvme_port;           /* --nvme: NVMe/TCP on this port */
static const char **allowed_hosts;      /* --nvme-allow-host */
static unsigned nr_allowed_hosts;
static const char *nvme_tls_keys;       /* --nvme-tls-keys: a file */
static bool nvme_host_given;            /* --nvme-host: authentication */
static bool nvme_tls_compat;            /* --nvme-tls-compat */
static bool stats;                      /* --stats: count, print at SIGUSR1
                                           and at exit */
static const struct served_stats stats_hooks = {
  .arrival = net_stats_arrival, .reply = net_stats_reply,
};

static struct served served;
static struct zn_queue_config qcfg;
static int listen_fd = -1;
static bool listen_tcp;                 /* listen_fd is TCP, not Unix */
static int nvme_fd = -1;
static struct nvme_served nvme_served;
static uint64_t pipeline_wait_ns;
static struct zn_tagset **tagsets;
static unsigned nr_tagsets;

/* nullb0 ... nullb<nr_devices-1>, with their tag sets, as the plugin
 * makes them.
 */
static int
devices_create (const struct zn_params *p, char *err, size_t errlen)
{
  nr_tagsets = qcfg.shared_tags ? 1 : p->nr_devices;
  tagsets = calloc (nr_tagsets, sizeof *tagsets);
  served.devices = calloc (p->nr_devices, sizeof *served.devices);
  if (tagsets == NULL || served.devices == NULL) {
    snprintf (err, errlen, "out of memory");
    return -1;
  }
  for (unsigned i = 0; i < nr_tagsets; i++)
    if ((tagsets[i] = zn_tagset_create (&qcfg)) == NULL) {
      snprintf (err, errlen, "out of memory for %" PRIu32 " tags",
                qcfg.hw_queue_depth);
      return -1;
    }
  for (unsigned i = 0; i < p->nr_devices; i++) {
    struct served_device *d = &served.devices[i];

    served.nr_devices = i + 1;
    snprintf (d->name, sizeof d->name, "nullb%u", i);
    snprintf (d->control_name, sizeof d->control_name, "%s"
              ZN_CONTROL_SUFFIX, d->name);
    struct zn_config cfg;
    char dir[4096];

    d->dev = zn_dev_create (params_device_config (p, i, &cfg, dir, sizeof dir),
                            err, errlen);
    if (d->dev == NULL) {
      if (err[0] == '\0')
        snprintf (err, errlen, "%s", strerror (errno));
      return -1;
    }
    /* An NBD client sees the device as /dev/nullb0's users do, behind
     * the block layer's zone write plugs (6.10+).  An NVMe/TCP host
     * plugs its own /dev/nvmeXnY, as a ublk host plugs /dev/ublkbN: a
     * second plug here would judge its writes twice, so with --nvme the
     * devices have none (and NBD clients of the same server meet the
     * device as null_blk's driver sees it).
     */
    if (nvme_port == NULL
        && zn_dev_write_plugging (d->dev, err, errlen) < 0)
      return -1;
    if (nvme_port
        && nvme_zns_check (zn_dev_geometry (d->dev), err, errlen) == -1)
      return -1;
    if (params_apply (p, d->dev, err, errlen) < 0)
      return -1;
    d->qs = zn_queues_create (tagsets[qcfg.shared_tags ? 0 : i], &qcfg);
    d->ctl = zn_control_create (d->dev);
    if (d->qs == NULL || d->ctl == NULL) {
      snprintf (err, errlen, "out of memory for %s", d->name);
      return -1;
    }
    zn_control_set_queues (d->ctl, d->qs, &qcfg, &p->cfg, i, p->nr_devices);
    zn_control_allow_faults (d->ctl, true);
  }
  return 0;
}

static void
devices_destroy (void)
{
  for (unsigned i = 0; i < served.nr_devices; i++) {
    zn_control_destroy (served.devices[i].ctl);
    zn_queues_destroy (served.devices[i].qs);
    zn_dev_destroy (served.devices[i].dev);
  }
  free (served.devices);
  for (unsigned i = 0; tagsets && i < nr_tagsets; i++)
    zn_tagset_destroy (tagsets[i]);
  free (tagsets);
}

static void
usage (FILE *fp)
{
  fputs ("Usage: zonednull-server [OPTIONS] [KEY=VALUE...]\n"
         "Serves Linux null_blk's zoned device over NBD from an event loop.\n"
         "\n"
         "Options:\n"
         " -U, --unix PATH      listen on a Unix socket\n"
         " -i, --ipaddr ADDR    TCP address (default 127.0.0.1)\n"
         " -p, --port PORT      TCP port (default 10809)\n"
         " -f, --foreground     do not become a daemon\n"
         " -P, --pidfile FILE   write the PID once listening\n"
         " -r, --readonly       refuse writes, trims and zone commands\n"
         " -v, --verbose        log connections to stderr\n"
         "     --exit-with-parent  stop (as on SIGTERM) when the parent exits\n"
         "     --busy-poll US   poll without sleeping for US microseconds after\n"
         "                      a request (default 20; 0: always sleep)\n"
         "     --timeout S      close a connection that has not finished its\n"
         "                      handshake S seconds after connecting (default\n"
         "                      60; 0: never)\n"
         "     --tls=off|on|require  refuse, allow or require NBD_OPT_STARTTLS\n"
         "     --tls-psk=FILE   TLS with the pre-shared keys of FILE (psktool's\n"
         "                      username:hexkey lines)\n"
         "     --tls-certificates=DIR  TLS with X.509: DIR/server-cert.pem,\n"
         "                      server-key.pem, ca-cert.pem (ca-crl.pem)\n"
         "     --tls-verify-peer  clients need a certificate signed by ca-cert.pem\n"
         "     --nvme[=PORT]    also serve NVMe/TCP on PORT (default 4420) of\n"
         "                      the -i address: each nullbN is namespace N+1\n"
         "                      of a ZNS subsystem (its NQN is printed at start)\n"
         "     --nvme-allow-host=HOSTNQN  only this host may connect over\n"
         "                      NVMe/TCP (repeatable; default: any host)\n"
         "     --nvme-host=HOSTNQN:SECRET[:CTRL_SECRET]  only hosts with a\n"
         "                      DH-HMAC-CHAP secret (DHHC-1:XX:...:) may use the\n"
         "                      subsystem, after authenticating; CTRL_SECRET: the\n"
         "                      controller's, for bidirectional authentication\n"
         "                      (repeatable; @FILE: lines of the same, in a\n"
         "                      file of mode 0600)\n"
         "     --nvme-tls-key=HOSTNQN:NVMeTLSkey-1:01:...:  the host's TLS PSK\n"
         "                      (nvme gen-tls-key; repeatable): with --tls=on\n"
         "                      NVMe/TCP allows TLS, with --tls=require needs it\n"
         "     --nvme-tls-keys=FILE  such lines, from a file of mode 0600\n"
         "     --nvme-tls-compat  derive the TLS PSKs as nvme-cli before 2.15\n"
         "                      (and its --compat) does\n"
         "     --threads N      event loops, each serving its share of the\n"
         "                      connections (default: one per CPU, at most 8)\n"
         "     --io-threads N   storage workers that run the reads, writes,\n"
         "                      flushes and zone resets of backing_dir devices\n"
         "                      off the event loops (default 16; 0: the loops\n"
         "                      run them)\n"
         "     --stats          count requests, system calls and loop wake-ups,\n"
         "                      time each request from its arrival to its\n"
         "                      reply; print them as one line on stderr at\n"
         "                      SIGUSR1 and at exit (needs -f to be seen)\n"
         " -h, --help           this text\n"
         " -V, --version        the version\n"
         "\n"
         "Device parameters, KEY=VALUE, as the nbdkit plugin's (see\n"
         "nbdkit-zonednull-plugin(1)):\n", fp);
  params_print_help (fp);
  fputs ("\n"
         "Exports: nullb0 (the default) ... nullb<nr_devices-1>, each with\n"
         "/control (zonednull-control(5)).  NVMe/TCP: subsystem\n"
         "nqn.2026-12.org.zonednull:HOSTNAME:PORT.  See zonednull-server(8).\n", fp);
}

/* A whole number option's value, from min to max, in *n; false when
 * not, told as OPT 'ARG': must be a whole number RULE.
 */
static bool
whole_number (const char *opt, const char *arg, unsigned long min,
              unsigned long max, const char *rule, unsigned long *n)
{
  char *end;

  errno = 0;
  *n = strtoul (arg, &end, 10);
  if (!errno && end != arg && !*end && arg[0] != '-' && *n >= min
      && *n <= max)
    return true;
  fprintf (stderr, "zonednull-server: %s '%s': must be a whole number %s\n",
           opt, arg, rule);
  return false;
}

/* The default --threads: the CPUs this process may run on, at most 8
 * (a test farm's server should not take a big machine's every core).
 */
static unsigned
default_threads (void)
{
  cpu_set_t set;
  int n;

  if (sched_getaffinity (0, sizeof set, &set) == -1
      || (n = CPU_COUNT (&set)) < 1)
    return 1;
  return n > 8 ? 8 : (unsigned) n;
}

/* --timeout S: seconds, fractions allowed, at most a day. */
static int
parse_timeout (const char *arg)
{
  char *end;
  double t;

  errno = 0;
  t = strtod (arg, &end);
  if (errno || end == arg || *end || !(t >= 0. && t <= 86400.)) {
    fprintf (stderr, "zonednull-server: --timeout '%s': must be a number of "
             "seconds from 0 (no limit) to 86400\n", arg);
    return -1;
  }
  handshake_timeout = t;
  return 0;
}

/* -p PORT: a number from 1 to 65535, or a service name for getaddrinfo
 * (which would take 99999 as port 34463).
 */
static int
parse_port (const char *arg)
{
  char *end;
  unsigned long n;

  if (arg[0] >= '0' && arg[0] <= '9') {
    errno = 0;
    n = strtoul (arg, &end, 10);
    if (errno || *end || n == 0 || n > 65535) {
      fprintf (stderr, "zonednull-server: -p '%s': a port number must be "
               "from 1 to 65535\n", arg);
      return -1;
    }
  }
  port = arg;
  return 0;
}

/* Long options without a short one. */
enum {
  OPT_TLS = 256, OPT_TLS_PSK, OPT_TLS_CERTIFICATES, OPT_TLS_VERIFY_PEER,
  OPT_NVME, OPT_NVME_ALLOW_HOST, OPT_NVME_HOST, OPT_NVME_TLS_KEY,
  OPT_NVME_TLS_KEYS, OPT_NVME_TLS_COMPAT, OPT_STATS, OPT_IO_THREADS,
  OPT_THREADS,
};

/* --nvme[=PORT]: a port number from 1 to 65535. */
static int
parse_nvme_port (const char *arg)
{
  char *end;
  unsigned long n;

  if (arg == NULL) {
    nvme_port = "4420";
    return 0;
  }
  errno = 0;
  n = strtoul (arg, &end, 10);
  if (errno || end == arg || *end || arg[0] < '0' || arg[0] > '9'
      || n == 0 || n > 65535) {
    fprintf (stderr, "zonednull-server: --nvme '%s': a port number must be "
             "from 1 to 65535\n", arg);
    return -1;
  }
  nvme_port = arg;
  return 0;
}

/* --nvme-allow-host=HOSTNQN, repeatable. */
static int
parse_allow_host (const char *arg)
{
  const char **p;

  if (arg[0] == '\0' || strlen (arg) > NVME_NQN_MAX) {
    fprintf (stderr, "zonednull-server: --nvme-allow-host '%s': a host NQN "
             "must have 1 to %d characters\n", arg, NVME_NQN_MAX);
    return -1;
  }
  p = realloc (allowed_hosts, (nr_allowed_hosts + 1) * sizeof *p);
  if (p == NULL) {
    fputs ("zonednull-server: out of memory\n", stderr);
    return -1;
  }
  allowed_hosts = p;
  allowed_hosts[nr_allowed_hosts++] = arg;
  return 0;
}

/* --tls: nbdkit's three words. */
static int
parse_tls (const char *arg)
{
  if (strcmp (arg, "off") == 0)
    tls_settings.mode = TLS_OFF;
  else if (strcmp (arg, "on") == 0)
    tls_settings.mode = TLS_ON;
  else if (strcmp (arg, "require") == 0)
    tls_settings.mode = TLS_REQUIRE;
  else {
    fprintf (stderr, "zonednull-server: --tls '%s': must be off, on or "
             "require\n", arg);
    return -1;
  }
  return 0;
}

static void
stop_cb (struct ev_loop *loop, ev_signal *w, int revents)
{
  (void) w;
  (void) revents;
  ev_break (loop, EVBREAK_ALL);
}

static void
remove_files (void)
{
  if (unix_path)
    unlink (unix_path);
  if (pidfile)
    unlink (pidfile);
}

/* Listening, but the pidfile is not written yet: the socket goes, the
 * pidfile path is not ours to remove.
 */
static int
stop_before_serving (int status)
{
  pidfile = NULL;
  close (listen_fd);
  if (nvme_fd != -1)
    close (nvme_fd);
  remove_files ();
  devices_destroy ();
  tls_deinit ();
  return status;
}

/* NVMe/TCP's TLS follows --tls as NBD's does; its keys are its own.
 * A user who requires TLS must not get an NVMe/TCP port beside NBD that
 * anyone can write through, so --tls=require needs NVMe/TCP keys.
 */
static int
check_nvme_tls (void)
{
  bool keys = nvme_tls_nr_keys () > 0 || nvme_tls_keys;

  if (keys && nvme_port == NULL) {
    fputs ("zonednull-server: --nvme-tls-key and --nvme-tls-keys need "
           "--nvme\n", stderr);
    return 2;
  }
  if (keys && tls_settings.mode == TLS_OFF) {
    fputs ("zonednull-server: --nvme-tls-key and --nvme-tls-keys need "
           "--tls=on or --tls=require\n", stderr);
    return 2;
  }
  if (nvme_tls_compat && !keys) {
    fputs ("zonednull-server: --nvme-tls-compat needs --nvme-tls-key or "
           "--nvme-tls-keys\n", stderr);
    return 2;
  }
  if (nvme_port && tls_settings.mode == TLS_REQUIRE && !keys) {
    fputs ("zonednull-server: --nvme with --tls=require needs the hosts' "
           "TLS keys (--nvme-tls-key or --nvme-tls-keys), or the NVMe/TCP "
           "port would not require TLS\n", stderr);
    return 2;
  }
  return 0;
}

/* The options; 0, or the exit status (-1: success) for main. */
static int
parse_options (int argc, char **argv)
{
  char err[512];
  unsigned long n;
  static const struct option long_options[] = {
    { "unix", required_argument, NULL, 'U' },
    { "ipaddr", required_argument, NULL, 'i' },
    { "port", required_argument, NULL, 'p' },
    { "foreground", no_argument, NULL, 'f' },
    { "pidfile", required_argument, NULL, 'P' },
    { "readonly", no_argument, NULL, 'r' },
    { "verbose", no_argument, NULL, 'v' },
    { "exit-with-parent", no_argument, NULL, 'E' },
    { "busy-poll", required_argument, NULL, 'B' },
    { "timeout", required_argument, NULL, 'T' },
    { "tls", required_argument, NULL, OPT_TLS },
    { "tls-psk", required_argument, NULL, OPT_TLS_PSK },
    { "tls-certificates", required_argument, NULL, OPT_TLS_CERTIFICATES },
    { "tls-verify-peer", no_argument, NULL, OPT_TLS_VERIFY_PEER },
    { "nvme", optional_argument, NULL, OPT_NVME },
    { "nvme-allow-host", required_argument, NULL, OPT_NVME_ALLOW_HOST },
    { "nvme-host", required_argument, NULL, OPT_NVME_HOST },
    { "nvme-tls-key", required_argument, NULL, OPT_NVME_TLS_KEY },
    { "nvme-tls-keys", required_argument, NULL, OPT_NVME_TLS_KEYS },
    { "nvme-tls-compat", no_argument, NULL, OPT_NVME_TLS_COMPAT },
    { "stats", no_argument, NULL, OPT_STATS },
    { "io-threads", required_argument, NULL, OPT_IO_THREADS },
    { "threads", required_argument, NULL, OPT_THREADS },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 },
  };
  unsigned nr_hosts;
  int c;

  while ((c = getopt_long (argc, argv, "U:i:p:fP:rvhV", long_options, NULL)) != -1) {
    switch (c) {
    case 'U': unix_path = optarg; break;
    case 'i': ipaddr = optarg; break;
    case 'p':
      if (parse_port (optarg) == -1)
        return 2;
      port_set = true;
      break;
    case 'f': foreground = true; break;
    case 'P': pidfile = optarg; break;
    case 'r': served.readonly = true; break;
    case 'v': verbose = true; break;
    case 'E': exit_with_parent = true; break;
    case 'B':
      /* Whole microseconds, at most one second. */
      if (!whole_number ("--busy-poll", optarg, 0, 1000000,
                         "of microseconds from 0 to 1000000", &n))
        return 2;
      busy_poll_ns = (uint64_t) n * 1000u;
      break;
    case 'T':
      if (parse_timeout (optarg) == -1)
        return 2;
      break;
    case OPT_IO_THREADS:
      /* More than a few hundred would only cost memory; a disk is
       * kept busy by far fewer.
       */
      if (!whole_number ("--io-threads", optarg, 0, 256,
                         "from 0 (the event loop runs storage I/O) to 256",
                         &n))
        return 2;
      io_threads = (unsigned) n;
      break;
    case OPT_THREADS:
      /* A loop per core is the point; past 64 they would only share
       * cores.
       */
      if (!whole_number ("--threads", optarg, 1, 64,
                         "of event loops from 1 to 64", &n))
        return 2;
      threads = (unsigned) n;
      break;
    case OPT_TLS:
      if (parse_tls (optarg) == -1)
        return 2;
      break;
    case OPT_TLS_PSK: tls_settings.pskfile = optarg; break;
    case OPT_TLS_CERTIFICATES: tls_settings.certdir = optarg; break;
    case OPT_TLS_VERIFY_PEER: tls_settings.verify_peer = true; break;
    case OPT_NVME:
      if (parse_nvme_port (optarg) == -1)
        return 2;
      break;
    case OPT_NVME_ALLOW_HOST:
      if (parse_allow_host (optarg) == -1)
        return 2;
      break;
    case OPT_NVME_HOST:
      nvme_host_given = true;
      if (nvme_hosts_add (optarg) == -1)
        return 2;
      break;
    case OPT_NVME_TLS_KEY:
      if (nvme_tls_key_add (optarg, "--nvme-tls-key", err, sizeof err) == -1) {
        fprintf (stderr, "zonednull-server: %s\n", err);
        return 2;
      }
      break;
    case OPT_NVME_TLS_KEYS: nvme_tls_keys = optarg; break;
    case OPT_NVME_TLS_COMPAT: nvme_tls_compat = true; break;
    case OPT_STATS: stats = true; break;
    case 'h': usage (stdout); return -1;
    case 'V': printf ("zonednull-server %s\n", PACKAGE_VERSION); return -1;
    default: usage (stderr); return 2;
    }
  }
  if (exit_with_parent && !foreground) {
    fputs ("zonednull-server: --exit-with-parent needs -f\n", stderr);
    return 2;
  }
  if (tls_settings.mode == TLS_OFF
      && (tls_settings.pskfile || tls_settings.certdir
          || tls_settings.verify_peer)) {
    fprintf (stderr, "zonednull-server: %s needs --tls=on or --tls=require\n",
             tls_settings.pskfile ? "--tls-psk" : tls_settings.certdir
             ? "--tls-certificates" : "--tls-verify-peer");
    return 2;
  }
  nvme_hosts (&nr_hosts);
  if ((nr_allowed_hosts > 0 || nr_hosts > 0) && nvme_port == NULL) {
    fprintf (stderr, "zonednull-server: %s needs --nvme\n",
             nr_allowed_hosts ? "--nvme-allow-host" : "--nvme-host");
    return 2;
  }
  return check_nvme_tls ();
}

/* A controller's admin queue closes its I/O queues, which other loops
 * may serve.
 */
static void
conn_abort (void *conn)
{
  net_conn_abort_async (conn);
}

static void
conn_idle_timeout (void *conn, unsigned ms)
{
  net_conn_idle_timeout (conn, ms);
}

/* The NVMe/TCP side: the subsystem, shown once, and its listening
 * socket (TCP on the -i address, whatever NBD listens on).  -1 with a
 * message in err.
 */
static int
nvme_prepare (char *err, size_t errlen)
{
  struct nvme_served *nv = &nvme_served;

  nv->program = "zonednull-server";
  nv->verbose = verbose;
  nv->devices = served.devices;
  nv->nr_devices = served.nr_devices;
  nv->readonly = served.readonly;
  nv->admit = sched_admit;
  nv->finish = sched_finish;
  nv->offload = sched_offload;
  nv->room = net_room;
  nv->fits = net_fits;
  nv->abort = conn_abort;
  nv->idle_timeout = conn_idle_timeout;
  nv->stats = stats ? &stats_hooks : NULL;
  nvme_default_nqn (nv->subnqn, sizeof nv->subnqn, nvme_port);
  nv->allowed_hosts = allowed_hosts;
  nv->nr_allowed_hosts = nr_allowed_hosts;
  nv->hosts = nvme_hosts (&nv->nr_hosts);
  nv->auth_required = nvme_host_given;
  snprintf (nv->traddr, sizeof nv->traddr, "%s", ipaddr);
  snprintf (nv->trsvcid, sizeof nv->trsvcid, "%s", nvme_port);
  nv->ipv6 = strchr (ipaddr, ':') != NULL;
  nv->max_queues = qcfg.submit_queues;
  nv->queue_depth = qcfg.hw_queue_depth < 65536 ? qcfg.hw_queue_depth : 65536;
  if (nvme_tls_keys && nvme_tls_keys_load (nvme_tls_keys, err, errlen) == -1)
    return -1;
  /* check_nvme_tls saw the option, not the keys: without one, TLS
   * would stay off and the port serve anyone in clear text.
   */
  if (tls_settings.mode == TLS_REQUIRE && nvme_tls_nr_keys () == 0) {
    snprintf (err, errlen, "--nvme with --tls=require: no NVMe/TCP TLS key "
              "was loaded (--nvme-tls-key, --nvme-tls-keys)");
    return -1;
  }
  if (nvme_tls_nr_keys () > 0) {
    nv->tls = tls_settings.mode == TLS_REQUIRE ? NVME_TLS_REQUIRED
              : NVME_TLS_ALLOWED;
    nvme_tls_configure (nv->subnqn, nvme_tls_compat);
    if (tls_init_nvme (nvme_tls_psk, err, errlen) == -1)
      return -1;
  }
  nvme_fd = net_listen_tcp (ipaddr, nvme_port, err, errlen);
  if (nvme_fd == -1)
    return -1;
  /* Always, before becoming a daemon: how a host names the subsystem. */
  fprintf (stderr, "zonednull-server: NVMe/TCP on %s port %s: subsystem %s, "
           "namespaces 1-%u%s\n", ipaddr, nvme_port, nv->subnqn,
           nv->nr_devices, nv->tls == NVME_TLS_REQUIRED ? ", TLS required"
           : nv->tls == NVME_TLS_ALLOWED ? ", TLS allowed" : "");
  return 0;
}

/* systemd's socket activation, read as sd_listen_fds(3) describes it
 * (LISTEN_PID, LISTEN_FDS, the sockets from fd 3) without linking
 * libsystemd for three lines: one listening socket, the NBD one, in
 * place of -U and -p.  The fd, -1 when none was passed to this process,
 * -2 after a message.
 */
static int
activation_socket (void)
{
  const char *pid = getenv ("LISTEN_PID"), *fds = getenv ("LISTEN_FDS");
  struct sockaddr_storage sa;
  socklen_t len = sizeof sa;
  int listening = 0, type = -1;
  socklen_t optlen = sizeof listening;
  char *end;
  long n;

  if (pid == NULL || fds == NULL)
    return -1;
  errno = 0;
  n = strtol (pid, &end, 10);
  if (errno || end == pid || *end || n != (long) getpid ())
    return -1;                  /* meant for another process */
  if (strcmp (fds, "1") != 0) {
    fprintf (stderr, "zonednull-server: LISTEN_FDS=%s: systemd must pass "
             "exactly one socket, the NBD one (one ListenStream=)\n", fds);
    return -2;
  }
  /* Not for the programs this one might start. */
  unsetenv ("LISTEN_PID");
  unsetenv ("LISTEN_FDS");
  unsetenv ("LISTEN_FDNAMES");
  if (unix_path || port_set) {
    fprintf (stderr, "zonednull-server: %s: the NBD socket comes from "
             "systemd (LISTEN_FDS); -i only places --nvme's port\n",
             unix_path ? "-U" : "-p");
    return -2;
  }
  if (getsockopt (3, SOL_SOCKET, SO_ACCEPTCONN, &listening, &optlen) == -1
      || !listening || getsockname (3, (struct sockaddr *) &sa, &len) == -1) {
    fputs ("zonednull-server: fd 3 from systemd (LISTEN_FDS) is not a "
           "listening socket\n", stderr);
    return -2;
  }
  /* A listening SOCK_SEQPACKET socket passes the test above, but NBD is
   * a byte stream: records would cut requests at their boundaries.
   */
  optlen = sizeof type;
  if (getsockopt (3, SOL_SOCKET, SO_TYPE, &type, &optlen) == -1
      || type != SOCK_STREAM) {
    fprintf (stderr, "zonednull-server: fd 3 from systemd (LISTEN_FDS) is "
             "a %s socket, not SOCK_STREAM: NBD needs ListenStream=\n",
             type == SOCK_SEQPACKET ? "SOCK_SEQPACKET"
             : type == SOCK_DGRAM ? "SOCK_DGRAM" : "non-stream");
    return -2;
  }
  if (fcntl (3, F_SETFD, FD_CLOEXEC) == -1
      || fcntl (3, F_SETFL, fcntl (3, F_GETFL) | O_NONBLOCK) == -1) {
    fprintf (stderr, "zonednull-server: fd 3 from systemd: %s\n",
             strerror (errno));
    return -2;
  }
  listen_tcp = sa.ss_family == AF_INET || sa.ss_family == AF_INET6;
  return 3;
}

/* Devices, TLS credentials and the listening socket; EXIT_FAILURE with
 * everything undone, or 0.
 */
static int
prepare (struct zn_params *params)
{
  char err[512] = "";

  if (params_check (params, err, sizeof err) < 0) {
    fprintf (stderr, "zonednull-server: %s\n", err);
    params_free (params);
    return EXIT_FAILURE;
  }
  if (tls_init (&tls_settings, err, sizeof err) == -1) {
    fprintf (stderr, "zonednull-server: %s\n", err);
    params_free (params);
    tls_deinit ();
    return EXIT_FAILURE;
  }
  served.program = "zonednull-server";
  served.tls = tls_settings.mode;
  qcfg = params->queue;
  pipeline_wait_ns = (uint64_t) (params->cfg.pipeline_wait_ms
                                 ? params->cfg.pipeline_wait_ms
                                 : ZN_PIPELINE_WAIT_MS) * 1000000u;
  served.admit = sched_admit;
  served.finish = sched_finish;
  served.offload = sched_offload;
  served.room = net_room;
  served.stats = stats ? &stats_hooks : NULL;
  if (devices_create (params, err, sizeof err) == -1) {
    fprintf (stderr, "zonednull-server: %s\n", err);
    params_free (params);
    devices_destroy ();
    tls_deinit ();
    return EXIT_FAILURE;
  }
  params_free (params);

  listen_fd = activation_socket ();
  if (listen_fd == -1) {
    listen_tcp = unix_path == NULL;
    listen_fd = unix_path ? net_listen_unix (unix_path, "-U", err, sizeof err)
                          : net_listen_tcp (ipaddr, port, err, sizeof err);
    if (listen_fd == -1)
      fprintf (stderr, "zonednull-server: %s\n", err);
  }
  if (listen_fd < 0) {
    devices_destroy ();
    tls_deinit ();
    return EXIT_FAILURE;
  }
  if (nvme_port && nvme_prepare (err, sizeof err) == -1) {
    fprintf (stderr, "zonednull-server: --nvme: %s\n", err);
    close (listen_fd);
    if (unix_path)
      unlink (unix_path);
    devices_destroy ();
    tls_deinit ();
    return EXIT_FAILURE;
  }
  return 0;
}

/* An event loop past the first (--threads), on its own thread: loop 0,
 * main's, takes the signals and accepts the connections, NBD's and
 * NVMe/TCP's, handing every other one to the next loop in turn.
 */
struct loop_thread {
  pthread_t thread;
  struct ev_loop *loop;
  struct net_server *srv;
  ev_async stop;                /* from loop 0: end ev_run */
  ev_async print;               /* --stats: print its line */
  int started;                  /* sched_loop_start's result; 1: not yet */
  unsigned long accepted;       /* connections it served, once stopped */
};
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t start_cond = PTHREAD_COND_INITIALIZER;

static void
loop_stop_cb (struct ev_loop *loop, ev_async *w, int revents)
{
  (void) w;
  (void) revents;
  ev_break (loop, EVBREAK_ALL);
}

static void
loop_print_cb (struct ev_loop *loop, ev_async *w, int revents)
{
  (void) loop;
  (void) revents;
  net_server_print_stats (w->data);
}

static void *
loop_main (void *arg)
{
  struct loop_thread *t = arg;
  int r = sched_loop_start (t->loop);

  pthread_mutex_lock (&start_lock);
  t->started = r;
  pthread_cond_broadcast (&start_cond);
  pthread_mutex_unlock (&start_lock);
  if (r == 0)
    ev_run (t->loop, 0);
  ev_async_stop (t->loop, &t->stop);
  ev_async_stop (t->loop, &t->print);
  if (stats && r == 0)
    net_server_print_stats (t->srv);
  t->accepted = net_server_accepted (t->srv);
  /* Its connections close here: their scheduling is this thread's. */
  net_server_free (t->srv);
  t->srv = NULL;
  sched_loop_stop ();
  return NULL;
}

static struct loop_thread *loops;       /* loops[0] is main's */
static unsigned nr_loops;
static unsigned nr_running;             /* of loops[1..]: threads made */

/* SIGUSR1 on loop 0: every loop prints its own counters. */
static void
stats_all_cb (struct ev_loop *loop, ev_signal *w, int revents)
{
  (void) loop;
  (void) w;
  (void) revents;
  net_server_print_stats (loops[0].srv);
  for (unsigned i = 1; i <= nr_running; i++)
    ev_async_send (loops[i].loop, &loops[i].print);
}

/* Makes the loops and their servers, all listening; the threads of
 * loops[1..] are started by start_loops.
 */
static int
make_loops (const struct net_settings *set)
{
  static struct net_sched nbd_sched, nvme_sched;
  struct net_server **srvs;

  nr_loops = threads ? threads : default_threads ();
  loops = calloc (nr_loops, sizeof *loops);
  srvs = calloc (nr_loops, sizeof *srvs);
  if (loops == NULL || srvs == NULL) {
    free (srvs);
    return -1;
  }
  nbd_sched = sched_hooks (&nbd_sched_ops);
  nvme_sched = sched_hooks (&nvme_sched_ops);
  for (unsigned i = 0; i < nr_loops; i++) {
    struct net_settings s = *set;

    s.loops = nr_loops;
    s.loop_id = i;
    loops[i].loop = i ? ev_loop_new (EVFLAG_AUTO) : ev_default_loop (0);
    if (loops[i].loop == NULL
        || (srvs[i] = loops[i].srv = net_server_new (loops[i].loop, &s)) == NULL) {
      free (srvs);
      return -1;
    }
    ev_async_init (&loops[i].stop, loop_stop_cb);
    ev_async_init (&loops[i].print, loop_print_cb);
    loops[i].print.data = loops[i].srv;
    if (i > 0) {
      ev_async_start (loops[i].loop, &loops[i].stop);
      ev_async_start (loops[i].loop, &loops[i].print);
    }
  }
  if (net_serve_spread (srvs, nr_loops, listen_fd, listen_tcp, &nbd_protocol,
                        &served, &nbd_sched) == -1) {
    free (srvs);
    return -1;
  }
  listen_fd = -1;               /* the server's now */
  /* A host's queues, each a connection, land on the loops in turn: a
   * controller's queues share it under its lock (proto/nvme/fabrics.c).
   */
  if (nvme_fd != -1) {
    if (net_serve_spread (srvs, nr_loops, nvme_fd, true, &nvme_protocol,
                          &nvme_served, &nvme_sched) == -1) {
      free (srvs);
      return -1;
    }
    nvme_fd = -1;
  }
  free (srvs);
  return 0;
}

/* Starts the threads of loops[1..], the signals left to loop 0; -1 when
 * one failed to start, with a message.
 */
static int
start_loops (void)
{
  sigset_t all, old;
  int r = 0;

  sigfillset (&all);
  pthread_sigmask (SIG_BLOCK, &all, &old);
  for (unsigned i = 1; i < nr_loops; i++) {
    int err;

    loops[i].started = 1;
    if ((err = pthread_create (&loops[i].thread, NULL, loop_main,
                               &loops[i])) != 0) {
      fprintf (stderr, "zonednull-server: starting event loop %u: %s\n", i,
               strerror (err));
      r = -1;
      break;
    }
    nr_running = i;
  }
  pthread_sigmask (SIG_SETMASK, &old, NULL);
  pthread_mutex_lock (&start_lock);
  for (unsigned i = 1; i <= nr_running; i++) {
    while (loops[i].started == 1)
      pthread_cond_wait (&start_cond, &start_lock);
    if (loops[i].started != 0)
      r = -1;
  }
  pthread_mutex_unlock (&start_lock);
  return r;
}

/* Stops the threads of loops[1..] and frees every loop's server (not
 * the loops); the number of connections accepted.
 */
static unsigned long
stop_loops (void)
{
  unsigned long accepted = 0;

  for (unsigned i = 1; i <= nr_running; i++)
    ev_async_send (loops[i].loop, &loops[i].stop);
  for (unsigned i = 1; i <= nr_running; i++)
    pthread_join (loops[i].thread, NULL);
  if (loops[0].srv) {
    if (stats)
      net_server_print_stats (loops[0].srv);
    accepted = net_server_accepted (loops[0].srv);
  }
  for (unsigned i = 0; i < nr_loops; i++) {
    accepted += loops[i].accepted;
    net_server_free (loops[i].srv);
  }
  return accepted;
}

/* The event loops, until a stop signal. */
static int
serve (void)
{
  /* As nbdkit does, a hangup or quit stops the server like SIGTERM. */
  static const int stop_signals[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT };
  ev_signal stoppers[sizeof stop_signals / sizeof stop_signals[0]];
  ev_signal usr1;
  const struct net_settings set = {
    .program = "zonednull-server", .verbose = verbose,
    .handshake_timeout = handshake_timeout, .busy_poll_ns = busy_poll_ns,
    .stats = stats,
  };
  struct ev_loop *loop = ev_default_loop (EVFLAG_AUTO);
  /* Written once the stop signals are ours: a shell's background job
   * starts with SIGINT and SIGQUIT ignored, and a client that stops the
   * server as soon as the pidfile appears must not have its signal lost.
   */
  const char *pid_path = pidfile;
  unsigned long accepted;
  int status = EXIT_SUCCESS, r;

  pidfile = NULL;               /* not ours to remove until written */
  signal (SIGPIPE, SIG_IGN);
  if (loop == NULL) {
    fputs ("zonednull-server: no event loop\n", stderr);
    status = EXIT_FAILURE;
    goto out;
  }
  for (size_t i = 0; i < sizeof stoppers / sizeof stoppers[0]; i++) {
    ev_signal_init (&stoppers[i], stop_cb, stop_signals[i]);
    ev_signal_start (loop, &stoppers[i]);
  }
  ev_signal_init (&usr1, stats_all_cb, SIGUSR1);
  if (make_loops (&set) == -1) {
    fputs ("zonednull-server: out of memory\n", stderr);
    status = EXIT_FAILURE;
    goto out;
  }
  if (sched_init (served.devices, served.nr_devices, zn_queue_timed (&qcfg),
                  &qcfg, pipeline_wait_ns, io_threads) == -1
      || sched_loop_start (loop) == -1 || start_loops () == -1) {
    status = EXIT_FAILURE;
    goto out;
  }
  if (stats)
    ev_signal_start (loop, &usr1);
  if (pid_path && (r = zn_write_pidfile (pid_path)) < 0) {
    fprintf (stderr, "zonednull-server: -P %s: %s\n", pid_path,
             strerror (-r));
    status = EXIT_FAILURE;
    goto out;
  }
  pidfile = pid_path;

  ev_run (loop, 0);

out:
  if (loop) {
    for (size_t i = 0; i < sizeof stoppers / sizeof stoppers[0]; i++)
      ev_signal_stop (loop, &stoppers[i]);
    ev_signal_stop (loop, &usr1);
  }
  accepted = loops ? stop_loops () : 0;
  sched_loop_stop ();
  sched_stop ();
  remove_files ();
  /* Only now: until loop 0's scheduler stopped, it could kick them. */
  for (unsigned i = 1; loops && i < nr_loops; i++)
    if (loops[i].loop)
      ev_loop_destroy (loops[i].loop);
  if (loop)
    ev_loop_destroy (loop);
  free (loops);
  if (listen_fd != -1)
    close (listen_fd);
  if (nvme_fd != -1)
    close (nvme_fd);
  devices_destroy ();
  tls_deinit ();
  nvme_tls_keys_free ();
  free (allowed_hosts);
  nvme_hosts_free ();
  if (verbose && status == EXIT_SUCCESS)
    fprintf (stderr, "zonednull-server: stopped after %lu connections\n",
             accepted);
  return status;
}

int
main (int argc, char **argv)
{
  struct zn_params params;
  char err[512] = "";
  int r;

  /* Output buffers over 1 MiB are mapped on their own and go back to
   * the system once sent; glibc would otherwise raise this threshold
   * after the first such buffer is freed and keep later ones in its heap.
   */
  mallopt (M_MMAP_THRESHOLD, 1 << 20);
  if ((r = parse_options (argc, argv)) != 0)
    return r == -1 ? EXIT_SUCCESS : r;
  params_init (&params);
  for (int i = optind; i < argc; i++)
    if (params_set (&params, argv[i], err, sizeof err) < 0) {
      fprintf (stderr, "zonednull-server: %s\n", err);
      params_free (&params);
      return EXIT_FAILURE;
    }
  if ((r = prepare (&params)) != 0)
    return r;
  /* The death signal goes through the loop like a real SIGTERM, so the
   * socket and pidfile are removed.  Checked after arming: the parent may
   * already be gone.
   */
  if (exit_with_parent) {
    prctl (PR_SET_PDEATHSIG, SIGTERM);
    if (getppid () == 1)
      return stop_before_serving (EXIT_SUCCESS);
  }
  if (!foreground && daemon (1, 0) == -1) {
    fprintf (stderr, "zonednull-server: daemon: %s\n", strerror (errno));
    return stop_before_serving (EXIT_FAILURE);
  }
  return serve ();
}
