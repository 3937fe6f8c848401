#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# zonednull-server --nvme-host: DH-HMAC-CHAP on NVMe/TCP.  Bad secrets
# and secrets files are refused with the rule (a file must be the
# user's, mode 0600, not a symbolic link; an error names its line), and
# no secret reaches the log.  A host with its secret authenticates its
# admin and I/O queues and does I/O, with SHA-256, SHA-384 and SHA-512,
# the NULL group and each FFDHE group, one way and both ways (secrets
# transformed or not).  A wrong secret, a replayed Reply and a wrong
# transaction ID get Failure1 (reason 01h, 01h and 06h) and the queue
# closed; a host that skips authentication gets Authentication Required
# on every command but the properties; a wrong controller secret is
# caught by the host; a host without a secret is refused at Connect; a
# host silent after Negotiate is closed by the handshake timeout.
# tests/common/nvme-host.py is the host (no kernel needed).
. "$(dirname "$0")/../common/lib.sh"

: "${ZONEDNULL_SERVER:=${ZONEDNULL_BUILDDIR:-.}/server/zonednull-server}"
[ -x "$ZONEDNULL_SERVER" ] || fail "no server at $ZONEDNULL_SERVER"
srv=$ZONEDNULL_SERVER
host_py="/usr/bin/python3 $(dirname "$0")/../common/nvme-host.py"

