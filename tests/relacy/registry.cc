// SPDX-License-Identifier: MIT
//
// The registry of caches on the C11 memory model (src/cache/registry.c):
// caches made and published while others walk or claim from the
// registry, given up and claimed again by another thread, a thread's
// implicit caches given back at its exit while their pool is destroyed,
// orphans freed by their thread; and the pools' numbers
// (src/cache/table.c), handed from a destroyed pool to one made at its
// address. Their own source compiled through stdatomic.h here.
//
// A cache's memory comes from mmap(2) and goes back with munmap(2),
// here a few blocks of fresh memory (lfpm_fresh: a cache's atomics hold
// nothing until the library stores them), each with a variable Relacy
// watches that says it is mapped (written at the mapping and at the
// unmapping, read by every use of the cache), and an object standing for
// what its owner writes in it (slots[], the spare, the counts of the
// claim). So a reader that reaches a cache before its publication does,
// a next owner that reaches it before its last owner's writes do, an
// unmapping before some thread's last use, and a second unmapping, each
// fail.
//
// lfpi_cache_global_init is not called: the key, its once and
// membarrier(2) are not modelled; the tests call the key's destructor,
// cache_thread_exit, where a thread would exit.
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.hpp"

// mmap(2) and munmap(2) of the units: a cache's mapping is a block of
// the test's (lfpm_mmap below), a thread's table of implicit caches a
// plain buffer (only its thread reads it). The mapping converts to the
// pointer the caller wants, as C's void * does.
struct lfpm_mapping {
	void *p;
	template <typename T> operator T *() const
	{
		return static_cast<T *>(p);
	}
};
static lfpm_mapping lfpm_mmap(const char *func, void *addr, size_t len,
			      int prot, int flags, int fd, off_t off);
static int lfpm_munmap(const char *func, void *addr, size_t len);
#define mmap(...) lfpm_mmap(__func__, __VA_ARGS__)
#define munmap(...) lfpm_munmap(__func__, __VA_ARGS__)

// The key's value, set for the exit destructor to run: always.
static int lfpm_setspecific(pthread_key_t key, const void *value)
{
	(void)key;
	(void)value;
	return 0;
}
#define pthread_setspecific lfpm_setspecific

// table.c's nil entry names one field (C zeroes the others).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#include "cache/table.c"
#pragma GCC diagnostic pop

// cache_map's count of colors (registry.c's one fetch_add) is a static
// of the function, made in the first execution that reaches it, inside
// Relacy's context: it joins the statics check.hpp makes anew for each
// execution. The color a thread took says where in the mapping it asks
// for next its cache starts (lfpm_mmap).
#define LFPM_THREADS_MAX 8
static bool lfpm_colors_listed;
static uint32_t lfpm_color_taken[LFPM_THREADS_MAX];

template <typename T, typename U>
static T lfpm_colors_add(lfpm_atomic<T> &a, U v, rl::memory_order mo,
			 rl::debug_info_param info)
{
	if (!lfpm_colors_listed) {
		lfpm_static_add(&a, lfpm_atomic<T>::begin, lfpm_atomic<T>::end);
		lfpm_colors_listed = true;
	}
	T k = a(info).fetch_add((T)v, mo);
	RL_ASSERT(rl::thread_index() < LFPM_THREADS_MAX);
	lfpm_color_taken[rl::thread_index()] = k;
	return k;
}
#undef atomic_fetch_add_explicit
#define atomic_fetch_add_explicit(p, v, mo)                                   \
	lfpm_colors_add(*(p), (v), LFPM_ORDER(mo, RMW, p), $)

#include "cache/registry.c"

#undef atomic_fetch_add_explicit
#define atomic_fetch_add_explicit(p, v, mo)                                   \
	((*(p))($).fetch_add((v), LFPM_ORDER(mo, RMW, p)))

