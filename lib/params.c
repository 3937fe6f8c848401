/* The device's KEY=VALUE parameters, for the nbdkit plugin,
 * zonednull-server and zonednull-ublk alike: one parser, so that a value
 * is accepted or refused, with the same message, by every front end, and
 * a command line moves between them unchanged.  Sizes are MiB when bare
 * (as in null_blk's configfs), or with a suffix that must still come to
 * whole MiB.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "params.h"

#define MIB (UINT64_C (1) << 20)

static int
bad (char *err, size_t errlen, const char *fmt, const char *key,
     const char *value)
{
  char rule[200];

  snprintf (rule, sizeof rule, fmt, key, value);
  snprintf (err, errlen, "%s", rule);
  return -1;
}

/* Digits only, as the kernel's kstrtoull (base 0: 0x hex, 0 octal):
 * strtoull alone would take leading blanks and a sign (" 7" and "-1",
 * which it wraps to 2^64 - 1).
 */
static int
parse_u64 (const char *key, const char *value, uint64_t *out, char *err,
           size_t errlen)
{
  char *end;

  if (value[0] < '0' || value[0] > '9')
    return bad (err, errlen, "%s=%s: expected a non-negative integer", key, value);
  errno = 0;
  *out = strtoull (value, &end, 0);
  if (errno == ERANGE)
    return bad (err, errlen, "%s=%s: number out of range", key, value);
  if (*end != '\0')
    return bad (err, errlen, "%s=%s: expected a non-negative integer", key, value);
  return 0;
}

static int
parse_u32 (const char *key, const char *value, uint32_t *out, char *err,
           size_t errlen)
{
  uint64_t v;

  if (parse_u64 (key, value, &v, err, errlen) == -1)
    return -1;
  if (v > UINT32_MAX)
    return bad (err, errlen, "%s=%s: number out of range (at most 4294967295)",
                key, value);
  *out = (uint32_t) v;
  return 0;
}

static int
parse_positive (const char *key, const char *value, uint32_t *out, char *err,
                size_t errlen)
{
  if (parse_u32 (key, value, out, err, errlen) == -1)
    return -1;
  if (*out == 0)
    return bad (err, errlen, "%s=%s: must be at least 1", key, value);
  return 0;
}

/* A bare number is MiB; 64M, 1G, 1024K... are bytes with a binary suffix. */
static int
parse_mib (const char *key, const char *value, uint64_t *mib, char *err,
           size_t errlen)
{
  static const char suffixes[] = "KMGTPE";
  size_t len = strlen (value);
  const char *s;
  uint64_t n, bytes;
  char *end;
  unsigned shift;

  if (len > 2 && value[0] == '0' && (value[1] == 'x' || value[1] == 'X')
      ? strspn (value + 2, "0123456789abcdefABCDEF") == len - 2
      : len > 0 && strspn (value, "0123456789") == len)
    return parse_u64 (key, value, mib, err, errlen);

  errno = 0;
  n = strtoull (value, &end, 10);
  if (value[0] < '0' || value[0] > '9')
    return bad (err, errlen, "%s=%s: expected MiB (a bare number) or a size "
                "such as 64M or 1G", key, value);
  if (errno == ERANGE)
    return bad (err, errlen, "%s=%s: size out of range", key, value);
  s = strchr (suffixes, *end & ~0x20);
  if (s == NULL || *end == '\0'
      || (end[1] != '\0' && strcasecmp (end + 1, "iB") != 0
          && strcasecmp (end + 1, "B") != 0))
    return bad (err, errlen, "%s=%s: expected MiB (a bare number) or a size "
                "such as 64M or 1G", key, value);
  shift = 10 * (unsigned) (s - suffixes + 1);
  if (n > (UINT64_MAX >> shift))
    return bad (err, errlen, "%s=%s: size out of range", key, value);
  bytes = n << shift;
  if (bytes % MIB)
    return bad (err, errlen, "%s=%s: must be a whole number of MiB (null_blk "
                "sizes are in MiB; a bare number means MiB)", key, value);
  *mib = bytes / MIB;
  return 0;
}

