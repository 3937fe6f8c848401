#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Zero-length requests (issue 15, A): both front ends answer them as
# nbdkit 1.32 does and as the NBD protocol allows, with an error reply
# and nothing else: EINVAL for read, trim and block status, ENOSPC for a
# write; a flush, whose length is always 0, succeeds.  Requests beyond
# the end of the export get the same errnos.  The connection stays usable
# afterwards, with structured replies and without.
# shellcheck source=tests/common/lib.sh
. "$(dirname "$0")/../common/lib.sh"

need_nbdsh
: "${ZONEDNULL_SERVER:=${ZONEDNULL_BUILDDIR:-.}/server/zonednull-server}"
[ -x "$ZONEDNULL_SERVER" ] || fail "no server at $ZONEDNULL_SERVER"

for target in nbdkit server; do
  ZONEDNULL_TARGET=$target
  start_server "zero-$target" size=8 zone_size=1 zone_nr_conv=1 memory_backed=1
  /usr/bin/python3 - "$uri" >"$tmpdir/py.out" 2>&1 <<'PY' ||
import errno, sys
import nbd

def expect(h, what, f, want):
    try:
        f()
    except nbd.Error as e:
        # libnbd's Error has the errno's name, or its number.
        if e.errno not in (want, errno.errorcode[want]):
            sys.exit("%s: errno %s (%s), expected %s"
                     % (what, e.errno, e, errno.errorcode[want]))
        return
    sys.exit("%s: succeeded, expected %s" % (what, errno.errorcode[want]))

for structured in (True, False):
    h = nbd.NBD()
    h.set_strict_mode(0)
    h.set_request_structured_replies(structured)
    if structured:
        h.add_meta_context(nbd.CONTEXT_BASE_ALLOCATION)
    h.connect_uri(sys.argv[1])
    expect(h, "read", lambda: h.pread(0, 0), errno.EINVAL)
    expect(h, "read at the end", lambda: h.pread(0, 8 << 20), errno.EINVAL)
    expect(h, "write", lambda: h.pwrite(b"", 0), errno.ENOSPC)
    expect(h, "write in a sequential zone",
           lambda: h.pwrite(b"", 1 << 20), errno.ENOSPC)
    expect(h, "trim", lambda: h.trim(0, 0), errno.EINVAL)
    # Beyond the end, as nbdkit and the protocol have it: ENOSPC for a
    # write, EINVAL for the rest.
    expect(h, "write beyond the end",
           lambda: h.pwrite(b"x" * 512, 8 << 20), errno.ENOSPC)
    expect(h, "write across the end",
           lambda: h.pwrite(b"x" * 1024, (8 << 20) - 512), errno.ENOSPC)
    expect(h, "read beyond the end", lambda: h.pread(512, 8 << 20),
           errno.EINVAL)
    expect(h, "trim beyond the end", lambda: h.trim(1 << 20, 8 << 20),
           errno.EINVAL)
    if structured:
        expect(h, "block status",
               lambda: h.block_status(0, 0, lambda *a: 0), errno.EINVAL)
    h.flush()
    # Still connected and nothing was written.
    h.pwrite(b"\x5a" * 4096, 1 << 20)
    assert h.pread(4096, 1 << 20) == b"\x5a" * 4096
    h.trim(1 << 20, 1 << 20)
    h.shutdown()
PY
    fail "$target: $(cat "$tmpdir/py.out")"
done