namespace {

constexpr uint32_t CACHE_SIZE = 4, BLOCKS = 4, TABLES = 3;
constexpr size_t PAGE = 4096;
// The most cache_map asks for: the last color, the cache, its slots.
constexpr size_t BLOCK =
	(CACHE_COLORS * LFPI_CACHELINE * 2 + sizeof(struct lfp_cache) +
	 CACHE_SIZE * sizeof(_Atomic(uint32_t)) + PAGE - 1) &
	~(PAGE - 1);

// The memory the blocks and tables lie in; what is in it is made anew
// in each execution (lfpm_fresh for a cache, tab_put fills a table).
alignas(PAGE) unsigned char lfpm_mem[BLOCKS][BLOCK];
alignas(PAGE) unsigned char lfpm_tab_mem[TABLES][2 * PAGE];

// One block: whether it is mapped, what its owner writes, and the cache
// in it.
struct block {
	rl::var<int> mapped;
	lfpm_object contents;
	struct lfp_cache *c;
};

// What the stubs below see of the execution's test (registry_base).
struct arena {
	block blocks[BLOCKS];
	unsigned nblocks, ntables;
};
arena *lfpm_arena;

block &block_of(const struct lfp_cache *c)
{
	size_t b = (size_t)((const unsigned char *)c->map - lfpm_mem[0]) / BLOCK;

	RL_ASSERT(b < lfpm_arena->nblocks && lfpm_arena->blocks[b].c == c);
	return lfpm_arena->blocks[b];
}

// What the owner does with its cache (an operation, a drain): its
// mapping must be there, and its last owner's writes must have reached
// it.
void use(struct lfp_cache *c)
{
	block &b = block_of(c);

	RL_ASSERT(b.mapped($) == 1);
	lfpm_own(b.contents);
}

} // namespace

static lfpm_mapping lfpm_mmap(const char *func, void *addr, size_t len,
			      int prot, int flags, int fd, off_t off)
{
	arena *a = lfpm_arena;

	(void)addr;
	(void)prot;
	(void)flags;
	(void)fd;
	(void)off;
	if (strcmp(func, "cache_map")) {
		RL_ASSERT(!strcmp(func, "tab_map") && len <= 2 * PAGE &&
			  a->ntables < TABLES);
		return {lfpm_tab_mem[a->ntables++]};
	}
	RL_ASSERT(len <= BLOCK && a->nblocks < BLOCKS);
	unsigned n = a->nblocks++;
	size_t color = (1 + lfpm_color_taken[rl::thread_index()] %
				    CACHE_COLORS) *
		       LFPI_CACHELINE * 2;
	block &b = a->blocks[n];

	b.c = lfpm_fresh<struct lfp_cache>(lfpm_mem[n] + color);
	b.mapped($) = 1;
	b.contents.payload($) = 0;
	b.contents.owned($).store(0, rl::mo_relaxed);
	return {lfpm_mem[n]};
}

// A cache's unmapping: once, after every use of it by any thread (a use
// that does not happen before it races with the write of mapped); an
// orphan's also after its destroyer's store of the pool word, made
// before the CAS that orphaned it (a store that does not happen before
// the unmapping would land in memory gone: the unmapper must read it).
// The cache's atomics stay until the execution ends, for a thread that
// is wrong to touch them still.
static int lfpm_munmap(const char *func, void *addr, size_t len)
{
	(void)len;
	if (strcmp(func, "cache_unmap")) {
		RL_ASSERT(!strcmp(func, "tab_unmap"));
		return 0;
	}
	size_t n = (size_t)((unsigned char *)addr - lfpm_mem[0]) / BLOCK;

	RL_ASSERT(n < lfpm_arena->nblocks);
	block &b = lfpm_arena->blocks[n];
	struct lfp_cache *c = b.c;

	RL_ASSERT(b.mapped($) == 1);
	if (c->state($).load(rl::mo_relaxed) == LFPI_CACHE_ORPHANED)
		RL_ASSERT(c->hot.pool($).load(rl::mo_relaxed) ==
			  LFPI_ORPHAN(c));
	b.mapped($) = 0;
	return 0;
}

// What registry.c calls below it. exchange.c: the owner's drain is a use
// of the cache; a counter's reading needs the mapping, and reads the
// counter relaxed, as the library does.
bool lfpi_cache_drain(struct lfp_cache *c)
{
	use(c);
	return true;
}

uint64_t lfpi_cache_value(const struct lfp_cache *c, size_t off)
{
	struct lfp_cache *m = (struct lfp_cache *)c;

	RL_ASSERT(block_of(c).mapped($) == 1);
	return (*(_Atomic(uint64_t) *)((char *)&m->ctr + off))($).load(
		rl::mo_relaxed);
}

int lfpi_cache_membarrier;

// The depot: the drain above leaves no spare.
void lfpi_depot_put_spare(struct lfpi_depot *d, uint32_t spare)
{
	(void)d;
	RL_ASSERT(spare == LFPI_NIL);
}

size_t lfpi_page_size(void)
{
	return PAGE;
}

bool lfpi_debug_vg_profile(void)
{
	return false;
}

