#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# check-ublk.sh: the 6.12 tier of `make check-kernel`.
#
# Boots Debian's 6.12 kernel (bookworm-backports) under qemu (TCG) once.
# In the guest (tests/kernel/guest-ublk.sh), for random configurations
# drawn as the 6.1 tier draws them (tests/kernel/draw.sh): the real
# null_blk and zonednull-ublk with the same settings, the same zntrace
# trace on each, compared line by line, with their queue attributes and
# zone reports; configurations null_blk refuses must be refused by
# zonednull-ublk and the other way round.  Then the zoned consumers (fio,
# f2fs, btrfs, dm) against zonednull-ublk (tests/kernel/prepare-consumers.sh
# packs them, guest-ublk-consumers.sh runs them).  Last,
# tests/kernel/guest-ublk-connect.sh: zonednull-ublk --connect to a
# zonednull-server and an nbdkit zonednull started here on loopback (the
# guest's 10.0.2.2) and to servers of the guest's own, which it kills and
# stops mid-write; two devices on one host export; the differential over
# --connect (a fresh zonednull-server and nbdkit zonednull here per drawn
# configuration, ports in /test/params, traces compared with null_blk's in
# the guest); f2fs and btrfs on two more zonednull-servers here, whose
# zones and data this script then compares with the guest's last report
# and checksums (zonednull report, nbdsh).
#
# Environment (set by tests/kernel/local.mk):
#   ZONEDNULL_SRCDIR ZNTRACE
#   ZONEDNULL_UBLK    the zonednull-ublk binary; when missing (no liburing)
#                     only the null_blk side runs and the rest is skipped
#   ZN_KERNEL_CACHE   downloads and base initramfs (kept between runs)
#   ZN_KERNEL_WORK    this run's files (recreated)
#   ZN_KERNEL_SEED ZN_KERNEL_TRACES ZN_KERNEL_OPS   as for the 6.1 tier
#   ZN_KERNEL_KEEP    where failing configurations' files are kept
#   ZN_UBLK_SUITE     the Debian suite of the kernel (bookworm-backports)
#   ZN_UBLK_KERNEL_PACKAGE  a kernel package instead of linux-image-amd64's
#   ZN_UBLK_DROP      KEY names not passed to zonednull-ublk (default none)
#   ZN_UBLK_STRICT_RUNT  non-empty: a runt configuration null_blk accepts and
#                     zonednull-ublk refuses fails (default: XFAIL, since
#                     ublk_drv cannot expose a smaller last zone)
#   ZN_UBLK_CONSUMERS 0: leave the zoned consumers out
#   ZN_UBLK_CONNECT   0: leave zonednull-ublk --connect out
#   ZONEDNULL_SERVER ZONEDNULL_PLUGIN ZONEDNULL_CLI NBDKIT  for --connect
#   ZN_CONS_* ZN_ZBD_*  passed into the guest, for guest-ublk-consumers.sh
#                     (e.g. ZN_CONS_STEPS="fio dm f2fs btrfs")
#   FIO_SRCDIR        fio's source for the consumers' static fio (make
#                     check-kernel: the one configure --with-fio was given;
#                     see prepare-consumers.sh)
#   ZN_FIO_RECOVERY   1: also a static fio from the source Debian sid
#                     carries (fetch-fio-source.sh, into ZN_KERNEL_CACHE),
#                     3.40 or later, for guest-ublk-faults.sh's check of
#                     fio's recover_zbd_write_error; or FIO_RECOVERY_SRCDIR,
#                     such a source already there
#   ZN_UBLK_MEM       guest memory (default 2G with the consumers, else 1G)
#   ZN_UBLK_KEEP_WORK non-empty: keep ZN_KERNEL_WORK after a passing run
#   ZN_KERNEL_VM_TIMEOUT  wall-clock bound on the VM (default 1200 s, 2400 s
#                     with ZN_ZBD_FULL=1)
# Hooks for a caller that reuses this VM (bench/ublk-vs-nullblk.sh):
#   ZN_UBLK_GUEST_SCRIPT  a guest script of the caller's, run as
#                     /test/guest-extra.sh in place of the consumers' tests
#                     (guest-ublk-consumers.sh does not run), after
#                     guest-ublk.sh has loaded null_blk and ublk_drv; the
#                     consumers' archive (the static fio at /opt/fio/fio,
#                     bash, the mkfs tools) is packed as for them.  Needs
#                     zonednull-ublk and the consumers (not ZN_UBLK_CONSUMERS=0).
#                     /test/params holds UBLK (the binary in the guest).
#   ZN_UBLK_EXTRA_CPIO  cpio archives (paths, separated by spaces) appended
#                     to the guest's initramfs after the tier's own
set -u

