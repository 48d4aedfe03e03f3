/* SPDX-License-Identifier: MIT */
/* Built by tests/all.sh against the installed library through pkg-config:
 * proves the header, the library and lfpool.pc work from outside. */
#include <errno.h>
#include <lfpool.h>
#include <stdio.h>

int main(void)
{
	struct lfp_config cfg = { .obj_size = 32, .capacity = 100 };
	struct lfp_pool *pool;
	struct lfp_stats st;
	void *obj[100];
	size_t n;

	if (lfp_create(&cfg, &pool))
		return 1;
	n = lfp_alloc_bulk(pool, obj, 100);
	if (n != 100 || lfp_alloc(pool) != NULL)
		return 2;
	if (lfp_free_bulk(pool, obj, n) != n || lfp_free(pool, obj[0]) != -EALREADY)
		return 3;
	lfp_stats(pool, &st);
	if (st.live != 0 || st.allocs != 100 || st.free + st.cached != 100)
		return 4;
	lfp_destroy(pool);
	printf("installed lfpool works: %llu allocations, %llu failed\n",
	       (unsigned long long)st.allocs,
	       (unsigned long long)st.failed_allocs);
	return 0;
}
