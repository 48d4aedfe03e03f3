#!/bin/sh
# SPDX-License-Identifier: MIT
# The harness's idle mode must catch the fault of lfpool-stress-fault-idle:
# see stress-fault.sh.
STRESS_FAULT_KIND=idle
export STRESS_FAULT_KIND
exec "${0%/*}/stress-fault.sh" "$@"
