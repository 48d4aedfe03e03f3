// SPDX-License-Identifier: MIT
//
// The owner/thief handshake on the C11 memory model: a cache's owner
// enters and leaves operations (lfpool.h's inline path, include/lfpool/
// inline.h, and the out-of-line one, src/cache/exchange.c) while a thief
// empties the cache when it finds the owner idle (src/cache/steal.c), or
// a fork holds it (src/cache/fork_hold.c, fork_wait.c), or a reader
// counts it (exchange.c, cache_counts), across folds of the count and a
// change of owner; their own source compiled through stdatomic.h here.
//
// The handshake is Dekker's: the owner stores active, then loads ctl; the
// thief sets STEAL in ctl, then loads active. Each needs its store ordered
// before its load, which C11 gives only with seq_cst on both sides (the
// library's way where membarrier(2) is missing: lfpi_cache_membarrier 0).
// With membarrier the owner's side is a compiler barrier (a signal
// fence) and the thief's a membarrier(2) call, which runs a full barrier
// on every running thread: whichever point of the owner's code that
// barrier falls on, the outcome is one that seq_cst fences at the owner's
// signal fence and at the thief's call allow. So the check models it as
// such: the signal fence in lfpi_cache_enter_fast (and in its copy out
// of line, lfpi_cache_enter) is a seq_cst fence, and
// membarrier(2) a seq_cst fence in the thief (what is assumed, here and
// in README.md's "Checked on the C11 memory model").
#include <sys/syscall.h>
#include <unistd.h>

#include "check.hpp"

// membarrier(2), the thief's barrier: a seq_cst fence where steal.c
// calls it (its place in the census), and success.
static long lfpm_syscall(const char *file, int line, const char *func,
			 long nr, long cmd, long flags, long cpu)
{
	(void)cmd;
	(void)flags;
	(void)cpu;
	RL_ASSERT(nr == __NR_membarrier);
	lfpm_fence(lfpm_order(rl::mo_seq_cst, LFPM_FENCE, file, line, func),
		   $);
	return 0;
}
#define syscall(...) lfpm_syscall(__FILE__, __LINE__, __func__, __VA_ARGS__)

// The clock of fork_wait.c's bounded waits (for a fork, and a fork's for
// a thief; check.hpp): 0.1 ms passes at each reading (init), so a wait
// gives up after ten looks per millisecond of LFPI_CACHE_FORK_WAIT_MS.

// The allocations out of slots[] that make a move fold the count (2^50
// in the library); counts_fold and fold_handover lower it, so that a
// refill folds.
static uint64_t lfpm_cache_fold;
#define LFPI_CACHE_FOLD lfpm_cache_fold

// steal.c's fault, off but with --expect-fail: a thief's claim that
// ignores another thief's.
static bool lfpm_fault_claim_ignores_steal;
#define LFPI_FAULT_CLAIM_IGNORES_STEAL lfpm_fault_claim_ignores_steal

#include "lists/stack.c"
#include "lists/depot.c"
#include "cache/fork_wait.c"
#include "cache/exchange.c"
#include "cache/steal.c"
#include "cache/fork_hold.c"

// No fresh slots: every slot of the test's pool is placed from the start.
uint32_t lfpi_slab_bump(struct lfp_pool *pool, uint32_t n, uint32_t *first)
{
	(void)pool;
	(void)n;
	*first = LFPI_NIL;
	return 0;
}

// registry.c's: only the child's handler (lfpi_cache_fork_child) asks,
// which no test runs (the child has one thread).
bool lfpi_cache_is_mine(const struct lfp_cache *c)
{
	(void)c;
	RL_ASSERT(!"lfpi_cache_is_mine is not modelled");
	return false;
}

// The out-of-line half of the inline release (src/pool/slow.c), as it
// is there: the cache's operation, lfpi_cache_put.
int lfpi_cache_put_slow(struct lfp_cache *c, uint32_t idx, uint32_t ctl)
{
	lfpi_cache_put(c, idx, ctl);
	return 0;
}

// The bulk calls' out-of-line halves (src/pool/bulk.c), which the
// inline bulk paths call when a thief's request is pending or the cache
// holds too few slots: one slot at a time through the out-of-line pop
// and put, made live or free as the library does (parenthesized:
// lfpool.h makes their names macros).
// With bulk_idle set (handover), they return at once: that test is of
// the inline paths' own leaving.
static bool bulk_idle;

size_t (lfp_cache_alloc_bulk)(struct lfp_cache *c, void **objs, size_t n)
{
	size_t got = 0;

	if (bulk_idle)
		return 0;
	for (; got < n; got++) {
		uint32_t ctl = LFPI_CTL_OUT, idx = lfpi_cache_pop(c, &ctl);
		_Atomic(uint32_t) *g;

		if (idx == LFPI_NIL)
			break;
		g = &c->hot.gen[2 * (size_t)idx];
		atomic_store_explicit(
			g, atomic_load_explicit(g, memory_order_relaxed) + 1,
			memory_order_relaxed);
		objs[got] = c->hot.objs + (size_t)idx * c->hot.stride;
	}
	return got;
}

