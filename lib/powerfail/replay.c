/* SPDX-License-Identifier: BSD-3-Clause */
/* Replay of a write log (replay.h): the rules of doc/power-fail.md's
 * section 2 decided once per log point, the policies' choices, and the
 * state applied through the model, so that the model refuses in replay
 * what it would refuse live.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/attach.h"
#include "util/escape.h"
#include "powerfail/replay.h"

/* ---- reading to the target ------------------------------------------ */

static int
is_number (const char *s)
{
  if (*s == '\0')
    return 0;
  for (; *s; s++)
    if (*s < '0' || *s > '9')
      return 0;
  return 1;
}

/* What the plan keeps of entry r, and its share of the work. */
static void
note_entry (struct zn_replay_plan *p, const struct zn_wlog_rec *r)
{
  const struct zn_geometry *g = zn_wlog_read_geometry (p->log);
  uint64_t zs = g->zone_sectors, spb = g->block_size >> ZN_SECTOR_SHIFT;

  p->ents[p->end] = (struct zn_replay_entry) {
    .ref = r->ref, .zone = r->zone, .kind = (uint8_t) r->kind,
    .fua = (r->flags & ZN_WLOG_FUA) != 0,
  };
  if (zn_wlog_has_data (r->kind)) {
    p->ents[p->end].block = (uint32_t) ((r->sector - (uint64_t) r->zone * zs)
                                        / spb);
    p->ents[p->end].nblocks = (uint32_t) (r->nr_sectors / spb);
  }
  if (r->kind == ZN_WLOG_K_WP)
    p->rewrite += (r->sector - (uint64_t) r->zone * zs) << ZN_SECTOR_SHIFT;
  else if (r->kind == ZN_WLOG_K_WRITE || r->kind == ZN_WLOG_K_APPEND
           || r->kind == ZN_WLOG_K_SNAPSHOT)
    p->carried += r->nr_sectors << ZN_SECTOR_SHIFT;
  p->last = *r;
  p->end++;
}

int
zn_replay_to_parse (struct zn_wlog_reader *log, const char *to,
                    struct zn_replay_to *t, char *err, size_t errlen)
{
  uint64_t nr = zn_wlog_read_nr_entries (log);

  *t = (struct zn_replay_to) { .mark = to && !is_number (to) ? to : NULL,
                               .no = nr - 1 };
  if (to && !t->mark) {
    errno = 0;
    t->no = strtoull (to, NULL, 10);
    if (errno || t->no >= nr) {
      snprintf (err, errlen, "%s: --to %s: the log's entries are 0 to %"
                PRIu64, zn_wlog_read_name (log), to, nr - 1);
      return -EINVAL;
    }
  }
  return 0;
}

bool
zn_replay_to_reached (const struct zn_replay_to *t,
                      const struct zn_wlog_rec *rec)
{
  return t->mark ? rec->kind == ZN_WLOG_K_MARK && strcmp (rec->mark, t->mark) == 0
                 : rec->no == t->no;
}

int
zn_replay_to_missed (struct zn_wlog_reader *log, const struct zn_replay_to *t,
                     char *err, size_t errlen)
{
  char esc[ZN_WLOG_MARK_MAX * 4 + 1];
  size_t len;

  if (t->mark == NULL)
    return 0;
  len = strlen (t->mark) < ZN_WLOG_MARK_MAX ? strlen (t->mark)
                                            : ZN_WLOG_MARK_MAX;
  zn_escape (esc, sizeof esc, t->mark, len);
  snprintf (err, errlen, "%s: --to %s%s: no mark of that name in the "
            "log's %" PRIu64 " entries (zonednull replay --list shows "
            "them)", zn_wlog_read_name (log), esc,
            len < strlen (t->mark) ? "..." : "",
            zn_wlog_read_nr_entries (log));
  return -EINVAL;
}

