/* SPDX-License-Identifier: BSD-3-Clause */
/* zonednull: blkzone(8) for zonednull devices, over NBD.
 *
 * Subcommands, options and the report format follow util-linux's blkzone,
 * so that scripts written for blkzone (fio's t/zbd, blktests) can call this
 * instead; info, readonly, offline, badblocks, power-cycle, append and
 * --json are additions.  See zonednull(1).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli-replay.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

#define EXIT_USAGE 2

/* Zones asked for per report call, as blkzone does. */
#define REPORT_BATCH 4096u

enum { TOGGLE_READONLY, TOGGLE_OFFLINE };

static const struct command commands[] = {
  { "report", K_REPORT, 0, "Report the zones of the device" },
  { "capacity", K_CAPACITY, 0, "Report the sum of the zone capacities" },
  { "reset", K_ACTION, ZN_OP_RESET, "Reset a range of zones" },
  { "open", K_ACTION, ZN_OP_OPEN, "Open a range of zones explicitly" },
  { "close", K_ACTION, ZN_OP_CLOSE, "Close a range of zones" },
  { "finish", K_ACTION, ZN_OP_FINISH, "Make a range of zones full" },
  { "info", K_INFO, 0, "Show geometry, limits and zone counters" },
  { "readonly", K_TOGGLE, TOGGLE_READONLY,
    "Toggle the read-only condition of a zone" },
  { "offline", K_TOGGLE, TOGGLE_OFFLINE,
    "Toggle the offline condition of a zone" },
  { "badblocks", K_BADBLOCKS, 0,
    "Mark a range of sectors bad, or good again with --clear" },
  { "power-cycle", K_POWER, 0,
    "Power the device off and on, losing unflushed cached data" },
  { "append", K_APPEND, 0,
    "Zone append: write data at a zone's write pointer, print its sector" },
  { "mark", K_MARK, 0, "Add a mark NAME to the device's write log" },
  { "log", K_LOG, 0, "Start (start NAME) or stop (stop) a write log" },
  { "fault", K_FAULT, 0,
    "Add (add RULE...), list (list) or clear (clear [ID]) fault rules" },
};

static void
usage (FILE *out)
{
  fprintf (out,
           "Usage:\n"
           " %s <command> [options] <uri>\n"
           " %s mark <name> <uri>\n"
           " %s log start <name> <uri> | log stop <uri>\n"
           " %s fault add <word>... <uri> | fault list <uri> |"
           " fault clear [<id>] <uri>\n"
           "\n"
           "Run a command on a zonednull device served over NBD.\n"
           "\n"
           "Commands:\n", PROG, PROG, PROG, PROG);
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf (out, " %-12s %s\n", commands[i].name, commands[i].help);
  fprintf (out, " %-12s %s\n", "replay", "a write log's state, offline: "
           "zonednull replay --help");
  fprintf (out,
           "\n"
           "Options:\n"
           " -o, --offset <sector>   first sector to act on (512-byte sectors)\n"
           " -l, --length <sectors>  sectors to act on (512-byte sectors)\n"
           " -c, --count <number>    number of zones to act on\n"
           " -f, --force             accepted for blkzone compatibility\n"
           "     --clear             badblocks: mark the range good again\n"
           "     --file <file>       append: the data (\"-\" for standard input)\n"
           "     --pattern <byte>    append: data of this byte, -l sectors of it\n"
           "     --fua               append: write with FUA\n"
           "     --keep <policy>     power-cycle: unflushed writes kept: none\n"
           "                         (default), all, random:SEED or torn:SEED\n"
           "     --timeout <seconds> wait at most this long for the server\n"
           "                         (default 30; 0: forever)\n"
           " -v, --verbose           display more details\n"
           "     --json              JSON output (report, capacity, info, append,\n"
           "                         fault list)\n"
           " -h, --help              display this help\n"
           " -V, --version           display the version\n"
           "\n"
           "Arguments:\n"
           " <uri> is a libnbd URI: nbd://HOST[:PORT]/[EXPORT],\n"
           "   nbd+unix:///[EXPORT]?socket=PATH, or nbds://... for TLS.\n"
           " <sector> and <sectors> are decimal or 0x-prefixed hexadecimal,\n"
           "   optionally followed by K, M, G, T, P or E (powers of 1024,\n"
           "   \"iB\" optional; with \"B\", powers of 1000).\n"
           "\n"
           "For more details see zonednull(1).\n");
}

void
cli_usage_error (const char *fmt, ...)
{
  va_list ap;

  fprintf (stderr, "%s: ", PROG);
  va_start (ap, fmt);
  vfprintf (stderr, fmt, ap);
  va_end (ap);
  fprintf (stderr, "\nTry '%s --help' for more information.\n", PROG);
  exit (EXIT_USAGE);
}

/* Closed on every exit path, so that leak checkers see a clean exit. */
static struct zn_client *client;

static void __attribute__ ((noreturn, format (printf, 1, 2)))
die (const char *fmt, ...)
{
  va_list ap;

  fprintf (stderr, "%s: ", PROG);
  va_start (ap, fmt);
  vfprintf (stderr, fmt, ap);
  va_end (ap);
  fputc ('\n', stderr);
  zn_client_close (client);
  exit (EXIT_FAILURE);
}

/* A number as blkzone takes sectors: decimal or 0x hexadecimal, with an
 * optional binary (K, KiB) or decimal (KB) multiplier.  Returns false if
 * the text is not such a number or overflows 64 bits.
 */
