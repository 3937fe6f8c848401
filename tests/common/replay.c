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
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "zonednull/client.h"
#include "zoned.h"
#include "spawn.h"
#include "trace-format.h"

enum { RC_MATCH = 0, RC_MISMATCH = 1, RC_TROUBLE = 2 };

/* Far above anything the recorder issues (31 blocks); stops a corrupted
 * nsect from turning into a multi-gigabyte allocation.
 */
#define MAX_IO_BYTES (UINT64_C(256) << 20)


/* ---- the device under test ------------------------------------------- */

/* What the header says to set up: the configfs values (the kernel from
 * line 1) and the bad ranges, "+A-B", in the order they were written.
 */
struct trace_cfg {
  struct zn_config cfg;
  char **badblocks;
  size_t nr_badblocks;
};

/* What header line 5 describes, in a form any backend can supply: an NBD
 * backend will fill it from the server rather than from the model.
 */
struct dev_info {
  uint64_t capacity;        /* sectors */
  uint64_t zone_sectors;
  uint32_t nr_zones;
  uint32_t lbs, pbs;        /* bytes */
  uint32_t max_open, max_active;
  uint32_t max_sectors;
};

/* Every call the replay makes on a device goes through here, so that a
 * transport (NBD) can later stand in for the in-process model.  Data calls
 * return the bytes transferred or a negative errno, which keeps the
 * recorder's "+<bytes>" short-transfer result expressible.
 */
struct backend {
  const char *name;
  /* NULL on failure, with a message in err; *refused tells whether the
   * device refused the configuration (rather than being unreachable).
   */
  void *(*open) (const struct trace_cfg *tc, bool *refused, char *err,
                 size_t errlen);
  void (*close) (void *h);
  int (*info) (void *h, struct dev_info *info);
  int64_t (*read) (void *h, void *buf, uint64_t sector, uint64_t nsect);
  int64_t (*write) (void *h, const void *buf, uint64_t sector, uint64_t nsect);
  int (*zone_mgmt) (void *h, enum zn_zone_op op, uint64_t sector, uint64_t nsect);
  /* Zones from the first one; the count written or a negative errno. */
  int64_t (*report) (void *h, struct zn_zone *zones, unsigned max);
};

/* The traces are what a user of /dev/nullb0 saw, so the model gets the
 * block layer's zone write plugging of the trace's kernel in front.
 */
static void *
model_open (const struct trace_cfg *tc, bool *refused, char *err, size_t errlen)
{
  struct zn_dev *dev;

  *refused = true;
  dev = zn_dev_create (&tc->cfg, err, errlen);
  if (dev && zn_dev_write_plugging (dev, err, errlen) < 0) {
    zn_dev_destroy (dev);
    return NULL;
  }
  for (size_t i = 0; dev && i < tc->nr_badblocks; i++)
    if (zn_badblocks_parse (dev, tc->badblocks[i]) < 0) {
      snprintf (err, errlen, "badblocks=%s: refused", tc->badblocks[i]);
      zn_dev_destroy (dev);
      return NULL;
    }
  return dev;
}

static void
model_close (void *h)
{
  zn_dev_destroy (h);
}

static int
model_info (void *h, struct dev_info *info)
{
  const struct zn_geometry *geo = zn_dev_geometry (h);

  /* null_blk has a single block size for both. */
  *info = (struct dev_info) {
    .capacity = geo->capacity,
    .zone_sectors = geo->zone_sectors,
    .nr_zones = geo->nr_zones,
    .lbs = geo->block_size,
    .pbs = geo->block_size,
    .max_open = geo->max_open,
    .max_active = geo->max_active,
    .max_sectors = geo->max_sectors,
  };
  return 0;
}

static int64_t
model_read (void *h, void *buf, uint64_t sector, uint64_t nsect)
{
  int r = zn_read (h, buf, sector, nsect);
  return r < 0 ? r : (int64_t) (nsect << ZN_SECTOR_SHIFT);
}

static int64_t
model_write (void *h, const void *buf, uint64_t sector, uint64_t nsect)
{
  int r = zn_write (h, buf, sector, nsect);
  return r < 0 ? r : (int64_t) (nsect << ZN_SECTOR_SHIFT);
}

