/* SPDX-License-Identifier: BSD-3-Clause */
/* --nvme-host: the NVMe/TCP hosts and their DH-HMAC-CHAP secrets, from
 * the command line or from a file only its owner may read.
 */
#ifndef ZONEDNULL_SERVER_NVME_HOSTS_H
#define ZONEDNULL_SERVER_NVME_HOSTS_H

#include "nvme/auth.h"

/* --nvme-host=HOSTNQN:SECRET[:CTRL_SECRET] or --nvme-host=@FILE (lines
 * of the same): 0, or -1 with the error said on stderr (never the
 * secret).
 */
int nvme_hosts_add (const char *arg);
/* The hosts so far, and their number. */
const struct nvme_host_secret *nvme_hosts (unsigned *n);
/* Wipes the secrets. */
void nvme_hosts_free (void);

#endif
