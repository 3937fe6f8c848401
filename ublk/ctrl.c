/* SPDX-License-Identifier: BSD-3-Clause */
/* Commands on /dev/ublk-control.
 *
 * They are io_uring passthrough commands whose 32-byte argument lives in
 * the command area of a 128-byte SQE; ublk_drv runs them in io_uring's
 * worker, so a command such as START_DEV may block until the queues have
 * answered the zone reports it makes.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "ublk-abi.h"
#include "ctrl.h"

int
zu_ctrl_open (struct zu_ctrl *c)
{
  int r;

  c->fd = open (ZU_CONTROL_DEVICE, O_RDWR | O_CLOEXEC);
  if (c->fd == -1)
    return -errno;
  r = io_uring_queue_init (4, &c->ring, IORING_SETUP_SQE128);
  if (r < 0) {
    close (c->fd);
    c->fd = -1;
  }
  return r < 0 ? r : 0;
}

void
zu_ctrl_close (struct zu_ctrl *c)
{
  if (c->fd == -1)
    return;
  io_uring_queue_exit (&c->ring);
  close (c->fd);
  c->fd = -1;
}

int
zu_ctrl_cmd (struct zu_ctrl *c, uint32_t op, uint32_t dev_id, void *buf,
             uint16_t len, uint64_t data)
{
  struct io_uring_sqe *sqe = io_uring_get_sqe (&c->ring);
  struct io_uring_cqe *cqe;
  struct zu_ctrl_cmd cmd = {
    .dev_id = dev_id, .queue_id = UINT16_MAX, .len = len,
    .addr = (uint64_t) (uintptr_t) buf, .data = { data },
  };
  int r;

  if (sqe == NULL)
    return -EBUSY;
  /* The whole 128-byte entry: the kernel reads the command area. */
  memset (sqe, 0, 2 * sizeof *sqe);
  sqe->opcode = IORING_OP_URING_CMD;
  sqe->fd = c->fd;
  sqe->cmd_op = op;
  memcpy (sqe->cmd, &cmd, sizeof cmd);
  r = io_uring_submit (&c->ring);
  if (r < 0)
    return r;
  do
    r = io_uring_wait_cqe (&c->ring, &cqe);
  while (r == -EINTR);
  if (r < 0)
    return r;
  r = cqe->res;
  io_uring_cqe_seen (&c->ring, cqe);
  return r;
}