static int
model_zone_mgmt (void *h, enum zn_zone_op op, uint64_t sector, uint64_t nsect)
{
  return zn_zone_mgmt (h, op, sector, nsect);
}

static int64_t
model_report (void *h, struct zn_zone *zones, unsigned max)
{
  return zn_report_zones (h, 0, zones, max);
}

static const struct backend model_backend = {
  .name = "model",
  .open = model_open,
  .close = model_close,
  .info = model_info,
  .read = model_read,
  .write = model_write,
  .zone_mgmt = model_zone_mgmt,
  .report = model_report,
};

static void die_oom (void);

/* ---- the device over NBD ---------------------------------------------- */

/* Set by --nbdkit (start a server per trace) or --connect (use one). */
static const char *nbdkit_plugin;
static const char *connect_uri;
/* --tls-psk: nbdkit requires TLS with this psktool file, and the client
 * connects as its first user.
 */
static const char *tls_psk;
static char tls_user[256];

struct nbd_dev {
  struct zn_client *client;
  struct spawned server;        /* pid 0 when connected to a running one */
  char dir[200];                /* holds the socket, pidfile and log */
};

/* Runs `nbdkit -f -U DIR/dev.sock -P DIR/dev.pid PLUGIN KEY=VALUE...` with
 * the trace's configuration and waits until it listens.
 * ZONEDNULL_PRELOAD is preloaded into it, as the shell tests do, for a
 * plugin built with the sanitizers.  A refusal comes with nbdkit's
 * startup messages (why it refused the configuration) in err.
 */
static bool
start_server (struct nbd_dev *d, const struct trace_cfg *tc, bool *refused,
              char *err, size_t errlen)
{
  const struct zn_config *cfg = &tc->cfg;
  char keys[16][48];
  const char *nbdkit = getenv ("NBDKIT");
  const char *tmp = getenv ("TMPDIR");
  char **argv;
  int argc = 0, nkeys = 0, status, started;

  snprintf (d->dir, sizeof d->dir, "%s/zonednull-replay.XXXXXX",
            tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp (d->dir)) {
    snprintf (err, errlen, "mkdtemp: %s", strerror (errno));
    d->dir[0] = '\0';
    return false;
  }
  spawn_paths (&d->server, d->dir, "dev");

  snprintf (keys[nkeys++], 48, "size=%" PRIu64, cfg->size);
  snprintf (keys[nkeys++], 48, "zone_size=%" PRIu64, cfg->zone_size);
  if (cfg->zone_capacity)
    snprintf (keys[nkeys++], 48, "zone_capacity=%" PRIu64, cfg->zone_capacity);
  snprintf (keys[nkeys++], 48, "zone_nr_conv=%" PRIu32, cfg->zone_nr_conv);
  snprintf (keys[nkeys++], 48, "zone_max_open=%" PRIu32, cfg->zone_max_open);
  snprintf (keys[nkeys++], 48, "zone_max_active=%" PRIu32, cfg->zone_max_active);
  snprintf (keys[nkeys++], 48, "blocksize=%" PRIu32, cfg->blocksize);
  if (cfg->max_sectors)
    snprintf (keys[nkeys++], 48, "max_sectors=%" PRIu32, cfg->max_sectors);
  snprintf (keys[nkeys++], 48, "memory_backed=%d", cfg->memory_backed ? 1 : 0);
  if (cfg->kernel != ZN_KERNEL_6_1)
    snprintf (keys[nkeys++], 48, "kernel=%s", zn_kernel_name (cfg->kernel));
  if (cfg->given & ZN_GIVEN_ZONE_FULL)
    snprintf (keys[nkeys++], 48, "zone_full=%d", cfg->zone_full);
  if (cfg->given & ZN_GIVEN_ZONE_APPEND_MAX_SECTORS)
    snprintf (keys[nkeys++], 48, "zone_append_max_sectors=%" PRIu32,
              cfg->zone_append_max_sectors);
  if (cfg->given & ZN_GIVEN_FUA)
    snprintf (keys[nkeys++], 48, "fua=%d", cfg->fua);
  if (cfg->given & ZN_GIVEN_BADBLOCKS_ONCE)
    snprintf (keys[nkeys++], 48, "badblocks_once=%d", cfg->badblocks_once);
  if (cfg->given & ZN_GIVEN_BADBLOCKS_PARTIAL_IO)
    snprintf (keys[nkeys++], 48, "badblocks_partial_io=%d",
              cfg->badblocks_partial_io);

  argv = calloc (12 + (size_t) nkeys + 2 * tc->nr_badblocks, sizeof *argv);
  if (!argv)
    die_oom ();
  argv[argc++] = (char *) (nbdkit && *nbdkit ? nbdkit : "nbdkit");
  argv[argc++] = "-f";
  argv[argc++] = "--exit-with-parent";
  argv[argc++] = "-U";
  argv[argc++] = d->server.sock;
  argv[argc++] = "-P";
  argv[argc++] = d->server.pidfile;
  if (tls_psk) {
    argv[argc++] = "--tls=require";
    argv[argc++] = (char *) tls_psk;   /* --tls-psk=FILE */
  }
  argv[argc++] = (char *) nbdkit_plugin;
  for (int i = 0; i < nkeys; i++)
    argv[argc++] = keys[i];
  for (size_t i = 0; i < tc->nr_badblocks; i++) {
    size_t n = strlen (tc->badblocks[i]) + sizeof "badblocks=";

    argv[argc] = malloc (n);
    if (!argv[argc])
      die_oom ();
    snprintf (argv[argc++], n, "badblocks=%s", tc->badblocks[i]);
  }
  argv[argc] = NULL;

  started = spawn_server (&d->server, argv, getenv ("ZONEDNULL_PRELOAD"),
                          &status);
  for (int i = argc - (int) tc->nr_badblocks; i < argc; i++)
    free (argv[i]);
  free (argv);
  switch (started) {
  case 0:
    return true;
  case -1:
    *refused = status != -1 && WIFEXITED (status)
      && WEXITSTATUS (status) == 1;
    spawn_log (&d->server, err, errlen);
    if (err[0] == '\0')
      snprintf (err, errlen, "nbdkit exited at startup");
    return false;
  default:
    snprintf (err, errlen, "nbdkit did not start listening within 60 s");
    return false;
  }
}

