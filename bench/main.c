/* SPDX-License-Identifier: MIT */
/*
 * The driver: runs every contender on every workload at every thread
 * count, several times, and writes the report.
 *
 * Noise is spread rather than avoided: repetitions are the outer loop and
 * inside each cell (workload, threads) the contenders take turns in an
 * order that rotates, so a burst of load from elsewhere lands on different
 * contenders each time. Each row is the median of its repetitions and
 * ratios are taken between medians of the same run.
 *
 * Rows whose allocator must replace malloc (jemalloc, tcmalloc) run one
 * cell at a time in a child process: this program again, with the library
 * in LD_PRELOAD and --child naming the cell; it prints one RESULT line.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <gnu/libc-version.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

static const struct bench_contender *const main_all[BENCH_NCT] = {
	&bench_local,   &bench_lfp_explicit, &bench_lfp_implicit,
	&bench_lfp_bare, &bench_glibc,       &bench_mimalloc,
	&bench_jemalloc, &bench_tcmalloc,    &bench_ck,
	&bench_urcu,    &bench_mutex,        &bench_lfp_huge,
	&bench_treiber, &bench_boost_freelist, &bench_tbbmalloc,
	&bench_lfp_unchecked, &bench_lfp_unchecked_implicit,
	&bench_rte_mempool,
};

struct main_opts {
	unsigned reps, time_ms, warm_ms;
	unsigned threads[BENCH_MAX_TCOUNTS], ntc;
	bool wl_on[WL_COUNT];
	bool ct_on[BENCH_NCT];
	bool micro_only, no_micro;
	const char *jemalloc, *tcmalloc, *out, *from;
	unsigned lfp_cache_size, lfp_batch_size;
	bool lfp_many_unchecked;
	/* --child */
	const char *child_ct;
	int child_wl;
	unsigned child_threads;
};

static void main_usage(FILE *f)
{
	fprintf(f,
		"usage: lfpbench [options]\n"
		"  --quick              3 repetitions of 60 ms (2-3 minutes)\n"
		"  --reps N             repetitions per cell (default 5)\n"
		"  --time MS            timed window per run (default 200)\n"
		"  --warmup MS          untimed start of each run (default 40)\n"
		"  --threads LIST       thread counts, e.g. 1,2,4,8 (default)\n"
		"  --workloads LIST     from: pair,burst-lifo,burst-shuffled,"
		"churn,handoff,\n"
		"                       particles, and bulk8,bulk32,bulk256,"
		"bulk32-burst (per\n"
		"                       object; the rows with bulk calls only: "
		"lfpool's cached\n"
		"                       rows and rte_mempool): the default; and,"
		" only when\n"
		"                       named, the workloads of many pools, "
		"pools1-pair ..\n"
		"                       pools8-pair, pools1-burst .. pools8-burst"
		" (N = 1, 2, 4,\n"
		"                       8), and of size-class families, "
		"family-pair,\n"
		"                       family-burst, family-mixed-pair, "
		"family-mixed-burst;\n"
		"                       'bulk', 'pools', 'family' and 'default' "
		"name those\n"
		"                       groups (pools,family: 4-5 minutes at "
		"--threads 1,2,8)\n"
		"  --contenders LIST    from: local,lfp_explicit,lfp_implicit,"
		"lfp_bare,glibc,\n"
		"                       mimalloc,jemalloc,tcmalloc,ck_stack,"
		"urcu_lfs,mutex,\n"
		"                       treiber,boost_freelist,tbbmalloc,"
		"lfp_unchecked,\n"
		"                       lfp_unchecked_implicit (LFP_F_UNCHECKED),\n"
		"                       rte_mempool (DPDK, when built with it),\n"
		"                       lfp_huge (LFP_F_HUGEPAGE; only when "
		"named here)\n"
		"  --jemalloc PATH      libjemalloc.so to LD_PRELOAD for its row\n"
		"  --tcmalloc PATH      libtcmalloc.so to LD_PRELOAD for its row\n"
		"  --out DIR            where results.md, raw.tsv and the plot "
		"data go (default .)\n"
		"  --lfp-cache-size N   lfp_config.cache_size of the cached "
		"lfpool rows (default 0:\n"
		"                       the library's default)\n"
		"  --lfp-batch-size N   lfp_config.batch_size (default 0)\n"
		"  --lfp-bare-checked   lfp_bare is LFP_F_NO_CACHE alone, not "
		"with LFP_F_UNCHECKED\n"
		"  --lfp-many-unchecked the lfp_implicit and lfp_explicit rows "
		"of the many-pool and\n"
		"                       family workloads make their pools and "
		"families (every\n"
		"                       class) with LFP_F_UNCHECKED\n"
		"  --from FILE          no measuring: rewrite the report from "
		"a raw.tsv\n"
		"  --micro              only the bulk-call measurements "
		"(lfp_resolve_bulk,\n"
		"                       lfp_alloc_bulk/lfp_free_bulk against "
		"single calls, one\n"
		"                       thread; seconds); the bulk workloads "
		"against rte_mempool\n"
		"                       are --workloads bulk\n"
		"  --no-micro           leave them out\n"
		"  --verbose            per-run details on stderr\n");
}

