/* SPDX-License-Identifier: MIT */
/*
 * lfpbench: lfpool measured against the allocators and pools a user would
 * otherwise pick, on the allocation patterns of a game engine's workers.
 *
 * A contender is an allocator of 64-byte objects. A workload is a loop of
 * allocations and releases run by every thread of a run until the driver
 * says stop. The driver times a window in the middle of each run, repeats
 * every run, interleaves the contenders, and reports medians and ratios.
 */
#ifndef LFP_BENCH_H
#define LFP_BENCH_H

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define BENCH_OBJ_SIZE 64
#define BENCH_MAX_THREADS 8
#define BENCH_CACHELINE 64

/* Objects a run may hold at once, over all threads: enough for every
 * workload at BENCH_MAX_THREADS (churn: 8 x 4096 live, particles: 8 x
 * 4352 live plus mailboxes, bulk32-burst: 8 x 1024). */
#define BENCH_CAPACITY (UINT32_C(1) << 17)

enum bench_workload {
	WL_PAIR,       /* allocate, write, release */
	WL_BURST_LIFO, /* 1024 allocations, then release newest first */
	WL_BURST_SHUF, /* 1024 allocations, then release in random order */
	WL_CHURN,      /* 4096 live; release a random one, allocate anew */
	WL_HANDOFF,    /* producers allocate, consumers release */
	WL_PARTICLE,   /* frames of spawn, age, expire; some freed remotely */
	/*
	 * The bulk calls, for contenders that have them (bench_wl_bulk): n
	 * objects taken in one call, written, released in one call, which
	 * leaves a cache as full as it was; or calls of 32 until 1024 are
	 * held, then calls of 32 releasing the newest batch first, which
	 * empties and overfills a cache every round. An operation is one
	 * object.
	 */
	WL_BULK8,
	WL_BULK32,
	WL_BULK256,
	WL_BULK32_BURST,
	/*
	 * An engine with many pools (workloads_many.h): operation k goes to
	 * pool k % N, as pairs or as bursts of 256 over the N pools.
	 * Contenders with one heap run the same sequence of malloc/free.
	 */
	WL_POOLS1_PAIR,
	WL_POOLS2_PAIR,
	WL_POOLS4_PAIR,
	WL_POOLS8_PAIR,
	WL_POOLS1_BURST,
	WL_POOLS2_BURST,
	WL_POOLS4_BURST,
	WL_POOLS8_BURST,
	/* A family of size classes against malloc of the same sizes: one
	 * size (60 B), or 24/60/100/200 B in turn. */
	WL_FAM_PAIR,
	WL_FAM_BURST,
	WL_FAM_MIXED_PAIR,
	WL_FAM_MIXED_BURST,
	WL_COUNT
};

#define WL_FIRST_BULK WL_BULK8
#define WL_FIRST_MANY WL_POOLS1_PAIR
#define WL_FIRST_FAMILY WL_FAM_PAIR

struct bench_worker;
typedef void (*bench_fn)(struct bench_worker *w);

/*
 * A contender's hooks for the workloads of many pools and of families
 * (WL_FIRST_MANY and after): the roles of its own setup, teardown, enter
 * and leave, but setup is told the workload, so that it makes the pools
 * or the family the workload needs.
 */
struct bench_many {
	int (*setup)(unsigned nthreads, enum bench_workload wl);
	int (*teardown)(void);
	void *(*enter)(unsigned tid);
	void (*leave)(void *ctx);
	/* Indexed by workload; NULL where the contender does not run. */
	const bench_fn *fns;
};

/* Contender flags. */
#define CT_LOCAL_ONLY 1u /* cannot release another thread's objects */
#define CT_PRELOAD 2u    /* malloc replaced by LD_PRELOAD in a child */
#define CT_OPTIONAL 4u   /* runs only when named in --contenders */

struct bench_contender {
	const char *name;  /* column name and command-line id */
	const char *label; /* one line saying what it is */
	unsigned flags;
	/* Once per process. 0, or -1 with a reason in why (why_len bytes):
	 * the contender is then reported as unavailable. */
	int (*init)(char *why, size_t why_len);
	/* Once per run, before the threads start and after they end. */
	int (*setup)(unsigned nthreads);
	/* Non-zero if the contender found itself inconsistent after the run. */
	int (*teardown)(void);
	/* In each worker thread; the context is passed to alloc and free. */
	void *(*enter)(unsigned tid);
	void (*leave)(void *ctx);
	/* The workloads, with alloc and free inlined (workloads.h); the
	 * bulk ones (WL_FIRST_BULK ..) only where it has bulk calls. */
	const bench_fn *fns;
	/* The workloads of many pools and families; NULL: none of them. */
	const struct bench_many *many;
};

