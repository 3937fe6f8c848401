/* SPDX-License-Identifier: BSD-3-Clause */
/* The fabrics side of the subsystem: Connect, which makes a controller
 * on the admin queue and binds I/O queues to it, the properties (CAP,
 * VS, CC, CSTS), the registry of controllers, and the discovery log.
 *
 * A controller lives as long as its admin queue's connection: when that
 * goes (the host disconnected, or its keep-alive timed out), its I/O
 * queues' connections are closed too, as nvmet tears down a controller.
 *
 * The queues of one controller may be served by different event loops
 * (zonednull-server --threads), so what they share is under ctrl_lock:
 * the registry, the bindings of the I/O queues and the Error Information
 * log.  A queue dropped by another loop learns it from its live flag and
 * is closed by its own loop (nvme_served.abort); the controller's memory
 * stays until its last queue has gone (refs), so a dropped queue never
 * reads freed memory.
 */
#include <endian.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nvme/types.h>

#include "util/escape.h"
#include "internal.h"

/* The controllers of all the sessions of the process, whichever loop
 * serves them.
 */
static pthread_mutex_t ctrl_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nvme_ctrl *controllers;
static uint16_t next_cntlid = 1;

void
nvme_ctrl_lock (void)
{
  pthread_mutex_lock (&ctrl_lock);
}

void
nvme_ctrl_unlock (void)
{
  pthread_mutex_unlock (&ctrl_lock);
}

/* Connect's data: where its fields are. */
#define DATA_CNTLID 16
#define DATA_SUBNQN 256
#define DATA_HOSTNQN 512
#define CONNECT_DATA_LEN 1024
#define CATTR_DISABLE_SQFLOW (1 << 2)
#define ADMIN_SQSIZE_MAX 4095

/* Controller properties (register offsets). */
#define PROP_CAP 0x00
#define PROP_VS 0x08
#define PROP_CC 0x14
#define PROP_CSTS 0x1c

#define NVME_VERSION 0x00010400 /* 1.4: NS descriptors with the CSI */
/* A discovery controller connected with KATO 0 keeps this one (nvmet's
 * too), so that a host that vanishes does not hold it for ever.
 */
#define DISCOVERY_KATO_MS 120000
/* Connect's result: the host must authenticate the queue (AUTHREQ.ATR). */
#define CONNECT_AUTHREQ_ATR (1u << 17)

static struct nvme_ctrl *
find_ctrl (const struct nvme_served *sv, uint16_t cntlid)
{
  for (struct nvme_ctrl *c = controllers; c; c = c->next)
    if (c->sv == sv && c->cntlid == cntlid)
      return c;
  return NULL;
}

uint16_t
nvme_cntlid_pick (uint16_t *next, bool (*taken) (const void *arg, uint16_t id),
                  const void *arg)
{
  /* One lap and no more: with every ID in use, searching on would hold
   * ctrl_lock, and the loop with it, for ever.
   */
  for (unsigned n = 0; n < NVME_CNTLID_MAX; n++) {
    uint16_t id = *next >= 1 && *next <= NVME_CNTLID_MAX ? *next : 1;

    *next = id == NVME_CNTLID_MAX ? 1 : id + 1;
    if (!taken (arg, id))
      return id;
  }
  return 0;
}

static bool
cntlid_taken (const void *sv, uint16_t id)
{
  return find_ctrl (sv, id) != NULL;
}

/* An NQN of the connect data: NUL-terminated within its 256 bytes and
 * not empty; false otherwise.
 */
static bool
nqn_of (const unsigned char *field, char *nqn)
{
  size_t n = strnlen ((const char *) field, NVME_NQN_LENGTH);

  if (n == 0 || n > NVME_NQN_MAX)
    return false;
  memcpy (nqn, field, n);
  nqn[n] = '\0';
  return true;
}

/* An NQN from the host, escaped for a log line (escape.h): the host
 * chose its every byte.
 */
