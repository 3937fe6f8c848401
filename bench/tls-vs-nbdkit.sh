#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# zonednull-server against nbdkit zonednull over TLS, in one run: 4 KiB
# random reads at depth 16 and 64 (bench/zn-bench, libnbd aio, one
# connection), both servers with --tls=require and the same PSK, and each
# also without TLS, so that the table gives the ratio between the servers
# over TLS and what TLS costs each of them.  Two devices: memory-backed,
# reads of 64 MiB of written data (every reply carries its 4 KiB through
# TLS), and memory_backed=0, where zonednull-server answers reads of zeros
# with a hole chunk.  Each cell is the median of REPEATS interleaved runs
# of SECONDS_PER_RUN each; the spread (min-max) is shown beside it.
#
#   bench/tls-vs-nbdkit.sh [BUILDDIR]        (default: build)
#   REPEATS=5 SECONDS_PER_RUN=3 bench/tls-vs-nbdkit.sh
set -eu
. "$(dirname "$0")/lib.sh"
builddir=${1:-build}
repeats=${REPEATS:-5}
secs=${SECONDS_PER_RUN:-3}
server=$builddir/server/zonednull-server
plugin=$builddir/plugin/.libs/nbdkit-zonednull-plugin.so
znbench=$builddir/bench/zn-bench
[ -x "$server" ] && [ -f "$plugin" ] && [ -x "$znbench" ] ||
  { echo "build first: $server, $plugin, $znbench" >&2; exit 2; }
command -v psktool >/dev/null || { echo "psktool is not installed (gnutls-bin)" >&2; exit 2; }

tmp=$(mktemp -d /tmp/zn-bench-tls.XXXXXX)
trap 'bench_stop; rm -rf "$tmp"' EXIT
psktool -u bench -p "$tmp/keys.psk" >/dev/null
tls="--tls=require --tls-psk=$tmp/keys.psk"

# As bench/server-vs-nbdkit.sh: conventional zones but the last.
device="size=256 zone_size=16 zone_nr_conv=15"

# start NAME COMMAND...: a server on $tmp/NAME.sock.
start () {
  name=$1
  shift
  bench_start "$tmp/$name.sock" "$@" 2>>"$tmp/servers.log" ||
    { echo "bench: $name did not start: $*" >&2; tail -n 5 "$tmp/servers.log" >&2; exit 1; }
}

# uri NAME: plaintext for the *-plain servers, TLS-PSK for the others.
uri () {
  case $1 in
  *plain) echo "nbd+unix:///?socket=$tmp/$1.sock" ;;
  *) echo "nbds+unix://bench@/?socket=$tmp/$1.sock&tls-psk-file=$tmp/keys.psk" ;;
  esac
}

for mb in 1 0; do
  # shellcheck disable=SC2086
  {
    start "s$mb-tls" "$server" -f -U "$tmp/s$mb-tls.sock" $tls $device memory_backed=$mb
    start "s$mb-plain" "$server" -f -U "$tmp/s$mb-plain.sock" $device memory_backed=$mb
    start "n$mb-tls" nbdkit -f -U "$tmp/n$mb-tls.sock" $tls "$plugin" $device memory_backed=$mb
    start "n$mb-plain" nbdkit -f -U "$tmp/n$mb-plain.sock" "$plugin" $device memory_backed=$mb
  }
done
# 64 MiB of data on each memory-backed device.
for t in s1-tls s1-plain n1-tls n1-plain; do
  /usr/bin/python3 - "$(uri $t)" <<'PY' || { echo "bench: filling $t failed" >&2; exit 1; }
import nbd, os, sys
h = nbd.NBD()
h.set_uri_allow_local_file(True)
h.connect_uri(sys.argv[1])
chunk = os.urandom(1 << 20)
for i in range(64):
    h.pwrite(chunk, i << 20)
h.flush()
h.shutdown()
PY
done

# run TARGET DEPTH SPAN: appends the IOPS of one run to $tmp/TARGET.runs.
run () {
  "$znbench" --mode randread --depth "$2" --bs 4096 --span "$3" \
    --seconds "$secs" "$(uri "$1")" | sed -n 's/.* iops=\([0-9]*\).*/\1/p' >>"$tmp/$1.runs"
}
spread () {
  sort -n "$1" | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%d-%d", lo, hi }'
}

echo "4 KiB random reads, IOPS: median of $repeats interleaved runs of ${secs}s [min-max];"
echo "one connection, zn-bench (libnbd aio); TLS 1.3 with a PSK (--tls=require), same key for both servers"
echo "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"
printf '%-6s %-5s %21s %21s %21s %21s %8s %8s %8s\n' data depth server-tls nbdkit-tls \
  server-plain nbdkit-plain tls-s/n s-tls/pl n-tls/pl
for mb in 1 0; do
  for depth in 16 64; do
    if [ "$mb" = 1 ]; then span=$((64 << 20)); label=data; else span=$((256 << 20)); label=zeros; fi
    set -- "s$mb-tls" "n$mb-tls" "s$mb-plain" "n$mb-plain"
    for t in "$@"; do : >"$tmp/$t.runs"; done
    r=0
    while [ $r -lt "$repeats" ]; do
      for t in "$@"; do run "$t" "$depth" "$span"; done
      r=$((r + 1))
    done
    st=$(bench_median <"$tmp/s$mb-tls.runs") nt=$(bench_median <"$tmp/n$mb-tls.runs")
    sp=$(bench_median <"$tmp/s$mb-plain.runs") np=$(bench_median <"$tmp/n$mb-plain.runs")
    printf '%-6s %-5s %9s [%-9s] %9s [%-9s] %9s [%-9s] %9s [%-9s] %8s %8s %8s\n' \
      "$label" "$depth" \
      "$st" "$(spread "$tmp/s$mb-tls.runs")" "$nt" "$(spread "$tmp/n$mb-tls.runs")" \
      "$sp" "$(spread "$tmp/s$mb-plain.runs")" "$np" "$(spread "$tmp/n$mb-plain.runs")" \
      "$(bench_ratio "$st" "$nt" x)" "$(bench_ratio "$st" "$sp" x)" "$(bench_ratio "$nt" "$np" x)"
  done
done
echo "tls-s/n: zonednull-server over nbdkit zonednull, both over TLS (target: above 1);"
echo "s-tls/pl, n-tls/pl: each server over TLS against itself without."
echo "zeros: memory_backed=0, where zonednull-server sends holes and nbdkit the 4 KiB of zeros."
