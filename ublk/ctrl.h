/* SPDX-License-Identifier: BSD-3-Clause */
/* Commands on /dev/ublk-control, one at a time from the main thread. */
#ifndef ZONEDNULL_UBLK_CTRL_H
#define ZONEDNULL_UBLK_CTRL_H

#include <stdint.h>

#include <liburing.h>

#define ZU_CONTROL_DEVICE "/dev/ublk-control"

struct zu_ctrl {
  int fd;
  struct io_uring ring;
};

/* 0 or -errno (of open or io_uring_queue_init). */
int zu_ctrl_open (struct zu_ctrl *c);
void zu_ctrl_close (struct zu_ctrl *c);

/* Runs one command: buf/len is its argument buffer, data its data[0].
 * Returns the command's result (>= 0) or -errno.
 */
int zu_ctrl_cmd (struct zu_ctrl *c, uint32_t op, uint32_t dev_id,
                 void *buf, uint16_t len, uint64_t data);

#endif
