# The real-kernel tier, `make check-kernel`: Debian's kernel under qemu
# (TCG, no KVM) attaches the build's plugin and zonednull-server with its
# nbd client, and the real null_blk in the same VM is traced and replayed
# against the model and over NBD.  See tests/kernel/check-kernel.sh and the README.
#
#   make check-kernel [ZN_KERNEL_SEED=N] [ZN_KERNEL_TRACES=N] [ZN_KERNEL_OPS=N]

# Downloads (the kernel package) and the base initramfs, kept between runs.
ZN_KERNEL_CACHE ?= $(abs_top_srcdir)/.cache/kernel
# Empty: a fresh random seed, printed.  Set it to reproduce a run.
ZN_KERNEL_SEED ?=
# Random null_blk configurations per run, and ops per trace.
ZN_KERNEL_TRACES ?= 5
ZN_KERNEL_OPS ?= 400

# The guest's static tool: the null_blk tracer and O_DIRECT I/O helper.
# Built with the host compiler, without the sanitizer flags.
tests/kernel/zntrace$(EXEEXT): $(srcdir)/tests/kernel/zntrace.c $(srcdir)/tests/trace-format.h
	@$(MKDIR_P) tests/kernel
	$(AM_V_CC)$(CC) -static -O2 $(WARN_CFLAGS) -o $@ $(srcdir)/tests/kernel/zntrace.c

check-kernel: all tests/replay$(EXEEXT) tests/kernel/zntrace$(EXEEXT)
	ZONEDNULL_PLUGIN='$(abs_builddir)/plugin/.libs/nbdkit-zonednull-plugin.so' \
	ZONEDNULL_SERVER='$(abs_builddir)/server/zonednull-server$(EXEEXT)' \
	ZONEDNULL_PRELOAD='$(SANITIZER_PRELOAD)' \
	ZONEDNULL_CLI='$(abs_builddir)/cli/zonednull' \
	ZONEDNULL_SRCDIR='$(abs_srcdir)' \
	REPLAY='$(abs_builddir)/tests/replay$(EXEEXT)' \
	ZNTRACE='$(abs_builddir)/tests/kernel/zntrace$(EXEEXT)' \
	NBDKIT='$(NBDKIT)' \
	ZN_KERNEL_CACHE='$(ZN_KERNEL_CACHE)' \
	ZN_KERNEL_WORK='$(abs_builddir)/tests/kernel/run' \
	ZN_KERNEL_KEEP='$(abs_builddir)/tests/kernel/failed' \
	ZN_KERNEL_SEED='$(ZN_KERNEL_SEED)' \
	ZN_KERNEL_TRACES='$(ZN_KERNEL_TRACES)' \
	ZN_KERNEL_OPS='$(ZN_KERNEL_OPS)' \
	$(SHELL) $(srcdir)/tests/kernel/check-kernel.sh

.PHONY: check-kernel
CLEANFILES += tests/kernel/zntrace$(EXEEXT)

EXTRA_DIST += \
	tests/kernel/local.mk \
	tests/kernel/check-kernel.sh \
	tests/kernel/prepare.sh \
	tests/kernel/init \
	tests/kernel/guest-run.sh \
	tests/kernel/guest-nbd.sh \
	tests/kernel/guest-nullblk.sh \
	tests/kernel/zntrace.c \
	tests/trace-format.h
