/* SPDX-License-Identifier: MIT */
/*
 * jobs: a small job system on one lfpool pool, with payloads in a family.
 *
 * A fixed set of workers runs a tree of jobs. Each worker owns an explicit
 * cache of the pool. A job is allocated through the cache of whichever
 * worker creates it and released through the cache of whichever worker
 * finishes it, often another one. Jobs name each other by handle, never
 * by pointer: a child names its parent (its continuation) by handle, and
 * the queue carries handles. When the pool is full a job does its child's
 * work inline instead of spawning it: exhaustion is a normal state.
 *
 * Each job also carries a payload, its input, of 24 to 1024 bytes: the
 * payloads come from a family of six size classes (32 .. 1024 bytes),
 * allocated by the job's creator with lfp_family_alloc and released by
 * whichever worker finishes the job with lfp_family_free, which finds the
 * class from the address alone. A job's value is read from its payload,
 * and every byte of the payload is checked when the job runs. When the
 * payload's class is full the child is done inline too, while jobs of
 * other sizes still spawn.
 *
 * Every job adds a value to its parent when its whole subtree is done, so
 * the root ends up with the sum over the tree, which must match the sum
 * computed without any threads. Workers also keep the handles of jobs they
 * released and try them again later: every one must be detected as stale
 * (resolve gives NULL, release by handle gives -ESTALE), even when its
 * slot already holds a new job. Any broken invariant makes the program
 * exit non-zero.
 *
 * Uses only the public API of lfpool.
 *
 * To build it against an installed lfpool, in the directory that holds
 * it, <prefix>/share/doc/lfpool/examples (or a copy):
 *
 *   cc -O2 -pthread -o jobs jobs.c $(pkg-config --cflags --libs lfpool)
 *
 * or with CMake, whose project in cmake/ there builds every example:
 *
 *   cmake -S cmake -B build -DCMAKE_PREFIX_PATH=<prefix>
 *   cmake --build build --target jobs
 *
 * Where the dynamic linker does not search <prefix>/lib, run the program
 * pkg-config's line built with LD_LIBRARY_PATH=<prefix>/lib (CMake's has
 * a run path).
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lfpool.h"

#define MAX_WORKERS 64
#define GRAVE 64 /* released handles a worker keeps, to try again */
#define PAYLOAD_MAX 1024

/* A job's input, of payload_size(node) bytes: the header, then a fill
 * that says which job it belongs to. */
struct payload {
	uint64_t node;
	uint64_t value;
	uint32_t size;
	unsigned char fill[]; /* fill[i] = fill_byte(node, i) */
};

static const size_t payload_classes[] = { 32, 64, 128, 256, 512,
					  PAYLOAD_MAX };
#define NCLASSES (sizeof(payload_classes) / sizeof(payload_classes[0]))

struct job {
	lfp_handle self;
	lfp_handle parent;        /* continuation; null for the root */
	_Atomic uint32_t pending; /* children not done, + 1 until it ran */
	uint32_t depth;
	uint32_t creator;         /* worker that allocated it */
	uint64_t node;            /* position in the tree: root 1 */
	_Atomic uint64_t sum;     /* its value plus its finished subtrees */
	struct payload *payload;  /* from the family */
};

struct worker {
	pthread_t thread;
	unsigned id;
	struct lfp_cache *cache; /* this worker's own slots, no sharing */
	lfp_handle grave[GRAVE];
	unsigned graves;
	uint64_t run, created, inlined, payload_full, released,
		released_elsewhere;
	uint64_t stale_tries, stale_caught, bad;
	uint64_t sink; /* keeps the busy work from being optimised out */
};

static struct {
	unsigned workers, depth, fanout, capacity, work, payloads;
	bool quiet;
	struct lfp_pool *pool;
	struct lfp_family *family; /* the payloads */
	struct worker w[MAX_WORKERS];
	/* The run queue: a stack of handles under a lock. */
	pthread_mutex_t lock;
	pthread_cond_t ready;
	lfp_handle *ring;
	uint32_t head, count;
	bool done;
	uint64_t result;
} js;

static uint64_t node_value(uint64_t node)
{
	node ^= node >> 33;
	node *= UINT64_C(0xff51afd7ed558ccd);
	node ^= node >> 33;
	return node & 0xffff;
}

