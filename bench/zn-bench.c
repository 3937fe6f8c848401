/* SPDX-License-Identifier: BSD-3-Clause */
/* zn-bench: a small libnbd load generator for the seed experiments, used
 * where a run needs an exact number of writes per zone in flight, which
 * fio's stock nbd engine cannot express (examples/pipelined-writes.sh runs
 * the pipelining experiment with fio and zonednull's engine).  One thread
 * drives every connection with libnbd aio and prints one line of results.
 *
 *   zn-bench [options] URI...       one connection per URI (repeat a URI
 *                                   for several connections to a device)
 *   --mode randread                 random reads over --span bytes
 *   --mode zonewrite                sequential writes zone after zone, at
 *                                   most --zone-inflight per zone in flight
 *                                   (1 = zone write locking, as
 *                                   mq-deadline does; = depth: pipelined)
 *   --mode mixed                    random reads, plus sequential writes
 *                                   at the wp of zones owned by each
 *                                   connection (one in flight per zone);
 *                                   --read-pct sets the mix
 *   --depth N  requests in flight per connection (default 16)
 *   --bs N     request size (default 4096)
 *   --zone N   zone size in bytes (default 1 MiB)
 *   --span N   bytes of the device used (default: its size from --offset)
 *   --offset N where the bytes used start (default 0; a multiple of
 *              --zone), so that several zn-bench processes, each one
 *              thread, can share a device without sharing zones
 *   --seconds S  run time (default 3)
 *
 * Output: mode=... iops=... read_iops=... write_iops=... errors=...
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libnbd.h>

#define MAX_CONNS 16
#define MAX_DEPTH 256

enum mode { RANDREAD, ZONEWRITE, MIXED };

struct slot {
  bool busy;
  bool done;
  bool write;
  int err;
  uint64_t zone;
};

struct conn {
  struct nbd_handle *h;
  struct slot slots[MAX_DEPTH];
  uint64_t next_zone;              /* mixed: the next of its zones to write */
};

static enum mode mode = RANDREAD;
static unsigned depth = 16, zone_inflight = 1, read_pct = 70;
static uint64_t bs = 4096, zone_bytes = 1 << 20, span, offset;
static double seconds = 3;
static struct conn conns[MAX_CONNS];
static unsigned nr_conns;
static uint64_t reads, writes, errors;
static uint64_t rng = 88172645463325252ULL;
/* zonewrite / mixed: per zone write pointer and writes in flight. */
static uint64_t *zone_wp;
static unsigned *zone_busy;
static uint64_t nr_zones, cur_zone;
static char *buf;

