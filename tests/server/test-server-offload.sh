#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# zonednull-server's storage workers: a device whose disk is slow does not
# hold up another device, and the server stops cleanly with storage I/O
# in flight.  An LD_PRELOAD shim (stall-io.c) holds the fdatasync and the
# reads of nullb0's zone files.  With a flush and a read of nullb0 held,
# a write, a flush and a read of nullb1 must be answered; then SIGTERM
# with both still held must stop the server with status 0 and no memory
# error, and a restart on the same directory must find every write that
# was acknowledged.  No timing: the held requests are held until the
# test lets them go, so nullb1's must come first.
#
# Then, with two storage threads: flushes that come while a flush of the
# same device is held wait on the loop, not on a storage thread, and are
# then run once for all.  With nullb0's flush held and three more behind
# it, nullb1's flush must still find a thread; and a write answered
# before the three were sent must be synced before they are answered.
#
# Then, on one event loop: a block status of a zone whose FUA write is
# held (the zone's lock with it) waits on a storage thread, not on the
# loop, and so does a read of nullb0's control export, which holds every
# zone still, so nullb1's requests on the same loop are answered
# meanwhile; a block status whose client is killed meanwhile is dropped
# when it is done, and a stop with one still waiting is clean.  The
# control export's requests, on the workers, still run one at a time.
# Last, with pipeline_zoned_writes, writes ahead of such a held zone's wp
# are parked, not waited for on the loop, and land once the zone is let
# go.
. "$(dirname "$0")/../common/lib.sh"

need_nbdsh
. "$(dirname "$0")/stall-lib.sh"

# client NAME URI OPS...: an NBD client on URI running OPS in order, each
# w:OFFSET:TAG (4 KiB of TAG), W:OFFSET:TAG (the same with FUA), f
# (flush), F:N:FILE (N flushes sent at once, not waited for, then FILE
# created), b:OFFSET:FILE (a block status of 4 KiB sent, FILE created,
# then its reply checked: an extent of 4 KiB in each context), c:FILE
# (the same with a read of a control export's header and zones: 16),
# C (that read, then behind it 33 MiB and 64 KiB of writes past the
# control export's end, each of which must fail with ENOSPC, and the
# read again),
# p:OFFSET:TAG:FILE (4 KiB of TAG written, FILE created once the write is
# sent, then its reply awaited), t:FILE
# (waits up to 60 s for FILE) or r:OFFSET:TAG (4 KiB that must be TAG);
# waits for the flushes sent at the end, and prints "NAME done", or why
# it failed.
client () {
  /usr/bin/python3 - "$@" <<'EOF'
import errno, os, sys, time, nbd
name, uri, ops = sys.argv[1], sys.argv[2], sys.argv[3:]
h = nbd.NBD()
h.add_meta_context("base:allocation")
h.add_meta_context("zonednull:zones")
h.connect_uri(uri)
sent = []
for op in ops:
    kind, *arg = op.split(":")
    if kind in "wW":
        h.pwrite(bytes([int(arg[1])]) * 4096, int(arg[0]),
                 nbd.CMD_FLAG_FUA if kind == "W" else 0)
    elif kind == "b":
        got = {}
        def extents(ctx, offset, entries, err):
            got[ctx] = list(entries)
            return 0
        c = h.aio_block_status(4096, int(arg[0]), extents)
        while h.aio_get_direction() & nbd.AIO_DIRECTION_WRITE:
            h.poll(-1)
        open(arg[1], "w").close()
        while not h.aio_command_completed(c):
            h.poll(-1)
        for ctx in ("base:allocation", "zonednull:zones"):
            if got.get(ctx, [0])[0] != 4096:
                sys.exit("%s: block status at %s: %r" % (name, arg[0], got))
    elif kind == "p":
        c = h.aio_pwrite(nbd.Buffer.from_bytearray(bytes([int(arg[1])]) * 4096),
                         int(arg[0]))
        while h.aio_get_direction() & nbd.AIO_DIRECTION_WRITE:
            h.poll(-1)
        open(arg[2], "w").close()
        while not h.aio_command_completed(c):
            h.poll(-1)
    elif kind == "c":
        # On a control export: its header page and the zones' descriptors
        # read (one snapshot: every zone held still), FILE created once
        # the read is sent.
        buf = nbd.Buffer(8192)
        c = h.aio_pread(buf, 0)
        while h.aio_get_direction() & nbd.AIO_DIRECTION_WRITE:
            h.poll(-1)
        open(arg[0], "w").close()
        while not h.aio_command_completed(c):
            h.poll(-1)
        page = buf.to_bytearray()
        if int.from_bytes(page[20:24], "big") != 16:
            sys.exit("%s: the control header says %d zones" %
                     (name, int.from_bytes(page[20:24], "big")))
    elif kind == "C":
        # Behind a control read held on the workers, the server takes no
        # more of the connection's requests: more than its input buffer
        # (33 MiB) of them waits there and in the socket.
        h.set_strict_mode(0)
        buf = nbd.Buffer(8192)
        c = h.aio_pread(buf, 0)
        sizes = [16 << 20, 16 << 20, 1 << 20, 64 << 10]
        writes = [h.aio_pwrite(nbd.Buffer(n), 1 << 30) for n in sizes]
        for i, w in enumerate([c] + writes):
            try:
                while not h.aio_command_completed(w):
                    h.poll(-1)
                if i:
                    sys.exit("%s: write %d past the end succeeded" % (name, i))
            except nbd.Error as e:
                if i == 0 or e.errnum != errno.ENOSPC:
                    sys.exit("%s: request %d: %s" % (name, i, e))
        if int.from_bytes(h.pread(8192, 0)[20:24], "big") != 16:
            sys.exit("%s: the control header after the writes is wrong" % name)
    elif kind == "f":
        h.flush()
    elif kind == "F":
        sent += [h.aio_flush() for _ in range(int(arg[0]))]
        while h.aio_get_direction() & nbd.AIO_DIRECTION_WRITE:
            h.poll(-1)
        open(arg[1], "w").close()
    elif kind == "t":
        for _ in range(600):
            if os.path.exists(arg[0]):
                break
            time.sleep(0.1)
        else:
            sys.exit("%s: %s never came" % (name, arg[0]))
    else:
        got = h.pread(4096, int(arg[0]))
        if got != bytes([int(arg[1])]) * 4096:
            sys.exit("%s: offset %s holds %r..., not tag %s" %
                     (name, arg[0], got[:4], arg[1]))
for c in sent:
    while not h.aio_command_completed(c):
        h.poll(-1)
print(name, "done")
EOF
}

