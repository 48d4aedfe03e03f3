/* SPDX-License-Identifier: MIT */
/* A family's zones (the class of a pointer by arithmetic on its address)
 * and explicit family caches: routing, errors, spilling, reuse, and
 * workers that each keep one while releasing each other's objects. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

static const size_t sizes6[] = { 24, 64, 100, 256, 512, 1024 };
static const uint32_t caps6[] = { 256, 256, 128, 128, 64, 64 };

static struct lfp_family *make_family(uint32_t flags, uint32_t spill)
{
	struct lfp_family_config cfg = { .sizes = sizes6,
					 .capacities = caps6,
					 .classes = 6,
					 .flags = flags,
					 .spill = spill,
					 .name = "fc" };
	struct lfp_family *fam = NULL;

	ck_assert_int_eq(lfp_family_create(&cfg, &fam), 0);
	return fam;
}

static const struct lfpi_family_hot *hot(const struct lfp_family *fam)
{
	return (const struct lfpi_family_hot *)fam;
}

/* Whether all of [p, p + len) is mapped, or none of it. */
static bool mapped(uintptr_t p, size_t len)
{
	return test_mapped_bytes((const void *)p, len) == len;
}

static bool unmapped(uintptr_t p, size_t len)
{
	return test_mapped_bytes((const void *)p, len) == 0;
}

/*
 * The class of every object of every class is its zone's, and every
 * other address of the reservation (each class's header and metadata,
 * the ends of its zone) and just outside it belongs to no class.
 */
START_TEST(zones_name_every_class)
{
	struct lfp_family *fam = make_family(test_modes[_i], 0);
	const struct lfpi_family_hot *f = hot(fam);
	uintptr_t base = f->base, zone = (uintptr_t)1 << f->zshift;
	struct lfp_family_stats st;
	uint64_t foreign = 0;

	for (uint32_t c = 0; c < 6; c++) {
		struct lfp_pool *pool = lfp_family_pool(fam, c);
		uintptr_t first = (uintptr_t)lfp_at(pool, 0);
		uintptr_t end = (uintptr_t)lfp_at(pool, caps6[c] - 1) +
				sizes6[c];

		ck_assert_uint_ge(first, base + c * zone);
		ck_assert_uint_le(end, base + (c + 1) * zone);
		for (uint32_t i = 0; i < caps6[c]; i++)
			ck_assert_int_eq(lfp_family_class_of(fam,
							     lfp_at(pool, i)),
					 (int)c);
		/* The zone's start (the pool's header), the byte before the
		 * objects, and the zone's last byte. */
		const uintptr_t none[] = { base + c * zone, first - 1,
					   base + (c + 1) * zone - 1 };
		for (size_t k = 0; k < 3; k++) {
			if (none[k] >= first && none[k] < end)
				continue; /* an object of the class after all */
			ck_assert_int_eq(lfp_family_class_of(fam, (void *)none[k]),
					 -EFAULT);
			ck_assert_int_eq(lfp_family_free(fam, (void *)none[k]),
					 -EFAULT);
			foreign++;
		}
	}
	ck_assert_int_eq(lfp_family_class_of(fam, (void *)(base - 1)), -EFAULT);
	ck_assert_int_eq(lfp_family_class_of(fam, (void *)(base + 6 * zone)),
			 -EFAULT);
	ck_assert_int_eq(lfp_family_free(fam, (void *)(base - 1)), -EFAULT);
	ck_assert_int_eq(lfp_family_free(fam, (void *)(base + 6 * zone)),
			 -EFAULT);
	foreign += 2;
	lfp_family_stats(fam, &st);
	ck_assert_uint_eq(st.foreign_frees, foreign);
	ck_assert_uint_eq(st.total.rejected_frees, foreign);
	expect_family_accounted(fam, 0);
	lfp_family_destroy(fam);
}
END_TEST

/*
 * Each class's memory is its pool's own mapping, lent from the family's
 * reservation: lfp_trim gives its pages back (it trims only memory the
 * pool mapped), and lfp_family_destroy unmaps the whole reservation.
 */
