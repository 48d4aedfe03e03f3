/* SPDX-License-Identifier: MIT */
/* Generational handles: stale, foreign, forged and zeroed handles, release
 * by handle, wrap-around, and threads resolving each other's handles. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

#include "testutil.h"

static uint64_t rng_next(uint64_t *s)
{
	/* xorshift64*: small, seeded, the same sequence on every run. */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * UINT64_C(2685821657736338717);
}

START_TEST(stale_after_release_and_reuse)
{
	struct lfp_pool *pool = test_pool_flags(32, 4, test_modes[_i]);
	struct lfpi_census census;
	struct lfp_stats st;
	void *a = lfp_alloc(pool), *b;
	lfp_handle h = lfp_handle_of(pool, a), h2;

	ck_assert(!lfp_handle_is_null(h));
	ck_assert_uint_eq(lfp_handle_index(h), lfp_index_of(pool, a));
	ck_assert_uint_eq(lfp_handle_gen(h) & 1u, 1);
	ck_assert_ptr_eq(lfp_resolve(pool, h), a);
	ck_assert(lfp_is_live(pool, a));

	ck_assert_int_eq(lfp_free(pool, a), 0);
	ck_assert_ptr_null(lfp_resolve(pool, h));
	ck_assert(!lfp_is_live(pool, a));
	ck_assert(lfp_handle_is_null(lfp_handle_of(pool, a)));

	b = lfp_alloc(pool); /* LIFO: the same slot, a new generation */
	ck_assert_ptr_eq(b, a);
	h2 = lfp_handle_of(pool, b);
	ck_assert_uint_eq(lfp_handle_index(h2), lfp_handle_index(h));
	ck_assert_uint_ne(lfp_handle_gen(h2), lfp_handle_gen(h));
	ck_assert_ptr_null(lfp_resolve(pool, h));
	ck_assert_ptr_eq(lfp_resolve(pool, h2), b);

	/* The stale handle must not release the new owner. */
	ck_assert_int_eq(lfp_free_handle(pool, h), -ESTALE);
	ck_assert(lfp_is_live(pool, b));
	ck_assert_ptr_eq(lfp_resolve(pool, h2), b);
	lfp_stats(pool, &st);
	ck_assert_uint_eq(st.rejected_frees, 1);
	ck_assert_uint_eq(st.live, 1);
	ck_audit(pool, &census);
	ck_assert_uint_eq(census.live, 1);

	ck_assert_int_eq(lfp_free_handle(pool, h2), 0);
	ck_assert_int_eq(lfp_free_handle(pool, h2), -ESTALE);
	ck_assert_int_eq(lfp_free(pool, b), -EALREADY);
	ck_assert_ptr_null(lfp_resolve(pool, h2));
	lfp_stats(pool, &st);
	ck_assert_uint_eq(st.frees, 2);
	ck_assert_uint_eq(st.rejected_frees, 3);
	ck_audit(pool, &census);
	ck_assert_uint_eq(census.live, 0);
	lfp_destroy(pool);
}
END_TEST

START_TEST(release_by_handle_into_a_cache)
{
	struct lfp_pool *pool = test_pool_flags(32, 16, test_modes[_i]);
	struct lfp_cache *cache = lfp_cache_create(pool);
	struct lfpi_census census;
	struct lfp_stats st;
	void *a, *b;
	lfp_handle h;

	ck_assert_ptr_nonnull(cache);
	a = lfp_cache_alloc(cache);
	h = lfp_handle_of(pool, a);
	ck_assert_int_eq(lfp_cache_free_handle(cache, h), 0);
	ck_assert_ptr_null(lfp_resolve(pool, h));
	b = lfp_cache_alloc(cache); /* the cache is LIFO: the same slot */
	ck_assert_ptr_eq(b, a);
	ck_assert_int_eq(lfp_cache_free_handle(cache, h), -ESTALE);
	ck_assert_int_eq(lfp_cache_free_handle(cache, LFP_NULL_HANDLE),
			 -EINVAL);
	ck_assert_int_eq(lfp_cache_free_handle(NULL, h), -EINVAL);
	ck_assert(lfp_is_live(pool, b));
	lfp_stats(pool, &st);
	ck_assert_uint_eq(st.live, 1);
	ck_assert_uint_eq(st.rejected_frees, 2);
	ck_assert_int_eq(lfp_cache_free_handle(cache,
					       lfp_handle_of(pool, b)), 0);
	lfp_cache_destroy(cache);
	ck_audit(pool, &census);
	ck_assert_uint_eq(census.live, 0);
	lfp_destroy(pool);
}
END_TEST

