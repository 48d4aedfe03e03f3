/* SPDX-License-Identifier: MIT */
/*
 * The report: ratios between medians of the same run, the targets
 * lfpool's caches are held to, as markdown (results.md); every repetition
 * (raw.tsv, raw.c); and one data file per workload for plot.gp. It calls
 * down to the sections of its own files (report_many.c, report_lean.c,
 * report_bulk.c) and to the medians (medians.c), which call nothing back.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

/* (max - min) / median of the throughputs. */
static double report_spread(const struct bench_cell *c)
{
	double lo = INFINITY, hi = 0, med = bench_median(c, 0);

	for (unsigned i = 0; i < c->n; i++) {
		lo = fmin(lo, c->r[i].mops);
		hi = fmax(hi, c->r[i].mops);
	}
	return c->n > 1 ? (hi - lo) / med : NAN;
}

static double report_mops(const struct bench_table *t, int ci,
			  enum bench_workload wl, unsigned ti)
{
	return ci < 0 ? NAN : bench_median(&t->cell[ci][wl][ti], 0);
}

/* "wall (cpu)" ratio of two contenders' speeds, or a dash. */
static void report_ratio_cell(FILE *f, const struct bench_table *t, int ci,
			      int base, enum bench_workload wl, unsigned ti)
{
	double w = bench_speed(t, ci, wl, ti, false) /
		   bench_speed(t, base, wl, ti, false);
	double c = bench_speed(t, ci, wl, ti, true) /
		   bench_speed(t, base, wl, ti, true);

	if (isnan(w))
		fputs(" | –", f);
	else
		fprintf(f, " | %.2f (%.2f)", w, c);
}

static void report_num(FILE *f, double v, const char *fmt)
{
	if (isnan(v))
		fputs(" | –", f);
	else {
		fputs(" | ", f);
		fprintf(f, fmt, v);
	}
}

static void report_head(FILE *f, const struct bench_table *t,
			const char *a, const char *b)
{
	fputs("| contender", f);
	for (unsigned i = 0; i < t->ntc; i++)
		fprintf(f, " | %s %uT", a, t->threads[i]);
	for (unsigned i = 0; i < t->ntc; i++)
		fprintf(f, " | %s %uT", b, t->threads[i]);
	fputs(" |\n|---", f);
	for (unsigned i = 0; i < 2 * t->ntc; i++)
		fputs("|---:", f);
	fputs("|\n", f);
}

static bool report_has_row(const struct bench_table *t, int ci,
			   enum bench_workload wl)
{
	for (unsigned ti = 0; ti < t->ntc; ti++)
		if (t->cell[ci][wl][ti].n || t->cell[ci][wl][ti].bad)
			return true;
	return false;
}

/* Medians of throughput and CPU time, one row per contender. */
static void report_speeds(FILE *f, const struct bench_table *t,
			  enum bench_workload wl)
{
	report_head(f, t, "Mops/s", "ns/op");
	for (int ci = 0; ci < BENCH_NCT; ci++) {
		if (!report_has_row(t, ci, wl))
			continue;
		fprintf(f, "| %s", t->ct[ci]->name);
		for (unsigned ti = 0; ti < t->ntc; ti++)
			report_num(f, report_mops(t, ci, wl, ti), "%.1f");
		for (unsigned ti = 0; ti < t->ntc; ti++)
			report_num(f, bench_median(&t->cell[ci][wl][ti], 1),
				   "%.1f");
		fputs(" |\n", f);
	}
}

static void report_ratios(FILE *f, const struct bench_table *t,
			  enum bench_workload wl)
{
	int local = bench_find(t, "local"), glibc = bench_find(t, "glibc");

	report_head(f, t, "×local", "×glibc");
	for (int ci = 0; ci < BENCH_NCT; ci++) {
		if (!report_has_row(t, ci, wl))
			continue;
		fprintf(f, "| %s", t->ct[ci]->name);
		for (unsigned ti = 0; ti < t->ntc; ti++)
			report_ratio_cell(f, t, ci, local, wl, ti);
		for (unsigned ti = 0; ti < t->ntc; ti++)
			report_ratio_cell(f, t, ci, glibc, wl, ti);
		fputs(" |\n", f);
	}
}

