/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests of file-backed zones (backing_dir) against the model: what DIR
 * must not hold (links, FIFOs, second names of a zone, metadata the device
 * cannot hold) is refused, naming the file or line.
 */
#include "files-model.h"

/* ---- what DIR must not hold --------------------------------------------- */

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
  char text[4096];

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
  read_meta (dir, text, sizeof text);
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

int
main (void)
{
  make_top ();

  test_links_at_start ();
  test_links_while_running ();
  test_zone_file_names ();
  test_not_regular ();
  test_meta_badblocks ();

  printf ("test-files-model-hostile: all tests passed\n");
  return EXIT_SUCCESS;
}
