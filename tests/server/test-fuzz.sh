#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Bounded libFuzzer runs over zonednull-server's protocol sessions, NBD
# then NVMe/TCP, from seeds that reach every phase: NBD's handshake
# options, meta contexts and each command; NVMe/TCP's ICReq, Connect,
# the admin commands and each I/O command with in-capsule data and R2Ts;
# then NVMe/TCP's DH-HMAC-CHAP exchange alone, with a host that knows
# the secret (no forged Reply may authenticate, the right one must).
# Any crash, leak, sanitizer report or broken invariant fails.
. "$(dirname "$0")/../common/lib.sh"

fuzzer=${ZONEDNULL_BUILDDIR:-.}/proto/nbd/fuzz-session
nvme_fuzzer=${ZONEDNULL_BUILDDIR:-.}/proto/nvme/fuzz-session
[ -x "$fuzzer" ] || skip "no fuzz target (configure found no clang with libFuzzer)"
[ -x "$nvme_fuzzer" ] || fail "no NVMe/TCP fuzz target beside the NBD one"
# The target carries its own sanitizers; one run per make check is enough.
[ -z "${ZONEDNULL_PRELOAD:-}" ] || skip "already run by the plain build"
seconds=${ZONEDNULL_FUZZ_SECONDS:-30}

mkdir "$tmpdir/seeds" "$tmpdir/corpus"
/usr/bin/python3 - "$tmpdir/seeds" <<'PY' || fail "cannot write seeds"
import struct, sys
d = sys.argv[1]
opt = lambda o, b: struct.pack(">QII", 0x49484156454F5054, o, len(b)) + b
req = lambda t, off, n, f=0, data=b"": struct.pack(">IHHQQI", 0x25609513, f, t, 7, off, n) + data
name = lambda s: struct.pack(">I", len(s)) + s
go = lambda e: opt(7, name(e) + struct.pack(">HH", 1, 3))
meta = lambda o, e, qs: opt(o, name(e) + struct.pack(">I", len(qs)) + b"".join(name(q) for q in qs))
flags = struct.pack(">I", 3)
seeds = {
  "list": flags + opt(3, b"") + opt(6, name(b"nullb0/control") + struct.pack(">H", 0)) + opt(2, b""),
  "data": flags + opt(8, b"") + meta(10, b"", [b"base:allocation", b"zonednull:zones"]) + go(b"")
          + req(1, 1 << 20, 4096, 0, b"\x5a" * 4096) + req(0, 1 << 20, 8192)
          + req(7, 0, 8 << 20) + req(4, 1 << 20, 1 << 20) + req(3, 0, 0) + req(2, 0, 0),
  "simple": flags + opt(1, b"nullb0") + req(1, 0, 512, 1, b"\0" * 512) + req(0, 0, 512),
  "control": flags + go(b"nullb0/control") + req(0, 0, 4096)
             + req(1, 0, 32, 0, struct.pack(">IIQQQ", 0x5a4e434d, 1, 2048, 2048, 0)),
  # The kernel's bad block table: one set that fills it (ENOSPC), a
  # clear that would split an entry of the full table, a set past it.
  "badblocks": flags + go(b"nullb0/control")
               + req(1, 0, 32, 0, struct.pack(">IIQQQ", 0x5a4e434d, 8, 0, 512 * 512 + 1, 0))
               + req(0, 0, 4096)
               + req(1, 0, 32, 0, struct.pack(">IIQQQ", 0x5a4e434d, 9, 1, 1, 0))
               + req(1, 0, 32, 0, struct.pack(">IIQQQ", 0x5a4e434d, 8, 1 << 40, 1, 0))
               + req(0, 0, 4096),
  "metalist": flags + meta(9, b"nullb0", [b"base:", b"zonednull:"]) + meta(9, b"nullb0", []),
  # STARTTLS, then options and a request "inside TLS"; with and without
  # options refused before it (the length picks --tls, so both sizes).
  "starttls": flags + opt(5, b"") + opt(8, b"") + go(b"") + req(0, 0, 4096),
  "tlsrefused": flags + opt(3, b"") + go(b"nullb1") + opt(5, b"") + opt(3, b"") + go(b""),
  "tlsrefused2": flags + opt(3, b"") + go(b"nullb1") + opt(5, b"") + opt(3, b"") + go(b"") + b"\0",
}
for k, v in seeds.items():
    open("%s/%s" % (d, k), "wb").write(v)
