#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# check-nvme.sh: the NVMe/TCP part of the 6.12 tier of `make check-kernel`,
# run after check-ublk.sh: a second boot of the same Debian 6.12 kernel
# (bookworm-backports) under qemu (TCG).  In the guest
# (tests/kernel/guest-nvme.sh), on 127.0.0.1 and attached with Debian
# bookworm's nvme-cli: zonednull-server --nvme, and the kernel's nvmet-tcp
# exporting a real null_blk of the same configuration; a third null_blk is
# traced directly as the reference.  The zntrace differential on drawn
# configurations that ZNS can express (tests/kernel/draw.sh's
# zn_draw_zns_configs), with the host's default multipath and again with
# nvme_core.multipath=N; the identify data, zone reports and queue
# attributes of ours against nvmet's; fio (io_uring, libaio, io_uring_cmd on
# /dev/ngXnY); btrfs; the server killed and restarted under a writer; and
# --nvme-allow-host; DH-HMAC-CHAP (--nvme-host) against nvmet with the same
# keys.
#
# Environment (set by tests/kernel/local.mk):
#   ZONEDNULL_SRCDIR ZNTRACE ZONEDNULL_SERVER
#   ZN_KERNEL_CACHE ZN_KERNEL_WORK ZN_KERNEL_KEEP ZN_KERNEL_SEED
#   ZN_NVME=0         leave this boot out
#   ZN_NVME_TRACES    configurations drawn (default 3); each is traced with
#                     both multipath settings
#   ZN_KERNEL_OPS     ops per trace (default 400)
#   ZN_NVME_STEPS     the guest's steps (default: all, see guest-nvme.sh)
#   ZN_NVME_TARGET=nvmet  fio and btrfs on nvmet's namespace (a baseline)
#   ZN_ZBD_FULL=1     a longer run: 3 times the configurations and ops
#   ZN_NVME_KEEP_WORK non-empty: keep ZN_KERNEL_WORK after a passing run
#   ZN_NVME_GUEST_SCRIPT  a guest script run in place of guest-nvme.sh (the
#                     benchmark, bench/nvme-vs-nvmet.sh); /test/params has
#                     SERVER, and the consumers' fio is at /opt/fio/fio
#   ZN_NVME_GUEST_TOOLS  host programs copied into the guest with their
#                     libraries (e.g. strace for bench/qd1-breakdown.sh)
#   ZN_NVME_MEM       guest memory (default 2G)
#   ZN_KERNEL_VM_TIMEOUT  wall-clock bound on the VM (default 900 s)
#   ZN_UBLK_SUITE ZN_UBLK_KERNEL_PACKAGE FIO_SRCDIR  as for check-ublk.sh
set -u

srcdir=${ZONEDNULL_SRCDIR:?}
here=$srcdir/tests/kernel
work=${ZN_KERNEL_WORK:?}
cache=${ZN_KERNEL_CACHE:?}
ntraces=${ZN_NVME_TRACES:-3}
nops=${ZN_KERNEL_OPS:-400}
if [ "${ZN_ZBD_FULL:-0}" = 1 ]; then ntraces=$((ntraces * 3)) nops=$((nops * 3)); fi
suite=${ZN_UBLK_SUITE:-bookworm-backports}
PATH=/usr/bin:/bin:/usr/sbin:/sbin:$PATH
export PATH

start_time=$(date +%s)
failures=0
. "$here/lib.sh"
if [ "${ZN_NVME:-1}" = 0 ]; then note "SKIP: the NVMe/TCP boot (ZN_NVME=0)"; exit 0; fi

[ -n "${ZNTRACE:-}" ] && [ -x "$ZNTRACE" ] || die "ZNTRACE ('${ZNTRACE:-}') is missing"
guest_script=${ZN_NVME_GUEST_SCRIPT:-}
[ -z "$guest_script" ] || [ -f "$guest_script" ] || die "ZN_NVME_GUEST_SCRIPT ('$guest_script') is missing"
server=${ZONEDNULL_SERVER:-}
if [ -n "$server" ] && [ -e "$server" ] && "$server" --help 2>&1 | grep -q -- '--nvme'; then
  :
else
  note "SKIP: zonednull-server ('$server') has no --nvme: nvmet and null_blk alone"
  server=
fi

rm -rf "$work"
mkdir -p "$work" || exit 2

# ---- kernel, base initramfs, nvme-cli, the consumers' tools (cached) -------
# shellcheck disable=SC2086
ZN_KERNEL_PACKAGE=${ZN_UBLK_KERNEL_PACKAGE:-} \
  sh "$here/prepare.sh" "$cache" "$suite" $zn_modules_612 || exit 2
kver=$(cat "$cache/current-$suite")
kdir=$cache/$kver
ncpio=$(sh "$here/prepare-nvme.sh" "$cache" | tail -n 1) && [ -f "$ncpio" ] ||
  die "prepare-nvme.sh failed: no nvme-cli for the guest"
ccpio=$(sh "$here/prepare-consumers.sh" "$cache" "$kver" "$kdir/modroot" | tail -n 1) && [ -f "$ccpio" ] ||
  die "prepare-consumers.sh failed: no fio and mkfs.btrfs for the guest"

