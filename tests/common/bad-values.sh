# SPDX-License-Identifier: BSD-3-Clause
# The bad numeric values that every front end must refuse at start-up
# with the same message (issue 15, D): sourced by test-plugin-config.sh
# and test-server.sh, which define
#   bad_value KEY=VALUE TEXT
#   bad_values TEXT KEY=VALUE...
# to start their front end with the setting(s) and expect it to stop
# before serving, with TEXT (a fixed string) in its message.
# shellcheck shell=sh

# Every key that takes an unsigned 32-bit number.
for key in zone_nr_conv zone_max_open zone_max_active blocksize bs \
           max_sectors irqmode hw_queue_depth mbps submit_queues \
           pipeline_wait_ms pipeline_max_waiting nr_devices; do
  bad_value "$key= 7" "$key= 7: expected a non-negative integer"
  bad_value "$key=7 " "$key=7 : expected a non-negative integer"
  bad_value "$key=" "$key=: expected a non-negative integer"
  bad_value "$key=+7" "$key=+7: expected a non-negative integer"
  bad_value "$key=4294967296" "$key=4294967296: number out of range (at most 4294967295)"
  bad_value "$key=99999999999999999999" "$key=99999999999999999999: number out of range"
done
# Negative numbers, which strtoul would wrap; submit_queues is null_blk's
# int, where a negative number means 1, within an int's range.
for key in zone_nr_conv zone_max_open zone_max_active blocksize bs \
           max_sectors irqmode hw_queue_depth mbps pipeline_wait_ms \
           pipeline_max_waiting nr_devices completion_nsec \
           zone_readonly zone_offline; do
  bad_value "$key=-1" "$key=-1: expected a non-negative integer"
done
bad_value "submit_queues=-99999999999999999999" \
  "submit_queues=-99999999999999999999: number out of range (null_blk's is an int, at least -2147483648)"
bad_value "submit_queues=-2147483649" \
  "submit_queues=-2147483649: number out of range (null_blk's is an int, at least -2147483648)"
bad_value "submit_queues=- 7" "submit_queues=- 7: expected an integer"
# 64-bit numbers.
for key in completion_nsec zone_readonly zone_offline; do
  bad_value "$key= 7" "$key= 7: expected a non-negative integer"
  bad_value "$key=" "$key=: expected a non-negative integer"
  bad_value "$key=18446744073709551616" "$key=18446744073709551616: number out of range"
done
# Sizes in MiB.
for key in size zone_size zone_capacity cache_size; do
  bad_value "$key= 7" "$key= 7: expected MiB (a bare number) or a size such as 64M or 1G"
  bad_value "$key= 7M" "$key= 7M: expected MiB (a bare number) or a size such as 64M or 1G"
  bad_value "$key=-1" "$key=-1: expected MiB (a bare number) or a size such as 64M or 1G"
  bad_value "$key=" "$key=: expected MiB (a bare number) or a size such as 64M or 1G"
  bad_value "$key=99999999999999999999" "$key=99999999999999999999: number out of range"
  bad_value "$key=99999999999999999999M" "$key=99999999999999999999M: size out of range"
  bad_value "$key=17179869184T" "$key=17179869184T: size out of range"
done
# Values that parse but break a rule, named by the key as written.
bad_value "size=0" "size: must be at least 1 MiB (got 0)"
bad_value "bs=256" "bs: must be a power of 2 from 512 to 4096 bytes (got 256)"
bad_value "blocksize=256" "blocksize: must be a power of 2 from 512 to 4096 bytes (got 256)"
bad_value "nr_devices=0" "nr_devices=0: must be from 1 to 1024"
bad_value "pipeline_wait_ms=0" "pipeline_wait_ms=0: must be at least 1"

# Zone tables of all devices together against memory (issue 15): each
# device alone fits, 1024 of them do not; refused before any is made.
bad_values "nr_devices=1024 size=4194304 zone_size=1: 1024 devices of 4194304 zones need" \
  nr_devices=1024 size=4194304 zone_size=1

# The write log: a path, and one file for one device.
bad_value "log_writes=" "log_writes=: must name a file"
bad_value "log_dir=" "log_dir=: must name a directory"
bad_values "log_writes=/nonexistent/x: one file logs one device, and nr_devices=2 makes more" \
  nr_devices=2 log_writes=/nonexistent/x


# Failures on demand: the kernel's fault attribute.
bad_value "timeout=1,101,0,1" "timeout: '1,101,0,1' is not <interval>,<probability>,<space>,<times>"
bad_value "requeue=1,50,0" "requeue: '1,50,0' is not <interval>,<probability>,<space>,<times>"