#define LOGGED_NQN ZN_ESCAPED_SIZE (NVME_NQN_MAX)

static const char *
logged (char *buf, const char *nqn)
{
  return zn_escape (buf, LOGGED_NQN, nqn, strlen (nqn));
}

/* On the --nvme-allow-host list, if there is one. */
static bool
host_listed (const struct nvme_served *sv, const char *hostnqn)
{
  if (sv->nr_allowed_hosts == 0)
    return true;
  for (unsigned i = 0; i < sv->nr_allowed_hosts; i++)
    if (strcmp (sv->allowed_hosts[i], hostnqn) == 0)
      return true;
  return false;
}

static bool
host_allowed (const struct nvme_served *sv, const char *hostnqn)
{
  return host_listed (sv, hostnqn)
         && (!sv->auth_required || nvme_auth_host_secret (sv, hostnqn));
}

/* Connect's result for a queue of c: whether it must authenticate. */
static uint32_t
authreq (const struct nvme_ctrl *c)
{
  return c->secret ? CONNECT_AUTHREQ_ATR : 0;
}

/* The controller an I/O queue's Connect names, when it is the host's
 * own: the one whose Error Information log gets the Connect's failure
 * (the queue has no controller yet).  NULL for an admin queue's.
 */
static struct nvme_ctrl *
connect_target (const struct nvme_session *s, const struct nvme_cmd *cmd,
                const unsigned char *data, uint32_t len)
{
  char hostnqn[NVME_NQN_MAX + 1];
  struct nvme_ctrl *c;

  if (cmd->u.connect.qid == 0 || len != CONNECT_DATA_LEN
      || !nqn_of (data + DATA_HOSTNQN, hostnqn))
    return NULL;
  c = find_ctrl (s->sv, get_le16 (data + DATA_CNTLID));
  return c && strcmp (c->hostnqn, hostnqn) == 0 ? c : NULL;
}

/* Connect fails with sct/sc; offset names the field: the result's IPO
 * is its offset, in the data when in_data (IATTR).
 */
static void
refuse_sc (struct nvme_session *s, const struct nvme_cmd *cmd,
           const unsigned char *data, uint32_t len, uint16_t status,
           bool in_data, unsigned offset, const char *why)
{
  struct nvme_ctrl *c;

  nvme_log (s, "Connect refused: %s", why);
  nvme_ctrl_lock ();
  c = connect_target (s, cmd, data, len);
  if (c)
    nvme_ctrl_log_error_locked (c, cmd->u.connect.qid, cmd, status,
                           in_data ? LOC_NONE : (uint16_t) offset);
  nvme_ctrl_unlock ();
  /* IPO goes with the command specific statuses only. */
  nvme_reply (s, cmd, status, (status >> 8 & 7) != NVME_SCT_CMD_SPECIFIC ? 0
                         : (in_data ? 1u << 16 : 0) | offset);
}

/* Connect Invalid Parameters (or another command specific status). */
static void
connect_refuse (struct nvme_session *s, const struct nvme_cmd *cmd,
        const unsigned char *data, uint32_t len, uint16_t sc, bool in_data,
        unsigned offset, const char *why)
{
  refuse_sc (s, cmd, data, len, ERR (NVME_SCT_CMD_SPECIFIC, sc), in_data,
             offset, why);
}