START_TEST(zones_are_the_pools_own_and_go_with_the_family)
{
	static const size_t sz[] = { 64, 4096 };
	static const uint32_t cap[] = { 64, 512 };
	struct lfp_family_config cfg = { .sizes = sz, .capacities = cap,
					 .classes = 2 };
	struct lfp_family *fam = NULL;
	void *objs[512];
	long long trimmed;
	uintptr_t base;
	size_t len;
	struct lfp_stats st;

	ck_assert_int_eq(lfp_family_create(&cfg, &fam), 0);
	base = hot(fam)->base;
	len = (size_t)2 << hot(fam)->zshift;
	ck_assert(mapped(base, len));
	for (int i = 0; i < 512; i++) {
		objs[i] = lfp_family_alloc(fam, 4096);
		ck_assert_ptr_nonnull(objs[i]);
		memset(objs[i], 0x5a, 4096);
	}
	for (int i = 0; i < 512; i++)
		ck_assert_int_eq(lfp_family_free(fam, objs[i]), 0);
	/* The thread's implicit cache holds some: trim what is free. */
	trimmed = lfp_trim(lfp_family_pool(fam, 1));
	ck_assert_int_gt(trimmed, 0);
	lfp_stats(lfp_family_pool(fam, 1), &st);
	ck_assert_uint_eq(st.trimmed_bytes, (uint64_t)trimmed);
	expect_family_accounted(fam, 0);
	lfp_family_destroy(fam);
	ck_assert(unmapped(base, len));
}
END_TEST

/*
 * A class commits its memory as lfp_create would, so the limits that
 * hold for a pool hold for it: with RLIMIT_DATA below a fully committed
 * class, the family is refused as the pool is, and leaves nothing mapped
 * (a mapping placed over the reservation with MAP_FIXED escaped the
 * limit). In a child, which the limit binds alone. qemu-user takes the
 * limit and applies none of it (setrlimit(RLIMIT_DATA) returns 0: it
 * would bind the emulator's own memory): where a writable mapping above
 * the limit succeeds, the pool and the family must agree all the same,
 * both made, and the test says that this is the path it took.
 */
