# SPDX-License-Identifier: BSD-3-Clause
# The real-kernel tiers, `make check-kernel`: Debian's kernels under qemu
# (TCG, no KVM).  Tier 6.1 (tests/kernel/check-kernel.sh): the kernel's nbd
# client attaches the build's plugin and zonednull-server, and the real
# null_blk in the same VM is traced and replayed against the model and over
# NBD.  Tier 6.12 (tests/kernel/check-ublk.sh, bookworm-backports): the real
# null_blk and zonednull-ublk side by side on the same random configurations
# and traces, then zoned consumers on zonednull-ublk.  Tier 7.3
# (tests/kernel/check-nullblk.sh, trixie-backports): the real null_blk with
# 7.3's attributes (zone_full, bad ranges with badblocks_once and
# badblocks_partial_io, ...) traced and replayed against the model and over
# NBD.  The 6.12 tier then boots once more (tests/kernel/check-nvme.sh):
# zonednull-server over NVMe/TCP beside nvmet-tcp and null_blk.  See the
# README.
#
#   make check-kernel [ZN_KERNEL_SEED=N] [ZN_KERNEL_TRACES=N] [ZN_KERNEL_OPS=N]
#                     [ZN_KERNEL_TIERS="6.1 6.12 7.3"]
#
# Each part's output is also kept in tests/kernel/<work>.log; when a part
# fails, its failure lines are printed again at the end, with the seed, so
# that the last lines of a long run say what failed.

# Downloads (the kernel packages) and the base initramfs, kept between runs.
ZN_KERNEL_CACHE ?= $(abs_top_srcdir)/.cache/kernel
# Empty: a fresh random seed, printed, the same for every tier (each draws
# its configurations from it).  Set it to reproduce a run.
ZN_KERNEL_SEED ?=
# Random null_blk configurations per run (in each tier), and ops per trace.
ZN_KERNEL_TRACES ?= 5
ZN_KERNEL_OPS ?= 400
# The tiers to run, in order; each runs even when the one before failed.
ZN_KERNEL_TIERS ?= 6.1 6.12 7.3
# The 6.12 tier's NVMe/TCP boot (check-nvme.sh): configurations drawn,
# each traced with both multipath settings (ZN_ZBD_FULL=1: three times as
# many, with three times the ops).
ZN_NVME_TRACES ?= 4
# The 7.3 tier's power-fail check (zonednull-pfcheck): random crash states
# per file system, beside one state per mark; the file systems.
ZN_PFCHECK_STATES ?= 12
ZN_PFCHECK_FS ?= btrfs f2fs
# Its campaign of generated workloads (zonednull-pfcheck campaign): the
# workloads per file system (0: none; 200 or more for a long run, with
# ZN_KERNEL_VM_TIMEOUT raised to match).
ZN_PFCHECK_CAMPAIGN ?= 4
# The 6.12 tier's zonednull-ublk (built when liburing is found).
ZONEDNULL_UBLK ?= $(abs_builddir)/ublk/zonednull-ublk$(EXEEXT)
# The 6.12 tier's consumers build their static fio from FIO_SRCDIR, the
# source configure --with-fio was given (without it, prepare-consumers.sh
# takes the newest .cache/fio/fio-*).

# The guest's static tool: the null_blk tracer and O_DIRECT I/O helper.
# Built with the host compiler, without the sanitizer flags.
tests/kernel/zntrace$(EXEEXT): $(srcdir)/tests/kernel/zntrace.c $(srcdir)/tests/common/trace-format.h
	@$(MKDIR_P) tests/kernel
	$(AM_V_CC)$(CC) -static -O2 $(WARN_CFLAGS) -o $@ $(srcdir)/tests/kernel/zntrace.c

