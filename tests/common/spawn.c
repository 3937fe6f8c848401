/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "spawn.h"

void
spawn_paths (struct spawned *s, const char *dir, const char *name)
{
  s->pid = 0;
  snprintf (s->sock, sizeof s->sock, "%s/%s.sock", dir, name);
  snprintf (s->pidfile, sizeof s->pidfile, "%s/%s.pid", dir, name);
  snprintf (s->log, sizeof s->log, "%s/%s.log", dir, name);
  snprintf (s->uri, sizeof s->uri, "nbd+unix:///?socket=%s", s->sock);
}

static void
remove_files (const struct spawned *s)
{
  unlink (s->sock);
  unlink (s->pidfile);
  unlink (s->log);
}

int
spawn_server (struct spawned *s, char *const argv[], const char *preload,
              int *status)
{
  struct stat st;

  fflush (NULL);
  s->pid = fork ();
  if (s->pid == -1) {
    FILE *fp = fopen (s->log, "w");

    if (fp) {
      fprintf (fp, "fork: %s\n", strerror (errno));
      fclose (fp);
    }
    s->pid = 0;
    *status = -1;
    return -1;
  }
  if (s->pid == 0) {
    /* The server's messages, expected errors included, stay out of the
     * test's output unless it fails to start.
     */
    int fd = open (s->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    if (fd >= 0) {
      dup2 (fd, 2);
      close (fd);
    }
    if (preload && *preload) {
      setenv ("LD_PRELOAD", preload, 1);
      setenv ("ASAN_OPTIONS", "detect_leaks=0", 1);
    }
    execvp (argv[0], argv);
    fprintf (stderr, "cannot run %s: %s\n", argv[0], strerror (errno));
    _exit (127);
  }

  /* Servers under a sanitizer or valgrind start slowly. */
  for (int tries = 0; tries < 6000; tries++) {
    struct timespec tick = { 0, 10 * 1000 * 1000 };

    if (stat (s->pidfile, &st) == 0 && st.st_size > 0
        && stat (s->sock, &st) == 0)
      return 0;
    if (waitpid (s->pid, status, WNOHANG) == s->pid) {
      s->pid = 0;
      return -1;
    }
    nanosleep (&tick, NULL);
  }
  return -2;
}

void
spawn_log (const struct spawned *s, char *buf, size_t len)
{
  FILE *fp = fopen (s->log, "r");
  size_t n = 0;

  if (fp) {
    n = fread (buf, 1, len - 1, fp);
    fclose (fp);
  }
  while (n > 0 && buf[n - 1] == '\n')
    n--;
  buf[n] = '\0';
}

int
spawn_stop (struct spawned *s, int sig)
{
  int ret = -1;

  if (s->pid > 0 && kill (s->pid, sig) == 0) {
    pid_t r;

    while ((r = waitpid (s->pid, NULL, 0)) == -1 && errno == EINTR)
      ;
    if (r == s->pid)
      ret = 0;
  }
  s->pid = 0;
  remove_files (s);
  return ret;
}
