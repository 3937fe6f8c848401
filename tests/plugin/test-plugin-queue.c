/* SPDX-License-Identifier: BSD-3-Clause */
/* The queueing model and pipelined zoned writes through nbdkit: libnbd
 * aio keeps many requests in flight on several connections, and the
 * control channel's queue section shows what the server saw.  Only
 * outcomes and counters are checked, never speed.
 *
 * With ZONEDNULL_TARGET=server the same checks run against
 * zonednull-server (tests/server/test-server-queue.sh).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libnbd.h>

#include "../common/check.h"
#include "../common/server-fixture.h"
#include "zonednull/client.h"

#define BLOCK 4096
#define ZONE_BYTES (1 << 20)
#define PER_CONN 16              /* writes per connection, = nbdkit -t */

/* nbdkit -t 16 PLUGIN ARGS... (or zonednull-server ARGS...) on a socket of
 * its own; returns once it listens.
 */
static void
start_server (struct spawned *s, const char *name, const char *const *args)
{
  static const char *const threads[] = { "-t", "16", NULL };

  server_start (s, name, args, &(struct server_opts) { .nbdkit = threads });
}

/* A client of export, or the test fails. */
static struct zn_client *
client (const struct spawned *s, const char *export)
{
  char uri[600];

  server_uri (uri, sizeof uri, s, export);
  return connect_ok (uri);
}

static struct zn_control_queue_info
queue_info (struct zn_client *c)
{
  struct zn_control_queue_info q;

  if (zn_client_queue_info (c, &q) != 0) {
    fprintf (stderr, "zn_client_queue_info: %s\n", zn_client_error (c));
    exit (EXIT_FAILURE);
  }
  return q;
}


/* Runs the handles' state machines until nothing is in flight. */
static void
drain (struct nbd_handle **hs, int n)
{
  for (;;) {
    struct pollfd fds[8];
    int busy = 0;

    for (int i = 0; i < n; i++) {
      unsigned dir;

      fds[i] = (struct pollfd) { .fd = -1 };
      if (nbd_aio_in_flight (hs[i]) == 0)
        continue;
      busy++;
      dir = nbd_aio_get_direction (hs[i]);
      fds[i].fd = nbd_aio_get_fd (hs[i]);
      fds[i].events = (dir & LIBNBD_AIO_DIRECTION_READ ? POLLIN : 0)
        | (dir & LIBNBD_AIO_DIRECTION_WRITE ? POLLOUT : 0);
    }
    if (busy == 0)
      return;
    CHECK (poll (fds, n, -1) > 0);
    for (int i = 0; i < n; i++) {
      if (fds[i].fd == -1)
        continue;
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR))
        CHECK (nbd_aio_notify_read (hs[i]) == 0);
      else if (fds[i].revents & POLLOUT)
        CHECK (nbd_aio_notify_write (hs[i]) == 0);
    }
  }
}

static void
aio_write (struct nbd_handle *h, const void *buf, uint64_t offset,
           struct aio_result *r)
{
  *r = (struct aio_result) { 0 };
  CHECK (nbd_aio_pwrite (h, buf, BLOCK, offset,
                         (nbd_completion_callback) { .callback = aio_completed,
                                                     .user_data = r },
                         0) != -1);
}

static uint64_t
wp_bytes (struct zn_client *c, uint64_t zone_offset)
{
  struct zn_zone z;

  CHECK_EQ (zn_client_report (c, zone_offset / 512, &z, 1), 1);
  return z.wp * 512 - zone_offset;
}

/* 2 x PER_CONN writes to zone 1, all in flight at once: connection A has
 * the even blocks and B the odd ones, each sent highest offset first, so
 * they reach the server out of order.
 */
static void
write_zone_out_of_order (const struct spawned *s, struct aio_result *res,
                         unsigned char (*bufs)[BLOCK])
{
  struct nbd_handle *hs[2] = { nbd_connect_ok (s, ""), nbd_connect_ok (s, "") };
  const int n = 2 * PER_CONN;

  for (int i = n - 1; i >= 0; i--) {
    memset (bufs[i], i + 1, BLOCK);
    aio_write (hs[i % 2], bufs[i], ZONE_BYTES + (uint64_t) i * BLOCK, &res[i]);
  }
  drain (hs, 2);
  for (int i = 0; i < n; i++)
    CHECK (res[i].done);
  nbd_close (hs[0]);
  nbd_close (hs[1]);
}

