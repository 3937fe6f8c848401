# zonednull-server: the same device model from a libev event loop.
sbin_PROGRAMS = server/zonednull-server
server_zonednull_server_SOURCES = \
	server/params.c \
	server/params.h \
	server/session.c \
	server/session.h \
	server/zonednull-server.c
server_zonednull_server_LDADD = lib/libzonednull.la $(LIBEV_LIBS)
man8_MANS = man/zonednull-server.8

TESTS += tests/test-server.sh
EXTRA_DIST += $(man8_MANS) tests/test-server.sh
