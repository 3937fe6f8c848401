# SPDX-License-Identifier: BSD-3-Clause
# draw.sh: the random null_blk configurations of the real-kernel tiers,
# sourced by check-kernel.sh (6.1), check-ublk.sh (6.12) and
# check-nullblk.sh (7.3): a seed draws the same configurations on every
# machine.
#
#   zn_seed                       seed = ZN_KERNEL_SEED or a random one
#   zn_rng_init SEED              seeds the LCG
#   randn N                       r = a number in 0..N-1
#   zn_draw_configs FILE K NOPS   appends K lines "NAME SEED NOPS KEY=VALUE..."
#                                 (null_blk configfs settings) to FILE
#   zn_draw_zns_configs FILE K NOPS
#                                 as zn_draw_configs, without conventional
#                                 zones and without a smaller last zone
#                                 (what ZNS can express: NVMe/TCP tiers)
#   zn_draw_kernel_configs FILE K NOPS KERNEL
#                                 the same with KERNEL's own attributes and
#                                 a share of configurations it refuses
#
# A portable LCG on the seed, so that a seed means the same configs on
# every machine; r holds the result.  The callers draw further numbers
# from it afterwards (check-kernel.sh: its servers' ports).
# zn_seed: seed = ZN_KERNEL_SEED, or a fresh random one; 1 if not decimal.
zn_seed () {
  seed=${ZN_KERNEL_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
  case $seed in ''|*[!0-9]*) return 1 ;; esac
}
zn_rng_init () {
  rng=$(($1 % 2147483648))
}
randn () {
  rng=$(( (rng * 1103515245 + 12345) % 2147483648 ))
  r=$(( (rng / 65536) * $1 / 32768 ))   # the high bits: the low ones cycle
}

zn_draw_configs () {
  zn_conf=$1 zn_n=$2 zn_ops=$3
  k=1
  while [ "$k" -le "$zn_n" ]; do
    zn_draw_base
    echo "rand$k-seed$tseed $tseed $zn_ops size=$size zone_size=$zs zone_capacity=$cap" \
      "zone_nr_conv=$conv zone_max_open=$mo zone_max_active=$ma blocksize=$bs" \
      "memory_backed=1 irqmode=0 completion_nsec=0 hw_queue_depth=64" >>"$zn_conf"
    k=$((k + 1))
  done
}

# zn_draw_zns_configs FILE K NOPS: the geometry, limits and block size
# drawn as zn_draw_configs draws them, then made ZNS-expressible: every
# zone sequential (zone_nr_conv=0) and the size a whole number of zones.
zn_draw_zns_configs () {
  zn_conf=$1 zn_n=$2 zn_ops=$3
  k=1
  while [ "$k" -le "$zn_n" ]; do
    zn_draw_base
    echo "zns$k-seed$tseed $tseed $zn_ops size=$((zs * nz)) zone_size=$zs zone_capacity=$cap" \
      "zone_nr_conv=0 zone_max_open=$mo zone_max_active=$ma blocksize=$bs" \
      "memory_backed=1 irqmode=0 completion_nsec=0 hw_queue_depth=64" >>"$zn_conf"
    k=$((k + 1))
  done
}

# zn_draw_kernel_configs FILE K NOPS KERNEL: as zn_draw_configs, with the
# attributes null_blk of KERNEL (6.1, 6.12 or 7.3) has beyond 6.1's:
# 6.12 and 7.3 sometimes zone_full=1 (traced from the state the device
# powers on with), zone_append_max_sectors and fua=0; 7.3 sometimes 1 to 3
# bad ranges (badblocks=+FIRST-LAST, inside a zone's capacity, zntrace
# aims I/O at them) with badblocks_once and badblocks_partial_io.  The
# last configuration is one the kernel refuses: an attribute it lacks
# (6.1: those of 6.12; 6.12: those of 7.3) or, on every kernel, a zone
# capacity above the zone size or a block size that is not a power of
# two.
zn_draw_kernel_configs () {
  zn_conf=$1 zn_n=$2 zn_ops=$3 zn_kernel=$4
  k=1
  while [ "$k" -le "$zn_n" ]; do
    zn_draw_base
    extra=
    case $zn_kernel in
      6.12|7.3)
        randn 3; [ "$r" -eq 0 ] && extra="$extra zone_full=1"
        randn 4
        if [ "$r" -eq 0 ]; then
          randn 5; set -- 0 8 64 255 1000; shift "$r"
          extra="$extra zone_append_max_sectors=$1"
        fi
        randn 4; [ "$r" -eq 0 ] && extra="$extra fua=0" ;;
    esac
    if [ "$zn_kernel" = 7.3 ]; then
      randn 2
      if [ "$r" -eq 0 ]; then
        # Not in the last zone, which may be a runt.
        randn 3; nbad=$((1 + r))
        while [ "$nbad" -gt 0 ]; do
          randn $((nz - 1)); first=$((r * zs * 2048))
          randn $((cap * 2048 - 32)); first=$((first + r))
          randn 24; extra="$extra badblocks=+$first-$((first + r))"
          nbad=$((nbad - 1))
        done
        randn 2; [ "$r" -eq 0 ] && extra="$extra badblocks_once=1"
        randn 2; [ "$r" -eq 0 ] && extra="$extra badblocks_partial_io=1"
      fi
    fi
    # The last one is refused on purpose, so that a run traces at least
    # K - 1 (a drawn runt with a smaller capacity is refused too).
    if [ "$k" -eq "$zn_n" ]; then
      randn 4
      case $zn_kernel.$r in
        6.1.0) extra="$extra zone_full=1" ;;
        6.1.1) extra="$extra zone_append_max_sectors=64" ;;
        6.12.0) extra="$extra badblocks_once=1" ;;
        6.12.1) extra="$extra badblocks_partial_io=1" ;;
        *.2) cap=$((zs + 1)) ;;
        *) bs=1536 ;;
      esac
    fi
    echo "rand$k-seed$tseed $tseed $zn_ops size=$size zone_size=$zs zone_capacity=$cap" \
      "zone_nr_conv=$conv zone_max_open=$mo zone_max_active=$ma blocksize=$bs" \
      "memory_backed=1 irqmode=0 completion_nsec=0 hw_queue_depth=64$extra" >>"$zn_conf"
    k=$((k + 1))
  done
}

# zn_draw_base: one configuration's geometry, limits, block size and trace
# seed (size zs nz cap conv mo ma bs tseed).
zn_draw_base () {
    randn 3; zs=$((1 << r))                 # zone size 1, 2 or 4 MiB
    randn 9; nz=$((4 + r))                  # 4..12 zones
    size=$((zs * nz))
    # Now and then a smaller last zone (a runt), as null_blk allows.
    randn 4
    if [ "$zs" -gt 1 ] && [ "$r" -eq 0 ]; then randn $((zs - 1)); size=$((size - 1 - r)); fi
    cap=$zs
    if [ "$zs" -gt 1 ]; then
      randn 2
      if [ "$r" -eq 1 ]; then randn $((zs - 1)); cap=$((1 + r)); fi
    fi
    randn 3; conv=$r
    randn 5; mo=$r
    randn 5; ma=$r
    randn 2; bs=$((r == 1 ? 4096 : 512))
    randn 32768; t1=$r
    randn 32768; tseed=$((t1 * 32768 + r + 1))
}
