# The NVMe/TCP session, zonednull-server's second protocol over the
# connection layer; included from Makefile.am.
proto_nvme_sources = \
	proto/served.h \
	proto/nvme/admin.c \
	proto/nvme/fabrics.c \
	proto/nvme/internal.h \
	proto/nvme/io.c \
	proto/nvme/pdu.h \
	proto/nvme/protocol.c \
	proto/nvme/session.c \
	proto/nvme/session.h \
	proto/nvme/zns.c \
	proto/nvme/zns.h

EXTRA_DIST += proto/nvme/local.mk
