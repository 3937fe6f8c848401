#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Guest (busybox sh, root, Linux 6.12): zoned namespaces over NVMe/TCP on
# 127.0.0.1, attached with the stock nvme-cli.  Two targets side by side:
#   ours   zonednull-server --nvme (port 4420), the NQN it prints at start
#   nvmet  the kernel's nvmet-tcp (port 4421) exporting a configfs null_blk
#          (nullb0) of the same configuration, attr_allow_any_host=1
# and a third null_blk (nullb1) traced directly as the reference.
# Steps (ZN_NVME_STEPS, default all in this order):
#   diff       for each configuration of /test/nvme.conf (no conventional
#              zones, no smaller last zone: what ZNS can express), the same
#              zntrace seed on nullb1, on nvmet's namespace and on ours.
#              Ours must equal null_blk's line by line, errnos included,
#              with its zone reports and zone limits; nvmet's differing
#              lines are counted, not failed.  Then the whole again with
#              nvme_core reloaded as multipath=N (step mpoff, when listed).
#   cmp        one geometry, zones 0 to 3 in four states (zones_in_use):
#              blkzone report, sysfs queue attributes,
#              nvme zns id-ns, id-ctrl and report-zones of ours against
#              nvmet's; only the fields listed in LEGIT may differ
#   fio        fio --zonemode=zbd --verify on ours with io_uring and
#              libaio, and fio's io_uring_cmd engine on /dev/ngXnY
#   btrfs      mkfs.btrfs -O zoned, files, umount, btrfs check, mount,
#              checksums
#   restart    the server SIGKILLed while a writer runs and restarted on
#              the same backing_dir: what the writer sees, and that the
#              host reconnects and the namespace works again
#   reset      nvme reset of the controller (CC.EN to 0, a reconnect): the
#              namespace comes back with its data, reports zones and
#              takes a write
#   faults     statuses injected by fault rules (fault=) as the host
#              hands them to an application, a write failed after it
#              landed, and a status without DNR retried
#   allowhost  --nvme-allow-host=A refuses host B and accepts A
#   auth       DH-HMAC-CHAP with keys from nvme gen-dhchap-key: ours with
#              --nvme-host and nvmet with the same keys (configfs
#              dhchap_key, dhchap_ctrl_key), attached with nvme connect
#              --dhchap-secret, then --dhchap-ctrl-secret too; the first
#              configuration's zntrace seed on each, ours equal to
#              null_blk's; a wrong secret and a wrong controller secret
#              refused by both
# Counts lines for the host (check-nvme.sh):
#   nvme-counts: pass=P configs=N traced=N ops=N ours_traced=N
#     ours_identical=N ours_lines_differ=N ours_lines=N nvmet_traced=N
#     nvmet_identical=N nvmet_lines_differ=N nvmet_lines=N lines=N
# Environment/params: SERVER (zonednull-server in the guest, empty when it
# has no --nvme: the nvmet and null_blk parts alone), ZN_NVME_TARGET=nvmet
# (or nullb) runs fio and btrfs on nvmet's namespace (or on null_blk
# itself) instead: baselines of the script.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
. /test/params
. /test/guest-lib.sh
out=/out/nvme
mkdir -p "$out"
fails=0 passes=0
STEPS=${ZN_NVME_STEPS:-diff cmp mpoff fio btrfs restart reset faults allowhost auth}
TARGET=${ZN_NVME_TARGET:-ours}
FIO=/opt/fio/fio
BLKZONE=/usr/sbin/blkzone
CFS_NB=/sys/kernel/config/nullb
CFS_T=/sys/kernel/config/nvmet
NQN_NVMET=nqn.2014-08.org.zonednull.test:nvmet
PORT_OURS=4420 PORT_NVMET=4421
KVER=$(uname -r | cut -d. -f1-2)
MNT=/mnt/nvme

# The geometries (MiB, as null_blk's configfs and zonednull take them).
G_CMP="size=64 zone_size=4 zone_capacity=3 zone_nr_conv=0 zone_max_open=4 zone_max_active=6 blocksize=4096 memory_backed=1"
G_FIO="size=64 zone_size=4 zone_capacity=3 zone_nr_conv=0 zone_max_open=6 zone_max_active=8 blocksize=4096 memory_backed=1"
# btrfs: power-of-two zones >= 4 MiB, zone append, max active >= 8, and
# enough zones (guest-ublk-consumers.sh's G_BTRFS).
G_BTRFS="size=256 zone_size=4 zone_nr_conv=0 zone_max_active=8 zone_max_open=8 blocksize=4096 memory_backed=1"
G_RESTART="size=64 zone_size=4 zone_nr_conv=0 zone_max_open=4 blocksize=4096"

# The fields of cmp that may differ between ours and nvmet's, "KEY REASON"
# (KEY: sysfs:ATTR, idns:FIELD, idctrl:FIELD, report:zone, report:nr_zones,
# blkzone; prefixed mpY: or mpN: when only with that multipath setting).
LEGIT=$(cat <<'EOF'
sysfs:max_hw_sectors_kb  MDTS: nvmet-tcp reports 0 (no limit); ours 128 KiB, the power of two pages nearest null_blk's 127 or 124 KiB (255 sectors), which no MDTS can express
sysfs:max_sectors_kb  follows max_hw_sectors_kb (the host takes the smaller of it and its own 1280 KiB cap)
sysfs:write_cache  nvmet announces a volatile write cache (VWC) whatever it exports; ours reports null_blk's (write through without cache_size)
sysfs:fua  follows write_cache (the host sets FUA only with a volatile write cache)
sysfs:discard_granularity  nvmet announces Dataset Management for every namespace; null_blk's zoned device has no discard, nor has ours
sysfs:discard_max_bytes  as discard_granularity
sysfs:discard_max_hw_bytes  as discard_granularity
sysfs:write_zeroes_max_bytes  nvmet announces Write Zeroes for every namespace; null_blk has none (0), ours follows it
mpY:sysfs:max_open_zones  nvmet's subsystem claims several controllers (CMIC), so the default host puts its namespace behind a multipath head, which on 6.12 keeps 0 for the zone limits; ours claims one and shows null_blk's
mpY:sysfs:max_active_zones  as max_open_zones
mpY:sysfs:zone_append_max_bytes  the same head of nvmet's namespace shows the 4 MiB default instead of its path's 64 KiB; ours (no head) shows its ZASL
EOF
)

# ---- helpers -----------------------------------------------------------------
attrs="zoned chunk_sectors nr_zones max_open_zones max_active_zones logical_block_size
  physical_block_size max_sectors_kb max_hw_sectors_kb zone_append_max_bytes write_cache fua
  discard_granularity discard_max_bytes discard_max_hw_bytes write_zeroes_max_bytes"
# The attributes the application's zone limits come from: ours must equal
# null_blk's in these.
zone_attrs="zoned chunk_sectors nr_zones max_open_zones max_active_zones logical_block_size"
probe () {   # probe DEV PREFIX: sysfs attributes and the fresh zone report
  b=${1#/dev/}
  for a in $attrs; do echo "$a $(cat "/sys/block/$b/queue/$a" 2>/dev/null || echo MISSING)"; done >"$2.sysfs"
  $BLKZONE report "$1" 2>&1 | sed "s|$b||g" | full_wp_end >"$2.fresh"
}
# The trace without the header's dev= and max_sectors_kb=: an NVMe host
# derives max_sectors_kb from the MDTS, a power of two pages, and its own
# cap, so no NVMe target can show null_blk's 124 (255 sectors rounded to
# the block size); the transfers zntrace makes are at most 124 KiB.  The
# attribute itself is compared in cmp.
#
# And a FULL zone's write pointer is its end, start + length, on every
# device: Linux's NVMe driver reports any FULL zone so (nvme_zone_parse_entry),
# whatever the target says, while null_blk leaves a zone that writes filled
# at start + capacity.  zntrace --full-wp-end takes null_blk's FULL zones
# so too, in the ops it draws from the write pointers and in the states it
# prints, and the blkzone reports get the same (full_wp_end): what an NVMe
# host of null_blk's zones would see.  No NVMe target can show otherwise.
run_trace () {   # run_trace DEV PREFIX SEED NOPS
  zntrace trace --full-wp-end "$1" "$3" "$4" >"$2.raw" 2>"$2.trace-err"
  trc=$?
  sed '1s| dev=[^ ]*||; 2s| max_sectors_kb=[0-9]*||' "$2.raw" >"$2.trace"
  $BLKZONE report "$1" 2>&1 | sed "s|${1#/dev/}||g" | full_wp_end >"$2.after"
  return $trc
}
# full_wp_end: blkzone report lines with a FULL zone's wptr (relative to
# the zone start) set to its length.
full_wp_end () {
  sed '/zcond:14(fu)/ s/len \(0x[0-9a-f]*\), cap \(0x[0-9a-f]*\), wptr 0x[0-9a-f]*/len \1, cap \2, wptr \1/'
}
# lines_differ A B: how many lines differ (position by position, the
# longer file's extra lines count).
lines_differ () {
  awk -v fa="$1" -v fb="$2" 'BEGIN { d = 0
    while (1) { ra = (getline la < fa) > 0; rb = (getline lb < fb) > 0
      if (!ra && !rb) break
      if (!ra || !rb || la != lb) d++ }
    print d }'
}

