# SPDX-License-Identifier: BSD-3-Clause
# Helpers for the backing_dir tests over both NBD servers; source it, do
# not run it.  On top of lib.sh: ZONEDNULL_SERVER and ZONEDNULL_CLI.
# shellcheck shell=sh
. "$(dirname "$0")/../common/lib.sh"

need_nbdsh

: "${ZONEDNULL_SERVER:=${ZONEDNULL_BUILDDIR:-.}/server/zonednull-server}"
[ -x "$ZONEDNULL_SERVER" ] || fail "no server at $ZONEDNULL_SERVER"
: "${ZONEDNULL_CLI:=${ZONEDNULL_BUILDDIR:-.}/cli/zonednull}"
[ -x "$ZONEDNULL_CLI" ] || fail "no CLI at $ZONEDNULL_CLI"
export ZONEDNULL_SERVER
zn=$ZONEDNULL_CLI
files_py=$(dirname "$0")/../common/files.py

# py COMMAND ARG...: tests/common/files.py (which see); fails the test on error.
py () {
  /usr/bin/python3 "$files_py" "$@" || fail "files.py $*"
}

# zn_ok ARG...: the CLI must succeed; its output is in $tmpdir/zn.out.
zn_ok () {
  "$zn" "$@" >"$tmpdir/zn.out" 2>"$tmpdir/zn.err" ||
    fail "zonednull $*: $(cat "$tmpdir/zn.err")"
}

# start_as KIND NAME KEY=VALUE...: start_server with nbdkit and the plugin
# (KIND nbdkit) or zonednull-server (KIND server).  Sets $pid, $sock and
# $dev, the URI of nullb0.
start_as () {
  ZONEDNULL_TARGET=$1
  shift
  start_server "$@"
  # shellcheck disable=SC2034 # used by the tests
  dev="nbd+unix:///nullb0?socket=$sock"
}

# kill_server PID: SIGKILL, as a crash: nothing is written back.
kill_server () {
  kill -KILL "$1" || fail "server $1 is not running"
  wait "$1" 2>/dev/null
  forget_server "$1"
}

# refused_start KIND TEXT KEY=VALUE...: the server must exit at start,
# with a status other than 0, saying TEXT (a fixed string).
refused_start () {
  rkind=$1 text=$2
  shift 2
  rm -f "$tmpdir/refused.sock"
  # A server that wrongly starts serves until timeout stops it (124).
  if [ "$rkind" = server ]; then
    timeout 20 "$ZONEDNULL_SERVER" -f -U "$tmpdir/refused.sock" "$@" \
      </dev/null 2>"$tmpdir/refused.err"
  else
    timeout 20 env ${ZONEDNULL_PRELOAD:+LD_PRELOAD="$ZONEDNULL_PRELOAD"} \
      ${ZONEDNULL_PRELOAD:+ASAN_OPTIONS=detect_leaks=0} \
      "$NBDKIT" -f -U "$tmpdir/refused.sock" "$ZONEDNULL_PLUGIN" "$@" \
      </dev/null 2>"$tmpdir/refused.err"
  fi
  rc=$?
  if [ "$rc" -eq 124 ]; then
    fail "$rkind $* did not exit within 20 s: it serves, or hangs"
  fi
  if [ "$rc" -eq 0 ]; then
    fail "$rkind $* started (exit $rc)"
  fi
  grep -qF -- "$text" "$tmpdir/refused.err" ||
    fail "$rkind $*: message lacks '$text': $(cat "$tmpdir/refused.err")"
}

# dir_state DIR: every file of DIR (recursively) with its size and md5,
# to show that a refused start changed nothing.
dir_state () {
  (cd "$1" && find . -type f | LC_ALL=C sort | while read -r f; do
     printf '%s %s %s\n' "$f" "$(stat -c %s "$f")" \
       "$(md5sum <"$f" | cut -d' ' -f1)"
   done)
}

# other KIND: the other server.
other () {
  if [ "$1" = server ]; then echo nbdkit; else echo server; fi
}
