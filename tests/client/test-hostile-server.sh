#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The client side against a hostile or broken server (hostile-server.py):
# bad headers and descriptors, a geometry that changes after connect, a
# server that never speaks, one that stops answering and one that
# trickles.  The CLI and the fio engine must exit non-zero with a message
# naming the field or the wait, never take a signal, never wait without
# a bound; the CLI runs under valgrind, the engine once too.
. "$(dirname "$0")/../common/lib.sh"

PYTHON=/usr/bin/python3
[ -x "$PYTHON" ] || skip "$PYTHON is not installed"
: "${ZONEDNULL_CLI:=${ZONEDNULL_BUILDDIR:-.}/cli/zonednull}"
[ -x "$ZONEDNULL_CLI" ] || fail "no CLI at $ZONEDNULL_CLI"
hostile=${ZONEDNULL_SRCDIR:-$(dirname "$0")/../..}/tests/common/hostile-server.py
case ${FIO:-no} in no | '') FIO=fio ;; esac
engine=${ZONEDNULL_FIO_ENGINE:-}
# A sanitized engine needs the sanitizer runtimes preloaded into fio.
fio_run=$FIO
if [ -n "${ZONEDNULL_PRELOAD:-}" ]; then
  fio_run="env LD_PRELOAD=$(echo $ZONEDNULL_PRELOAD | tr ' ' :) ASAN_OPTIONS=detect_leaks=0 $FIO"
fi
# Sanitized builds preload their runtimes into fio (see fio-lib.sh), and
# valgrind does not mix with them.
valgrind=
if [ -z "${ZONEDNULL_PRELOAD:-}" ] && command -v valgrind >/dev/null; then
  valgrind="valgrind -q --error-exitcode=99 --leak-check=full \
--errors-for-leak-kinds=definite,indirect"
fi

# serve CASE: the hostile server on $tmpdir/CASE.sock; sets $uri and $pid.
serve () {
  sock=$tmpdir/$1.sock
  "$PYTHON" "$hostile" "$sock" "$1" 2>"$tmpdir/$1.log" &
  pid=$!
  server_pids="$server_pids $pid"
  tries=0
  while [ ! -S "$sock" ]; do
    kill -0 "$pid" 2>/dev/null || fail "hostile server $1: $(cat "$tmpdir/$1.log")"
    tries=$((tries + 1))
    [ "$tries" -le 300 ] || fail "hostile server $1 did not start"
    sleep 0.1
  done
  uri="nbd+unix:///?socket=$sock"
}

# refused TEXT CMD...: CMD exits 1 (not a signal, not valgrind's 99),
# within the hang guard, and says TEXT.
refused () {
  text=$1
  shift
  timeout -s KILL 120 "$@" >"$tmpdir/out" 2>"$tmpdir/err"
  rc=$?
  [ "$rc" -ne 0 ] || fail "$* succeeded: $(cat "$tmpdir/out")"
  [ "$rc" -ne 137 ] || fail "$* hung"
  [ "$rc" -lt 128 ] || fail "$* died of signal $((rc - 128)): $(cat "$tmpdir/err")"
  [ "$rc" -ne 99 ] || fail "$*: valgrind: $(cat "$tmpdir/err")"
  grep -qF -- "$text" "$tmpdir/err" "$tmpdir/out" ||
    fail "$*: no '$text' in: $(cat "$tmpdir/err" "$tmpdir/out")"
}

# fio_refused TEXT ARG...: a write job through the engine against $uri.
fio_refused () {
  text=$1
  shift
  [ -n "$engine" ] || return 0
  # shellcheck disable=SC2086
  (cd "$tmpdir" && refused "$text" "$@" $fio_run --name=j \
    --ioengine="external:$engine" --uri="$uri" --filename=zn \
    --zonemode=zbd --rw=write --bs=64k --size=2M --server_timeout=2) ||
    exit 1
}

# The CLI's report runs under valgrind, its other commands as they are.
# shellcheck disable=SC2086 # $zn is split on purpose
zn="$valgrind $ZONEDNULL_CLI"
cli=$ZONEDNULL_CLI