srcdir=${ZONEDNULL_SRCDIR:?}
here=$srcdir/tests/kernel
work=${ZN_KERNEL_WORK:?}
cache=${ZN_KERNEL_CACHE:?}
ntraces=${ZN_KERNEL_TRACES:-5}
nops=${ZN_KERNEL_OPS:-400}
suite=${ZN_UBLK_SUITE:-bookworm-backports}
PATH=/usr/bin:/bin:/usr/sbin:/sbin:$PATH
export PATH

start_time=$(date +%s)
failures=0
. "$here/lib.sh"

[ -n "${ZNTRACE:-}" ] && [ -x "$ZNTRACE" ] || die "ZNTRACE ('${ZNTRACE:-}') is missing"
ublk=${ZONEDNULL_UBLK:-}
if [ -z "$ublk" ] || [ ! -e "$ublk" ]; then
  note "SKIP: zonednull-ublk ('$ublk') is not built (no liburing?): null_blk alone, no differential"
  ublk=
fi

guest_script=${ZN_UBLK_GUEST_SCRIPT:-}
[ -z "$guest_script" ] || [ -f "$guest_script" ] ||
  die "ZN_UBLK_GUEST_SCRIPT ('$guest_script') is missing"
extra_cpio=${ZN_UBLK_EXTRA_CPIO:-}
for f in $extra_cpio; do
  [ -f "$f" ] || die "ZN_UBLK_EXTRA_CPIO: '$f' is missing"
done

rm -rf "$work"
mkdir -p "$work" || exit 2
keep=${ZN_KERNEL_KEEP:-$(dirname "$work")/failed-6.12}

# ---- kernel and base initramfs (cached) ----------------------------------
# The modules of lib.sh's zn_modules_612, shared with check-nvme.sh.
# shellcheck disable=SC2086
ZN_KERNEL_PACKAGE=${ZN_UBLK_KERNEL_PACKAGE:-} \
  sh "$here/prepare.sh" "$cache" "$suite" $zn_modules_612 || exit 2
kver=$(cat "$cache/current-$suite")
kdir=$cache/$kver

# ---- seed and configurations ---------------------------------------------
. "$here/draw.sh"
. "$here/replay-traces.sh"
. "$here/boot.sh"
zn_seed || die "ZN_KERNEL_SEED must be a decimal number"
note "seed $seed (reproduce with: make check-kernel ZN_KERNEL_TIERS=6.12 ZN_KERNEL_SEED=$seed)"
zn_rng_init "$seed"
conf=$work/traces.conf
: >"$conf"
zn_draw_configs "$conf" "$ntraces" "$nops"
while read -r name tseed n settings; do
  note "config $name: $settings"
done <"$conf"
# Configurations with 6.12's own attributes (zone_full, fua,
# zone_append_max_sectors) for null_blk alone: traced in the same VM
# (guest-nullblk.sh) and replayed here (replay-traces.sh).
kconf=$work/traces-kernel.conf
: >"$kconf"
zn_draw_kernel_configs "$kconf" "$ntraces" "$nops" 6.12
while read -r name tseed n settings; do
  note "null_blk config $name: $settings"
done <"$kconf"

