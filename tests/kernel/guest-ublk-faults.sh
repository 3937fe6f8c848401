#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# guest-ublk-faults.sh (6.12 tier, after guest-ublk.sh loaded ublk_drv):
# failures on demand on zonednull-ublk's in-process device, as the stock
# host hands them to an application.  Fault rules given at start:
#  - an error before the write (ENOSPC) reaches the application as is,
#    then the host's zone write plug refuses the zone until a zone report;
#  - an error after the write landed (EIO): the data and the write pointer
#    there, and the plug, which advanced with it, takes the next write;
#  - a read that times out is never answered while another read is, and
#    stopping the daemon fails it (EIO), so that the device can stop and
#    the reader return;
#  - a zone reset held by a delay answers no sooner;
#  - requeue= (null_blk's): the requests it requeues are served in the
#    end, the host sees nothing;
#  - a rule added at run time through the control socket (zonednull
#    fault add) fails the write it names, and fault list counts it.
# Then a write that times out is aborted by the driver when its daemon
# dies, and a daemon started with --recover serves the device again.
# Then fio --zonemode=zbd meets write errors (with the consumers): Debian
# 12's fio stops; fio 3.40 and later (ZN_FIO_RECOVERY=1) recover.
# Then zonednull-ublk --connect to a zonednull-server here whose rules
# fail a write (ENOSPC comes through as is), delay a read, and time a
# write out: the daemon finds it late (--timeout), connects again
# (--reconnect) and sends it again, and it lands once.
# Sourced settings (params): UBLK (the binary, empty when not built).
. /test/params
. /test/guest-lib.sh
passes=0 fails=0
out=/out/ublk-faults
mkdir -p "$out"
ZNU=$UBLK
BLKZONE=/usr/sbin/blkzone
[ -n "$ZNU" ] || { skip "no zonednull-ublk in the guest"; echo "guest-ublk-faults: 0 pass, 0 failure(s)"; exit 0; }
ZSZ=4194304
CTL=$out/faults.ctl

ublk_up faults --control-socket="$CTL" size=64 zone_size=4 zone_nr_conv=0 blocksize=4096 \
  memory_backed=1 kernel=6.12 requeue=1,100,0,2 \
  "fault=op=write zone=1 error=ENOSPC count=1" \
  "fault=op=write zone=2 error=EIO when=after count=1" \
  "fault=op=read zone=3 timeout count=1" \
  "fault=op=reset zone=4 delay=500 count=1" || exit 1

got=$(zntrace write "$DEV" 0 4096 90 2>&1)
[ "$got" = res=0 ] && zntrace expect "$DEV" 0 4096 90 &&
  ok "requeue=: the requests requeued are served in the end" ||
  fail "requeue=: the first write: '$got'"

got=$(zntrace write "$DEV" $ZSZ 4096 91 2>&1)
case $got in *"(ENOSPC)"*) ok "an ENOSPC injected before the write reaches the application ($got)" ;;
  *) fail "zone 1: '$got', expected ENOSPC" ;; esac
got=$(zntrace write "$DEV" $ZSZ 4096 91 2>&1)
case $got in *"(EIO)"*) ok "the host's write plug refuses zone 1 until a zone report ($got)" ;;
  *) fail "zone 1 without a zone report: '$got', expected the plug's EIO" ;; esac
$BLKZONE report -o $((ZSZ / 512)) -c 1 "$DEV" >/dev/null 2>&1
got=$(zntrace write "$DEV" $ZSZ 4096 91 2>&1)
[ "$got" = res=0 ] && ok "zone 1 takes the write after a zone report" ||
  fail "zone 1 after a zone report: '$got'"

got=$(zntrace write "$DEV" $((2 * ZSZ)) 4096 92 2>&1)
case $got in *"(EIO)"*) ok "when=after: the write fails with EIO ($got)" ;;
  *) fail "when=after on zone 2: '$got', expected EIO" ;; esac
wp=$($BLKZONE report -o $((2 * ZSZ / 512)) -c 1 "$DEV" | sed -n 's/.*wptr \(0x[0-9a-f]*\) .*/\1/p')
[ -n "$wp" ] && [ $((wp)) = 8 ] && zntrace expect "$DEV" $((2 * ZSZ)) 4096 92 &&
  ok "when=after: the write pointer moved over the data, which reads back" ||
  fail "when=after: zone 2's wptr '$wp' (0x8 expected), or its data differ"
got=$(zntrace write "$DEV" $((2 * ZSZ + 4096)) 4096 93 2>&1)
[ "$got" = res=0 ] && ok "when=after: the next write at the moved write pointer passes" ||
  fail "when=after: the next write: '$got'"

