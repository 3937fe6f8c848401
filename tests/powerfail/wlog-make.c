/* SPDX-License-Identifier: BSD-3-Clause */
/* wlog-make PATH SEED [N [BS]]: a write log of N (default 100) random
 * requests (tests/common/wlog-gen.c), for the shell tests.
 * wlog-make PATH finish-wp ZONE_MIB: a log of a few kilobytes whose
 * replay would rewrite a whole zone: FINISH, POWER, and a WP 8 sectors
 * below the zone's end.
 * wlog-make PATH zones N: a log of a device of N 1 MiB zones, one mark.
 * wlog-make PATH flushes N: a log of N flushes in 512-byte blocks, the
 * most entries a file of its size can hold.
 */
#include "powerfail.h"

int
main (int argc, char **argv)
{
  struct wg g;

  if (argc < 3) {
    fprintf (stderr, "usage: wlog-make PATH SEED [N [BS]] | PATH finish-wp "
             "ZONE_MIB | PATH zones N | PATH flushes N\n");
    return 2;
  }
  if (strcmp (argv[2], "finish-wp") == 0 && argc == 4) {
    unsigned zone_mib = (unsigned) atoi (argv[3]);
    uint64_t zone_end = 2 * ((uint64_t) zone_mib << 11);

    wg_open (&g, argv[1], 4096, 2 * zone_mib, zone_mib, zone_mib, 0, NULL);
    wg_zone_op (&g, ZN_WLOG_FINISH, 1);
    wg_raw (&g, ZN_WLOG_POWER, 0, 0, 0, 0, 0, NULL);
    wg_raw (&g, ZN_WLOG_DISCARD | ZN_WLOG_WP, zone_end - 8, 8, 0, 0, 0, NULL);
  }
  else if (strcmp (argv[2], "zones") == 0 && argc == 4) {
    unsigned n = (unsigned) atoi (argv[3]);

    wg_open (&g, argv[1], 4096, n, 1, 1, 0, NULL);
  }
  else if (strcmp (argv[2], "flushes") == 0 && argc == 4) {
    unsigned n = (unsigned) atoi (argv[3]);

    wg_open (&g, argv[1], 512, 8, 1, 1, 2, NULL);
    for (unsigned i = 0; i < n; i++)
      wg_raw (&g, ZN_WLOG_FLUSH, 0, 0, 0, 0, i + 1, NULL);
  }
  else {
    wg_open (&g, argv[1], argc > 4 ? (uint32_t) atoi (argv[4]) : 4096, 8, 1,
             1, 2, NULL);
    wg_workload (&g, strtoull (argv[2], NULL, 10),
                 argc > 3 ? (unsigned) atoi (argv[3]) : 100);
  }
  wg_mark (&g, "end");
  wg_close (&g);
  wg_free (&g);
  return 0;
}