static void
connect_admin (struct nvme_session *s, const struct nvme_cmd *cmd,
               bool discovery, const char *hostnqn, uint32_t kato)
{
  const struct nvme_served *sv = s->sv;
  struct nvme_ctrl *c = calloc (1, sizeof *c);
  char host[LOGGED_NQN];

  if (c == NULL || (c->ioq = calloc (sv->max_queues + 1u, sizeof *c->ioq)) == NULL)
    nvme_out_of_memory (s);
  c->sv = sv;
  c->discovery = discovery;
  strcpy (c->hostnqn, hostnqn);
  /* The discovery controller needs no authentication (nvmet's). */
  c->secret = discovery ? NULL : nvme_auth_host_secret (sv, hostnqn);
  c->nr_queues = discovery ? 0 : sv->max_queues;
  c->refs = 1;
  nvme_ctrl_lock ();
  c->cntlid = nvme_cntlid_pick (&next_cntlid, cntlid_taken, sv);
  if (c->cntlid != 0) {
    c->next = controllers;
    controllers = c;
  }
  nvme_ctrl_unlock ();
  if (c->cntlid == 0) {
    free (c->ioq);
    free (c);
    fprintf (stderr, "%s: nvme: every controller ID is in use; the admin "
             "Connect of host %s refused\n", sv->program,
             logged (host, hostnqn));
    nvme_reply (s, cmd, ERR (NVME_SCT_CMD_SPECIFIC, NVME_SC_CONNECT_CTRL_BUSY),
                0);
    return;
  }
  s->ctrl = c;
  s->qid = 0;
  nvme_ctrl_set_kato (s, c, kato == 0 && discovery ? DISCOVERY_KATO_MS : kato);
  nvme_log (s, "controller %u: %s for %s, keep-alive %u ms",
            c->cntlid, discovery ? "discovery" : sv->subnqn,
            logged (host, hostnqn), c->kato);
  nvme_reply (s, cmd, 0, c->cntlid | authreq (c));
}

/* Why an I/O queue's Connect is refused: its status and the field at
 * fault, as refuse_sc takes them.
 */
struct refusal {
  uint16_t status;
  bool in_data;
  unsigned offset;
  const char *why;
};

#define INVALID_PARAM ERR (NVME_SCT_CMD_SPECIFIC, NVME_SC_CONNECT_INVALID_PARAM)
#define SEQ_ERROR ERR (NVME_SCT_GENERIC, NVME_SC_CMD_SEQ_ERROR)

/* Binds I/O queue s to c, under ctrl_lock; NULL, or why it may not. */
static const struct refusal *
bind_io (struct nvme_session *s, struct nvme_ctrl *c, uint16_t qid,
         bool discovery, const char *hostnqn)
{
  static const struct refusal
    no_ctrl = { INVALID_PARAM, true, DATA_CNTLID,
                "no controller has this CNTLID" },
    disc = { INVALID_PARAM, true, DATA_SUBNQN,
             "a discovery controller has no I/O queues" },
    other_host = { INVALID_PARAM, true, DATA_HOSTNQN,
                   "the controller belongs to another host NQN" },
    not_ready = { SEQ_ERROR, false, LOC_NONE,
                  "the controller is not enabled" },
    qid_high = { INVALID_PARAM, false, LOC_QID,
                 "QID exceeds the number of queues granted" },
    qid_taken = { SEQ_ERROR, false, LOC_QID,
                  "the queue is connected already" };

  if (c == NULL)
    return &no_ctrl;
  if (c->discovery || discovery)
    return &disc;
  if (strcmp (c->hostnqn, hostnqn) != 0)
    return &other_host;
  if (!(c->csts & NVME_CSTS_RDY_MASK))
    return &not_ready;
  if (qid > c->nr_queues)
    return &qid_high;
  if (c->ioq[qid] != NULL)
    return &qid_taken;
  s->ctrl = c;
  s->qid = qid;
  c->refs++;
  atomic_store (&s->live, true);
  /* A queue that must authenticate takes its QID only once it has:
   * bound at Connect, anyone who knows the host NQN and CNTLID could
   * hold the host's queue until the handshake timeout.
   */
  if (c->secret) {
    s->pending_next = c->pending;
    c->pending = s;
  } else
    c->ioq[qid] = s;
  return NULL;
}

