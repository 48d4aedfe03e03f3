#!/bin/sh
# SPDX-License-Identifier: MIT
# In a ThreadSanitizer build the harness must run by hand, as the README
# shows, with no suppressions file: its own, built in from tests/tsan.supp,
# hide the race inside Debian's uninstrumented liburcu (rcu_barrier frees
# on its thread what it allocated on the caller's). The default mix has
# deferred releases, so the run goes through call_rcu and rcu_barrier.
#   STRESS_OPS  operations per thread (default 15000)
#   STRESS      the harness (default: ./lfpool-stress)
set -u

stress=${STRESS:-./lfpool-stress}
# Exactly what a user types, plus a short wait at exit for liburcu's thread.
TSAN_OPTIONS="halt_on_error=1 atexit_sleep_ms=50"
export TSAN_OPTIONS

out=$("$stress" --threads 8 --no-progress --ops "${STRESS_OPS:-15000}" 2>&1)
status=$?
if [ $status -ne 0 ] || printf '%s\n' "$out" | grep -q 'WARNING: ThreadSanitizer'; then
	printf 'FAIL: lfpool-stress without a suppressions file (exit %d):\n%s\n' \
		"$status" "$out"
	exit 1
fi
echo "lfpool-stress ran under ThreadSanitizer with its built-in suppressions only"
