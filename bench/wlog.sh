#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The write log's cost (issue 34): zonednull-server without a log, with
# log_writes= on tmpfs, and with log_writes= on the disk, side by side in
# one run, taking turns within each round: zn-bench's sequential zone
# writes, 4 KiB, depth 16 on one connection, 16 writes per zone in flight
# (pipeline_zoned_writes=1; the server applies them in order).  Each cell
# is the median of REPEATS runs; a new server and a new log each run.
#
#   bench/wlog.sh [BUILDDIR]                  (default: build)
#   REPEATS=5 SECONDS_PER_RUN=3 bench/wlog.sh
#   SHM=/dev/shm DISK=/var/tmp bench/wlog.sh  where the logs go
#
# The device: 4 GiB of 1 MiB zones, memory-backed (a log is for replay,
# which needs the data); a run of 3 s writes well under its size.
set -eu
. "$(dirname "$0")/lib.sh"
builddir=${1:-build}
repeats=${REPEATS:-5}
secs=${SECONDS_PER_RUN:-3}
shm=${SHM:-/dev/shm}
disk=${DISK:-/var/tmp}
server=$builddir/server/zonednull-server
znbench=$builddir/bench/zn-bench
[ -x "$server" ] && [ -x "$znbench" ] ||
  { echo "build first: $server, $znbench" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/zn-bench.XXXXXX")
shmdir=$(mktemp -d "$shm/zn-wlog.XXXXXX")
diskdir=$(mktemp -d "$disk/zn-wlog.XXXXXX")
trap 'bench_stop; rm -rf "$tmp" "$shmdir" "$diskdir"' EXIT

device="size=4096 zone_size=1 memory_backed=1 pipeline_zoned_writes=1"

# run CASE: appends the IOPS of one run to $tmp/CASE.
run () {
  case $1 in
    off) log= ;;
    tmpfs) log=log_writes=$shmdir/run.log ;;
    disk) log=log_writes=$diskdir/run.log ;;
  esac
  # shellcheck disable=SC2086 # device and log are lists of parameters
  bench_start "$tmp/s.sock" "$server" -f -U "$tmp/s.sock" $device $log ||
    { echo "bench: the server did not start ($1)" >&2; exit 1; }
  out=$("$znbench" --mode zonewrite --depth 16 --zone-inflight 16 \
          --seconds "$secs" "nbd+unix:///?socket=$tmp/s.sock")
  bench_stop
  case $out in *" errors=0") ;; *) echo "bench: $1: $out" >&2; exit 1 ;; esac
  echo "$out" | sed 's/.* iops=\([0-9]*\) .*/\1/' >>"$tmp/$1"
  rm -f "$shmdir/run.log" "$diskdir/run.log"
}

: >"$tmp/off"; : >"$tmp/tmpfs"; : >"$tmp/disk"
round=0
while [ "$round" -lt "$repeats" ]; do
  for c in off tmpfs disk; do run "$c"; done
  round=$((round + 1))
done
off=$(bench_median <"$tmp/off") t=$(bench_median <"$tmp/tmpfs")
d=$(bench_median <"$tmp/disk")
echo "zone writes, 4 KiB, depth 16: IOPS, median of $repeats runs of ${secs}s"
printf '%9s %9s %9s %10s %10s\n' no-log tmpfs disk tmpfs/off disk/off
printf '%9s %9s %9s %10s %10s\n' "$off" "$t" "$d" \
  "$(bench_ratio "$t" "$off" x)" "$(bench_ratio "$d" "$off" x)"
for c in off tmpfs disk; do
  printf '%s:' "$c"; tr '\n' ' ' <"$tmp/$c"; echo
done
