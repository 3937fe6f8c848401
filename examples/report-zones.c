/* SPDX-License-Identifier: BSD-3-Clause */
/* report-zones: prints the zones of a zonednull device, a small
 * "zonednull report" on libzonednull-client.
 *
 *   cc -o report-zones report-zones.c \
 *       $(pkg-config --cflags --libs zonednull-client)
 *   ./report-zones nbd://server/
 *   ./report-zones 'nbd+unix:///?socket=/tmp/zn.sock'
 *
 * Every number is in 512-byte sectors, as in the kernel's zone report.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <zonednull/client.h>

/* Prints the library's view of a failed call and exits. */
static void
die (struct zn_client *c, const char *what, int r)
{
  fprintf (stderr, "report-zones: %s: %s: %s\n",
           what, zn_errno_name (-r), zn_client_error (c));
  zn_client_close (c);
  exit (EXIT_FAILURE);
}

int
main (int argc, char *argv[])
{
  if (argc != 2) {
    fprintf (stderr, "usage: %s URI\n", argv[0]);
    exit (EXIT_FAILURE);
  }

  char err[256];
  struct zn_client *c = zn_client_connect (argv[1], err, sizeof err);
  if (c == NULL) {
    fprintf (stderr, "report-zones: %s: %s\n", argv[1], err);
    exit (EXIT_FAILURE);
  }

  struct zn_control_info info;
  int r = zn_client_info (c, &info);
  if (r < 0)
    die (c, "info", r);
  printf ("%" PRIu32 " zones of %" PRIu64 " sectors (capacity %" PRIu64
          "), %" PRIu32 " conventional, block size %" PRIu32 "\n",
          info.nr_zones, info.zone_sectors, info.zone_capacity,
          info.nr_conv, info.block_size);

  /* A report returns at most as many zones as asked for: ask again from
   * the end of the last one until the device ends.
   */
  struct zn_zone zones[64];
  uint64_t sector = 0;
  for (;;) {
    r = zn_client_report (c, sector, zones, sizeof zones / sizeof zones[0]);
    if (r < 0)
      die (c, "report", r);
    if (r == 0)
      break;
    for (int i = 0; i < r; i++) {
      const struct zn_zone *z = &zones[i];
      printf ("start %" PRIu64 " len %" PRIu64 " cap %" PRIu64,
              z->start, z->len, z->capacity);
      /* Conventional, read-only and offline zones have no write pointer. */
      if (z->type == ZN_ZONE_SEQWRITE_REQ && z->cond != ZN_COND_READONLY
          && z->cond != ZN_COND_OFFLINE)
        printf (" wp %" PRIu64, z->wp);
      else
        printf (" wp -");
      printf (" %s %s\n",
              z->type == ZN_ZONE_CONVENTIONAL ? "CONVENTIONAL" : "SEQ_WRITE_REQUIRED",
              zn_cond_name (z->cond));
    }
    sector = zones[r - 1].start + zones[r - 1].len;
  }

  zn_client_close (c);
  exit (EXIT_SUCCESS);
}
