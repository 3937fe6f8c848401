/* SPDX-License-Identifier: BSD-3-Clause */
/* The write log's reader (wlog-read.h).  Every length in the file is
 * checked against the file's size before it is used, so that a corrupt
 * log costs a message, never a large allocation or a read past its end.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <endian.h>
#include <unistd.h>

#include "util/escape.h"
#include "config/params.h"
#include "powerfail/wlog-read.h"
#include "model/dev.h"

#define KNOWN_FLAGS (ZN_WLOG_FLUSH | ZN_WLOG_FUA | ZN_WLOG_DISCARD \
                     | ZN_WLOG_MARK | ZN_WLOG_METADATA | ZN_WLOG_APPEND \
                     | ZN_WLOG_RESET | ZN_WLOG_OPEN | ZN_WLOG_CLOSE \
                     | ZN_WLOG_FINISH | ZN_WLOG_POWER | ZN_WLOG_WP \
                     | ZN_WLOG_RESTORE | ZN_WLOG_SNAPSHOT \
                     | ZN_WLOG_GEOMETRY | ZN_WLOG_COND)

/* The table of doc/power-fail.md, section 1: the only flag sets. */
static const struct {
  uint64_t flags;
  enum zn_wlog_kind kind;
  const char *name;
} rows[] = {
  { ZN_WLOG_MARK | ZN_WLOG_GEOMETRY, ZN_WLOG_K_GEOMETRY, "geometry" },
  { ZN_WLOG_FUA | ZN_WLOG_SNAPSHOT, ZN_WLOG_K_SNAPSHOT, "snapshot" },
  { 0, ZN_WLOG_K_WRITE, "write" },
  { ZN_WLOG_FUA, ZN_WLOG_K_WRITE, "write" },
  { ZN_WLOG_APPEND, ZN_WLOG_K_APPEND, "append" },
  { ZN_WLOG_APPEND | ZN_WLOG_FUA, ZN_WLOG_K_APPEND, "append" },
  { ZN_WLOG_FLUSH, ZN_WLOG_K_FLUSH, "flush" },
  { ZN_WLOG_DISCARD | ZN_WLOG_RESET, ZN_WLOG_K_RESET, "reset" },
  { ZN_WLOG_OPEN, ZN_WLOG_K_OPEN, "open" },
  { ZN_WLOG_CLOSE, ZN_WLOG_K_CLOSE, "close" },
  { ZN_WLOG_FINISH, ZN_WLOG_K_FINISH, "finish" },
  { ZN_WLOG_COND, ZN_WLOG_K_COND, "cond" },
  { ZN_WLOG_POWER, ZN_WLOG_K_POWER, "power" },
  { ZN_WLOG_DISCARD | ZN_WLOG_WP, ZN_WLOG_K_WP, "wp" },
  { ZN_WLOG_FUA | ZN_WLOG_RESTORE, ZN_WLOG_K_RESTORE, "restore" },
  { ZN_WLOG_MARK, ZN_WLOG_K_MARK, "mark" },
};

struct zn_wlog_reader {
  int fd;
  char *name;                   /* escaped path, for messages */
  uint64_t size;                /* bytes */
  uint32_t bs;                  /* the log's sectorsize */
  uint32_t spb;                 /* 512-byte sectors per block */
  uint64_t nr_entries;
  uint64_t next_no, next_off;
  bool after_power;             /* in the entries a POWER's run */
  struct zn_config cfg;
  struct zn_geometry geo;
};

const char *
zn_wlog_kind_name (enum zn_wlog_kind kind)
{
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    if (rows[i].kind == kind)
      return rows[i].name;
  return "?";
}

bool
zn_wlog_has_data (enum zn_wlog_kind kind)
{
  return kind == ZN_WLOG_K_WRITE || kind == ZN_WLOG_K_APPEND
         || kind == ZN_WLOG_K_SNAPSHOT || kind == ZN_WLOG_K_RESTORE;
}

