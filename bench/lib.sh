# SPDX-License-Identifier: BSD-3-Clause
# bench/lib.sh: what the benchmark scripts share (sourced by run.sh,
# server-vs-nbdkit.sh, tls-vs-nbdkit.sh, backing-dir.sh, nvme-vs-nvmet.sh,
# old-vs-new.sh, server-threads.sh, server-loops.sh and ublk-vs-nullblk.sh).
# POSIX sh.
#
#   bench_start READY COMMAND...  a server in the background, ready once
#                                 READY exists: its socket, or its PID file
#                                 (non-empty); sets bench_pid
#   bench_stop [PID...]           stops those servers (default: every one
#                                 bench_start started), by PID
#   bench_fio WHO DIR CASE NAME REPEAT PID FIO-OPTION...
#                                 one fio run, its IOPS, PID's CPU and
#                                 fio's appended to DIR/raw
#   bench_median [COLUMN]         the median of the numbers on stdin
#   bench_ratio A B [SUFFIX]      A / B as "%.2f" SUFFIX, "n/a" when B is 0
#   $bench_awk_med                awk's med(a, k): the median of
#                                 a[k, 1..n[k]], 0 when n[k] is 0, for the
#                                 scripts' awk programs to include
# shellcheck shell=sh

bench_pids=

# bench_start READY COMMAND...: COMMAND with stdin from /dev/null (its
# output as the caller redirects the call), waited for up to 30 s.  READY
# is removed first.  Returns 1, the child stopped, when COMMAND exits before
# READY appears or the time runs out.
bench_start () {
  bs_ready=$1
  shift
  rm -f "$bs_ready"
  "$@" </dev/null &
  bench_pid=$!
  bs_n=0
  until [ -S "$bs_ready" ] || [ -s "$bs_ready" ]; do
    if ! kill -0 "$bench_pid" 2>/dev/null || [ "$bs_n" -ge 600 ]; then
      kill "$bench_pid" 2>/dev/null || :
      wait "$bench_pid" 2>/dev/null || :
      return 1
    fi
    sleep 0.05
    bs_n=$((bs_n + 1))
  done
  bench_pids="$bench_pids $bench_pid"
}

bench_stop () {
  [ $# -gt 0 ] || set -- $bench_pids
  for bs_p in "$@"; do
    kill "$bs_p" 2>/dev/null || :
    wait "$bs_p" 2>/dev/null || :
    bs_rest=
    for bs_q in $bench_pids; do [ "$bs_q" = "$bs_p" ] || bs_rest="$bs_rest $bs_q"; done
    bench_pids=$bs_rest
  done
}

# bench_median [COLUMN]: of an even count, the mean of the middle two.
bench_median () {
  awk -v k="${1:-1}" '{ print $k }' | sort -g |
    awk '{ v[NR] = $1 }
         END { if (NR % 2) print v[(NR + 1) / 2]
               else if (NR) printf "%.10g\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

bench_awk_med='
    function med(a, k,   m, j, t, v, c) {
      m = n[k]; if (!m) return 0
      for (j = 1; j <= m; j++) v[j] = a[k, j] + 0
      for (j = 2; j <= m; j++) { t = v[j]; c = j - 1; while (c > 0 && v[c] > t) { v[c + 1] = v[c]; c-- } v[c + 1] = t }
      return (m % 2) ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
    }
'

bench_ratio () {
  awk -v a="$1" -v b="$2" -v s="${3:-}" 'BEGIN { if (b + 0 == 0) print "n/a"; else printf "%.2f%s\n", a / b, s }'
}

# bench_run WHO DIR CASE NAME REPEAT PID CMD...: CMD, which prints its
# IOPS (nothing if it failed: then the script ends, its message naming
# WHO, with the tail of DIR/fio.log); appends "CASE NAME REPEAT IOPS CPU
# CLIENT" to DIR/raw: CPU is PID's user and system time over the run in
# cores (PID "self": no process of its own, 0), CLIENT that of CMD and
# every process it waited for (the client, on the same cores).
bench_run () {
  br_who=$1 br_dir=$2 br_case=$3 br_name=$4 br_repeat=$5 br_pid=$6
  shift 6
  br_c0=$(bench_cpu_ticks "$br_pid") br_k0=$(bench_child_ticks) br_t0=$(date +%s%N)
  br_io=$("$@")
  br_c1=$(bench_cpu_ticks "$br_pid") br_k1=$(bench_child_ticks) br_t1=$(date +%s%N)
  [ -n "$br_io" ] || {
    echo "$br_who: the client failed on $br_name ($br_case):" >&2
    tail -n 5 "$br_dir/fio.log" >&2
    exit 1
  }
  echo "$br_case $br_name $br_repeat $br_io $(awk -v c="$((br_c1 - br_c0))" \
         -v k="$((br_k1 - br_k0))" -v hz="$(getconf CLK_TCK)" -v ns="$((br_t1 - br_t0))" \
         'BEGIN { printf "%.2f %.2f", c / hz / (ns / 1e9), k / hz / (ns / 1e9) }')" >>"$br_dir/raw"
  echo "$br_who: $br_case $br_name run $br_repeat: $br_io IOPS" >&2
}

# bench_fio WHO DIR CASE NAME REPEAT PID FIO-OPTION...: bench_run of one
# fio run (4 KiB, terse) with the options given, IOPS its reads and
# writes.  fio's messages go to DIR/fio.log.  A failed job (terse field
# 5, its error: a failed write ends it early, with its IOPS so far) ends
# the script.
bench_fio () {
  bf_who=$1 bf_dir=$2 bf_case=$3 bf_name=$4 bf_repeat=$5 bf_pid=$6
  shift 6
  bench_run "$bf_who" "$bf_dir" "$bf_case" "$bf_name" "$bf_repeat" "$bf_pid" \
    bench_fio_iops "$@"
}

# bench_fio_iops FIO-OPTION...: the IOPS of bench_fio's fio run.
bench_fio_iops () {
  fio --name=bench --bs=4k --group_reporting --output-format=terse \
      --terse-version=3 "$@" 2>>"$bf_dir/fio.log" |
    awk -F';' '/^3;/ { print ($5 == 0) ? $8 + $49 : "" }'
}

# bench_cpu_ticks PID: its user and system time so far, in clock ticks
# ("self": 0).
bench_cpu_ticks () {
  [ "$1" = self ] && echo 0 || awk '{ print $14 + $15 }' "/proc/$1/stat"
}

# bench_child_ticks: the user and system time, in clock ticks, of the
# children this shell has waited for, theirs included (the kernel adds a
# reaped child's own waited-for children to it): a command substitution's
# client once it has returned.  The command name in /proc's stat is this
# shell's, without spaces.
bench_child_ticks () {
  awk '{ print $16 + $17 }' "/proc/$$/stat"
}
