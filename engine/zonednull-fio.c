/* zonednull-fio: a fio ioengine for zonednull devices over NBD.
 *
 * fio's stock nbd engine only moves data; with zonemode=zbd fio then
 * invents zones of its own and never tells the server about a reset, so the
 * server's zone rules are never exercised.  This engine reports the
 * device's real zones to fio (host-managed), resets, finishes and counts
 * open zones through the zone control channel (libzonednull-client), and
 * moves data with libnbd's asynchronous calls over one or more
 * connections.
 *
 * Connections: fio runs setup() and the zone discovery in its main
 * process, then forks (or starts a thread for) each job and calls init()
 * there.  A libnbd handle must not be shared across fork, so setup() and
 * the zone hooks called before init() use short-lived clients, and init()
 * opens the job's own connections.
 *
 * Ordering: NBD servers may execute the requests of one connection out of
 * order (nbdkit runs them on several threads), while fio keeps several
 * writes to one zone in flight and expects them to land in order, as the
 * kernel's mq-deadline scheduler guarantees with zone write locking.  With
 * zone_write_lock=1 (the default) the engine does the same: at most one
 * write per sequential zone is on the wire, later ones wait in a per-zone
 * FIFO inside the engine.  Across jobs fio itself keeps a zone to one job
 * at a time (its zone mutex is held until the I/O completes).
 *
 * Build against the source of the installed fio: see engine/local.mk and
 * zonednull-fio(1).
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libnbd.h>

#include "fio.h"
#include "optgroup.h"
#include "zbd.h"

#include "zonednull/client.h"

#define ENGINE "zonednull"

/* libnbd refuses larger requests; nbdkit too.  A smaller maximum
 * advertised by the server wins (see max_request()).
 */
#define NBD_MAX_REQUEST (64u << 20)

#define MAX_CONNS 64

/* ---- options ------------------------------------------------------------ */

struct zf_fio_options {
  void *pad;                    /* fio stores the thread pointer here */
  char *uri;
  unsigned int conns;
  unsigned int zone_write_lock;
  unsigned int zone_hooks;
  unsigned int server_timeout;
};

static struct fio_option options[] = {
  {
    .name = "uri",
    .lname = "zonednull device URI",
    .type = FIO_OPT_STR_STORE,
    .off1 = offsetof (struct zf_fio_options, uri),
    .help = "libnbd URI of the device's data export, e.g. "
            "nbd+unix:///?socket=/tmp/zn.sock or nbd://host/ (required)",
    .category = FIO_OPT_C_ENGINE,
    .group = FIO_OPT_G_NBD,
  },
  {
    .name = "conns",
    .lname = "NBD connections per job",
    .type = FIO_OPT_INT,
    .off1 = offsetof (struct zf_fio_options, conns),
    .minval = 1,
    .maxval = MAX_CONNS,
    .def = "1",
    .help = "Data connections per job (1-64); a zone's writes always use "
            "the same connection, reads are spread over all",
    .category = FIO_OPT_C_ENGINE,
    .group = FIO_OPT_G_NBD,
  },
  {
    .name = "zone_write_lock",
    .lname = "One write in flight per zone",
    .type = FIO_OPT_INT,
    .off1 = offsetof (struct zf_fio_options, zone_write_lock),
    .minval = 0,
    .maxval = 1,
    .def = "1",
    .help = "1: at most one write per sequential zone in flight, as "
            "mq-deadline's zone write locking; 0: send writes as fio "
            "issues them (needs a server that orders them, e.g. "
            "pipeline_zoned_writes=1)",
    .category = FIO_OPT_C_ENGINE,
    .group = FIO_OPT_G_NBD,
  },
  {
    .name = "zone_hooks",
    .lname = "Report the device's zones to fio",
    .type = FIO_OPT_INT,
    .off1 = offsetof (struct zf_fio_options, zone_hooks),
    .minval = 0,
    .maxval = 1,
    .def = "1",
    .help = "1: the device is host-managed, with its real zones, resets "
            "and limits; 0: report no zones, so that zonemode=zbd emulates "
            "zones in fio as the stock nbd engine does (for tests)",
    .category = FIO_OPT_C_ENGINE,
    .group = FIO_OPT_G_NBD,
  },
  {
    /* fio's own "timeout" is an alias of runtime. */
    .name = "server_timeout",
    .lname = "Seconds to wait for the server",
    .type = FIO_OPT_INT,
    .off1 = offsetof (struct zf_fio_options, server_timeout),
    .minval = 0,
    .maxval = 86400,
    .def = "30",
    .help = "Seconds a request or a zone operation may wait for the "
            "server's answer before the job fails with ETIMEDOUT "
            "(0: wait forever)",
    .category = FIO_OPT_C_ENGINE,
    .group = FIO_OPT_G_NBD,
  },
  {
    .name = NULL,
  },
};

