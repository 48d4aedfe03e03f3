/* SPDX-License-Identifier: MIT */
/*
 * A Promela model of how lfpool's thread caches exchange free slots with
 * the pool (src/cache/exchange.c, lfpi_pool_take in src/pool/pool.c):
 * through the depot of magazines (src/lists/depot.c) and through the free
 * list of single slots, three lock-free stacks of src/lists/stack.c in
 * all. Spin checks it exhaustively (make model-check runs it, see
 * tests/verify.am).
 *
 * The stack, step for step as the C code does it (lfpi_stack_push, _pop):
 *   push(first, last), of a chain first .. last its caller linked
 *     through next beforehand: load the head; loop: store next[last] =
 *     index of the head read, CAS the head from the {tag, index} read to
 *     {same tag, first}. Pushes do not bump the tag.
 *   pop: load the head; loop: if its index is NIL the stack is empty;
 *     else load next[top] (it may be stale), CAS the head from {tag, top}
 *     to {tag + 1, below}.
 * The three stacks: the free list of slots (pool->free, linked through
 * the slots' next) and the depot's loaded and empty magazines
 * (depot->full, depot->empty, linked through the magazines' next).
 *
 * On top of it, as the C code does it:
 *   store (lfpi_depot_store): the cache's spare magazine, else an empty
 *     one popped from the depot, else a never used one (depot->bump), else
 *     fail; write the count and indices, push it on the loaded stack.
 *   load (lfpi_depot_load): pop a loaded magazine, copy its indices out;
 *     it becomes the cache's spare if the cache has none, else goes on the
 *     empty stack.
 *   take one (lfpi_depot_take_one): pop a loaded magazine, take its last
 *     index, push it back on the loaded stack, or on the empty one if that
 *     was its last.
 *   give (cache_give): store the slots a magazine at a time; once a store
 *     fails, link the rest through next and push them onto the free list
 *     as one chain.
 *   refill (cache_refill): load; else pop up to B single slots from the
 *     free list; else take up to B fresh slots (lfpi_pool_bump).
 *   take from the pool (lfpi_pool_take): pop the free list; else take one
 *     from the depot; else a fresh slot; else the free list and the depot
 *     once more.
 *
 * Threads 1 and 2 each own a cache of CS = 2 slots and a spare magazine
 * slot; each operation is one of: allocate (the newest cached slot,
 * refilling first if the cache is empty, else take from the pool), release
 * a slot the thread holds into its cache (giving the cache's bottom B
 * slots first if it is full: cache_flush_cold), or flush the whole cache
 * (cache_empty with the cache's spare, as lfp_cache_flush). Thread 3 is on
 * the shared path: it allocates by taking from the pool, and releases by
 * pushing the one slot onto the free list (as a thread without a cache,
 * a deferred release, or a release while a thief holds the cache do).
 * Thread i runs at most OPSi operations and may stop after any of them.
 *
 * N = 5 slots, M = 2 magazines of B slots, in two shapes (-DB=):
 *   B = 1: the default batch_size of a cache of 2 (two magazines deep).
 *     A flush gives two magazines, and the second may find none left:
 *     part goes to the depot, the rest onto the free list. Start: thread
 *     1's cache full (slots 0 and 1), thread 1 holding slot 2, slot 3 in
 *     loaded magazine 0, slot 4 fresh, magazine 1 never used.
 *   B = 2 (batch_size = cache_size): magazines partly filled, take one
 *     pushing a magazine back on the loaded stack, refills of two single
 *     slots, chains of two on the free list. Start: thread 1's cache full
 *     (slots 0 and 1), thread 1 holding slot 2, slots 3 -> 4 on the free
 *     list, both magazines never used.
 * The start states are ones the pool reaches (from a fresh pool, after a
 * few operations of thread 1), chosen so that a handful of operations
 * reach every branch: with only two magazines they run out, stores fail
 * and slots go to the free list as chains. With the bounds make
 * model-check uses (B = 1 with OPS 3, 3, 2: about 35 million states;
 * B = 2 with OPS 2, 4, 2: about 22 million), Spin reports unreached only
 * what the shape rules out (B = 1: a magazine pushed back loaded, chains
 * of two from cache_flush_cold; B = 2: cache_flush_cold's slide, as it
 * gives the whole cache) and, in one of the inlined copies each, a failed
 * CAS or a branch that another copy reaches. Fewer operations than
 * the model of the former free list of chains had (6, 2, 2 and 4, 3, 3 on
 * four slots): an operation now takes more steps over three stacks, and
 * the start states stand in for the operations that would lead to them.
 *
 * Every load, store and CAS of a word other threads can reach is one
 * Spin step: the three heads and the next words of slots and magazines,
 * so Spin tries every interleaving of them. Folded into the neighbouring
 * step: what only one thread touches (a cache's array, count and spare; a
 * magazine's count and indices, which belong to whoever popped it or took
 * it fresh; the ghost variables) and the two bump counters (fresh slots,
 * never used magazines), whose CAS loops on one counter are one atomic
 * step each. The model zeroes a magazine's count and indices when it
 * empties it; the C code leaves them stale, but a correct stack hands the
 * magazine to nobody who reads them before a store writes them again, so
 * this only merges states.
 *
 * Properties, as assertions:
 *   1. No slot is handed out twice: owner[] records which thread holds
 *      each slot; every allocation asserts that the slot had no owner.
 *   2. A magazine popped from the loaded stack holds 1 to B slots.
 *   3. When every thread is done: each slot is in exactly one place (on
 *      the free list, reached from its head without a cycle; in a loaded
 *      magazine; fresh; in a cache; or held), and each magazine is in
 *      exactly one place (on the loaded stack; on the empty stack; a
 *      cache's spare; or never used).
 *
 * Not modelled: stealing from idle caches and its handshake (a thief
 * empties a cache with cache_empty and a spare of its own, then gives the
 * spare back: the same stores and pushes as a flush here); a cache's
 * teardown (lfpi_depot_put_spare, one more push onto the empty stack);
 * lfp_trim (lfpi_stack_pop_all, lfpi_depot_take_all and _put_back); the
 * bulk calls (runs of the same refills and flushes); growth, the
 * exhaustion policies, fork, and handles and generations. Memory ordering
 * is not covered either: Spin interleaves steps under sequential
 * consistency, so this checks the algorithm, not the release/acquire
 * orders in the C code (the stress tests run those under ThreadSanitizer).
 * A weak CAS's spurious failure needs no step of its own: it leaves the
 * head as it was read and goes round the loop again, which is exactly
 * what a thread that loaded the head at that later moment does.
 *
 * Why the tag, and why a small one suffices here. A push needs no tag: if
 * its CAS finds the head index it read (say A), A is the top of the stack
 * at that moment, whatever happened in between, and linking the pusher's
 * chain above A is right. A pop is different: it read below = next[A]
 * before its CAS, and if A was popped and pushed back meanwhile, with
 * something else below it, a CAS that compared only the index would
 * install a stale `below`: nodes held by others would go back on the
 * stack and the nodes below A now would be lost (the ABA problem). Spin
 * finds it on the free list (-DNO_POP_TAG_FREE: a slot handed out twice),
 * on the magazine stacks (-DNO_POP_TAG_MAGS: an emptied magazine popped as
 * a loaded one, or a magazine in two places) and with both (-DNO_POP_TAG).
 * With the tag, a successful pop CAS means the head word is the one the
 * pop read, tag included. Every successful pop adds 1 to the tag and
 * pushes keep it, so no pop succeeded in between (unless the tag wrapped
 * around); without a pop, A stayed on the stack, nobody could push A or
 * write its next (only the owner of a node does), so `below` is still
 * right and the CAS is correct.
 *
 * The C tag has 32 bits; this model's has TAGBITS (default 4). Only a
 * wrap-around of the tag inside one pop's window can break the argument
 * above, and in these runs no stack's tag wraps (an assertion in pop
 * checks it), so the default tag behaves exactly as an unbounded one.
 * What Spin proves therefore holds for the C code under the one
 * assumption the C code makes: no thread stalls between the load and the
 * CAS of one pop while exactly a multiple of 2^32 other pops of the same
 * stack complete. Building with a one-bit tag (-DTAGBITS=1) shows that a
 * wrap-around is indeed the remaining way in: Spin then finds the ABA bug
 * again.
 *
 * Switches (spin -D...):
 *   B=1, B=2          the shape (default 1).
 *   OPS1, OPS2, OPS3=n  operations each thread may run (default 3, 3, 2).
 *   NO_POP_TAG_FREE   pops of the free list keep the tag: Spin must find
 *                     the ABA bug (it does with B=2 and OPS 2, 3, 2).
 *   NO_POP_TAG_MAGS   pops of the magazine stacks keep the tag: the same.
 *   NO_POP_TAG        both.
 *   TAGBITS=n         width of the tags (default 4, which must never wrap).
 */

