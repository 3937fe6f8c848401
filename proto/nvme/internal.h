/* SPDX-License-Identifier: BSD-3-Clause */
/* What the NVMe/TCP session's parts share: session.c frames the PDUs
 * and queues the output, fabrics.c holds the controllers (Connect,
 * properties, the discovery log), admin.c and io.c carry out the admin
 * and I/O commands, through zns.h for the namespaces.
 */
#ifndef ZONEDNULL_PROTO_NVME_INTERNAL_H
#define ZONEDNULL_PROTO_NVME_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nvme/types.h>

#include "auth.h"
#include "command.h"
#include "park.h"
#include "pdu.h"
#include "session.h"

/* The discovery subsystem's NQN (NVMe base spec). */
#define DISCOVERY_NQN "nqn.2014-08.org.nvmexpress.discovery"

/* In-capsule data a queue takes: IOCCSZ for the I/O queues; the admin
 * queue's is what the Linux host assumes (8 KiB capsules) for Connect's
 * 1024 bytes.
 */
#define IO_INLINE_DATA 8192
#define ADMIN_INLINE_DATA (8192 - SQE_LEN)
/* Outstanding Asynchronous Event Requests: AERL + 1. */
#define AER_LIMIT 4
/* A host's keep-alive may come this late after KATO (its commands wait
 * behind others on the admin queue).
 */
#define KATO_GRACE_MS 1000
/* The longest KATO kept: the idle timer of the connection layer takes
 * 32-bit milliseconds, KATO and its grace.  A longer one is cut to it.
 */
#define KATO_MAX_MS (UINT32_MAX - KATO_GRACE_MS)
/* Write data a queue buffers for its R2Ts at once, beyond the first
 * (all queues together: the output budget, nvme_served.room).
 */
#define R2T_BUFFER_LIMIT (8u << 20)
/* Logs and identify data larger than this are not asked for. */
#define MAX_ADMIN_DATA (1u << 20)
/* Entries of a controller's Error Information log (ELPE + 1): the most
 * recent errors, older ones overwritten.
 */
#define ERROR_LOG_SLOTS 64

/* A command between its capsule and its execution: in the ready FIFO,
 * or waiting for its R2T, or receiving its H2CData.
 */
enum req_state { RQ_WAIT_R2T, RQ_H2C, RQ_READY };

struct nvme_req {
  unsigned char sqe[SQE_LEN];
  struct nvme_cmd cmd;          /* its dwords decoded once it runs */
  bool decoded;
  enum req_state state;
  unsigned char *data;          /* the host's data */
  uint32_t len, got;
  uint16_t ttag;
  uint16_t status;              /* fail with this instead (digest, SGL) */
  uint16_t loc;                 /* and the field at fault */
  struct nvme_req *next;
};

struct nvme_ctrl;

struct nvme_session {
  const struct nvme_served *sv;
  void *owner;
  bool ic_done;
  bool tls_wanted;              /* the host's first byte began a record */
  bool tls_on;                  /* the queue runs over TLS */
  /* The NQNs of the PSK identity: Connect must name the same. */
  char tls_hostnqn[NVME_NQN_MAX + 1];
  char tls_subnqn[NVME_NQN_MAX + 1];
  bool hdgst, ddgst;            /* negotiated in ICReq */
  uint32_t hpda;                /* host PDU data alignment, bytes */
  /* The queue, once connected.  An I/O queue keeps ctrl until it goes,
   * live until its controller drops it (fabrics.c), perhaps from
   * another loop: nvme_queue_ctrl is the controller it may use.
   */
  struct nvme_ctrl *ctrl;
  atomic_bool live;
  uint16_t qid;
  uint16_t sqsize;              /* 0-based */
  uint16_t sqhd;
  bool sqflow_off;
  /* Output: out[out_start, out_len) goes as it is.  A reply held for
   * complete_one (irqmode=2) waits in its own chunk, so that R2Ts and
   * the replies of commands that took no tag are not held behind it.
   */
  unsigned char *out;
  size_t out_start, out_len, out_cap;
  size_t out_kept;              /* park_output_keep's share */
  struct held_replies held;
  struct held_replies delayed;  /* the fault settings': out of the output
                                   until their release */
  /* Commands received but not carried out. */
  struct nvme_req *ready_head, *ready_tail;
  struct nvme_req *xfers;       /* waiting for R2T or receiving data */
  unsigned nr_reqs;
  uint64_t r2t_bytes;           /* buffers of xfers with an R2T sent */
  uint16_t next_ttag;
  uint64_t next_id;             /* of the next data request */
  struct parked_requests parked;   /* each a struct nvme_cmd */
  unsigned offloaded;           /* commands on the program's workers */
  size_t offloaded_bytes;       /* the data they hold (io.c) */
  bool dead;                    /* TermReq sent or received */
  bool cut;                     /* nothing after out_cut is sent: the
                                   TermReq is the connection's last PDU */
  size_t out_cut;
  /* In-band authentication: the exchange under way (auth.c), and its
   * outcome, which a queue of a controller with a secret needs.
   */
  struct auth_state *auth;
  bool authenticated;
  unsigned auth_exchanges;      /* Negotiates taken on this queue */
  /* An I/O queue of a controller with a secret, connected but not yet
   * authenticated: on its controller's pending list, not in its ioq[],
   * so that a host without the secret cannot hold the queue's QID.
   */
  struct nvme_session *pending_next;
  size_t pdu_avail;             /* bytes of the PDU being parsed */
  /* --stats: the arrival of the command being carried out (0: none, as
   * for an event's reply to an Asynchronous Event Request), and whether
   * its reply is to be held, and so timed once complete_one releases it.
   */
  uint64_t arrival;
  bool holding;
};

