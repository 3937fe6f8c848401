/* SPDX-License-Identifier: BSD-3-Clause */
/* The write log (lib/powerfail/wlog.c; doc/power-fail.md, section 1): a device
 * driven through every kind of request with the log on, and the file
 * read back by a reader of its own, field by field and byte by byte;
 * the snapshot a log starts with on a device that holds data; and the
 * refusals (an existing file, a symbolic link, bad names, no log).
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/crash.h"
#include "model/zoned.h"
#include "powerfail/wlog.h"
#include "wire/wlog-format.h"
#include "../common/check.h"
#include "../common/dev.h"

#define Z 2048                  /* sectors in a 1 MiB zone */
#define BS 4096                 /* blocks of 8 sectors: units differ */
#define SPB (BS / 512)
#define MAX_ENTRIES 256

static char top[512];
static bool torn_tail;          /* a failed entry may lie past the last */

struct entry {
  uint64_t sector, nr, flags, data_len, zero, ref;
  const unsigned char *text;    /* byte 32 of the block */
  const unsigned char *data;    /* the data after the block, or NULL */
};

struct log {
  unsigned char *file;
  size_t size;
  uint64_t nr;
  struct entry e[MAX_ENTRIES];
};

static uint64_t
le64 (const unsigned char *p)
{
  uint64_t v = 0;

  for (int i = 7; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

static bool
all_zero (const unsigned char *p, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (p[i])
      return false;
  return true;
}

/* Reads and checks the whole file: the super, each entry's block (the
 * rest of it zero), its data, and nothing after the last entry.
 */
static void
read_log (const char *path, struct log *log)
{
  FILE *f = fopen (path, "rb");
  size_t off;

  CHECK (f != NULL);
  free (log->file);
  memset (log, 0, sizeof *log);
  CHECK (fseek (f, 0, SEEK_END) == 0);
  log->size = (size_t) ftell (f);
  rewind (f);
  log->file = malloc (log->size + 1);
  CHECK (fread (log->file, 1, log->size, f) == log->size);
  fclose (f);
  CHECK (log->size >= BS && log->size % BS == 0);
  CHECK_EQ (le64 (log->file), ZN_WLOG_MAGIC);
  CHECK_EQ (le64 (log->file + 8), ZN_WLOG_VERSION);
  log->nr = le64 (log->file + 16);
  CHECK_EQ (le64 (log->file + 24) & 0xffffffff, BS);
  CHECK (all_zero (log->file + 28, BS - 28));
  CHECK (log->nr <= MAX_ENTRIES);
  off = BS;
  for (uint64_t i = 0; i < log->nr; i++) {
    struct entry *e = &log->e[i];
    const unsigned char *b = log->file + off;
    size_t used;

    CHECK (off + BS <= log->size);
    e->sector = le64 (b);
    e->nr = le64 (b + 8);
    e->flags = le64 (b + 16);
    e->data_len = le64 (b + 24);
    e->text = b + 32;
    if (e->flags == ZN_WLOG_MARK) {
      CHECK (e->data_len >= 1 && e->data_len <= BS - 32);
      used = 32 + e->data_len;
    }
    else if (e->flags & ZN_WLOG_GEOMETRY) {
      /* Past zero and ref: dm-log-writes' readers take a nonzero byte 32
       * as corrupt unless the flags are exactly MARK.
       */
      CHECK (all_zero (b + 32, 16));
      CHECK (e->data_len >= 1 && e->data_len <= BS - 48);
      e->text = b + 48;
      used = 48 + e->data_len;
    }
    else {
      /* dm-log-writes' readers take a nonzero byte 32 as corrupt. */
      CHECK_EQ (b[32], 0);
      CHECK_EQ (e->data_len, 0);
      e->zero = le64 (b + 32);
      e->ref = le64 (b + 40);
      CHECK_EQ (e->zero, 0);
      used = 48;
    }
    CHECK (all_zero (b + used, BS - used));
    off += BS;
    if (!(e->flags & (ZN_WLOG_DISCARD | ZN_WLOG_MARK)) && e->nr) {
      e->data = log->file + off;
      off += e->nr * BS;
      CHECK (off <= log->size);
    }
  }
  if (!torn_tail)
    CHECK_EQ (off, log->size);
  CHECK (off <= log->size);
}

/* Entry i is flags over [sector, sector + nr) in 512-byte sectors. */
static const struct entry *
expect (const struct log *log, uint64_t i, uint64_t flags, uint64_t sector,
        uint64_t nr)
{
  const struct entry *e = &log->e[i];

  if (e->flags != flags || e->sector != sector / SPB || e->nr != nr / SPB)
    fprintf (stderr, "entry %" PRIu64 ": flags %#" PRIx64 " sector %" PRIu64
             " nr %" PRIu64 ", expected %#" PRIx64 " %" PRIu64 " %" PRIu64
             "\n", i, e->flags, e->sector, e->nr, flags, sector / SPB,
             nr / SPB);
  CHECK (i < log->nr);
  CHECK_EQ (e->flags, flags);
  CHECK_EQ (e->sector, sector / SPB);
  CHECK_EQ (e->nr, nr / SPB);
  return e;
}

/* Entry i carries the pattern of tag over [sector, sector + nr). */
static void
expect_data (const struct log *log, uint64_t i, uint64_t flags,
             uint64_t sector, uint64_t nr, unsigned tag)
{
  const struct entry *e = expect (log, i, flags, sector, nr);
  unsigned char *want = malloc (nr * 512);

  fill_pattern (want, sector, nr, tag);
  CHECK (e->data != NULL);
  CHECK (memcmp (e->data, want, nr * 512) == 0);
  free (want);
}

static void
expect_text (const struct log *log, uint64_t i, uint64_t flags,
             const char *text)
{
  const struct entry *e = expect (log, i, flags, 0, 0);

  CHECK_EQ (e->data_len, strlen (text));
  CHECK (memcmp (e->text, text, strlen (text)) == 0);
}

/* zn_wlog_stop, once a snapshot being copied behind a start is done. */
static int
stop_log (struct zn_dev *d)
{
  const struct timespec ms = { 0, 1000000 };
  int r;

  while ((r = zn_wlog_stop (d)) == -EAGAIN)
    nanosleep (&ms, NULL);
  return r;
}

static int
put (struct zn_dev *d, uint64_t sector, uint64_t nr, unsigned tag, bool fua)
{
  unsigned char *buf = malloc (nr * 512);
  int r;

  fill_pattern (buf, sector, nr, tag);
  r = fua ? zn_write_fua (d, buf, sector, nr) : zn_write (d, buf, sector, nr);
  free (buf);
  return r;
}

static void
append_at (struct zn_dev *d, uint64_t zone, uint64_t nr, unsigned tag,
           uint64_t expected)
{
  unsigned char *buf = malloc (nr * 512);
  uint64_t landed = 0;

  fill_pattern (buf, expected, nr, tag);
  CHECK_EQ (zn_zone_append (d, buf, zone, nr, false, &landed), 0);
  CHECK_EQ (landed, expected);
  free (buf);
}

static struct zn_config
log_cfg (const char *log_writes, const char *backing_dir)
{
  struct zn_config c = geometry_config (8, 1, 0, 2, BS);

  c.memory_backed = true;
  c.cache_size = 1;
  c.log_writes = log_writes;
  c.backing_dir = backing_dir;
  return c;
}

static const char *
path (char *buf, const char *name)
{
  snprintf (buf, 600, "%s/%s", top, name);
  return buf;
}

static void
write_file (const char *p, const char *text)
{
  FILE *f = fopen (p, "w");

  CHECK (f != NULL);
  fputs (text, f);
  fclose (f);
}

/* ---- every kind of entry ------------------------------------------------ */

#define GEOMETRY "blocksize=4096 zone_size=1 zone_capacity=1 zone_nr_conv=2 " \
  "size=8 nr_zones=8 cache=1 kernel=6.1"

static void
test_entries (void)
{
  char p[600];
  struct zn_config c = log_cfg (path (p, "entries.log"), NULL);
  struct zn_dev *d = create (&c);
  struct log log = { 0 };
  uint64_t i = 0;

  CHECK (zn_wlog_on (d));
  CHECK_EQ (put (d, 8, 16, 1, false), 0);                       /* 1 */
  CHECK_EQ (put (d, 2 * Z, 8, 2, true), 0);                     /* 2 */
  append_at (d, 2 * Z, 8, 3, 2 * Z + 8);                        /* 3 */
  CHECK_EQ (zn_flush (d), 0);                                   /* 4 */
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_OPEN, 3 * Z, Z), 0);         /* 5 */
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_CLOSE, 3 * Z, Z), 0);        /* 6 */
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_FINISH, 4 * Z, Z), 0);       /* 7 */
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_RESET, 2 * Z, Z), 0);        /* 8 */
  /* Refused requests leave no entry. */
  CHECK (put (d, 5 * Z + 8, 8, 9, false) != 0);
  CHECK (zn_zone_mgmt (d, ZN_OP_OPEN, 0, Z) != 0);
  CHECK_EQ (put (d, 5 * Z, 8, 4, false), 0);                    /* 9 */
  CHECK_EQ (put (d, 6 * Z, 8, 5, false), 0);                    /* 10 */
  /* Reset-all: one entry for each zone it resets (4, 5, 6). */
  CHECK_EQ (zn_zone_mgmt (d, ZN_OP_RESET, 0, 8 * Z), 0);        /* 11-13 */
  CHECK_EQ (zn_zone_set_readonly (d, 7 * Z), 0);                /* 14 */
  CHECK_EQ (zn_zone_set_readonly (d, 7 * Z), 0);                /* 15 */
  CHECK_EQ (zn_zone_set_offline (d, 7 * Z), 0);                 /* 16 */
  CHECK_EQ (zn_wlog_mark (d, "after-cond", 10), 0);             /* 17 */
  /* Lost at the power cycle: unflushed. */
  CHECK_EQ (put (d, Z, 8, 6, false), 0);                        /* 18 */
  CHECK_EQ (put (d, 3 * Z, 16, 7, false), 0);                   /* 19 */
  CHECK_EQ (zn_power_cycle (d), 0);                             /* 20-23 */
  CHECK_EQ (stop_log (d), 0);
  CHECK_EQ (zn_wlog_stop (d), -ENOENT);
  CHECK_EQ (zn_wlog_mark (d, "late", 4), -ENOENT);
  CHECK_EQ (put (d, 16, 8, 8, false), 0);       /* not logged */

  read_log (p, &log);
  CHECK_EQ (log.nr, 24);
  expect_text (&log, i++, ZN_WLOG_MARK | ZN_WLOG_GEOMETRY, GEOMETRY);
  expect_data (&log, i++, 0, 8, 16, 1);
  expect_data (&log, i++, ZN_WLOG_FUA, 2 * Z, 8, 2);
  expect_data (&log, i++, ZN_WLOG_APPEND, 2 * Z + 8, 8, 3);
  /* The flush covers entries 0 to 3, all that completed before it. */
  CHECK_EQ (expect (&log, i++, ZN_WLOG_FLUSH, 0, 0)->ref, 4);
  expect (&log, i++, ZN_WLOG_OPEN, 3 * Z, 0);
  expect (&log, i++, ZN_WLOG_CLOSE, 3 * Z, 0);
  expect (&log, i++, ZN_WLOG_FINISH, 4 * Z, 0);
  expect (&log, i++, ZN_WLOG_DISCARD | ZN_WLOG_RESET, 2 * Z, Z);
  expect_data (&log, i++, 0, 5 * Z, 8, 4);
  expect_data (&log, i++, 0, 6 * Z, 8, 5);
  for (uint64_t z = 4; z <= 6; z++)
    expect (&log, i++, ZN_WLOG_DISCARD | ZN_WLOG_RESET, z * Z, Z);
  CHECK_EQ (expect (&log, i++, ZN_WLOG_COND, 7 * Z, 0)->ref,
            ZN_COND_READONLY);
  CHECK_EQ (expect (&log, i++, ZN_WLOG_COND, 7 * Z, 0)->ref, 0);
  CHECK_EQ (expect (&log, i++, ZN_WLOG_COND, 7 * Z, 0)->ref,
            ZN_COND_OFFLINE);
  expect_text (&log, i++, ZN_WLOG_MARK, "after-cond");
  expect_data (&log, i++, 0, Z, 8, 6);
  expect_data (&log, i++, 0, 3 * Z, 16, 7);
  expect (&log, i++, ZN_WLOG_POWER, 0, 0);
  /* Zone 3 comes back EMPTY, zone 7 neither READONLY nor OFFLINE, and
   * conventional zone 1 holds what it held before the lost write: zeros.
   */
  expect (&log, i++, ZN_WLOG_DISCARD | ZN_WLOG_WP, 3 * Z, Z);
  CHECK_EQ (expect (&log, i++, ZN_WLOG_COND, 7 * Z, 0)->ref, 0);
  CHECK (all_zero (expect (&log, i++, ZN_WLOG_FUA | ZN_WLOG_RESTORE, Z,
                           8)->data, BS));
  zn_dev_destroy (d);
  free (log.file);
}

