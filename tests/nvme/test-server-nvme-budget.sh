#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# zonednull-server --nvme under a hostile NVMe/TCP host (issue 32): the
# output budget of zonednull-server(8) covers every reply and every R2T
# buffer.
# - A host that sends failing commands and never reads (Identify before
#   Connect from a host --nvme-allow-host refused; on an I/O queue, an
#   invalid opcode, NSID 0, a bad SGL type) stops being read: the server holds no more
#   than one connection's 32 MiB of replies for it, and a good host
#   beside it writes and reads back.
# - Commands that take no data, sent with a transport SGL to an admin
#   queue or a discovery controller, are refused without an R2T; 80
#   discovery controllers of a refused host trying for R2T buffers hold
#   no more memory than the budget allows.
# tests/common/nvme-host.py is the host.  The pass criterion is memory (VmHWM
# of the server, its peak reset before each case), never speed; under
# the sanitizers, where memory is not the server's own, the same hosts
# run for the statuses and the good host only.
. "$(dirname "$0")/../common/lib.sh"

: "${ZONEDNULL_SERVER:=${ZONEDNULL_BUILDDIR:-.}/server/zonednull-server}"
[ -x "$ZONEDNULL_SERVER" ] || fail "no server at $ZONEDNULL_SERVER"
measure=1
[ -z "${ZONEDNULL_PRELOAD:-}" ] || measure=0

# 80 hostile connections, the good ones and the server's own descriptors.
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt 256 ]; then
  ulimit -n 256 2>/dev/null || skip "cannot raise the descriptor limit to 256"
fi

port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
ZONEDNULL_TARGET=server
start_server budget --nvme="$port" -i 127.0.0.1 --timeout=120 \
  --nvme-allow-host=nqn.2014-08.org.nvmexpress:uuid:00000000-0000-4000-8000-000000000001 \
  size=64 zone_size=8 memory_backed=1
nqn="nqn.2026-12.org.zonednull:$(hostname | tr -cd 'A-Za-z0-9.-' | cut -c1-64):$port"

/usr/bin/python3 - "$(dirname "$0")/../common/nvme-host.py" "$port" "$nqn" "$pid" "$measure" \
  >"$tmpdir/py.out" 2>&1 <<'PY' ||
import importlib.util, io, sys, time
from contextlib import redirect_stdout

path, port, nqn, pid, measure = sys.argv[1:]
measure = measure == "1"
spec = importlib.util.spec_from_file_location("nvme_host", path)
host = importlib.util.module_from_spec(spec)
spec.loader.exec_module(host)
MiB = 1 << 20
# zonednull-server(8): a connection holds at most 32 MiB of replies; all
# of them 256 MiB plus 2 MiB each, and one queue's 8 MiB of R2T data.
PER_CONN, TOTAL = 32 * MiB, 256 * MiB
# Room for the input buffers and the allocator.
SLACK = 16 * MiB

def status(field):
    if not measure:
        return 0
    for line in open("/proc/%s/status" % pid):
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise SystemExit("no %s for %s" % (field, pid))

def start():
    """The server's size once what the last case held is gone (its
    connections are closed when the server comes to them); its peak
    from then on is VmHWM."""
    for _ in range(300):
        if status("VmRSS") <= idle + SLACK:
            break
        time.sleep(0.1)
    if measure:
        with open("/proc/%s/clear_refs" % pid, "w") as f:
            f.write("5")
    return status("VmRSS")

idle = status("VmRSS")
if not measure:
    print("memory not measured (sanitizers): statuses and the good host only")

def good():
    out = io.StringIO()
    with redirect_stdout(out):
        host.smoke("127.0.0.1", port, nqn)
    assert out.getvalue().endswith("ok\n"), out.getvalue()

# Each non-reading mode on its own: 256 MiB of commands would queue
# 85 MiB of replies; the server must stop reading at 32 MiB (the old
# server read them all).
for mode in ("identify", "opcode", "nsid0", "sgl"):
    base = start()
    h, keep, sqe, want = host.hostile("127.0.0.1", port, nqn, mode)
    sent = host.flood(h, sqe, 256 * MiB)
    good()
    hwm = status("VmHWM")
    print("%s: sent %d MiB, base %d MiB, peak %d MiB" % (mode, sent >> 20,
          base >> 20, hwm >> 20))
    if hwm > base + PER_CONN + SLACK:
        sys.exit("%s: the server holds %d MiB for a host that does not "
                 "read, more than the %d MiB allowed" % (mode,
                 (hwm - base) >> 20, (PER_CONN + SLACK) >> 20))
    # What it was answered, once it reads: the failure of its command.
    h.sock.setblocking(True)
    h.sock.settimeout(60)
    ptype, _, _, _, pdu = h.recv_pdu()
    st = int.from_bytes(pdu[22:24], "little") >> 1
    assert ptype == 5 and st == want, "%s: PDU %d status %#x" % (mode, ptype, st)
    for c in [h] + keep:
        c.sock.close()

# Admin R2Ts: 80 discovery controllers (the old server held 8 MiB for
# each) stay in the budget, and get no R2T for commands that take no
# data; nor does an admin queue.
base = start()
conns, r2ts = host.discovery_hog("127.0.0.1", port, 80 if measure else 8)
good()
hwm = status("VmHWM")
bound = TOTAL + (len(conns) + 2) * 2 * MiB + 8 * MiB + SLACK
print("discovery: %d R2Ts granted, base %d MiB, peak %d MiB" % (r2ts,
      base >> 20, hwm >> 20))
if hwm > base + bound:
    sys.exit("80 discovery controllers made the server hold %d MiB, more "
             "than the %d MiB allowed" % ((hwm - base) >> 20, bound >> 20))
assert r2ts == 0, "%d R2Ts granted for commands that take no data" % r2ts
host.no_r2t("127.0.0.1", port, nqn)
for c in conns:
    c.sock.close()
PY
  fail "$(cat "$tmpdir/py.out")"
cat "$tmpdir/py.out"
stop_server "$pid"
if grep -E "runtime error|AddressSanitizer|LeakSanitizer" "$tmpdir/budget.log"; then
  fail "the sanitizers reported errors"
fi
exit 0
