#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# zonednull-server's NVMe/TCP over TLS 1.3 with pre-shared keys (TP 8011):
# the keys' options and files are checked (the rule named, the key never
# printed); with --tls=require a host whose TLS PSK is derived from its
# NVMeTLSkey-1 key, under a version 0 or 1 identity, attaches, writes
# and reads back, and the discovery log says TLS 1.3 is required; a
# wrong key, an unknown host, TLS 1.2, a clear-text ICReq and a
# handshake that stalls are refused or dropped, and a TLS queue cannot
# Connect as another host; identities are logged escaped; with --tls=on
# and --nvme-tls-compat the clear port still works and the older
# derivation is the one accepted.  The host is tests/nvme/tls-host (the
# TLS half, GnuTLS) in front of tests/common/nvme-host.py, with the
# keys derived by tests/nvme/nvme-tls-key.py.
. "$(dirname "$0")/../common/lib.sh"

: "${ZONEDNULL_SERVER:=${ZONEDNULL_BUILDDIR:-.}/server/zonednull-server}"
[ -x "$ZONEDNULL_SERVER" ] || fail "no server at $ZONEDNULL_SERVER"
srv=$ZONEDNULL_SERVER
tls_host=${ZONEDNULL_BUILDDIR:-.}/tests/nvme/tls-host
[ -x "$tls_host" ] || fail "no $tls_host"
host_py="/usr/bin/python3 $(dirname "$0")/../common/nvme-host.py"
keys_py="/usr/bin/python3 $(dirname "$0")/nvme-tls-key.py"
hostnqn=nqn.2014-08.org.nvmexpress:uuid:00000000-0000-4000-8000-000000000001
other=nqn.2014-08.org.example:other
discovery=nqn.2014-08.org.nvmexpress.discovery

