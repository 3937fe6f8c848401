/* Tests of file-backed zones (backing_dir, lib/store.c) against the
 * model: a restart gives back every zone, the data, the bad blocks and the
 * READONLY and OFFLINE zones; each refusal names its cause and leaves DIR
 * as it was; a directory laid out as zloop makes it opens, and one that
 * zonednull made has zloop's layout; with cache_size a power cycle and a
 * killed process lose exactly the unflushed writes; a 20 TiB device
 * costs only the disk space of its data, and few descriptors.
 *
 * ZONEDNULL_TEST_STORE_NO_SCALE=1 leaves out the 20 TiB device (81,920
 * zone files), which is slow under valgrind.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "zoned.h"
#include "params.h"
#include "../common/check.h"
#include "../common/dev.h"

#define MIB_SECTORS 2048
#define META "zonednull.meta"
/* lib/store.c's FD_SLOTS, the zone files a device keeps open, and the
 * one its filler of a new directory's files may hold.
 */
#define MAX_ZONE_FDS (64 + 1)

static char top[512];          /* this run's temporary directory */

/* ---- helpers ------------------------------------------------------------ */

static int
rm_entry (const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
  (void) sb; (void) flag; (void) ftw;
  return remove (path);
}

static void
rm_tree (const char *path)
{
  nftw (path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A new, absent path under top (the device makes it). */
static const char *
path_in_top (char *buf, size_t len, const char *name)
{
  snprintf (buf, len, "%s/%s", top, name);
  rm_tree (buf);
  return buf;
}

static struct zn_config
store_cfg (uint64_t size, uint64_t zone_size, uint64_t cap, uint32_t conv,
           uint32_t blocksize, const char *dir)
{
  struct zn_config c = geometry_config (size, zone_size, cap, conv,
                                       blocksize);

  c.backing_dir = dir;
  return c;
}

static struct zn_zone
zone_at (struct zn_dev *d, uint32_t zno)
{
  struct zn_zone z;

  CHECK_EQ (zn_report_zones (d, (uint64_t) zno * zn_dev_geometry (d)->
                             zone_sectors, &z, 1), 1);
  return z;
}

static uint64_t
zstart (struct zn_dev *d, uint32_t zno)
{
  return (uint64_t) zno * zn_dev_geometry (d)->zone_sectors;
}

#define EXPECT_ZONE(d, zno, cond_, wp_off)                              \
  do {                                                                  \
    struct zn_zone ez_ = zone_at ((d), (zno));                          \
    CHECK_EQ (ez_.cond, (cond_));                                       \
    CHECK_EQ (ez_.wp - ez_.start, (wp_off));                            \
  } while (0)

#define EXPECT_COUNTERS(d, imp_, exp_, closed_)                         \
  do {                                                                  \
    struct zn_counters ec_;                                             \
    zn_get_counters ((d), &ec_);                                        \
    CHECK_EQ (ec_.imp_open, (imp_));                                    \
    CHECK_EQ (ec_.exp_open, (exp_));                                    \
    CHECK_EQ (ec_.closed, (closed_));                                   \
  } while (0)

/* Writes the pattern of tag at sector; 0 or the errno. */
static int
write_tag (struct zn_dev *d, uint64_t sector, uint64_t n, unsigned tag,
           bool fua)
{
  unsigned char *buf = malloc (n * ZN_SECTOR_SIZE);
  int r;

  CHECK (buf != NULL);
  fill_pattern (buf, sector, n, tag);
  r = fua ? zn_write_fua (d, buf, sector, n) : zn_write (d, buf, sector, n);
  free (buf);
  return r;
}

/* Appends to zone zno and checks that the data landed at want. */
static void
append_tag (struct zn_dev *d, uint32_t zno, uint64_t n, unsigned tag,
            bool fua, uint64_t want)
{
  unsigned char *buf = malloc (n * ZN_SECTOR_SIZE);
  uint64_t at = 0;

  CHECK (buf != NULL);
  fill_pattern (buf, want, n, tag);
  CHECK_EQ (zn_zone_append (d, buf, zstart (d, zno), n, fua, &at), 0);
  CHECK_EQ (at, want);
  free (buf);
}

/* What n sectors at sector must read as: the pattern of tag, zeros
 * (never written) or 0xFF (at or past the wp).
 */
#define ZEROS (-1)
#define ONES (-2)

static void
expect_data (struct zn_dev *d, uint64_t sector, uint64_t n, int tag)
{
  unsigned char *got = malloc (n * ZN_SECTOR_SIZE);
  unsigned char *want = malloc (n * ZN_SECTOR_SIZE);

  CHECK (got && want);
  if (tag >= 0)
    fill_pattern (want, sector, n, (unsigned) tag);
  else
    memset (want, tag == ZEROS ? 0 : 0xFF, n * ZN_SECTOR_SIZE);
  CHECK_EQ (zn_read (d, got, sector, n), 0);
  if (memcmp (got, want, n * ZN_SECTOR_SIZE) != 0) {
    fprintf (stderr, "data of sectors %" PRIu64 "+%" PRIu64 " differ from "
             "%d\n", sector, n, tag);
    CHECK (!"data as expected");
  }
  free (got);
  free (want);
}

static int
create_errno (const struct zn_config *c, char *err, size_t errlen)
{
  struct zn_dev *d;

  err[0] = '\0';
  errno = 0;
  d = zn_dev_create (c, err, errlen);
  if (d) {
    zn_dev_destroy (d);
    fprintf (stderr, "zn_dev_create accepted what it must refuse\n");
    return 0;
  }
  return errno;
}

static void
expect_in (const char *msg, const char *part)
{
  if (strstr (msg, part) == NULL) {
    fprintf (stderr, "message \"%s\" does not name \"%s\"\n", msg, part);
    CHECK (!"the message names the cause");
  }
}

/* Every name, size, mode and mtime in dir, the directory's own mtime and
 * the metadata file's text: anything a refused start could change.
 */
static char *
listing (const char *dir)
{
  struct dirent **names;
  struct stat sb;
  char path[4200], line[512];
  size_t cap = 1 << 16, len = 0;
  char *out = malloc (cap);
  int n = scandir (dir, &names, NULL, alphasort);
  FILE *fp;

  CHECK (out != NULL);
  out[0] = '\0';
  if (n < 0)
    return out;                 /* absent: an empty listing */
  CHECK (stat (dir, &sb) == 0);
  len += (size_t) snprintf (out, cap, ". %ld.%09ld\n", (long) sb.st_mtim.tv_sec,
                            sb.st_mtim.tv_nsec);
  for (int i = 0; i < n; i++) {
    snprintf (path, sizeof path, "%s/%s", dir, names[i]->d_name);
    CHECK (lstat (path, &sb) == 0);
    snprintf (line, sizeof line, "%s %jd %o %ld.%09ld\n", names[i]->d_name,
              (intmax_t) sb.st_size, (unsigned) sb.st_mode,
              (long) sb.st_mtim.tv_sec, sb.st_mtim.tv_nsec);
    while (len + strlen (line) + 1 > cap)
      CHECK ((out = realloc (out, cap *= 2)) != NULL);
    strcpy (out + len, line);
    len += strlen (line);
    free (names[i]);
  }
  free (names);
  snprintf (path, sizeof path, "%s/" META, dir);
  if ((fp = fopen (path, "r")) != NULL) {
    while (fgets (line, sizeof line, fp)) {
      while (len + strlen (line) + 1 > cap)
        CHECK ((out = realloc (out, cap *= 2)) != NULL);
      strcpy (out + len, line);
      len += strlen (line);
    }
    fclose (fp);
  }
  return out;
}

#define EXPECT_UNCHANGED(before, dir)                                   \
  do {                                                                  \
    char *after_ = listing (dir);                                       \
    if (strcmp ((before), after_) != 0)                                 \
      fprintf (stderr, "before:\n%s\nafter:\n%s\n", (before), after_);  \
    CHECK (strcmp ((before), after_) == 0);                             \
    free (after_);                                                      \
  } while (0)

/* Expects a refusal with errno want naming each of the parts, and no
 * change in dir.
 */
static void
expect_refused (const struct zn_config *c, int want, const char *dir,
                const char *part1, const char *part2)
{
  char err[512];
  char *before = listing (dir);
  int e = create_errno (c, err, sizeof err);

  if (e != want)
    fprintf (stderr, "refusal: errno %d (%s), expected %d; \"%s\"\n", e,
             strerror (e), want, err);
  CHECK_EQ (e, want);
  expect_in (err, c->backing_dir);
  if (part1)
    expect_in (err, part1);
  if (part2)
    expect_in (err, part2);
  EXPECT_UNCHANGED (before, dir);
  free (before);
}

static void
set_file_size (const char *dir, const char *name, off_t size)
{
  char path[4200];

  snprintf (path, sizeof path, "%s/%s", dir, name);
  CHECK (truncate (path, size) == 0);
}

static off_t
file_size (const char *dir, const char *name)
{
  char path[4200];
  struct stat sb;

  snprintf (path, sizeof path, "%s/%s", dir, name);
  if (stat (path, &sb) < 0)
    return -1;
  return sb.st_size;
}

/* Descriptors of this process open on a file in dir. */
static int
fds_in (const char *dir)
{
  char link[4200], prefix[4200];
  size_t plen = (size_t) snprintf (prefix, sizeof prefix, "%s/", dir);
  DIR *d = opendir ("/proc/self/fd");
  struct dirent *e;
  int n = 0;

  CHECK (d != NULL);
  while ((e = readdir (d)) != NULL) {
    char path[300];
    ssize_t l;

    snprintf (path, sizeof path, "/proc/self/fd/%s", e->d_name);
    l = readlink (path, link, sizeof link - 1);
    if (l <= 0)
      continue;
    link[l] = '\0';
    if (strncmp (link, prefix, plen) == 0)
      n++;
  }
  closedir (d);
  return n;
}

static double
now (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* ---- 1. a restart keeps everything ------------------------------------ */

/* The device the test expects: what each byte reads as (from the test's
 * own writes) and each zone's condition and wp.
 */
struct shadow {
  uint64_t sectors, zone_sectors;
  unsigned char *img;
  struct zn_zone *zones;
  uint32_t nr_zones;
};

static void
shadow_init (struct shadow *s, struct zn_dev *d)
{
  const struct zn_geometry *g = zn_dev_geometry (d);

  s->sectors = g->capacity;
  s->zone_sectors = g->zone_sectors;
  s->nr_zones = g->nr_zones;
  s->img = calloc (g->capacity, ZN_SECTOR_SIZE);
  s->zones = calloc (g->nr_zones, sizeof *s->zones);
  CHECK (s->img && s->zones);
}

static void
shadow_free (struct shadow *s)
{
  free (s->img);
  free (s->zones);
}

static void
sh_write (struct shadow *s, struct zn_dev *d, uint64_t sector, uint64_t n,
          unsigned tag)
{
  CHECK_EQ (write_tag (d, sector, n, tag, false), 0);
  fill_pattern (s->img + sector * ZN_SECTOR_SIZE, sector, n, tag);
}

static void
sh_append (struct shadow *s, struct zn_dev *d, uint32_t zno, uint64_t n,
           unsigned tag, bool fua)
{
  uint64_t at = zone_at (d, zno).wp;

  append_tag (d, zno, n, tag, fua, at);
  fill_pattern (s->img + at * ZN_SECTOR_SIZE, at, n, tag);
}

/* The report now, as the zones the shadow expects. */
static void
sh_take_report (struct shadow *s, struct zn_dev *d)
{
  CHECK_EQ (zn_report_zones (d, 0, s->zones, s->nr_zones), s->nr_zones);
}

/* A restart's rules: an open zone comes back CLOSED, or EMPTY if nothing
 * was written to it; a FULL zone's wp is at its capacity, as its file's
 * size says; the rest stays.
 */
static void
sh_restart (struct shadow *s)
{
  for (uint32_t i = 0; i < s->nr_zones; i++) {
    struct zn_zone *z = &s->zones[i];

    if (z->cond == ZN_COND_IMP_OPEN || z->cond == ZN_COND_EXP_OPEN)
      z->cond = z->wp == z->start ? ZN_COND_EMPTY : ZN_COND_CLOSED;
    else if (z->cond == ZN_COND_FULL)
      z->wp = z->start + z->capacity;
  }
}

static bool
overlaps_bad (const uint64_t *first, const uint64_t *last, size_t nr,
              uint64_t sector, uint64_t n)
{
  for (size_t i = 0; i < nr; i++)
    if (first[i] < sector + n && last[i] >= sector)
      return true;
  return false;
}

/* Every zone, the counters and every readable byte as the shadow says;
 * reads that meet a bad block or an OFFLINE zone fail.
 */
static void
sh_verify (struct shadow *s, struct zn_dev *d)
{
  const struct zn_geometry *g = zn_dev_geometry (d);
  struct zn_zone *got = calloc (s->nr_zones, sizeof *got);
  uint64_t first[ZN_BADBLOCKS_MAX], last[ZN_BADBLOCKS_MAX];
  size_t nr_bb = zn_badblocks_list (d, first, last, ZN_BADBLOCKS_MAX);
  uint64_t bs = g->block_size / ZN_SECTOR_SIZE, chunk = 64;
  unsigned char *buf = malloc (chunk * ZN_SECTOR_SIZE);
  unsigned imp = 0, exp = 0, closed = 0;

  CHECK (got && buf);
  CHECK_EQ (zn_report_zones (d, 0, got, s->nr_zones), s->nr_zones);
  for (uint32_t i = 0; i < s->nr_zones; i++) {
    const struct zn_zone *w = &s->zones[i];

    if (got[i].cond != w->cond || got[i].wp != w->wp)
      fprintf (stderr, "zone %" PRIu32 ": %s wp %" PRIu64 ", expected %s wp %"
               PRIu64 "\n", i, zn_cond_name (got[i].cond), got[i].wp,
               zn_cond_name (w->cond), w->wp);
    CHECK_EQ (got[i].cond, w->cond);
    CHECK_EQ (got[i].wp, w->wp);
    CHECK_EQ (got[i].start, w->start);
    CHECK_EQ (got[i].len, w->len);
    CHECK_EQ (got[i].capacity, w->capacity);
    CHECK_EQ (got[i].type, w->type);
    imp += w->cond == ZN_COND_IMP_OPEN;
    exp += w->cond == ZN_COND_EXP_OPEN;
    closed += w->cond == ZN_COND_CLOSED;
  }
  EXPECT_COUNTERS (d, imp, exp, closed);

  for (uint64_t sec = 0; sec < s->sectors; sec += chunk) {
    const struct zn_zone *z = &s->zones[sec / s->zone_sectors];
    uint64_t n = s->sectors - sec < chunk ? s->sectors - sec : chunk;
    bool bad = overlaps_bad (first, last, nr_bb, sec, n);
    int r = zn_read (d, buf, sec, n);

    if (z->cond == ZN_COND_OFFLINE) {
      CHECK_EQ (r, -EIO);
      continue;
    }
    if (bad) {
      CHECK_EQ (r, -EIO);
      /* The blocks around the bad ones still read. */
      for (uint64_t b = sec; b < sec + n; b += bs)
        if (!overlaps_bad (first, last, nr_bb, b, bs))
          CHECK_EQ (zn_read (d, buf + (b - sec) * ZN_SECTOR_SIZE, b, bs), 0);
        else
          CHECK_EQ (zn_read (d, buf + (b - sec) * ZN_SECTOR_SIZE, b, bs),
                    -EIO);
    }
    else
      CHECK_EQ (r, 0);
    for (uint64_t i = 0; i < n; i++) {
      const unsigned char *p = buf + i * ZN_SECTOR_SIZE;
      bool below_wp = z->type == ZN_ZONE_CONVENTIONAL || sec + i < z->wp;
      int differs;

      if (bad && overlaps_bad (first, last, nr_bb, sec + i - (sec + i) % bs,
                               bs))
        continue;               /* nothing read there */
      if (below_wp)
        differs = memcmp (p, s->img + (sec + i) * ZN_SECTOR_SIZE,
                          ZN_SECTOR_SIZE);
      else {
        differs = 0;
        for (unsigned k = 0; k < ZN_SECTOR_SIZE; k++)
          differs |= p[k] != 0xFF;
      }
      if (differs)
        fprintf (stderr, "sector %" PRIu64 " (zone %" PRIu64 ", %s) reads "
                 "wrong\n", sec + i, (sec + i) / s->zone_sectors,
                 below_wp ? "below the wp" : "past the wp");
      CHECK (!differs);
    }
  }
  free (got);
  free (buf);
}

static void
expect_badblocks (struct zn_dev *d, const uint64_t *wfirst,
                  const uint64_t *wlast, size_t wnr)
{
  uint64_t first[ZN_BADBLOCKS_MAX], last[ZN_BADBLOCKS_MAX];

  CHECK_EQ (zn_badblocks_list (d, first, last, ZN_BADBLOCKS_MAX), wnr);
  for (size_t i = 0; i < wnr; i++) {
    CHECK_EQ (first[i], wfirst[i]);
    CHECK_EQ (last[i], wlast[i]);
  }
}

/* limits: the device has zone_max_open=2, zone_max_active=5, so the
 * order of the steps keeps within them.
 */
static void
restart_case (const char *name, uint64_t size, uint64_t zone_size,
              uint64_t cap, uint32_t conv, uint32_t blocksize, bool limits)
{
  char dir[1024];
  struct zn_config c = store_cfg (size, zone_size, cap, conv, blocksize,
                                  path_in_top (dir, sizeof dir, name));
  struct zn_dev *d;
  struct shadow s;
  uint64_t L, C;
  /* The sequential zones by their role. */
  uint32_t s_empty = conv, s_imp = conv + 1, s_exp_empty = conv + 2,
    s_exp = conv + 3, s_closed = conv + 4, s_full = conv + 5,
    s_finished = conv + 6, s_finished_empty = conv + 7, s_ro = conv + 8,
    s_off = conv + 9, s_append = conv + 10, s_reset = conv + 11,
    s_ro_twice = conv + 12;
  uint64_t bb_first[3], bb_last[3];
  struct zn_params p;
  char arg[64], err[256];

  if (limits) {
    c.zone_max_open = 2;
    c.zone_max_active = 5;
  }
  d = create (&c);
  CHECK (!zn_dev_restored (d));
  shadow_init (&s, d);
  L = zn_dev_geometry (d)->zone_sectors;
  C = zn_dev_geometry (d)->zone_capacity;
  CHECK (zn_dev_geometry (d)->nr_zones > s_ro_twice);

  /* Conventional data, at both ends of a zone and inside another. */
  sh_write (&s, d, 0, 64, 1);
  sh_write (&s, d, L - 16, 16, 2);
  if (conv > 1)
    sh_write (&s, d, L + L / 2, 32, 3);

  /* The zones that end FULL, READONLY, OFFLINE or EMPTY first, so that
   * with limits the open and active ones below fit.
   */
  sh_write (&s, d, zstart (d, s_full), C - 64, 4);
  sh_write (&s, d, zstart (d, s_full) + C - 64, 64, 5);
  sh_write (&s, d, zstart (d, s_finished), 32, 6);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_FINISH, zstart (d, s_finished), L), 0);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_FINISH, zstart (d, s_finished_empty), L),
            0);
  sh_write (&s, d, zstart (d, s_ro), 16, 7);
  CHECK_EQ (zn_zone_set_readonly (d, zstart (d, s_ro) + 5), 0);
  sh_write (&s, d, zstart (d, s_off), 16, 8);
  CHECK_EQ (zn_zone_set_offline (d, zstart (d, s_off)), 0);
  sh_write (&s, d, zstart (d, s_reset), 16, 9);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_RESET, zstart (d, s_reset), L), 0);
  memset (s.img + zstart (d, s_reset) * ZN_SECTOR_SIZE, 0, 16 * 512);
  CHECK_EQ (zn_zone_set_readonly (d, zstart (d, s_ro_twice)), 0);
  CHECK_EQ (zn_zone_set_readonly (d, zstart (d, s_ro_twice)), 0);

  sh_append (&s, d, s_append, 8, 10, false);
  sh_append (&s, d, s_append, 8, 11, true);
  sh_append (&s, d, s_append, 16, 12, false);
  if (limits)
    CHECK_EQ (zn_zone_mgmt (d, ZN_OP_CLOSE, zstart (d, s_append), L), 0);
  sh_write (&s, d, zstart (d, s_imp), 40, 13);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_OPEN, zstart (d, s_exp), L), 0);
  sh_write (&s, d, zstart (d, s_exp), 24, 14);
  sh_write (&s, d, zstart (d, s_closed), 16, 15);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_CLOSE, zstart (d, s_closed), L), 0);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_OPEN, zstart (d, s_exp_empty), L), 0);

  /* Bad blocks over written data, conventional and sequential, and in
   * an empty zone.
   */
  bb_first[0] = 16, bb_last[0] = 23;
  bb_first[1] = zstart (d, s_empty) + 64, bb_last[1] = zstart (d, s_empty) + 71;
  bb_first[2] = zstart (d, s_closed) + 8, bb_last[2] = zstart (d, s_closed) + 15;
  for (int i = 0; i < 3; i++)
    CHECK_EQ (zn_badblocks_set (d, bb_first[i], bb_last[i]), 0);

  EXPECT_ZONE (d, s_empty, ZN_COND_EMPTY, 0);
  EXPECT_ZONE (d, s_exp_empty, ZN_COND_EXP_OPEN, 0);
  EXPECT_ZONE (d, s_exp, ZN_COND_EXP_OPEN, 24);
  EXPECT_ZONE (d, s_closed, ZN_COND_CLOSED, 16);
  EXPECT_ZONE (d, s_full, ZN_COND_FULL, C);
  EXPECT_ZONE (d, s_ro_twice, ZN_COND_EMPTY, 0);
  if (limits)                   /* s_closed's write closed it */
    EXPECT_ZONE (d, s_imp, ZN_COND_CLOSED, 40);
  else
    EXPECT_ZONE (d, s_imp, ZN_COND_IMP_OPEN, 40);
  sh_take_report (&s, d);
  sh_verify (&s, d);
  zn_dev_destroy (d);

  /* The sequential files' sizes are the wps. */
  {
    char nm[32];

    snprintf (nm, sizeof nm, "seq-%06" PRIu32, s_imp);
    CHECK_EQ (file_size (dir, nm), 40 * 512);
    snprintf (nm, sizeof nm, "seq-%06" PRIu32, s_finished);
    CHECK_EQ (file_size (dir, nm), (off_t) C * 512);
    snprintf (nm, sizeof nm, "seq-%06" PRIu32, s_reset);
    CHECK_EQ (file_size (dir, nm), 0);
  }

  /* The second life. */
  d = create (&c);
  CHECK (zn_dev_restored (d));
  sh_restart (&s);
  EXPECT_ZONE (d, s_imp, ZN_COND_CLOSED, 40);
  EXPECT_ZONE (d, s_exp_empty, ZN_COND_EMPTY, 0);
  EXPECT_ZONE (d, s_exp, ZN_COND_CLOSED, 24);
  EXPECT_ZONE (d, s_closed, ZN_COND_CLOSED, 16);
  EXPECT_ZONE (d, s_full, ZN_COND_FULL, C);
  EXPECT_ZONE (d, s_finished, ZN_COND_FULL, C);
  EXPECT_ZONE (d, s_finished_empty, ZN_COND_FULL, C);
  EXPECT_ZONE (d, s_append, ZN_COND_CLOSED, 32);
  EXPECT_ZONE (d, s_reset, ZN_COND_EMPTY, 0);
  EXPECT_ZONE (d, s_ro_twice, ZN_COND_EMPTY, 0);
  CHECK_EQ (zone_at (d, s_ro).cond, ZN_COND_READONLY);
  CHECK_EQ (zone_at (d, s_off).cond, ZN_COND_OFFLINE);
  sh_verify (&s, d);
  expect_badblocks (d, bb_first, bb_last, 3);

  /* The command line's zone_readonly and badblocks were applied when DIR
   * was made: not again.
   */
  params_init (&p);
  snprintf (arg, sizeof arg, "zone_readonly=%" PRIu64, zstart (d, s_empty));
  CHECK_EQ (params_set (&p, arg, err, sizeof err), 0);
  snprintf (arg, sizeof arg, "zone_offline=%" PRIu64, zstart (d, s_ro));
  CHECK_EQ (params_set (&p, arg, err, sizeof err), 0);
  CHECK_EQ (params_set (&p, "badblocks=+100-107", err, sizeof err), 0);
  CHECK_EQ (params_set (&p, "badblocks=-16-23", err, sizeof err), 0);
  CHECK_EQ (params_apply (&p, d, err, sizeof err), 0);
  params_free (&p);
  sh_verify (&s, d);
  expect_badblocks (d, bb_first, bb_last, 3);

  /* Changes of the second life reach the third. */
  sh_write (&s, d, zstart (d, s_imp) + 40, 8, 16);
  CHECK_EQ (zn_zone_set_readonly (d, zstart (d, s_ro)), 0);    /* off */
  CHECK_EQ (zn_badblocks_clear (d, bb_first[0], bb_last[0]), 0);
  CHECK_EQ (zn_zone_set_offline (d, zstart (d, s_finished_empty)), 0);
  sh_take_report (&s, d);
  EXPECT_ZONE (d, s_imp, ZN_COND_IMP_OPEN, 48);
  EXPECT_ZONE (d, s_ro, ZN_COND_EMPTY, 0);
  zn_dev_destroy (d);

  d = create (&c);
  CHECK (zn_dev_restored (d));
  sh_restart (&s);
  EXPECT_ZONE (d, s_imp, ZN_COND_CLOSED, 48);
  EXPECT_ZONE (d, s_ro, ZN_COND_EMPTY, 0);
  CHECK_EQ (zone_at (d, s_finished_empty).cond, ZN_COND_OFFLINE);
  sh_verify (&s, d);
  expect_badblocks (d, bb_first + 1, bb_last + 1, 2);
  zn_dev_destroy (d);

  shadow_free (&s);
  rm_tree (dir);
}

