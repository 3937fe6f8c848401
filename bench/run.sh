#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The seed experiments and the peer comparison, side by side, as medians
# over REPEATS runs, reported as ratios in a Markdown table (and PNG plots
# when gnuplot is installed).
#
#   bench/run.sh [BUILDDIR]        default BUILDDIR: ./build
#   REPEATS=3 RUNTIME=2 OUT=bench/results bench/run.sh
#   ONLY="pipelining server" bench/run.sh
#   ONLY=backing bench/run.sh     bench/backing-dir.sh (not run by default)
#   ONLY=nvme bench/run.sh        bench/nvme-vs-nvmet.sh (not run by default)
#   ONLY=threads bench/run.sh     bench/server-threads.sh (not run by default),
#                                 OLD_BUILD=DIR the server before a change
#   SCALE=N bench/run.sh          host_tags and zone_locking at N times the
#                                 2-core load (default: nproc / 2, 1 to 24)
#
# Needs nbdkit (null and memory plugins), fio with its nbd engine, and
# optionally qemu-nbd.  Where zones matter this script drives the device
# with bench/zn-bench (libnbd aio, an exact number of writes per zone in
# flight); examples/pipelined-writes.sh is the fio-engine version of the
# pipelining experiment.  fio's stock nbd engine runs the peer jobs.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
. bench/lib.sh
build=${1:-$top/build}
plugin=$build/plugin/.libs/nbdkit-zonednull-plugin.so
server=$build/server/zonednull-server
znbench=$build/bench/zn-bench
REPEATS=${REPEATS:-3}
RUNTIME=${RUNTIME:-2}
OUT=${OUT:-$top/bench/results}
[ -x "$znbench" ] && [ -f "$plugin" ] || {
  echo "bench/run.sh: build first (make in $build)" >&2; exit 1; }
mkdir -p "$OUT"
tmp=$(mktemp -d /tmp/zonednull-bench.XXXXXX)
trap 'stop; rm -rf "$tmp"' EXIT
sock=$tmp/s.sock
uri0="nbd+unix:///?socket=$sock"

# start CMD...: a server on $sock, in the foreground of a child; one at a
# time, until stop.
start () {
  bench_start "$sock" "$@" >>"$tmp/server.log" 2>&1 || {
    echo "bench: server did not start: $*" >&2
    tail "$tmp/server.log" >&2
    exit 1
  }
}
stop () { bench_stop; }

# nbdkit -t T PLUGIN ARGS... (T threads per connection)
nbdkit_srv () {
  t=$1; shift
  start nbdkit -f -t "$t" -U "$sock" "$@"
}

# field NAME: NAME=value from zn-bench's output line on stdin.
field () {
  tr ' ' '\n' | sed -n "s/^$1=//p"
}

results=$tmp/results.tsv
: >"$results"
# record EXPERIMENT CASE VALUE-PER-REPEAT...: the median goes to results.
record () {
  exp=$1 case=$2; shift 2
  m=$(printf '%s\n' "$@" | bench_median)
  printf '%s\t%s\t%s\n' "$exp" "$case" "$m" >>"$results"
  printf 'bench: %-12s %-40s median %s  (runs: %s)\n' "$exp" "$case" "$m" "$*" >&2
}