t0=$(uptime_cs)
$BLKZONE reset -o $((4 * ZSZ / 512)) -c 1 "$DEV" >"$out/reset.txt" 2>&1 ||
  fail "the delayed reset failed: $(cat "$out/reset.txt")"
t1=$(uptime_cs)
[ $((t1 - t0)) -ge 45 ] && ok "a reset with delay=500 answers after $(( (t1 - t0) * 10 )) ms" ||
  fail "a reset with delay=500 answered after $(( (t1 - t0) * 10 )) ms"

# A rule given at run time, through the control socket.
if ! command -v zonednull >/dev/null 2>&1; then
  skip "the control socket: no zonednull (the CLI) in the guest (it comes with --connect's checks)"
elif zonednull fault add op=write zone=5 error=ETOOMANYREFS count=1 \
     "nbd+unix:///?socket=$CTL" >"$out/fault-add.txt" 2>&1; then
  got=$(zntrace write "$DEV" $((5 * ZSZ)) 4096 95 2>&1)
  case $got in *"(ETOOMANYREFS)"*) ok "a rule added through the control socket fails the write it names ($got)" ;;
    *) fail "the rule added through the control socket, zone 5: '$got', expected ETOOMANYREFS" ;; esac
  zonednull fault list "nbd+unix:///?socket=$CTL" >"$out/fault-list.txt" 2>&1
  grep -q "matched 1, hits 1: op=write .*error=ETOOMANYREFS" "$out/fault-list.txt" &&
    ok "zonednull fault list counts the rule's hit" ||
    fail "zonednull fault list through the control socket: $(cat "$out/fault-list.txt")"
  # The control socket's own zone commands wait out their delays too.
  zonednull fault add op=reset zone=6 delay=300 count=1 "nbd+unix:///?socket=$CTL" >/dev/null 2>&1
  t0=$(uptime_cs)
  zonednull reset -o $((6 * ZSZ / 512)) -c 1 "nbd+unix:///?socket=$CTL" >"$out/ctl-reset.txt" 2>&1 ||
    fail "zonednull reset through the control socket: $(cat "$out/ctl-reset.txt")"
  t1=$(uptime_cs)
  [ $((t1 - t0)) -ge 29 ] && ok "a reset through the control socket with delay=300 answers after $(( (t1 - t0) * 10 )) ms" ||
    fail "a reset through the control socket with delay=300 answered after $(( (t1 - t0) * 10 )) ms"
else
  fail "zonednull fault add through the control socket: $(cat "$out/fault-add.txt")"
fi

# The read of zone 3 is never answered; a read of zone 0 is.
zntrace expect "$DEV" $((3 * ZSZ)) 4096 0 >"$out/stuck.txt" 2>&1 &
stuck=$!
zntrace expect "$DEV" 0 4096 90 && ok "a read completes while another is held" ||
  fail "a read beside the held one failed"
sleep 2
alive "$stuck" && ok "the timed-out read is still unanswered 2 s on" ||
  fail "the timed-out read returned: $(cat "$out/stuck.txt")"
kill -TERM "$UPID"
reap "$UPID" 300; rc=$?
[ "$rc" = 0 ] && ok "zonednull-ublk stops with the read held (status 0)" ||
  fail "zonednull-ublk on SIGTERM with a read held: status $rc: $(tail -n 3 "$out/faults.stderr" | tr '\n' ' ')"
[ "$rc" = 124 ] && { kill -KILL "$UPID" 2>/dev/null; reap "$UPID" 50; }
if reap "$stuck" 300; then
  fail "the held read succeeded when the daemon stopped"
else
  [ $? = 124 ] && fail "the held read still hangs 30 s after the daemon stopped" ||
    ok "the held read failed when the daemon stopped"
