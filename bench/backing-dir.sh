#!/bin/sh
# backing_dir=DIR against its peers, in one run.
#
# Part 1, I/O: the same 1 GiB device from zonednull-server with
# backing_dir (its zones in files), from nbdkit's file plugin on one flat
# file in the same file system, and from zonednull-server with
# memory_backed=1 (nbdkit zonednull with backing_dir too, as a fourth
# peer: the same store behind nbdkit's threads).  nbdkit file has no zones,
# so the zonednull devices have conventional zones under the whole span
# the jobs touch and all peers run the same fio job through fio's stock nbd
# engine: 4 KiB random reads at iodepth 16 over SPAN_MIB of prefilled data,
# then 4 KiB sequential writes at iodepth 16 over the same span (so every
# write overwrites data the prefill allocated).  The peers take turns
# within each repeat, the first one rotating; medians of REPEATS runs of
# SECONDS_PER_RUN each, with min-max and the server's CPU in cores.
#
# Part 2, start-up: a 20 TiB device (81,920 zones of 256 MiB) with
# backing_dir: the first start, which starts a thread making the 81,920
# zone files beside the running device; the end of that thread; 1 MiB
# written at the start of every 100th zone (819 zones, 819 MiB, then one
# FLUSH); an orderly stop; a restart from the files.  Against the same
# device with memory_backed=1 and the same writes.  Start-up is the time
# from fork+exec to the first NBD handshake that completes (libnbd tries
# to connect every millisecond); "files made" the time from fork+exec
# until the filler thread has left /proc/PID/task (polled every 10 ms);
# memory is VmRSS and VmHWM from /proc/PID/status at each of these points
# and after the writes; CPU ms is the server's user and system time until
# then, steadier than the wall time when the machine is shared.  The file
# system is synced before each repeat, and the restart finds its files in
# the warm dentry and inode caches.  Medians of START_REPEATS runs; each
# repeat keeps its 81,920 files (and 819 MiB) until the end.
#
#   bench/backing-dir.sh [BUILDDIR]          (default: build)
#   REPEATS=5 SECONDS_PER_RUN=3 START_REPEATS=5 bench/backing-dir.sh
#   PARTS=io or PARTS=start runs one part; PEERS="file nbdkit-file memory"
#   drops the plugin; BENCH_DIR=/some/fs puts the files on another file
#   system (default: a new directory in /tmp).
#
# On ext4 without a journal, start it at least 6 minutes after deleting
# many files on that file system (a previous run's cleanup included): see
# the comment in startup_once.
#
# Nothing is flushed during the I/O jobs (fio sends no FLUSH), so the
# file-backed peers write into the page cache, as a client without FLUSH
# or FUA would.
set -eu
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
builddir=${1:-build}
repeats=${REPEATS:-5}
secs=${SECONDS_PER_RUN:-3}
start_repeats=${START_REPEATS:-5}
span_mib=${SPAN_MIB:-512}
parts=${PARTS:-"io start"}
peers=${PEERS:-"file plugin-file nbdkit-file memory"}
server=$builddir/server/zonednull-server
plugin=$builddir/plugin/.libs/nbdkit-zonednull-plugin.so
[ -x "$server" ] && [ -f "$plugin" ] || { echo "build first: $server, $plugin" >&2; exit 2; }
command -v fio >/dev/null || { echo "fio is not installed" >&2; exit 2; }
/usr/bin/python3 -c 'import nbd' 2>/dev/null ||
  { echo "python3-nbd is not installed (/usr/bin/python3 -c 'import nbd')" >&2; exit 2; }

tmp=$(mktemp -d "${BENCH_DIR:-/tmp}/zn-bench-backing.XXXXXX")
trap 'bench_stop; rm -rf "$tmp"' EXIT

echo "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start;" \
  "files in $(df -P "$tmp" | awk 'NR == 2 { print $1 }')" \
  "($(findmnt -no FSTYPE -T "$tmp" 2>/dev/null || stat -f -c %T "$tmp"))"

