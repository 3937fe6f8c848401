/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of the device model's zone state machine, open and active
 * limits, zone management ranges and READONLY/OFFLINE injection against
 * null_blk's zone rules (doc/zone-rules.md, cited as "zone-rules N.M" below).
 */
#include "model.h"

/* ------------------------------------------------------------------ */
/* State machine without limits (zone-rules 4, 5.2).  Zone 0 is
 * conventional.
 */

static void
test_from_empty (void)
{
  struct zn_dev *d = mk (8, 1, 0, 1, 0, 0);

  CHECK_EQ (op1 (d, ZN_OP_OPEN, 1), 0);
  EXPECT_ZONE (d, 1, ZN_COND_EXP_OPEN, 0);
  EXPECT_COUNTERS (d, 0, 1, 0);

  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 2), -EIO);
  EXPECT_ZONE (d, 2, ZN_COND_EMPTY, 0);
  EXPECT_COUNTERS (d, 0, 1, 0);

  CHECK_EQ (op1 (d, ZN_OP_FINISH, 3), 0);
  EXPECT_ZONE (d, 3, ZN_COND_FULL, Z);
  EXPECT_COUNTERS (d, 0, 1, 0);

  CHECK_EQ (op1 (d, ZN_OP_RESET, 4), 0);
  EXPECT_ZONE (d, 4, ZN_COND_EMPTY, 0);
  EXPECT_COUNTERS (d, 0, 1, 0);

  /* Write at the wp of an EMPTY zone: implicitly opened. */
  CHECK_EQ (wrz (d, 5, 0, 8), 0);
  EXPECT_ZONE (d, 5, ZN_COND_IMP_OPEN, 8);
  EXPECT_COUNTERS (d, 1, 1, 0);
  zn_dev_destroy (d);
}

static void
test_from_imp_open (void)
{
  struct zn_dev *d = mk (8, 1, 0, 1, 0, 0);

  CHECK_EQ (wrz (d, 1, 0, 8), 0);
  EXPECT_COUNTERS (d, 1, 0, 0);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 1), 0);
  EXPECT_ZONE (d, 1, ZN_COND_EXP_OPEN, 8);
  EXPECT_COUNTERS (d, 0, 1, 0);

  CHECK_EQ (wrz (d, 2, 0, 8), 0);
  EXPECT_COUNTERS (d, 1, 1, 0);
  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 2), 0);
  EXPECT_ZONE (d, 2, ZN_COND_CLOSED, 8);
  EXPECT_COUNTERS (d, 0, 1, 1);

  CHECK_EQ (wrz (d, 3, 0, 8), 0);
  EXPECT_COUNTERS (d, 1, 1, 1);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 3), 0);
  EXPECT_ZONE (d, 3, ZN_COND_FULL, Z);
  EXPECT_COUNTERS (d, 0, 1, 1);

  CHECK_EQ (wrz (d, 4, 0, 8), 0);
  EXPECT_COUNTERS (d, 1, 1, 1);
  CHECK_EQ (op1 (d, ZN_OP_RESET, 4), 0);
  EXPECT_ZONE (d, 4, ZN_COND_EMPTY, 0);
  EXPECT_COUNTERS (d, 0, 1, 1);
  zn_dev_destroy (d);
}

static void
test_from_exp_open (void)
{
  struct zn_dev *d = mk (8, 1, 0, 1, 0, 0);

  /* OPEN of EXP_OPEN: no change. */
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 1), 0);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 1), 0);
  EXPECT_ZONE (d, 1, ZN_COND_EXP_OPEN, 0);
  EXPECT_COUNTERS (d, 0, 1, 0);

  /* A write keeps EXP_OPEN. */
  CHECK_EQ (wrz (d, 1, 0, 16), 0);
  EXPECT_ZONE (d, 1, ZN_COND_EXP_OPEN, 16);
  EXPECT_COUNTERS (d, 0, 1, 0);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 1), 0);
  EXPECT_ZONE (d, 1, ZN_COND_EXP_OPEN, 16);

  /* CLOSE: CLOSED when written, EMPTY when wp == start. */
  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 1), 0);
  EXPECT_ZONE (d, 1, ZN_COND_CLOSED, 16);
  EXPECT_COUNTERS (d, 0, 0, 1);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 2), 0);
  EXPECT_COUNTERS (d, 0, 1, 1);
  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 2), 0);
  EXPECT_ZONE (d, 2, ZN_COND_EMPTY, 0);
  EXPECT_COUNTERS (d, 0, 0, 1);

  CHECK_EQ (op1 (d, ZN_OP_OPEN, 3), 0);
  CHECK_EQ (wrz (d, 3, 0, 8), 0);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 3), 0);
  EXPECT_ZONE (d, 3, ZN_COND_FULL, Z);
  EXPECT_COUNTERS (d, 0, 0, 1);

  CHECK_EQ (op1 (d, ZN_OP_OPEN, 4), 0);
  CHECK_EQ (wrz (d, 4, 0, 8), 0);
  CHECK_EQ (op1 (d, ZN_OP_RESET, 4), 0);
  EXPECT_ZONE (d, 4, ZN_COND_EMPTY, 0);
  EXPECT_COUNTERS (d, 0, 0, 1);

  /* Filling an EXP_OPEN zone by writes makes it FULL (exp-1). */
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 5), 0);
  EXPECT_COUNTERS (d, 0, 1, 1);
  CHECK_EQ (wrz (d, 5, 0, Z), 0);
  EXPECT_ZONE (d, 5, ZN_COND_FULL, Z);
  EXPECT_COUNTERS (d, 0, 0, 1);
  zn_dev_destroy (d);
}

