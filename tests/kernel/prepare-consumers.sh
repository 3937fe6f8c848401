#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# prepare-consumers.sh CACHE KVER MODROOT [FIO_SRCDIR]: the zoned consumers
# of the ublk tier (guest-ublk-consumers.sh), as a cpio archive appended to
# the guest's base initramfs.  Prints the archive's path as its last line.
#
#   CACHE/consumers/fio            a static, stripped fio built from a copy
#                                  of FIO_SRCDIR (rebuilt when the source,
#                                  its version or the configure line change)
#   CACHE/consumers/consumers.cpio (rebuilt when this script or the fio
#                                  binary changes):
#     /opt/fio/fio, /opt/fio/t/zbd/*   fio's t/zbd/test-zbd-support runs
#                                      ../../fio relative to itself
#     /opt/fio-recovery/fio            with FIO_RECOVERY_SRCDIR, a second
#                                      static fio (3.40 or later)
#     /opt/gnu/bin/*                   GNU grep, sed, coreutils for that
#                                      script (grep -P, timeout -v, stat -c);
#                                      kept off the PATH of busybox scripts
#     /usr/bin/bash, /bin/bash         test-zbd-support is a bash script
#     /usr/sbin/mkfs.f2fs fsck.f2fs mkfs.btrfs dmsetup, /usr/bin/btrfs
#     with every library ldd lists, at the host's paths.
#
# KVER and MODROOT are accepted for the caller's interface; no modules are
# added here: the base image carries f2fs, btrfs and dm-mod (and their
# dependencies) with its own modules.dep.
#
# FIO_SRCDIR (argument or environment; `make check-kernel` passes the one
# configure --with-fio was given; else ZONEDNULL_FIO_SRC; else the newest
# .cache/fio/fio-* of the source tree, where ./run fetches it): fio's
# source, as the build uses it for the engine.  It is copied, never built
# in place.
#
# Host packages: f2fs-tools btrfs-progs dmsetup bash util-linux libaio-dev
# zlib1g-dev (the last two for fio's static link).
set -eu

cache=${1:?usage: prepare-consumers.sh CACHE KVER MODROOT [FIO_SRCDIR]}
kver=${2:?usage: prepare-consumers.sh CACHE KVER MODROOT [FIO_SRCDIR]}
modroot=${3:?usage: prepare-consumers.sh CACHE KVER MODROOT [FIO_SRCDIR]}
here=$(cd "$(dirname "$0")" && pwd)
srcroot=$(cd "$here/../.." && pwd)

. "$here/lib.sh"
# The archive's path is the last line of stdout: every message to stderr.
zn_note_fd=2

fio_src=${4:-${FIO_SRCDIR:-${ZONEDNULL_FIO_SRC:-}}}
if [ -z "$fio_src" ]; then
  fio_src=$(ls -d "$srcroot"/.cache/fio/fio-* 2>/dev/null | sort -V | tail -n 1 || true)
fi
[ -n "$fio_src" ] && [ -f "$fio_src/t/zbd/test-zbd-support" ] && [ -x "$fio_src/configure" ] ||
  die "no fio source tree (give FIO_SRCDIR; '$fio_src' has no configure and t/zbd)"
fio_src=$(cd "$fio_src" && pwd)
# FIO_RECOVERY_SRCDIR (environment, optional): a fio of 3.40 or later,
# whose recover_zbd_write_error guest-ublk-faults.sh runs.
fio_recovery_src=${FIO_RECOVERY_SRCDIR:-}
if [ -n "$fio_recovery_src" ]; then
  [ -x "$fio_recovery_src/configure" ] || die "FIO_RECOVERY_SRCDIR '$fio_recovery_src' has no configure"
  fio_recovery_src=$(cd "$fio_recovery_src" && pwd)
fi
[ -d "$modroot/lib/modules/$kver" ] || note "warning: $modroot/lib/modules/$kver is missing (unused here)"

missing=
for t in mkfs.f2fs:f2fs-tools fsck.f2fs:f2fs-tools mkfs.btrfs:btrfs-progs btrfs:btrfs-progs \
         dmsetup:dmsetup bash:bash blkzone:util-linux cpio:cpio strip:binutils make:make \
         gcc:gcc; do
  which_bin "${t%%:*}" >/dev/null || missing="$missing ${t#*:}"
done
[ -f /usr/include/libaio.h ] || missing="$missing libaio-dev"
[ -f /usr/include/zlib.h ] || missing="$missing zlib1g-dev"
[ -z "$missing" ] || die "missing on the host (Debian packages):$missing"

mkdir -p "$cache/consumers"
cdir=$(cd "$cache/consumers" && pwd)

# ---- static fio ------------------------------------------------------------
fio_configure="--build-static --disable-native --disable-numa --disable-rdma --disable-rados
  --disable-rbd --disable-http --disable-gfapi --disable-pmem --disable-xnvme --disable-tcmalloc
  --disable-libzbc --disable-dfs"

