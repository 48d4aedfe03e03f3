/* SPDX-License-Identifier: MIT */
/*
 * LFP_F_UNCHECKED: what lfpool.h promises of an unchecked pool, sentence
 * by sentence, in the mode the build runs in. Under --enable-debug, ASan
 * or Valgrind (not LFP_VALGRIND=profile) the pool is checked as a default
 * pool is, and these tests expect that there; elsewhere it keeps no
 * generation, and they expect that.
 */
#include <stdatomic.h>
#include <sys/wait.h>

/* HAVE_VALGRIND_MEMCHECK_H: without it RUNNING_ON_VALGRIND is 0 here while
 * the library, which has it, sees Valgrind and checks the pool. */
#include "config.h"
#include "testutil.h"


#ifdef HAVE_VALGRIND_MEMCHECK_H
#include <valgrind/memcheck.h>
#else
#define RUNNING_ON_VALGRIND 0
#endif

/* Whether this build checks unchecked pools anyway (lfpool.h). */
static bool build_checks(void)
{
	const char *v = getenv("LFP_VALGRIND");

#if defined(LFP_DEBUG) || defined(TEST_ASAN)
	return true;
#endif
	return RUNNING_ON_VALGRIND && !(v && !strcmp(v, "profile"));
}

static struct lfp_pool *make(uint32_t cap, uint32_t flags)
{
	return test_pool_flags(64, cap, LFP_F_UNCHECKED | flags);
}

static uint32_t gen_of(struct lfp_pool *pool, uint32_t idx)
{
	return atomic_load_explicit(&pool->slots[idx].gen, memory_order_relaxed);
}

static void counts_add_up(struct lfp_pool *pool, uint64_t live)
{
	struct lfpi_census census;
	struct lfp_stats st;

	ck_audit(pool, &census);
	lfp_stats(pool, &st);
	ck_assert_uint_eq(st.live, live);
	ck_assert_uint_eq(st.free + st.cached + st.live + st.deferred,
			  st.capacity);
}

static int hook_count;
static void count_hook(void *obj, void *arg)
{
	(void)obj;
	(void)arg;
	hook_count++;
}

START_TEST(flag_combinations)
{
	struct lfp_config cfg = { .obj_size = 32, .capacity = 16,
				  .flags = LFP_F_UNCHECKED | LFP_F_STRICT };
	struct lfp_pool *pool = NULL;

	ck_assert_int_eq(lfp_create(&cfg, &pool), -EINVAL);
	cfg.flags = LFP_F_UNCHECKED;
	cfg.ctor = count_hook;
	ck_assert_int_eq(lfp_create(&cfg, &pool), -EINVAL);
	ck_assert_ptr_null(pool);
	cfg.ctor = NULL;
	/* Everything else is taken. */
	cfg.on_alloc = count_hook;
	cfg.on_free = count_hook;
	cfg.flags = LFP_F_UNCHECKED | LFP_F_NO_CACHE | LFP_F_WAIT_DEFERRED;
	cfg.exhaust = LFP_EXHAUST_GROW;
	cfg.max_capacity = 64;
	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	lfp_destroy(pool);
	/* The strings name every code: -ENOTSUP says what an unchecked pool
	 * refuses. */
	ck_assert_ptr_nonnull(strstr(lfp_strerror(-ENOTSUP), "LFP_F_UNCHECKED"));
}
END_TEST

/* The pool keeps no generation in a release build, one with the tools. */
START_TEST(mode_follows_build)
{
	struct lfp_pool *pool = make(16, 0), *poison = make(16, LFP_F_POISON);
	struct lfp_cache *c = lfp_cache_create(pool);
	void *obj = lfp_cache_alloc(c);
	uint32_t idx = lfp_index_of(pool, obj);

	ck_assert(pool->bare == !build_checks());
	ck_assert(!poison->bare);
	ck_assert_int_eq(lfp_cache_free(c, obj), 0);
	/* A bare pool has no generation word at all: its metadata is the
	 * free list's link alone, 4 bytes a slot; a checked one keeps 8 and
	 * the release made the slot's generation even again. */
	if (pool->bare) {
		ck_assert_uint_eq(pool->free.stride, sizeof(uint32_t));
	} else {
		ck_assert_uint_eq(pool->free.stride, 2 * sizeof(uint32_t));
		ck_assert_uint_eq(gen_of(pool, idx), 2);
	}
	ck_assert_uint_eq(poison->free.stride, 2 * sizeof(uint32_t));
	lfp_cache_destroy(c);
	lfp_destroy(poison);
	lfp_destroy(pool);
}
END_TEST

