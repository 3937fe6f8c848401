#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The queueing parameters: null_blk's names, defaults, validation and
# clamping; a bad value stops nbdkit at startup naming the key and rule.
# shellcheck source=tests/common/lib.sh
. "$(dirname "$0")/../common/lib.sh"

rejects () {
  pattern=$1
  shift
  if run_nbdkit -U - "$ZONEDNULL_PLUGIN" size=8 zone_size=1 "$@" --run true \
       >"$tmpdir/out" 2>&1; then
    cat "$tmpdir/out" >&2
    fail "nbdkit accepted: $*"
  fi
  grep -Eq -- "$pattern" "$tmpdir/out" || {
    cat "$tmpdir/out" >&2
    fail "no message matching '$pattern' for: $*"
  }
}

rejects "error: irqmode: 3 is not 0 \(none\), 1 \(softirq\) or 2" irqmode=3
rejects "irqmode" irqmode=timer
rejects "error: hw_queue_depth: must be at least 1" hw_queue_depth=0
rejects "hw_queue_depth: 70000 is more than" hw_queue_depth=70000
rejects "error: submit_queues: 121 is more than 120" submit_queues=121
rejects "completion_nsec" completion_nsec=-5
rejects "error: shared_tags=perhaps:" shared_tags=perhaps
rejects "error: host_tags=perhaps:" host_tags=perhaps
rejects "error: shared_tag_bitmap=2:" shared_tag_bitmap=2
rejects "mbps" mbps=fast
rejects "error: nr_devices=0: must be from 1 to 1024" nr_devices=0
rejects "error: nr_devices=2000: must be from 1 to 1024" nr_devices=2000
rejects "error: pipeline_zoned_writes=sometimes:" pipeline_zoned_writes=sometimes
rejects "error: pipeline_wait_ms=0: must be at least 1" pipeline_wait_ms=0
rejects "error: pipeline_max_waiting=0: must be at least 1" pipeline_max_waiting=0
rejects "error: badblocks=\+9-8: expected \+FIRST-LAST" badblocks=+9-8
rejects "error: badblocks=bad: expected" badblocks=bad
# The kernel's table holds 512 entries (issue 15): one more is refused.
# shellcheck disable=SC2046
rejects "error: badblocks=\+3000-3000: the bad block table is full: as the kernel's, it holds 512 entries of at most 512 sectors, and the settings before this one take 512" \
  $(i=0; while [ $i -lt 512 ]; do echo "badblocks=+$((3 * i))-$((3 * i))"; i=$((i + 1)); done) \
  badblocks=+3000-3000
rejects "error: cache_size=1K: .*whole number of MiB" cache_size=1K
# A signed 64-bit delay (issue 15, D): larger values wrapped negative.
rejects "error: completion_nsec: 18446744073709551615 is more than 9223372036854775807" \
  irqmode=2 completion_nsec=18446744073709551615
rejects "error: completion_nsec: 9223372036854775808 is more than" \
  irqmode=2 completion_nsec=9223372036854775808
# Its bytes wrapped (issue 15, C): no cache, or a cache of 1 MiB.
rejects "error: cache_size: 17592186044416 MiB is too large" \
  cache_size=17592186044416 memory_backed=1
rejects "error: cache_size: 17592186044417 MiB is too large" \
  cache_size=17592186044417 memory_backed=1

# info_json KEY=VALUE...: zonednull info --json of a server with these
# settings, in $tmpdir/info.json.
n=0
info_json () {
  n=$((n + 1))
  start_server "q$n" size=8 zone_size=1 "$@"
  $clean_env "$ZONEDNULL_CLI" info --json "$uri" >"$tmpdir/info.json" ||
    fail "zonednull info failed for: $*"
  stop_server "$pid"
}

# expect PYTHON-EXPR: true of the parsed info (i).
expect () {
  /usr/bin/python3 -c '
import json, sys
i = json.load(open(sys.argv[1]))
sys.exit(0 if eval(sys.argv[2]) else "not %s in %s" % (sys.argv[2], i))
' "$tmpdir/info.json" "$1" || fail "$1"
}

# null_blk's defaults.
info_json
expect 'i["irqmode"] == 1 and i["completion_nsec"] == 10000'
expect 'i["hw_queue_depth"] == 64 and i["submit_queues"] == 1'
expect 'i["tag_pools"] == 1 and not i["shared_tags"] and not i["shared_tag_bitmap"]'
expect 'i["mbps"] == 0 and not i["pipeline_zoned_writes"]'
expect 'i["device_index"] == 0 and i["nr_devices"] == 1'
expect 'i["pipeline"]["wait_ms"] == 1000 and i["pipeline"]["max_waiting"] == 1024'
expect 'i["cache_size"] == 0 and i["badblock_ranges"] == 0'

# cache_size is MiB, and only with memory_backed (else forced to 0).
info_json cache_size=2 memory_backed=1 badblocks=+0-7 badblocks=+100-107
expect 'i["cache_size"] == 2097152 and i["badblock_ranges"] == 2'
info_json cache_size=2
expect 'i["cache_size"] == 0'

# Clamping: submit_queues <= 0 becomes 1, mbps is capped at 40960.
info_json submit_queues=-3 mbps=99999
expect 'i["submit_queues"] == 1 and i["mbps"] == 40960'

info_json irqmode=2 completion_nsec=100000 hw_queue_depth=16 submit_queues=4 \
  host_tags=1 shared_tag_bitmap=1 pipeline_zoned_writes=1 pipeline_wait_ms=5 \
  pipeline_max_waiting=3 mbps=100
expect 'i["irqmode"] == 2 and i["completion_nsec"] == 100000'
expect 'i["hw_queue_depth"] == 16 and i["submit_queues"] == 4'
expect 'i["tag_pools"] == 1 and i["shared_tags"] and i["shared_tag_bitmap"]'
expect 'i["pipeline_zoned_writes"] and i["pipeline"]["wait_ms"] == 5'
expect 'i["pipeline"]["max_waiting"] == 3 and i["mbps"] == 100'
expect 'len(i["queues"]) == 4'

# nr_devices: one data and one control export per device.
start_server list size=8 zone_size=1 nr_devices=3
$clean_env "$NBDINFO" --list "$uri" >"$tmpdir/list" || fail "nbdinfo --list"
for e in nullb0 nullb0/control nullb1 nullb1/control nullb2 nullb2/control; do
  grep -q "^export=\"$e\"" "$tmpdir/list" ||
    fail "no export $e in: $(cat "$tmpdir/list")"
done
grep -q "nullb3" "$tmpdir/list" && fail "nullb3 should not exist"
stop_server "$pid"

exit 0
