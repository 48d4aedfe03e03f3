/* SPDX-License-Identifier: MIT */
/*
 * tbb_particles: lfpool under a job system, oneTBB.
 *
 * Every frame has two phases, both run by oneTBB in one explicit
 * task_arena of --workers slots:
 *
 *   1. particles: tbb::parallel_for over a table of emitters. An emitter
 *      with no particle may spawn one; a particle burns out after a few
 *      frames and is released. Chunks of the table go to whichever
 *      worker is free, so a particle is often released by another worker
 *      than the one that made it. When the pool is full the particle is
 *      simply not made: exhaustion is a normal state.
 *   2. jobs: a tree of jobs in a tbb::task_group. A job spawns its
 *      children as tasks of the group; each job object comes from a pool
 *      and is released by whichever worker finishes it. When the job pool
 *      is full, the child's subtree is done inline.
 *
 * Each worker allocates and releases through the explicit caches of the
 * slot it holds in the arena, tbb::this_task_arena::current_thread_index(),
 * one cache per pool per slot, made before the arena's work and destroyed
 * after it. Why that is safe, and where it would not be:
 *
 * - An explicit cache may be used by one thread at a time. oneTBB
 *   documents that no two threads in an arena have the same index at the
 *   same time, so the caches of a slot are used by its holder alone.
 * - A slot is held by different threads in turn: workers leave the arena
 *   when it runs out of work (--idle between frames) and come back to
 *   any free slot, and the main thread enters it for each frame through
 *   any free slot (the arena reserves none for it), or, if none is free,
 *   has a worker run the frame. The next holder's uses of the
 *   cache must happen after the last holder's: oneTBB gives the slot back
 *   with a release store and takes it with an atomic exchange, so that
 *   hand-over is the happens-before edge. The example adds no ordering of
 *   its own (see struct slot's busy flag), so that under ThreadSanitizer
 *   (with a oneTBB built for it: Debian's is not, see the .test) a
 *   hand-over that did not order the uses would be reported.
 * - The index is the thread's index in the arena it is in now. A task
 *   that enters another arena (task_arena::execute from inside a task)
 *   gets an index of that arena, which another thread may hold in ours:
 *   code running there must not touch our table. Every use of a cache
 *   therefore names the table of the arena it runs in, and code run in
 *   any other arena (here, every --nested'th job does part of its work in
 *   a second arena) names none and takes the implicit path, lfp_alloc and
 *   lfp_free through the thread's own cache. So does a thread outside any
 *   arena (task_arena::not_initialized), or an index beyond the table.
 * - A cache is held only between TBB calls (never across a
 *   task_group::wait or a nested parallel algorithm, where the thread may
 *   run another task that takes the same slot's caches).
 *
 * At the end the program checks its books and exits non-zero if one does
 * not balance: every particle and job released, each pool's counters
 * agreeing with the program's own counts (allocations, releases,
 * failures), every job's sum the sequential one, no slot used by two
 * threads at once, and no slot lost: one thread allocates the whole
 * capacity of each pool once the workers are idle.
 *
 * --misuse share|nested breaks the rules on purpose, for the test that the
 * checks catch it: every slot shares cache 0, or the nested arena's code
 * uses our table with its own index.
 *
 * To build it against an installed lfpool and oneTBB (Debian's
 * libtbb-dev, which has tbb.pc and oneTBB's CMake package), in the
 * directory that holds it, <prefix>/share/doc/lfpool/examples (or a copy):
 *
 *   c++ -std=c++17 -O2 -pthread -o tbb_particles tbb_particles.cc \
 *       $(pkg-config --cflags --libs lfpool tbb)
 *
 * or with CMake, whose project in cmake/ there builds every example (this
 * one where find_package(TBB) finds oneTBB):
 *
 *   cmake -S cmake -B build -DCMAKE_PREFIX_PATH=<prefix>
 *   cmake --build build --target tbb_particles
 *
 * Where the dynamic linker does not search <prefix>/lib, run the program
 * pkg-config's line built with LD_LIBRARY_PATH=<prefix>/lib (CMake's has
 * a run path).
 */
