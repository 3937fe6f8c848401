/* SPDX-License-Identifier: BSD-3-Clause */
/* The admin commands a Linux host sends to a controller of the
 * subsystem or to the discovery controller: Identify, Get Log Page,
 * Set and Get Features, Keep Alive, Asynchronous Event Request, Abort.
 */
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nvme/types.h>

#include "model/zoned.h"
#include "internal.h"
#include "zns.h"

/* Keep Alive Support: the granularity of KATO, 100 ms units. */
#define KAS_100MS 10
/* No optional NVM command: no Write Zeroes (null_blk has none, so the
 * host's zeroout writes zero pages on both; the command is served all
 * the same), and no saved feature values (Save and Select, bit 4: Get
 * Features' SEL and Set Features' SV are refused).
 */
#define ONCS 0

static void
pad_text (char *dst, size_t size, const char *src)
{
  size_t n = strnlen (src, size);

  memcpy (dst, src, n);
  memset (dst + n, ' ', size - n);
}

/* FNV-1a of the subsystem NQN and a salt: serial number and namespace
 * UUIDs that differ between servers (a host refuses the same IDs from
 * two subsystems).
 */
static uint64_t
nqn_hash (const char *nqn, uint64_t salt)
{
  uint64_t h = 0xcbf29ce484222325ull ^ salt;

  for (const char *p = nqn; *p; p++)
    h = (h ^ (unsigned char) *p) * 0x100000001b3ull;
  return h;
}

static bool
has_volatile_cache (const struct nvme_served *sv)
{
  for (unsigned i = 0; i < sv->nr_devices; i++) {
    uint64_t size, dirty;

    zn_cache_stats (sv->devices[i].dev, &size, &dirty);
    if (size > 0 || zn_dev_backing_dir (sv->devices[i].dev))
      return true;
  }
  return false;
}

/* Identify Controller's VWC: a volatile write cache, which is on. */
static bool
vwc_present (const struct nvme_session *s)
{
  return !s->ctrl->discovery && has_volatile_cache (s->sv);
}

static void
id_ctrl (const struct nvme_session *s, struct nvme_id_ctrl *id)
{
  const struct nvme_served *sv = s->sv;
  bool disc = s->ctrl->discovery;
  char sn[21];

  memset (id, 0, sizeof *id);
  snprintf (sn, sizeof sn, "%016llx",
            (unsigned long long) nqn_hash (sv->subnqn, 0));
  pad_text (id->sn, sizeof id->sn, sn);
  pad_text (id->mn, sizeof id->mn, "zonednull null_blk zoned");
  pad_text (id->fr, sizeof id->fr, PACKAGE_VERSION);
  /* CMIC 0: one controller per host in the subsystem, so that a Linux
   * host with multipath on puts no head device in front of the
   * namespaces (nvme_mpath_alloc_disk wants CMIC's multi-controller
   * bit), which would hide max_open_zones and max_active_zones.
   */
  id->cmic = 0;
  id->mdts = disc ? 0 : nvme_mdts (sv);
  id->cntlid = htole16 (s->ctrl->cntlid);
  id->ver = htole32 (0x00010400);
  id->cntrltype = disc ? NVME_CTRL_CNTRLTYPE_DISCOVERY : NVME_CTRL_CNTRLTYPE_IO;
  id->acl = 3;
  id->aerl = AER_LIMIT - 1;
  id->elpe = ERROR_LOG_SLOTS - 1;
  id->lpa = NVME_CTRL_LPA_EXTENDED | (disc ? 0 : NVME_CTRL_LPA_CMD_EFFECTS);
  id->kas = htole16 (KAS_100MS);
  id->sqes = 0x66;
  id->cqes = 0x44;
  id->maxcmd = htole16 ((uint16_t) (nvme_mqes (sv) + 1u));
  id->nn = htole32 (disc ? 0 : sv->nr_devices);
  id->oncs = htole16 (ONCS);
  if (vwc_present (s))
    id->vwc = NVME_CTRL_VWC_PRESENT;
  /* SGLs without alignment, in-capsule data at an offset. */
  id->sgls = htole32 (1u | NVME_CTRL_SGLS_OFFSET);
  strncpy (id->subnqn, disc ? DISCOVERY_NQN : sv->subnqn, sizeof id->subnqn);
  id->ioccsz = htole32 ((SQE_LEN + IO_INLINE_DATA) / 16);
  id->iorcsz = htole32 (CQE_LEN / 16);
  id->icdoff = 0;
  id->msdbd = 1;
}

