#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The plugin through the standard NBD tools against one long-running
# server: nbdsh writes at the write pointers, nbdinfo --map shows them.
# Every tool run is a new connection, so this also checks that all
# connections share one device.
# shellcheck source=tests/common/lib.sh
. "$(dirname "$0")/../common/lib.sh"

need_nbdsh

MiB=1048576

# 8 zones of 1 MiB; zone 0 is conventional.
start_server dev size=8 zone_size=1 zone_nr_conv=1 memory_backed=1

nbdsh_do () {
  nbdsh -u "$uri" "$@" >"$tmpdir/nbdsh.out" 2>&1
}

# expect_map "OFFSET LENGTH TYPE" lines: nbdinfo --map, type 0 data and
# type 1 a plain hole (never 3, "hole,zero": past a write pointer
# null_blk reads 0xFF).
expect_map () {
  got=$("$NBDINFO" --map "$uri" | awk '{ print $1, $2, $3 }') ||
    fail "nbdinfo --map failed"
  [ "$got" = "$1" ] || fail "nbdinfo --map gave
$got
expected
$1"
}

"$NBDINFO" --can multi-conn "$uri" || fail "multi-conn is not advertised"
info=$("$NBDINFO" "$uri") || fail "nbdinfo failed"
for line in "export-size: 8388608" "can_multi_conn: true" "can_trim: true" \
            "block_size_minimum: 512" "block_size_maximum: 33554432"; do
  echo "$info" | grep -q "$line" || fail "nbdinfo does not show '$line'"
done

expect_map "0 $MiB 0
$MiB $((7 * MiB)) 1"

# Zone 1: 8 KiB; zone 3: 64 KiB in two writes; zone 7: filled.
nbdsh_do -c "h.pwrite(b'\\x11' * 8192, 1 * $MiB)" \
  -c "h.pwrite(b'\\x33' * 32768, 3 * $MiB)" \
  -c "h.pwrite(b'\\x34' * 32768, 3 * $MiB + 32768)" \
  -c "h.pwrite(b'\\x77' * $MiB, 7 * $MiB)" ||
  fail "writes at the write pointers failed: $(cat "$tmpdir/nbdsh.out")"
expect_map "0 $((MiB + 8192)) 0
$((MiB + 8192)) $((2 * MiB - 8192)) 1
$((3 * MiB)) 65536 0
$((3 * MiB + 65536)) $((4 * MiB - 65536)) 1
$((7 * MiB)) $MiB 0"

# Data up to the write pointer, 0xFF after it.
nbdsh_do -c "assert h.pread(8192, 1 * $MiB) == b'\\x11' * 8192" \
  -c "assert h.pread(4096, 1 * $MiB + 8192) == b'\\xff' * 4096" \
  -c "assert h.pread(65536, 3 * $MiB) == b'\\x33' * 32768 + b'\\x34' * 32768" ||
  fail "read back: $(cat "$tmpdir/nbdsh.out")"

# Behind the write pointer, ahead of it, and into a full zone: EIO, and
# the write pointers stay where they were.
for args in "1 * $MiB" "3 * $MiB + 131072" "7 * $MiB"; do
  nbdsh_do -c "
import errno
try:
    h.pwrite(b'\\0' * 4096, $args)
except nbd.Error as e:
    assert e.errnum == errno.EIO, e
else:
    raise AssertionError('write at $args succeeded')" ||
    fail "write at $args: $(cat "$tmpdir/nbdsh.out")"
done

# A trim of zones 3 to 6 resets them; nbdinfo sees the holes at once.
nbdsh_do -c "h.trim(4 * $MiB, 3 * $MiB)" ||
  fail "trim of zones 3-6: $(cat "$tmpdir/nbdsh.out")"
expect_map "0 $((MiB + 8192)) 0
$((MiB + 8192)) $((6 * MiB - 8192)) 1
$((7 * MiB)) $MiB 0"

stop_server "$pid"

# Without requests that sleep, nbdkit runs a connection's requests in the
# order they were sent: zn-bench keeps 64 sequential writes to each zone
# in flight, zone after zone, and under the strict rule none may fail
# (with nbdkit's threads in parallel thousands do).  With timed
# completion the threads run in parallel, and pipeline_zoned_writes
# restores the order.
znbench=${ZONEDNULL_BUILDDIR:-.}/bench/zn-bench
for extra in "" "irqmode=2 completion_nsec=100000 pipeline_zoned_writes=1"; do
  # shellcheck disable=SC2086 # extra is a list of KEY=VALUE words
  start_server burst size=16 zone_size=1 memory_backed=1 $extra
  out=$("$znbench" --mode zonewrite --depth 64 --zone-inflight 64 \
          --seconds 60 "$uri") || fail "zn-bench ($extra): $out"
  case $out in
  *" errors=0"*) ;;
  *) fail "64 writes in flight per zone ($extra): $out" ;;
  esac
  nbdsh_do -c "assert h.pread(4096, 16 * $MiB - 4096) != b'\xff' * 4096" ||
    fail "the device is not full after zn-bench ($extra): $out"
  stop_server "$pid"
done
exit 0
