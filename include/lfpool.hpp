/*
 * lfpool.hpp: the C++ interface to lfpool (C++17, header-only).
 *
 * Typed wrappers over the C API of lfpool.h, which stays the one
 * implementation: every operation below is a call of an lfp_ function and
 * keeps its promises (thread safety, progress, errors, hooks, policies).
 * Allocation and release go through lfpool.h's inline fast paths, as in
 * C11 (with g++ and clang++; LFP_NO_INLINE calls the functions instead).
 * Link as a C program does: c++ -std=c++17 app.cc $(pkg-config --cflags
 * --libs lfpool).
 *
 *   lfp::pool<T>         owns a pool of T: make/destroy (by pointer or
 *                        handle), make_unique, for_each over live objects
 *   lfp::cache<T>        one worker's explicit cache of a pool<T>
 *   lfp::handle<T>       a typed generational handle, hashable
 *   lfp::unique_ptr<T>   a std::unique_ptr that destroys into its pool
 *   lfp::cache_unique_ptr<T>  one that destroys into a cache
 *   lfp::pool_resource   a std::pmr::memory_resource of fixed-size blocks
 *   lfp::stats, lfp::family_stats  struct lfp_stats and struct
 *                        lfp_family_stats, under names C++ can use
 *
 * Conventions used below:
 * - Making a pool, a cache or a resource that fails throws
 *   std::system_error whose code() is the errno value of the C call, in
 *   std::generic_category() (capacity 0: EINVAL, no memory: ENOMEM).
 *   Built without exceptions (-fno-exceptions) it prints the error to
 *   stderr and aborts instead. Every file of a program that includes
 *   this header must be built the same way: its inline functions differ
 *   between the two, and the linker keeps one copy of each, so a file
 *   built with exceptions could get the aborting copy, or a callback's
 *   exception could run through the library's C frames.
 * - Nothing on the allocation path throws: an exhausted pool gives
 *   nullptr. Only T's own constructor can throw out of make, and its slot
 *   is back in the pool when the exception leaves.
 * - Objects are built as std::make_unique builds them: T(args...), so
 *   make() with no arguments value-initialises (zeroes) a plain struct.
 * - No RTTI is needed.
 */
#ifndef LFPOOL_HPP
#define LFPOOL_HPP

#if __cplusplus < 201703L
#error "lfpool.hpp needs C++17 or later (-std=c++17)"
#endif

#include <lfpool.h>

#include <cerrno>
#include <cstddef>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <memory_resource>
#include <new>
#include <type_traits>
#include <utility>

#ifdef __cpp_exceptions
#include <exception>
#include <system_error>
#else
#include <cstdio>
#include <cstdlib>
#include <cstring>
#endif