/* params_apply does apply the settings to a device that DIR did not
 * hold: the other side of the rule above.
 */
static void
test_params_apply_new_device (void)
{
  char dir[1024], err[256];
  struct zn_config c = store_cfg (8, 1, 0, 1, 512,
                                  path_in_top (dir, sizeof dir, "params"));
  struct zn_params p;
  struct zn_dev *d = create (&c);
  uint64_t first, last;

  params_init (&p);
  CHECK_EQ (params_set (&p, "zone_readonly=4096", err, sizeof err), 0);
  CHECK_EQ (params_set (&p, "badblocks=+100-107", err, sizeof err), 0);
  CHECK_EQ (params_apply (&p, d, err, sizeof err), 0);
  params_free (&p);
  CHECK_EQ (zone_at (d, 2).cond, ZN_COND_READONLY);
  CHECK_EQ (zn_badblocks_list (d, &first, &last, 1), 1);
  zn_dev_destroy (d);
  /* ... and DIR keeps them. */
  d = create (&c);
  CHECK_EQ (zone_at (d, 2).cond, ZN_COND_READONLY);
  CHECK_EQ (zn_badblocks_list (d, &first, &last, 1), 1);
  CHECK_EQ (first, 100);
  CHECK_EQ (last, 107);
  zn_dev_destroy (d);
  rm_tree (dir);
}

