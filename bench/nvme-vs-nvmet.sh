#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# bench/nvme-vs-nvmet.sh [BUILDDIR]: zonednull-server over NVMe/TCP against
# the kernel's nvmet-tcp (exporting a real null_blk of the same
# configuration) and against zonednull-server over NBD (the kernel's nbd
# client), every server inside one VM of Debian's Linux 6.12
# (bookworm-backports) on 127.0.0.1, under qemu TCG with 2 vCPUs.  A
# benchmark, not a test: nothing passes or fails on speed.
#
# The guest's static fio (io_uring, direct=1, 4 KiB) on each target, the
# targets taking turns within each repeat (which goes first rotates):
#   randread_qd16   random reads, iodepth 16, over READ_ZONES zones written
#                   first
#   seqwrite_qd1    sequential writes, iodepth 1, WRITE_ZONES fresh zones
#                   (zonemode=zbd on the zoned targets; from empty zones'
#                   starts on NBD, which is not zoned)
#   seqwrite_qd16   the same at iodepth 16 (one zone at a time: the
#                   kernel's zone write plugging sends one write per zone
#                   to a zoned device; NBD gets all 16)
# Targets (TARGETS, default "nvme nvmet nbd nullb"): nvme = zonednull-server
# --nvme, nvmet = nvmet-tcp over a configfs null_blk, nbd = the same
# zonednull-server's NBD export through nbd-client, nullb = the configfs
# null_blk itself (the floor: no network, no copy).
# Two builds side by side: OLD_SERVER=PATH (another build's
# zonednull-server, copied into the guest beside this one) adds the targets
# nvme-old and nbd-old, the same as nvme and nbd on that server, e.g.
#   OLD_SERVER=/tmp/old/build/server/zonednull-server \
#     TARGETS="nvme nvme-old nbd nbd-old nvmet" bench/nvme-vs-nvmet.sh
# Medians over REPEATS of IOPS per target and the ratios nvme/nvmet,
# nvme/nbd, nvme/nvme-old and nbd/nbd-old (those whose targets ran), and
# per I/O the guest's busy CPU time and the server's own.
# The table goes to stdout and to OUT (default
# bench/results/nvme-vs-nvmet.txt), the raw lines to OUT's .raw.
#
#   bench/nvme-vs-nvmet.sh [BUILDDIR]        default BUILDDIR: ./build
#   REPEATS=3 RUNTIME=3 READ_ZONES=2 WRITE_ZONES=2 bench/nvme-vs-nvmet.sh
#   SERVER_OPTS="--busy-poll=0" zonednull-server's options in the guest
#   OLD_SERVER_OPTS    OLD_SERVER's (default SERVER_OPTS): OLD_SERVER may be
#   this build's server, e.g. with --busy-poll=0
#   STATS=0  the servers without --stats (by default a server that has it
#   runs with it, and the breakdown shows its counters)
#   STRACE=1 one more QD1 write run per server target under strace -c: the
#   server's system calls per write
#   PERF=1   one more under perf record: the share of the server's CPU time
#   in each system call and in user space
#   CONF="size=512 zone_size=16 ..." (zone_size in MiB; no conventional
#   zones, size a multiple: what ZNS takes; nvme and nbd write their own
#   READ_ZONES + 2 x REPEATS x WRITE_ZONES zones of one device, so more
#   repeats need a larger size, and ZN_NVME_MEM, default 3G, the guest's
#   memory, may need to grow with it); ZN_BENCH_KEEP=1 keeps the
#   temporary directory
#
# The VM is the 6.12 tier's NVMe/TCP boot: tests/kernel/check-nvme.sh with
# ZN_NVME_GUEST_SCRIPT (bench/nvme-vs-nvmet-guest.sh, the settings
# prepended), and its caches (ZN_KERNEL_CACHE, default .cache/kernel: the
# kernel, the base initramfs with nvme-tcp, nvmet-tcp and nbd, bookworm's
# nvme-cli, the static fio built from FIO_SRCDIR or the fio source BUILDDIR
# was configured with).
set -eu
# BUILDDIR relative to where the script is called from.
build=${1:-$(dirname "$0")/../build}
build=$(cd "$build" && pwd) || exit 1
[ -f "$build/Makefile" ] || { echo "nvme-vs-nvmet: $build is no build directory" >&2; exit 1; }
cd "$(dirname "$0")/.."
top=$(pwd)
. bench/lib.sh
server=$build/server/zonednull-server
zntrace=$build/tests/kernel/zntrace
REPEATS=${REPEATS:-3}
RUNTIME=${RUNTIME:-3}
READ_ZONES=${READ_ZONES:-2}
WRITE_ZONES=${WRITE_ZONES:-2}
TARGETS=${TARGETS:-nvme nvmet nbd nullb}
CONF=${CONF:-size=512 zone_size=16 zone_nr_conv=0 memory_backed=1 blocksize=4096 submit_queues=1 hw_queue_depth=64 irqmode=1}
OUT=${OUT:-$top/bench/results/nvme-vs-nvmet.txt}
cache=${ZN_KERNEL_CACHE:-$top/.cache/kernel}
zone_mb=$(echo " $CONF" | sed -n 's/.* zone_size=\([0-9]*\).*/\1/p')
[ -n "$zone_mb" ] || { echo "nvme-vs-nvmet: CONF needs zone_size=" >&2; exit 1; }
size_mb=$(echo " $CONF" | sed -n 's/.* size=\([0-9]*\).*/\1/p')
# nvme, nbd and nvme-dl write their own zones of one device.
shares=2
case " $TARGETS " in *" nvme-dl "*) shares=3 ;; esac
need_mb=$((shares * (READ_ZONES + (2 * REPEATS + 2) * WRITE_ZONES) * zone_mb))
[ "${size_mb:-0}" -ge "$need_mb" ] ||
  { echo "nvme-vs-nvmet: CONF's size=${size_mb:-} (MiB) must hold the zones of nvme, nbd (and nvme-dl), $shares x (READ_ZONES + (2 x REPEATS + 2) x WRITE_ZONES) x zone_size = $need_mb" >&2; exit 1; }
