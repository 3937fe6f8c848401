/* SPDX-License-Identifier: BSD-3-Clause */
/* replay: conformance check of zonednull against golden traces.
 *
 *   replay FILE...                    against the device model, in process
 *   replay --nbdkit=PLUGIN FILE...    over NBD: starts `nbdkit PLUGIN` with
 *                                     each trace's configuration
 *   replay --connect=URI FILE...      over NBD, to a running server
 *
 * Each FILE was recorded from the real null_blk driver (format:
 * tests/traces/README.md).  The header's configuration is applied to a
 * fresh device, every op is re-executed, and the line the recorder would
 * have printed for our device is compared with the recorded one, byte for
 * byte.  Comparing whole lines rather than selected values means a field
 * we forget to check still cannot slip through unnoticed.
 *
 * Over NBD, data goes through the data export and zone operations, zone
 * reports and the exact errno of failed writes through the control
 * channel, all by the client library: what any remote user would see.
 *
 * Exit status: 0 if every file matches, 1 if some file differs (the first
 * difference of each file is printed), 2 on usage errors, unreadable files
 * or malformed traces.
 */
#include "replay.h"

/* ---- the ops ------------------------------------------------------------ */

enum op_kind { OP_RESETALL, OP_WRITE, OP_READ, OP_OPEN, OP_CLOSE, OP_FINISH, OP_RESET };

static const char *const op_names[] = {
  [OP_RESETALL] = "resetall", [OP_WRITE] = "write", [OP_READ] = "read",
  [OP_OPEN] = "open", [OP_CLOSE] = "close", [OP_FINISH] = "finish",
  [OP_RESET] = "reset",
};

struct op_line {
  uint64_t index;
  enum op_kind kind;
  bool has_zone;            /* false for "z=-" */
  uint64_t zone;
  uint64_t sector, nsect;
};

/* Parses the request part of an op line, up to and including "res=".  The
 * outcome part is not parsed: it is only ever compared as text.
 */
static int
parse_op (const struct reader *r, struct op_line *op)
{
  const char *p = r->line, *end;
  size_t k;

  if (!parse_u64 (p, &end, &op->index) || *end != ' ')
    return malformed (r, "expected an op line '<i> <op> z=...'");
  p = end + 1;
  for (k = 0; k < sizeof op_names / sizeof op_names[0]; k++) {
    size_t len = strlen (op_names[k]);
    if (strncmp (p, op_names[k], len) == 0 && p[len] == ' ')
      break;
  }
  if (k == sizeof op_names / sizeof op_names[0])
    return malformed (r, "unknown op '%.*s'", (int) strcspn (p, " "), p);
  op->kind = (enum op_kind) k;
  p += strlen (op_names[k]) + 1;

  if (strncmp (p, "z=", 2) != 0)
    return malformed (r, "expected 'z=' after the op");
  p += 2;
  if (*p == '-') {
    op->has_zone = false;
    end = p + 1;
  }
  else if (parse_u64 (p, &end, &op->zone))
    op->has_zone = true;
  else
    return malformed (r, "bad zone number in 'z='");
  p = end;

  if (strncmp (p, " sector=", 8) != 0 || !parse_u64 (p + 8, &end, &op->sector))
    return malformed (r, "expected ' sector=<number>' after the zone");
  p = end;
  if (strncmp (p, " nsect=", 7) != 0 || !parse_u64 (p + 7, &end, &op->nsect))
    return malformed (r, "expected ' nsect=<number>' after the sector");
  p = end;
  if (strncmp (p, " res=", 5) != 0)
    return malformed (r, "expected ' res=' after nsect");
  return RC_MATCH;
}

/* The recorder's z is the zone of the first sector, except for a write
 * aimed "behind the write pointer" of zone z when that pointer is 8
 * sectors past the zone start: it starts 8 sectors before zone z and
 * either crosses into it (c6 op 712) or, one block long, ends just short
 * of it.  z is the recorder's aim, not something the device reports, so
 * for a write either zone is what the recorder could have printed.
 */
static void
format_zone_field (struct strbuf *sb, const struct op_line *op,
                   const struct dev_info *info)
{
  uint64_t first, last;

  if (op->kind == OP_RESETALL) {
    sb_printf (sb, "-");
    return;
  }
  first = op->sector / info->zone_sectors;
  last = op->nsect ? (op->sector + op->nsect - 1) / info->zone_sectors : first;
  if (op->kind == OP_WRITE && op->has_zone && op->zone >= first
      && (op->zone <= last
          || (op->zone == first + 1
              && op->zone * info->zone_sectors - op->sector <= 8)))
    sb_printf (sb, "%" PRIu64, op->zone);
  else
    sb_printf (sb, "%" PRIu64, first);
}