static void nbd_close (void *h);

static void *
nbd_open (const struct trace_cfg *tc, bool *refused, char *err, size_t errlen)
{
  struct nbd_dev *d = calloc (1, sizeof *d);
  char uri[1024];

  if (!d) {
    snprintf (err, errlen, "out of memory");
    return NULL;
  }
  if (connect_uri)
    snprintf (uri, sizeof uri, "%s", connect_uri);
  else {
    if (!start_server (d, tc, refused, err, errlen)) {
      nbd_close (d);
      return NULL;
    }
    if (tls_psk)
      snprintf (uri, sizeof uri, "nbds+unix://%s@/?socket=%s&tls-psk-file=%s",
                tls_user, d->server.sock, tls_psk + strlen ("--tls-psk="));
    else
      snprintf (uri, sizeof uri, "%s", d->server.uri);
  }
  d->client = zn_client_connect (uri, err, errlen);
  if (!d->client) {
    nbd_close (d);
    return NULL;
  }
  return d;
}

static void
nbd_close (void *h)
{
  struct nbd_dev *d = h;

  zn_client_close (d->client);
  if (d->dir[0]) {
    spawn_stop (&d->server, SIGTERM);
    rmdir (d->dir);
  }
  free (d);
}

static int
nbd_info (void *h, struct dev_info *info)
{
  struct nbd_dev *d = h;
  struct zn_control_info ci;

  if (zn_client_info (d->client, &ci) < 0) {
    fprintf (stderr, "replay: %s\n", zn_client_error (d->client));
    return -1;
  }
  *info = (struct dev_info) {
    .capacity = ci.capacity,
    .zone_sectors = ci.zone_sectors,
    .nr_zones = ci.nr_zones,
    .lbs = ci.block_size,
    .pbs = ci.block_size,
    .max_open = ci.max_open,
    .max_active = ci.max_active,
    .max_sectors = ci.max_sectors,
  };
  return 0;
}

static int64_t
nbd_read (void *h, void *buf, uint64_t sector, uint64_t nsect)
{
  struct nbd_dev *d = h;
  size_t n = (size_t) (nsect << ZN_SECTOR_SHIFT);
  int r = zn_client_pread (d->client, buf, n, sector << ZN_SECTOR_SHIFT);

  return r < 0 ? r : (int64_t) n;
}

