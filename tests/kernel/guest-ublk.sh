#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Guest (6.12 tier): the real null_blk and zonednull-ublk side by side.
# Each line of /test/traces.conf is "NAME SEED NOPS KEY=VALUE..." (drawn by
# tests/kernel/draw.sh, as in the 6.1 tier).  For each:
#  - a configfs null_blk device nullb0 with those settings (plus zoned=1);
#  - a zonednull-ublk device with the same KEY=VALUE settings (the keys in
#    UBLK_DROP left out) and kernel= this kernel's version, started with
#    -f; it prints /dev/ublkbN;
#  - on each: the queue attributes in sysfs, `blkzone report` fresh, then
#    `zntrace trace DEV SEED NOPS`, then `blkzone report` again;
#  - the two must agree: the traces line by line (the header's dev= aside),
#    the attributes, the reports.  A configuration null_blk refuses must be
#    refused by zonednull-ublk (it exits non-zero without a device), and
#    the other way round.
# Artifacts go to /out/ublk/NAME/ (nullb.* and ublk.*); a line
# "ok   - ..." or "FAIL - ..." per check (guest-lib.sh), and at the end
#   counts: configs=N traced=N identical=N refused_both=N runt=N failures=N
# A runt (size not a whole number of zones) that null_blk accepts cannot be
# a ublk device (ublk_drv counts dev_sectors / chunk_sectors zones): when
# zonednull-ublk refuses it, that is an "XFAIL" line and counts as runt,
# unless UBLK_STRICT_RUNT is set.
# Sourced settings (params): UBLK (the binary, empty when not built),
# UBLK_DROP (keys not passed to it), UBLK_STRICT_RUNT.
. /test/params
. /test/guest-lib.sh
out=/out/ublk
mkdir -p "$out"
fails=0 configs=0 traced=0 identical=0 refused_both=0 runt=0

attrs="zoned chunk_sectors nr_zones max_open_zones max_active_zones zone_append_max_bytes
  logical_block_size physical_block_size max_sectors_kb write_cache fua scheduler"
BLKZONE=/usr/sbin/blkzone

# is_runt SETTINGS: size is not a whole number of zones.
is_runt () {
  sz= zsz=
  for kv in $1; do
    case $kv in size=*) sz=${kv#size=} ;; zone_size=*) zsz=${kv#zone_size=} ;; esac
  done
  [ -n "$sz" ] && [ -n "$zsz" ] && [ $((sz % zsz)) -ne 0 ]
}