static void
id_ns (const struct nvme_session *s, const struct served_device *d,
       struct nvme_id_ns *id)
{
  nvme_zns_id_ns (d->dev, id);
  /* A private namespace (see CMIC above). */
  id->nmic = 0;
  if (s->sv->readonly)
    id->nsattr |= 1;            /* write protected */
}

/* The namespace identification descriptors: a UUID, and the CSI. */
static size_t
ns_descs (const struct nvme_session *s, uint32_t nsid, unsigned char *buf)
{
  uint64_t a = nqn_hash (s->sv->subnqn, nsid);
  uint64_t b = nqn_hash (s->sv->subnqn, ~(uint64_t) nsid);
  unsigned char *p = buf;

  p[0] = NVME_NIDT_UUID;
  p[1] = NVME_NIDT_UUID_LEN;
  for (int i = 0; i < 8; i++) {
    p[4 + i] = (unsigned char) (a >> (8 * i));
    p[12 + i] = (unsigned char) (b >> (8 * i));
  }
  p[4 + 6] = (p[4 + 6] & 0x0f) | 0x40;  /* version 4 */
  p[4 + 8] = (p[4 + 8] & 0x3f) | 0x80;  /* variant 1 */
  p += 4 + NVME_NIDT_UUID_LEN;
  p[0] = NVME_NIDT_CSI;
  p[1] = NVME_NIDT_CSI_LEN;
  p[4] = NVME_CSI_ZNS;
  p += 4 + NVME_NIDT_CSI_LEN;
  return (size_t) (p - buf);
}

#define INVALID_FIELD ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD)
#define INVALID_NS ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_NS)
#define SGL_LENGTH ERR (NVME_SCT_GENERIC, NVME_SC_SGL_INVALID_DATA)

/* Whether cmd's SGL asks for len bytes exactly, as nvmet requires of a
 * command whose data length its fields fix (nvmet_check_transfer_len):
 * more or fewer is a host out of step with its own command, and its
 * data would be cut short or padded without a word.
 */
static bool
sgl_fits (const struct nvme_cmd *cmd, uint64_t len)
{
  return cmd->sgl_len == len;
}

static bool
known_csi (uint8_t csi)
{
  return csi == NVME_CSI_NVM || csi == NVME_CSI_ZNS;
}

/* 0, or the status Identify fails with (*loc: the field). */
static uint16_t
check_identify (const struct nvme_session *s, const struct nvme_cmd *cmd,
                uint16_t *loc)
{
  const struct cmd_identify *a = &cmd->u.identify;
  bool has_ns = nvme_namespace_of (s->sv, cmd->nsid) != NULL;

  *loc = LOC_SGL_LEN;
  if (!sgl_fits (cmd, NVME_IDENTIFY_DATA_SIZE))
    return SGL_LENGTH;
  *loc = LOC_CNS;
  /* A discovery controller has no namespaces, and no limits beyond
   * MDTS (the host asks CNS 6 of any controller).
   */
  if (s->ctrl->discovery && a->cns != NVME_IDENTIFY_CNS_CTRL
      && !(a->cns == NVME_IDENTIFY_CNS_CSI_CTRL && a->csi == NVME_CSI_NVM))
    return INVALID_FIELD;
  switch (a->cns) {
  case NVME_IDENTIFY_CNS_CTRL:
    return 0;
  case NVME_IDENTIFY_CNS_NS: case NVME_IDENTIFY_CNS_NS_DESC_LIST:
    *loc = LOC_NSID;
    return has_ns ? 0 : INVALID_NS;
  case NVME_IDENTIFY_CNS_NS_ACTIVE_LIST:
    *loc = LOC_NSID;
    return cmd->nsid < 0xfffffffe ? 0 : INVALID_NS;
  case NVME_IDENTIFY_CNS_CSI_NS:
    *loc = LOC_NSID;
    if (!has_ns)
      return INVALID_NS;
    /* fall through */
  case NVME_IDENTIFY_CNS_CSI_CTRL:
    *loc = LOC_ID_CSI;
    return known_csi (a->csi) ? 0 : INVALID_FIELD;
  default:
    return INVALID_FIELD;
  }
}

