/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of the device model's reads, writes, requests, error reasons
 * and zone append against null_blk's zone rules (doc/zone-rules.md, cited
 * as "zone-rules N.M" below).
 */
#include "model.h"

/* ------------------------------------------------------------------ */
/* Read content (zone-rules 8) */

static void
test_read_content (void)
{
  struct zn_dev *d = mk (16, 2, 1, 1, 0, 0);   /* len 4096, cap 2048 */
  const uint64_t L = 4096, C = 2048;
  uint64_t z1 = zstart (d, 1), z2 = zstart (d, 2), z3 = zstart (d, 3);

  /* Conventional: zeros until written, written data anywhere. */
  CHECK (reads_fill (d, 0, 256, 0x00));
  CHECK_EQ (wr (d, 100, 8, 1), 0);
  CHECK (reads_pattern (d, 100, 8, 1));
  CHECK (reads_fill (d, 108, 8, 0x00));
  CHECK (reads_fill (d, 92, 8, 0x00));
  CHECK_EQ (wr (d, 104, 8, 2), 0);
  CHECK (reads_pattern (d, 100, 4, 1));
  CHECK (reads_pattern (d, 104, 8, 2));

  /* Sequential: data below wp, 0xFF at and past it. */
  CHECK (reads_fill (d, z1, 64, 0xFF));
  CHECK_EQ (wr (d, z1, 16, 1), 0);
  CHECK (reads_pattern (d, z1, 16, 1));
  CHECK (reads_fill (d, z1 + 16, 16, 0xFF));
  CHECK (reads_fill (d, z1 + C, L - C, 0xFF));
  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 1), 0);
  CHECK (reads_pattern (d, z1, 16, 1));
  CHECK (reads_fill (d, z1 + 16, 16, 0xFF));

  /* Finished: the unwritten tail, gap included, reads as zeros. */
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 1), 0);
  CHECK (reads_pattern (d, z1, 16, 1));
  CHECK (reads_fill (d, z1 + 16, L - 16, 0x00));

  /* Filled by writes: the [cap, len) gap reads as 0xFF. */
  CHECK_EQ (wr (d, z2, C, 3), 0);
  EXPECT_ZONE (d, 2, ZN_COND_FULL, C);
  CHECK (reads_pattern (d, z2, C, 3));
  CHECK (reads_fill (d, z2 + C, L - C, 0xFF));

  /* A read crossing zones follows each zone's rule. */
  CHECK (reads_fill (d, z2 - 8, 8, 0x00));
  CHECK (reads_pattern (d, z2, 8, 3));
  {
    unsigned char *buf = xmalloc (16 * ZN_SECTOR_SIZE);
    unsigned char *want = xmalloc (8 * ZN_SECTOR_SIZE);
    unsigned i;
    CHECK_EQ (zn_read (d, buf, z2 - 8, 16), 0);
    for (i = 0; i < 8 * ZN_SECTOR_SIZE; i++)
      CHECK_EQ (buf[i], 0x00);
    fill_pattern (want, z2, 8, 3);
    CHECK (memcmp (buf + 8 * ZN_SECTOR_SIZE, want, 8 * ZN_SECTOR_SIZE) == 0);
    CHECK_EQ (zn_read (d, buf, z3 - 8, 16), 0);
    for (i = 0; i < 16 * ZN_SECTOR_SIZE; i++)
      CHECK_EQ (buf[i], 0xFF);
    free (want);
    free (buf);
  }

  /* Reset discards data: old data never comes back below a new wp. */
  CHECK_EQ (op1 (d, ZN_OP_RESET, 1), 0);
  CHECK (reads_fill (d, z1, 32, 0xFF));
  CHECK_EQ (wr (d, z1, 8, 4), 0);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 1), 0);
  CHECK (reads_pattern (d, z1, 8, 4));
  CHECK (reads_fill (d, z1 + 8, 8, 0x00));
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_RESET, 0, zn_dev_geometry (d)->capacity),
            0);
  CHECK (reads_fill (d, z2, C, 0xFF));
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 2), 0);
  CHECK (reads_fill (d, z2, L, 0x00));
  CHECK (reads_pattern (d, 104, 8, 2));         /* conventional kept */

  /* A failed write stores nothing. */
  CHECK_EQ (wr (d, z3 + 8, 8, 5), -EIO);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 3), 0);
  CHECK (reads_fill (d, z3, 16, 0x00));
  zn_dev_destroy (d);
}

/* zone-rules 8.2: without memory backing every read returns zeros (a
 * deliberate difference).
 */
static void
test_read_not_memory_backed (void)
{
  struct zn_config c = cfg (8, 1, 0, 1, 0, 0);
  struct zn_dev *d;

  c.memory_backed = false;
  d = create (&c);
  CHECK (!zn_dev_geometry (d)->memory_backed);
  CHECK_EQ (wr (d, 8, 8, 1), 0);
  CHECK (reads_fill (d, 0, 32, 0x00));
  CHECK_EQ (wrz (d, 1, 0, 16), 0);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 16);     /* state as usual */
  CHECK (reads_fill (d, zstart (d, 1), 64, 0x00));
  CHECK_EQ (wrz (d, 1, 0, 8), -EIO);            /* rules as usual */
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 1), 0);
  CHECK (reads_fill (d, zstart (d, 1), Z, 0x00));
  CHECK (reads_fill (d, zstart (d, 2), 16, 0x00));
  zn_dev_destroy (d);
}

