#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# NBD_CMD_DISC with requests outstanding (issue 15): the NBD protocol
# says the server handles every outstanding request before it closes.
# A client sends requests, then NBD_CMD_DISC (and shuts its side down),
# and must still get every reply, with the result the request would have
# had, before the server closes:
# - a pipelined write parked ahead of its write pointer is applied once
#   another connection's write brings the write pointer to it;
# - one that nothing brings it to fails with EIO after pipeline_wait_ms,
#   as a parked write does, and changes nothing;
# - reads waiting for the one tag, each held completion_nsec
#   (irqmode=2), and reads over the mbps budget are all answered;
# - (the server only) a write ahead of its write pointer with
#   pipeline_max_waiting writes already waiting fails with EIO at once,
#   writing nothing, and the parked write is applied as before;
# - without NBD_CMD_DISC, a reply larger than the socket buffers, still
#   being sent when the client shuts its side down, is sent whole.
# Against zonednull-server and nbdkit with the plugin.  nbdkit handles
# DISC itself: its threads finish the requests they are carrying out and
# send their replies, but a request read by one thread and not started
# yet when another takes NBD_CMD_DISC is refused with ESHUTDOWN (nbdkit
# 1.32), so there a reply may also be ESHUTDOWN, with nothing applied;
# every request still gets its reply.
. "$(dirname "$0")/../common/lib.sh"

need_nbdsh
: "${ZONEDNULL_SERVER:=${ZONEDNULL_BUILDDIR:-.}/server/zonednull-server}"
[ -x "$ZONEDNULL_SERVER" ] || fail "no server at $ZONEDNULL_SERVER"

cp "$(dirname "$0")/../common/nbd-raw.py" "$tmpdir/raw.py"

for target in server nbdkit; do
  ZONEDNULL_TARGET=$target

  # Parked writes: the wait is long enough for the other connection.
  start_server "park-$target" size=8 zone_size=1 memory_backed=1 \
    pipeline_zoned_writes=1 pipeline_wait_ms=60000
  /usr/bin/python3 - "$sock" "$uri" "$tmpdir" "$target" >"$tmpdir/py.out" 2>&1 <<'PY' ||
import socket, sys, time
sys.path.insert(0, sys.argv[3])
import nbd
from raw import *
path, uri, _, target = sys.argv[1:]
MiB = 1 << 20
s = connect(path)
# Zone 1's write pointer is at its start: this write waits for it.
s.sendall(request(1, 7, MiB + 4096, 4096, b"\x77" * 4096) + DISC)
s.shutdown(socket.SHUT_WR)
# Give the server time to take NBD_CMD_DISC first (the old one then
# closed at once); the outcome does not depend on it.
time.sleep(0.5)
h = nbd.NBD()
h.connect_uri(uri)
h.pwrite(b"\x11" * 4096, MiB)
got = replies(s, {})
assert list(got) == [7] and got[7] in results(target), got
assert h.pread(8192, MiB) == b"\x11" * 4096 + (b"\x77" if got[7] == 0 else b"\xff") * 4096
h.shutdown()
PY
  fail "$target: parked write applied after DISC: $(cat "$tmpdir/py.out")"
  stop_server "$pid"

  start_server "parkfail-$target" size=8 zone_size=1 memory_backed=1 \
    pipeline_zoned_writes=1 pipeline_wait_ms=300
  /usr/bin/python3 - "$sock" "$uri" "$tmpdir" "$target" >"$tmpdir/py.out" 2>&1 <<'PY' ||
import socket, sys
sys.path.insert(0, sys.argv[3])
import nbd
from raw import *
path, uri, _, target = sys.argv[1:]
MiB = 1 << 20
s = connect(path)
s.sendall(request(1, 8, MiB + 4096, 4096, b"\x88" * 4096) + DISC)
got = replies(s, {})
# EIO, as when a parked write gives up
assert list(got) == [8] and got[8] in (5,) + results(target)[1:], got
h = nbd.NBD()
h.connect_uri(uri)
assert h.pread(4096, MiB + 4096) == b"\xff" * 4096    # past the wp
h.shutdown()
PY
  fail "$target: parked write failed after DISC: $(cat "$tmpdir/py.out")"
  stop_server "$pid"

  # One tag, each request holding it 100 ms: at DISC one read is in
  # flight and three wait for the tag.
  start_server "tags-$target" size=8 zone_size=1 irqmode=2 \
    completion_nsec=100000000 hw_queue_depth=1
  /usr/bin/python3 - "$sock" "$tmpdir" "$target" >"$tmpdir/py.out" 2>&1 <<'PY' ||
