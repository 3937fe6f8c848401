#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# zonednull-server against nbdkit hosting the zonednull plugin and against
# nbdkit's null plugin, side by side in one run: fio's stock nbd engine,
# 4 KiB random reads, iodepth 1, 16 and 64, with 1 and 2 connections
# (numjobs, one connection each).  Then null_blk's timed completion,
# 100 us with 256 tags, at depth 256.  Each cell is the median of REPEATS
# runs of SECONDS_PER_RUN each; the tables give IOPS, the ratios, and the
# CPU each server used, since on a small machine fio itself can be the
# limit.  A last table takes the server's two advantages apart: busy
# polling (--busy-poll), and reads of zeros sent as holes.
#
#   bench/server-vs-nbdkit.sh [BUILDDIR]     (default: build)
#   REPEATS=5 SECONDS_PER_RUN=5 bench/server-vs-nbdkit.sh
#
# Reads, because random writes break the zone rules by design; every
# read of a conventional-zone device goes through the same model path.
set -eu
. "$(dirname "$0")/lib.sh"
builddir=${1:-build}
repeats=${REPEATS:-3}
secs=${SECONDS_PER_RUN:-3}
server=$builddir/server/zonednull-server
plugin=$builddir/plugin/.libs/nbdkit-zonednull-plugin.so
[ -x "$server" ] && [ -f "$plugin" ] || { echo "build first: $server, $plugin" >&2; exit 2; }
command -v fio >/dev/null || { echo "fio is not installed" >&2; exit 2; }

tmp=$(mktemp -d /tmp/zn-bench.XXXXXX)
trap 'bench_stop; rm -rf "$tmp"' EXIT

# 256 MiB, every zone conventional except the last (null_blk needs one
# sequential zone): reads cost the same everywhere.
device="size=256 zone_size=16 zone_nr_conv=15"

# start NAME COMMAND...: a server on $tmp/NAME.sock; its PID in $NAME_pid.
start () {
  name=$1
  shift
  bench_start "$tmp/$name.sock" "$@" || { echo "bench: $name did not start: $*" >&2; exit 1; }
  eval "${name}_pid=\$bench_pid"
}

start native "$server" -f -U "$tmp/native.sock" $device
start plugin nbdkit -f -U "$tmp/plugin.sock" "$plugin" $device
start null nbdkit -f -U "$tmp/null.sock" null size=256M
# Timed completion, 100 us, 256 tags: nbdkit needs a thread per tag.
timed="irqmode=2 completion_nsec=100000 hw_queue_depth=256"
start ntimed "$server" -f -U "$tmp/ntimed.sock" $device $timed
start ptimed nbdkit -t 256 -f -U "$tmp/ptimed.sock" "$plugin" $device $timed
# Where the gains come from: the server sleeping between requests, and
# reads of data (64 MiB written first) instead of zeros, which go as holes.
start nopoll "$server" --busy-poll=0 -f -U "$tmp/nopoll.sock" $device
start ndata "$server" -f -U "$tmp/ndata.sock" $device memory_backed=1
start pdata nbdkit -f -U "$tmp/pdata.sock" "$plugin" $device memory_backed=1
for t in ndata pdata; do
  fio --name=fill --ioengine=nbd --uri="nbd+unix:///?socket=$tmp/$t.sock" \
      --rw=write --bs=1m --size=64M --iodepth=4 >/dev/null 2>&1 ||
    { echo "bench: filling $t failed" >&2; exit 1; }
done