# ---- zonednull servers on the host, for zonednull-ublk --connect ----------
# A zonednull-server and an nbdkit zonednull on free loopback ports (the
# guest's 10.0.2.2), stopped by PID at exit.  Their device: memory-backed,
# an open limit (ETOOMANYREFS), no active limit and 4 MiB zones (btrfs).
CONNECT_CONFIG="size=128 zone_size=4 zone_max_open=4 memory_backed=1"
server_pids=
stop_servers () {
  for p in $server_pids; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  server_pids=
}
trap stop_servers EXIT
trap 'exit 1' HUP INT TERM
# host_server KIND [NAME CONFIG]: zonednull-server (KIND server) or nbdkit
# zonednull (KIND nbdkit) with CONFIG (default CONNECT_CONFIG), its files
# $work/NAME.pid and .err (NAME defaults to KIND); sets $port, or returns 1
# (a server that exits at once, e.g. refusing CONFIG, is not retried).
host_server () {
  kind=$1 hname=${2:-$1} hconfig=${3:-$CONNECT_CONFIG} attempt=0 pidf=$work/${2:-$1}.pid
  while [ "$attempt" -lt 8 ]; do
    attempt=$((attempt + 1))
    randn 20000
    port=$((30000 + r))
    rm -f "$pidf"
    # shellcheck disable=SC2086
    case $kind in
      server) "$ZONEDNULL_SERVER" -f -i 127.0.0.1 -p "$port" -P "$pidf" \
                --exit-with-parent $hconfig </dev/null 2>"$work/$hname.err" & ;;
      nbdkit) LD_PRELOAD=${ZONEDNULL_PRELOAD:-} ASAN_OPTIONS=detect_leaks=0 \
                "${NBDKIT:-nbdkit}" -f -i 127.0.0.1 -p "$port" -P "$pidf" \
                "$ZONEDNULL_PLUGIN" $hconfig </dev/null 2>"$work/$hname.err" & ;;
      server-tls) "$ZONEDNULL_SERVER" -f -i 127.0.0.1 -p "$port" -P "$pidf" \
                --exit-with-parent --tls=require --tls-psk="$work/tls.psk" \
                $hconfig </dev/null 2>"$work/$hname.err" & ;;
      nbdkit-tls) LD_PRELOAD=${ZONEDNULL_PRELOAD:-} ASAN_OPTIONS=detect_leaks=0 \
                "${NBDKIT:-nbdkit}" -f -i 127.0.0.1 -p "$port" -P "$pidf" \
                --tls=require --tls-psk="$work/tls.psk" \
                "$ZONEDNULL_PLUGIN" $hconfig </dev/null 2>"$work/$hname.err" & ;;
    esac
    pid=$! tries=0
    while [ ! -s "$pidf" ] && kill -0 "$pid" 2>/dev/null && [ $tries -lt 300 ]; do
      sleep 0.1; tries=$((tries + 1))
    done
    if [ -s "$pidf" ]; then server_pids="$server_pids $pid"; return 0; fi
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    # Refused rather than a port in use: no point in trying again.
    grep -qi 'address already in use\|bind' "$work/$hname.err" || break
  done
  return 1
}
connect_uris= diff_ports= fs_port_f2fs= fs_port_btrfs=
CONNECT_F2FS_CONFIG="size=256 zone_size=4 zone_nr_conv=8 zone_max_open=8 blocksize=4096 memory_backed=1"
CONNECT_BTRFS_CONFIG="size=256 zone_size=4 zone_nr_conv=0 zone_max_active=8 zone_max_open=8 blocksize=4096 memory_backed=1"
if [ -n "$ublk" ] && [ "${ZN_UBLK_CONNECT:-1}" != 0 ]; then
  if host_server server; then connect_uris="nbd://10.0.2.2:$port/"
  else fail "zonednull-server ($CONNECT_CONFIG) did not start: $(cat "$work/server.err")"; fi
  if host_server nbdkit; then connect_uris="$connect_uris nbd://10.0.2.2:$port/"
  else fail "nbdkit zonednull ($CONNECT_CONFIG) did not start: $(cat "$work/nbdkit.err")"; fi
  # The same over TLS with a pre-shared key (a --tls-psk file in psktool's
  # USER:HEXKEY format), reached with libnbd's nbds:// URI: nbdkit
  # zonednull and zonednull-server, both with --tls=require.
  printf 'zonednull:%s\n' "$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')" >"$work/tls.psk"
  chmod 600 "$work/tls.psk"
  if host_server nbdkit-tls; then
    connect_uris="$connect_uris nbds://zonednull@10.0.2.2:$port/?tls-psk-file=/test/tls.psk"
  else fail "nbdkit zonednull --tls=require ($CONNECT_CONFIG) did not start: $(cat "$work/nbdkit-tls.err")"; fi
  if host_server server-tls; then
    connect_uris="$connect_uris nbds://zonednull@10.0.2.2:$port/?tls-psk-file=/test/tls.psk"
  else fail "zonednull-server --tls=require ($CONNECT_CONFIG) did not start: $(cat "$work/server-tls.err")"; fi
  note "servers for --connect ($CONNECT_CONFIG):$(echo " $connect_uris" | sed 's|nbds*://[a-z@]*10.0.2.2:| 127.0.0.1:|g; s|?[^ ]*||g')"
  # The differential over --connect: for every drawn configuration but a
  # runt, a fresh zonednull-server and a fresh nbdkit zonednull with exactly
  # its settings; the guest traces each through zonednull-ublk --connect and
  # compares with null_blk's trace (guest-ublk-connect.sh).  A server that
  # does not start is "refused": the guest fails it unless null_blk refuses
  # the configuration too.
  k=0
  while read -r name tseed n settings; do
    k=$((k + 1))
    sz=$(echo " $settings" | sed -n 's/.* size=\([0-9]*\).*/\1/p')
    zsz=$(echo " $settings" | sed -n 's/.* zone_size=\([0-9]*\).*/\1/p')
    if [ $((sz % zsz)) -ne 0 ]; then
      diff_ports="${diff_ports}CONNECT_DIFF_$k=\"$name runt runt\"
