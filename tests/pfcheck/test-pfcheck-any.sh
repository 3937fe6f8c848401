#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# zonednull-pfcheck on any workload with its own checker, without root: the
# example examples/zone-log (an append-only log on raw zones, committed by
# FUA or a flush, a mark after each commit) against a logging
# zonednull-server (workload --cmd), then each crash state served by a
# zonednull-server that --up starts on the state's directory and checked
# by zone-log check through the URI it prints (check --checker).  The
# correct log passes in every state; the one whose commits skip the flush
# (--plant=no-flush) fails in a mark's state, and the reproduce line it
# prints fails the same way.  The checker alone first: a log across
# several zones on a live device, and the same device with one record
# damaged.
. "${ZONEDNULL_SRCDIR:?run through make check}/tests/common/lib.sh"
pf=$ZONEDNULL_SRCDIR/cli/zonednull-pfcheck
zlog=${ZONEDNULL_BUILDDIR:-.}/examples/zone-log
[ -x "$zlog" ] || fail "examples/zone-log is not built"
ZONEDNULL=$ZONEDNULL_CLI
export ZONEDNULL
geom="size=64 zone_size=1 zone_nr_conv=2 blocksize=4096"

# ---- the checker on a live device -----------------------------------------
ZONEDNULL_TARGET=server start_server live $geom memory_backed=1 log_writes="$tmpdir/live.wlog"
"$zlog" append "$uri" 300 >"$tmpdir/append.out" 2>&1 || fail "zone-log append: $(cat "$tmpdir/append.out")"
grep -q 'zone-log: 300 records appended and committed, to zone 3 of' "$tmpdir/append.out" ||
  fail "300 records do not fill two zones and go on in a third: $(cat "$tmpdir/append.out")"
out=$(PFCHECK_MARK=commit-300 "$zlog" check "$uri") ||
  fail "zone-log check on the live device: $out"
[ "$out" = "zone-log: 300 records whole, 300 committed" ] || fail "zone-log check said: $out"
out=$(PFCHECK_MARK=commit-301 "$zlog" check "$uri") &&
  fail "zone-log check finds record 301 that was never written: $out"
echo "$out" | grep -q 'record 301 is missing' || fail "a missing record: $out"
out=$(PFCHECK_MARK=fsync-1 "$zlog" check "$uri"); rc=$?
[ "$rc" = 2 ] && echo "$out" | grep -q "PFCHECK_MARK 'fsync-1' is not commit-N" ||
  fail "a mark that is not commit-N: status $rc, $out"
# The second sequential zone (zone 3: two conventional zones of 2048
# sectors first) reset: its records are gone, the third zone's stand past
# the log's end.
"$ZONEDNULL_CLI" reset -o 6144 -c 1 "$uri" >/dev/null || fail "zonednull reset of zone 3"
out=$(PFCHECK_MARK=commit-300 "$zlog" check "$uri") && fail "zone-log check passes a log with a zone reset: $out"
echo "$out" | grep -q 'zone at sector 8192 holds data past the log' || fail "a reset zone in the log: $out"
stop_server "$pid"

# ---- the power-fail check ----------------------------------------------------
# up.sh serves $PFCHECK_STATE with a zonednull-server and prints its URI;
# down.sh stops it by its PID.
cat >"$tmpdir/up.sh" <<EOF
s=\$PFCHECK_STATE
"$ZONEDNULL_SERVER" -f -U "\$s.sock" -P "\$s.pid" backing_dir="\$s" $geom </dev/null >/dev/null 2>"\$s.server.err" &
i=0
while [ ! -s "\$s.pid" ] || [ ! -S "\$s.sock" ]; do
  i=\$((i + 1)); [ \$i -le 600 ] || exit 1
  sleep 0.1
done
echo "nbd+unix:///?socket=\$s.sock"
EOF
cat >"$tmpdir/down.sh" <<'EOF'
s=$PFCHECK_STATE
pid=$(cat "$s.pid") && kill "$pid" && while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
EOF
# run NAME [--plant=no-flush]: the workload on a logging server.
run () {
  w=$tmpdir/$1 log=$tmpdir/$1.wlog
  ZONEDNULL_TARGET=server start_server "$1" $geom log_writes="$log" memory_backed=1
  sh "$pf" workload --cmd="'$zlog' append \"\$PFCHECK_URI\" 6 $2" --uri="$uri" --work="$w" \
    >"$tmpdir/$1.workload" 2>&1 || fail "workload $1: $(cat "$tmpdir/$1.workload")"
  stop_server "$pid"
}
check () {
  sh "$pf" check --checker="'$zlog' check" --log="$log" --work="$w" \
    --up="sh '$tmpdir/up.sh'" --down="sh '$tmpdir/down.sh'" "$@"
}

run good
check --states=4 --seed=5 >"$tmpdir/good.check" 2>&1; rc=$?
cat "$tmpdir/good.check"
[ "$rc" = 0 ] || fail "the correct log fails a state (status $rc)"
[ "$(grep -c '^PASS state' "$tmpdir/good.check")" = 11 ] ||
  fail "not 7 marks (commit-0 to commit-6) and 4 random states PASS"
grep -q '^PASS state 7: to [0-9]* (mark commit-6) crash=none seed=-: zone-log: 6 records whole, 6 committed$' \
  "$tmpdir/good.check" || fail "commit-6's state does not hold 6 records"
grep -q '^PASS state [0-9]*: to [0-9]* (after mark commit-[0-9]) crash=random' "$tmpdir/good.check" ||
  fail "no random state between marks"

run planted --plant=no-flush
check --states=0 >"$tmpdir/planted.check" 2>&1; rc=$?
cat "$tmpdir/planted.check"
[ "$rc" = 1 ] || fail "the planted bug is not caught (status $rc)"
# Record 2 is marked committed before it is durable: lost at its mark.
line=$(grep -m 1 '^FAIL state 3: to [0-9]* (mark commit-2) crash=none seed=-: the checker failed (status 1): zone-log: record 2 is missing' \
  "$tmpdir/planted.check") || fail "commit-2's state does not fail for record 2"
grep -q '^PASS state 4: .*(mark commit-3).*: 3 records whole' "$tmpdir/planted.check" ||
  fail "commit-3's FUA does not make record 2 durable too"
repro=$(grep -m 1 '^  reproduce: ' "$tmpdir/planted.check" | sed 's/^  reproduce: zonednull-pfcheck/sh "$pf"/')
eval "$repro" >"$tmpdir/repro" 2>&1 && fail "the reproduce line passes: $(cat "$tmpdir/repro")"
[ "$(grep '^FAIL state' "$tmpdir/repro" | sed 's/^FAIL state 1:/FAIL state 3:/')" = "$line" ] ||
  fail "the reproduce line gives another result: $(cat "$tmpdir/repro")"
echo "test-pfcheck-any: the correct log passes $(grep -c '^PASS' "$tmpdir/good.check") states, the planted bug fails $(grep -c '^FAIL' "$tmpdir/planted.check")"