# ---- 1. Pipelining: 100 us completions, depth 64, 4 KiB zone writes -------
# One write per zone in flight (zone write locking) against a pipelined
# stream (the server orders writes ahead of the wp).
pipelining () {
  local locked=() piped=() nlocked=() inorder=() r
  local timed="size=16384 zone_size=1 irqmode=2 completion_nsec=100000 hw_queue_depth=64"
  for _ in $(seq "$REPEATS"); do
    nbdkit_srv 64 "$plugin" size=16384 zone_size=1 irqmode=2 \
      completion_nsec=100000 hw_queue_depth=64
    r=$("$znbench" --mode zonewrite --depth 64 --zone-inflight 1 \
          --seconds "$RUNTIME" "$uri0")
    locked+=("$(echo "$r" | field iops)")
    stop
    nbdkit_srv 64 "$plugin" size=16384 zone_size=1 irqmode=2 \
      completion_nsec=100000 hw_queue_depth=64 pipeline_zoned_writes=1
    r=$("$znbench" --mode zonewrite --depth 64 --zone-inflight 64 \
          --seconds "$RUNTIME" "$uri0")
    [ "$(echo "$r" | field errors)" = 0 ] || echo "bench: pipelined errors: $r" >&2
    piped+=("$(echo "$r" | field iops)")
    stop
    # zonednull-server applies a connection's requests in the order they
    # were sent, so 64 pipelined writes to one zone need no waiting: the
    # ordering the kernel patch keeps through the block layer.
    # shellcheck disable=SC2086
    start "$server" -f -U "$sock" $timed
    r=$("$znbench" --mode zonewrite --depth 64 --zone-inflight 1 \
          --seconds "$RUNTIME" "$uri0")
    nlocked+=("$(echo "$r" | field iops)")
    stop
    # shellcheck disable=SC2086
    start "$server" -f -U "$sock" $timed pipeline_zoned_writes=1
    r=$("$znbench" --mode zonewrite --depth 64 --zone-inflight 64 \
          --seconds "$RUNTIME" "$uri0")
    [ "$(echo "$r" | field errors)" = 0 ] || echo "bench: server pipelined errors: $r" >&2
    inorder+=("$(echo "$r" | field iops)")
    stop
  done
  record pipelining "zone-locked (1 write/zone in flight)" "${locked[@]}"
  record pipelining "pipelined (pipeline_zoned_writes=1)" "${piped[@]}"
  record pipelining "server zone-locked (1 write/zone in flight)" "${nlocked[@]}"
  record pipelining "server pipelined (pipeline_zoned_writes=1)" "${inorder[@]}"
}

# The host-tags and zone-lock experiments grow with the machine, so that
# the same script shows the seeds' many-core shape where there are many
# cores: SCALE = nproc / 2 (at least 1, at most 24, the seed's 48 cores;
# SCALE=N sets it), and each unit of scale is one zn-bench process (one
# thread) with the load a 2-core machine gets in all: 4 devices for host
# tags, 4 connections x depth 16 over their own 4 GiB for zone locking.
# SCALE=1 is exactly the 2-core experiment.
scale=${SCALE:-$(n=$(($(nproc) / 2)); [ $n -ge 1 ] || n=1; [ $n -le 24 ] || n=24; echo $n)}

# znb_par FIELD...: runs the zn-bench command lines on stdin at once (one
# process each) and prints the sum of each FIELD over them, on one line;
# errors go to stderr.
znb_par () {
  local i=0 line pids=() f p k sums=()
  while IFS= read -r line; do
    # shellcheck disable=SC2086 # one command line, split on purpose
    $line >"$tmp/znb.$i" &
    pids+=($!)
    i=$((i + 1))
  done
  for p in "${pids[@]}"; do wait "$p"; done
  for f in "$tmp"/znb.*; do
    [ "$(field errors <"$f")" = 0 ] || echo "bench: zn-bench errors: $(cat "$f")" >&2
  done
  for k in "$@"; do
    sums+=("$(cat "$tmp"/znb.* | field "$k" | awk '{ s += $1 } END { printf "%.0f\n", s }')")
  done
  rm -f "$tmp"/znb.*
  echo "${sums[*]}"
}

