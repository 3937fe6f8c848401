#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Guest (Linux 7.3, sourced by guest-files.sh in the second boot, after
# guest-zloop.sh): zonednull-pfcheck on btrfs (zoned) and f2fs on a
# zonednull-ublk that logs its writes (log_writes=), its directories on the
# virtio disk ($MNTD):
#
#   for each file system in $PFCHECK_FS: the correct workload, then check
#   of every mark and $PFCHECK_STATES random crash states (seed $PFCHECK_SEED);
#   each FAIL is one of ours unless /test/pfcheck-xfail names it (kernel,
#   file system, --to, --crash).  One random state is reopened with the
#   kernel's zloop (when guest-zloop.sh loaded it) and must give the same
#   line.  Then each planted bug (--plant=checksum-before-fsync,
#   rename-without-fsync) on each file system: its check of the marks'
#   states must FAIL in some state.
#
#   any workload with its checker: zone-log (examples/zone-log.c, an
#   append-only log on raw zones) through workload --cmd and check
#   --checker, reading each state's ublk block device: every mark's state
#   and 4 random ones pass;
#   with its flushes left out (--plant=no-flush) a mark's state fails.
#
# A failing run's log and manifest go to $out/pfcheck-FS-*/ for the host.
# Uses guest-files.sh's ublk_up, ublk_term, ok, fail, $MNTD, $out, $KTIER.
PF=/usr/bin/zonednull-pfcheck
PF_STATES=${PFCHECK_STATES:-12}
PF_SEED=${PFCHECK_SEED:-1}
PF_FS=${PFCHECK_FS-btrfs f2fs}

# pf_geom FS: the device's parameters (guest-files.sh's geometries).
pf_geom () { if [ "$1" = f2fs ]; then echo "$G_F2FS"; else echo "$G_BTRFS"; fi; }
# pf_zloop FS: zloop's options for the same geometry.
pf_zloop () {
  if [ "$1" = f2fs ]; then echo "capacity_mb=256,zone_size_mb=4,conv_zones=8"
  else echo "capacity_mb=256,zone_size_mb=4,conv_zones=0"; fi
}

