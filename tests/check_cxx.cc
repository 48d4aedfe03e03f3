/* SPDX-License-Identifier: MIT */
// The C++ interface (lfpool.hpp): construction and destruction counts,
// typed handles, pmr containers over pool_resource and family_resource
// with a counting upstream, worker caches handing objects across
// threads, families and family caches, exhaustion and creation
// failures, empty objects and the factories that make them later
// (create). Uses only the public API, as a C++ program would.
#include <lfpool.hpp>

#include <check.h>
#include "checkmark.h"

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace
{

bool under_sanitizer()
{
	const char *s = std::getenv("SANITIZER");

	return s && *s && std::strcmp(s, "no") != 0;
}

// Counts its constructions and destructions; a std::string member makes
// it non-trivial, so a destructor that does not run leaks (ASan sees it).
struct tracked {
	static std::atomic<long> made, gone;
	static constexpr std::uint64_t canary = 0x1f00d5eed0b1e5ull;

	std::uint64_t word = canary;
	std::string name;
	int value;

	explicit tracked(int v = 0)
		: name("an object with a name too long for the SSO"), value(v)
	{
		made.fetch_add(1, std::memory_order_relaxed);
	}
	tracked(const tracked &) = delete;
	tracked &operator=(const tracked &) = delete;
	~tracked()
	{
		word = 0;
		gone.fetch_add(1, std::memory_order_relaxed);
	}

	static void reset()
	{
		made = 0;
		gone = 0;
	}
};
std::atomic<long> tracked::made, tracked::gone;

// Every slot accounted for and this many live.
template <class T>
void expect_live(const lfp::pool<T> &pool, std::uint64_t live)
{
	lfp::stats st = pool.stats();

	ck_assert_uint_eq(st.live, live);
	ck_assert_uint_eq(st.free + st.cached + st.live + st.deferred,
			  st.capacity);
}

// Bytes from one slot of the pool to the next.
template <class T> std::ptrdiff_t stride(const lfp::pool<T> &pool)
{
	return static_cast<char *>(lfp_at(pool.native(), 1)) -
	       static_cast<char *>(lfp_at(pool.native(), 0));
}

} // namespace

START_TEST(make_destroy_counts)
{
	tracked::reset();
	{
		lfp::pool<tracked> pool(64);
		tracked *a = pool.make(7);
		tracked *b = pool.make();

		ck_assert_ptr_nonnull(a);
		ck_assert_ptr_nonnull(b);
		ck_assert_int_eq(a->value, 7);
		ck_assert_int_eq(b->value, 0);
		ck_assert(lfp_owns(pool.native(), a));
		ck_assert_uint_eq(reinterpret_cast<std::uintptr_t>(a) %
					  alignof(tracked),
				  0);
		ck_assert_int_eq(tracked::made, 2);
		expect_live(pool, 2);

		pool.destroy(a);
		ck_assert_int_eq(tracked::gone, 1);
		expect_live(pool, 1);
		pool.destroy(nullptr);

		// Destroyed twice, or not ours: no destructor, refused.
		tracked local(1);
		pool.destroy(a);
		pool.destroy(&local);
		ck_assert_int_eq(tracked::gone, 1);
		ck_assert_uint_eq(pool.stats().rejected_frees, 2);
		expect_live(pool, 1);

		{
			lfp::unique_ptr<tracked> u = pool.make_unique(9);

			ck_assert_ptr_nonnull(u.get());
			ck_assert_int_eq(u->value, 9);
			ck_assert_int_eq(tracked::made, 4);
			expect_live(pool, 2);
		}
		ck_assert_int_eq(tracked::gone, 2);
		expect_live(pool, 1);

		// The unique_ptr's deleter names the C pool, which a move of
		// the lfp::pool leaves where it is.
		lfp::unique_ptr<tracked> u = pool.make_unique(3);
		lfp::pool<tracked> moved(std::move(pool));

		ck_assert_ptr_null(pool.native());
		ck_assert_ptr_null(pool.make());
		u.reset();
		ck_assert_int_eq(tracked::gone, 3);
		expect_live(moved, 1);
		// b and local are still alive; the pool destroys b.
	}
	ck_assert_int_eq(tracked::made, 5);
	ck_assert_int_eq(tracked::gone, 5);
}
END_TEST

namespace
{
struct thrower {
	static int built;
	explicit thrower(bool fail)
	{
		if (fail)
			throw std::runtime_error("constructor fails");
		built++;
	}
};
int thrower::built;
} // namespace

// A throwing constructor gives its slot back before the exception leaves.
START_TEST(constructor_exception_releases_the_slot)
{
	lfp::pool<thrower> pool(1);
	bool caught = false;

	try {
		pool.make(true);
	} catch (const std::runtime_error &) {
		caught = true;
	}
	ck_assert(caught);
	expect_live(pool, 0);
	ck_assert_uint_eq(pool.stats().allocs, 1);
	ck_assert_uint_eq(pool.stats().frees, 1);
	thrower *t = pool.make(false);
	ck_assert_ptr_nonnull(t);
	pool.destroy(t);

	lfp::cache<thrower> cache(pool);
	caught = false;
	try {
		cache.make(true);
	} catch (const std::runtime_error &) {
		caught = true;
	}
	ck_assert(caught);
	ck_assert_ptr_nonnull(t = cache.make(false));
	cache.destroy(t);
	expect_live(pool, 0);
}
END_TEST

// A pool built from a full lfp_config takes obj_size and align from T
// when they are 0 and refuses them if they cannot hold a T.
START_TEST(config_sized_from_t)
{
	struct alignas(64) wide {
		char bytes[100];
	};
	lfp_config cfg{};

	cfg.capacity = 8;
	cfg.flags = LFP_F_NO_CACHE;
	{
		lfp::pool<wide> pool(cfg);
		wide *w[8];

		for (auto &p : w) {
			p = pool.make();
			ck_assert_ptr_nonnull(p);
			ck_assert_uint_eq(
				reinterpret_cast<std::uintptr_t>(p) % 64, 0);
		}
		ck_assert_ptr_null(pool.make());
		// Slots are 128 bytes apart: sizeof(wide), no more.
		ck_assert_int_eq(stride(pool), sizeof(wide));
		for (auto p : w)
			pool.destroy(p);
	}
	{
		// Small and loosely aligned: slots as dense as an array.
		struct rgb {
			std::uint32_t r, g, b;
		};
		lfp::pool<rgb> pool(cfg), dense(16);

		ck_assert_int_eq(stride(pool), sizeof(rgb));
		ck_assert_int_eq(stride(dense), sizeof(rgb));
	}
	cfg.obj_size = 256;
	cfg.align = 128;
	{
		lfp::pool<wide> pool(cfg);
		wide *p = pool.make();

		ck_assert_uint_eq(reinterpret_cast<std::uintptr_t>(p) % 128, 0);
		pool.destroy(p);
	}
}
END_TEST

// A handle goes stale when its object is destroyed, even when the slot
// holds a new object, and then differs from the new object's handle.
START_TEST(stale_handles)
{
	lfp::pool<tracked> pool(1);
	tracked *a = pool.make(1);
	lfp::handle<tracked> h = pool.handle_of(a), none;

	ck_assert(h);
	ck_assert(!none);
	ck_assert(h != none);
	ck_assert(h == pool.handle_of(a));
	ck_assert_ptr_eq(pool.resolve(h), a);
	ck_assert_uint_eq(h.index(), lfp_index_of(pool.native(), a));
	ck_assert_uint_eq(h.bits(), h.native().bits);

	pool.destroy(a);
	ck_assert_ptr_null(pool.resolve(h));
	ck_assert(!pool.handle_of(a));

	tracked *b = pool.make(2); // one slot: the same one again
	lfp::handle<tracked> h2 = pool.handle_of(b);

	ck_assert_ptr_eq(b, a);
	ck_assert_uint_eq(h2.index(), h.index());
	ck_assert(h2 != h);
	ck_assert(!(h2 == h));
	ck_assert_uint_ne(h2.generation(), h.generation());
	ck_assert_ptr_null(pool.resolve(h));
	ck_assert_ptr_eq(pool.resolve(h2), b);
	ck_assert_ptr_null(pool.resolve(none));

	tracked local;
	ck_assert(!pool.handle_of(&local));
	ck_assert(!pool.handle_of(nullptr));
	pool.destroy(b);
}
END_TEST

START_TEST(handles_in_unordered_set)
{
	const int n = 1000;
	lfp::pool<tracked> pool(n);
	std::vector<tracked *> objs;
	std::unordered_set<lfp::handle<tracked>> set;

	for (int i = 0; i < n; i++) {
		objs.push_back(pool.make(i));
		ck_assert(set.insert(pool.handle_of(objs.back())).second);
	}
	ck_assert_uint_eq(set.size(), n);
	ck_assert(!set.count(lfp::handle<tracked>()));
	for (tracked *p : objs) {
		auto it = set.find(pool.handle_of(p));

		ck_assert(it != set.end());
		ck_assert_ptr_eq(pool.resolve(*it), p);
	}
	ck_assert_uint_eq(std::hash<lfp::handle<tracked>>{}(
				  pool.handle_of(objs[0])),
			  std::hash<lfp::handle<tracked>>{}(
				  pool.handle_of(objs[0])));

	// Destroy every other object; new ones reuse the slots under new
	// handles, which the set does not hold.
	for (int i = 0; i < n; i += 2)
		pool.destroy(objs[i]);
	int stale = 0;
	for (const auto &h : set)
		stale += pool.resolve(h) == nullptr;
	ck_assert_int_eq(stale, n / 2);
	for (int i = 0; i < n; i += 2) {
		objs[i] = pool.make(i);
		ck_assert(!set.count(pool.handle_of(objs[i])));
	}
	for (tracked *p : objs)
		pool.destroy(p);
	expect_live(pool, 0);
}
END_TEST

namespace
{
// An upstream resource that counts what reaches it and checks that every
// block comes back to it with the size and alignment it was given.
class counting_resource : public std::pmr::memory_resource
{
public:
	long allocs = 0, deallocs = 0, mismatched = 0;
	std::size_t smallest = SIZE_MAX;

	std::size_t outstanding() const
	{
		return blocks_.size();
	}

protected:
	void *do_allocate(std::size_t bytes, std::size_t align) override
	{
		auto *heap = std::pmr::new_delete_resource();
		void *p = heap->allocate(bytes, align);

		blocks_.emplace(p, std::make_pair(bytes, align));
		allocs++;
		if (bytes < smallest)
			smallest = bytes;
		return p;
	}

