/* SPDX-License-Identifier: BSD-3-Clause */
/* The I/O commands of an I/O queue: Read, Write, Zone Append, Write
 * Zeroes, Flush, Zone Management Send and Receive, each on the
 * namespace's device through zns.h.  A data command takes a tag of the
 * scheduler (the queue is a hardware queue of null_blk's model) before
 * it runs; with irqmode=2 its reply is held until it completes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <nvme/types.h>

#include "model/fault.h"
#include "model/zoned.h"
#include "internal.h"
#include "zns.h"

const struct served_device *
nvme_namespace_of (const struct nvme_served *sv, uint32_t nsid)
{
  return nsid >= 1 && nsid <= sv->nr_devices ? &sv->devices[nsid - 1] : NULL;
}

/* What a command asks, decoded once. */
struct io {
  const struct served_device *d;
  uint64_t slba;
  uint32_t nlb;                 /* 1-based */
  uint64_t bytes;               /* data moved: read, write, append, report */
  bool fua, writes, tagged;
};

static bool
known (uint8_t opcode)
{
  switch (opcode) {
  case nvme_cmd_read: case nvme_cmd_write: case nvme_zns_cmd_append:
  case nvme_cmd_write_zeroes: case nvme_cmd_flush:
  case nvme_zns_cmd_mgmt_send: case nvme_zns_cmd_mgmt_recv:
    return true;
  default:
    return false;
  }
}

uint16_t
nvme_io_data_status (const struct nvme_session *s, const struct nvme_cmd *cmd)
{
  if (!known (cmd->opcode))
    return ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_OPCODE);
  if (cmd->opcode != nvme_cmd_write && cmd->opcode != nvme_zns_cmd_append)
    return ERR (NVME_SCT_GENERIC, NVME_SC_SGL_INVALID_DATA);
  if (cmd->sgl_len > nvme_max_transfer (s->sv))
    return ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD);
  return 0;
}

/* Checks cmd and fills io: 0, or the status cmd fails with at once
 * (*loc: the field).
 */
static uint16_t
check (const struct nvme_session *s, const struct nvme_cmd *cmd,
       uint32_t len, struct io *io, uint16_t *loc)
{
  uint32_t bs;

  *loc = LOC_OPCODE;
  if (!known (cmd->opcode))
    return ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_OPCODE);
  memset (io, 0, sizeof *io);
  *loc = LOC_NSID;
  io->d = nvme_namespace_of (s->sv, cmd->nsid);
  if (io->d == NULL)
    return ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_NS);
  bs = zn_dev_geometry (io->d->dev)->block_size;
  io->slba = nvme_cmd_lba (cmd);
  io->tagged = cmd->opcode != nvme_zns_cmd_mgmt_recv;
  io->writes = cmd->opcode == nvme_cmd_write || cmd->opcode == nvme_zns_cmd_append
               || cmd->opcode == nvme_cmd_write_zeroes
               || cmd->opcode == nvme_zns_cmd_mgmt_send;
  if (cmd->family == CF_RW) {
    io->nlb = cmd->u.rw.nlb;
    io->fua = cmd->u.rw.control & NVME_IO_FUA;
  }
  if (cmd->family == CF_RW && cmd->opcode != nvme_cmd_write_zeroes) {
    io->bytes = (uint64_t) io->nlb * bs;
    *loc = LOC_NLB;
    if (io->bytes > nvme_max_transfer (s->sv))
      return ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD);
    *loc = LOC_SGL_LEN;
    if (cmd->sgl_len != io->bytes
        || (cmd->opcode != nvme_cmd_read && len != io->bytes))
      return ERR (NVME_SCT_GENERIC, NVME_SC_SGL_INVALID_DATA);
  }
  else if (cmd->family == CF_ZMR) {
    io->bytes = cmd->u.zmr.numd * 4;
    *loc = LOC_ZM_NUMD;
    if (io->bytes > nvme_max_transfer (s->sv) || cmd->sgl_len != io->bytes)
      return ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD);
  }
  /* -r: the namespaces are write-protected (NSATTR says so too). */
  *loc = LOC_NSID;
  if (s->sv->readonly && io->writes)
    return ERR (NVME_SCT_GENERIC, NVME_SC_NS_WRITE_PROTECTED);
  return 0;
}