bool
cli_parse_number (const char *s, uint64_t *value)
{
  static const char units[] = "KMGTPE";
  uint64_t v = 0, base = 10, mult = 1;
  const char *p = s, *u;
  bool digits = false;

  if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
    base = 16;
    p += 2;
  }
  for (;; p++) {
    unsigned d;

    if (*p >= '0' && *p <= '9')
      d = (unsigned) (*p - '0');
    else if (base == 16 && *p >= 'a' && *p <= 'f')
      d = (unsigned) (*p - 'a' + 10);
    else if (base == 16 && *p >= 'A' && *p <= 'F')
      d = (unsigned) (*p - 'A' + 10);
    else
      break;
    if (v > (UINT64_MAX - d) / base)
      return false;
    v = v * base + d;
    digits = true;
  }
  if (!digits)
    return false;
  if (*p) {
    char c = *p >= 'a' && *p <= 'z' ? (char) (*p - 'a' + 'A') : *p;
    uint64_t step = 1024;
    int power;

    u = strchr (units, c);
    if (c == '\0' || u == NULL)
      return false;
    power = (int) (u - units) + 1;
    p++;
    if (strcmp (p, "B") == 0)
      step = 1000;
    else if (*p && strcmp (p, "iB") != 0)
      return false;
    while (power--) {
      if (mult > UINT64_MAX / step)
        return false;
      mult *= step;
    }
    if (v > UINT64_MAX / mult)
      return false;
    v *= mult;
  }
  *value = v;
  return true;
}

/* --timeout: whole seconds, as zonednull-ublk's. */
#define MAX_TIMEOUT 86400u

static bool
parse_seconds (const char *s, unsigned *value)
{
  uint64_t v = 0;

  if (*s == '\0')
    return false;
  for (; *s; s++) {
    if (*s < '0' || *s > '9')
      return false;
    v = v * 10 + (uint64_t) (*s - '0');
    if (v > MAX_TIMEOUT)
      return false;
  }
  *value = (unsigned) v;
  return true;
}

/* What the command line asks for makes sense together. */
static void
check_options (const struct options *o)
{
  if (o->have_count && o->have_length)
    cli_usage_error ("options --count and --length are mutually exclusive");
  if (o->json && o->cmd->kind != K_REPORT && o->cmd->kind != K_CAPACITY
      && o->cmd->kind != K_INFO && o->cmd->kind != K_APPEND
      && o->cmd->kind != K_FAULT)
    cli_usage_error ("--json applies to report, capacity, info, append and "
                     "fault list only");
  if ((o->file || o->have_pattern || o->fua) && o->cmd->kind != K_APPEND)
    cli_usage_error ("--file, --pattern and --fua apply to append only");
  if (o->cmd->kind == K_APPEND) {
    if (!o->have_offset)
      cli_usage_error ("append needs -o SECTOR, the start of the zone to "
                   "append to");
    if (o->have_count)
      cli_usage_error ("append acts on one zone: --count does not apply");
    if (!o->file == !o->have_pattern)
      cli_usage_error ("append needs its data: one of --file FILE and "
                   "--pattern BYTE");
    if (o->have_pattern && !o->have_length)
      cli_usage_error ("append --pattern needs -l SECTORS, the data's length");
  }
  if (o->cmd->kind == K_TOGGLE) {
    if (!o->have_offset)
      cli_usage_error ("%s needs -o SECTOR, a sector of the zone to toggle",
                   o->cmd->name);
    if (o->have_count || o->have_length)
      cli_usage_error ("%s acts on one zone: --count and --length do not apply",
                   o->cmd->name);
  }
  if (o->cmd->kind == K_INFO
      && (o->have_offset || o->have_count || o->have_length))
    cli_usage_error ("info takes no --offset, --length or --count");
  if (o->clear && o->cmd->kind != K_BADBLOCKS)
    cli_usage_error ("--clear applies to badblocks only");
  if (o->cmd->kind == K_BADBLOCKS) {
    /* No default range: "the whole device" is too easy to get by
     * mistake when every read and write there then fails.
     */
    if (o->have_count)
      cli_usage_error ("badblocks acts on sectors, not zones: --count does not "
                   "apply");
    if (!o->have_offset)
      cli_usage_error ("badblocks needs -o SECTOR, the first sector of the range");
    if (!o->have_length)
      cli_usage_error ("badblocks needs -l SECTORS, the number of sectors");
  }
  if (o->keep_text && o->cmd->kind != K_POWER)
    cli_usage_error ("--keep applies to power-cycle only");
  if (o->cmd->kind == K_POWER
      && (o->have_offset || o->have_count || o->have_length))
    cli_usage_error ("power-cycle acts on the whole device: it takes no "
                 "--offset, --length or --count");
}

