#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The zonednull CLI against the plugin: every subcommand with its outcome,
# the report parsed as blkzone's, JSON validated, bad URIs and ranges
# refused, a read-only server, two clients changing zones at once, bad
# blocks and a power cycle with a volatile write cache.
#
# Device: 8 zones of 1 MiB (2048 sectors), zone 0 conventional, at most 2
# open and 3 active zones.
. "$(dirname "$0")/../common/lib.sh"

need_nbdsh

# shellcheck source=tests/common/cli-lib.sh
. "$(dirname "$0")/../common/cli-lib.sh"

device="size=8 zone_size=1 zone_nr_conv=1 zone_max_open=2 zone_max_active=3 memory_backed=1"
ZS=2048

# refused STATUS TEXT ARGS...: stricter than cli-lib.sh's: the CLI must
# exit with STATUS, print nothing on stdout, and say TEXT (a fixed
# string) on stderr.
refused () {
  want=$1 text=$2
  shift 2
  run "$@"
  [ "$rc" -eq "$want" ] ||
    fail "zonednull $*: exit $rc, expected $want; stderr: $(cat "$tmpdir/err")"
  [ ! -s "$tmpdir/out" ] ||
    fail "zonednull $*: unexpected output: $(cat "$tmpdir/out")"
  grep -qF -- "$text" "$tmpdir/err" ||
    fail "zonednull $*: stderr lacks '$text': $(cat "$tmpdir/err")"
}

# parse_report: blkzone report lines on stdin, one zone per output line:
#   start len cap wptr cond abbrev type type-name
# in decimal (wptr "-" where the zone has no write pointer).  Any line
# that is not exactly in blkzone's format fails the test, as would a
# change that broke fio's or blktests' parsers.
parse_report () {
  sed -e 's/^  start: \(0x[0-9a-f]\{9,\}\), len \(0x[0-9a-f]\{6,\}\), cap \(0x[0-9a-f]\{6,\}\), wptr \(0x[0-9a-f]\{6,\}\) reset:0 non-seq:0, zcond:\([ 1][0-9]\)(\([a-zA-Z0-9][a-zA-Z0-9]\)) \[type: \([0-9]\)(\([A-Z_]*\))\]$/\1 \2 \3 \4 \5 \6 \7 \8/' \
      -e t -e 's/^/BAD /' |
  while read -r start len cap wptr cond abbrev type tname; do
    [ "$start" != BAD ] || { echo BAD; continue; }
    case $cond in
      13|15) wptr=- ;;                     # all-ones write pointer
      *) wptr=$((wptr)) ;;
    esac
    echo "$((start)) $((len)) $((cap)) $wptr $cond $abbrev $type $tname"
  done
}

# report ARGS...: `zonednull report ARGS URI`, parsed into $tmpdir/zones.
report () {
  ok report "$@" "$uri"
  parse_report <"$tmpdir/out" >"$tmpdir/zones"
  ! grep -q BAD "$tmpdir/zones" ||
    fail "report $*: lines not in blkzone's format:
$(cat "$tmpdir/out")"
  [ "$(wc -l <"$tmpdir/zones")" -eq "$(wc -l <"$tmpdir/out")" ] ||
    fail "report $*: parsed $(wc -l <"$tmpdir/zones") of $(wc -l <"$tmpdir/out") lines"
}

# expect_zone IDX "start len cap wptr cond abbrev type type-name": the
# parsed line of zone IDX of a full report.
expect_zone () {
  report
  got=$(sed -n "$(($1 + 1))p" "$tmpdir/zones")
  [ "$got" = "$2" ] || fail "zone $1 is '$got', expected '$2'"
}

# seq_zone IDX WPTR COND ABBREV: a sequential zone's expected report line.
seq_zone () {
  echo "$(($1 * ZS)) $ZS $ZS $2 $3 $4 2 SEQ_WRITE_REQUIRED"
}

# info_field NAME: a value of `zonednull info`.
info_field () {
  ok info "$uri"
  sed -n "s/^$1: *//p" "$tmpdir/out"
}

# check_counters IMP EXP CLOSED: info's counters, in text and JSON, and a
# recount of the report must all agree with the expectation.
check_counters () {
  report
  count_imp=$(awk '$5 == 2' "$tmpdir/zones" | wc -l)
  count_exp=$(awk '$5 == 3' "$tmpdir/zones" | wc -l)
  count_closed=$(awk '$5 == 4' "$tmpdir/zones" | wc -l)
  [ "$count_imp $count_exp $count_closed" = "$1 $2 $3" ] ||
    fail "report shows $count_imp/$count_exp/$count_closed imp/exp/closed, expected $1/$2/$3"
  ok info "$uri"
  got=$(sed -n -e 's/^implicitly open: *//p' -e 's/^explicitly open: *//p' \
          -e 's/^closed: *//p' -e 's/^open: *//p' -e 's/^active: *//p' \
          "$tmpdir/out" | tr '\n' ' ')
  [ "$got" = "$1 $2 $3 $(($1 + $2)) $(($1 + $2 + $3)) " ] ||
    fail "info counters imp/exp/closed/open/active are '$got', expected $1/$2/$3"
  ok info --json "$uri"
  /usr/bin/python3 -c '
import json, sys
i = json.load(open(sys.argv[1]))
want = [int(a) for a in sys.argv[2:]]
got = [i["imp_open"], i["exp_open"], i["closed"], i["open"], i["active"]]
sys.exit(0 if got == want else "info --json counters %s, expected %s" % (got, want))
' "$tmpdir/out" "$1" "$2" "$3" $(($1 + $2)) $(($1 + $2 + $3)) ||
    fail "info --json disagrees"
}

