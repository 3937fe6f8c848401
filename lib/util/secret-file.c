/* SPDX-License-Identifier: BSD-3-Clause */
/* Files of secrets (secret-file.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "util/secret-file.h"

FILE *
zn_secret_file_open (const char *path, const char *what,
                     char *err, size_t errlen)
{
  /* O_NONBLOCK: opening a FIFO for reading waits for a writer. */
  int fd = open (path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC
                 | O_NOCTTY);
  struct stat st;
  const char *rule = NULL;
  FILE *fp;

  if (fd == -1) {
    snprintf (err, errlen, "%s: %s", what, errno == ELOOP
              ? "a symbolic link (refused: a secrets file is read only "
              "where it is)" : strerror (errno));
    return NULL;
  }
  if (fstat (fd, &st) == -1)
    rule = strerror (errno);
  else if (!S_ISREG (st.st_mode))
    rule = "not a regular file (a secrets file must be one)";
  else if (st.st_uid != geteuid ())
    rule = "owned by another user (a secrets file must belong to the "
           "user the program runs as)";
  else if (st.st_mode & (S_IRWXG | S_IRWXO))
    rule = "only its owner may read or write a secrets file (chmod 600)";
  else if (st.st_size > ZN_SECRET_FILE_MAX)
    rule = "larger than 1 MiB, too large for a secrets file";
  if (rule == NULL && fcntl (fd, F_SETFL, 0) == -1)
    rule = strerror (errno);
  if (rule) {
    snprintf (err, errlen, "%s: %s", what, rule);
    close (fd);
    return NULL;
  }
  fp = fdopen (fd, "r");
  if (fp == NULL) {
    snprintf (err, errlen, "%s: %s", what, strerror (errno));
    close (fd);
  }
  return fp;
}