static void
parse_options (int argc, char **argv, struct options *o)
{
  enum { OPT_JSON = 256, OPT_CLEAR, OPT_FILE, OPT_PATTERN, OPT_FUA,
         OPT_TIMEOUT, OPT_KEEP };
  char err[256];
  static const struct option longopts[] = {
    { "offset", required_argument, NULL, 'o' },
    { "length", required_argument, NULL, 'l' },
    { "count", required_argument, NULL, 'c' },
    { "force", no_argument, NULL, 'f' },
    { "verbose", no_argument, NULL, 'v' },
    { "json", no_argument, NULL, OPT_JSON },
    { "clear", no_argument, NULL, OPT_CLEAR },
    { "file", required_argument, NULL, OPT_FILE },
    { "pattern", required_argument, NULL, OPT_PATTERN },
    { "fua", no_argument, NULL, OPT_FUA },
    { "timeout", required_argument, NULL, OPT_TIMEOUT },
    { "keep", required_argument, NULL, OPT_KEEP },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 },
  };
  uint64_t n;
  int c;

  /* As in blkzone, the command comes first. */
  if (argc >= 2 && argv[1][0] != '-') {
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
      if (strcmp (argv[1], commands[i].name) == 0)
        o->cmd = &commands[i];
    if (o->cmd == NULL)
      cli_usage_error ("%s is not a valid command name", argv[1]);
    argv++;
    argc--;
  }

  /* getopt's own messages would name the command or the libtool
   * wrapper's binary, not the program.
   */
  opterr = 0;
  while ((c = getopt_long (argc, argv, ":o:l:c:fvhV", longopts, NULL)) != -1) {
    switch (c) {
    case 'o':
      if (!cli_parse_number (optarg, &o->offset))
        cli_usage_error ("failed to parse zone offset: '%s'", optarg);
      o->have_offset = true;
      break;
    case 'l':
      if (!cli_parse_number (optarg, &o->length))
        cli_usage_error ("failed to parse number of sectors: '%s'", optarg);
      /* blkzone reads 0 as "not given", which turns "reset -l 0" into a
       * reset of the whole device; refuse it instead.
       */
      if (o->length == 0)
        cli_usage_error ("--length must be at least 1 sector");
      o->have_length = true;
      break;
    case 'c':
      if (!cli_parse_number (optarg, &n) || n > UINT32_MAX)
        cli_usage_error ("failed to parse number of zones: '%s'", optarg);
      if (n == 0)
        cli_usage_error ("--count must be at least 1 zone");
      o->count = (uint32_t) n;
      o->have_count = true;
      break;
    case 'f':
      break;
    case 'v':
      o->verbose = true;
      break;
    case OPT_JSON:
      o->json = true;
      break;
    case OPT_CLEAR:
      o->clear = true;
      break;
    case OPT_FILE:
      o->file = optarg;
      break;
    case OPT_PATTERN:
      if (!cli_parse_number (optarg, &n) || n > 255)
        cli_usage_error ("failed to parse pattern byte: '%s' (0 to 255, or 0x0 "
                     "to 0xff)", optarg);
      o->pattern = (uint8_t) n;
      o->have_pattern = true;
      break;
    case OPT_FUA:
      o->fua = true;
      break;
    case OPT_TIMEOUT:
      if (!parse_seconds (optarg, &o->timeout))
        cli_usage_error ("failed to parse --timeout: '%s' (seconds, 0 to %u)",
                     optarg, MAX_TIMEOUT);
      break;
    case OPT_KEEP:
      if (zn_keep_parse (optarg, false, &o->keep, err, sizeof err) < 0)
        cli_usage_error ("--keep: %s", err);
      o->keep_text = optarg;
      break;
    case 'h':
      usage (stdout);
      exit (EXIT_SUCCESS);
    case 'V':
      printf ("%s from zonednull %s\n", PROG, PACKAGE_VERSION);
      exit (EXIT_SUCCESS);
    case ':':
      cli_usage_error ("option '%s' requires an argument", argv[optind - 1]);
    default:
      if (strncmp (argv[optind - 1], "--", 2) != 0)
        cli_usage_error ("invalid option -- '%c'", optopt);
      if (optopt)
        cli_usage_error ("option '%s' takes no argument", argv[optind - 1]);
      cli_usage_error ("unrecognized option '%s'", argv[optind - 1]);
    }
  }

  if (o->cmd == NULL)
    cli_usage_error ("no command specified");
  if (o->cmd->kind == K_MARK || o->cmd->kind == K_LOG)
    optind = cli_log_args (o, argc, argv, optind);
  if (o->cmd->kind == K_FAULT)
    optind = cli_fault_args (o, argc, argv, optind);
  if (optind == argc)
    cli_usage_error ("no URI specified");
  o->uri = argv[optind++];
  if (optind != argc)
    cli_usage_error ("unexpected number of arguments");

  check_options (o);
}

/* blkzone's abbreviations, indexed by the low four bits of the condition. */
static const char *
cond_abbrev (uint8_t cond)
{
  static const char *const abbrev[16] = {
    "nw", "em", "oi", "oe", "cl", "x5", "x6", "x7",
    "x8", "x9", "xA", "xB", "xC", "ro", "fu", "of",
  };

  return abbrev[cond & 15];
}

static const char *
type_name (uint8_t type)
{
  static const char *const names[] = {
    "RESERVED", "CONVENTIONAL", "SEQ_WRITE_REQUIRED", "SEQ_WRITE_PREFERRED",
  };

  return type < 4 ? names[type] : "UNKNOWN";
}

/* Conventional, read-only and offline zones have no write pointer; what
 * the report holds there is a placeholder.
 */
static bool
has_wp (const struct zn_zone *z)
{
  return z->type != ZN_ZONE_CONVENTIONAL && z->cond != ZN_COND_READONLY
    && z->cond != ZN_COND_OFFLINE;
}

/* "zone 3 (sectors 6144-8191)" or "zones 1-7 (sectors 2048-16383)". */
static void
describe_range (char *buf, size_t len, const struct zn_control_info *geo,
                uint64_t sector, uint64_t nr_sectors)
{
  uint64_t last = nr_sectors ? sector + nr_sectors - 1 : sector;
  uint64_t z0 = sector / geo->zone_sectors, z1 = last / geo->zone_sectors;

  if (z0 == z1)
    snprintf (buf, len, "zone %" PRIu64 " (sectors %" PRIu64 "-%" PRIu64 ")",
              z0, sector, last);
  else
    snprintf (buf, len, "zones %" PRIu64 "-%" PRIu64 " (sectors %" PRIu64
              "-%" PRIu64 ")", z0, z1, sector, last);
}