static long
nr_mappings (void)
{
  FILE *fp = fopen ("/proc/self/maps", "r");
  long n = 0;
  int c;

  CHECK (fp != NULL);
  while ((c = getc (fp)) != EOF)
    n += c == '\n';
  fclose (fp);
  return n;
}

/* Zone memory stays one merged mapping whatever the order of resets:
 * unmapping every other zone would leave a mapping per zone, and past
 * vm.max_map_count (65530) resets and first writes would fail.
 */
static void
test_reset_keeps_mappings (void)
{
  const uint32_t nr = 2000;
  struct zn_dev *d = mk (nr, 1, 0, 0, 0, 0);
  long before;

  for (uint32_t i = 0; i < nr; i++)
    CHECK_EQ (wrz (d, i, 0, 8), 0);
  before = nr_mappings ();
  for (uint32_t i = 0; i < nr; i += 2)
    CHECK_EQ (op1 (d, ZN_OP_RESET, i), 0);
  CHECK (nr_mappings () < before + 16);
  /* Reset zones read as before: 0xFF past the wp, zeros once finished. */
  CHECK (reads_fill (d, zstart (d, 0), 8, 0xFF));
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 0), 0);
  CHECK (reads_fill (d, zstart (d, 0), 8, 0x00));
  CHECK_EQ (wrz (d, 2, 0, 8), 0);
  CHECK (reads_pattern (d, zstart (d, 2), 8, 0));
  CHECK (reads_pattern (d, zstart (d, 1), 8, 0));
  zn_dev_destroy (d);
}

/* ------------------------------------------------------------------ */
/* Requests (zone-rules 9) */

static void
test_request_bounds_alignment (void)
{
  struct zn_config c = cfg (8, 1, 0, 1, 0, 0);
  unsigned char *buf = xmalloc (16 * ZN_SECTOR_SIZE);
  struct snapshot s;
  struct zn_dev *d;
  uint64_t cap;

  memset (buf, 0x5A, 16 * ZN_SECTOR_SIZE);
  d = create (&c);
  cap = zn_dev_geometry (d)->capacity;
  snap (d, &s);
  CHECK_EQ (zn_read (d, buf, cap - 8, 16), -EINVAL);
  CHECK_EQ (zn_read (d, buf, cap, 1), -EINVAL);
  CHECK_EQ (zn_write (d, buf, cap - 8, 16), -EINVAL);
  CHECK_EQ (zn_write (d, buf, cap, 8), -EINVAL);
  CHECK_EQ (zn_write (d, buf, UINT64_MAX - 4, 8), -EINVAL);
  CHECK (same_state (d, &s));
  /* The last sectors of the device are fine. */
  CHECK_EQ (zn_write (d, buf, zstart (d, 7), 8), 0);
  CHECK_EQ (zn_read (d, buf, cap - 8, 8), 0);
  /* Any sector is aligned with 512-byte blocks. */
  CHECK_EQ (zn_write (d, buf, 3, 1), 0);
  CHECK_EQ (zn_read (d, buf, 3, 1), 0);
  zn_dev_destroy (d);

  c.blocksize = 4096;
  d = create (&c);
  snap (d, &s);
  CHECK_EQ (zn_write (d, buf, 1, 8), -EINVAL);
  CHECK_EQ (zn_write (d, buf, 8, 1), -EINVAL);
  CHECK_EQ (zn_write (d, buf, 8, 12), -EINVAL);
  CHECK_EQ (zn_write (d, buf, zstart (d, 1) + 4, 8), -EINVAL);
  CHECK_EQ (zn_write (d, buf, zstart (d, 1), 4), -EINVAL);
  CHECK_EQ (zn_read (d, buf, 4, 8), -EINVAL);
  CHECK_EQ (zn_read (d, buf, 0, 7), -EINVAL);
  CHECK_EQ (zn_read (d, buf, cap - 8, 16), -EINVAL);
  CHECK (same_state (d, &s));
  CHECK_EQ (zn_write (d, buf, zstart (d, 1), 16), 0);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 16);
  CHECK_EQ (zn_read (d, buf, 8, 8), 0);
  zn_dev_destroy (d);
  free (buf);
}

/* zone-rules 9.3: split at zone boundaries, no rollback, highest failing
 * part.
 */
