#!/bin/sh
# SPDX-License-Identifier: MIT
# Run lfpool-stress over a matrix of thread counts and mixes; one line per
# run, a total at the end, and a failure if any run fails.
#   STRESS_MATRIX   short (make check, the default) or long (make stress)
#   STRESS_THREADS  thread counts (default: 2 4 8)
#   STRESS_OPS      operations per thread in the short matrix (default 30000)
#   STRESS_TIME     time per run in the long matrix (default 20s)
#   STRESS          the harness (default: ./lfpool-stress)
#   LFP_EMULATOR    what runs it in a cross build (make check sets it)
# An entry is mix[@N][+option...]: @N runs on a pool of N objects, where
# exhaustion is frequent (the others use 1024); each +option is passed as
# --option (+grow=4096 as --grow=4096).
set -u

stress=${STRESS:-./lfpool-stress}
matrix=${STRESS_MATRIX:-short}
threads=${STRESS_THREADS:-2 4 8}
modes=$(${LFP_EMULATOR-} "$stress" --list-modes) || exit 99

# Idle rounds on pools whose caches hold slots when the drainer steals,
# under each exhaustion policy (abort on a pool that cannot run dry); trim
# on tiny pools, bare and cached, that cannot run dry, with given-up
# caches in the registry. Both are sized for up to 8 threads; their pools
# grow with the thread count beyond that.
idle="cache,explicit,idle@128+hold=8+cache-size=16+batch-size=8"
idle="$idle pool,explicit,bulk,handoff,idle@64+hold=8"
idle="$idle cache,explicit,bulk,handle,idle@128+hold=8+cache-size=16+exhaust=grow+grow=1024"
idle="$idle cache,explicit,idle@256+hold=4+cache-size=4+exhaust=abort"
idle_long="cache,explicit,bulk,handoff,bad,idle@1024+hold=32+poison+strict+hooks"
trim="pool,trim@24+hold=2+spare-caches=256"
trim="$trim cache,explicit,trim@80+hold=2+cache-size=2+spare-caches=256"
trim="$trim cache,trim@64+hold=3+cache-size=2+exhaust=abort"
trim="$trim pool,trim@24+hold=2+exhaust=grow"
trim_long="cache,explicit,bulk,handle,bad,trim@512+hold=16+cache-size=8+poison+hooks"
# LFP_F_UNCHECKED pools (no generation): every mode that needs no
# handle, and the drainer stealing from their caches; and bare pools
# (pool: LFP_F_NO_CACHE), whose lfp_alloc and lfp_free pop and push the
# free list inline, tiny, then growing beside explicit caches.
unchecked="cache,explicit,bulk,handoff,exit,bad+unchecked"
unchecked="$unchecked cache,explicit,idle@128+hold=8+cache-size=16+batch-size=8+unchecked"
unchecked="$unchecked pool,handoff,exit,bad@32+unchecked"
unchecked="$unchecked pool,explicit,handoff,bad@64+unchecked+exhaust=grow+grow=4096"

case " $modes " in
*" cache "*)
	short="pool,handoff,exit,bad all all@32 all+poison+strict+hooks all@32+grow=4096+hooks pool,handle,deferred,exit@32 explicit,handle,deferred,handoff $idle $trim $unchecked"
	long="pool cache explicit bulk cache,handoff cache,exit cache,handle cache,deferred all all+poison+strict+hooks pool,handoff,exit,bad@32 pool,handle,deferred,exit@32 explicit,handle,deferred,handoff all@32 all@32+grow=65536+hooks $idle $idle_long $trim $trim_long $unchecked" ;;
*)
	short="pool,handoff pool,handoff,exit,bad pool,handoff,exit,bad@32 pool,handle,deferred,exit@32 pool,handoff,exit,bad+unchecked"
	long="pool pool,handoff pool,exit pool,bad pool,handle pool,deferred pool,handoff,exit,bad@32 pool,handle,deferred,exit@32" ;;
esac
case $matrix in
short) mixes=$short; limit="--ops ${STRESS_OPS:-30000}" ;;
long) mixes=$long; limit="--duration ${STRESS_TIME:-20s}" ;;
*) echo "stress-matrix.sh: STRESS_MATRIX is short or long" >&2; exit 99 ;;
esac

out=$(mktemp) && err=$(mktemp) || exit 99
trap 'rm -f "$out" "$err"' EXIT

field() {
	sed -n "s/.*[{,]\"$1\":\([0-9.]*\)[,}].*/\1/p" "$out"
}

runs=0 failed=0 total_ops=0 total_checks=0 start=$(date +%s)
total_stale=0 total_reads=0 total_overlaps=0
for t in $threads; do
	for m in $mixes; do
		opts=
		case $m in *+*) opts=--$(echo "${m#*+}" | sed 's/+/ --/g') ;; esac
		m=${m%%+*} mix=${m%@*} cap=1024
		case $m in *@*) cap=${m#*@} ;; esac
		case $mix in
		*idle*|*trim*) [ "$t" -gt 8 ] && cap=$((cap * ((t + 7) / 8))) ;;
		esac
		runs=$((runs + 1))
		# shellcheck disable=SC2086
		${LFP_EMULATOR-} "$stress" --json --no-progress --threads "$t" --mix "$mix" \
			--capacity "$cap" --seed "$runs" $limit $opts >"$out" 2>"$err"
		rc=$?
		ops=$(field ops) checks=$(field checks)
		line=$(printf '%2s threads  %-48s %11s ops in %7s s %11s ops/s' \
			"$t" "$mix cap $cap $opts" "${ops:-?}" "$(field elapsed_s)" \
			"$(field ops_per_s)")
		if [ "$matrix" = long ] && [ -n "$(field warm)" ]; then
			line="$line  rss KiB start $(($(field start) >> 10))"
			line="$line warm $(($(field warm) >> 10))"
			line="$line max $(($(field max_after_warm) >> 10))"
			line="$line end $(($(field end) >> 10))"
		fi
		if [ $rc -eq 0 ] && [ -n "$ops" ]; then
			echo "ok   $line"
			total_ops=$((total_ops + ops))
			total_checks=$((total_checks + checks))
			total_stale=$((total_stale + $(field stale)))
			total_reads=$((total_reads + $(field reads)))
			total_overlaps=$((total_overlaps + $(field overlaps)))
		else
			echo "FAIL $line (exit $rc, seed $runs)"
			cat "$out" "$err"
			failed=$((failed + 1))
		fi
	done
done
echo "stress matrix ($matrix): $runs runs, $failed failed," \
	"$total_ops operations, $total_checks objects verified," \
	"$total_stale stale handles refused, $total_reads RCU reads checked" \
	"($total_overlaps during a release), $(($(date +%s) - start)) s"
[ $failed -eq 0 ]
