#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# bench/old-vs-new.sh OLD_BUILDDIR [NEW_BUILDDIR]: two builds'
# zonednull-server (or, with FRONT=plugin, nbdkit with their plugins, -t
# 64) side by side over NBD on the host, e.g. a tree before a restructure
# against the tree after it (issue 33 asks for >= 0.95x).  A benchmark,
# not a test: nothing passes or fails on speed.
#
# Each round starts each build's server in turn on a Unix socket (which
# goes first alternates), and drives it with NEW_BUILDDIR's bench/zn-bench
# (libnbd aio, one connection):
#   zonewrite   4 KiB sequential writes zone after zone from an empty
#               device, depth 64, all 64 in one zone at a time
#               (--zone-inflight 64: the server's pipelined writes)
#   randread    then 4 KiB random reads, depth 16, over the first
#               READ_MIB of what zonewrite wrote (data, not holes)
# A fresh server per round and build: zonewrite needs empty zones.
# Medians over ROUNDS of IOPS per build, the ratio new/old of the medians,
# and the median and range of the per-round ratios; then the server's own
# CPU time per I/O (user+system), which a busy host moves less than IOPS.
# The table goes to stdout and to OUT (default
# bench/results/old-vs-new.txt), the raw lines to OUT's .raw; the host's
# load average at the start and end goes with it, as the machine may be
# shared.
#
#   bench/old-vs-new.sh /tmp/old/build           NEW_BUILDDIR: ./build
#   ROUNDS=11 SECONDS_PER_RUN=3 READ_MIB=64 bench/old-vs-new.sh OLD [NEW]
#   CONF="size=4096 zone_size=1 ..." the device of both servers (size must
#   hold what zonewrite writes in SECONDS_PER_RUN); @DIR@ in it becomes a
#   new empty directory for each run, removed after it (backing_dir=@DIR@
#   for file-backed zones)
set -eu
[ $# -ge 1 ] || { echo "usage: bench/old-vs-new.sh OLD_BUILDDIR [NEW_BUILDDIR]" >&2; exit 2; }
# Build directories relative to where the script is called from.
old=$(cd "$1" && pwd) || exit 1
new=$(cd "${2:-$(dirname "$0")/../build}" && pwd) || exit 1
cd "$(dirname "$0")/.."
top=$(pwd)
. bench/lib.sh
znbench=$new/bench/zn-bench
FRONT=${FRONT:-server}
case $FRONT in
  server) front=server/zonednull-server ;;
  plugin) front=plugin/.libs/nbdkit-zonednull-plugin.so ;;
  *) echo "old-vs-new: FRONT=$FRONT: server or plugin" >&2; exit 2 ;;
esac
for b in "$old" "$new"; do
  [ -e "$b/$front" ] || { echo "old-vs-new: no $b/$front (build first)" >&2; exit 1; }
done
[ -x "$znbench" ] || { echo "old-vs-new: no $znbench (build first)" >&2; exit 1; }
ROUNDS=${ROUNDS:-11}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-3}
READ_MIB=${READ_MIB:-64}
CONF=${CONF:-size=4096 zone_size=1 memory_backed=1 pipeline_zoned_writes=1}
OUT=${OUT:-$top/bench/results/old-vs-new.txt}

tmp=$(mktemp -d /tmp/zonednull-old-vs-new.XXXXXX)
trap 'bench_stop; rm -rf "$tmp"' EXIT
sock=$tmp/s.sock
uri="nbd+unix:///?socket=$sock"

# field NAME: NAME=value from zn-bench's output line on stdin.
field () { tr ' ' '\n' | sed -n "s/^$1=//p"; }

