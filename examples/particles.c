/* SPDX-License-Identifier: MIT */
/*
 * particles: a spell bursts sparkles.
 *
 * Worker threads share one pool of particles. Each frame has two parallel
 * phases, separated by barriers:
 *
 *   1. update: worker k walks its own slice of the pool's slots
 *      (lfp_range cuts one extent snapshot into equal shares,
 *      lfp_foreach_range walks one), moves its particles, and releases
 *      the ones that burn out. Some of the dead are handed, by handle, to another worker
 *      to release (as a game would hand a dying object to the thread that
 *      owns its sound or its decal);
 *   2. spawn: every worker releases the handles it was handed, then casts
 *      its share of new sparkles. When the pool is full, a sparkle is
 *      simply not created: exhaustion is a normal state.
 *
 * Each worker allocates and releases through its own explicit cache
 * (lfp_cache_create), and at the end of a frame takes its cache's counts
 * (lfp_cache_stats) and what changed since the last frame
 * (lfp_stats_delta): the per-worker lines printed under each frame.
 *
 * Then worker 0 alone draws the frame and checks the books: spawned - died
 * must equal the live count, which must equal what the pool says, and
 * the workers' per-frame cache counts must add up to the frame's spawns,
 * deaths and failures. Any violation makes the program exit non-zero.
 *
 * Uses only the public API of lfpool.
 *
 * To build it against an installed lfpool, in the directory that holds
 * it, <prefix>/share/doc/lfpool/examples (or a copy):
 *
 *   cc -O2 -pthread -o particles particles.c \
 *       $(pkg-config --cflags --libs lfpool) -lm
 *
 * or with CMake, whose project in cmake/ there builds every example:
 *
 *   cmake -S cmake -B build -DCMAKE_PREFIX_PATH=<prefix>
 *   cmake --build build --target particles
 *
 * Where the dynamic linker does not search <prefix>/lib, run the program
 * pkg-config's line built with LD_LIBRARY_PATH=<prefix>/lib (CMake's has
 * a run path).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lfpool.h"

#define FIELD_W 64
#define FIELD_H 18
#define MAX_WORKERS 64

struct particle {
	float x, y;   /* field coordinates: x in [0, FIELD_W), y down */
	float vx, vy; /* cells per frame */
	uint16_t age, life;
	uint32_t spark; /* which worker cast it, for the picture */
};

struct options {
	unsigned frames, workers, capacity, delay_ms;
	uint64_t seed;
	bool quiet, draw;
};

/* Counts of one worker for one frame; worker 0 adds them up. */
struct tally {
	uint64_t spawned, died, not_created, handed, bad;
	uint16_t field[FIELD_H][FIELD_W];
};

struct worker {
	pthread_t thread;
	unsigned id;
	uint64_t rng;
	struct lfp_cache *cache; /* this worker's own, for every call */
	struct tally t;
	/* The cache's counts at the end of the last frame, and this frame's. */
	struct lfp_stats last, frame;
	/* Handles other workers handed us this frame, to release. */
	lfp_handle *inbox;
	_Atomic uint32_t inbox_n;
};

static struct {
	struct options opt;
	struct lfp_pool *pool;
	struct worker w[MAX_WORKERS];
	pthread_barrier_t bar;
	uint32_t extent; /* slots walked this frame, set by worker 0 */
	uint64_t live, spawned, died, not_created, handed, peak;
	int failures;
} sim;

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * UINT64_C(2685821657736338717);
}

static float rng_unit(uint64_t *s)
{
	return (float)(rng_next(s) >> 40) / (float)(1u << 24);
}

static void fail(const char *what, unsigned long long a, unsigned long long b)
{
	fprintf(stderr, "particles: invariant broken: %s (%llu vs %llu)\n",
		what, a, b);
	sim.failures++;
}

/* ---- phase 1: update my slice ---------------------------------------- */

static void plot(struct tally *t, const struct particle *p)
{
	int x = (int)p->x, y = (int)p->y;

	if (x >= 0 && x < FIELD_W && y >= 0 && y < FIELD_H &&
	    t->field[y][x] < UINT16_MAX)
		t->field[y][x]++;
}

