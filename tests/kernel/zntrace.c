/* SPDX-License-Identifier: BSD-3-Clause */
/* zntrace: the guest-side tool of the real-kernel tier (static, no libc
 * extras beyond Linux headers).
 *
 *   zntrace trace [--initial] [--full-wp-end] [--bad=FIRST-LAST[,FIRST-LAST...]]
 *                 DEV SEED NOPS
 *       Runs a random sequence of zone operations and I/O on the zoned
 *       block device DEV (the real null_blk) and prints the trace from the
 *       "# zonetrace v1" header line on, in the format of
 *       tests/traces/README.md.  The op generator is the one described
 *       there ("How the recorder picks ops" and "Write zone choice": the
 *       write's p >= 65 branch picks any zone), so the golden recordings
 *       come out again for their seeds; the tier checks that every run.
 *       --initial: no reset-all as op 0, the ops start from the state the
 *       device powered on with (zone_full=1 makes its zones FULL); the
 *       recorder line says start=initial and the first op is op 1.
 *       --bad: the device's bad sector ranges (inclusive, as written to
 *       configfs badblocks).  Before each op one more number is drawn, and
 *       one op in eight is then aimed at a bad range instead (see
 *       bad_op), so that writes and reads run into them; without --bad
 *       nothing is drawn and the ops are those of the golden recordings.
 *       --full-wp-end: a FULL zone's write pointer is taken as the zone's
 *       end (start + length) whatever DEV reports, in the ops drawn from
 *       it and in the states printed.  Linux's NVMe driver reports every
 *       FULL zone so, while null_blk leaves a zone that writes filled at
 *       start + capacity: with it on both, null_blk's trace is the one an
 *       NVMe host of the same zones records (check-nvme.sh).
 *
 *   zntrace write DEV BYTE-OFFSET BYTES TAG
 *       One O_DIRECT pwrite of the tier's pattern for TAG.  Prints
 *       "res=0", "res=+<bytes>" (short) or "res=-<errno>(<NAME>)" and exits
 *       0 only on full success.
 *
 *   zntrace expect DEV BYTE-OFFSET BYTES TAG
 *       One O_DIRECT pread; exits 0 when it returns TAG's pattern.
 *
 *   zntrace seqwrite DEV BYTE-OFFSET CHUNK COUNT TAG
 *       COUNT O_DIRECT writes of CHUNK bytes, one after the other from
 *       BYTE-OFFSET (at a write pointer, each lands at the next one).
 *       Stops at the first failure.
 *
 *   zntrace sum DEV BYTE-OFFSET BYTES
 *       Prints the FNV-1a 64 sum of an O_DIRECT pread.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <linux/blkzoned.h>
#include <linux/fs.h>

#include "../common/trace-format.h"

#define MAXW 31                 /* blocks of 4 KiB per write */
#define BLK 8                   /* sectors per 4 KiB block */

static uint64_t rng_state;

static uint64_t
rnd (void)
{
  rng_state += GOLDEN;
  return mix64 (rng_state);
}

static uint64_t
rndn (uint64_t n)
{
  return n ? rnd () % n : 0;
}

/* "0", "+<bytes>" or "-<errno>(<NAME>)" for a transfer of want bytes. */
static void
print_res (long long r, int err, size_t want)
{
  if (r < 0)
    printf ("-%d(%s)", err, errno_name (err));
  else if ((size_t) r == want)
    printf ("0");
  else
    printf ("+%lld", r);
}

static void *
xalloc (size_t n)
{
  void *p;

  if (posix_memalign (&p, 4096, n ? n : 4096) != 0) {
    fprintf (stderr, "zntrace: out of memory\n");
    exit (2);
  }
  return p;
}

static uint64_t
arg_u64 (const char *s, const char *what)
{
  char *end;
  uint64_t v;

  errno = 0;
  v = strtoull (s, &end, 0);
  if (errno || *s == '\0' || *end != '\0' || *s == '-') {
    fprintf (stderr, "zntrace: bad %s '%s'\n", what, s);
    exit (2);
  }
  return v;
}

static int
open_dev (const char *dev)
{
  int fd = open (dev, O_RDWR | O_DIRECT);

  if (fd < 0) {
    fprintf (stderr, "zntrace: %s: %s\n", dev, strerror (errno));
    exit (2);
  }
  return fd;
}

/* ---- trace -------------------------------------------------------------- */

#define MAXBAD 16