free_port () {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The host's derivation agrees with libnvme's known answers (its
# test/psk.c): the interchange format, and version 1 identities, whose
# digest comes from the retained PSK, both ways.
kat=$($keys_py gen 01 5512DBB6737D0106F65975B773DFB011FFC344BCF442E2DD6D8BC4870B5D5B03)
[ "$kat" = "NVMeTLSkey-1:01:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwNf9LrZ:" ] ||
  fail "interchange format: $kat"
[ "$($keys_py derive "$kat" nqn.psk-test-host nqn.psk-test-subsys 1 | sed -n 1p)" = \
  "NVMe1R01 nqn.psk-test-host nqn.psk-test-subsys iSbjiStwJ/1TrTvDlt2fjFmzvsytOJelidNnA+X5lEU=" ] ||
  fail "RFC 8446 derivation's identity"
[ "$($keys_py derive "$kat" nqn.psk-test-host nqn.psk-test-subsys 1 compat | sed -n 1p)" = \
  "NVMe1R01 nqn.psk-test-host nqn.psk-test-subsys 66GuqV08TsAGII39teWUfwQwizjv06Jy8jOcX3NAAzM=" ] ||
  fail "compat derivation's identity"

key=$($keys_py gen 01 "$(printf '%064x' 1)")
key00=$($keys_py gen 00 "$(printf '%064x' 2)")
wrong=$($keys_py gen 01 "$(printf '%064x' 3)")
b64=$(echo "$key" | cut -d: -f3)
echo "alice:0123456789abcdef0123456789abcdef" >"$tmpdir/nbd.psk"
chmod 600 "$tmpdir/nbd.psk"
common="-i 127.0.0.1 --tls-psk=$tmpdir/nbd.psk size=64 zone_size=8 memory_backed=1"

# ---- options ----------------------------------------------------------------
expect_refusal () {
  what=$1 message=$2
  shift 2
  # A server that blocks (on a FIFO, say) fails here, not the suite.
  timeout 60 "$srv" -f -U "$tmpdir/bad.sock" "$@" size=8 zone_size=1 \
    2>"$tmpdir/err" && fail "$what accepted"
  grep -qF -- "$message" "$tmpdir/err" || fail "$what: $(cat "$tmpdir/err")"
  if grep -qF -- "$b64" "$tmpdir/err"; then
    fail "$what: the key is in the message"
  fi
}
port=$(free_port)
expect_refusal "a key without --nvme" "--nvme-tls-key and --nvme-tls-keys need --nvme" \
  --tls=on --tls-psk="$tmpdir/nbd.psk" --nvme-tls-key="$hostnqn:$key"
expect_refusal "a key with --tls=off" "need --tls=on or --tls=require" \
  --nvme="$port" --nvme-tls-key="$hostnqn:$key"
expect_refusal "--nvme-tls-compat alone" "--nvme-tls-compat needs --nvme-tls-key" \
  --nvme="$port" --tls=on --tls-psk="$tmpdir/nbd.psk" --nvme-tls-compat
bad=$(echo "$key" | sed 's/A/B/; t; s/B/C/')
expect_refusal "a bad CRC" "--nvme-tls-key: host $hostnqn: the key's CRC-32 does not match" \
  --nvme="$port" --tls=on --tls-psk="$tmpdir/nbd.psk" --nvme-tls-key="$hostnqn:$bad"
expect_refusal "a SHA-384 key" "a SHA-384 key (02)" \
  --nvme="$port" --tls=on --tls-psk="$tmpdir/nbd.psk" \
  --nvme-tls-key="$hostnqn:$(echo "$key" | sed 's/:01:/:02:/')"
expect_refusal "no NQN" "not HOSTNQN:NVMeTLSkey-1:HH:BASE64:" \
  --nvme="$port" --tls=on --tls-psk="$tmpdir/nbd.psk" --nvme-tls-key="$key"
expect_refusal "a host twice" "host $hostnqn has a key already" \
  --nvme="$port" --tls=on --tls-psk="$tmpdir/nbd.psk" \
  --nvme-tls-key="$hostnqn:$key" --nvme-tls-key="$hostnqn:$key00"
printf '# hosts\n%s:%s\n\n%s:%s\n' "$hostnqn" "$key" "$other" "$bad" \
  >"$tmpdir/keys"
chmod 600 "$tmpdir/keys"
expect_refusal "a bad line" "--nvme-tls-keys $tmpdir/keys: line 4: host $other: the key's CRC-32" \
  --nvme="$port" --tls=on --tls-psk="$tmpdir/nbd.psk" --nvme-tls-keys="$tmpdir/keys"
printf '%s:%s\n%s:%s\n' "$hostnqn" "$key" "$other" "$key00" >"$tmpdir/keys"
chmod 644 "$tmpdir/keys"
expect_refusal "a readable file" \
  "only its owner may read or write a secrets file (chmod 600)" \
  --nvme="$port" --tls=on --tls-psk="$tmpdir/nbd.psk" --nvme-tls-keys="$tmpdir/keys"
chmod 600 "$tmpdir/keys"
ln -s "$tmpdir/keys" "$tmpdir/link"
expect_refusal "a symlink" "a symbolic link (refused" \
  --nvme="$port" --tls=on --tls-psk="$tmpdir/nbd.psk" --nvme-tls-keys="$tmpdir/link"
# A key file without a key would leave the port in clear text, whatever
# --tls says: refused, empty or with comments only.
: >"$tmpdir/no-keys"
chmod 600 "$tmpdir/no-keys"
for tls in require on; do
  expect_refusal "an empty key file, --tls=$tls" "--nvme-tls-keys $tmpdir/no-keys: holds no key" \
    --nvme="$port" --tls=$tls --tls-psk="$tmpdir/nbd.psk" --nvme-tls-keys="$tmpdir/no-keys"
done
printf '# keys to come\n\n# %s:%s\n' "$hostnqn" "$key" >"$tmpdir/no-keys"
expect_refusal "a key file of comments" "--nvme-tls-keys $tmpdir/no-keys: holds no key" \
  --nvme="$port" --tls=require --tls-psk="$tmpdir/nbd.psk" --nvme-tls-keys="$tmpdir/no-keys"
mkfifo -m 600 "$tmpdir/keys-fifo"
expect_refusal "a FIFO" "--nvme-tls-keys $tmpdir/keys-fifo: not a regular file" \
  --nvme="$port" --tls=require --tls-psk="$tmpdir/nbd.psk" --nvme-tls-keys="$tmpdir/keys-fifo"
if [ "$(id -u)" -eq 0 ]; then
  cp -p "$tmpdir/keys" "$tmpdir/keys-nobody"
  chown nobody "$tmpdir/keys-nobody"
  expect_refusal "another user's file" "--nvme-tls-keys $tmpdir/keys-nobody: owned by another user" \
    --nvme="$port" --tls=require --tls-psk="$tmpdir/nbd.psk" --nvme-tls-keys="$tmpdir/keys-nobody"
  # NBD's PSK file is a secrets file too, with the same rules.
  cp -p "$tmpdir/nbd.psk" "$tmpdir/nbd-nobody.psk"
  chown nobody "$tmpdir/nbd-nobody.psk"
  expect_refusal "another user's --tls-psk" "--tls-psk $tmpdir/nbd-nobody.psk: owned by another user" \
    --tls=require --tls-psk="$tmpdir/nbd-nobody.psk"
fi
mkfifo -m 600 "$tmpdir/psk-fifo"
expect_refusal "a FIFO for --tls-psk" "--tls-psk $tmpdir/psk-fifo: not a regular file" \
  --tls=require --tls-psk="$tmpdir/psk-fifo"
"$srv" --help | grep -q -- '--nvme-tls-key=' || fail "--help lacks --nvme-tls-key"

# ---- --tls=require ----------------------------------------------------------
ZONEDNULL_TARGET=server
# 3 s: room for the handshakes of the well-behaved hosts on a loaded
# machine, and the stall below dropped soon.
start_server tls -v --nvme="$port" --tls=require --timeout=3 \
  --nvme-tls-keys="$tmpdir/keys" $common
nqn="nqn.2026-12.org.zonednull:$(hostname | tr -cd 'A-Za-z0-9.-' | cut -c1-64):$port"
grep -qF "port $port: subsystem $nqn, namespaces 1-1, TLS required" \
  "$tmpdir/tls.log" || fail "no TLS in the start line: $(cat "$tmpdir/tls.log")"

# proxy IDENTITY PSK [PRIORITY]: a TLS proxy to the server; sets $pport
# and $ppid, which the cleanup stops if the test fails first.
proxy () {
  rm -f "$tmpdir/pport"
  if [ -n "${3:-}" ]; then
    "$tls_host" --priority="$3" "$1" "$2" "$port" proxy >"$tmpdir/pport" &
  else
    "$tls_host" "$1" "$2" "$port" proxy >"$tmpdir/pport" &
  fi
  ppid=$!
  server_pids="$server_pids $ppid"
  tries=0
  until [ -s "$tmpdir/pport" ]; do
    tries=$((tries + 1))
    [ "$tries" -le 300 ] || fail "the TLS proxy did not start"
    sleep 0.1
  done
  pport=$(cat "$tmpdir/pport")
}
stop_proxy () {
  kill "$ppid"
  wait "$ppid" 2>/dev/null
  forget_server "$ppid"
}
# derive KEY HOSTNQN SUBNQN VERSION [compat]: sets $id and $psk.
derive () {
  $keys_py derive "$@" >"$tmpdir/derived" || fail "derive $*"
  id=$(sed -n 1p "$tmpdir/derived")
  psk=$(sed -n 2p "$tmpdir/derived")
}

derive "$key" "$hostnqn" "$nqn" 0
proxy "$id" "$psk"
$host_py 127.0.0.1 "$pport" smoke "$nqn" >"$tmpdir/out" 2>&1 ||
  fail "TLS admin and I/O queues: $(cat "$tmpdir/out") $(cat "$tmpdir/tls.log")"
grep -q "^ok$" "$tmpdir/out" || fail "TLS write and read back: $(cat "$tmpdir/out")"
# A TLS queue is its identity's host's only.
$host_py 127.0.0.1 "$pport" connect "$nqn" "$other" >"$tmpdir/out" 2>&1
grep -q "^0x4184 " "$tmpdir/out" ||
  fail "Connect as another host over TLS: $(cat "$tmpdir/out")"
grep -qF "host $other on a TLS queue whose PSK identity is another host's" \
  "$tmpdir/tls.log" || fail "no log of the other host: $(cat "$tmpdir/tls.log")"
stop_proxy

derive "$key" "$hostnqn" "$discovery" 0
proxy "$id" "$psk"
$host_py 127.0.0.1 "$pport" discover >"$tmpdir/out" 2>&1 ||
  fail "discovery over TLS: $(cat "$tmpdir/out")"
grep -qF "$nqn subtype 2 127.0.0.1 $port treq 1 sectype 2" "$tmpdir/out" ||
  fail "discovery log (TREQ required, TLS 1.3): $(cat "$tmpdir/out")"
stop_proxy

# handshake WHAT EXPECT IDENTITY PSK [PRIORITY]
handshake () {
  what=$1 expect=$2
  shift 2
  if [ -n "${3:-}" ]; then
    "$tls_host" --priority="$3" "$1" "$2" "$port" handshake >"$tmpdir/out" 2>&1
  else
    "$tls_host" "$1" "$2" "$port" handshake >"$tmpdir/out" 2>&1
  fi
  grep -q "^$expect" "$tmpdir/out" || fail "$what: $(cat "$tmpdir/out")"
}
derive "$key" "$hostnqn" "$nqn" 1
handshake "a version 1 identity" "handshake ok" "$id" "$psk"
derive "$key00" "$other" "$nqn" 0
handshake "a key without a transform (00)" "handshake ok" "$id" "$psk"
derive "$wrong" "$hostnqn" "$nqn" 0
handshake "a wrong key" "handshake failed" "$id" "$psk"
grep -qF "TLS handshake failed for PSK identity 'NVMe0R01 $hostnqn $nqn'" \
  "$tmpdir/tls.log" || fail "wrong key not logged: $(cat "$tmpdir/tls.log")"
derive "$wrong" "$hostnqn" "$nqn" 1
handshake "a wrong key's digest" "handshake failed" "$id" "$psk"
grep -qF "the identity's PSK digest is another key's" "$tmpdir/tls.log" ||
  fail "wrong digest not logged: $(cat "$tmpdir/tls.log")"
derive "$key" nqn.2014-08.org.example:stranger "$nqn" 0
handshake "an unknown host" "handshake failed" "$id" "$psk"
grep -qF "PSK identity 'NVMe0R01 nqn.2014-08.org.example:stranger $nqn' refused: no key for this host" \
  "$tmpdir/tls.log" || fail "unknown host not logged: $(cat "$tmpdir/tls.log")"
derive "$key" "$hostnqn" "$nqn" 0
handshake "TLS 1.2" "handshake failed" "$id" "$psk" \
  "NORMAL:-VERS-ALL:+VERS-TLS1.2:+PSK:+DHE-PSK:+ECDHE-PSK"
evil=$(printf 'NVMe0R01 evil\033[31m\nforged %s' "$nqn")
handshake "an identity with escapes" "handshake failed" "$evil" "$psk"
grep -qF 'evil\x1b[31m\nforged' "$tmpdir/tls.log" ||
  fail "identity not logged escaped: $(cat "$tmpdir/tls.log")"
# Clear text on a port that requires TLS: no ICResp, the handshake fails.
if $host_py 127.0.0.1 "$port" ic >"$tmpdir/out" 2>&1; then
  fail "a clear ICReq was answered on a TLS port: $(cat "$tmpdir/out")"
fi
grep -q "closed the connection" "$tmpdir/out" || fail "clear ICReq: $(cat "$tmpdir/out")"
# A handshake that stops after its record header is dropped (--timeout;
# -v logs it).
/usr/bin/python3 - "$port" <<'PY' || fail "a stalled handshake was not dropped"
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=60)
s.sendall(b"\x16\x03\x01\x02\x00\x01")
sys.exit(0 if s.recv(1) == b"" else 1)
PY
grep -q "handshake not finished within 3 s" "$tmpdir/tls.log" ||
  fail "the stall is not logged: $(cat "$tmpdir/tls.log")"
if grep -qF -- "$b64" "$tmpdir/tls.log"; then
  fail "a key is in the log"
fi
stop_server "$pid"

# ---- --tls=on, --nvme-tls-compat ------------------------------------------
port=$(free_port)
start_server on --nvme="$port" --tls=on --nvme-tls-key="$hostnqn:$key" \
  --nvme-tls-compat --timeout=30 $common
nqn="nqn.2026-12.org.zonednull:$(hostname | tr -cd 'A-Za-z0-9.-' | cut -c1-64):$port"
$host_py 127.0.0.1 "$port" discover >"$tmpdir/out" 2>&1 ||
  fail "clear discovery on a port that allows TLS: $(cat "$tmpdir/out")"
grep -qF "$nqn subtype 2 127.0.0.1 $port treq 2 sectype 2" "$tmpdir/out" ||
  fail "discovery log (TREQ not required): $(cat "$tmpdir/out")"
derive "$key" "$hostnqn" "$nqn" 0 compat
proxy "$id" "$psk"
$host_py 127.0.0.1 "$pport" smoke "$nqn" >"$tmpdir/out" 2>&1 ||
  fail "compat TLS queues: $(cat "$tmpdir/out") $(cat "$tmpdir/on.log")"
stop_proxy
derive "$key" "$hostnqn" "$nqn" 1 compat
handshake "a compat version 1 identity" "handshake ok" "$id" "$psk"
derive "$key" "$hostnqn" "$nqn" 0
handshake "RFC 8446's derivation on a compat server" "handshake failed" "$id" "$psk"
stop_server "$pid"
echo "ok"
