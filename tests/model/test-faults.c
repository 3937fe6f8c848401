/* SPDX-License-Identifier: BSD-3-Clause */
/* Failures on demand in the model (lib/model/fault.h).
 *
 * The kernel's fault attribute, case by case from its rules (the checks of
 * lib/fault-inject.c's should_fail in their order: probability 0, times,
 * space, interval, the draw), then the fault rules on a device: which
 * requests a rule takes, when it fires, its counts, its reproducible
 * draws, what FAIL and FAIL_AFTER do to the model, the latencies, and the
 * refusals of bad rules with the word they name.
 */
#include <errno.h>
#include <string.h>

#include "../common/check.h"
#include "../common/dev.h"
#include "model/fault.h"
#include "model/zoned.h"
#include "util/fault-attr.h"

#define MIB_SECTORS 2048

static struct zn_fault_attr
attr (const char *text)
{
  struct zn_fault_attr a;
  char err[256] = "";

  if (zn_fault_attr_parse (&a, "timeout", text, err, sizeof err) < 0) {
    fprintf (stderr, "%s\n", err);
    exit (EXIT_FAILURE);
  }
  return a;
}

/* A string of '1' for each failing call and '0' for each passing one. */
static void
pattern (struct zn_fault_attr *a, uint64_t size, int calls, char *out)
{
  for (int i = 0; i < calls; i++)
    out[i] = zn_fault_attr_should_fail (a, size) ? '1' : '0';
  out[calls] = '\0';
}

static void
test_attr (void)
{
  struct zn_fault_attr a;
  char p[1024], err[256];
  int fails;

  /* Unset (an empty parameter) and the initializer: never. */
  a = attr ("");
  pattern (&a, 4096, 8, p);
  CHECK (strcmp (p, "00000000") == 0);

  /* Every call, no bound. */
  a = attr ("1,100,0,-1");
  pattern (&a, 4096, 6, p);
  CHECK (strcmp (p, "111111") == 0);
  CHECK_EQ (a.times, -1);

  /* interval 3: every third call. */
  a = attr ("3,100,0,-1");
  pattern (&a, 4096, 9, p);
  CHECK (strcmp (p, "001001001") == 0);

  /* times 2: the first two, then never again. */
  a = attr ("1,100,0,2");
  pattern (&a, 4096, 5, p);
  CHECK (strcmp (p, "11000") == 0);
  CHECK_EQ (a.times, 0);

  /* probability 0 counts nothing: the interval's count stays. */
  a = attr ("3,0,0,-1");
  pattern (&a, 4096, 9, p);
  CHECK (strcmp (p, "000000000") == 0);
  CHECK_EQ (a.count, 0);

  /* times 0 stops before space and interval are counted. */
  a = attr ("2,100,8192,0");
  pattern (&a, 4096, 4, p);
  CHECK (strcmp (p, "0000") == 0);
  CHECK_EQ (a.space, 8192);
  CHECK_EQ (a.count, 0);

  /* space 8192 with 4096-byte requests: the first is taken from space
   * (4096 left), then 4096 > 4096 is false and every call fails; space
   * stays at 4096.
   */
  a = attr ("1,100,8192,-1");
  pattern (&a, 4096, 4, p);
  CHECK (strcmp (p, "0111") == 0);
  CHECK_EQ (a.space, 4096);
  /* ... and a request of 0 bytes (a flush) passes while space is left,
   * taking nothing.
   */
  pattern (&a, 0, 3, p);
  CHECK (strcmp (p, "000") == 0);
  CHECK_EQ (a.space, 4096);

  /* space before interval: the calls space absorbs are not counted. */
  a = attr ("2,100,4097,-1");
  pattern (&a, 4096, 5, p);    /* 4097 > 4096: absorbed, 1 left; then
                                  counted 1 (pass), 2 (fail), 3, 4 */
  CHECK (strcmp (p, "00101") == 0);
  CHECK_EQ (a.space, 1);

  /* probability 50: about half, the same calls every time, and times
   * bounds the failures whatever the draws.
   */
  a = attr ("1,50,0,-1");
  pattern (&a, 4096, 1000, p);
  fails = 0;
  for (int i = 0; i < 1000; i++)
    fails += p[i] == '1';
  CHECK (fails > 400 && fails < 600);
  {
    struct zn_fault_attr b = attr ("1,50,0,-1");
    char q[1024];

    pattern (&b, 4096, 1000, q);
    CHECK (strcmp (p, q) == 0);
  }
  a = attr ("1,50,0,3");
  pattern (&a, 4096, 1000, p);
  fails = 0;
  for (int i = 0; i < 1000; i++)
    fails += p[i] == '1';
  CHECK_EQ (fails, 3);

  /* Refusals name the key. */
  static const char *const bad[] = {
    "1,101,0,-1", "1,50,0,-2", "1,50,-1,1", "1,50,0", "a,b,c,d",
    "1,50,0,1,", " 1,50,0,1", "1,50,0,1x", "-1,50,0,1",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = '\0';
    CHECK_EQ (zn_fault_attr_parse (&a, "requeue", bad[i], err, sizeof err),
              -EINVAL);
    CHECK (strncmp (err, "requeue: ", 9) == 0);
    CHECK (strstr (err, bad[i]) != NULL);
  }
}

