#!/bin/sh
# A bounded libFuzzer run over zonednull-server's protocol session, from
# seeds that reach every phase: handshake options, meta contexts and each
# command.  Any crash, leak, sanitizer report or broken invariant fails.
. "$(dirname "$0")/lib.sh"

fuzzer=${ZONEDNULL_BUILDDIR:-.}/proto/nbd/fuzz-session
[ -x "$fuzzer" ] || skip "no fuzz target (configure found no clang with libFuzzer)"
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
exit 0
