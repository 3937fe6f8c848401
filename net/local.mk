# SPDX-License-Identifier: BSD-3-Clause
# The connection layer: listening, connections, output budget, handshake
# timeout, TLS.  Linked into each program that serves a protocol;
# included from Makefile.am.
net_sources = \
	net/conn.c \
	net/conn.h \
	net/listen.c \
	net/tls.c \
	net/tls.h
EXTRA_DIST += net/local.mk