namespace {

// A pool as lfp_create lays it out, only what the registry reads: an
// unchecked one (its caches read the limit, cache_init), numbered.
void lay_out(struct lfp_pool &p, uint64_t id)
{
	p.id = id;
	p.capacity = 4;
	p.cache_size = CACHE_SIZE;
	p.batch = 2;
	p.bare = true;
	p.limit($).store(p.capacity, rl::mo_relaxed);
	lfpi_cache_number(&p);
}

// A thread's table as table.c starts it (check.hpp starts every listed
// word at zero).
void thread_begin()
{
	lfpi_cache_tab.last = cache_nil_tab[0];
	lfpi_cache_tab.v = (struct lfp_cache **)cache_nil_tab;
	lfpi_cache_tab.mask = 0;
}

struct registry_base : arena {
	struct lfp_pool pool{};

	void init()
	{
		lfpm_arena = this;
		nblocks = ntables = 0;
		lay_out(pool, 1);
	}

	~registry_base()
	{
		for (unsigned n = 0; n < nblocks; n++)
			blocks[n].c->~lfp_cache();
	}

	// The caches of the pool's registry, each dead (given up) and
	// mapped; how many.
	unsigned all_dead()
	{
		unsigned n = 0;

		for (struct lfp_cache *c = pool.caches($).load(rl::mo_relaxed);
		     c; c = c->reg_next, n++) {
			RL_ASSERT(c->state($).load(rl::mo_relaxed) ==
				  LFPI_CACHE_DEAD);
			RL_ASSERT(block_of(c).mapped($) == 1);
		}
		return n;
	}

	// A thread's implicit cache of p, as lfp_alloc finds or makes it.
	static struct lfp_cache *implicit(struct lfp_pool *p)
	{
		struct lfp_cache *c = lfpi_cache_implicit(p);

		RL_ASSERT(c && lfpi_cache_is_of(c, p));
		return c;
	}
};

// Two threads each make an explicit cache, use it and destroy it: a cache
// one gave up may be the other's (a claim walks the registry, which the
// other's cache may have just joined). Its next owner must see its last
// owner's writes (the release of DEAD, the claim's acquire CAS), and a
// claim must see a cache it finds whole (the publication's release CAS,
// the acquire of the head). With WAITING, a dead cache waits in the
// registry from the start, and both threads claim at once: at most one
// takes it (the claim's CAS), the other makes its own. At the end every
// cache mapped is dead.
template <bool WAITING>
struct reuse : rl::test_suite<reuse<WAITING>, 2>, registry_base {
	void before()
	{
		init();
		if (WAITING) {
			thread_begin();
			lfp_cache_destroy(make());
		}
	}
	struct lfp_cache *make()
	{
		struct lfp_cache *c = lfp_cache_create(&pool);

		RL_ASSERT(c);
		return c;
	}
	void thread(unsigned id)
	{
		(void)id;
		thread_begin();
		struct lfp_cache *c = make();

		use(c);
		lfp_cache_destroy(c);
	}
	void after() { RL_ASSERT(all_dead() == nblocks); }
};

// Two pools numbered at once: two numbers.
struct number_race : rl::test_suite<number_race, 2>, registry_base {
	struct lfp_pool p2[2];

	void before() { init(); }
	void thread(unsigned id)
	{
		p2[id].flags = 0;
		lfpi_cache_number(&p2[id]);
	}
	void after()
	{
		RL_ASSERT(p2[0].hot.num != p2[1].hot.num);
	}
};

// The same with thread 0's cache an implicit one, given back at its exit
// (cache_thread_exit, called as the key's destructor would): the next
// owner of a cache given back there must see what the exit's drain
// wrote (the release CAS from EXITING to DEAD).
struct exit_reuse : rl::test_suite<exit_reuse, 2>, registry_base {
	void before() { init(); }
	void thread(unsigned id)
	{
		thread_begin();
		if (id == 0) {
			use(implicit(&pool));
			cache_thread_exit(nullptr);
			return;
		}
		struct lfp_cache *c = lfp_cache_create(&pool);

		RL_ASSERT(c);
		use(c);
		lfp_cache_destroy(c);
	}
	void after() { RL_ASSERT(all_dead() <= 2); }
};

// A reader of the registry beside a thread that makes a cache (and uses
// and destroys it): lfp_stats' sum (SUM), or lfpi_audit's walk. What it
// reads of a cache it finds (the mapping, the counters, the count) must
// have been stored before the cache was published; nothing is counted
// nor parked.
template <bool SUM>
struct reader : rl::test_suite<reader<SUM>, 2>, registry_base {
	void before() { init(); }
	static int parked(uint32_t idx, void *arg)
	{
		(void)idx;
		(void)arg;
		RL_ASSERT(!"no slot is parked in a cache");
		return 1;
	}
	void thread(unsigned id)
	{
		thread_begin();
		if (id == 0) {
			struct lfp_cache *c = lfp_cache_create(&pool);

			RL_ASSERT(c);
			use(c);
			lfp_cache_destroy(c);
			return;
		}
		uint64_t cached = 1;

		if (SUM)
			RL_ASSERT(lfpi_cache_sum(&pool,
						 offsetof(struct lfpi_counters,
							  allocs),
						 &cached) == 0 &&
				  cached == 0);
		else
			RL_ASSERT(lfpi_cache_walk(&pool, parked, nullptr) == 0);
	}
	void after() { RL_ASSERT(all_dead() == 1); }
};

// lfp_destroy while the thread that used the pool exits. Thread 0 makes
// its implicit cache of the pool and uses it; then it is done with the
// pool (its calls happen before lfp_destroy, as lfpool.h requires):
// thread 1 destroys the pool (lfpi_cache_destroy_all) while thread 0
// uses another pool (whose slow path frees the first cache if it is an
// orphan by then) and exits. Whichever side wins, the first cache is
// unmapped once, by the destroyer after the exit gave it up (the exit's
// release of DEAD, the destroyer's acquire of it), or by its thread
// after the destroyer made it an orphan (the destroyer's release CAS,
// the thread's acquire at its next call or at its exit); the other
// pool's cache is given up, dead.
struct exit_destroy : rl::test_suite<exit_destroy, 2>, registry_base {
	struct lfp_pool other{};
	rl::atomic<int> done;
	struct lfp_cache *first;

