/* SPDX-License-Identifier: MIT */
/*
 * A Promela model of lfpool's pool numbers, reused after lfp_destroy, and
 * of a thread's hints to its implicit caches: its table indexed by pool
 * number, its last cache and its array by family class (src/cache/table.c,
 * src/cache/registry.c, lfpool.h's lfpi_cache_find, lfpi_family_find and
 * lfpi_cache_is_of, lfp_destroy in src/pool/pool.c, family_alloc in
 * src/extras/family.c). Spin checks it exhaustively: make check runs it
 * in small bounds (model_table.test), make model-check in larger ones
 * (tests/verify.am).
 *
 * The protocol. lfp_create takes a pool number, any one free (the C code
 * takes the lowest), and the pool may be mapped where a destroyed pool or
 * a freed cache was. A thread's first call on a pool makes its implicit
 * cache (cache_implicit_new: mapped, filled in, published in the pool's
 * registry, put on the thread's list, made the table's entry for the
 * pool's number and the last cache). Entries are hints: a lookup takes
 * the class's entry (family calls only), else the last cache, else the
 * number's entry, only if that cache's pool word is the pool asked for;
 * else the slow path walks the thread's list for a cache whose c->pool
 * and c->pool_id are the pool's (the id is unique, so it tells a pool
 * from an earlier one at the same address), freeing on the way the
 * orphans it passes: each one's entries dropped (lfpi_cache_tab_drop),
 * then off the list, then unmapped. What stands for the number's
 * generation is the pool word: lfp_destroy (lfpi_cache_destroy_all) makes
 * every live cache of the pool an orphan, its pool word its own address
 * (which no pool has while the cache is mapped), and state ORPHANED, and
 * unmaps the dead ones, waiting while one is EXITING; only then does it
 * give the number back and unmap the pool. At its exit the thread marks
 * itself exited (from then on its calls take the shared path), resets its
 * last cache and its table (mask, then the table), then its class array,
 * then gives back each cache on its list (IMPLICIT -> EXITING, drained,
 * off the list, DEAD) or frees it if it is an orphan.
 *
 * Processes. The worker makes up to OPS calls, each a plain allocation
 * (lfp_alloc's cache part: last, entry, slow path) or a family allocation
 * of class 0, whose pool is the program's pool variable 0; a cache found
 * either serves inline or sends the call out of line (as an empty cache
 * does), which is lfp_alloc's path and then lfpi_cache_cls_put. Then it
 * exits (cache_thread_exit). Its signal handler makes HANDLERS calls of
 * the same kinds, each at any step of the exit (before it begins and
 * after it ends too: a later key destructor's call), run to completion
 * while the worker waits, as a handler runs on its thread's stack; the
 * other threads run meanwhile. The destroyer, ROUNDS times, destroys the
 * pool of a variable no call is in and makes a new one into it (the
 * program's duty: no call on a pool once lfp_destroy began).
 *
 * Step granularity: every access to a word another thread writes is one
 * Spin step: a cache's pool word (the lookup's relaxed load; the orphan
 * store), its state (the slow path's acquire load, the exit's CASes, the
 * destroyer's loads and CAS), the numbers' bitmap (one CAS loop, one
 * step; the fetch_and), the registry's head (one step), and mapping or
 * unmapping a pool or a cache. What only the worker and its handler touch
 * (the table, last, the class array, the list, cache_exited and
 * cache_making) is folded into the neighbouring step: the handler runs
 * only where the worker is interrupted, and the points at which it may be
 * are the steps of the exit. So are the plain fields fixed before a cache
 * or pool is published (c->pool, c->pool_id, c->num, pool->num, pool->id)
 * and the ghost variables.
 *
 * Start state: pool 1 (number 0) at address 1; the worker's cache of it
 * at address 2, on its list, its last cache, its table's entry 0 and its
 * class array's entry (the state after the worker's first family call out
 * of line). With -DNSLOT=2 also pool 2 (number 1) at address 3, no cache
 * yet. Addresses 1..4 (1..5 with two pools) hold pools and caches alike;
 * there are two pool numbers.
 *
 * Properties (assertions):
 *   1. A lookup's cache is the pool's: whenever a call uses a cache for
 *      a pool, the cache was made for that pool (a ghost identity handed
 *      out at lfp_create, not its number nor its address), and is mapped.
 *      No hint is ever read once its cache is unmapped (each read of a
 *      cache's words asserts that it is mapped).
 *   2. A cache the exit gave back is never used nor named again: every
 *      cache a call uses is IMPLICIT, on the worker's list, not given
 *      back; once the exit is over no entry (last, table, class array)
 *      names a cache given back or freed, and no table or array is left
 *      (one the handler made during the exit would be named by nothing and
 *      never freed).
 *   3. At the end, every cache is DEAD in its pool's registry or freed:
 *      none IMPLICIT or ORPHANED with nobody left to give it back. While
 *      the exit gives a cache back, its pool is still mapped.
 *
 * Bounds and cost (Spin 6.5.2, -DSAFETY -DCOLLAPSE, on a 2-core machine
 * shared with other builds; memory as pan reports it, its hash table
 * included: 2^22 slots in make check, 2^26 = 512 MiB in make model-check):
 *   make check (model_table.test, pan compiled at -O0, which saves 7 s of
 *   compiling a run and costs little searching these):
 *     default (NSLOT 1, OPS 3, ROUNDS 2, HANDLERS 1): 1.2 million states,
 *       depth 208, 95 MiB, 2.1 s;
 *     NSLOT=2 ROUNDS=1: 1.2 million states, depth 202, 95 MiB, 2.0 s;
 *     with the eight broken variants below, 25-30 s in all.
 *   make model-check (pan at -O2), 100 s in all with the variants:
 *     HANDLERS=2 OPS=4: 2.9 million states, depth 232, 646 MiB, 2.5 s;
 *     HANDLERS=2 ROUNDS=3: 7.6 million states, depth 238, 845 MiB, 8 s;
 *     NSLOT=2 (OPS 3, ROUNDS 2): 15.6 million states, depth 261,
 *       1206 MiB, 22 s (60 s on a busier machine).
 * Spin reports unreached, in the correct model: a table made by tab_put
 * (the worker starts with one, and none is made after the exit), mmap
 * failing (there is always a free address), the slow path finding the
 * pool's cache on the list (the table always names it) and the drop
 * finding a last cache other than the orphan.
 *
 * Broken variants, each caught (make check runs them all; states searched
 * and seconds, at -O0, for the shortest trail with -i):
 *   -DNUM_ONLY        a hint is taken on the number alone (the cache's
 *                     number is the pool's): a destroyed pool's orphan
 *                     serves the pool made later with its number
 *                     (property 1; 7 thousand states, 0.1 s).
 *   -DNO_ORPHAN_WORD  lfp_destroy leaves an orphan's pool word naming the
 *                     pool's address: a pool made later at that address
 *                     matches it (property 1; 7 thousand, 0.1 s).
 *   -DNO_POOL_ID      the slow path takes a cache of its list on the
 *                     address alone, without c->pool_id: the orphan of
 *                     the pool that was at the address (property 1;
 *                     40 thousand, 0.1 s).
 *   -DEXITED_LAST     the exit marks the thread exited at its end (as
 *                     the code once did): a handler after the table's
 *                     reset finds the cache on the list, puts it back in
 *                     the table, and uses it while or after it is given
 *                     back (property 2; 470 thousand, 1.2 s).
 *   -DCLS_FIRST       the class array is reset before the table: a
 *                     handler's family call out of line finds the cache
 *                     (its last cache or the table's entry, not reset
 *                     yet) and makes a new array naming it,
 *                     which outlives the exit (property 2; 880 thousand,
 *                     2.3 s).
 *   -DTAB_LAST        the table and array are reset after the caches are
 *                     given back: a handler uses a given-back cache
 *                     through its entry (property 2; 34 thousand, 0.2 s).
 *   -DUNMAP_BEFORE_DROP  the slow path unmaps an orphan, then drops its
 *                     entries: the drop reads the unmapped cache's number
 *                     (property 1's read check; 34 thousand, 0.1 s).
 *   -DDROP_NO_CLS     the drop forgets the class array: a later family
 *                     call reads the freed orphan through it (143
 *                     thousand, 0.4 s).
 * Outside the promise: -DHANDLER_IN_REAP lets the handler run while the
 * slow path frees an orphan, between the drop and taking it off the
 * list. Spin shows the handler then frees the same orphan and the worker
 * reads it unmapped: lfp_alloc through an implicit cache is not
 * async-signal-safe, as lfpool.h says; only the exit guards against a
 * handler's calls (342 thousand states, 5.5 s).
 *
 * Switches (spin -D...): NSLOT=1|2 pools alive at once (default 1),
 * OPS=n the worker's calls (3), ROUNDS=n pools destroyed and made again
 * (2), HANDLERS=n the handler's calls (1); and the variants above.
 *
 * Not modelled: other threads' implicit caches and the registry's reuse
 * of dead caches (only the worker makes implicit caches, and its own are
 * dead only once it exited); explicit caches; pools without caches or
 * beyond the numbers (LFPI_NIL: the list only); the table's growth and
 * the array's publication (filled before published, ordered against the
 * handler by signal fences), cls_making, and a handler interrupting
 * anything but the exit; lfp_free, which looks up as lfp_alloc does; the
 * re-check of the entry in lfpi_cache_implicit; fork. The list is walked
 * in address order, not newest first. Memory ordering is not covered:
 * Spin interleaves steps under sequential consistency, so this checks
 * the algorithm, not the relaxed loads of the pool word or the release
 * and acquire on the number that order the orphan store before a pool
 * made later with the number (which is also why giving the number back
 * before orphaning the caches shows nothing here).
 */

