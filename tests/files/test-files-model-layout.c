/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests of file-backed zones (backing_dir) against the model: a directory
 * laid out as zloop makes it opens, and one that zonednull made has
 * zloop's layout; a 20 TiB device costs only the disk space of its data,
 * and few descriptors.
 *
 * ZONEDNULL_TEST_STORE_NO_SCALE=1 leaves out the 20 TiB device (81,920
 * zone files), which is slow under valgrind.
 */
#include "files-model.h"

/* ---- zloop's layout ---------------------------------------------------- */

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
  char text[4096];

  /* A directory as zloop leaves it, without the metadata file. */
  make_zloop_dir (dir);
  d = create (&c);
  CHECK (zn_dev_restored (d));
  expect_zloop_device (d);
  /* The device goes on from there. */
  CHECK_EQ (write_tag (d, 4 * 4096 + 128, 8, 6, false), 0);
  EXPECT_ZONE (d, 4, ZN_COND_IMP_OPEN, 136);
  zn_dev_destroy (d);

  read_meta (dir, text, sizeof text);
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

/* ---- scale -------------------------------------------------------------- */

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
  fprintf (stderr, "test-files-model-layout: 20 TiB, 81,920 zone files: "
           "made in %.2f s, opened again in %.2f s\n", t_make, t_open);
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

    fprintf (stderr, "test-files-model-layout: %" PRIu64 " bytes written, %"
             PRIu64 " bytes of disk\n", written, used);
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
      fprintf (stderr, "test-files-model-layout: the 20 TiB device on %s's "
               "file system: cannot mount a tmpfs\n", top);
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

int
main (void)
{
  const char *no_scale = getenv ("ZONEDNULL_TEST_STORE_NO_SCALE");

  make_top ();

  test_zloop_layout ();
  test_layout_for_zloop ();
  test_descriptors ();
  if (no_scale && *no_scale && strcmp (no_scale, "0") != 0)
    fprintf (stderr, "test-files-model-layout: the 20 TiB device left out "
             "(ZONEDNULL_TEST_STORE_NO_SCALE)\n");
  else
    test_scale_on_tmpfs ();

  printf ("test-files-model-layout: all tests passed\n");
  return EXIT_SUCCESS;
}