static int
read_to (struct zn_replay_plan *p, const char *to, char *err, size_t errlen)
{
  struct zn_replay_to t;
  struct zn_wlog_rec rec;
  size_t cap = 0;
  int r;

  if (zn_replay_to_parse (p->log, to, &t, err, errlen) < 0)
    return -EINVAL;
  for (;;) {
    if (p->end == cap) {
      struct zn_replay_entry *n;

      cap = cap ? 2 * cap : 256;
      n = realloc (p->ents, cap * sizeof *n);
      if (n == NULL) {
        snprintf (err, errlen, "%s", strerror (ENOMEM));
        return -ENOMEM;
      }
      p->ents = n;
    }
    r = zn_wlog_read_next (p->log, &rec, err, errlen);
    if (r < 0)
      return r;
    if (r == 0)
      break;
    note_entry (p, &rec);
    if (zn_replay_to_reached (&t, &rec))
      return 0;
  }
  return zn_replay_to_missed (p->log, &t, err, errlen);
}

/* ---- the rules ------------------------------------------------------- */

static bool
seq_zone (const struct zn_replay_plan *p, uint32_t zone)
{
  return zone >= zn_wlog_read_geometry (p->log)->nr_conv;
}

/* Section 2's durable writes, the pending ones, and those a later reset
 * of their sequential zone wiped whatever was kept.
 */
static int
decide (struct zn_replay_plan *p)
{
  uint32_t nz = zn_wlog_read_geometry (p->log)->nr_zones;
  /* Per zone, from the end back: 1, a durable write follows in the same
   * epoch (since a reset); 2, a reset follows first; 0, neither.
   */
  unsigned char *later = calloc (nz, 1);
  uint64_t flushed = 0, powered = 0;

  if (later == NULL)
    return -ENOMEM;
  for (uint64_t i = 0; i < p->end; i++) {
    const struct zn_replay_entry *r = &p->ents[i];

    if (r->kind == ZN_WLOG_K_FLUSH && r->ref > flushed)
      flushed = r->ref;
    if (r->kind == ZN_WLOG_K_POWER)
      powered = i;
  }
  for (uint64_t i = p->end; i-- > 0; ) {
    const struct zn_replay_entry *r = &p->ents[i];
    bool seq = seq_zone (p, r->zone);

    if (r->kind == ZN_WLOG_K_RESET) {
      later[r->zone] = 2;
      continue;
    }
    /* A zone finished, or taken out of service, had its cache written
     * back first.
     */
    if (((r->kind == ZN_WLOG_K_COND && r->ref != 0)
         || r->kind == ZN_WLOG_K_FINISH) && later[r->zone] != 2)
      later[r->zone] = 1;
    if (!zn_wlog_has_data ((enum zn_wlog_kind) r->kind)) {
      p->fate[i] = ZN_FATE_OP;
      continue;
    }
    if (r->fua || i < flushed || i < powered
        || (seq && later[r->zone] == 1))
      p->fate[i] = ZN_FATE_DURABLE;
    else
      p->fate[i] = seq && later[r->zone] == 2 ? ZN_FATE_WIPED
                                               : ZN_FATE_PENDING;
    if (seq && p->fate[i] == ZN_FATE_DURABLE)
      later[r->zone] = 1;
  }
  free (later);
  return 0;
}

struct pend {
  uint32_t zone;
  uint64_t no;
};

static int
by_zone (const void *a, const void *b)
{
  const struct pend *x = a, *y = b;

  if (x->zone != y->zone)
    return x->zone < y->zone ? -1 : 1;
  return x->no < y->no ? -1 : x->no > y->no;
}

static int
group (struct zn_replay_plan *p)
{
  struct pend *v = malloc ((p->end ? p->end : 1) * sizeof *v);
  uint64_t n = 0, *nos;

  if (v == NULL)
    return -ENOMEM;
  for (uint64_t i = 0; i < p->end; i++)
    if (p->fate[i] == ZN_FATE_PENDING)
      v[n++] = (struct pend) { p->ents[i].zone, i };
  qsort (v, n, sizeof *v, by_zone);
  nos = malloc ((n ? n : 1) * sizeof *nos);
  p->groups = calloc (n ? n : 1, sizeof *p->groups);
  if (nos == NULL || p->groups == NULL) {
    free (nos);
    free (v);
    return -ENOMEM;
  }
  for (uint64_t i = 0; i < n; i++) {
    struct zn_replay_group *g = &p->groups[p->nr_groups];

    if (i == 0 || v[i].zone != v[i - 1].zone) {
      g = &p->groups[p->nr_groups++];
      g->zone = v[i].zone;
      g->seq = seq_zone (p, v[i].zone);
      g->entries = nos + i;
    }
    else
      g = &p->groups[p->nr_groups - 1];
    g->entries[g->n++] = v[i].no;
  }
  free (v);
  if (p->nr_groups == 0)
    free (nos);
  return 0;
}

