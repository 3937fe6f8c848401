#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# fetch-fio-source.sh DIR [SUITE]: the upstream source of the fio that
# Debian's SUITE carries (default sid), from Debian's archive: its version
# from the suite's source index, the .orig tarball from the pool, checked
# against the index's SHA-256, unpacked into DIR/fio-VERSION.  Prints
# that directory as its last line; a directory already there is reused.
#
# For `make check-kernel ZN_FIO_RECOVERY=1`: fio 3.40 and later recover
# from a zoned write error (recover_zbd_write_error), Debian 12's 3.33
# does not.  Needs curl and xz-utils.
set -eu

dir=${1:?usage: fetch-fio-source.sh DIR [SUITE]}
suite=${2:-sid}
mirror=${ZN_DEBIAN_MIRROR:-http://deb.debian.org/debian}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
zn_note_fd=2

for t in curl:curl xz:xz-utils sha256sum:coreutils tar:tar; do
  command -v "${t%%:*}" >/dev/null 2>&1 || die "missing on the host (Debian package): ${t#*:}"
done
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

# The suite's stanza of the fio source package: its version and the
# SHA-256 and size of each of its files.
curl -fsS -m 300 "$mirror/dists/$suite/main/source/Sources.xz" -o "$dir/Sources.xz" ||
  die "cannot fetch $mirror/dists/$suite/main/source/Sources.xz"
stanza=$(xz -dc "$dir/Sources.xz" | awk '/^Package: fio$/ { p = 1 } p && /^$/ { exit } p')
rm -f "$dir/Sources.xz"
version=$(printf '%s\n' "$stanza" | sed -n 's/^Version: //p')
pool=$(printf '%s\n' "$stanza" | sed -n 's/^Directory: //p')
[ -n "$version" ] && [ -n "$pool" ] || die "no fio source package in $suite"
upstream=${version#*:}
upstream=${upstream%-*}
src=$dir/fio-$upstream
if [ -x "$src/configure" ] && [ -f "$src/t/zbd/test-zbd-support" ]; then
  echo "$src"
  exit 0
fi
tarball=fio_$upstream.orig.tar.gz
sum=$(printf '%s\n' "$stanza" | awk -v f="$tarball" '
  /^Checksums-Sha256:/ { s = 1; next } /^[^ ]/ { s = 0 } s && $3 == f { print $1 }')
[ -n "$sum" ] || die "$suite's fio $version lists no $tarball"
note "fetching fio $version's source ($suite) from $mirror"
curl -fsS -m 600 "$mirror/$pool/$tarball" -o "$dir/$tarball" ||
  die "cannot fetch $mirror/$pool/$tarball"
echo "$sum  $dir/$tarball" | sha256sum -c --quiet >/dev/null 2>&1 ||
  { rm -f "$dir/$tarball"; die "$tarball does not match the SHA-256 of $suite's source index"; }
rm -rf "$src.tmp"
mkdir -p "$src.tmp"
tar -xzf "$dir/$tarball" -C "$src.tmp" --strip-components=1
rm -f "$dir/$tarball"
[ -x "$src.tmp/configure" ] || die "$tarball has no configure"
rm -rf "$src"
mv "$src.tmp" "$src"
echo "$src"