# ---- Part 1: I/O -----------------------------------------------------------

# 1 GiB, 15 conventional zones of 64 MiB and the sequential zone null_blk
# needs at the end; the jobs stay in the conventional zones.
device="size=1024 zone_size=64 zone_nr_conv=15"

# start NAME COMMAND...: a server on $tmp/NAME.sock; its PID in $tmp/NAME.pid.
start () {
  name=$1
  shift
  bench_start "$tmp/$name.sock" "$@" 2>>"$tmp/servers.log" ||
    { echo "bench: $name did not start: $*" >&2; tail -n 5 "$tmp/servers.log" >&2; exit 1; }
  echo "$bench_pid" >"$tmp/$name.pid"
}

uri () { echo "nbd+unix:///?socket=$tmp/$1.sock"; }

ticks=$(getconf CLK_TCK)
cpu_ticks () { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# run PEER RW: appends "IOPS CPU" of one fio run to $tmp/PEER.RW.runs.
run () {
  pid=$(cat "$tmp/$1.pid")
  c0=$(cpu_ticks "$pid") t0=$(date +%s%N)
  io=$(fio --name=bench --ioengine=nbd --uri="$(uri "$1")" --rw="$2" --bs=4k \
      --iodepth=16 --size="${span_mib}M" --time_based --runtime="$secs" \
      --output-format=terse --terse-version=3 2>>"$tmp/fio.log" |
    awk -F';' -v rw="$2" '/^3;/ { print (rw == "randread" ? $8 : $49) }')
  c1=$(cpu_ticks "$pid") t1=$(date +%s%N)
  [ -n "$io" ] || { echo "bench: fio $2 on $1 failed" >&2; tail -n 5 "$tmp/fio.log" >&2; exit 1; }
  echo "$io $(awk -v c="$((c1 - c0))" -v hz="$ticks" -v ns="$((t1 - t0))" \
              'BEGIN { printf "%.2f", c / hz / (ns / 1e9) }')" >>"$tmp/$1.$2.runs"
}

spread () {
  sort -n "$1" | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%d-%d", lo, hi }'
}

io_part () {
  for p in $peers; do
    case $p in
    file) start file "$server" -f -U "$tmp/file.sock" $device backing_dir="$tmp/zones" ;;
    plugin-file) start plugin-file nbdkit -f -U "$tmp/plugin-file.sock" "$plugin" $device \
                   backing_dir="$tmp/pzones" ;;
    nbdkit-file) truncate -s 1G "$tmp/flat.img"
                 start nbdkit-file nbdkit -f -U "$tmp/nbdkit-file.sock" file file="$tmp/flat.img" ;;
    memory) start memory "$server" -f -U "$tmp/memory.sock" $device memory_backed=1 ;;
    *) echo "bench: unknown peer $p (file plugin-file nbdkit-file memory)" >&2; exit 2 ;;
    esac
    fio --name=prefill --ioengine=nbd --uri="$(uri "$p")" --rw=write --bs=1m \
        --size="${span_mib}M" --iodepth=4 >>"$tmp/fio.log" 2>&1 ||
      { echo "bench: prefilling $p failed" >&2; exit 1; }
  done
  # The prefill sits in the page cache, as the jobs' data will: no cold reads.

  echo
  echo "Part 1: 4 KiB at iodepth 16, fio's nbd engine, one connection, over ${span_mib} MiB"
  echo "of prefilled data; IOPS, median of $repeats runs of ${secs}s [min-max], server CPU in cores"
  printf '%-9s %-12s %8s %-17s %5s\n' job peer IOPS min-max cpu
  for rw in randread write; do
    for p in $peers; do : >"$tmp/$p.$rw.runs"; done
    r=0
    while [ $r -lt "$repeats" ]; do
      # Rotate who goes first, so that a slow spell does not always hit
      # the same peer at the same place in the round.
      set -- $peers
      k=0
      while [ $k -lt $((r % $#)) ]; do first=$1; shift; set -- "$@" "$first"; k=$((k + 1)); done
      for p in "$@"; do run "$p" "$rw"; done
      r=$((r + 1))
    done
    for p in $peers; do
      printf '%-9s %-12s %8.0f %-17s %5.2f\n' "$rw" "$p" "$(bench_median 1 <"$tmp/$p.$rw.runs")" \
        "[$(spread "$tmp/$p.$rw.runs")]" "$(bench_median 2 <"$tmp/$p.$rw.runs")"
    done
  done
  echo
  printf '%-9s %-17s %-12s %s\n' job file/nbdkit-file file/memory plugin-file/nbdkit-file
  for rw in randread write; do
    m () { [ -s "$tmp/$1.$rw.runs" ] && bench_median 1 <"$tmp/$1.$rw.runs" || echo 0; }
    printf '%-9s %-17s %-12s %s\n' "$rw" "$(bench_ratio "$(m file)" "$(m nbdkit-file)" x)" \
      "$(bench_ratio "$(m file)" "$(m memory)" x)" "$(bench_ratio "$(m plugin-file)" "$(m nbdkit-file)" x)"
  done
  echo "file: zonednull-server backing_dir; plugin-file: nbdkit zonednull backing_dir;"
  echo "nbdkit-file: nbdkit file on one flat file; memory: zonednull-server memory_backed=1"
  bench_stop
}

# ---- Part 2: start-up and memory of a 20 TiB device -------------------------

# One repeat: prints "KEY=VALUE ..." on one line.  The servers are this
# helper's children, started and stopped by PID.
startup_once () {
  /usr/bin/python3 - "$server" "$tmp" "$1" <<'PY'
import nbd, os, signal, subprocess, sys, time

server, tmp, rep = sys.argv[1], sys.argv[2], int(sys.argv[3])
sock = os.path.join(tmp, "big.sock")
# Each repeat's files stay until the end: on ext4 without a journal, inode
# allocation skips, one by one, inodes freed in the last 60 s, or 6 minutes
# while their inode table block is dirty (as making files beside them keeps
# it), so deleting 81,920 files just before the next repeat would multiply
# the time to make its files.
zones = os.path.join(tmp, "big-zones-%d" % rep)
geometry = ["size=20971520", "zone_size=256"]
ZONE = 256 << 20
out = {}
log = open(os.path.join(tmp, "servers.log"), "a")

def status(pid):
    kb = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                kb[k] = int(v.split()[0])
    return kb

def cpu_ms(pid):
    """User and system CPU time of the process so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return "%.0f" % ((int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK"))

def start(extra):
    """The server, the ms from fork+exec to a completed handshake."""
    if os.path.exists(sock):
        os.unlink(sock)
    t0 = time.monotonic_ns()
    p = subprocess.Popen([server, "-f", "-U", sock] + geometry + extra,
                         stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    while True:
        h = nbd.NBD()
        try:
            h.connect_unix(sock)
            break
        except nbd.Error:
            if p.poll() is not None:
                sys.exit("bench: %s did not start (servers.log)" % " ".join(p.args))
            if time.monotonic_ns() - t0 > 120e9:
                p.kill()
                sys.exit("bench: no handshake after 120 s")
            time.sleep(0.001)
    ms = "%.1f" % ((time.monotonic_ns() - t0) / 1e6)
    h.shutdown()
    return p, ms, t0

def threads(pid):
    return len(os.listdir("/proc/%d/task" % pid))

def wait_filled(p, t0):
    """The ms from fork+exec until the thread that makes a new directory's
    zone files (started before the socket listens) has ended."""
    n0 = threads(p.pid)
    while n0 > 1 and threads(p.pid) >= n0:
        if time.monotonic_ns() - t0 > 600e9:
            sys.exit("bench: the zone files were not all made after 600 s")
        time.sleep(0.01)
    return "%.1f" % ((time.monotonic_ns() - t0) / 1e6)

def zone_files():
    return sum(1 for e in os.scandir(zones) if e.name.startswith("seq-"))

def stop(p):
    t0 = time.monotonic_ns()
    p.send_signal(signal.SIGTERM)
    if p.wait(timeout=120) != 0:
        sys.exit("bench: the server exited with %d" % p.returncode)
    return "%.1f" % ((time.monotonic_ns() - t0) / 1e6)

def write_zones():
    """1 MiB at the start of every 100th zone, then a FLUSH: the seconds of each."""
    h = nbd.NBD()
    h.connect_unix(sock)
    buf = os.urandom(1 << 20)
    t0 = time.monotonic_ns()
    for i in range(819):
        h.pwrite(buf, i * 100 * ZONE)
    t1 = time.monotonic_ns()
    h.flush()
    t2 = time.monotonic_ns()
    h.shutdown()
    return "%.2f" % ((t1 - t0) / 1e9), "%.3f" % ((t2 - t1) / 1e9)

def file_backed():
    p, out["file_first_ms"], t0 = start(["backing_dir=" + zones])
    try:
        out["file_first_cpu"] = cpu_ms(p.pid)
        kb = status(p.pid)
        out["file_first_rss"], out["file_first_hwm"] = kb["VmRSS"], kb["VmHWM"]
        # The writes come after the files are all made, so that neither
        # figure includes the other.
        out["file_filled_ms"] = wait_filled(p, t0)
        out["file_filled_cpu"] = cpu_ms(p.pid)
        kb = status(p.pid)
        out["file_filled_rss"], out["file_filled_hwm"] = kb["VmRSS"], kb["VmHWM"]
        if zone_files() != 81920:
            sys.exit("bench: %d zone files once the filler ended, not 81920" % zone_files())
        out["file_write_s"], out["file_flush_s"] = write_zones()
        kb = status(p.pid)
        out["file_written_rss"], out["file_written_hwm"] = kb["VmRSS"], kb["VmHWM"]
    finally:
        out["file_stop_ms"] = stop(p)
    written = sum(1 for e in os.scandir(zones)
                  if e.name.startswith("seq-") and e.stat().st_size == 1 << 20)
    if written != 819:
        sys.exit("bench: %d zone files of 1 MiB after the stop, not 819" % written)
    p, out["file_restart_ms"], _ = start(["backing_dir=" + zones])
    try:
        out["file_restart_cpu"] = cpu_ms(p.pid)
        kb = status(p.pid)
        out["file_restart_rss"], out["file_restart_hwm"] = kb["VmRSS"], kb["VmHWM"]
    finally:
        stop(p)

def memory_backed():
    p, out["mem_start_ms"], _ = start(["memory_backed=1"])
    try:
        out["mem_start_cpu"] = cpu_ms(p.pid)
        kb = status(p.pid)
        out["mem_start_rss"], out["mem_start_hwm"] = kb["VmRSS"], kb["VmHWM"]
        out["mem_write_s"], out["mem_flush_s"] = write_zones()
        kb = status(p.pid)
        out["mem_written_rss"], out["mem_written_hwm"] = kb["VmRSS"], kb["VmHWM"]
    finally:
        stop(p)

# Alternate which device goes first.
for f in ((file_backed, memory_backed) if rep % 2 == 0 else (memory_backed, file_backed)):
    f()
print(" ".join("%s=%s" % (k, v) for k, v in sorted(out.items())))
PY
}

startup_part () {
  : >"$tmp/startup.runs"
  # Whatever part 1 or the previous repeat left dirty goes to the disk
  # before anything is timed.
  r=0
  while [ $r -lt "$start_repeats" ]; do
    sync -f "$tmp"
    startup_once "$r" >>"$tmp/startup.runs" || exit 1
    r=$((r + 1))
  done
  # v KEY: the median of KEY over the repeats.
  v () { tr ' ' '\n' <"$tmp/startup.runs" | sed -n "s/^$1=//p" | bench_median; }
  # mib KEY: the median of a kB figure, in MiB.
  mib () { awk -v k="$(v "$1")" 'BEGIN { printf "%.1f", k / 1024 }'; }
  echo
  echo "Part 2: 20 TiB (size=20971520 zone_size=256, 81920 sequential zones);"
  echo "median of $start_repeats runs; start = fork+exec to the first completed NBD handshake;"
  echo "files made = fork+exec to the end of the thread that makes the zone files;"
  echo "writes: 1 MiB at the start of every 100th zone (819 zones, 819 MiB) and a FLUSH"
  printf '%-34s %10s %10s %10s %10s\n' "" "start ms" "CPU ms" "RSS MiB" "HWM MiB"
  printf '%-34s %10s %10s %10s %10s\n' "backing_dir, first start" "$(v file_first_ms)" \
    "$(v file_first_cpu)" "$(mib file_first_rss)" "$(mib file_first_hwm)"
  printf '%-34s %10s %10s %10s %10s\n' "backing_dir, zone files all made" "$(v file_filled_ms)" \
    "$(v file_filled_cpu)" "$(mib file_filled_rss)" "$(mib file_filled_hwm)"
  printf '%-34s %10s %10s %10s %10s\n' "backing_dir, after the writes" "" "" \
    "$(mib file_written_rss)" "$(mib file_written_hwm)"
  printf '%-34s %10s %10s %10s %10s\n' "backing_dir, restart" "$(v file_restart_ms)" \
    "$(v file_restart_cpu)" "$(mib file_restart_rss)" "$(mib file_restart_hwm)"
  printf '%-34s %10s %10s %10s %10s\n' "memory_backed=1, start" "$(v mem_start_ms)" \
    "$(v mem_start_cpu)" "$(mib mem_start_rss)" "$(mib mem_start_hwm)"
  printf '%-34s %10s %10s %10s %10s\n' "memory_backed=1, after the writes" "" "" \
    "$(mib mem_written_rss)" "$(mib mem_written_hwm)"
  echo "the 819 writes: backing_dir $(v file_write_s) s, memory $(v mem_write_s) s;" \
    "the FLUSH: backing_dir $(v file_flush_s) s, memory $(v mem_flush_s) s;" \
    "orderly stop of backing_dir: $(v file_stop_ms) ms"
  echo "each run's ms, first start / files made / restart / memory start:" \
    "$(tr ' ' '\n' <"$tmp/startup.runs" | sed -n 's/^file_first_ms=//p' | tr '\n' ' ')/" \
    "$(tr ' ' '\n' <"$tmp/startup.runs" | sed -n 's/^file_filled_ms=//p' | tr '\n' ' ')/" \
    "$(tr ' ' '\n' <"$tmp/startup.runs" | sed -n 's/^file_restart_ms=//p' | tr '\n' ' ')/" \
    "$(tr ' ' '\n' <"$tmp/startup.runs" | sed -n 's/^mem_start_ms=//p' | tr '\n' ' ')"
  echo "restart / files made: $(bench_ratio "$(v file_restart_ms)" "$(v file_filled_ms)" x);" \
    "restart / first start: $(bench_ratio "$(v file_restart_ms)" "$(v file_first_ms)" x);" \
    "restart / memory start: $(bench_ratio "$(v file_restart_ms)" "$(v mem_start_ms)" x);" \
    "RSS after the writes, backing_dir / memory: $(bench_ratio "$(v file_written_rss)" "$(v mem_written_rss)" x)"
}

for part in $parts; do
  case $part in
  io) io_part ;;
  start) startup_part ;;
  *) echo "bench: unknown part $part (io start)" >&2; exit 2 ;;
  esac
done
