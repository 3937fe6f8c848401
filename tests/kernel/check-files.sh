#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# check-files.sh: file-backed zones (backing_dir=) under a real kernel, the
# second part of the 7.3 tier (run by check-nullblk.sh; alone it needs the
# same environment).
#
# zonednull-ublk keeps its zones in files on a virtio disk, a raw image file
# here that outlives the VM.  Two boots of the tier's kernel on the same
# image (tests/kernel/guest-files.sh):
#   1. crash: mkfs.ext4, zonednull-ublk backing_dir=/mnt/disk/crash, fio
#      writes zone after zone with crc32c verify headers and fsyncs; after
#      each zone whose last fsync returned, the guest prints "ZNFLUSHED
#      ZONE WP COND" on its console.  This script reads the console and,
#      once a few zones are flushed, kills qemu with SIGKILL while fio
#      writes the next ones (the host crash: the guest's memory, with what
#      ext4 and zonednull-ublk had not flushed, is gone).
#   2. check: the same image; zonednull-ublk starts from the directory and
#      every zone seen flushed must be FULL and pass fio --verify_only; then
#      f2fs and btrfs on file-backed zonednull-ublk across a SIGTERM and a
#      SIGKILL of the daemon (fsck clean, checksums); then zloop (a module
#      built here, build-zloop.sh) and zonednull-ublk on one directory.
#
# Environment (set by tests/kernel/local.mk, through check-nullblk.sh):
#   ZONEDNULL_SRCDIR ZONEDNULL_UBLK ZN_KERNEL_CACHE ZN_KERNEL_SEED FIO_SRCDIR
#   ZN_KERNEL_WORK    this part's files (recreated; kept when it fails)
#   ZN_NULLBLK_SUITE  the Debian suite of the kernel (trixie-backports)
#   ZN_FILES_FS       the file systems of the user's story (default
#                     "f2fs btrfs"; empty: none)
#   ZN_KERNEL_VM_TIMEOUT  a bound on each boot (default 1800 s: the second
#                     boot runs the power-fail check)
#   ZN_ZLOOP          0: no zloop; else (default) tests/kernel/build-zloop.sh
#                     builds a zloop.ko for the kernel from Debian's
#                     packages (once, cached) and the second boot also opens
#                     zloop's directory with zonednull-ublk and zonednull's
#                     with zloop (guest-zloop.sh)
#   ZN_ZLOOP_KO       that module, built elsewhere
#   ZN_PFCHECK_FS     the file systems zonednull-pfcheck checks in the
#                     second boot (default "btrfs f2fs"; empty: none)
#   ZN_PFCHECK_STATES its random crash states per file system (default 12,
#                     beside one state per mark)
#   ZONEDNULL_CLI     the zonednull CLI (mark, replay), for it
#   ZONEDNULL_ZONE_LOG  examples/zone-log, its example of any workload
set -u

srcdir=${ZONEDNULL_SRCDIR:?}
here=$srcdir/tests/kernel
work=${ZN_KERNEL_WORK:?}
cache=${ZN_KERNEL_CACHE:?}
suite=${ZN_NULLBLK_SUITE:-trixie-backports}
PATH=/usr/bin:/bin:/usr/sbin:/sbin:$PATH
export PATH

start_time=$(date +%s)
failures=0
. "$here/lib.sh"

ublk=${ZONEDNULL_UBLK:-}
if [ -z "$ublk" ] || [ ! -e "$ublk" ]; then
  note "SKIP: zonednull-ublk ('$ublk') is not built (no liburing?): no file-backed zones in the VM"
  exit 0
fi
rm -rf "$work"
mkdir -p "$work" || exit 2

# ---- kernel, base initramfs, consumers (cached) ---------------------------
# The module list is check-nullblk.sh's (one base initramfs per kernel).
: "${ZN_NULLBLK_MODULES:=configfs null_blk failover net_failover virtio_net ublk_drv virtio_blk ext4 f2fs btrfs}"
ZN_KERNEL_PACKAGE=${ZN_NULLBLK_KERNEL_PACKAGE:-} \
  sh "$here/prepare.sh" "$cache" "$suite" $ZN_NULLBLK_MODULES || exit 2
