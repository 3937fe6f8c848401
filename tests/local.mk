# SPDX-License-Identifier: BSD-3-Clause
# Every test of `make check`, by subject; included from Makefile.am.  Each
# group's directory under tests/ holds its tests; tests/common/ holds what
# they share (C headers, the server fixture, the shell helpers, the Python
# peers and the trace replayer).  tests/README.md says what each group
# checks.  The kernel tiers (`make check-kernel`) are in tests/kernel/.

TEST_EXTENSIONS = .trace .sh
TRACE_LOG_COMPILER = $(VALGRIND_WRAP) tests/replay
LOG_COMPILER = $(VALGRIND_WRAP)
SH_LOG_COMPILER = $(SHELL)

# `make check VALGRIND_CHECK=1` runs the C tests under valgrind's leak checker.
VALGRIND_FLAGS = --quiet --leak-check=full --show-leak-kinds=definite,indirect \
	--errors-for-leak-kinds=definite,indirect --error-exitcode=99
VALGRIND_WRAP = $(if $(VALGRIND_CHECK),$(VALGRIND) $(VALGRIND_FLAGS))

# ZONEDNULL_SERVER_THREADS: the event loops of the zonednull-server that
# tests/common starts (--threads), 2 whatever the machine's CPUs, so that
# the suite crosses loops everywhere.
AM_TESTS_ENVIRONMENT = \
	ZONEDNULL_PLUGIN='$(abs_builddir)/plugin/.libs/nbdkit-zonednull-plugin.so'; \
	ZONEDNULL_PRELOAD='$(SANITIZER_PRELOAD)'; \
	ZONEDNULL_BUILDDIR='$(abs_builddir)'; \
	ZONEDNULL_SRCDIR='$(abs_srcdir)'; \
	ZONEDNULL_CLI='$(abs_builddir)/cli/zonednull'; \
	ZONEDNULL_SERVER='$(abs_builddir)/server/zonednull-server'; \
	ZONEDNULL_HEADERS='$(pkginclude_HEADERS)'; ZONEDNULL_CC='$(CC)'; \
	ZONEDNULL_FIO_ENGINE='$(ZONEDNULL_FIO_ENGINE_SO)'; FIO='$(FIO)'; \
	NBDKIT='$(NBDKIT)'; NBDINFO='$(NBDINFO)'; ZONEDNULL_TESTS='$(ZN_TESTS)'; \
	ZONEDNULL_SERVER_THREADS=$${ZONEDNULL_SERVER_THREADS-2}; \
	export ZONEDNULL_TESTS ZONEDNULL_CLI ZONEDNULL_SERVER ZONEDNULL_HEADERS ZONEDNULL_CC \
	  ZONEDNULL_PLUGIN ZONEDNULL_PRELOAD ZONEDNULL_BUILDDIR ZONEDNULL_SRCDIR \
	  ZONEDNULL_FIO_ENGINE FIO NBDKIT NBDINFO ZONEDNULL_SERVER_THREADS;

check_PROGRAMS =
# The registered tests accumulate in ZN_TESTS rather than TESTS, so that
# `make check TESTS=...` runs a few and tests/tree still sees them all.
ZN_TESTS =
TESTS = $(ZN_TESTS)
EXTRA_DIST += tests/local.mk tests/README.md

#----------------------------------------------------------------------
# Shared helpers (tests/common/).

# The trace replayer: the golden traces' log compiler, and the kernel
# tiers' and the NBD tests' tool.
check_PROGRAMS += tests/replay
tests_replay_SOURCES = tests/common/replay.c tests/common/replay.h \
	tests/common/replay-dev.c tests/common/replay-trace.c tests/common/spawn.c \
	tests/common/spawn.h tests/common/trace-format.h
tests_replay_CFLAGS = $(AM_CFLAGS) $(LIBNBD_CFLAGS)
tests_replay_LDADD = lib/libzonednull.la client/libzonednull-client.la $(LIBNBD_LIBS)
tests_replay_LDFLAGS = $(AM_LDFLAGS) -no-install

# What a C test against a server needs: start it, connect, stop it.
fixture_sources = tests/common/check.h tests/common/spawn.c \
	tests/common/spawn.h tests/common/server-fixture.c \
	tests/common/server-fixture.h