	void do_deallocate(void *p, std::size_t bytes,
			   std::size_t align) override
	{
		auto it = blocks_.find(p);

		deallocs++;
		if (it == blocks_.end() ||
		    it->second != std::make_pair(bytes, align)) {
			mismatched++;
			return; // not ours: leak it rather than corrupt
		}
		blocks_.erase(it);
		std::pmr::new_delete_resource()->deallocate(p, bytes, align);
	}

	bool do_is_equal(const std::pmr::memory_resource &other) const
		noexcept override
	{
		return this == &other;
	}

private:
	std::unordered_map<void *, std::pair<std::size_t, std::size_t>>
		blocks_;
};
} // namespace

START_TEST(pmr_vector_large_blocks_go_upstream)
{
	const std::size_t n = 100000, block = 32;
	counting_resource up;
	{
		lfp::pool_resource res(block, 64, &up);
		std::pmr::vector<std::uint64_t> v(&res);

		ck_assert_ptr_eq(res.upstream_resource(), &up);
		ck_assert_uint_eq(res.block_size(), block);
		for (std::size_t i = 0; i < n; i++)
			v.push_back(i);
		for (std::size_t i = 0; i < n; i++)
			ck_assert_uint_eq(v[i], i);
		// The first few capacities fit a block; the rest do not.
		ck_assert_uint_ge(res.stats().allocs, 1);
		ck_assert_int_gt(up.allocs, 0);
		ck_assert_uint_gt(up.smallest, block);
		ck_assert_uint_eq(up.outstanding(), 1);
		ck_assert_uint_eq(res.stats().live, 0);

		// Small but over-aligned goes upstream too.
		void *p = res.allocate(8, 2 * lfp::pool_resource::alignment());
		ck_assert(!lfp_owns(res.native(), p));
		res.deallocate(p, 8, 2 * lfp::pool_resource::alignment());
	}
	ck_assert_uint_eq(up.outstanding(), 0);
	ck_assert_int_eq(up.mismatched, 0);
	ck_assert_int_eq(up.allocs, up.deallocs);
}
END_TEST

START_TEST(pmr_list_from_the_pool)
{
	const int n = 100000;
	counting_resource up;
	{
		lfp::pool_resource res(32, n, &up);
		std::pmr::list<int> l(&res);

		for (int i = 0; i < n; i++)
			l.push_back(i);
		// Every node is a pool block: none went upstream.
		ck_assert_uint_eq(res.stats().live, n);
		ck_assert_int_eq(up.allocs, 0);
		int i = 0;
		for (int x : l)
			ck_assert_int_eq(x, i++);
		// Churn: every other node out and back in.
		for (auto it = l.begin(); it != l.end();) {
			it = l.erase(it);
			if (it != l.end())
				++it;
		}
		ck_assert_uint_eq(res.stats().live, n / 2);
		for (int j = 0; j < n / 2; j++)
			l.push_front(j);
		ck_assert_uint_eq(res.stats().live, n);
		ck_assert_int_eq(up.allocs, 0);
		l.clear();
		ck_assert_uint_eq(res.stats().live, 0);
	}
	ck_assert_int_eq(up.allocs, 0);
	ck_assert_int_eq(up.deallocs, 0);
}
END_TEST

// An exhausted pool sends small blocks upstream, and each block goes back
// where it came from, by its address.
START_TEST(pmr_list_overflows_upstream)
{
	const int n = 100000, capacity = 1000;
	counting_resource up;
	{
		lfp::pool_resource res(32, capacity, &up);
		std::pmr::list<int> l(&res);

		for (int i = 0; i < n; i++)
			l.push_back(i);
		ck_assert_uint_eq(res.stats().live, capacity);
		ck_assert_int_eq(up.allocs, n - capacity);
		ck_assert_uint_le(up.smallest, 32);
		// Free half of both kinds; new nodes fill the pool first.
		for (auto it = l.begin(); it != l.end();) {
			it = l.erase(it);
			if (it != l.end())
				++it;
		}
		ck_assert_uint_eq(res.stats().live, capacity / 2);
		ck_assert_uint_eq(up.outstanding(), (n - capacity) / 2);
		for (int j = 0; j < n / 2; j++)
			l.push_back(j);
		ck_assert_uint_eq(res.stats().live, capacity);
		ck_assert_uint_eq(up.outstanding(), n - capacity);
	}
	ck_assert_uint_eq(up.outstanding(), 0);
	ck_assert_int_eq(up.mismatched, 0);
	ck_assert_int_eq(up.allocs, up.deallocs);
}
END_TEST

START_TEST(pmr_resources_equal_only_themselves)
{
	lfp::pool_resource a(16, 4), b(16, 4);

	ck_assert(a == a);
	ck_assert(a != b);
	ck_assert(a != *std::pmr::new_delete_resource());
	ck_assert(std::pmr::polymorphic_allocator<int>(&a) ==
		  std::pmr::polymorphic_allocator<int>(&a));
}
END_TEST

namespace
{
struct message {
	static std::atomic<long> made, gone;
	static constexpr std::uint64_t canary = 0x5eedfacecafef00dull;

	std::uint64_t word = canary;
	unsigned from;
	std::uint64_t seq;

	message(unsigned f, std::uint64_t s) noexcept : from(f), seq(s)
	{
		made.fetch_add(1, std::memory_order_relaxed);
	}
	~message()
	{
		word = 0;
		gone.fetch_add(1, std::memory_order_relaxed);
	}
};
std::atomic<long> message::made, message::gone;

// Where one worker posts messages for the next.
class mailbox
{
public:
	void post(std::vector<message *> &msgs)
	{
		std::lock_guard<std::mutex> g(lock_);

		box_.insert(box_.end(), msgs.begin(), msgs.end());
		msgs.clear();
	}

	void take(std::vector<message *> &msgs)
	{
		std::lock_guard<std::mutex> g(lock_);

		msgs.swap(box_);
	}

private:
	std::mutex lock_;
	std::vector<message *> box_;
};

const unsigned nworkers = 4;

// Make bursts of messages through the worker's own cache and post them to
// the next worker; check and destroy what the previous one posted.
void work(lfp::pool<message> &pool, mailbox *mail, unsigned self,
	  unsigned rounds, std::atomic<long> &bad)
{
	const unsigned burst = 16, prev = (self + nworkers - 1) % nworkers;
	lfp::cache<message> cache(pool);
	std::vector<message *> out, in;

	for (unsigned r = 0; r < rounds; r++) {
		for (unsigned i = 0; i < burst; i++) {
			message *m = cache.make(self, r);

			if (!m)
				break; // exhausted for now: post what we have
			out.push_back(m);
		}
		mail[(self + 1) % nworkers].post(out);
		mail[self].take(in);
		for (message *m : in) {
			if (m->word != message::canary || m->from != prev)
				bad++;
			cache.destroy(m);
		}
		in.clear();
	}
}
} // namespace

// Four workers, each with its own cache, make messages and post them to
// the next worker, which checks and destroys them through its own cache.
START_TEST(worker_caches_across_threads)
{
	const unsigned rounds = under_sanitizer() ? 500 : 5000;
	lfp::pool<message> pool(256);
	mailbox mail[nworkers];
	std::atomic<long> bad{ 0 };
	std::vector<std::thread> threads;
	std::vector<message *> left;

	message::made = 0;
	message::gone = 0;
	for (unsigned t = 0; t < nworkers; t++)
		threads.emplace_back(work, std::ref(pool), mail, t, rounds,
				     std::ref(bad));
	for (auto &th : threads)
		th.join();
	for (auto &m : mail) {
		m.take(left);
		for (message *p : left)
			pool.destroy(p);
		left.clear();
	}
	ck_assert_int_eq(bad, 0);
	ck_assert_int_gt(message::made, 0);
	ck_assert_int_eq(message::made, message::gone);
	expect_live(pool, 0);
	ck_assert_uint_eq(pool.stats().allocs, message::made);
	ck_assert_uint_eq(pool.stats().frees, message::made);
}
END_TEST

// An exhausted pool is a normal state: nullptr, an empty unique_ptr,
// and nothing thrown.
START_TEST(exhaustion_gives_nullptr)
{
	lfp::pool<tracked> pool(4);
	lfp::cache<tracked> cache(pool);
	tracked *objs[4];

	static_assert(!noexcept(pool.make(1)),
		      "tracked's constructor may throw (std::string)");
	tracked::reset();
	for (auto &p : objs)
		ck_assert_ptr_nonnull(p = pool.make());
	ck_assert_ptr_null(pool.make());
	ck_assert(!pool.make_unique(1));
	ck_assert_ptr_null(cache.make(2));
	ck_assert_int_eq(tracked::made, 4);
	ck_assert_uint_eq(pool.stats().failed_allocs, 3);
	pool.destroy(objs[0]);
	ck_assert_ptr_nonnull(objs[0] = cache.make(3));
	for (auto p : objs)
		cache.destroy(p);
	ck_assert_int_eq(tracked::made, 5);
	ck_assert_int_eq(tracked::gone, 5);

	lfp::pool<int> ints(2);
	static_assert(noexcept(ints.make(1)), "make never throws for int");
	static_assert(noexcept(ints.make_unique(1)), "nor make_unique");
	auto a = ints.make_unique(1), b = ints.make_unique(2),
	     c = ints.make_unique(3);
	ck_assert(a && b && !c);
}
END_TEST

namespace
{
template <class F> int error_of(F make)
{
	try {
		make();
	} catch (const std::system_error &e) {
		ck_assert(e.code().category() == std::generic_category());
		return e.code().value();
	}
	return 0;
}
} // namespace