#define N 5        /* slots */
#define CS 2       /* slots a cache holds (lfp_config.cache_size) */
#ifndef B
#define B 1        /* slots a magazine holds (batch_size) */
#endif
#define M 2        /* magazines */
#if B != 1 && B != 2
#error "B is 1 or 2"
#endif
#define NIL 255    /* LFPI_NIL: ends a stack, marks an empty one */

/* Operations per thread: a bound that keeps the search exhaustive. */
#ifndef OPS1
#define OPS1 3
#endif
#ifndef OPS2
#define OPS2 3
#endif
#ifndef OPS3
#define OPS3 2
#endif
#ifndef TAGBITS
#define TAGBITS 4
#define TAG_NEVER_WRAPS /* the default: asserted in pop() */
#endif
#define TAGMOD (1 << TAGBITS)

/* Which stacks' pops bump the tag (1) or keep it (0: the ABA bug). */
#if defined(NO_POP_TAG) || defined(NO_POP_TAG_FREE)
#define FREE_TAG 0
#else
#define FREE_TAG 1
#endif
#if defined(NO_POP_TAG) || defined(NO_POP_TAG_MAGS)
#define MAGS_TAG 0
#else
#define MAGS_TAG 1
#endif

/*
 * Three stacks, each a head word {tag, index} read and written only as a
 * whole: the free list of single slots (pool->free, linked through the
 * slots' next), and the depot's loaded and empty magazines (linked
 * through the magazines' next).
 */
