/* SPDX-License-Identifier: BSD-3-Clause */
/* The model with its data where cfg says (memory, nothing, or the files
 * of backing_dir, with a cache over them if cache_size asks), and no
 * write log: zn_dev_create is this and the log.  NULL with errno and a
 * message naming the parameter, as zn_dev_create.
 */
#ifndef ZONEDNULL_ATTACH_H
#define ZONEDNULL_ATTACH_H

#include <stddef.h>

struct zn_config;
struct zn_dev;

struct zn_dev *zn_storage_create (const struct zn_config *cfg,
                                  char *err, size_t errlen);

#endif
