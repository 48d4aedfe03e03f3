/* SPDX-License-Identifier: MIT */
/*
 * A Promela model of the handshake by which a starving thread (a thief)
 * takes the free slots of another thread's cache without a lock on the
 * owner's fast path: the owner's half is lfpi_cache_enter_fast and the
 * inline paths of include/lfpool.h (lfpi_cache_alloc_body, _free_live)
 * with their out-of-line halves (lfpi_cache_alloc_slow, slow_cache_miss
 * and lfpi_cache_put_slow in src/pool/slow.c; lfpi_cache_pop,
 * lfpi_cache_put, lfpi_cache_enter and _leave in src/cache/exchange.c);
 * the thief's half is lfpi_cache_claim_steal, lfpi_cache_steal and
 * cache_steal_round in src/cache/steal.c, called by pool_take_hard and
 * slow_cache_miss;
 * fork's hold on the caches is lfpi_cache_fork_prepare and _parent in
 * src/cache/fork_hold.c. Spin checks it exhaustively (model_steal.test
 * in make check, make model-steal for wider bounds; see tests/verify.am).
 *
 * The handshake, as the C code does it:
 *   owner: store active = 1 (relaxed), a compiler fence, load ctl
 *     (acquire). ctl == 0: use the cache's count and slots, then store
 *     active = 0 (release). ctl has STEAL: keep off the slots (an
 *     allocation takes from the pool, a release pushes its slot onto the
 *     free list), and an allocation that finds nothing waits for STEAL to
 *     clear, then enters again (lfpi_cache_wait_thief). ctl has FLUSH
 *     alone: give every cached slot to the pool, clear FLUSH
 *     (cache_answer_flush).
 *   thief: load the count (relaxed); skip an empty cache; load active
 *     (relaxed, a hint): if 1, set FLUSH and skip; else CAS STEAL into
 *     ctl (seq_cst; if another thief holds STEAL, remember the cache),
 *     membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), load active
 *     (seq_cst): 0, empty the cache into the pool and clear STEAL and
 *     FLUSH; 1, set FLUSH and clear STEAL (release). If it moved slots, it
 *     takes from the pool again; if it moved none and another thief held
 *     the cache, it waits for that thief to let go and takes from the
 *     pool if the pool is not empty; else the exhaustion policy (here:
 *     return NULL).
 *   Without membarrier (-DNO_MEMBARRIER: registration failed, so every
 *   cache's ctl keeps LFPI_CTL_SLOW and every entry is lfpi_cache_enter's):
 *   the owner enters with a seq_cst exchange of active and a seq_cst load
 *   of ctl, and the thief goes from its CAS to its load with no barrier.
 *
 * Memory ordering, which is the point here. The owner's store of active
 * goes through a store buffer (FIFO, BUF stores, default 2; the owner
 * stalls while it is full): it reaches other threads some steps later,
 * after the owner's load of ctl if the drain process (the CPU) says so.
 * That is the reordering the C code allows: a relaxed (or release) store
 * followed by an acquire load of another word, with only a compiler fence
 * between. membarrier is one step that empties every thread's buffer at
 * once (every running thread executes a full barrier; a thread that is
 * not running has had its buffer emptied by its last context switch).
 * A seq_cst exchange empties the owner's own buffer and stores at once.
 * Every other shared word (ctl, changed only by read-modify-writes; the
 * count; the pool) is sequentially consistent in the model: the C code
 * orders them with release and acquire, or they belong to the thread at
 * the slots; the lists' own orders are the depot model's and the stress
 * tests' concern.
 *
 * Step granularity: every load, store and read-modify-write of active,
 * ctl and the count is one Spin step; a CAS loop on ctl (the claim) is
 * one step, as is each take from or give to the pool (its stacks are
 * depot.pml's). Folded into the neighbouring step: what only the thread
 * at the slots touches (the slots themselves, which the model counts
 * rather than names: they are interchangeable here, and which slot goes
 * where is depot.pml's to check), and the ghost variables. A thief empties
 * a cache in two steps, load the count, then give that many and store 0,
 * so that two threads at the slots at once would also lose or duplicate
 * slots (property 2), not only trip property 1.
 *
 * Threads and start state. NS = 3 slots; a cache of CS = 2, magazines of
 * B = 1 (the default batch of a cache of 2: a flush of a full cache gives
 * one slot). Thread 1 owns the cache and runs up to OPS1 operations
 * (default 3), each an allocation or the release of a slot it holds;
 * thread 2 is a thief on the shared path (pool_take_hard: no cache of its
 * own) and runs up to OPS2 (default 3) allocations or releases; with
 * -DTHIEVES=2, thread 3 is a second such thief (OPS3, default 2); with
 * -DFORK, one more thread is a fork's prepare and parent handler on the
 * cache. Any thread may stop after any operation, and Spin's
 * interleavings include every prefix, so a thread preempted for good at
 * any step is covered by every assertion another thread reaches. Start:
 * the cache full (slots 0, 1), thread 1 holding slot 2, the pool empty:
 * the first allocation of a thief must steal, the owner's first release
 * flushes a full cache, and all the owner's paths (fast, STEAL, FLUSH,
 * refill from the pool) are reached in the default bounds (Spin reports
 * unreached only the wait for another thief, which needs two, and the
 * second look after another thief let go).
 *
 * Properties, as assertions:
 *   1. The slots have one user at a time: the owner enters its critical
 *      section (ctl without STEAL: from that load to its store of
 *      active = 0) only while no thief (nor fork) is at the slots, and a
 *      thief (or fork) is at them (from its load of active = 0 to its
 *      letting go) only while the owner is not in its critical section.
 *   2. No slot is lost or duplicated: after every operation of every
 *      thread and at the end, count + pool + slots held = NS, each part
 *      in range.
 *   3. No false exhaustion, in this precise sense: when a thief's
 *      allocation gives up, no slot stayed free, outside every running
 *      operation, for the whole attempt (from its first look at the
 *      pool), neither in the cache (its owner outside an operation, with
 *      its last store to active visible to all, and no other thief at
 *      the slots) nor in the pool (a pop by anyone is taken to have taken
 *      one of those). So a cache whose owner is idle, or preempted
 *      outside an lfp call, is always found; an owner preempted inside an
 *      operation keeps its slots until its next call (the FLUSH request).
 *      The owner's own allocation gives up only if, at some moment of it,
 *      its cache and the pool held nothing it could take.
 *   The stronger statement, that every failing allocation had a moment
 *   at which no slot at all was free outside a running operation (a
 *   linearizable NULL), does not hold: a slot that the owner releases
 *   onto the free list while the thief holds STEAL, after the thief
 *   looked at the pool, is missed, and the thief, finding the owner busy
 *   in its next operation, gives up (-DSTRICT_EXHAUSTION: Spin finds it).
 *   A slot released during the call is not one the call promised to see.
 *
 * What Spin found in the code as it was: with two thieves (-DTHIEVES=2),
 * or a thief and a fork (-DFORK with OPS2 > 0), property 3 failed. Thief
 * A claims the cache and finds the owner busy; the owner leaves and stays
 * idle with a slot in its cache (FLUSH set); thief B finds the cache
 * claimed by A, waits for A to let go (cache_wait_other_thief), then
 * looked only at the pool, which is empty, and returned NULL while the
 * idle cache held the slot. lfpi_cache_steal now takes a whole new look
 * (the pool, then the caches) after that wait, as the model does;
 * -DNO_RESTEAL is the code as it was, a broken variant Spin catches.
 *
 * Not modelled: more than one cache and the registry walk (one round of
 * lfpi_cache_steal over one cache; a thief that owns a cache of its own
 * skips it, as self); magazines, the spare and the depot (the pool is a
 * count); handles and generations; the fold of hot.top and the counters
 * (stats only); signal handlers interrupting their own thread's steal or
 * operation (lfpi_cache_steals_held, CACHE_FORK_MINE); the fork's child
 * (what it keeps and drops) and the time limit of waits for a fork (the
 * model's owner waits until the fork lets go; the C code's gives up after
 * 20 ms, documented in lfpool.h); thread exit, drains and orphaned caches;
 * the bulk calls (one operation holds the cache the same way); weaker
 * orders than a store buffer (the C code's acquire and release on ctl and
 * active are modelled as sequentially consistent).
 *
 * Bounds and cost (spin 6.5.2, gcc -O2, pan -DSAFETY -DCOLLAPSE -w26 on
 * this project's 2-core build machine; MiB include the 512 MiB table):
 *   make check (model_steal.test, pan built with -O0, -w26 for a pass,
 *   -w24 and -i, the shortest trail, for a broken variant):
 *     default bounds (OPS 3, 3)       727990 states   552 MiB   1.3 s
 *     -DNO_MEMBARRIER                 425905 states   540 MiB   0.6 s
 *     -DFORK -DOPS1=4 -DOPS2=0         27500 states   524 MiB   0.04 s
 *     broken variants: 15000 to 125000 states, 140 to 145 MiB, under
 *     0.5 s each; trails of 30 (OWNER_SWAPPED), 32 (NO_FENCE,
 *     SLOW_ENTRY_PLAIN), 38 (STEAL_LATE) and 78 (SKIP_FLUSHED) steps.
 *     With Spin and the compiles, about 15 s in all.
 *   make model-steal (-O2):
 *     -DOPS1=5 -DOPS2=5              6132019 states   762 MiB   8 s
 *     -DNO_MEMBARRIER, OPS 5, 5      3493991 states   659 MiB   5 s
 *     -DBUF=3, OPS 4, 4              2983998 states   641 MiB   5 s
 *     -DTHIEVES=2, OPS 2, 2, 1       11281604 states  962 MiB  13 s
 *     -DFORK (OPS 3, 3)              8996013 states   874 MiB  14 s
 *     the gap of the code as it was: -DTHIEVES=2 -DNO_RESTEAL (2, 2, 1)
 *     a trail of 81 steps, -DFORK -DNO_RESTEAL 57 steps;
 *     -DSTRICT_EXHAUSTION 119 steps (the -i
 *     searches for the shortest take 2 to 45 s).
 *   (A busy machine doubles the seconds.) Two thieves at
 *   OPS 3, 2, 1 need more than 26 million states and 1.5 GiB.
 *
 * Switches (spin -D...):
 *   OPS1, OPS2, OPS3=n  operations of the owner, thief 2, thief 3.
 *   THIEVES=2           a second thief.
 *   FORK                a fork's prepare and parent handler.
 *   BUF=n               stores the owner's store buffer holds (default 2).
 *   NO_MEMBARRIER       the seq_cst handshake (membarrier unavailable).
 *   NO_RESTEAL          after waiting for another thief, look at the pool
 *                       alone, as the code did (property 3, with two
 *                       thieves or a fork beside a thief).
 *   STRICT_EXHAUSTION   also assert the linearizable NULL (fails).
 * Broken variants, each caught by an assertion:
 *   NO_FENCE            the thief has no membarrier between its CAS and
 *                       its load of active: the owner's store of 1 may
 *                       still be in its buffer (property 1).
 *   OWNER_SWAPPED       the owner loads ctl before it stores active
 *                       (property 1).
 *   STEAL_LATE          the thief sets STEAL after it reads active, not
 *                       before (property 1).
 *   SLOW_ENTRY_PLAIN    with NO_MEMBARRIER: the owner's entry a plain
 *                       store, not the seq_cst exchange (property 1).
 *   SKIP_FLUSHED        the thief passes over caches with FLUSH set, as
 *                       the test-only fault LFPI_FAULT_IDLE_FLUSH does: an
 *                       owner that went idle right after a thief asked
 *                       keeps its slots (property 3).
 */

