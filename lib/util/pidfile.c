/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/pidfile.h"

int
zn_write_pidfile (const char *path)
{
  char tmp[4096], text[32];
  int fd, len, ret = 0;

  if ((size_t) snprintf (tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
    return -ENAMETOOLONG;
  len = snprintf (text, sizeof text, "%ld\n", (long) getpid ());
  fd = open (tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
             0644);
  if (fd < 0)
    return -errno;
  if (write (fd, text, (size_t) len) != len)
    ret = errno ? -errno : -EIO;
  if (close (fd) != 0 && ret == 0)
    ret = -errno;
  if (ret == 0 && rename (tmp, path) == -1)
    ret = -errno;
  if (ret < 0)
    unlink (tmp);
  return ret;
}
