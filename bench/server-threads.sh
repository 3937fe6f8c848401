#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# bench/server-threads.sh [OLD_BUILDDIR] [NEW_BUILDDIR]: zonednull-server
# before and after moving storage I/O off its event loop and running a
# loop per core (issue 45), side by side in one run with nbdkit as the
# yardstick.  A benchmark, not a test: nothing passes or fails on speed.
#
#   bench/server-threads.sh                      OLD = NEW = ./build
#   bench/server-threads.sh NEW_BUILDDIR         OLD = NEW (a noise check)
#   bench/server-threads.sh /tmp/old/build build
#   REPEATS=3 SECONDS_PER_RUN=3 CASES="flush pagecache memory scaling"
#   NEW_OPTS="--threads=2" (more options for NEW's server), ZONE_MIB=4,
#   MEM_BS=4k (the memory case's reads),
#   TMPDIR=/var/tmp (the file system measured: a disk, not tmpfs),
#   OUT=bench/results/server-threads.txt (its .raw beside it)
#
# Each cell is the median of REPEATS runs of SECONDS_PER_RUN; in each
# repeat the servers take turns (who goes first rotates), so that a slow
# spell of the shared machine hits them all alike.  fio 3.33's stock nbd
# engine, 4 KiB, one connection per job.  Servers are started as
# bench/server-vs-nbdkit.sh starts them (-f -U, the default --busy-poll).
#
# flush     A device of 64 conventional zones of ZONE_MIB (and the one
#           sequential zone null_blk needs) in a backing_dir on TMPDIR's
#           file system, written once in full and synced; then 4
#           connections (numjobs=4) x iodepth 8 of random writes over
#           the conventional zones, a flush after each (fsync=1).
#           Peers: OLD's and NEW's zonednull-server, `nbdkit zonednull`
#           (NEW's plugin, the same parameters, its own backing_dir) and
#           `nbdkit file` on a file of the device's size in the same
#           directory.  Targets after issue 45: NEW >= 1.5x nbdkit
#           zonednull, >= 1x nbdkit file.  With two builds, `nbdkit
#           zonednull` of OLD's plugin too: the plugin shares the storage
#           code, and issue 45 asks that it not be slowed.  And the
#           same job run by fio's io_uring engine on one file of the
#           same file system, without NBD: what the file system gives
#           when no server and no NBD client share the CPUs.
# pagecache The same devices and jobs without flushes: random reads, then
#           random writes.  Target: NEW >= 0.95x OLD.
# memory    memory_backed=1, 64 MiB written, random reads (MEM_BS) over it
#           at depth 16 and 64, one connection.  NEW against OLD.
# scaling   Only when NEW's server takes --threads (its --help says so):
#           NEW with --threads=1 against --threads=2 (OLD for reference),
#           two connections: random reads as in memory at depth 16, and
#           sequential writes at depth 16 from a fresh device
#           (memory_backed=0), each job over its own 128 zones of 64 MiB.
#           Target: 2 loops >= 1.6x 1 loop on 2 cores.
#
# The table (Markdown) goes to stdout and OUT, with the load average at
# the start and end; the raw runs ("case server repeat IOPS CPU") to
# OUT's .raw.  CPU is the server's user + system time over the run, in
# cores: where fio and the server share 2 cores, it tells whether the
# server or the machine was the limit.
set -eu
. "$(dirname "$0")/lib.sh"
case $# in
  0) old=build new=build ;;
  1) old=$1 new=$1 ;;
  2) old=$1 new=$2 ;;
  *) echo "usage: bench/server-threads.sh [OLD_BUILDDIR] [NEW_BUILDDIR]" >&2; exit 2 ;;
esac
old=$(cd "$old" && pwd) && new=$(cd "$new" && pwd) || exit 2
top=$(cd "$(dirname "$0")/.." && pwd)
repeats=${REPEATS:-3}
secs=${SECONDS_PER_RUN:-3}
cases=${CASES:-flush pagecache memory scaling}
zmib=${ZONE_MIB:-4}
new_opts=${NEW_OPTS:-}
mem_bs=${MEM_BS:-4k}
OUT=${OUT:-$top/bench/results/server-threads.txt}
old_srv=$old/server/zonednull-server
new_srv=$new/server/zonednull-server
plugin=$new/plugin/.libs/nbdkit-zonednull-plugin.so
old_plugin=$old/plugin/.libs/nbdkit-zonednull-plugin.so
for f in "$old_srv" "$new_srv" "$plugin" "$old_plugin"; do
  [ -e "$f" ] || { echo "server-threads: no $f (build first)" >&2; exit 2; }
done
for c in fio nbdkit; do
  command -v $c >/dev/null || { echo "server-threads: $c is not installed" >&2; exit 2; }
done

tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/zn-threads.XXXXXX")
trap 'bench_stop; rm -rf "$tmp"' EXIT
fstype=$(df -T "$tmp" | awk 'NR == 2 { print $2 }')
[ "$fstype" != tmpfs ] ||
  echo "server-threads: $tmp is on tmpfs: its flushes cost nothing (set TMPDIR to a disk)" >&2

# describe BUILDDIR: its source tree's commit.
describe () {
  s=$(sed -n 's/^abs_top_srcdir = //p' "$1/Makefile" 2>/dev/null)
  git -C "${s:-.}" describe --always --dirty 2>/dev/null || echo "?"
}

# srv NAME COMMAND...: a server on $tmp/NAME.sock; its PID in NAME_pid.
srv () {
  n=$1
  shift
  bench_start "$tmp/$n.sock" "$@" >>"$tmp/$n.log" 2>&1 ||
    { echo "server-threads: $n did not start: $*" >&2; tail -n 5 "$tmp/$n.log" >&2; exit 1; }
  eval "${n}_pid=\$bench_pid"
}
# halt NAME: stops that server.
halt () { eval "bench_stop \$${1}_pid"; }
uri () { echo "nbd+unix:///?socket=$tmp/$1.sock"; }

# run CASE NAME FIO-OPTION...: one fio run against NAME (bench_fio; IOPS:
# reads + writes, so a flush-heavy job counts its writes, not its
# flushes).  local: fio's io_uring engine on a file of the same file
# system, no NBD and no server (its CPU shows as 0).
run () {
  c=$1 n=$2 p=self
  shift 2
  if [ "$n" = local ]; then
    set -- --ioengine=io_uring --filename="$tmp/local.img" "$@"
  else
    set -- --ioengine=nbd --uri="$(uri "$n")" "$@"
    eval "p=\$${n}_pid"
  fi
  bench_fio server-threads "$tmp" "$c" "$n" "$r" "$p" "$@"
}

# cells CASE "NAME..." FIO-OPTION...: REPEATS runs of each server in
# turn, the first of each repeat rotating.
cells () {
  c=$1 names=$2
  shift 2
  r=1
  while [ $r -le "$repeats" ]; do
    for n in $(echo "$names" | awk -v k=$((r - 1)) '{ for (i = 0; i < NF; i++) print $((i + k) % NF + 1) }'); do
      run "$c" "$n" "$@"
    done
    r=$((r + 1))
  done
}

# fill NAME MIB: NAME's first MIB MiB written once, in 1 MiB writes.
fill () {
  fio --name=fill --ioengine=nbd --uri="$(uri "$1")" --rw=write --bs=1m \
      --size="$2M" --iodepth=4 >>"$tmp/fio.log" 2>&1 ||
    { echo "server-threads: filling $1 failed" >&2; exit 1; }
}

# fresh_cells CASE "NAME..." FIO-OPTION...: as cells, but each run on a
# server started for it (from NAME_cmd) and stopped after it: writes
# from the start of a device need empty zones.
fresh_cells () {
  c=$1 names=$2
  shift 2
  r=1
  while [ $r -le "$repeats" ]; do
    for n in $(echo "$names" | awk -v k=$((r - 1)) '{ for (i = 0; i < NF; i++) print $((i + k) % NF + 1) }'); do
      cmd=
      eval "cmd=\$${n}_cmd"
      # shellcheck disable=SC2086 # paths without spaces, split on purpose
      srv "$n" $cmd
      run "$c" "$n" "$@"
      halt "$n"
    done
    r=$((r + 1))
  done
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$tmp/raw"
conv=$((64 * zmib))
fdev="size=$((65 * zmib)) zone_size=$zmib zone_nr_conv=64"
mdev="size=256 zone_size=16 zone_nr_conv=15 memory_backed=1"
# shellcheck disable=SC2086 # option and parameter lists, split on purpose
case " $cases " in *" flush "*|*" pagecache "*)
  srv fold "$old_srv" -f -U "$tmp/fold.sock" $fdev backing_dir="$tmp/fold.dir"
  srv fnew "$new_srv" $new_opts -f -U "$tmp/fnew.sock" $fdev backing_dir="$tmp/fnew.dir"
  srv fzn nbdkit -f -t 16 -U "$tmp/fzn.sock" "$plugin" $fdev backing_dir="$tmp/fzn.dir"
  fpeers="fold fnew fzn ffile"
  if [ "$old" != "$new" ]; then
    srv fzo nbdkit -f -t 16 -U "$tmp/fzo.sock" "$old_plugin" $fdev backing_dir="$tmp/fzo.dir"
    fpeers="$fpeers fzo"
  fi
  truncate -s "$((65 * zmib))M" "$tmp/ffile.img"
  srv ffile nbdkit -f -t 16 -U "$tmp/ffile.sock" file "$tmp/ffile.img"
  # Every block written once and on disk: the jobs overwrite allocated
  # blocks, and the first flush does not write the fill back.
  for n in $fpeers; do fill $n "$conv"; done
  fio --name=fill --filename="$tmp/local.img" --rw=write --bs=1m \
      --size="${conv}M" >>"$tmp/fio.log" 2>&1 ||
    { echo "server-threads: filling $tmp/local.img failed" >&2; exit 1; }
  sync
  job="--size=${conv}M --iodepth=8 --numjobs=4 --time_based --runtime=$secs"
  case " $cases " in *" flush "*)
    cells flush "$fpeers local" --rw=randwrite --fsync=1 $job
  esac
  case " $cases " in *" pagecache "*)
    cells pc-randread "$fpeers" --rw=randread $job
    cells pc-randwrite "$fpeers" --rw=randwrite $job
  esac
  for n in $fpeers; do halt $n; done
  rm -rf "$tmp"/f*.dir "$tmp/ffile.img" "$tmp/local.img"
