/* SPDX-License-Identifier: BSD-3-Clause */
/* What store.c, store-meta.c (the metadata file) and store-scan.c (the
 * check of DIR's zone files at a start) share: the store's state and the
 * helpers all three use.  Not part of the store's API (store.h).
 */
#ifndef ZONEDNULL_STORE_DIR_H
#define ZONEDNULL_STORE_DIR_H

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/storage.h"
#include "storage/store.h"
#include "model/dev.h"

#define META_NAME "zonednull.meta"
#define META_TMP ".zonednull.meta.new"
#define META_FORMAT 1
/* Zone files kept open, most recently used first: a device has up to
 * millions of zones, and a descriptor each would pass any RLIMIT_NOFILE.
 */
#define FD_SLOTS 64
/* Every file in DIR is opened with these: whoever can write in DIR could
 * otherwise make a name a link and have the device truncate and write any
 * file the process can, or make it a FIFO and block the open for good.
 * O_NONBLOCK does nothing to a regular file, and nothing else is kept.
 */
#define IN_DIR (O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)
/* Not an errno: a name in DIR that is not a regular file.  Only messages
 * see it; callers get EIO or EINVAL.
 */
#define NOT_REGULAR (1 << 20)

struct fd_slot {
  uint32_t zone;
  int fd;
  int refs;
  int prev, next;                /* LRU order; -1 ends */
};

struct store_sync;

struct zn_store {
  char *dir;
  int dirfd;                     /* held with flock (LOCK_EX) */
  bool syncfs_is_durable;        /* its file system is not FUSE (store.c) */
  bool restored;
  bool ready;                    /* opened: changes go to the metadata */
  pthread_mutex_t fd_lock;
  struct fd_slot slots[FD_SLOTS];
  int nr_slots;
  int lru_head, lru_tail;
  int32_t *zone_slot;            /* per zone: its slot or -1 */
  /* Zones written since the last flush, to sync. */
  pthread_mutex_t sync_lock;
  /* The flushes in progress, oldest first (store_flush): each syncs the
   * zones written since the one before it took its own, at the same time
   * as the others, and returns once those before it have synced theirs.
   */
  pthread_mutex_t flush_lock;
  struct store_sync *syncs_head, *syncs_tail;
  uint32_t *touched;
  size_t nr_touched;
  uint8_t *is_touched;
  /* What the metadata file holds besides the geometry. */
  pthread_mutex_t meta_lock;
  uint8_t *special;              /* per zone: 0, READONLY or OFFLINE */
  struct zn_bb_list *bb;         /* the model's bad blocks, last told */
  /* The last I/O error logged, so that a full disk logs once; atomic,
   * as writes to different zones run at once.
   */
  atomic_int last_errno;
  /* Makes the zone files a new directory lacks, behind the device. */
  pthread_t filler;
  bool fill_pending;             /* files to make, no filler yet */
  bool filling;                  /* the filler runs (or ran) */
  atomic_bool stopping;          /* an orderly stop waits for the filler */
  int fill_errno;                /* the zone file it could not make */
  char fill_name[32];
};

struct zone_file {
  int fd;
  int slot;                      /* -1: a descriptor of its own */
};

static inline int
store_refuse (char *err, size_t errlen, int errnum, const char *fmt, ...)
{
  va_list ap;

  if (err && errlen) {
    va_start (ap, fmt);
    vsnprintf (err, errlen, fmt, ap);
    va_end (ap);
  }
  errno = errnum;
  return -errnum;
}

static inline const char *
cause (int errnum)
{
  if (errnum == ELOOP)          /* O_NOFOLLOW met a link */
    return "a symbolic link, which zonednull does not follow";
  if (errnum == NOT_REGULAR)
    return "not a regular file";
  return strerror (errnum);
}

/* Opens name in DIR, refusing a link and anything but a regular file.
 * Returns the descriptor or -errno (-NOT_REGULAR).
 */
static inline int
open_in_dir (int dirfd, const char *name, int flags)
{
  int fd = openat (dirfd, name, flags | IN_DIR, 0600);
  struct stat sb;

  if (fd < 0)
    return -errno;
  if (fstat (fd, &sb) < 0)
    sb.st_mode = 0;
  if (!S_ISREG (sb.st_mode)) {
    close (fd);
    return -NOT_REGULAR;
  }
  return fd;
}

static inline void
zone_file_name (const struct zn_dev *dev, uint32_t zno, char *buf, size_t len)
{
  snprintf (buf, len, "%s-%06" PRIu32, zno < dev->geo.nr_conv ? "cnv" : "seq",
            zno);
}

static inline uint32_t
zone_no (const struct zn_dev *dev, const struct zone *z)
{
  return (uint32_t) (z - dev->zones);
}

/* ---- store-meta.c ------------------------------------------------------- */

/* The keys a restart must keep, as given on the command line. */
struct meta_geometry {
  uint64_t size, zone_size, zone_capacity, zone_nr_conv, blocksize;
};

/* A badblocks line, kept until the zones are set. */
struct bb_entry { uint64_t first, last; int lineno; };

int store_meta_write_locked (struct zn_dev *dev);
/* The back end's save_meta: the file again after a READONLY, OFFLINE or
 * bad block change.
 */
int store_save_meta (struct zn_dev *dev, const struct zn_bb_list *bb);
void store_set_special (struct zn_dev *dev, struct zone *z, uint8_t cond);
int store_meta_read (struct zn_dev *dev, const char *dir,
                     struct meta_geometry *m, struct bb_entry *bb,
                     size_t *nr_bb, char *err, size_t errlen);
int store_geometry_check (const struct zn_dev *dev, const char *dir,
                          const struct meta_geometry *had, char *err,
                          size_t errlen);
int store_bb_refusal (char *err, size_t errlen, int r);

/* ---- store-scan.c ------------------------------------------------------- */

long store_scan_files (struct zn_dev *dev, const char *dir,
                       uint64_t *seq_sectors, char *err, size_t errlen);

#endif
