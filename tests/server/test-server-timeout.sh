#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# zonednull-server's handshake timeout (issue 15): a client that connects
# and sends nothing, one that stops in the middle of an option, one
# that stops between options and ones that stop in the TLS handshake
# (with psktool) are disconnected once --timeout has passed
# (the log says so with -v), while a client in the transmission phase is
# not; and with few descriptors, stalled clients no longer keep a new
# one from getting its greeting.  The assertions are that the disconnect
# happens (EOF within a generous wait), never how fast.
. "$(dirname "$0")/../common/lib.sh"

need_nbdsh
: "${ZONEDNULL_SERVER:=${ZONEDNULL_BUILDDIR:-.}/server/zonednull-server}"
[ -x "$ZONEDNULL_SERVER" ] || fail "no server at $ZONEDNULL_SERVER"
srv=$ZONEDNULL_SERVER

# The option: bad values are refused with the rule.
for bad in -1 x 1s 86401 nan inf ''; do
  if "$srv" -f -U "$tmpdir/bad.sock" --timeout="$bad" size=8 zone_size=1 \
       2>"$tmpdir/err"; then
    fail "--timeout='$bad' accepted"
  fi
  grep -qF -- "--timeout '$bad': must be a number of seconds from 0 (no limit) to 86400" \
    "$tmpdir/err" || fail "--timeout='$bad': $(cat "$tmpdir/err")"
done
"$srv" --help | grep -q -- '--timeout S' || fail "--help lacks --timeout"

ZONEDNULL_TARGET=server
# 3 s: room for the well-behaved client's handshake on a loaded machine.
start_server stall -v --timeout=3 size=8 zone_size=1
/usr/bin/python3 - "$sock" "$uri" >"$tmpdir/py.out" 2>&1 <<'PY' ||
import socket, struct, sys, time
import nbd

path, uri = sys.argv[1:]
IHAVEOPT = 0x49484156454F5054

def stalled(send):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.sendall(send)
    return s

def until_eof(s, what):
    # Far longer than the timeout: only a server that never closes fails.
    s.settimeout(60)
    got = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            got += b
    except socket.timeout:
        raise SystemExit("%s: still open after 60 s" % what)
    s.close()
    return got

silent = stalled(b"")
mid_option = stalled(struct.pack(">I", 3) + struct.pack(">QII", IHAVEOPT, 3, 0)[:10])
list_opt = struct.pack(">QII", IHAVEOPT, 3, 0)
between = stalled(struct.pack(">I", 3) + list_opt + list_opt)
# A client in the transmission phase stays connected past the timeout.
h = nbd.NBD()
h.connect_uri(uri)
for s, what in ((silent, "silent client"), (mid_option, "client stopped mid-option"),
                (between, "client stopped between options")):
    got = until_eof(s, what)
    assert got[:16] == struct.pack(">QQ", 0x4e42444d41474943, IHAVEOPT), (what, got[:18])
time.sleep(4)
assert h.pread(4096, 0) == bytes(4096)
h.shutdown()
PY
  fail "$(cat "$tmpdir/py.out")"
n=$(grep -c 'handshake not finished within 3 s (--timeout), closed' "$tmpdir/stall.log")
[ "$n" -eq 3 ] || fail "expected 3 cut-offs in the log: $(cat "$tmpdir/stall.log")"
stop_server "$pid"

# The TLS handshake is part of the handshake: a client that stops after
# NBD_OPT_STARTTLS's reply, or halfway through the TLS handshake (its
# ClientHello cut short), is cut off too.
if command -v psktool >/dev/null; then
  psktool -u alice -p "$tmpdir/keys.psk" >/dev/null 2>&1 || fail "psktool"
  start_server tls -v --timeout=1 --tls=require --tls-psk="$tmpdir/keys.psk" \
    size=8 zone_size=1
  /usr/bin/python3 - "$sock" >"$tmpdir/py.out" 2>&1 <<'PY' ||
import socket, struct, sys
IHAVEOPT = 0x49484156454F5054
def until_eof(s, what):
    s.settimeout(60)
    try:
        while s.recv(65536):
            pass
    except socket.timeout:
        raise SystemExit("%s: still open after 60 s" % what)
hello = struct.pack(">I", 3) + struct.pack(">QII", IHAVEOPT, 5, 0)
for what, more in (("after STARTTLS", b""),
                   ("mid TLS handshake", bytes.fromhex("16030100c8010000c40303") + b"\0" * 20)):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    s.sendall(hello)
    s.settimeout(60)
    got = b""
    while len(got) < 18 + 20:
        got += s.recv(38 - len(got))
    assert struct.unpack(">I", got[18 + 12:18 + 16])[0] == 1, got   # ACK
    s.sendall(more)
    until_eof(s, what)
PY
    fail "TLS: $(cat "$tmpdir/py.out")"
  n=$(grep -c 'handshake not finished within 1 s (--timeout), closed' "$tmpdir/tls.log")
  [ "$n" -eq 2 ] || fail "expected 2 TLS cut-offs in the log: $(cat "$tmpdir/tls.log")"
  stop_server "$pid"
fi

# --timeout=0: no limit; the stalled client is still connected 3 s
# later.
start_server notimeout --timeout=0 size=8 zone_size=1
/usr/bin/python3 - "$sock" >"$tmpdir/py.out" 2>&1 <<'PY' ||
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.settimeout(3)
got = b""
try:
    while True:
        b = s.recv(100)
        if not b:
            raise SystemExit("--timeout=0 closed a stalled client")
        got += b
except socket.timeout:
    pass
assert len(got) == 18, got
PY
  fail "$(cat "$tmpdir/py.out")"
stop_server "$pid"

# 32 descriptors: 40 stalled clients use up what the server has, and a
# new client still gets its greeting and is served once they are cut off.
name=fdlimit sock=$tmpdir/fdlimit.sock pidfile=$tmpdir/fdlimit.pid
rm -f "$pidfile"
prlimit --nofile=32 "$srv" -f --exit-with-parent --timeout=2 -U "$sock" \
  -P "$pidfile" size=8 zone_size=1 </dev/null 2>"$tmpdir/fdlimit.log" &
pid=$!
await_server "zonednull-server with 32 descriptors"
/usr/bin/python3 - "$sock" "$uri" <<'PY' >"$tmpdir/py.out" 2>&1 ||
import socket, sys, threading
import nbd
path, uri = sys.argv[1:]
held = []
for _ in range(40):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    held.append(s)
result = []
def good():
    # A handshake slower than the timeout on a loaded machine is cut off
    # too; then a new client tries again.
    for _ in range(10):
        try:
            h = nbd.NBD()
            h.connect_uri(uri)
            result.append(h.pread(4096, 0))
            h.shutdown()
            return
        except nbd.Error as e:
            print("retrying after:", e)
t = threading.Thread(target=good, daemon=True)
t.start()
t.join(120)
assert result == [bytes(4096)], "no greeting for a new client: %r" % result
PY
  fail "$(cat "$tmpdir/py.out") $(cat "$tmpdir/fdlimit.log")"
stop_server "$pid"
