/* SPDX-License-Identifier: BSD-3-Clause */
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
#include <sys/stat.h>
#include <unistd.h>

#include "config/params.h"
#include "model/fault.h"

#define MIB (UINT64_C (1) << 20)

static int
bad (char *err, size_t errlen, const char *fmt, const char *key,
     const char *value)
{
  char rule[200];

  snprintf (rule, sizeof rule, fmt, key, value);
  snprintf (err, errlen, "%s", rule);
  return -EINVAL;
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

  if (parse_u64 (key, value, &v, err, errlen) < 0)
    return -EINVAL;
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
  if (parse_u32 (key, value, out, err, errlen) < 0)
    return -EINVAL;
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

  if (parse_u64 (key, value, &sector, err, errlen) < 0)
    return -EINVAL;
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
  free (p->backing_dir);
  p->backing_dir = NULL;
  p->cfg.backing_dir = NULL;
  free (p->log_writes);
  free (p->log_dir);
  p->log_writes = p->log_dir = NULL;
  p->cfg.log_writes = p->cfg.log_dir = NULL;
  for (size_t i = 0; i < p->nr_badblocks; i++)
    free (p->badblocks[i]);
  free (p->badblocks);
  p->badblocks = NULL;
  p->nr_badblocks = 0;
  for (size_t i = 0; i < p->nr_faults; i++)
    free (p->faults[i]);
  free (p->faults);
  p->faults = NULL;
  p->nr_faults = 0;
}

/* How a key's value is read, and where it goes. */
enum key_kind {
  K_MIB, K_U32, K_U64, K_BOOL, K_POSITIVE,    /* stored at offset */
  K_KERNEL, K_ZONED, K_READONLY, K_OFFLINE, K_SUBMIT_QUEUES, K_BADBLOCKS,
  K_NR_DEVICES, K_BACKING_DIR, K_LOG_WRITES, K_LOG_DIR, K_FAULT_ATTR,
  K_FAULT,
};

/* Every key, its parsing and its documentation in one row, so that a key
 * cannot be accepted without appearing in --help, nbdkit's config_help
 * and the man pages' PARAMETERS, which the build makes from these rows
 * (man/gen-params).  Rows are in the order those lists show.
 */