struct bad {
  uint64_t first, last;         /* sectors, inclusive */
};

struct dev {
  int fd;
  uint64_t capacity;            /* sectors */
  uint64_t zone_sectors;
  unsigned nr_zones;
  struct blk_zone_report *rep;  /* the report after the last op */
  unsigned nr_rep;
  int rep_err;                  /* errno of a failed report, else 0 */
  bool full_wp_end;             /* --full-wp-end */
};

static int
report (struct dev *d)
{
  d->rep->sector = 0;
  d->rep->nr_zones = d->nr_zones;
  d->rep->flags = 0;
  if (ioctl (d->fd, BLKREPORTZONE, d->rep) < 0) {
    d->rep_err = errno;
    d->nr_rep = 0;
    return -1;
  }
  d->rep_err = 0;
  d->nr_rep = d->rep->nr_zones;
  if (d->full_wp_end)
    for (unsigned i = 0; i < d->nr_rep; i++)
      if (d->rep->zones[i].cond == BLK_ZONE_COND_FULL)
        d->rep->zones[i].wp = d->rep->zones[i].start + d->rep->zones[i].len;
  return 0;
}

static char
cond_letter (unsigned cond)
{
  switch (cond) {
  case BLK_ZONE_COND_EMPTY: return 'E';
  case BLK_ZONE_COND_IMP_OPEN: return 'I';
  case BLK_ZONE_COND_EXP_OPEN: return 'O';
  case BLK_ZONE_COND_CLOSED: return 'C';
  case BLK_ZONE_COND_FULL: return 'F';
  case BLK_ZONE_COND_READONLY: return 'R';
  case BLK_ZONE_COND_OFFLINE: return 'X';
  default: return '?';
  }
}

static void
print_states (struct dev *d)
{
  printf (" |");
  if (report (d) < 0) {
    printf (" REPORT_ERR -%d(%s)\n", d->rep_err, errno_name (d->rep_err));
    return;
  }
  for (unsigned i = 0; i < d->nr_rep; i++) {
    const struct blk_zone *z = &d->rep->zones[i];

    if (z->cond == BLK_ZONE_COND_NOT_WP)
      printf (" N");
    else
      printf (" %c%" PRIu64, cond_letter (z->cond), (uint64_t) (z->wp - z->start));
  }
  printf ("\n");
}

static unsigned long
sysfs_queue (const char *dev, const char *attr)
{
  const char *base = strrchr (dev, '/');
  char path[256];
  unsigned long v = 0;
  FILE *fp;

  snprintf (path, sizeof path, "/sys/block/%s/queue/%s", base ? base + 1 : dev, attr);
  fp = fopen (path, "r");
  if (!fp || fscanf (fp, "%lu", &v) != 1) {
    fprintf (stderr, "zntrace: cannot read %s\n", path);
    exit (2);
  }
  fclose (fp);
  return v;
}

static bool
is_conv (const struct blk_zone *z)
{
  return z->type == BLK_ZONE_TYPE_CONVENTIONAL;
}

static bool
is_open_or_closed (const struct blk_zone *z)
{
  return z->cond == BLK_ZONE_COND_IMP_OPEN || z->cond == BLK_ZONE_COND_EXP_OPEN
    || z->cond == BLK_ZONE_COND_CLOSED;
}

/* Picks list[rndn(k)] from the zones for which pred holds, or returns -1
 * when none does (no draw).
 */
static long
pick (struct dev *d, bool (*pred) (const struct blk_zone *, int), int arg)
{
  unsigned k = 0, *list = malloc (sizeof *list * (d->nr_rep ? d->nr_rep : 1));
  long z = -1;

  if (!list)
    exit (2);
  for (unsigned i = 0; i < d->nr_rep; i++)
    if (pred (&d->rep->zones[i], arg))
      list[k++] = i;
  if (k)
    z = list[rndn (k)];
  free (list);
  return z;
}

enum { L_CONV, L_FULL, L_OPENCLOSED, L_OPEN, L_CLOSE, L_FINISH, L_RESET };

static bool
pred (const struct blk_zone *z, int which)
{
  switch (which) {
  case L_CONV: return is_conv (z);
  case L_FULL: return z->cond == BLK_ZONE_COND_FULL;
  case L_OPENCLOSED: return is_open_or_closed (z);
  case L_OPEN:
    return z->cond == BLK_ZONE_COND_EMPTY || z->cond == BLK_ZONE_COND_IMP_OPEN
      || z->cond == BLK_ZONE_COND_CLOSED;
  case L_CLOSE:
    return z->cond == BLK_ZONE_COND_IMP_OPEN || z->cond == BLK_ZONE_COND_EXP_OPEN;
  case L_FINISH: return !is_conv (z) && z->cond != BLK_ZONE_COND_FULL;
  case L_RESET: return !is_conv (z) && z->cond != BLK_ZONE_COND_EMPTY;
  }
  return false;
}

