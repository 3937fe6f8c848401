#!/bin/sh
# Every shared object that `make install` installs resolves all its
# symbols: each undefined symbol must be defined by one of the libraries
# it declares (DT_NEEDED, as ldd resolves them) or by the program that
# loads it (nbdkit for the plugin, fio for the engine).  A symbol of the
# model left out of a link only fails at run time, in the user's process,
# the first time the code path that needs it runs.
set -u

fail () {
  echo "$0: FAIL: $*" >&2
  exit 1
}

: "${ZONEDNULL_BUILDDIR:=.}"
command -v nm >/dev/null && command -v ldd >/dev/null ||
  { echo "$0: SKIP: nm or ldd missing" >&2; exit 77; }

tmpdir=$(mktemp -d "${TMPDIR:-/tmp}/zonednull-symbols.XXXXXX") ||
  fail "mktemp -d failed"
trap 'rm -rf "$tmpdir"' EXIT

# defined FILE...: the dynamic symbols the files define, without versions.
defined () {
  for f in "$@"; do
    nm -D --defined-only --format=posix "$f" 2>/dev/null
  done | awk '{ sub(/@.*/, "", $1); print $1 }' | sort -u
}

# check SO [HOST]: SO's strong undefined symbols all resolve.
check () {
  so=$1
  host=${2:-}
  [ -f "$so" ] || fail "$so was not built"
  if ldd "$so" | grep -q 'not found'; then
    fail "$so needs a library that is not found: $(ldd "$so" | grep 'not found')"
  fi
  libs=$(ldd "$so" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')
  # shellcheck disable=SC2086
  defined $libs $host >"$tmpdir/defined"
  # U only: weak references (w, v) may stay unresolved by design.
  nm -D --undefined-only --format=posix "$so" |
    awk '$2 == "U" { sub(/@.*/, "", $1); print $1 }' | sort -u >"$tmpdir/undefined"
  missing=$(comm -23 "$tmpdir/undefined" "$tmpdir/defined")
  [ -z "$missing" ] ||
    fail "$(basename "$so") leaves undefined, in none of its libraries${host:+ nor $(basename "$host")}: $(echo $missing)"
  echo "$(basename "$so"): $(wc -l <"$tmpdir/undefined") undefined symbols, all resolved"
}

check "$ZONEDNULL_BUILDDIR/client/.libs/libzonednull-client.so"

nbdkit_bin=$(command -v "${NBDKIT:-nbdkit}") || fail "no nbdkit"
check "$ZONEDNULL_BUILDDIR/plugin/.libs/nbdkit-zonednull-plugin.so" "$nbdkit_bin"

if [ -n "${ZONEDNULL_FIO_ENGINE:-}" ]; then
  fio_bin=$(command -v "${FIO:-fio}") || fail "no fio"
  check "$ZONEDNULL_FIO_ENGINE" "$fio_bin"
else
  echo "the fio engine is not built (configure --with-fio): not checked"
fi