/* With backing_dir the cache holds the new data: a power cycle takes a
 * sequential zone back to its last flushed write, and a conventional
 * zone's range back to what was flushed there.
 */
static void
test_power_files (void)
{
  char p[600], dir[600];
  struct zn_config c = log_cfg (path (p, "files.log"),
                                path (dir, "files"));
  struct zn_dev *d = create (&c);
  struct log log = { 0 };

  CHECK_EQ (put (d, 0, 16, 1, false), 0);                       /* 1 */
  CHECK_EQ (put (d, 2 * Z, 8, 2, false), 0);                    /* 2 */
  CHECK_EQ (zn_flush (d), 0);                                   /* 3 */
  CHECK_EQ (put (d, 8, 8, 3, false), 0);                        /* 4 */
  CHECK_EQ (put (d, 2 * Z + 8, 8, 4, false), 0);                /* 5 */
  CHECK_EQ (zn_power_cycle (d), 0);                             /* 6-8 */
  read_log (p, &log);
  CHECK_EQ (log.nr, 9);
  CHECK_EQ (expect (&log, 3, ZN_WLOG_FLUSH, 0, 0)->ref, 3);
  expect (&log, 6, ZN_WLOG_POWER, 0, 0);
  expect (&log, 7, ZN_WLOG_DISCARD | ZN_WLOG_WP, 2 * Z + 8, Z - 8);
  expect_data (&log, 8, ZN_WLOG_FUA | ZN_WLOG_RESTORE, 8, 8, 1);
  CHECK_EQ (put (d, 8, 8, 5, false), 0);                        /* 9 */
  /* An orderly stop writes the cache back: a flush of all before it. */
  zn_dev_destroy (d);
  read_log (p, &log);
  CHECK_EQ (log.nr, 11);
  CHECK_EQ (expect (&log, 10, ZN_WLOG_FLUSH, 0, 0)->ref, 10);
  free (log.file);
}

