#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# zonednull-pfcheck without a device or a mount: its options and their
# errors, the verification of a tree against a manifest (what it checks in
# each state after the mount), and the plan of states it draws from a log's
# listing (a stand-in zonednull prints the listing).
. "${ZONEDNULL_SRCDIR:?run through make check}/tests/common/pfcheck-lib.sh"

# ---- options ---------------------------------------------------------------
expect 0 'workload --fs=FS' "--help prints the usage" sh "$pf" --help
expect 2 'Usage' "no command: the usage, status 2" sh "$pf"
expect 2 "unknown command 'mount'" "an unknown command is named" sh "$pf" mount
expect 2 "unknown option '--bogus'" "an unknown option is named" sh "$pf" check --bogus=1
expect 2 "\-\-fs: 'ext4' is not btrfs or f2fs" "--fs=ext4 is refused, naming --fs" sh "$pf" check --fs=ext4
expect 2 "\-\-states: 'x1' is not a decimal number" "--states=x1 is refused" sh "$pf" plan --states=x1
expect 2 "\-\-seed: '1234567890123456789' is too large" "a 19-digit --seed is refused" sh "$pf" plan --seed=1234567890123456789
expect 2 "\-\-plant: 'typo' is not" "an unknown --plant is refused" sh "$pf" workload --plant=typo
expect 2 "\-\-crash: 'some' is not none, all, random:SEED or torn:SEED" "a bad --crash is refused" sh "$pf" check --crash=some
expect 2 "check needs \-\-work" "--crash=torn:SEED passes the option check" sh "$pf" check --fs=btrfs --crash=torn:5
expect 2 "\-\-to: 'a/b' is not a mark name" "--to with a slash is refused" sh "$pf" check --to=a/b
expect 2 "check needs \-\-work" "check without --work names it" sh "$pf" check --fs=btrfs
expect 2 "check needs \-\-fs (a file system's check) or \-\-checker" "check without --fs or --checker names both" \
  sh "$pf" check --work="$tmp/w" --log=/dev/null
expect 2 "check needs \-\-fs (a file system's check) or \-\-checker" "check with --fs and --checker is refused" \
  sh "$pf" check --fs=btrfs --checker=true --work="$tmp/w" --log=/dev/null
expect 2 "\-\-checker: the checker command is empty" "an empty --checker is refused" sh "$pf" check --checker=
expect 2 "\-\-cmd and \-\-fs are two workloads" "workload with --cmd and --fs is refused" \
  sh "$pf" workload --cmd=true --fs=btrfs --uri=nbd://x --work="$tmp/w"
expect 2 "workload needs \-\-uri" "workload --cmd without --uri names it" sh "$pf" workload --cmd=true --work="$tmp/w"
expect 2 "the workload failed (status 3): exit 3" "a failing --cmd workload gives its status" \
  sh "$pf" workload --cmd="exit 3" --uri=nbd://x --work="$tmp/w"
expect 0 "workload done: test" "a --cmd workload sees the URI and the work directory" \
  sh "$pf" workload --cmd='test "$PFCHECK_URI" = nbd://x && test -d "$PFCHECK_WORK" && test -z "$PFCHECK_DEV"' \
  --uri=nbd://x --work="$tmp/w"
expect 2 "plan needs \-\-log" "plan without --log names it" sh "$pf" plan --work="$tmp/w"
expect 2 "workload: '$tmp' is not a block device" "workload on a directory is refused" \
  sh "$pf" workload --fs=f2fs --uri=nbd://x --work="$tmp/w" "$tmp"
expect 2 "\-\-up and \-\-down go together" "--up without --down is refused" \
  sh "$pf" check --fs=f2fs --work="$tmp/w" --up=true --log=/dev/null 2>&1

