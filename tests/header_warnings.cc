/* SPDX-License-Identifier: MIT */
// lfpool.h and lfpool.hpp under the warnings an engine builds its own
// code with: header_warnings.test compiles this with each C++ compiler at
// hand, -Wall -Wextra -pedantic -Wshadow -Wold-style-cast -Wconversion
// -Werror, with and without exceptions. Every template of lfpool.hpp is
// instantiated (the families' too), for a trivial and a non-trivial T, so that their bodies
// are compiled too. It is only compiled, never run.
//
// Built with -DLFPT_PIECE='"lfpool/pool.hpp"' (or another piece of
// include/lfpool/), it includes that piece alone and uses what the piece
// declares, told by its include guard, to show that each piece includes
// what it needs.
#ifdef LFPT_PIECE
#include LFPT_PIECE
#else
#include <lfpool.h>
#include <lfpool.hpp>
#endif

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

#ifdef LFPOOL_POOL_HPP
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
#endif

#ifdef LFPOOL_FAMILY_HPP
template <class T> std::uint64_t use_family(int v)
{
	lfp::family fam({ 16, 64, 256 }, { 8, 8, 8 });
	lfp::family_cache fc(fam);
	T *a = fam.make<T>(v), *b = fc.make<T>(v);
	lfp::family_unique_ptr<T> u = fam.make_unique<T>(v);
	lfp::family_cache_unique_ptr<T> cu = fc.make_unique<T>(v);
	lfp::family_stats st = fam.stats();
	void *p = fam.alloc(20), *q = fc.alloc(20);

	fam.destroy(a);
	fc.destroy(b);
	fc.flush();
	return st.spilled + fam.classes() + fam.class_size(0) +
	       static_cast<std::uint64_t>(fam.class_for(20) +
					  fam.class_of(p) + fam.free(p) +
					  fc.free(q)) +
	       (fam.class_pool(0) != nullptr) + fam.alignment() +
	       (fc.class_cache(0) != nullptr) + (fc.native() != nullptr) +
	       (fam.native() != nullptr);
}
#endif
} // namespace

int main()
{
	std::uint64_t sum = 0;
	lfp::stats st{};
	lfp::family_stats fst{};
	lfp_handle h = LFP_NULL_HANDLE;

#ifdef LFPOOL_RESOURCE_HPP
	lfp::family_resource fres({ 16, 64 }, { 8, 8 });
	std::pmr::vector<int> w(&fres);

	w.push_back(2);
	lfp::pool_resource res(32, 16);
	std::pmr::vector<int> v(&res);

	v.push_back(1);
	sum += fres.stats().total.live + fres.largest_block() +
	       res.stats().live + res.block_size();
#endif
#ifdef LFPOOL_HANDLE_HPP
	lfp::handle<named> nh(h);

	sum += std::hash<lfp::handle<named>>{}(nh) + nh.index() +
	       nh.generation() + (nh == lfp::handle<named>{});
#endif
#ifdef LFPOOL_POOL_HPP
	sum += use_pool<int>(1) + use_pool<named>(2);
#endif
#ifdef LFPOOL_FAMILY_HPP
	sum += use_family<int>(3) + use_family<named>(4);
#endif
	return static_cast<int>(sum + st.live + fst.spilled +
				lfp_handle_index(h) + lfp_handle_gen(h));
}
