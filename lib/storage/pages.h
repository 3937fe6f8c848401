/* SPDX-License-Identifier: BSD-3-Clause */
/* Memory of one zone: an anonymous mapping made on the zone's first write.
 * The kernel gives it pages as they are first written, zeroed, so memory
 * follows what is written, as in null_blk, without an allocation per page.
 * A reset gives the pages back but keeps the mapping: the kernel merges
 * neighbouring zone mappings, unmapping zones in an arbitrary order would
 * split them again, and past vm.max_map_count (65530) munmap and mmap fail.
 */
#ifndef ZONEDNULL_PAGES_H
#define ZONEDNULL_PAGES_H

#include <stdint.h>

#include "model/dev.h"


void pages_init (struct zn_pages *p, uint64_t zone_bytes);

/* Maps the zone's memory on its first write, so that the copy after it
 * cannot fail.  Returns 0 or -ENOSPC.
 */
int pages_reserve (struct zn_pages *p);
void pages_copy_in (struct zn_pages *p, uint64_t off,
                    const void *buf, uint64_t len);
/* Bytes never written read as zeros. */
void pages_copy_out (const struct zn_pages *p, uint64_t off,
                     void *buf, uint64_t len);
/* Drops the data (a reset): the zone reads as zeros again. */
void pages_discard (struct zn_pages *p);
void pages_free (struct zn_pages *p);

#endif
