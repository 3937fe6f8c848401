# SPDX-License-Identifier: BSD-3-Clause
# The NVMe/TCP session, zonednull-server's second protocol over the
# connection layer; included from Makefile.am.
proto_nvme_sources = \
	proto/nvme/admin.c \
	proto/nvme/auth.c \
	proto/nvme/auth.h \
	proto/nvme/command.c \
	proto/nvme/command.h \
	proto/nvme/fabrics.c \
	proto/nvme/internal.h \
	proto/nvme/io.c \
	proto/nvme/pdu.h \
	proto/nvme/protocol.c \
	proto/nvme/session.c \
	proto/nvme/session.h \
	proto/nvme/zns.c \
	proto/nvme/zns.h

# NVMe/TCP's TLS keys (GnuTLS and ISA-L's CRC-32): the server's, not the session's.
proto_nvme_tls_sources = \
	proto/nvme/tls-psk.c \
	proto/nvme/tls-psk.h

EXTRA_DIST += proto/nvme/local.mk

# The libFuzzer targets (clang only), run briefly by
# tests/server/test-fuzz.sh beside the NBD one: the session, and
# DH-HMAC-CHAP alone (fuzz-auth.c includes auth.c, to compute the Reply a
# host with the secret would send).
nvme_fuzz_common = proto/nvme/session.c proto/nvme/command.c \
	proto/nvme/fabrics.c proto/nvme/admin.c proto/nvme/io.c \
	proto/nvme/zns.c proto/park.c $(filter %.c,$(lib_libzonednull_la_SOURCES) $(lib_libzn_wire_la_SOURCES))
fuzz_nvme_session_sources = proto/nvme/fuzz-session.c proto/nvme/auth.c \
	$(nvme_fuzz_common)
fuzz_nvme_auth_sources = proto/nvme/fuzz-auth.c $(nvme_fuzz_common)
nvme_fuzz_headers = proto/nvme/auth.c proto/served.h proto/park.h proto/fuzz-finish.h \
	proto/nvme/session.h proto/nvme/internal.h proto/nvme/pdu.h \
	proto/nvme/command.h proto/nvme/zns.h proto/nvme/auth.h \
	$(filter %.h,$(lib_libzonednull_la_SOURCES) $(lib_libzn_wire_la_SOURCES))
nvme_fuzz_link = mkdir -p proto/nvme && $(CLANG) -g -O1 -std=c11 \
	-D_GNU_SOURCE -DPACKAGE_VERSION='"$(PACKAGE_VERSION)"' \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-I$(top_srcdir)/include -I$(top_srcdir)/proto \
	-I$(top_srcdir)/proto/nvme -I$(top_srcdir)/net -I$(top_srcdir)/lib
nvme_fuzz_libs = -pthread $(ISAL_LIBS) $(GNUTLS_LIBS) $(NETTLE_LIBS)
if HAVE_LIBFUZZER
check_DATA += proto/nvme/fuzz-session proto/nvme/fuzz-auth
endif
proto/nvme/fuzz-session: $(fuzz_nvme_session_sources:%=$(srcdir)/%) \
	$(nvme_fuzz_headers)
	$(AM_V_CCLD)$(nvme_fuzz_link) \
	  $(fuzz_nvme_session_sources:%=$(srcdir)/%) $(nvme_fuzz_libs) -o $@
proto/nvme/fuzz-auth: $(fuzz_nvme_auth_sources:%=$(srcdir)/%) \
	$(nvme_fuzz_headers)
	$(AM_V_CCLD)$(nvme_fuzz_link) \
	  $(fuzz_nvme_auth_sources:%=$(srcdir)/%) $(nvme_fuzz_libs) -o $@
CLEANFILES += proto/nvme/fuzz-session proto/nvme/fuzz-auth
EXTRA_DIST += proto/nvme/fuzz-session.c proto/nvme/fuzz-auth.c
