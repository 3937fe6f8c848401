/* SPDX-License-Identifier: BSD-3-Clause */
/* A device of the model as an NVMe Zoned Namespace (see zns.h).
 *
 * Everything is judged by what a Linux host makes of it
 * (drivers/nvme/host/core.c and zns.c): the application on the host must
 * get null_blk's errno and see null_blk's queue limits.
 *
 * Statuses.  The host completes a request through nvme_error_status(),
 * which switches on (SCT << 8) | SC: Too Many Active Zones (1h/BDh)
 * becomes BLK_STS_ZONE_ACTIVE_RESOURCE (EOVERFLOW), Too Many Open Zones
 * (1h/BEh) BLK_STS_ZONE_OPEN_RESOURCE (ETOOMANYREFS); every other ZNS
 * status, and Internal Error (0h/06h), falls to BLK_STS_IOERR (EIO),
 * which is what null_blk's BLK_STS_IOERR gives.  The media statuses
 * (Write Fault 2h/80h, Unrecovered Read Error 2h/81h) would be
 * BLK_STS_MEDIUM, ENODATA, so a bad block is an Internal Error here.
 * Capacity Exceeded (0h/81h) is BLK_STS_NOSPC, ENOSPC, the errno of a
 * backing_dir whose file system is full.  DNR is set on every error:
 * the host retries a status without it, which null_blk never causes.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/fault.h"
#include "model/zoned.h"
#include "zns.h"

#define MIB_SECTORS (UINT64_C (1) << (20 - ZN_SECTOR_SHIFT))
/* The host counts ZASL in pages of CAP.MPSMIN, which it takes as 4 KiB. */
#define ZASL_PAGE_SECTORS 8u
/* Zones per zn_report_zones call when walking the device. */
#define REPORT_BATCH 256u
/* The zero data a Write Zeroes is written from, a chunk at a time. */
#define ZEROES_BYTES (128u * 1024u)

static const unsigned char zeroes[ZEROES_BYTES];

static uint16_t
generic_status (uint8_t sc)
{
  return (uint16_t) ((NVME_SCT_GENERIC << NVME_SCT_SHIFT) | sc | NVME_SC_DNR);
}

static uint16_t
zns_status (uint8_t sc)
{
  return (uint16_t) ((NVME_SCT_CMD_SPECIFIC << NVME_SCT_SHIFT) | sc
                     | NVME_SC_DNR);
}

static uint32_t
lba_sectors (const struct zn_geometry *g)
{
  return g->block_size >> ZN_SECTOR_SHIFT;
}

static uint64_t
ns_blocks (const struct zn_geometry *g)
{
  return g->capacity / lba_sectors (g);
}

static unsigned
floor_log2 (uint64_t v)
{
  unsigned r = 0;

  while (v >>= 1)
    r++;
  return r;
}

static int
zns_refuse (char *err, size_t errlen, const char *fmt, ...)
{
  if (err && errlen) {
    va_list ap;

    va_start (ap, fmt);
    vsnprintf (err, errlen, fmt, ap);
    va_end (ap);
  }
  return -1;
}

int
nvme_zns_check (const struct zn_geometry *g, char *err, size_t errlen)
{
  uint64_t runt = g->capacity % g->zone_sectors;

  /* The model has power-of-two zones already, as null_blk. */
  if (g->zone_sectors & (g->zone_sectors - 1))
    return zns_refuse (err, errlen, "zone_size: %" PRIu64 " MiB is not a power of "
                   "two, which the Linux host refuses for a ZNS namespace",
                   g->zone_sectors / MIB_SECTORS);
  /* nvme_zone_parse_entry() takes any zone type but sequential write
   * required as a broken device, and ZNS has no conventional zone type.
   */
  if (g->nr_conv)
    return zns_refuse (err, errlen, "zone_nr_conv: %" PRIu32 " conventional "
                   "zones, but a ZNS namespace has only sequential write "
                   "required zones (the Linux host refuses any other type); "
                   "use zone_nr_conv=0 with NVMe/TCP", g->nr_conv);
  /* The host gives every zone the one size of the LBA format's ZSZE,
   * so a smaller last zone would end past the namespace; nvmet refuses
   * such a device for the same reason.
   */
  if (runt)
    return zns_refuse (err, errlen, "size: the last zone is %" PRIu64 " MiB of "
                   "a zone_size of %" PRIu64 " MiB, but every zone of a ZNS "
                   "namespace has the zone size; make size a multiple of "
                   "zone_size for NVMe/TCP", runt / MIB_SECTORS,
                   g->zone_sectors / MIB_SECTORS);
  /* ZASL counts powers of two of 4 KiB pages from 8 KiB (0 defers to
   * MDTS, whose smallest limit is 8 KiB too, 0 there being none), so a
   * smaller append limit would let the host send appends the model
   * refuses.
   */
  if (g->max_append_sectors < 2 * ZASL_PAGE_SECTORS)
    return zns_refuse (err, errlen, "%s: a zone append limit of %" PRIu32
                   " sectors is less than 8 KiB, the smallest an NVMe "
                   "controller can report (ZASL); use at least 16 with "
                   "NVMe/TCP",
                   g->max_sectors < 2 * ZASL_PAGE_SECTORS
                   ? "max_sectors" : "zone_append_max_sectors",
                   g->max_append_sectors);
  return 0;
}