/* One ring between two threads: single producer, single consumer. */
struct bench_ring {
	alignas(BENCH_CACHELINE) _Atomic uint32_t tail; /* written by producer */
	alignas(BENCH_CACHELINE) _Atomic uint32_t head; /* written by consumer */
	alignas(BENCH_CACHELINE) _Atomic int done;      /* producer stopped */
	uint32_t mask;
	void *_Atomic *slot;
};

struct bench_run;

struct bench_worker {
	/* Completed operations, published every few dozen; read by the driver. */
	alignas(BENCH_CACHELINE) _Atomic uint64_t ops;
	struct bench_run *run;
	const struct bench_contender *ct;
	void *ctx;
	unsigned tid;
	uint64_t rng;
	uint64_t sink;      /* folds object reads so they are not optimised out */
	uint64_t overflows; /* particles freed locally: the mailbox was full */
	int failed;         /* an allocation returned NULL */
	pthread_t thread;
};

struct bench_run {
	const struct bench_contender *ct;
	enum bench_workload wl;
	unsigned nthreads;
	alignas(BENCH_CACHELINE) _Atomic int stop;
	pthread_barrier_t start; /* workers and driver */
	pthread_barrier_t end;   /* workers only */
	struct bench_ring ring[BENCH_MAX_THREADS];
	struct bench_worker w[BENCH_MAX_THREADS];
};

struct bench_result {
	double mops;       /* million operations per second of wall time */
	double cpu_ns;     /* CPU time of all workers per operation */
	uint64_t overflows;/* particle mailbox overflows (see above) */
};

#define BENCH_MAX_REPS 15

/*
 * Single-threaded measurements of the bulk calls against the single ones
 * (micro.c), in ns per handle or per object: lfp_resolve_bulk against
 * lfp_resolve in a loop, over handles in allocation order and shuffled,
 * on a pool of 148,000 and of 1,000,000 objects (and of 1,000,000 made
 * with LFP_F_HUGEPAGE); lfp_alloc_bulk/lfp_free_bulk against as many
 * lfp_alloc/lfp_free.
 */
enum bench_micro {
	MB_RES_S_ORDER_LOOP,
	MB_RES_S_ORDER_BULK,
	MB_RES_S_SHUF_LOOP,
	MB_RES_S_SHUF_BULK,
	MB_RES_L_ORDER_LOOP,
	MB_RES_L_ORDER_BULK,
	MB_RES_L_SHUF_LOOP,
	MB_RES_L_SHUF_BULK,
	MB_RES_H_SHUF_LOOP,
	MB_RES_H_SHUF_BULK,
	MB_ALLOC_SINGLE,
	MB_ALLOC_BULK,
	MB_COUNT
};

struct bench_micro_cell {
	unsigned n;
	double ns[BENCH_MAX_REPS];
};

/* The whole measurement: what ran, and every repetition of every cell. */
#define BENCH_NCT 18
#define BENCH_MAX_TCOUNTS 4

struct bench_cell {
	unsigned n;   /* repetitions that succeeded */
	unsigned bad; /* repetitions that failed */
	struct bench_result r[BENCH_MAX_REPS];
};

struct bench_table {
	const struct bench_contender *ct[BENCH_NCT];
	bool avail[BENCH_NCT];
	char why[BENCH_NCT][160];
	const char *preload[BENCH_NCT]; /* library for CT_PRELOAD rows */
	bool wl_on[WL_COUNT];
	unsigned threads[BENCH_MAX_TCOUNTS];
	unsigned ntc;
	unsigned reps, time_ms, warm_ms;
	char cpu[128];
	char date[64];
	char kernel[128];
	char load_before[64], load_after[64];
	char malloc_origin[256];
	unsigned lfp_cache_size, lfp_batch_size;
	bool lfp_many_unchecked; /* --lfp-many-unchecked */
	long ncpu;
	double seconds;
	struct bench_cell cell[BENCH_NCT][WL_COUNT][BENCH_MAX_TCOUNTS];
	struct bench_micro_cell micro[MB_COUNT];
};

/* report.c: the report, which calls the sections below; none calls it */
int bench_report(const struct bench_table *t, const char *dir);
/* report_many.c: the sections on many pools and families, if measured */
void bench_report_many(FILE *f, const struct bench_table *t);
/* report_lean.c: the bare shared list against the lean lists, if measured */
void bench_report_lean(FILE *f, const struct bench_table *t);
/* report_bulk.c: lfpool's bulk calls against rte_mempool's, if measured */
void bench_report_bulk(FILE *f, const struct bench_table *t);
/* medians.c, what every section reads: */
/* Median of field (0: Mops/s, 1: CPU ns/op) over a cell's repetitions,
 * or NAN when none succeeded. */