free_port () {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
secret () { $host_py gen-secret "$@"; }

hosta=nqn.2014-08.org.nvmexpress:uuid:00000000-0000-4000-8000-00000000000a
hostb=nqn.2014-08.org.nvmexpress:uuid:00000000-0000-4000-8000-00000000000b
hostc=nqn.2014-08.org.nvmexpress:uuid:00000000-0000-4000-8000-00000000000c
ka=$(secret "$(printf '%064x' 1)")                 # 32 bytes, untransformed
kc=$(secret "$(printf '%096x' 2)" 2)               # 48 bytes, SHA-384
kb=$(secret "$(printf '%0128x' 3)" 3)              # 64 bytes, SHA-512
wrong=$(secret "$(printf '%064x' 4)")

# ---- the options ----
refused () {   # refused WHAT RULE ARGS...: the server does not start
  what=$1 rule=$2
  shift 2
  # A server that blocks (on a FIFO, say) fails here, not the suite.
  timeout 60 "$srv" -f -U "$tmpdir/bad.sock" "$@" size=8 zone_size=1 \
    2>"$tmpdir/err" && fail "$what accepted"
  grep -qF -- "$rule" "$tmpdir/err" || fail "$what: $(cat "$tmpdir/err")"
  if grep -qF "${ka#DHHC-1:00:}" "$tmpdir/err"; then
    fail "$what: the secret is in the message: $(cat "$tmpdir/err")"
  fi
}
port=$(free_port)
refused "--nvme-host without --nvme" "--nvme-host needs --nvme" \
  --nvme-host="$hosta:$ka"
refused "no secret" "no DHHC-1 secret after the host NQN" \
  --nvme="$port" --nvme-host="$hosta"
refused "a bad CRC" "its CRC-32 does not match its key" --nvme="$port" \
  --nvme-host="$hosta:$(printf %s "$ka" | sed 's/..:$/AA:/')"
refused "a short key" "not 32, 48 or 64 bytes long" --nvme="$port" \
  --nvme-host="$hosta:DHHC-1:00:$(head -c 20 /dev/zero | base64):"
refused "a 32-byte key for SHA-512" "must be 32, 48 or 64 bytes long" \
  --nvme="$port" --nvme-host="$hosta:$(secret "$(printf '%064x' 1)" 3)"
refused "XX 04" "XX is not 00, 01, 02 or 03" --nvme="$port" \
  --nvme-host="$hosta:$(printf %s "$ka" | sed 's/^DHHC-1:00/DHHC-1:04/')"
refused "a host twice" "has a secret already" --nvme="$port" \
  --nvme-host="$hosta:$ka" --nvme-host="$hosta:$kb"
printf '# hosts\n%s:%s\n%s\n' "$hosta" "$ka" "$hostc" >"$tmpdir/hosts"
chmod 600 "$tmpdir/hosts"
refused "a line of a file" "=@$tmpdir/hosts, line 3: no DHHC-1 secret" \
  --nvme="$port" --nvme-host=@"$tmpdir/hosts"
printf '%s:%s\n%s:%s:%s\n' "$hosta" "$ka" "$hostc" "$kc" "$ka" >"$tmpdir/hosts"
chmod 644 "$tmpdir/hosts"
refused "a file others may read" \
  "only its owner may read or write a secrets file (chmod 600)" \
  --nvme="$port" --nvme-host=@"$tmpdir/hosts"
chmod 600 "$tmpdir/hosts"
ln -s "$tmpdir/hosts" "$tmpdir/hosts-link"
refused "a symbolic link" "a symbolic link (refused" \
  --nvme="$port" --nvme-host=@"$tmpdir/hosts-link"
# A file that names no host asks for authentication and must not turn it
# off: refused, empty or with comments only, and also beside a host on
# the command line.
: >"$tmpdir/no-hosts"
chmod 600 "$tmpdir/no-hosts"
refused "an empty file" "=@$tmpdir/no-hosts: names no host" \
  --nvme="$port" --nvme-host=@"$tmpdir/no-hosts"
printf '# no host yet\n\n  \n# %s:%s\n' "$hosta" "$ka" >"$tmpdir/no-hosts"
refused "a file of comments" "=@$tmpdir/no-hosts: names no host" \
  --nvme="$port" --nvme-host=@"$tmpdir/no-hosts"
refused "a file of comments beside a host" "=@$tmpdir/no-hosts: names no host" \
  --nvme="$port" --nvme-host="$hostb:$kb" --nvme-host=@"$tmpdir/no-hosts"
mkfifo -m 600 "$tmpdir/hosts-fifo"
refused "a FIFO" "=@$tmpdir/hosts-fifo: not a regular file" \
  --nvme="$port" --nvme-host=@"$tmpdir/hosts-fifo"
printf '%s:%s\n\000\n' "$hosta" "$ka" >"$tmpdir/hosts-nul"
chmod 600 "$tmpdir/hosts-nul"
refused "a NUL byte" "=@$tmpdir/hosts-nul, line 2: holds a NUL byte" \
  --nvme="$port" --nvme-host=@"$tmpdir/hosts-nul"
if [ "$(id -u)" -eq 0 ]; then
  cp -p "$tmpdir/hosts" "$tmpdir/hosts-nobody"
  chown nobody "$tmpdir/hosts-nobody"
  refused "another user's file" "=@$tmpdir/hosts-nobody: owned by another user" \
    --nvme="$port" --nvme-host=@"$tmpdir/hosts-nobody"
fi
"$srv" --help | grep -q -- '--nvme-host=HOSTNQN:SECRET' ||
  fail "--help lacks --nvme-host"

# ---- a server: hosta (and hostc) from the file, hostb on the line ----
ZONEDNULL_TARGET=server
port=$(free_port)
start_server auth -v --nvme="$port" -i 127.0.0.1 --timeout=3 \
  --nvme-host=@"$tmpdir/hosts" --nvme-host="$hostb:$kb" \
  size=64 zone_size=8 memory_backed=1
nqn="nqn.2026-12.org.zonednull:$(hostname | tr -cd 'A-Za-z0-9.-' | cut -c1-64):$port"
auth () {      # auth WANT HOSTNQN SECRET CTRL_SECRET HASH GROUP MODE
  want=$1
  shift
  $host_py 127.0.0.1 "$port" auth "$nqn" "$@" >"$tmpdir/out" 2>&1 ||
    fail "auth $*: $(cat "$tmpdir/out")"
  [ "$(cat "$tmpdir/out")" = "$want" ] ||
    fail "auth $*: $(cat "$tmpdir/out"), not: $want"
  echo "$* -> $want"
}
ok="authenticated, I/O done"
for hash in 1 2 3; do
  for group in 0 1 2 3 4 5; do
    auth "$ok" "$hostb" "$kb" - $hash $group ok
  done
  for group in 0 1; do
    auth "$ok" "$hosta" "$ka" - $hash $group ok
    auth "$ok" "$hostc" "$kc" "$ka" $hash $group ok
  done
done
for group in 0 1; do
  auth "failure1 1, queue closed" "$hosta" "$wrong" - 1 $group ok
  auth "replayed reply: failure1 1, queue closed" "$hosta" "$ka" - 1 $group replay
  auth "bad transaction: failure1 6, queue closed" "$hosta" "$ka" - 1 $group bad-tid
  auth "controller mismatch, queue closed" "$hostc" "$kc" "$kb" 2 $group wrong-ctrl
done
auth "skipped: Identify and read: Authentication Required" "$hosta" "$ka" - 1 0 skip
auth "stalled: closed" "$hosta" "$ka" - 1 1 stall
auth "squatter refused, host's queue 1 authenticated" "$hosta" "$ka" - 1 1 squat
# What one host may make the server compute: one exchange at a time on a
# queue, 4 in its life, and Diffie-Hellman within a budget of the loop's
# time, per host NQN: a flood of ffdhe8192 exchanges by a host without
# the secret is refused before long, and another host is answered
# throughout.
auth "exchanges on one queue: 4 ok, then failure1 at the challenge" "$hosta" "$ka" - 1 0 reauth
auth "second Negotiate: failure1 7, queue closed" "$hosta" "$ka" - 1 5 renegotiate
auth "refused after some challenges, the other host answered" "$hostb" "$kb" - 1 5 "flood:$hosta"
grep -q "host $hosta, queue 0: Diffie-Hellman refused: the host NQN's budget" \
  "$tmpdir/auth.log" || fail "no refusal logged: $(cat "$tmpdir/auth.log")"
$host_py 127.0.0.1 "$port" connect "$nqn" nqn.2014-08.org.example:nosecret \
  >"$tmpdir/out" 2>&1 || fail "connect: $(cat "$tmpdir/out")"
[ "$(cat "$tmpdir/out")" = "0x4184 0x10200" ] ||
  fail "a host without a secret was not refused: $(cat "$tmpdir/out")"
grep -q "nosecret is not allowed (no --nvme-host secret)" "$tmpdir/auth.log" ||
  fail "no refusal logged: $(cat "$tmpdir/auth.log")"
stop_server "$pid"
grep -q "queue 0: authentication failed: Failure1 sent (reason 6)" \
  "$tmpdir/auth.log" || fail "no failure logged: $(cat "$tmpdir/auth.log")"
grep -q "handshake not finished" "$tmpdir/auth.log" ||
  fail "the stalled host was not timed out: $(cat "$tmpdir/auth.log")"
for k in "$ka" "$kb" "$kc"; do
  b64=${k#DHHC-1:0?:}
  if grep -qF "${b64%:}" "$tmpdir/auth.log"; then
    fail "a secret is in the log: $(cat "$tmpdir/auth.log")"
  fi
done
exit 0