static void
test_pipelined (void)
{
  const char *const args[] = {
    "size=8", "zone_size=1", "memory_backed=1", "pipeline_zoned_writes=1",
    "pipeline_wait_ms=60000", "irqmode=2", "completion_nsec=100000", NULL,
  };
  struct spawned s;
  struct zn_client *c;
  struct aio_result res[2 * PER_CONN];
  static unsigned char bufs[2 * PER_CONN][BLOCK], got[BLOCK];
  struct zn_control_queue_info q;

  start_server (&s, "pipelined", args);
  c = client (&s, "");
  write_zone_out_of_order (&s, res, bufs);
  for (int i = 0; i < 2 * PER_CONN; i++)
    CHECK_EQ (res[i].err, 0);
  CHECK_EQ (wp_bytes (c, ZONE_BYTES), 2 * PER_CONN * BLOCK);
  for (int i = 0; i < 2 * PER_CONN; i++) {
    CHECK_EQ (zn_client_pread (c, got, BLOCK, ZONE_BYTES + (uint64_t) i * BLOCK), 0);
    CHECK (memcmp (got, bufs[i], BLOCK) == 0);
  }
  q = queue_info (c);
  CHECK (q.queue_flags & ZN_QUEUE_F_PIPELINE);
  CHECK_EQ (q.pipeline_timeouts, 0);
  CHECK_EQ (q.pipeline_failed, 0);
  CHECK_EQ (q.pipeline_waiting, 0);

  /* Behind the wp, and into a full zone: EIO at once. */
  CHECK_EQ (zn_client_pwrite (c, got, BLOCK, ZONE_BYTES), -EIO);
  CHECK_EQ (zn_client_zone_mgmt (c, ZN_OP_FINISH, 2048, 2048), 0);
  CHECK_EQ (zn_client_pwrite (c, got, BLOCK, ZONE_BYTES + 64 * BLOCK), -EIO);
  CHECK_EQ (queue_info (c).pipeline_waited, q.pipeline_waited);
  zn_client_close (c);
  server_stop (&s);
}

/* Strict mode: whatever the order of arrival, the writes that succeeded
 * are exactly those below the final wp, and the rest failed with EIO.
 */
static void
test_strict (void)
{
  const char *const args[] = {
    "size=8", "zone_size=1", "memory_backed=1", NULL,
  };
  struct spawned s;
  struct zn_client *c;
  struct aio_result res[2 * PER_CONN];
  static unsigned char bufs[2 * PER_CONN][BLOCK];
  uint64_t wp;

  start_server (&s, "strict", args);
  c = client (&s, "");
  /* Ahead of the wp: EIO at once, nothing waits. */
  CHECK_EQ (zn_client_pwrite (c, bufs[0], BLOCK, ZONE_BYTES + BLOCK), -EIO);
  write_zone_out_of_order (&s, res, bufs);
  wp = wp_bytes (c, ZONE_BYTES);
  for (int i = 0; i < 2 * PER_CONN; i++) {
    if ((uint64_t) i * BLOCK < wp)
      CHECK_EQ (res[i].err, 0);
    else
      CHECK_EQ (res[i].err, EIO);
  }
  CHECK (!(queue_info (c).queue_flags & ZN_QUEUE_F_PIPELINE));
  CHECK_EQ (queue_info (c).pipeline_waited, 0);
  zn_client_close (c);
  server_stop (&s);
}

/* The bound: a write ahead of the wp that nothing fills fails with EIO,
 * and the control channel says it timed out.
 */
static void
test_pipeline_timeout (void)
{
  const char *const args[] = {
    "size=8", "zone_size=1", "pipeline_zoned_writes=1", "pipeline_wait_ms=10",
    NULL,
  };
  struct spawned s;
  struct zn_client *c;
  static unsigned char buf[BLOCK];
  int err;

  start_server (&s, "timeout", args);
  c = client (&s, "");
  CHECK_EQ (nbd_pwrite (zn_client_data_handle (c), buf, BLOCK, BLOCK, 0), -1);
  CHECK_EQ (nbd_get_errno (), EIO);
  CHECK_EQ (zn_client_data_errno (c, ZN_NBD_CMD_WRITE, BLOCK, BLOCK, &err), 0);
  CHECK_EQ (err, ETIMEDOUT);
  CHECK_EQ (queue_info (c).pipeline_timeouts, 1);
  CHECK_EQ (wp_bytes (c, 0), 0);
  zn_client_close (c);
  server_stop (&s);
}

