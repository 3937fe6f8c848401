#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# prepare.sh CACHE [SUITE [MODULE...]]: a guest kernel and its base
# initramfs for the real-kernel tiers, built once and cached in CACHE
# (git-ignored).
#
#   CACHE/<pkg>.deb             Debian's kernel image package (apt-get download,
#                               never installed); from 7.x also the
#                               linux-base-, linux-binary- and linux-modules-
#                               packages it depends on, which hold the files
#   CACHE/<kver>/vmlinux        the ELF kernel, for qemu's fast PVH boot
#   CACHE/<kver>/base.cpio      busybox, nbd-client, util-linux tools with their
#                               libraries, the needed modules, /init
#   CACHE/current               "<kver>", for the caller (CACHE/current-SUITE
#                               with a SUITE)
#
# Without SUITE the kernel is the one the host's APT sources give
# linux-image-amd64 (Debian 12: 6.1).  With a SUITE (e.g. bookworm-backports)
# it is the one linux-image-amd64 depends on in that suite of the Debian
# archive, looked up with a private APT sources file and private package
# lists under CACHE/apt/SUITE: the host's APT configuration is not touched.
# MODULE... replaces the default module list (the 6.1 tier's: configfs,
# null_blk, nbd, virtio net); their dependencies come through modules.dep.
#
# ZN_KERNEL_PACKAGE picks the package instead; ZN_KERNEL_MIRROR the archive
# of a SUITE (default http://deb.debian.org/debian).  Rebuilds base.cpio
# when /init, this script, lib.sh or the module list changes.
# ZN_KERNEL_ONLY=1 stops once the kernel is unpacked (CACHE/<kver>/vmlinux,
# CACHE/<kver>/modroot) and CACHE/current* written, leaving the base
# initramfs as it is: for a caller that only needs the kernel's modules
# (bench/ublk-vs-nullblk.sh packs nbd.ko from them).
set -eu

cache=${1:?usage: prepare.sh CACHE-DIR [SUITE [MODULE...]]}
suite=${2:-}
[ $# -ge 2 ] && shift 2 || shift $#
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)

. "$here/lib.sh"

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
# apt_q CMD ARG...: apt-get or apt-cache, on the host's APT configuration or,
# with a SUITE, on the private one under CACHE/apt/SUITE.
if [ -n "$suite" ]; then
  case $suite in *[!a-z0-9.-]*|'') die "bad suite name '$suite'" ;; esac
  aptdir=$cache/apt/$suite
  mkdir -p "$aptdir/lists/partial" "$aptdir/cache/archives/partial"
  keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  [ -f "$keyring" ] || die "$keyring is missing (Debian: debian-archive-keyring)"
  echo "deb [signed-by=$keyring] ${ZN_KERNEL_MIRROR:-http://deb.debian.org/debian} $suite main" \
    >"$aptdir/sources.list"
  apt_q () {
    cmd=$1; shift
    "$cmd" -o Dir::Etc::SourceList="$aptdir/sources.list" \
      -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists="$aptdir/lists" \
      -o Dir::Cache="$aptdir/cache" "$@"
  }
  current=$cache/current-$suite
  where="in $suite"
else
  apt_q () { "$@"; }
  current=$cache/current
  where="in the host's APT sources"
fi
apt_update () {
  apt_q apt-get -o Acquire::Retries=3 update -qq >"$cache/update.log" 2>&1 ||
    { [ -z "$suite" ] || { cat "$cache/update.log" >&2; die "apt-get update of $suite failed"; }; }
}
image_dep () {
  apt_q apt-cache depends linux-image-amd64 2>/dev/null |
    sed -n 's/^ *Depends: \(linux-image-[0-9].*-amd64\)$/\1/p' | head -n 1
}

pkg=${ZN_KERNEL_PACKAGE:-}
if [ -z "$pkg" ] && [ -n "$suite" ] && [ -f "$current" ]; then
  # A cached kernel of this suite: no network needed.
  pkg=linux-image-$(cat "$current")
  ls "$cache/${pkg}"_*.deb >/dev/null 2>&1 || pkg=