size_t (lfp_cache_free_bulk)(struct lfp_cache *c, void *const *objs,
			     size_t n)
{
	if (bulk_idle)
		return 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t idx = (uint32_t)lfpi_cache_slot_of(&c->hot, objs[i]);
		_Atomic(uint32_t) *g = &c->hot.gen[2 * (size_t)idx];
		uint32_t gen;

		RL_ASSERT(idx < c->hot.nslots);
		gen = atomic_load_explicit(g, memory_order_relaxed);
		RL_ASSERT(gen & 1); // live: no test here releases twice
		atomic_store_explicit(g, gen + 1, memory_order_relaxed);
		lfpi_cache_put(c, idx, LFPI_CTL_OUT);
	}
	return n;
}

namespace {

constexpr uint32_t SLOTS = 4, CACHE_SIZE = 4, BATCH = 2, MAGS = 4;

typedef lfpm_object object;

// A pool of SLOTS objects, laid out by hand as lfp_create would (only
// what the cache layer reads), with one cache owned by thread 0 holding
// slots 0 and 1; slots 2 and 3 are on the free list.
struct pool_base {
	object objs[SLOTS];
	_Atomic(uint32_t) links[SLOTS];
	_Atomic(uint32_t) gens[2 * SLOTS];
	alignas(8) unsigned char mags[MAGS * (sizeof(struct lfpi_mag) +
					      BATCH * sizeof(uint32_t))];
	struct lfp_pool pool{};
	alignas(64) unsigned char cache_mem[sizeof(struct lfp_cache) +
					    CACHE_SIZE * sizeof(uint32_t)];
	struct lfp_cache *c;

	// membarrier: the handshake's mode (lfpi_cache_membarrier).
	// published: the cache is in the registry from the start; else the
	// owner's thread publishes it (publish) before its operations.
	void init(int membarrier, bool published)
	{
		lfpi_cache_membarrier = membarrier;
		bulk_idle = false;
		lfpm_cache_fold = UINT64_C(1) << 50;
		lfpm_now_ns = 0;
		lfpm_clock_step = 100000;
		lfpm_light_barrier =
			membarrier ? "lfpi_cache_enter_fast lfpi_cache_enter"
				   : nullptr;
		lfpi_stack_init(&pool.free, links, sizeof(links[0]));
		lfpi_depot_init(&pool.depot, mags, MAGS, BATCH);
		for (uint32_t m = 0; m < MAGS; m++)
			new (lfpi_depot_mag(&pool.depot, m)) lfpi_mag;
		pool.capacity = SLOTS;
		pool.batch = BATCH;
		pool.cache_size = CACHE_SIZE;
		for (uint32_t i = 0; i < SLOTS; i++) {
			objs[i].payload($) = 0;
			objs[i].owned($).store(0, rl::mo_relaxed);
			gens[2 * i]($).store(0, rl::mo_relaxed);
		}
		lfpi_stack_push(&pool.free, 3, 3);
		lfpi_stack_push(&pool.free, 2, 2);

		c = new (cache_mem) lfp_cache();
		if (!published)
			return;
		// Else the owner's thread makes and publishes it (publish).
		plain_fields();
		publish_fields();
		pool.caches($).store(c, rl::mo_relaxed);
	}

	// What the registry writes into a new cache's plain fields.
	void plain_fields()
	{
		c->pool = &pool;
		c->batch = BATCH;
		c->spare = LFPI_NIL;
		c->ctl_keep = lfpi_cache_ctl_keep(&pool);
		c->hot.size = CACHE_SIZE;
		c->hot.slots = c->slots;
		c->hot.objs = reinterpret_cast<char *>(objs);
		c->hot.stride = sizeof(object);
		c->hot.gen = gens;
		c->hot.inv = 1; // exact division by 256: a rotation
		c->hot.shift = 8;
		c->hot.nslots = SLOTS;
	}

	// The start of counts_fold and fold_handover: the cache has folded
	// counts before (3 earlier allocations out of slots[] counted in
	// hot.top: its high part 5, two slots in it), and the fold's
	// threshold is lowered so that a refill's move folds (7
	// allocations out of slots[] by then, counting the two refilled)
	// and a miss's does not (1). No thief calls membarrier(2) there:
	// the owner's barrier is the compiler barrier alone, as on the
	// machine.
	static constexpr uint64_t EARLIER = 3, FOLDED = EARLIER + 2;
	void init_folding()
	{
		init(LFPI_MB_SYSCALL, true);
		lfpm_light_barrier = nullptr;
		c->hot.top($).store(FOLDED << LFPI_TOP_SHIFT | 2,
				    rl::mo_relaxed);
		lfpm_cache_fold = FOLDED + 1;
	}