# ---- verify: a tree against the manifest -----------------------------------
w=$tmp/v root=$tmp/root
mkdir -p "$w" "$root/pf"
printf 'one\n' >"$tmp/one"; printf 'two\n' >"$tmp/two"; printf 'three\n' >"$tmp/three"
s1=$(sha256sum <"$tmp/one" | cut -c1-64) s2=$(sha256sum <"$tmp/two" | cut -c1-64)
s3=$(sha256sum <"$tmp/three" | cut -c1-64)
# f1 made durable at fsync-2, replaced by a rename at fsync-4 (its temporary
# file durable at fsync-3, gone at 4); f5 written at 5 (a change that is not
# atomic: unchecked before its mark).
cat >"$w/manifest" <<M
2 pf/f1 $s1
3 pf/.tmp-3 $s2
4 pf/f1 $s2 atomic
4 pf/.tmp-3 -
5 pf/f5 $s3
M
cp "$tmp/one" "$root/pf/f1"
v () { sh "$pf" verify --work="$w" "$@" "$root"; }
expect 0 'durable files as fsync-2' "fsync-2: f1 holds its data" v --mark=2
expect 0 '0 durable files as fsync-1' "fsync-1: nothing was durable yet" v --mark=1
expect 1 'pf/.tmp-3: missing, durable since fsync-3' "fsync-3: the fsynced temporary file is missing" v --mark=3
cp "$tmp/two" "$root/pf/.tmp-3"
expect 0 'durable files' "fsync-3: f1 and the temporary file" v --mark=3
expect 1 "pf/\.tmp-3: exists, removed by fsync-4" "fsync-4: the renamed temporary file must be gone" v --mark=4
mv "$root/pf/.tmp-3" "$root/pf/f1"
expect 0 'durable files' "fsync-4: f1 holds the renamed data" v --mark=4
expect 1 "pf/f1: holds other data (.*), not fsync-2's" "fsync-2: f1 with the later data fails" v --mark=2
expect 0 'durable files' "between fsync-3 and 4: the atomic rename may be done" v --mark=3 --between
cp "$tmp/one" "$root/pf/f1"
expect 0 'durable files' "between fsync-3 and 4: or not done" v --mark=3 --between
cp "$tmp/three" "$root/pf/f1"
expect 1 "pf/f1: holds other data .*, not fsync-2's, nor fsync-4's" \
  "between fsync-3 and 4: f1 with neither data fails" v --mark=3 --between
cp "$tmp/two" "$root/pf/f1"
expect 1 'pf/f5: missing, durable since fsync-5' "fsync-5: f5 missing fails" v --mark=5
expect 0 'durable files' "between fsync-4 and 5: f5, not atomic, is not checked" v --mark=4 --between
echo "x pf/bad" >>"$w/manifest"
expect 1 'bad manifest line 6' "a bad manifest line is named" v --mark=5

# ---- plan: the states drawn from a log's listing ---------------------------
# The stand-in lists entries 0 to 40 with marks fsync-0 at 10, fsync-1 at 20
# and fsync-2 at 30.
cat >"$tmp/zonednull" <<'Z'
#!/bin/sh
[ "$3" = --list ] || { echo "stand-in: only --list" >&2; exit 1; }
i=0
while [ $i -le 40 ]; do
  case $i in
    10|20|30) echo "$i mark - - - - fsync-$((i / 10 - 1))" ;;
    *) echo "$i write 1 $i 8 -" ;;
  esac
  i=$((i + 1))
done
Z
chmod +x "$tmp/zonednull"
w=$tmp/p
mkdir -p "$w"; : >"$w/manifest"; : >"$tmp/log"
plan () { ZONEDNULL=$tmp/zonednull sh "$pf" plan --log="$tmp/log" --work="$w" "$@"; }
plan --states=5 --seed=7 >"$tmp/plan7" 2>&1
if [ "$(grep -c '^state ' "$tmp/plan7")" = 8 ]; then ok "plan: 3 marks and 5 random states"
else fail "plan: not 8 states: $(cat "$tmp/plan7")"; fi
if grep -q '^state 1: to 10 (mark fsync-0) crash=none seed=-' "$tmp/plan7" &&
   grep -q '^state 3: to 30 (mark fsync-2) crash=none' "$tmp/plan7" &&
   grep -q "replay $tmp/log --to fsync-2 --crash=none -o $w/states/3" "$tmp/plan7"; then
  ok "plan: each mark replayed with --crash=none"