static void
connect_io (struct nvme_session *s, const struct nvme_cmd *cmd,
            const unsigned char *data, bool discovery, const char *hostnqn)
{
  const struct refusal *no;
  uint32_t result = 0;

  nvme_ctrl_lock ();
  no = bind_io (s, find_ctrl (s->sv, get_le16 (data + DATA_CNTLID)),
                cmd->u.connect.qid, discovery, hostnqn);
  if (no == NULL)
    result = authreq (s->ctrl);
  nvme_ctrl_unlock ();
  if (no)
    refuse_sc (s, cmd, data, CONNECT_DATA_LEN, no->status, no->in_data,
               no->offset, no->why);
  else
    nvme_reply (s, cmd, 0, result);
}

static void
unlink_pending (struct nvme_ctrl *c, struct nvme_session *s)
{
  struct nvme_session **pp;

  for (pp = &c->pending; *pp; pp = &(*pp)->pending_next)
    if (*pp == s) {
      *pp = s->pending_next;
      s->pending_next = NULL;
      return;
    }
}

bool
nvme_fabrics_bind (struct nvme_session *s)
{
  struct nvme_ctrl *c = s->ctrl;
  bool bound;

  if (c == NULL || s->qid == 0)
    return c != NULL;
  nvme_ctrl_lock ();
  if (c->ioq[s->qid] == s)
    bound = true;
  else {
    unlink_pending (c, s);
    /* Dropped meanwhile by a reset on the admin queue's loop. */
    bound = atomic_load (&s->live) && c->ioq[s->qid] == NULL;
    if (bound)
      c->ioq[s->qid] = s;
  }
  nvme_ctrl_unlock ();
  return bound;
}

void
nvme_fabrics_connect (struct nvme_session *s, const struct nvme_cmd *cmd,
                 const unsigned char *data, uint32_t len)
{
  const struct nvme_served *sv = s->sv;
  const struct cmd_connect *a = &cmd->u.connect;
  uint16_t qid = a->qid, sqsize = a->sqsize;
  char subnqn[NVME_NQN_MAX + 1], hostnqn[NVME_NQN_MAX + 1];
  char host[LOGGED_NQN], sub[LOGGED_NQN];
  bool discovery;

  if (s->ctrl) {
    nvme_reply (s, cmd, ERR (NVME_SCT_GENERIC, NVME_SC_CMD_SEQ_ERROR), 0);
    return;
  }
  if (a->recfmt != 0) {
    connect_refuse (s, cmd, data, len, NVME_SC_CONNECT_FORMAT, false, LOC_RECFMT,
            "RECFMT is not 0");
    return;
  }
  if (len != CONNECT_DATA_LEN) {
    nvme_reply (s, cmd, ERR (NVME_SCT_GENERIC, NVME_SC_SGL_INVALID_DATA), 0);
    return;
  }
  if (!nqn_of (data + DATA_SUBNQN, subnqn)) {
    connect_refuse (s, cmd, data, len, NVME_SC_CONNECT_INVALID_PARAM, true,
            DATA_SUBNQN, "SUBNQN is empty, too long or not terminated");
    return;
  }
  if (!nqn_of (data + DATA_HOSTNQN, hostnqn)) {
    connect_refuse (s, cmd, data, len, NVME_SC_CONNECT_INVALID_PARAM, true,
            DATA_HOSTNQN, "HOSTNQN is empty, too long or not terminated");
    return;
  }
  /* The admin queue's depth is the host's own (32 for Linux), whatever
   * hw_queue_depth is.
   */
  if (sqsize == 0 || sqsize > (qid == 0 ? ADMIN_SQSIZE_MAX : nvme_mqes (sv))) {
    connect_refuse (s, cmd, data, len, NVME_SC_CONNECT_INVALID_PARAM, false,
            LOC_SQSIZE, qid == 0 ? "SQSIZE is 0 or exceeds 4095"
                     : "SQSIZE is 0 or exceeds CAP.MQES");
    return;
  }
  discovery = strcmp (subnqn, DISCOVERY_NQN) == 0;
  if (!discovery && strcmp (subnqn, sv->subnqn) != 0) {
    fprintf (stderr, "%s: nvme: host %s asked for subsystem %s, not %s\n",
             sv->program, logged (host, hostnqn), logged (sub, subnqn),
             sv->subnqn);
    connect_refuse (s, cmd, data, len, NVME_SC_CONNECT_INVALID_PARAM, true,
            DATA_SUBNQN, "no such subsystem");
    return;
  }
  /* The PSK proved the identity's host and subsystem, so a TLS queue
   * is theirs only: a host's key does not let it pose as another.
   */
  if (s->tls_on && (strcmp (hostnqn, s->tls_hostnqn) != 0
                    || strcmp (subnqn, s->tls_subnqn) != 0)) {
    fprintf (stderr, "%s: nvme: host %s on a TLS queue whose PSK identity "
             "is another host's or subsystem's, refused\n", sv->program,
             logged (host, hostnqn));
    connect_refuse (s, cmd, data, len, NVME_SC_CONNECT_INVALID_HOST, true,
            DATA_HOSTNQN, "not the host of the TLS PSK identity");
    return;
  }
  /* The discovery controller lists only the subsystems a host may use,
   * so any host may ask it.
   */
  if (!discovery && !host_allowed (sv, hostnqn)) {
    fprintf (stderr, "%s: nvme: host %s is not allowed (%s)\n",
             sv->program, logged (host, hostnqn),
             host_listed (sv, hostnqn) ? "no --nvme-host secret"
                                       : "--nvme-allow-host");
    connect_refuse (s, cmd, data, len, NVME_SC_CONNECT_INVALID_HOST, true,
            DATA_HOSTNQN, "host not allowed");
    return;
  }
  s->sqsize = sqsize;
  s->sqflow_off = a->cattr & CATTR_DISABLE_SQFLOW;
  s->sqhd = 1 % (sqsize + 1u);
  if (qid == 0)
    connect_admin (s, cmd, discovery, hostnqn, a->kato);
  else
    connect_io (s, cmd, data, discovery, hostnqn);
}