double bench_median(const struct bench_cell *c, int field);
/* Median of a bulk-call cell's ns per operation, or NAN. */
double bench_micro_median(const struct bench_micro_cell *c);
/* A cell's median speed: Mops/s, or with cpu operations per CPU
 * microsecond; NAN if ci < 0 or unmeasured. */
double bench_speed(const struct bench_table *t, int ci,
		   enum bench_workload wl, unsigned ti, bool cpu);
/* The index of the contender called name in t, or -1. */
int bench_find(const struct bench_table *t, const char *name);
/* raw.c: every repetition, and back */
int bench_raw_write(const struct bench_table *t, const char *path);
/* Fill t from a raw.tsv written by bench_raw_write; 0 or -1. */
int bench_load(struct bench_table *t,
	       const struct bench_contender *const all[BENCH_NCT],
	       const char *path);

/* workloads */
extern const char *const bench_wl_name[WL_COUNT];
extern const char *const bench_wl_label[WL_COUNT];
bool bench_wl_local(enum bench_workload wl); /* objects stay with a thread */
/* A workload of many pools or of families: run only when named. */
bool bench_wl_many(enum bench_workload wl);
/* A workload of the bulk calls (WL_FIRST_BULK .. WL_FIRST_MANY). */
bool bench_wl_bulk(enum bench_workload wl);
/* The pools a WL_POOLS* workload spreads its operations over, else 0. */
unsigned bench_wl_pools(enum bench_workload wl);
/* Whether ct has a loop for wl (its fns, or its many's for those). */
bool bench_wl_runs(const struct bench_contender *ct, enum bench_workload wl);

/* micro.c */
extern const char *const bench_micro_name[MB_COUNT];
extern const char *const bench_micro_label[MB_COUNT];
/* Measure every row reps times, the rows in turns; 0 or -1. */
int bench_micro_run(struct bench_table *t, unsigned reps);

/* run.c */
int bench_run_one(const struct bench_contender *ct, enum bench_workload wl,
		  unsigned nthreads, unsigned warm_ms, unsigned time_ms,
		  struct bench_result *out);


/* xorshift64*: cheap, and good enough to pick victims and orders. */
static inline uint64_t bench_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * UINT64_C(0x2545F4914F6CDD1D);
}

/* contenders, one file each */
extern const struct bench_contender bench_local;
extern const struct bench_contender bench_glibc;
extern const struct bench_contender bench_jemalloc;
extern const struct bench_contender bench_tcmalloc;
extern const struct bench_contender bench_mimalloc;
extern const struct bench_contender bench_ck;
extern const struct bench_contender bench_urcu;
extern const struct bench_contender bench_mutex;
extern const struct bench_contender bench_lfp_bare;
extern const struct bench_contender bench_lfp_implicit;
extern const struct bench_contender bench_lfp_explicit;
extern const struct bench_contender bench_lfp_unchecked;
extern const struct bench_contender bench_lfp_unchecked_implicit;
extern const struct bench_contender bench_lfp_huge;
extern const struct bench_contender bench_treiber;
extern const struct bench_contender bench_boost_freelist;
extern const struct bench_contender bench_tbbmalloc;
extern const struct bench_contender bench_rte_mempool;

/* run.c: print per-run details from the contenders (--verbose, which
 * main.c reads) */
extern int bench_verbose;

/* lfpcfg.c: lfp_config.cache_size and batch_size (0: the default) */
void bench_lfp_config(uint32_t cache_size, uint32_t batch_size);
/* The values bench_lfp_config set, for c_lfpool.c's and c_lfpmany.c's
 * pools. */
void bench_lfp_sizes(uint32_t *cache_size, uint32_t *batch_size);
/* Whether c_lfpmany.c makes its pools and families with LFP_F_UNCHECKED
 * (--lfp-many-unchecked); set before any run. */
void bench_lfp_many_unchecked(bool on);
bool bench_lfp_many_is_unchecked(void);
/* The lfp_bare row measures a checked pool (LFP_F_NO_CACHE alone). */
void bench_lfp_bare_checked(void);

/* c_lfpmany.c: lfpool's hooks for the many-pool and family workloads */
extern const struct bench_many bench_many_lfp_implicit;
extern const struct bench_many bench_many_lfp_explicit;

/* c_malloc.c: which malloc this process really calls */
const char *bench_malloc_origin(void);
bool bench_malloc_is_glibc(void);

/* A field of /proc/self/smaps_rollup in kB (e.g. "AnonHugePages"), or -1. */
long bench_rollup_kb(const char *key);

/* A memory region for the simple pools, mapped per run. */
void *bench_map(size_t size);
void bench_unmap(void *p, size_t size);

#endif /* LFP_BENCH_H */
