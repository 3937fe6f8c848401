#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The fio engine's options, errors and zone semantics against the plugin:
# --enghelp, bad options named in fio's errors, the negative test (fio's
# own emulated zones meet the server's write pointers: EIO), the exact
# device errno through the control channel, open limits, trim as a zone
# reset, read-only zones, flushes and several connections.
. "$(dirname "$0")/../common/fio-lib.sh"

MIB=1048576
engine=external:$ZONEDNULL_FIO_ENGINE

# refused TEXT ARG...: fio must fail and say TEXT (a fixed string).
refused () {
  text=$1
  shift
  fio_cmd --output="$tmpdir/refused.out" "$@" >"$tmpdir/refused.err" 2>&1 &&
    fail "fio $* succeeded"
  grep -qF -- "$text" "$tmpdir/refused.err" "$tmpdir/refused.out" ||
    fail "fio $*: no '$text' in: $(cat "$tmpdir/refused.err" "$tmpdir/refused.out")"
}

# ---- options ----------------------------------------------------------------
fio_cmd --enghelp="$ZONEDNULL_FIO_ENGINE" >"$tmpdir/enghelp" 2>&1 ||
  fail "fio --enghelp: $(cat "$tmpdir/enghelp")"
for opt in uri conns zone_write_lock zone_hooks server_timeout; do
  grep -q "^$opt  *: ." "$tmpdir/enghelp" ||
    fail "--enghelp does not document $opt: $(cat "$tmpdir/enghelp")"
done

start_server opts size=8 zone_size=1 zone_nr_conv=1 memory_backed=1
set -- --name=j --ioengine="$engine" --filename=zn --rw=write --size=1M
refused "the uri option is required" "$@"
refused "uri=nbd+unix:///?socket=$tmpdir/none.sock: " "$@" \
  --uri="nbd+unix:///?socket=$tmpdir/none.sock"
refused "server has no export named 'other'" "$@" \
  --uri="nbd+unix:///other?socket=$tmpdir/opts.sock"
refused "conns: min value out of range: 0" "$@" --uri="$uri" --conns=0
refused "conns: max value out of range: 65" "$@" --uri="$uri" --conns=65
refused "zone_write_lock: max value out of range: 2" "$@" --uri="$uri" \
  --zone_write_lock=2
refused "zone_hooks: max value out of range: 3" "$@" --uri="$uri" \
  --zone_hooks=3
# Without one file name per device, jobs would not share fio's zones.
refused "numjobs=2 with zonemode=zbd needs filename=" --name=j \
  --ioengine="$engine" --uri="$uri" --zonemode=zbd --rw=write --numjobs=2
refused "give one filename=" "$@" --uri="$uri" --filename=a:b
stop_server "$pid"

# ---- the negative test: zones invented by fio ---------------------------------
# The same sequential job twice.  Without the zone hooks fio emulates
# zones that start EMPTY and never resets the device's, so the second
# pass writes at zone starts behind the device's write pointers and the
# server refuses with EIO.  fio's stock nbd engine does the same.
start_server neg size=4 zone_size=1 memory_backed=1
fio_ok neg-1 --zonemode=zbd --zonesize=1M --rw=write --bs=64k \
  --zone_hooks=0
check_zones 0 full
run_fio neg-2 --zonemode=zbd --zonesize=1M --rw=write --bs=64k \
  --zone_hooks=0
[ "$rc" -ne 0 ] || fail "second pass without zone hooks succeeded"
grep -q "err=5/.*Input/output error\|err= 5 .*Input/output error" \
  "$tmpdir/neg-2.err" "$tmpdir/neg-2.out" ||
  fail "second pass did not fail with EIO: $(cat "$tmpdir/neg-2.err")"
check_zones 0 full
fio_cmd --name=stock --ioengine=nbd --uri="$uri" --zonemode=zbd \
  --zonesize=1M --rw=write --bs=64k >"$tmpdir/stock.out" 2>&1 &&
  fail "fio's nbd engine rewrote full zones: $(cat "$tmpdir/stock.out")"
grep -q "Input/output error" "$tmpdir/stock.out" ||
  fail "fio's nbd engine did not fail with EIO: $(cat "$tmpdir/stock.out")"
# With the hooks fio sees the full zones, resets them and writes again.
fio_verified neg-hooks --zonemode=zbd --rw=write --bs=64k
[ "$write" -eq $((4 * MIB)) ] || fail "neg-hooks wrote $write bytes"
check_zones 0 full
stop_server "$pid"

