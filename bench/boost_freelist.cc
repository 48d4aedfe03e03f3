/* SPDX-License-Identifier: MIT */
/*
 * boost.lockfree's freelist_stack (boost/lockfree/detail/freelist.hpp) as
 * a pool of 64-byte objects: the free list under boost::lockfree::stack
 * and queue when they are not fixed-sized. Its head is one 64-bit word,
 * a 48-bit pointer and a 16-bit tag on x86-64 (pointer compression); a
 * free object holds its link in its first 8 bytes, read plainly by a
 * popper while the object's new owner may be writing it; pop is one CAS
 * that bumps the tag, push one CAS that keeps it, both sequentially
 * consistent (the library's default).
 *
 * fixed_size_freelist, the list of the fixed_sized<true> containers,
 * links by 16-bit index: at most 65535 objects, fewer than the
 * BENCH_CAPACITY the workloads need at 8 threads, so it is not the one
 * measured.
 *
 * The list takes its nodes from the bench's slab through an allocator
 * that hands out consecutive objects and frees nothing: the objects are
 * contiguous as in the other pools of the bench, and nothing calls
 * operator new.
 */
#include <boost/lockfree/detail/freelist.hpp>
#include <boost/version.hpp>
#include <new>

#include "boost_freelist.h"

namespace {

/* An object the list hands out. The empty constructor leaves its bytes
 * alone: construct() would otherwise zero what the caller writes anyway. */
struct bfl_obj {
	unsigned char bytes[64];
	bfl_obj() {}
};

/* Hands out the slab's objects in order; the slab outlives the list. */
struct bfl_slab_alloc {
	unsigned char *next;

	bfl_obj *allocate(std::size_t n)
	{
		bfl_obj *p = reinterpret_cast<bfl_obj *>(next);

		next += n * sizeof(bfl_obj);
		return p;
	}
	void deallocate(bfl_obj *, std::size_t) {}
};

typedef boost::lockfree::detail::freelist_stack<bfl_obj, bfl_slab_alloc>
	bfl_list;

/* The list of the current run, made in place by each setup. */
alignas(64) unsigned char bfl_storage[sizeof(bfl_list)];
bfl_list *bfl;

} // namespace

extern "C" int bench_bfl_setup(void *slab, size_t count, size_t size)
{
	bfl_slab_alloc a = { static_cast<unsigned char *>(slab) };

	if (size != sizeof(bfl_obj) || bfl)
		return -1;
	bfl = new (bfl_storage) bfl_list(a, count);
	if (bfl->is_lock_free())
		return 0;
	bench_bfl_teardown();
	return -1;
}

extern "C" size_t bench_bfl_teardown(void)
{
	size_t n = 0;

	if (!bfl)
		return 0;
	/* One thread is left: the unsynchronised pop suffices to count. */
	while (bfl->construct<false, true>())
		n++;
	bfl->~bfl_list();
	bfl = nullptr;
	return n;
}

extern "C" void *bench_bfl_alloc(void)
{
	/* Bounded: an empty list returns NULL, as a pool does, instead of
	 * asking the allocator for a new node. */
	return bfl->construct<true, true>();
}

extern "C" void bench_bfl_free(void *obj)
{
	bfl->destruct<true>(static_cast<bfl_obj *>(obj));
}

extern "C" const char *bench_bfl_version(void)
{
	return BOOST_LIB_VERSION;
}