static int main_wl_index(const char *name)
{
	for (int i = 0; i < WL_COUNT; i++)
		if (!strcmp(name, bench_wl_name[i]))
			return i;
	return -1;
}

static int main_ct_index(const char *name)
{
	for (int i = 0; i < BENCH_NCT; i++)
		if (!strcmp(name, main_all[i]->name))
			return i;
	return -1;
}

/* A group of workloads, or a single one: the first and one past the last. */
static bool main_wl_group(const char *name, int *first, int *end)
{
	if (!strcmp(name, "default")) {
		*first = 0;
		*end = WL_FIRST_MANY;
	} else if (!strcmp(name, "bulk")) {
		*first = WL_FIRST_BULK;
		*end = WL_FIRST_MANY;
	} else if (!strcmp(name, "pools")) {
		*first = WL_FIRST_MANY;
		*end = WL_FIRST_FAMILY;
	} else if (!strcmp(name, "family")) {
		*first = WL_FIRST_FAMILY;
		*end = WL_COUNT;
	} else {
		*first = main_wl_index(name);
		*end = *first + 1;
	}
	return *first >= 0;
}

/* --workloads: names and groups; false on an unknown name. */
static bool main_wl_list(const char *arg, bool *on)
{
	char *copy = strdup(arg), *save = NULL, *tok;
	bool ok = copy != NULL;
	int first, end;

	for (int i = 0; i < WL_COUNT; i++)
		on[i] = false;
	for (tok = copy ? strtok_r(copy, ",", &save) : NULL; tok && ok;
	     tok = strtok_r(NULL, ",", &save)) {
		ok = main_wl_group(tok, &first, &end);
		if (!ok)
			fprintf(stderr, "lfpbench: unknown workload '%s'\n", tok);
		for (int i = first; ok && i < end; i++)
			on[i] = true;
	}
	free(copy);
	return ok;
}

/* Parse a comma-separated list into flags; false on an unknown name. */
static bool main_list(const char *arg, bool *on, int n,
		      int (*index)(const char *))
{
	char *copy = strdup(arg), *save = NULL, *tok;
	bool ok = copy != NULL;

	for (int i = 0; i < n; i++)
		on[i] = false;
	for (tok = copy ? strtok_r(copy, ",", &save) : NULL; tok && ok;
	     tok = strtok_r(NULL, ",", &save)) {
		int i = index(tok);

		if (i < 0)
			fprintf(stderr, "lfpbench: unknown name '%s'\n", tok);
		else
			on[i] = true;
		ok = i >= 0;
	}
	free(copy);
	return ok;
}

