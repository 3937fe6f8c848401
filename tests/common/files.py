# SPDX-License-Identifier: BSD-3-Clause
# The NBD side of the backing_dir tests (tests/files/test-files-*.sh): writes
# of seeded data, snapshots of a device's zones and data, the storm's
# clients and its verification.  Run by Debian's /usr/bin/python3, which
# has the nbd module.
#
#   files.py write URI OFF LEN SEED [fua|flush]   (bytes)
#   files.py write-fails URI OFF LEN               (with EIO)
#   files.py expect URI OFF LEN SEED|zero
#   files.py snapshot CLI URI
#   files.py restarted <SNAPSHOT
#   files.py files CLI URI DIR
#   files.py storm-client CLI URI LOG ID CONV_ZONE SEQ_ZONES SHARED_ZONES
#   files.py storm-verify CLI URI DIR LOG...
import hashlib
import json
import os
import random
import re
import subprocess
import sys

import nbd

SECTOR = 512


def fail(msg):
    sys.exit("files.py: " + msg)


def data_of(seed, length):
    return random.Random(seed).randbytes(length)


def connect(uri):
    h = nbd.NBD()
    h.connect_uri(uri)
    return h


def report(cli, uri):
    out = subprocess.run([cli, "report", "--json", uri], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)["zones"]


def cmd_write(uri, off, length, seed, how=""):
    h = connect(uri)
    flags = nbd.CMD_FLAG_FUA if how == "fua" else 0
    if how == "fua" and not h.can_fua():
        fail("the server does not advertise FUA")
    h.pwrite(data_of(int(seed), int(length)), int(off), flags)
    if how == "flush":
        h.flush()
    h.shutdown()


def cmd_write_fails(uri, off, length):
    h = connect(uri)
    try:
        h.pwrite(data_of(0, int(length)), int(off))
    except nbd.Error as e:
        if e.errno != "EIO":
            fail("a write at %s failed with %s, not EIO" % (off, e.errno))
    else:
        fail("a write at %s succeeded" % off)
    h.shutdown()


def cmd_expect(uri, off, length, seed):
    off, length = int(off), int(length)
    h = connect(uri)
    got = h.pread(length, off)
    h.shutdown()
    want = bytes(length) if seed == "zero" else data_of(int(seed), length)
    if got != want:
        first = next(i for i in range(length) if got[i] != want[i])
        fail("%d bytes at %d: not the data of seed %s (first difference at "
             "byte %d)" % (length, off, seed, off + first))


def read_digest(h, off, length):
    """md5 of [off, off + length), reading 1 MiB at a time; a chunk that
    fails is read again 4 KiB at a time, and the 4 KiB blocks that fail
    are named, so that bad blocks compare by their place."""
    md5 = hashlib.md5()
    errors = []
    step = 1 << 20
    for pos in range(off, off + length, step):
        n = min(step, off + length - pos)
        try:
            md5.update(h.pread(n, pos))
        except nbd.Error:
            for p in range(pos, pos + n, 4096):
                try:
                    md5.update(h.pread(4096, p))
                except nbd.Error as e:
                    errors.append("%d:%s" % ((p - off) // 4096,
                                             e.errno or e.string))
    return md5.hexdigest() + ("" if not errors else
                              " unreadable=" + ",".join(errors))


def cmd_snapshot(cli, uri):
    """One line per zone: the CLI's blkzone report line and the md5 of
    the zone's data; then the bad-block count of `zonednull info`."""
    text = subprocess.run([cli, "report", uri], check=True,
                          capture_output=True, text=True).stdout
    lines = text.splitlines()
    zones = report(cli, uri)
    if len(lines) != len(zones):
        fail("report: %d lines for %d zones" % (len(lines), len(zones)))
    h = connect(uri)
    for line, z in zip(lines, zones):
        print("%s data=%s" % (line, read_digest(h, z["start"] * SECTOR,
                                                z["len"] * SECTOR)))
    h.shutdown()
    info = json.loads(subprocess.run([cli, "info", "--json", uri], check=True,
                                     capture_output=True, text=True).stdout)
    print("badblock_ranges=%d" % info["badblock_ranges"])


def cmd_restarted():
    """The snapshot a restart must give: an open zone comes back CLOSED,
    or EMPTY when nothing was written to it; nothing else changes."""
    for line in sys.stdin:
        m = re.search(r"wptr (0x[0-9a-f]+) .*zcond: ?([23])\((o[ie])\)", line)
        if m:
            new = " 1(em)" if int(m.group(1), 16) == 0 else " 4(cl)"
            line = re.sub(r"zcond: ?[23]\(o[ie]\)", "zcond:" + new, line)
        sys.stdout.write(line)


