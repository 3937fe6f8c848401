# SPDX-License-Identifier: BSD-3-Clause
# Guest half of bench/ublk-vs-nullblk.sh (busybox sh, Linux 6.12 under
# qemu TCG).  The host prepends the settings:
#   CONF       KEY=VALUE... for both devices (null_blk configfs and
#              zonednull-ublk)
#   ZONE_MB    the zone size in MiB (from CONF)
#   RUNTIME    seconds per fio run; REPEATS rounds
#   READ_ZONES zones filled first and read at random
#   PARTS      "local remote" or either: null_blk against zonednull-ublk,
#              and/or the remote case below
#   REMOTE     "KIND:PORT ..." host servers (zonednull-server, nbdkit
#              zonednull) with CONF, memory-backed, at 10.0.2.2:PORT
#   NBD_KO     the nbd module's path in the guest (the benchmark's own
#              cpio: the tier's base image carries no nbd)
#   BLOCKSIZE  the servers' logical block size (nbd-client -b)
#   ANCHOR     bench/ublk-null's path in the guest (the benchmark's cpio):
#              the plain anchor, and the zoned one (its ZONE_MIB mode)
#   SERVER     zonednull-server in the guest (the benchmark's cpio): the
#              local part's conn device, zonednull-ublk --connect to it
#              over a Unix socket
#   STRACE     strace in the guest (the benchmark's cpio): the local
#              part's system call counts
#   SEEDS      "host_tags zone_locking" or either (PARTS's seeds part)
# Runs as tests/kernel/check-ublk.sh's ZN_UBLK_GUEST_SCRIPT
# (/test/guest-extra.sh), after its guest-ublk.sh has loaded null_blk and
# ublk_drv.  Prints one line per fio run:
#   RESULT JOB DEV REPEAT IOPS IOS CPU_TICKS CTXT UBLK_TICKS ELAPSED_TICKS [UBLK_CTXT]
# (ticks: USER_HZ of /proc/stat; CPU_TICKS the guest's busy time on all
# CPUs, CTXT its context switches, UBLK_TICKS the ublk server's user+system
# time, 0 for null_blk; UBLK_CTXT, local part only, the voluntary and
# involuntary context switches of all the server's threads), and INFO
# lines.  DEV of the local part: nullb (null_blk), anchor (bench/ublk-null),
# zanchor (bench/ublk-null ZONE_MB, host-managed zoned), ublk and ublk0 (zonednull-ublk at memory_backed=1 and 0).  The remote case, per host
# server KIND: zonednull-ublk --connect=nbd://10.0.2.2:PORT/ (DEV connect)
# and the kernel's nbd client on the same export (DEV nbd), JOB
# KIND:remote_*.  The local part also prints, per run and per thread of
# the ublk server (TAG d) and of conn's zonednull-server (TAG s):
#   THREAD JOB DEV REPEAT TAG TID COMM RUN_NS VCTX NVCTX RCHAR WCHAR SYSCR SYSCW WCHAN
# (the deltas of /proc/PID/task/TID/schedstat's time on CPU, status's
# voluntary and involuntary switches, io's bytes and calls of the read and
# write families of system calls; WCHAN where it sleeps after the run), and
# per system call of strace -c -f on each server over a fixed job:
#   STRACE JOB DEV TAG IOS SYSCALL CALLS
# and for seqwrite_qd1, per group of all the guest's tasks (the servers'
# threads as daemon:COMM, kworkers by workqueue, ksoftirqd, other) and
# fio's own thread (its terse usr and sys %, context switches):
#   TASKS JOB DEV REPEAT GROUP RUN_NS VCTX NVCTX
#   FIOCPU JOB DEV REPEAT USR_PCT SYS_PCT CTX
# The seeds part prints
#   SEED EXP DEV REPEAT READ_IOPS WRITE_IOPS CPU_TICKS CTXT ELAPSED_TICKS DAEMON_NS DAEMON_VCTX
# (DAEMON_*: all threads of all its ublk servers).  No pass or fail on
# speed: a failed run gives IOPS 0 and an ERROR line.
. /test/params
FIO=/opt/fio/fio
BLKZONE=/usr/sbin/blkzone
# INFO and ERROR lines go to the console too: a VM that runs out of
# time shows there how far it got (check-ublk.sh prints its tail).
info () { echo "INFO $*"; echo "INFO $*" >/dev/console 2>/dev/null; }
err () { echo "ERROR $*"; echo "ERROR $*" >/dev/console 2>/dev/null; }

modprobe null_blk nr_devices=0 2>/dev/null
modprobe ublk_drv 2>/dev/null
[ -x "$FIO" ] || { err "no $FIO"; exit 1; }
[ -n "$UBLK" ] || { err "no zonednull-ublk"; exit 1; }

cpu () { awk '$1 == "cpu" { b = 0; for (i = 2; i <= NF; i++) if (i != 5 && i != 6) b += $i; t = 0; for (i = 2; i <= NF; i++) t += $i; print b, t } $1 == "ctxt" { print $2 }' /proc/stat | tr '\n' ' '; }
# pid_ticks PID: its user+system ticks (0 without a PID)
pid_ticks () { if [ -n "$1" ]; then awk '{ print $14 + $15 }' /proc/$1/stat; else echo 0; fi; }
fio_common="--ioengine=io_uring --direct=1 --bs=4k --output-format=terse
  --terse-version=3 --group_reporting --thread"
