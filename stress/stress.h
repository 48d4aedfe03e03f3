/*
 * lfpool-stress: the concurrent stress harness.
 *
 * Worker threads allocate, stamp, verify, hand around and release objects
 * of one pool as fast as they can, in a mix of the ways the API allows,
 * while the harness checks, on every operation, that no slot is ever live
 * twice and that nobody else wrote into a live object; at the end, with
 * every thread joined and every cache gone, it checks that every slot is
 * accounted for. The main thread supervises: it replaces threads that
 * retire, prints progress, samples memory and spots a stalled run.
 *
 * Files, from the top down; each calls only those below it (the ranks
 * at the end of this header, which stress/layers.sh checks):
 *   lfpool-stress.c  main and the supervisor
 *   worker.c         the worker threads: each life's loop, retirement
 *                    and successor
 *   ops.c            one operation: allocate, release, hand off, receive,
 *                    release a bad pointer
 *   idle.c           idle rounds: workers parked holding caches
 *   drain.c          ... while the drainer empties the pool, and the
 *                    judgment of what it got
 *   handle.c         handles: taken, checked, released, forged and kept
 *                    after release
 *   life.c           a life's beginning and end, and its explicit cache
 *   trim.c           lfp_trim racing allocation
 *   options.c        the command line parsed, knowing no mode's rules
 *   validate.c       which options go together
 *   report.c         progress, summary, JSON, resident memory
 *   exhaust.c        when running out is allowed, and LFP_EXHAUST_ABORT
 *   rcu.c            RCU readers and their registration
 * and the leaves: check.c (the invariants), bound.c (what threads can
 * keep from each other), mode.c (mode and policy names), usage.c (the
 * --help text), clock.c and tally.c.
 */
#ifndef LFP_STRESS_H
#define LFP_STRESS_H

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lfpool.h"

/* The per-thread cache API (lfp_cache_*, bulk calls) comes with this flag. */
#ifdef LFP_F_NO_CACHE
#define STRESS_HAVE_CACHES 1
#else
#define STRESS_HAVE_CACHES 0
#endif

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define STRESS_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define STRESS_SANITIZED 1
#endif
#endif
#ifndef STRESS_SANITIZED
#define STRESS_SANITIZED 0
#endif

#define STRESS_MAX_THREADS 64
#define STRESS_MAX_HOLD 4096
#define STRESS_MAX_BULK 16
#define STRESS_INBOX 256
#define STRESS_CACHELINE 64
#define STRESS_MSG 512
#define STRESS_SHOWN 4 /* handles each worker shows to the others */
#define STRESS_GRAVE 16 /* handles a life keeps of objects it released */

enum stress_mode {
	STRESS_POOL,     /* lfp_alloc/lfp_free on an LFP_F_NO_CACHE pool */
	STRESS_CACHE,    /* lfp_alloc/lfp_free through the implicit caches */
	STRESS_EXPLICIT, /* lfp_cache_alloc/lfp_cache_free */
	STRESS_BULK,     /* lfp_alloc_bulk/lfp_free_bulk */
	STRESS_HANDOFF,  /* released by another thread, sent through a queue */
	STRESS_EXIT,     /* threads retire mid-run and are replaced */
	STRESS_BAD,      /* releases of pointers the pool must refuse */
	STRESS_HANDLE,   /* handles: release by handle, stale and forged ones */
	STRESS_DEFERRED, /* lfp_free_deferred, and RCU readers of live objects */
	STRESS_IDLING,   /* workers park holding caches; one thread drains */
	STRESS_TRIM,     /* lfp_trim in a loop while the workers allocate */
	STRESS_NMODES
};

extern const char *const stress_mode_name[STRESS_NMODES]; /* mode.c */

