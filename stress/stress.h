/* SPDX-License-Identifier: MIT */
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
 * Files, from the top down; each calls only those below it, so nothing
 * calls back up (stress/layers.sh checks it, with nm on the built objects
 * and on the headers each file includes, by the ranks it lists and each
 * file's header states):
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
 *
 * Each file but the main one declares what it offers in a header of its
 * own (options.h for options.c, and so on), and includes only its own and
 * those of lower ranks. run.h holds the state of a run that the
 * supervisor and the workers share; this header, what every file shares:
 * the limits, the modes, the options and an object's mark.
 */
#ifndef LFP_STRESS_H
#define LFP_STRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* An object a thread holds. */
struct stress_held {
	void *obj;
	struct stress_mark mark;
	lfp_handle handle; /* null in runs without handles */
	bool rcu; /* its handle was shown to RCU readers: release deferred */
};

#endif /* LFP_STRESS_H */
