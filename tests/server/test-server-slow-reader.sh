#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A client that reads its replies slowly while it keeps sending reads gets
# every reply whole: zonednull-server sends part of its
# queued output, queues more behind it, and reuses the room of what was
# sent (proto/nbd/session.c, struct outbuf).  Each 8-byte word of the
# device holds its own offset, so a reply shifted, cut or repeated shows.
. "$(dirname "$0")/../common/lib.sh"

need_nbdsh
: "${ZONEDNULL_SERVER:=${ZONEDNULL_BUILDDIR:-.}/server/zonednull-server}"
[ -x "$ZONEDNULL_SERVER" ] || fail "no server at $ZONEDNULL_SERVER"

ZONEDNULL_TARGET=server
start_server slow size=64 zone_size=4 zone_nr_conv=8 memory_backed=1
cp "$(dirname "$0")/../common/nbd-raw.py" "$tmpdir/raw.py"
/usr/bin/python3 - "$sock" "$uri" "$tmpdir" >"$tmpdir/py.out" 2>&1 <<'PY' ||
import array, random, struct, sys, threading
import nbd

path, uri, tmpdir = sys.argv[1:]
sys.path.insert(0, tmpdir)
from raw import connect, recv_exact, request
KiB, MiB = 1 << 10, 1 << 20
SPAN = 32 * MiB                 # the 8 conventional zones

def words(start, length):
    a = array.array("Q", range(start, start + length, 8))
    if sys.byteorder == "little":
        a.byteswap()
    return a.tobytes()

h = nbd.NBD()
h.connect_uri(uri)
for off in range(0, SPAN, MiB):
    h.pwrite(words(off, MiB), off)
h.shutdown()

s = connect(path)
# Small reads keep the server's output queue long, its sends partial.
PIECE = 3 * KiB + 17

rng = random.Random(45)
reads = [(rng.randrange(0, SPAN // 4096) * 4096,
          rng.choice((4 * KiB, 60 * KiB, 256 * KiB, 1 * MiB)))
         for _ in range(600)]
reads = [(off, min(length, SPAN - off)) for off, length in reads]

def sender():
    # Requests keep coming while earlier replies are half sent.
    for k, (off, length) in enumerate(reads):
        s.sendall(request(0, k, off, length))

t = threading.Thread(target=sender, daemon=True)
t.start()
pending = set(range(len(reads)))
for n in range(len(reads)):
    magic, err, k = struct.unpack(">IIQ", recv_exact(s, 16, PIECE))
    assert magic == 0x67446698, "reply %d: magic %#x" % (n, magic)
    assert k in pending, "reply %d: cookie %d, not one awaited" % (n, k)
    pending.discard(k)
    assert err == 0, "reply %d (cookie %d): error %d" % (n, k, err)
    off, length = reads[k]
    data = recv_exact(s, length, PIECE)
    if data != words(off, length):
        bad = next(i for i in range(0, length, 8)
                   if data[i:i + 8] != words(off + i, 8))
        raise SystemExit("reply %d (read of %d at %d): the word at +%d "
                         "holds %d" % (k, length, off, bad,
                                       struct.unpack(">Q", data[bad:bad + 8])[0]))
t.join(60)
print("%d reads, %d MiB, every reply whole"
      % (len(reads), sum(l for _, l in reads) >> 20))
s.close()
PY
  fail "$(cat "$tmpdir/py.out")"
cat "$tmpdir/py.out"
stop_server "$pid"