static bool main_threads(const char *arg, struct main_opts *o)
{
	char *end;

	o->ntc = 0;
	for (const char *s = arg; *s; s = end + (*end == ',')) {
		unsigned long v = strtoul(s, &end, 10);

		if (end == s || v < 1 || v > BENCH_MAX_THREADS ||
		    o->ntc == BENCH_MAX_TCOUNTS || (*end && *end != ',')) {
			fprintf(stderr, "lfpbench: --threads takes up to %d "
					"counts from 1 to %d\n",
				BENCH_MAX_TCOUNTS, BENCH_MAX_THREADS);
			return false;
		}
		o->threads[o->ntc++] = (unsigned)v;
	}
	return o->ntc > 0;
}

static unsigned main_num(const char *arg, unsigned lo, unsigned hi)
{
	unsigned long v = strtoul(arg, NULL, 10);

	if (v < lo || v > hi) {
		fprintf(stderr, "lfpbench: %s is not in %u..%u\n", arg, lo, hi);
		exit(2);
	}
	return (unsigned)v;
}

enum { OPT_QUICK = 256, OPT_REPS, OPT_TIME, OPT_WARM, OPT_THREADS, OPT_WL,
       OPT_CT, OPT_JE, OPT_TC, OPT_OUT, OPT_VERBOSE, OPT_CHILD, OPT_HELP,
       OPT_CACHE, OPT_BATCH, OPT_FROM, OPT_MICRO, OPT_NO_MICRO,
       OPT_BARE_CHECKED, OPT_MANY_UNCHECKED };

static const struct option main_longopts[] = {
	{ "quick", no_argument, NULL, OPT_QUICK },
	{ "reps", required_argument, NULL, OPT_REPS },
	{ "time", required_argument, NULL, OPT_TIME },
	{ "warmup", required_argument, NULL, OPT_WARM },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ "workloads", required_argument, NULL, OPT_WL },
	{ "contenders", required_argument, NULL, OPT_CT },
	{ "jemalloc", required_argument, NULL, OPT_JE },
	{ "tcmalloc", required_argument, NULL, OPT_TC },
	{ "out", required_argument, NULL, OPT_OUT },
	{ "verbose", no_argument, NULL, OPT_VERBOSE },
	{ "child", required_argument, NULL, OPT_CHILD },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "lfp-cache-size", required_argument, NULL, OPT_CACHE },
	{ "lfp-batch-size", required_argument, NULL, OPT_BATCH },
	{ "from", required_argument, NULL, OPT_FROM },
	{ "micro", no_argument, NULL, OPT_MICRO },
	{ "no-micro", no_argument, NULL, OPT_NO_MICRO },
	{ "lfp-bare-checked", no_argument, NULL, OPT_BARE_CHECKED },
	{ "lfp-many-unchecked", no_argument, NULL, OPT_MANY_UNCHECKED },
	{ NULL, 0, NULL, 0 },
};

/* Options that say what to measure and how long. */
static bool main_opt_measure(int c, const char *arg, struct main_opts *o)
{
	switch (c) {
	case OPT_QUICK:
		o->reps = 3;
		o->time_ms = 60;
		o->warm_ms = 20;
		return true;
	case OPT_REPS:
		o->reps = main_num(arg, 1, BENCH_MAX_REPS);
		return true;
	case OPT_TIME:
		o->time_ms = main_num(arg, 1, 60000);
		return true;
	case OPT_WARM:
		o->warm_ms = main_num(arg, 0, 60000);
		return true;
	case OPT_THREADS:
		return main_threads(arg, o);
	case OPT_WL:
		return main_wl_list(arg, o->wl_on);
	case OPT_CT:
		return main_list(arg, o->ct_on, BENCH_NCT, main_ct_index);
	case OPT_CACHE:
		o->lfp_cache_size = main_num(arg, 0, 1u << 20);
		return true;
	case OPT_BATCH:
		o->lfp_batch_size = main_num(arg, 0, 1u << 20);
		return true;
	case OPT_MICRO:
		o->micro_only = true;
		return true;
	case OPT_NO_MICRO:
		o->no_micro = true;
		return true;
	case OPT_BARE_CHECKED:
		bench_lfp_bare_checked();
		return true;
	case OPT_MANY_UNCHECKED:
		o->lfp_many_unchecked = true;
		return true;
	}
	return false;
}