	// What the registry writes into a new cache (registry.c,
	// cache_init, checked in registry.cc): the atomics (the rest was
	// set above), here with slots 0 and 1 in slots[].
	void publish_fields()
	{
		atomic_init(&c->hot.pool, &pool);
		atomic_init(&c->hot.active, 0);
		atomic_init(&c->hot.ctl, c->ctl_keep);
		atomic_init(&c->hot.frees, 0);
		c->slots[0] = 0;
		c->slots[1] = 1;
		atomic_init(&c->hot.top, 2 << LFPI_TOP_SHIFT | 2);
		atomic_init(&c->allocs_base, 0);
		atomic_init(&c->fold_seq, 0);
		atomic_init(&c->state, LFPI_CACHE_EXPLICIT);
		lfpi_counters_init(&c->ctr);
	}

	// The registry's publication of a new cache (cache_claim), modelled
	// (the registry is not compiled here): the cache made in fresh memory
	// (its atomics hold nothing until stored), its fields, then a
	// release store of the registry's head, as its release CAS.
	void publish()
	{
		c->~lfp_cache();
		c = lfpm_fresh<lfp_cache>(cache_mem);
		plain_fields();
		publish_fields();
		pool.caches($).store(c, rl::mo_release);
	}

	~pool_base()
	{
		for (uint32_t m = 0; m < MAGS; m++)
			lfpi_depot_mag(&pool.depot, m)->~lfpi_mag();
		c->~lfp_cache();
	}

	// The owner: take a slot (the inline path, else the out-of-line
	// one, which keeps off while a thief holds the cache), use it and
	// give it back (inline, else out of line; with put, as lfp_free
	// and the handles do: marked free, then lfpi_cache_put).
	void owner(int rounds, bool put = false)
	{
		for (int k = 0; k < rounds; k++) {
			uint32_t idx, ctl = LFPI_CTL_OUT;
			void *p = lfpi_cache_alloc_try(c);

			if (p)
				idx = (uint32_t)(static_cast<object *>(p) - objs);
			else if ((idx = lfpi_cache_pop(c, &ctl)) == LFPI_NIL)
				continue;
			RL_ASSERT(idx < SLOTS);
			lfpm_own(objs[idx]);
			if (put) {
				mark_free(idx);
				lfpi_cache_put(c, idx, LFPI_CTL_OUT);
			} else {
				lfpi_cache_push(c, idx, 0);
			}
		}
	}

	// The owner through the inline bulk paths, runs of per (1 or 2)
	// slots each way (the out-of-line halves above when a thief's
	// request is pending or the cache holds fewer).
	void owner_bulk(int rounds, size_t per)
	{
		for (int k = 0; k < rounds; k++) {
			void *p[2];
			size_t got = lfpi_cache_alloc_bulk_body(c, p, per);

			for (size_t i = 0; i < got; i++)
				lfpm_own(*static_cast<object *>(p[i]));
			RL_ASSERT(lfpi_cache_free_bulk_body(c, p, got) == got);
		}
	}

	// Slot idx marked free (its generation moved), as a release does
	// before it puts the slot in a cache.
	void mark_free(uint32_t idx)
	{
		gens[2 * idx]($).store(gens[2 * idx]($).load(rl::mo_relaxed) + 1,
				       rl::mo_relaxed);
	}

	// The owner takes a slot (a hit, else a miss) and uses it.
	uint32_t take()
	{
		void *p = lfpi_cache_alloc_try(c);
		uint32_t idx, ctl = LFPI_CTL_OUT;

		if (p)
			idx = (uint32_t)(static_cast<object *>(p) - objs);
		else
			idx = lfpi_cache_pop(c, &ctl);
		RL_ASSERT(idx < SLOTS);
		lfpm_own(objs[idx]);
		return idx;
	}

	// A thief: empty idle caches into the depot, then take what the
	// pool's lists hold, use it and give it back.
	void thief()
	{
		uint32_t emptied = 0, retries = 0, idx;
		uint32_t taken[SLOTS], n = 0;

		lfpi_cache_steal(&pool, nullptr, &emptied, &retries);
		while (n < SLOTS &&
		       ((idx = lfpi_depot_take_one(&pool.depot, &retries)) !=
				LFPI_NIL ||
			(idx = lfpi_stack_pop(&pool.free, &retries)) != LFPI_NIL))
			taken[n++] = idx;
		for (uint32_t i = 0; i < n; i++) {
			RL_ASSERT(taken[i] < SLOTS);
			lfpm_own(objs[taken[i]]);
			lfpi_stack_push(&pool.free, taken[i], taken[i]);
		}
	}

	static int mark(uint32_t idx, void *arg)
	{
		uint32_t *seen = static_cast<uint32_t *>(arg);

		RL_ASSERT(idx < SLOTS && !(*seen & 1u << idx));
		*seen |= 1u << idx;
		return 0;
	}