static int visit(void *obj, lfp_handle h, void *arg)
{
	(void)obj;
	(void)h;
	++*(int *)arg;
	return 0;
}

START_TEST(handles_and_walks_refused)
{
	struct lfp_pool *pool = make(16, 0);
	struct lfp_cache *c = lfp_cache_create(pool);
	void *obj = lfp_alloc(pool), *objs[2] = { obj, obj };
	uint32_t idx = lfp_index_of(pool, obj);
	lfp_handle forged = { (uint64_t)1 << 32 | idx }, hs[2] = { forged, forged };
	lfp_handle h = forged;
	struct lfp_iter it;
	int visits = 0;

	ck_assert(lfp_handle_is_null(lfp_handle_of(pool, obj)));
	ck_assert_ptr_null(lfp_resolve(pool, forged));
	ck_assert_uint_eq(lfp_resolve_bulk(pool, hs, objs, 2), 0);
	ck_assert_ptr_null(objs[0]);
	ck_assert_ptr_null(objs[1]);
	ck_assert_int_eq(lfp_free_handle(pool, forged), -ENOTSUP);
	ck_assert_int_eq(lfp_cache_free_handle(c, forged), -ENOTSUP);
	ck_assert_int_eq(lfp_foreach(pool, visit, &visits), -ENOTSUP);
	ck_assert_int_eq(lfp_foreach_range(pool, 0, UINT32_MAX, visit, &visits),
			 -ENOTSUP);
	ck_assert_int_eq(visits, 0);
	lfp_iter_init(&it, pool, 0, UINT32_MAX);
	ck_assert_ptr_null(lfp_iter_next(&it, &h));
	ck_assert(lfp_handle_is_null(h));
	/* The refused releases left the object live and counted. */
	counts_add_up(pool, 1);
	ck_assert_int_eq(lfp_free(pool, obj), 0);
	counts_add_up(pool, 0);
	lfp_cache_destroy(c);
	lfp_destroy(pool);
}
END_TEST

START_TEST(is_live_says_what_it_can)
{
	struct lfp_pool *pool = make(64, 0);
	char *obj = lfp_alloc(pool);

	ck_assert(lfp_is_live(pool, obj));
	ck_assert(!lfp_is_live(pool, obj + 1));
	ck_assert(!lfp_is_live(pool, NULL));
	ck_assert(!lfp_is_live(NULL, obj));
	/* Never handed out: not live in any mode. */
	ck_assert_uint_lt(lfp_extent(pool), 64);
	ck_assert(!lfp_is_live(pool, lfp_at(pool, 63)));
	ck_assert_int_eq(lfp_free(pool, obj), 0);
	/* Released: only a checked pool can tell. */
	ck_assert(lfp_is_live(pool, obj) == pool->bare);
	lfp_destroy(pool);
}
END_TEST

/* Not an object's start, or not the pool's: refused in every mode. */
START_TEST(bad_pointers_refused)
{
	static const uint32_t flags[] = { 0, LFP_F_NO_CACHE };
	struct lfp_pool *pool = make(16, flags[_i]);
	struct lfp_cache *c = lfp_cache_create(pool);
	char *obj = lfp_cache_alloc(c), other;
	struct lfp_stats st;

	ck_assert_int_eq(lfp_cache_free(c, obj + 8), -EINVAL);
	ck_assert_int_eq(lfp_free(pool, obj + 1), -EINVAL);
	ck_assert_int_eq(lfp_free(pool, NULL), -EINVAL);
	ck_assert_int_eq(lfp_cache_free(c, &other), -EFAULT);
	ck_assert_int_eq(lfp_free(pool, &other), -EFAULT);
	lfp_stats(pool, &st);
	ck_assert_uint_eq(st.rejected_frees, 5);
	counts_add_up(pool, 1);
	ck_assert_int_eq(lfp_cache_free(c, obj), 0);
	counts_add_up(pool, 0);
	lfp_cache_destroy(c);
	lfp_destroy(pool);
}
END_TEST