# ---- 2. Host tags: devices sharing one tag set ------------------------------
# One queue per device against two queues (connections) per device sharing
# the host's tags; random 4 KiB reads, 4 in flight per device.  4 x SCALE
# devices, 16 x SCALE tags (as many as in flight), one zn-bench per 4.
ht_devs=$((4 * scale)) ht_tags=$((16 * scale))
ht_one="1 queue x $ht_tags tags, $ht_devs devices"
ht_two="2 queues sharing $ht_tags host tags, $ht_devs devices"
# ht_cmds DEPTH CONNS: the zn-bench command lines, CONNS connections per
# device at DEPTH each.
ht_cmds () {
  local p d line
  for p in $(seq 0 $((scale - 1))); do
    line="$znbench --mode randread --depth $1 --seconds $RUNTIME"
    for d in $(seq $((4 * p)) $((4 * p + 3))); do
      for _ in $(seq "$2"); do line="$line nbd+unix:///nullb$d?socket=$sock"; done
    done
    echo "$line"
  done
}
host_tags () {
  local one=() two=()
  for _ in $(seq "$REPEATS"); do
    nbdkit_srv 16 "$plugin" size=1024 zone_size=64 nr_devices=$ht_devs shared_tags=1 \
      hw_queue_depth=$ht_tags submit_queues=1
    one+=("$(ht_cmds 4 1 | znb_par iops)")
    stop
    nbdkit_srv 16 "$plugin" size=1024 zone_size=64 nr_devices=$ht_devs shared_tags=1 \
      hw_queue_depth=$ht_tags submit_queues=2 shared_tag_bitmap=1
    two+=("$(ht_cmds 2 2 | znb_par iops)")
    stop
  done
  record host_tags "$ht_one" "${one[@]}"
  record host_tags "$ht_two" "${two[@]}"
}

# ---- 3. Zone locking: per-zone locks against one device lock ---------------
# 70 % random reads, writes at the wp of each connection's own zones;
# SCALE zn-bench processes of 4 connections x depth 16, each over its own
# 4 GiB (1024 zones of 4 MiB) of a 4 x SCALE GiB device.
zone_locking () {
  local zr=() dr=() zw=() dw=() uris="$uri0 $uri0 $uri0 $uri0" lock p zl
  for _ in $(seq "$REPEATS"); do
    for lock in 0 1; do
      nbdkit_srv 16 "$plugin" size=$((4096 * scale)) zone_size=4 memory_backed=1 \
        device_lock=$lock irqmode=0
      for p in $(seq 0 $((scale - 1))); do
        echo "$znbench --mode mixed --read-pct 70 --zone 4194304 --depth 16" \
          "--offset $((p << 32)) --span $((1 << 32)) --seconds $RUNTIME $uris"
      done >"$tmp/zl.cmds"
      read -r -a zl <<<"$(znb_par read_iops write_iops <"$tmp/zl.cmds")"
      if [ $lock = 0 ]; then
        zr+=("${zl[0]}"); zw+=("${zl[1]}")
      else
        dr+=("${zl[0]}"); dw+=("${zl[1]}")
      fi
      stop
    done
  done
  record zone_locking "reads, per-zone locks" "${zr[@]}"
  record zone_locking "reads, one device lock" "${dr[@]}"
  record zone_locking "writes, per-zone locks" "${zw[@]}"
  record zone_locking "writes, one device lock" "${dw[@]}"
}

# ---- 0. In flight: nbdkit -t against hw_queue_depth ----------------------
# 1 ms completions, 128 reads in flight from the client on one connection:
# the peak of tags in use shows what reached the device.
inflight () {
  local r peak v
  for t in 16 64; do
    for d in 16 64; do
      v=()
      for _ in $(seq "$REPEATS"); do
        nbdkit_srv "$t" "$plugin" size=1024 zone_size=64 irqmode=2 \
          completion_nsec=1000000 hw_queue_depth=$d
        r=$("$znbench" --mode randread --depth 128 --seconds "$RUNTIME" "$uri0")
        peak=$("$build/cli/zonednull" info --json "$uri0" |
                 /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["tags"]["peak"])')
        v+=("$(echo "$r" | field iops)")
        stop
      done
      record inflight "-t $t hw_queue_depth $d (peak tags $peak)" "${v[@]}"
    done
  done
}

# ---- 4. Peers: the same fio nbd-engine jobs --------------------------------
# fio_iops RW IODEPTH NUMJOBS: summed IOPS of a fio nbd job on $uri0.
fio_iops () {
  local rw=$1 depth=$2 jobs=$3
  fio --name=peer --ioengine=nbd --uri="$uri0" --rw="$rw" --bs=4k \
      --iodepth="$depth" --numjobs="$jobs" --group_reporting \
      --size=2g --offset_increment=2g --runtime="$RUNTIME" \
      $( [ "$rw" = randread ] && echo --time_based ) \
      --output-format=json 2>>"$tmp/fio.log" |
    /usr/bin/python3 -c '
import json, sys
text = sys.stdin.read()            # the nbd engine prints a line first
j = json.loads(text[text.index("{"):])["jobs"][0]
print(round(j["read"]["iops"] + j["write"]["iops"]))'
}

