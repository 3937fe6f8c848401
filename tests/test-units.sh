#!/bin/sh
# The systemd units (systemd/) pass `systemd-analyze verify` without a
# word of complaint: known keys and values, the instance's specifiers,
# programs that exist (the build's, in place of the installed paths), and
# the socket's service.  Not the manuals of Documentation=, which need not
# be installed here; the packages' test (tests/deb/) verifies the
# installed units again, manuals and programs included.
set -u

fail () {
  echo "$0: FAIL: $*" >&2
  exit 1
}

: "${ZONEDNULL_BUILDDIR:=.}"
command -v systemd-analyze >/dev/null ||
  { echo "$0: SKIP: systemd-analyze missing (package systemd)" >&2; exit 77; }

tmpdir=$(mktemp -d "${TMPDIR:-/tmp}/zonednull-units.XXXXXX") ||
  fail "mktemp -d failed"
trap 'rm -rf "$tmpdir"' EXIT
mkdir "$tmpdir/sbin" "$tmpdir/units"
ln -s "$ZONEDNULL_BUILDDIR/server/zonednull-server" "$tmpdir/sbin/"
units="zonednull-server@.service zonednull-server@.socket"
if [ -x "$ZONEDNULL_BUILDDIR/ublk/zonednull-ublk" ]; then
  ln -s "$ZONEDNULL_BUILDDIR/ublk/zonednull-ublk" "$tmpdir/sbin/"
  units="$units zonednull-ublk@.service"
fi

# Each unit as built, its program in $tmpdir/sbin, as the template and as
# the instance "test" (systemd expands %i only in an instance).
for u in $units; do
  f=$ZONEDNULL_BUILDDIR/systemd/$u
  [ -f "$f" ] || fail "$f was not built"
  ! grep -n '@[a-z]*@' "$f" || fail "$u: a configure variable is left"
  sed "s|^ExecStart=[^ ]*/zonednull-|ExecStart=$tmpdir/sbin/zonednull-|" "$f" \
    >"$tmpdir/units/$u"
  cp "$tmpdir/units/$u" "$tmpdir/units/$(echo "$u" | sed 's/@/@test/')"
done
cd "$tmpdir/units" || fail "cd $tmpdir/units"
for u in $units; do
  for f in "$u" "$(echo "$u" | sed 's/@/@test/')"; do
    out=$(systemd-analyze verify --man=no "./$f" 2>&1)
    rc=$?
    [ "$rc" -eq 0 ] && [ -z "$out" ] ||
      fail "systemd-analyze verify $f (exit $rc): $out"
  done
done
echo "$0: verified $units"
