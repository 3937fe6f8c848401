/* --nvme-host (nvme-hosts.h).  A secrets file is opened without
 * following a symbolic link and refused unless it is a regular file of
 * the user's own that no one else may read or write: the secrets are a
 * host's credentials.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <gnutls/gnutls.h>

#include "nvme-hosts.h"

static struct nvme_host_secret *hosts;
static unsigned nr_hosts;

/* The longest line of a secrets file: an NQN and two SHA-512 secrets,
 * with room for blanks.
 */
#define LINE_MAX_LEN 1024

const struct nvme_host_secret *
nvme_hosts (unsigned *n)
{
  *n = nr_hosts;
  return hosts;
}

void
nvme_hosts_free (void)
{
  if (hosts)
    gnutls_memset (hosts, 0, nr_hosts * sizeof *hosts);
  free (hosts);
  hosts = NULL;
  nr_hosts = 0;
}

/* One HOSTNQN:SECRET[:CTRL_SECRET]; where names the argument or the
 * file's line in the messages.
 */
static int
add_one (const char *text, const char *where)
{
  struct nvme_host_secret h, *p;
  const char *why = auth_parse_host (text, &h);

  if (why) {
    gnutls_memset (&h, 0, sizeof h);
    fprintf (stderr, "zonednull-server: --nvme-host%s: %s\n", where, why);
    return -1;
  }
  for (unsigned i = 0; i < nr_hosts; i++)
    if (strcmp (hosts[i].hostnqn, h.hostnqn) == 0) {
      fprintf (stderr, "zonednull-server: --nvme-host%s: host %s has a "
               "secret already\n", where, h.hostnqn);
      gnutls_memset (&h, 0, sizeof h);
      return -1;
    }
  p = realloc (hosts, (nr_hosts + 1) * sizeof *p);
  if (p == NULL) {
    gnutls_memset (&h, 0, sizeof h);
    fputs ("zonednull-server: out of memory\n", stderr);
    return -1;
  }
  hosts = p;
  hosts[nr_hosts++] = h;
  gnutls_memset (&h, 0, sizeof h);
  return 0;
}

static FILE *
open_secrets (const char *path)
{
  int fd = open (path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
  struct stat st;
  FILE *fp;

  if (fd == -1) {
    fprintf (stderr, "zonednull-server: --nvme-host=@%s: %s%s\n", path,
             strerror (errno), errno == ELOOP ? " (a symbolic link)" : "");
    return NULL;
  }
  if (fstat (fd, &st) == -1 || !S_ISREG (st.st_mode)
      || st.st_uid != geteuid () || (st.st_mode & 077) != 0) {
    fprintf (stderr, "zonednull-server: --nvme-host=@%s: must be a regular "
             "file of this user's with mode 0600 or stricter\n", path);
    close (fd);
    return NULL;
  }
  fp = fdopen (fd, "r");
  if (fp == NULL) {
    fprintf (stderr, "zonednull-server: --nvme-host=@%s: %s\n", path,
             strerror (errno));
    close (fd);
  }
  return fp;
}

/* Lines of HOSTNQN:SECRET[:CTRL_SECRET]; blank ones and those starting
 * with '#' are skipped.
 */
static int
add_file (const char *path)
{
  char line[LINE_MAX_LEN + 2], where[64 + 4096];
  FILE *fp = open_secrets (path);
  unsigned lineno = 0;
  int r = 0;

  if (fp == NULL)
    return -1;
  while (r == 0 && fgets (line, sizeof line, fp)) {
    size_t n = strlen (line);

    lineno++;
    snprintf (where, sizeof where, "=@%s, line %u", path, lineno);
    if (n > 0 && line[n - 1] != '\n' && !feof (fp)) {
      fprintf (stderr, "zonednull-server: --nvme-host%s: longer than %d "
               "bytes\n", where, LINE_MAX_LEN);
      r = -1;
      break;
    }
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'
                     || line[n - 1] == ' ' || line[n - 1] == '\t'))
      line[--n] = '\0';
    if (n > 0 && line[0] != '#')
      r = add_one (line, where);
  }
  if (r == 0 && ferror (fp)) {
    fprintf (stderr, "zonednull-server: --nvme-host=@%s: read error\n", path);
    r = -1;
  }
  gnutls_memset (line, 0, sizeof line);
  fclose (fp);
  return r;
}

int
nvme_hosts_add (const char *arg)
{
  if (arg[0] == '@')
    return add_file (arg + 1);
  return add_one (arg, "");
}
