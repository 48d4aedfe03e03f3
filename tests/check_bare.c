/* SPDX-License-Identifier: MIT */
/*
 * Bare pools (LFP_F_NO_CACHE | LFP_F_UNCHECKED, no hooks): lfp_alloc and
 * lfp_free pop and push the free list inline, and go into the library
 * only for an empty list or a refused pointer; what lfpool.h and
 * lfpool(7), UNCHECKED POOLS, say of them, sentence by sentence. Where the build checks unchecked pools
 * anyway (--enable-debug, ASan, Valgrind) the pool is not bare and the
 * same calls go out of line: each test expects the mode the build runs.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

/* HAVE_VALGRIND_MEMCHECK_H: as in check_unchecked.c. */
#include "config.h"
#include "testutil.h"

#ifdef HAVE_VALGRIND_MEMCHECK_H
#include <valgrind/memcheck.h>
#else
#define RUNNING_ON_VALGRIND 0
#endif

#define BARE (LFP_F_NO_CACHE | LFP_F_UNCHECKED)

/* Whether this build checks unchecked pools anyway (lfpool.h). */
static bool build_checks(void)
{
	const char *v = getenv("LFP_VALGRIND");

#if defined(LFP_DEBUG) || defined(TEST_ASAN)
	return true;
#endif
	return RUNNING_ON_VALGRIND && !(v && !strcmp(v, "profile"));
}

static void counts_add_up(struct lfp_pool *pool, uint64_t live)
{
	struct lfpi_census census;
	struct lfp_stats st;

	ck_audit(pool, &census);
	ck_assert_uint_eq(census.live, live);
	lfp_stats(pool, &st);
	ck_assert_uint_eq(st.live, live);
	ck_assert_uint_eq(st.free + st.cached + st.live + st.deferred,
			  st.capacity);
}

static void nop_hook(void *obj, void *arg)
{
	(void)obj;
	(void)arg;
}

/* Which pools are bare: both flags, no hook, a release build. */
START_TEST(which_pools_are_bare)
{
	static const uint32_t not_bare[] = { 0, LFP_F_NO_CACHE,
					     LFP_F_UNCHECKED,
					     BARE | LFP_F_POISON };
	struct lfp_config cfg = { .obj_size = 48, .capacity = 16,
				  .flags = BARE };
	struct lfp_pool *pool;

	pool = test_pool_flags(48, 16, BARE);
	ck_assert_uint_eq(pool->hot.bare, !build_checks());
	ck_assert_uint_eq(pool->hot.num, pool->hot.num); /* still first */
	ck_assert_ptr_eq((void *)&pool->hot, (void *)pool);
	lfp_destroy(pool);
	for (unsigned i = 0; i < sizeof(not_bare) / sizeof(*not_bare); i++) {
		pool = test_pool_flags(48, 16, not_bare[i]);
		ck_assert_uint_eq(pool->hot.bare, 0);
		lfp_destroy(pool);
	}
	cfg.on_alloc = nop_hook;
	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	ck_assert_uint_eq(pool->hot.bare, 0);
	lfp_destroy(pool);
	cfg.on_alloc = NULL;
	cfg.on_free = nop_hook;
	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	ck_assert_uint_eq(pool->hot.bare, 0);
	lfp_destroy(pool);
}
END_TEST

/*
 * Pop and push, one thread: the list is LIFO, the inline calls count
 * nothing (only the fresh slots' allocations went into the library),
 * and live counts the slots on no list. Through the exported functions
 * too ((lfp_alloc)(pool)), which run the same inline code.
 */
START_TEST(pop_push_one_thread)
{
	struct lfp_pool *pool = test_pool_flags(40, 32, BARE);
	bool bare = pool->hot.bare;
	void *o[32], *p;
	struct lfp_stats st;

	for (int i = 0; i < 32; i++)
		ck_assert_ptr_nonnull(o[i] = _i ? (lfp_alloc)(pool) :
						  lfp_alloc(pool));
	counts_add_up(pool, 32);
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 32; i++)
			ck_assert_int_eq(_i ? (lfp_free)(pool, o[i]) :
					      lfp_free(pool, o[i]), 0);
		counts_add_up(pool, 0);
		/* Last released, first handed out. */
		for (int i = 31; i >= 0; i--) {
			p = _i ? (lfp_alloc)(pool) : lfp_alloc(pool);
			ck_assert_ptr_eq(p, o[i]);
			memset(p, 0x5a, 40);
		}
		counts_add_up(pool, 32);
	}
	lfp_stats(pool, &st);
	ck_assert_uint_eq(st.allocs, bare ? 32 : 32 * 4);
	ck_assert_uint_eq(st.frees, bare ? 0 : 32 * 3);
	ck_assert_uint_eq(st.failed_allocs, 0);
	for (int i = 0; i < 32; i++)
		ck_assert_int_eq(lfp_free(pool, o[i]), 0);
	counts_add_up(pool, 0);
	lfp_destroy(pool);
}
END_TEST