/* A dead particle: release it here, or hand it to another worker. */
static void bury(struct worker *me, void *obj, lfp_handle h)
{
	unsigned to = (unsigned)(rng_next(&me->rng) % sim.opt.workers);

	me->t.died++;
	if (to != me->id && rng_next(&me->rng) % 3 == 0) {
		struct worker *w = &sim.w[to];
		/* Relaxed: the barrier after this phase publishes the slot. */
		uint32_t i = atomic_fetch_add_explicit(&w->inbox_n, 1,
						       memory_order_relaxed);
		w->inbox[i] = h;
		me->t.handed++;
		return;
	}
	if (lfp_cache_free(me->cache, obj) != 0)
		me->t.bad++;
}

static int update_one(void *obj, lfp_handle h, void *arg)
{
	struct worker *me = arg;
	struct particle *p = obj;

	p->x += p->vx;
	p->y += p->vy;
	p->vy += 0.045f;  /* gravity */
	p->vx *= 0.985f;  /* air */
	if (++p->age >= p->life || p->y >= FIELD_H || p->x < 0 ||
	    p->x >= FIELD_W) {
		bury(me, obj, h);
		return 0;
	}
	plot(&me->t, p);
	return 0;
}

/* Every worker cuts the same extent snapshot, so the slices tile it. */
static void update_slice(struct worker *me)
{
	uint32_t begin, end;

	lfp_range(sim.extent, me->id, sim.opt.workers, &begin, &end);
	if (lfp_foreach_range(sim.pool, begin, end, update_one, me) != 0)
		me->t.bad++;
}

/* ---- phase 2: release what I was handed, cast new sparkles ------------ */

static void release_inbox(struct worker *me)
{
	uint32_t n = atomic_load_explicit(&me->inbox_n, memory_order_relaxed);

	for (uint32_t i = 0; i < n; i++) {
		lfp_handle h = me->inbox[i];

		/* Still live, released once, and stale for good after. */
		if (!lfp_resolve(sim.pool, h) ||
		    lfp_cache_free_handle(me->cache, h) != 0 ||
		    lfp_resolve(sim.pool, h) != NULL ||
		    lfp_free_handle(sim.pool, h) != -ESTALE)
			me->t.bad++;
	}
	atomic_store_explicit(&me->inbox_n, 0, memory_order_relaxed);
}

/* How many sparkles the spell casts this frame, in total. */
static unsigned cast_rate(unsigned frame)
{
	unsigned phase = frame % 48, cap = sim.opt.capacity;

	/* A steady shimmer, and every 48 frames a burst that overfills. */
	return phase < 3 ? cap / 3 : cap / 90 + 1;
}

/*
 * Take up to n new particles from my cache into objs, in one bulk call
 * that moves whole magazines between the cache and the pool; returns how
 * many the pool had (when fewer than n, the pool counted one failed
 * allocation, as a single lfp_cache_alloc returning NULL would).
 */
#define SPAWN_BATCH 64

static unsigned take(struct worker *me, void **objs, unsigned n)
{
	return (unsigned)lfp_cache_alloc_bulk(me->cache, objs, n);
}

static void launch(struct worker *me, struct particle *p, float cx)
{
	float a = rng_unit(&me->rng) * 3.14159f, s;

	s = 0.4f + 1.1f * rng_unit(&me->rng);
	*p = (struct particle){
		.x = cx, .y = FIELD_H - 1.0f,
		.vx = s * cosf(a) * 0.9f, .vy = -s * (0.5f + sinf(a)),
		.life = (uint16_t)(12 + rng_next(&me->rng) % 40),
		.spark = me->id,
	};
}

static void spawn(struct worker *me, unsigned frame)
{
	unsigned n = cast_rate(frame) / sim.opt.workers + 1;
	float cx = FIELD_W / 2.0f + 14.0f * sinf((float)frame * 0.05f);
	void *objs[SPAWN_BATCH];

	while (n) {
		unsigned want = n < SPAWN_BATCH ? n : SPAWN_BATCH;
		unsigned got = take(me, objs, want);

		for (unsigned i = 0; i < got; i++)
			launch(me, objs[i], cx);
		me->t.spawned += got;
		n -= got;
		if (got < want) {
			/* The pool was full for the next one: it is simply not
			 * created (the pool counts a failed allocation). */
			me->t.not_created++;
			n--;
		}
	}
}

