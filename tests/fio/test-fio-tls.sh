#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The fio engine over TLS: zonemode=zbd writes, verified, then resets,
# through an nbds+unix:// URI with tls-psk-file, against zonednull-server
# and nbdkit zonednull, both with --tls=require; the zone reports
# afterwards come through the CLI over TLS too.
. "$(dirname "$0")/../common/fio-lib.sh"

command -v psktool >/dev/null || skip "psktool is not installed (gnutls-bin)"
psktool -u fio -p "$tmpdir/keys.psk" >/dev/null || fail "psktool"
: "${ZONEDNULL_SERVER:=${ZONEDNULL_BUILDDIR:-.}/server/zonednull-server}"

geometry="size=64 zone_size=4 zone_nr_conv=2 zone_max_open=4 memory_backed=1"
# nbdkit with TLS and the sanitizer runtimes preloaded hangs at exit
# (see tests/nbd/test-replay-nbd-tls.sh): the sanitizer build runs the engine
# against zonednull-server only.
targets="server nbdkit"
[ -z "${ZONEDNULL_PRELOAD:-}" ] || targets=server
for target in $targets; do
  tls="--tls=require --tls-psk=$tmpdir/keys.psk"
  if [ "$target" = server ]; then
    ZONEDNULL_TARGET=server
    # shellcheck disable=SC2086
    start_server tls-server $tls $geometry
  else
    # nbdkit's own options go before the plugin, so not start_server.
    name=tls-nbdkit sock=$tmpdir/tls-nbdkit.sock pidfile=$tmpdir/tls-nbdkit.pid
    # shellcheck disable=SC2086
    exec_nbdkit -f --exit-with-parent $tls -U "$sock" -P "$pidfile" \
      "$ZONEDNULL_PLUGIN" $geometry </dev/null 2>"$tmpdir/$name.log" &
    pid=$!
    await_server "nbdkit $tls"
  fi
  uri="nbds+unix://fio@/?socket=$sock&tls-psk-file=$tmpdir/keys.psk"
  # A plaintext URI is refused, so what follows did go through TLS.
  "$ZONEDNULL_CLI" info "nbd+unix:///?socket=$sock" >/dev/null 2>&1 &&
    fail "$target: a plaintext client was served under --tls=require"
  fio_verified "write-$target" --zonemode=zbd --rw=write --bs=64k \
    --iodepth=8 --size=16M --offset=8M
  check_zones 2 written $((16 << 20))
  fio_ok "reset-$target" --zonemode=zbd --rw=randwrite --bs=4k --iodepth=4 \
    --size=8M --offset=8M --zone_reset_threshold=0.5 --io_size=4M
  stop_server "$pid"
done
exit 0