static uint64_t head_of(struct lfp_pool *pool)
{
	return atomic_load_explicit(&pool->free.head, memory_order_relaxed);
}

/*
 * The inline pop takes the top slot and bumps the head's tag, so that a
 * racing pop that read the old head fails its CAS; the inline push
 * links the slot to the old top and keeps the tag.
 */
START_TEST(pop_bumps_tag_push_keeps_it)
{
	struct lfp_pool *pool = test_pool_flags(64, 8, BARE);
	/* Slot 0 stays live: with a and b in slots 1 and 2, a link read
	 * at the wrong stride cannot pass for slot 0 by chance (unused
	 * metadata reads 0). */
	void *z = lfp_alloc(pool);
	void *a = lfp_alloc(pool), *b = lfp_alloc(pool), *p;
	uint32_t ia = lfp_index_of(pool, a), ib = lfp_index_of(pool, b);
	uint64_t h0, h1;

	ck_assert_int_eq(lfp_free(pool, a), 0);
	ck_assert_int_eq(lfp_free(pool, b), 0);
	h0 = head_of(pool);
	ck_assert_uint_eq((uint32_t)h0, ib);
	ck_assert_uint_eq(atomic_load(lfpi_slot_next(pool, ib)), ia);
	p = lfp_alloc(pool);
	ck_assert_ptr_eq(p, b);
	h1 = head_of(pool);
	ck_assert_uint_eq((uint32_t)h1, ia);
	ck_assert_uint_eq(h1 >> 32, (uint32_t)((h0 >> 32) + 1));
	ck_assert_int_eq(lfp_free(pool, p), 0);
	ck_assert_uint_eq(head_of(pool), (h1 >> 32 << 32) | ib);
	ck_assert_uint_eq(atomic_load(lfpi_slot_next(pool, ib)), ia);
	ck_assert_ptr_eq(lfp_alloc(pool), b);
	ck_assert_ptr_eq(lfp_alloc(pool), a);
	ck_assert_uint_eq(head_of(pool) >> 32, (uint32_t)((h0 >> 32) + 3));
	ck_assert_int_eq(lfp_free(pool, a), 0);
	ck_assert_int_eq(lfp_free(pool, b), 0);
	counts_add_up(pool, 1);
	ck_assert_int_eq(lfp_free(pool, z), 0);
	counts_add_up(pool, 0);
	lfp_destroy(pool);
}
END_TEST

/* An empty list goes out of line: NULL, counted, with the default
 * policy; a full pool's next allocation after a release succeeds. */
START_TEST(exhaustion_returns_null)
{
	struct lfp_pool *pool = test_pool_flags(64, 8, BARE);
	void *o[8];
	struct lfp_stats st;

	for (int i = 0; i < 8; i++)
		ck_assert_ptr_nonnull(o[i] = lfp_alloc(pool));
	ck_assert_ptr_null(lfp_alloc(pool));
	ck_assert_ptr_null(lfp_alloc(pool));
	lfp_stats(pool, &st);
	ck_assert_uint_eq(st.failed_allocs, 2);
	ck_assert_int_eq(lfp_free(pool, o[3]), 0);
	ck_assert_ptr_eq(lfp_alloc(pool), o[3]);
	ck_assert_ptr_null(lfp_alloc(pool));
	counts_add_up(pool, 8);
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(lfp_free(pool, o[i]), 0);
	counts_add_up(pool, 0);
	lfp_destroy(pool);
}
END_TEST

struct victims {
	void *obj[8];
	int n, calls;
};

static int release_oldest(struct lfp_pool *pool, void *arg)
{
	struct victims *v = arg;

	v->calls++;
	if (!v->n)
		return -1;
	ck_assert_int_eq(lfp_free(pool, v->obj[0]), 0);
	memmove(v->obj, v->obj + 1, --v->n * sizeof(void *));
	return 0;
}

/* The exhaustion policy runs for a bare pool as for any: reclaim is
 * called when the list is empty, and its victim is handed out. */
START_TEST(exhaustion_calls_reclaim)
{
	struct victims v = { .n = 0 };
	struct lfp_config cfg = { .obj_size = 32, .capacity = 8,
				  .flags = BARE,
				  .exhaust = LFP_EXHAUST_RECLAIM,
				  .reclaim = release_oldest, .hook_arg = &v };
	struct lfp_pool *pool;
	void *first, *p;

	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	ck_assert_uint_eq(pool->hot.bare, !build_checks());
	for (int i = 0; i < 8; i++)
		ck_assert_ptr_nonnull(v.obj[v.n++] = lfp_alloc(pool));
	first = v.obj[0];
	ck_assert_int_eq(v.calls, 0);
	p = lfp_alloc(pool);
	ck_assert_int_eq(v.calls, 1);
	ck_assert_ptr_eq(p, first);
	v.obj[v.n++] = p;
	counts_add_up(pool, 8);
	while (v.n)
		ck_assert_int_eq(lfp_free(pool, v.obj[--v.n]), 0);
	counts_add_up(pool, 0);
	lfp_destroy(pool);
}
END_TEST