# pf_workload NAME FS [--plant=BUG]: a logging zonednull-ublk in
# $MNTD/NAME, the workload, SIGTERM.  Sets W (the work directory); status 1
# (with a FAIL line) when a step fails.
pf_workload () {
  pn=$1 pfs=$2; shift 2
  W=$MNTD/$pn
  rm -rf "$W"; mkdir -p "$W"
  # shellcheck disable=SC2086
  ublk_up "$pn" --control-socket="$W/ctl.sock" backing_dir="$W/live" log_writes="$W/log" $(pf_geom "$pfs") ||
    return 1
  if ! timeout 600 "$PF" workload --fs="$pfs" --work="$W" --uri="nbd+unix:///nullb0?socket=$W/ctl.sock" \
       "$@" "$DEV" >"$out/$pn.workload" 2>&1; then
    fail "pfcheck $pn: the workload failed: $(tail -n 3 "$out/$pn.workload" | tr '\n' ' ')"
    ublk_term "$pn"; return 1
  fi
  # The manifest holds on the live device at the end of the workload.
  last=$(sed -n 's/^zonednull-pfcheck: .* marks fsync-0 to fsync-\([0-9]*\);.*/\1/p' "$out/$pn.workload")
  if mount -t "$pfs" "$DEV" "$W/mnt" 2>"$out/$pn.live-mount"; then
    if v=$("$PF" verify --work="$W" --mark="${last:-0}" "$W/mnt"); then
      ok "pfcheck $pn: the workload's manifest holds on the live device: $v"
    else
      fail "pfcheck $pn: the workload's manifest does not hold on the live device: $v"
    fi
    umount "$W/mnt" || fail "pfcheck $pn: umount of the live device"
  else
    fail "pfcheck $pn: mount of the live device after the workload: $(cat "$out/$pn.live-mount")"
  fi
  ublk_term "$pn"
  return 0
}
# pf_keep NAME: the log and the manifest of a failed run, for the host.
pf_keep () {
  mkdir -p "$out/pfcheck-$1" && cp "$W/log" "$W/manifest" "$out/pfcheck-$1/" 2>/dev/null
  cp "$W"/states/*.fsck "$W"/states/*.mount "$W"/states/*.checker "$out/pfcheck-$1/" 2>/dev/null
}
# pf_xfail FS TO CRASH: the state is on the expected-failure list.
pf_xfail () {
  [ -f /test/pfcheck-xfail ] &&
    grep -v '^#' /test/pfcheck-xfail | grep -qx "$KTIER $1 $2 $3"
}

# pf_same LINE: a state's line without its number and device names.
pf_same () { echo "$1" | sed 's/ state [0-9]*:/ state:/; s|/dev/[a-z]*[0-9]*|DEV|g'; }

pf_correct () {
  fs=$1 t0=$(now)
  pf_workload "pf-$fs" "$fs" || return
  timeout 3600 "$PF" check --fs="$fs" --log="$W/log" --work="$W" --states="$PF_STATES" \
    --seed="$PF_SEED" --params="$(pf_geom "$fs")" >"$out/pf-$fs.check" 2>&1
  npass=$(grep -c '^PASS state' "$out/pf-$fs.check")
  nfail=$(grep -c '^FAIL state' "$out/pf-$fs.check")
  sed -n 's/^\(PASS\|FAIL\) state/   pfcheck: &/p; s/^  reproduce: /   pfcheck:   reproduce: /p' "$out/pf-$fs.check"
  # Each FAIL's reproduce line names its --to and --crash.
  ours=0 known=0
  for tc in $(sed -n "s/^  reproduce: .* --to=\([^ ]*\) --crash=\([^ ]*\) .*/\1@\2/p" "$out/pf-$fs.check"); do
    if pf_xfail "$fs" "${tc%@*}" "${tc#*@}"; then known=$((known + 1)); else ours=$((ours + 1)); fi
  done
  if [ $((npass + nfail)) = 0 ]; then
    fail "pfcheck $fs: check ran no state: $(tail -n 3 "$out/pf-$fs.check" | tr '\n' ' ')"
    pf_keep "$fs"; return
  fi
  if [ $ours = 0 ]; then
    ok "pfcheck $fs: $npass states PASS, $nfail FAIL on the expected-failure list (seed $PF_SEED)"
  else
    fail "pfcheck $fs: $ours of $((npass + nfail)) states FAIL and are on no expected-failure list (the lines above)"
    pf_keep "$fs"
  fi
  echo "pfcheck-counts: kernel=$KTIER fs=$fs states=$((npass + nfail)) pass=$npass fail=$nfail xfail=$known ($(( $(now) - t0 )) s)"
  # The same state through zloop: the first random one (or the last mark).
  [ -c /dev/zloop-control ] || { skip "pfcheck $fs: no zloop (no /dev/zloop-control)"; return; }
  line=$(grep -m 1 -E '^(PASS|FAIL) state [0-9]+: to [0-9]+ \(after mark' "$out/pf-$fs.check") ||
    line=$(grep -E '^(PASS|FAIL) state' "$out/pf-$fs.check" | tail -n 1)
  to=$(echo "$line" | sed -n 's/^[A-Z]* state [0-9]*: to \([0-9]*\) .*/\1/p')
  crash=$(echo "$line" | sed -n 's/.* crash=\([a-z]*\) seed=\([0-9-]*\):.*/\1:\2/p'); crash=${crash%:-}
  zl_up="b=\$(dirname \"\$PFCHECK_STATE\")/zl; rm -rf \"\$b\"; mkdir -p \"\$b\" && ln -s \"\$PFCHECK_STATE\" \"\$b/0\" &&
    echo \"add id=0,$(pf_zloop "$fs"),base_dir=\$b\" >/dev/zloop-control || exit 1
    i=0; while [ ! -b /dev/zloop0 ] && [ \$i -lt 100 ]; do sleep 0.1; i=\$((i + 1)); done; echo /dev/zloop0"
  zl_down='echo "remove id=0" >/dev/zloop-control; i=0; while [ -e /dev/zloop0 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done'
  timeout 600 "$PF" check --fs="$fs" --log="$W/log" --work="$W" --to="$to" --crash="$crash" \
    --up="$zl_up" --down="$zl_down" >"$out/pf-$fs.zloop" 2>&1
  zline=$(grep -m 1 -E '^(PASS|FAIL) state' "$out/pf-$fs.zloop")
  # The same verdict and reason, but for the device's name.
  if [ -n "$zline" ] && [ "$(pf_same "$zline")" = "$(pf_same "$line")" ]; then
    ok "pfcheck $fs: zloop on the same state gives the same result: ${zline#* state 1: }"
  else
    fail "pfcheck $fs: zloop on state (--to=$to --crash=$crash): '${zline:-$(tail -n 2 "$out/pf-$fs.zloop" | tr '\n' ' ')}', zonednull-ublk: '$line'"
    pf_keep "$fs"
  fi
}

