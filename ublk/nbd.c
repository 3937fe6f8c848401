/* zonednull-ublk's control socket: zonednull-server's protocol session on
 * a small libev loop of its own.
 *
 * Requests are answered at once: the queueing model (tags, irqmode=2,
 * mbps) belongs to the ublk queues, and this channel is for zone control
 * and inspection, not for load.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <ev.h>

#include "zonednull/control.h"
#include "session.h"
#include "nbd.h"

#define READ_CHUNK (256 * 1024)
/* A write request carries at most 32 MiB (the advertised maximum). */
#define MAX_INBUF (33 * 1024 * 1024)

struct conn {
  struct zu_nbd *n;
  int fd;
  ev_io rio, wio;
  struct session *session;
  unsigned char *in;
  size_t in_len, in_cap;
  bool closing;                 /* send what is queued, then close */
  struct conn *next, *prev;
};

struct zu_nbd {
  char *path;
  int listen_fd;
  struct ev_loop *loop;
  ev_io accept_watcher;
  ev_async stop_watcher;
  pthread_t thread;
  struct served served;
  struct served_device device;
  struct conn *conns;
};

static void
conn_free (struct conn *c)
{
  struct zu_nbd *n = c->n;

  ev_io_stop (n->loop, &c->rio);
  ev_io_stop (n->loop, &c->wio);
  close (c->fd);
  if (c->prev)
    c->prev->next = c->next;
  else
    n->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  session_free (c->session);
  free (c->in);
  free (c);
}

static void
conn_process (struct conn *c)
{
  long used = session_input (c->session, c->in, c->in_len);

  if (used < 0) {
    c->closing = true;
    c->in_len = 0;
    return;
  }
  memmove (c->in, c->in + used, c->in_len - (size_t) used);
  c->in_len -= (size_t) used;
  /* A full buffer the session cannot use is a framing error. */
  if (c->in_len == c->in_cap && c->in_cap >= MAX_INBUF
      && session_output (c->session)->len < SESSION_OUTPUT_LIMIT)
    c->closing = true;
}