# nullb_up NAME SETTINGS...: a zoned configfs null_blk /dev/NAME; returns 1
# (NB_ERR holds why) when it does not power on.
nullb_up () {
  nb=$1; shift
  NB_ERR=
  mkdir "$CFS_NB/$nb" || { NB_ERR="mkdir $CFS_NB/$nb"; return 1; }
  echo 1 >"$CFS_NB/$nb/zoned"
  for kv in "$@"; do
    echo "${kv#*=}" >"$CFS_NB/$nb/${kv%%=*}" 2>/dev/null || { NB_ERR="refuses $kv"; nullb_down "$nb"; return 1; }
  done
  if ! msg=$(echo 1 2>&1 >"$CFS_NB/$nb/power"); then NB_ERR="power: ${msg:-refused}"; nullb_down "$nb"; return 1; fi
  waitfor 100 test -b "/dev/$nb" || { NB_ERR="no /dev/$nb"; nullb_down "$nb"; return 1; }
}
nullb_down () {
  [ -d "$CFS_NB/$1" ] || return 0
  echo 0 >"$CFS_NB/$1/power" 2>/dev/null
  rmdir "$CFS_NB/$1"
}

# nvmet_up NULLB: subsystem NQN_NVMET with namespace 1 on /dev/NULLB,
# linked to the TCP port on 127.0.0.1:PORT_NVMET.  Returns 1 when nvmet
# refuses the namespace (NB_ERR: its dmesg line).
nvmet_up () {
  s=$CFS_T/subsystems/$NQN_NVMET p=$CFS_T/ports/1
  NB_ERR=
  dmesg -c >/dev/null
  mkdir "$s" && echo 1 >"$s/attr_allow_any_host" && mkdir "$s/namespaces/1" &&
    echo "/dev/$1" >"$s/namespaces/1/device_path" || { NB_ERR="configfs subsystem"; nvmet_down; return 1; }
  if ! echo 1 >"$s/namespaces/1/enable" 2>/dev/null; then
    NB_ERR="namespace enable: $(dmesg | grep nvmet | tail -n 2 | tr '\n' ' ')"
    nvmet_down; return 1
  fi
  if [ ! -d "$p" ]; then
    mkdir "$p" && echo tcp >"$p/addr_trtype" && echo 127.0.0.1 >"$p/addr_traddr" &&
      echo "$PORT_NVMET" >"$p/addr_trsvcid" && echo ipv4 >"$p/addr_adrfam" ||
      { NB_ERR="configfs port"; nvmet_down; return 1; }
  fi
  ln -s "$s" "$p/subsystems/$NQN_NVMET" || { NB_ERR="port link"; nvmet_down; return 1; }
}
nvmet_down () {
  s=$CFS_T/subsystems/$NQN_NVMET p=$CFS_T/ports/1
  rm -f "$p/subsystems/$NQN_NVMET" 2>/dev/null
  if [ -d "$s" ]; then
    [ -d "$s/namespaces/1" ] && { echo 0 >"$s/namespaces/1/enable" 2>/dev/null; rmdir "$s/namespaces/1"; }
    rmdir "$s"
  fi
}
nvmet_port_down () { [ -d "$CFS_T/ports/1" ] && rmdir "$CFS_T/ports/1"; }

