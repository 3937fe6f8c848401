#!/bin/sh
# prepare.sh CACHE: the guest kernel and the base initramfs of the
# real-kernel tier, built once and cached in CACHE (git-ignored).
#
#   CACHE/<pkg>.deb             Debian's kernel image package (apt-get download,
#                               never installed)
#   CACHE/<kver>/vmlinux        the ELF kernel, for qemu's fast PVH boot
#   CACHE/<kver>/base.cpio      busybox, nbd-client, util-linux tools with their
#                               libraries, the needed modules, /init
#   CACHE/current               "<kver>", for the caller
#
# ZN_KERNEL_PACKAGE picks the package (default: the one linux-image-amd64
# depends on).  Rebuilds base.cpio when /init or this script changes.
set -eu

cache=${1:?usage: prepare.sh CACHE-DIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)

die () { echo "check-kernel: $*" >&2; exit 1; }

for tool in qemu-system-x86_64 busybox nbd-client cpio depmod dpkg apt-get; do
  command -v "$tool" >/dev/null 2>&1 ||
    [ -x "/sbin/$tool" ] || [ -x "/usr/sbin/$tool" ] ||
    die "$tool is missing (Debian: qemu-system-x86 busybox-static nbd-client cpio kmod)"
done
[ -x /bin/busybox ] && /bin/busybox --list >/dev/null ||
  die "/bin/busybox is missing (Debian: busybox-static)"
file_is_static () { ! ldd "$1" >/dev/null 2>&1; }
file_is_static /bin/busybox || die "/bin/busybox is not static (install busybox-static)"

# ---- the kernel package --------------------------------------------------
pkg=${ZN_KERNEL_PACKAGE:-}
if [ -z "$pkg" ]; then
  pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
          sed -n 's/^ *Depends: \(linux-image-[0-9].*-amd64\)$/\1/p' | head -n 1)
  [ -n "$pkg" ] || {
    # The package lists may be missing on a fresh machine.
    apt-get update -qq >/dev/null 2>&1 || true
    pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
            sed -n 's/^ *Depends: \(linux-image-[0-9].*-amd64\)$/\1/p' | head -n 1)
  }
  [ -n "$pkg" ] || die "cannot tell which linux-image package linux-image-amd64 wants"
