#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The client library's example programs (examples/*.c) against
# zonednull-server: as make check built them, against the build tree's
# library, and, when an installed zonednull-client is found, built with
# pkg-config as libzonednull-client(3) tells a user to.
ZONEDNULL_TARGET=server
. "${ZONEDNULL_SRCDIR:-.}/tests/common/lib.sh"

: "${ZONEDNULL_SERVER:=${ZONEDNULL_BUILDDIR:-.}/server/zonednull-server}"
[ -x "$ZONEDNULL_SERVER" ] || fail "no server at $ZONEDNULL_SERVER"
src=${ZONEDNULL_SRCDIR:-.}/examples

# check_examples DIR: runs DIR's report-zones and append-read against a
# fresh server and checks what they print.
check_examples () {
  dir=$1
  start_server ex size=64 zone_size=4 zone_nr_conv=1 memory_backed=1

  "$dir/report-zones" "$uri" >"$tmpdir/report" 2>"$tmpdir/err" ||
    fail "$dir/report-zones: $(cat "$tmpdir/err")"
  [ "$(sed -n 1p "$tmpdir/report")" = \
    "16 zones of 8192 sectors (capacity 8192), 1 conventional, block size 512" ] ||
    fail "$dir/report-zones: header: $(sed -n 1p "$tmpdir/report")"
  [ "$(wc -l <"$tmpdir/report")" -eq 17 ] ||
    fail "$dir/report-zones: not one line per zone: $(cat "$tmpdir/report")"
  grep -qx 'start 0 len 8192 cap 8192 wp - CONVENTIONAL NOT_WP' "$tmpdir/report" ||
    fail "$dir/report-zones: zone 0: $(cat "$tmpdir/report")"
  grep -qx 'start 122880 len 8192 cap 8192 wp 122880 SEQ_WRITE_REQUIRED EMPTY' "$tmpdir/report" ||
    fail "$dir/report-zones: zone 15: $(cat "$tmpdir/report")"

  # Two blocks appended to zone 1, the first with room, each read back.
  "$dir/append-read" "$uri" >"$tmpdir/append" 2>"$tmpdir/err" ||
    fail "$dir/append-read: $(cat "$tmpdir/err")"
  cat >"$tmpdir/expected" <<'OUT'
appended 512 bytes to the zone at sector 8192: landed at sector 8192
read back sector 8192: same data
appended 512 bytes to the zone at sector 8192: landed at sector 8193
read back sector 8193: same data
OUT
  diff "$tmpdir/expected" "$tmpdir/append" >&2 ||
    fail "$dir/append-read printed other lines"
  "$dir/report-zones" "$uri" >"$tmpdir/report" 2>"$tmpdir/err" ||
    fail "$dir/report-zones: $(cat "$tmpdir/err")"
  grep -qx 'start 8192 len 8192 cap 8192 wp 8194 SEQ_WRITE_REQUIRED IMP_OPEN' "$tmpdir/report" ||
    fail "$dir/report-zones: zone 1 after the appends: $(cat "$tmpdir/report")"
  # What was appended is on the server for every client, not just the
  # example's: the CLI sees the same write pointer.
  "$ZONEDNULL_CLI" report -o 8192 -c 1 "$uri" | grep -q 'wptr 0x000002' ||
    fail "zonednull report does not show zone 1's write pointer at 2"
  stop_server "$pid"

  # A refused append ends the program with status 1 and the errno.
  start_server ro -r size=64 zone_size=4 memory_backed=1
  if "$dir/append-read" "$uri" >"$tmpdir/append" 2>"$tmpdir/err"; then
    fail "$dir/append-read succeeded on a read-only server"
  fi
  grep -q '^append-read: append: EPERM: ' "$tmpdir/err" ||
    fail "$dir/append-read on a read-only server: $(cat "$tmpdir/err")"
  stop_server "$pid"

  # No server: the connection's failure, status 1.
  if "$dir/report-zones" "nbd+unix:///?socket=$tmpdir/none.sock" 2>"$tmpdir/err"; then
    fail "$dir/report-zones succeeded without a server"
  fi
  grep -q '^report-zones: nbd+unix:' "$tmpdir/err" ||
    fail "$dir/report-zones without a server: $(cat "$tmpdir/err")"
}

builddir=${ZONEDNULL_BUILDDIR:-.}/examples
[ -x "$builddir/report-zones" ] && [ -x "$builddir/append-read" ] ||
  fail "the examples are not built in $builddir"
check_examples "$builddir"

if pkg-config --exists zonednull-client 2>/dev/null; then
  # As a user builds them, against the installed library and headers.
  libdir=$(pkg-config --variable=libdir zonednull-client)
  for prog in report-zones append-read; do
    # shellcheck disable=SC2046 # pkg-config's flags are words
    ${ZONEDNULL_CC:-cc} -o "$tmpdir/$prog" "$src/$prog.c" \
      $(pkg-config --cflags --libs zonednull-client) -Wl,-rpath,"$libdir" \
      2>"$tmpdir/err" || fail "building $prog with pkg-config: $(cat "$tmpdir/err")"
  done
  check_examples "$tmpdir"
else
  echo "$0: no installed zonednull-client (pkg-config): only the build tree's examples ran"
fi