void
nvme_zns_id_ns (struct zn_dev *dev, struct nvme_id_ns *id)
{
  const struct zn_geometry *g = zn_dev_geometry (dev);
  uint64_t nsze = ns_blocks (g);

  /* NMIC stays 0, a private namespace; the session decides about
   * sharing (CMIC) and identifiers, which decide whether the host puts
   * a multipath head in front.  NOIOB, NPWG, NOWS and the atomic write
   * fields stay 0: null_blk has none of those limits, and the host then
   * keeps its defaults, as for null_blk.
   */
  memset (id, 0, sizeof *id);
  id->nsze = htole64 (nsze);
  id->ncap = htole64 (nsze);
  id->nuse = htole64 (nsze);
  id->nlbaf = 0;                /* 0-based: one format */
  id->flbas = 0;                /* that one, no metadata */
  /* Blocks past a zone's write pointer are ZNS's deallocated blocks:
   * null_blk reads them as FFh when memory backed (its zone valid read
   * length), and transfers nothing, zeroes here, when not.  No
   * Deallocate bit in Write Zeroes: it writes zeroes.
   */
  id->dlfeat = g->memory_backed ? NVME_NS_DLFEAT_RB_ALL_FS
                                : NVME_NS_DLFEAT_RB_ALL_0S;
  id->lbaf[0].ms = htole16 (0);
  id->lbaf[0].ds = (uint8_t) floor_log2 (g->block_size);
  id->lbaf[0].rp = 0;
}

/* MOR and MAR are 0-based with all-ones for no limit: the host adds one
 * to each (nvme_query_zone_info), so all-ones wraps to its 0, no limit.
 * The geometry is already null_blk's after clamping (max_open at most
 * max_active, a limit of every sequential zone or more dropped), which
 * matters on 6.12: blk_validate_zoned_limits() refuses a disk whose
 * max_open_zones exceeds a non-zero max_active_zones, and
 * disk_update_zone_resources() drops limits of nr_seq_zones or more.
 * So /sys/block/nvmeXnY/queue/max_{open,active}_zones equal null_blk's.
 */
static uint32_t
zero_based_limit (uint32_t limit)
{
  return limit ? limit - 1 : UINT32_MAX;
}

void
nvme_zns_id_ns_zns (struct zn_dev *dev, struct nvme_zns_id_ns *id)
{
  const struct zn_geometry *g = zn_dev_geometry (dev);

  memset (id, 0, sizeof *id);
  /* ZOC 0: the host refuses a namespace that needs any zone operation
   * characteristic.  OZCS 0: no Read Across Zone Boundaries, no ZRWA.
   */
  id->zoc = htole16 (0);
  id->ozcs = htole16 (0);
  id->mar = htole32 (zero_based_limit (g->max_active));
  id->mor = htole32 (zero_based_limit (g->max_open));
  id->lbafe[0].zsze = htole64 (g->zone_sectors / lba_sectors (g));
  id->lbafe[0].zdes = 0;
}

