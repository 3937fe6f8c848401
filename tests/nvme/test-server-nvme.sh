#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# zonednull-server --nvme: NVMe/TCP beside NBD.  The options' bad values
# are refused with the rule; configurations ZNS cannot express are
# refused naming the key; a server on a free port of 127.0.0.1 prints
# its subsystem NQN, takes an ICReq, lists the subsystem in its
# discovery log, serves an admin and an I/O queue (digests, in-capsule
# and R2T writes, reads, zone append) while NBD still serves on its
# socket, also with irqmode=2; the handshake timeout closes connections
# that stall before Connect; --nvme-allow-host refuses other hosts; a controller whose host
# falls silent past its keep-alive timeout is closed with its I/O queue,
# and one with KATO 0xFFFFFFFF is not; commands before CC.EN, after a
# reset and after a shutdown get Command Sequence Error and the I/O queue
# is closed; host and subsystem NQNs with newlines and terminal escapes
# are logged escaped, with and without -v.
# tests/common/nvme-host.py is the host (no kernel needed).
. "$(dirname "$0")/../common/lib.sh"

: "${ZONEDNULL_SERVER:=${ZONEDNULL_BUILDDIR:-.}/server/zonednull-server}"
[ -x "$ZONEDNULL_SERVER" ] || fail "no server at $ZONEDNULL_SERVER"
srv=$ZONEDNULL_SERVER
host_py="/usr/bin/python3 $(dirname "$0")/../common/nvme-host.py"

for bad in 0 65536 x 44x -1 ''; do
  if "$srv" -f -U "$tmpdir/bad.sock" --nvme="$bad" size=8 zone_size=1 \
       2>"$tmpdir/err"; then
    fail "--nvme='$bad' accepted"
  fi
  grep -qF -- "--nvme '$bad': a port number must be from 1 to 65535" \
    "$tmpdir/err" || fail "--nvme='$bad': $(cat "$tmpdir/err")"
done
"$srv" -f -U "$tmpdir/bad.sock" --nvme-allow-host=nqn.x size=8 zone_size=1 \
  2>"$tmpdir/err" && fail "--nvme-allow-host without --nvme accepted"
grep -qF -- "--nvme-allow-host needs --nvme" "$tmpdir/err" ||
  fail "--nvme-allow-host alone: $(cat "$tmpdir/err")"
"$srv" -f -U "$tmpdir/bad.sock" --nvme --tls=require --tls-psk=/dev/null \
  size=8 zone_size=1 2>"$tmpdir/err" &&
  fail "--nvme with --tls=require and no NVMe/TCP keys accepted"
grep -qF -- "--nvme with --tls=require needs the hosts' TLS keys" \
  "$tmpdir/err" || fail "--nvme --tls=require: $(cat "$tmpdir/err")"
"$srv" --help | grep -q -- '--nvme\[=PORT\]' || fail "--help lacks --nvme"
"$srv" --help | grep -q -- '--nvme-allow-host' ||
  fail "--help lacks --nvme-allow-host"

