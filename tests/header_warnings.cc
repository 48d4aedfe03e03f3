// lfpool.h and lfpool.hpp under the warnings an engine builds its own
// code with: header_warnings.test compiles this with each C++ compiler at
// hand, -Wall -Wextra -pedantic -Wshadow -Wold-style-cast -Wconversion
// -Werror, with and without exceptions. Every template of lfpool.hpp is
// instantiated, for a trivial and a non-trivial T, so that their bodies
// are compiled too. It is only compiled, never run.
#include <lfpool.h>
#include <lfpool.hpp>

#include <string>
#include <vector>

namespace
{
struct named {
	std::string name;
	int value;

	explicit named(int v) : name("a name"), value(v)
	{
	}
};

template <class T> std::uint64_t use_pool(int v)
{
	lfp::pool<T> pool(16);
	lfp::cache<T> cache(pool);
	T *a = pool.make(v), *b = cache.make(v);
	lfp::handle<T> h = pool.handle_of(a);
	lfp::unique_ptr<T> u = pool.make_unique(v);
	lfp::cache_unique_ptr<T> cu = cache.make_unique(v);
	lfp::stats st = pool.stats();
	lfp::family_stats fs{};
	int n = pool.for_each([](T &) {}) +
		pool.for_each([](T &, lfp::handle<T>) { return false; }) +
		pool.for_each_range(0, pool.extent(), [](T &) { return 0; });

	if (pool.resolve(h) == a && cache.resolve(h) == a)
		st.live++;
	st.live += cache.stats().allocs + fs.spilled;
	pool.destroy(a);
	cache.destroy(b);
	pool.destroy(h);
	cache.destroy(h);
	cache.flush();
	return st.live + std::hash<lfp::handle<T>>{}(h) + h.index() +
	       h.generation() + (pool.native() != nullptr) +
	       (cache.native() != nullptr) + static_cast<std::uint64_t>(n);
}
} // namespace

int main()
{
	lfp::pool_resource res(32, 16);
	std::pmr::vector<int> v(&res);
	lfp_handle h = LFP_NULL_HANDLE;

	v.push_back(1);
	return static_cast<int>(use_pool<int>(1) + use_pool<named>(2) +
				res.stats().live + res.block_size() +
				lfp_handle_index(h) + lfp_handle_gen(h));
}
