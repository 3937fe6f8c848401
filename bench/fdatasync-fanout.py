#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# bench/fdatasync-fanout.py [DIR [SECONDS]]: what one NBD flush of a
# backing_dir device costs the file system, without any server.  A flush
# fdatasyncs every zone file written since the last one (lib/storage
# store.c); after 32 random 4 KiB writes over 64 conventional zones that
# is some 25 files.  Four ways, in turns, each for SECONDS (default 2),
# three rounds:
#   serial    the files' fdatasyncs one after another
#   parallel  the same fdatasyncs from 16 threads at once, which the file
#             system can commit together
#   syncfs    one syncfs(2) of the file system instead (zonednull since
#             issue 45, as zloop)
#   onefile   the same writes to one file of the same size, one fdatasync
#             (nbdkit file)
# Prints flushes per second.  DIR (default: a new directory under
# /var/tmp) must be on the disk measured, not tmpfs.
import ctypes
import os
import random
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

NR_ZONES = 64
ZONE = 4 << 20
WRITES_PER_FLUSH = 32

own = len(sys.argv) < 2
top = tempfile.mkdtemp(dir="/var/tmp") if own else sys.argv[1]
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
try:
    fds = []
    for i in range(NR_ZONES):
        fd = os.open(f"{top}/cnv-{i:06d}", os.O_RDWR | os.O_CREAT, 0o600)
        os.pwrite(fd, b"\1" * ZONE, 0)
        fds.append(fd)
    one = os.open(f"{top}/one.img", os.O_RDWR | os.O_CREAT, 0o600)
    os.pwrite(one, b"\1" * (NR_ZONES * ZONE), 0)
    os.sync()  # the fill on disk first: the flushes below write only theirs
    buf = b"\2" * 4096
    pool = ThreadPoolExecutor(16)
    libc = ctypes.CDLL(None, use_errno=True)

    def syncfs(fd):
        if libc.syncfs(fd) != 0:
            raise OSError(ctypes.get_errno(), "syncfs")

    def write(to_one):
        touched = set()
        for _ in range(WRITES_PER_FLUSH):
            z = random.randrange(NR_ZONES)
            off = random.randrange(ZONE // 4096) * 4096
            if to_one:
                os.pwrite(one, buf, z * ZONE + off)
            else:
                os.pwrite(fds[z], buf, off)
                touched.add(z)
        return touched

    for rnd in range(1, 4):
        for how in ("serial", "parallel", "syncfs", "onefile"):
            t0 = time.monotonic()
            n = files = 0
            while time.monotonic() - t0 < seconds:
                touched = write(how == "onefile")
                files += len(touched)
                if how == "serial":
                    for z in touched:
                        os.fdatasync(fds[z])
                elif how == "parallel":
                    list(pool.map(lambda z: os.fdatasync(fds[z]), touched))
                elif how == "syncfs":
                    syncfs(fds[0])
                else:
                    os.fdatasync(one)
                n += 1
            el = time.monotonic() - t0
            print(f"round {rnd} {how:8} {n / el:7.0f} flushes/s"
                  + (f", {files / n:.1f} files each" if files else ""))
finally:
    if own:
        shutil.rmtree(top)
