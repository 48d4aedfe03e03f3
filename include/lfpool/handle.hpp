/* SPDX-License-Identifier: MIT */
/*
 * lfpool/handle.hpp: lfp::handle<T>, the typed generational handle, and
 * its std::hash. Part of lfpool.hpp's API, normally reached through it;
 * including it alone is supported too.
 */
#ifndef LFPOOL_HANDLE_HPP
#define LFPOOL_HANDLE_HPP

#include <lfpool/common.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>

namespace lfp
{

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

#endif /* LFPOOL_HANDLE_HPP */
