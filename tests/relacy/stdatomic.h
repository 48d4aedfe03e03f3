/* SPDX-License-Identifier: MIT */
/*
 * The C11 atomics of <stdatomic.h>, for lfpool's own sources compiled as
 * C++ under Relacy, the checker of the C++11 memory model. This file is
 * found before the system's <stdatomic.h> (the checks are built with
 * -I tests/relacy), so base/base.h's include brings it in (and
 * lfpool/hot.h's, for the inline paths, which take it with
 * LFPI_H_C11_ATOMICS in C++ too), and the library's units compile
 * unchanged: _Atomic(T) is Relacy's rl::atomic<T>, and each
 * atomic_*_explicit call becomes the same operation on it, with its order.
 *
 * Every order passes through lfpm_order, which knows each call site by
 * file, line and operand (a CAS has two orders). A check first runs with
 * the orders as written and records every site it reaches (the census);
 * then, for each site whose order is not relaxed, it runs again with that
 * one order made one step weaker (lfpm_weaken), and Relacy must report a
 * failure: an order no check needs is either unneeded or unchecked.
 *
 * Relacy's own headers come without relacy.hpp's macros (new, malloc,
 * errno and the orders as Relacy spells them), which the library's
 * sources must not see.
 *
 * atomic_signal_fence orders a thread against its own signal handler; the
 * checks have no signals, so it is a no-op here, except where a check
 * says it is half of an asymmetric barrier (lfpm_light_barrier).
 * atomic_init is a relaxed store (and, in fresh memory, the write of
 * C11's non-atomic initialization: see lfpm_fresh).
 */
#ifndef LFPM_STDATOMIC_H
#define LFPM_STDATOMIC_H

#ifndef __cplusplus
#error "tests/relacy/stdatomic.h is for the Relacy checks, built as C++"
#endif

/* The standard headers first: Relacy's own headers must not see ours. */
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <setjmp.h>

/*
 * The library's thread-locals (steal.c's record of a thread's steals,
 * and its count of steals held) are one word each for all of Relacy's
 * threads, which are fibers of one program thread. So each switch
 * between fibers, which Relacy makes with _longjmp, passes through
 * lfpm_longjmp: it saves the words a check listed (lfpm_fiber_local)
 * as the fiber it leaves sees them, and puts back the ones of the fiber
 * it enters, zero for a fiber that has not run in this execution (a new
 * thread's). lfpm_fiber_locals_begin starts each execution afresh.
 */
[[noreturn]] void lfpm_longjmp(struct __jmp_buf_tag env[1], int val);
void lfpm_fiber_local(void *word, size_t size);
void lfpm_fiber_locals_begin(void);
#define _longjmp(env, val) lfpm_longjmp(env, val)

#include <relacy/base.hpp>
#include <relacy/context.hpp>
#include <relacy/context_base_impl.hpp>
#include <relacy/backoff.hpp>
#include <relacy/atomic_fence.hpp>
#include <relacy/atomic.hpp>
#include <relacy/var.hpp>
#include <relacy/thread_local.hpp>
#include <relacy/test_suite.hpp>
#include <relacy/dyn_thread.hpp>
#include <relacy/stdlib/mutex.hpp>
#include <relacy/stdlib/condition_variable.hpp>
#include <relacy/stdlib/semaphore.hpp>
#include <relacy/stdlib/event.hpp>

/* What a site's order belongs to: it decides the orders one step weaker. */
enum {
	LFPM_LOAD,
	LFPM_STORE,
	LFPM_RMW,
	LFPM_FENCE,
	LFPM_CAS_SUCCESS,
	LFPM_CAS_FAIL,
};

/* One order at one place of the source. */
struct lfpm_site {
	const char *file;
	int line;
	int kind;               /* LFPM_LOAD ... LFPM_CAS_FAIL */
	rl::memory_order order; /* as written */
	const char *func;
	const char *what;       /* the atomic, as the call spells it */
};

