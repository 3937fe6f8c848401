# SPDX-License-Identifier: BSD-3-Clause
# The man pages whose PARAMETERS list is made from lib/config/params.c's table,
# included by Makefile.am: man/gen-params (built for the build machine, never
# installed) puts the table's keys in place of the markers of PAGE.in.
noinst_PROGRAMS += man/gen-params
man_gen_params_SOURCES = man/gen-params.c
man_gen_params_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/lib
man_gen_params_LDADD = $(zn_libs)
GENERATED_MANS = man/nbdkit-zonednull-plugin.1 man/zonednull-server.8 \
	man/zonednull-ublk.8
man1_MANS += man/nbdkit-zonednull-plugin.1
man8_MANS = man/zonednull-server.8 man/zonednull-ublk.8
$(GENERATED_MANS): %: %.in man/gen-params$(EXEEXT)
	$(AM_V_GEN)$(MKDIR_P) man && \
	man/gen-params$(EXEEXT) $< >$@.tmp && mv $@.tmp $@
CLEANFILES += $(GENERATED_MANS) $(GENERATED_MANS:=.tmp)
EXTRA_DIST += man/local.mk $(GENERATED_MANS:=.in)
