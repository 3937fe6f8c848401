# SPDX-License-Identifier: BSD-3-Clause
# Guest half of bench/nvme-vs-nvmet.sh (busybox sh, Linux 6.12 under qemu
# TCG, 2 vCPUs).  The host prepends the settings:
#   CONF        KEY=VALUE... for every target (null_blk configfs and
#               zonednull-server)
#   ZONE_MB     the zone size in MiB (from CONF)
#   RUNTIME     seconds per random-read run; REPEATS rounds
#   READ_ZONES  zones filled first and read at random
#   WRITE_ZONES zones each write run fills (fresh zones every run)
#   SERVER_OPTS zonednull-server's options (e.g. --busy-poll=0)
#   OLD_SERVER_OPTS  OLD_SERVER's options (default SERVER_OPTS)
#   STATS       0: no --stats for a server that has it (default 1)
#   STRACE      1: after the repeats, one more seqwrite_qd1 run per server
#               target under strace -c (SYSCALLS lines)
#   PERF        1: and one more under perf record -a -g (cpu-clock): the
#               share of the server's samples in each system call and in
#               its own code and libraries (PROFILE lines)
#   OLD_SERVER  another build's zonednull-server in the guest (the host
#               decodes it there first), or empty
#   TARGETS     the targets, in turn within each repeat:
#     nvme      zonednull-server --nvme on 127.0.0.1:4420, nvme connect
#     nvmet     nvmet-tcp on 127.0.0.1:4421 over a configfs null_blk
#     nbd       zonednull-server's NBD on 127.0.0.1:10809, nbd-client
#               (not zoned: plain sequential writes at empty zones' starts)
#     nullb     the configfs null_blk itself (a reference, no network)
#     nvme-old  OLD_SERVER --nvme on 127.0.0.1:4422, as nvme
#     nbd-old   OLD_SERVER's NBD on 127.0.0.1:10810 (/dev/nbd1), as nbd
#     nvme-dl   nvme's namespace with the host's own choice of scheduler
#               (mq-deadline for one I/O queue) during its runs; every other
#               target runs with none
# Runs as check-nvme.sh's ZN_NVME_GUEST_SCRIPT.  One line per fio run:
#   RESULT JOB TARGET REPEAT IOPS CPU_TICKS SERVER_TICKS ELAPSED_TICKS
#          IOS FIO_CTX SYS_CTX SRV_NS SRV_VCTX SRV_NVCTX KW_NS KW_SLICES
#          REQUESTS SLEEPS BUSY_POLLS RECV_CALLS SEND_CALLS REPLY_NS
# (USER_HZ ticks: the guest's busy time on both vCPUs, zonednull-server's
# user+system time, the run's wall time; then the I/Os done, fio's context
# switches, the guest's, the server's CPU time in ns and its voluntary and
# involuntary context switches over all its threads (schedstat and status),
# the kernel workers' CPU time and time slices (kworker and ksoftirqd: the
# host and nvmet sides of NVMe/TCP, nbd's receiver), and the deltas of the
# server's --stats, "-" when it has none), INFO, SYSCALLS and ERROR lines.
# No pass or fail on speed: a failed run gives IOPS 0 and an ERROR line.
. /test/params
FIO=/opt/fio/fio
CFS_NB=/sys/kernel/config/nullb CFS_T=/sys/kernel/config/nvmet
NQN_NVMET=nqn.2014-08.org.zonednull.test:nvmet
info () { echo "INFO $*"; }
err () { echo "ERROR $*"; }
waitfor () { n=$1; shift; while ! "$@" 2>/dev/null; do [ "$n" -le 0 ] && return 1; sleep 0.1; n=$((n - 1)); done; }

modprobe null_blk nr_devices=0 && modprobe nvme_tcp && modprobe nvmet_tcp && modprobe nbd nbds_max=2 ||
  { err "modprobe null_blk nvme_tcp nvmet_tcp nbd"; exit 1; }
[ -x "$FIO" ] || { err "no $FIO"; exit 1; }
uuid=$(cat /proc/sys/kernel/random/uuid)
mkdir -p /etc/nvme
echo "nqn.2014-08.org.nvmexpress:uuid:$uuid" >/etc/nvme/hostnqn
echo "$uuid" >/etc/nvme/hostid
info "guest: $(nproc) CPUs, $(uname -r); multipath $(cat /sys/module/nvme_core/parameters/multipath)"

