/* SPDX-License-Identifier: MIT */
/*
 * raw.tsv: every repetition of every cell, with the facts about the run in
 * "#key<TAB>value" lines first, so that --from can rebuild the report
 * without measuring again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static void raw_meta(FILE *f, const struct bench_table *t)
{
	fprintf(f, "#date\t%s\n#cpu\t%s\n#ncpu\t%ld\n#kernel\t%s\n"
		   "#load_before\t%s\n#load_after\t%s\n#malloc\t%s\n"
		   "#reps\t%u\n#time_ms\t%u\n#warm_ms\t%u\n#seconds\t%.1f\n"
		   "#lfp_cache_size\t%u\n#lfp_batch_size\t%u\n"
		   "#lfp_many_unchecked\t%u\n",
		t->date, t->cpu, t->ncpu, t->kernel, t->load_before,
		t->load_after, t->malloc_origin, t->reps, t->time_ms,
		t->warm_ms, t->seconds, t->lfp_cache_size, t->lfp_batch_size,
		(unsigned)t->lfp_many_unchecked);
	for (int ci = 0; ci < BENCH_NCT; ci++)
		if (!t->avail[ci] || t->preload[ci])
			fprintf(f, "#%s\t%s\t%s\n",
				t->avail[ci] ? "preload" : "unavailable",
				t->ct[ci]->name,
				t->avail[ci] ? t->preload[ci] : t->why[ci]);
	for (int m = 0; m < MB_COUNT; m++)
		for (unsigned r = 0; r < t->micro[m].n; r++)
			fprintf(f, "#micro\t%s\t%u\t%.3f\n",
				bench_micro_name[m], r, t->micro[m].ns[r]);
}

int bench_raw_write(const struct bench_table *t, const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	raw_meta(f, t);
	fprintf(f, "contender\tworkload\tthreads\trep\tmops\tcpu_ns_per_op\t"
		   "mailbox_overflows\n");
	for (int ci = 0; ci < BENCH_NCT; ci++)
		for (int wl = 0; wl < WL_COUNT; wl++)
			for (unsigned ti = 0; ti < t->ntc; ti++) {
				const struct bench_cell *c = &t->cell[ci][wl][ti];

				for (unsigned r = 0; r < c->n; r++)
					fprintf(f, "%s\t%s\t%u\t%u\t%.3f\t%.3f\t%llu\n",
						t->ct[ci]->name, bench_wl_name[wl],
						t->threads[ti], r, c->r[r].mops,
						c->r[r].cpu_ns,
						(unsigned long long)c->r[r].overflows);
			}
	return fclose(f);
}

/* Copy a "#key<TAB>value" line's value into a field of t. */
static void raw_meta_line(struct bench_table *t, char *key, char *val)
{
	struct {
		const char *key;
		char *dst;
		size_t len;
	} text[] = {
		{ "date", t->date, sizeof(t->date) },
		{ "cpu", t->cpu, sizeof(t->cpu) },
		{ "kernel", t->kernel, sizeof(t->kernel) },
		{ "load_before", t->load_before, sizeof(t->load_before) },
		{ "load_after", t->load_after, sizeof(t->load_after) },
		{ "malloc", t->malloc_origin, sizeof(t->malloc_origin) },
	};

	for (size_t i = 0; i < sizeof(text) / sizeof(text[0]); i++)
		if (!strcmp(key, text[i].key))
			snprintf(text[i].dst, text[i].len, "%s", val);
	if (!strcmp(key, "ncpu"))
		t->ncpu = strtol(val, NULL, 10);
	else if (!strcmp(key, "reps"))
		t->reps = (unsigned)strtoul(val, NULL, 10);
	else if (!strcmp(key, "time_ms"))
		t->time_ms = (unsigned)strtoul(val, NULL, 10);
	else if (!strcmp(key, "warm_ms"))
		t->warm_ms = (unsigned)strtoul(val, NULL, 10);
	else if (!strcmp(key, "seconds"))
		t->seconds = strtod(val, NULL);
	else if (!strcmp(key, "lfp_cache_size"))
		t->lfp_cache_size = (unsigned)strtoul(val, NULL, 10);
	else if (!strcmp(key, "lfp_batch_size"))
		t->lfp_batch_size = (unsigned)strtoul(val, NULL, 10);
	else if (!strcmp(key, "lfp_many_unchecked"))
		t->lfp_many_unchecked = strtoul(val, NULL, 10) != 0;
}

