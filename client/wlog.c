/* SPDX-License-Identifier: BSD-3-Clause */
/* libzonednull-client: the commands of power-fail testing, the write log
 * (MARK, LOG_START, LOG_STOP) and the power cycle that keeps some
 * unflushed writes, with the errnos the device answers turned into what
 * to do about them.
 */
#include <errno.h>
#include <string.h>

#include "wire/control-wire.h"
#include "internal.h"
#include "wire/wlog-format.h"

int
zn_client_power_cycle_keep (struct zn_client *c, unsigned keep,
                            uint64_t seed)
{
  char rule[160];

  if (zn_control_keep_check (keep, seed, rule, sizeof rule) < 0) {
    set_error (c, "keep %u with seed %llu: %s", keep,
               (unsigned long long) seed, rule);
    return -EINVAL;
  }
  /* An older server would ignore the policy and keep none. */
  if (keep != ZN_POWER_KEEP_NONE
      && !(c->geo.flags & ZN_CONTROL_F_POWER_KEEP)) {
    set_error (c, "the server predates power cycles that keep unflushed "
               "writes (its control header lacks ZN_CONTROL_F_POWER_KEEP)");
    return -EOPNOTSUPP;
  }
  /* One that keeps some would refuse torn:SEED with a bare EINVAL. */
  if (keep == ZN_POWER_KEEP_TORN
      && !(c->geo.flags & ZN_CONTROL_F_POWER_TORN)) {
    set_error (c, "the server predates the torn:SEED policy of power "
               "cycles (its control header lacks ZN_CONTROL_F_POWER_TORN)");
    return -EOPNOTSUPP;
  }
  return client_device_command (c, ZN_CMD_POWER_CYCLE, seed, keep);
}

/* ---- the write log ------------------------------------------------------ */

/* MARK or LOG_START: the command, then the name. */
static int
log_command (struct zn_client *c, enum zn_command op, const char *name,
             struct zn_control_info *info)
{
  size_t len = strlen (name);
  unsigned char msg[ZN_COMMAND_SIZE + 256];

  zn_control_encode_command (msg, op, 0, 0, 0);
  memcpy (msg + ZN_COMMAND_SIZE, name, len);
  return send_command (c, op, msg, ZN_COMMAND_SIZE + len, info);
}

/* The device's answer, in words that say what to do. */
static int
log_result (struct zn_client *c, const char *what, uint32_t err)
{
  switch (err) {
  case 0:
    return 0;
  case ENOENT:
    set_error (c, "%s: no write log is on (start one with log_writes= or "
               "zonednull log start)", what);
    break;
  case EPERM:
    set_error (c, "%s: the server has no log_dir=, the directory where "
               "logs may be started", what);
    break;
  case EBUSY:
    set_error (c, "%s: a write log is on already; stop it first", what);
    break;
  case EEXIST:
    set_error (c, "%s: log_dir holds a file of that name already (a log is "
               "never written over)", what);
    break;
  case EAGAIN:
    set_error (c, "%s: %s", what, strcmp (what, "log stop") == 0
               ? "the log's snapshot of the device is still being copied"
               : "the device's last snapshot took long; the next may start "
               "9 times as long after it (the server's log says when)");
    break;
  case EIO:
    set_error (c, "%s: the log had stopped on a write error (the server's "
               "log names the file); it is intact up to there", what);
    break;
  default:
    set_error (c, "%s: %s", what, strerror ((int) err));
  }
  return -(int) err;
}

int
zn_client_mark (struct zn_client *c, const char *name)
{
  struct zn_control_info info;
  int r;

  if (!zn_control_mark_name_ok (name, strlen (name))) {
    set_error (c, "mark names are 1 to %d bytes of printable ASCII other "
               "than space", ZN_WLOG_MARK_MAX);
    return -EINVAL;
  }
  r = log_command (c, ZN_CMD_MARK, name, &info);
  return r < 0 ? r : log_result (c, "mark", info.result_errno);
}

int
zn_client_log_start (struct zn_client *c, const char *name)
{
  struct zn_control_info info;
  int r;

  if (!zn_control_log_name_ok (name, strlen (name))) {
    set_error (c, "log names are 1 to 255 bytes of A-Z a-z 0-9 . _ -, not "
               "starting with a dot or a dash: a new file of the server's "
               "log_dir");
    return -EINVAL;
  }
  r = log_command (c, ZN_CMD_LOG_START, name, &info);
  return r < 0 ? r : log_result (c, "log start", info.result_errno);
}

int
zn_client_log_stop (struct zn_client *c)
{
  struct zn_control_info info;
  unsigned waited = 0;
  int r;

  /* A log is whole once its snapshot is copied: until then the server
   * says EAGAIN.
   */
  do
    r = client_command (c, ZN_CMD_LOG_STOP, 0, 0, 0, &info);
  while (r == 0 && client_ask_again (c, info.result_errno, &waited));
  return r < 0 ? r : log_result (c, "log stop", info.result_errno);
}
