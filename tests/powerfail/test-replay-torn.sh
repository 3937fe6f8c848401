#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# zonednull replay --crash=torn:SEED on a log zonednull-server wrote
# (log_writes=): an 8-block write to a sequential zone and one to a
# conventional zone, neither flushed.  Every seed's state holds, in the
# sequential zone's file (zloop's layout), whole blocks of the write's
# start (its size a block multiple, never past the write's end), and in
# the conventional zone blocks that are the write's or zeros; some seeds
# tear each write; a seed gives the same files again and another seed
# other ones; bad seeds are refused naming the option and the rule.
#
# Device: 8 zones of 1 MiB, zone 0 conventional, 4096-byte blocks.
ZONEDNULL_TARGET=server
. "$(dirname "$0")/../common/lib.sh"

need_nbdsh

zn=$ZONEDNULL_CLI
log=$tmpdir/log
bs=4096

start_server logged size=8 zone_size=1 zone_nr_conv=1 blocksize=$bs \
  log_writes="$log"
# Each block a byte of its own (1 to 8), so a block of another place
# would show; zone 1 starts at byte 1 MiB.
nbdsh -u "$uri" -c "
data = b''.join(bytes([b + 1]) * $bs for b in range(8))
h.pwrite(data, 1 << 20)
h.pwrite(data, 4 * $bs)
" >"$tmpdir/nbdsh.out" 2>&1 || fail "writes failed: $(cat "$tmpdir/nbdsh.out")"
"$zn" mark cut "$uri" || fail "zonednull mark failed"
stop_server "$pid"

# seq_blocks DIR: how many blocks of the write zone 1's file holds, each
# checked to be the write's; conv_blocks DIR: which of the write's blocks
# zone 0 holds ("1-3-..."), each the write's or zeros.
check_state () {
  /usr/bin/python3 - "$1" $bs <<'PY'
import os, sys
d, bs = sys.argv[1], int(sys.argv[2])
seq = open(os.path.join(d, "seq-000001"), "rb").read()
if len(seq) % bs or len(seq) > 8 * bs:
    sys.exit("zone 1's file is %d bytes: not a block multiple within the write" % len(seq))
for b in range(len(seq) // bs):
    if seq[b * bs:(b + 1) * bs] != bytes([b + 1]) * bs:
        sys.exit("zone 1's block %d is not the write's" % b)
conv = open(os.path.join(d, "cnv-000000"), "rb").read()
kept = []
for b in range(8):
    blk = conv[(4 + b) * bs:(5 + b) * bs]
    if blk == bytes([b + 1]) * bs:
        kept.append(str(b))
    elif blk != bytes(bs):
        sys.exit("zone 0's block %d is neither the write's nor zeros" % (4 + b))
print(len(seq) // bs, "-".join(kept) or "none")
PY
}

seq_torn=0 conv_torn=0 states=
for seed in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do
  "$zn" replay "$log" --to cut --crash=torn:$seed -o "$tmpdir/s$seed" \
    >"$tmpdir/out" 2>&1 || fail "torn:$seed failed: $(cat "$tmpdir/out")"
  got=$(check_state "$tmpdir/s$seed") || fail "torn:$seed: $got"
  set -- $got
  case $1 in 0|8) ;; *) seq_torn=$((seq_torn + 1))
    grep -q "zone 1 (sequential): kept 1 of 1 pending (entries [0-9]* torn: $1 of its 8 blocks, the first)" "$tmpdir/out" ||
      fail "torn:$seed tore zone 1 after $1 blocks and said: $(cat "$tmpdir/out")" ;;
  esac
  case $2 in none|0-1-2-3-4-5-6-7) ;; *) conv_torn=$((conv_torn + 1)) ;; esac
  states="$states $got"
done
[ "$seq_torn" -gt 0 ] || fail "no seed tore the sequential zone's write:$states"
[ "$conv_torn" -gt 0 ] || fail "no seed tore the conventional zone's write:$states"

# The same seed, the same zone files; another seed, other ones somewhere
# (zonednull.meta holds the device's generation, drawn anew).
"$zn" replay "$log" --to cut --crash=torn:1 -o "$tmpdir/again" >/dev/null ||
  fail "torn:1 again failed"
for f in "$tmpdir"/s1/cnv-* "$tmpdir"/s1/seq-*; do
  cmp -s "$f" "$tmpdir/again/${f##*/}" || fail "torn:1 twice: ${f##*/} differs"
done
differ=0
for seed in 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do
  for f in "$tmpdir"/s1/cnv-* "$tmpdir"/s1/seq-*; do
    cmp -s "$f" "$tmpdir/s$seed/${f##*/}" || differ=1
  done
done
[ "$differ" = 1 ] || fail "every seed gave torn:1's files"

# Bad values, refused naming the option and the rule.
for bad in torn: torn:x torn:-1 torn:0x torn:1x; do
  "$zn" replay "$log" --crash=$bad -o "$tmpdir/x" >"$tmpdir/out" 2>&1 &&
    fail "--crash=$bad succeeded"
  grep -qF -- "zonednull replay: --crash: '$bad' is not a policy: none, all, random:SEED, torn:SEED or enumerate[:MAX] (SEED a number, MAX above 0)" \
    "$tmpdir/out" || fail "--crash=$bad: $(cat "$tmpdir/out")"
done
[ ! -e "$tmpdir/x" ] || fail "a refused replay made its DIR"
echo "seeds 1-16, blocks of zone 1 and blocks of zone 0 kept:$states"
exit 0
