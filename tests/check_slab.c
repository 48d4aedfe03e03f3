/* Sizing, alignment, bad configurations, index <-> pointer, caller memory. */
#include <errno.h>
#include <stdalign.h>
#include <string.h>

#include "testutil.h"

static int try_create(struct lfp_config cfg)
{
	struct lfp_pool *sentinel = (struct lfp_pool *)&cfg, *pool = sentinel;
	int err = lfp_create(&cfg, &pool);

	if (err) /* *out must be left alone on error */
		ck_assert_ptr_eq(pool, sentinel);
	else
		lfp_destroy(pool);
	return err;
}

START_TEST(rejects_bad_configs)
{
	struct lfp_config ok = { .obj_size = 16, .capacity = 8 };
	struct lfp_config c;
	struct lfp_pool *pool;

	ck_assert_int_eq(lfp_create(NULL, &pool), -EINVAL);
	ck_assert_int_eq(lfp_create(&ok, NULL), -EINVAL);
	c = ok, c.obj_size = 0;
	ck_assert_int_eq(try_create(c), -EINVAL);
	c = ok, c.capacity = 0;
	ck_assert_int_eq(try_create(c), -EINVAL);
	for (size_t a = 3; a < 4096; a += 7)
		if (a & (a - 1)) {
			c = ok, c.align = a;
			ck_assert_int_eq(try_create(c), -EINVAL);
		}
	c = ok, c.capacity = LFP_MAX_CAPACITY + 1;
	ck_assert_int_eq(try_create(c), -EOVERFLOW);
	c = ok, c.obj_size = SIZE_MAX; /* rounding up to align overflows */
	ck_assert_int_eq(try_create(c), -EOVERFLOW);
	c = ok, c.obj_size = SIZE_MAX / 4, c.capacity = 8; /* size x capacity */
	ck_assert_int_eq(try_create(c), -EOVERFLOW);
	c = ok, c.align = (size_t)1 << 62, c.capacity = 4;
	ck_assert_int_eq(try_create(c), -EOVERFLOW);
	c = ok, c.flags = 0x80000000u;
	ck_assert_int_eq(try_create(c), -EINVAL);
	/* And a good one still works. */
	ck_assert_int_eq(try_create(ok), 0);
}
END_TEST

START_TEST(memory_size_matches_validation)
{
	struct lfp_config c = { .obj_size = 24, .capacity = 100 };

	ck_assert_uint_eq(lfp_memory_size(NULL), 0);
	ck_assert_uint_ge(lfp_memory_size(&c), 100 * 32);
	c.obj_size = 0;
	ck_assert_uint_eq(lfp_memory_size(&c), 0);
	c.obj_size = 24, c.align = 12;
	ck_assert_uint_eq(lfp_memory_size(&c), 0);
	/* What lfp_create refuses has no size (found by the fuzzer). */
	c.align = 0, c.flags = 0x80000000u;
	ck_assert_uint_eq(lfp_memory_size(&c), 0);
	c.flags = 0, c.exhaust = LFP_EXHAUST_RECLAIM; /* without reclaim */
	ck_assert_uint_eq(lfp_memory_size(&c), 0);
	c.exhaust = 0;
	c.align = 0, c.obj_size = SIZE_MAX / 2;
	ck_assert_uint_eq(lfp_memory_size(&c), 0);
}
END_TEST

/* Objects are aligned, spaced by the stride, and never overlap. */
static void check_geometry(size_t obj_size, size_t align, size_t stride)
{
	struct lfp_config cfg = { .obj_size = obj_size, .align = align,
				  .capacity = 33 };
	size_t want = align ? align : alignof(max_align_t);
	struct lfp_pool *pool;
	char *prev = NULL;

	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	for (uint32_t i = 0; i < cfg.capacity; i++) {
		char *p = lfp_at(pool, i);
		ck_assert_uint_eq((uintptr_t)p % want, 0);
		if (prev)
			ck_assert_uint_eq((size_t)(p - prev), stride);
		ck_assert_uint_eq(lfp_index_of(pool, p), i);
		prev = p;
	}
	lfp_destroy(pool);
}

START_TEST(alignment_and_stride)
{
	check_geometry(1, 0, alignof(max_align_t));
	check_geometry(24, 0, 32);
	check_geometry(24, 8, 24); /* not a power of two: index by division */
	check_geometry(1, 64, 64);
	check_geometry(100, 128, 128);
	check_geometry(10, 4096, 4096);
	check_geometry(3, 1, 3);
}
END_TEST

