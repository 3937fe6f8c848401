#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# check-nullblk.sh: a null_blk tier of `make check-kernel` (the 7.3 tier).
#
# Boots the kernel of a Debian suite (default trixie-backports: 7.3) under
# qemu (TCG) once.  In the guest (tests/kernel/guest-nullblk.sh), the real
# null_blk gets random configurations with that kernel's own attributes
# (tests/kernel/draw.sh, zn_draw_kernel_configs: zone_full,
# zone_append_max_sectors, fua, bad ranges with badblocks_once and
# badblocks_partial_io), and zntrace records a trace of random ops on
# each.  Back here every trace is replayed against the model, over the
# plugin and over zonednull-server, with the kernel its header names, and
# a configuration null_blk refuses must be refused by both
# (tests/kernel/replay-traces.sh).  Then tests/kernel/check-files.sh boots
# the kernel twice more with a virtio disk: file-backed zonednull-ublk
# across a host crash (qemu SIGKILLed mid-write), and f2fs and btrfs on it
# across a SIGTERM and a SIGKILL of the daemon.
#
# Environment (set by tests/kernel/local.mk):
#   ZONEDNULL_PLUGIN ZONEDNULL_SERVER ZONEDNULL_SRCDIR REPLAY ZNTRACE NBDKIT
#   ZN_KERNEL_CACHE ZN_KERNEL_WORK ZN_KERNEL_SEED ZN_KERNEL_TRACES
#   ZN_KERNEL_OPS ZN_KERNEL_KEEP   as for the 6.1 tier
#   ZN_NULLBLK_TIER   the kernel, as the tier is named (default 7.3)
#   ZN_NULLBLK_SUITE  its Debian suite (default trixie-backports)
#   ZN_NULLBLK_KERNEL_PACKAGE  a kernel package instead of linux-image-amd64's
#   ZN_KERNEL_VM_TIMEOUT  wall-clock bound on the VM (default 600 s)
#   ZN_NULLBLK_FILES  0: leave out check-files.sh (which needs ZONEDNULL_UBLK,
#                     the consumers' tools and mke2fs; ZN_FILES_FS there)
set -u

: "${NBDKIT:=nbdkit}"
srcdir=${ZONEDNULL_SRCDIR:?}
here=$srcdir/tests/kernel
work=${ZN_KERNEL_WORK:?}
cache=${ZN_KERNEL_CACHE:?}
ntraces=${ZN_KERNEL_TRACES:-5}
nops=${ZN_KERNEL_OPS:-400}
tier=${ZN_NULLBLK_TIER:-7.3}
suite=${ZN_NULLBLK_SUITE:-trixie-backports}
PATH=/usr/bin:/bin:/usr/sbin:/sbin:$PATH
export PATH

start_time=$(date +%s)
failures=0
. "$here/lib.sh"

for v in ZONEDNULL_PLUGIN ZONEDNULL_SERVER REPLAY ZNTRACE; do
  eval "f=\${$v:-}"
  [ -n "$f" ] && [ -e "$f" ] || die "$v ('$f') is missing"
done

rm -rf "$work"
mkdir -p "$work" || exit 2
keep=${ZN_KERNEL_KEEP:-$(dirname "$work")/failed-$tier}

# ---- kernel and base initramfs (cached) ----------------------------------
# null_blk and configfs; virtio_net because /init brings up eth0; for the
# file-backed zones of check-files.sh (which uses this list too, so that
# the cached base initramfs serves both): ublk_drv, the virtio disk, ext4
# for the zone files, f2fs and btrfs.
ZN_NULLBLK_MODULES="configfs null_blk failover net_failover virtio_net ublk_drv virtio_blk ext4 f2fs btrfs"
export ZN_NULLBLK_MODULES
ZN_KERNEL_PACKAGE=${ZN_NULLBLK_KERNEL_PACKAGE:-} \
  sh "$here/prepare.sh" "$cache" "$suite" $ZN_NULLBLK_MODULES || exit 2
kver=$(cat "$cache/current-$suite")
kdir=$cache/$kver
[ "$(echo "$kver" | sed -n 's/^\([0-9]*\.[0-9]*\).*/\1/p')" = "$tier" ] ||
  die "$suite's kernel is $kver, not $tier (ZN_NULLBLK_TIER, ZN_NULLBLK_SUITE)"

# ---- seed and configurations ---------------------------------------------
. "$here/draw.sh"
. "$here/replay-traces.sh"
. "$here/boot.sh"
zn_seed || die "ZN_KERNEL_SEED must be a decimal number"
note "seed $seed (reproduce with: make check-kernel ZN_KERNEL_TIERS=$tier ZN_KERNEL_SEED=$seed)"
zn_rng_init "$seed"
conf=$work/traces.conf
: >"$conf"
zn_draw_kernel_configs "$conf" "$ntraces" "$nops" "$tier"
while read -r name tseed n settings; do
  note "config $name: $settings"
done <"$conf"

# ---- the per-run initramfs, appended to the cached base -----------------
stage=$work/stage
mkdir -p "$stage/test" "$stage/usr/bin"
cp "$here/guest-nullblk.sh" "$here/guest-lib.sh" "$stage/test/"
cp "$conf" "$stage/test/traces.conf"
cp "$ZNTRACE" "$stage/usr/bin/zntrace"
cat >"$stage/test/run.sh" <<'RUN'
#!/bin/sh
# Guest: /test/run.sh of a null_blk tier, run by /init.
export PATH=/test:/usr/sbin:/usr/bin:/sbin:/bin
echo "== null_blk"
sh /test/guest-nullblk.sh
RUN
chmod 755 "$stage/test/"*.sh "$stage/usr/bin/zntrace"
(cd "$stage" && find test usr | LC_ALL=C sort | cpio -o -H newc --quiet) >"$work/run.cpio" ||
  die "cpio of the run's files failed"
cat "$kdir/base.cpio" "$work/run.cpio" >"$work/initrd.cpio"

# ---- boot ----------------------------------------------------------------
zn_boot 1G "${ZN_KERNEL_VM_TIMEOUT:-600}"

zn_guest_results
[ "$guest_rc" -eq 0 ] || fail "guest tests failed (status $guest_rc)"

# ---- host: replay the traces ----------------------------------------------
zn_replay_traces "$conf" "$out/traces" "$tier"

# ---- file-backed zones: host crash, the user's story (check-files.sh) -----
# Two more boots with a virtio disk; zonednull-ublk needs ublk_drv (6.6+).
if [ "${ZN_NULLBLK_FILES:-1}" = 0 ]; then
  note "SKIP: file-backed zones (ZN_NULLBLK_FILES=0)"
else
  ZN_KERNEL_WORK=$work-files ZN_KERNEL_SEED=$seed ZN_NULLBLK_SUITE=$suite \
    sh "$here/check-files.sh" || failures=$((failures + 1))
fi

end_time=$(date +%s)
note "seed $seed, $((end_time - start_time)) s in all"
if [ "$failures" -gt 0 ]; then
  note "$failures failure(s); reproduce with: make check-kernel ZN_KERNEL_TIERS=$tier ZN_KERNEL_SEED=$seed"
  note "files of this run: $work"
  exit 1
fi
rm -rf "$work"
note "PASS"
exit 0