/* This frame's counts of my cache: the change since the last frame. */
static void take_stats(struct worker *me)
{
	struct lfp_stats now;

	lfp_cache_stats(me->cache, &now);
	lfp_stats_delta(&now, &me->last, &me->frame);
	me->last = now;
}

/* ---- between frames: worker 0 alone ----------------------------------- */

static int count_one(void *obj, lfp_handle h, void *arg)
{
	(void)obj;
	(void)h;
	++*(uint64_t *)arg;
	return 0;
}

static uint64_t count_live(void)
{
	uint64_t n = 0;

	lfp_foreach(sim.pool, count_one, &n);
	return n;
}

/* The books must balance: ours, the pool's counters, and a walk. */
static void check_books(void)
{
	struct lfp_stats st;
	uint64_t walked = count_live();

	lfp_stats(sim.pool, &st);
	if (sim.spawned - sim.died != sim.live)
		fail("spawned - died != live", sim.spawned - sim.died,
		     sim.live);
	if (st.live != sim.live)
		fail("pool's live count", st.live, sim.live);
	if (walked != sim.live)
		fail("live objects walked", walked, sim.live);
	if (st.allocs != sim.spawned)
		fail("pool's allocations", st.allocs, sim.spawned);
	if (st.frees != sim.died)
		fail("pool's releases", st.frees, sim.died);
	if (st.failed_allocs != sim.not_created)
		fail("pool's failed allocations", st.failed_allocs,
		     sim.not_created);
}

static void draw(const uint16_t (*field)[FIELD_W])
{
	static const char ramp[] = " .,:;+*#%@";
	char line[FIELD_W * 8 + 1];

	fputs("\033[H", stdout);
	for (int y = 0; y < FIELD_H; y++) {
		char *o = line;

		for (int x = 0; x < FIELD_W; x++) {
			unsigned c = field[y][x];

			*o++ = ramp[c > 9 ? 9 : c];
		}
		*o = 0;
		printf("\033[33m|\033[93m%s\033[33m|\033[0m\n", line);
	}
}

static void report_frame(unsigned frame, const struct tally *sum)
{
	if (sim.opt.draw)
		draw((const uint16_t (*)[FIELD_W])sum->field);
	if (sim.opt.quiet)
		return;
	printf("frame %4u  live %6llu  spawned %5llu  died %5llu  "
	       "not created %5llu  handed over %4llu%s\n",
	       frame, (unsigned long long)sim.live,
	       (unsigned long long)sum->spawned, (unsigned long long)sum->died,
	       (unsigned long long)sum->not_created,
	       (unsigned long long)sum->handed, sim.opt.draw ? "\033[K" : "");
	fflush(stdout);
	if (sim.opt.delay_ms)
		nanosleep(&(struct timespec){ 0, sim.opt.delay_ms * 1000000L },
			  NULL);
}

/*
 * The workers' caches saw every call of the frame: their allocations are
 * the spawns, their releases the deaths (handed-over ones included: they
 * were released this frame, through the receiver's cache), their failed
 * allocations the sparkles not created.
 */
static void check_workers(const struct tally *sum)
{
	uint64_t allocs = 0, frees = 0, failed = 0, rejected = 0;

	for (unsigned k = 0; k < sim.opt.workers; k++) {
		const struct lfp_stats *d = &sim.w[k].frame;

		allocs += d->allocs;
		frees += d->frees;
		failed += d->failed_allocs;
		rejected += d->rejected_frees;
	}
	if (allocs != sum->spawned)
		fail("workers' cache allocations", allocs, sum->spawned);
	if (frees != sum->died)
		fail("workers' cache releases", frees, sum->died);
	if (failed != sum->not_created)
		fail("workers' failed allocations", failed, sum->not_created);
	/* The one release per handed-over handle that must be refused
	 * (already released: -ESTALE) goes through the pool, not a cache. */
	if (rejected)
		fail("workers' refused releases", rejected, 0);
}