"
      continue
    fi
    dp=
    for kind in server nbdkit; do
      if host_server $kind "$kind-$name" "$settings"; then dp="$dp $port"
      else
        dp="$dp refused"
        note "$name: the host's $kind does not start: $(head -n 2 "$work/$kind-$name.err" | tr '\n' ' ')"
      fi
    done
    diff_ports="${diff_ports}CONNECT_DIFF_$k=\"$name$dp\"
"
  done <"$conf"
  # f2fs and btrfs on --connect, checked here afterwards: their geometries
  # are those of the consumers' (guest-ublk-consumers.sh), memory-backed.
  # Only with the consumers, which bring the mkfs tools into the guest.
  if [ "${ZN_UBLK_CONSUMERS:-1}" != 0 ]; then
    for fs in f2fs btrfs; do
      if [ $fs = f2fs ]; then fsconf=$CONNECT_F2FS_CONFIG; else fsconf=$CONNECT_BTRFS_CONFIG; fi
      if host_server server "fs-$fs" "$fsconf"; then
        eval "fs_port_$fs=$port"
        diff_ports="${diff_ports}CONNECT_$(echo $fs | tr a-z A-Z)=$port
"
        note "zonednull-server for $fs over --connect ($fsconf): 127.0.0.1:$port"
      else
        fail "zonednull-server for $fs ($fsconf) did not start: $(cat "$work/fs-$fs.err")"
      fi
    done
  fi
fi

# ---- the per-run initramfs -------------------------------------------------
stage=$work/stage
mkdir -p "$stage/test" "$stage/usr/bin" "$stage/usr/lib"
cp "$here/guest-ublk.sh" "$here/guest-lib.sh" "$here/guest-nullblk.sh" "$stage/test/" ||
  die "cannot copy the guest scripts"
