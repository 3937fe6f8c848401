/* SPDX-License-Identifier: BSD-3-Clause */
/* libzonednull-client: the control channel on two libnbd handles.
 * See include/zonednull/client.h for the API and control.h for the wire
 * format.  libnbd does every bit of NBD; this file only builds commands,
 * decodes pages and turns results into errnos and messages.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <libnbd.h>

#include "zonednull/client.h"

#include "checks.h"
#include "util/clock.h"
#include "wire/control-wire.h"
#include "internal.h"

/* Descriptors per pread of the zone area: 1 MiB, well under the 64 MiB
 * that nbdkit and libnbd accept in one request.
 */
#define REPORT_BATCH ((1u << 20) / ZN_CONTROL_ZONE_SIZE)


void
set_error (struct zn_client *c, const char *fmt, ...)
{
  va_list ap;

  va_start (ap, fmt);
  vsnprintf (c->error, sizeof c->error, fmt, ap);
  va_end (ap);
}

/* libnbd's errno for the failed call, never 0 (a failure must stay one). */
static int
nbd_errno (void)
{
  int err = nbd_get_errno ();

  return err > 0 ? err : EIO;
}

/* libnbd accepts "nbd://" and "nbds://" without a host and connects to
 * localhost then.  A CLI aimed at remote targets should say that the host
 * is missing instead of reaching whatever listens locally.
 */
static bool
tcp_uri_without_host (const char *uri)
{
  const char *auth, *end, *at;

  if (strncmp (uri, "nbd://", 6) == 0)
    auth = uri + 6;
  else if (strncmp (uri, "nbds://", 7) == 0)
    auth = uri + 7;
  else
    return false;
  end = auth + strcspn (auth, "/?#");
  /* The user name for TLS comes before the host. */
  at = memchr (auth, '@', (size_t) (end - auth));
  if (at)
    auth = at + 1;
  return auth == end || *auth == ':';
}

static struct nbd_handle *
new_handle (void)
{
  struct nbd_handle *h = nbd_create ();

  /* TLS certificates and PSK files are named in the URI's query, as
   * nbdinfo and nbdcopy allow.
   */
  if (h && nbd_set_uri_allow_local_file (h, true) == -1) {
    nbd_close (h);
    return NULL;
  }
  return h;
}

/* ---- waiting for the server, with a bound ------------------------------ */

static int64_t
deadline (const struct zn_client *c)
{
  return c->timeout_ms ? zn_now_ms () + c->timeout_ms : -1;
}

static int
lost (struct zn_client *c)
{
  set_error (c, "the connection was given up after an earlier request "
             "timed out");
  return -ETIMEDOUT;
}

/* Runs h's state machine, as libnbd's own blocking calls do, until
 * done (h, arg) holds or the deadline (-1: none) passes.  Returns 0,
 * -ETIMEDOUT (the client is lost from then on), or libnbd's errno when
 * the connection failed; what names the wait in the message.
 */
static int
run_until (struct zn_client *c, struct nbd_handle *h, int64_t until,
           bool (*done) (struct nbd_handle *h, void *arg), void *arg,
           const char *what)
{
  while (!done (h, arg)) {
    int timeout = -1;

    if (until >= 0) {
      int64_t left = until - zn_now_ms ();

      if (left <= 0) {
        c->lost = true;
        set_error (c, "%s: the server did not answer within the timeout "
                   "(%u.%03u s)", what, c->timeout_ms / 1000,
                   c->timeout_ms % 1000);
        return -ETIMEDOUT;
      }
      timeout = left > INT_MAX ? INT_MAX : (int) left;
    }
    if (nbd_poll (h, timeout) == -1) {
      int err = nbd_errno ();

      set_error (c, "%s: %s", what, nbd_get_error ());
      return -err;
    }
  }
  return 0;
}

/* Connecting covers the handshake and an option being negotiated; it
 * ends ready, negotiating (in option mode, or after a refused option),
 * or dead.
 */
static bool
not_connecting (struct nbd_handle *h, void *arg)
{
  (void) arg;
  return !nbd_aio_is_connecting (h);
}