/* The field a failure of the namespace's (zns.h) lies in, as nvmet
 * places the block layer's: an Invalid Field at the field the ZNS rules
 * refused, a range or boundary error at the range, any other at SLBA.
 */
static uint16_t
namespace_loc (const struct nvme_cmd *cmd, const struct io *io, uint16_t st)
{
  const struct zn_geometry *g = zn_dev_geometry (io->d->dev);
  uint64_t sector = io->slba * (g->block_size >> ZN_SECTOR_SHIFT);

  if (cmd->family == CF_OTHER)
    return LOC_NONE;
  if (st == ERR (NVME_SCT_CMD_SPECIFIC, NVME_SC_ZNS_BOUNDARY_ERROR))
    return cmd->family == CF_RW ? LOC_NLB : LOC_SLBA;
  if (st != ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD))
    return LOC_SLBA;
  switch (cmd->family) {
  case CF_ZMS:
    return cmd->u.zms.zsa < NVME_ZNS_ZSA_CLOSE
           || cmd->u.zms.zsa > NVME_ZNS_ZSA_RESET ? LOC_ZSA : LOC_SLBA;
  case CF_ZMR:
    if (cmd->u.zmr.zra != NVME_ZNS_ZRA_REPORT_ZONES)
      return LOC_ZRA;
    return io->bytes < sizeof (struct nvme_zone_report) ? LOC_ZM_NUMD
                                                       : LOC_ZRASF;
  default:                      /* an append off a zone start, or too long */
    return sector & (g->zone_sectors - 1) ? LOC_SLBA : LOC_NLB;
  }
}

/* The command as zns.h's steps, for the commands that may reach the
 * disk: false for a zone report, which reads only the zone table.
 */
static bool
to_op (const struct nvme_cmd *cmd, const struct io *io,
       struct nvme_zns_op *op)
{
  *op = (struct nvme_zns_op) {
    .slba = io->slba, .nlb = io->nlb, .fua = io->fua,
  };
  switch (cmd->opcode) {
  case nvme_cmd_read: op->kind = NVME_ZNS_OP_READ; return true;
  case nvme_cmd_write: op->kind = NVME_ZNS_OP_WRITE; return true;
  case nvme_zns_cmd_append: op->kind = NVME_ZNS_OP_APPEND; return true;
  case nvme_cmd_write_zeroes: op->kind = NVME_ZNS_OP_WRITE_ZEROES; return true;
  case nvme_cmd_flush: op->kind = NVME_ZNS_OP_FLUSH; return true;
  case nvme_zns_cmd_mgmt_send:
    op->kind = NVME_ZNS_OP_MGMT_SEND;
    op->zsa = cmd->u.zms.zsa;
    op->select_all = cmd->u.zms.select_all;
    return true;
  default:
    return false;
  }
}

/* The reply of a command whose status is st, unless it timed out. */
static void
op_reply (struct nvme_session *s, const struct nvme_cmd *cmd,
          const struct io *io, uint16_t st, uint64_t result,
          const struct zn_fault *f)
{
  if (f->action == ZN_FAULT_TIMEOUT)
    return;
  nvme_reply_at (s, cmd, st, st ? 0 : result, st ? namespace_loc (cmd, io, st)
                                            : LOC_NONE);
}

/* What finish makes of a command that ran, its reply (if any) queued
 * from mark on: out at once, held for complete_one, or delayed by the
 * fault settings until its release; or never, if it timed out.
 */
