#!/bin/sh
# SPDX-License-Identifier: MIT
# The harness's trim mode must catch the fault of lfpool-stress-fault-trim:
# see stress-fault.sh.
STRESS_FAULT_KIND=trim
export STRESS_FAULT_KIND
exec "${0%/*}/stress-fault.sh" "$@"
