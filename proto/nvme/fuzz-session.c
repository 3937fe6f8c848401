/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: arbitrary bytes from a host into NVMe/TCP sessions.
 *
 * The first byte picks where the bytes go: a fresh connection (they
 * must make the handshake themselves), a controller's admin queue past
 * ICReq, Connect and CC.EN (the commands it serves only then), or one
 * of its I/O queues past those (the valid prelude is built here, so
 * that the fuzzer's bytes reach the commands without guessing a
 * digest); and whether the hosts must authenticate first (DH-HMAC-CHAP,
 * the Authentication Send and Receive messages).  The rest is cut into pieces at points
 * chosen by its own bytes, as the event loop would read them.
 *
 * Invariants checked: a session consumes no more than it was given,
 * keeps its output under the bound it asked room for plus its R2Ts, and
 * every write pointer stays inside its zone; namespace 2's commands run
 * as jobs of the program's workers (offload), some answered only once
 * their session is gone; sanitizers do the rest
 * (leaks included: every session is freed, admin queue first, as a
 * host that vanishes would leave them).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/zoned.h"
#include "internal.h"
#include "fuzz-finish.h"

static struct served_device devices[2];
static struct nvme_served sv = {
  .program = "fuzz-nvme-session", .devices = devices, .nr_devices = 2,
  .traddr = "127.0.0.1", .trsvcid = "4420", .max_queues = 2,
  .queue_depth = 32, .subnqn = "nqn.2026-12.org.zonednull:fuzz:4420",
};

/* The same subsystem, its hosts with secrets (--nvme-host). */
static struct nvme_served sv_auth;
static struct nvme_host_secret secrets[2];

static unsigned tags_left, writes_seen;
static uint64_t parked_ids[64];
static unsigned nr_parked;
static size_t budget;

static struct admission
admit (void *owner, void *s, const struct data_request *rq)
{
  (void) owner;
  (void) s;
  if (tags_left == 0)
    return (struct admission) { ADMIT_LATER, 0 };
  tags_left--;
  if (rq->write && ++writes_seen % 3 == 0 && nr_parked < 64) {
    parked_ids[nr_parked++] = rq->id;
    return (struct admission) { ADMIT_PARK, 0 };
  }
  return (struct admission) { ADMIT_NOW, 0 };
}

static bool
room (void *owner, size_t queued, size_t reply)
{
  (void) owner;
  return queued == 0 || queued + reply <= budget;
}

/* The program's workers, played in order on this thread: namespace 2's
 * commands that may wait for a disk queue here, and drain runs them and
 * answers them, but for the newest one after every other offload, which
 * may be left for the end, to be answered once its session is gone (as
 * when its connection closed), with done (NULL, job).  A job that the
 * scheduler would try at once (try_run) is tried when none is queued.
 */
static struct served_job *jobs[64];
static unsigned nr_jobs, nr_offloads;
static struct nvme_session *job_session;

static bool
offload (void *owner, struct served_job *job)
{
  (void) owner;
  if (job->try_run && nr_jobs == 0 && job->try_run (job)) {
    job->done (job_session, job);
    return true;
  }
  if (nr_jobs == 64)
    return false;
  jobs[nr_jobs++] = job;
  return true;
}

/* Runs and answers the jobs queued, but the newest after every other
 * offload; with session NULL, all of them, answered to no one.
 */
static void
complete_jobs (struct nvme_session *session)
{
  unsigned n = nr_jobs;

  if (session && n > 0 && ++nr_offloads % 2 == 0)
    n--;
  for (unsigned i = 0; i < n; i++) {
    jobs[i]->run (jobs[i]);
    jobs[i]->done (session, jobs[i]);
  }
  memmove (jobs, jobs + n, (nr_jobs - n) * sizeof jobs[0]);
  nr_jobs -= n;
}

static void
ignore_abort (void *owner)
{
  (void) owner;
}

static void
ignore_idle (void *owner, unsigned ms)
{
  (void) owner;
  (void) ms;
}

static void
setup (void)
{
  struct zn_config cfg;
  char err[256] = "";

  zn_config_init (&cfg);
  cfg.size = 8;
  cfg.zone_size = 1;
  cfg.zone_max_open = 2;
  cfg.zone_max_active = 3;
  cfg.memory_backed = true;
  for (unsigned i = 0; i < 2; i++) {
    devices[i].dev = zn_dev_create (&cfg, err, sizeof err);
    if (devices[i].dev == NULL) {
      fprintf (stderr, "fuzz-nvme-session: %s\n", err);
      abort ();
    }
  }
  /* Namespace 2 as a device with backing_dir: its commands go to the
   * workers.
   */
  devices[1].offload = true;
  sv.admit = admit;
  sv.finish = fuzz_finish;
  sv.offload = offload;
  sv.room = room;
  sv.fits = room;
  sv.abort = ignore_abort;
  sv.idle_timeout = ignore_idle;
  if (nvme_auth_parse_host ("nqn.2014-08.org.nvmexpress:uuid:fuzz:"
                       "DHHC-1:00:ERERERERERERERERERERERERERERERERERERERERERHYIEm8:",
                       &secrets[0])
      || nvme_auth_parse_host ("nqn.2014-08.org.nvmexpress:uuid:seed:"
                          "DHHC-1:00:ERERERERERERERERERERERERERERERERERERERERERHYIEm8:"
                          "DHHC-1:00:ERERERERERERERERERERERERERERERERERERERERERHYIEm8:",
                          &secrets[1]))
    abort ();
  sv_auth = sv;
  sv_auth.hosts = secrets;
  sv_auth.nr_hosts = 2;
  sv_auth.auth_required = true;
}

