#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# backing_dir over both NBD servers: SIGKILL in the middle of a storm of
# writes, zone appends, conventional overwrites, resets and finishes from
# four clients at once, then a restart on the same directory: every write
# the server acknowledged reads back with its data, and every sequential
# zone's write pointer is its start plus the size of its file, and where
# the clients' logs put it (tests/common/files.py storm-client, storm-verify).
#
# Device: 32 zones of 2 MiB, zones 0-3 conventional (one per client);
# each client owns 6 sequential zones and appends to 4 shared ones.
. "$(dirname "$0")/../common/files-lib.sh"

geometry="size=64 zone_size=2 zone_nr_conv=4"
clients="0 1 2 3"

# ZN_CRASH_KINDS: the servers to storm (./run test's ThreadSanitizer
# build has no plugin nbdkit can load).
for kind in ${ZN_CRASH_KINDS:-nbdkit server}; do
  d=$tmpdir/d-$kind
  start_as $kind "$kind" $geometry backing_dir="$d"
  client_pids=
  for c in $clients; do
    first=$((4 + c * 6))
    owned=$first
    for z in 1 2 3 4 5; do owned="$owned,$((first + z))"; done
    /usr/bin/python3 "$files_py" storm-client "$zn" "$dev" \
      "$tmpdir/$kind-client$c.log" "$c" "$c" "$owned" 28,29,30,31 \
      2>"$tmpdir/$kind-client$c.err" &
    client_pids="$client_pids $!"
    eval "client_pid$c=\$!"
  done
  # Kill once every client has had some writes acknowledged (no fixed
  # time: a slow machine only makes the storm longer).
  tries=0
  for c in $clients; do
    # cat: a log not made yet counts 0.
    # shellcheck disable=SC2002
    while [ "$(cat "$tmpdir/$kind-client$c.log" 2>/dev/null |
               grep -c '^A ')" -lt 150 ]; do
      eval "cpid=\$client_pid$c"
      kill -0 "$cpid" 2>/dev/null ||
        fail "$kind: client $c stopped: $(cat "$tmpdir/$kind-client$c.err")"
      tries=$((tries + 1))
      [ "$tries" -le 6000 ] || fail "$kind: client $c acknowledged too little"
      sleep 0.05
    done
  done
  kill_server "$pid"
  for p in $client_pids; do
    wait "$p" || fail "$kind: a client failed: $(cat "$tmpdir/$kind"-client*.err)"
  done
  for c in $clients; do
    grep -q '^A \(write\|over\|append\) ' "$tmpdir/$kind-client$c.log" ||
      fail "$kind: client $c had no write acknowledged"
  done
  for op in write over append reset finish; do
    cat "$tmpdir/$kind"-client*.log | grep -q "^A $op " ||
      fail "$kind: the storm had no $op acknowledged"
  done

  start_as $kind "$kind-again" $geometry backing_dir="$d"
  /usr/bin/python3 "$files_py" storm-verify "$zn" "$dev" "$d" \
    "$tmpdir/$kind"-client0.log "$tmpdir/$kind"-client1.log \
    "$tmpdir/$kind"-client2.log "$tmpdir/$kind"-client3.log \
    >"$tmpdir/verify" 2>&1 ||
    fail "$kind: after SIGKILL and a restart: $(cat "$tmpdir/verify")"
  echo "$kind: $(cat "$tmpdir/verify")"
  stop_server "$pid"
done