ticks=$(getconf CLK_TCK)
cpu_ticks () { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# run TARGET DEPTH JOBS: appends "IOPS CPU" of one fio run to
# $tmp/TARGET.runs, CPU being the server's cores in use (user + system
# time of all its threads over the run's wall time).
run () {
  eval "pid=\$${1}_pid"
  c0=$(cpu_ticks "$pid") t0=$(date +%s%N)
  io=$(fio --name=bench --ioengine=nbd --uri="nbd+unix:///?socket=$tmp/$1.sock" \
      --rw=randread --bs=4k --iodepth="$2" --numjobs="$3" --group_reporting \
      --time_based --runtime="$secs" --size="${span:-256M}" --output-format=terse \
      --terse-version=3 2>/dev/null | awk -F';' '/^3;/ { print $8 }')
  c1=$(cpu_ticks "$pid") t1=$(date +%s%N)
  echo "$io $(awk -v c="$((c1 - c0))" -v hz="$ticks" -v ns="$((t1 - t0))" \
              'BEGIN { printf "%.2f", c / hz / (ns / 1e9) }')" >>"$tmp/$1.runs"
}


# cells TARGET... DEPTH JOBS: REPEATS interleaved runs of each target, so
# that noise hits all alike.
cells () {
  depth=$1 jobs=$2
  shift 2
  for t in "$@"; do : >"$tmp/$t.runs"; done
  r=0
  while [ $r -lt "$repeats" ]; do
    for t in "$@"; do run "$t" "$depth" "$jobs"; done
    r=$((r + 1))
  done
}

echo "IOPS (median of $repeats runs of ${secs}s), and the servers' CPU in cores"
printf '%-6s %-5s %9s %9s %9s %7s %7s %6s %6s %9s\n' depth conns server nbdkit-zn \
  nbdkit-null vs-zn vs-null cpu cpu-zn iops/cpu
for depth in 1 16 64; do
  for jobs in 1 2; do
    cells "$depth" "$jobs" native plugin null
    n=$(bench_median 1 <"$tmp/native.runs") p=$(bench_median 1 <"$tmp/plugin.runs")
    z=$(bench_median 1 <"$tmp/null.runs")
    nc=$(bench_median 2 <"$tmp/native.runs") pc=$(bench_median 2 <"$tmp/plugin.runs")
    printf '%-6s %-5s %9s %9s %9s %7s %7s %6s %6s %9s\n' "$depth" "$jobs" \
      "$n" "$p" "$z" "$(bench_ratio "$n" "$p" x)" "$(bench_ratio "$n" "$z" x)" "$nc" "$pc" \
      "$(awk -v a="$n" -v b="$nc" -v c="$p" -v d="$pc" 'BEGIN { printf "%.2fx", (a / b) / (c / d) }')"
  done
done
echo
echo "Timed completion ($timed), depth 256; the untimed server is the CPU limit"
printf '%-5s %9s %9s %9s %7s %9s %6s\n' conns server nbdkit-zn untimed vs-zn of-limit cpu
for jobs in 1 2; do
  cells 256 "$jobs" ntimed ptimed native
  n=$(bench_median 1 <"$tmp/ntimed.runs") p=$(bench_median 1 <"$tmp/ptimed.runs")
  u=$(bench_median 1 <"$tmp/native.runs") nc=$(bench_median 2 <"$tmp/ntimed.runs")
  printf '%-5s %9s %9s %9s %7s %9s %6s\n' "$jobs" "$n" "$p" "$u" \
    "$(bench_ratio "$n" "$p" x)" "$(bench_ratio "$n" "$u" x)" "$nc"
done
echo "(256 tags / 100 us would allow 2560000 IOPS; 0.8 of it is 2048000)"
echo
echo "Where the gains come from: depth 16, 1 connection; data reads cover 64 MiB of written data"
printf '%-30s %9s %9s %7s\n' case server nbdkit-zn vs-zn
cells 16 1 native nopoll plugin
n=$(bench_median 1 <"$tmp/native.runs") q=$(bench_median 1 <"$tmp/nopoll.runs") p=$(bench_median 1 <"$tmp/plugin.runs")
printf '%-30s %9s %9s %7s\n' "zeros (holes), busy-poll 20us" "$n" "$p" "$(bench_ratio "$n" "$p" x)"
printf '%-30s %9s %9s %7s\n' "zeros (holes), --busy-poll=0" "$q" "$p" "$(bench_ratio "$q" "$p" x)"
span=64M cells 16 1 ndata pdata
n=$(bench_median 1 <"$tmp/ndata.runs") p=$(bench_median 1 <"$tmp/pdata.runs")
printf '%-30s %9s %9s %7s\n' "data, busy-poll 20us" "$n" "$p" "$(bench_ratio "$n" "$p" x)"
