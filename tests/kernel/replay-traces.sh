# SPDX-License-Identifier: BSD-3-Clause
# replay-traces.sh: the host side of every tier's null_blk traces
# (sourced by check-kernel.sh, check-ublk.sh and check-nullblk.sh).
#
#   zn_replay_traces CONF DIR KERNEL
#
# For each line "NAME SEED NOPS KEY=VALUE..." of CONF, the guest left
# DIR/NAME.refused (null_blk refused the configuration) or DIR/NAME.trace.
# A refused configuration must be refused by the plugin and by
# zonednull-server too, both told kernel=KERNEL.  A trace is replayed by
# tests/replay against the model, over NBD to nbdkit with the plugin
# (--nbdkit) and to a zonednull-server started here with the trace's
# settings on a Unix socket (--connect); the kernel is the one the trace's
# `# kernel` line names (the replay reads it; the server is given it as
# kernel=).  A golden-NAME trace must also reproduce the first ops of
# tests/traces/k6.1/NAME.trace.  Failing traces are copied to $keep.
# Uses fail, note, $work, $keep, $srcdir, $REPLAY, $ZONEDNULL_PLUGIN,
# $ZONEDNULL_SERVER, $NBDKIT; sets zr_configs zr_traced zr_refused zr_ops
# zr_model zr_nbdkit zr_server (traces that matched on each).

# zn_kernel_of UNAME-R: the tier's name of a kernel release, 6.12.95+deb12-amd64 -> 6.12.
zn_kernel_of () {
  echo "$1" | sed -n 's/^\([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p'
}

# zr_server SETTINGS: zonednull-server on $work/zr.sock; sets zr_pid, or
# returns 1 when it does not start (its message in $work/zr.err).
zr_server () {
  rm -f "$work/zr.sock" "$work/zr.pid"
  # shellcheck disable=SC2086
  "$ZONEDNULL_SERVER" -f --exit-with-parent -U "$work/zr.sock" -P "$work/zr.pid" $1 \
    </dev/null 2>"$work/zr.err" &
  zr_pid=$!
  n=0
  while [ ! -s "$work/zr.pid" ] && kill -0 "$zr_pid" 2>/dev/null && [ $n -lt 300 ]; do
    sleep 0.1; n=$((n + 1))
  done
  [ -s "$work/zr.pid" ] && return 0
  kill "$zr_pid" 2>/dev/null; wait "$zr_pid" 2>/dev/null
  zr_pid=
  return 1
}
zr_server_stop () {
  [ -n "$zr_pid" ] || return 0
  kill "$zr_pid" 2>/dev/null
  wait "$zr_pid"
  zr_src=$?
  zr_pid=
  [ "$zr_src" -eq 0 ] || fail "zonednull-server exited with status $zr_src on SIGTERM: $(tail -n 5 "$work/zr.err")"
}