	void before()
	{
		init();
		lay_out(other, 2);
		done($).store(0, rl::mo_relaxed);
	}
	void thread(unsigned id)
	{
		thread_begin();
		if (id == 1) {
			while (!done($).load(rl::mo_acquire))
				rl::yield(1, $);
			lfpi_cache_destroy_all(&pool);
			return;
		}
		first = implicit(&pool);
		use(first);
		done($).store(1, rl::mo_release);
		use(implicit(&other));
		cache_thread_exit(nullptr);
	}
	void after()
	{
		RL_ASSERT(block_of(first).mapped($) == 0);
		struct lfp_cache *c = other.caches($).load(rl::mo_relaxed);

		RL_ASSERT(c && !c->reg_next && block_of(c).mapped($) == 1 &&
			  c->state($).load(rl::mo_relaxed) == LFPI_CACHE_DEAD);
	}
};

// The same race with nothing between: thread 0 exits right after it is
// done with the pool, so that the exit may run whole between the
// destroyer's look at the cache's state and its CAS, which then fails
// on DEAD and unmaps the cache: its failure's acquire is all that
// orders the exit's drain before that.
struct exit_at_destroy : rl::test_suite<exit_at_destroy, 2>, registry_base {
	rl::atomic<int> done;
	struct lfp_cache *first;

	void before()
	{
		init();
		done($).store(0, rl::mo_relaxed);
	}
	void thread(unsigned id)
	{
		thread_begin();
		if (id == 1) {
			while (!done($).load(rl::mo_acquire))
				rl::yield(1, $);
			lfpi_cache_destroy_all(&pool);
			return;
		}
		first = implicit(&pool);
		use(first);
		done($).store(1, rl::mo_release);
		cache_thread_exit(nullptr);
	}
	void after() { RL_ASSERT(block_of(first).mapped($) == 0); }
};

// A pool made at a destroyed pool's address, with its number, while a
// thread's table still names its cache of the old one. Thread 0 makes
// its implicit cache of the pool and uses it, and is done with the pool;
// thread 1 destroys it (the cache becomes an orphan, its pool word its
// own address) and gives its number back. Thread 0 then makes a pool at
// the same address once the number is free (lfpi_cache_number takes the
// lowest one free): here the number is the only order from the
// destroying thread to the new pool, the handing over of the memory
// itself (munmap and mmap, or a caller's own) left out, so the test
// checks what lfpool.h's lfpi_cache_is_of says the number's release and
// acquire order. Its table's entry and its last cache still name the
// orphan, which must match the new pool in neither (its pool word read
// stale would be the old pool's, this address); its slow path then
// frees the orphan and makes a cache of the new pool.
struct number_reuse : rl::test_suite<number_reuse, 2>, registry_base {
	rl::atomic<int> done;
	struct lfp_cache *first, *second;

