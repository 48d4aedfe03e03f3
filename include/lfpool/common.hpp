/* SPDX-License-Identifier: MIT */
/*
 * lfpool/common.hpp: what the pieces of lfpool.hpp share. Part of
 * lfpool.hpp's API, normally reached through it; each of the other pieces
 * includes it first, so it is seldom named by a program.
 *
 * It holds lfp::stats and lfp::family_stats, which every class's stats()
 * returns, and the helpers of lfp::detail that pools and families both
 * use: failing a setup (throw, or abort without exceptions), building an
 * object in a slot and destroying one there, the state an owner shares
 * with its caches, and the move-only skeleton the classes are made of,
 * with the opening and closing of owners and caches. lfp::detail is not
 * API.
 */
#ifndef LFPOOL_COMMON_HPP
#define LFPOOL_COMMON_HPP

#if __cplusplus < 201703L
#error "lfpool.hpp needs C++17 or later (-std=c++17)"
#endif

#include <lfpool.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

#ifdef __cpp_exceptions
#include <exception>
#include <system_error>
#else
#include <cstdlib>
#endif

namespace lfp
{

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
 * Why a setup call failed: what names the class and the step
 * ("lfp::pool<T>: lfp_create"), field the field of the configuration at
 * fault with its value, if one is ("capacity 0"), else "".
 */
struct failure {
	const char *what = nullptr;
	char field[64] = {};
};

/* A field lfp_config_fault or lfp_family_config_fault names: its value
 * in v, if it has a number for one. */
template <class Config>
bool shared_field(const Config &c, const char *f, unsigned long long &v)
{
	if (!std::strcmp(f, "align"))
		v = c.align;
	else if (!std::strcmp(f, "flags"))
		v = c.flags;
	else if (!std::strcmp(f, "exhaust"))
		v = c.exhaust;
	else if (!std::strcmp(f, "cache_size"))
		v = c.cache_size;
	else if (!std::strcmp(f, "batch_size"))
		v = c.batch_size;
	else
		return false;
	return true;
}
inline bool field_value(const lfp_config &c, const char *f,
			unsigned long long &v)
{
	if (!std::strcmp(f, "obj_size"))
		v = c.obj_size;
	else if (!std::strcmp(f, "capacity"))
		v = c.capacity;
	else if (!std::strcmp(f, "max_capacity"))
		v = c.max_capacity;
	else if (!std::strcmp(f, "memory_size"))
		v = c.memory_size;
	else
		return shared_field(c, f, v);
	return true;
}
inline bool field_value(const lfp_family_config &c, const char *f,
			unsigned long long &v)
{
	if (!std::strcmp(f, "classes"))
		v = c.classes;
	else
		return shared_field(c, f, v);
	return true;
}

/* Field f of c into why->field: its name and its number ("capacity 0",
 * "flags 0x80000000"), or its name alone (a pointer, an array). */
template <class Config>
void note_field(const Config &c, const char *f, failure *why) noexcept
{
	unsigned long long v = 0;

	if (!f)
		return;
	if (!field_value(c, f, v))
		std::snprintf(why->field, sizeof(why->field), "%s", f);
	else if (!std::strcmp(f, "flags"))
		std::snprintf(why->field, sizeof(why->field), "%s %#llx", f, v);
	else
		std::snprintf(why->field, sizeof(why->field), "%s %llu", f, v);
}

/* After lfp_create or lfp_family_create refused c: the field at fault, as
 * the C library names it, into why->field (nothing if none is). */
inline void note_fault(const lfp_config &c, failure *why) noexcept
{
	note_field(c, lfp_config_fault(&c), why);
}
inline void note_fault(const lfp_family_config &c, failure *why) noexcept
{
	note_field(c, lfp_family_config_fault(&c), why);
}

/*
 * A setup call failed with errno value err: throw, or, without exceptions,
 * say so and abort, in the same words: what, the field at fault if any,
 * and lfp_strerror's text, "lfp::pool<T>: lfp_create: capacity 0: invalid
 * argument: ...", which std::system_error's what() follows with the
 * errno value's own text (": Invalid argument"), as the line printed
 * before the abort does. Only setup (constructors) comes here, never an
 * allocation.
 */
[[noreturn]] inline void fail(int err, const char *what,
			      const char *field = nullptr)
{
	char msg[512];

	if (field && *field)
		std::snprintf(msg, sizeof(msg), "%s: %s: %s", what, field,
			      lfp_strerror(err));
	else
		std::snprintf(msg, sizeof(msg), "%s: %s", what,
			      lfp_strerror(err));
#ifdef __cpp_exceptions
	throw std::system_error(err, std::generic_category(), msg);
#else
	std::fprintf(stderr, "%s: %s\n", msg, std::strerror(err));
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
		 * after their reads and writes of native.
		 * Unchecked on the C11 model: the checks compile the
		 * library's C units, and this is the usual count of shared
		 * ownership, ordered as std::shared_ptr's implementations
		 * order theirs. */
		if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
			delete this;
	}
};
using pool_state = owner_state<lfp_pool>;
using family_state = owner_state<lfp_family>;

