# SPDX-License-Identifier: BSD-3-Clause
# What the tests of zonednull-pfcheck without a device share (sourced):
# $pf, the script; $tmp, removed at exit; ok, fail (counted in $nfail,
# the test goes on) and expect.
set -u
: "${ZONEDNULL_SRCDIR:?run through make check}"
# These tests run the shell script and no compiled code: a sanitizer
# build's make check would only repeat the plain build's run.
if [ -n "${ZONEDNULL_PRELOAD:-}" ]; then
  echo "${0##*/}: SKIP: no compiled code, run by the plain build" >&2
  exit 77
fi
pf=$ZONEDNULL_SRCDIR/cli/zonednull-pfcheck
tmp=$(mktemp -d "${TMPDIR:-/tmp}/${0##*/}.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
nfail=0
ok () { echo "ok   - $*"; }
fail () { echo "FAIL - $*"; nfail=$((nfail + 1)); }
# expect STATUS PATTERN LABEL CMD...: CMD's status and its output match.
expect () {
  es=$1 ep=$2 el=$3; shift 3
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" = "$es" ] && printf '%s\n' "$out" | grep -q -- "$ep"; then ok "$el"
  else fail "$el: status $rc (want $es), output: $(printf '%s' "$out" | head -n 3 | tr '\n' ' ') (want /$ep/)"; fi
}
