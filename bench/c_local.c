/* SPDX-License-Identifier: MIT */
/*
 * The practical limit: each thread pops and pushes pointers on its own
 * array, with no atomics and no sharing. It cannot take back an object
 * another thread allocated, so it runs only the workloads where objects
 * stay with their thread (and any workload on one thread).
 */
#include <stdlib.h>

#include "bench.h"
#include "workloads.h"

#define LOCAL_PER_THREAD (BENCH_CAPACITY / BENCH_MAX_THREADS)

struct local_stack {
	alignas(BENCH_CACHELINE) uint32_t n; /* sizeof: a multiple of 64 */
	void *objs[LOCAL_PER_THREAD];
};

/* Mapped once: later runs find the pages resident, as malloc's would be. */
static char *local_slab;

static int local_init(char *why, size_t why_len)
{
	(void)why;
	(void)why_len;
	local_slab = bench_map((size_t)BENCH_CAPACITY * BENCH_OBJ_SIZE);
	return local_slab ? 0 : -1;
}

static int local_setup(unsigned nthreads)
{
	(void)nthreads;
	return 0;
}

static int local_teardown(void)
{
	return 0;
}

static void *local_enter(unsigned tid)
{
	struct local_stack *s = aligned_alloc(BENCH_CACHELINE, sizeof(*s));
	char *mine = local_slab +
		     (size_t)tid * LOCAL_PER_THREAD * BENCH_OBJ_SIZE;

	if (!s)
		return NULL;
	/* Lowest address on top, so a burst walks memory upwards. */
	for (uint32_t i = 0; i < LOCAL_PER_THREAD; i++)
		s->objs[i] = mine + (size_t)(LOCAL_PER_THREAD - 1 - i) *
					    BENCH_OBJ_SIZE;
	s->n = LOCAL_PER_THREAD;
	return s;
}

static void local_leave(void *ctx)
{
	free(ctx);
}

static inline void *local_alloc(void *ctx)
{
	struct local_stack *s = ctx;

	return s->n ? s->objs[--s->n] : NULL;
}

static inline void local_free(void *ctx, void *obj)
{
	struct local_stack *s = ctx;

	s->objs[s->n++] = obj;
}

BENCH_WORKLOADS(local, local_alloc, local_free);

const struct bench_contender bench_local = {
	.name = "local",
	.label = "thread-local array of free pointers, no sharing (the "
		 "practical limit; own-thread workloads only)",
	.flags = CT_LOCAL_ONLY,
	.init = local_init,
	.setup = local_setup,
	.teardown = local_teardown,
	.enter = local_enter,
	.leave = local_leave,
	.fns = local_fns,
};
