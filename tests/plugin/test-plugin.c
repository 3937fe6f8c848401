/* SPDX-License-Identifier: BSD-3-Clause */
/* The nbdkit plugin seen from an NBD client: each test starts its own
 * nbdkit with the plugin through nbd_connect_command, drives zones through
 * writes, TRIM and block status, and checks results, errnos and write
 * pointers.  Zone sizes are 1 MiB or 2 MiB so that everything stays small.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libnbd.h>

#include "../common/check.h"

#define MiB (UINT64_C (1) << 20)
#define MAX_ARGS 32

/* Fails the test with libnbd's message if an NBD call that should
 * succeed does not.
 */
#define NBD_OK(expr)                                                    \
  do {                                                                  \
    if ((expr) == -1) {                                                 \
      fprintf (stderr, "%s:%d: %s failed: %s\n",                        \
               __FILE__, __LINE__, #expr, nbd_get_error ());            \
      exit (EXIT_FAILURE);                                              \
    }                                                                   \
  } while (0)

/* The request reached the server and the server failed it with err (a
 * client-side refusal says something other than "command failed").
 */
#define NBD_FAILS(expr, err)                                            \
  do {                                                                  \
    int nbd_fails_r_ = (expr);                                          \
    if (nbd_fails_r_ != -1) {                                           \
      fprintf (stderr, "%s:%d: %s succeeded, expected %s\n",            \
               __FILE__, __LINE__, #expr, #err);                        \
      exit (EXIT_FAILURE);                                              \
    }                                                                   \
    if (nbd_get_errno () != (err)                                       \
        || strstr (nbd_get_error (), "command failed") == NULL) {       \
      fprintf (stderr, "%s:%d: %s: expected %s from the server, "       \
               "got errno %d: %s\n", __FILE__, __LINE__, #expr, #err,   \
               nbd_get_errno (), nbd_get_error ());                     \
      exit (EXIT_FAILURE);                                              \
    }                                                                   \
  } while (0)

/* Connects to a new nbdkit serving the plugin with the given key=value
 * arguments (NULL-terminated).  nbdkit exits when the handle is closed.
 */
static struct nbd_handle *
connect_dev (const char *arg, ...)
{
  const char *plugin = getenv ("ZONEDNULL_PLUGIN");
  const char *preload = getenv ("ZONEDNULL_PRELOAD");
  const char *nbdkit = getenv ("NBDKIT");
  static char ld_preload[4096];
  char *argv[MAX_ARGS];
  size_t n = 0;
  struct nbd_handle *h;
  va_list ap;

  if (nbdkit == NULL || *nbdkit == '\0')
    nbdkit = "nbdkit";
  /* nbdkit is not built with the sanitizers, but the plugin may be. */
  if (preload && *preload) {
    snprintf (ld_preload, sizeof ld_preload, "LD_PRELOAD=%s", preload);
    argv[n++] = (char *) "env";
    argv[n++] = ld_preload;
    argv[n++] = (char *) "ASAN_OPTIONS=detect_leaks=0";
  }
  argv[n++] = (char *) nbdkit;
  argv[n++] = (char *) "-s";
  argv[n++] = (char *) "--exit-with-parent";
  argv[n++] = (char *) plugin;
  va_start (ap, arg);
  for (; arg != NULL; arg = va_arg (ap, const char *)) {
    CHECK (n < MAX_ARGS - 1);
    argv[n++] = (char *) arg;
  }
  va_end (ap);
  argv[n] = NULL;

  h = nbd_create ();
  CHECK (h != NULL);
  NBD_OK (nbd_add_meta_context (h, LIBNBD_CONTEXT_BASE_ALLOCATION));
  /* Unaligned requests must reach the server: checking them is its job. */
  NBD_OK (nbd_set_strict_mode (h, nbd_get_strict_mode (h)
                                  & ~LIBNBD_STRICT_ALIGN));
  NBD_OK (nbd_connect_command (h, argv));
  return h;
}

static void
fill (void *buf, size_t len, unsigned seed)
{
  unsigned char *p = buf;

  for (size_t i = 0; i < len; i++)
    p[i] = (unsigned char) (seed * 31 + i * 7 + (i >> 9));
}

static void
write_pattern (struct nbd_handle *h, uint64_t offset, size_t len,
               unsigned seed)
{
  void *buf = malloc (len);

  CHECK (buf != NULL);
  fill (buf, len, seed);
  NBD_OK (nbd_pwrite (h, buf, len, offset, 0));
  free (buf);
}

/* A write of len bytes at offset that the server must refuse with err. */
static void
write_fails (struct nbd_handle *h, uint64_t offset, size_t len, int err)
{
  void *buf = calloc (1, len);

  CHECK (buf != NULL);
  NBD_FAILS (nbd_pwrite (h, buf, len, offset, 0), err);
  free (buf);
}

static void
expect_pattern (struct nbd_handle *h, uint64_t offset, size_t len,
                unsigned seed)
{
  unsigned char *got = malloc (len), *want = malloc (len);

  CHECK (got != NULL && want != NULL);
  fill (want, len, seed);
  NBD_OK (nbd_pread (h, got, len, offset, 0));
  CHECK (memcmp (got, want, len) == 0);
  free (got);
  free (want);
}

static void
expect_bytes (struct nbd_handle *h, uint64_t offset, size_t len, int byte)
{
  unsigned char *got = malloc (len);

  CHECK (got != NULL);
  NBD_OK (nbd_pread (h, got, len, offset, 0));
  for (size_t i = 0; i < len; i++)
    if (got[i] != byte) {
      fprintf (stderr, "byte at offset %llu is 0x%02x, expected 0x%02x\n",
               (unsigned long long) (offset + i), got[i], byte);
      CHECK (got[i] == byte);
    }
  free (got);
}

/* base:allocation flags of every 512-byte sector of the device. */
struct map {
  uint64_t size;
  uint64_t covered;
  uint8_t *flags;
};

static int
extent_cb (void *opaque, const char *context, uint64_t offset,
           uint32_t *entries, size_t nr_entries, int *error)
{
  struct map *m = opaque;

  (void) error;
  if (strcmp (context, LIBNBD_CONTEXT_BASE_ALLOCATION) != 0)
    return 0;
  for (size_t i = 0; i + 1 < nr_entries; i += 2) {
    uint64_t end = offset + entries[i];

    CHECK (offset % 512 == 0 && entries[i] % 512 == 0);
    for (uint64_t o = offset; o < end && o < m->size; o += 512)
      m->flags[o / 512] = (uint8_t) entries[i + 1];
    offset = end;
  }
  if (offset > m->covered)
    m->covered = offset;
  return 0;
}

static struct map
get_map (struct nbd_handle *h)
{
  struct map m = { .size = (uint64_t) nbd_get_size (h) };

  m.flags = malloc (m.size / 512);
  CHECK (m.flags != NULL);
  memset (m.flags, 0xEE, m.size / 512);
  while (m.covered < m.size) {
    uint64_t before = m.covered;
    uint64_t count = m.size - m.covered;

    if (count > UINT32_MAX / 2)
      count = UINT32_MAX / 2;
    NBD_OK (nbd_block_status (h, count, m.covered,
                              (nbd_extent_callback) { .callback = extent_cb,
                                                      .user_data = &m }, 0));
    CHECK (m.covered > before);
  }
  return m;
}

/* Block status must show data exactly up to wp (absolute bytes) and a
 * plain hole (not "zero": null_blk reads 0xFF there) from wp to the end of
 * the zone.
 */
static void
expect_zone_wp (struct nbd_handle *h, uint64_t start, uint64_t len,
                uint64_t wp)
{
  struct map m = get_map (h);

  for (uint64_t o = start; o < start + len; o += 512) {
    unsigned want = o < wp ? 0 : LIBNBD_STATE_HOLE;

    if (m.flags[o / 512] != want) {
      fprintf (stderr, "zone at %llu: block status at %llu is %u, "
               "expected %u (wp %llu)\n", (unsigned long long) start,
               (unsigned long long) o, m.flags[o / 512], want,
               (unsigned long long) wp);
      CHECK (m.flags[o / 512] == want);
    }
  }
  free (m.flags);
}

/* size=8 zone_size=1: zone z is [z MiB, (z+1) MiB); zone 0 conventional. */
static void
test_data_path (void)
{
  struct nbd_handle *h = connect_dev ("size=8", "zone_size=1",
                                      "zone_nr_conv=1", "memory_backed=1",
                                      NULL);
  const uint64_t z1 = 1 * MiB, z2 = 2 * MiB, z4 = 4 * MiB;

  CHECK_EQ (nbd_get_size (h), 8 * MiB);
  CHECK_EQ (nbd_can_multi_conn (h), 1);
  CHECK_EQ (nbd_can_trim (h), 1);
  CHECK_EQ (nbd_can_fua (h), 1);
  CHECK_EQ (nbd_can_meta_context (h, LIBNBD_CONTEXT_BASE_ALLOCATION), 1);
  CHECK_EQ (nbd_get_block_size (h, LIBNBD_SIZE_MINIMUM), 512);
  CHECK_EQ (nbd_get_block_size (h, LIBNBD_SIZE_PREFERRED), 4096);
  CHECK_EQ (nbd_get_block_size (h, LIBNBD_SIZE_MAXIMUM), 32 * MiB);

  /* Conventional zone: anywhere, any order, and it reads back. */
  write_pattern (h, 8192, 4096, 1);
  write_pattern (h, 0, 4096, 2);
  write_pattern (h, 4096, 4096, 3);
  write_pattern (h, 4096, 512, 4);
  expect_pattern (h, 0, 4096, 2);
  expect_pattern (h, 4096, 512, 4);
  expect_pattern (h, 8192, 4096, 1);
  expect_zone_wp (h, 0, MiB, MiB);

  /* Sequential zone 1: only at the write pointer. */
  expect_zone_wp (h, z1, MiB, z1);
  write_pattern (h, z1, 4096, 5);
  write_fails (h, z1, 4096, EIO);               /* behind the wp */
  write_fails (h, z1 + 8192, 4096, EIO);        /* ahead of the wp */
  write_pattern (h, z1 + 4096, 4096, 6);
  expect_pattern (h, z1, 4096, 5);
  expect_pattern (h, z1 + 4096, 4096, 6);
  expect_bytes (h, z1 + 8192, 8192, 0xFF);      /* past the wp */
  expect_bytes (h, z1 + MiB - 512, 512, 0xFF);
  expect_zone_wp (h, z1, MiB, z1 + 8192);

  /* A write from the conventional zone into zone 1 off its wp: zone 1's
   * part is checked with zone 1's rules, and zone 1 is unchanged.
   */
  write_fails (h, z1 - 4096, 8192, EIO);
  expect_zone_wp (h, z1, MiB, z1 + 8192);
  expect_pattern (h, z1, 4096, 5);

  /* A zone filled by writes is FULL and takes no more writes. */
  write_pattern (h, z2, MiB - 4096, 7);
  expect_zone_wp (h, z2, MiB, z2 + MiB - 4096);
  write_pattern (h, z2 + MiB - 4096, 4096, 8);
  expect_zone_wp (h, z2, MiB, z2 + MiB);
  write_fails (h, z2, 4096, EIO);               /* FULL zone */
  write_fails (h, z2 + MiB - 4096, 4096, EIO);
  expect_pattern (h, z2, MiB - 4096, 7);
  expect_pattern (h, z2 + MiB - 4096, 4096, 8);

  /* Write zeroes is a write of zeros: at the wp only, advancing it. */
  NBD_OK (nbd_pwrite (h, (char [4096]) { 0x55 }, 4096, z4, 0));
  NBD_OK (nbd_zero (h, 8192, z4 + 4096, 0));
  expect_bytes (h, z4 + 4096, 8192, 0);
  expect_zone_wp (h, z4, MiB, z4 + 12288);
  NBD_FAILS (nbd_zero (h, 4096, z4, 0), EIO);
  NBD_FAILS (nbd_zero (h, 4096, z2, 0), EIO);

  /* FUA and flush need nothing extra but must work. */
  NBD_OK (nbd_pwrite (h, (char [4096]) { 0 }, 4096, z4 + 12288,
                      LIBNBD_CMD_FLAG_FUA));
  NBD_OK (nbd_flush (h, 0));
  expect_zone_wp (h, z4, MiB, z4 + 16384);

  /* Misaligned requests are refused by the server, changing nothing. */
  write_fails (h, 100, 512, EINVAL);
  write_fails (h, 0, 100, EINVAL);
  write_fails (h, z1 + 8192 + 512 + 100, 512, EINVAL);
  write_fails (h, z1 + 8192, 1000, EINVAL);
  NBD_FAILS (nbd_pread (h, (char [512]) { 0 }, 512, 1, 0), EINVAL);
  NBD_FAILS (nbd_pread (h, (char [512]) { 0 }, 100, 0, 0), EINVAL);
  expect_pattern (h, 0, 4096, 2);
  expect_zone_wp (h, z1, MiB, z1 + 8192);

  nbd_close (h);
}

static void
test_trim (void)
{
  struct nbd_handle *h = connect_dev ("size=8", "zone_size=1",
                                      "zone_nr_conv=1", "memory_backed=1",
                                      NULL);

  write_pattern (h, 0, 4096, 1);
  for (unsigned z = 1; z < 8; z++)
    write_pattern (h, z * MiB, 8192, z + 1);

  /* One zone: reset, so the write pointer is back at the start. */
  NBD_OK (nbd_trim (h, MiB, 1 * MiB, 0));
  expect_zone_wp (h, 1 * MiB, MiB, 1 * MiB);
  expect_bytes (h, 1 * MiB, 8192, 0xFF);
  write_pattern (h, 1 * MiB, 4096, 20);
  expect_zone_wp (h, 1 * MiB, MiB, 1 * MiB + 4096);

  /* Several zones at once. */
  NBD_OK (nbd_trim (h, 2 * MiB, 2 * MiB, 0));
  expect_zone_wp (h, 2 * MiB, MiB, 2 * MiB);
  expect_zone_wp (h, 3 * MiB, MiB, 3 * MiB);
  expect_zone_wp (h, 4 * MiB, MiB, 4 * MiB + 8192);
  write_pattern (h, 3 * MiB, 4096, 21);

  /* Not whole zones. */
  NBD_FAILS (nbd_trim (h, MiB / 2, 5 * MiB, 0), EINVAL);
  NBD_FAILS (nbd_trim (h, MiB, 5 * MiB + 4096, 0), EINVAL);
  NBD_FAILS (nbd_trim (h, MiB + 4096, 5 * MiB, 0), EINVAL);
  NBD_FAILS (nbd_trim (h, 4096, 0, 0), EINVAL);
  expect_zone_wp (h, 5 * MiB, MiB, 5 * MiB + 8192);
  expect_zone_wp (h, 6 * MiB, MiB, 6 * MiB + 8192);

  /* A range with the conventional zone, short of the whole device. */
  NBD_FAILS (nbd_trim (h, 2 * MiB, 0, 0), EINVAL);
  NBD_FAILS (nbd_trim (h, MiB, 0, 0), EINVAL);
  NBD_FAILS (nbd_trim (h, 7 * MiB, 0, 0), EINVAL);
  expect_zone_wp (h, 1 * MiB, MiB, 1 * MiB + 4096);
  expect_pattern (h, 0, 4096, 1);

  /* The range may end at the end of the device. */
  NBD_OK (nbd_trim (h, MiB, 7 * MiB, 0));
  expect_zone_wp (h, 7 * MiB, MiB, 7 * MiB);

  /* The whole device is reset-all: conventional data survives. */
  NBD_OK (nbd_trim (h, 8 * MiB, 0, 0));
  for (unsigned z = 1; z < 8; z++)
    expect_zone_wp (h, z * MiB, MiB, z * MiB);
  expect_zone_wp (h, 0, MiB, MiB);
  expect_pattern (h, 0, 4096, 1);
  write_pattern (h, 1 * MiB, 4096, 22);

  nbd_close (h);
}

/* zone_capacity below zone_size: the gap [cap, len) is never writable. */
static void
test_zone_capacity (void)
{
  struct nbd_handle *h = connect_dev ("size=16", "zone_size=2",
                                      "zone_capacity=1", "memory_backed=1",
                                      NULL);

  /* A write past the capacity is refused whole: nothing is stored. */
  write_pattern (h, 0, MiB - 4096, 1);
  write_fails (h, MiB - 4096, 8192, EIO);
  expect_zone_wp (h, 0, 2 * MiB, MiB - 4096);
  expect_bytes (h, MiB - 4096, 8192, 0xFF);
  write_fails (h, 0, 2 * MiB, EIO);
  expect_zone_wp (h, 0, 2 * MiB, MiB - 4096);
  write_pattern (h, MiB - 4096, 4096, 2);        /* FULL at capacity */
  expect_zone_wp (h, 0, 2 * MiB, MiB);
  write_fails (h, MiB, 4096, EIO);
  expect_bytes (h, MiB, 4096, 0xFF);
  expect_pattern (h, 0, MiB - 4096, 1);
  nbd_close (h);
}

/* 9 MiB in 2 MiB zones: the last zone is a 1 MiB runt. */
static void
test_runt_zone (void)
{
  struct nbd_handle *h = connect_dev ("size=9", "zone_size=2",
                                      "memory_backed=1", NULL);

  CHECK_EQ (nbd_get_size (h), 9 * MiB);
  write_pattern (h, 6 * MiB, 4096, 1);
  write_pattern (h, 8 * MiB, MiB, 2);            /* fills the runt */
  write_fails (h, 8 * MiB, 4096, EIO);
  expect_zone_wp (h, 8 * MiB, MiB, 9 * MiB);
  NBD_OK (nbd_trim (h, MiB, 8 * MiB, 0));
  expect_zone_wp (h, 8 * MiB, MiB, 8 * MiB);
  write_pattern (h, 8 * MiB, 4096, 3);
  NBD_OK (nbd_trim (h, 3 * MiB, 6 * MiB, 0));
  expect_zone_wp (h, 6 * MiB, 2 * MiB, 6 * MiB);
  expect_zone_wp (h, 8 * MiB, MiB, 8 * MiB);
  nbd_close (h);
}

/* Exhausted limits fail on the wire.  nbdkit sends ETOOMANYREFS (open)
 * and EOVERFLOW (active, on a request without DF) as EINVAL.
 */
static void
test_limits (void)
{
  struct nbd_handle *h = connect_dev ("size=8", "zone_size=1",
                                      "zone_max_open=1", "zone_max_active=2",
                                      NULL);

  write_pattern (h, 0, 4096, 1);
  /* Opening zone 1 closes zone 0 implicitly: active is now 2. */
  write_pattern (h, MiB, 4096, 2);
  write_fails (h, 2 * MiB, 4096, EINVAL);        /* EOVERFLOW */
  write_fails (h, 4096, 4096, EINVAL);           /* ETOOMANYREFS */
  expect_zone_wp (h, 0, MiB, 4096);
  expect_zone_wp (h, 2 * MiB, MiB, 2 * MiB);

  /* Resetting zone 1 frees both an open and an active slot. */
  NBD_OK (nbd_trim (h, MiB, MiB, 0));
  write_pattern (h, 4096, 4096, 3);
  write_pattern (h, 2 * MiB, 4096, 4);
  expect_zone_wp (h, 0, MiB, 8192);
  expect_zone_wp (h, 2 * MiB, MiB, 2 * MiB + 4096);
  nbd_close (h);

  /* An open limit alone never fails a write: implicit opens close an
   * implicitly open zone.
   */
  h = connect_dev ("size=8", "zone_size=1", "zone_max_open=2", NULL);
  for (unsigned z = 0; z < 8; z++)
    write_pattern (h, z * MiB, 4096, z);
  for (unsigned z = 0; z < 8; z++)
    write_pattern (h, z * MiB + 4096, 4096, z);
  for (unsigned z = 0; z < 8; z++)
    expect_zone_wp (h, z * MiB, MiB, z * MiB + 8192);
  nbd_close (h);
}

static void
test_block_size (void)
{
  struct nbd_handle *h = connect_dev ("size=8", "zone_size=1",
                                      "zone_nr_conv=1", "blocksize=4096",
                                      "memory_backed=1", NULL);

  CHECK_EQ (nbd_get_block_size (h, LIBNBD_SIZE_MINIMUM), 4096);
  CHECK_EQ (nbd_get_block_size (h, LIBNBD_SIZE_PREFERRED), 4096);
  CHECK_EQ (nbd_get_block_size (h, LIBNBD_SIZE_MAXIMUM), 32 * MiB);
  write_fails (h, 0, 512, EINVAL);
  write_fails (h, 512, 4096, EINVAL);
  write_fails (h, MiB, 512, EINVAL);
  NBD_FAILS (nbd_pread (h, (char [512]) { 0 }, 512, 0, 0), EINVAL);
  write_pattern (h, 0, 4096, 1);
  write_pattern (h, MiB, 4096, 2);
  expect_pattern (h, MiB, 4096, 2);
  expect_zone_wp (h, MiB, MiB, MiB + 4096);
  nbd_close (h);

  h = connect_dev ("size=8", "zone_size=1", "blocksize=512", NULL);
  CHECK_EQ (nbd_get_block_size (h, LIBNBD_SIZE_MINIMUM), 512);
  write_pattern (h, 0, 512, 1);
  nbd_close (h);
}

/* Sector 4096 is in zone 2, 6144 in zone 3, 10240 in zone 5. */
static void
test_readonly_offline (void)
{
  struct nbd_handle *h = connect_dev ("size=8", "zone_size=1",
                                      "zone_nr_conv=1", "memory_backed=1",
                                      "zone_readonly=4096",
                                      "zone_offline=6144",
                                      "zone_readonly=10240",
                                      "zone_readonly=10240", NULL);
  struct map m;

  write_fails (h, 2 * MiB, 4096, EIO);
  expect_bytes (h, 2 * MiB, MiB, 0);             /* reads succeed */
  write_fails (h, 3 * MiB, 4096, EIO);
  NBD_FAILS (nbd_pread (h, (char [4096]) { 0 }, 4096, 3 * MiB, 0), EIO);
  NBD_FAILS (nbd_trim (h, MiB, 2 * MiB, 0), EIO);
  NBD_FAILS (nbd_trim (h, MiB, 3 * MiB, 0), EIO);

  /* Toggled twice: a normal empty zone again. */
  write_pattern (h, 5 * MiB, 4096, 1);
  expect_zone_wp (h, 5 * MiB, MiB, 5 * MiB + 4096);

  /* READONLY reads its data everywhere; OFFLINE reads nothing. */
  m = get_map (h);
  for (uint64_t o = 2 * MiB; o < 3 * MiB; o += 512)
    CHECK_EQ (m.flags[o / 512], 0);
  for (uint64_t o = 3 * MiB; o < 4 * MiB; o += 512)
    CHECK_EQ (m.flags[o / 512], LIBNBD_STATE_HOLE);
  free (m.flags);

  /* reset-all leaves them alone. */
  NBD_OK (nbd_trim (h, 8 * MiB, 0, 0));
  write_fails (h, 2 * MiB, 4096, EIO);
  NBD_FAILS (nbd_pread (h, (char [4096]) { 0 }, 4096, 3 * MiB, 0), EIO);
  expect_zone_wp (h, 5 * MiB, MiB, 5 * MiB);
  nbd_close (h);
}

/* Without memory backing the zone rules still hold; reads give zeros. */
static void
test_not_memory_backed (void)
{
  struct nbd_handle *h = connect_dev ("size=8", "zone_size=1", NULL);

  write_pattern (h, 0, 8192, 1);
  write_fails (h, 0, 4096, EIO);
  expect_bytes (h, 0, 16384, 0);
  expect_zone_wp (h, 0, MiB, 8192);
  nbd_close (h);
}

int
main (void)
{
  const char *plugin = getenv ("ZONEDNULL_PLUGIN");

  if (plugin == NULL || *plugin == '\0') {
    fprintf (stderr, "%s: ZONEDNULL_PLUGIN is not set; run through "
             "'make check'\n", __FILE__);
    return 77;
  }

  test_data_path ();
  test_trim ();
  test_zone_capacity ();
  test_runt_zone ();
  test_limits ();
  test_block_size ();
  test_readonly_offline ();
  test_not_memory_backed ();
  return EXIT_SUCCESS;
}
