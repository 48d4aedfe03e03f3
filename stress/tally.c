/* SPDX-License-Identifier: MIT */
/*
 * The tally: adding one worker's counts (or one life's) to another's, for
 * the worker's total over its lives and the run's total over its workers.
 *
 * A leaf: calls nothing else in the harness.
 */
#include "run.h"
#include "tally.h"

void stress_tally_add(struct stress_tally *to, const struct stress_tally *from)
{
	to->ops += from->ops;
	to->allocs += from->allocs;
	to->frees += from->frees;
	to->exhausted += from->exhausted;
	to->checks += from->checks;
	to->handoffs += from->handoffs;
	to->refused += from->refused;
	to->lives += from->lives;
	to->hook_allocs += from->hook_allocs;
	to->hook_frees += from->hook_frees;
	to->probes += from->probes;
	to->stale += from->stale;
	to->deferred += from->deferred;
	to->reads += from->reads;
	to->overlaps += from->overlaps;
	to->barriers += from->barriers;
	to->rounds += from->rounds;
	to->drained += from->drained;
	to->grabbed += from->grabbed;
	to->napped += from->napped;
	to->trims += from->trims;
	to->trimmed += from->trimmed;
	for (int m = 0; m < STRESS_NMODES; m++)
		to->by_mode[m] += from->by_mode[m];
}