import socket, sys
sys.path.insert(0, sys.argv[2])
from raw import *
s = connect(sys.argv[1])
s.sendall(b"".join(request(0, k, 0, 4096) for k in range(1, 5)) + DISC)
s.shutdown(socket.SHUT_WR)
got = replies(s, {k: 4096 for k in range(1, 5)})
assert sorted(got) == [1, 2, 3, 4], got
assert all(e in results(sys.argv[3]) for e in got.values()), got
PY
  fail "$target: tags and timed completions at DISC: $(cat "$tmpdir/py.out")"
  stop_server "$pid"

  # mbps=1: 1.5 MiB of reads take over a second of budget.
  start_server "mbps-$target" size=8 zone_size=1 mbps=1
  /usr/bin/python3 - "$sock" "$tmpdir" "$target" >"$tmpdir/py.out" 2>&1 <<'PY' ||
import socket, sys
sys.path.insert(0, sys.argv[2])
from raw import *
s = connect(sys.argv[1])
s.sendall(b"".join(request(0, k, 0, 512 << 10) for k in range(1, 4)) + DISC)
s.shutdown(socket.SHUT_WR)
got = replies(s, {k: 512 << 10 for k in range(1, 4)})
assert sorted(got) == [1, 2, 3], got
assert all(e in results(sys.argv[3]) for e in got.values()), got
PY
  fail "$target: reads over the mbps budget at DISC: $(cat "$tmpdir/py.out")"
  stop_server "$pid"

  # No DISC: the client shuts its side down behind a 32 MiB read and
  # reads only a second later, long after the server met the end of its
  # input with most of the reply still to send (the server used to close
  # then, cutting the reply short).
  start_server "halfclose-$target" size=64 zone_size=4
  /usr/bin/python3 - "$sock" "$tmpdir" "$target" >"$tmpdir/py.out" 2>&1 <<'PY' ||
import socket, sys, time
sys.path.insert(0, sys.argv[2])
from raw import *
s = connect(sys.argv[1])
s.sendall(request(0, 9, 0, 32 << 20))
s.shutdown(socket.SHUT_WR)
time.sleep(1)
got = replies(s, {9: 32 << 20})
assert list(got) == [9] and got[9] in results(sys.argv[3]), got
PY
  fail "$target: a reply still to send when the client ends its input: $(cat "$tmpdir/py.out")"
  stop_server "$pid"
done

# The scheduler fails a write it cannot park (pipeline_max_waiting) when
# it admits it: the client gets EIO before the parked write's reply.
ZONEDNULL_TARGET=server
start_server "busy-server" size=8 zone_size=1 memory_backed=1 \
  pipeline_zoned_writes=1 pipeline_wait_ms=60000 pipeline_max_waiting=1
/usr/bin/python3 - "$sock" "$uri" "$tmpdir" >"$tmpdir/py.out" 2>&1 <<'PY' ||
import socket, sys
sys.path.insert(0, sys.argv[3])
import nbd
from raw import *
path, uri = sys.argv[1:3]
MiB = 1 << 20
s = connect(path)
s.sendall(request(1, 10, MiB + 4096, 4096, b"\xaa" * 4096)
          + request(1, 11, MiB + 8192, 4096, b"\xbb" * 4096)
          + request(1, 12, MiB, 4096, b"\x33" * 4096) + DISC)
s.shutdown(socket.SHUT_WR)
got = replies(s, {})
assert got == {10: 0, 11: 5, 12: 0}, got
assert list(got).index(11) < list(got).index(10), list(got)
h = nbd.NBD()
h.connect_uri(uri)
assert h.pread(12288, MiB) == b"\x33" * 4096 + b"\xaa" * 4096 + b"\xff" * 4096
h.shutdown()
PY
fail "server: a write over pipeline_max_waiting: $(cat "$tmpdir/py.out")"
stop_server "$pid"