/* "#micro NAME REP NS": one repetition of a bulk-call row. */
static void raw_micro_line(struct bench_table *t, const char *key,
			   const char *val)
{
	char name[64];
	unsigned rep;
	double ns;

	if (strcmp(key, "micro") ||
	    sscanf(val, "%63s %u %lf", name, &rep, &ns) != 3)
		return;
	for (int m = 0; m < MB_COUNT; m++)
		if (!strcmp(name, bench_micro_name[m]) &&
		    t->micro[m].n < BENCH_MAX_REPS)
			t->micro[m].ns[t->micro[m].n++] = ns;
}

/* "#preload NAME PATH" or "#unavailable NAME WHY". */
static void raw_contender_line(struct bench_table *t, const char *key,
			       char *val)
{
	char *tab = strchr(val, '\t');

	if (!tab || (strcmp(key, "preload") && strcmp(key, "unavailable")))
		return;
	*tab++ = 0;
	for (int ci = 0; ci < BENCH_NCT; ci++) {
		if (strcmp(t->ct[ci]->name, val))
			continue;
		if (!strcmp(key, "preload"))
			t->preload[ci] = strdup(tab); /* lives until exit */
		else
			snprintf(t->why[ci], sizeof(t->why[ci]), "%s", tab);
	}
}

static int raw_index(const char *const *names, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return i;
	return -1;
}

static int raw_tindex(struct bench_table *t, unsigned threads)
{
	for (unsigned i = 0; i < t->ntc; i++)
		if (t->threads[i] == threads)
			return (int)i;
	if (t->ntc == BENCH_MAX_TCOUNTS)
		return -1;
	t->threads[t->ntc] = threads;
	return (int)t->ntc++;
}

/* One data line: contender workload threads rep mops ns overflows. */
static int raw_data_line(struct bench_table *t, const char *names[],
			 const char *line)
{
	char ct[64], wl[64];
	unsigned threads, rep;
	unsigned long long over;
	struct bench_result r;
	struct bench_cell *c;
	int ci, wi, ti;

	if (sscanf(line, "%63s %63s %u %u %lf %lf %llu", ct, wl, &threads,
		   &rep, &r.mops, &r.cpu_ns, &over) != 7)
		return -1;
	r.overflows = over;
	ci = raw_index(names, BENCH_NCT, ct);
	wi = raw_index(bench_wl_name, WL_COUNT, wl);
	ti = raw_tindex(t, threads);
	if (ci < 0 || wi < 0 || ti < 0)
		return -1;
	c = &t->cell[ci][wi][ti];
	if (c->n == BENCH_MAX_REPS)
		return -1;
	c->r[c->n++] = r;
	t->avail[ci] = true;
	t->wl_on[wi] = true;
	return 0;
}

int bench_load(struct bench_table *t,
	       const struct bench_contender *const all[BENCH_NCT],
	       const char *path)
{
	const char *names[BENCH_NCT];
	FILE *f = fopen(path, "r");
	char line[1024], *tab;
	int err = 0;

	if (!f) {
		perror(path);
		return -1;
	}
	memset(t, 0, sizeof(*t));
	for (int ci = 0; ci < BENCH_NCT; ci++) {
		t->ct[ci] = all[ci];
		names[ci] = all[ci]->name;
		/* A row newer than the file; its "#unavailable" line or its
		 * data say otherwise. */
		snprintf(t->why[ci], sizeof(t->why[ci]), "not in %s", path);
	}
	while (!err && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (line[0] == '#' && (tab = strchr(line, '\t'))) {
			*tab = 0;
			raw_meta_line(t, line + 1, tab + 1);
			raw_micro_line(t, line + 1, tab + 1);
			raw_contender_line(t, line + 1, tab + 1);
		} else if (strncmp(line, "contender\t", 10)) {
			err = raw_data_line(t, names, line);
		}
	}
	fclose(f);
	if (err)
		fprintf(stderr, "lfpbench: %s: cannot read '%s'\n", path, line);
	return err;
}