# probe DEV PREFIX: sysfs attributes and the fresh zone report.
probe () {
  b=${1#/dev/}
  for a in $attrs; do
    echo "$a $(cat "/sys/block/$b/queue/$a" 2>/dev/null || echo MISSING)"
  done >"$2.sysfs"
  $BLKZONE report "$1" 2>&1 | sed "s|$b||g" >"$2.fresh"
}
# run_trace DEV PREFIX SEED NOPS: the trace (header's dev= removed into
# PREFIX.trace, as printed into PREFIX.raw) and the report after it.
run_trace () {
  zntrace trace "$1" "$3" "$4" >"$2.raw" 2>"$2.trace-err"
  trc=$?
  sed '1s| dev=[^ ]*||' "$2.raw" >"$2.trace"
  $BLKZONE report "$1" 2>&1 | sed "s|${1#/dev/}||g" >"$2.after"
  return $trc
}
# compare WHAT FILE-A FILE-B
compare () {
  if cmp -s "$2" "$3"; then return 0; fi
  fail "$name: $1 differ (null_blk, zonednull-ublk):"
  first_diff "$2" "$3" ublk
  return 1
}

# ublk_start KEYS...: starts zonednull-ublk -f; sets ublk_pid and ublk_dev
# (empty when it exited first, ublk_rc then holds its status).
ublk_start () {
  ublk_dev= ublk_rc=
  "$UBLK" -f "$@" >"$dir/ublk.stdout" 2>"$dir/ublk.stderr" &
  ublk_pid=$!
  n=0
  while [ $n -lt 300 ]; do
    ublk_dev=$(head -n 1 "$dir/ublk.stdout" 2>/dev/null)
    [ -n "$ublk_dev" ] && break
    if ! kill -0 "$ublk_pid" 2>/dev/null; then
      wait "$ublk_pid"; ublk_rc=$?; ublk_pid=
      ublk_dev=$(head -n 1 "$dir/ublk.stdout" 2>/dev/null)
      return
    fi
    sleep 0.1; n=$((n + 1))
  done
  [ -n "$ublk_dev" ] || { ublk_rc=timeout; return; }
  n=0
  while [ ! -b "$ublk_dev" ] && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
}
# ublk_stop: SIGTERM, which must stop and delete the device, status 0.
ublk_stop () {
  [ -n "$ublk_pid" ] || return 0
  kill -TERM "$ublk_pid" 2>/dev/null
  n=0
  while kill -0 "$ublk_pid" 2>/dev/null && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
  if kill -0 "$ublk_pid" 2>/dev/null; then
    fail "$name: zonednull-ublk still runs 10 s after SIGTERM"
    kill -KILL "$ublk_pid" 2>/dev/null
  fi
  wait "$ublk_pid"
  src=$?
  ublk_pid=
  b=${ublk_dev#/dev/}
  if [ "$src" -ne 0 ]; then
    fail "$name: zonednull-ublk exited $src on SIGTERM: $(tail -n 3 "$dir/ublk.stderr" | tr '\n' ' ')"
  elif [ -n "$b" ] && [ -e "/sys/block/$b" ]; then
    fail "$name: $ublk_dev is still there after zonednull-ublk ended"
  else
    ok "$name: zonednull-ublk stopped on SIGTERM and deleted $ublk_dev"
  fi
}

modprobe null_blk nr_devices=0 || { fail "modprobe null_blk"; exit 1; }
if [ -n "$UBLK" ]; then
  modprobe ublk_drv || { fail "modprobe ublk_drv"; exit 1; }
  [ -c /dev/ublk-control ] || { fail "no /dev/ublk-control after modprobe ublk_drv"; exit 1; }
fi
cfs=/sys/kernel/config/nullb
# The model of the null_blk beside it: this kernel's major.minor.
model_kernel=$(uname -r | cut -d. -f1-2)
while read -r name seed nops settings; do
  [ -n "$name" ] || continue
  configs=$((configs + 1))
  dir=$out/$name fail_mark=$out/$name/FAILED
  mkdir -p "$dir"
  echo "$settings" >"$dir/settings"

  # ---- null_blk
  nb_refused= nb_ok=
  d=$cfs/nullb0
  if ! mkdir "$d"; then fail "$name: mkdir $d"; continue; fi
  ok=1
  echo 1 >"$d/zoned" || ok=
  for kv in $settings; do
    echo "${kv#*=}" >"$d/${kv%%=*}" || { fail "$name: null_blk: cannot set $kv"; ok=; }
  done
  if [ -z "$ok" ]; then
    :
  elif ! msg=$(echo 1 2>&1 >"$d/power"); then
    nb_refused=${msg:-refused}
    echo "$nb_refused" >"$dir/nullb.refused"
  elif [ -b /dev/nullb0 ]; then
    probe /dev/nullb0 "$dir/nullb"
    if run_trace /dev/nullb0 "$dir/nullb" "$seed" "$nops"; then
      nb_ok=1
      ok "$name: $nops ops traced on null_blk"
    else
      fail "$name: zntrace on null_blk exited $trc: $(cat "$dir/nullb.trace-err")"
    fi
    echo 0 >"$d/power"
  else
    fail "$name: null_blk powered on, but there is no /dev/nullb0"
    echo 0 >"$d/power"
  fi
  rmdir "$d"
  [ -n "$ok" ] || continue

  # ---- zonednull-ublk
  if [ -z "$UBLK" ]; then
    if [ -n "$nb_refused" ]; then skip "$name: null_blk refuses ($nb_refused); no zonednull-ublk to ask"
    else skip "$name: no zonednull-ublk: null_blk alone"; fi
    continue
  fi
  keys=
  for kv in $settings; do
    case " $UBLK_DROP " in *" ${kv%%=*} "*) ;; *) keys="$keys $kv" ;; esac
  done
  # shellcheck disable=SC2086
  ublk_start kernel="$model_kernel" $keys
  if [ -n "$nb_refused" ]; then
    if [ -n "$ublk_pid" ] || [ -n "$ublk_dev" ] || [ "$ublk_rc" = 0 ]; then
      fail "$name: null_blk refuses ($nb_refused), zonednull-ublk accepts (${ublk_dev:-status 0})"
      ublk_stop
    else
      refused_both=$((refused_both + 1))
      ok "$name: null_blk ($nb_refused) and zonednull-ublk (status $ublk_rc: $(tail -n 1 "$dir/ublk.stderr")) both refuse"
    fi
    continue
  fi
  if [ -z "$ublk_pid" ] && [ "$ublk_rc" != 0 ] && [ -z "$UBLK_STRICT_RUNT" ] && is_runt "$settings"; then
    # ublk_drv counts dev_sectors / chunk_sectors zones: a smaller last
    # zone cannot be exposed, so zonednull-ublk refuses what null_blk takes.
    runt=$((runt + 1))
    echo "XFAIL - $zn_me: $name: a smaller last zone, which null_blk accepts and ublk cannot expose;" \
      "zonednull-ublk refuses it (status $ublk_rc: $(tail -n 1 "$dir/ublk.stderr"))"
    continue
  fi
  if [ -z "$ublk_pid" ] || [ ! -b "$ublk_dev" ]; then
    if [ -n "$ublk_pid" ]; then why="gave no block device '$ublk_dev'"; else why="exited $ublk_rc"; fi
    fail "$name: null_blk accepts the configuration, zonednull-ublk $why: $(tail -n 3 "$dir/ublk.stderr" | tr '\n' ' ')"
    ublk_stop
    continue
  fi
  echo "$ublk_dev" >"$dir/ublk.dev"
  probe "$ublk_dev" "$dir/ublk"
  if run_trace "$ublk_dev" "$dir/ublk" "$seed" "$nops"; then
    ok "$name: $nops ops traced on zonednull-ublk ($ublk_dev)"
  else
    fail "$name: zntrace on $ublk_dev exited $trc: $(cat "$dir/ublk.trace-err")"
  fi
  ublk_stop
  [ -n "$nb_ok" ] || continue
  traced=$((traced + 1))
  same=1
  compare "queue attributes" "$dir/nullb.sysfs" "$dir/ublk.sysfs" || same=
  compare "fresh zone reports" "$dir/nullb.fresh" "$dir/ublk.fresh" || same=
  compare "traces" "$dir/nullb.trace" "$dir/ublk.trace" || same=
  compare "zone reports after the trace" "$dir/nullb.after" "$dir/ublk.after" || same=
  if [ -n "$same" ]; then
    identical=$((identical + 1))
    ok "$name: identical: $(wc -l <"$dir/nullb.trace") trace lines, queue attributes, zone reports"
  fi
done </test/traces.conf
echo "counts: configs=$configs traced=$traced identical=$identical refused_both=$refused_both runt=$runt failures=$fails"
[ "$fails" -eq 0 ]
