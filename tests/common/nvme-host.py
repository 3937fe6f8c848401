#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A minimal NVMe/TCP host, for zonednull-server's tests: enough of the
Linux host's sequence (ICReq, Connect, properties, Identify, I/O) to
check a server without the kernel's nvme-tcp.

Usage: nvme-host.py HOST PORT COMMAND...
  ic                      ICReq/ICResp only; prints the ICResp fields
  discover                the discovery log's subsystem NQNs, one a line
  smoke NQN               admin and I/O queue, identify, write, read back
  connect NQN HOSTNQN     an admin Connect; prints the status (hex)
  stall                   a connection that sends nothing, one that stops
                          after ICReq: both must be closed (within 60 s)
  keepalive NQN           a controller with KATO 1 s and an I/O queue,
                          then silence: both must be closed (within 60 s)
  kato NQN                KATO 0xFFFFFFFF from Connect, and from Set
                          Features, then 3 s of silence: both controllers
                          must still answer a Keep Alive
  enable NQN              CC.EN and CC.SHN: commands before CC.EN, after
                          a reset (CC.EN 1 to 0) and after a shutdown get
                          Command Sequence Error, the I/O queue is closed
  no-r2t NQN              commands that take no data, with a transport
                          SGL, on an admin queue (HOSTNQN) and a discovery
                          controller (REFUSED): refused, no R2T
  error-log NQN           an Identify with an unknown CNS, then the Error
                          Information log (01h): its newest entry, printed
  auth NQN HOSTNQN SECRET CTRL_SECRET HASH GROUP MODE
                          DH-HMAC-CHAP (SHA-256/384/512: HASH 1/2/3, GROUP 0
                          null or 1-5 ffdhe2048-8192, CTRL_SECRET '-' for
                          none) on the admin and an I/O queue, then I/O;
                          MODE: ok, skip (no authentication), replay (a
                          Reply of an earlier exchange), bad-tid, wrong-ctrl
                          (the host holds another controller secret), stall
                          (silence after Negotiate: must be closed within
                          60 s), squat (an unauthenticated connection holds
                          the host's queue 1 first), reauth (exchanges on
                          one queue until refused), renegotiate (a second
                          Negotiate mid-exchange), flood:NQN (exchanges as
                          NQN without its secret until one is refused,
                          this host's Property Get answered after each);
                          prints what the host saw
  qd1 NQN WRITES READS    an admin and an I/O queue, a reset of every
                          zone, then WRITES writes and READS reads of 4 KiB
                          one at a time; prints the commands sent
  ops NAME NQN NSID OP... an admin and an I/O queue, then OPs in order on
                          namespace NSID, each waited for as long as it
                          takes: w:LBA:TAG (4 KiB of the byte TAG), W:LBA:TAG
                          (the same with FUA), a:ZSLBA:TAG (a zone append
                          of 4 KiB, which must land at the zone's start),
                          r:LBA:TAG (4 KiB that must be TAG), f (flush),
                          z:LBA (the zone's reset), F:N:FILE (N flushes
                          sent at once, answered at the end, then FILE
                          created), t:FILE (waits up to 60 s for FILE);
                          prints "NAME done", or the first failure
  gen-secret HEX [XX]     (alone) a DHHC-1 secret for the key HEX

As a module, for tests that watch the server's memory: hostile(), a
host that sends failing commands and never reads (flood()), and
discovery_hog(), discovery controllers that try to make the server
hold R2T buffers.
"""
import base64
import ctypes
import hashlib
import hmac
import os
import select
import socket
import struct
import sys
import time
import zlib

CRC_TABLE = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    CRC_TABLE.append(c)


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = (crc >> 8) ^ CRC_TABLE[(crc ^ b) & 0xFF]
    return crc ^ 0xFFFFFFFF


class Host:
    def __init__(self, addr, port, hdgst=False, ddgst=False):
        self.sock = socket.create_connection((addr, int(port)), timeout=10)
        self.hdgst, self.ddgst = hdgst, ddgst
        self.cid = 0
        self.cntlid = 0

    def recv_exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise EOFError("server closed the connection")
            buf += chunk
        return buf

    def recv_pdu(self):
        ch = self.recv_exact(8)
        ptype, flags, hlen, pdo, plen = struct.unpack("<BBBBI", ch)
        rest = self.recv_exact(plen - 8)
        return ptype, flags, hlen, pdo, ch + rest

    def ic(self):
        pdu = bytearray(128)
        struct.pack_into("<BBBBI", pdu, 0, 0, 0, 128, 0, 128)
        pdu[11] = (1 if self.hdgst else 0) | (2 if self.ddgst else 0)
        self.sock.sendall(pdu)
        ptype, _, _, _, resp = self.recv_pdu()
        assert ptype == 1, "not an ICResp: type %d" % ptype
        return resp

    def hd(self, header):
        return struct.pack("<I", crc32c(header)) if self.hdgst else b""

    def command(self, sqe, data=b"", qid_sqhd=None):
        """Sends a capsule; returns (status, result, c2h data)."""
        hlen = 72
        hdl = 4 if self.hdgst else 0
        ddl = 4 if self.ddgst and data else 0
        pdo = hlen + hdl if data else 0
        plen = hlen + hdl + len(data) + ddl
        flags = (1 if self.hdgst else 0) | (2 if ddl else 0)
        header = struct.pack("<BBBBI", 4, flags, hlen, pdo, plen) + sqe
        pdu = header + self.hd(header) + data
        if ddl:
            pdu += struct.pack("<I", crc32c(data))
        self.sock.sendall(pdu)
        got = b""
        while True:
            ptype, flags, hlen, pdo, pdu = self.recv_pdu()
            if ptype == 5:
                result, sqhd, sqid, cid, status = struct.unpack_from(
                    "<QHHHH", pdu, 8)
                return status >> 1, result, got
            if ptype == 7:
                datal = struct.unpack_from("<I", pdu, 16)[0]
                got += pdu[pdo:pdo + datal]
            elif ptype == 9:
                cccid, ttag, off, length = struct.unpack_from("<HHII", pdu, 8)
                self.h2c(cccid, ttag, self.pending[off:off + length])
            elif ptype == 3:
                raise EOFError("C2HTermReq, FES %d" %
                               struct.unpack_from("<H", pdu, 8)[0])

    def h2c(self, cccid, ttag, data, chunk=65536):
        for off in range(0, len(data), chunk):
            part = data[off:off + chunk]
            last = off + chunk >= len(data)
            hdl = 4 if self.hdgst else 0
            ddl = 4 if self.ddgst else 0
            flags = (4 if last else 0) | (1 if self.hdgst else 0) | \
                (2 if self.ddgst else 0)
            header = struct.pack("<BBBBIHHII4x", 6, flags, 24, 24 + hdl,
                                 24 + hdl + len(part) + ddl, cccid, ttag,
                                 off, len(part))
            pdu = header + self.hd(header) + part
            if ddl:
                pdu += struct.pack("<I", crc32c(part))
            self.sock.sendall(pdu)

    def sqe(self, opcode, nsid=0, cdw=(), sgl_len=0, sgl_type=0x5A, fctype=None):
        self.cid += 1
        b = bytearray(64)
        struct.pack_into("<BBHI", b, 0, opcode, 0x40, self.cid, nsid)
        if fctype is not None:
            b[4] = fctype
        struct.pack_into("<QI", b, 24, 0, sgl_len)
        b[39] = sgl_type
        for i, v in enumerate(cdw):
            struct.pack_into("<I", b, 40 + 4 * i, v & 0xFFFFFFFF)
        return bytes(b)

    def connect(self, qid, subnqn, hostnqn, cntlid=0xFFFF, sqsize=31, kato=0):
        data = bytearray(1024)
        data[0:16] = b"\x11" * 16
        struct.pack_into("<H", data, 16, cntlid)
        data[256:256 + len(subnqn)] = subnqn.encode()
        data[512:512 + len(hostnqn)] = hostnqn.encode()
        sqe = self.sqe(0x7F, fctype=1, cdw=(qid << 16, sqsize, kato),
                       sgl_len=1024, sgl_type=0x01)
        st, res, _ = self.command(sqe, bytes(data))
        if st == 0 and qid == 0:
            self.cntlid = res & 0xFFFF
        return st, res

    def prop_get(self, offset, eight=False):
        return self.command(self.sqe(0x7F, fctype=4,
                                     cdw=(1 if eight else 0, offset)))[:2]

    def prop_set(self, offset, value):
        return self.command(self.sqe(0x7F, fctype=0,
                                     cdw=(0, offset, value)))[:2]

    def enable(self):
        st, cap = self.prop_get(0, True)
        css = (cap >> 37) & 0xFF
        cc = 1 | ((6 if css & 0x40 else 0) << 4) | (6 << 16) | (4 << 20)
        assert self.prop_set(0x14, cc)[0] == 0
        st, csts = self.prop_get(0x1C)
        assert st == 0 and csts & 1, "CSTS.RDY not set: %#x" % csts
        return cap

    def set_cc(self, cc):
        assert self.prop_set(0x14, cc)[0] == 0
        st, csts = self.prop_get(0x1C)
        assert st == 0
        return csts

    def keep_alive(self):
        return self.command(self.sqe(0x18))[0]

    def features(self, fid, value=None):
        """Set Features (with a value) or Get Features: (status, result)."""
        if value is None:
            return self.command(self.sqe(0x0A, cdw=(fid,)))[:2]
        return self.command(self.sqe(0x09, cdw=(fid, value)))[:2]

    def identify(self, cns, nsid=0, csi=0):
        return self.command(self.sqe(6, nsid, cdw=(cns, csi << 24),
                                     sgl_len=4096))

    def get_log(self, lid, length, csi=0, offset=0):
        numd = length // 4 - 1
        return self.command(self.sqe(2, 0xFFFFFFFF,
                                     cdw=(lid | (numd & 0xFFFF) << 16,
                                          numd >> 16, offset, offset >> 32,
                                          csi << 24),
                                     sgl_len=length))

    def write(self, nsid, slba, data, bs, opcode=1):
        nlb = len(data) // bs
        self.pending = data
        inline = len(data) <= 8192
        sqe = self.sqe(opcode, nsid, cdw=(slba, slba >> 32, nlb - 1),
                       sgl_len=len(data), sgl_type=0x01 if inline else 0x5A)
        return self.command(sqe, data if inline else b"")

    def auth_send(self, msg):
        spsp = 1 << 8 | 1 << 16 | 0xE9 << 24
        sqe = self.sqe(0x7F, fctype=5, cdw=(spsp, len(msg)),
                       sgl_len=len(msg), sgl_type=0x01)
        return self.command(sqe, msg)[0]

    def auth_receive(self, al=4096):
        spsp = 1 << 8 | 1 << 16 | 0xE9 << 24
        st, _, data = self.command(self.sqe(0x7F, fctype=6, cdw=(spsp, al),
                                            sgl_len=al))
        return st, data

    def read(self, nsid, slba, nlb, bs):
        return self.command(self.sqe(2, nsid, cdw=(slba, slba >> 32, nlb - 1),
                                     sgl_len=nlb * bs))


DISCOVERY = "nqn.2014-08.org.nvmexpress.discovery"
HOSTNQN = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-4000-8000-000000000001"
# A host --nvme-allow-host leaves out, in the tests that use it.
REFUSED = "nqn.2014-08.org.example:refused"

# Statuses with DNR, as the CQE's status field holds them (>> 1).
INVALID_OPCODE = 0x4001
INVALID_FIELD = 0x4002
INVALID_NS = 0x400B
CMD_SEQ_ERROR = 0x400C
SGL_INVALID_DATA = 0x400F
CONNECT_INVALID_HOST = 0x4184


def discover(addr, port):
    h = Host(addr, port)
    h.ic()
    st, _ = h.connect(0, DISCOVERY, HOSTNQN)
    assert st == 0, "discovery Connect: status %#x" % st
    h.enable()
    st, _, log = h.get_log(0x70, 1024 + 2 * 1024)
    assert st == 0, "discovery log: status %#x" % st
    numrec = struct.unpack_from("<Q", log, 8)[0]
    for i in range(numrec):
        e = log[1024 + 1024 * i:2048 + 1024 * i]
        print(e[256:512].rstrip(b"\0").decode(), "subtype", e[2],
              e[512:768].decode().strip(), e[32:64].decode().strip(),
              "treq", e[3], "sectype", e[768])


def smoke(addr, port, nqn):
    a = Host(addr, port, hdgst=True, ddgst=True)
    a.ic()
    st, _ = a.connect(0, nqn, HOSTNQN, kato=5000)
    assert st == 0, "admin Connect: %#x" % st
    cap = a.enable()
    st, _, idc = a.identify(1)
    assert st == 0
    print("mdts", idc[77], "nn", struct.unpack_from("<I", idc, 516)[0],
          "subnqn", idc[768:1024].rstrip(b"\0").decode())
    st, _, ns = a.identify(0, 1)
    nsze = struct.unpack_from("<Q", ns, 0)[0]
    lbads = ns[128 + 2]
    bs = 1 << lbads
    print("nsze", nsze, "bs", bs)
    io = Host(addr, port, hdgst=True, ddgst=True)
    io.ic()
    # As the Linux host: the queue's size within CAP.MQES.
    st, _ = io.connect(1, nqn, HOSTNQN, cntlid=a.cntlid,
                       sqsize=min(31, cap & 0xFFFF))
    assert st == 0, "I/O Connect: %#x" % st
    # Every zone reset first (Zone Management Send, Select All), so
    # that it runs again on one server.
    st, _, _ = io.command(io.sqe(0x79, 1, cdw=(0, 0, 0, 0x04 | 1 << 8)))
    assert st == 0, "reset: %#x" % st
    data = bytes(range(256)) * (65536 // 256)
    st, _, _ = io.write(1, 0, data, bs)
    assert st == 0, "write: %#x" % st
    st, _, back = io.read(1, 0, len(data) // bs, bs)
    assert st == 0 and back == data, "read: %#x" % st
    st, res, _ = io.write(1, 0, data[:bs], bs, opcode=0x7D)
    print("append status %#x lba %d" % (st, res))
    print("ok")


def qd1(addr, port, nqn, writes, reads):
    """Commands one at a time, for a server's --stats to count."""
    a = admin_queue(addr, port, nqn)
    io = Host(addr, port)
    io.ic()
    assert io.connect(1, nqn, HOSTNQN, cntlid=a.cntlid)[0] == 0
    st, _, _ = io.command(io.sqe(0x79, 1, cdw=(0, 0, 0, 0x04 | 1 << 8)))
    assert st == 0, "reset: %#x" % st
    for i in range(writes):
        assert io.write(1, 8 * i, bytes([i & 0xFF]) * 4096, 512)[0] == 0
    for i in range(reads):
        assert io.read(1, 0, 8, 512)[0] == 0
    print("commands", a.cid + io.cid)


def ops(addr, port, name, nqn, nsid, todo):
    a = admin_queue(addr, port, nqn)
    io = Host(addr, port)
    io.ic()
    st, _ = io.connect(1, nqn, HOSTNQN, cntlid=a.cntlid)
    assert st == 0, "%s: I/O Connect: %#x" % (name, st)
    # A command held by the server is waited for, however long.
    io.sock.settimeout(None)
    st, _, ns = a.identify(0, nsid)
    assert st == 0, "%s: Identify: %#x" % (name, st)
    bs = 1 << ns[128 + 2]
    sent = 0
    for op in todo:
        kind, *arg = op.split(":")
        if kind == "F":
            # Flushes sent at once, answered at the end; then the file.
            for _ in range(int(arg[0])):
                io.sock.sendall(capsule(io.sqe(0, nsid)))
            sent += int(arg[0])
            open(arg[1], "w").close()
            continue
        if kind == "R":
            # A partial zone report of the zone at LBA sent, then the
            # file; then its reply: that zone, its write pointer 8 blocks
            # in (the FUA write of 4 KiB it waited for).
            lba = int(arg[0])
            io.sock.sendall(capsule(io.sqe(0x7A, nsid, cdw=(
                lba, lba >> 32, 128 // 4 - 1, 1 << 16), sgl_len=128)))
            open(arg[1], "w").close()
            got = b""
            while True:
                ptype, _, _, pdo, pdu = io.recv_pdu()
                if ptype == 7:
                    datal = struct.unpack_from("<I", pdu, 16)[0]
                    got += pdu[pdo:pdo + datal]
                    continue
                st = struct.unpack_from("<H", pdu, 22)[0] >> 1 \
                    if ptype == 5 else -1
                break
            nr, zslba, wp = (struct.unpack_from("<Q", got, o)[0]
                             for o in (0, 80, 88)) if len(got) == 128 \
                else (0, 0, 0)
            if st != 0 or (nr, zslba, wp) != (1, lba, lba + 4096 // bs):
                sys.exit("%s: zone report at LBA %d: PDU type %d, status "
                         "%#x, %d zones, zslba %d, wp %d" %
                         (name, lba, ptype, st, nr, zslba, wp))
            continue
        if kind == "t":
            for _ in range(600):
                if os.path.exists(arg[0]):
                    break
                time.sleep(0.1)
            else:
                sys.exit("%s: %s never came" % (name, arg[0]))
            continue
        lba = int(arg[0]) if arg else 0
        data = bytes([int(arg[1])]) * 4096 if len(arg) > 1 else b""
        result = 0
        if kind in ("w", "W"):
            nlb = len(data) // bs
            io.pending = data
            sqe = io.sqe(1, nsid, cdw=(lba, lba >> 32,
                                       (nlb - 1) | (1 << 30 if kind == "W" else 0)),
                         sgl_len=len(data), sgl_type=0x01)
            st, _, _ = io.command(sqe, data)
        elif kind == "a":
            st, result, _ = io.write(nsid, lba, data, bs, opcode=0x7D)
            if st == 0 and result != lba:
                sys.exit("%s: %s landed at LBA %d" % (name, op, result))
        elif kind == "r":
            st, _, got = io.read(nsid, lba, len(data) // bs, bs)
            if st == 0 and got != data:
                sys.exit("%s: LBA %d holds %r..., not tag %s" %
                         (name, lba, got[:4], arg[1]))
        elif kind == "f":
            st, _, _ = io.command(io.sqe(0, nsid))
        else:
            st, _, _ = io.command(io.sqe(0x79, nsid, cdw=(lba, lba >> 32, 0,
                                                          0x04)))
        if st != 0:
            sys.exit("%s: %s: status %#x" % (name, op, st))
    for _ in range(sent):
        ptype, _, _, _, pdu = io.recv_pdu()
        st = struct.unpack_from("<H", pdu, 22)[0] >> 1 if ptype == 5 else -1
        if st != 0:
            sys.exit("%s: a flush sent at once: PDU type %d, status %#x" %
                     (name, ptype, st))
    print(name, "done")


def capsule(sqe):
    """A CapsuleCmd without digests or data."""
    return struct.pack("<BBBBI", 4, 0, 72, 0, 72) + sqe


def admin_queue(addr, port, nqn, hostnqn=HOSTNQN, kato=0):
    a = Host(addr, port)
    a.ic()
    st, _ = a.connect(0, nqn, hostnqn, kato=kato)
    assert st == 0, "admin Connect: %#x" % st
    a.enable()
    return a


def error_log(addr, port, nqn):
    """A failing Identify and the entry it leaves, newest first."""
    a = admin_queue(addr, port, nqn)
    st = a.identify(0x1F)[0]
    assert st == INVALID_FIELD, "Identify CNS 1Fh: %#x" % st
    cid = a.cid
    st, _, log = a.get_log(0x01, 64 * 64)
    assert st == 0 and len(log) == 64 * 64, "log 01h: %#x" % st
    count, sqid, cmdid, status, loc = struct.unpack_from("<QHHHH", log, 0)
    assert cmdid == cid, "cmdid %d, not %d" % (cmdid, cid)
    print("count %d sqid %d status %#x location %d" % (count, sqid,
                                                     status >> 1, loc))


def hostile(addr, port, nqn, mode):
    """A connection set up for mode, and the command it repeats, which
    fails with the status given:
      identify  Identify before Connect, after a Connect --nvme-allow-host
                refused (the subsystem's host is HOSTNQN, this one REFUSED)
      opcode    an opcode an I/O queue does not serve
      nsid0     a Read of NSID 0 on an I/O queue
      sgl       a Write whose SGL is neither in-capsule nor transport
    The other connections it needs are returned too, to keep them open.
    """
    if mode == "identify":
        h = Host(addr, port)
        h.ic()
        st, _ = h.connect(0, nqn, REFUSED)
        assert st == CONNECT_INVALID_HOST, "Connect: %#x" % st
        return h, [], h.sqe(6, 0, cdw=(1,), sgl_len=4096), CMD_SEQ_ERROR
    a = admin_queue(addr, port, nqn)
    io = Host(addr, port)
    io.ic()
    st, _ = io.connect(1, nqn, HOSTNQN, cntlid=a.cntlid)
    assert st == 0, "I/O Connect: %#x" % st
    if mode == "opcode":
        return io, [a], io.sqe(0xC4, 1), INVALID_OPCODE
    if mode == "nsid0":
        return io, [a], io.sqe(2, 0, cdw=(0, 0, 7), sgl_len=4096), INVALID_NS
    assert mode == "sgl", mode
    return io, [a], io.sqe(1, 1, cdw=(0, 0, 7), sgl_len=4096, sgl_type=0), \
        SGL_INVALID_DATA


def flood(h, sqe, limit, stall=3.0):
    """Sends the command sqe over and over and never reads, until limit
    bytes went or the server took nothing for stall seconds (it stopped
    reading).  Returns the bytes sent."""
    chunk = capsule(sqe) * 16384
    h.sock.setblocking(False)
    sent = off = 0
    while sent < limit:
        if not select.select([], [h.sock], [], stall)[1]:
            break
        try:
            n = h.sock.send(chunk[off:])
        except BlockingIOError:
            continue
        sent += n
        off = (off + n) % len(chunk)
    return sent


def first_pdu(h, sqe):
    """Sends sqe; returns the type of the first PDU back, and the status
    when it is a CapsuleResp."""
    h.sock.sendall(capsule(sqe))
    ptype, _, _, _, pdu = h.recv_pdu()
    return ptype, struct.unpack_from("<H", pdu, 22)[0] >> 1 if ptype == 5 else None


def no_r2t(addr, port, nqn):
    a = admin_queue(addr, port, nqn)
    d = admin_queue(addr, port, DISCOVERY, REFUSED)
    for h, what in ((a, "admin queue"), (d, "discovery controller")):
        for opcode, fctype, want in ((0xC1, None, INVALID_OPCODE),
                                     (0x05, None, INVALID_OPCODE),
                                     (0x09, None, SGL_INVALID_DATA),
                                     (0x7F, 0, SGL_INVALID_DATA)):
            sqe = h.sqe(opcode, fctype=fctype, cdw=(0, 0x14, 0),
                        sgl_len=8000)
            ptype, st = first_pdu(h, sqe)
            if ptype == 9:
                sys.exit("%s: opcode %#x was granted an R2T" % (what, opcode))
            if ptype != 5 or st != want:
                sys.exit("%s: opcode %#x: PDU type %d, status %s, not %#x"
                         % (what, opcode, ptype, st, want))
        print(what, "ok")


def discovery_hog(addr, port, n, per_conn=1032, length=8128):
    """n discovery controllers (a refused host may have them), each
    sending per_conn commands that take no data with a transport SGL of
    length bytes, and for each R2T the data but its last bytes, so that
    the buffers are filled and stay.  Returns the connections and the
    R2Ts granted."""
    conns, r2ts = [], 0
    for _ in range(n):
        h = Host(addr, port)
        h.ic()
        st, _ = h.connect(0, DISCOVERY, REFUSED, sqsize=2047)
        assert st == 0, "discovery Connect: %#x" % st
        h.sock.sendall(b"".join(capsule(h.sqe(0xC1, sgl_len=length))
                                for _ in range(per_conn)))
        h.sock.settimeout(2)
        for _ in range(per_conn):
            try:
                ptype, _, _, _, pdu = h.recv_pdu()
            except socket.timeout:
                break
            if ptype == 9:
                r2ts += 1
                cccid, ttag, _, rlen = struct.unpack_from("<HHII", pdu, 8)
                part = rlen - 128
                h.sock.sendall(struct.pack("<BBBBIHHII4x", 6, 0, 24, 24,
                                           24 + part, cccid, ttag, 0, part)
                               + bytes(part))
        conns.append(h)
    return conns, r2ts


def await_close(h, what):
    h.sock.settimeout(60)
    try:
        if h.sock.recv(1) != b"":
            sys.exit("%s: data instead of a close" % what)
    except socket.timeout:
        sys.exit("%s: still open after 60 s" % what)


def stall(addr, port):
    silent = Host(addr, port)
    after_ic = Host(addr, port)
    after_ic.ic()
    await_close(silent, "a silent connection")
    await_close(after_ic, "a connection stopped after ICReq")
    print("closed")


def keepalive(addr, port, nqn):
    a = admin_queue(addr, port, nqn, kato=1000)
    io = Host(addr, port)
    io.ic()
    st, _ = io.connect(1, nqn, HOSTNQN, cntlid=a.cntlid)
    assert st == 0, "I/O Connect: %#x" % st
    # Longer than the handshake timeout too: KATO keeps them, then ends
    # them.
    await_close(a, "admin queue")
    await_close(io, "I/O queue")
    print("closed")


def kato(addr, port, nqn):
    # 0xFFFFFFFF plus the server's grace wrapped round to 999 ms once.
    a = admin_queue(addr, port, nqn, kato=0xFFFFFFFF)
    b = admin_queue(addr, port, nqn, kato=5000)
    st, res = b.features(0x0F, 0xFFFFFFFF)
    assert st == 0, "Set Features KATO: %#x" % st
    print("kato %#x" % a.features(0x0F)[1], "%#x" % res)
    time.sleep(3)
    for h, how in ((a, "Connect"), (b, "Set Features")):
        try:
            st = h.keep_alive()
        except (EOFError, OSError) as e:
            sys.exit("KATO 0xFFFFFFFF from %s: closed after 3 s of silence "
                     "(%s)" % (how, e))
        assert st == 0, "Keep Alive: %#x" % st
    print("alive")


SEQ_ERROR = 0x400C      # Command Sequence Error, DNR


def io_queue(addr, port, nqn, cntlid):
    io = Host(addr, port)
    io.ic()
    return io, io.connect(1, nqn, HOSTNQN, cntlid=cntlid)[0]


def io_closed(io, what):
    """The I/O queue io must be closed: a read gets no reply."""
    try:
        st = io.read(1, 0, 1, 512)[0]
    except (EOFError, OSError):
        return
    sys.exit("%s: the I/O queue still answers (status %#x)" % (what, st))


def enable(addr, port, nqn):
    a = Host(addr, port)
    a.ic()
    st, _ = a.connect(0, nqn, HOSTNQN)
    assert st == 0, "admin Connect: %#x" % st
    st = a.identify(1)[0]
    assert st == SEQ_ERROR, "Identify before CC.EN: %#x" % st
    st = a.keep_alive()
    assert st == SEQ_ERROR, "Keep Alive before CC.EN: %#x" % st
    io, st = io_queue(addr, port, nqn, a.cntlid)
    assert st == SEQ_ERROR, "I/O Connect before CC.EN: %#x" % st
    a.enable()
    cc = a.prop_get(0x14)[1]
    assert a.identify(1)[0] == 0
    io, st = io_queue(addr, port, nqn, a.cntlid)
    assert st == 0, "I/O Connect: %#x" % st
    assert io.read(1, 0, 1, 512)[0] == 0
    # A reset: CC.EN 1 to 0.
    csts = a.set_cc(cc & ~1)
    assert csts == 0, "CSTS after the reset: %#x" % csts
    io_closed(io, "after CC.EN=0")
    st = a.identify(1)[0]
    assert st == SEQ_ERROR, "Identify after CC.EN=0: %#x" % st
    io, st = io_queue(addr, port, nqn, a.cntlid)
    assert st == SEQ_ERROR, "I/O Connect after CC.EN=0: %#x" % st
    print("reset: Command Sequence Error, I/O queue closed")
    # Enabled again, then a normal shutdown.
    a.enable()
    io, st = io_queue(addr, port, nqn, a.cntlid)
    assert st == 0, "I/O Connect after the reset: %#x" % st
    assert io.read(1, 0, 1, 512)[0] == 0
    csts = a.set_cc(cc | 1 << 14)
    assert csts & 0xD == 0x8, "CSTS after CC.SHN: %#x" % csts
    io_closed(io, "after CC.SHN")
    st = a.identify(1)[0]
    assert st == SEQ_ERROR, "Identify after CC.SHN: %#x" % st
    print("shutdown: CSTS.SHST complete, Command Sequence Error, I/O queue "
          "closed")


def queues(addr, port, nqn, n):
    """n I/O queues of one controller, used at once from a thread each:
    each writes its own zone and reads it back, and fails one read, which
    the admin queue's Error Information log must show under the queue's
    SQID.  A reset closes them all, and so does the admin queue's close.
    """
    import threading
    a = admin_queue(addr, port, nqn)
    st, res = a.features(0x07, (n - 1) | (n - 1) << 16)
    assert st == 0 and (res & 0xFFFF) + 1 >= n, \
        "Set Features Number of Queues: %#x %#x" % (st, res)
    st, _, idns = a.identify(0, 1)
    assert st == 0, "Identify namespace 1: %#x" % st
    nsze = struct.unpack_from("<Q", idns, 0)[0]
    zone_blocks = nsze // 8

    def connect_all(when):
        ios = []
        for q in range(1, n + 1):
            io = Host(addr, port)
            io.ic()
            st, _ = io.connect(q, nqn, HOSTNQN, cntlid=a.cntlid)
            assert st == 0, "I/O queue %d Connect%s: %#x" % (q, when, st)
            ios.append(io)
        return ios

    ios = connect_all("")
    failed, errors = {}, []

    def run(q, io):
        try:
            start = q * zone_blocks
            for i in range(32):
                data = bytes([q, i]) * 2048
                st = io.write(1, start + i * 8, data, 512)[0]
                assert st == 0, "queue %d write %d: %#x" % (q, i, st)
            for i in range(32):
                st, _, back = io.read(1, start + i * 8, 8, 512)
                assert st == 0 and back == bytes([q, i]) * 2048, \
                    "queue %d read %d: %#x" % (q, i, st)
            st = io.read(1, nsze, 1, 512)[0]
            assert st != 0, "queue %d: a read past the end succeeded" % q
            failed[q] = io.cid
        except Exception as e:      # reported by the main thread
            errors.append(str(e))

    threads = [threading.Thread(target=run, args=(q, io))
               for q, io in enumerate(ios, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        sys.exit("; ".join(errors))
    st, _, log = a.get_log(0x01, 64 * 64)
    assert st == 0, "Error Information log: %#x" % st
    logged = set()
    for e in range(64):
        _, sqid, cmdid = struct.unpack_from("<QHH", log, e * 64)
        logged.add((sqid, cmdid))
    for q, cid in failed.items():
        if (q, cid) not in logged:
            sys.exit("the admin queue's error log lacks queue %d's "
                     "failed read (cid %d)" % (q, cid))
    print("%d queues: writes read back, errors logged" % n)
    # A reset closes every I/O queue, whichever loop serves it.
    cc = a.prop_get(0x14)[1]
    a.set_cc(cc & ~1)
    for q, io in enumerate(ios, 1):
        io_closed(io, "queue %d after CC.EN=0" % q)
    a.enable()
    ios = connect_all(" after the reset")
    for q, io in enumerate(ios, 1):
        assert io.read(1, q * zone_blocks, 1, 512)[0] == 0
    print("reset: %d queues closed, connected again" % n)
    # The controller goes with its admin queue's connection.
    a.sock.close()
    for q, io in enumerate(ios, 1):
        await_close(io, "queue %d after the admin queue closed" % q)
    print("admin queue closed: %d queues closed" % n)


# ---- DH-HMAC-CHAP, the host's side ----------------------------------------

AUTH_REQUIRED = 0x4091
HASHES = {1: hashlib.sha256, 2: hashlib.sha384, 3: hashlib.sha512}
GROUP_BITS = {1: 2048, 2: 3072, 3: 4096, 4: 6144, 5: 8192}


def gen_secret(key, transform=0):
    crc = struct.pack("<I", zlib.crc32(key))
    return "DHHC-1:%02d:%s:" % (transform, base64.b64encode(key + crc).decode())


def parse_secret(text):
    _, xx, b64 = text.split(":")[:3]
    raw = base64.b64decode(b64)
    return int(xx), raw[:-4]


def ffdhe_prime(group):
    """The group's prime, as GnuTLS exports it (RFC 7919)."""
    class Datum(ctypes.Structure):
        _fields_ = [("data", ctypes.POINTER(ctypes.c_ubyte)),
                    ("size", ctypes.c_uint)]
    lib = ctypes.CDLL("libgnutls.so.30")
    d = Datum.in_dll(lib, "gnutls_ffdhe_%d_group_prime" % GROUP_BITS[group])
    return int.from_bytes(bytes(d.data[:d.size]), "big")


def transformed(secret, nqn):
    xx, key = parse_secret(secret)
    if xx == 0:
        return key
    return hmac.new(key, nqn.encode() + b"NVMe-over-Fabrics",
                    HASHES[xx]).digest()


def auth_response(hid, key, chal, seq, tid, role, nqn1, nqn2):
    msg = chal + struct.pack("<IHB", seq, tid, 0) + role + nqn1.encode() + \
        b"\0" + nqn2.encode()
    return hmac.new(key, msg, HASHES[hid]).digest()


class Chap:
    """One queue's exchange, as the Linux host runs it."""

    def __init__(self, h, hostnqn, subnqn, secret, ctrl_secret, hid, group):
        self.h, self.hostnqn, self.subnqn = h, hostnqn, subnqn
        self.secret, self.ctrl_secret = secret, ctrl_secret
        self.hid, self.group = hid, group
        self.tid = 1

    def negotiate(self):
        desc = bytearray(64)
        desc[0], desc[2], desc[3] = 1, 1, 1
        desc[4], desc[34] = self.hid, self.group
        msg = struct.pack("<BBHHBB", 0, 0, 0, self.tid, 0, 1) + bytes(desc)
        st = self.h.auth_send(msg)
        assert st == 0, "Negotiate: status %#x" % st

    def challenge(self):
        st, d = self.h.auth_receive()
        assert st == 0, "Authentication Receive: status %#x" % st
        if d[1] == 0xF1:
            return None
        assert d[1] == 0x01, "not a Challenge: %r" % d[:8]
        hl, hid, gid, dhvlen, seq = d[6], d[8], d[9], \
            struct.unpack_from("<H", d, 10)[0], struct.unpack_from("<I", d, 12)[0]
        assert (hid, gid) == (self.hid, self.group), (hid, gid)
        c1, dhv = d[16:16 + hl], d[16 + hl:16 + hl + dhvlen]
        return hl, seq, c1, dhv

    def skey_and_value(self, dhv):
        if self.group == 0:
            return None, b""
        p = ffdhe_prime(self.group)
        x = int.from_bytes(os.urandom(64), "big")
        n = (p.bit_length() + 7) // 8
        pub = pow(2, x, p).to_bytes(n, "big")
        skey = pow(int.from_bytes(dhv, "big"), x, p).to_bytes(n, "big")
        return skey, pub

    def augment(self, skey, c):
        if skey is None:
            return c
        hk = HASHES[self.hid](skey).digest()
        return hmac.new(hk, c, HASHES[self.hid]).digest()

    def reply(self, chal, tid=None):
        hl, seq, c1, dhv = chal
        self.skey, pub = self.skey_and_value(dhv)
        key = transformed(self.secret, self.hostnqn)
        r = auth_response(self.hid, key, self.augment(self.skey, c1), seq,
                          self.tid, b"HostHost", self.hostnqn, self.subnqn)
        self.c2 = hashlib.sha512(b"c2" + c1).digest()[:hl] \
            if self.ctrl_secret else bytes(hl)
        self.s2 = 7 if self.ctrl_secret else 0
        msg = struct.pack("<BBHHBBBBHI", 1, 2, 0,
                          self.tid if tid is None else tid, hl, 0,
                          1 if self.ctrl_secret else 0, 0, len(pub),
                          self.s2) + r + self.c2 + pub
        return msg

    def success1(self):
        """'ok', 'failure1 N', or 'controller mismatch' (Failure2 sent)."""
        st, d = self.h.auth_receive()
        assert st == 0, "Authentication Receive: status %#x" % st
        if d[1] == 0xF1:
            return "failure1 %d" % d[7]
        assert d[1] == 0x03, "not Success1: %r" % d[:8]
        if not self.ctrl_secret:
            return "ok"
        hl = d[6]
        assert d[8] == 1, "Success1 without the controller's response"
        key = transformed(self.ctrl_secret, self.subnqn)
        want = auth_response(self.hid, key, self.augment(self.skey, self.c2),
                             self.s2, self.tid, b"Controller", self.subnqn,
                             self.hostnqn)
        if not hmac.compare_digest(want, bytes(d[16:16 + hl])):
            msg = struct.pack("<BBHHBB", 1, 0xF0, 0, self.tid, 1, 1)
            self.h.auth_send(msg)
            return "controller mismatch"
        assert self.h.auth_send(struct.pack("<BBHH10x", 1, 4, 0,
                                            self.tid)) == 0
        return "ok"

    def run(self, tid=None, replayed=None):
        self.negotiate()
        chal = self.challenge()
        if chal is None:
            return "failure1 at the challenge"
        msg = replayed or self.reply(chal, tid)
        self.last_reply = msg
        st = self.h.auth_send(msg)
        assert st == 0, "Reply: status %#x" % st
        return self.success1()


def auth_queue(h, args, qid, cntlid=0xFFFF):
    nqn, hostnqn, secret, ctrl, hid, group = args
    h.ic()
    st, res = h.connect(qid, nqn, hostnqn, cntlid=cntlid)
    assert st == 0, "Connect: %#x" % st
    assert res & 1 << 17, "Connect's AUTHREQ.ATR not set: %#x" % res
    return Chap(h, hostnqn, nqn, secret, ctrl, hid, group)


def refused_after(h, what):
    """After a failed exchange the queue is closed, or refuses all."""
    try:
        st = h.identify(1)[0]
    except (EOFError, OSError):
        return "%s, queue closed" % what
    assert st == AUTH_REQUIRED, "Identify after %s: %#x" % (what, st)
    return "%s, Identify: Authentication Required" % what


def flood_dh(addr, port, nqn, hostnqn, other, group, limit=300):
    """Exchanges of hostnqn without its secret until one is refused (at
    most limit); other, an admin queue of another host, answers a
    Property Get after each.  Returns what happened."""
    challenges = 0
    for _ in range(limit):
        h = Host(addr, port)
        h.ic()
        st, _ = h.connect(0, nqn, hostnqn)
        assert st == 0, "Connect: %#x" % st
        chap = Chap(h, hostnqn, nqn, None, None, 1, group)
        chap.negotiate()
        chal = chap.challenge()
        h.sock.close()
        st = other.prop_get(0x1c)[0]            # CSTS
        assert st == 0, "another host's Property Get: %#x" % st
        if chal is None:
            return "refused after %s challenges, the other host answered" \
                % ("some" if challenges > 0 else "no")
        challenges += 1
    raise SystemExit("%d exchanges without a secret, none refused" % limit)


def auth(addr, port, nqn, hostnqn, secret, ctrl, hid, group, mode):
    args = (nqn, hostnqn, secret, None if ctrl == "-" else ctrl, int(hid),
            int(group))
    a = Host(addr, port)
    chap = auth_queue(a, args, 0)
    if mode == "skip":
        a.enable()
        st = a.identify(1)[0]
        assert st == AUTH_REQUIRED, "Identify unauthenticated: %#x" % st
        io = Host(addr, port)
        io.ic()
        st, res = io.connect(1, nqn, hostnqn, cntlid=a.cntlid)
        assert st == 0 and res & 1 << 17, "I/O Connect: %#x %#x" % (st, res)
        st = io.read(1, 0, 1, 512)[0]
        assert st == AUTH_REQUIRED, "read unauthenticated: %#x" % st
        print("skipped: Identify and read: Authentication Required")
        return
    if mode == "replay":
        assert chap.run() == "ok", "the first exchange failed"
        old = chap.last_reply
        b = Host(addr, port)
        chap = auth_queue(b, args, 0)
        print(refused_after(b, "replayed reply: " + chap.run(replayed=old)))
        return
    if mode == "stall":
        chap.negotiate()
        await_close(a, "a host silent after Negotiate")
        print("stalled: closed")
        return
    if mode == "bad-tid":
        print(refused_after(a, "bad transaction: " + chap.run(tid=chap.tid + 1)))
        return
    if mode == "squat":
        # Another connection that knows the host NQN and the CNTLID, but
        # not the secret, connects the host's queue 1 first and stays:
        # the host's own queue 1 must still connect and authenticate,
        # and the squatter, never authenticated, gets no I/O through.
        assert chap.run() == "ok", "the admin queue's exchange failed"
        a.enable()
        squatter = Host(addr, port)
        squatter.ic()
        st, res = squatter.connect(1, nqn, hostnqn, cntlid=a.cntlid)
        assert st == 0, "the squatter's Connect: %#x" % st
        io = Host(addr, port)
        st = auth_queue(io, args, 1, a.cntlid).run()
        assert st == "ok", "the host's queue 1 beside a squatter: %s" % st
        assert io.read(1, 0, 1, 512)[0] == 0, "the host's read"
        st = squatter.read(1, 0, 1, 512)[0]
        assert st == AUTH_REQUIRED, "the squatter's read: %#x" % st
        print("squatter refused, host's queue 1 authenticated")
        return
    if mode == "reauth":
        # An authenticated queue re-authenticates a bounded number of
        # times: the exchange after the limit fails.
        runs, out = 0, "ok"
        while runs < 10 and out == "ok":
            out = chap.run()
            runs += out == "ok"
        print("exchanges on one queue: %d ok, then %s" % (runs, out))
        return
    if mode == "renegotiate":
        # A second Negotiate in the middle of an exchange ends it.
        chap.negotiate()
        chap.negotiate()
        st, d = a.auth_receive()
        assert st == 0 and d[1] == 0xF1, "after two Negotiates: %r" % d[:8]
        print(refused_after(a, "second Negotiate: failure1 %d" % d[7]))
        return
    if mode.startswith("flood:"):
        # Without its secret, connections that name the host NQN after
        # "flood:", Negotiate and take the Challenge, each costing the
        # server an exponentiation, until the server refuses one; this
        # host's admin queue must answer all along.
        assert chap.run() == "ok", "the other host's exchange failed"
        a.enable()
        print(flood_dh(addr, port, nqn, mode[6:], a, int(group)))
        return
    if mode == "wrong-ctrl":
        xx, key = parse_secret(chap.ctrl_secret)
        chap.ctrl_secret = gen_secret(bytes(b ^ 1 for b in key), xx)
    out = chap.run()
    if out != "ok":
        print(refused_after(a, out))
        return
    a.enable()
    io = Host(addr, port)
    st = auth_queue(io, args, 1, a.cntlid).run()
    assert st == "ok", "I/O queue: %s" % st
    data = bytes(range(256)) * 16
    st, _, _ = io.command(io.sqe(0x79, 1, cdw=(0, 0, 0, 0x04 | 1 << 8)))
    assert st == 0, "reset: %#x" % st
    assert io.write(1, 0, data, 512)[0] == 0
    st, _, back = io.read(1, 0, len(data) // 512, 512)
    assert st == 0 and back == data, "read: %#x" % st
    print("authenticated, I/O done")


def main():
    if sys.argv[1] == "gen-secret":
        print(gen_secret(bytes.fromhex(sys.argv[2]),
                         int(sys.argv[3]) if len(sys.argv) > 3 else 0))
        return
    addr, port, cmd = sys.argv[1], sys.argv[2], sys.argv[3]
    if cmd == "ic":
        resp = Host(addr, port).ic()
        print("maxh2cdata", struct.unpack_from("<I", resp, 12)[0])
    elif cmd == "discover":
        discover(addr, port)
    elif cmd == "smoke":
        smoke(addr, port, sys.argv[4])
    elif cmd == "connect":
        h = Host(addr, port)
        h.ic()
        st, res = h.connect(0, sys.argv[4], sys.argv[5])
        print("%#x %#x" % (st, res))
    elif cmd == "stall":
        stall(addr, port)
    elif cmd == "keepalive":
        keepalive(addr, port, sys.argv[4])
    elif cmd == "kato":
        kato(addr, port, sys.argv[4])
    elif cmd == "enable":
        enable(addr, port, sys.argv[4])
    elif cmd == "no-r2t":
        no_r2t(addr, port, sys.argv[4])
    elif cmd == "queues":
        queues(addr, port, sys.argv[4], int(sys.argv[5]))
    elif cmd == "error-log":
        error_log(addr, port, sys.argv[4])
    elif cmd == "qd1":
        qd1(addr, port, sys.argv[4], int(sys.argv[5]), int(sys.argv[6]))
    elif cmd == "ops":
        ops(addr, port, sys.argv[4], sys.argv[5], int(sys.argv[6]),
            sys.argv[7:])
    elif cmd == "auth":
        auth(addr, port, *sys.argv[4:11])
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