/* Per-file replay state, all released by replay_end. */
struct replay {
  const struct backend *be;
  void *dev;
  struct dev_info info;
  uint64_t seed;
  struct zn_zone *zones;
  unsigned char *buf;
  size_t buf_cap;
  struct strbuf actual;
  struct trace_cfg tc;
};

static bool
ensure_buf (struct replay *rp, size_t n)
{
  unsigned char *b;

  if (n <= rp->buf_cap)
    return true;
  b = realloc (rp->buf, n);
  if (!b)
    return false;
  rp->buf = b;
  rp->buf_cap = n;
  return true;
}

/* Appends " | <tokens>" from a fresh report. */
static void
format_states (struct replay *rp)
{
  struct strbuf *sb = &rp->actual;
  int64_t n = rp->be->report (rp->dev, rp->zones, rp->info.nr_zones);

  sb_printf (sb, " |");
  if (n < 0) {
    sb_printf (sb, " REPORT_ERR ");
    format_io_result (sb, n, 0);
    return;
  }
  for (int64_t i = 0; i < n; i++) {
    const struct zn_zone *z = &rp->zones[i];

    if (z->cond == ZN_COND_NOT_WP)
      sb_printf (sb, " N");
    else
      sb_printf (sb, " %c%" PRIu64, cond_letter (z->cond), z->wp - z->start);
  }
}

static int
run_op (struct replay *rp, const struct reader *r, const struct op_line *op)
{
  struct strbuf *sb = &rp->actual;
  uint64_t nbytes = 0;
  int64_t res;

  sb_reset (sb);
  sb_printf (sb, "%" PRIu64 " %s z=", op->index, op_names[op->kind]);
  format_zone_field (sb, op, &rp->info);
  sb_printf (sb, " sector=%" PRIu64 " nsect=%" PRIu64 " res=",
             op->sector, op->nsect);

  if (op->kind == OP_WRITE || op->kind == OP_READ) {
    if (op->nsect > MAX_IO_BYTES >> ZN_SECTOR_SHIFT)
      return malformed (r, "nsect=%" PRIu64 " is beyond what replay handles",
                        op->nsect);
    nbytes = op->nsect << ZN_SECTOR_SHIFT;
    if (!ensure_buf (rp, nbytes ? (size_t) nbytes : 1))
      die_oom ();
  }

  switch (op->kind) {
  case OP_WRITE:
    fill_pattern (rp->buf, (size_t) nbytes, op->index, rp->seed,
                  op->sector << ZN_SECTOR_SHIFT);
    res = rp->be->write (rp->dev, rp->buf, op->sector, op->nsect);
    format_io_result (sb, res, nbytes);
    break;
  case OP_READ:
    /* Bytes the device does not transfer keep this fill and show in the sum. */
    memset (rp->buf, 0xA5, (size_t) nbytes);
    res = rp->be->read (rp->dev, rp->buf, op->sector, op->nsect);
    format_io_result (sb, res, nbytes);
    if (res > 0)
      sb_printf (sb, " sum=%016" PRIx64,
                 fnv1a64 (rp->buf, (size_t) (res < (int64_t) nbytes ? res : (int64_t) nbytes)));
    break;
  default: {
    enum zn_zone_op zop =
      op->kind == OP_OPEN ? ZN_OP_OPEN :
      op->kind == OP_CLOSE ? ZN_OP_CLOSE :
      op->kind == OP_FINISH ? ZN_OP_FINISH : ZN_OP_RESET;

    /* resetall is recorded with its range (0, capacity), and passing the
     * recorded range is exactly what the ioctl did.
     */
    res = rp->be->zone_mgmt (rp->dev, zop, op->sector, op->nsect);
    format_io_result (sb, res, 0);
    break;
  }
  }

  format_states (rp);
  return compare_line (r, sb->s, true);
}

/* ---- one file ----------------------------------------------------------- */

static void
replay_end (struct replay *rp)
{
  if (rp->dev)
    rp->be->close (rp->dev);
  trace_cfg_free (&rp->tc);
  free (rp->zones);
  free (rp->buf);
  free (rp->actual.s);
}

