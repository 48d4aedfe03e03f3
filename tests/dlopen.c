/* SPDX-License-Identifier: MIT */
/*
 * lfpool loaded as a plugin loads it: with dlopen(3), after the program
 * started, its functions found with dlsym. The library's thread-local
 * variables are initial-exec, which must fit the room the C library
 * keeps for such variables in libraries loaded late; and a program built
 * with -fsanitize=address must see a released object poisoned by a
 * library it loaded so, as by one it linked.
 *   dlopen LIB ok      threads allocate and release through their
 *                      implicit caches and an explicit one; the counts
 *                      add up at the end: exit 0
 *   dlopen LIB write   writes into an object after lfp_free: exits 0
 *                      only if nothing noticed (ASan ends it otherwise)
 * platform.test runs the first, user_asan.test both under ASan.
 */
#define LFP_NO_INLINE /* calls go through dlsym's pointers */
#include <lfpool.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define THREADS 4
#define ROUNDS 2000
#define HOLD 16

static struct {
	int (*create)(const struct lfp_config *, struct lfp_pool **);
	void (*destroy)(struct lfp_pool *);
	void *(*alloc)(struct lfp_pool *);
	int (*free)(struct lfp_pool *, void *);
	struct lfp_cache *(*cache_create)(struct lfp_pool *);
	void (*cache_destroy)(struct lfp_cache *);
	void *(*cache_alloc)(struct lfp_cache *);
	int (*cache_free)(struct lfp_cache *, void *);
	void (*stats)(const struct lfp_pool *, struct lfp_stats *);
} lfp;

static struct lfp_pool *pool;

static int find(void *lib)
{
	static const char *const names[] = {
		"lfp_create", "lfp_destroy", "lfp_alloc", "lfp_free",
		"lfp_cache_create", "lfp_cache_destroy", "lfp_cache_alloc",
		"lfp_cache_free", "lfp_stats",
	};
	void **to = (void **)&lfp;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!(to[i] = dlsym(lib, names[i]))) {
			fprintf(stderr, "dlopen: dlsym %s: %s\n", names[i],
				dlerror());
			return 1;
		}
	return 0;
}

/* Rounds of HOLD objects, through the implicit cache or an explicit one. */
static void *work(void *arg)
{
	struct lfp_cache *c = NULL;
	void *held[HOLD];

	if (arg && !(c = lfp.cache_create(pool)))
		return "lfp_cache_create failed";
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < HOLD; i++) {
			held[i] = c ? lfp.cache_alloc(c) : lfp.alloc(pool);
			if (!held[i])
				return "an allocation failed";
			memset(held[i], r, 32);
		}
		for (int i = 0; i < HOLD; i++)
			if ((c ? lfp.cache_free(c, held[i])
			       : lfp.free(pool, held[i])))
				return "a release failed";
	}
	if (c)
		lfp.cache_destroy(c);
	return NULL;
}

static int ok(void)
{
	pthread_t t[THREADS];
	struct lfp_stats s;
	int bad = 0;

	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, work, i % 2 ? pool : NULL))
			return fprintf(stderr, "dlopen: pthread_create\n"), 1;
	for (int i = 0; i < THREADS; i++) {
		void *why;

		pthread_join(t[i], &why);
		if (why)
			bad = fprintf(stderr, "dlopen: thread %d: %s\n", i,
				      (const char *)why);
	}
	lfp.stats(pool, &s);
	if (s.live || s.free + s.cached != s.capacity ||
	    s.allocs != (uint64_t)THREADS * ROUNDS * HOLD) {
		fprintf(stderr,
			"dlopen: live %llu, free %llu + cached %llu of %llu, "
			"allocs %llu\n",
			(unsigned long long)s.live, (unsigned long long)s.free,
			(unsigned long long)s.cached,
			(unsigned long long)s.capacity,
			(unsigned long long)s.allocs);
		bad = 1;
	}
	return bad;
}

static int write_after_free(void)
{
	char *obj = lfp.alloc(pool);

	if (!obj || lfp.free(pool, obj))
		return fprintf(stderr, "dlopen: alloc or free failed\n"), 1;
	((volatile char *)obj)[1] = 1; /* ASan must end the program here */
	fprintf(stderr, "dlopen: a write after release went unnoticed\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct lfp_config cfg = { .obj_size = 48, .capacity = 1024 };
	void *lib;
	int rc;

	if (argc != 3 || (strcmp(argv[2], "ok") && strcmp(argv[2], "write"))) {
		fprintf(stderr, "usage: dlopen LIB ok|write\n");
		return 2;
	}
	if (!(lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL))) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	if (find(lib) || lfp.create(&cfg, &pool))
		return fprintf(stderr, "dlopen: no pool\n"), 1;
	rc = strcmp(argv[2], "ok") ? write_after_free() : ok();
	lfp.destroy(pool);
	return rc;
}