static void
conclude (struct nvme_session *s, uint64_t id, const struct zn_fault *f,
          size_t mark)
{
  enum finish_outcome outcome;
  enum reply_hold hold = REPLY_NOW;

  outcome = f->action == ZN_FAULT_TIMEOUT ? FINISH_TIMED_OUT : FINISH_ANSWERED;
  if (s->sv->finish)
    hold = s->sv->finish (s->owner, id, true, outcome, f->delay_ns);
  if (outcome == FINISH_TIMED_OUT)
    return;
  switch (hold) {
  case REPLY_HELD:
    nvme_hold_reply (s, mark, NULL);
    break;
  case REPLY_DELAYED:
    nvme_hold_reply (s, mark, &id);
    break;
  default:
    if (s->sv->stats)
      s->sv->stats->reply (s->owner, s->arrival, s->out_len - s->out_start);
    break;
  }
}

/* A zone report's reply: its data, then its CapsuleResp. */
static void
report_reply (struct nvme_session *s, const struct nvme_cmd *cmd,
              const struct io *io, uint16_t st, const unsigned char *report)
{
  const struct zn_fault pass = { .action = ZN_FAULT_PASS };

  if (st == 0) {
    memcpy (nvme_c2h_begin (s, cmd, io->bytes), report, io->bytes);
    nvme_c2h_end (s, io->bytes);
  }
  op_reply (s, cmd, io, st, 0, &pass);
}

/* ---- commands run off the loop ----------------------------------------------
 *
 * A command of a namespace whose device may wait for a disk (its
 * served_device's offload), once its fault verdict lets it run, goes to
 * the program's workers (served.h's offload_fn): nvme_zns_run there, on
 * the write's data (the job takes the request's buffer) or into a
 * buffer of the read's, and job_done answers it on the loop as it
 * would have been answered had it run at once.
 */
struct nvme_job {
  struct served_job job;
  struct nvme_cmd cmd;
  struct io io;
  uint64_t id;
  uint64_t arrival;
  struct nvme_zns_op op;
  unsigned char *data;          /* a read's buffer, a write's data, a
                                   zone report */
  size_t bytes;                 /* counted in the session's holds */
  uint16_t report_status;       /* a zone report's, the one job that
                                   took no tag (job.untagged) */
};

static void
job_run (struct served_job *job)
{
  struct nvme_job *j = (struct nvme_job *) job;

  if (job->untagged)
    j->report_status = nvme_zns_mgmt_recv (job->dev->dev, j->io.slba,
                                           j->cmd.u.zmr.zra,
                                           j->cmd.u.zmr.zrasf,
                                           j->cmd.u.zmr.partial, j->data,
                                           j->io.bytes, NULL);
  else
    nvme_zns_run (job->dev->dev, &j->op);
}

/* A write without FUA may go into the page cache from the loop. */
static bool
job_try_write (struct served_job *job)
{
  struct nvme_job *j = (struct nvme_job *) job;

  j->op.r = zn_write_nowait (job->dev->dev, j->data, j->op.sector,
                             j->op.nr_sectors, &j->op.why);
  if (j->op.r != -EAGAIN)
    return true;
  j->op.r = 0;
  j->op.why = ZN_REASON_NONE;
  return false;
}

static void
job_share (struct served_job *job, const struct served_job *ran)
{
  struct nvme_job *j = (struct nvme_job *) job;
  const struct nvme_job *r = (const struct nvme_job *) ran;

  j->op.r = r->op.r;
  j->op.why = r->op.why;
}

/* A command run by the program's workers is answered, on the loop; its
 * connection gone (session NULL), the job is only freed.
 */
