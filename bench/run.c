/* SPDX-License-Identifier: MIT */
/*
 * One run: one contender, one workload, a number of threads. The workers
 * loop until told to stop; the driver thread sleeps through a warm-up,
 * then samples the operation counts, the wall clock and every worker's
 * CPU clock at the start and the end of the timed window. Setup (filling
 * churn's live set, shuffling) and teardown fall outside the window.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "bench.h"
#include "workloads.h"

/* Set by main.c from --verbose before any run; read by the contenders. */
int bench_verbose;

const char *const bench_wl_name[WL_COUNT] = {
	[WL_PAIR] = "pair",
	[WL_BURST_LIFO] = "burst-lifo",
	[WL_BURST_SHUF] = "burst-shuffled",
	[WL_CHURN] = "churn",
	[WL_HANDOFF] = "handoff",
	[WL_PARTICLE] = "particles",
	[WL_BULK8] = "bulk8",
	[WL_BULK32] = "bulk32",
	[WL_BULK256] = "bulk256",
	[WL_BULK32_BURST] = "bulk32-burst",
	[WL_POOLS1_PAIR] = "pools1-pair",
	[WL_POOLS2_PAIR] = "pools2-pair",
	[WL_POOLS4_PAIR] = "pools4-pair",
	[WL_POOLS8_PAIR] = "pools8-pair",
	[WL_POOLS1_BURST] = "pools1-burst",
	[WL_POOLS2_BURST] = "pools2-burst",
	[WL_POOLS4_BURST] = "pools4-burst",
	[WL_POOLS8_BURST] = "pools8-burst",
	[WL_FAM_PAIR] = "family-pair",
	[WL_FAM_BURST] = "family-burst",
	[WL_FAM_MIXED_PAIR] = "family-mixed-pair",
	[WL_FAM_MIXED_BURST] = "family-mixed-burst",
};

const char *const bench_wl_label[WL_COUNT] = {
	[WL_PAIR] = "allocate, write, release",
	[WL_BURST_LIFO] = "1024 allocations, then release newest first",
	[WL_BURST_SHUF] = "1024 allocations, then release in random order",
	[WL_CHURN] = "4096 live per thread; release a random one, allocate anew",
	[WL_HANDOFF] = "half the threads allocate, pass objects through a "
		       "ring, the other half release them (one thread: "
		       "fill 256, drain)",
	[WL_PARTICLE] = "per frame: spawn 256, age all, release the expired; "
			"every fourth expired one is released by the next "
			"worker",
	[WL_BULK8] = "allocate 8 in one bulk call, write them, release them "
		     "in one bulk call (per object)",
	[WL_BULK32] = "allocate 32 in one bulk call, write them, release them "
		      "in one bulk call (per object)",
	[WL_BULK256] = "allocate 256 in one bulk call, write them, release "
		       "them in one bulk call (per object)",
	[WL_BULK32_BURST] = "bulk calls of 32 until 1024 are held, then "
			    "release in bulk calls of 32, newest batch first "
			    "(per object)",
	[WL_POOLS1_PAIR] = "allocate from 1 pool, write, release",
	[WL_POOLS2_PAIR] = "allocate from pool k % 2, write, release",
	[WL_POOLS4_PAIR] = "allocate from pool k % 4, write, release",
	[WL_POOLS8_PAIR] = "allocate from pool k % 8, write, release",
	[WL_POOLS1_BURST] = "256 allocations from 1 pool, then release "
			    "newest first",
	[WL_POOLS2_BURST] = "256 allocations from 2 pools in turn, then "
			    "release newest first",
	[WL_POOLS4_BURST] = "256 allocations from 4 pools in turn, then "
			    "release newest first",
	[WL_POOLS8_BURST] = "256 allocations from 8 pools in turn, then "
			    "release newest first",
	[WL_FAM_PAIR] = "allocate 60 bytes, write, release",
	[WL_FAM_BURST] = "256 allocations of 60 bytes, then release newest "
			 "first",
	[WL_FAM_MIXED_PAIR] = "allocate 24, 60, 100, 200 bytes in turn, "
			      "write, release",
	[WL_FAM_MIXED_BURST] = "256 allocations of 24, 60, 100, 200 bytes in "
			       "turn, then release newest first",
};

bool bench_wl_local(enum bench_workload wl)
{
	return wl != WL_HANDOFF && wl != WL_PARTICLE;
}

bool bench_wl_many(enum bench_workload wl)
{
	return wl >= WL_FIRST_MANY;
}

bool bench_wl_bulk(enum bench_workload wl)
{
	return wl >= WL_FIRST_BULK && wl < WL_FIRST_MANY;
}

unsigned bench_wl_pools(enum bench_workload wl)
{
	static const unsigned n[] = { 1, 2, 4, 8 };

	if (wl < WL_FIRST_MANY || wl >= WL_FIRST_FAMILY)
		return 0;
	return n[(wl - WL_FIRST_MANY) % 4];
}

bool bench_wl_runs(const struct bench_contender *ct, enum bench_workload wl)
{
	if (bench_wl_many(wl))
		return ct->many && ct->many->fns[wl];
	return ct->fns && ct->fns[wl];
}

