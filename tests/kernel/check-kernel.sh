#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# check-kernel.sh: the real-kernel tier (`make check-kernel`).
#
# Boots Debian's kernel under qemu (TCG, no KVM) once.  In the guest:
#  - the kernel's nbd client attaches two `nbdkit zonednull` servers and
#    one `zonednull-server` running here on 127.0.0.1 (the guest's
#    10.0.2.2), each with one connection and with -C 2, and guest-nbd.sh
#    asserts the outcome of writes, discards, multi-conn and detaches;
#  - the real null_blk is loaded with random zoned configurations and
#    zntrace records a trace of random ops on each.
# Back on the host: the servers' zone state and data are checked against
# what the guest did, and every null_blk trace is replayed against the
# model and over NBD, to the plugin and to zonednull-server (tests/replay,
# tests/kernel/replay-traces.sh).  Any failure fails the run.
#
# Environment (set by tests/kernel/local.mk):
#   ZONEDNULL_PLUGIN ZONEDNULL_SERVER ZONEDNULL_CLI ZONEDNULL_SRCDIR REPLAY
#   ZNTRACE NBDKIT
#   ZN_KERNEL_CACHE   downloads and the base initramfs (kept between runs)
#   ZN_KERNEL_WORK    this run's files (recreated)
#   ZN_KERNEL_SEED    forces the run's seed (printed on every run)
#   ZN_KERNEL_TRACES  random null_blk configurations per run (default 5)
#   ZN_KERNEL_OPS     ops per trace (default 400)
#   ZN_KERNEL_KEEP    where failing traces are kept (default WORK/../failed)
#   ZN_KERNEL_GOLDEN  "all": trace every golden configuration, not one
#   ZN_KERNEL_GOLDEN_OPS  ops of those traces (default 300; 1500 = whole files)
set -u

: "${NBDKIT:=nbdkit}"
srcdir=${ZONEDNULL_SRCDIR:?}
here=$srcdir/tests/kernel
work=${ZN_KERNEL_WORK:?}
cache=${ZN_KERNEL_CACHE:?}
ntraces=${ZN_KERNEL_TRACES:-5}
nops=${ZN_KERNEL_OPS:-400}
golden_ops=${ZN_KERNEL_GOLDEN_OPS:-300}
PATH=/usr/bin:/bin:/usr/sbin:/sbin:$PATH  # nbdsh needs Debian's python3
export PATH

start_time=$(date +%s)
failures=0
# note, fail, die (die stops the servers through the EXIT trap below).
. "$here/lib.sh"

for v in ZONEDNULL_PLUGIN ZONEDNULL_SERVER ZONEDNULL_CLI REPLAY ZNTRACE; do
  eval "f=\${$v:-}"
  [ -n "$f" ] && [ -e "$f" ] || die "$v ('$f') is missing"
done
[ -x "$ZONEDNULL_SERVER" ] || die "ZONEDNULL_SERVER ('$ZONEDNULL_SERVER') is not executable"

