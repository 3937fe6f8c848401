/* SPDX-License-Identifier: BSD-3-Clause */
/* The TLS half of the test suite's NVMe/TCP host, on GnuTLS: the client
 * handshake with an external PSK, as Linux's tlshd makes it for
 * `nvme connect --tls`, in front of tests/common/nvme-host.py (Python's
 * ssl module has no external PSKs).
 *
 *   tls-host [--priority=P] IDENTITY HEXPSK PORT handshake
 *       connects to 127.0.0.1:PORT, runs the handshake, says how it
 *       ended ("handshake ok", or "handshake failed: ...": status 1);
 *   tls-host [--priority=P] IDENTITY HEXPSK PORT proxy
 *       listens on a free port of 127.0.0.1, prints it, and carries each
 *       connection to 127.0.0.1:PORT over TLS (a process per connection),
 *       until killed;
 *   tls-host IDENTITY HEXPSK PORT relay
 *       the same without TLS (bench/nvme-tls-vs-clear.sh's baseline: the
 *       same hop, in clear text).
 *
 * The TLS PSK is given derived (the test derives it from the
 * NVMeTLSkey-1 key on its own, as a host does), so that a wrong
 * derivation on either side shows as a failed handshake.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <gnutls/gnutls.h>

/* TLS 1.3 with TP 8011's SHA-256 suite, as tlshd offers it. */
static const char *priority =
  "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:+PSK:+ECDHE-PSK:"
  "+DHE-PSK";

static gnutls_psk_client_credentials_t cred;

static int
connect_to (int port)
{
  struct sockaddr_in a = { .sin_family = AF_INET,
                           .sin_port = htons ((uint16_t) port) };
  int fd = socket (AF_INET, SOCK_STREAM, 0), one = 1;

  a.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
  if (fd == -1 || connect (fd, (struct sockaddr *) &a, sizeof a) == -1) {
    perror ("tls-host: connect");
    exit (2);
  }
  /* As the kernel's host: a PDU goes at once, not behind Nagle. */
  setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

static int
hex_key (const char *hex, unsigned char *key, size_t size)
{
  size_t n = strlen (hex) / 2;

  if (strlen (hex) % 2 || n > size)
    return -1;
  for (size_t i = 0; i < n; i++)
    if (sscanf (hex + 2 * i, "%2hhx", &key[i]) != 1)
      return -1;
  return (int) n;
}

/* The handshake on fd; the session, or NULL after saying why. */
static gnutls_session_t
handshake (int fd, const char *identity, const char *hex)
{
  gnutls_session_t s;
  unsigned char key[64];
  gnutls_datum_t k = { key, 0 };
  int n = hex_key (hex, key, sizeof key), r;
  const char *where;

  if (n <= 0) {
    fprintf (stderr, "tls-host: the PSK must be hex digits\n");
    exit (2);
  }
  k.size = (unsigned) n;
  if (gnutls_psk_allocate_client_credentials (&cred) < 0
      || gnutls_psk_set_client_credentials (cred, identity, &k,
                                            GNUTLS_PSK_KEY_RAW) < 0
      || gnutls_init (&s, GNUTLS_CLIENT) < 0
      || gnutls_priority_set_direct (s, priority, &where) < 0
      || gnutls_credentials_set (s, GNUTLS_CRD_PSK, cred) < 0) {
    fprintf (stderr, "tls-host: GnuTLS set-up failed\n");
    exit (2);
  }
  gnutls_transport_set_int (s, fd);
  gnutls_handshake_set_timeout (s, 30000);
  do
    r = gnutls_handshake (s);
  while (r < 0 && !gnutls_error_is_fatal (r));
  if (r < 0) {
    printf ("handshake failed: %s\n", gnutls_strerror (r));
    gnutls_deinit (s);
    return NULL;
  }
  return s;
}

/* relay's: the same hop as proxy's, without TLS. */
static void
plain_relay (int a, int b)
{
  char buf[65536];

  for (;;) {
    struct pollfd p[2] = { { a, POLLIN, 0 }, { b, POLLIN, 0 } };

    if (poll (p, 2, -1) == -1) {
      if (errno == EINTR)
        continue;
      return;
    }
    for (int i = 0; i < 2; i++)
      if (p[i].revents) {
        ssize_t n = read (p[i].fd, buf, sizeof buf);

        if (n <= 0)
          return;
        for (ssize_t sent = 0, r; sent < n; sent += r)
          if ((r = write (p[1 - i].fd, buf + sent, (size_t) (n - sent))) <= 0)
            return;
      }
  }
}

/* Carries bytes both ways between the host's plain socket and the
 * server's TLS session until either ends.
 */
static void
relay (int plain, gnutls_session_t s, int tls_fd)
{
  char buf[65536];

  for (;;) {
    struct pollfd p[2] = { { plain, POLLIN, 0 }, { tls_fd, POLLIN, 0 } };
    ssize_t n;

    if (gnutls_record_check_pending (s) == 0 && poll (p, 2, -1) == -1) {
      if (errno == EINTR)
        continue;
      return;
    }
    if (gnutls_record_check_pending (s) > 0 || p[1].revents) {
      n = gnutls_record_recv (s, buf, sizeof buf);
      if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED)
        continue;
      if (n <= 0 || write (plain, buf, (size_t) n) != n)
        return;
    }
    if (p[0].revents) {
      n = read (plain, buf, sizeof buf);
      if (n <= 0)
        return;
      /* A record carries at most 16 KiB. */
      for (ssize_t sent = 0, r; sent < n; sent += r)
        if ((r = gnutls_record_send (s, buf + sent, (size_t) (n - sent))) < 0)
          return;
    }
  }
}