static void
test_from_closed (void)
{
  struct zn_dev *d = mk (8, 1, 0, 1, 0, 0);
  uint32_t i;

  for (i = 1; i <= 5; i++) {
    CHECK_EQ (wrz (d, i, 0, 8), 0);
    CHECK_EQ (op1 (d, ZN_OP_CLOSE, i), 0);
    EXPECT_ZONE (d, i, ZN_COND_CLOSED, 8);
  }
  EXPECT_COUNTERS (d, 0, 0, 5);

  CHECK_EQ (op1 (d, ZN_OP_OPEN, 1), 0);
  EXPECT_ZONE (d, 1, ZN_COND_EXP_OPEN, 8);
  EXPECT_COUNTERS (d, 0, 1, 4);

  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 2), 0);
  EXPECT_ZONE (d, 2, ZN_COND_CLOSED, 8);
  EXPECT_COUNTERS (d, 0, 1, 4);

  CHECK_EQ (op1 (d, ZN_OP_FINISH, 3), 0);
  EXPECT_ZONE (d, 3, ZN_COND_FULL, Z);
  EXPECT_COUNTERS (d, 0, 1, 3);

  CHECK_EQ (op1 (d, ZN_OP_RESET, 4), 0);
  EXPECT_ZONE (d, 4, ZN_COND_EMPTY, 0);
  EXPECT_COUNTERS (d, 0, 1, 2);

  /* zone-rules 4, step 5: a write at the wp of a CLOSED zone reopens it. */
  CHECK_EQ (wrz (d, 5, 8, 8), 0);
  EXPECT_ZONE (d, 5, ZN_COND_IMP_OPEN, 16);
  EXPECT_COUNTERS (d, 1, 1, 1);
  zn_dev_destroy (d);
}

static void
test_from_full (void)
{
  struct zn_dev *d = mk (8, 1, 0, 1, 0, 0);
  uint32_t i;

  for (i = 1; i <= 4; i++) {
    CHECK_EQ (wrz (d, i, 0, Z), 0);
    EXPECT_ZONE (d, i, ZN_COND_FULL, Z);
  }
  EXPECT_COUNTERS (d, 0, 0, 0);

  CHECK_EQ (op1 (d, ZN_OP_OPEN, 1), -EIO);
  EXPECT_ZONE (d, 1, ZN_COND_FULL, Z);
  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 2), -EIO);
  EXPECT_ZONE (d, 2, ZN_COND_FULL, Z);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 3), 0);
  EXPECT_ZONE (d, 3, ZN_COND_FULL, Z);
  CHECK_EQ (op1 (d, ZN_OP_RESET, 4), 0);
  EXPECT_ZONE (d, 4, ZN_COND_EMPTY, 0);
  EXPECT_COUNTERS (d, 0, 0, 0);
  zn_dev_destroy (d);
}

/* zone-rules 4, 5.2: conventional zones have no state. */
static void
test_conventional (void)
{
  struct zn_dev *d = mk (8, 1, 0, 2, 0, 0);
  enum zn_zone_op ops[] = { ZN_OP_OPEN, ZN_OP_CLOSE, ZN_OP_FINISH,
                            ZN_OP_RESET };
  unsigned i;

  for (i = 0; i < 4; i++) {
    CHECK_EQ (op1 (d, ops[i], 0), -EIO);
    CHECK_EQ (op1 (d, ops[i], 1), -EIO);
  }
  /* Writes anywhere, in any order, overwriting. */
  CHECK_EQ (wrz (d, 0, 100, 8), 0);
  CHECK_EQ (wrz (d, 0, 8, 8), 0);
  CHECK_EQ (wrz (d, 0, 8, 8), 0);
  CHECK_EQ (wrz (d, 1, Z - 8, 8), 0);
  CHECK_EQ (wrz (d, 0, 0, 2 * Z), 0);
  for (i = 0; i < 2; i++) {
    struct zn_zone z = zone_at (d, i);
    CHECK_EQ (z.type, ZN_ZONE_CONVENTIONAL);
    CHECK_EQ (z.cond, ZN_COND_NOT_WP);
    CHECK_EQ (z.wp, z.start + z.len);
    CHECK_EQ (z.capacity, Z);
  }
  EXPECT_COUNTERS (d, 0, 0, 0);
  zn_dev_destroy (d);
}

/* zone-rules 4, steps 1 to 3 and 7. */
static void
test_write_wp_rules (void)
{
  struct zn_dev *d = mk (16, 2, 1, 0, 0, 0); /* len 4096, cap 2048 */
  struct snapshot s;

  /* Ahead of the wp of an EMPTY zone. */
  snap (d, &s);
  CHECK_EQ (wrz (d, 1, 8, 8), -EIO);
  CHECK (same_state (d, &s));

  CHECK_EQ (wrz (d, 1, 0, 16), 0);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 16);
  snap (d, &s);
  CHECK_EQ (wrz (d, 1, 8, 8), -EIO);            /* behind */
  CHECK_EQ (wrz (d, 1, 0, 8), -EIO);            /* at start */
  CHECK_EQ (wrz (d, 1, 24, 8), -EIO);           /* ahead */
  CHECK (same_state (d, &s));
  CHECK_EQ (wrz (d, 1, 16, 8), 0);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 24);

  /* Past the capacity: rejected as a whole, nothing written. */
  CHECK_EQ (wrz (d, 1, 24, 2048 - 24 - 8), 0);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 2040);
  snap (d, &s);
  CHECK_EQ (wrz (d, 1, 2040, 16), -EIO);
  CHECK (same_state (d, &s));
  CHECK (reads_fill (d, zstart (d, 1) + 2040, 16, 0xFF));

  /* Filling to the capacity: FULL with wp = start + cap. */
  CHECK_EQ (wrz (d, 1, 2040, 8), 0);
  EXPECT_ZONE (d, 1, ZN_COND_FULL, 2048);
  EXPECT_COUNTERS (d, 0, 0, 0);

  /* Writes to FULL: at start, at the old wp, in the gap. */
  snap (d, &s);
  CHECK_EQ (wrz (d, 1, 0, 8), -EIO);
  CHECK_EQ (wrz (d, 1, 2048, 8), -EIO);
  CHECK_EQ (wrz (d, 1, 4088, 8), -EIO);
  CHECK (same_state (d, &s));

  /* Finish: FULL with wp = start + len (zone-rules 5.2, rule 2). */
  CHECK_EQ (wrz (d, 2, 0, 8), 0);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 2), 0);
  EXPECT_ZONE (d, 2, ZN_COND_FULL, 4096);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 3), 0);
  EXPECT_ZONE (d, 3, ZN_COND_FULL, 4096);
  /* Finish of FULL keeps start + cap on 6.1 (zone-rules 11.1). */
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 1), 0);
  EXPECT_ZONE (d, 1, ZN_COND_FULL, 2048);
  EXPECT_COUNTERS (d, 0, 0, 0);
  zn_dev_destroy (d);
}