void
cli_die_client (struct zn_client *c, const char *what, int r)
{
  int err = -r;

  fprintf (stderr, "%s: %s: %s: %s\n", PROG, what, zn_errno_name (err),
           zn_client_error (c));
  zn_client_close (client);
  exit (EXIT_FAILURE);
}

static void
print_zone_line (const struct zn_zone *z)
{
  /* blkzone shows the write pointer relative to the zone start, and 0
   * for conventional zones.
   */
  printf ("  start: 0x%09" PRIx64 ", len 0x%06" PRIx64 ", cap 0x%06" PRIx64
          ", wptr 0x%06" PRIx64 " reset:%u non-seq:%u, zcond:%2u(%s)"
          " [type: %u(%s)]\n",
          z->start, z->len, z->capacity,
          z->type == ZN_ZONE_CONVENTIONAL ? 0 : z->wp - z->start,
          0u, 0u, (unsigned) z->cond, cond_abbrev (z->cond),
          (unsigned) z->type, type_name (z->type));
}

static void
print_zone_json (const struct zn_zone *z, bool first)
{
  printf ("%s\n    {\"start\": %" PRIu64 ", \"len\": %" PRIu64
          ", \"cap\": %" PRIu64 ", \"wp\": ",
          first ? "" : ",", z->start, z->len, z->capacity);
  if (has_wp (z))
    printf ("%" PRIu64, z->wp);
  else
    printf ("null");
  printf (", \"type\": %u, \"type_name\": \"%s\", \"cond\": %u"
          ", \"cond_name\": \"%s\"}",
          (unsigned) z->type, type_name (z->type), (unsigned) z->cond,
          zn_cond_name (z->cond));
}

/* report and capacity: the zones from the one holding the offset, as many
 * as --count, or enough to cover --length, or up to the end.
 */
static void
cmd_report (struct zn_client *c, const struct zn_control_info *geo,
            const struct options *o)
{
  bool capacity_only = o->cmd->kind == K_CAPACITY;
  uint64_t offset = o->offset, nr_zones, sum = 0;
  struct zn_zone *zones;
  bool first = true;

  if (offset >= geo->capacity)
    die ("%s: offset %" PRIu64 " is at or beyond the end of the device "
         "(%" PRIu64 " sectors)", o->cmd->name, offset, geo->capacity);
  if (o->have_count)
    nr_zones = o->count;
  else if (o->have_length)
    nr_zones = o->length / geo->zone_sectors
      + (o->length % geo->zone_sectors != 0);
  else
    nr_zones = 1 + (geo->capacity - offset) / geo->zone_sectors;

  zones = malloc (REPORT_BATCH * sizeof *zones);
  if (zones == NULL)
    die ("%s", strerror (ENOMEM));
  if (o->json && !capacity_only)
    printf ("{\n  \"zones\": [");

  while (nr_zones && offset < geo->capacity) {
    unsigned want = nr_zones < REPORT_BATCH ? (unsigned) nr_zones : REPORT_BATCH;
    int n = zn_client_report (c, offset, zones, want);

    if (n < 0) {
      free (zones);
      cli_die_client (c, o->cmd->name, n);
    }
    if (o->verbose && !o->json)
      printf ("Found %d zones from 0x%" PRIx64 "\n", n, offset);
    if (n == 0)
      break;
    for (int i = 0; i < n; i++) {
      const struct zn_zone *z = &zones[i];

      if (z->len == 0) {
        nr_zones = 0;
        break;
      }
      if (capacity_only)
        sum += z->capacity;
      else if (o->json)
        print_zone_json (z, first);
      else
        print_zone_line (z);
      first = false;
      nr_zones--;
      offset = z->start + z->len;
    }
  }
  free (zones);

  if (capacity_only) {
    if (o->json)
      printf ("{\"capacity\": %" PRIu64 "}\n", sum);
    else
      printf ("0x%09" PRIx64 "\n", sum);
  }
  else if (o->json)
    printf ("%s]\n}\n", first ? "" : "\n  ");
}

/* reset, open, close, finish: blkzone's range rules, then one command. */
static void
cmd_action (struct zn_client *c, const struct zn_control_info *geo,
            const struct options *o)
{
  uint64_t zs = geo->zone_sectors, offset = o->offset, len;
  char range[128];
  int r;

  if (offset % zs)
    die ("%s: offset %" PRIu64 " is not aligned to the zone size "
         "(%" PRIu64 " sectors)", o->cmd->name, offset, zs);
  if (offset >= geo->capacity)
    die ("%s: offset %" PRIu64 " is at or beyond the end of the device "
         "(%" PRIu64 " sectors)", o->cmd->name, offset, geo->capacity);

  if (o->have_count)
    len = (uint64_t) o->count > UINT64_MAX / zs ? UINT64_MAX : o->count * zs;
  else if (o->have_length)
    len = o->length;
  else
    len = geo->capacity;
  if (len > geo->capacity - offset)
    len = geo->capacity - offset;
  if (o->have_length && len % zs && offset + len != geo->capacity)
    die ("%s: number of sectors %" PRIu64 " is not aligned to the zone "
         "size (%" PRIu64 " sectors)", o->cmd->name, o->length, zs);

  describe_range (range, sizeof range, geo, offset, len);
  r = zn_client_zone_mgmt (c, (enum zn_zone_op) o->cmd->op, offset, len);
  if (r < 0) {
    char what[160];

    snprintf (what, sizeof what, "%s %s", o->cmd->name, range);
    cli_die_client (c, what, r);
  }
  if (o->verbose)
    printf ("%s: successful %s of zones in range from %" PRIu64 ", to %"
            PRIu64 "\n", o->uri, o->cmd->name, offset, offset + len);
}

