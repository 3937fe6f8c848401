/* SPDX-License-Identifier: BSD-3-Clause */
/* The SQE's fields (command.h): the only place that reads its bytes. */
#include <nvme/types.h>

#include "command.h"
#include "pdu.h"

void
nvme_cmd_parse (const unsigned char *sqe, struct nvme_cmd *cmd)
{
  *cmd = (struct nvme_cmd) {
    .opcode = sqe[LOC_OPCODE],
    .flags = sqe[LOC_FLAGS],
    .cid = get_le16 (sqe + 2),
    .nsid = get_le32 (sqe + LOC_NSID),
    .fctype = sqe[LOC_FCTYPE],
    .sgl_addr = get_le64 (sqe + LOC_SGL_ADDR),
    .sgl_len = get_le32 (sqe + LOC_SGL_LEN),
    .sgl_type = sqe[LOC_SGL_TYPE],
    .family = CF_OTHER,
  };
}

bool
nvme_cmd_is_connect (const struct nvme_cmd *cmd)
{
  return cmd->opcode == nvme_admin_fabrics
         && cmd->fctype == nvme_fabrics_type_connect;
}

bool
nvme_cmd_is_auth (const struct nvme_cmd *cmd)
{
  return cmd->opcode == nvme_admin_fabrics
         && (cmd->fctype == nvme_fabrics_type_auth_send
             || cmd->fctype == nvme_fabrics_type_auth_receive);
}

bool
nvme_cmd_to_ctrl (const struct nvme_cmd *cmd)
{
  return (cmd->opcode & 1)
         && !(cmd->opcode == nvme_admin_fabrics
              && cmd->fctype == nvme_fabrics_type_auth_receive);
}

static void
decode_fabrics (const unsigned char *sqe, struct nvme_cmd *cmd)
{
  switch (cmd->fctype) {
  case nvme_fabrics_type_connect:
    cmd->family = CF_CONNECT;
    cmd->u.connect = (struct cmd_connect) {
      .recfmt = get_le16 (sqe + LOC_RECFMT),
      .qid = get_le16 (sqe + LOC_QID),
      .sqsize = get_le16 (sqe + LOC_SQSIZE),
      .cattr = sqe[LOC_CATTR],
      .kato = get_le32 (sqe + LOC_KATO),
    };
    break;
  case nvme_fabrics_type_property_get:
  case nvme_fabrics_type_property_set:
    cmd->family = CF_PROP;
    cmd->u.prop = (struct cmd_prop) {
      .attrib = sqe[LOC_ATTRIB] & 7,
      .offset = get_le32 (sqe + LOC_PROP_OFFSET),
      .value = get_le64 (sqe + LOC_PROP_VALUE),
    };
    break;
  case nvme_fabrics_type_auth_send:
  case nvme_fabrics_type_auth_receive:
    cmd->family = CF_AUTH;
    cmd->u.auth = (struct cmd_auth) {
      .spsp0 = sqe[LOC_SPSP0],
      .spsp1 = sqe[LOC_SPSP1],
      .secp = sqe[LOC_SECP],
      .len = get_le32 (sqe + LOC_AUTH_LEN),
    };
    break;
  default:
    break;
  }
}

static void
decode_admin (const unsigned char *sqe, struct nvme_cmd *cmd)
{
  switch (cmd->opcode) {
  case nvme_admin_identify:
    cmd->family = CF_IDENTIFY;
    cmd->u.identify = (struct cmd_identify) {
      .cns = sqe[LOC_CNS],
      .cntid = get_le16 (sqe + LOC_CNTID),
      .csi = sqe[LOC_ID_CSI],
    };
    break;
  case nvme_admin_get_log_page:
    cmd->family = CF_LOG;
    cmd->u.log = (struct cmd_log) {
      .lid = sqe[LOC_LID],
      .lsp = sqe[LOC_LSP] & 0x7f,       /* bit 15 of the dword: RAE */
      .numd = ((uint64_t) get_le16 (sqe + LOC_NUMDU) << 16
               | get_le16 (sqe + LOC_NUMDL)) + 1,
      .lpo = get_le64 (sqe + LOC_LPO),
      .csi = sqe[LOC_LOG_CSI],
    };
    break;
  case nvme_admin_get_features:
  case nvme_admin_set_features:
    cmd->family = CF_FEATURES;
    cmd->u.features = (struct cmd_features) {
      .fid = sqe[LOC_FID],
      .sel = sqe[LOC_SEL] & 7,
      .save = sqe[LOC_SV] >> 7,
      .value = get_le32 (sqe + LOC_FEAT_VALUE),
    };
    break;
  default:
    break;
  }
}

static void
decode_io (const unsigned char *sqe, struct nvme_cmd *cmd)
{
  uint64_t slba = get_le64 (sqe + LOC_SLBA);

  switch (cmd->opcode) {
  case nvme_cmd_read: case nvme_cmd_write: case nvme_cmd_write_zeroes:
  case nvme_zns_cmd_append:
    cmd->family = CF_RW;
    cmd->u.rw = (struct cmd_rw) {
      .slba = slba,
      .nlb = get_le16 (sqe + LOC_NLB) + 1u,
      .control = get_le16 (sqe + LOC_CONTROL),
    };
    break;
  case nvme_zns_cmd_mgmt_send:
    cmd->family = CF_ZMS;
    cmd->u.zms = (struct cmd_zms) {
      .slba = slba,
      .zsa = sqe[LOC_ZSA],
      .select_all = sqe[LOC_SELECT_ALL] & 1,
    };
    break;
  case nvme_zns_cmd_mgmt_recv:
    cmd->family = CF_ZMR;
    cmd->u.zmr = (struct cmd_zmr) {
      .slba = slba,
      .numd = get_le32 (sqe + LOC_ZM_NUMD) + 1ull,
      .zra = sqe[LOC_ZRA],
      .zrasf = sqe[LOC_ZRASF],
      .partial = sqe[LOC_PARTIAL] & 1,
    };
    break;
  default:
    break;
  }
}

void
nvme_cmd_decode (const unsigned char *sqe, bool io_queue,
                 struct nvme_cmd *cmd)
{
  cmd->family = CF_OTHER;
  if (cmd->opcode == nvme_admin_fabrics)
    decode_fabrics (sqe, cmd);
  else if (io_queue)
    decode_io (sqe, cmd);
  else
    decode_admin (sqe, cmd);
}

uint64_t
nvme_cmd_lba (const struct nvme_cmd *cmd)
{
  switch (cmd->family) {
  case CF_RW: return cmd->u.rw.slba;
  case CF_ZMS: return cmd->u.zms.slba;
  case CF_ZMR: return cmd->u.zmr.slba;
  default: return 0;
  }
}