/* ------------------------------------------------------------------ */
/* Open and active slots (zone-rules 3) */

static void
test_limits_open_and_active (void)
{
  struct zn_dev *d = mk_c4 ();
  struct snapshot s;

  CHECK_EQ (wrz (d, 1, 0, 8), 0);
  CHECK_EQ (wrz (d, 2, 0, 8), 0);
  EXPECT_COUNTERS (d, 2, 0, 0);

  /* Open slots full, active 2 < 3: zone 1 (the cursor starts at nr_conv)
   * is closed implicitly.
   */
  CHECK_EQ (wrz (d, 3, 0, 8), 0);
  EXPECT_ZONE (d, 1, ZN_COND_CLOSED, 8);
  EXPECT_ZONE (d, 2, ZN_COND_IMP_OPEN, 8);
  EXPECT_ZONE (d, 3, ZN_COND_IMP_OPEN, 8);
  EXPECT_COUNTERS (d, 2, 0, 1);

  /* active == max_active: every activation fails with EOVERFLOW even
   * though the open check would fail too (3.6); nothing changes (3.7).
   */
  snap (d, &s);
  CHECK_EQ (wrz (d, 4, 0, 8), -EOVERFLOW);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 4), -EOVERFLOW);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 4), -EOVERFLOW);
  CHECK (same_state (d, &s));

  /* 3.3: a CLOSED target needs an open slot; the implicit close is refused
   * because active == max_active, although reopening zone 1 would not
   * change the active count.
   */
  CHECK_EQ (wrz (d, 1, 8, 8), -ETOOMANYREFS);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 1), -ETOOMANYREFS);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 1), -ETOOMANYREFS);
  CHECK (same_state (d, &s));

  /* Ops that need no resources still work. */
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 2), 0);         /* IMP -> EXP, no check */
  EXPECT_COUNTERS (d, 1, 1, 1);
  CHECK_EQ (wrz (d, 2, 8, 8), 0);
  EXPECT_ZONE (d, 2, ZN_COND_EXP_OPEN, 16);

  /* Free an open slot: zone 1 can be reopened by a write. */
  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 3), 0);
  EXPECT_COUNTERS (d, 0, 1, 2);
  CHECK_EQ (wrz (d, 1, 8, 8), 0);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 16);
  EXPECT_COUNTERS (d, 1, 1, 1);

  /* Free an active slot: finish of EMPTY activates, and as the open
   * slots are full (zone 1 IMP, zone 2 EXP) closes zone 1 implicitly:
   * the scan starts after the last victim (zone 2) and wraps.
   */
  CHECK_EQ (op1 (d, ZN_OP_RESET, 3), 0);
  EXPECT_COUNTERS (d, 1, 1, 0);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 4), 0);
  EXPECT_ZONE (d, 4, ZN_COND_FULL, Z);
  EXPECT_ZONE (d, 1, ZN_COND_CLOSED, 16);
  EXPECT_ZONE (d, 2, ZN_COND_EXP_OPEN, 16);
  EXPECT_COUNTERS (d, 0, 1, 1);

  CHECK_EQ (op1 (d, ZN_OP_OPEN, 5), 0);
  EXPECT_ZONE (d, 5, ZN_COND_EXP_OPEN, 0);
  EXPECT_COUNTERS (d, 0, 2, 1);

  /* No IMP_OPEN zone left: EOVERFLOW for EMPTY (active is 3),
   * ETOOMANYREFS for CLOSED.
   */
  snap (d, &s);
  CHECK_EQ (wrz (d, 6, 0, 8), -EOVERFLOW);
  CHECK_EQ (wrz (d, 1, 16, 8), -ETOOMANYREFS);
  CHECK (same_state (d, &s));

  /* Closing an EXP_OPEN zone at its start frees both slots. */
  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 5), 0);
  EXPECT_ZONE (d, 5, ZN_COND_EMPTY, 0);
  EXPECT_COUNTERS (d, 0, 1, 1);
  CHECK_EQ (wrz (d, 6, 0, 8), 0);
  EXPECT_COUNTERS (d, 1, 1, 1);
  zn_dev_destroy (d);
}

/* ETOOMANYREFS for an EMPTY target: active has room, open slots are all
 * taken by EXP_OPEN zones, which are never closed implicitly (3.5).
 */