EXTRA_DIST += tests/common/lib.sh tests/common/cli-lib.sh tests/common/bad-values.sh \
	tests/common/files-lib.sh tests/common/files.py \
	tests/common/fio-lib.sh tests/common/fio-matrix.sh \
	tests/common/hostile-server.py tests/common/nbd-raw.py tests/common/nvme-host.py tests/common/pfcheck-lib.sh

#----------------------------------------------------------------------
# The device model (tests/model/), no transport: zone rules, what differs
# between kernels, threads, queues, pipelined writes, bad blocks, the
# parameter table and the log escaper.

check_PROGRAMS += tests/model/test-model-config tests/model/test-model-zones \
	tests/model/test-model-io tests/model/test-kernels \
	tests/model/test-concurrency tests/model/test-queue \
	tests/model/test-pipeline tests/model/test-badblocks \
	tests/model/test-params tests/model/test-escape tests/model/test-wlog \
	tests/model/test-faults
tests_model_test_model_config_SOURCES = tests/model/test-model-config.c \
	tests/model/model.h tests/common/check.h tests/common/dev.h
tests_model_test_model_config_LDADD = $(zn_libs)
tests_model_test_model_zones_SOURCES = tests/model/test-model-zones.c \
	tests/model/model.h tests/common/check.h tests/common/dev.h
tests_model_test_model_zones_LDADD = $(zn_libs)
tests_model_test_model_io_SOURCES = tests/model/test-model-io.c \
	tests/model/model.h tests/common/check.h tests/common/dev.h
tests_model_test_model_io_LDADD = $(zn_libs)
tests_model_test_kernels_SOURCES = tests/model/test-kernels.c \
	tests/common/check.h tests/common/dev.h
tests_model_test_kernels_LDADD = $(zn_libs)
tests_model_test_concurrency_SOURCES = tests/model/test-concurrency.c \
	tests/common/check.h tests/common/dev.h
tests_model_test_concurrency_LDADD = $(zn_libs)
tests_model_test_queue_SOURCES = tests/model/test-queue.c tests/common/check.h
tests_model_test_queue_LDADD = $(zn_libs)
tests_model_test_pipeline_SOURCES = tests/model/test-pipeline.c \
	tests/common/check.h tests/common/dev.h
tests_model_test_pipeline_LDADD = $(zn_libs)
tests_model_test_badblocks_SOURCES = tests/model/test-badblocks.c \
	tests/common/check.h tests/common/dev.h
tests_model_test_badblocks_LDADD = $(zn_libs)
tests_model_test_params_SOURCES = tests/model/test-params.c tests/common/check.h
tests_model_test_params_LDADD = $(zn_libs)
tests_model_test_escape_SOURCES = tests/model/test-escape.c tests/common/check.h
tests_model_test_escape_LDADD = $(zn_libs)
tests_model_test_wlog_SOURCES = tests/model/test-wlog.c \
	tests/common/check.h tests/common/dev.h
tests_model_test_wlog_LDADD = $(zn_libs)
tests_model_test_faults_SOURCES = tests/model/test-faults.c \
	tests/common/check.h tests/common/dev.h
tests_model_test_faults_LDADD = $(zn_libs)

ZN_TESTS += tests/model/test-model-config tests/model/test-model-zones \
	tests/model/test-model-io tests/model/test-kernels \
	tests/model/test-concurrency tests/model/test-queue \
	tests/model/test-pipeline tests/model/test-badblocks \
	tests/model/test-params tests/model/test-escape tests/model/test-wlog \
	tests/model/test-faults
# The man pages made from the parameter table list every key.
ZN_TESTS += tests/model/test-man-params.sh
EXTRA_DIST += tests/model/test-man-params.sh

#----------------------------------------------------------------------
# Power-fail testing (tests/powerfail/): zonednull replay of write logs
# made by tests/common/wlog-gen.c, the crash states' rules property by
# property, bad logs, and the target directory kept to itself.

wlog_gen_sources = tests/common/wlog-gen.c tests/common/wlog-gen.h \
	tests/common/check.h tests/powerfail/powerfail.h
