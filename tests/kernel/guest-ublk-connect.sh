#!/bin/sh
# Guest (6.12 tier): zonednull-ublk --connect, a zoned /dev/ublkbN whose
# zones live on a zonednull server.  POSIX sh (busybox).
#
# Environment:
#   ZN_CONNECT_URIS    libnbd URIs of running zonednull servers, separated
#                      by spaces (e.g. "nbd://10.0.2.2:10809/
#                      nbd://10.0.2.2:10810/" for a zonednull-server and an
#                      nbdkit zonednull on the host).  Each device must have
#                      at least 4 sequential zones and be memory-backed.
#                      Its zones are reset by the checks.
#   ZN_CONNECT_SERVER  a zonednull-server binary in the guest (optional):
#                      then the checks also run against one started here
#                      on a Unix socket and on 127.0.0.1, and the failure
#                      checks (server killed mid-write, server stopped
#                      answering) run against such servers.
#   ZN_CONNECT_TIMEOUT zonednull-ublk's --timeout for the failure checks
#                      (default 5 seconds).
#   ZN_CONNECT_BTRFS   0 to leave out the btrfs check (it needs
#                      mkfs.btrfs and the btrfs module).
# Needs zonednull-ublk, zonednull (the CLI), blkzone, dd, cmp and zntrace in
# PATH (or /usr/sbin), ublk_drv loaded.
# Prints "ok   - ..." or "FAIL - ..." per check and exits non-zero if any
# check failed.

