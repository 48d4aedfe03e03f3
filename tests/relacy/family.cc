// SPDX-License-Identifier: MIT
//
// A family's family caches on the C11 memory model: one thread gives a
// family cache up (lfp_family_cache_destroy, src/extras/family_cache.c)
// and the next lfp_family_cache_create takes it again, with the class
// caches the first one used; their own source compiled through
// stdatomic.h here.
//
// The class caches come from the registry (lfp_cache_create and
// lfp_cache_destroy, registry.c, not compiled here), which the check
// stands in for with one cache per class whose use is a variable Relacy
// watches: a family cache given up after its class caches were, and
// taken again before they are made again, must carry the first user's
// work on them to the next one (its release of taken, the taker's
// acquire), or the two uses race. A family cache the creating thread
// made new uses a cache of its own (the registry would give it one), so
// only a family cache taken again shares them.
#include <sys/mman.h>

#include "check.hpp"

// mmap for a family cache (below), and munmap, which only a family cache
// whose classes could not be made reaches: its memory is the test's.
struct lfpm_map {
	void *p;
	template <typename T> operator T *() const
	{
		return static_cast<T *>(p);
	}
};
static lfpm_map lfpm_mmap(size_t len);
#define mmap(addr, len, prot, flags, fd, off) lfpm_mmap(len)
#define munmap(addr, len) ((void)(addr), (void)(len))

#include "extras/family_cache.c"

namespace {

constexpr uint32_t CLASSES = 2, THREADS = 2;

// A class's cache as the registry would hand it out again.
struct class_cache {
	rl::var<int> user; // the thread using it, plus one; 0: given up
};

struct family_base;
family_base *current;

struct family_base {
	struct lfp_pool pools[CLASSES];
	struct lfp_family fam;
	class_cache cls[CLASSES];
	alignas(64) unsigned char mem[2][sizeof(struct lfp_family_cache)];
	unsigned maps = 0;
	// Per thread: its family cache is one it made (mapped), and a
	// class's cache made for it fails (the registry out of memory).
	bool fresh[THREADS];
	int fails[THREADS];

	void init()
	{
		current = this;
		fam.hot.classes = CLASSES;
		for (uint32_t i = 0; i < CLASSES; i++) {
			fam.hot.cls[i].pool = &pools[i];
			cls[i].user($) = 0;
		}
		fam.caches($).store(nullptr, rl::mo_relaxed);
		for (unsigned t = 0; t < THREADS; t++) {
			fresh[t] = false;
			fails[t] = -1;
		}
	}

	// A family cache given up before the threads start: made, used and
	// pushed as lfp_family_cache_create would have.
	void given_up()
	{
		struct lfp_family_cache *fc =
			new (mem[maps++]) lfp_family_cache();

		fc->hot.fam = &fam.hot;
		fc->fam = &fam;
		fc->taken($).store(0, rl::mo_relaxed);
		fc->next = nullptr;
		fam.caches($).store(fc, rl::mo_relaxed);
	}

	~family_base()
	{
		for (unsigned m = 0; m < maps; m++)
			reinterpret_cast<struct lfp_family_cache *>(mem[m])
				->~lfp_family_cache();
	}

	// lfp_family_cache_create, as the thread calls it.
	struct lfp_family_cache *create()
	{
		fresh[rl::thread_index()] = false;
		return lfp_family_cache_create(&fam);
	}
};

} // namespace

// The registry's side, stood in for: class i's one cache, its use
// written by whoever makes it (but for a family cache its thread made
// new, which would get caches of its own) or gives it up.
struct lfp_cache *lfp_cache_create(struct lfp_pool *pool)
{
	family_base *t = current;
	unsigned me = rl::thread_index();
	uint32_t i = (uint32_t)(pool - t->pools);

	RL_ASSERT(i < CLASSES);
	if (t->fails[me] == (int)i)
		return nullptr;
	if (!t->fresh[me]) {
		// The registry hands out no cache still in use.
		RL_ASSERT(t->cls[i].user($) == 0);
		t->cls[i].user($) = (int)me + 1;
	}
	return reinterpret_cast<struct lfp_cache *>(&t->cls[i]);
}

void lfp_cache_destroy(struct lfp_cache *c)
{
	reinterpret_cast<class_cache *>(c)->user($) = 0;
}

void lfp_cache_flush(struct lfp_cache *c)
{
	(void)c;
	RL_ASSERT(!"lfp_cache_flush is not modelled");
}

// A family cache's memory: fresh, whose atomics hold nothing until
// stored (stdatomic.h, lfpm_fresh).
static lfpm_map lfpm_mmap(size_t len)
{
	family_base *t = current;

	RL_ASSERT(len == sizeof(struct lfp_family_cache) && t->maps < 2);
	t->fresh[rl::thread_index()] = true;
	return {lfpm_fresh<struct lfp_family_cache>(t->mem[t->maps++])};
}

namespace {

// A family cache made, used and given up by thread 0, then made by
// thread 1, which takes the one given up (or, having read the family's
// list before the push, makes its own): the release of taken in
// lfp_family_cache_destroy and the acquire CAS that takes it again
// carry thread 0's use of the class caches to thread 1's. Thread 1
// waits for thread 0 through a relaxed flag, which orders nothing.
struct taken_again : rl::test_suite<taken_again, 2>, family_base {
	rl::atomic<int> done;

	void before()
	{
		init();
		done($).store(0, rl::mo_relaxed);
	}
	void thread(unsigned id)
	{
		if (id == 0) {
			struct lfp_family_cache *fc = create();

			RL_ASSERT(fc);
			lfp_family_cache_destroy(fc);
			done($).store(1, rl::mo_relaxed);
			return;
		}
		while (!done($).load(rl::mo_relaxed))
			rl::yield(1, $);
		RL_ASSERT(create());
	}
};

// A family cache given up earlier, taken by thread 0, whose second
// class's cache cannot be made: it gives the first back and the family
// cache up (the release in lfp_family_cache_create), and thread 1 takes
// it and makes both.
struct fill_fails : rl::test_suite<fill_fails, 2>, family_base {
	rl::atomic<int> done;

	void before()
	{
		init();
		given_up();
		fails[0] = 1;
		done($).store(0, rl::mo_relaxed);
	}
	void thread(unsigned id)
	{
		if (id == 0) {
			RL_ASSERT(!create());
			done($).store(1, rl::mo_relaxed);
			return;
		}
		while (!done($).load(rl::mo_relaxed))
			rl::yield(1, $);
		RL_ASSERT(create());
		// The one given up, taken again: nothing new was mapped.
		RL_ASSERT(maps == 1);
	}
};

} // namespace

int main(int argc, char **argv)
{
	static const lfpm_test tests[] = {
		{"taken_again", 20000, lfpm_run<taken_again>, false},
		{"fill_fails", 20000, lfpm_run<fill_fails>, false},
	};
	static const char *const units[] = {
		"src/extras/family_cache.c",
	};
	return lfpm_main(argc, argv, "family", units,
			 sizeof(units) / sizeof(units[0]), tests,
			 sizeof(tests) / sizeof(tests[0]), nullptr, 0, nullptr,
			 0);
}
