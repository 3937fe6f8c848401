#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Guest (busybox sh, root, Linux 6.12): real consumers of a zoned device on
# /dev/ublkbN served by zonednull-ublk, some compared with null_blk.
#   fio     fio --zonemode=zbd write+verify with io_uring and libaio, and a
#           randwrite+verify job
#   dm      dm-linear over whole zones: host-managed, blkzone report of the
#           mapping = the device's zones, offset-adjusted
#   sigterm SIGTERM to zonednull-ublk while fio writes: the node goes, fio
#           ends with errors, no kernel warnings, a new instance starts
#   zbd     fio's t/zbd/test-zbd-support, the tests of $ZBD_TESTS (all with
#           ZN_ZBD_FULL=1), on ublk and on null_blk of the same geometry:
#           each test's outcome must be the same on both
#   f2fs    mkfs.f2fs -m, files, fsck.f2fs, remount, checksums
#   btrfs   mkfs.btrfs -O zoned, files, btrfs check, remount, checksums
#   f2fscap, btrfscap  the same with zone capacity below the zone size and
#           512-byte blocks
#   pfcheck zonednull-pfcheck on btrfs: its workload on a zonednull-ublk
#           that logs its writes, then every mark's state and two random
#           crash states, each replayed, served, checked and mounted; all
#           must pass (the 7.3 tier has the full check, guest-pfcheck.sh)
# Prints "ok   - ..." / "FAIL - ..." lines, writes its files into
# /out/consumers/, exits non-zero on any failure.
#
# Environment: ZN_CONS_STEPS (default all, in the order above);
# ZN_CONS_TARGET=nullb runs the ublk steps on null_blk instead (a baseline
# of the script itself); ZN_ZBD_FULL=1; ZN_ZBD_TESTS overrides the list;
# ZONEDNULL_UBLK (default /usr/bin/zonednull-ublk).
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
out=/out/consumers
mkdir -p "$out"
ZNU=${ZONEDNULL_UBLK:-/usr/bin/zonednull-ublk}
TARGET=${ZN_CONS_TARGET:-ublk}
STEPS=${ZN_CONS_STEPS:-fio dm sigterm zbd f2fs btrfs f2fscap btrfscap pfcheck}
FIO=/opt/fio/fio
ZBD=/opt/fio/t/zbd/test-zbd-support
GNUPATH=/opt/gnu/bin:/usr/sbin:/usr/bin:/sbin:/bin
MNT=/mnt/cons
CFS=/sys/kernel/config/nullb

# The geometries (MiB, as null_blk's configfs and zonednull-ublk take them).
# G_FIO: zone capacity below the zone size, conventional zones, both limits.
G_FIO="size=64 zone_size=4 zone_capacity=3 zone_nr_conv=2 zone_max_open=6 zone_max_active=8 blocksize=4096 memory_backed=1"
# G_ZBD: fio's run-tests-against-nullb sections 4/10 (10 % conventional
# zones, 1 MiB zones, max open 8), 256 zones (tests 3, 4 and 58 want 128+
# sequential zones).
G_ZBD="size=256 zone_size=1 zone_nr_conv=25 zone_max_open=8 blocksize=4096 memory_backed=1"
# f2fs: metadata in the conventional zones from zone 0, 4 MiB zones.
G_F2FS="size=256 zone_size=4 zone_nr_conv=8 zone_max_open=8 blocksize=4096 memory_backed=1"
# btrfs: power-of-two zones >= 4 MiB, zone append, max active >= 8.
G_BTRFS="size=256 zone_size=4 zone_nr_conv=0 zone_max_active=8 zone_max_open=8 blocksize=4096 memory_backed=1"
# The same with zone capacity below the zone size (f2fs: kernel 5.10+,
# btrfs: 5.16+) and 512-byte blocks.
G_F2FS_CAP="size=256 zone_size=4 zone_capacity=3 zone_nr_conv=8 zone_max_open=8 blocksize=512 memory_backed=1"
G_BTRFS_CAP="size=256 zone_size=4 zone_capacity=3 zone_nr_conv=0 zone_max_active=10 blocksize=512 memory_backed=1"