#ifndef THIEVES
#define THIEVES 1
#endif
#ifndef OPS1
#define OPS1 3
#endif
#ifndef OPS2
#define OPS2 3
#endif
#ifndef OPS3
#define OPS3 2
#endif
#ifndef BUF
#define BUF 2      /* stores the owner's store buffer holds */
#endif
#if THIEVES != 1 && THIEVES != 2
#error "THIEVES is 1 or 2"
#endif

#define NS 3       /* slots */
#define CS 2       /* slots the cache holds (lfp_config.cache_size) */
#define B 1        /* slots a magazine holds (batch_size) */

#define OWNER 1    /* thread 1 owns the cache; threads 2 (and 3) steal */

/* lfp_cache.hot.ctl */
#define STEAL 1    /* LFPI_CTL_STEAL */
#define FLUSH 2    /* LFPI_CTL_FLUSH */

/* The owner's hot.active: what other threads see, what the owner stored
 * last, and how many of its stores are still in its store buffer. */
byte act;
byte aown;
byte pend;
byte ctl;

byte cn = 2;       /* the cache's count (hot.top's low part) */
byte fn;           /* free slots of the pool outside caches */
byte held[5];      /* slots handed out to thread i */

/* Ghost state. */
bit o_op;          /* the owner is inside an operation */
bit o_cs;          /* ... and entered it without STEAL: at the slots */
byte t_cs;         /* the thief at the slots (it saw the owner out), or 0 */
bit win[5];        /* thread i is inside an allocation that may fail */
byte amin[5];      /* the fewest slots available to it in that window */
byte kept_c[5];    /* slots idle in the cache since thread i's window began */
byte kept_f[5];    /* slots in the pool since thread i's window began */
byte done;

