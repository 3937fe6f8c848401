#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# bench/qd1-host.sh [BUILDDIR]: where a QD1 write's time goes on the NBD
# front ends that run on the host (issue 36, item 1).  fio 3.33 (--thread,
# so that all its threads are one process) writes 4 KiB sequentially, one
# write at a time, into fresh zones of each target:
#   zn_unix     zonednull-server on a Unix socket, zonednull's fio engine
#               (zonemode=zbd)
#   zn_nopoll   the same with --busy-poll=0 (always sleep between requests)
#   zn_tcp      zonednull-server on TCP 127.0.0.1, zonednull's engine
#   nbdkit_zn   nbdkit with the zonednull plugin, zonednull's engine
#   zn_plain    zonednull-server on a Unix socket, zonednull's engine
#               without zonemode=zbd (plain sequential writes: fio's zone
#               handling is the difference to zn_unix)
#   zn_stock    the same with fio's stock nbd engine (the engine's own
#               cost is the difference to zn_plain)
#   nbdkit_mem  nbdkit memory, fio's stock nbd engine: a peer without the
#               zoned model, the reference of the ratios
# Every server has the device CONF (nbdkit memory the same size).  Each of
# REPEATS rounds runs every target once (which goes first rotates), each
# run writing ZONES fresh zones.  A run's counters are read by fio itself,
# in its exec_prerun and exec_postrun hooks, right before the first write
# and right after the last: per thread of fio and of the server the CPU
# time (schedstat's first field, ns) and the voluntary and involuntary
# context switches (status), the wall clock, and when zonednull-server has
# --stats (it then prints its counters on SIGUSR1) its loop counters and
# the time from each request's arrival to its reply.  Per write means
# divided by the run's writes (fio's own count).  fio's IOPS and mean
# completion latency come from its terse output.
# Then, per target, system calls from runs under strace: the server
# traced (strace -f -c -p) and, in other runs, fio (strace -f -c fio), each
# once with 1 zone and once with 2; per write is the difference of the two
# divided by a zone's writes, so that start-up and connection set-up cancel
# out.  strace slows every call, so these runs give counts, not times.
# A benchmark, not a test: nothing passes or fails on speed.  Medians go to
# stdout and OUT (default bench/results/qd1-host.txt), every run's numbers
# to OUT's .raw.  Run it holding the VM lock, so that it never overlaps
# another benchmark on this small machine:
#
#   bench/qd1-host.sh [BUILDDIR]     (default ./build)
#   REPEATS=5 ZONES=2 TARGETS="zn_unix nbdkit_mem" STRACE=0 OUT=...
#   OLD_ENGINE=/tmp/old/zonednull-fio.so adds the target zn_old: zn_unix
#   with another build's engine, for a change of the engine side by side
set -eu

# --snap FILE FIO_PID SERVER_PID SERVER_LOG: run by fio's exec hooks.
# Lines "fio|srv TID CPU_NS VOLUNTARY INVOLUNTARY", "time NS", and the
# server's latest "stats ..." line when SERVER_LOG is not "-".  The clock
# is read last before the run (FILE .../pre) and first after it.
# --perf-start DIR FIO_PID SERVER_PID, --perf-stop DIR: the same hooks in
# the perf runs, which count system calls in the kernel (perf stat's
# tracepoints: nothing stops, unlike under strace).
perf_events=raw_syscalls:sys_enter
for c in epoll_wait poll ppoll recvfrom recvmsg read sendto sendmsg write futex; do
  perf_events=$perf_events,syscalls:sys_enter_$c
done
if [ "${1:-}" = --perf-start ]; then
  for who in fio srv; do
    [ $who = fio ] && p=$3 || p=$4
    perf stat -x, -e $perf_events -p "$p" -o "$2/perf.$who" >/dev/null 2>&1 &
    echo $! >>"$2/perf.pids"
  done
  sleep 0.5                     # perf is counting by then
  exit 0
