#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# bench/ublk-vs-nullblk.sh [BUILDDIR]: zonednull-ublk against the real
# null_blk, in one VM of Debian's Linux 6.12 (bookworm-backports) under qemu
# TCG, 2 vCPUs.  A benchmark, not a test: nothing passes or fails on speed.
#
# The local part: five devices of the same size, block size and queue
# depth (CONF): a configfs null_blk (/dev/nullb0); zonednull-ublk
# (/dev/ublkbN) with CONF at memory_backed=1 (ublk) and at memory_backed=0
# (ublk0); the anchor, bench/ublk-null, a plain (not zoned) ublk disk
# whose server completes every request at once without touching its data:
# the round trip that no ublk server can beat on this kernel; and the
# zoned anchor (zanchor), the same server host-managed zoned with CONF's
# zone size (bench/ublk-null's ZONE_MIB: a table of write pointers, all
# zones sequential, no open or active limit), which pays the block layer's
# zone write plug as zonednull-ublk does: the limit of a zoned ublk server.  The guest's
# static fio (io_uring, direct=1, 4 KiB) runs on each, the devices taking
# turns within each repeat (their order rotates from repeat to repeat):
#   randread_qd16         random reads over READ_ZONES zones written first
#   seqwrite_qd1          sequential writes, zonemode=zbd
#   seqwrite_qd16_1zone   the same at iodepth 16: zone write plugging (6.10+)
#                         sends one write per zone at a time to the driver
#   seqwrite_qd16_4zones  4 jobs x iodepth 4, each in its own zones: 4
#                         writes in flight at the driver
#   write500_qd1          500 sequential writes at QD1 (not timed: fio's
#                         IOPS is the round trip's inverse)
# (the anchor, without zones, gets the same jobs at the same offsets; the
# zoned anchor gets them as the zoned devices do).
# Then the remote case, in the same VM, against one export of a
# zonednull-server on the host (SERVERS="server nbdkit" adds an nbdkit
# zonednull) with the same CONF, at the guest's 10.0.2.2:
# zonednull-ublk --connect=nbd://10.0.2.2:PORT/ (/dev/ublkbN, zoned) and
# the kernel's nbd client (nbd-client 10.0.2.2 PORT /dev/nbd0 -N nullb0
# -b BLOCKSIZE, one connection, no zones) attached together:
#   remote_randread_qd16         as above, over READ_ZONES zones of the server
#   remote_seqwrite_qd16         16 writes queued, one stream; zonemode=zbd on
#                                --connect, plain sequential writes from the
#                                start of the same empty zones on nbd
#   remote_seqwrite_qd16_4zones  4 jobs x iodepth 4, each in its own zones
# the server's write zones reset (blkzone on --connect) before and after
# every write run, the two clients taking turns as above; the ratio is
# --connect/nbd-client.
# Medians over REPEATS of IOPS per device, the ratios, and per I/O: the
# guest's busy CPU time and context switches, and the ublk server's CPU time
# and context switches (all its threads).  The table goes to stdout and to OUT (default
# bench/results/ublk-vs-nullblk.txt); the raw lines to OUT's .raw.
#
#   bench/ublk-vs-nullblk.sh [BUILDDIR]       default BUILDDIR: ./build
#   REPEATS=5 RUNTIME=3 READ_ZONES=2 bench/ublk-vs-nullblk.sh build-bench
#   ZN_BENCH_KEEP=1 keeps the temporary directory (the tier's log and files)
#   CONF="size=1024 zone_size=64 ..." (zone_size in MiB; size a multiple)
#   PARTS="local seeds remote" (the default: all three), SERVERS="server"
#   (or "server nbdkit"), SEEDS="host_tags zone_locking" (the default)
#   BEFORE=bench/results/ublk-before.raw: appends before, after and
#   after/before of every job and device, from that earlier run's raw file
#
# The local part also has a sixth device, conn: zonednull-ublk --connect
# to a zonednull-server with CONF in the guest (Unix socket), and a
# breakdown per I/O of all six: per thread of the servers, the time on
# CPU (schedstat, ns), the voluntary and involuntary switches and the read
# and write calls and bytes (/proc/TID/io), then strace -c -f counts of
# every system call over fixed jobs (Debian's strace, copied into the guest
# with its libraries).  The seeds part runs bench/run.sh's host_tags and
# zone_locking on null_blk and zonednull-ublk (bench/README.md).  The
# breakdown's medians come from bench/ublk-stats.awk.  For seqwrite_qd1
# every task of the guest is counted too (kworkers, fio): per write,
# the switches and CPU time of each group of tasks.
#
# The VM is the 6.12 tier's: this script runs tests/kernel/check-ublk.sh
# (which calls prepare.sh and prepare-consumers.sh for the kernel, the base
# initramfs and the static fio, cached in ZN_KERNEL_CACHE, default
# .cache/kernel) through its hooks: ZN_UBLK_GUEST_SCRIPT, this benchmark's
# guest half (bench/ublk-vs-nullblk-guest.sh, the settings prepended), runs
# in place of the consumers' tests, with their archive (the static fio);
# ZN_UBLK_EXTRA_CPIO adds the nbd module, which the tier's base image
# lacks, as /opt/bench/nbd.ko* (taken from the kernel that prepare.sh
# unpacks, ZN_KERNEL_ONLY=1).  The host servers of the remote case are the
# benchmark's own (ZN_UBLK_CONNECT=0: the tier's --connect checks do not
# run).  With ZN_KERNEL_TRACES=0 the tier's differential draws no
# configuration: its guest-ublk.sh only loads null_blk and ublk_drv.  The
# static fio is built from FIO_SRCDIR, else the fio source BUILDDIR was
# configured with (--with-fio), else the newest .cache/fio/fio-*.  Needs
# what the tier needs (qemu-system-x86, busybox-static, ... and the
# consumers' host packages).
set -eu
cd "$(dirname "$0")/.."
top=$(pwd)
. bench/lib.sh
build=${1:-$top/build}
build=$(cd "$build" && pwd)
REPEATS=${REPEATS:-5}
RUNTIME=${RUNTIME:-3}
READ_ZONES=${READ_ZONES:-2}
PARTS=${PARTS:-local seeds remote}
SEEDS=${SEEDS:-host_tags zone_locking}
BEFORE=${BEFORE:-}
SERVERS=${SERVERS:-server}
CONF=${CONF:-size=1024 zone_size=64 zone_nr_conv=0 memory_backed=1 submit_queues=1 hw_queue_depth=64 irqmode=1}
OUT=${OUT:-$top/bench/results/ublk-vs-nullblk.txt}
cache=${ZN_KERNEL_CACHE:-$top/.cache/kernel}
suite=${ZN_UBLK_SUITE:-bookworm-backports}
fio_src=${FIO_SRCDIR:-$(sed -n 's/^FIO_SRCDIR = //p' "$build/Makefile" 2>/dev/null)}