PY
"$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=16384 \
  -print_final_stats=1 "$tmpdir/corpus" "$tmpdir/seeds" >"$tmpdir/fuzz.log" 2>&1 ||
  fail "fuzzer found a problem:
$(tail -60 "$tmpdir/fuzz.log")"
grep -E 'stat::number_of_executed_units|cov:' "$tmpdir/fuzz.log" | tail -3

# NVMe/TCP: the first byte picks a fresh connection (0), an admin queue
# past Connect (1) or an I/O queue (2), without authentication, or the
# same (3, 4, 5) where the hosts must authenticate; the rest are PDUs.
mkdir "$tmpdir/nvme-seeds" "$tmpdir/nvme-corpus"
/usr/bin/python3 - "$tmpdir/nvme-seeds" <<'PY' || fail "cannot write NVMe seeds"
import struct, sys
d = sys.argv[1]
def crc(b):
    c = 0xFFFFFFFF
    for x in b:
        c ^= x
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    return c ^ 0xFFFFFFFF
def sqe(op, nsid=0, cdw=(), sgl_len=0, sgl_type=0x5A, fctype=None, cid=1):
    b = bytearray(64)
    struct.pack_into("<BBHI", b, 0, op, 0x40, cid, nsid)
    if fctype is not None:
        b[4] = fctype
    struct.pack_into("<I", b, 32, sgl_len)
    b[39] = sgl_type
    for i, v in enumerate(cdw):
        struct.pack_into("<I", b, 40 + 4 * i, v & 0xFFFFFFFF)
    return bytes(b)
def capsule(q, data=b"", hd=False, dd=False):
    h, g = (4 if hd else 0), (4 if dd and data else 0)
    hdr = struct.pack("<BBBBI", 4, (1 if hd else 0) | (2 if g else 0), 72,
                      72 + h if data else 0, 72 + h + len(data) + g) + q
    out = hdr + (struct.pack("<I", crc(hdr)) if hd else b"") + data
    return out + (struct.pack("<I", crc(data)) if g else b"")
def h2c(cid, ttag, off, data, last=True):
    return struct.pack("<BBBBIHHII4x", 6, 4 if last else 0, 24, 24,
                       24 + len(data), cid, ttag, off, len(data)) + data
def icreq(dg=0):
    b = bytearray(128)
    struct.pack_into("<BBBBI", b, 0, 0, 0, 128, 0, 128)
    b[11] = dg
    return bytes(b)
def connect(qid, nqn, cntlid=0xFFFF, hd=False, dd=False):
    data = bytearray(1024)
    struct.pack_into("<H", data, 16, cntlid)
    data[256:256 + len(nqn)] = nqn
    data[512:548] = b"nqn.2014-08.org.nvmexpress:uuid:seed"
    return capsule(sqe(0x7F, fctype=1, cdw=(qid << 16, 15, 5000),
                       sgl_len=1024, sgl_type=1), bytes(data), hd, dd)