check_PROGRAMS += tests/powerfail/test-replay-rules \
	tests/powerfail/test-replay-bad tests/powerfail/test-replay-live \
	tests/powerfail/test-replay-inflight tests/powerfail/wlog-make
tests_powerfail_test_replay_rules_SOURCES = \
	tests/powerfail/test-replay-rules.c $(wlog_gen_sources)
tests_powerfail_test_replay_rules_LDADD = $(zn_libs)
tests_powerfail_test_replay_bad_SOURCES = \
	tests/powerfail/test-replay-bad.c $(wlog_gen_sources)
tests_powerfail_test_replay_bad_LDADD = $(zn_libs)
tests_powerfail_test_replay_live_SOURCES = \
	tests/powerfail/test-replay-live.c $(wlog_gen_sources)
tests_powerfail_test_replay_live_LDADD = $(zn_libs)
tests_powerfail_test_replay_inflight_SOURCES = \
	tests/powerfail/test-replay-inflight.c $(wlog_gen_sources)
tests_powerfail_test_replay_inflight_LDADD = $(zn_libs)
tests_powerfail_wlog_make_SOURCES = tests/powerfail/wlog-make.c \
	$(wlog_gen_sources)
tests_powerfail_wlog_make_LDADD = $(zn_libs)

ZN_TESTS += tests/powerfail/test-replay-rules tests/powerfail/test-replay-bad \
	tests/powerfail/test-replay-live tests/powerfail/test-replay-inflight \
	tests/powerfail/test-replay-cli.sh tests/powerfail/test-fuzz-wlog.sh \
	tests/powerfail/test-inflight-flush.sh tests/powerfail/test-replay-torn.sh
EXTRA_DIST += tests/powerfail/test-replay-cli.sh tests/powerfail/test-fuzz-wlog.sh \
	tests/powerfail/test-inflight-flush.sh tests/powerfail/test-replay-torn.sh

#----------------------------------------------------------------------
# The golden traces (tests/traces/): what Linux's null_blk did, one
# directory per kernel, each replayed against the model by tests/replay.

TRACES = \
	tests/traces/k6.1/c1_nolimits-seed1.trace \
	tests/traces/k6.1/c2_cap_lt_size-seed1.trace \
	tests/traces/k6.1/c3_conv-seed1.trace \
	tests/traces/k6.1/c4_open2_active3-seed1.trace \
	tests/traces/k6.1/c5_all-seed1.trace \
	tests/traces/k6.1/c6_open3_only-seed1.trace \
	tests/traces/k6.1/c7_active2_only-seed1.trace \
	tests/traces/k6.1/c8_bs4k-seed1.trace \
	tests/traces/k6.1/kernel-rand-seed312102436.trace \
	tests/traces/k6.12/c1_nolimits-seed1.trace \
	tests/traces/k6.12/c2_cap_lt_size-seed1.trace \
	tests/traces/k6.12/c3_conv-seed1.trace \
	tests/traces/k6.12/c4_open2_active3-seed1.trace \
	tests/traces/k6.12/c5_all-seed1.trace \
	tests/traces/k6.12/c6_open3_only-seed1.trace \
	tests/traces/k6.12/c7_active2_only-seed1.trace \
	tests/traces/k6.12/c8_bs4k-seed1.trace \
	tests/traces/k6.12/tier-seed1-rand10-seed904053927.trace \
	tests/traces/k6.12/tier-seed1-rand6-seed384845921.trace \
	tests/traces/k6.12/tier-seed2-rand1-seed222471327.trace \
	tests/traces/k7.3/c1_nolimits-seed1.trace \
	tests/traces/k7.3/c2_cap_lt_size-seed1.trace \
	tests/traces/k7.3/c3_conv-seed1.trace \
	tests/traces/k7.3/c4_open2_active3-seed1.trace \
	tests/traces/k7.3/c5_all-seed1.trace \
	tests/traces/k7.3/c6_open3_only-seed1.trace \
	tests/traces/k7.3/c7_active2_only-seed1.trace \
	tests/traces/k7.3/c8_bs4k-seed1.trace \
	tests/traces/k7.3/tier-seed1-rand3-seed497712470.trace \
	tests/traces/k7.3/tier-seed1-rand4-seed937375399.trace \
	tests/traces/k7.3/tier-seed1-rand8-seed794839582.trace \
	tests/traces/k7.3/tier-seed2-rand1-seed913100623.trace \
	tests/traces/k7.3/tier-seed2-rand3-seed863403288.trace
