#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# zonednull-server --stats (issue 36): one line on stderr at SIGUSR1 and
# at exit.  Over NBD (a Unix socket) and NVMe/TCP, a client that sends
# its requests one at a time gets exactly them counted (NBD: the
# transmission's requests; NVMe/TCP: every command, the queues' Connects
# and properties included), with at least one recv and one send each
# (over TLS too), and their times from arrival to reply add up to more
# than nothing and to no more than the client took, the requests being
# one at a time.
# With irqmode=2 each reply is held for completion_nsec, so the sum is at
# least that per request: replies are timed when they go, not when they
# are queued.  SIGUSR1 leaves the server serving; the exit line after
# SIGTERM counts the one request after it and no other.  Without --stats
# there is no line.  With --threads=2 each loop prints its own line,
# loop=K, and counts the requests of the connections it served: loop 0
# accepts and keeps the first connection, loop 1 gets the second.
. "$(dirname "$0")/../common/lib.sh"

need_nbdsh
: "${ZONEDNULL_SERVER:=${ZONEDNULL_BUILDDIR:-.}/server/zonednull-server}"
[ -x "$ZONEDNULL_SERVER" ] || fail "no server at $ZONEDNULL_SERVER"
host_py="/usr/bin/python3 $(dirname "$0")/../common/nvme-host.py"
ZONEDNULL_TARGET=server
writes=7
reads=4

"$ZONEDNULL_SERVER" --help | grep -q -- '--stats' || fail "--help lacks --stats"
"$ZONEDNULL_SERVER" -f -U "$tmpdir/bad.sock" --stats=1 size=8 zone_size=1 \
  2>"$tmpdir/err" && fail "--stats=1 accepted"
grep -q "stats" "$tmpdir/err" || fail "--stats=1: $(cat "$tmpdir/err")"

now_ns () {
  date +%s%N
}

# stats_lines LOG N: waits for the server to have printed N stats lines.
stats_lines () {
  tries=0
  while [ "$(grep -c ': stats: ' "$1")" -lt "$2" ]; do
    tries=$((tries + 1))
    [ "$tries" -le 300 ] || fail "no stats line $2 in $1: $(cat "$1")"
    sleep 0.1
  done
}

# key LINE KEY: the value of KEY in a stats line.
key () {
  v=$(printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p")
  [ -n "$v" ] || fail "no $2 in: $1"
  echo "$v"
}

# check LINE REQUESTS ELAPSED_NS MIN_NS WHAT: the line's counts.
check () {
  line=$1 want=$2 elapsed=$3 min=$4 what=$5
  case $line in
    "zonednull-server: stats: requests="*) ;;
    *) fail "$what: not a stats line: $line" ;;
  esac
  [ "$(key "$line" requests)" = "$want" ] ||
    fail "$what: requests is not $want: $line"
  for k in recv_calls send_calls; do
    [ "$(key "$line" $k)" -ge "$want" ] || fail "$what: $k < $want: $line"
  done
  for k in loop_iterations sleeps recv_bytes send_bytes reply_ns_max \
           reply_ns_p50; do
    [ "$(key "$line" $k)" -gt 0 ] || fail "$what: $k is 0: $line"
  done
  sum=$(key "$line" reply_ns_sum)
  [ "$sum" -gt 0 ] || fail "$what: reply_ns_sum is 0: $line"
  [ "$sum" -le "$elapsed" ] ||
    fail "$what: reply_ns_sum above the client's $elapsed ns: $line"
  [ "$sum" -ge "$min" ] || fail "$what: reply_ns_sum below $min ns: $line"
  [ "$(key "$line" reply_ns_max)" -le "$sum" ] ||
    fail "$what: reply_ns_max above the sum: $line"
  [ "$(key "$line" reply_ns_p50)" -le "$(key "$line" reply_ns_max)" ] ||
    fail "$what: reply_ns_p50 above the max: $line"
  [ "$(key "$line" loop_iterations)" = \
    "$(($(key "$line" sleeps) + $(key "$line" busy_polls)))" ] ||
    fail "$what: sleeps and busy polls are not the loop's iterations: $line"
}

# nbd_client SCRIPT: nbdsh on the last server started, over TLS with
# alice's key when $tls is set.
nbd_client () {
  if [ -n "$tls" ]; then
    nbdsh -c "h.set_uri_allow_local_file(True); h.connect_uri('nbds+unix://alice@/?socket=$sock&tls-psk-file=$tmpdir/keys.psk')" -c "$1"
  else
    nbdsh -u "$uri" -c "$1"
  fi
}

