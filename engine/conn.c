/* SPDX-License-Identifier: BSD-3-Clause */
/* zonednull-fio: the job's connections, setup, init and cleanup. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

/* ---- connections -------------------------------------------------------- */

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
 * temporary one, which the caller closes with zf_put_client().
 */
struct zn_client *
zf_get_client (struct thread_data *td)
{
  struct zf_engine *e = td->io_ops_data;

  /* e is set by init() in the job; the pid check guards against a handle
   * inherited over fork, which belongs to the other process.
   */
  if (e && e->zc && e->owner == getpid ())
    return e->zc;
  return connect_client (td);
}

void
zf_put_client (struct thread_data *td, struct zn_client *zc)
{
  struct zf_engine *e = td->io_ops_data;

  if (zc && !(e && zc == e->zc))
    zn_client_close (zc);
}

/* A further data connection of the job, to the client's URI, in a
 * error log of its own so that its failures have exact errnos.
 */
static struct nbd_handle *
connect_data (struct zn_client *zc, const char *uri, uint64_t *errlog)
{
  struct nbd_handle *h = zn_client_open_data (zc, errlog);

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
int
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
    uint64_t errlog = 0;
    struct nbd_handle *h = connect_data (e->zc, uri, &errlog);

    if (h == NULL)
      return -1;
    e->conns[e->nconns].errlog = errlog;
    e->conns[e->nconns].h = h;
    e->conns[e->nconns].owned = true;
    e->nconns++;
  }
  return 0;
}

/* Runs in the job's process (or thread): its connections and state. */
int
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

void
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

int
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

void
zf_io_u_free (struct thread_data *td, struct io_u *io_u)
{
  (void) td;
  free (io_u->engine_data);
  io_u->engine_data = NULL;
}

int
zf_open_file (struct thread_data *td, struct fio_file *f)
{
  (void) td;
  (void) f;
  return 0;                     /* the connections are the job's */
}

int
zf_invalidate (struct thread_data *td, struct fio_file *f)
{
  (void) td;
  (void) f;
  return 0;                     /* no cache on this side */
}