/*
 * A double release: -EALREADY where the pool is checked; in a release
 * build nothing looks, so it returns 0 and the slot is in the cache twice
 * (tried in a child, whose pool is thrown away with it).
 */
START_TEST(double_release)
{
	static const uint32_t flags[] = { 0, LFP_F_NO_CACHE };
	struct lfp_pool *pool = make(16, flags[_i]);
	struct lfp_cache *c = lfp_cache_create(pool);
	void *obj = lfp_cache_alloc(c);
	int status;
	pid_t pid;

	ck_assert_int_eq(lfp_cache_free(c, obj), 0);
	if (!pool->bare) {
		ck_assert_int_eq(lfp_cache_free(c, obj), -EALREADY);
		ck_assert_int_eq(lfp_free(pool, obj), -EALREADY);
		counts_add_up(pool, 0);
	} else {
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0)
			_exit(lfp_cache_free(c, obj) == 0 &&
					      lfp_cache_alloc(c) == obj &&
					      lfp_cache_alloc(c) == obj ?
				      0 : 1);
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	lfp_cache_destroy(c);
	lfp_destroy(pool);
}
END_TEST

/* Every path, explicit, implicit, bulk, shared, and the counts. */
START_TEST(paths_and_counts)
{
	static const uint32_t flags[] = { 0, LFP_F_NO_CACHE, LFP_F_POISON };
	struct lfp_pool *pool = make(256, flags[_i]);
	struct lfp_cache *c = lfp_cache_create(pool);
	void *objs[200], *more[40];
	struct lfp_stats st;

	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 100; i++)
			ck_assert_ptr_nonnull(objs[i] = lfp_cache_alloc(c));
		for (int i = 100; i < 200; i++)
			ck_assert_ptr_nonnull(objs[i] = lfp_alloc(pool));
		ck_assert_uint_eq(lfp_alloc_bulk(pool, more, 40), 40);
		counts_add_up(pool, 240);
		/* Each object once: released through another path. */
		for (int i = 0; i < 100; i++)
			ck_assert_int_eq(lfp_free(pool, objs[i]), 0);
		for (int i = 100; i < 200; i++)
			ck_assert_int_eq(lfp_cache_free(c, objs[i]), 0);
		ck_assert_uint_eq(lfp_cache_free_bulk(c, more, 40), 40);
		counts_add_up(pool, 0);
	}
	lfp_stats(pool, &st);
	/* A bare pool's inline lfp_alloc and lfp_free count nothing: only
	 * the first round's lfp_alloc went into the library (fresh slots). */
	ck_assert_uint_eq(st.allocs, pool->hot.bare ? 520 : 720);
	ck_assert_uint_eq(st.frees, pool->hot.bare ? 420 : 720);
	lfp_cache_destroy(c);
	lfp_destroy(pool);
}
END_TEST

/*
 * lfp_memory_size of an unchecked pool counts 4 bytes of metadata a slot
 * fewer than a default pool's (no generation word), where the build does
 * not check it anyway; the same size where it does. Parts are rounded up
 * to LFP_MEMORY_ALIGN, hence the slack.
 */
START_TEST(memory_size_smaller)
{
	static const uint32_t caps[] = { 1, 100, 1000, 65536, 1000000 };

	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		struct lfp_config cfg = { .obj_size = 64, .capacity = caps[i] };
		size_t dflt = lfp_memory_size(&cfg), unch, poison, saved;

		cfg.flags = LFP_F_UNCHECKED;
		unch = lfp_memory_size(&cfg);
		cfg.flags = LFP_F_UNCHECKED | LFP_F_POISON;
		poison = lfp_memory_size(&cfg);
		ck_assert_uint_gt(unch, 0);
		/* A checked unchecked pool keeps the generation words. */
		ck_assert_uint_eq(poison, dflt);
		if (build_checks()) {
			ck_assert_uint_eq(unch, dflt);
			continue;
		}
		ck_assert_uint_le(unch, dflt);
		saved = dflt - unch;
		ck_assert_msg(saved + 2 * LFP_MEMORY_ALIGN >=
				      (size_t)caps[i] * 4 &&
			      saved <= (size_t)caps[i] * 4 + 2 * LFP_MEMORY_ALIGN,
			      "%u slots: %zu bytes saved", caps[i], saved);
	}
	/* Growable pools lay out max_capacity slots: saved for each. */
	{
		struct lfp_config cfg = { .obj_size = 64, .capacity = 16,
					  .max_capacity = 100000,
					  .exhaust = LFP_EXHAUST_GROW };
		size_t dflt = lfp_memory_size(&cfg), unch;

		cfg.flags = LFP_F_UNCHECKED;
		unch = lfp_memory_size(&cfg);
		if (build_checks())
			ck_assert_uint_eq(unch, dflt);
		else
			ck_assert_uint_ge(dflt - unch,
					  100000u * 4 - 2 * LFP_MEMORY_ALIGN);
	}
}
END_TEST

