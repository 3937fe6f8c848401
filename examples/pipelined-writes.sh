#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The pipelining one of the seed experiments (bench/README.md), rewritten
# for zonednull: 4 KiB sequential writes at queue depth 64 in batches of
# 16, to a 1 MiB device with one 1 MiB zone whose requests complete after
# 100 us, in three modes:
#
#   no ordering         writes sent as fio issues them (zone_write_lock=0)
#                       to a strict server: the server may run them out of
#                       order, and a write ahead of the write pointer fails
#   one write per zone  zone_write_lock=1: the engine keeps one write per
#                       zone in flight, as mq-deadline's zone write locking
#   pipelined           zone_write_lock=0 and the server's
#                       pipeline_zoned_writes=1: writes ahead of the write
#                       pointer wait for it instead of failing
#
# and, when zonednull-server is built, one write per zone and no lock at
# all against it: it applies a connection's requests in order.
#
# The 100 us completion (irqmode=2 completion_nsec=100000) and
# pipeline_zoned_writes belong to the queueing model (issue 5).  The
# script probes whether the plugin accepts them, runs what it can and
# says what is missing.
#
# Usage: examples/pipelined-writes.sh [SECONDS]     (default 5 per mode)
# From a build in build/ (./run test makes one); ZONEDNULL_BUILDDIR,
# ZONEDNULL_PLUGIN, ZONEDNULL_FIO_ENGINE, ZONEDNULL_SERVER, NBDKIT and FIO
# override.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${ZONEDNULL_BUILDDIR:-$here/../build}
plugin=${ZONEDNULL_PLUGIN:-$build/plugin/.libs/nbdkit-zonednull-plugin.so}
engine=${ZONEDNULL_FIO_ENGINE:-$build/engine/.libs/zonednull-fio.so}
native=${ZONEDNULL_SERVER:-$build/server/zonednull-server}
nbdkit=${NBDKIT:-nbdkit}
fio=${FIO:-fio}
runtime=${1:-5}
python=/usr/bin/python3

die () { echo "pipelined-writes: $*" >&2; exit 1; }
[ -f "$plugin" ] || die "no plugin at $plugin (build first: ./run test)"
[ -f "$engine" ] || die "no fio engine at $engine (configure --with-fio=DIR)"
command -v "$fio" >/dev/null || die "fio is not installed"
[ -x "$python" ] || die "$python is needed to read fio's JSON"
case $runtime in ''|*[!0-9]*) die "SECONDS must be a whole number" ;; esac