def cmd_files(cli, uri, d):
    """Every sequential zone's file holds exactly its data: wp = zone
    start + file size (READONLY and OFFLINE zones have no wp to check)."""
    bad = []
    for i, z in enumerate(report(cli, uri)):
        conv = z["type"] == 1
        path = os.path.join(d, "%s-%06d" % ("cnv" if conv else "seq", i))
        size = os.stat(path).st_size
        if conv:
            if size != z["len"] * SECTOR:
                bad.append("%s: %d bytes, not the zone size" % (path, size))
        elif z["cond"] not in (13, 15) and \
                z["wp"] != z["start"] + size // SECTOR:
            bad.append("%s: %d bytes, but zone %d has wp %d (start %d)"
                       % (path, size, i, z["wp"], z["start"]))
    if bad:
        fail("\n".join(bad))


# ---- the storm -------------------------------------------------------------
#
# A client owns a conventional zone and some sequential zones, and shares
# a few sequential zones with the other clients for zone appends.  Before
# each request it logs what it is about to do (P for pending) and, once
# the server has acknowledged it, the same line with A; each line is
# flushed to the file before the next request.  A pending line without
# its acknowledgement is the request in flight when the server died: it
# may or may not have reached the zone file.
#
# Log lines: "P|A OP ZONE OFF LEN SEED" with OP write (at the wp of an
# owned zone), over (conventional overwrite), append (its OFF, the sector
# the server chose, is in the A line only), reset, finish; OFF and LEN in
# bytes, OFF from the device start.


