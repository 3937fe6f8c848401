#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The CLI's whole test, against zonednull-server instead of nbdkit: the
# two servers must be interchangeable for every zone operation, limit,
# error and read-only refusal.
ZONEDNULL_TARGET=server
export ZONEDNULL_TARGET
exec "${SHELL:-/bin/sh}" "$(dirname "$0")/test-cli.sh"
