#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The write log over the control channel, with the CLI and zonednull-server:
# `zonednull log start`, writes, a flush and a zone append through NBD,
# `zonednull mark`, `zonednull log stop`, and the file's entries counted
# and named, with a memory-backed device and again with backing_dir;
# then the refusals, each with its message: no log_dir, a bad or
# existing name, a log on already, a mark without a log, a bad mark.
#
# Device: 8 zones of 1 MiB (2048 sectors), zone 0 conventional.
ZONEDNULL_TARGET=server
. "$(dirname "$0")/../common/lib.sh"

need_nbdsh

# shellcheck source=tests/common/cli-lib.sh
. "$(dirname "$0")/../common/cli-lib.sh"
device="size=8 zone_size=1 zone_nr_conv=1 memory_backed=1"

# entries FILE: "COUNT FLAGS..." of a log: nr_entries from the super, and
# each entry's flags in hex, walking the file as dm-log-writes' readers
# (fstests' replay-log) do, with their check of each entry.
entries () {
  /usr/bin/python3 - "$1" <<'PY'
import struct, sys
data = open(sys.argv[1], 'rb').read()
magic, version, nr, bs = struct.unpack_from('<QQQI', data, 0)
assert magic == 0x6a736677736872 and version == 1, 'bad super'
off, flags = bs, []
for i in range(nr):
    sector, n, f, dlen = struct.unpack_from('<QQQQ', data, off)
    # fstests' replay-log refuses a nonzero byte 32 unless flags are MARK.
    assert f == 8 or data[off + 32] == 0, 'entry %d: byte 32 is not 0' % i
    flags.append('%x' % f)
    off += bs
    if not f & (4 | 8):
        off += n * bs
assert off == len(data), 'file is %d bytes, entries end at %d' % (len(data), off)
print(nr, ' '.join(flags))
PY
}

logs=$tmpdir/logs
mkdir "$logs"

# logged_sequence: with a log started, 2 writes, a flush, a FUA write, a
# mark, an append, a reset and a mark, then the log stopped; its entries
# are then $sequence (the geometry first).
logged_sequence () {
  nbdsh -u "$uri" -c "
h.pwrite(b'\\x11' * 4096, 0)
h.pwrite(b'\\x22' * 4096, 2048 * 512)
h.flush()
h.pwrite(b'\\x33' * 512, 2048 * 512 + 4096, nbd.CMD_FLAG_FUA)
" >"$tmpdir/nbdsh.out" 2>&1 || fail "writes failed: $(cat "$tmpdir/nbdsh.out")"
  ok mark after-writes "$uri"
  ok append -o 4096 --pattern 0x44 -l 8 "$uri"
  ok reset -o 2048 -c 1 "$uri"
  ok mark done "$uri"
  ok log stop "$uri"
}
sequence="9 20008 0 0 1 2 8 100 204 8"

start_server logs $device log_dir="$logs"
refused 1 "no write log is on" mark m1 "$uri"
refused 1 "no write log is on" log stop "$uri"
refused 1 "log names are" log start ../x "$uri"
refused 1 "log names are" log start a/b "$uri"
refused 1 "log names are" log start .hidden "$uri"
refused 1 "log names are" log start -- -rf "$uri"
[ -z "$(ls -A "$logs")" ] || fail "a refused name made a file: $(ls -A "$logs")"

ok log start run1.log "$uri"
[ -f "$logs/run1.log" ] || fail "log start made no $logs/run1.log"
[ "$(stat -c %a "$logs/run1.log")" = 600 ] ||
  fail "the log is mode $(stat -c %a "$logs/run1.log"), expected 600"
refused 1 "a write log is on already" log start run2.log "$uri"
refused 1 "mark names are" mark "two words" "$uri"
refused 1 "mark names are" mark "" "$uri"

logged_sequence
refused 1 "no write log is on" log stop "$uri"

