#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# backing_dir (issue 23): file-backed zonednull-server against `nbdkit
# file` on a file in the same file system, and against memory-backed
# zonednull-server, side by side in one run: fio's stock nbd engine, 4 KiB
# random reads and 4 KiB sequential writes at depth 16, one connection.
# Each cell is the median of REPEATS runs, the servers taking turns.  Then
# the start-up time and resident memory of a 20 TiB device (81,920 zones
# of 256 MiB) made new (once), and the time its orderly stop takes, and
# started again (REPEATS times) with 1% of its zones written: 819 zones,
# one in every 100, WRITTEN_MIB MiB each (1% of 20 TiB, 200 GiB, would be
# a long write for a benchmark; the start-up cost is per zone file).
#
#   bench/backing-dir.sh [BUILDDIR]          (default: build)
#   REPEATS=5 SECONDS_PER_RUN=3 WRITTEN_MIB=1 bench/backing-dir.sh
#   TMPDIR=/some/fs bench/backing-dir.sh     the file system measured
#
# On ext4 without a journal, start it 6 minutes after any large deletion
# on that file system, a previous run's cleanup included: inode allocation
# there skips inodes freed in the last 60 s, or 6 minutes while their
# inode table block is dirty (as making files beside them keeps it), one
# by one (recently_deleted() in fs/ext4/ialloc.c), and making the 81,920
# zone files then takes many times longer.
#
# The device: 1 GiB in 16 zones of 64 MiB, the first 4 conventional.
# Reads go over the 256 MiB of conventional zones, written first, so no
# read is a hole.  Writes go from the start of zone 4 over 512 MiB of
# sequential zones (nbdkit file: the same offsets of its file); before
# each run the zones are reset (the file is truncated and made again), so
# every run writes new blocks of the file system.
set -eu
. "$(dirname "$0")/lib.sh"
builddir=${1:-build}
repeats=${REPEATS:-5}
secs=${SECONDS_PER_RUN:-3}
written_mib=${WRITTEN_MIB:-1}
server=$builddir/server/zonednull-server
cli=$builddir/cli/zonednull
[ -x "$server" ] && [ -x "$cli" ] || { echo "build first: $server, $cli" >&2; exit 2; }
command -v fio >/dev/null || { echo "fio is not installed" >&2; exit 2; }
command -v nbdkit >/dev/null || { echo "nbdkit is not installed" >&2; exit 2; }
/usr/bin/python3 -c 'import nbd' 2>/dev/null ||
  { echo "python3-libnbd is not installed" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/zn-bench.XXXXXX")
trap 'bench_stop; rm -rf "$tmp"' EXIT

device="size=1024 zone_size=64 zone_nr_conv=4"
ZB=$((64 * 1024 * 1024))

# start NAME COMMAND...: a server on $tmp/NAME.sock; its PID in $NAME_pid.
start () {
  name=$1
  shift
  bench_start "$tmp/$name.sock" "$@" || { echo "bench: $name did not start: $*" >&2; exit 1; }
  eval "${name}_pid=\$bench_pid"
}

uri_of () {
  case $1 in
    plain) echo "nbd+unix:///?socket=$tmp/$1.sock" ;;
    *) echo "nbd+unix:///nullb0?socket=$tmp/$1.sock" ;;
  esac
}

truncate -s 1G "$tmp/plain.img"
start file "$server" -f -U "$tmp/file.sock" $device backing_dir="$tmp/dir"
start plain nbdkit -f -U "$tmp/plain.sock" file "$tmp/plain.img"
start mem "$server" -f -U "$tmp/mem.sock" $device memory_backed=1
for t in file plain mem; do
  fio --name=fill --ioengine=nbd --uri="$(uri_of $t)" --rw=write --bs=1m \
      --size=256M --iodepth=4 >/dev/null 2>&1 ||
    { echo "bench: filling $t failed" >&2; exit 1; }
done

# prepare_write TARGET: the write span empty again.
prepare_write () {
  case $1 in
    plain) truncate -s 256M "$tmp/plain.img" && truncate -s 1G "$tmp/plain.img" ;;
    *) "$cli" reset -o $((4 * ZB / 512)) -c 8 "$(uri_of "$1")" >/dev/null ;;
  esac
}

# run TARGET JOB: appends the IOPS of one fio run to $tmp/TARGET.JOB.
run () {
  case $2 in
    randread) args="--rw=randread --size=256M --time_based --runtime=$secs" ;;
    seqwrite) prepare_write "$1"
              args="--rw=write --offset=$((4 * ZB)) --size=512M" ;;
  esac
  # shellcheck disable=SC2086 # args is a list of options
  fio --name=bench --ioengine=nbd --uri="$(uri_of "$1")" --bs=4k \
      --iodepth=16 $args --output-format=terse --terse-version=3 2>/dev/null |
    awk -F';' -v job="$2" '/^3;/ { print (job == "randread") ? $8 : $49 }' \
      >>"$tmp/$1.$2"
}