esac

# shellcheck disable=SC2086
case " $cases " in *" memory "*|*" scaling "*)
  srv mold "$old_srv" -f -U "$tmp/mold.sock" $mdev
  fill mold 64
esac
# shellcheck disable=SC2086
case " $cases " in *" memory "*)
  srv mnew "$new_srv" $new_opts -f -U "$tmp/mnew.sock" $mdev
  fill mnew 64
  cells mem-qd16 "mold mnew" --rw=randread --bs="$mem_bs" --size=64M --iodepth=16 --time_based --runtime=$secs
  cells mem-qd64 "mold mnew" --rw=randread --bs="$mem_bs" --size=64M --iodepth=64 --time_based --runtime=$secs
  halt mnew
esac

threads=no
"$new_srv" --help 2>&1 | grep -q -- '--threads' && threads=yes
# shellcheck disable=SC2086
case " $cases " in *" scaling "*) if [ $threads = yes ]; then
  srv t1 "$new_srv" $new_opts --threads=1 -f -U "$tmp/t1.sock" $mdev
  srv t2 "$new_srv" $new_opts --threads=2 -f -U "$tmp/t2.sock" $mdev
  fill t1 64; fill t2 64
  cells sc-randread "mold t1 t2" --rw=randread --size=64M --iodepth=16 --numjobs=2 \
    --time_based --runtime=$secs
  halt t1; halt t2
  wdev="size=16384 zone_size=64 memory_backed=0"
  # shellcheck disable=SC2034 # read by fresh_cells
  wold_cmd="$old_srv -f -U $tmp/wold.sock $wdev"
  # shellcheck disable=SC2034
  w1_cmd="$new_srv $new_opts --threads=1 -f -U $tmp/w1.sock $wdev"
  # shellcheck disable=SC2034
  w2_cmd="$new_srv $new_opts --threads=2 -f -U $tmp/w2.sock $wdev"
  fresh_cells sc-zonewrite "wold w1 w2" --rw=write --iodepth=16 --numjobs=2 \
    --size=8g --offset_increment=8g --runtime=$secs
fi; esac
case " $cases " in *" memory "*|*" scaling "*) halt mold ;; esac
load1=$(cut -d' ' -f1-3 /proc/loadavg)

# iops CASE NAME, cpu CASE NAME: medians; cell CASE NAME: "IOPS (CPU)".
iops () { awk -v c="$1" -v n="$2" '$1 == c && $2 == n { print $4 }' "$tmp/raw" | bench_median | xargs printf '%.0f'; }
cpu () { awk -v c="$1" -v n="$2" '$1 == c && $2 == n { print $5 }' "$tmp/raw" | bench_median | xargs printf '%.2f'; }
cell () { echo "$(iops "$1" "$2") ($(cpu "$1" "$2"))"; }
ratio () { bench_ratio "$(iops "$1" "$2")" "$(iops "$1" "$3")" x; }
runs () { awk -v c="$1" -v n="$2" '$1 == c && $2 == n { printf "%s%s", s, $4; s = "/" }' "$tmp/raw"; }
has () { grep -q "^$1 " "$tmp/raw"; }   # has CASE or has "CASE NAME"