static void
proxy (const char *identity, const char *hex, int port, bool tls)
{
  struct sockaddr_in a = { .sin_family = AF_INET };
  socklen_t len = sizeof a;
  int l = socket (AF_INET, SOCK_STREAM, 0), one = 1;

  a.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
  setsockopt (l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind (l, (struct sockaddr *) &a, sizeof a) == -1 || listen (l, 16) == -1
      || getsockname (l, (struct sockaddr *) &a, &len) == -1) {
    perror ("tls-host: listen");
    exit (2);
  }
  printf ("%d\n", ntohs (a.sin_port));
  fflush (stdout);
  signal (SIGCHLD, SIG_IGN);
  for (;;) {
    int c = accept (l, NULL, NULL);

    if (c == -1)
      continue;
    setsockopt (c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (fork () == 0) {
      int fd = connect_to (port);
      gnutls_session_t s;

      close (l);
      if (!tls)
        plain_relay (c, fd);
      else if ((s = handshake (fd, identity, hex)) != NULL)
        relay (c, s, fd);
      fflush (stdout);
      _exit (0);
    }
    close (c);
  }
}

int
main (int argc, char **argv)
{
  int i = 1;

  if (argc > 1 && strncmp (argv[1], "--priority=", 11) == 0)
    priority = argv[i++] + 11;
  if (argc - i != 4) {
    fprintf (stderr, "usage: tls-host [--priority=P] IDENTITY HEXPSK PORT "
             "handshake|proxy|relay\n");
    return 2;
  }
  if (gnutls_global_init () < 0)
    return 2;
  if (strcmp (argv[i + 3], "proxy") == 0 || strcmp (argv[i + 3], "relay") == 0)
    proxy (argv[i], argv[i + 1], atoi (argv[i + 2]),
           strcmp (argv[i + 3], "proxy") == 0);
  else if (strcmp (argv[i + 3], "handshake") == 0) {
    gnutls_session_t s = handshake (connect_to (atoi (argv[i + 2])), argv[i],
                                    argv[i + 1]);

    int failed = s == NULL;

    if (s != NULL) {
      printf ("handshake ok\n");
      gnutls_bye (s, GNUTLS_SHUT_WR);
      gnutls_deinit (s);
    }
    gnutls_psk_free_client_credentials (cred);
    gnutls_global_deinit ();
    return failed;
  }
  else {
    fprintf (stderr, "tls-host: unknown mode %s\n", argv[i + 3]);
    return 2;
  }
  gnutls_global_deinit ();
  return 0;
}