static void
test_restart (void)
{
  /* zone_capacity < zone_size, 4 KiB blocks, no limits. */
  restart_case ("restart-cap", 32, 2, 1, 2, 4096, false);
  /* zone_max_open=2, zone_max_active=5. */
  restart_case ("restart-limits", 16, 1, 0, 1, 512, true);
  test_params_apply_new_device ();
}

/* ---- 2. refusals -------------------------------------------------------- */

/* In a child with a mount namespace of its own: a read-only DIR and one
 * that cannot be made in a read-only file system.  Root ignores modes, so
 * only a read-only mount refuses it.  Exit 77 when it cannot mount.
 */
static int
refuse_read_only (const char *held)
{
  char ro[1024], bind[1024], sub[2048];
  struct zn_config c;

  /* "none" where the kernel ignores the argument: valgrind checks it. */
  if (unshare (CLONE_NEWNS) < 0
      || mount ("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0)
    return 77;
  snprintf (ro, sizeof ro, "%s/ro-empty", top);
  snprintf (bind, sizeof bind, "%s/ro-bind", top);
  if (mkdir (ro, 0700) < 0 || mkdir (bind, 0700) < 0
      || mount ("tmpfs", ro, "tmpfs", MS_RDONLY, "size=1m") < 0
      || mount (held, bind, "none", MS_BIND, NULL) < 0
      || mount ("none", bind, "none", MS_REMOUNT | MS_BIND | MS_RDONLY,
                NULL) < 0)
    return 77;

  /* An empty directory on a read-only file system. */
  c = store_cfg (16, 2, 1, 1, 4096, ro);
  expect_refused (&c, EROFS, ro, "cannot be written", NULL);
  /* A missing one there: it cannot be made. */
  snprintf (sub, sizeof sub, "%s/dev", ro);
  c.backing_dir = sub;
  expect_refused (&c, EROFS, ro, "cannot be made", NULL);
  /* A device's directory, mounted read-only. */
  c.backing_dir = bind;
  expect_refused (&c, EROFS, bind, "cannot be written", NULL);
  return 0;
}

static void
test_refusals (void)
{
  char dir[1024], other[2048], afile[1024];
  struct zn_config base = store_cfg (16, 2, 1, 1, 4096,
                                     path_in_top (dir, sizeof dir, "refuse"));
  struct zn_config c;
  struct zn_dev *d = create (&base);
  char err[512];
  pid_t pid;
  int status;

  /* Three CLOSED zones once it restarts. */
  for (uint32_t z = 1; z <= 3; z++)
    CHECK_EQ (write_tag (d, zstart (d, z), 16, z, false), 0);
  zn_dev_destroy (d);

  /* The geometry, key by key. */
  c = base, c.size = 32;
  expect_refused (&c, EINVAL, dir, "size=32: ", "made with size=16;");
  c = base, c.zone_size = 4;
  expect_refused (&c, EINVAL, dir, "zone_size=4: ", "made with zone_size=2");
  c = base, c.zone_capacity = 2;
  expect_refused (&c, EINVAL, dir, "zone_capacity=2: ",
                  "made with zone_capacity=1");
  c = base, c.zone_nr_conv = 2;
  expect_refused (&c, EINVAL, dir, "zone_nr_conv=2: ",
                  "made with zone_nr_conv=1");
  c = base, c.blocksize = 512;
  expect_refused (&c, EINVAL, dir, "blocksize=512: ",
                  "made with blocksize=4096");

  /* Zone files that no device could have written. */
  set_file_size (dir, "seq-000002", (1 << 20) + 4096);
  expect_refused (&base, EINVAL, dir, "seq-000002", "capacity");
  set_file_size (dir, "seq-000002", 16 * 512 + 512);
  expect_refused (&base, EINVAL, dir, "seq-000002", "4096-byte blocks");
  set_file_size (dir, "seq-000002", 16 * 512);

  /* Three CLOSED zones, two allowed to be active. */
  c = base, c.zone_max_active = 2;
  expect_refused (&c, EINVAL, dir, "zone_max_active=2", "3 CLOSED");

  /* A directory that cannot be made: its parent is missing, or a file is
   * in the way.
   */
  c = base;
  snprintf (other, sizeof other, "%s/missing/dev", top);
  c.backing_dir = other;
  CHECK_EQ (create_errno (&c, err, sizeof err), ENOENT);
  expect_in (err, other);
  expect_in (err, "cannot be made");
  snprintf (other, sizeof other, "%s/missing", top);
  CHECK (access (other, F_OK) < 0 && errno == ENOENT);
  snprintf (afile, sizeof afile, "%s/a-file", top);
  {
    FILE *fp = fopen (afile, "w");

    CHECK (fp && fputs ("not a directory\n", fp) >= 0 && fclose (fp) == 0);
  }
  c.backing_dir = afile;
  CHECK_EQ (create_errno (&c, err, sizeof err), ENOTDIR);
  expect_in (err, afile);
  CHECK_EQ (file_size (top, "a-file"), 16);
  snprintf (other, sizeof other, "%s/dev", afile);
  c.backing_dir = other;
  CHECK_EQ (create_errno (&c, err, sizeof err), ENOTDIR);
  expect_in (err, other);
  CHECK_EQ (file_size (top, "a-file"), 16);
  unlink (afile);

  /* A read-only directory, in a child that can mount. */
  pid = fork ();
  CHECK (pid >= 0);
  if (pid == 0)
    _exit (refuse_read_only (dir));
  CHECK (waitpid (pid, &status, 0) == pid);
  CHECK (WIFEXITED (status));
  if (WEXITSTATUS (status) == 77)
    fprintf (stderr, "test-files-model: SKIP read-only directories: cannot mount "
             "in a mount namespace of its own\n");
  else
    CHECK_EQ (WEXITSTATUS (status), 0);

  /* Held by a running device: in this process (flock is per open file
   * description, so a second open of DIR conflicts), and in another.
   */
  d = create (&base);
  CHECK (zn_dev_restored (d));
  expect_refused (&base, EBUSY, dir, "another running zonednull", NULL);
  pid = fork ();
  CHECK (pid >= 0);
  if (pid == 0) {
    char child_err[512];
    int e = create_errno (&base, child_err, sizeof child_err);

    /* The parent's copy, for the leak checker; the lock is the open file
     * description's, which the parent keeps.
     */
    zn_dev_destroy (d);
    _exit (e == EBUSY && strstr (child_err, "another running zonednull")
           ? 0 : 1);
  }
  CHECK (waitpid (pid, &status, 0) == pid);
  CHECK (WIFEXITED (status) && WEXITSTATUS (status) == 0);
  EXPECT_ZONE (d, 2, ZN_COND_CLOSED, 16);
  zn_dev_destroy (d);
  /* Released at destroy. */
  d = create (&base);
  EXPECT_COUNTERS (d, 0, 0, 3);
  expect_data (d, zstart (d, 3), 16, 3);
  zn_dev_destroy (d);
  /* Exactly as many CLOSED zones as zone_max_active allows. */
  c = base, c.zone_max_active = 3;
  d = create (&c);
  EXPECT_COUNTERS (d, 0, 0, 3);
  zn_dev_destroy (d);
  rm_tree (dir);
}

/* ---- 3. zloop's layout ------------------------------------------------- */

static void
write_file (const char *dir, const char *name, off_t size, uint64_t sector,
            uint64_t nr, unsigned tag)
{
  char path[4200];
  unsigned char *buf = malloc (nr * ZN_SECTOR_SIZE + 1);
  int fd;

  CHECK (buf != NULL);
  snprintf (path, sizeof path, "%s/%s", dir, name);
  fd = open (path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  CHECK (fd >= 0);
  CHECK (ftruncate (fd, size) == 0);
  if (nr) {
    /* The zone's data at its offset in the zone: sector is absolute. */
    uint64_t zone_off = (sector % (2 * MIB_SECTORS)) * ZN_SECTOR_SIZE;

    fill_pattern (buf, sector, nr, tag);
    CHECK (pwrite (fd, buf, nr * ZN_SECTOR_SIZE, (off_t) zone_off)
           == (ssize_t) (nr * ZN_SECTOR_SIZE));
  }
  CHECK (close (fd) == 0);
  free (buf);
}

/* zone_size=2 MiB, zone_capacity=1 MiB, 2 conventional zones, 8 zones. */
static void
make_zloop_dir (const char *dir)
{
  const uint64_t Z = 2 * MIB_SECTORS;

  CHECK (mkdir (dir, 0700) == 0);
  write_file (dir, "cnv-000000", 2 << 20, 8, 16, 1);
  write_file (dir, "cnv-000001", 2 << 20, 2 * Z - 32, 32, 2);
  write_file (dir, "seq-000002", 0, 0, 0, 0);
  write_file (dir, "seq-000003", 1 << 20, 3 * Z, MIB_SECTORS, 3);
  write_file (dir, "seq-000004", 64 << 10, 4 * Z, 128, 4);
  write_file (dir, "seq-000005", 512, 5 * Z, 1, 5);
  write_file (dir, "seq-000006", 0, 0, 0, 0);
  write_file (dir, "seq-000007", 0, 0, 0, 0);
}

static void
expect_zloop_device (struct zn_dev *d)
{
  const uint64_t Z = 2 * MIB_SECTORS;

  CHECK_EQ (zone_at (d, 0).cond, ZN_COND_NOT_WP);
  CHECK_EQ (zone_at (d, 1).cond, ZN_COND_NOT_WP);
  EXPECT_ZONE (d, 2, ZN_COND_EMPTY, 0);
  EXPECT_ZONE (d, 3, ZN_COND_FULL, MIB_SECTORS);
  EXPECT_ZONE (d, 4, ZN_COND_CLOSED, 128);
  EXPECT_ZONE (d, 5, ZN_COND_CLOSED, 1);
  EXPECT_ZONE (d, 6, ZN_COND_EMPTY, 0);
  EXPECT_ZONE (d, 7, ZN_COND_EMPTY, 0);
  EXPECT_COUNTERS (d, 0, 0, 2);
  expect_data (d, 0, 8, ZEROS);
  expect_data (d, 8, 16, 1);
  expect_data (d, 24, Z - 24, ZEROS);
  expect_data (d, Z, Z - 32, ZEROS);
  expect_data (d, 2 * Z - 32, 32, 2);
  expect_data (d, 2 * Z, 8, ONES);
  expect_data (d, 3 * Z, MIB_SECTORS, 3);
  expect_data (d, 4 * Z, 128, 4);
  expect_data (d, 4 * Z + 128, 8, ONES);
  expect_data (d, 5 * Z, 1, 5);
  expect_data (d, 5 * Z + 1, 7, ONES);
}

static void
test_zloop_layout (void)
{
  char dir[1024], path[4200];
  struct zn_config c = store_cfg (16, 2, 1, 2, 512,
                                  path_in_top (dir, sizeof dir, "zloop"));
  struct zn_dev *d;
  FILE *fp;
  char text[4096];
  size_t n;

  /* A directory as zloop leaves it, without the metadata file. */
  make_zloop_dir (dir);
  d = create (&c);
  CHECK (zn_dev_restored (d));
  expect_zloop_device (d);
  /* The device goes on from there. */
  CHECK_EQ (write_tag (d, 4 * 4096 + 128, 8, 6, false), 0);
  EXPECT_ZONE (d, 4, ZN_COND_IMP_OPEN, 136);
  zn_dev_destroy (d);

  snprintf (path, sizeof path, "%s/" META, dir);
  fp = fopen (path, "r");
  CHECK (fp != NULL);
  n = fread (text, 1, sizeof text - 1, fp);
  text[n] = '\0';
  fclose (fp);
  expect_in (text, "\nsize 16\n");
  expect_in (text, "\nzone_size 2\n");
  expect_in (text, "\nzone_capacity 1\n");
  expect_in (text, "\nzone_nr_conv 2\n");
  expect_in (text, "\nblocksize 512\n");
  CHECK_EQ (file_size (dir, "seq-000004"), 136 * 512);
  d = create (&c);
  EXPECT_ZONE (d, 4, ZN_COND_CLOSED, 136);
  expect_data (d, 4 * 4096 + 128, 8, 6);
  zn_dev_destroy (d);
  rm_tree (dir);

  /* Without a metadata file the files alone are checked: a zone past the
   * last one, a file of the wrong type for zone_nr_conv.  Nothing is
   * written then, not even the metadata file.
   */
  make_zloop_dir (dir);
  write_file (dir, "seq-000008", 0, 0, 0, 0);
  expect_refused (&c, EINVAL, dir, "seq-000008", "past the last zone");
  snprintf (path, sizeof path, "%s/seq-000008", dir);
  CHECK (unlink (path) == 0);
  write_file (dir, "cnv-000002", 2 << 20, 0, 0, 0);
  snprintf (path, sizeof path, "%s/seq-000002", dir);
  CHECK (unlink (path) == 0);
  expect_refused (&c, EINVAL, dir, "cnv-000002", "zone_nr_conv=2");
  CHECK_EQ (file_size (dir, META), -1);
  rm_tree (dir);
}

static int
entries_in (const char *dir)
{
  struct dirent **names;
  int n = scandir (dir, &names, NULL, NULL);

  for (int i = 0; i < n; i++)
    free (names[i]);
  free (names);
  return n;
}

/* A directory zonednull made holds every file zloop needs, named as zloop
 * names them, and nothing else but the metadata file.
 */
static void
test_layout_for_zloop (void)
{
  char dir[1024], name[32];
  struct zn_config c = store_cfg (24, 2, 1, 3, 512,
                                  path_in_top (dir, sizeof dir, "for-zloop"));
  struct zn_dev *d = create (&c);
  struct dirent **names;
  int n;

  CHECK_EQ (write_tag (d, 5 * 4096, 24, 1, false), 0);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_FINISH, 6 * 4096, 4096), 0);
  /* The files of a new directory are made beside the device, and a stop
   * leaves the rest to the next start: wait for them, with a bound.
   */
  for (int tries = 0; tries < 3000 && entries_in (dir) < 2 + 12 + 1; tries++)
    usleep (10000);
  zn_dev_destroy (d);
  n = scandir (dir, &names, NULL, alphasort);
  CHECK_EQ (n, 2 + 12 + 1);     /* ".", "..", the zones, the metadata */
  for (int i = 0; i < n; i++)
    free (names[i]);
  free (names);
  for (uint32_t i = 0; i < 12; i++) {
    snprintf (name, sizeof name, "%s-%06" PRIu32, i < 3 ? "cnv" : "seq", i);
    if (i < 3)
      CHECK_EQ (file_size (dir, name), 2 << 20);
    else if (i == 5)
      CHECK_EQ (file_size (dir, name), 24 * 512);
    else if (i == 6)
      CHECK_EQ (file_size (dir, name), 1 << 20);
    else
      CHECK_EQ (file_size (dir, name), 0);
  }
  CHECK (file_size (dir, META) > 0);
  rm_tree (dir);
}

/* ---- 4. the volatile cache --------------------------------------------- */

/* Zones 0 and 1 conventional, 2.. sequential, 1 MiB each. */
#define CZ(z) ((uint64_t) (z) * MIB_SECTORS)

static struct zn_config
cache_cfg (char *dir, size_t len, const char *name)
{
  struct zn_config c = store_cfg (16, 1, 0, 2, 512,
                                  path_in_top (dir, len, name));

  c.cache_size = 4;
  return c;
}

/* Flushed, FUA and unflushed writes in every kind of zone. */
static void
cache_writes (struct zn_dev *d)
{
  uint64_t size, dirty;

  /* Durable: flushed. */
  CHECK_EQ (write_tag (d, 0, 64, 1, false), 0);
  CHECK_EQ (write_tag (d, CZ (2), 64, 1, false), 0);
  CHECK_EQ (write_tag (d, CZ (6), MIB_SECTORS, 1, false), 0);   /* FULL */
  CHECK_EQ (zn_flush (d), 0);

  CHECK_EQ (write_tag (d, 32, 64, 2, false), 0);       /* over flushed data */
  CHECK_EQ (write_tag (d, 200, 8, 3, true), 0);
  CHECK_EQ (write_tag (d, CZ (1), 16, 4, false), 0);
  /* A FUA write in the middle of an unflushed one. */
  CHECK_EQ (write_tag (d, 300, 16, 5, false), 0);
  CHECK_EQ (write_tag (d, 304, 8, 6, true), 0);

  CHECK_EQ (write_tag (d, CZ (2) + 64, 32, 2, false), 0);
  /* A FUA write makes the zone's earlier writes durable too: a file
   * holds a prefix of its zone.
   */
  CHECK_EQ (write_tag (d, CZ (3), 16, 2, false), 0);
  CHECK_EQ (write_tag (d, CZ (3) + 16, 16, 3, true), 0);
  CHECK_EQ (write_tag (d, CZ (3) + 32, 16, 4, false), 0);
  append_tag (d, 4, 8, 2, true, CZ (4));
  append_tag (d, 4, 8, 3, false, CZ (4) + 8);
  CHECK_EQ (write_tag (d, CZ (5), 16, 2, false), 0);
  /* A finish writes the zone back. */
  CHECK_EQ (write_tag (d, CZ (7), 16, 2, false), 0);
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_FINISH, CZ (7), MIB_SECTORS), 0);
  CHECK_EQ (write_tag (d, CZ (8), 16, 2, false), 0);
  CHECK_EQ (zn_zone_set_readonly (d, CZ (8)), 0);

  zn_cache_stats (d, &size, &dirty);
  CHECK_EQ (size, 4 << 20);
  CHECK (dirty > 0);
}

