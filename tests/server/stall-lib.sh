# SPDX-License-Identifier: BSD-3-Clause
# What the storage-thread tests share (test-server-offload.sh over NBD,
# test-server-offload-nvme.sh over NVMe/TCP): zonednull-server under the
# LD_PRELOAD shim stall-io.c, which holds the fdatasync and the reads of
# nullb0's zone files in $d while the file $flag exists, and marks each
# held call with $flag.CALL.  Sourced after tests/common/lib.sh.

: "${ZONEDNULL_SERVER:=${ZONEDNULL_BUILDDIR:-.}/server/zonednull-server}"
[ -x "$ZONEDNULL_SERVER" ] || fail "no server at $ZONEDNULL_SERVER"
shim=${ZONEDNULL_BUILDDIR:-.}/tests/server/.libs/stall-io.so
[ -f "$shim" ] || fail "no shim at $shim"

d=$tmpdir/dir
flag=$tmpdir/stall
real_server=$ZONEDNULL_SERVER
cat >"$tmpdir/server" <<EOF2
#!/bin/sh
LD_PRELOAD="${ZONEDNULL_PRELOAD:+$ZONEDNULL_PRELOAD }$shim" \
ZN_STALL_DIR="$d/nullb0" ZN_STALL_FLAG="$flag" exec "$real_server" "\$@"
EOF2
chmod +x "$tmpdir/server"
ZONEDNULL_SERVER=$tmpdir/server
ZONEDNULL_TARGET=server

# await_file FILE WHAT: waits for the shim's mark that WHAT is held.
await_file () {
  tries=0
  until [ -e "$1" ]; do
    tries=$((tries + 1))
    [ "$tries" -le 600 ] || fail "$2 was never held: $(cat "$tmpdir/srv.log")"
    sleep 0.1
  done
}

# still_held WHAT PID...: the clients PID... of nullb0 still wait for
# their held requests, after WHAT of nullb1 was answered.
still_held () {
  what=$1
  shift
  for p in "$@"; do
    kill -0 "$p" 2>/dev/null ||
      fail "$what were answered only once nullb0's held flush and read were let go: $(cat "$tmpdir/flusher.out" "$tmpdir/reader.out")"
  done
  [ -e "$flag" ] || fail "the stall ended before $what were answered"
}

# none_synced WHAT FILE...: after WHAT was answered, no zone file of
# nullb0 was synced yet (the shim logs an fdatasync when it returns) and
# the stall still holds; FILE... the held clients' output, for the
# message.
none_synced () {
  what=$1
  shift
  ! grep -q '/cnv-\|/seq-' "$flag.log" 2>/dev/null ||
    fail "$what found no storage thread until nullb0's held flush was let go: $(cat "$flag.log" "$@")"
  [ -e "$flag" ] || fail "the stall ended before $what was answered"
}

# stop_held PID...: SIGTERM to the server $pid with the requests of the
# clients PID... still held on its storage threads: status 0, and no
# memory error.
stop_held () {
  kill -TERM "$pid" || fail "server $pid is not running"
  rm -f "$flag"
  rc=0
  wait "$pid" || rc=$?
  forget_server "$pid"
  [ "$rc" -eq 0 ] ||
    fail "SIGTERM with storage I/O in flight ended the server with status $rc: $(cat "$tmpdir/srv.log")"
  if grep -qE 'AddressSanitizer|runtime error|LeakSanitizer|ThreadSanitizer' "$tmpdir/srv.log"; then
    fail "memory error at a stop with storage I/O in flight: $(cat "$tmpdir/srv.log")"
  fi
  for p in "$@"; do
    wait "$p" 2>/dev/null
  done
}