ZN_TESTS += $(TRACES)
# A corrupted trace must fail.
ZN_TESTS += tests/traces/test-replay-detects.sh
EXTRA_DIST += $(TRACES) tests/traces/README.md tests/traces/test-replay-detects.sh

#----------------------------------------------------------------------
# File-backed zones, backing_dir (tests/files/): through the model, then
# over both NBD servers across restarts, crashes, the write cache, a
# hostile directory and a full file system.

FILES_MODEL_TESTS = \
	tests/files/test-files-model-restart \
	tests/files/test-files-model-layout \
	tests/files/test-files-model-cache \
	tests/files/test-files-model-keep \
	tests/files/test-files-model-hostile \
	tests/files/test-files-model-flush \
	tests/files/test-files-model-syncfs
check_PROGRAMS += $(FILES_MODEL_TESTS)
tests_files_test_files_model_restart_SOURCES = \
	tests/files/test-files-model-restart.c tests/files/files-model.h \
	tests/common/check.h tests/common/dev.h
tests_files_test_files_model_restart_LDADD = $(zn_libs)
tests_files_test_files_model_layout_SOURCES = \
	tests/files/test-files-model-layout.c tests/files/files-model.h \
	tests/common/check.h tests/common/dev.h
tests_files_test_files_model_layout_LDADD = $(zn_libs)
tests_files_test_files_model_cache_SOURCES = \
	tests/files/test-files-model-cache.c tests/files/files-model.h \
	tests/common/check.h tests/common/dev.h
tests_files_test_files_model_cache_LDADD = $(zn_libs)
tests_files_test_files_model_keep_SOURCES = \
	tests/files/test-files-model-keep.c tests/files/files-model.h \
	tests/common/check.h tests/common/dev.h
tests_files_test_files_model_keep_LDADD = $(zn_libs)
tests_files_test_files_model_hostile_SOURCES = \
	tests/files/test-files-model-hostile.c tests/files/files-model.h \
	tests/common/check.h tests/common/dev.h
tests_files_test_files_model_hostile_LDADD = $(zn_libs)
tests_files_test_files_model_flush_SOURCES = \
	tests/files/test-files-model-flush.c tests/files/files-model.h \
	tests/common/check.h tests/common/dev.h
tests_files_test_files_model_flush_LDADD = $(zn_libs)
# It holds the model's fdatasync where it wants.
tests_files_test_files_model_flush_LDFLAGS = $(AM_LDFLAGS) -Wl,--wrap=fdatasync
tests_files_test_files_model_syncfs_SOURCES = \
	tests/files/test-files-model-syncfs.c tests/files/files-model.h \
	tests/common/check.h tests/common/dev.h
tests_files_test_files_model_syncfs_LDADD = $(zn_libs)
# It counts and fails the model's syncs, and makes its file system FUSE.
tests_files_test_files_model_syncfs_LDFLAGS = $(AM_LDFLAGS) \
	-Wl,--wrap=fdatasync -Wl,--wrap=syncfs -Wl,--wrap=fstatfs
FILES_TESTS = \
	tests/files/test-files-restart.sh \
	tests/files/test-files-crash.sh \
	tests/files/test-files-cache.sh \
	tests/files/test-files-keep.sh \
	tests/files/test-files-hostile.sh \
	tests/files/test-files-enospc.sh
ZN_TESTS += $(FILES_MODEL_TESTS) $(FILES_TESTS)
EXTRA_DIST += $(FILES_TESTS)

#----------------------------------------------------------------------
# The power-fail check, zonednull-pfcheck (tests/pfcheck/), without a
# mount: its options, the verification against a manifest, the plan of
# states, any workload with its checker (examples/zone-log) on
# zonednull-server (the mounts are in the 7.3 kernel tier).

