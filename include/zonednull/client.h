/* SPDX-License-Identifier: BSD-3-Clause */
/* libzonednull-client: zone control of a zonednull device over NBD.
 *
 * A client holds two libnbd connections to one server: the device's data
 * export, named by the URI, and its control export "<export>/control"
 * (see zonednull/control.h and zonednull-control(5)).  All NBD work is
 * done by libnbd; this library only speaks the control channel's format.
 *
 * Units: sectors are 512 bytes whatever the device's block size; data
 * offsets and counts are in bytes.
 *
 * Errors: calls that can fail return 0 (or a count) on success and a
 * negative errno on failure, and zn_client_error() then describes the
 * failure.  A zone operation refused by the device returns the exact errno
 * null_blk gives (-EIO, -EINVAL, -ETOOMANYREFS, -EOVERFLOW, ...); a
 * failure of the NBD request itself returns libnbd's errno (for example
 * -EPERM when the server is read-only).
 *
 * Threads: a client is not thread-safe.  Use it from one thread at a time,
 * or open one client per thread (each is two connections; the device is
 * shared).  The control channel keeps one result per connection, so two
 * threads issuing commands on one client would read each other's results.
 *
 * Link with `pkg-config --libs zonednull-client`.
 */
#ifndef ZONEDNULL_CLIENT_H
#define ZONEDNULL_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <zonednull/control.h>
#include <zonednull/zone.h>

