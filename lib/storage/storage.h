/* SPDX-License-Identifier: BSD-3-Clause */
/* The back ends (model/backend.h's table) that attach.c puts under a
 * model device.
 */
#ifndef ZONEDNULL_STORAGE_H
#define ZONEDNULL_STORAGE_H

#include <stdint.h>

#include "model/backend.h"

extern const struct zn_backend pages_null_backend;   /* pages.c */
extern const struct zn_backend pages_backend;  /* pages.c */
extern const struct zn_backend store_backend;  /* store.c */

/* cache.c: a cache of bytes on top of dev->backend, which becomes the
 * cache; -ENOMEM.
 */
int cache_over (struct zn_dev *dev, uint64_t bytes);
/* pages.c: each zone's memory, for pages_backend and a cache over it. */
void pages_attach (struct zn_dev *dev);

#endif
