#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""NVMe/TCP TLS keys as a host makes and derives them (TP 8011), written
independently of the server's proto/nvme/tls-psk.c, for its tests.

  nvme-tls-key.py gen HH SEEDHEX
      a configured key in the interchange format, NVMeTLSkey-1:HH:...:,
      from 32 bytes of SEEDHEX (as `nvme gen-tls-key --secret`);
  nvme-tls-key.py derive KEY HOSTNQN SUBNQN VERSION [compat]
      the PSK identity (version 0 or 1) and the TLS PSK in hex, one a
      line, derived as nvme-cli 2.15 does, or as before it (compat).
"""
import base64
import hashlib
import hmac
import struct
import sys
import zlib


def gen(hh, seed):
    key = bytes.fromhex(seed)
    assert len(key) == 32
    raw = key + struct.pack("<I", zlib.crc32(key))
    return "NVMeTLSkey-1:%s:%s:" % (hh, base64.b64encode(raw).decode())


def parse(text):
    _, hh, b64, _ = text.split(":")
    raw = base64.b64decode(b64)
    key, crc = raw[:-4], struct.unpack("<I", raw[-4:])[0]
    assert zlib.crc32(key) == crc, "bad CRC"
    return int(hh), key


def expand_label(secret, label, context, length, compat):
    prk = hmac.new(b"\0" * 32, secret, hashlib.sha256).digest()
    label = b"tls13 " + label
    if compat:
        info = struct.pack("<H", length) + label + context
    else:
        info = (struct.pack(">H", length) + bytes([len(label)]) + label +
                bytes([len(context)]) + context)
    # One block of HKDF-Expand: the keys are at most a hash long.
    return hmac.new(prk, info + b"\x01", hashlib.sha256).digest()[:length]


def derive(text, hostnqn, subnqn, version, compat):
    hh, key = parse(text)
    retained = key if hh == 0 else expand_label(
        key, b"HostNQN", hostnqn.encode(), len(key), compat)
    if version == 0:
        identity = "NVMe0R01 %s %s" % (hostnqn, subnqn)
        context = identity
    else:
        mac = hmac.new(retained, ("%s %s NVMe-over-Fabrics" %
                                  (hostnqn, subnqn)).encode(),
                       hashlib.sha256).digest()
        digest = base64.b64encode(mac).decode()
        identity = "NVMe1R01 %s %s %s" % (hostnqn, subnqn, digest)
        context = "01 " + digest
    psk = expand_label(retained, b"nvme-tls-psk", context.encode(),
                       len(key), compat)
    return identity, psk.hex()


def main():
    if sys.argv[1] == "gen":
        print(gen(sys.argv[2], sys.argv[3]))
    elif sys.argv[1] == "derive":
        identity, psk = derive(sys.argv[2], sys.argv[3], sys.argv[4],
                               int(sys.argv[5]),
                               len(sys.argv) > 6 and sys.argv[6] == "compat")
        print(identity)
        print(psk)
    else:
        sys.exit("unknown command " + sys.argv[1])


if __name__ == "__main__":
    main()