# write_sectors SECTOR COUNT: a write through NBD at SECTOR.
write_sectors () {
  nbdsh -u "$uri" -c "h.pwrite(b'\\x5a' * ($2 * 512), $1 * 512)" \
    >"$tmpdir/nbdsh.out" 2>&1 ||
    fail "write of $2 sectors at $1 failed: $(cat "$tmpdir/nbdsh.out")"
}

# write_fails SECTOR COUNT: a write through NBD at SECTOR must fail with
# EIO, as a write over a bad block does.
write_fails () {
  nbdsh -u "$uri" -c "
import errno, sys
try:
    h.pwrite(b'\\x5a' * ($2 * 512), $1 * 512)
except nbd.Error as e:
    # errno is the name, errnum the number.
    sys.exit(0 if e.errnum == errno.EIO else 'failed with %s' % e)
sys.exit('succeeded')
" >"$tmpdir/nbdsh.out" 2>&1 ||
    fail "write of $2 sectors at $1 did not fail with EIO: $(cat "$tmpdir/nbdsh.out")"
}

# fill SECTOR COUNT BYTE [flush]: writes COUNT sectors of BYTE (a number)
# at SECTOR without FUA, then a flush if asked.
fill () {
  nbdsh -u "$uri" -c "h.pwrite(bytes([$3]) * ($2 * 512), $1 * 512)" \
    ${4:+-c h.flush()} >"$tmpdir/nbdsh.out" 2>&1 ||
    fail "write of $2 sectors of $3 at $1 failed: $(cat "$tmpdir/nbdsh.out")"
}

# expect_data SECTOR COUNT BYTE: the data at SECTOR must be COUNT sectors
# of BYTE.
expect_data () {
  nbdsh -u "$uri" -c "
import sys
got = h.pread($2 * 512, $1 * 512)
bad = sorted(set(got) - {$3})
sys.exit('bytes %s besides %d' % (bad, $3) if bad else 0)
" >"$tmpdir/nbdsh.out" 2>&1 ||
    fail "sectors $1+$2 do not hold only $3: $(cat "$tmpdir/nbdsh.out")"
}

# info_json KEY: a member of `zonednull info --json`.
info_json () {
  ok info --json "$uri"
  /usr/bin/python3 -c '
import json, sys
print(json.load(open(sys.argv[1]))[sys.argv[2]])
' "$tmpdir/out" "$1" || fail "info --json has no $1: $(cat "$tmpdir/out")"
}

# shellcheck disable=SC2086 # $device is a list of key=value words
start_server dev $device
dev_pid=$pid dev_uri=$uri dev_sock=$sock

# ---- help, version, usage errors -------------------------------------

ok --help
grep -q '^Usage:' "$tmpdir/out" || fail "--help prints no usage"
for c in report capacity reset open close finish info readonly offline \
         badblocks power-cycle append; do
  grep -q "^ $c " "$tmpdir/out" || fail "--help does not list $c"
done
ok -V
grep -q '^zonednull from zonednull ' "$tmpdir/out" || fail "-V: $(cat "$tmpdir/out")"

refused 2 "no command specified"
refused 2 "no command specified" -v "$uri"
refused 2 "bogus is not a valid command name" bogus "$uri"
refused 2 "no URI specified" report
refused 2 "unexpected number of arguments" report "$uri" extra
refused 2 "failed to parse zone offset" report -o 12x "$uri"
refused 2 "failed to parse zone offset" report -o 0x "$uri"
refused 2 "failed to parse zone offset" report -o -1 "$uri"
refused 2 "failed to parse number of sectors" reset -l 99999999999999999999 "$uri"
refused 2 "failed to parse number of zones" reset -c 0x100000000 "$uri"
refused 2 "--count must be at least 1" reset -c 0 "$uri"
refused 2 "--length must be at least 1" reset -l 0 "$uri"
refused 2 "mutually exclusive" reset -c 1 -l 2048 "$uri"
refused 2 "--json applies to" reset --json "$uri"
refused 2 "readonly needs -o" readonly "$uri"
refused 2 "acts on one zone" offline -o 2048 -c 2 "$uri"
refused 2 "info takes no" info -o 0 "$uri"
refused 2 "unrecognized option" report --bogus "$uri"
refused 2 "badblocks needs -o SECTOR" badblocks -l 8 "$uri"
refused 2 "badblocks needs -o SECTOR" badblocks --clear -l 8 "$uri"
refused 2 "badblocks needs -l SECTORS" badblocks -o 0 "$uri"
refused 2 "--length must be at least 1" badblocks -o 0 -l 0 "$uri"
refused 2 "--count does not apply" badblocks -o 0 -c 1 "$uri"
refused 2 "failed to parse number of sectors" badblocks -o 0 -l 8x "$uri"
refused 2 "--clear applies to badblocks only" reset --clear "$uri"
refused 2 "--json applies to" badblocks --json -o 0 -l 8 "$uri"
for opt in "-o 0" "-l 8" "-c 1"; do
  # shellcheck disable=SC2086 # an option and its value
  refused 2 "power-cycle acts on the whole device: it takes no --offset, --length or --count" \
    power-cycle $opt "$uri"
