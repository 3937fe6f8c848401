#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# zonednull-server --threads=3 hands each new connection to the loop with
# the fewest: three clients go one to each loop; when the second and the
# third leave, the next two go to the loops they left, not to the first
# loop again (which the turn alone would have chosen).  --stats'
# connections count, at SIGUSR1, says where the clients are; each look
# waits for the server's lines, a bounded number of times.
. "$(dirname "$0")/../common/lib.sh"

need_nbdsh
: "${ZONEDNULL_SERVER:=${ZONEDNULL_BUILDDIR:-.}/server/zonednull-server}"
[ -x "$ZONEDNULL_SERVER" ] || fail "no server at $ZONEDNULL_SERVER"

ZONEDNULL_TARGET=server
start_server handoff --threads=3 --stats size=64 zone_size=4 \
  zone_nr_conv=4 memory_backed=1
/usr/bin/python3 - "$uri" "$pid" "$tmpdir/handoff.log" \
  >"$tmpdir/py.out" 2>&1 <<'PY' ||
import os, signal, sys, time
import nbd

uri, pid, log = sys.argv[1], int(sys.argv[2]), sys.argv[3]

def stats_lines():
    return [l for l in open(log).read().splitlines() if ": stats: " in l]

def connections():
    """The connections of loops 0, 1 and 2, from the lines the server
    prints at one SIGUSR1."""
    before = len(stats_lines())
    os.kill(pid, signal.SIGUSR1)
    for _ in range(600):
        lines = stats_lines()
        if len(lines) >= before + 3:
            break
        time.sleep(0.1)
    else:
        sys.exit("the server printed no stats: %s" % open(log).read())
    n = {}
    for line in lines[before:before + 3]:
        kv = dict(f.split("=", 1) for f in line.split() if "=" in f)
        n[int(kv["loop"])] = int(kv["connections"])
    return [n[k] for k in range(3)]

def expect(want, what):
    """Until the server's loops have want connections (bounded)."""
    for _ in range(50):
        got = connections()
        if got == want:
            return
        time.sleep(0.1)
    sys.exit("%s: connections per loop %s, expected %s" % (what, got, want))

def client():
    h = nbd.NBD()
    h.connect_uri(uri)
    h.pread(4096, 0)
    return h

a, b, c = client(), client(), client()
expect([1, 1, 1], "three clients")
b.shutdown()
c.shutdown()
expect([1, 0, 0], "after the second and the third left")
d, e = client(), client()
expect([1, 1, 1], "two new clients")
for h in (a, d, e):
    h.shutdown()
print("one client per loop, then the new ones on the loops left empty")
PY
  fail "$(cat "$tmpdir/py.out")"
stop_server "$pid"
echo "test-server-handoff: $(cat "$tmpdir/py.out")"