static void
test_write_zone_crossing (void)
{
  struct zn_dev *d = mk (8, 1, 0, 1, 0, 0);

  /* Conventional then the start of an EMPTY zone: both parts succeed. */
  CHECK_EQ (wr (d, Z - 8, 16, 1), 0);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 8);
  CHECK (reads_pattern (d, Z - 8, 16, 1));

  /* The upper part is behind the wp: EIO, but the conventional part is
   * written anyway and zone 1 is untouched.
   */
  CHECK_EQ (wr (d, Z - 8, 16, 2), -EIO);
  CHECK (reads_pattern (d, Z - 8, 8, 2));
  CHECK (reads_pattern (d, Z, 8, 1));
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 8);

  /* The conventional rule never spills into the next zone. */
  CHECK_EQ (wr (d, Z - 8, 24, 3), -EIO);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 8);
  CHECK (reads_pattern (d, Z, 8, 1));
  CHECK (reads_fill (d, Z + 8, 8, 0xFF));

  /* Lower part fails (not at zone 1's wp), upper part (start of EMPTY
   * zone 2) succeeds and is kept.
   */
  CHECK_EQ (wr (d, 2 * Z - 8, 16, 4), -EIO);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 8);
  EXPECT_ZONE (d, 2, ZN_COND_IMP_OPEN, 8);
  CHECK (reads_pattern (d, 2 * Z, 8, 4));
  EXPECT_COUNTERS (d, 2, 0, 0);

  /* Both parts at their wps: zone 3 filled and zone 4 started. */
  CHECK_EQ (wr (d, Z + 8, Z - 8, 5), 0);
  EXPECT_ZONE (d, 1, ZN_COND_FULL, Z);
  CHECK_EQ (wr (d, 3 * Z, Z + 8, 6), 0);        /* zone 3 full + zone 4 */
  EXPECT_ZONE (d, 3, ZN_COND_FULL, Z);
  EXPECT_ZONE (d, 4, ZN_COND_IMP_OPEN, 8);
  CHECK (reads_pattern (d, 3 * Z, Z + 8, 6));
  zn_dev_destroy (d);

  /* Lower part EIO (FULL zone 4), upper part EOVERFLOW (zone 5 needs an
   * active slot): the higher part's errno is returned.
   */
  d = mk_c4 ();
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 4), 0);
  CHECK_EQ (wrz (d, 1, 0, 8), 0);
  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 1), 0);
  CHECK_EQ (wrz (d, 2, 0, 8), 0);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 3), 0);
  CHECK_EQ (wr (d, 5 * Z - 8, 16, 0), -EOVERFLOW);
  EXPECT_ZONE (d, 5, ZN_COND_EMPTY, 0);
  /* Lower EIO, upper ETOOMANYREFS: an active slot is free but the open
   * slots hold only EXP_OPEN zones.
   */
  CHECK_EQ (op1 (d, ZN_OP_RESET, 1), 0);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 2), 0);
  EXPECT_COUNTERS (d, 0, 2, 0);
  CHECK_EQ (wr (d, 5 * Z - 8, 16, 0), -ETOOMANYREFS);
  EXPECT_ZONE (d, 5, ZN_COND_EMPTY, 0);
  EXPECT_COUNTERS (d, 0, 2, 0);
  zn_dev_destroy (d);
}

/* zone-rules 9.2: requests above max_sectors are processed as if split. */
static void
test_write_max_sectors_split (void)
{
  struct zn_config c = cfg (8, 1, 0, 0, 0, 0);
  struct zn_dev *d = create (&c);

  CHECK_EQ (wr (d, zstart (d, 1), 1000, 1), 0);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 1000);
  CHECK (reads_pattern (d, zstart (d, 1), 1000, 1));
  CHECK_EQ (wr (d, zstart (d, 2), Z, 1), 0);
  EXPECT_ZONE (d, 2, ZN_COND_FULL, Z);
  CHECK (reads_pattern (d, zstart (d, 2), Z, 1));
  EXPECT_COUNTERS (d, 1, 0, 0);

  zn_dev_destroy (d);

  /* The parts (255, 255, 2) run in order: the first fits and is kept,
   * the second runs past the capacity, the third is not at the wp.
   */
  d = mk (16, 2, 1, 0, 0, 0);                  /* len 4096, cap 2048 */
  CHECK_EQ (wr (d, zstart (d, 1), 2048 - 256, 2), 0);
  CHECK_EQ (wr (d, zstart (d, 1) + 2048 - 256, 512, 2), -EIO);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 2047);
  CHECK (reads_pattern (d, zstart (d, 1), 2047, 2));
  CHECK (reads_fill (d, zstart (d, 1) + 2047, 1, 0xFF));
  zn_dev_destroy (d);

  c.blocksize = 4096;
  d = create (&c);
  CHECK_EQ (zn_dev_geometry (d)->max_sectors, 248);
  CHECK_EQ (wr (d, zstart (d, 1), 1024, 1), 0);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 1024);
  CHECK (reads_pattern (d, zstart (d, 1), 1024, 1));
  zn_dev_destroy (d);

  c.blocksize = 512;
  c.max_sectors = 100;
  d = create (&c);
  CHECK_EQ (wr (d, zstart (d, 1), 300, 1), 0);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 300);
  zn_dev_destroy (d);
}

