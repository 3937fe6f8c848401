/* SPDX-License-Identifier: BSD-3-Clause */
/* Files of secrets: the hosts' DH-HMAC-CHAP secrets (--nvme-host=@FILE),
 * NVMe/TCP's TLS keys (--nvme-tls-keys) and NBD's PSKs (--tls-psk).
 *
 * One set of rules for all of them, because a file that someone else
 * can write is a file that lets them in, and a mistake in one of them
 * must never leave a door open: the file must be a regular file (not a
 * symbolic link, a FIFO that would block the start, or a device), owned
 * by the user the program runs as, that no one else may read or write,
 * and of a size a secrets file can have.
 */
#ifndef ZONEDNULL_SECRET_FILE_H
#define ZONEDNULL_SECRET_FILE_H

#include <stddef.h>
#include <stdio.h>

/* The largest secrets file accepted: thousands of hosts' lines. */
#define ZN_SECRET_FILE_MAX (1024 * 1024)

/* Opens path for reading by those rules.  On failure, NULL with a
 * message in err: what (the option and the file, as the caller names
 * them), then the rule the file broke.
 */
FILE *zn_secret_file_open (const char *path, const char *what,
                           char *err, size_t errlen);

#endif
