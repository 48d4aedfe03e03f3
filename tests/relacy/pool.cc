// SPDX-License-Identifier: MIT
//
// The pool layer on the C11 memory model, its own source compiled
// through stdatomic.h here:
// - lfp_trim takes the free list and the depot aside and puts them back
//   (src/pool/trim.c), making trim_seq odd meanwhile; an allocation that
//   found the pool empty while they were aside must look again, not fail
//   (src/pool/grow.c, lfpi_want_init and lfpi_exhausted); and lfp_stats'
//   count of a bare pool's live objects walks the free list under the
//   same sequence (src/pool/bare.c, lfpi_bare_live);
// - the first trim of a pool with a constructor maps its ctor_due table
//   (trim.c), which a handout reads while the trim runs
//   (lfpi_trim_reborn);
// - growth commits the next segment and raises the limit (grow.c), past
//   which another thread takes a fresh slot (src/memory/slab.c,
//   lfpi_slab_bump);
// - deferred releases (src/rcu/rcu.c): the table of rcu_heads mapped on
//   the first one, the callback that gives a slot back after the grace
//   period, and an allocation of an LFP_F_WAIT_DEFERRED pool that waits
//   for it, asleep on the futex of rcu_epoch.
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

// The system calls the units make, modelled below: their headers first,
// so that the macros replace the units' calls and not the declarations.
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static void lfpm_not_modelled(const char *what)
{
	fprintf(stderr, "pool.cc: %s is not modelled\n", what);
	RL_ASSERT(!"not modelled");
}

// The page size (sysconf(2), slab.c's lfpi_page_size): 4096, so that no
// page holds only idle objects of the 256-byte ones the tests lay out;
// a test that gives pages back or commits them makes it 256, one object
// a page (init).
static size_t lfpm_page_size;
static long lfpm_sysconf(int name)
{
	(void)name;
	return (long)lfpm_page_size;
}
#define sysconf(name) lfpm_sysconf(name)

// The objects of the execution's pool (init), for the kernel's part in
// what happens to their pages.
static lfpm_object *lfpm_objs;
static uint32_t lfpm_nobjs;

// The kernel's zeroes on the objects whose watched word (their first
// bytes) lies in [addr, addr + len): pages committed by a growth
// (lfpi_commit), given back by a trim (madvise, MADV_DONTNEED) and
// touched again. They are writes of the thread that asks for them, so
// a thread that uses such an object must be ordered after that call.
static void lfpm_pages_zero(void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr;

	for (uint32_t i = 0; i < lfpm_nobjs; i++) {
		uintptr_t o = (uintptr_t)&lfpm_objs[i];

		if (o >= a && o < a + len)
			lfpm_objs[i].payload($) = 0;
	}
}

static int lfpm_commit(void *addr, size_t len)
{
	lfpm_pages_zero(addr, len);
	return 0;
}

// mincore(2): every page resident. madvise(2): MADV_DONTNEED alone.
static int lfpm_mincore(void *addr, size_t len, unsigned char *vec)
{
	(void)addr;
	memset(vec, 1, len / lfpm_page_size);
	return 0;
}
static int lfpm_madvise(void *addr, size_t len, int advice)
{
	if (advice != MADV_DONTNEED)
		lfpm_not_modelled("madvise");
	lfpm_pages_zero(addr, len);
	return 0;
}
#define mincore(addr, len, vec) lfpm_mincore(addr, len, vec)
#define madvise(addr, len, advice) lfpm_madvise(addr, len, advice)