static bool
closed (struct nbd_handle *h, void *arg)
{
  (void) arg;
  return nbd_aio_is_closed (h) || nbd_aio_is_dead (h);
}

struct command_wait {
  int64_t cookie;
  int result;                   /* nbd_aio_command_completed's */
};

static bool
command_done (struct nbd_handle *h, void *arg)
{
  struct command_wait *w = arg;

  w->result = nbd_aio_command_completed (h, w->cookie);
  return w->result != 0;
}

/* Waits for the aio command cookie on h.  Returns 0, or a negative
 * errno with the message in c->error; *replied (if not NULL) says
 * whether the server answered the request with an error, as opposed to
 * a request that never reached it or a connection that failed.
 */
static int
wait_command (struct zn_client *c, struct nbd_handle *h, int64_t cookie,
              const char *what, bool *replied)
{
  struct command_wait w = { .cookie = cookie };
  int r;

  if (replied)
    *replied = false;
  if (cookie == -1) {
    int err = nbd_errno ();

    set_error (c, "%s: %s", what, nbd_get_error ());
    return -err;
  }
  r = run_until (c, h, deadline (c), command_done, &w, what);
  if (r < 0)
    return r;
  if (w.result == -1) {
    int err = nbd_errno ();

    set_error (c, "%s: %s", what, nbd_get_error ());
    if (replied)
      *replied = nbd_aio_is_ready (h);
    return -err;
  }
  return 0;
}

int
client_ctl_pread (struct zn_client *c, void *buf, size_t count,
                  uint64_t offset, const char *what)
{
  if (c->lost)
    return lost (c);
  return wait_command (c, c->ctl,
                       nbd_aio_pread (c->ctl, buf, count, offset,
                                      NBD_NULL_COMPLETION, 0),
                       what, NULL);
}

static int
ctl_pwrite (struct zn_client *c, const void *buf, size_t count,
            const char *what)
{
  if (c->lost)
    return lost (c);
  return wait_command (c, c->ctl,
                       nbd_aio_pwrite (c->ctl, buf, count, 0,
                                       NBD_NULL_COMPLETION, 0),
                       what, NULL);
}

struct go_wait {
  bool done;
  int err;
};

static int
go_completed (void *user_data, int *error)
{
  struct go_wait *w = user_data;

  w->done = true;
  w->err = *error;
  return 1;
}

/* Connects h to the URI; in option mode it stops at negotiation. */
static int
connect_uri (struct zn_client *c, struct nbd_handle *h, const char *uri)
{
  int r;

  if (nbd_aio_connect_uri (h, uri) == -1) {
    int err = nbd_errno ();

    set_error (c, "%s", nbd_get_error ());
    return -err;
  }
  r = run_until (c, h, deadline (c), not_connecting, NULL, "connecting");
  if (r < 0)
    return r;
  if (nbd_aio_is_dead (h)) {
    set_error (c, "connecting: %s", nbd_get_error ());
    return -ECONNRESET;
  }
  return 0;
}

/* NBD_OPT_GO with the name set on h.  Returns 0 when h is ready, the
 * server's errno (-ENOENT for an unknown export) with h still
 * negotiating, or another negative errno.
 */
static int
opt_go (struct zn_client *c, struct nbd_handle *h)
{
  struct go_wait w = { false, 0 };
  nbd_completion_callback cb = { .callback = go_completed, .user_data = &w };
  int r;

  if (nbd_aio_opt_go (h, cb) == -1) {
    int err = nbd_errno ();

    set_error (c, "%s", nbd_get_error ());
    return -err;
  }
  r = run_until (c, h, deadline (c), not_connecting, NULL,
                 "opening the export");
  if (r < 0)
    return r;
  if (nbd_aio_is_ready (h))
    return 0;
  set_error (c, "%s", nbd_get_error ());
  return w.done && w.err > 0 ? -w.err : -EIO;
}

/* Ends a connection politely, within the timeout: a server left
 * without NBD_CMD_DISC or NBD_OPT_ABORT logs an error (for TLS, an
 * unterminated session).  Never waits on a lost client.
 */