START_TEST(zones_commit_within_the_data_limit)
{
	static const size_t sz[] = { 65536 };
	static const uint32_t cap[] = { 4000 }; /* 256 MiB, all usable */
	struct lfp_family_config cfg = { .sizes = sz, .capacities = cap,
					 .classes = 1 };
	struct lfp_config pc = { .obj_size = 65536, .capacity = 4000 };
	int status;
	pid_t pid;

	if (under_sanitizer())
		return; /* a sanitizer's shadow memory counts in the limit */
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct rlimit rl = { (rlim_t)64 << 20, RLIM_INFINITY };
		struct lfp_family *fam = NULL;
		struct lfp_pool *pool = NULL;

		void *probe;

		if (setrlimit(RLIMIT_DATA, &rl))
			_exit(3);
		probe = mmap(NULL, (size_t)128 << 20, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (probe != MAP_FAILED) { /* the limit does not bind */
			munmap(probe, (size_t)128 << 20);
			if (lfp_create(&pc, &pool) != 0)
				_exit(6);
			lfp_destroy(pool);
			if (lfp_family_create(&cfg, &fam) != 0)
				_exit(7);
			lfp_family_destroy(fam);
			_exit(10);
		}
		if (lfp_create(&pc, &pool) != -ENOMEM)
			_exit(4);
		_exit(lfp_family_create(&cfg, &fam) == -ENOMEM ? 0 : 5);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	if (WEXITSTATUS(status) == 10) {
		printf("zones_commit_within_the_data_limit: RLIMIT_DATA does "
		       "not bind here (an emulator?): the pool and the family "
		       "were both made\n");
		return;
	}
	ck_assert_int_eq(WEXITSTATUS(status), 0);
}
END_TEST

/* Allocations by every size go to the class lfp_family_class names,
 * through the family cache's cache of it, and back into it. */
START_TEST(family_cache_routes_by_size_and_address)
{
	struct lfp_family *fam = make_family(test_modes[_i], 0);
	struct lfp_family_cache *fc = lfp_family_cache_create(fam);
	struct lfp_stats cs;
	uint64_t allocs[6] = { 0 };

	ck_assert_ptr_nonnull(fc);
	for (size_t size = 1; size <= 1024; size++) {
		int want = lfp_family_class(fam, size);
		void *obj = lfp_family_cache_alloc(fc, size);

		ck_assert_ptr_nonnull(obj);
		ck_assert_int_eq(lfp_family_class_of(fam, obj), want);
		memset(obj, 0x33, size);
		ck_assert_int_eq(lfp_family_cache_free(fc, obj), 0);
		allocs[want]++;
	}
	for (uint32_t c = 0; c < 6; c++) {
		struct lfp_cache *cache = lfp_family_cache_class(fc, c);

		ck_assert_ptr_nonnull(cache);
		lfp_cache_stats(cache, &cs);
		ck_assert_uint_eq(cs.allocs, allocs[c]);
		ck_assert_uint_eq(cs.frees, allocs[c]);
	}
	ck_assert_ptr_null(lfp_family_cache_class(fc, 6));
	expect_family_accounted(fam, 0);
	lfp_family_cache_flush(fc);
	for (uint32_t c = 0; c < 6; c++) {
		struct lfp_stats s;

		lfp_stats(lfp_family_pool(fam, c), &s);
		ck_assert_uint_eq(s.cached, 0);
	}
	lfp_family_cache_destroy(fc);
	lfp_family_destroy(fam);
}
END_TEST

/* Every refusal of lfp_family_free and lfp_family_alloc, through a
 * family cache, with the same counts, and nothing lost. */
START_TEST(family_cache_refuses_as_the_family)
{
	struct lfp_family *fam = make_family(test_modes[_i], 0);
	struct lfp_family *other = make_family(test_modes[_i], 0);
	struct lfp_family_cache *fc = lfp_family_cache_create(fam);
	char *mine = lfp_family_cache_alloc(fc, 64);
	char *theirs = lfp_family_alloc(other, 64);
	char local[64];
	struct lfp_family_stats st;

	ck_assert_ptr_nonnull(mine);
	ck_assert_ptr_null(lfp_family_cache_alloc(NULL, 8));
	ck_assert_int_eq(lfp_family_cache_free(NULL, mine), -EINVAL);
	ck_assert_ptr_null(lfp_family_cache_class(NULL, 0));
	lfp_family_cache_flush(NULL);
	lfp_family_cache_destroy(NULL);
	ck_assert_ptr_null(lfp_family_cache_create(NULL));
	ck_assert_ptr_null(lfp_family_cache_alloc(fc, 0));
	ck_assert_ptr_null(lfp_family_cache_alloc(fc, 1025));
	ck_assert_ptr_null(lfp_family_cache_alloc(fc, SIZE_MAX));
	ck_assert_int_eq(lfp_family_cache_free(fc, NULL), -EINVAL);
	ck_assert_int_eq(lfp_family_cache_free(fc, theirs), -EFAULT);
	ck_assert_int_eq(lfp_family_cache_free(fc, local), -EFAULT);
	ck_assert_int_eq(lfp_family_cache_free(fc, mine + 1), -EINVAL);
	ck_assert_int_eq(lfp_family_cache_free(fc, mine), 0);
	ck_assert_int_eq(lfp_family_cache_free(fc, mine), -EALREADY);
	lfp_family_stats(fam, &st);
	ck_assert_uint_eq(st.bad_sizes, 3);
	ck_assert_uint_eq(st.foreign_frees, 2);
	ck_assert_uint_eq(st.total.rejected_frees, 2 + 2);
	expect_family_accounted(fam, 0);
	ck_assert_int_eq(lfp_family_free(other, theirs), 0);
	expect_family_accounted(other, 0);
	lfp_family_cache_destroy(fc);
	lfp_family_destroy(other);
	lfp_family_destroy(fam);
}
END_TEST

/* Through a family cache an exhausted class spills to the next one up
 * (spill = 1), and no further. */
START_TEST(family_cache_spills)
{
	static const size_t sz[] = { 32, 64, 128 };
	static const uint32_t cap[] = { 4, 4, 4 };
	struct lfp_family_config cfg = { .sizes = sz, .capacities = cap,
					 .classes = 3, .flags = test_modes[_i],
					 .spill = 1 };
	struct lfp_family *fam = NULL;
	struct lfp_family_cache *fc;
	struct lfp_family_stats st;
	void *held[8];

	ck_assert_int_eq(lfp_family_create(&cfg, &fam), 0);
	fc = lfp_family_cache_create(fam);
	for (int k = 0; k < 8; k++) {
		held[k] = lfp_family_cache_alloc(fc, 30);
		ck_assert_ptr_nonnull(held[k]);
		ck_assert_int_eq(lfp_family_class_of(fam, held[k]), k < 4 ? 0 : 1);
	}
	ck_assert_ptr_null(lfp_family_cache_alloc(fc, 30));
	ck_assert_int_eq(lfp_family_class_of(fam, lfp_family_cache_alloc(fc, 100)),
			 2);
	lfp_family_stats(fam, &st);
	ck_assert_uint_eq(st.spilled, 4);
	ck_assert_uint_eq(st.failed_allocs, 1);
	expect_family_accounted(fam, 9);
	for (int k = 0; k < 8; k++)
		ck_assert_int_eq(lfp_family_cache_free(fc, held[k]), 0);
	expect_family_accounted(fam, 1);
	lfp_family_cache_destroy(fc);
	lfp_family_destroy(fam);
}
END_TEST

/* A family cache given up is made again by the next create, empty;
 * those never given up are freed by lfp_family_destroy. */
START_TEST(family_caches_are_reused_and_freed)
{
	struct lfp_family *fam = make_family(0, 0);
	struct lfp_family_cache *a = lfp_family_cache_create(fam);
	struct lfp_family_cache *b = lfp_family_cache_create(fam);
	void *obj;

	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_ne(a, b);
	obj = lfp_family_cache_alloc(a, 200);
	ck_assert_int_eq(lfp_family_cache_free(b, obj), 0);
	lfp_family_cache_destroy(b);
	ck_assert_ptr_eq(lfp_family_cache_create(fam), b);
	for (uint32_t c = 0; c < 6; c++) {
		struct lfp_stats cs;

		lfp_cache_stats(lfp_family_cache_class(b, c), &cs);
		ck_assert_uint_eq(cs.cached, 0);
	}
	obj = lfp_family_cache_alloc(b, 8);
	ck_assert_ptr_nonnull(obj);
	expect_family_accounted(fam, 1);
	lfp_family_destroy(fam); /* a and b still there, obj live */
}
END_TEST

/*
 * Workers, each with its own family cache, allocate every size and pass
 * half of their objects to the next worker, which releases them into its
 * own family cache: no object is handed out twice, and at the end every
 * slot is accounted for.
 */
enum { WORKERS = 4, PASS = 64 };
static struct lfp_family *shared;
static _Atomic(void *) mailbox[WORKERS][PASS];
static _Atomic uint32_t twice;

static void *worker(void *arg)
{
	int self = (int)(intptr_t)arg;
	struct lfp_family_cache *fc = lfp_family_cache_create(shared);
	uint32_t r = 7u * (uint32_t)self + 1, rounds = under_sanitizer() ? 3000
									: 30000;

	for (uint32_t i = 0; i < rounds; i++) {
		size_t size;
		unsigned char *obj;

		r = r * 1103515245u + 12345u;
		size = 1 + (r >> 8) % 1024;
		obj = lfp_family_cache_alloc(fc, size);
		if (!obj)
			continue;
		if (obj[0] == 0xee)
			atomic_fetch_add(&twice, 1);
		obj[0] = 0xee;
		if (r & 0x10000) {
			obj = atomic_exchange(&mailbox[(self + 1) % WORKERS][r % PASS],
					      obj);
			if (!obj)
				continue;
		}
		obj[0] = 0;
		ck_assert_int_eq(lfp_family_cache_free(fc, obj), 0);
	}
	for (int k = 0; k < PASS; k++) {
		unsigned char *obj = atomic_exchange(&mailbox[self][k], NULL);

		if (obj) {
			obj[0] = 0;
			ck_assert_int_eq(lfp_family_cache_free(fc, obj), 0);
		}
	}
	lfp_family_cache_destroy(fc);
	return NULL;
}

START_TEST(workers_with_family_caches_pass_objects)
{
	static const uint32_t caps[6] = { 1024, 1024, 1024, 1024, 1024, 1024 };
	struct lfp_family_config cfg = { .sizes = sizes6, .capacities = caps,
					 .classes = 6,
					 .flags = test_modes[_i] };
	pthread_t th[WORKERS];

	ck_assert_int_eq(lfp_family_create(&cfg, &shared), 0);
	memset(mailbox, 0, sizeof(mailbox));
	atomic_store(&twice, 0);
	for (int i = 0; i < WORKERS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, worker,
						(void *)(intptr_t)i), 0);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(th[i], NULL);
	/* Objects a worker left in a mailbox it had already emptied. */
	for (int w = 0; w < WORKERS; w++)
		for (int k = 0; k < PASS; k++) {
			unsigned char *obj = atomic_exchange(&mailbox[w][k], NULL);

			if (obj) {
				obj[0] = 0;
				ck_assert_int_eq(lfp_family_free(shared, obj), 0);
			}
		}
	ck_assert_uint_eq(atomic_load(&twice), 0);
	expect_family_accounted(shared, 0);
	lfp_family_destroy(shared);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("familycache");
	TCase *tc = tcase_create("familycache");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, zones_name_every_class, 0, TEST_NMODES);
	tcase_add_test(tc, zones_are_the_pools_own_and_go_with_the_family);
	tcase_add_test(tc, zones_commit_within_the_data_limit);
	tcase_add_loop_test(tc, family_cache_routes_by_size_and_address, 0,
			    TEST_NMODES);
	tcase_add_loop_test(tc, family_cache_refuses_as_the_family, 0,
			    TEST_NMODES);
	tcase_add_loop_test(tc, family_cache_spills, 0, TEST_NMODES);
	tcase_add_test(tc, family_caches_are_reused_and_freed);
	tcase_add_loop_test(tc, workers_with_family_caches_pass_objects, 0,
			    TEST_NMODES);
	suite_add_tcase(s, tc);
	return test_run(s);
}
