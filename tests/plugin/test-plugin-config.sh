#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Configuration of the plugin: every bad setting stops nbdkit at startup
# with a message naming the key, and good settings give the device the
# kernel would give.
# shellcheck source=tests/common/lib.sh
. "$(dirname "$0")/../common/lib.sh"

# rejects PATTERN KEY=VALUE...: nbdkit must exit non-zero before serving,
# and its stderr must match the extended regex PATTERN.
rejects () {
  pattern=$1
  shift
  if run_nbdkit -U - "$ZONEDNULL_PLUGIN" "$@" --run true \
       >"$tmpdir/out" 2>&1; then
    cat "$tmpdir/out" >&2
    fail "nbdkit accepted: $*"
  fi
  if ! grep -Eq -- "$pattern" "$tmpdir/out"; then
    cat "$tmpdir/out" >&2
    fail "no message matching '$pattern' for: $*"
  fi
}

# The table of bad numeric values shared with zonednull-server
# (tests/common/bad-values.sh): the same message from both front ends.
bad_values () {
  text=$1
  shift
  if run_nbdkit -U - "$ZONEDNULL_PLUGIN" "$@" --run true \
       >"$tmpdir/out" 2>&1; then
    fail "nbdkit accepted '$*'"
  fi
  grep -qF -- "error: $text" "$tmpdir/out" ||
    fail "'$*': message lacks '$text': $(cat "$tmpdir/out")"
}
bad_value () {
  bad_values "$2" "$1"
}
# shellcheck source=tests/common/bad-values.sh
. "$(dirname "$0")/../common/bad-values.sh"

# expect_size BYTES KEY=VALUE...
expect_size () {
  want=$1
  shift
  got=$(nbdinfo_of --size "$@") || fail "nbdkit refused: $*"
  [ "$got" = "$want" ] || fail "size is '$got', expected $want for: $*"
}

# Keys: unknown, or with values nbdkit cannot parse.
rejects "unknown parameter 'frobnicate'" frobnicate=1
# Newer kernels' attributes: refused, naming key and kernel, for a kernel
# that lacks them (6.1 is the default), even with their default values.
for kv in zone_full=1 zone_append_max_sectors=8 fua=1 badblocks_once=1 \
          badblocks_partial_io=0; do
  rejects "${kv%%=*}: null_blk of Linux 6.1 has no ${kv%%=*}" "$kv"
done
rejects "badblocks_once: null_blk of Linux 6.12 has no badblocks_once" \
  kernel=6.12 badblocks_once=1
rejects "badblocks_partial_io: null_blk of Linux 6.12 has no" \
  kernel=6.12 badblocks_partial_io=1
rejects "kernel=6.15: must be 6.1, 6.12 or 7.3" kernel=6.15
rejects "kernel=6: must be" kernel=6
rejects "pipeline_zoned_writes: not with kernel=6.12" kernel=6.12 \
  pipeline_zoned_writes=1
# max_sectors below a page: raised to a page by 6.1, refused from 6.10.
rejects "max_sectors: 4 is less than a page" kernel=7.3 max_sectors=4
rejects "error: size=abc:" size=abc
rejects "error: size=-1:" size=-1
rejects "error: zone_size=1.5M:" zone_size=1.5M
rejects "zone_nr_conv" zone_nr_conv=many
rejects "zone_max_open" zone_max_open=-1
rejects "error: memory_backed=maybe:" memory_backed=maybe
rejects "error: zone_readonly" zone_readonly=first

# Sizes are whole MiB.
rejects "error: size=100K: .*whole number of MiB" size=100K
rejects "error: zone_size=512K: .*whole number of MiB" size=8 zone_size=512K
rejects "error: zone_capacity=1536K: .*whole number of MiB" \
  size=8 zone_size=2 zone_capacity=1536K

# null_blk's power-on checks (doc/zone-rules.md, 1).
rejects "error: zone_size: .*power of 2" zone_size=3
rejects "error: zone_size: .*power of 2" size=8 zone_size=0
rejects "error: zone_size: .*larger than size" size=8 zone_size=16
rejects "error: zone_capacity: .*larger than zone_size" \
  size=8 zone_size=2 zone_capacity=4
rejects "error: zone_capacity: .*must equal zone_size" \
  size=1000 zone_size=256 zone_capacity=200
rejects "error: blocksize: .*power of 2 from 512 to 4096" blocksize=1000
rejects "error: blocksize: .*power of 2 from 512 to 4096" blocksize=8192
# The message names the key as written (issue 15, D).
rejects "error: bs: .*power of 2 from 512 to 4096" bs=256
# Sizes whose bytes do not fit in 63 bits wrapped the export size
# (issue 15, B): 2^44 MiB was 0 bytes, 2^44 + 16 MiB 16 MiB, 2^43 MiB
# 2^63 bytes.  The largest, 2^43 - 1 MiB, is served.
rejects "error: size: 17592186044416 MiB is too large" \
  size=17592186044416 zone_size=16777216
