# The NBD session, a protocol over the connection layer; included from
# Makefile.am.
proto_nbd_sources = \
	proto/served.h \
	proto/nbd/handshake.c \
	proto/nbd/internal.h \
	proto/nbd/protocol.c \
	proto/nbd/session.c \
	proto/nbd/session.h \
	proto/nbd/transmission.c \
	proto/nbd/wire.h

# The libFuzzer target for the session (clang only): built for
# `make check` when clang is available, run briefly by tests/test-fuzz.sh.
fuzz_session_sources = proto/nbd/fuzz-session.c proto/nbd/session.c \
	proto/nbd/handshake.c proto/nbd/transmission.c lib/zoned.c \
	lib/geometry.c lib/pages.c lib/control.c lib/control-wire.c \
	lib/queue.c lib/badblocks.c lib/cache.c lib/wplug.c lib/nbd-zones.c \
	lib/store.c lib/escape.c lib/pipeline.c lib/power.c lib/report.c
if HAVE_LIBFUZZER
check_DATA = proto/nbd/fuzz-session
endif
proto/nbd/fuzz-session: $(fuzz_session_sources:%=$(srcdir)/%) \
	proto/served.h proto/nbd/session.h proto/nbd/internal.h proto/nbd/wire.h net/conn.h \
	net/tls.h lib/pages.h lib/zoned-internal.h lib/nbd-zones.h lib/store.h
	$(AM_V_CCLD)mkdir -p proto/nbd && $(CLANG) -g -O1 -std=c11 -D_GNU_SOURCE \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  -I$(top_srcdir)/include -I$(top_srcdir)/proto -I$(top_srcdir)/proto/nbd \
	  -I$(top_srcdir)/net -I$(top_srcdir)/lib \
	  $(fuzz_session_sources:%=$(srcdir)/%) -pthread -o $@
CLEANFILES = proto/nbd/fuzz-session
EXTRA_DIST += proto/nbd/fuzz-session.c tests/test-fuzz.sh proto/nbd/local.mk
TESTS += tests/test-fuzz.sh
