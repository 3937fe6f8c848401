#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# bench/flush-io-threads.sh [BUILDDIR]: the flush-heavy case of
# bench/server-threads.sh with zonednull-server at several --io-threads,
# side by side in one run with `nbdkit -t 16 zonednull` (the same build's
# plugin) and `nbdkit -t 16 file`.  A benchmark, not a test.
#
#   IO_THREADS="8 16 32" REPEATS=5 SECS=3 TMPDIR=/var/tmp (a disk)
#
# A device of 64 conventional zones of 4 MiB (size=260 zone_size=4
# zone_nr_conv=64) in a backing_dir, written in full and synced; fio's
# nbd engine, 4 jobs (connections) x iodepth 8 of random 4 KiB writes, a
# flush after each (fsync=1).  Prints the median IOPS of each server and
# its runs; the servers take turns, who goes first rotating.
set -eu
. "$(dirname "$0")/lib.sh"
b=$(cd "${1:-build}" && pwd) || exit 2
repeats=${REPEATS:-5}
secs=${SECS:-3}
tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/zn-iot.XXXXXX")
trap 'bench_stop; rm -rf "$tmp"' EXIT
fdev="size=260 zone_size=4 zone_nr_conv=64"
names=
for t in ${IO_THREADS:-8 16 32}; do
  bench_start "$tmp/io$t.sock" "$b/server/zonednull-server" --io-threads="$t" -f \
    -U "$tmp/io$t.sock" $fdev backing_dir="$tmp/io$t.dir" >>"$tmp/io$t.log" 2>&1
  names="$names io$t"
done
bench_start "$tmp/zn.sock" nbdkit -f -t 16 -U "$tmp/zn.sock" \
  "$b/plugin/.libs/nbdkit-zonednull-plugin.so" $fdev backing_dir="$tmp/zn.dir" >>"$tmp/zn.log" 2>&1
truncate -s 260M "$tmp/file.img"
bench_start "$tmp/file.sock" nbdkit -f -t 16 -U "$tmp/file.sock" file "$tmp/file.img" >>"$tmp/file.log" 2>&1
names="$names zn file"
for n in $names; do
  fio --name=fill --ioengine=nbd --uri="nbd+unix:///?socket=$tmp/$n.sock" --rw=write \
      --bs=1m --size=256M --iodepth=4 >/dev/null 2>&1
done
sync
: >"$tmp/raw"
l0=$(cut -d' ' -f1-3 /proc/loadavg)
r=1
while [ $r -le "$repeats" ]; do
  for n in $(echo "$names" | awk -v k=$((r - 1)) '{ for (i = 0; i < NF; i++) print $((i + k) % NF + 1) }'); do
    io=$(fio --name=bench --ioengine=nbd --uri="nbd+unix:///?socket=$tmp/$n.sock" --bs=4k \
           --group_reporting --output-format=terse --terse-version=3 --rw=randwrite --fsync=1 \
           --size=256M --iodepth=8 --numjobs=4 --time_based --runtime="$secs" 2>>"$tmp/fio.log" |
         awk -F';' '/^3;/ { print ($5 == 0) ? $8 + $49 : "" }')
    [ -n "$io" ] || { echo "flush-io-threads: fio failed on $n" >&2; exit 1; }
    echo "$n $r $io" >>"$tmp/raw"
  done
  r=$((r + 1))
done
echo "$(date -u '+%Y-%m-%d %H:%M') UTC, load average $l0 -> $(cut -d' ' -f1-3 /proc/loadavg)"
for n in $names; do
  printf '%-6s median %6.0f  runs %s\n' "$n" \
    "$(awk -v n="$n" '$1 == n { print $3 }' "$tmp/raw" | bench_median)" \
    "$(awk -v n="$n" '$1 == n { printf "%s ", $3 }' "$tmp/raw")"
done