static int
replay_body (struct replay *rp, struct reader *r)
{
  struct trace_cfg *tc = &rp->tc;
  uint64_t nops = 0, first = 0, expected_index;
  unsigned nr_zone_lines = 0;
  int64_t nr_reported;
  char err[1024] = "";
  bool refused = false;
  int rc, got;

  zn_config_init (&tc->cfg);
  if ((rc = expect_line (r, "# kernel ", "kernel")) != RC_MATCH)
    return rc;
  if ((rc = parse_kernel (r, &tc->cfg.kernel)) != RC_MATCH)
    return rc;
  if ((rc = expect_line (r, "# null_blk configfs:", "configfs")) != RC_MATCH)
    return rc;
  if ((rc = parse_config (r, tc)) != RC_MATCH)
    return rc;
  if ((rc = expect_line (r, "# cmd:", "command")) != RC_MATCH)
    return rc;
  if ((rc = expect_line (r, "# zonetrace v1 ", "recorder")) != RC_MATCH)
    return rc;
  if ((rc = parse_recorder (r, &rp->seed, &nops, &first)) != RC_MATCH)
    return rc;
  expected_index = first;

  /* The kernel accepted this configuration, so refusing it is a failure
   * of the device, not of the trace.
   */
  rp->dev = rp->be->open (tc, &refused, err, sizeof err);
  if (!rp->dev && refused) {
    fprintf (stderr, "%s:2: mismatch: the %s refuses the configuration: %s\n",
             r->path, rp->be->name, err[0] ? err : strerror (errno));
    return RC_MISMATCH;
  }
  if (!rp->dev) {
    fprintf (stderr, "%s: cannot reach the %s: %s\n", r->path, rp->be->name, err);
    return RC_TROUBLE;
  }
  if (rp->be->info (rp->dev, &rp->info) < 0) {
    fprintf (stderr, "%s: cannot get the %s's geometry\n", r->path, rp->be->name);
    return RC_TROUBLE;
  }
  if (rp->info.zone_sectors == 0) {
    fprintf (stderr, "%s: the %s reports zero-length zones\n", r->path, rp->be->name);
    return RC_MISMATCH;
  }

  if ((rc = expect_line (r, "# size_bytes=", "geometry")) != RC_MATCH)
    return rc;
  sb_reset (&rp->actual);
  format_geometry (&rp->actual, &rp->info);
  if ((rc = compare_line (r, rp->actual.s, false)) != RC_MATCH)
    return rc;

  if ((rc = expect_line (r, "# report_capacity_flag=", "report flag")) != RC_MATCH)
    return rc;
  /* Every zone the model reports carries a valid capacity. */
  if ((rc = compare_line (r, "# report_capacity_flag=1", false)) != RC_MATCH)
    return rc;

  rp->zones = calloc (rp->info.nr_zones ? rp->info.nr_zones : 1, sizeof *rp->zones);
  if (!rp->zones)
    die_oom ();
  nr_reported = rp->be->report (rp->dev, rp->zones, rp->info.nr_zones);
  if (nr_reported < 0) {
    fprintf (stderr, "%s: initial zone report failed: %s\n",
             r->path, strerror ((int) -nr_reported));
    return RC_MISMATCH;
  }

  while ((got = next_line (r)) > 0) {
    struct op_line op = { 0 };

    if (strncmp (r->line, "# zone ", 7) == 0) {
      if (expected_index > first)
        return malformed (r, "zone line among the ops");
      sb_reset (&rp->actual);
      if (nr_zone_lines < nr_reported)
        format_zone (&rp->actual, nr_zone_lines, &rp->zones[nr_zone_lines]);
      else
        sb_printf (&rp->actual, "(no zone %u in the initial report)", nr_zone_lines);
      if ((rc = compare_line (r, rp->actual.s, false)) != RC_MATCH)
        return rc;
      nr_zone_lines++;
      continue;
    }
    if (r->line[0] == '#')
      return malformed (r, "unexpected header line");

    if (expected_index == first && nr_zone_lines < nr_reported) {
      /* The trace lists fewer zones than the device has. */
      sb_reset (&rp->actual);
      format_zone (&rp->actual, nr_zone_lines, &rp->zones[nr_zone_lines]);
      return compare_line (r, rp->actual.s, false);
    }

    if ((rc = parse_op (r, &op)) != RC_MATCH)
      return rc;
    if (op.index != expected_index)
      return malformed (r, "op %" PRIu64 " where op %" PRIu64 " was expected",
                        op.index, expected_index);
    if (op.index > nops)
      return malformed (r, "more ops than the header's ops=%" PRIu64, nops);
    if (expected_index == 0 && op.kind != OP_RESETALL)
      return malformed (r, "op 0 is not resetall");
    if ((rc = run_op (rp, r, &op)) != RC_MATCH)
      return rc;
    expected_index++;
  }
  if (got < 0)
    return RC_TROUBLE;
  if (expected_index != nops + 1) {
    fprintf (stderr, "%s:%lu: malformed trace: it ends after %" PRIu64
             " ops, the header announces ops %" PRIu64 "..%" PRIu64 "\n",
             r->path, r->lineno, expected_index - first, first, nops);
    return RC_TROUBLE;
  }
  printf ("%s: %" PRIu64 " ops match on the %s\n", r->path,
          expected_index - first, rp->be->name);
  return RC_MATCH;
}

