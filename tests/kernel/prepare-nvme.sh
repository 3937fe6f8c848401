#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# prepare-nvme.sh CACHE: nvme-cli for the guest of check-nvme.sh and
# bench/nvme-vs-nvmet.sh, as a cpio archive appended to the 6.12 base
# initramfs.  Prints the archive's path as its last line.
#
#   CACHE/nvme-cli/*.deb        Debian bookworm's nvme-cli and the libraries
#                               it depends on (libnvme1, libjson-c5), fetched
#                               with apt-get download from the host's APT
#                               sources (never installed)
#   CACHE/nvme-cli/nvme-cli.cpio
#     /usr/sbin/nvme            from the .deb, with libnvme.so.1 and
#                               libjson-c.so.5 from theirs; the libraries
#                               those need in turn (libssl, libdbus, zlib...)
#                               are the host's, as copy_binary takes them
#     /etc/nvme/                empty: the guest writes hostnqn and hostid
# Rebuilt when this script, lib.sh or the .debs change.
set -eu

cache=${1:?usage: prepare-nvme.sh CACHE}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
zn_note_fd=2

pkgs="nvme-cli libnvme1 libjson-c5"
mkdir -p "$cache/nvme-cli"
ndir=$(cd "$cache/nvme-cli" && pwd)
for p in $pkgs; do
  ls "$ndir/${p}"_*.deb >/dev/null 2>&1 && continue
  note "downloading $p (apt-get download, not installed)"
  # apt warns when _apt cannot write the folder; only a failure matters.
  (cd "$ndir" && apt-get -o Acquire::Retries=3 download -q "$p" >"$ndir/download.log" 2>&1) ||
    { cat "$ndir/download.log" >&2; die "apt-get download $p failed (bookworm's nvme-cli, libnvme1, libjson-c5)"; }
done

stamp=$( { cat "$0" "$here/lib.sh"; ls -l "$ndir"/*.deb; } | cksum | cut -d' ' -f1)
if [ -f "$ndir/nvme-cli.cpio" ] && [ "$(cat "$ndir/nvme-cli.stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "$ndir/nvme-cli.cpio"
  exit 0
fi

unpack=$ndir/unpack root=$ndir/root
rm -rf "$unpack" "$root"
mkdir -p "$unpack" "$root/etc/nvme"
for p in $pkgs; do dpkg -x "$(ls "$ndir/${p}"_*.deb | head -n 1)" "$unpack"; done
[ -x "$unpack/usr/sbin/nvme" ] || die "the nvme-cli package holds no usr/sbin/nvme"
# The packages' libraries go where the host keeps its own (their paths in
# the packages); what they need beyond them comes from the host through
# copy_binary, which leaves the files already in ROOT alone.
(cd "$unpack" && find . -name '*.so*' \( -type f -o -type l \)) | while read -r f; do
  mkdir -p "$root/$(dirname "$f")"
  cp -a "$unpack/$f" "$root/$f"
done
pkglibs=$(cd "$unpack" && find . -name '*.so*' -type f -exec dirname {} \; | sort -u |
            sed "s|^\.|$unpack|" | tr '\n' ':')
LD_LIBRARY_PATH=$pkglibs ldd "$unpack/usr/sbin/nvme" | grep -q 'not found' &&
  die "nvme from the package misses libraries: $(LD_LIBRARY_PATH=$pkglibs ldd "$unpack/usr/sbin/nvme" | grep 'not found' | tr '\n' ' ')"
mkdir -p "$root/usr/sbin"
cp "$unpack/usr/sbin/nvme" "$root/usr/sbin/nvme"
for lib in $(LD_LIBRARY_PATH=$pkglibs ldd "$unpack/usr/sbin/nvme" |
               sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) .*/\1/p'); do
  case $lib in "$unpack"/*) continue ;; esac
  [ -e "$root$lib" ] || { mkdir -p "$root$(dirname "$lib")" && cp -L "$lib" "$root$lib"; }
  # The host's libraries' own dependencies (libssl -> libcrypto, ...).
  for dep in $(ldd "$lib" 2>/dev/null | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p'); do
    [ -e "$root$dep" ] || { mkdir -p "$root$(dirname "$dep")" && cp -L "$dep" "$root$dep"; }
  done
done
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) >"$ndir/nvme-cli.cpio.tmp"
mv "$ndir/nvme-cli.cpio.tmp" "$ndir/nvme-cli.cpio"
rm -rf "$unpack" "$root"
echo "$stamp" >"$ndir/nvme-cli.stamp"
note "nvme-cli archive ($(ls "$ndir"/nvme-cli_*.deb | sed 's|.*/||')): $(du -h "$ndir/nvme-cli.cpio" | cut -f1)"
echo "$ndir/nvme-cli.cpio"