/* All of cache_writes, as it reads before any loss. */
static void
expect_all_writes (struct zn_dev *d)
{
  expect_data (d, 0, 32, 1);
  expect_data (d, 32, 64, 2);
  expect_data (d, 200, 8, 3);
  expect_data (d, CZ (1), 16, 4);
  expect_data (d, 300, 4, 5);
  expect_data (d, 304, 8, 6);
  expect_data (d, 312, 4, 5);
  EXPECT_ZONE (d, 2, ZN_COND_IMP_OPEN, 96);
  expect_data (d, CZ (2), 64, 1);
  expect_data (d, CZ (2) + 64, 32, 2);
  EXPECT_ZONE (d, 3, ZN_COND_IMP_OPEN, 48);
  expect_data (d, CZ (3) + 32, 16, 4);
  EXPECT_ZONE (d, 4, ZN_COND_IMP_OPEN, 16);
  expect_data (d, CZ (4) + 8, 8, 3);
  EXPECT_ZONE (d, 5, ZN_COND_IMP_OPEN, 16);
  expect_data (d, CZ (5), 16, 2);
}

/* What survives a loss of the cache: the flushed, the FUA writes and
 * what they made durable, the finished zone; nothing else.
 */
static void
expect_durable_writes (struct zn_dev *d)
{
  uint64_t size, dirty;

  zn_cache_stats (d, &size, &dirty);
  CHECK_EQ (dirty, 0);
  expect_data (d, 0, 64, 1);
  expect_data (d, 64, 136, ZEROS);
  expect_data (d, 200, 8, 3);
  expect_data (d, 208, 92, ZEROS);
  expect_data (d, 300, 4, ZEROS);
  expect_data (d, 304, 8, 6);
  expect_data (d, 312, 8, ZEROS);
  expect_data (d, CZ (1), 16, ZEROS);
  EXPECT_ZONE (d, 2, ZN_COND_CLOSED, 64);
  expect_data (d, CZ (2), 64, 1);
  expect_data (d, CZ (2) + 64, 8, ONES);
  EXPECT_ZONE (d, 3, ZN_COND_CLOSED, 32);
  expect_data (d, CZ (3), 16, 2);
  expect_data (d, CZ (3) + 16, 16, 3);
  EXPECT_ZONE (d, 4, ZN_COND_CLOSED, 8);
  expect_data (d, CZ (4), 8, 2);
  EXPECT_ZONE (d, 5, ZN_COND_EMPTY, 0);
  EXPECT_ZONE (d, 6, ZN_COND_FULL, MIB_SECTORS);
  expect_data (d, CZ (6), MIB_SECTORS, 1);
  EXPECT_ZONE (d, 7, ZN_COND_FULL, MIB_SECTORS);
  expect_data (d, CZ (7), 16, 2);
  expect_data (d, CZ (7) + 16, MIB_SECTORS - 16, ZEROS);
  /* READONLY stays; the data written before it was never durable. */
  CHECK_EQ (zone_at (d, 8).cond, ZN_COND_READONLY);
  expect_data (d, CZ (8), 16, ZEROS);
  EXPECT_COUNTERS (d, 0, 0, 3);
}

