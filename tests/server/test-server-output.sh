#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# zonednull-server's output budget (issue 15): 100 clients that send
# reads of 32 MiB and never read a reply hold no more of the server's
# memory than zonednull-server(8) says (256 MiB of replies for all
# connections together, plus 1 MiB per connection), and a well-behaved
# client beside them is served; then 100 clients that read 3 MiB once and
# stay idle leave no more than 64 MiB of kept buffers past 1 MiB each;
# then 8 clients that keep their queues full and read steadily stay in
# the first bound too, and so do 4 clients whose writes wait, parked,
# ahead of their zones' write pointers.  The pass criterion is memory
# (VmHWM and VmRSS of the server), never speed.
. "$(dirname "$0")/../common/lib.sh"

need_nbdsh
: "${ZONEDNULL_SERVER:=${ZONEDNULL_BUILDDIR:-.}/server/zonednull-server}"
[ -x "$ZONEDNULL_SERVER" ] || fail "no server at $ZONEDNULL_SERVER"
zn=${ZONEDNULL_CLI:-${ZONEDNULL_BUILDDIR:-.}/cli/zonednull}
# Under valgrind or the sanitizers memory is not the server's own.
[ -z "${ZONEDNULL_PRELOAD:-}" ] || skip "RSS is measured in the plain build"

# 100 clients, the good one, the CLI and the server's own descriptors.
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt 256 ]; then
  ulimit -n 256 2>/dev/null || skip "cannot raise the descriptor limit to 256"
fi

# What the three cases' scripts share, beside tests/common/nbd-raw.py.
cat >"$tmpdir/budget.py" <<'PY'
MiB = 1 << 20

def status(pid, field):
    for line in open("/proc/%s/status" % pid):
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise SystemExit("no %s for %s" % (field, pid))

def bound(base, n):
    """What zonednull-server(8) allows n clients (256 MiB of replies for
    all, 1 MiB per connection, two more connections) on top of the
    server's size base, with room for the input buffers and the
    allocator (64 MiB)."""
    return base + 256 * MiB + (n + 2) * (MiB + 4096) + 64 * MiB
PY
cp "$(dirname "$0")/../common/nbd-raw.py" "$tmpdir/raw.py"
export PYTHONPATH="$tmpdir"

ZONEDNULL_TARGET=server
start_server out size=64 zone_size=4 memory_backed=1
/usr/bin/python3 - "$sock" "$uri" "$pid" "$zn" >"$tmpdir/py.out" 2>&1 <<'PY' ||
import json, socket, struct, subprocess, sys, threading, time
import nbd
import raw
from budget import MiB, bound, status

path, uri, pid, zn = sys.argv[1:]
N = 100

# The old server held 64 MiB per such client.
base = status(pid, "VmRSS")
bound = bound(base, N)

def completed():
    out = subprocess.run([zn, "info", "--json", uri], check=True,
                         capture_output=True).stdout
    return json.loads(out)["tags"]["completed"]

# Fixed newstyle, no zeroes, NBD_OPT_GO to the default export without
# structured replies (so each read's reply carries its 32 MiB), then 64
# reads; nothing is ever read back, not even the handshake's replies.
hello = struct.pack(">I", 3) + struct.pack(">QII", raw.IHAVEOPT, 7, 6) \
        + struct.pack(">IH", 0, 0)
reads = b"".join(raw.request(0, k, 0, 32 * MiB) for k in range(64))
hostile = []
for i in range(N):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.sendall(hello + reads)
    hostile.append(s)
    if status(pid, "VmRSS") > bound:
        raise SystemExit("after %d clients the server holds %d MiB, more "
                         "than the %d MiB allowed" % (i + 1, status(pid, "VmRSS")
                                                      >> 20, bound >> 20))

# Wait until the server has taken what it will of their requests.
last, same = -1, 0
while same < 10:
    n = completed()
    same = same + 1 if n == last else 0
    last = n
    time.sleep(0.2)
# Enough reads were taken to fill the total, not one per request sent.
assert 4 <= last < N * 64, "hostile reads taken: %d" % last