byte ftag, fidx = NIL;
byte ltag, lidx = NIL;
byte etag, eidx = NIL;
/*
 * The stacks' next words, atomic in C: slot s's (struct lfpi_slot.next)
 * is link[s], magazine m's (struct lfpi_mag.next) is link[MAGS + m].
 */
#define SLOTS 0
#define MAGS N
byte link[N + M];

/* A magazine's contents: plain in C, only its owner touches them. */
typedef mag_t { byte idx[B] };
mag_t mag[M];
byte mcount[M];

byte mbump;     /* depot->bump: magazines [mbump, M) were never used */
byte sbump;     /* pool->bump: slots [sbump, N) are fresh */

/* Ghost state for the properties. */
byte owner[N];  /* 0 = not handed out, else the holding thread's id */
byte cached[N]; /* filled in by each thread when it finishes */
byte spares[M]; /* the same for the caches' spare magazines */
byte done;      /* threads finished */

/* lfpi_stack_push(first, last) on the stack {htag, hidx} linked through
 * link[]; uses the caller's ot, oi. */
inline push(htag, hidx, base, pfirst, plast)
{
	atomic { ot = htag; oi = hidx }    /* relaxed load of the head */
	do
	:: link[base + plast] = oi;
	   if
	   :: atomic { htag == ot && hidx == oi ->
			hidx = pfirst; ot = 0; oi = 0 };
	      break
	   :: atomic { !(htag == ot && hidx == oi) -> ot = htag; oi = hidx }
	   fi
	od
}

/* top = lfpi_stack_pop() on the stack {htag, hidx}; a pop bumps the tag
 * if bump is 1. Uses the caller's ot, oi, below. */