static void
test_cache_power_cycle (void)
{
  char dir[1024];
  struct zn_config c = cache_cfg (dir, sizeof dir, "cache-pc");
  struct zn_dev *d = create (&c);

  cache_writes (d);
  expect_all_writes (d);
  CHECK_EQ (zn_power_cycle (d), 0);
  expect_durable_writes (d);
  /* A second power cycle has nothing more to lose. */
  CHECK_EQ (zn_power_cycle (d), 0);
  expect_durable_writes (d);
  zn_dev_destroy (d);
  /* ... and neither has a restart. */
  d = create (&c);
  expect_durable_writes (d);
  zn_dev_destroy (d);
  rm_tree (dir);
}

static void
test_cache_crash (void)
{
  char dir[1024];
  struct zn_config c = cache_cfg (dir, sizeof dir, "cache-crash");
  struct zn_dev *d;
  int status;
  pid_t pid = fork ();

  CHECK (pid >= 0);
  if (pid == 0) {
    d = create (&c);
    cache_writes (d);
    expect_all_writes (d);
    raise (SIGKILL);            /* no zn_dev_destroy: no write-back */
    _exit (1);
  }
  CHECK (waitpid (pid, &status, 0) == pid);
  CHECK (WIFSIGNALED (status) && WTERMSIG (status) == SIGKILL);
  d = create (&c);
  CHECK (zn_dev_restored (d));
  expect_durable_writes (d);
  zn_dev_destroy (d);
  rm_tree (dir);
}