int
zn_replay_plan (struct zn_wlog_reader *log, const char *to,
                struct zn_replay_plan *p, char *err, size_t errlen)
{
  memset (p, 0, sizeof *p);
  p->log = log;
  if (zn_zone_table_check (zn_wlog_read_config (log), 1, err, errlen) < 0
      || read_to (p, to, err, errlen) < 0)
    goto fail;
  p->fate = calloc (p->end, sizeof *p->fate);
  if (p->fate == NULL || decide (p) < 0 || group (p) < 0) {
    snprintf (err, errlen, "%s", strerror (ENOMEM));
    goto fail;
  }
  return 0;
 fail:
  zn_replay_plan_free (p);
  return -EINVAL;
}

void
zn_replay_plan_free (struct zn_replay_plan *p)
{
  if (p->nr_groups)
    free (p->groups[0].entries);
  free (p->groups);
  free (p->fate);
  free (p->ents);
  memset (p, 0, sizeof *p);
}

/* ---- the policies ---------------------------------------------------- */

/* A zone's digit in enumerate's mixed radix: a sequential zone's prefix
 * length (n + 1 values), a conventional zone's subset as a bit mask
 * (2^n); 0 stands for more than 2^64.
 */
static uint64_t
radix (const struct zn_replay_group *g)
{
  if (g->seq)
    return g->n == UINT64_MAX ? 0 : g->n + 1;
  return g->n >= 64 ? 0 : UINT64_C (1) << g->n;
}

uint64_t
zn_replay_nr_states (const struct zn_replay_plan *p,
                     const struct zn_keep *keep)
{
  uint64_t total = 1;

  if (keep->kind != ZN_KEEP_ENUMERATE)
    return 1;
  for (size_t i = 0; i < p->nr_groups && total < keep->max; i++) {
    uint64_t r = radix (&p->groups[i]);

    total = r == 0 || total > UINT64_MAX / r ? UINT64_MAX : total * r;
  }
  return total < keep->max ? total : keep->max;
}

int
zn_replay_state_init (const struct zn_replay_plan *p,
                      struct zn_replay_state *st)
{
  memset (st, 0, sizeof *st);
  st->k = calloc (p->end ? p->end : 1, sizeof *st->k);
  st->torn = calloc (p->end ? p->end : 1, sizeof *st->torn);
  if (st->k == NULL || st->torn == NULL) {
    zn_replay_state_free (st);
    return -ENOMEM;
  }
  return 0;
}

void
zn_replay_state_free (struct zn_replay_state *st)
{
  free (st->k);
  free (st->torn);
  memset (st, 0, sizeof *st);
}

/* Of torn write e, at place pos among its zone's pending writes, how
 * many blocks torn:SEED keeps.
 */
static uint64_t
torn_kept (const struct zn_keep *keep, const struct zn_replay_entry *e,
           bool seq, uint64_t pos)
{
  uint64_t kept = 0;

  if (seq)
    return zn_keep_torn_prefix (keep, e->zone, pos, e->nblocks);
  for (uint64_t b = 0; b < e->nblocks; b++)
    kept += zn_keep_block (keep, e->zone, pos, e->block + b);
  return kept;
}

/* Sequential: the write after the kept prefix, a block-aligned prefix
 * of which the power loss may have left.
 */
static void
choose_seq (const struct zn_replay_plan *p, const struct zn_replay_group *g,
            uint64_t n, struct zn_replay_state *st)
{
  uint64_t cut;

  for (uint64_t i = 0; i < n; i++)
    st->k[g->entries[i]] = true;
  if (st->keep.kind != ZN_KEEP_TORN || n == g->n)
    return;
  cut = g->entries[n];
  if (torn_kept (&st->keep, &p->ents[cut], true, n)) {
    st->k[cut] = true;
    st->torn[cut] = n + 1;
  }
}

