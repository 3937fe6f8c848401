#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# What zonednull-server's negotiation leaves for block status, and the
# flags it gives, as the NBD protocol has them, over a raw socket:
# - a failed NBD_OPT_SET_META_CONTEXT replaces the contexts chosen
#   before it: block status then fails with EINVAL;
# - contexts chosen for one export do not carry over to another chosen
#   with NBD_OPT_EXPORT_NAME (as with NBD_OPT_GO), and do for the same;
# - block status not aligned to the minimum block size fails with
#   EINVAL, as reads and writes do;
# - NBD_FLAG_SEND_DF is given with structured replies, and only then.
# shellcheck source=tests/common/lib.sh
. "$(dirname "$0")/../common/lib.sh"

: "${ZONEDNULL_SERVER:=${ZONEDNULL_BUILDDIR:-.}/server/zonednull-server}"
[ -x "$ZONEDNULL_SERVER" ] || fail "no server at $ZONEDNULL_SERVER"
cp "$(dirname "$0")/../common/nbd-raw.py" "$tmpdir/raw.py"

ZONEDNULL_TARGET=server
start_server opts nr_devices=2 size=8 zone_size=1 zone_nr_conv=1 memory_backed=1
PYTHONPATH=$tmpdir /usr/bin/python3 - "$sock" >"$tmpdir/py.out" 2>&1 <<'PY' ||
import socket, struct, sys
from raw import IHAVEOPT, recv_exact, request

path = sys.argv[1]
STRUCTURED, SET_META, GO, EXPORT_NAME = 8, 10, 7, 1
REP_ACK, REP_META, REP_INFO = 1, 4, 3
SEND_DF = 1 << 7
BLOCK_STATUS = 7

def opt(o, d):
    return struct.pack(">QII", IHAVEOPT, o, len(d)) + d

def name(b):
    return struct.pack(">I", len(b)) + b

def meta(export, queries):
    return name(export) + struct.pack(">I", len(queries)) \
           + b"".join(name(q) for q in queries)

def start():
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.settimeout(30)
    recv_exact(s, 18)
    s.sendall(struct.pack(">I", 3))             # fixed newstyle, no zeroes
    return s

def option(s, o, data):
    """The option's replies up to its last: [(type, data)]."""
    s.sendall(opt(o, data))
    got = []
    while True:
        _, ro, typ, n = struct.unpack(">QIII", recv_exact(s, 20))
        assert ro == o, "a reply to option %d, not %d" % (ro, o)
        got.append((typ, recv_exact(s, n)))
        if typ == REP_ACK or typ & 0x80000000:
            return got

def go(s, export):
    """NBD_OPT_GO: the export's transmission flags."""
    flags = None
    for typ, d in option(s, GO, name(export) + struct.pack(">H", 0)):
        assert not typ & 0x80000000, "NBD_OPT_GO failed: %#x %r" % (typ, d)
        if typ == REP_INFO and struct.unpack(">H", d[:2])[0] == 0:
            flags = struct.unpack(">QH", d[2:12])[1]
    return flags

def block_status(s, off, n):
    """The errno of a block status, 0 when it succeeded."""
    s.sendall(request(BLOCK_STATUS, 5, off, n))
    while True:
        magic, flags, typ, cookie, length = struct.unpack(">IHHQI", recv_exact(s, 20))
        assert magic == 0x668e33ef and cookie == 5, (hex(magic), cookie)
        payload = recv_exact(s, length)
        if typ & 0x8000:
            return struct.unpack(">I", payload[:4])[0]
        if flags & 1:
            return 0

def set_ok(s, export):
    got = option(s, SET_META, meta(export, [b"base:allocation"]))
    assert [t for t, _ in got] == [REP_META, REP_ACK], got

# A failed NBD_OPT_SET_META_CONTEXT leaves no context.
s = start()
assert option(s, STRUCTURED, b"") == [(REP_ACK, b"")]
set_ok(s, b"nullb0")
bad = name(b"nullb0") + struct.pack(">I", 1) + struct.pack(">I", 1000) + b"base:"
got = option(s, SET_META, bad)
assert got[-1][0] == 0x80000003, "a malformed query list: %r" % got  # ERR_INVALID
flags = go(s, b"nullb0")
assert flags & SEND_DF, "no NBD_FLAG_SEND_DF with structured replies: %#x" % flags
err = block_status(s, 0, 4096)
assert err == 22, "block status after a failed SET_META_CONTEXT: errno %d" % err
s.close()

# Not aligned to the minimum block size (512): EINVAL; aligned: served.
s = start()
option(s, STRUCTURED, b"")
set_ok(s, b"nullb0")
go(s, b"nullb0")
assert block_status(s, 0, 4096) == 0
for off, n in ((100, 1000), (0, 1000), (512, 100)):
    err = block_status(s, off, n)
    assert err == 22, "block status of %d at %d: errno %d" % (n, off, err)
assert block_status(s, 512, 512) == 0
s.close()

# NBD_OPT_EXPORT_NAME: contexts chosen for nullb1 are gone on nullb0,
# those chosen for nullb0 stay.
for chosen, want in ((b"nullb1", 22), (b"nullb0", 0)):
    s = start()
    option(s, STRUCTURED, b"")
    set_ok(s, chosen)
    s.sendall(opt(EXPORT_NAME, b"nullb0"))
    size, flags = struct.unpack(">QH", recv_exact(s, 10))
    assert size == 8 << 20 and flags & SEND_DF, (size, hex(flags))
    err = block_status(s, 0, 4096)
    assert err == want, "contexts of %s, then NBD_OPT_EXPORT_NAME nullb0: " \
        "errno %d, expected %d" % (chosen.decode(), err, want)
    s.close()

# Without structured replies, no NBD_FLAG_SEND_DF.
s = start()
flags = go(s, b"nullb0")
assert not flags & SEND_DF, "NBD_FLAG_SEND_DF without structured replies"
s.close()
print("ok")
PY
  fail "$(cat "$tmpdir/py.out")"
stop_server "$pid"