/*
 * The move-only skeleton of pool<T>, cache<T>, family, family_cache and
 * pool_resource, written once. S is what one of them holds: plain
 * pointers and sizes, all zero in S{}, which holds nothing, and
 * S::close(), which gives up what S holds and does nothing for S{}.
 * owned<S> closes S when it goes, when it is reset and before it is
 * assigned to, and leaves S{} behind when it is moved from; the classes
 * made of it say what they hold and how to give it up, and default the
 * rest. It derives from S so that they read S's fields by name, and adds
 * none: an owned<S> has S's size and layout.
 */
template <class S> class owned : public S
{
public:
	constexpr owned() noexcept = default;

	owned(owned &&other) noexcept : S(std::exchange<S>(other, S{}))
	{
	}

	owned &operator=(owned &&other) noexcept
	{
		if (this != &other) {
			reset();
			static_cast<S &>(*this) = std::exchange<S>(other, S{});
		}
		return *this;
	}

	owned(const owned &) = delete;
	owned &operator=(const owned &) = delete;

	~owned()
	{
		reset();
	}

	/* Give up what S holds, and hold nothing. */
	void reset() noexcept
	{
		S::close();
		static_cast<S &>(*this) = S{};
	}
};

/*
 * The close() of an owner's S (pool<T>'s, family's): give up native
 * through destroy_fn (lfp_destroy, lfp_family_destroy), which takes its
 * caches' C caches with it, so tell them so through state before letting
 * go of it. Nothing if native is nullptr.
 */
template <class O>
void close_owner(O *native, owner_state<O> *state,
		 void (*destroy_fn)(O *)) noexcept
{
	if (!native)
		return;
	destroy_fn(native);
	/* destroy_fn took the caches: theirs must not. */
	state->native = nullptr;
	state->let_go();
}

/*
 * The close() of a cache's S (cache<T>'s, family_cache's): give up
 * native through destroy_fn (lfp_cache_destroy, lfp_family_cache_destroy),
 * unless its owner is destroyed already and took it along, and let go
 * of the owner's state. Nothing if state is nullptr.
 */
template <class C, class O>
void close_cache(C *native, owner_state<O> *state,
		 void (*destroy_fn)(C *)) noexcept
{
	if (!state)
		return;
	if (state->native)
		destroy_fn(native);
	state->let_go();
}

/*
 * Make the C cache of an empty cache's S, c, through create_fn
 * (lfp_cache_create, lfp_family_cache_create), for the owner whose S is
 * o: c's native, owner and state then name the C cache, the owner's C
 * object and its state, which c now holds too. Returns 0, or -EINVAL (o
 * is empty) or -ENOMEM, with c still empty.
 */
template <class CacheS, class OwnerS, class C, class O>
int open_cache(CacheS &c, const OwnerS &o, C *(*create_fn)(O *)) noexcept
{
	if (!o.native)
		return -EINVAL;
	c.native = create_fn(o.native);
	if (!c.native)
		return -ENOMEM;
	c.owner = o.native;
	c.state = o.state;
	c.state->hold();
	return 0;
}

} // namespace detail

} // namespace lfp

#endif /* LFPOOL_COMMON_HPP */