ns_of () {
  for p in /sys/block/nvme*n*; do
    b=${p##*/}
    case $b in *c*|*'*'*) continue ;; esac
    [ "$(cat "$p/device/subsysnqn" 2>/dev/null)" = "$1" ] && { echo "/dev/$b"; return 0; }
  done
  return 1
}
has_ns () { ns_of "$1" >/dev/null; }
connect () {   # connect PORT NQN: the namespace's device on stdout
  nvme connect -t tcp -a 127.0.0.1 -s "$1" -n "$2" >/tmp/connect.out 2>&1 &&
    waitfor 600 has_ns "$2" && ns_of "$2"
}
# A TCP port listening on 127.0.0.1 (/proc/net/tcp has it in hex).
listening () { grep -q ":$(printf %04X "$1") 00000000:0000 0A" /proc/net/tcp; }
# A target's shell name (nvme-old: nvme_old) and its server, new or old.
var () { echo "$1" | tr - _; }
side () { case $1 in *-old) echo old ;; *) echo new ;; esac; }

# start_server SIDE BINARY NBD_PORT NVME_PORT: one server, whose device is
# served over NVMe/TCP and NBD alike (each target writes its own zones);
# its PID and NQN in pid_SIDE and nqn_SIDE.
start_server () {
  opts=$SERVER_OPTS
  [ "$1" = old ] && opts=${OLD_SERVER_OPTS-$SERVER_OPTS}
  # --stats's clock reads are the new server's alone: STATS=0 compares
  # two builds on equal terms.
  [ "${STATS:-1}" = 1 ] && "$2" --help 2>&1 | grep -q -- '--stats' && opts="$opts --stats"
  # @DIR@ in CONF: a directory of each server's own (backing_dir=@DIR@).
  conf=$(echo "$CONF" | sed "s|@DIR@|/tmp/zdir-$1|g")
  case $CONF in *@DIR@*) mkdir -p "/tmp/zdir-$1" ;; esac
  # shellcheck disable=SC2086
  "$2" -f -i 127.0.0.1 -p "$3" --nvme="$4" $opts $conf >/tmp/server-$1.out 2>/tmp/server-$1.err </dev/null &
  eval "pid_$1=$!"
  if ! waitfor 300 listening "$3" || ! waitfor 100 listening "$4"; then
    err "zonednull-server ($1) did not listen: $(tail -n 3 /tmp/server-$1.err | tr '\n' ' ')"
    kill $! ; wait $!; eval "pid_$1="; return 1
  fi
  eval "nqn_$1='$(cat /tmp/server-$1.out /tmp/server-$1.err | grep -o 'nqn\.[0-9a-zA-Z.:_-]*' | head -n 1)'"
}

# ---- the targets -------------------------------------------------------------
pid_new= pid_old= nqn_new= nqn_old=
dev_nvme= dev_nvmet= dev_nbd= dev_nullb= dev_nvme_old= dev_nbd_old= dev_nvme_dl=
for t in $TARGETS; do
  case $t in
    nvme-dl) continue ;;  # nvme's namespace, below
    nvme|nbd|nvme-old|nbd-old)
      sd=$(side $t)
      if [ $sd = new ]; then bin=$SERVER np=10809 vp=4420 nbd=/dev/nbd0
      else bin=${OLD_SERVER:-} np=10810 vp=4422 nbd=/dev/nbd1; fi
      [ -n "$bin" ] || { err "$t: no zonednull-server ($sd) with --nvme in the guest"; continue; }
      if [ -z "$(eval "echo \$pid_$sd")" ]; then start_server $sd "$bin" $np $vp || continue; fi
      nqn=$(eval "echo \$nqn_$sd")
      case $t in
        nvme*) d=$(connect $vp "$nqn") || { err "nvme connect to zonednull-server ($nqn): $(cat /tmp/connect.out)"; d=; } ;;
        *) nbd-client 127.0.0.1 $np $nbd -N nullb0 -b 4096 >/tmp/nbd.out 2>&1 && d=$nbd ||
             { err "nbd-client ($sd): $(cat /tmp/nbd.out)"; d=; } ;;
      esac
      eval "dev_$(var $t)=$d" ;;
    nvmet|nullb)
      nb=nullb0; [ $t = nullb ] && nb=nullb1
      mkdir "$CFS_NB/$nb" && echo 1 >"$CFS_NB/$nb/zoned" || { err "configfs $nb"; continue; }
      for kv in $CONF; do echo "${kv#*=}" >"$CFS_NB/$nb/${kv%%=*}" || err "null_blk: cannot set $kv"; done
      echo 1 >"$CFS_NB/$nb/power" || { err "null_blk refuses $CONF"; continue; }
      if [ $t = nullb ]; then dev_nullb=/dev/$nb; continue; fi
      s=$CFS_T/subsystems/$NQN_NVMET p=$CFS_T/ports/1
      mkdir "$s" && echo 1 >"$s/attr_allow_any_host" && mkdir "$s/namespaces/1" &&
        echo "/dev/$nb" >"$s/namespaces/1/device_path" && echo 1 >"$s/namespaces/1/enable" &&
        mkdir "$p" && echo tcp >"$p/addr_trtype" && echo 127.0.0.1 >"$p/addr_traddr" &&
        echo 4421 >"$p/addr_trsvcid" && echo ipv4 >"$p/addr_adrfam" &&
        ln -s "$s" "$p/subsystems/$NQN_NVMET" || { err "nvmet configfs: $(dmesg | tail -n 2 | tr '\n' ' ')"; continue; }
      dev_nvmet=$(connect 4421 "$NQN_NVMET") || { err "nvme connect to nvmet: $(cat /tmp/connect.out)"; dev_nvmet=; } ;;
  esac