/* Conventional: torn or whole, each write on its own. */
static void
choose_conv (const struct zn_replay_plan *p, const struct zn_replay_group *g,
             struct zn_replay_state *st)
{
  for (uint64_t i = 0; i < g->n; i++) {
    uint64_t e = g->entries[i], kept;

    if (!zn_keep_torn (&st->keep, g->zone, i)) {
      st->k[e] = zn_keep_write (&st->keep, g->zone, i);
      continue;
    }
    kept = torn_kept (&st->keep, &p->ents[e], false, i);
    st->k[e] = kept > 0;
    st->torn[e] = kept > 0 && kept < p->ents[e].nblocks ? i + 1 : 0;
  }
}

void
zn_replay_choose (const struct zn_replay_plan *p, const struct zn_keep *keep,
                  uint64_t state, struct zn_replay_state *st)
{
  st->keep = *keep;
  for (uint64_t i = 0; i < p->end; i++) {
    st->k[i] = p->fate[i] == ZN_FATE_OP || p->fate[i] == ZN_FATE_DURABLE;
    st->torn[i] = 0;
  }
  for (size_t gi = 0; gi < p->nr_groups; gi++) {
    const struct zn_replay_group *g = &p->groups[gi];
    uint64_t digit = 0, r = radix (g);

    if (keep->kind == ZN_KEEP_ENUMERATE) {
      digit = r ? state % r : state;
      state = r ? state / r : 0;
    }
    if (g->seq)
      choose_seq (p, g, keep->kind == ZN_KEEP_ENUMERATE ? digit
                        : zn_keep_prefix (keep, g->zone, g->n), st);
    else if (keep->kind == ZN_KEEP_ENUMERATE)
      for (uint64_t i = 0; i < g->n; i++)
        st->k[g->entries[i]] = i < 64 && (digit >> i & 1);
    else
      choose_conv (p, g, st);
  }
}

void
zn_replay_describe (const struct zn_replay_plan *p,
                    const struct zn_replay_state *st, FILE *fp)
{
  if (p->nr_groups == 0)
    fprintf (fp, "no pending writes");
  for (size_t gi = 0; gi < p->nr_groups; gi++) {
    const struct zn_replay_group *g = &p->groups[gi];
    uint64_t kept = 0;

    for (uint64_t i = 0; i < g->n; i++)
      kept += st->k[g->entries[i]];
    fprintf (fp, "%szone %" PRIu32 " (%s): kept %" PRIu64 " of %" PRIu64
             " pending", gi ? "; " : "", g->zone,
             g->seq ? "sequential" : "conventional", kept, g->n);
    for (uint64_t i = 0, first = 1; i < g->n; i++) {
      uint64_t e = g->entries[i];

      if (!st->k[e])
        continue;
      fprintf (fp, "%s%" PRIu64, first ? " (entries " : " ", e);
      if (st->torn[e])
        fprintf (fp, " torn: %" PRIu64 " of its %" PRIu32 " blocks%s",
                 torn_kept (&st->keep, &p->ents[e], g->seq, st->torn[e] - 1),
                 p->ents[e].nblocks, g->seq ? ", the first" : "");
      first = 0;
    }
    if (kept)
      fputc (')', fp);
  }
  fputc ('\n', fp);
}

/* ---- the state, through the model ------------------------------------ */