#ifndef NSLOT
#define NSLOT 1    /* pools alive at once (the program's pool variables) */
#endif
#if NSLOT == 1
#define NA 4       /* addresses: pools and caches share them */
#elif NSLOT == 2
#define NA 5
#else
#error "NSLOT is 1 or 2"
#endif
#define NNUM 2     /* pool numbers (LFPI_POOL_NUMS) */
#ifndef OPS
#define OPS 3      /* calls the worker makes before it exits */
#endif
#ifndef ROUNDS
#define ROUNDS 2   /* pools the other thread destroys and makes again */
#endif
#ifndef HANDLERS
#define HANDLERS 1 /* calls a signal handler of the worker makes */
#endif

#define NILC 0     /* the nil cache (cache_nil), at address 0, never mapped over */
#define NIL 255    /* LFPI_NIL: no number */

/* What an address holds. */
#define FREE 0
#define POOL 1
#define CACHE 2

/* lfp_cache.state (src/cache/cache.h) */
#define DEAD 0
#define IMPLICIT 2
#define EXITING 3
#define ORPHANED 4

/* The address space. */
byte mem[NA + 1];
/*
 * A cache at address a: hp[a] is its pool word (struct lfpi_cache_hot's
 * pool, atomic in C): its pool's address, or its own address once it is
 * an orphan; the nil cache's is its own address, 0. cpool, cpid and cnum
 * are the plain fields set before the cache is published (c->pool,
 * c->pool_id, c->num); cst is its state (atomic in C).
 */
