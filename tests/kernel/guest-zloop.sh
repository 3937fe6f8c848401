#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Guest (Linux 7.3, run by guest-files.sh when /test/zloop.ko is there):
# the kernel's zloop and zonednull-ublk on the same directory, both ways.
# Debian builds no zloop; tests/kernel/build-zloop.sh makes a zloop.ko for
# the tier's kernel and `make check-kernel ZN_ZLOOP_KO=FILE` brings it in.
#
#   zloop -> zonednull: zloop device 0 with its files in $MNTD/zl/0 (zloop
#   keeps device ID in BASE_DIR/ID); writes into a conventional zone and
#   five sequential ones (a partial zone, a full one, one finished, one
#   reset, one a block past a MiB); its zone report and the checksums of
#   every zone's data; "remove id=0"; zonednull-ublk backing_dir=$MNTD/zl/0
#   with the same geometry must report the same zones and read the same
#   data.
#   zonednull -> zloop: the same writes on zonednull-ublk in $MNTD/zn/0,
#   SIGTERM, then zloop "add" on that directory: same zones, same data.
#   And a 2048-zone zonednull-ublk stopped right after it started: zloop
#   must take its directory (every zone file made).
#
# Uses guest-files.sh's functions (ublk_up, ublk_term, ok, fail) and
# $MNTD, $out, $KTIER.
ZL_GEOM_ZLOOP="capacity_mb=64,zone_size_mb=4,conv_zones=2"
ZL_GEOM_ZN="size=64 zone_size=4 zone_nr_conv=2 blocksize=4096 kernel=$KTIER"
DD=/opt/gnu/bin/dd

# zloop's options are separated by commas.
# zl_write DEV: the writes (1 MiB = 256 blocks of 4 KiB).
zl_write () {
  $DD if=/dev/urandom of="$1" bs=4096 seek=128 count=256 oflag=direct conv=notrunc 2>/dev/null &&
  $DD if=/dev/urandom of="$1" bs=4096 seek=$((2 * 1024)) count=384 oflag=direct 2>/dev/null &&
  $DD if=/dev/urandom of="$1" bs=4096 seek=$((3 * 1024)) count=1024 oflag=direct 2>/dev/null &&
  $DD if=/dev/urandom of="$1" bs=4096 seek=$((4 * 1024)) count=64 oflag=direct 2>/dev/null &&
  /usr/sbin/blkzone finish -o $((4 * 8192)) -c 1 "$1" &&
  $DD if=/dev/urandom of="$1" bs=4096 seek=$((5 * 1024)) count=128 oflag=direct 2>/dev/null &&
  /usr/sbin/blkzone reset -o $((5 * 8192)) -c 1 "$1" &&
  $DD if=/dev/urandom of="$1" bs=4096 seek=$((6 * 1024)) count=257 oflag=direct 2>/dev/null &&
  sync
}
# zl_state DEV FILE: per zone "start len cap wp cond type sha256", wp
# relative to the zone start ("-" for conventional and full zones, whose
# write pointer has no meaning and which zloop reports as all ones), an
# open zone as closed (how it comes back from its file), the checksum over
# [start, start + wp) or, for a conventional or full zone, the whole zone
# (4 KiB reads: both devices have zloop's block size, ext4's 4096).
zl_state () {
  /usr/sbin/blkzone report "$1" |
    sed -n 's/^ *start: \(0x[0-9a-f]*\), len \(0x[0-9a-f]*\), cap \(0x[0-9a-f]*\), wptr \(0x[0-9a-f]*\) .*zcond: *\([0-9]*\).*type: *\([0-9]*\).*/\1 \2 \3 \4 \5 \6/p' |
    while read -r s l c w cond t; do
      s=$((s)) l=$((l)) c=$((c)) w=$((w))
      if [ "$cond" = 0 ] || [ "$cond" = 14 ]; then n=$l w=-; else n=$w; fi
      # Open zones come back closed from the files, on either side.
      case $cond in 2|3) cond=4 ;; esac
      if [ "$n" = 0 ]; then sum=-
      else sum=$($DD if="$1" bs=4096 skip=$((s / 8)) count=$((n / 8)) iflag=direct 2>/dev/null |
                   sha256sum | cut -c1-16); fi
      echo "$s $l $c $w $cond $t $sum"
    done >"$2"
}
zl_compare () {
  # e3b0c44298fc1c14: the checksum of nothing, a read that failed.
  if grep -q e3b0c44298fc1c14 "$2" "$3"; then
    fail "zloop: $1: a zone's data could not be read: $(grep -h e3b0c44298fc1c14 "$2" "$3" | head -n 2 | tr '\n' ' ')"
  elif [ -s "$2" ] && cmp -s "$2" "$3"; then
    ok "zloop: $1: the same $(wc -l <"$2") zones (start, len, cap, wp, cond, type) and data: $(awk '$5 != 1 && $7 != "-"' "$2" | wc -l) zones with data"
  else
    fail "zloop: $1: zones or data differ (- before, + after): $(diff "$2" "$3" | grep '^[-+][0-9]' | head -n 4 | tr '\n' ' ')"
  fi
}
zl_add () {
  echo "add id=0,$ZL_GEOM_ZLOOP,base_dir=$1" >/dev/zloop-control 2>"$out/zloop-add.err" &&
    waitfor 100 test -b /dev/zloop0
}
# zl_dmesg: zloop's last messages (some lack their newline: a line of ours
# ends them).
zl_dmesg () {
  echo "guest-zloop: mark" >/dev/kmsg
  dmesg | grep -B 3 'guest-zloop: mark' | grep 'zloop:' | cut -c 16- | tr '\n' ' '
}
zl_remove () {
  echo "remove id=0" >/dev/zloop-control && waitfor 100 test ! -e /dev/zloop0
}

