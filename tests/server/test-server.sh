#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# zonednull-server with real NBD clients: libnbd (nbdsh, nbdinfo,
# nbdcopy), qemu-img and qemu-io, the zonednull CLI, and every golden
# trace replayed over it.  Also its command line, a read-only server,
# hostile clients beside a well-behaved one, daemon mode and SIGTERM.
. "$(dirname "$0")/../common/lib.sh"

need_nbdsh

: "${ZONEDNULL_SERVER:=${ZONEDNULL_BUILDDIR:-.}/server/zonednull-server}"
[ -x "$ZONEDNULL_SERVER" ] || fail "no server at $ZONEDNULL_SERVER"
srv=$ZONEDNULL_SERVER
zn=${ZONEDNULL_CLI:-${ZONEDNULL_BUILDDIR:-.}/cli/zonednull}
replay=${ZONEDNULL_BUILDDIR:-.}/tests/replay
srcdir=${ZONEDNULL_SRCDIR:-$(dirname "$0")/../..}

# start_native NAME ARG...: the server in the foreground on
# $tmpdir/NAME.sock; sets $uri and $pid once it listens.
start_native () {
  name=$1
  shift
  sock=$tmpdir/$name.sock
  pidfile=$tmpdir/$name.pid
  rm -f "$pidfile"
  "$srv" -f -U "$sock" -P "$pidfile" "$@" </dev/null 2>"$tmpdir/$name.log" &
  pid=$!
  await_server "zonednull-server $*"
}

py () {
  /usr/bin/python3 - "$@" >"$tmpdir/py.out" 2>&1 ||
    fail "python check failed: $(cat "$tmpdir/py.out")"
}

# ---- command line ---------------------------------------------------------