/* An orderly stop writes the cache back: nothing is lost. */
static void
test_cache_orderly_stop (void)
{
  char dir[1024];
  struct zn_config c = cache_cfg (dir, sizeof dir, "cache-stop");
  struct zn_dev *d = create (&c);

  cache_writes (d);
  zn_dev_destroy (d);
  d = create (&c);
  expect_data (d, 0, 32, 1);
  expect_data (d, 32, 64, 2);
  expect_data (d, 300, 4, 5);
  expect_data (d, 304, 8, 6);
  expect_data (d, CZ (1), 16, 4);
  EXPECT_ZONE (d, 2, ZN_COND_CLOSED, 96);
  expect_data (d, CZ (2) + 64, 32, 2);
  EXPECT_ZONE (d, 3, ZN_COND_CLOSED, 48);
  EXPECT_ZONE (d, 4, ZN_COND_CLOSED, 16);
  EXPECT_ZONE (d, 5, ZN_COND_CLOSED, 16);
  expect_data (d, CZ (5), 16, 2);
  expect_data (d, CZ (8), 16, 2);
  zn_dev_destroy (d);
  rm_tree (dir);
}

/* ---- 5. scale ----------------------------------------------------------- */

static uint64_t
disk_bytes (const char *dir)
{
  struct dirent **names;
  uint64_t sum = 0;
  char path[4200];
  int n = scandir (dir, &names, NULL, NULL);

  CHECK (n > 0);
  for (int i = 0; i < n; i++) {
    struct stat sb;

    snprintf (path, sizeof path, "%s/%s", dir, names[i]->d_name);
    if (names[i]->d_name[0] != '.' && lstat (path, &sb) == 0
        && S_ISREG (sb.st_mode))
      sum += (uint64_t) sb.st_blocks * 512;
    free (names[i]);
  }
  free (names);
  return sum;
}