inline pop(htag, hidx, base, top, bump)
{
	atomic { ot = htag; oi = hidx }    /* acquire load of the head */
	do
	:: d_step { oi == NIL -> top = NIL; ot = 0 }; break
	:: else ->
		below = link[base + oi];         /* may be stale: see the CAS */
		if
		:: atomic { htag == ot && hidx == oi ->
#ifdef TAG_NEVER_WRAPS
				assert(ot + 1 < TAGMOD);
#endif
				htag = (bump -> (ot + 1) % TAGMOD : ot);
				hidx = below; top = oi;
				ot = 0; oi = 0; below = 0 };
		   break
		:: atomic { !(htag == ot && hidx == oi) ->
				ot = htag; oi = hidx; below = 0 }
		fi
	od
}

/* depot_get_empty: a recycled magazine, else a never used one (the bump
 * is one CAS loop on a counter: one step), else NIL; into m. */
inline get_empty()
{
	pop(etag, eidx, MAGS, m, MAGS_TAG);
	if
	:: m == NIL ->
		d_step {
			if
			:: mbump < M -> m = mbump; mbump++
			:: else -> skip
			fi
		}
	:: else -> skip
	fi
}

/*
 * cache_give: give cache[gs .. gs + gn) to the pool, a magazine of up to
 * B slots at a time through lfpi_depot_store (with the cache's spare, else
 * an empty magazine), or, once no magazine is free, the rest as one chain
 * onto the free list.
 */
inline cache_give()
{
	do
	:: gn == 0 -> break
	:: else ->
		/* lfpi_depot_store */
		if
		:: spare != NIL -> m = spare; spare = NIL
		:: else -> get_empty()
		fi;
		if
		:: m == NIL ->
			/* Link the rest with next stores, push it whole. */
			i = gs;
			do
			:: i + 1 < gs + gn -> link[cache[i]] = cache[i + 1]; i++
			:: else -> break
			od;
			push(ftag, fidx, SLOTS, cache[gs], cache[gs + gn - 1]);
			atomic { i = 0; m = 0; gs = 0; gn = 0 };
			break
		:: else ->
			d_step {
				mcount[m] = (gn < B -> gn : B);
				i = 0;
				do
				:: i < mcount[m] -> mag[m].idx[i] = cache[gs + i]; i++
				:: else -> break
				od;
				gs = gs + i; gn = gn - i; i = 0
			};
			push(ltag, lidx, MAGS, m, m);
			m = 0
		fi
	od
}

/* cache_flush_cold: the cache is full; give its bottom magazine, slide
 * the rest down. */
inline flush_cold()
{
	d_step { gs = 0; gn = B };
	cache_give();
	atomic {
		i = B;
		do
		:: i < count -> cache[i - B] = cache[i]; i++
		:: else -> break
		od;
		count = count - B;
		i = count;
		do
		:: i < CS -> cache[i] = 0; i++
		:: else -> break
		od;
		i = 0
	}
}

/* cache_empty, with the cache's own spare (lfp_cache_flush). */
inline flush_all()
{
	d_step { gs = 0; gn = count };
	cache_give();
	atomic {
		i = 0;
		do
		:: i < CS -> cache[i] = 0; i++
		:: else -> break
		od;
		count = 0; i = 0
	}
}

/*
 * cache_refill: the cache is empty; load a magazine (lfpi_depot_load,
 * whose emptied magazine becomes the spare or goes to the empty stack),
 * else pop up to B single slots from the free list, else take a run of
 * fresh slots.
 */
inline refill()
{
	pop(ltag, lidx, MAGS, m, MAGS_TAG);
	if
	:: m != NIL ->
		d_step {
			assert(mcount[m] > 0 && mcount[m] <= B); /* property 2 */
			if
			:: mcount[m] <= B -> count = mcount[m]
			:: else -> skip /* the assertion failed */
			fi;
			i = 0;
			do
			:: i < count ->
				cache[i] = mag[m].idx[i]; mag[m].idx[i] = 0; i++
			:: else -> break
			od;
			mcount[m] = 0; i = 0
		};
		if
		:: spare == NIL -> spare = m
		:: else -> push(etag, eidx, MAGS, m, m)
		fi;
		m = 0
	:: else ->
		m = 0;
		do
		:: count < B ->
			pop(ftag, fidx, SLOTS, idx, FREE_TAG);
			if
			:: idx == NIL -> break
			:: else -> cache[count] = idx; count++
			fi
		:: else -> break
		od;
		idx = 0;
		if
		:: count == 0 ->
			/* lfpi_pool_bump: a CAS loop on a counter, one step. */
			d_step {
				count = (N - sbump < B -> N - sbump : B);
				i = 0;
				do
				:: i < count -> cache[i] = sbump + count - 1 - i; i++
				:: else -> break
				od;
				sbump = sbump + count; i = 0
			}
		:: else -> skip
		fi
	fi
}

