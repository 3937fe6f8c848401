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
#   ANCHOR     bench/ublk-null's path in the guest (the benchmark's cpio)
# Runs as tests/kernel/check-ublk.sh's ZN_UBLK_GUEST_SCRIPT
# (/test/guest-extra.sh), after its guest-ublk.sh has loaded null_blk and
# ublk_drv.  Prints one line per fio run:
#   RESULT JOB DEV REPEAT IOPS IOS CPU_TICKS CTXT UBLK_TICKS ELAPSED_TICKS [UBLK_CTXT]
# (ticks: USER_HZ of /proc/stat; CPU_TICKS the guest's busy time on all
# CPUs, CTXT its context switches, UBLK_TICKS the ublk server's user+system
# time, 0 for null_blk; UBLK_CTXT, local part only, the voluntary and
# involuntary context switches of all the server's threads), and INFO
# lines.  DEV of the local part: nullb (null_blk), anchor (bench/ublk-null),
# ublk and ublk0 (zonednull-ublk at memory_backed=1 and 0).  The remote case, per host
# server KIND: zonednull-ublk --connect=nbd://10.0.2.2:PORT/ (DEV connect)
# and the kernel's nbd client on the same export (DEV nbd), JOB
# KIND:remote_*.  No pass or fail on speed: a
# failed run gives IOPS 0 and an ERROR line.
. /test/params
FIO=/opt/fio/fio
BLKZONE=/usr/sbin/blkzone
info () { echo "INFO $*"; }
err () { echo "ERROR $*"; }

modprobe null_blk nr_devices=0 2>/dev/null
modprobe ublk_drv 2>/dev/null
[ -x "$FIO" ] || { err "no $FIO"; exit 1; }
[ -n "$UBLK" ] || { err "no zonednull-ublk"; exit 1; }

cpu () { awk '$1 == "cpu" { b = 0; for (i = 2; i <= NF; i++) if (i != 5 && i != 6) b += $i; t = 0; for (i = 2; i <= NF; i++) t += $i; print b, t } $1 == "ctxt" { print $2 }' /proc/stat | tr '\n' ' '; }
# pid_ticks PID: its user+system ticks (0 without a PID)
pid_ticks () { if [ -n "$1" ]; then awk '{ print $14 + $15 }' /proc/$1/stat; else echo 0; fi; }
fio_common="--ioengine=io_uring --direct=1 --bs=4k --output-format=terse
  --terse-version=3 --group_reporting --thread"
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

local_part () {
# ---- the four devices ------------------------------------------------------
# nullb: null_blk with CONF; ublk and ublk0: zonednull-ublk with CONF at
# memory_backed=1 and memory_backed=0; anchor: bench/ublk-null, a plain
# disk of the same size, block size and queue depth whose server completes
# every request at once (the round trip of any ublk server).
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
  sd_dev=
  n=0
  while [ $n -lt 300 ] && [ -z "$sd_dev" ]; do
    sd_dev=$(head -n 1 /tmp/$sd_name.out 2>/dev/null)
    kill -0 $sd_pid 2>/dev/null || break
    [ -n "$sd_dev" ] || sleep 0.1
    n=$((n + 1))
  done
  n=0
  while [ -n "$sd_dev" ] && [ ! -b "$sd_dev" ] && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
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
  names="nullb anchor ublk ublk0"
else
  err "no ublk-null in the guest ($ANCHOR): no anchor"
  names="nullb ublk ublk0"
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
  a=
  for f in zoned nr_zones chunk_sectors max_sectors_kb nr_requests scheduler write_cache logical_block_size nomerges; do
    a="$a $f=$(cat /sys/block/$b/queue/$f 2>/dev/null | tr ' ' ,)"
  done
  info "$name $d:$a hw_queues=$(ls /sys/block/$b/mq | wc -l) bytes=$(/usr/sbin/blockdev --getsize64 $d) pid=$p"
done

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
  set -- $(cpu) $(daemon "$p")
  b0=$1 t0=$2 c0=$3 p0=$4 x0=$5
  # shellcheck disable=SC2086
  $FIO --name="$job" --filename="$d" $fio_common $args $timed >/tmp/fio.out 2>/tmp/fio.err
  frc=$?
  set -- $(cpu) $(daemon "$p")
  b1=$1 t1=$2 c1=$3 p1=$4 x1=$5
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

case " $PARTS " in *" local "*) ( local_part ) ;; esac
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