cp "$conf" "$stage/test/traces.conf"
cp "$kconf" "$stage/test/traces-kernel.conf"
cp "$ZNTRACE" "$stage/usr/bin/zntrace"
consumers=
if [ "${ZN_UBLK_CONSUMERS:-1}" = 0 ]; then note "SKIP: the zoned consumers (ZN_UBLK_CONSUMERS=0)"
else consumers=1; fi
# The consumers' settings (ZN_CONS_*, ZN_ZBD_*, see guest-ublk-consumers.sh)
# pass from the host's environment into the guest's.
passenv=$(env | grep -E '^ZN_(CONS|ZBD)_[A-Z0-9_]*=' | grep -v "'" |
            sed "s/^\([^=]*\)=\(.*\)$/export \1='\2'/" || true)
cat >"$stage/test/run.sh" <<EOF
#!/bin/sh
# Guest: /test/run.sh of the 6.12 tier, run by /init.  Both parts always run.
export PATH=/test:/usr/sbin:/usr/bin:/sbin:/bin
$passenv
rc=0
echo "== null_blk with 6.12's attributes"
sh /test/guest-nullblk.sh /test/traces-kernel.conf /out/traces || rc=1
echo "== null_blk and zonednull-ublk"
sh /test/guest-ublk.sh || rc=1
if [ -f /test/guest-ublk-consumers.sh ]; then
  echo "== zoned consumers on zonednull-ublk"
  sh /test/guest-ublk-consumers.sh || rc=1
fi
if [ -f /test/guest-extra.sh ]; then
  echo "== ZN_UBLK_GUEST_SCRIPT ($(basename "$guest_script"))"
  sh /test/guest-extra.sh || rc=1
fi
if [ -f /test/guest-ublk-faults.sh ]; then
  echo "== failures on demand on zonednull-ublk"
  sh /test/guest-ublk-faults.sh || rc=1
fi
if [ -f /test/guest-ublk-unit.sh ]; then
  echo "== zonednull-ublk@.service's ExecStart and ExecStop"
  sh /test/guest-ublk-unit.sh || rc=1
fi
if [ -f /test/guest-ublk-connect.sh ]; then
  echo "== zonednull-ublk --connect"
  ZN_CONNECT_URIS="$connect_uris" ZN_CONNECT_SERVER=/usr/bin/zonednull-server \
    sh /test/guest-ublk-connect.sh || rc=1
fi
exit \$rc
EOF

if [ -n "$ublk" ]; then
  copy_binary "$stage" "$ublk" /usr/bin/zonednull-ublk || die "cannot copy $ublk into the guest"
  guest_ublk=/usr/bin/zonednull-ublk
  cp "$here/guest-ublk-faults.sh" "$stage/test/"
  if [ -n "$connect_uris" ]; then
    # --connect's checks: the CLI to compare reports, and a server of the
    # guest's own that they can kill and stop.
    cp "$here/guest-ublk-connect.sh" "$stage/test/"
    cp "$work/tls.psk" "$stage/test/tls.psk"
    copy_binary "$stage" "$ZONEDNULL_CLI" /usr/bin/zonednull || die "cannot copy $ZONEDNULL_CLI into the guest"
    copy_binary "$stage" "$ZONEDNULL_SERVER" /usr/bin/zonednull-server ||
      die "cannot copy $ZONEDNULL_SERVER into the guest"
  fi
  # The unit as built, its program at the unit's own path, and setpriv
  # for its capability bounding set (guest-ublk-unit.sh).
  unit=${ZONEDNULL_UBLK_UNIT:-$(dirname "$ublk")/../systemd/zonednull-ublk@.service}
  if [ -f "$unit" ]; then
    cp "$here/guest-ublk-unit.sh" "$unit" "$stage/test/"
    copy_binary "$stage" "$ublk" "$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$unit")" &&
      copy_binary "$stage" "$(command -v setpriv)" /usr/bin/setpriv ||
      die "cannot copy zonednull-ublk and setpriv for $unit into the guest"
  else
    note "SKIP: no $unit: zonednull-ublk@.service is not run"
  fi