PFCHECK_TESTS = tests/pfcheck/test-pfcheck.sh tests/pfcheck/test-pfcheck-log.sh tests/pfcheck/test-pfcheck-gen.sh \
	tests/pfcheck/test-pfcheck-any.sh
ZN_TESTS += $(PFCHECK_TESTS)
EXTRA_DIST += $(PFCHECK_TESTS)

#----------------------------------------------------------------------
# The nbdkit plugin (tests/plugin/): from an NBD client, its
# configuration, the standard NBD tools, queues and pipelined writes.

check_PROGRAMS += tests/plugin/test-plugin tests/plugin/test-plugin-queue \
	tests/plugin/test-plugin-faults
tests_plugin_test_plugin_SOURCES = tests/plugin/test-plugin.c tests/common/check.h
tests_plugin_test_plugin_CFLAGS = $(AM_CFLAGS) $(LIBNBD_CFLAGS)
tests_plugin_test_plugin_LDADD = $(LIBNBD_LIBS)
tests_plugin_test_plugin_queue_SOURCES = tests/plugin/test-plugin-queue.c \
	$(fixture_sources)
tests_plugin_test_plugin_queue_CFLAGS = $(AM_CFLAGS) $(LIBNBD_CFLAGS)
tests_plugin_test_plugin_queue_LDADD = client/libzonednull-client.la $(LIBNBD_LIBS)
tests_plugin_test_plugin_queue_LDFLAGS = $(AM_LDFLAGS) -no-install
tests_plugin_test_plugin_faults_SOURCES = tests/plugin/test-plugin-faults.c \
	$(fixture_sources)
tests_plugin_test_plugin_faults_CFLAGS = $(AM_CFLAGS) $(LIBNBD_CFLAGS)
tests_plugin_test_plugin_faults_LDADD = client/libzonednull-client.la $(LIBNBD_LIBS)
tests_plugin_test_plugin_faults_LDFLAGS = $(AM_LDFLAGS) -no-install
PLUGIN_TESTS = \
	tests/plugin/test-plugin-config.sh \
	tests/plugin/test-plugin-tools.sh \
	tests/plugin/test-plugin-queue-config.sh
ZN_TESTS += tests/plugin/test-plugin tests/plugin/test-plugin-queue \
	tests/plugin/test-plugin-faults $(PLUGIN_TESTS)
EXTRA_DIST += $(PLUGIN_TESTS)

#----------------------------------------------------------------------
# NBD on the wire (tests/nbd/), both servers: the golden traces replayed
# over NBD (and TLS), zero-length requests, NBD_CMD_DISC, what the
# negotiation leaves for block status.

NBD_TESTS = \
	tests/nbd/test-replay-nbd.sh \
	tests/nbd/test-replay-nbd-tls.sh \
	tests/nbd/test-zero-length.sh \
	tests/nbd/test-server-disc.sh \
	tests/nbd/test-server-options.sh
ZN_TESTS += $(NBD_TESTS)
EXTRA_DIST += $(NBD_TESTS)

#----------------------------------------------------------------------
# NVMe/TCP (tests/nvme/): the ZNS namespace on the model, the session on
# hand-built PDUs, then zonednull-server --nvme with a Python host.

check_PROGRAMS += tests/nvme/test-nvme-zns tests/nvme/test-nvme-session-io \
	tests/nvme/test-nvme-session-checks tests/nvme/test-nvme-session-auth
tests_nvme_test_nvme_zns_SOURCES = tests/nvme/test-nvme-zns.c \
	tests/common/check.h tests/common/dev.h proto/nvme/zns.c proto/nvme/zns.h
tests_nvme_test_nvme_zns_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/proto/nvme
tests_nvme_test_nvme_zns_LDADD = $(zn_libs)
tests_nvme_test_nvme_session_io_SOURCES = \
	tests/nvme/test-nvme-session-io.c tests/nvme/nvme-session.h \
	tests/common/check.h tests/common/dev.h $(proto_sources) \
	$(proto_nvme_sources) net/conn.h
tests_nvme_test_nvme_session_io_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/proto \
	-I$(top_srcdir)/proto/nvme -I$(top_srcdir)/net -I$(top_srcdir)/lib