static struct zn_dev *
make_dev (struct zn_config *c)
{
  c->memory_backed = true;
  return create (c);
}

static struct zn_config
small_config (void)
{
  /* 8 zones of 8 MiB, the first conventional. */
  return geometry_config (64, 8, 0, 1, 4096);
}

static struct zn_fault_rule
rule (struct zn_dev *dev, const char *spec)
{
  struct zn_fault_rule r;
  char err[256] = "";

  const struct zn_geometry *g = zn_dev_geometry (dev);

  if (zn_fault_rule_parse (spec, g->capacity, g->zone_sectors, &r, err,
                           sizeof err) < 0) {
    fprintf (stderr, "'%s': %s\n", spec, err);
    exit (EXIT_FAILURE);
  }
  return r;
}

static uint32_t
add (struct zn_dev *dev, const char *spec)
{
  struct zn_fault_rule r = rule (dev, spec);
  uint32_t id = 0;

  CHECK_EQ (zn_fault_add (dev, &r, &id), 0);
  CHECK (id != 0);
  return id;
}

static enum zn_fault_action
decide (struct zn_dev *dev, enum zn_fault_op op, uint64_t sector,
        uint64_t n, struct zn_fault *f)
{
  struct zn_fault local;

  if (!f)
    f = &local;
  zn_fault_decide (dev, op, sector, n, n * 512, f);
  return f->action;
}

static uint64_t
wp (struct zn_dev *dev, uint32_t zone)
{
  struct zn_zone z;

  CHECK_EQ (zn_report_zones (dev, (uint64_t) zone * 8 * MIB_SECTORS, &z, 1),
            1);
  return z.wp;
}

