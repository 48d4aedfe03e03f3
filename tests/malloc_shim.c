/* SPDX-License-Identifier: MIT */
/*
 * A program whose malloc is built on lfpool: requests of up to SHIM_MAX
 * bytes come from one pool, the rest from glibc. This is what an
 * allocator over pools, or an LD_PRELOAD shim serving small sizes, does.
 * lfpool must not call malloc itself on the way (a thread's first
 * lfp_alloc used to malloc its cache, which came back here and recursed
 * until the stack overflowed). Threads start, allocate, hand objects to
 * each other and exit, so every thread's first call is exercised.
 *
 * Exit 0 on success; a recursion shows as a crash. Not for sanitizer
 * builds: they bring an allocator of their own.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lfpool.h"

#define SHIM_MAX 512
#define THREADS 8
#define ROUNDS 20000

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);
void __libc_free(void *p);

static struct lfp_pool *shim_pool;
static _Atomic int shim_state; /* 0 none, 1 being made, 2 ready */
static _Atomic uint64_t shim_served, shim_nulls, shim_depth_max;
static _Thread_local unsigned shim_depth;

static struct lfp_pool *shim_ready(void)
{
	struct lfp_config cfg = { .obj_size = SHIM_MAX, .capacity = 1 << 16 };
	int none = 0;

	if (atomic_load(&shim_state) == 2)
		return shim_pool;
	/* lfp_create may malloc inside libc (pthread_atfork): glibc's then. */
	if (!atomic_compare_exchange_strong(&shim_state, &none, 1))
		return NULL;
	if (lfp_create(&cfg, &shim_pool)) {
		fputs("malloc_shim: lfp_create failed\n", stderr);
		abort();
	}
	atomic_store(&shim_state, 2);
	return shim_pool;
}

void *malloc(size_t n)
{
	struct lfp_pool *pool = n <= SHIM_MAX ? shim_ready() : NULL;
	void *p = NULL;

	if (pool) {
		/* Depth 2: a libc call inside a thread's cache setup called
		 * malloc, which lfpool serves from its shared list; any
		 * deeper is a recursion. */
		if (++shim_depth > atomic_load(&shim_depth_max))
			atomic_store(&shim_depth_max, shim_depth);
		if (shim_depth > 64) {
			fputs("malloc_shim: malloc recursed through lfp_alloc\n",
			      stderr);
			abort();
		}
		p = lfp_alloc(pool);
		shim_depth--;
		if (p)
			atomic_fetch_add(&shim_served, 1);
		else
			atomic_fetch_add(&shim_nulls, 1);
	}
	return p ? p : __libc_malloc(n);
}

void free(void *p)
{
	if (p && atomic_load(&shim_state) == 2 && lfp_owns(shim_pool, p)) {
		if (lfp_free(shim_pool, p)) {
			fputs("malloc_shim: lfp_free refused a pointer\n", stderr);
			abort();
		}
		return;
	}
	__libc_free(p);
}

void *calloc(size_t n, size_t size)
{
	void *p;

	if (size && n > SIZE_MAX / size)
		return NULL;
	if (n * size > SHIM_MAX)
		return __libc_calloc(n, size);
	if ((p = malloc(n * size)))
		memset(p, 0, n * size);
	return p;
}

void *realloc(void *p, size_t n)
{
	void *q;

	if (!p)
		return malloc(n);
	if (atomic_load(&shim_state) != 2 || !lfp_owns(shim_pool, p))
		return __libc_realloc(p, n);
	if (n <= SHIM_MAX)
		return p;
	if ((q = __libc_malloc(n))) {
		memcpy(q, p, SHIM_MAX);
		free(p);
	}
	return q;
}

static char *volatile shim_mailbox[THREADS];

static void *shim_worker(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;
	char *mine[16] = { 0 }, *got;

	for (unsigned r = 0; r < ROUNDS; r++) {
		unsigned k = r % 16;

		free(mine[k]);
		mine[k] = malloc(1 + (r * 37 + id) % SHIM_MAX);
		if (!mine[k])
			abort();
		memset(mine[k], (int)id, 1);
		/* Hand one to the next thread now and then: cross-thread frees. */
		if (r % 64 == 0) {
			got = __atomic_exchange_n(&shim_mailbox[(id + 1) % THREADS],
						  mine[k], __ATOMIC_ACQ_REL);
			mine[k] = NULL;
			free(got);
		}
	}
	for (unsigned k = 0; k < 16; k++)
		free(mine[k]);
	return NULL;
}

int main(void)
{
	pthread_t th[THREADS];
	struct lfp_stats st;
	char *s;

	/* Make the pool now: while it is being made, other threads' small
	 * mallocs go to glibc and would not be counted. */
	if (!shim_ready())
		return 1;
	for (int wave = 0; wave < 3; wave++) { /* new threads every wave */
		for (unsigned i = 0; i < THREADS; i++)
			if (pthread_create(&th[i], NULL, shim_worker,
					   (void *)(uintptr_t)i))
				return 1;
		for (unsigned i = 0; i < THREADS; i++)
			pthread_join(th[i], NULL);
	}
	for (unsigned i = 0; i < THREADS; i++)
		free(shim_mailbox[i]);
	s = strdup("served by the pool");
	free(s);
	lfp_stats(shim_pool, &st);
	printf("malloc_shim: %llu small mallocs served by the pool, %llu NULL "
	       "(%llu failed allocations, %llu steals), %llu live at the end, "
	       "deepest malloc nesting %llu\n",
	       (unsigned long long)atomic_load(&shim_served),
	       (unsigned long long)atomic_load(&shim_nulls),
	       (unsigned long long)st.failed_allocs,
	       (unsigned long long)st.steals, (unsigned long long)st.live,
	       (unsigned long long)atomic_load(&shim_depth_max));
	if (atomic_load(&shim_served) < 3 * THREADS * ROUNDS ||
	    atomic_load(&shim_depth_max) > 2) {
		fputs("malloc_shim: the pool did not serve the small mallocs, "
		      "or lfp_alloc called malloc\n", stderr);
		return 1;
	}
	return 0;
}