/* ---- engine state ------------------------------------------------------- */

struct zf_engine;

/* Per io_u: where it went and how it ended. */
struct zf_req {
  struct zf_engine *e;
  struct io_u *io_u;
  struct zf_req *next;          /* in a zone's FIFO, or a completion list */
  struct zf_req *sent_prev, *sent_next;  /* on the wire, oldest first */
  int64_t deadline_ms;          /* on the wire: when it times out */
  unsigned conn;
  int error;                    /* positive errno, 0 on success */
  uint32_t nbd_cmd;             /* enum zn_nbd_cmd, for the exact errno */
  bool holds_zone;              /* owns its zone's write lock */
};

struct zf_req_list {
  struct zf_req *head, *tail;
  unsigned count;
};

struct zf_conn {
  struct nbd_handle *h;
  bool owned;                   /* not the client's own data handle */
  uint64_t session;             /* owned: its session (0: the server has none) */
};

/* A sequential zone's write lock, with the writes waiting for it. */
struct zf_zone_lock {
  bool busy;
  struct zf_req_list waiting;
};

struct zf_engine {
  /* The device, learnt by setup() for fio and again by init() for the job. */
  uint64_t size;
  uint64_t zone_bytes;
  uint32_t nr_zones;
  uint32_t nr_conv;
  uint32_t max_request;

  /* The job's connections, opened by init() in the job's process. */
  pid_t owner;
  struct zn_client *zc;
  struct zf_conn conns[MAX_CONNS];
  unsigned nconns;
  unsigned next_read;
  struct zf_zone_lock *locks;   /* NULL without zone_write_lock */
  unsigned timeout_ms;          /* server_timeout; 0: none */
  /* Requests on the wire, in the order sent; all have the same timeout,
   * so the first is the first to time out.
   */
  struct zf_req *sent_head, *sent_tail;
  /* A request timed out: the connections are given up, and libnbd is
   * never polled again, so no callback runs into freed io_us.
   */
  bool lost;

  /* Completed by libnbd, not yet looked at by getevents(). */
  struct zf_req_list finished;
  /* Handed to fio by getevents(), returned one by one by event(). */
  struct zf_req_list ready;
};

static void
list_push (struct zf_req_list *l, struct zf_req *r)
{
  r->next = NULL;
  if (l->tail)
    l->tail->next = r;
  else
    l->head = r;
  l->tail = r;
  l->count++;
}

static struct zf_req *
list_pop (struct zf_req_list *l)
{
  struct zf_req *r = l->head;

  if (r) {
    l->head = r->next;
    if (l->head == NULL)
      l->tail = NULL;
    l->count--;
    r->next = NULL;
  }
  return r;
}