peer_jobs="randread:1:1 randread:16:1 randread:64:1 write:16:1 write:16:2"

# peer_server NAME: starts one of the compared servers.  Without timed
# completion the plugin has nbdkit run a connection's requests in the
# order they were sent (its thread_model), as zonednull-server does, so
# fio's sequential writes meet the strict zone rule.  Zones of 256 MiB;
# each job writes its own 2 GiB from a zone start.
peer_server () {
  case $1 in
  zonednull-null) nbdkit_srv 64 "$plugin" size=8192 zone_size=256 \
                    memory_backed=0 ;;
  nbdkit-null)    nbdkit_srv 64 null size=8G ;;
  zonednull-memory) nbdkit_srv 64 "$plugin" size=8192 zone_size=256 \
                    memory_backed=1 ;;
  nbdkit-memory)  nbdkit_srv 64 memory size=8G ;;
  server-null)    start "$server" -f -U "$sock" size=8192 zone_size=256 \
                    memory_backed=0 ;;
  server-memory)  start "$server" -f -U "$sock" size=8192 zone_size=256 \
                    memory_backed=1 ;;
  qemu-nbd-null)  start qemu-nbd --socket="$sock" --shared=4 --persistent \
                    --image-opts driver=null-co,size=8589934592,read-zeroes=on ;;
  esac
}

peers () {
  local servers="zonednull-null server-null nbdkit-null zonednull-memory server-memory nbdkit-memory"
  command -v qemu-nbd >/dev/null && servers="$servers qemu-nbd-null"
  local -A v
  # On a virtual machine the first touch of a page of guest memory is a
  # fault in the host too: one untimed pass over 4 GiB first, so that the
  # memory-backed servers do not pay for it in turn.
  peer_server nbdkit-memory
  fio_iops write 16 2 >/dev/null
  stop
  # The servers take turns within each repeat, so that a slow spell of the
  # machine hits them all alike.
  for job in $peer_jobs; do
    IFS=: read -r rw depth jobs <<<"$job"
    v=()
    for _ in $(seq "$REPEATS"); do
      for srv in $servers; do
        peer_server "$srv"
        v[$srv]="${v[$srv]:-} $(fio_iops "$rw" "$depth" "$jobs")"
        stop
      done
    done
    for srv in $servers; do
      # shellcheck disable=SC2086 # one word per repeat
      record peers "$srv $rw qd$depth jobs$jobs" ${v[$srv]}
    done
  done
}

get () { awk -F'\t' -v e="$1" -v c="$2" '$1 == e && $2 == c { print $3 }' "$results"; }

