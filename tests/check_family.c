/* SPDX-License-Identifier: MIT */
/* Size-class families: routing by size on allocation and by address on
 * release, their errors, exhaustion and spilling, and many threads
 * releasing each other's objects of every size. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "testutil.h"

static const size_t sizes6[] = { 32, 64, 128, 256, 512, 1024 };
static const uint32_t caps6[] = { 256, 256, 128, 128, 64, 64 };

static struct lfp_family *make_family(const char *name, uint32_t flags,
				      uint32_t spill)
{
	struct lfp_family_config cfg = { .sizes = sizes6,
					 .capacities = caps6,
					 .classes = 6,
					 .flags = flags,
					 .spill = spill,
					 .name = name };
	struct lfp_family *fam = NULL;

	ck_assert_int_eq(lfp_family_create(&cfg, &fam), 0);
	ck_assert_ptr_nonnull(fam);
	return fam;
}

START_TEST(sizes_route_to_the_smallest_class_that_fits)
{
	static const size_t ask[] = { 1, 31, 32, 33, 64, 65, 200, 256, 257,
				      512, 513, 1000, 1024 };
	static const int want[] = { 0, 0, 0, 1, 1, 2, 3, 3, 4, 4, 5, 5, 5 };
	struct lfp_family *fam = make_family("jobs", test_modes[_i], 0);
	void *objs[13];
	struct lfp_family_stats st;

	ck_assert_uint_eq(lfp_family_classes(fam), 6);
	for (uint32_t i = 0; i < 6; i++) {
		char name[16];

		ck_assert_uint_eq(lfp_family_class_size(fam, i), sizes6[i]);
		ck_assert_ptr_nonnull(lfp_family_pool(fam, i));
		snprintf(name, sizeof(name), "jobs/%zu", sizes6[i]);
		ck_assert_str_eq(lfp_name(lfp_family_pool(fam, i)), name);
	}
	for (int k = 0; k < 13; k++) {
		struct lfp_pool *pool;

		ck_assert_int_eq(lfp_family_class(fam, ask[k]), want[k]);
		objs[k] = lfp_family_alloc(fam, ask[k]);
		ck_assert_ptr_nonnull(objs[k]);
		memset(objs[k], k, ask[k]); /* the whole size is usable */
		ck_assert_int_eq(lfp_family_class_of(fam, objs[k]), want[k]);
		pool = lfp_family_pool(fam, (uint32_t)want[k]);
		ck_assert(lfp_is_live(pool, objs[k]));
	}
	expect_family_accounted(fam, 13);
	for (int k = 0; k < 13; k++)
		ck_assert_int_eq(lfp_family_free(fam, objs[k]), 0);
	expect_family_accounted(fam, 0);
	lfp_family_stats(fam, &st);
	ck_assert_uint_eq(st.total.allocs, 13);
	ck_assert_uint_eq(st.total.frees, 13);
	ck_assert_uint_eq(st.total.live, 0);
	ck_assert_uint_eq(st.total.capacity, 256 + 256 + 128 + 128 + 64 + 64);
	ck_assert_uint_eq(st.total.rejected_frees, 0);
	ck_assert_uint_eq(st.spilled + st.failed_allocs + st.bad_sizes +
				  st.foreign_frees,
			  0);
	lfp_family_destroy(fam);
}
END_TEST

/*
 * Every size from 1 past the largest class goes to the smallest class
 * that fits, with classes that are not multiples of 8, several inside one
 * 8-byte step, next to each other, and beyond the size map's reach.
 */
START_TEST(every_size_routes_like_a_search)
{
	static const size_t sizes[] = { 1, 12, 57, 60, 61, 64, 100, 4095,
					4100, 5000 };
	static const uint32_t caps[] = { 8, 8, 8, 8, 8, 8, 8, 8, 8, 8 };
	struct lfp_family_config cfg = { .classes = 10, .sizes = sizes,
					 .capacities = caps };
	struct lfp_family *fam;

	ck_assert_int_eq(lfp_family_create(&cfg, &fam), 0);
	for (size_t s = 1; s <= 5001; s++) {
		int want = -ERANGE;

		for (int c = 9; c >= 0; c--)
			if (sizes[c] >= s)
				want = c;
		ck_assert_msg(lfp_family_class(fam, s) == want,
			      "size %zu: class %d, want %d", s,
			      lfp_family_class(fam, s), want);
	}
	lfp_family_destroy(fam);
}
END_TEST

/* A class's pool is a pool: objects cross between the family's calls and
 * the pool's, and handles work per class. */
