#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# zonednull-server under systemd's socket activation (what
# zonednull-server@.socket does), through systemd-socket-activate: the
# server takes the listening socket of LISTEN_FDS and serves the data
# and control exports on it, leaves systemd's socket file alone when it
# stops, and refuses -U, -p, more than one socket, a descriptor 3 that
# is not a listening socket, and one that is not a stream, each by name.
. "$(dirname "$0")/../common/lib.sh"

: "${ZONEDNULL_SERVER:=${ZONEDNULL_BUILDDIR:-.}/server/zonednull-server}"
[ -x "$ZONEDNULL_SERVER" ] || fail "no server at $ZONEDNULL_SERVER"
command -v systemd-socket-activate >/dev/null ||
  skip "systemd-socket-activate missing (package systemd)"

sock=$tmpdir/activated.sock
pidfile=$tmpdir/activated.pid
# It binds the socket, then at the first connection execs the server in
# its own process, so that $! is the server's PID and LISTEN_PID matches.
systemd-socket-activate -l "$sock" \
  "$ZONEDNULL_SERVER" -f -P "$pidfile" size=64 zone_size=8 \
  </dev/null 2>"$tmpdir/activated.log" &
pid=$!
server_pids="$server_pids $pid"
tries=0
until [ -S "$sock" ]; do
  kill -0 "$pid" 2>/dev/null || { cat "$tmpdir/activated.log" >&2; fail "systemd-socket-activate exited"; }
  tries=$((tries + 1)); [ "$tries" -le 600 ] || fail "no socket"
  sleep 0.1
done
uri="nbd+unix:///?socket=$sock"
# A server that ignores the socket leaves the connection unanswered: the
# bound is there so that the test fails rather than hangs.
size=$(timeout 120 "$NBDINFO" --size "$uri") || { cat "$tmpdir/activated.log" >&2; fail "nbdinfo on the activated socket"; }
[ "$size" = 67108864 ] || fail "size $size, want 67108864"
[ "$(cat "$pidfile")" = "$pid" ] || fail "pidfile $(cat "$pidfile"), want $pid (LISTEN_PID)"
zones=$("$ZONEDNULL_CLI" report "$uri" | grep -c 'start:') ||
  fail "zonednull report on the activated socket"
[ "$zones" = 8 ] || fail "$zones zones reported, want 8"

kill "$pid"
wait "$pid" 2>/dev/null
server_pids=
[ -S "$sock" ] || fail "the server removed the socket systemd made"
[ ! -e "$pidfile" ] || fail "the pidfile is left"

# refused EXPECTED FD-3-REDIRECTION ENV... -- ARG...: the server, given
# descriptor 3 and the activation variables for its own PID, exits 1
# with EXPECTED in its message.
refused () {
  want=$1 redir=$2 fds=$3
  shift 3
  # exec keeps the shell's PID, which LISTEN_PID names.
  sh -c 'LISTEN_PID=$$ LISTEN_FDS='"$fds"' exec "$@" '"$redir" sh \
    "$ZONEDNULL_SERVER" -f "$@" size=64 zone_size=8 </dev/null \
    >"$tmpdir/refused.out" 2>&1
  rc=$?
  [ "$rc" = 1 ] || fail "'$*' with LISTEN_FDS=$fds exited $rc, want 1: $(cat "$tmpdir/refused.out")"
  grep -q -e "$want" "$tmpdir/refused.out" ||
    fail "'$*' with LISTEN_FDS=$fds: '$(cat "$tmpdir/refused.out")' does not say '$want'"
}
refused '^zonednull-server: -U: the NBD socket comes from systemd' '3</dev/null' 1 -U "$tmpdir/x.sock"
refused '^zonednull-server: -p: the NBD socket comes from systemd' '3</dev/null' 1 -p 10999
refused '^zonednull-server: LISTEN_FDS=2: systemd must pass exactly one socket' '3</dev/null 4</dev/null' 2
refused '^zonednull-server: fd 3 from systemd (LISTEN_FDS) is not a listening socket' '3</dev/null' 1
[ ! -e "$tmpdir/x.sock" ] || fail "-U made a socket beside systemd's"
# A listening socket of records (ListenSequentialPacket=) is a listening
# socket all the same: the type is what must be refused.
# timeout: a server that takes the socket would serve it for ever.
timeout 60 /usr/bin/python3 -c '
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(sys.argv[1])
s.listen()
os.dup2(s.fileno(), 3)
os.set_inheritable(3, True)      # dup2 to itself keeps close-on-exec
os.environ.update(LISTEN_PID=str(os.getpid()), LISTEN_FDS="1")
os.execv(sys.argv[2], sys.argv[2:])
' "$tmpdir/seqpacket.sock" "$ZONEDNULL_SERVER" -f size=64 zone_size=8 \
  </dev/null >"$tmpdir/refused.out" 2>&1
rc=$?
[ "$rc" = 1 ] && grep -q '^zonednull-server: fd 3 from systemd (LISTEN_FDS) is a SOCK_SEQPACKET socket, not SOCK_STREAM' "$tmpdir/refused.out" ||
  fail "a SOCK_SEQPACKET listener: exit $rc, '$(cat "$tmpdir/refused.out")'"
echo "$0: ok"