byte hp[NA + 1];
byte cpool[NA + 1];
byte cpid[NA + 1];
byte cnum[NA + 1];
byte cst[NA + 1];
/* A pool at address a: its number and id (plain, set before it is
 * handed to anyone). */
byte pnum[NA + 1];
byte pident[NA + 1];
byte nums;         /* cache_nums: a bit per number taken */
byte ids;          /* pool_ids */

/* The program's pool variables: which pool each holds, whether it is
 * alive, and how many calls are in it (the program's duty: lfp_destroy
 * only once no call is, and no call once it began). */
byte saddr[NSLOT];
bit slive[NSLOT];
byte sbusy[NSLOT];

/* The worker's thread-local state (registry.c, table.c). */
byte last;         /* lfpi_cache_tab.last */
bit tab_own;       /* lfpi_cache_tab.v: its own table (1) or cache_nil_tab */
byte tmask;        /* lfpi_cache_tab.mask */
byte tab[NNUM];    /* the own table's entries */
bit cls_own;       /* lfpi_cache_cls: its own array (1) or cache_nil_cls */
byte cls0;         /* the own array's entry for class 0 */
bit onlist[NA + 1];/* cache_mine: the worker's implicit caches */
bit exited;        /* cache_exited */
bit making;        /* cache_making */