/* Payloads spread over the classes evenly: a class from the node, then a
 * size within it (at least the header). */
static size_t payload_size(uint64_t node)
{
	uint64_t h = node_value(node * 31 + 7);
	unsigned c = (unsigned)(h % NCLASSES);
	size_t lo = c ? payload_classes[c - 1] + 1 : sizeof(struct payload);
	size_t hi = payload_classes[c];

	return lo + (size_t)(h >> 3) % (hi - lo + 1);
}

static unsigned char fill_byte(uint64_t node, size_t i)
{
	return (unsigned char)(node * 131 + i);
}

/* The sum over the subtree at node, without threads or the pool. */
static uint64_t subtree_sum(uint64_t node, unsigned depth)
{
	uint64_t s = node_value(node);

	if (depth < js.depth)
		for (unsigned i = 0; i < js.fanout; i++)
			s += subtree_sum(node * js.fanout + i,
					 depth + 1);
	return s;
}

/* ---- the queue --------------------------------------------------------- */

static void queue_push(lfp_handle h)
{
	pthread_mutex_lock(&js.lock);
	/* Never full: every queued job is live, and the pool holds them. */
	js.ring[(js.head + js.count++) % js.capacity] = h;
	pthread_cond_signal(&js.ready);
	pthread_mutex_unlock(&js.lock);
}

/* The next job's handle, or the null handle once the root is done. */
static lfp_handle queue_pop(void)
{
	lfp_handle h = LFP_NULL_HANDLE;

	pthread_mutex_lock(&js.lock);
	while (!js.count && !js.done)
		pthread_cond_wait(&js.ready, &js.lock);
	/* Newest first: the tree is walked depth first, which keeps the
	 * number of jobs alive at once small. */
	if (js.count)
		h = js.ring[(js.head + --js.count) % js.capacity];
	pthread_mutex_unlock(&js.lock);
	return h;
}

static void finish_all(uint64_t result)
{
	pthread_mutex_lock(&js.lock);
	js.result = result;
	js.done = true;
	pthread_cond_broadcast(&js.ready);
	pthread_mutex_unlock(&js.lock);
}

/* ---- jobs in the pool --------------------------------------------------- */

/*
 * A worker gets and returns job memory through its own cache: most calls
 * touch no shared word at all. A job released here may have been
 * allocated by any worker, into any cache.
 */
static struct job *job_alloc(struct worker *me)
{
	return lfp_cache_alloc(me->cache);
}

static int job_release(struct worker *me, lfp_handle h)
{
	return lfp_cache_free_handle(me->cache, h);
}

/*
 * A payload comes from the smallest class of the family that holds it,
 * through the calling thread's implicit cache of that class; a worker
 * could as well keep an explicit cache per class (lfp_family_pool) and
 * pick one with lfp_family_class. NULL if that class is full.
 */
static struct payload *payload_new(uint64_t node)
{
	size_t size = payload_size(node);
	struct payload *p = lfp_family_alloc(js.family, size);

	if (!p)
		return NULL;
	p->node = node;
	p->value = node_value(node);
	p->size = (uint32_t)size;
	for (size_t i = 0; i < size - sizeof(*p); i++)
		p->fill[i] = fill_byte(node, i);
	return p;
}

/* Whether the payload is whole: no other job's bytes in it. */
static bool payload_ok(const struct payload *p, uint64_t node)
{
	if (p->node != node || p->size != payload_size(node))
		return false;
	for (size_t i = 0; i < p->size - sizeof(*p); i++)
		if (p->fill[i] != fill_byte(node, i))
			return false;
	return true;
}

static lfp_handle job_new(struct worker *me, lfp_handle parent,
			  uint64_t node, uint32_t depth)
{
	struct job *j = job_alloc(me);

	if (!j)
		return LFP_NULL_HANDLE;
	if (!(j->payload = payload_new(node))) {
		me->payload_full++;
		if (lfp_cache_free(me->cache, j) != 0)
			me->bad++;
		return LFP_NULL_HANDLE;
	}
	j->self = lfp_handle_of(js.pool, j);
	j->parent = parent;
	atomic_init(&j->pending, 1);
	atomic_init(&j->sum, 0); /* its own value comes from the payload */
	j->depth = depth;
	j->creator = me->id;
	j->node = node;
	me->created++;
	return j->self;
}