/*
 * Under Valgrind, LFP_VALGRIND decides whether an unchecked pool keeps its
 * generation words, and so how many bytes lfp_memory_size asks for. A
 * program that changes the variable between lfp_memory_size and lfp_create
 * (setenv, as a harness that turns profiling on may) must still get a pool
 * that fits in what it was told: the decision is the process's, made once.
 * Elsewhere the variable is never read, and there is nothing to decide:
 * this test can fail only under Valgrind (valgrind.test runs it there, in
 * both modes).
 */
START_TEST(memory_size_env_changes)
{
	struct lfp_config cfg = { .obj_size = 64, .capacity = 1000,
				  .flags = LFP_F_UNCHECKED };
	const char *v = getenv("LFP_VALGRIND");
	bool profile = v && !strcmp(v, "profile"), bare = false;
	struct lfp_pool *pool = NULL;
	size_t need, later;
	char *mem, *keep;
	int err;

	if (!RUNNING_ON_VALGRIND)
		return;
	keep = v ? strdup(v) : NULL;
	need = lfp_memory_size(&cfg);
	/* The other mode, until the environment is put back: the tests
	 * after this one (CK_FORK=no) expect the mode they were run in. */
	if (profile)
		unsetenv("LFP_VALGRIND");
	else
		setenv("LFP_VALGRIND", "profile", 1);
	later = lfp_memory_size(&cfg);
	mem = aligned_alloc(LFP_MEMORY_ALIGN,
			    (need + LFP_MEMORY_ALIGN - 1) / LFP_MEMORY_ALIGN *
				    LFP_MEMORY_ALIGN);
	cfg.memory = mem;
	cfg.memory_size = need;
	err = mem ? lfp_create(&cfg, &pool) : -ENOMEM;
	if (!err) {
		bare = pool->bare;
		lfp_destroy(pool);
	}
	free(mem);
	if (keep)
		setenv("LFP_VALGRIND", keep, 1);
	else
		unsetenv("LFP_VALGRIND");
	free(keep);
	ck_assert_uint_eq(later, need);
	ck_assert_int_eq(err, 0);
	/* As the process began: bare with profile, checked without. */
	ck_assert(bare == profile);
}
END_TEST

/*
 * An unchecked pool in exactly lfp_memory_size bytes of caller memory
 * (one byte less is refused), bytes around it untouched: every slot
 * handed out once and taken back, again and again, through the shared
 * free list (whose links are then 4 bytes apart), the caches and their
 * exchanges, counts adding up. A path that still wrote a generation word
 * in a bare pool would overwrite another slot's link, and the free list
 * would hand a slot out twice or lose one.
 */