fi
# ---- fio --zonemode=zbd and write errors -----------------------------------
# Debian 12's fio (3.33, the consumers' /opt/fio) keeps its own write
# pointers and stops at a write error.  fio 3.40 and later, with
# continue_on_error and recover_zbd_write_error (/opt/fio-recovery, from
# ZN_FIO_RECOVERY=1), read the zone's write pointer back after the error
# and carry on: after an EIO when=after (the data landed, the write
# pointer moved) there is nothing to write again, after one before (the
# write never ran) fio writes it again; the range ends written and
# verified.
zbd_fio () { # FIO LOG ZONE OPTIONS...: two zones from ZONE, 64 KiB writes
  zf=$1 zl=$2 zz=$3; shift 3
  "$zf" --name=w --filename="$DEV" --direct=1 --zonemode=zbd --rw=write \
    --bs=64k --ioengine=psync --offset=$((zz * ZSZ)) --size=$((2 * ZSZ)) \
    "$@" >"$zl" 2>&1
}
zone_cond () { # ZONE: blkzone's short name of the zone's condition (fu: full)
  $BLKZONE report -o $(($1 * ZSZ / 512)) -c 1 "$DEV" | sed -n 's/.*zcond: *[0-9]*(\([a-z]*\)).*/\1/p'
}
if [ -x /opt/fio/fio ]; then
  if ublk_up fio size=64 zone_size=4 zone_nr_conv=0 blocksize=4096 \
       memory_backed=1 kernel=6.12 \
       "fault=op=write zone=1 error=EIO when=after count=1" \
       "fault=op=write zone=5 error=EIO when=after count=1" \
       "fault=op=write zone=6 error=EIO count=1"; then
    zbd_fio /opt/fio/fio "$out/fio-3.33.txt" 1; rc=$?
    if [ $rc != 0 ] && grep -q "Input/output error" "$out/fio-3.33.txt"; then
      ok "fio $(/opt/fio/fio --version) --zonemode=zbd stops at the write error (status $rc; it has no recovery)"
    else
      fail "fio $(/opt/fio/fio --version) with a write error: status $rc: $(grep -i -e err -e error "$out/fio-3.33.txt" | head -n 3 | tr '\n' ' ')"
    fi
    if [ -x /opt/fio-recovery/fio ]; then
      fv=$(/opt/fio-recovery/fio --version)
      zbd_fio /opt/fio-recovery/fio "$out/fio-recovery.txt" 5 --continue_on_error=1 \
        --recover_zbd_write_error=1 --ignore_error=,EIO --do_verify=1 --verify=md5 \
        --debug=zbd; rc=$?
      moved=$(grep -c "Write pointer move succeeded" "$out/fio-recovery.txt")
      if [ $rc = 0 ] && [ "$moved" -ge 2 ] && [ "$(zone_cond 5)" = fu ] && [ "$(zone_cond 6)" = fu ]; then
        ok "$fv recover_zbd_write_error: after an error when=after and one before, fio moved its write pointers ($moved) and wrote and verified both zones"
      else
        fail "$fv recover_zbd_write_error: status $rc, $moved write pointer moves, zones 5 and 6 '$(zone_cond 5)' '$(zone_cond 6)': $(grep -i -e "err=" -e "fio:" "$out/fio-recovery.txt" | head -n 4 | tr '\n' ' ')"
      fi
    else
      skip "no fio 3.40 or later (make check-kernel ZN_FIO_RECOVERY=1): recover_zbd_write_error not run"
    fi
    kill -TERM "$UPID"
    reap "$UPID" 300 || fail "zonednull-ublk (fio) on SIGTERM: status $?"
  fi
else
  skip "fio: no /opt/fio in the guest (the consumers are off)"
fi

# ---- a timed-out write, the driver's abort, a takeover ------------------------
# ublk_drv only re-arms a privileged device's timer, so a write the rules
# time out stays unanswered while its daemon runs.  When the daemon dies
# (SIGKILL) the driver aborts what it had taken: the write fails with
# EIO.  A daemon started with --recover on the same backing_dir (without
# the rule) serves the device again, and the write never landed.
TO="size=64 zone_size=4 zone_nr_conv=0 blocksize=4096 kernel=6.12 backing_dir=$out/to-dir"
rm -rf "$out/to-dir"
# shellcheck disable=SC2086
if ublk_up takeover --recovery $TO "fault=op=write zone=7 timeout count=1"; then
  tdev=$DEV
  zntrace write "$tdev" $((7 * ZSZ)) 4096 99 >"$out/to-write.txt" 2>&1 &
  wpid=$!
  sleep 2
  alive "$wpid" && ok "takeover: a write that times out is still unanswered 2 s on" ||
    fail "takeover: the timed-out write returned: $(cat "$out/to-write.txt")"
  kill -KILL "$UPID"
  reap "$UPID" 100
  reap "$wpid" 300
  case $(cat "$out/to-write.txt") in
    *"(EIO)"*) ok "takeover: the driver aborted the held write when its daemon died ($(cat "$out/to-write.txt"))" ;;
    *) fail "takeover: the held write after its daemon died: '$(cat "$out/to-write.txt")', expected EIO" ;;
  esac
  # shellcheck disable=SC2086
  if d2=$("$ZNU" -P "$out/to.pid" --recover="${tdev#/dev/ublkb}" $TO 2>"$out/to.err") &&
     [ "$d2" = "$tdev" ]; then
    ok "takeover: zonednull-ublk --recover serves $tdev again"
    wp=$($BLKZONE report -o $((7 * ZSZ / 512)) -c 1 "$tdev" | sed -n 's/.*wptr \(0x[0-9a-f]*\) .*/\1/p')
    [ -n "$wp" ] && [ $((wp)) = 0 ] && ok "takeover: the timed-out write never landed (zone 7's wptr 0x0)" ||
      fail "takeover: zone 7's wptr is '$wp' after the timed-out write, expected 0x0"
    got=$(zntrace write "$tdev" $((7 * ZSZ)) 4096 99 2>&1)
    [ "$got" = res=0 ] && zntrace expect "$tdev" $((7 * ZSZ)) 4096 99 &&
      ok "takeover: the device takes the write again and reads it back" ||
      fail "takeover: the write after the takeover: '$got'"
    tpid=$(cat "$out/to.pid")
    kill -TERM "$tpid"
    waitfor 300 dead "$tpid" || fail "takeover: the new daemon still runs 30 s after SIGTERM"
  else
    fail "takeover: --recover=${tdev#/dev/ublkb}: '$d2' $(cat "$out/to.err")"
  fi