START_TEST(foreign_and_interior_pointers)
{
	struct lfp_pool *pool = test_pool_flags(40, 8, test_modes[_i]), *other = test_pool_flags(40, 8, test_modes[_i]);
	char *a = lfp_alloc(pool), *foreign = lfp_alloc(other);
	int local;

	ck_assert(lfp_handle_is_null(lfp_handle_of(pool, foreign)));
	ck_assert(lfp_handle_is_null(lfp_handle_of(pool, &local)));
	ck_assert(lfp_handle_is_null(lfp_handle_of(pool, a + 1)));
	ck_assert(lfp_handle_is_null(lfp_handle_of(pool, a - 1)));
	ck_assert(lfp_handle_is_null(lfp_handle_of(pool, NULL)));
	ck_assert(lfp_handle_is_null(lfp_handle_of(NULL, a)));
	/* A slot that exists but was never handed out. */
	ck_assert(lfp_handle_is_null(lfp_handle_of(pool, lfp_at(pool, 5))));
	ck_assert(!lfp_is_live(pool, foreign));
	ck_assert(!lfp_is_live(pool, a + 1));
	ck_assert(!lfp_is_live(pool, lfp_at(pool, 5)));
	ck_assert(!lfp_is_live(NULL, a));
	ck_assert(lfp_is_live(pool, a));
	/* A handle from another pool names nothing here that is live. */
	ck_assert_ptr_null(lfp_resolve(pool, (lfp_handle){
		lfp_handle_of(other, foreign).bits + 1 }));
	lfp_destroy(other);
	lfp_destroy(pool);
}
END_TEST

START_TEST(zeroed_and_out_of_range_handles)
{
	struct lfp_pool *pool = test_pool_flags(16, 8, test_modes[_i]);
	struct lfpi_census census;
	struct lfp_stats st;
	void *a = lfp_alloc(pool); /* slot 0, generation 1 */
	lfp_handle h = lfp_handle_of(pool, a);

	ck_assert_uint_eq(h.bits, UINT64_C(1) << 32);
	ck_assert_ptr_null(lfp_resolve(pool, LFP_NULL_HANDLE));
	ck_assert_int_eq(lfp_free_handle(pool, LFP_NULL_HANDLE), -EINVAL);
	/* An even generation is never live, whatever the slot holds. */
	ck_assert_int_eq(lfp_free_handle(pool, (lfp_handle){ 2ull << 32 }),
			 -EINVAL);
	ck_assert_ptr_null(lfp_resolve(NULL, h));
	ck_assert_int_eq(lfp_free_handle(NULL, h), -EINVAL);
	/* Beyond capacity, and within capacity but never handed out. */
	ck_assert_ptr_null(lfp_resolve(pool, (lfp_handle){ 1ull << 32 | 8 }));
	ck_assert_ptr_null(
		lfp_resolve(pool, (lfp_handle){ 1ull << 32 | 0xffffffffu }));
	ck_assert_int_eq(lfp_free_handle(pool, (lfp_handle){ 1ull << 32 | 8 }),
			 -EFAULT);
	ck_assert_ptr_null(lfp_resolve(pool, (lfp_handle){ 1ull << 32 | 3 }));
	ck_assert_int_eq(lfp_free_handle(pool, (lfp_handle){ 1ull << 32 | 3 }),
			 -ESTALE);

	lfp_stats(pool, &st);
	ck_assert_uint_eq(st.live, 1);
	ck_assert_uint_eq(st.rejected_frees, 4); /* the NULL pool counts nowhere */
	ck_audit(pool, &census);
	ck_assert_ptr_eq(lfp_resolve(pool, h), a);
	lfp_destroy(pool);
}
END_TEST