table () {
  echo "# zonednull-server: storage I/O off the loop, a loop per core (issue 45)"
  echo
  echo "OLD $old ($(describe "$old")), NEW $new ($(describe "$new"))$([ -z "$new_opts" ] || echo ", NEW's server with $new_opts")."
  [ "$old" != "$new" ] || echo "OLD and NEW are the same build: NEW/OLD shows the noise of the machine."
  echo "$(nproc) CPUs, $(date -u '+%Y-%m-%d %H:%M') UTC, load average $load0 at the start, $load1 at the end;"
  echo "backing_dir and the nbdkit file on $fstype (${TMPDIR:-/var/tmp})."
  echo "fio 3.33's nbd engine, 4 KiB, one connection per job; medians of $repeats runs of ${secs} s, the servers"
  echo "taking turns; each cell: IOPS (the server's CPU over the run, in cores)."
  if has flush || has pc-randread; then
    echo
    echo "File-backed: $fdev in a backing_dir, written in full and synced first;"
    echo "4 connections x iodepth 8, random over the $conv MiB of conventional zones; nbdkit -t 16."
    echo
    echo "| job | OLD | NEW | nbdkit zonednull | nbdkit file | NEW/nbdkit zonednull | NEW/nbdkit file | NEW/OLD |"
    echo "|---|---|---|---|---|---|---|---|"
    for c in flush pc-randread pc-randwrite; do
      has $c || continue
      case $c in
        flush) j="randwrite, a flush after each"; t1=" (target >= 1.5x)" t2=" (target >= 1x)" t3= ;;
        pc-randread) j="randread, page cache"; t1='' t2='' t3=" (target >= 0.95x)" ;;
        pc-randwrite) j="randwrite, page cache (no flush)"; t1='' t2='' t3=" (target >= 0.95x)" ;;
      esac
      echo "| $j | $(cell $c fold) | $(cell $c fnew) | $(cell $c fzn) | $(cell $c ffile) | $(ratio $c fnew fzn)$t1 | $(ratio $c fnew ffile)$t2 | $(ratio $c fnew fold)$t3 |"
    done
    if has flush; then
      # A flush's cost is the disk's, which other work on a shared host
      # moves by several times from one run to the next.
      echo
      printf 'Flush-heavy IOPS run by run: OLD %s; NEW %s; nbdkit zonednull %s; nbdkit file %s%s.\n' \
        "$(runs flush fold)" "$(runs flush fnew)" "$(runs flush fzn)" "$(runs flush ffile)" \
        "$(has 'flush fzo' && echo "; OLD's plugin $(runs flush fzo)")"
      # What the file system gives the same job without NBD: the ceiling
      # that the servers share.
      echo
      echo "The same job by fio's io_uring engine on one file of the same file system, no NBD:"
      echo "$(iops flush local) IOPS (runs $(runs flush local)); NEW at $(ratio flush fnew local) of it, nbdkit zonednull at $(ratio flush fzn local)."
    fi
    if has 'flush fzo' || has 'pc-randread fzo'; then
      echo
      echo "nbdkit zonednull, NEW's plugin against OLD's (the plugin shares the storage code):"
      echo
      echo "| job | OLD plugin | NEW plugin | NEW/OLD |"
      echo "|---|---|---|---|"
      for c in flush pc-randread pc-randwrite; do
        has "$c fzo" || continue
        echo "| $c | $(cell $c fzo) | $(cell $c fzn) | $(ratio $c fzn fzo) |"
      done
    fi
  fi
  if has mem-qd16; then
    echo
    echo "Memory-backed: $mdev, 64 MiB written; random reads of $mem_bs over it, one connection."
    echo
    echo "| job | OLD | NEW | NEW/OLD |"
    echo "|---|---|---|---|"
    for d in 16 64; do
      echo "| randread, depth $d | $(cell mem-qd$d mold) | $(cell mem-qd$d mnew) | $(ratio mem-qd$d mnew mold) |"
    done
  fi
  case " $cases " in *" scaling "*)
    echo
    if [ $threads = no ]; then
      echo "Scaling: skipped, NEW's zonednull-server has no --threads option."
    else
      echo "Scaling: NEW with --threads=1 and --threads=2 (OLD for reference), 2 connections x depth 16:"
      echo "random reads as above; sequential writes from an empty device (size=16384 zone_size=64"
      echo "memory_backed=0, a fresh server per run), each job over its own 128 zones."
      echo
      echo "| job | OLD | NEW --threads=1 | NEW --threads=2 | 2 loops / 1 loop | 2 loops / OLD |"
      echo "|---|---|---|---|---|---|"
      echo "| randread | $(cell sc-randread mold) | $(cell sc-randread t1) | $(cell sc-randread t2) | $(ratio sc-randread t2 t1) (target >= 1.6x) | $(ratio sc-randread t2 mold) |"
      echo "| zone writes | $(cell sc-zonewrite wold) | $(cell sc-zonewrite w1) | $(cell sc-zonewrite w2) | $(ratio sc-zonewrite w2 w1) (target >= 1.6x) | $(ratio sc-zonewrite w2 wold) |"
    fi
  esac
}
table | tee "$tmp/table"
mkdir -p "$(dirname "$OUT")"
cp "$tmp/table" "$OUT"
cp "$tmp/raw" "${OUT%.txt}.raw"
