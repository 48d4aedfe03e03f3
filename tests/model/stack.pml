/*
 * A Promela model of lfpool's shared free list (src/stack.c) and of the
 * exchange between thread caches and that list (src/cache.c), checked
 * exhaustively by Spin (make model-check runs it, see tests/verify.am).
 *
 * What is modelled, step for step as the C code does it:
 *
 *   push (lfpi_stack_push): load the head; set the chain's tail and end
 *     its last slot (next = NIL); then loop: store batch_next of the
 *     chain's first slot = index of the head read, CAS the head from the
 *     {tag, index} read to {same tag, first}. Pushes do not bump the tag.
 *   pop (lfpi_stack_pop): load the head; loop: if its index is NIL the
 *     stack is empty; else load batch_next of the top slot (it may be
 *     stale), CAS the head from {tag, top} to {tag + 1, below}.
 *   refill (cache_refill): pop one chain and copy it into the cache's
 *     array by following next, up to the cache's size; a longer chain's
 *     rest goes back with a push.
 *   pop one (pool_pop_one, through lfpi_pool_take, when the refill found
 *     the stack empty): pop a chain, keep its first slot, push the rest.
 *   flush of the colder batch (cache_flush_cold), when a release finds
 *     the cache full: link the bottom BATCH entries with next stores,
 *     push them as one chain, slide the rest down.
 *   flush (cache_empty, as lfp_cache_flush): link every entry, push the
 *     whole cache as one chain.
 *
 * Three threads each own one cache of CS = 2 slots (BATCH = 1) and run at
 * most OPS1, OPS2, OPS3 operations, stopping after any of them; each is
 * one of: allocate (take the newest cached slot, refilling first if the
 * cache is empty, then the stack directly), release one of the slots the
 * thread holds (into its cache, flushing the colder batch first if the
 * cache is full), or flush the whole cache. The four slots start on the
 * shared stack as chains of 2, 1 and 1 slots. Not modelled: the fresh
 * slots (bump index), stealing from idle caches, lfp_trim's pop of the
 * whole stack, and the exhaustion policies; none of them changes how the
 * stack itself is pushed and popped.
 *
 * Every load, store and CAS of a word other threads can reach (the head,
 * next and batch_next of every slot) is one Spin step, so Spin tries
 * every interleaving of them. The cache's array and count, which only its
 * thread touches here, are folded into the neighbouring step.
 *
 * Properties, as assertions:
 *   1. No slot is handed out twice: owner[] records which thread holds
 *      each slot; every allocation asserts that the slot had no owner.
 *   2. No slot is lost or duplicated: when every thread is done, each
 *      slot is in exactly one place: on the stack (reached from the head
 *      through batch_next and next, without a cycle), in a cache, or held.
 *
 * Not covered: memory ordering. Spin interleaves steps under sequential
 * consistency, so this checks the algorithm, not the release/acquire
 * orders in the C code (the stress tests run those under ThreadSanitizer).
 * A weak CAS's spurious failure needs no step of its own: it leaves the
 * head as it was read and goes round the loop again, which is exactly
 * what a thread that loaded the head at that later moment does.
 *
 * Why the tag, and why a small one suffices here. A push needs no tag: if
 * its CAS finds the head index it read (say A), A is the top of the stack
 * at that moment, whatever happened in between, and linking the pusher's
 * own chain above A is right. A pop is different: it read below =
 * batch_next[A] before its CAS, and if A was popped and pushed back
 * meanwhile, with something else below it, a CAS that compared only the
 * index would install a stale `below`: slots held by others would go back
 * on the stack and the slots below A now would be lost (the ABA problem;
 * Spin finds it with -DNO_POP_TAG). With the tag, a successful pop CAS
 * means the head word is the one the pop read, tag included. Every
 * successful pop adds 1 to the tag and pushes keep it, so no pop succeeded
 * in between (unless the tag wrapped around); without a pop, A stayed on
 * the stack, nobody could push A or write its batch_next (only the owner
 * of a chain does), so `below` is still right and the CAS is correct.
 *
 * The C tag has 32 bits; this model's has TAGBITS (default 4). Only a
 * wrap-around of the tag inside one pop's window can break the argument
 * above, and a whole run here has at most OPS1 + OPS2 + OPS3 successful
 * pops (at most one per allocation), fewer than 2^TAGBITS: the default
 * tag never wraps (an assertion checks it), so it behaves exactly as an
 * unbounded one. What Spin proves therefore holds for the C code under the
 * one assumption the C code makes: no thread stalls between the load and
 * the CAS of one pop while exactly a multiple of 2^32 other pops complete.
 * Building with a one-bit tag (-DTAGBITS=1) shows that a wrap-around is
 * indeed the remaining way in: Spin then finds the ABA bug again.
 *
 * Switches (spin -D...):
 *   NO_POP_TAG      pops keep the tag: the ABA bug, Spin must find it.
 *   TAGBITS=n       width of the tag (default 4, which must never wrap).
 *   OPS1, OPS2, OPS3=n  operations each thread may run (default 3).
 */

