/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of proto/nvme/zns.c: the model's devices as NVMe Zoned
 * Namespaces, without a session.  Statuses are compared whole, SCT, SC
 * and DNR, as the CQE carries them.
 *
 * Most devices have 1 MiB zones of 512-byte blocks, so zone z starts at
 * LBA z * 2048.
 */
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/fault.h"
#include "model/zoned.h"
#include "zns.h"
#include "../common/check.h"
#include "../common/dev.h"

/* The fault settings' verdict on the latest command (zns.h's *f). */
static struct zn_fault last_fault;

static struct zn_fault *
fault_of (void)
{
  last_fault = (struct zn_fault) { .action = ZN_FAULT_PASS };
  return &last_fault;
}

#define Z 2048                  /* 512-byte blocks in a 1 MiB zone */

#define ZNS(sc) (0x4000 | 0x100 | (sc))
#define GENERIC(sc) (0x4000 | (sc))

#define ST_OK 0
#define ST_INVALID_FIELD GENERIC (0x02)
#define ST_INTERNAL GENERIC (0x06)
#define ST_LBA_RANGE GENERIC (0x80)
#define ST_CAP_EXCEEDED GENERIC (0x81)
#define ST_BOUNDARY ZNS (0xb8)
#define ST_FULL ZNS (0xb9)
#define ST_READ_ONLY ZNS (0xba)
#define ST_OFFLINE ZNS (0xbb)
#define ST_INVALID_WRITE ZNS (0xbc)
#define ST_TOO_MANY_ACTIVE ZNS (0xbd)
#define ST_TOO_MANY_OPENS ZNS (0xbe)
#define ST_INVAL_TRANSITION ZNS (0xbf)

/* Every error status carries DNR, so the host does not retry it. */
#define CHECK_STATUS(expr, expected)                                    \
  do {                                                                  \
    uint16_t cs_ = (expr);                                              \
    CHECK_EQ (cs_, (expected));                                         \
    if (cs_)                                                            \
      CHECK (cs_ & NVME_SC_DNR);                                        \
  } while (0)

static struct zn_dev *
mkdev (uint64_t size, uint64_t zone_size, uint64_t zone_cap, uint32_t bs,
       uint32_t max_open, uint32_t max_active, bool memory)
{
  struct zn_config c = geometry_config (size, zone_size, zone_cap, 0, bs);

  c.zone_max_open = max_open;
  c.zone_max_active = max_active;
  c.memory_backed = memory;
  return create (&c);
}

static struct zn_zone
zone_at (struct zn_dev *d, uint64_t lba)
{
  struct zn_zone z;
  uint32_t lbs = zn_dev_geometry (d)->block_size / 512;

  CHECK_EQ (zn_report_zones (d, lba * lbs, &z, 1), 1);
  return z;
}

static void *
xmalloc (size_t n)
{
  void *p = malloc (n);

  CHECK (p != NULL);
  return p;
}

/* nlb blocks of a pattern that depends on the LBA and tag. */
static void *
pattern (struct zn_dev *d, uint64_t slba, uint32_t nlb, unsigned tag)
{
  uint32_t lbs = zn_dev_geometry (d)->block_size / 512;
  void *buf = xmalloc ((size_t) nlb * lbs * 512);

  fill_pattern (buf, slba * lbs, (uint64_t) nlb * lbs, tag);
  return buf;
}

static uint16_t
write_tag (struct zn_dev *d, uint64_t slba, uint32_t nlb, unsigned tag)
{
  void *buf = pattern (d, slba, nlb, tag);
  uint16_t st = nvme_zns_write (d, slba, nlb, false, buf, fault_of ());

  free (buf);
  return st;
}

/* Reads nlb blocks at slba and compares them with the pattern. */
static void
expect_data (struct zn_dev *d, uint64_t slba, uint32_t nlb, unsigned tag)
{
  size_t len = (size_t) nlb * zn_dev_geometry (d)->block_size;
  void *want = pattern (d, slba, nlb, tag);
  void *got = xmalloc (len);

  CHECK_STATUS (nvme_zns_read (d, slba, nlb, got, fault_of ()), ST_OK);
  CHECK (memcmp (got, want, len) == 0);
  free (want);
  free (got);
}

static uint16_t
send (struct zn_dev *d, uint64_t slba, uint8_t zsa)
{
  return nvme_zns_mgmt_send (d, slba, zsa, false, fault_of ());
}

/* ---- refusals ------------------------------------------------------------ */

static void
expect_refused (const struct zn_config *c, const char *const *words)
{
  struct zn_dev *d = create (c);
  char err[512] = "";

  CHECK_EQ (nvme_zns_check (zn_dev_geometry (d), err, sizeof err), -1);
  /* The first word is the key the message starts with. */
  if (strncmp (err, words[0], strlen (words[0])) != 0
      || err[strlen (words[0])] != ':')
    fprintf (stderr, "message \"%s\" does not start with %s:\n", err,
             words[0]);
  CHECK (strncmp (err, words[0], strlen (words[0])) == 0);
  CHECK (err[strlen (words[0])] == ':');
  for (; *words; words++) {
    if (strstr (err, *words) == NULL)
      fprintf (stderr, "message \"%s\" lacks \"%s\"\n", err, *words);
    CHECK (strstr (err, *words) != NULL);
  }
  CHECK_EQ (nvme_zns_check (zn_dev_geometry (d), NULL, 0), -1);
  zn_dev_destroy (d);
}

static void
test_check (void)
{
  static const char *const conv_words[] = { "zone_nr_conv", NULL };
  static const char *const runt_words[] = {
    "size", "last zone is 1 MiB", "zone_size of 4 MiB", NULL
  };
  struct zn_config conv = geometry_config (16, 1, 0, 2, 512);
  struct zn_config runt = geometry_config (13, 4, 0, 0, 512);
  static const char *const small_words[] = {
    "max_sectors", "15 sectors", "8 KiB", NULL
  };
  static const char *const append_words[] = {
    "zone_append_max_sectors", "8 sectors", NULL
  };
  struct zn_config good = geometry_config (16, 4, 2, 0, 4096);
  struct zn_config small = geometry_config (16, 4, 0, 0, 512);
  struct zn_dev *d;
  char err[512] = "";

  expect_refused (&conv, conv_words);
  expect_refused (&runt, runt_words);
  /* An append limit under 8 KiB, which ZASL cannot express. */
  small.max_sectors = 15;
  expect_refused (&small, small_words);
  small.max_sectors = 16;
  d = create (&small);
  CHECK_EQ (nvme_zns_check (zn_dev_geometry (d), err, sizeof err), 0);
  zn_dev_destroy (d);
  small.kernel = ZN_KERNEL_6_12;
  small.zone_append_max_sectors = 8;
  small.given |= ZN_GIVEN_ZONE_APPEND_MAX_SECTORS;
  expect_refused (&small, append_words);
  d = create (&good);
  CHECK_EQ (nvme_zns_check (zn_dev_geometry (d), err, sizeof err), 0);
  CHECK_EQ (nvme_zns_check (zn_dev_geometry (d), NULL, 0), 0);
  zn_dev_destroy (d);
}

/* ---- identify and logs --------------------------------------------------- */