/*
 * A growable bare pool hands out only slots it has grown into, and
 * takes back only those: the start of a slot not grown into yet is
 * refused (-EALREADY) and never handed out, then accepted once grown.
 */
START_TEST(growth_bounds)
{
	struct lfp_config cfg = { .obj_size = 64, .capacity = 16,
				  .max_capacity = 256, .flags = BARE,
				  .exhaust = LFP_EXHAUST_GROW };
	struct lfp_pool *pool;
	char *o[64], *base, *far;
	size_t stride;
	struct lfp_stats st;

	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	for (int i = 0; i < 2; i++)
		o[i] = lfp_alloc(pool);
	base = o[0];
	stride = (size_t)(o[1] - o[0]);
	far = base + 40 * stride; /* slot 40: not grown into */
	ck_assert_int_eq(lfp_free(pool, far), -EALREADY);
	ck_assert_int_eq(lfp_free(pool, base + 16 * stride), -EALREADY);
	for (int i = 2; i < 64; i++) {
		o[i] = lfp_alloc(pool);
		ck_assert_ptr_nonnull(o[i]);
		lfp_stats(pool, &st);
		/* Never a slot the pool has not grown into. */
		ck_assert_uint_lt(lfp_index_of(pool, o[i]), st.capacity);
	}
	lfp_stats(pool, &st);
	ck_assert_uint_ge(st.capacity, 64);
	ck_assert_uint_eq(st.rejected_frees, 2);
	counts_add_up(pool, 64);
	/* Grown into now: slot 40 is one of ours and goes back inline. */
	for (int i = 0; i < 64; i++)
		ck_assert_int_eq(lfp_free(pool, o[i]), 0);
	counts_add_up(pool, 0);
	/* A slot beyond the grown bound is still refused. */
	ck_assert_int_eq(lfp_free(pool, base + st.capacity * stride),
			 -EALREADY);
	lfp_destroy(pool);
}
END_TEST

/* NULL, foreign and interior pointers: refused with the errors of any
 * pool, counted, and nothing changes. */
START_TEST(bad_pointers_refused)
{
	struct lfp_pool *pool = test_pool_flags(64, 16, BARE);
	struct lfp_pool *other = test_pool_flags(64, 16, BARE);
	char *a = lfp_alloc(pool), *b = lfp_alloc(other), local[64];
	struct lfp_stats st;

	ck_assert_int_eq(lfp_free(pool, NULL), -EINVAL);
	ck_assert_int_eq(lfp_free(pool, a + 1), -EINVAL);
	ck_assert_int_eq(lfp_free(pool, a + 63), -EINVAL);
	ck_assert_int_eq(lfp_free(pool, local), -EFAULT);
	ck_assert_int_eq(lfp_free(pool, b), -EFAULT);
	ck_assert_int_eq(lfp_free(NULL, a), -EINVAL);
	ck_assert_ptr_null(lfp_alloc(NULL));
	lfp_stats(pool, &st);
	ck_assert_uint_eq(st.rejected_frees, 5);
	counts_add_up(pool, 1);
	counts_add_up(other, 1);
	ck_assert_int_eq(lfp_free(pool, a), 0);
	ck_assert_int_eq(lfp_free(other, b), 0);
	counts_add_up(pool, 0);
	lfp_destroy(other);
	lfp_destroy(pool);
}
END_TEST

/* A family of bare classes: each class is a bare pool, which the
 * family's calls reach; its objects go back LIFO and add up. */