/* A released handle must stay dead, whoever owns its slot now. */
static void try_the_dead(struct worker *me)
{
	lfp_handle h = me->grave[me->run % GRAVE];

	if (lfp_handle_is_null(h))
		return;
	me->stale_tries++;
	if (lfp_resolve(js.pool, h) == NULL &&
	    lfp_cache_free_handle(me->cache, h) == -ESTALE)
		me->stale_caught++;
	else
		me->bad++;
}

/*
 * Release a finished job and pass its sum to its continuation, which may
 * finish in turn. Acq_rel on pending: each child's release publishes its
 * sum; the child that brings pending to 0 acquires all the others'.
 */
static void job_finish(struct worker *me, struct job *j)
{
	for (;;) {
		lfp_handle self = j->self, parent = j->parent;
		uint64_t sum = atomic_load_explicit(&j->sum,
						    memory_order_relaxed);

		me->released_elsewhere += j->creator != me->id;
		/* Perhaps another worker's allocation, in any class: the
		 * family finds the class from the address. */
		if (lfp_family_free(js.family, j->payload) != 0)
			me->bad++;
		if (job_release(me, self) != 0)
			me->bad++;
		me->released++;
		me->grave[me->graves++ % GRAVE] = self;
		if (lfp_handle_is_null(parent)) {
			finish_all(sum);
			return;
		}
		/* A parent outlives its children: its handle must resolve. */
		if (!(j = lfp_resolve(js.pool, parent))) {
			me->bad++;
			return;
		}
		atomic_fetch_add_explicit(&j->sum, sum, memory_order_relaxed);
		if (atomic_fetch_sub_explicit(&j->pending, 1,
					      memory_order_acq_rel) != 1)
			return;
	}
}

/* Spawn the children, or do their work inline if the pool is full. */
static void job_run(struct worker *me, struct job *j)
{
	uint64_t x = j->node;

	me->run++;
	if (!payload_ok(j->payload, j->node))
		me->bad++;
	atomic_fetch_add_explicit(&j->sum, j->payload->value,
				  memory_order_relaxed);
	for (unsigned i = 0; i < js.work; i++) /* the job's own work */
		x = x * UINT64_C(6364136223846793005) + 1442695040888963407u;
	me->sink ^= x;
	for (unsigned i = 0; j->depth < js.depth && i < js.fanout; i++) {
		uint64_t child = j->node * js.fanout + i;
		lfp_handle h;

		atomic_fetch_add_explicit(&j->pending, 1, memory_order_relaxed);
		h = job_new(me, j->self, child, j->depth + 1);
		if (!lfp_handle_is_null(h)) {
			queue_push(h);
			continue;
		}
		me->inlined++;
		atomic_fetch_add_explicit(&j->sum,
					  subtree_sum(child, j->depth + 1),
					  memory_order_relaxed);
		atomic_fetch_sub_explicit(&j->pending, 1, memory_order_relaxed);
	}
	/* Our own run is done: drop the 1 that kept the job alive. */
	if (atomic_fetch_sub_explicit(&j->pending, 1, memory_order_acq_rel) ==
	    1)
		job_finish(me, j);
}

static void *worker_main(void *arg)
{
	struct worker *me = arg;
	lfp_handle h;

	while (!lfp_handle_is_null(h = queue_pop())) {
		/* A queued job is live until it runs: this must resolve. */
		struct job *j = lfp_resolve(js.pool, h);

		if (!j || j->self.bits != h.bits) {
			me->bad++;
			continue;
		}
		job_run(me, j);
		try_the_dead(me);
	}
	return NULL;
}

/* ---- setup, run, check -------------------------------------------------- */

static void usage(FILE *f)
{
	fputs("usage: jobs [--workers N] [--depth N] [--fanout N]\n"
	      "            [--capacity N] [--payloads N] [--work N] [--quiet]\n"
	      "            [--help]\n"
	      "Runs a tree of jobs on worker threads; jobs live in one\n"
	      "lock-free pool and name each other by generational handle,\n"
	      "and their payloads, of 24 to 1024 bytes, live in a family of\n"
	      "six size classes.\n"
	      "  --workers N   worker threads, 1..64 (default 4)\n"
	      "  --depth N     levels below the root, 0..12 (default 7)\n"
	      "  --fanout N    children per job, 1..8 (default 4)\n"
	      "  --capacity N  jobs the pool holds at once (default 48)\n"
	      "  --payloads N  payloads each size class holds (default 16)\n"
	      "  --work N      busy-work steps per job (default 2000)\n"
	      "  --quiet       print nothing unless something is wrong\n",
	      f);
}

