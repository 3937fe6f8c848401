/* Sparse page store for one zone: pages are allocated on first write and
 * freed by a reset, so memory follows what is written, as in null_blk.
 */
#ifndef ZONEDNULL_PAGES_H
#define ZONEDNULL_PAGES_H

#include <stdint.h>

struct zn_pages {
  unsigned char **page;     /* NULL until the zone is first written */
  uint64_t nr_pages;
};

void pages_init (struct zn_pages *p, uint64_t zone_bytes);

/* Allocates every page [off, off+len) touches, so that the copy after it
 * cannot fail.  Returns 0 or -ENOSPC.
 */
int pages_reserve (struct zn_pages *p, uint64_t off, uint64_t len);
void pages_copy_in (struct zn_pages *p, uint64_t off,
                    const void *buf, uint64_t len);
/* Bytes never written read as zeros. */
void pages_copy_out (const struct zn_pages *p, uint64_t off,
                     void *buf, uint64_t len);
void pages_free (struct zn_pages *p);

#endif
