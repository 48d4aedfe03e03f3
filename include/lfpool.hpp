/*
 * lfpool.hpp: the C++ interface to lfpool (C++17, header-only).
 *
 * Typed wrappers over the C API of lfpool.h, which stays the one
 * implementation: every operation below is a call of an lfp_ function and
 * keeps its promises (thread safety, progress, errors, hooks, policies).
 * Allocation and release go through lfpool.h's inline fast paths, as in
 * C11 (with g++ and clang++; LFP_NO_INLINE calls the functions instead,
 * and like -fno-exceptions below must be the same in every file).
 * Link as a C program does: c++ -std=c++17 app.cc $(pkg-config --cflags
 * --libs lfpool). The concepts, and the contracts that span many calls,
 * are in lfpool(7) (what a hook may call, say: see lfpool(7), HOOKS).
 *
 *   lfp::pool<T>         owns a pool of T: make/destroy (by pointer or
 *                        handle), make_unique, for_each over live objects
 *   lfp::cache<T>        one worker's explicit cache of a pool<T>
 *   lfp::handle<T>       a typed generational handle, hashable
 *   lfp::unique_ptr<T>   a std::unique_ptr that destroys into its pool
 *   lfp::cache_unique_ptr<T>  one that destroys into a cache
 *   lfp::pool_resource   a std::pmr::memory_resource of fixed-size blocks
 *   lfp::family          owns a family of size classes: alloc by size,
 *                        free by address, make<T>/destroy of any type
 *                        that fits, make_unique
 *   lfp::family_cache    one worker's explicit family cache
 *   lfp::family_unique_ptr<T>, lfp::family_cache_unique_ptr<T>
 *   lfp::family_resource a std::pmr::memory_resource of many block sizes
 *   lfp::stats, lfp::family_stats  struct lfp_stats and struct
 *                        lfp_family_stats, under names C++ can use
 *
 * Conventions used below:
 * - Making a pool, a cache or a resource with a constructor that fails
 *   throws std::system_error whose code() is the errno value of the C
 *   call, in std::generic_category() (capacity 0: EINVAL, no memory:
 *   ENOMEM). Built without exceptions (-fno-exceptions) it prints the
 *   error to stderr and aborts instead. Every file of a program that
 *   includes this header must be built the same way: its inline
 *   functions differ between the two, and the linker keeps one copy of
 *   each, so a file built with exceptions could get the aborting copy,
 *   or a callback's exception could run through the library's C frames.
 * - Two-phase initialisation, and programs built with -fno-exceptions
 *   that must survive a failed setup: pool<T>, cache<T>, family and
 *   family_cache are also made empty (default-constructed, noexcept)
 *   and filled later by their static create, which never throws nor
 *   aborts: it returns 0, or a negative errno value (the one the
 *   constructor with the same arguments would throw) and leaves its
 *   out argument empty. create refuses with -EBUSY an out that holds
 *   one already (reset() it first): replacing it would destroy its live
 *   objects and take its caches' C caches behind the program's back.
 *   explicit operator bool says whether an object holds one. Every
 *   member is defined on an empty object, as its class's comment says;
 *   a moved-from or reset() object is empty too, and destroying an
 *   empty one does nothing. pool_resource and family_resource have no
 *   empty state and no create: their constructors throw (or abort).
 * - Nothing on the allocation path throws: an exhausted pool gives
 *   nullptr. Only T's own constructor can throw out of make, and its slot
 *   is back in the pool when the exception leaves.
 * - Objects are built as std::make_unique builds them: T(args...), so
 *   make() with no arguments value-initialises (zeroes) a plain struct.
 * - No RTTI is needed.
 *
 * An engine that constructs its systems first and initialises them
 * later, built with -fno-exceptions, keeps its pools empty until Init()
 * and reports a failure as any other:
 *
 *   struct Engine {
 *       lfp::pool<Particle> particles;    // empty: no memory yet
 *
 *       int Init(std::uint32_t n) noexcept
 *       {
 *           lfp_config cfg{};
 *
 *           cfg.capacity = n;             // obj_size, align from T
 *           return lfp::pool<Particle>::create(cfg, particles);
 *       }
 *       void Shutdown() noexcept { particles.reset(); }
 *   };
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
#include <initializer_list>
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

/* obj as the C API takes it. */
template <class T> void *untyped(T *obj) noexcept
{
	return const_cast<void *>(static_cast<const volatile void *>(obj));
}

/*
 * Destroy obj, whose object starts at start, if start is a live object of
 * pool, and give start back through release, which refuses it (counted in
 * rejected_frees) if it is not: a foreign or interior pointer, or an
 * object destroyed already, is left as it is, as lfp_free leaves it. Two
 * threads that destroy the same object at once may both run its
 * destructor (the C API's racing double release; LFP_F_STRICT makes one
 * release fail, not one destructor).
 */
