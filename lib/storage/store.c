/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdlib.h>
#include <sys/file.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <linux/magic.h>

#include "storage/store-dir.h"
#include "util/fifo.h"

/* ---- messages ----------------------------------------------------------- */

/* An I/O error has no caller to report it to but the client, which sees
 * EIO: the cause and the file go to stderr (nbdkit's log, the servers'
 * log), once until the next success.
 */
static int
file_error (struct zn_store *st, const char *what, const char *file,
            int errnum)
{
  if (atomic_exchange_explicit (&st->last_errno, errnum,
                               memory_order_relaxed) != errnum)
    fprintf (stderr, "zonednull: backing_dir %s: %s %s: %s\n", st->dir, what,
             file, cause (errnum));
  return -EIO;
}

static int
io_error (struct zn_dev *dev, const char *what, uint32_t zno, int errnum)
{
  char name[32];

  zone_file_name (dev, zno, name, sizeof name);
  return file_error (dev->store, what, name, errnum);
}

/* ---- the descriptor cache ---------------------------------------------- */

static void
lru_unlink (struct zn_store *st, int s)
{
  struct fd_slot *e = &st->slots[s];

  if (e->prev >= 0)
    st->slots[e->prev].next = e->next;
  else
    st->lru_head = e->next;
  if (e->next >= 0)
    st->slots[e->next].prev = e->prev;
  else
    st->lru_tail = e->prev;
}

static void
lru_push (struct zn_store *st, int s)
{
  struct fd_slot *e = &st->slots[s];

  e->prev = -1;
  e->next = st->lru_head;
  if (st->lru_head >= 0)
    st->slots[st->lru_head].prev = s;
  else
    st->lru_tail = s;
  st->lru_head = s;
}

/* The descriptor, or -errno. */
static int
open_zone_file (struct zn_dev *dev, uint32_t zno)
{
  char name[32];

  zone_file_name (dev, zno, name, sizeof name);
  return open_in_dir (dev->store->dirfd, name, O_RDWR | O_CREAT);
}

static void *fill_files (void *arg);

static int
file_get (struct zn_dev *dev, uint32_t zno, struct zone_file *f)
{
  struct zn_store *st = dev->store;
  int s, fd;

  pthread_mutex_lock (&st->fd_lock);
  if (st->fill_pending) {
    st->filling = pthread_create (&st->filler, NULL, fill_files, dev) == 0;
    st->fill_pending = !st->filling;
  }
  s = st->zone_slot[zno];
  if (s >= 0) {
    st->slots[s].refs++;
    lru_unlink (st, s);
    lru_push (st, s);
    pthread_mutex_unlock (&st->fd_lock);
    *f = (struct zone_file) { st->slots[s].fd, s };
    return 0;
  }
  fd = open_zone_file (dev, zno);
  if (fd < 0) {
    pthread_mutex_unlock (&st->fd_lock);
    return fd;
  }
  if (st->nr_slots < FD_SLOTS)
    s = st->nr_slots++;
  else {
    for (s = st->lru_tail; s >= 0 && st->slots[s].refs; s = st->slots[s].prev)
      ;
    if (s < 0) {                /* every cached file is in use */
      pthread_mutex_unlock (&st->fd_lock);
      *f = (struct zone_file) { fd, -1 };
      return 0;
    }
    lru_unlink (st, s);
    close (st->slots[s].fd);
    st->zone_slot[st->slots[s].zone] = -1;
  }
  st->slots[s] = (struct fd_slot) { .zone = zno, .fd = fd, .refs = 1 };
  st->zone_slot[zno] = s;
  lru_push (st, s);
  pthread_mutex_unlock (&st->fd_lock);
  *f = (struct zone_file) { fd, s };
  return 0;
}

static void
file_put (struct zn_dev *dev, struct zone_file *f)
{
  struct zn_store *st = dev->store;

  if (f->slot < 0) {
    close (f->fd);
    return;
  }
  pthread_mutex_lock (&st->fd_lock);
  st->slots[f->slot].refs--;
  pthread_mutex_unlock (&st->fd_lock);
}

static void
touch (struct zn_store *st, uint32_t zno)
{
  pthread_mutex_lock (&st->sync_lock);
  if (!st->is_touched[zno]) {
    st->is_touched[zno] = 1;
    st->touched[st->nr_touched++] = zno;
  }
  pthread_mutex_unlock (&st->sync_lock);
}

