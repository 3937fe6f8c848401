/* SPDX-License-Identifier: BSD-3-Clause */
/* Reading a write log (doc/power-fail.md, section 1): the super, the
 * geometry of entry 0, and every entry checked against the table and the
 * geometry before anything trusts it, so that a truncated or corrupt log
 * is refused with the entry, its byte offset and the rule it broke.
 */
#ifndef ZONEDNULL_WLOG_READ_H
#define ZONEDNULL_WLOG_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/wlog-format.h"
#include "model/zoned.h"

/* What an entry is, from its flags (the table's rows). */
enum zn_wlog_kind {
  ZN_WLOG_K_GEOMETRY,
  ZN_WLOG_K_SNAPSHOT,
  ZN_WLOG_K_WRITE,
  ZN_WLOG_K_APPEND,
  ZN_WLOG_K_FLUSH,
  ZN_WLOG_K_RESET,
  ZN_WLOG_K_OPEN,
  ZN_WLOG_K_CLOSE,
  ZN_WLOG_K_FINISH,
  ZN_WLOG_K_COND,
  ZN_WLOG_K_POWER,
  ZN_WLOG_K_WP,
  ZN_WLOG_K_RESTORE,
  ZN_WLOG_K_MARK,
};

/* One checked entry.  sector and nr_sectors are the model's 512-byte
 * sectors (the file's are blocks of the log's sectorsize).
 */
struct zn_wlog_rec {
  uint64_t no;                  /* entry number */
  uint64_t off;                 /* byte offset of its block */
  uint64_t data_off;            /* byte offset of its data */
  uint64_t flags;
  uint64_t sector;
  uint64_t nr_sectors;
  uint64_t ref;                 /* FLUSH: entries covered; COND: cond */
  uint32_t zone;
  enum zn_wlog_kind kind;
  char mark[ZN_WLOG_MARK_MAX + 1]; /* ZN_WLOG_K_MARK */
};

struct zn_wlog_reader;

/* Opens PATH (not through a symbolic link), checks the super and entry 0
 * and makes the geometry; NULL with a message naming the rule.
 */
struct zn_wlog_reader *zn_wlog_read_open (const char *path, char *err,
                                          size_t errlen);
void zn_wlog_read_close (struct zn_wlog_reader *log);

/* The device the log was written on: its parameters (no cache, no
 * limits, no backing_dir) and its geometry.
 */
const struct zn_config *zn_wlog_read_config (const struct zn_wlog_reader *log);
const struct zn_geometry *
zn_wlog_read_geometry (const struct zn_wlog_reader *log);
/* The log's path, escaped, as messages name it. */
const char *zn_wlog_read_name (const struct zn_wlog_reader *log);
/* Entries the super counts, entry 0 included. */
uint64_t zn_wlog_read_nr_entries (const struct zn_wlog_reader *log);

/* The next entry, checked: 1, 0 after the last, or a negative errno with a
 * message "LOG: entry N (byte B): ...".  Entry 0 comes first.
 */
int zn_wlog_read_next (struct zn_wlog_reader *log, struct zn_wlog_rec *rec,
                       char *err, size_t errlen);
/* Back to entry 0, to read the entries again. */
void zn_wlog_read_rewind (struct zn_wlog_reader *log);
/* rec's data (nr_sectors << 9 bytes) into buf; a negative errno with a
 * message.
 */
int zn_wlog_read_data (struct zn_wlog_reader *log,
                       const struct zn_wlog_rec *rec, void *buf, char *err,
                       size_t errlen);

/* "write", "append", "flush", ... */
const char *zn_wlog_kind_name (enum zn_wlog_kind kind);
/* Whether the entry carries data to apply. */
bool zn_wlog_has_data (enum zn_wlog_kind kind);

#endif