	// Every slot once: in the cache, the depot or the free list.
	void all_back()
	{
		uint32_t seen = 0, n = lfpi_cache_n(c);

		for (uint32_t i = 0; i < n; i++)
			mark(c->slots[i], &seen);
		lfpi_depot_walk(&pool.depot, mark, &seen);
		lfpi_stack_walk(&pool.free, mark, &seen);
		RL_ASSERT(seen == (1u << SLOTS) - 1);
		// Every operation left (a cache left busy would keep
		// thieves off its slots for good), and the count in bounds.
		RL_ASSERT(atomic_load_explicit(&c->hot.active,
					       memory_order_relaxed) == 0);
		RL_ASSERT(n <= CACHE_SIZE);
	}
};

// The handshake with membarrier(2): the owner's fast path has only the
// compiler barrier between its store of active and its load of ctl. The
// owner's thread makes the cache, as a first lfp_alloc does.
struct steal_membarrier : rl::test_suite<steal_membarrier, 2>, pool_base {
	void before() { init(LFPI_MB_SYSCALL, false); }
	void thread(unsigned id)
	{
		if (id == 0) {
			publish();
			owner(1);
		} else {
			thief();
		}
	}
	void after() { all_back(); }
};

// Without membarrier: ctl keeps LFPI_CTL_SLOW, every entry is the
// seq_cst one of lfpi_cache_enter.
struct steal_seq_cst : rl::test_suite<steal_seq_cst, 2>, pool_base {
	void before() { init(0, true); }
	void thread(unsigned id) { id == 0 ? owner(1) : thief(); }
	void after() { all_back(); }
};

// lfp_stats' reading of a cache's counts while its owner allocates and
// releases on the fast path: releases read before allocations (as
// lfp_stats reads them) never outnumber them, since each release
// follows its allocation (lfpool.h's release of hot.frees, the acquire
// in cache_counts).
struct counts_reader : rl::test_suite<counts_reader, 2>, pool_base {
	void before() { init(LFPI_MB_SYSCALL, true); }
	void thread(unsigned id)
	{
		if (id == 0) {
			owner(2);
			return;
		}
		uint64_t frees = lfpi_cache_value(
			c, offsetof(struct lfpi_counters, frees));
		uint64_t allocs = lfpi_cache_value(
			c, offsetof(struct lfpi_counters, allocs));

		RL_ASSERT(frees <= allocs && allocs <= 2);
	}
	void after() { all_back(); }
};

// The same reading across a fold. The cache starts with three earlier
// allocations out of slots[] counted in hot.top (its high part 5, two
// slots in it). The owner takes two slots (hits), then a third: a miss,
// whose refill is a move that folds the five into allocs_base under the
// fold's sequence (cache_fold), and whose own move does not fold;
// it releases one, takes it again (a hit) and releases all three.
// hot.top is 5|2, 5|1 or 5|0 before the fold (high part|slots), and
// any other value after it (2|2 from the fold's own store, 1|1 after
// the miss's take, 5|4 at the end). The
// reader loads hot.top, relaxed, then counts, twice: once it has seen a
// top from after the fold, any later reading must include the five (a
// reading that took allocs_base from before the fold and hot.top from
// after it counts them not at all); no reading counts more than the
// seven allocations (one that took them the other way round counts them
// twice); and none is lower than the one before.
struct counts_fold : rl::test_suite<counts_fold, 2>, pool_base {
	static constexpr uint64_t ALL = EARLIER + 4;

	void before() { init_folding(); }
	void thread(unsigned id)
	{
		if (id == 0) {
			uint32_t idx[3];

			for (uint32_t k = 0; k < 3; k++)
				idx[k] = take();
			lfpi_cache_push(c, idx[0], 0);
			idx[0] = take();
			for (uint32_t k = 0; k < 3; k++)
				lfpi_cache_push(c, idx[k], 0);
			return;
		}
		uint64_t last = 0;
		bool folded = false;

		for (int k = 0; k < 2; k++) {
			uint64_t top = atomic_load_explicit(&c->hot.top,
							    memory_order_relaxed);
			folded |= top >> LFPI_TOP_SHIFT != FOLDED ||
				  (top & LFPI_TOP_COUNT) > 2;
			uint64_t allocs = lfpi_cache_value(
				c, offsetof(struct lfpi_counters, allocs));

			RL_ASSERT(last <= allocs && allocs <= ALL);
			RL_ASSERT(!folded || allocs >= FOLDED);
			last = allocs;
		}
	}
	void after()
	{
		all_back();
		// Every allocation counted once (after the owner ended).
		RL_ASSERT(lfpi_cache_value(c, offsetof(struct lfpi_counters,
						       allocs)) == ALL);
		RL_ASSERT(lfpi_cache_value(c, offsetof(struct lfpi_counters,
						       frees)) == 4);
	}
};

// A release counted in another cache than its allocation: thread 0
// takes a slot out of its cache (a hit) and hands the object to thread
// 1, which releases it into its own cache (HOW 0: inline, as
// lfp_cache_free; 1: lfpi_cache_put, as lfp_free and the handles; 2:
// out of line, cache_pushed; 3: the inline bulk release,
// lfpi_cache_put_done). A reader counts as lfp_stats does, the
// releases first, then the allocations: one that counts the release
// must count the allocation too, which only the release of the second
// cache's count of releases and the reader's acquire of it carry (the
// allocation happened before the release, through the hand-over).
template <int HOW>
struct counts_across : rl::test_suite<counts_across<HOW>, 3>, pool_base {
	alignas(64) unsigned char mem2[sizeof(struct lfp_cache) +
				       CACHE_SIZE * sizeof(uint32_t)];
	struct lfp_cache *c2;
	rl::atomic<int> handed;
	uint32_t given;

