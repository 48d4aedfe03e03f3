/* SPDX-License-Identifier: MIT */
/*
 * The report's sections on many pools and on families, from medians of
 * the same run, when those workloads were measured:
 * - many pools: CPU ns per pair at N = 1, 2, 4, 8 pools, the speed at N
 *   pools as a multiple of the speed at 1 pool, and lfpool's speed as a
 *   multiple of the best general-purpose allocator's at the same N;
 * - families: lfp_family_alloc/lfp_family_free (the lfp_implicit row)
 *   and lfp_family_cache_alloc/lfp_family_cache_free (lfp_explicit)
 *   against each allocator, on one size and on mixed sizes.
 * Every ratio is printed as "wall-clock (CPU time)", as in report.c.
 */
#include <math.h>
#include <string.h>

#include "bench.h"

static const char *const rm_peers[] = { "glibc", "mimalloc", "jemalloc",
					"tcmalloc", "tbbmalloc" };
#define RM_NPEERS (sizeof(rm_peers) / sizeof(rm_peers[0]))

static const char *const rm_lfp[] = { "lfp_explicit", "lfp_implicit" };

static double rm_ns(const struct bench_table *t, int ci,
		    enum bench_workload wl, unsigned ti)
{
	return ci < 0 ? NAN : bench_median(&t->cell[ci][wl][ti], 1);
}

static void rm_num(FILE *f, double v, const char *fmt)
{
	if (isnan(v)) {
		fputs(" | –", f);
		return;
	}
	fputs(" | ", f);
	fprintf(f, fmt, v);
}

/* " | wall (cpu)" of speed a over speed b, or a dash. */
static void rm_ratio(FILE *f, const struct bench_table *t, int ca,
		     enum bench_workload wa, int cb, enum bench_workload wb,
		     unsigned ti)
{
	double w = bench_speed(t, ca, wa, ti, false) / bench_speed(t, cb, wb, ti, false);
	double c = bench_speed(t, ca, wa, ti, true) / bench_speed(t, cb, wb, ti, true);

	if (isnan(w) || isnan(c))
		fputs(" | –", f);
	else
		fprintf(f, " | %.2f (%.2f)", w, c);
}

static bool rm_has(const struct bench_table *t, int ci, enum bench_workload wl)
{
	for (unsigned ti = 0; ci >= 0 && ti < t->ntc; ti++)
		if (t->cell[ci][wl][ti].n)
			return true;
	return false;
}

/* many pools */

/* WL_POOLS<n>_<shape> for n = 1, 2, 4, 8 (i = 0 .. 3); burst: bursts. */
static enum bench_workload rm_pools_wl(unsigned i, bool burst)
{
	return (enum bench_workload)(WL_FIRST_MANY + (burst ? 4 : 0) + i);
}

/* A contender's rows: one per thread count, ns then ratios to 1 pool. */
static void rm_pools_rows(FILE *f, const struct bench_table *t, int ci,
			  bool burst)
{
	for (unsigned ti = 0; ti < t->ntc; ti++) {
		fprintf(f, "| %s | %u", t->ct[ci]->name, t->threads[ti]);
		for (unsigned i = 0; i < 4; i++)
			rm_num(f, rm_ns(t, ci, rm_pools_wl(i, burst), ti),
			       "%.1f");
		for (unsigned i = 0; i < 4; i++)
			rm_num(f, bench_speed(t, ci, rm_pools_wl(i, burst), ti,
					   false),
			       "%.1f");
		for (unsigned i = 1; i < 4; i++)
			rm_ratio(f, t, ci, rm_pools_wl(i, burst), ci,
				 rm_pools_wl(0, burst), ti);
		fputs(" |\n", f);
	}
}

/* The fastest peer by wall-clock throughput on wl at ti, or -1. */
static int rm_best_peer(const struct bench_table *t, enum bench_workload wl,
			unsigned ti)
{
	double best = 0;
	int bi = -1;

	for (size_t p = 0; p < RM_NPEERS; p++) {
		int ci = bench_find(t, rm_peers[p]);
		double v = bench_speed(t, ci, wl, ti, false);

		if (!isnan(v) && v > best) {
			best = v;
			bi = ci;
		}
	}
	return bi;
}

static void rm_pools_vs_peers(FILE *f, const struct bench_table *t,
			      bool burst)
{
	fputs("\n| lfpool | threads | ×best N=1 | ×best N=2 | ×best N=4 "
	      "| ×best N=8 |\n|---|---:|---:|---:|---:|---:|\n", f);
	for (size_t k = 0; k < 2; k++) {
		int ci = bench_find(t, rm_lfp[k]);

		if (ci < 0 || !rm_has(t, ci, rm_pools_wl(0, burst)))
			continue;
		for (unsigned ti = 0; ti < t->ntc; ti++) {
			fprintf(f, "| %s | %u", rm_lfp[k], t->threads[ti]);
			for (unsigned i = 0; i < 4; i++) {
				enum bench_workload wl = rm_pools_wl(i, burst);
				int best = rm_best_peer(t, wl, ti);

				rm_ratio(f, t, ci, wl, best, wl, ti);
				if (best >= 0)
					fprintf(f, " %s", t->ct[best]->name);
			}
			fputs(" |\n", f);
		}
	}
}

