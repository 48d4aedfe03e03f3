/* SPDX-License-Identifier: MIT */
/* The tagged Treiber stack, alone and under concurrent use; the depot of
 * magazines built on it. */
#include <pthread.h>
#include <stdlib.h>

#include "testutil.h"

#define N 64

static struct lfpi_slot slots[N];
static struct lfpi_stack stack;

static void reset(void)
{
	for (int i = 0; i < N; i++) {
		atomic_init(&slots[i].next, LFPI_NIL);
		atomic_init(&slots[i].gen, 0);
	}
	lfpi_stack_init(&stack, &slots[0].next, sizeof(slots[0]));
}

static uint32_t pop(void)
{
	uint32_t retries = 0;

	return lfpi_stack_pop(&stack, &retries);
}

static uint32_t next(uint32_t i)
{
	return atomic_load_explicit(&slots[i].next, memory_order_relaxed);
}

static uint32_t tag(void)
{
	return (uint32_t)(atomic_load(&stack.head) >> 32);
}

START_TEST(single_nodes_are_lifo)
{
	reset();
	ck_assert_uint_eq(pop(), LFPI_NIL);
	for (uint32_t i = 0; i < 5; i++)
		ck_assert_uint_eq(lfpi_stack_push(&stack, i, i), 0);
	for (uint32_t i = 5; i-- > 0;)
		ck_assert_uint_eq(pop(), i);
	ck_assert_uint_eq(pop(), LFPI_NIL);
}
END_TEST

/* A chain goes on with one push and comes off a node at a time, above
 * what was there. */
START_TEST(chains_push_whole)
{
	reset();
	lfpi_stack_push(&stack, 9, 9);
	/* Chain 1 -> 2 -> 3; 3's next is set by the push. */
	atomic_store(&slots[1].next, 2);
	atomic_store(&slots[2].next, 3);
	lfpi_stack_push(&stack, 1, 3);
	ck_assert_uint_eq(next(3), 9);
	ck_assert_uint_eq(pop(), 1);
	ck_assert_uint_eq(pop(), 2);
	ck_assert_uint_eq(pop(), 3);
	ck_assert_uint_eq(pop(), 9);
	ck_assert_uint_eq(pop(), LFPI_NIL);
}
END_TEST

START_TEST(pop_all_takes_everything)
{
	uint32_t t, first;

	reset();
	ck_assert_uint_eq(lfpi_stack_pop_all(&stack), LFPI_NIL);
	lfpi_stack_push(&stack, 4, 4);
	lfpi_stack_push(&stack, 5, 5);
	t = tag();
	first = lfpi_stack_pop_all(&stack);
	ck_assert_uint_eq(first, 5);
	ck_assert_uint_eq(next(5), 4);
	ck_assert_uint_eq(next(4), LFPI_NIL);
	ck_assert_uint_eq(tag(), t + 1);
	ck_assert(lfpi_stack_is_empty(&stack));
	ck_assert_uint_eq(pop(), LFPI_NIL);
}
END_TEST

/* Every removal changes the tag, pushes leave it, and it wraps cleanly. */
START_TEST(pop_bumps_tag)
{
	uint32_t t;

	reset();
	lfpi_stack_push(&stack, 4, 4);
	t = tag();
	lfpi_stack_push(&stack, 5, 5);
	ck_assert_uint_eq(tag(), t);
	pop();
	ck_assert_uint_eq(tag(), t + 1);
	pop();
	ck_assert_uint_eq(tag(), t + 2);
	pop(); /* empty: no removal, no bump */
	ck_assert_uint_eq(tag(), t + 2);

	atomic_store(&stack.head, (uint64_t)UINT32_MAX << 32 | LFPI_NIL);
	lfpi_stack_push(&stack, 9, 9);
	ck_assert_uint_eq(pop(), 9);
	ck_assert_uint_eq(tag(), 0);
}
END_TEST

static int count_slot(uint32_t idx, void *arg)
{
	uint32_t *seen = arg;

	if (idx >= N || seen[idx]++)
		return -1;
	return 0;
}

/*
 * Threads pop up to three nodes, push them back one by one or linked as a
 * chain, and now and then take everything and push it back as one chain.
 * At the end every node is on the stack exactly once.
 */
static void *churn(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	uint32_t got[3], k, last;

	for (int n = 0; n < 20000; n++) {
		if (rand_r(&seed) % 64 == 0) {
			uint32_t first = lfpi_stack_pop_all(&stack);

			if (first == LFPI_NIL)
				continue;
			for (last = first; next(last) != LFPI_NIL;)
				last = next(last);
			lfpi_stack_push(&stack, first, last);
			continue;
		}
		for (k = 0; k < 3 && (got[k] = pop()) != LFPI_NIL; k++)
			;
		if (!k)
			continue;
		if (rand_r(&seed) % 2) {
			for (uint32_t i = 0; i < k; i++)
				lfpi_stack_push(&stack, got[i], got[i]);
		} else {
			for (uint32_t i = 0; i + 1 < k; i++)
				atomic_store_explicit(&slots[got[i]].next,
						      got[i + 1],
						      memory_order_relaxed);
			lfpi_stack_push(&stack, got[0], got[k - 1]);
		}
	}
	return NULL;
}