/* A live generation is never 0, even where the 32-bit word wraps. */
START_TEST(generation_wraps_past_zero)
{
	struct lfp_pool *pool = test_pool_flags(16, 2, test_modes[_i]);
	void *a = lfp_alloc(pool), *b;
	uint32_t idx = lfp_index_of(pool, a);
	lfp_handle old, h;

	/* Pretend the slot was reused 2^31 - 1 times. */
	atomic_store(&pool->slots[idx].gen, UINT32_C(0xffffffff));
	old = lfp_handle_of(pool, a);
	ck_assert_uint_eq(lfp_handle_gen(old), 0xffffffffu);
	ck_assert_int_eq(lfp_free_handle(pool, old), 0);
	/* Not 0, which means "never used": the wrap skips to 2. */
	ck_assert_uint_eq(atomic_load(&pool->slots[idx].gen), 2);
	ck_assert_ptr_null(lfp_resolve(pool, old));
	/* LIFO: the slot comes back at once, with generation 3. */
	b = lfp_alloc(pool);
	ck_assert_ptr_eq(b, a);
	h = lfp_handle_of(pool, b);
	ck_assert_uint_eq(lfp_handle_gen(h), 3);
	ck_assert(!lfp_handle_is_null(h));
	ck_assert_ptr_null(lfp_resolve(pool, old));
	ck_assert_ptr_eq(lfp_resolve(pool, h), b);
	ck_assert_int_eq(lfp_free_handle(pool, old), -ESTALE);
	ck_assert(lfp_is_live(pool, b));
	lfp_destroy(pool);
}
END_TEST

/*
 * Through the inline release of a plain pool the word may wrap to 0: still
 * a free generation, the next allocation makes it 1, and neither the old
 * handle nor a zeroed one resolves.
 */
START_TEST(inline_release_wraps_to_zero)
{
	struct lfp_pool *pool = test_pool(16, 2);
	struct lfp_cache *c = lfp_cache_create(pool);
	void *a = lfp_cache_alloc(c), *b;
	uint32_t idx = lfp_index_of(pool, a);
	lfp_handle old, h, zero = { 0 };

	atomic_store(&pool->slots[idx].gen, UINT32_C(0xffffffff));
	old = lfp_handle_of(pool, a);
	ck_assert_int_eq(lfp_cache_free(c, a), 0);
	/* Under ASan the pool's debug tools send releases out of line,
	 * where 0 is skipped. */
	ck_assert_uint_eq(atomic_load(&pool->slots[idx].gen),
			  pool->quirks ? 2u : 0u);
	ck_assert(!lfp_is_live(pool, a));
	ck_assert_ptr_null(lfp_resolve(pool, old));
	ck_assert_int_eq(lfp_cache_free(c, a), -EALREADY);
	b = lfp_cache_alloc(c);
	ck_assert_ptr_eq(b, a);
	h = lfp_handle_of(pool, b);
	ck_assert_uint_eq(lfp_handle_gen(h), pool->quirks ? 3u : 1u);
	ck_assert_ptr_eq(lfp_resolve(pool, h), b);
	ck_assert_ptr_null(lfp_resolve(pool, old));
	ck_assert_ptr_null(lfp_resolve(pool, zero));
	ck_assert_int_eq(lfp_cache_free(c, b), 0);
	lfp_cache_destroy(c);
	expect_accounted(pool, 0);
	lfp_destroy(pool);
}
END_TEST

struct stamped {
	_Atomic uint64_t self; /* the handle this object had when made */
	uint64_t pad;
};

/* Churn a pool so its slots carry assorted generations; live[] is by slot. */
static void churn(struct lfp_pool *pool, uint32_t cap, uint64_t *seed,
		  struct stamped **live)
{
	for (int round = 0; round < 2000; round++) {
		uint32_t i = (uint32_t)(rng_next(seed) % cap);
		struct stamped *p;

		if (live[i]) {
			ck_assert_int_eq(lfp_free(pool, live[i]), 0);
			live[i] = NULL;
		} else if ((p = lfp_alloc(pool))) {
			ck_assert_ptr_null(live[lfp_index_of(pool, p)]);
			live[lfp_index_of(pool, p)] = p;
			atomic_store(&p->self, lfp_handle_of(pool, p).bits);
		}
	}
}