/* The command line, read-only once the run starts. */
struct stress_opts {
	unsigned threads;
	uint64_t ops;       /* operations per worker; 0 = no limit */
	double duration;    /* seconds; 0 = no limit */
	uint64_t seed;
	uint32_t capacity;
	uint32_t obj_size;
	uint32_t hold;       /* most objects one thread holds at once */
	uint32_t cache_size; /* lfp_config.cache_size, 0 = default */
	uint32_t batch_size; /* lfp_config.batch_size, 0 = default */
	uint32_t life;       /* mean operations per thread life with exit */
	uint32_t grow;       /* max_capacity of a growing pool; 0 = fixed */
	uint32_t exhaust;    /* enum lfp_exhaust: NULL, GROW or ABORT */
	uint32_t idle_every; /* mean operations per worker between idle rounds */
	uint32_t spare_caches; /* caches made and given up before the run */
	bool strict;         /* LFP_F_STRICT */
	bool poison;         /* LFP_F_POISON */
	bool unchecked;      /* LFP_F_UNCHECKED */
	bool hooks;          /* count and check ctor, on_alloc, on_free */
	unsigned weight[STRESS_NMODES];
	char mix[160]; /* the mix, spelled out */
	bool json;
	bool progress;    /* a progress line on stderr */
	double rss_slack; /* MiB of growth allowed after warm-up; < 0: none */
	double stall;     /* seconds without an operation that fail the run */
};

/*
 * What the pattern in a live object must say: who stamped it, and when.
 * gen is the generation of its handle, or 0 in runs without handles.
 */
struct stress_mark {
	uint32_t tid;
	uint32_t slot;
	uint32_t gen;
	uint64_t seq;
};

/*
 * The first 24 bytes of a live object; the rest of it is a pattern
 * derived from the mark (stress_fill). RCU readers (rcu.c) read all but
 * the magic, which the holder overwrites when it lets the object go.
 */
struct stress_hdr {
	uint32_t magic;
	uint32_t tid;
	uint32_t slot;
	uint32_t gen;
	uint64_t seq;
};

/* An object a thread holds. */
struct stress_held {
	void *obj;
	struct stress_mark mark;
	lfp_handle handle; /* null in runs without handles */
	bool rcu; /* its handle was shown to RCU readers: release deferred */
};

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

/*
 * The functions of each file, by rank: a file calls only files of a lower
 * rank, so nothing calls back up (stress/layers.sh checks it with nm on
 * the built objects). The main file, lfpool-stress.c, is the top.
 */

/* Rank 0, the leaves: they call nothing in the harness. */

/* clock.c */
double stress_now(void);
void stress_wait_for(pthread_cond_t *cv, pthread_mutex_t *lock, long ns);

/* tally.c */
void stress_tally_add(struct stress_tally *to, const struct stress_tally *from);

/* mode.c */
bool stress_mode_enabled(const struct stress_opts *o, enum stress_mode m);
bool stress_exhaust_named(const char *name, uint32_t *exhaust);
const char *stress_exhaust_name(uint32_t exhaust);

/* usage.c */
void stress_usage(FILE *f);

/* bound.c */
uint64_t stress_bound(const struct stress_opts *o);
uint32_t stress_bound_caches(const struct stress_opts *o);

