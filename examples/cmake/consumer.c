/* SPDX-License-Identifier: MIT */
/*
 * A program built against lfpool through its CMake package (or lfpool.pc),
 * see CMakeLists.txt. It exits non-zero if the library it runs with is not
 * the version its build found, or if a pool's counts do not add up after
 * every slot was taken through the pool and an explicit cache, one more
 * allocation failed, and a stale handle and a double release were refused.
 */
#include <errno.h>
#include <lfpool.h>
#include <stdio.h>
#include <string.h>

#define CAPACITY 256

struct message {
	unsigned id;
	char text[28];
};

static int fail(const char *what)
{
	fprintf(stderr, "consumer: %s\n", what);
	return 1;
}

int main(void)
{
	struct lfp_config cfg = { .obj_size = sizeof(struct message),
				  .capacity = CAPACITY };
	struct message *msg[CAPACITY];
	struct lfp_pool *pool;
	struct lfp_cache *cache;
	struct lfp_stats st;
	lfp_handle first;
	unsigned i;

	if (strcmp(lfp_version(), LFPOOL_PACKAGE_VERSION) != 0) {
		fprintf(stderr, "consumer: built for lfpool %s, runs with %s\n",
			LFPOOL_PACKAGE_VERSION, lfp_version());
		return 1;
	}
	if (lfp_create(&cfg, &pool) != 0)
		return fail("lfp_create failed");
	cache = lfp_cache_create(pool);
	if (!cache)
		return fail("lfp_cache_create failed");
	/* Every slot, half through the cache: the pool is then exhausted. */
	for (i = 0; i < CAPACITY; i++) {
		msg[i] = i % 2 ? lfp_alloc(pool) : lfp_cache_alloc(cache);
		if (!msg[i])
			return fail("the pool ran out before its capacity");
		msg[i]->id = i;
		snprintf(msg[i]->text, sizeof(msg[i]->text), "message %u", i);
	}
	if (lfp_alloc(pool) != NULL)
		return fail("a full pool gave one more object");
	first = lfp_handle_of(pool, msg[0]);
	if (lfp_resolve(pool, first) != msg[0])
		return fail("a live object's handle does not resolve to it");
	for (i = 0; i < CAPACITY; i++) {
		char want[28];

		snprintf(want, sizeof(want), "message %u", i);
		if (msg[i]->id != i || strcmp(msg[i]->text, want) != 0)
			return fail("an object's bytes changed under it");
		if ((i % 2 ? lfp_free(pool, msg[i]) :
			     lfp_cache_free(cache, msg[i])) != 0)
			return fail("a release of a live object was refused");
	}
	if (lfp_resolve(pool, first) != NULL)
		return fail("a stale handle resolved");
	if (lfp_free(pool, msg[1]) != -EALREADY)
		return fail("a double release was not refused");
	lfp_cache_destroy(cache);
	lfp_stats(pool, &st);
	if (st.live != 0 || st.allocs != CAPACITY || st.frees != CAPACITY ||
	    st.failed_allocs != 1 || st.rejected_frees != 1 ||
	    st.free + st.cached != CAPACITY)
		return fail("the pool's counts do not add up");
	lfp_destroy(pool);
	printf("consumer: lfpool %s, %u objects taken and given back\n",
	       lfp_version(), (unsigned)CAPACITY);
	return 0;
}