static void
test_limits_exp_open_not_victim (void)
{
  struct zn_dev *d = mk (8, 1, 1, 0, 2, 0);
  struct snapshot s;

  CHECK_EQ (op1 (d, ZN_OP_OPEN, 0), 0);
  CHECK_EQ (wrz (d, 1, 0, 8), 0);
  EXPECT_COUNTERS (d, 1, 1, 0);

  /* The cursor (0) points at the EXP_OPEN zone 0; zone 1 is chosen. */
  CHECK_EQ (wrz (d, 2, 0, 8), 0);
  EXPECT_ZONE (d, 0, ZN_COND_EXP_OPEN, 0);
  EXPECT_ZONE (d, 1, ZN_COND_CLOSED, 8);
  EXPECT_ZONE (d, 2, ZN_COND_IMP_OPEN, 8);
  EXPECT_COUNTERS (d, 1, 1, 1);

  CHECK_EQ (op1 (d, ZN_OP_OPEN, 3), 0);
  EXPECT_ZONE (d, 2, ZN_COND_CLOSED, 8);
  EXPECT_ZONE (d, 3, ZN_COND_EXP_OPEN, 0);
  EXPECT_COUNTERS (d, 0, 2, 2);

  snap (d, &s);
  CHECK_EQ (wrz (d, 4, 0, 8), -ETOOMANYREFS);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 4), -ETOOMANYREFS);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 4), -ETOOMANYREFS);
  CHECK_EQ (wrz (d, 1, 8, 8), -ETOOMANYREFS);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 1), -ETOOMANYREFS);
  /* Finish of CLOSED needs an open slot (zone-rules 5.2). */
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 1), -ETOOMANYREFS);
  CHECK (same_state (d, &s));

  /* Writes to EXP_OPEN zones need nothing. */
  CHECK_EQ (wrz (d, 0, 0, 8), 0);
  EXPECT_ZONE (d, 0, ZN_COND_EXP_OPEN, 8);

  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 3), 0);
  EXPECT_ZONE (d, 3, ZN_COND_EMPTY, 0);
  EXPECT_COUNTERS (d, 0, 1, 2);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 1), 0);
  EXPECT_ZONE (d, 1, ZN_COND_FULL, Z);
  EXPECT_COUNTERS (d, 0, 1, 1);
  zn_dev_destroy (d);
}

/* Finish of a CLOSED zone with open slots full takes a slot by closing an
 * IMP_OPEN zone implicitly.
 */
static void
test_limits_finish_closed_implicit_close (void)
{
  struct zn_dev *d = mk (8, 1, 1, 1, 2, 0);

  CHECK_EQ (wrz (d, 1, 0, 8), 0);
  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 1), 0);
  CHECK_EQ (wrz (d, 2, 0, 8), 0);
  CHECK_EQ (wrz (d, 3, 0, 8), 0);
  EXPECT_COUNTERS (d, 2, 0, 1);

  CHECK_EQ (op1 (d, ZN_OP_FINISH, 1), 0);
  EXPECT_ZONE (d, 1, ZN_COND_FULL, Z);
  EXPECT_ZONE (d, 2, ZN_COND_CLOSED, 8);
  EXPECT_ZONE (d, 3, ZN_COND_IMP_OPEN, 8);
  EXPECT_COUNTERS (d, 1, 0, 1);

  /* Finish of EMPTY can close another zone implicitly too. */
  CHECK_EQ (wrz (d, 4, 0, 8), 0);
  EXPECT_COUNTERS (d, 2, 0, 1);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 5), 0);
  EXPECT_ZONE (d, 5, ZN_COND_FULL, Z);
  EXPECT_ZONE (d, 3, ZN_COND_CLOSED, 8);
  EXPECT_ZONE (d, 4, ZN_COND_IMP_OPEN, 8);
  EXPECT_COUNTERS (d, 1, 0, 2);
  zn_dev_destroy (d);
}

/* zone-rules 3.4: round-robin victim selection from a cursor that only
 * power-on sets.
 */