static void
zone_op (struct dev *d, uint64_t i, const char *name, unsigned long req,
         uint64_t z, uint64_t sector, uint64_t nsect)
{
  struct blk_zone_range range = { .sector = sector, .nr_sectors = nsect };
  int r = ioctl (d->fd, req, &range);
  int e = errno;

  printf ("%" PRIu64 " %s z=", i, name);
  if (z == UINT64_MAX)
    printf ("-");
  else
    printf ("%" PRIu64, z);
  printf (" sector=%" PRIu64 " nsect=%" PRIu64 " res=", sector, nsect);
  print_res (r < 0 ? -1 : 0, e, 0);
  print_states (d);
}

static void
do_write (struct dev *d, unsigned char *buf, uint64_t i, uint64_t seed, long z,
          uint64_t off, uint64_t nblk)
{
  ssize_t n;
  int e;

  fill_pattern (buf, nblk * 4096, i, seed, off << 9);
  n = pwrite (d->fd, buf, nblk * 4096, (off_t) (off << 9));
  e = errno;
  printf ("%" PRIu64 " write z=%ld sector=%" PRIu64 " nsect=%" PRIu64 " res=",
          i, z, off, nblk * BLK);
  print_res (n, e, nblk * 4096);
  print_states (d);
}

static void
do_read (struct dev *d, unsigned char *buf, uint64_t i, uint64_t z,
         uint64_t off, uint64_t nblk)
{
  ssize_t n;
  int e;

  memset (buf, 0xA5, nblk * 4096);
  n = pread (d->fd, buf, nblk * 4096, (off_t) (off << 9));
  e = errno;
  printf ("%" PRIu64 " read z=%" PRIu64 " sector=%" PRIu64 " nsect=%" PRIu64 " res=",
          i, z, off, nblk * BLK);
  print_res (n, e, nblk * 4096);
  if (n > 0)
    printf (" sum=%016" PRIx64, fnv1a64 (buf, (size_t) n));
  print_states (d);
}

/* An op aimed at bad range b: in a sequential zone whose write pointer is
 * at or before the range, a write from the write pointer that reaches into
 * it when it is near (so a partial write stops there), else a write of
 * MAXW blocks towards it; otherwise (conventional zone, or the write
 * pointer past the range) a write or a read over it, from up to 3 blocks
 * before it.  Writes and reads stay in the range's zone.
 */
static void
bad_op (struct dev *d, unsigned char *buf, uint64_t i, uint64_t seed,
        const struct bad *b)
{
  uint64_t z = b->first / d->zone_sectors, zs, len, wp, off, nblk;
  const struct blk_zone *zn;

  if (z >= d->nr_rep)
    z = d->nr_rep - 1;
  zn = &d->rep->zones[z];
  zs = zn->start;
  len = zn->len;
  wp = zn->wp;
  if (!is_conv (zn) && zn->cond != BLK_ZONE_COND_FULL && wp <= b->first) {
    off = wp;
    nblk = (b->first - wp) / BLK + 1 + rndn (4);
  }
  else {
    uint64_t back = BLK * rndn (4);
    bool write = is_conv (zn) && rndn (2) == 0;

    off = (b->first / BLK) * BLK;
    off = off - zs >= back ? off - back : zs;
    nblk = (b->last - off) / BLK + 1 + rndn (3);
    if (!write) {
      if (nblk > 16)
        nblk = 16;
      if (off + BLK * nblk > zs + len)
        nblk = (zs + len - off) / BLK;
      do_read (d, buf, i, z, off, nblk ? nblk : 1);
      return;
    }
  }
  if (nblk > MAXW)
    nblk = MAXW;
  if (off + BLK * nblk > zs + len)
    nblk = (zs + len - off) / BLK;
  do_write (d, buf, i, seed, (long) z, off, nblk ? nblk : 1);
}