START_TEST(classes_are_whole_pools)
{
	struct lfp_family *fam = make_family(NULL, 0, 0);
	struct lfp_pool *p128 = lfp_family_pool(fam, 2);
	struct lfp_cache *cache = lfp_cache_create(p128);
	void *a = lfp_family_alloc(fam, 100), *b;
	lfp_handle h;

	ck_assert_str_eq(lfp_name(p128), "128");
	ck_assert_ptr_nonnull(cache);
	/* Family allocation, pool release by handle. */
	h = lfp_handle_of(p128, a);
	ck_assert(!lfp_handle_is_null(h));
	ck_assert_ptr_eq(lfp_resolve(p128, h), a);
	ck_assert_int_eq(lfp_cache_free_handle(cache, h), 0);
	ck_assert_ptr_null(lfp_resolve(p128, h));
	/* Pool allocation through an explicit cache, family release. */
	b = lfp_cache_alloc(cache);
	ck_assert_int_eq(lfp_family_class_of(fam, b), 2);
	ck_assert_int_eq(lfp_family_free(fam, b), 0);
	ck_assert_int_eq(lfp_family_free(fam, b), -EALREADY);
	lfp_cache_destroy(cache);
	expect_family_accounted(fam, 0);
	lfp_family_destroy(fam);
}
END_TEST

/* lfp_family_create refuses c with err, lfp_family_config_fault naming
 * field. */
static void expect_fault(const struct lfp_family_config *c, int err,
			 const char *field)
{
	struct lfp_family *fam = (struct lfp_family *)&fam; /* a canary */
	const char *fault = lfp_family_config_fault(c);

	ck_assert_int_eq(lfp_family_create(c, &fam), err);
	ck_assert_ptr_eq(fam, (struct lfp_family *)&fam);
	ck_assert_msg(fault && strcmp(fault, field) == 0,
		      "lfp_family_config_fault names %s, not %s",
		      fault ? fault : "NULL", field);
}

START_TEST(bad_configs_are_refused)
{
	static const size_t same[] = { 32, 64, 64 }, down[] = { 64, 32, 128 };
	static const size_t zero[] = { 0, 32, 64 };
	static const uint32_t caps[] = { 8, 8, 8 }, small_max[] = { 8, 4, 8 };
	static const uint32_t zero_caps[] = { 8, 0, 8 };
	static const size_t huge[] = { 32, 64, SIZE_MAX / 2 };
	static const size_t huge_aligned[] = { 32, 64, SIZE_MAX / 2 + 1 };
	static const uint32_t one_cap[] = { 1, 1, 1 };
	static size_t many[LFP_FAMILY_MAX_CLASSES + 1];
	static uint32_t many_caps[LFP_FAMILY_MAX_CLASSES + 1];
	struct lfp_family *fam = (struct lfp_family *)&fam; /* a canary */
	struct lfp_family *const canary = fam;
	struct lfp_family_config cfg = { .sizes = sizes6, .capacities = caps,
					 .classes = 3 };
	struct lfp_family_config c;

	for (uint32_t i = 0; i <= LFP_FAMILY_MAX_CLASSES; i++)
		many[i] = 16 * (i + 1), many_caps[i] = 2;
	ck_assert_int_eq(lfp_family_create(NULL, &fam), -EINVAL);
	ck_assert_int_eq(lfp_family_create(&cfg, NULL), -EINVAL);
	ck_assert_ptr_null(lfp_family_config_fault(NULL));
	ck_assert_ptr_null(lfp_family_config_fault(&cfg));
	/* Each refusal names its field, as lfp_family_config names it. */
	c = cfg, c.classes = 0;
	expect_fault(&c, -EINVAL, "classes");
	c = cfg, c.sizes = NULL;
	expect_fault(&c, -EINVAL, "sizes");
	c = cfg, c.capacities = NULL;
	expect_fault(&c, -EINVAL, "capacities");
	c = cfg, c.sizes = zero;
	expect_fault(&c, -EINVAL, "sizes");
	c = cfg, c.sizes = same;
	expect_fault(&c, -EINVAL, "sizes");
	c = cfg, c.sizes = down;
	expect_fault(&c, -EINVAL, "sizes");
	c = cfg, c.sizes = many, c.capacities = many_caps;
	c.classes = LFP_FAMILY_MAX_CLASSES + 1;
	expect_fault(&c, -E2BIG, "classes");
	c = cfg, c.exhaust = LFP_EXHAUST_GROW; /* no max_capacities */
	expect_fault(&c, -EINVAL, "max_capacities");
	/* Refused by lfp_create for the second class, after the first was
	 * made: that one must go again. */
	c.max_capacities = small_max;
	expect_fault(&c, -EINVAL, "max_capacities");
	c = cfg, c.flags = 1u << 30;
	expect_fault(&c, -EINVAL, "flags");
	c = cfg, c.align = 3;
	expect_fault(&c, -EINVAL, "align");
	/* A class's own fields, by the family's names for them. */
	c = cfg, c.capacities = zero_caps;
	expect_fault(&c, -EINVAL, "capacities");
	c = cfg, c.sizes = huge;
	expect_fault(&c, -EOVERFLOW, "sizes");
	/* A class that fits but cannot be mapped aligned: as lfp_create and
	 * lfp_config_fault say of that class (check_slab). */
	c = cfg, c.sizes = huge_aligned, c.capacities = one_cap;
	c.align = SIZE_MAX / 4 + 1;
	expect_fault(&c, -EOVERFLOW, "sizes");
	c = cfg, c.cache_size = 4, c.batch_size = 5;
	expect_fault(&c, -EINVAL, "batch_size");
	c = cfg, c.exhaust = LFP_EXHAUST_RECLAIM;
	expect_fault(&c, -EINVAL, "reclaim");
	/* Several at fault: the family's own fields first. */
	c = cfg, c.sizes = down, c.align = 3;
	ck_assert_str_eq(lfp_family_config_fault(&c), "sizes");
	ck_assert_ptr_eq(fam, canary);
	/* The largest family there may be is fine. */
	c = cfg, c.sizes = many, c.capacities = many_caps;
	c.classes = LFP_FAMILY_MAX_CLASSES;
	ck_assert_int_eq(lfp_family_create(&c, &fam), 0);
	ck_assert_uint_eq(lfp_family_classes(fam), LFP_FAMILY_MAX_CLASSES);
	ck_assert_int_eq(lfp_family_class(fam, 16 * LFP_FAMILY_MAX_CLASSES),
			 LFP_FAMILY_MAX_CLASSES - 1);
	for (uint32_t i = 0; i < LFP_FAMILY_MAX_CLASSES; i++) {
		void *p = lfp_family_alloc(fam, many[i]);

		ck_assert_int_eq(lfp_family_class_of(fam, p), (int)i);
		ck_assert_int_eq(lfp_family_free(fam, p), 0);
	}
	lfp_family_destroy(fam);
}
END_TEST

