/* SPDX-License-Identifier: BSD-3-Clause */
/* zonednull-fio's internal header: the engine's state, shared by its
 * files (zonednull-fio.c: the options and fio's table of hooks; conn.c:
 * connections, setup, init and cleanup; io.c: the data path; zones.c: the
 * zone hooks).  Nothing here is for other programs.
 */
#ifndef ZONEDNULL_ENGINE_INTERNAL_H
#define ZONEDNULL_ENGINE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <libnbd.h>

#include "fio.h"
#include "zbd.h"

#include "zonednull/client.h"

#define ENGINE "zonednull"

/* libnbd refuses larger requests; nbdkit too.  A smaller maximum
 * advertised by the server wins (see max_request()).
 */
#define NBD_MAX_REQUEST (64u << 20)

#define MAX_CONNS 64

/* The job's options, where fio stores them (td->eo). */
struct zf_fio_options {
  void *pad;                    /* fio stores the thread pointer here */
  char *uri;
  unsigned int conns;
  unsigned int zone_write_lock;
  unsigned int zone_hooks;
  unsigned int server_timeout;
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
  uint64_t errlog;              /* its error log (0: the server has none) */
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

/* fio finds the engine through its one exported symbol, ioengine; the
 * rest stays inside the engine, so that no name of fio's (which exports
 * its own to engines) can take the place of one of these.
 */
#pragma GCC visibility push(hidden)

extern struct fio_option zf_options[];

/* conn.c */
struct zn_client *zf_get_client (struct thread_data *td);
void zf_put_client (struct thread_data *td, struct zn_client *zc);
int zf_setup (struct thread_data *td);
int zf_init (struct thread_data *td);
void zf_cleanup (struct thread_data *td);
int zf_io_u_init (struct thread_data *td, struct io_u *io_u);
void zf_io_u_free (struct thread_data *td, struct io_u *io_u);
int zf_open_file (struct thread_data *td, struct fio_file *f);
int zf_invalidate (struct thread_data *td, struct fio_file *f);

/* io.c */
enum fio_q_status zf_queue (struct thread_data *td, struct io_u *io_u);
int zf_getevents (struct thread_data *td, unsigned int min, unsigned int max,
                  const struct timespec *t);
struct io_u *zf_event (struct thread_data *td, int event);

/* zones.c */
int zf_get_zoned_model (struct thread_data *td, struct fio_file *f,
                        enum zbd_zoned_model *model);
int zf_report_zones (struct thread_data *td, struct fio_file *f,
                     uint64_t offset, struct zbd_zone *zones,
                     unsigned int nr);
int zf_reset_wp (struct thread_data *td, struct fio_file *f, uint64_t offset,
                 uint64_t length);
#if FIO_IOOPS_VERSION >= 32
int zf_finish_zone (struct thread_data *td, struct fio_file *f,
                    uint64_t offset, uint64_t length);
#endif
int zf_get_max_open_zones (struct thread_data *td, struct fio_file *f,
                           unsigned int *max_open_zones);
#if FIO_IOOPS_VERSION >= 33
int zf_get_max_active_zones (struct thread_data *td, struct fio_file *f,
                             unsigned int *max_active_zones);
#endif

#pragma GCC visibility pop

#endif
