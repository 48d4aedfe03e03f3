/* SPDX-License-Identifier: MIT */
/*
 * lfpool/resource.hpp: lfp::pool_resource and lfp::family_resource,
 * std::pmr::memory_resource over a pool or a family of their own. Part of
 * lfpool.hpp's API, normally reached through it; including it alone is
 * supported too, and brings lfpool/family.hpp.
 */
#ifndef LFPOOL_RESOURCE_HPP
#define LFPOOL_RESOURCE_HPP

#include <lfpool/common.hpp>
#include <lfpool/family.hpp>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory_resource>

namespace lfp
{

namespace detail
{

/*
 * What pool_resource and family_resource share, R being either: a
 * std::pmr::memory_resource that serves a request from blocks of R's
 * own where it can, and every other from R's upstream_. R::take(bytes)
 * gives one of its blocks of at least bytes bytes, aligned to
 * alignment(), or nullptr (bytes is too large, or none is left);
 * R::give(p) releases p and returns true if p is one of its blocks, else
 * returns false. It holds nothing: each resource keeps its fields, in
 * its own order.
 */
template <class R> class front_resource : public std::pmr::memory_resource
{
public:
	/*
	 * The strictest alignment the resource's own blocks have (a request
	 * for more goes upstream), and the resource behind them.
	 * Thread safety: any thread. Progress: wait-free.
	 */
	static constexpr std::size_t alignment() noexcept
	{
		return alignof(std::max_align_t);
	}
	std::pmr::memory_resource *upstream_resource() const noexcept
	{
		return static_cast<const R *>(this)->upstream_;
	}

protected:
	void *do_allocate(std::size_t bytes, std::size_t align) override
	{
		if (align <= alignment()) {
			void *p = static_cast<R *>(this)->take(bytes);

			if (p)
				return p;
		}
		return upstream_resource()->allocate(bytes, align);
	}

	void do_deallocate(void *p, std::size_t bytes,
			   std::size_t align) override
	{
		/* By address, not by size: a small block may have come
		 * from upstream while R's own were exhausted. */
		if (!static_cast<R *>(this)->give(p))
			upstream_resource()->deallocate(p, bytes, align);
	}

	bool do_is_equal(
		const std::pmr::memory_resource &other) const noexcept override
	{
		return this == &other;
	}
};

} // namespace detail

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
class pool_resource : public detail::front_resource<pool_resource>
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
		err = lfp_create(&c, &pool_.native);
		if (err) {
			detail::failure why;

			detail::note_fault(c, &why);
			detail::fail(-err, "lfp::pool_resource: lfp_create",
				     why.field);
		}
		block_size_ = block_size;
	}

	pool_resource(const pool_resource &) = delete;
	pool_resource &operator=(const pool_resource &) = delete;

	/* Thread safety: nobody may use the resource during or after it. */
	~pool_resource() override = default;

	/*
	 * The largest block the pool serves, its counters, the C pool.
	 * Thread safety: any thread. Progress: wait-free (stats: O(caches)).
	 */
	std::size_t block_size() const noexcept
	{
		return block_size_;
	}

	/* Upstream's blocks are not in the counts. */
	lfp::stats stats() const noexcept
	{
		lfp::stats st{};

		lfp_stats(native(), &st);
		return st;
	}

	/* The C pool, for the lfp_ calls this class does not wrap. */
	lfp_pool *native() const noexcept
	{
		return pool_.native;
	}

private:
	friend class detail::front_resource<pool_resource>;

	void *take(std::size_t bytes) noexcept
	{
		return bytes <= block_size_ ? lfp_alloc(native()) : nullptr;
	}

	bool give(void *p) noexcept
	{
		if (!lfp_owns(native(), p))
			return false;
		lfp_free(native(), p);
		return true;
	}

	/* What pool_resource holds, in detail::owned. */
	struct parts {
		lfp_pool *native = nullptr;

		void close() noexcept
		{
			lfp_destroy(native);
		}
	};

	std::pmr::memory_resource *upstream_;
	detail::owned<parts> pool_;
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
class family_resource : public detail::front_resource<family_resource>
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
	 * The largest block the family serves, its counters
	 * (lfp_family_stats), the C family.
	 * Thread safety: any thread. Progress: wait-free (stats: O(classes
	 * and their caches)).
	 */
	std::size_t largest_block() const noexcept
	{
		return largest_;
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

private:
	friend class detail::front_resource<family_resource>;

	void *take(std::size_t bytes) noexcept
	{
		/* bytes - 1: a block of 0 bytes goes upstream too, where the
		 * family would count it as a bad size. */
		return bytes - 1 < largest_ ? fam_.alloc(bytes) : nullptr;
	}

	bool give(void *p) noexcept
	{
		if (fam_.class_of(p) < 0)
			return false;
		fam_.free(p);
		return true;
	}

	lfp::family fam_;
	std::pmr::memory_resource *upstream_;
	std::size_t largest_ = 0;
};

} // namespace lfp

#endif /* LFPOOL_RESOURCE_HPP */
