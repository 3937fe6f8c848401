# SPDX-License-Identifier: BSD-3-Clause
# The device model: no transport, shared by every program; included from
# Makefile.am.
noinst_LTLIBRARIES = lib/libzonednull.la
lib_libzonednull_la_SOURCES = \
	include/zonednull/control.h \
	include/zonednull/zone.h \
	lib/backend.h \
	lib/badblocks.c \
	lib/cache.c \
	lib/control.c \
	lib/crash.c \
	lib/device.c \
	lib/attach.c \
	lib/attach.h \
	lib/recorder.h \
	lib/crash.h \
	lib/replay.c \
	lib/replay.h \
	lib/control.h \
	lib/control-wire.c \
	lib/clock.h \
	lib/control-wire.h \
	lib/errno-name.c \
	lib/errors.c \
	lib/errors.h \
	lib/escape.c \
	lib/escape.h \
	lib/secret-file.c \
	lib/secret-file.h \
	lib/fifo.h \
	lib/geometry.c \
	lib/nbd-zones.c \
	lib/nbd-zones.h \
	lib/pages.c \
	lib/pages.h \
	lib/params.c \
	lib/params.h \
	lib/pipeline.c \
	lib/power.c \
	lib/queue.c \
	lib/queue.h \
	lib/report.c \
	lib/store-internal.h \
	lib/store-meta.c \
	lib/store-scan.c \
	lib/store.c \
	lib/store.h \
	lib/wlog.c \
	lib/wlog.h \
	lib/wlog-format.h \
	lib/wlog-read.c \
	lib/wlog-read.h \
	lib/wplug.c \
	lib/zoned.c \
	lib/zoned.h \
	lib/zoned-internal.h

# The libFuzzer target for the write log's reader and replay (clang
# only): whole log files, run briefly by tests/powerfail/test-fuzz-wlog.sh.
fuzz_wlog_sources = lib/fuzz-wlog.c $(filter %.c,$(lib_libzonednull_la_SOURCES))
if HAVE_LIBFUZZER
check_DATA = lib/fuzz-wlog
endif
lib/fuzz-wlog: $(fuzz_wlog_sources:%=$(srcdir)/%) \
	$(filter %.h,$(lib_libzonednull_la_SOURCES))
	$(AM_V_CCLD)mkdir -p lib && $(CLANG) -g -O1 -std=c11 -D_GNU_SOURCE \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  -I$(top_srcdir)/include -I$(top_srcdir)/lib \
	  $(fuzz_wlog_sources:%=$(srcdir)/%) -pthread -o $@
CLEANFILES = lib/fuzz-wlog
EXTRA_DIST += lib/fuzz-wlog.c
