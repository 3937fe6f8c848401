#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Guest: /test/run.sh, run by /init.  Both parts always run.
export PATH=/test:/usr/sbin:/usr/bin:/sbin:/bin
rc=0
echo "== nbd"
sh /test/guest-nbd.sh || rc=1
echo "== null_blk"
sh /test/guest-nullblk.sh || rc=1
exit $rc