namespace lfp
{

template <class T> class pool;
template <class T> class cache;
template <class T> class handle;

/*
 * The C API's snapshots under names that C++ can use. lfpool.h names a
 * struct and a function lfp_stats (and lfp_family_stats), as C allows;
 * in C++ the function hides the struct, whose name then needs its struct
 * tag. These aliases need none: lfp::stats st = pool.stats(), or
 * std::vector<lfp::stats>.
 */
using stats = struct ::lfp_stats;
using family_stats = struct ::lfp_family_stats;

namespace detail
{

/*
 * A setup call failed with errno value err: throw, or, without exceptions,
 * say so and abort. Only setup (constructors) comes here, never an
 * allocation.
 */
[[noreturn]] inline void fail(int err, const char *what)
{
#ifdef __cpp_exceptions
	throw std::system_error(err, std::generic_category(), what);
#else
	std::fprintf(stderr, "lfpool: %s: %s\n", what, std::strerror(err));
	std::abort();
#endif
}

/*
 * Build a T in the slot, or give the slot back through release if the
 * constructor throws. A guard rather than try/catch, so that the same code
 * builds with -fno-exceptions; with a non-throwing constructor there is no
 * guard at all.
 */
template <class T, class Release, class... Args>
T *construct(void *slot, Release release, Args &&...args) noexcept(
	std::is_nothrow_constructible_v<T, Args...>)
{
	if (!slot)
		return nullptr;
	if constexpr (std::is_nothrow_constructible_v<T, Args...>) {
		return ::new (slot) T(std::forward<Args>(args)...);
	} else {
		struct guard {
			Release &release;
			void *slot;
			~guard()
			{
				if (slot)
					release(slot);
			}
		} g{ release, slot };
		T *obj = ::new (slot) T(std::forward<Args>(args)...);

		g.slot = nullptr;
		return obj;
	}
}

/*
 * Destroy obj and give its slot back through release. The destructor runs
 * only on a live object of the pool: a foreign or interior pointer, or an
 * object destroyed already, is left as it is and refused by the release
 * (counted in rejected_frees), as lfp_free refuses it. Two threads that
 * destroy the same object at once may both run its destructor (the C
 * API's racing double release; LFP_F_STRICT makes one release fail, not
 * one destructor).
 */
template <class T, class Release>
void destroy(const lfp_pool *pool, T *obj, Release release) noexcept
{
	if (!obj)
		return;
	if constexpr (!std::is_trivially_destructible_v<T>) {
		if (lfp_is_live(pool, obj))
			obj->~T();
	}
	release(static_cast<void *>(obj));
}

/* The object the C API hands back for a live slot, or nullptr. */
template <class T> T *object(void *slot) noexcept
{
	return slot ? std::launder(static_cast<T *>(slot)) : nullptr;
}

/*
 * Destroy the object handle h names and release its slot through
 * release (lfp_free_handle or lfp_cache_free_handle), if h is current.
 * ~T must run before the release, never after it: once released, the
 * slot may hold another thread's new object. So for a T with a
 * destructor the handle is checked (lfp_resolve), the destructor run and
 * the slot released in three steps, and only the last is atomic; for a
 * trivially destructible T the release is the whole of it.
 * Returns whether the slot was released.
 */
template <class T, class Release>
bool destroy_handle(const lfp_pool *pool, lfp_handle h,
		    Release release) noexcept
{
	if constexpr (!std::is_trivially_destructible_v<T>) {
		T *obj = object<T>(lfp_resolve(pool, h));

		/* A stale handle goes to the release all the same, to be
		 * refused and counted there. */
		if (obj)
			obj->~T();
	}
	return release(h) == 0;
}

/*
 * What a pool<T> shares with its caches: whether its C pool is still
 * there. lfp_destroy takes the caches not yet destroyed with it, so a
 * cache<T> that outlives its pool<T> must not call lfp_cache_destroy;
 * this tells it. The pool and each of its caches hold a reference, and
 * the last to let go frees it. Made once per pool; never read on the
 * allocation or release path.
 */
struct pool_state {
	std::atomic<unsigned long> refs{ 1 };
	lfp_pool *pool; /* nullptr once the pool is destroyed */

	explicit pool_state(lfp_pool *p) noexcept : pool(p)
	{
	}

	void hold() noexcept
	{
		/* Relaxed: the caller holds a reference already, so this
		 * one cannot be the last. */
		refs.fetch_add(1, std::memory_order_relaxed);
	}

