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
	lib/store.c \
	lib/store.h \
	lib/wplug.c \
	lib/zoned.c \
	lib/zoned.h \
	lib/zoned-internal.h

check_PROGRAMS += tests/test-queue
tests_test_queue_SOURCES = tests/test-queue.c tests/check.h
tests_test_queue_LDADD = lib/libzonednull.la
TESTS += tests/test-queue

# pipeline_zoned_writes in the device model.
check_PROGRAMS += tests/test-pipeline
tests_test_pipeline_SOURCES = tests/test-pipeline.c tests/check.h tests/dev.h
tests_test_pipeline_LDADD = lib/libzonednull.la
TESTS += tests/test-pipeline

# Queues, tags, devices and pipelined writes through nbdkit (libnbd aio).
check_PROGRAMS += tests/test-plugin-queue
tests_test_plugin_queue_SOURCES = tests/test-plugin-queue.c tests/check.h \
	tests/spawn.c tests/spawn.h tests/server-fixture.c tests/server-fixture.h
tests_test_plugin_queue_CFLAGS = $(AM_CFLAGS) $(LIBNBD_CFLAGS)
tests_test_plugin_queue_LDADD = client/libzonednull-client.la $(LIBNBD_LIBS)
tests_test_plugin_queue_LDFLAGS = $(AM_LDFLAGS) -no-install
TESTS += tests/test-plugin-queue

TESTS += tests/test-plugin-queue-config.sh
EXTRA_DIST += tests/test-plugin-queue-config.sh

# Bad blocks in the device model.
check_PROGRAMS += tests/test-badblocks
tests_test_badblocks_SOURCES = tests/test-badblocks.c tests/check.h tests/dev.h
tests_test_badblocks_LDADD = lib/libzonednull.la
TESTS += tests/test-badblocks