START_TEST(creation_failures_throw)
{
	ck_assert_int_eq(error_of([] { lfp::pool<int> p(0); }), EINVAL);
	ck_assert_int_eq(error_of([] { lfp::pool<int> p(UINT32_MAX); }),
			 EOVERFLOW);
	ck_assert_int_eq(error_of([] {
				 lfp_config c{};
				 c.capacity = 4;
				 c.obj_size = sizeof(int) - 1;
				 lfp::pool<int> p(c);
			 }),
			 EINVAL);
	ck_assert_int_eq(error_of([] {
				 lfp_config c{};
				 c.capacity = 4;
				 c.align = 3;
				 lfp::pool<char> p(c);
			 }),
			 EINVAL);
	ck_assert_int_eq(error_of([] {
				 lfp_config c{};
				 c.capacity = 4;
				 c.align = alignof(double) / 2;
				 lfp::pool<double> p(c);
			 }),
			 EINVAL);
	ck_assert_int_eq(error_of([] {
				 lfp_config c{};
				 c.capacity = 4;
				 c.flags = 1u << 31;
				 lfp::pool<int> p(c);
			 }),
			 EINVAL);
	ck_assert_int_eq(error_of([] { lfp::pool_resource r(0, 16); }),
			 EINVAL);
	ck_assert_int_eq(error_of([] { lfp::pool_resource r(16, 0); }),
			 EINVAL);
	ck_assert_int_eq(error_of([] { lfp::pool_resource r(16, 4, nullptr); }),
			 EINVAL);
	ck_assert_int_eq(error_of([] {
				 lfp::pool<int> p(4), q(std::move(p));
				 lfp::cache<int> c(p);
			 }),
			 EINVAL);

	// The message names the call, and the code compares with std::errc.
	try {
		lfp::pool<int> p(0);
		ck_abort_msg("a pool of capacity 0 was made");
	} catch (const std::system_error &e) {
		ck_assert(e.code() == std::errc::invalid_argument);
		ck_assert_ptr_nonnull(std::strstr(e.what(), "lfp_create"));
	}
}
END_TEST

namespace
{
// What a constructor that fails says: its what().
template <class F> std::string message_of(F make)
{
	try {
		make();
	} catch (const std::system_error &e) {
		return e.what();
	}
	return "(made)";
}

// What lfpool.hpp says it says, for errno value err: the class and the
// step, the field at fault (if any) with its value, lfp_strerror's text,
// then strerror's (which std::system_error adds). cxx_noexcept holds the
// line printed without exceptions to the same words.
std::string failure_text(const char *what, const char *field, int err)
{
	std::string s = what;

	if (field)
		s += std::string(": ") + field;
	return s + ": " + lfp_strerror(-err) + ": " + std::strerror(err);
}

#define EXPECT_MESSAGE(make, what, field, err)                                 \
	do {                                                                   \
		std::string got_ = message_of([&] { make; });                  \
		std::string want_ = failure_text(what, field, err);            \
                                                                               \
		ck_assert_str_eq(got_.c_str(), want_.c_str());                 \
	} while (0)
} // namespace

// The message of a failed constructor says why: lfp_strerror's text, not
// only the errno value's, and the field of the configuration at fault, as
// lfp_config_fault (lfp_family_config_fault) names it, with its value.
START_TEST(creation_failures_say_why)
{
	char flags[32], align[32];
	lfp_config c{};

	EXPECT_MESSAGE(lfp::pool<int> p(0), "lfp::pool<T>: lfp_create",
		       "capacity 0", EINVAL);
	EXPECT_MESSAGE(lfp::pool<int> p(UINT32_MAX), "lfp::pool<T>: lfp_create",
		       "capacity 4294967295", EOVERFLOW);
	c.capacity = 4;
	c.flags = 1u << 31;
	EXPECT_MESSAGE(lfp::pool<int> p(c), "lfp::pool<T>: lfp_create",
		       "flags 0x80000000", EINVAL);
	c.flags = 0;
	c.cache_size = 4;
	c.batch_size = 9;
	EXPECT_MESSAGE(lfp::pool<int> p(c), "lfp::pool<T>: lfp_create",
		       "batch_size 9", EINVAL);
	c.cache_size = c.batch_size = 0;
	c.exhaust = LFP_EXHAUST_GROW;
	EXPECT_MESSAGE(lfp::pool<int> p(c), "lfp::pool<T>: lfp_create",
		       "max_capacity 0", EINVAL);
	c.exhaust = LFP_EXHAUST_RECLAIM;
	EXPECT_MESSAGE(lfp::pool<int> p(c), "lfp::pool<T>: lfp_create",
		       "reclaim", EINVAL);
	c.exhaust = 0;
	c.align = 3;
	EXPECT_MESSAGE(lfp::pool<char> p(c), "lfp::pool<T>: lfp_create",
		       "align 3", EINVAL);
	// The wrapper's own checks name their field too.
	c.align = alignof(double) / 2; // 4 on x86-64, 2 on i686
	std::snprintf(align, sizeof(align), "align %zu", c.align);
	EXPECT_MESSAGE(lfp::pool<double> p(c),
		       "lfp::pool<T>: lfp_config cannot hold a T", align,
		       EINVAL);
	c.align = 0;
	c.obj_size = sizeof(int) - 1;
	EXPECT_MESSAGE(lfp::pool<int> p(c),
		       "lfp::pool<T>: lfp_config cannot hold a T",
		       "obj_size 3", EINVAL);
	c.obj_size = 0;
	c.flags = LFP_F_UNCHECKED;
	std::snprintf(flags, sizeof(flags), "flags %#x", LFP_F_UNCHECKED);
	EXPECT_MESSAGE(lfp::pool<tracked> p(c),
		       "lfp::pool<T>: LFP_F_UNCHECKED needs a trivially "
		       "destructible T",
		       flags, EINVAL);
	EXPECT_MESSAGE(lfp::pool_resource r(0, 16),
		       "lfp::pool_resource: lfp_create", "obj_size 0", EINVAL);
	EXPECT_MESSAGE(lfp::pool_resource r(16, 4, nullptr),
		       "lfp::pool_resource: no upstream", nullptr, EINVAL);
	EXPECT_MESSAGE(lfp::family f({ 64, 32 }, { 4, 4 }),
		       "lfp::family: lfp_family_create", "sizes", EINVAL);
	EXPECT_MESSAGE(lfp::family f({ 32, 64 }, { 4, 0 }),
		       "lfp::family: lfp_family_create", "capacities", EINVAL);
	EXPECT_MESSAGE(lfp::family f({ 32, 64 }, { 4 }),
		       "lfp::family: as many capacities as sizes",
		       "capacities 1, sizes 2", EINVAL);
	{
		lfp_family_config fc{};
		const std::size_t sizes[] = { 32, 64 };
		const std::uint32_t caps[] = { 4, 4 };

		fc.sizes = sizes;
		fc.capacities = caps;
		fc.classes = 2;
		fc.flags = 1u << 30;
		EXPECT_MESSAGE(lfp::family f(fc),
			       "lfp::family: lfp_family_create",
			       "flags 0x40000000", EINVAL);
		fc.flags = 0;
		fc.classes = LFP_FAMILY_MAX_CLASSES + 1;
		EXPECT_MESSAGE(lfp::family f(fc),
			       "lfp::family: lfp_family_create", "classes 65",
			       E2BIG);
	}
	// No field at fault: the step and the texts alone.
	EXPECT_MESSAGE(lfp::pool<int> p; lfp::cache<int> k(p),
		       "lfp::cache<T>: lfp_cache_create", nullptr, EINVAL);
	EXPECT_MESSAGE(lfp::family f; lfp::family_cache k(f),
		       "lfp::family_cache: lfp_family_cache_create", nullptr,
		       EINVAL);
}
END_TEST

// An unchecked pool takes only a trivially destructible T: for another
// its end could not destroy the live objects, nor destroy() tell a
// destroyed one. Refused by the constructor and create alike; a
// trivially destructible T is made, destroyed and counted as usual.
START_TEST(unchecked_pool_needs_trivial_t)
{
	lfp_config c{};
	c.capacity = 16;
	c.flags = LFP_F_UNCHECKED;

	ck_assert_int_eq(error_of([&] { lfp::pool<tracked> p(c); }), EINVAL);
	{
		lfp::pool<tracked> p;

		ck_assert_int_eq(lfp::pool<tracked>::create(c, p), -EINVAL);
		ck_assert(!p);
	}
	try {
		lfp::pool<tracked> p(c);
		ck_abort_msg("an unchecked pool of a non-trivial T was made");
	} catch (const std::system_error &e) {
		ck_assert_ptr_nonnull(std::strstr(e.what(), "LFP_F_UNCHECKED"));
	}
	{
		lfp::pool<std::uint64_t> p(c), q;
		std::uint64_t *a = p.make(std::uint64_t{ 5 });
		std::uint64_t *b = p.make(std::uint64_t{ 6 });

		ck_assert_ptr_nonnull(a);
		ck_assert_ptr_nonnull(b);
		ck_assert_uint_eq(*a + *b, 11);
		expect_live(p, 2);
		p.destroy(a);
		expect_live(p, 1);
		ck_assert(p.handle_of(b) == lfp::handle<std::uint64_t>());
		ck_assert_int_eq(lfp::pool<std::uint64_t>::create(c, q), 0);
		ck_assert(q);
		p.destroy(b);
		expect_live(p, 0);
	}
	// The check is the flag's alone: a checked pool of tracked is made.
	c.flags = 0;
	ck_assert_int_eq(error_of([&] { lfp::pool<tracked> p(c); }), 0);
}
END_TEST

// struct lfp_stats and struct lfp_family_stats under names that need no
// struct tag, where C++ has the functions of the same names in the way.
START_TEST(stats_aliases)
{
	static_assert(std::is_same_v<lfp::stats, struct lfp_stats>);
	static_assert(std::is_same_v<lfp::family_stats,
				     struct lfp_family_stats>);
	lfp::pool<int> pool(8);
	std::vector<lfp::stats> frames;
	lfp::stats st = pool.stats();

	frames.push_back(st);
	ck_assert_ptr_nonnull(pool.make(1));
	frames.push_back(pool.stats());
	lfp_stats_delta(&frames[1], &frames[0], &st);
	ck_assert_uint_eq(st.allocs, 1);
	ck_assert_uint_eq(st.live, 1);

	lfp::pool_resource res(16, 4);
	frames.push_back(res.stats());
	ck_assert_uint_eq(frames.back().capacity, 4);

	const std::size_t sizes[] = { 16, 64 };
	const std::uint32_t caps[] = { 4, 4 };
	lfp_family_config fc{};
	lfp_family *fam = nullptr;

	fc.sizes = sizes;
	fc.capacities = caps;
	fc.classes = 2;
	ck_assert_int_eq(lfp_family_create(&fc, &fam), 0);
	void *p = lfp_family_alloc(fam, 40);
	std::vector<lfp::family_stats> fams(1);
	lfp_family_stats(fam, &fams[0]);
	ck_assert_uint_eq(fams[0].total.live, 1);
	ck_assert_int_eq(lfp_family_free(fam, p), 0);
	lfp_family_destroy(fam);
}
END_TEST