static void
goodbye (struct zn_client *c, struct nbd_handle *h)
{
  int r = -1;

  if (h == NULL)
    return;
  if (!c->lost) {
    if (nbd_aio_is_negotiating (h))
      r = nbd_aio_opt_abort (h);
    else if (nbd_aio_is_ready (h))
      r = nbd_aio_disconnect (h, 0);
    if (r == 0)
      run_until (c, h, deadline (c), closed, NULL, "disconnecting");
  }
  nbd_close (h);
}

/* ---- checking what the server sends (checks.c) ------------------------- */

/* Reads the header page afresh and checks it. */
static int
read_header (struct zn_client *c, struct zn_control_info *info)
{
  int r = client_ctl_pread (c, c->page, sizeof c->page, 0,
                     "reading the control header");

  if (r < 0)
    return r;
  if (zn_control_decode_header (c->page, info) < 0) {
    char why[128];

    zn_describe_bad_header (c->page, why, sizeof why);
    set_error (c, "the control header is not zonednull's: %s", why);
    return -EPROTO;
  }
  if (zn_check_geometry (info, c->error, sizeof c->error) < 0
      || zn_check_same_geometry (&c->geo, info, c->error,
                                 sizeof c->error) < 0)
    return -EPROTO;
  return 0;
}

/* ---- connecting --------------------------------------------------------- */

