// The C++ interface (lfpool.hpp): construction and destruction counts,
// typed handles, pmr containers over pool_resource with a counting
// upstream, worker caches handing objects across threads, exhaustion and
// creation failures. Uses only the public API, as a C++ program would.
#include <lfpool.hpp>

#include <check.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <list>
#include <mutex>
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
	struct lfp_stats st = pool.stats();

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
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
