/* The tagged Treiber stack of chains, alone and under concurrent use. */
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
		atomic_init(&slots[i].batch_next, LFPI_NIL);
		atomic_init(&slots[i].gen, 0);
	}
	lfpi_stack_init(&stack);
}

static uint32_t pop(void)
{
	uint32_t retries;

	return lfpi_stack_pop(&stack, slots, &retries);
}

static uint32_t next(uint32_t i)
{
	return atomic_load_explicit(&slots[i].next, memory_order_relaxed);
}

static uint32_t tag(void)
{
	return (uint32_t)(atomic_load(&stack.head) >> 32);
}

START_TEST(single_slots_are_lifo)
{
	reset();
	ck_assert_uint_eq(pop(), LFPI_NIL);
	for (uint32_t i = 0; i < 5; i++)
		ck_assert_uint_eq(lfpi_stack_push(&stack, slots, i, i), 0);
	for (uint32_t i = 5; i-- > 0;) {
		ck_assert_uint_eq(pop(), i);
		ck_assert_uint_eq(next(i), LFPI_NIL);
	}
	ck_assert_uint_eq(pop(), LFPI_NIL);
}
END_TEST

START_TEST(chains_move_whole)
{
	reset();
	/* Chain A: 1 -> 2 -> 3; chain B: 7 -> 8. */
	atomic_store(&slots[1].next, 2);
	atomic_store(&slots[2].next, 3);
	atomic_store(&slots[7].next, 8);
	lfpi_stack_push(&stack, slots, 1, 3);
	lfpi_stack_push(&stack, slots, 7, 8);
	ck_assert_uint_eq(pop(), 7);
	ck_assert_uint_eq(slots[7].tail, 8);
	ck_assert_uint_eq(next(7), 8);
	ck_assert_uint_eq(next(8), LFPI_NIL);
	ck_assert_uint_eq(pop(), 1);
	ck_assert_uint_eq(slots[1].tail, 3);
	ck_assert_uint_eq(next(1), 2);
	ck_assert_uint_eq(next(2), 3);
	ck_assert_uint_eq(next(3), LFPI_NIL);
	ck_assert_uint_eq(pop(), LFPI_NIL);
}
END_TEST

/* Every removal changes the tag, pushes leave it, and it wraps cleanly. */
START_TEST(pop_bumps_tag)
{
	uint32_t t;

	reset();
	lfpi_stack_push(&stack, slots, 4, 4);
	t = tag();
	lfpi_stack_push(&stack, slots, 5, 5);
	ck_assert_uint_eq(tag(), t);
	pop();
	ck_assert_uint_eq(tag(), t + 1);
	pop();
	ck_assert_uint_eq(tag(), t + 2);
	pop(); /* empty: no removal, no bump */
	ck_assert_uint_eq(tag(), t + 2);

	atomic_store(&stack.head, (uint64_t)UINT32_MAX << 32 | LFPI_NIL);
	lfpi_stack_push(&stack, slots, 9, 9);
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
 * Threads pop chains, split them into single slots and chains of two, and
 * push them back. At the end every slot is on the stack exactly once.
 */
static void *churn(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;

	for (int n = 0; n < 20000; n++) {
		uint32_t retries, first = lfpi_stack_pop(&stack, slots, &retries);
		uint32_t tail, second;

		if (first == LFPI_NIL)
			continue;
		tail = slots[first].tail;
		second = next(first);
		if (second == LFPI_NIL || rand_r(&seed) % 2) {
			lfpi_stack_push(&stack, slots, first, tail);
		} else {
			lfpi_stack_push(&stack, slots, first, first);
			lfpi_stack_push(&stack, slots, second, tail);
		}
	}
	return NULL;
}

START_TEST(concurrent_chains_lose_nothing)
{
	pthread_t th[6];
	uint32_t seen[N] = { 0 };

	reset();
	/* Four chains of sixteen to start. */
	for (uint32_t c = 0; c < 4; c++) {
		for (uint32_t i = c * 16; i < c * 16 + 15; i++)
			atomic_store(&slots[i].next, i + 1);
		lfpi_stack_push(&stack, slots, c * 16, c * 16 + 15);
	}
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, churn,
						(void *)(uintptr_t)(i + 1)), 0);
	for (int i = 0; i < 6; i++)
		pthread_join(th[i], NULL);
	ck_assert_int_eq(lfpi_stack_walk(&stack, slots, count_slot, seen), 0);
	for (int i = 0; i < N; i++)
		ck_assert_msg(seen[i] == 1, "slot %d seen %u times", i, seen[i]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("stack");
	TCase *tc = tcase_create("stack");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, single_slots_are_lifo);
	tcase_add_test(tc, chains_move_whole);
	tcase_add_test(tc, pop_bumps_tag);
	tcase_add_test(tc, concurrent_chains_lose_nothing);
	suite_add_tcase(s, tc);
	return test_run(s);
}