	void let_go() noexcept
	{
		/* Acquire and release: pairs with the let_go of every other
		 * holder, so that the last one, which frees the state, comes
		 * after their reads and writes of pool. */
		if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
			delete this;
	}
};

/* fn(args...) as a walk's callback: 0 to go on, non-zero to stop. */
template <class F, class... Args> int visit_result(F &fn, Args &&...args)
{
	if constexpr (std::is_void_v<std::invoke_result_t<F &, Args...>>) {
		std::invoke(fn, std::forward<Args>(args)...);
		return 0;
	} else {
		return static_cast<int>(
			std::invoke(fn, std::forward<Args>(args)...));
	}
}

/*
 * A C++ callable as an lfp_visit_fn, arg pointing at the walk. An
 * exception the callable throws is caught here, before it can reach the
 * library's C frames; it stops the walk, and finish throws it again once
 * lfp_foreach has returned.
 */
template <class T, class F> struct walk {
	static_assert(std::is_invocable_v<F &, T &, handle<T>> ||
			      std::is_invocable_v<F &, T &>,
		      "lfp::pool<T>::for_each calls fn(T &, lfp::handle<T>) "
		      "or fn(T &)");

	F &fn;
#ifdef __cpp_exceptions
	std::exception_ptr error{};
#endif

	int call(void *obj, lfp_handle h)
	{
		T &o = *object<T>(obj);

		if constexpr (std::is_invocable_v<F &, T &, handle<T>>)
			return visit_result(fn, o, handle<T>(h));
		else
			return visit_result(fn, o);
	}

	static int visit(void *obj, lfp_handle h, void *arg) noexcept
	{
		walk *w = static_cast<walk *>(arg);

#ifdef __cpp_exceptions
		try {
			return w->call(obj, h);
		} catch (...) {
			w->error = std::current_exception();
			return 1;
		}
#else
		return w->call(obj, h);
#endif
	}

	int finish(int result)
	{
#ifdef __cpp_exceptions
		if (error)
			std::rethrow_exception(error);
#endif
		return result;
	}
};

} // namespace detail

/*
 * A generational handle to a T of a pool<T>: lfp_handle with a type. It
 * names one object for one lifetime; once the object is destroyed, the
 * pool resolves the handle to nullptr, even after the slot holds a new
 * object (see "Generational handles" in lfpool.h for wrap-around). A
 * default-constructed handle is the null handle, never valid.
 * Thread safety: a value; any thread. Progress: wait-free.
 */
template <class T> class handle
{
public:
	constexpr handle() noexcept = default;
	constexpr explicit handle(lfp_handle h) noexcept : h_(h)
	{
	}

	/* The C handle, for lfp_ calls. */
	constexpr lfp_handle native() const noexcept
	{
		return h_;
	}
	/* generation << 32 | index */
	constexpr std::uint64_t bits() const noexcept
	{
		return h_.bits;
	}
	/* The slot index, whether or not the handle is current. */
	constexpr std::uint32_t index() const noexcept
	{
		return static_cast<std::uint32_t>(h_.bits);
	}
	/* The slot's generation: odd for a live object's, 0 if null. */
	constexpr std::uint32_t generation() const noexcept
	{
		return static_cast<std::uint32_t>(h_.bits >> 32);
	}
	/* Whether the handle is not null; it may still be stale. */
	constexpr explicit operator bool() const noexcept
	{
		return h_.bits != 0;
	}

	/* The same slot and generation: the same object, or both null. */
	friend constexpr bool operator==(const handle &a,
					 const handle &b) noexcept
	{
		return a.h_.bits == b.h_.bits;
	}
	friend constexpr bool operator!=(const handle &a,
					 const handle &b) noexcept
	{
		return a.h_.bits != b.h_.bits;
	}

private:
	lfp_handle h_{};
};

/*
 * The deleter of lfp::unique_ptr: destroys the object and releases its
 * slot into the pool it names (the C pool, which stays where it is when
 * the lfp::pool that owns it is moved). A default-constructed deleter
 * names no pool: it refuses every object and runs no destructor.
 * Thread safety: any thread. Progress: lock-free, plus ~T.
 */
template <class T> struct deleter {
	lfp_pool *owner = nullptr;

	void operator()(T *obj) const noexcept
	{
		lfp_pool *p = owner;

		detail::destroy(p, obj, [p](void *slot) { lfp_free(p, slot); });
	}
};

/* A T made by pool<T>::make_unique, destroyed into its pool. */
template <class T> using unique_ptr = std::unique_ptr<T, deleter<T>>;

/*
 * The deleter of lfp::cache_unique_ptr: destroys the object and releases
 * its slot into the cache it names (lfp_cache_free), so it runs on the
 * cache's thread, and before the cache goes. A default-constructed
 * deleter names no cache: it refuses every object and runs no
 * destructor.
 * Thread safety: the cache's thread. Progress: as lfp_cache_free, plus
 * ~T.
 */
template <class T> struct cache_deleter {
	lfp_cache *owner = nullptr;
	lfp_pool *pool = nullptr; /* the cache's */

	void operator()(T *obj) const noexcept
	{
		lfp_cache *c = owner;

		detail::destroy(pool, obj,
				[c](void *slot) { lfp_cache_free(c, slot); });
	}
};

/* A T made by cache<T>::make_unique, destroyed into that cache. */
template <class T>
using cache_unique_ptr = std::unique_ptr<T, cache_deleter<T>>;

/*
 * A pool of T: owns an lfp_pool whose objects are T, sized and aligned
 * for T. Move-only; a moved-from pool owns nothing, makes nothing
 * (nullptr) and refuses every object.
 *
 * When the pool goes, the objects still live are destroyed (their
 * destructors run, in slot order) and its memory is returned, with its
 * explicit caches: a cache<T> that outlives its pool may only be
 * destroyed (which then does nothing), moved or assigned to.
 * lfp::unique_ptr and lfp::cache_unique_ptr of it must be gone first.
 * Every live slot is taken for a T then: a slot allocated through
 * native() with lfp_alloc must hold a T by that time (or T be trivially
 * destructible).
 */
template <class T> class pool
{
	static_assert(std::is_object_v<T> && !std::is_array_v<T> &&
			      std::is_same_v<T, std::remove_cv_t<T>>,
		      "lfp::pool<T> holds objects of an unqualified, "
		      "non-array object type");

public:
	using value_type = T;

	/*
	 * A pool of capacity objects with every other setting at its default
	 * (see struct lfp_config).
	 * Throws std::system_error: EINVAL (capacity 0), EOVERFLOW, ENOMEM,
	 * and the other errors of lfp_create.
	 * Thread safety: any thread. Progress: blocking (maps memory).
	 */
	explicit pool(std::uint32_t capacity) : pool(sized(capacity))
	{
	}

	/*
	 * A pool built from a full configuration. obj_size and align left 0
	 * are taken from T; set, they must hold a T (obj_size >= sizeof(T),
	 * align a multiple of alignof(T)) or the pool is refused with EINVAL.
	 * Hooks and policies are the C API's: a ctor or on_alloc hook sees
	 * the slot before T's constructor runs, on_free after its destructor.
	 * Throws std::system_error with the errors of lfp_create.
	 * Thread safety: any thread. Progress: blocking (maps memory).
	 */
	explicit pool(const lfp_config &cfg)
	{
		lfp_config c = cfg;
		int err;

		if (!c.obj_size)
			c.obj_size = sizeof(T);
		if (!c.align)
			c.align = alignof(T);
		if (c.obj_size < sizeof(T) || c.align % alignof(T))
			detail::fail(EINVAL, "lfp::pool: lfp_config cannot "
					     "hold a T");
		err = lfp_create(&c, &pool_);
		if (err)
			detail::fail(-err, "lfp::pool: lfp_create");
		state_ = new (std::nothrow) detail::pool_state(pool_);
		if (!state_) {
			lfp_destroy(pool_);
			detail::fail(ENOMEM, "lfp::pool: its state");
		}
	}

	pool(pool &&other) noexcept
		: pool_(std::exchange(other.pool_, nullptr)),
		  state_(std::exchange(other.state_, nullptr))
	{
	}

	pool &operator=(pool &&other) noexcept
	{
		if (this != &other) {
			close();
			pool_ = std::exchange(other.pool_, nullptr);
			state_ = std::exchange(other.state_, nullptr);
		}
		return *this;
	}

	pool(const pool &) = delete;
	pool &operator=(const pool &) = delete;

	/*
	 * Destroy the live objects and the pool (lfp_destroy), and with it
	 * the caches still made of it, whose own destructors then do
	 * nothing.
	 * Thread safety: no other thread may use the pool or its caches
	 * during or after it; a cache destroyed later must be destroyed
	 * after it, not concurrently (say, on a thread joined since).
	 * Progress: blocking.
	 */
	~pool()
	{
		close();
	}

	/*
	 * Allocate a slot (lfp_alloc, through the thread's implicit cache)
	 * and build T(args...) in it.
	 * Returns the object, or nullptr if the pool is exhausted (after its
	 * exhaust policy). If the constructor throws, the slot is released
	 * and the exception propagates.
	 * Thread safety: any thread. Progress: as lfp_alloc, plus T's
	 * constructor.
	 */
	template <class... Args>
	T *make(Args &&...args) noexcept(
		std::is_nothrow_constructible_v<T, Args...>)
	{
		lfp_pool *p = pool_;

		return detail::construct<T>(
			lfp_alloc(p), [p](void *slot) { lfp_free(p, slot); },
			std::forward<Args>(args)...);
	}

	/*
	 * Destroy obj and release its slot (lfp_free), from any thread.
	 * nullptr is ignored. A pointer that is not a live object of this
	 * pool (foreign, not the start of an object, destroyed already) is
	 * left alone, its destructor not run, and counted in rejected_frees;
	 * a destroy that races with another destroy of the same object may
	 * run its destructor twice (see lfp_free on racing releases).
	 * Thread safety: any thread. Progress: as lfp_free, plus ~T.
	 */
	void destroy(T *obj) noexcept
	{
		lfp_pool *p = pool_;

		detail::destroy(p, obj, [p](void *slot) { lfp_free(p, slot); });
	}

	/*
	 * Destroy the object h names and release its slot
	 * (lfp_free_handle), if h is still current: the object was not
	 * destroyed before the call. A stale handle is refused even once
	 * the slot holds a new object, which is left alone.
	 * Returns true if the object was destroyed; false, leaving every
	 * object as it was, if h is null, stale, of another pool (counted
	 * in rejected_frees, as lfp_free_handle counts it), or the pool was
	 * moved from.
	 * What the check covers: stale handles, not concurrent destroyers.
	 * ~T must run before the slot is released, never after (the slot
	 * may then hold another thread's new object), so for a T with a
	 * destructor the handle is checked, ~T run and the slot released in
	 * three steps. The caller must therefore own the object: no other
	 * thread may destroy it (by pointer or handle) at the same time.
	 * If two do, both may run ~T, though the slot is released once and
	 * one call returns true (lfp_free_handle's atomic check). For a
	 * trivially destructible T the release is the whole call and is
	 * atomic: any number of threads may destroy by one handle at once,
	 * and exactly one succeeds.
	 * Thread safety: any thread, owning the object (see above).
	 * Progress: lock-free, plus ~T.
	 */
	bool destroy(handle<T> h) noexcept
	{
		lfp_pool *p = pool_;

		return detail::destroy_handle<T>(p, h.native(),
						 [p](lfp_handle slot) {
							 return lfp_free_handle(
								 p, slot);
						 });
	}

	/*
	 * As make, owned by an lfp::unique_ptr whose deleter destroys the
	 * object into this pool.
	 * Returns the pointer, empty if the pool is exhausted.
	 * Thread safety and progress: as make.
	 */
	template <class... Args>
	lfp::unique_ptr<T> make_unique(Args &&...args) noexcept(
		std::is_nothrow_constructible_v<T, Args...>)
	{
		T *obj = make(std::forward<Args>(args)...);

		return lfp::unique_ptr<T>(obj, deleter<T>{ pool_ });
	}

	/*
	 * The handle of a live object (lfp_handle_of).
	 * Returns it, or the null handle if obj is not a live object of this
	 * pool. Thread safety: any thread. Progress: wait-free.
	 */
	handle<T> handle_of(const T *obj) const noexcept
	{
		return handle<T>(lfp_handle_of(pool_, obj));
	}

	/*
	 * The object a handle names, if it is still live (lfp_resolve).
	 * Returns it, or nullptr if the handle is null, stale or foreign. As
	 * with lfp_resolve, the answer holds at the moment of the call only
	 * if another thread may destroy the object.
	 * Thread safety: any thread. Progress: wait-free.
	 */
	T *resolve(handle<T> h) const noexcept
	{
		return detail::object<T>(lfp_resolve(pool_, h.native()));
	}

	/*
	 * A snapshot of the pool's counters (lfp_stats); zeroes for a
	 * moved-from pool.
	 * Thread safety: any thread. Progress: wait-free, O(caches).
	 */
	lfp::stats stats() const noexcept
	{
		lfp::stats st{};

		lfp_stats(pool_, &st);
		return st;
	}

	/*
	 * Call fn on every live object, in slot order (lfp_foreach, with its
	 * guarantees under concurrent use: see "Live-object iteration" in
	 * lfpool.h). fn is called as fn(T &obj, lfp::handle<T> h) if it
	 * takes a handle, else as fn(T &obj). It returns nothing, to visit
	 * every object, or a value that converts to int: 0 goes on, any
	 * other value stops the walk (true stops it too). fn may destroy the
	 * object it is given, and make or destroy others.
	 * An exception fn throws stops the walk and leaves for_each once
	 * lfp_foreach has returned: it never unwinds through the library.
	 * Built with -fno-exceptions, fn must not throw (it would end the
	 * program).
	 * Returns 0 when every live object was visited, the value that
	 * stopped the walk, or -EINVAL if the pool was moved from.
	 * Thread safety: any thread, concurrently with any call but the
	 * pool's destruction; several walks may run at once.
	 * Progress: wait-free for the walk (O(extent())), plus fn.
	 */
	template <class F> int for_each(F &&fn) const
	{
		detail::walk<T, std::remove_reference_t<F>> w{ fn };

		return w.finish(lfp_foreach(pool_, w.visit, &w));
	}

	/*
	 * As for_each, over the slot indices [begin, end) only
	 * (lfp_foreach_range): end is clamped to extent(), and N workers
	 * that take the shares lfp_range computes from one extent() visit
	 * every live object once between them.
	 * Returns as for_each.
	 * Thread safety and progress: as for_each (O(end - begin)).
	 */
	template <class F>
	int for_each_range(std::uint32_t begin, std::uint32_t end,
			   F &&fn) const
	{
		detail::walk<T, std::remove_reference_t<F>> w{ fn };

		return w.finish(
			lfp_foreach_range(pool_, begin, end, w.visit, &w));
	}

	/*
	 * How far into the pool slots have been used (lfp_extent): every
	 * live object's index is below it. 0 for a moved-from pool.
	 * Thread safety: any thread. Progress: wait-free.
	 */
	std::uint32_t extent() const noexcept
	{
		return lfp_extent(pool_);
	}

	/*
	 * The C pool, for every lfp_ call this class does not wrap.
	 * Thread safety: any thread. Progress: wait-free.
	 */
	lfp_pool *native() const noexcept
	{
		return pool_;
	}

private:
	static lfp_config sized(std::uint32_t capacity) noexcept
	{
		lfp_config c{};

		c.capacity = capacity;
		return c;
	}

	/* noexcept: a destructor that throws ends the program here, never
	 * unwinding through lfp_foreach's C frames. */
	static int destroy_visit(void *obj, lfp_handle, void *) noexcept
	{
		static_cast<T *>(obj)->~T();
		return 0;
	}

	void close() noexcept
	{
		if (!pool_)
			return;
		/* The walk sees every live object: no other thread may use
		 * the pool now. */
		if constexpr (!std::is_trivially_destructible_v<T>)
			lfp_foreach(pool_, destroy_visit, nullptr);
		lfp_destroy(pool_);
		pool_ = nullptr;
		/* lfp_destroy took the caches: theirs must not. */
		state_->pool = nullptr;
		state_->let_go();
		state_ = nullptr;
	}

	friend class cache<T>;

	lfp_pool *pool_ = nullptr;
	detail::pool_state *state_ = nullptr; /* with pool_, or both null */
};

/*
 * An explicit cache of a pool<T> (lfp_cache_create), for a worker with a
 * fixed identity: it allocates through its own slots with no lookup. One
 * thread uses it at a time; it may move to another thread if the hand-over
 * synchronises. Objects it makes may be destroyed anywhere (by the pool or
 * another cache), and it may destroy any object of the pool. Move-only.
 * It may outlive its pool<T>, whose destruction takes the C cache with
 * it (lfp_destroy): after that the cache may only be destroyed (which
 * does nothing more), moved or assigned to. A moved-from cache makes
 * nothing (nullptr) and may be destroyed or assigned to.
 */
template <class T> class cache
{
public:
	/*
	 * A cache for pool p.
	 * Throws std::system_error: EINVAL (p was moved from), ENOMEM.
	 * Thread safety: any thread. Progress: as lfp_cache_create.
	 */
	explicit cache(pool<T> &p)
		: cache_(lfp_cache_create(p.native())), pool_(p.native())
	{
		if (!cache_)
			detail::fail(pool_ ? ENOMEM : EINVAL,
				     "lfp::cache: lfp_cache_create");
		state_ = p.state_;
		state_->hold();
	}

	cache(cache &&other) noexcept
		: cache_(std::exchange(other.cache_, nullptr)),
		  pool_(std::exchange(other.pool_, nullptr)),
		  state_(std::exchange(other.state_, nullptr))
	{
	}

	cache &operator=(cache &&other) noexcept
	{
		if (this != &other) {
			close();
			cache_ = std::exchange(other.cache_, nullptr);
			pool_ = std::exchange(other.pool_, nullptr);
			state_ = std::exchange(other.state_, nullptr);
		}
		return *this;
	}

	cache(const cache &) = delete;
	cache &operator=(const cache &) = delete;

	/*
	 * Give the cached slots back and give the cache up
	 * (lfp_cache_destroy), unless the pool<T> is gone already and took
	 * the cache with it: then nothing.
	 * Thread safety: the cache's thread; after the pool's destruction
	 * or before it, not during it. Progress: as lfp_cache_destroy.
	 */
	~cache()
	{
		close();
	}

	/*
	 * As pool<T>::make, through the cache (lfp_cache_alloc).
	 * Returns the object, or nullptr if the pool is exhausted.
	 * Thread safety: the cache's thread. Progress: as lfp_cache_alloc,
	 * plus T's constructor.
	 */
	template <class... Args>
	T *make(Args &&...args) noexcept(
		std::is_nothrow_constructible_v<T, Args...>)
	{
		lfp_cache *c = cache_;

		return detail::construct<T>(
			lfp_cache_alloc(c),
			[c](void *slot) { lfp_cache_free(c, slot); },
			std::forward<Args>(args)...);
	}

	/*
	 * As pool<T>::destroy, releasing the slot into the cache
	 * (lfp_cache_free).
	 * Thread safety: the cache's thread. Progress: as lfp_cache_free,
	 * plus ~T.
	 */
	void destroy(T *obj) noexcept
	{
		lfp_cache *c = cache_;

		detail::destroy(pool_, obj,
				[c](void *slot) { lfp_cache_free(c, slot); });
	}

	/*
	 * As make, owned by an lfp::cache_unique_ptr whose deleter destroys
	 * the object into this cache (lfp_cache_free): the pointer must be
	 * reset or dropped on the cache's thread, before the cache goes.
	 * For a pointer any thread may drop, take pool<T>::make_unique.
	 * Returns the pointer, empty if the pool is exhausted.
	 * Thread safety and progress: as make.
	 */
	template <class... Args>
	lfp::cache_unique_ptr<T> make_unique(Args &&...args) noexcept(
		std::is_nothrow_constructible_v<T, Args...>)
	{
		T *obj = make(std::forward<Args>(args)...);

		return lfp::cache_unique_ptr<T>(obj,
						cache_deleter<T>{ cache_, pool_ });
	}

	/*
	 * As pool<T>::destroy(handle<T>), releasing the slot into the cache
	 * (lfp_cache_free_handle), with the same promise: a stale handle is
	 * refused, but the caller must own the object unless T is trivially
	 * destructible.
	 * Returns true if the object was destroyed, false if h is null,
	 * stale or of another pool, or the cache was moved from.
	 * Thread safety: the cache's thread, owning the object.
	 * Progress: lock-free, plus ~T.
	 */
	bool destroy(handle<T> h) noexcept
	{
		lfp_cache *c = cache_;

		return detail::destroy_handle<T>(
			pool_, h.native(), [c](lfp_handle slot) {
				return lfp_cache_free_handle(c, slot);
			});
	}

	/*
	 * As pool<T>::resolve: the object h names if it is still live, or
	 * nullptr.
	 * Thread safety: any thread, while the cache's pool lives.
	 * Progress: wait-free.
	 */
	T *resolve(handle<T> h) const noexcept
	{
		return detail::object<T>(lfp_resolve(pool_, h.native()));
	}

	/*
	 * This worker's share of the pool's counters (lfp_cache_stats):
	 * what went through this cache since it was made, and the pool-wide
	 * gauges. Zeroes for a moved-from cache.
	 * Thread safety: any thread, while the cache and its pool live.
	 * Progress: wait-free, O(caches of the pool).
	 */
	lfp::stats stats() const noexcept
	{
		lfp::stats st{};

		lfp_cache_stats(cache_, &st);
		return st;
	}

	/*
	 * Give every cached slot back to the shared free list
	 * (lfp_cache_flush), before the worker goes idle, say.
	 * Thread safety: the cache's thread. Progress: as lfp_cache_flush.
	 */
	void flush() noexcept
	{
		lfp_cache_flush(cache_);
	}

	/*
	 * The C cache, for the lfp_cache_ calls this class does not wrap.
	 * Thread safety: any thread. Progress: wait-free.
	 */
	lfp_cache *native() const noexcept
	{
		return cache_;
	}

private:
	void close() noexcept
	{
		if (!state_)
			return;
		if (state_->pool)
			lfp_cache_destroy(cache_);
		state_->let_go();
		state_ = nullptr;
		cache_ = nullptr;
		pool_ = nullptr;
	}

	lfp_cache *cache_ = nullptr;
	lfp_pool *pool_ = nullptr;
	detail::pool_state *state_ = nullptr; /* shared with the pool<T> */
};

/*
 * A std::pmr::memory_resource that serves blocks of up to block_size
 * bytes, aligned to at most alignof(std::max_align_t), from a pool of its
 * own of capacity blocks (lfp_alloc, through the thread's implicit cache),
 * and every other request from upstream: larger or more aligned blocks,
 * and any block while the pool is exhausted. A block goes back where it
 * came from, told by its address (lfp_owns), whatever size the caller
 * passes. Equal only to itself. Neither copyable nor movable (containers
 * hold its address).
 *
 * Its allocate throws only what upstream throws; pool blocks never throw.
 * When it goes, the blocks of its pool go with it (as with
 * monotonic_buffer_resource); blocks upstream still holds are upstream's.
 * Thread safety: any thread, if upstream is thread-safe (the default
 * resource is). Progress: lock-free for pool blocks (as lfp_alloc and
 * lfp_free); upstream's for the rest.
 */
class pool_resource : public std::pmr::memory_resource
{
public:
	/*
	 * A resource whose pool holds capacity blocks of block_size bytes,
	 * in front of upstream, which must outlive it.
	 * Throws std::system_error: EINVAL (block_size or capacity 0, or
	 * upstream nullptr), EOVERFLOW, ENOMEM, and the other errors of
	 * lfp_create.
	 * Thread safety: any thread. Progress: blocking (maps memory).
	 */
	pool_resource(std::size_t block_size, std::uint32_t capacity,
		      std::pmr::memory_resource *upstream =
			      std::pmr::get_default_resource())
		: upstream_(upstream)
	{
		lfp_config c{};
		int err;

		if (!upstream)
			detail::fail(EINVAL, "lfp::pool_resource: no upstream");
		c.obj_size = block_size;
		c.align = alignof(std::max_align_t);
		c.capacity = capacity;
		err = lfp_create(&c, &pool_);
		if (err)
			detail::fail(-err, "lfp::pool_resource: lfp_create");
		block_size_ = block_size;
	}

