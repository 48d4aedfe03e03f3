/* SPDX-License-Identifier: MIT */
/*
 * lfpool/family.hpp: lfp::family, a family of size classes, and
 * lfp::family_cache, one worker's explicit cache of it, with the deleters
 * of the unique_ptrs they make. Part of lfpool.hpp's API, normally
 * reached through it (see there for the conventions: exceptions or
 * create(), -fno-exceptions); including it alone is supported too.
 */
#ifndef LFPOOL_FAMILY_HPP
#define LFPOOL_FAMILY_HPP

#include <lfpool/common.hpp>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace lfp
{

namespace detail
{

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

} // namespace detail

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
		detail::failure why;
		int err = open(sizes, capacities, &why);

		if (err)
			detail::fail(-err, why.what, why.field);
	}

	/*
	 * A family built from a full configuration (see struct
	 * lfp_family_config); cfg's arrays are read during the call only.
	 * Throws std::system_error with the errors of lfp_family_create.
	 * Thread safety: any thread. Progress: blocking (maps memory).
	 */
	explicit family(const lfp_family_config &cfg)
	{
		detail::failure why;
		int err = open(cfg, &why);

		if (err)
			detail::fail(-err, why.what, why.field);
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
		detail::failure why;

		if (out)
			return -EBUSY;
		return out.open(sizes, capacities, &why);
	}
	static int create(const lfp_family_config &cfg, family &out) noexcept
	{
		detail::failure why;

		if (out)
			return -EBUSY;
		return out.open(cfg, &why);
	}

	family(family &&other) noexcept = default;
	family &operator=(family &&other) noexcept = default;
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
	~family() = default;

	/*
	 * As the destructor, leaving the family empty, to be made again by
	 * create. Nothing for an empty family.
	 * Thread safety and progress: as the destructor.
	 */
	void reset() noexcept
	{
		own_.reset();
	}

	/*
	 * Whether the family holds a family (is not empty).
	 * Thread safety: any thread. Progress: wait-free.
	 */
	explicit operator bool() const noexcept
	{
		return own_.native != nullptr;
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
		lfp_family *f = native();

		return f ? lfp_family_alloc(f, size) : nullptr;
	}

	/*
	 * Release memory from alloc (lfp_family_free): 0, or -EINVAL,
	 * -EFAULT, -EALREADY as lfp_family_free returns them (-EINVAL also
	 * for a empty family).
	 * Thread safety: any thread. Progress: lock-free.
	 */
	int free(void *obj) noexcept
	{
		lfp_family *f = native();

		return f ? lfp_family_free(f, obj) : -EINVAL;
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
		lfp_family *f = native();

		if (alignof(T) > alignment())
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
		lfp_family *f = native();

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

		return lfp::family_unique_ptr<T>(obj,
						 family_deleter<T>(native()));
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

		lfp_family_stats(native(), &st);
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
		return lfp_family_classes(native());
	}
	std::size_t class_size(std::uint32_t i) const noexcept
	{
		return lfp_family_class_size(native(), i);
	}
	lfp_pool *class_pool(std::uint32_t i) const noexcept
	{
		return lfp_family_pool(native(), i);
	}
	int class_for(std::size_t size) const noexcept
	{
		return lfp_family_class(native(), size);
	}
	int class_of(const void *obj) const noexcept
	{
		return lfp_family_class_of(native(), obj);
	}

	/* The alignment of every object (cfg.align, or
	 * alignof(std::max_align_t)); 0 for a empty family. */
	std::size_t alignment() const noexcept
	{
		return own_.align;
	}

	/*
	 * The C family, for every lfp_family_ call this class does not wrap.
	 * Thread safety: any thread. Progress: wait-free.
	 */
	lfp_family *native() const noexcept
	{
		return own_.native;
	}

