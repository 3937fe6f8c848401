#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# `zonednull power-cycle --keep=POLICY` on a live device with backing_dir
# and cache_size, over both NBD servers.  Four 16 KiB writes, neither
# flushed nor FUA, go to a sequential zone after flushed data, and four
# over flushed data in a conventional zone; a FUA write in another zone
# is durable.  After the power cycle:
#   none: none of the eight is there; all: every one is;
#   random:SEED: the sequential zone holds a prefix of its four (the wp
#     at its end, the data of each write in it), each conventional write
#     is there whole or the flushed data is; the same seed gives the same
#     state, and the seeds 1 to 8 more than one;
#   torn:SEED: the same, but zone 2's wp may also lie inside the write
#     after the prefix, at a block boundary, with that write's first
#     blocks below it, and a conventional write may be there in part,
#     each 4 KiB block its own or the flushed data's; some seeds tear;
# and a policy that is none of those is a usage error naming --keep.
#
# Device: 8 zones of 4 MiB, zones 0 and 1 conventional, 4 KiB blocks.
. "$(dirname "$0")/../common/files-lib.sh"

geometry="size=32 zone_size=4 zone_nr_conv=2 cache_size=8 blocksize=4096"
seq_off=$((2 * 4194304))                # zone 2, bytes

# keep.py write|state|torn CLI URI, one NBD connection each.  write: the
# flushed data (seeds 1 to 5), the FUA write (6) and the eight pending
# writes (10 to 13 in zone 2, 20 to 23 over 1 to 4 in zone 0).  state:
# checks the rules and prints how many of zone 2's writes survived, then
# for each conventional write 1 (kept) or 0.  torn: the same, where
# zone 2's count is K+T for K writes and T blocks of the next, and a
# conventional write partly kept is p.
cat >"$tmpdir/keep.py" <<'EOF'
import json, random, subprocess, sys
import nbd

K, ZB = 1024, 4 << 20
W, SEQ, B = 16 * K, 2 * ZB, 4096


def data(seed, n):
    return random.Random(seed).randbytes(n)


what, cli, uri = sys.argv[1:4]
h = nbd.NBD()
h.connect_uri(uri)
if what == "write":
    for i in range(4):
        h.pwrite(data(i + 1, W), i * W)
    h.pwrite(data(5, 64 * K), SEQ)
    h.flush()
    h.pwrite(data(6, 64 * K), ZB + 8 * K, nbd.CMD_FLAG_FUA)
    for i in range(4):
        h.pwrite(data(10 + i, W), SEQ + 64 * K + i * W)
        h.pwrite(data(20 + i, W), i * W)
    sys.exit(0)
if h.pread(64 * K, SEQ) != data(5, 64 * K):
    sys.exit("the flushed data of zone 2 is lost")
if h.pread(64 * K, ZB + 8 * K) != data(6, 64 * K):
    sys.exit("the FUA write is lost")
out = subprocess.run([cli, "report", "--json", uri], check=True,
                     capture_output=True, text=True).stdout
z = json.loads(out)["zones"][2]
torn = what == "torn"
wp = (z["wp"] - z["start"]) * 512
kept = (wp - 64 * K) // W
blocks = (wp - 64 * K - kept * W) // B if torn else 0
if (wp != 64 * K + kept * W + blocks * B or not 0 <= kept <= 4
        or (kept == 4 and blocks)):
    sys.exit("zone 2's wp, %d bytes in, is not at the end of a prefix of "
             "its writes%s" % (wp, ", or at a block inside the next" * torn))
for i in range(kept + (blocks > 0)):
    n = W if i < kept else blocks * B
    if h.pread(n, SEQ + 64 * K + i * W) != data(10 + i, W)[:n]:
        sys.exit("zone 2's write %d is below the wp but not there" % i)
state = [str(kept) + ("+%d" % blocks if blocks else "")]
for i in range(4):
    got, new, old = h.pread(W, i * W), data(20 + i, W), data(i + 1, W)
    if got == new:
        state.append("1")
    elif got == old:
        state.append("0")
    elif torn and all(got[b:b + B] in (new[b:b + B], old[b:b + B])
                      for b in range(0, W, B)):
        state.append("p")
    else:
        sys.exit("conventional write %d is neither whole nor absent%s"
                 % (i, ", nor torn at blocks" * torn))
print(" ".join(state))
EOF

keep_py () {
  /usr/bin/python3 "$tmpdir/keep.py" "$1" "$zn" "$2" || fail "keep.py $*"
}

# write_pending URI: zone 2 reset, then keep.py write.
write_pending () {
  zn_ok reset -o $((seq_off / 512)) -c 1 "$1"
  keep_py write "$1"
}

state () {
  case $2 in torn:*) keep_py torn "$1" ;; *) keep_py state "$1" ;; esac
}

# cycle URI POLICY: the writes, a power cycle, the state.
cycle () {
  write_pending "$1"
  zn_ok power-cycle --keep="$2" "$1"
  state "$1" "$2"
}

for kind in nbdkit server; do
  d=$tmpdir/keep-$kind
  start_as $kind "keep-$kind" $geometry backing_dir="$d"

  [ "$(cycle "$dev" none)" = "0 0 0 0 0" ] || fail "$kind: none kept some"
  [ "$(cycle "$dev" all)" = "4 1 1 1 1" ] || fail "$kind: all lost some"
  states=""
  for seed in 1 2 3 4 5 6 7 8; do
    s=$(cycle "$dev" random:$seed) || exit 1
    [ "$(cycle "$dev" random:$seed)" = "$s" ] ||
      fail "$kind: random:$seed gave two states"
    states="$states$s
