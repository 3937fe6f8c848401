#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pages.h"

#define PAGE_SHIFT 12
#define PAGE_SIZE (UINT64_C(1) << PAGE_SHIFT)

void
pages_init (struct zn_pages *p, uint64_t zone_bytes)
{
  p->page = NULL;
  p->nr_pages = (zone_bytes + PAGE_SIZE - 1) >> PAGE_SHIFT;
}

int
pages_reserve (struct zn_pages *p, uint64_t off, uint64_t len)
{
  if (len == 0)
    return 0;
  if (!p->page) {
    p->page = calloc (p->nr_pages, sizeof *p->page);
    if (!p->page)
      return -ENOSPC;
  }
  for (uint64_t i = off >> PAGE_SHIFT; i <= (off + len - 1) >> PAGE_SHIFT; i++) {
    if (!p->page[i]) {
      p->page[i] = calloc (1, PAGE_SIZE);
      if (!p->page[i])
        return -ENOSPC;
    }
  }
  return 0;
}

void
pages_copy_in (struct zn_pages *p, uint64_t off, const void *buf, uint64_t len)
{
  const unsigned char *src = buf;

  while (len) {
    uint64_t in_page = off & (PAGE_SIZE - 1);
    uint64_t n = PAGE_SIZE - in_page < len ? PAGE_SIZE - in_page : len;

    memcpy (p->page[off >> PAGE_SHIFT] + in_page, src, n);
    src += n;
    off += n;
    len -= n;
  }
}

void
pages_copy_out (const struct zn_pages *p, uint64_t off, void *buf, uint64_t len)
{
  unsigned char *dst = buf;

  while (len) {
    uint64_t in_page = off & (PAGE_SIZE - 1);
    uint64_t n = PAGE_SIZE - in_page < len ? PAGE_SIZE - in_page : len;
    const unsigned char *page = p->page ? p->page[off >> PAGE_SHIFT] : NULL;

    if (page)
      memcpy (dst, page + in_page, n);
    else
      memset (dst, 0, n);
    dst += n;
    off += n;
    len -= n;
  }
}

void
pages_free (struct zn_pages *p)
{
  if (!p->page)
    return;
  for (uint64_t i = 0; i < p->nr_pages; i++)
    free (p->page[i]);
  free (p->page);
  p->page = NULL;
}