// Destroying by handle runs ~T and releases the slot only while the
// handle is current: a stale handle leaves the slot's new object alone.
template <class Owner> void destroy_by_handle_in(lfp::pool<tracked> &pool,
						 Owner &owner)
{
	tracked::reset();
	tracked *a = owner.make(1);
	lfp::handle<tracked> h = pool.handle_of(a);
	std::uint64_t rejected = pool.stats().rejected_frees;

	ck_assert(owner.destroy(h));
	ck_assert_int_eq(tracked::gone, 1);
	ck_assert_ptr_null(pool.resolve(h));
	ck_assert(!owner.destroy(h));
	ck_assert_int_eq(tracked::gone, 1);

	tracked *b = owner.make(2); // one slot: a's again
	ck_assert_ptr_eq(b, a);
	ck_assert(!owner.destroy(h));
	ck_assert_int_eq(tracked::gone, 1);
	ck_assert_uint_eq(b->word, tracked::canary);
	ck_assert_int_eq(b->value, 2);
	ck_assert(!owner.destroy(lfp::handle<tracked>()));
	ck_assert_uint_eq(pool.stats().rejected_frees, rejected + 3);
	ck_assert(owner.destroy(pool.handle_of(b)));
	ck_assert_int_eq(tracked::gone, 2);
	expect_live(pool, 0);
}

START_TEST(destroy_by_handle)
{
	lfp::pool<tracked> pool(1);

	destroy_by_handle_in(pool, pool);
	{
		lfp::cache<tracked> cache(pool);

		destroy_by_handle_in(pool, cache);
		tracked *a = pool.make(3);
		lfp::handle<tracked> h = pool.handle_of(a);

		ck_assert_ptr_eq(cache.resolve(h), a);
		lfp::cache<tracked> moved(std::move(cache));
		ck_assert(!cache.destroy(h));
		ck_assert(moved.destroy(h));
		ck_assert_ptr_null(moved.resolve(h));
	}
	lfp::handle<tracked> h = pool.handle_of(pool.make(4));
	lfp::pool<tracked> moved(std::move(pool));
	ck_assert(!pool.destroy(h));
	ck_assert(moved.destroy(h));
	expect_live(moved, 0);
}
END_TEST

// For a trivially destructible T, destroying by handle is lfp_free_handle
// alone: threads that race to destroy the same objects by handle release
// each exactly once.
START_TEST(racing_destroy_by_handle_trivial)
{
	const unsigned n = 1000, nthreads = 4;
	lfp::pool<std::uint64_t> pool(n);
	std::vector<lfp::handle<std::uint64_t>> hs;
	std::atomic<unsigned> won{ 0 };
	std::vector<std::thread> threads;

	for (unsigned i = 0; i < n; i++)
		hs.push_back(pool.handle_of(pool.make(i)));
	for (unsigned t = 0; t < nthreads; t++)
		threads.emplace_back([&pool, &hs, &won, t] {
			lfp::cache<std::uint64_t> cache(pool);

			for (unsigned i = 0; i < n; i++) {
				auto h = hs[(i + t * n / nthreads) % n];

				if (t % 2 ? cache.destroy(h) : pool.destroy(h))
					won.fetch_add(1);
			}
		});
	for (auto &th : threads)
		th.join();
	ck_assert_uint_eq(won, n);
	expect_live(pool, 0);
	ck_assert_uint_eq(pool.stats().frees, n);
}
END_TEST

// Owners on several threads destroy their objects by handle through their
// caches, and every handle is stale afterwards.
START_TEST(owners_destroy_by_handle_across_threads)
{
	const unsigned n = 2000, nthreads = 4;
	lfp::pool<tracked> pool(n);
	std::vector<lfp::handle<tracked>> hs;
	std::vector<std::thread> threads;
	std::atomic<long> done{ 0 }, bad{ 0 };

	tracked::reset();
	for (unsigned i = 0; i < n; i++)
		hs.push_back(pool.handle_of(pool.make(static_cast<int>(i))));
	for (unsigned t = 0; t < nthreads; t++)
		threads.emplace_back([&pool, &hs, &done, &bad, t] {
			lfp::cache<tracked> cache(pool);

			for (unsigned i = t; i < n; i += nthreads) {
				tracked *obj = cache.resolve(hs[i]);

				if (!obj || obj->value != static_cast<int>(i))
					bad++;
				done += cache.destroy(hs[i]);
			}
		});
	for (auto &th : threads)
		th.join();
	ck_assert_int_eq(bad, 0);
	ck_assert_int_eq(done, n);
	ck_assert_int_eq(tracked::gone, n);
	for (auto h : hs)
		ck_assert(!pool.destroy(h));
	expect_live(pool, 0);
}
END_TEST

START_TEST(for_each_visits_live_objects)
{
	const int n = 100;
	lfp::pool<tracked> pool(n);
	std::vector<tracked *> objs;
	long sum = 0;
	int seen = 0;

	tracked::reset();
	for (int i = 0; i < n; i++)
		objs.push_back(pool.make(i));
	pool.destroy(objs[0]);
	ck_assert_int_eq(pool.for_each([&](tracked &t) { sum += t.value; }),
			 0);
	ck_assert_int_eq(sum, n * (n - 1) / 2);
	ck_assert_int_eq(
		pool.for_each([&](tracked &t, lfp::handle<tracked> h) {
			ck_assert_ptr_eq(pool.resolve(h), &t);
			seen++;
		}),
		0);
	ck_assert_int_eq(seen, n - 1);

	// A non-zero result stops the walk and is returned; true is 1.
	seen = 0;
	ck_assert_int_eq(pool.for_each([&](const tracked &t) {
		seen++;
		return t.value == 50 ? 7 : 0;
	}),
			 7);
	ck_assert_int_eq(seen, 50);
	ck_assert_int_eq(pool.for_each([](tracked &t) { return t.value > 9; }),
			 1);

	// Two halves of one extent cover every object once.
	std::uint32_t e = pool.extent(), b, m;
	sum = 0;
	lfp_range(e, 0, 2, &b, &m);
	ck_assert_int_eq(pool.for_each_range(b, m,
					     [&](tracked &t) { sum += t.value; }),
			 0);
	lfp_range(e, 1, 2, &m, &e);
	pool.for_each_range(m, e, [&](tracked &t) { sum += t.value; });
	ck_assert_int_eq(sum, n * (n - 1) / 2);

	// The callback may destroy the object it is given.
	pool.for_each([&](tracked &t) {
		if (t.value % 2)
			pool.destroy(&t);
	});
	expect_live(pool, n / 2 - 1);
	ck_assert_int_eq(tracked::gone, n / 2 + 1);

	lfp::pool<tracked> moved(std::move(pool));
	ck_assert_int_eq(pool.for_each([](tracked &) {}), -EINVAL);
	ck_assert_uint_eq(pool.extent(), 0);
}
END_TEST

// An exception thrown by the callback stops the walk and leaves for_each
// after lfp_foreach returned, not through the library.
START_TEST(for_each_exception_after_the_walk)
{
	lfp::pool<tracked> pool(32);
	int seen = 0;
	bool caught = false;

	for (int i = 0; i < 20; i++)
		pool.make(i);
	try {
		pool.for_each([&](tracked &t) {
			seen++;
			if (t.value == 9)
				throw std::runtime_error("visit fails");
		});
	} catch (const std::runtime_error &e) {
		caught = std::strcmp(e.what(), "visit fails") == 0;
	}
	ck_assert(caught);
	ck_assert_int_eq(seen, 10);
	caught = false;
	try {
		pool.for_each_range(5, 15, [](tracked &, lfp::handle<tracked>) {
			throw 42;
		});
	} catch (int v) {
		caught = v == 42;
	}
	ck_assert(caught);
	// The pool carries on, and destroys the 20 at its end.
	seen = 0;
	ck_assert_int_eq(pool.for_each([&](tracked &) { seen++; }), 0);
	ck_assert_int_eq(seen, 20);
}
END_TEST

// Workers walk their own shares of one extent at once, each updating the
// objects of its share (the walk of a game's update phase).
START_TEST(for_each_range_shares_across_threads)
{
	const unsigned n = 4096, nthreads = 4;
	lfp::pool<tracked> pool(n);
	std::vector<std::thread> threads;

	for (unsigned i = 0; i < n; i++)
		pool.make(0);
	const std::uint32_t extent = pool.extent();
	for (unsigned k = 0; k < nthreads; k++)
		threads.emplace_back([&pool, extent, k] {
			std::uint32_t begin, end;

			lfp_range(extent, k, nthreads, &begin, &end);
			for (int r = 0; r < 10; r++)
				pool.for_each_range(begin, end,
						    [](tracked &t) { t.value++; });
		});
	for (auto &th : threads)
		th.join();
	ck_assert_int_eq(pool.for_each([](tracked &t) { return t.value != 10; }),
			 0);
}
END_TEST

// A cache's own counters, resolve, and a unique_ptr that destroys into
// the cache.
START_TEST(cache_stats_resolve_make_unique)
{
	lfp::pool<tracked> pool(16);
	lfp::cache<tracked> cache(pool);

	tracked::reset();
	{
		lfp::cache_unique_ptr<tracked> u = cache.make_unique(5);
		lfp::handle<tracked> h = pool.handle_of(u.get());

		ck_assert(u);
		ck_assert_int_eq(u->value, 5);
		ck_assert_ptr_eq(cache.resolve(h), u.get());
		ck_assert_uint_eq(cache.stats().allocs, 1);
		ck_assert_uint_eq(cache.stats().frees, 0);
		u.reset();
		ck_assert_ptr_null(cache.resolve(h));
		ck_assert_int_eq(tracked::gone, 1);
		ck_assert_uint_eq(cache.stats().frees, 1);
		u = cache.make_unique(6);
	}
	ck_assert_int_eq(tracked::gone, 2);
	ck_assert_uint_eq(cache.stats().frees, 2);
	// The pool's other calls are not the cache's.
	pool.destroy(pool.make(1));
	ck_assert_uint_eq(cache.stats().allocs, 2);
	ck_assert_uint_eq(pool.stats().allocs, 3);

	lfp::pool<int> ints(2);
	lfp::cache<int> ic(ints);
	static_assert(noexcept(ic.make_unique(1)), "never throws for int");
	auto a = ic.make_unique(1), b = ic.make_unique(2),
	     c = ic.make_unique(3);
	ck_assert(a && b && !c);
	// A default deleter names no cache: it leaves every object alone.
	int local = 1;
	lfp::cache_deleter<int>{}(&local);
	ck_assert_int_eq(local, 1);
}
END_TEST