void *bench_map(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

long bench_rollup_kb(const char *key)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	size_t klen = strlen(key);
	char line[256];
	long v = -1;

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ':')
			v = strtol(line + klen + 1, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

void bench_unmap(void *p, size_t size)
{
	if (p)
		munmap(p, size);
}

static void *run_worker(void *arg)
{
	struct bench_worker *w = arg;
	struct bench_run *run = w->run;
	const struct bench_many *m = bench_wl_many(run->wl) ? w->ct->many
							  : NULL;

	w->ctx = m ? m->enter(w->tid) : w->ct->enter(w->tid);
	pthread_barrier_wait(&run->start);
	if (w->ctx) {
		(m ? m->fns : w->ct->fns)[run->wl](w);
	} else {
		wl_fail(w);
		if (run->wl == WL_PARTICLE)
			pthread_barrier_wait(&run->end);
	}
	if (w->ctx && m)
		m->leave(w->ctx);
	else if (w->ctx)
		w->ct->leave(w->ctx);
	return NULL;
}

struct run_sample {
	double wall;
	double cpu;
	uint64_t ops;
};

static double run_clock(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts))
		return 0;
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void run_sample(struct bench_run *run, struct run_sample *s)
{
	clockid_t cid;

	s->wall = run_clock(CLOCK_MONOTONIC);
	s->cpu = 0;
	s->ops = 0;
	for (unsigned i = 0; i < run->nthreads; i++) {
		s->ops += atomic_load_explicit(&run->w[i].ops,
					       memory_order_relaxed);
		if (!pthread_getcpuclockid(run->w[i].thread, &cid))
			s->cpu += run_clock(cid);
	}
}

static void run_sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (long)(ms % 1000) * 1000000 };

	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
}

static int run_rings(struct bench_run *run)
{
	uint32_t size = run->wl == WL_PARTICLE ? WL_MAILBOX : WL_HANDOFF_RING;

	for (unsigned i = 0; i < BENCH_MAX_THREADS; i++) {
		struct bench_ring *r = &run->ring[i];

		r->mask = size - 1;
		r->slot = calloc(size, sizeof(*r->slot));
		if (!r->slot)
			return -1;
	}
	return 0;
}

static void run_free(struct bench_run *run)
{
	for (unsigned i = 0; i < BENCH_MAX_THREADS; i++)
		free((void *)run->ring[i].slot);
	free(run);
}

static struct bench_run *run_new(const struct bench_contender *ct,
				 enum bench_workload wl, unsigned nthreads)
{
	struct bench_run *run = aligned_alloc(BENCH_CACHELINE, sizeof(*run));

	if (!run)
		return NULL;
	memset(run, 0, sizeof(*run));
	run->ct = ct;
	run->wl = wl;
	run->nthreads = nthreads;
	if (run_rings(run)) {
		run_free(run);
		return NULL;
	}
	for (unsigned i = 0; i < nthreads; i++) {
		run->w[i].run = run;
		run->w[i].ct = ct;
		run->w[i].tid = i;
		run->w[i].rng = UINT64_C(0x9E3779B97F4A7C15) * (i + 1);
	}
	return run;
}

/* Start the workers, time the window, stop them. */
static int run_timed(struct bench_run *run, unsigned warm_ms,
		     unsigned time_ms, struct run_sample *a,
		     struct run_sample *b)
{
	unsigned n = run->nthreads, started;

	pthread_barrier_init(&run->start, NULL, n + 1);
	pthread_barrier_init(&run->end, NULL, n);
	for (started = 0; started < n; started++)
		if (pthread_create(&run->w[started].thread, NULL, run_worker,
				   &run->w[started]))
			break;
	if (started < n) {
		fprintf(stderr, "lfpbench: pthread_create failed\n");
		exit(2); /* the barrier would never open */
	}
	pthread_barrier_wait(&run->start);
	run_sleep_ms(warm_ms);
	run_sample(run, a);
	run_sleep_ms(time_ms);
	run_sample(run, b);
	atomic_store_explicit(&run->stop, 1, memory_order_relaxed);
	for (unsigned i = 0; i < n; i++)
		pthread_join(run->w[i].thread, NULL);
	pthread_barrier_destroy(&run->start);
	pthread_barrier_destroy(&run->end);
	return 0;
}

int bench_run_one(const struct bench_contender *ct, enum bench_workload wl,
		  unsigned nthreads, unsigned warm_ms, unsigned time_ms,
		  struct bench_result *out)
{
	struct bench_run *run = run_new(ct, wl, nthreads);
	const struct bench_many *m = bench_wl_many(wl) ? ct->many : NULL;
	struct run_sample a, b;
	const char *failed;

	if (!run)
		return -1;
	if (!bench_wl_runs(ct, wl) ||
	    (m ? m->setup(nthreads, wl) : ct->setup(nthreads))) {
		run_free(run);
		return -1;
	}
	run_timed(run, warm_ms, time_ms, &a, &b);
	failed = (m ? m->teardown() : ct->teardown())
			 ? "the contender found itself inconsistent"
			 : NULL;
	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < nthreads; i++) {
		if (run->w[i].failed)
			failed = "an allocation failed";
		out->overflows += run->w[i].overflows;
	}
	if (!failed && b.ops <= a.ops)
		failed = "no operation completed in the timed window";
	if (!failed) {
		out->mops = (double)(b.ops - a.ops) / (b.wall - a.wall) * 1e-6;
		out->cpu_ns = (b.cpu - a.cpu) / (double)(b.ops - a.ops) * 1e9;
	}
	run_free(run);
	if (failed)
		fprintf(stderr, "lfpbench: %s, %s, %u threads: %s\n", ct->name,
			bench_wl_name[wl], nthreads, failed);
	return failed ? -1 : 0;
}