START_TEST(family_of_bare_classes)
{
	static const size_t sizes[] = { 32, 64, 128 };
	static const uint32_t caps[] = { 16, 16, 16 };
	struct lfp_family_config cfg = { .sizes = sizes, .capacities = caps,
					 .classes = 3, .flags = BARE };
	struct lfp_family *fam = NULL;
	void *o[3][16];

	ck_assert_int_eq(lfp_family_create(&cfg, &fam), 0);
	for (uint32_t c = 0; c < 3; c++)
		ck_assert_uint_eq(lfp_family_pool(fam, c)->hot.bare,
				  !build_checks());
	for (int round = 0; round < 2; round++) {
		for (uint32_t c = 0; c < 3; c++)
			for (int i = 0; i < 16; i++)
				ck_assert_ptr_nonnull(
					o[c][i] = lfp_family_alloc(fam, sizes[c]));
		for (uint32_t c = 0; c < 3; c++) {
			ck_assert_ptr_null(lfp_family_alloc(fam, sizes[c]));
			counts_add_up(lfp_family_pool(fam, c), 16);
		}
		ck_assert_int_eq(lfp_family_free(fam, (char *)o[1][0] + 8),
				 -EINVAL);
		for (uint32_t c = 0; c < 3; c++)
			for (int i = 0; i < 16; i++)
				ck_assert_int_eq(lfp_family_free(fam, o[c][i]), 0);
		for (uint32_t c = 0; c < 3; c++)
			counts_add_up(lfp_family_pool(fam, c), 0);
	}
	/* The second round popped and pushed inline, counting nothing. */
	for (uint32_t c = 0; c < 3; c++) {
		struct lfp_pool *p = lfp_family_pool(fam, c);
		struct lfp_stats st;

		lfp_stats(p, &st);
		ck_assert_uint_eq(st.allocs, p->hot.bare ? 16 : 32);
	}
	lfp_family_destroy(fam);
}
END_TEST

/* A bare class's objects may go back either way (lfp_free on the class
 * pool, or lfp_family_free), and come either way: the family's calls,
 * which go out of line, work the list as the inline ones do, counting
 * nothing, so lfp_stats never shows more releases than allocations. */
START_TEST(bare_class_mixed_calls)
{
	static const size_t sizes[] = { 64 };
	static const uint32_t caps[] = { 8 };
	struct lfp_family_config cfg = { .sizes = sizes, .capacities = caps,
					 .classes = 1, .flags = BARE };
	struct lfp_family *fam = NULL;
	struct lfp_pool *p;
	struct lfp_stats st;
	void *o;

	ck_assert_int_eq(lfp_family_create(&cfg, &fam), 0);
	p = lfp_family_pool(fam, 0);
	ck_assert_ptr_nonnull(o = lfp_alloc(p));
	ck_assert_int_eq(lfp_free(p, o), 0);
	for (int i = 0; i < 3; i++) {
		ck_assert_ptr_nonnull(o = lfp_alloc(p));
		ck_assert_int_eq(lfp_family_free(fam, o), 0);
	}
	lfp_stats(p, &st);
	ck_assert_uint_le(st.frees, st.allocs);
	for (int i = 0; i < 3; i++) {
		ck_assert_ptr_nonnull(o = lfp_family_alloc(fam, 64));
		ck_assert_int_eq(lfp_free(p, o), 0);
		ck_assert_ptr_nonnull(o = lfp_family_alloc(fam, 64));
		ck_assert_int_eq(lfp_family_free(fam, o), 0);
	}
	lfp_stats(p, &st);
	ck_assert_uint_le(st.frees, st.allocs);
	if (p->hot.bare)
		ck_assert_uint_eq(st.frees, 0);
	counts_add_up(p, 0);
	lfp_family_destroy(fam);
}
END_TEST

/* The default pool's inline paths are the cache's: counted per call,
 * and the thread's last cache is the pool's after one. */
START_TEST(default_pool_unchanged)
{
	struct lfp_pool *pool = test_pool(64, 64);
	struct lfp_stats st;
	void *o[10];

	ck_assert_uint_eq(pool->hot.bare, 0);
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 10; i++)
			ck_assert_ptr_nonnull(o[i] = lfp_alloc(pool));
		ck_assert(lfpi_cache_is_of(lfpi_cache_tab.last, pool));
		for (int i = 0; i < 10; i++)
			ck_assert_int_eq(lfp_free(pool, o[i]), 0);
	}
	lfp_stats(pool, &st);
	ck_assert_uint_eq(st.allocs, 30);
	ck_assert_uint_eq(st.frees, 30);
	ck_assert_uint_gt(st.cache_hits, 0);
	lfp_destroy(pool);
}
END_TEST

#define CONC_THREADS 6
#define CONC_CAP 64

struct conc {
	struct lfp_pool *pool;
	_Atomic uint32_t *owner; /* per slot: the thread holding it, or 0 */
	unsigned rounds;
	_Atomic unsigned failures;
};

struct conc_arg {
	struct conc *c;
	uint32_t id;
};

/* Take up to 4 objects, own each (no other thread may hold it), stamp
 * and check them, release them: oversubscribed, so threads are
 * preempted between the pop's load and its CAS. */