done
refused 2 "--json applies to" power-cycle --json "$uri"
refused 2 "append needs -o SECTOR" append --pattern 1 -l 8 "$uri"
refused 2 "append needs its data: one of --file FILE and --pattern BYTE" \
  append -o $ZS -l 8 "$uri"
refused 2 "append needs its data: one of --file FILE and --pattern BYTE" \
  append -o $ZS -l 8 --pattern 1 --file /dev/null "$uri"
refused 2 "append --pattern needs -l SECTORS" append -o $ZS --pattern 1 "$uri"
refused 2 "append acts on one zone: --count does not apply" \
  append -o $ZS -c 1 --pattern 1 "$uri"
refused 2 "failed to parse pattern byte" append -o $ZS -l 1 --pattern 256 "$uri"
refused 2 "--file, --pattern and --fua apply to append only" \
  report --pattern 1 "$uri"
refused 2 "--file, --pattern and --fua apply to append only" reset --fua "$uri"

# ---- bad URIs and exports --------------------------------------------

refused 1 "names no host" report "nbd://"
refused 1 "unknown NBD URI scheme" report "foo://x"
refused 1 "no export named 'nosuch'" report "nbd+unix:///nosuch?socket=$dev_sock"
refused 1 "No such file or directory" report "nbd+unix:///?socket=$tmpdir/none.sock"
# The default device by name, and percent-encoded.
ok capacity "nbd+unix:///nullb0?socket=$dev_sock"
ok capacity "nbd+unix:///null%62%30?socket=$dev_sock"

# ---- report and capacity ---------------------------------------------

# expect_fresh [WHEN]: the report shows zone 0 conventional and every
# sequential zone EMPTY, as at power-on.
expect_fresh () {
  report
  [ "$(wc -l <"$tmpdir/zones")" -eq 8 ] || fail "report$1: $(cat "$tmpdir/out")"
  [ "$(sed -n 1p "$tmpdir/zones")" = "0 $ZS $ZS 0 0 nw 1 CONVENTIONAL" ] ||
    fail "zone 0$1: $(sed -n 1p "$tmpdir/zones")"
  i=1
  while [ $i -lt 8 ]; do
    [ "$(sed -n "$((i + 1))p" "$tmpdir/zones")" = "$(seq_zone $i 0 1 em)" ] ||
      fail "zone $i$1: $(sed -n "$((i + 1))p" "$tmpdir/zones")"
    i=$((i + 1))
  done
}

expect_fresh
# The exact text of one line, as blkzone prints it.
grep -qxF '  start: 0x000000800, len 0x000800, cap 0x000800, wptr 0x000000 reset:0 non-seq:0, zcond: 1(em) [type: 2(SEQ_WRITE_REQUIRED)]' \
  "$tmpdir/out" || fail "zone 1's line differs from blkzone's: $(sed -n 2p "$tmpdir/out")"

# -o selects the zone holding the sector; -c counts zones; -l covers
# sectors.
report -o 0x800 -c 2
[ "$(cut -d' ' -f1 "$tmpdir/zones" | tr '\n' ' ')" = "2048 4096 " ] ||
  fail "report -o 0x800 -c 2: $(cat "$tmpdir/out")"
report -o 2049 -c 1
[ "$(cut -d' ' -f1 "$tmpdir/zones")" = 2048 ] || fail "report -o 2049 -c 1"
report -o 2048 -l 4097
[ "$(wc -l <"$tmpdir/zones")" -eq 3 ] || fail "report -l 4097 gave $(wc -l <"$tmpdir/zones") zones"
report -o 16383 -c 5
[ "$(cut -d' ' -f1 "$tmpdir/zones")" = 14336 ] || fail "report -o 16383"
report -o 1K -c 1
[ "$(cut -d' ' -f1 "$tmpdir/zones")" = 0 ] || fail "report -o 1K"
report -o 2KiB -c 1
[ "$(cut -d' ' -f1 "$tmpdir/zones")" = 2048 ] || fail "report -o 2KiB"
refused 1 "offset 16384 is at or beyond the end" report -o 16384 "$uri"
ok report -v -c 2 "$uri"
grep -qx 'Found 2 zones from 0x0' "$tmpdir/out" || fail "report -v: $(cat "$tmpdir/out")"

ok capacity "$uri"
[ "$(cat "$tmpdir/out")" = 0x000004000 ] || fail "capacity: $(cat "$tmpdir/out")"
ok capacity -o 2048 -c 2 "$uri"
[ "$(cat "$tmpdir/out")" = 0x000001000 ] || fail "capacity -c 2: $(cat "$tmpdir/out")"

# ---- zone operations and write pointers --------------------------------

write_sectors $((2 * ZS)) 8
expect_zone 2 "$(seq_zone 2 8 2 oi)"
check_counters 1 0 0
ok finish -o $((2 * ZS)) -c 1 "$uri"
expect_zone 2 "$(seq_zone 2 $ZS 14 fu)"
ok open -o 0x1800 -c 1 "$uri"
expect_zone 3 "$(seq_zone 3 0 3 oe)"
check_counters 0 1 0
# Closing an empty zone makes it EMPTY again.
ok close -o 0x1800 -l $ZS "$uri"
expect_zone 3 "$(seq_zone 3 0 1 em)"
ok reset -v -o $((2 * ZS)) -c 1 "$uri"
grep -qF "successful reset of zones in range from 4096, to 6144" "$tmpdir/out" ||
  fail "reset -v: $(cat "$tmpdir/out")"
