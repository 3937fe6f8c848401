/* SPDX-License-Identifier: BSD-3-Clause */
/* libzonednull-client: fault rules (doc/faults.md) over the control
 * channel: FAULT_ADD, FAULT_CLEAR and the fault table.  A rule is checked
 * here first, against the device's geometry, so that a bad one is
 * refused with the word it broke; the server checks it again.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "wire/control-wire.h"
#include "wire/fault-rule.h"

static int
need_faults (struct zn_client *c)
{
  if (c->geo.flags & ZN_CONTROL_F_FAULTS)
    return 0;
  set_error (c, "the server does not take fault rules (its control header "
             "lacks ZN_CONTROL_F_FAULTS: an older zonednull)");
  return -EOPNOTSUPP;
}

int
zn_client_fault_add (struct zn_client *c, const char *rule, uint32_t *id)
{
  unsigned char msg[ZN_COMMAND_SIZE + ZN_FAULT_SPEC_MAX];
  struct zn_fault_rule parsed;
  struct zn_control_info info;
  size_t len = strlen (rule);
  char why[512];
  int r;

  if ((r = need_faults (c)) < 0)
    return r;
  if (zn_fault_rule_parse (rule, c->geo.capacity, c->geo.zone_sectors,
                           &parsed, why, sizeof why) < 0) {
    set_error (c, "%s", why);
    return -EINVAL;
  }
  zn_control_encode_command (msg, ZN_CMD_FAULT_ADD, 0, 0, 0);
  memcpy (msg + ZN_COMMAND_SIZE, rule, len);
  r = send_command (c, ZN_CMD_FAULT_ADD, msg, ZN_COMMAND_SIZE + len, &info);
  if (r < 0)
    return r;
  switch (info.result_errno) {
  case 0:
    if (info.result_sector == 0 || info.result_sector > UINT32_MAX) {
      set_error (c, "the server answered FAULT_ADD with rule id %llu; "
                 "zonednull-control(5) says 1 to 4294967295",
                 (unsigned long long) info.result_sector);
      return -EPROTO;
    }
    if (id)
      *id = (uint32_t) info.result_sector;
    return 0;
  case ENOSPC:
    set_error (c, "the device has %d rules already; clear some first",
               ZN_CONTROL_FAULT_RULES);
    return -ENOSPC;
  case EOPNOTSUPP:
    set_error (c, "the server cannot hold a request back (a timeout or a "
               "delay): zonednull-server cannot yet, and the plugin cannot "
               "while it serves a connection's requests one at a time "
               "(start it with a fault parameter, irqmode=2 or "
               "pipeline_zoned_writes=1)");
    return -EOPNOTSUPP;
  default:
    set_error (c, "FAULT_ADD: %s", zn_errno_name ((int) info.result_errno));
    return -(int) info.result_errno;
  }
}

int
zn_client_fault_clear (struct zn_client *c, uint32_t id)
{
  struct zn_control_info info;
  int r;

  if ((r = need_faults (c)) < 0)
    return r;
  r = client_command (c, ZN_CMD_FAULT_CLEAR, id, 0, 0, &info);
  if (r < 0)
    return r;
  if (info.result_errno == ENOENT) {
    set_error (c, "the device has no rule %u", id);
    return -ENOENT;
  }
  if (info.result_errno) {
    set_error (c, "FAULT_CLEAR: %s", zn_errno_name ((int) info.result_errno));
    return -(int) info.result_errno;
  }
  return 0;
}

int
zn_client_fault_list (struct zn_client *c, struct zn_client_fault *rules,
                      size_t max)
{
  const size_t size = ZN_CONTROL_FAULT_RULES * ZN_CONTROL_FAULT_SIZE;
  unsigned char *table;
  uint64_t off;
  int r, n = 0;

  if ((r = need_faults (c)) < 0)
    return r;
  if ((table = malloc (size)) == NULL) {
    set_error (c, "out of memory for the fault table");
    return -ENOMEM;
  }
  off = zn_control_faults_offset (c->geo.nr_zones, c->geo.max_append_sectors);
  r = client_ctl_pread (c, table, size, off, "reading the fault table");
  if (r < 0) {
    free (table);
    return r;
  }
  for (int i = 0; i < ZN_CONTROL_FAULT_RULES; i++) {
    struct zn_client_fault f;
    const unsigned char *rec = table + (size_t) i * ZN_CONTROL_FAULT_SIZE;

    if (!zn_fault_record_decode (rec, &f.id, &f.matched, &f.hits, f.rule,
                                 sizeof f.rule)) {
      /* The rules come first; then only empty records. */
      for (int j = i; j < ZN_CONTROL_FAULT_RULES; j++)
        for (int k = 0; k < ZN_CONTROL_FAULT_SIZE; k++)
          if (table[(size_t) j * ZN_CONTROL_FAULT_SIZE + k]) {
            set_error (c, "the server's fault table has a bad record %d "
                       "(zonednull-control(5): an id, two counts, a "
                       "NUL-terminated printable rule, empty records last)",
                       j);
            free (table);
            return -EPROTO;
          }
      break;
    }
    if ((size_t) n < max)
      rules[n] = f;
    n++;
  }
  free (table);
  return n;
}