struct param_key {
  struct param_doc doc;
  enum key_kind kind;
  size_t offset;                /* in struct zn_params, for the stored kinds */
  /* ZN_GIVEN_* of a newer kernel's attribute: zn_dev_create refuses it,
   * even at its default, for a kernel that lacks it.
   */
  uint32_t given;
};
#define CFG(field) offsetof (struct zn_params, cfg.field)
#define QUEUE(field) offsetof (struct zn_params, queue.field)
#define DOC(name, unit, def, meaning) { name, unit, def, NULL, meaning }
#define ALIAS(name, unit, of) { name, unit, NULL, of, NULL }
static const struct param_key keys[] = {
  { DOC ("size", "<MiB>", "256000", "Device size"), K_MIB, CFG (size), 0 },
  { DOC ("zone_size", "<MiB>", "256", "Zone length, a power of 2"),
    K_MIB, CFG (zone_size), 0 },
  { DOC ("zone_capacity", "<MiB>", "0",
         "Writable part of a zone; 0: zone_size"),
    K_MIB, CFG (zone_capacity), 0 },
  { DOC ("zone_nr_conv", "<N>", "0", "Leading conventional zones"),
    K_U32, CFG (zone_nr_conv), 0 },
  { DOC ("zone_max_open", "<N>", "0", "Limit on open zones; 0: none"),
    K_U32, CFG (zone_max_open), 0 },
  { DOC ("zone_max_active", "<N>", "0",
         "Limit on open and closed zones; 0: none"),
    K_U32, CFG (zone_max_active), 0 },
  { DOC ("blocksize", "<BYTES>", "512", "Block size: 512, 1024, 2048, 4096"),
    K_U32, CFG (blocksize), 0 },
  { ALIAS ("bs", "<BYTES>", "blocksize"), K_U32, CFG (blocksize), 0 },
  { DOC ("max_sectors", "<SECTORS>", "0",
         "Largest unsplit request; 0: 255"),
    K_U32, CFG (max_sectors), 0 },
  { DOC ("memory_backed", "<BOOL>", "false", "Keep the written data"),
    K_BOOL, CFG (memory_backed), 0 },
  { DOC ("zoned", "true", "true", "Only the zoned mode is emulated"),
    K_ZONED, 0, 0 },
  { DOC ("zone_readonly", "<SECTOR>", NULL,
         "Toggle READONLY on its zone (repeatable)"), K_READONLY, 0, 0 },
  { DOC ("zone_offline", "<SECTOR>", NULL,
         "Toggle OFFLINE on its zone (repeatable)"), K_OFFLINE, 0, 0 },
  { DOC ("kernel", "6.1|6.12|7.3", "6.1", "Whose null_blk to emulate"),
    K_KERNEL, 0, 0 },
  { DOC ("zone_full", "<BOOL>", "false",
         "6.12+: sequential zones start FULL"),
    K_BOOL, CFG (zone_full), ZN_GIVEN_ZONE_FULL },
  { DOC ("zone_append_max_sectors", "<SECTORS>", "2147483647",
         "6.12+: append limit; 0: emulated"),
    K_U32, CFG (zone_append_max_sectors), ZN_GIVEN_ZONE_APPEND_MAX_SECTORS },
  { DOC ("fua", "<BOOL>", "true", "6.12+: advertise FUA with a cache"),
    K_BOOL, CFG (fua), ZN_GIVEN_FUA },
  { DOC ("badblocks_once", "<BOOL>", "false",
         "7.3: a bad range hit once is cleared"),
    K_BOOL, CFG (badblocks_once), ZN_GIVEN_BADBLOCKS_ONCE },
  { DOC ("badblocks_partial_io", "<BOOL>", "false",
         "7.3: transfer up to the first bad block"),
    K_BOOL, CFG (badblocks_partial_io), ZN_GIVEN_BADBLOCKS_PARTIAL_IO },
  { DOC ("nr_devices", "<N>", "1", "Devices nullb0... as exports, 1 to 1024"),
    K_NR_DEVICES, 0, 0 },
  { DOC ("irqmode", "0|1|2", "1",
         "2: complete completion_nsec after the tag"),
    K_U32, QUEUE (irqmode), 0 },
  { DOC ("completion_nsec", "<NS>", "10000", "Completion delay with irqmode=2"),
    K_U64, QUEUE (completion_nsec), 0 },
  { DOC ("hw_queue_depth", "<N>", "64", "Tags per hardware queue"),
    K_U32, QUEUE (hw_queue_depth), 0 },
  { DOC ("submit_queues", "<N>", "1",
         "Hardware queues; connection k feeds k mod N"),
    K_SUBMIT_QUEUES, 0, 0 },
  { DOC ("shared_tags", "<BOOL>", "false", "Devices share one tag set"),
    K_BOOL, QUEUE (shared_tags), 0 },
  { ALIAS ("host_tags", "<BOOL>", "shared_tags"),
    K_BOOL, QUEUE (shared_tags), 0 },
  { DOC ("shared_tag_bitmap", "<BOOL>", "false",
         "One pool of tags for all queues"),
    K_BOOL, QUEUE (shared_tag_bitmap), 0 },
  { DOC ("mbps", "<MiB/s>", "0", "Bandwidth limit per device; 0: none"),
    K_U32, QUEUE (mbps), 0 },
  { DOC ("pipeline_zoned_writes", "<BOOL>", "false",
         "Writes ahead of the write pointer wait"),
    K_BOOL, CFG (pipeline_zoned_writes), 0 },
  { DOC ("pipeline_wait_ms", "<MS>", "1000", "Longest wait of a pipelined write"),
    K_POSITIVE, CFG (pipeline_wait_ms), 0 },
  { DOC ("pipeline_max_waiting", "<N>", "1024",
         "Writes that may wait per zone"),
    K_POSITIVE, CFG (pipeline_max_waiting), 0 },
  { DOC ("device_lock", "<BOOL>", "false",
         "One lock for all zones, for benchmarks"),
    K_BOOL, CFG (device_lock), 0 },
  { DOC ("badblocks", "+FIRST-LAST|-FIRST-LAST", NULL,
         "Add or remove bad sectors (repeatable)"), K_BADBLOCKS, 0, 0 },
  { DOC ("timeout", "<I,P,S,T>", NULL,
         "Fault injection: requests never answered"),
    K_FAULT_ATTR, CFG (timeout_inject), 0 },
  { DOC ("requeue", "<I,P,S,T>", NULL,
         "Fault injection: requests requeued"),
    K_FAULT_ATTR, CFG (requeue_inject), 0 },
  { DOC ("fault", "<RULE>", NULL,
         "A fault rule, as zonednull fault add (repeatable)"),
    K_FAULT, 0, 0 },
  { DOC ("zone_reset_nsec", "<NS>", "0", "Latency of a zone reset"),
    K_U64, CFG (zone_reset_nsec), 0 },
  { DOC ("zone_open_nsec", "<NS>", "0", "Latency of a zone open"),
    K_U64, CFG (zone_open_nsec), 0 },
  { DOC ("zone_close_nsec", "<NS>", "0", "Latency of a zone close"),
    K_U64, CFG (zone_close_nsec), 0 },
  { DOC ("zone_finish_nsec", "<NS>", "0", "Latency of a zone finish"),
    K_U64, CFG (zone_finish_nsec), 0 },
  { DOC ("zone_append_nsec", "<NS>", "0", "Latency of a zone append"),
    K_U64, CFG (zone_append_nsec), 0 },
  { DOC ("cache_size", "<MiB>", "0", "Write cache, with memory_backed"),
    K_MIB, CFG (cache_size), 0 },
  { DOC ("backing_dir", "<DIR>", NULL,
         "Zones in files in DIR (zloop's layout), kept across restarts"),
    K_BACKING_DIR, 0, 0 },
  { DOC ("log_writes", "<FILE>", NULL,
         "Log every write and zone operation to a new FILE"),
    K_LOG_WRITES, 0, 0 },
  { DOC ("log_dir", "<DIR>", NULL,
         "Where the control channel may start write logs"),
    K_LOG_DIR, 0, 0 },
};
#define NR_KEYS (sizeof keys / sizeof keys[0])