# The t/zbd tests run here: none of the 15-30 s timed ones (30-32, 48,
# 51, 54, 57, 58), no SCSI-only ones (9, 10), none for regular block
# devices only (42, 43, 49, 56: they skip on a zoned device).  uN is test
# N with -u (io_uring in place of libaio).  ZN_ZBD_FULL=1: every test,
# then the libaio ones again with -u.
ZBD_TESTS=${ZN_ZBD_TESTS:-"1 2 3 4 5 6 7 8 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 33 34 35 36 37 38 39 40 41 44 45 46 47 50 52 53 55 u7 u8 u13 u46"}
if [ "${ZN_ZBD_FULL:-0}" = 1 ]; then
  ZBD_TESTS="$(sed -n 's/^test\([0-9]*\)() *{.*/\1/p' "$ZBD" | sort -n | tr '\n' ' ') u7 u8 u11 u12 u13 u46 u48 u57"
fi

. /test/guest-lib.sh
fails=0
sectors_of () { echo $(( $(blockdev --getsz "$1") )); }
zone_sectors () { cat "/sys/block/$(basename "$1")/queue/chunk_sectors"; }

dmesg >"$out/dmesg.before"
# bash's process substitution (test-zbd-support) needs /dev/fd.
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
modprobe ublk_drv 2>/dev/null
[ -e /dev/ublk-control ] || [ "$TARGET" != ublk ] || fail "no /dev/ublk-control (modprobe ublk_drv)"
[ -d "$CFS" ] || modprobe null_blk nr_devices=0 || fail "modprobe null_blk nr_devices=0"
if [ "$TARGET" = ublk ] && [ ! -x "$ZNU" ]; then
  fail "$ZNU is missing: no consumer runs"
  exit 1
fi

# ---- devices -------------------------------------------------------------
# dev_up KIND NAME CONFIG: a zoned device, KIND ublk (zonednull-ublk) or
# nullb (a null_blk configfs device called NAME).  Sets DEV (and UPID).
# Returns non-zero (after a FAIL line) when it does not come up.
dev_up () {
  kind=$1 name=$2; shift 2
  DEV= UPID=
  if [ "$kind" = ublk ]; then
    if ! ublk_up "$name" "$@"; then
      [ -z "$UPID" ] || { DKIND=ublk DNAME=$name; dev_down; }
      return 1
    fi
  else
    d=$CFS/$name
    mkdir "$d" || { fail "$name: mkdir $d"; return 1; }
    echo 1 >"$d/zoned"
    for kv in "$@"; do
      echo "${kv#*=}" >"$d/${kv%%=*}" || { fail "$name: null_blk refuses $kv"; rmdir "$d"; return 1; }
    done
    echo 1 >"$d/power" || { fail "$name: null_blk refuses to power on $*"; rmdir "$d"; return 1; }
    DEV=/dev/$name
    waitfor 100 test -b "$DEV" || { fail "$name: no $DEV"; dev_down; return 1; }
  fi
  DKIND=$kind DNAME=$name
  z=$(cat "/sys/block/$(basename "$DEV")/queue/zoned")
  [ "$z" = host-managed ] || { fail "$name: $DEV is '$z', not host-managed"; dev_down; return 1; }
  return 0
}
# dev_down: removes the device of the last dev_up; zonednull-ublk must end
# with status 0 on SIGTERM within 30 s and take its node with it.
dev_down () {
  if [ "$DKIND" = ublk ]; then
    [ -n "$UPID" ] || return 0
    kill -TERM "$UPID" 2>/dev/null
    reap "$UPID" 300; rc=$?
    if [ $rc = 124 ]; then
      fail "$DNAME: zonednull-ublk still runs 30 s after SIGTERM"
      kill -KILL "$UPID" 2>/dev/null; reap "$UPID" 100
    elif [ $rc != 0 ]; then
      fail "$DNAME: zonednull-ublk exited with status $rc on SIGTERM: $(tail -n 3 "$out/$DNAME.stderr" | tr '\n' ' ')"
    fi
    [ -n "$DEV" ] && ! waitfor 100 test ! -e "$DEV" && fail "$DNAME: $DEV remains after zonednull-ublk ended"
    UPID=
  else
    d=$CFS/$DNAME
    [ -d "$d" ] || return 0
    echo 0 >"$d/power"
    rmdir "$d" || fail "$DNAME: rmdir $d"
  fi
  DEV=
}
# The device of a consumer step: zonednull-ublk, or null_blk with
# ZN_CONS_TARGET=nullb.
target_up () { dev_up "$TARGET" "$@"; }
# The zones' report of DEV as "start len cap wp cond type" lines (sectors,
# wp relative to the zone start), from START for COUNT zones.
zones () {
  blkzone report -o "$2" -c "$3" "$1" |
    sed -n 's/^ *start: \(0x[0-9a-f]*\), len \(0x[0-9a-f]*\), cap \(0x[0-9a-f]*\), wptr \(0x[0-9a-f]*\) .*zcond: *\([0-9]*\).*type: *\([0-9]*\).*/\1 \2 \3 \4 \5 \6/p' |
    while read -r s l c w cond t; do
      echo "$((s)) $((l)) $((c)) $((w)) $cond $t"
    done
}