int
zn_replay_target_dir (const char *dir, char *err, size_t errlen)
{
  struct dirent *d;
  struct stat sb;
  DIR *ds;
  size_t n = strlen (dir);
  const char *last = strrchr (dir, '/');
  int fd;

  /* O_NOFOLLOW looks at the last component only: "link/" and "link/."
   * end in one that is no symbolic link, and reach through the link.
   */
  last = last ? last + 1 : dir;
  if (n == 0 || dir[n - 1] == '/' || strcmp (last, ".") == 0
      || strcmp (last, "..") == 0) {
    snprintf (err, errlen, "-o %s: name the directory itself, without a "
              "trailing '/', '.' or '..', so that a symbolic link in its "
              "place is refused", dir);
    return -EINVAL;
  }
  if (lstat (dir, &sb) < 0 && errno == ENOENT && mkdir (dir, 0700) < 0
      && errno != EEXIST) {
    int e = errno;

    snprintf (err, errlen, "-o %s: making it: %s", dir, strerror (e));
    return -e;
  }
  fd = open (dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;

    snprintf (err, errlen, "-o %s: %s", dir, e == ELOOP
              || (e == ENOTDIR && lstat (dir, &sb) == 0
                  && S_ISLNK (sb.st_mode))
              ? "a symbolic link: replay writes into no directory it "
                "reaches through one" : strerror (e));
    return -e;
  }
  ds = fdopendir (fd);
  if (ds == NULL) {
    int e = errno;

    close (fd);
    snprintf (err, errlen, "-o %s: %s", dir, strerror (e));
    return -e;
  }
  while ((d = readdir (ds)) != NULL)
    if (strcmp (d->d_name, ".") && strcmp (d->d_name, "..")) {
      closedir (ds);
      snprintf (err, errlen, "-o %s: not empty: replay writes a state only "
                "into an empty or new directory", dir);
      return -EINVAL;
    }
  closedir (ds);
  return 0;
}

/* What a WP entry's rewrite holds in memory at a time. */
#define REPLAY_CHUNK (1u << 20)
#define REPLAY_CHUNK_SECTORS (REPLAY_CHUNK >> ZN_SECTOR_SHIFT)

struct applier {
  const struct zn_replay_plan *p;
  const struct zn_replay_state *st;
  /* A POWER's run: its entry, and the COND entries in it, which are
   * applied again once the run ends (end_power).
   */
  struct zn_wlog_rec power;
  struct zn_wlog_rec *conds;
  size_t nr_conds, conds_cap;
  struct zn_dev *dev;
  int dirfd;                    /* the state's directory */
  char *buf;
  size_t buflen;
  char *err;
  size_t errlen;
};

static int __attribute__ ((format (printf, 3, 4)))
refused (struct applier *a, const struct zn_wlog_rec *r, const char *fmt,
         ...)
{
  char what[512];
  va_list ap;

  va_start (ap, fmt);
  vsnprintf (what, sizeof what, fmt, ap);
  va_end (ap);
  snprintf (a->err, a->errlen, "%s: entry %" PRIu64 " (byte %" PRIu64 "): "
            "%s", zn_wlog_read_name (a->p->log), r->no, r->off, what);
  return -EINVAL;
}

static int
model_error (struct applier *a, const struct zn_wlog_rec *r, int e,
             enum zn_reason why)
{
  char text[256];

  return refused (a, r, "the model refused the %s of sectors %" PRIu64 "+%"
                  PRIu64 " (zone %" PRIu32 "): %s",
                  zn_wlog_kind_name (r->kind), r->sector, r->nr_sectors,
                  r->zone, zn_error_text (text, sizeof text, -e, why));
}

static int
room (struct applier *a, uint64_t bytes)
{
  if (bytes > a->buflen) {
    char *n = realloc (a->buf, bytes);

    if (n == NULL)
      return -ENOMEM;
    a->buf = n;
    a->buflen = bytes;
  }
  return 0;
}

/* Sectors from..from+n of data entry r, whose data is in a->buf. */
static int
write_part (struct applier *a, const struct zn_wlog_rec *r, uint64_t from,
            uint64_t n)
{
  bool fua = r->flags & ZN_WLOG_FUA;
  const char *buf = a->buf + (from << ZN_SECTOR_SHIFT);
  enum zn_reason why = ZN_REASON_NONE;
  uint64_t at;
  int e;

  if (r->kind != ZN_WLOG_K_APPEND)
    e = zn_write_why (a->dev, buf, r->sector + from, n, fua, &why);
  else {
    uint64_t zs = zn_wlog_read_geometry (a->p->log)->zone_sectors;

    e = zn_zone_append_why (a->dev, buf, r->sector / zs * zs, n, fua, &at,
                            &why);
    if (e == 0 && at != r->sector + from)
      return refused (a, r, "the append landed at sector %" PRIu64 ", the "
                      "log says %" PRIu64, at, r->sector + from);
  }
  return e ? model_error (a, r, e, why) : 0;
}

/* A torn write: its first blocks in a sequential zone, the runs of
 * blocks torn:SEED keeps in a conventional one.
 */