// mmap(2) of a table the units map on first use (trim.c's ctor_due,
// rcu.c's rcu_head table): a test that expects one names the memory it
// lies in, and make lays it out as the kernel hands fresh pages over,
// in the thread that maps them (atomics that hold no value until make
// stores the kernel's zeroes, watched words make writes). The first
// mapping of an execution is that one (trim_locked asks for the table
// before its scratch bits); any other is the system's.
static struct lfpm_mapping {
	void *mem;
	size_t size;
	void (*make)(void *mem);
	void (*unmake)(void *mem);
	bool made;
} lfpm_map;
// The system's mappings (trim.c's scratch bits) come from a few pages
// of the program's, zeroed as the kernel's, without a system call each
// (an execution maps and unmaps them every trim); lfpm_scratch_used is
// cleared with each execution's layout (init).
alignas(4096) static unsigned char lfpm_scratch[4][4096];
static bool lfpm_scratch_used[4];
static void *lfpm_mmap(size_t len)
{
	if (lfpm_map.make && !lfpm_map.made) {
		RL_ASSERT(len <= lfpm_map.size);
		lfpm_map.made = true;
		lfpm_map.make(lfpm_map.mem);
		return lfpm_map.mem;
	}
	for (size_t i = 0; i < 4; i++)
		if (len <= sizeof(lfpm_scratch[i]) && !lfpm_scratch_used[i]) {
			lfpm_scratch_used[i] = true;
			memset(lfpm_scratch[i], 0, len);
			return lfpm_scratch[i];
		}
	RL_ASSERT(!"lfpm_mmap: out of scratch pages");
	return MAP_FAILED;
}
static int lfpm_munmap(void *addr, size_t len)
{
	(void)len;
	for (size_t i = 0; i < 4; i++)
		if (addr == lfpm_scratch[i]) {
			RL_ASSERT(lfpm_scratch_used[i]);
			lfpm_scratch_used[i] = false;
			return 0;
		}
	return 0; /* a test's own mapping */
}
#define mmap(addr, len, prot, flags, fd, off) lfpm_mmap(len)
#define munmap(addr, len) lfpm_munmap(addr, len)

// futex(2) on rcu_epoch, as Linux makes it (kernel/futex: futex_wait's
// smp_mb after it counts a waiter, then the word read and the waiter
// queued under the hash bucket's lock; futex_wake's smp_mb, then the
// waiters woken). FUTEX_WAIT: a seq_cst fence, then, with no other
// thread running in between, the compare and the sleep; the 50 ms
// timeout is not modelled, so a waiter nobody wakes sleeps for good,
// and Relacy reports the deadlock: a lost wake-up fails the test.
// FUTEX_WAKE: a seq_cst fence, then every sleeper woken (which then
// happens after the wake, as the scheduler's barriers make it).
//
// C11 orders a load after a seq_cst fence after every seq_cst change of
// its word that precedes the fence in the single total order (C++11
// 29.3p4); Relacy applies it to seq_cst loads alone (each reads the
// latest seq_cst store or a later one), not to a load after a fence. So
// the compare is a seq_cst load, in the same step as the fence: that
// rule. It is an acquire too, which the kernel's read is not, and which
// no test needs: with a relaxed compare they pass as written and catch
// the same variants, and rcu_sleep's load of the epoch (kept, below)
// too, through an outcome that rule forbids.
static long lfpm_syscall(long nr, lfpm_atomic<uint32_t> *word, int op,
			 long val, const void *timeout, const void *uaddr2,
			 int val3)
{
	rl::context &c = rl::ctx();
	uint32_t now;

	(void)timeout;
	(void)uaddr2;
	(void)val3;
	RL_ASSERT(nr == SYS_futex);
	if (op == FUTEX_WAKE_PRIVATE) {
		(rl::atomic_thread_fence)(rl::mo_seq_cst, $);
		return (long)word->get().wake(c, (rl::thread_id_t)val, $);
	}
	RL_ASSERT(op == FUTEX_WAIT_PRIVATE);
	c.sched();
	{
		rl::preemption_disabler off(c);

		(rl::atomic_thread_fence)(rl::mo_seq_cst, $);
		now = (*word)($).load(rl::mo_seq_cst);
	}
	if (now != (uint32_t)val)
		return -1; // EAGAIN
	word->get().wait(c, false, false, $);
	return 0;
}
#define syscall(...) lfpm_syscall(__VA_ARGS__)

