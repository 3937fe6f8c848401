/* SPDX-License-Identifier: BSD-3-Clause */
/* The pidfile zonednull-server and zonednull-ublk write (-P) once they
 * serve.
 */
#ifndef ZONEDNULL_PIDFILE_H
#define ZONEDNULL_PIDFILE_H

/* Writes this process's id to path, whole: a reader never sees it
 * half-written.  0, or a negative errno (the caller says which program
 * and option failed); a link at path's temporary name is not followed.
 */
int zn_write_pidfile (const char *path);

#endif
