// SPDX-License-Identifier: MIT
//
// The pool layer's trim on the C11 memory model: lfp_trim takes the
// free list and the depot aside and puts them back (src/pool/trim.c),
// making trim_seq odd meanwhile; an allocation that found the pool
// empty while they were aside must look again, not fail
// (src/pool/grow.c, lfpi_want_init and lfpi_exhausted); and lfp_stats'
// count of a bare pool's live objects walks the free list under the
// same sequence (src/pool/bare.c, lfpi_bare_live), their own source
// compiled through stdatomic.h here.
#include "check.hpp"

// grow.c's fault, off but with --expect-fail: an allocation that looks
// only at whether a trim runs now, missing one that ended since it
// began (the harness's broken build, liblfpool_fault_trim, has it on).
static bool lfpm_fault_trim_race;
#define LFPI_FAULT_TRIM_RACE lfpm_fault_trim_race

// bare.c's bounded wait (1 ms) for a trim, on check.hpp's clock: a
// microsecond passes at each reading (init), so the reader gives up
// after a thousand looks, beyond what the searches run; a trim is never
// seen as too long.

#include "lists/stack.c"
#include "lists/depot.c"
#include "pool/trim.c"
#include "pool/bare.c"
#include "pool/grow.c"

// What the units call below them, none of it reached by these tests
// with the pools they lay out (no growth, no pages to give back, no
// deferred releases), or reached as a no-op (grow_lock: one trim at a
// time, and no test takes it elsewhere).
static void lfpm_not_modelled(const char *what)
{
	fprintf(stderr, "pool.cc: %s is not modelled\n", what);
	RL_ASSERT(!"not modelled");
}
void lfpi_lock(pthread_mutex_t *m) { (void)m; }
void lfpi_unlock(pthread_mutex_t *m) { (void)m; }
size_t lfpi_page_size(void) { return 4096; }
static int lfpm_commit(void *addr, size_t len)
{
	(void)addr;
	(void)len;
	lfpm_not_modelled("lfpi_commit");
	return -1;
}
int (*lfpi_commit)(void *addr, size_t len) = lfpm_commit;
bool lfpi_rcu_wait(struct lfp_pool *pool, uint32_t *seen)
{
	(void)pool;
	(void)seen;
	lfpm_not_modelled("lfpi_rcu_wait");
	return false;
}
const char *lfpi_pool_label(const struct lfp_pool *pool,
			    char buf[LFPI_LABEL_MAX])
{
	(void)pool;
	(void)buf;
	return "pool";
}
void lfp_stats(const struct lfp_pool *pool, struct lfp_stats *out)
{
	(void)pool;
	memset(out, 0, sizeof(*out));
	lfpm_not_modelled("lfp_stats");
}
struct lfpi_counters *lfpi_shard(struct lfpi_counters *shards)
{
	return shards;
}

namespace {

constexpr uint32_t SLOTS = 3;

// A 4 KiB page's worth of objects would let a trim give a page back:
// these are 256 bytes, three in all, on no whole page of their own.
typedef lfpm_object object;

// A bare pool of SLOTS objects (4-byte links, no generations, no
// caches), laid out by hand as lfp_create would (only what the units
// read), every slot handed out once and on the free list.
struct pool_base {
	object objs[SLOTS];
	_Atomic(uint32_t) links[SLOTS];
	alignas(8) unsigned char mags[2 * (sizeof(struct lfpi_mag) +
					   2 * sizeof(uint32_t))];
	struct lfp_pool pool{};

