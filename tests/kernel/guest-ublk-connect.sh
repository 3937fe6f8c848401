#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
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
#                      answering) run against such servers; with
#                      /test/tls.psk, one on a Unix socket over TLS too.
#   ZN_CONNECT_TIMEOUT zonednull-ublk's --timeout for the failure checks
#                      (default 5 seconds).
#   ZN_DIFF_TIMEOUT    its --timeout for the differential (default 300
#                      seconds: a loaded TCG guest met the default 30).
#   ZN_CONNECT_BTRFS   0 to leave out the btrfs check (it needs
#                      mkfs.btrfs and the btrfs module).
# /test/params (from check-ublk.sh), when present: CONNECT_DIFF_k lines
# for the differential against null_blk (see differential below; it reads
# guest-ublk.sh's /out/ublk/NAME/ files), CONNECT_F2FS and CONNECT_BTRFS
# (ports of host zonednull-servers for f2fs and btrfs, results in
# /out/connect/ for the host to check).
# Needs zonednull-ublk, zonednull (the CLI), blkzone, dd, cmp and zntrace in
# PATH (or /usr/sbin), ublk_drv loaded.
# Prints "ok   - ..." or "FAIL - ..." per check and exits non-zero if any
# check failed.

PATH=$PATH:/usr/sbin:/sbin:/usr/bin
. /test/guest-lib.sh
fails=0 passes=0
check () { # check DESCRIPTION COMMAND...
  d=$1; shift
  if "$@"; then ok "$d"; else fail "$d"; fi
}
timeout_s=${ZN_CONNECT_TIMEOUT:-5}
# The differential's per-request timeout: a TCG guest on a loaded host
# can take a reply past the default 30 s, and one late reply fails the
# device for good without --reconnect, so it is far above any reply
# seen; the tier's own bound still ends a hung run.  (--reconnect would
# come through such a reply too, but the differential compares errnos
# with null_blk's, and a reconnection is checked on its own below.)
diff_timeout_s=${ZN_DIFF_TIMEOUT:-300}
work=/tmp/zn-connect
mkdir -p $work
# A daemon's messages after it goes to the background reach only syslog:
# kept in /out/ublk/syslog.txt, with the failed runs' files.
mkdir -p /out/ublk
busybox syslogd -O /out/ublk/syslog.txt 2>/dev/null || true
# daemon_said: its last lines there.
daemon_said () { grep 'zonednull-ublk' /out/ublk/syslog.txt 2>/dev/null | tail -n 2 | tr '\n' ' '; }
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

