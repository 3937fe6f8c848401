#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# in-chroot.sh: run by check-debs.sh inside a clean Debian 12 with the
# packages in /debs: installs them, serves and reads a device through
# each installed program, builds a program on libzonednull-client-dev
# with pkg-config, verifies the installed systemd units, purges the
# packages, and checks that only the configuration written here is left.
set -eu
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8
fail () { echo "in-chroot: FAIL: $*" >&2; exit 1; }
tmp=/tmp/zn
mkdir -p $tmp

# Every path of the system but the volatile ones and apt's and dpkg's
# bookkeeping.
snapshot () {
  find / -xdev \( -path /proc -o -path /dev -o -path /tmp -o -path /run \
    -o -path /debs -o -path /in-chroot.sh -o -path /var/cache \
    -o -path /var/log -o -path /var/lib/apt -o -path /var/lib/dpkg \) \
    -prune -o -print | sort
}

# mmdebstrap leaves no package lists behind.
apt-get -o Acquire::Retries=3 update -q >$tmp/update.log 2>&1 || { cat $tmp/update.log; fail "apt-get update"; }
apt-get -o Acquire::Retries=3 install -y -q /debs/*.deb >$tmp/install.log 2>&1 ||
  { cat $tmp/install.log; fail "apt-get install /debs/*.deb"; }
pkgs=$(for f in /debs/*.deb; do dpkg-deb -f "$f" Package; done)
echo "in-chroot: installed" $pkgs
# shellcheck disable=SC2086
dpkg -L $pkgs | sort -u >$tmp/owned
snapshot >$tmp/before

pids=
# stop PIDFILE: stops that server by its PID and waits for it to go.
stop () {
  pid=$(cat "$1")
  kill "$pid"
  n=0
  while kill -0 "$pid" 2>/dev/null; do
    n=$((n + 1)); [ $n -le 300 ] || fail "PID $pid did not stop"
    sleep 0.1
  done
}
# Servers still running (a failure) are stopped; the status stays.
trap 'rc=$?; for p in $tmp/*.pid; do [ -f "$p" ] && { kill "$(cat "$p")" 2>/dev/null || true; }; done; exit $rc' EXIT

# nbdkit finds the plugin in its plugin directory by name; both daemons
# write their pidfile once they listen.
nbdkit -U $tmp/plugin.sock -P $tmp/plugin.pid zonednull size=64 zone_size=8 ||
  fail "nbdkit zonednull"
size=$(nbdinfo --size "nbd+unix:///?socket=$tmp/plugin.sock") || fail "nbdinfo on nbdkit zonednull"
[ "$size" = 67108864 ] || fail "nbdkit zonednull: size $size, want 67108864"
n=$(zonednull report "nbd+unix:///?socket=$tmp/plugin.sock" | grep -c 'start:') ||
  fail "zonednull report on nbdkit zonednull"
[ "$n" = 8 ] || fail "nbdkit zonednull: $n zones, want 8"
stop $tmp/plugin.pid
echo "in-chroot: nbdkit zonednull, nbdinfo, zonednull report: ok"

zonednull-server -U $tmp/server.sock -P $tmp/server.pid size=64 zone_size=8 zone_max_open=2 ||
  fail "zonednull-server"
uri="nbd+unix:///?socket=$tmp/server.sock"
zonednull report "$uri" >$tmp/report || fail "zonednull report on zonednull-server"
[ "$(grep -c 'start:' $tmp/report)" = 8 ] || fail "zonednull-server: $(cat $tmp/report)"

# fio, with the engine built for exactly this fio, writes two zones.
engine=$(dpkg -L fio-engine-zonednull | grep '/zonednull-fio\.so$')
fio --name=seq --ioengine="external:$engine" --uri="$uri" --filename=zn \
  --zonemode=zbd --rw=write --bs=128k --size=16m >$tmp/fio.log 2>&1 ||
  { cat $tmp/fio.log; fail "fio with $engine"; }
zonednull report -c 2 "$uri" >$tmp/report2
[ "$(grep -c 'zcond:14(fu)' $tmp/report2)" = 2 ] || fail "after fio, zones 0-1 are not full: $(cat $tmp/report2)"
echo "in-chroot: zonednull-server, fio-engine-zonednull: ok"

# A program on the library through pkg-config, as a user builds one.
cc -o $tmp/report-zones /usr/share/doc/libzonednull-client-dev/examples/report-zones.c \
  $(pkg-config --cflags --libs zonednull-client) || fail "cc report-zones.c with pkg-config"
$tmp/report-zones "$uri" >$tmp/rz || fail "report-zones"
[ "$(grep -c . $tmp/rz)" -ge 8 ] || fail "report-zones printed: $(cat $tmp/rz)"
stop $tmp/server.pid
echo "in-chroot: libzonednull-client-dev (pkg-config, cc, run): ok"

zonednull-ublk --version >/dev/null || fail "zonednull-ublk --version"

# The installed units, as instances, with the installed programs.
out=$(systemd-analyze verify zonednull-server@t.service zonednull-server@t.socket \
        zonednull-ublk@t.service 2>&1) || fail "systemd-analyze verify: $out"
[ -z "$out" ] || fail "systemd-analyze verify: $out"
echo "in-chroot: systemd-analyze verify of the units: ok"

# Configuration of the user's, which purging leaves.
mkdir -p /etc/zonednull
cp /usr/share/doc/zonednull-server/examples/example.conf /etc/zonednull/t.conf

# shellcheck disable=SC2086
apt-get purge -y -q $pkgs >$tmp/purge.log 2>&1 || { cat $tmp/purge.log; fail "apt-get purge"; }
snapshot >$tmp/after
left=$(dpkg -l | awk '$2 ~ /zonednull/ { print $1, $2 }')
[ -z "$left" ] || fail "dpkg still knows: $left"
new=$(comm -13 $tmp/before $tmp/after | grep -v '^/etc/zonednull\(/t\.conf\)\?$' || true)
[ -z "$new" ] || fail "files appeared: $new"
kept=$(comm -12 $tmp/owned $tmp/after | while read -r f; do
         [ -d "$f" ] || echo "$f"; done)
[ -z "$kept" ] || fail "purged but still there: $kept"
# /var/cache: man-db's formatted pages of the manuals verify opened.
stray=$(find / -xdev \( -path /proc -o -path /tmp -o -path /debs -o -path /etc/zonednull -o -path /var/cache \) \
          -prune -o -name '*zonednull*' -print)
[ -z "$stray" ] || fail "left after the purge: $stray"
echo "in-chroot: purged; left: $(comm -13 $tmp/before $tmp/after | tr '\n' ' ')"
