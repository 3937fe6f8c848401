# SPDX-License-Identifier: BSD-3-Clause
# Shared helpers for the plugin's shell tests; source it, do not run it.
#
# Environment (exported by `make check`): ZONEDNULL_PLUGIN, the built
# plugin; ZONEDNULL_PRELOAD, sanitizer runtimes to preload into nbdkit
# (empty unless built with --enable-sanitizers); NBDKIT and NBDINFO.

: "${NBDKIT:=nbdkit}"
: "${NBDINFO:=nbdinfo}"
export NBDKIT NBDINFO

fail () {
  echo "$0: FAIL: $*" >&2
  exit 1
}

skip () {
  echo "$0: SKIP: $*" >&2
  exit 77
}

if [ -z "${ZONEDNULL_PLUGIN:-}" ]; then
  skip "ZONEDNULL_PLUGIN is not set; run through 'make check'"
fi
[ -f "$ZONEDNULL_PLUGIN" ] || fail "no plugin at $ZONEDNULL_PLUGIN"

tmpdir=$(mktemp -d "${TMPDIR:-/tmp}/zonednull-test.XXXXXX") ||
  fail "mktemp -d failed"
# PIDs of the servers started by start_server and not yet stopped.
server_pids=

cleanup () {
  for pid in $server_pids; do
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  rm -rf "$tmpdir"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

# need_nbdsh: nbdsh and python3 must be Debian's (pyenv's python lacks
# the nbd module), so /usr/bin goes first in PATH.
need_nbdsh () {
  PATH=/usr/bin:$PATH
  export PATH
  /usr/bin/python3 -c 'import nbd' 2>/dev/null ||
    skip "python3-libnbd is not installed (nbdsh needs it)"
}

# exec_nbdkit ARG...: replaces the (sub)shell by nbdkit.  nbdkit is not
# built with the sanitizers, so their runtimes are preloaded for a
# sanitized plugin to load.  Run it in a subshell or in the background.
exec_nbdkit () {
  if [ -n "${ZONEDNULL_PRELOAD:-}" ]; then
    LD_PRELOAD=$ZONEDNULL_PRELOAD
    ASAN_OPTIONS=detect_leaks=0
    export LD_PRELOAD ASAN_OPTIONS
  fi
  exec "$NBDKIT" "$@"
}

# run_nbdkit ARG...: nbdkit in the foreground; returns its exit status.
run_nbdkit () {
  (exec_nbdkit "$@")
}

# Commands run by nbdkit --run must not inherit the sanitizer preload.
clean_env="env -u LD_PRELOAD -u ASAN_OPTIONS"

# nbdinfo_of 'NBDINFO-OPTIONS' KEY=VALUE...: nbdinfo's output for a
# server started for this one query.
nbdinfo_of () {
  opts=$1
  shift
  run_nbdkit -U - "$ZONEDNULL_PLUGIN" "$@" \
    --run "$clean_env \"\$NBDINFO\" $opts \"\$uri\""
}

# start_server NAME [-r] KEY=VALUE...: serves the device on
# $tmpdir/NAME.sock and sets $uri and $pid.  Its log is $tmpdir/NAME.log.
# The server is nbdkit with the plugin, or zonednull-server when
# ZONEDNULL_TARGET=server: tests written for one run against both; its
# event loops are $ZONEDNULL_SERVER_THREADS when set (tests/local.mk).
start_server () {
  name=$1
  shift
  sock=$tmpdir/$name.sock
  pidfile=$tmpdir/$name.pid
  # What an earlier server of this name left (nbdkit leaves its socket)
  # would pass for ours, or stop ours from listening.
  rm -f "$pidfile" "$sock"
  if [ "${ZONEDNULL_TARGET:-nbdkit}" = server ]; then
    "$ZONEDNULL_SERVER" -f --exit-with-parent -U "$sock" -P "$pidfile" \
      ${ZONEDNULL_SERVER_THREADS:+--threads="$ZONEDNULL_SERVER_THREADS"} \
      "$@" </dev/null 2>"$tmpdir/$name.log" &
    pid=$!
    await_server "zonednull-server $*"
    return
  fi
  # In the background the function's subshell execs nbdkit, so $! is
  # nbdkit's PID and this shell is its parent for --exit-with-parent.
  exec_nbdkit -f --exit-with-parent -U "$sock" -P "$pidfile" \
    "$ZONEDNULL_PLUGIN" "$@" </dev/null 2>"$tmpdir/$name.log" &
  pid=$!
  await_server "nbdkit $*"
}

# await_server WHAT: waits for the server just started in the background
# ($pid, $pidfile, $sock, log $tmpdir/$name.log) to listen, which it shows
# by writing its pidfile; no fixed sleep.  Sets $uri.
await_server () {
  server_pids="$server_pids $pid"
  tries=0
  while [ ! -s "$pidfile" ] || [ ! -S "$sock" ]; do
    if ! kill -0 "$pid" 2>/dev/null; then
      cat "$tmpdir/$name.log" >&2
      fail "$1 exited at startup"
    fi
    tries=$((tries + 1))
    [ "$tries" -le 600 ] || fail "$1 did not start"
    sleep 0.1
  done
  [ "$(cat "$pidfile")" = "$pid" ] || fail "pidfile does not hold $pid"
  # shellcheck disable=SC2034 # used by the tests
  uri="nbd+unix:///?socket=$sock"
}

# stop_server PID: stops a server started by start_server.  A server that
# has not exited 30 s after SIGTERM is killed and the test fails, so that
# a hang at shutdown is reported rather than stalling the suite.
stop_server () {
  kill "$1" || fail "server $1 is not running"
  tries=0
  # A child that has exited stays a zombie until waited for.
  while kill -0 "$1" 2>/dev/null; do
    case $(ps -o stat= -p "$1") in Z*) break ;; esac
    tries=$((tries + 1))
    if [ "$tries" -gt 300 ]; then
      kill -KILL "$1" 2>/dev/null
      fail "server $1 did not exit within 30 s of SIGTERM"
    fi
    sleep 0.1
  done
  wait "$1" 2>/dev/null
  forget_server "$1"
}

# forget_server PID: the cleanup no longer stops PID, which has ended.
forget_server () {
  rest=
  for p in $server_pids; do
    [ "$p" = "$1" ] || rest="$rest $p"
  done
  server_pids=$rest
}