static int64_t
now_ms (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
sent_push (struct zf_engine *e, struct zf_req *r)
{
  r->deadline_ms = e->timeout_ms ? now_ms () + e->timeout_ms : -1;
  r->sent_next = NULL;
  r->sent_prev = e->sent_tail;
  if (e->sent_tail)
    e->sent_tail->sent_next = r;
  else
    e->sent_head = r;
  e->sent_tail = r;
}

static void
sent_remove (struct zf_engine *e, struct zf_req *r)
{
  if (r->sent_prev)
    r->sent_prev->sent_next = r->sent_next;
  else
    e->sent_head = r->sent_next;
  if (r->sent_next)
    r->sent_next->sent_prev = r->sent_prev;
  else
    e->sent_tail = r->sent_prev;
  r->sent_prev = r->sent_next = NULL;
}

/* ---- connections -------------------------------------------------------- */

/* Errors are fio's: a hook that fails sets errno, which fio reports and
 * makes the job's error.
 */
static int
fail_hook (int r)
{
  errno = -r;
  return r;
}

static struct zn_client *
connect_client (struct thread_data *td)
{
  struct zf_fio_options *o = td->eo;
  char err[1024];
  struct zn_client *zc =
    zn_client_connect_timeout (o->uri, o->server_timeout * 1000u, err,
                               sizeof err);

  if (zc == NULL)
    log_err ("%s: uri=%s: %s\n", ENGINE, o->uri, err);
  return zc;
}

/* The client for a zone operation: the job's own once init() ran in this
 * process; before that (setup and zone discovery in fio's main process) a
 * temporary one, which the caller closes with put_client().
 */
static struct zn_client *
get_client (struct thread_data *td)
{
  struct zf_engine *e = td->io_ops_data;

  /* e is set by init() in the job; the pid check guards against a handle
   * inherited over fork, which belongs to the other process.
   */
  if (e && e->zc && e->owner == getpid ())
    return e->zc;
  return connect_client (td);
}

static void
put_client (struct thread_data *td, struct zn_client *zc)
{
  struct zf_engine *e = td->io_ops_data;

  if (zc && !(e && zc == e->zc))
    zn_client_close (zc);
}

/* A further data connection of the job, to the client's URI, in a
 * session of its own so that its failures have exact errnos.
 */
static struct nbd_handle *
connect_data (struct zn_client *zc, const char *uri, uint64_t *session)
{
  struct nbd_handle *h = zn_client_open_data (zc, session);

  if (h == NULL)
    log_err ("%s: uri=%s: %s\n", ENGINE, uri, zn_client_error (zc));
  return h;
}

static void
close_connections (struct zf_engine *e)
{
  for (unsigned i = 0; i < e->nconns; i++) {
    if (e->conns[i].owned)
      zn_client_close_data (e->zc, e->conns[i].h);
    e->conns[i].h = NULL;
  }
  e->nconns = 0;
  zn_client_close (e->zc);
  e->zc = NULL;
}

/* ---- setup, init, cleanup ----------------------------------------------- */

/* Reads the geometry the data path and the zone write locks need. */
static int
learn_device (struct zf_engine *e, struct zn_client *zc)
{
  struct zn_control_info info;
  struct nbd_handle *h = zn_client_data_handle (zc);
  int64_t max;
  int r = zn_client_info (zc, &info);

  if (r < 0) {
    log_err ("%s: reading the device's geometry: %s\n", ENGINE,
             zn_client_error (zc));
    return -1;
  }
  e->size = info.capacity * ZN_SECTOR_SIZE;
  e->zone_bytes = info.zone_sectors * ZN_SECTOR_SIZE;
  e->nr_zones = info.nr_zones;
  e->nr_conv = info.nr_conv;
  max = nbd_get_block_size (h, LIBNBD_SIZE_MAXIMUM);
  e->max_request = max > 0 && max < NBD_MAX_REQUEST ? (uint32_t) max
                                                     : NBD_MAX_REQUEST;
  return 0;
}

/* Zone state is shared between fio jobs by file name, and every file of
 * this engine is the same device: one fixed name per device or fio's
 * zone caches disagree with the device.
 */
static int
check_files (struct thread_data *td)
{
  if (td->o.nr_files > 1 || td->files_index > 1) {
    log_err ("%s: a job has one device: give one filename= (any fixed "
             "name), not nrfiles= or a list\n", ENGINE);
    return -1;
  }
  if (td->o.zone_mode == ZONE_MODE_ZBD && td->o.filename == NULL
      && td->o.numjobs > 1) {
    log_err ("%s: numjobs=%u with zonemode=zbd needs filename= (any "
             "fixed name, the same in every job on this device), so that "
             "the jobs share fio's view of the zones\n", ENGINE,
             td->o.numjobs);
    return -1;
  }
  return 0;
}

/* Runs in fio's main process, before the zone discovery: learns the
 * device's size and presents it to fio as a zoned character device.
 * Nothing is kept: after fork, every job connects and allocates its own
 * state in init(), so none of it is stranded in another process.
 */
static int
zf_setup (struct thread_data *td)
{
  struct zf_fio_options *o = td->eo;
  struct zf_engine e = { 0 };
  struct zn_client *zc;
  struct fio_file *f;
  unsigned i;
  int r;

  if (o->uri == NULL || *o->uri == '\0') {
    log_err ("%s: the uri option is required, e.g. "
             "uri=nbd+unix:///?socket=/tmp/zn.sock\n", ENGINE);
    return 1;
  }
  if (check_files (td) < 0)
    return 1;
  zc = connect_client (td);
  if (zc == NULL)
    return 1;
  r = learn_device (&e, zc);
  zn_client_close (zc);
  if (r < 0)
    return 1;

  if (!td->files_index) {
    add_file (td, ENGINE, 0, 0);
    td->o.nr_files = td->o.nr_files ? : 1;
    td->o.open_files++;
  }
  /* A name that is no local file would make fio treat it as a regular
   * file and never ask for zones.  A character device, unlike a block
   * device, also spares us fio's direct=1 rule for host-managed disks,
   * which means nothing over NBD.
   */
  for_each_file (td, f, i) {
    f->filetype = FIO_TYPE_CHAR;
    f->real_file_size = e.size;
    fio_file_set_size_known (f);
  }
  return 0;
}

static int
open_data_connections (struct zf_engine *e, const char *uri, unsigned n)
{
  struct nbd_handle *first = zn_client_data_handle (e->zc);

  if (n > 1 && nbd_can_multi_conn (first) != 1) {
    log_err ("%s: conns=%u: the server does not allow several connections "
             "to one device (no multi-conn); use conns=1\n", ENGINE, n);
    return -1;
  }
  /* The client's data connection is the first one. */
  e->conns[0].h = first;
  e->conns[0].owned = false;
  e->nconns = 1;
  while (e->nconns < n) {
    uint64_t session = 0;
    struct nbd_handle *h = connect_data (e->zc, uri, &session);

    if (h == NULL)
      return -1;
    e->conns[e->nconns].session = session;
    e->conns[e->nconns].h = h;
    e->conns[e->nconns].owned = true;
    e->nconns++;
  }
  return 0;
}

/* Runs in the job's process (or thread): its connections and state. */
static int
zf_init (struct thread_data *td)
{
  struct zf_fio_options *o = td->eo;
  struct zf_engine *e = calloc (1, sizeof *e);

  if (e == NULL) {
    td_verror (td, errno, "calloc");
    return 1;
  }
  td->io_ops_data = e;
  e->timeout_ms = o->server_timeout * 1000u;
  e->zc = connect_client (td);
  if (e->zc == NULL)
    return 1;
  e->owner = getpid ();
  if (learn_device (e, e->zc) < 0
      || open_data_connections (e, o->uri, o->conns) < 0)
    return 1;
  if (o->zone_write_lock) {
    e->locks = calloc (e->nr_zones, sizeof *e->locks);
    if (e->locks == NULL) {
      td_verror (td, errno, "calloc");
      return 1;
    }
  }
  return 0;
}

static void
zf_cleanup (struct thread_data *td)
{
  struct zf_engine *e = td->io_ops_data;

  if (e == NULL)
    return;
  close_connections (e);
  free (e->locks);
  free (e);
  td->io_ops_data = NULL;
}

static int
zf_io_u_init (struct thread_data *td, struct io_u *io_u)
{
  struct zf_req *r = calloc (1, sizeof *r);

  if (r == NULL)
    return 1;
  r->e = td->io_ops_data;
  r->io_u = io_u;
  io_u->engine_data = r;
  return 0;
}

static void
zf_io_u_free (struct thread_data *td, struct io_u *io_u)
{
  (void) td;
  free (io_u->engine_data);
  io_u->engine_data = NULL;
}

static int
zf_open_file (struct thread_data *td, struct fio_file *f)
{
  (void) td;
  (void) f;
  return 0;                     /* the connections are the job's */
}

static int
zf_invalidate (struct thread_data *td, struct fio_file *f)
{
  (void) td;
  (void) f;
  return 0;                     /* no cache on this side */
}

/* ---- data path ---------------------------------------------------------- */

/* libnbd's completion callback: only records the result.  The follow-up
 * (zone lock, exact errno) needs libnbd calls, which are not allowed on
 * this handle from within its own callback.
 */
static int
on_complete (void *user_data, int *error)
{
  struct zf_req *r = user_data;

  r->error = *error;
  sent_remove (r->e, r);
  list_push (&r->e->finished, r);
  return 1;                     /* retire the command */
}

/* Sends r on its connection.  Returns 0, or a positive errno when libnbd
 * refused to queue it (then the callback never runs).
 */
static int
send_req (struct zf_engine *e, struct zf_req *r)
{
  struct io_u *io_u = r->io_u;
  struct nbd_handle *h = e->conns[r->conn].h;
  nbd_completion_callback cb = { .callback = on_complete, .user_data = r };
  int64_t cookie;

  switch (io_u->ddir) {
  case DDIR_READ:
    cookie = nbd_aio_pread (h, io_u->xfer_buf, io_u->xfer_buflen,
                            io_u->offset, cb, 0);
    break;
  case DDIR_WRITE:
    cookie = nbd_aio_pwrite (h, io_u->xfer_buf, io_u->xfer_buflen,
                             io_u->offset, cb, 0);
    break;
  case DDIR_TRIM:
    cookie = nbd_aio_trim (h, io_u->xfer_buflen, io_u->offset, cb, 0);
    break;
  default:                      /* the sync family */
    cookie = nbd_aio_flush (h, cb, 0);
    break;
  }
  if (cookie == -1) {
    int err = nbd_get_errno ();

    log_err ("%s: %s\n", ENGINE, nbd_get_error ());
    return err > 0 ? err : EIO;
  }
  sent_push (e, r);
  return 0;
}

/* The sequential zone whose write lock a write needs, or -1. */
static int64_t
locked_zone (const struct zf_engine *e, const struct io_u *io_u)
{
  uint64_t zone;

  if (e->locks == NULL || io_u->ddir != DDIR_WRITE || e->zone_bytes == 0)
    return -1;
  zone = io_u->offset / e->zone_bytes;
  if (zone < e->nr_conv || zone >= e->nr_zones)
    return -1;
  return (int64_t) zone;
}

static unsigned
pick_conn (struct zf_engine *e, const struct io_u *io_u)
{
  /* One zone, one connection: a zone's writes leave in fio's order,
   * which a server that pipelines zoned writes relies on.
   */
  if (io_u->ddir == DDIR_WRITE && e->zone_bytes)
    return (unsigned) ((io_u->offset / e->zone_bytes) % e->nconns);
  /* Flushes cover writes completed on any connection (multi-conn). */
  if (io_u->ddir != DDIR_READ)
    return 0;
  e->next_read = (e->next_read + 1) % e->nconns;
  return e->next_read;
}

static uint32_t
nbd_cmd_of (enum fio_ddir ddir)
{
  switch (ddir) {
  case DDIR_READ: return ZN_NBD_CMD_READ;
  case DDIR_WRITE: return ZN_NBD_CMD_WRITE;
  case DDIR_TRIM: return ZN_NBD_CMD_TRIM;
  default: return UINT32_MAX;   /* flush: no device errno to ask for */
  }
}

/* A trim in zonemode=zbd is a zone reset, and fio's write pointer cache
 * must follow it: fio does the reset through our reset_wp hook.  Returns
 * 1 when done (io_u->error set), 0 to send an NBD trim instead (a zone
 * without write pointer).
 */
static int
zbd_trim (struct thread_data *td, struct io_u *io_u)
{
  int ret;

  if (td->o.zone_mode != ZONE_MODE_ZBD || io_u->file->zbd_info == NULL)
    return 0;
  ret = zbd_do_io_u_trim (td, io_u);
  if (ret == 0)
    return 0;
  io_u->error = ret < 0 ? -ret : 0;
  return 1;
}

static enum fio_q_status
zf_queue (struct thread_data *td, struct io_u *io_u)
{
  struct zf_engine *e = td->io_ops_data;
  struct zf_req *r = io_u->engine_data;
  int64_t zone;
  int err;

  fio_ro_check (td, io_u);
  io_u->error = 0;
  r->error = 0;
  r->holds_zone = false;
  r->nbd_cmd = nbd_cmd_of (io_u->ddir);

  if (e->lost) {
    io_u->error = ETIMEDOUT;
    return FIO_Q_COMPLETED;
  }

  if (ddir_rw (io_u->ddir) && io_u->xfer_buflen > e->max_request) {
    log_err ("%s: a %llu-byte request is over the server's maximum of %u "
             "bytes: lower bs\n", ENGINE, io_u->xfer_buflen, e->max_request);
    io_u->error = EINVAL;
    return FIO_Q_COMPLETED;
  }
  if (io_u->ddir == DDIR_TRIM && zbd_trim (td, io_u))
    return FIO_Q_COMPLETED;
  if (io_u->ddir != DDIR_READ && io_u->ddir != DDIR_WRITE
      && io_u->ddir != DDIR_TRIM && !ddir_sync (io_u->ddir)) {
    io_u->error = EINVAL;
    return FIO_Q_COMPLETED;
  }

  r->conn = pick_conn (e, io_u);
  zone = locked_zone (e, io_u);
  if (zone >= 0) {
    struct zf_zone_lock *l = &e->locks[zone];

    if (l->busy) {
      /* Sent when the zone's write in flight completes. */
      list_push (&l->waiting, r);
      return FIO_Q_QUEUED;
    }
    l->busy = true;
    r->holds_zone = true;
  }
  err = send_req (e, r);
  if (err) {
    if (r->holds_zone)
      e->locks[zone].busy = false;   /* nobody waits: it was free */
    r->holds_zone = false;
    io_u->error = err;
    return FIO_Q_COMPLETED;
  }
  return FIO_Q_QUEUED;
}

/* The exact errno the device gave, which NBD cannot carry (for example
 * ETOOMANYREFS over the open limit arrives as EINVAL).
 */
static int
device_errno (struct zf_engine *e, const struct zf_req *r)
{
  const struct zf_conn *conn = &e->conns[r->conn];
  int err = 0;

  if (r->nbd_cmd == UINT32_MAX || e->zc == NULL)
    return r->error;
  /* Each connection's session answers for its own requests alone. */
  if (!conn->owned
      ? zn_client_data_errno (e->zc, r->nbd_cmd, r->io_u->offset,
                              r->io_u->xfer_buflen, &err) < 0
      : zn_client_session_errno (e->zc, conn->session, r->nbd_cmd,
                                 r->io_u->offset, r->io_u->xfer_buflen,
                                 &err) < 0)
    return r->error;
  return err ? err : r->error;
}

/* Passes r's zone lock to the next waiting write, sending it; writes that
 * cannot be sent complete at once with their error.
 */
static void
release_zone (struct zf_engine *e, struct zf_req *r)
{
  struct zf_zone_lock *l =
    &e->locks[r->io_u->offset / e->zone_bytes];
  struct zf_req *next;

  r->holds_zone = false;
  while ((next = list_pop (&l->waiting)) != NULL) {
    int err;

    next->holds_zone = true;
    err = send_req (e, next);
    if (err == 0)
      return;
    next->holds_zone = false;
    next->error = err;
    next->nbd_cmd = UINT32_MAX;  /* never reached the device */
    list_push (&e->ready, next);
  }
  l->busy = false;
}

/* Moves what libnbd completed to the ready list. */
static void
reap_finished (struct zf_engine *e)
{
  struct zf_req *r;

  while ((r = list_pop (&e->finished)) != NULL) {
    if (r->holds_zone)
      release_zone (e, r);
    if (r->error)
      r->error = device_errno (e, r);
    list_push (&e->ready, r);
  }
}

static unsigned
in_flight (const struct zf_engine *e)
{
  unsigned n = 0;

  for (unsigned i = 0; i < e->nconns; i++) {
    int k = nbd_aio_in_flight (e->conns[i].h);

    if (k > 0)
      n += (unsigned) k;
  }
  return n;
}

/* One poll(2) over every connection with commands in flight, then lets
 * libnbd read replies and send what is queued.  Returns the number of
 * ready descriptors, 0 on timeout, -1 on error.
 */
static int
poll_conns (struct zf_engine *e, int timeout_ms)
{
  struct pollfd fds[MAX_CONNS];
  unsigned idx[MAX_CONNS], n = 0;
  int r;

  for (unsigned i = 0; i < e->nconns; i++) {
    struct nbd_handle *h = e->conns[i].h;
    unsigned dir;
    int fd;

    if (nbd_aio_in_flight (h) <= 0)
      continue;
    fd = nbd_aio_get_fd (h);
    if (fd == -1) {
      log_err ("%s: connection %u: %s\n", ENGINE, i, nbd_get_error ());
      return -1;
    }
    dir = nbd_aio_get_direction (h);
    fds[n].fd = fd;
    fds[n].events = (dir & LIBNBD_AIO_DIRECTION_READ ? POLLIN : 0)
                    | (dir & LIBNBD_AIO_DIRECTION_WRITE ? POLLOUT : 0);
    fds[n].revents = 0;
    idx[n++] = i;
  }
  if (n == 0)
    return 0;
  r = poll (fds, n, timeout_ms);
  if (r == -1) {
    if (errno == EINTR)
      return 0;
    log_err ("%s: poll: %s\n", ENGINE, strerror (errno));
    return -1;
  }
  for (unsigned k = 0; k < n; k++) {
    struct nbd_handle *h = e->conns[idx[k]].h;
    int rc = 0;

    if (fds[k].revents & (POLLIN | POLLHUP | POLLERR))
      rc = nbd_aio_notify_read (h);
    if (rc == 0 && (fds[k].revents & POLLOUT))
      rc = nbd_aio_notify_write (h);
    if (rc == -1) {
      log_err ("%s: connection %u: %s\n", ENGINE, idx[k], nbd_get_error ());
      return -1;
    }
  }
  return r;
}

/* The oldest request on the wire is past its deadline: the server stopped
 * answering, or trickles.  Every connection is given up at once, so that
 * nothing is polled again, and the job fails with ETIMEDOUT.
 */
static int
give_up (struct zf_engine *e)
{
  const struct zf_req *r = e->sent_head;

  log_err ("%s: %s of %llu bytes at %llu: no answer from the server "
           "within server_timeout=%u s; giving up the connections\n",
           ENGINE, io_ddir_name (r->io_u->ddir),
           (unsigned long long) r->io_u->xfer_buflen,
           (unsigned long long) r->io_u->offset, e->timeout_ms / 1000);
  e->lost = true;
  zn_client_abandon (e->zc);
  return -ETIMEDOUT;
}

static int
zf_getevents (struct thread_data *td, unsigned int min, unsigned int max,
              const struct timespec *t)
{
  struct zf_engine *e = td->io_ops_data;
  int64_t until = -1;

  if (e->lost)
    return -ETIMEDOUT;
  if (t)
    until = now_ms () + t->tv_sec * 1000 + t->tv_nsec / 1000000;
  /* Replies already on the sockets count even when fio asks for none
   * (min = 0 with iodepth_batch_complete_min=0): without a look at the
   * sockets such calls would never see a completion.
   */
  if (poll_conns (e, 0) < 0)
    return -1;
  for (;;) {
    int64_t wake = until;
    int timeout = -1;

    reap_finished (e);
    if (e->ready.count >= min || in_flight (e) == 0)
      break;
    if (e->sent_head && e->sent_head->deadline_ms >= 0) {
      if (e->sent_head->deadline_ms <= now_ms ())
        return give_up (e);
      if (wake < 0 || e->sent_head->deadline_ms < wake)
        wake = e->sent_head->deadline_ms;
    }
    if (wake >= 0) {
      int64_t left = wake - now_ms ();

      if (left <= 0 && wake == until)
        break;
      timeout = left <= 0 ? 0 : left > INT_MAX ? INT_MAX : (int) left;
    }
    if (poll_conns (e, timeout) < 0)
      return -1;
  }
  return (int) (e->ready.count < max ? e->ready.count : max);
}

/* fio asks for events 0 .. n-1 in order after getevents() returned n. */
static struct io_u *
zf_event (struct thread_data *td, int event)
{
  struct zf_engine *e = td->io_ops_data;
  struct zf_req *r = list_pop (&e->ready);

  (void) event;
  if (r == NULL)
    return NULL;
  r->io_u->error = r->error;
  return r->io_u;
}

/* ---- zone hooks --------------------------------------------------------- */

static int
zf_get_zoned_model (struct thread_data *td, struct fio_file *f,
                    enum zbd_zoned_model *model)
{
  struct zf_fio_options *o = td->eo;

  (void) f;
  *model = o->zone_hooks ? ZBD_HOST_MANAGED : ZBD_NONE;
  return 0;
}

static void
to_fio_zone (struct zbd_zone *z, const struct zn_zone *zz)
{
  z->start = zz->start * ZN_SECTOR_SIZE;
  z->len = zz->len * ZN_SECTOR_SIZE;
  z->capacity = zz->capacity * ZN_SECTOR_SIZE;
  z->wp = zz->wp * ZN_SECTOR_SIZE;
  z->type = zz->type == ZN_ZONE_CONVENTIONAL ? ZBD_ZONE_TYPE_CNV
                                             : ZBD_ZONE_TYPE_SWR;
  switch (zz->cond) {
  case ZN_COND_READONLY:
  case ZN_COND_OFFLINE:
    /* As fio's blkzoned code: never use such a zone.  Their write
     * pointer is all-ones, which fio's zone parser would reject.
     */
    z->cond = ZBD_ZONE_COND_OFFLINE;
    z->wp = z->start;
    break;
  default:
    z->cond = (enum zbd_zone_cond) zz->cond;
    break;
  }
}

/* Fills zones[0 .. nr) from the zone holding offset on; returns the count
 * (0 only past the end, which fio treats as an error) or -errno.
 */
static int
zf_report_zones (struct thread_data *td, struct fio_file *f, uint64_t offset,
                 struct zbd_zone *zones, unsigned int nr)
{
  enum { BATCH = 256 };
  struct zn_zone buf[BATCH];
  struct zn_client *zc = get_client (td);
  unsigned done = 0;
  int ret = 0;

  (void) f;
  if (zc == NULL)
    return fail_hook (-EIO);
  while (done < nr) {
    uint64_t sector = offset / ZN_SECTOR_SIZE;
    int n = zn_client_report (zc, sector, buf,
                              nr - done < BATCH ? nr - done : BATCH);

    if (n < 0) {
      log_err ("%s: zone report at sector %llu: %s\n", ENGINE,
               (unsigned long long) sector, zn_client_error (zc));
      ret = n;
      break;
    }
    if (n == 0)
      break;
    for (int i = 0; i < n; i++)
      to_fio_zone (&zones[done + i], &buf[i]);
    done += (unsigned) n;
    offset = (buf[n - 1].start + buf[n - 1].len) * ZN_SECTOR_SIZE;
  }
  put_client (td, zc);
  return ret < 0 ? fail_hook (ret) : (int) done;
}

static int
zone_op (struct thread_data *td, enum zn_zone_op op, uint64_t offset,
         uint64_t length)
{
  struct zn_client *zc = get_client (td);
  int r;

  if (zc == NULL)
    return fail_hook (-EIO);
  r = zn_client_zone_mgmt (zc, op, offset / ZN_SECTOR_SIZE,
                           length / ZN_SECTOR_SIZE);
  if (r < 0)
    log_err ("%s: %s of %llu bytes at %llu: %s\n", ENGINE, zn_op_name (op),
             (unsigned long long) length, (unsigned long long) offset,
             zn_client_error (zc));
  put_client (td, zc);
  return r < 0 ? fail_hook (r) : 0;
}

/* fio resets one zone at a time, after its I/O to the zone drained. */
static int
zf_reset_wp (struct thread_data *td, struct fio_file *f, uint64_t offset,
             uint64_t length)
{
  (void) f;
  return zone_op (td, ZN_OP_RESET, offset, length);
}

#if FIO_IOOPS_VERSION >= 32
static int
zf_finish_zone (struct thread_data *td, struct fio_file *f, uint64_t offset,
                uint64_t length)
{
  (void) f;
  return zone_op (td, ZN_OP_FINISH, offset, length);
}
#endif

/* The device's limits, read afresh: fio asks in its main process, before
 * any job state exists.
 */
static int
read_limits (struct thread_data *td, uint32_t *max_open, uint32_t *max_active)
{
  struct zn_control_info info;
  struct zn_client *zc = get_client (td);
  int r;

  if (zc == NULL)
    return fail_hook (-EIO);
  r = zn_client_info (zc, &info);
  if (r < 0)
    log_err ("%s: reading the device's limits: %s\n", ENGINE,
             zn_client_error (zc));
  put_client (td, zc);
  if (r < 0)
    return fail_hook (r);
  *max_open = info.max_open;
  *max_active = info.max_active;
  return 0;
}

static int
zf_get_max_open_zones (struct thread_data *td, struct fio_file *f,
                       unsigned int *max_open_zones)
{
  uint32_t max_open, max_active;
  int r = read_limits (td, &max_open, &max_active);

  (void) f;
  if (r < 0)
    return r;
  *max_open_zones = max_open;
#if FIO_IOOPS_VERSION < 33
  /* Without a max-active hook, fio's open limit must also keep the
   * active limit: fio writes a zone until it is full and never closes
   * it, so every zone fio counts as open is an active one on the device.
   */
  if (max_active && (max_open == 0 || max_active < max_open))
    *max_open_zones = max_active;
#endif
  return 0;
}

#if FIO_IOOPS_VERSION >= 33
static int
zf_get_max_active_zones (struct thread_data *td, struct fio_file *f,
                         unsigned int *max_active_zones)
{
  uint32_t max_open, max_active;
  int r = read_limits (td, &max_open, &max_active);

  (void) f;
  if (r < 0)
    return r;
  *max_active_zones = max_active;
  return 0;
}
#endif

/* fio finds this by name after dlopen() (--ioengine=external:PATH). */
struct ioengine_ops ioengine = {
  .name = ENGINE,
  .version = FIO_IOOPS_VERSION,
  .flags = FIO_DISKLESSIO | FIO_NOEXTEND | FIO_NODISKUTIL,
  .setup = zf_setup,
  .init = zf_init,
  .cleanup = zf_cleanup,
  .queue = zf_queue,
  .getevents = zf_getevents,
  .event = zf_event,
  .io_u_init = zf_io_u_init,
  .io_u_free = zf_io_u_free,
  .open_file = zf_open_file,
  .invalidate = zf_invalidate,
  .get_zoned_model = zf_get_zoned_model,
  .report_zones = zf_report_zones,
  .reset_wp = zf_reset_wp,
  .get_max_open_zones = zf_get_max_open_zones,
#if FIO_IOOPS_VERSION >= 32
  .finish_zone = zf_finish_zone,
#endif
#if FIO_IOOPS_VERSION >= 33
  .get_max_active_zones = zf_get_max_active_zones,
#endif
  .options = options,
  .option_struct_size = sizeof (struct zf_fio_options),
};