static void *conc_worker(void *arg)
{
	struct conc_arg *a = arg;
	struct conc *c = a->c;
	uint32_t *o[4], idx[4], prev;
	unsigned bad = 0, k;

	for (unsigned r = 0; r < c->rounds; r++) {
		for (k = 0; k < 1 + r % 4; k++) {
			if (!(o[k] = lfp_alloc(c->pool)))
				break;
			idx[k] = lfp_index_of(c->pool, o[k]);
			prev = 0;
			if (idx[k] >= CONC_CAP ||
			    !atomic_compare_exchange_strong_explicit(
				    &c->owner[idx[k]], &prev, a->id,
				    memory_order_relaxed, memory_order_relaxed))
				bad++;
			*o[k] = a->id;
		}
		for (unsigned i = 0; i < k; i++) {
			bad += *o[i] != a->id;
			atomic_store_explicit(&c->owner[idx[i]], 0,
					      memory_order_relaxed);
			bad += lfp_free(c->pool, o[i]) != 0;
		}
	}
	atomic_fetch_add_explicit(&c->failures, bad, memory_order_relaxed);
	return NULL;
}

/* Several threads, more than cores: no slot is handed out twice, every
 * release is accepted, and at the end every slot is back exactly once. */
START_TEST(concurrent_counts)
{
	static _Atomic uint32_t owner[CONC_CAP];
	struct conc c = { .owner = owner,
			  .rounds = under_sanitizer() ? 3000 : 100000 };
	struct conc_arg args[CONC_THREADS];
	pthread_t t[CONC_THREADS];
	bool seen[CONC_CAP] = { false };
	void *all[CONC_CAP];

	c.pool = test_pool_flags(32, CONC_CAP, BARE);
	for (unsigned i = 0; i < CONC_THREADS; i++) {
		args[i] = (struct conc_arg){ .c = &c, .id = i + 1 };
		ck_assert_int_eq(pthread_create(&t[i], NULL, conc_worker,
						&args[i]), 0);
	}
	for (unsigned i = 0; i < CONC_THREADS; i++)
		pthread_join(t[i], NULL);
	ck_assert_uint_eq(atomic_load(&c.failures), 0);
	counts_add_up(c.pool, 0);
	/* Every slot once, none twice, none lost. */
	for (unsigned i = 0; i < CONC_CAP; i++) {
		uint32_t idx;

		ck_assert_ptr_nonnull(all[i] = lfp_alloc(c.pool));
		idx = lfp_index_of(c.pool, all[i]);
		ck_assert_uint_lt(idx, CONC_CAP);
		ck_assert(!seen[idx]);
		seen[idx] = true;
	}
	ck_assert_ptr_null(lfp_alloc(c.pool));
	for (unsigned i = 0; i < CONC_CAP; i++)
		ck_assert_int_eq(lfp_free(c.pool, all[i]), 0);
	counts_add_up(c.pool, 0);
	lfp_destroy(c.pool);
}
END_TEST

#define TRIM_CAP 16
#define TRIM_MAX 512
#define TRIM_OBJ 4096

struct trim_race {
	struct lfp_pool *pool;
	_Atomic uint32_t *owner; /* per slot: the thread holding it, or 0 */
	_Atomic bool stop;
	_Atomic unsigned failures;
	_Atomic unsigned stats_failures; /* lfp_stats's live overstated */
	_Atomic unsigned stats_clean;    /* reads that met no trim */
	_Atomic uint32_t trims;          /* odd while lfp_trim runs */
	bool paced;                      /* a pause after each trim */
	unsigned rounds;
};

struct trim_arg {
	struct trim_race *t;
	uint32_t id;
};

/* Take up to 8 page-sized objects, own each, fill and check them, give
 * them back: a slot a trim handed to two threads, or gave back to the
 * system while it was live, breaks the owner word or the fill. */
static void *trim_worker(void *arg)
{
	struct trim_arg *a = arg;
	struct trim_race *t = a->t;
	unsigned char *o[8];
	uint32_t idx[8], prev;
	unsigned bad = 0, k;

	for (unsigned r = 0; r < t->rounds; r++) {
		for (k = 0; k < 1 + r % 8; k++) {
			if (!(o[k] = lfp_alloc(t->pool)))
				break;
			idx[k] = lfp_index_of(t->pool, o[k]);
			prev = 0;
			if (idx[k] >= TRIM_MAX ||
			    !atomic_compare_exchange_strong_explicit(
				    &t->owner[idx[k]], &prev, a->id,
				    memory_order_relaxed, memory_order_relaxed)) {
				bad++;
				continue;
			}
			memset(o[k], (int)a->id, TRIM_OBJ);
		}
		for (unsigned i = 0; i < k; i++) {
			if (!o[i] || idx[i] >= TRIM_MAX)
				continue;
			bad += o[i][0] != a->id || o[i][TRIM_OBJ - 1] != a->id;
			atomic_store_explicit(&t->owner[idx[i]], 0,
					      memory_order_relaxed);
			bad += lfp_free(t->pool, o[i]) != 0;
		}
	}
	atomic_fetch_add_explicit(&t->failures, bad, memory_order_relaxed);
	return NULL;
}

