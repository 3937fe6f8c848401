/* SPDX-License-Identifier: BSD-3-Clause */
/* The NVMe/TCP session as a protocol of the connection layer
 * (net/conn.h) and a session of the scheduler (served.h).
 */
#include "conn.h"
#include "session.h"
#include "tls.h"

static void *
nvme_open (void *arg, struct net_conn *c)
{
  return nvme_session_new (arg, c);
}

static void
nvme_close (void *session, struct net_conn *c)
{
  (void) c;
  nvme_session_free (session);
}

static long
nvme_input (void *session, const unsigned char *data, size_t len)
{
  return nvme_session_input (session, data, len);
}

static const unsigned char *
nvme_output (void *session, size_t *len)
{
  return nvme_session_output (session, len);
}

static size_t
nvme_ready (const void *session)
{
  return nvme_session_ready (session);
}

static size_t
nvme_holds (const void *session)
{
  return nvme_session_holds (session);
}

static void
nvme_sent (void *session, size_t n)
{
  nvme_session_sent (session, n);
}

/* Established once connected and authenticated: the handshake timeout
 * covers the initialization, Connect and the authentication.
 */
static bool
nvme_established (const void *session)
{
  return nvme_session_established (session);
}

static bool
nvme_starttls (const void *session)
{
  return nvme_session_starttls (session);
}

static void
nvme_tls_started (void *session, const char *psk_identity)
{
  nvme_session_tls_started (session, psk_identity);
}

static bool
nvme_complete_one (void *session)
{
  return nvme_session_complete_one (session);
}

static void
nvme_resume (void *session, uint64_t id, int err)
{
  nvme_session_resume (session, id, err);
}

static void
nvme_release (void *session, uint64_t id)
{
  nvme_session_release (session, id);
}

const struct sched_session_ops nvme_sched_ops = {
  .complete_one = nvme_complete_one,
  .resume = nvme_resume,
  .release = nvme_release,
  .ready = nvme_ready,
  .serving = nvme_established,
  .device = NULL,               /* each command names its namespace */
};

const struct net_protocol nvme_protocol = {
  .open = nvme_open,
  .close = nvme_close,
  .input = nvme_input,
  .output = nvme_output,
  .ready = nvme_ready,
  .sent = nvme_sent,
  .holds = nvme_holds,
  .established = nvme_established,
  .starttls = nvme_starttls,
  .tls_started = nvme_tls_started,
  .tls_profile = TLS_PROFILE_NVME,
  .max_input = NVME_MAX_PDU,
};