/* false when the connection is gone. */
static bool
conn_send (struct conn *c)
{
  size_t ready = session_ready (c->session), sent = 0;
  const unsigned char *data = session_output (c->session)->data;

  while (sent < ready) {
    ssize_t r = send (c->fd, data + sent, ready - sent, MSG_NOSIGNAL);

    if (r > 0)
      sent += (size_t) r;
    else if (r == -1 && errno == EINTR)
      continue;
    else if (r == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
      break;
    else {
      conn_free (c);
      return false;
    }
  }
  session_sent (c->session, sent);
  return true;
}

/* Sends, takes the requests the output limit held back, and picks the
 * events to wait for.
 */
static void
conn_flush (struct conn *c)
{
  struct outbuf *out = session_output (c->session);

  for (;;) {
    if (!conn_send (c))
      return;
    if (session_ready (c->session) > 0 || c->closing || c->in_len == 0
        || out->len >= SESSION_OUTPUT_LIMIT)
      break;
    conn_process (c);
    if (session_ready (c->session) == 0)
      break;
  }
  if (session_ready (c->session) > 0)
    ev_io_start (c->n->loop, &c->wio);
  else {
    ev_io_stop (c->n->loop, &c->wio);
    if (c->closing) {
      conn_free (c);
      return;
    }
  }
  if (c->closing || out->len >= SESSION_OUTPUT_LIMIT)
    ev_io_stop (c->n->loop, &c->rio);
  else
    ev_io_start (c->n->loop, &c->rio);
}

static void
conn_readable (struct ev_loop *loop, ev_io *w, int revents)
{
  struct conn *c = w->data;
  ssize_t r;

  (void) loop;
  (void) revents;
  if (c->in_cap - c->in_len < READ_CHUNK && c->in_cap < MAX_INBUF) {
    size_t cap = c->in_cap ? c->in_cap * 2 : READ_CHUNK * 2;
    unsigned char *p;

    if (cap > MAX_INBUF)
      cap = MAX_INBUF;
    if ((p = realloc (c->in, cap)) == NULL) {
      conn_free (c);
      return;
    }
    c->in = p;
    c->in_cap = cap;
  }
  if (c->in_len == c->in_cap) {
    ev_io_stop (c->n->loop, &c->rio);   /* conn_flush resumes */
    return;
  }
  r = recv (c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
  if (r == -1 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return;
  if (r <= 0) {
    conn_free (c);
    return;
  }
  c->in_len += (size_t) r;
  conn_process (c);
  conn_flush (c);
}

static void
conn_writable (struct ev_loop *loop, ev_io *w, int revents)
{
  (void) loop;
  (void) revents;
  conn_flush (w->data);
}

static void
accept_cb (struct ev_loop *loop, ev_io *w, int revents)
{
  struct zu_nbd *n = w->data;
  struct conn *c;
  int fd;

  (void) loop;
  (void) revents;
  fd = accept4 (n->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd == -1)
    return;
  c = calloc (1, sizeof *c);
  if (c == NULL || (c->session = session_new (&n->served, c)) == NULL) {
    free (c);
    close (fd);
    return;
  }
  c->n = n;
  c->fd = fd;
  ev_io_init (&c->rio, conn_readable, fd, EV_READ);
  ev_io_init (&c->wio, conn_writable, fd, EV_WRITE);
  c->rio.data = c->wio.data = c;
  c->next = n->conns;
  if (n->conns)
    n->conns->prev = c;
  n->conns = c;
  conn_flush (c);               /* the greeting */
}

static void
stop_cb (struct ev_loop *loop, ev_async *w, int revents)
{
  (void) w;
  (void) revents;
  ev_break (loop, EVBREAK_ALL);
}

static void *
nbd_main (void *arg)
{
  struct zu_nbd *n = arg;

  ev_run (n->loop, 0);
  return NULL;
}

static int
listen_unix (const char *path, char *err, size_t errlen)
{
  struct sockaddr_un sun = { .sun_family = AF_UNIX };
  struct stat st;
  int fd;

  if (strlen (path) >= sizeof sun.sun_path) {
    snprintf (err, errlen, "--control-socket %s: path longer than %zu bytes",
              path, sizeof sun.sun_path - 1);
    return -1;
  }
  /* Replace a stale socket, never another kind of file. */
  if (lstat (path, &st) == 0) {
    if (!S_ISSOCK (st.st_mode)) {
      snprintf (err, errlen, "--control-socket %s: exists and is not a "
                "socket", path);
      return -1;
    }
    unlink (path);
  }
  strcpy (sun.sun_path, path);
  fd = socket (AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd == -1 || bind (fd, (struct sockaddr *) &sun, sizeof sun) == -1
      || listen (fd, SOMAXCONN) == -1) {
    snprintf (err, errlen, "--control-socket %s: %s", path, strerror (errno));
    if (fd != -1)
      close (fd);
    return -1;
  }
  return fd;
}

static void
nbd_free (struct zu_nbd *n)
{
  while (n->conns)
    conn_free (n->conns);
  if (n->loop)
    ev_loop_destroy (n->loop);
  if (n->listen_fd != -1) {
    close (n->listen_fd);
    unlink (n->path);
  }
  zn_control_destroy (n->device.ctl);
  free (n->path);
  free (n);
}

struct zu_nbd *
zu_nbd_start (const char *path, struct zn_dev *dev, struct zn_queues *qs,
              const struct zn_queue_config *qcfg, const struct zn_config *cfg,
              char *err, size_t errlen)
{
  struct zu_nbd *n = calloc (1, sizeof *n);
  int r;

  if (n == NULL || (n->path = strdup (path)) == NULL) {
    free (n);
    snprintf (err, errlen, "out of memory");
    return NULL;
  }
  n->listen_fd = -1;
  snprintf (n->device.name, sizeof n->device.name, ZN_DEFAULT_DEVICE);
  snprintf (n->device.control_name, sizeof n->device.control_name,
            ZN_DEFAULT_DEVICE ZN_CONTROL_SUFFIX);
  n->device.dev = dev;
  n->device.qs = qs;
  n->device.ctl = zn_control_create (dev);
  if (n->device.ctl == NULL) {
    snprintf (err, errlen, "out of memory");
    nbd_free (n);
    return NULL;
  }
  zn_control_set_queues (n->device.ctl, qs, qcfg, cfg, 0, 1);
  n->served.devices = &n->device;
  n->served.nr_devices = 1;
  n->loop = ev_loop_new (EVFLAG_AUTO);
  if (n->loop == NULL) {
    snprintf (err, errlen, "cannot create the control socket's event loop");
    nbd_free (n);
    return NULL;
  }
  if ((n->listen_fd = listen_unix (path, err, errlen)) == -1) {
    nbd_free (n);
    return NULL;
  }
  ev_io_init (&n->accept_watcher, accept_cb, n->listen_fd, EV_READ);
  n->accept_watcher.data = n;
  ev_io_start (n->loop, &n->accept_watcher);
  ev_async_init (&n->stop_watcher, stop_cb);
  ev_async_start (n->loop, &n->stop_watcher);
  r = pthread_create (&n->thread, NULL, nbd_main, n);
  if (r != 0) {
    snprintf (err, errlen, "control socket thread: %s", strerror (r));
    nbd_free (n);
    return NULL;
  }
  return n;
}

void
zu_nbd_stop (struct zu_nbd *n)
{
  if (n == NULL)
    return;
  ev_async_send (n->loop, &n->stop_watcher);
  pthread_join (n->thread, NULL);
  ev_io_stop (n->loop, &n->accept_watcher);
  ev_async_stop (n->loop, &n->stop_watcher);
  nbd_free (n);
}