got=$(entries "$logs/run1.log") || fail "reading the log failed"
[ "$got" = "$sequence" ] || fail "log entries: '$got', expected '$sequence'"

refused 1 "log_dir holds a file of that name" log start run1.log "$uri"
stop_server "$pid"

# The same with backing_dir, where the control export's commands run on
# the storage threads: the append is logged when it runs, between the
# marks around it.
mkdir "$tmpdir/zones"
start_server files size=8 zone_size=1 zone_nr_conv=1 \
  backing_dir="$tmpdir/zones" log_dir="$logs"
ok log start files.log "$uri"
logged_sequence
got=$(entries "$logs/files.log") || fail "reading the log failed"
[ "$got" = "$sequence" ] ||
  fail "backing_dir: log entries: '$got', expected '$sequence'"
stop_server "$pid"

start_server nodir $device
refused 1 "no log_dir=" log start run3.log "$uri"
stop_server "$pid"

# A log_dir that is no directory is refused at start, naming the key.
: >"$tmpdir/afile"
for dir in "$tmpdir/afile" "$tmpdir/nosuch"; do
  "$ZONEDNULL_SERVER" -f -U "$tmpdir/bad.sock" $device log_dir="$dir" \
    </dev/null 2>"$tmpdir/bad.log" && fail "log_dir=$dir accepted"
  grep -qF "log_dir=$dir: " "$tmpdir/bad.log" ||
    fail "log_dir=$dir: $(cat "$tmpdir/bad.log")"
done

# log_writes= from the start; an existing file is refused, naming it.
start_server direct $device log_writes="$logs/direct.log"
ok mark m "$uri"
stop_server "$pid"
got=$(entries "$logs/direct.log") || fail "reading the log failed"
# geometry, mark, and the orderly stop's flush
[ "$got" = "3 20008 8 1" ] || fail "log_writes entries: '$got'"
name=again
sock=$tmpdir/$name.sock
"$ZONEDNULL_SERVER" -f -U "$sock" $device log_writes="$logs/direct.log" \
  </dev/null 2>"$tmpdir/again.log" && fail "the server wrote over a log"
grep -qF "log_writes=$logs/direct.log: File exists" "$tmpdir/again.log" ||
  fail "no message naming the existing log: $(cat "$tmpdir/again.log")"

# LOG_START's snapshot of zone files reads only their data: 15 GiB of
# sparse conventional zone files with 4 KiB written cost reads of about
# that much (the server's rchar), not of the 15 GiB of holes, and the
# log holds the 4 KiB.  (A resource bound; it read every hole.)
mkdir "$tmpdir/sparse" "$tmpdir/sparse-logs"
start_server sparse size=16384 zone_size=1024 zone_nr_conv=15 \
  backing_dir="$tmpdir/sparse" log_dir="$tmpdir/sparse-logs"
nbdsh -u "$uri" -c 'h.pwrite(b"\x5a" * 4096, 7 << 30)' ||
  fail "writing the sparse device failed"
before=$(awk '$1 == "rchar:" { print $2 }' "/proc/$pid/io")
ok log start snap.log "$uri"
after=$(awk '$1 == "rchar:" { print $2 }' "/proc/$pid/io")
ok log stop "$uri"
read_mib=$(( (after - before) >> 20 ))
[ "$read_mib" -lt 64 ] ||
  fail "the snapshot of 15 GiB of holes read $read_mib MiB"
size=$(stat -c %s "$tmpdir/sparse-logs/snap.log")
[ "$size" -lt $((1 << 20)) ] || fail "the snapshot's log is $size bytes"
entries "$tmpdir/sparse-logs/snap.log" | grep -q '^[0-9]* 20008 .*10002' ||
  fail "no snapshot entry in the log: $(entries "$tmpdir/sparse-logs/snap.log")"
stop_server "$pid"