// liburcu's memb flavour, as rcu.c uses it: a header of our own in
// place of <urcu/urcu-memb.h> (its guard, defined), whose rcu_head
// holds a watched word where liburcu's holds its queue link.
#define _URCU_MEMB_H
struct rcu_head {
	rl::var<void *> next; // what call_rcu writes and its thread reads
	void (*func)(struct rcu_head *head);
};
struct call_rcu_data;
void urcu_memb_call_rcu(struct rcu_head *head,
			void (*func)(struct rcu_head *head));
void urcu_memb_barrier(void);
int urcu_memb_read_ongoing(void);
struct call_rcu_data *urcu_memb_get_thread_call_rcu_data(void);
pthread_t urcu_memb_get_call_rcu_thread(struct call_rcu_data *crdp);

#include "lists/stack.c"
#include "lists/depot.c"
#include "memory/slab.c"
#include "pool/trim.c"
#include "pool/bare.c"
#include "pool/grow.c"
#include "rcu/rcu.c"

// call_rcu: the callbacks queued, each run by the test's call_rcu
// thread (lfpm_rcu_run) in the order queued. All the caller did before
// call_rcu happens before its callback runs (the grace period is a full
// barrier in between): a release store of the queue's entry, which
// that thread acquires.
#define LFPM_RCU_QUEUE 4
static _Atomic(struct rcu_head *) lfpm_rcu_queue[LFPM_RCU_QUEUE];
static _Atomic(uint32_t) lfpm_rcu_queued;

void urcu_memb_call_rcu(struct rcu_head *head,
			void (*func)(struct rcu_head *head))
{
	uint32_t n = lfpm_rcu_queued($).fetch_add(1, rl::mo_relaxed);

	RL_ASSERT(n < LFPM_RCU_QUEUE);
	head->next($) = nullptr;
	head->func = func;
	lfpm_rcu_queue[n]($).store(head, rl::mo_release);
}

// The call_rcu thread: the first n callbacks, waiting for each.
static void lfpm_rcu_run(uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct rcu_head *head;

		while (!(head = lfpm_rcu_queue[i]($).load(rl::mo_acquire)))
			rl::yield(1, $);
		RL_ASSERT(head->next($) == nullptr);
		head->func(head);
	}
}

// No test thread is in a read-side section or is liburcu's own.
int urcu_memb_read_ongoing(void)
{
	return 0;
}
struct call_rcu_data *urcu_memb_get_thread_call_rcu_data(void)
{
	return nullptr;
}
pthread_t urcu_memb_get_call_rcu_thread(struct call_rcu_data *crdp)
{
	(void)crdp;
	lfpm_not_modelled("urcu_memb_get_call_rcu_thread");
	return pthread_t();
}
void urcu_memb_barrier(void)
{
	lfpm_not_modelled("urcu_memb_barrier");
}

// grow_lock: a lock, taken by a trim, a growth and the mapping of the
// rcu table, in several threads of one test.
static _Atomic(int) lfpm_grow_locked;
void lfpi_lock(pthread_mutex_t *m)
{
	(void)m;
	while (lfpm_grow_locked($).exchange(1, rl::mo_acquire))
		rl::yield(1, $);
}
void lfpi_unlock(pthread_mutex_t *m)
{
	(void)m;
	lfpm_grow_locked($).store(0, rl::mo_release);
}