/* Whether the cache's slots are out of thread t's reach: the owner is in
 * an operation or its leaving store has not reached the others yet
 * (t a thief), or another thief is at them. */
#define BUSY_FOR(t) (((t) != OWNER && (o_op || pend > 0)) || \
		     (t_cs != 0 && t_cs != (t)))
#define AVAIL(t) (fn + (BUSY_FOR(t) -> 0 : cn))

/*
 * For every thread inside an allocation: the slots that stayed free,
 * outside every running operation, since its window began (kept_c in the
 * cache, kept_f in the pool), and the fewest available at any moment
 * (amin). Called in every step that may make the cache busy for a thread
 * or lower cn or fn. Which slot a pop takes the counts cannot tell: it
 * is taken to be one that was kept, if any was.
 */
#define NOTE1(t) \
	if \
	:: win[t] -> \
		if :: BUSY_FOR(t) -> kept_c[t] = 0 :: else -> skip fi; \
		if :: kept_c[t] > cn -> kept_c[t] = cn :: else -> skip fi; \
		if :: kept_f[t] > fn -> kept_f[t] = fn :: else -> skip fi; \
		if :: AVAIL(t) < amin[t] -> amin[t] = AVAIL(t) \
		   :: else -> skip fi \
	:: else -> skip \
	fi