# A port nobody listens on now (a race with other programs is harmless:
# the server then fails to start and says so).
free_port () {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# What ZNS cannot express is refused, naming the key.
port=$(free_port)
"$srv" -f -U "$tmpdir/bad.sock" --nvme="$port" size=8 zone_size=1 \
  zone_nr_conv=1 2>"$tmpdir/err" && fail "conventional zones accepted"
grep -q "zone_nr_conv" "$tmpdir/err" || fail "zone_nr_conv: $(cat "$tmpdir/err")"
"$srv" -f -U "$tmpdir/bad.sock" --nvme="$port" size=9 zone_size=2 \
  2>"$tmpdir/err" && fail "a smaller last zone accepted"
grep -q "size" "$tmpdir/err" || fail "runt zone: $(cat "$tmpdir/err")"
# Without --nvme, both stay as they were.
ZONEDNULL_TARGET=server
start_server conv zone_nr_conv=1 size=8 zone_size=1
stop_server "$pid"

# 3 s: room for the handshakes of the well-behaved hosts on a loaded machine.
start_server nvme --nvme="$port" -i 127.0.0.1 --timeout=3 size=64 zone_size=8 \
  zone_max_open=2 memory_backed=1
nqn="nqn.2026-12.org.zonednull:$(hostname | tr -cd 'A-Za-z0-9.-' | cut -c1-64):$port"
grep -qF "NVMe/TCP on 127.0.0.1 port $port: subsystem $nqn, namespaces 1-1" \
  "$tmpdir/nvme.log" || fail "no NQN shown: $(cat "$tmpdir/nvme.log")"

$host_py 127.0.0.1 "$port" ic >"$tmpdir/out" 2>&1 || fail "ICReq: $(cat "$tmpdir/out")"
grep -q "^maxh2cdata 131072" "$tmpdir/out" || fail "ICResp: $(cat "$tmpdir/out")"
$host_py 127.0.0.1 "$port" discover >"$tmpdir/out" 2>&1 ||
  fail "discovery: $(cat "$tmpdir/out")"
grep -qF "$nqn subtype 2 127.0.0.1 $port" "$tmpdir/out" ||
  fail "discovery log: $(cat "$tmpdir/out")"
$host_py 127.0.0.1 "$port" smoke "$nqn" >"$tmpdir/out" 2>&1 ||
  fail "admin and I/O queues: $(cat "$tmpdir/out")"
grep -q "^append status 0x0 lba 128$" "$tmpdir/out" ||
  fail "zone append: $(cat "$tmpdir/out")"
# A failing command leaves an entry naming its field (CNS: byte 40).
$host_py 127.0.0.1 "$port" error-log "$nqn" >"$tmpdir/out" 2>&1 ||
  fail "error log: $(cat "$tmpdir/out")"
grep -q "^count 1 sqid 0 status 0x4002 location 40$" "$tmpdir/out" ||
  fail "error log entry: $(cat "$tmpdir/out")"
# NBD goes on beside it.
"$NBDINFO" --size "$uri" >"$tmpdir/out" 2>&1 || fail "NBD: $(cat "$tmpdir/out")"
[ "$(cat "$tmpdir/out")" = $((64 << 20)) ] || fail "NBD size: $(cat "$tmpdir/out")"
$host_py 127.0.0.1 "$port" stall >"$tmpdir/out" 2>&1 ||
  fail "handshake timeout: $(cat "$tmpdir/out")"
$host_py 127.0.0.1 "$port" keepalive "$nqn" >"$tmpdir/out" 2>&1 ||
  fail "keep-alive: $(cat "$tmpdir/out")"
# KATO 0xFFFFFFFF (Connect, Set Features) is kept, not wrapped round to
# a second: the controllers still answer after 3 s of silence.
$host_py 127.0.0.1 "$port" kato "$nqn" >"$tmpdir/out" 2>&1 ||
  fail "KATO 0xFFFFFFFF: $(cat "$tmpdir/out")"
grep -q "^alive$" "$tmpdir/out" || fail "KATO 0xFFFFFFFF: $(cat "$tmpdir/out")"
# CC.EN and CC.SHN: Command Sequence Error before CC.EN and after a reset
# or a shutdown, which close the I/O queue.
$host_py 127.0.0.1 "$port" enable "$nqn" >"$tmpdir/out" 2>&1 ||
  fail "CC.EN and CC.SHN: $(cat "$tmpdir/out")"
grep -q "^shutdown: " "$tmpdir/out" || fail "CC.SHN: $(cat "$tmpdir/out")"
stop_server "$pid"
grep -q "keep-alive timeout" "$tmpdir/nvme.log" ||
  fail "no keep-alive message: $(cat "$tmpdir/nvme.log")"

# Through the scheduler with held completions (irqmode=2), pipelined
# writes and a volatile cache (flushes).
port=$(free_port)
start_server timed --nvme="$port" -i 127.0.0.1 size=64 zone_size=8 \
  memory_backed=1 cache_size=4 irqmode=2 completion_nsec=200000 \
  pipeline_zoned_writes=1 hw_queue_depth=4
nqn="nqn.2026-12.org.zonednull:$(hostname | tr -cd 'A-Za-z0-9.-' | cut -c1-64):$port"
$host_py 127.0.0.1 "$port" smoke "$nqn" >"$tmpdir/out" 2>&1 ||
  fail "irqmode=2: $(cat "$tmpdir/out")"
grep -q "^ok" "$tmpdir/out" || fail "irqmode=2: $(cat "$tmpdir/out")"
stop_server "$pid"

port=$(free_port)
start_server allow --nvme="$port" -i 127.0.0.1 \
  --nvme-allow-host=nqn.2014-08.org.example:allowed size=8 zone_size=1
nqn="nqn.2026-12.org.zonednull:$(hostname | tr -cd 'A-Za-z0-9.-' | cut -c1-64):$port"
$host_py 127.0.0.1 "$port" connect "$nqn" nqn.2014-08.org.example:other \
  >"$tmpdir/out" 2>&1 || fail "connect: $(cat "$tmpdir/out")"
[ "$(cat "$tmpdir/out")" = "0x4184 0x10200" ] ||
  fail "another host was not refused with Connect Invalid Host: $(cat "$tmpdir/out")"
$host_py 127.0.0.1 "$port" connect "$nqn" nqn.2014-08.org.example:allowed \
  >"$tmpdir/out" 2>&1 || fail "connect: $(cat "$tmpdir/out")"
case $(cat "$tmpdir/out") in "0x0 "*) ;; *) fail "the allowed host was refused: $(cat "$tmpdir/out")" ;; esac
stop_server "$pid"
grep -q "is not allowed (--nvme-allow-host)" "$tmpdir/allow.log" ||
  fail "no refusal logged: $(cat "$tmpdir/allow.log")"