static void
test_rules (void)
{
  struct zn_config c = small_config ();
  struct zn_dev *dev = make_dev (&c);
  const uint64_t zs = 8 * MIB_SECTORS;
  struct zn_fault_rule list[ZN_FAULT_MAX_RULES];
  struct zn_fault f;
  static char buf[4096];
  enum zn_reason why;
  uint32_t id;
  int r;

  CHECK (!zn_fault_armed (dev));
  CHECK_EQ (decide (dev, ZN_FOP_WRITE, 2 * zs, 8, &f), ZN_FAULT_PASS);
  CHECK_EQ (f.delay_ns, 0);

  /* Writes to zone 2, twice, before they are applied. */
  id = add (dev, "op=write zone=2 error=EIO count=2");
  CHECK (zn_fault_armed (dev));
  CHECK_EQ (decide (dev, ZN_FOP_WRITE, 1 * zs, 8, NULL), ZN_FAULT_PASS);
  CHECK_EQ (decide (dev, ZN_FOP_READ, 2 * zs, 8, NULL), ZN_FAULT_PASS);
  CHECK_EQ (decide (dev, ZN_FOP_WRITE, 3 * zs, 8, NULL), ZN_FAULT_PASS);
  /* A request that only ends in the zone is in it. */
  CHECK_EQ (decide (dev, ZN_FOP_WRITE, 2 * zs - 8, 16, &f), ZN_FAULT_FAIL);
  CHECK_EQ (f.err, -EIO);
  CHECK_EQ (f.rule, id);
  CHECK_EQ (decide (dev, ZN_FOP_WRITE, 2 * zs, 8, &f), ZN_FAULT_FAIL);
  r = zn_fault_result (&f, 0, &why);
  CHECK_EQ (r, -EIO);
  CHECK_EQ (why, ZN_REASON_INJECTED);
  CHECK_EQ (wp (dev, 2), 2 * zs);     /* FAIL keeps the model untouched */
  /* The count ran out. */
  CHECK_EQ (decide (dev, ZN_FOP_WRITE, 2 * zs, 8, &f), ZN_FAULT_PASS);
  CHECK_EQ (zn_fault_list (dev, list, ZN_FAULT_MAX_RULES), 1);
  CHECK_EQ (list[0].id, id);
  CHECK_EQ (list[0].hits, 2);
  CHECK_EQ (list[0].matched, 3);
  CHECK_EQ (zn_fault_clear (dev, id), 0);
  CHECK_EQ (zn_fault_clear (dev, id), -ENOENT);
  CHECK (!zn_fault_armed (dev));

  /* when=after: the data lands and the wp moves, and the request fails. */
  add (dev, "op=write,append zone=3 error=ENOSPC when=after count=1");
  memset (buf, 0x5a, sizeof buf);
  CHECK_EQ (decide (dev, ZN_FOP_WRITE, 3 * zs, 8, &f), ZN_FAULT_FAIL_AFTER);
  why = ZN_REASON_NONE;
  r = zn_write_why (dev, buf, 3 * zs, 8, false, &why);
  r = zn_fault_result (&f, r, &why);
  CHECK_EQ (r, -ENOSPC);
  CHECK_EQ (why, ZN_REASON_INJECTED);
  CHECK_EQ (wp (dev, 3), 3 * zs + 8);
  memset (buf, 0, sizeof buf);
  CHECK_EQ (zn_read (dev, buf, 3 * zs, 8), 0);
  CHECK (buf[0] == 0x5a && buf[4095] == 0x5a);
  /* A request the model fails keeps the model's own error. */
  add (dev, "op=write zone=4 error=ENOSPC when=after");
  CHECK_EQ (decide (dev, ZN_FOP_WRITE, 4 * zs + 8, 8, &f),
            ZN_FAULT_FAIL_AFTER);
  why = ZN_REASON_NONE;
  r = zn_write_why (dev, buf, 4 * zs + 8, 8, false, &why);
  CHECK_EQ (zn_fault_result (&f, r, &why), -EIO);
  CHECK_EQ (why, ZN_REASON_NOT_AT_WP);
  CHECK_EQ (zn_fault_clear (dev, 0), 0);

  /* The first rule that fires decides; a timeout and a delay. */
  add (dev, "op=flush timeout count=1");
  add (dev, "op=flush delay=7");
  CHECK_EQ (decide (dev, ZN_FOP_FLUSH, 0, 0, &f), ZN_FAULT_TIMEOUT);
  CHECK_EQ (decide (dev, ZN_FOP_FLUSH, 0, 0, &f), ZN_FAULT_PASS);
  CHECK_EQ (f.delay_ns, 7000000);
  CHECK_EQ (zn_fault_clear (dev, 0), 0);

  /* A range in bytes, and nvme-status alone (EIO elsewhere). */
  add (dev, "offset=33554432 length=4096 nvme-status=1:b9");
  CHECK_EQ (decide (dev, ZN_FOP_WRITE, 65536 - 8, 8, &f), ZN_FAULT_PASS);
  CHECK_EQ (decide (dev, ZN_FOP_WRITE, 65536 + 8, 8, &f), ZN_FAULT_PASS);
  CHECK_EQ (decide (dev, ZN_FOP_RESET, 65536, zs, &f), ZN_FAULT_FAIL);
  CHECK_EQ (f.err, -EIO);
  CHECK_EQ (f.nvme_status, 0x1b9);
  CHECK_EQ (zn_fault_clear (dev, 0), 0);

  /* Probability with a seed: the same requests fire every time. */
  {
    char a[201], b[201], other[201];
    struct zn_dev *dev2 = make_dev (&c);
    int n = 0;

    add (dev, "op=read error=EIO probability=30,42");
    add (dev2, "op=read error=EIO probability=30,42");
    for (int i = 0; i < 200; i++) {
      a[i] = decide (dev, ZN_FOP_READ, 0, 8, NULL) == ZN_FAULT_FAIL ? '1' : '0';
      b[i] = decide (dev2, ZN_FOP_READ, 0, 8, NULL) == ZN_FAULT_FAIL ? '1' : '0';
      n += a[i] == '1';
    }
    a[200] = b[200] = '\0';
    CHECK (strcmp (a, b) == 0);
    CHECK (n > 30 && n < 90);
    zn_fault_clear (dev2, 0);
    add (dev2, "op=read error=EIO probability=30,43");
    for (int i = 0; i < 200; i++)
      other[i] = decide (dev2, ZN_FOP_READ, 0, 8, NULL) == ZN_FAULT_FAIL
                 ? '1' : '0';
    other[200] = '\0';
    CHECK (strcmp (a, other) != 0);
    zn_dev_destroy (dev2);
    CHECK_EQ (zn_fault_clear (dev, 0), 0);
  }

  /* At most ZN_FAULT_MAX_RULES rules. */
  for (int i = 0; i < ZN_FAULT_MAX_RULES; i++)
    add (dev, "op=read delay=1");
  {
    struct zn_fault_rule x = rule (dev, "op=read delay=1");

    CHECK_EQ (zn_fault_add (dev, &x, &id), -ENOSPC);
  }
  CHECK_EQ (zn_fault_clear (dev, 0), 0);
  zn_dev_destroy (dev);
}

