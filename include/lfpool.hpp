/* SPDX-License-Identifier: MIT */
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
 *   ENOMEM). Its what() names the class and the step that failed, the
 *   field of the configuration at fault with its value where one is
 *   (lfp_config_fault, lfp_family_config_fault), lfp_strerror's text,
 *   then the errno value's own: "lfp::pool<T>: lfp_create: capacity 0:
 *   invalid argument: ...: Invalid argument". Built without exceptions
 *   (-fno-exceptions) it prints that same line to stderr and aborts
 *   instead. Every file of a program that
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

/*
 * The classes are declared in include/lfpool/, one header for each thing
 * they wrap, in the order lfpool.hpp(3) presents them:
 *
 *   lfpool/common.hpp    lfp::stats, lfp::family_stats, and what the
 *                        others share (lfp::detail, not API)
 *   lfpool/handle.hpp    lfp::handle<T> and its std::hash
 *   lfpool/pool.hpp      lfp::pool<T>, lfp::cache<T>, their deleters and
 *                        unique_ptrs
 *   lfpool/family.hpp    lfp::family, lfp::family_cache, theirs
 *   lfpool/resource.hpp  lfp::pool_resource, lfp::family_resource
 *
 * Each includes what it uses, so a file that needs only pools may include
 * lfpool/pool.hpp alone; this header includes them all.
 */
#ifndef LFPOOL_HPP
#define LFPOOL_HPP

#include <lfpool/common.hpp>
#include <lfpool/handle.hpp>
#include <lfpool/pool.hpp>
#include <lfpool/family.hpp>
#include <lfpool/resource.hpp>

#endif /* LFPOOL_HPP */