fi
kver=${pkg#linux-image-}

deb=$(ls "$cache/${pkg}"_*.deb 2>/dev/null | head -n 1 || true)
if [ -z "$deb" ]; then
  echo "check-kernel: downloading $pkg (apt-get download, not installed)"
  # apt warns when _apt cannot write the folder; only a failure matters.
  # Stale package lists may name a version the archive dropped: update once.
  (cd "$cache" && apt-get download -q "$pkg" >"$cache/download.log" 2>&1) ||
    { apt-get update -qq >/dev/null 2>&1
      (cd "$cache" && apt-get download -q "$pkg" >"$cache/download.log" 2>&1); } ||
    { cat "$cache/download.log" >&2; die "apt-get download $pkg failed"; }
  deb=$(ls "$cache/${pkg}"_*.deb | head -n 1)
fi

kdir=$cache/$kver
if [ ! -f "$kdir/vmlinux" ] || [ ! -f "$kdir/modroot/lib/modules/$kver/modules.dep" ]; then
  rm -rf "$kdir.tmp"
  mkdir -p "$kdir.tmp"
  dpkg -x "$deb" "$kdir.tmp/pkg"
  bz=$kdir.tmp/pkg/boot/vmlinuz-$kver
  [ -f "$bz" ] || die "$deb holds no boot/vmlinuz-$kver"
  # The bzImage wraps an xz-compressed ELF vmlinux: find the xz magic
  # FD 37 7A 58 5A 00 and decompress from there (xz stops at the stream's
  # end and complains about the trailing bytes, hence the 2>/dev/null).
  found=
  for off in $(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$bz" | cut -d: -f1); do
    tail -c +"$((off + 1))" "$bz" | xz -dc 2>/dev/null >"$kdir.tmp/vmlinux" || true
    if [ "$(head -c 4 "$kdir.tmp/vmlinux" | od -An -c | tr -d ' ')" = '177ELF' ]; then
      found=1
      break
    fi
  done
  [ -n "$found" ] || die "no xz-compressed ELF kernel found in $bz"
  cp "$kdir.tmp/pkg/boot/config-$kver" "$kdir.tmp/config"
  # The package ships no modules.dep (depmod runs at installation).
  mkdir -p "$kdir.tmp/modroot/lib/modules"
  mv "$kdir.tmp/pkg/lib/modules/$kver" "$kdir.tmp/modroot/lib/modules/$kver"
  depmod -b "$kdir.tmp/modroot" "$kver"
  rm -rf "$kdir.tmp/pkg" "$kdir"
  mv "$kdir.tmp" "$kdir"
fi

# ---- the base initramfs -------------------------------------------------
stamp=$(cat "$here/prepare.sh" "$here/init" | cksum | cut -d' ' -f1)
if [ -f "$kdir/base.cpio" ] && [ "$(cat "$kdir/base.stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "$kver" >"$cache/current"
  exit 0
fi

root=$kdir/root
rm -rf "$root"
mkdir -p "$root"
cd "$root"
mkdir -p bin sbin usr/bin usr/sbin lib lib64 etc proc sys dev tmp run out test mnt \
  "lib/modules/$kver"
cp /bin/busybox bin/busybox
for applet in $(/bin/busybox --list); do
  [ "$applet" = busybox ] || ln -s /bin/busybox "bin/$applet"
done

# A real binary plus every library ldd lists, at the same paths.  An applet
# symlink in the way is removed first: cp would follow its absolute target
# and overwrite the host's /bin/busybox.
copy_binary () {
  src=$1 dst=$2
  rm -f "$root$dst"
  mkdir -p "$(dirname "$root$dst")"
  cp -L "$src" "$root$dst"
  for lib in $(ldd "$src" 2>/dev/null | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) .*/\1/p'); do
    if [ ! -e "$root$lib" ]; then
      mkdir -p "$(dirname "$root$lib")"
      cp -L "$lib" "$root$lib"
    fi
  done
}
which_bin () {
  for d in /usr/sbin /sbin /usr/bin /bin; do
    [ -x "$d/$1" ] && { echo "$d/$1"; return 0; }
  done
  die "$1 is missing on the host"
}
copy_binary "$(which_bin nbd-client)" /usr/sbin/nbd-client
copy_binary "$(which_bin blkzone)" /usr/sbin/blkzone
copy_binary "$(which_bin blkdiscard)" /usr/sbin/blkdiscard
copy_binary "$(which_bin blockdev)" /usr/sbin/blockdev

# Modules and their dependencies, found through the package's modules.dep.
mods="configfs null_blk nbd virtio virtio_ring virtio_pci virtio_pci_modern_dev
  virtio_pci_legacy_dev failover net_failover virtio_net"
msrc=$kdir/modroot/lib/modules/$kver
need=
for m in $mods; do
  path=$(grep -E "(^|/)$m\.ko(\.[a-z]+)?:" "$msrc/modules.dep" | head -n 1 | cut -d: -f1 || true)
  if [ -z "$path" ]; then
    # Built in (not in modules.dep): nothing to copy.
    grep -qE "(^|/)$m\.ko" "$msrc/modules.builtin" 2>/dev/null && continue
    die "module $m not found in $kver"
  fi
  need="$need $path $(grep -E "^$path:" "$msrc/modules.dep" | cut -d: -f2)"
done
for path in $need; do
  mkdir -p "$(dirname "lib/modules/$kver/$path")"
  cp "$msrc/$path" "lib/modules/$kver/$path"
done
for f in modules.order modules.builtin modules.builtin.modinfo; do
  [ -f "$msrc/$f" ] && cp "$msrc/$f" "lib/modules/$kver/"
done
depmod -b "$root" "$kver"

echo 'root:x:0:0:root:/root:/bin/sh' >etc/passwd
echo 'root:x:0:' >etc/group
echo '127.0.0.1 localhost' >etc/hosts
cp "$here/init" init
chmod 755 init

find . | LC_ALL=C sort | cpio -o -H newc --quiet >"$kdir/base.cpio"
cd "$kdir"
rm -rf "$root"
echo "$stamp" >"$kdir/base.stamp"
echo "$kver" >"$cache/current"
echo "check-kernel: base initramfs for $kver: $(du -h "$kdir/base.cpio" | cut -f1)"