else fail "plan: the marks' states: $(head -n 8 "$tmp/plan7" | tr '\n' ' ')"; fi
# Every random state lies past fsync-0, within the log, after the mark it names.
bad=$(sed -n 's/^state [4-8]: to \([0-9]*\) (.* mark fsync-\([0-9]\)) crash=random seed=[0-9]*$/\1 \2/p' "$tmp/plan7" |
  awk '{ m = 10 + 10 * $2; if ($1 <= 10 || $1 > 40 || $1 < m || ($1 >= m + 10 && $2 < 2)) print } END { if (NR != 5) print "count", NR }')
if [ -z "$bad" ]; then ok "plan: the random states lie between fsync-0 and the end, each after its mark"
else fail "plan: random states out of place: $bad ($(tail -n 10 "$tmp/plan7" | tr '\n' ' '))"; fi
plan --states=5 --seed=7 >"$tmp/plan7b" 2>&1
plan --states=5 --seed=8 >"$tmp/plan8" 2>&1
if cmp -s "$tmp/plan7" "$tmp/plan7b" && ! cmp -s "$tmp/plan7" "$tmp/plan8"; then
  ok "plan: a seed gives the same states, another seed others"
else fail "plan: seeds 7, 7 and 8 give: $(diff "$tmp/plan7" "$tmp/plan7b" | head -n 2) / $(diff "$tmp/plan7" "$tmp/plan8" | head -n 2)"; fi
expect 2 "no mark 'fsync-9'" "plan --to an unknown mark names it" plan --to=fsync-9
expect 0 "state 1: to 25 (after mark fsync-1) crash=random seed=3" "plan --to an entry: the mark before it" \
  plan --to=25 --crash=random:3
expect 0 "state 1: to 25 (after mark fsync-1) crash=torn seed=4" "plan --to an entry with torn: its seed" \
  plan --to=25 --crash=torn:4
rm "$w/manifest"
expect 2 "no manifest $w/manifest" "check --fs without the workload's manifest says so" \
  sh "$pf" check --fs=btrfs --params=x --log="$tmp/log" --work="$w"

# Marks of any name (a workload of --cmd): each mark a state, named by its
# entry when --to could not name it (all digits, a quote, a second mark of
# the same name); the random states from the first mark on.
cat >"$tmp/zonednull" <<'Z'
#!/bin/sh
printf '%s\n' "0 geometry - - - - -" "1 write 1 0 8 -" "2 mark - - - - start" "3 write 1 8 8 -" \
  "4 mark - - - - 12" "5 flush - - - - ref=4" "6 mark - - - - x'y" "7 mark - - - - start" "8 write 1 16 8 -"
Z
expect 0 "state 1: to 2 (mark start) crash=none" "plan: a mark of any name is a state" plan --states=4 --seed=2
plan --states=4 --seed=2 >"$tmp/plan-any" 2>&1
if grep -q -- "--to start --crash=none -o $w/states/1\$" "$tmp/plan-any" &&
   grep -q -- "--to 4 --crash=none -o $w/states/2\$" "$tmp/plan-any" &&
   grep -q "^state 3: to 6 (mark x'y) crash=none" "$tmp/plan-any" &&
   grep -q -- "--to 6 --crash=none" "$tmp/plan-any" &&
   grep -q -- "--to 7 --crash=none -o $w/states/4\$" "$tmp/plan-any"; then
  ok "plan: marks named by name, or by entry where a name cannot reach them"
else fail "plan: the marks' states: $(head -n 10 "$tmp/plan-any" | tr '\n' ' ')"; fi
bad=$(sed -n 's/^state [5-8]: to \([0-9]*\) .*/\1/p' "$tmp/plan-any" | awk '$1 <= 2 || $1 > 8 { print } END { if (NR != 4) print "count", NR }')
[ -z "$bad" ] && ok "plan: random states after the first mark" || fail "plan: random states out of place: $bad"
expect 0 "state 1: to 8 (after mark start) crash=random seed=9" "plan --to an entry after a repeated mark names the later one" \
  plan --to=8 --crash=random:9
printf '#!/bin/sh\necho "0 geometry - - - - -"; echo "1 write 1 0 8 -"\n' >"$tmp/zonednull"
expect 2 "has no mark: a workload marks its consistency points" "plan of a log without a mark says how to mark" plan

echo "test-pfcheck: $nfail failure(s)"
[ "$nfail" = 0 ]
