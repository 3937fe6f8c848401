#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# guest-ublk-unit.sh: zonednull-ublk@.service in the 6.12 guest, whose
# init is busybox's, not systemd: the unit's ExecStart= and ExecStop= run
# as written, with what systemd gives them (check-ublk.sh put the program
# at the unit's path): %i, OPTIONS and PARAMS from the EnvironmentFile=
# split at spaces, the RuntimeDirectory= and StateDirectory=, the
# CapabilityBoundingSet= and NoNewPrivileges= (setpriv), PrivateMounts=
# (a mount namespace of its own, slave, busybox's unshare), and in it
# ProtectKernelTunables= as far as /sys and /proc/sys go (bind mounts made
# read-only) with the ReadWritePaths= under them, ublk_drv loaded
# first (modprobe@ublk_drv.service), $MAINPID from PIDFile=.  What needs
# systemd itself is not exercised here: SystemCallFilter= (seccomp),
# DevicePolicy= and DeviceAllow= (a cgroup's device program),
# ProtectSystem=, ProtectProc= and ProcSubset=; tests/server/test-units.sh
# checks only that systemd accepts them and scores the unit.  The device
# must appear with the file's geometry once ExecStart= returns, take
# writes, and be gone (block device, character device, sysfs, pidfile,
# control socket) once ExecStop= has run and the process has ended; a
# device in its StateDirectory= (backing_dir) keeps its zones across a
# stop and a start.  Tools go by their paths: busybox's sh runs its own
# applets (a setpriv without --bounding-set) before those in PATH.
. /test/guest-lib.sh
passes=0 fails=0
unit=/test/zonednull-ublk@.service
inst=unit0
out=/out/ublk-unit
mkdir -p "$out"

# key NAME: the unit's NAME= value, %i expanded.
key () { sed -n "s/^$1=//p" "$unit" | sed "s/%i/$inst/g"; }
execstart=$(key ExecStart) execstop=$(key ExecStop) pidfile=$(key PIDFile)
envfile=$(key EnvironmentFile) rundir=/run/$(key RuntimeDirectory)
statedir=/var/lib/$(key StateDirectory)
# CAP_SYS_ADMIN CAP_X -> -all,+sys_admin,+x
bounding=-all$(for c in $(key CapabilityBoundingSet); do
  printf ',+%s' "$(echo "${c#CAP_}" | tr 'A-Z' 'a-z')"; done)
nnp=
[ "$(key NoNewPrivileges)" = yes ] && nnp=--no-new-privs
# The mounts the namespace gets before ExecStart=, as a script for its sh:
# writable paths first, so that making their parents read-only leaves
# them alone.
mounts=
if [ "$(key ProtectKernelTunables)" = yes ]; then
  for p in $(key ReadWritePaths); do
    mounts="$mounts mount -o bind ${p#-} ${p#-} &&"
  done
  mounts="$mounts mount -o bind /proc/sys /proc/sys &&
    mount -o remount,bind,ro /proc/sys && mount -o remount,bind,ro /sys &&"
fi
unshare=
[ "$(key PrivateMounts)" = yes ] && unshare="unshare -m --propagation slave"
for v in execstart execstop pidfile envfile; do
  eval "[ -n \"\$$v\" ]" || { fail "no $v in $unit"; exit 1; }
done

mkdir -p "$(dirname "$envfile")"
printf '%s\n' "# written by guest-ublk-unit.sh" \
  "PARAMS=\"size=128 zone_size=16 zone_nr_conv=1 zone_max_open=4 backing_dir=$statedir\"" >"$envfile"

# start: as systemd starts the unit; sets dev and mainpid.
start () {
  modprobe -abq ublk_drv
  mkdir -p "$rundir" "$statedir"
  dev= mainpid=
  # shellcheck disable=SC1090
  dev=$(. "$envfile"; export OPTIONS PARAMS
        $unshare sh -c "$mounts exec /usr/bin/setpriv --bounding-set=$bounding $nnp sh -c 'exec $execstart'" \
          2>"$out/$1.err")
  rc=$?
  if [ $rc -ne 0 ] || ! [ -b "$dev" ] || ! [ -s "$pidfile" ]; then
    fail "$1: ExecStart ($execstart) exited $rc, printed '$dev': $(tail -n 3 "$out/$1.err" | tr '\n' ' ')"
    return 1
  fi
  mainpid=$(cat "$pidfile")
  ok "$1: ExecStart with the bounding set $bounding $nnp${unshare:+, $unshare}: $dev, PID $mainpid"
  # Read-only /sys must leave the device's queue/scheduler writable.
  if grep -q scheduler "$out/$1.err"; then
    fail "$1: $(grep scheduler "$out/$1.err")"
  elif [ -n "$mounts" ]; then
    ok "$1: null_blk's I/O scheduler set under a read-only /sys"
  fi
}
# stop: ExecStop= with $MAINPID, then systemd waits for the process.
stop () {
  b=${dev#/dev/}
  cdev=/dev/ublkc${b#ublkb}
  sh -c "$(echo "$execstop" | sed "s/\$MAINPID/$mainpid/g")" ||
    fail "$1: ExecStop ($execstop) failed"
  waitfor 600 dead "$mainpid" || { fail "$1: PID $mainpid still runs 60 s after ExecStop"; return 1; }
  gone=
  for f in "$dev" "$cdev" "/sys/block/$b" "$pidfile" "$rundir/control.sock"; do
    [ -e "$f" ] && gone="$gone $f"
  done
  if [ -z "$gone" ]; then ok "$1: ExecStop: PID $mainpid ended, $dev, $cdev, its sysfs, pidfile and socket are gone"
  else fail "$1: left after ExecStop:$gone"; fi
}

if start first; then
  b=${dev#/dev/}
  if [ "$(cat "/sys/block/$b/queue/zoned")" = host-managed ] &&
     [ "$(cat "/sys/block/$b/queue/nr_zones")" = 8 ]; then
    ok "first: $dev is host-managed with 8 zones (PARAMS of $envfile)"
  else
    fail "first: $dev: zoned $(cat "/sys/block/$b/queue/zoned"), nr_zones $(cat "/sys/block/$b/queue/nr_zones")"
  fi
  # 1 MiB at the start of zone 1, the first sequential zone.
  dd if=/dev/zero of="$dev" bs=1M count=1 seek=16 oflag=direct 2>"$out/dd.err" ||
    fail "first: writing zone 1 of $dev: $(cat "$out/dd.err")"
  /usr/sbin/blkzone report -o 32768 -c 1 "$dev" >"$out/first.report" 2>&1
  grep -q 'wptr 0x000800' "$out/first.report" && ok "first: zone 1's write pointer at 1 MiB" ||
    fail "first: zone 1 after 1 MiB: $(cat "$out/first.report")"
  stop first
fi
if start again; then
  /usr/sbin/blkzone report -o 32768 -c 1 "$dev" >"$out/again.report" 2>&1
  grep -q 'wptr 0x000800' "$out/again.report" &&
    ok "again: zone 1 kept its 1 MiB in $statedir across the stop" ||
    fail "again: zone 1 after a restart on $statedir: $(cat "$out/again.report")"
  stop again
fi
echo "unit-counts: passes=$passes fails=$fails"
[ "$fails" -eq 0 ]