pf_planted () {
  fs=$1 bug=$2
  pf_workload "pf-$fs-$bug" "$fs" --ops=2 --plant="$bug" || return
  timeout 1800 "$PF" check --fs="$fs" --log="$W/log" --work="$W" --states=0 \
    --params="$(pf_geom "$fs")" >"$out/pf-$fs-$bug.check" 2>&1
  rc=$?
  nfail=$(grep -c '^FAIL state' "$out/pf-$fs-$bug.check")
  nall=$(grep -c -E '^(PASS|FAIL) state' "$out/pf-$fs-$bug.check")
  if [ "$rc" = 1 ] && [ "$nfail" -gt 0 ]; then
    ok "pfcheck $fs: the planted $bug is caught: $nfail of $nall states FAIL, first: $(grep -m 1 '^FAIL state' "$out/pf-$fs-$bug.check" | sed 's/^FAIL state [0-9]*: //')"
  else
    fail "pfcheck $fs: the planted $bug is not caught (status $rc, $nfail of $nall states FAIL): $(tail -n 2 "$out/pf-$fs-$bug.check" | tr '\n' ' ')"
    pf_keep "$fs-$bug"
  fi
  echo "pfcheck-counts: kernel=$KTIER fs=$fs plant=$bug states=$nall fail=$nfail"
}

# pf_any [--plant=no-flush]: zone-log's workload and checker.
pf_any () {
  pn=pf-zone-log${1:+-planted} t0=$(now)
  W=$MNTD/$pn
  rm -rf "$W"; mkdir -p "$W"
  # shellcheck disable=SC2086
  ublk_up "$pn" --control-socket="$W/ctl.sock" backing_dir="$W/live" log_writes="$W/log" $G_BTRFS || return
  if ! timeout 600 "$PF" workload --cmd="zone-log append \"\$PFCHECK_URI\" 6 ${1:-}" --work="$W" \
       --uri="nbd+unix:///nullb0?socket=$W/ctl.sock" "$DEV" >"$out/$pn.workload" 2>&1; then
    fail "pfcheck $pn: the workload failed: $(tail -n 3 "$out/$pn.workload" | tr '\n' ' ')"
    ublk_term "$pn"; return
  fi
  ublk_term "$pn"
  timeout 1800 "$PF" check --checker='zone-log check' --log="$W/log" --work="$W" --states=4 \
    --seed="$PF_SEED" --params="$G_BTRFS" >"$out/$pn.check" 2>&1
  rc=$?
  npass=$(grep -c '^PASS state' "$out/$pn.check")
  nfail=$(grep -c '^FAIL state' "$out/$pn.check")
  sed -n 's/^\(PASS\|FAIL\) state/   pfcheck: &/p' "$out/$pn.check"
  if [ -z "${1:-}" ]; then
    # Every mark's state holds its records (commit-6: all of them).
    if [ "$rc" = 0 ] && [ "$nfail" = 0 ] && [ "$npass" = 11 ] &&
       grep -q '^PASS state 7: .*(mark commit-6) .*: zone-log: 6 records whole, 6 committed$' "$out/$pn.check"; then
      ok "pfcheck zone-log: $npass states PASS, read from the block device (seed $PF_SEED)"
    else
      fail "pfcheck zone-log: status $rc, $npass PASS, $nfail FAIL: $(grep -m 1 '^FAIL' "$out/$pn.check" || tail -n 2 "$out/$pn.check")"
      pf_keep "$pn"
    fi
  elif [ "$rc" = 1 ] && grep -q '^FAIL state 3: .*(mark commit-2) .*record 2 is missing' "$out/$pn.check"; then
    ok "pfcheck zone-log: the planted no-flush is caught: $nfail of $((npass + nfail)) states FAIL"
  else
    fail "pfcheck zone-log: the planted no-flush is not caught (status $rc): $(tail -n 2 "$out/$pn.check" | tr '\n' ' ')"
    pf_keep "$pn"
  fi
  echo "pfcheck-counts: kernel=$KTIER workload=zone-log${1:+ plant=no-flush} states=$((npass + nfail)) pass=$npass fail=$nfail ($(( $(now) - t0 )) s)"
}

if [ -x /usr/bin/zone-log ]; then
  echo "== files: zonednull-pfcheck on zone-log, any workload with its checker"
  pf_any
  pf_any --plant=no-flush
else
  skip "pfcheck zone-log: no /usr/bin/zone-log"
fi

for fs in $PF_FS; do
  echo "== files: zonednull-pfcheck on $fs"
  pf_correct "$fs"
  pf_planted "$fs" checksum-before-fsync
  pf_planted "$fs" rename-without-fsync
done