static void
job_done (void *session, struct served_job *job)
{
  struct nvme_job *j = (struct nvme_job *) job;
  struct nvme_session *s = session;
  uint64_t result = 0;
  size_t mark;
  uint16_t st;

  if (s) {
    s->offloaded--;
    s->offloaded_bytes -= j->bytes;
  }
  if (s && job->untagged)
    report_reply (s, &j->cmd, &j->io, j->report_status, j->data);
  else if (s) {
    uint64_t arrival = s->arrival;

    s->arrival = j->arrival;
    mark = s->out_len;
    st = nvme_zns_end (j->io.d->dev, &j->op, &result);
    s->holding = true;
    if (st == 0 && j->op.f.action != ZN_FAULT_TIMEOUT
        && j->op.kind == NVME_ZNS_OP_READ) {
      memcpy (nvme_c2h_begin (s, &j->cmd, j->io.bytes), j->data,
              j->io.bytes);
      nvme_c2h_end (s, j->io.bytes);
    }
    op_reply (s, &j->cmd, &j->io, st, result, &j->op.f);
    s->holding = false;
    conclude (s, j->id, &j->op.f, mark);
    s->arrival = arrival;
  }
  free (j->data);
  free (j);
}

/* Hands j to the program's workers, counted in the session first (its
 * job_done may come before this returns): false if they did not take it.
 */
static bool
submit (struct nvme_session *s, struct nvme_job *j)
{
  s->offloaded++;
  s->offloaded_bytes += j->bytes;
  if (s->sv->offload (s->owner, &j->job))
    return true;
  s->offloaded--;
  s->offloaded_bytes -= j->bytes;
  return false;
}

/* The command admitted as id, op begun with a verdict that lets it
 * run, goes to the program's workers if they take it; a write's buffer
 * (*data) then goes with it.  A zone's writes, appends and zone actions
 * have their zone's key, so that they run in the order they came; a
 * select-all action, reads and flushes key 0.
 */
static bool
offload (struct nvme_session *s, uint64_t id, const struct nvme_cmd *cmd,
         const struct io *io, const struct nvme_zns_op *op,
         unsigned char **data)
{
  const struct nvme_served *sv = s->sv;
  const struct zn_geometry *g = zn_dev_geometry (io->d->dev);
  bool reads = op->kind == NVME_ZNS_OP_READ;
  bool writes = op->kind == NVME_ZNS_OP_WRITE || op->kind == NVME_ZNS_OP_APPEND;
  struct nvme_job *j;

  if (!io->d->offload || sv->offload == NULL)
    return false;
  j = calloc (1, sizeof *j);
  if (j == NULL || (reads && (j->data = malloc (io->bytes ? io->bytes : 1))
                             == NULL)) {
    free (j);
    return false;               /* run at once, which needs no memory */
  }
  j->job = (struct served_job) {
    .dev = io->d, .run = job_run, .done = job_done,
  };
  if (op->kind != NVME_ZNS_OP_READ && op->kind != NVME_ZNS_OP_FLUSH
      && !(op->kind == NVME_ZNS_OP_MGMT_SEND && op->select_all))
    j->job.key = 1 + (uint64_t) (io->d - sv->devices)
                 + op->sector / g->zone_sectors * sv->nr_devices;
  j->cmd = *cmd;
  j->io = *io;
  j->id = id;
  j->arrival = s->arrival;
  j->op = *op;
  if (writes) {
    j->data = *data;
    j->op.data = j->data;
    if (op->kind == NVME_ZNS_OP_WRITE && !op->fua)
      j->job.try_run = job_try_write;
  }
  else
    j->op.buf = j->data;
  if (op->kind == NVME_ZNS_OP_FLUSH)
    j->job.share = job_share;
  j->bytes = reads || writes ? io->bytes : 0;
  if (!submit (s, j)) {
    if (!writes)
      free (j->data);
    free (j);
    return false;
  }
  if (writes)
    *data = NULL;
  return true;
}

/* A zone report (Zone Management Receive, which takes no tag) goes to
 * the program's workers with its buffer, when a zone it reads is held by
 * a storage thread: true if they took it.
 */
static bool
offload_report (struct nvme_session *s, const struct nvme_cmd *cmd,
                const struct io *io, void *report)
{
  struct nvme_job *j;

  if (!io->d->offload || s->sv->offload == NULL
      || (j = calloc (1, sizeof *j)) == NULL)
    return false;
  j->job = (struct served_job) {
    .dev = io->d, .run = job_run, .done = job_done, .untagged = true,
  };
  j->cmd = *cmd;
  j->io = *io;
  j->data = report;
  j->bytes = io->bytes;
  if (!submit (s, j)) {
    free (j);
    return false;
  }
  return true;
}

