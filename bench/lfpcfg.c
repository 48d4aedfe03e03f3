/* SPDX-License-Identifier: MIT */
/*
 * lfp_config.cache_size and batch_size of the cached lfpool rows, as the
 * command line set them (--lfp-cache-size, --lfp-batch-size), and whether
 * the many-pool and family rows are unchecked (--lfp-many-unchecked):
 * read by both files that make lfpool's pools, c_lfpool.c and
 * c_lfpmany.c. A leaf, so
 * that c_lfpool.c can point at c_lfpmany.c's workloads of many pools
 * without either reading the other's settings.
 */
#include "bench.h"

/* 0 = the library's default. Set before any run, read by the setups. */
static uint32_t lfpcfg_cache_size, lfpcfg_batch_size;

void bench_lfp_config(uint32_t cache_size, uint32_t batch_size)
{
	lfpcfg_cache_size = cache_size;
	lfpcfg_batch_size = batch_size;
}

void bench_lfp_sizes(uint32_t *cache_size, uint32_t *batch_size)
{
	*cache_size = lfpcfg_cache_size;
	*batch_size = lfpcfg_batch_size;
}

/* Set before any run, read by c_lfpmany.c's setups. */
static bool lfpcfg_many_unchecked;

void bench_lfp_many_unchecked(bool on)
{
	lfpcfg_many_unchecked = on;
}

bool bench_lfp_many_is_unchecked(void)
{
	return lfpcfg_many_unchecked;
}