/* lfpi_depot_take_one: pop a loaded magazine, take its last slot, push it
 * back on the loaded stack or, emptied, on the empty one; into idx. */
inline take_one()
{
	pop(ltag, lidx, MAGS, m, MAGS_TAG);
	if
	:: m != NIL ->
		d_step {
			assert(mcount[m] > 0 && mcount[m] <= B); /* property 2 */
			if
			:: mcount[m] > 0 && mcount[m] <= B ->
				mcount[m]--;
				idx = mag[m].idx[mcount[m]];
				mag[m].idx[mcount[m]] = 0
			:: else -> idx = NIL /* the assertion failed */
			fi
		};
		if
		:: mcount[m] > 0 -> push(ltag, lidx, MAGS, m, m)
		:: else -> push(etag, eidx, MAGS, m, m)
		fi;
		m = 0
	:: else -> idx = NIL; m = 0
	fi
}

/* lfpi_pool_take: the free list, a loaded magazine, a fresh slot; if all
 * are gone, the free list and the magazines once more. Into idx. */
inline pool_take()
{
	pop(ftag, fidx, SLOTS, idx, FREE_TAG);
	if
	:: idx == NIL -> take_one()
	:: else -> skip
	fi;
	if
	:: idx == NIL ->
		d_step {
			if
			:: sbump < N -> idx = sbump; sbump++
			:: else -> skip
			fi
		};
		if
		:: idx == NIL ->
			pop(ftag, fidx, SLOTS, idx, FREE_TAG);
			if
			:: idx == NIL -> take_one()
			:: else -> skip
			fi
		:: else -> skip
		fi
	:: else -> skip
	fi
}

/* Hand slot idx, if any, to the caller: property 1. */
inline give()
{
	d_step {
		if
		:: idx != NIL ->
			assert(owner[idx] == 0);
			owner[idx] = me
		:: else -> skip /* exhausted */
		fi;
		idx = 0
	}
}

/* Hand the newest cached slot to the caller. */
inline take()
{
	d_step {
		count--;
		idx = cache[count];
		cache[count] = 0;
		assert(owner[idx] == 0);   /* property 1 */
		owner[idx] = me;
		idx = 0
	}
}

/* Pick a slot this thread holds and mark it free: into s. */
inline pick()
{
	if
	:: d_step { owner[0] == me -> owner[0] = 0; s = 0 }
	:: d_step { owner[1] == me -> owner[1] = 0; s = 1 }
	:: d_step { owner[2] == me -> owner[2] = 0; s = 2 }
	:: d_step { owner[3] == me -> owner[3] = 0; s = 3 }
	:: d_step { owner[4] == me -> owner[4] = 0; s = 4 }
	fi
}

inline holds()
{
	(owner[0] == me || owner[1] == me || owner[2] == me ||
	 owner[3] == me || owner[4] == me)
}