static void
cmd_toggle (struct zn_client *c, const struct zn_control_info *geo,
            const struct options *o)
{
  uint64_t start;
  char range[128], what[160];
  struct zn_zone z;
  int r;

  if (o->offset >= geo->capacity)
    die ("%s: offset %" PRIu64 " is at or beyond the end of the device "
         "(%" PRIu64 " sectors)", o->cmd->name, o->offset, geo->capacity);
  start = o->offset - o->offset % geo->zone_sectors;
  describe_range (range, sizeof range, geo, start,
                  start + geo->zone_sectors > geo->capacity
                  ? geo->capacity - start : geo->zone_sectors);
  snprintf (what, sizeof what, "%s %s", o->cmd->name, range);

  r = o->cmd->op == TOGGLE_READONLY
    ? zn_client_set_readonly (c, o->offset)
    : zn_client_set_offline (c, o->offset);
  if (r < 0)
    cli_die_client (c, what, r);
  if (o->verbose) {
    r = zn_client_report (c, o->offset, &z, 1);
    if (r < 0)
      cli_die_client (c, what, r);
    if (r == 1)
      printf ("%s: %s is now %s\n", o->uri, range, zn_cond_name (z.cond));
  }
}

/* badblocks: configfs "+A-B", or "-A-B" with --clear.  Bad blocks are
 * not a zone matter (conventional zones have them too), so no zone
 * alignment; and as configfs, no check against the capacity either: a
 * range past the end is accepted and never hit.
 */
static void
cmd_badblocks (struct zn_client *c, const struct options *o)
{
  struct zn_control_queue_info q;
  char range[96], what[128];
  int r;

  /* The server refuses a range that wraps past the last sector number;
   * name it without wrapping too.
   */
  if (o->length - 1 > UINT64_MAX - o->offset)
    snprintf (range, sizeof range, "%" PRIu64 " sectors from sector %" PRIu64,
              o->length, o->offset);
  else
    snprintf (range, sizeof range, "sectors %" PRIu64 "-%" PRIu64,
              o->offset, o->offset + o->length - 1);
  snprintf (what, sizeof what, "badblocks%s %s", o->clear ? " --clear" : "",
            range);

  r = zn_client_badblocks (c, !o->clear, o->offset, o->length);
  if (r < 0)
    cli_die_client (c, what, r);
  if (o->verbose) {
    printf ("%s: %s marked %s", o->uri, range, o->clear ? "good" : "bad");
    /* Ranges merge and split, so the count says more than the request. */
    if (zn_client_queue_info (c, &q) == 0)
      printf (" (%" PRIu32 " bad block range%s on the device)",
              q.nr_badblocks, q.nr_badblocks == 1 ? "" : "s");
    printf ("\n");
  }
}

/* power-cycle [--keep=POLICY] */
static void
cmd_power_cycle (struct zn_client *c, const struct options *o)
{
  /* The model's policies are the wire's values (crash.h). */
  unsigned keep = o->keep.kind;
  int r = zn_client_power_cycle_keep (c, keep, o->keep.seed);

  if (r < 0)
    cli_die_client (c, "power-cycle", r);
  if (!o->verbose)
    return;
  if (keep == ZN_POWER_KEEP_NONE)
    printf ("%s: powered off and on, keeping none of the writes neither "
            "flushed nor written with FUA\n", o->uri);
  else if (keep == ZN_POWER_KEEP_ALL)
    printf ("%s: powered off and on, keeping every write\n", o->uri);
  else
    printf ("%s: powered off and on, keeping of the writes neither flushed "
            "nor written with FUA what seed %" PRIu64 " draws: a prefix in "
            "each sequential zone, each conventional write whole or not%s\n",
            o->uri, o->keep.seed, keep == ZN_POWER_KEEP_TORN
            ? ", and writes torn at logical blocks" : "");
}

/* The data of an append: the first len bytes of the file, or all of it
 * when len is 0, refusing a file longer than max bytes (an append cannot
 * be split, so more than the device's limit could never be sent).
 */
static unsigned char *
read_data (const char *file, uint64_t len, uint64_t max, uint64_t *got)
{
  FILE *fp = strcmp (file, "-") == 0 ? stdin : fopen (file, "rb");
  uint64_t want = len ? len : max + 1;
  unsigned char *buf;
  size_t n;

  if (fp == NULL)
    die ("append: %s: %s", file, strerror (errno));
  buf = malloc (want ? want : 1);
  if (buf == NULL)
    die ("%s", strerror (ENOMEM));
  n = fread (buf, 1, want, fp);
  if (ferror (fp)) {
    int err = errno;

    free (buf);
    die ("append: reading %s: %s", file, strerror (err));
  }
  if (fp != stdin)
    fclose (fp);
  if (len && n < len) {
    free (buf);
    die ("append: %s holds %zu bytes, fewer than the %" PRIu64 " of -l %"
         PRIu64 " sectors", file, n, len, len / ZN_SECTOR_SIZE);
  }
  if (!len && n > max) {
    free (buf);
    die ("append: %s is larger than the device's max_append_sectors (%"
         PRIu64 " sectors); an append cannot be split: use -l",
         file, max / ZN_SECTOR_SIZE);
  }
  if (n == 0) {
    free (buf);
    die ("append: %s is empty: there is nothing to append", file);
  }
  if (n % ZN_SECTOR_SIZE) {
    free (buf);
    die ("append: %s holds %zu bytes, not a whole number of 512-byte "
         "sectors", file, n);
  }
  *got = n;
  return buf;
}