fi
if [ "${1:-}" = --perf-stop ]; then
  for p in $(cat "$2/perf.pids"); do
    kill -INT "$p"
    i=0
    while kill -0 "$p" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
  done
  exit 0
fi
if [ "${1:-}" = --snap ]; then
  out=$2 fio_pid=$3 srv_pid=$4 log=$5
  {
    [ "${out##*/}" = pre ] || echo "time $(date +%s%N)"
    for who in fio srv; do
      [ $who = fio ] && p=$fio_pid || p=$srv_pid
      awk -v w=$who 'FNR == 1 { split(FILENAME, f, "/"); t = f[5]; ts[t] = 1 }
        FILENAME ~ /schedstat$/ { c[t] = $1 }
        /^voluntary_ctxt/ { v[t] = $2 } /^nonvoluntary_ctxt/ { n[t] = $2 }
        END { for (t in ts) if (t in c) print w, t, c[t], v[t], n[t] }' \
        /proc/"$p"/task/*/schedstat /proc/"$p"/task/*/status 2>/dev/null || :
    done
    if [ "$log" != - ]; then
      # The server prints its counters on SIGUSR1: wait (up to 5 s) for
      # one line more than before.
      n0=$(grep -c 'zonednull-server: stats:' "$log" || :)
      kill -USR1 "$srv_pid"
      i=0
      while [ "$(grep -c 'zonednull-server: stats:' "$log" || :)" -le "$n0" ] && [ $i -lt 100 ]; do
        sleep 0.05
        i=$((i + 1))
      done
      grep 'zonednull-server: stats:' "$log" | tail -n 1 | sed 's/^.*stats: */stats /'
    fi
    [ "${out##*/}" != pre ] || echo "time $(date +%s%N)"
  } >"$out"
  exit 0
fi

# The URIs' "?" is no pattern.
set -f
build=${1:-$(dirname "$0")/../build}
build=$(cd "$build" && pwd) || exit 1
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "$(dirname "$0")/.."
top=$(pwd)
. bench/lib.sh
server=$build/server/zonednull-server
plugin=$build/plugin/.libs/nbdkit-zonednull-plugin.so
engine=$build/engine/.libs/zonednull-fio.so
for f in "$server" "$plugin" "$engine"; do
  [ -e "$f" ] || { echo "qd1-host: no $f (build first, configured --with-fio)" >&2; exit 1; }
done
for c in fio nbdkit strace; do
  command -v $c >/dev/null || { echo "qd1-host: $c is not installed" >&2; exit 1; }
done
REPEATS=${REPEATS:-5}
ZONES=${ZONES:-2}
STRACE=${STRACE:-1}
TARGETS=${TARGETS:-zn_unix zn_nopoll zn_tcp nbdkit_zn zn_plain zn_stock nbdkit_mem}
OLD_ENGINE=${OLD_ENGINE:-}
if [ -n "$OLD_ENGINE" ]; then
  [ -f "$OLD_ENGINE" ] || { echo "qd1-host: OLD_ENGINE ($OLD_ENGINE) is no file" >&2; exit 1; }
  TARGETS="$TARGETS zn_old"
fi
CONF=${CONF:-size=512 zone_size=16 zone_nr_conv=0 memory_backed=1 blocksize=4096 submit_queues=1 hw_queue_depth=64 irqmode=1}
OUT=${OUT:-$top/bench/results/qd1-host.txt}
zone_mb=$(echo " $CONF" | sed -n 's/.* zone_size=\([0-9]*\).*/\1/p')
size_mb=$(echo " $CONF" | sed -n 's/.* size=\([0-9]*\).*/\1/p')
[ -n "$zone_mb" ] && [ -n "$size_mb" ] || { echo "qd1-host: CONF needs size= and zone_size=" >&2; exit 1; }
need=$((REPEATS * ZONES + STRACE * (6 + ZONES)))
[ $((size_mb / zone_mb)) -ge $need ] ||
  { echo "qd1-host: CONF's size=$size_mb holds $((size_mb / zone_mb)) zones; REPEATS x ZONES + 6 + ZONES (strace, perf) = $need needed" >&2; exit 1; }