// What the units call below them that no test reaches with the pools
// they lay out (no debug tools, no policy that aborts).
void lfpi_debug_free(struct lfp_pool *pool, uint32_t idx)
{
	(void)pool;
	(void)idx;
	lfpm_not_modelled("lfpi_debug_free");
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
// these are 256 bytes, three in all, on no whole page of their own
// (unless a test makes the page 256 bytes).
typedef lfpm_object object;

// What a pool's constructor leaves in an object (build).
constexpr int BUILT = 7;

// A bare pool of SLOTS objects (4-byte links, no generations, no
// caches), laid out by hand as lfp_create would (only what the units
// read), the first `limit` slots handed out once and on the free list,
// the others never used (a pool that may grow).
struct pool_base {
	// The objects, each on a boundary of its size (Relacy allocates
	// the test with malloc, which does not align it so).
	object *objs;
	unsigned char objs_mem[(SLOTS + 1) * sizeof(object)];
	_Atomic(uint32_t) links[SLOTS];
	alignas(8) unsigned char mags[2 * (sizeof(struct lfpi_mag) +
					   2 * sizeof(uint32_t))];
	struct lfp_pool pool{};
	// A table the units map (lfpm_map): trim.c's ctor_due or rcu.c's.
	alignas(8) unsigned char table[SLOTS * sizeof(struct lfpi_rcu_slot) +
				       sizeof(_Atomic(uint64_t))];

	pool_base()
	{
		uintptr_t a = (uintptr_t)objs_mem + sizeof(object) - 1;

		objs = reinterpret_cast<object *>(a - a % sizeof(object));
		for (uint32_t i = 0; i < SLOTS; i++)
			new (&objs[i]) object();
	}

	void init(uint32_t limit = SLOTS)
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
		pool.bump($).store(limit, rl::mo_relaxed);
		pool.limit($).store(limit, rl::mo_relaxed);
		pool.trim_seq($).store(0, rl::mo_relaxed);
		for (uint32_t i = SLOTS; i-- > 0;) {
			objs[i].payload($) = 0;
			objs[i].owned($).store(0, rl::mo_relaxed);
			if (i < limit)
				lfpi_stack_push(&pool.free, i, i);
		}
		lfpm_now_ns = 0;
		lfpm_clock_step = 1000;
		lfpm_page_size = 4096;
		lfpm_objs = objs;
		lfpm_nobjs = SLOTS;
		lfpi_commit = lfpm_commit;
		lfpm_map = lfpm_mapping{};
		memset(lfpm_scratch_used, 0, sizeof(lfpm_scratch_used));
	}

	~pool_base()
	{
		for (uint32_t i = 0; i < SLOTS; i++)
			objs[i].~object();
		for (uint32_t m = 0; m < 2; m++)
			lfpi_depot_mag(&pool.depot, m)->~lfpi_mag();
		if (lfpm_map.made && lfpm_map.mem == table)
			lfpm_map.unmake(table);
	}

	// An allocation as lfp_alloc makes it without a cache (pool.c,
	// pool_take_hard): the lists, then, found empty, the pool's
	// exhaustion, which looks again if a trim overlapped it (or, in a
	// pool that waits for them, a deferred slot came back).
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

	// The same, with fresh slots too, each look as lfpi_pool_take's
	// (pool.c): the free list, a magazine, a fresh slot, then the lists
	// again.
	uint32_t take()
	{
		struct lfpi_stack *s = &pool.free;
		struct lfpi_depot *d = &pool.depot;
		uint32_t idx, retries = 0;

		idx = lfpi_stack_pop(s, &retries);
		if (idx == LFPI_NIL)
			idx = lfpi_depot_take_one(d, &retries);
		if (idx == LFPI_NIL && !lfpi_slab_bump(&pool, 1, &idx) &&
		    (idx = lfpi_stack_pop(s, &retries)) == LFPI_NIL)
			idx = lfpi_depot_take_one(d, &retries);
		return idx;
	}
	uint32_t alloc_fresh()
	{
		struct lfpi_want want;
		uint32_t idx;

		lfpi_want_init(&pool, &want);
		do {
			idx = take();
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

	// Every slot ever handed out once, on the lists.
	void all_back()
	{
		uint32_t seen = 0, bump = pool.bump($).load(rl::mo_relaxed);

		lfpi_depot_walk(&pool.depot, mark, &seen);
		lfpi_stack_walk(&pool.free, mark, &seen);
		RL_ASSERT(seen == (1u << bump) - 1);
	}

	// The pool's constructor: the object as its user wants it.
	static void build(void *obj, void *arg)
	{
		(void)arg;
		static_cast<object *>(obj)->payload($) = BUILT;
	}

	// What a thread does with an object of a pool with a constructor:
	// it finds it constructed (a trim that gave its page back had it
	// constructed again), and leaves it so.
	static void use_built(object &o)
	{
		RL_ASSERT(o.owned($).exchange(1, rl::mo_relaxed) == 0);
		RL_ASSERT(o.payload($) == BUILT);
		o.payload($) = BUILT;
		o.owned($).store(0, rl::mo_relaxed);
	}

	// trim.c's ctor_due table as mmap hands it over: one word (SLOTS <
	// 64), zero.
	void expect_ctor_table()
	{
		lfpm_map = lfpm_mapping{table, sizeof(table), ctor_table_make,
					ctor_table_unmake, false};
	}
	static void ctor_table_make(void *mem)
	{
		auto *w = lfpm_fresh<lfpm_atomic<uint64_t>>(mem);

		atomic_init(w, 0);
	}
	static void ctor_table_unmake(void *mem)
	{
		static_cast<lfpm_atomic<uint64_t> *>(mem)->~lfpm_atomic();
	}

	// rcu.c's table of rcu_heads as mmap hands it over: zeroes.
	void expect_rcu_table()
	{
		lfpm_map = lfpm_mapping{table, sizeof(table), rcu_table_make,
					rcu_table_unmake, false};
	}
	static void rcu_table_make(void *mem)
	{
		auto *t = static_cast<struct lfpi_rcu_slot *>(mem);

		for (uint32_t i = 0; i < SLOTS; i++) {
			new (&t[i]) lfpi_rcu_slot();
			t[i].head.next($) = nullptr;
		}
	}
	static void rcu_table_unmake(void *mem)
	{
		auto *t = static_cast<struct lfpi_rcu_slot *>(mem);

		for (uint32_t i = 0; i < SLOTS; i++)
			t[i].~lfpi_rcu_slot();
	}

	// lfp_free_deferred (deferred.c) of slot idx, its release checked
	// already: the table (mapped by the first), the count, call_rcu.
	void defer(uint32_t idx)
	{
		struct lfpi_rcu_slot *t = lfpi_rcu_table(&pool);

		RL_ASSERT(t);
		atomic_fetch_add_explicit(&lfpi_my_shard(&pool)->deferred, 1,
					  memory_order_relaxed);
		lfpi_rcu_defer(&pool, t, idx);
	}

	// Take every slot off the free list: all handed out.
	void take_all()
	{
		uint32_t retries = 0;

		for (uint32_t i = 0; i < SLOTS; i++)
			RL_ASSERT(lfpi_stack_pop(&pool.free, &retries) == i);
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

// The first trim of a pool with a constructor, while a thread allocates
// and releases. Pages are 256 bytes, an object each: the trim gives back
// the pages of the slots it holds aside (their objects read as zeroes
// after), marks them in the ctor_due table it maps first, and puts them
// back. The allocation hands its slot out as lfpi_hand_out does one
// used before (pool.h): constructed again if lfpi_trim_reborn says its
// page was given back; it must find the object constructed. A slot it
// took before the trim took the lists did not come through the trim,
// and its handout may read the table the trim has just mapped: the
// table's words hold no value until the trim's thread stores the
// kernel's zeroes (lfpm_fresh), so only the table's own release and
// acquire order that read after them.
struct trim_ctor : rl::test_suite<trim_ctor, 2>, pool_base {
	void before()
	{
		init();
		lfpm_page_size = 256;
		pool.ctor = build;
		for (uint32_t i = 0; i < SLOTS; i++)
			objs[i].payload($) = BUILT;
		expect_ctor_table();
	}
	void thread(unsigned id)
	{
		if (id == 0) {
			lfp_trim(&pool);
			return;
		}
		uint32_t idx = alloc();

		RL_ASSERT(idx < SLOTS);
		if (lfpi_trim_reborn(&pool, idx))
			pool.ctor(&objs[idx], pool.hook_arg);
		use_built(objs[idx]);
		lfpi_stack_push(&pool.free, idx, idx);
	}
	void after() { all_back(); }
};

// Growth while a cache's refill takes fresh slots (exchange.c's refill
// calls lfpi_slab_bump itself): the pool is laid out for three slots,
// one usable (its limit) and handed out. One thread allocates, and the
// pool grows for it (to two, and to three if the refill took the new
// slot first: LFP_EXHAUST_GROW); the refill comes once it has seen the
// limit raised (relaxed, so that only the library's own orders carry
// the growth to it; or after 32 looks) and takes what fresh slots it
// finds at one look. Each uses what it took and releases it. Pages are
// 256 bytes, an object each: the growing thread's commit writes the new
// objects (the kernel's zeroes), and a refill that takes a fresh slot
// past the old limit must see them (a data race otherwise).
// RACE: both threads allocate, and the pool grows for them (two
// allocations growing it at once; there are two slots to grow into, so
// neither may fail). An allocation whose look found the pool exhausted
// under the limit it read, while the other grew it and took a fresh slot
// since, must look again under the new limit rather than find the pool
// fully grown and fail (lfpi_exhausted).
template <bool RACE>
struct grow : rl::test_suite<grow<RACE>, 2>, pool_base {
	void before()
	{
		uint32_t retries = 0;

		init(1);
		lfpm_page_size = 256;
		pool.exhaust = LFP_EXHAUST_GROW;
		RL_ASSERT(lfpi_stack_pop(&pool.free, &retries) == 0);
	}
	void thread(unsigned id)
	{
		uint32_t first = LFPI_NIL, n = 1;

		for (int k = 0; !RACE && id == 1 && k < 32; k++) {
			if (atomic_load_explicit(&pool.limit,
						 memory_order_relaxed) > 1)
				break;
			rl::yield(1, $);
		}
		if (RACE || id == 0) {
			first = alloc_fresh();
			// The refill may hold the slots a moment: only two
			// allocations must both get one.
			RL_ASSERT(!RACE || first < SLOTS);
		} else
			n = lfpi_slab_bump(&pool, 2, &first);
		for (uint32_t i = first; i < first + n; i++) {
			RL_ASSERT(i < SLOTS);
			lfpm_own(objs[i]);
			lfpi_stack_push(&pool.free, i, i);
		}
	}
	void after()
	{
		lfpi_stack_push(&pool.free, 0, 0);
		all_back();
	}
};

// Two first deferred releases at once (lfp_free_deferred of slots 1 and
// 2, each used first): one thread maps the table of rcu_heads, the other
// finds it mapped or waits on grow_lock for it; each then writes its
// slot's rcu_head (call_rcu), which must come after the table's pages
// were handed over (a data race on the kernel's zeroes otherwise). The
// callbacks run after the threads, and put the slots back.
struct rcu_map : rl::test_suite<rcu_map, 2>, pool_base {
	void before()
	{
		init();
		take_all();
		expect_rcu_table();
	}
	void thread(unsigned id)
	{
		uint32_t idx = 1 + id;

		lfpm_own(objs[idx]);
		defer(idx);
	}
	void after()
	{
		lfpm_rcu_run(2);
		lfpi_stack_push(&pool.free, 0, 0);
		all_back();
	}
};

// An allocation of an LFP_F_WAIT_DEFERRED pool whose every slot is out
// and one pending: slot 0, released with lfp_free_deferred before the
// threads start. The call_rcu thread runs its callback, which puts it
// back and wakes the waiters; the allocation must get it: a NULL fails
// (the allocation saw no slot and none pending, or gave up when the
// slot it counted back had not moved the epoch for it), and so does a
// lost wake-up (it sleeps with nobody left to wake it: see
// lfpm_syscall).
struct wait_deferred : rl::test_suite<wait_deferred, 2>, pool_base {
	void before()
	{
		init();
		take_all();
		pool.flags = LFP_F_WAIT_DEFERRED;
		expect_rcu_table();
		defer(0);
	}
	void thread(unsigned id)
	{
		if (id == 1) {
			lfpm_rcu_run(1);
			return;
		}
		uint32_t idx = alloc();

		RL_ASSERT(idx == 0);
		lfpm_own(objs[idx]);
		lfpi_stack_push(&pool.free, idx, idx);
	}
	void after()
	{
		lfpi_stack_push(&pool.free, 1, 1);
		lfpi_stack_push(&pool.free, 2, 2);
		all_back();
	}
};

} // namespace

int main(int argc, char **argv)
{
	static const lfpm_test tests[] = {
		// Cheapest first: a weakened order is tried on each in turn.
		{"count_push", 20000, lfpm_run<count_push>, false},
		{"grow_bump", 20000, lfpm_run<grow<false>>, false},
		{"grow_race", 20000, lfpm_run<grow<true>>, false},
		{"rcu_map", 20000, lfpm_run<rcu_map>, false},
		{"wait_deferred", 20000, lfpm_run<wait_deferred>, false},
		{"trim_reader", 20000, lfpm_run<trim_reader<false>>, false},
		{"trim_reader_mag", 20000, lfpm_run<trim_reader<true>>, false},
		{"trim_alloc_begun", 20000, lfpm_run<trim_alloc<1>>, false},
		{"trim_alloc_ended", 20000, lfpm_run<trim_alloc<2>>, false},
		{"trim_ctor", 20000, lfpm_run<trim_ctor>, false},
		// Its wait does not yield: random search only.
		{"trim_alloc_wait", 20000, lfpm_run<trim_alloc<1, false>>,
		 true},
		// Three threads: random search only, as cache.cc's are.
		{"trim_alloc", 20000, lfpm_run<trim_alloc<0>>, true},
	};
	static const char *const units[] = {
		"src/pool/trim.c:trim_locked",
		"src/pool/trim.c:trim_ctor_table",
		"src/pool/trim.c:lfpi_trim_reborn",
		"src/pool/bare.c",
		"src/pool/grow.c:grow_trim_overlapped",
		"src/pool/grow.c:grow_to",
		"src/pool/grow.h:lfpi_want_init",
		"src/memory/slab.c:lfpi_slab_bump",
		"src/rcu/rcu.c",
	};
	static const lfpm_kept kept[] = {
		{"rcu_sleep", LFPM_LOAD, "seq_cst", "acquire", "futex_wait "
		 "takes a full barrier, then compares the epoch: if rcu_wake's "
		 "increment came before the barrier the compare sees it, and "
		 "if after, rcu_wake's load of rcu_sleepers sees our store and "
		 "wakes us; a stale load here only costs the system call",
		 false, "rcu_epoch"},
		{"rcu_sleep", LFPM_STORE, "seq_cst", "release", "futex_wait "
		 "takes a full barrier, then compares the epoch: by C11 "
		 "(C++11 29.3p4-5) either the compare sees rcu_wake's "
		 "increment or rcu_wake's seq_cst load of rcu_sleepers, "
		 "after the barrier in the total order, sees this store, "
		 "whatever its order; Relacy does not order another "
		 "thread's seq_cst load after a seq_cst fence, and its run "
		 "of this variant ends in that lost wake-up, which C11 rules "
		 "out: not run", true, "rcu_sleepers"},
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