START_TEST(index_and_ownership)
{
	struct lfp_pool *pool = test_pool(24, 10), *other = test_pool(24, 10);
	char *first = lfp_at(pool, 0), *last = lfp_at(pool, 9);
	int local;

	ck_assert_ptr_null(lfp_at(pool, 10));
	ck_assert_ptr_null(lfp_at(pool, LFP_NO_INDEX));
	ck_assert_ptr_null(lfp_at(NULL, 0));
	ck_assert(lfp_owns(pool, first));
	ck_assert(lfp_owns(pool, first + 5)); /* any byte of a slot */
	ck_assert(lfp_owns(pool, last + 31));
	ck_assert(!lfp_owns(pool, last + 32)); /* one past the end */
	ck_assert(!lfp_owns(pool, first - 1));
	ck_assert(!lfp_owns(pool, &local));
	ck_assert(!lfp_owns(pool, lfp_at(other, 0)));
	ck_assert(!lfp_owns(pool, NULL));
	ck_assert(!lfp_owns(NULL, first));
	ck_assert_uint_eq(lfp_index_of(pool, first + 1), LFP_NO_INDEX);
	ck_assert_uint_eq(lfp_index_of(pool, &local), LFP_NO_INDEX);
	ck_assert_uint_eq(lfp_index_of(pool, lfp_at(other, 3)), LFP_NO_INDEX);
	ck_assert_uint_eq(lfp_index_of(pool, NULL), LFP_NO_INDEX);
	ck_assert_uint_eq(lfp_index_of(pool, last), 9);
	lfp_destroy(pool);
	lfp_destroy(other);
}
END_TEST

/* Objects live inside the caller's region, which the pool never frees. */
static void use_caller_memory(void *mem, size_t size)
{
	struct lfp_config cfg = { .obj_size = 40, .capacity = 64,
				  .memory = mem, .memory_size = size };
	struct lfpi_census census;
	struct lfp_pool *pool;
	void *objs[64];

	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	for (int i = 0; i < 64; i++) {
		objs[i] = lfp_alloc(pool);
		ck_assert_ptr_nonnull(objs[i]);
		ck_assert((char *)objs[i] >= (char *)mem);
		ck_assert((char *)objs[i] + 40 <= (char *)mem + size);
		memset(objs[i], i, 40);
	}
	ck_assert_ptr_null(lfp_alloc(pool));
	for (int i = 0; i < 64; i++)
		ck_assert_int_eq(lfp_free(pool, objs[i]), 0);
	ck_audit(pool, &census);
	ck_assert_uint_eq(census.listed + census.cached, 64);
	lfp_destroy(pool);
}

static alignas(LFP_MEMORY_ALIGN) char static_region[16384];

START_TEST(caller_memory)
{
	struct lfp_config cfg = { .obj_size = 40, .capacity = 64 };
	size_t need = lfp_memory_size(&cfg);
	struct lfp_pool *pool;
	char *heap;

	ck_assert_uint_le(need, sizeof(static_region));
	use_caller_memory(static_region, need);
	/* The same memory again, dirty from the last pool: still sound. */
	use_caller_memory(static_region, sizeof(static_region));

	heap = aligned_alloc(LFP_MEMORY_ALIGN, need + LFP_MEMORY_ALIGN);
	memset(heap, 0xa5, need + LFP_MEMORY_ALIGN);
	use_caller_memory(heap, need);
	cfg.memory = heap, cfg.memory_size = need - 1;
	ck_assert_int_eq(lfp_create(&cfg, &pool), -EINVAL);
	cfg.memory = heap + 8, cfg.memory_size = need;
	ck_assert_int_eq(lfp_create(&cfg, &pool), -EINVAL);
	free(heap);

	/* Object alignment above LFP_MEMORY_ALIGN is required of the region. */
	cfg.align = 128;
	need = lfp_memory_size(&cfg);
	heap = aligned_alloc(128, need + 128);
	cfg.memory = heap + 64, cfg.memory_size = need;
	ck_assert_int_eq(lfp_create(&cfg, &pool), -EINVAL);
	cfg.memory = heap;
	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	ck_assert_uint_eq((uintptr_t)lfp_at(pool, 1) % 128, 0);
	lfp_destroy(pool);
	free(heap);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("slab");
	TCase *tc = tcase_create("slab");

	tcase_add_test(tc, rejects_bad_configs);
	tcase_add_test(tc, memory_size_matches_validation);
	tcase_add_test(tc, alignment_and_stride);
	tcase_add_test(tc, index_and_ownership);
	tcase_add_test(tc, caller_memory);
	suite_add_tcase(s, tc);
	return test_run(s);
}
