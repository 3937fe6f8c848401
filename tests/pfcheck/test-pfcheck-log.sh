#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# zonednull-pfcheck's plan against a real write log: a zonednull-server with
# log_writes=, marks through its control channel (zonednull mark) between
# writes and flushes, then the plan's states, each replayed with the
# command it prints (zonednull replay), without a front end or a mount.
. "${ZONEDNULL_SRCDIR:?run through make check}/tests/common/lib.sh"
need_nbdsh
pf=$ZONEDNULL_SRCDIR/cli/zonednull-pfcheck
ZONEDNULL=$ZONEDNULL_CLI
export ZONEDNULL
log=$tmpdir/dev.log w=$tmpdir/work
mkdir -p "$w/states"

ZONEDNULL_TARGET=server start_server logged log_writes="$log" \
  size=64 zone_size=4 zone_nr_conv=2 blocksize=4096 memory_backed=1 cache_size=16
mark () { "$ZONEDNULL_CLI" mark "$1" "$uri" || fail "zonednull mark $1 failed"; }
# A conventional zone's block, a flush; a sequential zone's blocks, a FUA
# write, more without a flush.
mark fsync-0
nbdsh -u "$uri" -c 'h.pwrite(b"a" * 8192, 4096)' || fail "write 1"
nbdsh -u "$uri" -c 'h.flush()' || fail "flush"
mark fsync-1
nbdsh -u "$uri" -c 'h.pwrite(b"b" * 16384, 8 << 20)' || fail "write 2"
nbdsh -u "$uri" -c 'h.pwrite(b"c" * 4096, (8 << 20) + 16384, nbd.CMD_FLAG_FUA)' || fail "write 3"
mark fsync-2
nbdsh -u "$uri" -c 'h.pwrite(b"d" * 8192, (8 << 20) + 20480); h.pwrite(b"e" * 4096, 0)' || fail "write 4"
stop_server "$pid"

printf '1 pf/f1 x\n' >"$w/manifest"
"$ZONEDNULL_CLI" replay "$log" --list >"$tmpdir/list" || fail "zonednull replay --list failed"
sh "$pf" plan --log="$log" --work="$w" --states=6 --seed=11 >"$tmpdir/plan" 2>&1 ||
  fail "plan failed: $(cat "$tmpdir/plan")"
cat "$tmpdir/plan"
[ "$(grep -c '^state ' "$tmpdir/plan")" = 9 ] || fail "not 3 marks and 6 random states"
# Each mark's state is at the entry the listing gives it.
for k in 0 1 2; do
  e=$(awk -v m="fsync-$k" '{ n = $1; sub(/:$/, "", n) } index($0, m) { print n; exit }' "$tmpdir/list")
  [ -n "$e" ] || fail "fsync-$k is not in the listing: $(cat "$tmpdir/list")"
  grep -q "^state $((k + 1)): to $e (mark fsync-$k) crash=none seed=-\$" "$tmpdir/plan" ||
    fail "fsync-$k (entry $e) is not state $((k + 1)) of the plan"
done
sh "$pf" plan --log="$log" --work="$w" --states=6 --seed=11 | cmp -s - "$tmpdir/plan" ||
  fail "the same seed gives another plan"
# Every state replays with the command the plan prints, into its directory.
n=0
for cmdline in $(sed -n 's/^  //p' "$tmpdir/plan" | tr ' ' '@'); do
  set -- $(echo "$cmdline" | tr '@' ' ')
  dir=$(eval "echo \${$#}")
  "$@" >"$tmpdir/replay.out" 2>&1 || fail "$*: $(cat "$tmpdir/replay.out")"
  [ -f "$dir/cnv-000000" ] && [ -f "$dir/seq-000002" ] || fail "$*: no zone files in $dir: $(ls "$dir")"
  n=$((n + 1))
done
[ "$n" = 9 ] || fail "$n replay commands, not 9"
# fsync-1's state holds the flushed block of the conventional zone.
od -An -c -j 4096 -N 1 "$w/states/2/cnv-000000" | grep -q a || fail "fsync-1's state lacks the flushed write"
echo "test-pfcheck-log: 9 states planned and replayed"
