# SPDX-License-Identifier: BSD-3-Clause
# What the CLI's shell tests share, sourced after lib.sh: the CLI ($zn),
# and runs of it that keep its output and check its status and message.
# shellcheck shell=sh

: "${ZONEDNULL_CLI:=${ZONEDNULL_BUILDDIR:-.}/cli/zonednull}"
[ -x "$ZONEDNULL_CLI" ] || fail "no CLI at $ZONEDNULL_CLI"
zn=$ZONEDNULL_CLI

# run ARG...: zonednull ARG..., its stdout and stderr in $tmpdir/out and
# $tmpdir/err, its status in $rc.
run () {
  "$zn" "$@" >"$tmpdir/out" 2>"$tmpdir/err"
  rc=$?
}

# ok ARG...: run, and it must succeed.
ok () {
  run "$@"
  [ "$rc" -eq 0 ] || fail "zonednull $*: exit $rc: $(cat "$tmpdir/err")"
}

# refused STATUS TEXT ARG...: run, and it must exit with STATUS and say
# TEXT (a fixed string) on stderr.
refused () {
  want=$1 text=$2
  shift 2
  run "$@"
  [ "$rc" -eq "$want" ] ||
    fail "zonednull $*: exit $rc, expected $want; stderr: $(cat "$tmpdir/err")"
  grep -qF -- "$text" "$tmpdir/err" ||
    fail "zonednull $*: stderr lacks '$text': $(cat "$tmpdir/err")"
}
