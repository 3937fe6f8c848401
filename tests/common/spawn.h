/* SPDX-License-Identifier: BSD-3-Clause */
/* Servers for the C tests: nbdkit or zonednull-server as a child in the
 * foreground, its stderr in a log, ready once it has written its pidfile
 * (both write it after the socket is bound).
 */
#ifndef ZONEDNULL_TESTS_SPAWN_H
#define ZONEDNULL_TESTS_SPAWN_H

#include <stddef.h>
#include <sys/types.h>

struct spawned {
  pid_t pid;                    /* 0 when not running */
  char sock[256];
  char pidfile[256];
  char log[256];
  char uri[300];
};

/* Names the socket, pidfile and log of a server called name in dir. */
void spawn_paths (struct spawned *s, const char *dir, const char *name);

/* Runs argv, with preload (a sanitizer runtime for a plugin built with
 * it; nbdkit itself is not) in LD_PRELOAD when set, and waits up to 60 s
 * for it to listen.  0: it listens.  -1: it could not start or exited
 * first (reaped; *status is its wait status, or -1 when fork failed);
 * spawn_log tells why.  -2: still not listening after 60 s.
 */
int spawn_server (struct spawned *s, char *const argv[], const char *preload,
                  int *status);

/* The server's log, without trailing newlines. */
void spawn_log (const struct spawned *s, char *buf, size_t len);

/* Sends sig, reaps the server and removes its files: 0, or -1 when it
 * was not running.
 */
int spawn_stop (struct spawned *s, int sig);

#endif
