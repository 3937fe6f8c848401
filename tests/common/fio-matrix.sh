# SPDX-License-Identifier: BSD-3-Clause
# The null_blk configuration matrix of fio's t/zbd/run-tests-against-nullb,
# shellcheck shell=sh
# scaled down, with short fio jobs through the engine on each device.
# Sourced by test-fio-matrix-*.sh after setting:
#   SIZE                 device size, MiB
#   ZONE_SIZE ZONE_CAP   MiB; the capacity is ZONE_SIZE or smaller
# The matrix then runs 0, 10, 66 and 100% conventional zones (100% is
# clamped to all but one zone, as null_blk clamps it), each without and
# with device limits on open and active zones.
#
# Each job must end with exit 0, no I/O error and, where it verifies,
# every byte written read back and checked; the zone report is then
# checked with the CLI (see check_zones).
. "$(dirname "$0")/../common/fio-lib.sh"

MAX_OPEN=4
MAX_ACTIVE=6
MIB=1048576

# jobs_on_device NAME KEY=VALUE...: every job on a fresh device.
jobs_on_device () {
  dev=$1
  shift
  start_server "$dev" size=$SIZE zone_size="$ZONE_SIZE" \
    zone_capacity="$ZONE_CAP" memory_backed=1 "$@"
  server=$pid
  nr_zones=$((SIZE / ZONE_SIZE))
  zbytes=$((ZONE_SIZE * MIB))
  cap=$((ZONE_CAP * MIB))
  nr_seq=$((nr_zones - conv))
  conv_bytes=$((conv * zbytes))
  seq_cap=$((nr_seq * cap))
  # fio's open limit: the device's, or none.  fio 3.33 has no max-active
  # hook, so the engine reports the smaller of the two limits.
  limit=
  case " $* " in *" zone_max_open="*) limit=--max_open_zones=$MAX_OPEN ;; esac

  # Sequential writes over the whole device, verified: every sequential
  # zone ends FULL and fio wrote the conventional zones plus the
  # sequential capacity.
  fio_verified "$dev-seq" --zonemode=zbd --rw=write --bs=128k \
    --iodepth=8 $limit
  [ "$write" -eq "$((conv_bytes + seq_cap))" ] ||
    fail "$dev-seq: wrote $write bytes, expected $((conv_bytes + seq_cap))"
  check_zones "$conv" full

  # Random writes to the sequential zones, verified, with fio's open
  # limit as the device reports it.  fio resets the zones it verifies
  # first, so the zones hold exactly what it wrote.
  io=$((seq_cap / 2 < 4 * MIB ? seq_cap / 2 : 4 * MIB))
  fio_verified "$dev-rand" --zonemode=zbd --rw=randwrite --bs=4k \
    --iodepth=16 --conns=2 --offset="$conv_bytes" --io_size="$io" $limit
  [ "$write" -eq "$io" ] || fail "$dev-rand: wrote $write of $io bytes"
  check_zones "$conv" written "$write"

  # Random writes to conventional zones (no write pointer, no lock).
  if [ "$conv" -gt 0 ]; then
    fio_verified "$dev-conv" --zonemode=zbd --rw=randwrite --bs=4k \
      --iodepth=16 --size="$conv_bytes" --io_size=$((MIB))
    check_zones "$conv" written "$io"
  fi

  # Writes past the device's capacity: fio must reset zones to go on.
  # zone_reset_threshold and zone_reset_frequency make it reset
  # periodically as well.
  over=$((seq_cap + 2 * cap))
  fio_ok "$dev-reset" --zonemode=zbd --rw=randwrite --bs=64k \
    --iodepth=8 --offset="$conv_bytes" --io_size="$over" \
    --zone_reset_threshold=0.1 --zone_reset_frequency=0.01 $limit
  [ "$resets" -gt 0 ] || fail "$dev-reset: no zone reset"
  [ "$write" -eq "$over" ] || fail "$dev-reset: wrote $write of $over bytes"
  check_zones "$conv" any

  # Two jobs on one device: fio shares the zones (one file name) and the
  # open limit; each job verifies its own half of the device.  With a
  # limit, each job gets half of it: fio 3.33 ends a job early when the
  # other one holds every open zone.
  half=$((nr_zones / 2 * zbytes))
  job_limit=
  [ -z "$limit" ] || job_limit=--job_max_open_zones=$((MAX_OPEN / 2))
  fio_verified "$dev-2jobs" --zonemode=zbd --rw=randwrite --bs=4k \
    --iodepth=8 --numjobs=2 --size="$half" --offset_increment="$half" \
    --io_size=$((MIB)) $limit $job_limit
  [ "$jobs" -eq 2 ] && [ "$write" -eq $((2 * MIB)) ] ||
    fail "$dev-2jobs: $jobs jobs wrote $write bytes, expected 2 x $MIB"
  check_zones "$conv" any

  stop_server "$server"
}

# in_background NAME KEY=VALUE...: jobs_on_device in a subshell, so that
# the devices with and without limits run side by side (the two CPUs of
# CI machines; each job is mostly fio's fixed start-up and teardown).  A
# failure exits the subshell, and the subshell's nbdkit exits with it.
in_background () {
  (ztag=.$1; jobs_on_device "$@") >"$tmpdir/$1.log" 2>&1 &
  bg_pid=$!
}

# finished PID NAME: the subshell's output, and its failure.
finished () {
  wait "$1"
  status=$?
  cat "$tmpdir/$2.log"
  [ "$status" -eq 0 ] || fail "device $2 failed"
}

for share in 0 10 66 100; do
  nr_zones=$((SIZE / ZONE_SIZE))
  conv=$((nr_zones * share / 100))
  [ "$conv" -lt "$nr_zones" ] || conv=$((nr_zones - 1))
  in_background "conv$share" zone_nr_conv=$((nr_zones * share / 100))
  plain=$bg_pid
  in_background "conv$share-limits" zone_nr_conv=$((nr_zones * share / 100)) \
    zone_max_open=$MAX_OPEN zone_max_active=$MAX_ACTIVE
  limits=$bg_pid
  finished "$plain" "conv$share"
  finished "$limits" "conv$share-limits"
done
