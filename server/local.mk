# zonednull-server: the same device model from a libev event loop.
sbin_PROGRAMS = server/zonednull-server
server_zonednull_server_SOURCES = \
	$(net_sources) \
	$(proto_sources) \
	$(proto_nbd_sources) \
	$(proto_nvme_sources) \
	server/main.c \
	server/pidfile.h \
	server/scheduler.c \
	server/scheduler.h
server_zonednull_server_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/lib \
	-I$(top_srcdir)/net -I$(top_srcdir)/proto
server_zonednull_server_CFLAGS = $(AM_CFLAGS) $(GNUTLS_CFLAGS)
server_zonednull_server_LDADD = lib/libzonednull.la $(LIBEV_LIBS) $(GNUTLS_LIBS) $(ISAL_LIBS)

TESTS += tests/test-server.sh tests/test-cli-server.sh tests/test-server-queue.sh \
	tests/test-zero-length.sh tests/test-server-output.sh \
	tests/test-server-timeout.sh tests/test-server-disc.sh tests/test-server-tls.sh \
	tests/test-server-nvme.sh tests/test-server-nvme-budget.sh \
	tests/test-server-activation.sh
EXTRA_DIST += tests/test-server.sh tests/test-cli-server.sh \
	tests/test-server-queue.sh tests/test-zero-length.sh \
	tests/test-server-output.sh tests/test-server-timeout.sh \
	tests/test-server-disc.sh tests/test-server-tls.sh tests/test-server-nvme.sh \
	tests/test-server-nvme-budget.sh tests/test-server-activation.sh
