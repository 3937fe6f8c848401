#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# bench/server-loops.sh [BUILDDIR]: zonednull-server with one event loop
# (--threads=1) against two (--threads=2), the same build side by side in
# one run (issue 45, item 2).  A benchmark, not a test: nothing passes or
# fails on speed.
#
#   REPEATS=5 SECONDS_PER_RUN=3 JOBS=4 CASES="mem pc zone" BS=4k
#   TMPDIR=/var/tmp (the page-cache backing_dir), LOOPS="1 2",
#   OUT=bench/results/server-loops.txt (its .raw beside it),
#   CLIENT=fio (or zn-bench: the reads by bench/zn-bench, one thread
#   driving the JOBS connections with libnbd aio, far less CPU per
#   request than fio; the zone job stays fio's)
#
# fio 3.33's stock nbd engine, 4 KiB (the reads: BS; a zone job's 256 zones
# last 3 s at 4 KiB only), one connection per job, JOBS (4)
# jobs: enough connections that both loops have work.  Each cell is the
# median of REPEATS runs; in each repeat the servers take turns, who goes
# first rotating.
#
# mem   memory_backed=1, size=256 zone_size=16 zone_nr_conv=15 (the
#       conventional zones), 192 MiB written; random reads over it at
#       iodepth 16 per job.
# pc    the same geometry in a backing_dir on TMPDIR, written and read
#       once so that it is in the page cache; random reads at iodepth 16.
# zone  zone writes over many zones: size=16384 zone_size=16, no
#       conventional zone, memory_backed=0 (the model, no data), a fresh
#       server per run; each job writes sequentially from the start of
#       its own 256 zones (offset_increment), iodepth 16.
#
# The table (Markdown) goes to stdout and OUT with the load average at
# the start and the end; 2 loops / 1 loop is the issue's ratio (target
# >= 1.6x on 2 cores).  Each cell gives the CPU over the run, user +
# system time in cores, of the server and of the client: where they
# share the machine's cores it says whether the server or the machine
# was the limit.  "All cores" is what the last column's run would reach
# with every core of the machine busy at its CPU per request, server's
# and client's, against the first column: IOPS x nproc / (server +
# client), over the first column's IOPS.  An estimate, not a bound: a
# busier client may finish more requests per wake-up.
set -eu
. "$(dirname "$0")/lib.sh"
b=$(cd "${1:-build}" && pwd) || exit 2
top=$(cd "$(dirname "$0")/.." && pwd)
repeats=${REPEATS:-5}
secs=${SECONDS_PER_RUN:-3}
jobs=${JOBS:-4}
cases=${CASES:-mem pc zone}
loops=${LOOPS:-1 2}
bs=${BS:-4k}
client=${CLIENT:-fio}
zn_bench=$b/bench/zn-bench
OUT=${OUT:-$top/bench/results/server-loops.txt}
srv_bin=$b/server/zonednull-server
[ -x "$srv_bin" ] || { echo "server-loops: no $srv_bin (build first)" >&2; exit 2; }
command -v fio >/dev/null || { echo "server-loops: fio is not installed" >&2; exit 2; }
case $client in
  fio) ;;
  zn-bench) [ -x "$zn_bench" ] || { echo "server-loops: no $zn_bench (build first)" >&2; exit 2; } ;;
  *) echo "server-loops: CLIENT is fio or zn-bench, not $client" >&2; exit 2 ;;