done
case " $TARGETS " in *" nvme-dl "*) dev_nvme_dl=$dev_nvme ;; esac
dev_of () { eval "echo \${dev_$(var "$1")}"; }
sched_of () { [ "$1" = nvme-dl ] && echo mq-deadline || echo none; }
for t in $TARGETS; do
  d=$(dev_of "$t")
  [ -n "$d" ] || continue
  b=${d#/dev/}
  # The same I/O path on all: no I/O scheduler (6.12 gives a device of
  # one hardware queue mq-deadline; nvmet's multipath head has none).
  [ -w "/sys/block/$b/queue/scheduler" ] && echo "$(sched_of "$t")" >"/sys/block/$b/queue/scheduler"
  a=
  for f in zoned nr_zones chunk_sectors max_sectors_kb max_hw_sectors_kb nr_requests scheduler; do
    a="$a $f=$(cat "/sys/block/$b/queue/$f" 2>/dev/null | tr ' ' ,)"
  done
  info "$t: $d:$a hw_queues=$(ls "/sys/block/$b/mq" 2>/dev/null | wc -l)"
done

zone=$((ZONE_MB * 1048576))
rbytes=$((READ_ZONES * zone))
# Zone ranges: the read zones first; each write run then takes the next
# WRITE_ZONES zones of its target.  nvme, nbd and nvme-dl share a server's
# device: nbd's zones start after nvme's, nvme-dl's after nbd's (the host
# checks that CONF's size holds them).
runs=$((2 * REPEATS + 2))   # and the STRACE and PERF runs
wspan=$((runs * WRITE_ZONES * zone))
base_of () {
  case $1 in nbd|nbd-old) echo $((rbytes + wspan)) ;; nvme-dl) echo $((2 * (rbytes + wspan))) ;; *) echo 0 ;; esac
}
# zonemode=zbd on the zoned targets.
zm_of () { case $1 in nbd|nbd-old) ;; *) echo --zonemode=zbd ;; esac; }
# Fill the read zones (1 MiB sequential writes).
for t in $TARGETS; do
  d=$(dev_of "$t")
  [ -n "$d" ] || continue
  zm=$(zm_of "$t")
  # shellcheck disable=SC2086
  $FIO --name=fill --filename="$d" --ioengine=io_uring --direct=1 --bs=1M --iodepth=4 --rw=write $zm \
    --offset="$(base_of "$t")" --size=$rbytes --output-format=terse >/tmp/fill.out 2>&1 ||
    err "fill of $t ($d): $(tail -n 3 /tmp/fill.out | tr '\n' ' ')"
done

