#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# zonednull-server over TLS: its options and their refusals at start-up,
# every client over nbds:// and nbds+unix:// (nbdinfo, nbdsh, qemu-img,
# qemu-io, the CLI and client library, the golden traces), PSK and X.509
# with --tls-verify-peer, and the refusals: a plaintext client under
# --tls=require, a wrong key, an unknown user, an untrusted certificate,
# garbage in place of a TLS record and hostile TLS clients, each logged,
# each beside a client that goes on; a close_notify or a corrupt record
# behind part of a request, and a ClientHello over 16 KiB, acted on at
# once; names the client chose, logged escaped.  Keys and certificates
# are made here.
. "$(dirname "$0")/../common/lib.sh"

need_nbdsh
command -v psktool >/dev/null && command -v certtool >/dev/null ||
  skip "psktool and certtool are not installed (gnutls-bin)"

: "${ZONEDNULL_SERVER:=${ZONEDNULL_BUILDDIR:-.}/server/zonednull-server}"
[ -x "$ZONEDNULL_SERVER" ] || fail "no server at $ZONEDNULL_SERVER"
srv=$ZONEDNULL_SERVER
zn=${ZONEDNULL_CLI:-${ZONEDNULL_BUILDDIR:-.}/cli/zonednull}
replay=${ZONEDNULL_BUILDDIR:-.}/tests/replay
srcdir=${ZONEDNULL_SRCDIR:-$(dirname "$0")/../..}

# start_native NAME ARG...: the server on $tmpdir/NAME.sock (or on TCP if
# ARG has -p); sets $pid once it listens.  Its log is $tmpdir/NAME.log.
start_native () {
  name=$1
  shift
  sock=$tmpdir/$name.sock
  pidfile=$tmpdir/$name.pid
  rm -f "$pidfile"
  case " $* " in
  *" -p "*)
    "$srv" -f -P "$pidfile" "$@" </dev/null 2>"$tmpdir/$name.log" &
    pid=$!
    # await_server also waits for the socket: a placeholder stands in.
    : >"$sock.tcp"
    sock=$sock.tcp
    ;;
  *)
    "$srv" -f -U "$sock" -P "$pidfile" "$@" </dev/null 2>"$tmpdir/$name.log" &
    pid=$!
    ;;
  esac
  server_pids="$server_pids $pid"
  tries=0
  while [ ! -s "$pidfile" ]; do
    kill -0 "$pid" 2>/dev/null || fail "zonednull-server $* exited: $(cat "$tmpdir/$name.log")"
    tries=$((tries + 1))
    [ "$tries" -le 600 ] || fail "zonednull-server $* did not start"
    sleep 0.1
  done
}

# logged NAME TEXT: the server's log NAME shows TEXT (fixed string).
logged () {
  grep -qF -- "$2" "$tmpdir/$1.log" || fail "log $1 lacks '$2': $(cat "$tmpdir/$1.log")"
}

# nbdsh_uri URI SCRIPT: nbdsh connected to URI; nbdsh -u would refuse
# tls-psk-file (a local file) without set_uri_allow_local_file.
nbdsh_uri () {
  nbdsh -c "h.set_uri_allow_local_file(True); h.connect_uri('$1')" -c "$2"
}

py () {
  /usr/bin/python3 - "$@" >"$tmpdir/py.out" 2>&1 ||
    fail "python check failed: $(cat "$tmpdir/py.out")"
}

# ---- keys and certificates -------------------------------------------------

cd "$tmpdir" || fail "cd $tmpdir"
psktool -u alice -p keys.psk >/dev/null || fail "psktool"
psktool -u bob -p keys.psk >/dev/null || fail "psktool"
psktool -u alice -p wrong.psk >/dev/null || fail "psktool"   # another key
psktool -u mallory -p mallory.psk >/dev/null || fail "psktool"

# ca/: the CA; server/ and client/ as nbdkit and libnbd name the files;
# rogue/: a client certificate from a CA the server does not trust.
mkdir ca server client rogue
certs () {
  certtool --generate-privkey --outfile "$1" >/dev/null 2>&1 || fail "certtool key"
}
printf 'cn = zonednull test CA\nca\ncert_signing_key\nexpiration_days = 2\n' >ca.info
certs ca/ca-key.pem
certtool --generate-self-signed --load-privkey ca/ca-key.pem --template ca.info \
  --outfile ca/ca-cert.pem >/dev/null 2>&1 || fail "certtool CA"