/* The window of thread t's allocation opens. */
#define OPEN(t) win[t] = 1; amin[t] = AVAIL(t); kept_f[t] = fn; \
	kept_c[t] = (BUSY_FOR(t) -> 0 : cn)
inline note()
{
	NOTE1(1); NOTE1(2); NOTE1(3)
}

/* Property 2: every slot in one place. */
inline census()
{
	assert(cn <= CS && fn <= NS && held[1] <= NS && held[2] <= NS &&
	       held[3] <= NS);
	assert(cn + fn + held[1] + held[2] + held[3] == NS)
}

/* The CPU drains the owner's store buffer, oldest store first, at any
 * time: a thread that is preempted has it drained too. Stores to active
 * alternate 1, 0, 1, ..., so the oldest of the pend newest stores is
 * aown if pend is odd. */
proctype drain()
{
end:	do
	:: atomic { pend > 0 ->
		act = ((pend % 2) == 1 -> aown : 1 - aown);
		pend-- }
	od
}

/* membarrier(2): every thread's stores reach everyone, in one step. */
inline membarrier()
{
	atomic { act = aown; pend = 0 }
}

/* The owner's store to active: through its store buffer (a relaxed or
 * release store), which stalls while full. */
inline store_active(v)
{
	atomic { pend < BUF -> aown = v; pend++; o_op = v;
		 if :: v == 0 -> o_cs = 0 :: else -> skip fi;
		 note() }
}

/* The load of ctl that opens the owner's operation: without STEAL, the
 * slots are the owner's until it leaves (property 1). */
inline load_ctl()
{
	atomic {
		c = ctl;
		if
		:: !(c & STEAL) -> assert(t_cs == 0); o_cs = 1
		:: else -> skip
		fi
	}
}

/*
 * lfpi_cache_enter_fast (lfpool.h): store active = 1, a compiler fence,
 * load ctl. Where membarrier is missing, lfpi_cache_enter's seq_cst
 * exchange and load (the fast path's relaxed store of the same 1 just
 * before adds nothing another thread could tell apart).
 */
