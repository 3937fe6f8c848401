/* SPDX-License-Identifier: BSD-3-Clause */
/* The device every front end opens: the model with the write log as its
 * recorder.  It sits above both, so that neither calls the other's
 * creation: the model knows only that a recorder may be attached.
 */
#include <errno.h>

#include "storage/attach.h"
#include "powerfail/wlog.h"
#include "model/zoned.h"

struct zn_dev *
zn_dev_create (const struct zn_config *cfg, char *err, size_t errlen)
{
  struct zn_dev *dev = zn_storage_create (cfg, err, errlen);
  int r;

  if (!dev)
    return NULL;
  r = wlog_init (dev, cfg, err, errlen);
  if (r < 0) {
    zn_dev_destroy (dev);
    errno = -r;
    return NULL;
  }
  return dev;
}
