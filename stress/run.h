/*
 * The state of a run that the supervisor (lfpool-stress.c) and the
 * workers share: each worker's seat, its inbox and the handles it shows,
 * the idle rounds' and the trimmer's words, the slots' owner words and the
 * flag that stops the run. Data only, and the one inline test of the
 * stop flag: it calls nothing.
 */
#ifndef LFP_STRESS_RUN_H
#define LFP_STRESS_RUN_H

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "stress.h"
#include "tally.h"

#define STRESS_INBOX 256
#define STRESS_CACHELINE 64
#define STRESS_MSG 512
#define STRESS_SHOWN 4 /* handles each worker shows to the others */

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

#endif /* LFP_STRESS_RUN_H */