static int
write_torn (struct applier *a, const struct zn_wlog_rec *r, uint64_t pos)
{
  const struct zn_replay_entry *e = &a->p->ents[r->no];
  const struct zn_keep *keep = &a->st->keep;
  uint64_t spb = zn_wlog_read_geometry (a->p->log)->block_size
                 >> ZN_SECTOR_SHIFT;
  int ret = 0;

  if (seq_zone (a->p, r->zone))
    return write_part (a, r, 0, spb * zn_keep_torn_prefix (keep, r->zone, pos,
                                                           e->nblocks));
  for (uint64_t b = 0, end; b < e->nblocks && ret == 0; b = end) {
    for (end = b; end < e->nblocks
         && zn_keep_block (keep, r->zone, pos, e->block + end); end++)
      ;
    if (end > b)
      ret = write_part (a, r, b * spb, (end - b) * spb);
    else
      end = b + 1;
  }
  return ret;
}

static int
apply_data (struct applier *a, const struct zn_wlog_rec *r)
{
  uint64_t torn = a->st->torn[r->no];

  if (room (a, r->nr_sectors << ZN_SECTOR_SHIFT) < 0)
    return refused (a, r, "%s", strerror (ENOMEM));
  if (zn_wlog_read_data (a->p->log, r, a->buf, a->err, a->errlen) < 0)
    return -ENOMEM;
  return torn ? write_torn (a, r, torn - 1) : write_part (a, r, 0,
                                                          r->nr_sectors);
}

static int
zone_of (struct applier *a, const struct zn_wlog_rec *r, struct zn_zone *z)
{
  if (zn_report_zones (a->dev, r->sector, z, 1) != 1)
    return refused (a, r, "no zone at sector %" PRIu64, r->sector);
  return 0;
}

/* A zone that came back from a power cycle with a lower wp: its data up
 * to the new wp, written again after a reset.
 */
static int
reset_zone (struct applier *a, const struct zn_wlog_rec *r,
            const struct zn_zone *z)
{
  enum zn_reason why = ZN_REASON_NONE;
  int e = zn_zone_mgmt_why (a->dev, ZN_OP_RESET, z->start, z->len, &why);

  return e ? model_error (a, r, e, why) : 0;
}

/* A WP entry: the zone is to keep only its first keep sectors.  The model
 * moves a wp back only by a reset, so the prefix is copied aside, the
 * zone reset and the prefix written again: through a file beside the
 * state, a chunk at a time, so that a zone of any size costs a chunk of
 * memory.
 */
