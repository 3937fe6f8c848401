#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The golden traces over NBD inside TLS: as test-replay-nbd.sh, with each
# trace's `nbdkit zonednull` started with --tls=require and a PSK made at
# run time, reached over nbds+unix:// with tls-psk-file.  The client
# library's data, session and control connections all go through TLS.
# (tests/server/test-server-tls.sh replays them over zonednull-server.)
. "$(dirname "$0")/../common/lib.sh"

srcdir=${ZONEDNULL_SRCDIR:-$(dirname "$0")/../..}
replay=${ZONEDNULL_BUILDDIR:-.}/tests/replay
[ -x "$replay" ] || fail "no replay at $replay"
command -v psktool >/dev/null || skip "psktool is not installed (gnutls-bin)"
# nbdkit with TLS and the sanitizer runtimes preloaded hangs at exit
# (p11-kit's destructor waits in freelocale for glibc's locale lock), so
# the sanitizer build leaves this to the plain one; its replay over
# zonednull-server with TLS is in tests/test-server-tls.sh.
[ -z "${ZONEDNULL_PRELOAD:-}" ] || skip "nbdkit --tls under the preloaded sanitizers hangs at exit; run by the plain build"
psktool -u replay -p "$tmpdir/keys.psk" >/dev/null || fail "psktool"

mkdir "$tmpdir/servers" || fail "mkdir $tmpdir/servers"
count=0
for trace in "$srcdir"/tests/traces/k6.1/*.trace; do
  TMPDIR=$tmpdir/servers NBDKIT=$NBDKIT "$replay" --nbdkit="$ZONEDNULL_PLUGIN" \
    --tls-psk="$tmpdir/keys.psk" "$trace" >"$tmpdir/out" 2>&1 ||
    fail "$(basename "$trace") over NBD with TLS: $(cat "$tmpdir/out")"
  grep -q "ops match on the NBD server\$" "$tmpdir/out" ||
    fail "$(basename "$trace"): no match reported: $(cat "$tmpdir/out")"
  count=$((count + 1))
done
[ "$count" -ge 8 ] || fail "only $count traces found in $srcdir/tests/traces"
echo "$count traces match over nbds+unix:// (TLS-PSK)"

# nbdkit ran with --tls=require, so nothing got through in the clear.
! pgrep -f "$tmpdir/servers" >/dev/null || fail "a server outlived replay"
exit 0
