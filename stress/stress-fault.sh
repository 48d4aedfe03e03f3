#!/bin/sh
# SPDX-License-Identifier: MIT
# The harness must catch a broken pool. Each kind of fault has a copy of
# the library built with it (src/Makefile.am), the harness linked with
# that copy, and the modes that must catch it:
#   double  lfpool-stress-fault: the stack pushes every 64th chain twice
#           (LFPI_FAULT_DOUBLE_PUSH in src/lists/stack.c), which hands slots out
#           twice; the message must name a slot
#   idle    lfpool-stress-fault-idle: a flush request left on a cache whose
#           owner went idle strands its slots (LFPI_FAULT_IDLE_FLUSH); the
#           idle mode's drainer must come up short
#   trim    lfpool-stress-fault-trim: an allocation fails while lfp_trim
#           has the free list aside (LFPI_FAULT_TRIM_RACE); the trim mode
#           must see the allocation fail, or abort
# Every run must fail, and the first thing it reports must be a
# violation of the property its fault breaks, in any of the forms the
# harness reports it (want, below): that is a catch. Anything else fails
# the test, said as what it was: the run passed (the fault went
# unnoticed), the harness reported a violation of another property, it
# stalled (its own watchdog, or the time limit here), or it crashed (a
# signal, a sanitizer's report) before any violation. Under a sanitizer
# the broken pool may also race or trip the sanitizer once the harness
# has spoken, which changes the exit status; the message counts. For the
# double kind a ThreadSanitizer race report counts as the catch too.
#   STRESS_FAULT_KIND  double (the default), idle or trim
#   STRESS_FAULT_RUNS  runs (default 4), taking the kind's setups in turn
#   STRESS_FAULT_SEED  the first run's seed (default 1; run i takes it + i - 1)
#   STRESS_OPS         double: operations per thread (default 30000)
#   STRESS_FAULT_TIME  idle and trim: the most a run may take to catch the
#                      fault (default 30s; they stop at the first catch)
#   STRESS_FAULT_HANG  seconds after which a run counts as hung and is
#                      killed (default 300)
#   STRESS_FAULT       the harness (default: the kind's)
#   LFP_EMULATOR       what runs it in a cross build (make check sets it)
set -u

kind=${STRESS_FAULT_KIND:-double}
runs=${STRESS_FAULT_RUNS:-4}
seed0=${STRESS_FAULT_SEED:-1}
ops=${STRESS_OPS:-30000}
time=${STRESS_FAULT_TIME:-30s}
hang=${STRESS_FAULT_HANG:-300}

# Setups are separated by ';', each a list of options.
case $kind in
double)
	fault=${STRESS_FAULT:-./lfpool-stress-fault}
	modes=$(${LFP_EMULATOR-} "$fault" --list-modes) || exit 99
	case " $modes " in
	*" cache "*) mixes="pool;all" ;;
	*) mixes="pool;pool,handoff,exit" ;;
	esac
	setups=$(echo "--mix $mixes" | sed 's/;/;--mix /g')
	limit="--ops $ops"
	# Two threads holding one slot (or one magazine) write it at once:
	# ThreadSanitizer may say so before the harness does, and that is
	# the broken pool caught too (a correct pool never races: the
	# stress matrix and stress-tsan.sh fail on any report).
	# Every report of a slot handed out twice names the slot (check.c,
	# handle.c, ops.c), as does the final audit (check.c).
	want='VIOLATION: .*slots? [0-9]|WARNING: ThreadSanitizer: data race' ;;
idle)
	fault=${STRESS_FAULT:-./lfpool-stress-fault-idle}
	# Caches of 16 on a pool of 128 held at 8 a worker: the caches hold
	# slots when the drainer steals. Explicit caches, on a cached pool
	# and on a bare one; the last with grow.
	setups="--capacity 128 --cache-size 16 --batch-size 8 --hold 8 --mix cache,explicit,idle"
	setups="$setups;--capacity 64 --hold 8 --mix pool,explicit,idle"
	setups="$setups;--capacity 128 --cache-size 16 --batch-size 8 --hold 8 --mix cache,explicit,bulk,idle --exhaust grow --grow 1024"
	limit="--duration $time --idle-every 1000"
	# The drainer, with every other worker parked, did not get every
	# free slot: it ran out short (drain_judge in drain.c: "expected N
	# free"), the pool grew rather than give it the slots it had
	# (drain_grew: "the pool grew"), or the pool aborted during the drain
	# (exhaust.c: "in idle round N after the drainer took"). Not the
	# census of the round (its counters), which the fault leaves alone.
	want='VIOLATION: idle round [0-9]+: .*(expected [0-9]+ free|the pool grew \(LFP_EXHAUST_GROW\))|VIOLATION: .* aborted .* in idle round [0-9]+ after the drainer took' ;;
