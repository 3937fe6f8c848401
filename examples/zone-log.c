/* SPDX-License-Identifier: BSD-3-Clause */
/* zone-log: an append-only log kept on a zoned device's raw sequential
 * zones, and the check of what a power loss left of it: a workload and
 * its checker for zonednull-pfcheck(1).
 *
 *   cc -o zone-log zone-log.c \
 *       $(pkg-config --cflags --libs zonednull-client)
 *   zone-log append URI COUNT [--plant=no-flush]
 *   zone-log check [DEV|URI]
 *
 * append resets every sequential zone (this erases the device: use a test
 * device), marks commit-0 in the device's write log, then zone-appends
 * COUNT records, from the first sequential zone on, to the next zone when
 * one is full.  A record is committed once it is durable: odd records are
 * appended with FUA, even ones appended and then flushed; after each
 * commit comes the mark commit-N.  --plant=no-flush leaves the flush out
 * and marks the record committed anyway: the bug check must catch.
 *
 * check reads the zones of a block device (DEV) or of a device's control
 * channel (URI), by default PFCHECK_DEV, else PFCHECK_URI, and PFCHECK_MARK,
 * the last mark the state must satisfy (commit-N, or empty: nothing
 * committed).  The log must be records 1 to M, whole and in order, M at
 * least N; past the records only a record cut by the power loss, later
 * than N, may stand before the write pointer.  It prints the verdict and
 * exits 0, or 1 when the log breaks a promise.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/blkzoned.h>
#include <linux/fs.h>
#include <libnbd.h>

#include <zonednull/client.h>

#define MAGIC "ZONE-LOG"
#define MAX_ZONES 4096

/* The first bytes of a record's first block; the rest of its blocks is
 * fill(seq, offset), so the checker knows every byte to expect.
 */
struct header {
  char magic[8];
  uint64_t seq;                 /* 1, 2, ... */
  uint32_t blocks;              /* the record's length */
  uint32_t zero;
};

static uint8_t
fill (uint64_t seq, uint64_t off)
{
  uint64_t x = seq * 0x9e3779b97f4a7c15ULL + off;
  x ^= x >> 29;
  x *= 0xbf58476d1ce4e5b9ULL;
  return x >> 56;
}

static uint32_t
record_blocks (uint64_t seq)
{
  return 1 + seq % 3;
}

static void
make_record (uint8_t *buf, uint64_t seq, uint32_t block)
{
  uint32_t blocks = record_blocks (seq);
  struct header h = { .seq = seq, .blocks = blocks };
  memcpy (h.magic, MAGIC, sizeof h.magic);
  for (uint64_t i = 0; i < (uint64_t) blocks * block; i++)
    buf[i] = fill (seq, i);
  memcpy (buf, &h, sizeof h);
}

/* ---- append: the workload -------------------------------------------- */

static void
die (struct zn_client *c, const char *what, int r)
{
  fprintf (stderr, "zone-log: %s: %s: %s\n", what, zn_errno_name (-r),
           zn_client_error (c));
  zn_client_close (c);
  exit (EXIT_FAILURE);
}

/* The device's sequential zones, in order; returns how many. */
static size_t
seq_zones (struct zn_client *c, struct zn_zone *seq, size_t max)
{
  struct zn_zone zones[64];
  uint64_t sector = 0;
  size_t n = 0;
  int r;
  while ((r = zn_client_report (c, sector, zones, 64)) > 0) {
    for (int i = 0; i < r; i++)
      if (zones[i].type == ZN_ZONE_SEQWRITE_REQ && n < max)
        seq[n++] = zones[i];
    sector = zones[r - 1].start + zones[r - 1].len;
  }
  if (r < 0)
    die (c, "report", r);
  return n;
}