// A cache may outlive its pool: the pool's end takes the C cache, and the
// cache's own end then does nothing. A cache made before the pool moved
// follows it.
START_TEST(cache_outlives_pool)
{
	std::optional<lfp::cache<tracked>> late;
	std::vector<lfp::cache<tracked>> caches;

	tracked::reset();
	{
		lfp::pool<tracked> first(16);

		late.emplace(first);
		caches.emplace_back(first);
		caches.emplace_back(first);
		lfp::pool<tracked> pool(std::move(first));

		ck_assert_ptr_nonnull(late->make(1));
		ck_assert_ptr_nonnull(caches[0].make(2));
		caches[1].destroy(caches[1].make(3));
		ck_assert_int_eq(tracked::made, 3);
		expect_live(pool, 2);
	}
	ck_assert_int_eq(tracked::gone, 3);
	// Moved and assigned to after the pool's end, then destroyed.
	lfp::cache<tracked> moved(std::move(caches[0]));
	caches[1] = std::move(moved);
	{
		lfp::pool<tracked> other(4);

		caches[0] = lfp::cache<tracked>(other);
		ck_assert_ptr_nonnull(caches[0].make(4));
	}
	caches.clear();
	late.reset();
	ck_assert_int_eq(tracked::made, 4);
	ck_assert_int_eq(tracked::gone, 4);

	// The other way round, as before: caches first, then the pool.
	{
		lfp::pool<tracked> pool(4);
		lfp::cache<tracked> c(pool);

		c.make(5);
	}
	ck_assert_int_eq(tracked::gone, 5);
}
END_TEST

namespace
{
// Objects of three sizes for a family of 16, 64 and 256-byte classes.
struct small_obj {
	std::uint32_t v;
};
struct mid_obj {
	std::uint64_t v[6]; // 48 bytes: the 64-byte class
};
struct alignas(64) overaligned {
	char c;
};

// Every slot of every class accounted for, and this many live in all.
void expect_family_live(const lfp::family &fam, std::uint64_t live)
{
	lfp::family_stats st = fam.stats();

	ck_assert_uint_eq(st.total.live, live);
	ck_assert_uint_eq(st.total.free + st.total.cached + st.total.live +
				  st.total.deferred,
			  st.total.capacity);
}
} // namespace

START_TEST(family_makes_each_type_in_its_class)
{
	tracked::reset();
	{
		lfp::family fam({ 16, 64, 256 }, { 32, 32, 32 });
		small_obj *s = fam.make<small_obj>(small_obj{ 7 });
		mid_obj *m = fam.make<mid_obj>();
		tracked *t = fam.make<tracked>(5);

		ck_assert_uint_eq(fam.classes(), 3);
		ck_assert_uint_eq(fam.class_size(1), 64);
		ck_assert_uint_eq(fam.alignment(), alignof(std::max_align_t));
		ck_assert_ptr_nonnull(s);
		ck_assert_ptr_nonnull(m);
		ck_assert_ptr_nonnull(t);
		ck_assert_uint_eq(s->v, 7);
		ck_assert_uint_eq(m->v[5], 0); // value-initialised
		ck_assert_int_eq(t->value, 5);
		ck_assert_int_eq(fam.class_of(s), fam.class_for(sizeof(small_obj)));
		ck_assert_int_eq(fam.class_of(m), 1);
		ck_assert_int_eq(fam.class_of(t), fam.class_for(sizeof(tracked)));
		ck_assert(lfp_is_live(fam.class_pool(1), m));
		expect_family_live(fam, 3);

		fam.destroy(t);
		ck_assert_int_eq(tracked::gone.load(), 1);
		// Destroyed already: refused, its destructor not run again.
		fam.destroy(t);
		ck_assert_int_eq(tracked::gone.load(), 1);
		// Foreign and interior pointers: refused, no destructor.
		tracked outside(1);
		fam.destroy(&outside);
		ck_assert_int_eq(tracked::gone.load(), 1);
		fam.destroy(reinterpret_cast<small_obj *>(
			reinterpret_cast<char *>(m) + 8));
		fam.destroy(static_cast<mid_obj *>(nullptr));
		lfp::family_stats st = fam.stats();
		ck_assert_uint_eq(st.foreign_frees, 1);
		ck_assert_uint_ge(st.total.rejected_frees, 3);

		fam.destroy(s);
		fam.destroy(m);
		expect_family_live(fam, 0);

		// Too large or too aligned for every class: nullptr, nothing
		// taken.
		struct big {
			char b[300];
		};
		ck_assert_ptr_null(fam.make<big>());
		ck_assert_ptr_null(fam.make<overaligned>());
		expect_family_live(fam, 0);

		// Raw memory by size.
		void *p = fam.alloc(200);
		ck_assert_int_eq(fam.class_of(p), 2);
		ck_assert_int_eq(fam.free(p), 0);
		ck_assert_int_eq(fam.free(p), -EALREADY);
		ck_assert_ptr_null(fam.alloc(0));
		ck_assert_ptr_null(fam.alloc(257));
		expect_family_live(fam, 0);

		// Left live when the family goes: memory returned, no
		// destructor (the family does not know the type).
		tracked *left = fam.make<tracked>(9);
		ck_assert_ptr_nonnull(left);
		left->~tracked();
	}
	ck_assert_int_eq(tracked::made.load(), 3);
	ck_assert_int_eq(tracked::gone.load(), 3);
}
END_TEST

START_TEST(family_unique_ptrs_and_moves)
{
	tracked::reset();
	{
		lfp::family fam({ 16, 128 }, { 8, 8 });
		{
			lfp::family_unique_ptr<tracked> a =
				fam.make_unique<tracked>(1);
			ck_assert_ptr_nonnull(a.get());
			expect_family_live(fam, 1);
		}
		ck_assert_int_eq(tracked::gone.load(), 1);
		expect_family_live(fam, 0);

		// A moved-from family makes nothing and refuses everything.
		lfp::family moved(std::move(fam));
		ck_assert_ptr_null(fam.native());
		ck_assert_ptr_null(fam.make<small_obj>());
		ck_assert_ptr_null(fam.alloc(8));
		ck_assert_int_eq(fam.free(moved.alloc(8)), -EINVAL);
		ck_assert_uint_eq(fam.classes(), 0);
		ck_assert_uint_eq(fam.alignment(), 0);
		expect_family_live(moved, 1);

		// Exhaustion: 8 of the 16-byte class, then nullptr (no
		// spill by default).
		std::vector<small_obj *> got;
		small_obj *o;
		while ((o = moved.make<small_obj>()))
			got.push_back(o);
		ck_assert_uint_eq(got.size(), 7); // and the raw block above
		for (small_obj *x : got)
			moved.destroy(x);
		lfp::family other({ 32 }, { 4 });
		other = std::move(moved); // the old one's family destroyed
		ck_assert_uint_eq(other.classes(), 2);
	}
	ck_assert_int_eq(tracked::made.load(), tracked::gone.load());
}
END_TEST

START_TEST(family_cache_paths_and_lifetime)
{
	tracked::reset();
	std::optional<lfp::family_cache> late;
	{
		lfp::family fam({ 16, 64, 256 }, { 64, 64, 64 });
		lfp::family_cache fc(fam);
		std::vector<tracked *> objs;

		for (int i = 0; i < 40; i++)
			objs.push_back(fc.make<tracked>(i));
		for (tracked *t : objs) {
			ck_assert_ptr_nonnull(t);
			ck_assert_int_eq(fam.class_of(t),
					 fam.class_for(sizeof(tracked)));
		}
		// Released into the cache, or by the family from anywhere.
		for (std::size_t i = 0; i < objs.size(); i++) {
			if (i % 2)
				fc.destroy(objs[i]);
			else
				fam.destroy(objs[i]);
		}
		ck_assert_int_eq(tracked::gone.load(), 40);
		{
			lfp::family_cache_unique_ptr<tracked> u =
				fc.make_unique<tracked>(3);
			ck_assert_ptr_nonnull(u.get());
		}
		ck_assert_int_eq(tracked::gone.load(), 41);
		void *p = fc.alloc(60);
		ck_assert_int_eq(fam.class_of(p), 1);
		ck_assert_int_eq(fc.free(p), 0);
		ck_assert_ptr_nonnull(fc.class_cache(2));
		ck_assert_ptr_null(fc.class_cache(3));
		ck_assert_ptr_null(fc.make<overaligned>());
		fc.flush();
		expect_family_live(fam, 0);

		// A family cache that outlives its family: the family takes
		// the C family cache along; this one's destructor then does
		// nothing (ASan would see a use after unmap).
		late.emplace(fam);
		void *q = late->alloc(16);
		ck_assert_ptr_nonnull(q);
		ck_assert_int_eq(late->free(q), 0);
	}
	late.reset();
	ck_assert_int_eq(tracked::made.load(), tracked::gone.load());
}
END_TEST

START_TEST(family_resource_serves_many_sizes)
{
	counting_resource up;
	{
		lfp::family_resource res({ 32, 64, 128, 256 },
					 { 4096, 4096, 4096, 4096 }, &up);
		std::pmr::list<int> l(&res);
		std::pmr::unordered_map<int, std::pmr::string> m(&res);

		ck_assert_ptr_eq(res.upstream_resource(), &up);
		ck_assert_uint_eq(res.largest_block(), 256);
		for (int i = 0; i < 1000; i++) {
			l.push_back(i);
			m.emplace(i, std::pmr::string(40, 'x'));
		}
		// Nodes and strings of several sizes come from the family;
		// only the hash table's growing bucket arrays go upstream.
		lfp::family_stats st = res.stats();
		ck_assert_uint_ge(st.total.live, 2000);
		ck_assert_uint_eq(st.bad_sizes, 0);
		ck_assert_int_gt(up.allocs, 0);
		ck_assert_uint_gt(up.smallest, 256);
		for (auto &kv : m)
			ck_assert_uint_eq(kv.second.size(), 40);
		// Over-aligned and empty blocks go upstream, and back there.
		void *p = res.allocate(8, 2 * lfp::family_resource::alignment());
		ck_assert_int_lt(lfp_family_class_of(res.native(), p), 0);
		res.deallocate(p, 8, 2 * lfp::family_resource::alignment());
		void *z = res.allocate(0, 1);
		res.deallocate(z, 0, 1);
		ck_assert_uint_eq(res.stats().bad_sizes, 0);
		l.clear();
		m.clear();
		ck_assert_uint_eq(res.stats().total.live, 0);
		ck_assert(res.is_equal(res));
	}
	ck_assert_uint_eq(up.outstanding(), 0);
	ck_assert_int_eq(up.mismatched, 0);
}
END_TEST