# A snapshot costs the device's data read and written: after one of 256
# MiB (well over the 10 ms below which none rests), a LOG_START at once is
# refused with the time to wait, 9 times the snapshot's, while a
# START/STOP loop on a small device (above) never waits.
mkdir "$tmpdir/big-logs"
start_server big size=512 zone_size=256 zone_nr_conv=1 memory_backed=1 \
  log_dir="$tmpdir/big-logs"
nbdsh -u "$uri" -c '
for i in range(8):
    h.pwrite(bytes([0x5a]) * (32 << 20), i << 25)' || fail "filling failed"
ok log start first.log "$uri"
ok log stop "$uri"
refused 1 "the next may start 9 times as long after it" log start second.log "$uri"
[ ! -e "$tmpdir/big-logs/second.log" ] || fail "the refused LOG_START made its log"
grep -q "LOG_START second.log: the last log's snapshot of this device took [0-9]* ms; the next may start 9 times that after it, in [0-9]* ms" \
  "$tmpdir/big.log" || fail "the server did not log the refusal: $(cat "$tmpdir/big.log")"
stop_server "$pid"

# The snapshot is copied behind LOG_START, a zone at a time: a write sent
# right after it, to a zone the copy has not reached, is served at once
# (its entry comes before SNAPSHOT entries of zones copied after it),
# where the whole snapshot used to hold every client; LOG_STOP waits for
# the copy (the client library asks again while the server says EAGAIN),
# and the log replays to the device.
# sums: checksums of zone 7 (full) and of zone 15's first block.
sums () {
  nbdsh -u "$uri" -c "
import hashlib
d = hashlib.sha256()
for i in range(64):
    d.update(h.pread(1 << 20, (7 << 26) + (i << 20)))
print(d.hexdigest(), hashlib.sha256(h.pread(4096, 15 << 26)).hexdigest())"
}
mkdir "$tmpdir/behind-logs"
start_server behind size=1024 zone_size=64 memory_backed=1 \
  log_dir="$tmpdir/behind-logs"
nbdsh -u "$uri" -c '
for i in range(15 * 64):
    h.pwrite(bytes([i % 251 + 1]) * (1 << 20), i << 20)' ||
  fail "filling failed"
PATH=/usr/bin:$PATH nbdsh -c "
import struct
c = nbd.NBD()
c.connect_uri('nbd+unix:///nullb0/control?socket=$sock')
h.connect_uri('nbd+unix:///nullb0?socket=$sock')
c.pwrite(struct.pack('>IIQQQ', 0x5a4e434d, 14, 0, 0, 0) + b'behind.log', 0)
h.pwrite(b'\\x77' * 4096, 15 << 26)
err = struct.unpack('>I', c.pread(4, 100))[0]
assert err == 0, 'LOG_START: errno %d' % err
" || fail "LOG_START and a write right after it failed"
ok log stop "$uri"
got=$(entries "$tmpdir/behind-logs/behind.log" | cut -d' ' -f2-) ||
  fail "reading the log failed"
after=$(echo "$got" | tr ' ' '\n' | awk '$1 == "0" { w = NR } $1 == "10002" && w { n++ } END { print n + 0 }')
[ "$after" -gt 0 ] ||
  fail "every SNAPSHOT entry came before the write sent after LOG_START: $(echo "$got" | tr ' ' '\n' | uniq -c | tr '\n' ' ')"
"$zn" replay "$tmpdir/behind-logs/behind.log" -o "$tmpdir/behind-state" ||
  fail "the log does not replay"
sums >"$tmpdir/live.sums" ||
  fail "reading the device failed"
stop_server "$pid"
start_server replayed size=1024 zone_size=64 memory_backed=1 \
  backing_dir="$tmpdir/behind-state"
sums >"$tmpdir/replayed.sums" ||
  fail "reading the replayed state failed"
cmp -s "$tmpdir/live.sums" "$tmpdir/replayed.sums" ||
  fail "the replayed state differs from the device"
stop_server "$pid"
exit 0