START_TEST(caller_memory_exact)
{
	static const uint32_t flags[] = { LFP_F_NO_CACHE, 0 };
	enum { CAP = 300, GUARD = 256 };
	struct lfp_config cfg = { .obj_size = 48, .capacity = CAP,
				  .cache_size = 8, .batch_size = 4,
				  .flags = LFP_F_UNCHECKED | flags[_i] };
	size_t need = lfp_memory_size(&cfg);
	char *mem = aligned_alloc(LFP_MEMORY_ALIGN,
				  (need + 2 * GUARD + LFP_MEMORY_ALIGN - 1) /
					  LFP_MEMORY_ALIGN * LFP_MEMORY_ALIGN);
	char *seen = calloc(CAP, 1);
	struct lfp_pool *pool = NULL;
	struct lfp_cache *c;
	void *objs[CAP];

	ck_assert_ptr_nonnull(mem);
	memset(mem, 0x5a, need + 2 * GUARD);
	cfg.memory = mem + GUARD;
	cfg.memory_size = need - 1;
	ck_assert_int_eq(lfp_create(&cfg, &pool), -EINVAL);
	cfg.memory_size = need;
	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	c = lfp_cache_create(pool);
	for (int round = 0; round < 4; round++) {
		memset(seen, 0, CAP);
		for (int i = 0; i < CAP; i++) {
			uint32_t idx;

			objs[i] = round & 1 ? lfp_cache_alloc(c) : lfp_alloc(pool);
			ck_assert_ptr_nonnull(objs[i]);
			idx = lfp_index_of(pool, objs[i]);
			ck_assert_uint_lt(idx, CAP);
			ck_assert_msg(!seen[idx], "slot %u handed out twice", idx);
			seen[idx] = 1;
			memset(objs[i], round, cfg.obj_size);
		}
		ck_assert_ptr_null(lfp_alloc(pool));
		counts_add_up(pool, CAP);
		/* Released in another order than taken, through the other
		 * path. */
		for (int i = CAP - 1; i >= 0; i -= 2)
			ck_assert_int_eq(round & 1 ? lfp_free(pool, objs[i])
						   : lfp_cache_free(c, objs[i]),
					 0);
		for (int i = 0; i < CAP; i += 2)
			ck_assert_int_eq(lfp_free(pool, objs[i]), 0);
		counts_add_up(pool, 0);
	}
	lfp_cache_destroy(c);
	lfp_destroy(pool);
	for (size_t i = 0; i < GUARD; i++) {
		ck_assert_uint_eq((unsigned char)mem[i], 0x5a);
		ck_assert_uint_eq((unsigned char)mem[GUARD + need + i], 0x5a);
	}
	free(seen);
	free(mem);
}
END_TEST

/*
 * The layout of an unchecked pool in exactly lfp_memory_size bytes (one
 * byte less is refused), for odd and even slot counts (a bare pool's
 * metadata then ends on a 4-byte boundary), tiny and odd object sizes,
 * alignments of 4 bytes and of a page, fixed and growable, with and without
 * LFP_F_NO_CACHE (whose releases link every slot into the free list):
 * every object is aligned as asked, no two overlap, and no link written
 * by a release lands in another slot's object, nor anywhere outside the
 * memory.
 */
START_TEST(caller_memory_shapes)
{
	static const uint32_t caps[] = { 1, 3, 333 };
	static const size_t sizes[] = { 1, 12 };
	static const size_t aligns[] = { 4, 4096 };
	uint32_t cap = caps[_i % 3];
	size_t size = sizes[_i / 3 % 2], align = aligns[_i / 6 % 2];
	bool grow = _i / 12 % 2;
	struct lfp_config cfg = {
		.obj_size = size, .align = align,
		.capacity = grow ? (cap + 1) / 2 : cap,
		.max_capacity = grow ? cap : 0,
		.exhaust = grow ? LFP_EXHAUST_GROW : 0,
		.cache_size = 4, .batch_size = 2,
		.flags = LFP_F_UNCHECKED | (_i / 24 ? LFP_F_NO_CACHE : 0)
	};
	size_t need = lfp_memory_size(&cfg),
	       base = align > LFP_MEMORY_ALIGN ? align : LFP_MEMORY_ALIGN;
	char *mem = aligned_alloc(base, (need + 2 * base) / base * base + base);
	unsigned char **objs = calloc(cap + 1, sizeof(*objs));
	char *seen = calloc(cap, 1);
	struct lfp_pool *pool = NULL;
	struct lfp_cache *c;
	uint32_t n = 0, idx;

	ck_assert_ptr_nonnull(mem);
	ck_assert_ptr_nonnull(objs);
	ck_assert_ptr_nonnull(seen);
	memset(mem, 0x5a, need + 2 * base);
	cfg.memory = mem + base;
	cfg.memory_size = need - 1;
	ck_assert_int_eq(lfp_create(&cfg, &pool), -EINVAL);
	cfg.memory_size = need;
	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	c = lfp_cache_create(pool);
	ck_assert_ptr_nonnull(c);
	while ((objs[n] = n % 2 ? lfp_cache_alloc(c) : lfp_alloc(pool))) {
		ck_assert_uint_lt(n, cap);
		ck_assert_uint_eq((uintptr_t)objs[n] % align, 0);
		idx = lfp_index_of(pool, objs[n]);
		ck_assert_uint_lt(idx, cap);
		ck_assert_msg(!seen[idx], "slot %u handed out twice", idx);
		seen[idx] = 1;
		memset(objs[n], (int)n, size);
		n++;
	}
	ck_assert_uint_eq(n, cap);
	counts_add_up(pool, cap);
	/* Half released every way, then the other half, each checked
	 * before its release. */
	for (uint32_t half = 0; half < 2; half++)
		for (uint32_t i = half; i < n; i += 2) {
			for (size_t k = 0; k < size; k++)
				ck_assert_msg(objs[i][k] == (unsigned char)i,
					      "object %u byte %zu overwritten",
					      i, k);
			ck_assert_int_eq(
				i % 3 == 0 ? lfp_free(pool, objs[i]) :
				i % 3 == 1 ? lfp_cache_free(c, objs[i]) :
					     (int)lfp_cache_free_bulk(
						     c, (void **)&objs[i], 1) - 1,
				0);
		}
	counts_add_up(pool, 0);
	lfp_cache_destroy(c);
	lfp_destroy(pool);
	for (size_t i = 0; i < base; i++) {
		ck_assert_uint_eq((unsigned char)mem[i], 0x5a);
		ck_assert_uint_eq((unsigned char)mem[base + need + i], 0x5a);
	}
	free(seen);
	free(objs);
	free(mem);
}
END_TEST