#define T 3        /* threads, each with its own cache */
#define N 4        /* slots */
#define CS 2       /* slots a cache holds (lfp_config.cache_size) */
#define BATCH 1    /* slots flushed when a cache is full (batch_size) */
#define NIL 255    /* LFPI_NIL: ends a chain, marks an empty stack */

/* Operations per thread: a bound that keeps the search exhaustive. */
#ifndef OPS1
#define OPS1 3
#endif
#ifndef OPS2
#define OPS2 3
#endif
#ifndef OPS3
#define OPS3 3
#endif
#ifndef TAGBITS
#define TAGBITS 4
#define TAG_NEVER_WRAPS /* the default: asserted in pop() */
#endif
#define TAGMOD (1 << TAGBITS)

#ifdef NO_POP_TAG
#define POP_TAG(t) (t)
#else
#define POP_TAG(t) (((t) + 1) % TAGMOD)
#endif

/* The head word {tag, index}: read and written only as a whole. */
byte htag;
byte hidx = NIL;

/* Per-slot links (struct lfpi_slot): atomics in the C code. */
byte next[N];
byte bnext[N];  /* batch_next */
byte tail[N];   /* plain in C: only the chain's owner uses it */

/* Ghost state for the properties. */
byte owner[N];  /* 0 = not handed out, else the holding thread's id */
byte cached[N]; /* filled in by each thread when it finishes */
byte done;      /* threads finished */

/* lfpi_stack_push(first, last); uses the caller's ot, oi. */
inline push(pfirst, plast)
{
	atomic { ot = htag; oi = hidx }    /* relaxed load of the head */
	tail[pfirst] = plast;
	next[plast] = NIL;
	do
	:: bnext[pfirst] = oi;
	   if
	   :: atomic { htag == ot && hidx == oi -> hidx = pfirst };
	      break
	   :: atomic { !(htag == ot && hidx == oi) -> ot = htag; oi = hidx }
	   fi
	od;
	ot = 0; oi = 0
}

/* top = lfpi_stack_pop(); uses the caller's ot, oi, below. */
inline pop(top)
{
	atomic { ot = htag; oi = hidx }    /* acquire load of the head */
	do
	:: top = oi;
	   if
	   :: top == NIL -> break
	   :: else ->
		below = bnext[top];        /* may be stale: see the CAS */
		if
		:: atomic { htag == ot && hidx == oi ->
#ifdef TAG_NEVER_WRAPS
				assert(ot + 1 < TAGMOD);
#endif
				htag = POP_TAG(ot); hidx = below };
		   break
		:: atomic { !(htag == ot && hidx == oi) ->
				ot = htag; oi = hidx }
		fi
	   fi
	od;
	ot = 0; oi = 0; below = 0
}

/* cache_refill: the cache is empty; pop a chain into it. */
inline refill()
{
	pop(idx);
	first = idx;
	do
	:: idx != NIL && count < CS ->
		cache[count] = idx;
		count++;
		idx = next[idx]
	:: else -> break
	od;
	/* Chains are never longer than a cache, but the C code copes. */
	if
	:: idx != NIL -> push(idx, tail[first])
	:: else -> skip
	fi;
	idx = 0; first = 0
}

