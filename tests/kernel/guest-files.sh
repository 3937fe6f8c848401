#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Guest (busybox sh, root, Linux 7.3): zonednull-ublk with backing_dir= on a
# virtio disk (/dev/vda, a raw image file of the host's that outlives the
# VM), run twice by tests/kernel/check-files.sh.  /test/params sets PHASE:
#
#   crash   the first boot: mkfs.ext4 on /dev/vda, zonednull-ublk with its
#           zones in /mnt/disk/crash, then fio writes one zone after the
#           other (crc32c verify headers, an fsync every 4 writes and at the
#           end); once fio has returned, i.e. its last fsync (a FLUSH, which
#           zonednull-ublk turns into a syncfs of the zone files' ext4, or
#           an fdatasync where one zone was written) is done,
#           "ZNFLUSHED ZONE WP" goes to the console.  The host reads the
#           console and kills qemu (SIGKILL) while the next zones are being
#           written: what ext4 and zonednull-ublk had not flushed is lost with
#           the guest's memory.  This boot never ends by itself.
#   check   the second boot, on the same image: zonednull-ublk starts from
#           /mnt/disk/crash; every zone the host saw flushed (FLUSHED, from
#           the console of the first boot) must be FULL and read back with
#           fio --verify_only.  Then the user's story on f2fs and btrfs, each
#           on a zonednull-ublk with its own directory on the disk: mkfs,
#           files, sync, umount, SIGTERM (the device goes, status 0); start
#           again on the directory, fsck clean, mount, checksums match; more
#           files, sync, SIGKILL of the daemon while mounted, umount, start
#           again, fsck clean, mount, all checksums match.  Then zloop
#           (guest-zloop.sh) and zonednull-pfcheck on each file system in
#           PFCHECK_FS (guest-pfcheck.sh).
#
# In the crash phase the results go to the console as "ZNCRASH: ok   - ..."
# and "ZNCRASH: FAIL - ..." lines (nothing else of that boot comes back);
# in the check phase as guest-lib.sh's lines on stdout, and at the end
#   files-counts: flushed=N found=N ...
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
. /test/params
. /test/guest-lib.sh
out=/out/files
mkdir -p "$out"
fails=0 passes=0
ZNU=/usr/bin/zonednull-ublk
FIO=/opt/fio/fio
DISK=/dev/vda
MNTD=/mnt/disk
MNT=/mnt/fs

# The geometries (MiB).  CRASH: 1 MiB zones, one fio job per zone (fio
# resets the zones of a write job with verify before it writes, so a job
# must cover whole zones), no active limit: after the crash the zone being
# written comes back CLOSED, as do the zones beyond it that the guest's
# writeback reached.  F2FS and BTRFS as in guest-ublk-consumers.sh.
G_CRASH="size=64 zone_size=1 blocksize=4096 kernel=$KTIER"
G_F2FS="size=256 zone_size=4 zone_nr_conv=8 zone_max_open=8 blocksize=4096 kernel=$KTIER"
G_BTRFS="size=256 zone_size=4 zone_nr_conv=0 zone_max_active=8 zone_max_open=8 blocksize=4096 kernel=$KTIER"

if [ "$PHASE" = crash ]; then
  # Nothing of this boot but the console reaches the host.
  ok () { echo "ZNCRASH: ok   - guest-files: $*" >/dev/console; }
  fail () { echo "ZNCRASH: FAIL - guest-files: $*" >/dev/console; }
fi

