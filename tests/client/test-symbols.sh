#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Every shared object that `make install` installs resolves all its
# symbols: each undefined symbol must be defined by one of the libraries
# it declares (DT_NEEDED, as ldd resolves them) or by the program that
# loads it (nbdkit for the plugin, fio for the engine).  A symbol of the
# model left out of a link only fails at run time, in the user's process,
# the first time the code path that needs it runs.
#
# And every installed header (ZONEDNULL_HEADERS, the Makefile's
# pkginclude_HEADERS) compiles alone, with only the installed headers
# beside it, and each function it declares is exported by the installed
# library: a declaration without its definition only fails when a user's
# program links.
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

# check_headers SO: the installed headers against SO's exports.  gcc's
# -aux-info lists the functions a translation unit declares, with the
# file that declares each; static inline ones need no export.
check_headers () {
  so=$1
  cc=${ZONEDNULL_CC:-cc}
  [ -n "${ZONEDNULL_HEADERS:-}" ] ||
    fail "ZONEDNULL_HEADERS is empty: run through make check"
  inc=$tmpdir/include
  mkdir -p "$inc/zonednull"
  for h in $ZONEDNULL_HEADERS; do
    cp "${ZONEDNULL_SRCDIR:-.}/$h" "$inc/zonednull/" || fail "no $h"
  done
  echo 'int x;' >"$tmpdir/probe.c"
  if ! $cc -fsyntax-only -aux-info "$tmpdir/aux" "$tmpdir/probe.c" 2>/dev/null; then
    echo "$cc has no -aux-info: the installed headers are not checked"
    return
  fi
  defined "$so" >"$tmpdir/exported"
  status=0
  for h in $ZONEDNULL_HEADERS; do
    b=${h##*/}
    # Checked by name too: an older install elsewhere on the system's
    # include path would satisfy the compiler.
    for dep in $(sed -n 's|^#include [<"]zonednull/\([^>"]*\)[>"].*|\1|p' "$inc/zonednull/$b"); do
      [ -f "$inc/zonednull/$dep" ] ||
        fail "zonednull/$b includes zonednull/$dep, which is not installed"
    done
    printf '#include <zonednull/%s>\n' "$b" >"$tmpdir/one.c"
    $cc -std=c11 -Wall -Wextra -Werror -fsyntax-only -I"$inc" \
      -aux-info "$tmpdir/aux" "$tmpdir/one.c" ||
      fail "zonednull/$b does not compile alone"
    grep -F "/* $inc/zonednull/$b:" "$tmpdir/aux" | grep -v '\*/ static ' |
      sed -e 's|^/\*[^*]*\*/ ||' -e 's/ (.*//' -e 's/.*[ *]//' |
      sort -u >"$tmpdir/declared"
    missing=$(comm -23 "$tmpdir/declared" "$tmpdir/exported")
    if [ -n "$missing" ]; then
      echo "$0: FAIL: zonednull/$b declares, and $(basename "$so") does not export: $(echo $missing)" >&2
      status=1
    else
      echo "zonednull/$b: $(wc -l <"$tmpdir/declared") functions, all exported by $(basename "$so")"
    fi
  done
  [ "$status" = 0 ] || exit 1
}

# check_abi SO LIST: SO still exports every function of LIST, the exports
# of the release its soname was fixed by: a program built then still runs.
check_abi () {
  defined "$1" >"$tmpdir/exported"
  grep -v '^#' "$2" | sort -u >"$tmpdir/abi"
  missing=$(comm -23 "$tmpdir/abi" "$tmpdir/exported")
  [ -z "$missing" ] ||
    fail "$(basename "$1") no longer exports, as $(basename "$2") lists: $(echo $missing)"
  echo "$(basename "$1"): the $(wc -l <"$tmpdir/abi") functions of $(basename "$2") all exported"
}

client_so=$ZONEDNULL_BUILDDIR/client/.libs/libzonednull-client.so
check "$client_so"
check_headers "$client_so"
check_abi "$client_so" "${ZONEDNULL_SRCDIR:-.}/tests/client/abi-0.1.0.txt"

nbdkit_bin=$(command -v "${NBDKIT:-nbdkit}") || fail "no nbdkit"
check "$ZONEDNULL_BUILDDIR/plugin/.libs/nbdkit-zonednull-plugin.so" "$nbdkit_bin"

if [ -n "${ZONEDNULL_FIO_ENGINE:-}" ]; then
  fio_bin=$(command -v "${FIO:-fio}") || fail "no fio"
  check "$ZONEDNULL_FIO_ENGINE" "$fio_bin"
else
  echo "the fio engine is not built (configure --with-fio): not checked"
fi

# The globals of every program and module carry the prefix of where they
# live (HACKING.md, "Prefixes"); plugin_init and ioengine are the names
# nbdkit and fio look up.  An unprefixed global (a "fail" or a "reply")
# collides with a namesake elsewhere the day two layers meet in a link.
prefixes='zn_|ZN_|zu_|zf_|params_|nbd_|park_|nvme_|net_|tls_|sched_|io_pool_|badblocks_|wplug_|cache_|pages_|store_|wlog_|dev_|pipeline_|fault_|cli_|client_'
for prog in server/zonednull-server ublk/zonednull-ublk cli/zonednull \
            plugin/.libs/nbdkit-zonednull-plugin.so \
            client/.libs/libzonednull-client.so \
            ${ZONEDNULL_FIO_ENGINE:+engine/.libs/zonednull-fio.so}; do
  f=$ZONEDNULL_BUILDDIR/$prog
  # libtool leaves a wrapper script where a program links a .so of the tree.
  [ -f "$(dirname "$f")/.libs/$(basename "$f")" ] && f=$(dirname "$f")/.libs/$(basename "$f")
  [ -f "$f" ] || { echo "$prog is not built: not checked"; continue; }
  bad=$(nm --defined-only --format=posix "$f" | awk '$2 ~ /^[TDBRCV]$/ { print $1 }' |
    grep -v '@' | grep -Ev "^(_|main$|plugin_init$|ioengine$|($prefixes))" | tr '\n' ' ')
  [ -z "$bad" ] || fail "$prog: globals without a prefix that says where they live: $bad"
done
echo "every program's globals carry their prefix"
