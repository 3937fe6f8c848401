/* SPDX-License-Identifier: BSD-3-Clause */
/* `zonednull replay LOG [--to MARK|ENTRY] [--crash=POLICY] -o DIR` and
 * `zonednull replay LOG --list`.  The rules and the model's work are in
 * lib/powerfail/replay.c; this parses, prints, and names each state so that it can
 * be made again.
 */
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "cli-replay.h"
#include "powerfail/replay.h"

#define PROG "zonednull replay"
#define EXIT_USAGE 2

struct ropts {
  const char *log, *to, *crash, *out;
  bool list, force;
};

/* What replay may make of a log without --force: the zone files, one a
 * zone, and the data its WP entries rewrite (each the zone up to its new
 * wp, a FINISH's zeros included): 64 MiB beyond 16 times the data the
 * log carries, room for a real workload's power cycles, whose zones hold
 * what the log's writes put there.  A log of a few kilobytes must not
 * make a disk's worth of work.
 */
#define REPLAY_MAX_ZONES 4096u
#define REPLAY_MAX_REWRITE (UINT64_C (64) << 20)
#define REPLAY_REWRITE_PER_BYTE 16u

static void
usage (FILE *out)
{
  fprintf (out,
           "Usage:\n"
           " zonednull replay <log> [--to <mark>|<entry>] [--crash <policy>]"
           " -o <dir>\n"
           " zonednull replay <log> [--to <mark>|<entry>] --list\n"
           "\n"
           "Write the device state a write log (log_writes=FILE) leads to, or"
           " a state\n"
           "a power loss at that point may leave, as a backing_dir.\n"
           "\n"
           "Options:\n"
           "     --to <mark>|<entry>  stop at the first mark of that name, or"
           " after the\n"
           "                          entry of that number (default: the"
           " log's end)\n"
           "     --crash <policy>     none, all, random:SEED, torn:SEED or"
           " enumerate[:MAX]\n"
           "                          (default: no crash, the state reads"
           " saw)\n"
           " -o, --output <dir>       the state's directory: new or empty\n"
           "     --force              a state of more than 4096 zones, or"
           " rewrites\n"
           "                          far beyond the data the log carries\n"
           "     --list               list the entries instead\n"
           " -h, --help               display this help\n"
           "\n"
           "For more details see zonednull(1).\n");
}

static int
cli_usage_error (const char *msg)
{
  fprintf (stderr, "%s: %s\nTry '%s --help' for more information.\n",
           PROG, msg, PROG);
  return EXIT_USAGE;
}

