# SPDX-License-Identifier: BSD-3-Clause
# zonednull-ublk: the device model as a real zoned block device through
# Linux's ublk driver (liburing; built only when configure finds it);
# --connect serves a remote zonednull server's device (libnbd).
if HAVE_LIBURING
sbin_PROGRAMS += ublk/zonednull-ublk
# The client library's code is linked in, so that the program is one
# binary to copy into a guest (no libtool wrapper, no rpath).
ublk_zonednull_ublk_SOURCES = \
	$(net_sources) \
	$(proto_sources) \
	$(proto_nbd_sources) \
	client/client.c \
	client/checks.c \
	client/checks.h \
	ublk/control-socket.c \
	ublk/control-socket.h \
	ublk/ctrl.c \
	ublk/ctrl.h \
	ublk/main.c \
	ublk/queue-local.c \
	ublk/queue-local.h \
	ublk/queue-remote.c \
	ublk/queue-remote.h \
	ublk/ring.c \
	ublk/ring.h \
	ublk/ublk-abi.h
ublk_zonednull_ublk_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/lib \
	-I$(top_srcdir)/net -I$(top_srcdir)/proto
ublk_zonednull_ublk_CFLAGS = $(AM_CFLAGS) $(LIBURING_CFLAGS) $(LIBNBD_CFLAGS) \
	$(GNUTLS_CFLAGS)
ublk_zonednull_ublk_LDADD = $(zn_libs) $(LIBURING_LIBS) \
	$(LIBNBD_LIBS) $(LIBEV_LIBS) $(GNUTLS_LIBS)
endif
EXTRA_DIST += ublk/local.mk