static int
rewrite_prefix (struct applier *a, const struct zn_wlog_rec *r,
                const struct zn_zone *z, uint64_t keep)
{
  enum zn_reason why = ZN_REASON_NONE;
  int fd = openat (a->dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  int e = 0;

  if (fd < 0)
    return refused (a, r, "a file for zone %" PRIu32 "'s data: %s",
                    r->zone, strerror (errno));
  if (room (a, REPLAY_CHUNK) < 0) {
    close (fd);
    return refused (a, r, "%s", strerror (ENOMEM));
  }
  for (uint64_t done = 0; e == 0 && done < keep;) {
    uint64_t n = keep - done < REPLAY_CHUNK_SECTORS ? keep - done
                 : REPLAY_CHUNK_SECTORS;

    e = zn_read_why (a->dev, a->buf, z->start + done, n, &why);
    errno = 0;
    if (e == 0 && pwrite (fd, a->buf, n << ZN_SECTOR_SHIFT,
                          (off_t) (done << ZN_SECTOR_SHIFT))
                  != (ssize_t) (n << ZN_SECTOR_SHIFT)) {
      close (fd);
      return refused (a, r, "copying zone %" PRIu32 "'s data aside: %s",
                      r->zone, errno ? strerror (errno) : "short write");
    }
    done += n;
  }
  if (e == 0)
    e = zn_zone_mgmt_why (a->dev, ZN_OP_RESET, z->start, z->len, &why);
  for (uint64_t done = 0; e == 0 && done < keep;) {
    uint64_t n = keep - done < REPLAY_CHUNK_SECTORS ? keep - done
                 : REPLAY_CHUNK_SECTORS;

    errno = 0;
    if (pread (fd, a->buf, n << ZN_SECTOR_SHIFT,
               (off_t) (done << ZN_SECTOR_SHIFT))
        != (ssize_t) (n << ZN_SECTOR_SHIFT)) {
      close (fd);
      return refused (a, r, "reading zone %" PRIu32 "'s data back: %s",
                      r->zone, errno ? strerror (errno) : "short read");
    }
    e = zn_write_why (a->dev, a->buf, z->start + done, n, false, &why);
    done += n;
  }
  close (fd);
  return e ? model_error (a, r, e, why) : 0;
}

static int
apply_wp (struct applier *a, const struct zn_wlog_rec *r)
{
  struct zn_zone z;
  uint64_t keep;

  if (zone_of (a, r, &z) < 0)
    return -EINVAL;
  if (z.wp <= r->sector || z.cond == ZN_COND_READONLY
      || z.cond == ZN_COND_OFFLINE)
    return z.wp == r->sector ? 0
           : refused (a, r, "zone %" PRIu32 "'s wp is at %" PRIu64 ", not "
                      "above the new wp %" PRIu64, r->zone, z.wp, r->sector);
  keep = r->sector - z.start;
  return keep ? rewrite_prefix (a, r, &z, keep) : reset_zone (a, r, &z);
}

static int
apply_cond (struct applier *a, const struct zn_wlog_rec *r)
{
  struct zn_zone z;
  int e = 0;

  if (zone_of (a, r, &z) < 0)
    return -EINVAL;
  if (z.cond == ZN_COND_READONLY && r->ref != ZN_COND_READONLY)
    e = zn_zone_set_readonly (a->dev, z.start);
  else if (z.cond == ZN_COND_OFFLINE && r->ref != ZN_COND_OFFLINE)
    e = zn_zone_set_offline (a->dev, z.start);
  if (e == 0 && z.cond != r->ref && r->ref == ZN_COND_READONLY)
    e = zn_zone_set_readonly (a->dev, z.start);
  else if (e == 0 && z.cond != r->ref && r->ref == ZN_COND_OFFLINE)
    e = zn_zone_set_offline (a->dev, z.start);
  return e ? model_error (a, r, e, zn_reason_of (e)) : 0;
}

static int
apply_op (struct applier *a, const struct zn_wlog_rec *r)
{
  static const enum zn_zone_op ops[] = {
    [ZN_WLOG_K_RESET] = ZN_OP_RESET, [ZN_WLOG_K_OPEN] = ZN_OP_OPEN,
    [ZN_WLOG_K_CLOSE] = ZN_OP_CLOSE, [ZN_WLOG_K_FINISH] = ZN_OP_FINISH,
  };
  enum zn_reason why = ZN_REASON_NONE;
  struct zn_zone z;
  int e;

  if (zone_of (a, r, &z) < 0)
    return -EINVAL;
  /* A crash state lost the writes that opened it; empty, it powers on
   * EMPTY closed or not.
   */
  if (r->kind == ZN_WLOG_K_CLOSE && z.cond == ZN_COND_EMPTY)
    return 0;
  e = zn_zone_mgmt_why (a->dev, ops[r->kind], z.start, z.len, &why);
  return e ? model_error (a, r, e, why) : 0;
}

static int
apply (struct applier *a, const struct zn_wlog_rec *r)
{
  int e;

  switch (r->kind) {
  case ZN_WLOG_K_SNAPSHOT: case ZN_WLOG_K_WRITE: case ZN_WLOG_K_APPEND:
  case ZN_WLOG_K_RESTORE:
    return apply_data (a, r);
  case ZN_WLOG_K_RESET: case ZN_WLOG_K_OPEN: case ZN_WLOG_K_CLOSE:
  case ZN_WLOG_K_FINISH:
    return apply_op (a, r);
  case ZN_WLOG_K_COND:
    return apply_cond (a, r);
  case ZN_WLOG_K_WP:
    return apply_wp (a, r);
  case ZN_WLOG_K_POWER:
    e = zn_power_cycle (a->dev);
    return e ? model_error (a, r, e, zn_reason_of (e)) : 0;
  default:                      /* geometry, flush, mark */
    return 0;
  }
}

/* The entries from..end-1 followed a POWER: the WP and RESTORE ones are
 * applied; now the model cycles again, so that the zones are as a
 * power-on finds them without the writes the power cycle dropped, and
 * then the conditions the power cycle left are set, which the cycle
 * would have cleared.
 */
static int
end_power (struct applier *a)
{
  if (zn_power_cycle (a->dev) != 0)
    return refused (a, &a->power, "the model's power cycle failed");
  for (size_t i = 0; i < a->nr_conds; i++) {
    int ret = apply (a, &a->conds[i]);

    if (ret)
      return ret;
  }
  a->nr_conds = 0;
  return 0;
}

/* A kept COND entry of the run, for end_power. */
static int
note_cond (struct applier *a, const struct zn_wlog_rec *r)
{
  if (a->nr_conds == a->conds_cap) {
    size_t cap = a->conds_cap ? 2 * a->conds_cap : 16;
    struct zn_wlog_rec *n = realloc (a->conds, cap * sizeof *n);

    if (n == NULL) {
      snprintf (a->err, a->errlen, "%s", strerror (ENOMEM));
      return -ENOMEM;
    }
    a->conds = n;
    a->conds_cap = cap;
  }
  a->conds[a->nr_conds++] = *r;
  return 0;
}

/* Entry i read again: the one the plan was made from, or the log
 * changed under replay.
 */
static int
read_again (struct applier *a, uint64_t i, struct zn_wlog_rec *r)
{
  const struct zn_replay_entry *e = &a->p->ents[i];
  int got = zn_wlog_read_next (a->p->log, r, a->err, a->errlen);

  if (got < 0)
    return -EINVAL;
  if (got == 0 || r->no != i || r->kind != (enum zn_wlog_kind) e->kind
      || r->zone != e->zone || r->ref != e->ref) {
    snprintf (a->err, a->errlen, "%s: entry %" PRIu64 ": the log changed "
              "while it was replayed", zn_wlog_read_name (a->p->log), i);
    return -EINVAL;
  }
  return 0;
}

int
zn_replay_write (const struct zn_replay_plan *p,
                 const struct zn_replay_state *st, const char *dir,
                 char *err, size_t errlen)
{
  struct zn_config cfg = *zn_wlog_read_config (p->log);
  struct applier a = { .p = p, .st = st, .err = err, .errlen = errlen };
  const bool *k = st->k;
  uint64_t run = 0;             /* a POWER's run of entries: from run */
  int ret = 0;

  ret = zn_replay_target_dir (dir, err, errlen);
  if (ret < 0)
    return ret;
  cfg.backing_dir = dir;
  cfg.backing_dir_nofollow = true;
  a.dev = zn_storage_create (&cfg, err, errlen);
  if (a.dev == NULL)
    return -errno;
  a.dirfd = open (dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (a.dirfd < 0) {
    int e = errno;

    snprintf (err, errlen, "-o %s: %s", dir, strerror (e));
    zn_dev_destroy (a.dev);
    return -e;
  }
  zn_wlog_read_rewind (p->log);
  for (uint64_t i = 0; i < p->end && ret == 0; i++) {
    struct zn_wlog_rec rec, *r = &rec;
    bool part;

    ret = read_again (&a, i, r);
    if (ret)
      break;
    part = run && (r->kind == ZN_WLOG_K_WP || r->kind == ZN_WLOG_K_COND
                   || r->kind == ZN_WLOG_K_RESTORE);
    if (run && !part) {
      ret = end_power (&a);
      run = 0;
    }
    if (ret == 0 && k[i] && part && r->kind == ZN_WLOG_K_COND)
      ret = note_cond (&a, r);
    else if (ret == 0 && k[i])
      ret = apply (&a, r);
    if (r->kind == ZN_WLOG_K_POWER) {
      run = i + 1;
      a.power = *r;
    }
  }
  if (ret == 0 && run)
    ret = end_power (&a);
  if (ret == 0 && zn_dev_sync_files (a.dev, err, errlen) < 0)
    ret = -1;
  zn_dev_destroy (a.dev);
  close (a.dirfd);
  free (a.buf);
  free (a.conds);
  return ret;
}
