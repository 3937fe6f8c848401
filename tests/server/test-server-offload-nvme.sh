#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# zonednull-server's storage workers over NVMe/TCP, as
# test-server-offload.sh over NBD: an LD_PRELOAD shim (stall-io.c) holds
# the fdatasync and the reads of nullb0's zone files.  With a flush and a
# read of namespace 1 (nullb0) held, writes, a FUA write, a zone append,
# a flush, a zone reset (its zone then reads as 0xFF, past the write
# pointer) and reads of namespace 2 (nullb1) must be
# answered; then SIGTERM with both still held must stop the server with
# status 0 and no memory error, and a restart on the same directory must
# find every write that was acknowledged.  No timing: the held commands
# are held until the test lets them go, so nullb1's must come first.
# Then, with irqmode=2, the host's smoke run (digests, an R2T write, a
# reset of every zone) has its replies held and released as usual.  And
# on one event loop, a zone report of a zone whose FUA write is held
# waits on a storage thread, not on the loop.
# tests/common/nvme-host.py is the host.
. "$(dirname "$0")/../common/lib.sh"

. "$(dirname "$0")/stall-lib.sh"
host_py="/usr/bin/python3 $(dirname "$0")/../common/nvme-host.py"

# A port nobody listens on now (a race with other programs is harmless:
# the server then fails to start and says so).
port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')


# serve NAME [KEY=VALUE...]: the server on the directory, NVMe/TCP on
# $port.
serve () {
  name=$1
  shift
  start_server "$name" --nvme="$port" -i 127.0.0.1 nr_devices=2 size=64 \
    zone_size=4 backing_dir="$d" "$@"
  nqn=$(sed -n 's/.*NVMe\/TCP on 127.0.0.1 port [0-9]*: subsystem \([^,]*\),.*/\1/p' \
    "$tmpdir/$name.log")
  [ -n "$nqn" ] || fail "no subsystem NQN: $(cat "$tmpdir/$name.log")"
}

# 512-byte blocks: a zone of 4 MiB is 8192 LBAs.
zone=8192
serve srv
$host_py 127.0.0.1 "$port" ops seed "$nqn" 1 w:0:7 f >"$tmpdir/seed.out" 2>&1 ||
  fail "seeding nullb0: $(cat "$tmpdir/seed.out")"

: >"$flag"
$host_py 127.0.0.1 "$port" ops flusher "$nqn" 1 "w:$zone:8" f \
  >"$tmpdir/flusher.out" 2>&1 &
flusher=$!
await_file "$flag.fdatasync" "nullb0's flush"
$host_py 127.0.0.1 "$port" ops reader "$nqn" 1 r:0:7 >"$tmpdir/reader.out" 2>&1 &
reader=$!
await_file "$flag.preadv2" "nullb0's read"

# nullb1 goes on while nullb0's flush and read are held.
$host_py 127.0.0.1 "$port" ops other "$nqn" 2 w:0:9 f r:0:9 "w:$zone:10" r:0:9 \
  "a:$((2 * zone)):11" "r:$((2 * zone)):11" "W:$((3 * zone)):12" \
  "r:$((3 * zone)):12" "z:$((3 * zone))" "r:$((3 * zone)):255" \
  >"$tmpdir/other.out" 2>&1 || fail "nullb1: $(cat "$tmpdir/other.out")"
grep -qx "other done" "$tmpdir/other.out" || fail "nullb1: $(cat "$tmpdir/other.out")"
still_held "nullb1's commands" $flusher $reader

# A stop with the flush and the read still on the workers.
stop_held $flusher $reader

# Every acknowledged write is there after the restart.
serve again
$host_py 127.0.0.1 "$port" ops check0 "$nqn" 1 r:0:7 "r:$zone:8" \
  >"$tmpdir/check0.out" 2>&1 || fail "after the restart: $(cat "$tmpdir/check0.out")"
$host_py 127.0.0.1 "$port" ops check1 "$nqn" 2 r:0:9 "r:$zone:10" \
  "r:$((2 * zone)):11" "r:$((3 * zone)):255" \
  >"$tmpdir/check1.out" 2>&1 || fail "after the restart: $(cat "$tmpdir/check1.out")"