START_TEST(bad_sizes_and_null_families)
{
	struct lfp_family *fam = make_family("x", test_modes[_i], 5);
	struct lfp_family_stats st;

	ck_assert_ptr_null(lfp_family_alloc(NULL, 32));
	ck_assert_ptr_null(lfp_family_alloc(fam, 0));
	ck_assert_ptr_null(lfp_family_alloc(fam, 1025));
	ck_assert_ptr_null(lfp_family_alloc(fam, SIZE_MAX));
	ck_assert_int_eq(lfp_family_class(NULL, 32), -EINVAL);
	ck_assert_int_eq(lfp_family_class(fam, 0), -EINVAL);
	ck_assert_int_eq(lfp_family_class(fam, 1025), -ERANGE);
	ck_assert_int_eq(lfp_family_class(fam, SIZE_MAX), -ERANGE);
	ck_assert_int_eq(lfp_family_class_of(NULL, &st), -EINVAL);
	ck_assert_int_eq(lfp_family_class_of(fam, NULL), -EINVAL);
	ck_assert_int_eq(lfp_family_free(NULL, &st), -EINVAL);
	ck_assert_int_eq(lfp_family_free(fam, NULL), -EINVAL);
	ck_assert_uint_eq(lfp_family_classes(NULL), 0);
	ck_assert_ptr_null(lfp_family_pool(NULL, 0));
	ck_assert_ptr_null(lfp_family_pool(fam, 6));
	ck_assert_uint_eq(lfp_family_class_size(NULL, 0), 0);
	ck_assert_uint_eq(lfp_family_class_size(fam, 6), 0);
	memset(&st, 0xa5, sizeof(st));
	lfp_family_stats(NULL, &st);
	ck_assert_uint_eq(st.spilled, 0xa5a5a5a5a5a5a5a5u); /* untouched */
	lfp_family_stats(fam, NULL);
	lfp_family_destroy(NULL);

	lfp_family_stats(fam, &st);
	ck_assert_uint_eq(st.bad_sizes, 3); /* the NULL family counts none */
	ck_assert_uint_eq(st.total.failed_allocs, 0); /* not exhaustion */
	ck_assert_uint_eq(st.failed_allocs, 0);
	ck_assert_uint_eq(st.total.rejected_frees, 0);
	expect_family_accounted(fam, 0);
	lfp_family_destroy(fam);
}
END_TEST

