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
. "$(dirname "$0")/../common/lib.sh"

need_nbdsh
. "$(dirname "$0")/stall-lib.sh"

# client NAME URI OPS...: an NBD client on URI running OPS in order, each
# w:OFFSET:TAG (4 KiB of TAG), f (flush) or r:OFFSET:TAG (4 KiB that
# must be TAG); prints "NAME done" at the end, or why it failed.
client () {
  /usr/bin/python3 - "$@" <<'EOF'
import sys, nbd
name, uri, ops = sys.argv[1], sys.argv[2], sys.argv[3:]
h = nbd.NBD()
h.connect_uri(uri)
for op in ops:
    kind, *arg = op.split(":")
    if kind == "w":
        h.pwrite(bytes([int(arg[1])]) * 4096, int(arg[0]))
    elif kind == "f":
        h.flush()
    else:
        got = h.pread(4096, int(arg[0]))
        if got != bytes([int(arg[1])]) * 4096:
            sys.exit("%s: offset %s holds %r..., not tag %s" %
                     (name, arg[0], got[:4], arg[1]))
print(name, "done")
EOF
}


zone=$((4 * 1024 * 1024))
start_server srv nr_devices=2 size=64 zone_size=4 zone_nr_conv=4 \
  backing_dir="$d" "$@"
u0="nbd+unix:///nullb0?socket=$sock"
u1="nbd+unix:///nullb1?socket=$sock"
client seed "$u0" w:0:7 f >"$tmpdir/seed.out" 2>&1 ||
  fail "seeding nullb0: $(cat "$tmpdir/seed.out")"

: >"$flag"
client flusher "$u0" "w:$zone:8" f >"$tmpdir/flusher.out" 2>&1 &
flusher=$!
await_file "$flag.fdatasync" "nullb0's flush"
client reader "$u0" r:0:7 >"$tmpdir/reader.out" 2>&1 &
reader=$!
await_file "$flag.preadv2" "nullb0's read"

# nullb1 goes on while nullb0's flush and read are held.
client other "$u1" w:0:9 f r:0:9 "w:$zone:10" r:0:9 >"$tmpdir/other.out" 2>&1 ||
  fail "nullb1: $(cat "$tmpdir/other.out")"
still_held "nullb1's requests" $flusher $reader

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
echo "test-server-offload: nullb1 answered beside nullb0's held flush and read; clean stop; writes kept"
