#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Fault rules at run time, with the CLI and the nbdkit plugin: `zonednull
# fault list` shows a rule given at start with its counts, `fault add`
# (words, or -o/-l in sectors) fails exactly the writes it names until its
# count runs out, `fault clear` removes one rule or all; bad rules are
# refused naming the word; a when=after write is in the write log with a
# mark after it; a timeout rule is refused while the plugin serves
# requests one at a time; zonednull-server takes failing rules but
# refuses those that hold a request back.
#
# Device: 8 zones of 1 MiB (2048 sectors), zone 0 conventional.
. "$(dirname "$0")/../common/lib.sh"

need_nbdsh

# shellcheck source=tests/common/cli-lib.sh
. "$(dirname "$0")/../common/cli-lib.sh"
device="size=8 zone_size=1 zone_nr_conv=1 memory_backed=1"

# write_errno ZONE OFFSET: the errno name of a 4 KiB write there, or OK.
write_errno () {
  nbdsh -u "$uri" -c "
import errno
try:
    h.pwrite(b'\\x55' * 4096, $1 * 2048 * 512 + $2)
    print('OK')
except nbd.Error as e:
    # libnbd's binding gives the errno's name, older ones its number.
    print(e.errno if isinstance(e.errno, str) else errno.errorcode[e.errno])
" 2>&1
}

# A start rule that can never fire makes the plugin serve requests in
# parallel, so that timeout rules may be added.
start_server faults $device "fault=op=flush zone=7 delay=1 count=1"
ok fault list "$uri"
grep -q "^1: matched 0, hits 0: op=flush offset=7340032 length=1048576 " \
  "$tmpdir/out" || fail "fault list: $(cat "$tmpdir/out")"

ok fault add op=write zone=2 error=ENOSPC count=2 "$uri"
[ "$(cat "$tmpdir/out")" = 2 ] || fail "fault add printed '$(cat "$tmpdir/out")'"
[ "$(write_errno 1 0)" = OK ] || fail "a write to zone 1 failed"
[ "$(write_errno 2 0)" = ENOSPC ] || fail "the rule did not fail zone 2"
[ "$(write_errno 2 0)" = ENOSPC ] || fail "the rule did not fail zone 2 twice"
[ "$(write_errno 2 0)" = OK ] || fail "the rule outlived its count"
ok fault list --json "$uri"
python3 - "$tmpdir/out" <<'PY' || fail "fault list --json: $(cat "$tmpdir/out")"
import json, sys
rules = json.load(open(sys.argv[1]))['faults']
assert [r['id'] for r in rules] == [1, 2], rules
assert rules[1]['hits'] == 2 and rules[1]['matched'] == 3, rules
assert rules[1]['rule'].startswith('op=write offset=2097152 length=1048576 '
                                   'error=ENOSPC'), rules
PY

# -o/-l: sectors 6144-6151 (zone 3's first 4 KiB) fail after landing.
ok fault add -o 6144 -l 8 op=write error=EIO when=after "$uri"
[ "$(write_errno 3 0)" = EIO ] || fail "the -o/-l rule did not fail zone 3"
ok report -o 6144 -c 1 "$uri"
grep -q "wptr 0x000008" "$tmpdir/out" ||
  fail "when=after did not move the write pointer: $(cat "$tmpdir/out")"
[ "$(write_errno 3 4096)" = OK ] || fail "the -o/-l rule failed outside its range"

refused 1 "'op=bogus'" fault add op=bogus error=EIO "$uri"
refused 1 "'zone=9'" fault add zone=9 error=EIO "$uri"
refused 1 "does nothing" fault add op=read "$uri"
refused 2 "fault needs add, list or clear" fault
refused 2 "expected add, list or clear" fault remove "$uri"
refused 2 "not a rule's number" fault clear x "$uri"

ok fault clear 2 "$uri"
refused 1 "no rule 2" fault clear 2 "$uri"
ok fault list "$uri"
grep -q "^2:" "$tmpdir/out" && fail "rule 2 is still listed: $(cat "$tmpdir/out")"
ok fault clear "$uri"
ok fault list "$uri"
[ -s "$tmpdir/out" ] && fail "rules left after clear: $(cat "$tmpdir/out")"

# A timeout rule: the read is never answered while another client's is.
# The server is then killed: nbdkit asked to stop waits for its client to
# go, and a client that goes first leaves nbdkit a reply to write to a
# closed socket, which nbdkit under the sanitizers' preload does not
# survive at exit.
ok fault add op=read zone=4 timeout count=1 "$uri"
nbdsh -u "$uri" -c "h.pread(4096, 4 * 2048 * 512)" >"$tmpdir/stuck.out" 2>&1 &
stuck=$!
tries=0
until "$zn" fault list "$uri" 2>/dev/null | grep -q "^[0-9]*: matched 1, hits 1: op=read"; do
  tries=$((tries + 1))
  [ "$tries" -le 300 ] || fail "the timeout rule never took the read: $("$zn" fault list "$uri")"
  sleep 0.1
done
nbdsh -u "$uri" -c "h.pread(4096, 5 * 2048 * 512)" ||
  fail "a read beside the held one failed"
kill -0 "$stuck" 2>/dev/null || fail "the read the rule times out was answered: $(cat "$tmpdir/stuck.out")"
kill -KILL "$pid"
wait "$pid" 2>/dev/null
wait "$stuck" && fail "the held read succeeded when the server went"

# The write log holds a when=after write, as the device does, and a mark
# that says the host saw it fail.
start_server logged $device log_writes="$tmpdir/after.wlog" \
  "fault=op=write zone=3 error=EIO when=after count=1"
[ "$(write_errno 3 0)" = EIO ] || fail "log_writes: the when=after rule did not fail the write"
stop_server "$pid"
ok replay "$tmpdir/after.wlog" --list
awk '$2 == "write" || $2 == "mark" { print $2, $4, $NF }' "$tmpdir/out" >"$tmpdir/entries"
[ "$(cat "$tmpdir/entries")" = "write 6144 -
mark - fault-after:write:6144" ] ||
  fail "the log of a when=after write: $(cat "$tmpdir/out")"

# Requests one at a time: a timeout would stall the connection.
start_server serial $device
refused 1 "one at a time" fault add op=read timeout "$uri"
ok fault add op=read error=EIO count=1 "$uri"
stop_server "$pid"

# zonednull-server takes every rule at run time: those that fail
# requests and those that hold them back.
ZONEDNULL_TARGET=server
start_server native $device
ok fault add op=write zone=2 error=ENOSPC count=1 "$uri"
ok fault add op=read zone=5 timeout count=1 "$uri"
ok fault add op=read zone=6 delay=10 "$uri"
[ "$(write_errno 2 0)" = ENOSPC ] || fail "zonednull-server: the rule did not fail zone 2"
[ "$(write_errno 2 0)" = OK ] || fail "zonednull-server: the rule outlived its count"
ok fault list "$uri"
grep -q "^1: matched 2, hits 1: op=write " "$tmpdir/out" ||
  fail "zonednull-server: fault list: $(cat "$tmpdir/out")"
grep -q "^2: matched 0, hits 0: op=read .*timeout" "$tmpdir/out" ||
  fail "zonednull-server: fault list, the timeout rule: $(cat "$tmpdir/out")"
stop_server "$pid"
exit 0