	void before()
	{
		struct lfp_cache *first;

		init(LFPI_MB_SYSCALL, true);
		lfpm_light_barrier = nullptr; // no thief: a compiler barrier
		// Thread 1's cache: as the first, but empty.
		first = c;
		c = new (mem2) lfp_cache();
		plain_fields();
		publish_fields();
		c->hot.top($).store(0, rl::mo_relaxed);
		c2 = c;
		c = first;
		handed($).store(0, rl::mo_relaxed);
	}
	~counts_across() { c2->~lfp_cache(); }
	void thread(unsigned id)
	{
		if (id == 0) {
			given = take();
			handed($).store(1, rl::mo_release);
		} else if (id == 1) {
			while (!handed($).load(rl::mo_acquire))
				rl::yield(1, $);
			lfpm_own(objs[given]);
			if (HOW == 0) {
				lfpi_cache_push(c2, given, 0);
				return;
			}
			if (HOW == 3) {
				void *p = &objs[given];

				RL_ASSERT(lfpi_cache_free_bulk_body(c2, &p, 1) ==
					  1);
				return;
			}
			mark_free(given);
			if (HOW == 1) {
				lfpi_cache_put(c2, given, LFPI_CTL_OUT);
			} else {
				uint32_t ctl = lfpi_cache_enter(c2);

				lfpi_cache_put_slow(c2, given, ctl);
			}
		} else {
			uint64_t frees = lfpi_cache_value(
				c2, offsetof(struct lfpi_counters, frees));
			uint64_t allocs = lfpi_cache_value(
				c, offsetof(struct lfpi_counters, allocs));

			RL_ASSERT(frees <= allocs);
		}
	}
};

// A cache handed to another owner across a fold (an explicit cache
// passed on under a lock, as lfpool(7) allows; no thief, so the owners'
// barrier is the compiler barrier alone). The cache starts as in
// counts_fold. Owner A takes two slots (hits) and a third (a miss whose
// refill folds the five earlier allocations into allocs_base), then
// hands the cache to owner B, whose first store of hot.top is a pop
// (FIRST 1: lfpi_cache_pop_top), a push (2: lfpi_cache_push_top), a
// refill (3: the store of lfpi_cache_set_n that is not a fold's), a
// bulk pop (4: cache_popped), a bulk push (5: cache_pushed_run) or an
// out-of-line push (6: cache_pushed, where the inline path sends a push
// it cannot make, as for a full cache), the library's own push (7:
// lfpi_cache_put, as lfp_free and the handles make it), or the inline
// bulk paths' pop (8: lfpi_cache_take_objs) or push (9:
// lfpi_cache_put_done). A store by B is in no release sequence of A's,
// so only its own release carries the fold to a reader (with one owner,
// C11 puts the owner's later stores of hot.top in the release sequence
// of its fold, and a reader acquires the fold from a relaxed one). The
// reader waits for one of B's values of hot.top (relaxed, up to 128
// looks: B comes after all of A's work), then counts: the fold must be
// in the count.
template <int FIRST>
struct fold_handover : rl::test_suite<fold_handover<FIRST>, 3>, pool_base {
	rl::atomic<int> handed;
	uint32_t given;

