#!/bin/sh
# Guest: traces of the real null_blk.  Each line of /test/traces.conf is
# "NAME SEED NOPS KEY=VALUE...": a configfs device nullb0 with those
# settings (plus zoned=1) is powered on, zntrace records NOPS random ops into
# /out/traces/NAME.trace, and the device is removed.  The host replays them.
# When the kernel refuses the configuration, NAME.refused says so instead.
out=/out/traces
mkdir -p "$out"
fails=0
modprobe null_blk nr_devices=0 || { echo "FAIL - modprobe null_blk"; exit 1; }
cfs=/sys/kernel/config/nullb
while read -r name seed nops settings; do
  [ -n "$name" ] || continue
  d=$cfs/nullb0
  if ! mkdir "$d"; then echo "FAIL - $name: mkdir $d"; fails=$((fails + 1)); continue; fi
  ok=1
  echo 1 >"$d/zoned" || ok=
  for kv in $settings; do
    echo "${kv#*=}" >"$d/${kv%%=*}" || { echo "FAIL - $name: cannot set $kv"; ok=; }
  done
  if [ -z "$ok" ]; then
    fails=$((fails + 1))
  elif ! msg=$(echo 1 2>&1 >"$d/power"); then
    # A configuration the kernel refuses: the host checks that zonednull
    # refuses it too.
    echo "$msg" >"$out/$name.refused"
    echo "ok   - $name: null_blk refuses the configuration ($msg)"
  elif [ -b /dev/nullb0 ]; then
    {
      echo "# kernel $(uname -r) $(uname -v)"
      echo "# null_blk configfs: $settings"
      echo "# cmd: zntrace trace /dev/nullb0 $seed $nops"
      zntrace trace /dev/nullb0 "$seed" "$nops"
    } >"$out/$name.trace"
    rc=$?
    if [ $rc -eq 0 ]; then echo "ok   - $name: $nops ops traced on null_blk"
    else echo "FAIL - $name: zntrace exited $rc"; fails=$((fails + 1)); fi
    echo 0 >"$d/power"
  else
    echo "FAIL - $name: powered on, but there is no /dev/nullb0"
    fails=$((fails + 1))
    echo 0 >"$d/power"
  fi
  rmdir "$d"
done </test/traces.conf
echo "guest-nullblk: $fails failure(s)"
[ "$fails" -eq 0 ]