/* Ghost state for the properties. */
byte pgh[NA + 1];  /* the identity of the pool at an address */
byte cgh[NA + 1];  /* the identity of the pool a cache was made for */
byte creg[NA + 1]; /* the identity of the pool whose registry holds it */
bit given[NA + 1]; /* the worker's exit gave it back (EXITING, then DEAD) */
byte ghosts;       /* identities handed out */
bit sig;           /* the worker is interrupted: the handler runs */
byte hleft = HANDLERS;
byte done;

/* A read of cache c's memory: it must be mapped (or the nil cache). */
#define MAPPED(c) ((c) == NILC || mem[c] == CACHE)

/* ok = lfpi_cache_is_of(c, pool at pa): one relaxed load of c's pool
 * word. -DNUM_ONLY: a cache of the pool's number is taken for the
 * pool's. */
inline is_of(c, pa)
{
	atomic {
		assert(MAPPED(c));
#ifdef NUM_ONLY
		ok = (cnum[c] == pnum[pa])
#else
		ok = (hp[c] == pa)
#endif
	}
}

/* c = lfpi_cache_entry_of(n): the table's entry, thread-local. */
#define ENTRY(n) (tab_own -> tab[(n) & tmask] : NILC)

/*
 * The caller uses cache c for the pool at pa: property 1, c was made for
 * that pool (not for an earlier one with the pool's number or address),
 * and property 2, c is still the worker's: not given back, not freed.
 */
inline use(c, pa)
{
	d_step {
		assert(mem[c] == CACHE && cgh[c] == pgh[pa]);
		if /* one report per error: the second only if the first held */
		:: mem[c] == CACHE && cgh[c] == pgh[pa] ->
			assert(cst[c] == IMPLICIT && onlist[c] && !given[c])
		:: else -> skip
		fi
	}
}

/* lfpi_cache_tab_put(c): c becomes the last cache and its number's
 * entry, in a table made for it if the thread has none. */
inline tab_put(c)
{
	assert(MAPPED(c));
	last = c;
	if
	:: !tab_own -> tab_own = 1; tmask = NNUM - 1
	:: else -> skip
	fi;
	tab[cnum[c]] = c
}

/* lfpi_cache_tab_drop(c): before c is unmapped, the entries naming it go
 * back to the nil cache. -DDROP_NO_CLS forgets the class array. */
inline tab_drop(c)
{
	if
	:: last == c -> last = NILC
	:: else -> skip
	fi;
	assert(MAPPED(c));         /* c->num */
	if
	:: tab_own && cnum[c] < NNUM && (cnum[c] & tmask) == cnum[c] &&
	   tab[cnum[c]] == c -> tab[cnum[c]] = NILC
	:: else -> skip
	fi;
#ifndef DROP_NO_CLS
	if
	:: cls_own && cls0 == c -> cls0 = NILC
	:: else -> skip
	fi
#endif
}