/* Release obj through path k of grow_limit_refused. */
static int release_by(struct lfp_pool *pool, struct lfp_cache *c, int k,
		      void *obj)
{
	switch (k) {
	case 1:
		return lfp_cache_free(c, obj);
	case 2:
		return lfp_cache_free_bulk(c, &obj, 1) == 1 ? 0 : -EALREADY;
	default:
		return lfp_free(pool, obj);
	}
}

/*
 * A growable pool: an object start it has not grown into is refused
 * (-EALREADY) through every path, in both modes, and never handed out;
 * objects of slots grown into after a cache was made are taken back
 * through it (out of line), and a cache made after growth takes them too.
 * Paths: the implicit cache, an explicit one, its bulk release, and the
 * shared path (LFP_F_NO_CACHE).
 */
START_TEST(grow_limit_refused)
{
	struct lfp_config cfg = { .obj_size = 64, .capacity = 16,
				  .max_capacity = 1024,
				  .exhaust = LFP_EXHAUST_GROW,
				  .flags = LFP_F_UNCHECKED |
					   (_i == 3 ? LFP_F_NO_CACHE : 0) };
	struct lfp_pool *pool;
	struct lfp_cache *c, *late;
	char *base, *far, *o[40];
	size_t stride;

	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	c = lfp_cache_create(pool);
	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_nonnull(o[0] = lfp_cache_alloc(c));
	base = lfp_at(pool, 0);
	stride = (size_t)((char *)lfp_at(pool, 1) - base);
	far = base + 1000 * stride;
	ck_assert(!lfp_owns(pool, far));
	ck_assert_int_eq(release_by(pool, c, _i, far), -EALREADY);
	ck_assert_int_eq(release_by(pool, c, _i, far), -EALREADY);
	/* Not handed out: every allocation stays below the limit. */
	for (int i = 1; i < 40; i++) {
		ck_assert_ptr_nonnull(o[i] = lfp_cache_alloc(c));
		ck_assert_ptr_ne(o[i], far);
		ck_assert(lfp_owns(pool, o[i]));
	}
	ck_assert_uint_ge(lfp_extent(pool), 40);
	ck_assert(!lfp_owns(pool, far));
	ck_assert_int_eq(release_by(pool, c, _i, far), -EALREADY);
	/* Grown into after c was made: released through c all the same. */
	for (int i = 0; i < 20; i++)
		ck_assert_int_eq(release_by(pool, c, _i, o[i]), 0);
	late = lfp_cache_create(pool);
	ck_assert_ptr_nonnull(late);
	ck_assert_int_eq(release_by(pool, late, _i, far), -EALREADY);
	for (int i = 20; i < 40; i++)
		ck_assert_int_eq(release_by(pool, late, _i, o[i]), 0);
	lfp_cache_destroy(late);
	lfp_cache_destroy(c);
	counts_add_up(pool, 0);
	lfp_destroy(pool);
}
END_TEST

