/* SPDX-License-Identifier: MIT */
/*
 * DPDK's rte_mempool, the pool a packet-processing program would use:
 * BENCH_CAPACITY objects of BENCH_OBJ_SIZE bytes made for each run with
 * rte_mempool_create's defaults (the ring_mp_mc handler: any thread gets
 * and puts, so objects may be released by another thread than took them).
 *
 * The mempool's per-lcore caches belong to EAL lcores, and the workers
 * are plain threads, for which rte_mempool_default_cache has none. Each
 * worker therefore makes a cache of its own, as DPDK offers to threads
 * that are not lcores (rte_mempool_cache_create, of the mempool's cache
 * size), and calls rte_mempool_generic_get/rte_mempool_generic_put with
 * it, n = 1 for a single object; both are inline in rte_mempool.h. Any
 * number of workers works: none needs an lcore. On leaving, a worker
 * flushes its cache into the mempool and frees it. Behind the caches,
 * the ring's multi-producer and multi-consumer paths wait for a thread
 * that moved the head to publish the tail: with more workers than free
 * CPUs, one preempted there keeps the others spinning, and the workloads
 * that reach the ring often (bursts) slow down by orders of magnitude.
 *
 * The EAL starts once per process, without hugepages, PCI devices, shared
 * files or telemetry (dpdk_eal_init). rte_eal_init pins the thread that
 * calls it to the main lcore's CPU, and threads inherit their creator's
 * CPUs: the driver's are put back, else every worker of every contender
 * would run on that one CPU.
 *
 * Only this file is compiled with DPDK's flags (bench/Makefile.am): they
 * force-include rte_config.h and set -march. Without DPDK it is the
 * stub at the end, and the row says why it did not run.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

#include "bench.h"
#include "workloads.h"

#ifdef BENCH_HAVE_DPDK
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mempool.h>

/* The mempool's per-lcore cache size, and each worker's cache's. */
#define DPDK_CACHE 256

static struct rte_mempool *dpdk_mp;

/*
 * --no-huge: anonymous memory instead of hugetlbfs, -m 512 MB of it (the
 * mempool takes 24 MB: a 64-byte header and 64 bytes of padding with
 * each object); --no-pci: no device scan; --no-shconf: no files for
 * secondary processes; --no-telemetry: no socket and no thread for it;
 * -l 0-1: a main lcore (and an idle second one) for the EAL, which the
 * workers do not use. Warnings and errors only. (--in-memory, which would
 * imply --no-shconf, is refused beside --no-huge.)
 */
static int dpdk_eal_init(void)
{
	char *argv[] = {
		"lfpbench",    "--no-huge",      "--no-pci", "-l",  "0-1",
		"--no-shconf", "--no-telemetry", "-m",       "512",
		"--log-level=warning", NULL,
	};

	return rte_eal_init((int)(sizeof(argv) / sizeof(argv[0])) - 1, argv);
}

static int dpdk_init(char *why, size_t why_len)
{
	cpu_set_t cpus;
	bool saved = !pthread_getaffinity_np(pthread_self(), sizeof(cpus),
					     &cpus);
	int err = dpdk_eal_init();

	/* Give back the CPUs rte_eal_init took (see the top of the file). */
	if (saved)
		pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
	if (err < 0) {
		snprintf(why, why_len, "rte_eal_init failed: %s",
			 rte_strerror(rte_errno));
		return -1;
	}
	return 0;
}

static int dpdk_setup(unsigned nthreads)
{
	(void)nthreads;
	dpdk_mp = rte_mempool_create("lfpbench", BENCH_CAPACITY, BENCH_OBJ_SIZE,
				     DPDK_CACHE, 0, NULL, NULL, NULL, NULL,
				     SOCKET_ID_ANY, 0);
	if (!dpdk_mp) {
		fprintf(stderr, "rte_mempool_create: %s\n",
			rte_strerror(rte_errno));
		return -1;
	}
	return 0;
}

/* Every worker has flushed its cache: every object must be back. */
static int dpdk_teardown(void)
{
	unsigned avail = rte_mempool_avail_count(dpdk_mp);
	int bad = avail != BENCH_CAPACITY;

	if (bad)
		fprintf(stderr, "rte_mempool: %u of %u objects back after the "
				"run\n",
			avail, (unsigned)BENCH_CAPACITY);
	if (bench_verbose)
		fprintf(stderr, "  rte_mempool: handler %s, %u-byte elements "
				"with %u+%u bytes of header and trailer\n",
			rte_mempool_get_ops(dpdk_mp->ops_index)->name,
			dpdk_mp->elt_size, dpdk_mp->header_size,
			dpdk_mp->trailer_size);
	rte_mempool_free(dpdk_mp);
	dpdk_mp = NULL;
	return bad;
}

/* The worker's own cache is its context; NULL makes the run fail. */
static void *dpdk_enter(unsigned tid)
{
	(void)tid;
	return rte_mempool_cache_create(DPDK_CACHE, SOCKET_ID_ANY);
}

static void dpdk_leave(void *ctx)
{
	rte_mempool_cache_flush(ctx, dpdk_mp);
	rte_mempool_cache_free(ctx);
}

WL_INLINE void *dpdk_alloc(void *ctx)
{
	void *obj;

	if (rte_mempool_generic_get(dpdk_mp, &obj, 1, ctx))
		return NULL;
	return obj;
}

WL_INLINE void dpdk_free(void *ctx, void *obj)
{
	rte_mempool_generic_put(dpdk_mp, &obj, 1, ctx);
}

/* A get takes all n or none. */
WL_INLINE size_t dpdk_alloc_bulk(void *ctx, void **objs, size_t n)
{
	if (rte_mempool_generic_get(dpdk_mp, objs, (unsigned)n, ctx))
		return 0;
	return n;
}

/* A put cannot refuse. */
WL_INLINE void dpdk_free_bulk(void *ctx, void *const *objs, size_t n)
{
	rte_mempool_generic_put(dpdk_mp, objs, (unsigned)n, ctx);
}

BENCH_WORKLOADS_BULK(dpdk, dpdk_alloc, dpdk_free, dpdk_alloc_bulk,
		     dpdk_free_bulk);
#define DPDK_FNS dpdk_fns
#else
static int dpdk_init(char *why, size_t why_len)
{
#ifdef BENCH_WITHOUT_DPDK
	snprintf(why, why_len, "built without DPDK: configure --without-dpdk");
#else
	snprintf(why, why_len, "built without DPDK: libdpdk not found by "
			       "pkg-config at configure time (apt-get "
			       "install libdpdk-dev)");
#endif
	return -1;
}

static int dpdk_setup(unsigned nthreads)
{
	(void)nthreads;
	return -1;
}

static int dpdk_teardown(void)
{
	return 0;
}

static void *dpdk_enter(unsigned tid)
{
	(void)tid;
	return NULL;
}

static void dpdk_leave(void *ctx)
{
	(void)ctx;
}
#define DPDK_FNS NULL
#endif

const struct bench_contender bench_rte_mempool = {
	.name = "rte_mempool",
	.label = "DPDK rte_mempool (ring_mp_mc), one rte_mempool_cache of 256 "
		 "per worker (rte_mempool_generic_get/put)",
	.init = dpdk_init,
	.setup = dpdk_setup,
	.teardown = dpdk_teardown,
	.enter = dpdk_enter,
	.leave = dpdk_leave,
	.fns = DPDK_FNS,
};
