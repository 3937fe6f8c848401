#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Guest: the Linux kernel's nbd client against zonednull on the host:
# nbdkit zonednull (servers A and B) and zonednull-server (server S).
# Sourced settings (params): HOST, PORT_A, PORT_B, PORT_S and the sizes.
# Prints one "ok"/"FAIL" line per assertion; exits 1 if any failed.  Writes
# what the host checks afterwards into /out/nbd/: the write pointers this
# script produced, a data file it wrote and read back, and checksums of
# data as the guest read it.
. /test/params
. /test/guest-lib.sh
out=/out/nbd
mkdir -p "$out"
fails=0
expect_eq () {   # DESCRIPTION ACTUAL EXPECTED
  if [ "$2" = "$3" ]; then ok "$1 ($2)"; else fail "$1: expected '$3', got '$2'"; fi
}
run_ok () {      # DESCRIPTION COMMAND...
  d=$1; shift
  if o=$("$@" 2>&1); then ok "$d"; else fail "$d: $o"; fi
}
MiB=1048576

# wait_detached DEV: the device's size drops to 0 once the kernel let go.
wait_detached () {
  n=0
  while [ "$(cat "/sys/block/$1/size")" != 0 ] && [ $n -lt 50 ]; do
    sleep 0.1; n=$((n + 1))
  done
  [ "$(cat "/sys/block/$1/size")" = 0 ]
}
# detach DEV: nbd-client -d, and the kernel must let go of the device.
detach () {
  run_ok "nbd-client -d /dev/$1 detaches" nbd-client -d "/dev/$1"
  if wait_detached "$1"; then ok "$1 has size 0 after the detach"
  else fail "$1 still has size $(cat "/sys/block/$1/size") after the detach"; fi
}
# record_sum SERVER DEV OFFSET LENGTH (64 KiB multiples): the checksum of
# what the guest reads there, which the host compares with what it reads
# from the server itself.
record_sum () {
  sum=$(dd if="/dev/$2" bs=65536 skip=$(($3 / 65536)) count=$(($4 / 65536)) \
          iflag=direct 2>/dev/null | sha256sum | cut -d' ' -f1)
  echo "$3 $4 $sum" >>"$out/sums-$1"
}

modprobe nbd nbds_max=6 || { fail "modprobe nbd"; exit 1; }

# ---- server A: 4096-byte blocks, the named export ------------------------
echo "-- nbdkit zonednull on port $PORT_A"
# size=$A_SIZE MiB, 1 MiB zones (2048 sectors), zone 0 conventional.
if ! o=$(nbd-client "$HOST" "$PORT_A" /dev/nbd0 -N nullb0 -b 4096 2>&1); then
  fail "nbd-client -N nullb0 -b 4096 attaches: $o"
  exit 1
fi
ok "nbd-client $HOST $PORT_A /dev/nbd0 -N nullb0 -b 4096 attaches"
expect_eq "blockdev --getsize64 is the configured size" \
  "$(/usr/sbin/blockdev --getsize64 /dev/nbd0)" $((A_SIZE * MiB))
expect_eq "blockdev --getss is the configured block size" \
  "$(/usr/sbin/blockdev --getss /dev/nbd0)" 4096
expect_eq "logical_block_size in sysfs" "$(cat /sys/block/nbd0/queue/logical_block_size)" 4096
expect_eq "one hardware queue per connection (-C 1)" "$(ls /sys/block/nbd0/mq | wc -l)" 1

# Zone 1: four sequential 64 KiB O_DIRECT writes at the write pointer.
run_ok "sequential O_DIRECT writes at the write pointer succeed (zone 1)" \
  zntrace seqwrite /dev/nbd0 $((1 * MiB)) 65536 4 11
run_ok "the written data reads back (zone 1)" \
  zntrace expect /dev/nbd0 $((1 * MiB)) 262144 11
expect_eq "a write past the write pointer fails with EIO" \
  "$(zntrace write /dev/nbd0 $((1 * MiB + 262144 + 4096)) 4096 12)" "res=-5(EIO)"
expect_eq "a write behind the write pointer fails with EIO" \
  "$(zntrace write /dev/nbd0 $((1 * MiB)) 4096 12)" "res=-5(EIO)"

# Zone 2: fill it; it is FULL, a write to it fails.
run_ok "filling zone 2 by sequential writes succeeds" \
  zntrace seqwrite /dev/nbd0 $((2 * MiB)) 131072 8 21
expect_eq "a write to a full zone fails with EIO" \
  "$(zntrace write /dev/nbd0 $((2 * MiB)) 4096 22)" "res=-5(EIO)"