/* munmap of a cache; the model clears its words, which nobody may read. */
inline unmap(a)
{
	d_step {
		assert(mem[a] == CACHE && !onlist[a]);
		mem[a] = FREE; hp[a] = 0; cpool[a] = 0; cpid[a] = 0;
		cnum[a] = 0; cst[a] = 0; cgh[a] = 0; creg[a] = 0; given[a] = 0
	}
}

/* mmap: any address nothing holds, into a; NILC when none (ENOMEM). */
#if NA == 4
#define PICK_FREE(a) \
	if \
	:: mem[1] == FREE -> a = 1 \
	:: mem[2] == FREE -> a = 2 \
	:: mem[3] == FREE -> a = 3 \
	:: mem[4] == FREE -> a = 4 \
	:: else -> a = NILC \
	fi
#else
#define PICK_FREE(a) \
	if \
	:: mem[1] == FREE -> a = 1 \
	:: mem[2] == FREE -> a = 2 \
	:: mem[3] == FREE -> a = 3 \
	:: mem[4] == FREE -> a = 4 \
	:: mem[5] == FREE -> a = 5 \
	:: else -> a = NILC \
	fi
#endif

/* A point where a signal handler of the worker may run one call to its
 * end, while the worker waits (the handler runs on its stack). */
inline interrupt()
{
	if
	:: atomic { hleft > 0 && !sig -> hleft--; sig = 1 }; sig == 0
	:: skip
	fi
}

/*
 * cache_implicit_new(pool at pa) into c: a new cache, mapped and filled
 * in (one step), published in the pool's registry (one step), put on the
 * thread's list and in its table. A dead cache of the pool is never
 * claimed here: only the worker makes implicit caches, and its own are
 * dead only once it has exited.
 */
inline implicit_new(pa)
{
	c = NILC;
	if
	:: making || exited -> skip
	:: else ->
		making = 1;
		atomic {
			PICK_FREE(c);
			if
			:: c != NILC ->
				mem[c] = CACHE; hp[c] = pa; cpool[c] = pa;
				cpid[c] = pident[pa]; cnum[c] = pnum[pa];
				cst[c] = IMPLICIT; cgh[c] = pgh[pa]
			:: else -> skip
			fi
		};
		if
		:: c != NILC ->
			/* The release CAS on pool->caches, then the list and
			 * the table (thread-local). */
			atomic { creg[c] = pgh[pa]; onlist[c] = 1; tab_put(c) }
		:: else -> skip
		fi;
		making = 0
	fi
}

/*
 * c = lfpi_cache_implicit_slow(pool at pa) in registry.c: NILC after the
 * thread's exit began; else its cache of the pool from its list (which then becomes
 * the table's entry), freeing the orphans it passes; else a new one.
 * The model's list is in address order.
 */
inline implicit_slow(pa)
{
	c = NILC;
	if
	:: exited -> skip
	:: else ->
		a = 1;
		do
		:: a > NA -> break
		:: a <= NA && !onlist[a] -> a++
		:: a <= NA && onlist[a] ->
			assert(MAPPED(a));
#ifdef NO_POOL_ID
			if
			:: cpool[a] == pa ->
#else
			if
			:: cpool[a] == pa && cpid[a] == pident[pa] ->
#endif
				atomic { tab_put(a); c = a }; break
			:: else -> skip
			fi;
			/* The acquire load of its state. */
			if
			:: cst[a] == ORPHANED ->
#ifdef UNMAP_BEFORE_DROP
				onlist[a] = 0;
				unmap(a);
				atomic { tab_drop(a) }
#elif defined(HANDLER_IN_REAP)
				atomic { tab_drop(a) };
				interrupt();
				atomic { assert(MAPPED(a)); onlist[a] = 0 };
				unmap(a)
#else
				atomic { tab_drop(a); onlist[a] = 0 };
				unmap(a)
#endif
			:: else -> skip
			fi;
			a++
		od;
		a = 0;
		if
		:: c == NILC -> implicit_new(pa)
		:: else -> skip
		fi
	fi
}