expect_zone 2 "$(seq_zone 2 0 1 em)"
# A length past the end is cut at the end, where a partial zone
# multiple is fine.
ok finish -o $((7 * ZS)) -l 100000 "$uri"
expect_zone 7 "$(seq_zone 7 $ZS 14 fu)"
ok reset -o $((6 * ZS)) -c 10 "$uri"
expect_zone 7 "$(seq_zone 7 0 1 em)"
check_counters 0 0 0

# Ranges the device would refuse are refused before sending.
refused 1 "reset: offset 100 is not aligned to the zone size (2048 sectors)" \
  reset -o 100 "$uri"
refused 1 "open: number of sectors 100 is not aligned to the zone size" \
  open -o 2048 -l 100 "$uri"
refused 1 "close: offset 16384 is at or beyond the end" close -o 16384 "$uri"
refused 1 "at or beyond the end" finish -o 0x10000000000 "$uri"
# Conventional zones have no zone operations: the device's EIO.
refused 1 "open zone 0 (sectors 0-2047): EIO: Input/output error" \
  open -o 0 -c 1 "$uri"

# ---- limits: 2 open, 3 active ------------------------------------------

ok open -o $((1 * ZS)) -c 1 "$uri"
ok open -o $((3 * ZS)) -c 1 "$uri"
refused 1 "open zone 4 (sectors 8192-10239): ETOOMANYREFS: Too many references" \
  open -o $((4 * ZS)) -c 1 "$uri"
# A range: zones 4 and 5 are both refused, the error is the range's.
refused 1 "open zones 4-5 (sectors 8192-12287): ETOOMANYREFS" \
  open -o $((4 * ZS)) -c 2 "$uri"
check_counters 0 2 0
write_sectors $ZS 8
ok close -o $ZS -c 1 "$uri"
expect_zone 1 "$(seq_zone 1 8 4 cl)"
ok open -o $((4 * ZS)) -c 1 "$uri"
check_counters 0 2 1
refused 1 "open zone 5 (sectors 10240-12287): EOVERFLOW: Value too large" \
  open -o $((5 * ZS)) -c 1 "$uri"
refused 1 "finish zone 5 (sectors 10240-12287): EOVERFLOW" \
  finish -o $((5 * ZS)) -c 1 "$uri"
check_counters 0 2 1

# ---- JSON ----------------------------------------------------------------

ok report --json "$uri"
/usr/bin/python3 -m json.tool "$tmpdir/out" >/dev/null ||
  fail "report --json is not JSON: $(cat "$tmpdir/out")"
/usr/bin/python3 -c '
import json, sys
z = json.load(open(sys.argv[1]))["zones"]
assert len(z) == 8, z
assert z[0] == {"start": 0, "len": 2048, "cap": 2048, "wp": None, "type": 1,
                "type_name": "CONVENTIONAL", "cond": 0, "cond_name": "NOT_WP"}, z[0]
assert z[1]["wp"] == 2048 + 8 and z[1]["cond_name"] == "CLOSED", z[1]
assert z[3]["cond"] == 3 and z[3]["cond_name"] == "EXP_OPEN", z[3]
assert all(x["start"] == i * 2048 for i, x in enumerate(z)), z
' "$tmpdir/out" || fail "report --json has wrong values"
ok report --json -o 0x3000 -c 5 "$uri"
/usr/bin/python3 -c '
import json, sys
z = json.load(open(sys.argv[1]))["zones"]
assert [x["start"] for x in z] == [12288, 14336], z
' "$tmpdir/out" || fail "report --json -o -c: $(cat "$tmpdir/out")"
ok capacity --json "$uri"
/usr/bin/python3 -c '
import json, sys
assert json.load(open(sys.argv[1])) == {"capacity": 16384}
' "$tmpdir/out" || fail "capacity --json: $(cat "$tmpdir/out")"
ok info --json "$uri"
/usr/bin/python3 -c '
import json, sys
i = json.load(open(sys.argv[1]))
want = {"version": 1, "capacity": 16384, "size": 8388608, "zone_sectors": 2048,
        "zone_capacity": 2048, "nr_zones": 8, "nr_conv": 1, "block_size": 512,
        "max_open": 2, "max_active": 3, "memory_backed": True,
        "read_only": False}
bad = {k: i.get(k) for k in want if i.get(k) != want[k]}
assert not bad, bad
' "$tmpdir/out" || fail "info --json: $(cat "$tmpdir/out")"
if command -v jq >/dev/null; then
  ok report --json "$uri"
  [ "$(jq '.zones | length' "$tmpdir/out")" = 8 ] || fail "jq: report --json"
fi

# ---- info ------------------------------------------------------------------

[ "$(info_field capacity)" = "16384 sectors (8388608 bytes)" ] || fail "info capacity"
[ "$(info_field 'zone size')" = "2048 sectors" ] || fail "info zone size"
[ "$(info_field zones)" = "8 (1 conventional, 7 sequential write required)" ] ||
  fail "info zones"