static void
test_scale (void)
{
  char dir[1024];
  /* 20 TiB, 256 MiB zones: 81,920 zones, 4 conventional. */
  struct zn_config c = store_cfg (20971520, 256, 0, 4, 4096,
                                  path_in_top (dir, sizeof dir, "20tib/dev"));
  const uint64_t Z = 256 * MIB_SECTORS;
  const struct { uint32_t zone; uint64_t off, n; } w[] = {
    { 1, 100 * MIB_SECTORS, 2 * MIB_SECTORS },        /* conventional */
    { 5000, 0, 2 * MIB_SECTORS },
    { 40000, 0, MIB_SECTORS / 2 },
    { 81919, 0, MIB_SECTORS },
  };
  const size_t nr_w = sizeof w / sizeof w[0];
  uint64_t written = 0;
  struct zn_zone *zones = malloc (4096 * sizeof *zones);
  double t0, t_make, t_open;
  struct zn_dev *d;
  unsigned non_empty = 0;

  CHECK (zones != NULL);
  t0 = now ();
  d = create (&c);
  t_make = now () - t0;
  CHECK_EQ (zn_dev_geometry (d)->nr_zones, 81920);
  for (size_t i = 0; i < nr_w; i++) {
    CHECK_EQ (write_tag (d, w[i].zone * Z + w[i].off, w[i].n, 7, false), 0);
    written += w[i].n * ZN_SECTOR_SIZE;
  }
  zn_dev_destroy (d);

  t0 = now ();
  d = create (&c);
  t_open = now () - t0;
  CHECK (zn_dev_restored (d));
  fprintf (stderr, "test-files-model: 20 TiB, 81,920 zone files: made in %.2f s, "
           "opened again in %.2f s\n", t_make, t_open);
  for (uint32_t first = 0; first < 81920; first += 4096) {
    CHECK_EQ (zn_report_zones (d, first * Z, zones, 4096), 4096);
    for (uint32_t i = 0; i < 4096; i++) {
      const struct zn_zone *z = &zones[i];

      CHECK_EQ (z->start, (first + i) * Z);
      if (first + i < 4) {
        CHECK_EQ (z->cond, ZN_COND_NOT_WP);
        continue;
      }
      if (z->cond != ZN_COND_EMPTY)
        non_empty++;
      for (size_t k = 0; k < nr_w; k++)
        if (w[k].zone == first + i) {
          CHECK_EQ (z->cond, ZN_COND_CLOSED);
          CHECK_EQ (z->wp, z->start + w[k].n);
        }
    }
  }
  CHECK_EQ (non_empty, nr_w - 1);
  for (size_t i = 0; i < nr_w; i++)
    expect_data (d, w[i].zone * Z + w[i].off, w[i].n, 7);
  expect_data (d, Z, 8, ZEROS);
  zn_dev_destroy (d);

  /* Only the data takes space (conventional files are sparse); a file
   * system may round up each file's allocation.
   */
  {
    uint64_t used = disk_bytes (dir);

    fprintf (stderr, "test-files-model: %" PRIu64 " bytes written, %" PRIu64
             " bytes of disk\n", written, used);
    CHECK (used >= written);
    CHECK (used < written + (nr_w + 1) * (UINT64_C (1) << 20));
  }
  rm_tree (dir);
  free (zones);
}

/* On a tmpfs of its own when this process may mount one (in a mount
 * namespace of its own, so nothing outlives it): making 81,920 files on a
 * busy disk's journal can take a minute, which says nothing about
 * zonednull.
 */