static void
expect_id_ns (uint32_t bs, unsigned ds, bool memory)
{
  struct zn_dev *d = mkdev (64, 4, 0, bs, 0, 0, memory);
  struct nvme_id_ns id;
  uint64_t blocks = (64u << 20) / bs;

  memset (&id, 0xAB, sizeof id);
  nvme_zns_id_ns (d, &id);
  CHECK_EQ (le64toh (id.nsze), blocks);
  CHECK_EQ (le64toh (id.ncap), blocks);
  CHECK_EQ (le64toh (id.nuse), blocks);
  CHECK_EQ (id.nlbaf, 0);
  CHECK_EQ (id.flbas, 0);
  CHECK_EQ (id.lbaf[0].ds, ds);
  CHECK_EQ (le16toh (id.lbaf[0].ms), 0);
  CHECK_EQ (id.nmic, 0);
  CHECK_EQ (le16toh (id.noiob), 0);
  CHECK_EQ (le16toh (id.npwg), 0);
  CHECK_EQ (le16toh (id.nows), 0);
  CHECK_EQ (id.nsfeat, 0);
  CHECK_EQ (id.lbaf[1].ds, 0);
  CHECK_EQ (id.dlfeat, memory ? NVME_NS_DLFEAT_RB_ALL_FS
                              : NVME_NS_DLFEAT_RB_ALL_0S);
  zn_dev_destroy (d);
}

static void
test_id_ns (void)
{
  expect_id_ns (512, 9, true);
  expect_id_ns (4096, 12, true);
  expect_id_ns (4096, 12, false);
}

static void
expect_limits (uint32_t max_open, uint32_t max_active, uint32_t mor,
               uint32_t mar)
{
  struct zn_dev *d = mkdev (64, 4, 0, 4096, max_open, max_active, false);
  struct nvme_zns_id_ns id;

  memset (&id, 0xAB, sizeof id);
  nvme_zns_id_ns_zns (d, &id);
  CHECK_EQ (le32toh (id.mor), mor);
  CHECK_EQ (le32toh (id.mar), mar);
  CHECK_EQ (le16toh (id.zoc), 0);
  CHECK_EQ (le16toh (id.ozcs), 0);
  CHECK_EQ (le32toh (id.rrl), 0);
  CHECK_EQ (le32toh (id.frl), 0);
  CHECK_EQ (le64toh (id.lbafe[0].zsze), (4u << 20) / 4096);
  CHECK_EQ (id.lbafe[0].zdes, 0);
  CHECK_EQ (le64toh (id.lbafe[1].zsze), 0);
  zn_dev_destroy (d);
}

static void
test_id_ns_zns (void)
{
  struct zn_dev *d = mkdev (16, 1, 0, 512, 0, 0, false);
  struct nvme_zns_id_ns id;

  /* 16 zones: the host adds one to MOR and MAR, so all-ones is none. */
  expect_limits (0, 0, UINT32_MAX, UINT32_MAX);
  expect_limits (3, 5, 2, 4);
  expect_limits (0, 4, UINT32_MAX, 3);
  expect_limits (4, 0, 3, UINT32_MAX);
  /* null_blk lowers max_open to max_active; 6.12 refuses more. */
  expect_limits (6, 4, 3, 3);
  /* A limit of every zone or more is no limit. */
  expect_limits (16, 20, UINT32_MAX, UINT32_MAX);

  nvme_zns_id_ns_zns (d, &id);
  CHECK_EQ (le64toh (id.lbafe[0].zsze), Z);
  zn_dev_destroy (d);
}

static struct zn_dev *
dev_max_sectors (uint32_t max_sectors)
{
  struct zn_config c = geometry_config (16, 1, 0, 0, 512);

  c.max_sectors = max_sectors;
  return create (&c);
}

static uint8_t
zasl_of (struct zn_dev *const *devs, unsigned n)
{
  struct nvme_zns_id_ctrl id;

  memset (&id, 0xAB, sizeof id);
  nvme_zns_id_ctrl_zns (devs, n, &id);
  for (size_t i = 0; i < sizeof id.rsvd1; i++)
    CHECK_EQ (id.rsvd1[i], 0);
  return id.zasl;
}

static void
test_zasl (void)
{
  struct zn_dev *devs[3] = {
    dev_max_sectors (0),        /* 255 sectors: 31 pages, down to 16 */
    dev_max_sectors (64),       /* 8 pages */
    dev_max_sectors (8),        /* one page: no ZASL but MDTS's */
  };

  CHECK_EQ (zn_dev_geometry (devs[0])->max_append_sectors, 255);
  CHECK_EQ (zasl_of (devs, 1), 4);
  CHECK_EQ (zasl_of (devs, 2), 3);
  CHECK_EQ (zasl_of (devs + 1, 1), 3);
  CHECK_EQ (zasl_of (devs, 3), 0);
  CHECK_EQ (zasl_of (devs, 0), 0);
  for (int i = 0; i < 3; i++)
    zn_dev_destroy (devs[i]);
}

/* 6.10's zone_append_max_sectors lowers the limit; 0 makes the block
 * layer emulate appends, which the namespace still serves as appends.
 */
static void
test_zasl_newer_kernel (void)
{
  struct zn_config c = geometry_config (16, 1, 0, 0, 512);
  struct zn_dev *d;
  uint64_t lba = UINT64_MAX;
  void *p;

  c.kernel = ZN_KERNEL_6_12;
  c.memory_backed = true;
  c.zone_append_max_sectors = 64;
  c.given |= ZN_GIVEN_ZONE_APPEND_MAX_SECTORS;
  d = create (&c);
  CHECK_EQ (zasl_of (&d, 1), 3);
  zn_dev_destroy (d);

  c.zone_append_max_sectors = 0;
  d = create (&c);
  CHECK (zn_dev_geometry (d)->append_emulated);
  CHECK_EQ (zasl_of (&d, 1), 4);
  p = pattern (d, Z, 8, 1);
  CHECK_STATUS (nvme_zns_append (d, Z, 8, false, p, &lba, fault_of ()), ST_OK);
  CHECK_EQ (lba, Z);
  CHECK_STATUS (nvme_zns_append (d, Z, 8, false, p, &lba, fault_of ()), ST_OK);
  CHECK_EQ (lba, Z + 8);
  free (p);
  expect_data (d, Z, 8, 1);
  zn_dev_destroy (d);
}