/* append: one zone append, atomic on the server; the sector it landed at
 * is the output, so that scripts can record where their data went.
 */
static void
cmd_append (struct zn_client *c, const struct zn_control_info *geo,
            const struct options *o)
{
  uint64_t zs = geo->zone_sectors, bytes = 0, sectors, at = 0;
  uint64_t max = (uint64_t) geo->max_append_sectors * ZN_SECTOR_SIZE;
  unsigned char *buf;
  char range[128], what[160];
  int r;

  if (geo->max_append_sectors == 0)
    die ("append: the server predates zone append (no max_append_sectors "
         "in its control header)");
  if (o->offset >= geo->capacity)
    die ("append: offset %" PRIu64 " is at or beyond the end of the device "
         "(%" PRIu64 " sectors)", o->offset, geo->capacity);
  if (o->offset % zs)
    die ("append: offset %" PRIu64 " is not the start of a zone (zone size "
         "%" PRIu64 " sectors)", o->offset, zs);
  if (o->have_length && o->length > geo->max_append_sectors) {
    /* The library refuses it before looking at the data (EIO, as the
     * block layer): the file need not be read.
     */
    sectors = o->length;
    buf = malloc (1);
  }
  else if (o->file) {
    buf = read_data (o->file, o->have_length ? o->length * ZN_SECTOR_SIZE : 0,
                     max, &bytes);
    sectors = bytes / ZN_SECTOR_SIZE;
  }
  else {
    sectors = o->length;
    bytes = sectors * ZN_SECTOR_SIZE;
    buf = malloc (bytes ? bytes : 1);
    if (buf)
      memset (buf, o->pattern, bytes);
  }
  if (buf == NULL)
    die ("%s", strerror (ENOMEM));

  describe_range (range, sizeof range, geo, o->offset,
                  o->offset + zs > geo->capacity ? geo->capacity - o->offset
                  : zs);
  snprintf (what, sizeof what, "append %s", range);
  r = (o->fua ? zn_client_append_fua : zn_client_append)
    (c, buf, o->offset, sectors, &at);
  free (buf);
  if (r < 0)
    cli_die_client (c, what, r);
  if (o->json)
    printf ("{\"sector\": %" PRIu64 ", \"nr_sectors\": %" PRIu64 "}\n",
            at, sectors);
  else if (o->verbose)
    printf ("%s: %" PRIu64 " sector%s appended to %s at sector %" PRIu64
            "\n", o->uri, sectors, sectors == 1 ? "" : "s", range, at);
  else
    printf ("%" PRIu64 "\n", at);
}

static const char *
limit (uint32_t v, char *buf, size_t len)
{
  if (v == 0)
    return "unlimited";
  snprintf (buf, len, "%" PRIu32, v);
  return buf;
}

static void
print_stats_json (const struct zn_control_queue_stats *s)
{
  printf ("{\"in_use\": %" PRIu32 ", \"peak\": %" PRIu32
          ", \"waited\": %" PRIu64 ", \"completed\": %" PRIu64
          ", \"connections\": %" PRIu32 "}", s->in_use, s->peak, s->waited,
          s->completed, s->connections);
}

/* The queue section as further members of info's JSON object. */
static void
print_queues_json (const struct zn_control_queue_info *q)
{
  printf (",\n"
          "  \"device_index\": %" PRIu32 ",\n"
          "  \"nr_devices\": %" PRIu32 ",\n"
          "  \"irqmode\": %" PRIu32 ",\n"
          "  \"completion_nsec\": %" PRIu64 ",\n"
          "  \"hw_queue_depth\": %" PRIu32 ",\n"
          "  \"submit_queues\": %" PRIu32 ",\n"
          "  \"tag_pools\": %" PRIu32 ",\n"
          "  \"shared_tags\": %s,\n"
          "  \"shared_tag_bitmap\": %s,\n"
          "  \"mbps\": %" PRIu32 ",\n"
          "  \"pipeline_zoned_writes\": %s,\n"
          "  \"cache_size\": %" PRIu64 ",\n"
          "  \"cache_dirty\": %" PRIu64 ",\n"
          "  \"badblock_ranges\": %" PRIu32 ",\n"
          "  \"pipeline\": {\"wait_ms\": %" PRIu32 ", \"max_waiting\": %" PRIu32
          ", \"waiting\": %" PRIu32 ", \"waited\": %" PRIu64
          ", \"timeouts\": %" PRIu64 ", \"failed\": %" PRIu64 "},\n"
          "  \"tags\": ",
          q->device_index, q->nr_devices, q->irqmode, q->completion_nsec,
          q->hw_queue_depth, q->submit_queues, q->tag_pools,
          q->queue_flags & ZN_QUEUE_F_SHARED_TAGS ? "true" : "false",
          q->queue_flags & ZN_QUEUE_F_SHARED_TAG_BITMAP ? "true" : "false",
          q->mbps,
          q->queue_flags & ZN_QUEUE_F_PIPELINE ? "true" : "false",
          q->cache_size, q->cache_dirty, q->nr_badblocks,
          q->pipeline_wait_ms, q->pipeline_max_waiting, q->pipeline_waiting,
          q->pipeline_waited, q->pipeline_timeouts, q->pipeline_failed);
  print_stats_json (&q->device);
  printf (",\n  \"queues\": [");
  for (uint32_t n = 0; n < q->submit_queues; n++) {
    printf (n ? ",\n    " : "\n    ");
    print_stats_json (&q->queues[n]);
  }
  printf ("\n  ]");
}