per_zone=$((zone_mb * 256))     # 4 KiB writes per zone
stats=
"$server" --help 2>&1 | grep -q -- --stats && stats=--stats

tmp=$(mktemp -d /tmp/zn-qd1-host.XXXXXX)
trap 'bench_stop; rm -rf "$tmp"' EXIT
port=$((20000 + $$ % 20000))

# start TARGET: its server; sets TARGET_pid, TARGET_uri, TARGET_log (the
# server's stderr, "-" when it prints no stats) and TARGET_next (the next
# fresh zone).
start () {
  s=$tmp/$1.sock log=$tmp/$1.log ready=$s uri="nbd+unix:///?socket=$s"
  case $1 in
    zn_unix|zn_plain|zn_stock|zn_old) set -- "$1" "$server" $stats -f -U "$s" $CONF ;;
    zn_nopoll) set -- "$1" "$server" $stats --busy-poll=0 -f -U "$s" $CONF ;;
    zn_tcp)
      ready=$tmp/$1.pid uri="nbd://127.0.0.1:$port/"
      set -- "$1" "$server" $stats -f -i 127.0.0.1 -p $port -P "$ready" $CONF ;;
    nbdkit_zn) set -- "$1" nbdkit -f -U "$s" "$plugin" $CONF ;;
    nbdkit_mem) set -- "$1" nbdkit -f -U "$s" memory size=${size_mb}M ;;
    *) echo "qd1-host: unknown target $1" >&2; exit 1 ;;
  esac
  t=$1
  shift
  bench_start "$ready" "$@" 2>"$log" || { echo "qd1-host: $t did not start: $*" >&2; cat "$log" >&2; exit 1; }
  [ -n "$stats" ] && [ "$1" = "$server" ] || log=-
  eval "${t}_pid=\$bench_pid ${t}_uri=\$uri ${t}_log=\$log ${t}_next=0"
}

# take TARGET ZONES: in $args fio's options for the next ZONES fresh zones
# of TARGET, which they use up.
take () {
  eval "uri=\$${1}_uri next=\$${1}_next"
  eval "${1}_next=$((next + $2))"
  case $1 in
    zn_stock|nbdkit_mem) args=--ioengine=nbd ;;
    zn_plain) args="--ioengine=external:$engine --filename=zn" ;;
    zn_old) args="--ioengine=external:$OLD_ENGINE --filename=zn --zonemode=zbd" ;;
    *) args="--ioengine=external:$engine --filename=zn --zonemode=zbd" ;;
  esac
  args="$args --uri=$uri --name=w --thread --rw=write --bs=4k --iodepth=1 --direct=1"
  args="$args --offset=$((next * zone_mb))M --size=$(($2 * zone_mb))M --output-format=terse --terse-version=3"
}