static void
test_effects (void)
{
  static const uint8_t admin[] = { 0x02, 0x06, 0x08, 0x09, 0x0a, 0x0c, 0x18 };
  const uint32_t csupp = NVME_CMD_EFFECTS_CSUPP;
  const uint32_t lbcc = NVME_CMD_EFFECTS_CSUPP | NVME_CMD_EFFECTS_LBCC;
  struct nvme_cmd_effects_log log;
  unsigned admin_count = 0;

  memset (&log, 0xAB, sizeof log);
  nvme_zns_effects (NVME_CSI_ZNS, &log);
  for (size_t i = 0; i < sizeof admin; i++)
    CHECK_EQ (le32toh (log.acs[admin[i]]), csupp);
  for (int i = 0; i < 256; i++)
    admin_count += log.acs[i] != 0;
  CHECK_EQ (admin_count, sizeof admin);
  CHECK_EQ (le32toh (log.acs[nvme_admin_fabrics]), 0);
  CHECK_EQ (le32toh (log.iocs[nvme_cmd_flush]), csupp);
  CHECK_EQ (le32toh (log.iocs[nvme_cmd_read]), csupp);
  CHECK_EQ (le32toh (log.iocs[nvme_cmd_write]), lbcc);
  CHECK_EQ (le32toh (log.iocs[nvme_cmd_write_zeroes]), lbcc);
  /* Without CSUPP here the host makes the namespace read-only. */
  CHECK_EQ (le32toh (log.iocs[nvme_zns_cmd_append]), lbcc);
  CHECK_EQ (le32toh (log.iocs[nvme_zns_cmd_mgmt_send]), lbcc);
  CHECK_EQ (le32toh (log.iocs[nvme_zns_cmd_mgmt_recv]), csupp);
  CHECK_EQ (le32toh (log.iocs[nvme_cmd_dsm]), 0);
  CHECK_EQ (log.rsvd[0], 0);

  memset (&log, 0xAB, sizeof log);
  nvme_zns_effects (NVME_CSI_NVM, &log);
  CHECK_EQ (le32toh (log.acs[nvme_admin_identify]), csupp);
  CHECK_EQ (le32toh (log.iocs[nvme_cmd_write]), lbcc);
  CHECK_EQ (le32toh (log.iocs[nvme_cmd_read]), csupp);
  CHECK_EQ (le32toh (log.iocs[nvme_zns_cmd_append]), 0);
  CHECK_EQ (le32toh (log.iocs[nvme_zns_cmd_mgmt_send]), 0);
  CHECK_EQ (le32toh (log.iocs[nvme_zns_cmd_mgmt_recv]), 0);
}

/* ---- I/O ------------------------------------------------------------------ */

static void
test_write_read (void)
{
  struct zn_dev *d = mkdev (16, 1, 0, 512, 0, 0, true);
  uint64_t nsze = 16 * Z;
  unsigned char buf[512];

  CHECK_STATUS (write_tag (d, 0, 8, 1), ST_OK);
  CHECK_STATUS (write_tag (d, 8, 16, 2), ST_OK);
  CHECK_EQ (zone_at (d, 0).wp, 24);
  expect_data (d, 0, 8, 1);
  expect_data (d, 8, 16, 2);
  /* FUA takes the same path. */
  {
    void *p = pattern (d, 24, 4, 3);
    CHECK_STATUS (nvme_zns_write (d, 24, 4, true, p, fault_of ()), ST_OK);
    free (p);
  }
  expect_data (d, 24, 4, 3);
  CHECK_STATUS (nvme_zns_flush (d, fault_of ()), ST_OK);

  /* Not at the write pointer, ahead of it or behind it. */
  CHECK_STATUS (write_tag (d, 100, 1, 4), ST_INVALID_WRITE);
  CHECK_STATUS (write_tag (d, 0, 1, 4), ST_INVALID_WRITE);
  CHECK_STATUS (write_tag (d, Z + 1, 1, 4), ST_INVALID_WRITE);
  CHECK_EQ (zone_at (d, 0).wp, 28);

  /* The range first. */
  CHECK_STATUS (write_tag (d, nsze, 1, 5), ST_LBA_RANGE);
  CHECK_STATUS (nvme_zns_read (d, nsze, 1, buf, fault_of ()), ST_LBA_RANGE);
  CHECK_STATUS (nvme_zns_read (d, nsze - 1, 2, buf, fault_of ()), ST_LBA_RANGE);
  CHECK_STATUS (nvme_zns_read (d, UINT64_MAX, 1, buf, fault_of ()), ST_LBA_RANGE);
  CHECK_STATUS (nvme_zns_read (d, 0, 0, buf, fault_of ()), ST_INVALID_FIELD);
  CHECK_STATUS (nvme_zns_write_zeroes (d, nsze - 1, 2, false, fault_of ()), ST_LBA_RANGE);

  /* No command crosses a zone boundary, and nothing of it lands. */
  {
    void *p = pattern (d, 28, Z, 6);
    CHECK_STATUS (nvme_zns_write (d, 28, Z, false, p, fault_of ()), ST_BOUNDARY);
    free (p);
  }
  CHECK_EQ (zone_at (d, 0).wp, 28);
  CHECK_EQ (zone_at (d, Z).cond, ZN_COND_EMPTY);
  {
    void *p = xmalloc (2 * 512);
    CHECK_STATUS (nvme_zns_read (d, Z - 1, 2, p, fault_of ()), ST_BOUNDARY);
    free (p);
  }
  zn_dev_destroy (d);
}

static void
test_write_4k (void)
{
  struct zn_dev *d = mkdev (16, 1, 0, 4096, 0, 0, true);
  const uint64_t zb = 256;      /* 4 KiB blocks in a zone */

  CHECK_STATUS (write_tag (d, zb, 3, 7), ST_OK);
  CHECK_EQ (zone_at (d, zb).wp, 2048 + 24);
  expect_data (d, zb, 3, 7);
  CHECK_STATUS (write_tag (d, zb + 4, 1, 7), ST_INVALID_WRITE);
  CHECK_STATUS (write_tag (d, 16 * zb, 1, 7), ST_LBA_RANGE);
  zn_dev_destroy (d);
}

static void
test_zone_states (void)
{
  struct zn_dev *d = mkdev (16, 1, 0, 512, 0, 0, true);
  unsigned char buf[512];

  /* FULL by finish, and by writing the capacity. */
  CHECK_STATUS (send (d, 0, NVME_ZNS_ZSA_FINISH), ST_OK);
  CHECK_STATUS (write_tag (d, 0, 1, 1), ST_FULL);
  CHECK_STATUS (write_tag (d, Z, Z, 1), ST_OK);
  CHECK_EQ (zone_at (d, Z).cond, ZN_COND_FULL);
  CHECK_STATUS (write_tag (d, 2 * Z - 1, 1, 1), ST_FULL);

  CHECK_EQ (zn_zone_set_readonly (d, 2 * Z), 0);
  CHECK_STATUS (write_tag (d, 2 * Z, 1, 1), ST_READ_ONLY);
  CHECK_STATUS (nvme_zns_read (d, 2 * Z, 1, buf, fault_of ()), ST_OK);

  CHECK_EQ (zn_zone_set_offline (d, 3 * Z), 0);
  CHECK_STATUS (write_tag (d, 3 * Z, 1, 1), ST_OFFLINE);
  CHECK_STATUS (nvme_zns_read (d, 3 * Z, 1, buf, fault_of ()), ST_OFFLINE);
  CHECK_STATUS (nvme_zns_write_zeroes (d, 3 * Z, 1, false, fault_of ()), ST_OFFLINE);
  zn_dev_destroy (d);
}

static void
test_capacity_boundary (void)
{
  /* 2 MiB zones of 1 MiB capacity. */
  struct zn_dev *d = mkdev (16, 2, 1, 512, 0, 0, true);

  CHECK_STATUS (write_tag (d, 0, Z - 8, 1), ST_OK);
  CHECK_STATUS (write_tag (d, Z - 8, 16, 1), ST_BOUNDARY);
  CHECK_EQ (zone_at (d, 0).wp, Z - 8);
  CHECK_STATUS (write_tag (d, Z - 8, 8, 1), ST_OK);
  CHECK_EQ (zone_at (d, 0).cond, ZN_COND_FULL);
  zn_dev_destroy (d);
}