static void
test_limits_round_robin (void)
{
  struct zn_dev *d = mk (8, 1, 1, 0, 2, 0);

  CHECK_EQ (wrz (d, 0, 0, 8), 0);
  CHECK_EQ (wrz (d, 1, 0, 8), 0);

  CHECK_EQ (wrz (d, 2, 0, 8), 0);               /* victim 0, cursor 1 */
  EXPECT_ZONE (d, 0, ZN_COND_CLOSED, 8);
  EXPECT_COUNTERS (d, 2, 0, 1);

  CHECK_EQ (wrz (d, 0, 8, 8), 0);               /* victim 1, cursor 2 */
  EXPECT_ZONE (d, 0, ZN_COND_IMP_OPEN, 16);
  EXPECT_ZONE (d, 1, ZN_COND_CLOSED, 8);
  EXPECT_COUNTERS (d, 2, 0, 1);

  CHECK_EQ (wrz (d, 3, 0, 8), 0);               /* victim 2, cursor 3 */
  EXPECT_ZONE (d, 2, ZN_COND_CLOSED, 8);
  EXPECT_COUNTERS (d, 2, 0, 2);

  /* Zone 0 is the lowest IMP_OPEN zone, but the cursor is at 3. */
  CHECK_EQ (wrz (d, 4, 0, 8), 0);               /* victim 3, cursor 4 */
  EXPECT_ZONE (d, 0, ZN_COND_IMP_OPEN, 16);
  EXPECT_ZONE (d, 3, ZN_COND_CLOSED, 8);
  EXPECT_ZONE (d, 4, ZN_COND_IMP_OPEN, 8);
  EXPECT_COUNTERS (d, 2, 0, 3);

  /* Reset-all does not move the cursor: with zones 1 and 5 open, the
   * scan from 4 finds zone 5 first.
   */
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_RESET, 0, zn_dev_geometry (d)->capacity),
            0);
  EXPECT_COUNTERS (d, 0, 0, 0);
  CHECK_EQ (wrz (d, 5, 0, 8), 0);
  CHECK_EQ (wrz (d, 1, 0, 8), 0);
  CHECK_EQ (wrz (d, 2, 0, 8), 0);               /* victim 5, cursor 6 */
  EXPECT_ZONE (d, 5, ZN_COND_CLOSED, 8);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 8);
  EXPECT_COUNTERS (d, 2, 0, 1);

  /* Wrap around: 6 and 7 hold no IMP_OPEN zone, so zone 1 is next. */
  CHECK_EQ (wrz (d, 7, 0, 8), 0);               /* victim 1, cursor 2 */
  EXPECT_ZONE (d, 1, ZN_COND_CLOSED, 8);
  EXPECT_ZONE (d, 2, ZN_COND_IMP_OPEN, 8);
  EXPECT_ZONE (d, 7, ZN_COND_IMP_OPEN, 8);
  CHECK_EQ (wrz (d, 6, 0, 8), 0);               /* victim 2, cursor 3 */
  EXPECT_ZONE (d, 2, ZN_COND_CLOSED, 8);
  EXPECT_ZONE (d, 7, ZN_COND_IMP_OPEN, 8);
  EXPECT_COUNTERS (d, 2, 0, 3);

  /* A per-zone reset does not move it either: with zones 0 and 7 open
   * the scan from 3 finds zone 7.
   */
  CHECK_EQ (op1 (d, ZN_OP_RESET, 6), 0);
  EXPECT_COUNTERS (d, 1, 0, 3);
  CHECK_EQ (wrz (d, 0, 0, 8), 0);
  EXPECT_COUNTERS (d, 2, 0, 3);
  CHECK_EQ (wrz (d, 1, 8, 8), 0);               /* victim 7, cursor 0 */
  EXPECT_ZONE (d, 7, ZN_COND_CLOSED, 8);
  EXPECT_ZONE (d, 0, ZN_COND_IMP_OPEN, 8);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 16);
  EXPECT_COUNTERS (d, 2, 0, 3);
  zn_dev_destroy (d);
}

/* zone-rules 3.4: the scan wraps from the last zone back to nr_conv. */
static void
test_limits_cursor_wraps_to_nr_conv (void)
{
  struct zn_dev *d = mk (8, 1, 1, 1, 2, 0);

  CHECK_EQ (wrz (d, 7, 0, 8), 0);
  CHECK_EQ (wrz (d, 6, 0, 8), 0);
  CHECK_EQ (wrz (d, 1, 0, 8), 0);               /* victim 6, cursor 7 */
  EXPECT_ZONE (d, 6, ZN_COND_CLOSED, 8);
  CHECK_EQ (wrz (d, 2, 0, 8), 0);               /* victim 7, cursor 1 */
  EXPECT_ZONE (d, 7, ZN_COND_CLOSED, 8);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 8);
  CHECK_EQ (wrz (d, 3, 0, 8), 0);               /* victim 1, cursor 2 */
  EXPECT_ZONE (d, 1, ZN_COND_CLOSED, 8);
  EXPECT_ZONE (d, 2, ZN_COND_IMP_OPEN, 8);
  EXPECT_ZONE (d, 3, ZN_COND_IMP_OPEN, 8);
  EXPECT_COUNTERS (d, 2, 0, 3);
  CHECK_EQ (zone_at (d, 0).cond, ZN_COND_NOT_WP);
  zn_dev_destroy (d);
}

/* c7: active limit only.  With max_open 0 there is no open check. */
static void
test_limits_active_only (void)
{
  struct zn_dev *d = mk (8, 1, 1, 0, 0, 2);
  struct snapshot s;

  CHECK_EQ (zn_dev_geometry (d)->max_open, 0);
  CHECK_EQ (zn_dev_geometry (d)->max_active, 2);
  CHECK_EQ (wrz (d, 0, 0, 8), 0);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 1), 0);
  snap (d, &s);
  CHECK_EQ (wrz (d, 2, 0, 8), -EOVERFLOW);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 2), -EOVERFLOW);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 2), -EOVERFLOW);
  CHECK (same_state (d, &s));

  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 0), 0);
  EXPECT_COUNTERS (d, 0, 1, 1);
  CHECK_EQ (wrz (d, 2, 0, 8), -EOVERFLOW);
  CHECK_EQ (wrz (d, 0, 8, 8), 0);               /* CLOSED: no limit hit */
  EXPECT_COUNTERS (d, 1, 1, 0);

  /* A zone filled by writes releases its active slot. */
  CHECK_EQ (wrz (d, 0, 16, Z - 16), 0);
  EXPECT_ZONE (d, 0, ZN_COND_FULL, Z);
  EXPECT_COUNTERS (d, 0, 1, 0);
  CHECK_EQ (wrz (d, 2, 0, 8), 0);
  EXPECT_COUNTERS (d, 1, 1, 0);
  zn_dev_destroy (d);
}

/* c6: open limit only (3). */
static void
test_limits_open_only (void)
{
  struct zn_dev *d = mk (8, 1, 1, 0, 3, 0);
  uint32_t i;

  for (i = 0; i < 3; i++)
    CHECK_EQ (wrz (d, i, 0, 8), 0);
  EXPECT_COUNTERS (d, 3, 0, 0);
  /* Each new zone closes one, round-robin; the active count grows freely. */
  for (i = 3; i < 8; i++) {
    CHECK_EQ (wrz (d, i, 0, 8), 0);
    EXPECT_ZONE (d, i - 3, ZN_COND_CLOSED, 8);
  }
  EXPECT_COUNTERS (d, 3, 0, 5);
  zn_dev_destroy (d);
}