# run TARGET ROUND: one measured run; appends its line to $tmp/raw.
run () {
  eval "pid=\$${1}_pid log=\$${1}_log"
  take "$1" "$ZONES"
  # shellcheck disable=SC2086
  (cd "$tmp" && fio $args --exec_prerun="sh $self --snap $tmp/pre \$PPID $pid $log" \
     --exec_postrun="sh $self --snap $tmp/post \$PPID $pid $log") >"$tmp/fio.out" 2>&1 ||
    { echo "qd1-host: fio on $1 failed:" >&2; cat "$tmp/fio.out" >&2; exit 1; }
  awk -v t="$1" -v r="$2" -F'[ ;]' '
    FILENAME ~ /fio.out$/ { if ($1 == 3) { n = $47 / 4; iops = $49; clat = $57 }; next }
    FILENAME ~ /pre$/ { if ($1 == "time") t0 = $2
                        else if ($1 == "stats") for (i = 2; i <= NF; i++) { split($i, kv, "="); s0[kv[1]] = kv[2] }
                        else { c0[$1, $2] = $3; v0[$1, $2] = $4; i0[$1, $2] = $5 }; next }
    $1 == "time" { t1 = $2; next }
    $1 == "stats" { for (i = 2; i <= NF; i++) { split($i, kv, "="); s1[kv[1]] = kv[2] }; next }
    { c = $3 - c0[$1, $2]; v = $4 - v0[$1, $2]; iv = $5 - i0[$1, $2]
      if ($1 == "fio") {
        # The job thread is the one that used the most CPU.
        if (c > jc) { oc += jc; jc = c; jv = v; ji = iv } else oc += c
        fv += v; fi += iv
      } else { sc += c; sv += v; si += iv; if (c > 0) sn++ } }
    END {
      if (n <= 0) { print "qd1-host: no writes in a run of " t > "/dev/stderr"; exit 1 }
      printf "%s %s writes=%d iops=%s clat_us=%s wall_us=%.2f", t, r, n, iops, clat, (t1 - t0) / 1e3 / n
      printf " fio_job_cpu_us=%.2f fio_other_cpu_us=%.2f fio_job_vcs=%.3f fio_job_ics=%.3f", jc / 1e3 / n, oc / 1e3 / n, jv / n, ji / n
      printf " srv_cpu_us=%.2f srv_threads_ran=%d srv_vcs=%.3f srv_ics=%.3f", sc / 1e3 / n, sn, sv / n, si / n
      # The server counters, per request it counted.
      q = s1["requests"] - s0["requests"]
      if (q > 0) {
        for (k in s1) if (k !~ /^reply_ns_(p50|max)$/ && k != "requests" && k in s0)
          printf " %s=%.3f", k, (s1[k] - s0[k]) / q
        printf " srv_requests=%d reply_ns_p50_since_start=%s", q, s1["reply_ns_p50"]
      }
      printf "\n" }' "$tmp/fio.out" "$tmp/pre" "$tmp/post" >>"$tmp/raw"
}

# strace_calls FILE: "total N" and "NAME N" lines of an strace -c summary.
strace_calls () {
  awk '$1 ~ /^[0-9.]+$/ && NF >= 5 { print $NF, $4 }' "$1"
}

# traced TARGET: the strace runs; appends "TARGET srv|fio NAME PER_WRITE"
# lines to $tmp/strace.
traced () {
  for z in 1 2; do
    eval "pid=\$${1}_pid"
    strace -f -c -o "$tmp/srv.$z" -p "$pid" 2>/dev/null &
    sp=$!
    # Attached once the server's first thread has a tracer.
    i=0
    until grep -q '^TracerPid:[[:space:]]*[1-9]' /proc/"$pid"/status || [ $i -ge 200 ]; do sleep 0.05; i=$((i + 1)); done
    take "$1" $z
    # shellcheck disable=SC2086
    (cd "$tmp" && fio $args) >"$tmp/fio.out" 2>&1 || { echo "qd1-host: fio on $1 failed under strace" >&2; exit 1; }
    kill -INT $sp
    wait $sp || :
    take "$1" $z
    # shellcheck disable=SC2086
    (cd "$tmp" && strace -f -c -o "$tmp/fio.$z" fio $args) >"$tmp/fio.out" 2>&1 ||
      { echo "qd1-host: fio on $1 failed under strace" >&2; exit 1; }
  done
  for who in srv fio; do
    strace_calls "$tmp/$who.1" >"$tmp/a"
    strace_calls "$tmp/$who.2" | awk -v t="$1" -v w=$who -v n=$per_zone '
      NR == FNR { a[$1] = $2; next } { printf "%s %s %s %.3f\n", t, w, $1, ($2 - a[$1]) / n }' "$tmp/a" - >>"$tmp/strace"
  done
}