START_TEST(concurrent_use_loses_nothing)
{
	pthread_t th[6];
	uint32_t seen[N] = { 0 };

	reset();
	for (uint32_t i = 0; i < N; i++)
		lfpi_stack_push(&stack, i, i);
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, churn,
						(void *)(uintptr_t)(i + 1)), 0);
	for (int i = 0; i < 6; i++)
		pthread_join(th[i], NULL);
	ck_assert_int_eq(lfpi_stack_walk(&stack, count_slot, seen), 0);
	for (int i = 0; i < N; i++)
		ck_assert_msg(seen[i] == 1, "node %d seen %u times", i, seen[i]);
}
END_TEST

/* The depot: 4 magazines of 8. */
#define MAGS 4
#define MSIZE 8
static uint64_t depot_mem[MAGS * (sizeof(struct lfpi_mag) + MSIZE * 4) / 8 + 1];
static struct lfpi_depot depot;

static void depot_reset(void)
{
	ck_assert_uint_le(lfpi_depot_bytes(MAGS, MSIZE), sizeof(depot_mem));
	lfpi_depot_init(&depot, depot_mem, MAGS, MSIZE);
}

START_TEST(depot_exchanges_whole_magazines)
{
	uint32_t in[MSIZE], out[MSIZE];
	uint32_t spare = LFPI_NIL, retries = 0, n, seen[N] = { 0 };

	depot_reset();
	ck_assert_uint_eq(lfpi_depot_load(&depot, out, &spare, &retries), 0);
	for (uint32_t i = 0; i < MSIZE; i++)
		in[i] = 10 + i;
	ck_assert(lfpi_depot_store(&depot, in, MSIZE, &spare, &retries));
	ck_assert(!lfpi_depot_is_empty(&depot));
	ck_assert_int_eq(lfpi_depot_walk(&depot, count_slot, seen), 0);
	for (uint32_t i = 0; i < MSIZE; i++)
		ck_assert_uint_eq(seen[10 + i], 1);
	/* Loading it leaves its magazine as our spare... */
	n = lfpi_depot_load(&depot, out, &spare, &retries);
	ck_assert_uint_eq(n, MSIZE);
	for (uint32_t i = 0; i < MSIZE; i++)
		ck_assert_uint_eq(out[i], 10 + i);
	ck_assert_uint_ne(spare, LFPI_NIL);
	/* ... which the next store uses, with one CAS. */
	ck_assert(lfpi_depot_store(&depot, out, 3, &spare, &retries));
	ck_assert_uint_eq(spare, LFPI_NIL);
	ck_assert_uint_eq(lfpi_depot_take_one(&depot, &retries), 12);
	ck_assert_uint_eq(lfpi_depot_take_one(&depot, &retries), 11);
	ck_assert_uint_eq(lfpi_depot_take_one(&depot, &retries), 10);
	ck_assert_uint_eq(lfpi_depot_take_one(&depot, &retries), LFPI_NIL);
	ck_assert(lfpi_depot_is_empty(&depot));
}
END_TEST

/* When every magazine is in use, a store says so and keeps nothing. */
START_TEST(depot_runs_out_of_magazines)
{
	uint32_t in[MSIZE];
	uint32_t spare = LFPI_NIL, retries = 0, first, n = 0;

	depot_reset();
	for (uint32_t i = 0; i < MSIZE; i++)
		in[i] = i;
	for (int m = 0; m < MAGS; m++)
		ck_assert(lfpi_depot_store(&depot, in, 1 + m, &spare, &retries));
	ck_assert(!lfpi_depot_store(&depot, in, 1, &spare, &retries));
	first = lfpi_depot_take_all(&depot);
	ck_assert(lfpi_depot_is_empty(&depot));
	ck_assert_uint_ne(first, LFPI_NIL);
	lfpi_depot_put_back(&depot, first);
	while (lfpi_depot_take_one(&depot, &retries) != LFPI_NIL)
		n++;
	ck_assert_uint_eq(n, 1 + 2 + 3 + 4);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("stack");
	TCase *tc = tcase_create("stack");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, single_nodes_are_lifo);
	tcase_add_test(tc, chains_push_whole);
	tcase_add_test(tc, pop_all_takes_everything);
	tcase_add_test(tc, pop_bumps_tag);
	tcase_add_test(tc, concurrent_use_loses_nothing);
	tcase_add_test(tc, depot_exchanges_whole_magazines);
	tcase_add_test(tc, depot_runs_out_of_magazines);
	suite_add_tcase(s, tc);
	return test_run(s);
}