server_pids=
cleanup () {
  for p in $server_pids; do
    kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
  done
  server_pids=
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

rm -rf "$work"
mkdir -p "$work" || exit 2
keep=${ZN_KERNEL_KEEP:-$(dirname "$work")/failed}

# ---- kernel and base initramfs (cached) ----------------------------------
sh "$here/prepare.sh" "$cache" || exit 2
kver=$(cat "$cache/current")
kdir=$cache/$kver

# ---- seeds and configurations --------------------------------------------
# The seed and the random configurations (tests/kernel/draw.sh, shared
# with the other tiers: 6.1's attributes, and a share of configurations the
# kernel refuses); the same LCG then picks the servers' ports.
. "$here/draw.sh"
. "$here/replay-traces.sh"
. "$here/boot.sh"
zn_seed || die "ZN_KERNEL_SEED must be a decimal number"
note "seed $seed (reproduce with: make check-kernel ZN_KERNEL_SEED=$seed)"
zn_rng_init "$seed"
conf=$work/traces.conf
: >"$conf"
zn_draw_kernel_configs "$conf" "$ntraces" "$nops" 6.1
# One golden trace's configuration with its seed: zntrace must reproduce
# the published recording's first ops exactly (checks the tracer itself).
# ZN_KERNEL_GOLDEN=all takes every golden trace (with ZN_KERNEL_GOLDEN_OPS=1500,
# the whole recordings).
set -- "$srcdir"/tests/traces/k6.1/*-seed1.trace
if [ $# -gt 0 ] && [ -f "$1" ]; then
  if [ "${ZN_KERNEL_GOLDEN:-}" != all ]; then
    eval "g=\${$(( seed % $# + 1 ))}"
    set -- "$g"
  fi
  for golden in "$@"; do
    gname=$(basename "$golden" .trace)
    gsettings=$(sed -n '2s/^# null_blk configfs: //p' "$golden")
    echo "golden-$gname 1 $golden_ops $gsettings" >>"$conf"
  done
fi
while read -r name tseed n settings; do
  note "trace $name: $settings"
done <"$conf"

# ---- servers on the host -------------------------------------------------
A_SIZE=64
# Host tags on A: its two hardware queues (the -C 2 connections) draw
# from one pool of 2 tags, which the counters must show afterwards.
A_TAGS="submit_queues=2 host_tags=1 shared_tag_bitmap=1 hw_queue_depth=2"
A_CONFIG="size=$A_SIZE zone_size=1 zone_nr_conv=1 zone_max_open=8 zone_max_active=10 blocksize=4096 memory_backed=1 $A_TAGS"
B_SIZE=32
B_CONFIG="size=$B_SIZE zone_size=4 zone_capacity=3 blocksize=512 memory_backed=1"
S_SIZE=32
S_CONFIG="size=$S_SIZE zone_size=4 zone_capacity=3 blocksize=512 memory_backed=1"

# start_server NAME CONFIG: on a free loopback port, sets $port and $pid.
# Server s is zonednull-server, which logs its connections (-v) and needs
# no preload: the build links the sanitizers into it when it uses them.
# The others are nbdkit with the build's plugin, every request logged by
# the log filter.
start_server () {
  name=$1 config=$2
  attempt=0
  while [ "$attempt" -lt 8 ]; do
    attempt=$((attempt + 1))
    randn 20000
    port=$((30000 + r))
    rm -f "$work/$name.pid"
    if [ "$name" = s ]; then
      # shellcheck disable=SC2086
      "$ZONEDNULL_SERVER" -f -v -i 127.0.0.1 -p "$port" -P "$work/$name.pid" \
        --exit-with-parent $config </dev/null 2>"$work/$name.err" &
    elif [ -n "${ZONEDNULL_PRELOAD:-}" ]; then
      # shellcheck disable=SC2086
      LD_PRELOAD=$ZONEDNULL_PRELOAD ASAN_OPTIONS=detect_leaks=0 \
        "$NBDKIT" -f -i 127.0.0.1 -p "$port" -P "$work/$name.pid" --filter=log \
        "$ZONEDNULL_PLUGIN" logfile="$work/$name.log" $config \
        </dev/null 2>"$work/$name.err" &
    else
      # shellcheck disable=SC2086
      "$NBDKIT" -f -i 127.0.0.1 -p "$port" -P "$work/$name.pid" --filter=log \
        "$ZONEDNULL_PLUGIN" logfile="$work/$name.log" $config \
        </dev/null 2>"$work/$name.err" &
    fi
    pid=$!
    tries=0
    while [ ! -s "$work/$name.pid" ] && kill -0 "$pid" 2>/dev/null && [ $tries -lt 300 ]; do
      sleep 0.1; tries=$((tries + 1))
    done
    if [ -s "$work/$name.pid" ]; then
      server_pids="$server_pids $pid"
      return 0
    fi
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  done
  cat "$work/$name.err" >&2
  die "server $name ($config) did not start"
}
start_server a "$A_CONFIG"; PORT_A=$port
start_server b "$B_CONFIG"; PORT_B=$port
start_server s "$S_CONFIG"; PORT_S=$port S_PID=$pid
note "nbdkit zonednull $A_CONFIG on 127.0.0.1:$PORT_A"
note "nbdkit zonednull $B_CONFIG on 127.0.0.1:$PORT_B"
note "zonednull-server $S_CONFIG on 127.0.0.1:$PORT_S"

# ---- the per-run initramfs, appended to the cached base -----------------
stage=$work/stage
mkdir -p "$stage/test" "$stage/usr/bin"
cp "$here/guest-run.sh" "$stage/test/run.sh"
cp "$here/guest-nbd.sh" "$here/guest-nullblk.sh" "$here/guest-lib.sh" "$stage/test/"
cp "$conf" "$stage/test/traces.conf"
cp "$ZNTRACE" "$stage/usr/bin/zntrace"
chmod 755 "$stage/test/"*.sh "$stage/usr/bin/zntrace"
cat >"$stage/test/params" <<EOF
HOST=10.0.2.2
PORT_A=$PORT_A
PORT_B=$PORT_B
PORT_S=$PORT_S
A_SIZE=$A_SIZE
B_SIZE=$B_SIZE
S_SIZE=$S_SIZE
EOF
(cd "$stage" && find test usr | LC_ALL=C sort | cpio -o -H newc --quiet) >"$work/run.cpio" ||
  die "cpio of the run's files failed"
cat "$kdir/base.cpio" "$work/run.cpio" >"$work/initrd.cpio"

# ---- boot ----------------------------------------------------------------
zn_boot 1G "${ZN_KERNEL_VM_TIMEOUT:-600}"

# The servers' logs as the guest left them (host checks connect too).
cp "$work/a.log" "$work/a.guest.log"
cp "$work/b.log" "$work/b.guest.log"
cp "$work/s.err" "$work/s.guest.err"

zn_guest_results
[ "$guest_rc" -eq 0 ] || fail "guest tests failed (status $guest_rc)"

# ---- host: the servers' state after the guest ------------------------------
# zone_tokens URI: "<zone> <token>" per zone, tokens as in the traces.
zone_tokens () {
  "$ZONEDNULL_CLI" report --json "$1" |
    sed -n 's/.*"start": \([0-9]*\),.*"wp": \([0-9a-z]*\),.*"cond": \([0-9]*\),.*/\1 \2 \3/p' |
    awk '{ c = $3; if (c == 0) t = "N"; else {
             l = substr("?EIOC????????RFX", c + 1, 1); t = l ($2 - $1) }
           print NR - 1, t }'
}
# check_zones NAME URI EXPECT-FILE: zones listed there have that token,
# every other sequential zone is E0 and conventional zones N.
check_zones () {
  name=$1 uri=$2 expect=$3
  zone_tokens "$uri" >"$work/$name.tokens" || { fail "zonednull report $uri failed"; return; }
  [ -s "$work/$name.tokens" ] || { fail "zonednull report $uri gave no zones"; return; }
  bad=$(awk 'NR == FNR { want[$1] = $2; next }
             { w = ($1 in want) ? want[$1] : ($2 == "N" ? "N" : "E0")
               if ($2 != w) printf "zone %s: %s, the guest left %s; ", $1, $2, w }' \
          "$expect" "$work/$name.tokens")
  if [ -n "$bad" ]; then fail "server $name after the guest: $bad"
  else note "ok: server $name's zones are as the guest left them: $(awk '{printf "%s ", $2}' "$work/$name.tokens")"; fi
}
if [ -f "$out/nbd/expect-a" ] && [ -f "$out/nbd/expect-s" ]; then
  check_zones a "nbd://127.0.0.1:$PORT_A/" "$out/nbd/expect-a"
  check_zones b "nbd://127.0.0.1:$PORT_B/" "$out/nbd/expect-b"
  check_zones s "nbd://127.0.0.1:$PORT_S/nullb0" "$out/nbd/expect-s"
else
  fail "the guest's nbd tests left no expectations"
fi

# check_sums NAME URI: the host reads from the server what the guest read
# (the checksums in sums-NAME), in 64 KiB requests.
check_sums () {
  name=$1 uri=$2
  [ -s "$out/nbd/sums-$name" ] || { fail "the guest left no checksums for server $name"; return; }
  while read -r off len want; do
    got=$(nbdsh -u "$uri" -c "import sys
for o in range($off, $off + $len, 65536):
    sys.stdout.buffer.write(h.pread(min(65536, $off + $len - o), o))" </dev/null |
          sha256sum | cut -d' ' -f1)
    if [ "$got" = "$want" ]; then
      note "ok: server $name: the host reads what the guest read at byte $off ($len bytes)"
    else
      fail "server $name: the host reads other data than the guest at byte $off ($len bytes)"
    fi
  done <"$out/nbd/sums-$name"
}
check_sums a "nbd://127.0.0.1:$PORT_A/nullb0"
check_sums s "nbd://127.0.0.1:$PORT_S/nullb0"

# Data the guest wrote with dd, read on the host through libnbd.
if [ -f "$out/nbd/zone4.bin" ]; then
  if nbdsh -u "nbd://127.0.0.1:$PORT_A/nullb0" \
       -c 'import sys; sys.stdout.buffer.write(h.pread(65536, 4 << 20))' >"$work/zone4.host" &&
     cmp -s "$work/zone4.host" "$out/nbd/zone4.bin"; then
    note "ok: the host reads the guest's 64 KiB at zone 4 identically (libnbd)"
  else
    fail "the host reads different data at zone 4 than the guest wrote"
  fi
else
  fail "the guest left no data file"
fi

# The connections, as the log filter saw them: the -C 1 attach, then two
# simultaneous connections that both carried writes, all disconnected.
alog=$work/a.guest.log
conns=$(sed -n 's/.*connection=\([0-9]*\) Connect export=nullb0 .*/\1/p' "$alog")
nconn=$(echo "$conns" | grep -c .)
if [ "$nconn" -ne 3 ]; then
  fail "server a saw $nconn data connections, expected 3 (one, then two with -C 2)"
else
  c2=$(echo "$conns" | sed -n 2p) c3=$(echo "$conns" | sed -n 3p)
  l_c3=$(grep -n "connection=$c3 Connect " "$alog" | cut -d: -f1)
  l_d2=$(grep -n "connection=$c2 Disconnect" "$alog" | cut -d: -f1)
  w2=$(grep -c "connection=$c2 Write " "$alog")
  w3=$(grep -c "connection=$c3 Write " "$alog")
  if [ -n "$l_d2" ] && [ "$l_c3" -lt "$l_d2" ] && [ "$w2" -gt 0 ] && [ "$w3" -gt 0 ]; then
    note "ok: -C 2 made two simultaneous connections ($c2: $w2 writes, $c3: $w3 writes)"
  else
    fail "-C 2 connections $c2/$c3: writes $w2/$w3, connect of $c3 at line $l_c3, disconnect of $c2 at line '$l_d2'"
  fi
fi
# The tag counters of A: one pool for both queues, both queues used by
# the guest's connections, every request counted once, and never more
# tags held at once than the one pool has.
if "$ZONEDNULL_CLI" info --json "nbd://127.0.0.1:$PORT_A/" >"$work/a.info.json" 2>"$work/a.info.err" &&
   why=$(/usr/bin/python3 - "$work/a.info.json" <<'PY'
import json, sys
i = json.load(open(sys.argv[1]))
t, q = i["tags"], i["queues"]
problems = []
if i["tag_pools"] != 1 or not i["shared_tags"] or not i["shared_tag_bitmap"]:
    problems.append("not one shared pool: %s pools" % i["tag_pools"])
if len(q) != 2 or any(x["completed"] == 0 for x in q):
    problems.append("a queue carried no requests: %s" % q)
if t["completed"] != sum(x["completed"] for x in q):
    problems.append("device completed %d != queues' sum" % t["completed"])
if not 1 <= t["peak"] <= i["hw_queue_depth"]:
    problems.append("peak %d outside 1..%d" % (t["peak"], i["hw_queue_depth"]))
print("; ".join(problems) if problems else
      "queues completed %s, peak %d of %d shared tags, %d waited"
      % ([x["completed"] for x in q], t["peak"], i["hw_queue_depth"], t["waited"]))
sys.exit(1 if problems else 0)
PY
   ); then
  note "ok: host tags: $why"
else
  fail "host tags on server a: ${why:-$(cat "$work/a.info.err")}"
fi

for s in a b; do
  nc=$(grep -c " Connect export=" "$work/$s.guest.log")
  nd=$(grep -c " Disconnect " "$work/$s.guest.log")
  [ "$nc" -eq "$nd" ] || fail "server $s: $nc connections but $nd disconnects"
done

# Server s's connections, from its -v log: the -C 1 attach and the two of
# -C 2, at least two open at once, and none left open after the detaches.
read -r sn speak sopen <<EOF
$(awk '/ accepted$/ { n++; open++; if (open > peak) peak = open }
       / closed$/ { open-- }
       END { print n + 0, peak + 0, open + 0 }' "$work/s.guest.err")
EOF
if [ "$sn" -eq 3 ] && [ "$speak" -ge 2 ] && [ "$sopen" -eq 0 ]; then
  note "ok: zonednull-server: 3 connections, $speak at once, all closed"
else
  fail "zonednull-server saw $sn connections (expected 3), at most $speak at once (expected 2), $sopen still open"
fi

# ---- host: replay the null_blk traces --------------------------------------
zn_replay_traces "$conf" "$out/traces" 6.1

# zonednull-server ends on SIGTERM with status 0; anything else is a crash
# or, in the sanitizer build, a leak.
kill "$S_PID" 2>/dev/null
wait "$S_PID"
src=$?
rest=
for p in $server_pids; do [ "$p" = "$S_PID" ] || rest="$rest $p"; done
server_pids=$rest
if [ "$src" -eq 0 ]; then note "ok: zonednull-server stopped cleanly on SIGTERM"
else fail "zonednull-server exited with status $src on SIGTERM: $(tail -n 5 "$work/s.err")"; fi

cleanup
end_time=$(date +%s)
note "seed $seed, $((end_time - start_time)) s in all"
if [ "$failures" -gt 0 ]; then
  note "$failures failure(s); reproduce with: make check-kernel ZN_KERNEL_SEED=$seed"
  note "files of this run: $work"
  exit 1
fi
rm -rf "$work"
note "PASS"
exit 0