static int64_t
nbd_write (void *h, const void *buf, uint64_t sector, uint64_t nsect)
{
  struct nbd_dev *d = h;
  size_t n = (size_t) (nsect << ZN_SECTOR_SHIFT);
  int r = zn_client_pwrite (d->client, buf, n, sector << ZN_SECTOR_SHIFT);

  return r < 0 ? r : (int64_t) n;
}

static int
nbd_zone_mgmt (void *h, enum zn_zone_op op, uint64_t sector, uint64_t nsect)
{
  struct nbd_dev *d = h;

  return zn_client_zone_mgmt (d->client, op, sector, nsect);
}

static int64_t
nbd_report (void *h, struct zn_zone *zones, unsigned max)
{
  struct nbd_dev *d = h;

  return zn_client_report (d->client, 0, zones, max);
}

static const struct backend nbd_backend = {
  .name = "NBD server",
  .open = nbd_open,
  .close = nbd_close,
  .info = nbd_info,
  .read = nbd_read,
  .write = nbd_write,
  .zone_mgmt = nbd_zone_mgmt,
  .report = nbd_report,
};

/* ---- small utilities -------------------------------------------------- */

static void
die_oom (void)
{
  fputs ("replay: out of memory\n", stderr);
  exit (RC_TROUBLE);
}

/* A growable string: lines are as long as the device has zones. */
struct strbuf {
  char *s;
  size_t len, cap;
};

static void
sb_reset (struct strbuf *sb)
{
  sb->len = 0;
  if (sb->s)
    sb->s[0] = '\0';
}

static void
sb_printf (struct strbuf *sb, const char *fmt, ...)
{
  va_list ap;
  int n;

  va_start (ap, fmt);
  n = vsnprintf (NULL, 0, fmt, ap);
  va_end (ap);
  if (n < 0)
    die_oom ();
  if (sb->len + (size_t) n + 1 > sb->cap) {
    size_t cap = sb->cap ? sb->cap : 256;
    char *s;

    while (cap < sb->len + (size_t) n + 1)
      cap *= 2;
    s = realloc (sb->s, cap);
    if (!s)
      die_oom ();
    sb->s = s;
    sb->cap = cap;
  }
  va_start (ap, fmt);
  vsnprintf (sb->s + sb->len, sb->cap - sb->len, fmt, ap);
  va_end (ap);
  sb->len += (size_t) n;
}

/* res for a data op: 0 when everything was transferred, +bytes when only
 * part was, -errno(NAME) on failure.
 */
static void
format_io_result (struct strbuf *sb, int64_t r, uint64_t wanted)
{
  if (r < 0)
    sb_printf (sb, "%" PRId64 "(%s)", r, errno_name ((int) -r));
  else if ((uint64_t) r == wanted)
    sb_printf (sb, "0");
  else
    sb_printf (sb, "+%" PRId64, r);
}

static char
cond_letter (uint8_t cond)
{
  switch (cond) {
  case ZN_COND_EMPTY: return 'E';
  case ZN_COND_IMP_OPEN: return 'I';
  case ZN_COND_EXP_OPEN: return 'O';
  case ZN_COND_CLOSED: return 'C';
  case ZN_COND_FULL: return 'F';
  case ZN_COND_READONLY: return 'R';
  case ZN_COND_OFFLINE: return 'X';
  default: return '?';
  }
}

/* Parses a plain decimal number (no sign, no spaces) that must end at *end
 * or at a space.  Returns false on anything else, including overflow.
 */
static bool
parse_u64 (const char *s, const char **end, uint64_t *val)
{
  uint64_t v = 0;
  const char *p = s;

  if (*p < '0' || *p > '9')
    return false;
  for (; *p >= '0' && *p <= '9'; p++) {
    unsigned d = (unsigned) (*p - '0');
    if (v > (UINT64_MAX - d) / 10)
      return false;
    v = v * 10 + d;
  }
  *val = v;
  *end = p;
  return true;
}

/* configfs parses numbers with base 0, so 0x.. and leading-0 octal are
 * what the kernel would have accepted.  strtoull would also take a sign
 * or leading blanks, which configfs would not.
 */