static bool parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *s == '-' || end == s || *end || v < lo || v > hi)
		return false;
	*out = (unsigned)v;
	return true;
}

static int parse_options(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "workers", 1, 0, 'w' }, { "depth", 1, 0, 'd' },
		{ "fanout", 1, 0, 'f' }, { "capacity", 1, 0, 'c' },
		{ "payloads", 1, 0, 'p' },
		{ "work", 1, 0, 'k' }, { "quiet", 0, 0, 'q' }, { "help", 0, 0, 'h' }, { 0, 0, 0, 0 }
	};
	bool ok = true;
	int c;

	js.workers = 4, js.depth = 7, js.fanout = 4, js.capacity = 48;
	js.work = 2000, js.payloads = 16;
	while (ok && (c = getopt_long(argc, argv, "w:d:f:c:p:k:qh", longs, 0)) != -1) {
		switch (c) {
		case 'w': ok = parse_uint(optarg, 1, MAX_WORKERS, &js.workers); break;
		case 'd': ok = parse_uint(optarg, 0, 12, &js.depth); break;
		case 'f': ok = parse_uint(optarg, 1, 8, &js.fanout); break;
		case 'c': ok = parse_uint(optarg, 1, 1u << 24, &js.capacity); break;
		case 'p': ok = parse_uint(optarg, 1, 1u << 24, &js.payloads); break;
		case 'k': ok = parse_uint(optarg, 0, 1u << 30, &js.work); break;
		case 'q': js.quiet = true; break;
		case 'h': usage(stdout); exit(EXIT_SUCCESS);
		default: ok = false;
		}
	}
	if (!ok || optind != argc) {
		usage(stderr);
		return -1;
	}
	return 0;
}

static int setup(void)
{
	struct lfp_config cfg = { .obj_size = sizeof(struct job),
				  .capacity = js.capacity };
	uint32_t caps[NCLASSES];
	struct lfp_family_config fc = { .sizes = payload_classes,
					.capacities = caps,
					.classes = NCLASSES,
					.name = "payloads" };
	int err = lfp_create(&cfg, &js.pool);

	if (err) {
		fprintf(stderr, "jobs: lfp_create: %s\n", strerror(-err));
		return -1;
	}
	for (unsigned c = 0; c < NCLASSES; c++)
		caps[c] = js.payloads;
	if ((err = lfp_family_create(&fc, &js.family))) {
		fprintf(stderr, "jobs: lfp_family_create: %s\n",
			strerror(-err));
		return -1;
	}
	js.ring = calloc(js.capacity, sizeof(*js.ring));
	if (!js.ring)
		return -1;
	pthread_mutex_init(&js.lock, NULL);
	pthread_cond_init(&js.ready, NULL);
	for (unsigned k = 0; k < js.workers; k++) {
		js.w[k].id = k;
		/* Made here, used by the worker: one thread at a time. */
		if (!(js.w[k].cache = lfp_cache_create(js.pool)))
			return -1;
	}
	return 0;
}

static void sum_workers(struct worker *t)
{
	memset(t, 0, sizeof(*t));
	for (unsigned k = 0; k < js.workers; k++) {
		struct worker *w = &js.w[k];

		t->run += w->run, t->created += w->created;
		t->inlined += w->inlined, t->released += w->released;
		t->payload_full += w->payload_full;
		t->released_elsewhere += w->released_elsewhere;
		t->stale_tries += w->stale_tries;
		t->stale_caught += w->stale_caught, t->bad += w->bad;
	}
}

static bool expect(bool cond, const char *what, uint64_t a, uint64_t b)
{
	if (!cond)
		fprintf(stderr, "jobs: invariant broken: %s (%llu vs %llu)\n",
			what, (unsigned long long)a, (unsigned long long)b);
	return cond;
}

