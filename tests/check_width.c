/* SPDX-License-Identifier: MIT */
/*
 * What depends on the width of pointers and size_t, held in every build
 * and meant for the 32-bit one (i686, under qemu-i386 in a cross build):
 * the layout of every public struct, sizes near the bounds of size_t
 * (LFP_MAX_CAPACITY, obj_size times capacity, lfp_memory_size at its
 * limit), handles, and the free list's tagged head, one 64-bit word that
 * a 32-bit machine must load and swap whole (cmpxchg8b on i686).
 */
#include <stdalign.h>
#include <stddef.h>

#include "testutil.h"

#define LP64 (sizeof(void *) == 8 && sizeof(size_t) == 8)
#define ILP32 (sizeof(void *) == 4 && sizeof(size_t) == 4)

/* A field's offset and size in the two data models lfpool is built for:
 * LP64 (x86-64, aarch64) and ILP32 (i686). A program compiled against
 * lfpool.h lays these out itself, so they are the ABI as much as the
 * soname is: a change here is a change of soname (configure.ac). */
struct field {
	const char *name;
	size_t off, size;       /* in this build */
	size_t off64, size64;   /* LP64 */
	size_t off32, size32;   /* ILP32 */
};

#define FIELD(s, f, o64, s64, o32, s32)                                      \
	{ #s "." #f, offsetof(struct s, f), sizeof(((struct s *)0)->f), o64,  \
	  s64, o32, s32 }
#define WHOLE(s, s64, s32) { #s, 0, sizeof(struct s), 0, s64, 0, s32 }

static const struct field fields[] = {
	WHOLE(lfp_config, 112, 68),
	FIELD(lfp_config, obj_size, 0, 8, 0, 4),
	FIELD(lfp_config, align, 8, 8, 4, 4),
	FIELD(lfp_config, capacity, 16, 4, 8, 4),
	FIELD(lfp_config, flags, 20, 4, 12, 4),
	FIELD(lfp_config, memory, 24, 8, 16, 4),
	FIELD(lfp_config, memory_size, 32, 8, 20, 4),
	FIELD(lfp_config, cache_size, 40, 4, 24, 4),
	FIELD(lfp_config, batch_size, 44, 4, 28, 4),
	FIELD(lfp_config, exhaust, 48, 4, 32, 4),
	FIELD(lfp_config, max_capacity, 52, 4, 36, 4),
	FIELD(lfp_config, reclaim, 56, 8, 40, 4),
	FIELD(lfp_config, reclaim_tries, 64, 4, 44, 4),
	FIELD(lfp_config, ctor, 72, 8, 48, 4),
	FIELD(lfp_config, on_alloc, 80, 8, 52, 4),
	FIELD(lfp_config, on_free, 88, 8, 56, 4),
	FIELD(lfp_config, hook_arg, 96, 8, 60, 4),
	FIELD(lfp_config, name, 104, 8, 64, 4),
	/* Nineteen 64-bit counters in both models. */
	WHOLE(lfp_stats, 152, 152),
	FIELD(lfp_stats, capacity, 0, 8, 0, 8),
	FIELD(lfp_stats, reclaims, 144, 8, 144, 8),
	WHOLE(lfp_iter, 16, 12),
	FIELD(lfp_iter, pool_, 0, 8, 0, 4),
	FIELD(lfp_iter, next_, 8, 4, 4, 4),
	FIELD(lfp_iter, end_, 12, 4, 8, 4),
	WHOLE(lfp_family_config, 112, 68),
	FIELD(lfp_family_config, sizes, 0, 8, 0, 4),
	FIELD(lfp_family_config, capacities, 8, 8, 4, 4),
	FIELD(lfp_family_config, classes, 16, 4, 8, 4),
	FIELD(lfp_family_config, spill, 20, 4, 12, 4),
	FIELD(lfp_family_config, max_capacities, 24, 8, 16, 4),
	FIELD(lfp_family_config, align, 32, 8, 20, 4),
	FIELD(lfp_family_config, flags, 40, 4, 24, 4),
	FIELD(lfp_family_config, exhaust, 44, 4, 28, 4),
	FIELD(lfp_family_config, cache_size, 48, 4, 32, 4),
	FIELD(lfp_family_config, batch_size, 52, 4, 36, 4),
	FIELD(lfp_family_config, reclaim, 56, 8, 40, 4),
	FIELD(lfp_family_config, reclaim_tries, 64, 4, 44, 4),
	FIELD(lfp_family_config, ctor, 72, 8, 48, 4),
	FIELD(lfp_family_config, on_alloc, 80, 8, 52, 4),
	FIELD(lfp_family_config, on_free, 88, 8, 56, 4),
	FIELD(lfp_family_config, hook_arg, 96, 8, 60, 4),
	FIELD(lfp_family_config, name, 104, 8, 64, 4),
	WHOLE(lfp_family_stats, 184, 184),
	FIELD(lfp_family_stats, total, 0, 152, 0, 152),
	FIELD(lfp_family_stats, spilled, 152, 8, 152, 8),
	FIELD(lfp_family_stats, failed_allocs, 160, 8, 160, 8),
	FIELD(lfp_family_stats, bad_sizes, 168, 8, 168, 8),
	FIELD(lfp_family_stats, foreign_frees, 176, 8, 176, 8),
};