stop_server "$pid"

# With irqmode=2 the replies of the commands the workers ran are held
# for their completion, as the others are: nvme-host.py's smoke (digests,
# a reset of every zone, an R2T write, its read, an append).
serve held irqmode=2 completion_nsec=1000000
$host_py 127.0.0.1 "$port" smoke "$nqn" >"$tmpdir/smoke.out" 2>&1 ||
  fail "irqmode=2: $(cat "$tmpdir/smoke.out")"
grep -q "^append status 0x0 lba 128$" "$tmpdir/smoke.out" ||
  fail "irqmode=2: zone append: $(cat "$tmpdir/smoke.out")"
stop_server "$pid"

# Flushes behind a held flush of the same namespace, on one I/O queue
# (one event loop), wait on the loop, not on the storage threads, and
# are then run once for all: with two storage threads, nullb1's flush
# must be answered while nullb0's first flush is held and three more
# wait behind it, and zone 5, written before the three were sent, must
# be synced before they are answered.
serve few --io-threads=2
rm -f "$flag".*
: >"$flag"
$host_py 127.0.0.1 "$port" ops held "$nqn" 1 "w:$((4 * zone)):11" "F:1:$tmpdir/first" \
  t:"$flag.fdatasync" "w:$((5 * zone)):12" "F:3:$tmpdir/sent" \
  >"$tmpdir/held.out" 2>&1 &
held=$!
await_file "$tmpdir/sent" "the three flushes behind nullb0's held flush"
$host_py 127.0.0.1 "$port" ops other "$nqn" 2 "w:$((4 * zone)):13" f >"$tmpdir/other.out" 2>&1 ||
  fail "nullb1: $(cat "$tmpdir/other.out")"
none_synced "nullb1's flush" "$tmpdir/held.out"
rm -f "$flag"
wait $held || fail "nullb0's flushes: $(cat "$tmpdir/held.out")"
grep -qx "held done" "$tmpdir/held.out" || fail "nullb0's flushes: $(cat "$tmpdir/held.out")"
grep -qx "$d/nullb0/seq-000005" "$flag.log" ||
  fail "the flushes behind the held one did not sync zone 5, written before them; synced: $(cat "$flag.log")"
stop_server "$pid"

# One event loop: a zone report of a zone whose FUA write is held on a
# storage thread (with the zone's lock) is made there too, and nullb1,
# on the same loop, is answered meanwhile; the report, once made, shows
# the write.
serve report --threads=1
rm -f "$flag".*
: >"$flag"
$host_py 127.0.0.1 "$port" ops flusher "$nqn" 1 "W:$((6 * zone)):14" \
  >"$tmpdir/flusher.out" 2>&1 &
flusher=$!
await_file "$flag.fdatasync" "nullb0's FUA write"
$host_py 127.0.0.1 "$port" ops reader "$nqn" 1 "R:$((6 * zone)):$tmpdir/report-sent" \
  >"$tmpdir/reader.out" 2>&1 &
reader=$!
await_file "$tmpdir/report-sent" "the zone report of the zone being written"
$host_py 127.0.0.1 "$port" ops other "$nqn" 2 "w:$((6 * zone)):15" \
  "r:$((6 * zone)):15" >"$tmpdir/other.out" 2>&1 ||
  fail "nullb1: $(cat "$tmpdir/other.out")"
still_held "nullb1's commands, beside a zone report of a zone held," \
  $flusher $reader
rm -f "$flag"
wait $flusher || fail "nullb0's FUA write: $(cat "$tmpdir/flusher.out")"
wait $reader || fail "nullb0's zone report: $(cat "$tmpdir/reader.out")"
grep -qx "reader done" "$tmpdir/reader.out" ||
  fail "nullb0's zone report: $(cat "$tmpdir/reader.out")"
stop_server "$pid"
echo "test-server-offload-nvme: nullb1 answered beside nullb0's held flush and read; clean stop; writes kept; irqmode=2; flushes behind a held one hold no storage thread and cover what came before them; a zone report does not hold the loop for a zone being synced"