def cmd_storm_client(cli, uri, log, ident, conv_zone, seq_zones, shared):
    ident = int(ident)
    rnd = random.Random(ident * 7919 + os.getpid())
    zones = report(cli, uri)
    conv = zones[int(conv_zone)]
    owned = [int(z) for z in seq_zones.split(",")]
    shared = [int(z) for z in shared.split(",")]
    wp = {z: zones[z]["wp"] * SECTOR for z in owned}
    out = open(log, "a", buffering=1)
    h = connect(uri)
    seq = 0

    def note(state, op, zone, off, length, seed):
        out.write("%s %s %d %d %d %d\n" % (state, op, zone, off, length, seed))
        out.flush()

    while True:
        seq += 1
        seed = ident << 32 | seq
        r = rnd.random()
        try:
            if r < 0.25:
                off = conv["start"] * SECTOR + \
                    rnd.randrange(conv["len"] // 8) * 8 * SECTOR
                length = min(rnd.randrange(1, 33) * 4096,
                             (conv["start"] + conv["len"]) * SECTOR - off)
                note("P", "over", int(conv_zone), off, length, seed)
                h.pwrite(data_of(seed, length), off)
                note("A", "over", int(conv_zone), off, length, seed)
            elif r < 0.40:
                z = rnd.choice(shared)
                length = rnd.randrange(1, 17) * 4096
                note("P", "append", z, 0, length, seed)
                p = subprocess.run([cli, "append", "--timeout", "5",
                                    "--file", "-",
                                    "-o", str(zones[z]["start"]),
                                    "-l", str(length // SECTOR), uri],
                                   input=data_of(seed, length),
                                   capture_output=True)
                if p.returncode != 0:
                    # A full zone refuses; the read below raises if the
                    # server is gone instead.
                    if len(shared) > 1:
                        shared.remove(z)
                    h.pread(SECTOR, 0)
                    continue
                note("A", "append", z, int(p.stdout) * SECTOR, length, seed)
            else:
                z = rnd.choice(owned)
                start = zones[z]["start"] * SECTOR
                cap = zones[z]["cap"] * SECTOR
                if r < 0.45 or wp[z] >= start + cap:
                    op = "finish" if r < 0.43 else "reset"
                    note("P", op, z, 0, 0, seed)
                    subprocess.run([cli, op, "--timeout", "5", "-c", "1",
                                    "-o", str(zones[z]["start"]), uri],
                                   check=True, capture_output=True)
                    note("A", op, z, 0, 0, seed)
                    wp[z] = start + cap if op == "finish" else start
                    continue
                length = min(rnd.randrange(1, 17) * 4096, start + cap - wp[z])
                note("P", "write", z, wp[z], length, seed)
                h.pwrite(data_of(seed, length), wp[z])
                note("A", "write", z, wp[z], length, seed)
                wp[z] += length
        except (nbd.Error, subprocess.CalledProcessError):
            break                      # the server is gone


def cmd_storm_verify(cli, uri, d, *logs):
    """Replays each client's log into the data every acknowledged write
    left, and bounds every sequential zone's write pointer; then reads the
    device back and compares.  Prints the counts."""
    zones = report(cli, uri)
    zsize = zones[0]["len"] * SECTOR
    size = zones[-1]["start"] * SECTOR + zsize
    expected = bytearray(size)
    owner = {}                         # 4 KiB block -> (client, write no.)
    wp_lo, wp_hi = {}, {}              # owned zones: bounds in bytes
    shared_min = {}                    # shared zones: end of the last append
    writes = []                        # (client, no., off, len)
    in_flight = []                     # the requests the kill cut

    def forget(off, length):
        for b in range(off // 4096, (off + length) // 4096):
            owner.pop(b, None)

    for ci, log in enumerate(logs):
        pending = None
        for line in open(log):
            state, op, zone, off, length, seed = line.split()
            zone, off, length, seed = int(zone), int(off), int(length), \
                int(seed)
            zstart = zones[zone]["start"] * SECTOR
            zcap = zones[zone]["cap"] * SECTOR
            if state == "P":
                pending = (op, zone, off, length)
                continue
            pending = None
            if op in ("write", "over", "append"):
                expected[off:off + length] = data_of(seed, length)
                n = len(writes)
                writes.append((ci, n, off, length))
                for b in range(off // 4096, (off + length) // 4096):
                    owner[b] = n
                if op == "write":
                    wp_lo[zone] = wp_hi[zone] = off + length
                elif op == "append":
                    shared_min[zone] = max(shared_min.get(zone, zstart),
                                           off + length)
            elif op == "reset":
                forget(zstart, zsize)
                wp_lo[zone] = wp_hi[zone] = zstart
            elif op == "finish":
                wp_lo[zone] = wp_hi[zone] = zstart + zcap
        if pending:                    # in flight when the server died
            op, zone, off, length = pending
            in_flight.append(op)
            zstart = zones[zone]["start"] * SECTOR
            zcap = zones[zone]["cap"] * SECTOR
            if op in ("write", "over"):
                forget(off, length)
                if op == "write":
                    wp_hi[zone] = off + length
            elif op == "reset":
                forget(zstart, zsize)
                wp_lo[zone] = zstart
            elif op == "finish":
                wp_hi[zone] = zstart + zcap

    bad = []
    for i, z in enumerate(zones):
        if z["type"] == 1:
            continue
        wp = z["wp"] * SECTOR
        start = z["start"] * SECTOR
        path = os.path.join(d, "seq-%06d" % i)
        fsize = os.stat(path).st_size
        if wp != start + fsize:
            bad.append("zone %d: wp %d is not its start %d + the size %d of "
                       "%s" % (i, wp, start, fsize, path))
        if i in wp_lo and not wp_lo[i] <= wp <= wp_hi[i]:
            bad.append("zone %d: wp %d, expected from %d to %d"
                       % (i, wp, wp_lo[i], wp_hi[i]))
        if i in shared_min and wp < shared_min[i]:
            bad.append("zone %d: wp %d, before the end %d of an acknowledged "
                       "append" % (i, wp, shared_min[i]))

    h = connect(uri)
    actual = bytearray()
    for pos in range(0, size, 1 << 20):
        actual += h.pread(min(1 << 20, size - pos), pos)
    h.shutdown()
    checked = set(owner.values())      # not reset or overwritten later
    found = set(checked)
    for b, n in owner.items():
        if actual[b * 4096:(b + 1) * 4096] != expected[b * 4096:(b + 1) * 4096]:
            found.discard(n)
    for n in sorted(checked - found)[:10]:
        ci, _, off, length = writes[n]
        bad.append("client %d's acknowledged write of %d bytes at %d is not "
                   "there" % (ci, length, off))
    # Writes a later reset or overwrite replaced cannot be found; the
    # write pointers above account for them.
    print("%d writes acknowledged, %d found after restart, %d reset or "
          "overwritten later; in flight at the kill: %s"
          % (len(writes), len(found), len(writes) - len(checked),
             " ".join(in_flight) or "nothing"))
    if bad:
        fail("\n".join(bad))


commands = {
    "write": cmd_write, "write-fails": cmd_write_fails, "expect": cmd_expect, "snapshot": cmd_snapshot,
    "restarted": cmd_restarted, "files": cmd_files,
    "storm-client": cmd_storm_client, "storm-verify": cmd_storm_verify,
}
if len(sys.argv) < 2 or sys.argv[1] not in commands:
    fail("usage: see the comment at the top")
commands[sys.argv[1]](*sys.argv[2:])