# blkdiscard of zones 1 and 2: both reset.
run_ok "blkdiscard of a whole-zone range (zones 1-2) succeeds" \
  /usr/sbin/blkdiscard -f -o $((1 * MiB)) -l $((2 * MiB)) /dev/nbd0
run_ok "after the discard, zone 1 takes a write at its start again" \
  zntrace write /dev/nbd0 $((1 * MiB)) 65536 13
run_ok "... and it reads back" zntrace expect /dev/nbd0 $((1 * MiB)) 65536 13
expect_eq "after the discard, the old write pointer of zone 1 is refused" \
  "$(zntrace write /dev/nbd0 $((1 * MiB + 262144)) 4096 14)" "res=-5(EIO)"

# Zone 3: a misaligned discard fails and leaves the zone alone.
run_ok "a 64 KiB write at zone 3's start succeeds" \
  zntrace write /dev/nbd0 $((3 * MiB)) 65536 31
if o=$(/usr/sbin/blkdiscard -f -o $((3 * MiB + 4096)) -l $((MiB)) /dev/nbd0 2>&1); then
  fail "a misaligned discard (zone 3 + 4 KiB, 1 MiB) must fail, it succeeded"
else
  ok "a misaligned discard fails ($(echo "$o" | tail -n 1))"
fi
if o=$(/usr/sbin/blkdiscard -f -o $((3 * MiB)) -l $((MiB / 2)) /dev/nbd0 2>&1); then
  fail "a discard of half a zone must fail, it succeeded"
else
  ok "a discard of half a zone fails"
fi
run_ok "zone 3's write pointer survived the failed discards (write at 64 KiB)" \
  zntrace write /dev/nbd0 $((3 * MiB + 65536)) 65536 32
run_ok "zone 3's data survived" zntrace expect /dev/nbd0 $((3 * MiB)) 65536 31

# Zone 4: arbitrary data with dd, read back in the guest; the host reads it too.
head -c 65536 /dev/urandom >/tmp/data
run_ok "dd oflag=direct of 64 KiB at zone 4's write pointer" \
  dd if=/tmp/data of=/dev/nbd0 bs=65536 seek=64 count=1 oflag=direct conv=notrunc
run_ok "dd iflag=direct reads the same 64 KiB back" \
  sh -c 'dd if=/dev/nbd0 bs=65536 skip=64 count=1 iflag=direct 2>/dev/null | cmp - /tmp/data'
cp /tmp/data "$out/zone4.bin"

detach nbd0

# two_queues SERVER PORT DEV BLOCKSIZE MIB0 MIB1 TAG: attaches with -C 2
# and writes 512 KiB at MIB0 and at MIB1 (the starts of empty zones), one
# writer per connection; the sums of both go to the host.
two_queues () {
  name=$1 port=$2 dev=$3 bs=$4 m0=$5 m1=$6 tag=$7
  if ! o=$(nbd-client "$HOST" "$port" "/dev/$dev" -N nullb0 -b "$bs" -C 2 2>&1); then
    fail "nbd-client -C 2 attaches server $name: $o"
    return
  fi
  ok "nbd-client $HOST $port /dev/$dev -N nullb0 -b $bs -C 2 attaches server $name"
  expect_eq "two hardware queues (-C 2)" "$(ls "/sys/block/$dev/mq" | wc -l)" 2
  # blk-mq maps CPU i to hardware queue i, and queue i sends on socket i:
  # a writer pinned to each CPU uses each connection.
  taskset -c 0 zntrace seqwrite "/dev/$dev" $((m0 * MiB)) 65536 8 "$tag" >/tmp/w0 2>&1 &
  p0=$!
  taskset -c 1 zntrace seqwrite "/dev/$dev" $((m1 * MiB)) 65536 8 $((tag + 10)) >/tmp/w1 2>&1 &
  p1=$!
  wait $p0; r0=$?
  wait $p1; r1=$?
  expect_eq "writer on CPU 0 (at $m0 MiB) succeeds $(cat /tmp/w0)" $r0 0
  expect_eq "writer on CPU 1 (at $m1 MiB) succeeds $(cat /tmp/w1)" $r1 0
  run_ok "$m0 MiB reads back" zntrace expect "/dev/$dev" $((m0 * MiB)) 524288 "$tag"
  run_ok "$m1 MiB reads back" zntrace expect "/dev/$dev" $((m1 * MiB)) 524288 $((tag + 10))
  expect_eq "over -C 2, a write behind the write pointer still fails with EIO" \
    "$(zntrace write "/dev/$dev" $((m0 * MiB)) 4096 $((tag + 1)))" "res=-5(EIO)"
  record_sum "$name" "$dev" $((m0 * MiB)) 524288
  record_sum "$name" "$dev" $((m1 * MiB)) 524288
  detach "$dev"
}