static void
test_bad_block (void)
{
  struct zn_dev *d = mkdev (16, 1, 0, 512, 0, 0, true);
  unsigned char buf[512];

  CHECK_STATUS (write_tag (d, 0, 4, 1), ST_OK);
  CHECK_EQ (zn_badblocks_set (d, 2, 2), 0);
  CHECK_EQ (zn_badblocks_set (d, 4, 4), 0);
  /* No zone reason: Internal Error, EIO on the host (a media status
   * would be ENODATA).
   */
  CHECK_STATUS (nvme_zns_read (d, 2, 1, buf, fault_of ()), ST_INTERNAL);
  CHECK_STATUS (write_tag (d, 4, 1, 1), ST_INTERNAL);
  zn_dev_destroy (d);
}

static void
test_open_limit (void)
{
  struct zn_dev *d = mkdev (16, 1, 0, 512, 2, 0, true);

  CHECK_STATUS (send (d, 0, NVME_ZNS_ZSA_OPEN), ST_OK);
  CHECK_STATUS (send (d, Z, NVME_ZNS_ZSA_OPEN), ST_OK);
  CHECK_STATUS (write_tag (d, 2 * Z, 1, 1), ST_TOO_MANY_OPENS);
  CHECK_STATUS (send (d, 2 * Z, NVME_ZNS_ZSA_OPEN), ST_TOO_MANY_OPENS);
  {
    void *p = pattern (d, 2 * Z, 1, 1);
    uint64_t lba = 0;
    CHECK_STATUS (nvme_zns_append (d, 2 * Z, 1, false, p, &lba, fault_of ()),
                  ST_TOO_MANY_OPENS);
    free (p);
  }
  CHECK_STATUS (nvme_zns_write_zeroes (d, 2 * Z, 1, false, fault_of ()),
                ST_TOO_MANY_OPENS);
  CHECK_EQ (zone_at (d, 2 * Z).cond, ZN_COND_EMPTY);
  zn_dev_destroy (d);
}

static void
test_active_limit (void)
{
  struct zn_dev *d = mkdev (16, 1, 0, 512, 0, 2, true);

  CHECK_STATUS (write_tag (d, 0, 1, 1), ST_OK);
  CHECK_STATUS (write_tag (d, Z, 1, 1), ST_OK);
  CHECK_STATUS (send (d, Z, NVME_ZNS_ZSA_CLOSE), ST_OK);
  CHECK_STATUS (write_tag (d, 2 * Z, 1, 1), ST_TOO_MANY_ACTIVE);
  CHECK_STATUS (send (d, 2 * Z, NVME_ZNS_ZSA_OPEN), ST_TOO_MANY_ACTIVE);
  CHECK_EQ (zone_at (d, 2 * Z).cond, ZN_COND_EMPTY);
  zn_dev_destroy (d);
}

static void
test_append (void)
{
  struct zn_dev *d = mkdev (16, 2, 1, 4096, 0, 0, true);
  const uint64_t zb = 512;      /* 4 KiB blocks in a 2 MiB zone */
  const uint64_t cap = 256;     /* ... of which 1 MiB writable */
  uint64_t lba = UINT64_MAX;
  void *p = pattern (d, zb, 8, 1);

  CHECK_STATUS (nvme_zns_append (d, zb, 8, false, p, &lba, fault_of ()), ST_OK);
  CHECK_EQ (lba, zb);
  free (p);
  p = pattern (d, zb + 8, 4, 2);
  CHECK_STATUS (nvme_zns_append (d, zb, 4, true, p, &lba, fault_of ()), ST_OK);
  CHECK_EQ (lba, zb + 8);
  free (p);
  expect_data (d, zb, 8, 1);
  expect_data (d, zb + 8, 4, 2);

  p = pattern (d, zb, 1, 3);
  /* ZSLBA must start a zone; the limit is the device's append limit. */
  CHECK_STATUS (nvme_zns_append (d, zb + 1, 1, false, p, &lba, fault_of ()),
                ST_INVALID_FIELD);
  CHECK_STATUS (nvme_zns_append (d, 16 * zb, 1, false, p, &lba, fault_of ()),
                ST_LBA_RANGE);
  free (p);
  {
    uint32_t over = zn_dev_geometry (d)->max_append_sectors / 8 + 1;
    void *big = pattern (d, 0, over, 4);
    CHECK_STATUS (nvme_zns_append (d, 0, over, false, big, &lba, fault_of ()),
                  ST_INVALID_FIELD);
    free (big);
  }
  CHECK_EQ (zone_at (d, zb).wp, (zb + 12) * 8);

  /* Past the capacity, then into a full zone. */
  CHECK_STATUS (nvme_zns_write_zeroes (d, zb + 12, (uint32_t) cap - 16, false, fault_of ()),
                ST_OK);
  p = pattern (d, 0, 8, 5);
  CHECK_STATUS (nvme_zns_append (d, zb, 8, false, p, &lba, fault_of ()), ST_BOUNDARY);
  CHECK_STATUS (nvme_zns_append (d, zb, 4, false, p, &lba, fault_of ()), ST_OK);
  CHECK_EQ (lba, zb + cap - 4);
  CHECK_STATUS (nvme_zns_append (d, zb, 1, false, p, &lba, fault_of ()), ST_FULL);
  free (p);
  zn_dev_destroy (d);
}

static bool
all_zero (const void *buf, size_t len)
{
  const unsigned char *p = buf;

  for (size_t i = 0; i < len; i++)
    if (p[i])
      return false;
  return true;
}

static void
test_write_zeroes (void)
{
  /* 16 MiB zones of 4 KiB blocks: one Write Zeroes of 4096 blocks is
   * many chunks.
   */
  struct zn_dev *d = mkdev (64, 16, 0, 4096, 0, 0, true);
  const uint32_t zb = 4096;
  size_t len = (size_t) zb * 4096;
  void *buf = xmalloc (len);

  CHECK_STATUS (write_tag (d, 0, 3, 1), ST_OK);
  CHECK_STATUS (nvme_zns_write_zeroes (d, 3, zb - 3, false, fault_of ()), ST_OK);
  CHECK_EQ (zone_at (d, 0).cond, ZN_COND_FULL);
  expect_data (d, 0, 3, 1);
  CHECK_STATUS (nvme_zns_read (d, 3, zb - 3, buf, fault_of ()), ST_OK);
  CHECK (all_zero (buf, (size_t) (zb - 3) * 4096));

  /* Across the zone boundary: refused without a write. */
  CHECK_STATUS (nvme_zns_write_zeroes (d, zb, zb + 1, true, fault_of ()), ST_BOUNDARY);
  CHECK_EQ (zone_at (d, zb).cond, ZN_COND_EMPTY);
  CHECK_STATUS (nvme_zns_write_zeroes (d, zb + 1, 1, false, fault_of ()),
                ST_INVALID_WRITE);
  CHECK_STATUS (nvme_zns_write_zeroes (d, 0, 1, false, fault_of ()), ST_FULL);
  CHECK_STATUS (nvme_zns_write_zeroes (d, zb, 300, true, fault_of ()), ST_OK);
  CHECK_EQ (zone_at (d, zb).wp, (uint64_t) (zb + 300) * 8);
  free (buf);
  zn_dev_destroy (d);

  /* The most a host sends, 65536 blocks of 4 KiB, in one 256 MiB zone. */
  d = mkdev (512, 256, 0, 4096, 0, 0, false);
  CHECK_STATUS (nvme_zns_write_zeroes (d, 0, 65536, false, fault_of ()), ST_OK);
  CHECK_EQ (zone_at (d, 0).cond, ZN_COND_FULL);
  zn_dev_destroy (d);
}