static void
check_zones (struct zn_dev *dev)
{
  struct zn_zone zones[8];
  unsigned n = zn_report_zones (dev, 0, zones, 8);

  for (unsigned i = 0; i < n; i++)
    if (zones[i].wp != UINT64_MAX
        && (zones[i].wp < zones[i].start
            || zones[i].wp > zones[i].start + zones[i].len))
      abort ();
}

/* Output drained as a host reads it. */
static void
drain (struct nvme_session *s)
{
  if (s == job_session)
    complete_jobs (s);
  for (unsigned i = 0; i < nr_parked; i++)
    nvme_session_resume (s, parked_ids[i], i % 2 ? -5 /* EIO */ : 0);
  nr_parked = 0;
  while (nvme_session_complete_one (s))
    ;
  for (unsigned i = 0; i < fuzz_nr_delayed; i++)
    nvme_session_release (s, fuzz_delayed_ids[i]);
  fuzz_nr_delayed = 0;
  nvme_session_sent (s, nvme_session_ready (s));
}

static void
feed_all (struct nvme_session *s, const unsigned char *p, size_t len)
{
  tags_left = 1000;
  budget = 1 << 30;
  if (nvme_session_input (s, p, len) != (long) len)
    abort ();                   /* the prelude is valid */
  drain (s);
}

/* ICReq, then Connect for qid of controller cntlid. */
static uint16_t
prelude (struct nvme_session *s, uint16_t qid, uint16_t cntlid)
{
  unsigned char ic[PDU_IC_LEN] = { PDU_IC_REQ, 0, PDU_IC_LEN, 0 };
  unsigned char cmd[PDU_CMD_LEN + 1024] = { PDU_CAPSULE_CMD, 0, PDU_CMD_LEN,
                                            PDU_CMD_LEN };
  unsigned char *q = cmd + PDU_CH_LEN, *data = cmd + PDU_CMD_LEN;
  const unsigned char *out;
  size_t len;

  put_le32 (ic + 4, PDU_IC_LEN);
  feed_all (s, ic, sizeof ic);
  put_le32 (cmd + 4, sizeof cmd);
  q[0] = 0x7f;
  q[4] = 1;                     /* Connect */
  put_le32 (q + SQE_SGL_LEN, 1024);
  q[SQE_SGL_TYPE] = SGL_DATA_OFFSET;
  put_le32 (q + 40, (uint32_t) qid << 16);
  put_le32 (q + 44, 15);
  put_le16 (data + 16, cntlid);
  strcpy ((char *) data + 256, sv.subnqn);
  strcpy ((char *) data + 512, "nqn.2014-08.org.nvmexpress:uuid:fuzz");
  tags_left = 1000;
  budget = 1 << 30;
  if (nvme_session_input (s, cmd, sizeof cmd) != (long) sizeof cmd)
    abort ();
  out = nvme_session_output (s, &len);
  if (len < PDU_RESP_LEN || out[0] != PDU_CAPSULE_RESP
      || get_le16 (out + 22) != 0)
    abort ();
  cntlid = get_le16 (out + 8);
  drain (s);
  return cntlid;
}

static void
enable (struct nvme_session *s)
{
  unsigned char cmd[PDU_CMD_LEN] = { PDU_CAPSULE_CMD, 0, PDU_CMD_LEN, 0 };
  unsigned char *q = cmd + PDU_CH_LEN;

  put_le32 (cmd + 4, sizeof cmd);
  q[0] = 0x7f;
  q[4] = 0;                     /* Property Set CC */
  put_le32 (q + 44, 0x14);
  put_le32 (q + 48, 1 | 6 << 4 | 6 << 16 | 4 << 20);
  feed_all (s, cmd, sizeof cmd);
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  struct nvme_session *admin = NULL, *io = NULL, *s;
  const struct nvme_served *served;
  unsigned char *pending = NULL;
  size_t pending_len = 0, pos = 1;

  if (devices[0].dev == NULL)
    setup ();
  if (size == 0)
    return 0;
  served = data[0] / 3 % 2 ? &sv_auth : &sv;
  switch (data[0] % 3) {
  case 0:
    s = admin = nvme_session_new (served, NULL);
    break;
  case 1:
    s = admin = nvme_session_new (served, NULL);
    prelude (admin, 0, 0xffff);
    enable (admin);
    break;
  default: {
    uint16_t cntlid;

    admin = nvme_session_new (served, NULL);
    cntlid = prelude (admin, 0, 0xffff);
    enable (admin);
    s = io = nvme_session_new (served, NULL);
    job_session = io;
    prelude (io, 1, cntlid);
    break;
  }
  }

  while (pos < size) {
    size_t piece = 1 + data[pos] * 64u;
    unsigned char *p;
    long used;

    if (piece > size - pos)
      piece = size - pos;
    p = realloc (pending, pending_len + piece);
    if (p == NULL)
      break;
    pending = p;
    memcpy (pending + pending_len, data + pos, piece);
    pending_len += piece;
    pos += piece;

    tags_left = data[pos - piece] % 8;
    budget = (size_t) (data[pos - piece] >> 3) * 4096;
    used = nvme_session_input (s, pending, pending_len);
    if (used < 0)
      break;
    if ((size_t) used > pending_len)
      abort ();
    memmove (pending, pending + used, pending_len - (size_t) used);
    pending_len -= (size_t) used;
    drain (s);
  }
  nr_parked = 0;
  fuzz_nr_delayed = 0;
  check_zones (devices[0].dev);
  check_zones (devices[1].dev);
  free (pending);
  nvme_session_free (admin);
  nvme_session_free (io);
  job_session = NULL;
  complete_jobs (NULL);
  check_zones (devices[1].dev);
  return 0;
}