/* ---- data --------------------------------------------------------------- */

/* Moves len bytes between buf and the file at off, through the end of a
 * file being read.  Returns the bytes moved, or -errno.
 */
static int64_t
transfer (int fd, unsigned char *buf, uint64_t len, uint64_t off, bool write)
{
  uint64_t done = 0;

  while (done < len) {
    struct iovec v = { buf + done, len - done };
    ssize_t n = write
      ? pwrite (fd, buf + done, len - done, (off_t) (off + done))
      : preadv2 (fd, &v, 1, (off_t) (off + done), zn_nowait ? RWF_NOWAIT : 0);

    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return -errno;
    if (n == 0)                 /* past the end: never written */
      break;
    done += (uint64_t) n;
  }
  return (int64_t) done;
}

/* A zone's data, with its lock held (store_write also from the cache's
 * write-back, which the cache lock serialises instead); offsets are bytes
 * in the zone.  Every failure is -EIO, as a block device reports it.
 */
static int
store_read (struct zn_dev *dev, struct zone *z, uint64_t off, void *buf,
            uint64_t len)
{
  uint32_t zno = zone_no (dev, z);
  struct zone_file f;
  int64_t done;
  int r = file_get (dev, zno, &f);

  ZONE_ASSERT_HELD (z);
  if (r < 0)
    return io_error (dev, "opening", zno, -r);
  done = transfer (f.fd, buf, len, off, false);
  file_put (dev, &f);
  /* Not cached (EAGAIN), or a file system that cannot tell. */
  if (zn_nowait && (done == -EAGAIN || done == -EOPNOTSUPP))
    return -EAGAIN;
  if (done < 0)
    return io_error (dev, "reading", zno, (int) -done);
  memset ((unsigned char *) buf + done, 0, len - (uint64_t) done);
  return 0;
}

/* A failed write to a sequential zone leaves its file as it was. */
static int
store_write (struct zn_dev *dev, struct zone *z, uint64_t off,
             const void *buf, uint64_t len)
{
  uint32_t zno = zone_no (dev, z);
  struct zone_file f;
  int64_t done;
  int r = file_get (dev, zno, &f);

  if (r < 0)
    return io_error (dev, "opening", zno, -r);
  done = transfer (f.fd, (unsigned char *) buf, len, off, true);
  if (done >= 0 && (uint64_t) done < len)
    done = -ENOSPC;
  /* The size of a sequential zone's file is its wp: a partial write
   * (ENOSPC) must not move it.
   */
  if (done < 0 && z->type == ZN_ZONE_SEQWRITE_REQ
      && ftruncate (f.fd, (off_t) off) < 0)
    done = -errno;
  file_put (dev, &f);
  if (done < 0)
    return io_error (dev, "writing", zno, (int) -done);
  if (atomic_load_explicit (&dev->store->last_errno, memory_order_relaxed))
    atomic_store_explicit (&dev->store->last_errno, 0, memory_order_relaxed);
  touch (dev->store, zno);
  return 0;
}

static int
store_sync_zone (struct zn_dev *dev, struct zone *z)
{
  uint32_t zno = zone_no (dev, z);
  struct zone_file f;
  int r = file_get (dev, zno, &f);

  ZONE_ASSERT_HELD (z);
  if (r < 0)
    return io_error (dev, "opening", zno, -r);
  r = fdatasync (f.fd) ? errno : 0;
  file_put (dev, &f);
  return r ? io_error (dev, "syncing", zno, r) : 0;
}

static int
store_truncate (struct zn_dev *dev, struct zone *z, uint64_t size)
{
  uint32_t zno = zone_no (dev, z);
  struct zone_file f;
  int r = file_get (dev, zno, &f);

  ZONE_ASSERT_HELD (z);
  if (r < 0)
    return io_error (dev, "opening", zno, -r);
  r = ftruncate (f.fd, (off_t) size) ? errno : 0;
  file_put (dev, &f);
  if (r)
    return io_error (dev, "truncating", zno, r);
  touch (dev->store, zno);
  return 0;
}