/* The data of a valid Identify into buf (zeroed). */
static void
identify_data (const struct nvme_session *s, const struct nvme_cmd *cmd,
               unsigned char *buf)
{
  const struct nvme_served *sv = s->sv;
  const struct cmd_identify *a = &cmd->u.identify;
  const struct served_device *d = nvme_namespace_of (sv, cmd->nsid);

  switch (a->cns) {
  case NVME_IDENTIFY_CNS_CTRL:
    id_ctrl (s, (struct nvme_id_ctrl *) buf);
    break;
  case NVME_IDENTIFY_CNS_NS:
    id_ns (s, d, (struct nvme_id_ns *) buf);
    break;
  case NVME_IDENTIFY_CNS_NS_ACTIVE_LIST: {
    unsigned n = 0;

    for (uint32_t id = cmd->nsid + 1; id <= sv->nr_devices && n < 1024; id++)
      put_le32 (buf + 4 * n++, id);
    break;
  }
  case NVME_IDENTIFY_CNS_NS_DESC_LIST:
    ns_descs (s, cmd->nsid, buf);
    break;
  case NVME_IDENTIFY_CNS_CSI_NS:
    if (a->csi == NVME_CSI_ZNS)
      nvme_zns_id_ns_zns (d->dev, (struct nvme_zns_id_ns *) buf);
    break;                      /* NVM: nothing beyond CNS 0 */
  default:                      /* CSI_CTRL */
    if (a->csi == NVME_CSI_ZNS) {
      struct zn_dev **devs = calloc (sv->nr_devices + 1u, sizeof *devs);

      if (devs == NULL)
        nvme_out_of_memory (s);
      for (unsigned i = 0; i < sv->nr_devices; i++)
        devs[i] = sv->devices[i].dev;
      nvme_zns_id_ctrl_zns (devs, sv->nr_devices,
                            (struct nvme_zns_id_ctrl *) buf);
      free (devs);
    }
    break;                      /* NVM: no limits beyond MDTS */
  }
}

static void
identify (struct nvme_session *s, const struct nvme_cmd *cmd)
{
  uint16_t loc, st = check_identify (s, cmd, &loc);
  unsigned char *buf;

  if (st) {
    nvme_fail (s, cmd, st, loc);
    return;
  }
  if ((buf = calloc (1, NVME_IDENTIFY_DATA_SIZE)) == NULL)
    nvme_out_of_memory (s);
  identify_data (s, cmd, buf);
  nvme_reply_data (s, cmd, buf, NVME_IDENTIFY_DATA_SIZE);
  free (buf);
}

/* ---- the Error Information log ------------------------------------------ */

void
nvme_ctrl_log_error (struct nvme_ctrl *c, uint16_t sqid, const struct nvme_cmd *cmd,
                uint16_t status, uint16_t loc)
{
  nvme_ctrl_lock ();
  nvme_ctrl_log_error_locked (c, sqid, cmd, status, loc);
  nvme_ctrl_unlock ();
}