/* Trims in a loop, beside the workers. */
static void *trim_trimmer(void *arg)
{
	struct trim_race *t = arg;

	struct timespec pause = { 0, 50 * 1000 };

	while (!atomic_load_explicit(&t->stop, memory_order_relaxed)) {
		atomic_fetch_add(&t->trims, 1);
		(void)lfp_trim(t->pool);
		atomic_fetch_add(&t->trims, 1);
		if (t->paced)
			nanosleep(&pause, NULL);
	}
	return NULL;
}

/* lfp_stats in a loop, beside the workers and the trims: live is a
 * recent value, and the workers never hold more than 4 * 8 objects. A
 * read that a trim overlapped may count the slots it had aside, if the
 * trim outlasts the read's wait (lfpool.h): only reads that met no trim
 * are held to the bound (stats_waits_out_a_short_trim holds the wait). */
static void *trim_reader(void *arg)
{
	struct trim_race *t = arg;
	struct lfp_stats st;
	unsigned bad = 0, clean = 0;
	uint32_t before;

	while (!atomic_load_explicit(&t->stop, memory_order_relaxed)) {
		before = atomic_load(&t->trims);
		lfp_stats(t->pool, &st);
		if (before & 1 || atomic_load(&t->trims) != before)
			continue;
		clean++;
		bad += st.live > 4 * 8;
	}
	atomic_fetch_add_explicit(&t->stats_failures, bad,
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&t->stats_clean, clean,
				  memory_order_relaxed);
	return NULL;
}

/*
 * Workers pop and push page-sized objects inline while a thread trims in
 * a loop and the pool grows; with `stats`, another thread reads
 * lfp_stats meanwhile. 256 slots were handed out once and are back on
 * the list first: the trims have pages to give back, and the list holds
 * far more than the workers ever do.
 */
static struct trim_race *trim_race_run(struct trim_race *t, bool stats)
{
	static _Atomic uint32_t owner[TRIM_MAX];
	struct lfp_config cfg = { .obj_size = TRIM_OBJ, .capacity = TRIM_CAP,
				  .max_capacity = TRIM_MAX, .flags = BARE,
				  .exhaust = LFP_EXHAUST_GROW };
	struct trim_arg args[4];
	pthread_t w[4], tr, rd;
	void *all[256];

	*t = (struct trim_race){ .owner = owner, .paced = stats,
				 .rounds = under_sanitizer() ? 2000 : 40000 };
	ck_assert_int_eq(lfp_create(&cfg, &t->pool), 0);
	for (unsigned i = 0; i < 256; i++)
		ck_assert_ptr_nonnull(all[i] = lfp_alloc(t->pool));
	for (unsigned i = 0; i < 256; i++)
		ck_assert_int_eq(lfp_free(t->pool, all[i]), 0);
	ck_assert_int_eq(pthread_create(&tr, NULL, trim_trimmer, t), 0);
	if (stats)
		ck_assert_int_eq(pthread_create(&rd, NULL, trim_reader, t), 0);
	for (unsigned i = 0; i < 4; i++) {
		args[i] = (struct trim_arg){ .t = t, .id = i + 1 };
		ck_assert_int_eq(pthread_create(&w[i], NULL, trim_worker,
						&args[i]), 0);
	}
	for (unsigned i = 0; i < 4; i++)
		pthread_join(w[i], NULL);
	atomic_store(&t->stop, true);
	pthread_join(tr, NULL);
	if (stats)
		pthread_join(rd, NULL);
	return t;
}

/*
 * lfp_trim takes the whole list aside, gives back the pages of its slots
 * and pushes them back, while inline pops and pushes go on and the pool
 * grows: no slot handed out twice or given back while live, no
 * allocation fails, and at the end every slot is back once.
 */
START_TEST(trim_races_inline_calls)
{
	struct trim_race t;
	struct lfp_stats st;

	trim_race_run(&t, false);
	ck_assert_uint_eq(atomic_load(&t.failures), 0);
	lfp_stats(t.pool, &st);
	ck_assert_uint_eq(st.failed_allocs, 0);
	ck_assert_uint_gt(st.trimmed_bytes, 0);
	counts_add_up(t.pool, 0);
	lfp_destroy(t.pool);
}
END_TEST

/*
 * A trim (played here: trim_seq made odd, the whole list taken aside as
 * trim_locked takes it) that ends while lfp_stats is in its call: the
 * reader waits the trim out and counts the slots back on the list, so
 * live stays 0, not every slot handed out. A reader that walked at once
 * would find the list empty and report all 64 live, in no time.
 */
struct short_trim {
	struct lfp_pool *pool;
	_Atomic bool started;
	uint64_t live;
	uint64_t ns; /* how long the call took */
};


