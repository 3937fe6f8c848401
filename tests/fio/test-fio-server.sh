#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# fio's zonemode=zbd matrix (capacity below the zone size) through the
# engine against zonednull-server instead of nbdkit: the engine, the
# client library and the zone rules must work unchanged on either server.
ZONEDNULL_TARGET=server
export ZONEDNULL_TARGET
exec "${SHELL:-/bin/sh}" "$(dirname "$0")/test-fio-matrix-cap-lt.sh"