[ "$(info_field 'max open zones')" = 2 ] || fail "info max open"
[ "$(info_field 'max active zones')" = 3 ] || fail "info max active"
[ "$(info_field 'memory backed')" = yes ] || fail "info memory backed"
[ "$(info_field 'read-only server')" = no ] || fail "info read-only"

# ---- reset-all, readonly, offline ------------------------------------

ok reset "$uri"
check_counters 0 0 0
report
[ "$(awk '$5 != 1' "$tmpdir/zones" | wc -l)" -eq 1 ] ||
  fail "reset left zones not empty: $(cat "$tmpdir/out")"

ok readonly -v -o $((5 * ZS + 7)) "$uri"
grep -qF "zone 5 (sectors 10240-12287) is now READONLY" "$tmpdir/out" ||
  fail "readonly -v: $(cat "$tmpdir/out")"
report -o $((5 * ZS)) -c 1
[ "$(cat "$tmpdir/zones")" = "10240 2048 2048 - 13 ro 2 SEQ_WRITE_REQUIRED" ] ||
  fail "read-only zone: $(cat "$tmpdir/out")"
refused 1 "reset zone 5 (sectors 10240-12287): EIO" reset -o $((5 * ZS)) -c 1 "$uri"
ok readonly -o $((5 * ZS)) "$uri"
expect_zone 5 "$(seq_zone 5 0 1 em)"

ok offline -o $((6 * ZS)) "$uri"
report -o $((6 * ZS)) -c 1
[ "$(cat "$tmpdir/zones")" = "12288 2048 2048 - 15 of 2 SEQ_WRITE_REQUIRED" ] ||
  fail "offline zone: $(cat "$tmpdir/out")"
refused 1 "open zone 6 (sectors 12288-14335): EIO" open -o $((6 * ZS)) -c 1 "$uri"
ok capacity "$uri"
ok offline -v -o $((6 * ZS)) "$uri"
grep -qF "is now EMPTY" "$tmpdir/out" || fail "offline -v: $(cat "$tmpdir/out")"

refused 1 "readonly zone 0 (sectors 0-2047): EINVAL: Invalid argument" \
  readonly -o 0 "$uri"
refused 1 "at or beyond the end" offline -o 16384 "$uri"
check_counters 0 0 0

# ---- two clients at once -------------------------------------------------

# cycle FIRST: 12 rounds over zones FIRST..FIRST+2, each an open, a
# finish or close, and a reset.  A client keeps at most one zone active,
# so with two clients the limits (2 open, 3 active) never refuse.
cycle () {
  r=0
  while [ $r -lt 12 ]; do
    s=$((($1 + r % 3) * ZS))
    "$zn" open -o $s -c 1 "$uri" || exit 1
    if [ $((r % 2)) -eq 0 ]; then
      "$zn" finish -o $s -c 1 "$uri" || exit 1
    else
      "$zn" close -o $s -c 1 "$uri" || exit 1
    fi
    "$zn" reset -o $s -c 1 "$uri" || exit 1
    r=$((r + 1))
  done
  # Leave the first zone explicitly open.
  "$zn" open -o $(($1 * ZS)) -c 1 "$uri" || exit 1
}
cycle 1 2>"$tmpdir/cycle1.err" &
cycle1=$!
cycle 4 2>"$tmpdir/cycle4.err" &
cycle4=$!
wait $cycle1 || fail "client 1 failed: $(cat "$tmpdir/cycle1.err")"
wait $cycle4 || fail "client 2 failed: $(cat "$tmpdir/cycle4.err")"
expect_zone 1 "$(seq_zone 1 0 3 oe)"
expect_zone 4 "$(seq_zone 4 0 3 oe)"
check_counters 0 2 0
write_sectors $ZS 8
ok close -o $ZS -c 1 "$uri"
expect_zone 1 "$(seq_zone 1 8 4 cl)"
check_counters 0 1 1
ok reset "$uri"
check_counters 0 0 0

# ---- zone append ---------------------------------------------------------

[ "$(info_field 'max append')" = "255 sectors" ] || fail "info: max append"
[ "$(info_json max_append_sectors)" = 255 ] || fail "info --json: max_append_sectors"

# The output is the sector the data landed at; the data follows the wp.
ok append -o $ZS -l 8 --pattern 0x11 "$uri"
[ "$(cat "$tmpdir/out")" = $ZS ] || fail "append: $(cat "$tmpdir/out")"
ok append -o $ZS -l 16 --pattern 0x22 --fua "$uri"
[ "$(cat "$tmpdir/out")" = $((ZS + 8)) ] || fail "append --fua: $(cat "$tmpdir/out")"
expect_data $ZS 8 17
expect_data $((ZS + 8)) 16 34
expect_zone 1 "$(seq_zone 1 24 2 oi)"
# From a file, and from standard input with -l taking its first sectors.
head -c $((255 * 512)) /dev/urandom >"$tmpdir/append.data"
ok append -v -o $ZS --file "$tmpdir/append.data" "$uri"
grep -qxF "$uri: 255 sectors appended to zone 1 (sectors 2048-4095) at sector $((ZS + 24))" \
  "$tmpdir/out" || fail "append -v: $(cat "$tmpdir/out")"