old=${OLD_SERVER:-}
if [ -n "$old" ]; then
  # A libtool wrapper's real binary, as tests/kernel/lib.sh's copy_binary.
  [ -x "$(dirname "$old")/.libs/$(basename "$old")" ] && old=$(dirname "$old")/.libs/$(basename "$old")
  [ "$(head -c 4 "$old" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ] ||
    { echo "nvme-vs-nvmet: OLD_SERVER ('$OLD_SERVER') is no executable" >&2; exit 1; }
  # The guest has the libraries of this build's server only.
  libs () { ldd "$1" | sed -n 's/^[[:space:]]*\([^ ]*\) => .*/\1/p' | sort; }
  missing=
  for l in $(libs "$old"); do libs "$server" | grep -qxF "$l" || missing="$missing $l"; done
  [ -z "$missing" ] ||
    { echo "nvme-vs-nvmet: OLD_SERVER needs libraries this build's server does not: $missing" >&2; exit 1; }
fi
[ -x "$zntrace" ] || (cd "$build" && make -s tests/kernel/zntrace) ||
  { echo "nvme-vs-nvmet: cannot build $zntrace" >&2; exit 1; }
fio_src=${FIO_SRCDIR:-$(sed -n 's/^FIO_SRCDIR = //p' "$build/Makefile" 2>/dev/null)}

tmp=$(mktemp -d /tmp/zonednull-nvme-bench.XXXXXX)
[ -n "${ZN_BENCH_KEEP:-}" ] || trap 'rm -rf "$tmp"' EXIT
{
  echo "CONF='$CONF'"
  echo "ZONE_MB=$zone_mb RUNTIME=$RUNTIME REPEATS=$REPEATS READ_ZONES=$READ_ZONES WRITE_ZONES=$WRITE_ZONES"
  echo "TARGETS='$TARGETS' SERVER_OPTS='${SERVER_OPTS:-}' STRACE='${STRACE:-0}' PERF='${PERF:-0}' STATS='${STATS:-1}'"
  [ -z "${OLD_SERVER_OPTS+set}" ] || echo "OLD_SERVER_OPTS='$OLD_SERVER_OPTS'"
  if [ -n "$old" ]; then
    # The old server rides in the script itself: check-nvme.sh copies one
    # server into the guest.  Stripped, it is a third of the size.
    strip -o "$tmp/old-server" "$old" || cp "$old" "$tmp/old-server"
    echo "OLD_SERVER=/tmp/zonednull-server-old"
    echo "base64 -d >\$OLD_SERVER <<'ZN_OLD_SERVER' && chmod 755 \$OLD_SERVER || OLD_SERVER="
    base64 "$tmp/old-server"
    echo "ZN_OLD_SERVER"
  else
    echo "OLD_SERVER="
  fi
  cat "$top/bench/nvme-vs-nvmet-guest.sh"
} >"$tmp/guest.sh"

start=$(date +%s)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "nvme-vs-nvmet: $REPEATS repeats; CONF: $CONF" >&2
rc=0
ZONEDNULL_SRCDIR=$top ZNTRACE=$zntrace ZONEDNULL_SERVER=$server \
  ZN_KERNEL_CACHE=$cache ZN_KERNEL_WORK=$tmp/work ZN_KERNEL_KEEP=$tmp/failed \
  ZN_KERNEL_SEED=1 ZN_NVME_TRACES=0 ZN_NVME_MEM=${ZN_NVME_MEM:-3G} \
  ZN_KERNEL_VM_TIMEOUT=${ZN_KERNEL_VM_TIMEOUT:-$((300 + 12 * REPEATS * (RUNTIME + 20)))} \
  ZN_NVME_GUEST_SCRIPT=$tmp/guest.sh FIO_SRCDIR=$fio_src \
  ZN_NVME_GUEST_TOOLS="$([ "${STRACE:-0}" = 1 ] && echo strace) $([ "${PERF:-0}" = 1 ] && echo perf)" \
  sh "$top/tests/kernel/check-nvme.sh" >"$tmp/tier.log" 2>&1 || rc=$?
end=$(date +%s)
load1=$(cut -d' ' -f1-3 /proc/loadavg)
grep -E '^check-nvme: (SKIP|booting|VM ran|FAIL|ERROR)' "$tmp/tier.log" >&2 || true
sed -n 's/^guest: //p' "$tmp/tier.log" >"$tmp/guest.log"
grep -E '^(INFO|ERROR)' "$tmp/guest.log" >&2 || true
grep -E '^(RESULT|SYSCALLS|PROFILE) ' "$tmp/guest.log" >"$tmp/raw" || true
if [ ! -s "$tmp/raw" ]; then
  echo "nvme-vs-nvmet: no results (check-nvme.sh exit $rc); its log:" >&2
  tail -n 40 "$tmp/tier.log" >&2
  exit 1
fi

# RESULT JOB TARGET REPEAT IOPS CPU_TICKS SERVER_TICKS ELAPSED_TICKS
# Per I/O, medians over the repeats: where each target's time goes.
breakdown () {
  echo "Per I/O (medians): fctx = fio's context switches, gctx = the guest's; srv = the server's CPU time (us,"
  echo "all threads, schedstat) and its voluntary/involuntary context switches; kw = the kernel workers' CPU"
  echo "time (us) and time slices (the NVMe/TCP host and nvmet, nbd's receiver); per request, from the"
  echo "server's --stats: loop sleeps, busy polls, recv and send calls, and the time from the request's"
  echo "arrival to its reply's last byte sent (us); sys = the server's system calls per write (strace run)."
  awk -v targets="$TARGETS" '
'"$bench_awk_med"'
    function put(job, t, name, x) { k = job SUBSEP t SUBSEP name; val[k, ++n[k]] = x }
    function show(job, t, name, fmt,   k) { k = job SUBSEP t SUBSEP name; return n[k] ? sprintf(fmt, med(val, k)) : "-" }
    $1 == "SYSCALLS" && $5 > 0 { if ($4 == "total") sys[$2] = $5 / $3; next }
    $1 == "RESULT" && NF >= 22 && $9 > 0 {
      if (!($2 in seen)) { seen[$2] = 1; jobs[++nj] = $2 }
      put($2, $3, "lat", $5 > 0 ? 1e6 / $5 : 0)
      put($2, $3, "fctx", $10 / $9); put($2, $3, "gctx", $11 / $9)
      put($2, $3, "srv", $12 / $9 / 1000); put($2, $3, "vctx", $13 / $9); put($2, $3, "nvctx", $14 / $9)
      put($2, $3, "kw", $15 / $9 / 1000); put($2, $3, "kws", $16 / $9)
      if ($17 != "-" && $17 > 0) {
        put($2, $3, "sleeps", $18 / $17); put($2, $3, "busy", $19 / $17)
        put($2, $3, "recv", $20 / $17); put($2, $3, "send", $21 / $17); put($2, $3, "reply", $22 / $17 / 1000)
      }
    }
    END {
      nt = split(targets, T, " ")
      printf "%-14s %-9s %7s %5s %5s %7s %9s %7s %5s %6s %5s %5s %5s %7s %5s\n", "job", "target", "1/IOPS", "fctx", "gctx",
        "srv us", "srv v/nv", "kw us", "kw sl", "sleeps", "busy", "recv", "send", "reply", "sys"
      for (j = 1; j <= nj; j++)
        for (i = 1; i <= nt; i++) {
          t = T[i]; if (!n[jobs[j] SUBSEP t SUBSEP "lat"]) continue
          printf "%-14s %-9s %7s %5s %5s %7s %4s/%-4s %7s %5s %6s %5s %5s %5s %7s %5s\n", jobs[j], t,
            show(jobs[j], t, "lat", "%.0f"), show(jobs[j], t, "fctx", "%.2f"), show(jobs[j], t, "gctx", "%.1f"),
            show(jobs[j], t, "srv", "%.1f"), show(jobs[j], t, "vctx", "%.2f"), show(jobs[j], t, "nvctx", "%.2f"),
            show(jobs[j], t, "kw", "%.1f"), show(jobs[j], t, "kws", "%.2f"),
            show(jobs[j], t, "sleeps", "%.2f"), show(jobs[j], t, "busy", "%.1f"), show(jobs[j], t, "recv", "%.2f"),
            show(jobs[j], t, "send", "%.2f"), show(jobs[j], t, "reply", "%.1f"),
            (jobs[j] == "seqwrite_qd1" && (t in sys)) ? sprintf("%.2f", sys[t]) : "-"
        }
    }' "$tmp/raw"
  grep -q '^PROFILE ' "$tmp/raw" || return 0
  echo
  echo "Where the server's CPU time goes in a QD1 write run (perf record -a -g, cpu-clock; % of the"
  echo "server's samples, inclusive: sendto includes the loopback delivery into the host's socket and"
  echo "the wake-up of its worker; epoll_wait, the sleeps; other: page faults, system call entry and"
  echo "exit, interrupts):"
  awk '$1 == "PROFILE" { v[$2, $3] = $4; if (!($2 in seen)) { seen[$2] = 1; t[++n] = $2 } }
    END { printf "%-9s %8s %7s %11s %11s %6s\n", "target", "sendto", "recv", "epoll_wait", "user space", "other"
      for (i = 1; i <= n; i++) { k = t[i]
        s = v[k, "__x64_sys_sendto"] + v[k, "__x64_sys_sendmsg"] + v[k, "__x64_sys_write"] + v[k, "__x64_sys_writev"]
        r = v[k, "__x64_sys_recvfrom"] + v[k, "__x64_sys_recvmsg"] + v[k, "__x64_sys_read"]
        e = v[k, "__x64_sys_epoll_wait"]; u = v[k, "user"]
        printf "%-9s %7.1f%% %6.1f%% %10.1f%% %10.1f%% %5.1f%%\n", k, s, r, e, u, 100 - s - r - e - u } }' "$tmp/raw"
}

table () {
  echo "zonednull-server over NVMe/TCP against nvmet-tcp (null_blk) and against its own NBD export,"
  echo "every server in the guest on 127.0.0.1: $(sed -n 's/^INFO guest: //p' "$tmp/guest.log" | head -n 1)."
  echo "qemu TCG, 2 vCPUs, $(date -u +%Y-%m-%d); host: $(nproc) CPUs, load average $load0 at the start, $load1 at the end."
  echo "Every target: $CONF.${SERVER_OPTS:+ zonednull-server $SERVER_OPTS.}"
  [ -z "$old" ] || echo "nvme-old, nbd-old: $OLD_SERVER${OLD_SERVER_OPTS+ $OLD_SERVER_OPTS}; nvme, nbd: $server."
  case " $TARGETS " in *" nvme-dl "*) echo "nvme-dl: nvme's namespace with the host's own scheduler (mq-deadline); every other target: none." ;; esac
  echo "fio io_uring direct=1 bs=4k; medians of $REPEATS runs (random reads ${RUNTIME}s; writes $WRITE_ZONES fresh zones each)."
  echo "cpu = the guest's busy CPU time per I/O (both vCPUs, us); srv = zonednull-server's own CPU time per I/O (us)."
  echo
  awk -v targets="$TARGETS" -v ratios="nvme/nvmet nvme/nbd nvme/nvme-old nbd/nbd-old" '
    $1 == "RESULT" { k = $2 SUBSEP $3; n[k]++; iops[k, n[k]] = $5
      ios = $5 * ($8 / 100); cpu[k, n[k]] = ios > 0 ? $6 * 10000 / ios : 0; srv[k, n[k]] = ios > 0 ? $7 * 10000 / ios : 0
      if (!($2 in seen)) { seen[$2] = 1; jobs[++nj] = $2 }
      run[$2, $4, $3] = $5; if ($4 > nr) nr = $4 }
'"$bench_awk_med"'
    END {
      nt = split(targets, T, " ")
      for (i = 1; i <= nt; i++) has[T[i]] = 1
      # The ratios whose two targets are in TARGETS.
      nr0 = split(ratios, R0, " ")
      for (i = 1; i <= nr0; i++) { split(R0[i], p, "/"); if (p[1] in has && p[2] in has) R[++nrt] = R0[i] }
      line = sprintf("%-15s", "job")
      for (i = 1; i <= nt; i++) line = line sprintf(" %9s", T[i])
      line = line " "
      for (i = 1; i <= nrt; i++) line = line sprintf(" %13s", R[i])
      print line
      for (j = 1; j <= nj; j++) {
        line = sprintf("%-15s", jobs[j])
        for (i = 1; i <= nt; i++) { m[T[i]] = med(iops, jobs[j] SUBSEP T[i]); line = line sprintf(" %9d", m[T[i]]) }
        line = line " "
        for (i = 1; i <= nrt; i++) { split(R[i], p, "/")
          line = line sprintf(" %13s", (m[p[1]] > 0 && m[p[2]] > 0) ? sprintf("%.2fx", m[p[1]] / m[p[2]]) : "n/a") }
        print line
      }
      print ""
      line = sprintf("%-15s", "per I/O (us)")
      for (i = 1; i <= nt; i++) line = line sprintf(" %16s", "cpu/srv " T[i])
      print line
      for (j = 1; j <= nj; j++) {
        line = sprintf("%-15s", jobs[j])
        for (i = 1; i <= nt; i++) { k = jobs[j] SUBSEP T[i]; line = line sprintf(" %10.1f/%5.1f", med(cpu, k), med(srv, k)) }
        print line
      }
      printf "\nIOPS per run (repeat: %s):\n", targets
      for (j = 1; j <= nj; j++) { line = sprintf("%-15s", jobs[j])
        for (r = 1; r <= nr; r++) { line = line sprintf(" %d:", r); for (i = 1; i <= nt; i++) line = line sprintf(" %d", run[jobs[j], r, T[i]]) }
        print line }
    }' "$tmp/raw"
  echo
  breakdown
  echo
  echo "The VM ran $(sed -n 's/^check-nvme: VM ran \([0-9]*\) s.*/\1/p' "$tmp/tier.log") s; the script $((end - start)) s."
}
table | tee "$tmp/table"
mkdir -p "$(dirname "$OUT")"
cp "$tmp/table" "$OUT"
cp "$tmp/raw" "${OUT%.txt}.raw"
grep -q '^ERROR' "$tmp/guest.log" && { echo "nvme-vs-nvmet: some runs failed (ERROR lines above)" >&2; exit 1; }
exit 0