START_TEST(public_structs_keep_their_layout)
{
	ck_assert(LP64 || ILP32);
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		const struct field *f = &fields[i];
		size_t off = LP64 ? f->off64 : f->off32;
		size_t size = LP64 ? f->size64 : f->size32;

		ck_assert_msg(f->off == off && f->size == size,
			      "%s: offset %zu size %zu, not %zu %zu (%s)",
			      f->name, f->off, f->size, off, size,
			      LP64 ? "LP64" : "ILP32");
	}
	/* A handle is one 64-bit word in both: {generation:32 | index:32}
	 * (aligned to 4 on i386, as uint64_t is there). */
	ck_assert_uint_eq(sizeof(lfp_handle), 8);
}
END_TEST

static int create_err(struct lfp_config cfg)
{
	struct lfp_pool *pool = NULL;
	int err = lfp_create(&cfg, &pool);

	if (err == 0) {
		void *p = lfp_alloc(pool);

		ck_assert_ptr_nonnull(p);
		ck_assert_int_eq(lfp_free(pool, p), 0);
		lfp_destroy(pool);
	}
	return err;
}

/*
 * LFP_MAX_CAPACITY slots of one byte need more than 32 bits of bytes
 * (each slot has 8 bytes of metadata beside its object): a 32-bit build
 * says so, 0 and -EOVERFLOW; a 64-bit one sizes it.
 */
START_TEST(max_capacity_fits_only_in_64_bits)
{
	struct lfp_config c = { .obj_size = 1, .align = 1,
				.capacity = LFP_MAX_CAPACITY };
	size_t size = lfp_memory_size(&c);

	if (ILP32) {
		ck_assert_uint_eq(size, 0);
		ck_assert_int_eq(create_err(c), -EOVERFLOW);
		c.capacity = 64, c.max_capacity = LFP_MAX_CAPACITY;
		c.exhaust = LFP_EXHAUST_GROW;
		ck_assert_uint_eq(lfp_memory_size(&c), 0);
		ck_assert_int_eq(create_err(c), -EOVERFLOW);
	} else {
		ck_assert_uint_gt(size, (size_t)LFP_MAX_CAPACITY * 9);
	}
}
END_TEST

/* obj_size times capacity past SIZE_MAX, by one stride: refused, never a
 * wrapped (small) size. */
START_TEST(object_bytes_overflowing_size_t)
{
	const uint32_t n = 1u << 20;
	struct lfp_config c = { .align = 16, .capacity = n };

	/* The largest stride whose n objects still fit in size_t... */
	c.obj_size = (SIZE_MAX / n) & ~(size_t)15;
	/* ...is refused anyway when the metadata does not fit beside. */
	c.obj_size += 16; /* n strides now exceed SIZE_MAX */
	ck_assert_uint_eq(lfp_memory_size(&c), 0);
	ck_assert_int_eq(create_err(c), -EOVERFLOW);
	c.memory = (void *)(uintptr_t)4096, c.memory_size = SIZE_MAX;
	ck_assert_int_eq(create_err(c), -EOVERFLOW);
	c.memory = NULL, c.memory_size = 0;
	/* 16-byte objects: 2^28 of them are 2^32 bytes. */
	c.obj_size = 16, c.capacity = 1u << 28;
	if (ILP32) {
		ck_assert_uint_eq(lfp_memory_size(&c), 0);
		ck_assert_int_eq(create_err(c), -EOVERFLOW);
	} else {
		ck_assert_uint_gt(lfp_memory_size(&c), (size_t)16 << 28);
	}
	/* 8-byte objects in the default alignment's 16-byte strides: the
	 * size is at fault, not an align the caller never set. */
	c.obj_size = 8, c.align = 0;
	if (ILP32 && alignof(max_align_t) == 16)
		ck_assert_str_eq(lfp_config_fault(&c), "obj_size");
	else if (!ILP32)
		ck_assert_ptr_null(lfp_config_fault(&c));
	c.align = 16;
	if (ILP32)
		ck_assert_str_eq(lfp_config_fault(&c), "align");
}
END_TEST