kver=$(cat "$cache/current-$suite")
kdir=$cache/$kver
ccpio=$(sh "$here/prepare-consumers.sh" "$cache" "$kver" "$kdir/modroot" | tail -n 1) &&
  [ -f "$ccpio" ] || die "prepare-consumers.sh failed"

. "$here/draw.sh"
zn_seed || die "ZN_KERNEL_SEED must be a decimal number"
zn_rng_init "$seed"

# ---- the two initramfs: PHASE=crash and PHASE=check ----------------------
stage=$work/stage
mkdir -p "$stage/test" "$stage/usr/bin"
cp "$here/guest-files.sh" "$here/guest-lib.sh" "$here/guest-pfcheck.sh" "$here/pfcheck-xfail" \
  "$stage/test/" || die "cannot copy the guest scripts"
copy_binary "$stage" "$ublk" /usr/bin/zonednull-ublk || die "cannot copy $ublk into the guest"
# The power-fail check: the script and the CLI it drives (mark, replay).
pf_fs=${ZN_PFCHECK_FS-btrfs f2fs}
if [ -n "$pf_fs" ]; then
  cli=${ZONEDNULL_CLI:?}
  copy_binary "$stage" "$cli" /usr/bin/zonednull || die "cannot copy $cli into the guest"
  cp "$srcdir/cli/zonednull-pfcheck" "$stage/usr/bin/" && chmod 755 "$stage/usr/bin/zonednull-pfcheck" ||
    die "cannot copy zonednull-pfcheck into the guest"
  # Any workload with its checker: the example examples/zone-log.
  if [ -n "${ZONEDNULL_ZONE_LOG:-}" ] && [ -e "$ZONEDNULL_ZONE_LOG" ]; then
    copy_binary "$stage" "$ZONEDNULL_ZONE_LOG" /usr/bin/zone-log || die "cannot copy $ZONEDNULL_ZONE_LOG into the guest"
  else
    note "SKIP: zonednull-pfcheck on zone-log (ZONEDNULL_ZONE_LOG '${ZONEDNULL_ZONE_LOG:-}' is not built)"
  fi
fi
mke2fs=$(which_bin mke2fs) || die "mke2fs is missing (Debian: e2fsprogs)"
copy_binary "$stage" "$mke2fs" /usr/sbin/mkfs.ext4 || die "cannot copy $mke2fs into the guest"
# A zloop.ko for this kernel (built once by tests/kernel/build-zloop.sh
# from Debian's packages, cached): zloop and zonednull-ublk on one
# directory, both ways (guest-zloop.sh).
zloop_ko=${ZN_ZLOOP_KO:-}
if [ -z "$zloop_ko" ] && [ "${ZN_ZLOOP:-1}" != 0 ]; then
  zloop_ko=$(sh "$here/build-zloop.sh" "$cache" "$suite" "$kver" | tail -n 1) && [ -f "$zloop_ko" ] ||
    { fail "no zloop.ko for $kver (tests/kernel/build-zloop.sh; ZN_ZLOOP=0 leaves zloop out)"; zloop_ko=; }
fi
if [ -n "$zloop_ko" ]; then
  [ -f "$zloop_ko" ] || die "ZN_ZLOOP_KO: '$zloop_ko' is missing"
  cp "$zloop_ko" "$stage/test/zloop.ko" && cp "$here/guest-zloop.sh" "$stage/test/" ||
    die "cannot copy $zloop_ko into the guest"
else
  note "SKIP: zloop (ZN_ZLOOP=0 or no zloop.ko)"