static int
parse_bool (const char *key, const char *value, bool *b, char *err,
            size_t errlen)
{
  static const char *const yes[] = { "1", "true", "on", "yes" };
  static const char *const no[] = { "0", "false", "off", "no" };

  for (size_t i = 0; i < 4; i++) {
    if (strcasecmp (value, yes[i]) == 0) {
      *b = true;
      return 0;
    }
    if (strcasecmp (value, no[i]) == 0) {
      *b = false;
      return 0;
    }
  }
  return bad (err, errlen, "%s=%s: expected a boolean (1/0, true/false, on/off)",
              key, value);
}

static int
add_cond (struct zn_params *p, const char *key, const char *value,
          bool offline, char *err, size_t errlen)
{
  struct cond_setting *c;
  uint64_t sector;

  if (parse_u64 (key, value, &sector, err, errlen) == -1)
    return -1;
  c = realloc (p->conds, (p->nr_conds + 1) * sizeof *c);
  if (c == NULL)
    return bad (err, errlen, "%s=%s: out of memory", key, value);
  p->conds = c;
  p->conds[p->nr_conds++] = (struct cond_setting) {
    .offline = offline, .sector = sector,
  };
  return 0;
}

void
params_init (struct zn_params *p)
{
  memset (p, 0, sizeof *p);
  zn_config_init (&p->cfg);
  zn_queue_config_init (&p->queue);
  p->nr_devices = 1;
}

void
params_free (struct zn_params *p)
{
  free (p->conds);
  p->conds = NULL;
  p->nr_conds = 0;
  for (size_t i = 0; i < p->nr_badblocks; i++)
    free (p->badblocks[i]);
  free (p->badblocks);
  p->badblocks = NULL;
  p->nr_badblocks = 0;
}

/* The keys that only store a value, with null_blk's names and units. */
enum key_kind { K_MIB, K_U32, K_U64, K_BOOL, K_POSITIVE };
struct plain_key {
  const char *name;
  enum key_kind kind;
  size_t offset;                /* in struct zn_params */
};
#define CFG(field) offsetof (struct zn_params, cfg.field)
#define QUEUE(field) offsetof (struct zn_params, queue.field)
static const struct plain_key plain_keys[] = {
  { "size", K_MIB, CFG (size) },
  { "zone_size", K_MIB, CFG (zone_size) },
  { "zone_capacity", K_MIB, CFG (zone_capacity) },
  { "zone_nr_conv", K_U32, CFG (zone_nr_conv) },
  { "zone_max_open", K_U32, CFG (zone_max_open) },
  { "zone_max_active", K_U32, CFG (zone_max_active) },
  { "blocksize", K_U32, CFG (blocksize) },
  { "bs", K_U32, CFG (blocksize) },
  { "max_sectors", K_U32, CFG (max_sectors) },
  { "memory_backed", K_BOOL, CFG (memory_backed) },
  { "cache_size", K_MIB, CFG (cache_size) },
  { "device_lock", K_BOOL, CFG (device_lock) },
  { "pipeline_zoned_writes", K_BOOL, CFG (pipeline_zoned_writes) },
  { "pipeline_wait_ms", K_POSITIVE, CFG (pipeline_wait_ms) },
  { "pipeline_max_waiting", K_POSITIVE, CFG (pipeline_max_waiting) },
  { "irqmode", K_U32, QUEUE (irqmode) },
  { "completion_nsec", K_U64, QUEUE (completion_nsec) },
  { "hw_queue_depth", K_U32, QUEUE (hw_queue_depth) },
  { "shared_tags", K_BOOL, QUEUE (shared_tags) },
  { "host_tags", K_BOOL, QUEUE (shared_tags) },
  { "shared_tag_bitmap", K_BOOL, QUEUE (shared_tag_bitmap) },
  { "mbps", K_U32, QUEUE (mbps) },
};

/* Attributes of newer kernels: zn_dev_create refuses the ones the chosen
 * kernel lacks, so which were given is recorded too.
 */
