/* SPDX-License-Identifier: BSD-3-Clause */
/* What the power-fail tests share: a scratch directory, a state's
 * device opened from its backing_dir, and removal of what they made.
 */
#ifndef ZONEDNULL_TESTS_POWERFAIL_H
#define ZONEDNULL_TESTS_POWERFAIL_H

#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/check.h"
#include "../common/wlog-gen.h"
#include "model/zoned.h"

static inline int
rm_one (const char *path, const struct stat *sb, int flag, struct FTW *f)
{
  (void) sb; (void) flag; (void) f;
  return remove (path);
}

static inline void
rm_tree (const char *path)
{
  nftw (path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* In memory when the machine has /dev/shm: a state costs a directory of
 * zone files and the model's fsyncs, hundreds of them per run.
 */
static inline char *
scratch (void)
{
  static char dir[64];

  snprintf (dir, sizeof dir, "%s/zn-powerfail-XXXXXX",
            access ("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
  CHECK (mkdtemp (dir) != NULL);
  return dir;
}

/* The device a replayed state is, of the log g describes. */
static inline struct zn_dev *
open_state (const struct wg *g, const char *dir)
{
  struct zn_config cfg;
  char err[512];
  struct zn_dev *dev;

  zn_config_init (&cfg);
  cfg.blocksize = g->bs;
  cfg.zone_size = g->zone_sectors >> 11;
  cfg.zone_capacity = g->zone_cap >> 11;
  cfg.size = g->nr_zones * cfg.zone_size;
  cfg.zone_nr_conv = g->nr_conv;
  cfg.backing_dir = dir;
  cfg.backing_dir_nofollow = true;
  dev = zn_dev_create (&cfg, err, sizeof err);
  if (dev == NULL)
    fprintf (stderr, "opening the state %s: %s\n", dir, err);
  CHECK (dev != NULL);
  return dev;
}

#endif