fi
cat >"$stage/test/run.sh" <<'EOF'
#!/bin/sh
export PATH=/test:/usr/sbin:/usr/bin:/sbin:/bin
sh /test/guest-files.sh
EOF
chmod 755 "$stage/test/"*.sh
# initrd PHASE [PARAMS-LINES]: $work/initrd-PHASE.cpio
initrd () {
  { echo "PHASE=$1"; echo "KTIER=${ZN_NULLBLK_TIER:-7.3}"; echo "FILES_FS=\"${ZN_FILES_FS-f2fs btrfs}\""
    echo "PFCHECK_FS=\"$pf_fs\" PFCHECK_STATES=${ZN_PFCHECK_STATES:-12} PFCHECK_SEED=$seed"
    echo "${2:-}"; } >"$stage/test/params"
  (cd "$stage" && find . -mindepth 1 | sed 's|^\./||' | LC_ALL=C sort | cpio -o -H newc --quiet) \
    >"$work/run-$1.cpio" || die "cpio of the run's files failed"
  cat "$kdir/base.cpio" "$ccpio" "$work/run-$1.cpio" >"$work/initrd-$1.cpio"
}

# The disk: sparse, formatted by the guest.
disk=$work/disk.img
rm -f "$disk"
truncate -s 1G "$disk" || die "cannot make $disk"
qemu_args () {
  echo "-machine pc -accel tcg,thread=multi -cpu max -smp 2 -m 1G
    -nodefaults -display none -no-reboot -monitor none -kernel $kdir/vmlinux
    -serial file:$work/console-$1.log -serial file:$work/ttyS1-$1.log
    -netdev user,id=n0 -device virtio-net-pci,netdev=n0,romfile=
    -drive file=$disk,format=raw,if=virtio,cache=writeback -initrd $work/initrd-$1.cpio"
}
append="console=ttyS0 quiet loglevel=4 panic=-1 mitigations=off no_timer_check random.trust_cpu=on 8250.nr_uarts=2"
bound=${ZN_KERNEL_VM_TIMEOUT:-1800}

# ---- boot 1: write, flush, crash ------------------------------------------
# Kill once this many zones are flushed (3 to 6), after 0 to 0.9 s more.
randn 4; kill_after=$((3 + r))
randn 10; kill_delay=$r
initrd crash
note "boot 1 of $kver: zonednull-ublk backing_dir on a virtio disk, fio writes;" \
  "qemu gets SIGKILL after $kill_after zones are flushed and 0.$kill_delay s"
# crash_boot: qemu in the background, killed by its PID once enough zones
# are flushed; sets killed.
qpid=
trap '[ -z "$qpid" ] || kill -KILL "$qpid" 2>/dev/null' EXIT
trap 'exit 1' HUP INT TERM
crash_boot () {
  t0=$(date +%s)
  # shellcheck disable=SC2046
  qemu-system-x86_64 $(qemu_args crash) -append "$append" </dev/null >"$work/qemu-crash.log" 2>&1 &
  qpid=$!
  console=$work/console-crash.log
  killed= nflushed=0
  while kill -0 "$qpid" 2>/dev/null; do
    nflushed=$(grep -c '^ZNFLUSHED ' "$console" 2>/dev/null || true)
    if [ "${nflushed:-0}" -ge "$kill_after" ] || grep -q '^ZNCRASH-END\|^ZNVM_RC=' "$console" 2>/dev/null; then
      sleep "0.$kill_delay"
      kill -KILL "$qpid" 2>/dev/null && killed=1
      break
    fi
    if [ $(( $(date +%s) - t0 )) -ge "$bound" ]; then
      kill -KILL "$qpid" 2>/dev/null
      break
    fi
    sleep 0.2
  done
  wait "$qpid" 2>/dev/null
  qpid=
}
# 7.3 under TCG panics in its early initcalls about once in 40 boots:
# before /init (ZNVM_INIT) nothing touched the disk, so boot again.
panicked () {
  ! grep -q '^ZNVM_INIT' "$1" && grep -q 'Kernel panic' "$1"
}
crash_boot
if panicked "$work/console-crash.log"; then
  note "the kernel panicked before /init: $(grep -m 1 'RIP:' "$work/console-crash.log"); booting again"
  cp "$work/console-crash.log" "$work/console-crash-first-boot.log"
  crash_boot