# ---- fio ----------------------------------------------------------------
step_fio () {
  target_up fio $G_FIO || return
  zs=$(zone_sectors "$DEV")
  seq0=$((2 * zs * 512))            # zone_nr_conv=2
  for eng in io_uring libaio; do
    t0=$(now)
    timeout 300 "$FIO" --name="seq-$eng" --filename="$DEV" --direct=1 --zonemode=zbd \
      --ioengine=$eng --iodepth=8 --rw=write --bs=64k --offset=$seq0 --size=$((6 * zs * 512)) \
      --verify=crc32c --do_verify=1 --verify_fatal=1 \
      >"$out/fio-seq-$eng.log" 2>&1
    rc=$?
    if [ $rc = 0 ] && ! grep -q 'err= *[1-9]' "$out/fio-seq-$eng.log" &&
       grep -q 'WRITE: bw=' "$out/fio-seq-$eng.log" && grep -q 'READ: bw=' "$out/fio-seq-$eng.log"; then
      ok "fio $eng: sequential write + crc32c verify of 6 zones on $DEV ($(( $(now) - t0 )) s)"
    else
      fail "fio $eng: sequential write + verify exited $rc (see $out/fio-seq-$eng.log): $(grep -m 2 -iE 'error|verify|fio:' "$out/fio-seq-$eng.log" | tr '\n' ' ')"
    fi
  done
  # Random writes into random zones (fio moves each to the zone's write
  # pointer), conventional zones included, half the capacity: no resets.
  t0=$(now)
  timeout 300 "$FIO" --name=randw --filename="$DEV" --direct=1 --zonemode=zbd \
    --ioengine=io_uring --iodepth=16 --rw=randwrite --bs=16k --offset=0 --size=64m --io_size=16m \
    --verify=crc32c --do_verify=1 --verify_fatal=1 --randseed=7 \
    >"$out/fio-randwrite.log" 2>&1
  rc=$?
  if [ $rc = 0 ] && ! grep -q 'err= *[1-9]' "$out/fio-randwrite.log"; then
    ok "fio io_uring: randwrite --zonemode=zbd QD16 + verify on $DEV ($(( $(now) - t0 )) s)"
  else
    fail "fio randwrite + verify exited $rc (see $out/fio-randwrite.log): $(grep -m 2 -iE 'error|verify|fio:' "$out/fio-randwrite.log" | tr '\n' ' ')"
  fi
  zones "$DEV" 0 100 >"$out/fio-zones.txt"
  dev_down
}

