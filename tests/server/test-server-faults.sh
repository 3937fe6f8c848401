#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The failing fault rules of tests/plugin/test-plugin-faults.c (errors
# before and after a request runs, on writes, resets, finishes, appends
# and flushes, and their counts), against zonednull-server over NBD.
ZONEDNULL_TARGET=server
export ZONEDNULL_TARGET
exec "${ZONEDNULL_BUILDDIR:-.}/tests/plugin/test-plugin-faults"