/* A power cycle that keeps what it would have dropped: the POWER entry
 * and nothing after it, and one that keeps the sequential zone's write
 * only: a RESTORE of the conventional range, no WP.
 */
static void
test_power_keep (void)
{
  const struct zn_keep all = { .kind = ZN_KEEP_ALL };
  char p[600], dir[600];
  struct zn_config c = log_cfg (path (p, "keep.log"), path (dir, "keep"));
  struct zn_dev *d = create (&c);
  struct log log = { 0 };
  struct zn_keep seed = { .kind = ZN_KEEP_RANDOM };

  CHECK_EQ (put (d, 0, 16, 1, false), 0);                       /* 1 */
  CHECK_EQ (put (d, 2 * Z, 8, 2, false), 0);                    /* 2 */
  CHECK_EQ (zn_power_cycle_keep (d, &all), 0);                  /* 3 */
  read_log (p, &log);
  CHECK_EQ (log.nr, 4);
  expect (&log, 3, ZN_WLOG_POWER, 0, 0);
  /* A seed that keeps zone 2's one write and drops zone 0's. */
  while (zn_keep_prefix (&seed, 2, 1) != 1 || zn_keep_write (&seed, 0, 0))
    seed.seed++;
  CHECK_EQ (put (d, 0, 16, 3, false), 0);                       /* 4 */
  CHECK_EQ (put (d, 2 * Z + 8, 8, 4, false), 0);                /* 5 */
  CHECK_EQ (zn_power_cycle_keep (d, &seed), 0);                 /* 6-7 */
  read_log (p, &log);
  CHECK_EQ (log.nr, 8);
  expect (&log, 6, ZN_WLOG_POWER, 0, 0);
  expect_data (&log, 7, ZN_WLOG_FUA | ZN_WLOG_RESTORE, 0, 16, 1);
  zn_dev_destroy (d);
  free (log.file);
}