/* A thread with a cache (lfp_alloc, lfp_free, lfp_cache_flush). */
proctype cached_thread(byte me; byte nops)
{
	byte cache[CS];
	byte count, spare = NIL, ops, ot, oi, below, idx, m, i, s, gs, gn;

	/* Thread 1 starts with a full cache. */
	if
	:: me == 1 -> d_step { cache[0] = 0; cache[1] = 1; count = 2 }
	:: else -> skip
	fi;

	do
	:: ops < nops ->
		ops++;
		if
		:: /* allocate: the cache, refilled if empty, else the pool */
			if
			:: count == 0 -> refill()
			:: else -> skip
			fi;
			if
			:: count > 0 -> take()
			:: else -> pool_take(); give()
			fi
		:: holds() ->
			/* release into the cache (lfpi_cache_put) */
			pick();
			if
			:: count == CS -> flush_cold()
			:: else -> skip
			fi;
			d_step { cache[count] = s; count++; s = 0 }
		:: count > 0 -> flush_all()
		fi
	:: break  /* a thread may stop after any operation */
	od;
	/* Leave the census what the cache holds (i is 0 here). */
	atomic {
		do
		:: i < count -> cached[cache[i]]++; i++
		:: else -> break
		od;
		if
		:: spare != NIL -> spares[spare]++
		:: else -> skip
		fi;
		done++
	}
}

/* A thread on the shared path: lfpi_pool_take, and releases pushed one
 * slot at a time onto the free list (a thread without a cache, a
 * deferred release, a release while a thief holds the cache). */
proctype shared_thread(byte me; byte nops)
{
	byte ops, ot, oi, below, idx, m, s;

	do
	:: ops < nops ->
		ops++;
		if
		:: pool_take(); give()
		:: holds() ->
			pick();
			push(ftag, fidx, SLOTS, s, s);
			s = 0
		fi
	:: break
	od;
	atomic { done++ }
}

/*
 * Property 3, once every thread is done. The walks stop at a node out of
 * range or a cycle, once its assertion has failed.
 */
inline census()
{
	byte seen[N], mseen[M], k, s, steps;

	/* The free list: single slots. */
	s = fidx;
	do
	:: s == NIL -> break
	:: else ->
		assert(s < N && steps < N);
		if
		:: s < N && steps < N -> seen[s]++; steps++; s = link[s]
		:: else -> break
		fi
	od;
	/* The loaded magazines and their slots. */
	s = lidx;
	steps = 0;
	do
	:: s == NIL -> break
	:: else ->
		assert(s < M && steps < M);
		assert(mcount[s] > 0 && mcount[s] <= B);
		if
		:: s < M && steps < M && mcount[s] <= B ->
			mseen[s]++;
			steps++;
			k = 0;
			do
			:: k < mcount[s] -> seen[mag[s].idx[k]]++; k++
			:: else -> break
			od;
			s = link[MAGS + s]
		:: else -> break
		fi
	od;
	/* The empty magazines. */
	s = eidx;
	steps = 0;
	do
	:: s == NIL -> break
	:: else ->
		assert(s < M && steps < M);
		if
		:: s < M && steps < M -> mseen[s]++; steps++; s = link[MAGS + s]
		:: else -> break
		fi
	od;
	/* Fresh slots and magazines never used. */
	k = sbump;
	do
	:: k < N -> seen[k]++; k++
	:: else -> break
	od;
	k = mbump;
	do
	:: k < M -> mseen[k]++; k++
	:: else -> break
	od;
	/* Each slot in one place, each magazine in one place. */
	k = 0;
	do
	:: k < N ->
		assert(seen[k] + cached[k] + (owner[k] != 0) == 1);
		k++
	:: else -> break
	od;
	k = 0;
	do
	:: k < M -> assert(mseen[k] + spares[k] == 1); k++
	:: else -> break
	od
}

init
{
	/*
	 * Start: thread 1's cache full with slots 0 and 1, thread 1 holding
	 * slot 2. B = 1: slot 3 in a loaded magazine, slot 4 fresh. B = 2:
	 * slots 3 and 4 on the free list, every magazine unused.
	 */
	d_step {
		owner[2] = 1;
#if B == 1
		mag[0].idx[0] = 3; mcount[0] = 1;
		link[MAGS + 0] = NIL; lidx = 0;
		mbump = 1;
		sbump = 4
#else
		link[3] = 4; link[4] = NIL; fidx = 3;
		sbump = 5
#endif
	}
	atomic {
		run cached_thread(1, OPS1);
		run cached_thread(2, OPS2);
		run shared_thread(3, OPS3)
	}
	done == 3;
	d_step { census() }
}