const struct param_doc *
params_doc (size_t i)
{
  return i < NR_KEYS ? &keys[i].doc : NULL;
}

void
params_print_help (FILE *fp)
{
  for (size_t i = 0; i < NR_KEYS; i++) {
    const struct param_doc *d = &keys[i].doc;
    char key[64];

    snprintf (key, sizeof key, "%s=%s", d->name, d->unit);
    if (d->alias_of)
      fprintf (fp, "%-23s Alias of %s.\n", key, d->alias_of);
    else if (d->def)
      fprintf (fp, "%-23s %s (default %s).\n", key, d->meaning, d->def);
    else
      fprintf (fp, "%-23s %s.\n", key, d->meaning);
  }
  fputs ("MiB values also take a suffix (64M, 1G) but must be whole MiB.\n",
         fp);
}

static int
set_submit_queues (struct zn_params *p, const char *key, const char *value,
                   char *err, size_t errlen)
{
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

/* A repeatable key's value, after the others. */
static int
add_string (char ***list, size_t *nr, const char *key, const char *value,
            char *err, size_t errlen)
{
  char **b = realloc (*list, (*nr + 1) * sizeof *b);

  if (b == NULL || (b[*nr] = strdup (value)) == NULL) {
    if (b)
      *list = b;
    return bad (err, errlen, "%s=%s: out of memory", key, value);
  }
  *list = b;
  (*nr)++;
  return 0;
}

/* Absolute, since nbdkit and daemons change to / before the device is
 * made.
 */
static int
set_path (char **path, const char *key, const char *value, const char *what,
          char *err, size_t errlen)
{
  char cwd[4096];

  if (value[0] == '\0') {
    snprintf (err, errlen, "%s=: must name a %s", key, what);
    return -EINVAL;
  }
  free (*path);
  *path = NULL;
  if (value[0] == '/')
    *path = strdup (value);
  else if (getcwd (cwd, sizeof cwd) == NULL) {
    int e = errno;

    snprintf (err, errlen, "%s=%s: the current directory: %s", key, value,
              strerror (e));
    return -e;
  }
  else if (asprintf (path, "%s/%s", cwd, value) < 0)
    *path = NULL;
  if (*path == NULL)
    return bad (err, errlen, "%s=%s: out of memory", key, value);
  return 0;
}

static int
set_backing_dir (struct zn_params *p, const char *key, const char *value,
                 char *err, size_t errlen)
{
  if (set_path (&p->backing_dir, key, value, "directory", err, errlen) < 0)
    return -EINVAL;
  p->cfg.backing_dir = p->backing_dir;
  return 0;
}

static int
set_log_path (struct zn_params *p, const struct param_key *k,
              const char *key, const char *value, char *err, size_t errlen)
{
  bool file = k->kind == K_LOG_WRITES;
  char **path = file ? &p->log_writes : &p->log_dir;

  if (set_path (path, key, value, file ? "file" : "directory", err,
                errlen) < 0)
    return -EINVAL;
  if (file)
    p->cfg.log_writes = *path;
  else
    p->cfg.log_dir = *path;
  return 0;
}

static int
set_key (struct zn_params *p, const struct param_key *k, const char *key,
         const char *value, char *err, size_t errlen)
{
  void *field = (char *) p + k->offset;
  bool zoned;

  switch (k->kind) {
  case K_MIB: return parse_mib (key, value, field, err, errlen);
  case K_U32: return parse_u32 (key, value, field, err, errlen);
  case K_U64: return parse_u64 (key, value, field, err, errlen);
  case K_BOOL: return parse_bool (key, value, field, err, errlen);
  case K_POSITIVE: return parse_positive (key, value, field, err, errlen);
  case K_KERNEL:
    if (zn_kernel_parse (value, &p->cfg.kernel) < 0)
      return bad (err, errlen, "%s=%s: must be 6.1, 6.12 or 7.3, the kernels "
                  "whose null_blk zonednull models", key, value);
    return 0;
  case K_ZONED:
    if (parse_bool (key, value, &zoned, err, errlen) < 0)
      return -EINVAL;
    if (!zoned)
      return bad (err, errlen, "%s=%s: zonednull emulates null_blk's zoned "
                  "mode only", key, value);
    return 0;
  case K_READONLY: return add_cond (p, key, value, false, err, errlen);
  case K_OFFLINE: return add_cond (p, key, value, true, err, errlen);
  case K_SUBMIT_QUEUES:
    return set_submit_queues (p, key, value, err, errlen);
  case K_BADBLOCKS:
    return add_string (&p->badblocks, &p->nr_badblocks, key, value, err,
                       errlen);
  case K_FAULT:
    return add_string (&p->faults, &p->nr_faults, key, value, err, errlen);
  case K_FAULT_ATTR:
    return zn_fault_attr_parse (field, key, value, err, errlen);
  case K_BACKING_DIR: return set_backing_dir (p, key, value, err, errlen);
  case K_LOG_WRITES:
  case K_LOG_DIR: return set_log_path (p, k, key, value, err, errlen);
  case K_NR_DEVICES:
    if (parse_u32 (key, value, &p->nr_devices, err, errlen) < 0)
      return -EINVAL;
    if (p->nr_devices == 0 || p->nr_devices > PARAMS_MAX_DEVICES)
      return bad (err, errlen, "%s=%s: must be from 1 to 1024 (null_blk's 0, "
                  "configfs devices only, has no meaning without configfs)",
                  key, value);
    return 0;
  }
  return bad (err, errlen, "%s=%s: no parser for this key", key, value);
}

int
params_set (struct zn_params *p, const char *arg, char *err, size_t errlen)
{
  char key[64];
  const char *eq = strchr (arg, '=');
  size_t klen;

  if (eq == NULL || eq == arg) {
    snprintf (err, errlen, "'%s': parameters are KEY=VALUE", arg);
    return -EINVAL;
  }
  klen = (size_t) (eq - arg);
  if (klen >= sizeof key) {
    snprintf (err, errlen, "unknown parameter '%.*s'", (int) klen, arg);
    return -EINVAL;
  }
  memcpy (key, arg, klen);
  key[klen] = '\0';
  return params_set_key (p, key, eq + 1, err, errlen);
}

int
params_set_key (struct zn_params *p, const char *key, const char *value,
                char *err, size_t errlen)
{
  for (size_t i = 0; i < NR_KEYS; i++) {
    const struct param_key *k = &keys[i];
    int r;

    if (strcmp (key, k->doc.name) != 0)
      continue;
    if (k->offset == CFG (blocksize))      /* messages say bs for bs= */
      p->cfg.blocksize_key = k->doc.name;
    r = set_key (p, k, key, value, err, errlen);
    if (r == 0)
      p->cfg.given |= k->given;
    return r;
  }
  snprintf (err, errlen, "unknown parameter '%s' (see %s)", key,
            p->help ? p->help : "--help");
  return -EINVAL;
}

int
params_check (struct zn_params *p, char *err, size_t errlen)
{
  if (zn_queue_config_check (&p->queue, err, errlen) < 0)
    return -EINVAL;
  if (p->log_writes && p->nr_devices > 1) {
    snprintf (err, errlen, "log_writes=%s: one file logs one device, and "
              "nr_devices=%" PRIu32 " makes more; start a log for each "
              "with log_dir= and zonednull log start", p->log_writes,
              p->nr_devices);
    return -EINVAL;
  }
  /* All devices' zone tables at once, before any is allocated. */
  if (zn_zone_table_check (&p->cfg, p->nr_devices, err, errlen) < 0)
    return -EINVAL;
  /* null_blk takes a zone_nr_conv that leaves no sequential zone and
   * lowers it, saying so in the kernel's log; so does the device here.
   */
  {
    struct zn_geometry geo;

    if (zn_geometry_from_config (&p->cfg, &geo, err, errlen) == 0
        && geo.nr_conv != p->cfg.zone_nr_conv)
      fprintf (stderr, "zonednull: zone_nr_conv=%" PRIu32 ": changed to %"
               PRIu32 ", as null_blk changes it: of the device's %" PRIu32
               " zones at least one is sequential\n", p->cfg.zone_nr_conv,
               geo.nr_conv, geo.nr_zones);
  }
  return 0;
}

const struct zn_config *
params_device_config (const struct zn_params *p, uint32_t i,
                      struct zn_config *cfg, char *dir, size_t dirlen)
{
  *cfg = p->cfg;
  if (p->backing_dir && p->nr_devices > 1) {
    /* DIR is as new as DIR/nullbI, and the store makes a missing
     * directory but not its parent.  If DIR cannot be made, making
     * DIR/nullb0 fails and says why.
     */
    if (i == 0)
      (void) mkdir (p->backing_dir, 0700);
    snprintf (dir, dirlen, "%s/nullb%" PRIu32, p->backing_dir, i);
    cfg->backing_dir = dir;
    cfg->backing_dir_nofollow = true;
  }
  return cfg;
}

/* One badblocks setting; -1 with a message for a bad spec or a full table. */
static int
apply_badblocks (struct zn_dev *dev, const char *spec, char *err,
                 size_t errlen)
{
  size_t before = zn_badblocks_list (dev, NULL, NULL, 0);
  int r = zn_badblocks_parse (dev, spec);

  if (r == -ENOSPC) {
    snprintf (err, errlen, "badblocks=%s: the bad block table is full: as "
              "the kernel's, it holds %d entries of at most %d sectors, "
              "and the settings before this one take %zu",
              spec, ZN_BADBLOCKS_MAX, ZN_BADBLOCKS_MAX_LEN, before);
    return -ENOSPC;
  }
  if (r < 0) {
    snprintf (err, errlen, "badblocks=%s: expected +FIRST-LAST to add or "
              "-FIRST-LAST to remove an inclusive range of 512-byte "
              "sectors, with FIRST <= LAST", spec);
    return -EINVAL;
  }
  return 0;
}

bool
params_faults_given (const struct zn_params *p)
{
  const struct zn_config *c = &p->cfg;

  return p->nr_faults
         || c->timeout_inject.probability || c->requeue_inject.probability
         || c->zone_reset_nsec || c->zone_open_nsec || c->zone_close_nsec
         || c->zone_finish_nsec || c->zone_append_nsec;
}

int
params_apply (const struct zn_params *p, struct zn_dev *dev, char *err,
              size_t errlen)
{
  const struct zn_geometry *geo = zn_dev_geometry (dev);

  /* Fault rules are not the device's state: every start sets them. */
  for (size_t i = 0; i < p->nr_faults; i++) {
    struct zn_fault_rule rule;
    char why[256];

    if (zn_fault_rule_parse (p->faults[i], geo->capacity, geo->zone_sectors,
                             &rule, why, sizeof why) < 0) {
      snprintf (err, errlen, "fault=%s: %s", p->faults[i], why);
      return -EINVAL;
    }
    if (zn_fault_add (dev, &rule, NULL) < 0) {
      snprintf (err, errlen, "fault=%s: more than %d rules", p->faults[i],
                ZN_FAULT_MAX_RULES);
      return -EINVAL;
    }
  }

  /* A device that comes back from its backing_dir keeps the READONLY and
   * OFFLINE zones and bad blocks it had: these settings were applied
   * when it was made, and toggling them again would undo them.
   */
  if (zn_dev_restored (dev))
    return 0;

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
    return -EINVAL;
  }
  for (size_t i = 0; i < p->nr_badblocks; i++)
    if (apply_badblocks (dev, p->badblocks[i], err, errlen) < 0)
      return -EINVAL;
  return 0;
}