run append --json -o $ZS -l 2 --file - "$uri" <"$tmpdir/append.data"
[ "$rc" -eq 0 ] || fail "append --file -: $(cat "$tmpdir/err")"
/usr/bin/python3 -c '
import json, sys
a = json.load(open(sys.argv[1]))
sys.exit(0 if a == {"sector": int(sys.argv[2]), "nr_sectors": 2} else "append --json: %s" % a)
' "$tmpdir/out" $((ZS + 24 + 255)) || fail "append --json"
nbdsh -u "$uri" -c "
import sys
want = open('$tmpdir/append.data', 'rb').read()
got = h.pread(257 * 512, ($ZS + 24) * 512)
sys.exit(0 if got == want + want[:1024] else 'appended file data differs')
" >"$tmpdir/nbdsh.out" 2>&1 || fail "append --file: $(cat "$tmpdir/nbdsh.out")"

# The device's refusals, with its errno; the CLI's own, naming the rule.
refused 1 "append zone 0 (sectors 0-2047): EIO" append -o 0 -l 1 --pattern 1 "$uri"
refused 1 "append zone 1 (sectors 2048-4095): EIO: zone append of 256 sectors exceeds the device's max_append_sectors (255)" \
  append -o $ZS -l 256 --pattern 1 "$uri"
refused 1 "append: offset 2056 is not the start of a zone (zone size 2048 sectors)" \
  append -o $((ZS + 8)) -l 1 --pattern 1 "$uri"
refused 1 "at or beyond the end" append -o 16384 -l 1 --pattern 1 "$uri"
head -c 1000 /dev/zero >"$tmpdir/odd.data"
refused 1 "holds 1000 bytes, not a whole number of 512-byte sectors" \
  append -o $ZS --file "$tmpdir/odd.data" "$uri"
refused 1 "is empty" append -o $ZS --file /dev/null "$uri"
refused 1 "fewer than the 1024 of -l 2 sectors" \
  append -o $ZS -l 2 --file "$tmpdir/odd.data" "$uri"
cat "$tmpdir/append.data" "$tmpdir/append.data" >"$tmpdir/big.data"
refused 1 "larger than the device's max_append_sectors (255 sectors)" \
  append -o $ZS --file "$tmpdir/big.data" "$uri"
refused 1 "append: $tmpdir/absent: No such file or directory" \
  append -o $ZS --file "$tmpdir/absent" "$uri"
expect_zone 1 "$(seq_zone 1 281 2 oi)"
# A full zone, and the limits (2 open, 3 active): with zone 1 closed and
# zones 3 and 4 explicitly open, the closed zone has no open slot to
# reopen in and an empty zone no active slot.
ok finish -o $((2 * ZS)) -c 1 "$uri"
refused 1 "append zone 2 (sectors 4096-6143): EIO" append -o $((2 * ZS)) -l 1 --pattern 1 "$uri"
ok close -o $ZS -c 1 "$uri"
ok open -o $((3 * ZS)) -c 2 "$uri"
check_counters 0 2 1
refused 1 "append zone 1 (sectors 2048-4095): ETOOMANYREFS" \
  append -o $ZS -l 1 --pattern 1 "$uri"
refused 1 "append zone 5 (sectors 10240-12287): EOVERFLOW" \
  append -o $((5 * ZS)) -l 1 --pattern 1 "$uri"
ok append -o $((4 * ZS)) -l 1 --pattern 1 "$uri"
[ "$(cat "$tmpdir/out")" = $((4 * ZS)) ] || fail "append to an open zone: $(cat "$tmpdir/out")"
expect_zone 1 "$(seq_zone 1 281 4 cl)"
ok reset "$uri"

# Two CLIs appending to one zone at once: 10 pieces each of its own byte;
# the landed sectors tile the zone's start and each piece holds its byte.
append_loop () {
  i=0
  while [ $i -lt 10 ]; do
    "$zn" append -o $((6 * ZS)) -l 8 --pattern "$1" "$uri" || exit 1
    i=$((i + 1))
  done
}
append_loop 0x41 >"$tmpdir/append41.out" 2>"$tmpdir/append41.err" &
append41=$!
append_loop 0x42 >"$tmpdir/append42.out" 2>"$tmpdir/append42.err" &
append42=$!
wait $append41 || fail "appender 1 failed: $(cat "$tmpdir/append41.err")"
wait $append42 || fail "appender 2 failed: $(cat "$tmpdir/append42.err")"
[ "$(sort -n "$tmpdir/append41.out" "$tmpdir/append42.out" | tr '\n' ' ')" = \
  "$(i=0; while [ $i -lt 20 ]; do printf '%d ' $((6 * ZS + 8 * i)); i=$((i + 1)); done)" ] ||
  fail "concurrent appends do not tile the zone: $(cat "$tmpdir/append41.out" "$tmpdir/append42.out" | tr '\n' ' ')"
while read -r at; do expect_data "$at" 8 65; done <"$tmpdir/append41.out"
while read -r at; do expect_data "$at" 8 66; done <"$tmpdir/append42.out"
expect_zone 6 "$(seq_zone 6 160 2 oi)"
ok reset "$uri"

stop_server "$dev_pid"

# ---- TLS ---------------------------------------------------------------

# Both connections (data and control) must negotiate TLS from the URI.
# Not with a preloaded sanitizer runtime: nbdkit, which is not built with
# it, then deadlocks in p11-kit's exit handler (freelocale), outside our
# code.
if [ -n "${ZONEDNULL_PRELOAD:-}" ]; then
  echo "$0: TLS not tested with a preloaded sanitizer runtime" >&2