fi
if [ -z "$pkg" ]; then
  [ -z "$suite" ] || [ -n "$(ls "$aptdir/lists" | grep _Packages || true)" ] || apt_update
  pkg=$(image_dep)
  [ -n "$pkg" ] || {
    # The package lists may be missing on a fresh machine.
    apt_update
    pkg=$(image_dep)
  }
  [ -n "$pkg" ] || die "cannot tell which linux-image package linux-image-amd64 wants $where"
fi
kver=${pkg#linux-image-}

# deb_of PKG: the cached .deb of PKG, downloaded first when missing.
deb_of () {
  deb=$(ls "$cache/${1}"_*.deb 2>/dev/null | head -n 1 || true)
  if [ -z "$deb" ]; then
    note "downloading $1 $where (apt-get download, not installed)" >&2
    # apt warns when _apt cannot write the folder; only a failure matters.
    # Stale package lists may name a version the archive dropped: update once.
    (cd "$cache" && apt_q apt-get -o Acquire::Retries=3 download -q "$1" >"$cache/download.log" 2>&1) ||
      { apt_update >&2
        (cd "$cache" && apt_q apt-get -o Acquire::Retries=3 download -q "$1" >"$cache/download.log" 2>&1); } ||
      { cat "$cache/download.log" >&2; die "apt-get download $1 failed"; }
    deb=$(ls "$cache/${1}"_*.deb | head -n 1)
  fi
  echo "$deb"
}
deb=$(deb_of "$pkg") || exit 1
# From 7.x, linux-image-<kver> holds no files: it depends on linux-base-<kver>
# (config, modules.builtin), linux-binary-<kver> (the bzImage) and
# linux-modules-<kver>.  Their names come from the image package's own
# Depends, so a cached kernel needs no package lists.
parts=$(dpkg-deb -f "$deb" Depends | tr ',' '\n' |
          sed -n "s/^ *\(linux-\(base\|binary\|modules\)-[^ ]*\).*/\1/p" |
          grep -F -- "-$kver" || true)
debs=$deb
for part in $parts; do
  debs="$debs $(deb_of "$part")" || exit 1
done

kdir=$cache/$kver
if [ ! -f "$kdir/vmlinux" ] || [ ! -f "$kdir/modroot/lib/modules/$kver/modules.dep" ]; then
  rm -rf "$kdir.tmp"
  mkdir -p "$kdir.tmp"
  for d in $debs; do dpkg -x "$d" "$kdir.tmp/pkg"; done
  # 6.x: boot/vmlinuz-<kver>, boot/config-<kver>, lib/modules/<kver>;
  # 7.x: all under usr/lib/modules/<kver> (vmlinuz, config).
  if [ -d "$kdir.tmp/pkg/usr/lib/modules/$kver" ]; then
    kmods=$kdir.tmp/pkg/usr/lib/modules/$kver
    bz=$kmods/vmlinuz kconfig=$kmods/config
  else
    kmods=$kdir.tmp/pkg/lib/modules/$kver
    bz=$kdir.tmp/pkg/boot/vmlinuz-$kver kconfig=$kdir.tmp/pkg/boot/config-$kver
  fi
  [ -f "$bz" ] || die "$debs hold no kernel image for $kver"
  # The bzImage wraps a compressed ELF vmlinux: xz in 6.1 (magic
  # FD 37 7A 58 5A 00), zstd in 6.12 (28 B5 2F FD).  Find the magic and
  # decompress from there (both stop at the stream's end and complain
  # about the trailing bytes, hence the 2>/dev/null); the first output
  # that is an ELF file is the kernel.
  found=
  for off in $(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$bz" | cut -d: -f1); do
    tail -c +"$((off + 1))" "$bz" | xz -dc 2>/dev/null >"$kdir.tmp/vmlinux" || true
    if [ "$(head -c 4 "$kdir.tmp/vmlinux" | od -An -c | tr -d ' ')" = '177ELF' ]; then
      found=1
      break
    fi
  done
  if [ -z "$found" ]; then
    command -v zstd >/dev/null 2>&1 || die "zstd is missing (Debian: zstd)"
    for off in $(LC_ALL=C grep -obUaP '\x28\xb5\x2f\xfd' "$bz" | cut -d: -f1); do
      tail -c +"$((off + 1))" "$bz" | zstd -dcq 2>/dev/null >"$kdir.tmp/vmlinux" || true
      if [ "$(head -c 4 "$kdir.tmp/vmlinux" | od -An -c | tr -d ' ')" = '177ELF' ]; then
        found=1
        break
      fi
    done
  fi
  [ -n "$found" ] || die "no xz- or zstd-compressed ELF kernel found in $bz"
  cp "$kconfig" "$kdir.tmp/config"
  # The package ships no modules.dep (depmod runs at installation).
  mkdir -p "$kdir.tmp/modroot/lib/modules"
  rm -f "$kmods/vmlinuz"
  mv "$kmods" "$kdir.tmp/modroot/lib/modules/$kver"
  depmod -b "$kdir.tmp/modroot" "$kver"
  rm -rf "$kdir.tmp/pkg" "$kdir"
  mv "$kdir.tmp" "$kdir"
fi

if [ -n "${ZN_KERNEL_ONLY:-}" ]; then
  echo "$kver" >"$current"
  exit 0
fi

# ---- the base initramfs -------------------------------------------------
if [ $# -gt 0 ]; then
  mods=$*
else
  mods="configfs null_blk nbd virtio virtio_ring virtio_pci virtio_pci_modern_dev
    virtio_pci_legacy_dev failover net_failover virtio_net"
fi
stamp=$({ cat "$here/prepare.sh" "$here/lib.sh" "$here/init"; echo $mods; } | cksum | cut -d' ' -f1)
if [ -f "$kdir/base.cpio" ] && [ "$(cat "$kdir/base.stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "$kver" >"$current"
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

for tool in nbd-client blkzone blkdiscard blockdev; do
  path=$(which_bin "$tool") || die "$tool is missing on the host"
  copy_binary "$root" "$path" "/usr/sbin/$tool"
done

# Modules and their dependencies, found through the package's modules.dep
# (a name matches its file with - or _), plus their soft dependencies
# (modules.softdep "pre:", aliases resolved through modules.alias: btrfs
# wants crypto-crc32c, libcrc32c crc32c, f2fs crc32).  Compressed modules
# (6.12 ships .ko.xz) are copied as they are: busybox's modprobe and insmod
# decompress xz themselves (checked on 6.12).
msrc=$kdir/modroot/lib/modules/$kver
mod_re () { echo "$1" | sed 's/[-_]/[-_]/g'; }
soft=
for m in $mods; do
  for s in $(sed -n "s/^softdep $(mod_re "$m") pre: *//p" "$msrc/modules.softdep" 2>/dev/null); do
    alias_of=$(awk -v a="$s" '$1 == "alias" && $2 == a { print $3 }' "$msrc/modules.alias")
    soft="$soft ${alias_of:-$s}"
  done
done
need=
for m in $mods $soft; do
  re=$(mod_re "$m")
  path=$(grep -E "(^|/)$re\.ko(\.[a-z]+)?:" "$msrc/modules.dep" | head -n 1 | cut -d: -f1 || true)
  if [ -z "$path" ]; then
    # Built in (not in modules.dep): nothing to copy.
    grep -qE "(^|/)$re\.ko" "$msrc/modules.builtin" 2>/dev/null && continue
    die "module $m not found in $kver"
  fi
  need="$need $path $(grep -E "^$path:" "$msrc/modules.dep" | cut -d: -f2)"
done
for path in $need; do
  mkdir -p "$(dirname "lib/modules/$kver/$path")"
  cp "$msrc/$path" "lib/modules/$kver/$path"
done
# With a module list of its own (the newer tiers), /sbin/modprobe too: the
# kernel's request_module runs it (crypto algorithms, e.g. crc32c for btrfs).
[ $# -gt 0 ] && ln -s /bin/busybox sbin/modprobe
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
echo "$kver" >"$current"
note "base initramfs for $kver: $(du -h "$kdir/base.cpio" | cut -f1)"