	void before()
	{
		init();
		done($).store(0, rl::mo_relaxed);
	}
	void thread(unsigned id)
	{
		thread_begin();
		if (id == 1) {
			while (!done($).load(rl::mo_acquire))
				rl::yield(1, $);
			lfpi_cache_destroy_all(&pool);
			lfpi_cache_unnumber(&pool);
			return;
		}
		uint32_t num = pool.hot.num;
		struct lfp_cache *found;

		first = implicit(&pool);
		use(first);
		done($).store(1, rl::mo_release);
		// Relaxed: only the number's own CAS may order what follows.
		while (cache_nums[0]($).load(rl::mo_relaxed) & 1u << num)
			rl::yield(1, $);
		lfpi_cache_number(&pool);
		RL_ASSERT(pool.hot.num == num);
		// The new pool's own id, and a registry of its own.
		pool.id = 3;
		pool.caches($).store(nullptr, rl::mo_relaxed);
		RL_ASSERT(!lfpi_cache_find(&pool, num, &found));
		second = implicit(&pool);
		RL_ASSERT(second != first);
		use(second);
		cache_thread_exit(nullptr);
	}
	void after()
	{
		RL_ASSERT(block_of(first).mapped($) == 0);
		RL_ASSERT(all_dead() == 1);
	}
};

} // namespace

// Why a CAS that needs no acquire on success has one.
#define LFPM_C11_FAILURE                                                     \
	"; it is that strong because C11 allows no failure order stronger "  \
	"than the success order, and the failure's acquire is needed (a "    \
	"test catches it)"

int main(int argc, char **argv)
{
	static const lfpm_test tests[] = {
		// Cheapest first: a weakened order is tried on each in turn.
		{"sum", 10000, lfpm_run<reader<true>>, false},
		{"walk", 10000, lfpm_run<reader<false>>, false},
		{"reuse", 10000, lfpm_run<reuse<false>>, false},
		{"claim_race", 10000, lfpm_run<reuse<true>>, false},
		{"number_race", 10000, lfpm_run<number_race>, false},
		{"exit_reuse", 10000, lfpm_run<exit_reuse>, false},
		{"exit_at_destroy", 10000, lfpm_run<exit_at_destroy>, false},
		{"number_reuse", 10000, lfpm_run<number_reuse>, false},
		{"exit_destroy", 10000, lfpm_run<exit_destroy>, false},
	};
	// The registry whole, and table.c for its numbers (a thread's table
	// is its own: only the signal fences order it).
	static const char *const units[] = {
		"src/cache/registry.c",
		"src/cache/table.c",
	};
	static const lfpm_kept kept[] = {
		{"lfpi_cache_destroy_all", LFPM_LOAD, "acquire", "relaxed",
		 "every cache on the list was published by a call on the "
		 "pool, and lfpool.h's lfp_destroy says \"no other thread "
		 "may use the pool during or after the call\": each use, "
		 "those that made its caches among them, happens before it, "
		 "which carries the publication too; the tests order their "
		 "calls so, as a program must",
		 false, "caches"},
		{"lfpi_cache_destroy_all", LFPM_CAS_SUCCESS, "acq_rel",
		 "release",
		 "on success the destroyer touches the cache no more (its "
		 "thread frees it), and what the CAS read, IMPLICIT, only the "
		 "owner's claim stored" LFPM_C11_FAILURE,
		 false, nullptr},
		{"cache_thread_exit", LFPM_CAS_SUCCESS, "acquire", "relaxed",
		 "the CAS succeeds only on IMPLICIT, which no thread but the "
		 "exiting one stores (its claim: a new cache's atomic_init, "
		 "or the acquire CAS that took a dead one, which synchronized "
		 "with its last owner then)" LFPM_C11_FAILURE,
		 false, nullptr},
	};

	// The thread-locals of registry.c, and table.c's table (its
	// class array, never made here, stays the nil one for all).
	lfpm_fiber_local(&cache_mine, sizeof(cache_mine));
	lfpm_fiber_local(&cache_claiming, sizeof(cache_claiming));
	lfpm_fiber_local(&cache_making, sizeof(cache_making));
	lfpm_fiber_local(&cache_exited, sizeof(cache_exited));
	lfpm_fiber_local(&cache_key_set, sizeof(cache_key_set));
	lfpm_fiber_local(&lfpi_cache_tab.last, sizeof(lfpi_cache_tab.last));
	lfpm_fiber_local(&lfpi_cache_tab.v, sizeof(lfpi_cache_tab.v));
	lfpm_fiber_local(&lfpi_cache_tab.mask, sizeof(lfpi_cache_tab.mask));

	return lfpm_main(argc, argv, "registry", units,
			 sizeof(units) / sizeof(units[0]), tests,
			 sizeof(tests) / sizeof(tests[0]), kept,
			 sizeof(kept) / sizeof(kept[0]), nullptr, 0);
}
