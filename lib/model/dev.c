/* SPDX-License-Identifier: BSD-3-Clause */
/* The device's locks (dev.h): how they are made, taken together, and
 * checked in a debug build.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "model/dev.h"

_Thread_local bool zn_nowait;

void
zn_mutex_init (pthread_mutex_t *m)
{
#ifdef ZN_DEBUG_LOCKS
  pthread_mutexattr_t attr;

  pthread_mutexattr_init (&attr);
  pthread_mutexattr_settype (&attr, PTHREAD_MUTEX_ERRORCHECK);
  pthread_mutex_init (m, &attr);
  pthread_mutexattr_destroy (&attr);
#else
  pthread_mutex_init (m, NULL);
#endif
}

#ifdef ZN_DEBUG_LOCKS
/* An error-checking mutex its owner locks again fails with EDEADLK at
 * once; one another thread holds times out at the deadline already past.
 */
void
zn_assert_held (pthread_mutex_t *m, const char *what, const char *file,
                int line)
{
  struct timespec past = { 0, 0 };
  int r = pthread_mutex_timedlock (m, &past);

  if (r == EDEADLK)
    return;
  if (r == 0)
    pthread_mutex_unlock (m);
  fprintf (stderr, "%s:%d: %s is not held by this thread\n", file, line,
           what);
  abort ();
}
#endif

void
dev_lock_zones (struct zn_dev *dev, uint32_t first, uint32_t end, bool lock)
{
  if (dev->zones[0].mutex != &dev->zones[0].lock) {
    if (lock)
      pthread_mutex_lock (&dev->dev_lock);
    else
      pthread_mutex_unlock (&dev->dev_lock);
    return;
  }
  for (uint32_t i = first; i < end; i++) {
    if (lock)
      zone_lock (&dev->zones[i]);
    else
      zone_unlock (&dev->zones[i]);
  }
}