/* What a zone reports (zone-rules 7) */
static void
test_report_zones (void)
{
  struct zn_dev *d = mk (8, 1, 0, 1, 0, 0);
  uint64_t cap = zn_dev_geometry (d)->capacity;
  struct zn_zone zs[10];

  memset (zs, 0, sizeof zs);
  CHECK_EQ (zn_report_zones (d, 5, zs, 1), 1);
  CHECK_EQ (zs[0].start, 0);
  CHECK_EQ (zs[0].type, ZN_ZONE_CONVENTIONAL);
  CHECK_EQ (zs[0].cond, ZN_COND_NOT_WP);
  CHECK_EQ (zs[0].wp, Z);

  CHECK_EQ (wrz (d, 2, 0, 24), 0);
  CHECK_EQ (zn_report_zones (d, Z + 7, zs, 3), 3);
  CHECK_EQ (zs[0].start, Z);
  CHECK_EQ (zs[1].start, 2 * Z);
  CHECK_EQ (zs[1].wp, 2 * Z + 24);
  CHECK_EQ (zs[1].cond, ZN_COND_IMP_OPEN);
  CHECK_EQ (zs[1].type, ZN_ZONE_SEQWRITE_REQ);
  CHECK_EQ (zs[1].len, Z);
  CHECK_EQ (zs[1].capacity, Z);
  CHECK_EQ (zs[2].start, 3 * Z);

  CHECK_EQ (zn_report_zones (d, 0, zs, 10), 8);
  CHECK_EQ (zn_report_zones (d, cap - 1, zs, 10), 1);
  CHECK_EQ (zs[0].start, 7 * Z);
  CHECK_EQ (zn_report_zones (d, 6 * Z, zs, 10), 2);
  CHECK_EQ (zn_report_zones (d, cap, zs, 10), 0);
  CHECK_EQ (zn_report_zones (d, cap + 12345, zs, 10), 0);
  CHECK_EQ (zn_report_zones (d, 0, zs, 0), 0);
  zn_dev_destroy (d);
}

static void
test_names (void)
{
  struct {
    uint8_t cond;
    const char *name;
  } conds[] = {
    { ZN_COND_NOT_WP, "NOT_WP" }, { ZN_COND_EMPTY, "EMPTY" },
    { ZN_COND_IMP_OPEN, "IMP_OPEN" }, { ZN_COND_EXP_OPEN, "EXP_OPEN" },
    { ZN_COND_CLOSED, "CLOSED" }, { ZN_COND_READONLY, "READONLY" },
    { ZN_COND_FULL, "FULL" }, { ZN_COND_OFFLINE, "OFFLINE" },
  };
  struct {
    enum zn_zone_op op;
    const char *name;
  } ops[] = {
    { ZN_OP_OPEN, "open" }, { ZN_OP_CLOSE, "close" },
    { ZN_OP_FINISH, "finish" }, { ZN_OP_RESET, "reset" },
  };
  unsigned i;

  for (i = 0; i < sizeof conds / sizeof conds[0]; i++) {
    const char *n = zn_cond_name (conds[i].cond);
    CHECK (n != NULL);
    if (strcmp (n, conds[i].name) != 0)
      fprintf (stderr, "cond 0x%x: \"%s\"\n", conds[i].cond, n);
    CHECK (strcmp (n, conds[i].name) == 0);
  }
  /* Unknown values still give a printable name. */
  CHECK (zn_cond_name (0x7) != NULL);
  CHECK (zn_cond_name (0xFF) != NULL);
  /* The header does not fix the case of op names. */
  for (i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    const char *n = zn_op_name (ops[i].op);
    CHECK (n != NULL);
    if (strcasecmp (n, ops[i].name) != 0)
      fprintf (stderr, "op %d: \"%s\"\n", (int) ops[i].op, n);
    CHECK (strcasecmp (n, ops[i].name) == 0);
  }
}

/* ------------------------------------------------------------------ */
/* Why a request failed, as the model says it (lib/model/errors.h) */

/* Writes nr sectors at sector; returns the errno and sets *why. */
static int
write_why (struct zn_dev *d, uint64_t sector, uint64_t nr, enum zn_reason *why)
{
  void *buf = xmalloc (nr * ZN_SECTOR_SIZE);
  int r;

  memset (buf, 0xa5, nr * ZN_SECTOR_SIZE);
  *why = ZN_REASON_BAD_BLOCK;   /* to see that success clears it */
  r = zn_write_why (d, buf, sector, nr, false, why);
  free (buf);
  return r;
}

#define CHECK_WHY(call, err, reason)                                    \
  do {                                                                  \
    enum zn_reason cw_why_ = ZN_REASON_NONE;                            \
    int cw_r_ = call;                                                   \
    if (cw_r_ != (err) || cw_why_ != (reason))                          \
      fprintf (stderr, "%s: %d (%s), want %d (%s)\n", #call, cw_r_,    \
               zn_reason_text (cw_why_), (err), zn_reason_text (reason)); \
    CHECK_EQ (cw_r_, (err));                                            \
    CHECK_EQ (cw_why_, (reason));                                       \
  } while (0)

