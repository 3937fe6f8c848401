/* SPDX-License-Identifier: BSD-3-Clause */
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
 * This file has the engine's options and the table of hooks fio calls;
 * conn.c the connections, setup and init, io.c the data path, zones.c the
 * zone hooks, internal.h the state they share.  Build against the source
 * of the installed fio: see engine/local.mk and zonednull-fio(1).
 */
#include <stddef.h>

#include "internal.h"
#include "optgroup.h"

/* ---- options ------------------------------------------------------------ */

struct fio_option zf_options[] = {
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
  .options = zf_options,
  .option_struct_size = sizeof (struct zf_fio_options),
};
