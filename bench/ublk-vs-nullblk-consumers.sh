#!/bin/sh
# bench/ublk-vs-nullblk-consumers.sh CACHE KVER MODROOT: the shadow tree's
# tests/kernel/prepare-consumers.sh of bench/ublk-vs-nullblk.sh.  The
# tier's base image has nbd-client but not the nbd module (its module list
# is check-ublk.sh's), so this runs the tier's prepare-consumers.sh
# (ZN_BENCH_TOP/tests/kernel) and appends to its archive a cpio of the
# benchmark's own holding the module as /opt/bench/nbd.ko* (written under
# ZN_BENCH_TMP; the shared cache is not touched).  The guest insmods it.
# Prints the archive's path as its last line, as the tier's script does.
set -eu
top=${ZN_BENCH_TOP:?} tmp=${ZN_BENCH_TMP:?}
sh "$top/tests/kernel/prepare-consumers.sh" "$@" >"$tmp/consumers.out"
sed '$d' "$tmp/consumers.out"
ccpio=$(tail -n 1 "$tmp/consumers.out")
ko=$(sed -n 's|^\(kernel/drivers/block/nbd\.ko[.a-z]*\):.*|\1|p' "$3/lib/modules/$2/modules.dep")
[ -n "$ko" ] || { echo "ublk-vs-nullblk: no nbd module in $2" >&2; exit 1; }
rm -rf "$tmp/nbdroot"
mkdir -p "$tmp/nbdroot/opt/bench"
cp "$3/lib/modules/$2/$ko" "$tmp/nbdroot/opt/bench/"
(cd "$tmp/nbdroot" && find . -mindepth 1 | sed 's|^\./||' | LC_ALL=C sort | cpio -o -H newc --quiet) \
  >"$tmp/nbd.cpio"
cat "$ccpio" "$tmp/nbd.cpio" >"$tmp/consumers+nbd.cpio"
echo "$tmp/consumers+nbd.cpio"