	void init()
	{
		lfpi_stack_init(&pool.free, links, sizeof(links[0]));
		lfpi_depot_init(&pool.depot, mags, 2, 2);
		for (uint32_t m = 0; m < 2; m++)
			new (lfpi_depot_mag(&pool.depot, m)) lfpi_mag;
		pool.capacity = SLOTS;
		pool.objs = reinterpret_cast<char *>(objs);
		pool.stride = sizeof(object);
		pool.map = objs;
		pool.exhaust = LFP_EXHAUST_NULL;
		pool.bump($).store(SLOTS, rl::mo_relaxed);
		pool.limit($).store(SLOTS, rl::mo_relaxed);
		pool.trim_seq($).store(0, rl::mo_relaxed);
		for (uint32_t i = SLOTS; i-- > 0;) {
			objs[i].payload($) = 0;
			objs[i].owned($).store(0, rl::mo_relaxed);
			lfpi_stack_push(&pool.free, i, i);
		}
		lfpm_now_ns = 0;
		lfpm_clock_step = 1000;
	}

	~pool_base()
	{
		for (uint32_t m = 0; m < 2; m++)
			lfpi_depot_mag(&pool.depot, m)->~lfpi_mag();
	}

	// An allocation as lfp_alloc makes it without a cache (pool.c,
	// pool_take_hard): the lists, then, found empty, the pool's
	// exhaustion, which looks again if a trim overlapped it.
	uint32_t alloc()
	{
		struct lfpi_want want;
		uint32_t idx, retries = 0;

		lfpi_want_init(&pool, &want);
		do {
			idx = lfpi_depot_take_one(&pool.depot, &retries);
			if (idx == LFPI_NIL)
				idx = lfpi_stack_pop(&pool.free, &retries);
		} while (idx == LFPI_NIL && lfpi_exhausted(&pool, &want));
		return idx;
	}

	static int mark(uint32_t idx, void *arg)
	{
		uint32_t *seen = static_cast<uint32_t *>(arg);

		RL_ASSERT(idx < SLOTS && !(*seen & 1u << idx));
		*seen |= 1u << idx;
		return 0;
	}

	// Every slot once, on the lists.
	void all_back()
	{
		uint32_t seen = 0;

		lfpi_depot_walk(&pool.depot, mark, &seen);
		lfpi_stack_walk(&pool.free, mark, &seen);
		RL_ASSERT(seen == (1u << SLOTS) - 1);
	}
};

// A trim while threads allocate and release: the pool is never
// exhausted (each holds one slot at a time, of three), so an allocation
// that meets the lists aside must look again until it gets one (a NULL
// fails), and the slots the trim put back carry their last owner's
// writes to the next (a data race otherwise). WHEN 0: two threads
// allocate at any time; 1: one allocates once it has seen the trim
// begin (trim_seq odd: its look at the lists meets them aside, and its
// wait for the trim's end must acquire the slots put back); 2: once it
// has seen the trim end (trim_seq 2: the allocation's first look at
// the sequence must acquire them). Those two see trim_seq relaxed, so
// only the library's own orders carry the trim's writes to them.
template <int WHEN, bool YIELD = true>
struct trim_alloc : rl::test_suite<trim_alloc<WHEN, YIELD>, WHEN ? 2 : 3>,
		    pool_base {
	void before()
	{
		init();
		lfpm_yield_real = YIELD;
	}
	void thread(unsigned id)
	{
		if (id == 0) {
			lfp_trim(&pool);
			return;
		}
		for (int k = 0; WHEN && k < 32; k++) {
			uint32_t seq = atomic_load_explicit(
				&pool.trim_seq, memory_order_relaxed);

			if (WHEN == 1 ? (seq & 1) : seq == 2)
				break;
			rl::yield(1, $);
		}
		uint32_t idx = alloc();

		RL_ASSERT(idx < SLOTS);
		lfpm_own(objs[idx]);
		lfpi_stack_push(&pool.free, idx, idx);
	}
	void after() { all_back(); }
};

// lfp_stats' count of a bare pool's live objects while a trim has the
// lists aside and puts them back: one slot is held throughout (taken
// before the threads start), and a count that met the lists aside would
// count their slots live; the reader's sequence makes it exact. With
// MAG the other two slots are in a magazine of the depot (an explicit
// cache's flush put them there), which the reader finds empty by a
// relaxed look: only its acquire fence then orders the sequence's
// second reading after what the trim did first.
template <bool MAG>
struct trim_reader : rl::test_suite<trim_reader<MAG>, 2>, pool_base {
	void before()
	{
		uint32_t retries = 0, spare = LFPI_NIL, two[2];

		init();
		RL_ASSERT(lfpi_stack_pop(&pool.free, &retries) == 0);
		if (!MAG)
			return;
		two[0] = lfpi_stack_pop(&pool.free, &retries);
		two[1] = lfpi_stack_pop(&pool.free, &retries);
		RL_ASSERT(lfpi_depot_store(&pool.depot, two, 2, &spare,
					   &retries));
	}
	void thread(unsigned id)
	{
		if (id == 0)
			lfp_trim(&pool);
		else
			RL_ASSERT(lfpi_bare_live(&pool, 0, 0) == 1);
	}
	void after()
	{
		lfpi_stack_push(&pool.free, 0, 0);
		all_back();
	}
};

// The same count while a thread releases: slots 0 and 1 are held, 2 is
// free; the releaser pushes 0 (its link now 2, where it was 1 when the
// pool was laid out). A reader that reads the new head must read that
// link: a stale one walks 0, 1, 2 and counts every slot free. The count
// is 1 or 2, whichever the reader met.
struct count_push : rl::test_suite<count_push, 2>, pool_base {
	void before()
	{
		uint32_t retries = 0;

		init();
		RL_ASSERT(lfpi_stack_pop(&pool.free, &retries) == 0);
		RL_ASSERT(lfpi_stack_pop(&pool.free, &retries) == 1);
	}
	void thread(unsigned id)
	{
		if (id == 0) {
			lfpm_own(objs[0]);
			lfpi_stack_push(&pool.free, 0, 0);
			return;
		}
		uint64_t live = lfpi_bare_live(&pool, 0, 0);

		RL_ASSERT(live == 1 || live == 2);
	}
	void after()
	{
		lfpi_stack_push(&pool.free, 1, 1);
		all_back();
	}
};

} // namespace