zn_replay_traces () {
  zr_conf=$1 zr_dir=$2 zr_kernel=$3
  zr_configs=0 zr_traced=0 zr_refused=0 zr_ops=0 zr_model=0 zr_nbdkit=0 zr_server=0
  # A refusal below only counts when both take kernel=KERNEL itself.
  if ! "$NBDKIT" -U - "$ZONEDNULL_PLUGIN" size=4 zone_size=1 "kernel=$zr_kernel" --run true \
       >"$work/refuse.out" 2>&1; then
    fail "the plugin does not take kernel=$zr_kernel: $(tail -n 1 "$work/refuse.out")"
  fi
  if zr_server "size=4 zone_size=1 kernel=$zr_kernel"; then zr_server_stop
  else fail "zonednull-server does not take kernel=$zr_kernel: $(tail -n 1 "$work/zr.err")"; fi
  while read -r name tseed n settings; do
    [ -n "$name" ] || continue
    zr_configs=$((zr_configs + 1))
    trace=$zr_dir/$name.trace
    if [ -f "$zr_dir/$name.refused" ]; then
      why=$(cat "$zr_dir/$name.refused")
      # Only the keys that shape the device go to nbdkit.
      keys=
      for kv in $settings; do
        case ${kv%%=*} in irqmode|completion_nsec|hw_queue_depth) ;; *) keys="$keys $kv" ;; esac
      done
      keys="$keys kernel=$zr_kernel"
      # An attribute the kernel lacks: the refusals must name it.
      lacks=$(echo "$why" | sed -n 's/.* has no attribute \([a-z_]*\)$/\1/p')
      both=1
      # shellcheck disable=SC2086
      if "$NBDKIT" -U - "$ZONEDNULL_PLUGIN" $keys --run true >"$work/refuse.out" 2>&1; then
        fail "$name: null_blk $zr_kernel refuses$keys ($why), the plugin accepts it"
        both=
      fi
      if zr_server "$keys"; then
        fail "$name: null_blk $zr_kernel refuses$keys ($why), zonednull-server accepts it"
        zr_server_stop
        both=
      fi
      if [ -n "$both" ] && [ -n "$lacks" ] &&
         ! { grep -q "$lacks" "$work/refuse.out" && grep -q "$lacks" "$work/zr.err"; }; then
        fail "$name: null_blk $zr_kernel has no $lacks; the refusals do not name it:" \
          "$(tail -n 1 "$work/refuse.out"); $(tail -n 1 "$work/zr.err")"
        both=
      fi
      if [ -n "$both" ]; then
        zr_refused=$((zr_refused + 1))
        note "ok: $name: null_blk $zr_kernel ($why), the plugin ($(tail -n 1 "$work/refuse.out"))" \
          "and zonednull-server ($(tail -n 1 "$work/zr.err")) refuse$keys"
      fi
      continue
    fi
    if [ ! -s "$trace" ]; then
      fail "$name: the guest produced no trace"
      continue
    fi
    zr_traced=$((zr_traced + 1))
    zr_ops=$((zr_ops + n))
    tk=$(zn_kernel_of "$(sed -n '1s/^# kernel \([^ ]*\).*/\1/p' "$trace")")
    [ "$tk" = "$zr_kernel" ] || fail "$name: the trace's kernel is '$tk', the tier's $zr_kernel"
    tfail=
    case $name in
      golden-*)
        g=$srcdir/tests/traces/k6.1/${name#golden-}.trace
        lines=$(($(wc -l <"$trace") - 4))
        tail -n +5 "$g" | head -n "$lines" >"$work/golden.head"
        if tail -n +5 "$trace" | cmp -s - "$work/golden.head"; then
          note "ok: $name: zntrace reproduces the golden recording (ops 0..$n)"
        else
          fail "$name: zntrace does not reproduce $(basename "$g") (< published, > this run):"
          tail -n +5 "$trace" | diff "$work/golden.head" - | head -n 5
          tfail=1
        fi ;;
    esac
    for how in model nbdkit server; do
      case $how in
        model) "$REPLAY" "$trace" >"$work/replay.out" 2>&1 ;;
        nbdkit)
          TMPDIR=$work NBDKIT=$NBDKIT "$REPLAY" --nbdkit="$ZONEDNULL_PLUGIN" "$trace" \
            >"$work/replay.out" 2>&1 ;;
        server)
          if zr_server "$settings kernel=$tk"; then
            "$REPLAY" --connect="nbd+unix:///?socket=$work/zr.sock" "$trace" >"$work/replay.out" 2>&1
            rrc=$?
            zr_server_stop
            (exit $rrc)
          else
            echo "zonednull-server refuses $settings kernel=$tk: $(tail -n 2 "$work/zr.err")" \
              >"$work/replay.out"
            false
          fi ;;
      esac
      if [ $? -eq 0 ]; then
        eval "zr_$how=\$((zr_$how + 1))"
        note "ok: $name: $how: $(sed -n 's/.*: \([0-9]* ops match on the .*\)/\1/p' "$work/replay.out")"
      else
        fail "$name differs on the $how (seed $tseed, config: $settings):"
        sed 's/^/    /' "$work/replay.out"
        tfail=1
      fi
    done
    if [ -n "$tfail" ]; then
      mkdir -p "$keep"
      cp "$trace" "$keep/$name.trace"
      note "kept $keep/$name.trace (a regression trace for tests/traces/k$zr_kernel/)"
    fi
  done <"$zr_conf"
  note "kernel $zr_kernel: $zr_configs configurations drawn, $zr_traced traced ($zr_ops ops)," \
    "$zr_refused refused by null_blk, the plugin and zonednull-server;" \
    "traces matching: model $zr_model, nbdkit $zr_nbdkit, zonednull-server $zr_server of $zr_traced"
}