/* check.c */
bool stress_violation(struct stress_run *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
bool stress_claim(struct stress_run *r, uint32_t tid, void *obj,
		  const char *op, uint32_t *slot);
bool stress_take_over(struct stress_run *r, const struct stress_parcel *p,
		      uint32_t tid);
void stress_stamp(struct stress_run *r, void *obj,
		  const struct stress_mark *m);
bool stress_verify(struct stress_run *r, const struct stress_held *h,
		   uint32_t holder, const char *op);
bool stress_unclaim(struct stress_run *r, const struct stress_held *h,
		    uint32_t holder, const char *op);
uint64_t stress_fill(const struct stress_mark *m, size_t i);
int stress_final_checks(struct stress_run *r, const struct stress_tally *t);
void stress_hooks(struct stress_run *r, struct lfp_config *cfg);
void stress_hooks_bind(struct stress_tally *t);
bool stress_own(struct stress_run *r, uint32_t tid, void *obj, uint64_t seq,
		const char *op, struct stress_held *h);

/* Rank 1: the command line, the report, and what the modes share. */

/* options.c */
int stress_parse(int argc, char **argv, struct stress_opts *o);

/* validate.c */
int stress_validate(struct stress_opts *o);

/* report.c */
struct stress_rss {
	uint64_t start, warm, max_after_warm, end; /* bytes; 0 = not sampled */
	double warm_at;                             /* seconds */
};

uint64_t stress_rss_now(void);
void stress_progress(const struct stress_run *r, double elapsed, double rate,
		     uint64_t live);
void stress_progress_end(const struct stress_run *r);
void stress_report(const struct stress_run *r, const struct stress_tally *t,
		   const struct stress_rss *rss, double elapsed, bool ok);

/* exhaust.c */

/* A drain under way, for the report of an abort inside it. */
struct stress_drain_note {
	volatile uint64_t round, got, expect, held, capacity;
};

void stress_exhaust_setup(struct stress_run *r);
void stress_call_enter(const char *op, bool alloc);
void stress_call_leave(void);
bool stress_in_call(void);
void stress_alloc_drain(const struct stress_drain_note *n);
void stress_dry(struct stress_life *l, const char *op, uint32_t want,
		uint32_t got);
void stress_check_growth(struct stress_run *r, const char *when);

/* rcu.c */
void stress_rcu_begin(struct stress_life *l);
void stress_rcu_end(struct stress_life *l);
void stress_rcu_read(struct stress_life *l);
bool stress_rcu_room(struct stress_life *l, unsigned sixteenths);
void stress_rcu_spend(struct stress_life *l);
bool stress_rcu_wait(struct stress_life *l);

/* Rank 2: a life of a worker, and the trimmer. */

/* life.c */
void stress_life_begin(struct stress_life *l, struct stress_worker *w);
void stress_life_end(struct stress_life *l, uint64_t ops0);
void stress_life_publish(struct stress_life *l);
struct lfp_cache *stress_life_cache(struct stress_life *l);

/* trim.c */
int stress_trim_start(struct stress_run *r);
void stress_trim_join(struct stress_run *r);

/* Rank 3: the modes that act for a life. */

/* handle.c */
bool stress_handle_take(struct stress_life *l, struct stress_held *h,
			const char *op);
bool stress_handle_check(struct stress_life *l, const struct stress_held *h,
			 const char *op);
int stress_handle_free(struct stress_life *l, lfp_handle h, bool cached);
void stress_handle_bury(struct stress_life *l, const struct stress_held *h);
void stress_handle_show(struct stress_life *l, struct stress_held *h);
void stress_handle_probe(struct stress_life *l);

/* drain.c */

/* The ways the drainer allocates, and releases again. */
enum stress_way {
	STRESS_WAY_ALLOC,
	STRESS_WAY_CACHE,
	STRESS_WAY_BULK,
	STRESS_NWAYS
};

/* The state of a drain, for its messages. */
struct stress_drain {
	struct stress_life *l;
	struct stress_drain_note note;
	struct lfp_stats before;
	enum stress_way way;
	uint32_t policy;
};

void stress_drain_begin(struct stress_drain *dr, struct stress_life *l,
			uint32_t round);
bool stress_drain_grab(struct stress_drain *dr);
bool stress_drain_empty(struct stress_drain *dr);
void stress_drain_give_back(struct stress_drain *dr);

/* Rank 4: idle rounds. */

/* idle.c */
int stress_idle_setup(struct stress_run *r);
void stress_idle_step(struct stress_life *l);
void stress_idle_retire(struct stress_life *l);
void stress_idle_teardown(struct stress_run *r);

/* Rank 5: one operation of a worker. */

/* ops.c */
void stress_op_step(struct stress_life *l);
void stress_op_receive(struct stress_life *l);
bool stress_op_has_mail(struct stress_life *l);
void stress_op_drop_all(struct stress_life *l);
void stress_op_let_go(struct stress_life *l, bool give);

/* Rank 6: the workers' threads; the main file (rank 7) calls them. */

/* worker.c */
int stress_spawn(struct stress_worker *w);
uint64_t stress_live(const struct stress_run *r);

#endif /* LFP_STRESS_H */
