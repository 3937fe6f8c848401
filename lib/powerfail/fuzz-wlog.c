/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: a whole write-log file, as `zonednull replay` takes
 * one from whoever hands it over.
 *
 * The input is the file.  Every entry is read, data included, through
 * the reader; then the plan of a replay to the end, a random crash state
 * drawn from it (the seed from the input's last bytes) and, when the
 * log's device is small, the state written through the model into a
 * fresh directory.  A refusal is an answer; a crash, a leak, a sanitizer
 * report, a message without the log's name, or a state that the model
 * then finds inconsistent (a write pointer outside its zone) is a
 * finding.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storage/attach.h"
#include "powerfail/replay.h"
#include "powerfail/wlog-read.h"
#include "model/zoned.h"

/* A state is written only for a device this small: replay's work grows
 * with the device, and the fuzzer is after the reader and the rules.
 */
#define STATE_MAX_SECTORS (64u << 11)   /* 64 MiB */
#define STATE_MAX_ZONES 64u

/* Under $TMPDIR, removed at exit. */
static char workdir[4096], logpath[4096 + 8], statedir[4096 + 8];

static int
remove_one (const char *path, const struct stat *sb, int type,
            struct FTW *ftw)
{
  (void) sb;
  (void) type;
  if (ftw->level > 0)
    remove (path);
  return 0;
}

static void
clean_state (void)
{
  nftw (statedir, remove_one, 8, FTW_DEPTH | FTW_PHYS);
  rmdir (statedir);
}

static void
remove_workdir (void)
{
  clean_state ();
  unlink (logpath);
  rmdir (workdir);
}

static void
check_message (const char *err)
{
  if (strstr (err, "log") == NULL && strstr (err, "entry") == NULL
      && strstr (err, "backing_dir") == NULL && strstr (err, "-o") == NULL) {
    fprintf (stderr, "a refusal that names neither the log nor the entry: "
             "%s\n", err);
    abort ();
  }
}

static void
check_state (const struct zn_replay_plan *p)
{
  const struct zn_geometry *g = zn_wlog_read_geometry (p->log);
  struct zn_config cfg = *zn_wlog_read_config (p->log);
  char err[1024];
  struct zn_dev *dev;

  cfg.backing_dir = statedir;
  dev = zn_storage_create (&cfg, err, sizeof err);
  if (dev == NULL) {
    fprintf (stderr, "the state replay wrote does not open: %s\n", err);
    abort ();
  }
  for (uint32_t i = 0; i < g->nr_zones; i++) {
    struct zn_zone z;

    if (zn_report_snapshot (dev, i, &z, 1, NULL) == 1
        && z.wp != UINT64_MAX
        && (z.wp < z.start || z.wp > z.start + z.len)) {
      fprintf (stderr, "zone %u: wp %llu outside [%llu, %llu]\n", i,
               (unsigned long long) z.wp, (unsigned long long) z.start,
               (unsigned long long) (z.start + z.len));
      abort ();
    }
  }
  zn_dev_destroy (dev);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  static bool ready;
  struct zn_wlog_reader *log;
  struct zn_wlog_rec rec;
  struct zn_replay_plan plan;
  /* torn:SEED draws what random:SEED does and tears writes besides. */
  struct zn_keep keep = { .kind = ZN_KEEP_TORN };
  char err[1024];
  int fd, r;

  if (!ready) {
    const char *tmp = getenv ("TMPDIR");

    snprintf (workdir, sizeof workdir, "%s/zonednull-fuzz-wlog.XXXXXX",
              tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp (workdir) == NULL)
      abort ();
    atexit (remove_workdir);
    snprintf (logpath, sizeof logpath, "%s/log", workdir);
    snprintf (statedir, sizeof statedir, "%s/state", workdir);
    ready = true;
  }
  fd = open (logpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || write (fd, data, size) != (ssize_t) size)
    abort ();
  close (fd);

  log = zn_wlog_read_open (logpath, err, sizeof err);
  if (log == NULL) {
    check_message (err);
    return 0;
  }
  /* Every entry and its data, as --list and replay read them. */
  while ((r = zn_wlog_read_next (log, &rec, err, sizeof err)) == 1)
    if (rec.nr_sectors && rec.nr_sectors <= 2048) {
      void *buf = malloc (rec.nr_sectors << 9);

      if (buf && zn_wlog_read_data (log, &rec, buf, err, sizeof err) < 0)
        check_message (err);
      free (buf);
    }
  if (r < 0)
    check_message (err);
  zn_wlog_read_close (log);

  log = zn_wlog_read_open (logpath, err, sizeof err);
  if (log == NULL)
    abort ();                   /* it opened a moment ago */
  if (zn_replay_plan (log, NULL, &plan, err, sizeof err) == 0) {
    const struct zn_geometry *g = zn_wlog_read_geometry (log);
    struct zn_replay_state st;
    bool have_st = zn_replay_state_init (&plan, &st) == 0;

    for (size_t i = 0; i < 8 && i < size; i++)
      keep.seed = keep.seed << 8 | data[size - 1 - i];
    if (have_st) {
      zn_replay_choose (&plan, &keep, 0, &st);
      if (g->capacity <= STATE_MAX_SECTORS && g->nr_zones <= STATE_MAX_ZONES) {
        if (zn_replay_write (&plan, &st, statedir, err, sizeof err) == 0)
          check_state (&plan);
        else
          check_message (err);
        clean_state ();
      }
    }
    if (have_st)
      zn_replay_state_free (&st);
    zn_replay_plan_free (&plan);
  }
  else
    check_message (err);
  zn_wlog_read_close (log);
  return 0;
}