/* The cell whose throughput varied most between its repetitions. */
static void report_worst_spread(FILE *f, const struct bench_table *t,
				enum bench_workload wl)
{
	double worst = 0;
	int wci = 0;
	unsigned wt = 0;

	for (int ci = 0; ci < BENCH_NCT; ci++)
		for (unsigned ti = 0; ti < t->ntc; ti++) {
			double s = report_spread(&t->cell[ci][wl][ti]);

			if (!isnan(s) && s > worst) {
				worst = s;
				wci = ci;
				wt = t->threads[ti];
			}
		}
	if (worst > 0)
		fprintf(f, "\nLargest spread between repetitions: %.0f%% of the "
			   "median (%s, %u threads).\n",
			worst * 100, t->ct[wci]->name, wt);
}

static void report_workload(FILE *f, const struct bench_table *t,
			    enum bench_workload wl)
{
	fprintf(f, "\n### %s: %s\n\nThroughput (Mops/s, higher is better) "
		   "and CPU time per operation (ns, lower is better):\n\n",
		bench_wl_name[wl], bench_wl_label[wl]);
	report_speeds(f, t, wl);
	/* The thread-local array and glibc run none of these: their
	 * ratios are in the sections of report_many.c and report_bulk.c. */
	if (!bench_wl_many(wl) && !bench_wl_bulk(wl)) {
		fprintf(f, "\nSpeed as a multiple of the thread-local "
			   "array's and of glibc's: wall-clock throughput "
			   "(CPU time per operation):\n\n");
		report_ratios(f, t, wl);
	}
	report_worst_spread(f, t, wl);
}

/* targets */

/* VS_BASE: against the row named in base, at 1 and 2 threads. */
enum report_kind { VS_LOCAL, VS_PEERS, VS_MIMALLOC, SCALING, VS_BASE };

struct report_target {
	enum report_kind kind;
	const char *ct;
	const char *base; /* VS_BASE: the row measured against */
	double need;
	unsigned wls; /* the workloads it covers: bits 1 << WL_* */
	const char *text;
};

#define RT(wl) (1u << (wl))
#define RT_PEERS (RT(WL_PAIR) | RT(WL_BURST_LIFO) | RT(WL_BURST_SHUF) |       \
		  RT(WL_CHURN) | RT(WL_PARTICLE))
#define RT_LOCAL (RT(WL_PAIR) | RT(WL_CHURN))
#define RT_SCALING (RT(WL_PAIR) | RT(WL_CHURN) | RT(WL_PARTICLE))
#define RT_BULK (RT(WL_BULK8) | RT(WL_BULK32) | RT(WL_BULK256) |              \
		 RT(WL_BULK32_BURST))

/*
 * The speed targets lfpool is held to, each row on its own workloads.
 * The lfp_bare rows: lfpool's bare shared free list (LFP_F_NO_CACHE |
 * LFP_F_UNCHECKED, one CAS each way, inline) within 10% of a minimal
 * Treiber stack inlined at the call site, and no slower than boost's
 * free list, a call each way. The bulk rows: per object, an unchecked
 * pool's bulk calls no slower than DPDK's rte_mempool with a cache per
 * worker, a default pool's at least half as fast.
 */