static int
do_append (const char *uri, uint64_t count, bool plant_no_flush)
{
  char err[256];
  struct zn_client *c = zn_client_connect (uri, err, sizeof err);
  if (c == NULL) {
    fprintf (stderr, "zone-log: %s: %s\n", uri, err);
    return EXIT_FAILURE;
  }
  struct zn_control_info info;
  int r = zn_client_info (c, &info);
  if (r < 0)
    die (c, "info", r);
  if (info.max_append_sectors == 0) {
    fprintf (stderr, "zone-log: %s: the server has no zone append\n", uri);
    zn_client_close (c);
    return EXIT_FAILURE;
  }
  static struct zn_zone zones[MAX_ZONES];
  size_t nz = seq_zones (c, zones, MAX_ZONES);
  const uint32_t block = info.block_size, spb = block / 512;
  if (nz == 0 || record_blocks (2) * spb > info.max_append_sectors) {
    fprintf (stderr, "zone-log: %s: needs a sequential zone and appends of "
             "%" PRIu32 " blocks\n", uri, record_blocks (2));
    zn_client_close (c);
    return EXIT_FAILURE;
  }
  for (size_t z = 0; z < nz; z++)
    if (zones[z].wp != zones[z].start
        && (r = zn_client_zone_mgmt (c, ZN_OP_RESET, zones[z].start,
                                     zones[z].len)) < 0)
      die (c, "reset", r);
  if ((r = zn_client_mark (c, "commit-0")) < 0)
    die (c, "mark commit-0", r);

  uint8_t *buf = malloc ((size_t) record_blocks (2) * block);
  if (buf == NULL) {
    perror ("zone-log: malloc");
    exit (EXIT_FAILURE);
  }
  size_t z = 0;
  uint64_t room = zones[0].capacity;
  for (uint64_t seq = 1; seq <= count; seq++) {
    uint64_t sectors = (uint64_t) record_blocks (seq) * spb, at;
    if (sectors > room) {
      if (++z == nz) {
        fprintf (stderr, "zone-log: the device is full after %" PRIu64
                 " records\n", seq - 1);
        exit (EXIT_FAILURE);
      }
      room = zones[z].capacity;
    }
    make_record (buf, seq, block);
    bool fua = seq % 2 == 1;
    r = fua ? zn_client_append_fua (c, buf, zones[z].start, sectors, &at)
      : zn_client_append (c, buf, zones[z].start, sectors, &at);
    if (r < 0)
      die (c, "append", r);
    room -= sectors;
    if (!fua && !plant_no_flush
        && nbd_flush (zn_client_data_handle (c), 0) == -1) {
      fprintf (stderr, "zone-log: flush: %s\n", nbd_get_error ());
      exit (EXIT_FAILURE);
    }
    char name[32];
    snprintf (name, sizeof name, "commit-%" PRIu64, seq);
    if ((r = zn_client_mark (c, name)) < 0)
      die (c, "mark", r);
  }
  printf ("zone-log: %" PRIu64 " records appended and committed, to zone %zu "
          "of %zu\n", count, z + 1, nz);
  free (buf);
  zn_client_close (c);
  return EXIT_SUCCESS;
}

/* ---- check: the checker ---------------------------------------------- */

/* The state to check: a block device, or a device's control channel. */
struct source {
  int fd;
  struct zn_client *c;
  uint32_t block;
};

static int
open_source (const char *where, struct source *s, char *err, size_t errlen)
{
  *s = (struct source) { .fd = -1 };
  if (where[0] == '/') {
    s->fd = open (where, O_RDONLY | O_CLOEXEC);
    int bs;
    if (s->fd < 0 || ioctl (s->fd, BLKSSZGET, &bs) < 0) {
      snprintf (err, errlen, "%s: %s", where, strerror (errno));
      return -1;
    }
    s->block = bs;
    return 0;
  }
  s->c = zn_client_connect (where, err, errlen);
  struct zn_control_info info;
  if (s->c == NULL || zn_client_info (s->c, &info) < 0) {
    if (s->c)
      snprintf (err, errlen, "%s: %s", where, zn_client_error (s->c));
    return -1;
  }
  s->block = info.block_size;
  return 0;
}

/* The sequential zones, in order; -1 on failure. */
static int
source_zones (struct source *s, struct zn_zone *seq, size_t max, size_t *n)
{
  *n = 0;
  if (s->c) {
    *n = seq_zones (s->c, seq, max);
    return 0;
  }
  size_t len = sizeof (struct blk_zone_report) + 64 * sizeof (struct blk_zone);
  struct blk_zone_report *rep = calloc (1, len);
  uint64_t sector = 0;
  if (rep == NULL)
    return -1;
  for (;;) {
    memset (rep, 0, len);
    rep->sector = sector;
    rep->nr_zones = 64;
    if (ioctl (s->fd, BLKREPORTZONE, rep) < 0) {
      free (rep);
      return -1;
    }
    if (rep->nr_zones == 0)
      break;
    for (uint32_t i = 0; i < rep->nr_zones; i++) {
      struct blk_zone *bz = &rep->zones[i];
      if (bz->type == BLK_ZONE_TYPE_SEQWRITE_REQ && *n < max)
        seq[(*n)++] = (struct zn_zone) { .start = bz->start, .len = bz->len,
          .capacity = bz->capacity, .wp = bz->wp, .cond = bz->cond };
      sector = bz->start + bz->len;
    }
  }
  free (rep);
  return 0;
}

static int
source_read (struct source *s, void *buf, size_t count, uint64_t off)
{
  if (s->c)
    return zn_client_pread (s->c, buf, count, off);
  return pread (s->fd, buf, count, off) == (ssize_t) count ? 0 : -EIO;
}

/* The committed count from the mark name: commit-N, or none. */
static int
committed_of (const char *mark, uint64_t *n)
{
  char *end;
  *n = 0;
  if (mark == NULL || *mark == '\0')
    return 0;
  if (strncmp (mark, "commit-", 7) != 0)
    return -1;
  errno = 0;
  *n = strtoull (mark + 7, &end, 10);
  return errno || *end || end == mark + 7 ? -1 : 0;
}

