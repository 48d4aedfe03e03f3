/* SPDX-License-Identifier: MIT */
/*
 * Hooks that call back into their own pool: a ctor, on_alloc or on_free
 * that releases and allocates objects of the pool it is called from, and
 * a reclaim callback that releases its victim through the very cache the
 * starving allocation is using. Whatever they do, no slot may be lost or
 * handed out twice, and the counts must still add up.
 */
#include <errno.h>
#include <string.h>

#include "testutil.h"

enum { CAP = 64, VICTIMS = 16 };

/* How allocations and releases are made: the three ways of lfp_alloc. */
enum { VIA_IMPLICIT, VIA_EXPLICIT, VIA_NO_CACHE, VIA_N };

static const char *const via_name[VIA_N] = {
	"the implicit cache", "an explicit cache", "no cache",
};

/* The state the hooks share with the test, through hook_arg. */
struct reenter {
	struct lfp_pool *pool;
	struct lfp_cache *cache; /* the one the test allocates through */
	void *victims[CAP];      /* objects the hooks may release */
	int nvictims;
	void *extra[CAP];        /* objects the hooks allocated */
	int nextra;
	bool armed;
	int depth;               /* hooks do nothing when called from a hook */
	int calls;               /* hook calls that called back */
	int refused;             /* releases by hooks the pool refused */
};

static void *re_alloc(struct reenter *st)
{
	return st->cache ? lfp_cache_alloc(st->cache) : lfp_alloc(st->pool);
}

static int re_free(struct reenter *st, void *obj)
{
	return st->cache ? lfp_cache_free(st->cache, obj)
			 : lfp_free(st->pool, obj);
}

/*
 * What a hook does, in turn: release a victim; allocate an object;
 * release two and allocate one; allocate one and release one.
 */
static void re_call_back(struct reenter *st)
{
	int step = st->calls++ % 4;
	void *p;

	if (step != 1 && st->nvictims &&
	    re_free(st, st->victims[--st->nvictims]))
		st->refused++;
	if (step == 2 && st->nvictims &&
	    re_free(st, st->victims[--st->nvictims]))
		st->refused++;
	if (step != 0 && st->nextra < CAP && (p = re_alloc(st)))
		st->extra[st->nextra++] = p;
	if (step == 3 && st->nvictims &&
	    re_free(st, st->victims[--st->nvictims]))
		st->refused++;
}

static void re_hook(void *obj, void *arg)
{
	struct reenter *st = arg;

	(void)obj;
	if (!st->armed || st->depth)
		return;
	st->depth++;
	re_call_back(st);
	st->depth--;
}

/* Pointers the test holds: every one live, no two the same. */
static void re_expect_distinct(struct lfp_pool *pool, void **objs, int n,
			       const char *what)
{
	for (int i = 0; i < n; i++) {
		ck_assert_msg(lfp_is_live(pool, objs[i]),
			      "%s: object %d (slot %u) is not live", what, i,
			      lfp_index_of(pool, objs[i]));
		for (int j = 0; j < i; j++)
			ck_assert_msg(objs[i] != objs[j],
				      "%s: slot %u was handed out twice", what,
				      lfp_index_of(pool, objs[i]));
	}
}

/* The pool every case uses, with the hooks given in cfg. */
static void re_create(struct lfp_config *cfg, int via, struct reenter *st)
{
	cfg->obj_size = 64;
	cfg->capacity = CAP;
	cfg->cache_size = 8;
	cfg->batch_size = 4;
	cfg->flags = via == VIA_NO_CACHE ? LFP_F_NO_CACHE : 0;
	cfg->hook_arg = st;
	ck_assert_int_eq(lfp_create(cfg, &st->pool), 0);
	if (via == VIA_EXPLICIT)
		ck_assert_ptr_nonnull(st->cache = lfp_cache_create(st->pool));
	for (int i = 0; i < VICTIMS; i++) {
		st->victims[i] = re_alloc(st);
		ck_assert_ptr_nonnull(st->victims[i]);
	}
	st->nvictims = VICTIMS;
}

/*
 * Everything was released: no slot lost (the census), the counts add up,
 * and one thread can take exactly `capacity` objects again.
 */
static void re_expect_whole(struct lfp_pool *pool, const char *what)
{
	struct lfpi_census census;
	struct lfp_stats s;
	char msg[256] = "";
	int n;

	ck_assert_msg(lfpi_audit(pool, &census, msg, sizeof(msg)) == 0,
		      "%s: census after releasing all: %s", what, msg);
	ck_assert_uint_eq(census.live, 0);
	lfp_stats(pool, &s);
	ck_assert_msg(s.free + s.cached + s.live + s.deferred == s.capacity,
		      "%s: free %llu + cached %llu + live %llu + deferred %llu "
		      "!= capacity %llu", what, (unsigned long long)s.free,
		      (unsigned long long)s.cached, (unsigned long long)s.live,
		      (unsigned long long)s.deferred,
		      (unsigned long long)s.capacity);
	for (n = 0; n < CAP + 1 && lfp_alloc(pool); n++)
		;
	ck_assert_msg(n == CAP, "%s: after everything was released, one "
		      "thread could allocate %d objects of %d", what, n, CAP);
	expect_accounted(pool, CAP);
}

/*
 * Victims first (hooks quiet), then armed allocations until the pool is
 * exhausted; then everything back, and the pool whole again.
 */