static const struct report_target report_targets[] = {
	{ VS_PEERS, "lfp_explicit", NULL, 1.3, RT_PEERS,
	  "explicit cache >= 1.3x the best of mimalloc/jemalloc/tcmalloc/"
	  "tbbmalloc" },
	{ VS_MIMALLOC, "lfp_explicit", NULL, 1.5, RT(WL_HANDOFF),
	  "explicit cache >= 1.5x mimalloc" },
	{ VS_LOCAL, "lfp_explicit", NULL, 0.8, RT_LOCAL,
	  "explicit cache >= 0.8x the thread-local array" },
	{ VS_LOCAL, "lfp_implicit", NULL, 0.6, RT_LOCAL,
	  "implicit cache >= 0.6x the thread-local array" },
	{ SCALING, "lfp_explicit", NULL, 0.9, RT_SCALING,
	  "explicit cache: 8 threads >= 0.9x 2 threads" },
	{ SCALING, "lfp_implicit", NULL, 0.9, RT_SCALING,
	  "implicit cache: 8 threads >= 0.9x 2 threads" },
	{ VS_BASE, "lfp_unchecked", "lfp_explicit", 1.3, RT(WL_PAIR),
	  "unchecked explicit cache >= 1.3x a default pool's (1-2 threads)" },
	{ VS_LOCAL, "lfp_unchecked", NULL, 0.8, RT(WL_PAIR),
	  "unchecked explicit cache >= 0.8x the thread-local array on pairs" },
	{ VS_LOCAL, "lfp_unchecked", NULL, 0.75, RT(WL_BURST_LIFO),
	  "unchecked explicit cache >= 0.75x the thread-local array on "
	  "bursts" },
	{ VS_BASE, "lfp_bare", "treiber", 0.9, RT(WL_PAIR),
	  "bare shared list >= 0.9x the minimal Treiber stack "
	  "(1-2 threads)" },
	{ VS_BASE, "lfp_bare", "boost_freelist", 1.0, RT(WL_PAIR),
	  "bare shared list >= 1.0x boost.lockfree's free list "
	  "(1-2 threads)" },
	{ VS_BASE, "lfp_unchecked", "rte_mempool", 1.0, RT_BULK,
	  "unchecked explicit cache's bulk calls >= 1.0x rte_mempool per "
	  "object (1-2 threads)" },
	{ VS_BASE, "lfp_explicit", "rte_mempool", 0.5, RT_BULK,
	  "explicit cache's bulk calls >= 0.5x rte_mempool per object "
	  "(1-2 threads)" },
	{ VS_BASE, "lfp_unchecked_implicit", "rte_mempool", 1.0, RT_BULK,
	  "unchecked implicit cache's bulk calls >= 1.0x rte_mempool per "
	  "object (1-2 threads)" },
	{ VS_BASE, "lfp_implicit", "rte_mempool", 0.5, RT_BULK,
	  "implicit cache's bulk calls >= 0.5x rte_mempool per object "
	  "(1-2 threads)" },
};

static bool report_target_wl(const struct report_target *g,
			     enum bench_workload wl)
{
	return g->wls >> wl & 1u;
}

static int report_tindex(const struct bench_table *t, unsigned threads)
{
	for (unsigned i = 0; i < t->ntc; i++)
		if (t->threads[i] == threads)
			return (int)i;
	return -1;
}

/*
 * The ratio a target looks at, for one thread count (NAN if unknown), by
 * wall-clock throughput or, with cpu, by CPU time per operation. Handoff
 * on one thread hands nothing to anyone, so the handoff target starts at
 * two threads.
 */
static double report_ratio(const struct bench_table *t,
			   const struct report_target *g, int ci,
			   enum bench_workload wl, unsigned ti, bool cpu)
{
	double me = bench_speed(t, ci, wl, ti, cpu), best;
	int two = report_tindex(t, 2), eight = report_tindex(t, 8);

	switch (g->kind) {
	case VS_LOCAL:
		return me / bench_speed(t, bench_find(t, "local"), wl, ti, cpu);
	case VS_PEERS:
		best = fmax(bench_speed(t, bench_find(t, "mimalloc"), wl, ti,
					 cpu),
			    bench_speed(t, bench_find(t, "jemalloc"), wl, ti,
					 cpu));
		best = fmax(best, bench_speed(t, bench_find(t, "tcmalloc"),
					       wl, ti, cpu));
		best = fmax(best, bench_speed(t, bench_find(t, "tbbmalloc"),
					       wl, ti, cpu));
		return me / best;
	case VS_MIMALLOC:
		if (t->threads[ti] < 2)
			return NAN;
		return me / bench_speed(t, bench_find(t, "mimalloc"), wl, ti,
					 cpu);
	case SCALING:
		if (two < 0 || eight < 0 || ti != (unsigned)eight)
			return NAN;
		return me / bench_speed(t, ci, wl, (unsigned)two, cpu);
	case VS_BASE:
		if (t->threads[ti] > 2)
			return NAN;
		return me / bench_speed(t, bench_find(t, g->base), wl, ti, cpu);
	}
	return NAN;
}

