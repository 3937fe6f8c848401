#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# build-zloop.sh CACHE SUITE KVER: a zloop.ko for Debian's kernel KVER (the
# 7.3 tier's), which Debian builds without zloop (BLK_DEV_ZONED_LOOP is
# not set).  Prints the module's path as its last line; cached in
# CACHE/zloop/KVER/zloop.ko.  Everything comes from Debian's archive, with
# private APT lists under CACHE/zloop (the host's APT is not touched):
#
#   SUITE: linux-headers-KVER, its -common package and linux-kbuild (the
#          build's Makefiles, .config, Module.symvers and host tools);
#          linux-source-X.Y (X.Y of KVER; else the one the suite's
#          linux-source depends on) for drivers/block/zloop.c: a binary
#          package with the source tarball, where `apt-get source` may not
#          be served.
#   the suite's base release (trixie): libc6, libelf1t64, zlib1g,
#          libzstd1: linux-kbuild's modpost and objtool want glibc 2.38,
#          the host (Debian 12) has 2.36; they run with trixie's loader.
#
# What has to give, and why the module still fits the kernel:
#   - the kernel was built with gcc-14, the host has gcc-12: the options of
#     the .config that only gcc-14 has are turned off for this build
#     (CC_HAS_MIN_FUNCTION_ALIGNMENT: -falign-functions instead, the same
#     alignment; CC_HAS_ASSUME); the kernel's ABI does not depend on them;
#   - no pahole on the host: no BTF for the module (DEBUG_INFO_BTF_MODULES
#     off for make, not for the C code: struct module keeps its layout);
#   - with an older linux-source than KVER's (7.2's zloop.c on 7.3's
#     headers): struct bvec_iter's bi_bvec_done is bi_offset in 7.3;
#   - the module is not signed: the kernel (MODULE_SIG without _FORCE)
#     loads it and marks itself tainted.
set -eu

cache=${1:?usage: build-zloop.sh CACHE SUITE KVER}
suite=${2:?usage: build-zloop.sh CACHE SUITE KVER}
kver=${3:?usage: build-zloop.sh CACHE SUITE KVER}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
zn_note_fd=2

zdir=$cache/zloop
out=$zdir/$kver
if [ -f "$out/zloop.ko" ]; then echo "$out/zloop.ko"; exit 0; fi
mkdir -p "$zdir"
zdir=$(cd "$zdir" && pwd)
out=$zdir/$kver
base=${suite%-backports}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
for t in gcc make xz dpkg-deb apt-get; do command -v $t >/dev/null || die "$t is missing"; done

# apt_in DIST CMD ARG...: apt-get or apt-cache on private lists for DIST.
apt_in () {
  d=$zdir/apt-$1; shift
  if [ ! -f "$d/sources.list" ]; then
    mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
    echo "deb [signed-by=$keyring] ${ZN_KERNEL_MIRROR:-http://deb.debian.org/debian} $(basename "$d" | sed 's/^apt-//') main" \
      >"$d/sources.list"
  fi
  cmd=$1; shift
  "$cmd" -o Dir::Etc::SourceList="$d/sources.list" -o Dir::Etc::SourceParts=/dev/null \
    -o Dir::State::Lists="$d/lists" -o Dir::Cache="$d/cache" "$@"
}
fetch () {
  dist=$1; shift
  [ -n "$(ls "$zdir/apt-$dist/lists" 2>/dev/null | grep _Packages || true)" ] ||
    apt_in "$dist" apt-get -o Acquire::Retries=3 update -qq >"$zdir/update-$dist.log" 2>&1 ||
    { cat "$zdir/update-$dist.log" >&2; die "apt-get update of $dist failed"; }
  for p in "$@"; do
    ls "$zdir/debs/${p}"_*.deb >/dev/null 2>&1 && continue
    note "downloading $p from $dist"
    mkdir -p "$zdir/debs"
    (cd "$zdir/debs" && apt_in "$dist" apt-get -o Acquire::Retries=3 download -q "$p" >"$zdir/download.log" 2>&1) ||
      { cat "$zdir/download.log" >&2; die "apt-get download $p failed"; }
  done
}