struct newer_key {
  const char *name;
  enum key_kind kind;
  size_t offset;
  uint32_t bit;
};
static const struct newer_key newer_keys[] = {
  { "zone_full", K_BOOL, CFG (zone_full), ZN_GIVEN_ZONE_FULL },
  { "zone_append_max_sectors", K_U32, CFG (zone_append_max_sectors),
    ZN_GIVEN_ZONE_APPEND_MAX_SECTORS },
  { "fua", K_BOOL, CFG (fua), ZN_GIVEN_FUA },
  { "badblocks_once", K_BOOL, CFG (badblocks_once), ZN_GIVEN_BADBLOCKS_ONCE },
  { "badblocks_partial_io", K_BOOL, CFG (badblocks_partial_io),
    ZN_GIVEN_BADBLOCKS_PARTIAL_IO },
};

int
params_set (struct zn_params *p, const char *arg, char *err, size_t errlen)
{
  char key[64];
  const char *eq = strchr (arg, '=');
  size_t klen;

  if (eq == NULL || eq == arg) {
    snprintf (err, errlen, "'%s': parameters are KEY=VALUE", arg);
    return -1;
  }
  klen = (size_t) (eq - arg);
  if (klen >= sizeof key) {
    snprintf (err, errlen, "unknown parameter '%.*s'", (int) klen, arg);
    return -1;
  }
  memcpy (key, arg, klen);
  key[klen] = '\0';
  return params_set_key (p, key, eq + 1, err, errlen);
}

int
params_set_key (struct zn_params *p, const char *key, const char *value,
                char *err, size_t errlen)
{
  for (size_t i = 0; i < sizeof plain_keys / sizeof plain_keys[0]; i++) {
    const struct plain_key *k = &plain_keys[i];
    void *field = (char *) p + k->offset;

    if (strcmp (key, k->name) != 0)
      continue;
    if (k->offset == CFG (blocksize))      /* messages say bs for bs= */
      p->cfg.blocksize_key = k->name;
    switch (k->kind) {
    case K_MIB: return parse_mib (key, value, field, err, errlen);
    case K_U32: return parse_u32 (key, value, field, err, errlen);
    case K_U64: return parse_u64 (key, value, field, err, errlen);
    case K_BOOL: return parse_bool (key, value, field, err, errlen);
    case K_POSITIVE: return parse_positive (key, value, field, err, errlen);
    }
  }
  if (strcmp (key, "kernel") == 0) {
    if (zn_kernel_parse (value, &p->cfg.kernel) < 0)
      return bad (err, errlen, "%s=%s: must be 6.1, 6.12 or 7.3, the kernels "
                  "whose null_blk zonednull models", key, value);
    return 0;
  }
  for (size_t i = 0; i < sizeof newer_keys / sizeof newer_keys[0]; i++) {
    const struct newer_key *k = &newer_keys[i];
    void *field = (char *) p + k->offset;
    int r;

    if (strcmp (key, k->name) != 0)
      continue;
    r = k->kind == K_BOOL ? parse_bool (key, value, field, err, errlen)
                          : parse_u32 (key, value, field, err, errlen);
    if (r == 0)
      p->cfg.given |= k->bit;
    return r;
  }
  if (strcmp (key, "zoned") == 0) {
    bool zoned;

    if (parse_bool (key, value, &zoned, err, errlen) == -1)
      return -1;
    if (!zoned)
      return bad (err, errlen, "%s=%s: zonednull emulates null_blk's zoned "
                  "mode only", key, value);
    return 0;
  }
  if (strcmp (key, "zone_readonly") == 0)
    return add_cond (p, key, value, false, err, errlen);
  if (strcmp (key, "zone_offline") == 0)
    return add_cond (p, key, value, true, err, errlen);
  if (strcmp (key, "submit_queues") == 0) {
    uint64_t magnitude;
    char *end;

    /* null_blk's is an int, and <= 0 means 1. */
    if (value[0] != '-')
      return parse_u32 (key, value, &p->queue.submit_queues, err, errlen);
    if (value[1] < '0' || value[1] > '9')
      return bad (err, errlen, "%s=%s: expected an integer", key, value);
    errno = 0;
    magnitude = strtoull (value + 1, &end, 0);
    if (*end != '\0')
      return bad (err, errlen, "%s=%s: expected an integer", key, value);
    if (errno == ERANGE || magnitude > (uint64_t) INT32_MAX + 1)
      return bad (err, errlen, "%s=%s: number out of range (null_blk's is an "
                  "int, at least -2147483648)", key, value);
    p->queue.submit_queues = 1;
    return 0;
  }
  if (strcmp (key, "badblocks") == 0) {
    char **b = realloc (p->badblocks, (p->nr_badblocks + 1) * sizeof *b);

    if (b == NULL || (b[p->nr_badblocks] = strdup (value)) == NULL) {
      if (b)
        p->badblocks = b;
      return bad (err, errlen, "%s=%s: out of memory", key, value);
    }
    p->badblocks = b;
    p->nr_badblocks++;
    return 0;
  }
  if (strcmp (key, "nr_devices") == 0) {
    if (parse_u32 (key, value, &p->nr_devices, err, errlen) == -1)
      return -1;
    if (p->nr_devices == 0 || p->nr_devices > PARAMS_MAX_DEVICES)
      return bad (err, errlen, "%s=%s: must be from 1 to 1024 (null_blk's 0, "
                  "configfs devices only, has no meaning without configfs)",
                  key, value);
    return 0;
  }
  snprintf (err, errlen, "unknown parameter '%s' (see %s)", key,
            p->help ? p->help : "--help");
  return -1;
}