static void
test_reasons_one_zone (void)
{
  /* Zone 0 conventional, then 1 MiB sequential zones. */
  struct zn_dev *d = mk (16, 1, 0, 1, 0, 0);
  unsigned char buf[256 * ZN_SECTOR_SIZE] = { 0 };
  uint64_t at;

  CHECK_WHY (write_why (d, Z, 8, &cw_why_), 0, ZN_REASON_NONE);
  CHECK_WHY (write_why (d, Z + 16, 8, &cw_why_), -EIO, ZN_REASON_NOT_AT_WP);
  CHECK_WHY (write_why (d, 16 * Z, 8, &cw_why_), -EINVAL,
             ZN_REASON_OUT_OF_RANGE);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_FINISH, 2 * Z, Z), 0);
  CHECK_WHY (write_why (d, 2 * Z + 8, 8, &cw_why_), -EIO, ZN_REASON_FULL);
  CHECK_EQ (zn_zone_set_readonly (d, 3 * Z), 0);
  CHECK_WHY (write_why (d, 3 * Z, 8, &cw_why_), -EIO, ZN_REASON_READONLY);
  CHECK_EQ (zn_zone_set_offline (d, 4 * Z), 0);
  CHECK_WHY (write_why (d, 4 * Z, 8, &cw_why_), -EIO, ZN_REASON_OFFLINE);
  CHECK_WHY (zn_read_why (d, buf, 4 * Z, 1, &cw_why_), -EIO,
             ZN_REASON_OFFLINE);
  CHECK_EQ (zn_badblocks_set (d, 5 * Z + 4, 5 * Z + 4), 0);
  CHECK_WHY (write_why (d, 5 * Z, 8, &cw_why_), -EIO, ZN_REASON_BAD_BLOCK);
  CHECK_EQ (zn_badblocks_set (d, 4, 4), 0);
  CHECK_WHY (write_why (d, 0, 8, &cw_why_), -EIO, ZN_REASON_BAD_BLOCK);
  CHECK_WHY (zn_read_why (d, buf, 4, 1, &cw_why_), -EIO, ZN_REASON_BAD_BLOCK);
  /* Split at the zone boundary: the reason of the part that failed. */
  CHECK_WHY (write_why (d, Z - 8, 24, &cw_why_), -EIO, ZN_REASON_NOT_AT_WP);
  /* Split at max_sectors: the first part fails (a bad block, or the
   * store out of space), which leaves the second off the write pointer;
   * the reason is the first part's.
   */
  CHECK_EQ (zn_badblocks_set (d, 6 * Z + 4, 6 * Z + 4), 0);
  CHECK_WHY (write_why (d, 6 * Z, 2 * zn_dev_geometry (d)->max_sectors,
                        &cw_why_), -EIO, ZN_REASON_BAD_BLOCK);

  /* Zone management. */
  CHECK_WHY (zn_zone_mgmt_why (d, ZN_OP_OPEN, 0, Z, &cw_why_), -EIO,
             ZN_REASON_CONVENTIONAL);
  CHECK_WHY (zn_zone_mgmt_why (d, ZN_OP_OPEN, 2 * Z, Z, &cw_why_), -EIO,
             ZN_REASON_BAD_TRANSITION);
  CHECK_WHY (zn_zone_mgmt_why (d, ZN_OP_RESET, 3 * Z, Z, &cw_why_), -EIO,
             ZN_REASON_READONLY);
  CHECK_WHY (zn_zone_mgmt_why (d, ZN_OP_RESET, 4 * Z, Z, &cw_why_), -EIO,
             ZN_REASON_OFFLINE);
  CHECK_WHY (zn_zone_mgmt_why (d, ZN_OP_OPEN, Z + 8, Z, &cw_why_), -EINVAL,
             ZN_REASON_MISALIGNED);
  CHECK_WHY (zn_zone_mgmt_why (d, ZN_OP_OPEN, Z, 0, &cw_why_), -EINVAL,
             ZN_REASON_EMPTY);
  CHECK_WHY (zn_zone_mgmt_why (d, ZN_OP_OPEN, 15 * Z, 2 * Z, &cw_why_),
             -EINVAL, ZN_REASON_OUT_OF_RANGE);
  CHECK_WHY (zn_zone_mgmt_why (d, (enum zn_zone_op) 99, Z, Z, &cw_why_),
             -EOPNOTSUPP, ZN_REASON_NOT_SUPPORTED);
  CHECK_WHY (zn_zone_mgmt_why (d, ZN_OP_RESET, Z, Z, &cw_why_), 0,
             ZN_REASON_NONE);

  /* Zone append. */
  CHECK_WHY (zn_zone_append_why (d, buf, 0, 8, false, &at, &cw_why_), -EIO,
             ZN_REASON_CONVENTIONAL);
  CHECK_WHY (zn_zone_append_why (d, buf, Z + 8, 8, false, &at, &cw_why_),
             -EIO, ZN_REASON_NOT_ZONE_START);
  CHECK_WHY (zn_zone_append_why (d, buf, Z, 0, false, &at, &cw_why_),
             -EINVAL, ZN_REASON_EMPTY);
  CHECK_WHY (zn_zone_append_why (d, buf, Z,
                                 zn_dev_geometry (d)->max_append_sectors + 1,
                                 false, &at, &cw_why_),
             -EIO, ZN_REASON_APPEND_TOO_LONG);
  CHECK_WHY (zn_zone_append_why (d, buf, 2 * Z, 8, false, &at, &cw_why_),
             -EIO, ZN_REASON_FULL);
  zn_dev_destroy (d);
}