/* The sites the census found (a fixed table: the simulated threads must
 * not allocate), and the site being weakened (-1: none). */
#define LFPM_SITES_MAX 512
extern lfpm_site lfpm_sites[LFPM_SITES_MAX];
extern size_t lfpm_nsites;
extern int lfpm_weak_site;
extern rl::memory_order lfpm_weak_order;
extern bool lfpm_census;

/* The order to use at a site: as written, or the variant's. */
rl::memory_order lfpm_order(rl::memory_order mo, int kind, const char *file,
			    int line, const char *func, const char *what = "");

#define LFPM_ORDER(mo, k, p)                                                  \
	lfpm_order((mo), LFPM_##k, __FILE__, __LINE__, __func__, #p)

/*
 * An atomic of the library's: Relacy's rl::atomic<T>, made where the C
 * object is made. One made inside an execution (a member of a test's
 * objects) is made at once. A static one (a file's static counter) is
 * made before any execution, where Relacy has no context: it is listed,
 * and lfpm_statics_begin makes it afresh at the start of each execution,
 * with the value C gives it at program start, and lfpm_statics_end ends
 * it (the driver calls both; a test must not construct it itself).
 */
typedef void (*lfpm_static_fn)(void *);
void lfpm_static_add(void *atomic, lfpm_static_fn begin, lfpm_static_fn end);
void lfpm_statics_begin(void);
void lfpm_statics_end(void);

/*
 * Whether the atomics made now are in fresh memory (lfpm_fresh): each
 * holds no value until the library initializes it (atomic_init), as a
 * mapping the library fills and then publishes. C11's atomic_init is
 * not an atomic operation, so every other access to the atomic must
 * come after it (happen after it), or it races with it: each fresh
 * atomic carries a variable Relacy watches, written by atomic_init and
 * read by every other access, which makes such an access Relacy's data
 * race (or its "access to uninitialized variable"), whatever its order,
 * a read-modify-write or a CAS included. That is how a check catches a
 * missing acquire or release of a publication whose plain fields Relacy
 * does not watch, through the atomics beside them. A test that lays
 * out fresh memory itself initializes its atomics with atomic_init.
 */
extern bool lfpm_fresh_now;

template <typename T> struct lfpm_atomic {
	alignas(rl::atomic<T>) unsigned char raw[sizeof(rl::atomic<T>)];
	T init;
	bool live;
	bool fresh;
	/* Fresh only: a variable Relacy watches, standing for C11's
	 * atomic_init, which is not an atomic operation: atomic_init
	 * writes it and every other access reads it, so an access that
	 * the initialization does not happen before is a data race (or a
	 * read of an uninitialized variable). */
	alignas(rl::var<char>) mutable unsigned char
		shadow_raw[sizeof(rl::var<char>)];
	rl::var<char> &shadow() const
	{
		return *reinterpret_cast<rl::var<char> *>(shadow_raw);
	}
	void touch(rl::debug_info_param info) const
	{
		if (fresh)
			(void)(char)shadow()(info);
	}
	void initialize(T v, rl::debug_info_param info)
	{
		if (fresh)
			shadow()(info) = 1;
		get()(info).store(v, rl::mo_relaxed);
	}

	lfpm_atomic() : lfpm_atomic(T()) {}
	lfpm_atomic(T v) : init(v), live(false), fresh(lfpm_fresh_now)
	{
		if (rl::is_ctx())
			begin(this);
		else
			lfpm_static_add(this, begin, end);
	}
	~lfpm_atomic()
	{
		if (live && rl::is_ctx())
			end(this);
	}
	lfpm_atomic(const lfpm_atomic &) = delete;
	lfpm_atomic &operator=(const lfpm_atomic &) = delete;

	rl::atomic<T> &get() { return *reinterpret_cast<rl::atomic<T> *>(raw); }
	rl::atomic_proxy<T> operator()(rl::debug_info_param info)
	{
		return get()(info);
	}
	rl::atomic_proxy_const<T> operator()(rl::debug_info_param info) const
	{
		return const_cast<lfpm_atomic *>(this)->get()(info);
	}

	static void begin(void *p)
	{
		lfpm_atomic *a = static_cast<lfpm_atomic *>(p);

		/* An execution that failed did not end it: its context is
		 * gone with the execution, so only make it anew. */
		if (a->fresh) {
			new (a->raw) rl::atomic<T>();
			new (a->shadow_raw) rl::var<char>();
		} else
			new (a->raw) rl::atomic<T>(a->init);
		a->live = true;
	}
	static void end(void *p)
	{
		lfpm_atomic *a = static_cast<lfpm_atomic *>(p);

		a->get().~atomic();
		if (a->fresh)
			a->shadow().~var();
		a->live = false;
	}
};

/* A T made in fresh memory at mem, inside an execution: its plain fields
 * zero (mmap's pages), its atomics holding nothing yet. */
template <typename T> T *lfpm_fresh(void *mem)
{
	lfpm_fresh_now = true;
	T *p = new (mem) T();
	lfpm_fresh_now = false;
	return p;
}

#define _Atomic(T) lfpm_atomic<T>
/* The library's thread-local words: each simulated thread has its own
 * copy of those a check lists with lfpm_fiber_local (see lfpm_longjmp);
 * the others are shared by all of them. */
#define _Thread_local thread_local
/* The units' static assertions are about the layout of C's types, which
 * the checker's atomics do not have. */
#define _Static_assert(cond, msg) static_assert(true, msg)

/* The names C gives the orders. */
#define memory_order_relaxed rl::mo_relaxed
#define memory_order_consume rl::mo_consume
#define memory_order_acquire rl::mo_acquire
#define memory_order_release rl::mo_release
#define memory_order_acq_rel rl::mo_acq_rel
#define memory_order_seq_cst rl::mo_seq_cst

/* An atomic about to be accessed, its initialization read (fresh ones). */
template <typename T>
static inline lfpm_atomic<T> &lfpm_touched(lfpm_atomic<T> &a,
					   rl::debug_info_param info)
{
	a.touch(info);
	return a;
}
template <typename T>
static inline const lfpm_atomic<T> &lfpm_touched(const lfpm_atomic<T> &a,
						 rl::debug_info_param info)
{
	a.touch(info);
	return a;
}
#define atomic_init(p, v) ((*(p)).initialize((v), $))
#define atomic_load_explicit(p, mo)                                           \
	(lfpm_touched(*(p), $)($).load(LFPM_ORDER(mo, LOAD, p)))
#define atomic_store_explicit(p, v, mo)                                       \
	(lfpm_touched(*(p), $)($).store((v), LFPM_ORDER(mo, STORE, p)))
#define atomic_exchange_explicit(p, v, mo)                                    \
	(lfpm_touched(*(p), $)($).exchange((v), LFPM_ORDER(mo, RMW, p)))
#define atomic_fetch_add_explicit(p, v, mo)                                   \
	(lfpm_touched(*(p), $)($).fetch_add((v), LFPM_ORDER(mo, RMW, p)))
#define atomic_fetch_sub_explicit(p, v, mo)                                   \
	(lfpm_touched(*(p), $)($).fetch_sub((v), LFPM_ORDER(mo, RMW, p)))
#define atomic_fetch_or_explicit(p, v, mo)                                    \
	(lfpm_touched(*(p), $)($).fetch_or((v), LFPM_ORDER(mo, RMW, p)))
#define atomic_fetch_and_explicit(p, v, mo)                                   \
	(lfpm_touched(*(p), $)($).fetch_and((v), LFPM_ORDER(mo, RMW, p)))
#define atomic_compare_exchange_weak_explicit(p, e, d, s, f)                  \
	lfpm_cas(*(p), *(e), (d), true, LFPM_ORDER(s, CAS_SUCCESS, p),    \
		 LFPM_ORDER(f, CAS_FAIL, p), $)
#define atomic_compare_exchange_strong_explicit(p, e, d, s, f)                \
	lfpm_cas(*(p), *(e), (d), false, LFPM_ORDER(s, CAS_SUCCESS, p),    \
		 LFPM_ORDER(f, CAS_FAIL, p), $)
#define atomic_thread_fence(mo) lfpm_fence(LFPM_ORDER(mo, FENCE, ), $)
#define atomic_signal_fence(mo)                                               \
	lfpm_signal_fence((mo), __FILE__, __LINE__, __func__, $)

static inline bool lfpm_acquires(rl::memory_order mo)
{
	return mo == rl::mo_acquire || mo == rl::mo_acq_rel ||
	       mo == rl::mo_seq_cst || mo == rl::mo_consume;
}

/*
 * The functions whose signal fences are the owner's half of an
 * asymmetric barrier, whose other half is membarrier(2) (see
 * tests/relacy/cache.cc), their names separated by spaces: set by a
 * check that models it, NULL otherwise. There they are seq_cst
 * fences, in the census like any order; elsewhere they order a thread
 * against its own signal handlers only, and no check has signals.
 */
extern const char *lfpm_light_barrier;

static inline void lfpm_fence(rl::memory_order mo, rl::debug_info_param info);

static inline void lfpm_signal_fence(rl::memory_order mo, const char *file,
				     int line, const char *func,
				     rl::debug_info_param info)
{
	size_t n = strlen(func);
	const char *at = lfpm_light_barrier;

	/* func, as a whole word of the list. */
	while (at && (at = strstr(at, func)) &&
	       !((at == lfpm_light_barrier || at[-1] == ' ') &&
		 (at[n] == ' ' || !at[n])))
		at += n;
	if (at)
		lfpm_fence(lfpm_order(mo, LFPM_FENCE, file, line, func), info);
}

/* A fence: none where a variant weakened it to relaxed. */
static inline void lfpm_fence(rl::memory_order mo, rl::debug_info_param info)
{
	if (mo != rl::mo_relaxed)
		(rl::atomic_thread_fence)(mo, info);
}

/*
 * A CAS. Relacy (C++11) refuses a failure order stronger than the
 * success order, which a weakened success order makes (C++17 allows it):
 * then the failure's acquire is an acquire fence after a failed relaxed
 * CAS, which orders what the failed CAS read as an acquire load would,
 * and more: the fence also acquires from what the thread's earlier
 * relaxed loads read. So such a variant is at least as strong as C++17's
 * CAS, and one that passes may pass by that; the two kept variants of
 * tests/relacy/lists.cc were also run with Relacy's own CAS of those
 * orders (reached around its C++11 check), and stay uncaught.
 */
template <typename T, typename U>
static inline bool lfpm_cas(lfpm_atomic<T> &a, T &expected, U desired,
			    bool weak, rl::memory_order s, rl::memory_order f,
			    rl::debug_info_param info)
{
	bool ok;

	a.touch(info);
	if (f == rl::mo_seq_cst && s != rl::mo_seq_cst) {
		/* C++17's CAS(acq_rel, seq_cst): not modelled (making the
		 * failure acquire would weaken it, and a variant could look
		 * caught); no unit's CAS fails seq_cst yet. */
		fprintf(stderr, "lfpm_cas: a seq_cst failure order with a "
			"weaker success order is not modelled\n");
		abort();
	}
	if (lfpm_acquires(f) && !lfpm_acquires(s)) {
		ok = weak ? a(info).compare_exchange_weak(expected, (T)desired, s,
							 rl::mo_relaxed)
			  : a(info).compare_exchange_strong(expected, (T)desired,
							   s, rl::mo_relaxed);
		if (!ok)
			(rl::atomic_thread_fence)(rl::mo_acquire, info);
		return ok;
	}
	return weak ? a(info).compare_exchange_weak(expected, (T)desired, s, f)
		    : a(info).compare_exchange_strong(expected, (T)desired, s, f);
}

#endif /* LFPM_STDATOMIC_H */