/* lfp_alloc(pool at pa), the cache part: the last cache, the number's
 * entry, the slow path; c is NILC for the shared path. */
inline alloc_inline(pa)
{
	atomic { c = last; is_of(c, pa) };
	if
	:: ok -> skip
	:: else ->
		atomic { c = ENTRY(pnum[pa]); is_of(c, pa) };
		if
		:: ok -> skip
		:: else -> implicit_slow(pa)
		fi
	fi;
	if
	:: c != NILC -> use(c, pa)
	:: else -> skip /* pool_alloc_shared */
	fi;
	ok = 0
}

/* ok, c = lfpi_cache_find(pool at pa, its number n). */
inline cache_find(pa)
{
	atomic { c = last; is_of(c, pa) };
	if
	:: ok -> skip
	:: else -> atomic { c = ENTRY(pnum[pa]); is_of(c, pa) }
	fi
}

/* lfpi_cache_cls_put(lfpi_cache_lookup(pool at pa), class 0): the
 * thread's cache of the pool, if the inline path finds it, becomes
 * class 0's entry, in an array made for it if the thread has none. */
inline cls_put(pa)
{
	cache_find(pa);
	if
	:: ok ->
		atomic {
			if
			:: !cls_own -> cls_own = 1
			:: else -> skip
			fi;
			cls0 = c
		}
	:: else -> skip
	fi;
	ok = 0
}

/*
 * lfp_family_alloc of class 0, whose pool is the one at pa: the class
 * array's entry; else the last cache and the table (lfpi_family_find).
 * A cache found serves inline, or it cannot (empty, say): then, as when
 * none is found, out of line (family_alloc): lfp_alloc's path, then
 * lfpi_cache_cls_put.
 */
inline family_alloc(pa)
{
	atomic { c = (cls_own -> cls0 : NILC); is_of(c, pa) };
	if
	:: ok -> skip
	:: else -> cache_find(pa)
	fi;
	if
	:: ok -> use(c, pa); ok = 0
	:: true ->
		ok = 0;
		alloc_inline(pa);
		cls_put(pa)
	fi
}

/* One call on the pool of variable s (alive), a plain or a family
 * allocation (the family's class 0 is that pool). */
inline call()
{
	if
	:: atomic { slive[0] -> sbusy[0]++; s = 0; pa = saddr[0] }
#if NSLOT == 2
	:: atomic { slive[1] -> sbusy[1]++; s = 1; pa = saddr[1] }
#endif
	:: else -> s = NIL
	fi;
	if
	:: s != NIL ->
		if
		:: alloc_inline(pa)
		:: family_alloc(pa)
		fi;
		d_step { sbusy[s]--; s = 0; pa = 0; c = 0 }
	:: else -> s = 0
	fi
}

/* lfpi_cache_tab_free, first half: the last cache and the table. */
inline tab_free()
{
	last = NILC;
	interrupt();
	if
	:: tab_own ->
		tmask = 0;
		interrupt();
		d_step { tab_own = 0; tab[0] = NILC; tab[1] = NILC };
		interrupt()
	:: else -> skip
	fi
}

/* lfpi_cache_tab_free, second half: the class array. */
inline cls_free()
{
	if
	:: cls_own -> d_step { cls_own = 0; cls0 = NILC }; interrupt()
	:: else -> skip
	fi
}

/*
 * cache_thread_exit: mark the thread exited, free its table, then its
 * class array, then give back every cache on its list (IMPLICIT ->
 * EXITING, drained, off the list, DEAD), freeing the orphans. The
 * handler may run at each step. -DEXITED_LAST marks the thread exited
 * at the end; -DCLS_FIRST frees the array before the table; -DTAB_LAST
 * frees both after the caches are given back.
 */
