/* SPDX-License-Identifier: MIT */
// A C++ program built against lfpool through its CMake package (see
// CMakeLists.txt): worker threads make and destroy entities through their
// own caches of one pool, then a family serves two sizes. It exits
// non-zero if a count does not add up.
#include <lfpool.hpp>

#include <array>
#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

namespace {

struct entity {
	int id;
	float pos[3] = {};
	explicit entity(int i) : id(i) {}
};

constexpr int workers = 4;
constexpr int per_worker = 10000;

} // namespace

int main()
{
	lfp::pool<entity> pool(64);
	std::atomic<long> made{0};
	std::vector<std::thread> threads;

	for (int t = 0; t < workers; t++) {
		threads.emplace_back([&pool, &made, t] {
			lfp::cache<entity> cache(pool);

			for (int i = 0; i < per_worker; i++) {
				entity *e = cache.make(t * per_worker + i);
				if (e == nullptr || e->id != t * per_worker + i)
					return;
				cache.destroy(e);
				made.fetch_add(1, std::memory_order_relaxed);
			}
		});
	}
	for (auto &t : threads)
		t.join();
	lfp::stats st = pool.stats();
	if (made.load() != workers * per_worker || st.live != 0 ||
	    st.allocs != static_cast<uint64_t>(workers * per_worker) ||
	    st.frees != st.allocs || st.free + st.cached != st.capacity) {
		std::fprintf(stderr, "consumer_cxx: the pool's counts do not add up\n");
		return 1;
	}

	lfp::family fam({ 32, 128 }, { 16, 16 });
	entity *small = fam.make<entity>(1);
	auto *big = fam.make<std::array<char, 100>>();
	if (small == nullptr || big == nullptr || small->id != 1)
		return 2;
	fam.destroy(small);
	fam.destroy(big);

	std::printf("consumer_cxx: %d workers made and destroyed %ld entities\n",
		    workers, made.load());
	return 0;
}
