#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# backing_dir over both NBD servers: a restart after SIGTERM gives back
# every zone's condition, write pointer and data (open zones come back
# CLOSED, or EMPTY when nothing was written), the READONLY and OFFLINE
# zones and the bad blocks; nbdkit's plugin opens what zonednull-server
# wrote and the other way round; nr_devices=2 keeps DIR/nullb0 and
# DIR/nullb1.  And the refusals through a server: another geometry, and a
# directory another running zonednull holds, each refused with a message
# naming the cause and nothing in the directory changed.
#
# Device: 16 zones of 4 MiB (8192 sectors), zones 0 and 1 conventional,
# at most 3 open and 4 active zones.
. "$(dirname "$0")/../common/files-lib.sh"

geometry="size=64 zone_size=4 zone_nr_conv=2 zone_max_open=3 zone_max_active=4"
ZS=8192                                 # sectors
ZB=4194304                              # bytes

# populate URI: zones in every condition a restart has to rebuild.
populate () {
  u=$1
  py write "$u" 0 1048576 1                       # conventional zone 0
  py write "$u" $((ZB + 512000)) 65536 2          # conventional zone 1
  py write "$u" $((8 * ZB)) "$ZB" 3               # zone 8: FULL by writes
  py write "$u" $((6 * ZB)) 131072 4              # zone 6: written, finished
  zn_ok finish -c 1 -o $((6 * ZS)) "$u"
  zn_ok finish -c 1 -o $((7 * ZS)) "$u"                # zone 7: FULL, no data
  py write "$u" $((12 * ZB)) 65536 5              # zone 12: written, reset
  zn_ok reset -c 1 -o $((12 * ZS)) "$u"
  py write "$u" $((9 * ZB)) 65536 6               # zone 9: data, READONLY
  zn_ok readonly -o $((9 * ZS)) "$u"
  zn_ok offline -o $((10 * ZS)) "$u"              # zone 10: OFFLINE
  zn_ok badblocks -o $((11 * ZS + 64)) -l 16 "$u" # zone 11: bad blocks
  py write "$u" $((5 * ZB)) 131072 7              # zone 5: CLOSED, with an
  zn_ok append --pattern 0x5a -l 16 -o $((5 * ZS)) "$u"   # append
  [ "$(cat "$tmpdir/zn.out")" = $((5 * ZS + 256)) ] ||
    fail "append to zone 5 at $(cat "$tmpdir/zn.out"), not $((5 * ZS + 256))"
  zn_ok close -c 1 -o $((5 * ZS)) "$u"
  py write "$u" $((2 * ZB)) 1048576 8             # zone 2: IMP_OPEN
  zn_ok open -c 1 -o $((3 * ZS)) "$u"                  # zone 3: EXP_OPEN, data
  py write "$u" $((3 * ZB)) 4096 9
  zn_ok open -c 1 -o $((4 * ZS)) "$u"                  # zone 4: EXP_OPEN, empty
}

# The populated device's report, as blkzone prints it, must show every
# condition, so that the restart is tested on each.
check_conditions () {
  for c in '0(nw)' '1(em)' '2(oi)' '3(oe)' '4(cl)' '13(ro)' '14(fu)' '15(of)'; do
    grep -qF "zcond:$c" "$1" || grep -qF "zcond: $c" "$1" ||
      fail "no zone in condition $c in $1"
  done
}

