#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The man pages made from lib/config/params.c's table (man/gen-params): the
# plugin's, zonednull-server's and zonednull-ublk's.  Each is well-formed
# (groff and, when installed, mandoc and lexgrog find nothing to warn
# about), keeps no marker, and has a PARAMETERS section with a tag,
# KEY=UNIT, for every key of the table (tests/model/test-params --table).
# shellcheck source=tests/common/lib.sh
. "$(dirname "$0")/../common/lib.sh"

builddir=${ZONEDNULL_BUILDDIR:-.}
"$builddir/tests/model/test-params" --table >"$tmpdir/table" ||
  fail "tests/model/test-params --table failed"
[ -s "$tmpdir/table" ] || fail "the parameter table is empty"
errors=0
complain () {
  echo "$0: $*" >&2
  errors=$((errors + 1))
}

# tags PAGE: "key=unit" for each tag of the PARAMETERS section, the
# troff markup taken out.
tags () {
  awk '
    /^\.SH/ { inside = ($0 ~ /^\.SH PARAMETERS/); next }
    inside && /^\.TP/ { tag = 1; next }
    inside && tag && /^\.BI? / {
      line = $0
      sub(/^\.BI? /, "", line)
      gsub(/ /, "", line)
      gsub(/\\-/, "-", line)
      print line
    }
    { tag = 0 }
  ' "$1"
}

for name in nbdkit-zonednull-plugin.1 zonednull-server.8 zonednull-ublk.8; do
  page=$builddir/man/$name
  [ -s "$page" ] || { complain "no $page: make builds it"; continue; }
  ! grep -n '^@PARAMETER' "$page" >&2 || complain "$page keeps a marker"
  tags "$page" >"$tmpdir/tags"
  [ -s "$tmpdir/tags" ] || complain "$page: no tag in PARAMETERS"
  while read -r key unit _; do
    want="$key=$(printf '%s' "$unit" | tr -d '<>')"
    grep -qxF -- "$want" "$tmpdir/tags" ||
      complain "$page: PARAMETERS has no $want"
  done <"$tmpdir/table"
  n=$(wc -l <"$tmpdir/tags")
  [ "$n" -eq "$(wc -l <"$tmpdir/table")" ] ||
    complain "$page: $n tags in PARAMETERS, the table has $(wc -l <"$tmpdir/table") keys"

  if command -v groff >/dev/null; then
    # -ww: every warning; -z: no output but them.
    out=$(LC_ALL=C.UTF-8 groff -man -z -ww -t "$page" 2>&1)
    [ -z "$out" ] || complain "groff warns about $page: $out"
  fi
  if command -v mandoc >/dev/null; then
    out=$(mandoc -T lint -W warning "$page" 2>&1)
    [ -z "$out" ] || complain "mandoc -T lint warns about $page: $out"
  fi
  if command -v lexgrog >/dev/null; then
    lexgrog "$page" >/dev/null 2>&1 || complain "lexgrog finds no NAME in $page"
  fi
done

[ "$errors" -eq 0 ] || fail "$errors problems with the generated man pages"
exit 0
