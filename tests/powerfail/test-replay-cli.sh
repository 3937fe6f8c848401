#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# zonednull replay from the command line, on logs of tests/powerfail/
# wlog-make: --list finds the marks; a state is a backing_dir that
# zonednull-server serves; enumerate writes DIR/state-NNNNNN and says
# what each kept; and replay writes nowhere but into its new or empty
# DIR: not through a symbolic link (named with a trailing '/' too), not
# into a directory that holds anything (a planted link included); a log
# that is a FIFO is refused; seeds are decimal or 0x; a zone file that
# cannot be made fails replay, which then leaves no state behind; a
# small log that would make a disk's worth of work needs --force.
. "$(dirname "$0")/../common/lib.sh"

zn=$ZONEDNULL_CLI
make_log=$ZONEDNULL_BUILDDIR/tests/powerfail/wlog-make
log=$tmpdir/log
geometry="size=8 zone_size=1 zone_nr_conv=2 blocksize=4096"

"$make_log" "$log" 5 120 || fail "wlog-make failed"

# --list: a header, then one line per entry; the marks by name.
"$zn" replay "$log" --list >"$tmpdir/list" || fail "--list failed"
head -1 "$tmpdir/list" | grep -q '^entry  *kind  *zone  *sector  *sectors  *fua  *mark' ||
  fail "--list header: $(head -1 "$tmpdir/list")"
sed -n 2p "$tmpdir/list" | grep -q '^0  *geometry' || fail "entry 0 is not listed"
end=$(awk '$2 == "mark" && $7 == "end" { print $1 }' "$tmpdir/list")
[ -n "$end" ] || fail "the mark 'end' is not in --list"
[ "$(tail -1 "$tmpdir/list" | awk '{ print $1 }')" = "$end" ] ||
  fail "the last entry is not the mark end"
m1=$(awk '$2 == "mark" && $7 == "m1" { print $1 }' "$tmpdir/list")
"$zn" replay "$log" --to m1 --list | tail -1 | grep -q "^$m1 .* m1\$" ||
  fail "--list --to m1 does not stop at m1"

# A state to the end, served by zonednull-server.
"$zn" replay "$log" --to end -o "$tmpdir/state" >"$tmpdir/out" ||
  fail "replay to the end failed: $(cat "$tmpdir/out")"
grep -q "^to entry $end (mark end), --crash=all: " "$tmpdir/out" ||
  fail "replay did not say what it wrote: $(cat "$tmpdir/out")"
[ "$(stat -c %a "$tmpdir/state")" = 700 ] || fail "DIR is not mode 0700"
ZONEDNULL_TARGET=server
start_server state $geometry backing_dir="$tmpdir/state"
"$zn" report "$uri" >"$tmpdir/report" || fail "report of the state failed"
[ "$(wc -l <"$tmpdir/report")" -eq 8 ] || fail "the state has not 8 zones"
stop_server "$pid"

# enumerate: a directory per state, a line per state.
"$zn" replay "$log" --to end --crash=enumerate:5 -o "$tmpdir/enum" \
  >"$tmpdir/out" || fail "enumerate failed: $(cat "$tmpdir/out")"
[ "$(ls "$tmpdir/enum" | tr '\n' ' ')" = \
  "state-000000 state-000001 state-000002 state-000003 state-000004 " ] ||
  fail "enumerate made $(ls "$tmpdir/enum")"
[ "$(grep -c '^state-00000[0-4]: state [0-4] of 5 (of [0-9]* distinct), to entry ' "$tmpdir/out")" -eq 5 ] ||
  fail "enumerate's lines: $(cat "$tmpdir/out")"
grep -q "^state-000000: .*--crash=enumerate:5: .*kept 0 of" "$tmpdir/out" ||
  fail "state 0 keeps something: $(cat "$tmpdir/out")"

# Bad arguments, each refused with what is wrong.
refused () {
  want=$1
  shift
  if "$zn" replay "$@" >"$tmpdir/out" 2>"$tmpdir/err"; then
    fail "replay $* succeeded"
  fi
  grep -q -- "$want" "$tmpdir/err" ||
    fail "replay $*: expected '$want', got: $(cat "$tmpdir/err")"
}
refused "--to nosuch: no mark of that name" "$log" --to nosuch -o "$tmpdir/x"
refused "'random:x' is not a policy" "$log" --crash=random:x -o "$tmpdir/x"
refused "-o DIR, the state's directory, is missing" "$log"
[ ! -e "$tmpdir/x" ] || fail "a refused replay made its DIR"