for kind in nbdkit server; do
  peer=$(other $kind)
  d=$tmpdir/d-$kind
  start_as $kind "$kind-1" $geometry backing_dir="$d"
  populate "$dev"
  py snapshot "$zn" "$dev" >"$tmpdir/before"
  check_conditions "$tmpdir/before"
  py files "$zn" "$dev" "$d"
  /usr/bin/python3 "$files_py" restarted <"$tmpdir/before" \
    >"$tmpdir/expected" || fail "files.py restarted"
  ! cmp -s "$tmpdir/before" "$tmpdir/expected" ||
    fail "no open zone to come back CLOSED or EMPTY"

  # A second server on the directory while the first runs, either kind.
  dir_state "$d" >"$tmpdir/state"
  for k in nbdkit server; do
    refused_start $k "another running zonednull holds this directory" \
      $geometry backing_dir="$d"
  done
  dir_state "$d" | cmp -s - "$tmpdir/state" ||
    fail "a refused start changed $d"
  stop_server "$pid"

  # Another geometry: refused, naming the key; the directory unchanged.
  dir_state "$d" >"$tmpdir/state"
  for k in nbdkit server; do
    refused_start $k "zone_size=8: backing_dir=$d holds a device made with zone_size=4" \
      size=64 zone_size=8 zone_nr_conv=2 backing_dir="$d"
    refused_start $k "zone_nr_conv=3" \
      size=64 zone_size=4 zone_nr_conv=3 backing_dir="$d"
  done
  dir_state "$d" | cmp -s - "$tmpdir/state" ||
    fail "a refused start changed $d"

  # The same server again, then the other one, on what the first wrote.
  for k in $kind $peer; do
    start_as $k "$kind-$k" $geometry backing_dir="$d"
    py snapshot "$zn" "$dev" >"$tmpdir/after"
    diff "$tmpdir/expected" "$tmpdir/after" >"$tmpdir/diff" ||
      fail "$k after $kind: the restarted device differs:
$(cat "$tmpdir/diff")"
    py files "$zn" "$dev" "$d"
    stop_server "$pid"
  done
  echo "$kind: restarted on its own directory and by $peer: identical"
done

# nr_devices=2: device I in DIR/nullbI, each restarted with its own zones.
for kind in nbdkit server; do
  peer=$(other $kind)
  d=$tmpdir/two-$kind
  start_as $kind "two-$kind" $geometry nr_devices=2 backing_dir="$d"
  uri1="nbd+unix:///nullb1?socket=$sock"
  py write "$dev" $((2 * ZB)) 200704 11
  py write "$dev" 4096 8192 12
  py write "$uri1" $((2 * ZB)) 65536 13
  py write "$uri1" $((3 * ZB)) "$ZB" 14
  zn_ok finish -c 1 -o $((4 * ZS)) "$uri1"
  py snapshot "$zn" "$dev" >"$tmpdir/before0"
  py snapshot "$zn" "$uri1" >"$tmpdir/before1"
  ! cmp -s "$tmpdir/before0" "$tmpdir/before1" ||
    fail "nr_devices=2: both devices have the same zones"
  for i in 0 1; do
    [ -f "$d/nullb$i/zonednull.meta" ] || fail "no $d/nullb$i/zonednull.meta"
    [ -f "$d/nullb$i/seq-000015" ] || fail "no $d/nullb$i/seq-000015"
  done
  [ "$(stat -c %s "$d/nullb0/seq-000002")" = 200704 ] ||
    fail "$d/nullb0/seq-000002 does not hold nullb0's zone 2"
  [ "$(stat -c %s "$d/nullb1/seq-000002")" = 65536 ] ||
    fail "$d/nullb1/seq-000002 does not hold nullb1's zone 2"
  stop_server "$pid"
  start_as $peer "two-$kind-$peer" $geometry nr_devices=2 backing_dir="$d"
  uri1="nbd+unix:///nullb1?socket=$sock"
  for i in 0 1; do
    /usr/bin/python3 "$files_py" restarted <"$tmpdir/before$i" \
      >"$tmpdir/expected$i" || fail "files.py restarted"
  done
  py snapshot "$zn" "$dev" >"$tmpdir/after0"
  py snapshot "$zn" "$uri1" >"$tmpdir/after1"
  for i in 0 1; do
    diff "$tmpdir/expected$i" "$tmpdir/after$i" >"$tmpdir/diff" ||
      fail "nr_devices=2, nullb$i, $peer after $kind: differs:
$(cat "$tmpdir/diff")"
  done
  stop_server "$pid"
  echo "nr_devices=2: $kind's two devices restarted by $peer: identical"
done