/* The host reads ZASL once per controller (nvme_set_max_append): a
 * non-zero ZASL gives max_zone_append = 1 << (ZASL + 3) sectors, 0 the
 * controller's max_hw_sectors (from MDTS); the block layer then bounds
 * the queue's max_zone_append_sectors by max_hw_sectors and the zone
 * size.  A power of two can only round null_blk's limit down (255
 * sectors, the default, becomes 64 KiB), which keeps every append the
 * host sends within what the model accepts; zone_append_max_bytes
 * differs from null_blk's for that reason only.  A limit under two
 * pages has no ZASL (0 would mean MDTS's limit): nvme_zns_check refuses
 * such devices, and 0 is what they would get.
 */
void
nvme_zns_id_ctrl_zns (struct zn_dev *const *devs, unsigned nr_devs,
                      struct nvme_zns_id_ctrl *id)
{
  uint32_t smallest = UINT32_MAX;
  uint32_t pages;

  memset (id, 0, sizeof *id);
  for (unsigned i = 0; i < nr_devs; i++) {
    uint32_t m = zn_dev_geometry (devs[i])->max_append_sectors;

    if (m < smallest)
      smallest = m;
  }
  if (nr_devs == 0)
    return;
  pages = smallest / ZASL_PAGE_SECTORS;
  id->zasl = pages >= 2 ? (uint8_t) floor_log2 (pages) : 0;
}

/* Fabrics commands (opcode 7Fh) have no entry: the log lists admin and
 * I/O commands.  The host checks the ZNS set's Zone Append for CSUPP and
 * makes the namespace read-only without it (nvme_query_zone_info), and
 * its passthrough lets an unprivileged user send only what is CSUPP
 * with no effect beyond LBCC, LBCC needing the device open for writing.
 */
void
nvme_zns_effects (uint8_t csi, struct nvme_cmd_effects_log *log)
{
  static const uint8_t admin[] = {
    nvme_admin_get_log_page, nvme_admin_identify, nvme_admin_abort_cmd,
    nvme_admin_set_features, nvme_admin_get_features,
    nvme_admin_async_event, nvme_admin_keep_alive,
  };
  const uint32_t supported = NVME_CMD_EFFECTS_CSUPP;
  const uint32_t changes = NVME_CMD_EFFECTS_CSUPP | NVME_CMD_EFFECTS_LBCC;

  memset (log, 0, sizeof *log);
  for (size_t i = 0; i < sizeof admin / sizeof admin[0]; i++)
    log->acs[admin[i]] = htole32 (supported);
  if (csi != NVME_CSI_NVM && csi != NVME_CSI_ZNS)
    return;
  log->iocs[nvme_cmd_flush] = htole32 (supported);
  log->iocs[nvme_cmd_write] = htole32 (changes);
  log->iocs[nvme_cmd_read] = htole32 (supported);
  log->iocs[nvme_cmd_write_zeroes] = htole32 (changes);
  if (csi != NVME_CSI_ZNS)
    return;
  log->iocs[nvme_zns_cmd_mgmt_send] = htole32 (changes);
  log->iocs[nvme_zns_cmd_mgmt_recv] = htole32 (supported);
  log->iocs[nvme_zns_cmd_append] = htole32 (changes);
}

/* ---- statuses ----------------------------------------------------------- */

static bool
in_namespace (const struct zn_geometry *g, uint64_t slba, uint32_t nlb)
{
  uint64_t nsze = ns_blocks (g);

  return slba < nsze && nlb <= nsze - slba;
}

/* The status for the model's errno and the reason it gave with it.  A
 * zone management EIO (a transition the zone's condition does not allow,
 * a READONLY or OFFLINE zone) is an invalid transition, as ZNS has it.
 */
