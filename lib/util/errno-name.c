/* SPDX-License-Identifier: BSD-3-Clause */
/* The errno name table, alone in its file: libzonednull-client exports
 * it (zn_errno_name) and must not carry the rest of the model.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "util/errno-name.h"

/* The errnos a device, nbdkit or libnbd can produce. */
static const struct { int err; const char *name; } names[] = {
  { EPERM, "EPERM" }, { ENOENT, "ENOENT" }, { EIO, "EIO" },
  { ENXIO, "ENXIO" }, { E2BIG, "E2BIG" }, { EBADF, "EBADF" },
  { EAGAIN, "EAGAIN" }, { ENOMEM, "ENOMEM" }, { EACCES, "EACCES" },
  { EFAULT, "EFAULT" }, { EBUSY, "EBUSY" }, { EEXIST, "EEXIST" },
  { ENODEV, "ENODEV" }, { EINVAL, "EINVAL" }, { EFBIG, "EFBIG" },
  { ENOSPC, "ENOSPC" }, { EROFS, "EROFS" }, { EPIPE, "EPIPE" },
  { ERANGE, "ERANGE" }, { ENAMETOOLONG, "ENAMETOOLONG" },
  { ENOSYS, "ENOSYS" }, { ENODATA, "ENODATA" }, { ETIME, "ETIME" },
  { EPROTO, "EPROTO" }, { EBADMSG, "EBADMSG" },
  { EOVERFLOW, "EOVERFLOW" }, { EILSEQ, "EILSEQ" },
  { ENOTSOCK, "ENOTSOCK" }, { EPROTONOSUPPORT, "EPROTONOSUPPORT" },
  { EOPNOTSUPP, "EOPNOTSUPP" }, { EADDRNOTAVAIL, "EADDRNOTAVAIL" },
  { ENETUNREACH, "ENETUNREACH" }, { ECONNABORTED, "ECONNABORTED" },
  { ECONNRESET, "ECONNRESET" }, { ENOTCONN, "ENOTCONN" },
  { ESHUTDOWN, "ESHUTDOWN" }, { ETOOMANYREFS, "ETOOMANYREFS" },
  { ETIMEDOUT, "ETIMEDOUT" }, { ECONNREFUSED, "ECONNREFUSED" },
  { EHOSTUNREACH, "EHOSTUNREACH" }, { EDQUOT, "EDQUOT" },
  { ECANCELED, "ECANCELED" },
};

const char *
zn_errno_name (int err)
{
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (names[i].err == err)
      return names[i].name;
  return "EUNKNOWN";
}

int
zn_errno_value (const char *name)
{
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp (names[i].name, name) == 0)
      return names[i].err;
  return 0;
}
