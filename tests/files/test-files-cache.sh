#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# backing_dir with cache_size=8 over both NBD servers: null_blk's volatile
# write cache kept in front of the zone files.  Write A and flush, write B
# without a flush, write C with FUA; then
#   (a) `zonednull power-cycle`, and (b) SIGKILL and a restart, each lose
#       exactly B: A and C read back, the sequential zone B went to has
#       its wp back at the end of A, and what B overwrote in the
#       conventional zone is A's data again;
#   (c) SIGTERM and a restart loses nothing: an orderly stop writes the
#       cache back.
#
# Device: 8 zones of 4 MiB, zones 0 and 1 conventional.
. "$(dirname "$0")/../common/files-lib.sh"

geometry="size=32 zone_size=4 zone_nr_conv=2 cache_size=8"
ZB=4194304                              # bytes
K=1024

# write_abc URI: A in conventional zone 0 and sequential zone 2, flushed;
# B over the second half of A in zone 0 and on from A in zone 2, no flush;
# C with FUA in conventional zone 1 and sequential zone 3.
write_abc () {
  py write "$1" 0 $((64 * K)) 1
  py write "$1" $((2 * ZB)) $((64 * K)) 2 flush
  py write "$1" $((32 * K)) $((64 * K)) 3
  py write "$1" $((2 * ZB + 64 * K)) $((64 * K)) 4
  py write "$1" $((ZB + 8 * K)) $((64 * K)) 5 fua
  py write "$1" $((3 * ZB)) $((64 * K)) 6 fua
  # All of it is there before the loss: reads see the cache.
  check_c "$1"
  py expect "$1" 0 $((32 * K)) 1
  py expect "$1" $((32 * K)) $((64 * K)) 3
  py expect "$1" $((2 * ZB + 64 * K)) $((64 * K)) 4
  wp_is "$1" 2 256
  zn_ok info --json "$1"
  grep -q '"cache_dirty": [1-9]' "$tmpdir/zn.out" ||
    fail "B is not in the cache: $(cat "$tmpdir/zn.out")"
}

check_a () {
  py expect "$1" 0 $((64 * K)) 1
  py expect "$1" $((2 * ZB)) $((64 * K)) 2
}

check_c () {
  py expect "$1" $((ZB + 8 * K)) $((64 * K)) 5
  py expect "$1" $((3 * ZB)) $((64 * K)) 6
  wp_is "$1" 3 128
}

# check_b_lost URI DIR: A and C are there, B is not.
check_b_lost () {
  check_a "$1"
  check_c "$1"
  py expect "$1" $((64 * K)) $((32 * K)) zero
  wp_is "$1" 2 128
  py files "$zn" "$1" "$2"
}

# wp_is URI ZONE SECTORS: the zone's wp is SECTORS past its start.
wp_is () {
  zn_ok report --json "$1"
  /usr/bin/python3 - "$tmpdir/zn.out" "$2" "$3" <<'EOF' || fail "zone $2's wp"
import json, sys
z = json.load(open(sys.argv[1]))["zones"][int(sys.argv[2])]
if z["wp"] - z["start"] != int(sys.argv[3]):
    sys.exit("zone %s: wp %d sectors past its start, expected %s"
             % (sys.argv[2], z["wp"] - z["start"], sys.argv[3]))
EOF
}

for kind in nbdkit server; do
  # (a) a power cycle
  d=$tmpdir/a-$kind
  start_as $kind "a-$kind" $geometry backing_dir="$d"
  write_abc "$dev"
  zn_ok power-cycle "$dev"
  check_b_lost "$dev" "$d"
  stop_server "$pid"
  start_as $kind "a-$kind-again" $geometry backing_dir="$d"
  check_b_lost "$dev" "$d"
  stop_server "$pid"

  # (b) SIGKILL and a restart, by this server and then by the other
  d=$tmpdir/b-$kind
  start_as $kind "b-$kind" $geometry backing_dir="$d"
  write_abc "$dev"
  kill_server "$pid"
  start_as $kind "b-$kind-again" $geometry backing_dir="$d"
  check_b_lost "$dev" "$d"
  stop_server "$pid"
  start_as "$(other $kind)" "b-$kind-other" $geometry backing_dir="$d"
  check_b_lost "$dev" "$d"
  stop_server "$pid"

  # (c) SIGTERM and a restart
  d=$tmpdir/c-$kind
  start_as $kind "c-$kind" $geometry backing_dir="$d"
  write_abc "$dev"
  stop_server "$pid"
  start_as $kind "c-$kind-again" $geometry backing_dir="$d"
  py expect "$dev" 0 $((32 * K)) 1
  py expect "$dev" $((32 * K)) $((64 * K)) 3
  py expect "$dev" $((2 * ZB)) $((64 * K)) 2
  py expect "$dev" $((2 * ZB + 64 * K)) $((64 * K)) 4
  wp_is "$dev" 2 256
  check_c "$dev"
  py files "$zn" "$dev" "$d"
  stop_server "$pid"
  echo "$kind: power cycle and SIGKILL lost exactly the unflushed writes; SIGTERM lost nothing"
done