	void before()
	{
		init_folding();
		handed($).store(0, rl::mo_relaxed);
	}
	static uint64_t word(uint64_t high, uint64_t n)
	{
		return high << LFPI_TOP_SHIFT | n;
	}
	// Whether hot.top holds a value only B stores.
	static bool by_b(uint64_t top)
	{
		if (FIRST == 1 || FIRST == 4 || FIRST == 8)
			return top == word(1, 0);
		if (FIRST == 3)
			return top == word(3, 2) || top == word(2, 1);
		return top == word(4, 4);
	}
	void thread(unsigned id)
	{
		if (id == 0) {
			uint32_t idx[4];

			for (uint32_t k = 0; k < 3; k++)
				idx[k] = take(); // the fold 2|2, then 1|1
			if (FIRST == 1 || FIRST == 4 || FIRST == 8) {
				// B's hit takes the last slot: 1|0.
				handed($).store(1, rl::mo_release);
				for (uint32_t k = 0; k < 3; k++)
					lfpi_stack_push(&pool.free, idx[k],
							idx[k]);
			} else if (FIRST != 3) {
				lfpi_cache_push(c, idx[1], 0); // 2|2
				lfpi_cache_push(c, idx[2], 0); // 3|3
				given = idx[0];
				// B releases the third: 4|4.
				handed($).store(1, rl::mo_release);
			} else {
				idx[3] = take(); // a hit: 1|0, empty
				for (uint32_t k = 0; k < 4; k++)
					lfpi_stack_push(&pool.free, idx[k],
							idx[k]);
				// B's miss refills two (3|2) and takes one
				// (2|1).
				handed($).store(1, rl::mo_release);
			}
		} else if (id == 1) {
			while (!handed($).load(rl::mo_acquire))
				rl::yield(1, $);
			uint32_t ctl, got;
			void *obj;

			if (FIRST == 2) {
				lfpi_cache_push(c, given, 0);
			} else if (FIRST == 8) {
				RL_ASSERT(lfpi_cache_alloc_bulk_body(c, &obj, 1) ==
					  1);
				got = (uint32_t)(static_cast<object *>(obj) - objs);
				lfpm_own(objs[got]);
				lfpi_stack_push(&pool.free, got, got);
			} else if (FIRST == 9) {
				obj = &objs[given];
				RL_ASSERT(lfpi_cache_free_bulk_body(c, &obj, 1) ==
					  1);
			} else if (FIRST == 4) {
				RL_ASSERT(lfpi_cache_pop_run(c, &obj, 1) == 1);
				got = (uint32_t)(uintptr_t)obj;
				lfpm_own(objs[got]);
				lfpi_stack_push(&pool.free, got, got);
			} else if (FIRST >= 5 && FIRST <= 7) {
				// Marked free, as the callers do first.
				mark_free(given);
				if (FIRST == 5) {
					lfpi_cache_put_run(c, &given, 1);
				} else if (FIRST == 7) {
					lfpi_cache_put(c, given, LFPI_CTL_OUT);
				} else {
					ctl = lfpi_cache_enter(c);
					lfpi_cache_put_slow(c, given, ctl);
				}
			} else {
				uint32_t i = take();
				lfpi_stack_push(&pool.free, i, i);
			}
		} else {
			bool seen = false;

			for (int k = 0; k < 128 && !seen; k++) {
				seen = by_b(atomic_load_explicit(
					&c->hot.top, memory_order_relaxed));
				if (!seen)
					rl::yield(1, $);
			}
			if (seen)
				RL_ASSERT(lfpi_cache_value(
						  c, offsetof(struct lfpi_counters,
							      allocs)) >= FOLDED);
		}
	}
	void after() { all_back(); }
};

// Two thieves at once, the owner idle: only one may hold the cache
// (lfpi_cache_claim_steal), the other waits for it to let go and looks
// again. Two that emptied it together would give its slots to the depot
// twice, and two threads would own one object. (The wait runs in
// almost every execution, but nothing here fails without it.)
struct two_thieves : rl::test_suite<two_thieves, 2>, pool_base {
	void before() { init(LFPI_MB_SYSCALL, true); }
	void thread(unsigned) { thief(); }
	void after() { all_back(); }
};

// fork(2) while the owner works (fork.c's handlers, without their locks:
// no test thread takes them). The forking thread raises the fork flag,
// takes the cache as a thief would (lfpi_cache_fork_prepare), then does
// what the child may do with a cache that was not busy at the fork: hand
// out its slots (the child's copy of them is what the parent's memory
// held; here they are the parent's, which must be as quiet); then gives
// the cache back (lfpi_cache_fork_parent) and lowers the flag. The owner
// allocates as lfp_alloc does (slow.c, slow_cache_miss): the cache, then
// the lists (empty here), then it waits while a thief or the fork holds
// the cache (bounded, for a fork) and looks again: it gets a slot every
// time (a wait that gave up, or never waited, would end in a NULL).
// LATE: the fork lowers the flag only after the owner is done (an
// atfork handler that waits for the owner's thread: its wait for the
// fork gives up); then an owner that found its cache claimed, with the
// fork the only taker, must see the flag up, or its wait would not be
// bounded.
template <int MEMBARRIER, bool LATE>
struct fork_hold : rl::test_suite<fork_hold<MEMBARRIER, LATE>, 2>, pool_base {
	rl::atomic<int> done;