/*
 * pool_pop_one, as lfpi_pool_take calls it when the cache could not be
 * refilled: pop a chain, keep its first slot (in idx, NIL if the stack
 * was empty), push the rest back.
 */
inline pop_one()
{
	pop(idx);
	if
	:: idx != NIL ->
		first = next[idx];
		if
		:: first != NIL -> push(first, tail[idx])
		:: else -> skip
		fi;
		first = 0
	:: else -> skip
	fi
}

/* Hand slot idx to the caller: property 1. */
inline give()
{
	d_step {
		assert(owner[idx] == 0);
		owner[idx] = me;
		idx = 0
	}
}

/* Hand the newest cached slot to the caller (lfpi_cache_alloc). */
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

/* Link cache[0 .. n) with next stores; cur ends as the last one. */
inline link(n)
{
	cur = cache[0];
	i = 1;
	do
	:: i < n -> next[cur] = cache[i]; cur = cache[i]; i++
	:: else -> break
	od;
	i = 0
}

/* cache_flush_cold: push the bottom BATCH entries, slide the rest. */
inline flush_cold()
{
	link(BATCH);
	push(cache[0], cur);
	d_step {
		i = BATCH;
		do
		:: i < count -> cache[i - BATCH] = cache[i]; i++
		:: else -> break
		od;
		count = count - BATCH;
		i = count;
		do
		:: i < CS -> cache[i] = 0; i++
		:: else -> break
		od;
		i = 0; cur = 0
	}
}

/* cache_empty: push the whole cache as one chain. */
inline flush_all()
{
	link(count);
	push(cache[0], cur);
	d_step {
		i = 0;
		do
		:: i < CS -> cache[i] = 0; i++
		:: else -> break
		od;
		count = 0; i = 0; cur = 0
	}
}

/* Release slot s, held by this thread, into the cache (lfpi_cache_put). */
inline release(s)
{
	owner[s] = 0;
	if
	:: count == CS -> flush_cold()
	:: else -> skip
	fi;
	d_step { cache[count] = s; count++ }
}

proctype thread(byte me; byte nops)
{
	byte cache[CS];
	byte count, ops, ot, oi, below, idx, first, cur, i;

	do
	:: ops < nops ->
		ops++;
		if
		:: /* allocate */
			if
			:: count == 0 -> refill()
			:: else -> skip
			fi;
			if
			:: count > 0 -> take()
			:: else ->
				/* lfpi_pool_take: the stack, then the fresh
				 * slots (none here), then the stack again. */
				pop_one();
				if
				:: idx == NIL -> pop_one()
				:: else -> skip
				fi;
				if
				:: idx != NIL -> give()
				:: else -> skip /* exhausted */
				fi
			fi
		:: owner[0] == me -> release(0)
		:: owner[1] == me -> release(1)
		:: owner[2] == me -> release(2)
		:: owner[3] == me -> release(3)
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
		done++
	}
}

/* Property 2, once every thread is done. */
inline census()
{
	byte seen[N], k, chain, s, steps;

	chain = hidx;
	do
	:: chain == NIL -> break
	:: else ->
		s = chain;
		do
		:: s == NIL -> break
		:: else ->
			assert(s < N);
			seen[s]++;
			steps++;
			assert(steps <= N);        /* no cycle */
			s = next[s]
		od;
		chain = bnext[chain]
	od;
	k = 0;
	do
	:: k < N ->
		assert(seen[k] + cached[k] + (owner[k] != 0) == 1);
		k++
	:: else -> break
	od
}

init
{
	/* The stack: chains [0 -> 1], [2], [3], top first. */
	d_step {
		next[0] = 1; next[1] = NIL; tail[0] = 1; bnext[0] = 2;
		next[2] = NIL; tail[2] = 2; bnext[2] = 3;
		next[3] = NIL; tail[3] = 3; bnext[3] = NIL;
		bnext[1] = NIL; tail[1] = 0;
		htag = 0; hidx = 0
	}
	atomic {
		run thread(1, OPS1);
		run thread(2, OPS2);
		run thread(3, OPS3)
	}
	done == T;
	d_step { census() }
}