ublk=$build/ublk/zonednull-ublk
zntrace=$build/tests/kernel/zntrace
[ -x "$ublk" ] || { echo "ublk-vs-nullblk: $ublk is not built (liburing?)" >&2; exit 1; }
[ -x "$zntrace" ] || make -C "$build" tests/kernel/zntrace >/dev/null
anchor=$build/bench/ublk-null
[ -x "$anchor" ] || make -C "$build" bench/ublk-null >/dev/null ||
  { echo "ublk-vs-nullblk: cannot build $anchor" >&2; exit 1; }
server=$build/server/zonednull-server
plugin=$build/plugin/.libs/nbdkit-zonednull-plugin.so
zone_mb="" blocksize=512
for kv in $CONF; do
  case $kv in zone_size=*) zone_mb=${kv#zone_size=} ;; blocksize=*) blocksize=${kv#blocksize=} ;; esac
done
[ -n "$zone_mb" ] || { echo "ublk-vs-nullblk: CONF needs zone_size" >&2; exit 1; }
[ -z "$BEFORE" ] || [ -f "$BEFORE" ] || { echo "ublk-vs-nullblk: BEFORE=$BEFORE: no such raw file" >&2; exit 1; }

tmp=$(mktemp -d /tmp/zn-ublk-bench.XXXXXX)
# ---- the host servers of the remote case (stopped by PID at exit) ---------
remote=""
trap 'bench_stop; [ -n "${ZN_BENCH_KEEP:-}" ] || rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
case " $PARTS " in *" remote "*)
  for kind in $SERVERS; do
    case $kind in
      server) [ -x "$server" ] || { echo "ublk-vs-nullblk: no $server" >&2; exit 1; } ;;
      nbdkit) [ -f "$plugin" ] || { echo "ublk-vs-nullblk: no $plugin" >&2; exit 1; } ;;
      *) echo "ublk-vs-nullblk: SERVERS: server or nbdkit, not $kind" >&2; exit 1 ;;
    esac
    a=0 ok=
    while [ $a -lt 8 ] && [ -z "$ok" ]; do
      a=$((a + 1))
      port=$((30000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 20000))
      # shellcheck disable=SC2086
      case $kind in
        server) bench_start "$tmp/$kind.pid" "$server" -f -i 127.0.0.1 -p "$port" -P "$tmp/$kind.pid" \
                  $CONF 2>"$tmp/$kind.err" && ok=1 ;;
        nbdkit) bench_start "$tmp/$kind.pid" nbdkit -f -i 127.0.0.1 -p "$port" -P "$tmp/$kind.pid" \
                  "$plugin" $CONF 2>"$tmp/$kind.err" && ok=1 ;;
      esac
      [ -n "$ok" ] || grep -qi 'in use\|bind' "$tmp/$kind.err" || break
    done
    [ -n "$ok" ] || { echo "ublk-vs-nullblk: the host's $kind ($CONF) does not start: $(cat "$tmp/$kind.err")" >&2; exit 1; }
    remote="$remote $kind:$port"
    echo "ublk-vs-nullblk: host $kind on 127.0.0.1:$port (the guest's 10.0.2.2), $CONF" >&2
  done ;;
esac

# ---- the tier's hooks: the nbd module and the guest half -------------------
ZN_KERNEL_ONLY=1 sh "$top/tests/kernel/prepare.sh" "$cache" "$suite" >"$tmp/prepare.log" 2>&1 ||
  { cat "$tmp/prepare.log" >&2; exit 1; }
kver=$(cat "$cache/current-$suite")
modules=$cache/$kver/modroot/lib/modules/$kver
nbd_ko=$(sed -n 's|^\(kernel/drivers/block/nbd\.ko[.a-z]*\):.*|\1|p' "$modules/modules.dep")
[ -n "$nbd_ko" ] || { echo "ublk-vs-nullblk: no nbd module in $kver" >&2; exit 1; }
mkdir -p "$tmp/nbdroot/opt/bench"
cp "$modules/$nbd_ko" "$tmp/nbdroot/opt/bench/"
( . "$top/tests/kernel/lib.sh" && copy_binary "$tmp/nbdroot" "$anchor" /opt/bench/ublk-null ) ||
  { echo "ublk-vs-nullblk: cannot stage $anchor for the guest" >&2; exit 1; }
