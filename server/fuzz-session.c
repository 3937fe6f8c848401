/* libFuzzer target: arbitrary bytes from a client into one session.
 *
 * The input is cut into pieces at points chosen by its own bytes, so
 * requests split across reads are exercised as the event loop sees them.
 * Invariants checked: the session consumes no more than it was given,
 * keeps its output under the limit plus one reply, and the device's zone
 * table stays consistent (every write pointer inside its zone).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zonednull/control.h"
#include "zonednull/zoned.h"
#include "session.h"

static struct served_device served;

static void
setup (void)
{
  struct zn_config cfg;
  char err[256];

  zn_config_init (&cfg);
  cfg.size = 8;
  cfg.zone_size = 1;
  cfg.zone_capacity = 1;
  cfg.zone_nr_conv = 1;
  cfg.zone_max_open = 2;
  cfg.zone_max_active = 3;
  cfg.memory_backed = true;
  served.dev = zn_dev_create (&cfg, err, sizeof err);
  served.ctl = served.dev ? zn_control_create (served.dev) : NULL;
  if (served.ctl == NULL) {
    fprintf (stderr, "fuzz-session: %s\n", err);
    abort ();
  }
}

static void
check_zones (void)
{
  struct zn_zone zones[8];
  unsigned n = zn_report_zones (served.dev, 0, zones, 8);

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
  struct session *s;
  unsigned char *pending = NULL;
  size_t pending_len = 0, pos = 0;

  if (served.dev == NULL)
    setup ();
  s = session_new (&served);
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

    used = session_input (s, pending, pending_len);
    if (used < 0)
      break;
    if ((size_t) used > pending_len
        || session_output (s)->len > SESSION_OUTPUT_LIMIT + (33u << 20))
      abort ();
    memmove (pending, pending + used, pending_len - (size_t) used);
    pending_len -= (size_t) used;
    /* Output is drained as a client would read it. */
    outbuf_consume (session_output (s), session_output (s)->len);
  }
  check_zones ();
  free (pending);
  session_free (s);
  return 0;
}
