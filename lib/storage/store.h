/* SPDX-License-Identifier: BSD-3-Clause */
/* File-backed zones (backing_dir): the device's data in one file a zone,
 * in the layout of the kernel's zloop, so that the zones outlive the
 * process and can be larger than memory.
 *
 *   DIR/cnv-NNNNNN   a conventional zone: as long as the zone, sparse;
 *   DIR/seq-NNNNNN   a sequential zone: as long as the data written, so
 *                    that the file's size is the write pointer;
 *   DIR/zonednull.meta  what the files cannot hold: the geometry, the
 *                    READONLY and OFFLINE zones and the bad blocks.
 *
 * A sequential zone comes back EMPTY (size 0), FULL (size = capacity) or
 * CLOSED, as zloop rebuilds it.  The process holds DIR with flock(2) on
 * the directory itself, so that refusing a start changes no file.
 *
 * Writes reach the files (the host's page cache) before they complete, so
 * a killed process loses nothing it acknowledged; FUA fdatasync(2)s its
 * zone's file, and FLUSH the zone files written since the last flush (a
 * single one; several, by one syncfs(2) of their file system).
 */
#ifndef ZONEDNULL_STORE_H
#define ZONEDNULL_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct zn_dev;
struct zone;
struct zn_store;

/* Opens or makes DIR and sets every zone's state from it, and the bad
 * blocks its metadata file lists through set_bad (the model's, which
 * hands the list back through save_meta).  A negative errno
 * and a message naming the cause (a key, a file, the lock); nothing in
 * DIR is changed then.  Nothing in DIR is followed if a link, nor DIR
 * itself with nofollow.
 */
int store_open (struct zn_dev *dev, const char *dir, bool nofollow,
                int (*set_bad) (struct zn_dev *dev, uint64_t first,
                                uint64_t last),
                char *err, size_t errlen);
void store_close (struct zn_dev *dev);

/* The rest of the store is its back end, store_backend (backend.h), and
 * what it tells the model at the open: whether DIR held a device before
 * (dev->restored), DIR (dev->backing_dir), and the wait until the filler
 * has made every zone file a new directory lacks (dev->files_made:
 * -errno, with a message naming the file, if one could not be).
 */

#endif