static int
parse (int argc, char **argv, struct ropts *o)
{
  enum { OPT_TO = 256, OPT_CRASH, OPT_LIST, OPT_FORCE };
  static const struct option longopts[] = {
    { "to", required_argument, NULL, OPT_TO },
    { "crash", required_argument, NULL, OPT_CRASH },
    { "output", required_argument, NULL, 'o' },
    { "list", no_argument, NULL, OPT_LIST },
    { "force", no_argument, NULL, OPT_FORCE },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  char msg[256];
  int c;

  opterr = 0;
  while ((c = getopt_long (argc, argv, ":o:h", longopts, NULL)) != -1) {
    switch (c) {
    case OPT_TO: o->to = optarg; break;
    case OPT_CRASH: o->crash = optarg; break;
    case 'o':
      /* Shells add a '/' to a directory's name: the directory is meant,
       * and a symbolic link ending in one must not be followed.
       */
      for (size_t n = strlen (optarg); n > 1 && optarg[n - 1] == '/'; n--)
        optarg[n - 1] = '\0';
      o->out = optarg;
      break;
    case OPT_LIST: o->list = true; break;
    case OPT_FORCE: o->force = true; break;
    case 'h':
      usage (stdout);
      exit (EXIT_SUCCESS);
    case ':':
      snprintf (msg, sizeof msg, "option '%s' requires an argument",
                argv[optind - 1]);
      return cli_usage_error (msg);
    default:
      snprintf (msg, sizeof msg, "unrecognized option '%s'",
                argv[optind - 1]);
      return cli_usage_error (msg);
    }
  }
  if (optind + 1 != argc)
    return cli_usage_error ("one write log, please");
  o->log = argv[optind];
  if (o->list && (o->out || o->crash))
    return cli_usage_error ("--list writes no state: it takes no -o or --crash");
  if (!o->list && o->out == NULL)
    return cli_usage_error ("-o DIR, the state's directory, is missing");
  return 0;
}

static void
list_entry (const struct zn_wlog_rec *r)
{
  bool zoned = r->kind != ZN_WLOG_K_GEOMETRY && r->kind != ZN_WLOG_K_FLUSH
               && r->kind != ZN_WLOG_K_POWER && r->kind != ZN_WLOG_K_MARK;

  printf ("%-8" PRIu64 " %-8s ", r->no, zn_wlog_kind_name (r->kind));
  if (zoned)
    printf ("%-6" PRIu32 " %-12" PRIu64 " %-8" PRIu64, r->zone, r->sector,
            r->nr_sectors);
  else
    printf ("%-6s %-12s %-8s", "-", "-", "-");
  printf (" %-3s", r->flags & ZN_WLOG_FUA ? "fua" : "-");
  if (r->kind == ZN_WLOG_K_MARK)
    printf (" %s", r->mark);
  else if (r->kind == ZN_WLOG_K_FLUSH)
    printf (" ref=%" PRIu64, r->ref);
  else if (r->kind == ZN_WLOG_K_COND)
    printf (" %s", r->ref ? zn_cond_name (r->ref) : "-");
  putchar ('\n');
}

/* One entry at a time, as it is read: a log of any length in the same
 * memory.  A --to mark that never comes is said at the end.
 */
static int
list (const struct ropts *o, struct zn_wlog_reader *log)
{
  struct zn_replay_to t;
  struct zn_wlog_rec rec;
  char err[1024];
  int r;

  if (zn_replay_to_parse (log, o->to, &t, err, sizeof err) < 0) {
    fprintf (stderr, "%s: %s\n", PROG, err);
    return EXIT_FAILURE;
  }
  printf ("%-8s %-8s %-6s %-12s %-8s %-3s %s\n", "entry", "kind", "zone",
          "sector", "sectors", "fua", "mark");
  while ((r = zn_wlog_read_next (log, &rec, err, sizeof err)) > 0) {
    list_entry (&rec);
    if (zn_replay_to_reached (&t, &rec))
      break;
  }
  if (fflush (stdout) != 0)
    return EXIT_FAILURE;
  if (r < 0 || (r == 0 && zn_replay_to_missed (log, &t, err, sizeof err) < 0)) {
    fprintf (stderr, "%s: %s\n", PROG, err);
    return EXIT_FAILURE;
  }
  return EXIT_SUCCESS;
}

/* What makes this state again: the point and the policy. */
static void
say_state (const struct zn_replay_plan *p, const struct zn_keep *keep,
           const char *policy, uint64_t s, uint64_t n,
           const struct zn_replay_state *st)
{
  const struct zn_wlog_rec *last = &p->last;
  struct zn_keep every = *keep;

  /* How many MAX left out, so that a user knows to raise it. */
  every.max = UINT64_MAX;
  if (keep->kind == ZN_KEEP_ENUMERATE)
    printf ("state-%06" PRIu64 ": state %" PRIu64 " of %" PRIu64 " (of %"
            PRIu64 "%s distinct), ", s, s, n,
            zn_replay_nr_states (p, &every),
            zn_replay_nr_states (p, &every) == UINT64_MAX ? " or more" : "");
  printf ("to entry %" PRIu64, last->no);
  if (last->kind == ZN_WLOG_K_MARK)
    printf (" (mark %s)", last->mark);
  printf (", --crash=%s: ", policy);
  zn_replay_describe (p, st, stdout);
}

/* Whether the state of plan is work in proportion to the log, or the
 * user asked for it: the message otherwise.
 */
static bool
work_bounded (const struct ropts *o, const struct zn_replay_plan *p)
{
  const struct zn_geometry *g = zn_wlog_read_geometry (p->log);
  uint64_t rewrite = p->rewrite, carried = p->carried;

  if (o->force)
    return true;
  if (g->nr_zones > REPLAY_MAX_ZONES) {
    fprintf (stderr, "%s: %s: the log's device has %" PRIu32 " zones, a "
             "zone file each; more than %u needs --force\n", PROG,
             zn_wlog_read_name (p->log), g->nr_zones, REPLAY_MAX_ZONES);
    return false;
  }
  if (rewrite > REPLAY_MAX_REWRITE + REPLAY_REWRITE_PER_BYTE * carried) {
    fprintf (stderr, "%s: %s: its power cycles' WP entries rewrite %" PRIu64
             " MiB of zone data, more than 64 MiB beyond %u times the %"
             PRIu64 " MiB the log carries: that needs --force\n", PROG,
             zn_wlog_read_name (p->log), rewrite >> 20,
             REPLAY_REWRITE_PER_BYTE, carried >> 20);
    return false;
  }
  return true;
}

static int
remove_one (const char *path, const struct stat *sb, int type,
            struct FTW *ftw)
{
  (void) sb;
  (void) type;
  if (ftw->level > 0 && remove (path) < 0)
    fprintf (stderr, "%s: removing %s: %s\n", PROG, path, strerror (errno));
  return 0;
}

/* A refused replay leaves no half-written state: what it wrote in DIR
 * goes, and DIR too when replay made it.  DIR was new or empty, so all
 * in it is replay's; FTW_PHYS follows no link.
 */
static void
remove_state (const char *dir, bool made)
{
  nftw (dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
  if (made && rmdir (dir) < 0)
    fprintf (stderr, "%s: removing %s: %s\n", PROG, dir, strerror (errno));
}

static int
write_states (const struct ropts *o, const struct zn_replay_plan *p,
              const struct zn_keep *keep, const char *policy)
{
  uint64_t n = zn_replay_nr_states (p, keep);
  bool enumerate = keep->kind == ZN_KEEP_ENUMERATE;
  struct zn_replay_state st;
  bool have_st = zn_replay_state_init (p, &st) == 0;
  size_t dlen = strlen (o->out) + 16;
  char *dir = malloc (dlen), err[1024];
  struct stat sb;
  bool made = lstat (o->out, &sb) < 0 && errno == ENOENT;
  bool checked = false;
  int ret = EXIT_SUCCESS;

  if (!have_st || dir == NULL)
    ret = EXIT_FAILURE;
  else if (zn_replay_target_dir (o->out, err, sizeof err) < 0) {
    fprintf (stderr, "%s: %s\n", PROG, err);
    ret = EXIT_FAILURE;
  }
  else
    checked = true;         /* DIR is new or was empty: all in it is ours */
  for (uint64_t s = 0; s < n && ret == EXIT_SUCCESS; s++) {
    if (enumerate)
      snprintf (dir, dlen, "%s/state-%06" PRIu64, o->out, s);
    else
      snprintf (dir, dlen, "%s", o->out);
    zn_replay_choose (p, keep, s, &st);
    if (zn_replay_write (p, &st, dir, err, sizeof err) < 0) {
      fprintf (stderr, "%s: %s\n", PROG, err);
      ret = EXIT_FAILURE;
    }
    else
      say_state (p, keep, policy, s, n, &st);
  }
  if (ret != EXIT_SUCCESS && checked)
    remove_state (o->out, made);
  free (dir);
  if (have_st)
    zn_replay_state_free (&st);
  return ret;
}

int
cli_replay (int argc, char **argv)
{
  struct ropts o = { 0 };
  struct zn_keep keep;
  struct zn_replay_plan p;
  struct zn_wlog_reader *log;
  const char *policy;
  char err[1024];
  int ret = parse (argc, argv, &o);

  if (ret)
    return ret;
  policy = o.crash ? o.crash : "all";
  if (zn_keep_parse (policy, true, &keep, err, sizeof err) < 0) {
    fprintf (stderr, "%s: --crash: %s\n", PROG, err);
    return EXIT_USAGE;
  }
  log = zn_wlog_read_open (o.log, err, sizeof err);
  if (log == NULL) {
    fprintf (stderr, "%s: %s\n", PROG, err);
    return EXIT_FAILURE;
  }
  if (o.list)
    ret = list (&o, log);
  else if (zn_replay_plan (log, o.to, &p, err, sizeof err) < 0) {
    fprintf (stderr, "%s: %s\n", PROG, err);
    ret = EXIT_FAILURE;
  }
  else {
    ret = work_bounded (&o, &p) ? write_states (&o, &p, &keep, policy)
          : EXIT_FAILURE;
    zn_replay_plan_free (&p);
  }
  zn_wlog_read_close (log);
  if (fflush (stdout) != 0 || ferror (stdout))
    ret = EXIT_FAILURE;
  return ret;
}