/*
 * The largest value of *field (capacity or max_capacity) for which
 * lfp_memory_size(c) is not 0, by bisection, or LFP_MAX_CAPACITY if
 * every value is sized; *above is the smallest refused.
 */
static uint64_t size_limit(struct lfp_config *c, uint32_t *field,
			   uint64_t *above)
{
	uint64_t lo = 64, hi = LFP_MAX_CAPACITY, n;

	*field = LFP_MAX_CAPACITY;
	if (lfp_memory_size(c) != 0)
		return *above = LFP_MAX_CAPACITY;
	*field = (uint32_t)lo;
	ck_assert_uint_ne(lfp_memory_size(c), 0);
	while (lo + 1 < hi) { /* size(lo) != 0, size(hi) == 0 */
		n = lo + (hi - lo) / 2;
		*field = (uint32_t)n;
		if (lfp_memory_size(c) != 0)
			lo = n;
		else
			hi = n;
	}
	*above = hi;
	return lo;
}

/* Every value from above on is refused: sized 0, made -EOVERFLOW. */
static void refused_above(struct lfp_config *c, uint32_t *field,
			  uint64_t above)
{
	for (uint64_t n = above; n < above + 64 && n <= LFP_MAX_CAPACITY; n++) {
		*field = (uint32_t)n;
		ck_assert_uint_eq(lfp_memory_size(c), 0);
	}
	*field = (uint32_t)(above + (LFP_MAX_CAPACITY - above) / 2);
	ck_assert_uint_eq(lfp_memory_size(c), 0);
	ck_assert_int_eq(create_err(*c), -EOVERFLOW);
}

/*
 * lfp_memory_size at its limit, for a pool of a fixed capacity and for
 * one that grows: the largest capacity whose size fits in size_t is
 * sized, with room for every slot's object and metadata, and takes most
 * of the address space; every capacity above it is refused. lfp_create
 * of that pool either makes it or finds no room for it in the address
 * space (-ENOMEM), never -EOVERFLOW. In a 64-bit build nothing up to
 * LFP_MAX_CAPACITY is refused.
 */
START_TEST(memory_size_at_its_limit)
{
	struct lfp_config c = { .obj_size = 16, .align = 16 };
	uint64_t lim, above;
	size_t size;
	int err;

	lim = size_limit(&c, &c.capacity, &above);
	if (LP64) {
		ck_assert_uint_eq(lim, LFP_MAX_CAPACITY);
	} else {
		c.capacity = (uint32_t)lim;
		size = lfp_memory_size(&c);
		ck_assert_uint_ge(size / 24, lim); /* object, next, gen */
		ck_assert_uint_gt(size, SIZE_MAX / 2);
		err = create_err(c);
		ck_assert_msg(err == 0 || err == -ENOMEM, "%llu slots: %d",
			      (unsigned long long)lim, err);
		refused_above(&c, &c.capacity, above);
	}

	c.capacity = 64, c.exhaust = LFP_EXHAUST_GROW;
	lim = size_limit(&c, &c.max_capacity, &above);
	if (LP64) {
		ck_assert_uint_eq(lim, LFP_MAX_CAPACITY);
	} else {
		c.max_capacity = (uint32_t)lim;
		size = lfp_memory_size(&c);
		ck_assert_uint_ge(size / 24, lim);
		ck_assert_uint_gt(size, SIZE_MAX / 4);
		err = create_err(c);
		ck_assert_msg(err == 0 || err == -ENOMEM,
			      "growable to %llu slots: %d",
			      (unsigned long long)lim, err);
		refused_above(&c, &c.max_capacity, above);
	}
}
END_TEST

/* A handle's 64 bits, whole: its parts at their extremes, and a handle
 * that differs from a live one in its generation only (the high word on
 * a 32-bit machine) resolves to nothing. */
