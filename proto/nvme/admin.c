/* The admin commands a Linux host sends to a controller of the
 * subsystem or to the discovery controller: Identify, Get Log Page,
 * Set and Get Features, Keep Alive, Asynchronous Event Request, Abort.
 */
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nvme/types.h>

#include "zonednull/zoned.h"
#include "internal.h"
#include "zns.h"

/* Keep Alive Support: the granularity of KATO, 100 ms units. */
#define KAS_100MS 10

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
  id->lpa = NVME_CTRL_LPA_EXTENDED | (disc ? 0 : NVME_CTRL_LPA_CMD_EFFECTS);
  id->kas = htole16 (KAS_100MS);
  id->sqes = 0x66;
  id->cqes = 0x44;
  id->maxcmd = htole16 ((uint16_t) (nvme_mqes (sv) + 1u));
  id->nn = htole32 (disc ? 0 : sv->nr_devices);
  /* No Write Zeroes in ONCS: null_blk has none, so the host's zeroout
   * writes zero pages on both.  The command is served all the same.
   */
  id->oncs = 0;
  if (!disc && has_volatile_cache (sv))
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

static void
identify (struct nvme_session *s, const struct nvme_cmd *cmd)
{
  const struct nvme_served *sv = s->sv;
  uint8_t cns = cmd->cdw[10] & 0xff, csi = cmd->cdw[11] >> 24;
  const struct served_device *d = namespace_of (sv, cmd->nsid);
  bool disc = s->ctrl->discovery;
  unsigned char *buf = calloc (1, NVME_IDENTIFY_DATA_SIZE);
  uint16_t st = 0;

  if (buf == NULL)
    nvme_out_of_memory (s);
  /* A discovery controller has no namespaces, and no limits beyond
   * MDTS (the host asks CNS 6 of any controller).
   */
  if (disc && cns != NVME_IDENTIFY_CNS_CTRL
      && !(cns == NVME_IDENTIFY_CNS_CSI_CTRL && csi == NVME_CSI_NVM))
    st = ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD);
  else switch (cns) {
  case NVME_IDENTIFY_CNS_CTRL:
    id_ctrl (s, (struct nvme_id_ctrl *) buf);
    break;
  case NVME_IDENTIFY_CNS_NS:
    if (d == NULL)
      st = ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_NS);
    else
      id_ns (s, d, (struct nvme_id_ns *) buf);
    break;
  case NVME_IDENTIFY_CNS_NS_ACTIVE_LIST: {
    unsigned n = 0;

    if (cmd->nsid >= 0xfffffffe) {
      st = ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_NS);
      break;
    }
    for (uint32_t id = cmd->nsid + 1; id <= sv->nr_devices && n < 1024; id++)
      put_le32 (buf + 4 * n++, id);
    break;
  }
  case NVME_IDENTIFY_CNS_NS_DESC_LIST:
    if (d == NULL)
      st = ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_NS);
    else
      ns_descs (s, cmd->nsid, buf);
    break;
  case NVME_IDENTIFY_CNS_CSI_NS:
    if (d == NULL)
      st = ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_NS);
    else if (csi == NVME_CSI_ZNS)
      nvme_zns_id_ns_zns (d->dev, (struct nvme_zns_id_ns *) buf);
    else if (csi != NVME_CSI_NVM)
      st = ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD);
    break;                      /* NVM: nothing beyond CNS 0 */
  case NVME_IDENTIFY_CNS_CSI_CTRL:
    if (csi == NVME_CSI_ZNS) {
      struct zn_dev **devs = calloc (sv->nr_devices + 1u, sizeof *devs);

      if (devs == NULL)
        nvme_out_of_memory (s);
      for (unsigned i = 0; i < sv->nr_devices; i++)
        devs[i] = sv->devices[i].dev;
      nvme_zns_id_ctrl_zns (devs, sv->nr_devices,
                            (struct nvme_zns_id_ctrl *) buf);
      free (devs);
    }
    else if (csi != NVME_CSI_NVM)
      st = ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD);
    break;                      /* NVM: no limits beyond MDTS */
  default:
    st = ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD);
    break;
  }
  if (st)
    reply (s, cmd, st, 0);
  else
    reply_data (s, cmd, buf, NVME_IDENTIFY_DATA_SIZE);
  free (buf);
}

/* The log page lid, whole, into *buf (malloc'd): its length, or 0 with
 * *st set.
 */
