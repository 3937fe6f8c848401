/* SPDX-License-Identifier: BSD-3-Clause */
/* append-read: zone-appends two blocks to a zonednull device and reads
 * them back.
 *
 *   cc -o append-read append-read.c \
 *       $(pkg-config --cflags --libs zonednull-client)
 *   ./append-read nbd://server/
 *
 * It picks the first sequential zone with room for both blocks (this
 * writes to the device: use a test device), appends each block, which the
 * server places at the zone's write pointer and answers with the sector
 * it landed at, and reads that sector back through the data export.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zonednull/client.h>

#define BLOCKS 2

static void
die (struct zn_client *c, const char *what, int r)
{
  fprintf (stderr, "append-read: %s: %s: %s\n",
           what, zn_errno_name (-r), zn_client_error (c));
  zn_client_close (c);
  exit (EXIT_FAILURE);
}

/* Whether zone z can take nr_sectors more at its write pointer. */
static int
has_room (const struct zn_zone *z, uint64_t nr_sectors)
{
  if (z->type != ZN_ZONE_SEQWRITE_REQ)
    return 0;
  switch (z->cond) {
  case ZN_COND_EMPTY: case ZN_COND_IMP_OPEN: case ZN_COND_EXP_OPEN:
  case ZN_COND_CLOSED:
    return z->start + z->capacity - z->wp >= nr_sectors;
  default:
    return 0;
  }
}

/* Finds the first zone with room for nr_sectors: returns 0 with it in
 * *found, 1 when no zone has room, or a report's negative errno.
 */
static int
find_zone (struct zn_client *c, uint64_t nr_sectors, struct zn_zone *found)
{
  struct zn_zone zones[64];
  uint64_t sector = 0;
  int r;
  while ((r = zn_client_report (c, sector, zones,
                                sizeof zones / sizeof zones[0])) > 0) {
    for (int i = 0; i < r; i++)
      if (has_room (&zones[i], nr_sectors)) {
        *found = zones[i];
        return 0;
      }
    sector = zones[r - 1].start + zones[r - 1].len;
  }
  return r < 0 ? r : 1;
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
    fprintf (stderr, "append-read: %s: %s\n", argv[1], err);
    exit (EXIT_FAILURE);
  }

  struct zn_control_info info;
  int r = zn_client_info (c, &info);
  if (r < 0)
    die (c, "info", r);
  if (info.max_append_sectors == 0) {
    fprintf (stderr, "append-read: %s: the server has no zone append\n",
             argv[1]);
    zn_client_close (c);
    exit (EXIT_FAILURE);
  }

  /* One logical block per append: the smallest amount a device takes. */
  const size_t block = info.block_size;
  const uint64_t block_sectors = block / 512;
  struct zn_zone zone;
  r = find_zone (c, BLOCKS * block_sectors, &zone);
  if (r < 0)
    die (c, "report", r);
  if (r > 0) {
    fprintf (stderr, "append-read: %s: no sequential zone has room for "
             "%d blocks\n", argv[1], BLOCKS);
    zn_client_close (c);
    exit (EXIT_FAILURE);
  }

  unsigned char *data = malloc (block);
  unsigned char *back = malloc (block);
  if (data == NULL || back == NULL) {
    perror ("append-read: malloc");
    exit (EXIT_FAILURE);
  }

  for (int i = 0; i < BLOCKS; i++) {
    memset (data, 0xa0 + i, block);
    uint64_t written;
    r = zn_client_append (c, data, zone.start, block_sectors, &written);
    if (r < 0)
      die (c, "append", r);
    printf ("appended %zu bytes to the zone at sector %" PRIu64
            ": landed at sector %" PRIu64 "\n", block, zone.start, written);

    r = zn_client_pread (c, back, block, written * 512);
    if (r < 0)
      die (c, "pread", r);
    if (memcmp (data, back, block) != 0) {
      fprintf (stderr, "append-read: sector %" PRIu64 " reads back other "
               "data than was appended\n", written);
      zn_client_close (c);
      exit (EXIT_FAILURE);
    }
    printf ("read back sector %" PRIu64 ": same data\n", written);
  }

  free (data);
  free (back);
  zn_client_close (c);
  exit (EXIT_SUCCESS);
}