/* 2 MiB zones of 1 MiB capacity, one open zone, two active. */
static void
test_reasons_limits (void)
{
  struct zn_dev *d = mk (16, 2, 1, 0, 1, 2);

  CHECK_WHY (write_why (d, 0, Z - 8, &cw_why_), 0, ZN_REASON_NONE);
  CHECK_WHY (write_why (d, Z - 8, 16, &cw_why_), -EIO,
             ZN_REASON_PAST_CAPACITY);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_OPEN, 0, 2 * Z), 0);
  CHECK_WHY (write_why (d, 2 * Z, 8, &cw_why_), -ETOOMANYREFS,
             ZN_REASON_OPEN_LIMIT);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_CLOSE, 0, 2 * Z), 0);
  CHECK_WHY (write_why (d, 2 * Z, 8, &cw_why_), 0, ZN_REASON_NONE);
  CHECK_WHY (write_why (d, 4 * Z, 8, &cw_why_), -EOVERFLOW,
             ZN_REASON_ACTIVE_LIMIT);
  CHECK_WHY (zn_zone_mgmt_why (d, ZN_OP_OPEN, 4 * Z, 2 * Z, &cw_why_),
             -EOVERFLOW, ZN_REASON_ACTIVE_LIMIT);
  zn_dev_destroy (d);
}

/* pipeline_zoned_writes: a write ahead of the wp that nothing brings the
 * wp to gives up at the bound; the block layer's zone write plug (6.12)
 * refuses a write off its wp, then every write until a zone report.
 */
static void
test_reasons_pipeline_and_plug (void)
{
  struct zn_config c = cfg (16, 1, 0, 0, 0, 0);
  struct zn_dev *d;
  char err[256];

  c.pipeline_zoned_writes = true;
  c.pipeline_wait_ms = 1;
  d = create (&c);
  CHECK_WHY (write_why (d, 8, 8, &cw_why_), -ETIMEDOUT,
             ZN_REASON_PIPELINE_TIMEOUT);
  zn_dev_destroy (d);

  c = cfg (16, 1, 0, 0, 0, 0);
  c.kernel = ZN_KERNEL_6_12;
  d = create (&c);
  CHECK_EQ (zn_dev_write_plugging (d, err, sizeof err), 0);
  CHECK_WHY (write_why (d, 0, 8, &cw_why_), 0, ZN_REASON_NONE);
  CHECK_WHY (write_why (d, 16, 8, &cw_why_), -EIO, ZN_REASON_NOT_AT_WP);
  CHECK_WHY (write_why (d, 8, 8, &cw_why_), -EIO, ZN_REASON_PLUG_STALE);
  zn_dev_destroy (d);
}

/* One name table, one text per reason, one rule for the block device. */
static void
test_error_vocabulary (void)
{
  char buf[256];

  CHECK (strcmp (zn_errno_name (EIO), "EIO") == 0);
  CHECK (strcmp (zn_errno_name (ETOOMANYREFS), "ETOOMANYREFS") == 0);
  CHECK (strcmp (zn_errno_name (-1), "EUNKNOWN") == 0);
  CHECK_EQ (zn_block_errno (ETIMEDOUT), EIO);
  CHECK_EQ (zn_block_errno (EBUSY), EIO);
  CHECK_EQ (zn_block_errno (EOVERFLOW), EOVERFLOW);
  CHECK_EQ (zn_block_errno (0), 0);
  CHECK_EQ (zn_errno_value ("ENOSPC"), ENOSPC);
  CHECK_EQ (zn_errno_value ("EFOO"), 0);
  for (int r = ZN_REASON_NONE + 1; r <= ZN_REASON_INJECTED; r++) {
    CHECK (zn_reason_text (r)[0] != '\0');
    CHECK (strcmp (zn_reason_text (r), "unknown reason") != 0);
    for (int q = ZN_REASON_NONE + 1; q < r; q++)
      CHECK (strcmp (zn_reason_text (q), zn_reason_text (r)) != 0);
  }
  CHECK (strcmp (zn_reason_text (ZN_REASON_INJECTED + 1),
                 "unknown reason") == 0);
  CHECK (strcmp (zn_error_text (buf, sizeof buf, EIO, ZN_REASON_FULL),
                 "EIO: the zone is FULL") == 0);
  CHECK (strcmp (zn_error_text (buf, sizeof buf, ENOMEM, ZN_REASON_NONE),
                 "ENOMEM") == 0);
  CHECK (strncmp (zn_error_text (buf, sizeof buf, ETIMEDOUT,
                                 ZN_REASON_PIPELINE_TIMEOUT),
                  "ETIMEDOUT, sent as EIO: pipelined write", 39) == 0);
  CHECK (strcmp (zn_request_error_text (buf, sizeof buf, "write", 1048576,
                                        4096, 1048576, EIO,
                                        ZN_REASON_NOT_AT_WP),
                 "write: offset 1048576 length 4096 in zone 1: EIO: not at "
                 "the zone's write pointer") == 0);
  CHECK (strcmp (zn_request_error_text (buf, sizeof buf, "trim", 0,
                                        2097152, 1048576, EIO,
                                        ZN_REASON_READONLY),
                 "trim: offset 0 length 2097152 in zones 0 to 1: EIO: the "
                 "zone is READONLY") == 0);
  CHECK (strcmp (zn_request_error_text (buf, sizeof buf, "flush", 0, 0,
                                        1048576, ENOSPC,
                                        ZN_REASON_NO_SPACE),
                 "flush: ENOSPC: no space left for the data") == 0);
}

/* ------------------------------------------------------------------ */
/* Zone append (null_blk's null_zone_write with append, and the block
 * layer's blk_check_zone_append in front of it)
 */

/* Appends nr sectors of the pattern tag (laid out as if at sector 0) to
 * the zone; *at gets the sector it landed at, or all-ones on failure.
 */