"$srv" --help | grep -q '^Usage: zonednull-server' || fail "--help"
"$srv" -V | grep -q '^zonednull-server ' || fail "-V"
for bad in "bogus=1:unknown parameter 'bogus'" \
           "zone_size=3:zone_size" \
           "size=1x:size=1x" \
           "memory_backed=maybe:expected a boolean" \
           "zone_readonly=0 zone_nr_conv=1:conventional zone 0" \
           "size=17592186044416 zone_size=16777216:size: 17592186044416 MiB is too large" \
           "size=17592186044432:size: 17592186044432 MiB is too large" \
           "size=8796093022208:size: 8796093022208 MiB is too large" \
           "cache_size=17592186044416 memory_backed=1:cache_size: 17592186044416 MiB is too large" \
           "cache_size=17592186044417 memory_backed=1:cache_size: 17592186044417 MiB is too large" \
           "irqmode=2 completion_nsec=18446744073709551615:completion_nsec: 18446744073709551615 is more than 9223372036854775807" \
           "irqmode=2 completion_nsec=9223372036854775808:completion_nsec: 9223372036854775808 is more than" \
           "bs=256:bs: must be a power of 2" \
           "blocksize=256:blocksize: must be a power of 2" \
           "irqmode=3:irqmode" \
           "hw_queue_depth=0:hw_queue_depth" \
           "nr_devices=0:nr_devices=0" \
           "pipeline_wait_ms=0:pipeline_wait_ms=0: must be at least 1" \
           "kernel=6.15:kernel=6.15: must be 6.1, 6.12 or 7.3" \
           "zone_full=1:zone_full: null_blk of Linux 6.1 has no zone_full" \
           "fua=1:fua: null_blk of Linux 6.1 has no fua" \
           "zone_append_max_sectors=8:zone_append_max_sectors: null_blk of Linux 6.1" \
           "kernel=6.12 badblocks_once=1:badblocks_once: null_blk of Linux 6.12 has no" \
           "kernel=6.12 badblocks_partial_io=0:badblocks_partial_io: null_blk of Linux 6.12" \
           "kernel=7.3 max_sectors=4:max_sectors: 4 is less than a page" \
           "kernel=6.12 pipeline_zoned_writes=1:pipeline_zoned_writes: not with kernel=6.12"; do
  args=${bad%%:*} text=${bad#*:}
  # A server that wrongly starts serves until timeout stops it (124).
  # shellcheck disable=SC2086 # args is a list of KEY=VALUE words
  timeout 20 "$srv" -f -U "$tmpdir/bad.sock" $args 2>"$tmpdir/err"
  rc=$?
  if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then
    fail "zonednull-server $args started"
  fi
  grep -qF -- "$text" "$tmpdir/err" ||
    fail "zonednull-server $args: message lacks '$text': $(cat "$tmpdir/err")"
done
# The table of bad numeric values shared with the plugin
# (tests/common/bad-values.sh): the same message from both front ends.
bad_values () {
  text=$1
  shift
  timeout 20 "$srv" -f -U "$tmpdir/bad.sock" "$@" 2>"$tmpdir/err"
  rc=$?
  if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then
    fail "zonednull-server '$*' started"
  fi
  grep -qF -- "zonednull-server: $text" "$tmpdir/err" ||
    fail "zonednull-server '$*': message lacks '$text': $(cat "$tmpdir/err")"
}
bad_value () {
  bad_values "$2" "$1"
}
# shellcheck source=tests/common/bad-values.sh
. "$(dirname "$0")/../common/bad-values.sh"
# The kernel's bad block table holds 512 entries (issue 15).
# shellcheck disable=SC2046
timeout 20 "$srv" -f -U "$tmpdir/bad.sock" \
  $(i=0; while [ $i -lt 512 ]; do echo "badblocks=+$((3 * i))-$((3 * i))"; i=$((i + 1)); done) \
  badblocks=+3000-3000 2>"$tmpdir/err"
rc=$?
if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then
  fail "zonednull-server with 513 bad ranges started"
fi
grep -qF "badblocks=+3000-3000: the bad block table is full: as the kernel's, it holds 512 entries of at most 512 sectors, and the settings before this one take 512" \
  "$tmpdir/err" || fail "513 bad ranges: $(cat "$tmpdir/err")"
for bad in 5x -1 1000001 ''; do
  if "$srv" -f -U "$tmpdir/bad.sock" --busy-poll="$bad" 2>"$tmpdir/err"; then
    fail "zonednull-server --busy-poll='$bad' started"
  fi
  grep -qF -- "--busy-poll '$bad': must be a whole number of microseconds" "$tmpdir/err" ||
    fail "--busy-poll='$bad': $(cat "$tmpdir/err")"
done
for bad in 4x -1 257 ''; do
  if "$srv" -f -U "$tmpdir/bad.sock" --io-threads="$bad" 2>"$tmpdir/err"; then
    fail "zonednull-server --io-threads='$bad' started"
  fi
  grep -qF -- "--io-threads '$bad': must be a whole number from 0" "$tmpdir/err" ||
    fail "--io-threads='$bad': $(cat "$tmpdir/err")"
done
for bad in 0 65 2x -1 ''; do
  if "$srv" -f -U "$tmpdir/bad.sock" --threads="$bad" 2>"$tmpdir/err"; then
    fail "zonednull-server --threads='$bad' started"
  fi
  grep -qF -- "--threads '$bad': must be a whole number of event loops from 1 to 64" "$tmpdir/err" ||
    fail "--threads='$bad': $(cat "$tmpdir/err")"
done
for bad in 0 99999 12x; do
  # getaddrinfo alone would listen on 99999 mod 65536.
  if "$srv" -f -p "$bad" size=8 zone_size=1 2>"$tmpdir/err"; then
    fail "zonednull-server -p $bad started"
  fi
  grep -qF -- "-p '$bad': a port number must be from 1 to 65535" "$tmpdir/err" ||
    fail "-p $bad: $(cat "$tmpdir/err")"
done
# A pidfile that cannot be written stops the server, socket removed.
if "$srv" -f -U "$tmpdir/bad.sock" -P "$tmpdir/no/such/dir/pid" size=8 \
     zone_size=1 2>"$tmpdir/err"; then
  fail "zonednull-server started without its pidfile"
fi
grep -qF -- "-P $tmpdir/no/such/dir/pid: No such file or directory" "$tmpdir/err" ||
  fail "unwritable pidfile: $(cat "$tmpdir/err")"
[ ! -e "$tmpdir/bad.sock" ] || fail "a refused configuration left a socket"
# A server that always sleeps serves the same.
start_native nopoll --busy-poll=0 size=16 zone_size=2 memory_backed=1
nbdsh -u "$uri" -c 'h.pwrite(b"\x01" * 4096, 0); assert h.pread(4096, 0) == b"\x01" * 4096' ||
  fail "--busy-poll=0: write and read back"
stop_server "$pid"

# ---- the golden traces over the server -----------------------------------

# Header line 2 holds the configfs values; the queueing ones do not
# change results.  Line 1 names the kernel: the 6.12 and 7.3 traces run
# with kernel= (the server then has the zone write plug in front).
for trace in "$srcdir"/tests/traces/k*/*.trace; do
  config=$(sed -n '2s/^# null_blk configfs: //p' "$trace" |
           tr ' ' '\n' | grep -v -e '^irqmode=' -e '^completion_nsec=' \
                                 -e '^hw_queue_depth=' | tr '\n' ' ')
  kernel=$(sed -n '1s/^# kernel \([0-9]*\.[0-9]*\).*/\1/p' "$trace")
  [ "$kernel" = 6.1 ] || config="kernel=$kernel $config"
  # shellcheck disable=SC2086
  start_native trace $config
  "$replay" --connect="$uri" "$trace" >"$tmpdir/replay.out" 2>&1 ||
    fail "$(basename "$trace") over zonednull-server: $(cat "$tmpdir/replay.out")"
  grep -q "ops match on the NBD server" "$tmpdir/replay.out" || fail "no match line"
  stop_server "$pid"
done

# ---- one device for the client tests -------------------------------------

# 8 zones of 2 MiB with 1 MiB capacity, so that extents split at the
# capacity too; zone 0 conventional; at most 2 open zones.
# The largest size, 2^43 - 1 MiB, is 2^63 - 2^20 bytes (issue 15, B).
start_native huge size=8796093022207 zone_size=4398046511104
nbdinfo --size "$uri" | grep -qx 9223372036853727232 ||
  fail "size of the largest device: $(nbdinfo --size "$uri")"
kill "$pid" && wait "$pid"

start_native dev size=16 zone_size=2 zone_capacity=1 zone_nr_conv=1 \
  zone_max_open=2 memory_backed=1
dev_pid=$pid dev_uri=$uri dev_sock=$sock

nbdinfo --list "$uri" >"$tmpdir/list" || fail "nbdinfo --list"
grep -q 'export="nullb0":' "$tmpdir/list" || fail "no nullb0 export"
grep -q 'export="nullb0/control":' "$tmpdir/list" || fail "no control export"
grep -q 'zonednull:zones' "$tmpdir/list" || fail "zone context not listed"
grep -q 'can_multi_conn: true' "$tmpdir/list" || fail "no multi-conn flag"
grep -q 'block_size_minimum: 512' "$tmpdir/list" || fail "block size"
nbdinfo --size "$uri" | grep -qx 16777216 || fail "size"

# Writes at the write pointer, a write elsewhere refused with EIO, data
# back, trims as zone resets, and both metadata contexts.
py "$uri" <<'EOF'
import nbd, sys
uri = sys.argv[1]
Z = 2 << 20                     # zone size, bytes
C = 1 << 20                     # zone capacity
h = nbd.NBD()
h.add_meta_context("base:allocation")
h.add_meta_context("zonednull:zones")
h.connect_uri(uri)
assert h.can_meta_context("zonednull:zones")

h.pwrite(b"\x11" * 8192, Z)           # zone 1 at its write pointer
h.pwrite(b"\x22" * 4096, Z + 8192)
assert h.pread(12288, Z) == b"\x11" * 8192 + b"\x22" * 4096
try:
    h.pwrite(b"\x33" * 4096, Z + 65536)
    raise SystemExit("a write ahead of the write pointer succeeded")
except nbd.Error as e:
    assert e.errnum == 5, e          # EIO
h.pwrite(b"\x44" * 4096, 4096)        # the conventional zone: anywhere

# Reads of zeros come as one hole chunk, reads of data as one data chunk;
# past a write pointer null_blk reads 0xFF, which is data.
def chunks(n, off, flags=0):
    seen = []
    def chunk(buf, offset, status, err):
        seen.append((status, offset, len(buf)))
        return 0
    data = h.pread_structured(n, off, chunk, flags)
    return seen, data
assert chunks(4096, 8192) == ([(nbd.READ_HOLE, 8192, 4096)], bytes(4096))
assert chunks(4096, 4096) == ([(nbd.READ_DATA, 4096, 4096)], b"\x44" * 4096)
assert chunks(8192, 0) == ([(nbd.READ_DATA, 0, 8192)],
                           bytes(4096) + b"\x44" * 4096)
assert chunks(4096, Z + 12288) == ([(nbd.READ_DATA, Z + 12288, 4096)],
                                   b"\xff" * 4096)

got = {}
def cb(metacontext, offset, entries, err):
    got[metacontext] = list(entries)
h.block_status(Z, Z, cb)              # zone 1 only
alloc = got["base:allocation"]
assert alloc[:4] == [12288, 0, Z - 12288, 1], alloc
zones = got["zonednull:zones"]
# written | unwritten below capacity | beyond capacity; cond 2 (IMP_OPEN),
# type 2.
assert zones == [12288, 0x22, C - 12288, 0x122, Z - C, 0x222], zones

# REQ_ONE: a single extent.
got.clear()
h.block_status(Z, Z, cb, flags=nbd.CMD_FLAG_REQ_ONE)
assert len(got["base:allocation"]) == 2, got

# Trim: whole zones reset, anything else refused.
try:
    h.trim(4096, Z)
    raise SystemExit("a misaligned trim succeeded")
except nbd.Error as e:
    assert e.errnum == 22, e
try:
    h.trim(Z, 0)
    raise SystemExit("a trim of the conventional zone succeeded")
except nbd.Error as e:
    assert e.errnum == 22, e
h.trim(Z, Z)
got.clear()
h.block_status(Z, Z, cb)
assert got["zonednull:zones"][:2] == [C, 0x121], got

# Past the end, unaligned, too large.
for off, n in ((16 << 20, 512), (100, 512), (0, 100)):
    try:
        h.pread(n, off)
        raise SystemExit("read %d at %d succeeded" % (n, off))
    except nbd.Error as e:
        assert e.errnum == 22, e
h.flush()
h.shutdown()
EOF

# The CLI works unchanged against this server.
"$zn" open -o 8192 -c 1 "$uri" || fail "CLI open"
"$zn" report -o 8192 -c 1 "$uri" >"$tmpdir/out" || fail "CLI report"
grep -q 'zcond: 3(oe)' "$tmpdir/out" || fail "CLI report: $(cat "$tmpdir/out")"
"$zn" finish -o 8192 -c 1 "$uri" || fail "CLI finish"
"$zn" reset "$uri" || fail "CLI reset-all"
"$zn" open -o 8192 -c 1 "$uri" && "$zn" open -o 12288 -c 1 "$uri" ||
  fail "CLI open two zones"
"$zn" open -o 16384 -c 1 "$uri" 2>"$tmpdir/err" && fail "third open allowed"
grep -q ETOOMANYREFS "$tmpdir/err" || fail "open limit: $(cat "$tmpdir/err")"
"$zn" reset "$uri" || fail "CLI reset-all"

# nbdcopy reads the whole device; qemu-io writes at a write pointer and
# qemu-img sees the size.
nbdcopy "$uri" "$tmpdir/copy.img" || fail "nbdcopy"
[ "$(stat -c %s "$tmpdir/copy.img")" -eq 16777216 ] || fail "nbdcopy size"
if command -v qemu-io >/dev/null; then
  qemu-img info -f raw "$uri" | grep -q 'virtual size: 16 MiB' ||
    fail "qemu-img info: $(qemu-img info -f raw "$uri")"
  qemu-io -f raw -c 'write -P 0x5a 4194304 64k' "$uri" >"$tmpdir/out" 2>&1 ||
    fail "qemu-io write: $(cat "$tmpdir/out")"
  qemu-io -f raw -c 'read -P 0x5a 4194304 64k' "$uri" >"$tmpdir/out" 2>&1 ||
    fail "qemu-io read: $(cat "$tmpdir/out")"
  grep -q 'read 65536/65536' "$tmpdir/out" || fail "qemu-io read: $(cat "$tmpdir/out")"
  if qemu-io -f raw -c 'write 4194304 4k' "$uri" >"$tmpdir/out" 2>&1 &&
     ! grep -qi error "$tmpdir/out"; then
    fail "qemu-io wrote behind the write pointer: $(cat "$tmpdir/out")"
  fi
fi

# ---- hostile clients beside a well-behaved one --------------------------

"$zn" reset "$uri" || fail "CLI reset-all"

# 40 clients each send a different kind of damage: random bytes, a valid
# handshake then a truncated request, oversized options and requests, bad
# magics, large reads whose replies they never read (then NBD_CMD_DISC, or
# the end of their input); each disconnects mid-stream.  Meanwhile one client keeps
# writing zone 2 sequentially and reads it back.
py "$dev_sock" "$uri" <<'EOF'
import nbd, os, random, socket, struct, sys, threading
path, uri = sys.argv[1], sys.argv[2]
rng = random.Random(7)

def hostile(i):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.settimeout(5)
    try:
        s.recv(18)
        kind = i % 10
        opt = lambda o, d: struct.pack(">QII", 0x49484156454F5054, o, len(d)) + d
        go = opt(7, struct.pack(">I", 0) + struct.pack(">H", 0))
        if kind == 0:
            s.sendall(rng.randbytes(rng.randrange(1, 4000)))
        elif kind == 1:
            s.sendall(struct.pack(">I", 3) + go)
            s.sendall(struct.pack(">IHHQQI", 0x25609513, 0, 1, 1, 0, 1 << 20)
                      + b"x" * 1000)          # write cut short
        elif kind == 2:
            s.sendall(struct.pack(">I", 3) + struct.pack(">QII", 0x49484156454F5054, 7, 1 << 30))
        elif kind == 3:
            s.sendall(struct.pack(">I", 3) + go)
            s.sendall(struct.pack(">IHHQQI", 0x25609513, 0, 1, 1, 0, 0xFFFFFFFF))
        elif kind == 4:
            s.sendall(struct.pack(">I", 3) + go)
            s.sendall(struct.pack(">IHHQQI", 0x25609513, 0xFFFF, 0, 1,
                                  0xFFFFFFFFFFFFFF00, 0x1000))
            s.sendall(struct.pack(">IHHQQI", 0xdeadbeef, 0, 0, 2, 0, 512))
        elif kind == 5:
            # meta context query with lengths that lie
            s.sendall(struct.pack(">I", 3) + opt(8, b""))
            s.sendall(opt(10, struct.pack(">I", 0) + struct.pack(">I", 5)
                          + struct.pack(">I", 0xFFFFFFF0) + b"base:"))
            s.sendall(opt(6, struct.pack(">I", 0xFFFFFFFF) + b"abc"))
        elif kind == 6:
            s.sendall(struct.pack(">I", 0xFFFFFFFF))
        elif kind == 8:
            # Large reads never read, then NBD_CMD_DISC and gone.
            s.sendall(struct.pack(">I", 3) + go)
            s.sendall(b"".join(struct.pack(">IHHQQI", 0x25609513, 0, 0, n, 0,
                                           4 << 20) for n in range(50))
                      + struct.pack(">IHHQQI", 0x25609513, 0, 2, 0, 0, 0))
        elif kind == 9:
            # Reads, then the end of its input without NBD_CMD_DISC.
            s.sendall(struct.pack(">I", 3) + go)
            s.sendall(b"".join(struct.pack(">IHHQQI", 0x25609513, 0, 0, n, 0,
                                           1 << 20) for n in range(20)))
            s.shutdown(socket.SHUT_WR)
        else:
            s.sendall(struct.pack(">I", 3) + go)
            for n in range(200):
                s.sendall(struct.pack(">IHHQQI", 0x25609513, 0, 7, n,
                                      rng.randrange(0, 1 << 25), rng.randrange(0, 1 << 25)))
            s.sendall(struct.pack(">IHHQQI", 0x25609513, 0, 0, 9, 0, 4096)[:17])
    except OSError:
        pass
    s.close()

def good(result):
    h = nbd.NBD()
    h.connect_uri(uri)
    Z = 2 << 20
    base = 2 * Z
    for k in range(64):
        h.pwrite(bytes([k]) * 8192, base + k * 8192)
    for k in range(64):
        assert h.pread(8192, base + k * 8192) == bytes([k]) * 8192
    h.shutdown()
    result.append("ok")

result = []
t = threading.Thread(target=good, args=(result,))
t.start()
hs = [threading.Thread(target=hostile, args=(i,)) for i in range(40)]
for x in hs: x.start()
for x in hs: x.join()
t.join()
assert result == ["ok"], result
# And the server still answers a new client.
h = nbd.NBD()
h.connect_uri(uri)
assert h.pread(8192, 2 * (2 << 20)) == b"\0" * 8192
EOF
kill -0 "$dev_pid" || fail "the server died under hostile clients"

# A client that floods the control channel with bad ranges (issue 15):
# the table stops at the kernel's 512 entries with ENOSPC, and the data
# path beside it keeps working.  The ranges lie past the end, which
# configfs accepts too.
py "$uri" <<'EOF'
import nbd, struct, sys, threading
uri = sys.argv[1]
cmd = lambda op, sector, n: struct.pack(">IIQQQ", 0x5a4e434d, op, sector, n, 0)
base = 1 << 40

def good(result):
    h = nbd.NBD()
    h.connect_uri(uri)
    for k in range(32):
        h.pwrite(bytes([k]) * 4096, 3 * (2 << 20) + k * 4096)
    for k in range(32):
        assert h.pread(4096, 3 * (2 << 20) + k * 4096) == bytes([k]) * 4096
    result.append("ok")

result = []
t = threading.Thread(target=good, args=(result,))
t.start()
c = nbd.NBD()
c.connect_uri(uri.replace("/?", "/nullb0/control?", 1))
errs = []
for i in range(2000):
    c.pwrite(cmd(8, base + 2 * i, 1), 0)
    errs.append(struct.unpack(">I", c.pread(4, 100))[0])
t.join()
assert result == ["ok"], result
assert errs[:512] == [0] * 512, errs[:520]
assert errs[512:] == [28] * (2000 - 512), errs[510:520]    # ENOSPC
assert struct.unpack(">I", c.pread(4, 232))[0] == 512
c.pwrite(cmd(9, base, 4000), 0)
assert struct.unpack(">I", c.pread(4, 100))[0] == 0
assert struct.unpack(">I", c.pread(4, 232))[0] == 0
EOF
kill -0 "$dev_pid" || fail "the server died under a flood of bad ranges"

# ---- SIGTERM: clean exit, socket and pidfile removed ---------------------

kill "$dev_pid"
wait "$dev_pid"
rc=$?
[ "$rc" -eq 0 ] || fail "exit status $rc after SIGTERM"
server_pids=
[ ! -e "$dev_sock" ] || fail "socket left behind"
[ ! -e "$tmpdir/dev.pid" ] || fail "pidfile left behind"
# A hangup (the terminal closed) or SIGQUIT stops it the same way.
for sig in HUP QUIT; do
  start_native "sig$sig" size=8 zone_size=1
  kill -s "$sig" "$pid"
  wait "$pid"
  rc=$?
  [ "$rc" -eq 0 ] || fail "exit status $rc after SIG$sig"
  server_pids=
  [ ! -e "$sock" ] && [ ! -e "$pidfile" ] || fail "files left after SIG$sig"
done

# ---- read-only ---------------------------------------------------------------

start_native ro -r size=8 zone_size=1
py "$uri" <<'EOF'
import nbd, sys
h = nbd.NBD()
# No client-side checks: the server itself must refuse.
h.set_strict_mode(0)
h.connect_uri(sys.argv[1])
assert h.is_read_only() and not h.can_trim()
for f in (lambda: h.pwrite(b"\0" * 4096, 0), lambda: h.trim(1 << 20, 0)):
    try:
        f()
        raise SystemExit("a read-only server accepted a change")
    except nbd.Error as e:
        assert e.errnum == 1, e      # EPERM
EOF
"$zn" reset "$uri" 2>"$tmpdir/err" && fail "reset on a read-only server"
grep -q EPERM "$tmpdir/err" || fail "read-only reset: $(cat "$tmpdir/err")"
stop_server "$pid"

# ---- out of file descriptors ------------------------------------------------

# With 40 descriptors, 60 clients that connect and stay use them up: the
# server says so once and pauses accepting (it used to spin on EMFILE),
# then serves again once they leave.
name=fdlimit sock=$tmpdir/fdlimit.sock pidfile=$tmpdir/fdlimit.pid
rm -f "$pidfile"
(ulimit -n 40 && exec "$srv" -f -U "$sock" -P "$pidfile" size=8 zone_size=1) \
  </dev/null 2>"$tmpdir/fdlimit.log" &
pid=$!
await_server "zonednull-server with 40 descriptors"
py "$sock" "$uri" "$tmpdir/fdlimit.log" <<'EOF'
import nbd, socket, sys, time
path, uri, log = sys.argv[1:]
held = []
for _ in range(60):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    held.append(s)
for _ in range(600):
    if "Too many open files" in open(log).read():
        break
    time.sleep(0.1)
else:
    raise SystemExit("no message about the descriptor limit: " + open(log).read())
for s in held:
    s.close()
h = nbd.NBD()
h.connect_uri(uri)
assert h.pread(4096, 0) == b"\0" * 4096
EOF
# Once per episode: a second one may come while the server closes the
# connections of the clients that left; retrying every 100 ms would say
# it dozens of times.
n=$(grep -c 'accept: Too many open files' "$tmpdir/fdlimit.log")
[ "$n" -ge 1 ] && [ "$n" -le 3 ] ||
  fail "descriptor limit, said $n times: $(cat "$tmpdir/fdlimit.log")"
stop_server "$pid"

# ---- devices, tags and timed completion -------------------------------------

# Two devices behind one pool of 2 tags (host tags, one bitmap for the
# two hardware queues), each request held 20 ms.  Two connections to
# nullb1 send 8 reads each at once: every request completes, at most 2 at
# a time, so the 16 take at least 8 rounds of 20 ms; both queues and only
# nullb1 count them.
start_native tags size=64 zone_size=4 nr_devices=2 irqmode=2 \
  completion_nsec=20000000 hw_queue_depth=2 submit_queues=2 host_tags=1 \
  shared_tag_bitmap=1
nbdinfo --list "$uri" >"$tmpdir/list" || fail "nbdinfo --list"
for e in nullb0 nullb0/control nullb1 nullb1/control; do
  grep -qx "export=\"$e\":" "$tmpdir/list" || fail "export $e not listed"
done
uri1="nbd+unix:///nullb1?socket=$sock"
py "$uri1" <<'PY'
import nbd, sys, time
hs = [nbd.NBD() for _ in range(2)]
for h in hs:
    h.connect_uri(sys.argv[1])
start = time.monotonic()
cmds = [(h, h.aio_pread(nbd.Buffer(4096), 4096 * i))
        for i in range(8) for h in hs]
for h, c in cmds:
    while not h.aio_command_completed(c):
        h.poll(-1)
took = time.monotonic() - start
assert took >= 8 * 0.020, "16 requests on 2 tags of 20 ms took %.3f s" % took
# A client that leaves with requests in flight.
h = nbd.NBD()
h.connect_uri(sys.argv[1])
for i in range(4):
    h.aio_pread(nbd.Buffer(4096), 0)
h.shutdown()
PY
"$zn" info --json "$uri1" >"$tmpdir/info1.json" || fail "info nullb1"
"$zn" info --json "nbd+unix:///nullb0?socket=$sock" >"$tmpdir/info0.json" ||
  fail "info nullb0"
py "$tmpdir/info1.json" "$tmpdir/info0.json" <<'PY'
import json, sys
i, i0 = (json.load(open(f)) for f in sys.argv[1:])
t, q = i["tags"], i["queues"]
assert i["device_index"] == 1 and i["nr_devices"] == 2, i
assert i["tag_pools"] == 1 and i["shared_tags"] and i["shared_tag_bitmap"], i
assert len(q) == 2 and all(x["completed"] >= 8 for x in q), q
assert t["completed"] == sum(x["completed"] for x in q), i
assert t["peak"] == 2 and t["waited"] > 0, t
assert i0["tags"]["completed"] == 0, i0["tags"]
PY
# The departed client's 4 requests all complete, the 2 that waited for a
# tag too: libnbd sent NBD_CMD_DISC after them, and the server handles
# every outstanding request before it closes (issue 15).
tries=0
until "$zn" info --json "$uri1" >"$tmpdir/info1.json" &&
      /usr/bin/python3 -c 'import json, sys; t = json.load(open(sys.argv[1]))["tags"]; sys.exit(not (t["in_use"] == 0 and t["completed"] == 20))' "$tmpdir/info1.json"; do
  tries=$((tries + 1))
  [ "$tries" -le 100 ] || fail "tags not returned: $(cat "$tmpdir/info1.json")"
  sleep 0.1
done
stop_server "$pid"

# Without the shared bitmap each hardware queue has its own 2 tags.
start_native pools size=8 zone_size=1 irqmode=2 completion_nsec=5000000 \
  hw_queue_depth=2 submit_queues=2
py "$uri" <<'PY'
import nbd, sys
hs = [nbd.NBD() for _ in range(2)]
for h in hs:
    h.connect_uri(sys.argv[1])
cmds = [(h, h.aio_pread(nbd.Buffer(512), 0)) for _ in range(6) for h in hs]
for h, c in cmds:
    while not h.aio_command_completed(c):
        h.poll(-1)
PY
"$zn" info --json "$uri" >"$tmpdir/pools.json" || fail "info pools"
py "$tmpdir/pools.json" <<'PY'
import json, sys
i = json.load(open(sys.argv[1]))
assert i["tag_pools"] == 2 and not i["shared_tag_bitmap"], i
assert [x["completed"] for x in i["queues"]] == [6, 6], i["queues"]
assert all(x["peak"] == 2 for x in i["queues"]), i["queues"]
assert i["tags"]["peak"] >= 3, i["tags"]
PY
stop_server "$pid"

# Many devices: one connection can ask about all 1200 exports (nbdinfo
# --list sends two options per export).
start_native many size=16 zone_size=4 nr_devices=600
nbdinfo --list "$uri" >"$tmpdir/list" || fail "nbdinfo --list of 600 devices"
[ "$(grep -c '^export=' "$tmpdir/list")" = 1200 ] ||
  fail "nbdinfo --list of 600 devices: $(grep -c '^export=' "$tmpdir/list") exports"
stop_server "$pid"

# A client that never stops negotiating is refused, with a reason, after
# 1024 options plus 8 per export; the server carries on.
start_native options size=8 zone_size=1
py "$uri" <<'PY'
import nbd, sys
h = nbd.NBD()
h.set_opt_mode(True)
h.connect_uri(sys.argv[1])
n = 0
try:
    while n < 2000:
        h.opt_list(lambda name, desc: 0)
        n += 1
except nbd.Error as e:
    err = str(e)
else:
    raise AssertionError("2000 NBD_OPT_LIST accepted")
assert 1000 <= n <= 1040, (n, err)
h = nbd.NBD()
h.connect_uri(sys.argv[1])
assert h.get_size() == 8 << 20
PY
stop_server "$pid"

# mbps=1: 1 MiB of reads takes about a second, whatever the depth.
start_native mbps size=8 zone_size=1 mbps=1
py "$uri" <<'PY'
import nbd, sys, time
h = nbd.NBD()
h.connect_uri(sys.argv[1])
start = time.monotonic()
cmds = [h.aio_pread(nbd.Buffer(65536), 65536 * i) for i in range(16)]
for c in cmds:
    while not h.aio_command_completed(c):
        h.poll(-1)
took = time.monotonic() - start
assert took >= 0.8, "1 MiB at mbps=1 took %.3f s" % took
PY
"$zn" info --json "$uri" | grep -q '"mbps": 1,' || fail "info lacks mbps 1"
stop_server "$pid"

# ---- daemon mode over TCP ---------------------------------------------------

port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$srv" -p "$port" -P "$tmpdir/daemon.pid" size=8 zone_size=1 ||
  fail "daemon did not start"
tries=0
while [ ! -s "$tmpdir/daemon.pid" ]; do
  tries=$((tries + 1))
  [ "$tries" -le 100 ] || fail "daemon wrote no pidfile"
  sleep 0.1
done
dpid=$(cat "$tmpdir/daemon.pid")
nbdinfo --size "nbd://127.0.0.1:$port" | grep -qx 8388608 ||
  { kill "$dpid"; fail "daemon does not serve on 127.0.0.1:$port"; }
kill "$dpid"
tries=0
while kill -0 "$dpid" 2>/dev/null; do
  tries=$((tries + 1))
  [ "$tries" -le 100 ] || { kill -9 "$dpid"; fail "daemon ignored SIGTERM"; }
  sleep 0.1
done

# -P writes through no link: one planted at the pidfile's temporary name
# stops the server before it serves, naming -P, and what it points at is
# left as it was.
echo keep >"$tmpdir/victim"
ln -s "$tmpdir/victim" "$tmpdir/linked.pid.tmp"
if timeout 60 "$srv" -f -U "$tmpdir/linked.sock" -P "$tmpdir/linked.pid" size=8 zone_size=1 \
    </dev/null 2>"$tmpdir/linked.log"; then
  fail "-P through a link at its temporary name was accepted"
fi
grep -q -- "-P $tmpdir/linked.pid: Too many levels of symbolic links" "$tmpdir/linked.log" ||
  { cat "$tmpdir/linked.log" >&2; fail "-P through a link: no message naming -P"; }
[ "$(cat "$tmpdir/victim")" = keep ] || fail "-P wrote through the link"
exit 0