# The local part's conn device: zonednull-ublk --connect to a
# zonednull-server in the guest; and strace (Debian's, with its
# libraries) for the system call counts.
[ -x "$server" ] || { echo "ublk-vs-nullblk: no $server" >&2; exit 1; }
( . "$top/tests/kernel/lib.sh" && copy_binary "$tmp/nbdroot" "$server" /opt/bench/zonednull-server ) ||
  { echo "ublk-vs-nullblk: cannot stage $server for the guest" >&2; exit 1; }
guest_strace=
if strace_bin=$(command -v strace); then
  ( . "$top/tests/kernel/lib.sh" && copy_binary "$tmp/nbdroot" "$strace_bin" /opt/bench/strace ) ||
    { echo "ublk-vs-nullblk: cannot stage $strace_bin for the guest" >&2; exit 1; }
  guest_strace=/opt/bench/strace
else
  echo "ublk-vs-nullblk: no strace on the host (apt-get install strace): no system call counts" >&2
fi
(cd "$tmp/nbdroot" && find . -mindepth 1 | sed 's|^\./||' | LC_ALL=C sort | cpio -o -H newc --quiet) \
  >"$tmp/nbd.cpio"
{
  echo "CONF='$CONF'"
  echo "ZONE_MB=$zone_mb RUNTIME=$RUNTIME REPEATS=$REPEATS READ_ZONES=$READ_ZONES"
  echo "PARTS='$PARTS' REMOTE='${remote# }' BLOCKSIZE=$blocksize NBD_KO=/opt/bench/$(basename "$nbd_ko") ANCHOR=/opt/bench/ublk-null"
  echo "SERVER=/opt/bench/zonednull-server STRACE=$guest_strace SEEDS='$SEEDS'"
  cat "$top/bench/ublk-vs-nullblk-guest.sh"
} >"$tmp/guest.sh"

# 5 jobs x 6 devices per repeat, 3 jobs x 2 clients per host server, and
# the seeds' 2 x 2 + 3 runs, each RUNTIME plus fio's start and the zone
# resets (slow under TCG), with room to spare; the boot, the fills and the
# strace runs (12, about 20 s each) on top.
nserv=$(echo "$remote" | wc -w)
vm_timeout=${ZN_KERNEL_VM_TIMEOUT:-$((580 + (30 + nserv * 6 + 7) * REPEATS * (RUNTIME + 8)))}
start=$(date +%s)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "ublk-vs-nullblk: $REPEATS repeats of ${RUNTIME}s; CONF: $CONF" >&2
rc=0
ZONEDNULL_SRCDIR=$top ZONEDNULL_UBLK=$ublk ZNTRACE=$zntrace \
  ZONEDNULL_SERVER=$server ZONEDNULL_PLUGIN=$plugin NBDKIT=${NBDKIT:-nbdkit} \
  ZN_KERNEL_CACHE=$cache ZN_KERNEL_WORK=$tmp/work ZN_KERNEL_KEEP=$tmp/failed \
  ZN_KERNEL_TRACES=0 ZN_KERNEL_SEED=1 ZN_KERNEL_VM_TIMEOUT=$vm_timeout \
  ZN_UBLK_SUITE=$suite ZN_UBLK_CONNECT=0 \
  ZN_UBLK_GUEST_SCRIPT=$tmp/guest.sh ZN_UBLK_EXTRA_CPIO=$tmp/nbd.cpio \
  FIO_SRCDIR=$fio_src \
  sh "$top/tests/kernel/check-ublk.sh" >"$tmp/tier.log" 2>&1 || rc=$?
end=$(date +%s)
for k in $remote; do
  p=$(cat "$tmp/${k%%:*}.pid" 2>/dev/null)
  [ -n "$p" ] && awk '{ printf "%.1f", ($14 + $15) / 100 }' "/proc/$p/stat" >"$tmp/${k%%:*}.cpu" 2>/dev/null
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)
grep -E '^check-ublk: (booting|VM ran|FAIL|ERROR)' "$tmp/tier.log" >&2 || true
sed -n 's/^guest: //p' "$tmp/tier.log" >"$tmp/guest.log"
grep -E '^(INFO|ERROR)' "$tmp/guest.log" >&2 || true
grep -E '^(RESULT|THREAD|STRACE|SEED|TASKS|FIOCPU) ' "$tmp/guest.log" >"$tmp/raw" || true
grep '^RESULT ' "$tmp/raw" >"$tmp/res" || true
if [ ! -s "$tmp/raw" ]; then
  echo "ublk-vs-nullblk: no results (check-ublk.sh exit $rc); its log:" >&2
  tail -n 40 "$tmp/tier.log" >&2
  exit 1
fi