# ticks: the server's user+system CPU time so far (USER_HZ ticks).
ticks () { awk '{ print $14 + $15 }' "/proc/$bench_pid/stat"; }
# one ROUND BUILD NAME: a fresh server of BUILD, zonewrite then randread;
# "NAME ROUND JOB IOPS SERVER_TICKS SECONDS" lines to the raw file.
one () {
  conf=$CONF dir=
  case $conf in
    *@DIR@*) dir=$(mktemp -d "$tmp/dir.XXXXXX"); conf=$(echo "$conf" | sed "s|@DIR@|$dir|g") ;;
  esac
  # Paths of builds and sockets without spaces: split on purpose.
  if [ "$FRONT" = plugin ]; then cmd="nbdkit -f -t 64 -U $sock $2/$front"
  else cmd="$2/$front -f -U $sock"; fi
  # shellcheck disable=SC2086
  bench_start "$sock" $cmd $conf >>"$tmp/server.log" 2>&1 ||
    { echo "old-vs-new: $3 server did not start:" >&2; tail -n 5 "$tmp/server.log" >&2; exit 1; }
  t0=$(ticks)
  w=$("$znbench" --mode zonewrite --depth 64 --zone-inflight 64 --seconds "$SECONDS_PER_RUN" "$uri")
  t1=$(ticks)
  [ "$(echo "$w" | field errors)" = 0 ] || echo "old-vs-new: $3 zonewrite errors: $w" >&2
  r=$("$znbench" --mode randread --depth 16 --span $((READ_MIB * 1048576)) --seconds "$SECONDS_PER_RUN" "$uri")
  t2=$(ticks)
  [ "$(echo "$r" | field errors)" = 0 ] || echo "old-vs-new: $3 randread errors: $r" >&2
  bench_stop
  [ -z "$dir" ] || rm -rf "$dir"
  echo "$3 $1 zonewrite $(echo "$w" | field iops) $((t1 - t0)) $(echo "$w" | field seconds)" >>"$tmp/raw"
  echo "$3 $1 randread $(echo "$r" | field iops) $((t2 - t1)) $(echo "$r" | field seconds)" >>"$tmp/raw"
  echo "old-vs-new: round $1 $3: zonewrite $(echo "$w" | field iops) randread $(echo "$r" | field iops)" >&2
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$tmp/raw"
round=1
while [ $round -le "$ROUNDS" ]; do
  if [ $((round % 2)) = 1 ]; then one $round "$old" old; one $round "$new" new
  else one $round "$new" new; one $round "$old" old; fi
  round=$((round + 1))
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)

# iops NAME JOB: that build's IOPS of every round, one a line; cpu NAME
# JOB: its server's CPU time per I/O (us).
iops () { awk -v n="$1" -v j="$2" '$1 == n && $3 == j { print $4 }' "$tmp/raw"; }
cpu () { awk -v n="$1" -v j="$2" '$1 == n && $3 == j && $4 * $6 > 0 { printf "%.2f\n", $5 * 10000 / ($4 * $6) }' "$tmp/raw"; }
table () {
  echo "$(if [ "$FRONT" = plugin ]; then echo "nbdkit -t 64 with the plugin"; else echo zonednull-server; fi), old $old against new $new, over NBD on a Unix socket;"
  echo "$(nproc) CPUs, $(date -u +%Y-%m-%d), load average $load0 at the start, $load1 at the end."
  echo "Both: $CONF. zn-bench (new's), one connection, 4 KiB; medians of $ROUNDS rounds of ${SECONDS_PER_RUN} s,"
  echo "the builds taking turns (which goes first alternates); randread over the first $READ_MIB MiB written."
  echo
  printf '%-10s %9s %9s %8s %19s %17s %17s\n' job old new new/old "per-round median" "old min-max" "new min-max"
  for job in zonewrite randread; do
    mo=$(iops old $job | bench_median) mn=$(iops new $job | bench_median)
    pr=$(awk -v j=$job '$3 == j { v[$1, $2] = $4; r[$2] = 1 }
           END { for (k in r) if (v["old", k] > 0) print v["new", k] / v["old", k] }' "$tmp/raw" | sort -g)
    printf '%-10s %9.0f %9.0f %8s %19s %17s %17s\n' $job "$mo" "$mn" "$(bench_ratio "$mn" "$mo" x)" \
      "$(echo "$pr" | bench_median | xargs printf '%.2fx') ($(echo "$pr" | head -n 1 | xargs printf '%.2f')-$(echo "$pr" | tail -n 1 | xargs printf '%.2f'))" \
      "$(iops old $job | sort -n | head -n 1)-$(iops old $job | sort -n | tail -n 1)" \
      "$(iops new $job | sort -n | head -n 1)-$(iops new $job | sort -n | tail -n 1)"
  done
  echo
  printf '%-10s %12s %12s %8s\n' job "srv us/IO old" "new" new/old
  for job in zonewrite randread; do
    co=$(cpu old $job | bench_median) cn=$(cpu new $job | bench_median)
    printf '%-10s %12.1f %12.1f %8s\n' $job "$co" "$cn" "$(bench_ratio "$cn" "$co" x)"
  done
  echo
  echo "IOPS per round (old new):"
  for job in zonewrite randread; do
    line=$(printf '%-10s' $job)
    round=1
    while [ $round -le "$ROUNDS" ]; do
      line="$line $round: $(awk -v j=$job -v r=$round '$3 == j && $2 == r { v[$1] = $4 } END { print v["old"], v["new"] }' "$tmp/raw")"
      round=$((round + 1))
    done
    echo "$line"
  done
}
table | tee "$tmp/table"
mkdir -p "$(dirname "$OUT")"
cp "$tmp/table" "$OUT"
cp "$tmp/raw" "${OUT%.txt}.raw"