/* A flush in progress. */
struct store_sync {
  int ret;                      /* its own, or an earlier one's failure */
  bool synced;                  /* its own zones are */
  bool released;                /* and every earlier flush's: it returns */
  pthread_cond_t released_cond;
  struct store_sync *next;
};

/* A zone whose sync failed is still to be made durable: the next flush
 * takes it again.
 */
static int
sync_failed (struct zn_dev *dev, uint32_t zno, int errnum)
{
  touch (dev->store, zno);
  return io_error (dev, "syncing", zno, errnum);
}

/* fdatasync of the zones, one after another. */
static int
sync_zones_serial (struct zn_dev *dev, const uint32_t *zones, size_t n)
{
  int ret = 0;

  for (size_t i = 0; i < n; i++) {
    struct zone_file f;
    int r = file_get (dev, zones[i], &f);

    if (r == 0) {
      r = fdatasync (f.fd) ? -errno : 0;
      file_put (dev, &f);
    }
    if (r < 0)
      ret = sync_failed (dev, zones[i], -r);
  }
  return ret;
}

/* Several zones: one syncfs(2) of the file system that holds them, as
 * zloop does.  It commits the journal and flushes the disk's cache once,
 * where an fdatasync per zone file costs a commit and a flush each (or,
 * submitted at once, a kernel thread each to wait for them).  It also
 * writes back whatever else is dirty there, which a backing_dir of its
 * own keeps small.  Since Linux 5.8 it reports the write-back errors of
 * the file system since the last syncfs of dirfd.
 *
 * FUSE is the exception: its syncfs reaches the server's disk only where
 * both ends know FUSE_SYNCFS, so there each zone file gets its fdatasync.
 */
static int
sync_zones (struct zn_dev *dev, const uint32_t *zones, size_t n)
{
  struct zn_store *st = dev->store;
  int err;

  if (n < 2 || !st->syncfs_is_durable)
    return sync_zones_serial (dev, zones, n);
  if (syncfs (st->dirfd) == 0)
    return 0;
  err = errno;
  for (size_t i = 0; i < n; i++)
    touch (st, zones[i]);
  return file_error (st, "syncing", "the file system that holds it", err);
}

/* A flush covers the writes completed before it arrived: the zones they
 * touched were either taken by it, which syncs them, or by a flush still
 * syncing, which it waits for (and whose failure it reports).  Flushes
 * from several threads so sync their zones side by side, as a disk
 * serves several fdatasyncs at once.
 *
 * A flush that took no zone has only to wait, and one whose syncs end
 * before an earlier flush's waits too.  The flush that finishes at the
 * head of the list releases every one behind it that is done, each by its
 * own condition: one wake-up each, all at once.  Were the flushes to leave
 * one by one, each woken by the one before and all by every departure,
 * a busy host would wake dozens of threads per flush, and a flush's
 * reply would wait for each of those before it to be scheduled in turn.
 */
static int
store_flush (struct zn_dev *dev)
{
  struct zn_store *st = dev->store;
  struct store_sync me = { 0 };
  uint32_t *zones = NULL;
  size_t n;
  int ret = 0;

  pthread_mutex_lock (&st->flush_lock);
  pthread_mutex_lock (&st->sync_lock);
  n = st->nr_touched;
  if (n == 0 && st->syncs_head == NULL) {
    /* Nothing written since the last flush took it, which has returned. */
    pthread_mutex_unlock (&st->sync_lock);
    pthread_mutex_unlock (&st->flush_lock);
    return 0;
  }
  if (n) {
    zones = malloc (n * sizeof *zones);
    if (zones == NULL) {
      pthread_mutex_unlock (&st->sync_lock);
      pthread_mutex_unlock (&st->flush_lock);
      return -ENOMEM;
    }
    memcpy (zones, st->touched, n * sizeof *zones);
    for (size_t i = 0; i < n; i++)
      st->is_touched[zones[i]] = 0;
    st->nr_touched = 0;
  }
  pthread_mutex_unlock (&st->sync_lock);
  me.synced = n == 0;
  pthread_cond_init (&me.released_cond, NULL);
  ZN_FIFO_PUSH (st->syncs_head, st->syncs_tail, &me, next);
  if (n) {
    pthread_mutex_unlock (&st->flush_lock);
    ret = sync_zones (dev, zones, n);
    free (zones);
    pthread_mutex_lock (&st->flush_lock);
    me.synced = true;
    /* The flushes after this one cover its zones too. */
    if (ret < 0)
      for (struct store_sync *s = me.next; s; s = s->next)
        if (s->ret == 0)
          s->ret = ret;
  }
  if (st->syncs_head == &me)
    while (st->syncs_head && st->syncs_head->synced) {
      struct store_sync *s;

      ZN_FIFO_POP (st->syncs_head, st->syncs_tail, s, next);
      s->released = true;
      if (s != &me)
        pthread_cond_signal (&s->released_cond);
    }
  while (!me.released)
    pthread_cond_wait (&me.released_cond, &st->flush_lock);
  if (me.ret < 0)
    ret = me.ret;
  pthread_mutex_unlock (&st->flush_lock);
  pthread_cond_destroy (&me.released_cond);
  return ret;
}