/* ---- the snapshot ------------------------------------------------------- */

/* A log started on a device that holds data begins with it: a
 * conventional zone's nonzero blocks, a sequential zone up to its wp, a
 * READONLY zone's condition.
 */
static void
test_snapshot (void)
{
  char p[600], dir[600], err[256] = "";
  struct zn_config c = log_cfg (NULL, path (dir, "snap"));
  struct zn_dev *d = create (&c);
  struct log log = { 0 };
  uint64_t i = 1;

  CHECK_EQ (put (d, 8, 16, 1, false), 0);
  CHECK_EQ (put (d, 40, 8, 2, false), 0);
  CHECK_EQ (put (d, Z + 16, 8, 3, false), 0);
  CHECK_EQ (put (d, 3 * Z, 24, 4, false), 0);
  CHECK_EQ (zn_zone_set_readonly (d, 5 * Z), 0);
  zn_dev_destroy (d);

  c.log_writes = path (p, "snap.log");
  d = create (&c);
  read_log (p, &log);
  CHECK_EQ (log.nr, 6);
  expect_text (&log, 0, ZN_WLOG_MARK | ZN_WLOG_GEOMETRY, GEOMETRY);
  expect_data (&log, i++, ZN_WLOG_FUA | ZN_WLOG_SNAPSHOT, 8, 16, 1);
  expect_data (&log, i++, ZN_WLOG_FUA | ZN_WLOG_SNAPSHOT, 40, 8, 2);
  expect_data (&log, i++, ZN_WLOG_FUA | ZN_WLOG_SNAPSHOT, Z + 16, 8, 3);
  expect_data (&log, i++, ZN_WLOG_FUA | ZN_WLOG_SNAPSHOT, 3 * Z, 24, 4);
  CHECK_EQ (expect (&log, i++, ZN_WLOG_COND, 5 * Z, 0)->ref,
            ZN_COND_READONLY);
  CHECK_EQ (stop_log (d), 0);

  zn_dev_destroy (d);

  /* The same through the control channel's start, on a live device, with
   * unflushed data: flushed first, then recorded.
   */
  c.log_writes = NULL;
  c.log_dir = top;
  d = create (&c);
  CHECK_EQ (put (d, 3 * Z + 24, 8, 5, false), 0);
  CHECK_EQ (zn_wlog_start_named (d, "live.log", 8, err, sizeof err), 0);
  /* The snapshot is copied behind the start.  A write to a zone it may
   * not have reached yet copies that zone first: its SNAPSHOT entry
   * comes before the write's, whichever got there first.  The stop
   * waits for the copy to end (EAGAIN until then).
   */
  CHECK_EQ (put (d, 3 * Z + 32, 8, 6, false), 0);
  {
    uint64_t snap = UINT64_MAX, write = UINT64_MAX;

    CHECK_EQ (stop_log (d), 0);
    read_log (path (p, "live.log"), &log);
    CHECK_EQ (log.nr, 7);
    for (uint64_t j = 1; j < log.nr; j++) {
      if (log.e[j].flags == (ZN_WLOG_FUA | ZN_WLOG_SNAPSHOT)
          && log.e[j].sector == 3 * Z / SPB)
        snap = j;
      if (log.e[j].flags == 0 && log.e[j].sector == (3 * Z + 32) / SPB)
        write = j;
    }
    CHECK (snap < write && write < log.nr);
    expect (&log, snap, ZN_WLOG_FUA | ZN_WLOG_SNAPSHOT, 3 * Z, 32);
  }
  zn_dev_destroy (d);
  free (log.file);
}