/* Checks record seq at sector; returns 1 whole, 0 not a whole record
 * seq, -1 when it cannot be read.
 */
static int
record_at (struct source *s, uint8_t *want, uint8_t *got, uint64_t seq,
           uint64_t sector)
{
  size_t len = (size_t) record_blocks (seq) * s->block;
  make_record (want, seq, s->block);
  if (source_read (s, got, len, sector * 512) < 0)
    return -1;
  return memcmp (want, got, len) == 0;
}

static int
do_check (const char *where, const char *mark)
{
  uint64_t committed;
  if (committed_of (mark, &committed) < 0) {
    printf ("zone-log: PFCHECK_MARK '%s' is not commit-N\n", mark);
    return 2;
  }
  struct source s;
  char err[256];
  if (open_source (where, &s, err, sizeof err) < 0) {
    printf ("zone-log: cannot open the state: %s\n", err);
    return 2;
  }
  static struct zn_zone zones[MAX_ZONES];
  size_t nz;
  if (source_zones (&s, zones, MAX_ZONES, &nz) < 0) {
    printf ("zone-log: cannot report the zones of %s: %s\n", where,
            s.c ? zn_client_error (s.c) : strerror (errno));
    return 2;
  }
  size_t max = (size_t) record_blocks (2) * s.block;
  uint8_t *want = malloc (max), *got = malloc (max);
  if (want == NULL || got == NULL)
    return 2;
  const uint32_t spb = s.block / 512;
  uint64_t seq = 1;             /* the next record expected */
  int ret = 0;
  bool ended = false;           /* a zone had room left: the log ended */
  for (size_t z = 0; z < nz && ret == 0; z++) {
    uint64_t sector = zones[z].start, wp = zones[z].wp;
    if (ended && wp != sector) {
      printf ("zone-log: zone at sector %" PRIu64 " holds data past the "
              "log's end in an earlier zone\n", sector);
      ret = 1;
    }
    while (ret == 0 && !ended && sector < wp) {
      uint64_t sectors = (uint64_t) record_blocks (seq) * spb;
      int r = sector + sectors <= wp ? record_at (&s, want, got, seq, sector)
        : 0;
      if (r < 0) {
        printf ("zone-log: cannot read sector %" PRIu64 "\n", sector);
        ret = 2;
      } else if (r == 0) {
        /* Only what the power loss cut, and nothing after it. */
        if (seq <= committed)
          printf ("zone-log: record %" PRIu64 ", committed at mark %s, is "
                  "damaged at sector %" PRIu64 "\n", seq, mark, sector);
        else if (sector + sectors < wp)
          printf ("zone-log: sector %" PRIu64 " holds no record %" PRIu64
                  " and data follows it\n", sector, seq);
        else
          ended = true;
        ret = ended ? 0 : 1;
      } else {
        seq++;
        sector += sectors;
      }
    }
    /* A record that does not fit in the zone's room went to the next. */
    if (sector < zones[z].start + zones[z].capacity
        && zones[z].start + zones[z].capacity - sector
           >= (uint64_t) record_blocks (seq) * spb)
      ended = true;
  }
  if (ret == 0 && seq - 1 < committed) {
    printf ("zone-log: record %" PRIu64 " is missing: records 1 to %" PRIu64
            " were committed (mark %s), %" PRIu64 " found\n", seq, committed,
            mark, seq - 1);
    ret = 1;
  } else if (ret == 0)
    printf ("zone-log: %" PRIu64 " records whole, %" PRIu64 " committed\n",
            seq - 1, committed);
  free (want);
  free (got);
  if (s.c)
    zn_client_close (s.c);
  else
    close (s.fd);
  return ret;
}

int
main (int argc, char *argv[])
{
  if (argc >= 4 && strcmp (argv[1], "append") == 0) {
    char *end;
    errno = 0;
    uint64_t count = strtoull (argv[3], &end, 10);
    bool plant = argc == 5 && strcmp (argv[4], "--plant=no-flush") == 0;
    if (errno == 0 && *end == '\0' && end != argv[3] && count > 0
        && (argc == 4 || plant))
      return do_append (argv[2], count, plant);
  }
  if (argc >= 2 && argc <= 3 && strcmp (argv[1], "check") == 0) {
    const char *where = argc == 3 ? argv[2] : getenv ("PFCHECK_DEV");
    if (where == NULL || *where == '\0')
      where = getenv ("PFCHECK_URI");
    if (where && *where)
      return do_check (where, getenv ("PFCHECK_MARK"));
  }
  fprintf (stderr, "usage: zone-log append URI COUNT [--plant=no-flush]\n"
           "       zone-log check [DEV|URI]   (PFCHECK_MARK: commit-N)\n");
  return 2;
}