inline enter()
{
#if defined(NO_MEMBARRIER) && !defined(SLOW_ENTRY_PLAIN)
	atomic { act = 1; aown = 1; pend = 0; o_op = 1; note() };
	load_ctl()
#elif defined(OWNER_SWAPPED)
	atomic { o_op = 1; note() };
	load_ctl();
	store_active(1)
#else
	store_active(1);
	load_ctl()
#endif
}

/* lfpi_cache_leave, lfpi_cache_take_top's last store: release. */
inline leave()
{
	store_active(0)
}

/* cache_answer_flush: give every cached slot to the pool, clear FLUSH. */
inline answer_flush()
{
	n = cn;                                   /* lfpi_cache_n */
	atomic { fn = fn + n; cn = 0; n = 0 };    /* cache_give, set_n(0) */
	atomic { ctl = ctl & ~FLUSH }             /* fetch_and, relaxed */
}

/* lfpi_pool_take by thread t (the free list, the depot, fresh slots):
 * one step; got says whether it found one. */
inline pool_take(t)
{
	atomic {
		if
		:: fn > 0 -> fn--; held[t]++; got = 1; note()
		:: else -> got = 0
		fi
	}
}

/* lfp_cache_alloc: the inline path, lfpi_cache_alloc_slow,
 * slow_cache_miss. */
inline owner_alloc()
{
	atomic { OPEN(OWNER) };
	enter();
again:
	if
	:: c & STEAL -> got = 0            /* a thief may be at the slots */
	:: (c & (STEAL | FLUSH)) == FLUSH -> answer_flush(); got = 0
	:: c == 0 ->
		n = cn;                            /* load hot.top */
		if
		:: n > 0 ->                        /* take_top */
			atomic { cn = n - 1; held[OWNER]++; n = 0; got = 1 }
		:: else ->                         /* cache_refill, popped_miss */
			pool_take(OWNER)
		fi
	fi;
	leave();
	if
	:: !got -> pool_take(OWNER)
	:: else -> skip
	fi;
	/* lfpi_cache_steal finds no other cache to take. */
	if
	:: got -> win[OWNER] = 0
	:: !got && (c & STEAL) ->
		/* lfpi_cache_wait_thief: for the thief to let go, then again. */
		(ctl & STEAL) == 0;
		enter();
		goto again
	:: else ->
		/* Exhausted: property 3. */
		assert(amin[OWNER] == 0);
		win[OWNER] = 0
	fi
}

/* lfp_cache_free, inline fast path and lfpi_cache_put_slow. */
inline owner_free()
{
	enter();
	if
	:: c == 0 ->
		n = cn;
		if
		:: n < CS -> atomic { cn = n + 1; held[OWNER]--; n = 0 }
		:: else ->   /* cache_flush_cold, then the release into it */
			atomic { fn = fn + B; cn = n - B + 1; held[OWNER]--; n = 0 }
		fi;
		leave()
	:: else ->
		if
		:: (c & (STEAL | FLUSH)) == FLUSH -> answer_flush()
		:: else -> skip
		fi;
		/* A thief is at the slots or wants them: share this one. */
		leave();
		atomic { fn++; held[OWNER]--; note() }
	fi
}

proctype owner(byte nops)
{
	byte ops, c, n;
	bit got;

	do
	:: ops < nops ->
		ops++;
		if
		:: owner_alloc()
		:: held[OWNER] > 0 -> owner_free()
		fi;
		census()
	:: break
	od;
	atomic { done++ }
}

/* Thread me's allocation on the shared path (pool_take_hard, with the
 * exhaustion policy that returns NULL): take from the pool; else steal
 * from the cache (lfpi_cache_steal, cache_steal_round); else give up. */