# nbd_run NAME MIN_NS OPTION|KEY=VALUE...: the NBD client, SIGUSR1,
# SIGTERM.
nbd_run () {
  run=$1 min=$2
  shift 2
  start_server "$run" --stats --threads=1 "$@"
  t0=$(now_ns)
  nbd_client "
for i in range($writes):
    h.pwrite(bytes([i]) * 4096, i * 4096)
for i in range($reads):
    assert h.pread(4096, i * 4096) == bytes([i]) * 4096
" || fail "$run: nbdsh"
  elapsed=$(($(now_ns) - t0))
  kill -USR1 "$pid"
  stats_lines "$tmpdir/$run.log" 1
  first=$(grep ': stats: ' "$tmpdir/$run.log")
  check "$first" $((writes + reads)) "$elapsed" "$min" "$run, SIGUSR1"
  # Still serving, and counting.
  nbd_client 'h.pread(512, 0)' || fail "$run: no reply after SIGUSR1"
  stop_server "$pid"
  stats_lines "$tmpdir/$run.log" 2
  last=$(grep ': stats: ' "$tmpdir/$run.log" | tail -n 1)
  [ "$(key "$last" requests)" = $((writes + reads + 1)) ] ||
    fail "$run: exit line: $last"
}

tls=
nbd_run nbd 1 size=64 zone_size=8 memory_backed=1
# 2 ms per request, past the time of a request alone on a loaded machine
# (a lower bound, so no threshold on speed).
nbd_run nbd-held $(((writes + reads) * 2000000)) size=64 zone_size=8 \
  memory_backed=1 irqmode=2 completion_nsec=2000000
# Over TLS the socket's records are counted, by the TLS layer's calls.
if command -v psktool >/dev/null; then
  psktool -u alice -p "$tmpdir/keys.psk" >/dev/null || fail "psktool"
  tls=1
  nbd_run nbd-tls 1 --tls=require --tls-psk="$tmpdir/keys.psk" size=64 \
    zone_size=8 memory_backed=1
  tls=
fi

free_port () {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# nvme_run NAME KEY=VALUE...: the NVMe/TCP host, SIGUSR1, SIGTERM; the
# reset and the I/O commands are held with irqmode=2.
nvme_run () {
  run=$1 min=$2
  shift 2
  port=$(free_port)
  start_server "$run" --stats --threads=1 --nvme="$port" -i 127.0.0.1 "$@"
  nqn=$(sed -n 's/.*: subsystem \([^,]*\), namespaces.*/\1/p' \
          "$tmpdir/$run.log")
  [ -n "$nqn" ] || fail "$run: no NQN: $(cat "$tmpdir/$run.log")"
  t0=$(now_ns)
  $host_py 127.0.0.1 "$port" qd1 "$nqn" $writes $reads >"$tmpdir/out" 2>&1 ||
    fail "$run: host: $(cat "$tmpdir/out")"
  elapsed=$(($(now_ns) - t0))
  # Admin Connect, CAP, CC, CSTS, I/O Connect, the reset, the I/O.
  want=$((6 + writes + reads))
  grep -qx "commands $want" "$tmpdir/out" ||
    fail "$run: the host sent: $(cat "$tmpdir/out")"
  kill -USR1 "$pid"
  stats_lines "$tmpdir/$run.log" 1
  check "$(grep ': stats: ' "$tmpdir/$run.log")" "$want" "$elapsed" "$min" \
    "$run, SIGUSR1"
  stop_server "$pid"
  stats_lines "$tmpdir/$run.log" 2
  last=$(grep ': stats: ' "$tmpdir/$run.log" | tail -n 1)
  [ "$(key "$last" requests)" = "$want" ] || fail "$run: exit line: $last"
}

nvme_run nvme 1 size=64 zone_size=8 memory_backed=1
nvme_run nvme-held $(((1 + writes + reads) * 2000000)) size=64 zone_size=8 \
  memory_backed=1 irqmode=2 completion_nsec=2000000

# Two loops: a line each, the connections handed out in turn.
start_server loops --stats --threads=2 size=64 zone_size=8 memory_backed=1
nbdsh -u "$uri" -c 'for i in range(3): h.pread(512, 0)' || fail "loops: nbdsh 1"
nbdsh -u "$uri" -c 'for i in range(5): h.pread(512, 0)' || fail "loops: nbdsh 2"
kill -USR1 "$pid"
stats_lines "$tmpdir/loops.log" 2
for want in "0 3" "1 5"; do
  set -- $want
  line=$(grep ": stats: .* loop=$1\$" "$tmpdir/loops.log") ||
    fail "loops: no line of loop $1: $(cat "$tmpdir/loops.log")"
  [ "$(key "$line" requests)" = "$2" ] ||
    fail "loops: loop $1 did not serve its connection's $2 requests: $line"
done
stop_server "$pid"

# Without --stats, no line.
start_server plain size=8 zone_size=1
nbdsh -u "$uri" -c 'h.pread(512, 0)' || fail "plain: nbdsh"
stop_server "$pid"
grep -q ': stats: ' "$tmpdir/plain.log" && fail "a stats line without --stats"
exit 0
