/* SPDX-License-Identifier: BSD-3-Clause */
/* zonednull-fio: the zone hooks, over the zone control channel. */
#include <errno.h>

#include "internal.h"

/* Errors are fio's: a hook that fails sets errno, which fio reports and
 * makes the job's error.
 */
static int
fail_hook (int r)
{
  errno = -r;
  return r;
}

int
zf_get_zoned_model (struct thread_data *td, struct fio_file *f,
                    enum zbd_zoned_model *model)
{
  struct zf_fio_options *o = td->eo;

  (void) f;
  *model = o->zone_hooks ? ZBD_HOST_MANAGED : ZBD_NONE;
  return 0;
}

static void
to_fio_zone (struct zbd_zone *z, const struct zn_zone *zz)
{
  z->start = zz->start * ZN_SECTOR_SIZE;
  z->len = zz->len * ZN_SECTOR_SIZE;
  z->capacity = zz->capacity * ZN_SECTOR_SIZE;
  z->wp = zz->wp * ZN_SECTOR_SIZE;
  z->type = zz->type == ZN_ZONE_CONVENTIONAL ? ZBD_ZONE_TYPE_CNV
                                             : ZBD_ZONE_TYPE_SWR;
  switch (zz->cond) {
  case ZN_COND_READONLY:
  case ZN_COND_OFFLINE:
    /* As fio's blkzoned code: never use such a zone.  Their write
     * pointer is all-ones, which fio's zone parser would reject.
     */
    z->cond = ZBD_ZONE_COND_OFFLINE;
    z->wp = z->start;
    break;
  default:
    z->cond = (enum zbd_zone_cond) zz->cond;
    break;
  }
}

/* Fills zones[0 .. nr) from the zone holding offset on; returns the count
 * (0 only past the end, which fio treats as an error) or -errno.
 */
int
zf_report_zones (struct thread_data *td, struct fio_file *f, uint64_t offset,
                 struct zbd_zone *zones, unsigned int nr)
{
  enum { BATCH = 256 };
  struct zn_zone buf[BATCH];
  struct zn_client *zc = zf_get_client (td);
  unsigned done = 0;
  int ret = 0;

  (void) f;
  if (zc == NULL)
    return fail_hook (-EIO);
  while (done < nr) {
    uint64_t sector = offset / ZN_SECTOR_SIZE;
    int n = zn_client_report (zc, sector, buf,
                              nr - done < BATCH ? nr - done : BATCH);

    if (n < 0) {
      log_err ("%s: zone report at sector %llu: %s\n", ENGINE,
               (unsigned long long) sector, zn_client_error (zc));
      ret = n;
      break;
    }
    if (n == 0)
      break;
    for (int i = 0; i < n; i++)
      to_fio_zone (&zones[done + i], &buf[i]);
    done += (unsigned) n;
    offset = (buf[n - 1].start + buf[n - 1].len) * ZN_SECTOR_SIZE;
  }
  zf_put_client (td, zc);
  return ret < 0 ? fail_hook (ret) : (int) done;
}

static int
zone_op (struct thread_data *td, enum zn_zone_op op, uint64_t offset,
         uint64_t length)
{
  struct zn_client *zc = zf_get_client (td);
  int r;

  if (zc == NULL)
    return fail_hook (-EIO);
  r = zn_client_zone_mgmt (zc, op, offset / ZN_SECTOR_SIZE,
                           length / ZN_SECTOR_SIZE);
  if (r < 0)
    log_err ("%s: %s of %llu bytes at %llu: %s\n", ENGINE, zn_op_name (op),
             (unsigned long long) length, (unsigned long long) offset,
             zn_client_error (zc));
  zf_put_client (td, zc);
  return r < 0 ? fail_hook (r) : 0;
}

/* fio resets one zone at a time, after its I/O to the zone drained. */
int
zf_reset_wp (struct thread_data *td, struct fio_file *f, uint64_t offset,
             uint64_t length)
{
  (void) f;
  return zone_op (td, ZN_OP_RESET, offset, length);
}

#if FIO_IOOPS_VERSION >= 32
int
zf_finish_zone (struct thread_data *td, struct fio_file *f, uint64_t offset,
                uint64_t length)
{
  (void) f;
  return zone_op (td, ZN_OP_FINISH, offset, length);
}
#endif

/* The device's limits, read afresh: fio asks in its main process, before
 * any job state exists.
 */
static int
read_limits (struct thread_data *td, uint32_t *max_open, uint32_t *max_active)
{
  struct zn_control_info info;
  struct zn_client *zc = zf_get_client (td);
  int r;

  if (zc == NULL)
    return fail_hook (-EIO);
  r = zn_client_info (zc, &info);
  if (r < 0)
    log_err ("%s: reading the device's limits: %s\n", ENGINE,
             zn_client_error (zc));
  zf_put_client (td, zc);
  if (r < 0)
    return fail_hook (r);
  *max_open = info.max_open;
  *max_active = info.max_active;
  return 0;
}

int
zf_get_max_open_zones (struct thread_data *td, struct fio_file *f,
                       unsigned int *max_open_zones)
{
  uint32_t max_open, max_active;
  int r = read_limits (td, &max_open, &max_active);

  (void) f;
  if (r < 0)
    return r;
  *max_open_zones = max_open;
#if FIO_IOOPS_VERSION < 33
  /* Without a max-active hook, fio's open limit must also keep the
   * active limit: fio writes a zone until it is full and never closes
   * it, so every zone fio counts as open is an active one on the device.
   */
  if (max_active && (max_open == 0 || max_active < max_open))
    *max_open_zones = max_active;
#endif
  return 0;
}

#if FIO_IOOPS_VERSION >= 33
int
zf_get_max_active_zones (struct thread_data *td, struct fio_file *f,
                         unsigned int *max_active_zones)
{
  uint32_t max_open;

  (void) f;
  return read_limits (td, &max_open, max_active_zones);
}
#endif
