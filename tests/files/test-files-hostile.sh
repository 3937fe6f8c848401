#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# backing_dir over both NBD servers, against whoever can write in DIR: a
# zone file or the metadata's temporary that is a link to a file outside
# DIR, two names for one zone, a FIFO as the metadata file and a
# metadata bad block the table cannot hold are each refused at start with
# a message naming the file or line, promptly (refused_start bounds the
# wait), and nothing changes, inside DIR or out; a link made while the
# server runs fails the write with EIO and is logged, its target
# untouched.
#
# Device: 8 zones of 2 MiB, zone 0 conventional.
. "$(dirname "$0")/../common/files-lib.sh"

geometry="size=16 zone_size=2 zone_nr_conv=1"
ZB=2097152                              # bytes

outside=$tmpdir/outside
head -c 8192 /dev/urandom >"$outside" || fail "cannot make $outside"
outside_state=$(md5sum <"$outside")

# untouched WHEN: the file outside DIR is as it was made.
untouched () {
  [ "$(md5sum <"$outside")" = "$outside_state" ] ||
    fail "$1: $outside, outside DIR, changed (now $(stat -c %s "$outside") bytes)"
}

# refused_unchanged DIR TEXT: both servers refuse DIR saying TEXT, and
# nothing in DIR or outside it changes.
refused_unchanged () {
  dir_state "$1" >"$tmpdir/state"
  for k in nbdkit server; do
    refused_start $k "$2" $geometry backing_dir="$1"
  done
  dir_state "$1" | cmp -s - "$tmpdir/state" ||
    fail "a refused start changed $1"
  untouched "$2"
}

# A device's directory, with data in zones 0 and 3, every file made.
d=$tmpdir/d
start_as server made $geometry backing_dir="$d"
py write "$dev" 0 65536 1
py write "$dev" $((3 * ZB)) 65536 3
stop_server "$pid"

for name in seq-000003 cnv-000000 .zonednull.meta.new; do
  mv "$d/$name" "$tmpdir/saved" 2>/dev/null
  ln -s "$outside" "$d/$name"
  refused_unchanged "$d" "backing_dir=$d: $name is a symbolic link"
  rm "$d/$name"
  if [ -e "$tmpdir/saved" ]; then mv "$tmpdir/saved" "$d/$name"; fi
done
echo "links at start: refused, naming the file; $outside unchanged"

# A link made while the server runs: zone 5's file is opened at its first
# write.
for kind in nbdkit server; do
  start_as $kind "running-$kind" $geometry backing_dir="$d"
  rm "$d/seq-000005"
  ln -s "$outside" "$d/seq-000005"
  py write-fails "$dev" $((5 * ZB)) 4096
  py write-fails "$dev" $((5 * ZB)) 4096
  untouched "$kind: a write to zone 5"
  py expect "$dev" $((3 * ZB)) 65536 3
  stop_server "$pid"
  log=$tmpdir/running-$kind.log
  grep -qF "backing_dir $d: opening seq-000005: a symbolic link, which zonednull does not follow" \
    "$log" || fail "$kind: no log line for the link: $(cat "$log")"
  [ "$(grep -c "seq-000005" "$log")" = 1 ] ||
    fail "$kind: the link is not logged once: $(cat "$log")"
  untouched "$kind: the stop"
  refused_unchanged "$d" "backing_dir=$d: seq-000005 is a symbolic link"
  rm "$d/seq-000005"
  : >"$d/seq-000005"
done
echo "a link made while running: EIO, logged once; $outside unchanged"

# A second name for zone 3, and a name zloop would not open.
: >"$d/seq-00000003"
refused_unchanged "$d" \
  "backing_dir=$d: seq-00000003 and seq-000003 are both files of zone 3"
rm "$d/seq-00000003"
mv "$d/seq-000005" "$d/seq-5"
refused_unchanged "$d" "backing_dir=$d: seq-5 is not zloop's name for zone 5, seq-000005"
mv "$d/seq-5" "$d/seq-000005"
echo "two names for a zone: refused, naming both"

# A FIFO as the metadata file: opening it must not wait for a writer.
mv "$d/zonednull.meta" "$tmpdir/meta"
mkfifo "$d/zonednull.meta"
refused_unchanged "$d" "backing_dir=$d: zonednull.meta is not a regular file"
rm "$d/zonednull.meta"
echo "a FIFO as zonednull.meta: refused at once"

# A bad block the table cannot hold.
cp "$tmpdir/meta" "$d/zonednull.meta"
line=$(($(wc -l <"$d/zonednull.meta") + 1))
echo "badblocks 100 18446744073709551615" >>"$d/zonednull.meta"
refused_unchanged "$d" \
  "backing_dir=$d: zonednull.meta line $line: badblocks 100 18446744073709551615: "
cp "$tmpdir/meta" "$d/zonednull.meta"
echo "a metadata bad block the table refuses: refused, naming the line"

# What is left is the device: its data came through all of it.
start_as server again $geometry backing_dir="$d"
py expect "$dev" 0 65536 1
py expect "$dev" $((3 * ZB)) 65536 3
stop_server "$pid"
untouched "the last start"