# spawn NAME URI OPS...: client NAME in the background, its output in
# $tmpdir/NAME.out and its PID in $NAME.
spawn () {
  n_=$1
  shift
  client "$n_" "$@" >"$tmpdir/$n_.out" 2>&1 &
  eval "$n_=\$!"
}

# let_go NAME...: the stall ends; then each spawned client NAME must end
# well.
let_go () {
  rm -f "$flag"
  for n_ in "$@"; do
    eval "p_=\$$n_"
    wait "$p_" || fail "$n_: $(cat "$tmpdir/$n_.out")"
  done
}

# beside WHAT "OPS" NAME...: nullb1's client runs OPS (split at spaces),
# WHAT, and is answered while the spawned clients NAME... stay held.
beside () {
  what_=$1 ops_=$2
  shift 2
  # shellcheck disable=SC2086 # OPS, split on purpose
  client other "$u1" $ops_ >"$tmpdir/other.out" 2>&1 ||
    fail "nullb1: $(cat "$tmpdir/other.out")"
  pids_=
  for n_ in "$@"; do
    eval "pids_=\"\$pids_ \$$n_\""
  done
  # shellcheck disable=SC2086 # PIDs
  still_held "$what_" $pids_
}

zone=$((4 * 1024 * 1024))
start_server srv nr_devices=2 size=64 zone_size=4 zone_nr_conv=4 \
  backing_dir="$d" "$@"
u0="nbd+unix:///nullb0?socket=$sock"
u1="nbd+unix:///nullb1?socket=$sock"
client seed "$u0" w:0:7 f >"$tmpdir/seed.out" 2>&1 ||
  fail "seeding nullb0: $(cat "$tmpdir/seed.out")"

: >"$flag"
spawn flusher "$u0" "w:$zone:8" f
await_file "$flag.fdatasync" "nullb0's flush"
spawn reader "$u0" r:0:7
await_file "$flag.preadv2" "nullb0's read"

# nullb1 goes on while nullb0's flush and read are held.
beside "nullb1's requests" "w:0:9 f r:0:9 w:$zone:10 r:0:9" flusher reader

# A stop with the flush and the read still on the workers.
stop_held $flusher $reader

# Every acknowledged write is there after the restart.
start_server again nr_devices=2 size=64 zone_size=4 zone_nr_conv=4 \
  backing_dir="$d" "$@"