# ublk_term NAME: SIGTERM; zonednull-ublk must end with status 0 within 60 s
# and take its device with it.
ublk_term () {
  kill -TERM "$UPID" 2>/dev/null
  reap "$UPID" 600; rc=$?
  if [ $rc = 124 ]; then
    fail "$1: zonednull-ublk still runs 60 s after SIGTERM"
    kill -KILL "$UPID" 2>/dev/null; reap "$UPID" 100
  elif [ $rc = 0 ]; then
    ok "$1: SIGTERM: zonednull-ublk ended with status 0"
  else
    fail "$1: SIGTERM: zonednull-ublk ended with status $rc: $(tail -n 3 "$out/$1.stderr" | tr '\n' ' ')"
  fi
  if waitfor 100 test ! -e "$DEV"; then ok "$1: SIGTERM: $DEV went away"
  else fail "$1: SIGTERM: $DEV remains after zonednull-ublk ended"; fi
  UPID=
}
# zone_line DEV ZONE ZONE_SECTORS: "wp cond" of the zone (wp relative to
# its start, sectors).
zone_line () {
  /usr/sbin/blkzone report -o $(($2 * $3)) -c 1 "$1" |
    sed -n 's/.*wptr \(0x[0-9a-f]*\) .*zcond: *\([0-9]*\).*/\1 \2/p' |
    while read -r w c; do echo "$((w)) $c"; done
}
# fio_zone MODE DEV ZONE [SIZE]: fio's job for one 1 MiB zone; MODE write
# (write with crc32c headers, fsync every 4 writes and at the end) or
# verify (--verify_only: the same job's offsets and seeds, read and
# checked; with SIZE only its first SIZE bytes).
fio_zone () {
  fz_dev=$2 fz_zone=$3 fz_size=${4:-1048576}
  if [ "$1" = write ]; then set -- --zonemode=zbd --do_verify=0 --fsync=4 --end_fsync=1
  else set -- --verify_only --verify_fatal=1; fi
  timeout 120 "$FIO" --name="zone$fz_zone" --filename="$fz_dev" --direct=1 --ioengine=libaio \
    --iodepth=4 --rw=write --bs=64k --offset=$((fz_zone << 20)) --size="$fz_size" \
    --verify=crc32c --verify_state_save=0 --randrepeat=1 "$@" 2>&1
}

modprobe virtio_blk 2>/dev/null
modprobe ext4 2>/dev/null
modprobe ublk_drv 2>/dev/null
waitfor 100 test -b "$DISK" || { fail "no $DISK (modprobe virtio_blk)"; exit 1; }
[ -e /dev/ublk-control ] || { fail "no /dev/ublk-control (modprobe ublk_drv)"; exit 1; }
mkdir -p "$MNTD" "$MNT"