void
nvme_ctrl_set_kato (struct nvme_session *s, struct nvme_ctrl *c, uint32_t kato)
{
  uint64_t ms;

  c->kato = kato > KATO_MAX_MS ? KATO_MAX_MS : kato;
  /* In 64 bits: KATO near 2^32 must not wrap to a short timeout. */
  ms = c->kato ? (uint64_t) c->kato + KATO_GRACE_MS : 0;
  if (s->sv->idle_timeout)
    s->sv->idle_timeout (s->owner, (unsigned) ms);
}

/* ---- properties ---------------------------------------------------------- */

/* CAP.MQES, 0-based: hw_queue_depth + 1 entries.  A Linux host leaves
 * one entry of each queue empty (its tag set is SQSIZE deep, not
 * SQSIZE + 1), so this is what gives it hw_queue_depth tags, as null_blk
 * has: with hw_queue_depth entries it would have one fewer.  The tags
 * bound what runs at once whatever a host does.
 */
uint16_t
nvme_mqes (const struct nvme_served *sv)
{
  if (sv->queue_depth < 1)
    return 1;
  /* MAXCMD is MQES + 1 in 16 bits. */
  return sv->queue_depth < UINT16_MAX - 1u ? (uint16_t) sv->queue_depth
                                           : UINT16_MAX - 1u;
}

static uint64_t
prop_cap (const struct nvme_served *sv)
{
  uint64_t mqes = nvme_mqes (sv);

  return mqes
         | (uint64_t) 1 << NVME_CAP_CQR_SHIFT
         | (uint64_t) 15 << NVME_CAP_TO_SHIFT     /* 7.5 s to get ready */
         /* NVM and the I/O command sets: the host sets CC.CSS to 6 and
          * then finds the ZNS namespaces by their CSI.
          */
         | (uint64_t) (NVME_CAP_CSS_NVM | NVME_CAP_CSS_CSI)
           << NVME_CAP_CSS_SHIFT;
}

