/*
 * lfpool.hpp: the C++ interface to lfpool (C++17, header-only).
 *
 * Typed wrappers over the C API of lfpool.h, which stays the one
 * implementation: every operation below is a call of an lfp_ function and
 * keeps its promises (thread safety, progress, errors, hooks, policies).
 * Link as a C program does: c++ -std=c++17 app.cc $(pkg-config --cflags
 * --libs lfpool).
 *
 *   lfp::pool<T>         owns a pool of T: make/destroy, make_unique
 *   lfp::cache<T>        one worker's explicit cache of a pool<T>
 *   lfp::handle<T>       a typed generational handle, hashable
 *   lfp::unique_ptr<T>   a std::unique_ptr that destroys into its pool
 *   lfp::pool_resource   a std::pmr::memory_resource of fixed-size blocks
 *
 * Conventions used below:
 * - Making a pool, a cache or a resource that fails throws
 *   std::system_error whose code() is the errno value of the C call, in
 *   std::generic_category() (capacity 0: EINVAL, no memory: ENOMEM).
 *   Built without exceptions (-fno-exceptions) it prints the error to
 *   stderr and aborts instead.
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
#include <cstdint>
#include <functional>
#include <memory>
#include <memory_resource>
#include <new>
#include <type_traits>
#include <utility>

#ifdef __cpp_exceptions
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
	constexpr std::uint32_t index() const noexcept
	{
		return static_cast<std::uint32_t>(h_.bits);
	}
	constexpr std::uint32_t generation() const noexcept
	{
		return static_cast<std::uint32_t>(h_.bits >> 32);
	}
	/* Whether the handle is not null; it may still be stale. */
	constexpr explicit operator bool() const noexcept
	{
		return h_.bits != 0;
	}

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
 * A pool of T: owns an lfp_pool whose objects are T, sized and aligned
 * for T. Move-only; a moved-from pool owns nothing, makes nothing
 * (nullptr) and refuses every object.
 *
 * When the pool goes, the objects still live are destroyed (their
 * destructors run, in slot order) and its memory is returned; explicit
 * caches and lfp::unique_ptr of it must be gone first. Every live slot is
 * taken for a T then: a slot allocated through native() with lfp_alloc
 * must hold a T by that time (or T be trivially destructible).
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
	}

	pool(pool &&other) noexcept : pool_(std::exchange(other.pool_, nullptr))
	{
	}

	pool &operator=(pool &&other) noexcept
	{
		if (this != &other) {
			close();
			pool_ = std::exchange(other.pool_, nullptr);
		}
		return *this;
	}

	pool(const pool &) = delete;
	pool &operator=(const pool &) = delete;

	/*
	 * Destroy the live objects and the pool (lfp_destroy).
	 * Thread safety: no other thread may use the pool during or after
	 * it. Progress: blocking.
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
	struct lfp_stats stats() const noexcept
	{
		struct lfp_stats st {};

		lfp_stats(pool_, &st);
		return st;
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

	static int destroy_visit(void *obj, lfp_handle, void *)
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
	}

	lfp_pool *pool_ = nullptr;
};

/*
 * An explicit cache of a pool<T> (lfp_cache_create), for a worker with a
 * fixed identity: it allocates through its own slots with no lookup. One
 * thread uses it at a time; it may move to another thread if the hand-over
 * synchronises. Objects it makes may be destroyed anywhere (by the pool or
 * another cache), and it may destroy any object of the pool. Move-only;
 * destroy it before its pool.
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
	}

	cache(cache &&other) noexcept
		: cache_(std::exchange(other.cache_, nullptr)),
		  pool_(std::exchange(other.pool_, nullptr))
	{
	}

	cache &operator=(cache &&other) noexcept
	{
		if (this != &other) {
			lfp_cache_destroy(cache_);
			cache_ = std::exchange(other.cache_, nullptr);
			pool_ = std::exchange(other.pool_, nullptr);
		}
		return *this;
	}

	cache(const cache &) = delete;
	cache &operator=(const cache &) = delete;

	/*
	 * Give the cached slots back and give the cache up
	 * (lfp_cache_destroy).
	 * Thread safety: the cache's thread. Progress: as lfp_cache_destroy.
	 */
	~cache()
	{
		lfp_cache_destroy(cache_);
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
	lfp_cache *cache_ = nullptr;
	lfp_pool *pool_ = nullptr;
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
	struct lfp_stats stats() const noexcept
	{
		struct lfp_stats st {};

		lfp_stats(pool_, &st);
		return st;
	}

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