	pool_resource(const pool_resource &) = delete;
	pool_resource &operator=(const pool_resource &) = delete;

	/* Thread safety: nobody may use the resource during or after it. */
	~pool_resource() override
	{
		lfp_destroy(pool_);
	}

	/*
	 * The largest block and the strictest alignment the pool serves,
	 * the resource behind it, its counters, the C pool.
	 * Thread safety: any thread. Progress: wait-free (stats: O(caches)).
	 */
	std::size_t block_size() const noexcept
	{
		return block_size_;
	}
	static constexpr std::size_t alignment() noexcept
	{
		return alignof(std::max_align_t);
	}

	std::pmr::memory_resource *upstream_resource() const noexcept
	{
		return upstream_;
	}

	/* Upstream's blocks are not in the counts. */
	lfp::stats stats() const noexcept
	{
		lfp::stats st{};

		lfp_stats(pool_, &st);
		return st;
	}

	/* The C pool, for the lfp_ calls this class does not wrap. */
	lfp_pool *native() const noexcept
	{
		return pool_;
	}

protected:
	void *do_allocate(std::size_t bytes, std::size_t align) override
	{
		if (bytes <= block_size_ && align <= alignment()) {
			void *p = lfp_alloc(pool_);

			if (p)
				return p;
		}
		return upstream_->allocate(bytes, align);
	}

	void do_deallocate(void *p, std::size_t bytes,
			   std::size_t align) override
	{
		/* By address, not by size: a small block may have come
		 * from upstream while the pool was exhausted. */
		if (lfp_owns(pool_, p))
			lfp_free(pool_, p);
		else
			upstream_->deallocate(p, bytes, align);
	}

	bool do_is_equal(
		const std::pmr::memory_resource &other) const noexcept override
	{
		return this == &other;
	}

private:
	std::pmr::memory_resource *upstream_;
	lfp_pool *pool_ = nullptr;
	std::size_t block_size_ = 0;
};

} // namespace lfp

/* Handles hash by their bits, so they key unordered containers. */
namespace std
{
template <class T> struct hash<lfp::handle<T>> {
	size_t operator()(const lfp::handle<T> &h) const noexcept
	{
		return hash<uint64_t>{}(h.bits());
	}
};
} // namespace std

#endif /* LFPOOL_HPP */
