# draw.sh: the random null_blk configurations of the real-kernel tiers,
# sourced by check-kernel.sh (6.1) and check-ublk.sh (6.12), so that a seed
# draws the same configurations in both.
#
#   zn_seed                       seed = ZN_KERNEL_SEED or a random one
#   zn_rng_init SEED              seeds the LCG
#   randn N                       r = a number in 0..N-1
#   zn_draw_configs FILE K NOPS   appends K lines "NAME SEED NOPS KEY=VALUE..."
#                                 (null_blk configfs settings) to FILE
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
    echo "rand$k-seed$tseed $tseed $zn_ops size=$size zone_size=$zs zone_capacity=$cap" \
      "zone_nr_conv=$conv zone_max_open=$mo zone_max_active=$ma blocksize=$bs" \
      "memory_backed=1 irqmode=0 completion_nsec=0 hw_queue_depth=64" >>"$zn_conf"
    k=$((k + 1))
  done
}
