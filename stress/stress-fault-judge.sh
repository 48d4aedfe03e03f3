#!/bin/sh
# SPDX-License-Identifier: MIT
# stress-fault.sh must judge a run by what it reports: every form in which
# the harness reports a violation of the property a fault breaks is a
# catch, and a run that passed, reported another property, hung or
# crashed is told apart from a catch, and fails the test; only the first
# thing a run reports counts. Here a stand-in for the harness prints what
# a real run prints in each case and exits as it would; the verdict line
# of stress-fault.sh is checked against what it must say. The messages
# are the harness's own: each fragment the verdicts rely on must still be
# in the sources under stress/.
set -u
LC_ALL=C; export LC_ALL
here=${srcdir:-.}
script=$here/stress-fault.sh
tmp=${TMPDIR:-/tmp}/stress-fault-judge.$$
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp" || exit 99
failed=0

for frag in 'idle round %' 'expected %' \
	'the pool grew (LFP_EXHAUST_GROW)' 'in idle round ' \
	'after the drainer took' 'cannot run dry' 'live twice' \
	'VIOLATION: ' 'no operation completed for'; do
	cat "$here"/*.c | grep -q -F -- "$frag" || {
		echo "FAIL: no message of the harness says '$frag' any more:" \
		     "stress-fault.sh looks for it"
		failed=1
	}
done

# The stand-in: prints $FAKE_OUT, then exits $FAKE_RC, dies of signal
# $FAKE_SIG, or sleeps (FAKE_SLEEP).
fake=$tmp/fake
cat >"$fake" <<'EOF'
#!/bin/sh
[ "$1" = --list-modes ] && { echo "pool cache handoff exit"; exit 0; }
printf '%s\n' "$FAKE_OUT" >&2
[ -n "${FAKE_SLEEP-}" ] && sleep "$FAKE_SLEEP"
[ -n "${FAKE_SIG-}" ] && kill -"$FAKE_SIG" $$
exit "${FAKE_RC:-1}"
EOF
chmod +x "$fake"
# The stand-in is a script of the build machine: no emulator runs it.
LFP_EMULATOR=
export LFP_EMULATOR

V='lfpool-stress: VIOLATION:'
# What a failed run prints after its violations (stress/report.c): a
# trim run's says the pool cannot run dry, whatever went wrong.
R='lfpool-stress: FAIL
  4 threads, mix pool,trim, seed 1, capacity 24, 64 B objects, hold 2
  on exhaustion: null, and the pool cannot run dry (the threads hold and park 8 slots at most)
  violation: lfp_alloc gave thread 2 0 of the 1 objects it asked for, though the pool cannot run dry: its threads hold and park at most 8 of its 24 slots (1 in all)'
# case KIND RC WANT OUT: the verdict of one run must start with WANT.
case_() {
	kind=$1 rc=$2 want=$3 msg=$4
	got=$(STRESS_FAULT_KIND=$kind STRESS_FAULT=$fake STRESS_FAULT_RUNS=1 \
		STRESS_FAULT_HANG=2 FAKE_RC=$rc FAKE_OUT=$msg \
		sh "$script" 2>&1 | sed -n 's/^run 1 ([^)]*): //p')
	case $got in
	"$want"*) echo "ok: $kind, exit $rc: $want" ;;
	*)
		echo "FAIL: $kind, exit $rc, output '$msg':"
		echo "  stress-fault.sh said '$got', not '$want...'"
		failed=1 ;;
	esac
}

# idle: the drainer came up short, the pool grew, or it aborted.
case_ idle 1 caught "$V idle round 4: with the other 3 workers parked outside any pool call, lfp_cache_alloc gave the drainer 90 objects in all before it ran out (null), expected 96 free: capacity 128 - 32 held by the workers"
case_ idle 1 caught "$V idle round 3: the pool grew (LFP_EXHAUST_GROW) from 512 to 1024 slots when the drainer, using lfp_alloc_bulk, had 490 of the 499 slots that were free, with the other 3 workers parked outside any pool call and 13 objects held"
case_ idle 1 caught "$V lfp_alloc aborted (LFP_EXHAUST_ABORT: the pool found itself exhausted, unless it said otherwise above) in idle round 7 after the drainer took 5 of the 9 slots that were free (capacity 128, 8 held by the parked workers)
lfpool-stress: FAIL"
# The census of a round is another property.
case_ idle 1 "NOT caught: another violation" "$V idle round 2: with the other 3 workers parked, the workers holding 24 objects and the drainer 0 more, lfp_stats says 23 live and 0 deferred"
case_ idle 0 "NOT caught: the run passed" "lfpool-stress: PASS"
case_ idle 1 "HUNG: the harness saw" "$V no operation completed for 60 s: a thread is stuck"
case_ idle 1 "CRASHED: a sanitizer's report" "==1==ERROR: AddressSanitizer: heap-use-after-free on address 0x1"
case_ idle 66 "CRASHED: a sanitizer's report" "WARNING: ThreadSanitizer: data race (pid=1)"
case_ idle 2 "NOT caught: exit 2 without" "lfpool-stress: unknown option"
# A hang and a signal, for real.
got=$(STRESS_FAULT_KIND=idle STRESS_FAULT=$fake STRESS_FAULT_RUNS=1 \
	STRESS_FAULT_HANG=1 FAKE_SLEEP=30 FAKE_OUT=working sh "$script" 2>&1 |
	sed -n 's/^run 1 ([^)]*): //p')
case $got in
"HUNG: killed after 1 s"*) echo "ok: a run that hangs is killed and said to hang" ;;
*) echo "FAIL: a hanging run was judged '$got'"; failed=1 ;;
esac
got=$(STRESS_FAULT_KIND=idle STRESS_FAULT=$fake STRESS_FAULT_RUNS=1 \
	FAKE_SIG=SEGV FAKE_OUT=working sh "$script" 2>&1 |
	sed -n 's/^run 1 ([^)]*): //p')
case $got in
"CRASHED: killed by signal 11"*) echo "ok: a run that crashes is said to crash" ;;
*) echo "FAIL: a crashing run was judged '$got'"; failed=1 ;;
esac

# trim: a pool that cannot run dry ran dry, in each of its forms.
case_ trim 1 caught "$V lfp_alloc gave thread 2 0 of the 1 objects it asked for, though the pool cannot run dry: its threads hold and park at most 8 of its 24 slots"
case_ trim 1 caught "$V the pool grew (LFP_EXHAUST_GROW) at the end, from 24 to 48 slots in 1 steps, though it cannot run dry: its threads hold and park at most 8 slots"
case_ trim 1 caught "$V lfp_alloc aborted (LFP_EXHAUST_ABORT: the pool found itself exhausted, unless it said otherwise above) though it cannot run dry: its threads hold and park at most 8 of its 24 slots"
case_ trim 1 "NOT caught: another violation" "$V slot 3 live twice: lfp_alloc gave it to thread 1 while thread 2 holds it
$R"
case_ trim 1 "HUNG: the harness saw" "$V no operation completed for 61 s: a thread is stuck
$R"
# ASan's abort (abort_on_error) runs the harness's SIGABRT handler, which
# then speaks of a pool that cannot run dry: the report came first.
case_ trim 1 "CRASHED: a sanitizer's report" "==7==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x2
$V lfp_alloc aborted (LFP_EXHAUST_ABORT: the pool found itself exhausted, unless it said otherwise above) though it cannot run dry: its threads hold and park at most 8 of its 24 slots
$R"
# Another thread's abort report (an older harness wrote its report piece
# by piece) inside the first one: the first is still the catch.
case_ trim 1 caught "$V lfp_alloc aborted (LFP_EXHAUST_ABORT: the pool found itself exhausted, unless it said otherwise above) $V lfp_alloc aborted (LFP_EXHAUST_ABORT: the pool found itself exhausted, unless it said otherwise above) though it cannot run dry: its threads hold and park at most 8 of its 24 slots
though it cannot run dry: its threads hold and park at most 8 of its 24 slots
$R"
# The library's message first, the report after it on the same line.
case_ trim 1 caught "lfpool: pool \"t\" exhausted: free 0, cached 0, live 24 $V lfp_alloc aborted (LFP_EXHAUST_ABORT: the pool found itself exhausted, unless it said otherwise above) though it cannot run dry: its threads hold and park at most 8 of its 24 slots
$R"
# The library's own abort message may land inside the harness's line.
case_ trim 1 caught "lfpool-stress: VIOLATION: lfp_alloc aborted (LFP_EXHAUST_ABORT: the pool found itself exhausted, unless it said otherwise above) lfpool: pool \"t\" exhausted: free 0, cached 0, live 24
 though it cannot run dry: its threads hold and park at most 8 of its 24 slots
$R"
case_ trim 0 "NOT caught: the run passed" "lfpool-stress: PASS"

# double: a slot handed out twice, or the race it makes.
case_ double 1 caught "$V slot 17 live twice: lfp_alloc gave it to thread 3 while thread 0 holds it"
case_ double 66 caught "WARNING: ThreadSanitizer: data race (pid=5)"
case_ double 1 "NOT caught: another violation" "$V while running, lfp_stats does not add up: free 1 + cached 2 + live 3 + deferred 0, capacity 8
$V slot 4 live twice: lfp_alloc gave it to thread 1 while thread 2 holds it"
case_ double 0 "NOT caught: the run passed" "lfpool-stress: PASS"

[ $failed -eq 0 ] && echo "stress-fault.sh tells every outcome apart"
exit $failed