/* A controller: the admin queue's session and its I/O queues'.  Its
 * admin queue's loop alone changes it, but for what ctrl_lock guards
 * (fabrics.c): the registry, cntlid, csts, nr_queues, ioq, pending, the
 * errors and refs.
 */
struct nvme_ctrl {
  const struct nvme_served *sv;
  uint16_t cntlid;
  bool discovery;
  char hostnqn[NVME_NQN_MAX + 1];
  /* Its host's secret (--nvme-host): each of its queues authenticates
   * before anything but the fabrics commands; NULL: none need to.
   */
  const struct nvme_host_secret *secret;
  uint32_t cc, csts;
  uint32_t kato;                /* ms */
  uint32_t aec;                 /* async event configuration */
  unsigned nr_queues;           /* I/O queues granted */
  unsigned refs;                /* its queues' sessions */
  struct nvme_session **ioq;    /* by qid, sv->max_queues + 1 */
  struct nvme_session *pending; /* I/O queues not authenticated yet */
  uint16_t aer_cid[AER_LIMIT];
  unsigned nr_aer;
  /* The Error Information log: the entry of error n (from 1) is
   * errors[n % ERROR_LOG_SLOTS].
   */
  struct nvme_error_log_page errors[ERROR_LOG_SLOTS];
  uint64_t nr_errors;
  struct nvme_ctrl *next;
};

/* ---- session.c: output ---- */

/* Room for n bytes at the end of the output, filled by the caller. */
unsigned char *nvme_out_reserve (struct nvme_session *s, size_t n);
/* Takes back the last n bytes reserved. */
void nvme_out_unreserve (struct nvme_session *s, size_t n);
/* A CapsuleResp for cmd.  A failing one is entered in the controller's
 * Error Information log with loc, the field at fault (LOC_NONE: none
 * in particular).
 */
void nvme_reply_at (struct nvme_session *s, const struct nvme_cmd *cmd,
               uint16_t status, uint64_t result, uint16_t loc);
void nvme_reply (struct nvme_session *s, const struct nvme_cmd *cmd,
            uint16_t status, uint64_t result);
/* cmd failed with status because of the field at loc. */
void nvme_fail (struct nvme_session *s, const struct nvme_cmd *cmd,
           uint16_t status, uint16_t loc);
/* C2HData with the first len bytes of data (at most the command's SGL
 * length), then a successful CapsuleResp.
 */
void nvme_reply_data (struct nvme_session *s, const struct nvme_cmd *cmd,
                 const void *data, size_t len);
/* Reserves a C2HData of len bytes for cmd and returns where its data
 * go; nvme_c2h_end finishes it (its digest), nvme_c2h_cancel takes it back.
 */
unsigned char *nvme_c2h_begin (struct nvme_session *s, const struct nvme_cmd *cmd,
                          size_t len);
void nvme_c2h_end (struct nvme_session *s, size_t len);
void nvme_c2h_cancel (struct nvme_session *s, size_t len);
/* Bytes of output a C2HData of len bytes and its CapsuleResp take. */
size_t nvme_reply_bound (const struct nvme_session *s, size_t len);
/* Keeps the output queued from mark on (one command's reply) until
 * complete_one releases it, or with id, until its release (a delay of
 * the fault settings).
 */
void nvme_hold_reply (struct nvme_session *s, size_t mark, const uint64_t *id);
_Noreturn void nvme_out_of_memory (const struct nvme_session *s);
/* A message for -v. */
void nvme_log (const struct nvme_session *s, const char *fmt, ...)
  __attribute__ ((format (printf, 2, 3)));

/* CRC32C, as the digests use it (initial and final inversion). */
uint32_t nvme_crc32c (const void *data, size_t len);