START_TEST(bad_pointers_are_refused)
{
	struct lfp_family *fam = make_family("a", test_modes[_i], 0);
	struct lfp_family *other = make_family("b", test_modes[_i], 0);
	struct lfp_pool *lone = test_pool(64, 8);
	char *mine = lfp_family_alloc(fam, 64);
	char *theirs = lfp_family_alloc(other, 64);
	char *pooled = lfp_alloc(lone);
	char local[64];
	struct lfp_family_stats st;
	struct lfp_stats ps;

	ck_assert_int_eq(lfp_family_free(fam, theirs), -EFAULT);
	ck_assert_int_eq(lfp_family_free(fam, pooled), -EFAULT);
	ck_assert_int_eq(lfp_family_free(fam, local), -EFAULT);
	ck_assert_int_eq(lfp_family_free(fam, (void *)(uintptr_t)1), -EFAULT);
	ck_assert_int_eq(lfp_family_free(fam, (void *)UINTPTR_MAX), -EFAULT);
	ck_assert_int_eq(lfp_family_class_of(fam, theirs), -EFAULT);
	ck_assert_int_eq(lfp_family_free(fam, mine + 1), -EINVAL);
	ck_assert_int_eq(lfp_family_free(fam, mine + 63), -EINVAL);
	/* Nothing above touched an object: all three are still live. */
	ck_assert(lfp_is_live(lfp_family_pool(fam, 1), mine));
	ck_assert(lfp_is_live(lfp_family_pool(other, 1), theirs));
	ck_assert(lfp_is_live(lone, pooled));
	expect_family_accounted(fam, 1);
	expect_family_accounted(other, 1);
	ck_assert_int_eq(lfp_family_free(fam, mine), 0);
	ck_assert_int_eq(lfp_family_free(fam, mine), -EALREADY);
	/* A free slot never handed out is no object either. */
	ck_assert_int_eq(lfp_family_free(fam, lfp_at(lfp_family_pool(fam, 5),
						       63)),
			 -EALREADY);
	lfp_family_stats(fam, &st);
	ck_assert_uint_eq(st.foreign_frees, 5);
	/* 5 foreign, 2 interior, 2 of free slots. */
	ck_assert_uint_eq(st.total.rejected_frees, 9);
	ck_assert_uint_eq(st.total.frees, 1);
	lfp_stats(lfp_family_pool(fam, 1), &ps);
	ck_assert_uint_eq(ps.rejected_frees, 3);
	lfp_family_stats(other, &st);
	ck_assert_uint_eq(st.total.rejected_frees, 0);
	expect_family_accounted(fam, 0);
	ck_assert_int_eq(lfp_family_free(other, theirs), 0);
	ck_assert_int_eq(lfp_free(lone, pooled), 0);
	expect_family_accounted(other, 0);
	lfp_destroy(lone);
	lfp_family_destroy(other);
	lfp_family_destroy(fam);
}
END_TEST

enum { SMALL = 4 };

static struct lfp_family *small_family(uint32_t flags, uint32_t spill)
{
	static const size_t sz[] = { 32, 64, 128, 256 };
	static const uint32_t cap[] = { SMALL, SMALL, SMALL, SMALL };
	struct lfp_family_config cfg = { .sizes = sz, .capacities = cap,
					 .classes = 4, .flags = flags,
					 .spill = spill };
	struct lfp_family *fam = NULL;

	ck_assert_int_eq(lfp_family_create(&cfg, &fam), 0);
	return fam;
}

/* One class running dry leaves the others alone; without spill its
 * allocations fail. */
START_TEST(one_class_exhausted)
{
	struct lfp_family *fam = small_family(test_modes[_i], 0);
	void *held[SMALL], *p;
	struct lfp_family_stats st;
	struct lfp_stats ps;

	for (int k = 0; k < SMALL; k++) {
		held[k] = lfp_family_alloc(fam, 64);
		ck_assert_ptr_nonnull(held[k]);
	}
	ck_assert_ptr_null(lfp_family_alloc(fam, 40));
	p = lfp_family_alloc(fam, 32); /* a neighbour still serves */
	ck_assert_int_eq(lfp_family_class_of(fam, p), 0);
	ck_assert_int_eq(lfp_family_free(fam, p), 0);
	p = lfp_family_alloc(fam, 65);
	ck_assert_int_eq(lfp_family_class_of(fam, p), 2);
	ck_assert_int_eq(lfp_family_free(fam, p), 0);
	lfp_family_stats(fam, &st);
	ck_assert_uint_eq(st.failed_allocs, 1);
	ck_assert_uint_eq(st.total.failed_allocs, 1);
	ck_assert_uint_eq(st.spilled, 0);
	lfp_stats(lfp_family_pool(fam, 1), &ps);
	ck_assert_uint_eq(ps.failed_allocs, 1);
	ck_assert_uint_eq(ps.live, SMALL);
	expect_family_accounted(fam, SMALL);
	/* Released, the class serves again. */
	ck_assert_int_eq(lfp_family_free(fam, held[0]), 0);
	held[0] = lfp_family_alloc(fam, 64);
	ck_assert_int_eq(lfp_family_class_of(fam, held[0]), 1);
	for (int k = 0; k < SMALL; k++)
		ck_assert_int_eq(lfp_family_free(fam, held[k]), 0);
	expect_family_accounted(fam, 0);
	lfp_family_destroy(fam);
}
END_TEST