static bool
parse_configfs_u64 (const char *s, uint64_t *val)
{
  char *end;

  if (*s < '0' || *s > '9')
    return false;
  errno = 0;
  *val = strtoull (s, &end, 0);
  return errno == 0 && *end == '\0';
}

/* ---- reading a trace ---------------------------------------------------- */

struct reader {
  const char *path;
  FILE *fp;
  char *line;
  size_t cap;
  unsigned long lineno;
};

/* Returns 1 with the line (newline stripped), 0 at end of file, -1 on a
 * read error (already reported).
 */
static int
next_line (struct reader *r)
{
  ssize_t n;

  errno = 0;
  n = getline (&r->line, &r->cap, r->fp);
  if (n < 0) {
    if (ferror (r->fp)) {
      fprintf (stderr, "%s: read error after line %lu: %s\n",
               r->path, r->lineno, strerror (errno));
      return -1;
    }
    return 0;
  }
  r->lineno++;
  if (n > 0 && r->line[n - 1] == '\n')
    r->line[--n] = '\0';
  if (n > 0 && r->line[n - 1] == '\r')
    r->line[--n] = '\0';
  if (strlen (r->line) != (size_t) n) {
    fprintf (stderr, "%s:%lu: malformed trace: NUL byte in line\n",
             r->path, r->lineno);
    return -1;
  }
  return 1;
}

static int
malformed (const struct reader *r, const char *fmt, ...)
{
  va_list ap;

  fprintf (stderr, "%s:%lu: malformed trace: ", r->path, r->lineno);
  va_start (ap, fmt);
  vfprintf (stderr, fmt, ap);
  va_end (ap);
  fputc ('\n', stderr);
  return RC_TROUBLE;
}

/* Reads the next line, which must exist and start with prefix. */
static int
expect_line (struct reader *r, const char *prefix, const char *what)
{
  int got = next_line (r);

  if (got < 0)
    return RC_TROUBLE;
  if (got == 0) {
    r->lineno++;
    return malformed (r, "file ends where the %s line should be", what);
  }
  if (strncmp (r->line, prefix, strlen (prefix)) != 0)
    return malformed (r, "expected the %s line, starting with '%s'",
                      what, prefix);
  return RC_MATCH;
}

/* ---- reporting a difference -------------------------------------------- */

/* Space-separated token starting at *p; advances *p past it. */
static bool
take_token (const char **p, const char **tok, size_t *len)
{
  const char *s = *p;

  while (*s == ' ')
    s++;
  if (!*s)
    return false;
  *tok = s;
  while (*s && *s != ' ')
    s++;
  *len = (size_t) (s - *tok);
  *p = s;
  return true;
}

static void
print_token (bool present, const char *tok, size_t len)
{
  if (present)
    fprintf (stderr, "'%.*s'", (int) len, tok);
  else
    fprintf (stderr, "nothing");
}

/* Names the first field where two lines differ.  Tokens after "|" are
 * zone states; key=value tokens are named by their key; the first two
 * tokens of an op line are its number and its kind.
 */
static void
describe_difference (const char *expected, const char *actual, bool op_line)
{
  const char *pe = expected, *pa = actual;
  const char *te = NULL, *ta = NULL;
  size_t le = 0, la = 0;
  long zone = -1;           /* -1 until the "|" has been passed */

  for (unsigned idx = 0;; idx++) {
    bool he = take_token (&pe, &te, &le);
    bool ha = take_token (&pa, &ta, &la);

    if (!he && !ha) {
      /* Same tokens; the spacing differs. */
      fprintf (stderr, "  differs in: spacing\n");
      return;
    }
    if (!he || !ha || le != la || memcmp (te, ta, le) != 0) {
      const char *key_src = he ? te : ta;
      const char *eq = he ? memchr (te, '=', le) : NULL;

      /* A field present on one side only is named by that side. */
      if (!eq && ha) {
        key_src = ta;
        eq = memchr (ta, '=', la);
      }

      fprintf (stderr, "  differs in: ");
      if (zone >= 0)
        fprintf (stderr, "state of zone %ld", zone);
      else if (eq)
        fprintf (stderr, "%.*s", (int) (eq - key_src), key_src);
      else if (op_line && idx == 0)
        fprintf (stderr, "op number");
      else if (op_line && idx == 1)
        fprintf (stderr, "op");
      else
        fprintf (stderr, "field %u", idx + 1);
      fprintf (stderr, " (expected ");
      print_token (he, te, le);
      fprintf (stderr, ", actual ");
      print_token (ha, ta, la);
      fprintf (stderr, ")\n");
      return;
    }
    if (zone >= 0)
      zone++;
    else if (le == 1 && *te == '|')
      zone = 0;
  }
}

