# SPDX-License-Identifier: BSD-3-Clause
# A raw NBD client: fixed newstyle, NBD_OPT_GO, simple replies.
import socket, struct

IHAVEOPT = 0x49484156454F5054

def recv_exact(s, n, piece=None):
    """n bytes, read piece bytes at a time at most (None: all at once)."""
    b = b""
    while len(b) < n:
        x = s.recv(min(n - len(b), piece or n))
        if not x:
            raise EOFError("EOF after %d of %d bytes" % (len(b), n))
        b += x
    return b

def connect(path):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.settimeout(120)          # only a server that never answers fails
    s.sendall(struct.pack(">I", 3)
              + struct.pack(">QII", IHAVEOPT, 7, 6) + struct.pack(">IH", 0, 0))
    recv_exact(s, 18)
    while True:
        _, _, typ, n = struct.unpack(">QIII", recv_exact(s, 20))
        recv_exact(s, n)
        if typ == 1:
            return s
        if typ & 0x80000000:
            raise SystemExit("NBD_OPT_GO refused")

def request(typ, cookie, off, n, data=b""):
    return struct.pack(">IHHQQI", 0x25609513, 0, typ, cookie, off, n) + data

DISC = request(2, 0, 0, 0)

def results(target):
    """The results a request that would have succeeded may have."""
    return (0,) if target == "server" else (0, 108)

def replies(s, reads):
    """Replies until the server closes: {cookie: errno}; reads maps the
    cookies of reads to their lengths."""
    got = {}
    while True:
        try:
            head = recv_exact(s, 16)
        except EOFError as e:
            if str(e).startswith("EOF after 0 "):
                return got
            raise
        magic, err, cookie = struct.unpack(">IIQ", head)
        assert magic == 0x67446698, hex(magic)
        if err == 0 and cookie in reads:
            recv_exact(s, reads[cookie])
        got[cookie] = err
