/* SPDX-License-Identifier: MIT */
// Built by tests/all.sh against the installed library through pkg-config,
// as C++17: proves lfpool.hpp is installed and works from outside with
// the same flags as a C program (pools, caches, handles, pool_resource).
#include <lfpool.hpp>

#include <cstdio>
#include <list>
#include <thread>
#include <unordered_set>
#include <vector>

struct entity {
	int id;
	std::vector<int> parts;
	explicit entity(int i) : id(i), parts(4, i)
	{
	}
};

int main()
{
	lfp::pool<entity> pool(1000);
	std::unordered_set<lfp::handle<entity>> alive;
	std::vector<std::thread> workers;

	for (int t = 0; t < 2; t++) {
		workers.emplace_back([&pool, t] {
			lfp::cache<entity> cache(pool);

			for (int i = 0; i < 10000; i++)
				cache.destroy(cache.make(t * 10000 + i));
		});
	}
	for (auto &w : workers)
		w.join();
	entity *e = pool.make(1);
	lfp::handle<entity> h = pool.handle_of(e);
	alive.insert(h);
	if (!alive.count(h) || pool.resolve(h) != e)
		return 1;
	pool.destroy(e);
	if (pool.resolve(h) != nullptr || pool.stats().live != 0)
		return 2;

	lfp::pool_resource res(32, 100);
	{
		std::pmr::list<int> small(&res);

		for (int i = 0; i < 1000; i++)
			small.push_back(i);
		if (res.stats().live != 100)
			return 3;
	}
	if (res.stats().live != 0)
		return 4;

	struct lfp_stats st = pool.stats();
	std::printf("installed lfpool.hpp works: %llu allocations\n",
		    static_cast<unsigned long long>(st.allocs));
	return 0;
}
