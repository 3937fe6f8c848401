#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A conformance check that cannot fail proves nothing: corrupt a golden
# trace in several ways and require replay to reject each copy, naming the
# corrupted line, while the untouched copy still passes.

set -u

builddir=${ZONEDNULL_BUILDDIR:-.}
srcdir=${ZONEDNULL_SRCDIR:-$(dirname "$0")/../..}
replay=$builddir/tests/replay
# c5 has a conventional zone, limits and a capacity below the zone size,
# so its lines carry every kind of token.
trace=$srcdir/tests/traces/k6.1/c5_all-seed1.trace

if [ ! -x "$replay" ]; then
    echo "test-replay-detects: $replay is not built" >&2
    exit 1
fi
if [ ! -r "$trace" ]; then
    echo "test-replay-detects: cannot read $trace" >&2
    exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/replay-detects.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

failures=0

fail () {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# First line number, past the early ops, of an op line matching an awk
# pattern.  Early lines are skipped so the change lands after some state
# has built up, but kept early so little else is exercised first.
find_line () {
    awk -v pat="$1" '!/^#/ && $1 >= 20 && $0 ~ pat { print NR; exit }' "$trace"
}

# Copies the trace with line $2 replaced by the output of awk program $3
# applied to that line; the copy is $tmp/$1.trace.
mutate () {
    name=$1 lineno=$2 prog=$3
    if [ -z "$lineno" ]; then
        fail "$name: no suitable line in $trace"
        return 1
    fi
    awk -v n="$lineno" "NR == n { $prog } { print }" "$trace" > "$tmp/$name.trace"
    if cmp -s "$trace" "$tmp/$name.trace"; then
        fail "$name: the mutation changed nothing (line $lineno)"
        return 1
    fi
}

# replay must exit 1 (a difference, not a crash or a usage error) and name
# the changed line as FILE:LINE.
expect_detected () {
    name=$1 lineno=$2
    copy=$tmp/$name.trace
    "$replay" "$copy" > "$tmp/$name.out" 2>&1
    status=$?
    if [ "$status" -ne 1 ]; then
        fail "$name: replay exited $status, expected 1"
        cat "$tmp/$name.out" >&2
    elif ! grep -q "^$copy:$lineno: mismatch" "$tmp/$name.out"; then
        fail "$name: replay did not name line $lineno"
        cat "$tmp/$name.out" >&2
    else
        echo "ok: $name detected at line $lineno"
    fi
}

# The untouched trace, through the same copy-and-run path.
cp "$trace" "$tmp/pristine.trace"
if "$replay" "$tmp/pristine.trace" > "$tmp/pristine.out" 2>&1; then
    echo "ok: unmodified trace passes"
else
    fail "unmodified trace: replay exited $?"
    cat "$tmp/pristine.out" >&2
fi

# (a) a successful write's result turned into EIO.
line=$(find_line ' write .* res=0 ')
mutate res "$line" 'sub(/ res=0 /, " res=-5(EIO) ")' &&
    expect_detected res "$line"

# (b) one zone's state: a different condition for the last zone.
line=$(find_line ' E0$')
mutate token "$line" 'sub(/ E0$/, " C8")' &&
    expect_detected token "$line"

# (c) a read checksum with its last hex digit changed.
line=$(find_line ' read .* sum=')
mutate sum "$line" '
    match($0, / sum=[0-9a-f]+/)
    last = substr($0, RSTART + RLENGTH - 1, 1)
    $0 = substr($0, 1, RSTART + RLENGTH - 2) (last == "0" ? "1" : "0") substr($0, RSTART + RLENGTH)' &&
    expect_detected sum "$line"

# (d) the header's geometry: one zone more than the device has.
line=$(awk '/^# size_bytes=/ { print NR; exit }' "$trace")
mutate geometry "$line" '
    match($0, /nr_zones=[0-9]+/)
    $0 = substr($0, 1, RSTART - 1) "nr_zones=" (substr($0, RSTART + 9, RLENGTH - 9) + 1) substr($0, RSTART + RLENGTH)' &&
    expect_detected geometry "$line"

if [ "$failures" -ne 0 ]; then
    echo "test-replay-detects: $failures failure(s)" >&2
    exit 1
fi
exit 0
