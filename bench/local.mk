# SPDX-License-Identifier: BSD-3-Clause
# bench/: the seed experiments (bench/run.sh), not run by make check.
noinst_PROGRAMS = bench/zn-bench
bench_zn_bench_SOURCES = bench/zn-bench.c
bench_zn_bench_CFLAGS = $(AM_CFLAGS) $(LIBNBD_CFLAGS)
bench_zn_bench_LDADD = $(LIBNBD_LIBS)
EXTRA_DIST += bench/lib.sh bench/run.sh bench/README.md bench/server-vs-nbdkit.sh bench/tls-vs-nbdkit.sh \
	bench/ublk-vs-nullblk.sh bench/ublk-vs-nullblk-guest.sh bench/backing-dir.sh \
	bench/nvme-vs-nvmet.sh bench/nvme-vs-nvmet-guest.sh bench/ublk-stats.awk \
	bench/wlog.sh bench/old-vs-new.sh bench/nvme-tls-vs-clear.sh bench/qd1-host.sh \
	bench/server-threads.sh bench/fdatasync-fanout.py bench/server-loops.sh \
	bench/flush-io-threads.sh
# The anchors of bench/ublk-vs-nullblk.sh: the cheapest ublk server, plain
# or (with ZONE_MIB) host-managed zoned.
if HAVE_LIBURING
noinst_PROGRAMS += bench/ublk-null
bench_ublk_null_SOURCES = bench/ublk-null.c ublk/ctrl.c ublk/ctrl.h ublk/ublk-abi.h
bench_ublk_null_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/ublk
bench_ublk_null_CFLAGS = $(AM_CFLAGS) $(LIBURING_CFLAGS)
bench_ublk_null_LDADD = $(LIBURING_LIBS)
endif