void
nvme_ctrl_log_error_locked (struct nvme_ctrl *c, uint16_t sqid,
                            const struct nvme_cmd *cmd, uint16_t status,
                            uint16_t loc)
{
  struct nvme_error_log_page *e;

  c->nr_errors++;
  e = &c->errors[c->nr_errors % ERROR_LOG_SLOTS];
  memset (e, 0, sizeof *e);
  e->error_count = htole64 (c->nr_errors);
  e->sqid = htole16 (sqid);
  e->cmdid = htole16 (cmd->cid);
  e->status_field = htole16 ((uint16_t) (status << 1));   /* phase: 0 */
  e->parm_error_location = htole16 (loc);
  e->lba = htole64 (nvme_cmd_lba (cmd));
  e->nsid = htole32 (cmd->opcode == nvme_admin_fabrics ? 0 : cmd->nsid);
}

/* The entries, newest first; the slots not used yet are zeroes. */
static size_t
error_log (const struct nvme_session *s, unsigned char **buf)
{
  const struct nvme_ctrl *c = s->ctrl;
  struct nvme_error_log_page *e = calloc (ERROR_LOG_SLOTS, sizeof *e);
  uint64_t n;

  if (e == NULL)
    nvme_out_of_memory (s);
  /* The I/O queues' loops enter their errors meanwhile. */
  nvme_ctrl_lock ();
  n = c->nr_errors < ERROR_LOG_SLOTS ? c->nr_errors : ERROR_LOG_SLOTS;
  for (uint64_t i = 0; i < n; i++)
    e[i] = c->errors[(c->nr_errors - i) % ERROR_LOG_SLOTS];
  nvme_ctrl_unlock ();
  *buf = (unsigned char *) e;
  return ERROR_LOG_SLOTS * sizeof *e;
}

/* ---- logs ----------------------------------------------------------------- */

/* 0, or the status Get Log Page fails with (*loc: the field). */
static uint16_t
check_log (const struct nvme_session *s, const struct nvme_cmd *cmd,
           uint16_t *loc)
{
  const struct cmd_log *a = &cmd->u.log;

  *loc = LOC_SGL_LEN;
  if (!sgl_fits (cmd, a->numd * 4))
    return SGL_LENGTH;
  *loc = LOC_NUMDL;
  if (a->numd * 4 > MAX_ADMIN_DATA)
    return INVALID_FIELD;
  *loc = LOC_LPO;
  if (a->lpo & 3)
    return INVALID_FIELD;
  *loc = LOC_LID;
  if (s->ctrl->discovery)
    return a->lid == NVME_LOG_LID_DISCOVER
           ? 0 : ERR (NVME_SCT_CMD_SPECIFIC, NVME_SC_INVALID_LOG_PAGE);
  switch (a->lid) {
  case NVME_LOG_LID_ERROR: case NVME_LOG_LID_SMART:
    return 0;
  case NVME_LOG_LID_CMD_EFFECTS:
    *loc = LOC_LOG_CSI;
    return known_csi (a->csi) ? 0 : INVALID_FIELD;
  default:
    return ERR (NVME_SCT_CMD_SPECIFIC, NVME_SC_INVALID_LOG_PAGE);
  }
}

/* The log page of a valid Get Log Page, whole, into *buf (malloc'd):
 * its length.
 */
static size_t
log_page (struct nvme_session *s, const struct cmd_log *a, unsigned char **buf)
{
  size_t len;

  switch (a->lid) {
  case NVME_LOG_LID_DISCOVER:
    return nvme_discovery_log (s, buf);
  case NVME_LOG_LID_ERROR:
    return error_log (s, buf);
  case NVME_LOG_LID_SMART:
    len = sizeof (struct nvme_smart_log);
    break;
  default:                      /* CMD_EFFECTS */
    len = sizeof (struct nvme_cmd_effects_log);
    break;
  }
  if ((*buf = calloc (1, len)) == NULL)
    nvme_out_of_memory (s);
  if (a->lid == NVME_LOG_LID_SMART) {
    struct nvme_smart_log *smart = (struct nvme_smart_log *) *buf;

    smart->temperature[0] = 298 & 0xff;   /* 25 C, in kelvin */
    smart->temperature[1] = 298 >> 8;
    smart->avail_spare = 100;
    smart->spare_thresh = 10;
  }
  else
    nvme_zns_effects (a->csi, (struct nvme_cmd_effects_log *) *buf);
  return len;
}