static int
app (struct zn_dev *d, uint32_t zone, uint64_t nr, unsigned tag, uint64_t *at)
{
  void *buf = xmalloc (nr * ZN_SECTOR_SIZE);
  uint64_t written = UINT64_MAX;
  int r;

  fill_pattern (buf, 0, nr, tag);
  r = zn_zone_append (d, buf, zstart (d, zone), nr, false, &written);
  free (buf);
  if (at)
    *at = written;
  return r;
}

/* Whether [sector, sector+nr) holds what app wrote with tag. */
static bool
reads_appended (struct zn_dev *d, uint64_t sector, uint64_t nr, unsigned tag)
{
  unsigned char *buf = xmalloc (nr * ZN_SECTOR_SIZE);
  unsigned char *want = xmalloc (nr * ZN_SECTOR_SIZE);
  bool ok;

  fill_pattern (want, 0, nr, tag);
  ok = zn_read (d, buf, sector, nr) == 0
    && memcmp (buf, want, nr * ZN_SECTOR_SIZE) == 0;
  free (want);
  free (buf);
  return ok;
}

static void
test_append_basic (void)
{
  struct zn_dev *d = mk (8, 1, 1, 1, 0, 0);
  uint64_t at;

  CHECK_EQ (zn_dev_geometry (d)->max_append_sectors, 255);
  CHECK_EQ (app (d, 1, 16, 1, &at), 0);
  CHECK_EQ (at, zstart (d, 1));
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 16);
  EXPECT_COUNTERS (d, 1, 0, 0);
  CHECK_EQ (app (d, 1, 8, 2, &at), 0);
  CHECK_EQ (at, zstart (d, 1) + 16);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 24);
  CHECK (reads_appended (d, zstart (d, 1), 16, 1));
  CHECK (reads_appended (d, zstart (d, 1) + 16, 8, 2));
  CHECK (reads_fill (d, zstart (d, 1) + 24, 8, 0xFF));

  /* An append and a write at the wp share one wp. */
  CHECK_EQ (wrz (d, 1, 24, 8), 0);
  CHECK_EQ (app (d, 1, 8, 3, &at), 0);
  CHECK_EQ (at, zstart (d, 1) + 32);

  /* Appends to an explicitly opened or a closed zone keep or reopen it. */
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 2), 0);
  CHECK_EQ (app (d, 2, 8, 4, &at), 0);
  EXPECT_ZONE (d, 2, ZN_COND_EXP_OPEN, 8);
  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 2), 0);
  EXPECT_ZONE (d, 2, ZN_COND_CLOSED, 8);
  CHECK_EQ (app (d, 2, 8, 5, &at), 0);
  CHECK_EQ (at, zstart (d, 2) + 8);
  EXPECT_ZONE (d, 2, ZN_COND_IMP_OPEN, 16);
  EXPECT_COUNTERS (d, 2, 0, 0);

  /* The largest append fits exactly; the written sector may be NULL. */
  {
    void *buf = xmalloc (255 * ZN_SECTOR_SIZE);
    memset (buf, 0x5A, 255 * ZN_SECTOR_SIZE);
    CHECK_EQ (zn_zone_append (d, buf, zstart (d, 3), 255, true, NULL), 0);
    free (buf);
  }
  EXPECT_ZONE (d, 3, ZN_COND_IMP_OPEN, 255);
  zn_dev_destroy (d);
}

static void
test_append_refused (void)
{
  struct zn_dev *d = mk (16, 2, 1, 1, 0, 0);   /* len 4096, cap 2048 */
  struct snapshot s;
  uint64_t at;
  void *buf = xmalloc (4096 * ZN_SECTOR_SIZE);

  memset (buf, 0x33, 4096 * ZN_SECTOR_SIZE);
  CHECK_EQ (app (d, 1, 8, 1, NULL), 0);
  snap (d, &s);
  /* Conventional zones take no appends. */
  CHECK_EQ (app (d, 0, 8, 1, &at), -EIO);
  CHECK (at == UINT64_MAX);
  /* Not at a zone start: not even at the wp. */
  CHECK_EQ (zn_zone_append (d, buf, zstart (d, 1) + 8, 8, false, &at), -EIO);
  CHECK_EQ (zn_zone_append (d, buf, zstart (d, 2) + 2048, 8, false, &at), -EIO);
  /* Never split: over the append limit. */
  CHECK_EQ (zn_zone_append (d, buf, zstart (d, 2), 256, false, &at), -EIO);
  /* Block layer checks. */
  CHECK_EQ (zn_zone_append (d, buf, zstart (d, 2), 0, false, &at), -EINVAL);
  CHECK_EQ (zn_zone_append (d, buf, zn_dev_geometry (d)->capacity, 8, false,
                            &at), -EINVAL);
  CHECK (same_state (d, &s));

  /* Past the capacity: refused whole, nothing written. */
  CHECK_EQ (wrz (d, 1, 8, 2048 - 16), 0);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 2040);
  snap (d, &s);
  CHECK_EQ (app (d, 1, 16, 2, &at), -EIO);
  CHECK (same_state (d, &s));
  CHECK (reads_fill (d, zstart (d, 1) + 2040, 16, 0xFF));
  CHECK_EQ (app (d, 1, 8, 2, &at), 0);
  CHECK_EQ (at, zstart (d, 1) + 2040);
  EXPECT_ZONE (d, 1, ZN_COND_FULL, 2048);
  EXPECT_COUNTERS (d, 0, 0, 0);
  /* FULL, READONLY and OFFLINE zones take none. */
  CHECK_EQ (app (d, 1, 8, 3, &at), -EIO);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 2), 0);
  CHECK_EQ (app (d, 2, 8, 3, &at), -EIO);
  CHECK_EQ (zn_zone_set_readonly (d, zstart (d, 3)), 0);
  CHECK_EQ (app (d, 3, 8, 3, &at), -EIO);
  CHECK_EQ (zn_zone_set_offline (d, zstart (d, 4)), 0);
  CHECK_EQ (app (d, 4, 8, 3, &at), -EIO);
  EXPECT_ZONE_NO_WP (d, 4, ZN_COND_OFFLINE);
  /* After a reset the zone takes appends from its start again. */
  CHECK_EQ (op1 (d, ZN_OP_RESET, 1), 0);
  CHECK_EQ (app (d, 1, 8, 4, &at), 0);
  CHECK_EQ (at, zstart (d, 1));
  free (buf);
  zn_dev_destroy (d);
}