static int __attribute__ ((format (printf, 5, 6)))
bad (const struct zn_wlog_reader *log, const struct zn_wlog_rec *r, char *err,
     size_t errlen, const char *fmt, ...)
{
  char what[512];
  va_list ap;

  va_start (ap, fmt);
  vsnprintf (what, sizeof what, fmt, ap);
  va_end (ap);
  if (r)
    snprintf (err, errlen, "%s: entry %" PRIu64 " (byte %" PRIu64 "): %s",
              log->name, r->no, r->off, what);
  else
    snprintf (err, errlen, "%s: %s", log->name, what);
  return -EINVAL;
}

static int
pread_all (int fd, void *buf, size_t len, uint64_t off)
{
  size_t done = 0;

  while (done < len) {
    ssize_t n = pread (fd, (char *) buf + done, len - done,
                       (off_t) (off + done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return n < 0 ? -errno : -EIO;
    done += (size_t) n;
  }
  return 0;
}

/* ---- the super and the geometry ------------------------------------- */

static int
read_super (struct zn_wlog_reader *log, char *err, size_t errlen)
{
  struct zn_wlog_super s;
  uint32_t bs;

  if (log->size < 512)
    return bad (log, NULL, err, errlen, "%" PRIu64 " bytes: too short for "
                "the super block (truncated log?)", log->size);
  if (pread_all (log->fd, &s, sizeof s, 0) < 0)
    return bad (log, NULL, err, errlen, "reading the super: %s",
                strerror (errno));
  if (le64toh (s.magic) != ZN_WLOG_MAGIC)
    return bad (log, NULL, err, errlen, "not a write log: magic 0x%" PRIx64
                ", not 0x%" PRIx64, (uint64_t) le64toh (s.magic),
                ZN_WLOG_MAGIC);
  if (le64toh (s.version) != ZN_WLOG_VERSION)
    return bad (log, NULL, err, errlen, "version %" PRIu64 " (this reader "
                "knows version %d)", (uint64_t) le64toh (s.version),
                ZN_WLOG_VERSION);
  bs = le32toh (s.sectorsize);
  if (bs < 512 || bs > 4096 || (bs & (bs - 1)))
    return bad (log, NULL, err, errlen, "sectorsize %" PRIu32 " in the super:"
                " must be a power of 2 from 512 to 4096", bs);
  if (log->size < 2 * (uint64_t) bs)
    return bad (log, NULL, err, errlen, "%" PRIu64 " bytes: too short for "
                "the super and entry 0 in blocks of %" PRIu32 " (truncated "
                "log?)", log->size, bs);
  log->bs = bs;
  log->spb = bs >> ZN_SECTOR_SHIFT;
  log->nr_entries = le64toh (s.nr_entries);
  if (log->nr_entries == 0)
    return bad (log, NULL, err, errlen, "nr_entries 0 in the super: entry 0,"
                " the geometry, is missing");
  /* Each entry takes a block at least. */
  if (log->nr_entries > log->size / bs - 1)
    return bad (log, NULL, err, errlen, "nr_entries %" PRIu64 " in the super:"
                " the file's %" PRIu64 " bytes hold at most %" PRIu64
                " entries (truncated log?)", log->nr_entries, log->size,
                log->size / bs - 1);
  log->next_off = bs;
  return 0;
}

/* One word of the geometry text. */
static int
geometry_word (struct zn_wlog_reader *log, struct zn_params *p,
               const char *word, uint64_t *nr_zones, char *msg, size_t msglen)
{
  static const char *const keys[] = {
    "blocksize", "zone_size", "zone_capacity", "zone_nr_conv", "size",
    "kernel",
  };
  const char *eq = strchr (word, '=');
  size_t klen = eq ? (size_t) (eq - word) : 0;
  char *end;

  (void) log;
  if (eq == NULL || klen == 0) {
    snprintf (msg, msglen, "'%s' is not key=value", word);
    return -EINVAL;
  }
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    if (strlen (keys[i]) == klen && strncmp (word, keys[i], klen) == 0)
      return params_set (p, word, msg, msglen);
  if (klen == 8 && strncmp (word, "nr_zones", 8) == 0) {
    errno = 0;
    *nr_zones = strtoull (eq + 1, &end, 10);
    if (errno || *end || eq[1] < '0' || eq[1] > '9') {
      snprintf (msg, msglen, "nr_zones: '%s' is not a number", eq + 1);
      return -EINVAL;
    }
    return 0;
  }
  if (klen == 5 && strncmp (word, "cache", 5) == 0) {
    if (strcmp (eq + 1, "0") && strcmp (eq + 1, "1")) {
      snprintf (msg, msglen, "cache: '%s' is not 0 or 1", eq + 1);
      return -EINVAL;
    }
    return 0;
  }
  snprintf (msg, msglen, "unknown key '%.*s'", (int) klen, word);
  return -EINVAL;
}

static int
parse_geometry (struct zn_wlog_reader *log, const struct zn_wlog_rec *r,
                const char *text, char *err, size_t errlen)
{
  struct zn_params p;
  uint64_t nr_zones = 0;
  char copy[4096], msg[512];
  char *save = NULL;
  int ret = -1;

  params_init (&p);
  snprintf (copy, sizeof copy, "%s", text);
  for (char *w = strtok_r (copy, " ", &save); w;
       w = strtok_r (NULL, " ", &save))
    if (geometry_word (log, &p, w, &nr_zones, msg, sizeof msg) < 0) {
      bad (log, r, err, errlen, "the geometry: %s", msg);
      goto out;
    }
  log->cfg = p.cfg;
  log->cfg.memory_backed = true;
  log->cfg.cache_size = 0;
  log->cfg.zone_max_open = log->cfg.zone_max_active = 0;
  if (zn_geometry_from_config (&log->cfg, &log->geo, msg, sizeof msg) != 0)
    bad (log, r, err, errlen, "the geometry: %s", msg);
  else if (log->cfg.blocksize != log->bs)
    bad (log, r, err, errlen, "the geometry's blocksize %" PRIu32 " is not "
         "the super's sectorsize %" PRIu32, log->cfg.blocksize, log->bs);
  else if (nr_zones != log->geo.nr_zones)
    bad (log, r, err, errlen, "the geometry says nr_zones=%" PRIu64 ", its "
         "size and zone_size make %" PRIu32, nr_zones, log->geo.nr_zones);
  else
    ret = 0;
 out:
  params_free (&p);
  return ret;
}

struct zn_wlog_reader *
zn_wlog_read_open (const char *path, char *err, size_t errlen)
{
  struct zn_wlog_reader *log = calloc (1, sizeof *log);
  size_t nlen = strlen (path);
  struct zn_wlog_rec r;
  struct stat sb;

  if (log == NULL || (log->name = malloc (ZN_ESCAPED_SIZE (nlen))) == NULL) {
    free (log);
    snprintf (err, errlen, "%s", strerror (ENOMEM));
    return NULL;
  }
  zn_escape (log->name, ZN_ESCAPED_SIZE (nlen), path, nlen);
  /* O_NONBLOCK: opening a FIFO for reading would wait for a writer. */
  log->fd = open (path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (log->fd < 0) {
    bad (log, NULL, err, errlen, "%s", errno == ELOOP
         ? "a symbolic link: the log is not opened through one"
         : strerror (errno));
    goto fail;
  }
  if (fstat (log->fd, &sb) < 0 || !S_ISREG (sb.st_mode)
      || fcntl (log->fd, F_SETFL, 0) < 0) {
    bad (log, NULL, err, errlen, "not a regular file");
    goto fail;
  }
  log->size = (uint64_t) sb.st_size;
  if (read_super (log, err, errlen) < 0
      || zn_wlog_read_next (log, &r, err, errlen) < 0)
    goto fail;
  /* The reader's entries start at 0, the geometry, checked again. */
  zn_wlog_read_rewind (log);
  return log;
 fail:
  zn_wlog_read_close (log);
  return NULL;
}

void
zn_wlog_read_rewind (struct zn_wlog_reader *log)
{
  log->next_no = 0;
  log->next_off = log->bs;
  log->after_power = false;
}

void
zn_wlog_read_close (struct zn_wlog_reader *log)
{
  if (log == NULL)
    return;
  if (log->fd >= 0)
    close (log->fd);
  free (log->name);
  free (log);
}

const struct zn_config *
zn_wlog_read_config (const struct zn_wlog_reader *log)
{
  return &log->cfg;
}

const struct zn_geometry *
zn_wlog_read_geometry (const struct zn_wlog_reader *log)
{
  return &log->geo;
}

const char *
zn_wlog_read_name (const struct zn_wlog_reader *log)
{
  return log->name;
}

uint64_t
zn_wlog_read_nr_entries (const struct zn_wlog_reader *log)
{
  return log->nr_entries;
}

/* ---- entries --------------------------------------------------------- */

/* The entries a power cycle writes after its POWER. */
static bool
power_run (enum zn_wlog_kind kind)
{
  return kind == ZN_WLOG_K_WP || kind == ZN_WLOG_K_RESTORE
         || kind == ZN_WLOG_K_COND;
}

static int
classify (const struct zn_wlog_reader *log, struct zn_wlog_rec *r, char *err,
          size_t errlen)
{
  if (r->flags & ~KNOWN_FLAGS)
    return bad (log, r, err, errlen, "unknown flag bits 0x%" PRIx64,
                r->flags & ~KNOWN_FLAGS);
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    if (rows[i].flags == r->flags) {
      r->kind = rows[i].kind;
      if ((r->no == 0) != (r->kind == ZN_WLOG_K_GEOMETRY))
        return bad (log, r, err, errlen, r->no == 0
                    ? "entry 0 must be the geometry (flags MARK|GEOMETRY)"
                    : "a geometry entry after entry 0");
      return 0;
    }
  return bad (log, r, err, errlen, "flags 0x%" PRIx64 " are no entry of the "
              "table (doc/power-fail.md, section 1)", r->flags);
}

/* A mark's name at byte 32, or the geometry's text at byte 48 (after
 * zero and ref: dm-log-writes' readers refuse a nonzero byte 32 in an
 * entry whose flags are not exactly MARK).
 */
static int
check_text (const struct zn_wlog_reader *log, struct zn_wlog_rec *r,
            const unsigned char *blk, uint64_t data_len, char *text,
            size_t textlen, char *err, size_t errlen)
{
  bool mark = r->kind == ZN_WLOG_K_MARK;
  size_t at = mark ? 32 : sizeof (struct zn_wlog_entry);
  uint64_t max = mark ? ZN_WLOG_MARK_MAX : log->bs - at;

  if (data_len == 0 || data_len > max || data_len >= textlen)
    return bad (log, r, err, errlen, "data_len %" PRIu64 ": a %s's %s is 1 "
                "to %" PRIu64 " bytes", data_len, mark ? "mark" : "geometry",
                mark ? "name" : "text", max);
  for (uint64_t i = 0; i < data_len; i++) {
    unsigned char c = blk[at + i];

    if (c < 0x20 + mark || c > 0x7e) {
      char esc[ZN_ESCAPED_SIZE (4096)];

      zn_escape (esc, sizeof esc, blk + at, data_len);
      return bad (log, r, err, errlen, "%s '%s': byte %" PRIu64 " is not "
                  "printable ASCII%s", mark ? "mark name" : "geometry text",
                  esc, i, mark ? " but space" : "");
    }
  }
  memcpy (text, blk + at, data_len);
  text[data_len] = '\0';
  return 0;
}

/* sector, nr_sectors: blocks of the file, checked against the geometry. */
static int
check_range (const struct zn_wlog_reader *log, struct zn_wlog_rec *r,
             uint64_t sector, uint64_t nr, char *err, size_t errlen)
{
  uint64_t cap = log->geo.capacity / log->spb;
  uint64_t zb = log->geo.zone_sectors / log->spb;
  bool data = zn_wlog_has_data (r->kind);
  bool at_start = r->kind != ZN_WLOG_K_WP && !data;
  uint64_t zend;

  if (sector >= cap || nr > cap - sector)
    return bad (log, r, err, errlen, "sectors %" PRIu64 "+%" PRIu64 " (of %"
                PRIu32 " bytes) lie outside the device's %" PRIu64,
                sector, nr, log->bs, cap);
  r->zone = (uint32_t) (sector / zb);
  zend = (uint64_t) (r->zone + 1) * zb;
  if (zend > cap)
    zend = cap;
  if (nr > zend - sector)
    return bad (log, r, err, errlen, "sectors %" PRIu64 "+%" PRIu64 " cross "
                "the end of zone %" PRIu32, sector, nr, r->zone);
  if (at_start && sector % zb)
    return bad (log, r, err, errlen, "a %s at sector %" PRIu64 ", not at the "
                "start of a zone", zn_wlog_kind_name (r->kind), sector);
  if (data && nr == 0)
    return bad (log, r, err, errlen, "a %s of no sectors",
                zn_wlog_kind_name (r->kind));
  if (r->kind == ZN_WLOG_K_RESET && nr != zend - sector)
    return bad (log, r, err, errlen, "a reset of %" PRIu64 " sectors: not "
                "the whole zone's %" PRIu64, nr, zend - sector);
  if (at_start && r->kind != ZN_WLOG_K_RESET && nr)
    return bad (log, r, err, errlen, "nr_sectors %" PRIu64 ": a zone's %s "
                "entry has 0", nr, zn_wlog_kind_name (r->kind));
  if ((r->kind == ZN_WLOG_K_APPEND || r->kind == ZN_WLOG_K_WP)
      && r->zone < log->geo.nr_conv)
    return bad (log, r, err, errlen, "%s in zone %" PRIu32 ", a "
                "conventional zone", r->kind == ZN_WLOG_K_WP ? "a wp entry"
                : "an append", r->zone);
  if (r->kind == ZN_WLOG_K_RESTORE && r->zone >= log->geo.nr_conv)
    return bad (log, r, err, errlen, "a restore in zone %" PRIu32 ", a "
                "sequential zone", r->zone);
  return 0;
}

static int
check_entry (struct zn_wlog_reader *log, struct zn_wlog_rec *r,
             const struct zn_wlog_entry *e, const unsigned char *blk,
             char *err, size_t errlen)
{
  uint64_t sector = le64toh (e->sector), nr = le64toh (e->nr_sectors);
  uint64_t data_len = le64toh (e->data_len);
  bool text = r->kind == ZN_WLOG_K_MARK || r->kind == ZN_WLOG_K_GEOMETRY;

  r->ref = le64toh (e->ref);
  if (r->kind != ZN_WLOG_K_MARK && e->zero)
    return bad (log, r, err, errlen, "byte 32 is not zero in a %s entry (a "
                "mark's name goes there)", zn_wlog_kind_name (r->kind));
  if (!text && data_len)
    return bad (log, r, err, errlen, "data_len %" PRIu64 ": 0 in a %s "
                "entry", data_len, zn_wlog_kind_name (r->kind));
  if (r->kind == ZN_WLOG_K_GEOMETRY && r->ref)
    return bad (log, r, err, errlen, "ref %" PRIu64 ": must be 0 in the "
                "geometry", r->ref);
  if (text) {
    char t[4096];

    if (sector || nr)
      return bad (log, r, err, errlen, "a %s at sector %" PRIu64 "+%" PRIu64
                  ": it has 0+0", zn_wlog_kind_name (r->kind), sector, nr);
    if (check_text (log, r, blk, data_len, t, sizeof t, err, errlen) < 0)
      return -EINVAL;
    if (r->kind == ZN_WLOG_K_GEOMETRY)
      return parse_geometry (log, r, t, err, errlen);
    memcpy (r->mark, t, data_len + 1);  /* check_text kept it short */
    return 0;
  }
  if (r->kind == ZN_WLOG_K_FLUSH ? r->ref > r->no
      : r->kind == ZN_WLOG_K_COND ? r->ref != 0 && r->ref != ZN_COND_READONLY
                                    && r->ref != ZN_COND_OFFLINE
      : r->ref != 0)
    return bad (log, r, err, errlen, "ref %" PRIu64 ": %s", r->ref,
                r->kind == ZN_WLOG_K_FLUSH ? "a flush covers at most the "
                "entries before it"
                : r->kind == ZN_WLOG_K_COND ? "a condition is 0, READONLY "
                "(13) or OFFLINE (15)" : "must be 0 in this entry");
  if ((r->kind == ZN_WLOG_K_WP || r->kind == ZN_WLOG_K_RESTORE)
      && !log->after_power)
    return bad (log, r, err, errlen, "a %s entry that does not follow a "
                "power entry", zn_wlog_kind_name (r->kind));
  if ((r->kind == ZN_WLOG_K_FLUSH || r->kind == ZN_WLOG_K_POWER)
      && (sector || nr))
    return bad (log, r, err, errlen, "a %s at sector %" PRIu64 "+%" PRIu64
                ": it has 0+0", zn_wlog_kind_name (r->kind), sector, nr);
  if (r->kind != ZN_WLOG_K_FLUSH && r->kind != ZN_WLOG_K_POWER
      && check_range (log, r, sector, nr, err, errlen) < 0)
    return -EINVAL;
  r->sector = sector * log->spb;
  r->nr_sectors = nr * log->spb;
  return 0;
}

int
zn_wlog_read_next (struct zn_wlog_reader *log, struct zn_wlog_rec *r,
                   char *err, size_t errlen)
{
  unsigned char blk[4096];
  struct zn_wlog_entry e;
  uint64_t blocks = 0;

  if (log->next_no >= log->nr_entries)
    return 0;
  memset (r, 0, sizeof *r);
  r->no = log->next_no;
  r->off = log->next_off;
  if (log->size - r->off < log->bs)
    return bad (log, r, err, errlen, "the file ends before it: the super "
                "counts %" PRIu64 " entries (truncated log?)",
                log->nr_entries);
  if (pread_all (log->fd, blk, log->bs, r->off) < 0)
    return bad (log, r, err, errlen, "reading it: %s", strerror (errno));
  memcpy (&e, blk, sizeof e);
  r->flags = le64toh (e.flags);
  if (classify (log, r, err, errlen) < 0
      || check_entry (log, r, &e, blk, err, errlen) < 0)
    return -EINVAL;
  if (!(r->flags & ZN_WLOG_DISCARD))
    blocks = le64toh (e.nr_sectors);
  r->data_off = r->off + log->bs;
  if (blocks > (log->size - r->data_off) / log->bs)
    return bad (log, r, err, errlen, "its %" PRIu64 " blocks of data run past "
                "the end of the file (truncated log?)", blocks);
  log->next_off = r->data_off + blocks * log->bs;
  log->next_no++;
  log->after_power = r->kind == ZN_WLOG_K_POWER
                     || (log->after_power && power_run (r->kind));
  return 1;
}

int
zn_wlog_read_data (struct zn_wlog_reader *log, const struct zn_wlog_rec *r,
                   void *buf, char *err, size_t errlen)
{
  int e = pread_all (log->fd, buf, r->nr_sectors << ZN_SECTOR_SHIFT,
                     r->data_off);

  if (e < 0)
    return bad (log, r, err, errlen, "reading its data: %s", strerror (-e));
  return 0;
}