rejects "error: size: 17592186044432 MiB is too large" size=17592186044432
rejects "error: size: 8796093022208 MiB is too large" size=8796093022208
expect_size 9223372036853727232 size=8796093022207 zone_size=4398046511104
rejects "error: zoned=0: .*zoned mode only" zoned=0
rejects "error: zoned=off: .*zoned mode only" zoned=off

# configfs zone_readonly / zone_offline: sequential zones inside the device.
rejects "error: zone_readonly=0: .*conventional" \
  size=8 zone_size=1 zone_nr_conv=2 zone_readonly=0
rejects "error: zone_offline=4095: .*conventional" \
  size=8 zone_size=1 zone_nr_conv=2 zone_offline=4095
rejects "error: zone_readonly=16384: .*past the end" \
  size=8 zone_size=1 zone_readonly=16384
rejects "error: zone_offline=99999999: .*past the end" \
  size=8 zone_size=1 zone_offline=99999999

# Good configurations.  Bare numbers are MiB, as in null_blk; suffixed
# sizes are bytes; configfs also takes 0x hex.
expect_size 1073741824 size=1G zone_size=64M
expect_size 1073741824 size=1024 zone_size=64
expect_size 67108864 size=64M zone_size=4 zone_capacity=3
expect_size 16777216 size=0x10 zone_size=1
expect_size 1048576000 size=1000 zone_size=256      # runt last zone
expect_size 8388608 size=8 zone_size=1 zoned=1 zone_readonly=2048 \
  zone_offline=4096 zone_readonly=4096
# The newer attributes on kernels that have them.
expect_size 8388608 size=8 zone_size=1 kernel=6.12 zone_full=1 \
  zone_append_max_sectors=0 fua=0
expect_size 8388608 size=8 zone_size=1 kernel=7.3 zone_full=1 \
  zone_append_max_sectors=64 fua=1 badblocks_once=1 badblocks_partial_io=1
# size is the magic key: a bare first argument.
got=$(run_nbdkit -U - "$ZONEDNULL_PLUGIN" 16 zone_size=1 \
        --run "$clean_env \"\$NBDINFO\" --size \"\$uri\"") ||
  fail "nbdkit refused a bare size"
[ "$got" = 16777216 ] || fail "bare size gave '$got', expected 16777216"

# The module default is 250 GiB in 256 MiB zones.
expect_size 268435456000

# blocksize and its alias bs set the advertised minimum block size.
for key in blocksize bs; do
  out=$(nbdinfo_of "" size=8 zone_size=1 "$key=4096") ||
    fail "nbdkit refused $key=4096"
  echo "$out" | grep -q "block_size_minimum: 4096" ||
    fail "$key=4096 is not the minimum block size: $out"
done
out=$(nbdinfo_of "" size=8 zone_size=1) || fail "nbdkit refused defaults"
echo "$out" | grep -q "block_size_minimum: 512" ||
  fail "default minimum block size is not 512: $out"

# zone_nr_conv is clamped so that the last zone is sequential: seven
# conventional zones (data) and one empty sequential zone (hole).
map=$(nbdinfo_of --map size=8 zone_size=1 zone_nr_conv=100 |
        awk '{ print $1, $2, $3 }')
[ "$map" = "0 7340032 0
7340032 1048576 1" ] || fail "zone_nr_conv=100 on 8 zones gave map: $map"
# ... and says so, naming the rule, as null_blk does in the kernel's log.
run_nbdkit -U - "$ZONEDNULL_PLUGIN" size=8 zone_size=1 zone_nr_conv=8 --run true \
  >"$tmpdir/out" 2>&1 || fail "nbdkit refused zone_nr_conv=8 on 8 zones: $(cat "$tmpdir/out")"
grep -q "zone_nr_conv=8: changed to 7, as null_blk changes it: of the device's 8 zones at least one is sequential" "$tmpdir/out" ||
  fail "zone_nr_conv=8 on 8 zones: no message naming the change: $(cat "$tmpdir/out")"
run_nbdkit -U - "$ZONEDNULL_PLUGIN" size=8 zone_size=1 zone_nr_conv=7 --run true \
  >"$tmpdir/out" 2>&1 || fail "nbdkit refused zone_nr_conv=7 on 8 zones: $(cat "$tmpdir/out")"
! grep -q "zone_nr_conv" "$tmpdir/out" ||
  fail "zone_nr_conv=7 on 8 zones, which stands, gave a message: $(cat "$tmpdir/out")"

# Fault rules name the word they broke (zonednull-server refuses them all
# for now: tests/server/test-server.sh).
rejects "error: fault=op=bogus error=EIO: fault rule: 'op=bogus'" \
  size=4 zone_size=1 "fault=op=bogus error=EIO"
rejects "error: fault=zone=4 error=EIO: fault rule: 'zone=4'" \
  size=4 zone_size=1 "fault=zone=4 error=EIO"
rejects "fault=op=write: fault rule: 'op=write' does nothing" \
  size=4 zone_size=1 "fault=op=write"

exit 0
