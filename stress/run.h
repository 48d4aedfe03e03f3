/* SPDX-License-Identifier: MIT */
/*
 * The state of a run that the supervisor (lfpool-stress.c) and the
 * workers share: each worker's seat, its inbox, its counts and the
 * handles it shows; the idle rounds' and the trimmer's words; the slots'
 * owner words and the flag that stops the run; and a life, one thread's
 * time in a seat, with its random stream. Data and three inline
 * functions that call nothing: every file of the harness may include it.
 */
#ifndef LFP_STRESS_RUN_H
#define LFP_STRESS_RUN_H

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "stress.h"

#define STRESS_INBOX 256
#define STRESS_CACHELINE 64
#define STRESS_MSG 512
#define STRESS_SHOWN 4 /* handles each worker shows to the others */
#define STRESS_GRAVE 16 /* handles a life keeps of objects it released */

/* An object in transit to another thread. */
struct stress_parcel {
	struct stress_held h;
	uint32_t from; /* the sender's thread id: the slot's owner word */
};

/*
 * Objects sent to one worker. A mutex is enough: the queue is the
 * harness's, not the pool's, and the sender only tries the lock.
 */
struct stress_inbox {
	pthread_mutex_t lock;
	uint32_t head;  /* under lock */
	uint32_t count; /* under lock */
	_Atomic uint32_t seen; /* count, for the progress line */
	struct stress_parcel ring[STRESS_INBOX];
};

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


enum stress_state { STRESS_IDLE, STRESS_RUNNING, STRESS_DONE };

/*
 * One worker: a seat that successive threads ("lives") occupy when the
 * exit mode retires them. A retiring life starts its successor, which
 * joins it; the supervisor joins the last. Whatever survives a life (the
 * inbox, the held array, an explicit cache left to the successor) lives
 * here. Plain fields pass from life to life through pthread_create and
 * pthread_join, and to the supervisor through state.
 */
struct stress_worker {
	struct stress_run *run;
	unsigned index;
	bool started;              /* the supervisor started a first life */
	pthread_t thread;          /* the current life, written by itself */
	pthread_t pred;            /* the life that started this one */
	bool has_pred;
	bool quiet;                /* done sending; set in the final life */
	struct lfp_cache *bequest; /* explicit cache left to the next life */
	struct stress_held *held;  /* o->hold entries, empty between lives */
	struct stress_tally tally; /* read by the supervisor after a join */
	double done_at;            /* when the last life finished */
	uint32_t parked_with;      /* objects held when parked (idle lock) */
	pthread_t idler;           /* the life that parks, to signal (idle
				      lock) */
	bool idler_known;

	/* Progress, written by the current life, read by the supervisor. */
	alignas(STRESS_CACHELINE) _Atomic uint64_t ops;
	_Atomic uint32_t holding;
	_Atomic int state; /* enum stress_state, DONE after the last life */

	alignas(STRESS_CACHELINE) struct stress_inbox inbox;

	/*
	 * Handles of objects this worker holds, shown to the others: written
	 * by the current life only, read by any (handle.c, rcu.c); 0 = none.
	 * A shown handle may go stale at any time.
	 */
	alignas(STRESS_CACHELINE) _Atomic uint64_t shown[STRESS_SHOWN];
};

enum stress_stop { STRESS_GO, STRESS_STOP, STRESS_ABORT };

/*
 * Idle rounds (idle.c). Worker 0 is the drainer: now and then it begins
 * a round and starts taking objects, a starving thread while the others
 * still work; every other worker parks on the condition variable when it
 * sees that, between two operations, holding its objects and its caches.
 * Once all are parked the drainer empties the pool, gives everything
 * back and ends the round. A worker done with its operations parks for
 * good; the drainer, once done, waits for all to be, drains a last time
 * and ends the rounds.
 */
struct stress_idle {
	pthread_mutex_t lock;
	pthread_cond_t parked_cv; /* the drainer waits here for the workers */
	pthread_cond_t resume_cv; /* the workers wait here for the round end */
	_Atomic uint32_t taking;  /* the round the drainer has begun */
	_Atomic unsigned parked_hint; /* parked, for the drainer's loop */
	uint32_t done;            /* rounds ended (lock) */
	unsigned parked; /* workers parked since the last round ended (lock) */
	unsigned final;  /* ... of them, parked for good (lock) */
	bool over;       /* no more rounds (lock) */
	bool nudge;      /* signals keep threads' TLS (idle_signals_keep_tls) */
	struct stress_held *held; /* what the drainer took, r->slots entries */
	uint64_t *since; /* the drainer's: each worker's ops at the last round */
	uint64_t gap;    /* ... and the ops each must do before the next */
};

/* The lfp_trim thread (trim.c). */
struct stress_trimmer {
	_Atomic bool on; /* cleared once every worker is done */
	bool started;
	pthread_t thread;
	struct stress_tally tally; /* trims; the first touch's objects */
};

struct stress_run {
	const struct stress_opts *o;
	struct lfp_pool *pool;
	uint32_t slots; /* the most slots the pool can have */
	/* One owner word per slot: the id of the thread holding it, or 0. */
	_Atomic uint32_t *owner;
	/* Per slot: whether it was ever handed out (the ctor's check). */
	_Atomic uint8_t *touched;
	struct stress_worker *w;
	/* Cumulative weights of the allocation and release choices. */
	unsigned alloc_cum[STRESS_NMODES], release_cum[STRESS_NMODES];
	unsigned alloc_total, release_total;

	/* Read on every operation: a line of its own. */
	alignas(STRESS_CACHELINE) _Atomic int stop; /* enum stress_stop */
	_Atomic bool gate; /* opened once every first life has started */

	alignas(STRESS_CACHELINE) _Atomic uint32_t next_tid;
	_Atomic uint64_t exits; /* lives that retired */
	_Atomic unsigned quiet; /* workers that will send nothing more */
	_Atomic uint64_t hook_ctors;
	_Atomic uint64_t hook_strays; /* hooks run outside any life */
	_Atomic unsigned violations;
	_Atomic bool have_msg; /* violation[] holds the first one */
	char violation[STRESS_MSG];

	/*
	 * With trim or LFP_EXHAUST_ABORT the pool is sized so that it
	 * cannot run dry (exhaust.c): the threads hold and park at most
	 * bound slots (bound.c), fewer than its capacity, so every failed
	 * allocation is a violation.
	 */
	bool never_dry;
	uint64_t bound;
	struct stress_idle idle;
	struct stress_trimmer trim;
};

/* Whether a violation stopped the run. Relaxed: the flag only says when
 * to stop; nothing rides on it. */
static inline bool stress_aborted(const struct stress_run *r)
{
	return atomic_load_explicit(&r->stop, memory_order_relaxed) ==
	       STRESS_ABORT;
}

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

#endif /* LFP_STRESS_RUN_H */
