/* SPDX-License-Identifier: BSD-3-Clause */
/* man/gen-params PAGE.in: PAGE.in with the parameter list of lib/config/params.c's
 * table in place of its markers, on stdout.  The build makes the man pages
 * of the plugin, zonednull-server and zonednull-ublk this way, so that
 * their PARAMETERS sections cannot disagree with the parser or --help.
 *
 * A line "@PARAMETERS@" becomes every key, in the table's order.  A line
 * "@PARAMETER KEY@" becomes that key alone, for a page that says more
 * about each key in its own words after it; such a page must place every
 * key exactly once.  Either way a key is a .TP tag, KEY=UNIT, with its
 * aliases, and the table's one-line meaning and default.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/params.h"

/* Troff's minus sign for every '-': a bare one may be a hyphen. */
static void
put_roff (const char *s)
{
  for (; *s; s++)
    if (*s == '-')
      fputs ("\\-", stdout);
    else
      putchar (*s);
}

/* KEY=UNIT as a man page tag: a placeholder <UNIT> in italics. */
static void
put_tag (const struct param_doc *d)
{
  size_t len = strlen (d->unit);

  printf (".TP\n");
  if (d->unit[0] == '<' && d->unit[len - 1] == '>') {
    printf (".BI %s= ", d->name);
    fwrite (d->unit + 1, 1, len - 2, stdout);
  }
  else {
    printf (".B %s=", d->name);
    put_roff (d->unit);
  }
  putchar ('\n');
}

/* Key I's tag, its aliases' (which follow it in the table and share its
 * paragraph), and its meaning.
 */
static void
put_key (size_t i)
{
  const struct param_doc *d = params_doc (i), *next;

  put_tag (d);
  for (size_t j = i + 1; (next = params_doc (j)) && next->alias_of; j++) {
    printf (".PD 0\n");
    put_tag (next);
    printf (".PD\n");
  }
  /* A text line starting with a control character would be a request. */
  if (d->meaning[0] == '.' || d->meaning[0] == '\'')
    fputs ("\\&", stdout);
  put_roff (d->meaning);
  if (d->def) {
    printf (" (default ");
    put_roff (d->def);
    putchar (')');
  }
  printf (".\n");
}

/* The row of KEY, which is not an alias; -1 if none. */
static long
find_key (const char *key)
{
  const struct param_doc *d;

  for (size_t i = 0; (d = params_doc (i)) != NULL; i++)
    if (strcmp (d->name, key) == 0)
      return d->alias_of ? -1 : (long) i;
  return -1;
}

struct page {
  const char *path;
  unsigned line;
  bool whole;             /* it had @PARAMETERS@ */
  bool *placed;           /* per row, by @PARAMETER KEY@ */
  size_t nr_placed;
};

static int
marker (struct page *pg, char *text)
{
  const struct param_doc *d;
  size_t len;
  long i;

  if (strcmp (text, "@PARAMETERS@") == 0) {
    for (size_t k = 0; (d = params_doc (k)) != NULL; k++)
      if (!d->alias_of)
        put_key (k);
    pg->whole = true;
    return 0;
  }
  len = strlen (text);
  if (strncmp (text, "@PARAMETER ", 11) != 0 || len < 13
      || text[len - 1] != '@') {
    fprintf (stderr, "%s:%u: %s: expected @PARAMETERS@ or @PARAMETER KEY@\n",
             pg->path, pg->line, text);
    return -1;
  }
  text[len - 1] = '\0';
  text += 11;
  i = find_key (text);
  if (i == -1) {
    fprintf (stderr, "%s:%u: @PARAMETER %s@: no such key in lib/config/params.c "
             "(an alias goes with its key)\n", pg->path, pg->line, text);
    return -1;
  }
  if (pg->placed[i]) {
    fprintf (stderr, "%s:%u: @PARAMETER %s@ again\n", pg->path, pg->line, text);
    return -1;
  }
  pg->placed[i] = true;
  pg->nr_placed++;
  put_key ((size_t) i);
  return 0;
}

/* A page that places keys one by one must place them all, and not mix
 * that with the whole list.
 */
static int
check_page (const struct page *pg)
{
  const struct param_doc *d;
  int ret = 0;

  if (!pg->whole && pg->nr_placed == 0) {
    fprintf (stderr, "%s: neither @PARAMETERS@ nor @PARAMETER KEY@\n",
             pg->path);
    return -1;
  }
  if (pg->whole && pg->nr_placed > 0) {
    fprintf (stderr, "%s: both @PARAMETERS@ and @PARAMETER KEY@\n", pg->path);
    return -1;
  }
  for (size_t i = 0; pg->nr_placed > 0 && (d = params_doc (i)) != NULL; i++)
    if (!d->alias_of && !pg->placed[i]) {
      fprintf (stderr, "%s: no @PARAMETER %s@\n", pg->path, d->name);
      ret = -1;
    }
  return ret;
}

int
main (int argc, char **argv)
{
  struct page pg = { .path = argc == 2 ? argv[1] : NULL };
  char buf[4096];
  size_t nr_keys = 0;
  FILE *in;
  int ret = 0;

  if (argc != 2) {
    fprintf (stderr, "usage: %s PAGE.in >PAGE\n", argv[0]);
    return EXIT_FAILURE;
  }
  in = fopen (pg.path, "r");
  if (in == NULL) {
    perror (pg.path);
    return EXIT_FAILURE;
  }
  while (params_doc (nr_keys))
    nr_keys++;
  pg.placed = calloc (nr_keys, sizeof *pg.placed);
  if (pg.placed == NULL) {
    perror ("calloc");
    return EXIT_FAILURE;
  }
  while (ret == 0 && fgets (buf, sizeof buf, in)) {
    pg.line++;
    if (strncmp (buf, "@PARAMETER", 10) == 0) {
      buf[strcspn (buf, "\n")] = '\0';
      ret = marker (&pg, buf);
    }
    else
      fputs (buf, stdout);
  }
  if (ret == 0 && ferror (in)) {
    perror (pg.path);
    ret = -1;
  }
  if (ret == 0)
    ret = check_page (&pg);
  fclose (in);
  free (pg.placed);
  if (ret == 0 && (fflush (stdout) == EOF || ferror (stdout))) {
    perror ("stdout");
    ret = -1;
  }
  return ret == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