/* One line per worker under the frame's: what its cache did this frame. */
static void report_workers(void)
{
	if (sim.opt.quiet)
		return;
	for (unsigned k = 0; k < sim.opt.workers; k++) {
		const struct lfp_stats *d = &sim.w[k].frame;

		printf("  worker %2u  allocs %5llu  frees %5llu  failed %5llu  "
		       "hits %5.1f%%  refills %3llu  flushes %3llu  "
		       "steals %2llu  cached %4llu%s\n",
		       k, (unsigned long long)d->allocs,
		       (unsigned long long)d->frees,
		       (unsigned long long)d->failed_allocs,
		       d->allocs ? 100.0 * (double)d->cache_hits /
					   (double)d->allocs : 0.0,
		       (unsigned long long)d->refills,
		       (unsigned long long)d->flushes,
		       (unsigned long long)d->steals,
		       (unsigned long long)d->cached,
		       sim.opt.draw ? "\033[K" : "");
	}
	fflush(stdout);
}

static void end_frame(unsigned frame)
{
	static struct tally sum;

	memset(&sum, 0, sizeof(sum));
	for (unsigned k = 0; k < sim.opt.workers; k++) {
		struct tally *t = &sim.w[k].t;

		sum.spawned += t->spawned;
		sum.died += t->died;
		sum.not_created += t->not_created;
		sum.handed += t->handed;
		if (t->bad)
			fail("pool calls that failed", t->bad, 0);
		for (int y = 0; y < FIELD_H; y++)
			for (int x = 0; x < FIELD_W; x++)
				sum.field[y][x] += t->field[y][x];
		memset(t, 0, sizeof(*t));
	}
	check_workers(&sum);
	sim.spawned += sum.spawned;
	sim.died += sum.died;
	sim.not_created += sum.not_created;
	sim.handed += sum.handed;
	sim.live = sim.live + sum.spawned - sum.died;
	if (sim.live > sim.peak)
		sim.peak = sim.live;
	check_books();
	report_frame(frame, &sum);
	report_workers();
	sim.extent = lfp_extent(sim.pool);
}

static void *worker_main(void *arg)
{
	struct worker *me = arg;

	/* setup made the cache; it is this thread's from here on. */

	for (unsigned f = 0; f < sim.opt.frames; f++) {
		update_slice(me);
		pthread_barrier_wait(&sim.bar);
		release_inbox(me);
		spawn(me, f);
		take_stats(me);
		pthread_barrier_wait(&sim.bar);
		if (me->id == 0)
			end_frame(f);
		pthread_barrier_wait(&sim.bar);
	}
	return NULL;
}

/* ---- setup and summary ------------------------------------------------- */