else
  guest_ublk=
fi
cat >"$stage/test/params" <<EOF
UBLK=$guest_ublk
UBLK_DROP="${ZN_UBLK_DROP:-}"
UBLK_STRICT_RUNT="${ZN_UBLK_STRICT_RUNT:-}"
EOF
# For guest-ublk-connect.sh: CONNECT_DIFF_k="NAME SERVER-PORT NBDKIT-PORT"
# per configuration, CONNECT_F2FS and CONNECT_BTRFS (the host's ports).
[ -n "$connect_uris" ] && printf '%s' "$diff_ports" >>"$stage/test/params"
if [ -n "$consumers" ]; then
  if [ -n "$ublk" ]; then
    if [ -n "$guest_script" ]; then cp "$guest_script" "$stage/test/guest-extra.sh"
    else cp "$here/guest-ublk-consumers.sh" "$stage/test/"; fi
    # The consumers' power-fail check: the script and the CLI it drives.
    copy_binary "$stage" "$ZONEDNULL_CLI" /usr/bin/zonednull &&
      cp "$srcdir/cli/zonednull-pfcheck" "$stage/usr/bin/" && chmod 755 "$stage/usr/bin/zonednull-pfcheck" ||
      die "cannot copy zonednull and zonednull-pfcheck into the guest"
    if [ "${ZN_FIO_RECOVERY:-0}" != 0 ] && [ -z "${FIO_RECOVERY_SRCDIR:-}" ]; then
      if FIO_RECOVERY_SRCDIR=$(sh "$here/fetch-fio-source.sh" "$cache/fio-recovery" | tail -n 1); then
        export FIO_RECOVERY_SRCDIR
      else
        fail "fetch-fio-source.sh failed: no fio with recover_zbd_write_error"
        FIO_RECOVERY_SRCDIR=
      fi
    fi
    note "preparing the zoned consumers (prepare-consumers.sh)"
    if ccpio=$(sh "$here/prepare-consumers.sh" "$cache" "$kver" "$kdir/modroot" | tail -n 1) &&
       [ -f "$ccpio" ]; then
      note "consumers: $ccpio ($(du -h "$ccpio" | cut -f1))"
    else
      fail "prepare-consumers.sh failed: the consumers do not run"
      rm -f "$stage/test/guest-ublk-consumers.sh" "$stage/test/guest-extra.sh"
      consumers= ccpio=
    fi
  else
    note "SKIP: the zoned consumers need zonednull-ublk"
    consumers=
  fi
fi
[ -z "$guest_script" ] || [ -f "$stage/test/guest-extra.sh" ] ||
  fail "ZN_UBLK_GUEST_SCRIPT does not run: it needs zonednull-ublk and the consumers' archive"
chmod 755 "$stage/test/"*.sh "$stage/usr/bin/"*
(cd "$stage" && find . -mindepth 1 | sed 's|^\./||' | LC_ALL=C sort | cpio -o -H newc --quiet) \
  >"$work/run.cpio" || die "cpio of the run's files failed"
if [ -n "$consumers" ]; then
  # shellcheck disable=SC2086
  cat "$kdir/base.cpio" "$ccpio" "$work/run.cpio" $extra_cpio >"$work/initrd.cpio"
  mem=${ZN_UBLK_MEM:-2G}
else
  # shellcheck disable=SC2086
  cat "$kdir/base.cpio" "$work/run.cpio" $extra_cpio >"$work/initrd.cpio"
  mem=${ZN_UBLK_MEM:-1G}
fi