client check0 "nbd+unix:///nullb0?socket=$sock" r:0:7 "r:$zone:8" \
  >"$tmpdir/check0.out" 2>&1 || fail "after the restart: $(cat "$tmpdir/check0.out")"
client check1 "nbd+unix:///nullb1?socket=$sock" r:0:9 "r:$zone:10" \
  >"$tmpdir/check1.out" 2>&1 || fail "after the restart: $(cat "$tmpdir/check1.out")"
stop_server "$pid"

start_server few --io-threads=2 nr_devices=2 size=64 zone_size=4 \
  zone_nr_conv=4 backing_dir="$d" "$@"
u0="nbd+unix:///nullb0?socket=$sock"
u1="nbd+unix:///nullb1?socket=$sock"
rm -f "$flag".*
: >"$flag"
# One connection, so that its flushes are on one event loop: a loop's
# flushes of a device wait for the one it is running.
client held "$u0" "w:$zone:11" "F:1:$tmpdir/first" t:"$flag.fdatasync" \
  "w:$((2 * zone)):12" "F:3:$tmpdir/sent" >"$tmpdir/held.out" 2>&1 &
held=$!
await_file "$tmpdir/sent" "the three flushes behind nullb0's held flush"
client other "$u1" w:0:13 f >"$tmpdir/other.out" 2>&1 ||
  fail "nullb1: $(cat "$tmpdir/other.out")"
none_synced "nullb1's flush" "$tmpdir/held.out"
rm -f "$flag"
wait $held || fail "nullb0's flushes: $(cat "$tmpdir/held.out")"
grep -qx "$d/nullb0/cnv-000002" "$flag.log" ||
  fail "the flushes behind the held one did not sync zone 2, written before them; synced: $(cat "$flag.log")"
stop_server "$pid"

# One event loop: a block status of a zone whose FUA write is held on a
# storage thread (with the zone's lock) goes to the workers too, and
# nullb1, on the same loop, is answered meanwhile.
# The shim marks the first connection that has sent 33 MiB after its
# first 28 bytes (the NBD input buffer's size, and a read request).
ZN_STALL_RECV=$((33 * 1024 * 1024 + 28))
export ZN_STALL_RECV
start_server report --threads=1 nr_devices=2 size=64 zone_size=4 \
  zone_nr_conv=4 backing_dir="$d" "$@"
u0="nbd+unix:///nullb0?socket=$sock"
u1="nbd+unix:///nullb1?socket=$sock"
# held_status OFFSET TAG: nullb0's FUA write of TAG at OFFSET, in zone
# 1, held in its fdatasync (pid $flusher), then a block status of the
# zone sent (pid $reader).
held_status () {
  rm -f "$flag".* "$tmpdir/status-sent"
  : >"$flag"
  spawn flusher "$u0" "W:$1:$2"
  await_file "$flag.fdatasync" "nullb0's FUA write"
  spawn reader "$u0" "b:$zone:$tmpdir/status-sent"
  await_file "$tmpdir/status-sent" "the block status of the zone being written"
}
held_status "$zone" 15
# A block status whose connection is gone before the zone is let go:
# answered to no one, and it took no tag to give back.
spawn gone "$u0" "b:$zone:$tmpdir/gone-sent"
await_file "$tmpdir/gone-sent" "the block status of a client then killed"
kill -KILL $gone
wait $gone 2>/dev/null || :
# The control export's header holds every zone still: it waits there too.
spawn control "nbd+unix:///nullb0/control?socket=$sock" "c:$tmpdir/control-sent"
await_file "$tmpdir/control-sent" "the control read of nullb0"

beside "nullb1's requests, beside a block status and a control read of a zone held," \
  "w:0:16 r:0:16" flusher reader control
let_go flusher reader control
client after "$u0" "b:$zone:$tmpdir/after-sent" "r:$zone:15" \
  >"$tmpdir/after.out" 2>&1 || fail "after the block statuses: $(cat "$tmpdir/after.out" "$tmpdir/srv.log")"
# The control export's requests run one after another, on the workers
# too: each of 50 commands sent at once with the read of its result
# reads its own sequence number.
/usr/bin/python3 - "nbd+unix:///nullb0/control?socket=$sock" \
  >"$tmpdir/pipelined.out" 2>&1 <<'EOF' ||
