# The NVMe/TCP session, zonednull-server's second protocol over the
# connection layer; included from Makefile.am.
proto_nvme_sources = \
	proto/served.h \
	proto/nvme/admin.c \
	proto/nvme/fabrics.c \
	proto/nvme/internal.h \
	proto/nvme/io.c \
	proto/nvme/pdu.h \
	proto/nvme/protocol.c \
	proto/nvme/session.c \
	proto/nvme/session.h \
	proto/nvme/zns.c \
	proto/nvme/zns.h

EXTRA_DIST += proto/nvme/local.mk

# The session driven with hand-built PDUs, no network.
check_PROGRAMS += tests/test-nvme-session
TESTS += tests/test-nvme-session
tests_test_nvme_session_SOURCES = tests/test-nvme-session.c tests/check.h \
	tests/dev.h $(proto_nvme_sources) net/conn.h
tests_test_nvme_session_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/proto \
	-I$(top_srcdir)/proto/nvme -I$(top_srcdir)/net -I$(top_srcdir)/lib
tests_test_nvme_session_LDADD = lib/libzonednull.la
