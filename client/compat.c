/* SPDX-License-Identifier: BSD-3-Clause */
/* libzonednull-client: the names of 0.1.0, which called error logs
 * sessions.  Programs built against it still link and run with
 * libzonednull-client.so.0: zn_client_session_errno is declared, deprecated,
 * in client.h; the wire helpers were declared in 0.1.0's control.h and
 * are now the library's own (lib/wire/control-wire.h).
 */
#include <stddef.h>
#include <stdint.h>

#include "zonednull/client.h"

#include "wire/control-wire.h"

int zn_control_session_name (char *buf, size_t len, const char *device,
                             uint64_t session);
int zn_control_parse_session_name (const char *name, size_t len,
                                   const char *device, uint64_t *session);
void zn_control_encode_session_errno (void *buf, uint64_t session,
                                      uint32_t nbd_cmd, uint64_t offset,
                                      uint64_t count);

int
zn_client_session_errno (struct zn_client *c, uint64_t errlog,
                         uint32_t nbd_cmd, uint64_t offset, uint64_t count,
                         int *err)
{
  return zn_client_errlog_errno (c, errlog, nbd_cmd, offset, count, err);
}

int
zn_control_session_name (char *buf, size_t len, const char *device,
                         uint64_t session)
{
  return zn_control_errlog_name (buf, len, device, session);
}

int
zn_control_parse_session_name (const char *name, size_t len,
                               const char *device, uint64_t *session)
{
  return zn_control_parse_errlog_name (name, len, device, session);
}

void
zn_control_encode_session_errno (void *buf, uint64_t session,
                                 uint32_t nbd_cmd, uint64_t offset,
                                 uint64_t count)
{
  zn_control_encode_errlog_errno (buf, session, nbd_cmd, offset, count);
}
