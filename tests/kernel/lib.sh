# SPDX-License-Identifier: BSD-3-Clause
# lib.sh: what the host side of the real-kernel tiers shares (sourced by
# check-kernel.sh, check-ublk.sh, check-nullblk.sh, prepare.sh and
# prepare-consumers.sh; the guest scripts have guest-lib.sh).
#
#   note MESSAGE...     a line on stdout (stderr with zn_note_fd=2, for a
#                       script whose stdout is its result)
#   fail MESSAGE...     a FAIL line; counts in $failures
#   die MESSAGE...      an ERROR line on stderr, then exit 2
#   which_bin NAME      the host's NAME (sbin first), not a busybox applet
#   copy_binary ROOT SRC DST
#                       SRC into the tree ROOT as DST, with its libraries
#   zn_modules_612      the 6.12 base initramfs's modules (check-ublk.sh and
#                       check-nvme.sh boot the same base, so one list)
#
# Each message starts with the name of the script that runs (check-ublk:,
# prepare-consumers: ...), also when a sourced file (replay-traces.sh,
# boot.sh) prints it.
# shellcheck shell=sh

zn_me=$(basename "$0" .sh)

# configfs, null_blk, ublk_drv for the ublk differential; virtio_net because
# /init brings up eth0; f2fs, btrfs and dm-mod (dm-linear is part of it)
# for the consumers; nvme-tcp and nvmet-tcp (nvme-core, nvme-fabrics and
# nvmet come as their dependencies) and nbd for check-nvme.sh and
# bench/nvme-vs-nvmet.sh.  prepare.sh adds dependencies and soft
# dependencies (xor, raid6_pq, libcrc32c, crc32c, nvme-auth, ...).
zn_modules_612="configfs null_blk ublk_drv failover net_failover virtio_net f2fs btrfs dm-mod
  nvme-core nvme-fabrics nvme-tcp nvmet nvmet-tcp nbd"
failures=${failures:-0}

note () { echo "$zn_me: $*" >&"${zn_note_fd:-1}"; }
fail () { echo "$zn_me: FAIL: $*"; failures=$((failures + 1)); }
die () { echo "$zn_me: ERROR: $*" >&2; exit 2; }

which_bin () {
  for d in /usr/sbin /sbin /usr/bin /bin; do
    if [ -x "$d/$1" ] && { [ ! -L "$d/$1" ] || [ "$(readlink -f "$d/$1")" != /bin/busybox ]; }; then
      echo "$d/$1"
      return 0
    fi
  done
  return 1
}

# copy_binary ROOT SRC DST: a real binary plus every library ldd lists, the
# system's at the same paths (those already in ROOT are kept), the build's
# own (from its .libs, found as the libtool wrapper would) in ROOT/usr/lib.
# A libtool wrapper script is replaced by its real binary in .libs.  What
# is in the way at DST goes first: an applet symlink there would make cp
# follow its absolute target and overwrite the host's /bin/busybox.
copy_binary () {
  cb_root=$1 cb_src=$2 cb_dst=$3
  cb_bdir=$(cd "$(dirname "$cb_src")/.." && pwd)
  if [ "$(head -c 4 "$cb_src" | od -An -c | tr -d ' ')" != '177ELF' ] &&
     [ -x "$(dirname "$cb_src")/.libs/$(basename "$cb_src")" ]; then
    cb_src=$(dirname "$cb_src")/.libs/$(basename "$cb_src")
  fi
  rm -f "$cb_root$cb_dst"
  mkdir -p "$(dirname "$cb_root$cb_dst")" && cp -L "$cb_src" "$cb_root$cb_dst" || return 1
  cb_libpath=$(ls -d "$cb_bdir"/*/.libs 2>/dev/null | tr '\n' ':')
  for cb_lib in $(LD_LIBRARY_PATH=$cb_libpath ldd "$cb_src" 2>/dev/null |
                    sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) .*/\1/p'); do
    case $cb_lib in
      */.libs/*) mkdir -p "$cb_root/usr/lib" && cp -L "$cb_lib" "$cb_root/usr/lib/" || return 1 ;;
      *) [ -e "$cb_root$cb_lib" ] ||
           { mkdir -p "$cb_root$(dirname "$cb_lib")" && cp -L "$cb_lib" "$cb_root$cb_lib"; } || return 1 ;;
    esac
  done
}