printf 'cn = localhost\ndns_name = localhost\nip_address = 127.0.0.1\ntls_www_server\nencryption_key\nsigning_key\nexpiration_days = 2\n' >server.info
certs server/server-key.pem
certtool --generate-certificate --load-ca-certificate ca/ca-cert.pem \
  --load-ca-privkey ca/ca-key.pem --load-privkey server/server-key.pem \
  --template server.info --outfile server/server-cert.pem >/dev/null 2>&1 ||
  fail "certtool server"
printf 'cn = zonednull test client\ntls_www_client\nencryption_key\nsigning_key\nexpiration_days = 2\n' >client.info
certs client/client-key.pem
certtool --generate-certificate --load-ca-certificate ca/ca-cert.pem \
  --load-ca-privkey ca/ca-key.pem --load-privkey client/client-key.pem \
  --template client.info --outfile client/client-cert.pem >/dev/null 2>&1 ||
  fail "certtool client"
cp ca/ca-cert.pem server/
cp ca/ca-cert.pem client/
printf 'cn = rogue CA\nca\ncert_signing_key\nexpiration_days = 2\n' >rogue.info
certs rogue/ca-key.pem
certtool --generate-self-signed --load-privkey rogue/ca-key.pem --template rogue.info \
  --outfile rogue/rogue-ca.pem >/dev/null 2>&1 || fail "certtool rogue CA"
certs rogue/client-key.pem
certtool --generate-certificate --load-ca-certificate rogue/rogue-ca.pem \
  --load-ca-privkey rogue/ca-key.pem --load-privkey rogue/client-key.pem \
  --template client.info --outfile rogue/client-cert.pem >/dev/null 2>&1 ||
  fail "certtool rogue client"
cp ca/ca-cert.pem rogue/       # the rogue client does trust the server
# evil/: a trusted client certificate with an escape sequence in its name.
mkdir evil && cp ca/ca-cert.pem evil/
printf 'cn = "evil\033[31m red"\ntls_www_client\nencryption_key\nsigning_key\nexpiration_days = 2\n' >evil.info
certs evil/client-key.pem
certtool --generate-certificate --load-ca-certificate ca/ca-cert.pem \
  --load-ca-privkey ca/ca-key.pem --load-privkey evil/client-key.pem \
  --template evil.info --outfile evil/client-cert.pem >/dev/null 2>&1 ||
  fail "certtool evil client"
rm -f ca/ca-key.pem rogue/ca-key.pem

# ---- the command line ----------------------------------------------------