# ---- crash: the first boot ----------------------------------------------
if [ "$PHASE" = crash ]; then
  if mkfs.ext4 -q -F "$DISK" >"$out/mkfs.log" 2>&1 && mount -t ext4 "$DISK" "$MNTD"; then
    ok "crash: ext4 on $DISK, mounted"
  else
    fail "crash: mkfs.ext4 or mount of $DISK: $(tail -n 2 "$out/mkfs.log" | tr '\n' ' ')"
    exit 1
  fi
  # shellcheck disable=SC2086
  ublk_up crash backing_dir="$MNTD/crash" $G_CRASH || exit 1
  b=${DEV#/dev/}
  wc=$(cat "/sys/block/$b/queue/write_cache")
  if [ "$wc" = "write back" ]; then ok "crash: $DEV advertises a volatile write cache (write_cache: $wc)"
  else fail "crash: $DEV has write_cache '$wc', not 'write back': the kernel sends no FLUSH"; fi
  zs=$(cat "/sys/block/$b/queue/chunk_sectors")
  nz=$(cat "/sys/block/$b/queue/nr_zones")
  echo "ZNCRASH-START dev=$DEV zones=$nz zone_sectors=$zs" >/dev/console
  z=0
  while [ $z -lt "$nz" ]; do
    if fio_zone write "$DEV" $z >"$out/fio-$z.log"; then
      set -- $(zone_line "$DEV" $z "$zs")
      echo "ZNFLUSHED $z $1 $2" >/dev/console
    else
      fail "crash: fio write of zone $z: $(grep -m 2 -iE 'error|fio:' "$out/fio-$z.log" | tr '\n' ' ')"
      break
    fi
    z=$((z + 1))
  done
  # Every zone written and the host has not killed the VM yet: it will.
  echo "ZNCRASH-END zones=$z" >/dev/console
  sleep 100000
  exit 1
fi

# ---- check: the second boot ---------------------------------------------
if ! mount -t ext4 "$DISK" "$MNTD" 2>"$out/mount.log"; then
  fail "check: mount of $DISK after the crash: $(cat "$out/mount.log")"
  exit 1
fi
ls -l "$MNTD/crash" >"$out/crash-dir.txt" 2>&1
cat "$MNTD/crash/zonednull.meta" >"$out/crash-meta.txt" 2>&1
flushed=0 found=0 lost=0
# shellcheck disable=SC2086
if ublk_up check backing_dir="$MNTD/crash" $G_CRASH; then
  ok "check: zonednull-ublk starts from $MNTD/crash after the crash: $DEV"
  zs=$(cat "/sys/block/${DEV#/dev/}/queue/chunk_sectors")
  for z in $FLUSHED; do
    flushed=$((flushed + 1))
    set -- $(zone_line "$DEV" $z "$zs")
    if [ "${1:-}" != "$zs" ] || [ "${2:-}" != 14 ]; then
      lost=$((lost + 1))
      fail "check: flushed zone $z: wp ${1:-?} cond ${2:-?}, not full ($zs, 14)"
      continue
    fi
    if fio_zone verify "$DEV" $z >"$out/verify-$z.log" &&
       ! grep -qiE 'verify: bad|crc32c: verify failed|err= *[1-9]' "$out/verify-$z.log"; then
      found=$((found + 1))
    else
      lost=$((lost + 1))
      fail "check: flushed zone $z reads back wrong: $(grep -m 2 -iE 'verify|error|fio:' "$out/verify-$z.log" | tr '\n' ' ')"
    fi
  done
  [ "$flushed" -gt 0 ] || fail "check: no zone was flushed before the crash (FLUSHED is empty)"
  [ "$flushed" -gt 0 ] && [ "$found" = "$flushed" ] &&
    ok "check: every flushed zone is FULL and fio --verify_only passes: $found of $flushed zones ($((found * 16)) writes of 64 KiB)"
  # Beyond the last flush the writeback may have saved some of what fio
  # wrote (nothing requires it), but what a zone holds below its write
  # pointer (its file's size) must be fio's data: the whole 64 KiB writes
  # below it pass --verify_only.
  /usr/sbin/blkzone report "$DEV" >"$out/crash-zones.txt" 2>&1
  nz=$(cat "/sys/block/${DEV#/dev/}/queue/nr_zones")
  z=0 saved=0 saved_zones=
  while [ $z -lt "$nz" ]; do
    case " $FLUSHED " in *" $z "*) z=$((z + 1)); continue ;; esac
    set -- $(zone_line "$DEV" $z "$zs")
    w=${1:-0}
    [ "${2:-}" = 14 ] && w=$zs
    if [ "${2:-1}" != 1 ]; then
      n=$((w * 512 / 65536))
      saved_zones="$saved_zones $z:${w}s"
      if [ $n -gt 0 ] && ! { fio_zone verify "$DEV" $z $((n * 65536)) >"$out/verify-$z.log" &&
           ! grep -qiE 'verify: bad|crc32c: verify failed|err= *[1-9]' "$out/verify-$z.log"; }; then
        fail "check: zone $z (not flushed, wp $w cond $2): its $n whole writes below the wp read back wrong: $(grep -m 2 -iE 'verify|error|fio:' "$out/verify-$z.log" | tr '\n' ' ')"
      else
        saved=$((saved + n))
      fi
    fi
    z=$((z + 1))
  done
  echo "   beyond the flushed zones the writeback kept:${saved_zones:- nothing} (zone:wp);" \
    "$saved whole writes of 64 KiB there pass --verify_only"
  ublk_term check
fi