static int
cmd_trace (const char *devpath, uint64_t seed, uint64_t nops, bool initial,
           bool full_wp_end, const struct bad *bad, unsigned nbad)
{
  struct dev d = { .fd = open_dev (devpath), .full_wp_end = full_wp_end };
  uint64_t bytes;
  unsigned int sz = 0, nz = 0;
  int lbs = 0, pbs = 0;
  unsigned char *buf = xalloc (MAXW * 4096 + 4 * 4096);

  if (ioctl (d.fd, BLKGETSIZE64, &bytes) < 0 || ioctl (d.fd, BLKGETZONESZ, &sz) < 0
      || ioctl (d.fd, BLKGETNRZONES, &nz) < 0 || ioctl (d.fd, BLKSSZGET, &lbs) < 0
      || ioctl (d.fd, BLKPBSZGET, &pbs) < 0) {
    fprintf (stderr, "zntrace: %s: geometry ioctl: %s\n", devpath, strerror (errno));
    return 2;
  }
  if (sz == 0 || nz == 0) {
    fprintf (stderr, "zntrace: %s is not a zoned block device\n", devpath);
    return 2;
  }
  d.capacity = bytes >> 9;
  d.zone_sectors = sz;
  d.nr_zones = nz;
  d.rep = calloc (1, sizeof *d.rep + nz * sizeof (struct blk_zone));
  if (!d.rep)
    return 2;

  printf ("# zonetrace v1 dev=%s seed=%" PRIu64 " ops=%" PRIu64 "%s\n", devpath, seed, nops,
          initial ? " start=initial" : "");
  printf ("# size_bytes=%" PRIu64 " zone_sectors=%u nr_zones=%u lbs=%d pbs=%d"
          " max_open=%lu max_active=%lu max_sectors_kb=%lu\n",
          bytes, sz, nz, lbs, pbs, sysfs_queue (devpath, "max_open_zones"),
          sysfs_queue (devpath, "max_active_zones"),
          sysfs_queue (devpath, "max_sectors_kb"));
  if (report (&d) < 0) {
    fprintf (stderr, "zntrace: initial zone report: %s\n", strerror (d.rep_err));
    return 2;
  }
  printf ("# report_capacity_flag=%d\n", (d.rep->flags & BLK_ZONE_REP_CAPACITY) ? 1 : 0);
  for (unsigned i = 0; i < d.nr_rep; i++) {
    const struct blk_zone *z = &d.rep->zones[i];

    printf ("# zone %u start=%llu len=%llu cap=%llu wp=%llu type=%u cond=%u\n", i,
            (unsigned long long) z->start, (unsigned long long) z->len,
            (unsigned long long) z->capacity, (unsigned long long) z->wp,
            (unsigned) z->type, (unsigned) z->cond);
  }

  rng_state = mix64 (seed ^ UINT64_C(0x5a17ace5));
  if (!initial)
    zone_op (&d, 0, "resetall", BLKRESETZONE, UINT64_MAX, 0, d.capacity);

  for (uint64_t i = 1; i <= nops; i++) {
    uint64_t r;

    if (d.rep_err) {
      fprintf (stderr, "zntrace: zone report failed: %s\n", strerror (d.rep_err));
      return 1;
    }
    if (nbad && rndn (8) == 0) {
      bad_op (&d, buf, i, seed, &bad[rndn (nbad)]);
      continue;
    }
    r = rndn (1000);
    if (r < 600) {                      /* write */
      long z;
      const struct blk_zone *zn;
      uint64_t zs, cap, len, wp, off, nblk, m, l;
      bool conv;

      if (d.nr_zones > 4096)
        z = (long) rndn (d.nr_zones);
      else {
        uint64_t p = rndn (100);

        /* For p >= 65 the recordings only come out again when the branch
         * picks among all zones, not EMPTY ones only (checked on all
         * 8 x 1500 ops; tests/traces/README.md, "Write zone choice").
         */
        if (p < 65) {
          z = pick (&d, pred, p < 10 ? L_CONV : p < 20 ? L_FULL : L_OPENCLOSED);
          if (z < 0)
            z = (long) rndn (d.nr_zones);
        }
        else
          z = (long) rndn (d.nr_zones);
      }
      zn = &d.rep->zones[z];
      conv = is_conv (zn);
      zs = zn->start;
      cap = zn->capacity;
      len = zn->len;
      wp = conv ? zs : zn->wp;

      m = rndn (100);
      if (conv || m >= 90)
        off = zs + BLK * rndn (len / BLK);
      else if (m < 72)
        off = wp;
      else if (m < 80)
        off = wp + BLK * (1 + rndn (4));
      else if (m < 85)
        off = wp >= zs + BLK ? wp - BLK * (1 + rndn (2)) : zs + BLK;
      else
        off = zs;

      l = rndn (100);
      if (!conv && l < 20) {
        uint64_t rem;

        off = wp;
        rem = zs + cap > wp ? (zs + cap - wp) / BLK : 0;
        nblk = rem > MAXW ? MAXW : rem + rndn (4);
      }
      else if (l < 70)
        nblk = 1 + rndn (8);
      else if (l < 90)
        nblk = 9 + rndn (23);
      else {
        uint64_t endc = zs + (conv ? len : cap);

        if (endc > off && (endc - off) / BLK + 4 > MAXW)
          off = endc - BLK * (1 + rndn (27));
        nblk = (endc > off ? (endc - off) / BLK : 0) + 1 + rndn (4);
      }
      if (off >= zs + len)
        off = zs + len - BLK * (1 + rndn (4));
      if (nblk > MAXW)
        nblk = MAXW;
      if (off + BLK * nblk > zs + len)
        nblk = (zs + len - off) / BLK;
      if (nblk == 0)
        nblk = 1;

      do_write (&d, buf, i, seed, z, off, nblk);
    }
    else if (r < 700) {                 /* read */
      uint64_t z = rndn (d.nr_zones);
      const struct blk_zone *zn = &d.rep->zones[z];
      uint64_t off = zn->start + BLK * rndn (zn->len / BLK);
      uint64_t nblk = 1 + rndn (16);

      if (rndn (4) == 0)
        off = zn->start;
      if (off + BLK * nblk > d.capacity)
        nblk = (d.capacity - off) / BLK;
      do_read (&d, buf, i, z, off, nblk);
    }
    else if (r < 995) {                 /* zone op */
      static const char *const names[] = { "open", "close", "finish", "reset" };
      static const unsigned long reqs[] = {
        BLKOPENZONE, BLKCLOSEZONE, BLKFINISHZONE, BLKRESETZONE,
      };
      static const int lists[] = { L_OPEN, L_CLOSE, L_FINISH, L_RESET };
      uint64_t q = rndn (100);
      int k = q < 32 ? 0 : q < 54 ? 1 : q < 76 ? 2 : 3;
      uint64_t z = rndn (d.nr_zones), v, zones = 1, sector, nsect;

      if (rndn (3) != 0 && d.nr_zones <= 4096) {
        long p = pick (&d, pred, lists[k]);

        if (p >= 0)
          z = (uint64_t) p;
      }
      v = rndn (100);
      if (v < 8 && z + 1 < d.nr_zones)
        zones = 2;
      sector = d.rep->zones[z].start;
      nsect = zones * d.zone_sectors;
      if (v >= 8 && v < 11)
        sector += BLK;
      if (v >= 11 && v < 13)
        nsect = d.zone_sectors / 2;
      zone_op (&d, i, names[k], reqs[k], z, sector, nsect);
    }
    else
      zone_op (&d, i, "resetall", BLKRESETZONE, UINT64_MAX, 0, d.capacity);
  }
  fflush (stdout);
  return ferror (stdout) ? 2 : 0;
}