check-kernel: all tests/replay$(EXEEXT) tests/kernel/zntrace$(EXEEXT) examples/zone-log$(EXEEXT)
	@seed='$(ZN_KERNEL_SEED)'; \
	[ -n "$$seed" ] || seed=$$(od -An -N4 -tu4 /dev/urandom | tr -d ' '); \
	rc=0; failed=; report="$(abs_builddir)/tests/kernel/failed-parts.log"; rm -f "$$report"; \
	for tier in $(ZN_KERNEL_TIERS); do \
	  case $$tier in \
	    6.1) script=check-kernel.sh work=run keep=failed ;; \
	    6.12) script="check-ublk.sh check-nvme.sh" work=run-6.12 keep=failed-6.12 ;; \
	    7.3) script=check-nullblk.sh work=run-7.3 keep=failed-7.3 ;; \
	    *) echo "check-kernel: unknown tier '$$tier' (ZN_KERNEL_TIERS: 6.1 6.12 7.3)"; rc=1; continue ;; \
	  esac; \
	  for part in $$script; do \
	  echo "check-kernel: ---- tier $$tier ($$part)"; \
	  case $$part in check-nvme.sh) pwork=$$work-nvme ;; *) pwork=$$work ;; esac; \
	  log="$(abs_builddir)/tests/kernel/$$pwork.log"; rm -f "$$log.rc"; \
	  { ZONEDNULL_PLUGIN='$(abs_builddir)/plugin/.libs/nbdkit-zonednull-plugin.so' \
	  ZONEDNULL_SERVER='$(abs_builddir)/server/zonednull-server$(EXEEXT)' \
	  ZONEDNULL_UBLK='$(ZONEDNULL_UBLK)' \
	  ZONEDNULL_PRELOAD='$(SANITIZER_PRELOAD)' \
	  ZONEDNULL_CLI='$(abs_builddir)/cli/zonednull' \
	  ZONEDNULL_ZONE_LOG='$(abs_builddir)/examples/zone-log' \
	  ZONEDNULL_SRCDIR='$(abs_srcdir)' \
	  REPLAY='$(abs_builddir)/tests/replay$(EXEEXT)' \
	  ZNTRACE='$(abs_builddir)/tests/kernel/zntrace$(EXEEXT)' \
	  NBDKIT='$(NBDKIT)' \
	  FIO_SRCDIR='$(FIO_SRCDIR)' \
	  ZN_KERNEL_CACHE='$(ZN_KERNEL_CACHE)' \
	  ZN_KERNEL_WORK="$(abs_builddir)/tests/kernel/$$pwork" \
	  ZN_KERNEL_KEEP="$(abs_builddir)/tests/kernel/$$keep" \
	  ZN_KERNEL_SEED="$$seed" \
	  ZN_KERNEL_TRACES='$(ZN_KERNEL_TRACES)' \
	  ZN_KERNEL_OPS='$(ZN_KERNEL_OPS)' \
	  ZN_NVME_TRACES='$(ZN_NVME_TRACES)' \
	  ZN_PFCHECK_STATES='$(ZN_PFCHECK_STATES)' \
	  ZN_PFCHECK_FS='$(ZN_PFCHECK_FS)' \
	  ZN_PFCHECK_CAMPAIGN='$(ZN_PFCHECK_CAMPAIGN)' \
	  $(SHELL) $(srcdir)/tests/kernel/$$part; echo $$? > "$$log.rc"; } 2>&1 | tee "$$log"; \
	  if [ "$$(cat "$$log.rc" 2>/dev/null)" != 0 ]; then \
	    rc=1; failed="$$failed $$tier:$$part"; \
	    { echo "check-kernel: ---- what failed in tier $$tier ($$part), from $$log:"; \
	      grep -E 'FAIL|not ok|[Tt]imed out|[Ee]rror' "$$log" | grep -v -E ' 0 FAIL|fail=0|XFAIL|: PASS' | tail -n 12 | grep . \
	        || tail -n 8 "$$log"; } >>"$$report"; \
	  fi; \
	  done; \
	done; \
	[ -z "$$failed" ] || { cat "$$report"; echo "check-kernel: FAILED:$$failed (seed $$seed)"; }; \
	exit $$rc

.PHONY: check-kernel
CLEANFILES += tests/kernel/zntrace$(EXEEXT) tests/kernel/*.log tests/kernel/*.log.rc

EXTRA_DIST += \
	tests/kernel/local.mk \
	tests/kernel/README.md \
	tests/kernel/check-kernel.sh \
	tests/kernel/check-ublk.sh \
	tests/kernel/check-nvme.sh \
	tests/kernel/guest-nvme.sh \
	tests/kernel/prepare-nvme.sh \
	tests/kernel/check-nullblk.sh \
	tests/kernel/check-files.sh \
	tests/kernel/replay-traces.sh \
	tests/kernel/boot.sh \
	tests/kernel/lib.sh \
	tests/kernel/draw.sh \
	tests/kernel/prepare.sh \
	tests/kernel/init \
	tests/kernel/guest-run.sh \
	tests/kernel/guest-nbd.sh \
	tests/kernel/guest-nullblk.sh \
	tests/kernel/guest-ublk.sh \
	tests/kernel/guest-files.sh \
	tests/kernel/guest-zloop.sh \
	tests/kernel/guest-pfcheck.sh \
	tests/kernel/pfcheck-xfail \
	tests/kernel/build-zloop.sh \
	tests/kernel/guest-lib.sh \
	tests/kernel/guest-ublk-connect.sh \
	tests/kernel/guest-ublk-faults.sh \
	tests/kernel/guest-ublk-unit.sh \
	tests/kernel/fetch-fio-source.sh \
	tests/kernel/prepare-consumers.sh \
	tests/kernel/guest-ublk-consumers.sh \
	tests/kernel/zntrace.c \
	tests/common/trace-format.h