static void
get_log_page (struct nvme_session *s, const struct nvme_cmd *cmd)
{
  const struct cmd_log *a = &cmd->u.log;
  unsigned char *page = NULL, *out;
  uint16_t loc, st = check_log (s, cmd, &loc);
  size_t len, want = (size_t) a->numd * 4;

  if (st) {
    nvme_fail (s, cmd, st, loc);
    return;
  }
  len = log_page (s, a, &page);
  if (a->lpo > len) {
    nvme_fail (s, cmd, INVALID_FIELD, LOC_LPO);
    free (page);
    return;
  }
  /* Past its end the page reads as zeroes. */
  if ((out = calloc (1, want)) == NULL)
    nvme_out_of_memory (s);
  memcpy (out, page + a->lpo, len - a->lpo < want ? len - a->lpo : want);
  nvme_reply_data (s, cmd, out, want);
  free (out);
  free (page);
}

/* ---- features ------------------------------------------------------------- */

/* 0, or the status Get or Set Features fails with (*loc: the field). */
static uint16_t
check_features (const struct nvme_session *s, const struct nvme_cmd *cmd,
                bool set, uint16_t *loc)
{
  const struct cmd_features *a = &cmd->u.features;
  uint32_t v = a->value;

  /* Without Save and Select in ONCS, a feature has its current value
   * only: no other to select, none to save.
   */
  _Static_assert (!(ONCS & NVME_CTRL_ONCS_SAVE_FEATURES),
                  "SEL and SV would have to be served");
  *loc = set ? LOC_SV : LOC_SEL;
  if (set ? a->save : a->sel != NVME_GET_FEATURES_SEL_CURRENT)
    return INVALID_FIELD;
  *loc = LOC_FID;
  switch (a->fid) {
  case NVME_FEAT_FID_NUM_QUEUES:
    if (s->ctrl->discovery)
      return INVALID_FIELD;
    *loc = LOC_FEAT_VALUE;
    return set && (NVME_GET (v, FEAT_NRQS_NSQR) == 0xffff
                   || NVME_GET (v, FEAT_NRQS_NCQR) == 0xffff)
           ? INVALID_FIELD : 0;
  case NVME_FEAT_FID_KATO: case NVME_FEAT_FID_ASYNC_EVENT:
    return 0;
  case NVME_FEAT_FID_VOLATILE_WC:
    /* A cache there is stays on (a flush is what makes data durable,
     * the model has no write-through mode), so WCE may only be set to
     * what it is; none there, nothing to set.
     */
    if (!set)
      return 0;
    if (!vwc_present (s))
      return INVALID_FIELD;
    *loc = LOC_FEAT_VALUE;
    return NVME_GET (v, FEAT_VWC_WCE) ? 0 : INVALID_FIELD;
  default:
    return INVALID_FIELD;
  }
}

/* Whether c has an I/O queue, bound or authenticating, under
 * ctrl_lock.
 */
static bool
has_io_queues (const struct nvme_ctrl *c)
{
  if (c->pending)
    return true;
  for (unsigned q = 1; q <= c->sv->max_queues; q++)
    if (c->ioq[q])
      return true;
  return false;
}

/* Set Features Number of Queues: false, c unchanged, once c has an I/O
 * queue (their Connect read nr_queues, on any loop).
 */
static bool
set_nr_queues (struct nvme_session *s, struct nvme_ctrl *c, uint32_t v)
{
  unsigned nsq = NVME_GET (v, FEAT_NRQS_NSQR) + 1u;
  unsigned ncq = NVME_GET (v, FEAT_NRQS_NCQR) + 1u;
  unsigned n = nsq < ncq ? nsq : ncq;
  bool busy;

  nvme_ctrl_lock ();
  busy = has_io_queues (c);
  if (!busy)
    c->nr_queues = n < s->sv->max_queues ? n : s->sv->max_queues;
  nvme_ctrl_unlock ();
  return !busy;
}

