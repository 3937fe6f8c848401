#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The queueing checks of tests/plugin/test-plugin-queue.c against a
# zonednull-server of three event loops (--threads=3), more than the
# suite's two: its connections, handed to the loops in turn, share the
# devices' tags, host tags and write pointers across loops.  A loop that
# frees a tag or moves a write pointer must wake the connections of the
# others that wait for one (a lost wake-up leaves a request unanswered
# and the checks stuck), and the peaks of tags in use must stay within
# the queue depths whichever loop took them.
ZONEDNULL_TARGET=server
ZONEDNULL_SERVER_THREADS=3
export ZONEDNULL_TARGET ZONEDNULL_SERVER_THREADS
exec "${ZONEDNULL_BUILDDIR:-.}/tests/plugin/test-plugin-queue"