/* Runs the decoded command and queues its reply, unless the fault
 * settings' verdict (*f) is that it times out, or the program's workers
 * took it (true; id: its admission's).
 */
static bool
run (struct nvme_session *s, uint64_t id, const struct nvme_cmd *cmd,
     const struct io *io, unsigned char **data, int err, struct zn_fault *f)
{
  struct zn_dev *dev = io->d->dev;
  struct nvme_zns_op op;
  uint64_t result = 0;
  uint16_t st;
  unsigned char *buf = NULL;

  if (err) {
    /* The scheduler failed a pipelined write's wait. */
    nvme_fail (s, cmd, nvme_zns_status (-err, zn_pipeline_reason (-err)), LOC_SLBA);
    return false;
  }
  if (!to_op (cmd, io, &op)) {
    /* A zone report is built through its structures: aligned, then
     * copied behind the C2HData header.
     */
    unsigned char *report = malloc (io->bytes ? io->bytes : 1);
    bool busy = false;

    if (report == NULL)
      nvme_out_of_memory (s);
    st = nvme_zns_mgmt_recv (dev, io->slba, cmd->u.zmr.zra, cmd->u.zmr.zrasf,
                             cmd->u.zmr.partial, report, io->bytes,
                             io->d->offload ? &busy : NULL);
    if (busy && offload_report (s, cmd, io, report))
      return true;
    if (busy)
      st = nvme_zns_mgmt_recv (dev, io->slba, cmd->u.zmr.zra,
                               cmd->u.zmr.zrasf, cmd->u.zmr.partial, report,
                               io->bytes, NULL);
    report_reply (s, cmd, io, st, report);
    free (report);
    return false;
  }
  op.data = *data;
  st = nvme_zns_begin (dev, &op);
  *f = op.f;
  if (st == 0) {
    bool ran = false;

    if (op.kind == NVME_ZNS_OP_READ) {
      buf = op.buf = nvme_c2h_begin (s, cmd, io->bytes);
      /* With workers to wait for the disk, only data at hand is read
       * here.
       */
      if (op.runs && io->d->offload && s->sv->offload) {
        op.r = zn_read_nowait (dev, buf, op.sector, op.nr_sectors, &op.why);
        ran = op.r != -EAGAIN;
        if (!ran) {
          op.r = 0;
          op.why = ZN_REASON_NONE;
          nvme_c2h_cancel (s, io->bytes);
          buf = NULL;
        }
      }
    }
    if (op.runs && !ran && offload (s, id, cmd, io, &op, data))
      return true;
    if (op.kind == NVME_ZNS_OP_READ && buf == NULL)
      buf = op.buf = nvme_c2h_begin (s, cmd, io->bytes);
    if (!ran)
      nvme_zns_run (dev, &op);
    st = nvme_zns_end (dev, &op, &result);
  }
  if (buf) {
    if (st || f->action == ZN_FAULT_TIMEOUT)
      nvme_c2h_cancel (s, io->bytes);
    else
      nvme_c2h_end (s, io->bytes);
  }
  op_reply (s, cmd, io, st, result, f);
  return false;
}

/* Runs the command admitted as id and queues its reply as the program
 * says (served.h), now or, if the program's workers took it, once they
 * ran it (job_done).
 */
static void
run_tagged (struct nvme_session *s, uint64_t id, const struct nvme_cmd *cmd,
            const struct io *io, unsigned char **data, int err)
{
  struct zn_fault f = { .action = ZN_FAULT_PASS };
  size_t mark = s->out_len;
  bool offloaded;

  s->holding = true;
  offloaded = run (s, id, cmd, io, data, err, &f);
  s->holding = false;
  if (!offloaded)
    conclude (s, id, &f, mark);
}