/* A fresh error log id: random, never 0. */
static uint64_t
new_errlog_id (void)
{
  static uint64_t counter;
  uint64_t id = 0;

  while (id == 0) {
    if (getrandom (&id, sizeof id, 0) != (ssize_t) sizeof id) {
      /* No getrandom (old kernel): mix what differs between clients. */
      struct timespec ts;
      uint64_t z;

      clock_gettime (CLOCK_REALTIME, &ts);
      z = (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec
        + ((uint64_t) getpid () << 32) + ++counter * UINT64_C(0x9e3779b97f4a7c15);
      z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
      z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
      id = z ^ (z >> 31);
    }
  }
  return id;
}

/* Connects a data handle to the URI's export with an error log of its
 * own: option mode swaps in "<device>/session/<id>" for the URI's export
 * name, as connect_control does for the control export.  When the server
 * refuses the name, the handle is dropped and a plain connection tried,
 * so that a server predating error logs is served as before (*errlog 0;
 * the client remembers not to try again) and any other failure is
 * reported in libnbd's own words.  Returns the handle, or NULL with the
 * reason in c->error.
 */
static struct nbd_handle *
connect_data (struct zn_client *c, const char *uri, uint64_t *errlog)
{
  struct nbd_handle *h;

  *errlog = 0;
  if (!c->no_errlogs) {
    char *export = NULL;
    char name[256];
    uint64_t id = new_errlog_id ();
    int n = -1;

    h = new_handle ();
    if (h == NULL || nbd_set_opt_mode (h, true) == -1) {
      set_error (c, "%s", nbd_get_error ());
      nbd_close (h);
      return NULL;
    }
    if (connect_uri (c, h, uri) < 0) {
      nbd_close (h);
      return NULL;
    }
    if (nbd_aio_is_negotiating (h)
        && (export = nbd_get_export_name (h)) != NULL)
      n = zn_control_errlog_name (name, sizeof name, export, id);
    free (export);
    if (n > 0 && (size_t) n < sizeof name
        && nbd_set_export_name (h, name) == 0 && opt_go (c, h) == 0) {
      *errlog = id;
      return h;
    }
    goodbye (c, h);
    if (c->lost)
      return NULL;
  }

  h = new_handle ();
  if (h == NULL) {
    set_error (c, "%s", nbd_get_error ());
    return NULL;
  }
  if (connect_uri (c, h, uri) < 0) {
    nbd_close (h);
    return NULL;
  }
  if (!nbd_aio_is_ready (h)) {
    set_error (c, "%s", nbd_get_error ());
    goodbye (c, h);
    return NULL;
  }
  c->no_errlogs = true;
  return h;
}

/* Connects the control handle: the URI gives the server and the data
 * export's name; option mode then swaps in the control export's name, so
 * the URI's query, encoding and TLS settings are libnbd's business alone.
 * Reads and checks the header, whose geometry the client keeps.
 */
static int
connect_control (struct zn_client *c, const char *uri)
{
  char *export = NULL, *name = NULL;
  const char *device;
  int ret = -1, r;
  int64_t size;

  c->ctl = new_handle ();
  if (c->ctl == NULL || nbd_set_opt_mode (c->ctl, true) == -1) {
    set_error (c, "%s", nbd_get_error ());
    goto out;
  }
  if (connect_uri (c, c->ctl, uri) < 0)
    goto out;
  if (!nbd_aio_is_negotiating (c->ctl)) {
    /* Only an oldstyle server skips option negotiation. */
    set_error (c, "not a zonednull server: the server does not negotiate "
               "export names");
    goto out;
  }
  export = nbd_get_export_name (c->ctl);
  if (export == NULL) {
    set_error (c, "%s", nbd_get_error ());
    goto out;
  }
  device = *export ? export : ZN_DEFAULT_DEVICE;
  name = malloc (strlen (device) + sizeof ZN_CONTROL_SUFFIX);
  if (name == NULL) {
    set_error (c, "%s", strerror (ENOMEM));
    goto out;
  }
  strcpy (name, device);
  strcat (name, ZN_CONTROL_SUFFIX);
  if (nbd_set_export_name (c->ctl, name) == -1) {
    set_error (c, "%s", nbd_get_error ());
    goto out;
  }
  r = opt_go (c, c->ctl);
  if (r == -ENOENT)
    /* libnbd only says "server replied with error to opt_go request". */
    set_error (c, "not a zonednull server: the server has no export named "
               "'%s' (the zone control channel)", name);
  else if (r < 0 && r != -ETIMEDOUT) {
    char why[sizeof c->error];

    snprintf (why, sizeof why, "%s", c->error);
    set_error (c, "control export '%s': %s", name, why);
  }
  if (r < 0)
    goto out;

  size = nbd_get_size (c->ctl);
  if (size < ZN_CONTROL_HEADER_SIZE) {
    set_error (c, "not a zonednull server: export '%s' is too small for a "
               "control header", name);
    goto out;
  }
  if (client_ctl_pread (c, c->page, sizeof c->page, 0,
                 "reading the control header") < 0)
    goto out;
  if (zn_control_decode_header (c->page, &c->geo) < 0) {
    char why[128];

    zn_describe_bad_header (c->page, why, sizeof why);
    set_error (c, "not a zonednull server: %s of export '%s'", why, name);
    goto out;
  }
  if (zn_check_geometry (&c->geo, c->error, sizeof c->error) < 0)
    goto out;
  if ((uint64_t) size < ZN_CONTROL_HEADER_SIZE
      + (uint64_t) c->geo.nr_zones * ZN_CONTROL_ZONE_SIZE) {
    set_error (c, "invalid control header from the server: nr_zones %u "
               "needs %llu bytes of descriptors, export '%s' has %lld "
               "bytes", c->geo.nr_zones,
               (unsigned long long) c->geo.nr_zones * ZN_CONTROL_ZONE_SIZE,
               name, (long long) size);
    goto out;
  }
  c->seq = c->geo.result_seq;
  ret = 0;
 out:
  free (export);
  free (name);
  return ret;
}

struct zn_client *
zn_client_connect_timeout (const char *uri, unsigned timeout_ms, char *err,
                           size_t errlen)
{
  char dummy[1];
  struct zn_client *c;
  int64_t size;

  if (err == NULL || errlen == 0) {
    err = dummy;
    errlen = sizeof dummy;
  }
  if (uri == NULL || *uri == '\0') {
    snprintf (err, errlen, "no URI given");
    return NULL;
  }
  if (tcp_uri_without_host (uri)) {
    snprintf (err, errlen, "the URI names no host: use "
              "nbd://HOST[:PORT]/[EXPORT]");
    return NULL;
  }

  c = calloc (1, sizeof *c);
  if (c == NULL) {
    snprintf (err, errlen, "%s", strerror (ENOMEM));
    return NULL;
  }
  c->timeout_ms = timeout_ms;
  c->uri = strdup (uri);
  if (c->uri == NULL) {
    set_error (c, "%s", strerror (ENOMEM));
    goto fail;
  }
  c->data = connect_data (c, uri, &c->errlog);
  if (c->data == NULL || connect_control (c, uri) < 0)
    goto fail;

  size = nbd_get_size (c->data);
  if (size < 0 || (uint64_t) size != c->geo.capacity * ZN_SECTOR_SIZE) {
    set_error (c, "not a zonednull server: the data export has %lld bytes, "
               "its control header says %llu sectors", (long long) size,
               (unsigned long long) c->geo.capacity);
    goto fail;
  }
  return c;

 fail:
  snprintf (err, errlen, "%s", c->error);
  zn_client_close (c);
  return NULL;
}

struct zn_client *
zn_client_connect (const char *uri, char *err, size_t errlen)
{
  return zn_client_connect_timeout (uri, ZN_CLIENT_TIMEOUT_MS, err, errlen);
}

void
zn_client_close (struct zn_client *c)
{
  if (c == NULL)
    return;
  goodbye (c, c->data);
  goodbye (c, c->ctl);
  free (c->uri);
  free (c);
}

void
zn_client_close_data (struct zn_client *c, struct nbd_handle *h)
{
  goodbye (c, h);
}

void
zn_client_abandon (struct zn_client *c)
{
  c->lost = true;
}

const char *
zn_client_error (const struct zn_client *c)
{
  return c->error;
}

struct nbd_handle *
zn_client_data_handle (struct zn_client *c)
{
  return c->data;
}

int
zn_client_info (struct zn_client *c, struct zn_control_info *info)
{
  return read_header (c, info);
}

int
zn_client_generation (struct zn_client *c, uint64_t *generation)
{
  struct zn_control_info info;
  int r = client_command (c, ZN_CMD_GENERATION, 0, 0, 0, &info);

  if (r == -EINVAL) {
    set_error (c, "the server predates device generations (it refused "
               "GENERATION as unknown)");
    return -EOPNOTSUPP;
  }
  if (r < 0)
    return r;
  if (info.result_errno != 0 || info.result_sector == 0) {
    set_error (c, "the server answered GENERATION with errno %u and "
               "generation %llu; zonednull-control(5) says 0 and a value "
               "other than 0", info.result_errno,
               (unsigned long long) info.result_sector);
    return -EPROTO;
  }
  *generation = info.result_sector;
  return 0;
}

int
zn_client_queue_info (struct zn_client *c, struct zn_control_queue_info *q)
{
  struct zn_control_info info;
  int r = read_header (c, &info);

  if (r < 0)
    return r;
  if (zn_control_decode_queues (c->page, q) < 0) {
    set_error (c, "the server reports no queue section (an older zonednull)");
    return -ENOTSUP;
  }
  return 0;
}

/* Sends one command (for APPEND, followed by its data) and reads its
 * result back.  Returns 0 with the header in *info, or a negative errno
 * if the command did not execute.
 */
int
send_command (struct zn_client *c, enum zn_command op, const void *buf,
              size_t len, struct zn_control_info *info)
{
  int r;

  r = ctl_pwrite (c, buf, len, "sending the command");
  if (r == -EPERM)
    set_error (c, "the server is read-only (%s)", nbd_get_error ());
  else if (r == -EINVAL)
    set_error (c, "the server refused the command as malformed (%s)",
               nbd_get_error ());
  if (r < 0)
    return r;
  r = read_header (c, info);
  if (r < 0)
    return r;
  /* Each connection has its own result, and a client is single-threaded,
   * so anything but the next sequence number means a broken server.
   */
  if (info->result_seq != c->seq + 1 || info->result_op != (uint32_t) op) {
    set_error (c, "the control header does not hold the result of the "
               "command just sent (sequence %llu, expected %llu)",
               (unsigned long long) info->result_seq,
               (unsigned long long) c->seq + 1);
    c->seq = info->result_seq;
    return -EPROTO;
  }
  c->seq = info->result_seq;
  return 0;
}

int
client_command (struct zn_client *c, enum zn_command op, uint64_t sector,
         uint64_t nr_sectors, uint64_t arg, struct zn_control_info *info)
{
  unsigned char cmd[ZN_COMMAND_SIZE];

  zn_control_encode_command (cmd, op, sector, nr_sectors, arg);
  return send_command (c, op, cmd, sizeof cmd, info);
}

bool
client_ask_again (struct zn_client *c, uint32_t err, unsigned *waited_ms)
{
  const struct timespec pause = { 0, 20000000 };

  if (err != EAGAIN || (c->timeout_ms && *waited_ms >= c->timeout_ms))
    return false;
  nanosleep (&pause, NULL);
  *waited_ms += 20;
  return true;
}

/* Runs a command whose result is an errno of the device.  A power cycle
 * waits for a log's snapshot to be copied (EAGAIN), as LOG_STOP does.
 */
int
client_device_command (struct zn_client *c, enum zn_command op, uint64_t sector,
                uint64_t nr_sectors)
{
  struct zn_control_info info;
  unsigned waited = 0;
  int r;

  do
    r = client_command (c, op, sector, nr_sectors, 0, &info);
  while (r == 0 && op == ZN_CMD_POWER_CYCLE
         && client_ask_again (c, info.result_errno, &waited));
  if (r < 0)
    return r;
  if (info.result_errno == EAGAIN && op == ZN_CMD_POWER_CYCLE) {
    set_error (c, "power cycle: a write log's snapshot is still being "
               "copied after %u ms", waited);
    return -EAGAIN;
  }
  if (info.result_errno) {
    set_error (c, "%s", strerror ((int) info.result_errno));
    return -(int) info.result_errno;
  }
  return 0;
}

int
zn_client_zone_mgmt (struct zn_client *c, enum zn_zone_op op,
                     uint64_t sector, uint64_t nr_sectors)
{
  enum zn_command cmd;

  switch (op) {
  case ZN_OP_OPEN: cmd = ZN_CMD_OPEN; break;
  case ZN_OP_CLOSE: cmd = ZN_CMD_CLOSE; break;
  case ZN_OP_FINISH: cmd = ZN_CMD_FINISH; break;
  case ZN_OP_RESET: cmd = ZN_CMD_RESET; break;
  default:
    set_error (c, "unknown zone operation %d", (int) op);
    return -EINVAL;
  }
  return client_device_command (c, cmd, sector, nr_sectors);
}

int
zn_client_set_readonly (struct zn_client *c, uint64_t sector)
{
  return client_device_command (c, ZN_CMD_READONLY, sector, 0);
}

int
zn_client_set_offline (struct zn_client *c, uint64_t sector)
{
  return client_device_command (c, ZN_CMD_OFFLINE, sector, 0);
}

int
zn_client_badblocks (struct zn_client *c, bool bad,
                     uint64_t sector, uint64_t nr_sectors)
{
  int r = client_device_command (c, bad ? ZN_CMD_BADBLOCKS_SET
                                  : ZN_CMD_BADBLOCKS_CLEAR,
                          sector, nr_sectors);

  if (r == -ENOSPC)
    set_error (c, "the bad block table is full (as the kernel's, %d entries "
               "of at most %d sectors)%s", ZN_BADBLOCKS_MAX,
               ZN_BADBLOCKS_MAX_LEN,
               bad ? "; the part that fitted is bad"
                   : ": clearing the range would split an entry");
  return r;
}

int
zn_client_power_cycle (struct zn_client *c)
{
  return client_device_command (c, ZN_CMD_POWER_CYCLE, 0, 0);
}

static int
append (struct zn_client *c, const void *buf, uint64_t sector,
        uint64_t nr_sectors, bool fua, uint64_t *written)
{
  struct zn_control_info info;
  unsigned char *msg;
  size_t len;
  int r;

  if (c->geo.max_append_sectors == 0) {
    set_error (c, "the server predates zone append (its control header "
               "advertises no max_append_sectors)");
    return -EOPNOTSUPP;
  }
  /* The block layer fails an append it would have to split with EIO;
   * refusing it here also keeps the write within the control export,
   * which the server sizes for the largest append only.
   */
  if (nr_sectors > c->geo.max_append_sectors) {
    set_error (c, "zone append of %llu sectors exceeds the device's "
               "max_append_sectors (%u): an append cannot be split",
               (unsigned long long) nr_sectors, c->geo.max_append_sectors);
    return -EIO;
  }
  len = ZN_COMMAND_SIZE + (size_t) nr_sectors * ZN_SECTOR_SIZE;
  msg = malloc (len);
  if (msg == NULL) {
    set_error (c, "%s", strerror (ENOMEM));
    return -ENOMEM;
  }
  zn_control_encode_command (msg, ZN_CMD_APPEND, sector, nr_sectors,
                             fua ? ZN_APPEND_F_FUA : 0);
  if (nr_sectors)
    memcpy (msg + ZN_COMMAND_SIZE, buf, len - ZN_COMMAND_SIZE);
  r = send_command (c, ZN_CMD_APPEND, msg, len, &info);
  free (msg);
  if (r < 0)
    return r;
  if (info.result_errno) {
    set_error (c, "zone append of %llu sector%s to the zone at sector %llu: "
               "%s", (unsigned long long) nr_sectors, nr_sectors == 1 ? "" : "s",
               (unsigned long long) sector, strerror ((int) info.result_errno));
    return -(int) info.result_errno;
  }
  if (info.result_sector < sector
      || info.result_sector - sector >= c->geo.zone_sectors) {
    set_error (c, "the server says the append landed at sector %llu, "
               "outside the zone at sector %llu",
               (unsigned long long) info.result_sector,
               (unsigned long long) sector);
    return -EPROTO;
  }
  if (written)
    *written = info.result_sector;
  return 0;
}

int
zn_client_append (struct zn_client *c, const void *buf, uint64_t sector,
                  uint64_t nr_sectors, uint64_t *written)
{
  return append (c, buf, sector, nr_sectors, false, written);
}

int
zn_client_append_fua (struct zn_client *c, const void *buf, uint64_t sector,
                      uint64_t nr_sectors, uint64_t *written)
{
  return append (c, buf, sector, nr_sectors, true, written);
}

struct nbd_handle *
zn_client_open_data (struct zn_client *c, uint64_t *errlog)
{
  uint64_t id;
  struct nbd_handle *h;
  int64_t size;

  if (c->lost) {
    lost (c);
    return NULL;
  }
  h = connect_data (c, c->uri, &id);
  if (h == NULL)
    return NULL;
  size = nbd_get_size (h);
  if (size < 0 || (uint64_t) size != c->geo.capacity * ZN_SECTOR_SIZE) {
    set_error (c, "the data export has %lld bytes, its control header says "
               "%llu sectors", (long long) size,
               (unsigned long long) c->geo.capacity);
    goodbye (c, h);
    return NULL;
  }
  if (errlog)
    *errlog = id;
  return h;
}

int
zn_client_errlog_errno (struct zn_client *c, uint64_t errlog,
                        uint32_t nbd_cmd, uint64_t offset, uint64_t count,
                        int *err)
{
  unsigned char msg[ZN_COMMAND_SIZE + ZN_ERRLOG_ERRNO_SIZE];
  struct zn_control_info info;
  int r;

  /* No error log (a server that predates them): the device-wide one. */
  if (errlog == 0)
    r = client_command (c, ZN_CMD_DATA_ERRNO, offset, count, nbd_cmd, &info);
  else {
    zn_control_encode_errlog_errno (msg, errlog, nbd_cmd, offset, count);
    r = send_command (c, ZN_CMD_ERRLOG_ERRNO, msg, sizeof msg, &info);
  }
  if (r < 0)
    return r;
  *err = (int) info.result_errno;
  return 0;
}

/* The client's own data connection has an error log of its own when the
 * server has them, so the answer is this client's alone.
 */
int
zn_client_data_errno (struct zn_client *c, uint32_t nbd_cmd,
                      uint64_t offset, uint64_t count, int *err)
{
  return zn_client_errlog_errno (c, c->errlog, nbd_cmd, offset, count, err);
}

int
zn_client_report (struct zn_client *c, uint64_t sector,
                  struct zn_zone *zones, unsigned max)
{
  uint64_t idx, n;
  unsigned char *buf;
  unsigned done = 0;

  if (sector >= c->geo.capacity || max == 0)
    return 0;
  idx = sector / c->geo.zone_sectors;
  if (idx >= c->geo.nr_zones)
    return 0;
  n = c->geo.nr_zones - idx;
  if (n > max)
    n = max;
  if (n > INT_MAX)
    n = INT_MAX;

  buf = malloc ((n < REPORT_BATCH ? n : REPORT_BATCH) * ZN_CONTROL_ZONE_SIZE);
  if (buf == NULL) {
    set_error (c, "%s", strerror (ENOMEM));
    return -ENOMEM;
  }
  while (done < n) {
    uint64_t k = n - done < REPORT_BATCH ? n - done : REPORT_BATCH;
    uint64_t offset = ZN_CONTROL_HEADER_SIZE
      + (idx + done) * ZN_CONTROL_ZONE_SIZE;

    int r = client_ctl_pread (c, buf, k * ZN_CONTROL_ZONE_SIZE, offset,
                       "reading zone descriptors");

    for (uint64_t i = 0; r == 0 && i < k; i++) {
      zn_control_decode_zone (buf + i * ZN_CONTROL_ZONE_SIZE,
                              &zones[done + i]);
      if (zn_check_zone (&c->geo, idx + done + i, &zones[done + i],
                         c->error, sizeof c->error) < 0)
        r = -EPROTO;
    }
    if (r < 0) {
      free (buf);
      return r;
    }
    done += (unsigned) k;
  }
  free (buf);
  return (int) done;
}

/* A data request failed on the server: fetch the device's own errno,
 * which NBD may have flattened to EINVAL.
 */
static int
exact_data_errno (struct zn_client *c, uint32_t nbd_cmd, uint64_t offset,
                  uint64_t count, int nbd_err, const char *nbd_msg)
{
  char msg[sizeof c->error];
  int err = 0;

  snprintf (msg, sizeof msg, "%s", nbd_msg);
  if (zn_client_data_errno (c, nbd_cmd, offset, count, &err) < 0) {
    char why[sizeof c->error];

    snprintf (why, sizeof why, "%s", c->error);
    set_error (c, "%s (the exact errno is unknown: %s)", msg, why);
    return -nbd_err;
  }
  if (err == 0)
    err = nbd_err;
  set_error (c, "%s", strerror (err));
  return -err;
}

/* Runs one aio data command to completion.  Splitting libnbd's outcomes
 * this way tells a server's reply (a completed command with an error,
 * worth asking the control channel about) from a request libnbd refused
 * before sending it (the aio call itself fails).
 */
static int
data_request (struct zn_client *c, uint32_t nbd_cmd, int64_t cookie,
              uint64_t offset, uint64_t count)
{
  bool replied;
  int r = wait_command (c, c->data, cookie,
                        nbd_cmd == ZN_NBD_CMD_READ ? "read" : "write",
                        &replied);

  if (r < 0 && replied)
    return exact_data_errno (c, nbd_cmd, offset, count, -r, c->error);
  return r;
}

int
zn_client_pread (struct zn_client *c, void *buf, size_t count,
                 uint64_t offset)
{
  if (c->lost)
    return lost (c);
  return data_request (c, ZN_NBD_CMD_READ,
                       nbd_aio_pread (c->data, buf, count, offset,
                                      NBD_NULL_COMPLETION, 0),
                       offset, count);
}

static int
pwrite_flags (struct zn_client *c, const void *buf, size_t count,
              uint64_t offset, uint32_t flags)
{
  if (c->lost)
    return lost (c);
  return data_request (c, ZN_NBD_CMD_WRITE,
                       nbd_aio_pwrite (c->data, buf, count, offset,
                                       NBD_NULL_COMPLETION, flags),
                       offset, count);
}

int
zn_client_pwrite (struct zn_client *c, const void *buf, size_t count,
                  uint64_t offset)
{
  return pwrite_flags (c, buf, count, offset, 0);
}

int
zn_client_pwrite_fua (struct zn_client *c, const void *buf, size_t count,
                      uint64_t offset)
{
  return pwrite_flags (c, buf, count, offset, LIBNBD_CMD_FLAG_FUA);
}
