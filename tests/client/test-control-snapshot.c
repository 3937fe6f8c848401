/* SPDX-License-Identifier: BSD-3-Clause */
/* One read of the control export is one snapshot (issue 15): while
 * another connection opens, writes, closes, finishes and resets zones as
 * fast as it can, every read of the header and all zone descriptors must
 * agree with itself: the header's open and closed counts are the
 * descriptors' counts.  The plugin rendered the header and then the
 * zones, each zone under its own lock, so a transition between the two
 * showed.  Both front ends; only outcomes are checked, never speed.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <libnbd.h>

#include "../common/check.h"
#include "wire/control-wire.h"
#include "../common/server-fixture.h"
#include "zonednull/client.h"

#define NR_ZONES 32
#define ZONE_SECTORS 2048          /* zone_size=1 */
#define READS 50000

static atomic_bool stop;

struct hammer {
  const struct spawned *s;
  unsigned seed;
};

/* Zone operations and writes on random zones; the limits make writes
 * close other zones implicitly.  Refusals (limits, a write off the write
 * pointer) are expected and ignored: only the transitions matter.
 */
static void *
hammer (void *arg)
{
  struct hammer *h = arg;
  char uri[600];
  struct zn_client *c;
  struct nbd_handle *data;
  static const unsigned char block[4096];

  server_uri (uri, sizeof uri, h->s, "");
  c = connect_ok (uri);
  data = nbd_connect_ok (h->s, "");
  while (!atomic_load (&stop)) {
    uint64_t zone = 1 + (unsigned) rand_r (&h->seed) % (NR_ZONES - 1);
    uint64_t sector = zone * ZONE_SECTORS;

    switch (rand_r (&h->seed) % 6) {
    case 0:
      zn_client_zone_mgmt (c, ZN_OP_RESET, sector, ZONE_SECTORS);
      break;
    case 1:
      zn_client_zone_mgmt (c, ZN_OP_OPEN, sector, ZONE_SECTORS);
      break;
    case 2:
      zn_client_zone_mgmt (c, ZN_OP_CLOSE, sector, ZONE_SECTORS);
      break;
    case 3:
      zn_client_zone_mgmt (c, ZN_OP_FINISH, sector, ZONE_SECTORS);
      break;
    default:                    /* at the start of a reset zone */
      nbd_pwrite (data, block, sizeof block, sector * 512, 0);
      break;
    }
  }
  nbd_close (data);
  zn_client_close (c);
  return NULL;
}

static void
check_reads (const struct spawned *s)
{
  static unsigned char buf[ZN_CONTROL_HEADER_SIZE
                           + NR_ZONES * ZN_CONTROL_ZONE_SIZE];
  char name[64];
  struct nbd_handle *ctl;
  struct hammer h[2] = { { s, 15 }, { s, 16 } };
  pthread_t t[2];
  unsigned busy = 0;

  snprintf (name, sizeof name, "nullb0%s", ZN_CONTROL_SUFFIX);
  ctl = nbd_connect_ok (s, name);
  atomic_store (&stop, false);
  for (int i = 0; i < 2; i++)
    CHECK_EQ (pthread_create (&t[i], NULL, hammer, &h[i]), 0);
  for (int r = 0; r < READS; r++) {
    struct zn_control_info info;
    unsigned imp = 0, exp = 0, closed = 0;

    if (nbd_pread (ctl, buf, sizeof buf, 0, 0) == -1) {
      fprintf (stderr, "%s: control read: %s\n", fixture_target,
               nbd_get_error ());
      exit (EXIT_FAILURE);
    }
    CHECK_EQ (zn_control_decode_header (buf, &info), 0);
    CHECK_EQ (info.nr_zones, NR_ZONES);
    for (unsigned i = 0; i < NR_ZONES; i++) {
      struct zn_zone z;

      zn_control_decode_zone (buf + ZN_CONTROL_HEADER_SIZE
                              + i * ZN_CONTROL_ZONE_SIZE, &z);
      imp += z.cond == ZN_COND_IMP_OPEN;
      exp += z.cond == ZN_COND_EXP_OPEN;
      closed += z.cond == ZN_COND_CLOSED;
    }
    if (imp != info.imp_open || exp != info.exp_open
        || closed != info.closed) {
      fprintf (stderr, "%s: read %d of the control export disagrees with "
               "itself: header imp_open %u exp_open %u closed %u, "
               "descriptors %u %u %u\n", fixture_target, r, info.imp_open,
               info.exp_open, info.closed, imp, exp, closed);
      exit (EXIT_FAILURE);
    }
    busy += imp + exp + closed > 0;
  }
  atomic_store (&stop, true);
  for (int i = 0; i < 2; i++)
    pthread_join (t[i], NULL);
  nbd_close (ctl);
  /* The hammer did keep zones open and closed while reading. */
  CHECK (busy > READS / 2);
}

int
main (void)
{
  static const char *const args[] = {
    "size=32", "zone_size=1", "zone_nr_conv=1", "zone_max_open=3",
    "zone_max_active=5", NULL,
  };
  static const char *const threads[] = { "-t", "8", NULL };
  struct spawned s;

  fixture_init ("test-control-snapshot", "snap", true);
  for (int native = 0; native < 2; native++) {
    fixture_use (native);
    server_start (&s, "snap", args,
                  &(struct server_opts) { .nbdkit = threads });
    check_reads (&s);
    server_stop (&s);
  }
  printf ("test-control-snapshot: all checks passed\n");
  return 0;
}