# ---- boot ----------------------------------------------------------------
# A bound for a hung VM, not a test: the VM is up about 5 minutes on a
# quiet 2-core machine and twice that on a loaded one; every t/zbd test
# (ZN_ZBD_FULL=1) keeps it up for about 12 minutes more.
[ "${ZN_ZBD_FULL:-0}" = 1 ] && vm_timeout=2400 || vm_timeout=1200
zn_boot "$mem" "${ZN_KERNEL_VM_TIMEOUT:-$vm_timeout}"

zn_guest_results
zn_count_guest
grep -q '^counts: ' "$out/run.log" || fail "guest-ublk.sh did not finish (no counts line)"
[ ! -f "$stage/test/guest-ublk-unit.sh" ] || grep -q '^unit-counts: ' "$out/run.log" ||
  fail "guest-ublk-unit.sh did not finish (no unit-counts line)"

# Failing configurations: their files (both traces, reports, attributes,
# zonednull-ublk's output) are kept; a null_blk trace is a regression
# trace for tests/traces/k6.12/.
for d in "$out"/ublk/*/; do
  [ -f "$d/FAILED" ] || continue
  n=$(basename "$d")
  mkdir -p "$keep"
  rm -rf "${keep:?}/$n"
  cp -r "$d" "$keep/$n"
  note "kept $keep/$n"
done

# ---- f2fs and btrfs over --connect: the host's view of the guest's zones --
# The guest left, per file system, its last `blkzone report` and the
# checksums of [zone start, write pointer) of every non-empty zone
# (conventional zones whole).  The server's report must equal it zone by
# zone (start, write pointer, condition), and the host must read the same
# data through libnbd.
# zone_triples_json URI / zone_triples_text FILE: "start wp cond" per zone
# (wp "-" for a conventional zone), from the CLI's JSON or a blkzone report.
zone_triples_json () {
  "$ZONEDNULL_CLI" report --json "$1" |
    sed -n 's/.*"start": \([0-9]*\),.*"wp": \([0-9a-z]*\),.*"cond": \([0-9]*\),.*/\1 \2 \3/p' |
    awk '{ print $1, ($3 == 0 ? "-" : $2), $3 }'
}
zone_triples_text () {
  awk '{ s = $0; sub(/.*start: 0x/, "", s); sub(/,.*/, "", s)
         w = $0; sub(/.*wptr 0x/, "", w); sub(/ .*/, "", w)
         c = $0; sub(/.*zcond: */, "", c); sub(/\(.*/, "", c)
         S = 0; W = 0
         for (i = 1; i <= length(s); i++) S = S * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
         for (i = 1; i <= length(w); i++) W = W * 16 + index("0123456789abcdef", substr(w, i, 1)) - 1
         print S, (c == 0 ? "-" : S + W), c }' "$1"
}
fs_host_check () {
  fs=$1 port=$2 label=host-$1
  uri="nbd://127.0.0.1:$port/"
  if [ -f "$out/connect/$label.skipped" ]; then
    note "SKIP: $fs over --connect: $(cat "$out/connect/$label.skipped") in the guest"; return
  fi
  if [ ! -s "$out/connect/$label.report" ] || [ ! -f "$out/connect/$label.ranges" ]; then
    fail "$fs over --connect: the guest left no report or ranges ($out/connect/$label.*)"; return
  fi
  zone_triples_text "$out/connect/$label.report" >"$work/$label.guest"
  zone_triples_json "$uri" >"$work/$label.host" || { fail "$fs: zonednull report $uri failed"; return; }
  if cmp -s "$work/$label.guest" "$work/$label.host" && [ -s "$work/$label.host" ]; then
    note "ok: $fs: the host's zonednull report equals the guest's last blkzone report," \
      "$(wc -l <"$work/$label.host" | tr -d ' ') zones (start, wp, cond)," \
      "$(awk '$3 != 1 && $3 != 0' "$work/$label.host" | wc -l | tr -d ' ') of them written"
  else
    fail "$fs: the host's zonednull report differs from the guest's last blkzone report" \
      "(start wp cond; guest < > host): $(diff "$work/$label.guest" "$work/$label.host" | grep '^[<>]' | head -n 4 | tr '\n' ' ')"
  fi
  # The same checksums, read by the host through libnbd (nbdsh's handle h).
  nbdsh -u "$uri" -c "import hashlib
for line in open('$out/connect/$label.ranges'):
    s, n, want = line.split()
    a, e = int(s) * 512, (int(s) + int(n)) * 512
    d = hashlib.sha256()
    for o in range(a, e, 1 << 20):
        d.update(h.pread(min(1 << 20, e - o), o))
    print(s, n, d.hexdigest())" </dev/null >"$work/$label.ranges.host" 2>"$work/$label.nbdsh.err" ||
    { fail "$fs: nbdsh $uri: $(tail -n 2 "$work/$label.nbdsh.err")"; return; }
  nr=$(wc -l <"$out/connect/$label.ranges" | tr -d ' ')
  mib=$(awk '{ n += $2 } END { printf "%.1f", n / 2048 }' "$out/connect/$label.ranges")
  if [ "$nr" -gt 0 ] && cmp -s "$out/connect/$label.ranges" "$work/$label.ranges.host"; then
    note "ok: $fs: the host reads the guest's data back through libnbd with the same checksums: $nr zones, $mib MiB"
  else
    fail "$fs: the host reads other data than the guest ($nr ranges; guest < > host):"       "$(diff "$out/connect/$label.ranges" "$work/$label.ranges.host" | grep '^[<>]' | head -n 4 | tr '
' ' ')"
  fi
}
[ -n "$fs_port_f2fs" ] && fs_host_check f2fs "$fs_port_f2fs"
[ -n "$fs_port_btrfs" ] && fs_host_check btrfs "$fs_port_btrfs"