static void
test_format (void)
{
  struct zn_config c = small_config ();
  struct zn_dev *dev = make_dev (&c);
  static const char *const specs[] = {
    "op=write zone=2 error=EIO count=2",
    "op=write,append,finish zone=1-3 error=ETOOMANYREFS when=after "
      "probability=25,9 delay=3",
    "timeout",
    "op=reset nvme-status=1:b8",
    "offset=4096 length=8192 delay=10",
  };

  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    struct zn_fault_rule a = rule (dev, specs[i]), b;
    char text[ZN_FAULT_SPEC_MAX], again[ZN_FAULT_SPEC_MAX];

    zn_fault_rule_format (&a, text, sizeof text);
    b = rule (dev, text);
    zn_fault_rule_format (&b, again, sizeof again);
    CHECK (strcmp (text, again) == 0);
    CHECK (a.ops == b.ops && a.first == b.first && a.last == b.last
           && a.err == b.err && a.nvme_status == b.nvme_status
           && a.after == b.after && a.timeout == b.timeout
           && a.count == b.count && a.probability == b.probability
           && a.seed == b.seed && a.delay_ms == b.delay_ms);
  }
  zn_dev_destroy (dev);
}

static void
test_refusals (void)
{
  struct zn_config c = small_config ();
  struct zn_dev *dev = make_dev (&c);
  static const struct { const char *spec, *names; } bad[] = {
    { "op=bogus error=EIO", "'op=bogus'" },
    { "op= error=EIO", "'op='" },
    { "zone=8 error=EIO", "'zone=8'" },
    { "zone=3-2 error=EIO", "'zone=3-2'" },
    { "error=EFOO", "'error=EFOO'" },
    { "nvme-status=8:1", "'nvme-status=8:1'" },
    { "nvme-status=0:0", "'nvme-status=0:0'" },
    { "when=later error=EIO", "'when=later'" },
    { "when=after", "when: " },
    { "timeout error=EIO", "timeout: " },
    { "op=read error=EIO when=after", "when=after: " },
    { "error=EIO when=after", "when=after: " },
    { "count=0 error=EIO", "'count=0'" },
    { "probability=0 error=EIO", "'probability=0'" },
    { "probability=101 error=EIO", "'probability=101'" },
    { "delay=3600001", "'delay=3600001'" },
    { "offset=1 length=512 error=EIO", "offset=1 length=512" },
    { "offset=0 error=EIO", "offset=0 length=0" },
    { "zone=1 offset=0 length=512 error=EIO", "'offset=0'" },
    { "op=read", "does nothing" },
    { "colour=red", "'colour=red'" },
    { "error", "'error'" },
  };

  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    struct zn_fault_rule r;
    char err[256] = "";

    const struct zn_geometry *g = zn_dev_geometry (dev);

    CHECK_EQ (zn_fault_rule_parse (bad[i].spec, g->capacity, g->zone_sectors,
                                   &r, err, sizeof err), -EINVAL);
    if (strstr (err, bad[i].names) == NULL || strncmp (err, "fault rule: ",
                                                       12) != 0) {
      fprintf (stderr, "'%s': '%s' does not name %s\n", bad[i].spec, err,
               bad[i].names);
      exit (EXIT_FAILURE);
    }
  }
  zn_dev_destroy (dev);
}