/* With spill = 1 an exhausted class borrows from the next one up, and no
 * further; the largest class has nowhere to spill to. */
START_TEST(spill_to_the_next_class)
{
	struct lfp_family *fam = small_family(test_modes[_i], 1);
	void *held[4][SMALL], *p;
	struct lfp_family_stats st;

	for (int k = 0; k < SMALL; k++)
		held[0][k] = lfp_family_alloc(fam, 32);
	for (int k = 0; k < SMALL; k++) {
		held[1][k] = lfp_family_alloc(fam, 32); /* spills to 64 */
		ck_assert_int_eq(lfp_family_class_of(fam, held[1][k]), 1);
	}
	ck_assert_ptr_null(lfp_family_alloc(fam, 32)); /* 128 is too far */
	for (int k = 0; k < SMALL; k++)
		held[2][k] = lfp_family_alloc(fam, 128);
	for (int k = 0; k < SMALL; k++)
		held[3][k] = lfp_family_alloc(fam, 129);
	ck_assert_ptr_null(lfp_family_alloc(fam, 256)); /* the largest */
	ck_assert_ptr_null(lfp_family_alloc(fam, 100)); /* 128 and 256 */
	lfp_family_stats(fam, &st);
	ck_assert_uint_eq(st.spilled, SMALL);
	ck_assert_uint_eq(st.failed_allocs, 3);
	ck_assert_uint_eq(st.total.allocs, 4 * SMALL);
	/* Each allocation failed in every class it tried. */
	ck_assert_uint_eq(st.total.failed_allocs, SMALL + 2 + 1 + 2);
	expect_family_accounted(fam, 4 * SMALL);
	for (int c = 0; c < 4; c++)
		for (int k = 0; k < SMALL; k++)
			ck_assert_int_eq(lfp_family_free(fam, held[c][k]), 0);
	p = lfp_family_alloc(fam, 32); /* back home */
	ck_assert_int_eq(lfp_family_class_of(fam, p), 0);
	ck_assert_int_eq(lfp_family_free(fam, p), 0);
	expect_family_accounted(fam, 0);
	lfp_family_destroy(fam);
}
END_TEST

static _Atomic uint32_t hook_allocs;

static void count_alloc(void *obj, void *arg)
{
	(void)obj;
	ck_assert_ptr_eq(arg, &hook_allocs);
	atomic_fetch_add(&hook_allocs, 1);
}

/* The shared fields reach every class: growth and hooks. */
START_TEST(growable_classes)
{
	static const size_t sz[] = { 48, 96 };
	static const uint32_t cap[] = { 2, 2 }, max[] = { 64, 8 };
	struct lfp_family_config cfg = { .sizes = sz, .capacities = cap,
					 .max_capacities = max, .classes = 2,
					 .exhaust = LFP_EXHAUST_GROW,
					 .on_alloc = count_alloc,
					 .hook_arg = &hook_allocs,
					 .name = "grow" };
	struct lfp_family *fam = NULL;
	struct lfp_family_stats st;
	void *held[8];
	char *beyond;

	atomic_store(&hook_allocs, 0);
	ck_assert_int_eq(lfp_family_create(&cfg, &fam), 0);
	for (int k = 0; k < 8; k++) {
		held[k] = lfp_family_alloc(fam, 96);
		ck_assert_int_eq(lfp_family_class_of(fam, held[k]), 1);
	}
	ck_assert_ptr_null(lfp_family_alloc(fam, 96));
	lfp_family_stats(fam, &st);
	ck_assert_uint_ge(st.total.grown, 2);
	ck_assert_uint_eq(st.total.max_capacity, 64 + 8);
	ck_assert_uint_eq(atomic_load(&hook_allocs), 8);
	/* Reserved for class 0's growth, not grown into: no object yet,
	 * and the family (like lfp_owns) says it is no class's. */
	beyond = lfp_at(lfp_family_pool(fam, 0), 0);
	beyond += 10 * lfp_family_pool(fam, 0)->stride;
	ck_assert_int_eq(lfp_family_class_of(fam, beyond), -EFAULT);
	ck_assert_int_eq(lfp_family_free(fam, beyond), -EFAULT);
	for (int k = 0; k < 8; k++)
		ck_assert_int_eq(lfp_family_free(fam, held[k]), 0);
	expect_family_accounted(fam, 0);
	lfp_family_destroy(fam);
}
END_TEST