#ifdef __cplusplus
extern "C" {
#endif

struct zn_client;
struct nbd_handle;

/* NBD command types, for zn_client_data_errno(). */
enum zn_nbd_cmd {
  ZN_NBD_CMD_READ = 0,
  ZN_NBD_CMD_WRITE = 1,
  ZN_NBD_CMD_TRIM = 4,
  ZN_NBD_CMD_WRITE_ZEROES = 6,
};

/* Connects to the device named by a libnbd URI:
 *
 *   nbd://HOST[:PORT]/[EXPORT]             TCP (port 10809 by default)
 *   nbd+unix:///[EXPORT]?socket=PATH       Unix domain socket
 *   nbds://..., nbds+unix://...            TLS, with libnbd's query
 *                                          parameters (tls-certificates=DIR,
 *                                          tls-psk-file=FILE, ...)
 *
 * The empty export is the server's default device (nullb0).  Unlike plain
 * libnbd, a TCP URI must name its host: "nbd://" is refused rather than
 * reaching whatever listens on localhost.  Local files named in the query
 * (TLS keys) are allowed, as nbdinfo allows them: do not pass URIs from
 * untrusted sources.
 *
 * Fails, returning NULL with a message in err (if not NULL), when the URI
 * is invalid, the server is unreachable, the server has no such export, or
 * its control export is missing or not zonednull's (wrong magic or
 * version), or breaks a rule of zonednull-control(5).  Every header and
 * zone descriptor the client reads is checked against those rules (a
 * zone size that is a power of 2, zones that cover the capacity, write
 * pointers within their zones, known types and conditions, a geometry
 * that never changes...): a bad one fails the call with -EPROTO and a
 * message naming the field.
 */
struct zn_client *zn_client_connect (const char *uri, char *err, size_t errlen);

/* Every call that waits for the server waits at most a timeout: then it
 * fails with -ETIMEDOUT, and so does every later call on the client,
 * which only zn_client_close ends (requests still in flight are
 * abandoned, never waited for again).  zn_client_connect's is
 * ZN_CLIENT_TIMEOUT_MS; zn_client_connect_timeout takes it in
 * milliseconds, 0 for none.  It bounds each call as a whole, so a server
 * that trickles its answer a byte at a time times out too.
 */
#define ZN_CLIENT_TIMEOUT_MS 30000
struct zn_client *zn_client_connect_timeout (const char *uri,
                                             unsigned timeout_ms,
                                             char *err, size_t errlen);

/* Disconnects and frees the client.  NULL is allowed. */
void zn_client_close (struct zn_client *c);

/* The message of the client's last failure ("" if none). */
const char *zn_client_error (const struct zn_client *c);

/* Reads the header page afresh: geometry, limits, flags, the zone
 * counters and the result of this client's last command.
 */
int zn_client_info (struct zn_client *c, struct zn_control_info *info);

/* Reads the header's queue section afresh: the device's index, the
 * queueing settings (irqmode, completion_nsec, hw_queue_depth,
 * submit_queues, shared tags, mbps, pipelined writes) and the counters per
 * device and per hardware queue: tags in use, peak in use, requests that
 * waited for a tag, requests completed.  Returns -ENOTSUP when the server
 * predates the queue section.
 */
int zn_client_queue_info (struct zn_client *c,
                          struct zn_control_queue_info *q);

/* Reports up to max zones starting with the zone holding sector, live.
 * Returns the number of zones written (0 when sector is past the end) or a
 * negative errno.
 */
int zn_client_report (struct zn_client *c, uint64_t sector,
                      struct zn_zone *zones, unsigned max);

/* Opens, closes, finishes or resets the zones of [sector, sector +
 * nr_sectors), with the block layer's rules (sector zone-aligned,
 * nr_sectors a multiple of the zone size unless the range ends at the end
 * of the device).  A reset of the whole device is a reset-all.  Returns 0
 * or the negative errno of the operation.
 */
int zn_client_zone_mgmt (struct zn_client *c, enum zn_zone_op op,
                         uint64_t sector, uint64_t nr_sectors);

/* Toggles the zone holding sector to READONLY or OFFLINE (back to EMPTY
 * if it already is), as null_blk's configfs zone_readonly and
 * zone_offline.  Returns 0 or a negative errno (-EINVAL for a
 * conventional zone or a sector past the end).
 */
int zn_client_set_readonly (struct zn_client *c, uint64_t sector);
int zn_client_set_offline (struct zn_client *c, uint64_t sector);

/* Marks [sector, sector + nr_sectors) bad, or good again, as null_blk's
 * configfs "badblocks" (+A-B / -A-B); sectors are 512 bytes.  Returns 0 or
 * a negative errno (-EINVAL for an empty or overflowing range; -EINVAL
 * from an older server without bad blocks).
 */
int zn_client_badblocks (struct zn_client *c, bool bad,
                         uint64_t sector, uint64_t nr_sectors);

/* Powers the device off and on, as configfs power=0 then power=1: data
 * neither flushed nor written with FUA is lost (cache_size), and every
 * sequential zone is EMPTY again.  Returns 0 or a negative errno (-EINVAL
 * from an older server).
 */
int zn_client_power_cycle (struct zn_client *c);
/* The same, keeping of the writes neither flushed nor written with FUA
 * what keep says (ZN_POWER_KEEP_NONE, _ALL, or _RANDOM or _TORN with a
 * seed, control.h): a prefix of each sequential zone's and each
 * conventional write whole or not, and with _TORN writes torn at logical
 * blocks besides.  -EINVAL for another keep or a seed without _RANDOM or
 * _TORN, -EOPNOTSUPP from a server that predates policies (or _TORN).
 */
int zn_client_power_cycle_keep (struct zn_client *c, unsigned keep,
                                uint64_t seed);

/* Which device the server serves (zonednull-control(5), GENERATION): a
 * random value other than 0, drawn when the device was made and kept by
 * its backing_dir.  A client that reconnects compares it with the one it
 * had; another value means another device (a memory device restarted, a
 * different directory), whose data is not the data it wrote.  Returns 0,
 * -EOPNOTSUPP from a server that predates generations, -EPROTO for an
 * answer that breaks the rule.
 */
int zn_client_generation (struct zn_client *c, uint64_t *generation);

/* The device's write log (zonednull-log(5)).  zn_client_mark adds a mark
 * named name: 1 to 64 bytes of printable ASCII other than space.
 * zn_client_log_start starts a log in name, a new file of the server's
 * log_dir (1 to 255 bytes of A-Z a-z 0-9 . _ -, not starting with a
 * dot); zn_client_log_stop stops it.  Each returns 0 or a negative
 * errno, with zn_client_error saying what to do: -EINVAL for a bad name
 * (or from an older server), -ENOENT when no log is on (mark, stop),
 * -EPERM when the server has no log_dir, -EBUSY when a log is on
 * already, -EEXIST when the file exists (start), -EIO when the log had
 * stopped on a write error (stop).
 */
int zn_client_mark (struct zn_client *c, const char *name);
int zn_client_log_start (struct zn_client *c, const char *name);
int zn_client_log_stop (struct zn_client *c);

/* Fault rules (doc/faults.md), on servers whose header has
 * ZN_CONTROL_F_FAULTS (-EOPNOTSUPP from others).  zn_client_fault_add
 * adds rule (its words, e.g. "op=write zone=3 error=EIO count=1"), after
 * checking it against the device: -EINVAL naming the word that broke
 * which rule, -ENOSPC when the device has ZN_CONTROL_FAULT_RULES rules,
 * -EOPNOTSUPP for a timeout the server cannot carry out; *id (if not
 * NULL) is its number.  zn_client_fault_clear removes rule id, or all
 * with 0 (-ENOENT: no such rule).  zn_client_fault_list copies up to max
 * rules, in the order they are tried, with their counts, and returns how
 * many there are (or a negative errno).
 */
struct zn_client_fault {
  uint32_t id;
  uint64_t matched;            /* requests the rule took */
  uint64_t hits;               /* ... on which it fired */
  char rule[ZN_CONTROL_FAULT_SIZE - ZN_CONTROL_FAULT_TEXT];
};
int zn_client_fault_add (struct zn_client *c, const char *rule, uint32_t *id);
int zn_client_fault_clear (struct zn_client *c, uint32_t id);
int zn_client_fault_list (struct zn_client *c, struct zn_client_fault *rules,
                          size_t max);

/* Zone append (REQ_OP_ZONE_APPEND) over the control channel: writes
 * nr_sectors of buf (512 * nr_sectors bytes) at the write pointer of the
 * sequential zone that starts at sector, and sets *written (if not NULL)
 * to the sector the data landed at.  Data and result travel in one
 * control request, and the device places the data under its zone lock:
 * appenders on other connections or hosts never overlap, and each gets
 * its own sector back.  Returns 0 or the device's exact errno: -EIO for a
 * conventional zone, a sector that is not a zone start, more than the
 * device's max_append_sectors (zn_client_info; refused before sending), a
 * FULL, READONLY or OFFLINE zone, or data past the zone capacity;
 * -ETOOMANYREFS or -EOVERFLOW when the open or active limit is reached;
 * -EINVAL for nr_sectors 0 or not a multiple of the block size.
 * -EOPNOTSUPP when the server predates zone append.  The _fua variant
 * writes with FUA (durable at once with cache_size).
 */
int zn_client_append (struct zn_client *c, const void *buf, uint64_t sector,
                      uint64_t nr_sectors, uint64_t *written);
int zn_client_append_fua (struct zn_client *c, const void *buf,
                          uint64_t sector, uint64_t nr_sectors,
                          uint64_t *written);

/* Reads or writes the data export (offset and count in bytes, at most
 * 64 MiB per call, libnbd's limit).  Returns 0 or a negative errno: when
 * the server failed the request, the exact errno the device gave (for
 * example -ETOOMANYREFS for a write over the open limit, which NBD itself
 * carries as EINVAL), fetched from the control channel.
 */
int zn_client_pread (struct zn_client *c, void *buf, size_t count,
                     uint64_t offset);
int zn_client_pwrite (struct zn_client *c, const void *buf, size_t count,
                      uint64_t offset);
/* zn_client_pwrite with FUA: durable once it returns 0 (a server that
 * has no FUA refuses it with -EINVAL).
 */
int zn_client_pwrite_fua (struct zn_client *c, const void *buf,
                          size_t count, uint64_t offset);

/* For requests sent on zn_client_data_handle() directly (for example with
 * libnbd's aio calls): asks which errno the device gave the most recent
 * failed request of type nbd_cmd (enum zn_nbd_cmd) at this byte offset and
 * count.  Returns 0 and sets *err to that positive errno, or to 0 when no
 * recent failure matches (keep libnbd's errno then); returns a negative
 * errno if the query itself failed.  The client's data connection has an
 * error log of its own, so the answer is for this client's requests
 * alone; against a server without error logs it comes from the
 * device-wide log of the last ZN_CONTROL_ERROR_LOG failures of all
 * clients.
 */
int zn_client_data_errno (struct zn_client *c, uint32_t nbd_cmd,
                          uint64_t offset, uint64_t count, int *err);

/* The libnbd handle of the data export, owned by the client. */
struct nbd_handle *zn_client_data_handle (struct zn_client *c);

/* Exact errnos per request, whatever other clients do.  A data
 * connection opened here has an error log of its own (its id is chosen
 * at random and carried in the export name the server sees,
 * "<device>/session/<16 hex digits>"): the server records the failures of
 * that connection in that log alone, and zn_client_errlog_errno asks for
 * the errno of the most recent failed request in the log with that NBD
 * command type, byte offset and count.  The answer is exact as long as
 * the caller never has two requests of the same type, offset and count
 * in flight on the connection at once.  zn_client_open_data connects to
 * the client's URI (same server, export and TLS settings) and returns a
 * connected libnbd handle that the caller owns (nbd_shutdown, nbd_close),
 * with its error log's id in *errlog (if not NULL), or NULL with the
 * reason in zn_client_error().  The client's own data connection
 * (zn_client_data_handle) has one too, the one zn_client_data_errno asks.
 *
 * A server that predates error logs refuses the name: the handle is then
 * connected to the plain export and *errlog is 0, and
 * zn_client_errlog_errno with errlog 0 asks the device-wide log
 * (DATA_ERRNO), exact only while no other client fails the same request.
 * The server keeps an error log's last ZN_CONTROL_ERRLOG_SIZE failures;
 * the log outlives its last connection for a while (the
 * ZN_CONTROL_ERRLOGS most recently closed error logs of the device are
 * kept).  zn_client_errlog_errno returns 0 with *err set to the positive
 * errno, or 0 when no failure matches (keep libnbd's errno then); a
 * negative errno if the query itself failed.
 */
struct nbd_handle *zn_client_open_data (struct zn_client *c,
                                        uint64_t *errlog);
/* Disconnects and closes a handle of zn_client_open_data politely,
 * waiting for the server at most the client's timeout (not at all once
 * the client has timed out).  A caller that gave up on the handle itself
 * calls nbd_close instead.
 */
void zn_client_close_data (struct zn_client *c, struct nbd_handle *h);

/* Gives the client up as a timeout does, for a caller that timed out
 * requests of its own on zn_client_data_handle or on the handles of
 * zn_client_open_data: later calls fail with -ETIMEDOUT, and
 * zn_client_close and zn_client_close_data then close without waiting
 * for the server, so no libnbd callback of an abandoned request runs.
 */
void zn_client_abandon (struct zn_client *c);
int zn_client_errlog_errno (struct zn_client *c, uint64_t errlog,
                            uint32_t nbd_cmd, uint64_t offset,
                            uint64_t count, int *err);
/* zn_client_errlog_errno's name in 0.1.0, when error logs were called
 * sessions.
 */
#ifdef __GNUC__
__attribute__ ((__deprecated__ ("use zn_client_errlog_errno")))
#endif
int zn_client_session_errno (struct zn_client *c, uint64_t errlog,
                             uint32_t nbd_cmd, uint64_t offset,
                             uint64_t count, int *err);

/* "EIO", "ETOOMANYREFS", ... for a positive errno; "EUNKNOWN" for one
 * this library does not name.
 */
const char *zn_errno_name (int err);

#ifdef __cplusplus
}
#endif

#endif /* ZONEDNULL_CLIENT_H */