static bool main_opt(int c, const char *arg, struct main_opts *o)
{
	switch (c) {
	case OPT_JE:
		o->jemalloc = *arg ? arg : NULL;
		return true;
	case OPT_TC:
		o->tcmalloc = *arg ? arg : NULL;
		return true;
	case OPT_OUT:
		o->out = arg;
		return true;
	case OPT_FROM:
		o->from = arg;
		return true;
	case OPT_VERBOSE:
		bench_verbose = 1;
		return true;
	case OPT_CHILD:
		o->child_ct = arg;
		return true;
	case OPT_HELP:
		main_usage(stdout);
		exit(0);
	}
	return main_opt_measure(c, arg, o);
}

static void main_parse(int argc, char **argv, struct main_opts *o)
{
	int c;

	*o = (struct main_opts){ .reps = 5, .time_ms = 200, .warm_ms = 40,
				 .threads = { 1, 2, 4, 8 }, .ntc = 4,
				 .out = "." };
	for (int i = 0; i < WL_COUNT; i++)
		o->wl_on[i] = !bench_wl_many((enum bench_workload)i);
	for (int i = 0; i < BENCH_NCT; i++)
		o->ct_on[i] = !(main_all[i]->flags & CT_OPTIONAL);
	while ((c = getopt_long(argc, argv, "", main_longopts, NULL)) != -1)
		if (!main_opt(c, optarg, o)) {
			main_usage(stderr);
			exit(2);
		}
	if (o->child_ct) {
		/* --child NAME WORKLOAD THREADS */
		if (argc - optind != 2 ||
		    (o->child_wl = main_wl_index(argv[optind])) < 0) {
			main_usage(stderr);
			exit(2);
		}
		o->child_threads = main_num(argv[optind + 1], 1,
					    BENCH_MAX_THREADS);
	} else if (optind != argc) {
		main_usage(stderr);
		exit(2);
	}
}

/* The child side: one cell, one line on stdout. */
static int main_child(const struct main_opts *o)
{
	int ci = main_ct_index(o->child_ct);
	struct bench_result r;
	char why[160] = "";

	if (ci < 0)
		return 2;
	if (main_all[ci]->init(why, sizeof(why))) {
		fprintf(stderr, "lfpbench: %s: %s\n", o->child_ct, why);
		return 3;
	}
	if (bench_run_one(main_all[ci], (enum bench_workload)o->child_wl,
			  o->child_threads, o->warm_ms, o->time_ms, &r))
		return 1;
	printf("RESULT %.6f %.6f %llu\n", r.mops, r.cpu_ns,
	       (unsigned long long)r.overflows);
	return 0;
}

static void main_exec_child(const struct main_opts *o, const char *preload,
			    const char *ct, enum bench_workload wl,
			    unsigned nthreads, int out_fd)
{
	char time_s[16], warm_s[16], thr_s[16];
	char *argv[] = { "lfpbench",     "--child", (char *)ct,
			 "--time",       time_s,    "--warmup",
			 warm_s,         (char *)bench_wl_name[wl],
			 thr_s,          bench_verbose ? "--verbose" : NULL,
			 NULL };

	snprintf(time_s, sizeof(time_s), "%u", o->time_ms);
	snprintf(warm_s, sizeof(warm_s), "%u", o->warm_ms);
	snprintf(thr_s, sizeof(thr_s), "%u", nthreads);
	if (dup2(out_fd, STDOUT_FILENO) < 0)
		_exit(127);
	setenv("LD_PRELOAD", preload, 1);
	execv("/proc/self/exe", argv);
	_exit(127);
}