# summary BASE DEV BASE-LABEL DEV-LABEL BASE-SHORT DEV-SHORT: the medians table and the runs of
# the RESULT lines whose DEV is BASE or DEV (ratio DEV/BASE).
summary () {
  awk -v A="$1" -v B="$2" -v LA="$3" -v LB="$4" -v SA="$5" -v SB="$6" '
    $3 != A && $3 != B { next }
    { k = $2 SUBSEP $3; n[k]++; i = n[k]
      iops[k, i] = $5
      if ($6 > 0) { cpu[k, i] = $7 * 10000 / $6; ctx[k, i] = $8 / $6; dmn[k, i] = $9 * 10000 / $6 }
      else { cpu[k, i] = 0; ctx[k, i] = 0; dmn[k, i] = 0 }
      bus[k, i] = $10 > 0 ? $7 * 2 / $10 : 0; dcp[k, i] = $10 > 0 ? $9 * 2 / $10 : 0
      if (!($2 in seen)) { seen[$2] = 1; jobs[++nj] = $2 }
      run[$2, $4, $3] = $5; if ($4 > nr) nr = $4 }
'"$bench_awk_med"'
    END {
      if (!nj) exit
      printf "%-34s %9s %9s %7s   %6s %6s %5s %5s %6s   %5s %5s %6s\n", "job", LA, LB, "ratio", "cpu-" SA, "cpu-" SB, "ctx-" SA, "ctx-" SB, "daemon", "vcpu-" SA, "vcpu-" SB, "daemon"
      for (j = 1; j <= nj; j++) {
        a = jobs[j] SUBSEP A; b = jobs[j] SUBSEP B
        x = med(iops, a); y = med(iops, b)
        printf "%-34s %9d %9d %6.2fx   %6.1f %6.1f %5.2f %5.2f %6.1f   %7.2f %7.2f %6.2f\n", jobs[j], x, y, (x > 0 ? y / x : 0),
          med(cpu, a), med(cpu, b), med(ctx, a), med(ctx, b), med(dmn, b), med(bus, a), med(bus, b), med(dcp, b)
      }
      printf "\nIOPS per run (repeat: %s %s):\n", LA, LB
      for (j = 1; j <= nj; j++) { line = sprintf("%-34s", jobs[j])
        for (r = 1; r <= nr; r++) line = line sprintf(" %d: %d %d", r, run[jobs[j], r, A], run[jobs[j], r, B])
        print line }
    }' "$tmp/res"
}
# What overview and zoverview read: the RESULT lines of the devices in
# devs (awk -v), per job and device, and their medians (med) and ratios.
results_awk='
    BEGIN { nd = split(devs, dl, " "); for (i = 1; i <= nd; i++) want[dl[i]] = 1 }
    !($3 in want) { next }
    { k = $2 SUBSEP $3; n[k]++; i = n[k]
      iops[k, i] = $5
      if ($6 > 0) { cpu[k, i] = $7 * 10000 / $6; ctx[k, i] = $8 / $6; dmn[k, i] = $9 * 10000 / $6; dctx[k, i] = $11 / $6 }
      else { cpu[k, i] = 0; ctx[k, i] = 0; dmn[k, i] = 0; dctx[k, i] = 0 }
      if (!($2 in seen)) { seen[$2] = 1; jobs[++nj] = $2 } }
'"$bench_awk_med"'
    function r(x, y) { return y > 0 ? x / y : 0 }