static void rm_pools(FILE *f, const struct bench_table *t, bool burst)
{
	fprintf(f, "\n### Many pools, %s\n\nCPU ns per pair (allocation and "
		   "release), wall-clock Mops/s, and the speed at N pools as "
		   "a multiple of the speed at 1 pool, wall-clock (CPU "
		   "time); medians:\n\n| contender | threads | ns N=1 | ns N=2 "
		   "| ns N=4 | ns N=8 | Mops/s N=1 | Mops/s N=2 | Mops/s N=4 "
		   "| Mops/s N=8 | ×1 pool N=2 | ×1 pool N=4 | ×1 pool N=8 "
		   "|\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:"
		   "|---:|---:|\n",
		burst ? "bursts of 256 over the N pools in turn"
		      : "pairs, pair k on pool k % N");
	for (int ci = 0; ci < BENCH_NCT; ci++)
		if (rm_has(t, ci, rm_pools_wl(0, burst)))
			rm_pools_rows(f, t, ci, burst);
	fprintf(f, "\nlfpool's speed as a multiple of the fastest of "
		   "glibc, mimalloc, jemalloc, tcmalloc and tbbmalloc at the "
		   "same N "
		   "(named; their N pools are one heap), wall-clock (CPU "
		   "time):\n");
	rm_pools_vs_peers(f, t, burst);
}

/* families */

static void rm_family_head(FILE *f)
{
	fputs("| workload | threads | family ns | family cache ns", f);
	for (size_t p = 0; p < RM_NPEERS; p++)
		fprintf(f, " | %s ns", rm_peers[p]);
	fputs(" | family ×best | family cache ×best |\n|---|---:|---:|---:", f);
	for (size_t p = 0; p < RM_NPEERS + 2; p++)
		fputs("|---:", f);
	fputs("|\n", f);
}

static void rm_family(FILE *f, const struct bench_table *t)
{
	int imp = bench_find(t, "lfp_implicit");
	int exp = bench_find(t, "lfp_explicit");

	fprintf(f, "\n### Families\n\nOn a family of 32, 64, 128 and "
		   "256-byte classes: lfp_family_alloc/lfp_family_free (the "
		   "family column: the classes' implicit caches) and "
		   "lfp_family_cache_alloc/lfp_family_cache_free (one family "
		   "cache per worker), against malloc/free of the same sizes: "
		   "CPU ns per pair, medians, and lfpool's speed as a multiple "
		   "of the fastest allocator's, wall-clock (CPU time):\n\n");
	rm_family_head(f);
	for (int wl = WL_FIRST_FAMILY; wl < WL_COUNT; wl++) {
		if (!t->wl_on[wl])
			continue;
		for (unsigned ti = 0; ti < t->ntc; ti++) {
			int best = rm_best_peer(t, (enum bench_workload)wl, ti);

			fprintf(f, "| %s | %u", bench_wl_name[wl],
				t->threads[ti]);
			rm_num(f, rm_ns(t, imp, wl, ti), "%.1f");
			rm_num(f, rm_ns(t, exp, wl, ti), "%.1f");
			for (size_t p = 0; p < RM_NPEERS; p++)
				rm_num(f, rm_ns(t, bench_find(t, rm_peers[p]), wl, ti),
				       "%.1f");
			rm_ratio(f, t, imp, wl, best, wl, ti);
			rm_ratio(f, t, exp, wl, best, wl, ti);
			fputs(" |\n", f);
		}
	}
}

void bench_report_many(FILE *f, const struct bench_table *t)
{
	bool pools = false, family = false;

	for (int wl = WL_FIRST_MANY; wl < WL_FIRST_FAMILY; wl++)
		pools = pools || t->wl_on[wl];
	for (int wl = WL_FIRST_FAMILY; wl < WL_COUNT; wl++)
		family = family || t->wl_on[wl];
	if (pools) {
		fprintf(f, "\n## Many pools\n\nAn engine's thread allocates "
			   "64-byte objects from N pools in turn. lfpool: N "
			   "pools of 8192 objects each (4x the most one pool "
			   "has live: a burst of 256 on one pool in each of 8 "
			   "threads), the same for every N; lfp_implicit calls "
			   "lfp_alloc(pool)/lfp_free(pool, obj), lfp_explicit "
			   "keeps one lfp_cache per pool per thread. The "
			   "allocators have one heap: their N pools are the "
			   "same malloc(64)/free sequence as one.\n");
		rm_pools(f, t, false);
		rm_pools(f, t, true);
	}
	if (family)
		rm_family(f, t);
}
