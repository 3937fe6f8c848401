#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Conformance over the wire: every golden trace replayed through the client
# library against `nbdkit zonednull` started with the trace's configuration.
# Data goes over the data export; zone operations, reports and the exact
# errno of failed writes (ETOOMANYREFS, EOVERFLOW, which NBD itself cannot
# carry) over the control channel.  A trace whose recorded errno was
# altered must then be rejected, so a server that lost the errno on the way
# could not pass.
. "$(dirname "$0")/../common/lib.sh"

srcdir=${ZONEDNULL_SRCDIR:-$(dirname "$0")/../..}
replay=${ZONEDNULL_BUILDDIR:-.}/tests/replay
[ -x "$replay" ] || fail "no replay at $replay"

# replay over NBD, with nbdkit given the sanitizer runtimes it needs.
# Its servers' sockets go under $tmpdir/servers, to be checked at the end.
mkdir "$tmpdir/servers" || fail "mkdir $tmpdir/servers"
replay_nbd () {
  TMPDIR=$tmpdir/servers NBDKIT=$NBDKIT "$replay" --nbdkit="$ZONEDNULL_PLUGIN" "$@"
}

# The 6.1 traces, and those recorded again on 6.12 and 7.3: each is
# replayed with the kernel of its own header (kernel= to nbdkit).
count=0
for trace in "$srcdir"/tests/traces/k*/*.trace; do
  replay_nbd "$trace" >"$tmpdir/out" 2>&1 ||
    fail "$(basename "$trace") over NBD: $(cat "$tmpdir/out")"
  grep -q "ops match on the NBD server\$" "$tmpdir/out" ||
    fail "$(basename "$trace"): no match reported: $(cat "$tmpdir/out")"
  cat "$tmpdir/out"
  count=$((count + 1))
done
[ "$count" -ge 24 ] || fail "only $count traces found in $srcdir/tests/traces"

# The first write refused with ETOOMANYREFS, recorded as EINVAL instead:
# NBD's own error for it, which the replay must not accept.
trace=$srcdir/tests/traces/k6.1/c4_open2_active3-seed1.trace
lineno=$(awk '!/^#/ && / write / && /res=-109\(ETOOMANYREFS\)/ { print NR; exit }' "$trace")
[ -n "$lineno" ] || fail "no ETOOMANYREFS write in $trace"
awk -v n="$lineno" 'NR == n { sub(/res=-109\(ETOOMANYREFS\)/, "res=-22(EINVAL)") } { print }' \
  "$trace" >"$tmpdir/altered.trace"
replay_nbd "$tmpdir/altered.trace" >"$tmpdir/out" 2>&1
rc=$?
[ "$rc" -eq 1 ] || fail "altered trace: replay exited $rc, expected 1: $(cat "$tmpdir/out")"
grep -q "^$tmpdir/altered.trace:$lineno: mismatch" "$tmpdir/out" ||
  fail "altered trace: line $lineno not named: $(cat "$tmpdir/out")"

# A configuration the device refuses is reported with nbdkit's reason.
sed 's/zone_size=1 /zone_size=3 /' "$srcdir/tests/traces/k6.1/c1_nolimits-seed1.trace" \
  >"$tmpdir/badcfg.trace"
replay_nbd "$tmpdir/badcfg.trace" >"$tmpdir/out" 2>&1
rc=$?
[ "$rc" -eq 1 ] || fail "bad configuration: replay exited $rc: $(cat "$tmpdir/out")"
grep -q "refuses the configuration:.*zone_size" "$tmpdir/out" ||
  fail "bad configuration: no reason given: $(cat "$tmpdir/out")"

# No server is left behind: each was stopped by its PID, its files removed.
! pgrep -f "$tmpdir/servers" >/dev/null || fail "a server outlived replay"
[ -z "$(ls -A "$tmpdir/servers")" ] ||
  fail "replay left files behind: $(ls -A "$tmpdir/servers")"
exit 0