# DIR a symbolic link: refused, and nothing lands where it points.
mkdir "$tmpdir/outside"
ln -s "$tmpdir/outside" "$tmpdir/link"
refused "a symbolic link" "$log" -o "$tmpdir/link"
refused "a symbolic link" "$log" --crash=enumerate -o "$tmpdir/link"
# A trailing slash (which shells add) or a last '.' or '..' would make
# O_NOFOLLOW look at no link at all.
refused "a symbolic link" "$log" -o "$tmpdir/link/"
refused "a symbolic link" "$log" -o "$tmpdir/link//"
refused "a symbolic link" "$log" --crash=enumerate:2 -o "$tmpdir/link/"
refused "name the directory itself" "$log" -o "$tmpdir/link/."
refused "name the directory itself" "$log" -o "$tmpdir/link/.."
[ -z "$(ls -A "$tmpdir/outside")" ] || fail "replay wrote through a link"
# A real directory named with a trailing slash is fine.
"$zn" replay "$log" --to end -o "$tmpdir/slash/" >"$tmpdir/out" ||
  fail "replay -o DIR/ failed: $(cat "$tmpdir/out")"
[ -n "$(ls -A "$tmpdir/slash")" ] || fail "replay -o DIR/ wrote nothing"

# DIR not empty, a planted link to a file outside included: refused, and
# both left as they were.
mkdir "$tmpdir/full"
echo keep >"$tmpdir/outside/victim"
ln -s "$tmpdir/outside/victim" "$tmpdir/full/seq-000002"
refused "not empty" "$log" -o "$tmpdir/full"
refused "not empty" "$log" --crash=enumerate:2 -o "$tmpdir/full"
[ "$(cat "$tmpdir/outside/victim")" = keep ] || fail "the victim changed"
[ "$(ls -A "$tmpdir/full")" = seq-000002 ] || fail "DIR changed"

# A FIFO for the log is refused at once, not read forever (the timeout
# makes a hang a failure).
mkfifo "$tmpdir/fifo"
timeout 60 "$zn" replay "$tmpdir/fifo" --list >"$tmpdir/out" 2>"$tmpdir/err" &&
  fail "replay of a FIFO succeeded"
grep -q "not a regular file" "$tmpdir/err" ||
  fail "replay of a FIFO: $(cat "$tmpdir/err")"

# A seed is decimal or 0x: random:010 is 10, as random:0xa is, not 8.
for seed in 010 10 0xa 8; do
  "$zn" replay "$log" --to end --crash=random:$seed -o "$tmpdir/r$seed" \
    >"$tmpdir/r$seed.out" || fail "random:$seed failed"
  sed 's/--crash=random:[0-9a-fx]*//' "$tmpdir/r$seed.out" >"$tmpdir/r$seed.what"
done
cmp -s "$tmpdir/r010.what" "$tmpdir/r10.what" ||
  fail "random:010 is not random:10: $(cat "$tmpdir/r010.out") / $(cat "$tmpdir/r10.out")"
cmp -s "$tmpdir/r0xa.what" "$tmpdir/r10.what" || fail "random:0xa is not random:10"
refused "'random:0x' is not a policy" "$log" --crash=random:0x -o "$tmpdir/x"

# Zone files that cannot be made (here a file size limit: EFBIG, with
# SIGXFSZ ignored as a shell may leave it): replay fails naming the
# file, and leaves no half-made DIR; with data to write too.
"$make_log" "$tmpdir/empty-log" 5 0 || fail "wlog-make failed"
for what in empty-log log; do
  (trap '' XFSZ; ulimit -f 256; exec "$zn" replay "$tmpdir/$what" --to end \
     -o "$tmpdir/big") >"$tmpdir/out" 2>"$tmpdir/err" &&
    fail "replay of $what beyond the file size limit succeeded"
  grep -q "^zonednull replay: " "$tmpdir/err" &&
    grep -q "File too large" "$tmpdir/err" ||
    fail "replay of $what beyond the file size limit: $(cat "$tmpdir/err")"
  [ ! -e "$tmpdir/big" ] || fail "a failed replay left $(ls "$tmpdir/big")"