/* Tags: connection k feeds queue k mod submit_queues; no request fails
 * for want of a tag; no queue (or, with shared_tag_bitmap, no device)
 * ever holds more than hw_queue_depth tags.
 */
static void
test_tags (bool shared_bitmap)
{
  const char *const args[] = {
    "size=8", "zone_size=1", "irqmode=2", "completion_nsec=20000000",
    "hw_queue_depth=2", "submit_queues=2",
    shared_bitmap ? "shared_tag_bitmap=1" : "shared_tag_bitmap=0", NULL,
  };
  struct spawned s;
  struct zn_client *c;
  struct nbd_handle *hs[3];
  struct aio_result res[3][8];
  static unsigned char buf[BLOCK];
  struct zn_control_queue_info q;

  start_server (&s, shared_bitmap ? "bitmap" : "tags", args);
  c = client (&s, "");                  /* its data connection: queue 0 */
  for (int i = 0; i < 3; i++)           /* queues 1, 0, 1 */
    hs[i] = nbd_connect_ok (&s, "nullb0");
  q = queue_info (c);
  CHECK_EQ (q.submit_queues, 2);
  CHECK_EQ (q.tag_pools, shared_bitmap ? 1 : 2);
  CHECK_EQ (q.hw_queue_depth, 2);
  CHECK_EQ (q.irqmode, 2);
  CHECK_EQ (q.completion_nsec, 20000000);
  CHECK_EQ (q.device.connections, 4);
  CHECK_EQ (q.queues[0].connections, 2);
  CHECK_EQ (q.queues[1].connections, 2);

  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 8; j++) {
      res[i][j] = (struct aio_result) { 0 };
      CHECK (nbd_aio_pread (hs[i], buf, BLOCK, (uint64_t) j * BLOCK,
                            (nbd_completion_callback) {
                              .callback = aio_completed, .user_data = &res[i][j] },
                            0) != -1);
    }
  drain (hs, 3);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 8; j++) {
      CHECK (res[i][j].done);
      CHECK_EQ (res[i][j].err, 0);
    }
  q = queue_info (c);
  CHECK_EQ (q.device.completed, 24);
  CHECK_EQ (q.queues[0].completed, 8);
  CHECK_EQ (q.queues[1].completed, 16);
  CHECK_EQ (q.device.in_use, 0);
  CHECK (q.queues[0].peak <= 2 && q.queues[1].peak <= 2);
  CHECK (q.device.peak <= (shared_bitmap ? 2 : 4));
  CHECK (q.device.waited == q.queues[0].waited + q.queues[1].waited);
  for (int i = 0; i < 3; i++)
    nbd_close (hs[i]);
  zn_client_close (c);
  server_stop (&s);
}

/* nr_devices: separate zones and queues per device; shared_tags under
 * its alias host_tags.
 */
static void
test_devices (void)
{
  const char *const args[] = {
    "size=8", "zone_size=1", "nr_devices=3", "host_tags=1", NULL,
  };
  struct spawned s;
  struct zn_client *c0, *c2;
  static unsigned char buf[BLOCK];
  struct zn_control_queue_info q;

  start_server (&s, "devices", args);
  c0 = client (&s, "nullb0");
  c2 = client (&s, "nullb2");
  CHECK_EQ (zn_client_pwrite (c2, buf, BLOCK, 0), 0);
  CHECK_EQ (wp_bytes (c2, 0), BLOCK);
  CHECK_EQ (wp_bytes (c0, 0), 0);
  q = queue_info (c2);
  CHECK_EQ (q.device_index, 2);
  CHECK_EQ (q.nr_devices, 3);
  CHECK (q.queue_flags & ZN_QUEUE_F_SHARED_TAGS);
  CHECK_EQ (q.device.completed, 1);
  CHECK_EQ (queue_info (c0).device.completed, 0);
  zn_client_close (c0);
  zn_client_close (c2);
  server_stop (&s);
}