# ---- seed and configurations ---------------------------------------------
. "$here/draw.sh"
. "$here/boot.sh"
zn_seed || die "ZN_KERNEL_SEED must be a decimal number"
note "seed $seed (reproduce with: make check-kernel ZN_KERNEL_TIERS=6.12 ZN_KERNEL_SEED=$seed)"
zn_rng_init "$seed"
conf=$work/nvme.conf
: >"$conf"
zn_draw_zns_configs "$conf" "$ntraces" "$nops"
while read -r name tseed n settings; do
  note "config $name: $settings"
done <"$conf"

# ---- the per-run initramfs -------------------------------------------------
stage=$work/stage
mkdir -p "$stage/test" "$stage/usr/bin"
cp "$here/guest-lib.sh" "$stage/test/" || die "cannot copy the guest scripts"
if [ -n "$guest_script" ]; then cp "$guest_script" "$stage/test/guest-nvme.sh"
else cp "$here/guest-nvme.sh" "$stage/test/"; fi
cp "$conf" "$stage/test/nvme.conf"
cp "$ZNTRACE" "$stage/usr/bin/zntrace"
guest_server=
if [ -n "$server" ]; then
  copy_binary "$stage" "$server" /usr/bin/zonednull-server || die "cannot copy $server into the guest"
  guest_server=/usr/bin/zonednull-server
fi
for tool in ${ZN_NVME_GUEST_TOOLS:-}; do
  path=$(command -v "$tool") && copy_binary "$stage" "$path" "/usr/bin/$tool" ||
    die "ZN_NVME_GUEST_TOOLS: cannot copy $tool into the guest"
done
passenv=$(env | grep -E '^ZN_(NVME|BENCH)_[A-Z0-9_]*=' | grep -v "'" |
            sed "s/^\([^=]*\)=\(.*\)$/export \1='\2'/" || true)
cat >"$stage/test/params" <<EOF
SERVER=$guest_server
EOF
cat >"$stage/test/run.sh" <<EOF
#!/bin/sh
# Guest: /test/run.sh of the 6.12 tier's NVMe/TCP boot, run by /init.
export PATH=/test:/usr/sbin:/usr/bin:/sbin:/bin
$passenv
echo "== NVMe/TCP: zonednull-server --nvme, nvmet-tcp, null_blk"
sh /test/guest-nvme.sh
EOF
chmod 755 "$stage/test/"*.sh "$stage/usr/bin/"*
(cd "$stage" && find . -mindepth 1 | sed 's|^\./||' | LC_ALL=C sort | cpio -o -H newc --quiet) \
  >"$work/run.cpio" || die "cpio of the run's files failed"
cat "$kdir/base.cpio" "$ccpio" "$ncpio" "$work/run.cpio" >"$work/initrd.cpio"

# ---- boot ----------------------------------------------------------------
# A bound for a hung VM, not a test.
[ "${ZN_ZBD_FULL:-0}" = 1 ] && vm_timeout=2400 || vm_timeout=900
zn_boot "${ZN_NVME_MEM:-2G}" "${ZN_KERNEL_VM_TIMEOUT:-$vm_timeout}"

zn_guest_results
zn_count_guest

case " ${ZN_NVME_STEPS:-diff} " in *" diff "*) diffed=1 ;; *) diffed= ;; esac
if [ -z "$guest_script" ] && [ -n "$diffed" ]; then
  # The counts of each multipath pass, summed up for the log.
  grep -q '^nvme-counts: ' "$out/run.log" || fail "guest-nvme.sh did not finish the differential (no nvme-counts line)"
  sed -n 's/^nvme-counts: //p' "$out/run.log" | while read -r line; do
    eval "$(echo "$line" | tr ' ' '\n' | grep -E '^[a-z_]+=[a-z0-9]+$' | sed 's/^/c_/')"
    note "differential ($c_pass): configurations $c_configs, ops $c_ops per device;" \
      "ours identical to null_blk ${c_ours_identical} of ${c_ours_traced}" \
      "($((c_ours_lines - c_ours_lines_differ)) of $c_ours_lines trace lines identical);" \
      "nvmet identical ${c_nvmet_identical} of ${c_nvmet_traced}" \
      "($((c_nvmet_lines - c_nvmet_lines_differ)) of $c_nvmet_lines trace lines identical)"
  done
  if [ "$failures" -gt 0 ]; then
    for d in "$out"/nvme/diff-*/*/; do
      [ -d "$d" ] || continue
      mkdir -p "$ZN_KERNEL_KEEP/nvme"
      cp -r "$d" "$ZN_KERNEL_KEEP/nvme/$(basename "$(dirname "$d")")-$(basename "$d")"
    done
  fi
fi
end_time=$(date +%s)
note "guest checks: $npass PASS, $nfail FAIL"
note "seed $seed, $((end_time - start_time)) s in all"
if [ "$failures" -gt 0 ]; then
  note "$failures failure(s); reproduce with: make check-kernel ZN_KERNEL_TIERS=6.12 ZN_KERNEL_SEED=$seed"
  note "files of this run: $work"
  exit 1
fi
[ -n "${ZN_NVME_KEEP_WORK:-}" ] || rm -rf "$work"
note "PASS"
exit 0
