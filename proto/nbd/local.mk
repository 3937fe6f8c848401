# SPDX-License-Identifier: BSD-3-Clause
# The NBD session, a protocol over the connection layer; included from
# Makefile.am.
proto_nbd_sources = \
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
	proto/nbd/handshake.c proto/nbd/transmission.c proto/park.c \
	$(filter %.c,$(lib_libzonednull_la_SOURCES) $(lib_libzn_wire_la_SOURCES))
if HAVE_LIBFUZZER
check_DATA += proto/nbd/fuzz-session
endif
proto/nbd/fuzz-session: $(fuzz_session_sources:%=$(srcdir)/%) \
	proto/served.h proto/park.h proto/fuzz-finish.h proto/nbd/session.h proto/nbd/internal.h proto/nbd/wire.h net/conn.h \
	net/tls.h $(filter %.h,$(lib_libzonednull_la_SOURCES) $(lib_libzn_wire_la_SOURCES))
	$(AM_V_CCLD)mkdir -p proto/nbd && $(CLANG) -g -O1 -std=c11 -D_GNU_SOURCE \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  -I$(top_srcdir)/include -I$(top_srcdir)/proto \
	  -I$(top_srcdir)/net -I$(top_srcdir)/lib \
	  $(fuzz_session_sources:%=$(srcdir)/%) -pthread -o $@
CLEANFILES += proto/nbd/fuzz-session
EXTRA_DIST += proto/nbd/fuzz-session.c proto/nbd/local.mk