/* ---- zone state from the files ---------------------------------------- */

static void
set_seq_zone (struct zone *z, uint8_t special, uint64_t file_sectors,
              unsigned *nr_closed)
{
  if (special) {
    z->cond = special;
    z->wp = UINT64_MAX;
  }
  else if (file_sectors == 0) {
    z->cond = ZN_COND_EMPTY;
    z->wp = z->start;
  }
  else if (file_sectors == z->capacity) {
    z->cond = ZN_COND_FULL;
    z->wp = z->start + z->capacity;
  }
  else {
    z->cond = ZN_COND_CLOSED;
    z->wp = z->start + file_sectors;
    ++*nr_closed;
  }
}

/* A power-on: each sequential zone's condition and wp from its file
 * (READONLY and OFFLINE zones stay), and the closed zones recounted.
 */
static int
store_reload (struct zn_dev *dev, const struct zn_keep *keep,
              zn_dropped_fn *dropped)
{
  struct zn_store *st = dev->store;
  unsigned nr_closed = 0;
  int ret = 0;

  /* Without a cache nothing written is pending. */
  (void) keep;
  (void) dropped;
  ALL_ZONES_ASSERT_HELD (dev);
  for (uint32_t i = dev->geo.nr_conv; i < dev->geo.nr_zones; i++) {
    struct zone *z = &dev->zones[i];
    char name[32];
    struct stat sb;
    uint64_t sectors = 0;

    zone_file_name (dev, i, name, sizeof name);
    if (fstatat (st->dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
      if (errno != ENOENT)
        ret = io_error (dev, "reading the size of", i, errno);
    }
    else if (!S_ISREG (sb.st_mode))
      ret = io_error (dev, "reading the size of", i,
                      S_ISLNK (sb.st_mode) ? ELOOP : NOT_REGULAR);
    else
      sectors = (uint64_t) sb.st_size >> ZN_SECTOR_SHIFT;
    if (sectors > z->capacity)
      sectors = z->capacity;
    set_seq_zone (z, st->special[i], sectors, &nr_closed);
  }
  atomic_store (&dev->nr_closed, nr_closed);
  return ret;
}

/* ---- opening ------------------------------------------------------------ */

/* Every zone file that DIR lacks, as zloop makes them, so that the
 * directory is a zloop device too: a conventional zone's file as long as
 * the zone, a sequential zone's empty.  A missing file reads as an empty
 * zone meanwhile, so the device need not wait for 81,920 files of a
 * 20 TiB device (up to a minute on a busy disk): this runs beside it,
 * each file under its zone's lock.  An orderly stop waits for it, so that
 * zloop can open what zonednull leaves; after a crash the next start
 * makes the rest.  It starts with the first zone file used, not with the
 * device: the programs fork to become daemons after making their devices
 * (a thread does not follow a fork), and nbdkit reopens its standard
 * descriptors meanwhile.
 */
static void *
fill_files (void *arg)
{
  struct zn_dev *dev = arg;
  struct zn_store *st = dev->store;

  for (uint32_t i = 0; i < dev->geo.nr_zones; i++) {
    struct zone *z = &dev->zones[i];
    bool conv = i < dev->geo.nr_conv;
    char name[32];
    struct stat sb;
    int fd, e = 0;

    zone_file_name (dev, i, name, sizeof name);
    /* Once, so that a slow stop says why. */
    if (atomic_exchange (&st->stopping, false))
      fprintf (stderr, "zonednull: backing_dir %s: making the zone files "
               "from %s on before stopping\n", st->dir, name);
    pthread_mutex_lock (z->mutex);
    fd = open_in_dir (st->dirfd, name, O_RDWR | O_CREAT | (conv ? 0 : O_EXCL));
    if (fd < 0 && fd != -EEXIST)
      e = -fd;
    else if (fd >= 0 && conv && (fstat (fd, &sb) < 0
                                 || ((uint64_t) sb.st_size
                                     < z->len << ZN_SECTOR_SHIFT
                                     && ftruncate (fd, (off_t) (z->len
                                       << ZN_SECTOR_SHIFT)) < 0)))
      e = errno;
    pthread_mutex_unlock (z->mutex);
    if (fd >= 0)
      close (fd);
    if (e) {
      fprintf (stderr, "zonednull: backing_dir %s: making %s: %s\n",
               st->dir, name, cause (e));
      st->fill_errno = e;
      snprintf (st->fill_name, sizeof st->fill_name, "%s", name);
      break;
    }
  }
  fsync (st->dirfd);
  return NULL;
}

/* A new device with zone_full: its FULL zones need their files at once,
 * since a missing file means an empty zone.
 */
static int
make_files (struct zn_dev *dev, const char *dir, char *err, size_t errlen)
{
  for (uint32_t i = 0; i < dev->geo.nr_zones; i++) {
    struct zone *z = &dev->zones[i];
    int fd = open_zone_file (dev, i);
    uint64_t size = 0;

    if (i < dev->geo.nr_conv)
      size = z->len << ZN_SECTOR_SHIFT;
    else if (z->cond == ZN_COND_FULL)          /* zone_full */
      size = z->capacity << ZN_SECTOR_SHIFT;
    if (fd < 0 || (size && ftruncate (fd, (off_t) size))) {
      char name[32];
      int e = fd < 0 ? -fd : errno;

      if (fd >= 0)
        close (fd);
      zone_file_name (dev, i, name, sizeof name);
      return store_refuse (err, errlen, e == NOT_REGULAR ? EINVAL : e,
                     "backing_dir=%s: making %s: %s", dir, name, cause (e));
    }
    close (fd);
  }
  return fsync (dev->store->dirfd);
}

static int
open_dir (const char *dir, bool nofollow, bool *made, char *err,
          size_t errlen)
{
  int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0);
  int fd = open (dir, flags);
  struct stat sb;

  *made = false;
  if (fd < 0 && errno == ENOENT) {
    if (mkdir (dir, 0700) < 0)
      return store_refuse (err, errlen, errno, "backing_dir=%s: cannot be made: %s",
                     dir, strerror (errno));
    *made = true;
    fd = open (dir, flags);
  }
  /* O_NOFOLLOW with O_DIRECTORY says ENOTDIR for a link. */
  if (fd < 0 && nofollow && errno == ENOTDIR && lstat (dir, &sb) == 0
      && S_ISLNK (sb.st_mode))
    return store_refuse (err, errlen, ELOOP, "backing_dir=%s: is %s", dir,
                   cause (ELOOP));
  if (fd < 0)
    return store_refuse (err, errlen, errno, "backing_dir=%s: %s", dir,
                   strerror (errno));
  if (flock (fd, LOCK_EX | LOCK_NB) < 0) {
    int e = errno;
    close (fd);
    if (e == EWOULDBLOCK)
      return store_refuse (err, errlen, EBUSY, "backing_dir=%s: another running "
                     "zonednull holds this directory", dir);
    return store_refuse (err, errlen, e, "backing_dir=%s: locking: %s", dir,
                   strerror (e));
  }
  if (faccessat (fd, ".", W_OK | X_OK, AT_EACCESS) < 0) {
    int e = errno;
    close (fd);
    return store_refuse (err, errlen, e, "backing_dir=%s: cannot be written: %s",
                   dir, strerror (e));
  }
  return fd;
}