# ns_of NQN: the namespace block device the host made for NQN (the head
# with multipath, the controller's own without), e.g. nvme1n1.
# (busybox sh has no local variables: these names are their own, since
# waitfor's counter is called n.)
ns_of () {
  for ns_path in /sys/block/nvme*n*; do
    ns_name=${ns_path##*/}
    case $ns_name in *c*|*'*'*) continue ;; esac
    [ "$(cat "$ns_path/device/subsysnqn" 2>/dev/null)" = "$1" ] && { echo "$ns_name"; return 0; }
  done
  return 1
}
ctrl_of () {
  for ctrl_path in /sys/class/nvme/nvme*; do
    [ "$(cat "$ctrl_path/subsysnqn" 2>/dev/null)" = "$1" ] && { echo "${ctrl_path##*/}"; return 0; }
  done
  return 1
}
has_ns () { ns_of "$1" >/dev/null; }
no_ns () { ! ns_of "$1" >/dev/null; }
# attach LABEL PORT NQN [nvme connect options]: sets NDEV (/dev/nvmeXnY),
# NGDEV (/dev/ngXnY), NCTRL (nvmeX); 1 after a FAIL line when no
# namespace appears within 60 s.
attach () {
  al=$1 ap=$2 an=$3; shift 3
  NDEV= NGDEV= NCTRL=
  af=$out/$(echo "$al" | tr / -).connect
  if ! nvme connect -t tcp -a 127.0.0.1 -s "$ap" -n "$an" "$@" >"$af" 2>&1; then
    fail "$al: nvme connect -s $ap -n $an $*: $(tr '\n' ' ' <"$af") $(dmesg | tail -n 3 | tr '\n' ' ')"
    return 1
  fi
  if ! waitfor 600 has_ns "$an"; then
    fail "$al: nvme connect succeeded, no namespace of $an within 60 s: $(dmesg | grep -i nvme | tail -n 4 | tr '\n' ' ')"
    detach "$an"
    return 1
  fi
  an_ns=$(ns_of "$an")
  NDEV=/dev/$an_ns NGDEV=/dev/ng${an_ns#nvme} NCTRL=$(ctrl_of "$an")
  waitfor 100 test -b "$NDEV" || { fail "$al: $NDEV is no block device"; detach "$an"; return 1; }
}
detach () {
  nvme disconnect -n "$1" >/dev/null 2>&1
  waitfor 300 no_ns "$1" || fail "nvme disconnect -n $1: its namespace is still there after 30 s"
}

# ours_up LABEL KEY=VALUE... [-- OPTIONS]: zonednull-server --nvme on
# 127.0.0.1:PORT_OURS with the settings, kernel=KVER and a fault= for each
# line of $FAULTS; sets SPID and
# OUR_NQN (from its output).  Returns 1 (SPID empty) when it exits first
# or prints no NQN within 60 s; the caller decides whether that fails.
ours_up () {
  ol=$1; shift
  keys= opts=
  while [ $# -gt 0 ]; do
    if [ "$1" = -- ]; then shift; opts="$*"; break; fi
    keys="$keys $1"; shift
  done
  SPID= OUR_NQN=
  # FAULTS: fault rules, one a line (their words have spaces).
  set --
  if [ -n "${FAULTS:-}" ]; then
    ifs=$IFS IFS='
'
    # shellcheck disable=SC2086
    set -- $FAULTS
    IFS=$ifs
  fi
  # shellcheck disable=SC2086
  "$SERVER" -f -i 127.0.0.1 -p 10809 --nvme="$PORT_OURS" $opts kernel="$KVER" $keys "$@" \
    >"$out/$ol.server.out" 2>"$out/$ol.server.err" </dev/null &
  SPID=$!
  tenths=600
  while :; do
    OUR_NQN=$(cat "$out/$ol.server.out" "$out/$ol.server.err" 2>/dev/null | grep -o 'nqn\.[0-9a-zA-Z.:_-]*' | head -n 1)
    [ -n "$OUR_NQN" ] && grep -q ":$(printf %04X "$PORT_OURS") 00000000:0000 0A" /proc/net/tcp && return 0
    if dead "$SPID"; then wait "$SPID"; SRC=$?; SPID=; return 1; fi
    [ $tenths -le 0 ] && { SRC=timeout; kill -KILL "$SPID"; reap "$SPID" 50; SPID=; return 1; }
    sleep 0.1; tenths=$((tenths - 1))
  done
}
ours_down () {
  [ -n "$SPID" ] || return 0
  kill -TERM "$SPID" 2>/dev/null
  reap "$SPID" 200; rc=$?
  if [ $rc = 124 ]; then
    fail "${ol:-server}: zonednull-server still runs 20 s after SIGTERM"
    kill -KILL "$SPID" 2>/dev/null; reap "$SPID" 50
  fi
  SPID=
}

# ---- setup ---------------------------------------------------------------
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
modprobe null_blk nr_devices=0 || { fail "modprobe null_blk nr_devices=0"; exit 1; }
for m in nvme_tcp nvmet_tcp; do modprobe "$m" || { fail "modprobe $m"; exit 1; }; done
[ -d "$CFS_T" ] || { fail "no $CFS_T after modprobe nvmet_tcp"; exit 1; }
# A host NQN with a random UUID and the same host ID (qemu has no DMI
# UUID: nvme-cli would make the zero one and the second connect fail).
uuid=$(cat /proc/sys/kernel/random/uuid)
mkdir -p /etc/nvme
HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:$uuid
echo "$HOSTNQN" >/etc/nvme/hostnqn
echo "$uuid" >/etc/nvme/hostid
nvme version | head -n 1
echo "multipath (nvme_core): $(cat /sys/module/nvme_core/parameters/multipath)"
if [ -z "$SERVER" ]; then
  skip "no zonednull-server with --nvme in the guest: nvmet and null_blk alone"
fi
dmesg >"$out/dmesg.start"

# ---- diff ----------------------------------------------------------------
diff_pass () {
  pass=$1 pdir=$out/diff-$1
  mkdir -p "$pdir"
  configs=0 traced=0 ops=0 ours_identical=0 nvmet_identical=0 nvmet_lines_differ=0 lines=0
  ours_lines_differ=0 ours_lines=0 nvmet_lines=0
  ours_traced=0 nvmet_traced=0
  while read -r name seed nops settings; do
    [ -n "$name" ] || continue
    configs=$((configs + 1))
    d=$pdir/$name
    mkdir -p "$d"
    echo "$settings" >"$d/settings"
    # shellcheck disable=SC2086
    set -- $settings
    # null_blk directly (nullb1)
    if ! nullb_up nullb1 "$@"; then
      fail "$pass/$name: null_blk refuses ($NB_ERR): the drawn configuration should be ZNS-expressible"
      continue
    fi
    probe /dev/nullb1 "$d/nullb"
    run_trace /dev/nullb1 "$d/nullb" "$seed" "$nops" ||
      fail "$pass/$name: zntrace on null_blk exited $trc: $(cat "$d/nullb.trace-err")"
    nullb_down nullb1
    traced=$((traced + 1)) ops=$((ops + nops))
    lines=$((lines + $(wc -l <"$d/nullb.trace")))
    # nvmet over nullb0
    if nullb_up nullb0 "$@" && nvmet_up nullb0; then
      if attach "$pass/$name/nvmet" "$PORT_NVMET" "$NQN_NVMET"; then
        probe "$NDEV" "$d/nvmet"
        run_trace "$NDEV" "$d/nvmet" "$seed" "$nops" ||
          fail "$pass/$name: zntrace on nvmet's $NDEV exited $trc: $(cat "$d/nvmet.trace-err")"
        detach "$NQN_NVMET"
        nvmet_traced=$((nvmet_traced + 1))
        nvmet_lines=$((nvmet_lines + $(wc -l <"$d/nullb.trace")))
        nd=$(lines_differ "$d/nullb.trace" "$d/nvmet.trace")
        nvmet_lines_differ=$((nvmet_lines_differ + nd))
        if [ "$nd" = 0 ]; then nvmet_identical=$((nvmet_identical + 1)); fi
        echo "$pass/$name: nvmet: $nd of $(wc -l <"$d/nullb.trace") trace lines differ from null_blk's;" \
          "max_open/active $(awk '$1 ~ /max_(open|active)_zones/ { printf "%s ", $2 }' "$d/nvmet.sysfs")" \
          "(null_blk $(awk '$1 ~ /max_(open|active)_zones/ { printf "%s ", $2 }' "$d/nullb.sysfs"))"
        [ "$nd" = 0 ] || first_diff "$d/nullb.trace" "$d/nvmet.trace" nvmet
      fi
    else
      echo "$pass/$name: nvmet does not export it: $NB_ERR"
    fi
    nvmet_down
    nullb_down nullb0
    # ours
    [ -n "$SERVER" ] || continue
    # shellcheck disable=SC2086
    if ! ours_up "$pass-$name" "$@"; then
      fail "$pass/$name: zonednull-server --nvme did not come up (${SRC:-?}): $(tail -n 3 "$out/$pass-$name.server.err" | tr '\n' ' ')"
      continue
    fi
    if attach "$pass/$name/ours" "$PORT_OURS" "$OUR_NQN"; then
      probe "$NDEV" "$d/ours"
      run_trace "$NDEV" "$d/ours" "$seed" "$nops" ||
        fail "$pass/$name: zntrace on our $NDEV exited $trc: $(cat "$d/ours.trace-err")"
      detach "$OUR_NQN"
      ours_traced=$((ours_traced + 1))
      ours_lines=$((ours_lines + $(wc -l <"$d/nullb.trace")))
      ours_lines_differ=$((ours_lines_differ + $(lines_differ "$d/nullb.trace" "$d/ours.trace")))
      same=1
      for f in trace fresh after; do
        if ! cmp -s "$d/nullb.$f" "$d/ours.$f"; then
          same=
          fail "$pass/$name: ours differs from null_blk in the $f ($(lines_differ "$d/nullb.$f" "$d/ours.$f") lines):"
          first_diff "$d/nullb.$f" "$d/ours.$f" ours
        fi
      done
      for a in $zone_attrs; do
        va=$(awk -v a="$a" '$1 == a { print $2 }' "$d/nullb.sysfs")
        vb=$(awk -v a="$a" '$1 == a { print $2 }' "$d/ours.sysfs")
        [ "$va" = "$vb" ] || { same=; fail "$pass/$name: queue/$a: null_blk $va, ours $vb"; }
      done
      if [ -n "$same" ]; then
        ours_identical=$((ours_identical + 1))
        ok "$pass/$name: ours = null_blk: $(wc -l <"$d/nullb.trace") trace lines, zone reports, zone limits"
      fi
    fi
    ours_down
  done </test/nvme.conf
  echo "nvme-counts: pass=$pass configs=$configs traced=$traced ops=$ops ours_traced=$ours_traced" \
    "ours_identical=$ours_identical ours_lines_differ=$ours_lines_differ ours_lines=$ours_lines" \
    "nvmet_traced=$nvmet_traced nvmet_identical=$nvmet_identical" \
    "nvmet_lines_differ=$nvmet_lines_differ nvmet_lines=$nvmet_lines lines=$lines"
}

# reload_nvme_core VALUE: nvme_core (and all that sits on it) again, with
# multipath=VALUE; the parameter is read-only at run time.
reload_nvme_core () {
  nvmet_down; nvmet_port_down
  for m in nvme_tcp nvmet_tcp nvme_fabrics nvmet nvme_core; do
    rmmod "$m" 2>"$out/rmmod.err" || { fail "rmmod $m: $(cat "$out/rmmod.err")"; return 1; }
  done
  modprobe nvme_core multipath="$1" && modprobe nvme_tcp && modprobe nvmet_tcp ||
    { fail "modprobe nvme_core multipath=$1"; return 1; }
  v=$(cat /sys/module/nvme_core/parameters/multipath)
  [ "$v" = "$1" ] || { fail "nvme_core multipath is $v after loading it with multipath=$1"; return 1; }
  echo "nvme_core reloaded: multipath=$v"
}

step_diff () { diff_pass mpdefault; }
step_mpoff () {
  reload_nvme_core N || return
  diff_pass mpoff
  cmp_pass mpN
  # The remaining steps with the stock host's setting again.
  [ "${ZN_NVME_KEEP_MPOFF:-}" ] || reload_nvme_core Y
}

# ---- cmp -----------------------------------------------------------------
# zones_in_use DEV: the same zone states on either namespace before the
# dump, so that the reports compare more than empty zones: zone 0 written
# to 64 KiB (implicitly open), zone 1 finished (full), zone 2 explicitly
# open, zone 3 written and closed.
zones_in_use () {
  zsz=$(cat "/sys/block/${1#/dev/}/queue/chunk_sectors")
  zntrace write "$1" 0 65536 81 >/dev/null &&
    $BLKZONE finish -o "$zsz" -c 1 "$1" &&
    $BLKZONE open -o $((2 * zsz)) -c 1 "$1" &&
    zntrace write "$1" $((3 * zsz * 512)) 8192 82 >/dev/null &&
    $BLKZONE close -o $((3 * zsz)) -c 1 "$1"
}
# dump DEV CTRL PREFIX: the normalized "KEY VALUE" lines of each source.
dump () {
  b=${1#/dev/}
  for a in $attrs; do echo "sysfs:$a $(cat "/sys/block/$b/queue/$a" 2>/dev/null || echo MISSING)"; done >"$3.sysfs"
  $BLKZONE report "$1" 2>&1 | sed "s|$b||g; s/^/blkzone /" >"$3.blkzone"
  nvme zns id-ns "$1" >"$3.idns.txt" 2>&1
  nvme zns id-ctrl "/dev/$2" >"$3.idctrl.txt" 2>&1
  nvme zns report-zones "$1" >"$3.report.txt" 2>&1
  # "name : value" lines keyed by name; the LBA format extension lines
  # (lbafe N: zsze:... zdes:...) keyed lbafeN; report lines keyed report.
  norm () { sed -n "s/^\([a-z][a-z0-9]*\)[[:space:]]*:[[:space:]]*\(.*\)$/$1:\1 \2/p;
                    s/^lbafe *\([0-9]*\): *\(.*\)$/$1:lbafe\1 \2/p"; }
  norm idns <"$3.idns.txt" >"$3.idns"
  norm idctrl <"$3.idctrl.txt" >"$3.idctrl"
  sed -n 's/^\(SLBA.*\)$/report:zone \1/p; s/^nr_zones: *\(.*\)$/report:nr_zones \1/p' \
    "$3.report.txt" | tr -s ' \t' ' ' >"$3.report"
  cat "$3.sysfs" "$3.blkzone" "$3.idns" "$3.idctrl" "$3.report" >"$3.all"
}
cmp_pass () {
  pass=$1
  cd_=$out/cmp-$pass
  mkdir -p "$cd_"
  # shellcheck disable=SC2086
  set -- $G_CMP
  nullb_up nullb0 "$@" && nvmet_up nullb0 || { fail "cmp/$pass: nvmet: $NB_ERR"; nvmet_down; nullb_down nullb0; return; }
  if attach "cmp-$pass-nvmet" "$PORT_NVMET" "$NQN_NVMET"; then
    zones_in_use "$NDEV" || fail "cmp/$pass: the zone operations on nvmet's $NDEV failed"
    dump "$NDEV" "$NCTRL" "$cd_/nvmet"
    detach "$NQN_NVMET"
  fi
  nvmet_down; nullb_down nullb0
  [ -s "$cd_/nvmet.all" ] || return
  echo "cmp/$pass: nvmet's namespace ($G_CMP):"
  sed 's/^/    nvmet: /' "$cd_/nvmet.sysfs" "$cd_/nvmet.idns" "$cd_/nvmet.idctrl"
  echo "    nvmet: report $(head -n 1 "$cd_/nvmet.report"); blkzone: $(wc -l <"$cd_/nvmet.blkzone") zones"
  [ -n "$SERVER" ] || return
  if ! ours_up "cmp-$pass" "$@"; then
    fail "cmp/$pass: zonednull-server --nvme did not come up: $(tail -n 3 "$out/cmp-$pass.server.err" | tr '\n' ' ')"
    return
  fi
  if attach "cmp-$pass-ours" "$PORT_OURS" "$OUR_NQN"; then
    zones_in_use "$NDEV" || fail "cmp/$pass: the zone operations on our $NDEV failed"
    dump "$NDEV" "$NCTRL" "$cd_/ours"
    detach "$OUR_NQN"
  fi
  ours_down
  [ -s "$cd_/ours.all" ] || { fail "cmp/$pass: nothing dumped of ours"; return; }
  # Field by field: a key present on one side only, or with other values.
  awk 'NR == FNR { k = $1; $1 = ""; if (!(k in a)) a[k] = $0; else a[k] = a[k] "|" $0; next }
       { k = $1; $1 = ""; if (!(k in b)) b[k] = $0; else b[k] = b[k] "|" $0 }
       END { for (k in a) { if (!(k in b)) print k "\t" a[k] "\t<missing>"; else if (a[k] != b[k]) print k "\t" a[k] "\t" b[k] }
             for (k in b) if (!(k in a)) print k "\t<missing>\t" b[k] }' \
    "$cd_/nvmet.all" "$cd_/ours.all" | sort >"$cd_/differ"
  nsame=$(awk 'NR == FNR { a[$0]; next } $0 in a' "$cd_/nvmet.all" "$cd_/ours.all" | wc -l)
  echo "cmp/$pass: $nsame lines the same; the fields that differ (nvmet | ours):"
  bad=0
  while IFS='	' read -r key va vb; do
    k=$key
    case $k in blkzone) k=blkzone ;; report:zone) k=report:zone ;; esac
    why=$(echo "$LEGIT" | awk -v k="$k" -v pk="$pass:$k" '$1 == k || $1 == pk { $1 = ""; sub(/^ +/, ""); print; exit }')
    if [ -n "$why" ]; then
      echo "    $key: $va | $vb  (expected: $why)"
    else
      echo "    $key: $va | $vb  (UNEXPECTED)"
      bad=$((bad + 1))
    fi
  done <"$cd_/differ"
  if [ "$bad" = 0 ]; then ok "cmp/$pass: ours and nvmet's agree but for the listed fields ($(wc -l <"$cd_/differ") of them differ)"
  else fail "cmp/$pass: $bad fields differ between ours and nvmet's beyond the listed ones"; fi
}
step_cmp () { cmp_pass "mp$(cat /sys/module/nvme_core/parameters/multipath)"; }

# ---- the target of fio, btrfs ---------------------------------------------
# target_up LABEL GEOMETRY...: our namespace (or nvmet's with
# ZN_NVME_TARGET=nvmet); sets NDEV NGDEV NCTRL, returns 1 after a FAIL line.
target_up () {
  tl=$1; shift
  if [ "$TARGET" = nullb ]; then
    nullb_up nullb0 "$@" || { fail "$tl: null_blk: $NB_ERR"; return 1; }
    NDEV=/dev/nullb0 NGDEV=/dev/ng-none NCTRL=none TNQN=
  elif [ "$TARGET" = nvmet ]; then
    nullb_up nullb0 "$@" && nvmet_up nullb0 || { fail "$tl: nvmet: $NB_ERR"; nvmet_down; nullb_down nullb0; return 1; }
    TNQN=$NQN_NVMET
    attach "$tl" "$PORT_NVMET" "$TNQN" || { nvmet_down; nullb_down nullb0; return 1; }
  else
    [ -n "$SERVER" ] || { skip "$tl: no zonednull-server with --nvme"; return 1; }
    ours_up "$tl" "$@" || { fail "$tl: zonednull-server --nvme did not come up: $(tail -n 3 "$out/$tl.server.err" | tr '\n' ' ')"; return 1; }
    TNQN=$OUR_NQN
    attach "$tl" "$PORT_OURS" "$TNQN" || { ours_down; return 1; }
  fi
  echo "$tl: $NDEV ($NGDEV, $NCTRL) on $TARGET"
}
target_down () {
  [ -z "$TNQN" ] || detach "$TNQN"
  if [ "$TARGET" = nullb ]; then nullb_down nullb0
  elif [ "$TARGET" = nvmet ]; then nvmet_down; nullb_down nullb0; else ours_down; fi
}

# ---- fio -----------------------------------------------------------------
step_fio () {
  # shellcheck disable=SC2086
  target_up fio $G_FIO || return
  zsz=$(( $(cat "/sys/block/${NDEV#/dev/}/queue/chunk_sectors") * 512 ))
  for eng in io_uring libaio; do
    # 4 zones from zone 2: sequential writes at QD 8, then read back and
    # verified.
    timeout 300 "$FIO" --name="zbd-$eng" --filename="$NDEV" --ioengine="$eng" --direct=1 \
      --zonemode=zbd --rw=write --bs=64k --iodepth=8 --offset=$((2 * zsz)) --size=$((4 * zsz)) \
      --verify=crc32c --do_verify=1 --output="$out/fio-$eng.txt" >/dev/null 2>"$out/fio-$eng.err"
    rc=$?
    if [ $rc = 0 ] && ! grep -qi 'verify: bad\|err= *[1-9]' "$out/fio-$eng.txt"; then
      ok "fio $eng --zonemode=zbd --verify=crc32c on $NDEV: $(grep -o 'WRITE: bw=[^,]*' "$out/fio-$eng.txt" | head -n 1)"
    else
      fail "fio $eng on $NDEV exited $rc: $(grep -i 'error\|bad\|fail' "$out/fio-$eng.err" "$out/fio-$eng.txt" | head -n 3 | tr '\n' ' ')"
    fi
  done
  # Passthrough through the generic character device: fio 3.33's
  # io_uring_cmd engine reports and resets zones itself (NVMe commands).
  if [ -c "$NGDEV" ]; then
    timeout 300 "$FIO" --name=zbd-uring-cmd --filename="$NGDEV" --ioengine=io_uring_cmd --cmd_type=nvme \
      --zonemode=zbd --rw=write --bs=64k --iodepth=8 --offset=$((8 * zsz)) --size=$((4 * zsz)) \
      --verify=crc32c --do_verify=1 --output="$out/fio-uring-cmd.txt" >/dev/null 2>"$out/fio-uring-cmd.err"
    rc=$?
    if [ $rc = 0 ] && ! grep -qi 'verify: bad\|err= *[1-9]' "$out/fio-uring-cmd.txt"; then
      ok "fio io_uring_cmd --cmd_type=nvme --zonemode=zbd --verify=crc32c on $NGDEV: $(grep -o 'WRITE: bw=[^,]*' "$out/fio-uring-cmd.txt" | head -n 1)"
    else
      fail "fio io_uring_cmd on $NGDEV exited $rc: $(grep -i 'error\|bad\|fail' "$out/fio-uring-cmd.err" "$out/fio-uring-cmd.txt" | head -n 3 | tr '\n' ' ')"
    fi
  else
    fail "no generic character device $NGDEV beside $NDEV"
  fi
  target_down
}

# ---- btrfs ---------------------------------------------------------------
fs_files () {
  dir=$1 sums=$2
  mkdir -p "$dir/a/b" "$dir/c" || return 1
  i=0
  for kb in 4 12 64 100 1024 3000 8192 20000; do
    dd if=/dev/urandom of="$dir/a/f$i" bs=1024 count=$kb 2>/dev/null || return 1
    i=$((i + 1))
  done
  for i in 1 2 3 4 5 6 7 8; do echo "small file $i" >"$dir/a/b/s$i" || return 1; done
  dd if=/dev/urandom of="$dir/c/big" bs=1048576 count=40 2>/dev/null || return 1
  # An overwrite and an append: out-of-place updates in a zoned fs.
  dd if=/dev/urandom of="$dir/a/f3" bs=4096 count=2 seek=3 conv=notrunc 2>/dev/null || return 1
  cat "$dir/a/f0" >>"$dir/a/f4" || return 1
  rm -f "$dir/a/f1"
  (cd "$dir" && find . -type f | sort | xargs sha256sum) >"$sums"
}
step_btrfs () {
  # shellcheck disable=SC2086
  target_up btrfs $G_BTRFS || return
  modprobe crc32c_generic 2>/dev/null; modprobe xxhash_generic 2>/dev/null
  modprobe blake2b_generic 2>/dev/null; modprobe btrfs 2>/dev/null
  mkdir -p "$MNT"
  if ! timeout 300 mkfs.btrfs -f -O zoned -m single -d single "$NDEV" >"$out/btrfs-mkfs.log" 2>&1; then
    fail "btrfs: mkfs.btrfs -O zoned on $NDEV: $(grep -iE 'error|not|fail' "$out/btrfs-mkfs.log" | head -n 3 | tr '\n' ' ')"
    target_down; return
  fi
  ok "btrfs: mkfs.btrfs -O zoned on $NDEV ($G_BTRFS)"
  if ! timeout 120 mount -t btrfs "$NDEV" "$MNT" 2>"$out/btrfs-mount.log"; then
    fail "btrfs: mount: $(cat "$out/btrfs-mount.log") $(dmesg | grep -i btrfs | tail -n 3 | tr '\n' ' ')"
    target_down; return
  fi
  dmesg -c >/dev/null
  if fs_files "$MNT" "$out/btrfs.sums" && timeout 120 sync; then
    ok "btrfs: $(wc -l <"$out/btrfs.sums") files written and synced"
  else
    fail "btrfs: writing files failed: $(dmesg | tail -n 3 | tr '\n' ' ')"
  fi
  # A failed write-back is no error of write() or sync(): btrfs counts it
  # in its device statistics and the kernel log.
  if dmesg | grep -q 'BTRFS error'; then
    fail "btrfs: write errors in the kernel log: $(dmesg | grep 'BTRFS error' | tail -n 1)"
  fi
  timeout 120 umount "$MNT" || fail "btrfs: umount"
  if timeout 300 btrfs check "$NDEV" >"$out/btrfs-check.log" 2>&1; then
    ok "btrfs: btrfs check finds no errors"
  else
    fail "btrfs: btrfs check: $(grep -iE 'error|fail|corrupt|wrong|invalid' "$out/btrfs-check.log" | head -n 3 | tr '\n' ' ')"
  fi
  if timeout 120 mount -t btrfs "$NDEV" "$MNT" 2>>"$out/btrfs-mount.log"; then
    if (cd "$MNT" && sha256sum -c "$out/btrfs.sums") >"$out/btrfs.sums.check" 2>&1; then
      ok "btrfs: after the remount all $(wc -l <"$out/btrfs.sums") checksums match"
    else
      fail "btrfs: checksums differ after the remount: $(grep -v ': OK' "$out/btrfs.sums.check" | head -n 3 | tr '\n' ' ')"
    fi
    timeout 120 umount "$MNT" || fail "btrfs: second umount"
  else
    fail "btrfs: second mount: $(tail -n 2 "$out/btrfs-mount.log")"
  fi
  $BLKZONE report "$NDEV" >"$out/btrfs-zones.txt" 2>&1
  target_down
}

# ---- restart -----------------------------------------------------------------
# ctrl_state: the state of the controller NCTRL (live, connecting, ...).
ctrl_state () { cat "/sys/class/nvme/$NCTRL/state" 2>/dev/null; }
is_live () { [ "$(ctrl_state)" = live ]; }
step_restart () {
  [ -n "$SERVER" ] || { skip "restart: no zonednull-server with --nvme"; return; }
  bdir=/tmp/nvme-restart
  rm -rf "$bdir"; mkdir -p "$bdir"
  # shellcheck disable=SC2086
  ours_up restart backing_dir="$bdir" $G_RESTART ||
    { fail "restart: zonednull-server --nvme backing_dir=$bdir did not come up: $(tail -n 3 "$out/restart.server.err" | tr '\n' ' ')"; return; }
  # Reconnect every second for up to 60 s before the host gives up.
  attach restart "$PORT_OURS" "$OUR_NQN" --reconnect-delay=1 --ctrl-loss-tmo=60 || { ours_down; return; }
  rnqn=$OUR_NQN rdev=$NDEV
  zsz=$(( $(cat "/sys/block/${NDEV#/dev/}/queue/chunk_sectors") * 512 ))
  # Zone 0 written and acknowledged before the kill: it must survive.
  if zntrace seqwrite "$NDEV" 0 65536 8 71 >"$out/restart.before" 2>&1; then
    ok "restart: 512 KiB written to zone 0 before the kill"
  else
    fail "restart: the write before the kill failed: $(tail -n 2 "$out/restart.before" | tr '\n' ' ')"
  fi
  # The writer: 4 KiB O_DIRECT writes one after the other from zone 1 on,
  # 16 MiB (zones 1 to 4), each acknowledged before the next.
  nw=4096
  zntrace seqwrite "$NDEV" "$zsz" 4096 $nw 72 >"$out/restart.writer" 2>&1 &
  wpid=$!
  sleep 1
  dmesg -c >/dev/null
  kill -KILL "$SPID"; wait "$SPID" 2>/dev/null; SPID=
  echo "restart: zonednull-server SIGKILLed while the writer ran; controller $NCTRL: $(ctrl_state)"
  sleep 3
  echo "restart: 3 s later, controller $NCTRL: $(ctrl_state); writer $(alive "$wpid" && echo "still waits" || echo ended)"
  # shellcheck disable=SC2086
  if ! ours_up restart2 backing_dir="$bdir" $G_RESTART; then
    fail "restart: the server did not start again on $bdir: $(tail -n 3 "$out/restart2.server.err" | tr '\n' ' ')"
    kill "$wpid" 2>/dev/null; detach "$rnqn"; return
  fi
  [ "$OUR_NQN" = "$rnqn" ] || fail "restart: the NQN changed across the restart ($rnqn, then $OUR_NQN)"
  if waitfor 600 is_live; then
    ok "restart: the host reconnected to the restarted server ($NCTRL live)"
  else
    fail "restart: $NCTRL is '$(ctrl_state)' 60 s after the restart: $(dmesg | grep -i nvme | tail -n 4 | tr '\n' ' ')"
  fi
  reap "$wpid" 1200; wrc=$?
  [ $wrc = 124 ] && { kill -KILL "$wpid"; reap "$wpid" 50; }
  # Writes acknowledged to the writer: all, or those before the one that
  # failed ("write K of N failed").
  k=$(sed -n 's/^write \([0-9]*\) of .*/\1/p' "$out/restart.writer")
  if [ -n "$k" ]; then acked=$((k - 1)); else acked=$nw; fi
  echo "restart: the writer ended with status $wrc after $acked of $nw writes acknowledged: $(tail -n 2 "$out/restart.writer" | tr '\n' ' ')"
  dmesg >"$out/restart.dmesg"
  echo "restart: the host's log:"; grep -i nvme "$out/restart.dmesg" | head -n 12 | sed 's/^/    /'
  [ "$NDEV" = "$rdev" ] || echo "restart: the namespace is $NDEV now (was $rdev)"
  zntrace expect "$NDEV" 0 524288 71 >/dev/null 2>&1 &&
    ok "restart: zone 0's 512 KiB, acknowledged before the kill, read back after the restart" ||
    fail "restart: zone 0's data differ after the restart"
  if [ "$acked" -gt 0 ]; then
    zntrace expect "$NDEV" "$zsz" $((acked * 4096)) 72 >"$out/restart.expect" 2>&1 &&
      ok "restart: the writer's $acked acknowledged writes read back after the restart" ||
      fail "restart: the writer's acknowledged writes do not read back: $(head -n 2 "$out/restart.expect" | tr '\n' ' ')"
  fi
  $BLKZONE report "$NDEV" >"$out/restart.zones" 2>&1
  echo "restart: zones 1 to 5 after:"; sed -n 2,6p "$out/restart.zones" | sed 's/^/    /'
  # The namespace works again: the last zone reset, written, read back.
  last=$(( $(cat "/sys/block/${NDEV#/dev/}/queue/nr_zones") - 1 ))
  if $BLKZONE reset -o $((last * zsz / 512)) -c 1 "$NDEV" &&
     zntrace write "$NDEV" $((last * zsz)) 65536 73 >/dev/null && zntrace expect "$NDEV" $((last * zsz)) 65536 73; then
    ok "restart: after the reconnect zone $last resets, takes a write and reads it back"
  else
    fail "restart: the namespace does not work after the reconnect"
  fi
  detach "$rnqn"
  ours_down
  rm -rf "$bdir"
}

# ---- reset -------------------------------------------------------------------
# nvme reset: the host sets CC.EN to 0 (the server closes the I/O queues
# and refuses all but the properties) and connects again; the namespace
# must come back with its data and take new writes.
step_reset () {
  [ -n "$SERVER" ] || { skip "reset: no zonednull-server with --nvme"; return; }
  # shellcheck disable=SC2086
  ours_up reset memory_backed=1 $G_RESTART -- -v ||
    { fail "reset: zonednull-server --nvme did not come up: $(tail -n 3 "$out/reset.server.err" | tr '\n' ' ')"; return; }
  attach reset "$PORT_OURS" "$OUR_NQN" || { ours_down; return; }
  zsz=$(( $(cat "/sys/block/${NDEV#/dev/}/queue/chunk_sectors") * 512 ))
  zntrace seqwrite "$NDEV" 0 65536 4 74 >"$out/reset.before" 2>&1 ||
    fail "reset: the write before the reset failed: $(tail -n 2 "$out/reset.before" | tr '\n' ' ')"
  dmesg -c >/dev/null
  if nvme reset "/dev/$NCTRL" >"$out/reset.txt" 2>&1; then
    ok "reset: nvme reset /dev/$NCTRL returned"
  else
    fail "reset: nvme reset /dev/$NCTRL: $(tr '\n' ' ' <"$out/reset.txt") $(dmesg | grep -i nvme | tail -n 3 | tr '\n' ' ')"
  fi
  if waitfor 300 is_live; then
    ok "reset: $NCTRL live again after the reset"
  else
    fail "reset: $NCTRL is '$(ctrl_state)' 30 s after the reset: $(dmesg | grep -i nvme | tail -n 4 | tr '\n' ' ')"
  fi
  echo "reset: the host's log:"; dmesg | grep -i nvme | head -n 8 | sed 's/^/    /'
  grep -q "reset (CC.EN 0)" "$out/reset.server.err" &&
    ok "reset: the server saw CC.EN go to 0" ||
    fail "reset: no controller reset in the server's log: $(tail -n 4 "$out/reset.server.err" | tr '\n' ' ')"
  # 256 KiB written: zone 0's write pointer 512 sectors from its start.
  wp=$($BLKZONE report -c 1 "$NDEV" 2>"$out/reset.zones" |
         sed -n 's/.*wptr \(0x[0-9a-f]*\) .*/\1/p')
  if [ -n "$wp" ] && [ $((wp)) = 512 ]; then
    ok "reset: zones report after the reset, zone 0's write pointer where the write left it"
  else
    fail "reset: zone 0 after the reset: wptr '$wp' (512 expected) $(head -n 2 "$out/reset.zones" | tr '\n' ' ')"
  fi
  zntrace expect "$NDEV" 0 262144 74 >/dev/null 2>&1 &&
    ok "reset: zone 0's data, written before the reset, read back" ||
    fail "reset: zone 0's data differ after the reset"
  if zntrace write "$NDEV" "$zsz" 65536 75 >/dev/null && zntrace expect "$NDEV" "$zsz" 65536 75; then
    ok "reset: after the reset zone 1 takes a write and reads it back"
  else
    fail "reset: the namespace does not take writes after the reset"
  fi
  detach "$OUR_NQN"
  ours_down
}

# ---- faults ------------------------------------------------------------------
# Statuses that fault rules inject, as the stock host hands them to an
# application (nvme_error_status, then blk_status_to_errno): Zone Is Full
# with DNR as EIO, Too Many Active Zones as EOVERFLOW, Too Many Open Zones
# as ETOOMANYREFS, and then the host's zone write plug refusing the zone
# until a zone report; a write failed after it landed (EIO, its data and
# the write pointer there, and the plug, which advanced with it, taking
# the next write); Namespace Not Ready without DNR, retried by the host
# until it passes; a write that times out, which the host recovers from
# by resetting the controller and reconnecting, then sends again; a zone
# reset whose answer is delayed.
step_faults () {
  [ -n "$SERVER" ] || { skip "faults: no zonednull-server with --nvme"; return; }
  FAULTS='fault=op=write zone=1 nvme-status=1:b9 count=1
fault=op=write zone=2 nvme-status=1:bd count=1
fault=op=write zone=3 nvme-status=1:be count=1
fault=op=write zone=4 error=EIO when=after count=1
fault=op=write zone=5 nvme-status=0:82,retry count=2
fault=op=write zone=6 timeout count=1
fault=op=reset zone=7 delay=500 count=1'
  # shellcheck disable=SC2086
  ours_up faults memory_backed=1 $G_RESTART -- -v ||
    { FAULTS=; fail "faults: zonednull-server --nvme did not come up: $(tail -n 3 "$out/faults.server.err" | tr '\n' ' ')"; return; }
  FAULTS=
  # The host's I/O timeout is set when it connects: 5 s, not 30.
  io_timeout=$(cat /sys/module/nvme_core/parameters/io_timeout)
  echo 5 >/sys/module/nvme_core/parameters/io_timeout
  attach faults "$PORT_OURS" "$OUR_NQN" --reconnect-delay=1 --ctrl-loss-tmo=60 ||
    { echo "$io_timeout" >/sys/module/nvme_core/parameters/io_timeout; ours_down; return; }
  echo "$io_timeout" >/sys/module/nvme_core/parameters/io_timeout
  zsz=$(( $(cat "/sys/block/${NDEV#/dev/}/queue/chunk_sectors") * 512 ))
  dmesg -c >/dev/null
  for c in "1 EIO Zone Is Full" "2 EOVERFLOW Too Many Active Zones" \
           "3 ETOOMANYREFS Too Many Open Zones"; do
    set -- $c
    z=$1 want=$2; shift 2
    got=$(zntrace write "$NDEV" $((z * zsz)) 4096 $((80 + z)) 2>&1)
    case $got in
      *"($want)"*) ok "faults: $* injected on zone $z reaches the application as $want ($got)" ;;
      *) fail "faults: $* injected on zone $z: '$got', expected $want" ;;
    esac
    # The rule is spent, but the host's zone write plug advanced its
    # write pointer when it sent the write: it refuses the write at the
    # zone's real write pointer (EIO, never sent) until a zone report
    # brings it back, as fio's recover_zbd_write_error does.
    got=$(zntrace write "$NDEV" $((z * zsz)) 4096 $((80 + z)) 2>&1)
    case $got in
      *"(EIO)"*) ok "faults: zone $z: the host's write plug refuses the next write until a zone report ($got)" ;;
      *) fail "faults: zone $z, the write after the failure without a zone report: '$got', expected the plug's EIO" ;;
    esac
    $BLKZONE report -o $((z * zsz / 512)) -c 1 "$NDEV" >/dev/null 2>&1
    got=$(zntrace write "$NDEV" $((z * zsz)) 4096 $((80 + z)) 2>&1)
    if [ "$got" = res=0 ] && zntrace expect "$NDEV" $((z * zsz)) 4096 $((80 + z)); then
      ok "faults: zone $z takes the write after a zone report, the rule spent"
    else
      fail "faults: zone $z after a zone report: '$got' $($BLKZONE report -o $((z * zsz / 512)) -c 1 "$NDEV" 2>&1)"
    fi
  done
  got=$(zntrace write "$NDEV" $((4 * zsz)) 4096 84 2>&1)
  case $got in *"(EIO)"*) ok "faults: when=after fails the write with EIO ($got)" ;;
    *) fail "faults: when=after on zone 4: '$got', expected EIO" ;; esac
  wp=$($BLKZONE report -o $((4 * zsz / 512)) -c 1 "$NDEV" | sed -n 's/.*wptr \(0x[0-9a-f]*\) .*/\1/p')
  [ -n "$wp" ] && [ $((wp)) = 8 ] &&
    ok "faults: when=after: the write pointer moved over the failed write" ||
    fail "faults: when=after: zone 4's wptr is '$wp', expected 0x8"
  zntrace expect "$NDEV" $((4 * zsz)) 4096 84 &&
    ok "faults: when=after: the data of the failed write reads back" ||
    fail "faults: when=after: the data of the failed write is not there"
  if zntrace write "$NDEV" $((4 * zsz + 4096)) 4096 85 >/dev/null 2>&1; then
    ok "faults: after the failure the host writes at the moved write pointer"
  else
    fail "faults: the host's next write at zone 4's moved write pointer failed"
  fi
  got=$(zntrace write "$NDEV" $((5 * zsz)) 4096 86 2>&1)
  case $got in res=0) ok "faults: Namespace Not Ready without DNR twice: the host retried, the write passed" ;;
    *) fail "faults: Namespace Not Ready without DNR: '$got', expected the host to retry to success" ;; esac
  # Never answered, never applied: after 5 s the host's timeout handler
  # starts error recovery, tears the queues down (the server lets go of
  # what the connection held), reconnects and sends the write again,
  # which the spent rule lets through.
  ft0=$(date +%s)
  got=$(zntrace write "$NDEV" $((6 * zsz)) 4096 87 2>&1)
  ft1=$(date +%s)
  case $got in res=0) ok "faults: a write that timed out passed on the host's retry after $((ft1 - ft0)) s" ;;
    *) fail "faults: the write that timed out: '$got', expected the host to recover and retry to success" ;; esac
  [ $((ft1 - ft0)) -ge 5 ] && ok "faults: the host waited its I/O timeout (5 s) for the write" ||
    fail "faults: the write that timed out was answered after $((ft1 - ft0)) s, before the host's 5 s timeout"
  # The log read whole, once a try: one run's check missed the timeout
  # line that the log saved just after it holds.
  seen=
  for try in 1 2 3 4 5 6 7 8 9 10; do
    klog=$(dmesg)
    case $klog in *"QID "[0-9]*" timeout"*)
      case $klog in *[Rr]econnected*) seen=1; break ;; esac ;;
    esac
    sleep 0.2
  done
  if [ -n "$seen" ]; then
    ok "faults: the host timed the write out, reset the controller and reconnected"
  else
    fail "faults: no timeout and reconnection in the host's log: $(dmesg | grep -i nvme | tail -n 6 | tr '\n' ' ')"
  fi
  wp=$($BLKZONE report -o $((6 * zsz / 512)) -c 1 "$NDEV" | sed -n 's/.*wptr \(0x[0-9a-f]*\) .*/\1/p')
  if [ -n "$wp" ] && [ $((wp)) = 8 ] && zntrace expect "$NDEV" $((6 * zsz)) 4096 87; then
    ok "faults: the write landed once, by its retry (zone 6's wptr 0x8, the data there)"
  else
    fail "faults: after the timed-out write zone 6's wptr is '$wp', expected 0x8 and the data"
  fi
  # The zone reset's answer waits 500 ms; the zone is empty after it.
  zntrace write "$NDEV" $((7 * zsz)) 4096 88 >/dev/null 2>&1
  ft0=$(uptime_cs)
  $BLKZONE reset -o $((7 * zsz / 512)) -c 1 "$NDEV" 2>"$out/faults.reset.err"
  rc=$? ft1=$(uptime_cs)
  wp=$($BLKZONE report -o $((7 * zsz / 512)) -c 1 "$NDEV" | sed -n 's/.*wptr \(0x[0-9a-f]*\) .*/\1/p')
  if [ $rc = 0 ] && [ $((ft1 - ft0)) -ge 49 ] && [ -n "$wp" ] && [ $((wp)) = 0 ]; then
    ok "faults: a zone reset delayed 500 ms was answered after $(((ft1 - ft0) * 10)) ms, the zone empty"
  else
    fail "faults: the delayed zone reset: status $rc after $(((ft1 - ft0) * 10)) ms, wptr '$wp': $(cat "$out/faults.reset.err")"
  fi
  echo "faults: the host's log:"; dmesg | grep -i -e nvme -e "I/O error" | head -n 20 | sed 's/^/    /'
  dmesg >"$out/faults.dmesg"
  detach "$OUR_NQN"
  ours_down
}