trim)
	fault=${STRESS_FAULT:-./lfpool-stress-fault-trim}
	# Tiny pools, so that trims are short and many; 1024 given-up caches
	# in the registry, so that the steal walk between an allocation's
	# last look at the free list and its decision is long.
	setups="--capacity 24 --hold 2 --mix pool,trim --spare-caches 1024"
	# Cached: holding more than a cache's worth, a worker keeps going
	# to the shared list.
	setups="$setups;--capacity 48 --hold 3 --cache-size 2 --mix cache,trim --spare-caches 1024"
	setups="$setups;--capacity 24 --hold 2 --mix pool,trim --spare-caches 1024 --exhaust abort"
	limit="--duration $time"
	# A pool that cannot run dry (its threads hold at most part of it)
	# ran dry: an allocation came back short (stress_dry in exhaust.c),
	# the pool grew (stress_check_growth), or it aborted (exhaust.c);
	# each says "cannot run dry".
	want='VIOLATION: .*cannot run dry' ;;
*)
	echo "stress-fault.sh: STRESS_FAULT_KIND is double, idle or trim" >&2
	exit 99 ;;
esac
nsetups=$(echo "$setups" | tr ';' '\n' | wc -l)

out=$(mktemp) || exit 99
trap 'rm -f "$out"' EXIT

# The reports of a run, one a line: each report starts a line (the
# harness's lfpool-stress: ..., a sanitizer's), and the lines up to the
# next one are joined to it, whatever another thread wrote into them
# (with --exhaust abort, other threads may abort too, and the library's
# message of each can land in the middle of the harness's report). A
# report that starts in the middle of a line starts one only before the
# first report: later, it is another thread's, and splitting there would
# cut the report it landed in. A pattern is matched against one report at
# a time: across them, the closing report's "the pool cannot run dry"
# would complete any violation at all.
records() {
	awk -v head='lfpool-stress: |==[0-9]+==ERROR: AddressSanitizer|WARNING: ThreadSanitizer|[^ ]*: runtime error:' '
	$0 ~ "^(" head ")" { if (rec != "") print rec; rec = $0; n++; next }
	!n && match($0, head) {
		if (rec != "") print rec
		rec = substr($0, RSTART); n++; next
	}
	{ rec = rec " " $0 }
	END { if (rec != "") print rec }' "$1"
}
# The first thing the run reported: a violation or a sanitizer's report.
first_report() {
	records "$1" | grep -m 1 -E '^(lfpool-stress: VIOLATION:|==[0-9]+==ERROR: AddressSanitizer|WARNING: ThreadSanitizer|[^ ]*: runtime error:)'
}

# What a run that did not catch the fault did instead, from its exit
# status and the first thing it reported.
judge() {
	rc=$1 first=$(printf '%s' "$2" | cut -c 1-400)
	if [ "$rc" -eq 0 ]; then
		echo "NOT caught: the run passed"
	elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		echo "HUNG: killed after $hang s"
	else
		case $first in
		*"VIOLATION: no operation completed"*)
			echo "HUNG: the harness saw no operation complete" ;;
		*VIOLATION:*)
			echo "NOT caught: another violation was reported first: $first" ;;
		?*)
			echo "CRASHED: a sanitizer's report before any violation (exit $rc): $first" ;;
		*)
			if [ "$rc" -gt 128 ]; then
				echo "CRASHED: killed by signal $((rc - 128)) before any violation"
			else
				echo "NOT caught: exit $rc without a violation"
			fi ;;
		esac
	fi
}

i=0 missed=0 start=$(date +%s)
while [ $i -lt "$runs" ]; do
	i=$((i + 1))
	setup=$(echo "$setups" | tr ';' '\n' | sed -n "$(((i - 1) % nsetups + 1))p")
	seed=$((seed0 + i - 1))
	t0=$(date +%s)
	# shellcheck disable=SC2086
	timeout -k 10 "$hang" ${LFP_EMULATOR-} "$fault" --no-progress --threads 4 --seed "$seed" \
		$limit $setup >"$out" 2>&1
	rc=$?
	# Caught: the first thing the run reported is the violation.
	first=$(first_report "$out")
	if [ $rc -ne 0 ] && printf '%s\n' "$first" | grep -q -E "$want"; then
		echo "run $i (seed $seed, $setup): caught in" \
			"$(($(date +%s) - t0)) s, as it must be:" \
			"$(printf '%s' "$first" | cut -c 1-400)"
	else
		echo "run $i (seed $seed, $setup): $(judge $rc "$first")"
		cat "$out"
		missed=$((missed + 1))
	fi
done
echo "broken pool ($kind) caught in $((runs - missed)) of $runs runs," \
	"$(($(date +%s) - start)) s"
[ $missed -eq 0 ]
