/* SPDX-License-Identifier: BSD-3-Clause */
/* A device with its data where the configuration says: the model, then
 * the back end under it (backend.h), and the cache over that.  The model
 * reaches its back end only through the table this puts in dev->backend.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "storage/attach.h"
#include "storage/storage.h"
#include "storage/store.h"
#include "model/dev.h"

struct zn_dev *
zn_storage_create (const struct zn_config *cfg, char *err, size_t errlen)
{
  struct zn_dev *dev = zn_model_create (cfg, err, errlen);
  int e = 0;

  if (!dev)
    return NULL;
  if (!dev->geo.memory_backed)
    dev->backend = &pages_null_backend;
  else if (!cfg->backing_dir) {
    pages_attach (dev);
    dev->backend = &pages_backend;
  }
  else {
    dev->backend = &store_backend;
    int r = store_open (dev, cfg->backing_dir, cfg->backing_dir_nofollow,
                        zn_badblocks_set, err, errlen);

    if (r < 0) {
      e = -r;
      dev->backend = NULL;
    }
  }
  if (!e && dev->geo.memory_backed && cfg->cache_size
      && cache_over (dev, cfg->cache_size << 20) < 0) {
    e = ENOMEM;
    if (err && errlen)
      snprintf (err, errlen, "cache_size=%" PRIu64 ": out of memory for "
                "the cache's tables", cfg->cache_size);
  }
  if (e) {
    zn_dev_destroy (dev);
    errno = e;
    return NULL;
  }
  return dev;
}
