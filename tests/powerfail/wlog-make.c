/* wlog-make PATH SEED [N [BS]]: a write log of N (default 100) random
 * requests (tests/common/wlog-gen.c), for the shell tests.
 */
#include "powerfail.h"

int
main (int argc, char **argv)
{
  struct wg g;

  if (argc < 3) {
    fprintf (stderr, "usage: wlog-make PATH SEED [N [BS]]\n");
    return 2;
  }
  wg_open (&g, argv[1], argc > 4 ? (uint32_t) atoi (argv[4]) : 4096, 8, 1, 1,
           2, NULL);
  wg_workload (&g, strtoull (argv[2], NULL, 10),
               argc > 3 ? (unsigned) atoi (argv[3]) : 100);
  wg_mark (&g, "end");
  wg_close (&g);
  wg_free (&g);
  return 0;
}