tests_nvme_test_nvme_session_io_LDADD = $(zn_libs) $(ISAL_LIBS) \
	$(GNUTLS_LIBS) $(NETTLE_LIBS)
tests_nvme_test_nvme_session_checks_SOURCES = \
	tests/nvme/test-nvme-session-checks.c tests/nvme/nvme-session.h \
	tests/common/check.h tests/common/dev.h $(proto_sources) \
	$(proto_nvme_sources) net/conn.h
tests_nvme_test_nvme_session_checks_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/proto \
	-I$(top_srcdir)/proto/nvme -I$(top_srcdir)/net -I$(top_srcdir)/lib
tests_nvme_test_nvme_session_checks_LDADD = $(zn_libs) $(ISAL_LIBS) \
	$(GNUTLS_LIBS) $(NETTLE_LIBS)
tests_nvme_test_nvme_session_auth_SOURCES = \
	tests/nvme/test-nvme-session-auth.c tests/nvme/nvme-session.h \
	tests/common/check.h tests/common/dev.h $(proto_sources) \
	$(proto_nvme_sources) net/conn.h
tests_nvme_test_nvme_session_auth_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/proto \
	-I$(top_srcdir)/proto/nvme -I$(top_srcdir)/net -I$(top_srcdir)/lib
tests_nvme_test_nvme_session_auth_LDADD = $(zn_libs) $(ISAL_LIBS) \
	$(GNUTLS_LIBS) $(NETTLE_LIBS)
# The TLS half of the suite's NVMe/TCP host (GnuTLS), in front of
# nvme-host.py, and the keys' derivation as a host makes it.
check_PROGRAMS += tests/nvme/tls-host
tests_nvme_tls_host_SOURCES = tests/nvme/tls-host.c
tests_nvme_tls_host_CFLAGS = $(AM_CFLAGS) $(GNUTLS_CFLAGS)
tests_nvme_tls_host_LDADD = $(GNUTLS_LIBS)
EXTRA_DIST += tests/nvme/nvme-tls-key.py
NVME_TESTS = \
	tests/nvme/test-server-nvme.sh \
	tests/nvme/test-server-nvme-budget.sh \
	tests/nvme/test-server-nvme-auth.sh \
	tests/nvme/test-server-nvme-tls.sh \
	tests/nvme/test-server-nvme-loops.sh
ZN_TESTS += tests/nvme/test-nvme-zns tests/nvme/test-nvme-session-io \
	tests/nvme/test-nvme-session-checks tests/nvme/test-nvme-session-auth \
	$(NVME_TESTS)
EXTRA_DIST += $(NVME_TESTS)

#----------------------------------------------------------------------
# zonednull-server (tests/server/): real NBD clients, the queue checks of
# the plugin, its budgets, timeouts, TLS, socket activation, the systemd
# units, and both protocol sessions fuzzed briefly.

SERVER_TESTS = \
	tests/server/test-server.sh \
	tests/server/test-server-queue.sh \
	tests/server/test-server-loops.sh \
	tests/server/test-server-handoff.sh \
	tests/server/test-server-faults.sh \
	tests/server/test-server-output.sh \
	tests/server/test-server-slow-reader.sh \
	tests/server/test-server-timeout.sh \
	tests/server/test-server-tls.sh \
	tests/server/test-server-activation.sh \
	tests/server/test-server-stats.sh \
	tests/server/test-server-stop.sh \
	tests/server/test-server-offload.sh \
	tests/server/test-server-offload-nvme.sh \
	tests/server/test-units.sh \
	tests/server/test-fuzz.sh
ZN_TESTS += $(SERVER_TESTS)
EXTRA_DIST += $(SERVER_TESTS) tests/server/stall-lib.sh
# test-server-offload*.sh's LD_PRELOAD shim: one directory's storage slow
# (stall-lib.sh: what the two tests share).
check_LTLIBRARIES = tests/server/stall-io.la
tests_server_stall_io_la_SOURCES = tests/server/stall-io.c
tests_server_stall_io_la_LDFLAGS = -module -avoid-version -shared \
	-rpath '$(abs_builddir)/tests/server'