static int store_files_made (struct zn_dev *dev, char *err, size_t errlen);

int
store_open (struct zn_dev *dev, const char *dir, bool nofollow,
            int (*set_bad) (struct zn_dev *dev, uint64_t first, uint64_t last),
            char *err, size_t errlen)
{
  struct zn_store *st = calloc (1, sizeof *st);
  uint32_t nr_zones = dev->geo.nr_zones;
  uint64_t *seq_sectors = NULL;
  struct meta_geometry had = { 0 };
  struct bb_entry *bb = NULL;
  size_t nr_bb = 0;
  unsigned nr_closed = 0;
  bool made = false;
  long found;
  struct statfs sfs;
  int has_meta, r;

  if (st == NULL)
    return store_refuse (err, errlen, ENOMEM, "out of memory");
  dev->store = st;
  st->dirfd = -1;
  st->lru_head = st->lru_tail = -1;
  pthread_mutex_init (&st->fd_lock, NULL);
  pthread_mutex_init (&st->sync_lock, NULL);
  pthread_mutex_init (&st->flush_lock, NULL);
  pthread_mutex_init (&st->meta_lock, NULL);
  st->dir = strdup (dir);
  st->zone_slot = malloc (nr_zones * sizeof *st->zone_slot);
  st->touched = malloc (nr_zones * sizeof *st->touched);
  st->is_touched = calloc (nr_zones, 1);
  st->special = calloc (nr_zones, 1);
  st->bb = calloc (1, sizeof *st->bb);
  seq_sectors = calloc (nr_zones, sizeof *seq_sectors);
  bb = malloc (ZN_BADBLOCKS_MAX * sizeof *bb);
  if (!st->dir || !st->zone_slot || !st->touched || !st->is_touched
      || !st->special || !st->bb || !seq_sectors || !bb) {
    store_refuse (err, errlen, ENOMEM, "out of memory for %" PRIu32 " zone files",
            nr_zones);
    goto fail;
  }
  for (uint32_t i = 0; i < nr_zones; i++)
    st->zone_slot[i] = -1;

  st->dirfd = open_dir (dir, nofollow, &made, err, errlen);
  if (st->dirfd < 0)
    goto fail;
  st->syncfs_is_durable = fstatfs (st->dirfd, &sfs) == 0
    && sfs.f_type != FUSE_SUPER_MAGIC;
  has_meta = store_meta_read (dev, dir, &had, bb, &nr_bb, err, errlen);
  if (has_meta < 0 || (has_meta && store_geometry_check (dev, dir, &had, err,
                                                         errlen) < 0))
    goto fail;
  found = store_scan_files (dev, dir, seq_sectors, err, errlen);
  if (found < 0)
    goto fail;
  st->restored = has_meta || found > 0;

  if (st->restored) {
    for (uint32_t i = dev->geo.nr_conv; i < nr_zones; i++)
      set_seq_zone (&dev->zones[i], st->special[i], seq_sectors[i],
                    &nr_closed);
    if (dev->geo.max_active && nr_closed > dev->geo.max_active) {
      store_refuse (err, errlen, EINVAL, "zone_max_active=%" PRIu32 ": backing_dir="
              "%s holds %u CLOSED zones (written, not full), more than the "
              "limit lets be active", dev->geo.max_active, dir, nr_closed);
      goto fail;
    }
    atomic_store (&dev->nr_closed, nr_closed);
    for (size_t i = 0; i < nr_bb; i++) {
      r = set_bad (dev, bb[i].first, bb[i].last);
      if (r < 0) {
        store_refuse (err, errlen, EINVAL, "backing_dir=%s: " META_NAME " line %d: "
                "badblocks %" PRIu64 " %" PRIu64 ": ", dir, bb[i].lineno,
                bb[i].first, bb[i].last);
        store_bb_refusal (err, errlen, r);
        goto fail;
      }
    }
  }
  else if (dev->zone_full && make_files (dev, dir, err, errlen) < 0)
    goto fail;
  r = store_meta_write_locked (dev);
  if (r < 0) {
    store_refuse (err, errlen, -r, "backing_dir=%s: writing " META_NAME ": %s",
            dir, strerror (-r));
    goto fail;
  }
  st->ready = true;
  dev->restored = st->restored;
  dev->backing_dir = st->dir;
  dev->files_made = store_files_made;
  if ((uint64_t) found < nr_zones && !(!st->restored && dev->zone_full))
    st->fill_pending = true;
  free (seq_sectors);
  free (bb);
  return 0;

 fail:
  r = errno;
  if (made && st->dirfd >= 0)
    unlinkat (AT_FDCWD, dir, AT_REMOVEDIR);   /* only if still empty */
  free (seq_sectors);
  free (bb);
  store_close (dev);
  errno = r;
  return -r;
}