fi
note "boot 1 ran $(( $(date +%s) - t0 )) s"
tr -d '\r' <"$console" >"$work/console-crash.txt"
sed -n 's/^ZNCRASH: //p' "$work/console-crash.txt" | sed 's/^/guest: /'
ncrash_fail=$(grep -c '^ZNCRASH: FAIL' "$work/console-crash.txt")
failures=$((failures + ncrash_fail))
flushed=$(sed -n 's/^ZNFLUSHED \([0-9]*\) .*/\1/p' "$work/console-crash.txt" | tr '\n' ' ')
grep '^ZNFLUSHED\|^ZNCRASH-START' "$work/console-crash.txt" | sed 's/^/guest: /'
if grep -q '^ZNCRASH-END' "$work/console-crash.txt"; then
  fail "boot 1: fio wrote every zone before qemu was killed: no crash mid-write"
elif [ -z "$killed" ]; then
  echo "--- console"; tail -n 30 "$work/console-crash.txt"; cat "$work/qemu-crash.log"
  fail "boot 1: qemu ended before it was killed ($(echo "$flushed" | wc -w) zones flushed)"
fi
[ -n "$flushed" ] || fail "boot 1: no zone was flushed before the kill"

# ---- boot 2: the same disk -------------------------------------------------
initrd check "FLUSHED=\"$flushed\""
note "boot 2 of $kver on the same disk: the flushed zones ($flushed), then f2fs and btrfs"
check_boot () {
  t0=$(date +%s)
  # shellcheck disable=SC2046
  timeout "$bound" qemu-system-x86_64 $(qemu_args check) -append "$append" \
    </dev/null >"$work/qemu-check.log" 2>&1
  qrc=$?
}
check_boot
if panicked "$work/console-check.log"; then
  note "the kernel panicked before /init: $(grep -m 1 'RIP:' "$work/console-check.log"); booting again"
  cp "$work/console-check.log" "$work/console-check-first-boot.log"
  check_boot
fi
note "boot 2 ran $(( $(date +%s) - t0 )) s (qemu exit $qrc)"
guest_rc=$(tr -d '\r' <"$work/console-check.log" | sed -n 's/^ZNVM_RC=\([0-9]*\).*/\1/p' | tail -n 1)
out=$work/out
mkdir -p "$out"
if [ -z "$guest_rc" ]; then
  echo "--- console"; tail -n 40 "$work/console-check.log"; cat "$work/qemu-check.log"
  fail "boot 2: the VM died before reporting (qemu exit $qrc)"
else
  sed -n '/^=====ZNOUT-BEGIN=====/,/^=====ZNOUT-END=====/p' "$work/ttyS1-check.log" |
    sed '1d;$d' | tr -d '\r' | base64 -d | tar xzf - -C "$out" ||
    fail "cannot unpack the guest's results from $work/ttyS1-check.log"
  [ -f "$out/guest-error" ] && fail "guest: $(cat "$out/guest-error")"
  if [ -f "$out/run.log" ]; then
    sed 's/^/guest: /' "$out/run.log"
    nfail=$(grep -c '^FAIL' "$out/run.log")
    failures=$((failures + nfail))
    [ "$guest_rc" -eq 0 ] || [ "$nfail" -gt 0 ] ||
      fail "guest tests failed (status $guest_rc) without a FAIL line"
    counts=$(sed -n 's/^files-counts: //p' "$out/run.log" | head -n 1)
    [ -n "$counts" ] || fail "guest-files.sh did not finish (no files-counts line)"
    note "host crash: zones flushed before the kill $(echo "$flushed" | wc -w)," \
      "after the restart: $counts"
    grep '^pfcheck-counts: ' "$out/run.log" | while read -r _ c; do note "power-fail check: $c"; done
  else
    fail "the guest left no run.log"
  fi
fi

note "$(( $(date +%s) - start_time )) s in all"
if [ "$failures" -gt 0 ]; then
  note "$failures failure(s); files of this run: $work"
  exit 1
fi
rm -rf "$work"
note "PASS"
exit 0