/* ---- zone management send ------------------------------------------------ */

static uint8_t
cond_of (struct zn_dev *d, uint32_t zone)
{
  return zone_at (d, (uint64_t) zone * Z).cond;
}

/* Zones 0 IMP_OPEN, 1 EXP_OPEN, 2 CLOSED, 3 FULL, 4 EMPTY, 5 READONLY,
 * 6 OFFLINE, 7 EMPTY.
 */
static struct zn_dev *
mixed_device (uint32_t max_open)
{
  struct zn_dev *d = mkdev (8, 1, 0, 512, max_open, 0, true);

  /* Zones 2 to 6 first: with a max_open of 2, their writes and
   * null_blk's finish of an EMPTY zone (which checks for an open
   * resource, as zone_readonly and zone_offline do) would implicitly
   * close zone 0.
   */
  CHECK_EQ (zn_zone_set_readonly (d, 5 * Z), 0);
  CHECK_EQ (zn_zone_set_offline (d, 6 * Z), 0);
  CHECK_STATUS (write_tag (d, 2 * Z, 2, 1), ST_OK);
  CHECK_STATUS (send (d, 2 * Z, NVME_ZNS_ZSA_CLOSE), ST_OK);
  CHECK_STATUS (send (d, 3 * Z, NVME_ZNS_ZSA_FINISH), ST_OK);
  CHECK_STATUS (write_tag (d, 0, 4, 1), ST_OK);
  CHECK_STATUS (send (d, Z, NVME_ZNS_ZSA_OPEN), ST_OK);
  /* Data, so that a close leaves it CLOSED rather than EMPTY. */
  CHECK_STATUS (write_tag (d, Z, 1, 1), ST_OK);
  CHECK_EQ (cond_of (d, 0), ZN_COND_IMP_OPEN);
  CHECK_EQ (cond_of (d, 1), ZN_COND_EXP_OPEN);
  CHECK_EQ (cond_of (d, 2), ZN_COND_CLOSED);
  CHECK_EQ (cond_of (d, 3), ZN_COND_FULL);
  return d;
}

static void
expect_conds (struct zn_dev *d, const uint8_t conds[8])
{
  for (uint32_t i = 0; i < 8; i++) {
    if (cond_of (d, i) != conds[i])
      fprintf (stderr, "zone %u: %s, expected %s\n", i,
               zn_cond_name (cond_of (d, i)), zn_cond_name (conds[i]));
    CHECK_EQ (cond_of (d, i), conds[i]);
  }
}

static void
test_mgmt_send_one (void)
{
  struct zn_dev *d = mixed_device (0);

  CHECK_STATUS (send (d, 4 * Z + 1, NVME_ZNS_ZSA_OPEN), ST_INVALID_FIELD);
  CHECK_STATUS (send (d, 8 * Z, NVME_ZNS_ZSA_OPEN), ST_LBA_RANGE);
  CHECK_STATUS (send (d, 4 * Z, NVME_ZNS_ZSA_OFFLINE), ST_INVALID_FIELD);
  CHECK_STATUS (send (d, 4 * Z, 0), ST_INVALID_FIELD);
  CHECK_STATUS (send (d, 4 * Z, NVME_ZNS_ZSA_SET_DESC_EXT),
                ST_INVALID_FIELD);
  CHECK_STATUS (nvme_zns_mgmt_send (d, 0, NVME_ZNS_ZSA_OFFLINE, true, fault_of ()),
                ST_INVALID_FIELD);
  CHECK_STATUS (send (d, 5 * Z, NVME_ZNS_ZSA_OPEN), ST_INVAL_TRANSITION);
  CHECK_STATUS (send (d, 6 * Z, NVME_ZNS_ZSA_RESET), ST_INVAL_TRANSITION);
  CHECK_STATUS (send (d, 3 * Z, NVME_ZNS_ZSA_OPEN), ST_INVAL_TRANSITION);
  CHECK_STATUS (send (d, 3 * Z, NVME_ZNS_ZSA_CLOSE), ST_INVAL_TRANSITION);

  CHECK_STATUS (send (d, 4 * Z, NVME_ZNS_ZSA_OPEN), ST_OK);
  CHECK_EQ (cond_of (d, 4), ZN_COND_EXP_OPEN);
  CHECK_STATUS (send (d, 4 * Z, NVME_ZNS_ZSA_FINISH), ST_OK);
  CHECK_EQ (cond_of (d, 4), ZN_COND_FULL);
  CHECK_STATUS (send (d, 4 * Z, NVME_ZNS_ZSA_RESET), ST_OK);
  CHECK_EQ (cond_of (d, 4), ZN_COND_EMPTY);
  zn_dev_destroy (d);
}

static void
test_mgmt_send_all (void)
{
  enum { E = ZN_COND_EMPTY, I = ZN_COND_IMP_OPEN, X = ZN_COND_EXP_OPEN,
         C = ZN_COND_CLOSED, F = ZN_COND_FULL, R = ZN_COND_READONLY,
         O = ZN_COND_OFFLINE };
  static const uint8_t after_close[8] = { C, C, C, F, E, R, O, E };
  static const uint8_t after_open[8] = { X, X, X, F, E, R, O, E };
  static const uint8_t after_finish[8] = { F, F, F, F, E, R, O, E };
  static const uint8_t after_reset[8] = { E, E, E, E, E, R, O, E };
  static const uint8_t mixed[8] = { I, X, C, F, E, R, O, E };
  struct zn_dev *d = mixed_device (0);

  /* SLBA is ignored with select all, even past the end. */
  CHECK_STATUS (nvme_zns_mgmt_send (d, UINT64_MAX, NVME_ZNS_ZSA_CLOSE, true, fault_of ()),
                ST_OK);
  expect_conds (d, after_close);
  CHECK_STATUS (nvme_zns_mgmt_send (d, 0, NVME_ZNS_ZSA_OPEN, true, fault_of ()), ST_OK);
  expect_conds (d, after_open);
  CHECK_STATUS (nvme_zns_mgmt_send (d, 0, NVME_ZNS_ZSA_FINISH, true, fault_of ()), ST_OK);
  expect_conds (d, after_finish);
  CHECK_STATUS (nvme_zns_mgmt_send (d, 0, NVME_ZNS_ZSA_RESET, true, fault_of ()), ST_OK);
  expect_conds (d, after_reset);
  zn_dev_destroy (d);

  /* Open-all opens closed zones only: the implicitly open zone stays. */
  d = mixed_device (0);
  CHECK_STATUS (nvme_zns_mgmt_send (d, 0, NVME_ZNS_ZSA_OPEN, true, fault_of ()), ST_OK);
  CHECK_EQ (cond_of (d, 0), ZN_COND_IMP_OPEN);
  CHECK_EQ (cond_of (d, 2), ZN_COND_EXP_OPEN);
  zn_dev_destroy (d);

  /* Open-all with one closed zone and room for it beside the explicit
   * one: the implicitly open zone is closed to make room, and is not
   * opened in turn.
   */
  d = mixed_device (2);
  CHECK_STATUS (nvme_zns_mgmt_send (d, 0, NVME_ZNS_ZSA_OPEN, true, fault_of ()), ST_OK);
  CHECK_EQ (cond_of (d, 0), ZN_COND_CLOSED);
  CHECK_EQ (cond_of (d, 1), ZN_COND_EXP_OPEN);
  CHECK_EQ (cond_of (d, 2), ZN_COND_EXP_OPEN);
  zn_dev_destroy (d);

  /* Not enough open resources for every closed zone: none opens. */
  d = mixed_device (2);
  CHECK_STATUS (send (d, 0, NVME_ZNS_ZSA_CLOSE), ST_OK);
  CHECK_STATUS (nvme_zns_mgmt_send (d, 0, NVME_ZNS_ZSA_OPEN, true, fault_of ()),
                ST_TOO_MANY_OPENS);
  CHECK_EQ (cond_of (d, 0), ZN_COND_CLOSED);
  CHECK_EQ (cond_of (d, 2), ZN_COND_CLOSED);
  zn_dev_destroy (d);

  /* Finish-all straight from the mix: open and closed zones only. */
  d = mixed_device (2);
  expect_conds (d, mixed);
  CHECK_STATUS (nvme_zns_mgmt_send (d, 0, NVME_ZNS_ZSA_FINISH, true, fault_of ()), ST_OK);
  expect_conds (d, after_finish);
  zn_dev_destroy (d);
}