/* A CC of the Linux host's (4 KiB pages, round robin, 64-byte SQEs and
 * 16-byte CQEs, a command set the controller has); false otherwise.
 */
static bool
cc_valid (uint32_t cc)
{
  return (NVME_CC_CSS (cc) == NVME_CC_CSS_NVM
          || NVME_CC_CSS (cc) == NVME_CC_CSS_CSI)
         && NVME_CC_MPS (cc) == 0 && NVME_CC_AMS (cc) == NVME_CC_AMS_RR
         && NVME_CC_IOSQES (cc) == 6 && NVME_CC_IOCQES (cc) == 4;
}

/* io is no queue of its controller's any more, and its connection
 * closes: on its own loop, which may be another than the caller's.
 * Under ctrl_lock, so that io's session is still there (its detach
 * takes the lock).
 */
static void
drop_queue (struct nvme_session *io)
{
  atomic_store (&io->live, false);
  if (io->sv->abort)
    io->sv->abort (io->owner);
}

/* Closes c's I/O queues, under ctrl_lock: their commands go with them. */
static void
drop_io_queues (struct nvme_ctrl *c)
{
  struct nvme_session *io;

  for (unsigned q = 1; q <= c->sv->max_queues; q++) {
    io = c->ioq[q];
    if (io) {
      c->ioq[q] = NULL;
      drop_queue (io);
    }
  }
  while ((io = c->pending) != NULL) {
    c->pending = io->pending_next;
    io->pending_next = NULL;
    drop_queue (io);
  }
}

/* A controller reset (CC.EN 1 to 0) and a shutdown (CC.SHN) both stop
 * the controller, as nvmet's do: not ready, its I/O queues closed and
 * its held Asynchronous Event Requests gone.  The host enables it
 * again (CC.EN 0 to 1) and connects new I/O queues.
 */
static void
clear_ctrl (struct nvme_ctrl *c)
{
  nvme_ctrl_lock ();
  c->csts &= ~NVME_CSTS_RDY_MASK;
  drop_io_queues (c);
  nvme_ctrl_unlock ();
  c->nr_aer = 0;
}

/* CSTS changes under ctrl_lock: the Connect of an I/O queue, on any
 * loop, reads CSTS.RDY.  The admin queue's loop alone writes it and CC,
 * and reads them without the lock.
 */
static void
set_csts (struct nvme_ctrl *c, uint32_t csts)
{
  nvme_ctrl_lock ();
  c->csts = csts;
  nvme_ctrl_unlock ();
}

static void
set_cc (struct nvme_session *s, struct nvme_ctrl *c, uint32_t cc)
{
  uint32_t old = c->cc;

  c->cc = cc;
  if (NVME_CC_EN (cc) && !NVME_CC_EN (old)) {
    if (cc_valid (cc))
      set_csts (c, c->csts | NVME_CSTS_RDY_MASK);
    else {
      nvme_log (s, "controller %u: CC 0x%x is not one it supports",
                c->cntlid, cc);
      set_csts (c, c->csts | NVME_CSTS_CFS_MASK << NVME_CSTS_CFS_SHIFT);
    }
  }
  else if (!NVME_CC_EN (cc) && NVME_CC_EN (old)) {
    nvme_log (s, "controller %u: reset (CC.EN 0)", c->cntlid);
    clear_ctrl (c);
    set_csts (c, 0);
  }
  if (NVME_CC_SHN (cc) && !NVME_CC_SHN (old)) {
    nvme_log (s, "controller %u: shut down (CC.SHN %u)", c->cntlid,
              NVME_CC_SHN (cc));
    clear_ctrl (c);
    /* Nothing to write back: the shutdown is complete at once. */
    set_csts (c, (c->csts & ~(NVME_CSTS_SHST_MASK << NVME_CSTS_SHST_SHIFT))
                 | NVME_CSTS_SHST_CMPLT << NVME_CSTS_SHST_SHIFT);
  }
  else if (!NVME_CC_SHN (cc))
    set_csts (c, c->csts & ~(NVME_CSTS_SHST_MASK << NVME_CSTS_SHST_SHIFT));
}