static int main_run_child(const struct main_opts *o, const char *preload,
			  const char *ct, enum bench_workload wl,
			  unsigned nthreads, struct bench_result *r)
{
	char buf[256] = "";
	unsigned long long over = 0;
	size_t have = 0;
	ssize_t got;
	int fd[2], status;
	pid_t pid;

	if (pipe(fd))
		return -1;
	fflush(NULL);
	if ((pid = fork()) == 0) {
		close(fd[0]);
		main_exec_child(o, preload, ct, wl, nthreads, fd[1]);
	}
	close(fd[1]);
	while (pid > 0 && have < sizeof(buf) - 1 &&
	       (got = read(fd[0], buf + have, sizeof(buf) - 1 - have)) > 0)
		have += (size_t)got;
	close(fd[0]);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		return -1;
	memset(r, 0, sizeof(*r));
	if (sscanf(buf, "RESULT %lf %lf %llu", &r->mops, &r->cpu_ns, &over) != 3)
		return -1;
	r->overflows = over;
	return 0;
}

static bool main_applies(const struct bench_table *t, int ci,
			 enum bench_workload wl, unsigned nthreads)
{
	return t->avail[ci] && t->wl_on[wl] && bench_wl_runs(t->ct[ci], wl) &&
	       (!(t->ct[ci]->flags & CT_LOCAL_ONLY) || bench_wl_local(wl) ||
		nthreads == 1);
}

static void main_cell(const struct main_opts *o, struct bench_table *t,
		      int ci, enum bench_workload wl, unsigned ti)
{
	struct bench_cell *c = &t->cell[ci][wl][ti];
	unsigned nthreads = t->threads[ti];
	struct bench_result r;
	int err;

	if (t->ct[ci]->flags & CT_PRELOAD)
		err = main_run_child(o, t->preload[ci], t->ct[ci]->name, wl,
				     nthreads, &r);
	else
		err = bench_run_one(t->ct[ci], wl, nthreads, o->warm_ms,
				    o->time_ms, &r);
	if (err) {
		c->bad++;
		fprintf(stderr, "lfpbench: %s failed on %s with %u threads\n",
			t->ct[ci]->name, bench_wl_name[wl], nthreads);
		return;
	}
	c->r[c->n++] = r;
	if (bench_verbose)
		fprintf(stderr, "  %-12s %-15s %uT %9.2f Mops/s %8.2f ns/op\n",
			t->ct[ci]->name, bench_wl_name[wl], nthreads, r.mops,
			r.cpu_ns);
}

static double main_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Repetitions outside, contenders rotating inside each cell. */
static void main_measure(const struct main_opts *o, struct bench_table *t)
{
	double t0 = main_now();

	for (unsigned rep = 0; rep < o->reps; rep++) {
		for (int wl = 0; wl < WL_COUNT; wl++) {
			if (!t->wl_on[wl])
				continue;
			for (unsigned ti = 0; ti < t->ntc; ti++)
				for (int k = 0; k < BENCH_NCT; k++) {
					int ci = (k + (int)(rep * 3 + ti + (unsigned)wl)) %
						 BENCH_NCT;

					if (main_applies(t, ci, wl,
							 t->threads[ti]))
						main_cell(o, t, ci, wl, ti);
				}
			fprintf(stderr, "rep %u/%u %-15s done at %4.0f s\n",
				rep + 1, o->reps, bench_wl_name[wl],
				main_now() - t0);
		}
	}
	t->seconds = main_now() - t0;
}

static void main_line(const char *path, const char *key, char *out,
		      size_t len)
{
	FILE *f = fopen(path, "r");
	char line[512];

	snprintf(out, len, "unknown");
	while (f && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (key && (strncmp(line, key, strlen(key)) || !colon))
			continue;
		line[strcspn(line, "\n")] = 0;
		snprintf(out, len, "%.*s", (int)len - 1, key ? colon + 2 : line);
		break;
	}
	if (f)
		fclose(f);
}

