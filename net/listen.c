/* SPDX-License-Identifier: BSD-3-Clause */
/* Listening sockets for the connection layer (see conn.h). */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "conn.h"

int
net_listen_unix (const char *path, const char *what, char *err, size_t errlen)
{
  struct sockaddr_un sun = { .sun_family = AF_UNIX };
  struct stat st;
  int fd;

  if (strlen (path) >= sizeof sun.sun_path) {
    snprintf (err, errlen, "%s %s: path longer than %zu bytes", what, path,
              sizeof sun.sun_path - 1);
    return -1;
  }
  /* Replace a stale socket, never another kind of file. */
  if (lstat (path, &st) == 0) {
    if (!S_ISSOCK (st.st_mode)) {
      snprintf (err, errlen, "%s %s: exists and is not a socket", what, path);
      return -1;
    }
    unlink (path);
  }
  strcpy (sun.sun_path, path);
  fd = socket (AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd == -1 || bind (fd, (struct sockaddr *) &sun, sizeof sun) == -1
      || listen (fd, SOMAXCONN) == -1) {
    snprintf (err, errlen, "%s %s: %s", what, path, strerror (errno));
    if (fd != -1)
      close (fd);
    return -1;
  }
  return fd;
}

int
net_listen_tcp (const char *addr, const char *service, char *err,
                size_t errlen)
{
  struct addrinfo hints = {
    .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
    .ai_flags = AI_PASSIVE | AI_NUMERICSERV,
  };
  struct addrinfo *ai, *a;
  int fd = -1, r, one = 1, saved = 0;

  r = getaddrinfo (addr, service, &hints, &ai);
  if (r != 0) {
    snprintf (err, errlen, "-i %s -p %s: %s", addr, service, gai_strerror (r));
    return -1;
  }
  for (a = ai; a; a = a->ai_next) {
    fd = socket (a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                 a->ai_protocol);
    if (fd == -1)
      continue;
    setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind (fd, a->ai_addr, a->ai_addrlen) == 0 && listen (fd, SOMAXCONN) == 0)
      break;
    saved = errno;
    close (fd);
    fd = -1;
  }
  freeaddrinfo (ai);
  if (fd == -1)
    snprintf (err, errlen, "cannot listen on %s port %s: %s", addr, service,
              strerror (saved));
  return fd;
}
