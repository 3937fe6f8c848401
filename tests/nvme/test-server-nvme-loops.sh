#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# zonednull-server --nvme --threads=3: a host's queues, each a connection,
# are served by different event loops, and still make one controller.
# Four I/O queues of one controller, used at once from a thread each,
# write their own zones and read them back; a failed read on each is
# entered in the Error Information log the admin queue reads; a reset
# (CC.EN 0) closes every I/O queue, whichever loop serves it, and so does
# the close of the admin queue.  Each of the three loops served some of
# the commands (its --stats line).
. "$(dirname "$0")/../common/lib.sh"

: "${ZONEDNULL_SERVER:=${ZONEDNULL_BUILDDIR:-.}/server/zonednull-server}"
[ -x "$ZONEDNULL_SERVER" ] || fail "no server at $ZONEDNULL_SERVER"
host_py="/usr/bin/python3 $(dirname "$0")/../common/nvme-host.py"
ZONEDNULL_TARGET=server
port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# --threads here wins over the suite's ZONEDNULL_SERVER_THREADS.
start_server loops --nvme="$port" -i 127.0.0.1 --stats \
  size=64 zone_size=8 memory_backed=1 submit_queues=4 --threads=3
nqn="nqn.2026-12.org.zonednull:$(hostname | tr -cd 'A-Za-z0-9.-' | cut -c1-64):$port"
$host_py 127.0.0.1 "$port" queues "$nqn" 4 >"$tmpdir/out" 2>&1 ||
  fail "four queues over three loops: $(cat "$tmpdir/out")"
for want in "4 queues: writes read back, errors logged" \
            "reset: 4 queues closed, connected again" \
            "admin queue closed: 4 queues closed"; do
  grep -qxF "$want" "$tmpdir/out" || fail "no '$want': $(cat "$tmpdir/out")"
done
stop_server "$pid"
for k in 0 1 2; do
  line=$(grep ": stats: .* loop=$k\$" "$tmpdir/loops.log") ||
    fail "no stats line of loop $k: $(cat "$tmpdir/loops.log")"
  n=$(printf '%s\n' "$line" | tr ' ' '\n' | sed -n 's/^requests=//p')
  [ "${n:-0}" -gt 0 ] || fail "loop $k served no NVMe/TCP command: $line"
done
if grep -E "runtime error|AddressSanitizer|LeakSanitizer|ThreadSanitizer" \
     "$tmpdir/loops.log"; then
  fail "the sanitizers found a fault"
fi
