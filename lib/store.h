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
 * a killed process loses nothing it acknowledged; FLUSH and FUA
 * fdatasync(2) the zone files written since the last flush.
 */
#ifndef ZONEDNULL_STORE_H
#define ZONEDNULL_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct zn_dev;
struct zone;
struct zn_store;

/* Opens or makes DIR and sets every zone's state from it.  -1 with errno
 * and a message naming the cause (a key, a file, the lock); nothing in
 * DIR is changed then.  Nothing in DIR is followed if a link, nor DIR
 * itself with nofollow.
 */
int store_open (struct zn_dev *dev, const char *dir, bool nofollow,
                char *err, size_t errlen);
void store_close (struct zn_dev *dev);
/* Whether DIR held a device before this process. */
bool store_restored (const struct zn_dev *dev);
/* DIR, or NULL without a store. */
const char *store_dir (const struct zn_dev *dev);

/* The rest are called with the zone's lock held; offsets are bytes in the
 * zone.  Every failure is -EIO, as a block device reports it.
 */
int store_read (struct zn_dev *dev, struct zone *z, uint64_t off,
                void *buf, uint64_t len);
/* A failed write to a sequential zone leaves its file as it was. */
int store_write (struct zn_dev *dev, struct zone *z, uint64_t off,
                 const void *buf, uint64_t len);
int store_sync_zone (struct zn_dev *dev, struct zone *z);
/* Sets the file's size: 0 for a reset, the capacity for a finish. */
int store_truncate (struct zn_dev *dev, struct zone *z, uint64_t size);
/* fdatasync of every zone file written since the last one. */
int store_flush (struct zn_dev *dev);

/* Sets each sequential zone's condition and wp from its file (READONLY
 * and OFFLINE zones stay) and recounts the closed zones: a power-on.
 * Called with every zone lock held.
 */
int store_reload (struct zn_dev *dev);
/* Writes the metadata file again after a READONLY, OFFLINE or bad block
 * change.
 */
int store_save_meta (struct zn_dev *dev);
/* Records that z is now READONLY, OFFLINE or (0) neither. */
void store_set_special (struct zn_dev *dev, struct zone *z, uint8_t cond);

#endif