inline thief_alloc()
{
	skip;   /* a label cannot open an option of an if */
retry:
	atomic {
		if
		:: fn > 0 -> fn--; held[me]++; got = 1; note()
		:: else -> got = 0;
			if :: !win[me] -> OPEN(me) :: else -> skip fi
		fi
	};
	if
	:: got -> skip
	:: else ->
		claimed = 0; other = 0;
		n = cn;                            /* lfpi_cache_n: relaxed */
		if
		:: n == 0 -> skip
		:: else ->
			if
			:: act ->  /* cache_ask_busy: a relaxed hint */
				atomic { ctl = ctl | FLUSH }
			:: else ->    /* lfpi_cache_claim_steal */
				atomic {
					if
					:: ctl & STEAL -> other = 1
#ifdef SKIP_FLUSHED
					:: (ctl & (STEAL | FLUSH)) == FLUSH -> skip
					:: ctl == 0 ->
#else
					:: else ->
#endif
#ifndef STEAL_LATE
						ctl = ctl | STEAL;
#endif
						claimed = 1
					fi
				}
			fi
		fi;
		if
		:: claimed ->
#if !defined(NO_MEMBARRIER) && !defined(NO_FENCE)
			membarrier();
#endif
			/* seq_cst load of active */
			atomic {
				if
				:: act == 0 -> assert(!o_cs && t_cs == 0); t_cs = me; note()
				:: else -> skip
				fi
			};
#ifdef STEAL_LATE
			atomic { ctl = ctl | STEAL };
#endif
			if
			:: t_cs == me ->                   /* lfpi_cache_empty */
				n = cn;
				atomic { fn = fn + n; got = (n > 0); cn = 0; n = 0;
					 kept_f[me] = kept_f[me] + kept_c[me];
					 kept_c[me] = 0 };
				/* Let go, FLUSH answered (release). */
				atomic { ctl = ctl & ~(STEAL | FLUSH); t_cs = 0 }
			:: else ->
				atomic { ctl = ctl | FLUSH };  /* relaxed */
				atomic { ctl = ctl & ~STEAL }   /* release */
			fi
		:: else -> skip
		fi;
		/* cache_wait_other_thief: another thief held the cache. */
		if
		:: !got && other ->
			(ctl & STEAL) == 0;
#ifndef NO_RESTEAL
			/* The other thief may have found the owner busy and
			 * left the slots where they were: look again, at the
			 * pool and at the cache. */
			goto retry
#else
			got = (fn > 0)
#endif
		:: else -> skip
		fi;
		if
		:: got -> pool_take(me)
		:: else -> skip
		fi;
		if
		:: got -> skip
		:: else ->                         /* exhausted: property 3 */
			assert(kept_c[me] == 0 && kept_f[me] == 0);
#ifdef STRICT_EXHAUSTION
			assert(amin[me] == 0)
#else
			skip
#endif
		fi
	fi;
	win[me] = 0
}

proctype thief(byte me; byte nops)
{
	byte ops, n;
	bit got, claimed, other;

	do
	:: ops < nops ->
		ops++;
		if
		:: thief_alloc()
		:: held[me] > 0 -> atomic { held[me]--; fn++ }  /* lfp_free */
		fi;
		census()
	:: break
	od;
	atomic { done++ }
}

#ifdef FORK
/*
 * lfpi_cache_fork_prepare and lfpi_cache_fork_parent (fork_hold.c) on
 * the one cache: take it as a thief would (cache_fork_take: wait while
 * another thief holds it, or give up on it once the wait times out), the
 * barrier, read active; then, in the parent, let go. A cache seen idle is
 * the one the child keeps: from that read to the letting go its owner
 * must keep off the slots (property 1, with the fork as the thief at
 * them). The child itself is not modelled.
 */
proctype fork_hold(byte me)
{
	bit taken;

	do
	:: atomic { (ctl & STEAL) == 0 -> ctl = ctl | STEAL; taken = 1 };
	   break
	:: (ctl & STEAL) -> break    /* CACHE_FORK_THIEF: timed out */
	od;
#if !defined(NO_MEMBARRIER) && !defined(NO_FENCE)
	membarrier();
#endif
	atomic {
		if
		:: taken && act == 0 -> assert(!o_cs && t_cs == 0); t_cs = me; note()
		:: else -> skip            /* fork_busy: the child drops it */
		fi
	};
	if
	:: taken -> atomic { ctl = ctl & ~STEAL; t_cs = 0 }  /* release */
	:: else -> skip
	fi;
	atomic { done++ }
}
#endif

init
{
	/* Start: the cache full, the thief holding the third slot. */
	atomic {
		held[OWNER] = 1;
		run drain();
		run owner(OPS1);
		run thief(2, OPS2);
#if THIEVES == 2
		run thief(3, OPS3);
#endif
#ifdef FORK
		run fork_hold(THIEVES + 2);
#endif
	}
#ifdef FORK
	done == THIEVES + 2;
#else
	done == THIEVES + 1;
#endif
	census()
}