# ---- reconnection -----------------------------------------------------------
# rc_server NAME ARGS...: a guest-local zonednull-server on $work/NAME.sock;
# sets $spid.
rc_server () {
  n=$1; shift
  rm -f $work/$n.sock
  $ZN_CONNECT_SERVER -f -U $work/$n.sock "$@" >>$work/$n.out 2>&1 &
  spid=$!
  i=0; while [ ! -S $work/$n.sock ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
}
# start_dev_fg URI [OPTIONS]: start_dev in the foreground (-f), in the
# background, so that what it says after the start is in $work/ublk.err.
start_dev_fg () {
  u=$1; shift
  rm -f $work/pid $work/fg.out
  zonednull-ublk -f -P $work/pid --connect="$u" "$@" >$work/fg.out 2>$work/ublk.err &
  i=0
  while { [ ! -s $work/pid ] || [ ! -s $work/fg.out ]; } && [ -d /proc/$! ] &&
        [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
  pid=$(cat $work/pid 2>/dev/null)
  dev=$(cat $work/fg.out)
  [ -n "$pid" ] && [ -b "$dev" ]
}
# rc_writer: 32 MiB of $work/rc.data written 4 KiB at a time with O_DIRECT
# from sector 0 (zones of 16 MiB, the first conventional), in the
# background ($ddpid, output $work/dd.out).
rc_writer () {
  dd if=$work/rc.data of="$dev" bs=4k oflag=direct >$work/dd.out 2>&1 &
  ddpid=$!
}
# rc_wait BOUND: waits up to BOUND seconds for the writer; 0 if it ended.
rc_wait () {
  i=0
  while [ -d /proc/$ddpid ] && [ $i -lt $(($1 * 10)) ]; do sleep 0.1; i=$((i + 1)); done
  if [ -d /proc/$ddpid ]; then kill -KILL $ddpid; wait $ddpid 2>/dev/null; return 1; fi
  wait $ddpid
}
# rc_same: the device reads back what the writer wrote.
rc_same () {
  dd if="$dev" bs=1M count=32 iflag=direct 2>/dev/null | cmp -s - $work/rc.data
}

# reconnect KIND: with --reconnect, the server goes away during a write
# and the device must come through, or be lost as it should:
#   restart  SIGKILL, then a new server on the same backing_dir (the same
#            generation): the write completes, every byte in place;
#   late     SIGSTOP for longer than --timeout, then SIGCONT (the slow
#            reply that failed the differential for good): the same;
#   other    SIGKILL, then a new memory device on the same socket (another
#            generation): the writer gets EIO, the log says why;
#   gone     SIGKILL and nothing: EIO once the window closes.
reconnect () {
  kind=$1 dir=$work/rc-dir-$kind window=60
  [ $kind = gone ] && window=4
  rm -rf $dir $work/rc-$kind.out
  geo="size=256 zone_size=16 zone_nr_conv=1 memory_backed=1"
  extra=
  [ $kind = restart ] && extra="backing_dir=$dir"
  rc_server rc-$kind $geo $extra
  if ! start_dev_fg "nbd+unix:///?socket=$work/rc-$kind.sock" \
       --timeout=$timeout_s --reconnect=$window; then
    fail "reconnect $kind: zonednull-ublk --connect --reconnect starts: $(cat $work/ublk.err)"
    kill -KILL $spid; wait $spid 2>/dev/null
    return
  fi
  rc_writer
  sleep 2
  t0=$(now)
  case $kind in
  late)
    kill -STOP $spid
    sleep $((timeout_s + 3))
    kill -CONT $spid ;;
  *)
    kill -KILL $spid; wait $spid 2>/dev/null
    sleep 1
    [ $kind = restart ] && rc_server rc-$kind $geo $extra
    [ $kind = other ] && rc_server rc-$kind $geo ;;
  esac
  case $kind in
  restart|late)
    if rc_wait $((window + timeout_s + 10)); then
      ok "reconnect $kind: the writer completed, $(secs_since $t0) s after the loss"
    else
      fail "reconnect $kind: the writer failed or hung: $(cat $work/dd.out) / $(cat $work/ublk.err)"
    fi
    check "reconnect $kind: every byte written reads back" rc_same
    grep -q "reconnected to the same device" $work/ublk.err \
      && ok "reconnect $kind: the log says it reconnected" \
      || fail "reconnect $kind: no reconnection in the log: $(cat $work/ublk.err)"
    wp=$(zonednull report -o 32768 -c 1 "nbd+unix:///?socket=$work/rc-$kind.sock" 2>&1)
    echo "$wp" | grep -q "wptr 0x008000 .*zcond:14" \
      && ok "reconnect $kind: the server's second zone is full, written once" \
      || fail "reconnect $kind: the server's second zone: $wp" ;;
  other|gone)
    if rc_wait $((window + timeout_s + 10)); then
      fail "reconnect $kind: the writer succeeded on a device that was lost"
    else
      grep -q "Input/output error" $work/dd.out \
        && ok "reconnect $kind: the writer got EIO $(secs_since $t0) s after the loss" \
        || fail "reconnect $kind: the writer failed without EIO: $(cat $work/dd.out)"
    fi
    why="another device"
    [ $kind = gone ] && why="lost the server"
    grep -q "$why" $work/ublk.err \
      && ok "reconnect $kind: the log says '$why'" \
      || fail "reconnect $kind: the log lacks '$why': $(cat $work/ublk.err)"
    r=$(zntrace write "$dev" 0 4096 5)
    check "reconnect $kind: a new write fails at once with EIO ($r)" [ "$r" = "res=-5(EIO)" ] ;;
  esac
  check "reconnect $kind: SIGTERM stops and deletes $dev" stop_dev $((timeout_s + 10))
  kill -KILL $spid 2>/dev/null; wait $spid 2>/dev/null
}