	void before()
	{
		uint32_t retries = 0;

		init(MEMBARRIER, true);
		// Every slot in the cache, none on the lists: an owner that
		// finds the cache held has to wait.
		for (uint32_t i = 2; i < SLOTS; i++)
			c->slots[i] = lfpi_stack_pop(&pool.free, &retries);
		c->hot.top($).store(SLOTS << LFPI_TOP_SHIFT | SLOTS,
				    rl::mo_relaxed);
		done($).store(0, rl::mo_relaxed);
	}
	uint32_t alloc()
	{
		uint32_t idx, ctl = LFPI_CTL_OUT, retries = 0;
		void *p = lfpi_cache_alloc_try(c);

		if (p)
			return (uint32_t)(static_cast<object *>(p) - objs);
		while ((idx = lfpi_cache_pop(c, &ctl)) == LFPI_NIL) {
			if ((idx = lfpi_depot_take_one(&pool.depot, &retries)) !=
				    LFPI_NIL ||
			    (idx = lfpi_stack_pop(&pool.free, &retries)) !=
				    LFPI_NIL)
				break;
			if (LATE && (ctl & LFPI_CTL_STEAL))
				RL_ASSERT(lfpi_cache_fork_busy());
			if (!lfpi_cache_wait_thief(c, ctl))
				break;
			ctl = LFPI_CTL_OUT;
		}
		return idx;
	}
	void thread(unsigned id)
	{
		if (id == 0) {
			for (int k = 0; k < 2; k++) {
				uint32_t idx = alloc();

				// The fork ends without waiting for us: ours is
				// a slot once it let go, never a NULL.
				if (LATE && idx == LFPI_NIL)
					continue;
				RL_ASSERT(idx < SLOTS);
				lfpm_own(objs[idx]);
				lfpi_cache_push(c, idx, 0);
			}
			done($).store(1, rl::mo_relaxed);
			return;
		}
		lfpi_cache_fork_begin();
		lfpi_cache_fork_prepare(&pool);
		if (!c->fork_busy) {
			uint32_t n = lfpi_cache_n(c);

			for (uint32_t i = 0; i < n; i++) {
				RL_ASSERT(c->slots[i] < SLOTS);
				lfpm_own(objs[c->slots[i]]);
			}
		}
		lfpi_cache_fork_parent(&pool);
		while (LATE && !done($).load(rl::mo_relaxed))
			rl::yield(1, $);
		lfpi_cache_fork_end();
	}
	void after() { all_back(); }
};

// The handshake with membarrier(2), the owner releasing as lfp_free and
// the handles do out of line (lfpi_cache_put, exchange.c), its cache in the
// registry from the start.
struct steal_put : rl::test_suite<steal_put, 2>, pool_base {
	void before() { init(LFPI_MB_SYSCALL, true); }
	void thread(unsigned id)
	{
		if (id == 0)
			owner(1, true);
		else
			thief();
	}
	void after() { all_back(); }
};

// The same with the owner on the inline bulk paths
// (lfpi_cache_take_objs, lfpi_cache_put_done), runs of PER slots.
template <size_t PER>
struct steal_bulk : rl::test_suite<steal_bulk<PER>, 2>, pool_base {
	void before() { init(LFPI_MB_SYSCALL, true); }
	void thread(unsigned id)
	{
		if (id == 0)
			owner_bulk(2, PER);
		else
			thief();
	}
	void after() { all_back(); }
};

// A fork while the owner's thread makes and publishes its cache, as a
// first lfp_alloc does: the fork's handlers find the registry's head
// empty, or the cache with its atomics stored (a stale read of one is
// Relacy's access to an uninitialized variable: the cache is in fresh
// memory, see publish), and the owner allocates and releases meanwhile.
struct fork_publish : rl::test_suite<fork_publish, 2>, pool_base {
	void before() { init(0, false); }
	void thread(unsigned id)
	{
		if (id == 0) {
			publish();
			owner(1);
			return;
		}
		lfpi_cache_fork_begin();
		lfpi_cache_fork_prepare(&pool);
		lfpi_cache_fork_parent(&pool);
		lfpi_cache_fork_end();
	}
	void after() { all_back(); }
};

// A cache handed from one owner to the next (an explicit cache passed
// on under a lock, as lfpool(7) allows, or one the registry gives again
// with its slots): the first owner releases into it and hands it over;
// the second's first operation takes nothing (without membarrier every
// inline try misses: an allocation's, or with PUSH a release's, as an
// unchecked pool's lfp_cache_free_try makes it) and leaves; a thief
// empties the cache meanwhile, and must see the first owner's writes to
// the objects, which only the second owner's release on leaving carries
// to it. HOW: 0 lfpi_cache_alloc_try, 1 lfpi_cache_push_try, 2 and 3 the
// inline bulk paths (an allocation of one slot, a release of none),
// whose out-of-line halves then do nothing.
template <int HOW>
struct handover : rl::test_suite<handover<HOW>, 3>, pool_base {
	rl::atomic<int> handed;

	void before()
	{
		init(0, true);
		handed($).store(0, rl::mo_relaxed);
		bulk_idle = true;
	}
	void thread(unsigned id)
	{
		if (id == 0) {
			owner(1);
			handed($).store(1, rl::mo_release); // the lock
		} else if (id == 1) {
			while (!handed($).load(rl::mo_acquire))
				rl::yield(1, $);
			void *p = &objs[0];

			if (HOW == 0)
				RL_ASSERT(!lfpi_cache_alloc_try(c));
			else if (HOW == 1)
				RL_ASSERT(lfpi_cache_push_try(c, 0) == 1);
			else if (HOW == 2)
				RL_ASSERT(!lfpi_cache_alloc_bulk_body(c, &p, 1));
			else
				RL_ASSERT(!lfpi_cache_free_bulk_body(c, &p, 0));
		} else {
			thief();
		}
	}
	void after() { all_back(); }
};

} // namespace