template <class T, class Release>
void destroy_at(const lfp_pool *pool, T *obj, void *start,
		Release &release) noexcept
{
	if constexpr (!std::is_trivially_destructible_v<T>) {
		if (lfp_is_live(pool, start))
			obj->~T();
	}
	release(start);
}

/* destroy_at for an object of pool; nullptr is ignored. */
template <class T, class Release>
void destroy(const lfp_pool *pool, T *obj, Release release) noexcept
{
	if (obj)
		destroy_at(pool, obj, untyped(obj), release);
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
 * What an owner (a pool<T>, a family) shares with its caches: whether
 * its C object is still there. lfp_destroy takes the caches not yet
 * destroyed with it (lfp_family_destroy the family caches), so a cache
 * that outlives its owner must not destroy its C cache; this tells it.
 * The owner and each of its caches hold a reference, and the last to
 * let go frees it. Made once per owner; never read on the allocation or
 * release path.
 */
template <class C> struct owner_state {
	std::atomic<unsigned long> refs{ 1 };
	C *native; /* nullptr once the owner is destroyed */

	explicit owner_state(C *c) noexcept : native(c)
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
		 * after their reads and writes of native. */
		if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
			delete this;
	}
};
using pool_state = owner_state<lfp_pool>;
using family_state = owner_state<lfp_family>;

/* The pool of the class of fam whose memory holds obj, or nullptr. */
inline lfp_pool *family_pool_of(const lfp_family *fam, const void *obj) noexcept
{
	int c = lfp_family_class_of(fam, obj);

	return c < 0 ? nullptr
		     : lfp_family_pool(fam, static_cast<std::uint32_t>(c));
}

/*
 * The start of the slot of pool whose memory holds p, by arithmetic on
 * the address alone (it reads no object), or nullptr if none does.
 */
inline void *slot_start(const lfp_pool *pool, const void *p) noexcept
{
	char *first, *second;
	std::size_t stride;

	if (!lfp_owns(pool, p))
		return nullptr;
	first = static_cast<char *>(lfp_at(pool, 0));
	second = static_cast<char *>(lfp_at(pool, 1));
	if (!second)
		return first;
	stride = static_cast<std::size_t>(second - first);
	return first + static_cast<std::size_t>(static_cast<const char *>(p) -
						first) /
			       stride * stride;
}

/*
 * destroy_at for an object of a family, in its class's pool; nullptr is
 * ignored. For a polymorphic T, obj may point to a base that is not at
 * the object's start (a second base, a virtual one): if obj is not a
 * live object's start but lies in a live object's slot, the object's
 * start is asked of the object itself (dynamic_cast to void, which
 * needs no RTTI) and must be that slot's. Memory no live object holds is
 * never read: a base pointer to an object destroyed already is refused
 * as any other pointer that is not a live object.
 */
