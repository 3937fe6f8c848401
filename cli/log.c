/* SPDX-License-Identifier: BSD-3-Clause */
/* zonednull mark and zonednull log: the device's write log
 * (zonednull-log(5)), as dmsetup message ... mark does for dm-log-writes.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int
cli_log_args (struct options *o, int argc, char **argv, int optind)
{
  const char *what = o->cmd->name;

  if (o->have_offset || o->have_length || o->have_count || o->json
      || o->clear)
    cli_usage_error ("%s takes no --offset, --length, --count, --json or "
                 "--clear", what);
  if (o->cmd->kind == K_LOG) {
    if (optind == argc)
      cli_usage_error ("log needs start NAME or stop");
    if (strcmp (argv[optind], "stop") == 0)
      return optind + 1;
    if (strcmp (argv[optind], "start") != 0)
      cli_usage_error ("log %s: expected start NAME or stop", argv[optind]);
    what = "log start";
    optind++;
  }
  /* The name before the URI: a URI is never a good name, but a name
   * forgotten would take the URI for one.
   */
  if (argc - optind < 2)
    cli_usage_error ("%s needs a NAME and a URI", what);
  o->name = argv[optind];
  return optind + 1;
}

void
cli_cmd_log (struct zn_client *c, const struct options *o)
{
  const char *what = o->cmd->kind == K_MARK ? "mark"
    : o->name ? "log start" : "log stop";
  int r = o->cmd->kind == K_MARK ? zn_client_mark (c, o->name)
    : o->name ? zn_client_log_start (c, o->name) : zn_client_log_stop (c);

  if (r < 0)
    cli_die_client (c, what, r);
  if (!o->verbose)
    return;
  if (o->cmd->kind == K_MARK)
    printf ("%s: mark %s added to the write log\n", o->uri, o->name);
  else if (o->name)
    printf ("%s: write log %s started in the server's log_dir\n", o->uri,
            o->name);
  else
    printf ("%s: write log stopped\n", o->uri);
}
