/* SPDX-License-Identifier: MIT */
// The fast paths of lfpool.h are inline in C++ as in C11: cxx_inline.test
// compiles this file with each C++ compiler at hand and reads the
// object's undefined symbols. Every call below must leave no reference
// to the exported function of its name (lfp_alloc, lfp_cache_free, ...),
// only to the out-of-line halves (lfpi_*_slow) that the inline code
// calls when its cache is empty or full. It is only compiled, never run.
// Built once as it is and once with -DLFP_TEST_IN_EXTERN_C, which
// includes lfpool.h inside an extern "C" block, as C++ programs often
// include C headers.
#ifdef LFP_TEST_IN_EXTERN_C
extern "C" {
#include <lfpool.h>
}
#endif
#include <lfpool.h>
#include <lfpool.hpp>

extern "C" {
void *c_alloc(lfp_pool *p)
{
	return lfp_alloc(p);
}
int c_free(lfp_pool *p, void *o)
{
	return lfp_free(p, o);
}
void *c_cache_alloc(lfp_cache *c)
{
	return lfp_cache_alloc(c);
}
int c_cache_free(lfp_cache *c, void *o)
{
	return lfp_cache_free(c, o);
}
void *c_family_alloc(lfp_family *f, size_t n)
{
	return lfp_family_alloc(f, n);
}
int c_family_free(lfp_family *f, void *o)
{
	return lfp_family_free(f, o);
}
void *c_fcache_alloc(lfp_family_cache *f, size_t n)
{
	return lfp_family_cache_alloc(f, n);
}
int c_fcache_free(lfp_family_cache *f, void *o)
{
	return lfp_family_cache_free(f, o);
}
// The same through the global scope, as C++ code often writes it.
void *c_alloc_qualified(lfp_pool *p)
{
	return ::lfp_alloc(p);
}
}

// A member named like an inline call, declared and called in parentheses
// as lfpool.h says (the macro would take it otherwise).
struct allocator_like {
	lfp_pool *pool;

	void *(lfp_alloc)() const
	{
		return ::lfp_alloc(pool); // the inline path
	}
};

void *member_named_like_the_api(const allocator_like &a)
{
	return (a.lfp_alloc)();
}

struct particle {
	float x, y, z;
	int age;
};

// lfpool.hpp's typed paths, which call the C ones.
particle *cxx_make(lfp::pool<particle> &p)
{
	return p.make();
}
void cxx_destroy(lfp::pool<particle> &p, particle *o)
{
	p.destroy(o);
}
particle *cxx_cache_make(lfp::cache<particle> &c)
{
	return c.make();
}
void cxx_cache_destroy(lfp::cache<particle> &c, particle *o)
{
	c.destroy(o);
}