START_TEST(hooks_run)
{
	struct lfp_config cfg = { .obj_size = 32, .capacity = 16,
				  .flags = LFP_F_UNCHECKED,
				  .on_alloc = count_hook,
				  .on_free = count_hook };
	struct lfp_pool *pool = NULL;
	void *obj;

	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	hook_count = 0;
	obj = lfp_alloc(pool);
	ck_assert_int_eq(lfp_free(pool, obj), 0);
	ck_assert_int_eq(hook_count, 2);
	counts_add_up(pool, 0);
	lfp_destroy(pool);
}
END_TEST

START_TEST(family_classes)
{
	static const size_t sizes[] = { 32, 64, 128 };
	static const uint32_t caps[] = { 32, 32, 32 };
	struct lfp_family_config cfg = { .sizes = sizes, .capacities = caps,
					 .classes = 3,
					 .flags = LFP_F_UNCHECKED | LFP_F_STRICT };
	struct lfp_family *fam = NULL;
	struct lfp_family_cache *fc;
	void *a, *b;

	ck_assert_int_eq(lfp_family_create(&cfg, &fam), -EINVAL);
	cfg.flags = LFP_F_UNCHECKED;
	ck_assert_int_eq(lfp_family_create(&cfg, &fam), 0);
	for (uint32_t i = 0; i < 3; i++) {
		struct lfp_pool *p = lfp_family_pool(fam, i);

		ck_assert(p->flags & LFP_F_UNCHECKED);
		ck_assert(p->bare == !build_checks());
	}
	fc = lfp_family_cache_create(fam);
	a = lfp_family_alloc(fam, 50);
	b = lfp_family_cache_alloc(fc, 100);
	ck_assert(lfp_handle_is_null(lfp_handle_of(lfp_family_pool(fam, 1), a)));
	ck_assert_int_eq(lfp_family_free(fam, (char *)a + 1), -EINVAL);
	ck_assert_int_eq(lfp_family_cache_free(fc, a), 0);
	ck_assert_int_eq(lfp_family_free(fam, b), 0);
	if (!lfp_family_pool(fam, 1)->bare)
		ck_assert_int_eq(lfp_family_free(fam, a), -EALREADY);
	lfp_family_cache_destroy(fc);
	for (uint32_t i = 0; i < 3; i++)
		counts_add_up(lfp_family_pool(fam, i), 0);
	lfp_family_destroy(fam);
}
END_TEST

/* An idle thread's cached slots are not lost: a starving one steals. */
struct idle_arg {
	struct lfp_pool *pool;
	pthread_barrier_t *bar;
};

static void *idle_holder(void *p)
{
	struct idle_arg *a = p;
	void *objs[8];

	for (int i = 0; i < 8; i++)
		objs[i] = lfp_alloc(a->pool);
	for (int i = 0; i < 8; i++)
		lfp_free(a->pool, objs[i]);
	pthread_barrier_wait(a->bar); /* holding its cache */
	pthread_barrier_wait(a->bar); /* until the main thread is done */
	return NULL;
}

START_TEST(idle_cache_stolen)
{
	struct lfp_config cfg = { .obj_size = 64, .capacity = 32,
				  .cache_size = 16, .flags = LFP_F_UNCHECKED };
	struct lfp_pool *pool = NULL;
	pthread_barrier_t bar;
	struct idle_arg a = { .bar = &bar };
	struct lfp_cache *c;
	struct lfp_stats st;
	pthread_t t;
	void *objs[32];
	uint32_t n = 0;

	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	a.pool = pool;
	pthread_barrier_init(&bar, NULL, 2);
	pthread_create(&t, NULL, idle_holder, &a);
	pthread_barrier_wait(&bar);
	lfp_stats(pool, &st);
	ck_assert_uint_gt(st.cached, 0);
	c = lfp_cache_create(pool);
	while (n < 32 && (objs[n] = lfp_cache_alloc(c)))
		n++;
	ck_assert_uint_eq(n, 32);
	ck_assert_ptr_null(lfp_cache_alloc(c));
	lfp_stats(pool, &st);
	ck_assert_uint_gt(st.steals, 0);
	for (uint32_t i = 0; i < n; i++)
		ck_assert_int_eq(lfp_cache_free(c, objs[i]), 0);
	pthread_barrier_wait(&bar);
	pthread_join(t, NULL);
	lfp_cache_destroy(c);
	counts_add_up(pool, 0);
	pthread_barrier_destroy(&bar);
	lfp_destroy(pool);
}
END_TEST