/* ---- single I/O --------------------------------------------------------- */

static void usage (void);

static int
cmd_write (const char *dev, uint64_t off, uint64_t len, uint64_t tag, bool quiet)
{
  int fd = open_dev (dev);
  unsigned char *buf = xalloc (len);
  ssize_t n;
  int e;

  fill_pattern (buf, len, tag, tag, off);
  n = pwrite (fd, buf, len, (off_t) off);
  e = errno;
  if (!quiet || n != (ssize_t) len) {
    printf ("res=");
    print_res (n, e, len);
    printf ("\n");
  }
  free (buf);
  close (fd);
  return n == (ssize_t) len ? 0 : 1;
}

static int
cmd_read (const char *dev, uint64_t off, uint64_t len, bool expect, uint64_t tag)
{
  int fd = open_dev (dev);
  unsigned char *buf = xalloc (len), *want = NULL;
  ssize_t n;
  int e, rc = 0;

  memset (buf, 0xA5, len);
  n = pread (fd, buf, len, (off_t) off);
  e = errno;
  if (n != (ssize_t) len) {
    printf ("res=");
    print_res (n, e, len);
    printf ("\n");
    rc = 1;
  }
  else if (expect) {
    want = xalloc (len);
    fill_pattern (want, len, tag, tag, off);
    if (memcmp (buf, want, len) != 0) {
      size_t k = 0;

      while (buf[k] == want[k])
        k++;
      printf ("data differs from pattern %" PRIu64 " at byte %" PRIu64 "\n",
              tag, off + k);
      rc = 1;
    }
  }
  else
    printf ("%016" PRIx64 "\n", fnv1a64 (buf, len));
  free (want);
  free (buf);
  close (fd);
  return rc;
}