# snap TAG PID...: a line per thread of each PID: TAG TID COMM RUN_NS VCTX
# NVCTX RCHAR WCHAR SYSCR SYSCW WCHAN (schedstat's time on CPU is in ns,
# where /proc/PID/stat counts 10 ms ticks).
snap () {
  sn_tag=$1; shift
  for sn_p in "$@"; do
    [ -d "/proc/$sn_p" ] || continue
    for sn_t in /proc/$sn_p/task/*; do
      awk -v tag="$sn_tag" -v tid="${sn_t##*/}" '
        FILENAME ~ /comm$/ { comm = $0; gsub(/[ \t]/, "_", comm) }
        FILENAME ~ /wchan$/ { w = $0 }
        FILENAME ~ /schedstat$/ { ns = $1 }
        /^voluntary_ctxt_switches:/ { v = $2 } /^nonvoluntary_ctxt_switches:/ { n = $2 }
        /^rchar:/ { rc = $2 } /^wchar:/ { wc = $2 } /^syscr:/ { sr = $2 } /^syscw:/ { sw = $2 }
        END { if (w == "" || w == "0") w = "-"
              print tag, tid, comm, ns + 0, v + 0, n + 0, rc + 0, wc + 0, sr + 0, sw + 0, w }' \
        "$sn_t/comm" "$sn_t/schedstat" "$sn_t/status" "$sn_t/io" "$sn_t/wchan" 2>/dev/null
    done
  done
}
# snap_all: every task of the guest, TID PID COMM RUN_NS VCTX NVCTX (the
# kernel's threads too: where a request's kworker and softirq time goes).
snap_all () {
  awk '{ n = split(FILENAME, p, "/"); t = p[5] }
    FILENAME ~ /comm$/ { c = $0; gsub(/[ \t]/, "_", c); comm[t] = c; pid[t] = p[3] }
    FILENAME ~ /schedstat$/ { ns[t] = $1 }
    /^voluntary_ctxt_switches:/ { v[t] = $2 } /^nonvoluntary_ctxt_switches:/ { nv[t] = $2 }
    END { for (t in comm) print t, pid[t], comm[t], ns[t] + 0, v[t] + 0, nv[t] + 0 }' \
    /proc/[0-9]*/task/[0-9]*/comm /proc/[0-9]*/task/[0-9]*/schedstat \
    /proc/[0-9]*/task/[0-9]*/status 2>/dev/null
}
# snap_all_diff BEFORE AFTER PREFIX DAEMON-PIDS: TASKS PREFIX GROUP RUN_NS
# VCTX NVCTX per group of tasks: the ublk servers' threads (daemon:COMM),
# kworkers (by workqueue where the name has one), ksoftirqd, the rest;
# fio's threads are gone by then (fio's own counts: FIOCPU).
snap_all_diff () {
  awk -v pre="$3" -v dp=" $4 " 'NR == FNR { a[$1, 4] = $4; a[$1, 5] = $5; a[$1, 6] = $6; next }
    { g = $3
      if (index(dp, " " $2 " ")) g = "daemon:" g
      else if (g ~ /^kworker/) { g = (g ~ /-/) ? "kworker-" substr(g, index(g, "-") + 1) : "kworker" }
      else if (g ~ /^ksoftirqd/) g = "ksoftirqd"
      else if (g !~ /^fio/) g = "other"
      for (i = 4; i <= 6; i++) d[g, i] += $i - a[$1, i]
      seen[g] = 1 }
    END { for (g in seen) if (d[g, 5] + d[g, 6] > 0) print "TASKS " pre " " g, d[g, 4], d[g, 5], d[g, 6] }' "$1" "$2"
}
# snap_diff BEFORE AFTER PREFIX: the THREAD lines (PREFIX: JOB DEV REPEAT).
snap_diff () {
  awk -v pre="$3" 'NR == FNR { for (i = 4; i <= 10; i++) a[$1, $2, i] = $i; next }
    { l = "THREAD " pre " " $1 " " $2 " " $3
      for (i = 4; i <= 10; i++) l = l " " ($i - a[$1, $2, i])
      print l " " $11 }' "$1" "$2"
}
# snap_sum FILE: the total time on CPU (ns) and voluntary switches in FILE.
snap_sum () { awk '{ ns += $4; v += $5 } END { print ns + 0, v + 0 }' "$1"; }
# measure JOB NAME REPEAT DEV PID COL: one fio run with $args on DEV, one
# RESULT line (PID: the daemon whose CPU time is counted, or empty).
measure () {
  m_job=$1 m_name=$2 m_rep=$3 m_d=$4 m_pid=$5 m_col=$6
  # shellcheck disable=SC2046
  set -- $(cpu) $(pid_ticks "$m_pid")
  b0=$1 t0=$2 c0=$3 p0=$4
  # shellcheck disable=SC2086
  $FIO --name="${m_job#*:}" --filename="$m_d" $fio_common $args --time_based \
    --runtime="$RUNTIME" >/tmp/fio.out 2>/tmp/fio.err
  frc=$?
  # shellcheck disable=SC2046
  set -- $(cpu) $(pid_ticks "$m_pid")
  b1=$1 t1=$2 c1=$3 p1=$4
  line=$(grep '^3;' /tmp/fio.out | tail -n 1)
  if [ $frc -ne 0 ] || [ -z "$line" ]; then
    err "$m_job on $m_d (repeat $m_rep): fio exited $frc: $(tail -n 3 /tmp/fio.err | tr '\n' ' ')"
    iops=0 kb=0
    [ -n "$m_pid" ] && err "  zonednull-ublk: $(tail -n 3 /tmp/connect.err | tr '\n' ' ')"
    [ -b "${cdev:-}" ] && err "  zones: $($BLKZONE report -o $((${wstart:-0} / 512)) -c 4 "$cdev" | tr -s ' ' | cut -d, -f2-4 | tr '\n' ';')"
  else
    iops=$(echo "$line" | cut -d';' -f$((m_col + 2)))
    kb=$(echo "$line" | cut -d';' -f$m_col)
  fi
  echo "RESULT $m_job $m_name $m_rep $iops $((kb / 4)) $((b1 - b0)) $((c1 - c0)) $((p1 - p0)) $((t1 - t0))"
}
zone=$((ZONE_MB * 1048576))
rbytes=$((READ_ZONES * zone))
info "guest: $(nproc) CPUs, $(uname -r)"