private:
	/*
	 * Make the family of an empty object. Returns 0, or a negative
	 * errno value with *why naming the step that failed and the field
	 * at fault, and the object still empty: the constructors throw it,
	 * create returns it.
	 */
	int open(std::initializer_list<std::size_t> sizes,
		 std::initializer_list<std::uint32_t> capacities,
		 detail::failure *why) noexcept
	{
		lfp_family_config c{};

		if (sizes.size() != capacities.size()) {
			why->what = "lfp::family: as many capacities as sizes";
			std::snprintf(why->field, sizeof(why->field),
				      "capacities %zu, sizes %zu",
				      capacities.size(), sizes.size());
			return -EINVAL;
		}
		if (sizes.size() > LFP_FAMILY_MAX_CLASSES) {
			why->what = "lfp::family: too many classes";
			std::snprintf(why->field, sizeof(why->field),
				      "classes %zu", sizes.size());
			return -E2BIG;
		}
		c.sizes = sizes.begin();
		c.capacities = capacities.begin();
		c.classes = static_cast<std::uint32_t>(sizes.size());
		return open(c, why);
	}

	int open(const lfp_family_config &cfg, detail::failure *why) noexcept
	{
		lfp_family *f = nullptr;
		int err = lfp_family_create(&cfg, &f);

		if (err) {
			why->what = "lfp::family: lfp_family_create";
			detail::note_fault(cfg, why);
			return err;
		}
		own_.state = new (std::nothrow) detail::family_state(f);
		if (!own_.state) {
			lfp_family_destroy(f);
			why->what = "lfp::family: its state";
			return -ENOMEM;
		}
		own_.native = f;
		own_.align = cfg.align ? cfg.align : alignof(std::max_align_t);
		return 0;
	}

	/* What a family holds, in detail::owned. */
	struct parts {
		/* Both set, or both null. */
		lfp_family *native = nullptr;
		detail::family_state *state = nullptr;
		std::size_t align = 0;

		void close() noexcept
		{
			detail::close_owner(native, state, lfp_family_destroy);
		}
	};

	friend class family_cache;

	detail::owned<parts> own_;
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
		out.reset();
		return out.open(f);
	}

	family_cache(family_cache &&other) noexcept = default;
	family_cache &operator=(family_cache &&other) noexcept = default;
	family_cache(const family_cache &) = delete;
	family_cache &operator=(const family_cache &) = delete;

	/*
	 * Give the cached slots back and give the family cache up
	 * (lfp_family_cache_destroy), unless the family is gone already and
	 * took it along, or the cache is empty: then nothing.
	 * Thread safety: the cache's thread; after the family's destruction
	 * or before it, not during it. Progress: as lfp_family_cache_destroy.
	 */
	~family_cache() = default;

	/*
	 * As the destructor, leaving the family cache empty, to be made
	 * again by create.
	 * Thread safety and progress: as the destructor.
	 */
	void reset() noexcept
	{
		own_.reset();
	}

	/*
	 * Whether the family cache holds a C family cache: false if it is
	 * empty, and false once its family is destroyed (orphaned).
	 * Thread safety: any thread, not during the destruction of the
	 * family. Progress: wait-free.
	 */
	explicit operator bool() const noexcept
	{
		return own_.state && own_.state->native;
	}

	/*
	 * As family::alloc and family::free, through the cache
	 * (lfp_family_cache_alloc, lfp_family_cache_free).
	 * Thread safety: the cache's thread. Progress: as those calls.
	 */
	void *alloc(std::size_t size) noexcept
	{
		lfp_family_cache *c = native();

		return c ? lfp_family_cache_alloc(c, size) : nullptr;
	}
	int free(void *obj) noexcept
	{
		lfp_family_cache *c = native();

		return c ? lfp_family_cache_free(c, obj) : -EINVAL;
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
		lfp_family_cache *c = native();

		if (alignof(T) > own_.align)
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
		lfp_family_cache *c = native();

		detail::destroy_in_family(own_.owner, obj,
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
			obj, family_cache_deleter<T>(native(), own_.owner));
	}

	/*
	 * Give every cached slot back to the classes' pools
	 * (lfp_family_cache_flush), before the worker goes idle, say.
	 * Thread safety: the cache's thread. Progress: as
	 * lfp_family_cache_flush.
	 */
	void flush() noexcept
	{
		lfp_family_cache_flush(native());
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
		return lfp_family_cache_class(native(), i);
	}

	/* The C family cache. Thread safety: any thread. */
	lfp_family_cache *native() const noexcept
	{
		return own_.native;
	}

private:
	/*
	 * Make the C family cache of an empty object for f. Returns 0, or
	 * -EINVAL (f is empty) or -ENOMEM with the object still empty.
	 */
	int open(family &f) noexcept
	{
		int err = detail::open_cache(own_, f.own_,
					     lfp_family_cache_create);

		if (!err)
			own_.align = f.own_.align;
		return err;
	}

	/* What a family_cache holds, in detail::owned. */
	struct parts {
		lfp_family_cache *native = nullptr;
		/* The family's C family, the state shared with it, and its
		 * alignment(). */
		lfp_family *owner = nullptr;
		detail::family_state *state = nullptr;
		std::size_t align = 0;

		void close() noexcept
		{
			detail::close_cache(native, state,
					    lfp_family_cache_destroy);
		}
	};

	detail::owned<parts> own_;
};

} // namespace lfp

#endif /* LFPOOL_FAMILY_HPP */