static int
store_files_made (struct zn_dev *dev, char *err, size_t errlen)
{
  struct zn_store *st = dev->store;

  if (st == NULL)
    return 0;
  if (st->fill_pending) {       /* no zone file used: no zone lock held */
    st->fill_pending = false;
    fill_files (dev);
  }
  if (st->filling) {
    pthread_join (st->filler, NULL);
    st->filling = false;
  }
  if (st->fill_errno)
    return store_refuse (err, errlen, st->fill_errno, "backing_dir=%s: making %s: "
                   "%s", st->dir, st->fill_name, cause (st->fill_errno));
  return 0;
}

void
store_close (struct zn_dev *dev)
{
  struct zn_store *st = dev->store;

  if (st == NULL)
    return;
  if (st->fill_pending)         /* no zone file used: no zone lock held */
    fill_files (dev);
  if (st->filling) {
    atomic_store (&st->stopping, true);
    pthread_join (st->filler, NULL);
  }
  for (int s = 0; s < st->nr_slots; s++)
    close (st->slots[s].fd);
  if (st->dirfd >= 0)
    close (st->dirfd);                 /* and with it the lock */
  pthread_mutex_destroy (&st->fd_lock);
  pthread_mutex_destroy (&st->sync_lock);
  pthread_mutex_destroy (&st->flush_lock);
  pthread_mutex_destroy (&st->meta_lock);
  free (st->dir);
  free (st->zone_slot);
  free (st->touched);
  free (st->is_touched);
  free (st->special);
  free (st->bb);
  free (st);
  dev->store = NULL;
}

