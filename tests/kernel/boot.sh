# SPDX-License-Identifier: BSD-3-Clause
# boot.sh: the tiers' qemu boot (sourced by check-kernel.sh, check-ublk.sh and
# check-nullblk.sh, once lib.sh (note), $kdir, $kver and $work are set).
# shellcheck shell=sh disable=SC2154

# zn_boot_once MEM TIMEOUT: one boot of $kdir/vmlinux with the run's
# initramfs under TCG (KVM hangs on these machines); sets qrc.
zn_boot_once () {
  note "booting $kver under qemu (TCG, 2 vCPUs, $1)"
  boot_start=$(date +%s)
  timeout "$2" qemu-system-x86_64 \
    -machine pc -accel tcg,thread=multi -cpu max -smp 2 -m "$1" \
    -nodefaults -display none -no-reboot -monitor none \
    -kernel "$kdir/vmlinux" -initrd "$work/initrd.cpio" \
    -append "console=ttyS0 quiet loglevel=4 panic=-1 mitigations=off no_timer_check random.trust_cpu=on 8250.nr_uarts=2" \
    -serial "file:$work/console.log" -serial "file:$work/ttyS1.log" \
    -netdev user,id=n0 -device virtio-net-pci,netdev=n0,romfile= \
    </dev/null >"$work/qemu.log" 2>&1
  qrc=$?
  boot_end=$(date +%s)
  note "VM ran $((boot_end - boot_start)) s (qemu exit $qrc)"
}

# zn_boot MEM TIMEOUT: a boot, and a second one only when the kernel
# panicked before /init printed ZNVM_INIT (7.3 under TCG has, in its early
# initcalls, about once in 40 boots); a failure of the tests is never
# retried.
zn_boot () {
  zn_boot_once "$1" "$2"
  if ! grep -q '^ZNVM_INIT' "$work/console.log" &&
     grep -q 'Kernel panic' "$work/console.log"; then
    note "the kernel panicked before /init: $(grep -m 1 'RIP:' "$work/console.log"); booting again"
    cp "$work/console.log" "$work/console-first-boot.log"
    zn_boot_once "$1" "$2"
  fi
}

# zn_guest_results: after zn_boot, the guest's status in guest_rc and its
# results unpacked into out ($work/out), its run.log shown; a VM that
# died before reporting ends the tier here.
zn_guest_results () {
  guest_rc=$(sed -n 's/^ZNVM_RC=\([0-9]*\).*/\1/p' "$work/console.log" | tail -n 1)
  out=$work/out
  mkdir -p "$out"
  if [ -z "$guest_rc" ]; then
    echo "--- console"; tail -n 40 "$work/console.log"; cat "$work/qemu.log"
    fail "the VM died before reporting (qemu exit $qrc, log $work/console.log)"
    note "files of this run: $work"
    exit 1
  fi
  sed -n '/^=====ZNOUT-BEGIN=====/,/^=====ZNOUT-END=====/p' "$work/ttyS1.log" |
    sed '1d;$d' | tr -d '\r' | base64 -d | tar xzf - -C "$out" ||
    { fail "cannot unpack the guest's results from $work/ttyS1.log"; exit 1; }
  [ -f "$out/guest-error" ] && fail "guest: $(cat "$out/guest-error")"
  sed 's/^/guest: /' "$out/run.log"
}

# zn_count_guest: the guest scripts' "ok   - " lines pass and "FAIL - "
# lines fail (guest-lib.sh): npass, and nfail added to failures.
zn_count_guest () {
  npass=$(grep -c '^ok ' "$out/run.log")
  nfail=$(grep -c '^FAIL' "$out/run.log")
  failures=$((failures + nfail))
  [ "$guest_rc" -eq 0 ] || [ "$nfail" -gt 0 ] ||
    fail "guest tests failed (status $guest_rc) without a FAIL line"
}