static lfp_handle forge(uint64_t *seed, struct stamped **live, uint32_t cap)
{
	uint64_t r = rng_next(seed);
	struct stamped *near = live[r % cap];
	uint64_t base = near ? atomic_load(&near->self) : r;

	switch ((r >> 32) % 4) {
	case 0: /* anything at all */
		return (lfp_handle){ rng_next(seed) };
	case 1: /* a real index with a nearby generation */
		return (lfp_handle){ base + ((r >> 40) % 9 - 4) * (1ull << 32) };
	case 2: /* a real generation with a nearby index */
		return (lfp_handle){ base + (r >> 40) % 9 - 4 };
	default: /* small generations over and past the pool */
		return (lfp_handle){ ((r >> 40) % 64) << 32 | (r >> 8) % (2 * cap) };
	}
}

START_TEST(forged_handles_never_reach_another_owner)
{
	enum { CAP = 64, TRIES = 200000 };
	struct lfp_pool *pool = test_pool_flags(sizeof(struct stamped), CAP, test_modes[_i]);
	struct stamped *live[CAP] = { 0 };
	uint64_t seed = 0x5eed1234abcdull, matched = 0;
	struct lfpi_census census;
	struct lfp_stats before, after;

	churn(pool, CAP, &seed, live);
	lfp_stats(pool, &before);
	for (int t = 0; t < TRIES; t++) {
		lfp_handle h = forge(&seed, live, CAP);
		struct stamped *p = lfp_resolve(pool, h);
		uint32_t idx = lfp_handle_index(h);

		if (p) {
			/* Only the exact handle of a live object resolves. */
			ck_assert_ptr_eq(p, lfp_at(pool, idx));
			ck_assert_ptr_eq(p, live[idx]);
			ck_assert_uint_eq(atomic_load(&p->self), h.bits);
			matched++;
			continue;
		}
		ck_assert_int_ne(lfp_free_handle(pool, h), 0);
	}
	lfp_stats(pool, &after);
	ck_assert_uint_eq(after.live, before.live);
	ck_assert_uint_eq(after.frees, before.frees);
	ck_assert_uint_eq(after.rejected_frees,
			  before.rejected_frees + TRIES - matched);
	ck_assert_uint_gt(matched, 0); /* the near-misses did hit sometimes */
	for (uint32_t i = 0; i < CAP; i++)
		if (live[i])
			ck_assert_ptr_eq(lfp_resolve(pool, (lfp_handle){
				atomic_load(&live[i]->self) }), live[i]);
	ck_audit(pool, &census);
	ck_assert_uint_eq(census.live, after.live);
	lfp_destroy(pool);
}
END_TEST

START_TEST(handles_compare_equal)
{
	struct lfp_pool *pool = test_pool_flags(16, 4, test_modes[_i]);
	void *a = lfp_alloc(pool), *b = lfp_alloc(pool);
	lfp_handle ha = lfp_handle_of(pool, a), hb = lfp_handle_of(pool, b);
	lfp_handle ha2 = lfp_handle_of(pool, a), old = ha;

	ck_assert(lfp_handle_eq(ha, ha2));
	ck_assert(lfp_handle_eq(ha, ha));
	ck_assert(!lfp_handle_eq(ha, hb));
	ck_assert(!lfp_handle_eq(ha, LFP_NULL_HANDLE));
	ck_assert(lfp_handle_eq(LFP_NULL_HANDLE, (lfp_handle){ 0 }));
	/* The same slot in its next lifetime is another handle. */
	ck_assert_int_eq(lfp_free(pool, a), 0);
	ck_assert_ptr_eq(lfp_alloc(pool), a);
	ha = lfp_handle_of(pool, a);
	ck_assert_uint_eq(lfp_handle_index(ha), lfp_handle_index(old));
	ck_assert(!lfp_handle_eq(ha, old));
	/* Same generation, other slot; same bits in the other half. */
	ck_assert(!lfp_handle_eq((lfp_handle){ 3ull << 32 | 1 },
				 (lfp_handle){ 3ull << 32 | 2 }));
	ck_assert(!lfp_handle_eq((lfp_handle){ 3ull << 32 | 1 },
				 (lfp_handle){ 1ull << 32 | 3 }));
	lfp_destroy(pool);
}
END_TEST