namespace
{
// A type with two polymorphic bases, and one with a virtual base: a
// pointer to the second base, or to the virtual one, points inside the
// object, not at its start.
struct base_a {
	std::uint64_t a = 1;
	virtual ~base_a() = default;
};
struct base_b {
	std::uint64_t b = 2;
	virtual ~base_b() = default;
};
struct both : base_a, base_b {
	tracked t{ 4 };
};
struct vbase {
	std::uint64_t v = 3;
	virtual ~vbase() = default;
};
struct vderived : virtual vbase {
	tracked t{ 5 };
};
} // namespace

// destroy through any base finds the object's start: its destructor runs
// once, its slot goes back, and unique_ptrs convert to a base's.
START_TEST(family_destroys_through_bases)
{
	tracked::reset();
	{
		lfp::family fam({ 32, 64, 128 }, { 16, 16, 16 });
		lfp::family_cache fc(fam);
		both *x = fam.make<both>();
		vderived *v = fam.make<vderived>();
		both *y = fc.make<both>();

		ck_assert_ptr_nonnull(x);
		ck_assert_ptr_nonnull(v);
		ck_assert_ptr_nonnull(y);
		base_b *xb = x;
		vbase *vb = v;
		ck_assert_ptr_ne(static_cast<void *>(xb), static_cast<void *>(x));
		ck_assert_ptr_ne(static_cast<void *>(vb), static_cast<void *>(v));
		expect_family_live(fam, 3);
		fam.destroy(xb);
		fc.destroy(vb);
		fam.destroy(static_cast<base_b *>(y));
		ck_assert_int_eq(tracked::gone.load(), 3);
		expect_family_live(fam, 0);
		// Twice through a base: refused, no second destructor, and
		// the released object is not read (ASan would see it).
		fam.destroy(xb);
		fc.destroy(vb);
		ck_assert_int_eq(tracked::gone.load(), 3);
		expect_family_live(fam, 0);

		{
			lfp::family_unique_ptr<base_b> u =
				fam.make_unique<both>();
			lfp::family_cache_unique_ptr<vbase> w =
				fc.make_unique<vderived>();
			ck_assert_ptr_nonnull(u.get());
			ck_assert_ptr_nonnull(w.get());
			expect_family_live(fam, 2);
		}
		ck_assert_int_eq(tracked::gone.load(), 5);
		expect_family_live(fam, 0);

		// A const object is destroyed as any other.
		const tracked *c = fam.make<const tracked>(6);
		fam.destroy(c);
		ck_assert_int_eq(tracked::gone.load(), 6);
		expect_family_live(fam, 0);
	}
	ck_assert_int_eq(tracked::made.load(), tracked::gone.load());
}
END_TEST

namespace
{
// A message with a payload, for a class of its own in a family.
struct wide_message {
	message head;
	unsigned char payload[100];

	wide_message(unsigned f, std::uint64_t s) noexcept : head(f, s)
	{
		std::memset(payload, static_cast<int>(s & 0xff),
			    sizeof(payload));
	}
};

struct family_mailbox {
	std::mutex lock;
	std::vector<message *> small;
	std::vector<wide_message *> wide;
};

// As work, through one family: each worker's family cache makes small
// and wide messages in turn; the next worker checks them and destroys
// them, by its family cache or by the family itself in turn.
void family_work(lfp::family &fam, family_mailbox *mail, unsigned self,
		 unsigned rounds, std::atomic<long> &bad)
{
	const unsigned prev = (self + nworkers - 1) % nworkers;
	lfp::family_cache fc(fam);
	std::vector<message *> small;
	std::vector<wide_message *> wide;

	for (unsigned r = 0; r < rounds; r++) {
		for (unsigned i = 0; i < 8; i++) {
			message *m = fc.make<message>(self, r);
			wide_message *w = fc.make<wide_message>(self, r);

			if (m)
				small.push_back(m);
			if (w)
				wide.push_back(w);
		}
		{
			family_mailbox &next = mail[(self + 1) % nworkers];
			std::lock_guard<std::mutex> g(next.lock);

			next.small.insert(next.small.end(), small.begin(),
					  small.end());
			next.wide.insert(next.wide.end(), wide.begin(),
					 wide.end());
		}
		small.clear();
		wide.clear();
		{
			std::lock_guard<std::mutex> g(mail[self].lock);

			small.swap(mail[self].small);
			wide.swap(mail[self].wide);
		}
		for (message *m : small) {
			if (m->word != message::canary || m->from != prev ||
			    fam.class_of(m) != fam.class_for(sizeof(message)))
				bad++;
			if (m->seq % 2)
				fc.destroy(m);
			else
				fam.destroy(m);
		}
		for (wide_message *w : wide) {
			if (w->head.word != message::canary ||
			    w->head.from != prev ||
			    w->payload[99] != (w->head.seq & 0xff) ||
			    fam.class_of(w) != fam.class_for(sizeof(*w)))
				bad++;
			fc.destroy(w);
		}
		small.clear();
		wide.clear();
	}
}
} // namespace

// Four workers share one family, each through its own family cache.
START_TEST(family_caches_across_threads)
{
	const unsigned rounds = under_sanitizer() ? 300 : 3000;
	lfp::family fam({ 32, 64, 128 }, { 512, 512, 512 });
	family_mailbox mail[nworkers];
	std::atomic<long> bad{ 0 };
	std::vector<std::thread> threads;

	message::made = 0;
	message::gone = 0;
	for (unsigned t = 0; t < nworkers; t++)
		threads.emplace_back(family_work, std::ref(fam), mail, t,
				     rounds, std::ref(bad));
	for (auto &th : threads)
		th.join();
	for (auto &m : mail) {
		for (message *p : m.small)
			fam.destroy(p);
		for (wide_message *w : m.wide)
			fam.destroy(w);
	}
	ck_assert_int_eq(bad, 0);
	ck_assert_int_gt(message::made, 0);
	ck_assert_int_eq(message::made, message::gone);
	expect_family_live(fam, 0);
}
END_TEST

START_TEST(family_creation_failures_throw)
{
	ck_assert_int_eq(error_of([] { lfp::family f({ 16, 32 }, { 4 }); }),
			 EINVAL);
	ck_assert_int_eq(error_of([] { lfp::family f({ 32, 16 }, { 4, 4 }); }),
			 EINVAL);
	ck_assert_int_eq(error_of([] { lfp::family f({ 16 }, { 0 }); }),
			 EINVAL);
	ck_assert_int_eq(error_of([] {
				 std::vector<std::size_t> s;
				 std::vector<std::uint32_t> c;
				 for (std::size_t i = 1; i <= LFP_FAMILY_MAX_CLASSES + 1; i++) {
					 s.push_back(8 * i);
					 c.push_back(4);
				 }
				 lfp_family_config cfg{};
				 cfg.sizes = s.data();
				 cfg.capacities = c.data();
				 cfg.classes = static_cast<std::uint32_t>(s.size());
				 lfp::family f(cfg);
			 }),
			 E2BIG);
	ck_assert_int_eq(error_of([] {
				 lfp::family_resource r({ 16 }, { 4 }, nullptr);
			 }),
			 EINVAL);
	ck_assert_int_eq(error_of([] {
				 lfp::family f({ 16 }, { 4 }), g(std::move(f));
				 lfp::family_cache c(f);
			 }),
			 EINVAL);
}
END_TEST

// Empty objects: made without a pool, by default; every member does
// what lfpool.hpp says it does on an empty object, and touches nothing
// it is given (objects of a real pool or family stay live, their
// destructors not run).
static_assert(std::is_nothrow_default_constructible_v<lfp::pool<tracked>> &&
		      std::is_nothrow_default_constructible_v<lfp::cache<tracked>> &&
		      std::is_nothrow_default_constructible_v<lfp::family> &&
		      std::is_nothrow_default_constructible_v<lfp::family_cache>,
	      "empty objects are made without exceptions");
static_assert(!std::is_convertible_v<lfp::pool<int>, bool> &&
		      std::is_constructible_v<bool, const lfp::pool<int> &> &&
		      !std::is_convertible_v<lfp::cache<int>, bool> &&
		      !std::is_convertible_v<lfp::family, bool> &&
		      !std::is_convertible_v<lfp::family_cache, bool>,
	      "operator bool is explicit");
static_assert(noexcept(lfp::pool<int>::create(1u, std::declval<lfp::pool<int> &>())) &&
		      noexcept(lfp::pool<int>::create(std::declval<const lfp_config &>(),
						      std::declval<lfp::pool<int> &>())) &&
		      noexcept(lfp::cache<int>::create(std::declval<lfp::pool<int> &>(),
						       std::declval<lfp::cache<int> &>())) &&
		      noexcept(lfp::family::create({ 8 }, { 1 },
						   std::declval<lfp::family &>())) &&
		      noexcept(lfp::family::create(std::declval<const lfp_family_config &>(),
						   std::declval<lfp::family &>())) &&
		      noexcept(lfp::family_cache::create(std::declval<lfp::family &>(),
							 std::declval<lfp::family_cache &>())),
	      "the factories do not throw");

namespace
{

bool all_zero(const lfp::stats &st)
{
	lfp::stats zero{};

	return std::memcmp(&st, &zero, sizeof(st)) == 0;
}

bool all_zero(const lfp::family_stats &st)
{
	lfp::family_stats zero{};

	return std::memcmp(&st, &zero, sizeof(st)) == 0;
}

} // namespace