done
mkdir "$tmpdir/big"
(trap '' XFSZ; ulimit -f 256; exec "$zn" replay "$log" --to end \
   --crash=enumerate:3 -o "$tmpdir/big") >"$tmpdir/out" 2>"$tmpdir/err" &&
  fail "enumerate beyond the file size limit succeeded"
[ -d "$tmpdir/big" ] && [ -z "$(ls -A "$tmpdir/big")" ] ||
  fail "a failed replay into an empty DIR left it as: $(ls -A "$tmpdir/big")"
# A replay that succeeds says nothing on stderr (no talk of stopping).
"$zn" replay "$log" --to end -o "$tmpdir/quiet" >"$tmpdir/out" 2>"$tmpdir/err" ||
  fail "replay failed: $(cat "$tmpdir/err")"
[ ! -s "$tmpdir/err" ] || fail "a replay that succeeded said: $(cat "$tmpdir/err")"

# Work in proportion to the log: a log of a few kilobytes whose WP entry
# would rewrite a 256 MiB zone, or whose device has 300,000 zones, is
# refused without --force, naming the rule and making nothing; with
# --force the rewrite goes a chunk at a time (the peak RSS of replay is
# a resource bound: it held the whole zone, 263 MiB).
"$make_log" "$tmpdir/fw" finish-wp 256 || fail "wlog-make finish-wp failed"
refused "rewrite 255 MiB of zone data, more than 64 MiB beyond 16 times the 0 MiB the log carries: that needs --force" \
  "$tmpdir/fw" -o "$tmpdir/fw-state"
"$make_log" "$tmpdir/zones" zones 300000 || fail "wlog-make zones failed"
refused "the log's device has 300000 zones, a zone file each; more than 4096 needs --force" \
  "$tmpdir/zones" -o "$tmpdir/zones-state"
[ ! -e "$tmpdir/fw-state" ] && [ ! -e "$tmpdir/zones-state" ] ||
  fail "a refused replay made its DIR"
rss=$(/usr/bin/python3 - "$zn" "$tmpdir/fw" "$tmpdir/fw-state" <<'PY'
import resource, subprocess, sys
zn, log, out = sys.argv[1:]
r = subprocess.run([zn, "replay", log, "--force", "-o", out],
                   stdout=subprocess.DEVNULL)
if r.returncode != 0:
    raise SystemExit("replay --force failed: %d" % r.returncode)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
PY
) || fail "replay --force of the finish-wp log: $rss"
[ "$rss" -lt 128 ] || fail "replay held $rss MiB to rewrite a zone"
rm -rf "$tmpdir/fw-state"

# A long log: --list streams its entries, and replay keeps 18 bytes of
# each (it held 136, and --list as many): 200,000 flushes may grow the
# peak RSS by less than 16 MiB over a log of one entry (it grew 27 MiB;
# now about 4, and 9 under ASan, whose quarantine keeps what realloc
# freed).
"$make_log" "$tmpdir/short" flushes 1 || fail "wlog-make flushes failed"
"$make_log" "$tmpdir/long" flushes 200000 || fail "wlog-make flushes failed"
growth=$(/usr/bin/python3 - "$zn" "$tmpdir" <<'PY'
import resource, subprocess, sys
zn, d = sys.argv[1:]
def peak(*args):
    r = subprocess.run([zn, "replay"] + list(args), stdout=subprocess.DEVNULL)
    if r.returncode != 0:
        raise SystemExit("zonednull replay %s failed: %d" % (" ".join(args), r.returncode))
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
# ru_maxrss of the children is the largest so far: the short log first.
base = max(peak(d + "/short", "--list"), peak(d + "/short", "-o", d + "/short-state"))
print((peak(d + "/long", "--list") - base) // 1024,
      (peak(d + "/long", "-o", d + "/long-state") - base) // 1024)
PY
) || fail "replaying the long log: $growth"
set -- $growth
[ "$1" -lt 16 ] && [ "$2" -lt 16 ] ||
  fail "200,000 entries grew --list's peak RSS by $1 MiB, replay's by $2 MiB"
rm -rf "$tmpdir/long" "$tmpdir/long-state" "$tmpdir/short-state"

# A corrupt log: its message names the entry.
cp "$log" "$tmpdir/bad"
printf '\001' | dd of="$tmpdir/bad" bs=1 seek=$((4096 * 2 + 32)) conv=notrunc 2>/dev/null
refused "entry 1 (byte 8192): byte 32 is not zero" "$tmpdir/bad" -o "$tmpdir/y"
exit 0