START_TEST(names_are_cut_to_fit)
{
	/* 25 bytes, a 2-byte character, 2 more: 29. "/1024" leaves 26
	 * bytes of it, which would split the character; "/32" leaves 28. */
	char name[30], want[LFP_NAME_MAX + 1];
	struct lfp_family *fam;

	memset(name, 'a', 25);
	memcpy(name + 25, "\xc3\xa9zz", 5);
	fam = make_family(name, 0, 0);
	memcpy(want, name, 25);
	strcpy(want + 25, "/1024");
	ck_assert_str_eq(lfp_name(lfp_family_pool(fam, 5)), want);
	memcpy(want, name, 28);
	strcpy(want + 28, "/32");
	ck_assert_str_eq(lfp_name(lfp_family_pool(fam, 0)), want);
	lfp_family_destroy(fam);
}
END_TEST

/*
 * Threads allocate random sizes and pass objects round a ring; whoever
 * receives an object releases it. An owner word per slot of each class
 * catches an object handed out twice, a stamp in the object catches one
 * routed to a class too small for it (the write would land in the next
 * slot), and at the end every class's books must balance.
 */
enum { THREADS = 4, BOX = 64, MIXCAP = 1024 };

static struct lfp_family *shared;
static _Atomic uint32_t owner[6][MIXCAP];
static _Atomic uint64_t violations;
static struct mailbox {
	pthread_mutex_t lock;
	uint32_t n;
	void *items[BOX];
	size_t lens[BOX];
} box[THREADS];

static void stamp(unsigned char *p, size_t len, unsigned char v)
{
	p[0] = v;
	p[len - 1] = v;
}

static _Atomic uint32_t *owner_of(void *obj)
{
	int c = lfp_family_class_of(shared, obj);
	uint32_t idx;

	if (c < 0)
		return NULL;
	idx = lfp_index_of(lfp_family_pool(shared, (uint32_t)c), obj);
	return idx < MIXCAP ? &owner[c][idx] : NULL;
}

static void release(void *obj, size_t len)
{
	_Atomic uint32_t *o = owner_of(obj);
	unsigned char *p = obj;

	if (!o || p[0] != p[len - 1] ||
	    atomic_exchange(o, 0) == 0)
		atomic_fetch_add(&violations, 1);
	if (lfp_family_free(shared, obj) != 0)
		atomic_fetch_add(&violations, 1);
}

static void receive_all(int self)
{
	struct mailbox *mb = &box[self];

	pthread_mutex_lock(&mb->lock);
	while (mb->n) {
		mb->n--;
		release(mb->items[mb->n], mb->lens[mb->n]);
	}
	pthread_mutex_unlock(&mb->lock);
}

static bool send(int to, void *obj, size_t len)
{
	struct mailbox *mb = &box[to];
	bool sent = false;

	pthread_mutex_lock(&mb->lock);
	if (mb->n < BOX) {
		mb->items[mb->n] = obj;
		mb->lens[mb->n++] = len;
		sent = true;
	}
	pthread_mutex_unlock(&mb->lock);
	return sent;
}

static void *mixer(void *arg)
{
	int self = (int)(intptr_t)arg;
	uint64_t x = 0x9e3779b97f4a7c15u * (uint64_t)(self + 1);
	int rounds = under_sanitizer() ? 4000 : 40000;

	for (int r = 0; r < rounds; r++) {
		size_t len;
		void *obj;
		uint32_t zero = 0;
		_Atomic uint32_t *o;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		len = 1 + (size_t)(x % 1024);
		obj = lfp_family_alloc(shared, len);
		receive_all(self);
		if (!obj) {
			atomic_fetch_add(&violations, 1); /* never full */
			continue;
		}
		o = owner_of(obj);
		if (!o || !atomic_compare_exchange_strong(o, &zero,
							  (uint32_t)self + 1))
			atomic_fetch_add(&violations, 1);
		stamp(obj, len, (unsigned char)r);
		if (!send((self + 1) % THREADS, obj, len))
			release(obj, len);
	}
	return NULL;
}

