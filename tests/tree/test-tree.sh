#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The source tree keeps its own rules: every source file names its licence
# in an SPDX line near its top, and the test index, tests/README.md, has a
# row for every group of registered tests with that group's count and the
# total in its text.  ZONEDNULL_TESTS is `make check`'s TESTS.

fail () {
  echo "$0: FAIL: $*" >&2
  exit 1
}

src=${ZONEDNULL_SRCDIR:?run through make check}
# The source tree only: a sanitizer build's make check would repeat the
# plain build's run.
if [ -n "${ZONEDNULL_PRELOAD:-}" ]; then
  echo "$0: SKIP: no compiled code, run by the plain build" >&2
  exit 77
fi
tests=${ZONEDNULL_TESTS:?run through make check}
index=$src/tests/README.md
[ -f "$index" ] || fail "no test index at $index"

# Licence lines: the files that hold code, scripts, build rules and man
# pages.  Data (traces, results, the ABI list) and Markdown are not code.
sources=$(cd "$src" && find . \( -name .git -o -name 'build*' -o -name .cache \
    -o -name dist -o -name autom4te.cache -o -path ./tests/traces \
    -o -path ./debian/.debhelper \) -prune -o -type f \
    \( -name '*.c' -o -name '*.h' -o -name '*.sh' -o -name '*.py' \
    -o -name '*.mk' -o -name '*.fio' -o -name '*.awk' -o -name '*.in' \
    -o -name '*.[1-8]' -o -name Makefile.am -o -name configure.ac \
    -o -name run -o -name zonednull-pfcheck \) -print |
  grep -v '/Makefile\.in$\|^\./config\.h\.in$')
[ -n "$sources" ] || fail "no source file found under $src"
missing= other=
for f in $sources; do
  line=$(head -n 3 "$src/$f" | grep -o 'SPDX-License-Identifier: .*') ||
    { missing="$missing $f"; continue; }
  case $f:$line in
    *"BSD-3-Clause"*) ;;
    ./ublk/ublk-abi.h:*"GPL-2.0 WITH Linux-syscall-note"*) ;;
    *) other="$other $f" ;;
  esac
done
[ -z "$missing" ] || fail "no SPDX-License-Identifier line in the first three lines of:$missing"
[ -z "$other" ] || fail "a licence other than BSD-3-Clause, which debian/copyright does not name for it:$other"
grep -q '^License: BSD-3-Clause$' "$src/debian/copyright" ||
  fail "debian/copyright names no BSD-3-Clause"
grep -q 'BSD 3-Clause\|Redistribution and use in source and binary forms' "$src/LICENSE" ||
  fail "LICENSE is not the BSD-3-Clause text"

# The index: one table row per group, "| `group/` | what | N | time |".
total=0
groups=$(for t in $tests; do t=${t#tests/}; echo "${t%%/*}"; done | sort -u)
for g in $groups; do
  n=0
  for t in $tests; do
    case $t in tests/"$g"/*) n=$((n + 1)) ;; esac
  done
  row=$(grep "^| \`$g/\` |" "$index") || fail "tests/README.md has no row for the group $g/ ($n tests registered)"
  listed=$(printf '%s\n' "$row" | awk -F'|' '{ gsub(/ /, "", $4); print $4 }')
  [ "$listed" = "$n" ] || fail "tests/README.md says $g/ has $listed tests; tests/local.mk registers $n"
  total=$((total + n))
done
for g in $(grep '^| `[a-z]*/` |' "$index" | sed 's/^| `\([a-z]*\)\/`.*/\1/'); do
  case " $(echo $groups) " in *" $g "*) ;; *) fail "tests/README.md has a row for $g/, which has no registered test" ;; esac
done
grep -q "all $total tests" "$index" ||
  fail "tests/README.md does not say \"all $total tests\" ($(grep -o 'all [0-9]* tests' "$index"))"
echo "$0: $total tests in $(echo $groups | wc -w) groups, as the index says; every source file has its licence line"