/* Every prefix of hs, so both ends of the prefetch window are crossed. */
static void expect_bulk_as_single(struct lfp_pool *pool, const lfp_handle *hs,
				  size_t n)
{
	static void *objs[600];
	static const size_t lens[] = { 1, 2, 31, 32, 33, 63, 64, 65, 100 };

	for (size_t l = 0; l <= sizeof(lens) / sizeof(lens[0]); l++) {
		size_t len = l < sizeof(lens) / sizeof(lens[0]) ? lens[l] : n;
		size_t want = 0;

		if (len > n)
			continue;
		for (size_t i = 0; i < len; i++)
			objs[i] = (void *)&objs; /* must be overwritten */
		for (size_t i = 0; i < len; i++)
			want += lfp_resolve(pool, hs[i]) != NULL;
		ck_assert_uint_eq(lfp_resolve_bulk(pool, hs, objs, len), want);
		for (size_t i = 0; i < len; i++)
			ck_assert_msg(objs[i] == lfp_resolve(pool, hs[i]),
				      "handle %zu (%#llx) of %zu", i,
				      (unsigned long long)hs[i].bits, len);
	}
}

START_TEST(resolve_bulk_agrees_with_resolve)
{
	enum { CAP = 64, N = 600 };
	struct lfp_pool *pool = test_pool_flags(sizeof(struct stamped), CAP, test_modes[_i]);
	struct stamped *live[CAP] = { 0 };
	static lfp_handle hs[N];
	void *objs[4];
	uint64_t seed = 0xb01cull;
	size_t nlive = 0, nstale = 0;

	churn(pool, CAP, &seed, live);
	/* Handles of today's objects, some of which the next churn kills. */
	for (uint32_t i = 0, k = 0; i < CAP; i++)
		if (live[i] && k < N / 4)
			hs[k++] = (lfp_handle){ atomic_load(&live[i]->self) };
	churn(pool, CAP, &seed, live);
	for (size_t i = N / 4; i < N; i++) {
		if (i % 3 == 0) {
			hs[i] = forge(&seed, live, CAP);
		} else if (i % 3 == 1) {
			struct stamped *p = live[rng_next(&seed) % CAP];

			hs[i] = p ? (lfp_handle){ atomic_load(&p->self) }
				  : LFP_NULL_HANDLE;
		} else {
			hs[i] = hs[rng_next(&seed) % (N / 4)];
		}
	}
	for (size_t i = 0; i < N; i++) {
		nlive += lfp_resolve(pool, hs[i]) != NULL;
		nstale += !lfp_handle_is_null(hs[i]) &&
			  !lfp_resolve(pool, hs[i]);
	}
	ck_assert_uint_gt(nlive, N / 20); /* the mix has both kinds */
	ck_assert_uint_gt(nstale, N / 20);
	expect_bulk_as_single(pool, hs, N);

	/* Bad input: nothing written, or all NULL for a NULL pool. */
	objs[0] = objs[1] = (void *)&objs;
	ck_assert_uint_eq(lfp_resolve_bulk(pool, hs, objs, 0), 0);
	ck_assert_ptr_eq(objs[0], (void *)&objs);
	ck_assert_uint_eq(lfp_resolve_bulk(pool, NULL, objs, 2), 0);
	ck_assert_ptr_eq(objs[0], (void *)&objs);
	ck_assert_uint_eq(lfp_resolve_bulk(pool, hs, NULL, 2), 0);
	ck_assert_uint_eq(lfp_resolve_bulk(NULL, hs, objs, 2), 0);
	ck_assert_ptr_null(objs[0]);
	ck_assert_ptr_null(objs[1]);
	lfp_destroy(pool);
}
END_TEST