report () {
  {
    echo "# zonednull benchmarks"
    echo
    echo "$(date -u +%Y-%m-%d) on $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg);"
    echo "medians of $REPEATS runs of ${RUNTIME} s. IOPS are 4 KiB requests."
    echo "SCALE $scale (host_tags: $ht_devs devices; zone_locking: $((4 * scale)) connections x depth 16; $scale zn-bench process(es) each)."
    echo
    echo "| Experiment | Case | IOPS (median) |"
    echo "|---|---|---|"
    awk -F'\t' '{ printf "| %s | %s | %.0f |\n", $1, $2, $3 }' "$results"
    echo
    echo "| Ratio | Value | Target |"
    echo "|---|---|---|"
    echo "| pipelined / zone-locked, nbdkit | $(bench_ratio "$(get pipelining "pipelined (pipeline_zoned_writes=1)")" "$(get pipelining "zone-locked (1 write/zone in flight)")") | >= 10 (seed: 123K/6K = 20) |"
    echo "| pipelined / zone-locked, zonednull-server | $(bench_ratio "$(get pipelining "server pipelined (pipeline_zoned_writes=1)")" "$(get pipelining "server zone-locked (1 write/zone in flight)")") | >= 10 (seed: 123K/6K = 20) |"
    echo "| 2 queues host tags / 1 queue | $(bench_ratio "$(get host_tags "$ht_two")" "$(get host_tags "$ht_one")") | seed: 1.5 (16 cores) |"
    echo "| reads, per-zone / device lock | $(bench_ratio "$(get zone_locking "reads, per-zone locks")" "$(get zone_locking "reads, one device lock")") | seed: 3 (48 cores) |"
    for job in $peer_jobs; do
      IFS=: read -r rw depth jobs <<<"$job"
      k="$rw qd$depth jobs$jobs"
      echo "| zonednull(memory_backed=0) / nbdkit null, $k | $(bench_ratio "$(get peers "zonednull-null $k")" "$(get peers "nbdkit-null $k")") | >= 0.9 |"
      echo "| zonednull(memory_backed=1) / nbdkit memory, $k | $(bench_ratio "$(get peers "zonednull-memory $k")" "$(get peers "nbdkit-memory $k")") | >= 0.9 |"
      echo "| zonednull-server(memory_backed=0) / nbdkit null, $k | $(bench_ratio "$(get peers "server-null $k")" "$(get peers "nbdkit-null $k")") | >= 0.9 |"
      echo "| zonednull-server(memory_backed=1) / nbdkit memory, $k | $(bench_ratio "$(get peers "server-memory $k")" "$(get peers "nbdkit-memory $k")") | >= 0.9 |"
      if [ -n "$(get peers "qemu-nbd-null $k")" ]; then
        echo "| zonednull(memory_backed=0) / qemu-nbd null-co, $k | $(bench_ratio "$(get peers "zonednull-null $k")" "$(get peers "qemu-nbd-null $k")") | reference |"
      fi
    done
  } >"$OUT/results.md"
  cp "$results" "$OUT/results.tsv"
  if command -v gnuplot >/dev/null; then
    awk -F'\t' '{ gsub(/ /, "_", $2); print NR, $2, $3 }' "$results" >"$tmp/plot.dat"
    gnuplot <<GP
set terminal png noenhanced size 1400,900
set output "$OUT/results.png"
set style fill solid
set boxwidth 0.7
set bmargin 22
set rmargin 10
set xtics rotate by -60 font ",9"
set ylabel "IOPS (median)"
plot "$tmp/plot.dat" using 1:3:xtic(2) with boxes notitle
GP
  fi
  cat "$OUT/results.md"
}

# ---- 5. zonednull-server against nbdkit (its own script and table) ---------
server () {
  REPEATS=$REPEATS SECONDS_PER_RUN=$RUNTIME sh bench/server-vs-nbdkit.sh "$build" |
    tee "$OUT/server-vs-nbdkit.txt"
}

# ---- 6. the same over TLS (its own script and table) -------------------------
tls () {
  REPEATS=$REPEATS SECONDS_PER_RUN=$RUNTIME sh bench/tls-vs-nbdkit.sh "$build" |
    tee "$OUT/tls-vs-nbdkit.txt"
}

# ---- 7. backing_dir against nbdkit file and memory; start-up of 20 TiB ------
backing () {
  REPEATS=$REPEATS SECONDS_PER_RUN=$RUNTIME sh bench/backing-dir.sh "$build" |
    tee "$OUT/backing-dir.txt"
}

# ---- 8. NVMe/TCP against nvmet-tcp and NBD, in a Linux 6.12 VM -------------
nvme () {
  REPEATS=$REPEATS RUNTIME=$RUNTIME OUT=$OUT/nvme-vs-nvmet.txt sh bench/nvme-vs-nvmet.sh "$build"
}

# ---- 9. zonednull-server before and after issue 45 (its own script and table)
threads () {
  REPEATS=$REPEATS SECONDS_PER_RUN=$RUNTIME OUT=$OUT/server-threads.txt \
    sh bench/server-threads.sh "${OLD_BUILD:-$build}" "$build"
}

# Not in the default list: backing's 20 TiB part makes 81,920 files; nvme
# boots a VM (the 6.12 tier's kernel and tools, downloaded once); threads
# takes 4 minutes at RUNTIME=3 and needs a second build to say much.
only=${ONLY:-"inflight pipelining host_tags zone_locking peers server tls"}
for e in $only; do $e; done
report
