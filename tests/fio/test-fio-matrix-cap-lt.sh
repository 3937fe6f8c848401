#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The fio matrix on 4 MiB zones with a 3 MiB capacity (capacity < size).
SIZE=40
ZONE_SIZE=4
ZONE_CAP=3
. "$(dirname "$0")/../common/fio-matrix.sh"