rw = lambda op, lba, nlb, **k: sqe(op, 1, (lba, 0, nlb - 1), sgl_len=nlb * 512, **k)
nqn = b"nqn.2026-12.org.zonednull:fuzz:4420"
admin = [
  capsule(sqe(0x7F, fctype=4, cdw=(1, 0))),
  capsule(sqe(0x7F, fctype=0, cdw=(0, 0x14, 1 | 6 << 4 | 6 << 16 | 4 << 20))),
  capsule(sqe(0x7F, fctype=4, cdw=(0, 0x1C))),
] + [capsule(sqe(6, n, (c, csi << 24), sgl_len=4096))
     for c, n, csi in ((1, 0, 0), (0, 1, 0), (2, 0, 0), (3, 1, 0), (5, 1, 2), (6, 0, 2), (6, 0, 0))] + [
  capsule(sqe(2, 0xFFFFFFFF, (5 | 1023 << 16, 0, 0, 0, 2 << 24), sgl_len=4096)),
  capsule(sqe(2, 0xFFFFFFFF, (2 | 127 << 16,), sgl_len=512)),
  capsule(sqe(9, 0, (7, 3 | 3 << 16))), capsule(sqe(9, 0, (0xF, 1000))),
  capsule(sqe(10, 0, (7,))), capsule(sqe(0x18)), capsule(sqe(0xC)), capsule(sqe(8)),
]
io = [
  capsule(rw(1, 0, 8, sgl_type=1), b"\x5a" * 4096),
  capsule(rw(2, 0, 8)),
  capsule(rw(1, 8, 16, cid=2)) + h2c(2, 0, 0, b"\xa5" * 4096, False) + h2c(2, 0, 4096, b"\xa5" * 4096),
  capsule(rw(0x7D, 2048, 8, sgl_type=1), b"\x11" * 4096),
  capsule(sqe(0x79, 1, (4096, 0, 0, 3))), capsule(sqe(0x79, 1, (4096, 0, 0, 2))),
  capsule(sqe(0x79, 1, (2048, 0, 0, 1))), capsule(sqe(0x79, 1, (0, 0, 0, 4 | 1 << 8))),
  capsule(sqe(0x7A, 1, (0, 0, 1023, 1 << 16), sgl_len=4096)),
  capsule(sqe(0x7A, 1, (0, 0, 15, 2 << 8), sgl_len=64)),
  capsule(sqe(0, 1)), capsule(sqe(8, 1, (0, 0, 7))),
]
seeds = {
  "handshake": b"\0" + icreq() + connect(0, nqn) + b"".join(admin[:3]),
  "digests": b"\0" + icreq(3) + connect(0, nqn, hd=True, dd=True)
             + capsule(sqe(6, 0, (1,), sgl_len=4096), hd=True),
  "discovery": b"\0" + icreq() + connect(0, b"nqn.2014-08.org.nvmexpress.discovery")
               + capsule(sqe(2, 0, (0x70 | 767 << 16,), sgl_len=3072)),
  "admin": b"\1" + b"".join(admin),
  "io": b"\2" + b"".join(io),
  "term": b"\2" + struct.pack("<BBBBI", 2, 0, 24, 0, 24) + bytes(16),
}
# DH-HMAC-CHAP (first byte 3 to 5: the hosts must authenticate):
# Negotiate, Challenge, a Reply (NULL group, and ffdhe2048 with a
# value), Success2, Failure2, and a Receive with too short an AL.
spsp = 1 << 8 | 1 << 16 | 0xE9 << 24
def send(msg, cid=1):
    return capsule(sqe(0x7F, fctype=5, cdw=(spsp, len(msg)), sgl_len=len(msg),
                       sgl_type=1, cid=cid), msg)
def receive(al=4096, cid=1):
    return capsule(sqe(0x7F, fctype=6, cdw=(spsp, al), sgl_len=al, cid=cid))
def negotiate(tid, hash_id, group):
    desc = bytearray(64)
    desc[0], desc[2], desc[3], desc[4], desc[34] = 1, 1, 1, hash_id, group
    return struct.pack("<BBHHBB", 0, 0, 0, tid, 0, 1) + bytes(desc)
def reply(tid, hl, dhv=b"", c2=False):
    return struct.pack("<BBHHBBBBHI", 1, 2, 0, tid, hl, 0, 1 if c2 else 0, 0,
                       len(dhv), 9 if c2 else 0) + b"\x33" * (2 * hl) + dhv
exchange = lambda tid, h, g, hl, dhv=b"", c2=False: (
    send(negotiate(tid, h, g)) + receive(8) + receive()
    + send(reply(tid, hl, dhv, c2)) + receive())
