# The unit test of proto/nvme/zns.c, the model's devices as NVMe Zoned
# Namespaces; included from Makefile.am.
check_PROGRAMS += tests/test-nvme-zns
TESTS += tests/test-nvme-zns
tests_test_nvme_zns_SOURCES = tests/test-nvme-zns.c tests/check.h tests/dev.h \
	proto/nvme/zns.c proto/nvme/zns.h
tests_test_nvme_zns_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/proto/nvme
tests_test_nvme_zns_LDADD = lib/libzonednull.la
EXTRA_DIST += tests/nvme-zns.mk
