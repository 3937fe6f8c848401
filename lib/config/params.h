/* SPDX-License-Identifier: BSD-3-Clause */
/* The device parameters of the nbdkit plugin, zonednull-server and
 * zonednull-ublk: one set of keys and rules, parsed by one piece of code,
 * so that a value is refused with the same message everywhere. */
#ifndef ZONEDNULL_PARAMS_H
#define ZONEDNULL_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model/queue.h"
#include "model/zoned.h"

/* zone_readonly / zone_offline toggle, so their order matters. */
struct cond_setting {
  bool offline;
  uint64_t sector;
};

#define PARAMS_MAX_DEVICES 1024   /* the plugin's limit */

struct zn_params {
  struct zn_config cfg;
  struct zn_queue_config queue;   /* all but mbps */
  uint32_t nr_devices;
  struct cond_setting *conds;
  size_t nr_conds;
  char **badblocks;               /* "+A-B" / "-A-B", in order */
  char *backing_dir;              /* absolute; cfg.backing_dir points here */
  char *log_writes, *log_dir;     /* absolute; cfg's point here */
  size_t nr_badblocks;
  char **faults;                  /* fault rules, in order */
  size_t nr_faults;
  const char *help;               /* where unknown keys point; "--help" */
};

/* One key as --help, nbdkit's config_help and the man pages show it. */
struct param_doc {
  const char *name;
  const char *unit;       /* as shown after "name=": "<MiB>", "0|1|2" */
  const char *def;        /* as written on the command line; NULL: none */
  const char *alias_of;   /* the key this one is another name for, or NULL */
  const char *meaning;    /* one line; NULL for an alias */
};

/* Key I of every key params_set accepts, in the lists' order; NULL
 * past the last.
 */
const struct param_doc *params_doc (size_t i);

/* The keys with their units, meanings and defaults, one a line. */
void params_print_help (FILE *fp);

void params_init (struct zn_params *p);
void params_free (struct zn_params *p);

/* Applies one KEY=VALUE; -EINVAL (-ENOMEM) with a message naming the key
 * and the rule.
 */
int params_set (struct zn_params *p, const char *arg, char *err,
                size_t errlen);
/* The same, with the key and value apart (nbdkit's config callback). */
int params_set_key (struct zn_params *p, const char *key, const char *value,
                    char *err, size_t errlen);

/* Whether any of timeout=, requeue=, fault= or the zone-operation
 * latencies was given: requests may then be held.
 */
bool params_faults_given (const struct zn_params *p);

/* null_blk's validation of the queue parameters and the geometry, and
 * whether every device's zone table fits in memory; -EINVAL with a
 * message.
 */
int params_check (struct zn_params *p, char *err, size_t errlen);

/* Device i's configuration: with nr_devices > 1 and backing_dir, each
 * device keeps its zones in backing_dir/nullbI (in dir, of dirlen bytes).
 */
const struct zn_config *params_device_config (const struct zn_params *p,
                                              uint32_t i,
                                              struct zn_config *cfg,
                                              char *dir, size_t dirlen);

/* The zone_readonly / zone_offline and badblocks settings, on the
 * powered-on device; none on a device restored from its backing_dir.
 * 0, or a negative errno with a message naming the setting.
 */
int params_apply (const struct zn_params *p, struct zn_dev *dev,
                  char *err, size_t errlen);

#endif