# The fake is a faithful server when it means to be: everything works.
serve good
$zn report "$uri" >"$tmpdir/report" || fail "report against the good fake failed"
[ "$(grep -c 'zcond: 1(em)' "$tmpdir/report")" -eq 8 ] ||
  fail "report of the good fake: $(cat "$tmpdir/report")"
$zn reset -o 0 -c 1 "$uri" || fail "reset against the good fake failed"
if [ -n "$engine" ]; then
  # shellcheck disable=SC2086
  (cd "$tmpdir" && $fio_run --name=j --ioengine="external:$engine" --uri="$uri" \
    --filename=zn --zonemode=zbd --rw=write --bs=64k --size=2M \
    >"$tmpdir/fio.out" 2>&1) || fail "fio against the good fake: $(cat "$tmpdir/fio.out")"
fi
stop_server "$pid"

# Bad headers: every command is refused at connect, naming the field.
for spec in \
  "zone-not-pow2|zone_sectors 3000 is not a power of 2" \
  "capacity-overflow|capacity 36028797018963968 is not between 1 and" \
  "cap-gt-size|zone_capacity 4096 is not between 1 and zone_sectors (2048)" \
  "many-zones|nr_zones 4294967295, but a capacity of 16384 sectors" \
  "geometry-changes|zone_sectors 0 is not a power of 2"
do
  case=${spec%%|*}
  text=${spec#*|}
  serve "$case"
  refused "$text" $zn report "$uri"
  for cmd in capacity info "reset -o 0 -c 1" "finish -o 0 -c 1" \
             "append -o 0 --pattern 7 -l 8" "readonly -o 0"; do
    # shellcheck disable=SC2086
    refused "$text" "$cli" $cmd "$uri"
  done
  fio_refused "$text"
  stop_server "$pid"
done

# Bad descriptors: reports are refused, naming the zone and the field.
for spec in \
  "zone-len-huge|zone 1: start 2048 and len 36028797018963968, expected 2048 and 2048" \
  "wp-outside|zone 2: write pointer 9096 is outside [4096, 6143]" \
  "bad-type|zone 1: type 7, expected 2" \
  "bad-cond|zone 1: condition 0x9 is not a sequential zone's"
do
  case=${spec%%|*}
  text=${spec#*|}
  serve "$case"
  refused "$text" $zn report "$uri"
  refused "$text" "$cli" capacity "$uri"
  fio_refused "$text"
  stop_server "$pid"
done
# The engine under valgrind once: fio forks its jobs, so children too.
# fio leaks memory of its own, so this looks for memory errors only.
if [ -n "$engine" ] && [ -n "$valgrind" ]; then
  serve wp-outside
  (cd "$tmpdir" && refused "zone 2: write pointer 9096" valgrind -q \
    --trace-children=yes "$FIO" --name=j --ioengine="external:$engine" \
    --uri="$uri" --filename=zn --zonemode=zbd --rw=write --bs=64k \
    --size=2M) || exit 1
  ! grep -q '^==[0-9]*== ' "$tmpdir/err" ||
    fail "valgrind on fio with the engine: $(cat "$tmpdir/err")"
  stop_server "$pid"
fi

# Servers that do not answer: the wait ends at --timeout.
for spec in \
  "silent|connecting: the server did not answer within the timeout (1.000 s)" \
  "hang|reading the control header: the server did not answer within the timeout" \
  "trickle|the server did not answer within the timeout"
do
  case=${spec%%|*}
  text=${spec#*|}
  serve "$case"
  refused "$text" $zn report --timeout 1 "$uri"
  refused "$text" "$cli" reset --timeout 1 -o 0 -c 1 "$uri"
  fio_refused "the server did not answer within the timeout (2.000 s)"
  stop_server "$pid"
done
# The data path: writes that get no answer fail the job at server_timeout.
serve data-hang
fio_refused "write of 65536 bytes at 0: no answer from the server within server_timeout=2 s"
stop_server "$pid"
echo "the CLI and the engine refused every hostile server"