/* ------------------------------------------------------------------ */
/* Zone management ranges (zone-rules 5.1) */

static void
test_zone_mgmt_range_errors (void)
{
  struct zn_dev *d = mk (8, 1, 0, 1, 0, 0);
  uint64_t cap = zn_dev_geometry (d)->capacity;
  enum zn_zone_op ops[] = { ZN_OP_OPEN, ZN_OP_CLOSE, ZN_OP_FINISH,
                            ZN_OP_RESET };
  struct snapshot s;
  unsigned i;

  CHECK_EQ (wrz (d, 2, 0, 8), 0);
  snap (d, &s);
  for (i = 0; i < 4; i++) {
    CHECK_EQ (zn_zone_mgmt (d, ops[i], Z, 0), -EINVAL);
    CHECK_EQ (zn_zone_mgmt (d, ops[i], Z + 8, Z), -EINVAL);
    CHECK_EQ (zn_zone_mgmt (d, ops[i], 2 * Z + 8, Z), -EINVAL);
    CHECK_EQ (zn_zone_mgmt (d, ops[i], Z, Z / 2), -EINVAL);
    CHECK_EQ (zn_zone_mgmt (d, ops[i], 2 * Z, Z + Z / 2), -EINVAL);
    CHECK_EQ (zn_zone_mgmt (d, ops[i], cap, Z), -EINVAL);
    CHECK_EQ (zn_zone_mgmt (d, ops[i], cap - Z, 2 * Z), -EINVAL);
    CHECK_EQ (zn_zone_mgmt (d, ops[i], 0, cap + Z), -EINVAL);
    CHECK_EQ (zn_zone_mgmt (d, ops[i], 8, cap - 8), -EINVAL);
  }
  CHECK (same_state (d, &s));
  zn_dev_destroy (d);
}

/* A range ending at the end of a runt zone needs no zone multiple. */
static void
test_zone_mgmt_runt_range (void)
{
  struct zn_dev *d = mk_nomem (1000, 256, 256, 1, 0, 0);
  const uint64_t zs = 524288, runt_start = 1572864, runt_len = 475136;

  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_OPEN, runt_start, runt_len), 0);
  EXPECT_ZONE (d, 3, ZN_COND_EXP_OPEN, 0);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_OPEN, runt_start, zs), -EINVAL);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_OPEN, runt_start, runt_len - 8),
            -EINVAL);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_FINISH, 2 * zs, zs + runt_len), 0);
  EXPECT_ZONE (d, 2, ZN_COND_FULL, zs);
  EXPECT_ZONE (d, 3, ZN_COND_FULL, runt_len);
  EXPECT_COUNTERS (d, 0, 0, 0);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_RESET, runt_start, runt_len), 0);
  EXPECT_ZONE (d, 3, ZN_COND_EMPTY, 0);
  EXPECT_ZONE (d, 2, ZN_COND_FULL, zs);
  zn_dev_destroy (d);
}

/* Multi-zone ranges: every zone is attempted, no rollback, and the errno
 * is that of the highest failing zone.
 */
static void
test_zone_mgmt_multi (void)
{
  struct zn_dev *d = mk (8, 1, 0, 1, 0, 0);

  CHECK_EQ (wrz (d, 1, 0, 8), 0);
  CHECK_EQ (wrz (d, 3, 0, 8), 0);
  CHECK_EQ (opn (d, ZN_OP_CLOSE, 1, 3), -EIO);  /* zone 2 is EMPTY */
  EXPECT_ZONE (d, 1, ZN_COND_CLOSED, 8);
  EXPECT_ZONE (d, 2, ZN_COND_EMPTY, 0);
  EXPECT_ZONE (d, 3, ZN_COND_CLOSED, 8);
  EXPECT_COUNTERS (d, 0, 0, 2);

  CHECK_EQ (opn (d, ZN_OP_OPEN, 1, 3), 0);
  EXPECT_ZONE (d, 1, ZN_COND_EXP_OPEN, 8);
  EXPECT_ZONE (d, 2, ZN_COND_EXP_OPEN, 0);
  EXPECT_ZONE (d, 3, ZN_COND_EXP_OPEN, 8);
  EXPECT_COUNTERS (d, 0, 3, 0);

  CHECK_EQ (opn (d, ZN_OP_FINISH, 2, 3), 0);
  EXPECT_ZONE (d, 4, ZN_COND_FULL, Z);
  EXPECT_COUNTERS (d, 0, 1, 0);

  /* The conventional zone 0 fails; zone 1 is still handled. */
  CHECK_EQ (opn (d, ZN_OP_CLOSE, 0, 2), -EIO);
  EXPECT_ZONE (d, 1, ZN_COND_CLOSED, 8);
  CHECK_EQ (opn (d, ZN_OP_RESET, 0, 7), -EIO);   /* not the whole device */
  for (uint32_t i = 1; i < 8; i++)
    EXPECT_ZONE (d, i, ZN_COND_EMPTY, 0);
  EXPECT_COUNTERS (d, 0, 0, 0);
  zn_dev_destroy (d);

  /* Two different errnos: the higher zone's wins, in both orders. */
  d = mk_c4 ();
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 5), 0);
  CHECK_EQ (wrz (d, 1, 0, 8), 0);
  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 1), 0);
  CHECK_EQ (wrz (d, 2, 0, 8), 0);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 3), 0);
  EXPECT_COUNTERS (d, 1, 1, 1);
  CHECK_EQ (opn (d, ZN_OP_OPEN, 4, 2), -EIO);         /* EOVERFLOW, EIO */
  CHECK_EQ (opn (d, ZN_OP_OPEN, 5, 2), -EOVERFLOW);   /* EIO, EOVERFLOW */
  CHECK_EQ (opn (d, ZN_OP_OPEN, 6, 2), -EOVERFLOW);
  CHECK_EQ (opn (d, ZN_OP_CLOSE, 5, 2), -EIO);        /* FULL, EMPTY */
  CHECK_EQ (opn (d, ZN_OP_OPEN, 1, 2), -ETOOMANYREFS);/* ETOOMANYREFS, 0 */
  EXPECT_ZONE (d, 1, ZN_COND_CLOSED, 8);
  EXPECT_ZONE (d, 2, ZN_COND_EXP_OPEN, 8);
  EXPECT_COUNTERS (d, 0, 2, 1);
  zn_dev_destroy (d);
}

