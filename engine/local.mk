# SPDX-License-Identifier: BSD-3-Clause
# The fio ioengine (issue 4), included by Makefile.am.  Built only with
# ./configure --with-fio=DIR: fio loads engines compiled against the headers
# of its own version only (see zonednull-fio(1)).

if HAVE_FIO_ENGINE
# The client library, compiled again as PIC into the engine, so that fio can
# dlopen the engine from the build tree or anywhere without finding
# libzonednull-client.so first.
noinst_LTLIBRARIES += engine/libzn-client-pic.la
engine_libzn_client_pic_la_SOURCES = client/client.c client/checks.c \
	client/checks.h
engine_libzn_client_pic_la_LIBADD = lib/libzn-wire.la
engine_libzn_client_pic_la_CFLAGS = $(AM_CFLAGS) $(LIBNBD_CFLAGS)

pkglib_LTLIBRARIES = engine/zonednull-fio.la
engine_zonednull_fio_la_SOURCES = engine/zonednull-fio.c engine/conn.c \
	engine/io.c engine/zones.c engine/internal.h
# fio's headers need GNU C (typeof) and _GNU_SOURCE with config-host.h
# first; -isystem keeps their warnings out of our -Wall -Wextra -Werror.
engine_zonednull_fio_la_CPPFLAGS = $(AM_CPPFLAGS) -D_GNU_SOURCE \
	-include $(FIO_SRCDIR)/config-host.h -isystem $(FIO_SRCDIR)
engine_zonednull_fio_la_CFLAGS = $(AM_CFLAGS) -std=gnu11 $(LIBNBD_CFLAGS)
engine_zonednull_fio_la_LIBADD = engine/libzn-client-pic.la $(LIBNBD_LIBS)
# nodelete: fio dlclose()s the engine when a job ends; libnbd, loaded with
# it, keeps thread-local error state whose destructor must stay mapped.
engine_zonednull_fio_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -shared \
	-Wl,-z,nodelete
ZONEDNULL_FIO_ENGINE_SO = $(abs_builddir)/engine/.libs/zonednull-fio.so
man1_MANS += man/zonednull-fio.1
else
ZONEDNULL_FIO_ENGINE_SO =
endif

EXTRA_DIST += man/zonednull-fio.1 \
	examples/pipelined-writes.sh examples/seq-verify.fio examples/randwrite-zbd.fio \
	examples/pipelined-writes.fio
