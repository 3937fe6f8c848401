#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# What TLS costs NVMe/TCP, in one run: one zonednull-server --nvme with
# --tls=on (a port that serves both) and a host's TLS key, and three
# ways to it, interleaved: in clear text straight to the port, in clear
# text through tests/nvme/tls-host's relay (the hop the TLS host adds,
# without TLS), and over TLS 1.3 through tls-host's proxy (GnuTLS,
# TLS_AES_128_GCM_SHA256, the PSK derived as a Linux host derives it).
# The host is tests/common/nvme-host.py: one admin and one I/O queue,
# sequential writes of 128 KiB (R2T) filling ZONES zones, then reads of
# 128 KiB of them back.  Each cell is the median MiB/s of REPEATS runs,
# the spread (min-max) beside it.  The Python host bounds all three
# alike, so the ratio against the relay is TLS's cost at that rate,
# not at a kernel host's.
#
#   bench/nvme-tls-vs-clear.sh [BUILDDIR]        (default: build)
#   REPEATS=5 ZONES=2 bench/nvme-tls-vs-clear.sh
set -eu
. "$(dirname "$0")/lib.sh"
src=$(cd "$(dirname "$0")/.." && pwd)
builddir=${1:-build}
repeats=${REPEATS:-5}
zones=${ZONES:-2}
server=$builddir/server/zonednull-server
tls_host=$builddir/tests/nvme/tls-host
[ -x "$server" ] && [ -x "$tls_host" ] ||
  { echo "build first: $server, $tls_host (make check builds it)" >&2; exit 2; }

tmp=$(mktemp -d /tmp/zn-bench-nvme-tls.XXXXXX)
relay_pids=
# The relays are not waited for: they end on SIGTERM.
trap 'kill $relay_pids 2>/dev/null; bench_stop; rm -rf "$tmp"' EXIT
port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
hostnqn=nqn.2014-08.org.nvmexpress:uuid:00000000-0000-4000-8000-000000000001
keys="/usr/bin/python3 $src/tests/nvme/nvme-tls-key.py"
key=$($keys gen 01 "$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')")
echo "bench:0123456789abcdef0123456789abcdef" >"$tmp/nbd.psk"
chmod 600 "$tmp/nbd.psk"
bench_start "$tmp/zn.sock" "$server" -f -U "$tmp/zn.sock" -i 127.0.0.1 \
  --nvme="$port" --tls=on --tls-psk="$tmp/nbd.psk" \
  --nvme-tls-key="$hostnqn:$key" size=256 zone_size=64 memory_backed=1 \
  2>"$tmp/server.log" ||
  { echo "bench: the server did not start" >&2; cat "$tmp/server.log" >&2; exit 1; }
nqn=$(sed -n 's/.*subsystem \([^,]*\),.*/\1/p' "$tmp/server.log")
$keys derive "$key" "$hostnqn" "$nqn" 0 >"$tmp/derived"

# relay MODE: tls-host in front of the port (not in a subshell, so that
# the trap stops it); the port it listens on in $tmp/MODE.port.
relay () {
  "$tls_host" "$(sed -n 1p "$tmp/derived")" "$(sed -n 2p "$tmp/derived")" \
    "$port" "$1" >"$tmp/$1.port" &
  relay_pids="$relay_pids $!"
  until [ -s "$tmp/$1.port" ]; do sleep 0.05; done
}
relay relay
relay proxy
plain_port=$(cat "$tmp/relay.port")
tls_port=$(cat "$tmp/proxy.port")

# run PORT: "WRITE_MIBS READ_MIBS" of one pass.
run () {
  /usr/bin/python3 - "$src/tests/common/nvme-host.py" "$1" "$nqn" "$zones" <<'PY'
import importlib.util, sys, time
spec = importlib.util.spec_from_file_location("nvmehost", sys.argv[1])
h = importlib.util.module_from_spec(spec)
spec.loader.exec_module(h)
port, nqn, zones = sys.argv[2], sys.argv[3], int(sys.argv[4])
a = h.admin_queue("127.0.0.1", port, nqn)
cap = a.prop_get(0, True)[1]
io = h.Host("127.0.0.1", port)
io.ic()
assert io.connect(1, nqn, h.HOSTNQN, cntlid=a.cntlid,
                  sqsize=min(31, cap & 0xFFFF))[0] == 0
assert io.command(io.sqe(0x79, 1, cdw=(0, 0, 0, 0x04 | 1 << 8)))[0] == 0
bs, chunk = 512, 128 * 1024
total = zones * 64 * 1024 * 1024
data = bytes(range(256)) * (chunk // 256)
t = time.monotonic()
for off in range(0, total, chunk):
    assert io.write(1, off // bs, data, bs)[0] == 0
w = total / (time.monotonic() - t) / 2**20
t = time.monotonic()
for off in range(0, total, chunk):
    st, _, back = io.read(1, off // bs, chunk // bs, bs)
    assert st == 0 and len(back) == chunk
r = total / (time.monotonic() - t) / 2**20
print("%.1f %.1f" % (w, r))
PY
}

: >"$tmp/results"
i=0
while [ "$i" -lt "$repeats" ]; do
  for way in clear:$port relay:$plain_port tls:$tls_port; do
    echo "${way%%:*} $(run "${way#*:}")" >>"$tmp/results"
  done
  i=$((i + 1))
done

cell () {
  grep "^$1 " "$tmp/results" | awk -v k="$2" '{ print $k }' >"$tmp/col"
  printf "%s (%s-%s)" "$(bench_median <"$tmp/col")" \
    "$(sort -g "$tmp/col" | head -n 1)" "$(sort -g "$tmp/col" | tail -n 1)"
}
echo "NVMe/TCP, $zones x 64 MiB, 128 KiB commands, one I/O queue, median of $repeats (min-max), MiB/s"
printf "%-28s %-26s %s\n" "way" "write" "read"
for way in clear relay tls; do
  case $way in
    clear) what="clear, direct" ;;
    relay) what="clear, through the relay" ;;
    tls) what="TLS 1.3 PSK, through proxy" ;;
  esac
  printf "%-28s %-26s %s\n" "$what" "$(cell $way 2)" "$(cell $way 3)"
done
w_tls=$(grep '^tls ' "$tmp/results" | awk '{ print $2 }' | bench_median)
w_rel=$(grep '^relay ' "$tmp/results" | awk '{ print $2 }' | bench_median)
r_tls=$(grep '^tls ' "$tmp/results" | awk '{ print $3 }' | bench_median)
r_rel=$(grep '^relay ' "$tmp/results" | awk '{ print $3 }' | bench_median)
echo "TLS / relay: write $(bench_ratio "$w_tls" "$w_rel"), read $(bench_ratio "$r_tls" "$r_rel")"