static uint64_t
xorshift (void)
{
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static double
now (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int
done_cb (void *user_data, int *error)
{
  struct slot *s = user_data;

  s->done = true;
  s->err = *error;
  return 1;
}

static void
issue_read (struct conn *c, struct slot *s)
{
  uint64_t off = offset + xorshift () % (span / bs) * bs;

  *s = (struct slot) { .busy = true };
  if (nbd_aio_pread (c->h, buf, bs, off,
                     (nbd_completion_callback) { .callback = done_cb,
                                                 .user_data = s }, 0) == -1) {
    fprintf (stderr, "zn-bench: %s\n", nbd_get_error ());
    exit (EXIT_FAILURE);
  }
}

static bool
issue_write (struct conn *c, struct slot *s, uint64_t zone)
{
  uint64_t off = offset + zone * zone_bytes + zone_wp[zone];

  *s = (struct slot) { .busy = true, .write = true, .zone = zone };
  zone_wp[zone] += bs;
  zone_busy[zone]++;
  if (nbd_aio_pwrite (c->h, buf, bs, off,
                      (nbd_completion_callback) { .callback = done_cb,
                                                  .user_data = s }, 0) == -1) {
    fprintf (stderr, "zn-bench: %s\n", nbd_get_error ());
    exit (EXIT_FAILURE);
  }
  return true;
}

/* zonewrite: the next write of the stream, if its zone allows one more in
 * flight; the stream moves on when a zone is full, and stops at the end.
 */
static bool
next_stream_write (struct conn *c, struct slot *s)
{
  if (cur_zone < nr_zones && zone_wp[cur_zone] == zone_bytes)
    cur_zone++;
  if (cur_zone >= nr_zones || zone_busy[cur_zone] >= zone_inflight)
    return false;
  return issue_write (c, s, cur_zone);
}

/* mixed: connection i owns zones i, i + n, i + 2n, ...; one write in
 * flight per zone, round robin over its zones.
 */
static bool
next_owned_write (unsigned ci, struct conn *c, struct slot *s)
{
  uint64_t owned = (nr_zones - ci + nr_conns - 1) / nr_conns;

  for (uint64_t tries = 0; tries < owned; tries++) {
    uint64_t zone = ci + (c->next_zone++ % owned) * nr_conns;

    if (zone_busy[zone] == 0 && zone_wp[zone] < zone_bytes)
      return issue_write (c, s, zone);
  }
  return false;
}

static void
refill (unsigned ci)
{
  struct conn *c = &conns[ci];

  for (unsigned i = 0; i < depth; i++) {
    struct slot *s = &c->slots[i];

    if (s->busy && s->done) {
      if (s->err)
        errors++;
      else if (s->write)
        writes++;
      else
        reads++;
      if (s->write)
        zone_busy[s->zone]--;
      s->busy = false;
    }
    if (s->busy)
      continue;
    switch (mode) {
    case RANDREAD:
      issue_read (c, s);
      break;
    case ZONEWRITE:
      next_stream_write (c, s);
      break;
    case MIXED:
      if (xorshift () % 100 < read_pct || !next_owned_write (ci, c, s))
        issue_read (c, s);
      break;
    }
  }
}

static void
usage (void)
{
  fprintf (stderr, "usage: zn-bench [--mode randread|zonewrite|mixed] "
           "[--depth N] [--bs N] [--zone N] [--zone-inflight N] [--span N] "
           "[--offset N] "
           "[--read-pct P] [--seconds S] URI...\n");
  exit (2);
}

int
main (int argc, char **argv)
{
  static const struct option opts[] = {
    { "mode", required_argument, NULL, 'm' },
    { "depth", required_argument, NULL, 'd' },
    { "bs", required_argument, NULL, 'b' },
    { "zone", required_argument, NULL, 'z' },
    { "zone-inflight", required_argument, NULL, 'i' },
    { "span", required_argument, NULL, 's' },
    { "offset", required_argument, NULL, 'o' },
    { "read-pct", required_argument, NULL, 'r' },
    { "seconds", required_argument, NULL, 't' },
    { NULL, 0, NULL, 0 },
  };
  int o;
  double start, end, elapsed;

  while ((o = getopt_long (argc, argv, "", opts, NULL)) != -1) {
    switch (o) {
    case 'm':
      if (strcmp (optarg, "randread") == 0) mode = RANDREAD;
      else if (strcmp (optarg, "zonewrite") == 0) mode = ZONEWRITE;
      else if (strcmp (optarg, "mixed") == 0) mode = MIXED;
      else usage ();
      break;
    case 'd': depth = atoi (optarg); break;
    case 'b': bs = strtoull (optarg, NULL, 0); break;
    case 'z': zone_bytes = strtoull (optarg, NULL, 0); break;
    case 'i': zone_inflight = atoi (optarg); break;
    case 's': span = strtoull (optarg, NULL, 0); break;
    case 'o': offset = strtoull (optarg, NULL, 0); break;
    case 'r': read_pct = atoi (optarg); break;
    case 't': seconds = atof (optarg); break;
    default: usage ();
    }
  }
  if (optind >= argc || argc - optind > MAX_CONNS || depth == 0
      || depth > MAX_DEPTH || zone_bytes == 0 || offset % zone_bytes)
    usage ();
  buf = calloc (1, bs);
  for (int i = optind; i < argc; i++) {
    struct conn *c = &conns[nr_conns++];

    c->h = nbd_create ();
    /* TLS URIs name their PSK file or certificates (tls-psk-file=). */
    if (!c->h || nbd_set_uri_allow_local_file (c->h, true) == -1
        || nbd_connect_uri (c->h, argv[i]) == -1) {
      fprintf (stderr, "zn-bench: %s: %s\n", argv[i], nbd_get_error ());
      return 1;
    }
    if (span == 0) {
      int64_t size = nbd_get_size (c->h);

      if (size < 0 || (uint64_t) size <= offset) {
        fprintf (stderr, "zn-bench: --offset %" PRIu64 " is not below the "
                 "size of %s\n", offset, argv[i]);
        return 1;
      }
      span = size - offset;
    }
  }
  nr_zones = span / zone_bytes;
  zone_wp = calloc (nr_zones + 1, sizeof *zone_wp);
  zone_busy = calloc (nr_zones + 1, sizeof *zone_busy);

  start = now ();
  end = start + seconds;
  for (;;) {
    struct pollfd fds[MAX_CONNS];
    int busy = 0;

    if (now () < end)
      for (unsigned i = 0; i < nr_conns; i++)
        refill (i);
    for (unsigned i = 0; i < nr_conns; i++) {
      unsigned dir = nbd_aio_get_direction (conns[i].h);

      busy += nbd_aio_in_flight (conns[i].h) > 0;
      fds[i] = (struct pollfd) {
        .fd = nbd_aio_get_fd (conns[i].h),
        .events = (dir & LIBNBD_AIO_DIRECTION_READ ? POLLIN : 0)
          | (dir & LIBNBD_AIO_DIRECTION_WRITE ? POLLOUT : 0),
      };
    }
    if (busy == 0)
      break;                 /* time is up (or the zones ran out) */
    if (poll (fds, nr_conns, 1000) < 0)
      return 1;
    for (unsigned i = 0; i < nr_conns; i++) {
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR))
        nbd_aio_notify_read (conns[i].h);
      else if (fds[i].revents & POLLOUT)
        nbd_aio_notify_write (conns[i].h);
    }
  }
  /* Count what completed after the last refill. */
  for (unsigned i = 0; i < nr_conns; i++)
    for (unsigned j = 0; j < depth; j++) {
      struct slot *s = &conns[i].slots[j];

      if (s->busy && s->done)
        *(s->err ? &errors : s->write ? &writes : &reads) += 1;
    }
  elapsed = now () - start;
  printf ("mode=%s conns=%u depth=%u seconds=%.3f iops=%.0f read_iops=%.0f "
          "write_iops=%.0f errors=%" PRIu64 "\n",
          mode == RANDREAD ? "randread" : mode == ZONEWRITE ? "zonewrite"
          : "mixed", nr_conns, depth, elapsed,
          (reads + writes) / elapsed, reads / elapsed, writes / elapsed,
          errors);
  for (unsigned i = 0; i < nr_conns; i++) {
    nbd_shutdown (conns[i].h, 0);
    nbd_close (conns[i].h);
  }
  free (zone_wp);
  free (zone_busy);
  free (buf);
  return 0;
}
