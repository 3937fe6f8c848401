#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A flush covers only the writes completed before it came (issue 44,
# item 2), through both NBD servers: with irqmode=2 and 200 ms
# completions, a write answered first, then two writes sent without
# waiting and a flush behind them, all answered.  The log's FLUSH ref
# must cover the first write and neither of the two in flight, and
# `zonednull replay --crash=enumerate` must give the four states of the
# two writes in flight, state 0 losing both with the flush done.
#
# Device: 8 zones of 1 MiB (2048 sectors), zone 0 conventional.
. "$(dirname "$0")/../common/lib.sh"

need_nbdsh

# shellcheck source=tests/common/cli-lib.sh
. "$(dirname "$0")/../common/cli-lib.sh"
device="size=8 zone_size=1 zone_nr_conv=1 memory_backed=1 irqmode=2
  completion_nsec=200000000"

for target in server nbdkit; do
  ZONEDNULL_TARGET=$target
  export ZONEDNULL_TARGET
  wlog=$tmpdir/$target.wlog
  # shellcheck disable=SC2086 # $device is words
  start_server "$target" $device log_writes="$wlog"
  nbdsh -u "$uri" -c "
h.pwrite(b'\\x20' * 4096, 2 * 2048 * 512)
w3 = h.aio_pwrite(nbd.Buffer.from_bytearray(bytearray(b'\\x30' * 4096)),
                  3 * 2048 * 512)
w4 = h.aio_pwrite(nbd.Buffer.from_bytearray(bytearray(b'\\x40' * 4096)),
                  4 * 2048 * 512)
f = h.aio_flush()
# The flush went out with both writes unanswered.
assert not h.aio_command_completed(w3) and not h.aio_command_completed(w4)
while h.aio_in_flight() > 0:
    h.poll(-1)
for c in (w3, w4, f):
    assert h.aio_command_completed(c)
" >"$tmpdir/nbdsh.out" 2>&1 ||
    fail "$target: the writes and the flush failed: $(cat "$tmpdir/nbdsh.out")"
  ok mark answered "$uri"
  stop_server "$pid"

  ok replay "$wlog" --list
  cp "$tmpdir/out" "$tmpdir/$target.list"
  # entry kind zone sector length fua ref=/mark
  no_of () {
    awk -v s="$1" '$2 == "write" && $4 == s { print $1; exit }' \
      "$tmpdir/$target.list"
  }
  done_before=$(no_of 4096)
  in_flight3=$(no_of 6144)
  in_flight4=$(no_of 8192)
  ref=$(awk '$2 == "flush" { sub ("ref=", "", $7); print $7; exit }' \
    "$tmpdir/$target.list")
  [ -n "$done_before" ] && [ -n "$in_flight3" ] && [ -n "$in_flight4" ] &&
    [ -n "$ref" ] || fail "$target: the log lacks an entry: $(cat "$tmpdir/$target.list")"
  echo "$target: write answered before the flush: entry $done_before;" \
    "in flight: $in_flight3 and $in_flight4; the flush's ref=$ref"
  [ "$ref" -gt "$done_before" ] ||
    fail "$target: the flush (ref=$ref) does not cover the write answered before it (entry $done_before)"
  [ "$ref" -le "$in_flight3" ] && [ "$ref" -le "$in_flight4" ] ||
    fail "$target: the flush (ref=$ref) covers writes in flight when it came (entries $in_flight3, $in_flight4)"

  ok replay "$wlog" --to answered --crash=enumerate -o "$tmpdir/$target.states"
  echo "$target: $(cat "$tmpdir/out")"
  [ "$(ls "$tmpdir/$target.states" | wc -l)" -eq 4 ] ||
    fail "$target: enumerate made $(ls "$tmpdir/$target.states" | wc -l) states, expected 4: $(cat "$tmpdir/out")"
  grep -q "zone 2:" "$tmpdir/out" &&
    fail "$target: the write answered before the flush is pending: $(cat "$tmpdir/out")"
  # State 0: both writes in flight lost, the flush done.
  start_server "$target-state" size=8 zone_size=1 zone_nr_conv=1 \
    backing_dir="$tmpdir/$target.states/state-000000"
  nbdsh -u "$uri" -c "
assert h.pread(4096, 2 * 2048 * 512) == b'\\x20' * 4096, 'zone 2 lost its write'
assert h.pread(4096, 3 * 2048 * 512) != b'\\x30' * 4096, 'zone 3 kept its write'
assert h.pread(4096, 4 * 2048 * 512) != b'\\x40' * 4096, 'zone 4 kept its write'
" >"$tmpdir/nbdsh.out" 2>&1 ||
    fail "$target: state 0: $(cat "$tmpdir/nbdsh.out")"
  stop_server "$pid"
done
exit 0