/* ---- zone management receive -------------------------------------------- */

struct report {
  uint16_t status;
  uint64_t nr_zones;
  struct nvme_zns_desc desc[16];
  size_t nr_desc;                 /* descriptors that fit */
  bool untouched;                 /* the bytes past len kept their poison */
};

static struct report
report (struct zn_dev *d, uint64_t slba, uint8_t zrasf, bool partial,
        size_t len)
{
  struct report r;
  unsigned char *buf = xmalloc (len + 64);

  memset (&r, 0, sizeof r);
  memset (buf, 0xAB, len + 64);
  r.status = nvme_zns_mgmt_recv (d, slba, NVME_ZNS_ZRA_REPORT_ZONES, zrasf,
                                 partial, buf, len, NULL);
  r.untouched = true;
  for (size_t i = len; i < len + 64; i++)
    r.untouched &= buf[i] == 0xAB;
  if (r.status == 0) {
    uint64_t nz;

    CHECK (len >= 64);
    memcpy (&nz, buf, 8);
    r.nr_zones = le64toh (nz);
    for (size_t i = 8; i < 64; i++)
      CHECK_EQ (buf[i], 0);
    r.nr_desc = (len - 64) / 64;
    if (r.nr_desc > 16)
      r.nr_desc = 16;
    memcpy (r.desc, buf + 64, r.nr_desc * 64);
  }
  free (buf);
  return r;
}

static void
expect_desc (struct zn_dev *d, const struct nvme_zns_desc *desc,
             uint32_t zone)
{
  uint32_t lbs = zn_dev_geometry (d)->block_size / 512;
  struct zn_zone z = zone_at (d, (uint64_t) zone * Z / lbs);

  CHECK_EQ (desc->zt, NVME_ZONE_TYPE_SEQWRITE_REQ);
  CHECK_EQ (desc->zs, z.cond << 4);
  CHECK_EQ (desc->za, 0);
  CHECK_EQ (desc->zai, 0);
  CHECK_EQ (le64toh (desc->zslba), z.start / lbs);
  CHECK_EQ (le64toh (desc->zcap), z.capacity / lbs);
  CHECK (le64toh (desc->wp) == z.wp / lbs);
  for (size_t i = 0; i < sizeof desc->rsvd32; i++)
    CHECK_EQ (desc->rsvd32[i], 0);
}

static void
test_report_filters (void)
{
  static const struct { uint8_t zrasf; uint32_t first, count; } f[] = {
    { NVME_ZNS_ZRAS_REPORT_ALL, 0, 8 },
    { NVME_ZNS_ZRAS_REPORT_EMPTY, 4, 2 },
    { NVME_ZNS_ZRAS_REPORT_IMPL_OPENED, 0, 1 },
    { NVME_ZNS_ZRAS_REPORT_EXPL_OPENED, 1, 1 },
    { NVME_ZNS_ZRAS_REPORT_CLOSED, 2, 1 },
    { NVME_ZNS_ZRAS_REPORT_FULL, 3, 1 },
    { NVME_ZNS_ZRAS_REPORT_READ_ONLY, 5, 1 },
    { NVME_ZNS_ZRAS_REPORT_OFFLINE, 6, 1 },
  };
  struct zn_dev *d = mixed_device (0);

  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
    for (int partial = 0; partial < 2; partial++) {
      struct report r = report (d, 0, f[i].zrasf, partial, 64 + 16 * 64);

      CHECK_STATUS (r.status, ST_OK);
      CHECK_EQ (r.nr_zones, f[i].count);
      CHECK (r.untouched);
      expect_desc (d, &r.desc[0], f[i].first);
      CHECK_EQ (r.desc[f[i].count].zt, 0);  /* the rest zeroed */
    }
  }
  /* The second empty zone, and every zone in order. */
  {
    struct report r = report (d, 0, NVME_ZNS_ZRAS_REPORT_EMPTY, false, 4096);
    expect_desc (d, &r.desc[1], 7);
    r = report (d, 0, NVME_ZNS_ZRAS_REPORT_ALL, false, 4096);
    for (uint32_t z = 0; z < 8; z++)
      expect_desc (d, &r.desc[z], z);
    /* READONLY and OFFLINE: the model's all-ones wp as LBAs. */
    CHECK (le64toh (r.desc[5].wp) == UINT64_MAX);
    CHECK (le64toh (r.desc[6].wp) == UINT64_MAX);
    CHECK_EQ (r.desc[3].zs, NVME_ZNS_ZS_FULL << 4);
    CHECK_EQ (r.desc[4].zs, NVME_ZNS_ZS_EMPTY << 4);
    CHECK_EQ (r.desc[5].zs, NVME_ZNS_ZS_READ_ONLY << 4);
    CHECK_EQ (r.desc[6].zs, NVME_ZNS_ZS_OFFLINE << 4);
    CHECK_EQ (le64toh (r.desc[0].wp), 4);
    CHECK_EQ (le64toh (r.desc[2].wp), 2 * Z + 2);
  }
  zn_dev_destroy (d);
}

