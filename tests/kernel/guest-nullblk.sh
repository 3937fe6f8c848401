#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Guest: traces of the real null_blk.  guest-nullblk.sh [CONF [OUTDIR]]
# (default /test/traces.conf, /out/traces).  Each line of CONF is
# "NAME SEED NOPS KEY=VALUE...": a configfs device nullb0 with those
# settings (plus zoned=1, written in that order, badblocks=+A-B once per
# range) is powered on, zntrace records NOPS random ops into
# OUTDIR/NAME.trace, and the device is removed.  With zone_full=1 the trace
# starts from the state the device powered on with (zntrace --initial);
# bad ranges go to zntrace --bad, which aims I/O at them.  The host replays
# the traces.  When the kernel refuses the configuration (an attribute it
# does not have or will not take, or power-on fails), NAME.refused says so
# instead.
conf=${1:-/test/traces.conf}
out=${2:-/out/traces}
. /test/guest-lib.sh
mkdir -p "$out"
fails=0
modprobe null_blk nr_devices=0 || { fail "modprobe null_blk"; exit 1; }
cfs=/sys/kernel/config/nullb
while read -r name seed nops settings; do
  [ -n "$name" ] || continue
  d=$cfs/nullb0
  if ! mkdir "$d"; then fail "$name: mkdir $d"; continue; fi
  ok=1 refused='' flags='' bad=''
  echo 1 >"$d/zoned" || ok=
  for kv in $settings; do
    key=${kv%%=*} value=${kv#*=}
    if [ ! -e "$d/$key" ]; then
      refused="this kernel's null_blk has no attribute $key"
      break
    fi
    if ! msg=$(echo "$value" 2>&1 >"$d/$key"); then
      refused="$key=$value: ${msg##*: }"
      break
    fi
    case $kv in
      zone_full=1) flags="$flags --initial" ;;
      badblocks=+*) bad="$bad,${value#+}" ;;
    esac
  done
  [ -n "$bad" ] && flags="$flags --bad=${bad#,}"
  if [ -z "$ok" ]; then
    fail "$name: cannot set zoned=1"
  elif [ -z "$refused" ] && ! msg=$(echo 1 2>&1 >"$d/power"); then
    refused="power-on: ${msg##*: }"
  fi
  if [ -z "$ok" ]; then
    :
  elif [ -n "$refused" ]; then
    # A configuration the kernel refuses: the host checks that zonednull
    # refuses it too.
    echo "$refused" >"$out/$name.refused"
    ok "$name: null_blk refuses the configuration ($refused)"
  elif [ -b /dev/nullb0 ]; then
    {
      echo "# kernel $(uname -r) $(uname -v)"
      echo "# null_blk configfs: $settings"
      # shellcheck disable=SC2086
      echo "# cmd: zntrace trace$flags /dev/nullb0 $seed $nops"
      # shellcheck disable=SC2086
      zntrace trace $flags /dev/nullb0 "$seed" "$nops"
    } >"$out/$name.trace"
    rc=$?
    if [ $rc -eq 0 ]; then ok "$name: $nops ops traced on null_blk"
    else fail "$name: zntrace exited $rc"; fi
    echo 0 >"$d/power"
  else
    fail "$name: powered on, but there is no /dev/nullb0"
    echo 0 >"$d/power"
  fi
  rmdir "$d"
done <"$conf"
echo "guest-nullblk: $fails failure(s)"
[ "$fails" -eq 0 ]