/* The worst ratio over the thread counts; *at gets its thread count. */
static double report_worst(const struct bench_table *t,
			   const struct report_target *g, int ci,
			   enum bench_workload wl, bool cpu, unsigned *at)
{
	double worst = NAN;

	for (unsigned ti = 0; ti < t->ntc; ti++) {
		double r = report_ratio(t, g, ci, wl, ti, cpu);

		if (!isnan(r) && (isnan(worst) || r < worst)) {
			worst = r;
			*at = t->threads[ti];
		}
	}
	return worst;
}

/* Two decimals, or three where two would round a miss up to the target. */
static int report_digits(double r, double need)
{
	return r < need && r >= need - 0.005 ? 3 : 2;
}

/* One row: the worst ratios over the thread counts of one workload.
 * Returns 1 if the wall-clock ratio misses the target. */
static int report_target_row(FILE *f, const struct bench_table *t,
			     const struct report_target *g, int ci,
			     enum bench_workload wl)
{
	unsigned wat = 0, cat = 0;
	double w = report_worst(t, g, ci, wl, false, &wat);
	double c = report_worst(t, g, ci, wl, true, &cat);
	const char *verdict;

	if (isnan(w)) {
		fprintf(f, "| %s | %s | – | – | %.2f | not measured |\n",
			g->text, bench_wl_name[wl], g->need);
		return 0;
	}
	if (w >= g->need)
		verdict = c >= g->need ? "met" : "met (by CPU time: missed)";
	else
		verdict = c >= g->need ? "**missed** (by CPU time: met)"
				       : "**missed**";
	fprintf(f, "| %s | %s | %.*f at %uT | %.*f at %uT | %.2f | %s |\n",
		g->text, bench_wl_name[wl], report_digits(w, g->need), w, wat,
		report_digits(c, g->need), c, cat, g->need, verdict);
	return w < g->need;
}

static void report_targets_md(FILE *f, const struct bench_table *t)
{
	int bare = bench_find(t, "lfp_bare"), missed = 0;
	bool caches = t->avail[bench_find(t, "lfp_explicit")] ||
		      t->avail[bench_find(t, "lfp_implicit")];
	bool any = false;

	/* The targets cover the default workloads only. */
	for (int wl = 0; wl < WL_FIRST_MANY; wl++)
		any = any || t->wl_on[wl];
	if (!any)
		return;

	fprintf(f, "\n## Targets\n\nEach row is the worst ratio over the "
		   "thread counts measured, from medians of this run: by "
		   "wall-clock throughput, which the targets are written "
		   "for, and by CPU time per operation, which other load on "
		   "the machine disturbs far less. The handoff target starts "
		   "at 2 threads; the rows against a named list or pool (the "
		   "bare shared list's, the bulk calls' against rte_mempool) "
		   "look at 1 and 2 threads only.\n");
	if (!caches)
		fprintf(f, "\nThe per-thread caches are not in this build: "
			   "the rows below measure the bare shared pool "
			   "(lfp_bare) against the caches' targets, for "
			   "information only.\n");
	fprintf(f, "\n| target | workload | wall-clock | CPU time | needed "
		   "| |\n|---|---|---:|---:|---:|---|\n");
	for (size_t i = 0; i < sizeof(report_targets) / sizeof(report_targets[0]);
	     i++) {
		const struct report_target *g = &report_targets[i];
		bool named = g->kind == VS_BASE;
		int ci = caches || named ? bench_find(t, g->ct) : bare;

		if (!caches && !named && strcmp(g->ct, "lfp_explicit"))
			continue; /* one set of rows for the bare pool */
		for (int wl = 0; wl < WL_COUNT; wl++)
			if (report_target_wl(g, wl) && t->wl_on[wl])
				missed += report_target_row(f, t, g, ci, wl);
	}
	fprintf(f, "\n%d target rows missed by wall-clock throughput.\n",
		missed);
}

