/* SPDX-License-Identifier: MIT */
/*
 * lfpool/pool.hpp: lfp::pool<T>, a pool of T, and lfp::cache<T>, one
 * worker's explicit cache of it, with the deleters of the unique_ptrs
 * they make. Part of lfpool.hpp's API, normally reached through it (see
 * there for the conventions: exceptions or create(), -fno-exceptions);
 * including it alone is supported too, and brings lfpool/handle.hpp.
 */
#ifndef LFPOOL_POOL_HPP
#define LFPOOL_POOL_HPP

#include <lfpool/common.hpp>
#include <lfpool/handle.hpp>

#include <cerrno>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#ifdef __cpp_exceptions
#include <exception>
#endif

namespace lfp
{

/* pool<T> makes cache<T> its friend. */
template <class T> class cache;

namespace detail
{

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
 * for T. Move-only.
 *
 * Empty (default-constructed, moved from, reset, or left so by a create
 * that failed), it owns nothing, and every member does what the C call
 * does with a NULL pool: make gives nullptr and make_unique an empty
 * pointer; destroy(T *) runs no destructor and releases nothing (counted
 * nowhere), destroy(handle) returns false; handle_of gives the null
 * handle and resolve nullptr; stats gives zeroes, extent 0, for_each and
 * for_each_range -EINVAL without calling fn; native is nullptr; a
 * cache<T> of it cannot be made (EINVAL). Destroying it, assigning to it
 * or reset() does nothing more.
 *
 * When the pool goes, the objects still live are destroyed (their
 * destructors run, in slot order) and its memory is returned, with its
 * explicit caches: a cache<T> that outlives its pool may only be
 * destroyed (which then does nothing), moved or assigned to.
 * lfp::unique_ptr and lfp::cache_unique_ptr of it must be gone first.
 * Every live slot is taken for a T then: a slot allocated through
 * native() with lfp_alloc must hold a T by that time (or T be trivially
 * destructible).
 *
 * An unchecked pool (LFP_F_UNCHECKED in lfp_config.flags) takes only a
 * trivially destructible T: it can neither walk its live objects for
 * their destructors at the end nor tell a live object from a destroyed
 * one, so for any other T the constructor throws EINVAL and create
 * returns -EINVAL. With a trivially destructible T, destroying an object
 * twice is undefined there, as a second lfp_free is (see destroy), and
 * destroy(handle), handle_of, resolve and for_each find nothing (the C
 * calls' answers for such a pool).
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
	 * An empty pool, to be filled by create (or assigned to).
	 * Thread safety: any thread. Progress: wait-free.
	 */
	constexpr pool() noexcept = default;

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
	 * Throws std::system_error with the errors of lfp_create, and
	 * EINVAL for LFP_F_UNCHECKED with a T that is not trivially
	 * destructible (see the class).
	 * Thread safety: any thread. Progress: blocking (maps memory).
	 */
	explicit pool(const lfp_config &cfg)
	{
		detail::failure why;
		int err = open(cfg, &why);

		if (err)
			detail::fail(-err, why.what, why.field);
	}

	/*
	 * Make a pool as pool(capacity) or pool(cfg) would, into out,
	 * without exceptions: for two-phase initialisation, and for programs
	 * built with -fno-exceptions, where the constructors abort.
	 * Returns 0, out then holding the pool; -EBUSY if out holds a pool
	 * already (it is left as it was: reset() it first); or the negative
	 * errno value the constructor would throw (-EINVAL for capacity 0,
	 * a cfg that cannot hold a T, or LFP_F_UNCHECKED with a T that is
	 * not trivially destructible; -EOVERFLOW, -ENOMEM, and the other
	 * errors of lfp_create), out then left empty.
	 * Thread safety: any thread; out is the caller's alone during the
	 * call. Progress: blocking (maps memory).
	 */
	static int create(std::uint32_t capacity, pool &out) noexcept
	{
		return create(sized(capacity), out);
	}
	static int create(const lfp_config &cfg, pool &out) noexcept
	{
		detail::failure why;

		if (out)
			return -EBUSY;
		return out.open(cfg, &why);
	}

	pool(pool &&other) noexcept = default;
	pool &operator=(pool &&other) noexcept = default;
	pool(const pool &) = delete;
	pool &operator=(const pool &) = delete;

	/*
	 * Destroy the live objects and the pool (lfp_destroy), and with it
	 * the caches still made of it, whose own destructors then do
	 * nothing. Nothing for an empty pool.
	 * Thread safety: no other thread may use the pool or its caches
	 * during or after it; a cache destroyed later must be destroyed
	 * after it, not concurrently (say, on a thread joined since).
	 * Progress: blocking.
	 */
	~pool() = default;

	/*
	 * As the destructor, leaving the pool empty, to be made again by
	 * create: an engine's Shutdown(). Nothing for an empty pool.
	 * Thread safety and progress: as the destructor.
	 */
	void reset() noexcept
	{
		own_.reset();
	}

	/*
	 * Whether the pool holds a pool (is not empty).
	 * Thread safety: any thread. Progress: wait-free.
	 */
	explicit operator bool() const noexcept
	{
		return own_.native != nullptr;
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
		lfp_pool *p = native();

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
	 * run its destructor twice (see lfp_free on racing releases). In an
	 * unchecked pool (LFP_F_UNCHECKED; T is then trivially
	 * destructible) a second destroy of one object is undefined, as a
	 * second lfp_free is: the pool may take it and hand the slot out
	 * twice.
	 * Thread safety: any thread. Progress: as lfp_free, plus ~T.
	 */
	void destroy(T *obj) noexcept
	{
		lfp_pool *p = native();

		detail::destroy(p, obj, [p](void *slot) { lfp_free(p, slot); });
	}

	/*
	 * Destroy the object h names and release its slot
	 * (lfp_free_handle), if h is still current: the object was not
	 * destroyed before the call. A stale handle is refused even once
	 * the slot holds a new object, which is left alone.
	 * Returns true if the object was destroyed; false, leaving every
	 * object as it was, if h is null, stale, of another pool (counted
	 * in rejected_frees, as lfp_free_handle counts it), or the pool is
	 * empty.
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
		lfp_pool *p = native();

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

		return lfp::unique_ptr<T>(obj, deleter<T>{ native() });
	}

	/*
	 * The handle of a live object (lfp_handle_of).
	 * Returns it, or the null handle if obj is not a live object of this
	 * pool. Thread safety: any thread. Progress: wait-free.
	 */
	handle<T> handle_of(const T *obj) const noexcept
	{
		return handle<T>(lfp_handle_of(native(), obj));
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
		return detail::object<T>(lfp_resolve(native(), h.native()));
	}

	/*
	 * A snapshot of the pool's counters (lfp_stats); zeroes for a
	 * empty pool.
	 * Thread safety: any thread. Progress: wait-free, O(caches).
	 */
	lfp::stats stats() const noexcept
	{
		lfp::stats st{};

		lfp_stats(native(), &st);
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
	 * stopped the walk, or -EINVAL if the pool is empty.
	 * Thread safety: any thread, concurrently with any call but the
	 * pool's destruction; several walks may run at once.
	 * Progress: wait-free for the walk (O(extent())), plus fn.
	 */
	template <class F> int for_each(F &&fn) const
	{
		detail::walk<T, std::remove_reference_t<F>> w{ fn };

		return w.finish(lfp_foreach(native(), w.visit, &w));
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
			lfp_foreach_range(native(), begin, end, w.visit, &w));
	}

	/*
	 * How far into the pool slots have been used (lfp_extent): every
	 * live object's index is below it. 0 for a empty pool.
	 * Thread safety: any thread. Progress: wait-free.
	 */
	std::uint32_t extent() const noexcept
	{
		return lfp_extent(native());
	}

	/*
	 * The C pool, for every lfp_ call this class does not wrap.
	 * Thread safety: any thread. Progress: wait-free.
	 */
	lfp_pool *native() const noexcept
	{
		return own_.native;
	}

private:
	static lfp_config sized(std::uint32_t capacity) noexcept
	{
		lfp_config c{};

		c.capacity = capacity;
		return c;
	}

	/*
	 * Make the pool of an empty object from cfg, obj_size and align
	 * taken from T where left 0. Returns 0, or a negative errno value
	 * with *why naming the step that failed and the field at fault, and
	 * the object still empty: the constructor throws it, create returns
	 * it.
	 */
	int open(const lfp_config &cfg, detail::failure *why) noexcept
	{
		lfp_config c = cfg;
		lfp_pool *p = nullptr;
		int err;

		if (!c.obj_size)
			c.obj_size = sizeof(T);
		if (!c.align)
			c.align = alignof(T);
		if (c.obj_size < sizeof(T) || c.align % alignof(T)) {
			why->what = "lfp::pool<T>: lfp_config cannot hold a T";
			if (c.obj_size < sizeof(T))
				detail::note_field(c, "obj_size", why);
			else
				detail::note_field(c, "align", why);
			return -EINVAL;
		}
		/* parts::close walks the live objects for their destructors and
		 * destroy() asks lfp_is_live: an unchecked pool has neither. */
		if (!std::is_trivially_destructible_v<T> &&
		    (c.flags & LFP_F_UNCHECKED)) {
			why->what = "lfp::pool<T>: LFP_F_UNCHECKED needs a "
				    "trivially destructible T";
			detail::note_field(c, "flags", why);
			return -EINVAL;
		}
		err = lfp_create(&c, &p);
		if (err) {
			why->what = "lfp::pool<T>: lfp_create";
			detail::note_fault(c, why);
			return err;
		}
		own_.state = new (std::nothrow) detail::pool_state(p);
		if (!own_.state) {
			lfp_destroy(p);
			why->what = "lfp::pool<T>: its state";
			return -ENOMEM;
		}
		own_.native = p;
		return 0;
	}

	/* noexcept: a destructor that throws ends the program here, never
	 * unwinding through lfp_foreach's C frames. */
	static int destroy_visit(void *obj, lfp_handle, void *) noexcept
	{
		static_cast<T *>(obj)->~T();
		return 0;
	}

	/* What a pool<T> holds, in detail::owned. */
	struct parts {
		/* Both set, or both null. */
		lfp_pool *native = nullptr;
		detail::pool_state *state = nullptr;

		void close() noexcept
		{
			/* The walk sees every live object: no other thread may
			 * use the pool now. */
			if constexpr (!std::is_trivially_destructible_v<T>) {
				if (native)
					lfp_foreach(native, destroy_visit,
						    nullptr);
			}
			detail::close_owner(native, state, lfp_destroy);
		}
	};

	friend class cache<T>;

	detail::owned<parts> own_;
};

/*
 * An explicit cache of a pool<T> (lfp_cache_create), for a worker with a
 * fixed identity: it allocates through its own slots with no lookup. One
 * thread uses it at a time; it may move to another thread if the hand-over
 * synchronises. Objects it makes may be destroyed anywhere (by the pool or
 * another cache), and it may destroy any object of the pool. Move-only.
 * It may outlive its pool<T>, whose destruction takes the C cache with
 * it (lfp_destroy): after that the cache is orphaned, false as a bool,
 * and may only be destroyed (which does nothing more), reset, moved or
 * assigned to, or made again by create.
 *
 * Empty (default-constructed, moved from, reset, or left so by a create
 * that failed), it holds nothing, and every member does what the C call
 * does with a NULL cache: make gives nullptr and make_unique an empty
 * pointer; destroy(T *) runs no destructor and releases nothing (counted
 * nowhere), destroy(handle) returns false; resolve gives nullptr, stats
 * zeroes; flush does nothing; native is nullptr. Destroying it,
 * assigning to it or reset() does nothing more.
 */
template <class T> class cache
{
public:
	/*
	 * An empty cache, to be filled by create (or assigned to).
	 * Thread safety: any thread. Progress: wait-free.
	 */
	constexpr cache() noexcept = default;

	/*
	 * A cache for pool p.
	 * Throws std::system_error: EINVAL (p is empty), ENOMEM.
	 * Thread safety: any thread. Progress: as lfp_cache_create.
	 */
	explicit cache(pool<T> &p)
	{
		int err = open(p);

		if (err)
			detail::fail(-err, "lfp::cache<T>: lfp_cache_create");
	}

	/*
	 * Make a cache of p as cache(p) would, into out, without
	 * exceptions (see pool<T>::create).
	 * Returns 0, out then holding the cache; -EBUSY if out holds a
	 * cache already (it is left as it was; an orphaned one does not
	 * count, and is let go); or -EINVAL (p is empty) or -ENOMEM, out
	 * then left empty.
	 * Thread safety: any thread; out is the caller's alone during the
	 * call, and p's pool is not being destroyed. Progress: as
	 * lfp_cache_create.
	 */
	static int create(pool<T> &p, cache &out) noexcept
	{
		if (out)
			return -EBUSY;
		out.reset();
		return out.open(p);
	}

	cache(cache &&other) noexcept = default;
	cache &operator=(cache &&other) noexcept = default;
	cache(const cache &) = delete;
	cache &operator=(const cache &) = delete;

	/*
	 * Give the cached slots back and give the cache up
	 * (lfp_cache_destroy), unless the pool<T> is gone already and took
	 * the cache with it, or the cache is empty: then nothing.
	 * Thread safety: the cache's thread; after the pool's destruction
	 * or before it, not during it. Progress: as lfp_cache_destroy.
	 */
	~cache() = default;

	/*
	 * As the destructor, leaving the cache empty, to be made again by
	 * create.
	 * Thread safety and progress: as the destructor.
	 */
	void reset() noexcept
	{
		own_.reset();
	}

	/*
	 * Whether the cache holds a C cache: false if it is empty, and
	 * false once its pool<T> is destroyed (orphaned).
	 * Thread safety: any thread, not during the destruction of the
	 * cache's pool. Progress: wait-free.
	 */
	explicit operator bool() const noexcept
	{
		return own_.state && own_.state->native;
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
		lfp_cache *c = native();

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
		lfp_cache *c = native();

		detail::destroy(own_.owner, obj,
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

		return lfp::cache_unique_ptr<T>(
			obj, cache_deleter<T>{ native(), own_.owner });
	}

	/*
	 * As pool<T>::destroy(handle<T>), releasing the slot into the cache
	 * (lfp_cache_free_handle), with the same promise: a stale handle is
	 * refused, but the caller must own the object unless T is trivially
	 * destructible.
	 * Returns true if the object was destroyed, false if h is null,
	 * stale or of another pool, or the cache is empty.
	 * Thread safety: the cache's thread, owning the object.
	 * Progress: lock-free, plus ~T.
	 */
	bool destroy(handle<T> h) noexcept
	{
		lfp_cache *c = native();

		return detail::destroy_handle<T>(
			own_.owner, h.native(), [c](lfp_handle slot) {
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
		return detail::object<T>(lfp_resolve(own_.owner, h.native()));
	}

	/*
	 * This worker's share of the pool's counters (lfp_cache_stats):
	 * what went through this cache since it was made, and the pool-wide
	 * gauges. Zeroes for a empty cache.
	 * Thread safety: any thread, while the cache and its pool live.
	 * Progress: wait-free, O(caches of the pool).
	 */
	lfp::stats stats() const noexcept
	{
		lfp::stats st{};

		lfp_cache_stats(native(), &st);
		return st;
	}

	/*
	 * Give every cached slot back to the shared free list
	 * (lfp_cache_flush), before the worker goes idle, say.
	 * Thread safety: the cache's thread. Progress: as lfp_cache_flush.
	 */
	void flush() noexcept
	{
		lfp_cache_flush(native());
	}

	/*
	 * The C cache, for the lfp_cache_ calls this class does not wrap.
	 * Thread safety: any thread. Progress: wait-free.
	 */
	lfp_cache *native() const noexcept
	{
		return own_.native;
	}

private:
	/*
	 * Make the C cache of an empty object for p. Returns 0, or -EINVAL
	 * (p is empty) or -ENOMEM with the object still empty.
	 */
	int open(pool<T> &p) noexcept
	{
		return detail::open_cache(own_, p.own_, lfp_cache_create);
	}

	/* What a cache<T> holds, in detail::owned. */
	struct parts {
		lfp_cache *native = nullptr;
		/* The pool<T>'s C pool, and the state shared with it. */
		lfp_pool *owner = nullptr;
		detail::pool_state *state = nullptr;

		void close() noexcept
		{
			detail::close_cache(native, state, lfp_cache_destroy);
		}
	};

	detail::owned<parts> own_;
};

} // namespace lfp

#endif /* LFPOOL_POOL_HPP */
