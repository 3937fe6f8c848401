/* SPDX-License-Identifier: BSD-3-Clause */
/* zonednull fault: the device's fault rules (doc/faults.md) at run time,
 * in the words of the fault= parameter.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int
cli_fault_args (struct options *o, int argc, char **argv, int optind)
{
  static char rule[ZN_CONTROL_FAULT_SIZE];
  size_t n = 0;

  if (o->have_count || o->clear)
    cli_usage_error ("fault takes no --count or --clear");
  if (optind == argc)
    cli_usage_error ("fault needs add, list or clear");
  o->name = argv[optind++];
  if (strcmp (o->name, "list") == 0) {
    if (o->have_offset || o->have_length)
      cli_usage_error ("fault list takes no --offset or --length");
    return optind;
  }
  if (o->json)
    cli_usage_error ("--json applies to fault list only");
  if (strcmp (o->name, "clear") == 0) {
    if (o->have_offset || o->have_length)
      cli_usage_error ("fault clear takes no --offset or --length");
    o->fault_id = 0;
    if (argc - optind == 2) {
      uint64_t id;

      if (!cli_parse_number (argv[optind], &id) || id == 0
          || id > UINT32_MAX)
        cli_usage_error ("fault clear: '%s' is not a rule's number (see "
                         "fault list)", argv[optind]);
      o->fault_id = (uint32_t) id;
      optind++;
    }
    return optind;
  }
  if (strcmp (o->name, "add") != 0)
    cli_usage_error ("fault %s: expected add, list or clear", o->name);
  if (o->have_offset != o->have_length)
    cli_usage_error ("fault add: -o and -l go together (a range of sectors)");
  /* The rule's words before the URI, as mark's name. */
  if (argc - optind < 2 && !o->have_offset)
    cli_usage_error ("fault add needs a rule's words and a URI");
  for (; optind < argc - 1; optind++) {
    int w = snprintf (rule + n, sizeof rule - n, "%s%s", n ? " " : "",
                      argv[optind]);

    if (w < 0 || (size_t) w >= sizeof rule - n)
      cli_usage_error ("fault add: the rule is longer than %d bytes",
                       ZN_CONTROL_FAULT_SIZE - 1);
    n += (size_t) w;
  }
  if (o->have_offset) {
    int w;

    if (o->offset > UINT64_MAX / 512 || o->length > UINT64_MAX / 512)
      cli_usage_error ("fault add: -o and -l are past any device");
    w = snprintf (rule + n, sizeof rule - n, "%soffset=%" PRIu64
                  " length=%" PRIu64, n ? " " : "", o->offset * 512,
                  o->length * 512);
    if (w < 0 || (size_t) w >= sizeof rule - n)
      cli_usage_error ("fault add: the rule is longer than %d bytes",
                       ZN_CONTROL_FAULT_SIZE - 1);
  }
  o->rule = rule;
  return optind;
}

static void
list (struct zn_client *c, const struct options *o)
{
  struct zn_client_fault rules[ZN_CONTROL_FAULT_RULES];
  int n = zn_client_fault_list (c, rules, ZN_CONTROL_FAULT_RULES);

  if (n < 0)
    cli_die_client (c, "fault list", n);
  if (n > ZN_CONTROL_FAULT_RULES)
    n = ZN_CONTROL_FAULT_RULES;
  if (o->json) {
    printf ("{\n  \"faults\": [");
    for (int i = 0; i < n; i++) {
      char text[2 * sizeof rules[i].rule];

      /* The text is printable ASCII; only " and \ need escaping. */
      size_t k = 0;
      for (const char *p = rules[i].rule; *p && k + 2 < sizeof text; p++) {
        if (*p == '"' || *p == '\\')
          text[k++] = '\\';
        text[k++] = *p;
      }
      text[k] = '\0';
      printf ("%s\n    {\"id\": %" PRIu32 ", \"matched\": %" PRIu64
              ", \"hits\": %" PRIu64 ", \"rule\": \"%s\"}", i ? "," : "",
              rules[i].id, rules[i].matched, rules[i].hits, text);
    }
    printf ("%s]\n}\n", n ? "\n  " : "");
    return;
  }
  for (int i = 0; i < n; i++)
    printf ("%" PRIu32 ": matched %" PRIu64 ", hits %" PRIu64 ": %s\n",
            rules[i].id, rules[i].matched, rules[i].hits, rules[i].rule);
}

void
cli_cmd_fault (struct zn_client *c, const struct options *o)
{
  uint32_t id;
  int r;

  if (strcmp (o->name, "list") == 0) {
    list (c, o);
    return;
  }
  if (strcmp (o->name, "clear") == 0) {
    r = zn_client_fault_clear (c, o->fault_id);
    if (r < 0)
      cli_die_client (c, "fault clear", r);
    if (o->verbose)
      printf ("%s: %s cleared\n", o->uri, o->fault_id ? "rule" : "all rules");
    return;
  }
  r = zn_client_fault_add (c, o->rule, &id);
  if (r < 0)
    cli_die_client (c, "fault add", r);
  printf ("%" PRIu32 "\n", id);
}