static void
print_queues_text (const struct zn_control_queue_info *q)
{
  char mbps[16];

  printf ("device:            nullb%" PRIu32 " (of %" PRIu32 ")\n"
          "irqmode:           %" PRIu32 "%s\n"
          "completion_nsec:   %" PRIu64 "\n"
          "hw_queue_depth:    %" PRIu32 "\n"
          "submit_queues:     %" PRIu32 "\n"
          "tag pools:         %" PRIu32 "%s%s\n"
          "mbps:              %s\n"
          "pipelined writes:  %s (waiting %" PRIu32 ", waited %" PRIu64
          ", timed out %" PRIu64 ", failed %" PRIu64 ")\n"
          "tags:              in use %" PRIu32 ", peak %" PRIu32
          ", waited %" PRIu64 ", completed %" PRIu64 ", connections %" PRIu32
          "\n",
          q->device_index, q->nr_devices, q->irqmode,
          q->irqmode == 2 ? " (timer)" : "", q->completion_nsec,
          q->hw_queue_depth, q->submit_queues, q->tag_pools,
          q->queue_flags & ZN_QUEUE_F_SHARED_TAG_BITMAP
            ? " (shared_tag_bitmap)" : "",
          q->queue_flags & ZN_QUEUE_F_SHARED_TAGS ? " (shared_tags)" : "",
          limit (q->mbps, mbps, sizeof mbps),
          q->queue_flags & ZN_QUEUE_F_PIPELINE ? "on" : "off",
          q->pipeline_waiting, q->pipeline_waited, q->pipeline_timeouts,
          q->pipeline_failed, q->device.in_use, q->device.peak,
          q->device.waited, q->device.completed, q->device.connections);
  printf ("write cache:       %" PRIu64 " bytes (%" PRIu64
          " not written back)\n"
          "bad block ranges:  %" PRIu32 "\n",
          q->cache_size, q->cache_dirty, q->nr_badblocks);
  for (uint32_t n = 0; n < q->submit_queues; n++)
    printf ("queue %-3" PRIu32 "         in use %" PRIu32 ", peak %" PRIu32
            ", waited %" PRIu64 ", completed %" PRIu64 ", connections %"
            PRIu32 "\n", n, q->queues[n].in_use, q->queues[n].peak,
            q->queues[n].waited, q->queues[n].completed,
            q->queues[n].connections);
}

/* Whose null_blk the server emulates; servers before the field are 6.1. */
static const char *
control_kernel (const struct zn_control_info *i)
{
  switch ((i->flags & ZN_CONTROL_KERNEL_MASK) >> ZN_CONTROL_KERNEL_SHIFT) {
  case ZN_KERNEL_6_1: return "6.1";
  case ZN_KERNEL_6_12: return "6.12";
  case ZN_KERNEL_7_3: return "7.3";
  default: return "unknown";
  }
}