static uint16_t
errno_status (int err, enum zn_reason why, bool mgmt)
{
  if (err < 0)
    err = -err;
  if (err == 0)
    return 0;
  if (why == ZN_REASON_NONE)
    why = zn_reason_of (err);
  if (mgmt && err == EIO)
    return zns_status (NVME_SC_ZNS_INVAL_TRANSITION);
  switch (why) {
  case ZN_REASON_OPEN_LIMIT:
    return zns_status (NVME_SC_ZNS_TOO_MANY_OPENS);
  case ZN_REASON_ACTIVE_LIMIT:
    return zns_status (NVME_SC_ZNS_TOO_MANY_ACTIVE);
  case ZN_REASON_FULL:
    return zns_status (NVME_SC_ZNS_FULL);
  case ZN_REASON_READONLY:
    return zns_status (NVME_SC_ZNS_READ_ONLY);
  case ZN_REASON_OFFLINE:
    return zns_status (NVME_SC_ZNS_OFFLINE);
  case ZN_REASON_NOT_AT_WP:
  case ZN_REASON_PIPELINE_TIMEOUT:  /* a pipelined write never got */
  case ZN_REASON_PIPELINE_BUSY:     /* to the write pointer */
  case ZN_REASON_PIPELINE_FAILED:
    return zns_status (NVME_SC_ZNS_INVALID_WRITE);
  case ZN_REASON_PAST_CAPACITY:
    return zns_status (NVME_SC_ZNS_BOUNDARY_ERROR);
  case ZN_REASON_OUT_OF_RANGE:
    return generic_status (mgmt ? NVME_SC_INVALID_FIELD
                                                 : NVME_SC_LBA_RANGE);
  case ZN_REASON_NO_SPACE:
    return generic_status (NVME_SC_CAP_EXCEEDED);
  case ZN_REASON_MISALIGNED:
  case ZN_REASON_EMPTY:
  case ZN_REASON_NOT_SUPPORTED:
  case ZN_REASON_NOT_ZONE_START:
  case ZN_REASON_APPEND_TOO_LONG:
    return generic_status (NVME_SC_INVALID_FIELD);
  default:                      /* a bad block, the store, memory */
    return generic_status (err == EINVAL ? NVME_SC_INVALID_FIELD
                                         : NVME_SC_INTERNAL);
  }
}

uint16_t
nvme_zns_status (int err, enum zn_reason why)
{
  return errno_status (err, why, false);
}

/* ---- fault settings ----------------------------------------------------
 *
 * A command is asked about before it runs (fault_skips: true when it must
 * not run), and its status is then fault_status's: a rule's nvme-status,
 * with DNR unless the rule says retry, or else the status of its errno as
 * if the model had given it.  A requeue is Namespace Not Ready without
 * DNR, which the Linux host retries; what a timeout or a delay holds back
 * is the caller's to hold (the verdict is in *f).
 */
static bool
fault_skips (struct zn_dev *dev, enum zn_fault_op op, uint64_t sector,
             uint64_t nr_sectors, struct zn_fault *f)
{
  uint64_t bytes = op == ZN_FOP_READ || op == ZN_FOP_WRITE
                   || op == ZN_FOP_APPEND ? nr_sectors << ZN_SECTOR_SHIFT : 0;

  zn_fault_decide (dev, op, sector, nr_sectors, bytes, f);
  return f->action != ZN_FAULT_PASS && f->action != ZN_FAULT_FAIL_AFTER;
}

static uint16_t
fault_status (struct zn_dev *dev, const struct zn_fault *f,
              enum zn_fault_op op, uint64_t sector, int r, enum zn_reason why,
              bool mgmt)
{
  r = zn_fault_outcome (dev, f, op, sector, r, &why);
  if (f->action == ZN_FAULT_REQUEUE)
    return (uint16_t) ((NVME_SCT_GENERIC << NVME_SCT_SHIFT)
                       | NVME_SC_NS_NOT_READY);
  if (why != ZN_REASON_INJECTED)
    return errno_status (r, why, mgmt);
  if (f->nvme_status)
    return (uint16_t) ((f->nvme_status & 0x7ff)
                       | (f->nvme_status & ZN_FAULT_NVME_RETRY
                          ? 0 : NVME_SC_DNR));
  return errno_status (r, ZN_REASON_NONE, mgmt);
}

static uint16_t send_all (struct zn_dev *dev, enum zn_zone_op op);

/* ---- I/O commands ------------------------------------------------------- */

/* The checks before the model: the range (LBA Out of Range, as nvmet),
 * and the zone boundary, which no command may cross since OZCS has no
 * Read Across Zone Boundaries (the host never sends one: its
 * chunk_sectors is the zone size).  The model would split such a write
 * and could land its second part in the next zone.
 */
static uint16_t
check_io (const struct zn_geometry *g, uint64_t slba, uint32_t nlb)
{
  uint64_t sector, end;

  if (nlb == 0)
    return generic_status (NVME_SC_INVALID_FIELD);
  if (!in_namespace (g, slba, nlb))
    return generic_status (NVME_SC_LBA_RANGE);
  sector = slba * lba_sectors (g);
  end = sector + (uint64_t) nlb * lba_sectors (g);
  if (end > (sector | (g->zone_sectors - 1)) + 1)
    return zns_status (NVME_SC_ZNS_BOUNDARY_ERROR);
  return 0;
}