seeds.update({
  "auth-null": b"\4" + exchange(1, 1, 0, 32),
  "auth-ffdhe": b"\4" + exchange(2, 3, 1, 64, b"\x02" * 256, True)
                + send(struct.pack("<BBHH10x", 1, 4, 0, 2)),
  "auth-io": b"\5" + exchange(3, 2, 0, 48, c2=True)
             + send(struct.pack("<BBHHBB", 0, 0xF0, 0, 3, 1, 1)),
  "auth-fresh": b"\3" + icreq() + connect(0, nqn) + exchange(4, 1, 2, 32, b"\x05" * 384)
                + capsule(sqe(6, 0, (1,), sgl_len=4096)),
  # The limits: a second Negotiate mid-exchange, and more exchanges on
  # one queue than it may have, with the biggest group.
  "auth-again": b"\4" + send(negotiate(5, 1, 5)) + send(negotiate(6, 1, 5)) + receive(),
  "auth-many": b"\4" + b"".join(exchange(7 + i, 1, 0, 32) for i in range(6)),
})
for k, v in seeds.items():
    open("%s/%s" % (d, k), "wb").write(v)
PY
"$nvme_fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 \
  -print_final_stats=1 "$tmpdir/nvme-corpus" "$tmpdir/nvme-seeds" \
  >"$tmpdir/nvme-fuzz.log" 2>&1 ||
  fail "NVMe/TCP fuzzer found a problem:
$(tail -60 "$tmpdir/nvme-fuzz.log")"
grep -E 'stat::number_of_executed_units|cov:' "$tmpdir/nvme-fuzz.log" | tail -3

# DH-HMAC-CHAP alone (proto/nvme/fuzz-auth.c): the target plays a host
# with the secret, so exchanges succeed, one-way and both ways, and fail
# where the script forged the Reply.  A script: the host (one-way 0,
# two-way 1), then operations: 0 Negotiate (group choice, TID, hash, a
# mutation), 1 Receive (1: AL 4096), 2 the right Reply (C2 flag and its
# SEQNUM, a mutation), 3 Success2 or Failure2, others raw bytes.
auth_fuzzer=${ZONEDNULL_BUILDDIR:-.}/proto/nvme/fuzz-auth
[ -x "$auth_fuzzer" ] || fail "no DH-HMAC-CHAP fuzz target beside the others"
mkdir "$tmpdir/auth-seeds" "$tmpdir/auth-corpus"
/usr/bin/python3 - "$tmpdir/auth-seeds" <<'PY' || fail "cannot write DH-HMAC-CHAP seeds"
import struct, sys
d = sys.argv[1]
keep = b"\0\0\0\0"
neg = lambda tid, h, groups: bytes([0, groups]) + struct.pack(">H", tid) + bytes([h]) + keep
recv = b"\1\1"
reply = lambda c2=False, mut=keep: b"\2" + (b"\1\0\7" if c2 else b"\0") + mut
seeds = {
  "one-way": b"\0" + neg(1, 1, 0) + recv + reply() + recv,
  "ffdhe2048": b"\0" + neg(2, 2, 10) + recv + reply() + recv,
  "two-way": b"\1" + neg(3, 3, 0) + recv + reply(True) + recv + b"\3\0\0" + keep,
  "forged": b"\0" + neg(4, 1, 0) + recv + reply(False, b"\1\0\x14\x01") + recv,
  "again": b"\0" + (neg(5, 1, 0) + recv + reply() + recv) * 3,
}
for k, v in seeds.items():
    open("%s/%s" % (d, k), "wb").write(v)
PY
"$auth_fuzzer" -max_total_time="${ZONEDNULL_AUTH_FUZZ_SECONDS:-20}" \
  -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 \
  "$tmpdir/auth-corpus" "$tmpdir/auth-seeds" >"$tmpdir/auth-fuzz.log" 2>&1 ||
  fail "DH-HMAC-CHAP fuzzer found a problem:
$(tail -60 "$tmpdir/auth-fuzz.log")"
grep -E 'stat::number_of_executed_units|cov:' "$tmpdir/auth-fuzz.log" | tail -3
exit 0