cpu () { awk '$1 == "cpu" { b = 0; for (i = 2; i <= NF; i++) if (i != 5 && i != 6) b += $i; t = 0; for (i = 2; i <= NF; i++) t += $i; print b, t }' /proc/stat; }
pid_of () { case $1 in nvme|nvme-old|nvme-dl|nbd|nbd-old) eval "echo \$pid_$(side "$1")" ;; esac; }
sticks () {
  p=$(pid_of "$1")
  [ -n "$p" ] && awk '{ print $14 + $15 }' "/proc/$p/stat" || echo 0
}
# threads PID: the CPU time (ns) and voluntary and involuntary context
# switches of all of PID's threads; 0 0 0 without PID.
threads () {
  [ -n "$1" ] || { echo 0 0 0; return; }
  for t in /proc/"$1"/task/*; do
    echo "$(cut -d' ' -f1 "$t/schedstat") $(awk '/^voluntary_ctxt/ { v = $2 } /^nonvoluntary_ctxt/ { n = $2 } END { print v, n }' "$t/status")"
  done | awk '{ a += $1; b += $2; c += $3 } END { print a + 0, b + 0, c + 0 }'
}
# The kernel workers' CPU time (ns) and time slices.
kworkers () {
  for t in /proc/[0-9]*; do
    case "$(cat "$t/comm" 2>/dev/null)" in kworker*|ksoftirqd*) cat "$t/schedstat" 2>/dev/null ;; esac
  done | awk '{ a += $1; b += $3 } END { print a + 0, b + 0 }'
}
ctxt () { awk '$1 == "ctxt" { print $2 }' /proc/stat; }
# stats PID: the server's --stats counters REQUESTS SLEEPS BUSY_POLLS
# RECV_CALLS SEND_CALLS REPLY_NS_SUM now (SIGUSR1 prints them), or
# "- - - - - -" when it has no --stats.
stats () {
  f=/tmp/server-$(side "$2").err
  if [ -z "$1" ] || ! grep -q -- '--stats' "/proc/$1/cmdline" 2>/dev/null; then echo - - - - - -; return; fi
  n0=$(grep -c 'stats:' "$f")
  kill -USR1 "$1"
  n=50
  while [ "$(grep -c 'stats:' "$f")" -le "$n0" ] && [ $n -gt 0 ]; do sleep 0.02; n=$((n - 1)); done
  grep 'stats:' "$f" | tail -n 1 | tr ' ' '\n' | awk -F= '
    { v[$1] = $2 } END { print v["requests"], v["sleeps"], v["busy_polls"], v["recv_calls"], v["send_calls"], v["reply_ns_sum"] }'
}
# delta A... B...: B - A, field by field ("-" stays).
delta () {
  echo "$*" | awk '{ h = NF / 2; for (i = 1; i <= h; i++) printf "%s%s", (i > 1 ? " " : ""), ($i == "-" ? "-" : $(i + h) - $i); print "" }'
}
# measure JOB TARGET REPEAT
measure () {
  job=$1 t=$2 rep=$3 d=$(dev_of "$2")
  base=$(base_of "$t")
  zm=$(zm_of "$t")
  case $job in
    randread_qd16) args="--rw=randread --iodepth=16 --offset=$base --size=$rbytes --time_based --runtime=$RUNTIME" col=8 ;;
    seqwrite_qd1|seqwrite_qd16)
      # Fresh zones: the run's index among this target's write runs.
      eval "k=\${wk_$(var "$t"):-0}"; eval "wk_$(var "$t")=$((k + 1))"
      off=$((base + rbytes + k * WRITE_ZONES * zone))
      qd=${job#seqwrite_qd}
      args="--rw=write --iodepth=$qd $zm --offset=$off --size=$((WRITE_ZONES * zone))" col=49 ;;
  esac
  p=$(pid_of "$t")
  before="$(threads "$p") $(kworkers) $(ctxt) $(stats "$p" "$t")"
  # shellcheck disable=SC2046
  set -- $(cpu) $(sticks "$t")
  b0=$1 t0=$2 s0=$3
  # shellcheck disable=SC2086
  ${WRAP:-} $FIO --name="$job" --filename="$d" --ioengine=io_uring --direct=1 --bs=4k --output-format=terse \
    --terse-version=3 --group_reporting $args >/tmp/fio.out 2>/tmp/fio.err
  frc=$?
  # shellcheck disable=SC2046
  set -- $(cpu) $(sticks "$t")
  b1=$1 t1=$2 s1=$3
  after="$(threads "$p") $(kworkers) $(ctxt) $(stats "$p" "$t")"
  line=$(grep '^3;' /tmp/fio.out | tail -n 1)
  if [ $frc -ne 0 ] || [ -z "$line" ]; then
    err "$job on $t ($d, repeat $rep): fio exited $frc: $(tail -n 3 /tmp/fio.err | tr '\n' ' ')"
    iops=0 ios=0 fctx=0
  else
    iops=$(echo "$line" | cut -d';' -f"$col")
    # Read or written KiB over 4 KiB; usr_cpu;sys_cpu;ctx.
    ios=$(( ($(echo "$line" | cut -d';' -f6) + $(echo "$line" | cut -d';' -f47)) / 4 ))
    fctx=$(echo "$line" | cut -d';' -f90)
  fi
  # SRV_NS SRV_VCTX SRV_NVCTX KW_NS KW_SLICES SYS_CTX REQUESTS..REPLY_NS
  # shellcheck disable=SC2046,SC2086
  set -- $(delta $before $after)
  echo "RESULT $job $t $rep $iops $((b1 - b0)) $((s1 - s0)) $((t1 - t0)) $ios $fctx $6 $1 $2 $3 $4 $5 $7 $8 $9 ${10} ${11} ${12}"
}

rep=1
while [ $rep -le "$REPEATS" ]; do
  for job in randread_qd16 seqwrite_qd1 seqwrite_qd16; do
    # Which target goes first rotates with the repeat.
    set -- $TARGETS
    i=1
    while [ $i -lt "$rep" ]; do t=$1; shift; set -- "$@" "$t"; i=$((i + 1)); done
    for t in "$@"; do
      [ -n "$(dev_of "$t")" ] && measure "$job" "$t" "$rep"
    done
  done
  rep=$((rep + 1))
done

# The server's system calls per QD1 write: strace slows every call, so
# this run's other numbers are not kept.
# PROFILE TARGET PART PERCENT: of the server's samples (its threads are
# named zonednull-serve), those under each system call (inclusive), and
# those in user space (the binary, libc, libev, libzonednull).
if [ "${PERF:-0}" = 1 ]; then
  for t in $TARGETS; do
    p=$(pid_of "$t")
    [ -n "$p" ] && [ -n "$(dev_of "$t")" ] || continue
    perf record -q -o /tmp/perf.data -a -g -e cpu-clock -F 999 -- sleep 5 >/dev/null 2>&1 &
    pp=$!
    measure seqwrite_qd1 "$t" perf >/tmp/measure.out   # not in a subshell: it counts the runs
    grep -v '^RESULT' /tmp/measure.out
    wait "$pp"
    # Percentages of all samples: the server's share first.
    r () { perf report -i /tmp/perf.data --stdio -g none "$@" 2>/dev/null | grep -v '^#'; }
    all=$(r --no-children --sort comm | awk '$2 == "zonednull-serve" { sub(/%/, "", $1); print $1 }')
    [ -n "$all" ] || continue
    echo "PROFILE $t samples $all"
    r --no-children --comm zonednull-serve --sort dso | awk -v t="$t" -v all="$all" '
      $1 ~ /%$/ && $2 != "[kernel.kallsyms]" { v = $1; sub(/%/, "", v); user += v }
      END { printf "PROFILE %s user %.1f\n", t, 100 * user / all }'
    r --children --comm zonednull-serve --sort sym | awk -v t="$t" -v all="$all" '
      $1 ~ /%$/ { v = $1; sub(/%/, "", v)
        if ($NF ~ /^__x64_sys_(sendto|recvfrom|epoll_wait|write|writev|read|sendmsg|recvmsg)$/)
          printf "PROFILE %s %s %.1f\n", t, $NF, 100 * v / all }'
  done
fi

if [ "${STRACE:-0}" = 1 ]; then
  for t in $TARGETS; do
    p=$(pid_of "$t")
    [ -n "$p" ] && [ -n "$(dev_of "$t")" ] || continue
    strace -c -f -q -p "$p" -o /tmp/strace.out &
    sp=$!
    sleep 1
    measure seqwrite_qd1 "$t" strace >/tmp/measure.out   # not in a subshell: it counts the runs
    grep -v '^RESULT' /tmp/measure.out
    kill -INT "$sp"
    wait "$sp"
    # "% time seconds usecs/call calls [errors] syscall" rows.
    awk -v t="$t" -v n=$((WRITE_ZONES * zone / 4096)) \
      '$1 ~ /^[0-9.]+$/ && $NF ~ /^[a-z_0-9]+$/ { print "SYSCALLS", t, n, $NF, $4 }' /tmp/strace.out
  done
fi

[ -n "$dev_nvme" ] && nvme disconnect -n "$nqn_new" >/dev/null 2>&1
[ -n "$dev_nvme_old" ] && nvme disconnect -n "$nqn_old" >/dev/null 2>&1
[ -n "$dev_nvmet" ] && nvme disconnect -n "$NQN_NVMET" >/dev/null 2>&1
[ -n "$dev_nbd" ] && nbd-client -d /dev/nbd0 >/dev/null 2>&1
[ -n "$dev_nbd_old" ] && nbd-client -d /dev/nbd1 >/dev/null 2>&1
for p in $pid_new $pid_old; do kill "$p"; wait "$p"; done
exit 0