bool
nvme_queue_ready (const struct nvme_session *s)
{
  const struct nvme_ctrl *c = s->ctrl;

  /* An I/O queue connects to a ready controller only, and is dropped
   * when it stops being ready (clear_ctrl).
   */
  if (s->qid > 0)
    return atomic_load (&s->live);
  return NVME_CC_EN (c->cc) && (c->csts & NVME_CSTS_RDY_MASK);
}

struct nvme_ctrl *
nvme_queue_ctrl (const struct nvme_session *s)
{
  return s->qid == 0 || atomic_load (&s->live) ? s->ctrl : NULL;
}

/* The ATTRIB (size) a property is accessed with: 1, eight bytes, for
 * CAP, 0, four bytes, for the others; -1 for no property of ours.
 */
static int
prop_attrib (uint32_t offset)
{
  switch (offset) {
  case PROP_CAP: return 1;
  case PROP_VS: case PROP_CC: case PROP_CSTS: return 0;
  default: return -1;
  }
}

/* 0, or the status a property command fails with (*loc: the field).
 * A property is read or written whole, with its own size, as nvmet
 * takes it (the Linux host reads CAP in eight bytes, VS, CC and CSTS in
 * four): half a CAP, or CC with the four bytes after it, is refused.
 */
static uint16_t
check_property (const struct nvme_session *s, const struct nvme_cmd *cmd,
                uint16_t *loc)
{
  const struct cmd_prop *p = &cmd->u.prop;
  int attrib = prop_attrib (p->offset);

  *loc = LOC_FCTYPE;
  if (s->qid > 0 || cmd->family != CF_PROP)
    return ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_OPCODE);
  *loc = LOC_ATTRIB;
  if (p->attrib > 1)            /* sizes 2 to 7 are reserved */
    return ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD);
  *loc = LOC_PROP_OFFSET;
  if (attrib < 0 || (cmd->fctype == nvme_fabrics_type_property_set
                     && p->offset != PROP_CC))
    return ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD);
  *loc = LOC_ATTRIB;
  return p->attrib == attrib ? 0 : ERR (NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD);
}

void
nvme_fabrics_command (struct nvme_session *s, const struct nvme_cmd *cmd)
{
  struct nvme_ctrl *c = s->ctrl;
  const struct cmd_prop *p = &cmd->u.prop;
  uint16_t loc, st = check_property (s, cmd, &loc);

  if (st) {
    nvme_fail (s, cmd, st, loc);
    return;
  }
  if (cmd->fctype == nvme_fabrics_type_property_set) {
    set_cc (s, c, (uint32_t) p->value);
    nvme_reply (s, cmd, 0, 0);
    return;
  }
  switch (p->offset) {
  case PROP_CAP: nvme_reply (s, cmd, 0, prop_cap (s->sv)); break;
  case PROP_VS: nvme_reply (s, cmd, 0, NVME_VERSION); break;
  case PROP_CC: nvme_reply (s, cmd, 0, c->cc); break;
  default: nvme_reply (s, cmd, 0, c->csts); break;
  }
}

