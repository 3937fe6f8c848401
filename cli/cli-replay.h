/* SPDX-License-Identifier: BSD-3-Clause */
/* `zonednull replay`: the model's replay of a write log (lib/powerfail/replay.h)
 * behind the command line; no server, no URI.
 */
#ifndef ZONEDNULL_CLI_REPLAY_H
#define ZONEDNULL_CLI_REPLAY_H

/* argv[0] is "replay"; returns the exit status. */
int cli_replay (int argc, char **argv);

#endif
