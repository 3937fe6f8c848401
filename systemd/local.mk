# SPDX-License-Identifier: BSD-3-Clause
# systemd units, included by Makefile.am: zonednull-server@NAME.service
# (and .socket) and zonednull-ublk@NAME.service, for the device of
# /etc/zonednull/NAME.conf (systemd/example.conf).  The programs' paths
# are filled in here, since configure would leave ${exec_prefix} in them.
systemdsystemunit_DATA = systemd/zonednull-server@.service \
	systemd/zonednull-server@.socket
if HAVE_LIBURING
systemdsystemunit_DATA += systemd/zonednull-ublk@.service
endif
UNIT_TEMPLATES = systemd/zonednull-server@.service.in \
	systemd/zonednull-server@.socket.in systemd/zonednull-ublk@.service.in
systemd/%: $(srcdir)/systemd/%.in Makefile
	$(AM_V_GEN)mkdir -p systemd && \
	sed -e 's|@sbindir[@]|$(sbindir)|g' $< >$@.tmp && mv $@.tmp $@
CLEANFILES += systemd/zonednull-server@.service systemd/zonednull-server@.socket \
	systemd/zonednull-ublk@.service
EXTRA_DIST += systemd/local.mk $(UNIT_TEMPLATES) systemd/example.conf