/* ---- who reads a write's data --------------------------------------------- */

/* zonednull-ublk does not copy a write's data in when nothing reads it:
 * memory_backed=0 without log_writes= or log_dir=, where no log can
 * ever start.  With either, a log records the data.
 */
static void
test_uses_write_data (void)
{
  char p[600];
  struct zn_config c = log_cfg (NULL, NULL);
  struct zn_dev *d = create (&c);

  CHECK (zn_dev_uses_write_data (d));
  zn_dev_destroy (d);
  c.memory_backed = false;
  c.cache_size = 0;
  d = create (&c);
  CHECK (!zn_dev_uses_write_data (d));
  zn_dev_destroy (d);
  c.log_dir = top;
  d = create (&c);
  CHECK (zn_dev_uses_write_data (d));
  zn_dev_destroy (d);
  c.log_dir = NULL;
  c.log_writes = path (p, "no-memory.log");
  d = create (&c);
  CHECK (zn_wlog_on (d));
  CHECK (zn_dev_uses_write_data (d));
  CHECK_EQ (stop_log (d), 0);
  /* Stopped, it cannot start again without log_dir=, but the data
   * written so far was recorded: still true, as fixed at creation.
   */
  CHECK (zn_dev_uses_write_data (d));
  zn_dev_destroy (d);
}

/* ---- refusals and failures ---------------------------------------------- */

