/* SPDX-License-Identifier: MIT */
/*
 * lfpool.h under the warnings an engine builds its own code with:
 * header_warnings.test compiles this with each C compiler at hand, -Wall
 * -Wextra -pedantic -Wshadow -Wconversion -Werror, in C11 (where the
 * inline fast paths are active, and their bodies are compiled in the
 * user's translation unit) and in C99. It is only compiled, never run.
 */
#include <lfpool.h>

int header_warnings(struct lfp_pool *pool, struct lfp_cache *cache);

/* Every inline function and macro of the header, used. */
int header_warnings(struct lfp_pool *pool, struct lfp_cache *cache)
{
	struct lfp_stats now = { 0 }, before = { 0 };
	lfp_handle h = LFP_NULL_HANDLE, named = { UINT64_C(7) << 32 | 42 };
	void *p = lfp_alloc(pool), *q = lfp_cache_alloc(cache);
	int err = lfp_free(pool, p) + lfp_cache_free(cache, q);
	uint32_t bits = lfp_handle_index(named) + lfp_handle_gen(named);

	lfp_stats(pool, &now);
	lfp_stats_delta(&now, &before, &now);
	if (lfp_handle_is_null(h) && !lfp_handle_eq(h, named))
		err++;
	return err + (int)(bits + (uint32_t)now.allocs);
}