tests_server_stall_io_la_LIBADD = -ldl

#----------------------------------------------------------------------
# The client library and the CLI (tests/client/), against both servers:
# results and errnos, zone append, error logs, control snapshots, the
# examples, a hostile server, and the installed ABI.

check_PROGRAMS += tests/client/test-client tests/client/test-append \
	tests/client/test-errlog tests/client/test-control-snapshot
tests_client_test_client_SOURCES = tests/client/test-client.c $(fixture_sources)
tests_client_test_client_CFLAGS = $(AM_CFLAGS) $(LIBNBD_CFLAGS)
tests_client_test_client_LDADD = client/libzonednull-client.la $(LIBNBD_LIBS)
tests_client_test_client_LDFLAGS = $(AM_LDFLAGS) -no-install
tests_client_test_append_SOURCES = tests/client/test-append.c $(fixture_sources)
tests_client_test_append_CFLAGS = $(AM_CFLAGS) $(LIBNBD_CFLAGS)
tests_client_test_append_LDADD = client/libzonednull-client.la $(LIBNBD_LIBS)
tests_client_test_append_LDFLAGS = $(AM_LDFLAGS) -no-install
tests_client_test_errlog_SOURCES = tests/client/test-errlog.c $(fixture_sources)
tests_client_test_errlog_CFLAGS = $(AM_CFLAGS) $(LIBNBD_CFLAGS)
tests_client_test_errlog_LDADD = client/libzonednull-client.la $(LIBNBD_LIBS)
tests_client_test_errlog_LDFLAGS = $(AM_LDFLAGS) -no-install
tests_client_test_control_snapshot_SOURCES = \
	tests/client/test-control-snapshot.c $(fixture_sources)
tests_client_test_control_snapshot_CFLAGS = $(AM_CFLAGS) $(LIBNBD_CFLAGS)
tests_client_test_control_snapshot_LDADD = client/libzonednull-client.la $(LIBNBD_LIBS)
tests_client_test_control_snapshot_LDFLAGS = $(AM_LDFLAGS) -no-install
# The examples' programs (examples/local.mk), run by test-examples.sh.
check_PROGRAMS += examples/report-zones examples/append-read examples/zone-log
CLIENT_TESTS = \
	tests/client/test-cli.sh \
	tests/client/test-cli-server.sh \
	tests/client/test-examples.sh \
	tests/client/test-hostile-server.sh \
	tests/client/test-generation.sh \
	tests/client/test-log-cli.sh \
	tests/client/test-fault-cli.sh \
	tests/client/test-symbols.sh
ZN_TESTS += tests/client/test-client tests/client/test-append \
	tests/client/test-errlog tests/client/test-control-snapshot $(CLIENT_TESTS)
EXTRA_DIST += $(CLIENT_TESTS) tests/client/abi-0.1.0.txt

#----------------------------------------------------------------------
# The fio engine (tests/fio/): its options and errors, fio's zonemode=zbd
# matrix on both servers, and TLS.  They skip without --with-fio.

FIO_TESTS = \
	tests/fio/test-fio-engine.sh \
	tests/fio/test-fio-matrix-cap-eq.sh \
	tests/fio/test-fio-matrix-cap-lt.sh \
	tests/fio/test-fio-server.sh \
	tests/fio/test-fio-tls.sh
ZN_TESTS += $(FIO_TESTS)
EXTRA_DIST += $(FIO_TESTS)

#----------------------------------------------------------------------
# zonednull-ublk (tests/ublk/): what can be checked without root or the
# ublk driver.  The rest is in the 6.12 kernel tier.

ZN_TESTS += tests/ublk/test-ublk-params.sh
EXTRA_DIST += tests/ublk/test-ublk-params.sh

#----------------------------------------------------------------------
# The source tree (tests/tree/): every source file's licence line, and the
# test index (tests/README.md) against the tests registered here.

ZN_TESTS += tests/tree/test-tree.sh
EXTRA_DIST += tests/tree/test-tree.sh

#----------------------------------------------------------------------
# The real-kernel tiers, `make check-kernel` (tests/kernel/).

include $(srcdir)/tests/kernel/local.mk