"
  done
  [ "$(printf '%s' "$states" | sort -u | wc -l)" -gt 1 ] ||
    fail "$kind: seeds 1 to 8 all gave $states"
  torn=""
  for seed in 1 2 3 4 5 6 7 8; do
    s=$(cycle "$dev" torn:$seed) || exit 1
    [ "$(cycle "$dev" torn:$seed)" = "$s" ] ||
      fail "$kind: torn:$seed gave two states"
    torn="$torn$s;"
  done
  case $torn in *+*) ;; *) fail "$kind: no torn seed tore zone 2: $torn" ;; esac
  case $torn in *p*) ;; *) fail "$kind: no torn seed tore zone 0: $torn" ;; esac
  write_pending "$dev"
  zn_ok power-cycle -v --keep=torn:3 "$dev"
  grep -qxF "$dev: powered off and on, keeping of the writes neither flushed nor written with FUA what seed 3 draws: a prefix in each sequential zone, each conventional write whole or not, and writes torn at logical blocks" \
    "$tmpdir/zn.out" || fail "power-cycle -v torn: $(cat "$tmpdir/zn.out")"

  # The CLI says what it kept.
  write_pending "$dev"
  zn_ok power-cycle -v --keep=random:7 "$dev"
  grep -qxF "$dev: powered off and on, keeping of the writes neither flushed nor written with FUA what seed 7 draws: a prefix in each sequential zone, each conventional write whole or not" \
    "$tmpdir/zn.out" || fail "power-cycle -v: $(cat "$tmpdir/zn.out")"
  s7=$(state "$dev") || exit 1
  # What survived is in the files: a restart shows the same state.
  stop_server "$pid"
  start_as $kind "keep-$kind-again" $geometry backing_dir="$d"
  [ "$(state "$dev")" = "$s7" ] || fail "$kind: a restart changed the state"
  # The control channel: an old client's 0, 0 is none, a policy it does
  # not know fails with EINVAL and a message naming the field (in
  # nbdkit's log; zonednull-server sends it with the error).
  write_pending "$dev"
  /usr/bin/python3 - "nbd+unix:///nullb0/control?socket=$sock" >"$tmpdir/ctl.out" <<'EOF' ||
import struct, sys
import nbd

h = nbd.NBD()
h.set_debug_callback(lambda ctx, msg: "server message" in msg and print(msg))
h.set_debug(True)
h.connect_uri(sys.argv[1])
flags = struct.unpack(">I", h.pread(4, 68))[0]
if not flags & (1 << 7):
    sys.exit("the header lacks ZN_CONTROL_F_POWER_KEEP")
if not flags & (1 << 17):
    sys.exit("the header lacks ZN_CONTROL_F_POWER_TORN")
for seed, kind in ((0, 4), (5, 0), (5, 1), (0, 1 << 40)):
    try:
        h.pwrite(struct.pack(">IIQQQ", 0x5a4e434d, 10, seed, kind, 0), 0)
    except nbd.Error as e:
        if e.errno != "EINVAL":
            sys.exit("POWER_CYCLE %d, %d: %s" % (seed, kind, e.errno))
    else:
        sys.exit("POWER_CYCLE with seed %d, kind %d succeeded" % (seed, kind))
h.pwrite(struct.pack(">IIQQQ", 0x5a4e434d, 10, 0, 0, 0), 0)
EOF
    fail "$kind: POWER_CYCLE over the control channel"
  [ "$(state "$dev")" = "0 0 0 0 0" ] || fail "$kind: 0, 0 kept some"
  cat "$tmpdir/keep-$kind-again.log" "$tmpdir/ctl.out" >"$tmpdir/ctl.msgs"
  grep -qF "POWER_CYCLE: nr_sectors 4 (the keep policy) and sector 0 (its seed): keep policy 4 is none of 0 none, 1 all, 2 random, 3 torn" \
    "$tmpdir/ctl.msgs" || fail "$kind: no message for kind 4"
  grep -qF "POWER_CYCLE: nr_sectors 0 (the keep policy) and sector 5 (its seed): the seed (5) must be 0 unless the keep policy is 2, random, or 3, torn" \
    "$tmpdir/ctl.msgs" || fail "$kind: no message for a seed with none"
  stop_server "$pid"
  echo "$kind: none, all, random:1..8 and torn:1..8 kept what the rules allow: $(printf '%s' "$states" | tr '\n' ';') torn: $torn"
done

# A policy that is none of the forms, before any connection.
for bad in bogus random random: random:x random:-1 enumerate enumerate:3 \
           NONE "" torn torn: torn:x torn:0x; do
  if "$zn" power-cycle --keep="$bad" nbd+unix:///?socket=/nonexistent \
       >"$tmpdir/out" 2>"$tmpdir/err"; then
    fail "power-cycle --keep='$bad' succeeded"
  else
    rc=$?
  fi
  [ "$rc" -eq 2 ] || fail "--keep='$bad': exit $rc, expected 2"
  grep -qF -- "--keep: '$bad' is not a policy: none, all, random:SEED or torn:SEED (SEED a number)" \
    "$tmpdir/err" || fail "--keep='$bad': $(cat "$tmpdir/err")"
done
"$zn" report --keep=all nbd+unix:///?socket=/nonexistent 2>"$tmpdir/err" &&
  fail "report --keep succeeded"
grep -qF -- "--keep applies to power-cycle only" "$tmpdir/err" ||
  fail "report --keep: $(cat "$tmpdir/err")"
echo "bad policies are refused"
