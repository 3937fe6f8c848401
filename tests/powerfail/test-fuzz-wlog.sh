#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A bounded libFuzzer run over the write log's reader and replay
# (lib/powerfail/fuzz-wlog.c): whole log files, seeded with logs of
# tests/powerfail/wlog-make (random workloads with power cycles, marks,
# flushes and zone operations, at 4096- and 512-byte blocks) and an
# empty one.  Any crash, leak, sanitizer report or broken invariant
# fails.
. "$(dirname "$0")/../common/lib.sh"

fuzzer=${ZONEDNULL_BUILDDIR:-.}/lib/fuzz-wlog
make_log=$ZONEDNULL_BUILDDIR/tests/powerfail/wlog-make
[ -x "$fuzzer" ] || skip "no fuzz target (configure found no clang with libFuzzer)"
# The target carries its own sanitizers; one run per make check is enough.
[ -z "${ZONEDNULL_PRELOAD:-}" ] || skip "already run by the plain build"
seconds=${ZONEDNULL_FUZZ_SECONDS:-30}

mkdir "$tmpdir/seeds" "$tmpdir/corpus"
for s in "1 0" "2 5" "3 40" "4 120" "5 30 512" "6 60 512"; do
  # shellcheck disable=SC2086 # SEED N [BS]
  "$make_log" "$tmpdir/seeds/log-$(echo $s | tr ' ' -)" $s ||
    fail "wlog-make $s failed"
done
TMPDIR=$tmpdir "$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 \
  -max_len=1048576 -print_final_stats=1 "$tmpdir/corpus" "$tmpdir/seeds" \
  >"$tmpdir/fuzz.log" 2>&1 ||
  fail "fuzzer found a problem:
$(tail -60 "$tmpdir/fuzz.log")"
grep -E 'stat::number_of_executed_units|cov:' "$tmpdir/fuzz.log" | tail -3
exit 0