static void
test_scale_on_tmpfs (void)
{
  char fs[1024];
  int status;
  pid_t pid = fork ();

  CHECK (pid >= 0);
  if (pid == 0) {
    snprintf (fs, sizeof fs, "%s/20tib", top);
    if (mkdir (fs, 0700) < 0
        || unshare (CLONE_NEWNS) < 0
        || mount ("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0
        || mount ("tmpfs", fs, "tmpfs", 0, "size=64m,nr_inodes=100000") < 0)
      fprintf (stderr, "test-files-model: the 20 TiB device on %s's file system: "
               "cannot mount a tmpfs\n", top);
    test_scale ();
    _exit (0);
  }
  CHECK (waitpid (pid, &status, 0) == pid);
  CHECK (WIFEXITED (status) && WEXITSTATUS (status) == 0);
}

/* The zone files held open stay few, however many zones are written. */
static void
test_descriptors (void)
{
  char dir[1024];
  struct zn_config c = store_cfg (300, 1, 0, 0, 512,
                                  path_in_top (dir, sizeof dir, "fds"));
  struct zn_dev *d = create (&c);
  int most = 0;

  for (uint32_t z = 0; z < 200; z++) {
    int n;

    CHECK_EQ (write_tag (d, CZ (z), 8, z, false), 0);
    n = fds_in (dir);
    most = n > most ? n : most;
  }
  for (uint32_t z = 0; z < 200; z++) {
    int n;

    expect_data (d, CZ (z), 8, (int) z);
    n = fds_in (dir);
    most = n > most ? n : most;
  }
  if (most > MAX_ZONE_FDS)
    fprintf (stderr, "%d zone files open at once\n", most);
  CHECK (most <= MAX_ZONE_FDS);
  CHECK (most > 0);
  CHECK_EQ (zn_flush (d), 0);
  zn_dev_destroy (d);
  CHECK_EQ (fds_in (dir), 0);
  rm_tree (dir);
}

/* ---- 6. what DIR must not hold ------------------------------------------ */

/* Whoever can write in DIR must not reach a file outside it through the
 * device, nor stall its start: links, FIFOs, a second name for a zone and
 * metadata the device cannot hold are refused at start, naming the file
 * or line, and a link made while the device runs fails the I/O.
 */

#define OUTSIDE_BYTES 4096

/* A file outside DIR, for links in DIR to point to. */
static void
outside_make (char *path, size_t len, const char *name)
{
  snprintf (path, len, "%s/%s", top, name);
  write_file (top, name, OUTSIDE_BYTES, 0, OUTSIDE_BYTES / ZN_SECTOR_SIZE,
              77);
}

static void
outside_unchanged (const char *path)
{
  unsigned char got[OUTSIDE_BYTES + 1], want[OUTSIDE_BYTES];
  FILE *fp = fopen (path, "r");
  size_t n;

  CHECK (fp != NULL);
  n = fread (got, 1, sizeof got, fp);
  fclose (fp);
  fill_pattern (want, 0, OUTSIDE_BYTES / ZN_SECTOR_SIZE, 77);
  if (n != OUTSIDE_BYTES || memcmp (got, want, n) != 0) {
    fprintf (stderr, "%s, outside DIR, changed: %zu bytes\n", path, n);
    CHECK (!"the file outside DIR is unchanged");
  }
}

/* Replaces DIR/name (if any) with a link to target. */
static void
link_in (const char *dir, const char *name, const char *target)
{
  char path[4200];

  snprintf (path, sizeof path, "%s/%s", dir, name);
  unlink (path);
  CHECK (symlink (target, path) == 0);
}

static void
remove_in (const char *dir, const char *name)
{
  char path[4200];

  snprintf (path, sizeof path, "%s/%s", dir, name);
  CHECK (unlink (path) == 0);
}

/* A device of 8 zones of 2 MiB, zone 0 conventional, stopped with data
 * in zones 0 and 3, its files all made.
 */
static struct zn_config
made_dir (char *dir, size_t len, const char *name)
{
  struct zn_config c = store_cfg (16, 2, 1, 1, 4096,
                                  path_in_top (dir, len, name));
  struct zn_dev *d = create (&c);

  CHECK_EQ (write_tag (d, 0, 8, 1, false), 0);
  CHECK_EQ (write_tag (d, zstart (d, 3), 8, 3, false), 0);
  zn_dev_destroy (d);
  return c;
}

/* The start must be refused for the link DIR/name; what the link is for
 * (a reset, writes and a restart through it) is tried if it is not, and
 * the file it points to must stay as it was.
 */
static void
expect_link_refused (const struct zn_config *c, const char *name,
                     uint32_t zno, const char *outside)
{
  char *before = listing (c->backing_dir);
  char err[512] = "";
  struct zn_dev *d = zn_dev_create (c, err, sizeof err);
  int e = errno;

  if (d) {
    fprintf (stderr, "%s: a link in DIR was followed\n", name);
    if (zno > 0)
      zn_zone_mgmt (d, ZN_OP_RESET, zstart (d, zno), 4096);
    write_tag (d, zstart (d, zno), 8, 9, true);
    zn_dev_destroy (d);
    if ((d = zn_dev_create (c, err, sizeof err)) != NULL)
      zn_dev_destroy (d);
  }
  outside_unchanged (outside);
  CHECK (d == NULL);
  CHECK_EQ (e, ELOOP);
  expect_in (err, c->backing_dir);
  expect_in (err, name);
  expect_in (err, "a symbolic link");
  EXPECT_UNCHANGED (before, c->backing_dir);
  free (before);
}

static void
test_links_at_start (void)
{
  char dir[1024], outside[1100], sub[2048], link[2048];
  struct zn_config c = made_dir (dir, sizeof dir, "links");

  outside_make (outside, sizeof outside, "outside");
  link_in (dir, "seq-000003", outside);
  expect_link_refused (&c, "seq-000003", 3, outside);
  remove_in (dir, "seq-000003");
  link_in (dir, "cnv-000000", outside);
  expect_link_refused (&c, "cnv-000000", 0, outside);
  remove_in (dir, "cnv-000000");
  /* What a start writes first. */
  link_in (dir, ".zonednull.meta.new", outside);
  expect_link_refused (&c, ".zonednull.meta.new", 5, outside);
  remove_in (dir, ".zonednull.meta.new");
  link_in (dir, META, outside);
  expect_link_refused (&c, META, 5, outside);
  rm_tree (dir);
  unlink (outside);

  /* DIR itself is the operator's to name, a link included; DIR/nullbI of
   * nr_devices > 1 is in DIR, and is not followed.
   */
  c = made_dir (dir, sizeof dir, "real");
  snprintf (link, sizeof link, "%s/named", top);
  CHECK (symlink (dir, link) == 0);
  c.backing_dir = link;
  zn_dev_destroy (create (&c));
  snprintf (sub, sizeof sub, "%s/nullb0", dir);
  CHECK (symlink (top, sub) == 0);
  c.backing_dir = sub;
  c.backing_dir_nofollow = true;
  expect_refused (&c, ELOOP, top, "a symbolic link", NULL);
  unlink (link);
  rm_tree (dir);
}

/* Links made while the device runs: the zone files are opened when first
 * used, so the I/O through one fails; the metadata's temporary is made
 * anew.
 */
static void
test_links_while_running (void)
{
  char dir[1024], outside[1100], path[4200];
  struct zn_config c = made_dir (dir, sizeof dir, "running");
  struct zn_dev *d = create (&c);
  FILE *fp;
  char text[4096];
  size_t n;

  outside_make (outside, sizeof outside, "outside-running");
  link_in (dir, "seq-000005", outside);
  link_in (dir, "cnv-000000", outside);
  CHECK_EQ (write_tag (d, zstart (d, 5), 8, 5, false), -EIO);
  CHECK_EQ (write_tag (d, 8, 8, 5, false), -EIO);
  /* A power cycle takes the wp from the file's size. */
  CHECK_EQ (zn_power_cycle (d), -EIO);
  EXPECT_ZONE (d, 5, ZN_COND_EMPTY, 0);
  CHECK_EQ (write_tag (d, zstart (d, 5), 8, 5, true), -EIO);
  outside_unchanged (outside);
  /* A FIFO and a directory in place of a zone file. */
  remove_in (dir, "seq-000006");
  snprintf (path, sizeof path, "%s/seq-000006", dir);
  CHECK (mkfifo (path, 0600) == 0);
  CHECK_EQ (write_tag (d, zstart (d, 6), 8, 6, false), -EIO);
  CHECK (unlink (path) == 0);
  remove_in (dir, "seq-000007");
  snprintf (path, sizeof path, "%s/seq-000007", dir);
  CHECK (mkdir (path, 0700) == 0);
  CHECK_EQ (write_tag (d, zstart (d, 7), 8, 7, false), -EIO);
  CHECK (rmdir (path) == 0);

  link_in (dir, ".zonednull.meta.new", outside);
  CHECK_EQ (zn_zone_set_readonly (d, zstart (d, 4)), 0);
  outside_unchanged (outside);
  snprintf (path, sizeof path, "%s/" META, dir);
  fp = fopen (path, "r");
  CHECK (fp != NULL);
  n = fread (text, 1, sizeof text - 1, fp);
  text[n] = '\0';
  fclose (fp);
  expect_in (text, "\nreadonly 4\n");
  zn_dev_destroy (d);
  outside_unchanged (outside);

  /* The links are still there: the next start names one. */
  expect_refused (&c, ELOOP, dir, "a symbolic link", NULL);
  remove_in (dir, "seq-000005");
  remove_in (dir, "cnv-000000");
  d = create (&c);
  EXPECT_ZONE (d, 3, ZN_COND_CLOSED, 8);
  expect_data (d, zstart (d, 3), 8, 3);
  CHECK_EQ (zone_at (d, 4).cond, ZN_COND_READONLY);
  zn_dev_destroy (d);
  rm_tree (dir);
  unlink (outside);
}

/* zloop names zone 3 seq-000003 and opens no other name: a second name
 * would give the zone the write pointer of whichever readdir lists last.
 */
static void
test_zone_file_names (void)
{
  char dir[1024];
  struct zn_config c = made_dir (dir, sizeof dir, "names");
  struct zn_dev *d;

  write_file (dir, "seq-00000003", 0, 0, 0, 0);
  expect_refused (&c, EINVAL, dir, "seq-00000003 and seq-000003",
                  "zone 3");
  remove_in (dir, "seq-00000003");
  remove_in (dir, "seq-000007");
  write_file (dir, "seq-7", 4096, 7 * 4096, 8, 7);
  expect_refused (&c, EINVAL, dir, "seq-7", "seq-000007");
  remove_in (dir, "seq-7");
  /* Not named as a zone file: not one, and left alone. */
  write_file (dir, "seq-000003.old", 4096, 0, 0, 0);
  d = create (&c);
  expect_data (d, zstart (d, 3), 8, 3);
  zn_dev_destroy (d);
  CHECK_EQ (file_size (dir, "seq-000003.old"), 4096);
  rm_tree (dir);
}

/* Open would wait for a writer: the start must not. */
static void
test_not_regular (void)
{
  char dir[1024], path[4200], err[512];
  struct zn_config c = made_dir (dir, sizeof dir, "fifo");

  snprintf (path, sizeof path, "%s/" META, dir);
  CHECK (unlink (path) == 0);
  CHECK (mkfifo (path, 0600) == 0);
  /* A hang fails the test (SIGALRM) instead of stalling the suite. */
  alarm (60);
  CHECK_EQ (create_errno (&c, err, sizeof err), EINVAL);
  alarm (0);
  expect_in (err, META " is not a regular file");
  CHECK (unlink (path) == 0);
  CHECK (mkdir (path, 0700) == 0);
  CHECK_EQ (create_errno (&c, err, sizeof err), EINVAL);
  expect_in (err, META " is not a regular file");
  CHECK (rmdir (path) == 0);
  snprintf (path, sizeof path, "%s/seq-000002", dir);
  CHECK (unlink (path) == 0);
  CHECK (mkfifo (path, 0600) == 0);
  alarm (60);
  expect_refused (&c, EINVAL, dir, "seq-000002 is not a regular file", NULL);
  alarm (0);
  rm_tree (dir);
}

/* Appends text to DIR's metadata file; returns the number of the first
 * line added.
 */
static int
append_meta (const char *dir, const char *text)
{
  char path[4200], line[256];
  FILE *fp;
  int lines = 0;

  snprintf (path, sizeof path, "%s/" META, dir);
  CHECK ((fp = fopen (path, "a+")) != NULL);
  while (fgets (line, sizeof line, fp))
    lines++;
  CHECK (fputs (text, fp) >= 0);
  CHECK (fclose (fp) == 0);
  return lines + 1;
}

/* Metadata bad blocks that the table would not take, each refused with
 * its line: a start must not come back with fewer bad blocks than DIR
 * says.
 */
static void
test_meta_badblocks (void)
{
  char dir[1024], want[128], *many;
  struct zn_config c = made_dir (dir, sizeof dir, "meta-bb");
  size_t len = 0;
  int line;

  line = append_meta (dir, "badblocks 100 18446744073709551615\n");
  snprintf (want, sizeof want, META " line %d: badblocks 100 "
            "18446744073709551615: ", line);
  expect_refused (&c, EINVAL, dir, want, "below 2^64 - 1");

  /* 300 ranges of 1,024 sectors take 2 entries each: the 257th finds the
   * table (512 entries) full.
   */
  c = made_dir (dir, sizeof dir, "meta-bb");
  CHECK ((many = malloc (300 * 64)) != NULL);
  for (unsigned i = 0; i < 300; i++)
    len += (size_t) sprintf (many + len, "badblocks %u %u\n", i * 4096,
                             i * 4096 + 1023);
  line = append_meta (dir, many);
  free (many);
  snprintf (want, sizeof want, META " line %d: badblocks %u ", line + 256,
            256 * 4096);
  expect_refused (&c, EINVAL, dir, want, "more bad blocks than the table");

  c = made_dir (dir, sizeof dir, "meta-bb");
  line = append_meta (dir, "badblocks 9 8\n");
  snprintf (want, sizeof want, META " line %d: badblocks 9 8: ", line);
  expect_refused (&c, EINVAL, dir, want, "first sector");
  /* A line quoted in a refusal is escaped. */
  c = made_dir (dir, sizeof dir, "meta-bb");
  line = append_meta (dir, "\x1b[2Jbadblocks\n");
  expect_refused (&c, EINVAL, dir, "\"\\x1b[2Jbadblocks\"", NULL);
  rm_tree (dir);
}

static pid_t main_pid;

/* A failed CHECK exits: the temporary directory goes too, but only from
 * this process, not from a forked child that fails.
 */
static void
remove_top (void)
{
  if (getpid () == main_pid)
    rm_tree (top);
}

int
main (void)
{
  const char *tmp = getenv ("TMPDIR");
  const char *no_scale = getenv ("ZONEDNULL_TEST_STORE_NO_SCALE");

  snprintf (top, sizeof top, "%s/test-files-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  CHECK (mkdtemp (top) != NULL);
  main_pid = getpid ();
  atexit (remove_top);

  test_restart ();
  test_refusals ();
  test_zloop_layout ();
  test_layout_for_zloop ();
  test_cache_power_cycle ();
  test_cache_crash ();
  test_cache_orderly_stop ();
  test_descriptors ();
  test_links_at_start ();
  test_links_while_running ();
  test_zone_file_names ();
  test_not_regular ();
  test_meta_badblocks ();
  if (no_scale && *no_scale && strcmp (no_scale, "0") != 0)
    fprintf (stderr, "test-files-model: the 20 TiB device left out "
             "(ZONEDNULL_TEST_STORE_NO_SCALE)\n");
  else
    test_scale_on_tmpfs ();

  printf ("test-files-model: all tests passed\n");
  return EXIT_SUCCESS;
}