if ! insmod /test/zloop.ko 2>"$out/zloop-insmod.err"; then
  fail "zloop: insmod zloop.ko: $(cat "$out/zloop-insmod.err")"
elif ! waitfor 50 test -c /dev/zloop-control; then
  fail "zloop: no /dev/zloop-control"
else
  echo "   zloop: $(dmesg | grep -i zloop | tail -n 2 | tr '\n' ' ')"
  # zloop -> zonednull
  mkdir -p "$MNTD/zl/0"
  if zl_add "$MNTD/zl"; then
    if zl_write /dev/zloop0; then ok "zloop: writes on /dev/zloop0 ($ZL_GEOM_ZLOOP)"
    else fail "zloop: the writes on /dev/zloop0 failed"; fi
    zl_state /dev/zloop0 "$out/zloop-zl.state"
    zl_remove || fail "zloop: remove id=0"
    ls -l "$MNTD/zl/0" >"$out/zloop-zl.files"
    # shellcheck disable=SC2086
    if ublk_up zl-zn backing_dir="$MNTD/zl/0" $ZL_GEOM_ZN; then
      zl_state "$DEV" "$out/zloop-zl-zn.state"
      zl_compare "zloop's directory opened by zonednull-ublk" "$out/zloop-zl.state" "$out/zloop-zl-zn.state"
      ublk_term zl-zn
    fi
  else
    fail "zloop: add on $MNTD/zl: $(cat "$out/zloop-add.err") $(zl_dmesg)"
  fi
  # zonednull -> zloop
  mkdir -p "$MNTD/zn"
  # shellcheck disable=SC2086
  if ublk_up zn-zl backing_dir="$MNTD/zn/0" $ZL_GEOM_ZN; then
    if zl_write "$DEV"; then ok "zloop: writes on zonednull-ublk $DEV ($ZL_GEOM_ZN)"
    else fail "zloop: the writes on $DEV failed"; fi
    zl_state "$DEV" "$out/zloop-zn.state"
    ublk_term zn-zl
    ls -l "$MNTD/zn/0" >"$out/zloop-zn.files"
    if zl_add "$MNTD/zn"; then
      zl_state /dev/zloop0 "$out/zloop-zn-zl.state"
      zl_compare "zonednull's directory opened by zloop" "$out/zloop-zn.state" "$out/zloop-zn-zl.state"
      zl_remove || fail "zloop: remove id=0 (zonednull's directory)"
    else
      fail "zloop: add on $MNTD/zn: $(cat "$out/zloop-add.err") $(zl_dmesg)"
    fi
  fi
  # A new directory's zone files are made in the background (a big device
  # starts at once), and zloop restores a directory (one whose zone 0 file
  # exists) without creating files: an orderly stop must leave them all,
  # also right after the start.
  mkdir -p "$MNTD/big"
  # shellcheck disable=SC2086
  if ublk_up big-zl backing_dir="$MNTD/big/0" size=2048 zone_size=1 zone_nr_conv=2 blocksize=4096 kernel=$KTIER; then
    ublk_term big-zl
    nfiles=$(ls "$MNTD/big/0" | grep -c '^[cs][nve][vq]-')
    if echo "add id=0,capacity_mb=2048,zone_size_mb=1,conv_zones=2,base_dir=$MNTD/big" \
         >/dev/zloop-control 2>"$out/zloop-add.err" && waitfor 100 test -b /dev/zloop0; then
      ok "zloop: zonednull-ublk stopped at once on a new 2048-zone directory leaves $nfiles zone files; zloop's add takes it"
      zl_remove || fail "zloop: remove id=0 (the 2048-zone directory)"
    else
      fail "zloop: zonednull-ublk stopped at once on a new 2048-zone directory leaves $nfiles zone files; zloop's add refuses it: $(cat "$out/zloop-add.err") $(zl_dmesg)"
    fi
  fi
fi
