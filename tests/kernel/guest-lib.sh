# SPDX-License-Identifier: BSD-3-Clause
# guest-lib.sh: what the guest scripts share (sourced from /test: every
# tier packs it into its initramfs beside them; the host side has lib.sh).
#
#   ok MESSAGE...    an "ok   - SCRIPT: MESSAGE" line; counts in $passes
#   fail MESSAGE...  a "FAIL - SCRIPT: MESSAGE" line; counts in $fails and,
#                    when $fail_mark names a file, creates it (guest-ublk.sh:
#                    the configuration's FAILED, so the host keeps its files)
#   skip MESSAGE...  a "SKIP - SCRIPT: MESSAGE" line
#   waitfor, dead, alive, reap: bounded waits for a command or a process
#   ublk_up NAME ARGS...: a zonednull-ublk device (needs $ZNU and $out)
# SCRIPT is the name of the script that runs (guest-nbd, guest-ublk, ...).
# The host counts the "ok" and "FAIL" lines (check-ublk.sh).

zn_me=$(basename "$0" .sh)
ok () { echo "ok   - $zn_me: $*"; passes=$((passes + 1)); }
fail () {
  echo "FAIL - $zn_me: $*"
  fails=$((fails + 1))
  [ -z "${fail_mark:-}" ] || : >"$fail_mark"
}
skip () { echo "SKIP - $zn_me: $*"; }

now () { date +%s; }
# waitfor TENTHS CMD...: until CMD succeeds, at most TENTHS tenths of a second.
waitfor () {
  n=$1; shift
  while ! "$@" 2>/dev/null; do
    [ "$n" -le 0 ] && return 1
    sleep 0.1; n=$((n - 1))
  done
}
alive () { kill -0 "$1" 2>/dev/null; }
dead () { ! kill -0 "$1" 2>/dev/null; }
# reap PID TENTHS: waits for PID to end (bounded); rc = its status, or 124
# when it is still running (it is then left alone).
reap () {
  if waitfor "$2" dead "$1"; then wait "$1"; return $?; fi
  return 124
}

# ublk_up NAME ARGS...: zonednull-ublk -f -P $out/NAME.pid ARGS (its
# output in $out/NAME.stdout and .stderr); sets DEV and UPID, or fails (a
# FAIL line) and returns 1, UPID set if it still runs.
ublk_up () {
  name=$1; shift
  DEV= UPID=
  rm -f "$out/$name.pid"
  "$ZNU" -f -P "$out/$name.pid" "$@" >"$out/$name.stdout" \
    2>"$out/$name.stderr" &
  UPID=$!
  n=600
  while ! grep -qs '^/dev/ublkb[0-9]' "$out/$name.stdout"; do
    if dead "$UPID" || [ $n -le 0 ]; then
      if dead "$UPID"; then wait "$UPID"; why="exited with status $?"
      else why="printed no device in 60 s"; kill -KILL "$UPID" 2>/dev/null; reap "$UPID" 50; fi
      fail "$name: zonednull-ublk $* $why: $(tail -n 3 "$out/$name.stderr" | tr '\n' ' ')"
      UPID=
      return 1
    fi
    sleep 0.1; n=$((n - 1))
  done
  DEV=$(grep -m 1 '^/dev/ublkb[0-9]' "$out/$name.stdout")
  waitfor 100 test -b "$DEV" && return 0
  fail "$name: $DEV (printed by zonednull-ublk) is no block device"
  return 1
}

# first_diff A B LABEL: the first line where null_blk's file A and the
# other device's file B differ, with the line before it.
first_diff () {
  awk -v fa="$1" -v fb="$2" -v label="$3" 'BEGIN {
    n = 0
    while (1) {
      ra = (getline la < fa) > 0; rb = (getline lb < fb) > 0; n++
      if (!ra && !rb) exit
      if (!ra) la = "<end of file>"
      if (!rb) lb = "<end of file>"
      if (la != lb) {
        if (n > 1) printf "      line %d (both): %s\n", n - 1, prev
        printf "      line %d null_blk: %s\n      line %d %-9s %s\n", n, la, n, label ":", lb
        exit
      }
      prev = la
    }
  }'
}

# uptime_cs: the uptime in hundredths of a second (busybox's date has no %N).
uptime_cs () { sed 's/^\([0-9]*\)\.\([0-9]*\) .*/\1\2/' /proc/uptime; }