static int
compare_line (const struct reader *r, const char *actual, bool op_line)
{
  if (strcmp (r->line, actual) == 0)
    return RC_MATCH;
  fprintf (stderr, "%s:%lu: mismatch\n", r->path, r->lineno);
  fprintf (stderr, "  expected: %s\n", r->line);
  fprintf (stderr, "  actual:   %s\n", actual);
  describe_difference (r->line, actual, op_line);
  return RC_MISMATCH;
}

/* ---- the header ------------------------------------------------------- */

/* Line 1: "# kernel <uname -r> <uname -v>".  The release's major.minor
 * picks the null_blk to emulate; only the modelled ones are accepted.
 */
static int
parse_kernel (const struct reader *r, enum zn_kernel *k)
{
  const char *rel = r->line + strlen ("# kernel ");
  size_t len = strspn (rel, "0123456789");
  char version[16];

  if (len && rel[len] == '.')
    len += 1 + strspn (rel + len + 1, "0123456789");
  if (len == 0 || len >= sizeof version)
    return malformed (r, "no kernel release in '%s'", r->line);
  memcpy (version, rel, len);
  version[len] = '\0';
  if (zn_kernel_parse (version, k) < 0)
    return malformed (r, "kernel %s is not one zonednull models (6.1, "
                      "6.12, 7.3)", version);
  return RC_MATCH;
}

static void
trace_cfg_free (struct trace_cfg *tc)
{
  for (size_t i = 0; i < tc->nr_badblocks; i++)
    free (tc->badblocks[i]);
  free (tc->badblocks);
  tc->badblocks = NULL;
  tc->nr_badblocks = 0;
}

/* Line 2: the values written to configfs.  badblocks may repeat. */
static int
parse_config (const struct reader *r, struct trace_cfg *tc)
{
  static const char prefix[] = "# null_blk configfs:";
  struct zn_config *cfg = &tc->cfg;
  const char *p = r->line + strlen (prefix);
  const char *tok;
  size_t len;
  unsigned seen = 0;

  while (take_token (&p, &tok, &len)) {
    static const char *const keys[] = {
      "size", "zone_size", "zone_capacity", "zone_nr_conv", "zone_max_open",
      "zone_max_active", "blocksize", "memory_backed", "max_sectors",
      /* Queueing only: they change timing, never results. */
      "irqmode", "completion_nsec", "hw_queue_depth",
      /* Newer kernels' attributes. */
      "zone_full", "zone_append_max_sectors", "fua", "badblocks_once",
      "badblocks_partial_io", "badblocks",
    };
    char word[128];
    char *value;
    uint64_t v;
    unsigned k;

    if (len >= sizeof word)
      return malformed (r, "configfs setting too long: '%.*s'", (int) len, tok);
    memcpy (word, tok, len);
    word[len] = '\0';
    value = strchr (word, '=');
    if (!value)
      return malformed (r, "configfs setting '%s' is not key=value", word);
    *value++ = '\0';
    for (k = 0; k < sizeof keys / sizeof keys[0]; k++)
      if (strcmp (word, keys[k]) == 0)
        break;
    if (k == sizeof keys / sizeof keys[0])
      return malformed (r, "unknown configfs key '%s'", word);
    if (strcmp (word, "badblocks") == 0) {
      char **b = realloc (tc->badblocks,
                          (tc->nr_badblocks + 1) * sizeof *b);

      if (!b || !(b[tc->nr_badblocks] = strdup (value)))
        die_oom ();
      tc->badblocks = b;
      tc->nr_badblocks++;
      continue;
    }
    if (seen & (1u << k))
      return malformed (r, "configfs key '%s' given twice", word);
    seen |= 1u << k;
    if (!parse_configfs_u64 (value, &v))
      return malformed (r, "configfs %s: '%s' is not a number", word, value);

    switch (k) {
    case 0: cfg->size = v; break;
    case 1: cfg->zone_size = v; break;
    case 2: cfg->zone_capacity = v; break;
    case 7:
      if (v > 1)
        return malformed (r, "configfs memory_backed: '%s' is not 0 or 1", value);
      cfg->memory_backed = v;
      break;
    case 12: case 14: case 15: case 16:
      if (v > 1)
        return malformed (r, "configfs %s: '%s' is not 0 or 1", word, value);
      if (k == 12) cfg->zone_full = v, cfg->given |= ZN_GIVEN_ZONE_FULL;
      if (k == 14) cfg->fua = v, cfg->given |= ZN_GIVEN_FUA;
      if (k == 15)
        cfg->badblocks_once = v, cfg->given |= ZN_GIVEN_BADBLOCKS_ONCE;
      if (k == 16)
        cfg->badblocks_partial_io = v,
          cfg->given |= ZN_GIVEN_BADBLOCKS_PARTIAL_IO;
      break;
    case 13:
      if (v > UINT32_MAX)
        return malformed (r, "configfs %s: %s is out of range", word, value);
      cfg->zone_append_max_sectors = (uint32_t) v;
      cfg->given |= ZN_GIVEN_ZONE_APPEND_MAX_SECTORS;
      break;
    case 3: case 4: case 5: case 6: case 8:
      if (v > UINT32_MAX)
        return malformed (r, "configfs %s: %s is out of range", word, value);
      if (k == 3) cfg->zone_nr_conv = (uint32_t) v;
      if (k == 4) cfg->zone_max_open = (uint32_t) v;
      if (k == 5) cfg->zone_max_active = (uint32_t) v;
      if (k == 6) cfg->blocksize = (uint32_t) v;
      if (k == 8) cfg->max_sectors = (uint32_t) v;
      break;
    default:
      break;
    }
  }
  return RC_MATCH;
}

