/* SPDX-License-Identifier: MIT */
/*
 * Fixed-size pools a user could build from other libraries: a free list
 * of BENCH_CAPACITY objects on
 * - Concurrency Kit's ck_stack, with the mpmc pop whose generation counter
 *   (a 16-byte CAS) defends against ABA;
 * - liburcu's lfstack: lock-free push, and cds_lfs_pop_blocking, the
 *   documented way to pop without RCU (pops take the stack's mutex);
 * - a pthread mutex around a plain list.
 * Each links its free objects through the objects' first word, as such
 * pools do. The slab is mapped once; every run refills the list.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "workloads.h"

static char *peer_slab;

static int peer_map(char *why, size_t why_len)
{
	if (!peer_slab)
		peer_slab = bench_map((size_t)BENCH_CAPACITY * BENCH_OBJ_SIZE);
	if (peer_slab)
		return 0;
	snprintf(why, why_len, "cannot map the slab");
	return -1;
}

static void *peer_obj(uint32_t i)
{
	return peer_slab + (size_t)i * BENCH_OBJ_SIZE;
}

static char peer_ctx;

static void *peer_enter(unsigned tid)
{
	(void)tid;
	return &peer_ctx;
}

static void peer_leave(void *ctx)
{
	(void)ctx;
}

static int peer_teardown(void)
{
	return 0;
}

/* Concurrency Kit */

#if __has_include(<ck_stack.h>)
#include <ck_stack.h>
#endif

#ifdef CK_F_STACK_POP_MPMC
/* The 16-byte CAS on {head, generation} needs 16-byte alignment. */
static alignas(BENCH_CACHELINE) ck_stack_t ck_free;

static int ck_init(char *why, size_t why_len)
{
	return peer_map(why, why_len);
}

static int ck_setup(unsigned nthreads)
{
	(void)nthreads;
	ck_stack_init(&ck_free);
	for (uint32_t i = BENCH_CAPACITY; i > 0; i--)
		ck_stack_push_mpmc(&ck_free, peer_obj(i - 1));
	return 0;
}

static inline void *ck_alloc(void *ctx)
{
	(void)ctx;
	return ck_stack_pop_mpmc(&ck_free);
}

static inline void ck_free_obj(void *ctx, void *obj)
{
	(void)ctx;
	ck_stack_push_mpmc(&ck_free, obj);
}

BENCH_WORKLOADS(ck, ck_alloc, ck_free_obj);
#define CK_FNS ck_fns
#else
static int ck_init(char *why, size_t why_len)
{
	snprintf(why, why_len, "ck_stack.h with an mpmc pop is missing "
			       "(apt-get install libck-dev)");
	return -1;
}

static int ck_setup(unsigned nthreads)
{
	(void)nthreads;
	return -1;
}
#define CK_FNS NULL
#endif

const struct bench_contender bench_ck = {
	.name = "ck_stack",
	.label = "pool on Concurrency Kit ck_stack (push_mpmc/pop_mpmc, "
		 "generation-counted 16-byte CAS)",
	.init = ck_init,
	.setup = ck_setup,
	.teardown = peer_teardown,
	.enter = peer_enter,
	.leave = peer_leave,
	.fns = CK_FNS,
};

/* liburcu */

#if __has_include(<urcu/lfstack.h>)
#define _LGPL_SOURCE
#include <urcu/lfstack.h>
#define HAVE_URCU_LFSTACK 1
#endif

#ifdef HAVE_URCU_LFSTACK
static alignas(BENCH_CACHELINE) struct cds_lfs_stack urcu_free;

static int urcu_init(char *why, size_t why_len)
{
	return peer_map(why, why_len);
}

static int urcu_setup(unsigned nthreads)
{
	(void)nthreads;
	cds_lfs_init(&urcu_free);
	for (uint32_t i = BENCH_CAPACITY; i > 0; i--) {
		struct cds_lfs_node *n = peer_obj(i - 1);

		cds_lfs_node_init(n);
		cds_lfs_push(&urcu_free, n);
	}
	return 0;
}

static int urcu_teardown(void)
{
	cds_lfs_destroy(&urcu_free);
	return 0;
}

static inline void *urcu_alloc(void *ctx)
{
	(void)ctx;
	return cds_lfs_pop_blocking(&urcu_free);
}

static inline void urcu_free_obj(void *ctx, void *obj)
{
	(void)ctx;
	cds_lfs_node_init(obj);
	cds_lfs_push(&urcu_free, obj);
}

BENCH_WORKLOADS(urcu, urcu_alloc, urcu_free_obj);
#define URCU_FNS urcu_fns
#else
static int urcu_init(char *why, size_t why_len)
{
	snprintf(why, why_len, "urcu/lfstack.h is missing "
			       "(apt-get install liburcu-dev)");
	return -1;
}

static int urcu_setup(unsigned nthreads)
{
	(void)nthreads;
	return -1;
}

static int urcu_teardown(void)
{
	return 0;
}
#define URCU_FNS NULL
#endif

const struct bench_contender bench_urcu = {
	.name = "urcu_lfs",
	.label = "pool on liburcu lfstack (cds_lfs_push, "
		 "cds_lfs_pop_blocking: pops serialised by its mutex)",
	.init = urcu_init,
	.setup = urcu_setup,
	.teardown = urcu_teardown,
	.enter = peer_enter,
	.leave = peer_leave,
	.fns = URCU_FNS,
};

/* a mutex around a list */

static struct {
	alignas(BENCH_CACHELINE) pthread_mutex_t lock;
	void *head;
} mutex_pool = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int mutex_init(char *why, size_t why_len)
{
	return peer_map(why, why_len);
}

static int mutex_setup(unsigned nthreads)
{
	(void)nthreads;
	mutex_pool.head = NULL;
	for (uint32_t i = BENCH_CAPACITY; i > 0; i--) {
		void **obj = peer_obj(i - 1);

		*obj = mutex_pool.head;
		mutex_pool.head = obj;
	}
	return 0;
}

static inline void *mutex_alloc(void *ctx)
{
	void **obj;

	(void)ctx;
	pthread_mutex_lock(&mutex_pool.lock);
	obj = mutex_pool.head;
	if (obj)
		mutex_pool.head = *obj;
	pthread_mutex_unlock(&mutex_pool.lock);
	return obj;
}

static inline void mutex_free(void *ctx, void *obj)
{
	(void)ctx;
	pthread_mutex_lock(&mutex_pool.lock);
	*(void **)obj = mutex_pool.head;
	mutex_pool.head = obj;
	pthread_mutex_unlock(&mutex_pool.lock);
}

BENCH_WORKLOADS(mutex, mutex_alloc, mutex_free);

const struct bench_contender bench_mutex = {
	.name = "mutex",
	.label = "pthread mutex around a free list",
	.init = mutex_init,
	.setup = mutex_setup,
	.teardown = peer_teardown,
	.enter = peer_enter,
	.leave = peer_leave,
	.fns = mutex_fns,
};