# ---- allowhost ---------------------------------------------------------------
step_allowhost () {
  [ -n "$SERVER" ] || { skip "allowhost: no zonednull-server with --nvme"; return; }
  host_a=nqn.2014-08.org.zonednull.test:host-a host_b=nqn.2014-08.org.zonednull.test:host-b
  # shellcheck disable=SC2086
  ours_up allowhost $G_CMP -- --nvme-allow-host="$host_a" ||
    { fail "allowhost: zonednull-server --nvme-allow-host did not come up: $(tail -n 3 "$out/allowhost.server.err" | tr '\n' ' ')"; return; }
  dmesg -c >/dev/null
  if nvme connect -t tcp -a 127.0.0.1 -s "$PORT_OURS" -n "$OUR_NQN" --hostnqn="$host_b" \
       --hostid="$uuid" >"$out/allowhost-b.txt" 2>&1; then
    fail "allowhost: host B ($host_b) connected to a server that allows only A"
    detach "$OUR_NQN"
  else
    ok "allowhost: host B refused: $(tr '\n' ' ' <"$out/allowhost-b.txt") / $(dmesg | grep -i nvme | tail -n 1)"
  fi
  if nvme connect -t tcp -a 127.0.0.1 -s "$PORT_OURS" -n "$OUR_NQN" --hostnqn="$host_a" \
       --hostid="$uuid" >"$out/allowhost-a.txt" 2>&1 && waitfor 300 has_ns "$OUR_NQN"; then
    ok "allowhost: host A accepted: $(ns_of "$OUR_NQN")"
  else
    fail "allowhost: host A refused: $(tr '\n' ' ' <"$out/allowhost-a.txt") $(dmesg | grep -i nvme | tail -n 2 | tr '\n' ' ')"
  fi
  detach "$OUR_NQN"
  ours_down
}