START_TEST(empty_pool_and_cache)
{
	tracked::reset();
	lfp::pool<tracked> real(4);
	tracked *theirs = real.make(5);
	lfp::handle<tracked> h = real.handle_of(theirs);
	lfp::stats before = real.stats();
	tracked local(6);
	int calls = 0;

	ck_assert_ptr_nonnull(theirs);
	ck_assert_int_eq(tracked::made, 2);
	{
		lfp::pool<tracked> pool;

		ck_assert(!pool);
		ck_assert_ptr_null(pool.native());
		ck_assert_ptr_null(pool.make(1));
		ck_assert(!pool.make_unique(2));
		ck_assert_int_eq(tracked::made, 2); // no constructor ran
		pool.destroy(nullptr);
		pool.destroy(theirs);
		pool.destroy(&local);
		ck_assert(!pool.destroy(h));
		ck_assert(!pool.destroy(lfp::handle<tracked>()));
		ck_assert(!pool.handle_of(theirs));
		ck_assert_ptr_null(pool.resolve(h));
		ck_assert(all_zero(pool.stats()));
		ck_assert_uint_eq(pool.extent(), 0);
		ck_assert_int_eq(pool.for_each([&](tracked &) { calls++; }),
				 -EINVAL);
		ck_assert_int_eq(pool.for_each_range(0, UINT32_MAX,
						     [&](tracked &) { calls++; }),
				 -EINVAL);
		ck_assert_int_eq(calls, 0);

		lfp::cache<tracked> cache;

		ck_assert(!cache);
		ck_assert_ptr_null(cache.native());
		ck_assert_ptr_null(cache.make(3));
		ck_assert(!cache.make_unique(4));
		ck_assert_int_eq(tracked::made, 2);
		cache.destroy(nullptr);
		cache.destroy(theirs);
		cache.destroy(&local);
		ck_assert(!cache.destroy(h));
		ck_assert_ptr_null(cache.resolve(h));
		ck_assert(all_zero(cache.stats()));
		cache.flush();

		// No cache of an empty pool, by either way of making one.
		ck_assert_int_eq(error_of([&] { lfp::cache<tracked> c(pool); }),
				 EINVAL);
		ck_assert_int_eq(lfp::cache<tracked>::create(pool, cache),
				 -EINVAL);
		ck_assert(!cache);

		// Empty, moved, reset, assigned: still empty, nothing to do.
		lfp::pool<tracked> moved(std::move(pool));
		lfp::cache<tracked> cmoved(std::move(cache));

		ck_assert(!moved && !pool && !cmoved && !cache);
		pool = std::move(moved);
		cache = std::move(cmoved);
		pool.reset();
		cache.reset();
		ck_assert(!pool && !cache);
	}
	// The real pool's object is as it was: live, not destroyed, and no
	// release of it was counted anywhere.
	ck_assert_int_eq(tracked::gone, 0);
	ck_assert_ptr_eq(real.resolve(h), theirs);
	ck_assert_int_eq(theirs->value, 5);
	ck_assert_uint_eq(theirs->word, tracked::canary);
	ck_assert_uint_eq(real.stats().live, before.live);
	ck_assert_uint_eq(real.stats().rejected_frees, before.rejected_frees);
	ck_assert_uint_eq(real.stats().frees, before.frees);
	real.destroy(theirs);
	ck_assert_int_eq(tracked::gone, 1);
}
END_TEST

START_TEST(empty_family_and_cache)
{
	tracked::reset();
	lfp::family real({ 64, 128 }, { 8, 8 });
	tracked *theirs = real.make<tracked>(5);
	lfp::family_stats before = real.stats();
	tracked local(6);
	long word = 0;

	ck_assert_ptr_nonnull(theirs);
	{
		lfp::family fam;

		ck_assert(!fam);
		ck_assert_ptr_null(fam.native());
		ck_assert_ptr_null(fam.alloc(16));
		ck_assert_int_eq(fam.free(&word), -EINVAL);
		ck_assert_int_eq(fam.free(theirs), -EINVAL);
		ck_assert_int_eq(fam.free(nullptr), -EINVAL);
		ck_assert_ptr_null(fam.make<tracked>(1));
		ck_assert_ptr_null(fam.make<char>('x'));
		ck_assert(!fam.make_unique<tracked>(2));
		ck_assert_int_eq(tracked::made, 2);
		fam.destroy(theirs);
		fam.destroy(&local);
		fam.destroy<tracked>(nullptr);
		ck_assert(all_zero(fam.stats()));
		ck_assert_uint_eq(fam.classes(), 0);
		ck_assert_uint_eq(fam.class_size(0), 0);
		ck_assert_ptr_null(fam.class_pool(0));
		ck_assert_int_eq(fam.class_for(8), -EINVAL);
		ck_assert_int_eq(fam.class_of(theirs), -EINVAL);
		ck_assert_uint_eq(fam.alignment(), 0);

		lfp::family_cache fc;

		ck_assert(!fc);
		ck_assert_ptr_null(fc.native());
		ck_assert_ptr_null(fc.alloc(16));
		ck_assert_int_eq(fc.free(&word), -EINVAL);
		ck_assert_int_eq(fc.free(theirs), -EINVAL);
		ck_assert_ptr_null(fc.make<tracked>(3));
		ck_assert(!fc.make_unique<tracked>(4));
		ck_assert_int_eq(tracked::made, 2);
		fc.destroy(theirs);
		fc.destroy(&local);
		fc.flush();
		ck_assert_ptr_null(fc.class_cache(0));

		ck_assert_int_eq(error_of([&] { lfp::family_cache c(fam); }),
				 EINVAL);
		ck_assert_int_eq(lfp::family_cache::create(fam, fc), -EINVAL);
		ck_assert(!fc);

		lfp::family moved(std::move(fam));
		lfp::family_cache cmoved(std::move(fc));

		ck_assert(!moved && !fam && !cmoved && !fc);
		fam = std::move(moved);
		fc = std::move(cmoved);
		fam.reset();
		fc.reset();
		ck_assert(!fam && !fc);
	}
	ck_assert_int_eq(tracked::gone, 0);
	ck_assert_int_eq(theirs->value, 5);
	ck_assert_uint_eq(theirs->word, tracked::canary);
	ck_assert_uint_eq(real.stats().total.live, before.total.live);
	ck_assert_uint_eq(real.stats().total.rejected_frees,
			  before.total.rejected_frees);
	ck_assert_uint_eq(real.stats().total.frees, before.total.frees);
	real.destroy(theirs);
	ck_assert_int_eq(tracked::gone, 1);
}
END_TEST

// create returns the errno value the constructor of the same arguments
// throws, and leaves out empty; with the arguments a constructor takes,
// it makes the same pool.
START_TEST(pool_create_mirrors_the_constructors)
{
	struct alignas(32) wide {
		char bytes[40];
	};
	std::vector<lfp_config> bad;
	lfp_config c{};

	c.capacity = 0; // capacity 0
	bad.push_back(c);
	c.capacity = UINT32_MAX; // beyond LFP_MAX_CAPACITY
	bad.push_back(c);
	c.capacity = 4;
	c.obj_size = sizeof(wide) - 1; // cannot hold a wide
	bad.push_back(c);
	c.obj_size = 0;
	c.align = 16; // less than alignof(wide)
	bad.push_back(c);
	c.align = 96; // a multiple of 32, not a power of two
	bad.push_back(c);
	c.align = 0;
	c.flags = 1u << 31; // an unknown flag
	bad.push_back(c);
	c.flags = 0;
	c.exhaust = LFP_EXHAUST_RECLAIM; // without reclaim
	bad.push_back(c);

	for (const lfp_config &cfg : bad) {
		lfp::pool<wide> out;
		int thrown = error_of([&] { lfp::pool<wide> p(cfg); });
		int err = lfp::pool<wide>::create(cfg, out);

		ck_assert_int_ne(thrown, 0);
		ck_assert_int_eq(err, -thrown);
		ck_assert(!out);
		ck_assert_ptr_null(out.native());
		ck_assert_ptr_null(out.make());
	}
	{
		lfp::pool<wide> out;

		ck_assert_int_eq(lfp::pool<wide>::create(0u, out), -EINVAL);
		ck_assert(!out);
		ck_assert_int_eq(lfp::pool<wide>::create(UINT32_MAX, out),
				 -EOVERFLOW);
		ck_assert(!out);
		ck_assert_int_eq(lfp::pool<wide>::create(16u, out), 0);
		ck_assert(out);
		ck_assert_uint_eq(out.stats().capacity, 16);
		ck_assert_int_eq(stride(out), sizeof(wide));
	}
	{
		// obj_size and align left 0 are T's, as the constructor's.
		lfp::pool<wide> out;
		wide *w;

		c = lfp_config{};
		c.capacity = 8;
		c.flags = LFP_F_NO_CACHE;
		ck_assert_int_eq(lfp::pool<wide>::create(c, out), 0);
		ck_assert(out);
		ck_assert_int_eq(stride(out), sizeof(wide));
		w = out.make();
		ck_assert_ptr_nonnull(w);
		ck_assert_uint_eq(reinterpret_cast<std::uintptr_t>(w) % 32, 0);
		ck_assert_uint_eq(out.stats().capacity, 8);
		out.destroy(w);
		expect_live(out, 0);
	}
}
END_TEST

// create into a pool that holds one refuses with -EBUSY and leaves it
// whole: its objects stay live and its caches usable. reset() lets it be
// made again.
START_TEST(pool_create_into_a_full_pool)
{
	tracked::reset();
	{
		lfp::pool<tracked> pool;
		lfp::cache<tracked> cache;
		lfp_pool *first;
		tracked *a;
		lfp::handle<tracked> h;

		ck_assert_int_eq(lfp::pool<tracked>::create(8u, pool), 0);
		first = pool.native();
		ck_assert_ptr_nonnull(first);
		a = pool.make(1);
		h = pool.handle_of(a);
		ck_assert_int_eq(lfp::cache<tracked>::create(pool, cache), 0);
		ck_assert(cache);

		ck_assert_int_eq(lfp::pool<tracked>::create(4u, pool), -EBUSY);
		ck_assert_int_eq(lfp::pool<tracked>::create(0u, pool), -EBUSY);
		ck_assert_ptr_eq(pool.native(), first);
		ck_assert_ptr_eq(pool.resolve(h), a);
		ck_assert_uint_eq(pool.stats().capacity, 8);
		ck_assert_int_eq(tracked::gone, 0);
		ck_assert(cache);
		tracked *b = cache.make(2);
		ck_assert_ptr_nonnull(b);
		expect_live(pool, 2);

		// reset destroys the live objects and orphans the cache.
		pool.reset();
		ck_assert(!pool);
		ck_assert_int_eq(tracked::gone, 2);
		ck_assert(!cache);
		ck_assert_int_eq(lfp::pool<tracked>::create(4u, pool), 0);
		ck_assert_uint_eq(pool.stats().capacity, 4);
		expect_live(pool, 0);

		// An orphaned cache is no cache: create lets it go and makes
		// one of the new pool in its place.
		ck_assert_int_eq(lfp::cache<tracked>::create(pool, cache), 0);
		ck_assert(cache);
		lfp_cache *made = cache.native();
		ck_assert_int_eq(lfp::cache<tracked>::create(pool, cache),
				 -EBUSY);
		ck_assert_ptr_eq(cache.native(), made);
		tracked *c = cache.make(3);
		ck_assert_ptr_nonnull(c);
		ck_assert(lfp_owns(pool.native(), c));
		ck_assert_uint_eq(cache.stats().allocs, 1);
		cache.destroy(c);
		cache.reset();
		ck_assert(!cache);
		expect_live(pool, 0);
	}
	ck_assert_int_eq(tracked::made, tracked::gone);
}
END_TEST

