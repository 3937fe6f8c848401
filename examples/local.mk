# SPDX-License-Identifier: BSD-3-Clause
# The client library's example programs, included by Makefile.am.  `make
# check` builds them (tests/local.mk) against the build tree's library and
# runs them (tests/client/test-examples.sh), which also builds them with
# pkg-config as a user would when an installed zonednull-client is found.
examples_report_zones_SOURCES = examples/report-zones.c
examples_report_zones_LDADD = client/libzonednull-client.la
examples_report_zones_LDFLAGS = $(AM_LDFLAGS) -no-install
examples_append_read_SOURCES = examples/append-read.c
examples_append_read_LDADD = client/libzonednull-client.la
examples_append_read_LDFLAGS = $(AM_LDFLAGS) -no-install
# zone-log flushes through the data export's libnbd handle.
examples_zone_log_SOURCES = examples/zone-log.c
examples_zone_log_CFLAGS = $(AM_CFLAGS) $(LIBNBD_CFLAGS)
examples_zone_log_LDADD = client/libzonednull-client.la $(LIBNBD_LIBS)
examples_zone_log_LDFLAGS = $(AM_LDFLAGS) -no-install

EXTRA_DIST += examples/local.mk