# ---- the user's story: f2fs and btrfs on file-backed zonednull-ublk ------
# fs_files SUB SUMS: files of various sizes in $MNT/SUB, an overwrite, an
# append and a removal; their checksums (paths relative to $MNT) into SUMS.
fs_files () {
  fdir=$MNT/$1 fsums=$2
  mkdir -p "$fdir/a/b" "$fdir/c" || return 1
  i=0
  for kb in 4 12 64 100 1024 3000; do
    dd if=/dev/urandom of="$fdir/a/f$i" bs=1024 count=$kb 2>/dev/null || return 1
    i=$((i + 1))
  done
  for i in 1 2 3 4 5; do echo "small file $i" >"$fdir/a/b/s$i" || return 1; done
  dd if=/dev/urandom of="$fdir/c/big" bs=1048576 count=8 2>/dev/null || return 1
  dd if=/dev/urandom of="$fdir/a/f3" bs=4096 count=2 seek=3 conv=notrunc 2>/dev/null || return 1
  cat "$fdir/a/f0" >>"$fdir/a/f4" || return 1
  rm -f "$fdir/a/f1"
  (cd "$MNT" && find "$1" -type f | sort | xargs sha256sum) >"$fsums"
}
fs_check () {
  clabel=$1 cfs=$2
  if [ "$cfs" = f2fs ]; then
    timeout 300 fsck.f2fs -f "$DEV" >"$out/$clabel.log" 2>&1; rc=$?
  else
    timeout 300 btrfs check "$DEV" >"$out/$clabel.log" 2>&1; rc=$?
  fi
  if [ $rc = 0 ]; then ok "$clabel: $( [ "$cfs" = f2fs ] && echo fsck.f2fs -f || echo btrfs check ) finds no errors"
  else fail "$clabel: fsck exited $rc: $(grep -iE 'error|fail|corrupt|wrong|invalid' "$out/$clabel.log" | head -n 3 | tr '\n' ' ')"; fi
}
fs_mount_verify () {
  clabel=$1 cfs=$2; shift 2
  if ! timeout 120 mount -t "$cfs" "$DEV" "$MNT" 2>"$out/$clabel-mount.log"; then
    fail "$clabel: mount: $(cat "$out/$clabel-mount.log") $(dmesg | tail -n 3 | tr '\n' ' ')"
    return 1
  fi
  for s in "$@"; do
    if (cd "$MNT" && sha256sum -c "$s") >"$s.check-$clabel" 2>&1; then
      ok "$clabel: every checksum of $(basename "$s") matches ($(wc -l <"$s") files)"
    else
      fail "$clabel: checksums of $(basename "$s") differ: $(grep -v ': OK' "$s.check-$clabel" | head -n 3 | tr '\n' ' ')"
    fi
  done
}
fs_story () {
  fs=$1 geom=$2 dir=$MNTD/$1
  t0=$(now)
  # shellcheck disable=SC2086
  ublk_up "$fs-1" backing_dir="$dir" $geom || return
  if [ "$fs" = f2fs ]; then
    modprobe f2fs 2>/dev/null
    mkfs=$(timeout 300 mkfs.f2fs -f -m "$DEV" 2>&1); rc=$?
  else
    modprobe btrfs 2>/dev/null
    mkfs=$(timeout 300 mkfs.btrfs -f -O zoned -m single -d single "$DEV" 2>&1); rc=$?
  fi
  echo "$mkfs" >"$out/$fs-mkfs.log"
  if [ $rc != 0 ]; then
    fail "$fs: mkfs on $DEV exited $rc: $(echo "$mkfs" | grep -iE 'error|not|fail' | head -n 3 | tr '\n' ' ')"
    ublk_term "$fs-1"; return
  fi
  if ! timeout 120 mount -t "$fs" "$DEV" "$MNT" 2>"$out/$fs-mount.log"; then
    fail "$fs: mount: $(cat "$out/$fs-mount.log")"; ublk_term "$fs-1"; return
  fi
  if fs_files one "$out/$fs-one.sums" && timeout 120 sync; then
    ok "$fs: mkfs, $(wc -l <"$out/$fs-one.sums") files written and synced on $DEV (backing_dir=$dir)"
  else
    fail "$fs: writing files failed: $(dmesg | tail -n 3 | tr '\n' ' ')"
  fi
  timeout 120 umount "$MNT" || fail "$fs: umount"
  ublk_term "$fs-1"

  # Again on the same directory, after an orderly stop.
  # shellcheck disable=SC2086
  ublk_up "$fs-2" backing_dir="$dir" $geom || return
  ok "$fs: zonednull-ublk starts again from $dir: $DEV"
  fs_check "$fs-after-sigterm" "$fs"
  if fs_mount_verify "$fs-after-sigterm" "$fs" "$out/$fs-one.sums"; then
    if fs_files two "$out/$fs-two.sums" && timeout 120 sync; then
      ok "$fs: $(wc -l <"$out/$fs-two.sums") more files written and synced"
    else
      fail "$fs: writing more files failed: $(dmesg | tail -n 3 | tr '\n' ' ')"
    fi
  fi
  # The daemon dies with the file system mounted: the kernel's ublk device
  # loses its server, I/O to it fails, the umount gives up its unwritten
  # state.  What was synced is in the zone files.
  kpid=$UPID kdev=$DEV
  kill -KILL "$kpid"
  reap "$kpid" 300
  UPID=
  if waitfor 200 test ! -e "$kdev"; then gone="went away"; else gone="stays"; fi
  timeout 120 umount "$MNT" 2>"$out/$fs-umount-dead.log"; urc=$?
  [ $urc = 0 ] || timeout 60 umount -l "$MNT" 2>>"$out/$fs-umount-dead.log"
  echo "   $fs: after SIGKILL of the daemon: $kdev $gone; umount status $urc;" \
    "ublk char devices: $(ls /sys/class/ublk-char/ 2>/dev/null | tr '\n' ' ')"
  # shellcheck disable=SC2086
  ublk_up "$fs-3" backing_dir="$dir" $geom || return
  ok "$fs: after SIGKILL, zonednull-ublk starts again from $dir: $DEV (the killed one's $kdev $gone)"
  fs_check "$fs-after-sigkill" "$fs"
  fs_mount_verify "$fs-after-sigkill" "$fs" "$out/$fs-one.sums" "$out/$fs-two.sums" &&
    { timeout 120 umount "$MNT" || fail "$fs: last umount"; }
  ublk_term "$fs-3"
  echo "   $fs: $(( $(now) - t0 )) s"
}
dmesg >"$out/dmesg.before"
for fs in $FILES_FS; do
  echo "== files: $fs on file-backed zonednull-ublk"
  if [ "$fs" = f2fs ]; then fs_story f2fs "$G_F2FS"; else fs_story btrfs "$G_BTRFS"; fi