START_TEST(handles_are_one_64_bit_word)
{
	lfp_handle h = { (uint64_t)0xfffffffdu << 32 | 0xfffffffeu };
	struct lfp_pool *pool = test_pool_flags(32, 64, 0);
	void *p;

	ck_assert_uint_eq(lfp_handle_index(h), 0xfffffffeu);
	ck_assert_uint_eq(lfp_handle_gen(h), 0xfffffffdu);
	ck_assert(!lfp_handle_is_null(h));
	ck_assert(!lfp_handle_eq(h, (lfp_handle){ h.bits ^ (1ull << 32) }));
	ck_assert(!lfp_handle_eq(h, (lfp_handle){ h.bits ^ 1u }));

	p = lfp_alloc(pool);
	h = lfp_handle_of(pool, p);
	ck_assert_ptr_eq(lfp_resolve(pool, h), p);
	for (int bit = 32; bit < 64; bit++) {
		lfp_handle other = { h.bits ^ (1ull << bit) };

		ck_assert_ptr_null(lfp_resolve(pool, other));
	}
	ck_assert_int_eq(lfp_free(pool, p), 0);
	ck_assert_ptr_null(lfp_resolve(pool, h));
	lfp_destroy(pool);
}
END_TEST

/*
 * The free list's head: lock-free, 8-aligned (a 64-bit CAS across two
 * cache lines is a split lock, which a kernel may refuse), and swapped
 * whole: a CAS whose expected word differs in the tag alone, or in the
 * index alone, fails.
 */
static struct lfpi_stack head_stack;
static _Atomic uint32_t head_links[4];

START_TEST(tagged_head_is_one_word)
{
	uint64_t want;

	lfpi_stack_init(&head_stack, head_links, sizeof(head_links[0]));
	ck_assert(atomic_is_lock_free(&head_stack.head));
	ck_assert_uint_eq((uintptr_t)&head_stack.head % 8, 0);
	atomic_store(&head_stack.head, (uint64_t)7 << 32 | 2);
	want = (uint64_t)8 << 32 | 2; /* the tag differs */
	ck_assert(!atomic_compare_exchange_strong(&head_stack.head, &want, 0));
	want = (uint64_t)7 << 32 | 3; /* the index differs */
	ck_assert(!atomic_compare_exchange_strong(&head_stack.head, &want, 0));
	ck_assert(atomic_compare_exchange_strong(&head_stack.head, &want, 0));
	ck_assert_uint_eq(atomic_load(&head_stack.head), 0);
}
END_TEST

/*
 * No load sees half a word: threads swap the head among words whose two
 * halves are equal, and readers check every word they load. Two 32-bit
 * loads (a head read as two halves) would see halves of two words.
 */
#define TORN_ROUNDS 200000
static _Atomic uint64_t torn_word;
static _Atomic int torn_seen;

static void *torn_writer(void *arg)
{
	uint64_t k = (uintptr_t)arg;

	for (int i = 0; i < TORN_ROUNDS; i++) {
		uint64_t old = atomic_load_explicit(&torn_word,
						    memory_order_relaxed);
		uint64_t half = (k << 16) + (uint64_t)i;

		atomic_compare_exchange_weak(&torn_word, &old,
					     half << 32 | half);
	}
	return NULL;
}

static void *torn_reader(void *arg)
{
	(void)arg;
	for (int i = 0; i < TORN_ROUNDS; i++) {
		uint64_t w = atomic_load_explicit(&torn_word,
						  memory_order_relaxed);

		if ((uint32_t)(w >> 32) != (uint32_t)w)
			atomic_fetch_add(&torn_seen, 1);
	}
	return NULL;
}

START_TEST(tagged_words_are_never_torn)
{
	pthread_t t[4];

	atomic_store(&torn_word, 0);
	atomic_store(&torn_seen, 0);
	pthread_create(&t[0], NULL, torn_writer, (void *)1);
	pthread_create(&t[1], NULL, torn_writer, (void *)2);
	pthread_create(&t[2], NULL, torn_reader, NULL);
	pthread_create(&t[3], NULL, torn_reader, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	ck_assert_int_eq(atomic_load(&torn_seen), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("width");
	TCase *tc = tcase_create("width");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, public_structs_keep_their_layout);
	tcase_add_test(tc, max_capacity_fits_only_in_64_bits);
	tcase_add_test(tc, object_bytes_overflowing_size_t);
	tcase_add_test(tc, memory_size_at_its_limit);
	tcase_add_test(tc, handles_are_one_64_bit_word);
	tcase_add_test(tc, tagged_head_is_one_word);
	tcase_add_test(tc, tagged_words_are_never_torn);
	suite_add_tcase(s, tc);
	return test_run(s);
}
