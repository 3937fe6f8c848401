# SPDX-License-Identifier: BSD-3-Clause
# The device model and what it stands on and what stands on it, with no
# transport: shared by every program; included from Makefile.am.
# lib/ is a stack of folders, each calling only those below it (HACKING.md,
# "The module map"): util and wire at the bottom, then the model, then
# storage and the parameters beside each other, then power-fail, then
# what the front ends share.

# What libzonednull-client.so shares with the model, compiled once: the
# control channel's encoding and the errno names.  A program on both
# libraries takes them from the client library alone (zn_libs below).
noinst_LTLIBRARIES = lib/libzn-wire.la
lib_libzn_wire_la_SOURCES = \
	lib/util/errno-name.c \
	lib/util/errno-name.h \
	lib/wire/control-wire.c \
	lib/wire/control-wire.h \
	lib/wire/fault-rule.c \
	lib/wire/fault-rule.h \
	lib/wire/wlog-format.h \
	include/zonednull/control.h

noinst_LTLIBRARIES += lib/libzonednull.la
lib_libzonednull_la_SOURCES = \
	include/zonednull/control.h \
	include/zonednull/zone.h \
	lib/util/clock.h \
	lib/util/escape.c \
	lib/util/escape.h \
	lib/util/fault-attr.c \
	lib/util/fault-attr.h \
	lib/util/fifo.h \
	lib/util/mix.h \
	lib/util/pidfile.c \
	lib/util/pidfile.h \
	lib/util/secret-file.c \
	lib/util/secret-file.h \
	lib/model/backend.h \
	lib/model/badblocks.c \
	lib/model/crash.c \
	lib/model/crash.h \
	lib/model/dev.c \
	lib/model/dev.h \
	lib/model/errors.c \
	lib/model/errors.h \
	lib/model/fault.c \
	lib/model/fault.h \
	lib/model/geometry.c \
	lib/model/pipeline.c \
	lib/model/power.c \
	lib/model/queue.c \
	lib/model/queue.h \
	lib/model/recorder.h \
	lib/model/report.c \
	lib/model/wplug.c \
	lib/model/zoned.c \
	lib/model/zoned.h \
	lib/storage/attach.c \
	lib/storage/attach.h \
	lib/storage/cache.c \
	lib/storage/pages.c \
	lib/storage/pages.h \
	lib/storage/storage.h \
	lib/storage/store.c \
	lib/storage/store.h \
	lib/storage/store-dir.h \
	lib/storage/store-meta.c \
	lib/storage/store-scan.c \
	lib/config/params.c \
	lib/config/params.h \
	lib/powerfail/replay.c \
	lib/powerfail/replay.h \
	lib/powerfail/wlog.c \
	lib/powerfail/wlog.h \
	lib/powerfail/wlog-read.c \
	lib/powerfail/wlog-read.h \
	lib/frontend/control.c \
	lib/frontend/control.h \
	lib/frontend/device.c \
	lib/frontend/nbd-zones.c \
	lib/frontend/nbd-zones.h
# The model for a program that does not also link the client library.
zn_libs = lib/libzonednull.la lib/libzn-wire.la

# The libFuzzer target for the write log's reader and replay (clang
# only): whole log files, run briefly by tests/powerfail/test-fuzz-wlog.sh.
fuzz_wlog_sources = lib/powerfail/fuzz-wlog.c \
	$(filter %.c,$(lib_libzonednull_la_SOURCES) $(lib_libzn_wire_la_SOURCES))
if HAVE_LIBFUZZER
check_DATA = lib/fuzz-wlog
endif
lib/fuzz-wlog: $(fuzz_wlog_sources:%=$(srcdir)/%) \
	$(filter %.h,$(lib_libzonednull_la_SOURCES) $(lib_libzn_wire_la_SOURCES))
	$(AM_V_CCLD)mkdir -p lib && $(CLANG) -g -O1 -std=c11 -D_GNU_SOURCE \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  -I$(top_srcdir)/include -I$(top_srcdir)/lib \
	  $(fuzz_wlog_sources:%=$(srcdir)/%) -pthread -o $@
CLEANFILES = lib/fuzz-wlog
EXTRA_DIST += lib/powerfail/fuzz-wlog.c