static size_t
log_page (struct nvme_session *s, uint8_t lid, uint8_t csi,
          unsigned char **buf, uint16_t *st)
{
  bool disc = s->ctrl->discovery;
  size_t len;

  if (lid == NVME_LOG_LID_DISCOVER && disc)
    return discovery_log (s, buf);
  switch (disc ? 0xff : lid) {
  case NVME_LOG_LID_ERROR:
    len = sizeof (struct nvme_error_log_page);
    break;
  case NVME_LOG_LID_SMART:
    len = sizeof (struct nvme_smart_log);
    break;
  case NVME_LOG_LID_CMD_EFFECTS:
    if (csi != NVME_CSI_NVM && csi != NVME_CSI_ZNS) {
      *st = ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD);
      return 0;
    }
    len = sizeof (struct nvme_cmd_effects_log);
    break;
  default:
    *st = ERR (NVME_SCT_CMD_SPECIFIC, NVME_SC_INVALID_LOG_PAGE);
    return 0;
  }
  if ((*buf = calloc (1, len)) == NULL)
    nvme_out_of_memory (s);
  if (lid == NVME_LOG_LID_SMART) {
    struct nvme_smart_log *smart = (struct nvme_smart_log *) *buf;

    smart->temperature[0] = 298 & 0xff;   /* 25 C, in kelvin */
    smart->temperature[1] = 298 >> 8;
    smart->avail_spare = 100;
    smart->spare_thresh = 10;
  }
  else if (lid == NVME_LOG_LID_CMD_EFFECTS)
    nvme_zns_effects (csi, (struct nvme_cmd_effects_log *) *buf);
  return len;
}

static void
get_log_page (struct nvme_session *s, const struct nvme_cmd *cmd)
{
  uint8_t lid = cmd->cdw[10] & 0xff, csi = cmd->cdw[14] >> 24;
  uint64_t numd = ((uint64_t) (cmd->cdw[11] & 0xffff) << 16
                   | cmd->cdw[10] >> 16) + 1;
  uint64_t lpo = (uint64_t) cmd->cdw[12] | (uint64_t) cmd->cdw[13] << 32;
  unsigned char *page = NULL, *out;
  uint16_t st = 0;
  size_t len, want;

  if (numd * 4 > MAX_ADMIN_DATA || lpo & 3) {
    reply (s, cmd, ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD), 0);
    return;
  }
  want = (size_t) numd * 4;
  len = log_page (s, lid, csi, &page, &st);
  if (st || lpo > len) {
    reply (s, cmd, st ? st : ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD), 0);
    free (page);
    return;
  }
  /* Past its end the page reads as zeroes. */
  if ((out = calloc (1, want)) == NULL)
    nvme_out_of_memory (s);
  memcpy (out, page + lpo, len - lpo < want ? len - lpo : want);
  reply_data (s, cmd, out, want);
  free (out);
  free (page);
}

static void
features (struct nvme_session *s, const struct nvme_cmd *cmd, bool set)
{
  struct nvme_ctrl *c = s->ctrl;
  uint8_t fid = cmd->cdw[10] & 0xff;
  uint32_t v = cmd->cdw[11];

  switch (fid) {
  case NVME_FEAT_FID_NUM_QUEUES:
    if (c->discovery)
      break;
    if (set) {
      unsigned nsq = (v & 0xffff) + 1u, ncq = (v >> 16) + 1u, n;

      if ((v & 0xffff) == 0xffff || v >> 16 == 0xffff)
        break;
        /* The host asks once, before its I/O queues. */
      n = nsq < ncq ? nsq : ncq;
      c->nr_queues = n < s->sv->max_queues ? n : s->sv->max_queues;
    }
    reply (s, cmd, 0, (c->nr_queues - 1u) | (c->nr_queues - 1u) << 16);
    return;
  case NVME_FEAT_FID_KATO:
    if (set)
      ctrl_set_kato (s, c, v);
    reply (s, cmd, 0, c->kato);
    return;
  case NVME_FEAT_FID_ASYNC_EVENT:
    if (set)
      c->aec = v;
    reply (s, cmd, 0, c->aec);
    return;
  case NVME_FEAT_FID_VOLATILE_WC:
    if (!set) {
      reply (s, cmd, 0, 0);
      return;
    }
    break;
  default:
    break;
  }
  reply (s, cmd, ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD), 0);
}

/* Held until an event, which never comes: the subsystem does not
 * change.  Dropped with the controller.
 */
static void
async_event (struct nvme_session *s, const struct nvme_cmd *cmd)
{
  struct nvme_ctrl *c = s->ctrl;

  if (c->nr_aer == AER_LIMIT) {
    reply (s, cmd, ERR (NVME_SCT_CMD_SPECIFIC, NVME_SC_ASYNC_LIMIT), 0);
    return;
  }
  c->aer_cid[c->nr_aer++] = cmd->cid;
}

void
admin_command (struct nvme_session *s, const struct nvme_cmd *cmd,
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
    reply (s, cmd, 0, 0);
    break;
  case nvme_admin_async_event:
    async_event (s, cmd);
    break;
  case nvme_admin_abort_cmd:
    reply (s, cmd, 0, 1);       /* bit 0: not aborted */
    break;
  default:
    reply (s, cmd, ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_OPCODE), 0);
    break;
  }
}

uint16_t
admin_data_status (const struct nvme_cmd *cmd)
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