# ---- dm-linear --------------------------------------------------------------
step_dm () {
  modprobe dm-mod 2>/dev/null
  [ -e /dev/mapper/control ] || { fail "dm: no /dev/mapper/control (modprobe dm-mod)"; return; }
  target_up dm $G_FIO || return
  zs=$(zone_sectors "$DEV")
  first=1 count=8                   # zones 1..8: one conventional, seven sequential
  start=$((first * zs)) len=$((count * zs))
  export DM_DISABLE_UDEV=1
  if ! echo "0 $len linear $DEV $start" | timeout 60 dmsetup create zncons --noudevsync >"$out/dm.log" 2>&1; then
    fail "dm: dmsetup create zncons (0 $len linear $DEV $start): $(cat "$out/dm.log")"
    dev_down; return
  fi
  dm=
  for d in /sys/block/dm-*; do
    [ "$(cat "$d/dm/name" 2>/dev/null)" = zncons ] && dm=$(basename "$d")
  done
  z=$(cat "/sys/block/$dm/queue/zoned" 2>/dev/null)
  [ "$z" = host-managed ] && ok "dm: /dev/mapper/zncons ($dm) over $DEV is host-managed" ||
    fail "dm: /sys/block/$dm/queue/zoned is '$z'"
  # Write through the mapping: 256 KiB at the start of mapped zone 2 (the
  # device's zone 3), 64 KiB into mapped zone 0 (conventional).
  dd if=/dev/urandom of=/dev/mapper/zncons bs=65536 count=4 seek=$((2 * zs / 128)) oflag=direct 2>>"$out/dm.log" ||
    fail "dm: a write at the write pointer of mapped zone 2 failed"
  dd if=/dev/urandom of=/dev/mapper/zncons bs=65536 count=1 seek=3 oflag=direct 2>>"$out/dm.log" ||
    fail "dm: a write into the conventional mapped zone 0 failed"
  zones /dev/mapper/zncons 0 "$count" >"$out/dm-zones.mapped"
  zones "$DEV" "$start" "$count" | while read -r s l c w cond t; do
    echo "$((s - start)) $l $c $w $cond $t"
  done >"$out/dm-zones.device"
  n=$(wc -l <"$out/dm-zones.mapped")
  if [ "$n" = "$count" ] && cmp -s "$out/dm-zones.mapped" "$out/dm-zones.device"; then
    ok "dm: blkzone report of the mapping = zones $first..$((first + count - 1)) of $DEV, offset-adjusted ($count zones)"
  else
    fail "dm: the mapping reports $n zones, not those of $DEV (see $out/dm-zones.*)"
  fi
  wp=$(sed -n 3p "$out/dm-zones.device" | cut -d' ' -f4)
  [ "$wp" = 512 ] && ok "dm: the write through the mapping moved the device's zone $((first + 2)) wp to 512" ||
    fail "dm: the device's zone $((first + 2)) wp is '$wp' after a 256 KiB write through dm, expected 512"
  # A write off the write pointer through dm is refused.
  if dd if=/dev/zero of=/dev/mapper/zncons bs=4096 count=1 seek=$((4 * zs / 8 + 8)) oflag=direct 2>/dev/null; then
    fail "dm: a write off the write pointer through the mapping succeeded"
  else
    ok "dm: a write off the write pointer through the mapping fails"
  fi
  timeout 60 dmsetup remove --noudevsync zncons >>"$out/dm.log" 2>&1 || fail "dm: dmsetup remove zncons: $(tail -n 1 "$out/dm.log")"
  dev_down
}

# ---- SIGTERM under load ------------------------------------------------------
step_sigterm () {
  target_up sig $G_FIO || return
  dev=$DEV
  dmesg >"$out/sigterm.dmesg.before"
  "$FIO" --name=sigterm --filename="$dev" --direct=1 --zonemode=zbd --ioengine=io_uring \
    --iodepth=8 --rw=write --bs=64k --time_based --runtime=120 --offset=$((2 * 4 << 20)) \
    >"$out/sigterm-fio.log" 2>&1 &
  fpid=$!
  # Let it write for a while (wait for write pointers to move).
  sleep 3
  zs=$(zone_sectors "$dev")
  waitfor 100 sh -c "blkzone report -o $((2 * zs)) -c 1 $dev | grep -qv 'wptr 0x000000 '"
  alive $fpid || fail "sigterm: fio ended before the signal: $(tail -n 3 "$out/sigterm-fio.log" | tr '\n' ' ')"
  t0=$(now)
  if [ "$DKIND" = ublk ]; then
    kill -TERM "$UPID"
    reap "$UPID" 300; rc=$?
    if [ $rc = 124 ]; then
      fail "sigterm: zonednull-ublk did not end within 30 s of SIGTERM under load"
      kill -KILL "$UPID" 2>/dev/null; reap "$UPID" 100
    elif [ $rc = 0 ]; then
      ok "sigterm: zonednull-ublk ended with status 0 under load ($(( $(now) - t0 )) s)"
    else
      fail "sigterm: zonednull-ublk exited with status $rc under load: $(tail -n 3 "$out/sig.stderr" | tr '\n' ' ')"
    fi
    UPID=
  else
    # The null_blk baseline: power off under load.
    (echo 0 >"$CFS/$DNAME/power") &
    reap $! 300 || fail "sigterm: null_blk power off under load did not return"
  fi
  if waitfor 100 test ! -e "$dev"; then ok "sigterm: $dev went away"
  else fail "sigterm: $dev is still there 10 s after the server ended"; fi
  reap $fpid 600; frc=$?
  if [ $frc = 124 ]; then
    fail "sigterm: fio hangs 60 s after the device went away: $(tail -n 2 "$out/sigterm-fio.log" | tr '\n' ' ')"
    kill -KILL $fpid 2>/dev/null
  elif [ $frc = 0 ]; then
    fail "sigterm: fio ended with status 0 after its device went away"
  else
    ok "sigterm: fio ended with status $frc: $(grep -m 1 -iE 'error|err=' "$out/sigterm-fio.log" | cut -c1-120)"
  fi
  [ "$DKIND" = nullb ] && rmdir "$CFS/$DNAME" 2>/dev/null
  dmesg >"$out/sigterm.dmesg.after"
  if tail -n +"$(($(wc -l <"$out/sigterm.dmesg.before") + 1))" "$out/sigterm.dmesg.after" |
       grep -E 'hung task|blocked for more than|WARNING|BUG|Oops|general protection' >"$out/sigterm.dmesg.bad"; then
    fail "sigterm: the kernel complained: $(head -n 2 "$out/sigterm.dmesg.bad" | tr '\n' ' ')"
  else
    ok "sigterm: no hung task, WARNING or BUG in dmesg"
  fi
  t0=$(now)
  if target_up sig2 $G_FIO; then
    ok "sigterm: a new instance with the same configuration serves $DEV at once ($(( $(now) - t0 )) s)"
    blkzone report -c 4 "$DEV" >"$out/sig2-zones.txt" 2>&1 || fail "sigterm: blkzone report on the new instance"
    dev_down
  fi
}

