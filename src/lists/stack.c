/* SPDX-License-Identifier: MIT */
/*
 * The lock-free stack: a Treiber stack of nodes named by 32-bit indices.
 * It holds free slots (linked through their metadata) and the depot's
 * magazines (linked through their headers): each user says where node i's
 * `next` word is, and nothing here knows what a node is.
 *
 * The head is one 64-bit word, {tag:32 | index:32}. A pusher may push a
 * chain of nodes it linked beforehand, with one CAS; a popper takes one
 * node, or every node at once. Every removal bumps the tag, so a popper
 * that read a stale `next` fails its CAS (the ABA problem). Pushes need
 * not: a push only links its chain to whatever the head is, and a stale
 * head makes its CAS fail.
 *
 * The lowest of the lists: calls nothing of lfpool's.
 */
#include "lists/stack.h"

#ifdef LFPI_FAULT_DOUBLE_PUSH
/*
 * Test-only fault, built only into the deliberately broken copy of the
 * library that the stress harness's negative test runs against (never
 * into liblfpool): every 64th push pushes its chain a second time, which
 * links the chain into a cycle and hands its nodes out twice.
 */
static _Atomic(uint32_t) stack_fault_pushes;
#define STACK_FAULT_DUE()                                                      \
	(atomic_fetch_add_explicit(&stack_fault_pushes, 1,                     \
				   memory_order_relaxed) % 64 == 63)
#else
#define STACK_FAULT_DUE() false
#endif

/* Test-only faults, built only into tests/relacy's check: a pop, or the
 * taking of the whole stack, keeps the tag (the ABA problem), and the
 * check must catch each. Each macro's value is an expression that says
 * whether its fault is on: the check turns one on at a time. */
#ifdef LFPI_FAULT_POP_KEEPS_TAG
#define STACK_POP_TAG_STEP (LFPI_FAULT_POP_KEEPS_TAG ? 0u : 1u)
#else
#define STACK_POP_TAG_STEP 1u
#endif
#ifdef LFPI_FAULT_POP_ALL_KEEPS_TAG
#define STACK_POP_ALL_TAG_STEP (LFPI_FAULT_POP_ALL_KEEPS_TAG ? 0u : 1u)
#else
#define STACK_POP_ALL_TAG_STEP 1u
#endif

static inline uint64_t stack_pack(uint32_t tag, uint32_t idx)
{
	return (uint64_t)tag << 32 | idx;
}

static inline uint32_t stack_idx(uint64_t head)
{
	return (uint32_t)head;
}

static inline uint32_t stack_tag(uint64_t head)
{
	return (uint32_t)(head >> 32);
}

void lfpi_stack_init(struct lfpi_stack *s, void *link0, size_t stride)
{
	atomic_init(&s->head, stack_pack(0, LFPI_NIL));
	s->links = (char *)link0;
	s->stride = stride;
}

uint32_t lfpi_stack_push(struct lfpi_stack *s, uint32_t first, uint32_t last)
{
	uint64_t old = atomic_load_explicit(&s->head, memory_order_relaxed);
	_Atomic(uint32_t) *tail = lfpi_stack_next(s, last);
	uint32_t retries = 0;

	for (;;) {
		/* Only this thread touches `last` until the CAS publishes it. */
		atomic_store_explicit(tail, stack_idx(old), memory_order_relaxed);
		/*
		 * Release: publishes the chain's links and whatever the pusher
		 * wrote into its nodes (the objects, a magazine's indices).
		 * Pairs with the acquire load and CAS in lfpi_stack_pop (and
		 * in lfpi_bare_alloc, lfpool.h's inline pop of a bare pool's
		 * free list) and the acquire CAS in lfpi_stack_pop_all.
		 */
		if (atomic_compare_exchange_weak_explicit(
			    &s->head, &old, stack_pack(stack_tag(old), first),
			    memory_order_release, memory_order_relaxed))
			break;
		retries++;
	}
	if (STACK_FAULT_DUE())
		retries += lfpi_stack_push(s, first, last);
	return retries;
}

uint32_t lfpi_stack_pop(struct lfpi_stack *s, uint32_t *retries)
{
	/* Acquire: pairs with the release CAS in lfpi_stack_push (and in
	 * lfpi_bare_free, lfpool.h's inline push), so the `next` we read
	 * below is the one its pusher wrote. */
	uint64_t old = atomic_load_explicit(&s->head, memory_order_acquire);
	uint32_t n = 0, top, below;

	for (;;) {
		top = stack_idx(old);
		if (top == LFPI_NIL)
			break;
		/*
		 * Another thread may pop `top` and push it again while we read
		 * this, so `below` may be stale. That is harmless: the pop
		 * bumped the tag, the head no longer equals `old`, and the CAS
		 * below fails.
		 */
		below = atomic_load_explicit(lfpi_stack_next(s, top),
					     memory_order_relaxed);
		/*
		 * Acquire on failure: the new `old` is read the same way as
		 * the first load. On success we own the node, and what its
		 * pusher wrote before the release CAS is ours to read through
		 * the acquire that read `old` (the tag makes each head value
		 * written once, so the CAS read the same store); the success
		 * order is acquire because C11 allows no failure order
		 * stronger than it, and for a pop preempted while the 32-bit
		 * tag wraps, whose CAS then reads another store of the same
		 * value. tests/relacy/lists.cc shows the rest.
		 */
		if (atomic_compare_exchange_weak_explicit(
			    &s->head, &old,
			    stack_pack(stack_tag(old) + STACK_POP_TAG_STEP, below),
			    memory_order_acquire, memory_order_acquire))
			break;
		n++;
	}
	*retries += n;
	return top;
}

uint32_t lfpi_stack_pop_all(struct lfpi_stack *s)
{
	uint64_t old = atomic_load_explicit(&s->head, memory_order_relaxed);

	/*
	 * A removal like any other: bump the tag, or a popper that read the
	 * old head before us could succeed against a head that was emptied
	 * and refilled with the same top. Acquire: pairs with the release
	 * CAS in lfpi_stack_push; we now own every node. Release: a popper
	 * that sees the emptied head (its acquire load) also sees what we
	 * wrote before, such as lfp_trim's odd trim_seq.
	 */
	while (stack_idx(old) != LFPI_NIL &&
	       !atomic_compare_exchange_weak_explicit(
		       &s->head, &old,
		       stack_pack(stack_tag(old) + STACK_POP_ALL_TAG_STEP,
				  LFPI_NIL),
		       memory_order_acq_rel, memory_order_relaxed))
		;
	return stack_idx(old);
}

bool lfpi_stack_is_empty(struct lfpi_stack *s)
{
	/* Relaxed: a hint; callers act only on what they pop. */
	return stack_idx(atomic_load_explicit(&s->head, memory_order_relaxed)) ==
	       LFPI_NIL;
}

int lfpi_stack_walk(struct lfpi_stack *s, int (*fn)(uint32_t idx, void *arg),
		    void *arg)
{
	uint32_t i;
	int r;

	/* Acquire: pairs with the release CAS in lfpi_stack_push, as in pop. */
	i = stack_idx(atomic_load_explicit(&s->head, memory_order_acquire));
	for (; i != LFPI_NIL;
	     i = atomic_load_explicit(lfpi_stack_next(s, i), memory_order_relaxed))
		if ((r = fn(i, arg)))
			return r;
	return 0;
}