# static_fio SRC NAME: CACHE/consumers/NAME, a static fio built from a
# copy of SRC, unless the one there was built from it (NAME.stamp).
static_fio () {
  sf_src=$1 sf_name=$2
  sf_stamp=$( { echo "$sf_src"; echo "$fio_configure"; cat "$sf_src/FIO-VERSION-GEN";
                ls -l --time-style=+%s "$sf_src/configure" "$sf_src/Makefile"; } | cksum | cut -d' ' -f1)
  if [ -x "$cdir/$sf_name" ] && [ "$(cat "$cdir/$sf_name.stamp" 2>/dev/null)" = "$sf_stamp" ]; then
    return 0
  fi
  note "building a static fio from $sf_src (a few minutes)"
  rm -rf "$cdir/$sf_name-build" "$cdir/$sf_name" "$cdir/$sf_name.stamp"
  cp -a "$sf_src" "$cdir/$sf_name-build"
  (
    cd "$cdir/$sf_name-build"
    make clean >/dev/null 2>&1 || true
    # shellcheck disable=SC2086
    ./configure $fio_configure >"$cdir/$sf_name-configure.log" 2>&1 ||
      { tail -n 20 "$cdir/$sf_name-configure.log" >&2; exit 1; }
    make -j"$(nproc 2>/dev/null || echo 2)" fio >"$cdir/$sf_name-make.log" 2>&1 ||
      { tail -n 30 "$cdir/$sf_name-make.log" >&2; exit 1; }
  ) || die "the static fio build failed (logs in $cdir)"
  f=$cdir/$sf_name-build/fio
  ldd "$f" >/dev/null 2>&1 && die "$f is not static"
  "$f" --enghelp 2>/dev/null | grep -q io_uring || die "$f has no io_uring engine"
  "$f" --enghelp 2>/dev/null | grep -q libaio || die "$f has no libaio engine"
  strip -o "$cdir/$sf_name" "$f"
  rm -rf "$cdir/$sf_name-build"
  echo "$sf_stamp" >"$cdir/$sf_name.stamp"
  note "static fio ($sf_name): $(du -h "$cdir/$sf_name" | cut -f1)"
}
static_fio "$fio_src" fio
if [ -n "$fio_recovery_src" ]; then
  static_fio "$fio_recovery_src" fio-recovery
else
  rm -f "$cdir/fio-recovery" "$cdir/fio-recovery.stamp"
fi

# ---- the archive -----------------------------------------------------------
stamp=$( { cat "$0" "$here/lib.sh"; cat "$cdir/fio.stamp"; cksum <"$cdir/fio";
           cat "$cdir/fio-recovery.stamp" 2>/dev/null || true;
           cat "$here"/consumers-* 2>/dev/null || true; } | cksum | cut -d' ' -f1)
if [ -f "$cdir/consumers.cpio" ] && [ "$(cat "$cdir/consumers.stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "$cdir/consumers.cpio"
  exit 0
fi

root=$cdir/root
rm -rf "$root"
mkdir -p "$root"

# Binaries with their libraries at the host's paths (copy_binary, lib.sh).
# Nothing is written over /bin: the base's busybox applet links stay as
# they are.
mkdir -p "$root/opt/fio/t/zbd"
cp "$cdir/fio" "$root/opt/fio/fio"
for f in test-zbd-support functions run-tests-against-nullb; do
  [ -f "$fio_src/t/zbd/$f" ] && cp "$fio_src/t/zbd/$f" "$root/opt/fio/t/zbd/$f"
done
chmod 755 "$root/opt/fio/fio" "$root/opt/fio/t/zbd/test-zbd-support"
if [ -x "$cdir/fio-recovery" ]; then
  mkdir -p "$root/opt/fio-recovery"
  cp "$cdir/fio-recovery" "$root/opt/fio-recovery/fio"
fi

copy_binary "$root" "$(which_bin bash)" /usr/bin/bash
mkdir -p "$root/bin"
ln -s /usr/bin/bash "$root/bin/bash"
copy_binary "$root" "$(which_bin mkfs.f2fs)" /usr/sbin/mkfs.f2fs
copy_binary "$root" "$(which_bin fsck.f2fs)" /usr/sbin/fsck.f2fs
copy_binary "$root" "$(which_bin mkfs.btrfs)" /usr/sbin/mkfs.btrfs
copy_binary "$root" "$(which_bin btrfs)" /usr/bin/btrfs
copy_binary "$root" "$(which_bin dmsetup)" /usr/sbin/dmsetup
copy_binary "$root" "$(which_bin blkzone)" /usr/sbin/blkzone
# test-zbd-support's tools, GNU versions (busybox grep has no -P, busybox
# timeout no -v); on the PATH only of the scripts that ask for them.
for t in grep sed timeout stat tr sort seq readlink realpath tail head cat cut wc \
         dirname basename dd sleep rm mkdir ls date uname env printf od; do
  p=$(which_bin "$t") || die "$t is missing on the host"
  copy_binary "$root" "$p" "/opt/gnu/bin/$t"
done

(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) >"$cdir/consumers.cpio.tmp"
mv "$cdir/consumers.cpio.tmp" "$cdir/consumers.cpio"
rm -rf "$root"
echo "$stamp" >"$cdir/consumers.stamp"
note "consumers archive: $(du -h "$cdir/consumers.cpio" | cut -f1)"
echo "$cdir/consumers.cpio"