/* 4 KiB blocks: the append limit is max_sectors rounded down to a block,
 * and sub-block appends are refused as any unaligned request.
 */
static void
test_append_block_size (void)
{
  struct zn_config c = cfg (8, 1, 1, 0, 0, 0);
  struct zn_dev *d;
  uint64_t at;

  c.blocksize = 4096;
  d = create (&c);
  CHECK_EQ (zn_dev_geometry (d)->max_append_sectors, 248);
  CHECK_EQ (app (d, 1, 1, 1, &at), -EINVAL);
  CHECK_EQ (app (d, 1, 256, 1, &at), -EIO);
  CHECK_EQ (app (d, 1, 248, 1, &at), 0);
  CHECK_EQ (app (d, 1, 8, 2, &at), 0);
  CHECK_EQ (at, zstart (d, 1) + 248);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 256);
  zn_dev_destroy (d);
}

/* Resource checks are those of a write at the wp (zone-rules 3, 4). */
static void
test_append_limits (void)
{
  struct zn_dev *d = mk_c4 ();                 /* open 2, active 3 */
  struct snapshot s;
  uint64_t at;

  /* Implicit close of the first IMP_OPEN zone, round-robin. */
  CHECK_EQ (app (d, 1, 8, 1, NULL), 0);
  CHECK_EQ (app (d, 2, 8, 1, NULL), 0);
  CHECK_EQ (app (d, 3, 8, 1, &at), 0);
  CHECK_EQ (at, zstart (d, 3));
  EXPECT_ZONE (d, 1, ZN_COND_CLOSED, 8);
  EXPECT_ZONE (d, 3, ZN_COND_IMP_OPEN, 8);
  EXPECT_COUNTERS (d, 2, 0, 1);
  /* Active limit: three active, an EMPTY zone is refused. */
  snap (d, &s);
  CHECK_EQ (app (d, 4, 8, 1, NULL), -EOVERFLOW);
  CHECK (same_state (d, &s));
  /* Open limit with both open zones explicit: no victim. */
  CHECK_EQ (op1 (d, ZN_OP_RESET, 3), 0);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 2), 0);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 4), 0);
  EXPECT_COUNTERS (d, 0, 2, 1);
  snap (d, &s);
  CHECK_EQ (app (d, 1, 8, 1, NULL), -ETOOMANYREFS);
  CHECK (same_state (d, &s));
  zn_dev_destroy (d);
}

/* A bad block fails an append as a write: the zone is already open. */
static void
test_append_badblocks (void)
{
  struct zn_dev *d = mk (8, 1, 1, 0, 0, 0);
  uint64_t at;

  CHECK_EQ (zn_badblocks_set (d, zstart (d, 1) + 8, zstart (d, 1) + 8), 0);
  CHECK_EQ (app (d, 1, 8, 1, &at), 0);
  CHECK_EQ (app (d, 1, 8, 2, &at), -EIO);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 8);
  CHECK_EQ (app (d, 2, 16, 1, &at), 0);
  CHECK_EQ (zn_badblocks_set (d, zstart (d, 3), zstart (d, 3)), 0);
  CHECK_EQ (app (d, 3, 8, 1, &at), -EIO);
  EXPECT_ZONE (d, 3, ZN_COND_IMP_OPEN, 0);
  zn_dev_destroy (d);
}

int
main (void)
{
  test_read_content ();
  test_read_not_memory_backed ();
  test_reset_keeps_mappings ();
  test_request_bounds_alignment ();
  test_write_zone_crossing ();
  test_write_max_sectors_split ();
  test_report_zones ();
  test_names ();
  test_reasons_one_zone ();
  test_reasons_limits ();
  test_reasons_pipeline_and_plug ();
  test_error_vocabulary ();
  test_append_basic ();
  test_append_refused ();
  test_append_block_size ();
  test_append_limits ();
  test_append_badblocks ();

  printf ("test-model-io: all tests passed\n");
  return EXIT_SUCCESS;
}
