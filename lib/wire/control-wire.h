/* SPDX-License-Identifier: BSD-3-Clause */
/* The control channel's encoding (zonednull-control(5)), used by both
 * ends: the servers (lib/frontend/control.c) and libzonednull-client.  Not
 * installed: a client program uses the library's calls.
 */
#ifndef ZONEDNULL_LIB_CONTROL_WIRE_H
#define ZONEDNULL_LIB_CONTROL_WIRE_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "zonednull/control.h"
#include "zonednull/zone.h"

void zn_control_encode_header (void *page, const struct zn_control_info *info);
/* Returns 0, or -EPROTO when the magic, version or sizes do not match. */
int zn_control_decode_header (const void *page, struct zn_control_info *info);
/* On an encoded header page: adds the queue section and its flag. */
void zn_control_encode_queues (void *page,
                               const struct zn_control_queue_info *q);
/* Returns 0, or -ENOENT when the server sent no queue section. */
int zn_control_decode_queues (const void *page,
                              struct zn_control_queue_info *q);
void zn_control_encode_zone (void *desc, const struct zn_zone *zone);
void zn_control_decode_zone (const void *desc, struct zn_zone *zone);
void zn_control_encode_command (void *buf, enum zn_command op,
                                uint64_t sector, uint64_t nr_sectors,
                                uint64_t arg);
/* Returns 0, or -EINVAL for a bad magic or an unknown op. */
int zn_control_decode_command (const void *buf, enum zn_command *op,
                               uint64_t *sector, uint64_t *nr_sectors,
                               uint64_t *arg);

/* "<device>/session/<16 hex digits>", the data export whose connections
 * log their failures in error log errlog; device "" is ZN_DEFAULT_DEVICE.
 * Returns the length snprintf would, or -EINVAL for error log 0.
 */
int zn_control_errlog_name (char *buf, size_t len, const char *device,
                            uint64_t errlog);
/* Whether the len bytes at name are such an export of device: 1 with the
 * error log's id in *errlog; 0 when the name does not start with
 * "<device>/session/"; -EINVAL when it does but the id is not 16 hex
 * digits or is 0 (the caller refuses the name).
 */
int zn_control_parse_errlog_name (const char *name, size_t len,
                                  const char *device, uint64_t *errlog);

/* ERRLOG_ERRNO's write: the command, then the payload (the buffer is
 * ZN_COMMAND_SIZE + ZN_ERRLOG_ERRNO_SIZE bytes).
 */
void zn_control_encode_errlog_errno (void *buf, uint64_t errlog,
                                     uint32_t nbd_cmd, uint64_t offset,
                                     uint64_t count);

/* The names MARK and LOG_START carry, which both ends check: a mark is 1
 * to ZN_WLOG_MARK_MAX bytes of printable ASCII but space; a log is a
 * plain file name of log_dir, [A-Za-z0-9._-], 1 to 255 bytes, not
 * starting with a dot.
 */
bool zn_control_mark_name_ok (const char *name, size_t len);
bool zn_control_log_name_ok (const char *name, size_t len);

/* POWER_CYCLE's policy, which both ends check: keep is ZN_POWER_KEEP_NONE,
 * _ALL, _RANDOM or _TORN, and only _RANDOM and _TORN take a seed.  0, or -EINVAL with a
 * message in why.
 */
int zn_control_keep_check (uint64_t keep, uint64_t seed, char *why,
                           size_t whylen);

/* Where a device's control export has its fault table: after the zone
 * descriptors and the largest APPEND's write, rounded up to 4096 bytes
 * (the whole export, without a fault table).
 */
uint64_t zn_control_faults_offset (uint32_t nr_zones,
                                   uint32_t max_append_sectors);

/* The fault table's records (zonednull/control.h), one
 * ZN_CONTROL_FAULT_SIZE bytes per rule: encoded from a rule, and decoded
 * to its id, counts and text; false for an empty slot (id 0) or a text
 * that is not NUL-terminated printable ASCII that fits in textlen.
 */
struct zn_fault_rule;
void zn_fault_record_encode (const struct zn_fault_rule *rule,
                             unsigned char *rec);
bool zn_fault_record_decode (const unsigned char *rec, uint32_t *id,
                             uint64_t *matched, uint64_t *hits, char *text,
                             size_t textlen);

#endif /* ZONEDNULL_LIB_CONTROL_WIRE_H */
