/* SPDX-License-Identifier: BSD-3-Clause */
/* The NBD session as a protocol of the connection layer (net/conn.h). */
#include <stdio.h>

#include "conn.h"
#include "session.h"

/* A write request carries at most 32 MiB (the advertised maximum), with
 * its header.
 */
#define MAX_INPUT (33 * 1024 * 1024)

static void *
nbd_open (void *arg, struct net_conn *c)
{
  return nbd_session_new (arg, c);
}

static void
nbd_close (void *session, struct net_conn *c)
{
  struct nbd_session *s = session;
  unsigned refused = nbd_session_tls_refused (s);

  if (refused > 0)
    fprintf (stderr, "%s: connection %d: %u options refused before "
             "NBD_OPT_STARTTLS (--tls=require)\n", net_conn_program (c),
             net_conn_fd (c), refused);
  nbd_session_free (s);
}

static long
nbd_input (void *session, const unsigned char *data, size_t len)
{
  return nbd_session_input (session, data, len);
}

static size_t
nbd_holds (const void *session)
{
  return nbd_session_holds (session);
}

static const unsigned char *
nbd_output (void *session, size_t *len)
{
  struct outbuf *out = nbd_session_output (session);

  *len = out->len;
  return out->data;
}

static size_t
nbd_ready (const void *session)
{
  return nbd_session_ready (session);
}

static void
nbd_sent (void *session, size_t n)
{
  nbd_session_sent (session, n);
}

static bool
nbd_starttls (const void *session)
{
  return nbd_session_starttls (session);
}

static void
nbd_tls_started (void *session, const char *psk_identity)
{
  (void) psk_identity;
  nbd_session_tls_started (session);
}

static bool
nbd_established (const void *session)
{
  bool control;

  return nbd_session_device (session, &control) != NULL;
}

static bool
nbd_complete_one (void *session)
{
  return nbd_session_complete_one (session);
}

static void
nbd_resume (void *session, uint64_t id, int err)
{
  nbd_session_resume (session, id, err);
}

static void
nbd_release (void *session, uint64_t id)
{
  nbd_session_release (session, id);
}

static const struct served_device *
nbd_device (const void *session)
{
  bool control = false;
  const struct served_device *d = nbd_session_device (session, &control);

  return d != NULL && !control ? d : NULL;
}

static bool
nbd_serving (const void *session)
{
  return nbd_device (session) != NULL;
}

const struct sched_session_ops nbd_sched_ops = {
  .complete_one = nbd_complete_one,
  .resume = nbd_resume,
  .release = nbd_release,
  .ready = nbd_ready,
  .serving = nbd_serving,
  .device = nbd_device,
};

const struct net_protocol nbd_protocol = {
  .open = nbd_open,
  .close = nbd_close,
  .input = nbd_input,
  .output = nbd_output,
  .ready = nbd_ready,
  .sent = nbd_sent,
  .holds = nbd_holds,
  .starttls = nbd_starttls,
  .tls_started = nbd_tls_started,
  .established = nbd_established,
  .max_input = MAX_INPUT,
};
