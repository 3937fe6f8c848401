# bench/: the seed experiments (bench/run.sh), not run by make check.
noinst_PROGRAMS = bench/zn-bench
bench_zn_bench_SOURCES = bench/zn-bench.c
bench_zn_bench_CFLAGS = $(AM_CFLAGS) $(LIBNBD_CFLAGS)
bench_zn_bench_LDADD = $(LIBNBD_LIBS)
EXTRA_DIST += bench/lib.sh bench/run.sh bench/README.md bench/server-vs-nbdkit.sh bench/tls-vs-nbdkit.sh \
	bench/ublk-vs-nullblk.sh bench/ublk-vs-nullblk-guest.sh bench/backing-dir.sh \
	bench/nvme-vs-nvmet.sh bench/nvme-vs-nvmet-guest.sh