static void *short_trim_reader(void *arg)
{
	struct short_trim *s = arg;
	struct lfp_stats st;

	/* A first call pays for what a later one does not (its pages,
	 * its shards): after it, the call below reaches the walk at once. */
	lfp_stats(s->pool, &st);
	atomic_store(&s->started, true);
	s->ns = test_now_ns();
	lfp_stats(s->pool, &st);
	s->ns = test_now_ns() - s->ns;
	s->live = st.live;
	return NULL;
}

START_TEST(stats_waits_out_a_short_trim)
{
	struct lfp_config cfg = { .obj_size = 64, .capacity = 64,
				  .flags = BARE };
	struct short_trim s = { 0 };
	struct timespec pause = { 0, 100 * 1000 };
	void *all[64];
	uint32_t seq, chain, last, next;
	pthread_t rd;

	if (build_checks())
		return; /* not bare: live is counted, not walked */
	ck_assert_int_eq(lfp_create(&cfg, &s.pool), 0);
	for (unsigned i = 0; i < 64; i++)
		ck_assert_ptr_nonnull(all[i] = lfp_alloc(s.pool));
	for (unsigned i = 0; i < 64; i++)
		ck_assert_int_eq(lfp_free(s.pool, all[i]), 0);
	for (unsigned round = 0; round < 20; round++) {
		seq = atomic_load(&s.pool->trim_seq);
		atomic_store(&s.pool->trim_seq, seq + 1);
		chain = lfpi_stack_pop_all(&s.pool->free);
		ck_assert_uint_ne(chain, LFPI_NIL);
		for (last = chain; (next = atomic_load(lfpi_slot_next(
				      s.pool, last))) != LFPI_NIL;)
			last = next;
		atomic_store(&s.started, false);
		ck_assert_int_eq(pthread_create(&rd, NULL, short_trim_reader,
						&s), 0);
		while (!atomic_load(&s.started))
			sched_yield();
		nanosleep(&pause, NULL);
		lfpi_stack_push(&s.pool->free, chain, last);
		atomic_store(&s.pool->trim_seq, seq + 2);
		pthread_join(rd, NULL);
		/* A call that took 1 ms may have given up on the trim (this
		 * thread was late to end it, on a busy machine): lfpool.h
		 * allows it to count the slots aside. A quicker one may not. */
		if (s.live != 0)
			ck_assert_uint_ge(s.ns, 1000000);
	}
	counts_add_up(s.pool, 0);
	lfp_destroy(s.pool);
}
END_TEST

/*
 * lfp_stats beside trims (paced, so that reads fall between them): its
 * live is a recent value, never more than the workers hold (4 * 8), not
 * every slot handed out since the pool was made.
 */
START_TEST(stats_during_trim)
{
	struct trim_race t;

	trim_race_run(&t, true);
	ck_assert_uint_eq(atomic_load(&t.failures), 0);
	/* The bound is the walk's: where the build checks the pool, live
	 * is allocs less frees read one after the other (see
	 * stats_while_caches_exchange). */
	if (!build_checks())
		ck_assert_uint_eq(atomic_load(&t.stats_failures), 0);
	ck_assert_uint_gt(atomic_load(&t.stats_clean), 0);
	counts_add_up(t.pool, 0);
	lfp_destroy(t.pool);
}
END_TEST

#define DEPOT_CAP 1024

struct depot_race {
	struct lfp_pool *pool;
	_Atomic bool stop;
	_Atomic unsigned failures;    /* an allocation or release failed */
	_Atomic unsigned overstated;  /* lfp_stats's live above the bound */
	unsigned rounds;
};

/* Through an explicit cache of its own: take 64, give them back, so that
 * the cache fills and empties magazines in the pool's depot. */
static void *depot_worker(void *arg)
{
	struct depot_race *d = arg;
	struct lfp_cache *c = lfp_cache_create(d->pool);
	void *o[64];
	unsigned bad = c == NULL, k;

	for (unsigned r = 0; c && r < d->rounds; r++) {
		for (k = 0; k < 64 && (o[k] = lfp_cache_alloc(c)); k++)
			;
		bad += k != 64;
		for (unsigned i = 0; i < k; i++)
			bad += lfp_cache_free(c, o[i]) != 0;
	}
	lfp_cache_destroy(c);
	atomic_fetch_add_explicit(&d->failures, bad, memory_order_relaxed);
	return NULL;
}

static void *depot_reader(void *arg)
{
	struct depot_race *d = arg;
	struct lfp_stats st;
	unsigned bad = 0;

	/* Each worker holds 64 objects at most, and its cache 16 slots:
	 * a walk that strayed would report more. */
	while (!atomic_load_explicit(&d->stop, memory_order_relaxed)) {
		lfp_stats(d->pool, &st);
		bad += st.live > 2 * 64 + 2 * 16;
	}
	atomic_fetch_add_explicit(&d->overstated, bad, memory_order_relaxed);
	return NULL;
}