static void
test_report_sizes (void)
{
  struct zn_dev *d = mixed_device (0);
  struct report r;

  /* Header only: the count of every zone, or none with partial. */
  r = report (d, 0, NVME_ZNS_ZRAS_REPORT_ALL, false, 64);
  CHECK_STATUS (r.status, ST_OK);
  CHECK_EQ (r.nr_zones, 8);
  CHECK (r.untouched);
  r = report (d, 0, NVME_ZNS_ZRAS_REPORT_ALL, true, 64);
  CHECK_EQ (r.nr_zones, 0);

  /* Room for two and a half descriptors. */
  r = report (d, 0, NVME_ZNS_ZRAS_REPORT_ALL, false, 64 + 2 * 64 + 32);
  CHECK_STATUS (r.status, ST_OK);
  CHECK_EQ (r.nr_zones, 8);
  CHECK (r.untouched);
  expect_desc (d, &r.desc[0], 0);
  expect_desc (d, &r.desc[1], 1);
  r = report (d, 0, NVME_ZNS_ZRAS_REPORT_ALL, true, 64 + 2 * 64 + 32);
  CHECK_EQ (r.nr_zones, 2);
  CHECK (r.untouched);
  r = report (d, 0, NVME_ZNS_ZRAS_REPORT_EMPTY, true, 64 + 64);
  CHECK_EQ (r.nr_zones, 1);
  expect_desc (d, &r.desc[0], 4);

  /* From the middle of zone 3: zones 3 to 7. */
  r = report (d, 3 * Z + 100, NVME_ZNS_ZRAS_REPORT_ALL, false, 64 + 64);
  CHECK_EQ (r.nr_zones, 5);
  expect_desc (d, &r.desc[0], 3);
  r = report (d, 3 * Z + 100, NVME_ZNS_ZRAS_REPORT_EMPTY, false, 4096);
  CHECK_EQ (r.nr_zones, 2);
  expect_desc (d, &r.desc[0], 4);
  r = report (d, 8 * Z - 1, NVME_ZNS_ZRAS_REPORT_ALL, true, 4096);
  CHECK_EQ (r.nr_zones, 1);
  expect_desc (d, &r.desc[0], 7);
  r = report (d, 7 * Z, NVME_ZNS_ZRAS_REPORT_FULL, false, 4096);
  CHECK_STATUS (r.status, ST_OK);
  CHECK_EQ (r.nr_zones, 0);

  /* Refusals. */
  CHECK_STATUS (report (d, 0, NVME_ZNS_ZRAS_REPORT_ALL, false, 63).status,
                ST_INVALID_FIELD);
  CHECK_STATUS (report (d, 0, NVME_ZNS_ZRAS_REPORT_ALL, false, 0).status,
                ST_INVALID_FIELD);
  CHECK_STATUS (report (d, 0, 8, false, 4096).status, ST_INVALID_FIELD);
  CHECK_STATUS (report (d, 8 * Z, 0, false, 4096).status, ST_LBA_RANGE);
  {
    unsigned char buf[4096];
    CHECK_STATUS (nvme_zns_mgmt_recv (d, 0,
                                      NVME_ZNS_ZRA_EXTENDED_REPORT_ZONES,
                                      0, false, buf, sizeof buf, NULL),
                  ST_INVALID_FIELD);
  }
  zn_dev_destroy (d);
}

static void
test_report_4k_and_large (void)
{
  struct zn_dev *d = mkdev (16, 1, 0, 4096, 0, 0, true);
  struct report r;

  CHECK_STATUS (write_tag (d, 256, 5, 1), ST_OK);
  CHECK_EQ (zn_zone_set_offline (d, 2 * 2048), 0);
  r = report (d, 0, NVME_ZNS_ZRAS_REPORT_ALL, false, 4096);
  CHECK_EQ (r.nr_zones, 16);
  CHECK_EQ (le64toh (r.desc[1].zslba), 256);
  CHECK_EQ (le64toh (r.desc[1].zcap), 256);
  CHECK_EQ (le64toh (r.desc[1].wp), 261);
  /* nvmet's conversion of the all-ones wp. */
  CHECK (le64toh (r.desc[2].wp) == UINT64_MAX / 8);
  zn_dev_destroy (d);

  /* 81920 zones: the count covers all of them, with or without a
   * filter, and with partial the walk stops at the buffer.
   */
  d = mkdev (81920, 1, 0, 512, 0, 0, false);
  CHECK_STATUS (write_tag (d, 70000 * (uint64_t) Z, 1, 1), ST_OK);
  r = report (d, 0, NVME_ZNS_ZRAS_REPORT_ALL, false, 64 + 3 * 64);
  CHECK_EQ (r.nr_zones, 81920);
  r = report (d, 5 * Z, NVME_ZNS_ZRAS_REPORT_EMPTY, false, 64 + 3 * 64);
  CHECK_EQ (r.nr_zones, 81914);
  r = report (d, 0, NVME_ZNS_ZRAS_REPORT_IMPL_OPENED, false, 64 + 3 * 64);
  CHECK_EQ (r.nr_zones, 1);
  CHECK_EQ (le64toh (r.desc[0].zslba), 70000 * (uint64_t) Z);
  r = report (d, 0, NVME_ZNS_ZRAS_REPORT_ALL, true, 64 + 3 * 64);
  CHECK_EQ (r.nr_zones, 3);
  zn_dev_destroy (d);
}

/* ---- nvme_zns_status ------------------------------------------------------ */

static void
test_status (void)
{
  /* From the reason alone: the zones are not looked at. */
  CHECK_STATUS (nvme_zns_status (0, ZN_REASON_NONE), ST_OK);
  CHECK_STATUS (nvme_zns_status (-ETOOMANYREFS, ZN_REASON_OPEN_LIMIT),
                ST_TOO_MANY_OPENS);
  CHECK_STATUS (nvme_zns_status (-EOVERFLOW, ZN_REASON_ACTIVE_LIMIT),
                ST_TOO_MANY_ACTIVE);
  CHECK_STATUS (nvme_zns_status (-ETOOMANYREFS, ZN_REASON_NONE),
                ST_TOO_MANY_OPENS);
  CHECK_STATUS (nvme_zns_status (-EIO, ZN_REASON_FULL), ST_FULL);
  CHECK_STATUS (nvme_zns_status (EIO, ZN_REASON_FULL), ST_FULL);
  CHECK_STATUS (nvme_zns_status (-EIO, ZN_REASON_READONLY), ST_READ_ONLY);
  CHECK_STATUS (nvme_zns_status (-EIO, ZN_REASON_OFFLINE), ST_OFFLINE);
  CHECK_STATUS (nvme_zns_status (-EIO, ZN_REASON_NOT_AT_WP),
                ST_INVALID_WRITE);
  CHECK_STATUS (nvme_zns_status (-EIO, ZN_REASON_PAST_CAPACITY),
                ST_BOUNDARY);
  CHECK_STATUS (nvme_zns_status (-EIO, ZN_REASON_BAD_BLOCK), ST_INTERNAL);
  CHECK_STATUS (nvme_zns_status (-EIO, ZN_REASON_NONE), ST_INTERNAL);
  /* pipeline_zoned_writes' waits that fail: a write off its wp. */
  CHECK_STATUS (nvme_zns_status (ETIMEDOUT,
                                 zn_pipeline_reason (ETIMEDOUT)),
                ST_INVALID_WRITE);
  CHECK_STATUS (nvme_zns_status (EBUSY, zn_pipeline_reason (EBUSY)),
                ST_INVALID_WRITE);
  CHECK_STATUS (nvme_zns_status (EIO, zn_pipeline_reason (EIO)),
                ST_INVALID_WRITE);
  CHECK_STATUS (nvme_zns_status (-EINVAL, ZN_REASON_OUT_OF_RANGE),
                ST_LBA_RANGE);
  CHECK_STATUS (nvme_zns_status (-EINVAL, ZN_REASON_MISALIGNED),
                ST_INVALID_FIELD);
  CHECK_STATUS (nvme_zns_status (-ENOSPC, ZN_REASON_NONE), ST_CAP_EXCEEDED);
  CHECK_STATUS (nvme_zns_status (-ENOMEM, ZN_REASON_NONE), ST_INTERNAL);
}