template <class T, class Release>
void destroy_in_family(const lfp_family *fam, T *obj, Release release) noexcept
{
	void *start;
	const lfp_pool *pool;

	if (!obj)
		return;
	start = untyped(obj);
	pool = family_pool_of(fam, start);
	if constexpr (std::is_polymorphic_v<T>) {
		void *slot;

		if (!lfp_is_live(pool, start) &&
		    (slot = slot_start(pool, start)) && lfp_is_live(pool, slot) &&
		    dynamic_cast<const volatile void *>(obj) == slot)
			start = slot;
	}
	destroy_at(pool, obj, start, release);
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
		const char *what = nullptr;
		int err = open(cfg, &what);

		if (err)
			detail::fail(-err, what);
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
		const char *what = nullptr;

		if (out)
			return -EBUSY;
		return out.open(cfg, &what);
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
	 * nothing. Nothing for an empty pool.
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
	 * As the destructor, leaving the pool empty, to be made again by
	 * create: an engine's Shutdown(). Nothing for an empty pool.
	 * Thread safety and progress: as the destructor.
	 */
	void reset() noexcept
	{
		close();
	}

	/*
	 * Whether the pool holds a pool (is not empty).
	 * Thread safety: any thread. Progress: wait-free.
	 */
	explicit operator bool() const noexcept
	{
		return pool_ != nullptr;
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
	 * run its destructor twice (see lfp_free on racing releases). In an
	 * unchecked pool (LFP_F_UNCHECKED; T is then trivially
	 * destructible) a second destroy of one object is undefined, as a
	 * second lfp_free is: the pool may take it and hand the slot out
	 * twice.
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
	 * empty pool.
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
	 * stopped the walk, or -EINVAL if the pool is empty.
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
	 * live object's index is below it. 0 for a empty pool.
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

	/*
	 * Make the pool of an empty object from cfg, obj_size and align
	 * taken from T where left 0. Returns 0, or a negative errno value
	 * with *what naming the step that failed and the object still
	 * empty: the constructor throws it, create returns it.
	 */
	int open(const lfp_config &cfg, const char **what) noexcept
	{
		lfp_config c = cfg;
		lfp_pool *p = nullptr;
		int err;

		if (!c.obj_size)
			c.obj_size = sizeof(T);
		if (!c.align)
			c.align = alignof(T);
		if (c.obj_size < sizeof(T) || c.align % alignof(T)) {
			*what = "lfp::pool: lfp_config cannot hold a T";
			return -EINVAL;
		}
		/* close() walks the live objects for their destructors and
		 * destroy() asks lfp_is_live: an unchecked pool has neither. */
		if (!std::is_trivially_destructible_v<T> &&
		    (c.flags & LFP_F_UNCHECKED)) {
			*what = "lfp::pool: LFP_F_UNCHECKED needs a trivially "
				"destructible T";
			return -EINVAL;
		}
		err = lfp_create(&c, &p);
		if (err) {
			*what = "lfp::pool: lfp_create";
			return err;
		}
		state_ = new (std::nothrow) detail::pool_state(p);
		if (!state_) {
			lfp_destroy(p);
			*what = "lfp::pool: its state";
			return -ENOMEM;
		}
		pool_ = p;
		return 0;
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
		state_->native = nullptr;
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
			detail::fail(-err, "lfp::cache: lfp_cache_create");
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
		out.close();
		return out.open(p);
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
	 * the cache with it, or the cache is empty: then nothing.
	 * Thread safety: the cache's thread; after the pool's destruction
	 * or before it, not during it. Progress: as lfp_cache_destroy.
	 */
	~cache()
	{
		close();
	}

	/*
	 * As the destructor, leaving the cache empty, to be made again by
	 * create.
	 * Thread safety and progress: as the destructor.
	 */
	void reset() noexcept
	{
		close();
	}

	/*
	 * Whether the cache holds a C cache: false if it is empty, and
	 * false once its pool<T> is destroyed (orphaned).
	 * Thread safety: any thread, not during the destruction of the
	 * cache's pool. Progress: wait-free.
	 */
	explicit operator bool() const noexcept
	{
		return state_ && state_->native;
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
	 * stale or of another pool, or the cache is empty.
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
	 * gauges. Zeroes for a empty cache.
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
	/*
	 * Make the C cache of an empty object for p. Returns 0, or -EINVAL
	 * (p is empty) or -ENOMEM with the object still empty.
	 */
	int open(pool<T> &p) noexcept
	{
		if (!p)
			return -EINVAL;
		cache_ = lfp_cache_create(p.native());
		if (!cache_)
			return -ENOMEM;
		pool_ = p.native();
		state_ = p.state_;
		state_->hold();
		return 0;
	}

	void close() noexcept
	{
		if (!state_)
			return;
		if (state_->native)
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
 * The deleter of lfp::family_unique_ptr: destroys the object and releases
 * its slot into the family it names (lfp_family_free). A
 * default-constructed deleter names no family: it refuses every object
 * and runs no destructor. One for U converts to one for T when U * does
 * to T *, as std::default_delete does, so a family_unique_ptr<Derived>
 * moves into a family_unique_ptr<Base> (whose destructor must then be
 * virtual, as for delete).
 * Thread safety: any thread. Progress: lock-free, plus ~T.
 */
template <class T> struct family_deleter {
	lfp_family *owner = nullptr;

	family_deleter() noexcept = default;
	family_deleter(lfp_family *f) noexcept : owner(f)
	{
	}
	template <class U, class = std::enable_if_t<std::is_convertible_v<U *, T *>>>
	family_deleter(const family_deleter<U> &other) noexcept
		: owner(other.owner)
	{
	}

	void operator()(T *obj) const noexcept
	{
		lfp_family *f = owner;

		detail::destroy_in_family(
			f, obj, [f](void *slot) { lfp_family_free(f, slot); });
	}
};

/* A T made by family::make_unique, destroyed into its family. */
template <class T>
using family_unique_ptr = std::unique_ptr<T, family_deleter<T>>;

/*
 * The deleter of lfp::family_cache_unique_ptr: destroys the object and
 * releases its slot into the family cache it names
 * (lfp_family_cache_free), so it runs on the cache's thread, before the
 * cache goes. A default-constructed deleter refuses every object. It
 * converts as family_deleter does.
 * Thread safety: the cache's thread. Progress: as lfp_family_cache_free,
 * plus ~T.
 */
template <class T> struct family_cache_deleter {
	lfp_family_cache *owner = nullptr;
	lfp_family *fam = nullptr; /* the cache's */

	family_cache_deleter() noexcept = default;
	family_cache_deleter(lfp_family_cache *c, lfp_family *f) noexcept
		: owner(c), fam(f)
	{
	}
	template <class U, class = std::enable_if_t<std::is_convertible_v<U *, T *>>>
	family_cache_deleter(const family_cache_deleter<U> &other) noexcept
		: owner(other.owner), fam(other.fam)
	{
	}

	void operator()(T *obj) const noexcept
	{
		lfp_family_cache *c = owner;

		detail::destroy_in_family(fam, obj,
				[c](void *slot) {
					lfp_family_cache_free(c, slot);
				});
	}
};

/* A T made by family_cache::make_unique, destroyed into that cache. */
template <class T>
using family_cache_unique_ptr = std::unique_ptr<T, family_cache_deleter<T>>;

/*
 * A family of size classes (lfp_family_create): one pool per object size,
 * allocation by size from the smallest class that fits, release by
 * address. Untyped at its core (alloc and free, as the C calls), with
 * make<T> and destroy<T> that build and destroy a T in the class that
 * holds sizeof(T), so objects of many types share one family. Move-only.
 *
 * When it goes, its memory goes with it (lfp_family_destroy), with the
 * family caches still made of it, whose destructors then do nothing.
 * Unlike pool<T>, it does not know the types of the objects still live,
 * so it runs no destructor: destroy what needs destroying first.
 *
 * An unchecked family (LFP_F_UNCHECKED in lfp_family_config.flags) is
 * taken with objects of any type, but cannot tell a live object from a
 * destroyed one: there a destroy of an object destroyed already is
 * undefined, as a second lfp_family_free is (it may run the destructor
 * again, read a dead object's vtable through a base pointer, and hand
 * the slot out twice), where a checked family leaves it alone.
 * lfp::family_unique_ptr and lfp::family_cache_unique_ptr of it must be
 * gone by then.
 *
 * Empty (default-constructed, moved from, reset, or left so by a create
 * that failed), it owns nothing, and every member does what the C call
 * does with a NULL family: alloc and make give nullptr and make_unique
 * an empty pointer; free returns -EINVAL; destroy runs no destructor and
 * releases nothing (counted nowhere); stats gives zeroes, classes,
 * class_size and alignment 0, class_pool and native nullptr, class_for
 * and class_of -EINVAL; a family_cache of it cannot be made (EINVAL).
 * Destroying it, assigning to it or reset() does nothing more.
 */
class family
{
public:
	/*
	 * An empty family, to be filled by create (or assigned to).
	 * Thread safety: any thread. Progress: wait-free.
	 */
	constexpr family() noexcept = default;

	/*
	 * A family of sizes.size() classes, class i holding capacities[i]
	 * objects of sizes[i] bytes (sizes strictly increasing), every other
	 * setting at its default (see struct lfp_family_config).
	 * Throws std::system_error: EINVAL (the lists differ in length, or
	 * lfp_family_create refuses them), E2BIG (more than
	 * LFP_FAMILY_MAX_CLASSES), ENOMEM, and the other errors of
	 * lfp_family_create.
	 * Thread safety: any thread. Progress: blocking (maps memory).
	 */
	family(std::initializer_list<std::size_t> sizes,
	       std::initializer_list<std::uint32_t> capacities)
	{
		const char *what = nullptr;
		int err = open(sizes, capacities, &what);

		if (err)
			detail::fail(-err, what);
	}

	/*
	 * A family built from a full configuration (see struct
	 * lfp_family_config); cfg's arrays are read during the call only.
	 * Throws std::system_error with the errors of lfp_family_create.
	 * Thread safety: any thread. Progress: blocking (maps memory).
	 */
	explicit family(const lfp_family_config &cfg)
	{
		const char *what = nullptr;
		int err = open(cfg, &what);

		if (err)
			detail::fail(-err, what);
	}

	/*
	 * Make a family as family(sizes, capacities) or family(cfg) would,
	 * into out, without exceptions (see pool<T>::create).
	 * Returns 0, out then holding the family; -EBUSY if out holds a
	 * family already (it is left as it was: reset() it first); or the
	 * negative errno value the constructor would throw (-EINVAL, -E2BIG,
	 * -ENOMEM, and the other errors of lfp_family_create), out then left
	 * empty.
	 * Thread safety: any thread; out is the caller's alone during the
	 * call. Progress: blocking (maps memory).
	 */
	static int create(std::initializer_list<std::size_t> sizes,
			  std::initializer_list<std::uint32_t> capacities,
			  family &out) noexcept
	{
		const char *what = nullptr;

		if (out)
			return -EBUSY;
		return out.open(sizes, capacities, &what);
	}
	static int create(const lfp_family_config &cfg, family &out) noexcept
	{
		const char *what = nullptr;

		if (out)
			return -EBUSY;
		return out.open(cfg, &what);
	}

	family(family &&other) noexcept
		: fam_(std::exchange(other.fam_, nullptr)),
		  state_(std::exchange(other.state_, nullptr)),
		  align_(std::exchange(other.align_, 0))
	{
	}

	family &operator=(family &&other) noexcept
	{
		if (this != &other) {
			close();
			fam_ = std::exchange(other.fam_, nullptr);
			state_ = std::exchange(other.state_, nullptr);
			align_ = std::exchange(other.align_, 0);
		}
		return *this;
	}

	family(const family &) = delete;
	family &operator=(const family &) = delete;

	/*
	 * Destroy the family (lfp_family_destroy) and with it its pools and
	 * the family caches still made of it. Objects still live are not
	 * destroyed, only their memory returned. Nothing for an empty
	 * family.
	 * Thread safety: no other thread may use the family or its caches
	 * during or after it. Progress: blocking.
	 */
	~family()
	{
		close();
	}

	/*
	 * As the destructor, leaving the family empty, to be made again by
	 * create. Nothing for an empty family.
	 * Thread safety and progress: as the destructor.
	 */
	void reset() noexcept
	{
		close();
	}

	/*
	 * Whether the family holds a family (is not empty).
	 * Thread safety: any thread. Progress: wait-free.
	 */
	explicit operator bool() const noexcept
	{
		return fam_ != nullptr;
	}

	/*
	 * Raw memory of at least size bytes, aligned to alignment()
	 * (lfp_family_alloc, through the thread's implicit cache of the
	 * class).
	 * Returns it, or nullptr if every class it may come from is
	 * exhausted, size is 0 or larger than the largest class, or the
	 * family is empty.
	 * Thread safety: any thread. Progress: as lfp_family_alloc.
	 */
	void *alloc(std::size_t size) noexcept
	{
		return fam_ ? lfp_family_alloc(fam_, size) : nullptr;
	}

	/*
	 * Release memory from alloc (lfp_family_free): 0, or -EINVAL,
	 * -EFAULT, -EALREADY as lfp_family_free returns them (-EINVAL also
	 * for a empty family).
	 * Thread safety: any thread. Progress: lock-free.
	 */
	int free(void *obj) noexcept
	{
		return fam_ ? lfp_family_free(fam_, obj) : -EINVAL;
	}

	/*
	 * Allocate from the smallest class that holds sizeof(T) (or a
	 * larger one, as cfg.spill allows) and build T(args...) there.
	 * Returns the object, or nullptr if the classes it may come from
	 * are exhausted, T is larger than the largest class or more aligned
	 * than alignment(), or the family is empty. If the constructor
	 * throws, the memory is released and the exception propagates.
	 * Thread safety: any thread. Progress: as lfp_family_alloc, plus
	 * T's constructor.
	 */
	template <class T, class... Args>
	T *make(Args &&...args) noexcept(
		std::is_nothrow_constructible_v<T, Args...>)
	{
		lfp_family *f = fam_;

		if (alignof(T) > align_)
			return nullptr;
		return detail::construct<T>(
			alloc(sizeof(T)),
			[f](void *slot) { lfp_family_free(f, slot); },
			std::forward<Args>(args)...);
	}

	/*
	 * Destroy obj and release its memory (lfp_family_free), from any
	 * thread. obj may point to a base of the object's type, also one
	 * not at its start (a second or a virtual base; the destructor must
	 * then be virtual, as for delete): the object's start is then asked
	 * of the object, but only once the slot obj lies in is known, by
	 * its address, to hold a live object, so a pointer to an object
	 * destroyed already is never read. nullptr is ignored. A pointer that is not a
	 * live object of the family (foreign, not the start of an object,
	 * destroyed already) is left alone, its destructor not run, and
	 * refused by the release (counted as lfp_family_free counts it; by
	 * nothing for a empty family); as with pool<T>::destroy, two
	 * destroys of one object that race may both run its destructor.
	 * In an unchecked family a destroy of an object destroyed already
	 * is undefined instead (see the class).
	 * Thread safety: any thread. Progress: as lfp_family_free, plus ~T.
	 */
	template <class T> void destroy(T *obj) noexcept
	{
		lfp_family *f = fam_;

		detail::destroy_in_family(f, obj,
				[f](void *slot) { lfp_family_free(f, slot); });
	}

	/*
	 * As make, owned by an lfp::family_unique_ptr whose deleter destroys
	 * the object into this family.
	 * Returns the pointer, empty if make gives nullptr.
	 * Thread safety and progress: as make.
	 */
	template <class T, class... Args>
	lfp::family_unique_ptr<T> make_unique(Args &&...args) noexcept(
		std::is_nothrow_constructible_v<T, Args...>)
	{
		T *obj = make<T>(std::forward<Args>(args)...);

		return lfp::family_unique_ptr<T>(obj, family_deleter<T>(fam_));
	}

	/*
	 * A snapshot of the family's counters (lfp_family_stats); zeroes
	 * for a empty family.
	 * Thread safety: any thread. Progress: wait-free, O(classes and
	 * their caches).
	 */
	lfp::family_stats stats() const noexcept
	{
		lfp::family_stats st{};

		lfp_family_stats(fam_, &st);
		return st;
	}

	/*
	 * The classes (lfp_family_classes), class i's object size
	 * (lfp_family_class_size) and pool (lfp_family_pool, for the
	 * per-class calls: handles, walks, trim), the class a size goes to
	 * (lfp_family_class: the index, or -EINVAL, -ERANGE) and the class
	 * an object is in (lfp_family_class_of: the index, or -EINVAL,
	 * -EFAULT); 0, nullptr or -EINVAL for a empty family.
	 * Thread safety: any thread. Progress: wait-free.
	 */
	std::uint32_t classes() const noexcept
	{
		return lfp_family_classes(fam_);
	}
	std::size_t class_size(std::uint32_t i) const noexcept
	{
		return lfp_family_class_size(fam_, i);
	}
	lfp_pool *class_pool(std::uint32_t i) const noexcept
	{
		return lfp_family_pool(fam_, i);
	}
	int class_for(std::size_t size) const noexcept
	{
		return lfp_family_class(fam_, size);
	}
	int class_of(const void *obj) const noexcept
	{
		return lfp_family_class_of(fam_, obj);
	}

	/* The alignment of every object (cfg.align, or
	 * alignof(std::max_align_t)); 0 for a empty family. */
	std::size_t alignment() const noexcept
	{
		return align_;
	}

	/*
	 * The C family, for every lfp_family_ call this class does not wrap.
	 * Thread safety: any thread. Progress: wait-free.
	 */
	lfp_family *native() const noexcept
	{
		return fam_;
	}

private:
	/*
	 * Make the family of an empty object. Returns 0, or a negative
	 * errno value with *what naming the step that failed and the object
	 * still empty: the constructors throw it, create returns it.
	 */
	int open(std::initializer_list<std::size_t> sizes,
		 std::initializer_list<std::uint32_t> capacities,
		 const char **what) noexcept
	{
		lfp_family_config c{};

		if (sizes.size() != capacities.size()) {
			*what = "lfp::family: as many capacities as sizes";
			return -EINVAL;
		}
		if (sizes.size() > LFP_FAMILY_MAX_CLASSES) {
			*what = "lfp::family: too many classes";
			return -E2BIG;
		}
		c.sizes = sizes.begin();
		c.capacities = capacities.begin();
		c.classes = static_cast<std::uint32_t>(sizes.size());
		return open(c, what);
	}

	int open(const lfp_family_config &cfg, const char **what) noexcept
	{
		lfp_family *f = nullptr;
		int err = lfp_family_create(&cfg, &f);

		if (err) {
			*what = "lfp::family: lfp_family_create";
			return err;
		}
		state_ = new (std::nothrow) detail::family_state(f);
		if (!state_) {
			lfp_family_destroy(f);
			*what = "lfp::family: its state";
			return -ENOMEM;
		}
		fam_ = f;
		align_ = cfg.align ? cfg.align : alignof(std::max_align_t);
		return 0;
	}

	void close() noexcept
	{
		if (!fam_)
			return;
		lfp_family_destroy(fam_);
		fam_ = nullptr;
		/* lfp_family_destroy took the family caches: theirs must
		 * not. */
		state_->native = nullptr;
		state_->let_go();
		state_ = nullptr;
		align_ = 0;
	}

	friend class family_cache;

	lfp_family *fam_ = nullptr;
	detail::family_state *state_ = nullptr; /* with fam_, or both null */
	std::size_t align_ = 0;
};

/*
 * An explicit family cache (lfp_family_cache_create): one explicit cache
 * per class in one object, for a worker with a fixed identity, which
 * allocates by size and releases by address with no lookup of its
 * caches. One thread uses it at a time; objects it makes may be
 * destroyed anywhere, and it may destroy any object of the family.
 * Move-only. It may outlive its family, whose destruction takes the C
 * family cache with it: after that it is orphaned, false as a bool, and
 * may only be destroyed (which does nothing more), reset, moved or
 * assigned to, or made again by create.
 *
 * Empty (default-constructed, moved from, reset, or left so by a create
 * that failed), it holds nothing, and every member does what the C call
 * does with a NULL family cache: alloc and make give nullptr and
 * make_unique an empty pointer; free returns -EINVAL; destroy runs no
 * destructor and releases nothing (counted nowhere); flush does
 * nothing; class_cache and native are nullptr. Destroying it, assigning
 * to it or reset() does nothing more.
 */
class family_cache
{
public:
	/*
	 * An empty family cache, to be filled by create (or assigned to).
	 * Thread safety: any thread. Progress: wait-free.
	 */
	constexpr family_cache() noexcept = default;

	/*
	 * A family cache of f.
	 * Throws std::system_error: EINVAL (f is empty), ENOMEM.
	 * Thread safety: any thread. Progress: as lfp_family_cache_create.
	 */
	explicit family_cache(family &f)
	{
		int err = open(f);

		if (err)
			detail::fail(-err, "lfp::family_cache: "
					   "lfp_family_cache_create");
	}

	/*
	 * Make a family cache of f as family_cache(f) would, into out,
	 * without exceptions (see pool<T>::create).
	 * Returns 0, out then holding the family cache; -EBUSY if out holds
	 * one already (it is left as it was; an orphaned one does not
	 * count, and is let go); or -EINVAL (f is empty) or -ENOMEM, out
	 * then left empty.
	 * Thread safety: any thread; out is the caller's alone during the
	 * call, and f is not being destroyed. Progress: as
	 * lfp_family_cache_create.
	 */
	static int create(family &f, family_cache &out) noexcept
	{
		if (out)
			return -EBUSY;
		out.close();
		return out.open(f);
	}

	family_cache(family_cache &&other) noexcept
		: fc_(std::exchange(other.fc_, nullptr)),
		  fam_(std::exchange(other.fam_, nullptr)),
		  state_(std::exchange(other.state_, nullptr)),
		  align_(std::exchange(other.align_, 0))
	{
	}

	family_cache &operator=(family_cache &&other) noexcept
	{
		if (this != &other) {
			close();
			fc_ = std::exchange(other.fc_, nullptr);
			fam_ = std::exchange(other.fam_, nullptr);
			state_ = std::exchange(other.state_, nullptr);
			align_ = std::exchange(other.align_, 0);
		}
		return *this;
	}

	family_cache(const family_cache &) = delete;
	family_cache &operator=(const family_cache &) = delete;

	/*
	 * Give the cached slots back and give the family cache up
	 * (lfp_family_cache_destroy), unless the family is gone already and
	 * took it along, or the cache is empty: then nothing.
	 * Thread safety: the cache's thread; after the family's destruction
	 * or before it, not during it. Progress: as lfp_family_cache_destroy.
	 */
	~family_cache()
	{
		close();
	}

	/*
	 * As the destructor, leaving the family cache empty, to be made
	 * again by create.
	 * Thread safety and progress: as the destructor.
	 */
	void reset() noexcept
	{
		close();
	}

	/*
	 * Whether the family cache holds a C family cache: false if it is
	 * empty, and false once its family is destroyed (orphaned).
	 * Thread safety: any thread, not during the destruction of the
	 * family. Progress: wait-free.
	 */
	explicit operator bool() const noexcept
	{
		return state_ && state_->native;
	}

	/*
	 * As family::alloc and family::free, through the cache
	 * (lfp_family_cache_alloc, lfp_family_cache_free).
	 * Thread safety: the cache's thread. Progress: as those calls.
	 */
	void *alloc(std::size_t size) noexcept
	{
		return fc_ ? lfp_family_cache_alloc(fc_, size) : nullptr;
	}
	int free(void *obj) noexcept
	{
		return fc_ ? lfp_family_cache_free(fc_, obj) : -EINVAL;
	}

	/*
	 * As family::make, through the cache.
	 * Thread safety: the cache's thread. Progress: as
	 * lfp_family_cache_alloc, plus T's constructor.
	 */
	template <class T, class... Args>
	T *make(Args &&...args) noexcept(
		std::is_nothrow_constructible_v<T, Args...>)
	{
		lfp_family_cache *c = fc_;

		if (alignof(T) > align_)
			return nullptr;
		return detail::construct<T>(
			alloc(sizeof(T)),
			[c](void *slot) { lfp_family_cache_free(c, slot); },
			std::forward<Args>(args)...);
	}

	/*
	 * As family::destroy, releasing into the cache.
	 * Thread safety: the cache's thread. Progress: as
	 * lfp_family_cache_free, plus ~T.
	 */
	template <class T> void destroy(T *obj) noexcept
	{
		lfp_family_cache *c = fc_;

		detail::destroy_in_family(fam_, obj,
				[c](void *slot) {
					lfp_family_cache_free(c, slot);
				});
	}

	/*
	 * As make, owned by an lfp::family_cache_unique_ptr whose deleter
	 * destroys the object into this cache: the pointer must be reset or
	 * dropped on the cache's thread, before the cache goes. For a
	 * pointer any thread may drop, take family::make_unique.
	 * Thread safety and progress: as make.
	 */
	template <class T, class... Args>
	lfp::family_cache_unique_ptr<T> make_unique(Args &&...args) noexcept(
		std::is_nothrow_constructible_v<T, Args...>)
	{
		T *obj = make<T>(std::forward<Args>(args)...);

		return lfp::family_cache_unique_ptr<T>(
			obj, family_cache_deleter<T>(fc_, fam_));
	}

	/*
	 * Give every cached slot back to the classes' pools
	 * (lfp_family_cache_flush), before the worker goes idle, say.
	 * Thread safety: the cache's thread. Progress: as
	 * lfp_family_cache_flush.
	 */
	void flush() noexcept
	{
		lfp_family_cache_flush(fc_);
	}

	/*
	 * Class i's explicit cache inside this one
	 * (lfp_family_cache_class), for lfp_cache_stats and the bulk calls;
	 * nullptr if i is out of range or the cache is empty. It
	 * belongs to the family cache: never destroy it by itself.
	 * Thread safety: any thread. Progress: wait-free.
	 */
	lfp_cache *class_cache(std::uint32_t i) const noexcept
	{
		return lfp_family_cache_class(fc_, i);
	}

	/* The C family cache. Thread safety: any thread. */
	lfp_family_cache *native() const noexcept
	{
		return fc_;
	}

private:
	/*
	 * Make the C family cache of an empty object for f. Returns 0, or
	 * -EINVAL (f is empty) or -ENOMEM with the object still empty.
	 */
	int open(family &f) noexcept
	{
		if (!f)
			return -EINVAL;
		fc_ = lfp_family_cache_create(f.fam_);
		if (!fc_)
			return -ENOMEM;
		fam_ = f.fam_;
		align_ = f.align_;
		state_ = f.state_;
		state_->hold();
		return 0;
	}

	void close() noexcept
	{
		if (!state_)
			return;
		if (state_->native)
			lfp_family_cache_destroy(fc_);
		state_->let_go();
		state_ = nullptr;
		fc_ = nullptr;
		fam_ = nullptr;
		align_ = 0;
	}

	lfp_family_cache *fc_ = nullptr;
	lfp_family *fam_ = nullptr;
	detail::family_state *state_ = nullptr; /* shared with the family */
	std::size_t align_ = 0;
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

/*
 * A std::pmr::memory_resource over a family of its own: a block of up to
 * the largest class's size, aligned to at most alignof(std::max_align_t),
 * comes from the smallest class that holds it (lfp_family_alloc, through
 * the thread's implicit caches), so containers of many element and node
 * sizes share one resource; every other request goes to upstream: larger
 * or more aligned blocks, and any block while its classes are exhausted.
 * A block goes back where it came from, told by its address
 * (lfp_family_class_of): a family block whatever size the caller passes,
 * an upstream block with the caller's size and alignment, which must be
 * those it was allocated with. A block of 0 bytes comes from upstream.
 * Equal only to itself. Neither copyable nor movable (containers hold
 * its address).
 *
 * Its allocate throws only what upstream throws; family blocks never
 * throw. When it goes, the blocks of its family go with it; blocks
 * upstream still holds are upstream's.
 * Thread safety: any thread, if upstream is thread-safe (the default
 * resource is). Progress: lock-free for family blocks (as
 * lfp_family_alloc and lfp_family_free); upstream's for the rest.
 */
class family_resource : public std::pmr::memory_resource
{
public:
	/*
	 * A resource whose family has a class of capacities[i] blocks of
	 * sizes[i] bytes for each i (sizes strictly increasing), in front of
	 * upstream, which must outlive it.
	 * Throws std::system_error: EINVAL (upstream nullptr, or as
	 * lfp::family), E2BIG, ENOMEM, and the other errors of
	 * lfp_family_create.
	 * Thread safety: any thread. Progress: blocking (maps memory).
	 */
	family_resource(std::initializer_list<std::size_t> sizes,
			std::initializer_list<std::uint32_t> capacities,
			std::pmr::memory_resource *upstream =
				std::pmr::get_default_resource())
		: fam_(sizes, capacities), upstream_(upstream)
	{
		if (!upstream)
			detail::fail(EINVAL, "lfp::family_resource: no upstream");
		largest_ = fam_.class_size(fam_.classes() - 1);
	}

	family_resource(const family_resource &) = delete;
	family_resource &operator=(const family_resource &) = delete;

	/* Thread safety: nobody may use the resource during or after it. */
	~family_resource() override = default;

	/*
	 * The largest block and the strictest alignment the family serves,
	 * the resource behind it, its counters (lfp_family_stats), the C
	 * family.
	 * Thread safety: any thread. Progress: wait-free (stats: O(classes
	 * and their caches)).
	 */
	std::size_t largest_block() const noexcept
	{
		return largest_;
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
	lfp::family_stats stats() const noexcept
	{
		return fam_.stats();
	}
	lfp_family *native() const noexcept
	{
		return fam_.native();
	}

protected:
	void *do_allocate(std::size_t bytes, std::size_t align) override
	{
		/* bytes - 1: a block of 0 bytes goes upstream too, where the
		 * family would count it as a bad size. */
		if (bytes - 1 < largest_ && align <= alignment()) {
			void *p = fam_.alloc(bytes);

			if (p)
				return p;
		}
		return upstream_->allocate(bytes, align);
	}

	void do_deallocate(void *p, std::size_t bytes,
			   std::size_t align) override
	{
		/* By address, not by size: a small block may have come
		 * from upstream while its class was exhausted. */
		if (fam_.class_of(p) >= 0)
			fam_.free(p);
		else
			upstream_->deallocate(p, bytes, align);
	}

	bool do_is_equal(
		const std::pmr::memory_resource &other) const noexcept override
	{
		return this == &other;
	}

private:
	lfp::family fam_;
	std::pmr::memory_resource *upstream_;
	std::size_t largest_ = 0;
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
