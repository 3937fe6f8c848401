#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The queueing checks of tests/plugin/test-plugin-queue.c (tags, queues, host
# tags, devices, badblocks, the volatile cache and its power cycle),
# against zonednull-server instead of nbdkit.
ZONEDNULL_TARGET=server
export ZONEDNULL_TARGET
exec "${ZONEDNULL_BUILDDIR:-.}/tests/plugin/test-plugin-queue"