printf 'alice\n' >nokey.psk
printf 'alice:0g\n' >badhex.psk
printf 'alice:abc\n' >oddhex.psk
: >empty.psk
cp keys.psk open.psk
chmod 600 nokey.psk badhex.psk oddhex.psk empty.psk
chmod 644 open.psk
for bad in "--tls=maybe:--tls 'maybe': must be off, on or require" \
           "--tls=on:--tls=on needs --tls-psk=FILE or --tls-certificates=DIR" \
           "--tls-psk=keys.psk:--tls-psk needs --tls=on or --tls=require" \
           "--tls=require --tls-psk=$tmpdir/none.psk:--tls-psk $tmpdir/none.psk: No such file" \
           "--tls=require --tls-psk=nokey.psk:--tls-psk nokey.psk: line 1: not username:hexkey" \
           "--tls=require --tls-psk=badhex.psk:--tls-psk badhex.psk: line 1: user 'alice': the key has a character that is not a hex digit" \
           "--tls=require --tls-psk=oddhex.psk:--tls-psk oddhex.psk: line 1: user 'alice': the key must be an even" \
           "--tls=require --tls-psk=empty.psk:--tls-psk empty.psk: no username:hexkey line" \
           "--tls=require --tls-psk=open.psk:--tls-psk open.psk: only its owner may read or write a secrets file (chmod 600)" \
           "--tls=require --tls-psk=keys.psk --tls-verify-peer:--tls-verify-peer checks X.509 client certificates" \
           "--tls=require --tls-certificates=client:--tls-certificates client: client/server-cert.pem: No such file" \
           "--tls=require --tls-certificates=ca --tls-verify-peer:--tls-certificates ca: ca/server-cert.pem"; do
  args=${bad%%:*} text=${bad#*:}
  # shellcheck disable=SC2086 # args is a list of options
  timeout 20 "$srv" -f -U "$tmpdir/bad.sock" $args size=16 zone_size=2 2>err
  rc=$?
  [ "$rc" -ne 124 ] && [ "$rc" -ne 0 ] || fail "zonednull-server $args started (rc $rc)"
  grep -qF -- "$text" err || fail "zonednull-server $args: $(cat err), expected '$text'"
done
# A key file that is not PEM is named with GnuTLS's reason.
mkdir badcert && cp server/server-cert.pem badcert/ && echo junk >badcert/server-key.pem
timeout 20 "$srv" -f -U "$tmpdir/bad.sock" --tls=on --tls-certificates=badcert \
  size=16 zone_size=2 2>err && fail "started with a bad server-key.pem"
grep -qF "badcert/server-key.pem" err || fail "bad key: $(cat err)"
"$srv" --help | grep -q -- '--tls-psk' || fail "--help lacks --tls-psk"

# ---- PSK, --tls=require ----------------------------------------------------

start_native psk --tls=require --tls-psk=keys.psk size=16 zone_size=2 \
  zone_nr_conv=1 zone_max_open=2 memory_backed=1 -v
psk_pid=$pid psk_sock=$sock
turi="nbds+unix://alice@/?socket=$psk_sock&tls-psk-file=$tmpdir/keys.psk"

nbdinfo "$turi" >out || fail "nbdinfo over TLS: $(cat out)"
grep -q 'with TLS' out || fail "nbdinfo: not TLS: $(cat out)"
nbdinfo --list "$turi" >out || fail "nbdinfo --list over TLS"
grep -q 'export="nullb0/control"' out || fail "nbdinfo --list: $(cat out)"
logged psk "TLS, PSK user 'alice'"
# bob is the file's second user.
nbdinfo --size "nbds+unix://bob@/?socket=$psk_sock&tls-psk-file=$tmpdir/keys.psk" |
  grep -qx 16777216 || fail "nbdinfo as bob"
nbdinfo --map=zonednull:zones "$turi" >out || fail "nbdinfo --map over TLS"
[ "$(wc -l <out)" -ge 2 ] || fail "zones map: $(cat out)"

nbdsh_uri "$turi" '
Z = 2 << 20
assert h.get_tls_negotiated()
h.pwrite(b"\x5a" * 65536, Z)
assert h.pread(65536, Z) == b"\x5a" * 65536
h.pwrite(b"\x33" * (1 << 20), Z + 65536)
assert h.pread(1 << 20, Z + 65536) == b"\x33" * (1 << 20)
h.flush()
' || fail "nbdsh over TLS"

if command -v qemu-img >/dev/null && command -v qemu-io >/dev/null; then
  mkdir qpsk && cp keys.psk qpsk/keys.psk
  obj="tls-creds-psk,id=tls0,endpoint=client,dir=$tmpdir/qpsk,username=alice"
  qemu-img info --object "$obj" --image-opts \
    "driver=nbd,server.type=unix,server.path=$psk_sock,export=nullb0,tls-creds=tls0" \
    >out 2>&1 || fail "qemu-img info over TLS: $(cat out)"
  grep -q '16 MiB' out || fail "qemu-img info: $(cat out)"
  qemu-io --object "$obj" --image-opts \
    "driver=raw,file.driver=nbd,file.server.type=unix,file.server.path=$psk_sock,file.export=nullb0,file.tls-creds=tls0" \
    -c 'read -P 0x5a 2097152 64k' -c 'write -P 0x44 4194304 64k' \
    -c 'read -P 0x44 4194304 64k' >out 2>&1 || fail "qemu-io over TLS: $(cat out)"
  [ "$(grep -c 'read 65536/65536' out)" -eq 2 ] || fail "qemu-io: $(cat out)"
  grep -q 'wrote 65536/65536' out || fail "qemu-io write: $(cat out)"
else
  echo "qemu-img/qemu-io not installed: their TLS case skipped"
fi

# The CLI and the client library: control and data connections.
"$zn" report -c 3 "$turi" >out || fail "zonednull report over TLS"
grep -q 'start: 0x000001000.*wptr 0x000880' out || fail "report over TLS: $(cat out)"
"$zn" info "$turi" >out || fail "zonednull info over TLS"
sector=$("$zn" append -o 0x2000 -l 8 --pattern 0xab "$turi") ||
  fail "zonednull append over TLS"
[ "$sector" = 8320 ] || fail "append landed at $sector, expected 8320 (behind qemu-io's write)"
"$zn" finish -o 0x4000 -c 1 "$turi" || fail "zonednull finish over TLS"
# The exact errno through the error log over TLS: a write to a full zone.
"$zn" append -o 0x4000 -l 8 --pattern 0 "$turi" 2>err &&
  fail "append to a full zone succeeded"
grep -q 'EIO\|Input/output' err || fail "append to a full zone: $(cat err)"
"$zn" reset "$turi" || fail "zonednull reset over TLS"

# ---- refusals under --tls=require -------------------------------------------

# A plaintext client: every option answered NBD_REP_ERR_TLS_REQD, no
# export named, NBD_OPT_EXPORT_NAME dropped; STARTTLS with data refused.
puri="nbd+unix:///?socket=$psk_sock"
nbdinfo "$puri" >out 2>&1 && fail "plaintext nbdinfo under --tls=require"
nbdinfo --list "$puri" >out 2>&1 && fail "plaintext nbdinfo --list under --tls=require"
logged psk "options refused before NBD_OPT_STARTTLS (--tls=require)"
py "$psk_sock" <<'EOF'
import socket, struct, sys
path = sys.argv[1]
opt = lambda o, d: struct.pack(">QII", 0x49484156454F5054, o, len(d)) + d
name = lambda s: struct.pack(">I", len(s)) + s
def reply(s):
    hdr = b""
    while len(hdr) < 20:
        hdr += s.recv(20 - len(hdr))
    magic, o, t, n = struct.unpack(">QIII", hdr)
    data = b""
    while len(data) < n:
        data += s.recv(n - len(data))
    return o, t, data
TLS_REQD, INVALID = 0x80000005, 0x80000003
s = socket.socket(socket.AF_UNIX)
s.connect(path)
s.recv(18)
s.sendall(struct.pack(">I", 3))
answers = {}
for o, d in [(3, b""), (7, name(b"nullb0") + b"\0\0"), (7, name(b"nosuch") + b"\0\0"),
             (6, name(b"nullb0/control") + b"\0\0"), (8, b""), (9, name(b"nullb0") + b"\0\0\0\0"),
             (10, name(b"nullb0") + b"\0\0\0\0"), (99, b"")]:
    s.sendall(opt(o, d))
    ro, t, data = reply(s)
    assert ro == o and t == TLS_REQD, (o, hex(t))
    assert b"nullb" not in data, data
    answers[o, d[4:10]] = data
# An existing and a missing export get the same answer.
assert answers[7, b"nullb0"] == answers[7, b"nosuch"]
s.sendall(opt(5, b"x"))
ro, t, data = reply(s)
assert t == INVALID, hex(t)
s.sendall(opt(1, b"nullb0"))         # EXPORT_NAME: no reply, dropped
s.settimeout(10)
assert s.recv(1) == b""
s.close()
EOF
# A wrong key for a known user, and an unknown user.
nbdinfo "nbds+unix://alice@/?socket=$psk_sock&tls-psk-file=$tmpdir/wrong.psk" \
  >out 2>&1 && fail "nbdinfo with a wrong key"
logged psk "TLS handshake failed for PSK user 'alice' (a key that is not the one in keys.psk?)"
nbdinfo "nbds+unix://mallory@/?socket=$psk_sock&tls-psk-file=$tmpdir/mallory.psk" \
  >out 2>&1 && fail "nbdinfo as an unknown user"
logged psk "unknown PSK user 'mallory' (not in keys.psk)"
# Garbage in place of the ClientHello.
py "$psk_sock" <<'EOF'
import socket, struct, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.recv(18)
s.sendall(struct.pack(">I", 3) + struct.pack(">QII", 0x49484156454F5054, 5, 0))
r = b""
while len(r) < 20:
    r += s.recv(20 - len(r))
assert struct.unpack(">QIII", r)[2] == 1      # ACK
s.sendall(b"GET / HTTP/1.0\r\n\r\n" + bytes(range(256)) * 4)
s.settimeout(10)
try:
    while s.recv(4096):
        pass
except ConnectionResetError:
    pass
EOF
[ "$(grep -c 'TLS handshake failed' "$tmpdir/psk.log")" -ge 2 ] ||
  fail "garbage after STARTTLS not logged: $(cat "$tmpdir/psk.log")"

# After all that the zones and data are as the good clients left them.
"$zn" report -c 3 "$turi" >out || fail "report after refusals"
[ "$(grep -c 'zcond: 1(em)' out)" -eq 2 ] || fail "zones after refusals: $(cat out)"

# ---- hostile clients beside a TLS client --------------------------------------

# 32 clients: plaintext ones under --tls=require, garbage after STARTTLS, a
# ClientHello cut short, a second STARTTLS, wrong keys through libnbd, and
# ones that stop before or during the handshake and hang up.  One TLS
# client writes a zone and reads it back meanwhile, another joins after.
py "$psk_sock" "$turi" "$tmpdir" <<'EOF'
import nbd, random, socket, struct, sys, threading
path, uri, tmp = sys.argv[1], sys.argv[2], sys.argv[3]
rng = random.Random(17)
opt = lambda o, d: struct.pack(">QII", 0x49484156454F5054, o, len(d)) + d
hello = bytes.fromhex("16030100c4010000c00303") + bytes(32) + b"\x00"

def starttls(s):
    s.recv(18)
    s.sendall(struct.pack(">I", 3) + opt(5, b""))
    r = b""
    while len(r) < 20:
        r += s.recv(20 - len(r))

def hostile(i):
    kind = i % 6
    if kind == 5:
        h = nbd.NBD()
        h.set_uri_allow_local_file(True)
        try:
            h.connect_uri(uri.replace("keys.psk", "wrong.psk"))
            raise SystemExit("connected with a wrong key")
        except nbd.Error:
            pass
        return
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.settimeout(10)
    try:
        if kind == 0:
            s.recv(18)
            s.sendall(struct.pack(">I", 3) + opt(7, struct.pack(">I", 0) + b"\0\0") + opt(3, b""))
        elif kind == 1:
            starttls(s)
            s.sendall(rng.randbytes(rng.randrange(1, 3000)))
        elif kind == 2:
            starttls(s)
            s.sendall(hello[:rng.randrange(1, len(hello))])
        elif kind == 3:
            starttls(s)
            s.sendall(opt(5, b""))         # STARTTLS again, in the clear
        else:
            starttls(s)                     # then hang up mid-handshake
        s.recv(4096)
    except OSError:
        pass
    s.close()

def good(result):
    h = nbd.NBD()
    h.set_uri_allow_local_file(True)
    h.connect_uri(uri)
    assert h.get_tls_negotiated()
    Z = 2 << 20
    base = 3 * Z
    for k in range(64):
        h.pwrite(bytes([k]) * 8192, base + k * 8192)
    for k in range(64):
        assert h.pread(8192, base + k * 8192) == bytes([k]) * 8192
    h.shutdown()
    result.append("ok")

result = []
t = threading.Thread(target=good, args=(result,))
t.start()
hs = [threading.Thread(target=hostile, args=(i,)) for i in range(32)]
for x in hs: x.start()
for x in hs: x.join()
t.join()
assert result == ["ok"], result
h = nbd.NBD()
h.set_uri_allow_local_file(True)
h.connect_uri(uri)
assert h.pread(8192, 3 * (2 << 20) + 8192) == b"\x01" * 8192
EOF
kill -0 "$psk_pid" || fail "the server died under hostile TLS clients"

# ---- a handshake that stalls inside TLS is cut off by --timeout ------------

# Two clients stop in the TLS handshake, one right after the STARTTLS
# reply, one halfway through a ClientHello; --timeout (from accept to the
# transmission phase) closes both while a TLS client is served beside them.
start_native stall --tls=require --tls-psk=keys.psk --timeout=1 -v size=16 zone_size=2
py "$sock" "nbds+unix://alice@/?socket=$sock&tls-psk-file=$tmpdir/keys.psk" <<'EOF'
import nbd, socket, struct, sys, time
path, uri = sys.argv[1], sys.argv[2]
hello = bytes.fromhex("16030100c4010000c00303") + bytes(32)
stalled = []
for part in (b"", hello):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.recv(18)
    s.sendall(struct.pack(">I", 3) + struct.pack(">QII", 0x49484156454F5054, 5, 0))
    r = b""
    while len(r) < 20:
        r += s.recv(20 - len(r))
    s.sendall(part)
    stalled.append(s)
h = nbd.NBD()
h.set_uri_allow_local_file(True)
h.connect_uri(uri)
assert h.get_tls_negotiated()
time.sleep(1.5)                  # past --timeout: the server must keep it
assert h.pread(4096, 0) == bytes(4096)
for s in stalled:
    s.settimeout(60)             # cut off after 1 s; 60 leaves room for load
    try:
        while s.recv(4096):
            pass
    except ConnectionResetError:
        pass
h.shutdown()
EOF
[ "$(grep -c 'handshake not finished within 1 s (--timeout)' "$tmpdir/stall.log")" -eq 2 ] ||
  fail "stalled TLS handshakes: $(cat "$tmpdir/stall.log")"
stop_server "$pid"

# ---- the golden traces over TLS ----------------------------------------------

count=0
for trace in "$srcdir"/tests/traces/k6.1/*.trace; do
  config=$(sed -n '2s/^# null_blk configfs: //p' "$trace" |
           tr ' ' '\n' | grep -v -e '^irqmode=' -e '^completion_nsec=' \
                                 -e '^hw_queue_depth=' | tr '\n' ' ')
  # shellcheck disable=SC2086
  start_native trace --tls=require --tls-psk=keys.psk $config
  "$replay" --connect="nbds+unix://bob@/?socket=$sock&tls-psk-file=$tmpdir/keys.psk" \
    "$trace" >replay.out 2>&1 ||
    fail "$(basename "$trace") over zonednull-server with TLS: $(cat replay.out)"
  grep -q "ops match on the NBD server" replay.out || fail "no match line"
  stop_server "$pid"
  count=$((count + 1))
done
echo "$count golden traces match over nbds+unix:// (TLS-PSK)"

# ---- --tls=on: TLS and plaintext side by side --------------------------------

start_native on --tls=on --tls-psk=keys.psk size=16 zone_size=2 memory_backed=1
nbdinfo "nbd+unix:///?socket=$sock" | grep -q 'without TLS' || fail "--tls=on: plaintext"
nbdinfo "nbds+unix://alice@/?socket=$sock&tls-psk-file=$tmpdir/keys.psk" |
  grep -q 'with TLS' || fail "--tls=on: TLS"
stop_server "$pid"
# --tls=off (the default) refuses STARTTLS as unsupported.
start_native off size=16 zone_size=2
nbdinfo "nbds+unix://alice@/?socket=$sock&tls-psk-file=$tmpdir/keys.psk" \
  >out 2>&1 && fail "TLS against --tls=off"
stop_server "$pid"

# ---- X.509 over TCP, nbds:// ---------------------------------------------------

port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
start_native x509 -p "$port" --tls=require --tls-certificates=server \
  --tls-verify-peer size=16 zone_size=2 memory_backed=1 -v
x509_pid=$pid
curi="nbds://localhost:$port/?tls-certificates=$tmpdir/client"
nbdsh_uri "$curi" '
assert h.get_tls_negotiated()
h.pwrite(b"\x77" * 4096, 2 << 20)
assert h.pread(4096, 2 << 20) == b"\x77" * 4096
' || fail "nbdsh over nbds:// with certificates"
logged x509 "client certificate 'CN=zonednull test client'"
"$zn" report -c 2 "$curi" >out || fail "zonednull report over nbds://"
grep -q 'start: 0x000001000.*wptr 0x000008' out || fail "report over nbds://: $(cat out)"
if command -v qemu-io >/dev/null; then
  qemu-io --object "tls-creds-x509,id=tls0,endpoint=client,dir=$tmpdir/client" \
    --image-opts "driver=raw,file.driver=nbd,file.server.type=inet,file.server.host=localhost,file.server.port=$port,file.export=nullb0,file.tls-creds=tls0" \
    -c 'read -P 0x77 2097152 4k' >out 2>&1 || fail "qemu-io over nbds://: $(cat out)"
  grep -q 'read 4096/4096' out || fail "qemu-io x509: $(cat out)"
fi
# A client certificate from a CA the server does not trust, and none.
nbdinfo "nbds://localhost:$port/?tls-certificates=$tmpdir/rogue" >out 2>&1 &&
  fail "a certificate from an untrusted CA was accepted"
logged x509 "client certificate refused (--tls-verify-peer)"
mkdir nocert && cp ca/ca-cert.pem nocert/
nbdinfo "nbds://localhost:$port/?tls-certificates=$tmpdir/nocert" >out 2>&1 &&
  fail "a client without a certificate was accepted"
logged x509 "the client sent no certificate (--tls-verify-peer)"
nbdsh_uri "$curi" 'assert h.pread(4096, 2 << 20) == b"\x77" * 4096' ||
  fail "the trusted client after the refusals"

# ---- TLS input behind the data of a read ---------------------------------------

# What arrives in one read behind a partial or complete request is acted
# on at once: a close_notify ends the connection once the complete
# requests are answered, a corrupt record ends it with a log line, and a
# ClientHello that spans two records (over 16 KiB) is not left half-read.
# A client of its own on memory BIOs chooses what goes in each send; a
# server that waits for more input fails the 5 s socket timeout.
cat >"$tmpdir/tlsraw.py" <<'EOF'
import socket, ssl, struct

IHAVEOPT = 0x49484156454F5054

def opt(o, d):
    return struct.pack(">QII", IHAVEOPT, o, len(d)) + d

def go(name):
    return opt(7, struct.pack(">I", len(name)) + name + b"\0\0")

def read_request(cookie, offset, count):
    return struct.pack(">IHHQQI", 0x25609513, 0, 0, cookie, offset, count)

class Client:
    def __init__(self, port, certdir, alpn=None):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=5)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.load_verify_locations(certdir + "/ca-cert.pem")
        ctx.load_cert_chain(certdir + "/client-cert.pem",
                            certdir + "/client-key.pem")
        if alpn:
            ctx.set_alpn_protocols(alpn)
        self.inc, self.out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = ctx.wrap_bio(self.inc, self.out, server_hostname="localhost")
        self.plain = b""

    def recv_plain(self, n):
        b = b""
        while len(b) < n:
            x = self.s.recv(n - len(b))
            if not x:
                raise EOFError("EOF before the STARTTLS reply")
            b += x
        return b

    # The greeting and NBD_OPT_STARTTLS in the clear.
    def starttls(self):
        self.recv_plain(18)
        self.s.sendall(struct.pack(">I", 3) + opt(5, b""))
        _, o, t, n = struct.unpack(">QIII", self.recv_plain(20))
        assert (o, t, n) == (5, 1, 0), (o, t, n)

    def flush(self):
        data = self.out.read()
        if data:
            self.s.sendall(data)

    def feed(self):
        data = self.s.recv(1 << 20)
        if not data:
            raise EOFError("the server closed")
        self.inc.write(data)

    def handshake(self):
        while True:
            try:
                self.tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                pass
            self.flush()
            self.feed()
        self.flush()

    def read(self, n):
        b = b""
        while len(b) < n:
            try:
                b += self.tls.read(n - len(b))
                continue
            except ssl.SSLWantReadError:
                pass
            self.flush()
            self.feed()
        return b

    # NBD_OPT_GO: replies up to the ACK.
    def go(self, name=b"nullb0"):
        self.tls.write(go(name))
        self.flush()
        while True:
            _, o, t, n = struct.unpack(">QIII", self.read(20))
            self.read(n)
            if t == 1:
                return
            assert not t & 0x80000000, hex(t)

    # The TLS records of data, not sent.
    def records(self, data):
        self.tls.write(data)
        return self.out.read()

    def close_notify(self):
        try:
            self.tls.unwrap()
        except ssl.SSLWantReadError:
            pass
        return self.out.read()

    # Waits for the server to close; returns the data it sent before.
    def closed(self):
        try:
            while True:
                x = self.s.recv(1 << 20)
                if not x:
                    break
                self.inc.write(x)
        except socket.timeout:
            raise SystemExit("the server did not close within 5 s")
        except ConnectionResetError:
            pass
        data = b""
        try:
            while True:
                x = self.tls.read(1 << 20)
                if not x:
                    break
                data += x
        except (ssl.SSLZeroReturnError, ssl.SSLWantReadError, ssl.SSLEOFError):
            pass
        self.s.close()
        return data
EOF
py "$port" "$tmpdir/client" <<'EOF'
import struct, sys, time
sys.path.insert(0, ".")
from tlsraw import Client, go, read_request
port, certdir = int(sys.argv[1]), sys.argv[2]
req = read_request(7, 2 << 20, 4096)

def ready(transmission=True):
    c = Client(port, certdir)
    c.starttls()
    c.handshake()
    if transmission:
        c.go()
    return c

def partial_option_close_notify():
    c = ready(transmission=False)
    c.s.sendall(c.records(go(b"nullb0")[:10]) + c.close_notify())
    assert c.closed() == b""

def partial_request_close_notify():
    c = ready()
    c.s.sendall(c.records(req[:10]) + c.close_notify())
    assert c.closed() == b""

def request_close_notify():
    c = ready()
    c.s.sendall(c.records(req) + c.close_notify())
    data = c.closed()
    assert len(data) == 16 + 4096, len(data)
    magic, err, cookie = struct.unpack(">IIQ", data[:16])
    assert (magic, err, cookie) == (0x67446698, 0, 7), (hex(magic), err, cookie)
    assert data[16:] == b"\x77" * 4096

def large_request_close_notify():
    # The reply, larger than the socket buffers, is still being sent when
    # the server reads the close_notify.
    c = ready()
    c.s.sendall(c.records(read_request(8, 2 << 20, 12 << 20)) + c.close_notify())
    time.sleep(1)
    data = c.closed()
    assert len(data) == 16 + (12 << 20), len(data)
    assert struct.unpack(">IIQ", data[:16]) == (0x67446698, 0, 8), data[:16]

def partial_request_bad_record():
    c = ready()
    first = c.records(req[:10])
    bad = bytearray(c.records(req[10:]))
    bad[-1] ^= 0x40                     # in the AEAD tag
    c.s.sendall(first + bytes(bad))
    c.closed()

def large_client_hello():
    # Many long ALPN names, which the server ignores: two records.
    c = Client(port, certdir, alpn=["%03d" % i + "x" * 250 for i in range(80)])
    c.starttls()
    c.handshake()
    c.go()
    c.tls.write(req)
    c.flush()
    assert c.read(16 + 4096)[16:] == b"\x77" * 4096

failed = []
for case in (partial_option_close_notify, partial_request_close_notify,
             request_close_notify, large_request_close_notify,
             partial_request_bad_record, large_client_hello):
    try:
        case()
    except (AssertionError, OSError, EOFError, SystemExit) as e:
        failed.append("%s: %s %s" % (case.__name__, type(e).__name__, e))
assert not failed, "\n".join(failed)
EOF
[ "$(grep -c 'close_notify' "$tmpdir/x509.log")" -ge 4 ] ||
  fail "close_notify behind data not logged: $(cat "$tmpdir/x509.log")"
logged x509 "Decryption has failed"

# ---- what the client chose, in the log ---------------------------------------

# Export names, PSK identities and certificate names come from the client,
# the first two before it has authenticated: logs show them escaped, so
# that no client can write a line of its own into them or send escape
# sequences to the terminal of whoever reads them.  The PSK identity is
# in a ClientHello made here (Python's ssl has no PSK); GnuTLS looks the
# user up before it checks the binder.  Against the PSK and X.509
# servers, and nbdkit with the plugin.
start_server nbdkit size=16 zone_size=2
nbdkit_pid=$pid nbdkit_sock=$sock
py "$psk_sock" "$port" "$tmpdir/evil" "$nbdkit_sock" <<'EOF'
import os, socket, struct, sys
sys.path.insert(0, ".")
from tlsraw import Client, go
psk_sock, port, certdir, nbdkit_sock = sys.argv[1:]
hostile = b"evil\n\x1b[31mzonednull-server: connection 99: forged"

def vec8(b): return bytes([len(b)]) + b
def vec16(b): return struct.pack(">H", len(b)) + b
def ext(t, body): return struct.pack(">H", t) + vec16(body)

def recv_exact(s, n):
    b = b""
    while len(b) < n:
        x = s.recv(n - len(b))
        if not x:
            raise EOFError
        b += x
    return b

# A TLS 1.3 ClientHello offering one PSK identity (x25519, AES-128-GCM).
exts = (ext(43, vec8(b"\x03\x04"))                     # supported_versions
        + ext(10, vec16(b"\x00\x1d"))                  # supported_groups
        + ext(13, vec16(b"\x08\x04"))                  # signature_algorithms
        + ext(51, vec16(b"\x00\x1d" + vec16(os.urandom(32))))  # key_share
        + ext(45, vec8(b"\x01"))                       # psk_dhe_ke
        + ext(41, vec16(vec16(hostile) + bytes(4))     # pre_shared_key
              + vec16(vec8(os.urandom(32)))))
body = (b"\x03\x03" + os.urandom(32) + vec8(os.urandom(32))
        + vec16(b"\x13\x01") + vec8(b"\x00") + vec16(exts))
hello = b"\x16\x03\x01" + vec16(b"\x01" + struct.pack(">I", len(body))[1:] + body)
s = socket.socket(socket.AF_UNIX)
s.connect(psk_sock)
s.settimeout(10)
recv_exact(s, 18)
s.sendall(struct.pack(">I", 3) + struct.pack(">QII", 0x49484156454F5054, 5, 0))
recv_exact(s, 20)
s.sendall(hello)
try:
    while s.recv(4096):
        pass
except ConnectionResetError:
    pass
s.close()

# The X.509 client's name, then an export name over TLS.
c = Client(int(port), certdir)
c.starttls()
c.handshake()
c.tls.write(go(hostile))
c.flush()
_, o, t, n = struct.unpack(">QIII", c.read(20))
assert t == 0x80000006, hex(t)                    # NBD_REP_ERR_UNKNOWN
c.s.close()

# An export name to nbdkit.
s = socket.socket(socket.AF_UNIX)
s.connect(nbdkit_sock)
s.settimeout(10)
recv_exact(s, 18)
s.sendall(struct.pack(">I", 3) + go(hostile))
_, o, t, n = struct.unpack(">QIII", recv_exact(s, 20))
assert t & 0x80000000, hex(t)
s.close()
EOF
stop_server "$nbdkit_pid"
esc=$(printf '\033') bad=
for log in psk x509 nbdkit; do
  ! grep -q "$esc" "$tmpdir/$log.log" || bad="$bad $log (an escape sequence)"
  ! grep -q '^[^ ]*zonednull-server: connection 99: forged' "$tmpdir/$log.log" ||
    bad="$bad $log (a forged line)"
done
[ -z "$bad" ] || fail "raw names from the client in logs:$bad"
logged psk "unknown PSK user 'evil\n\x1b[31mzonednull-server: connection 99: forged' (not in keys.psk)"
logged x509 "client certificate 'CN=evil\x1b[31m red'"
logged nbdkit "no export named 'evil\n\x1b[31mzonednull-server: connection 99: forged'"
stop_server "$x509_pid"

# ---- SIGTERM with TLS sessions open: a clean exit ------------------------------

rc=0
kill "$psk_pid" && wait "$psk_pid" || rc=$?
[ "$rc" -eq 0 ] || fail "exit status $rc after SIGTERM"
server_pids=
[ ! -e "$psk_sock" ] || fail "socket left behind"
exit 0