/* Keeps an admitted write aside until resume; it owns the data now. */
static void
park (struct nvme_session *s, const struct nvme_cmd *cmd, const struct io *io,
      unsigned char **data)
{
  if (!park_request (&s->parked, s->next_id - 1, cmd, sizeof *cmd, *data,
                     io->bytes))
    nvme_out_of_memory (s);
  s->parked.tail->arrival = s->arrival;
  *data = NULL;
}

int
nvme_io_command (struct nvme_session *s, const struct nvme_cmd *cmd,
            unsigned char **data, uint32_t len)
{
  const struct nvme_served *sv = s->sv;
  struct io io;
  uint16_t loc, st = check (s, cmd, len, &io, &loc);
  uint64_t id = s->next_id;
  int err = 0;

  if (st) {
    nvme_fail (s, cmd, st, loc);
    return 1;
  }
  if (io.tagged && sv->admit) {
    uint32_t bs = zn_dev_geometry (io.d->dev)->block_size;
    struct data_request drq = {
      .id = s->next_id, .dev = io.d,
      /* A write waits for its zone's write pointer (pipelining); an
       * append lands at it whatever the order.
       */
      .write = cmd->opcode == nvme_cmd_write
               || cmd->opcode == nvme_cmd_write_zeroes,
      .offset = io.slba * bs,
      .count = (uint32_t) ((uint64_t) io.nlb * bs),
      .bytes = io.bytes,
    };
    struct admission a;

    if (io.slba > UINT64_MAX / bs || (uint64_t) io.nlb * bs > UINT32_MAX)
      drq.offset = drq.count = 0;
    a = sv->admit (s->owner, s, &drq);
    if (a.outcome == ADMIT_LATER)
      return 0;
    s->next_id++;
    if (a.outcome == ADMIT_PARK) {
      park (s, cmd, &io, data);
      return 1;
    }
    err = a.err;
  }
  if (io.tagged)
    run_tagged (s, id, cmd, &io, data, err);
  else {
    struct zn_fault f = { .action = ZN_FAULT_PASS };

    run (s, id, cmd, &io, data, err, &f);
  }
  return 1;
}

void
nvme_io_resume (struct nvme_session *s, uint64_t id,
                const struct nvme_cmd *cmd, unsigned char **data, int err)
{
  struct io io;
  uint16_t loc;

  if (check (s, cmd, cmd->sgl_len, &io, &loc) != 0) {
    nvme_reply (s, cmd, ERR (NVME_SCT_GENERIC, NVME_SC_INTERNAL), 0);
    return;
  }
  run_tagged (s, id, cmd, &io, data, err);
}

/* MDTS: the power of two of 4 KiB pages nearest the devices' smallest
 * max_sectors, so that the host's max_sectors_kb is null_blk's, or as
 * near as a power of two gets (255 sectors, the default: 128 KiB).
 */
uint8_t
nvme_mdts (const struct nvme_served *sv)
{
  uint64_t bytes = UINT64_MAX;
  uint8_t mdts = 0;

  for (unsigned i = 0; i < sv->nr_devices; i++) {
    uint64_t b = (uint64_t) zn_dev_geometry (sv->devices[i].dev)->max_sectors
                 << ZN_SECTOR_SHIFT;

    if (b < bytes)
      bytes = b;
  }
  if (sv->nr_devices == 0)
    return 5;
  for (uint8_t m = 1; m <= 13; m++) {
    uint64_t lo = 4096ull << mdts, hi = 4096ull << m;
    uint64_t d_lo = lo > bytes ? lo - bytes : bytes - lo;
    uint64_t d_hi = hi > bytes ? hi - bytes : bytes - hi;

    if (d_hi < d_lo)
      mdts = m;
  }
  return mdts;
}

uint64_t
nvme_max_transfer (const struct nvme_served *sv)
{
  return 4096ull << nvme_mdts (sv);
}