/* null_blk's timeout= and requeue= on the device, and the latencies. */
static void
test_device_attrs (void)
{
  struct zn_config c = small_config ();
  struct zn_dev *dev;
  char p[16];
  char err[256];
  struct zn_fault f;

  CHECK_EQ (zn_fault_attr_parse (&c.timeout_inject, "timeout", "2,100,0,-1",
                                 err, sizeof err), 0);
  CHECK_EQ (zn_fault_attr_parse (&c.requeue_inject, "requeue", "3,100,0,-1",
                                 err, sizeof err), 0);
  c.zone_reset_nsec = 20000000;
  c.zone_append_nsec = 1000;
  dev = make_dev (&c);
  CHECK (zn_fault_armed (dev));
  /* Every request counts for both; the 6th is due for both and is
   * requeued, as null_queue_rq does.
   */
  for (int i = 0; i < 6; i++) {
    enum zn_fault_action a = decide (dev, ZN_FOP_READ, 0, 8, NULL);

    p[i] = a == ZN_FAULT_TIMEOUT ? 'T' : a == ZN_FAULT_REQUEUE ? 'R' : '-';
  }
  p[6] = '\0';
  CHECK (strcmp (p, "-TRT-R") == 0);
  zn_dev_destroy (dev);

  c = small_config ();
  c.zone_reset_nsec = 20000000;
  c.zone_append_nsec = 1000;
  dev = make_dev (&c);
  CHECK_EQ (decide (dev, ZN_FOP_RESET, 2 * 8 * MIB_SECTORS, 8 * MIB_SECTORS,
                    &f), ZN_FAULT_PASS);
  CHECK_EQ (f.delay_ns, 20000000);
  decide (dev, ZN_FOP_APPEND, 2 * 8 * MIB_SECTORS, 8, &f);
  CHECK_EQ (f.delay_ns, 1000);
  decide (dev, ZN_FOP_READ, 0, 8, &f);
  CHECK_EQ (f.delay_ns, 0);
  /* A rule's delay adds to the latency. */
  add (dev, "op=reset delay=5");
  decide (dev, ZN_FOP_RESET, 0, 0, &f);
  CHECK_EQ (f.delay_ns, 25000000);
  zn_dev_destroy (dev);
}

int
main (void)
{
  test_attr ();
  test_rules ();
  test_format ();
  test_refusals ();
  test_device_attrs ();
  printf ("test-faults: all checks passed\n");
  return 0;
}
