#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# backing_dir on a full file system: zonednull-server's write that meets
# ENOSPC fails with EIO, every sequential zone's file still holds exactly
# its wp, everything acknowledged before reads back, the log names the
# file and the cause, and once space is freed writes go on.  Needs root
# to mount a small tmpfs; skipped otherwise.
. "$(dirname "$0")/../common/lib.sh"
need_nbdsh

ZONEDNULL_TARGET=server
export ZONEDNULL_TARGET
[ -x "${ZONEDNULL_SERVER:-}" ] || skip "ZONEDNULL_SERVER is not set"

fs=$tmpdir/fs
mkdir "$fs" || fail "mkdir $fs"
mount -t tmpfs -o size=8m tmpfs "$fs" 2>/dev/null ||
  skip "cannot mount a tmpfs (not root?)"
# The servers stop before the file system goes, and it before $tmpdir.
trap 'for p in $server_pids; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
      server_pids=; umount "$fs"; cleanup' EXIT

dir=$fs/dev
# 64 MiB of 1 MiB zones on 8 MiB of disk.
device="size=64 zone_size=1 zone_nr_conv=1 backing_dir=$dir"
start_server enospc $device
log=$tmpdir/enospc.log

# Fills sequential zones in order with 192 KiB writes of data that
# depends on its offset until one fails; records every acknowledged
# write and its checksum.
/usr/bin/python3 - "$uri" "$tmpdir/acked" <<'EOF' || fail "filling the disk"
import errno, hashlib, nbd, sys
h = nbd.NBD()
h.connect_uri(sys.argv[1])
zone, chunk, acked, err = 1 << 20, 192 << 10, [], None
for z in range(1, 64):
    off = 0
    while off < zone and err is None:
        n = min(chunk, zone - off)
        data = hashlib.sha256(b"%d" % (z * zone + off)).digest() * (n // 32)
        try:
            h.pwrite(data, z * zone + off)
        except nbd.Error as e:
            err = e
            break
        acked.append((z * zone + off, n, hashlib.sha256(data).hexdigest()))
        off += n
    if err is not None:
        break
if err is None:
    sys.exit("64 MiB went into an 8 MiB file system")
if err.errnum != errno.EIO:
    sys.exit("the failed write's errno is %s, not EIO" % err.errnum)
with open(sys.argv[2], "w") as f:
    for a in acked:
        f.write("%d %d %s\n" % a)
print("%d writes acknowledged, then EIO" % len(acked))
EOF
[ -s "$tmpdir/acked" ] || fail "no write was acknowledged"

grep -q "seq-0000[0-9][0-9]: No space left on device" "$log" ||
  fail "the log does not name the zone file and ENOSPC: $(cat "$log")"

# Every sequential zone's file is as long as its wp says, and the data
# acknowledged reads back.
check_files () {
  "$ZONEDNULL_CLI" report --json "$uri" >"$tmpdir/report.json" ||
    fail "report failed"
  /usr/bin/python3 - "$tmpdir/report.json" "$dir" <<'EOF' || fail "$1"
import json, os, sys
for z in json.load(open(sys.argv[1]))["zones"]:
    if z["type"] != 2:
        continue
    n = z["start"] // z["len"]
    size = os.stat("%s/seq-%06d" % (sys.argv[2], n)).st_size
    wp = z["start"] + z["cap"] if z["cond_name"] == "FULL" else z["wp"]
    if size != (wp - z["start"]) * 512:
        sys.exit("zone %d is %s with wp %d, its file holds %d bytes"
                 % (n, z["cond_name"], wp, size))
EOF
}

check_acked () {
  /usr/bin/python3 - "$uri" "$tmpdir/acked" <<'EOF' || fail "$1"
import hashlib, nbd, sys
h = nbd.NBD()
h.connect_uri(sys.argv[1])
for line in open(sys.argv[2]):
    off, n, digest = line.split()
    if hashlib.sha256(h.pread(int(n), int(off))).hexdigest() != digest:
        sys.exit("the acknowledged write at byte %s reads back wrong" % off)
EOF
}

check_files "after ENOSPC a zone file differs from its wp"
check_acked "after ENOSPC"
# The failing zone: the one after the last acknowledged write's, or the
# same when the write failed inside it.
last=$(tail -n 1 "$tmpdir/acked")
set -- $last
next=$(($1 + $2))
fail_zone=$((next / 1048576))

# Still full: a write to the failing zone's wp fails again.
/usr/bin/python3 - "$uri" "$next" <<'EOF' || fail "a write succeeded on a full disk"
import errno, nbd, sys
h = nbd.NBD()
h.connect_uri(sys.argv[1])
try:
    h.pwrite(b"\x11" * (192 << 10), int(sys.argv[2]))
except nbd.Error as e:
    sys.exit(0 if e.errnum == errno.EIO else 1)
sys.exit(1)
EOF
check_files "after a second ENOSPC"

# Free space: reset the first zone, which is FULL.
"$ZONEDNULL_CLI" reset -o 2048 -c 1 "$uri" || fail "reset failed"
awk '$1 >= 2097152' "$tmpdir/acked" >"$tmpdir/acked.kept"
mv "$tmpdir/acked.kept" "$tmpdir/acked"

# The write that failed now succeeds, at the same wp.
/usr/bin/python3 - "$uri" "$next" "$tmpdir/acked" <<'EOF' || fail "writes do not work again after space was freed"
import hashlib, nbd, sys
h = nbd.NBD()
h.connect_uri(sys.argv[1])
off = int(sys.argv[2])
data = hashlib.sha256(b"again").digest() * ((192 << 10) // 32)
h.pwrite(data, off)
h.flush()
with open(sys.argv[3], "a") as f:
    f.write("%d %d %s\n" % (off, len(data), hashlib.sha256(data).hexdigest()))
EOF
check_files "after the space was freed"
check_acked "after the space was freed"

# And a restart from the directory agrees.
stop_server "$pid"
start_server enospc2 $device
check_files "after a restart"
check_acked "after a restart"
echo "zone $fail_zone met ENOSPC; $(wc -l <"$tmpdir/acked") writes read back"