done
if [ -f /test/zloop.ko ]; then
  echo "== files: zloop and zonednull-ublk on one directory"
  . /test/guest-zloop.sh
fi
# The power-fail check (after zloop, which it uses when loaded).
if [ -n "${PFCHECK_FS:-}" ] && [ -x /usr/bin/zonednull-pfcheck ]; then
  . /test/guest-pfcheck.sh
fi
# A SIGKILLed daemon's device stays in the kernel (its /dev/ublkcN, not
# its /dev/ublkbN) until a DEL_DEV; unloading ublk_drv deletes them all.
left=$(ls /sys/class/ublk-char/ 2>/dev/null | tr '\n' ' ')
rmmod ublk_drv 2>/dev/null && rm_rc=0 || rm_rc=$?
echo "   ublk devices left by the killed daemons: ${left:-none}; rmmod ublk_drv: status $rm_rc," \
  "left then: $(ls /sys/class/ublk-char/ 2>/dev/null | tr '\n' ' ')"
umount "$MNTD" || fail "umount $MNTD"
dmesg >"$out/dmesg.txt"
if grep -E 'hung task|blocked for more than|WARNING:|BUG:|Oops' "$out/dmesg.txt" >"$out/dmesg.bad"; then
  fail "the kernel complained: $(head -n 2 "$out/dmesg.bad" | tr '\n' ' ')"
fi
echo "files-counts: flushed=$flushed found=$found lost=$lost unflushed_kept=${saved:-0}"
echo "guest-files: $passes ok, $fails failure(s)"
[ "$fails" -eq 0 ]