static void
features (struct nvme_session *s, const struct nvme_cmd *cmd, bool set)
{
  struct nvme_ctrl *c = s->ctrl;
  uint32_t v = cmd->u.features.value;
  uint16_t loc, st = check_features (s, cmd, set, &loc);

  if (st) {
    nvme_fail (s, cmd, st, loc);
    return;
  }
  switch (cmd->u.features.fid) {
  case NVME_FEAT_FID_NUM_QUEUES:
    /* The host asks before its I/O queues; after, the base spec
     * requires Command Sequence Error.
     */
    if (set && !set_nr_queues (s, c, v)) {
      nvme_reply (s, cmd, ERR (NVME_SCT_GENERIC, NVME_SC_CMD_SEQ_ERROR), 0);
      return;
    }
    nvme_reply (s, cmd, 0, NVME_SET (c->nr_queues - 1u, FEAT_NRQS_NSQR)
                      | NVME_SET (c->nr_queues - 1u, FEAT_NRQS_NCQR));
    return;
  case NVME_FEAT_FID_KATO:
    if (set)
      nvme_ctrl_set_kato (s, c, v);
    nvme_reply (s, cmd, 0, c->kato);
    return;
  case NVME_FEAT_FID_ASYNC_EVENT:
    if (set)
      c->aec = v;
    nvme_reply (s, cmd, 0, c->aec);
    return;
  default:                      /* VOLATILE_WC: WCE as it is */
    nvme_reply (s, cmd, 0, NVME_SET (vwc_present (s), FEAT_VWC_WCE));
    return;
  }
}

/* Held until an event, which never comes: the subsystem does not
 * change.  Dropped with the controller.
 */
static void
async_event (struct nvme_session *s, const struct nvme_cmd *cmd)
{
  struct nvme_ctrl *c = s->ctrl;

  if (c->nr_aer == AER_LIMIT) {
    nvme_reply (s, cmd, ERR (NVME_SCT_CMD_SPECIFIC, NVME_SC_ASYNC_LIMIT), 0);
    return;
  }
  c->aer_cid[c->nr_aer++] = cmd->cid;
}

void
nvme_admin_command (struct nvme_session *s, const struct nvme_cmd *cmd,
               const unsigned char *data, uint32_t len)
{
  (void) data;
  (void) len;
  switch (cmd->opcode) {
  case nvme_admin_identify:
    identify (s, cmd);
    break;
  case nvme_admin_get_log_page:
    get_log_page (s, cmd);
    break;
  case nvme_admin_set_features:
    features (s, cmd, true);
    break;
  case nvme_admin_get_features:
    features (s, cmd, false);
    break;
  case nvme_admin_keep_alive:
    /* Its arrival already restarted the idle timer. */
    nvme_reply (s, cmd, 0, 0);
    break;
  case nvme_admin_async_event:
    async_event (s, cmd);
    break;
  case nvme_admin_abort_cmd:
    nvme_reply (s, cmd, 0, 1);       /* bit 0: not aborted */
    break;
  default:
    nvme_fail (s, cmd, ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_OPCODE), LOC_OPCODE);
    break;
  }
}

uint16_t
nvme_admin_data_status (const struct nvme_cmd *cmd)
{
  switch (cmd->opcode) {
  case nvme_admin_identify: case nvme_admin_get_log_page:
  case nvme_admin_set_features: case nvme_admin_get_features:
  case nvme_admin_keep_alive: case nvme_admin_async_event:
  case nvme_admin_abort_cmd: case nvme_admin_fabrics:
    return ERR (NVME_SCT_GENERIC, NVME_SC_SGL_INVALID_DATA);
  default:
    return ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_OPCODE);
  }
}