elif [ "${ZONEDNULL_TARGET:-nbdkit}" = server ]; then
  echo "$0: TLS not tested: zonednull-server has no TLS" >&2
elif "$NBDKIT" --dump-config | grep -qx 'tls=yes'; then
  printf 'alice:%s\n' "$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')" \
    >"$tmpdir/keys.psk"
  # shellcheck disable=SC2086
  start_server tls --tls=require --tls-psk="$tmpdir/keys.psk" $device
  tls_uri="nbds+unix://alice@/?socket=$sock&tls-psk-file=$tmpdir/keys.psk"
  ok open -o $ZS -c 1 "$tls_uri"
  ok report -o $ZS -c 1 "$tls_uri"
  parse_report <"$tmpdir/out" >"$tmpdir/zones"
  [ "$(cat "$tmpdir/zones")" = "$(seq_zone 1 0 3 oe)" ] ||
    fail "report over TLS: $(cat "$tmpdir/out")"
  refused 1 "TLS" report "$uri"
  stop_server "$pid"
fi

# ---- bad blocks and a power cycle ---------------------------------------

# A 1 MiB volatile write cache, so that a power cycle has data to lose.
# shellcheck disable=SC2086
start_server cache $device cache_size=1
[ "$(info_json badblock_ranges)" = 0 ] || fail "badblock_ranges at start"
[ "$(info_json cache_size)" = 1048576 ] || fail "cache_size: $(cat "$tmpdir/out")"

# A sequential zone: a write over the bad range fails and leaves the write
# pointer where it was.
ok badblocks -v -o $((2 * ZS + 8)) -l 8 "$uri"
grep -qxF "$uri: sectors 4104-4111 marked bad (1 bad block range on the device)" \
  "$tmpdir/out" || fail "badblocks -v: $(cat "$tmpdir/out")"
[ "$(info_json badblock_ranges)" = 1 ] || fail "badblock_ranges after badblocks"
[ "$(info_field 'bad block ranges')" = 1 ] || fail "info text: bad block ranges"
write_fails $((2 * ZS)) 16
report -o $((2 * ZS)) -c 1
[ "$(cut -d' ' -f4 "$tmpdir/zones")" = 0 ] ||
  fail "a write over a bad block moved the write pointer: $(cat "$tmpdir/out")"
# Sectors outside the range stay good.
write_sectors $((2 * ZS)) 8

# A conventional zone has bad blocks as well; a clear of part of a range
# splits it.
ok badblocks -o 16 -l 16 "$uri"
ok badblocks --clear -o 20 -l 4 "$uri"
[ "$(info_json badblock_ranges)" = 3 ] || fail "badblock_ranges after a split"
write_fails 16 1
write_fails 24 8
write_sectors 20 4
ok badblocks --clear -v -o 16 -l 16 "$uri"
grep -qxF "$uri: sectors 16-31 marked good (1 bad block range on the device)" \
  "$tmpdir/out" || fail "badblocks --clear -v: $(cat "$tmpdir/out")"
write_sectors 16 16
ok badblocks --clear -o $((2 * ZS + 8)) -l 8 "$uri"
[ "$(info_json badblock_ranges)" = 0 ] || fail "badblock_ranges after --clear"
[ "$(info_field 'bad block ranges')" = 0 ] || fail "info text: bad block ranges 0"
write_sectors $((2 * ZS + 8)) 8
report -o $((2 * ZS)) -c 1
[ "$(cut -d' ' -f4 "$tmpdir/zones")" = 16 ] ||
  fail "write after --clear: $(cat "$tmpdir/out")"
# A range wrapping past the last sector number: the device's EINVAL.
refused 1 "badblocks 2 sectors from sector 18446744073709551615: EINVAL: Invalid argument" \
  badblocks -o 0xffffffffffffffff -l 2 "$uri"
refused 1 "badblocks --clear sectors 18446744073709551615-18446744073709551615: EINVAL" \
  badblocks --clear -o 0xffffffffffffffff -l 1 "$uri"

# Power cycle: in the conventional zone, flushed data survives and data
# written since is lost; every sequential zone is EMPTY.
fill 0 8 17 flush
fill 64 8 17 flush
[ "$(info_json cache_dirty)" = 0 ] || fail "cache_dirty after a flush"
fill 0 8 34
fill 128 8 34
[ "$(info_json cache_dirty)" = 8192 ] || fail "cache_dirty of 2 unflushed writes"
[ "$(info_field 'write cache')" = "1048576 bytes (8192 not written back)" ] ||
  fail "info text: write cache: $(cat "$tmpdir/out")"
expect_data 0 8 34
ok close -o $((2 * ZS)) -c 1 "$uri"
ok open -o $((3 * ZS)) -c 1 "$uri"
ok finish -o $((4 * ZS)) -c 1 "$uri"
expect_zone 2 "$(seq_zone 2 16 4 cl)"
expect_zone 4 "$(seq_zone 4 $ZS 14 fu)"
check_counters 0 1 1
ok power-cycle -v "$uri"
grep -qxF "$uri: powered off and on, keeping none of the writes neither flushed nor written with FUA" \
  "$tmpdir/out" || fail "power-cycle -v: $(cat "$tmpdir/out")"