# ---- server A again: two connections, two hardware queues -----------------
two_queues a "$PORT_A" nbd1 4096 10 11 101

# What the host must find on server A (zone, sectors past the start, cond).
cat >"$out/expect-a" <<EXP
0 N
1 I128
2 E0
3 I256
4 I128
10 I1024
11 I1024
EXP

# fill_capacity DEV SIZE-MIB: checks the size and block size of a B-like
# device (512-byte blocks, 4 MiB zones with 3 MiB capacity), then writes
# zone 1 up to its capacity, after which it is full.
fill_capacity () {
  expect_eq "blockdev --getsize64" "$(/usr/sbin/blockdev --getsize64 "/dev/$1")" $(($2 * MiB))
  expect_eq "blockdev --getss" "$(/usr/sbin/blockdev --getss "/dev/$1")" 512
  run_ok "512-byte O_DIRECT writes at the write pointer (zone 1)" \
    zntrace seqwrite "/dev/$1" $((4 * MiB)) 512 8 201
  run_ok "writing up to the zone capacity (3 MiB) succeeds" \
    zntrace seqwrite "/dev/$1" $((4 * MiB + 4096)) 131072 23 202
  run_ok "... the last 124 KiB too" \
    zntrace write "/dev/$1" $((4 * MiB + 4096 + 23 * 131072)) 126976 203
  expect_eq "a write at the capacity (zone full) fails with EIO" \
    "$(zntrace write "/dev/$1" $((7 * MiB)) 4096 204)" "res=-5(EIO)"
  expect_eq "a write into the full zone's start fails with EIO" \
    "$(zntrace write "/dev/$1" $((4 * MiB)) 512 205)" "res=-5(EIO)"
  run_ok "zone 1 reads back (first 4 KiB)" zntrace expect "/dev/$1" $((4 * MiB)) 512 201
}

# ---- server B: 512-byte blocks, default export, capacity < zone size ------
echo "-- nbdkit zonednull on port $PORT_B"
if o=$(nbd-client "$HOST" "$PORT_B" /dev/nbd2 -b 512 2>&1); then
  ok "nbd-client without -N attaches the default export"
  fill_capacity nbd2 "$B_SIZE"
  detach nbd2
else
  fail "nbd-client without -N attaches the default export: $o"
fi
cat >"$out/expect-b" <<EXP
1 F6144
EXP

# ---- server S: zonednull-server, configured like B --------------------------
echo "-- zonednull-server on port $PORT_S"
if o=$(nbd-client "$HOST" "$PORT_S" /dev/nbd3 -N nullb0 -b 512 2>&1); then
  ok "nbd-client -N nullb0 -b 512 attaches zonednull-server"
  fill_capacity nbd3 "$S_SIZE"
  record_sum s nbd3 $((4 * MiB)) $((3 * MiB))
  # Zone 2: the discard must take the write pointer back to the zone's
  # start, so the old one is refused afterwards.
  run_ok "128 KiB at zone 2's write pointer" zntrace seqwrite /dev/nbd3 $((8 * MiB)) 65536 2 301
  run_ok "blkdiscard of zone 2 succeeds" /usr/sbin/blkdiscard -f -o $((8 * MiB)) -l $((4 * MiB)) /dev/nbd3
  run_ok "after the discard, zone 2 takes a write at its start again" \
    zntrace write /dev/nbd3 $((8 * MiB)) 65536 302
  run_ok "... and it reads back" zntrace expect /dev/nbd3 $((8 * MiB)) 65536 302
  expect_eq "after the discard, the old write pointer of zone 2 is refused" \
    "$(zntrace write /dev/nbd3 $((8 * MiB + 131072)) 512 303)" "res=-5(EIO)"
  if /usr/sbin/blkdiscard -f -o $((8 * MiB)) -l $((2 * MiB)) /dev/nbd3 >/dev/null 2>&1; then
    fail "a discard of half a zone must fail, it succeeded"
  else
    ok "a discard of half a zone fails"
  fi
  record_sum s nbd3 $((8 * MiB)) 65536
  detach nbd3
else
  fail "nbd-client -N nullb0 -b 512 attaches zonednull-server: $o"
fi
two_queues s "$PORT_S" nbd4 512 12 16 401
cat >"$out/expect-s" <<EXP
1 F6144
2 I128
3 I1024
4 I1024
EXP

echo "guest-nbd: $fails failure(s)"
[ "$fails" -eq 0 ]