/*
 * Threads allocate and release through explicit and implicit caches of a
 * small pool, running it dry (and stealing) all the time; each object
 * carries its holder's tag, checked before release, so an object handed
 * out twice is seen. At the end the counts add up.
 */
#define CONC_THREADS 4
#define CONC_HOLD 24

struct conc_arg {
	struct lfp_pool *pool;
	unsigned id;
	unsigned rounds;
	unsigned failures;
	unsigned empties;
};

static void *conc_worker(void *p)
{
	struct conc_arg *a = p;
	struct lfp_cache *c = a->id & 1 ? lfp_cache_create(a->pool) : NULL;
	uint64_t *held[CONC_HOLD];
	uint64_t tag;

	for (unsigned r = 0; r < a->rounds; r++) {
		unsigned n = 0;

		while (n < CONC_HOLD) {
			uint64_t *o = c ? lfp_cache_alloc(c) : lfp_alloc(a->pool);

			if (!o) {
				a->empties++;
				break;
			}
			tag = (uint64_t)a->id << 32 | r;
			atomic_store_explicit((_Atomic uint64_t *)o, tag,
					      memory_order_relaxed);
			held[n++] = o;
		}
		for (unsigned i = 0; i < n; i++) {
			tag = atomic_load_explicit((_Atomic uint64_t *)held[i],
						   memory_order_relaxed);
			a->failures += tag != ((uint64_t)a->id << 32 | r);
			/* Alternate the release path: into the other kind. */
			if ((c && (i & 1)) || !c)
				a->failures += lfp_free(a->pool, held[i]) != 0;
			else
				a->failures += lfp_cache_free(c, held[i]) != 0;
		}
	}
	lfp_cache_destroy(c);
	return NULL;
}

START_TEST(concurrent_counts)
{
	struct lfp_config cfg = { .obj_size = 64, .capacity = 64,
				  .cache_size = 8, .flags = LFP_F_UNCHECKED };
	struct conc_arg args[CONC_THREADS];
	pthread_t t[CONC_THREADS];
	struct lfp_pool *pool = NULL;
	unsigned rounds = under_sanitizer() ? 2000 : 20000;

	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	for (unsigned i = 0; i < CONC_THREADS; i++) {
		args[i] = (struct conc_arg){ .pool = pool, .id = i + 1,
					     .rounds = rounds };
		pthread_create(&t[i], NULL, conc_worker, &args[i]);
	}
	for (unsigned i = 0; i < CONC_THREADS; i++) {
		pthread_join(t[i], NULL);
		ck_assert_uint_eq(args[i].failures, 0);
	}
	counts_add_up(pool, 0);
	lfp_destroy(pool);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("unchecked");
	TCase *tc = tcase_create("unchecked");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, flag_combinations);
	tcase_add_test(tc, mode_follows_build);
	tcase_add_test(tc, handles_and_walks_refused);
	tcase_add_test(tc, is_live_says_what_it_can);
	tcase_add_loop_test(tc, bad_pointers_refused, 0, 2);
	tcase_add_loop_test(tc, double_release, 0, 2);
	tcase_add_loop_test(tc, paths_and_counts, 0, 3);
	tcase_add_loop_test(tc, grow_limit_refused, 0, 4);
	tcase_add_test(tc, memory_size_smaller);
	tcase_add_test(tc, memory_size_env_changes);
	tcase_add_loop_test(tc, caller_memory_shapes, 0, 48);
	tcase_add_loop_test(tc, caller_memory_exact, 0, 2);
	tcase_add_test(tc, hooks_run);
	tcase_add_test(tc, family_classes);
	tcase_add_test(tc, idle_cache_stolen);
	tcase_add_test(tc, concurrent_counts);
	suite_add_tcase(s, tc);
	return test_run(s);
}