fetch "$suite" "linux-headers-$kver"
hdeb=$(ls "$zdir/debs/linux-headers-${kver}"_*.deb | head -n 1)
deps=$(dpkg-deb -f "$hdeb" Depends | tr ',' '\n' |
         sed -n 's/^ *\(linux-\(headers\|kbuild\)-[^ ]*\).*/\1/p')
fetch "$suite" $deps
src=linux-source-$(echo "$kver" | sed -n 's/^\([0-9]*\.[0-9]*\).*/\1/p')
if [ -z "$(apt_in "$suite" apt-cache policy "$src" 2>/dev/null | sed -n 's/^ *Candidate: \([^(]\)/\1/p')" ]; then
  src=$(apt_in "$suite" apt-cache depends linux-source 2>/dev/null |
          sed -n 's/^ *Depends: \(linux-source-[0-9.]*\)$/\1/p' | head -n 1)
fi
[ -n "$src" ] || die "no linux-source package in $suite"
fetch "$suite" "$src"
fetch "$base" libc6 libelf1t64 zlib1g libzstd1

rm -rf "$out.tmp"
mkdir -p "$out.tmp/root" "$out.tmp/libs" "$out.tmp/mod"
for p in "linux-headers-$kver" $deps; do dpkg -x "$(ls "$zdir/debs/${p}"_*.deb | head -n 1)" "$out.tmp/root"; done
for p in libc6 libelf1t64 zlib1g libzstd1; do dpkg -x "$(ls "$zdir/debs/${p}"_*.deb | head -n 1)" "$out.tmp/libs"; done
lib=$out.tmp/libs/usr/lib/x86_64-linux-gnu
[ -x "$lib/ld-linux-x86-64.so.2" ] || die "no loader in trixie's libc6"