/* ---- the back end ------------------------------------------------------- */

static int
file_read (struct zn_dev *dev, struct zone *z, uint64_t off, void *buf,
           uint64_t len, uint64_t valid)
{
  int ret = valid ? store_read (dev, z, off, buf, valid) : 0;

  if (ret == 0)
    fill_past_wp (buf, len, valid);
  return ret;
}

/* SEEK_DATA: a hole of a sparse zone file reads as zeros. */
static uint64_t
file_next_data (struct zn_dev *dev, struct zone *z, uint64_t off,
                uint64_t end)
{
  struct zone_file f;
  off_t at;

  if (file_get (dev, zone_no (dev, z), &f) < 0)
    return off;
  at = lseek (f.fd, (off_t) off, SEEK_DATA);
  if (at < 0 && errno == ENXIO)
    at = (off_t) end;
  else if (at < 0)
    at = (off_t) off;
  file_put (dev, &f);
  return (uint64_t) at < end ? (uint64_t) at : end;
}

static int
file_write (struct zn_dev *dev, struct zone *z, uint64_t off,
            const void *buf, uint64_t len, bool fua)
{
  int ret = store_write (dev, z, off, buf, len);

  return ret == 0 && fua ? store_sync_zone (dev, z) : ret;
}

/* A reset empties the zone's file and a finish fills it to the capacity,
 * as zloop does; both are durable at once.
 */
static int
file_size (struct zn_dev *dev, struct zone *z, uint64_t size)
{
  int ret = store_truncate (dev, z, size);

  return ret ? ret : store_sync_zone (dev, z);
}

static int
file_reset (struct zn_dev *dev, struct zone *z)
{
  return file_size (dev, z, 0);
}

static int
file_finish (struct zn_dev *dev, struct zone *z)
{
  return file_size (dev, z, z->capacity << ZN_SECTOR_SHIFT);
}

/* An orderly stop makes what was written durable. */
static void
file_free (struct zn_dev *dev)
{
  store_flush (dev);
  store_close (dev);
}

const struct zn_backend store_backend = {
  .name = "store",
  .keeps_data = true,
  .read = file_read,
  .write = file_write,
  .reset = file_reset,
  .finish = file_finish,
  .set_cond = store_set_special,
  .save_meta = store_save_meta,
  .next_data = file_next_data,
  .flush = store_flush,
  .reload = store_reload,
  .free = file_free,
};