static void
test_refusals (void)
{
  char p[600], link[600], err[256] = "";
  struct zn_config c = log_cfg (path (p, "exists.log"), NULL);
  static const char *bad_marks[] = {
    "", "a b", "tab\t", "\x7f", "caf\xc3\xa9",
    "12345678901234567890123456789012345678901234567890123456789012345",
  };
  static const char *bad_names[] = {
    "../x", "a/b", ".hidden", "", "..", "sp ace", "new\nline",
  };
  struct zn_dev *d;
  struct stat st;

  write_file (p, "keep");
  errno = 0;
  CHECK (zn_dev_create (&c, err, sizeof err) == NULL);
  CHECK_EQ (errno, EEXIST);
  CHECK (strstr (err, "log_writes=") && strstr (err, "exists.log"));
  CHECK (stat (p, &st) == 0 && st.st_size == 4);

  /* A symbolic link is not followed, even to a file that is not there. */
  CHECK (symlink (path (p, "target.log"), path (link, "link.log")) == 0);
  c.log_writes = link;
  CHECK (zn_dev_create (&c, err, sizeof err) == NULL);
  CHECK (strstr (err, "link.log") != NULL);
  CHECK (stat (p, &st) < 0 && errno == ENOENT);

  c.log_writes = NULL;
  d = create (&c);
  CHECK_EQ (zn_wlog_mark (d, "m", 1), -ENOENT);
  CHECK_EQ (zn_wlog_start_named (d, "x", 1, err, sizeof err), -EPERM);
  CHECK (strstr (err, "log_dir") != NULL);
  zn_dev_destroy (d);

  c.log_dir = top;
  d = create (&c);
  for (size_t k = 0; k < sizeof bad_names / sizeof *bad_names; k++) {
    CHECK_EQ (zn_wlog_start_named (d, bad_names[k], strlen (bad_names[k]),
                                   err, sizeof err), -EINVAL);
    CHECK (strstr (err, "A-Z a-z 0-9") != NULL);
  }
  CHECK_EQ (zn_wlog_start_named (d, "exists.log", 10, err, sizeof err),
            -EEXIST);
  CHECK_EQ (zn_wlog_start_named (d, "link.log", 8, err, sizeof err),
            -EEXIST);
  CHECK_EQ (zn_wlog_start_named (d, "one.log", 7, err, sizeof err), 0);
  CHECK_EQ (zn_wlog_start_named (d, "two.log", 7, err, sizeof err), -EBUSY);
  CHECK (stat (path (p, "two.log"), &st) < 0);
  for (size_t k = 0; k < sizeof bad_marks / sizeof *bad_marks; k++)
    CHECK_EQ (zn_wlog_mark (d, bad_marks[k], strlen (bad_marks[k])),
              -EINVAL);
  CHECK_EQ (zn_wlog_mark (d, "1234567890123456789012345678901234567890"
                          "123456789012345678901234", 64), 0);
  CHECK_EQ (stop_log (d), 0);
  zn_dev_destroy (d);
}

/* A log that cannot be written fails the request that needed it and
 * stops; the stop reports it.
 */
static void
test_log_error (void)
{
  char p[600];
  struct zn_config c = log_cfg (path (p, "full.log"), NULL);
  struct zn_dev *d = create (&c);
  struct rlimit old, lim;
  struct log log = { 0 };

  CHECK_EQ (put (d, 2 * Z, 8, 1, false), 0);
  signal (SIGXFSZ, SIG_IGN);
  CHECK (getrlimit (RLIMIT_FSIZE, &old) == 0);
  lim = old;
  lim.rlim_cur = 5 * BS;         /* the super, two entries, a block */
  CHECK (setrlimit (RLIMIT_FSIZE, &lim) == 0);
  CHECK_EQ (put (d, 2 * Z + 8, 8, 2, false), -EIO);
  CHECK (setrlimit (RLIMIT_FSIZE, &old) == 0);
  CHECK (!zn_wlog_on (d));
  CHECK_EQ (put (d, 2 * Z + 16, 8, 3, false), 0);
  CHECK_EQ (zn_wlog_stop (d), -EIO);
  CHECK_EQ (zn_wlog_stop (d), -ENOENT);
  torn_tail = true;
  read_log (p, &log);
  torn_tail = false;
  CHECK_EQ (log.nr, 2);
  zn_dev_destroy (d);
  free (log.file);
}

static int
rm_entry (const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
  (void) sb; (void) flag; (void) ftw;
  return remove (p);
}

int
main (void)
{
  const char *tmp = getenv ("TMPDIR");

  snprintf (top, sizeof top, "%s/test-wlog.XXXXXX", tmp ? tmp : "/tmp");
  CHECK (mkdtemp (top) != NULL);
  test_entries ();
  test_power_files ();
  test_power_keep ();
  test_snapshot ();
  test_refusals ();
  test_log_error ();
  test_uses_write_data ();
  nftw (top, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  return 0;
}