#include <lfpool.hpp>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <getopt.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <thread>
#include <vector>

namespace
{

constexpr unsigned max_workers = 64;
constexpr unsigned max_fanout = 8;

struct options {
	unsigned workers = 4, frames = 60, emitters = 2048, capacity = 1024;
	unsigned depth = 5, fanout = 3, jobs = 48, nested = 7;
	unsigned work = 2000, idle = 1000;
	bool quiet = false;
	enum { none, share, nested_table } misuse = none;
};

struct particle {
	float pos[3], vel[3];
	std::uint32_t life;    /* frames left */
	std::uint32_t emitter; /* its entry in the table */
	std::uint32_t born;    /* frame */
	int maker;             /* slot that made it; -1: the implicit path */
	std::uint64_t tag;     /* particle_tag(emitter, born) */
};

struct job {
	std::uint64_t node; /* position in the tree: root 1 */
	std::uint64_t tag;  /* job_tag(node, frame) */
	std::uint32_t depth, frame;
	int maker;
};

std::uint64_t mix(std::uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

std::uint64_t particle_tag(std::uint32_t emitter, std::uint32_t frame)
{
	return mix((std::uint64_t)emitter << 32 | frame) | 1;
}

std::uint64_t job_tag(std::uint64_t node, std::uint32_t frame)
{
	return mix(node * 0x9e3779b97f4a7c15ull + frame) | 1;
}

std::uint64_t node_value(std::uint64_t node)
{
	return mix(node) & 0xffff;
}

/*
 * One arena slot's caches. busy says a task holds them; it is only a
 * check of the one-thread-at-a-time rule, so its accesses are relaxed on
 * purpose: an acquire here would order one holder's uses after the
 * last's by itself, and hide from ThreadSanitizer a hand-over of the
 * slot that does not. last, leases and handovers are plain: only the
 * holder touches them, as it does the caches.
 */
struct alignas(64) slot {
	slot(lfp::pool<particle> &pp, lfp::pool<job> &jp)
		: particles(pp), jobs(jp)
	{
	}

	lfp::cache<particle> particles;
	lfp::cache<job> jobs;
	std::atomic<bool> busy{ false };
	std::thread::id last;
	std::uint64_t leases = 0, handovers = 0;
};

/* What the program counts, to compare with the pools' counters. */
struct tally {
	std::atomic<std::uint64_t> spawned{ 0 }, spawn_failed{ 0 };
	std::atomic<std::uint64_t> expired{ 0 }, expired_elsewhere{ 0 };
	std::atomic<std::uint64_t> jobs_made{ 0 }, jobs_failed{ 0 };
	std::atomic<std::uint64_t> jobs_run{ 0 }, jobs_freed{ 0 };
	std::atomic<std::uint64_t> jobs_freed_elsewhere{ 0 }, inlined{ 0 };
	std::atomic<std::uint64_t> sparks{ 0 }, sparks_failed{ 0 };
	std::atomic<std::uint64_t> implicit{ 0 }, collisions{ 0 };
	std::atomic<std::uint64_t> bad{ 0 }, beyond{ 0 };
};

void add(std::atomic<std::uint64_t> &n, std::uint64_t v = 1)
{
	n.fetch_add(v, std::memory_order_relaxed);
}

std::uint64_t get(const std::atomic<std::uint64_t> &n)
{
	return n.load(std::memory_order_relaxed);
}

/*
 * The caches of one arena, one slot per index the arena can give: made
 * inside the arena, used by the tasks of that arena only, destroyed once
 * its work is done. max_concurrency() does not bound the indices: an
 * arena has at least two slots, so a task_arena(1, 0) reports 1 and
 * still lets a worker in at index 1 beside a thread at index 0. The
 * table has max_concurrency() + 1 slots, and take() checks every index
 * anyway: one beyond the table takes the implicit path, counted.
 */
class arena_caches
{
public:
	arena_caches(int n, lfp::pool<particle> &pp, lfp::pool<job> &jp,
		     tally &t, bool share, bool linger)
		: t_(t), share_(share), linger_(linger)
	{
		for (int i = 0; i < n; i++)
			slots_.push_back(std::make_unique<slot>(pp, jp));
	}

	/*
	 * The calling task's slot, or nullptr for the implicit path: the
	 * thread is in no arena, or its index is not one of ours, or
	 * (a broken rule) another thread holds the slot's caches.
	 */
	slot *take()
	{
		int i = tbb::this_task_arena::current_thread_index();

		if (i < 0)
			return nullptr;
		if ((unsigned)i >= slots_.size()) {
			add(t_.beyond);
			return nullptr;
		}
		slot *s = slots_[share_ ? 0 : i].get();
		if (s->busy.exchange(true, std::memory_order_relaxed)) {
			add(t_.collisions);
			return nullptr;
		}
		std::thread::id me = std::this_thread::get_id();
		s->leases++;
		if (s->last != me) {
			s->handovers += s->last != std::thread::id();
			s->last = me;
		}
		if (linger_)
			linger();
		return s;
	}

	void give(slot *s)
	{
		s->busy.store(false, std::memory_order_relaxed);
	}

	int index_of(const slot *s) const
	{
		for (std::size_t i = 0; i < slots_.size(); i++)
			if (slots_[i].get() == s)
				return (int)i;
		return -1;
	}

	std::size_t size() const
	{
		return slots_.size();
	}

	const slot &at(std::size_t i) const
	{
		return *slots_[i];
	}

private:
	/*
	 * With the rules broken on purpose, hold the slot just taken until
	 * another thread has been refused one, or for linger_max. A lease
	 * lasts microseconds, so two threads on one cache would otherwise
	 * overlap only by luck, and on one CPU almost never; a holder that
	 * sleeps lets every other worker run and take its lease meanwhile,
	 * so the misuse is caught in the first frame. Once one collision is
	 * counted the run has failed, and nothing lingers any more. Never
	 * done in a correct run, whose speed it would cost.
	 */
	void linger()
	{
		auto end = std::chrono::steady_clock::now() + linger_max;

		while (get(t_.collisions) == 0 &&
		       std::chrono::steady_clock::now() < end)
			std::this_thread::sleep_for(
				std::chrono::microseconds(50));
	}

	static constexpr std::chrono::milliseconds linger_max{ 5 };

	std::vector<std::unique_ptr<slot>> slots_;
	tally &t_;
	bool share_, linger_;
};

/*
 * A task's use of its slot's caches, from construction to destruction,
 * with no TBB call in between. With no table (another arena, or none)
 * or no slot to be had, it allocates and releases through the pools'
 * implicit path.
 */
class lease
{
public:
	lease(arena_caches *ac, lfp::pool<particle> &pp, lfp::pool<job> &jp,
	      tally &t)
		: ac_(ac), s_(ac ? ac->take() : nullptr), pp_(pp), jp_(jp)
	{
		if (!s_)
			add(t.implicit);
	}

	~lease()
	{
		if (s_)
			ac_->give(s_);
	}

	lease(const lease &) = delete;
	lease &operator=(const lease &) = delete;

	int index() const
	{
		return s_ ? ac_->index_of(s_) : -1;
	}

	particle *make_particle()
	{
		return s_ ? s_->particles.make() : pp_.make();
	}

	void destroy(particle *p)
	{
		if (s_)
			s_->particles.destroy(p);
		else
			pp_.destroy(p);
	}

	job *make_job()
	{
		return s_ ? s_->jobs.make() : jp_.make();
	}

	void destroy(job *j)
	{
		if (s_)
			s_->jobs.destroy(j);
		else
			jp_.destroy(j);
	}

private:
	arena_caches *ac_;
	slot *s_;
	lfp::pool<particle> &pp_;
	lfp::pool<job> &jp_;
};

class demo
{
public:
	explicit demo(const options &o)
		: o_(o), particles_(o.capacity), jobs_(o.jobs),
		  table_(o.emitters, nullptr),
		  arena_((int)o.workers, 0), side_(2)
	{
	}

	int run();

private:
	lease take(arena_caches *ac)
	{
		return lease(ac, particles_, jobs_, t_);
	}

	void particle_frame(arena_caches *ac, std::uint32_t frame, bool last);
	void particle_chunk(arena_caches *ac, std::size_t begin,
			    std::size_t end, std::uint32_t frame, bool last);
	job *job_new(lease &l, std::uint64_t node, std::uint32_t depth,
		     std::uint32_t frame);
	void job_run(arena_caches *ac, tbb::task_group &tg, job *j);
	void job_frame(arena_caches *ac, std::uint32_t frame);
	void side_work(arena_caches *ac, std::uint64_t node);
	std::uint64_t subtree_sum(std::uint64_t node,
				  std::uint32_t depth) const;
	bool check_frame();
	template <class T> bool drain(lfp::pool<T> &p, const char *what);
	bool check(const arena_caches &ac);
	bool expect(bool ok, const char *what, std::uint64_t a,
		    std::uint64_t b);

	const options &o_;
	lfp::pool<particle> particles_;
	lfp::pool<job> jobs_;
	std::vector<particle *> table_; /* entry i: emitter i's particle */
	tbb::task_arena arena_;	        /* where all the work runs */
	tbb::task_arena side_;	        /* entered from inside jobs */
	tally t_;
	std::atomic<std::uint64_t> frame_sum_{ 0 };
	std::atomic<std::uint64_t> sink_{ 0 }; /* keeps the work */
	std::uint64_t want_sum_ = 0, sum_errors_ = 0;
};

/* Whether emitter i casts a particle in this frame (if it has none). */
bool wants_spawn(std::size_t i, std::uint32_t frame)
{
	return mix(i * 31 + frame) % 4 == 0;
}

void demo::particle_chunk(arena_caches *ac, std::size_t begin,
			  std::size_t end, std::uint32_t frame, bool last)
{
	lease l = take(ac);
	std::uint64_t spawned = 0, failed = 0, expired = 0, elsewhere = 0;
	std::uint64_t bad = 0;

	for (std::size_t i = begin; i < end; i++) {
		particle *p = table_[i];

		if (p) {
			bad += p->emitter != i ||
			       p->tag != particle_tag(p->emitter, p->born);
			for (int k = 0; k < 3; k++)
				p->pos[k] += p->vel[k];
			if (--p->life && !last)
				continue;
			elsewhere += p->maker != l.index();
			l.destroy(p);
			table_[i] = nullptr;
			expired++;
			continue;
		}
		if (last || !wants_spawn(i, frame))
			continue;
		if (!(p = l.make_particle())) {
			failed++;
			continue;
		}
		std::uint64_t h = mix(i ^ (std::uint64_t)frame << 40);
		for (int k = 0; k < 3; k++) {
			p->pos[k] = 0;
			p->vel[k] = (float)((h >> (8 * k)) & 0xff) / 256.0f;
		}
		p->life = 1 + (std::uint32_t)(h >> 32) % 8;
		p->emitter = (std::uint32_t)i;
		p->born = frame;
		p->tag = particle_tag(p->emitter, frame);
		p->maker = l.index();
		table_[i] = p;
		spawned++;
	}
	add(t_.spawned, spawned), add(t_.spawn_failed, failed);
	add(t_.expired, expired), add(t_.expired_elsewhere, elsewhere);
	add(t_.bad, bad);
}

/*
 * One frame's particles. simple_partitioner cuts the table into chunks
 * of 64 emitters, so that many chunks, and the particles in them, move
 * between workers from frame to frame.
 */
void demo::particle_frame(arena_caches *ac, std::uint32_t frame, bool last)
{
	tbb::parallel_for(
		tbb::blocked_range<std::size_t>(0, table_.size(), 64),
		[&](const tbb::blocked_range<std::size_t> &r) {
			particle_chunk(ac, r.begin(), r.end(), frame, last);
		},
		tbb::simple_partitioner());
}

job *demo::job_new(lease &l, std::uint64_t node, std::uint32_t depth,
		   std::uint32_t frame)
{
	job *j = l.make_job();

	if (!j) {
		add(t_.jobs_failed);
		return nullptr;
	}
	j->node = node;
	j->tag = job_tag(node, frame);
	j->depth = depth;
	j->frame = frame;
	j->maker = l.index();
	add(t_.jobs_made);
	return j;
}

/* The sum over the subtree at node, without threads or pools. */
std::uint64_t demo::subtree_sum(std::uint64_t node, std::uint32_t depth) const
{
	std::uint64_t s = node_value(node);

	if (depth < o_.depth)
		for (unsigned i = 0; i < o_.fanout; i++)
			s += subtree_sum(node * o_.fanout + i, depth + 1);
	return s;
}

/*
 * Part of a job's work done in another arena: a spark made and released
 * there. ac is the table of the arena the code runs in, none here: the
 * thread's index is side_'s, and our slot of that index may be held by
 * another thread right now (--misuse nested passes our table anyway).
 */
void demo::side_work(arena_caches *ac, std::uint64_t node)
{
	side_.execute([&] {
		lease l = take(ac);
		particle *p = l.make_particle();

		if (!p) {
			add(t_.sparks_failed);
			return;
		}
		p->emitter = (std::uint32_t)-1;
		p->tag = mix(node);
		p->maker = l.index();
		add(t_.sparks);
		l.destroy(p);
	});
}

/*
 * Run a job: check it, spawn its children (or do their subtrees inline
 * when the job pool is full), and release it through the caches of the
 * slot that finishes it, whoever made it. No cache is held across a TBB
 * call: tg.run only queues, but side_.execute may run other tasks.
 */
void demo::job_run(arena_caches *ac, tbb::task_group &tg, job *j)
{
	std::uint64_t sum = node_value(j->node);
	job *kids[max_fanout];
	unsigned n = 0;

	add(t_.jobs_run);
	if (j->tag != job_tag(j->node, j->frame))
		add(t_.bad);
	std::uint64_t x = j->node;
	for (unsigned i = 0; i < o_.work; i++) /* the job's own work */
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink_.fetch_xor(x, std::memory_order_relaxed);
	if (j->depth < o_.depth) {
		lease l = take(ac);

		for (unsigned i = 0; i < o_.fanout; i++) {
			std::uint64_t child = j->node * o_.fanout + i;

			if ((kids[n] = job_new(l, child, j->depth + 1,
					       j->frame))) {
				n++;
				continue;
			}
			add(t_.inlined);
			sum += subtree_sum(child, j->depth + 1);
		}
	}
	frame_sum_.fetch_add(sum, std::memory_order_relaxed);
	if (o_.nested && j->node % o_.nested == 0)
		side_work(o_.misuse == options::nested_table ? ac : nullptr,
			  j->node);
	for (unsigned k = 0; k < n; k++) {
		job *c = kids[k];

		tg.run([this, ac, &tg, c] { job_run(ac, tg, c); });
	}
	lease l = take(ac);
	if (j->maker != l.index())
		add(t_.jobs_freed_elsewhere);
	l.destroy(j);
	add(t_.jobs_freed);
}

bool demo::expect(bool ok, const char *what, std::uint64_t a,
		  std::uint64_t b)
{
	if (!ok)
		std::fprintf(stderr,
			     "tbb_particles: invariant broken: %s (%" PRIu64
			     " vs %" PRIu64 ")\n",
			     what, a, b);
	return ok;
}

/*
 * Between phases no task runs, so the pools' counts are exact: the
 * particles live are those in the table, and no job is live.
 */
bool demo::check_frame()
{
	std::uint64_t in_table = 0;
	lfp::stats st = particles_.stats();

	for (particle *p : table_)
		in_table += p != nullptr;
	return expect(st.live == in_table,
		      "particles live vs particles in the table", st.live,
		      in_table);
}

/*
 * One thread takes every slot of the pool, then gives them back. The
 * workers are idle, so whatever their implicit caches hold is stolen: a
 * slot the books lost would make this come up short.
 */
template <class T> bool demo::drain(lfp::pool<T> &p, const char *what)
{
	std::vector<T *> got;
	std::uint64_t capacity = p.stats().capacity;

	got.reserve(capacity);
	while (T *x = p.make())
		got.push_back(x);
	for (T *x : got)
		p.destroy(x);
	return expect(got.size() == capacity, what, got.size(), capacity);
}

bool demo::check(const arena_caches &ac)
{
	lfp::stats ps = particles_.stats(), js = jobs_.stats();
	std::uint64_t leases = 0, handovers = 0;
	bool ok = true;

	for (std::size_t i = 0; i < ac.size(); i++)
		leases += ac.at(i).leases, handovers += ac.at(i).handovers;
	ok &= expect(get(t_.collisions) == 0,
		     "slots whose caches two threads wanted at once",
		     get(t_.collisions), 0);
	ok &= expect(get(t_.bad) == 0, "particles or jobs not as made",
		     get(t_.bad), 0);
	ok &= expect(sum_errors_ == 0, "frames whose job sum was wrong",
		     sum_errors_, 0);
	ok &= expect(get(t_.spawned) == get(t_.expired),
		     "particles spawned vs released", get(t_.spawned),
		     get(t_.expired));
	ok &= expect(ps.allocs == get(t_.spawned) + get(t_.sparks),
		     "particle pool's allocations", ps.allocs,
		     get(t_.spawned) + get(t_.sparks));
	ok &= expect(ps.frees == get(t_.expired) + get(t_.sparks),
		     "particle pool's releases", ps.frees,
		     get(t_.expired) + get(t_.sparks));
	ok &= expect(ps.failed_allocs ==
			     get(t_.spawn_failed) + get(t_.sparks_failed),
		     "particle pool's failed allocations", ps.failed_allocs,
		     get(t_.spawn_failed) + get(t_.sparks_failed));
	ok &= expect(ps.live == 0 && ps.rejected_frees == 0,
		     "particles live, refused releases", ps.live,
		     ps.rejected_frees);
	ok &= expect(get(t_.jobs_run) == get(t_.jobs_made) &&
			     get(t_.jobs_freed) == get(t_.jobs_made),
		     "jobs run and released vs made", get(t_.jobs_freed),
		     get(t_.jobs_made));
	ok &= expect(js.allocs == get(t_.jobs_made) &&
			     js.frees == get(t_.jobs_freed),
		     "job pool's allocations and releases", js.allocs,
		     js.frees);
	ok &= expect(js.failed_allocs == get(t_.jobs_failed) &&
			     get(t_.jobs_failed) == get(t_.inlined),
		     "job pool's failed allocations vs subtrees done inline",
		     js.failed_allocs, get(t_.inlined));
	ok &= expect(js.live == 0 && js.rejected_frees == 0,
		     "jobs live, refused releases", js.live,
		     js.rejected_frees);
	if (!o_.quiet)
		std::printf(
			"%u frames, %zu slots of caches (%u workers asked for)\n"
			"  particles: %" PRIu64 " spawned, %" PRIu64
			" released (%" PRIu64 " through another slot than"
			" their maker's), %" PRIu64 " not made: pool full\n"
			"  jobs: %" PRIu64 " run, %" PRIu64
			" released through another slot than their maker's, %"
			PRIu64 " subtrees done inline: pool full\n"
			"  sparks made in the nested arena, implicit path: %"
			PRIu64 "\n"
			"  slot leases %" PRIu64 ", of which a slot changed"
			" threads %" PRIu64 "; implicit-path leases %" PRIu64
			" (index beyond the table %" PRIu64 ")"
			"; slots wanted by two threads at once %" PRIu64 "\n",
			o_.frames, ac.size(), o_.workers, get(t_.spawned),
			get(t_.expired), get(t_.expired_elsewhere),
			get(t_.spawn_failed), get(t_.jobs_run),
			get(t_.jobs_freed_elsewhere), get(t_.inlined),
			get(t_.sparks), leases, handovers, get(t_.implicit),
			get(t_.beyond), get(t_.collisions));
	return ok;
}

int demo::run()
{
	/*
	 * Two threads more than our arena's slots: the spare ones serve
	 * side_ and come into our arena by turns, so slots change hands.
	 */
	tbb::global_control threads(
		tbb::global_control::max_allowed_parallelism,
		o_.workers + 2);
	std::unique_ptr<arena_caches> ac;
	bool ok = true;

	want_sum_ = subtree_sum(1, 0);
	arena_.execute([&] {
		ac = std::make_unique<arena_caches>(
			tbb::this_task_arena::max_concurrency() + 1,
			particles_, jobs_, t_, o_.misuse == options::share,
			o_.misuse != options::none);
	});
	for (std::uint32_t frame = 0;; frame++) {
		bool last = frame == o_.frames;

		/* A frame enters the arena through any free slot, or runs
		 * on a worker if none is free: the caches of a slot pass
		 * between this thread and the workers. */
		arena_.execute([&] {
			particle_frame(ac.get(), frame, last);
			ok &= check_frame();
			if (!last)
				job_frame(ac.get(), frame);
		});
		if (last)
			break;
		/* Idle workers leave the arena, and come back to
		 * whichever slot is free. */
		if (o_.idle)
			std::this_thread::sleep_for(
				std::chrono::microseconds(o_.idle));
	}
	ok &= check(*ac);
	/* Every task has ended (execute waited for them): the caches go
	 * back to the pools from this thread, as lfp_cache_destroy asks. */
	ac.reset();
	ok &= drain(particles_, "particle slots one thread can take");
	ok &= drain(jobs_, "job slots one thread can take");
	if (!o_.quiet)
		std::printf("  books %s\n", ok ? "balance" : "BROKEN");
	return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}

void demo::job_frame(arena_caches *ac, std::uint32_t frame)
{
	tbb::task_group tg;
	job *root;

	frame_sum_.store(0, std::memory_order_relaxed);
	{
		lease l = take(ac);

		root = job_new(l, 1, 0, frame);
	}
	if (root) {
		tg.run([this, ac, &tg, root] { job_run(ac, tg, root); });
	} else {
		add(t_.inlined);
		frame_sum_.fetch_add(want_sum_, std::memory_order_relaxed);
	}
	tg.wait();
	if (frame_sum_.load(std::memory_order_relaxed) != want_sum_) {
		sum_errors_++;
		expect(false, "a frame's job sum",
		       frame_sum_.load(std::memory_order_relaxed), want_sum_);
	}
	lfp::stats st = jobs_.stats();
	if (st.live != 0) {
		sum_errors_++;
		expect(false, "jobs live after their frame", st.live, 0);
	}
}

void usage(std::FILE *f)
{
	std::fputs(
		"usage: tbb_particles [--workers N] [--frames N] [--emitters N]\n"
		"                     [--capacity N] [--jobs N] [--depth N]\n"
		"                     [--fanout N] [--nested N]\n"
		"                     [--misuse share|nested] [--quiet] [--help]\n"
		"Particles and a tree of jobs per frame on oneTBB; each worker\n"
		"allocates through the lfpool caches of its arena slot.\n"
		"  --workers N   slots of the arena, 1..64 (default 4)\n"
		"  --frames N    frames, 1..100000 (default 60)\n"
		"  --emitters N  entries of the particle table (default 2048)\n"
		"  --capacity N  particles the pool holds (default 1024)\n"
		"  --jobs N      jobs the job pool holds (default 48)\n"
		"  --depth N     levels of the job tree below its root, 0..10\n"
		"                (default 5)\n"
		"  --fanout N    children per job, 1..8 (default 3)\n"
		"  --nested N    every Nth job enters a second arena; 0: none\n"
		"                (default 7)\n"
		"  --work N      busy-work steps per job (default 2000)\n"
		"  --idle N      microseconds the arena idles between frames\n"
		"                (default 1000)\n"
		"  --misuse M    break the rules on purpose, for the test that\n"
		"                the checks catch it: share (every slot uses\n"
		"                cache 0) or nested (the second arena's code\n"
		"                uses our caches with its own index)\n"
		"  --quiet       print nothing unless something is wrong\n",
		f);
}

bool parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = std::strtoul(s, &end, 10);
	if (errno || *s == '-' || end == s || *end || v < lo || v > hi)
		return false;
	*out = (unsigned)v;
	return true;
}

bool parse_misuse(const char *s, options *o)
{
	if (!std::strcmp(s, "share"))
		o->misuse = options::share;
	else if (!std::strcmp(s, "nested"))
		o->misuse = options::nested_table;
	else
		return false;
	return true;
}

int parse_options(int argc, char **argv, options *o)
{
	static const struct option longs[] = {
		{ "workers", 1, nullptr, 'w' }, { "frames", 1, nullptr, 'n' },
		{ "emitters", 1, nullptr, 'e' },
		{ "capacity", 1, nullptr, 'c' }, { "jobs", 1, nullptr, 'j' },
		{ "depth", 1, nullptr, 'd' },	 { "fanout", 1, nullptr, 'f' },
		{ "nested", 1, nullptr, 'N' },	 { "misuse", 1, nullptr, 'm' },
		{ "work", 1, nullptr, 'k' },	 { "idle", 1, nullptr, 'i' },
		{ "quiet", 0, nullptr, 'q' },	 { "help", 0, nullptr, 'h' },
		{ nullptr, 0, nullptr, 0 }
	};
	bool ok = true;
	int c;

	while (ok && (c = getopt_long(argc, argv, "w:n:e:c:j:d:f:N:m:k:i:qh",
				      longs, nullptr)) != -1) {
		switch (c) {
		case 'w': ok = parse_uint(optarg, 1, max_workers, &o->workers); break;
		case 'n': ok = parse_uint(optarg, 1, 100000, &o->frames); break;
		case 'e': ok = parse_uint(optarg, 1, 1u << 22, &o->emitters); break;
		case 'c': ok = parse_uint(optarg, 1, 1u << 24, &o->capacity); break;
		case 'j': ok = parse_uint(optarg, 1, 1u << 24, &o->jobs); break;
		case 'd': ok = parse_uint(optarg, 0, 10, &o->depth); break;
		case 'f': ok = parse_uint(optarg, 1, max_fanout, &o->fanout); break;
		case 'N': ok = parse_uint(optarg, 0, 1u << 30, &o->nested); break;
		case 'm': ok = parse_misuse(optarg, o); break;
		case 'k': ok = parse_uint(optarg, 0, 1u << 30, &o->work); break;
		case 'i': ok = parse_uint(optarg, 0, 1000000, &o->idle); break;
		case 'q': o->quiet = true; break;
		case 'h': usage(stdout); std::exit(EXIT_SUCCESS);
		default: ok = false;
		}
	}
	if (!ok || optind != argc) {
		usage(stderr);
		return -1;
	}
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	options o;

	if (parse_options(argc, argv, &o))
		return 2;
	try {
		demo d(o);

		return d.run();
	} catch (const std::exception &e) {
		std::fprintf(stderr, "tbb_particles: %s\n", e.what());
		return 2;
	}
}