# ---- fio's t/zbd/test-zbd-support -------------------------------------------
# zbd_run KIND LABEL: every test of $ZBD_TESTS alone (-t N), outcome and
# seconds into $out/zbd-LABEL.txt, the output and fio's logs of the tests
# that did not pass into $out/zbd-LABEL/.
zbd_run () {
  kind=$1 label=$2
  res=$out/zbd-$label.txt
  : >"$res"
  dev_up "$kind" "zbd$label" $G_ZBD || { echo "# device-failed" >"$res"; return 1; }
  mkdir -p "$out/zbd-$label"
  t_all=$(now)
  for t in $ZBD_TESTS; do
    t0=$(now)
    case $t in u*) uopt=-u tn=${t#u} ;; *) uopt= tn=$t ;; esac
    rm -f "$ZBD.log.$tn"
    # shellcheck disable=SC2086
    PATH=$GNUPATH timeout 600 /usr/bin/bash "$ZBD" $uopt -t "$tn" "$DEV" >"$out/zbd-$label/run.$t" 2>&1
    rc=$?
    st=$(grep -oE '(PASS|FAIL|SKIP)' "$out/zbd-$label/run.$t" | tail -n 1)
    [ -n "$st" ] || st="ERROR(rc=$rc)"
    echo "$t $st $(( $(now) - t0 ))" >>"$res"
    case $st in
      PASS) rm -f "$out/zbd-$label/run.$t" ;;
      *) [ -f "$ZBD.log.$tn" ] && cp "$ZBD.log.$tn" "$out/zbd-$label/log.$t" ;;
    esac
    rm -f "$ZBD.log.$tn"
  done
  echo "# total $(( $(now) - t_all )) s on $DEV ($G_ZBD)" >>"$res"
  echo "# scheduler: $(cat "/sys/block/$(basename "$DEV")/queue/scheduler")" >>"$res"
  dev_down
}
step_zbd () {
  [ -x "$FIO" ] && [ -f "$ZBD" ] || { fail "zbd: $FIO or $ZBD is missing"; return; }
  la=$TARGET
  [ "$TARGET" = nullb ] && la=base
  zbd_run "$TARGET" "$la"
  zbd_run nullb nullb
  a=$out/zbd-$la.txt b=$out/zbd-nullb.txt
  if grep -q '^# device-failed' "$a" "$b"; then
    fail "zbd: no comparison: a device did not come up"
    return
  fi
  n=0 same=0 pass=0
  for t in $ZBD_TESTS; do
    n=$((n + 1))
    sa=$(awk -v t="$t" '$1 == t { print $2 }' "$a")
    sb=$(awk -v t="$t" '$1 == t { print $2 }' "$b")
    if [ "$sa" = "$sb" ] && [ -n "$sa" ]; then
      same=$((same + 1))
      [ "$sa" = PASS ] && pass=$((pass + 1))
    else
      fail "zbd test $t: ${sa:-missing} on $TARGET, ${sb:-missing} on null_blk (logs in $out/zbd-*/)"
    fi
  done
  ta=$(sed -n 's/^# total \([0-9]*\) s.*/\1/p' "$a") tb=$(sed -n 's/^# total \([0-9]*\) s.*/\1/p' "$b")
  [ "$same" = "$n" ] &&
    ok "zbd: test-zbd-support: all $n tests same outcome on $TARGET and null_blk ($pass pass; $TARGET ${ta}s, null_blk ${tb}s)"
  awk '$2 != "PASS" && $1 !~ /^#/ { printf "%s:%s ", $1, $2 } END { print "" }' "$b" |
    sed 's/^ *$/(none)/; s/^/   not passing on null_blk: /'
}

