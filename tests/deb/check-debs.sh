#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# check-debs.sh [DIST]: the packages that ./run deb built into DIST
# (default dist/) on a clean Debian 12, made by mmdebstrap from Debian's
# archive in a temporary directory: installed there with apt, used
# (tests/deb/in-chroot.sh), purged, and nothing may be left but the
# configuration the test wrote.  Needs root (chroot) and mmdebstrap.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
dist=${1:-$top/dist}
mirror=${ZN_DEB_MIRROR:-http://deb.debian.org}

ls "$dist"/*.deb >/dev/null 2>&1 || { echo "check-debs: no packages in $dist (./run deb)" >&2; exit 1; }
root=$(mktemp -d "${TMPDIR:-/var/tmp}/zonednull-chroot.XXXXXX")
cleanup () {
  umount "$root/proc" 2>/dev/null || true
  rm -rf "$root"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

# The test's own tools: nbdinfo, a compiler and pkg-config for a program
# on the library, systemd-analyze and man (the units' Documentation=) for
# the installed units.
start=$(date +%s)
mmdebstrap --quiet --variant=apt \
  --include=libnbd-bin,gcc,libc6-dev,pkg-config,systemd,man-db \
  bookworm "$root" \
  "deb $mirror/debian bookworm main" \
  "deb $mirror/debian bookworm-updates main" \
  "deb $mirror/debian-security bookworm-security main"
echo "check-debs: clean Debian 12 in $root ($(( $(date +%s) - start )) s)"
mkdir "$root/debs"
for f in "$dist"/*.deb; do
  case $f in *-dbgsym_*) ;; *) cp "$f" "$root/debs/" ;; esac
done
cp "$top/tests/deb/in-chroot.sh" "$root/in-chroot.sh"
mount -t proc proc "$root/proc"
chroot "$root" /bin/sh /in-chroot.sh
echo "check-debs: PASS ($(( $(date +%s) - start )) s)"
