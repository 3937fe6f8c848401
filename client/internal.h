/* SPDX-License-Identifier: BSD-3-Clause */
/* What client.c and wlog.c share: the client's state and the commands
 * of the control channel.  Not exported: the library's API is
 * include/zonednull/client.h.
 */
#ifndef ZONEDNULL_CLIENT_INTERNAL_H
#define ZONEDNULL_CLIENT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libnbd.h>

#include "zonednull/client.h"
#include "zonednull/control.h"

#define ZN_HIDDEN __attribute__ ((visibility ("hidden")))

struct zn_client {
  struct nbd_handle *data;
  struct nbd_handle *ctl;
  /* For further data connections (zn_client_open_data). */
  char *uri;
  /* The error log of the data connection; 0 when the server has none. */
  uint64_t errlog;
  /* The server refused an error log's export name: it predates them. */
  bool no_errlogs;
  /* The geometry never changes, so it is read once, at connect. */
  struct zn_control_info geo;
  /* Commands executed on the control connection, to check that each
   * header read back carries the result of the command just sent.
   */
  uint64_t seq;
  /* Every wait for the server ends after this long (0: never). */
  unsigned timeout_ms;
  /* A wait timed out.  Requests may still be in flight into buffers the
   * caller has since reused, so no handle is ever polled again.
   */
  bool lost;
  unsigned char page[ZN_CONTROL_HEADER_SIZE];
  char error[1024];
};

ZN_HIDDEN void set_error (struct zn_client *c, const char *fmt, ...)
  __attribute__ ((format (printf, 2, 3)));
/* Sends one command (buf, len bytes) and reads its result back: 0 with
 * the header in *info, or a negative errno if it did not execute.
 */
ZN_HIDDEN int send_command (struct zn_client *c, enum zn_command op,
                            const void *buf, size_t len,
                            struct zn_control_info *info);
ZN_HIDDEN int client_command (struct zn_client *c, enum zn_command op,
                       uint64_t sector, uint64_t nr_sectors, uint64_t arg,
                       struct zn_control_info *info);
/* A command whose result is an errno of the device. */
ZN_HIDDEN /* The server answered EAGAIN to a command that waits for a log's
 * snapshot to be copied: waits 20 ms and says to ask again, for at most
 * the client's timeout in all (*waited_ms counts).
 */
bool client_ask_again (struct zn_client *c, uint32_t err, unsigned *waited_ms);
int client_device_command (struct zn_client *c, enum zn_command op,
                              uint64_t sector, uint64_t nr_sectors);
/* count bytes of the control export at offset. */
ZN_HIDDEN int client_ctl_pread (struct zn_client *c, void *buf, size_t count,
                                uint64_t offset, const char *what);

#endif