static void re_run(struct lfp_config *cfg, int via, const char *hook)
{
	struct reenter st = { .nvictims = 0 };
	void *objs[3 * CAP], *p;
	int n = 0, total;
	char what[128];

	snprintf(what, sizeof(what), "%s calling back, through %s", hook,
		 via_name[via]);
	re_create(cfg, via, &st);
	st.armed = true;
	while (n < CAP && (p = re_alloc(&st)))
		objs[n++] = p;
	st.armed = false;
	ck_assert_msg(st.calls > 0, "%s: the hook never called back", what);
	ck_assert_msg(st.refused == 0, "%s: %d releases by the hook refused",
		      what, st.refused);

	total = n;
	for (int i = 0; i < st.nvictims; i++)
		objs[total++] = st.victims[i];
	for (int i = 0; i < st.nextra; i++)
		objs[total++] = st.extra[i];
	re_expect_distinct(st.pool, objs, total, what);
	for (int i = 0; i < total; i++)
		ck_assert_int_eq(re_free(&st, objs[i]), 0);
	lfp_cache_destroy(st.cache);
	re_expect_whole(st.pool, what);
	lfp_destroy(st.pool);
}

START_TEST(ctor_calls_back)
{
	struct lfp_config cfg = { .ctor = re_hook };

	re_run(&cfg, _i, "ctor");
}
END_TEST

START_TEST(on_alloc_calls_back)
{
	struct lfp_config cfg = { .on_alloc = re_hook };

	re_run(&cfg, _i, "on_alloc");
}
END_TEST

/* on_free is called while the test releases: each release of the test
 * may release other objects and allocate. */
START_TEST(on_free_calls_back)
{
	struct lfp_config cfg = { .on_free = re_hook };
	struct reenter st = { .nvictims = 0 };
	void *objs[CAP];
	char what[128];
	int n;

	snprintf(what, sizeof(what), "on_free calling back, through %s",
		 via_name[_i]);
	re_create(&cfg, _i, &st);
	for (n = 0; n < CAP - VICTIMS && (objs[n] = re_alloc(&st)); n++)
		;
	st.armed = true;
	while (n)
		ck_assert_int_eq(re_free(&st, objs[--n]), 0);
	st.armed = false;
	ck_assert_msg(st.calls > 0, "%s: the hook never called back", what);
	ck_assert_msg(st.refused == 0, "%s: %d releases by the hook refused",
		      what, st.refused);
	re_expect_distinct(st.pool, st.extra, st.nextra, what);
	re_expect_distinct(st.pool, st.victims, st.nvictims, what);
	for (int i = 0; i < st.nextra; i++)
		ck_assert_int_eq(re_free(&st, st.extra[i]), 0);
	for (int i = 0; i < st.nvictims; i++)
		ck_assert_int_eq(re_free(&st, st.victims[i]), 0);
	lfp_cache_destroy(st.cache);
	re_expect_whole(st.pool, what);
	lfp_destroy(st.pool);
}
END_TEST

/*
 * The reclaim callback kills the quietest sound: it releases the oldest
 * object through the cache (or the implicit path) that the starving
 * allocation is using, and the allocation then takes that slot.
 */
struct sounds {
	struct reenter st;
	void *playing[CAP];
	int head, n;
};

static int reclaim_oldest(struct lfp_pool *pool, void *arg)
{
	struct sounds *s = arg;

	(void)pool;
	if (!s->n)
		return -1;
	if (re_free(&s->st, s->playing[s->head]))
		s->st.refused++;
	s->head = (s->head + 1) % CAP;
	s->n--;
	return 0;
}

START_TEST(reclaim_through_the_same_cache)
{
	enum { SMALL = 16, ROUNDS = 200 };
	struct sounds s = { .n = 0 };
	struct lfp_config cfg = {
		.obj_size = 64, .capacity = SMALL, .cache_size = 4,
		.batch_size = 2, .exhaust = LFP_EXHAUST_RECLAIM,
		.reclaim = reclaim_oldest, .hook_arg = &s,
		.flags = _i == VIA_NO_CACHE ? LFP_F_NO_CACHE : 0,
	};
	struct lfp_stats st;
	void *p;

	ck_assert_int_eq(lfp_create(&cfg, &s.st.pool), 0);
	if (_i == VIA_EXPLICIT)
		s.st.cache = lfp_cache_create(s.st.pool);
	for (int i = 0; i < ROUNDS; i++) {
		p = re_alloc(&s.st);
		ck_assert_msg(p != NULL,
			      "allocation %d through %s got NULL though "
			      "reclaim released a victim", i, via_name[_i]);
		ck_assert_msg(s.n < SMALL, "allocation %d through %s: %d "
			      "objects live in a pool of %d", i, via_name[_i],
			      s.n + 1, SMALL);
		s.playing[(s.head + s.n++) % CAP] = p;
	}
	ck_assert_int_eq(s.st.refused, 0);
	for (int i = 0; i < s.n; i++)
		s.st.extra[i] = s.playing[(s.head + i) % CAP];
	re_expect_distinct(s.st.pool, s.st.extra, s.n, "reclaim");
	lfp_stats(s.st.pool, &st);
	ck_assert_uint_ge(st.reclaims, ROUNDS - SMALL);
	ck_assert_uint_eq(st.failed_allocs, 0);
	expect_accounted(s.st.pool, (uint64_t)s.n);
	while (s.n)
		reclaim_oldest(s.st.pool, &s);
	lfp_cache_destroy(s.st.cache);
	expect_accounted(s.st.pool, 0);
	lfp_destroy(s.st.pool);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("reenter");
	TCase *tc = tcase_create("reenter");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, ctor_calls_back, 0, VIA_N);
	tcase_add_loop_test(tc, on_alloc_calls_back, 0, VIA_N);
	tcase_add_loop_test(tc, on_free_calls_back, 0, VIA_N);
	tcase_add_loop_test(tc, reclaim_through_the_same_cache, 0, VIA_N);
	suite_add_tcase(s, tc);
	return test_run(s);
}
