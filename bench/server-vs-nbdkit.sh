#!/bin/sh
# zonednull-server against nbdkit hosting the zonednull plugin and against
# nbdkit's null plugin, side by side in one run: fio's stock nbd engine,
# 4 KiB random reads, iodepth 1, 16 and 64, with 1 and 2 connections
# (numjobs, one connection each).  Each cell is the median of REPEATS
# runs of SECONDS each; the table gives IOPS and the ratios.
#
#   bench/server-vs-nbdkit.sh [BUILDDIR]     (default: build)
#   REPEATS=5 SECONDS=5 bench/server-vs-nbdkit.sh
#
# Reads, because random writes break the zone rules by design; every
# read of a conventional-zone device goes through the same model path.
set -eu
builddir=${1:-build}
repeats=${REPEATS:-3}
secs=${SECONDS_PER_RUN:-3}
server=$builddir/server/zonednull-server
plugin=$builddir/plugin/.libs/nbdkit-zonednull-plugin.so
[ -x "$server" ] && [ -f "$plugin" ] || { echo "build first: $server, $plugin" >&2; exit 2; }
command -v fio >/dev/null || { echo "fio is not installed" >&2; exit 2; }

tmp=$(mktemp -d /tmp/zn-bench.XXXXXX)
pids=
trap 'for p in $pids; do kill $p 2>/dev/null; done; rm -rf "$tmp"' EXIT

# 256 MiB, every zone conventional except the last (null_blk needs one
# sequential zone): reads cost the same everywhere.
device="size=256 zone_size=16 zone_nr_conv=15"

wait_sock () {
  i=0
  while [ ! -S "$1" ]; do i=$((i + 1)); [ $i -lt 100 ] || exit 1; sleep 0.05; done
}

"$server" -f -U "$tmp/native.sock" $device & pids="$pids $!"
nbdkit -f -U "$tmp/plugin.sock" "$plugin" $device & pids="$pids $!"
nbdkit -f -U "$tmp/null.sock" null size=256M & pids="$pids $!"
for s in native plugin null; do wait_sock "$tmp/$s.sock"; done

# iops TARGET DEPTH JOBS: one fio run's total read IOPS.
iops () {
  fio --name=bench --ioengine=nbd --uri="nbd+unix:///?socket=$tmp/$1.sock" \
      --rw=randread --bs=4k --iodepth="$2" --numjobs="$3" --group_reporting \
      --time_based --runtime="$secs" --size=256M --output-format=terse \
      --terse-version=3 2>/dev/null | awk -F';' '/^3;/ { print $8 }'
}

median () {
  sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

printf '%-6s %-5s %12s %12s %12s %9s %9s\n' depth conns server nbdkit-zn nbdkit-null vs-zn vs-null
for depth in 1 16 64; do
  for jobs in 1 2; do
    for t in native plugin null; do : >"$tmp/$t.runs"; done
    r=0
    while [ $r -lt "$repeats" ]; do
      # Interleaved, so that noise hits all three alike.
      for t in native plugin null; do iops $t $depth $jobs >>"$tmp/$t.runs"; done
      r=$((r + 1))
    done
    n=$(median <"$tmp/native.runs") p=$(median <"$tmp/plugin.runs") z=$(median <"$tmp/null.runs")
    printf '%-6s %-5s %12s %12s %12s %9s %9s\n' "$depth" "$jobs" "$n" "$p" "$z" \
      "$(awk -v a="$n" -v b="$p" 'BEGIN { printf "%.2fx", a / b }')" \
      "$(awk -v a="$n" -v b="$z" 'BEGIN { printf "%.2fx", a / b }')"
  done
done
