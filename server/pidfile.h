/* SPDX-License-Identifier: BSD-3-Clause */
/* The pidfile both zonednull-server and zonednull-ublk write (-P) once
 * they serve.  A header alone, so that neither program's build needs a
 * source of the other's.
 */
#ifndef ZONEDNULL_PIDFILE_H
#define ZONEDNULL_PIDFILE_H

#include <stdio.h>
#include <unistd.h>

/* Writes this process's id to path.  0, or -1 with errno set (the
 * caller says which program and option failed).
 */
static inline int
zn_write_pidfile (const char *path)
{
  char tmp[4096];
  FILE *fp;

  /* Written whole and renamed, so a reader never sees it half-written. */
  snprintf (tmp, sizeof tmp, "%s.tmp", path);
  fp = fopen (tmp, "w");
  if (fp == NULL || fprintf (fp, "%ld\n", (long) getpid ()) < 0
      || fclose (fp) != 0 || rename (tmp, path) == -1)
    return -1;
  return 0;
}

#endif
