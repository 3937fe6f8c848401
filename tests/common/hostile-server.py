#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A hostile or broken zonednull server, for the client side's tests.

    hostile-server.py SOCKET CASE

Serves, on the Unix socket SOCKET, one device "nullb0" as a plain NBD
server (fixed newstyle, simple replies) with its control export
"nullb0/control" (zonednull-control(5)), and breaks one rule per CASE:

  good               a valid device of 8 zones of 1 MiB, all EMPTY
  zone-not-pow2      the header's zone_sectors is 3000
  capacity-overflow  capacity 2^55 sectors, whose bytes wrap to 0
  cap-gt-size        zone_capacity, and each capacity, twice the zone size
  many-zones         nr_zones 2^32 - 1 on an 8 MiB device
  zone-len-huge      zone 1's len is 2^55 sectors
  wp-outside         zone 2 is IMP_OPEN with its write pointer past the zone
  bad-type           zone 1's type is 7
  bad-cond           zone 1's condition is 9
  geometry-changes   each control connection's first header read is
                     valid, every later one has a zone_sectors of 0
  silent             accepts connections and never says a word
  hang               negotiates, then never answers a request
  trickle            answers requests one byte every 0.5 s
  data-hang          the control export works; data requests get no answer

It runs until killed.  Nothing of zonednull is imported: this is the
server the client library has to distrust.
"""

import os
import socket
import socketserver
import struct
import sys
import threading
import time

NBDMAGIC = 0x4E42444D41474943
IHAVEOPT = 0x49484156454F5054
REPLY_MAGIC = 0x0003E889045565A9
REQUEST_MAGIC = 0x25609513
SIMPLE_REPLY_MAGIC = 0x67446698

OPT_ABORT, OPT_INFO, OPT_GO = 2, 6, 7
REP_ACK, REP_INFO = 1, 3
REP_ERR_UNSUP, REP_ERR_UNKNOWN = 0x80000001, 0x80000006
CMD_READ, CMD_WRITE, CMD_DISC = 0, 1, 2

SECTOR = 512
U64 = (1 << 64) - 1

sock_path, case = sys.argv[1], sys.argv[2]

# The device as a valid zonednull server would describe it.
geo = dict(nr_zones=8, capacity=8 * 2048, zone_sectors=2048,
           zone_capacity=2048, nr_conv=0, max_open=0, max_active=0,
           block_size=512, max_sectors=2560, flags=0, max_append=2048)
if case == "zone-not-pow2":
    geo.update(zone_sectors=3000, zone_capacity=3000, nr_zones=6)
elif case == "capacity-overflow":
    geo.update(capacity=1 << 55, zone_sectors=1 << 52, zone_capacity=1 << 52,
               nr_zones=8)
elif case == "cap-gt-size":
    geo.update(zone_capacity=4096)
elif case == "many-zones":
    geo.update(nr_zones=(1 << 32) - 1)


def zone(i):
    """Descriptor i: (start, len, capacity, wp, type, cond)."""
    zs = geo["zone_sectors"]
    start = i * zs
    length = min(zs, max(geo["capacity"] - start, 0))
    cap = geo["zone_capacity"]
    wp, ztype, cond = start, 2, 1
    if case == "zone-len-huge" and i == 1:
        length = 1 << 55
    if case == "wp-outside" and i == 2:
        cond, wp = 2, start + 5000
    if case == "bad-type" and i == 1:
        ztype = 7
    if case == "bad-cond" and i == 1:
        cond = 9
    return start, length, cap, wp, ztype, cond


def header(conn_state):
    zs = geo["zone_sectors"]
    conn_state["header_reads"] += 1
    if case == "geometry-changes" and conn_state["header_reads"] > 1:
        zs = 0
    page = struct.pack(">QIIIIQQQIIIIIIIIIIQIIQQ",
                       0x5A4F4E45444E554C, 1, 4096, 64, geo["nr_zones"],
                       geo["capacity"], zs, geo["zone_capacity"],
                       geo["nr_conv"], geo["max_open"], geo["max_active"],
                       geo["block_size"], geo["max_sectors"], geo["flags"],
                       0, 0, 0, geo["max_append"],
                       conn_state["seq"], conn_state["op"], 0,
                       conn_state["sector"], conn_state["nr_sectors"])
    return page + bytes(4096 - len(page))


def control_size():
    size = max(4096 + 64 * geo["nr_zones"], 32 + SECTOR * geo["max_append"])
    return (size + 4095) // 4096 * 4096


def control_read(conn_state, offset, count):
    out = bytearray()
    end = offset + count
    if offset < 4096:
        out += header(conn_state)[offset:min(end, 4096)]
        offset = min(end, 4096)
    while offset < end:
        i, within = divmod(offset - 4096, 64)
        start, length, cap, wp, ztype, cond = zone(i)
        desc = struct.pack(">QQQQBB", start & U64, length & U64, cap & U64,
                           wp & U64, ztype, cond)
        desc += bytes(64 - len(desc))
        take = min(64 - within, end - offset)
        out += desc[within:within + take]
        offset += take
    return bytes(out)


def control_write(conn_state, data):
    magic, op, sector, nr_sectors, _ = struct.unpack(">IIQQQ", data[:32])
    conn_state.update(seq=conn_state["seq"] + 1, op=op, sector=sector,
                      nr_sectors=nr_sectors)


class Handler(socketserver.BaseRequestHandler):
    def recv(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.request.recv(n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return buf

    def send(self, data):
        if case == "trickle":
            for b in data:
                self.request.sendall(bytes([b]))
                time.sleep(0.5)
        else:
            self.request.sendall(data)

    def opt_reply(self, opt, rtype, data=b""):
        self.request.sendall(struct.pack(">QIII", REPLY_MAGIC, opt, rtype,
                                         len(data)) + data)

    def handle(self):
        try:
            self.serve()
        except (EOFError, ConnectionError):
            pass

    def serve(self):
        if case == "silent":
            time.sleep(3600)
            return
        self.request.sendall(struct.pack(">QQH", NBDMAGIC, IHAVEOPT, 3))
        self.recv(4)
        export = None
        while export is None:
            _, opt, length = struct.unpack(">QII", self.recv(16))
            data = self.recv(length)
            if opt == OPT_ABORT:
                self.opt_reply(opt, REP_ACK)
                return
            if opt not in (OPT_GO, OPT_INFO):
                self.opt_reply(opt, REP_ERR_UNSUP)
                continue
            (namelen,) = struct.unpack(">I", data[:4])
            name = data[4:4 + namelen].decode(errors="replace")
            if name in ("", "nullb0") or name.startswith("nullb0/session/"):
                kind, size, tflags = "data", geo["capacity"] * SECTOR, 1 | 4 | 32
            elif name == "nullb0/control":
                kind, size, tflags = "control", control_size(), 1
            else:
                self.opt_reply(opt, REP_ERR_UNKNOWN)
                continue
            self.opt_reply(opt, REP_INFO,
                           struct.pack(">HQH", 0, size & U64 & ((1 << 63) - 1),
                                       tflags))
            self.opt_reply(opt, REP_ACK)
            if opt == OPT_GO:
                export = kind
        state = dict(seq=0, op=0, sector=0, nr_sectors=0, header_reads=0)
        while True:
            magic, _, cmd, cookie, offset, count = struct.unpack(
                ">IHHQQI", self.recv(28))
            data = self.recv(count) if cmd == CMD_WRITE else b""
            if cmd == CMD_DISC:
                return
            if case == "hang" or (case == "data-hang" and export == "data"):
                time.sleep(3600)
                return
            reply = struct.pack(">IIQ", SIMPLE_REPLY_MAGIC, 0, cookie)
            if cmd == CMD_READ:
                reply += (control_read(state, offset, count)
                          if export == "control" else bytes(count))
            elif cmd == CMD_WRITE and export == "control" and offset == 0:
                control_write(state, data)
            self.send(reply)


class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


if os.path.exists(sock_path):
    os.unlink(sock_path)
Server(sock_path, Handler).serve_forever()
