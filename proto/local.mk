# SPDX-License-Identifier: BSD-3-Clause
# What the protocols' sessions share: the scheduler's interface
# (served.h) and the parked requests and held replies (park.c); included
# from Makefile.am.  A program listing a protocol's sources lists these
# once beside them.
proto_sources = \
	proto/park.c \
	proto/park.h \
	proto/served.h

# The fuzz targets' finish hook, for both protocols' (fuzz-finish.h).
EXTRA_DIST += proto/local.mk proto/fuzz-finish.h