int main(int argc, char **argv)
{
	static const lfpm_test tests[] = {
		{"count_push", 20000, lfpm_run<count_push>, false},
		{"trim_reader", 20000, lfpm_run<trim_reader<false>>, false},
		{"trim_reader_mag", 20000, lfpm_run<trim_reader<true>>, false},
		{"trim_alloc_begun", 20000, lfpm_run<trim_alloc<1>>, false},
		{"trim_alloc_ended", 20000, lfpm_run<trim_alloc<2>>, false},
		// Its wait does not yield: random search only.
		{"trim_alloc_wait", 20000, lfpm_run<trim_alloc<1, false>>,
		 true},
		// Three threads: random search only, as cache.cc's are.
		{"trim_alloc", 20000, lfpm_run<trim_alloc<0>>, true},
	};
	static const char *const units[] = {
		"src/pool/trim.c:trim_locked",
		"src/pool/bare.c",
		"src/pool/grow.c:grow_trim_overlapped",
		"src/pool/grow.h:lfpi_want_init",
	};
	static const lfpm_kept kept[] = {
		{"lfpi_want_init", LFPM_LOAD, "acquire", "relaxed",
		 "it pairs with rcu.c's increment of rcu_epoch after a "
		 "deferred release comes back (rcu.c, not compiled here)",
		 true, "rcu_epoch"},
	};
	static const lfpm_fault faults[] = {
		{"LFPI_FAULT_TRIM_RACE", &lfpm_fault_trim_race},
	};

	return lfpm_main(argc, argv, "pool", units,
			 sizeof(units) / sizeof(units[0]), tests,
			 sizeof(tests) / sizeof(tests[0]), kept,
			 sizeof(kept) / sizeof(kept[0]), faults,
			 sizeof(faults) / sizeof(faults[0]));
}