static int
replay_file (const struct backend *be, const char *path)
{
  struct reader r = { .path = path };
  struct replay rp = { .be = be };
  int rc;

  r.fp = fopen (path, "r");
  if (!r.fp) {
    fprintf (stderr, "%s: cannot open: %s\n", path, strerror (errno));
    return RC_TROUBLE;
  }
  rc = replay_body (&rp, &r);
  replay_end (&rp);
  free (r.line);
  fclose (r.fp);
  return rc;
}

/* The user of FILE's first username:hexkey line. */
static int
read_psk_user (const char *file)
{
  FILE *fp = fopen (file, "r");
  char line[512];
  char *colon;

  if (fp == NULL || fgets (line, sizeof line, fp) == NULL
      || (colon = strchr (line, ':')) == NULL || colon == line
      || (size_t) (colon - line) >= sizeof tls_user) {
    fprintf (stderr, "replay: --tls-psk=%s: %s\n", file,
             fp ? "no username:hexkey line first" : strerror (errno));
    if (fp)
      fclose (fp);
    return -1;
  }
  fclose (fp);
  memcpy (tls_user, line, (size_t) (colon - line));
  tls_user[colon - line] = '\0';
  return 0;
}

static void
usage (FILE *fp)
{
  fputs ("usage: replay [--nbdkit=PLUGIN [--tls-psk=FILE] | --connect=URI] FILE...\n"
         "Replays golden null_blk traces against the zonednull model, or\n"
         "over NBD through the client library, and stops each file at its\n"
         "first difference.\n"
         "  --nbdkit=PLUGIN  start `nbdkit PLUGIN` ($NBDKIT, default nbdkit)\n"
         "                   with each trace's configuration on a Unix socket\n"
         "  --connect=URI    use a running server (libnbd URI) that serves a\n"
         "                   device with the traces' configuration\n"
         "  --tls-psk=FILE   with --nbdkit: nbdkit --tls=require --tls-psk=FILE,\n"
         "                   reached over nbds+unix:// as FILE's first user\n"
         "Exit status: 0 all match, 1 a difference, 2 usage or trace error.\n",
         fp);
}

int
main (int argc, char **argv)
{
  const struct backend *be = &model_backend;
  int first = 1, worst = RC_MATCH;

  for (; first < argc && argv[first][0] == '-' && argv[first][1] != '\0'; first++) {
    const char *arg = argv[first];

    if (strcmp (arg, "--") == 0) {
      first++;
      break;
    }
    if (strcmp (arg, "--help") == 0) {
      usage (stdout);
      return RC_MATCH;
    }
    if (strncmp (arg, "--nbdkit=", 9) == 0 && arg[9])
      nbdkit_plugin = arg + 9;
    else if (strncmp (arg, "--connect=", 10) == 0 && arg[10])
      connect_uri = arg + 10;
    else if (strncmp (arg, "--tls-psk=", 10) == 0 && arg[10])
      tls_psk = arg;            /* passed on to nbdkit as it is */
    else {
      fprintf (stderr, "replay: unknown option '%s'\n", arg);
      usage (stderr);
      return RC_TROUBLE;
    }
  }
  if (nbdkit_plugin && connect_uri) {
    fputs ("replay: --nbdkit and --connect are mutually exclusive\n", stderr);
    return RC_TROUBLE;
  }
  if (tls_psk && !nbdkit_plugin) {
    fputs ("replay: --tls-psk needs --nbdkit\n", stderr);
    return RC_TROUBLE;
  }
  if (tls_psk && read_psk_user (tls_psk + 10) == -1)
    return RC_TROUBLE;
  if (nbdkit_plugin || connect_uri)
    be = &nbd_backend;
  if (first >= argc) {
    usage (stderr);
    return RC_TROUBLE;
  }

  /* Every file is tried even after a failure: a full picture of which
   * configurations diverge is worth more than stopping at the first.
   */
  for (int i = first; i < argc; i++) {
    int rc = replay_file (be, argv[i]);
    if (rc > worst)
      worst = rc;
  }
  fflush (stdout);
  return worst;
}