esac
"$srv_bin" --help 2>&1 | grep -q -- '--threads' ||
  { echo "server-loops: $srv_bin has no --threads option" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/zn-loops.XXXXXX")
trap 'bench_stop; rm -rf "$tmp"' EXIT
uri () { echo "nbd+unix:///?socket=$tmp/$1.sock"; }

# srv NAME LOOPS PARAMS...: a server on $tmp/NAME.sock; its PID in NAME_pid.
srv () {
  n=$1 t=$2
  shift 2
  bench_start "$tmp/$n.sock" "$srv_bin" --threads="$t" -f -U "$tmp/$n.sock" "$@" \
    >>"$tmp/$n.log" 2>&1 ||
    { echo "server-loops: $n did not start" >&2; tail -n 5 "$tmp/$n.log" >&2; exit 1; }
  eval "${n}_pid=\$bench_pid"
}
halt () { eval "bench_stop \$${1}_pid"; }

# run CASE NAME FIO-OPTION...: one fio run against NAME (bench_fio).
run () {
  c=$1 n=$2 p=
  shift 2
  eval "p=\$${n}_pid"
  bench_fio server-loops "$tmp" "$c" "$n" "$r" "$p" --ioengine=nbd \
    --uri="$(uri "$n")" --numjobs="$jobs" "$@"
}

# zb_iops URI: the IOPS of zn-bench's random reads of BS over the 192 MiB
# written, JOBS connections to URI at depth 16 each; nothing if a read
# failed.
zb_iops () {
  u_=$1
  set --
  while [ $# -lt "$jobs" ]; do set -- "$@" "$u_"; done
  "$zn_bench" --mode randread --depth 16 \
    --bs "$(echo "$bs" | tr 'a-z' 'A-Z' | numfmt --from=iec)" \
    --span $((192 << 20)) --seconds "$secs" "$@" 2>>"$tmp/fio.log" |
    awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
         END { if (v["errors"] == 0 && v["iops"] != "") print v["iops"] }'
}

# reads CASE NAME: one run of the random reads against NAME.
reads () {
  if [ "$client" = fio ]; then
    # shellcheck disable=SC2086 # options, split on purpose
    run "$1" "$2" $read_job
  else
    eval "p_=\$${2}_pid"
    bench_run server-loops "$tmp" "$1" "$2" "$r" "$p_" zb_iops "$(uri "$2")"
  fi
}

# order R NAMES...: NAMES rotated by R - 1.
order () { r_=$1; shift; echo "$*" | awk -v k=$((r_ - 1)) '{ for (i = 0; i < NF; i++) print $((i + k) % NF + 1) }'; }

fill () {
  fio --name=fill --ioengine=nbd --uri="$(uri "$1")" --rw=write --bs=1m \
      --size="$2M" --iodepth=4 >>"$tmp/fio.log" 2>&1 ||
    { echo "server-loops: filling $1 failed" >&2; exit 1; }
}

names=
for t in $loops; do names="$names t$t"; done
load0=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$tmp/raw"
geo="size=256 zone_size=16 zone_nr_conv=15"
read_job="--bs=$bs --rw=randread --size=192M --iodepth=16 --time_based --runtime=$secs"

for c in mem pc; do
  case " $cases " in *" $c "*) ;; *) continue ;; esac
  for t in $loops; do
    if [ $c = mem ]; then
      srv t$t "$t" $geo memory_backed=1
    else
      srv t$t "$t" $geo backing_dir="$tmp/t$t.dir"
    fi
    fill t$t 192
    # The first read brings a backing_dir into the page cache.
    [ $c = mem ] || fio --name=warm --ioengine=nbd --uri="$(uri t$t)" --rw=read --bs=1m \
                        --size=192M >>"$tmp/fio.log" 2>&1
  done
  r=1
  while [ $r -le "$repeats" ]; do
    # shellcheck disable=SC2046,SC2086 # names and options, split on purpose
    for n in $(order $r $names); do reads $c $n; done
    r=$((r + 1))
  done
  for n in $names; do halt $n; done
  rm -rf "$tmp"/t*.dir
done

case " $cases " in *" zone "*)
  zgeo="size=16384 zone_size=16 zone_nr_conv=0 memory_backed=0"
  r=1
  while [ $r -le "$repeats" ]; do
    for n in $(order $r $names); do
      # shellcheck disable=SC2086
      srv $n "${n#t}" $zgeo
      run zone $n --rw=write --iodepth=16 --size=4g --offset_increment=4g \
        --time_based --runtime="$secs"
      halt $n
    done
    r=$((r + 1))
  done