/* The checks each kind makes before it asks the fault settings, and
 * what it asks them about: 0, or the status the command fails with
 * without asking.
 */
static uint16_t
begin_checks (const struct zn_geometry *g, struct nvme_zns_op *op)
{
  static const enum zn_fault_op fops[] = {
    [ZN_OP_OPEN] = ZN_FOP_OPEN, [ZN_OP_CLOSE] = ZN_FOP_CLOSE,
    [ZN_OP_FINISH] = ZN_FOP_FINISH, [ZN_OP_RESET] = ZN_FOP_RESET,
  };
  uint16_t status;

  op->sector = op->slba * lba_sectors (g);
  op->nr_sectors = (uint64_t) op->nlb * lba_sectors (g);
  switch (op->kind) {
  case NVME_ZNS_OP_READ:
    op->fop = ZN_FOP_READ;
    return check_io (g, op->slba, op->nlb);
  case NVME_ZNS_OP_WRITE:
  case NVME_ZNS_OP_WRITE_ZEROES:
    op->fop = ZN_FOP_WRITE;
    return check_io (g, op->slba, op->nlb);
  case NVME_ZNS_OP_APPEND:
    /* nvmet's checks and the ZNS command set's: ZSLBA must start a zone
     * (Invalid Field in Command), and the data must fit the append
     * limit, which the model enforces with an EIO that names no zone
     * reason.
     */
    op->fop = ZN_FOP_APPEND;
    if ((status = check_io (g, op->slba, op->nlb)) != 0)
      return status;
    if (op->sector & (g->zone_sectors - 1))
      return generic_status (NVME_SC_INVALID_FIELD);
    if (op->nr_sectors > g->max_append_sectors)
      return generic_status (NVME_SC_INVALID_FIELD);
    return 0;
  case NVME_ZNS_OP_FLUSH:
    op->fop = ZN_FOP_FLUSH;
    op->sector = op->nr_sectors = 0;
    return 0;
  default:
    break;
  }
  op->mgmt = true;
  switch (op->zsa) {
  case NVME_ZNS_ZSA_OPEN: op->zop = ZN_OP_OPEN; break;
  case NVME_ZNS_ZSA_CLOSE: op->zop = ZN_OP_CLOSE; break;
  case NVME_ZNS_ZSA_FINISH: op->zop = ZN_OP_FINISH; break;
  case NVME_ZNS_ZSA_RESET: op->zop = ZN_OP_RESET; break;
  default:                      /* Offline, descriptor extensions, ZRWA */
    return generic_status (NVME_SC_INVALID_FIELD);
  }
  op->fop = fops[op->zop];
  /* With select all, SLBA is ignored.  The host sends reset-all for a
   * reset of the whole device (QUEUE_FLAG_ZONE_RESETALL), and the
   * model's reset of the whole range is null_blk's reset-all, which
   * skips READONLY and OFFLINE zones as ZNS does.  The other actions
   * with select all go zone by zone (send_all), and their fault verdict
   * names no sector.
   */
  if (op->select_all) {
    op->sector = 0;
    op->nr_sectors = g->capacity;
    return 0;
  }
  if (op->slba >= ns_blocks (g))
    return generic_status (NVME_SC_LBA_RANGE);
  if (op->sector & (g->zone_sectors - 1))
    return generic_status (NVME_SC_INVALID_FIELD);
  op->nr_sectors = g->zone_sectors;
  return 0;
}

uint16_t
nvme_zns_begin (struct zn_dev *dev, struct nvme_zns_op *op)
{
  uint16_t status;

  op->f = (struct zn_fault) { .action = ZN_FAULT_PASS };
  op->r = 0;
  op->why = ZN_REASON_NONE;
  op->landed = 0;
  op->status = 0;
  op->mgmt = false;
  op->runs = false;
  status = begin_checks (zn_dev_geometry (dev), op);
  if (status)
    return status;
  /* One command, one question, whatever its chunks. */
  op->runs = !fault_skips (dev, op->fop, op->sector, op->nr_sectors, &op->f);
  return 0;
}

