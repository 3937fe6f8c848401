# SPDX-License-Identifier: BSD-3-Clause
# zonednull-server: the same device model from a libev event loop.
sbin_PROGRAMS = server/zonednull-server
server_zonednull_server_SOURCES = \
	$(net_sources) \
	$(proto_sources) \
	$(proto_nbd_sources) \
	$(proto_nvme_sources) \
	$(proto_nvme_tls_sources) \
	server/main.c \
	server/nvme-hosts.c \
	server/nvme-hosts.h \
	server/io-pool.c \
	server/io-pool.h \
	server/scheduler.c \
	server/scheduler.h
server_zonednull_server_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/lib \
	-I$(top_srcdir)/net -I$(top_srcdir)/proto
server_zonednull_server_CFLAGS = $(AM_CFLAGS) $(GNUTLS_CFLAGS) $(NETTLE_CFLAGS)
server_zonednull_server_LDADD = $(zn_libs) $(LIBEV_LIBS) $(GNUTLS_LIBS) $(NETTLE_LIBS) $(ISAL_LIBS)

