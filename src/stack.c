/*
 * The shared free list: a Treiber stack of chains of free slots.
 *
 * The head is one 64-bit word, {tag:32 | index:32}, where index is the first
 * slot of the top chain. A chain is any number of slots linked by `next`;
 * the chains on the stack are linked through `batch_next` of their first
 * slots (a list of lists, as in folly's IndexedMemPool and DPDK's chain
 * push). A thread cache pushes or pops a whole chain with one CAS; a single
 * object is a chain of one.
 *
 * Every pop bumps the tag. Pushes need not: a push only links the new chain
 * to whatever the head is, and a stale head makes its CAS fail.
 */
#include "internal.h"

#ifdef LFPI_FAULT_DOUBLE_PUSH
/*
 * Test-only fault, built only into the deliberately broken copy of the
 * library that the stress harness's negative test runs against (never
 * into liblfpool): every 64th push pushes its chain a second time, which
 * links the chain into a cycle and hands its slots out twice.
 */
static _Atomic uint32_t stack_fault_pushes;
#define STACK_FAULT_DUE()                                                      \
	(atomic_fetch_add_explicit(&stack_fault_pushes, 1,                     \
				   memory_order_relaxed) % 64 == 63)
#else
#define STACK_FAULT_DUE() false
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

void lfpi_stack_init(struct lfpi_stack *s)
{
	atomic_init(&s->head, stack_pack(0, LFPI_NIL));
}

uint32_t lfpi_stack_push(struct lfpi_stack *s, struct lfpi_slot *slots,
			 uint32_t first, uint32_t last)
{
	uint64_t old = atomic_load_explicit(&s->head, memory_order_relaxed);
	uint32_t retries = 0;

	slots[first].tail = last;
	atomic_store_explicit(&slots[last].next, LFPI_NIL, memory_order_relaxed);
	for (;;) {
		/* Only this thread touches `first` until the CAS publishes it. */
		atomic_store_explicit(&slots[first].batch_next, stack_idx(old),
				      memory_order_relaxed);
		/*
		 * Release: publishes the chain's links and the user's last
		 * writes to these objects. Pairs with the acquire load and the
		 * acquire CAS in lfpi_stack_pop.
		 */
		if (atomic_compare_exchange_weak_explicit(
			    &s->head, &old, stack_pack(stack_tag(old), first),
			    memory_order_release, memory_order_relaxed))
			break;
		retries++;
	}
	if (STACK_FAULT_DUE())
		retries += lfpi_stack_push(s, slots, first, last);
	return retries;
}

uint32_t lfpi_stack_pop(struct lfpi_stack *s, struct lfpi_slot *slots,
			uint32_t *retries)
{
	/* Acquire: pairs with the release CAS in lfpi_stack_push, so the
	 * batch_next we read below is the one its pusher wrote. */
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
		below = atomic_load_explicit(&slots[top].batch_next,
					     memory_order_relaxed);
		/*
		 * Acquire on success: we now own the chain and read its next
		 * links and objects, written before the pusher's release CAS.
		 * Acquire on failure too: the new `old` is read the same way
		 * as the first load.
		 */
		if (atomic_compare_exchange_weak_explicit(
			    &s->head, &old, stack_pack(stack_tag(old) + 1, below),
			    memory_order_acquire, memory_order_acquire))
			break;
		n++;
	}
	*retries = n;
	return top;
}

uint32_t lfpi_stack_pop_all(struct lfpi_stack *s)
{
	uint64_t old = atomic_load_explicit(&s->head, memory_order_relaxed);

	/*
	 * A removal like any other: bump the tag, or a popper that read the
	 * old head before us could succeed against a head that was emptied
	 * and refilled with the same top. Acquire: pairs with the release
	 * CAS in lfpi_stack_push; we now own every chain. Release: a popper
	 * that sees the emptied head (its acquire load) also sees what we
	 * wrote before, such as lfp_trim's odd trim_seq.
	 */
	while (stack_idx(old) != LFPI_NIL &&
	       !atomic_compare_exchange_weak_explicit(
		       &s->head, &old, stack_pack(stack_tag(old) + 1, LFPI_NIL),
		       memory_order_acq_rel, memory_order_relaxed))
		;
	return stack_idx(old);
}

bool lfpi_stack_is_empty(struct lfpi_stack *s)
{
	/* Relaxed: a hint for lfp_trim, which acts only on what it pops. */
	return stack_idx(atomic_load_explicit(&s->head, memory_order_relaxed)) ==
	       LFPI_NIL;
}

int lfpi_stack_walk(struct lfpi_stack *s, struct lfpi_slot *slots,
		    int (*fn)(uint32_t idx, void *arg), void *arg)
{
	uint32_t chain, i;
	int r;

	/* Acquire: pairs with the release CAS in lfpi_stack_push, as in pop. */
	chain = stack_idx(atomic_load_explicit(&s->head, memory_order_acquire));
	for (; chain != LFPI_NIL;
	     chain = atomic_load_explicit(&slots[chain].batch_next,
					  memory_order_relaxed))
		for (i = chain; i != LFPI_NIL;
		     i = atomic_load_explicit(&slots[i].next, memory_order_relaxed))
			if ((r = fn(i, arg)))
				return r;
	return 0;
}