# counted TARGET: one run of ZONES zones under perf stat; appends
# "TARGET srv|fio NAME PER_WRITE" lines to $tmp/perf.
counted () {
  eval "pid=\$${1}_pid"
  take "$1" "$ZONES"
  rm -f "$tmp/perf.pids" "$tmp/perf.fio" "$tmp/perf.srv"
  # shellcheck disable=SC2086
  (cd "$tmp" && fio $args --exec_prerun="sh $self --perf-start $tmp \$PPID $pid" \
     --exec_postrun="sh $self --perf-stop $tmp") >"$tmp/fio.out" 2>&1 ||
    { echo "qd1-host: fio on $1 failed under perf:" >&2; cat "$tmp/fio.out" >&2; exit 1; }
  n=$(awk -F';' '$1 == 3 { print $47 / 4 }' "$tmp/fio.out")
  for who in srv fio; do
    awk -F, -v t="$1" -v w=$who -v n="$n" '$3 ~ /sys_enter/ && $1 ~ /^[0-9]+$/ {
        k = $3; sub(/^raw_syscalls:sys_enter$/, "total", k); sub(/^syscalls:sys_enter_/, "", k)
        printf "%s %s %s %.3f\n", t, w, k, $1 / n }' "$tmp/perf.$who" >>"$tmp/perf"
  done
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
date0=$(date -u '+%Y-%m-%d %H:%M UTC')
: >"$tmp/raw"
: >"$tmp/strace"
: >"$tmp/perf"
for t in $TARGETS; do start "$t"; done
round=1
while [ $round -le "$REPEATS" ]; do
  # Rotate who goes first.
  set -- $TARGETS
  k=1
  while [ $k -lt $(( (round - 1) % $# + 1 )) ]; do set -- "$@" "$1"; shift; k=$((k + 1)); done
  for t in "$@"; do
    run "$t" $round
    echo "qd1-host: round $round $(tail -n 1 "$tmp/raw" | cut -d' ' -f1,4-6)" >&2
  done
  round=$((round + 1))
done
if [ "$STRACE" = 1 ]; then
  for t in $TARGETS; do
    # perf stat's tracepoints may be missing or not allowed: n/a then.
    if perf stat -e raw_syscalls:sys_enter true >/dev/null 2>&1; then counted "$t"; fi
    traced "$t"
    echo "qd1-host: perf and strace runs of $t done" >&2
  done
fi
load1=$(cut -d' ' -f1-3 /proc/loadavg)

# med TARGET KEY: the median over the rounds of KEY=value in the raw lines.
med () {
  awk -v t="$1" -v k="$2" '$1 == t { for (i = 3; i <= NF; i++) if (index($i, k "=") == 1) print substr($i, length(k) + 2) }' "$tmp/raw" |
    bench_median
}
cell () { v=$(med "$1" "$2"); echo "${v:-n/a}"; }
# calls strace|perf TARGET srv|fio NAME: syscalls per write.
calls () {
  v=$(awk -v t="$2" -v w="$3" -v n="$4" '$1 == t && $2 == w && $3 == n { print $4 }' "$tmp/$1")
  echo "${v:-n/a}"
}
# top strace|perf TARGET srv|fio: the three most frequent syscalls per write.
top () {
  awk -v t="$2" -v w="$3" '$1 == t && $2 == w && $3 != "total" && $4 >= 0.05 { print $4, $3 }' "$tmp/$1" |
    sort -rg | head -n 3 | awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1 }'
}

table () {
  echo "QD1 4 KiB sequential writes on the host; fio $(fio --version | sed 's/^fio-//') --thread, one job, iodepth 1."
  echo "$(nproc) CPUs, $date0, load average $load0 at the start, $load1 at the end."
  echo "Device: $CONF (nbdkit memory: size=${size_mb}M)."
  echo "Medians of $REPEATS runs per target of $((ZONES * per_zone)) writes ($ZONES fresh zones), the targets taking turns."
  echo "zonednull-server --stats: $( [ -n "$stats" ] && echo yes || echo "not in this build (n/a)")."
  echo
  echo "Per write: IOPS and fio's mean completion latency (us); wall = (post - pre) / writes, us;"
  echo "CPU in us (schedstat), job = fio's job thread, other = fio's other threads, srv = all server threads"
  echo "(ran = how many used CPU); vcs/ics = voluntary/involuntary context switches."
  printf '%-10s %7s %6s %6s %6s %6s %6s %6s %6s %6s %4s %6s %6s\n' target IOPS x-mem clat wall \
    job-cpu oth-cpu job-vcs job-ics srv-cpu ran srv-vcs srv-ics
  for t in $TARGETS; do
    i=$(cell "$t" iops)
    printf '%-10s %7.0f %6s %6s %6s %6s %6s %6s %6s %6s %4s %6s %6s\n' "$t" "$i" \
      "$(bench_ratio "$i" "$(cell nbdkit_mem iops)" x)" "$(cell "$t" clat_us | xargs printf '%.1f')" \
      "$(cell "$t" wall_us)" "$(cell "$t" fio_job_cpu_us)" "$(cell "$t" fio_other_cpu_us)" \
      "$(cell "$t" fio_job_vcs)" "$(cell "$t" fio_job_ics)" "$(cell "$t" srv_cpu_us)" \
      "$(cell "$t" srv_threads_ran)" "$(cell "$t" srv_vcs)" "$(cell "$t" srv_ics)"
  done
  echo
  echo "zonednull-server's own counters per request (--stats; n/a without it):"
  echo "loop = loop iterations, sleeps, polls = busy polls, poll-us = time busy polling (us),"
  echo "recv/send = calls, reply = mean arrival-to-reply time (us)."
  printf '%-10s %6s %6s %6s %7s %6s %6s %7s\n' target loop sleeps polls poll-us recv send reply
  for t in $TARGETS; do
    case $t in nbdkit*) continue ;; esac
    printf '%-10s %6s %6s %6s %7s %6s %6s %7s\n' "$t" "$(cell "$t" loop_iterations)" "$(cell "$t" sleeps)" \
      "$(cell "$t" busy_polls)" "$(v=$(med "$t" busy_poll_ns); [ -n "$v" ] && awk -v v="$v" 'BEGIN { printf "%.2f", v / 1e3 }' || echo n/a)" \
      "$(cell "$t" recv_calls)" "$(cell "$t" send_calls)" \
      "$(v=$(med "$t" reply_ns_sum); [ -n "$v" ] && awk -v v="$v" 'BEGIN { printf "%.2f", v / 1e3 }' || echo n/a)"
  done
  [ "$STRACE" = 1 ] || return 0
  echo
  echo "System calls per write, counted by perf stat's tracepoints in a run of $((ZONES * per_zone)) writes (nothing"
  echo "stops; the counting itself costs a little; \"total\" is every call, the names are those counted):"
  syscall_table perf
  echo
  echo "System calls per write, from separate runs under strace (1 zone against 2; strace slows"
  echo "every call, so busy polling and sleeping split differently than in the runs above):"
  syscall_table strace
}
# syscall_table strace|perf
syscall_table () {
  printf '%-10s %6s %-46s %6s %s\n' target srv "server's most frequent" fio "fio's most frequent"
  for t in $TARGETS; do
    printf '%-10s %6s %-46s %6s %s\n' "$t" "$(calls "$1" "$t" srv total)" "$(top "$1" "$t" srv)" \
      "$(calls "$1" "$t" fio total)" "$(top "$1" "$t" fio)"
  done
}
table | tee "$tmp/table"
mkdir -p "$(dirname "$OUT")"
cp "$tmp/table" "$OUT"
{ cat "$tmp/raw"; sed 's/^/strace /' "$tmp/strace"; sed 's/^/perf /' "$tmp/perf"; } >"${OUT%.txt}.raw"
