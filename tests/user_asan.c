/* SPDX-License-Identifier: MIT */
/*
 * A user's program built with -fsanitize=address and linked with a build
 * of lfpool that was not: the library must still poison released objects,
 * through the ASan runtime the program brings. user_asan.test builds it
 * against the plain library, shared and static, with each C compiler at
 * hand; tests/all.sh builds it against the installed library.
 *   user_asan write   writes into an object after lfp_free (the inline
 *                     path through the thread's implicit cache)
 *   user_asan cache   the same through an explicit cache
 *   user_asan bulk    the same after lfp_free_bulk
 *   user_asan ok      uses pools correctly, and checks that every free
 *                     object is poisoned, parked in a cache or not, and
 *                     every live one is not: must exit 0
 * A misuse exits 0 when it went unnoticed; ASan ends it otherwise.
 */
#include <lfpool.h>
#include <sanitizer/asan_interface.h>
#include <stdio.h>
#include <string.h>

#define OBJ 48
#define CAP 256

static struct lfp_pool *make_pool(uint32_t flags)
{
	struct lfp_config cfg = { .obj_size = OBJ, .capacity = CAP,
				  .flags = flags };
	struct lfp_pool *pool;

	return lfp_create(&cfg, &pool) ? NULL : pool;
}

/* Every byte of obj is poisoned (free) or none is (live). */
static int poisoned(const void *obj)
{
	return __asan_region_is_poisoned((void *)obj, OBJ) == obj;
}

static int unpoisoned(const void *obj)
{
	return __asan_region_is_poisoned((void *)obj, OBJ) == NULL;
}

static int fail(const char *what)
{
	fprintf(stderr, "user_asan: %s\n", what);
	return 1;
}

/*
 * Objects released through the implicit cache, an explicit cache and in
 * bulk stay poisoned while their slots wait in a cache, and come back
 * unpoisoned and writable. Pools without caches (LFP_F_NO_CACHE) too.
 */
static int correct(uint32_t flags)
{
	struct lfp_pool *pool = make_pool(flags);
	struct lfp_cache *c;
	void *objs[64];
	char *p;

	if (!pool)
		return fail("lfp_create failed");
	for (int round = 0; round < 3; round++) {
		if (!(p = lfp_alloc(pool)) || !unpoisoned(p))
			return fail("a new object is poisoned");
		memset(p, round, OBJ);
		if (lfp_free(pool, p) || !poisoned(p))
			return fail("lfp_free left the object unpoisoned");
	}
	if (lfp_alloc_bulk(pool, objs, 64) != 64)
		return fail("lfp_alloc_bulk came short");
	for (int i = 0; i < 64; i++) {
		if (!unpoisoned(objs[i]))
			return fail("lfp_alloc_bulk gave a poisoned object");
		memset(objs[i], i, OBJ);
	}
	if (lfp_free_bulk(pool, objs, 64) != 64)
		return fail("lfp_free_bulk came short");
	for (int i = 0; i < 64; i++)
		if (!poisoned(objs[i]))
			return fail("lfp_free_bulk left an object unpoisoned");
	if (!(c = lfp_cache_create(pool)))
		return fail("lfp_cache_create failed");
	for (int i = 0; i < 64; i++)
		if (!(objs[i] = lfp_cache_alloc(c)) || !unpoisoned(objs[i]))
			return fail("lfp_cache_alloc gave a poisoned object");
	for (int i = 0; i < 64; i++)
		if (lfp_cache_free(c, objs[i]) || !poisoned(objs[i]))
			return fail("lfp_cache_free left an object unpoisoned");
	lfp_cache_flush(c);
	for (int i = 0; i < 64; i++)
		if (!poisoned(objs[i]))
			return fail("a flushed object is unpoisoned");
	lfp_cache_destroy(c);
	lfp_destroy(pool);
	return 0;
}

/* A pool in memory the program owns: lfp_destroy leaves none poisoned. */
static int own_memory(void)
{
	struct lfp_config cfg = { .obj_size = OBJ, .capacity = 16 };
	static _Alignas(4096) char mem[64 << 10];
	struct lfp_pool *pool;
	char *p;

	cfg.memory = mem;
	cfg.memory_size = sizeof(mem);
	if (lfp_memory_size(&cfg) > sizeof(mem) || lfp_create(&cfg, &pool))
		return fail("lfp_create in own memory failed");
	if (!(p = lfp_alloc(pool)) || lfp_free(pool, p) || !poisoned(p))
		return fail("an object in own memory is not poisoned");
	lfp_destroy(pool);
	if (__asan_region_is_poisoned(mem, sizeof(mem)))
		return fail("lfp_destroy left poison in the caller's memory");
	memset(mem, 0, sizeof(mem));
	return 0;
}

static int misuse(const char *what)
{
	struct lfp_pool *pool = make_pool(0);
	struct lfp_cache *c;
	volatile char *p;
	void *objs[8];

	if (!pool)
		return fail("lfp_create failed");
	if (!strcmp(what, "write")) {
		p = lfp_alloc(pool);
		lfp_free(pool, (char *)p);
	} else if (!strcmp(what, "cache")) {
		c = lfp_cache_create(pool);
		p = lfp_cache_alloc(c);
		lfp_cache_free(c, (char *)p);
	} else if (!strcmp(what, "bulk")) {
		if (lfp_alloc_bulk(pool, objs, 8) != 8)
			return fail("lfp_alloc_bulk came short");
		lfp_free_bulk(pool, objs, 8);
		p = objs[3];
	} else {
		return 2;
	}
	p[5] = 42;
	printf("wrote %d after release, unnoticed\n", p[5]);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	if (strcmp(argv[1], "ok"))
		return misuse(argv[1]);
	return correct(0) || correct(LFP_F_NO_CACHE) || own_memory();
}
