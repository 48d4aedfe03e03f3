/*
 * life.c: a life, one thread's time in a worker's seat (struct
 * stress_life, which every file acting for a life reads): how it begins
 * and ends, what it shows the supervisor, and its explicit cache. Rank 2:
 * calls rcu.c and the leaves check.c, mode.c and tally.c.
 */
#ifndef LFP_STRESS_LIFE_H
#define LFP_STRESS_LIFE_H

#include <stdbool.h>
#include <stdint.h>

#include "run.h"

#define STRESS_GRAVE 16 /* handles a life keeps of objects it released */

/*
 * One thread's time in a worker's seat, shared by the files that make up
 * a worker (life.c, worker.c, ops.c and the modes that have files of
 * their own). Plain: only its thread uses it.
 */
struct stress_life {
	struct stress_run *run;
	const struct stress_opts *o;
	struct stress_worker *w;
	uint32_t tid;
	uint64_t rng;
	uint64_t seq;      /* stamps, one per allocation */
	uint64_t ops;      /* this worker's operations, over all its lives */
	uint64_t left;     /* operations until this life retires */
	uint32_t n;        /* objects held, in w->held[0 .. n) */
	uint32_t target;   /* the number of objects to hold for a while */
	uint32_t retarget; /* operations until a new target */
	unsigned bad;      /* bad releases per 64 operations */
	unsigned probe;    /* handle probes per 64 operations */
	unsigned read;     /* RCU read sections per 64 operations */
	bool handoff;
	bool handles; /* take every object's handle (handle, deferred) */
	bool rcu;     /* registered with liburcu (deferred) */
	bool idle;    /* parks for idle rounds */
	uint64_t deferred; /* slots waiting for grace periods: lfp_stats at
			      room_at, plus what we spent since (rcu.c) */
	uint64_t capacity; /* the pool's capacity at room_at */
	uint64_t room_at;  /* ops | 1 when lfp_stats was read; 0 = never */
	uint32_t idle_seen; /* the last idle round parked for or drained */
	uint64_t idle_next; /* the drainer: ops at which to begin the next */
	bool idle_hello;    /* said which thread to nudge */
	uint32_t graves; /* handles put in grave[], ever */
	lfp_handle grave[STRESS_GRAVE]; /* the latest ones released */
	struct lfp_cache *cache; /* the explicit cache, made on first use */
	struct stress_tally t;
};

/* xorshift64*: fast, and plenty for choosing what to do next. */
static inline uint64_t stress_rand(struct stress_life *l)
{
	uint64_t x = l->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	l->rng = x;
	return x * UINT64_C(0x2545f4914f6cdd1d);
}

/* Uniform in [0, n). */
static inline uint32_t stress_below(struct stress_life *l, uint32_t n)
{
	return (uint32_t)((stress_rand(l) >> 32) * n >> 32);
}

void stress_life_begin(struct stress_life *l, struct stress_worker *w);
void stress_life_end(struct stress_life *l, uint64_t ops0);
void stress_life_publish(struct stress_life *l);
struct lfp_cache *stress_life_cache(struct stress_life *l);

#endif /* LFP_STRESS_LIFE_H */