# ---- taking over a device (ublk user recovery) -------------------------------
# kill_daemon: SIGKILL for the daemon of $dev; waits for it to be gone.
kill_daemon () {
  kill -KILL $pid
  i=0; while [ -d /proc/$pid ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
}
# take_over ARGS...: zonednull-ublk --recover=N ARGS..., the same path back.
take_over () {
  rm -f $work/pid
  d2=$(zonednull-ublk -P $work/pid --recover=${dev#/dev/ublkb} "$@" 2>$work/ublk.err)
  rc=$?
  pid=$(cat $work/pid 2>/dev/null)
  [ $rc -eq 0 ] && [ "$d2" = "$dev" ] && [ -n "$pid" ]
}

# takeover URI: a device started with --recovery loses its daemon to
# SIGKILL; a write sent meanwhile waits (the kernel holds it), and the
# daemon that takes over serves it and the data before it; what takes
# over must serve the same device.
takeover () {
  u=$1
  if ! start_dev "$u" --recovery; then
    fail "takeover: zonednull-ublk --recovery starts: $(cat $work/ublk.err)"
    return
  fi
  blkzone reset "$dev"
  dd if=/dev/urandom of=$work/to.data bs=1M count=2 2>/dev/null
  # Zone 1, the first sequential one, from its start (16 MiB).
  dd if=$work/to.data of="$dev" bs=1M seek=16 count=1 oflag=direct 2>$work/dd.out ||
    fail "takeover: the first write: $(cat $work/dd.out)"
  live=$pid
  take_over --connect="$u" \
    && fail "takeover: --recover of a device whose daemon runs was accepted" \
    || { grep -q "still running" $work/ublk.err \
           && ok "takeover: --recover of a live device is refused: $(cat $work/ublk.err)" \
           || fail "takeover: --recover of a live device: $(cat $work/ublk.err)"; }
  pid=$live
  kill_daemon
  check "takeover: $dev outlives its daemon" [ -b "$dev" ]
  dd if=$work/to.data of="$dev" bs=1M skip=1 seek=17 count=1 oflag=direct >$work/dd.out 2>&1 &
  ddpid=$!
  sleep 2
  check "takeover: a write without a daemon waits" [ -d /proc/$ddpid ]
  if take_over --connect="$u"; then
    ok "takeover: zonednull-ublk --recover takes $dev over"
  else
    fail "takeover: --recover: $(cat $work/ublk.err)"
    kill -KILL $ddpid 2>/dev/null
    return
  fi
  if rc_wait 30; then ok "takeover: the waiting write completed"
  else fail "takeover: the waiting write: $(cat $work/dd.out)"; fi
  dd if="$dev" bs=1M skip=16 count=2 iflag=direct 2>/dev/null | cmp -s - $work/to.data \
    && ok "takeover: both writes read back" || fail "takeover: the data differs"
  r=$(zntrace write "$dev" $(((18 << 20) + 4096)) 4096 6)
  check "takeover: errnos as before: a write off the pointer fails with EIO ($r)" [ "$r" = "res=-5(EIO)" ]
  check "takeover: SIGTERM stops and deletes $dev" stop_dev 10
}

# takeover_refusals: a server on another backing_dir (another device) is
# refused, naming the generation; the server on the device's own
# directory is taken; an in-process device whose zones die with it is
# refused --recovery.
takeover_refusals () {
  rm -rf $work/to-a $work/to-b
  rc_server to size=64 zone_size=8 memory_backed=1 backing_dir=$work/to-a
  u="nbd+unix:///?socket=$work/to.sock"
  if start_dev "$u" --recovery; then
    kill_daemon
    kill $spid; wait $spid 2>/dev/null
    rc_server to size=64 zone_size=8 memory_backed=1 backing_dir=$work/to-b
    take_over --connect="$u" \
      && fail "takeover: another device was taken for the same" \
      || { grep -q "generation" $work/ublk.err \
             && ok "takeover: another device is refused, naming its generation" \
             || fail "takeover: another device: $(cat $work/ublk.err)"; }
    kill $spid; wait $spid 2>/dev/null
    rc_server to size=64 zone_size=8 memory_backed=1 backing_dir=$work/to-a
    take_over --connect="$u" \
      && ok "takeover: the server restarted on the device's backing_dir is the same device" \
      || fail "takeover: the same backing_dir: $(cat $work/ublk.err)"
    check "takeover: SIGTERM stops and deletes $dev" stop_dev 10
    kill $spid; wait $spid 2>/dev/null
  else
    fail "takeover: --recovery starts: $(cat $work/ublk.err)"
  fi
  zonednull-ublk --recovery size=64 zone_size=8 memory_backed=1 >$work/mem.out 2>&1 \
    && fail "takeover: --recovery of an in-process memory device was accepted" \
    || { grep -q "die" $work/mem.out && ok "takeover: an in-process memory device is refused --recovery" \
           || fail "takeover: in-process memory --recovery: $(cat $work/mem.out)"; }
}

# takeover_btrfs: btrfs mounted on a --recovery device; its daemon is
# killed between two batches of files, the second written and synced
# while no daemon runs; the daemon that takes over lets the sync end, and
# every file is whole after a remount and btrfs check.
takeover_btrfs () {
  u=$1 m=/mnt/zn-takeover
  modprobe crc32c_generic 2>/dev/null; modprobe xxhash_generic 2>/dev/null
  modprobe blake2b_generic 2>/dev/null; modprobe btrfs 2>/dev/null
  if ! start_dev "$u" --recovery; then
    fail "takeover btrfs: --recovery starts: $(cat $work/ublk.err)"; return
  fi
  mkdir -p $m
  if ! timeout 300 mkfs.btrfs -f -q -O zoned -d single -m single "$dev" >$work/mkfs.out 2>&1 ||
     ! timeout 120 mount -t btrfs "$dev" $m 2>$work/mount.out; then
    fail "takeover btrfs: mkfs or mount: $(cat $work/mkfs.out $work/mount.out)"
    stop_dev 10; return
  fi
  for i in 1 2 3; do dd if=/dev/urandom of=$m/before$i bs=64k count=$((i * 8)) 2>/dev/null; done
  timeout 120 sync
  kill_daemon
  ( for i in 1 2 3; do dd if=/dev/urandom of=$m/after$i bs=64k count=$((i * 8)) 2>/dev/null; done
    sync ) >$work/dd.out 2>&1 &
  ddpid=$!
  sleep 3
  check "takeover btrfs: the sync waits while no daemon runs" [ -d /proc/$ddpid ]
  take_over --connect="$u" && ok "takeover btrfs: a new daemon takes $dev over under the mounted btrfs" ||
    fail "takeover btrfs: --recover: $(cat $work/ublk.err)"
  rc_wait 120 && ok "takeover btrfs: the sync ended" || fail "takeover btrfs: the sync: $(cat $work/dd.out)"
  (cd $m && sha256sum before* after*) >$work/to.sums
  timeout 120 umount $m || fail "takeover btrfs: umount"
  timeout 300 btrfs check "$dev" >$work/check.out 2>&1 \
    && ok "takeover btrfs: btrfs check finds no errors" \
    || fail "takeover btrfs: btrfs check: $(grep -iE 'error|corrupt|wrong' $work/check.out | head -n 3 | tr '\n' ' ')"
  if timeout 120 mount -t btrfs "$dev" $m 2>$work/mount.out; then
    (cd $m && sha256sum -c $work/to.sums) >$work/to.check 2>&1 \
      && ok "takeover btrfs: the 6 files read back after a remount" \
      || fail "takeover btrfs: $(grep -v ': OK' $work/to.check | head -n 3 | tr '\n' ' ')"
    timeout 120 umount $m
  else
    fail "takeover btrfs: remount: $(cat $work/mount.out)"
  fi
  check "takeover btrfs: SIGTERM stops and deletes $dev" stop_dev 10
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

# ---- the differential against null_blk, over --connect ------------------------
# /test/params lines CONNECT_DIFF_k="NAME SERVER NBDKIT" (check-ublk.sh): for
# configuration NAME of /test/traces.conf, the host's ports of a fresh
# zonednull-server and a fresh nbdkit zonednull with exactly its settings,
# or "runt" (the host starts none: ublk cannot expose a smaller last zone)
# or "refused" (the server did not start).  guest-ublk.sh left null_blk's
# trace and reports in /out/ublk/NAME/ (nullb.trace, nullb.fresh,
# nullb.after, nullb.sysfs; nullb.refused when null_blk refused).  The
# trace of zonednull-ublk --connect to each server with the same seed must
# equal null_blk's (the header's dev= aside), and so must the zone reports
# before and after it.  The queue attributes are compared and reported, not
# counted as failures (they come from the server's limits, not a trace).
d_configs=0 d_ops=0 d_skip=0 d_refused=0
d_server_traced=0 d_server_identical=0 d_nbdkit_traced=0 d_nbdkit_identical=0
d_attrs_differ=0
diff_attrs="zoned chunk_sectors nr_zones max_open_zones max_active_zones zone_append_max_bytes
  logical_block_size physical_block_size max_sectors_kb write_cache fua scheduler"
diff_one () { # diff_one NAME KIND PORT SEED NOPS
  dn=$1 kind=$2 port=$3 dseed=$4 dnops=$5
  dd_=/out/ublk/$dn p=/out/ublk/$dn/connect-$kind
  u=nbd://10.0.2.2:$port/
  if ! start_dev "$u" --timeout=$diff_timeout_s; then
    fail "$dn: zonednull-ublk --connect to the host's $kind ($u): $(cat $work/ublk.err)"
    cp $work/ublk.err "$p.ublk-err" 2>/dev/null
    : >"$dd_/FAILED"
    return
  fi
  b=${dev#/dev/}
  for a in $diff_attrs; do
    echo "$a $(cat "/sys/block/$b/queue/$a" 2>/dev/null || echo MISSING)"
  done >"$p.sysfs"
  blkzone report "$dev" 2>&1 | sed "s|$b||g" >"$p.fresh"
  zntrace trace "$dev" "$dseed" "$dnops" >"$p.raw" 2>"$p.trace-err"
  trc=$?
  sed '1s| dev=[^ ]*||' "$p.raw" >"$p.trace"
  blkzone report "$dev" 2>&1 | sed "s|$b||g" >"$p.after"
  stop_dev 10 || fail "$dn: $kind: SIGTERM did not stop and delete $dev within 10 s"
  cp $work/ublk.err "$p.ublk-err" 2>/dev/null
  eval "d_${kind}_traced=\$((d_${kind}_traced + 1))"
  same=1
  if [ $trc -ne 0 ]; then
    fail "$dn: $kind: zntrace on $dev exited $trc: $(cat "$p.trace-err");" \
      "zonednull-ublk said: $(tail -n 3 "$p.ublk-err" 2>/dev/null | tr '\n' ' ')$(daemon_said)"; same=
  fi
  for w in fresh:"fresh zone reports" trace:traces after:"zone reports after the trace"; do
    f=${w%%:*}
    if ! cmp -s "$dd_/nullb.$f" "$p.$f"; then
      fail "$dn: $kind: ${w#*:} differ (null_blk, --connect to the host's $kind):"
      first_diff "$dd_/nullb.$f" "$p.$f" connect
      same=
    fi
  done
  if ! cmp -s "$dd_/nullb.sysfs" "$p.sysfs"; then
    d_attrs_differ=$((d_attrs_differ + 1))
    echo "# $dn: $kind: queue attributes differ from null_blk's (not counted as a failure):" \
      "$(diff "$dd_/nullb.sysfs" "$p.sysfs" 2>/dev/null | grep '^[<>]' | tr '\n' ' ')"
  fi
  if [ -n "$same" ]; then
    eval "d_${kind}_identical=\$((d_${kind}_identical + 1))"
    ok "$dn: --connect to the host's $kind: identical to null_blk: $(wc -l <"$p.trace" | tr -d ' ') trace lines, zone reports"
  else
    : >"$dd_/FAILED"
  fi
}
differential () {
  grep -q '^CONNECT_DIFF_' /test/params 2>/dev/null || return 0
  echo "# the differential against null_blk over --connect"
  dt0=$(now)
  sed -n 's/^CONNECT_DIFF_[0-9]*="\(.*\)"$/\1/p' /test/params >$work/diff.list
  while read -r dn sport kport; do
    line=$(grep "^$dn " /test/traces.conf)
    set -- $line
    dseed=$2 dnops=$3
    d_configs=$((d_configs + 1))
    if [ "$sport" = runt ]; then
      echo "# $dn: a smaller last zone: no servers (ublk cannot expose it)"; d_skip=$((d_skip + 1)); continue
    fi
    if [ -f "/out/ublk/$dn/nullb.refused" ]; then
      if [ "$sport" = refused ] && [ "$kport" = refused ]; then
        d_refused=$((d_refused + 1))
        ok "$dn: null_blk ($(cat "/out/ublk/$dn/nullb.refused")) and both host servers refuse the configuration"
      else
        fail "$dn: null_blk refuses ($(cat "/out/ublk/$dn/nullb.refused")), the host's servers: zonednull-server $sport, nbdkit $kport"
      fi
      continue
    fi
    if [ ! -f "/out/ublk/$dn/nullb.trace" ]; then
      echo "# $dn: no null_blk trace (see guest-ublk.sh's lines): nothing to compare"; d_skip=$((d_skip + 1)); continue
    fi
    d_ops=$((d_ops + dnops))
    for kp in server:$sport nbdkit:$kport; do
      if [ "${kp#*:}" = refused ]; then
        fail "$dn: null_blk accepts the configuration, the host's ${kp%%:*} refused it (host log: ${kp%%:*}-$dn.err)"
        : >"/out/ublk/$dn/FAILED"
      else
        diff_one "$dn" "${kp%%:*}" "${kp#*:}" "$dseed" "$dnops"
      fi
    done
  done <$work/diff.list
  echo "# differential over --connect: configurations $d_configs, compared $((d_configs - d_skip - d_refused))," \
    "ops per trace $dnops (${d_ops} per server kind), zonednull-server identical $d_server_identical of $d_server_traced," \
    "nbdkit identical $d_nbdkit_identical of $d_nbdkit_traced, refused by all $d_refused, skipped $d_skip; $(secs_since $dt0) s"
  echo "connect-counts: configs=$d_configs compared=$((d_configs - d_skip - d_refused)) ops=$d_ops" \
    "server_traced=$d_server_traced server_identical=$d_server_identical" \
    "nbdkit_traced=$d_nbdkit_traced nbdkit_identical=$d_nbdkit_identical" \
    "refused=$d_refused skipped=$d_skip attrs_differ=$d_attrs_differ"
}

# ---- two devices on one export -------------------------------------------------
# two_devices URI: two zonednull-ublk --connect devices on the same export;
# what one writes the other's report shows and its O_DIRECT reads return,
# both ways, and zone operations through one are seen through the other.
zone_line () { blkzone report -o "$2" -c 1 "$1" 2>&1; }
zone_wp () { zone_line "$1" "$2" | sed -n 's/.*wptr 0x\([0-9a-f]*\).*/\1/p'; }
zone_cond () { zone_line "$1" "$2" | sed -n 's/.*zcond: *\([0-9]*\).*/\1/p'; }
two_devices () {
  u=$1
  echo "# two devices on $u"
  if ! start_dev "$u"; then fail "two devices on $u: the first: $(cat $work/ublk.err)"; return; fi
  da=$dev pa=$pid
  if ! start_dev "$u"; then
    fail "two devices on $u: the second: $(cat $work/ublk.err)"
    dev=$da pid=$pa; stop_dev 10; return
  fi
  db=$dev pb=$pid
  ok "two devices on $u: $da and $db"
  blkzone reset "$da"
  zs=$(cat /sys/block/${da#/dev/}/queue/chunk_sectors)
  s0=$(blkzone report "$db" | sed -n '/SEQ_WRITE_REQUIRED/{s/.*start: \(0x[0-9a-f]*\),.*/\1/p;q}')
  s0=$(hex2dec "$s0") z1=$((s0 + zs))
  dd if=/dev/urandom of=$work/two.a bs=64k count=2 2>/dev/null
  dd if=/dev/urandom of=$work/two.b bs=64k count=1 2>/dev/null
  cat $work/two.a $work/two.b >$work/two.ab
  dd if=$work/two.a of="$da" bs=64k seek=$((s0 / 128)) oflag=direct conv=notrunc 2>$work/dd.err ||
    fail "two devices: 128 KiB written through $da at sector $s0: $(cat $work/dd.err)"
  w=$(zone_wp "$db" $s0)
  check "two devices: $db's report shows the write pointer $da left (wptr 0x$w, want 0x000100)" \
    [ "$w" = 000100 ]
  dd if="$db" bs=64k skip=$((s0 / 128)) count=2 iflag=direct 2>/dev/null | cmp -s - $work/two.a &&
    ok "two devices: $db reads (O_DIRECT) the 128 KiB written through $da" ||
    fail "two devices: $db reads other data than $da wrote"
  dd if=$work/two.b of="$db" bs=64k seek=$((s0 / 128 + 2)) oflag=direct conv=notrunc 2>$work/dd.err &&
    ok "two devices: $db writes 64 KiB at the write pointer $da left" ||
    fail "two devices: $db's write at the write pointer $da left: $(cat $work/dd.err)"
  w=$(zone_wp "$da" $s0)
  check "two devices: $da's report shows the write pointer $db left (wptr 0x$w, want 0x000180)" \
    [ "$w" = 000180 ]
  dd if="$da" bs=64k skip=$((s0 / 128)) count=3 iflag=direct 2>/dev/null | cmp -s - $work/two.ab &&
    ok "two devices: $da reads (O_DIRECT) both devices' 192 KiB" ||
    fail "two devices: $da reads other data than the two wrote"
  blkzone finish -o $z1 -c 1 "$db"
  c=$(zone_cond "$da" $z1)
  check "two devices: a zone finished through $db is FULL in $da's report (zcond $c)" [ "$c" = 14 ]
  blkzone reset -o $s0 -c 2 "$da"
  c=$(zone_cond "$db" $s0)/$(zone_cond "$db" $z1)
  check "two devices: zones reset through $da are EMPTY in $db's report (zcond $c)" [ "$c" = 1/1 ]
  check "two devices: SIGTERM stops and deletes $db" stop_dev 10
  dev=$da pid=$pa
  check "two devices: SIGTERM stops and deletes $da" stop_dev 10
}

# ---- f2fs and btrfs on host servers, checked by the host afterwards ------------
# fs_connect LABEL FS PORT: mkfs, mount, files, sync, umount, fsck, mount,
# checksums, umount on zonednull-ublk --connect to the host's
# zonednull-server at PORT.  Leaves in /out/connect/: LABEL.sums (the
# files' checksums), LABEL.report (the last blkzone report) and
# LABEL.ranges ("START SECTORS SHA256" of [start, wp) of every non-empty
# sequential zone, of every conventional zone whole), which check-ublk.sh
# compares with the server's report and reads back through libnbd.
fs_connect () {
  label=$1 fs=$2 port=$3
  u=nbd://10.0.2.2:$port/
  o=/out/connect
  mkdir -p $o /mnt/znfs
  if ! start_dev "$u"; then fail "$label: zonednull-ublk --connect $u: $(cat $work/ublk.err)"; return; fi
  t0=$(now)
  if [ "$fs" = f2fs ]; then
    modprobe crc32_generic 2>/dev/null; modprobe f2fs 2>/dev/null
    timeout 300 mkfs.f2fs -f -m "$dev" >$o/$label-mkfs.log 2>&1; rc=$?
  else
    modprobe crc32c_generic 2>/dev/null; modprobe xxhash_generic 2>/dev/null
    modprobe blake2b_generic 2>/dev/null; modprobe btrfs 2>/dev/null
    timeout 300 mkfs.btrfs -f -O zoned -m single -d single "$dev" >$o/$label-mkfs.log 2>&1; rc=$?
  fi
  if [ $rc -ne 0 ]; then
    fail "$label: mkfs on $dev exited $rc: $(grep -iE 'error|not|fail' $o/$label-mkfs.log | head -n 3 | tr '\n' ' ')"
    stop_dev 10; return
  fi
  ok "$label: mkfs on $dev (--connect $u)"
  if ! timeout 120 mount -t $fs "$dev" /mnt/znfs 2>$o/$label-mount.log; then
    fail "$label: mount: $(cat $o/$label-mount.log) $(dmesg | grep -i $fs | tail -n 3 | tr '\n' ' ')"
    stop_dev 10; return
  fi
  mkdir -p /mnt/znfs/a/b /mnt/znfs/c
  wr=0 i=0
  for kb in 4 12 64 100 1024 3000; do
    dd if=/dev/urandom of=/mnt/znfs/a/f$i bs=1024 count=$kb 2>/dev/null || wr=1
    i=$((i + 1))
  done
  for i in 1 2 3 4 5; do echo "small file $i" >/mnt/znfs/a/b/s$i || wr=1; done
  dd if=/dev/urandom of=/mnt/znfs/c/big bs=1048576 count=6 2>/dev/null || wr=1
  dd if=/dev/urandom of=/mnt/znfs/a/f3 bs=4096 count=2 seek=3 conv=notrunc 2>/dev/null || wr=1
  cat /mnt/znfs/a/f0 >>/mnt/znfs/a/f4 || wr=1
  rm -f /mnt/znfs/a/f1
  (cd /mnt/znfs && find . -type f | sort | xargs sha256sum) >$o/$label.sums || wr=1
  timeout 120 sync || wr=1
  [ $wr = 0 ] && ok "$label: $(wc -l <$o/$label.sums | tr -d ' ') files written and synced" ||
    fail "$label: writing the files failed: $(dmesg | tail -n 3 | tr '\n' ' ')"
  timeout 120 umount /mnt/znfs || fail "$label: umount"
  if [ "$fs" = f2fs ]; then timeout 300 fsck.f2fs -f "$dev" >$o/$label-fsck.log 2>&1; rc=$?
  else timeout 300 btrfs check "$dev" >$o/$label-fsck.log 2>&1; rc=$?; fi
  [ $rc = 0 ] && ok "$label: $( [ "$fs" = f2fs ] && echo fsck.f2fs -f || echo btrfs check ) finds no errors" ||
    fail "$label: fsck exited $rc: $(grep -iE 'error|fail|corrupt|wrong|invalid' $o/$label-fsck.log | head -n 3 | tr '\n' ' ')"
  if timeout 120 mount -t $fs "$dev" /mnt/znfs 2>>$o/$label-mount.log; then
    (cd /mnt/znfs && sha256sum -c $o/$label.sums) >$o/$label.sums.check 2>&1 &&
      ok "$label: after remount every checksum matches" ||
      fail "$label: checksums differ after remount: $(grep -v ': OK' $o/$label.sums.check | head -n 3 | tr '\n' ' ')"
    timeout 120 umount /mnt/znfs || fail "$label: second umount"
  else
    fail "$label: second mount: $(tail -n 2 $o/$label-mount.log)"
  fi
  blkzone report "$dev" >$o/$label.report 2>&1
  # START SECTORS TYPE per zone with data: conventional zones whole, a
  # sequential zone from its start to its write pointer.
  awk '{
    s = $0; sub(/.*start: 0x/, "", s); sub(/,.*/, "", s)
    l = $0; sub(/.*len 0x/, "", l); sub(/,.*/, "", l)
    w = $0; sub(/.*wptr 0x/, "", w); sub(/ .*/, "", w)
    c = $0; sub(/.*zcond: */, "", c); sub(/\(.*/, "", c)
    S = 0; L = 0; W = 0
    for (i = 1; i <= length(s); i++) S = S * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
    for (i = 1; i <= length(l); i++) L = L * 16 + index("0123456789abcdef", substr(l, i, 1)) - 1
    for (i = 1; i <= length(w); i++) W = W * 16 + index("0123456789abcdef", substr(w, i, 1)) - 1
    if (c == 0) printf "%d %d\n", S, L
    else if (c != 1 && W > 0) printf "%d %d\n", S, W
  }' $o/$label.report >$work/ranges
  : >$o/$label.ranges
  while read -r rs rn; do
    if [ $((rs % 8)) -eq 0 ] && [ $((rn % 8)) -eq 0 ]; then
      h=$(dd if="$dev" bs=4096 skip=$((rs / 8)) count=$((rn / 8)) iflag=direct 2>/dev/null | sha256sum | cut -d' ' -f1)
    else
      h=$(dd if="$dev" bs=512 skip=$rs count=$rn iflag=direct 2>/dev/null | sha256sum | cut -d' ' -f1)
    fi
    echo "$rs $rn $h" >>$o/$label.ranges
  done <$work/ranges
  echo "# $label: $(wc -l <$o/$label.ranges | tr -d ' ') zones with data, $(awk '{n += $2} END {print n / 2048}' $o/$label.ranges) MiB checksummed for the host; $(secs_since $t0) s"
  stop_dev 10 || fail "$label: SIGTERM did not stop and delete $dev"
}
fs_on_host () {
  for fsp in f2fs:${CONNECT_F2FS:-} btrfs:${CONNECT_BTRFS:-}; do
    fs=${fsp%%:*} port=${fsp#*:}
    [ -n "$port" ] || continue
    if ! command -v mkfs.$fs >/dev/null || { [ $fs = f2fs ] && ! command -v fsck.f2fs >/dev/null; } ||
       { [ $fs = btrfs ] && ! command -v btrfs >/dev/null; }; then
      echo "# SKIP: $fs over --connect: no mkfs.$fs/fsck tools in this guest (they come with the zoned consumers' cpio)"
      mkdir -p /out/connect; echo "no tools" >/out/connect/host-$fs.skipped
      continue
    fi
    fs_connect host-$fs $fs "$port"
  done
}

[ -e /dev/ublk-control ] || { fail "no /dev/ublk-control (modprobe ublk_drv)"; exit 1; }
[ -f /test/params ] && . /test/params
differential
set -- $ZN_CONNECT_URIS
ct0=$(now)
for u in "$@"; do two_devices "$u"; done
echo "# two devices: $(secs_since $ct0) s"
fs_on_host
ct0=$(now)
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
  uris="$uris nbd+unix:///?socket=$work/s.sock nbd://127.0.0.1:10899/"
  # And over TLS on a Unix socket, with the host's key file.
  if [ -f /test/tls.psk ]; then
    rm -f $work/t.sock
    $ZN_CONNECT_SERVER -f -U $work/t.sock --tls=require --tls-psk=/test/tls.psk \
      size=512 zone_size=16 zone_max_open=4 memory_backed=1 >$work/s3.out 2>&1 &
    spids="$spids $!"
    uris="$uris nbds+unix://zonednull@/?socket=$work/t.sock&tls-psk-file=/test/tls.psk"
  fi
  sleep 1
fi
for u in $uris; do checks "$u"; done
if [ -n "${ZN_CONNECT_SERVER:-}" ]; then
  failure KILL
  failure STOP
  idle_stop
  dd if=/dev/urandom of=$work/rc.data bs=1M count=32 2>/dev/null
  for k in restart late other gone; do reconnect $k; done
  rm -f $work/rc.data
  rc_server takeover size=256 zone_size=16 zone_nr_conv=1 memory_backed=1
  takeover "nbd+unix:///?socket=$work/takeover.sock"
  if [ "${ZN_CONNECT_BTRFS:-1}" != 0 ] && command -v mkfs.btrfs >/dev/null; then
    takeover_btrfs "nbd+unix:///?socket=$work/takeover.sock"
  else
    echo "# takeover btrfs: skipped (no mkfs.btrfs, or ZN_CONNECT_BTRFS=0)"
  fi
  kill $spid; wait $spid 2>/dev/null
  takeover_refusals
  for p in $spids; do kill $p; wait $p 2>/dev/null; done
fi
echo "# the checks per server, failures: $(secs_since $ct0) s"
echo "# guest-ublk-connect: $passes passed, $fails failed"
[ $fails -eq 0 ]
