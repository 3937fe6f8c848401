# zonednull-server: the same device model from a libev event loop.
sbin_PROGRAMS = server/zonednull-server
server_zonednull_server_SOURCES = \
	server/session.c \
	server/session.h \
	server/tls.c \
	server/tls.h \
	server/zonednull-server.c
server_zonednull_server_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/lib
server_zonednull_server_CFLAGS = $(AM_CFLAGS) $(GNUTLS_CFLAGS)
server_zonednull_server_LDADD = lib/libzonednull.la $(LIBEV_LIBS) $(GNUTLS_LIBS)
man8_MANS = man/zonednull-server.8

TESTS += tests/test-server.sh tests/test-cli-server.sh tests/test-server-queue.sh \
	tests/test-zero-length.sh tests/test-server-output.sh \
	tests/test-server-timeout.sh tests/test-server-tls.sh
EXTRA_DIST += $(man8_MANS) tests/test-server.sh tests/test-cli-server.sh \
	tests/test-server-queue.sh tests/test-zero-length.sh \
	tests/test-server-output.sh tests/test-server-timeout.sh tests/test-server-tls.sh

# The libFuzzer target for the protocol session (clang only): built for
# `make check` when clang is available, run briefly by tests/test-fuzz.sh.
fuzz_session_sources = server/fuzz-session.c server/session.c lib/zoned.c \
	lib/geometry.c lib/pages.c lib/control.c lib/control-wire.c \
	lib/queue.c lib/badblocks.c lib/cache.c lib/wplug.c
if HAVE_LIBFUZZER
check_DATA = server/fuzz-session
endif
server/fuzz-session: $(fuzz_session_sources:%=$(srcdir)/%) server/session.h server/tls.h lib/pages.h lib/zoned-internal.h
	$(AM_V_CCLD)$(CLANG) -g -O1 -std=c11 -D_GNU_SOURCE \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  -I$(top_srcdir)/include -I$(top_srcdir)/server -I$(top_srcdir)/lib \
	  $(fuzz_session_sources:%=$(srcdir)/%) -pthread -o $@
CLEANFILES = server/fuzz-session
EXTRA_DIST += server/fuzz-session.c tests/test-fuzz.sh
TESTS += tests/test-fuzz.sh