# ---- limits and exact errnos --------------------------------------------------
# Only an active limit: fio 3.33 has no max-active hook, so the engine
# reports it as the open limit and random writes keep to it.
start_server active size=8 zone_size=1 zone_max_active=2 memory_backed=1
fio_verified active --zonemode=zbd --rw=randwrite --bs=4k --iodepth=8 \
  --io_size=$((2 * MIB))
check_zones 0 any
refused "Specified --max_open_zones (3) is larger than max (2)" \
  --name=j --ioengine="$engine" --uri="$uri" --filename=zn \
  --zonemode=zbd --rw=randwrite --max_open_zones=3
# Past the limit the device says EOVERFLOW, which NBD cannot carry (it
# arrives as EINVAL); the engine asks the control channel for the exact
# errno, as the kernel would hand it to fio.
"$ZONEDNULL_CLI" reset "$uri" || fail "zonednull reset failed"
run_fio overflow --zonemode=zbd --rw=randwrite --bs=4k \
  --ignore_zone_limits=1 --io_size=$((2 * MIB))
[ "$rc" -ne 0 ] || fail "writes over the active limit succeeded"
grep -q "Value too large for defined data type" "$tmpdir/overflow.err" ||
  fail "no EOVERFLOW over the active limit: $(cat "$tmpdir/overflow.err")"
check_zones 0 any
stop_server "$pid"

# ---- trim, read-only zones, flush, connections -----------------------------------
start_server misc size=8 zone_size=1 zone_nr_conv=1 memory_backed=1
"$ZONEDNULL_CLI" readonly -o 0x1000 "$uri" ||       # zone 2
  fail "zonednull readonly failed"
# fio keeps off the read-only zone (reported to it as offline) and fills
# the others; the zone stays READONLY.
fio_verified ro --zonemode=zbd --rw=write --bs=64k --iodepth=4 --conns=3 \
  --fsync=4
[ "$write" -eq $((7 * MIB)) ] || fail "ro wrote $write bytes, expected 7 MiB"
[ "$syncs" -gt 0 ] || fail "ro: fsync=4 sent no flush"
"$ZONEDNULL_CLI" report -o 0x1000 -c 1 "$uri" | grep -q "zcond:13(ro)" ||
  fail "zone 2 is no longer read-only: $("$ZONEDNULL_CLI" report "$uri")"
"$ZONEDNULL_CLI" readonly -o 0x1000 "$uri" || fail "zonednull readonly failed"
# A trim in zonemode=zbd is a zone reset, through fio's wp bookkeeping.
fio_ok trim --zonemode=zbd --rw=trim --bs=1M --offset=1M
[ "$trim" -eq $((7 * MIB)) ] || fail "trim trimmed $trim bytes"
check_zones 1 empty
# Reads over several connections, with zone write pointers honoured.
fio_verified rw --zonemode=zbd --rw=randwrite --bs=4k --iodepth=32 \
  --conns=4 --offset=1M --io_size=$((2 * MIB))
check_zones 1 written $((2 * MIB))
# iodepth_batch_complete_min=0: fio also polls for completions without
# waiting.
fio_ok read --rw=randread --bs=4k --iodepth=16 --conns=4 --size=1M \
  --iodepth_batch_complete_min=0
[ "$read" -eq "$MIB" ] || fail "read $read bytes"
stop_server "$pid"

# ---- a zone operation the server refuses -------------------------------------
# Every sequential zone starts FULL (zone_full) on a read-only server:
# fio's reset before writing fails with EPERM.  The engine's message
# names the operation, and fio fails the job with that errno instead of
# dying of a symbol lookup error (zn_op_name) or going on as if the
# reset had worked (errno 0).
start_server refuse -r kernel=6.12 zone_full=1 size=4 zone_size=1 \
  memory_backed=1
run_fio refuse --zonemode=zbd --rw=write --bs=64k
[ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] ||
  fail "fio against a read-only server exited $rc: $(cat "$tmpdir/refuse.err")"
grep -qF "zonednull: reset of 1048576 bytes at 0: the server is read-only" \
  "$tmpdir/refuse.err" ||
  fail "no reset failure from the engine: $(cat "$tmpdir/refuse.err")"
grep -qF "resetting wp for 2048 sectors at sector 0 failed (1)." \
  "$tmpdir/refuse.err" ||
  fail "fio did not see EPERM (1) from the reset: $(cat "$tmpdir/refuse.err")"
summary=$(fio_summary "$tmpdir/refuse.out") || fail "no JSON report"
eval "$summary"
[ "$errors" -eq 1 ] && [ "$write" -eq 0 ] ||
  fail "fio did not fail the job with EPERM: $summary"
stop_server "$pid"
