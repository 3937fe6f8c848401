/* SPDX-License-Identifier: BSD-3-Clause */
/* An LD_PRELOAD shim that makes one directory's storage slow on demand,
 * for tests/server/test-server-offload.sh: while the file $ZN_STALL_FLAG
 * exists, fdatasync and reads that may wait (preadv2 without RWF_NOWAIT)
 * of files under $ZN_STALL_DIR wait for it to go, at most 60 s; a read
 * that may not wait fails with EAGAIN, as one of pages not cached does.
 * The first stalled call of each kind creates $ZN_STALL_FLAG.fdatasync
 * or $ZN_STALL_FLAG.preadv2, so that the test knows it is held.  Every
 * fdatasync of a file under $ZN_STALL_DIR, held or not, is added to
 * $ZN_STALL_FLAG.log as a line with the file's name, when it returns.
 * With $ZN_STALL_RECV set, the first socket to have received that many
 * bytes since it was accepted creates $ZN_STALL_FLAG.recv: where the
 * server takes none of a connection's input, its buffer is then full.
 */
#ifndef _GNU_SOURCE
# define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* fd is a file under $ZN_STALL_DIR: its path at path. */
static bool
watched (int fd, char path[PATH_MAX])
{
  const char *dir = getenv ("ZN_STALL_DIR");
  char link[64];
  ssize_t n;
  size_t len;

  if (dir == NULL || getenv ("ZN_STALL_FLAG") == NULL)
    return false;
  snprintf (link, sizeof link, "/proc/self/fd/%d", fd);
  n = readlink (link, path, PATH_MAX - 1);
  if (n < 0)
    return false;
  path[n] = '\0';
  len = strlen (dir);
  return strncmp (path, dir, len) == 0 && path[len] == '/';
}

static bool
stalled (int fd)
{
  char path[PATH_MAX];

  return watched (fd, path) && access (getenv ("ZN_STALL_FLAG"), F_OK) == 0;
}

/* One line, in one write, so that threads' lines do not mix. */
static void
log_sync (const char *path)
{
  char name[PATH_MAX], line[PATH_MAX + 1];
  int fd, len;

  snprintf (name, sizeof name, "%s.log", getenv ("ZN_STALL_FLAG"));
  len = snprintf (line, sizeof line, "%s\n", path);
  fd = open (name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd >= 0) {
    if (write (fd, line, (size_t) len) < 0)
      perror ("stall-io: log");
    close (fd);
  }
}

/* Creates $ZN_STALL_FLAG.KIND. */
static void
mark (const char *kind)
{
  char name[PATH_MAX];
  int fd;

  snprintf (name, sizeof name, "%s.%s", getenv ("ZN_STALL_FLAG"), kind);
  fd = open (name, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd >= 0)
    close (fd);
}

/* Marks that a call of kind is held, then waits for the flag to go. */
static void
stall (const char *kind)
{
  const char *flag = getenv ("ZN_STALL_FLAG");
  const struct timespec tick = { 0, 10 * 1000 * 1000 };

  mark (kind);
  for (int i = 0; i < 6000 && access (flag, F_OK) == 0; i++)
    nanosleep (&tick, NULL);
}

int
fdatasync (int fd)
{
  static int (*real) (int);

  char path[PATH_MAX];
  int r, e;

  if (real == NULL)
    real = (int (*) (int)) dlsym (RTLD_NEXT, "fdatasync");
  if (!watched (fd, path))
    return real (fd);
  if (stalled (fd))
    stall ("fdatasync");
  r = real (fd);
  e = errno;
  log_sync (path);
  errno = e;
  return r;
}

ssize_t
preadv2 (int fd, const struct iovec *iov, int iovcnt, off_t offset, int flags)
{
  static ssize_t (*real) (int, const struct iovec *, int, off_t, int);

  if (real == NULL)
    real = (ssize_t (*) (int, const struct iovec *, int, off_t, int))
           dlsym (RTLD_NEXT, "preadv2");
  if (stalled (fd)) {
    if (flags & RWF_NOWAIT) {
      errno = EAGAIN;
      return -1;
    }
    stall ("preadv2");
  }
  return real (fd, iov, iovcnt, offset, flags);
}

/* Bytes received on each socket since it was accepted. */
static atomic_ullong received[4096];

int
accept4 (int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
  static int (*real) (int, struct sockaddr *, socklen_t *, int);
  int c;

  if (real == NULL)
    real = (int (*) (int, struct sockaddr *, socklen_t *, int))
           dlsym (RTLD_NEXT, "accept4");
  c = real (fd, addr, len, flags);
  if (c >= 0 && c < 4096)
    atomic_store (&received[c], 0);
  return c;
}

ssize_t
recv (int fd, void *buf, size_t n, int flags)
{
  static ssize_t (*real) (int, void *, size_t, int);
  const char *want = getenv ("ZN_STALL_RECV");
  ssize_t r;

  if (real == NULL)
    real = (ssize_t (*) (int, void *, size_t, int)) dlsym (RTLD_NEXT, "recv");
  r = real (fd, buf, n, flags);
  if (r > 0 && want && getenv ("ZN_STALL_FLAG") && fd >= 0 && fd < 4096) {
    unsigned long long w = strtoull (want, NULL, 10);
    unsigned long long before = atomic_fetch_add (&received[fd],
                                                  (unsigned long long) r);

    if (before < w && before + (unsigned long long) r >= w)
      mark ("recv");
  }
  return r;
}
