#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# zonednull-ublk's device parameters are checked before it needs root or
# the ublk driver: a newer kernel's key on a kernel that lacks it, and a
# kernel that is not modelled, stop it with a message naming them.
# --stats is an option of its own, without a value, in --help.
# shellcheck source=tests/common/lib.sh
. "$(dirname "$0")/../common/lib.sh"

ublk=${ZONEDNULL_BUILDDIR:-.}/ublk/zonednull-ublk
[ -x "$ublk" ] || skip "no zonednull-ublk at $ublk (configure builds it only with liburing)"

for bad in "zone_full=1:zone_full: null_blk of Linux 6.1 has no zone_full" \
           "fua=0:fua: null_blk of Linux 6.1 has no fua" \
           "zone_append_max_sectors=0:zone_append_max_sectors: null_blk of Linux 6.1" \
           "kernel=6.12 badblocks_once=1:badblocks_once: null_blk of Linux 6.12 has no" \
           "kernel=6.12 badblocks_partial_io=1:badblocks_partial_io: null_blk of Linux 6.12" \
           "kernel=7.2:kernel=7.2: must be 6.1, 6.12 or 7.3"; do
  args=${bad%%:*} text=${bad#*:}
  # shellcheck disable=SC2086 # args is a list of KEY=VALUE words
  timeout 20 "$ublk" -f $args >"$tmpdir/out" 2>"$tmpdir/err"
  rc=$?
  [ "$rc" -eq 1 ] || fail "zonednull-ublk $args: exit $rc: $(cat "$tmpdir/err")"
  grep -qF -- "$text" "$tmpdir/err" ||
    fail "zonednull-ublk $args: no '$text' in: $(cat "$tmpdir/err")"
done

"$ublk" --help | grep -q -- '--stats' || fail "--help lacks --stats"
timeout 20 "$ublk" -f --stats=1 >"$tmpdir/out" 2>"$tmpdir/err" &&
  fail "--stats=1 accepted"
grep -qF -- "'--stats' doesn't allow an argument" "$tmpdir/err" ||
  fail "--stats=1: $(cat "$tmpdir/err")"
timeout 20 "$ublk" -f --stats kernel=7.2 >"$tmpdir/out" 2>"$tmpdir/err"
rc=$?
[ "$rc" -eq 1 ] && grep -qF "kernel=7.2: must be" "$tmpdir/err" ||
  fail "--stats kernel=7.2: exit $rc: $(cat "$tmpdir/err")"
exit 0