esac
load1=$(cut -d' ' -f1-3 /proc/loadavg)

# med CASE NAME FIELD: the median over NAME's runs of CASE of an awk
# expression of the raw line ($4 IOPS, $5 the server's CPU, $6 the
# client's).
med () { awk -v c="$1" -v n="$2" '$1 == c && $2 == n { print '"$3"' }' "$tmp/raw" | bench_median; }
iops () { printf '%.0f' "$(med "$1" "$2" '$4')"; }
cpu () { printf '%.2f' "$(med "$1" "$2" '$5')"; }
client_cpu () { printf '%.2f' "$(med "$1" "$2" '$6')"; }
# allow CASE FIRST LAST: LAST's IOPS at every core busy (its medians of
# IOPS and of server + client CPU), over FIRST's IOPS.
allow () {
  awk -v u="$(med "$1" "$3" '$5 + $6')" -v p="$(nproc)" -v a="$(med "$1" "$3" '$4')" \
      -v b="$(med "$1" "$2" '$4')" \
      'BEGIN { if (u > 0 && b > 0) printf "%.2fx\n", a * p / u / b; else print "n/a" }'
}
runs () { awk -v c="$1" -v n="$2" '$1 == c && $2 == n { printf "%s%s", s, $4; s = "/" }' "$tmp/raw"; }
has () { grep -q "^$1 " "$tmp/raw"; }

table () {
  set -- $loops
  first=$1 last=$(echo "$loops" | awk '{ print $NF }')
  echo "# zonednull-server: one event loop against several (issue 45)"
  echo
  echo "$b ($(git -C "$top" describe --always --dirty 2>/dev/null || echo '?')), $(nproc) CPUs, $(date -u '+%Y-%m-%d %H:%M') UTC,"
  if [ "$client" = fio ]; then
    echo "load average $load0 at the start, $load1 at the end.  fio 3.33's nbd engine, reads of $bs, writes of 4 KiB,"
    echo "$jobs jobs of one connection each; medians of $repeats runs of ${secs} s, the servers taking turns;"
  else
    echo "load average $load0 at the start, $load1 at the end.  Reads of $bs by zn-bench, one thread driving $jobs"
    echo "connections; writes of 4 KiB by fio 3.33's nbd engine, $jobs jobs; medians of $repeats runs of ${secs} s, the servers taking turns;"
  fi
  echo "each cell: IOPS (the server's CPU + the client's over the run, in cores)."
  echo
  printf '| job |'; for t in $loops; do printf ' --threads=%s |' "$t"; done
  echo " $last loops / $first loop | all cores |"
  printf '|---|'; for t in $loops; do printf -- '---|'; done; echo '---|---|'
  for c in mem pc zone; do
    has $c || continue
    case $c in
      mem) j="randread, memory_backed=1, iodepth 16 per job" ;;
      pc) j="randread, backing_dir in the page cache, iodepth 16 per job" ;;
      zone) j="sequential writes, each job its own 256 zones of 16 MiB, iodepth 16 (memory_backed=0)" ;;
    esac
    printf '| %s |' "$j"
    for t in $loops; do printf ' %s (%s + %s) |' "$(iops $c t$t)" "$(cpu $c t$t)" "$(client_cpu $c t$t)"; done
    echo " $(bench_ratio "$(iops $c t$last)" "$(iops $c t$first)" x) | $(allow $c t$first t$last) |"
  done
  echo
  for c in mem pc zone; do
    has $c || continue
    printf 'Run by run, %s:' "$c"
    for t in $loops; do printf ' --threads=%s %s;' "$t" "$(runs $c t$t)"; done
    echo
  done
}
table | tee "$tmp/table"
mkdir -p "$(dirname "$OUT")"
cp "$tmp/table" "$OUT"
cp "$tmp/raw" "${OUT%.txt}.raw"