# NQNs chosen to forge log lines: a newline, then a line of their own
# with terminal escapes.  Logged escaped, with and without -v, on the
# refusals and on -v's controller lines.
evil_host=$(printf 'nqn.2014-08.org.example:evil\nFORGED host line\033[2J\033]0;x\007')
evil_sub=$(printf 'nqn.2014-08.org.example:no\nFORGED subsystem line\033[31m')
for v in quiet verbose; do
  port=$(free_port)
  nqn="nqn.2026-12.org.zonednull:$(hostname | tr -cd 'A-Za-z0-9.-' | cut -c1-64):$port"
  if [ $v = quiet ]; then
    start_server escape-$v --nvme="$port" -i 127.0.0.1 \
      --nvme-allow-host=nqn.2014-08.org.example:allowed size=8 zone_size=1
  else
    start_server escape-$v -v --nvme="$port" -i 127.0.0.1 size=8 zone_size=1
  fi
  $host_py 127.0.0.1 "$port" connect "$evil_sub" "$evil_host" >"$tmpdir/out" 2>&1 ||
    fail "connect: $(cat "$tmpdir/out")"
  $host_py 127.0.0.1 "$port" connect "$nqn" "$evil_host" >"$tmpdir/out" 2>&1 ||
    fail "connect: $(cat "$tmpdir/out")"
  stop_server "$pid"
  log=$tmpdir/escape-$v.log
  grep -qF 'nqn.2014-08.org.example:evil\nFORGED host line\x1b[2J\x1b]0;x\x07' "$log" ||
    fail "$v: the host NQN is not logged escaped: $(cat "$log")"
  grep -qF 'nqn.2014-08.org.example:no\nFORGED subsystem line\x1b[31m' "$log" ||
    fail "$v: the subsystem NQN is not logged escaped: $(cat "$log")"
  if grep -q '^FORGED' "$log"; then fail "$v: a forged log line: $(cat "$log")"; fi
  if LC_ALL=C grep -q '[^ -~]' "$log"; then
    fail "$v: control bytes in the log: $(od -c "$log" | head -n 20)"
  fi
done
grep -q 'controller 1: .* for nqn\.2014-08\.org\.example:evil\\nFORGED' \
  "$tmpdir/escape-verbose.log" ||
  fail "-v: no controller line: $(cat "$tmpdir/escape-verbose.log")"
exit 0