/* "FIRST-LAST[,FIRST-LAST...]" into bad[], at most MAXBAD ranges. */
static unsigned
parse_bad (const char *s, struct bad *bad)
{
  unsigned n = 0;
  char *copy = strdup (s), *save = NULL, *tok;

  if (!copy)
    exit (2);
  for (tok = strtok_r (copy, ",", &save); tok; tok = strtok_r (NULL, ",", &save)) {
    char *dash = strchr (tok, '-');

    if (!dash || n == MAXBAD) {
      fprintf (stderr, "zntrace: --bad: expected up to %d FIRST-LAST ranges, got '%s'\n",
               MAXBAD, s);
      exit (2);
    }
    *dash = '\0';
    bad[n].first = arg_u64 (tok, "bad range start");
    bad[n].last = arg_u64 (dash + 1, "bad range end");
    if (bad[n].last < bad[n].first) {
      fprintf (stderr, "zntrace: --bad: range %s-%s ends before it starts\n", tok, dash + 1);
      exit (2);
    }
    n++;
  }
  free (copy);
  return n;
}

static int
trace_main (int argc, char **argv)
{
  struct bad bad[MAXBAD];
  unsigned nbad = 0;
  bool initial = false, full_wp_end = false;
  int k = 2;

  for (; k < argc && strncmp (argv[k], "--", 2) == 0; k++) {
    if (strcmp (argv[k], "--initial") == 0)
      initial = true;
    else if (strcmp (argv[k], "--full-wp-end") == 0)
      full_wp_end = true;
    else if (strncmp (argv[k], "--bad=", 6) == 0)
      nbad = parse_bad (argv[k] + 6, bad);
    else
      usage ();
  }
  if (argc - k != 3)
    usage ();
  return cmd_trace (argv[k], arg_u64 (argv[k + 1], "seed"), arg_u64 (argv[k + 2], "op count"),
                    initial, full_wp_end, bad, nbad);
}

static void
usage (void)
{
  fputs ("usage: zntrace trace [--initial] [--full-wp-end] [--bad=FIRST-LAST[,...]] DEV SEED NOPS\n"
         "       zntrace write DEV BYTE-OFFSET BYTES TAG\n"
         "       zntrace seqwrite DEV BYTE-OFFSET CHUNK COUNT TAG\n"
         "       zntrace expect DEV BYTE-OFFSET BYTES TAG\n"
         "       zntrace sum DEV BYTE-OFFSET BYTES\n", stderr);
  exit (2);
}

int
main (int argc, char **argv)
{
  if (argc < 2)
    usage ();
  if (strcmp (argv[1], "trace") == 0)
    return trace_main (argc, argv);
  if (strcmp (argv[1], "write") == 0 && argc == 6)
    return cmd_write (argv[2], arg_u64 (argv[3], "offset"), arg_u64 (argv[4], "length"),
                      arg_u64 (argv[5], "tag"), false);
  if (strcmp (argv[1], "seqwrite") == 0 && argc == 7) {
    uint64_t off = arg_u64 (argv[3], "offset"), chunk = arg_u64 (argv[4], "chunk");
    uint64_t count = arg_u64 (argv[5], "count"), tag = arg_u64 (argv[6], "tag");

    for (uint64_t k = 0; k < count; k++)
      if (cmd_write (argv[2], off + k * chunk, chunk, tag, true) != 0) {
        printf ("write %" PRIu64 " of %" PRIu64 " failed\n", k + 1, count);
        return 1;
      }
    return 0;
  }
  if (strcmp (argv[1], "expect") == 0 && argc == 6)
    return cmd_read (argv[2], arg_u64 (argv[3], "offset"), arg_u64 (argv[4], "length"),
                     true, arg_u64 (argv[5], "tag"));
  if (strcmp (argv[1], "sum") == 0 && argc == 5)
    return cmd_read (argv[2], arg_u64 (argv[3], "offset"), arg_u64 (argv[4], "length"),
                     false, 0);
  usage ();
  return 2;
}