# wait_device OUT PID: the device path a server prints first on OUT, once
# it is a block device (at most 30 s for the line, 5 s for the node);
# empty if the server PID exits first.
wait_device () {
  wd_dev= wd_n=0
  while [ $wd_n -lt 300 ] && [ -z "$wd_dev" ]; do
    wd_dev=$(head -n 1 "$1" 2>/dev/null)
    kill -0 "$2" 2>/dev/null || break
    [ -n "$wd_dev" ] || sleep 0.1
    wd_n=$((wd_n + 1))
  done
  wd_n=0
  while [ -n "$wd_dev" ] && [ ! -b "$wd_dev" ] && [ $wd_n -lt 50 ]; do
    sleep 0.1; wd_n=$((wd_n + 1))
  done
  echo "$wd_dev"
}

local_part () {
# ---- the devices ------------------------------------------------------------
# nullb: null_blk with CONF; ublk and ublk0: zonednull-ublk with CONF at
# memory_backed=1 and memory_backed=0; anchor: bench/ublk-null, a plain
# disk of the same size, block size and queue depth whose server completes
# every request at once (the round trip of any ublk server); zanchor: the
# same server host-managed zoned, zones of ZONE_MB (all sequential, no open
# or active limit), which pays the block layer's zone write plug as
# zonednull-ublk does.
cfs=/sys/kernel/config/nullb/nullb0
mkdir "$cfs" || { err "mkdir $cfs"; exit 1; }
echo 1 >"$cfs/zoned"
for kv in $CONF; do
  echo "${kv#*=}" >"$cfs/${kv%%=*}" || { err "null_blk: cannot set $kv"; exit 1; }
done
echo 1 >"$cfs/power" || { err "null_blk refuses $CONF"; exit 1; }
dev_nullb=/dev/nullb0 pid_nullb= zoned_nullb=1
[ -b "$dev_nullb" ] || { err "no $dev_nullb"; exit 1; }
conf_mb () { for kv in $CONF; do case $kv in memory_backed=*) ;; *) printf '%s ' "$kv" ;; esac; done; echo "memory_backed=$1"; }
size_mb=1024 depth=64
for kv in $CONF; do
  case $kv in size=*) size_mb=${kv#size=} ;; hw_queue_depth=*) depth=${kv#hw_queue_depth=} ;; esac
done
# start_daemon NAME COMMAND...: starts a server that prints its device's
# path on stdout once it exists; sets dev_NAME, pid_NAME.
start_daemon () {
  sd_name=$1; shift
  "$@" >/tmp/$sd_name.out 2>/tmp/$sd_name.err &
  sd_pid=$!
  sd_dev=$(wait_device /tmp/$sd_name.out $sd_pid)
  [ -b "$sd_dev" ] || { err "$sd_name gave no device: $(cat /tmp/$sd_name.err)"; exit 1; }
  eval "dev_$sd_name=$sd_dev pid_$sd_name=$sd_pid"
}
# shellcheck disable=SC2046
start_daemon ublk "$UBLK" -f --no-control-socket $(conf_mb 1)
zoned_ublk=1
# shellcheck disable=SC2046
start_daemon ublk0 "$UBLK" -f --no-control-socket $(conf_mb 0)
zoned_ublk0=1
if [ -x "${ANCHOR:-}" ]; then
  start_daemon anchor "$ANCHOR" "$size_mb" "$BLOCKSIZE" "$depth"
  zoned_anchor=0
  start_daemon zanchor "$ANCHOR" "$size_mb" "$BLOCKSIZE" "$depth" "$ZONE_MB"
  zoned_zanchor=1
  names="nullb anchor zanchor ublk ublk0"
else
  err "no ublk-null in the guest ($ANCHOR): no anchor"
  names="nullb ublk ublk0"
fi
# conn: zonednull-ublk --connect to a zonednull-server of CONF in this
# guest, over a Unix socket (as the tier's own guest server); spid_conn
# is the server's PID, whose threads are counted too (TAG s).
spid_conn=
if [ -x "${SERVER:-}" ]; then
  rm -f /tmp/srv.sock /tmp/srv.pid
  # shellcheck disable=SC2086
  "$SERVER" -f -U /tmp/srv.sock -P /tmp/srv.pid $CONF >/tmp/srv.out 2>/tmp/srv.err &
  n=0
  while [ ! -s /tmp/srv.pid ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
  spid_conn=$(cat /tmp/srv.pid 2>/dev/null)
  [ -n "$spid_conn" ] || { err "zonednull-server gave no PID: $(cat /tmp/srv.err)"; exit 1; }
  start_daemon conn "$UBLK" -f "--connect=nbd+unix:///?socket=/tmp/srv.sock"
  zoned_conn=1
  names="$names conn"
else
  err "no zonednull-server in the guest (${SERVER:-}): no conn device"
fi
# The same I/O path on all: no I/O scheduler.  (6.12 gives a device of
# one hardware queue mq-deadline by default, as the anchor has; null_blk
# has a poll queue besides its submit queue, hence two, and gets none,
# which zonednull-ublk copies at start.)
for name in $names; do
  eval "d=\$dev_$name p=\$pid_$name"
  b=${d#/dev/}
  echo none >/sys/block/$b/queue/scheduler || err "cannot set no scheduler on $d"
  # Without zones nothing holds sequential writes back to one at a time,
  # and the block layer would merge fio's 4 KiB writes into fewer, larger
  # requests: the anchor must make a round trip per I/O.
  [ "$name" = anchor ] && { echo 2 >/sys/block/$b/queue/nomerges || err "cannot set nomerges on $d"; }
  # The anchors' requests as large as zonednull-ublk's (null_blk's
  # max_sectors): at QD16 in one zone the zone write plug merges writes
  # up to that size, and a server of larger requests makes fewer trips.
  case $name in anchor|zanchor)
    msk=$(cat /sys/block/${dev_ublk#/dev/}/queue/max_sectors_kb)
    echo "$msk" >/sys/block/$b/queue/max_sectors_kb || err "cannot set max_sectors_kb=$msk on $d" ;;
  esac
  a=
  for f in zoned nr_zones chunk_sectors max_sectors_kb nr_requests scheduler write_cache logical_block_size nomerges; do
    a="$a $f=$(cat /sys/block/$b/queue/$f 2>/dev/null | tr ' ' ,)"
  done
  info "$name $d:$a hw_queues=$(ls /sys/block/$b/mq | wc -l) bytes=$(/usr/sbin/blockdev --getsize64 $d) pid=$p"
done
[ -n "$spid_conn" ] && info "conn's zonednull-server: pid=$spid_conn, $(ls /proc/$spid_conn/task | wc -l) threads; conn's zonednull-ublk: $(ls /proc/$pid_conn/task | wc -l) threads"

zone=$((ZONE_MB * 1048576))
nzones=$(cat /sys/block/nullb0/queue/nr_zones)
rbytes=$((READ_ZONES * zone))
# The write jobs use the zones after the read zones: 4 jobs of WZ zones.
wz=$(( (nzones - READ_ZONES) / 4 ))
[ "$wz" -ge 1 ] || { err "too few zones: $nzones"; exit 1; }
wstart=$rbytes
wlen=$((4 * wz * zone))

fio_common="--ioengine=io_uring --direct=1 --bs=4k --output-format=terse
  --terse-version=3 --group_reporting --thread"

# Fill the read zones (1 MiB sequential writes; on the plain anchor the
# same writes, for the same history).
for name in $names; do
  eval "d=\$dev_$name z=\$zoned_$name"
  zbd=; [ "$z" = 1 ] && { $BLKZONE reset "$d"; zbd=--zonemode=zbd; }
  # shellcheck disable=SC2086
  $FIO --name=fill --filename="$d" --ioengine=io_uring --direct=1 --bs=1M \
    --iodepth=4 --rw=write $zbd --offset=0 --size=$rbytes \
    --output-format=terse >/tmp/fill.out 2>&1 ||
    { err "fill of $d failed: $(tail -n 3 /tmp/fill.out)"; exit 1; }
  [ "$z" = 1 ] && info "filled $READ_ZONES zones of $d: $($BLKZONE report -c "$READ_ZONES" "$d" | tr -s ' ' | cut -d, -f4 | tr '\n' ' ')"
done

cpu () { awk '$1 == "cpu" { b = 0; for (i = 2; i <= NF; i++) if (i != 5 && i != 6) b += $i; t = 0; for (i = 2; i <= NF; i++) t += $i; print b, t } $1 == "ctxt" { print $2 }' /proc/stat | tr '\n' ' '; }
# daemon PID: its user+system ticks (all threads: /proc/PID/stat counts
# them) and the context switches of all its threads; 0 0 without a PID.
daemon () {
  if [ -n "$1" ]; then
    t=$(awk '{ print $14 + $15 }' /proc/$1/stat)
    c=$(cat /proc/$1/task/*/status | awk '/^(non)?voluntary_ctxt_switches:/ { s += $2 } END { print s + 0 }')
    echo "$t $c"
  else
    echo 0 0
  fi
}

# run JOB NAME REPEAT
run () {
  job=$1 name=$2 rep=$3
  eval "d=\$dev_$name p=\$pid_$name z=\$zoned_$name"
  zbd=; [ "$z" = 1 ] && zbd=--zonemode=zbd
  timed="--time_based --runtime=$RUNTIME"
  case $job in
    randread_qd16)
      args="--rw=randread --iodepth=16 --offset=0 --size=$rbytes" col=6 ;;
    seqwrite_qd1)
      args="--rw=write --iodepth=1 $zbd --offset=$wstart --size=$wlen" col=47 ;;
    seqwrite_qd16_1zone)
      args="--rw=write --iodepth=16 $zbd --offset=$wstart --size=$wlen" col=47 ;;
    seqwrite_qd16_4zones)
      args="--rw=write --iodepth=4 --numjobs=4 $zbd --offset=$wstart
        --size=$((wz * zone)) --offset_increment=$((wz * zone))" col=47 ;;
    write500_qd1)
      args="--rw=write --iodepth=1 $zbd --offset=$wstart --size=$wlen --io_size=$((500 * 4096))" col=47 timed= ;;
  esac
  reset=; [ "$z" = 1 ] && case $job in *write*) reset=1 ;; esac
  [ -n "$reset" ] && $BLKZONE reset -o $((wstart / 512)) -l $((wlen / 512)) "$d"
  eval "sp=\${spid_$name:-}"
  { snap d $p; snap s $sp; } >/tmp/th0
  [ "$job" = seqwrite_qd1 ] && snap_all >/tmp/all0
  set -- $(cpu) $(daemon "$p")
  b0=$1 t0=$2 c0=$3 p0=$4 x0=$5
  # shellcheck disable=SC2086
  $FIO --name="$job" --filename="$d" $fio_common $args $timed >/tmp/fio.out 2>/tmp/fio.err
  frc=$?
  set -- $(cpu) $(daemon "$p")
  b1=$1 t1=$2 c1=$3 p1=$4 x1=$5
  { snap d $p; snap s $sp; } >/tmp/th1
  [ "$job" = seqwrite_qd1 ] && snap_all >/tmp/all1
  line=$(grep '^3;' /tmp/fio.out | tail -n 1)
  if [ $frc -ne 0 ] || [ -z "$line" ]; then
    err "$job on $name $d (repeat $rep): fio exited $frc: $(tail -n 3 /tmp/fio.err | tr '\n' ' ')"
    iops=0 kb=0
  else
    iops=$(echo "$line" | cut -d';' -f$((col + 2)))
    kb=$(echo "$line" | cut -d';' -f$col)
  fi
  [ -n "$reset" ] && $BLKZONE reset -o $((wstart / 512)) -l $((wlen / 512)) "$d"
  echo "RESULT $job $name $rep $iops $((kb / 4)) $((b1 - b0)) $((c1 - c0)) $((p1 - p0)) $((t1 - t0)) $((x1 - x0))"
  snap_diff /tmp/th0 /tmp/th1 "$job $name $rep"
  if [ "$job" = seqwrite_qd1 ]; then
    snap_all_diff /tmp/all0 /tmp/all1 "$job $name $rep" "$p $sp"
    # fio's own thread (terse v3: usr and sys in % of the run, context
    # switches), which has exited when the tasks are read again.
    [ -n "$line" ] && echo "FIOCPU $job $name $rep $(echo "$line" | cut -d';' -f88-90 | tr -d '%' | tr ';' ' ')"
  fi
}

# strace_runs: per ublk server, strace -c -f (all its threads; conn's
# zonednull-server beside it) over a fixed number of I/Os, not timed:
# sc_write_qd1 (500 zoned writes at QD1 in the write zones) and
# sc_randread_qd16 (4000 random reads at QD16 over the read zones).
strace_runs () {
  for name in $names; do
    eval "d=\$dev_$name p=\$pid_$name z=\$zoned_$name sp=\${spid_$name:-}"
    [ -n "$p" ] || continue
    zbd=; [ "$z" = 1 ] && zbd=--zonemode=zbd
    for job in sc_write_qd1 sc_randread_qd16; do
      case $job in
        sc_write_qd1) ios=500
          args="--rw=write --iodepth=1 $zbd --offset=$wstart --size=$wlen --io_size=$((ios * 4096))" ;;
        sc_randread_qd16) ios=4000
          args="--rw=randread --iodepth=16 --offset=0 --size=$rbytes --io_size=$((ios * 4096))" ;;
      esac
      [ "$z" = 1 ] && $BLKZONE reset -o $((wstart / 512)) -l $((wlen / 512)) "$d"
      spids=
      for tp in "d:$p" "s:$sp"; do
        [ -n "${tp#*:}" ] || continue
        rm -f /tmp/st.${tp%%:*}
        "$STRACE" -c -f -q -o /tmp/st.${tp%%:*} -p "${tp#*:}" 2>/tmp/st.${tp%%:*}.err &
        spids="$spids $!"
      done
      sleep 1
      # shellcheck disable=SC2086
      $FIO --name="$job" --filename="$d" $fio_common $args >/tmp/fio.out 2>/tmp/fio.err ||
        err "$job on $name under strace: fio: $(tail -n 3 /tmp/fio.err | tr '\n' ' ')"
      # shellcheck disable=SC2086
      kill -INT $spids
      for s in $spids; do wait "$s"; done
      for tg in d s; do
        [ -f /tmp/st.$tg ] || continue
        awk -v pre="STRACE $job $name $tg $ios" '
          $1 ~ /^[0-9.]+$/ && $NF != "total" && NF >= 5 { print pre, $NF, $4 }' /tmp/st.$tg
        [ -s /tmp/st.$tg ] || err "strace of $name ($tg) wrote nothing: $(cat /tmp/st.$tg.err)"
      done
      [ "$z" = 1 ] && $BLKZONE reset -o $((wstart / 512)) -l $((wlen / 512)) "$d"
    done
  done
}

info "read zones $READ_ZONES ($rbytes bytes), write jobs at $wstart: 4 x $wz zones; ${RUNTIME}s per run, $REPEATS repeats"
rep=1
while [ $rep -le "$REPEATS" ]; do
  # The devices take turns; the order rotates from one repeat to the next.
  order=$names
  i=1
  while [ $i -lt $rep ]; do set -- $order; first=$1; shift; order="$* $first"; i=$((i + 1)); done
  for job in randread_qd16 seqwrite_qd1 seqwrite_qd16_1zone seqwrite_qd16_4zones write500_qd1; do
    for name in $order; do run $job $name $rep; done
  done
  rep=$((rep + 1))
done
if [ -x "${STRACE:-}" ]; then strace_runs
else err "no strace in the guest (${STRACE:-}): no system call counts"; fi

for name in $names; do
  eval "d=\$dev_$name"
  set -- $(cat /sys/block/${d#/dev/}/stat)
  info "$name $d in all: $1 reads ($2 merged), $5 writes ($6 merged)"
done
for name in $names; do
  eval "p=\$pid_$name"
  [ -n "$p" ] || continue
  kill -TERM $p
  wait $p
  info "$name exited $?: $(tail -n 4 /tmp/$name.err | tr '\n' ' ')"
done
if [ -n "$spid_conn" ]; then kill -TERM "$spid_conn"; wait "$spid_conn"; fi
echo 0 >"$cfs/power"
rmdir "$cfs"
}

# ---- the remote case: one host server export, two clients ------------------
# remote_part KIND PORT: zonednull-ublk --connect and the kernel's nbd client
# (nbd-client -N nullb0, one connection) attached together to the same
# export; the read zones filled once through --connect; before and after
# every write run the server's write zones reset through --connect's
# blkzone (the server's zones, which both devices write).  On --connect the
# writes are zonemode=zbd; on nbd, which has no zones, plain sequential
# writes from the start of the same empty zones, so every write lands at
# the server's write pointer (a connection's requests are applied in the
# order sent).
remote_part () {
  kind=$1 port=$2
  uri=nbd://10.0.2.2:$port/
  rm -f /tmp/connect.pid
  cdev=$("$UBLK" -P /tmp/connect.pid --connect="$uri" 2>/tmp/connect.err)
  cpid=$(cat /tmp/connect.pid 2>/dev/null)
  [ -b "$cdev" ] && [ -n "$cpid" ] ||
    { err "$kind: zonednull-ublk --connect=$uri gave no device: $(cat /tmp/connect.err)"; return 1; }
  ndev=/dev/nbd0
  o=$(nbd-client 10.0.2.2 "$port" $ndev -N nullb0 -b "$BLOCKSIZE" 2>&1) ||
    { err "$kind: nbd-client 10.0.2.2 $port: $o"; kill "$cpid"; return 1; }
  for d in $cdev $ndev; do
    b=${d#/dev/}
    echo none >/sys/block/$b/queue/scheduler 2>/dev/null || true
    a=
    for f in zoned nr_zones chunk_sectors max_sectors_kb nr_requests scheduler logical_block_size; do
      a="$a $f=$(cat /sys/block/$b/queue/$f 2>/dev/null | tr ' ' ,)"
    done
    info "$kind $d:$a hw_queues=$(ls /sys/block/$b/mq | wc -l) bytes=$(/usr/sbin/blockdev --getsize64 $d)"
  done
  info "$kind: zonednull-ublk --connect=$uri pid $cpid ($cdev), nbd-client $ndev on the same export"
  nzones=$(cat /sys/block/${cdev#/dev/}/queue/nr_zones)
  wz=$(( (nzones - READ_ZONES) / 4 ))
  [ "$wz" -ge 1 ] || { err "too few zones: $nzones"; return 1; }
  wstart=$rbytes wlen=$((4 * wz * zone))
  $BLKZONE reset "$cdev"
  $FIO --name=fill --filename="$cdev" --ioengine=io_uring --direct=1 --bs=1M \
    --iodepth=4 --rw=write --zonemode=zbd --offset=0 --size=$rbytes \
    --output-format=terse >/tmp/fill.out 2>&1 ||
    { err "$kind: fill of $cdev failed: $(tail -n 3 /tmp/fill.out)"; return 1; }
  info "$kind: filled $READ_ZONES zones of the server: $($BLKZONE report -c "$READ_ZONES" "$cdev" | tr -s ' ' | cut -d, -f4 | tr '\n' ' ')"
  rep=1
  while [ $rep -le "$REPEATS" ]; do
    for job in randread_qd16 seqwrite_qd16 seqwrite_qd16_4zones; do
      if [ $((rep % 2)) -eq 1 ]; then order="nbd connect"; else order="connect nbd"; fi
      for name in $order; do
        if [ $name = connect ]; then d=$cdev zbd="--zonemode=zbd" mpid=$cpid
        else d=$ndev zbd="" mpid=""; fi
        case $job in
          randread_qd16) args="--rw=randread --iodepth=16 --offset=0 --size=$rbytes" col=6 ;;
          seqwrite_qd16) args="--rw=write --iodepth=16 $zbd --offset=$wstart --size=$wlen" col=47 ;;
          seqwrite_qd16_4zones)
            args="--rw=write --iodepth=4 --numjobs=4 $zbd --offset=$wstart
              --size=$((wz * zone)) --offset_increment=$((wz * zone))" col=47 ;;
        esac
        case $job in seqwrite*) $BLKZONE reset -o $((wstart / 512)) -l $((wlen / 512)) "$cdev" ;; esac
        measure "$kind:remote_$job" $name $rep "$d" "$mpid" $col
        case $job in seqwrite*)
          [ $rep -eq 1 ] && info "$kind $name $job: write pointers after the run: $($BLKZONE report -o $((wstart / 512)) -c 4 "$cdev" | sed -n 's/.*wptr \(0x[0-9a-f]*\).*/\1/p' | tr '\n' ' ')"
          $BLKZONE reset -o $((wstart / 512)) -l $((wlen / 512)) "$cdev" ;;
        esac
      done
    done
    rep=$((rep + 1))
  done
  nbd-client -d $ndev >/dev/null 2>&1 || err "$kind: nbd-client -d $ndev failed"
  kill -TERM "$cpid"
  n=0
  while [ -d /proc/$cpid ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
  [ -d /proc/$cpid ] && err "$kind: zonednull-ublk --connect did not exit"
  info "$kind: zonednull-ublk --connect stopped: $(tail -n 3 /tmp/connect.err | tr '\n' ' ')"
  return 0
}

# ---- the seeds' experiments on block devices --------------------------------
# seeds_part: bench/run.sh's host_tags and zone_locking (the seeds'
# settings) on null_blk and zonednull-ublk in this VM.  null_blk's
# shared_tags take the module's tag set, sized by its module parameters
# (submit_queues, hw_queue_depth, shared_tag_bitmap; read-only once
# loaded), so null_blk is reloaded for each layout.  zonednull-ublk serves
# one device per process and has no tag space shared between processes or
# queues (it refuses shared_tag_bitmap=1 with submit_queues=2): its four
# devices are four processes with 16 tags per queue, shared_tags=1 taken
# and meaning nothing more.
# sd_nullb N KEY=VALUE...: configfs null_blk devices nullb0..nullbN-1.
sd_nullb () {
  sn_n=$1; shift
  i=0
  while [ $i -lt "$sn_n" ]; do
    c=/sys/kernel/config/nullb/nullb$i
    mkdir "$c" || { err "mkdir $c"; return 1; }
    echo 1 >"$c/zoned"
    for kv in "$@"; do
      if [ -e "$c/${kv%%=*}" ]; then echo "${kv#*=}" >"$c/${kv%%=*}" || { err "null_blk: cannot set $kv"; return 1; }
      else info "null_blk of $(uname -r) has no configfs ${kv%%=*}: the module's value"; fi
    done
    echo 1 >"$c/power" || { err "null_blk refuses $*"; return 1; }
    echo none >/sys/block/nullb$i/queue/scheduler 2>/dev/null
    i=$((i + 1))
  done
}
sd_nullb_off () {
  for c in /sys/kernel/config/nullb/nullb*; do
    [ -d "$c" ] || continue
    echo 0 >"$c/power"; rmdir "$c"
  done
}
# sd_ublk NAME N KEY=VALUE...: N zonednull-ublk processes; sets
# devs_NAME, pids_NAME.
sd_ublk () {
  su_name=$1 su_n=$2; shift 2
  su_devs= su_pids=
  i=0
  while [ $i -lt "$su_n" ]; do
    "$UBLK" -f --no-control-socket "$@" >/tmp/sd.$i.out 2>/tmp/sd.$i.err &
    su_p=$!
    su_d=$(wait_device /tmp/sd.$i.out $su_p)
    [ -b "$su_d" ] || { err "$su_name: zonednull-ublk $* gave no device: $(cat /tmp/sd.$i.err)"; return 1; }
    echo none >/sys/block/${su_d#/dev/}/queue/scheduler
    su_devs="$su_devs $su_d" su_pids="$su_pids $su_p"
    i=$((i + 1))
  done
  eval "devs_$su_name='$su_devs' pids_$su_name='$su_pids'"
}
sd_stop () { # sd_stop PID...
  for sp in "$@"; do kill -TERM "$sp"; done
  for sp in "$@"; do wait "$sp"; done
}
# sd_layout NAME DEV...: one INFO line on the devices' queues and tags.
sd_layout () {
  sl=$1; shift
  for d in "$@"; do
    b=${d#/dev/}
    info "seeds $sl $d: hw_queues=$(ls /sys/block/$b/mq | wc -l) tags=$(cat /sys/block/$b/mq/*/nr_tags | tr '\n' ,) nr_requests=$(cat /sys/block/$b/queue/nr_requests) scheduler=$(cat /sys/block/$b/queue/scheduler | tr ' ' ,)"
  done
}
# sd_measure EXP DEV REPEAT PIDS FIOARGS...: one fio run (one job section
# per device or the jobs of FIOARGS), one SEED line.
sd_measure () {
  sm_exp=$1 sm_dev=$2 sm_rep=$3 sm_pids=$4; shift 4
  # shellcheck disable=SC2086
  snap d $sm_pids >/tmp/sth0
  cpu >/tmp/cpu0
  read -r b0 t0 c0 </tmp/cpu0
  # shellcheck disable=SC2086
  $FIO $fio_common --time_based --runtime="$RUNTIME" "$@" >/tmp/fio.out 2>/tmp/fio.err
  frc=$?
  # shellcheck disable=SC2046
  set -- $(cpu)
  b1=$1 t1=$2 c1=$3
  # shellcheck disable=SC2086
  snap d $sm_pids >/tmp/sth1
  line=$(grep '^3;' /tmp/fio.out | tail -n 1)
  if [ $frc -ne 0 ] || [ -z "$line" ]; then
    err "seeds $sm_exp on $sm_dev (repeat $sm_rep): fio exited $frc: $(tail -n 3 /tmp/fio.err | tr '\n' ' ')"
    ri=0 wi=0
  else
    ri=$(echo "$line" | cut -d';' -f8) wi=$(echo "$line" | cut -d';' -f49)
  fi
  set -- $(snap_sum /tmp/sth0) $(snap_sum /tmp/sth1)
  echo "SEED $sm_exp $sm_dev $sm_rep $ri $wi $((b1 - b0)) $((c1 - c0)) $((t1 - t0)) $(($3 - $1)) $(($4 - $2))"
}
# host_tags: 4 devices of 1024 MiB in 64 MiB zones, 16 tags shared by all
# (null_blk's shared_tags); one queue against two queues sharing the
# tags (shared_tag_bitmap).  fio: 4 KiB random reads, one job of iodepth 4
# per device (the seed's 4 in flight per device), not zonemode=zbd (reads
# of empty zones return zeros on both).
host_tags () {
  for q in 1 2; do
    stb=$((q - 1))
    rmmod null_blk 2>/dev/null
    modprobe null_blk nr_devices=0 submit_queues=$q hw_queue_depth=16 shared_tag_bitmap=$stb ||
      { err "modprobe null_blk submit_queues=$q shared_tag_bitmap=$stb"; return 1; }
    [ "$(cat /sys/module/null_blk/parameters/submit_queues)" = $q ] ||
      { err "null_blk was not reloaded: submit_queues=$(cat /sys/module/null_blk/parameters/submit_queues)"; return 1; }
    sd_nullb 4 size=1024 zone_size=64 shared_tags=1 hw_queue_depth=16 submit_queues=$q shared_tag_bitmap=$stb || return 1
    sd_ublk ublk 4 size=1024 zone_size=64 shared_tags=1 hw_queue_depth=16 submit_queues=$q || return 1
    sd_layout "host_tags q$q null_blk" /dev/nullb0 /dev/nullb1 /dev/nullb2 /dev/nullb3
    # shellcheck disable=SC2086
    sd_layout "host_tags q$q zonednull-ublk" $devs_ublk
    rep=1
    while [ $rep -le "$REPEATS" ]; do
      if [ $((rep % 2)) -eq 1 ]; then order="nullb ublk"; else order="ublk nullb"; fi
      for k in $order; do
        if [ $k = nullb ]; then ds="/dev/nullb0 /dev/nullb1 /dev/nullb2 /dev/nullb3" ps=
        else ds=$devs_ublk ps=$pids_ublk; fi
        a="--rw=randread --iodepth=4"
        for d in $ds; do a="$a --name=${d#/dev/} --filename=$d"; done
        # shellcheck disable=SC2086
        sd_measure host_tags_q$q $k $rep "$ps" $a
      done
      rep=$((rep + 1))
    done
    # shellcheck disable=SC2086
    sd_stop $pids_ublk
    sd_nullb_off
  done
  rmmod null_blk 2>/dev/null
  modprobe null_blk nr_devices=0
}
# zone_locking: 4096 MiB in 4 MiB zones, memory_backed=1, irqmode=0;
# zonednull-ublk with per-zone locks (zlock) against device_lock=1
# (dlock), null_blk (per-zone locks, it has no device lock) beside them.
# submit_queues=2: with one queue zonednull-ublk serves everything from
# one thread and no lock is ever contended.  fio: 4 jobs x iodepth 16
# (the seed's 4 connections x depth 16), 70 % random reads, writes at the
# write pointers (zonemode=zbd), each job in its own 32 zones, their
# first MiB written before every run (reads go below the write pointer;
# the fill writes 1 MiB and skips 3, so each write is at an empty zone's
# start).
zone_locking () {
  zc="size=4096 zone_size=4 memory_backed=1 irqmode=0 submit_queues=2 hw_queue_depth=64"
  # shellcheck disable=SC2086
  sd_nullb 1 $zc || return 1
  # shellcheck disable=SC2086
  sd_ublk zlock 1 $zc device_lock=0 || return 1
  # shellcheck disable=SC2086
  sd_ublk dlock 1 $zc device_lock=1 || return 1
  # shellcheck disable=SC2086
  sd_layout zone_locking /dev/nullb0 $devs_zlock $devs_dlock
  span=$((4 * 32 * 4 * 1048576))
  names3="nullb zlock dlock"
  rep=1
  while [ $rep -le "$REPEATS" ]; do
    order=$names3
    i=1
    while [ $i -lt $rep ]; do set -- $order; first=$1; shift; order="$* $first"; i=$((i + 1)); done
    for k in $order; do
      if [ $k = nullb ]; then d=/dev/nullb0 ps=
      else eval "d=\$devs_$k ps=\$pids_$k"; d=${d# }; fi
      $BLKZONE reset -o 0 -l $((span / 512)) "$d"
      $FIO --name=fill --filename="$d" --ioengine=io_uring --direct=1 --bs=1M --iodepth=4 \
        --rw=write:3M --size=$span --io_size=$((span / 4)) \
        --output-format=terse >/tmp/fill.out 2>&1 ||
        { err "zone_locking: fill of $d failed: $(tail -n 3 /tmp/fill.out)"; return 1; }
      # shellcheck disable=SC2086
      sd_measure zone_locking $k $rep "$ps" --name=mixed --filename=$d --rw=randrw --rwmixread=70 \
        --zonemode=zbd --iodepth=16 --numjobs=4 --size=$((span / 4)) --offset_increment=$((span / 4))
      [ $rep -eq 1 ] && info "zone_locking $k: zones after the run: $($BLKZONE report -c 3 "$d" | tr -s ' ' | cut -d, -f2-4 | tr '\n' ';')"
    done
    rep=$((rep + 1))
  done
  # shellcheck disable=SC2086
  sd_stop $pids_zlock $pids_dlock
  sd_nullb_off
}
seeds_part () {
  for cfs0 in /sys/kernel/config/nullb/nullb*; do
    [ -d "$cfs0" ] && { err "seeds: $cfs0 is still there"; return 1; }
  done
  for e in $SEEDS; do
    case $e in
      host_tags|zone_locking) $e ;;
      *) err "SEEDS: host_tags or zone_locking, not $e" ;;
    esac
  done
}

case " $PARTS " in *" local "*) ( local_part ) ;; esac
case " $PARTS " in *" seeds "*) ( seeds_part ) ;; esac
case " $PARTS " in *" remote "*)
  if [ -n "$REMOTE" ]; then
    insmod "$NBD_KO" nbds_max=2 2>/tmp/insmod.err ||
      modprobe nbd nbds_max=2 2>>/tmp/insmod.err || err "no nbd module: $(cat /tmp/insmod.err)"
    for ks in $REMOTE; do remote_part "${ks%%:*}" "${ks#*:}"; done
  else
    err "no host servers for the remote case"
  fi ;;
esac
exit 0