/* A write that fails leaving the zone as another reason would: with
 * badblocks_partial_io (7.3) the blocks before the bad one are written
 * and the write pointer moves past them, so the zone afterwards shows a
 * write off its write pointer.  The status names the bad block.
 */
static void
test_status_not_from_zone (void)
{
  struct zn_config c = geometry_config (16, 1, 0, 0, 512);
  struct zn_dev *d;

  c.memory_backed = true;
  c.kernel = ZN_KERNEL_7_3;
  c.badblocks_partial_io = true;
  c.given |= ZN_GIVEN_BADBLOCKS_PARTIAL_IO;
  d = create (&c);
  CHECK_EQ (zn_badblocks_set (d, Z + 2, Z + 2), 0);
  CHECK_STATUS (write_tag (d, Z, 4, 1), ST_INTERNAL);
  CHECK_EQ (zone_at (d, Z).wp, Z + 2);
  zn_dev_destroy (d);
}

static void
add_rule (struct zn_dev *d, const char *spec)
{
  const struct zn_geometry *g = zn_dev_geometry (d);
  struct zn_fault_rule r;
  char err[256] = "";

  if (zn_fault_rule_parse (spec, g->capacity, g->zone_sectors, &r, err,
                           sizeof err) < 0) {
    fprintf (stderr, "'%s': %s\n", spec, err);
    exit (EXIT_FAILURE);
  }
  CHECK_EQ (zn_fault_add (d, &r, NULL), 0);
}

/* Fault rules as the target answers them: a rule's status whole (with
 * DNR, or without it for ",retry"), an errno as the model's would map,
 * when=after with the data in, and every command kind.
 */
static void
test_faults (void)
{
  struct zn_dev *d = mkdev (8, 1, 0, 512, 0, 0, true);
  unsigned char buf[4096], back[4096];
  uint64_t lba = 0;

  memset (buf, 0x3c, sizeof buf);
  add_rule (d, "op=write zone=1 nvme-status=1:b9 count=1");
  add_rule (d, "op=write zone=2 nvme-status=1:bd,retry count=1");
  add_rule (d, "op=write zone=3 error=ETOOMANYREFS count=1");
  add_rule (d, "op=append zone=4 error=ENOSPC when=after count=1");
  add_rule (d, "op=read zone=5 error=EIO count=1");
  add_rule (d, "op=finish zone=6 nvme-status=1:bf count=1");
  add_rule (d, "op=flush error=EIO count=1");

  CHECK_STATUS (nvme_zns_write (d, Z, 8, false, buf, fault_of ()), ST_FULL);
  CHECK_STATUS (nvme_zns_write (d, Z, 8, false, buf, fault_of ()), ST_OK);
  /* ",retry": DNR clear, the host retries; the retry passes. */
  CHECK_EQ (nvme_zns_write (d, 2 * Z, 8, false, buf, fault_of ()), 0x100 | 0xbd);
  CHECK_STATUS (nvme_zns_write (d, 2 * Z, 8, false, buf, fault_of ()), ST_OK);
  CHECK_STATUS (nvme_zns_write (d, 3 * Z, 8, false, buf, fault_of ()), ST_TOO_MANY_OPENS);
  CHECK_STATUS (nvme_zns_append (d, 4 * Z, 8, false, buf, &lba, fault_of ()),
                ST_CAP_EXCEEDED);
  CHECK_STATUS (nvme_zns_read (d, 4 * Z, 8, back, fault_of ()), ST_OK);
  CHECK (memcmp (buf, back, sizeof back) == 0);
  CHECK_STATUS (nvme_zns_append (d, 4 * Z, 8, false, buf, &lba, fault_of ()), ST_OK);
  CHECK_EQ (lba, 4 * Z + 8);
  CHECK_STATUS (nvme_zns_read (d, 5 * Z, 8, back, fault_of ()), ST_INTERNAL);
  CHECK_STATUS (nvme_zns_read (d, 5 * Z, 8, back, fault_of ()), ST_OK);
  CHECK_STATUS (nvme_zns_mgmt_send (d, 6 * Z, NVME_ZNS_ZSA_FINISH, false, fault_of ()),
                ST_INVAL_TRANSITION);
  CHECK_STATUS (nvme_zns_mgmt_send (d, 6 * Z, NVME_ZNS_ZSA_FINISH, false, fault_of ()),
                ST_OK);
  CHECK_STATUS (nvme_zns_flush (d, fault_of ()), ST_INTERNAL);
  CHECK_STATUS (nvme_zns_flush (d, fault_of ()), ST_OK);

  /* What holds a command back is left to the caller: a timeout neither
   * runs nor is to be answered, a delay runs and is answered late.
   */
  add_rule (d, "op=write zone=7 timeout count=1");
  add_rule (d, "op=reset zone=7 delay=25 count=1");
  CHECK_STATUS (nvme_zns_write (d, 7 * Z, 8, false, buf, fault_of ()), ST_OK);
  CHECK_EQ (last_fault.action, ZN_FAULT_TIMEOUT);
  CHECK_EQ (zone_at (d, 7 * Z).wp, 7 * Z);
  CHECK_STATUS (nvme_zns_write (d, 7 * Z, 8, false, buf, fault_of ()), ST_OK);
  CHECK_EQ (last_fault.action, ZN_FAULT_PASS);
  CHECK_STATUS (nvme_zns_mgmt_send (d, 7 * Z, NVME_ZNS_ZSA_RESET, false,
                                    fault_of ()), ST_OK);
  CHECK_EQ (last_fault.delay_ns, 25000000u);
  CHECK_EQ (zone_at (d, 7 * Z).wp, 7 * Z);
  zn_dev_destroy (d);

  /* requeue=: Namespace Not Ready without DNR, which the Linux host
   * retries, and the command does not run.
   */
  {
    struct zn_config c = geometry_config (8, 1, 0, 0, 512);
    char why[256];

    c.memory_backed = true;
    CHECK_EQ (zn_fault_attr_parse (&c.requeue_inject, "requeue", "1,100,0,1",
                                   why, sizeof why), 0);
    d = create (&c);
  }
  CHECK_EQ (nvme_zns_write (d, Z, 8, false, buf, fault_of ()),
            NVME_SC_NS_NOT_READY);
  CHECK_EQ (zone_at (d, Z).wp, Z);
  CHECK_STATUS (nvme_zns_write (d, Z, 8, false, buf, fault_of ()), ST_OK);
  CHECK_EQ (zone_at (d, Z).wp, Z + 8);
  zn_dev_destroy (d);
}

int
main (void)
{
  test_check ();
  test_id_ns ();
  test_id_ns_zns ();
  test_zasl ();
  test_zasl_newer_kernel ();
  test_effects ();
  test_write_read ();
  test_write_4k ();
  test_zone_states ();
  test_capacity_boundary ();
  test_bad_block ();
  test_open_limit ();
  test_active_limit ();
  test_append ();
  test_write_zeroes ();
  test_mgmt_send_one ();
  test_mgmt_send_all ();
  test_report_filters ();
  test_report_sizes ();
  test_report_4k_and_large ();
  test_status ();
  test_status_not_from_zone ();
  test_faults ();
  printf ("test-nvme-zns: all checks passed\n");
  return 0;
}