int
params_check (struct zn_params *p, char *err, size_t errlen)
{
  if (zn_queue_config_check (&p->queue, err, errlen) < 0)
    return -1;
  /* All devices' zone tables at once, before any is allocated. */
  return zn_zone_table_check (&p->cfg, p->nr_devices, err, errlen);
}

int
params_apply (const struct zn_params *p, struct zn_dev *dev, char *err,
              size_t errlen)
{
  const struct zn_geometry *geo = zn_dev_geometry (dev);

  for (size_t i = 0; i < p->nr_conds; i++) {
    const struct cond_setting *s = &p->conds[i];
    const char *key = s->offline ? "zone_offline" : "zone_readonly";
    int r = s->offline ? zn_zone_set_offline (dev, s->sector)
                       : zn_zone_set_readonly (dev, s->sector);

    if (r == 0)
      continue;
    if (s->sector >= geo->capacity)
      snprintf (err, errlen, "%s=%" PRIu64 ": sector is past the end of the "
                "device (%" PRIu64 " sectors); it must lie in a sequential zone",
                key, s->sector, geo->capacity);
    else if (s->sector / geo->zone_sectors < geo->nr_conv)
      snprintf (err, errlen, "%s=%" PRIu64 ": sector is in conventional zone "
                "%" PRIu64 "; only sequential zones can be made %s",
                key, s->sector, s->sector / geo->zone_sectors,
                s->offline ? "offline" : "read-only");
    else
      snprintf (err, errlen, "%s=%" PRIu64 ": %s", key, s->sector,
                strerror (-r));
    return -1;
  }
  for (size_t i = 0; i < p->nr_badblocks; i++)
    if (params_apply_badblocks (dev, p->badblocks[i], err, errlen) == -1)
      return -1;
  return 0;
}

int
params_apply_badblocks (struct zn_dev *dev, const char *spec,
                        char *err, size_t errlen)
{
  size_t before = zn_badblocks_list (dev, NULL, NULL, 0);
  int r = zn_badblocks_parse (dev, spec);

  if (r == -ENOSPC) {
    snprintf (err, errlen, "badblocks=%s: the bad block table is full: as "
              "the kernel's, it holds %d entries of at most %d sectors, "
              "and the settings before this one take %zu",
              spec, ZN_BADBLOCKS_MAX, ZN_BADBLOCKS_MAX_LEN, before);
    return -1;
  }
  if (r < 0) {
    snprintf (err, errlen, "badblocks=%s: expected +FIRST-LAST to add or "
              "-FIRST-LAST to remove an inclusive range of 512-byte "
              "sectors, with FIRST <= LAST", spec);
    return -1;
  }
  return 0;
}