/* badblocks: by configuration and through the control channel. */
static void
test_badblocks (void)
{
  const char *const args[] = {
    "size=8", "zone_size=1", "zone_nr_conv=1", "memory_backed=1",
    "badblocks=+16-23", "badblocks=+100-199", "badblocks=-100-199", NULL,
  };
  struct spawned s;
  struct zn_client *c;
  static unsigned char buf[BLOCK];

  start_server (&s, "badblocks", args);
  c = client (&s, "");
  CHECK_EQ (queue_info (c).nr_badblocks, 1);
  CHECK_EQ (zn_client_pread (c, buf, BLOCK, 8192), -EIO);
  CHECK_EQ (zn_client_pwrite (c, buf, BLOCK, 8192), -EIO);
  CHECK_EQ (zn_client_pread (c, buf, BLOCK, 12288), 0);
  CHECK_EQ (zn_client_badblocks (c, false, 16, 8), 0);
  CHECK_EQ (queue_info (c).nr_badblocks, 0);
  CHECK_EQ (zn_client_pread (c, buf, BLOCK, 8192), 0);
  /* A bad sector in sequential zone 1: the write fails, the zone opens. */
  CHECK_EQ (zn_client_badblocks (c, true, 2048 + 3, 1), 0);
  CHECK_EQ (zn_client_pwrite (c, buf, BLOCK, ZONE_BYTES), -EIO);
  CHECK_EQ (wp_bytes (c, ZONE_BYTES), 0);
  CHECK_EQ (zn_client_badblocks (c, true, 0, 0), -EINVAL);
  CHECK_EQ (zn_client_badblocks (c, false, 0, 16384), 0);
  CHECK_EQ (zn_client_pwrite (c, buf, BLOCK, ZONE_BYTES), 0);
  zn_client_close (c);
  server_stop (&s);
}

/* cache_size: writes neither flushed nor FUA are lost at a power cycle
 * sent through the control channel, which also empties the zones.
 */
static void
test_cache (void)
{
  const char *const args[] = {
    "size=8", "zone_size=1", "zone_nr_conv=1", "memory_backed=1",
    "cache_size=1", NULL,
  };
  struct spawned s;
  struct zn_client *c;
  struct nbd_handle *h;
  static unsigned char buf[BLOCK], got[BLOCK], zero[BLOCK];
  struct zn_control_queue_info q;

  start_server (&s, "cache", args);
  c = client (&s, "");
  h = zn_client_data_handle (c);
  CHECK_EQ (nbd_can_flush (h), 1);
  CHECK_EQ (nbd_can_fua (h), 1);
  memset (buf, 0x3C, sizeof buf);
  CHECK_EQ (nbd_pwrite (h, buf, BLOCK, BLOCK, LIBNBD_CMD_FLAG_FUA), 0);
  CHECK_EQ (nbd_pwrite (h, buf, BLOCK, 2 * BLOCK, 0), 0);
  CHECK_EQ (nbd_flush (h, 0), 0);                        /* 1 and 2 kept */
  CHECK_EQ (nbd_pwrite (h, buf, BLOCK, 0, 0), 0);        /* 0 and 3 lost */
  CHECK_EQ (nbd_pwrite (h, buf, BLOCK, 3 * BLOCK, 0), 0);
  CHECK_EQ (nbd_pwrite (h, buf, BLOCK, ZONE_BYTES, 0), 0);           /* zone 1 */
  q = queue_info (c);
  CHECK_EQ (q.cache_size, 1 << 20);
  CHECK_EQ (q.cache_dirty, 2 * BLOCK);
  CHECK_EQ (zn_client_power_cycle (c), 0);
  CHECK_EQ (queue_info (c).cache_dirty, 0);
  for (int i = 0; i < 4; i++) {
    CHECK_EQ (nbd_pread (h, got, BLOCK, (uint64_t) i * BLOCK, 0), 0);
    CHECK (memcmp (got, i == 1 || i == 2 ? buf : zero, BLOCK) == 0);
  }
  CHECK_EQ (wp_bytes (c, ZONE_BYTES), 0);
  zn_client_close (c);
  server_stop (&s);
}

int
main (void)
{
  fixture_init (__FILE__, "queue", false);
  fixture_use (getenv ("ZONEDNULL_TARGET")
               && strcmp (getenv ("ZONEDNULL_TARGET"), "server") == 0);
  test_pipelined ();
  test_strict ();
  test_pipeline_timeout ();
  test_tags (false);
  test_tags (true);
  test_devices ();
  test_badblocks ();
  test_cache ();
  printf ("test-plugin-queue: all checks passed\n");
  return EXIT_SUCCESS;
}
