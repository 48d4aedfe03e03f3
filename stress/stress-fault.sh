#!/bin/sh
# The harness must catch a broken pool. lfpool-stress-fault is linked with
# a copy of the library whose stack pushes every 64th chain twice
# (LFPI_FAULT_DOUBLE_PUSH in src/stack.c), which hands slots out twice.
# Every run must fail with a violation that names a slot. (Under a
# sanitizer the broken pool may also race or trip the sanitizer once the
# harness has spoken, which changes the exit status; the message counts.)
#   STRESS_FAULT_RUNS  runs (default 4), alternating a bare and a cached mix
#   STRESS_OPS         operations per thread (default 30000)
#   STRESS_FAULT       the harness (default: ./lfpool-stress-fault)
set -u

fault=${STRESS_FAULT:-./lfpool-stress-fault}
runs=${STRESS_FAULT_RUNS:-4}
ops=${STRESS_OPS:-30000}
modes=$("$fault" --list-modes) || exit 99
case " $modes " in
*" cache "*) mixes="pool all" ;;
*) mixes="pool pool,handoff,exit" ;;
esac

out=$(mktemp) || exit 99
trap 'rm -f "$out"' EXIT

i=0 missed=0
while [ $i -lt "$runs" ]; do
	i=$((i + 1))
	# shellcheck disable=SC2086
	set -- $mixes
	[ $((i % 2)) -eq 0 ] && [ $# -gt 1 ] && shift
	"$fault" --no-progress --threads 4 --ops "$ops" --seed "$i" \
		--mix "$1" >"$out" 2>&1
	rc=$?
	caught=$(grep -m 1 -E 'VIOLATION: .*slots? [0-9]' "$out")
	if [ $rc -ne 0 ] && [ -n "$caught" ]; then
		echo "run $i (mix $1): caught, as it must be: $caught"
	else
		echo "run $i (mix $1): NOT caught (exit $rc)"
		cat "$out"
		missed=$((missed + 1))
	fi
done
echo "broken pool caught in $((runs - missed)) of $runs runs"
[ $missed -eq 0 ]