/*
 * lfp_stats of a bare pool walks its free list and its depot's loaded
 * magazines, while explicit caches of the pool fill and empty those
 * magazines: the walk must read only what it may read concurrently
 * (a ThreadSanitizer build fails on a race) and end.
 */
START_TEST(stats_while_caches_exchange)
{
	struct lfp_config cfg = { .obj_size = 32, .capacity = DEPOT_CAP,
				  .cache_size = 16, .flags = BARE };
	struct depot_race d = { .rounds = under_sanitizer() ? 2000 : 50000 };
	pthread_t w[2], rd;

	ck_assert_int_eq(lfp_create(&cfg, &d.pool), 0);
	ck_assert_int_eq(pthread_create(&rd, NULL, depot_reader, &d), 0);
	for (unsigned i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&w[i], NULL, depot_worker, &d),
				 0);
	for (unsigned i = 0; i < 2; i++)
		pthread_join(w[i], NULL);
	atomic_store(&d.stop, true);
	pthread_join(rd, NULL);
	ck_assert_uint_eq(atomic_load(&d.failures), 0);
	/* Where the build checks the pool it is not bare: live is then
	 * allocs less frees, two counts read one after the other, which
	 * a reader preempted between them may see far apart (lfp_stats:
	 * each field a recent value). The bound is the walk's. */
	if (!build_checks())
		ck_assert_uint_eq(atomic_load(&d.overstated), 0);
	counts_add_up(d.pool, 0);
	lfp_destroy(d.pool);
}
END_TEST

#define CHURN_HOLD 32

struct churn {
	struct lfp_pool *pool;
	_Atomic bool stop;
	_Atomic unsigned ready;
};

/* Hold CHURN_HOLD objects at all times (one more for a moment), swapping
 * one at the top of the free list for another, over and over. */
static void *churn_worker(void *arg)
{
	struct churn *c = arg;
	void *o[CHURN_HOLD], *n;
	unsigned i = 0;

	for (int k = 0; k < CHURN_HOLD; k++)
		o[k] = lfp_alloc(c->pool);
	atomic_fetch_add(&c->ready, 1);
	while (!atomic_load_explicit(&c->stop, memory_order_relaxed)) {
		n = lfp_alloc(c->pool);
		lfp_free(c->pool, o[i % CHURN_HOLD]);
		o[i++ % CHURN_HOLD] = n;
	}
	for (int k = 0; k < CHURN_HOLD; k++)
		lfp_free(c->pool, o[k]);
	return NULL;
}

/*
 * lfp_stats while two threads hold 32 objects each and churn the top of
 * a long free list: live is a recent value, so never below the 62 they
 * hold at the least (an object leaves only after its successor came),
 * although the walk of the list follows links that change under it.
 */
START_TEST(stats_live_under_churn)
{
	struct churn c = { 0 };
	void *all[4096];
	unsigned low = 0;
	struct lfp_stats st;
	pthread_t t[2];

	c.pool = test_pool_flags(64, 4096, BARE);
	for (int i = 0; i < 4096; i++)
		ck_assert_ptr_nonnull(all[i] = lfp_alloc(c.pool));
	for (int i = 0; i < 4096; i++)
		ck_assert_int_eq(lfp_free(c.pool, all[i]), 0);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, churn_worker, &c),
				 0);
	while (atomic_load(&c.ready) < 2)
		sched_yield();
	for (int i = 0; i < 2000; i++) {
		lfp_stats(c.pool, &st);
		low += st.live < 2 * CHURN_HOLD - 2;
	}
	atomic_store(&c.stop, true);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	ck_assert_msg(low == 0, "%u of 2000 reads of live were below %d",
		      low, 2 * CHURN_HOLD - 2);
	counts_add_up(c.pool, 0);
	lfp_destroy(c.pool);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("bare");
	TCase *tc = tcase_create("bare");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, which_pools_are_bare);
	tcase_add_loop_test(tc, pop_push_one_thread, 0, 2);
	tcase_add_test(tc, pop_bumps_tag_push_keeps_it);
	tcase_add_test(tc, exhaustion_returns_null);
	tcase_add_test(tc, exhaustion_calls_reclaim);
	tcase_add_test(tc, growth_bounds);
	tcase_add_test(tc, bad_pointers_refused);
	tcase_add_test(tc, family_of_bare_classes);
	tcase_add_test(tc, bare_class_mixed_calls);
	tcase_add_test(tc, default_pool_unchanged);
	tcase_add_test(tc, concurrent_counts);
	tcase_add_test(tc, trim_races_inline_calls);
	tcase_add_test(tc, stats_waits_out_a_short_trim);
	tcase_add_test(tc, stats_during_trim);
	tcase_add_test(tc, stats_while_caches_exchange);
	tcase_add_test(tc, stats_live_under_churn);
	suite_add_tcase(s, tc);
	return test_run(s);
}
