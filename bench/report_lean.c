/* SPDX-License-Identifier: MIT */
/*
 * The report's section on bare shared lists: lfpool's shared stack
 * without caches (lfp_bare) against the lean lists of c_lean.c on pairs,
 * the workload where nothing but the list's two operations is timed.
 * These ratios are what a bare free-list path of lfpool is held to (the
 * VS_BASE targets of report.c). Ratios are "wall-clock (CPU time)" of
 * medians of the same run, as in report.c.
 */
#include <math.h>

#include "bench.h"

static const char *const rl_lists[] = { "lfp_bare", "treiber",
					"boost_freelist" };
#define RL_NLISTS (sizeof(rl_lists) / sizeof(rl_lists[0]))

/* " | wall (cpu)" of a's speed over b's, or a dash. */
static void rl_ratio(FILE *f, const struct bench_table *t, int a, int b,
		     unsigned ti)
{
	double w = bench_speed(t, a, WL_PAIR, ti, false) /
		   bench_speed(t, b, WL_PAIR, ti, false);
	double c = bench_speed(t, a, WL_PAIR, ti, true) /
		   bench_speed(t, b, WL_PAIR, ti, true);

	if (isnan(w) || isnan(c))
		fputs(" | –", f);
	else
		fprintf(f, " | %.2f (%.2f)", w, c);
}

static void rl_ns(FILE *f, const struct bench_table *t, int ci, unsigned ti)
{
	double v = ci < 0 ? NAN : bench_median(&t->cell[ci][WL_PAIR][ti], 1);

	if (isnan(v))
		fputs(" | –", f);
	else
		fprintf(f, " | %.1f", v);
}

/* Whether a contender has a median on pairs at any thread count. */
static bool rl_measured(const struct bench_table *t, int ci)
{
	for (unsigned ti = 0; ci >= 0 && ti < t->ntc; ti++)
		if (t->cell[ci][WL_PAIR][ti].n)
			return true;
	return false;
}

void bench_report_lean(FILE *f, const struct bench_table *t)
{
	int ci[RL_NLISTS];

	for (size_t k = 0; k < RL_NLISTS; k++)
		ci[k] = bench_find(t, rl_lists[k]);
	if (!t->wl_on[WL_PAIR] || !rl_measured(t, ci[0]) ||
	    (!rl_measured(t, ci[1]) && !rl_measured(t, ci[2])))
		return;
	fprintf(f, "\n## Bare shared lists\n\nOn pairs, one list shared by "
		   "every thread and no per-thread cache: lfpool's shared "
		   "stack (lfp_bare, LFP_F_NO_CACHE | LFP_F_UNCHECKED: "
		   "one CAS each way, inline; LFP_F_NO_CACHE alone, a call "
		   "into the library with its checks, under "
		   "--lfp-bare-checked), a minimal tagged-index "
		   "Treiber stack inlined at the call site (treiber), and "
		   "boost.lockfree's freelist_stack (boost_freelist, a call "
		   "each way). CPU ns per pair, medians, and lfp_bare's speed "
		   "as a multiple of each list's, wall-clock (CPU time); the "
		   "targets of a bare free-list path are under Targets.\n\n"
		   "| threads | lfp_bare ns | treiber ns | boost_freelist ns "
		   "| lfp_bare ×treiber | lfp_bare ×boost_freelist |\n"
		   "|---:|---:|---:|---:|---:|---:|\n");
	for (unsigned ti = 0; ti < t->ntc; ti++) {
		fprintf(f, "| %u", t->threads[ti]);
		for (size_t k = 0; k < RL_NLISTS; k++)
			rl_ns(f, t, ci[k], ti);
		rl_ratio(f, t, ci[0], ci[1], ti);
		rl_ratio(f, t, ci[0], ci[2], ti);
		fputs(" |\n", f);
	}
}