static void usage(FILE *f)
{
	fputs("usage: particles [--frames N] [--workers N] [--capacity N]\n"
	      "                 [--seed N] [--delay MS] [--quiet] [--help]\n"
	      "A spell bursts sparkles: worker threads spawn, animate and\n"
	      "release particles in one lock-free pool. Draws the sparkles\n"
	      "when run on a terminal, prints one line a frame otherwise.\n"
	      "  --frames N    frames to run (default 150)\n"
	      "  --workers N   worker threads, 1..64 (default 4)\n"
	      "  --capacity N  particles the pool holds (default 4000)\n"
	      "  --seed N      random seed (default 1)\n"
	      "  --delay MS    pause per frame (default 15 on a terminal, else 0)\n"
	      "  --quiet       no per-frame output, only the summary\n",
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

static int parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longs[] = {
		{ "frames", 1, 0, 'f' }, { "workers", 1, 0, 'w' },
		{ "capacity", 1, 0, 'c' }, { "seed", 1, 0, 's' },
		{ "delay", 1, 0, 'd' }, { "quiet", 0, 0, 'q' },
		{ "help", 0, 0, 'h' }, { 0, 0, 0, 0 }
	};
	unsigned seed = 1, delay = UINT32_MAX;
	int c;
	bool ok = true;

	*o = (struct options){ .frames = 150, .workers = 4, .capacity = 4000 };
	while (ok && (c = getopt_long(argc, argv, "f:w:c:s:d:qh", longs, 0)) != -1) {
		switch (c) {
		case 'f': ok = parse_uint(optarg, 1, 1000000, &o->frames); break;
		case 'w': ok = parse_uint(optarg, 1, MAX_WORKERS, &o->workers); break;
		case 'c': ok = parse_uint(optarg, 16, 1u << 26, &o->capacity); break;
		case 's': ok = parse_uint(optarg, 1, UINT32_MAX, &seed); break;
		case 'd': ok = parse_uint(optarg, 0, 1000, &delay); break;
		case 'q': o->quiet = true; break;
		case 'h': usage(stdout); exit(EXIT_SUCCESS);
		default: ok = false;
		}
	}
	if (!ok || optind != argc) {
		usage(stderr);
		return -1;
	}
	o->seed = seed;
	o->draw = !o->quiet && isatty(STDOUT_FILENO);
	o->delay_ms = delay != UINT32_MAX ? delay : o->draw ? 15 : 0;
	return 0;
}

static int setup(void)
{
	struct lfp_config cfg = { .obj_size = sizeof(struct particle),
				  .capacity = sim.opt.capacity };
	int err = lfp_create(&cfg, &sim.pool);

	if (err) {
		fprintf(stderr, "particles: lfp_create: %s\n", strerror(-err));
		return -1;
	}
	for (unsigned k = 0; k < sim.opt.workers; k++) {
		sim.w[k].id = k;
		sim.w[k].rng = sim.opt.seed * 0x9e3779b97f4a7c15ull + k + 1;
		sim.w[k].inbox = calloc(sim.opt.capacity, sizeof(lfp_handle));
		sim.w[k].cache = lfp_cache_create(sim.pool);
		if (!sim.w[k].inbox || !sim.w[k].cache)
			return -1;
	}
	pthread_barrier_init(&sim.bar, NULL, sim.opt.workers);
	return 0;
}

static int release_one(void *obj, lfp_handle h, void *arg)
{
	(void)h;
	return lfp_free(arg, obj) ? 1 : 0;
}

/* Release every survivor with a walk; then the pool must be empty. */
static void teardown(double secs)
{
	struct lfp_stats st;

	if (lfp_foreach(sim.pool, release_one, sim.pool) != 0)
		fail("releasing the survivors", 1, 0);
	lfp_stats(sim.pool, &st);
	if (st.live != 0 || st.frees != sim.died + sim.live)
		fail("pool not empty after the last walk", st.live, 0);
	printf("\n%u frames, %u workers, pool of %u particles, %.2f s\n"
	       "  spawned %llu, died %llu (%llu handed to another worker), "
	       "not created %llu\n"
	       "  live at the end %llu, peak %llu, pool high water %llu\n"
	       "  books: %s\n",
	       sim.opt.frames, sim.opt.workers, sim.opt.capacity, secs,
	       (unsigned long long)sim.spawned, (unsigned long long)sim.died,
	       (unsigned long long)sim.handed,
	       (unsigned long long)sim.not_created,
	       (unsigned long long)sim.live, (unsigned long long)sim.peak,
	       (unsigned long long)st.high_water,
	       sim.failures ? "BROKEN" : "balanced (spawned - died == live, "
				       "pool agrees)");
}

int main(int argc, char **argv)
{
	struct timespec t0, t1;

	if (parse_options(argc, argv, &sim.opt) || setup())
		return 2;
	if (sim.opt.draw)
		fputs("\033[2J\033[?25l", stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned k = 0; k < sim.opt.workers; k++)
		if (pthread_create(&sim.w[k].thread, NULL, worker_main,
				   &sim.w[k])) {
			fprintf(stderr, "particles: cannot start a worker\n");
			return 2;
		}
	for (unsigned k = 0; k < sim.opt.workers; k++) {
		pthread_join(sim.w[k].thread, NULL);
		/* Its cached slots go back to the pool's free list. */
		lfp_cache_destroy(sim.w[k].cache);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (sim.opt.draw)
		fputs("\033[?25h", stdout);
	teardown((double)(t1.tv_sec - t0.tv_sec) +
		 (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	for (unsigned k = 0; k < sim.opt.workers; k++)
		free(sim.w[k].inbox);
	pthread_barrier_destroy(&sim.bar);
	lfp_destroy(sim.pool);
	return sim.failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