static void
test_reset_all (void)
{
  struct zn_dev *d = mk (8, 1, 0, 1, 0, 0);
  uint64_t cap = zn_dev_geometry (d)->capacity;

  CHECK_EQ (wrz (d, 0, 0, 16), 0);              /* conventional data */
  CHECK_EQ (wrz (d, 1, 0, 8), 0);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 2), 0);
  CHECK_EQ (wrz (d, 3, 0, 8), 0);
  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 3), 0);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 4), 0);
  CHECK_EQ (wrz (d, 5, 0, 8), 0);
  CHECK_EQ (zn_zone_set_readonly (d, zstart (d, 5)), 0);
  CHECK_EQ (zn_zone_set_offline (d, zstart (d, 6)), 0);

  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_RESET, 0, cap), 0);
  for (uint32_t i = 1; i <= 4; i++)
    EXPECT_ZONE (d, i, ZN_COND_EMPTY, 0);
  EXPECT_ZONE_NO_WP (d, 5, ZN_COND_READONLY);
  EXPECT_ZONE_NO_WP (d, 6, ZN_COND_OFFLINE);
  EXPECT_ZONE (d, 7, ZN_COND_EMPTY, 0);
  EXPECT_COUNTERS (d, 0, 0, 0);
  CHECK_EQ (zone_at (d, 0).cond, ZN_COND_NOT_WP);
  CHECK (reads_pattern (d, 0, 16, 0));
  CHECK (reads_fill (d, zstart (d, 1), 8, 0xFF));
  CHECK (reads_fill (d, zstart (d, 4), 8, 0xFF));

  /* A range over just the sequential zones is an ordinary multi-zone
   * reset: it fails on READONLY/OFFLINE but resets the others.
   */
  CHECK_EQ (wrz (d, 1, 0, 8), 0);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_RESET, Z, cap - Z), -EIO);
  EXPECT_ZONE (d, 1, ZN_COND_EMPTY, 0);
  EXPECT_COUNTERS (d, 0, 0, 0);

  /* Reset-all of an idle device is fine too. */
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_RESET, 0, cap), 0);
  zn_dev_destroy (d);
}

/* ------------------------------------------------------------------ */
/* READONLY / OFFLINE injection (zone-rules 6) */

static void
test_inject_basic (void)
{
  struct zn_dev *d = mk (8, 1, 0, 1, 0, 0);
  uint64_t cap = zn_dev_geometry (d)->capacity;
  enum zn_zone_op ops[] = { ZN_OP_OPEN, ZN_OP_CLOSE, ZN_OP_FINISH,
                            ZN_OP_RESET };
  unsigned char buf[4096];
  unsigned i;

  CHECK_EQ (zn_zone_set_readonly (d, 0), -EINVAL);       /* conventional */
  CHECK_EQ (zn_zone_set_offline (d, Z - 1), -EINVAL);
  CHECK_EQ (zn_zone_set_readonly (d, cap), -EINVAL);     /* out of range */
  CHECK_EQ (zn_zone_set_offline (d, cap + Z), -EINVAL);

  /* READONLY: the sector need not be the zone start. */
  CHECK_EQ (wrz (d, 1, 0, 8), 0);
  EXPECT_COUNTERS (d, 1, 0, 0);
  CHECK_EQ (zn_zone_set_readonly (d, zstart (d, 1) + 100), 0);
  EXPECT_ZONE_NO_WP (d, 1, ZN_COND_READONLY);
  EXPECT_COUNTERS (d, 0, 0, 0);                 /* finished first */
  /* Reads succeed: data below the old wp, zeros after (zone-rules 8.1). */
  CHECK (reads_pattern (d, zstart (d, 1), 8, 0));
  CHECK (reads_fill (d, zstart (d, 1) + 8, 24, 0x00));
  CHECK_EQ (wrz (d, 1, 8, 8), -EIO);
  CHECK_EQ (wrz (d, 1, 0, 8), -EIO);
  for (i = 0; i < 4; i++)
    CHECK_EQ (op1 (d, ops[i], 1), -EIO);
  EXPECT_ZONE_NO_WP (d, 1, ZN_COND_READONLY);

  /* READONLY -> OFFLINE directly; OFFLINE reads fail. */
  CHECK_EQ (zn_zone_set_offline (d, zstart (d, 1)), 0);
  EXPECT_ZONE_NO_WP (d, 1, ZN_COND_OFFLINE);
  CHECK_EQ (zn_read (d, buf, zstart (d, 1), 8), -EIO);
  CHECK_EQ (zn_read (d, buf, zstart (d, 1) + Z - 8, 8), -EIO);
  CHECK_EQ (wrz (d, 1, 0, 8), -EIO);
  for (i = 0; i < 4; i++)
    CHECK_EQ (op1 (d, ops[i], 1), -EIO);
  /* A read crossing into the OFFLINE zone fails. */
  CHECK_EQ (zn_read (d, buf, zstart (d, 1) - 4, 8), -EIO);
  EXPECT_COUNTERS (d, 0, 0, 0);

  /* OFFLINE -> READONLY directly. */
  CHECK_EQ (zn_zone_set_readonly (d, zstart (d, 1)), 0);
  EXPECT_ZONE_NO_WP (d, 1, ZN_COND_READONLY);
  CHECK (reads_pattern (d, zstart (d, 1), 8, 0));

  /* Toggling the same cond again: EMPTY, data discarded. */
  CHECK_EQ (zn_zone_set_readonly (d, zstart (d, 1)), 0);
  EXPECT_ZONE (d, 1, ZN_COND_EMPTY, 0);
  CHECK (reads_fill (d, zstart (d, 1), 16, 0xFF));
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 1), 0);
  CHECK (reads_fill (d, zstart (d, 1), 16, 0x00));
  CHECK_EQ (op1 (d, ZN_OP_RESET, 1), 0);
  CHECK_EQ (wrz (d, 1, 0, 8), 0);
  EXPECT_ZONE (d, 1, ZN_COND_IMP_OPEN, 8);

  /* OFFLINE on/off from scratch, on a CLOSED zone. */
  CHECK_EQ (wrz (d, 2, 0, 8), 0);
  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 2), 0);
  EXPECT_COUNTERS (d, 1, 0, 1);
  CHECK_EQ (zn_zone_set_offline (d, zstart (d, 2)), 0);
  EXPECT_ZONE_NO_WP (d, 2, ZN_COND_OFFLINE);
  EXPECT_COUNTERS (d, 1, 0, 0);
  CHECK_EQ (zn_zone_set_offline (d, zstart (d, 2)), 0);
  EXPECT_ZONE (d, 2, ZN_COND_EMPTY, 0);
  CHECK (reads_fill (d, zstart (d, 2), 8, 0xFF));

  /* EXP_OPEN, EMPTY and FULL zones too. */
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 3), 0);
  CHECK_EQ (zn_zone_set_readonly (d, zstart (d, 3)), 0);
  CHECK_EQ (zn_zone_set_readonly (d, zstart (d, 4)), 0);
  CHECK_EQ (op1 (d, ZN_OP_FINISH, 5), 0);
  CHECK_EQ (zn_zone_set_offline (d, zstart (d, 5)), 0);
  EXPECT_ZONE_NO_WP (d, 3, ZN_COND_READONLY);
  EXPECT_ZONE_NO_WP (d, 4, ZN_COND_READONLY);
  EXPECT_ZONE_NO_WP (d, 5, ZN_COND_OFFLINE);
  EXPECT_COUNTERS (d, 1, 0, 0);
  zn_dev_destroy (d);
}

