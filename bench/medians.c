/* SPDX-License-Identifier: MIT */
/*
 * Medians and speeds of the table's cells: what every section of the
 * report reads (report.c, report_many.c, report_lean.c). A leaf: it calls
 * no other file of the report, so the report's files call down to it and
 * report.c calls down to the sections, with no circle between them.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static int medians_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of v[0 .. n), sorting v; NAN when n is 0. */
static double medians_of(double *v, unsigned n)
{
	if (!n)
		return NAN;
	qsort(v, n, sizeof(v[0]), medians_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double bench_median(const struct bench_cell *c, int field)
{
	double v[BENCH_MAX_REPS];

	for (unsigned i = 0; i < c->n; i++)
		v[i] = field ? c->r[i].cpu_ns : c->r[i].mops;
	return medians_of(v, c->n);
}

double bench_micro_median(const struct bench_micro_cell *c)
{
	double v[BENCH_MAX_REPS];

	memcpy(v, c->ns, sizeof(double) * c->n);
	return medians_of(v, c->n);
}

int bench_find(const struct bench_table *t, const char *name)
{
	for (int i = 0; i < BENCH_NCT; i++)
		if (!strcmp(t->ct[i]->name, name))
			return i;
	return -1;
}

/*
 * Speed as wall-clock throughput (Mops/s), or, with cpu, as operations
 * per CPU microsecond (1000 / ns per op): the second leaves out the time
 * other programs took from the workers, so ratios of it stay put on a
 * busy machine where ratios of wall-clock throughput wander.
 */
double bench_speed(const struct bench_table *t, int ci,
		   enum bench_workload wl, unsigned ti, bool cpu)
{
	if (ci < 0)
		return NAN;
	if (cpu)
		return 1000 / bench_median(&t->cell[ci][wl][ti], 1);
	return bench_median(&t->cell[ci][wl][ti], 0);
}