static int
model_write (struct zn_dev *dev, const void *data, uint64_t slba,
             uint32_t nlb, bool fua, enum zn_reason *why)
{
  const struct zn_geometry *g = zn_dev_geometry (dev);

  return zn_write_why (dev, data, slba * lba_sectors (g),
                       (uint64_t) nlb * lba_sectors (g), fua, why);
}

/* Writes of a static zero chunk, so that 65536 blocks of 4 KiB need no
 * allocation.  The first chunk that fails ends the command, with the
 * status of that chunk: the ones after it would only fail off the
 * write pointer and hide why.
 */
static int
write_zeroes (struct zn_dev *dev, uint64_t slba, uint32_t nlb, bool fua,
              enum zn_reason *why)
{
  uint32_t chunk = ZEROES_BYTES / zn_dev_geometry (dev)->block_size;
  int r = 0;

  while (r == 0 && nlb) {
    uint32_t n = nlb < chunk ? nlb : chunk;

    r = model_write (dev, zeroes, slba, n, fua, why);
    slba += n;
    nlb -= n;
  }
  return r;
}

void
nvme_zns_run (struct zn_dev *dev, struct nvme_zns_op *op)
{
  if (!op->runs)
    return;
  switch (op->kind) {
  case NVME_ZNS_OP_READ:
    op->r = zn_read_why (dev, op->buf, op->sector, op->nr_sectors, &op->why);
    break;
  case NVME_ZNS_OP_WRITE:
    op->r = model_write (dev, op->data, op->slba, op->nlb, op->fua, &op->why);
    break;
  case NVME_ZNS_OP_WRITE_ZEROES:
    op->r = write_zeroes (dev, op->slba, op->nlb, op->fua, &op->why);
    break;
  case NVME_ZNS_OP_APPEND:
    op->r = zn_zone_append_why (dev, op->data, op->sector, op->nr_sectors,
                                op->fua, &op->landed, &op->why);
    break;
  case NVME_ZNS_OP_FLUSH:
    op->r = zn_flush (dev);
    break;
  default:
    if (op->select_all && op->zop != ZN_OP_RESET)
      op->status = send_all (dev, op->zop);
    else
      op->r = zn_zone_mgmt_why (dev, op->zop, op->sector, op->nr_sectors,
                                &op->why);
    break;
  }
}

uint16_t
nvme_zns_end (struct zn_dev *dev, struct nvme_zns_op *op, uint64_t *result)
{
  uint16_t status;

  switch (op->kind) {
  case NVME_ZNS_OP_FLUSH:
    if (op->r < 0)              /* the flush's own failure */
      return generic_status (op->r == -ENOSPC ? NVME_SC_CAP_EXCEEDED
                                              : NVME_SC_INTERNAL);
    return fault_status (dev, &op->f, ZN_FOP_FLUSH, 0, 0, ZN_REASON_NONE,
                         false);
  case NVME_ZNS_OP_MGMT_SEND:
    if (op->select_all && op->zop != ZN_OP_RESET)
      return op->status ? op->status
                        : fault_status (dev, &op->f, op->fop, 0, 0,
                                        ZN_REASON_NONE, true);
    break;
  default:
    break;
  }
  status = fault_status (dev, &op->f, op->fop, op->sector, op->r, op->why,
                         op->mgmt);
  if (status == 0 && op->kind == NVME_ZNS_OP_APPEND && result)
    *result = op->landed / lba_sectors (zn_dev_geometry (dev));
  return status;
}

/* A command on the loop: the three steps in a row, the verdict in *f. */
static uint16_t
run_op (struct zn_dev *dev, struct nvme_zns_op *op, struct zn_fault *f,
        uint64_t *result)
{
  uint16_t status = nvme_zns_begin (dev, op);

  if (status == 0) {
    nvme_zns_run (dev, op);
    status = nvme_zns_end (dev, op, result);
  }
  *f = op->f;
  return status;
}

uint16_t
nvme_zns_read (struct zn_dev *dev, uint64_t slba, uint32_t nlb, void *data,
               struct zn_fault *f)
{
  struct nvme_zns_op op = {
    .kind = NVME_ZNS_OP_READ, .slba = slba, .nlb = nlb, .buf = data,
  };

  return run_op (dev, &op, f, NULL);
}