inline thread_exit()
{
	interrupt();
#ifndef EXITED_LAST
	exited = 1;
	interrupt();
#endif
#ifndef TAB_LAST
#ifdef CLS_FIRST
	cls_free();
	tab_free();
#else
	tab_free();
	cls_free();
#endif
#endif
	do
	:: d_step {
		a = 1;
		do
		:: a <= NA && !onlist[a] -> a++
		:: else -> break
		od
	   };
	   if
	   :: a > NA -> a = 0; break
	   :: else -> skip
	   fi;
		/* The CAS IMPLICIT -> EXITING. */
		atomic {
			assert(MAPPED(a));
			if
			:: cst[a] == IMPLICIT -> cst[a] = EXITING; given[a] = 1; ok = 1
			:: else -> ok = 0
			fi
		};
		interrupt();
		if
		:: ok ->
			/* cache_release: the drain and the spare reach the
			 * pool, which lives until the cache is DEAD. */
			assert(mem[cpool[a]] == POOL && pgh[cpool[a]] == cgh[a]);
			interrupt();
			onlist[a] = 0;
			interrupt();
			atomic { cst[a] == EXITING -> cst[a] = DEAD };
			interrupt()
		:: else ->
			onlist[a] = 0;
			interrupt();
			unmap(a);
			interrupt()
		fi;
		ok = 0; a = 0
	od;
#ifdef TAB_LAST
	tab_free();
	cls_free();
#endif
#ifdef EXITED_LAST
	exited = 1;
	interrupt();
#endif
	/* A later key's destructor calls in. */
	interrupt()
}

/* Property 2 once the exit is over: no entry names a cache the exit gave
 * back or freed, and no table or array is left (one made during the
 * exit would never be freed). */
inline exit_done()
{
	d_step {
		assert(last == NILC || (mem[last] == CACHE && !given[last]));
		assert(!tab_own || ((tab[0] == NILC || (mem[tab[0]] == CACHE &&
				     !given[tab[0]])) &&
				    (tab[1] == NILC || (mem[tab[1]] == CACHE &&
				     !given[tab[1]]))));
		assert(!cls_own || cls0 == NILC ||
		       (mem[cls0] == CACHE && !given[cls0]));
		if /* one report per error, as in use() */
		:: (last == NILC || mem[last] == CACHE && !given[last]) &&
		   (!tab_own || ((tab[0] == NILC || mem[tab[0]] == CACHE &&
				  !given[tab[0]]) &&
				 (tab[1] == NILC || mem[tab[1]] == CACHE &&
				  !given[tab[1]]))) &&
		   (!cls_own || cls0 == NILC || mem[cls0] == CACHE &&
		    !given[cls0]) ->
			assert(last == NILC && !tab_own && !cls_own)
		:: else -> skip
		fi
	}
}

proctype worker()
{
	byte ops, s, pa, c, a;
	bit ok;

	do
	:: ops < OPS -> ops++; call()
	:: break
	od;
	thread_exit();
	exit_done();
	atomic { done++ }
}

/* The worker's signal handler: one call each time it is raised. */
proctype handler()
{
	byte s, pa, c, a;
	bit ok;

end:	do
	:: sig == 1 -> call(); sig = 0
	od
}

/*
 * lfpi_cache_destroy_all(pool at pa): each cache of its registry, once
 * not EXITING, becomes an orphan (IMPLICIT: its pool word its own
 * address, then the CAS to ORPHANED) or is unmapped (DEAD). -DNO_ORPHAN_WORD
 * leaves the pool word naming the pool's address.
 */