// Moves: the moved-from object is empty, the moved-to one holds what
// the other held; assigning over a full one destroys what it held.
START_TEST(created_objects_move)
{
	tracked::reset();
	{
		lfp::pool<tracked> a, b;
		lfp::cache<tracked> ca;

		ck_assert_int_eq(lfp::pool<tracked>::create(4u, a), 0);
		ck_assert_int_eq(lfp::cache<tracked>::create(a, ca), 0);
		lfp_pool *native = a.native();
		ck_assert_ptr_nonnull(ca.make(1));
		ck_assert_ptr_nonnull(a.make(2));

		lfp::pool<tracked> c(std::move(a));
		lfp::cache<tracked> cc(std::move(ca));

		ck_assert(!a && !ca && c && cc);
		ck_assert_ptr_eq(c.native(), native);
		ck_assert_uint_eq(c.stats().live, 2);
		ck_assert_int_eq(lfp::pool<tracked>::create(4u, a), 0);
		ck_assert_ptr_nonnull(a.make(3));
		b = std::move(a);
		ck_assert(!a && b);
		ck_assert_uint_eq(b.stats().live, 1);

		// Assigning over a full pool destroys its objects, and the
		// cache it had is orphaned.
		b = std::move(c);
		ck_assert_int_eq(tracked::gone, 1);
		ck_assert(!c && b && cc);
		ck_assert_ptr_eq(b.native(), native);
		b = lfp::pool<tracked>();
		ck_assert_int_eq(tracked::gone, 3);
		ck_assert(!b && !cc);
	}
	ck_assert_int_eq(tracked::made, 3);
	ck_assert_int_eq(tracked::gone, 3);

	lfp::family f, g;
	lfp::family_cache fc;

	ck_assert_int_eq(lfp::family::create({ 32, 64 }, { 4, 4 }, f), 0);
	ck_assert_int_eq(lfp::family_cache::create(f, fc), 0);
	void *p = fc.alloc(20);
	ck_assert_ptr_nonnull(p);
	lfp::family_cache fc2(std::move(fc));
	g = std::move(f);
	ck_assert(!f && g && !fc && fc2);
	ck_assert_int_eq(g.class_of(p), 0);
	ck_assert_int_eq(fc2.free(p), 0);
	g.reset();
	ck_assert(!g && !fc2);
}
END_TEST

START_TEST(family_create_mirrors_the_constructors)
{
	std::vector<std::size_t> many;
	std::vector<std::uint32_t> caps;
	lfp_family_config c{};
	lfp::family out;

	for (std::size_t i = 1; i <= LFP_FAMILY_MAX_CLASSES + 1; i++) {
		many.push_back(8 * i);
		caps.push_back(4);
	}
	// Each list form: the constructor's errno, negated, and out empty.
	ck_assert_int_eq(lfp::family::create({ 16, 32 }, { 4 }, out), -EINVAL);
	ck_assert(!out);
	ck_assert_int_eq(error_of([] { lfp::family f({ 16, 32 }, { 4 }); }),
			 EINVAL);
	ck_assert_int_eq(lfp::family::create({ 32, 16 }, { 4, 4 }, out),
			 -EINVAL);
	ck_assert_int_eq(lfp::family::create({ 0, 16 }, { 4, 4 }, out),
			 -EINVAL);
	ck_assert_int_eq(error_of([] { lfp::family f({ 0, 16 }, { 4, 4 }); }),
			 EINVAL);
	ck_assert_int_eq(lfp::family::create({ 16 }, { 0 }, out), -EINVAL);
	ck_assert(!out);

	c.sizes = many.data();
	c.capacities = caps.data();
	c.classes = static_cast<std::uint32_t>(many.size());
	ck_assert_int_eq(lfp::family::create(c, out), -E2BIG);
	ck_assert_int_eq(error_of([&] { lfp::family f(c); }), E2BIG);
	ck_assert(!out);
	c.classes = 0;
	ck_assert_int_eq(lfp::family::create(c, out), -EINVAL);
	ck_assert(!out);

	c.classes = 3;
	ck_assert_int_eq(lfp::family::create(c, out), 0);
	ck_assert(out);
	ck_assert_uint_eq(out.classes(), 3);
	ck_assert_uint_eq(out.alignment(), alignof(std::max_align_t));
	lfp_family *first = out.native();
	void *p = out.alloc(10);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(lfp::family::create({ 64 }, { 4 }, out), -EBUSY);
	ck_assert_int_eq(lfp::family::create(c, out), -EBUSY);
	ck_assert_ptr_eq(out.native(), first);
	ck_assert_int_eq(out.class_of(p), 1);
	ck_assert_uint_eq(out.stats().total.live, 1);

	lfp::family_cache fc;

	ck_assert_int_eq(lfp::family_cache::create(out, fc), 0);
	lfp_family_cache *made = fc.native();
	ck_assert_int_eq(lfp::family_cache::create(out, fc), -EBUSY);
	ck_assert_ptr_eq(fc.native(), made);
	ck_assert_int_eq(fc.free(p), 0);
	out.reset();
	ck_assert(!out && !fc);

	ck_assert_int_eq(lfp::family::create({ 64, 256 }, { 4, 2 }, out), 0);
	ck_assert_uint_eq(out.class_size(1), 256);
	ck_assert_int_eq(lfp::family_cache::create(out, fc), 0);
	ck_assert(fc);
	auto *q = fc.make<std::array<char, 200>>();
	ck_assert_ptr_nonnull(q);
	ck_assert_int_eq(out.class_of(q), 1);
	fc.destroy(q);
	ck_assert_uint_eq(out.stats().total.live, 0);
}
END_TEST

// Two-phase initialisation as an engine does it: systems made empty at
// construction, made by Init, which reports a failure and can be
// called again.
START_TEST(two_phase_engine)
{
	struct engine {
		lfp::pool<tracked> particles;
		lfp::cache<tracked> main_thread;
		lfp::family messages;

		int init(std::uint32_t n) noexcept
		{
			int err = lfp::pool<tracked>::create(n, particles);

			if (err)
				return err; // -EBUSY: made already, kept
			err = lfp::cache<tracked>::create(particles,
							  main_thread);
			if (!err)
				err = lfp::family::create({ 32, 128 }, { n, n },
							  messages);
			if (err)
				shutdown();
			return err;
		}
		void shutdown() noexcept
		{
			main_thread.reset();
			messages.reset();
			particles.reset();
		}
	};

	tracked::reset();
	{
		engine e;

		ck_assert(!e.particles && !e.main_thread && !e.messages);
		ck_assert_ptr_null(e.main_thread.make(1));
		ck_assert_int_eq(e.init(0), -EINVAL);
		ck_assert(!e.particles && !e.main_thread && !e.messages);
		ck_assert_int_eq(e.init(64), 0);
		ck_assert(e.particles && e.main_thread && e.messages);
		ck_assert_ptr_nonnull(e.main_thread.make(1));
		ck_assert_ptr_nonnull(e.particles.make(2));
		ck_assert_int_eq(e.init(64), -EBUSY);
		ck_assert_uint_eq(e.particles.stats().live, 2);
		e.shutdown();
		ck_assert_int_eq(tracked::gone, 2);
		ck_assert_int_eq(e.init(8), 0);
		ck_assert_uint_eq(e.particles.stats().capacity, 8);
		ck_assert_ptr_nonnull(e.main_thread.make(3));
	}
	ck_assert_int_eq(tracked::made, 3);
	ck_assert_int_eq(tracked::gone, 3);
}
END_TEST

int main()
{
	Suite *s = suite_create("cxx");
	TCase *tc = tcase_create("cxx");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, make_destroy_counts);
	tcase_add_test(tc, constructor_exception_releases_the_slot);
	tcase_add_test(tc, config_sized_from_t);
	tcase_add_test(tc, stale_handles);
	tcase_add_test(tc, handles_in_unordered_set);
	tcase_add_test(tc, pmr_vector_large_blocks_go_upstream);
	tcase_add_test(tc, pmr_list_from_the_pool);
	tcase_add_test(tc, pmr_list_overflows_upstream);
	tcase_add_test(tc, pmr_resources_equal_only_themselves);
	tcase_add_test(tc, worker_caches_across_threads);
	tcase_add_test(tc, exhaustion_gives_nullptr);
	tcase_add_test(tc, creation_failures_throw);
	tcase_add_test(tc, creation_failures_say_why);
	tcase_add_test(tc, unchecked_pool_needs_trivial_t);
	tcase_add_test(tc, stats_aliases);
	tcase_add_test(tc, destroy_by_handle);
	tcase_add_test(tc, racing_destroy_by_handle_trivial);
	tcase_add_test(tc, owners_destroy_by_handle_across_threads);
	tcase_add_test(tc, for_each_visits_live_objects);
	tcase_add_test(tc, for_each_exception_after_the_walk);
	tcase_add_test(tc, for_each_range_shares_across_threads);
	tcase_add_test(tc, cache_stats_resolve_make_unique);
	tcase_add_test(tc, cache_outlives_pool);
	tcase_add_test(tc, family_makes_each_type_in_its_class);
	tcase_add_test(tc, family_unique_ptrs_and_moves);
	tcase_add_test(tc, family_cache_paths_and_lifetime);
	tcase_add_test(tc, family_resource_serves_many_sizes);
	tcase_add_test(tc, family_creation_failures_throw);
	tcase_add_test(tc, family_destroys_through_bases);
	tcase_add_test(tc, family_caches_across_threads);
	tcase_add_test(tc, empty_pool_and_cache);
	tcase_add_test(tc, empty_family_and_cache);
	tcase_add_test(tc, pool_create_mirrors_the_constructors);
	tcase_add_test(tc, pool_create_into_a_full_pool);
	tcase_add_test(tc, created_objects_move);
	tcase_add_test(tc, family_create_mirrors_the_constructors);
	tcase_add_test(tc, two_phase_engine);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