echo "4 KiB, depth 16, 1 connection: IOPS (median of $repeats runs; reads ${secs}s, writes 512 MiB)"
printf '%-9s %9s %9s %9s %11s %10s\n' job file nbdkit-file memory file/nbdkit file/memory
for job in randread seqwrite; do
  for t in file plain mem; do : >"$tmp/$t.$job"; done
  r=0
  while [ $r -lt "$repeats" ]; do
    for t in file plain mem; do run "$t" "$job"; done
    r=$((r + 1))
  done
  f=$(bench_median <"$tmp/file.$job") p=$(bench_median <"$tmp/plain.$job")
  m=$(bench_median <"$tmp/mem.$job")
  printf '%-9s %9s %9s %9s %11s %10s\n' "$job" "$f" "$p" "$m" \
    "$(bench_ratio "$f" "$p" x)" "$(bench_ratio "$f" "$m" x)"
done
bench_stop

# ---- 20 TiB ---------------------------------------------------------------

big="size=20971520 zone_size=256"
ms () { echo $(($(date +%s%N) / 1000000)); }
rss_kib () { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

# startup NAME ARG...: a server started with ARGS, its time until ready
# (its PID file written; up to 10 minutes) in $startup_ms and then its
# resident memory in $startup_kib; it is left running as $pid.
startup () {
  name=$1
  shift
  rm -f "$tmp/$name.pid"
  t0=$(ms)
  "$server" -f -U "$tmp/$name.sock" -P "$tmp/$name.pid" "$@" </dev/null \
    >"$tmp/$name.log" 2>&1 &
  pid=$!
  bench_pids="$bench_pids $pid"
  until [ -s "$tmp/$name.pid" ]; do
    kill -0 "$pid" 2>/dev/null && [ $(($(ms) - t0)) -lt 600000 ] ||
      { echo "bench: $name did not start: $(cat "$tmp/$name.log")" >&2; exit 1; }
    sleep 0.01
  done
  startup_ms=$(($(ms) - t0))
  startup_kib=$(rss_kib "$pid")
}

row () {
  printf '%-44s %9s %9s\n' "$1" "$2" \
    "$(awk -v k="$3" 'BEGIN { if (k == "-") print k; else printf "%.1f", k / 1024 }')"
}

# What the jobs above wrote goes to disk first, so that its write-back
# does not slow the start-ups down.
sync
echo
echo "20 TiB ($big: 81920 zones), zonednull-server: start-up (until its PID file) and RSS then"
printf '%-44s %9s %9s\n' case ms RSS-MiB
startup big $big backing_dir="$tmp/big"
row "new backing_dir" "$startup_ms" "$startup_kib"
# The server listens at once and a thread beside it makes the zone files;
# that thread's end (the process back to one thread) is when the
# directory is complete.  The writes wait for it, so that neither figure
# holds the other.
until [ "$(ls "/proc/$pid/task" | wc -l)" -le 1 ]; do
  [ $(($(ms) - t0)) -lt 600000 ] || { echo "bench: the zone files took over 10 minutes" >&2; exit 1; }
  sleep 0.01
done
row "its 81920 zone files all made (from the start)" $(($(ms) - t0)) "$(rss_kib "$pid")"
n=$(find "$tmp/big" -maxdepth 1 -name 'seq-*' | wc -l)
[ "$n" = 81920 ] || { echo "bench: $n zone files, not 81920" >&2; exit 1; }
write_1pc () {
  # 1% of the zones, 819, spread over the device, get WRITTEN_MIB MiB each.
  /usr/bin/python3 - "nbd+unix:///nullb0?socket=$tmp/$1.sock" "$written_mib" <<'EOF'
import sys, nbd
h = nbd.NBD()
h.connect_uri(sys.argv[1])
zone = 256 << 20
buf = bytes(range(256)) * 4096
for z in range(0, 81920, 100):
    for m in range(int(sys.argv[2])):
        h.pwrite(buf, z * zone + m * len(buf))
h.flush()
h.shutdown()
EOF
}
write_1pc big
row "after writing 819 zones x $written_mib MiB" - "$(rss_kib "$pid")"
# An orderly stop waits until every zone file is made (zloop's layout).
t0=$(ms)
bench_stop "$pid"
row "its stop (SIGTERM until exit)" $(($(ms) - t0)) -
sync
# restarts NAME ARG...: REPEATS start-ups; the medians in $startup_ms and
# $startup_kib.
restarts () {
  name=$1
  shift
  : >"$tmp/$name.runs"
  r=0
  while [ $r -lt "$repeats" ]; do
    startup "$name" "$@"
    bench_stop "$pid"
    echo "$startup_ms $startup_kib" >>"$tmp/$name.runs"
    r=$((r + 1))
  done
  startup_ms=$(bench_median 1 <"$tmp/$name.runs")
  startup_kib=$(bench_median 2 <"$tmp/$name.runs")
}
restarts big2 $big backing_dir="$tmp/big"
row "restart on it (819 zones CLOSED), median" "$startup_ms" "$startup_kib"
restarts bigmem $big memory_backed=1
row "memory_backed=1, for reference, median" "$startup_ms" "$startup_kib"
startup bigmem $big memory_backed=1
write_1pc bigmem
row "memory_backed=1 after the same writes" - "$(rss_kib "$pid")"
bench_stop "$pid"
echo "disk used by the directory: $(du -sm "$tmp/big" | awk '{ print $1 }') MiB"