uint16_t
nvme_zns_write (struct zn_dev *dev, uint64_t slba, uint32_t nlb, bool fua,
                const void *data, struct zn_fault *f)
{
  struct nvme_zns_op op = {
    .kind = NVME_ZNS_OP_WRITE, .slba = slba, .nlb = nlb, .fua = fua,
    .data = data,
  };

  return run_op (dev, &op, f, NULL);
}

uint16_t
nvme_zns_write_zeroes (struct zn_dev *dev, uint64_t slba, uint32_t nlb,
                       bool fua, struct zn_fault *f)
{
  struct nvme_zns_op op = {
    .kind = NVME_ZNS_OP_WRITE_ZEROES, .slba = slba, .nlb = nlb, .fua = fua,
  };

  return run_op (dev, &op, f, NULL);
}

uint16_t
nvme_zns_append (struct zn_dev *dev, uint64_t zslba, uint32_t nlb, bool fua,
                 const void *data, uint64_t *result, struct zn_fault *f)
{
  struct nvme_zns_op op = {
    .kind = NVME_ZNS_OP_APPEND, .slba = zslba, .nlb = nlb, .fua = fua,
    .data = data,
  };

  return run_op (dev, &op, f, result);
}

uint16_t
nvme_zns_flush (struct zn_dev *dev, struct zn_fault *f)
{
  struct nvme_zns_op op = { .kind = NVME_ZNS_OP_FLUSH };

  return run_op (dev, &op, f, NULL);
}

/* ---- zone management ---------------------------------------------------- */

/* The states a select-all action applies to (ZNS: Open Zone to closed
 * zones, Close Zone to open ones, Finish Zone to both).
 */
static bool
select_all_applies (enum zn_zone_op op, uint8_t cond)
{
  bool open = cond == ZN_COND_IMP_OPEN || cond == ZN_COND_EXP_OPEN;

  switch (op) {
  case ZN_OP_OPEN: return cond == ZN_COND_CLOSED;
  case ZN_OP_CLOSE: return open;
  case ZN_OP_FINISH: return open || cond == ZN_COND_CLOSED;
  default: return false;
  }
}

/* The zones are chosen first, then acted on: opening a closed zone can
 * implicitly close an open one, which must not be opened in turn.  Every
 * chosen zone is tried; the first failure is the status.
 */
static uint16_t
send_all (struct zn_dev *dev, enum zn_zone_op op)
{
  const struct zn_geometry *g = zn_dev_geometry (dev);
  struct zn_zone zones[REPORT_BATCH];
  unsigned char *chosen;
  uint64_t sector = 0;
  unsigned n;
  int first_err = 0;
  enum zn_reason first_why = ZN_REASON_NONE;

  /* Opening every closed zone needs that many open resources beside the
   * explicitly open zones (implicitly open ones are closed to make
   * room); without them the ZNS command set wants no zone opened at all.
   */
  if (op == ZN_OP_OPEN && g->max_open) {
    struct zn_counters c;

    zn_get_counters (dev, &c);
    if ((uint64_t) c.exp_open + c.closed > g->max_open)
      return zns_status (NVME_SC_ZNS_TOO_MANY_OPENS);
  }
  chosen = calloc ((g->nr_zones + 7) / 8, 1);
  if (chosen == NULL)
    return generic_status (NVME_SC_INTERNAL);
  while ((n = zn_report_zones (dev, sector, zones, REPORT_BATCH)) > 0) {
    for (unsigned i = 0; i < n; i++) {
      uint64_t idx = zones[i].start / g->zone_sectors;

      if (select_all_applies (op, zones[i].cond))
        chosen[idx / 8] |= (unsigned char) (1u << (idx % 8));
    }
    sector = zones[n - 1].start + zones[n - 1].len;
  }
  for (uint64_t idx = 0; idx < g->nr_zones; idx++) {
    enum zn_reason why;
    int r;

    if (!(chosen[idx / 8] & (1u << (idx % 8))))
      continue;
    r = zn_zone_mgmt_why (dev, op, idx * g->zone_sectors, g->zone_sectors,
                          &why);
    if (r && first_err == 0) {
      first_err = r;
      first_why = why;
    }
  }
  free (chosen);
  return errno_status (first_err, first_why, true);
}

