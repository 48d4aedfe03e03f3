/*
 * tally.c: a worker's counts, summed over its lives and over the run's
 * workers. Rank 0, a leaf: calls nothing in the harness.
 */
#ifndef LFP_STRESS_TALLY_H
#define LFP_STRESS_TALLY_H

#include <stdint.h>

#include "stress.h"

/* Counts of one worker, summed over its lives. */
struct stress_tally {
	uint64_t ops;       /* pool calls and handoffs */
	uint64_t allocs;    /* objects allocated */
	uint64_t frees;     /* objects released */
	uint64_t exhausted; /* allocation calls that came back empty or short */
	uint64_t checks;    /* objects whose pattern was verified */
	uint64_t handoffs;  /* objects sent to another thread */
	uint64_t refused;   /* bad releases refused, as they must be */
	uint64_t lives;     /* threads that ran as this worker */
	uint64_t hook_allocs; /* on_alloc calls seen by this worker */
	uint64_t hook_frees;  /* on_free calls seen by this worker */
	uint64_t probes;    /* handle probes: stale, forged, others' handles */
	uint64_t stale;     /* handles of released objects tried again */
	uint64_t deferred;  /* objects released with lfp_free_deferred */
	uint64_t reads;     /* RCU read sections that checked a live object */
	uint64_t overlaps;  /* ... whose object was released meanwhile */
	uint64_t barriers;  /* lfp_barrier calls on an exhausted pool */
	uint64_t rounds;    /* idle rounds drained */
	uint64_t drained;   /* objects the drainer took in them */
	uint64_t grabbed;   /* ... of them while workers were going idle */
	uint64_t napped;    /* workers nudged inside a pool call, held there */
	uint64_t trims;     /* lfp_trim calls */
	uint64_t trimmed;   /* bytes they gave back */
	uint64_t by_mode[STRESS_NMODES]; /* operations by mode */
};


void stress_tally_add(struct stress_tally *to, const struct stress_tally *from);

#endif /* LFP_STRESS_TALLY_H */
