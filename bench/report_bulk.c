/* SPDX-License-Identifier: MIT */
/*
 * The report's section on the bulk workloads: lfpool's bulk calls in its
 * four cached rows against DPDK's rte_mempool_generic_get/put, per object,
 * at every thread count measured. These are the ratios the bulk targets
 * of report.c look at (at 1 and 2 threads). Ratios are "wall-clock (CPU
 * time)" of medians of the same run, as in report.c.
 */
#include <math.h>

#include "bench.h"

static const char *const rb_lfp[] = { "lfp_explicit", "lfp_unchecked",
				      "lfp_implicit",
				      "lfp_unchecked_implicit" };
#define RB_NLFP (sizeof(rb_lfp) / sizeof(rb_lfp[0]))
#define RB_BASE "rte_mempool"

/* " | wall (cpu)" of a's speed over b's, or a dash. */
static void rb_ratio(FILE *f, const struct bench_table *t, int a, int b,
		     enum bench_workload wl, unsigned ti)
{
	double w = bench_speed(t, a, wl, ti, false) /
		   bench_speed(t, b, wl, ti, false);
	double c = bench_speed(t, a, wl, ti, true) /
		   bench_speed(t, b, wl, ti, true);

	if (isnan(w) || isnan(c))
		fputs(" | –", f);
	else
		fprintf(f, " | %.2f (%.2f)", w, c);
}

static void rb_ns(FILE *f, const struct bench_table *t, int ci,
		  enum bench_workload wl, unsigned ti)
{
	double v = ci < 0 ? NAN : bench_median(&t->cell[ci][wl][ti], 1);

	if (isnan(v))
		fputs(" | –", f);
	else
		fprintf(f, " | %.2f", v);
}

/* Whether any of lfpool's rows has a median on wl. */
static bool rb_measured(const struct bench_table *t, enum bench_workload wl)
{
	for (size_t k = 0; k < RB_NLFP; k++) {
		int ci = bench_find(t, rb_lfp[k]);

		for (unsigned ti = 0; ci >= 0 && ti < t->ntc; ti++)
			if (t->cell[ci][wl][ti].n)
				return true;
	}
	return false;
}

static void rb_head(FILE *f)
{
	fputs("| workload | threads", f);
	for (size_t k = 0; k < RB_NLFP; k++)
		fprintf(f, " | %s ns", rb_lfp[k]);
	fputs(" | " RB_BASE " ns", f);
	for (size_t k = 0; k < RB_NLFP; k++)
		fprintf(f, " | %s ×" RB_BASE, rb_lfp[k]);
	fputs(" |\n|---|---:", f);
	for (size_t k = 0; k < 2 * RB_NLFP + 1; k++)
		fputs("|---:", f);
	fputs("|\n", f);
}

static void rb_row(FILE *f, const struct bench_table *t, int base,
		   enum bench_workload wl, unsigned ti)
{
	fprintf(f, "| %s | %u", bench_wl_name[wl], t->threads[ti]);
	for (size_t k = 0; k < RB_NLFP; k++)
		rb_ns(f, t, bench_find(t, rb_lfp[k]), wl, ti);
	rb_ns(f, t, base, wl, ti);
	for (size_t k = 0; k < RB_NLFP; k++)
		rb_ratio(f, t, bench_find(t, rb_lfp[k]), base, wl, ti);
	fputs(" |\n", f);
}

void bench_report_bulk(FILE *f, const struct bench_table *t)
{
	int base = bench_find(t, RB_BASE);
	bool any = false;

	for (int wl = WL_FIRST_BULK; wl < WL_FIRST_MANY; wl++)
		any = any || (t->wl_on[wl] && rb_measured(t, wl));
	if (!any)
		return;
	fprintf(f, "\n## Bulk workloads against rte_mempool\n\nn objects "
		   "taken in one call, written, released in one call (bulk8, "
		   "bulk32, bulk256), or calls of 32 up to 1024 held and back "
		   "(bulk32-burst): lfp_cache_alloc_bulk/lfp_cache_free_bulk "
		   "on each worker's lfp_cache (lfp_explicit, lfp_unchecked), "
		   "lfp_alloc_bulk/lfp_free_bulk through the implicit cache "
		   "(lfp_implicit, lfp_unchecked_implicit), and DPDK's "
		   "rte_mempool_generic_get/rte_mempool_generic_put with an "
		   "rte_mempool_cache of 256 per worker. CPU ns per object "
		   "(allocated and released), medians, and each lfpool row's "
		   "speed as a multiple of rte_mempool's, wall-clock (CPU "
		   "time): above 1, lfpool is the faster. The targets, at 1 "
		   "and 2 threads, are under Targets.\n");
	if (base < 0 || !t->avail[base])
		fprintf(f, "\nrte_mempool did not run (%s): no ratios.\n",
			base < 0 ? "not in this build" : t->why[base]);
	fputc('\n', f);
	rb_head(f);
	for (int wl = WL_FIRST_BULK; wl < WL_FIRST_MANY; wl++)
		for (unsigned ti = 0; t->wl_on[wl] && ti < t->ntc; ti++)
			rb_row(f, t, base, (enum bench_workload)wl, ti);
}