uint16_t
nvme_zns_mgmt_send (struct zn_dev *dev, uint64_t slba, uint8_t zsa,
                    bool select_all, struct zn_fault *f)
{
  struct nvme_zns_op op = {
    .kind = NVME_ZNS_OP_MGMT_SEND, .slba = slba, .zsa = zsa,
    .select_all = select_all,
  };

  return run_op (dev, &op, f, NULL);
}

/* ZRASF's state filters as zone conditions; -1 for all, -2 for none. */
static int
zrasf_cond (uint8_t zrasf)
{
  switch (zrasf) {
  case NVME_ZNS_ZRAS_REPORT_ALL: return -1;
  case NVME_ZNS_ZRAS_REPORT_EMPTY: return ZN_COND_EMPTY;
  case NVME_ZNS_ZRAS_REPORT_IMPL_OPENED: return ZN_COND_IMP_OPEN;
  case NVME_ZNS_ZRAS_REPORT_EXPL_OPENED: return ZN_COND_EXP_OPEN;
  case NVME_ZNS_ZRAS_REPORT_CLOSED: return ZN_COND_CLOSED;
  case NVME_ZNS_ZRAS_REPORT_FULL: return ZN_COND_FULL;
  case NVME_ZNS_ZRAS_REPORT_READ_ONLY: return ZN_COND_READONLY;
  case NVME_ZNS_ZRAS_REPORT_OFFLINE: return ZN_COND_OFFLINE;
  default: return -2;
  }
}

/* The write pointer is converted as is, as nvmet does: the model's
 * all-ones for READONLY and OFFLINE zones (null_blk's) becomes all-ones
 * LBAs shifted by the block size, a field the ZNS command set calls not
 * valid in those states.  The host then shows wp = start + len for a FULL zone
 * (nvme_zone_parse_entry), and for READONLY and OFFLINE the LBA turned
 * back into sectors: all-ones with 512-byte blocks, as null_blk's, its
 * low bits cleared with larger ones.
 */
static void
fill_desc (const struct zn_geometry *g, const struct zn_zone *z,
           struct nvme_zns_desc *d)
{
  uint32_t lbs = lba_sectors (g);

  memset (d, 0, sizeof *d);
  d->zt = NVME_ZONE_TYPE_SEQWRITE_REQ;
  d->zs = (uint8_t) (z->cond << 4);
  d->za = 0;
  d->zcap = htole64 (z->capacity / lbs);
  d->zslba = htole64 (z->start / lbs);
  d->wp = htole64 (z->wp / lbs);
}

uint16_t
nvme_zns_mgmt_recv (struct zn_dev *dev, uint64_t slba, uint8_t zra,
                    uint8_t zrasf, bool partial, void *buf, size_t len,
                    bool *busy)
{
  const struct zn_geometry *g = zn_dev_geometry (dev);
  struct nvme_zone_report *report = buf;
  struct zn_zone zones[REPORT_BATCH];
  int want = zrasf_cond (zrasf);
  size_t room, count = 0;
  uint64_t sector;
  int n;

  if (len < sizeof *report || zra != NVME_ZNS_ZRA_REPORT_ZONES || want == -2)
    return generic_status (NVME_SC_INVALID_FIELD);
  if (slba >= ns_blocks (g))
    return generic_status (NVME_SC_LBA_RANGE);
  room = (len - sizeof *report) / sizeof report->entries[0];
  memset (buf, 0, len);
  if (busy)
    *busy = false;

  /* Without partial, every matching zone to the end is counted: one pass
   * over the zone table, in batches.  With it, the walk ends once the
   * buffer is full.
   */
  sector = slba * lba_sectors (g);
  while (!(partial && count >= room)
         && (n = busy ? zn_report_zones_nowait (dev, sector, zones,
                                                REPORT_BATCH)
                      : (int) zn_report_zones (dev, sector, zones,
                                               REPORT_BATCH)) != 0) {
    if (n < 0) {
      *busy = true;
      return 0;
    }
    for (int i = 0; i < n && !(partial && count >= room); i++) {
      if (want >= 0 && zones[i].cond != want)
        continue;
      if (count < room)
        fill_desc (g, &zones[i], &report->entries[count]);
      count++;
    }
    sector = zones[n - 1].start + zones[n - 1].len;
  }
  report->nr_zones = htole64 (count);
  return 0;
}