/*
 * A growable pool reserves metadata for max_capacity slots but commits it
 * as it grows: handles past the extent, of slots not grown into, must not
 * be read, in the prefetch window or in the resolve.
 */
START_TEST(resolve_bulk_stays_inside_the_pool)
{
	struct lfp_config cfg = { .obj_size = 32, .capacity = 64,
				  .flags = test_modes[_i],
				  .exhaust = LFP_EXHAUST_GROW,
				  .max_capacity = 1u << 24 };
	struct lfp_pool *pool = NULL;
	static lfp_handle hs[200];
	static void *objs[200];
	void *a;

	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	a = lfp_alloc(pool);
	for (uint32_t i = 0; i < 200; i++)
		hs[i] = (lfp_handle){ (uint64_t)(2 * i + 1) << 32 |
				      (i % 2 ? (1u << 24) - 1 - i
					     : UINT32_MAX - i) };
	hs[100] = lfp_handle_of(pool, a);
	ck_assert_uint_eq(lfp_resolve_bulk(pool, hs, objs, 200), 1);
	ck_assert_ptr_eq(objs[100], a);
	for (uint32_t i = 0; i < 200; i++)
		if (i != 100)
			ck_assert_ptr_null(objs[i]);
	expect_bulk_as_single(pool, hs, 200);
	lfp_destroy(pool);
}
END_TEST

/*
 * Threads own published objects and replace them; all threads resolve
 * whatever is published, and old handles they saw before. A reader pins
 * the slot first (pins/dying form a Dekker handshake with the owner, all
 * seq_cst), so an object it resolves cannot be released while it reads the
 * stamp inside it: a resolved handle must yield the object it named, and a
 * stale one must yield NULL, not the slot's new owner.
 */
#define CT_THREADS 4
#define CT_CAP 96
#define CT_PER 16 /* published entries per thread */
#define CT_ROUNDS 20000
#define CT_SEEN 32

static struct lfp_pool *ct_pool;
static _Atomic uint64_t ct_pub[CT_THREADS * CT_PER];
static _Atomic uint32_t ct_pins[CT_CAP], ct_dying[CT_CAP];
static _Atomic uint64_t ct_bad, ct_resolved, ct_stale_seen, ct_stale_frees;

static void ct_check(lfp_handle h, bool current)
{
	uint32_t idx = lfp_handle_index(h);
	struct stamped *p;

	atomic_fetch_add(&ct_pins[idx], 1);
	if (!atomic_load(&ct_dying[idx])) {
		p = lfp_resolve(ct_pool, h);
		if (p && (p != lfp_at(ct_pool, idx) ||
			  atomic_load_explicit(&p->self, memory_order_acquire) !=
				  h.bits))
			atomic_fetch_add(&ct_bad, 1);
		if (p)
			atomic_fetch_add_explicit(&ct_resolved, 1,
						  memory_order_relaxed);
		else if (!current)
			atomic_fetch_add_explicit(&ct_stale_seen, 1,
						  memory_order_relaxed);
	}
	atomic_fetch_sub(&ct_pins[idx], 1);
}

static void ct_retire(lfp_handle old, bool by_handle)
{
	uint32_t idx = lfp_handle_index(old);
	int err;

	atomic_store(&ct_dying[idx], 1);
	while (atomic_load(&ct_pins[idx]))
		sched_yield();
	err = by_handle ? lfp_free_handle(ct_pool, old)
			: lfp_free(ct_pool, lfp_resolve(ct_pool, old));
	if (err)
		atomic_fetch_add(&ct_bad, 1);
}

static void ct_publish(_Atomic uint64_t *slot)
{
	struct stamped *p = lfp_alloc(ct_pool);
	lfp_handle h;

	if (!p)
		return;
	h = lfp_handle_of(ct_pool, p);
	if (lfp_handle_is_null(h) || lfp_resolve(ct_pool, h) != p)
		atomic_fetch_add(&ct_bad, 1);
	/* Release: pairs with the acquire load of self in ct_check. */
	atomic_store_explicit(&p->self, h.bits, memory_order_release);
	atomic_store(&ct_dying[lfp_handle_index(h)], 0);
	atomic_store(slot, h.bits);
}

