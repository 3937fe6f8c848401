/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: arbitrary bytes from a client into one session.
 *
 * The input is cut into pieces at points chosen by its own bytes, so
 * requests split across reads are exercised as the event loop sees them.
 * Invariants checked: the session consumes no more than it was given,
 * keeps its output under the limit plus one reply, each reply within the
 * bound it asked room for, and the device's zone table stays consistent
 * (every write pointer inside its zone).
 *
 * The input's length chooses --tls (off, on, require).  An acknowledged
 * STARTTLS is taken as a handshake that succeeded, the rest of the input
 * as what came through it.  Under require, before that, no export may be
 * entered and no export name sent.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/control.h"
#include "model/zoned.h"
#include "session.h"
#include "fuzz-finish.h"

/* Two devices, so that export names are exercised. */
static struct served_device devices[2];
static struct served served = {
  .program = "fuzz-session", .devices = devices, .nr_devices = 2,
};

/* Tags this piece may hand out: data requests beyond them wait.  Every
 * third write is parked, and parked writes are resumed a piece later.
 */
static unsigned tags_left, writes_seen;
static uint64_t parked_ids[64];
static unsigned nr_parked;

static struct admission
admit (void *owner, void *s, const struct data_request *rq)
{
  (void) owner;
  (void) s;
  if (tags_left == 0)
    return (struct admission) { ADMIT_LATER, 0 };
  tags_left--;
  if (rq->write && ++writes_seen % 3 == 0 && nr_parked < 64) {
    parked_ids[nr_parked++] = rq->id;
    return (struct admission) { ADMIT_PARK, 0 };
  }
  return (struct admission) { ADMIT_NOW, 0 };
}

/* The output budget of this piece, as the server's served.room applies
 * it: a request whose reply would pass it waits unless nothing is
 * queued.  approved_end is what the output may reach with the request
 * last given room (0: none since nbd_session_input began).
 */
static size_t budget, approved_end;

static bool
room (void *owner, size_t queued, size_t reply)
{
  (void) owner;
  if (approved_end && queued > approved_end)
    abort ();                   /* a reply larger than its bound */
  if (queued > 0 && queued + reply > budget) {
    approved_end = 0;
    return false;
  }
  approved_end = queued + reply;
  return true;
}

static void
setup (void)
{
  struct zn_config cfg;
  char err[256] = "";

  zn_config_init (&cfg);
  cfg.size = 8;
  cfg.zone_size = 1;
  cfg.zone_capacity = 1;
  cfg.zone_nr_conv = 1;
  cfg.zone_max_open = 2;
  cfg.zone_max_active = 3;
  cfg.memory_backed = true;
  for (unsigned i = 0; i < 2; i++) {
    snprintf (devices[i].name, sizeof devices[i].name, "nullb%u", i);
    snprintf (devices[i].control_name, sizeof devices[i].control_name,
              "nullb%u" ZN_CONTROL_SUFFIX, i);
    devices[i].dev = zn_dev_create (&cfg, err, sizeof err);
    devices[i].ctl = devices[i].dev ? zn_control_create (devices[i].dev) : NULL;
    if (devices[i].ctl == NULL) {
      fprintf (stderr, "fuzz-session: %s\n", err);
      abort ();
    }
  }
  served.admit = admit;
  served.finish = fuzz_finish;
  served.room = room;
}

static void
check_zones (struct zn_dev *dev)
{
  struct zn_zone zones[8];
  unsigned n = zn_report_zones (dev, 0, zones, 8);

  for (unsigned i = 0; i < n; i++)
    if (zones[i].type != ZN_ZONE_CONVENTIONAL && zones[i].wp != UINT64_MAX
        && (zones[i].wp < zones[i].start
            || zones[i].wp > zones[i].start + zones[i].len))
      abort ();
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  struct nbd_session *s;
  unsigned char *pending = NULL;
  size_t pending_len = 0, pos = 0;
  bool upgraded = false, control;

  if (devices[0].dev == NULL)
    setup ();
  served.tls = (enum tls_mode) (size % 3);
  s = nbd_session_new (&served, NULL);
  if (s == NULL)
    return 0;

  while (pos < size) {
    /* The first byte of each piece chooses its length. */
    size_t piece = 1 + data[pos] * 4u;
    unsigned char *p;
    long used;

    if (piece > size - pos)
      piece = size - pos;
    p = realloc (pending, pending_len + piece);
    if (p == NULL)
      break;
    pending = p;
    memcpy (pending + pending_len, data + pos, piece);
    pending_len += piece;
    pos += piece;

    /* Replies are held as with irqmode=2, and completed a piece later. */
    tags_left = data[pos - piece] % 8;
    budget = (size_t) (data[pos - piece] >> 3) * 4096;
    approved_end = 0;
    used = nbd_session_input (s, pending, pending_len);
    if (used < 0) {
      /* As the server does after NBD_CMD_DISC: what was admitted is
       * still answered.
       */
      for (unsigned i = 0; i < nr_parked; i++)
        nbd_session_resume (s, parked_ids[i], i % 2 ? -EIO : 0);
      nr_parked = 0;
      while (nbd_session_complete_one (s))
        ;
      for (unsigned i = 0; i < fuzz_nr_delayed; i++)
        nbd_session_release (s, fuzz_delayed_ids[i]);
      fuzz_nr_delayed = 0;
      nbd_session_sent (s, nbd_session_ready (s));
      if (nbd_session_output (s)->len != 0)
        abort ();               /* a reply left behind */
      break;
    }
    if ((size_t) used > pending_len
        || nbd_session_output (s)->len > NBD_SESSION_OUTPUT_LIMIT + (33u << 20)
        || (approved_end && nbd_session_output (s)->len > approved_end))
      abort ();
    memmove (pending, pending + used, pending_len - (size_t) used);
    pending_len -= (size_t) used;
    if (served.tls == TLS_REQUIRE && !upgraded
        && (nbd_session_device (s, &control) != NULL
            || memmem (nbd_session_output (s)->data,
                       nbd_session_output (s)->len, "nullb", 5) != NULL))
      abort ();
    if (nbd_session_starttls (s)) {
      if (served.tls == TLS_OFF)
        abort ();
      nbd_session_tls_started (s);
      upgraded = true;
    }
    /* Parked writes go on, the odd ones failed. */
    for (unsigned i = 0; i < nr_parked; i++)
      nbd_session_resume (s, parked_ids[i], i % 2 ? -EIO : 0);
    nr_parked = 0;
    /* Output is drained as a client would read it. */
    while (nbd_session_complete_one (s))
      ;
    for (unsigned i = 0; i < fuzz_nr_delayed; i++)
      nbd_session_release (s, fuzz_delayed_ids[i]);
    fuzz_nr_delayed = 0;
    nbd_session_sent (s, nbd_session_ready (s));
  }
  nr_parked = 0;               /* the next input's session numbers anew */
  fuzz_nr_delayed = 0;
  check_zones (devices[0].dev);
  check_zones (devices[1].dev);
  free (pending);
  nbd_session_free (s);
  return 0;
}