# A well-behaved client is served: writes at zone 1's write pointer,
# reads of them back, up to 1 MiB at a time.
result = []
def good():
    h = nbd.NBD()
    h.connect_uri(uri)
    for k in range(16):
        h.pwrite(bytes([k + 1]) * (64 << 10), 4 * MiB + k * (64 << 10))
    for k in range(16):
        assert h.pread(64 << 10, 4 * MiB + k * (64 << 10)) == bytes([k + 1]) * (64 << 10)
    assert h.pread(MiB, 4 * MiB) == b"".join(bytes([k + 1]) * (64 << 10)
                                            for k in range(16))
    h.shutdown()
    result.append("ok")
t = threading.Thread(target=good, daemon=True)
t.start()
t.join(300)
assert result == ["ok"], "the well-behaved client was not served"

hwm = status(pid, "VmHWM")
print("base %d MiB, peak %d MiB, bound %d MiB, hostile reads taken %d"
      % (base >> 20, hwm >> 20, bound >> 20, last))
assert hwm <= bound, "peak %d MiB over the bound of %d MiB" % (hwm >> 20, bound >> 20)
for s in hostile:
    s.close()
# Their output gone, the server serves a new client at once.
h = nbd.NBD()
h.connect_uri(uri)
assert h.pread(4096, 4 * MiB) == b"\x01" * 4096
h.shutdown()
PY
  fail "$(cat "$tmpdir/py.out")"
cat "$tmpdir/py.out"
stop_server "$pid"

# Buffers kept between bursts are bounded too: 100 clients that each read
# 3 MiB once and stay connected leave the server keeping no more than
# 64 MiB of buffers past 1 MiB each (NET_OUTPUT_KEEP_ALWAYS and
# NET_OUTPUT_KEPT_MAX, net/conn.h); each kept its 4 MiB buffer before.
start_server kept size=64 zone_size=4 zone_nr_conv=8 memory_backed=1
/usr/bin/python3 - "$pid" "$uri" >"$tmpdir/kept.out" 2>&1 <<'PY' ||
import sys
import nbd
from budget import MiB, status

pid, uri = sys.argv[1:]
N = 100

def rss():
    return status(pid, "VmRSS")

# Data of its own in every block read, so that the device's memory is
# in the base.
h = nbd.NBD()
h.connect_uri(uri)
for off in range(0, 32 * MiB, MiB):
    h.pwrite(bytes([off >> 20 | 1]) * MiB, off)
assert h.pread(3 * MiB, 0)[:1] == b"\x01"
h.shutdown()
base = rss()
idle = []
for i in range(N):
    c = nbd.NBD()
    c.connect_uri(uri)
    assert len(c.pread(3 * MiB, (i % 8) * 4 * MiB)) == 3 * MiB
    idle.append(c)
grown = rss() - base
# 64 MiB kept past the first MiB of each, 1 MiB each, and 64 MiB of
# slack for the allocator and the connections' input buffers.
bound = 64 * MiB + N * MiB + 64 * MiB
print("%d idle clients after a 3 MiB read each: the server grew by %d MiB "
      "(bound %d MiB)" % (N, grown >> 20, bound >> 20))
assert grown <= bound, "grew by %d MiB, over %d MiB" % (grown >> 20, bound >> 20)
for c in idle:
    c.shutdown()
PY
  fail "$(cat "$tmpdir/kept.out")"
cat "$tmpdir/kept.out"
stop_server "$pid"

# What a connection has sent but not yet reclaimed from its buffer counts
# too: 8 clients that keep 64 reads of 1 MiB outstanding and read their
# replies as they come keep their queues full (32 MiB each), and the
# server's peak stays within the same bound as for clients that never
# read.  Each such connection touched 64 MiB of buffer before: 32 MiB of
# replies waiting behind up to 33 MiB already sent.
start_server steady size=64 zone_size=4 memory_backed=1
/usr/bin/python3 - "$sock" "$pid" >"$tmpdir/steady.out" 2>&1 <<'PY' ||
import struct, sys, threading
import raw
from budget import MiB, bound, status

path, pid = sys.argv[1:]
N, DEPTH, REPLIES = 8, 64, 192
REPLY = 16 + MiB

base = status(pid, "VmRSS")
bound = bound(base, N)