static void
cmd_info (struct zn_client *c, const struct options *o)
{
  struct zn_control_info i;
  const char *kernel;
  uint32_t open, active;
  char b1[16], b2[16];
  struct zn_control_queue_info q;
  bool have_q;
  uint64_t gen = 0;
  char gen_hex[20] = "";
  int r = zn_client_info (c, &i);

  if (r < 0)
    cli_die_client (c, "info", r);
  /* Servers before the queue section still get the zone part, and those
   * before generations (or read-only) everything but it.
   */
  have_q = zn_client_queue_info (c, &q) == 0;
  r = zn_client_generation (c, &gen);
  /* A read-only server takes no command, GENERATION included. */
  if (r < 0 && r != -EOPNOTSUPP && r != -EPERM)
    cli_die_client (c, "info", r);
  if (r == 0)
    snprintf (gen_hex, sizeof gen_hex, "%016" PRIx64, gen);
  open = i.imp_open + i.exp_open;
  active = open + i.closed;
  kernel = control_kernel (&i);

  if (o->json) {
    printf ("{\n"
            "  \"version\": %" PRIu32 ",\n"
            "  \"kernel\": \"%s\",\n"
            "  \"fua\": %s,\n"
            "  \"zone_full\": %s,\n"
            "  \"append_emulated\": %s,\n"
            "  \"capacity\": %" PRIu64 ",\n"
            "  \"size\": %" PRIu64 ",\n"
            "  \"zone_sectors\": %" PRIu64 ",\n"
            "  \"zone_capacity\": %" PRIu64 ",\n"
            "  \"nr_zones\": %" PRIu32 ",\n"
            "  \"nr_conv\": %" PRIu32 ",\n"
            "  \"block_size\": %" PRIu32 ",\n"
            "  \"max_sectors\": %" PRIu32 ",\n"
            "  \"max_append_sectors\": %" PRIu32 ",\n"
            "  \"max_open\": %" PRIu32 ",\n"
            "  \"max_active\": %" PRIu32 ",\n"
            "  \"memory_backed\": %s,\n"
            "  \"backing_dir\": %s,\n"
            "  \"read_only\": %s,\n"
            "  \"imp_open\": %" PRIu32 ",\n"
            "  \"exp_open\": %" PRIu32 ",\n"
            "  \"closed\": %" PRIu32 ",\n"
            "  \"open\": %" PRIu32 ",\n"
            "  \"active\": %" PRIu32,
            i.version, kernel,
            i.flags & ZN_CONTROL_F_NO_FUA ? "false" : "true",
            i.flags & ZN_CONTROL_F_ZONE_FULL ? "true" : "false",
            i.flags & ZN_CONTROL_F_APPEND_EMULATED ? "true" : "false",
            i.capacity, i.capacity * ZN_SECTOR_SIZE,
            i.zone_sectors, i.zone_capacity, i.nr_zones, i.nr_conv,
            i.block_size, i.max_sectors, i.max_append_sectors, i.max_open,
            i.max_active,
            i.flags & ZN_CONTROL_F_MEMORY_BACKED ? "true" : "false",
            i.flags & ZN_CONTROL_F_BACKING_DIR ? "true" : "false",
            i.flags & ZN_CONTROL_F_READONLY ? "true" : "false",
            i.imp_open, i.exp_open, i.closed, open, active);
    if (*gen_hex)
      printf (",\n  \"generation\": \"%s\"", gen_hex);
    if (have_q)
      print_queues_json (&q);
    printf ("\n}\n");
    return;
  }
  printf ("kernel:            %s (null_blk of Linux %s)\n"
          "fua:               %s\n"
          "zone_full:         %s\n",
          kernel, kernel, i.flags & ZN_CONTROL_F_NO_FUA ? "no" : "yes",
          i.flags & ZN_CONTROL_F_ZONE_FULL ? "yes" : "no");
  printf ("capacity:          %" PRIu64 " sectors (%" PRIu64 " bytes)\n"
          "zone size:         %" PRIu64 " sectors\n"
          "zone capacity:     %" PRIu64 " sectors\n"
          "zones:             %" PRIu32 " (%" PRIu32 " conventional, %" PRIu32
          " sequential write required)\n"
          "block size:        %" PRIu32 " bytes\n"
          "max sectors:       %" PRIu32 "\n"
          "max append:        %" PRIu32 " sectors%s\n"
          "max open zones:    %s\n"
          "max active zones:  %s\n"
          "memory backed:     %s\n"
          "backing_dir:       %s\n"
          "read-only server:  %s\n"
          "implicitly open:   %" PRIu32 "\n"
          "explicitly open:   %" PRIu32 "\n"
          "closed:            %" PRIu32 "\n"
          "open:              %" PRIu32 "\n"
          "active:            %" PRIu32 "\n",
          i.capacity, i.capacity * ZN_SECTOR_SIZE, i.zone_sectors,
          i.zone_capacity, i.nr_zones, i.nr_conv, i.nr_zones - i.nr_conv,
          i.block_size, i.max_sectors, i.max_append_sectors,
          i.flags & ZN_CONTROL_F_APPEND_EMULATED
          ? " (emulated with writes)" : "",
          limit (i.max_open, b1, sizeof b1),
          limit (i.max_active, b2, sizeof b2),
          i.flags & ZN_CONTROL_F_MEMORY_BACKED ? "yes" : "no",
          i.flags & ZN_CONTROL_F_BACKING_DIR ? "yes (zones in files)" : "no",
          i.flags & ZN_CONTROL_F_READONLY ? "yes" : "no",
          i.imp_open, i.exp_open, i.closed, open, active);
  if (*gen_hex)
    printf ("generation:        %s\n", gen_hex);
  if (have_q)
    print_queues_text (&q);
  if (o->verbose)
    printf ("control version:   %" PRIu32 "\n", i.version);
}

int
main (int argc, char **argv)
{
  struct options o = { .timeout = ZN_CLIENT_TIMEOUT_MS / 1000 };
  struct zn_control_info geo;
  struct zn_client *c;
  char err[1024];
  int r;

  if (argc >= 2 && strcmp (argv[1], "replay") == 0)
    return cli_replay (argc - 1, argv + 1);
  parse_options (argc, argv, &o);

  c = client = zn_client_connect_timeout (o.uri, o.timeout * 1000u, err,
                                         sizeof err);
  if (c == NULL)
    die ("%s: %s", o.uri, err);
  r = zn_client_info (c, &geo);
  if (r < 0)
    cli_die_client (c, o.cmd->name, r);

  switch (o.cmd->kind) {
  case K_REPORT:
  case K_CAPACITY:
    cmd_report (c, &geo, &o);
    break;
  case K_ACTION:
    cmd_action (c, &geo, &o);
    break;
  case K_TOGGLE:
    cmd_toggle (c, &geo, &o);
    break;
  case K_INFO:
    cmd_info (c, &o);
    break;
  case K_BADBLOCKS:
    cmd_badblocks (c, &o);
    break;
  case K_POWER:
    cmd_power_cycle (c, &o);
    break;
  case K_APPEND:
    cmd_append (c, &geo, &o);
    break;
  case K_MARK:
  case K_LOG:
    cli_cmd_log (c, &o);
    break;
  case K_FAULT:
    cli_cmd_fault (c, &o);
    break;
  }
  zn_client_close (c);
  client = NULL;

  /* A report cut short by a full disk or a closed pipe must not exit 0. */
  if (fflush (stdout) != 0 || ferror (stdout))
    die ("write error: %s", strerror (errno));
  return EXIT_SUCCESS;
}
