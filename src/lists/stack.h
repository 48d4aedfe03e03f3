/* SPDX-License-Identifier: MIT */
/*
 * The lists layer (lists/, above base/, below memory/): the lock-free
 * stack.
 * A Treiber stack of nodes named by 32-bit indices, whose `next` words
 * live wherever its user keeps them (a slot's metadata, a magazine's
 * header). Calls nothing of lfpool's.
 */
#ifndef LFPOOL_STACK_H
#define LFPOOL_STACK_H

#include "base/base.h"

struct lfpi_stack {
	/* {tag:32 | index:32}: the top node, LFPI_NIL if empty. */
	alignas(LFPI_CACHELINE) _Atomic(uint64_t) head;
	/* Read-only after lfpi_stack_init: node i's next word is at
	 * links + i * stride. */
	char *links;
	size_t stride;
};

static inline _Atomic(uint32_t) *lfpi_stack_next(const struct lfpi_stack *s,
						uint32_t i)
{
	return (_Atomic(uint32_t) *)(s->links + (size_t)i * s->stride);
}

/* An empty stack whose node 0's next word is at link0, node i's at
 * link0 + i * stride. */
void lfpi_stack_init(struct lfpi_stack *s, void *link0, size_t stride);
/*
 * Push the chain first -> ... -> last, linked through next by the caller
 * (last's next is overwritten), with one successful CAS. Returns the
 * number of failed CAS.
 */
uint32_t lfpi_stack_push(struct lfpi_stack *s, uint32_t first, uint32_t last);
/* Pop one node, or LFPI_NIL if the stack is empty; adds the failed CAS
 * to *retries. */
uint32_t lfpi_stack_pop(struct lfpi_stack *s, uint32_t *retries);
/* Take every node at once: returns the top one (follow next to LFPI_NIL)
 * or LFPI_NIL. */
uint32_t lfpi_stack_pop_all(struct lfpi_stack *s);
/* Whether the stack looked empty a moment ago. */
bool lfpi_stack_is_empty(struct lfpi_stack *s);
/*
 * Call fn on every node, top first, until fn returns non-zero (which is
 * returned). Only while no thread changes the stack; fn must stop the
 * walk if it sees a node twice (a cycle).
 */
int lfpi_stack_walk(struct lfpi_stack *s, int (*fn)(uint32_t idx, void *arg),
		    void *arg);

#endif /* LFPOOL_STACK_H */