/* zone-rules 6.3: the finish done before READONLY/OFFLINE ignores its
 * result.
 */
static void
test_inject_finish_side_effects (void)
{
  struct zn_dev *d = mk_c4 ();

  /* CLOSED zone, open slots full with EXP_OPEN zones: the finish fails,
   * so the zone's closed count leaks.
   */
  CHECK_EQ (wrz (d, 1, 0, 8), 0);
  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 1), 0);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 2), 0);
  CHECK_EQ (op1 (d, ZN_OP_OPEN, 3), 0);
  EXPECT_COUNTERS (d, 0, 2, 1);
  CHECK_EQ (zn_zone_set_readonly (d, zstart (d, 1)), 0);
  EXPECT_ZONE_NO_WP (d, 1, ZN_COND_READONLY);
  EXPECT_COUNTERS (d, 0, 2, 1);
  /* The leaked count still uses an active slot. */
  CHECK_EQ (wrz (d, 4, 0, 8), -EOVERFLOW);
  /* Toggling back to EMPTY does not touch the counters either. */
  CHECK_EQ (zn_zone_set_readonly (d, zstart (d, 1)), 0);
  EXPECT_ZONE (d, 1, ZN_COND_EMPTY, 0);
  EXPECT_COUNTERS (d, 0, 2, 1);
  zn_dev_destroy (d);

  /* CLOSED zone, open slots full, one IMP_OPEN: the finish closes it
   * implicitly before the zone goes OFFLINE.
   */
  d = mk (8, 1, 1, 1, 2, 0);
  CHECK_EQ (wrz (d, 1, 0, 8), 0);
  CHECK_EQ (wrz (d, 2, 0, 8), 0);
  CHECK_EQ (op1 (d, ZN_OP_CLOSE, 1), 0);
  CHECK_EQ (wrz (d, 3, 0, 8), 0);
  EXPECT_COUNTERS (d, 2, 0, 1);
  CHECK_EQ (zn_zone_set_offline (d, zstart (d, 1)), 0);
  EXPECT_ZONE_NO_WP (d, 1, ZN_COND_OFFLINE);
  EXPECT_ZONE (d, 2, ZN_COND_CLOSED, 8);
  EXPECT_ZONE (d, 3, ZN_COND_IMP_OPEN, 8);
  EXPECT_COUNTERS (d, 1, 0, 1);
  zn_dev_destroy (d);
}

int
main (void)
{
  test_from_empty ();
  test_from_imp_open ();
  test_from_exp_open ();
  test_from_closed ();
  test_from_full ();
  test_conventional ();
  test_write_wp_rules ();
  test_limits_open_and_active ();
  test_limits_exp_open_not_victim ();
  test_limits_finish_closed_implicit_close ();
  test_limits_round_robin ();
  test_limits_cursor_wraps_to_nr_conv ();
  test_limits_active_only ();
  test_limits_open_only ();
  test_zone_mgmt_range_errors ();
  test_zone_mgmt_runt_range ();
  test_zone_mgmt_multi ();
  test_reset_all ();
  test_inject_basic ();
  test_inject_finish_side_effects ();

  printf ("test-model-zones: all tests passed\n");
  return EXIT_SUCCESS;
}
