/* SPDX-License-Identifier: BSD-3-Clause */
/* The parameter table of lib/config/params.c is true: every key's documented
 * default is what a device gets without the key, an alias has its key's
 * unit, and the names are unique.
 *
 * With --table it prints the table instead, "name unit default alias" a
 * line ("-" for none), for tests/model/test-man-params.sh to hold the man pages
 * made from it (man/gen-params) against.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/params.h"
#include "../common/check.h"

/* Every setting a key can change, as the device sees it: 0 for the
 * pipeline bounds means their defaults.
 */
static void
describe (const struct zn_params *p, char *buf, size_t len)
{
  const struct zn_config *c = &p->cfg;
  const struct zn_queue_config *q = &p->queue;

  snprintf (buf, len,
            "kernel=%d size=%llu zone_size=%llu zone_capacity=%llu "
            "zone_nr_conv=%u zone_max_open=%u zone_max_active=%u "
            "blocksize=%u max_sectors=%u memory_backed=%d "
            "pipeline_zoned_writes=%d pipeline_wait_ms=%u "
            "pipeline_max_waiting=%u device_lock=%d cache_size=%llu "
            "zone_full=%d zone_append_max_sectors=%u fua=%d "
            "badblocks_once=%d badblocks_partial_io=%d "
            "irqmode=%u completion_nsec=%llu hw_queue_depth=%u "
            "submit_queues=%u shared_tags=%d shared_tag_bitmap=%d mbps=%u "
            "nr_devices=%u conds=%zu badblocks=%zu",
            (int) c->kernel, (unsigned long long) c->size,
            (unsigned long long) c->zone_size,
            (unsigned long long) c->zone_capacity, c->zone_nr_conv,
            c->zone_max_open, c->zone_max_active, c->blocksize,
            c->max_sectors, c->memory_backed, c->pipeline_zoned_writes,
            c->pipeline_wait_ms ? c->pipeline_wait_ms : ZN_PIPELINE_WAIT_MS,
            c->pipeline_max_waiting
              ? c->pipeline_max_waiting : ZN_PIPELINE_MAX_WAITING,
            c->device_lock, (unsigned long long) c->cache_size, c->zone_full,
            c->zone_append_max_sectors, c->fua, c->badblocks_once,
            c->badblocks_partial_io, q->irqmode,
            (unsigned long long) q->completion_nsec, q->hw_queue_depth,
            q->submit_queues, q->shared_tags, q->shared_tag_bitmap, q->mbps,
            p->nr_devices, p->nr_conds, p->nr_badblocks);
}

static const struct param_doc *
find (const char *name)
{
  const struct param_doc *d;

  for (size_t i = 0; (d = params_doc (i)) != NULL; i++)
    if (strcmp (d->name, name) == 0)
      return d;
  return NULL;
}

static void
check_row (const struct param_doc *d)
{
  const struct param_doc *target = d->alias_of ? find (d->alias_of) : d;
  struct zn_params fresh, set;
  char want[1024], got[1024], err[256];

  CHECK (d->name != NULL && d->unit != NULL);
  CHECK (find (d->name) == d);               /* no name twice */
  if (d->alias_of) {
    CHECK (target != NULL && target->alias_of == NULL);
    CHECK (strcmp (target->unit, d->unit) == 0);
    CHECK (d->def == NULL && d->meaning == NULL);
  }
  else
    CHECK (d->meaning != NULL && strchr (d->meaning, '\n') == NULL);
  if (target->def == NULL)
    return;

  params_init (&fresh);
  params_init (&set);
  if (params_set_key (&set, d->name, target->def, err, sizeof err) < 0) {
    fprintf (stderr, "%s=%s, the documented default, is refused: %s\n",
             d->name, target->def, err);
    exit (EXIT_FAILURE);
  }
  describe (&fresh, want, sizeof want);
  describe (&set, got, sizeof got);
  if (strcmp (want, got) != 0) {
    fprintf (stderr, "%s=%s, the documented default, changes the device:\n"
             "without: %s\nwith:    %s\n", d->name, target->def, want, got);
    exit (EXIT_FAILURE);
  }
  params_free (&fresh);
  params_free (&set);
}

int
main (int argc, char **argv)
{
  const struct param_doc *d;
  size_t i;

  if (argc == 2 && strcmp (argv[1], "--table") == 0) {
    for (i = 0; (d = params_doc (i)) != NULL; i++)
      printf ("%s %s %s %s\n", d->name, d->unit, d->def ? d->def : "-",
              d->alias_of ? d->alias_of : "-");
    return EXIT_SUCCESS;
  }
  for (i = 0; (d = params_doc (i)) != NULL; i++)
    check_row (d);
  CHECK (i > 30);
  printf ("%zu keys\n", i);
  return EXIT_SUCCESS;
}