def reads(first, n):
    return b"".join(raw.request(0, k, (k % 32) * MiB, MiB)
                    for k in range(first, first + n))

errors = []
def client():
    try:
        s = raw.connect(path)
        sent = DEPTH
        s.sendall(reads(0, DEPTH))
        head = raw.recv_exact(s, 16)
        assert head[:8] == struct.pack(">II", 0x67446698, 0), "bad first reply"
        buf = bytearray(4 * MiB)
        received = 16
        while received < REPLIES * REPLY:
            n = s.recv_into(buf)
            if n == 0:
                raise SystemExit("the server closed a steady reader")
            received += n
            done = received // REPLY
            more = min(done + DEPTH, REPLIES) - sent
            if more > 0:
                s.sendall(reads(sent, more))
                sent += more
        s.close()
    except BaseException as e:
        errors.append(repr(e))

threads = [threading.Thread(target=client, daemon=True) for _ in range(N)]
for t in threads:
    t.start()
for t in threads:
    t.join(300)
assert not errors, "steady readers failed: %s" % errors
assert not any(t.is_alive() for t in threads), "a steady reader hung"
hwm = status(pid, "VmHWM")
print("%d steady readers of %d MiB each: base %d MiB, peak %d MiB, bound %d MiB"
      % (N, REPLIES, base >> 20, hwm >> 20, bound >> 20))
assert hwm <= bound, "peak %d MiB over the bound of %d MiB" % (hwm >> 20, bound >> 20)
PY
  fail "$(cat "$tmpdir/steady.out")"
cat "$tmpdir/steady.out"
stop_server "$pid"

# The copies of writes parked for their write pointer count too
# (pipeline_zoned_writes=1): 4 clients each send 8 writes of 32 MiB
# ahead of their zone's write pointer, never the one at it, so none can
# go on; the server stops reading a client once its parked writes reach
# its share, and its peak stays within the same bound.  Each parked write
# kept its 32 MiB uncounted before: 1 GiB for these 4.
start_server parked size=4096 zone_size=1024 memory_backed=0 \
  pipeline_zoned_writes=1 pipeline_wait_ms=600000
/usr/bin/python3 - "$sock" "$pid" >"$tmpdir/parked.out" 2>&1 <<'PY' ||
import sys, time
import raw
from budget import MiB, bound, status

path, pid = sys.argv[1:]
N, WRITES, SIZE = 4, 8, 32 * MiB
ZONE = 1024 * MiB

base = status(pid, "VmRSS")
bound = bound(base, N)
data = memoryview(b"\xa5" * SIZE)

class Client:
    def __init__(self, i):
        self.s = raw.connect(path)
        self.s.setblocking(False)
        self.pieces = []
        for k in range(WRITES):
            off = i * ZONE + (k + 1) * SIZE
            self.pieces += [memoryview(raw.request(1, k, off, SIZE)), data]

    def send(self):
        """Sends what the server reads of the writes; the bytes sent."""
        if not self.pieces:
            return 0
        try:
            n = self.s.send(self.pieces[0][:4 * MiB])
        except BlockingIOError:
            return 0
        self.pieces[0] = self.pieces[0][n:]
        if not self.pieces[0]:
            self.pieces.pop(0)
        return n

    def left(self):
        return sum(len(p) for p in self.pieces)

clients = [Client(i) for i in range(N)]
# Send what the server reads, until it reads no more for 2 s.
idle = 0
while idle < 20:
    moved = sum(c.send() for c in clients)
    idle = 0 if moved else idle + 1
    if not moved:
        time.sleep(0.1)
hwm = status(pid, "VmHWM")
left = sum(c.left() for c in clients)
print("%d clients with %d writes of %d MiB parked ahead of the write "
      "pointer: base %d MiB, peak %d MiB, bound %d MiB, %d MiB not read"
      % (N, WRITES, SIZE >> 20, base >> 20, hwm >> 20, bound >> 20, left >> 20))
assert hwm <= bound, "peak %d MiB over the bound of %d MiB" % (hwm >> 20, bound >> 20)
assert left > 0, "the server read every parked write"
for c in clients:
    c.s.close()
PY
  fail "$(cat "$tmpdir/parked.out")"
cat "$tmpdir/parked.out"
stop_server "$pid"
