#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# zonednull-server stopped by each stop signal (SIGTERM, SIGINT, SIGHUP,
# SIGQUIT; --exit-with-parent is SIGTERM) with connections open in every
# state a connection can be in: NBD clients silent after the greeting,
# stopped mid-option, in the TLS handshake and in transmission (idle,
# with a held reply of irqmode=2, with a write parked ahead of its write
# pointer), NVMe/TCP hosts after ICReq and with an admin and an I/O
# queue.  Each stop must end the server with status 0 and no memory
# error.  A use-after-free at stop rarely crashes a plain build, so it
# runs under valgrind there (its --error-exitcode), and the sanitizer
# build's AddressSanitizer aborts on its own.
. "$(dirname "$0")/../common/lib.sh"

need_nbdsh
: "${ZONEDNULL_SERVER:=${ZONEDNULL_BUILDDIR:-.}/server/zonednull-server}"
[ -x "$ZONEDNULL_SERVER" ] || fail "no server at $ZONEDNULL_SERVER"
command -v psktool >/dev/null || skip "psktool (gnutls-bin) is not installed"
host_py="/usr/bin/python3 $(dirname "$0")/../common/nvme-host.py"

# The sanitizer build's runtimes do not mix with valgrind.
if [ -z "${ZONEDNULL_PRELOAD:-}" ] && command -v valgrind >/dev/null; then
  printf '#!/bin/sh\nexec valgrind -q --error-exitcode=99 --leak-check=no %s "$@"\n' \
    "$ZONEDNULL_SERVER" >"$tmpdir/server"
  chmod +x "$tmpdir/server"
  ZONEDNULL_SERVER=$tmpdir/server
fi
ZONEDNULL_TARGET=server

free_port () {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

psktool -u alice -p "$tmpdir/keys.psk" >/dev/null 2>&1 || fail "psktool failed"
chmod 600 "$tmpdir/keys.psk"

# stop_checked NAME SIGNAL: sends SIGNAL to the server $pid started as NAME
# and fails unless it exits with status 0 and a clean log.
stop_checked () {
  kill -"$2" "$pid" || fail "$1: server $pid is not running"
  rc=0
  wait "$pid" || rc=$?
  forget_server "$pid"
  [ "$rc" -eq 0 ] || fail "$1: SIG$2 ended the server with status $rc: $(cat "$tmpdir/$1.log")"
  if grep -qE 'AddressSanitizer|runtime error|Invalid (read|write)|uninitialised' \
       "$tmpdir/$1.log"; then
    fail "$1: memory error at SIG$2: $(cat "$tmpdir/$1.log")"
  fi
}

# hold_clients NAME PORT: opens every kind of connection to the server
# $sock (and NVMe/TCP port PORT), writes "ready" to $tmpdir/NAME.ready
# when all are open and stays until the server closes them.
hold_clients () {
  /usr/bin/python3 - "$sock" "$uri" "$2" "$tmpdir/$1.ready" \
    "$(dirname "$0")/../common" >"$tmpdir/$1.py" 2>&1 <<'PY' &
import socket, struct, sys, time
import nbd

import importlib.util
path, uri, port, ready, common = sys.argv[1:]
spec = importlib.util.spec_from_file_location("nvme_host", common + "/nvme-host.py")
nvme = importlib.util.module_from_spec(spec)
spec.loader.exec_module(nvme)
IHAVEOPT = 0x49484156454F5054
held = []

def unix(send):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.sendall(send)
    held.append(s)
    return s

unix(b"")                                        # silent after the greeting
unix(struct.pack(">I", 3) + struct.pack(">QII", IHAVEOPT, 3, 0)[:10])
starttls = unix(struct.pack(">I", 3) + struct.pack(">QII", IHAVEOPT, 5, 0))
starttls.recv(152)                               # greeting and STARTTLS reply,
starttls.sendall(b"\x16\x03\x01\x00\x80")        # then half a ClientHello
idle = nbd.NBD()
idle.connect_uri(uri)
busy = nbd.NBD()
busy.connect_uri(uri)
busy.aio_pread(nbd.Buffer(4096), 0)                        # a held reply (irqmode=2)
busy.aio_pwrite(nbd.Buffer.from_bytearray(bytearray(b"\1" * 4096)), 8192)              # parked: ahead of the wp 0
if port != "-":
    ic = nvme.Host("127.0.0.1", int(port))       # after ICReq
    ic.ic()
    held.append(ic)
    nqn = "nqn.2026-12.org.zonednull:%s:%s" % (
        "".join(c for c in socket.gethostname() if c.isalnum() or c in ".-")[:64], port)
    admin = nvme.admin_queue("127.0.0.1", int(port), nqn)
    held.append(admin)
    io, st = nvme.io_queue("127.0.0.1", int(port), nqn, admin.cntlid)
    assert st == 0, "I/O Connect: %#x" % st
    held.append(io)
open(ready, "w").write("ready\n")
time.sleep(120)
PY
  clients=$!
  tries=0
  until [ -s "$tmpdir/$1.ready" ]; do
    kill -0 "$clients" 2>/dev/null || fail "$1: the clients failed: $(cat "$tmpdir/$1.py")"
    tries=$((tries + 1))
    [ "$tries" -le 600 ] || fail "$1: the clients did not connect: $(cat "$tmpdir/$1.py")"
    sleep 0.1
  done
}

# Each stop signal, with NVMe/TCP and NBD, then NBD alone (no NVMe/TCP
# listener, so the NBD one is the last), and with the connections'
# requests in flight in the scheduler.
for sig in TERM INT HUP QUIT; do
  port=$(free_port)
  start_server "nvme-$sig" --nvme="$port" -i 127.0.0.1 --tls=on \
    --tls-psk="$tmpdir/keys.psk" size=64 zone_size=8 memory_backed=1 \
    irqmode=2 completion_nsec=30000000000 pipeline_zoned_writes=1 pipeline_wait_ms=60000
  hold_clients "nvme-$sig" "$port"
  stop_checked "nvme-$sig" "$sig"
  kill "$clients" 2>/dev/null; wait "$clients" 2>/dev/null

  start_server "nbd-$sig" --tls=on --tls-psk="$tmpdir/keys.psk" size=64 \
    zone_size=8 memory_backed=1 irqmode=2 completion_nsec=30000000000 \
    pipeline_zoned_writes=1 pipeline_wait_ms=60000
  hold_clients "nbd-$sig" -
  stop_checked "nbd-$sig" "$sig"
  kill "$clients" 2>/dev/null; wait "$clients" 2>/dev/null
done
exit 0