START_TEST(threads_mix_sizes_and_release_across)
{
	static const uint32_t caps[6] = { MIXCAP, MIXCAP, MIXCAP, MIXCAP,
					  MIXCAP, MIXCAP };
	struct lfp_family_config cfg = { .sizes = sizes6, .capacities = caps,
					 .classes = 6,
					 .flags = test_modes[_i],
					 .name = "mix" };
	pthread_t th[THREADS];
	struct lfp_family_stats st;

	ck_assert_int_eq(lfp_family_create(&cfg, &shared), 0);
	memset(owner, 0, sizeof(owner));
	atomic_store(&violations, 0);
	for (int i = 0; i < THREADS; i++) {
		pthread_mutex_init(&box[i].lock, NULL);
		box[i].n = 0;
	}
	for (int i = 0; i < THREADS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, mixer,
						(void *)(intptr_t)i), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < THREADS; i++)
		receive_all(i);
	ck_assert_uint_eq(atomic_load(&violations), 0);
	expect_family_accounted(shared, 0);
	for (uint32_t c = 0; c < 6; c++) {
		struct lfp_stats s;

		lfp_stats(lfp_family_pool(shared, c), &s);
		ck_assert_uint_eq(s.live, 0);
		ck_assert_uint_eq(s.rejected_frees, 0);
		ck_assert_uint_eq(s.failed_allocs, 0);
		ck_assert_uint_eq(s.allocs, s.frees);
		ck_assert_uint_gt(s.allocs, 0); /* every size was drawn */
	}
	lfp_family_stats(shared, &st);
	ck_assert_uint_eq(st.total.allocs,
			  (uint64_t)THREADS * (under_sanitizer() ? 4000 : 40000));
	ck_assert_uint_eq(st.total.frees, st.total.allocs);
	ck_assert_uint_eq(st.failed_allocs + st.spilled + st.bad_sizes +
				  st.foreign_frees + st.total.rejected_frees,
			  0);
	for (int i = 0; i < THREADS; i++)
		pthread_mutex_destroy(&box[i].lock);
	lfp_family_destroy(shared);
}
END_TEST

/* ---- the thread's class array (lfpi_cache_cls) ------------------------- */

/* Whether the calling thread's entry for class c names its cache of
 * fam's class c: the inline paths then need no table. */
static bool cls_entry_of(struct lfp_family *fam, uint32_t c)
{
	return lfpi_cache_is_of(lfpi_cache_cls[c], lfp_family_pool(fam, c));
}

static void cls_use(struct lfp_family *fam, size_t size)
{
	void *o = lfp_family_alloc(fam, size);

	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(lfp_family_class_of(fam, o), lfp_family_class(fam, size));
	ck_assert_int_eq(lfp_family_free(fam, o), 0);
}

/* The first call on a class goes out of line and makes the entry; after
 * it, both calls find the class's cache through it, for every class. */
START_TEST(class_entries_made_on_first_use)
{
	struct lfp_family *fam = make_family("cls", 0, 0);

	for (uint32_t c = 0; c < 6; c++) {
		cls_use(fam, sizes6[c]);
		ck_assert(cls_entry_of(fam, c));
		/* and it is the cache the pool's own path finds */
		ck_assert_ptr_eq(lfpi_cache_cls[c],
				 lfpi_cache_entry(lfp_family_pool(fam, c)));
	}
	expect_family_accounted(fam, 0);
	lfp_family_destroy(fam);
}
END_TEST

/*
 * One thread alternating two families of the same classes: entry c names
 * the cache of one family's class c at a time, and the other family's
 * calls must never take it for theirs (its pool word tells them apart).
 */
START_TEST(two_families_alternated)
{
	struct lfp_family *f[2] = { make_family("a", 0, 0),
				    make_family("b", 0, 0) };
	void *held[2][6][4];

	for (int r = 0; r < 100; r++) {
		for (int k = 0; k < 4; k++)
			for (uint32_t c = 0; c < 6; c++)
				for (int i = 0; i < 2; i++) {
					void *o = lfp_family_alloc(f[i], sizes6[c]);

					ck_assert_ptr_nonnull(o);
					ck_assert(lfp_owns(lfp_family_pool(f[i], c), o));
					held[i][c][k] = o;
				}
		expect_family_accounted(f[0], 24);
		expect_family_accounted(f[1], 24);
		for (int k = 0; k < 4; k++)
			for (uint32_t c = 0; c < 6; c++)
				for (int i = 1; i >= 0; i--)
					ck_assert_int_eq(lfp_family_free(f[i], held[i][c][k]), 0);
		expect_family_accounted(f[0], 0);
		expect_family_accounted(f[1], 0);
	}
	lfp_family_destroy(f[0]);
	lfp_family_destroy(f[1]);
}
END_TEST

/*
 * A destroyed family's classes leave orphan caches that the thread's
 * next out-of-line call unmaps: their entries must go first, or the next
 * family's inline path would read a cache no longer mapped. The next
 * family often lands at the same address with the same pool numbers.
 */
