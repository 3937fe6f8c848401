/* SPDX-License-Identifier: BSD-3-Clause */
/* The device every front end opens: the model with the write log as its
 * recorder.  It sits above both, so that neither calls the other's
 * creation: the model knows only that a recorder may be attached.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "model/fault.h"
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

int
zn_fault_outcome (struct zn_dev *dev, const struct zn_fault *fault,
                  enum zn_fault_op op, uint64_t sector, int ret,
                  enum zn_reason *why)
{
  /* The log holds the data already: the mark tells a reader of the log
   * that the host saw this request fail.
   */
  if (fault->action == ZN_FAULT_FAIL_AFTER && ret == 0 && zn_wlog_on (dev)) {
    char mark[64];
    int n = snprintf (mark, sizeof mark, "fault-after:%s:%" PRIu64,
                      zn_fault_op_name (op), sector);

    zn_wlog_mark (dev, mark, (size_t) n);
  }
  return zn_fault_result (fault, ret, why);
}