static void report_contenders(FILE *f, const struct bench_table *t)
{
	fprintf(f, "\n## Contenders\n\n| row | what it is | status |\n"
		   "|---|---|---|\n");
	for (int ci = 0; ci < BENCH_NCT; ci++) {
		unsigned bad = 0;

		for (int wl = 0; wl < WL_COUNT; wl++)
			for (unsigned ti = 0; ti < t->ntc; ti++)
				bad += t->cell[ci][wl][ti].bad;
		fprintf(f, "| %s | %s", t->ct[ci]->name, t->ct[ci]->label);
		if (!t->avail[ci])
			fprintf(f, " | not run: %s |\n", t->why[ci]);
		else if (t->preload[ci])
			fprintf(f, " | LD_PRELOAD=%s%s |\n", t->preload[ci],
				bad ? ", some runs failed" : "");
		else
			fprintf(f, " | %s |\n", bad ? "some runs failed" : "ran");
	}
}

static void report_header(FILE *f, const struct bench_table *t)
{
	fprintf(f,
		"# lfpool benchmark results\n\n"
		"- Date: %s\n"
		"- Machine: %s, %ld online CPUs; %s\n"
		"- Load average before / after: %s / %s\n"
		"- Each run: %d-byte objects, written in full on allocation; "
		"%u ms warm-up, then a %u ms timed window\n"
		"- Each number: the median of %u runs; within a repetition "
		"the contenders take turns in a rotating order\n"
		"- malloc in the driver process: %s\n"
		"- lfpool cache rows: lfp_config.cache_size %u, batch_size %u "
		"(0: the library's default)%s\n"
		"- Wall time of the whole measurement: %.0f s\n\n"
		"An operation is one allocation and one release (handoff: one "
		"object passed; particles: one particle spawned, aged and "
		"released; the bulk workloads: one object, allocated and "
		"released in bulk calls). Mops/s is wall-clock throughput of "
		"all threads. ns/op is the CPU time of all workers in the window divided "
		"by the operations; it leaves out time a worker spent waiting "
		"for a core, so it is the steadier number on a shared "
		"machine. Ratios are between medians of this run.\n",
		t->date, t->cpu, t->ncpu, t->kernel, t->load_before,
		t->load_after, BENCH_OBJ_SIZE, t->warm_ms, t->time_ms, t->reps,
		t->malloc_origin, t->lfp_cache_size, t->lfp_batch_size,
		t->lfp_many_unchecked ? "; the many-pool and family rows' "
					"pools and classes made with "
					"LFP_F_UNCHECKED (--lfp-many-unchecked)"
				      : "",
		t->seconds);
}

/* The bulk calls against the single ones: pairs of rows, single first. */
static void report_micro(FILE *f, const struct bench_table *t)
{
	unsigned n = 0;

	for (int m = 0; m < MB_COUNT; m++)
		n = t->micro[m].n > n ? t->micro[m].n : n;
	if (!n)
		return;
	fprintf(f, "\n## Bulk calls\n\nOne thread, CPU ns per handle "
		   "(resolve rows) or per object allocated and released "
		   "(alloc rows), medians of %u; ratio = the single call's "
		   "row over this one.\n\n| row | what | ns | ratio |\n"
		   "|---|---|---:|---:|\n", n);
	for (int m = 0; m < MB_COUNT; m++) {
		double v = bench_micro_median(&t->micro[m]);
		double single = bench_micro_median(&t->micro[m & ~1]);

		fprintf(f, "| %s | %s", bench_micro_name[m],
			bench_micro_label[m]);
		report_num(f, v, "%.2f");
		if (m & 1)
			report_num(f, single / v, "%.2fx");
		else
			fputs(" | ", f);
		fputs(" |\n", f);
	}
}