START_TEST(orphan_class_entry_dropped)
{
	for (int r = 0; r < 50; r++) {
		struct lfp_family *fam = make_family("old", 0, 0);
		/* x's cache is larger than a class's (two pages, not one),
		 * so the one made for it is not mapped where the orphan
		 * was. */
		struct lfp_pool *x;
		struct lfp_cache *old;
		void *o;

		cls_use(fam, 32);
		ck_assert(cls_entry_of(fam, 0));
		old = lfpi_cache_cls[0];
		lfp_family_destroy(fam);
		x = test_pool(16, 65536);
		o = lfp_alloc(x); /* out of line: unmaps the orphans */
		ck_assert_ptr_nonnull(o);
		ck_assert_int_eq(lfp_free(x, o), 0);
		ck_assert_ptr_ne(lfpi_cache_cls[0], old);
		fam = make_family("new", 0, 0);
		cls_use(fam, 32); /* reads entry 0 inline first */
		ck_assert(cls_entry_of(fam, 0));
		expect_family_accounted(fam, 0);
		lfp_family_destroy(fam);
		expect_accounted(x, 0);
		lfp_destroy(x);
	}
}
END_TEST

/*
 * A thread's class array is unmapped at its exit, and a key destructor
 * that runs after the library's and calls the family (the shared path
 * then) makes no new one, which nothing would unmap.
 */
static struct lfp_family *exit_fam;
static pthread_key_t exit_key;
static struct lfp_cache **exit_array, **exit_nil, **exit_late;
static _Atomic int exit_late_ok;

static void exit_late_use(void *arg)
{
	void *o = lfp_family_alloc(exit_fam, 64);

	(void)arg;
	exit_late = lfpi_cache_cls;
	if (o && lfp_family_free(exit_fam, o) == 0 && lfpi_cache_cls == exit_late)
		atomic_store(&exit_late_ok, 1);
}

static void *exit_user(void *arg)
{
	(void)arg;
	exit_nil = lfpi_cache_cls;
	cls_use(exit_fam, 64);
	exit_array = lfpi_cache_cls;
	/* made after the library's key: glibc runs it after */
	pthread_setspecific(exit_key, &exit_key);
	return NULL;
}

START_TEST(thread_exit_unmaps_the_class_array)
{
	long page = sysconf(_SC_PAGESIZE);
	pthread_t th;

	exit_fam = make_family("exit", 0, 0);
	ck_assert_int_eq(pthread_key_create(&exit_key, exit_late_use), 0);
	for (int r = 0; r < 20; r++) {
		atomic_store(&exit_late_ok, 0);
		ck_assert_int_eq(pthread_create(&th, NULL, exit_user, NULL), 0);
		ck_assert_int_eq(pthread_join(th, NULL), 0);
		ck_assert_ptr_ne(exit_array, exit_nil);
		ck_assert(atomic_load(&exit_late_ok));
		ck_assert_ptr_eq(exit_late, exit_nil);
		/* gone: its page no longer mapped */
		ck_assert_uint_eq(test_mapped_bytes(
					  (void *)((uintptr_t)exit_array &
						   ~(uintptr_t)(page - 1)),
					  (size_t)page),
				  0);
	}
	expect_family_accounted(exit_fam, 0);
	pthread_key_delete(exit_key);
	lfp_family_destroy(exit_fam);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("family");
	TCase *tc = tcase_create("family");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, sizes_route_to_the_smallest_class_that_fits,
			    0, TEST_NMODES);
	tcase_add_test(tc, every_size_routes_like_a_search);
	tcase_add_test(tc, classes_are_whole_pools);
	tcase_add_test(tc, bad_configs_are_refused);
	tcase_add_loop_test(tc, bad_sizes_and_null_families, 0, TEST_NMODES);
	tcase_add_loop_test(tc, bad_pointers_are_refused, 0, TEST_NMODES);
	tcase_add_loop_test(tc, one_class_exhausted, 0, TEST_NMODES);
	tcase_add_loop_test(tc, spill_to_the_next_class, 0, TEST_NMODES);
	tcase_add_test(tc, growable_classes);
	tcase_add_test(tc, names_are_cut_to_fit);
	tcase_add_loop_test(tc, threads_mix_sizes_and_release_across, 0,
			    TEST_NMODES);
	suite_add_tcase(s, tc);
	tc = tcase_create("class array");
	tcase_add_test(tc, class_entries_made_on_first_use);
	tcase_add_test(tc, two_families_alternated);
	tcase_add_test(tc, orphan_class_entry_dropped);
	tcase_add_test(tc, thread_exit_unmaps_the_class_array);
	suite_add_tcase(s, tc);
	return test_run(s);
}
