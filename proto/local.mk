# SPDX-License-Identifier: BSD-3-Clause
# What the protocols' sessions share: the scheduler's interface
# (served.h) and the parked writes and held replies (park.c); included
# from Makefile.am.  A program listing a protocol's sources lists these
# once beside them.
proto_sources = \
	proto/park.c \
	proto/park.h \
	proto/served.h

EXTRA_DIST += proto/local.mk