static void main_machine(struct bench_table *t)
{
	struct utsname u;
	time_t now = time(NULL);

	main_line("/proc/cpuinfo", "model name", t->cpu, sizeof(t->cpu));
	t->ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	if (!uname(&u))
		snprintf(t->kernel, sizeof(t->kernel), "%.20s %.40s %.20s, glibc %s",
			 u.sysname, u.release, u.machine,
			 gnu_get_libc_version());
	strftime(t->date, sizeof(t->date), "%Y-%m-%d %H:%M UTC", gmtime(&now));
	main_line("/proc/loadavg", NULL, t->load_before,
		  sizeof(t->load_before));
	snprintf(t->malloc_origin, sizeof(t->malloc_origin), "%s (%s)",
		 bench_malloc_origin(),
		 bench_malloc_is_glibc() ? "glibc: checked" : "NOT glibc");
}

static void main_setup(const struct main_opts *o, struct bench_table *t)
{
	memset(t, 0, sizeof(*t));
	t->reps = o->reps;
	t->time_ms = o->time_ms;
	t->warm_ms = o->warm_ms;
	t->ntc = o->ntc;
	memcpy(t->threads, o->threads, sizeof(t->threads));
	memcpy(t->wl_on, o->wl_on, sizeof(t->wl_on));
	t->lfp_cache_size = o->lfp_cache_size;
	t->lfp_batch_size = o->lfp_batch_size;
	t->lfp_many_unchecked = o->lfp_many_unchecked;
	bench_lfp_config(o->lfp_cache_size, o->lfp_batch_size);
	bench_lfp_many_unchecked(o->lfp_many_unchecked);
	main_machine(t);
	for (int i = 0; i < BENCH_NCT; i++) {
		const struct bench_contender *ct = main_all[i];

		t->ct[i] = ct;
		if (!o->ct_on[i]) {
			snprintf(t->why[i], sizeof(t->why[i]), "not selected");
			continue;
		}
		if (ct == &bench_jemalloc || ct == &bench_tcmalloc) {
			t->preload[i] = ct == &bench_jemalloc ? o->jemalloc
							      : o->tcmalloc;
			t->avail[i] = t->preload[i] != NULL;
			if (!t->avail[i])
				snprintf(t->why[i], sizeof(t->why[i]),
					 "no library given (--%s)", ct->name);
			continue;
		}
		t->avail[i] = ct->init(t->why[i], sizeof(t->why[i])) == 0;
		if (!t->avail[i])
			fprintf(stderr, "lfpbench: %s unavailable: %s\n",
				ct->name, t->why[i]);
	}
}

static void main_estimate(const struct bench_table *t)
{
	unsigned runs = 0;

	for (int ci = 0; ci < BENCH_NCT; ci++)
		for (int wl = 0; wl < WL_COUNT; wl++)
			for (unsigned ti = 0; ti < t->ntc; ti++)
				runs += main_applies(t, ci, wl, t->threads[ti]);
	runs *= t->reps;
	fprintf(stderr, "lfpbench: %u runs of %u+%u ms, about %.0f s\n", runs,
		t->warm_ms, t->time_ms,
		runs * ((t->warm_ms + t->time_ms) * 1e-3 + 0.01));
}

int main(int argc, char **argv)
{
	static struct bench_table table;
	struct main_opts o;

	main_parse(argc, argv, &o);
	if (o.child_ct)
		return main_child(&o);
	if (o.from)
		return bench_load(&table, main_all, o.from) ||
			       bench_report(&table, o.out) ? 1 : 0;
	main_setup(&o, &table);
	if (o.micro_only)
		for (int wl = 0; wl < WL_COUNT; wl++)
			table.wl_on[wl] = false;
	main_estimate(&table);
	main_measure(&o, &table);
	if (!o.no_micro && bench_micro_run(&table, o.reps))
		return 1;
	main_line("/proc/loadavg", NULL, table.load_after,
		  sizeof(table.load_after));
	if (!bench_malloc_is_glibc())
		snprintf(table.malloc_origin, sizeof(table.malloc_origin),
			 "%s (NOT glibc at the end of the run)",
			 bench_malloc_origin());
	return bench_report(&table, o.out) ? 1 : 0;
}
