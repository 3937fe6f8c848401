/* SPDX-License-Identifier: BSD-3-Clause */
/* --nvme-host (nvme-hosts.h).  A secrets file follows the rules of
 * lib/util/secret-file.h, and one that names no host is refused: the option
 * asks for authentication, and no host must never mean everyone.
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
#include "util/secret-file.h"

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
  const char *why = nvme_auth_parse_host (text, &h);

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

/* Lines of HOSTNQN:SECRET[:CTRL_SECRET]; blank ones and those starting
 * with '#' are skipped.
 */
static int
add_file (const char *path)
{
  char where[64 + 4096], err[256 + 4096], *line = NULL;
  size_t cap = 0;
  ssize_t got;
  FILE *fp;
  unsigned lineno = 0, before = nr_hosts;
  int r = 0;

  snprintf (where, sizeof where, "--nvme-host=@%s", path);
  fp = zn_secret_file_open (path, where, err, sizeof err);
  if (fp == NULL) {
    fprintf (stderr, "zonednull-server: %s\n", err);
    return -1;
  }
  while (r == 0 && (got = getline (&line, &cap, fp)) != -1) {
    size_t n = (size_t) got;

    lineno++;
    snprintf (where, sizeof where, "=@%s, line %u", path, lineno);
    if (memchr (line, '\0', n)) {
      fprintf (stderr, "zonednull-server: --nvme-host%s: holds a NUL byte\n",
               where);
      r = -1;
      break;
    }
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'
                     || line[n - 1] == ' ' || line[n - 1] == '\t'))
      line[--n] = '\0';
    if (n > LINE_MAX_LEN) {
      fprintf (stderr, "zonednull-server: --nvme-host%s: longer than %d "
               "bytes\n", where, LINE_MAX_LEN);
      r = -1;
      break;
    }
    if (n > 0 && line[0] != '#')
      r = add_one (line, where);
  }
  if (r == 0 && ferror (fp)) {
    fprintf (stderr, "zonednull-server: --nvme-host=@%s: read error\n", path);
    r = -1;
  }
  if (r == 0 && nr_hosts == before) {
    fprintf (stderr, "zonednull-server: --nvme-host=@%s: names no host "
             "(no HOSTNQN:SECRET line); a secrets file without one is "
             "refused, never read as \"no authentication\"\n", path);
    r = -1;
  }
  if (line)
    gnutls_memset (line, 0, cap);
  free (line);
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