void
nvme_fabrics_detach (struct nvme_session *s)
{
  struct nvme_ctrl *c = s->ctrl, **pp;
  char host[LOGGED_NQN];
  bool last;

  if (c == NULL)
    return;
  if (s->qid == 0)
    nvme_log (s, "controller %u of %s removed", c->cntlid,
              logged (host, c->hostnqn));
  nvme_ctrl_lock ();
  s->ctrl = NULL;
  if (s->qid > 0) {
    if (c->ioq[s->qid] == s)
      c->ioq[s->qid] = NULL;
    else
      unlink_pending (c, s);
  }
  else {
    /* Out of the registry first: no queue connects to it any more. */
    for (pp = &controllers; *pp != c; pp = &(*pp)->next)
      ;
    *pp = c->next;
    drop_io_queues (c);
  }
  last = --c->refs == 0;
  nvme_ctrl_unlock ();
  if (last) {
    free (c->ioq);
    free (c);
  }
}

/* ---- the discovery log page ------------------------------------------------ */

static void
pad_copy (char *dst, size_t size, const char *src, char pad)
{
  size_t n = strnlen (src, size);

  memcpy (dst, src, n);
  memset (dst + n, pad, size - n);
}

static void
disc_entry (const struct nvme_served *sv, struct nvmf_disc_log_entry *e,
            uint8_t subtype, const char *nqn)
{
  memset (e, 0, sizeof *e);
  e->trtype = NVMF_TRTYPE_TCP;
  e->adrfam = sv->ipv6 ? NVMF_ADDR_FAMILY_IP6 : NVMF_ADDR_FAMILY_IP4;
  e->subtype = subtype;
  e->treq = sv->tls == NVME_TLS_REQUIRED ? NVMF_TREQ_REQUIRED
            : sv->tls == NVME_TLS_ALLOWED ? NVMF_TREQ_NOT_REQUIRED
            : NVMF_TREQ_NOT_SPECIFIED;
  e->portid = htole16 (1);
  e->cntlid = htole16 (0xffff);           /* dynamic controllers */
  e->asqsz = htole16 (32);
  pad_copy (e->trsvcid, sizeof e->trsvcid, sv->trsvcid, ' ');
  pad_copy (e->traddr, sizeof e->traddr, sv->traddr, ' ');
  pad_copy (e->subnqn, sizeof e->subnqn, nqn, '\0');
  e->tsas.tcp.sectype = sv->tls == NVME_TLS_NONE ? NVMF_TCP_SECTYPE_NONE
                        : NVMF_TCP_SECTYPE_TLS13;
}

size_t
nvme_discovery_log (const struct nvme_session *s, unsigned char **buf)
{
  const struct nvme_served *sv = s->sv;
  bool listed = host_allowed (sv, s->ctrl->hostnqn);
  unsigned n = listed ? 2 : 1;
  size_t len = sizeof (struct nvmf_discovery_log)
               + n * sizeof (struct nvmf_disc_log_entry);
  struct nvmf_discovery_log *log = calloc (1, len);

  if (log == NULL)
    nvme_out_of_memory (s);
  log->genctr = htole64 (1);
  log->numrec = htole64 (n);
  if (listed)
    disc_entry (sv, &log->entries[0], NVME_NQN_NVME, sv->subnqn);
  disc_entry (sv, &log->entries[n - 1], NVME_NQN_CURR, DISCOVERY_NQN);
  *buf = (unsigned char *) log;
  return len;
}

/* ---- the subsystem NQN -------------------------------------------------------- */

void
nvme_default_nqn (char *nqn, size_t len, const char *port)
{
  char host[256] = "";
  size_t j = 0;

  if (gethostname (host, sizeof host - 1) == -1)
    strcpy (host, "localhost");
  /* Only what NQNs usually hold, so that any host's tools take it. */
  for (size_t i = 0; host[i] && j < 64; i++) {
    char ch = host[i];

    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')
        || (ch >= '0' && ch <= '9') || ch == '-' || ch == '.')
      host[j++] = ch;
  }
  host[j] = '\0';
  snprintf (nqn, len, "nqn.2026-12.org.zonednull:%s:%s",
            j ? host : "localhost", port);
}