expect_fresh " after a power cycle"
check_counters 0 0 0
[ "$(info_json cache_dirty)" = 0 ] || fail "cache_dirty after a power cycle"
expect_data 0 8 17
expect_data 64 8 17
expect_data 128 8 0
# Without -v, nothing on stdout.
ok power-cycle "$uri"
[ ! -s "$tmpdir/out" ] || fail "power-cycle printed: $(cat "$tmpdir/out")"
stop_server "$pid"

# The kernel's table holds 512 entries (issue 15): 512 ranges of 3
# sectors, 5 apart, set at start-up fill it, and the control channel
# refuses one more, even one that would only extend an entry (the kernel
# checks for room first), and a clear that would split one.
full=$(i=0; while [ $i -lt 512 ]; do
         printf ' badblocks=+%d-%d' $((5 * i)) $((5 * i + 2)); i=$((i + 1))
       done)
# shellcheck disable=SC2086
start_server full $device $full
[ "$(info_json badblock_ranges)" = 512 ] || fail "badblock_ranges of a full table"
refused 1 "badblocks sectors 3-3: ENOSPC: the bad block table is full (as the kernel's, 512 entries of at most 512 sectors); the part that fitted is bad" \
  badblocks -o 3 -l 1 "$uri"
refused 1 "badblocks --clear sectors 1-1: ENOSPC: the bad block table is full (as the kernel's, 512 entries of at most 512 sectors): clearing the range would split an entry" \
  badblocks --clear -o 1 -l 1 "$uri"
[ "$(info_json badblock_ranges)" = 512 ] || fail "a refused set changed the table"
write_fails 1 1
write_sectors 3 1
# Shrinking an entry needs no room; then there is room for one more.
ok badblocks --clear -o 0 -l 3 "$uri"
ok badblocks -o 3 -l 1 "$uri"
[ "$(info_json badblock_ranges)" = 512 ] || fail "badblock_ranges after a clear and a set"
write_fails 3 1
write_sectors 0 3
stop_server "$pid"

# ---- read-only server ----------------------------------------------------

# shellcheck disable=SC2086
start_server ro -r $device
report
[ "$(wc -l <"$tmpdir/zones")" -eq 8 ] || fail "report on a read-only server"
ok capacity "$uri"
[ "$(info_field 'read-only server')" = yes ] || fail "info on a read-only server"
for op in reset open close finish; do
  refused 1 "$op zone 1 (sectors 2048-4095): EPERM" $op -o $ZS -c 1 "$uri"
  grep -qF "read-only" "$tmpdir/err" || fail "$op: $(cat "$tmpdir/err")"
done
refused 1 "EPERM" reset "$uri"
refused 1 "readonly zone 1 (sectors 2048-4095): EPERM" readonly -o $ZS "$uri"
refused 1 "offline zone 1 (sectors 2048-4095): EPERM" offline -o $ZS "$uri"
refused 1 "badblocks sectors 2048-2055: EPERM" badblocks -o $ZS -l 8 "$uri"
grep -qF "read-only" "$tmpdir/err" || fail "badblocks: $(cat "$tmpdir/err")"
refused 1 "badblocks --clear sectors 2048-2055: EPERM" \
  badblocks --clear -o $ZS -l 8 "$uri"
[ "$(info_json badblock_ranges)" = 0 ] || fail "a read-only server took bad blocks"
refused 1 "power-cycle: EPERM" power-cycle "$uri"
refused 1 "append zone 1 (sectors 2048-4095): EPERM" append -o $ZS -l 1 --pattern 1 "$uri"
grep -qF "read-only" "$tmpdir/err" || fail "append: $(cat "$tmpdir/err")"
grep -qF "read-only" "$tmpdir/err" || fail "power-cycle: $(cat "$tmpdir/err")"
report
[ "$(awk '$5 == 1' "$tmpdir/zones" | wc -l)" -eq 7 ] ||
  fail "a read-only server changed: $(cat "$tmpdir/out")"
stop_server "$pid"

# ---- kernel= -------------------------------------------------------------

# The default is 6.1; a 6.12 device with its attributes says so in info,
# starts with FULL zones, and advertises no FUA without a cache.
start_server k61 size=8 zone_size=1
[ "$(info_field kernel)" = "6.1 (null_blk of Linux 6.1)" ] || fail "info kernel 6.1"
"$NBDINFO" --can fua "$uri" || fail "6.1 lost FUA"
stop_server "$pid"
start_server k612 kernel=6.12 size=8 zone_size=1 zone_nr_conv=1 zone_full=1 \
  fua=1 zone_append_max_sectors=0 memory_backed=1
[ "$(info_field kernel)" = "6.12 (null_blk of Linux 6.12)" ] || fail "info kernel 6.12"
[ "$(info_field zone_full)" = yes ] || fail "info zone_full"
[ "$(info_field fua)" = no ] || fail "info fua without a cache"
[ "$(info_json kernel)" = 6.12 ] || fail "info --json kernel"
[ "$(info_json append_emulated)" = True ] || fail "info --json append_emulated"
! "$NBDINFO" --can fua "$uri" || fail "6.12 advertises FUA without a cache"
report
[ "$(awk '$5 == 14' "$tmpdir/zones" | wc -l)" -eq 7 ] ||
  fail "zone_full: not 7 FULL zones: $(cat "$tmpdir/out")"
stop_server "$pid"

exit 0