# ---- the null_blk traces with 6.12's attributes, replayed here ------------
zn_replay_traces "$kconf" "$out/traces" 6.12

counts=$(sed -n 's/^counts: //p' "$out/run.log" | head -n 1)
eval "$(echo "$counts" | tr ' ' '\n' | grep -E '^[a-z_]+=[0-9]+$' | sed 's/^/c_/')" 2>/dev/null
end_time=$(date +%s)
note "configurations drawn: ${c_configs:-0} of $ntraces; ops traced per device: $nops;" \
  "identical: ${c_identical:-0} of ${c_traced:-0} traced on both; refused by both: ${c_refused_both:-0};" \
  "runts only null_blk takes (XFAIL): ${c_runt:-0}"
if [ -n "$diff_ports" ]; then
  dcounts=$(sed -n 's/^connect-counts: //p' "$out/run.log" | head -n 1)
  if [ -z "$dcounts" ]; then
    fail "guest-ublk-connect.sh did not finish the differential (no connect-counts line)"
  else
    eval "$(echo "$dcounts" | tr ' ' '\n' | grep -E '^[a-z_]+=[0-9]+$' | sed 's/^/d_/')" 2>/dev/null
    note "--connect differential: configurations ${d_configs:-0} (compared ${d_compared:-0}," \
      "refused by null_blk and both servers ${d_refused:-0}, runts or untraced skipped ${d_skipped:-0});" \
      "ops ${d_ops:-0} per server kind; identical to null_blk: zonednull-server ${d_server_identical:-0}" \
      "of ${d_server_traced:-0}, nbdkit zonednull ${d_nbdkit_identical:-0} of ${d_nbdkit_traced:-0}" \
      "(queue attributes differ in ${d_attrs_differ:-0})"
  fi
fi
note "guest checks: $npass PASS, $nfail FAIL"
note "seed $seed, $((end_time - start_time)) s in all"
if [ "$failures" -gt 0 ]; then
  note "$failures failure(s); reproduce with: make check-kernel ZN_KERNEL_TIERS=6.12 ZN_KERNEL_SEED=$seed"
  note "files of this run: $work"
  exit 1
fi
[ -n "${ZN_UBLK_KEEP_WORK:-}" ] || rm -rf "$work"
note "PASS"
exit 0
