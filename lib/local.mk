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
	lib/crash.h \
	lib/control.h \
	lib/control-wire.c \
	lib/control-wire.h \
	lib/errno-name.c \
	lib/errors.c \
	lib/errors.h \
	lib/escape.c \
	lib/escape.h \
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
	lib/wplug.c \
	lib/zoned.c \
	lib/zoned.h \
	lib/zoned-internal.h