import nbd, struct, sys
h = nbd.NBD()
h.connect_uri(sys.argv[1])
cmd = lambda op, sector, n: struct.pack(">IIQQQ", 0x5a4e434d, op, sector, n, 0)
seq0 = struct.unpack(">Q", h.pread(8, 88))[0]
reads = []
for i in range(50):
    h.aio_pwrite(nbd.Buffer.from_bytearray(cmd(8, (1 << 40) + 2 * i, 1)), 0)
    buf = nbd.Buffer(8)
    reads.append((buf, h.aio_pread(buf, 88)))
for i, (buf, c) in enumerate(reads):
    while not h.aio_command_completed(c):
        h.poll(-1)
    seq = struct.unpack(">Q", buf.to_bytearray())[0]
    if seq != seq0 + i + 1:
        sys.exit("the read after command %d says %d commands ran, not %d" %
                 (i, seq - seq0, i + 1))
h.pwrite(cmd(9, 1 << 40, 4000), 0)
EOF
  fail "pipelined control commands: $(cat "$tmpdir/pipelined.out")"

# A control connection whose requests wait behind its read, held on the
# workers, fills its input buffer (33 MiB): it waits for the read, and
# is not closed as though one request were too large to frame.
held_status "$((zone + 8192))" 22
spawn filler "nbd+unix:///nullb0/control?socket=$sock" C
await_file "$flag.recv" "the control connection's full input buffer"
let_go flusher reader filler

# A stop with a block status, its connection's first request, still
# waiting on the workers.
held_status "$((zone + 4096))" 17
stop_held $flusher $reader

# Last, pipelined writes on one event loop, in zone 4: a write 8 KiB
# ahead of the write pointer waits for it; then a FUA write at the write
# pointer is held on a storage thread with the zone's lock; then writes
# 4 and 12 KiB ahead come while the zone is held.  Neither the wait's
# next look at the zone nor the new writes' first waits for the lock on
# the loop: nullb1, on the same loop, is answered meanwhile.  Once the
# FUA write is in, the four land in order (the one 12 KiB ahead first
# undecided, then waiting for the write pointer).
start_server pipelined --threads=1 nr_devices=2 size=64 zone_size=4 \
  zone_nr_conv=4 pipeline_zoned_writes=1 pipeline_wait_ms=600000 \
  backing_dir="$d" "$@"
u0="nbd+unix:///nullb0?socket=$sock"
u1="nbd+unix:///nullb1?socket=$sock"
seq=$((4 * zone))
rm -f "$flag".*
: >"$flag"
spawn waiting "$u0" "p:$((seq + 8192)):21:$tmpdir/waiting-sent"
await_file "$tmpdir/waiting-sent" "the write 8 KiB ahead of the write pointer"
spawn flusher "$u0" "W:$seq:18"
await_file "$flag.fdatasync" "nullb0's FUA write at the wp of zone 4"
spawn piped "$u0" "p:$((seq + 4096)):19:$tmpdir/piped-sent"
await_file "$tmpdir/piped-sent" "the write 4 KiB ahead, behind the held FUA write"
spawn later "$u0" "p:$((seq + 12288)):23:$tmpdir/later-sent"
await_file "$tmpdir/later-sent" "the write 12 KiB ahead, behind the held FUA write"
beside "nullb1's requests, beside writes pipelined behind a zone held," \
  "w:0:20 r:0:20" flusher piped later waiting
let_go flusher piped later waiting
client after "$u0" "r:$seq:18" "r:$((seq + 4096)):19" "r:$((seq + 8192)):21" \
  "r:$((seq + 12288)):23" \
  >"$tmpdir/after.out" 2>&1 || fail "after the pipelined writes: $(cat "$tmpdir/after.out")"
# The writes 8 and 12 KiB ahead waited for the write pointer, none timed
# out or failed; the one 4 KiB ahead was at it once the zone was free.
pl=$("${ZONEDNULL_CLI:-${ZONEDNULL_BUILDDIR:-.}/cli/zonednull}" info --json "$u0" |
  /usr/bin/python3 -c 'import json, sys; p = json.load(sys.stdin)["pipeline"]; print(p["waiting"], p["waited"], p["timeouts"], p["failed"])') ||
  fail "zonednull info of nullb0"
[ "$pl" = "0 2 0 0" ] ||
  fail "pipelined writes waiting, waited, timed out and failed: $pl, expected 0 2 0 0"
stop_server "$pid"
echo "test-server-offload: nullb1 answered beside nullb0's held flush and read; clean stop; writes kept; flushes behind a held one hold no storage thread and cover what came before them; a block status and a control read do not hold the loop for a zone being synced; control requests one at a time; writes pipelined behind a zone being synced are parked, not waited for on the loop"
