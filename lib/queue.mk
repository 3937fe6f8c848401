# The queueing model (tags, hardware queues, completion timing, throttle):
# included from Makefile.am.
lib_libzonednull_la_SOURCES += \
	include/zonednull/queue.h \
	lib/queue.c
pkginclude_HEADERS += include/zonednull/queue.h

check_PROGRAMS += tests/test-queue
tests_test_queue_SOURCES = tests/test-queue.c tests/check.h
tests_test_queue_LDADD = lib/libzonednull.la
TESTS += tests/test-queue

# pipeline_zoned_writes in the device model.
check_PROGRAMS += tests/test-pipeline
tests_test_pipeline_SOURCES = tests/test-pipeline.c tests/check.h
tests_test_pipeline_LDADD = lib/libzonednull.la
TESTS += tests/test-pipeline