static void *ct_thread(void *arg)
{
	uint32_t self = (uint32_t)(uintptr_t)arg;
	uint64_t seed = 0x9e3779b97f4a7c15ull * (self + 1), r;
	lfp_handle seen[CT_SEEN] = { 0 }, mine[CT_SEEN] = { 0 }, h;

	for (int i = 0; i < CT_ROUNDS; i++) {
		r = rng_next(&seed);
		if (r % 4 == 0) { /* replace one of mine */
			_Atomic uint64_t *slot =
				&ct_pub[self * CT_PER + (r >> 8) % CT_PER];
			h.bits = atomic_exchange(slot, 0);
			if (h.bits) {
				ct_retire(h, (r >> 16) & 1);
				mine[i % CT_SEEN] = h;
			}
			ct_publish(slot);
			continue;
		}
		if (r % 4 == 1) { /* a handle I released is stale for good */
			h = mine[(r >> 8) % CT_SEEN];
			if (!lfp_handle_is_null(h)) {
				if (lfp_free_handle(ct_pool, h) != -ESTALE)
					atomic_fetch_add(&ct_bad, 1);
				atomic_fetch_add(&ct_stale_frees, 1);
			}
			continue;
		}
		h.bits = atomic_load(&ct_pub[(r >> 8) % (CT_THREADS * CT_PER)]);
		if (h.bits) {
			ct_check(h, true);
			seen[i % CT_SEEN] = h;
		}
		h = seen[(r >> 24) % CT_SEEN];
		if (!lfp_handle_is_null(h))
			ct_check(h, false);
	}
	return NULL;
}

START_TEST(threads_resolve_each_others_handles)
{
	struct lfpi_census census;
	pthread_t th[CT_THREADS];
	struct lfp_stats st;

	ct_pool = test_pool_flags(sizeof(struct stamped), CT_CAP, test_modes[_i]);
	for (uintptr_t i = 0; i < CT_THREADS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, ct_thread,
						(void *)i), 0);
	for (int i = 0; i < CT_THREADS; i++)
		pthread_join(th[i], NULL);
	ck_assert_uint_eq(atomic_load(&ct_bad), 0);
	ck_assert_uint_gt(atomic_load(&ct_resolved), 0);
	lfp_stats(ct_pool, &st);
	ck_assert_uint_eq(st.rejected_frees, atomic_load(&ct_stale_frees));
	for (int i = 0; i < CT_THREADS * CT_PER; i++) {
		lfp_handle h = { atomic_load(&ct_pub[i]) };

		if (h.bits)
			ck_assert_int_eq(lfp_free_handle(ct_pool, h), 0);
	}
	ck_audit(ct_pool, &census);
	ck_assert_uint_eq(census.live, 0);
	lfp_stats(ct_pool, &st);
	ck_assert_uint_eq(st.allocs, st.frees);
	lfp_destroy(ct_pool);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("handle");
	TCase *tc = tcase_create("handle");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, stale_after_release_and_reuse, 0, TEST_NMODES);
	tcase_add_loop_test(tc, release_by_handle_into_a_cache, 0, TEST_NMODES);
	tcase_add_loop_test(tc, foreign_and_interior_pointers, 0, TEST_NMODES);
	tcase_add_loop_test(tc, zeroed_and_out_of_range_handles, 0, TEST_NMODES);
	tcase_add_loop_test(tc, generation_wraps_past_zero, 0, TEST_NMODES);
	tcase_add_test(tc, inline_release_wraps_to_zero);
	tcase_add_loop_test(tc, forged_handles_never_reach_another_owner, 0, TEST_NMODES);
	tcase_add_loop_test(tc, threads_resolve_each_others_handles, 0, TEST_NMODES);
	tcase_add_loop_test(tc, handles_compare_equal, 0, TEST_NMODES);
	tcase_add_loop_test(tc, resolve_bulk_agrees_with_resolve, 0, TEST_NMODES);
	tcase_add_loop_test(tc, resolve_bulk_stays_inside_the_pool, 0, TEST_NMODES);
	suite_add_tcase(s, tc);
	return test_run(s);
}