/* Line 4: "# zonetrace v1 dev=... seed=<seed> ops=<nops>", and with
 * "start=initial" (zntrace --initial, for zone_full) no op 0: the ops are
 * 1..nops on the device as it powered on.
 */
static int
parse_recorder (const struct reader *r, uint64_t *seed, uint64_t *nops,
                uint64_t *first)
{
  const char *p = r->line + strlen ("# zonetrace v1");
  const char *tok, *end;
  size_t len;
  bool have_seed = false, have_ops = false;

  while (take_token (&p, &tok, &len)) {
    if (len > 5 && strncmp (tok, "seed=", 5) == 0) {
      if (!parse_u64 (tok + 5, &end, seed) || end != tok + len)
        return malformed (r, "bad seed '%.*s'", (int) len, tok);
      have_seed = true;
    }
    else if (len == 13 && strncmp (tok, "start=initial", 13) == 0)
      *first = 1;
    else if (len > 4 && strncmp (tok, "ops=", 4) == 0) {
      if (!parse_u64 (tok + 4, &end, nops) || end != tok + len)
        return malformed (r, "bad op count '%.*s'", (int) len, tok);
      have_ops = true;
    }
  }
  if (!have_seed || !have_ops)
    return malformed (r, "recorder line lacks %s",
                      have_seed ? "ops=" : "seed=");
  if (*nops == UINT64_MAX)
    return malformed (r, "op count out of range");
  return RC_MATCH;
}

static void
format_geometry (struct strbuf *sb, const struct dev_info *info)
{
  sb_printf (sb, "# size_bytes=%" PRIu64 " zone_sectors=%" PRIu64
             " nr_zones=%" PRIu32 " lbs=%" PRIu32 " pbs=%" PRIu32
             " max_open=%" PRIu32 " max_active=%" PRIu32
             " max_sectors_kb=%" PRIu32,
             info->capacity << ZN_SECTOR_SHIFT, info->zone_sectors,
             info->nr_zones, info->lbs, info->pbs, info->max_open,
             info->max_active, info->max_sectors / 2);
}

static void
format_zone (struct strbuf *sb, unsigned n, const struct zn_zone *z)
{
  sb_printf (sb, "# zone %u start=%" PRIu64 " len=%" PRIu64 " cap=%" PRIu64
             " wp=%" PRIu64 " type=%u cond=%u",
             n, z->start, z->len, z->capacity, z->wp,
             (unsigned) z->type, (unsigned) z->cond);
}

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