static int report_md(const struct bench_table *t, const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	report_header(f, t);
	report_contenders(f, t);
	fprintf(f, "\n## Workloads\n");
	for (int wl = 0; wl < WL_COUNT; wl++)
		if (t->wl_on[wl])
			report_workload(f, t, wl);
	bench_report_many(f, t);
	bench_report_lean(f, t);
	bench_report_bulk(f, t);
	report_targets_md(f, t);
	report_micro(f, t);
	return fclose(f);
}

/*
 * The columns of panel k (workload wl) that have a median, as plot.gp's
 * cols<k>: a contender that did not run wl (the bulk workloads for most)
 * draws nothing there. Column c is drawn in line style c - 1: a
 * contender keeps its colour in every panel (plot.gp defines styles 1 ..
 * BENCH_NCT).
 */
static void report_plot_cols(FILE *cfg, const struct bench_table *t,
			     enum bench_workload wl, unsigned k)
{
	const char *sep = "";

	fprintf(cfg, "cols%u = \"", k);
	for (int ci = 0; ci < BENCH_NCT; ci++) {
		bool any = false;

		for (unsigned ti = 0; ti < t->ntc; ti++)
			any = any || t->cell[ci][wl][ti].n;
		if (any) {
			fprintf(cfg, "%s%d", sep, ci + 2);
			sep = " ";
		}
	}
	fputs("\"\n", cfg);
}

/* plot-<workload>.dat: threads, then one column per contender ("?" = none). */
static int report_plot_dat(const struct bench_table *t, const char *dir,
			   enum bench_workload wl)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/plot-%s.dat", dir, bench_wl_name[wl]);
	if (!(f = fopen(path, "w")))
		return -1;
	fputs("threads", f);
	for (int ci = 0; ci < BENCH_NCT; ci++)
		fprintf(f, " %s", t->ct[ci]->name);
	for (unsigned ti = 0; ti < t->ntc; ti++) {
		fprintf(f, "\n%u", t->threads[ti]);
		for (int ci = 0; ci < BENCH_NCT; ci++) {
			double m = report_mops(t, ci, wl, ti);

			if (isnan(m))
				fputs(" ?", f);
			else
				fprintf(f, " %.3f", m);
		}
	}
	fputc('\n', f);
	return fclose(f);
}

/* The data files, and plot.cfg naming them and their columns for plot.gp. */
static int report_plot(const struct bench_table *t, const char *dir)
{
	char path[4096];
	unsigned k = 0;
	FILE *cfg;
	int err = 0;

	snprintf(path, sizeof(path), "%s/plot.cfg", dir);
	if (!(cfg = fopen(path, "w")))
		return -1;
	fputs("workloads = \"", cfg);
	/* plot.gp has a panel for each of the default workloads only. */
	for (int wl = 0; wl < WL_FIRST_MANY; wl++)
		if (t->wl_on[wl])
			fprintf(cfg, "%s ", bench_wl_name[wl]);
	fputs("\"\n", cfg);
	for (int wl = 0; wl < WL_FIRST_MANY; wl++) {
		if (!t->wl_on[wl])
			continue;
		report_plot_cols(cfg, t, wl, ++k);
		err |= report_plot_dat(t, dir, wl);
	}
	return fclose(cfg) | err;
}

int bench_report(const struct bench_table *t, const char *dir)
{
	char path[4096];
	int err;

	snprintf(path, sizeof(path), "%s/results.md", dir);
	err = report_md(t, path);
	snprintf(path, sizeof(path), "%s/raw.tsv", dir);
	err |= bench_raw_write(t, path);
	err |= report_plot(t, dir);
	if (err)
		fprintf(stderr, "lfpbench: cannot write the report in %s\n", dir);
	else
		fprintf(stderr, "lfpbench: wrote %s/results.md, raw.tsv and "
				"plot data\n", dir);
	return err;
}
