#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The device generation (zonednull-control(5), GENERATION) through the
# CLI's info, against nbdkit and zonednull-server: a backing_dir keeps it
# across restarts, in its metadata file; zones in memory get a new one at
# each start; a directory made before generations gets one and keeps it
# from then on; a malformed generation line is refused at start.
#
# Device: 4 zones of 1 MiB, zone 0 conventional.
. "$(dirname "$0")/../common/lib.sh"

: "${ZONEDNULL_CLI:=${ZONEDNULL_BUILDDIR:-.}/cli/zonednull}"
[ -x "$ZONEDNULL_CLI" ] || fail "no CLI at $ZONEDNULL_CLI"
device="size=4 zone_size=1 zone_nr_conv=1 memory_backed=1"

generation () {
  "$ZONEDNULL_CLI" info "$uri" >"$tmpdir/info" 2>&1 ||
    fail "zonednull info: $(cat "$tmpdir/info")"
  sed -n 's/^generation: *//p' "$tmpdir/info"
}

for target in nbdkit server; do
  ZONEDNULL_TARGET=$target
  dir=$tmpdir/zones-$target

  start_server mem $device
  m1=$(generation)
  echo "$m1" | grep -qE '^[0-9a-f]{16}$' ||
    fail "$target: info's generation is '$m1': $(cat "$tmpdir/info")"
  "$ZONEDNULL_CLI" info --json "$uri" | grep -qF "\"generation\": \"$m1\"" ||
    fail "$target: info --json lacks generation $m1"
  stop_server "$pid"
  start_server mem $device
  m2=$(generation)
  [ "$m1" != "$m2" ] ||
    fail "$target: a memory device started twice had generation $m1 twice"
  stop_server "$pid"

  start_server files $device backing_dir="$dir"
  d1=$(generation)
  stop_server "$pid"
  grep -qx "generation $d1" "$dir/zonednull.meta" ||
    fail "$target: zonednull.meta lacks 'generation $d1': $(cat "$dir/zonednull.meta")"
  start_server files $device backing_dir="$dir"
  d2=$(generation)
  [ "$d1" = "$d2" ] ||
    fail "$target: backing_dir restarted: generation $d2, was $d1"
  stop_server "$pid"

  # A directory from before generations: one is drawn, then kept.
  sed -i '/^generation /d' "$dir/zonednull.meta"
  start_server files $device backing_dir="$dir"
  d3=$(generation)
  [ "$d3" != "$d1" ] && [ -n "$d3" ] ||
    fail "$target: a directory without a generation got '$d3'"
  stop_server "$pid"
  start_server files $device backing_dir="$dir"
  d4=$(generation)
  [ "$d3" = "$d4" ] ||
    fail "$target: the generation drawn for an old directory was not kept ($d3, then $d4)"
  stop_server "$pid"

  for bad in "generation 0000000000000000" "generation 12" \
             "generation 0123456789abcdefff" "generation 0123456789ABCDEF"; do
    sed -i "s/^generation .*/$bad/" "$dir/zonednull.meta"
    if [ "$target" = server ]; then
      timeout 20 "$ZONEDNULL_SERVER" -f -U "$tmpdir/bad.sock" $device \
        backing_dir="$dir" </dev/null >"$tmpdir/bad.log" 2>&1 &&
        fail "server: '$bad' accepted"
    else
      # exec_nbdkit's environment, under a bound.
      (if [ -n "${ZONEDNULL_PRELOAD:-}" ]; then
         LD_PRELOAD=$ZONEDNULL_PRELOAD ASAN_OPTIONS=detect_leaks=0
         export LD_PRELOAD ASAN_OPTIONS
       fi
       exec timeout 20 "$NBDKIT" -f -U "$tmpdir/bad.sock" "$ZONEDNULL_PLUGIN" $device \
        backing_dir="$dir" </dev/null >"$tmpdir/bad.log" 2>&1) &&
        fail "nbdkit: '$bad' accepted"
    fi
    grep -qF "zonednull.meta line" "$tmpdir/bad.log" &&
      grep -qF "$bad" "$tmpdir/bad.log" ||
      fail "$target: '$bad': $(cat "$tmpdir/bad.log")"
  done
done
echo PASS