'
# overview: the local part's four devices side by side (medians): IOPS and
# ratios, then per I/O the guest's context switches, the server's context
# switches (all threads, /proc/PID/task/*/status), the server's CPU time
# and the guest's busy CPU time; for write500_qd1 the round trip.
overview () {
  awk -v devs="nullb anchor ublk ublk0" "$results_awk"'
    END {
      if (!nj) exit
      printf "%-22s %8s %8s %8s %8s   %7s %7s %7s %7s %7s\n", "IOPS", "null_blk", "anchor", "ublk", "ublk0", "an/nb", "ub/an", "ub0/an", "ub/nb", "ub0/nb"
      for (j = 1; j <= nj; j++) {
        a = med(iops, jobs[j] SUBSEP "nullb"); b = med(iops, jobs[j] SUBSEP "anchor")
        c = med(iops, jobs[j] SUBSEP "ublk"); d = med(iops, jobs[j] SUBSEP "ublk0")
        printf "%-22s %8d %8d %8d %8d   %6.2fx %6.2fx %6.2fx %6.2fx %6.2fx\n", jobs[j], a, b, c, d, r(b, a), r(c, b), r(d, b), r(c, a), r(d, a)
        if (jobs[j] == "write500_qd1")
          rt = sprintf("%-22s %8.1f %8.1f %8.1f %8.1f   (us per write at QD1: 1/IOPS)", "  round trip", r(1e6, a), r(1e6, b), r(1e6, c), r(1e6, d))
      }
      if (rt != "") print rt
      printf "\nper I/O                 guest ctx switches       | server ctx sw.     | server CPU us          | guest busy CPU us (both vCPUs)\n"
      printf "%-22s %5s %5s %5s %5s | %5s %5s %5s | %6s %6s %6s | %6s %6s %6s %6s\n", "", "nb", "an", "ub", "ub0", "an", "ub", "ub0", "an", "ub", "ub0", "nb", "an", "ub", "ub0"
      for (j = 1; j <= nj; j++) {
        A = jobs[j] SUBSEP "nullb"; B = jobs[j] SUBSEP "anchor"; C = jobs[j] SUBSEP "ublk"; D = jobs[j] SUBSEP "ublk0"
        printf "%-22s %5.2f %5.2f %5.2f %5.2f | %5.2f %5.2f %5.2f | %6.1f %6.1f %6.1f | %6.1f %6.1f %6.1f %6.1f\n", jobs[j],
          med(ctx, A), med(ctx, B), med(ctx, C), med(ctx, D), med(dctx, B), med(dctx, C), med(dctx, D),
          med(dmn, B), med(dmn, C), med(dmn, D), med(cpu, A), med(cpu, B), med(cpu, C), med(cpu, D)
      }
    }' "$tmp/res"
}
# zoverview: the zoned limit, the zoned anchor against the plain one and
# zonednull-ublk at either backing against it (medians), and per I/O the
# guest's and the servers' context switches and the servers' CPU time.
zoverview () {
  awk -v devs="anchor zanchor ublk ublk0" "$results_awk"'
    END {
      if (!nj) exit
      printf "%-22s %8s %8s %8s %8s   %7s %7s %7s\n", "IOPS", "anchor", "zanchor", "ublk", "ublk0", "za/an", "ub/za", "ub0/za"
      for (j = 1; j <= nj; j++) {
        a = med(iops, jobs[j] SUBSEP "anchor"); b = med(iops, jobs[j] SUBSEP "zanchor")
        c = med(iops, jobs[j] SUBSEP "ublk"); d = med(iops, jobs[j] SUBSEP "ublk0")
        printf "%-22s %8d %8d %8d %8d   %6.2fx %6.2fx %6.2fx\n", jobs[j], a, b, c, d, r(b, a), r(c, b), r(d, b)
      }
      printf "\nper I/O                 guest ctx switches  | server ctx sw.      | server CPU us\n"
      printf "%-22s %5s %5s %5s %5s | %5s %5s %5s %5s | %6s %6s %6s %6s\n", "", "an", "za", "ub", "ub0", "an", "za", "ub", "ub0", "an", "za", "ub", "ub0"
      for (j = 1; j <= nj; j++) {
        A = jobs[j] SUBSEP "anchor"; B = jobs[j] SUBSEP "zanchor"; C = jobs[j] SUBSEP "ublk"; D = jobs[j] SUBSEP "ublk0"
        printf "%-22s %5.2f %5.2f %5.2f %5.2f | %5.2f %5.2f %5.2f %5.2f | %6.1f %6.1f %6.1f %6.1f\n", jobs[j],
          med(ctx, A), med(ctx, B), med(ctx, C), med(ctx, D), med(dctx, A), med(dctx, B), med(dctx, C), med(dctx, D),
          med(dmn, A), med(dmn, B), med(dmn, C), med(dmn, D)
      }
    }' "$tmp/res"
}
# The breakdown (bench/ublk-stats.awk's metrics of a raw file, medians).
stats () { awk -v RUNTIME="$RUNTIME" -f "$top/bench/ublk-stats.awk" "$1"; }
# breakdown METRICS: per job and device of the local part, per I/O.
breakdown () {
  awk '
    $1 == "B" { k = $2 " " $3; if (!(k in seen)) { seen[k] = 1; rows[++n] = k }; v[k, $4] = $5 }
    function c(k, m, f) { return (k, m) in v ? sprintf(f, v[k, m]) : sprintf("%" (f ~ /6/ ? 6 : (f ~ /7/ ? 7 : 5)) "s", "-") }
    END {
      if (!n) exit
      printf "%-21s %-6s %6s | %5s %6s | %6s %5s %5s %4s %6s | %6s %5s %4s %6s\n", "", "", "", "guest", "", "ublk server (all threads)", "", "", "", "", "conn zonednull-server", "", "", ""
      printf "%-21s %-6s %6s | %5s %6s | %6s %5s %5s %4s %6s | %6s %5s %4s %6s\n", "job", "dev", "IOPS", "ctx", "cpu", "cpu", "wake", "preem", "rw", "bytes", "cpu", "wake", "rw", "bytes"
      for (i = 1; i <= n; i++) {
        k = rows[i]; split(k, f, " ")
        printf "%-21s %-6s %6d | %s %s | %s %s %s %s %s | %s %s %s %s\n", f[1], f[2], v[k, "iops"],
          c(k, "guest_ctx", "%5.2f"), c(k, "guest_cpu_us", "%6.1f"),
          c(k, "daemon_cpu_us", "%6.1f"), c(k, "daemon_wakeups", "%5.2f"), c(k, "daemon_preempted", "%5.2f"),
          c(k, "daemon_rw_calls", "%4.1f"), c(k, "daemon_rw_bytes", "%6d"),
          c(k, "server_cpu_us", "%6.1f"), c(k, "server_wakeups", "%5.2f"), c(k, "server_rw_calls", "%4.1f"),
          c(k, "server_rw_bytes", "%6d")
      }
    }' "$1"
}
# threads METRICS: per thread of the servers, per I/O.
threads () {
  awk '
    $1 == "T" { k = $2 " " $3 " " $4; if (!(k in seen)) { seen[k] = 1; rows[++n] = k }; v[k, $5] = $6 }
    END {
      if (!n) exit
      printf "%-21s %-6s %-40s %6s %5s %5s %5s %5s %6s %6s\n", "job", "dev", "thread (TAG+RANK:COMM:WCHAN)", "cpu", "wake", "preem", "rd", "wr", "rbytes", "wbytes"
      for (i = 1; i <= n; i++) {
        k = rows[i]; split(k, f, " ")
        printf "%-21s %-6s %-40s %6.1f %5.2f %5.2f %5.2f %5.2f %6d %6d\n", f[1], f[2], f[3], v[k, "cpu_us"], v[k, "wakeups"],
          v[k, "preempted"], v[k, "read_calls"], v[k, "write_calls"], v[k, "read_bytes"], v[k, "write_bytes"]
      }
    }' "$1"
}
# syscalls METRICS: strace -c per I/O, the calls of at least 0.01 per I/O.
syscalls () {
  awk '
    $1 == "S" { k = $2 " " $3 " " $4; if (!(k in seen)) { seen[k] = 1; rows[++n] = k }
      if ($5 == "total") tot[k] = $6; else if ($6 >= 0.01) { m[k]++; nm[k, m[k]] = $5; cv[k, m[k]] = $6 } }
    END {
      if (!n) exit
      for (i = 1; i <= n; i++) {
        k = rows[i]; split(k, f, " ")
        # by calls, most first
        for (a = 2; a <= m[k]; a++) { t = cv[k, a]; s = nm[k, a]; b = a - 1
          while (b > 0 && cv[k, b] < t) { cv[k, b + 1] = cv[k, b]; nm[k, b + 1] = nm[k, b]; b-- }
          cv[k, b + 1] = t; nm[k, b + 1] = s }
        l = sprintf("%-17s %-6s %-6s %6.2f  ", f[1], f[2], (f[3] == "d" ? "ublk" : "server"), tot[k])
        for (a = 1; a <= m[k]; a++) l = l sprintf(" %s %.2f", nm[k, a], cv[k, a])
        print l
      }
    }' "$1"
}
# tasks RAW: seqwrite_qd1 per write and per group of the guest's tasks
# (TASKS, FIOCPU lines), medians over the repeats: context switches
# (voluntary, involuntary) and CPU us.  fio's CPU is its own terse
# usr+sys share of the run (RUNTIME s).
tasks () {
  awk -v RT="$RUNTIME" '
    $1 == "RESULT" { ios[$2, $3, $4] = $6; next }
    function add(k, a, b, c,   i) { i = ++n[k]; v1[k, i] = a; v2[k, i] = b; v3[k, i] = c
      if (!(k in seen)) { seen[k] = 1; rows[++nr] = k } }
    $1 == "TASKS" { m = ios[$2, $3, $4]; if (m > 0) add($3 SUBSEP $5, $7 / m, $8 / m, $6 / 1000 / m) }
    $1 == "FIOCPU" { m = ios[$2, $3, $4]; if (m > 0) add($3 SUBSEP "fio", $7 / m, 0, ($5 + $6) / 100 * RT * 1e6 / m) }
'"$bench_awk_med"'
    END {
      if (!nr) exit
      printf "%-8s %-34s %6s %6s %7s %3s\n", "dev", "tasks", "vol", "invol", "cpu us", "n"
      for (i = 1; i <= nr; i++) { k = rows[i]; split(k, f, SUBSEP)
        if (med(v1, k) + med(v2, k) < 0.01 && med(v3, k) < 1) continue
        printf "%-8s %-34s %6.2f %6.2f %7.1f %3d\n", f[1], f[2], med(v1, k), med(v2, k), med(v3, k), n[k] }
    }' "$1"
}
# seeds METRICS: the seeds experiments, medians and ratios.
seeds () {
  awk '
    $1 == "E" { k = $2 " " $3; if (!(k in seen)) { seen[k] = 1; rows[++n] = k }; v[k, $4] = $5 }
    function r(x, y) { return y > 0 ? sprintf("%.2fx", x / y) : "-" }
    function io(k) { return v[k, "read_iops"] + v[k, "write_iops"] }
    END {
      if (!n) exit
      printf "%-14s %-6s %8s %8s   %8s %6s %8s %6s\n", "experiment", "dev", "read", "write", "guest us", "ctx", "ublk us", "wake"
      for (i = 1; i <= n; i++) {
        k = rows[i]; split(k, f, " ")
        printf "%-14s %-6s %8d %8d   %8.1f %6.2f %8.1f %6.2f\n", f[1], f[2], v[k, "read_iops"], v[k, "write_iops"],
          v[k, "guest_cpu_us"], v[k, "guest_ctx"], v[k, "daemon_cpu_us"], v[k, "daemon_wakeups"]
      }
      print ""
      if (("host_tags_q1 nullb", "read_iops") in v) {
        print "host_tags, 2 queues / 1 queue (seed: 1.5x):  null_blk " r(io("host_tags_q2 nullb"), io("host_tags_q1 nullb")) \
          ", zonednull-ublk " r(io("host_tags_q2 ublk"), io("host_tags_q1 ublk"))
        print "host_tags, zonednull-ublk / null_blk:        1 queue " r(io("host_tags_q1 ublk"), io("host_tags_q1 nullb")) \
          ", 2 queues " r(io("host_tags_q2 ublk"), io("host_tags_q2 nullb"))
      }
      if (("zone_locking zlock", "read_iops") in v) {
        print "zone_locking, per-zone locks / device_lock=1 (seed: 3x for reads):  reads " \
          r(v["zone_locking zlock", "read_iops"], v["zone_locking dlock", "read_iops"]) ", writes " \
          r(v["zone_locking zlock", "write_iops"], v["zone_locking dlock", "write_iops"])
        print "zone_locking, zonednull-ublk / null_blk (reads+writes):  per-zone locks " \
          r(io("zone_locking zlock"), io("zone_locking nullb")) ", device_lock=1 " r(io("zone_locking dlock"), io("zone_locking nullb"))
      }
    }' "$1"
}
# compare BEFORE-METRICS AFTER-METRICS: the main figures side by side,
# one row per job and device (the after run's rows, in its order).
compare () {
  awk '
    function key(l,   f, m, i, s) { m = split(l, f, " "); s = f[2]; for (i = 3; i < m - 1; i++) s = s " " f[i]; return s }
    NR == FNR { if ($1 != "T") b[$1, key($0), $(NF - 1)] = $NF; next }
    $1 == "T" { next }
    { k = key($0); a[$1, k, $(NF - 1)] = $NF; if (!(($1, k) in seen)) { seen[$1, k] = 1; rows[$1, ++n[$1]] = k } }
    function v(x, t, k, m,   y) { y = (x == "b") ? b[t, k, m] : a[t, k, m]; return y }
    function has(x, t, k, m) { return x == "b" ? ((t, k, m) in b) : ((t, k, m) in a) }
    function c(t, k, m, f,   s) {
      s = (has("b", t, k, m) ? sprintf(f, v("b", t, k, m)) : sprintf("%" length(sprintf(f, 0)) "s", "-"))
      return s " " (has("a", t, k, m) ? sprintf(f, v("a", t, k, m)) : sprintf("%" length(sprintf(f, 0)) "s", "-"))
    }
    function r(t, k, m) { return has("b", t, k, m) && has("a", t, k, m) && v("b", t, k, m) > 0 ? sprintf("%5.2fx", v("a", t, k, m) / v("b", t, k, m)) : "    - " }
    END {
      if (n["B"]) {
        printf "%-34s | %15s %6s | %11s | %13s %6s | %11s | %13s\n", "job dev", "IOPS bef. aft.", "ratio", "guest ctx", "server CPU us", "ratio", "sleeps", "conn server us"
        for (i = 1; i <= n["B"]; i++) { k = rows["B", i]
          printf "%-34s | %s %s | %s | %s %s | %s | %s\n", k, c("B", k, "iops", "%7d"), r("B", k, "iops"),
            c("B", k, "guest_ctx", "%5.2f"), c("B", k, "daemon_cpu_us", "%6.1f"), r("B", k, "daemon_cpu_us"),
            c("B", k, "daemon_wakeups", "%5.2f"), c("B", k, "server_cpu_us", "%6.1f") }
      }
      if (n["S"]) {
        printf "\nsystem calls per I/O, before after: %-18s | %11s | %11s | %11s | %11s\n", "", "all", "io_uring", "pread", "pwrite"
        for (i = 1; i <= n["S"]; i++) { k = rows["S", i]
          printf "%-54s | %s | %s | %s | %s\n", k, c("S", k, "total", "%5.2f"), c("S", k, "io_uring_enter", "%5.2f"),
            c("S", k, "pread64", "%5.2f"), c("S", k, "pwrite64", "%5.2f") }
      }
      if (n["E"]) {
        printf "\n%-34s | %15s %6s | %15s %6s | %13s\n", "seeds: experiment dev", "reads bef. aft.", "ratio", "writes", "ratio", "ublk CPU us"
        for (i = 1; i <= n["E"]; i++) { k = rows["E", i]
          printf "%-34s | %s %s | %s %s | %s\n", k, c("E", k, "read_iops", "%7d"), r("E", k, "read_iops"),
            c("E", k, "write_iops", "%7d"), r("E", k, "write_iops"), c("E", k, "daemon_cpu_us", "%6.1f") }
      }
    }' "$1" "$2"
}
# RESULT JOB DEV REPEAT IOPS IOS CPU_TICKS CTXT UBLK_TICKS ELAPSED_TICKS [UBLK_CTXT]
table () {
  echo "zonednull-ublk against null_blk, Linux $(sed -n 's/^INFO .*guest: [0-9]* CPUs, //p' "$tmp/guest.log" | head -n 1),"
  echo "qemu TCG, 2 vCPUs, $(date -u +%Y-%m-%d); host: $(nproc) CPUs, load average $load0 at the start, $load1 at the end."
  echo "null_blk and zonednull-ublk: $CONF (ublk0: zonednull-ublk at memory_backed=0)."
  echo "anchor: bench/ublk-null, a plain ublk disk of the same size, block size and queue depth"
  echo "whose server completes every request at once, user copy on and no data moved;"
  echo "zanchor: the same server host-managed zoned (zones of ${zone_mb} MiB, all sequential, no open"
  echo "or active limit): it keeps write pointers, so the block layer plugs its writes per zone."
  echo "fio $("$cache/consumers/fio" --version 2>/dev/null || echo static) io_uring direct=1 bs=4k; medians of $REPEATS runs of ${RUNTIME}s, the devices taking turns."
  echo "Per I/O: cpu = the guest's busy CPU time (both vCPUs, us), ctx = guest context switches,"
  echo "daemon = the ublk server's own CPU time (us); from /proc/stat at USER_HZ (10 ms ticks)."
  echo "vcpu-*, daemon (right): the same as vCPUs busy during the run (of 2)."
  if grep -q ' anchor ' "$tmp/raw"; then
    echo
    overview
  fi
  if grep -q ' nullb ' "$tmp/raw"; then
    echo
    summary nullb ublk null_blk ublk nb ub
  fi
  if grep -q ' anchor ' "$tmp/raw"; then
    echo
    summary anchor ublk anchor ublk an ub
    echo
    summary anchor ublk0 anchor ublk0 an u0
    echo
    summary nullb anchor null_blk anchor nb an
  fi
  if grep -q ' zanchor ' "$tmp/raw"; then
    echo
    echo "The zoned limit: zanchor against the plain anchor (za/an, the zone write plug's price) and"
    echo "zonednull-ublk at memory_backed=1 (ub) and =0 (ub0) against zanchor."
    zoverview
    echo
    summary zanchor ublk zanchor ublk za ub
    echo
    summary zanchor ublk0 zanchor ublk0 za u0
    echo
    summary anchor zanchor anchor zanchor an za
  fi
  if grep -q ' connect ' "$tmp/raw"; then
    echo
    echo "The remote case, in the same VM: one export of a host server (KIND: zonednull-server or nbdkit"
    echo "zonednull) with the same settings at 10.0.2.2, through zonednull-ublk --connect=nbd://10.0.2.2:PORT/"
    echo "(zoned /dev/ublkbN; zonemode=zbd) and the kernel's nbd client (nbd-client 10.0.2.2 PORT /dev/nbd0"
    echo "-N nullb0 -b $blocksize; plain sequential writes from the start of the same empty zones);"
    echo "ratio --connect/nbd-client; daemon = zonednull-ublk --connect's CPU time.  The server runs on the host,"
    echo "outside the guest's CPU counts:$(for k in $remote; do printf ' %s used %s s of host CPU in all;' "${k%%:*}" "$(cat "$tmp/${k%%:*}.cpu" 2>/dev/null || echo '?')"; done)"
    echo
    summary nbd connect nbd-client connect nb co
  fi
  stats "$tmp/raw" >"$tmp/metrics"
  if grep -q '^B' "$tmp/metrics"; then
    echo
    echo "The breakdown per I/O, medians of $REPEATS runs (all six devices; conn: zonednull-ublk --connect"
    echo "to a zonednull-server of CONF in the guest over a Unix socket).  guest: context switches and busy"
    echo "CPU us of both vCPUs (/proc/stat); ublk server and conn's zonednull-server, all threads: CPU us"
    echo "(schedstat, ns), wake = voluntary switches (sleeps), preem = involuntary ones, rw = calls of the"
    echo "read and write families (pread, pwrite, read, write: /proc/TID/io syscr+syscw; neither send/recv on"
    echo "sockets nor io_uring's own reads and writes count there), bytes = their bytes (rchar+wchar)."
    breakdown "$tmp/metrics"
    echo
    echo "Per thread (medians per I/O; the same columns; rd/wr the calls, rbytes/wbytes their bytes):"
    threads "$tmp/metrics"
  fi
  if grep -q '^TASKS ' "$tmp/raw"; then
    echo
    echo "seqwrite_qd1 per write, every task of the guest (medians of $REPEATS runs): vol and invol the"
    echo "voluntary and involuntary context switches, cpu us its time on CPU (schedstat), per group:"
    echo "the ublk server's threads (daemon:COMM; conn: zonednull-ublk's and its zonednull-server's),"
    echo "kworkers by workqueue, ksoftirqd, all other tasks; fio: its thread's switches (vol+invol) and"
    echo "usr+sys time from its own terse output (10 ms resolution: coarse)."
    tasks "$tmp/raw"
  fi
  if grep -q '^S' "$tmp/metrics"; then
    echo
    echo "System calls per I/O, strace -c -f on each server (all its threads) over a fixed job, not timed:"
    echo "sc_write_qd1 = 500 zoned writes at QD1, sc_randread_qd16 = 4000 random reads at QD16; calls of 0.01"
    echo "per I/O or more, most first."
    syscalls "$tmp/metrics"
  fi
  if grep -q '^E' "$tmp/metrics"; then
    echo
    echo "The seeds' experiments on block devices (PARTS=seeds, SEEDS='$SEEDS'), medians of $REPEATS runs"
    echo "of ${RUNTIME}s; per I/O: guest busy CPU us and context switches, the ublk servers' CPU us and sleeps."
    echo "host_tags_qN: 4 devices, size=1024 zone_size=64 hw_queue_depth=16 shared_tags=1 submit_queues=N"
    echo "(null_blk: reloaded with submit_queues=N hw_queue_depth=16 shared_tag_bitmap=N-1, its shared tag"
    echo "set; zonednull-ublk: 4 processes, 16 tags per queue, no shared_tag_bitmap), 4 KiB random reads,"
    echo "iodepth 4 per device.  zone_locking: size=4096 zone_size=4 memory_backed=1 irqmode=0 submit_queues=2"
    echo "hw_queue_depth=64; 4 jobs x iodepth 16, 70 % random reads, writes at the write pointers of"
    echo "each job's 32 zones; zlock = zonednull-ublk's per-zone locks, dlock = device_lock=1, nullb = null_blk."
    seeds "$tmp/metrics"
  fi
  echo
  echo "The VM ran $(sed -n 's/^check-ublk: VM ran \([0-9]*\) s.*/\1/p' "$tmp/tier.log" | tail -n 1) s; the script $((end - start)) s."
  if [ -n "$BEFORE" ]; then
    echo
    echo "==== before ($BEFORE) and after (this run): medians, after/before ===="
    stats "$BEFORE" >"$tmp/metrics.before"
    compare "$tmp/metrics.before" "$tmp/metrics"
  fi
}
table | tee "$tmp/table"
mkdir -p "$(dirname "$OUT")"
cp "$tmp/table" "$OUT"
cp "$tmp/raw" "${OUT%.txt}.raw"
grep -q '^ERROR' "$tmp/guest.log" && { echo "ublk-vs-nullblk: some runs failed (ERROR lines above)" >&2; exit 1; }
exit 0