PATH=$PATH:/usr/sbin:/sbin:/usr/bin
fails=0 passes=0
ok () { echo "ok   - $*"; passes=$((passes + 1)); }
fail () { echo "FAIL - $*"; fails=$((fails + 1)); }
check () { # check DESCRIPTION COMMAND...
  d=$1; shift
  if "$@"; then ok "$d"; else fail "$d"; fi
}
timeout_s=${ZN_CONNECT_TIMEOUT:-5}
work=/tmp/zn-connect
mkdir -p $work
now () { cut -d' ' -f1 /proc/uptime; }
# secs_since T0: whole seconds elapsed since uptime T0.
secs_since () { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%d", b - a + 0.999 }'; }

# start_dev URI [OPTIONS]: starts zonednull-ublk --connect, sets $dev, $pid.
start_dev () {
  u=$1; shift
  rm -f $work/pid
  dev=$(zonednull-ublk -P $work/pid --connect="$u" "$@" 2>$work/ublk.err)
  rc=$?
  pid=$(cat $work/pid 2>/dev/null)
  [ $rc -eq 0 ] && [ -b "$dev" ] && [ -n "$pid" ]
}
# stop_dev BOUND: SIGTERM, then the process and the disk must be gone
# within BOUND seconds.
stop_dev () {
  b=${dev#/dev/}
  kill "$pid" 2>/dev/null
  i=0
  while [ $i -lt $(($1 * 10)) ]; do
    [ -d /proc/$pid ] || [ -e /sys/block/$b ] || return 0
    [ -d /proc/$pid ] || break
    sleep 0.1; i=$((i + 1))
  done
  ! [ -d /proc/$pid ] && ! [ -e /sys/block/$b ]
}
attr () { cat /sys/block/${dev#/dev/}/queue/$1; }

hex2dec () { printf '%d' "$1"; }
same_reports () { # same_reports URI: blkzone report of $dev = zonednull report URI
  blkzone report "$dev" >$work/k.rep 2>&1
  zonednull report "$1" >$work/s.rep 2>&1
  cmp -s $work/k.rep $work/s.rep
}

# ---- the checks against one server ----------------------------------------
checks () {
  u=$1
  echo "# $u"
  if ! start_dev "$u"; then
    fail "$u: zonednull-ublk --connect starts: $(cat $work/ublk.err)"
    return
  fi
  ok "$u: zonednull-ublk --connect gives $dev"
  zonednull info "$u" >$work/info 2>&1
  zs=$(attr chunk_sectors)
  check "$u: the device is zoned host-managed" [ "$(attr zoned)" = host-managed ]
  blkzone reset "$dev"
  check "$u: blkzone report of $dev equals zonednull report of the server" same_reports "$u"
  check "$u: nr_zones $(attr nr_zones) = the server's zones" \
    [ "$(attr nr_zones)" = "$(wc -l <$work/s.rep | tr -d ' ')" ]
  bs=$(attr logical_block_size)
  grep -i "block" $work/info | grep -q "$bs" \
    && ok "$u: logical_block_size $bs is the server's" \
    || fail "$u: logical_block_size $bs is not in zonednull info: $(grep -i block $work/info)"

  # Find the sequential zones.
  s0=$(sed -n '/SEQ_WRITE_REQUIRED/{s/.*start: \(0x[0-9a-f]*\),.*/\1/p;q}' $work/k.rep)
  s0=$(hex2dec "$s0")
  z1=$((s0 + zs)) z2=$((s0 + 2 * zs)) z3=$((s0 + 3 * zs))

  # Data at the write pointer, read back.
  dd if=/dev/urandom of=$work/d bs=64k count=4 2>/dev/null
  dd if=$work/d of="$dev" bs=64k seek=$((s0 / 128)) oflag=direct conv=notrunc 2>$work/dd.err \
    && ok "$u: O_DIRECT write of 256 KiB at the write pointer" \
    || fail "$u: O_DIRECT write at the write pointer: $(cat $work/dd.err)"
  dd if="$dev" bs=64k skip=$((s0 / 128)) count=4 iflag=direct 2>/dev/null | cmp -s - $work/d \
    && ok "$u: it reads back" || fail "$u: it does not read back"
  zonednull report -o $s0 -c 1 "$u" | grep -q "wptr 0x000200" \
    && ok "$u: the server's write pointer moved by 512 sectors" \
    || fail "$u: the server's write pointer: $(zonednull report -o $s0 -c 1 "$u")"

  # Errnos as null_blk gives them.
  r=$(zntrace write "$dev" $(((s0 + 2048) * 512)) 4096 1)
  check "$u: a write off the write pointer fails with EIO ($r)" [ "$r" = "res=-5(EIO)" ]
  r=$(zntrace write "$dev" $((z1 * 512)) 4096 2)
  check "$u: a write at the write pointer of an empty zone works ($r)" [ "$r" = "res=0" ]
  mo=$(attr max_open_zones)
  if [ "$mo" -gt 0 ] && [ $(((mo + 2) * zs)) -le $(( $(attr nr_zones) * zs - s0 )) ]; then
    blkzone reset "$dev"
    i=0
    while [ $i -lt "$mo" ]; do
      blkzone open -o $((s0 + i * zs)) -c 1 "$dev"; i=$((i + 1))
    done
    r=$(zntrace write "$dev" $(((s0 + mo * zs) * 512)) 4096 3)
    check "$u: over the open limit ($mo) a write fails with ETOOMANYREFS ($r)" \
      [ "$r" = "res=-109(ETOOMANYREFS)" ]
    blkzone open -o $((s0 + mo * zs)) -c 1 "$dev" 2>$work/open.err
    grep -q "Too many references" $work/open.err \
      && ok "$u: so does an explicit open" \
      || fail "$u: an explicit open over the limit: $(cat $work/open.err)"
  else
    echo "# $u: no open limit (or too few zones): the ETOOMANYREFS checks are left out"
  fi
  blkzone finish -o $z2 -c 1 "$dev"
  r=$(zntrace write "$dev" $((z2 * 512)) 4096 4)
  check "$u: a write to a FULL zone fails with EIO ($r)" [ "$r" = "res=-5(EIO)" ]
  blkzone reset "$dev"
  check "$u: after the zone operations the reports agree" same_reports "$u"

  # btrfs writes its data with zone append.
  ma=$(attr max_active_zones)
  if [ "$ma" -gt 0 ] && [ "$ma" -lt 8 ]; then
    echo "# $u: max_active_zones $ma: btrfs needs 8 active zones, the btrfs check is left out"
  elif [ "${ZN_CONNECT_BTRFS:-1}" != 0 ] && command -v mkfs.btrfs >/dev/null; then
    mkdir -p /mnt/znc
    if mkfs.btrfs -f -q -O zoned -d single -m single "$dev" >$work/mkfs.out 2>&1 \
        && mount -t btrfs "$dev" /mnt/znc 2>$work/mount.err; then
      dd if=/dev/urandom of=$work/f bs=64k count=64 2>/dev/null
      cp $work/f /mnt/znc/f && sync
      umount /mnt/znc
      mount -t btrfs "$dev" /mnt/znc 2>>$work/mount.err \
        && cmp -s /mnt/znc/f $work/f \
        && ok "$u: btrfs: mkfs, mount, 4 MiB written, umount, mount again, the file reads back" \
        || fail "$u: btrfs: the file after a remount: $(cat $work/mount.err)"
      umount /mnt/znc 2>/dev/null
      check "$u: after btrfs the reports agree" same_reports "$u"
    else
      fail "$u: btrfs: $(cat $work/mkfs.out $work/mount.err 2>/dev/null | tail -3) $(dmesg | grep -i btrfs | tail -2)"
    fi
    blkzone reset "$dev"
  fi

  t0=$(now)
  check "$u: SIGTERM stops and deletes $dev" stop_dev 10
  echo "# $u: stopped in $(secs_since $t0) s"
}

# ---- a server that goes away ----------------------------------------------
# failure SIGNAL: a guest-local zonednull-server gets SIGNAL (KILL: it is
# gone; STOP: it stops answering) during a sequential write.
failure () {
  sig=$1
  sock=$work/f-$sig.sock
  rm -f $sock
  $ZN_CONNECT_SERVER -f -U $sock size=256 zone_size=16 memory_backed=1 \
    >$work/fs.out 2>&1 &
  spid=$!
  i=0; while [ ! -S $sock ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
  u="nbd+unix:///?socket=$sock"
  if ! start_dev "$u" --timeout=$timeout_s; then
    fail "SIG$sig: zonednull-ublk --connect starts: $(cat $work/ublk.err)"
    kill -KILL $spid; wait $spid 2>/dev/null
    return
  fi
  # 64 MiB, 4 KiB at a time, across the zones.
  dd if=/dev/zero of="$dev" bs=4k count=16384 oflag=direct >$work/dd.out 2>&1 &
  ddpid=$!
  sleep 1
  kill -$sig $spid
  t0=$(now)
  i=0 bound=$((timeout_s + 5))
  while [ -d /proc/$ddpid ] && [ $i -lt $((bound * 10)) ]; do sleep 0.1; i=$((i + 1)); done
  el=$(secs_since $t0)
  if [ -d /proc/$ddpid ]; then
    fail "SIG$sig: the writer still waits $bound s after the server's SIG$sig"
    kill -KILL $ddpid
  else
    grep -q "Input/output error" $work/dd.out \
      && ok "SIG$sig: the writer got EIO $el s after the server's SIG$sig (bound $bound s)" \
      || fail "SIG$sig: the writer ended without EIO: $(cat $work/dd.out)"
  fi
  wait $ddpid 2>/dev/null
  r=$(zntrace write "$dev" 0 4096 5)
  check "SIG$sig: a new write fails at once with EIO ($r)" [ "$r" = "res=-5(EIO)" ]
  t0=$(now)
  check "SIG$sig: SIGTERM still stops and deletes $dev" stop_dev $((timeout_s + 10))
  echo "# SIG$sig: stopped in $(secs_since $t0) s"
  grep -q "lost the server" $work/ublk.err 2>/dev/null || true
  kill -KILL $spid 2>/dev/null; wait $spid 2>/dev/null
}

# idle_stop: the server stops answering while nothing is in flight; SIGTERM
# must still delete the device (nothing waits for the server's goodbye).
idle_stop () {
  sock=$work/f-idle.sock
  rm -f $sock
  $ZN_CONNECT_SERVER -f -U $sock size=64 zone_size=8 memory_backed=1 >$work/fs.out 2>&1 &
  spid=$!
  i=0; while [ ! -S $sock ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
  if start_dev "nbd+unix:///?socket=$sock" --timeout=$timeout_s; then
    kill -STOP $spid
    t0=$(now)
    check "idle SIGSTOP: SIGTERM stops and deletes $dev" stop_dev $((timeout_s + 5))
    echo "# idle SIGSTOP: stopped in $(secs_since $t0) s"
  else
    fail "idle SIGSTOP: zonednull-ublk --connect starts: $(cat $work/ublk.err)"
  fi
  kill -KILL $spid 2>/dev/null; wait $spid 2>/dev/null
}

# ---- refusals ---------------------------------------------------------------
refusals () {
  zonednull-ublk --connect='nbd+unix:///?socket=/nonexistent.sock' >/dev/null 2>$work/r.err
  rc=$?
  [ $rc -ne 0 ] && grep -q "nonexistent.sock.*No such file" $work/r.err \
    && ok "an unreachable server is refused, naming the cause" \
    || fail "an unreachable server: rc=$rc $(cat $work/r.err)"
  zonednull-ublk --connect='nbdx://host/' >/dev/null 2>$work/r.err
  rc=$?
  [ $rc -ne 0 ] && grep -q "unknown NBD URI scheme" $work/r.err \
    && ok "a bad URI is refused, naming the cause" \
    || fail "a bad URI: rc=$rc $(cat $work/r.err)"
  set -- $ZN_CONNECT_URIS
  if [ $# -gt 0 ]; then
    zonednull-ublk --connect="$1" size=64 >/dev/null 2>$work/r.err
    rc=$?
    [ $rc -ne 0 ] && grep -q "^zonednull-ublk: size: " $work/r.err \
      && ok "KEY=VALUE with --connect is refused, naming the key" \
      || fail "KEY=VALUE with --connect: rc=$rc $(cat $work/r.err)"
  fi
}

[ -e /dev/ublk-control ] || { fail "no /dev/ublk-control (modprobe ublk_drv)"; exit 1; }
refusals
# 127.0.0.1 for the local TCP server.
ifconfig lo 127.0.0.1 up 2>/dev/null || ip link set lo up 2>/dev/null
uris=$ZN_CONNECT_URIS
spids=
if [ -n "${ZN_CONNECT_SERVER:-}" ]; then
  rm -f $work/s.sock
  $ZN_CONNECT_SERVER -f -U $work/s.sock size=512 zone_size=16 zone_nr_conv=2 \
    zone_max_open=4 zone_max_active=6 memory_backed=1 >$work/s1.out 2>&1 &
  spids="$spids $!"
  $ZN_CONNECT_SERVER -f -i 127.0.0.1 -p 10899 size=512 zone_size=32 \
    zone_max_open=3 memory_backed=1 cache_size=32 >$work/s2.out 2>&1 &
  spids="$spids $!"
  sleep 1
  uris="$uris nbd+unix:///?socket=$work/s.sock nbd://127.0.0.1:10899/"
fi
for u in $uris; do checks "$u"; done
if [ -n "${ZN_CONNECT_SERVER:-}" ]; then
  failure KILL
  failure STOP
  idle_stop
  for p in $spids; do kill $p; wait $p 2>/dev/null; done
fi
echo "# guest-ublk-connect: $passes passed, $fails failed"
[ $fails -eq 0 ]
