/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests of file-backed zones (backing_dir, lib/storage/store.c) against the
 * model: a restart gives back every zone, the data, the bad blocks and the
 * READONLY and OFFLINE zones; each refusal names its cause and leaves DIR
 * as it was.
 */
#include "files-model.h"

/* ---- a restart keeps everything --------------------------------------- */

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

/* ---- refusals ----------------------------------------------------------- */

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
    fprintf (stderr, "test-files-model-restart: SKIP read-only directories: "
             "cannot mount in a mount namespace of its own\n");
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

int
main (void)
{
  make_top ();

  test_restart ();
  test_refusals ();

  printf ("test-files-model-restart: all tests passed\n");
  return EXIT_SUCCESS;
}