int main(int argc, char **argv)
{
	static const lfpm_test tests[] = {
		// Cheapest first: a weakened order is tried on each in turn.
		{"counts_reader", 20000, lfpm_run<counts_reader>, false},
		{"steal_membarrier", 20000, lfpm_run<steal_membarrier>, false},
		{"fork_publish", 20000, lfpm_run<fork_publish>, false},
		// Its bounded search takes 10 s: random search only.
		{"steal_put", 20000, lfpm_run<steal_put>, true},
		{"steal_bulk", 20000, lfpm_run<steal_bulk<1>>, true},
		{"steal_bulk_two", 20000, lfpm_run<steal_bulk<2>>, true},
		// Three threads: their bounded search takes minutes.
		{"fold_handover_pop", 20000, lfpm_run<fold_handover<1>>, true},
		{"fold_handover_push", 20000, lfpm_run<fold_handover<2>>, true},
		{"fold_handover_refill", 20000, lfpm_run<fold_handover<3>>,
		 true},
		{"fold_handover_pop_run", 20000, lfpm_run<fold_handover<4>>,
		 true},
		{"fold_handover_put_run", 20000, lfpm_run<fold_handover<5>>,
		 true},
		{"fold_handover_put_slow", 20000, lfpm_run<fold_handover<6>>,
		 true},
		{"fold_handover_put", 20000, lfpm_run<fold_handover<7>>, true},
		{"fold_handover_take_objs", 20000, lfpm_run<fold_handover<8>>,
		 true},
		{"fold_handover_put_objs", 20000, lfpm_run<fold_handover<9>>,
		 true},
		{"counts_across", 20000, lfpm_run<counts_across<0>>, true},
		{"counts_across_put", 20000, lfpm_run<counts_across<1>>, true},
		{"counts_across_slow", 20000, lfpm_run<counts_across<2>>,
		 true},
		{"counts_across_bulk", 20000, lfpm_run<counts_across<3>>,
		 true},
		{"counts_fold", 20000, lfpm_run<counts_fold>, false},
		// A thief waits for the other: its bounded search runs on.
		{"two_thieves", 20000, lfpm_run<two_thieves>, true},
		{"steal_seq_cst", 20000, lfpm_run<steal_seq_cst>, false},
		{"handover", 20000, lfpm_run<handover<0>>, true},
		{"handover_push", 20000, lfpm_run<handover<1>>, true},
		{"handover_alloc_bulk", 20000, lfpm_run<handover<2>>, true},
		{"handover_free_bulk", 20000, lfpm_run<handover<3>>, true},
		{"fork_membarrier", 20000,
		 lfpm_run<fork_hold<LFPI_MB_SYSCALL, false>>, false},
		{"fork_seq_cst", 20000, lfpm_run<fork_hold<0, false>>, false},
		{"fork_late_membarrier", 20000,
		 lfpm_run<fork_hold<LFPI_MB_SYSCALL, true>>, false},
		{"fork_late_seq_cst", 20000, lfpm_run<fork_hold<0, true>>, false},
	};
	// The handshake, both halves, the counts' reader and the fork's
	// hold (but its child's handler); the lists' orders these reach
	// are lists.cc's.
	static const char *const units[] = {
		"include/lfpool/inline.h:lfpi_cache_enter_fast",
		"include/lfpool/inline.h:lfpi_cache_pop_top",
		"include/lfpool/inline.h:lfpi_cache_alloc_try",
		"include/lfpool/inline.h:lfpi_cache_push_top",
		"include/lfpool/inline.h:lfpi_cache_push_try",
		"include/lfpool/inline.h:lfpi_cache_take_objs",
		"include/lfpool/inline.h:lfpi_cache_put_done",
		"include/lfpool/inline.h:lfpi_cache_alloc_bulk_body",
		"include/lfpool/inline.h:lfpi_cache_free_bulk_body",
		"src/cache/exchange.c:lfpi_cache_put",
		"src/cache/exchange.c:lfpi_cache_enter",
		"src/cache/exchange.c:lfpi_cache_leave",
		"src/cache/exchange.c:cache_counts",
		"src/cache/exchange.c:lfpi_cache_set_n",
		"src/cache/exchange.c:cache_fold",
		"src/cache/exchange.c:cache_freed",
		"src/cache/exchange.c:cache_popped",
		"src/cache/exchange.c:cache_pushed",
		"src/cache/exchange.c:cache_pushed_run",
		"src/cache/steal.c:lfpi_cache_claim_steal",
		"src/cache/steal.c:lfpi_cache_fence_all",
		"src/cache/steal.c:cache_steal_caches",
		"src/cache/steal.c:cache_steal_round",
		"src/cache/fork_wait.c:lfpi_cache_fork_begin",
		"src/cache/fork_wait.c:lfpi_cache_fork_end",
		"src/cache/fork_wait.c:lfpi_cache_fork_busy",
		"src/cache/fork_wait.c:lfpi_cache_fork_wait",
		"src/cache/fork_hold.c:lfpi_cache_fork_prepare",
		"src/cache/fork_hold.c:lfpi_cache_fork_parent",
	};

	lfpm_fiber_local(&lfpi_cache_steals_held,
			 sizeof(lfpi_cache_steals_held));
	lfpm_fiber_local(&cache_thieves, sizeof(cache_thieves));

	static const lfpm_fault faults[] = {
		{"LFPI_FAULT_CLAIM_IGNORES_STEAL",
		 &lfpm_fault_claim_ignores_steal},
	};

	return lfpm_main(argc, argv, "cache", units,
			 sizeof(units) / sizeof(units[0]), tests,
			 sizeof(tests) / sizeof(tests[0]), nullptr, 0, faults,
			 sizeof(faults) / sizeof(faults[0]));
}