# ---- auth --------------------------------------------------------------------
# nvmet_auth_up HOSTKEY [CTRLKEY]: nvmet's subsystem for HOSTNQN alone,
# with its keys (nvmet's default hash and group: SHA-256, NULL).
nvmet_auth_up () {
  h=$CFS_T/hosts/$HOSTNQN s=$CFS_T/subsystems/$NQN_NVMET
  [ -d "$h" ] || mkdir "$h" || return 1
  echo "$1" >"$h/dhchap_key" || return 1
  echo "${2:-}" >"$h/dhchap_ctrl_key" 2>/dev/null
  echo 0 >"$s/attr_allow_any_host" && ln -s "$h" "$s/allowed_hosts/$HOSTNQN"
}
nvmet_auth_down () {
  rm -f "$CFS_T/subsystems/$NQN_NVMET/allowed_hosts/$HOSTNQN" 2>/dev/null
  [ -d "$CFS_T/hosts/$HOSTNQN" ] && rmdir "$CFS_T/hosts/$HOSTNQN"
}
# refused LABEL PORT NQN OPTIONS...: nvme connect must fail and leave no
# namespace.
refused () {
  rl=$1 rp=$2 rn=$3; shift 3
  dmesg -c >/dev/null
  if nvme connect -t tcp -a 127.0.0.1 -s "$rp" -n "$rn" "$@" >"$out/$rl.txt" 2>&1 &&
     waitfor 50 has_ns "$rn"; then
    fail "$rl: attached: $(tr '\n' ' ' <"$out/$rl.txt")"
  else
    ok "$rl: refused: $(tr '\n' ' ' <"$out/$rl.txt") / $(dmesg | grep -i nvme | tail -n 1)"
  fi
  nvme disconnect -n "$rn" >/dev/null 2>&1
  waitfor 300 no_ns "$rn"
}
# auth_trace LABEL PORT NQN REF CONNECT-OPTIONS...: attaches with the
# options, traces the seed, compares with null_blk's trace REF (ours must
# equal it; nvmet's difference is counted) and says how the host
# authenticated (dmesg).
auth_trace () {
  tl=$1 tp=$2 tn=$3 tr=$4; shift 4
  dmesg -c >/dev/null
  attach "auth/$tl" "$tp" "$tn" "$@" || return
  how=$(dmesg | grep -o 'authenticated with .*\|controller authenticated' | tr '\n' ' ')
  run_trace "$NDEV" "$out/auth-$tl" "$aseed" "$anops" ||
    fail "auth/$tl: zntrace exited $trc: $(cat "$out/auth-$tl.trace-err")"
  detach "$tn"
  nd=$(lines_differ "$tr.trace" "$out/auth-$tl.trace")
  case $tl in
    ours*)
      if [ "$nd" = 0 ] && cmp -s "$tr.after" "$out/auth-$tl.after"; then
        ok "auth/$tl: attached ($how), ours = null_blk: $(wc -l <"$tr.trace") trace lines"
      else
        fail "auth/$tl: attached ($how), $nd trace lines differ from null_blk's"
        first_diff "$tr.trace" "$out/auth-$tl.trace" ours
      fi ;;
    *) ok "auth/$tl: attached ($how), $nd of $(wc -l <"$tr.trace") trace lines differ from null_blk's" ;;
  esac
}
step_auth () {
  [ -n "$SERVER" ] || { skip "auth: no zonednull-server with --nvme"; return; }
  read -r aname aseed anops asettings </test/nvme.conf
  kh=$(nvme gen-dhchap-key -m 1 -n "$HOSTNQN") kc=$(nvme gen-dhchap-key -m 2 -n "$HOSTNQN")
  kw=$(nvme gen-dhchap-key -m 1 -n "$HOSTNQN") kwc=$(nvme gen-dhchap-key -m 2 -n "$HOSTNQN")
  case "$kh $kc $kw $kwc" in *DHHC-1:*DHHC-1:*DHHC-1:*DHHC-1:*) ;;
    *) fail "auth: nvme gen-dhchap-key: $kh"; return ;; esac
  ref=$out/auth-nullb
  # shellcheck disable=SC2086
  nullb_up nullb1 $asettings || { fail "auth: null_blk refuses $aname ($NB_ERR)"; return; }
  run_trace /dev/nullb1 "$ref" "$aseed" "$anops" || fail "auth: zntrace on null_blk exited $trc"
  nullb_down nullb1
  # ours, one way, then both ways
  # shellcheck disable=SC2086
  if ours_up auth-uni $asettings -- --nvme-host="$HOSTNQN:$kh"; then
    auth_trace ours-uni "$PORT_OURS" "$OUR_NQN" "$ref" --dhchap-secret="$kh"
    refused auth-ours-wrong "$PORT_OURS" "$OUR_NQN" --dhchap-secret="$kw"
    refused auth-ours-none "$PORT_OURS" "$OUR_NQN"
    ours_down
  else
    fail "auth: zonednull-server --nvme-host did not come up: $(tail -n 3 "$out/auth-uni.server.err" | tr '\n' ' ')"
  fi
  # shellcheck disable=SC2086
  if ours_up auth-bi $asettings -- --nvme-host="$HOSTNQN:$kh:$kc"; then
    auth_trace ours-bi "$PORT_OURS" "$OUR_NQN" "$ref" --dhchap-secret="$kh" --dhchap-ctrl-secret="$kc"
    refused auth-ours-wrong-ctrl "$PORT_OURS" "$OUR_NQN" --dhchap-secret="$kh" --dhchap-ctrl-secret="$kwc"
    ours_down
  else
    fail "auth: zonednull-server --nvme-host (bidirectional) did not come up"
  fi
  if grep -qF "${kh#DHHC-1:0?:}" "$out"/auth-*.server.err; then
    fail "auth: a secret is in the server's log"
  fi
  # nvmet, the same keys: the reference
  # shellcheck disable=SC2086
  if nullb_up nullb0 $asettings && nvmet_up nullb0 && nvmet_auth_up "$kh" "$kc"; then
    auth_trace nvmet-bi "$PORT_NVMET" "$NQN_NVMET" "$ref" --dhchap-secret="$kh" --dhchap-ctrl-secret="$kc"
    refused auth-nvmet-wrong "$PORT_NVMET" "$NQN_NVMET" --dhchap-secret="$kw"
    refused auth-nvmet-wrong-ctrl "$PORT_NVMET" "$NQN_NVMET" --dhchap-secret="$kh" --dhchap-ctrl-secret="$kwc"
  else
    fail "auth: nvmet with DH-HMAC-CHAP keys: ${NB_ERR:-configfs hosts}"
  fi
  nvmet_auth_down; nvmet_down
  nullb_down nullb0
}

# ---- run ---------------------------------------------------------------------
for step in $STEPS; do
  t0=$(now)
  echo "== nvme: $step"
  "step_$step"
  echo "$step: $(( $(now) - t0 )) s" >>"$out/times.txt"
done
nvmet_down; nvmet_port_down
dmesg >"$out/dmesg.txt"
if grep -E 'hung task|blocked for more than|WARNING:|BUG:|Oops' "$out/dmesg.txt" >"$out/dmesg.bad"; then
  fail "the kernel complained: $(head -n 2 "$out/dmesg.bad" | tr '\n' ' ')"
fi
sed 's/^/   time: /' "$out/times.txt"
echo "guest-nvme: $passes pass, $fails failure(s)"
[ "$fails" -eq 0 ]