inline destroy_all(pa)
{
	a = 1;
	do
	:: a > NA -> break
	:: a <= NA && !(mem[a] == CACHE && creg[a] == pgh[pa]) -> a++
	:: a <= NA && mem[a] == CACHE && creg[a] == pgh[pa] ->
		/* The acquire load, again while EXITING. */
		atomic { cst[a] != EXITING -> st = cst[a] };
		if
		:: st == IMPLICIT ->
#ifndef NO_ORPHAN_WORD
			hp[a] = a;
#endif
			/* The CAS IMPLICIT -> ORPHANED; if EXITING now, wait. */
			atomic {
				if
				:: cst[a] == IMPLICIT -> cst[a] = ORPHANED; a++
				:: else -> skip
				fi
			}
		:: st == DEAD -> unmap(a); a++
		fi;
		st = 0
	od;
	a = 0
}

/* Another thread: lfp_destroy on a pool no call is in, then lfp_create
 * into the same variable, ROUNDS times. */
proctype destroyer()
{
	byte r, s, pa, a, st;

	do
	:: r < ROUNDS ->
		r++;
		if
		:: atomic { slive[0] && sbusy[0] == 0 -> slive[0] = 0; s = 0; pa = saddr[0] }
#if NSLOT == 2
		:: atomic { slive[1] && sbusy[1] == 0 -> slive[1] = 0; s = 1; pa = saddr[1] }
#endif
		fi;
		destroy_all(pa);
		/* lfpi_cache_unnumber: the release fetch_and. */
		nums = nums & ~(1 << pnum[pa]);
		/* The pool's mapping goes. */
		d_step { mem[pa] = FREE; pnum[pa] = 0; pident[pa] = 0; pgh[pa] = 0; pa = 0 };
		/* lfp_create: mapped anywhere free, the old pool's address
		 * included; then a number, any one free (the C code takes
		 * the lowest: one of the choices). */
		atomic {
			PICK_FREE(pa);
			assert(pa != NILC);
			mem[pa] = POOL; ids++; pident[pa] = ids;
			ghosts++; pgh[pa] = ghosts
		};
		atomic {
			if
			:: !(nums & 1) -> nums = nums | 1; pnum[pa] = 0
			:: !(nums & 2) -> nums = nums | 2; pnum[pa] = 1
			fi
		};
		/* Handed to the program. */
		d_step { saddr[s] = pa; slive[s] = 1; s = 0; pa = 0 }
	:: break
	od;
	atomic { done++ }
}

init
{
	byte k;

	/*
	 * Start: pool 1 (number 0) at address 1; the worker's cache of it at
	 * address 2, its last cache, its table's entry and its class
	 * array's entry (as after its first family allocation out of line).
	 * With two pools, pool 2 (number 1) at address 3, no cache yet.
	 */
	d_step {
		cnum[NILC] = NIL;
		mem[1] = POOL; pnum[1] = 0; pident[1] = 1; pgh[1] = 1;
		saddr[0] = 1; slive[0] = 1;
		mem[2] = CACHE; hp[2] = 1; cpool[2] = 1; cpid[2] = 1; cnum[2] = 0;
		cst[2] = IMPLICIT; cgh[2] = 1; creg[2] = 1; onlist[2] = 1;
		last = 2; tab_own = 1; tmask = NNUM - 1; tab[0] = 2; tab[1] = NILC;
		cls_own = 1; cls0 = 2;
		nums = 1; ids = 1; ghosts = 1;
#if NSLOT == 2
		mem[3] = POOL; pnum[3] = 1; pident[3] = 2; pgh[3] = 2;
		saddr[1] = 3; slive[1] = 1;
		nums = 3; ids = 2; ghosts = 2
#endif
	}
	atomic {
		run worker();
		run handler();
		run destroyer()
	}
	done == 2;
	/* Every cache is given back (DEAD) or freed: none is left IMPLICIT
	 * or ORPHANED with nobody to give it back, none on the list. */
	d_step {
		k = 1;
		do
		:: k <= NA ->
			assert(mem[k] != CACHE || cst[k] == DEAD);
			assert(!onlist[k]);
			k++
		:: else -> break
		od
	}
}
