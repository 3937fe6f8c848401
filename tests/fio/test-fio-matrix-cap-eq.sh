#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The fio matrix on 1 MiB zones, capacity equal to the zone size.
SIZE=16
ZONE_SIZE=1
ZONE_CAP=1
. "$(dirname "$0")/../common/fio-matrix.sh"
