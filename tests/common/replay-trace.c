/* SPDX-License-Identifier: BSD-3-Clause */
/* Reading a trace for the replayer: lines, the header (configuration,
 * recorder, geometry), and the report of the first difference between
 * a recorded line and ours.
 */
#include "replay.h"

/* ---- small utilities -------------------------------------------------- */

void
die_oom (void)
{
  fputs ("replay: out of memory\n", stderr);
  exit (RC_TROUBLE);
}


void
sb_reset (struct strbuf *sb)
{
  sb->len = 0;
  if (sb->s)
    sb->s[0] = '\0';
}

void
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
void
format_io_result (struct strbuf *sb, int64_t r, uint64_t wanted)
{
  if (r < 0)
    sb_printf (sb, "%" PRId64 "(%s)", r, errno_name ((int) -r));
  else if ((uint64_t) r == wanted)
    sb_printf (sb, "0");
  else
    sb_printf (sb, "+%" PRId64, r);
}

char
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
bool
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


/* Returns 1 with the line (newline stripped), 0 at end of file, -1 on a
 * read error (already reported).
 */
int
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

int
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
int
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

int
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
int
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

void
trace_cfg_free (struct trace_cfg *tc)
{
  for (size_t i = 0; i < tc->nr_badblocks; i++)
    free (tc->badblocks[i]);
  free (tc->badblocks);
  tc->badblocks = NULL;
  tc->nr_badblocks = 0;
}

/* Line 2: the values written to configfs.  badblocks may repeat. */
int
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
int
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

void
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

void
format_zone (struct strbuf *sb, unsigned n, const struct zn_zone *z)
{
  sb_printf (sb, "# zone %u start=%" PRIu64 " len=%" PRIu64 " cap=%" PRIu64
             " wp=%" PRIu64 " type=%u cond=%u",
             n, z->start, z->len, z->capacity, z->wp,
             (unsigned) z->type, (unsigned) z->cond);
}
