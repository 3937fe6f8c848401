/* SPDX-License-Identifier: BSD-3-Clause */
/* The errno name table, shared with libzonednull-client.
 * "EIO", "ETOOMANYREFS", ...; "EUNKNOWN" for an errno not in the table.
 * Declared for clients in zonednull/client.h too.  No strerror: it is
 * not safe on request threads inside nbdkit with the sanitizers.
 */
#ifndef ZONEDNULL_ERRNO_NAME_H
#define ZONEDNULL_ERRNO_NAME_H

const char *zn_errno_name (int err);
/* The errno a name of that table stands for; 0 for another name. */
int zn_errno_value (const char *name);

#endif
