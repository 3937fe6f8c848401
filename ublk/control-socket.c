/* SPDX-License-Identifier: BSD-3-Clause */
/* zonednull-ublk's control socket (see control-socket.h).
 *
 * The queueing model (tags, irqmode=2, mbps) belongs to the ublk queues:
 * this channel is for zone control and inspection, not for load, and
 * takes no tag.  Its zone commands are held back only as the fault
 * settings say (a latency, a rule's delay= or timeout), as on the
 * plugin's and zonednull-server's control channels: each delayed answer
 * has its own timer.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "frontend/control.h"
#include "conn.h"
#include "control-socket.h"
#include "nbd/session.h"

struct zu_control_socket {
  char *path;
  int listen_fd;                /* until the server owns it */
  struct ev_loop *loop;
  struct net_server *srv;
  ev_async stop_watcher;
  pthread_t thread;
  struct served served;
  struct served_device device;
  struct net_sched sched;       /* the server keeps a pointer to it */
};

/* ---- answers held back ---------------------------------------------------- */

struct cconn;

/* An answer the fault settings delay, released by its timer. */
struct delayed_reply {
  ev_timer timer;               /* first: the callback's watcher is it */
  struct cconn *c;
  uint64_t id;
  struct delayed_reply *next;
};

/* A connection, as the socket's scheduling hooks see it. */
struct cconn {
  struct ev_loop *loop;
  struct net_conn *conn;
  struct delayed_reply *delayed;
};

static void
release_cb (struct ev_loop *loop, ev_timer *w, int revents)
{
  struct delayed_reply *d = (struct delayed_reply *) w, **pp;
  struct cconn *c = d->c;

  (void) loop;
  (void) revents;
  for (pp = &c->delayed; *pp != d; pp = &(*pp)->next)
    ;
  *pp = d->next;
  nbd_session_release (net_conn_session (c->conn), d->id);
  net_conn_flush (c->conn);
  free (d);
}

static enum reply_hold
finish (void *owner, uint64_t id, bool tagged, enum finish_outcome outcome,
        uint64_t delay_ns)
{
  struct cconn *c = net_conn_sched (owner);
  struct delayed_reply *d;

  (void) tagged;
  if (outcome != FINISH_ANSWERED || delay_ns == 0
      || (d = malloc (sizeof *d)) == NULL)
    return REPLY_NOW;
  ev_timer_init (&d->timer, release_cb, (double) delay_ns / 1e9, 0.);
  d->c = c;
  d->id = id;
  d->next = c->delayed;
  c->delayed = d;
  ev_timer_start (c->loop, &d->timer);
  return REPLY_DELAYED;
}

static void *
cconn_open (void *arg, struct net_conn *conn)
{
  struct cconn *c = calloc (1, sizeof *c);

  if (c) {
    c->loop = arg;
    c->conn = conn;
  }
  return c;
}

static void
cconn_close (void *st)
{
  struct cconn *c = st;

  while (c->delayed) {
    struct delayed_reply *d = c->delayed;

    c->delayed = d->next;
    ev_timer_stop (c->loop, &d->timer);
    free (d);
  }
  free (c);
}

/* Delayed answers are in flight; answers timed out never come. */
static bool
cconn_in_flight (const void *st, bool input_left)
{
  const struct cconn *c = st;

  (void) input_left;
  return c->delayed != NULL;
}

/* ---- the socket's thread ------------------------------------------------------ */

static void
stop_cb (struct ev_loop *loop, ev_async *w, int revents)
{
  (void) w;
  (void) revents;
  ev_break (loop, EVBREAK_ALL);
}

static void *
control_socket_main (void *arg)
{
  struct zu_control_socket *cs = arg;

  ev_run (cs->loop, 0);
  return NULL;
}

static void
control_socket_free (struct zu_control_socket *cs)
{
  net_server_free (cs->srv);
  if (cs->listen_fd != -1)
    close (cs->listen_fd);
  if (cs->loop)
    ev_loop_destroy (cs->loop);
  if (cs->srv || cs->listen_fd != -1)
    unlink (cs->path);
  zn_control_destroy (cs->device.ctl);
  free (cs->path);
  free (cs);
}

/* The loop, the socket and the server on it; -1 with a message. */
static int
control_socket_listen (struct zu_control_socket *cs, char *err, size_t errlen)
{
  const struct net_settings set = { .program = "zonednull-ublk" };

  cs->loop = ev_loop_new (EVFLAG_AUTO);
  if (cs->loop == NULL) {
    snprintf (err, errlen, "cannot create the control socket's event loop");
    return -1;
  }
  cs->listen_fd = net_listen_unix (cs->path, "--control-socket", err, errlen);
  if (cs->listen_fd == -1)
    return -1;
  cs->sched = (struct net_sched) {
    .open = cconn_open, .close = cconn_close, .in_flight = cconn_in_flight,
    .arg = cs->loop,
  };
  cs->srv = net_server_new (cs->loop, &set);
  if (cs->srv == NULL || net_serve (cs->srv, cs->listen_fd, false,
                                    &nbd_protocol, &cs->served, &cs->sched) == -1) {
    snprintf (err, errlen, "out of memory");
    return -1;
  }
  cs->listen_fd = -1;
  return 0;
}

struct zu_control_socket *
zu_control_socket_start (const char *path, struct zn_dev *dev,
                         struct zn_queues *qs,
                         const struct zn_queue_config *qcfg,
                         const struct zn_config *cfg, char *err, size_t errlen)
{
  struct zu_control_socket *cs = calloc (1, sizeof *cs);
  int r;

  if (cs == NULL || (cs->path = strdup (path)) == NULL) {
    free (cs);
    snprintf (err, errlen, "out of memory");
    return NULL;
  }
  cs->listen_fd = -1;
  snprintf (cs->device.name, sizeof cs->device.name, ZN_DEFAULT_DEVICE);
  snprintf (cs->device.control_name, sizeof cs->device.control_name,
            ZN_DEFAULT_DEVICE ZN_CONTROL_SUFFIX);
  cs->device.dev = dev;
  cs->device.qs = qs;
  cs->device.ctl = zn_control_create (dev);
  if (cs->device.ctl == NULL) {
    snprintf (err, errlen, "out of memory");
    control_socket_free (cs);
    return NULL;
  }
  zn_control_set_queues (cs->device.ctl, qs, qcfg, cfg, 0, 1);
  zn_control_allow_faults (cs->device.ctl, true);
  cs->served.program = "zonednull-ublk";
  cs->served.devices = &cs->device;
  cs->served.nr_devices = 1;
  cs->served.room = net_room;
  cs->served.finish = finish;
  if (control_socket_listen (cs, err, errlen) == -1) {
    control_socket_free (cs);
    return NULL;
  }
  ev_async_init (&cs->stop_watcher, stop_cb);
  ev_async_start (cs->loop, &cs->stop_watcher);
  r = pthread_create (&cs->thread, NULL, control_socket_main, cs);
  if (r != 0) {
    snprintf (err, errlen, "control socket thread: %s", strerror (r));
    ev_async_stop (cs->loop, &cs->stop_watcher);
    control_socket_free (cs);
    return NULL;
  }
  return cs;
}

void
zu_control_socket_stop (struct zu_control_socket *cs)
{
  if (cs == NULL)
    return;
  ev_async_send (cs->loop, &cs->stop_watcher);
  pthread_join (cs->thread, NULL);
  ev_async_stop (cs->loop, &cs->stop_watcher);
  control_socket_free (cs);
}