# The headers' Makefile names /usr/src; point it at the unpacked tree.
h=$out.tmp/root/usr/src/linux-headers-$kver
common=$(sed -n 's|^include /usr/src/\(.*\)/Makefile$|\1|p' "$h/Makefile")
[ -d "$out.tmp/root/usr/src/$common" ] || die "$h/Makefile names no headers I have"
printf 'KBUILD_OUTPUT=%s\ninclude %s/Makefile\n' "$h" "$out.tmp/root/usr/src/$common" >"$h/Makefile"
# The kbuild tools that the host's glibc cannot run: through trixie's loader.
for f in $(find "$out.tmp/root/usr/lib/linux-kbuild-"* -type f -perm -u+x); do
  [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
  if ! ldd "$f" >/dev/null 2>&1 || ldd "$f" 2>&1 | grep -q 'not found'; then
    mv "$f" "$f.bin"
    printf '#!/bin/sh\nexec %s --library-path %s %s "$@"\n' "$lib/ld-linux-x86-64.so.2" "$lib" "$f.bin" >"$f"
    chmod 755 "$f"
  fi
done
# The configuration's compiler options that the host's gcc lacks.
off=
echo 'int x;' | gcc -fmin-function-alignment=16 -c -x c -o /dev/null - 2>/dev/null ||
  off="$off CC_HAS_MIN_FUNCTION_ALIGNMENT"
echo 'int f(int a) { __attribute__((assume(a > 0))); return a; }' |
  gcc -Werror -c -x c -o /dev/null - 2>/dev/null || off="$off CC_HAS_ASSUME"
for o in $off; do
  sed -i "s/^CONFIG_$o=y\$/# CONFIG_$o is not set/" "$h/include/config/auto.conf"
  sed -i "/^#define CONFIG_$o 1\$/d" "$h/include/generated/autoconf.h"
done
[ -z "$off" ] || note "off for the host's gcc-$(gcc -dumpversion):$off"
# No pahole: no BTF step in make (auto.conf), but the C side (autoconf.h)
# keeps the option: struct module has BTF fields under it, and a module
# whose struct module is shorter than the kernel's does not load.
if ! command -v pahole >/dev/null 2>&1; then
  sed -i 's/^CONFIG_DEBUG_INFO_BTF_MODULES=y$/# CONFIG_DEBUG_INFO_BTF_MODULES is not set/' \
    "$h/include/config/auto.conf"
fi

tarball=$(dpkg-deb -c "$(ls "$zdir/debs/${src}"_*.deb | head -n 1)" | sed -n 's|.* \./\(usr/src/linux-source-.*\.tar\.xz\)$|\1|p')
[ -n "$tarball" ] || die "$src holds no source tarball"
dpkg-deb --fsys-tarfile "$(ls "$zdir/debs/${src}"_*.deb | head -n 1)" | tar -xf - -C "$out.tmp" "./$tarball"
top=$(basename "$tarball" .tar.xz)
xz -dc "$out.tmp/$tarball" | tar -xf - -C "$out.tmp" "$top/drivers/block/zloop.c"
rm -f "$out.tmp/$tarball"
cp "$out.tmp/$top/drivers/block/zloop.c" "$out.tmp/mod/zloop.c"
if grep -q 'bi_bvec_done' "$out.tmp/mod/zloop.c" &&
   ! grep -q 'bi_bvec_done' "$out.tmp/root/usr/src/$common/include/linux/bvec.h"; then
  sed -i 's/bi_iter\.bi_bvec_done/bi_iter.bi_offset/' "$out.tmp/mod/zloop.c"
fi
echo 'obj-m := zloop.o' >"$out.tmp/mod/Kbuild"
note "building zloop.ko ($top's zloop.c) for $kver"
make -C "$h" M="$out.tmp/mod" CC=gcc HOSTCC=gcc modules >"$zdir/build.log" 2>&1 ||
  { tail -n 20 "$zdir/build.log" >&2; die "the zloop.ko build failed (log: $zdir/build.log)"; }
vm=$(modinfo -F vermagic "$out.tmp/mod/zloop.ko")
case $vm in "$kver "*) ;; *) die "zloop.ko's vermagic '$vm' is not $kver's" ;; esac
# struct module as the kernel's own modules have it (the kernel refuses a
# module whose layout differs, with "Invalid relocation target"): where
# init_module and cleanup_module go in it, as in null_blk.ko.
this_module_layout () {
  readelf -r -W "$1" | awk '/^Relocation section/ { on = ($3 == "'"'"'.rela.gnu.linkonce.this_module'"'"'") }
    on && ($5 == "init_module" || $5 == "cleanup_module") { print $1, $5 }' | sort
}
ref=$(find "$cache/$kver/modroot" -name 'null_blk.ko*' 2>/dev/null | head -n 1)
if [ -n "$ref" ]; then
  case $ref in *.xz) xz -dc "$ref" >"$out.tmp/ref.ko" ;; *.zst) zstd -dcq "$ref" >"$out.tmp/ref.ko" ;; *) cp "$ref" "$out.tmp/ref.ko" ;; esac
  a=$(this_module_layout "$out.tmp/mod/zloop.ko" | tr '\n' ' ') b=$(this_module_layout "$out.tmp/ref.ko" | tr '\n' ' ')
  [ -n "$a" ] && [ "$a" = "$b" ] ||
    die "zloop.ko's struct module differs from the kernel's (init/cleanup at: $a; null_blk.ko: $b)"
fi
rm -rf "$out"
mkdir -p "$out"
cp "$out.tmp/mod/zloop.ko" "$out/zloop.ko"
echo "$top" >"$out/source"
rm -rf "$out.tmp"
note "zloop.ko for $kver from $top: $(du -h "$out/zloop.ko" | cut -f1)"
echo "$out/zloop.ko"