/* Every payload class's books: nothing live, nothing refused. */
static bool check_payloads(const struct worker *t)
{
	struct lfp_family_stats fs;
	bool ok = true;

	for (uint32_t c = 0; c < lfp_family_classes(js.family); c++) {
		struct lfp_stats cs;

		lfp_stats(lfp_family_pool(js.family, c), &cs);
		ok &= expect(cs.live == 0 && cs.rejected_frees == 0,
			     "a payload class's live and refused releases",
			     cs.live, cs.rejected_frees);
	}
	lfp_family_stats(js.family, &fs);
	ok &= expect(fs.total.allocs == t->created &&
			     fs.total.frees == t->created,
		     "payloads allocated and released", fs.total.allocs,
		     fs.total.frees);
	ok &= expect(fs.failed_allocs == t->payload_full,
		     "payload allocations failed vs jobs done inline for it",
		     fs.failed_allocs, t->payload_full);
	ok &= expect(fs.total.rejected_frees + fs.bad_sizes == 0,
		     "refused payload releases and sizes",
		     fs.total.rejected_frees, fs.bad_sizes);
	return ok;
}

/* Compare the workers' counts with the pool's, the family's and the
 * sequential sum. */
static int check(uint64_t want)
{
	struct worker t;
	struct lfp_stats st;
	bool ok = true;

	sum_workers(&t);
	lfp_stats(js.pool, &st);
	ok &= expect(js.result == want, "sum", js.result, want);
	ok &= expect(t.bad == 0, "failed pool calls or lost live handles",
		     t.bad, 0);
	ok &= expect(t.stale_caught == t.stale_tries, "stale handles caught",
		     t.stale_caught, t.stale_tries);
	ok &= expect(t.run == t.created, "jobs run vs created", t.run,
		     t.created);
	ok &= expect(t.released == t.created, "jobs released vs created",
		     t.released, t.created);
	ok &= expect(st.live == 0, "pool's live count", st.live, 0);
	/* A job whose payload found its class full was released at once. */
	ok &= expect(st.allocs == t.created + t.payload_full &&
			     st.frees == t.created + t.payload_full,
		     "pool's allocations and releases", st.allocs, st.frees);
	ok &= expect(st.rejected_frees == t.stale_tries,
		     "pool's refused releases vs stale tries",
		     st.rejected_frees, t.stale_tries);
	ok &= check_payloads(&t);
	if (!js.quiet)
		printf("%u workers, depth %u, fanout %u, pool of %u jobs, "
		       "%u payloads of each size\n"
		       "  jobs run %llu (%llu released by a worker other than "
		       "their creator)\n"
		       "  subtrees done inline because the pool was full %llu"
		       " (%llu because a payload class was)\n"
		       "  stale handles tried %llu, caught %llu\n"
		       "  sum %llu: %s\n",
		       js.workers, js.depth, js.fanout, js.capacity,
		       js.payloads, (unsigned long long)t.run,
		       (unsigned long long)t.released_elsewhere,
		       (unsigned long long)t.inlined,
		       (unsigned long long)t.payload_full,
		       (unsigned long long)t.stale_tries,
		       (unsigned long long)t.stale_caught,
		       (unsigned long long)js.result,
		       ok ? "matches the sequential sum, books balance"
			  : "BROKEN");
	return !ok;
}

int main(int argc, char **argv)
{
	struct worker *w0 = &js.w[0];
	lfp_handle root;
	int bad;

	if (parse_options(argc, argv) || setup())
		return 2;
	root = job_new(w0, LFP_NULL_HANDLE, 1, 0);
	if (lfp_handle_is_null(root))
		return 2;
	queue_push(root);
	for (unsigned k = 0; k < js.workers; k++)
		if (pthread_create(&js.w[k].thread, NULL, worker_main,
				   &js.w[k])) {
			fprintf(stderr, "jobs: cannot start a worker\n");
			return 2;
		}
	for (unsigned k = 0; k < js.workers; k++) {
		pthread_join(js.w[k].thread, NULL);
		lfp_cache_destroy(js.w[k].cache); /* slots go back to the pool */
	}
	bad = check(subtree_sum(1, 0));
	free(js.ring);
	lfp_destroy(js.pool);
	lfp_family_destroy(js.family);
	return bad ? EXIT_FAILURE : EXIT_SUCCESS;
}