/* ---- fabrics.c ---- */

/* The Connect command (data: its 1024 bytes). */
void nvme_fabrics_connect (struct nvme_session *s, const struct nvme_cmd *cmd,
                      const unsigned char *data, uint32_t len);
/* Property Get/Set and the other fabrics commands on the admin queue. */
void nvme_fabrics_command (struct nvme_session *s, const struct nvme_cmd *cmd);
/* The session goes: an admin queue takes its controller and I/O queues
 * with it.
 */
void nvme_fabrics_detach (struct nvme_session *s);
/* An I/O queue s has authenticated: it takes its QID, unless another
 * queue took it first (false: s must go).
 */
bool nvme_fabrics_bind (struct nvme_session *s);
/* Sets c's KATO (ms, 0: none), cut to KATO_MAX_MS, and restarts the
 * idle timer of its admin queue s.
 */
void nvme_ctrl_set_kato (struct nvme_session *s, struct nvme_ctrl *c,
                    uint32_t kato);
/* s's controller is enabled and ready (CC.EN, CSTS.RDY), and s one of
 * its queues: commands other than the fabrics ones (properties) run
 * only then.
 */
bool nvme_queue_ready (const struct nvme_session *s);
/* s's controller, NULL when none or when it dropped s. */
struct nvme_ctrl *nvme_queue_ctrl (const struct nvme_session *s);
/* What the queues of a controller share across loops (fabrics.c). */
void nvme_ctrl_lock (void);
void nvme_ctrl_unlock (void);
/* The highest controller ID: 0xfff0 and above are reserved. */
#define NVME_CNTLID_MAX 0xffef
/* A controller ID from *next on that taken (with arg) does not claim,
 * wrapping round within 1..NVME_CNTLID_MAX; *next moves past it.  0
 * when every ID is taken.
 */
uint16_t nvme_cntlid_pick (uint16_t *next,
                           bool (*taken) (const void *arg, uint16_t id),
                           const void *arg);
/* CAP.MQES. */
uint16_t nvme_mqes (const struct nvme_served *sv);
/* The discovery log page. */
size_t nvme_discovery_log (const struct nvme_session *s, unsigned char **buf);

/* ---- admin.c ---- */

/* Enters cmd's failure in c's Error Information log (sqid: the queue's);
 * _locked: under nvme_ctrl_lock already.
 */
void nvme_ctrl_log_error (struct nvme_ctrl *c, uint16_t sqid,
                     const struct nvme_cmd *cmd, uint16_t status,
                     uint16_t loc);
void nvme_ctrl_log_error_locked (struct nvme_ctrl *c, uint16_t sqid,
                            const struct nvme_cmd *cmd, uint16_t status,
                            uint16_t loc);

void nvme_admin_command (struct nvme_session *s, const struct nvme_cmd *cmd,
                    const unsigned char *data, uint32_t len);
/* The status of a command of a connected admin queue that would have
 * the host send data after an R2T: none of them takes any (Connect is
 * the session's), so each is refused before its data are asked for, as
 * nvmet refuses it when it parses it.
 */
uint16_t nvme_admin_data_status (const struct nvme_cmd *cmd);

/* ---- io.c ---- */

/* Carries out an I/O command whose data (a write's) is at *data: 1 when
 * done (its reply queued, or the command parked or on the program's
 * workers, which took *data, setting it to NULL), 0 when it must wait
 * (ADMIT_LATER).
 */
int nvme_io_command (struct nvme_session *s, const struct nvme_cmd *cmd,
                unsigned char **data, uint32_t len);
/* As nvme_admin_data_status for an I/O queue: 0 for a Write or Zone Append
 * within MDTS.
 */
uint16_t nvme_io_data_status (const struct nvme_session *s,
                         const struct nvme_cmd *cmd);
/* Applies the parked write id, whose data (*data) it may take, setting
 * it to NULL.
 */
void nvme_io_resume (struct nvme_session *s, uint64_t id,
                     const struct nvme_cmd *cmd, unsigned char **data,
                     int err);

/* MDTS, a power of two of 4 KiB, and the bytes it allows. */
uint8_t nvme_mdts (const struct nvme_served *sv);
uint64_t nvme_max_transfer (const struct nvme_served *sv);

/* The namespace nsid names, or NULL. */
const struct served_device *nvme_namespace_of (const struct nvme_served *sv,
                                          uint32_t nsid);

/* Status values: (SCT << 8) | SC, DNR where retrying cannot help. */
#define SC(sct, sc) ((uint16_t) ((sct) << 8 | (sc)))
#define ERR(sct, sc) ((uint16_t) (SC (sct, sc) | NVME_SC_DNR))

#endif