fi

# ---- --connect: the server's rules ------------------------------------------
SRV=/usr/bin/zonednull-server
if [ -x "$SRV" ]; then
  sock=$out/srv.sock
  rm -f "$sock"
  "$SRV" -f -U "$sock" size=64 zone_size=4 zone_nr_conv=0 memory_backed=1 \
    "fault=op=write zone=1 error=ENOSPC count=1" \
    "fault=op=read zone=2 delay=500 count=1" \
    "fault=op=write zone=3 timeout count=1" >"$out/srv.out" 2>&1 &
  spid=$!
  waitfor 100 test -S "$sock" || fail "--connect: zonednull-server did not come up: $(tail -n 3 "$out/srv.out")"
  if ublk_up connect --connect="nbd+unix:///?socket=$sock" --timeout=3 --reconnect=60; then
    got=$(zntrace write "$DEV" $ZSZ 4096 96 2>&1)
    case $got in *"(ENOSPC)"*) ok "--connect: the server's ENOSPC reaches the application ($got)" ;;
      *) fail "--connect: zone 1: '$got', expected the server's ENOSPC" ;; esac
    zntrace write "$DEV" $((2 * ZSZ)) 4096 97 >/dev/null 2>&1
    t0=$(uptime_cs)
    zntrace expect "$DEV" $((2 * ZSZ)) 4096 97 || fail "--connect: the delayed read's data differ"
    t1=$(uptime_cs)
    [ $((t1 - t0)) -ge 49 ] && ok "--connect: a read the server delays 500 ms answers after $(( (t1 - t0) * 10 )) ms" ||
      fail "--connect: the delayed read answered after $(( (t1 - t0) * 10 )) ms"
    t0=$(uptime_cs)
    got=$(zntrace write "$DEV" $((3 * ZSZ)) 4096 98 2>&1)
    t1=$(uptime_cs)
    wp=$($BLKZONE report -o $((3 * ZSZ / 512)) -c 1 "$DEV" | sed -n 's/.*wptr \(0x[0-9a-f]*\) .*/\1/p')
    if [ "$got" = res=0 ] && [ $((t1 - t0)) -ge 300 ] && [ -n "$wp" ] && [ $((wp)) = 8 ] &&
       zntrace expect "$DEV" $((3 * ZSZ)) 4096 98; then
      ok "--connect: a write the server times out is sent again after $(( (t1 - t0) / 100 )) s on a new connection, and lands once"
    else
      fail "--connect: the timed-out write: '$got' after $(( (t1 - t0) * 10 )) ms, zone 3's wptr '$wp': $(tail -n 3 "$out/connect.stderr" | tr '\n' ' ')"
    fi
    kill -TERM "$UPID"
    reap "$UPID" 300 || fail "--connect: zonednull-ublk on SIGTERM: status $?"
  fi
  kill -TERM "$spid" 2>/dev/null
  reap "$spid" 300 || fail "--connect: zonednull-server on SIGTERM: status $?"
else
  skip "--connect: no $SRV in the guest"
fi

echo "guest-ublk-faults: the host's log:"; dmesg | grep -i -e ublk -e "I/O error" | tail -n 8 | sed 's/^/    /'
echo "guest-ublk-faults: $passes pass, $fails failure(s)"
[ "$fails" -eq 0 ]