device="size=1 zone_size=1 memory_backed=1"
timing="irqmode=2 completion_nsec=100000"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/zn-pipelined.XXXXXX") || die "mktemp failed"
server=
cleanup () {
  [ -z "$server" ] || kill "$server" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

# accepts KEY=VALUE...: whether the plugin takes these parameters.
accepts () {
  # shellcheck disable=SC2086
  "$nbdkit" -U - "$plugin" $device "$@" --run true >"$tmp/probe" 2>&1
}

missing=
if accepts $timing; then
  have_timing=1
else
  have_timing=
  missing="$missing
  - irqmode=2 completion_nsec=100000 (100 us completions): $(tail -n 1 "$tmp/probe")"
fi
if accepts pipeline_zoned_writes=1; then
  have_pipeline=1
else
  have_pipeline=
  missing="$missing
  - pipeline_zoned_writes=1 (the pipelined mode): $(tail -n 1 "$tmp/probe")"
fi
if [ -n "$missing" ]; then
  cat <<MSG
pipelined-writes: this plugin lacks the queueing model of issue 5:$missing
The modes run without it; without the 100 us completion the numbers are
not those of the seed experiment (bench/README.md).

MSG
fi

# run_mode NAME ZONE_WRITE_LOCK nbdkit|native KEY=VALUE...: serves the
# device (nbdkit with the plugin, or zonednull-server) with the given
# extra parameters, runs examples/pipelined-writes.fio against it and
# prints one result line.
run_mode () {
  mode=$1 lock=$2 kind=$3
  shift 3
  rm -f "$tmp/sock" "$tmp/pid"
  if [ "$kind" = native ]; then
    # shellcheck disable=SC2086
    "$native" -f -U "$tmp/sock" -P "$tmp/pid" $device "$@" \
      2>"$tmp/server.log" &
  else
    # shellcheck disable=SC2086
    "$nbdkit" -f -U "$tmp/sock" -P "$tmp/pid" "$plugin" $device "$@" \
      2>"$tmp/server.log" &
  fi
  server=$!
  tries=0
  until [ -s "$tmp/pid" ] && [ -S "$tmp/sock" ]; do
    kill -0 "$server" 2>/dev/null || die "nbdkit failed: $(cat "$tmp/server.log")"
    tries=$((tries + 1))
    [ "$tries" -le 100 ] || die "nbdkit did not start"
    sleep 0.1
  done
  ZONEDNULL_FIO_ENGINE=$engine ZONEDNULL_URI="nbd+unix:///?socket=$tmp/sock" \
  ZONE_WRITE_LOCK=$lock RUNTIME=$runtime \
    "$fio" --output-format=json --output="$tmp/fio.json" \
      "$here/pipelined-writes.fio" >"$tmp/fio.err" 2>&1
  status=$?
  kill "$server" 2>/dev/null
  wait "$server" 2>/dev/null
  server=
  result=$("$python" - "$tmp/fio.json" <<'PY'
import json, sys
try:
    # fio writes its error messages into the same file, before the JSON.
    text = open(sys.argv[1]).read()
    job = json.JSONDecoder().raw_decode(text, text.index("{\n"))[0]["jobs"][0]
except (OSError, ValueError, IndexError, KeyError):
    print("- - no fio report")
    sys.exit()
w = job["write"]
print("%.0f %d %s" % (w["iops"], w["total_ios"],
                      "ok" if job["error"] == 0 else
                      "error %d (%s)" % (job["error"], "EIO" if job["error"] == 5 else "see fio")))
PY
)
  set -- $result
  iops=$1 ios=$2
  shift 2
  note=$*
  [ "$status" -eq 0 ] || [ "$note" != ok ] || note="fio exit $status"
  printf '%-20s %-12s %10s %10s  %s\n' "$mode" "lock=$lock" "$iops" "$ios" "$note"
  [ "$note" = ok ] || grep -h -m 2 '^fio: ' "$tmp/fio.json" |
    sed 's/^/    /'
}

params=
[ -z "$have_timing" ] || params=$timing
strict=$params
[ -z "$have_pipeline" ] || strict="$params pipeline_zoned_writes=0"

echo "4 KiB writes, iodepth 64, batch 16, 1 MiB device = one 1 MiB zone, ${runtime} s per mode"
echo "server: $device ${params:-(no completion delay)}"
printf '%-20s %-12s %10s %10s  %s\n' mode engine IOPS writes result
# shellcheck disable=SC2086
run_mode "no ordering" 0 nbdkit $strict
# shellcheck disable=SC2086
run_mode "one write per zone" 1 nbdkit $params
if [ -n "$have_pipeline" ]; then
  # shellcheck disable=SC2086
  run_mode pipelined 0 nbdkit $params pipeline_zoned_writes=1
else
  printf '%-20s %-12s %10s %10s  %s\n' pipelined lock=0 - - \
    "not run: the server has no pipeline_zoned_writes (issue 5)"
fi
# zonednull-server applies a connection's requests in the order they were
# sent, so without any zone lock the writes arrive in order: what the
# kernel's pipelining keeps through the block layer.
if [ -x "$native" ]; then
  # shellcheck disable=SC2086
  run_mode "srv: one per zone" 1 native $params
  # shellcheck disable=SC2086
  run_mode "srv: in order" 0 native $params
fi