# ---- file systems -----------------------------------------------------------
# fs_files DIR: some files and directories of various sizes, their
# checksums into $out/NAME.sums (relative paths).
fs_files () {
  dir=$1 sums=$2
  mkdir -p "$dir/a/b" "$dir/c" || return 1
  i=0
  for kb in 4 12 64 100 1024 3000 8192 20000; do
    dd if=/dev/urandom of="$dir/a/f$i" bs=1024 count=$kb 2>/dev/null || return 1
    i=$((i + 1))
  done
  for i in 1 2 3 4 5 6 7 8 9 10; do echo "small file $i" >"$dir/a/b/s$i" || return 1; done
  dd if=/dev/urandom of="$dir/c/big" bs=1048576 count=40 2>/dev/null || return 1
  # An overwrite and an append: out-of-place updates in a zoned fs.
  dd if=/dev/urandom of="$dir/a/f3" bs=4096 count=2 seek=3 conv=notrunc 2>/dev/null || return 1
  cat "$dir/a/f0" >>"$dir/a/f4" || return 1
  rm -f "$dir/a/f1"
  (cd "$dir" && find . -type f | sort | xargs sha256sum) >"$sums"
}
fs_verify () {
  (cd "$1" && sha256sum -c "$2") >"$2.check" 2>&1
}
fs_step () {
  label=$1 fs=$2 geom=$3
  target_up "$label" $geom || return
  mkdir -p "$MNT"
  t0=$(now)
  if [ "$fs" = f2fs ]; then
    modprobe crc32_generic 2>/dev/null; modprobe f2fs 2>/dev/null
    mkfs=$(timeout 300 mkfs.f2fs -f -m "$DEV" 2>&1); rc=$?
  else
    modprobe crc32c_generic 2>/dev/null; modprobe xxhash_generic 2>/dev/null
    modprobe blake2b_generic 2>/dev/null; modprobe btrfs 2>/dev/null
    mkfs=$(timeout 300 mkfs.btrfs -f -O zoned -m single -d single "$DEV" 2>&1); rc=$?
  fi
  echo "$mkfs" >"$out/$label-mkfs.log"
  if [ $rc != 0 ]; then
    fail "$label: mkfs on $DEV ($geom) exited $rc: $(echo "$mkfs" | grep -iE 'error|not|fail' | head -n 3 | tr '\n' ' ')"
    dev_down; return
  fi
  ok "$label: mkfs on $DEV ($geom)"
  if ! timeout 120 mount -t "$fs" "$DEV" "$MNT" 2>"$out/$label-mount.log"; then
    fail "$label: mount: $(cat "$out/$label-mount.log") $(dmesg | grep -i "$fs" | tail -n 3 | tr '\n' ' ')"
    dev_down; return
  fi
  if fs_files "$MNT" "$out/$label.sums" && timeout 120 sync; then
    ok "$label: $(wc -l <"$out/$label.sums") files written and synced"
  else
    fail "$label: writing files failed: $(dmesg | tail -n 3 | tr '\n' ' ')"
  fi
  df -k "$MNT" >"$out/$label-df.txt" 2>&1
  timeout 120 umount "$MNT" || fail "$label: umount"
  zones "$DEV" 0 100 >"$out/$label-zones.txt"
  if [ "$fs" = f2fs ]; then
    timeout 300 fsck.f2fs -f "$DEV" >"$out/$label-fsck.log" 2>&1; rc=$?
  else
    timeout 300 btrfs check "$DEV" >"$out/$label-fsck.log" 2>&1; rc=$?
  fi
  [ $rc = 0 ] && ok "$label: $( [ "$fs" = f2fs ] && echo fsck.f2fs -f || echo btrfs check ) finds no errors" ||
    fail "$label: fsck exited $rc: $(grep -iE 'error|fail|corrupt|wrong|invalid' "$out/$label-fsck.log" | head -n 3 | tr '\n' ' ')"
  if timeout 120 mount -t "$fs" "$DEV" "$MNT" 2>>"$out/$label-mount.log"; then
    if fs_verify "$MNT" "$out/$label.sums"; then
      ok "$label: after remount every checksum matches"
    else
      fail "$label: checksums differ after remount: $(grep -v ': OK' "$out/$label.sums.check" | head -n 3 | tr '\n' ' ')"
    fi
    # More writes on the remounted file system, then a clean unmount.
    dd if=/dev/urandom of="$MNT/c/after" bs=1048576 count=8 2>/dev/null && timeout 120 sync ||
      fail "$label: a write after the remount failed"
    timeout 120 umount "$MNT" || fail "$label: second umount"
  else
    fail "$label: second mount: $(tail -n 2 "$out/$label-mount.log")"
  fi
  dev_down
}
step_f2fs () { fs_step f2fs f2fs "$G_F2FS"; }
step_btrfs () { fs_step btrfs btrfs "$G_BTRFS"; }
step_f2fscap () { fs_step f2fscap f2fs "$G_F2FS_CAP"; }
step_btrfscap () { fs_step btrfscap btrfs "$G_BTRFS_CAP"; }
step_pfcheck () {
  pf=/usr/bin/zonednull-pfcheck
  if [ ! -x "$pf" ] || [ ! -x /usr/bin/zonednull ]; then
    fail "pfcheck: zonednull-pfcheck or the zonednull CLI is not in the guest"; return
  fi
  [ "$TARGET" = ublk ] || { skip "pfcheck: on zonednull-ublk only"; return; }
  w=/tmp/pfcheck geom="size=256 zone_size=4 zone_nr_conv=0 zone_max_active=8 zone_max_open=8 blocksize=4096"
  rm -rf "$w"; mkdir -p "$w"
  # shellcheck disable=SC2086
  dev_up ublk pfcheck --control-socket="$w/ctl.sock" backing_dir="$w/live" log_writes="$w/log" $geom || return
  if ! timeout 600 "$pf" workload --fs=btrfs --ops=2 --work="$w" \
       --uri="nbd+unix:///nullb0?socket=$w/ctl.sock" "$DEV" >"$out/pfcheck.workload" 2>&1; then
    fail "pfcheck: the workload failed: $(tail -n 3 "$out/pfcheck.workload" | tr '\n' ' ')"
    dev_down; return
  fi
  dev_down
  timeout 1200 "$pf" check --fs=btrfs --log="$w/log" --work="$w" --states=2 --seed=1 \
    --params="$geom" >"$out/pfcheck.check" 2>&1
  rc=$?
  npass=$(grep -c '^PASS state' "$out/pfcheck.check")
  nfail=$(grep -c '^FAIL state' "$out/pfcheck.check")
  sed -n 's/^\(PASS\|FAIL\) state/   pfcheck: &/p; s/^  reproduce: /   pfcheck:   reproduce: /p' "$out/pfcheck.check"
  if [ "$rc" = 0 ] && [ "$npass" -ge 5 ] && [ "$nfail" = 0 ]; then
    ok "pfcheck: btrfs keeps what fsync made durable in $npass states (every mark, 2 random)"
  else
    fail "pfcheck: status $rc, $npass PASS, $nfail FAIL: $(grep -m 1 '^FAIL' "$out/pfcheck.check" || tail -n 2 "$out/pfcheck.check")"
    cp "$w/log" "$w/manifest" "$out/" 2>/dev/null
  fi
  rm -rf "$w"
}

# ---- run ------------------------------------------------------------------
for s in $STEPS; do
  step_t0=$(now)
  echo "== consumers: $s (on $TARGET)"
  "step_$s"
  echo "$s: $(( $(now) - step_t0 )) s" >>"$out/times.txt"
done
dmesg >"$out/dmesg.txt"
if grep -E 'hung task|blocked for more than|WARNING:|BUG:|Oops' "$out/dmesg.txt" >"$out/dmesg.bad"; then
  fail "the kernel complained during the consumer tests: $(head -n 2 "$out/dmesg.bad" | tr '\n' ' ')"
fi
sed 's/^/   time: /' "$out/times.txt"
echo "guest-ublk-consumers: $fails failure(s)"
[ "$fails" -eq 0 ]
