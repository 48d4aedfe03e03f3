// SPDX-License-Identifier: MIT
//
// The lists layer on the C11 memory model: the tagged Treiber stack
// (src/lists/stack.c), the depot of magazines (src/lists/depot.c), and
// the bare list (lfpool.h's inline pop and push of a bare pool's free
// list, include/lfpool/inline.h, over the same stack), their own source
// compiled through stdatomic.h here. Each test hands
// nodes (slots, magazines) between threads; a node's payload is a plain
// variable Relacy watches, so an order too weak to carry the payload from
// one owner to the next is a data race, and a node handed to two threads
// at once fails an assertion.
#include "check.hpp"

// stack.c's faults, off but with --expect-fail, which turns each on in
// turn: a pop that keeps the tag, and a taking of the whole stack that
// keeps it.
static bool lfpm_fault_pop_keeps_tag, lfpm_fault_pop_all_keeps_tag;
#define LFPI_FAULT_POP_KEEPS_TAG lfpm_fault_pop_keeps_tag
#define LFPI_FAULT_POP_ALL_KEEPS_TAG lfpm_fault_pop_all_keeps_tag

#include "lists/stack.c"
#include "lists/depot.c"

namespace {

// A node of the stack: its link where the stack expects it, what its
// owner writes, and who owns it.
struct node {
	_Atomic(uint32_t) next;
	rl::var<int> payload;
	rl::atomic<int> owned;
};

constexpr uint32_t NODES = 3;

// What an owner does with a node: check.hpp's lfpm_own.
void own(node &n)
{
	lfpm_own(n);
}

struct stack_base {
	node nodes[NODES];
	struct lfpi_stack s;

	void init()
	{
		lfpi_stack_init(&s, &nodes[0].next, sizeof(node));
		for (uint32_t i = NODES; i-- > 0;) {
			nodes[i].payload($) = 0;
			nodes[i].owned($).store(0, rl::mo_relaxed);
			lfpi_stack_push(&s, i, i);
		}
	}

	// The nodes on the stack, each once, as at the start.
	void all_back()
	{
		uint32_t seen = 0, count = 0;

		for (uint32_t i = stack_idx(s.head($).load(rl::mo_relaxed));
		     i != LFPI_NIL;
		     i = nodes[i].next($).load(rl::mo_relaxed)) {
			RL_ASSERT(i < NODES && !(seen & 1u << i));
			seen |= 1u << i;
			count++;
		}
		RL_ASSERT(count == NODES);
	}
};

// Two threads pop a node, use it and push it back, twice; a third takes
// the whole stack, uses every node and pushes the chain back: the pops'
// acquire, the pushes' release and pop_all's acquire, and the tag
// (a popper that read a stale `next` must fail its CAS).
struct stack_handoff : rl::test_suite<stack_handoff, 3>, stack_base {
	void before() { init(); }

	void thread(unsigned id)
	{
		if (id < 2) {
			for (int k = 0; k < 2; k++) {
				uint32_t r = 0, i = lfpi_stack_pop(&s, &r);

				if (i == LFPI_NIL)
					continue;
				RL_ASSERT(i < NODES);
				own(nodes[i]);
				lfpi_stack_push(&s, i, i);
			}
			return;
		}
		uint32_t first = lfpi_stack_pop_all(&s), last = first, n = 0;

		for (uint32_t i = first; i != LFPI_NIL;
		     i = nodes[i].next($).load(rl::mo_relaxed)) {
			RL_ASSERT(i < NODES && ++n <= NODES);
			own(nodes[i]);
			last = i;
		}
		if (first != LFPI_NIL)
			lfpi_stack_push(&s, first, last);
	}

	void after() { all_back(); }
};

// A thread takes the whole stack and pushes its nodes back one by one,
// the old top last: the top is the same node with another link below
// it. A popper that read the old link before the stack was taken must
// fail its CAS (pop_all bumps the tag too).
struct stack_pop_all_relinks
	: rl::test_suite<stack_pop_all_relinks, 2>, stack_base {
	void before() { init(); }

	void thread(unsigned id)
	{
		if (id == 0) {
			uint32_t r = 0, i = lfpi_stack_pop(&s, &r);

			if (i != LFPI_NIL) {
				RL_ASSERT(i < NODES);
				own(nodes[i]);
				lfpi_stack_push(&s, i, i);
			}
			return;
		}
		uint32_t first = lfpi_stack_pop_all(&s), order[NODES], n = 0;

		for (uint32_t i = first; i != LFPI_NIL;
		     i = nodes[i].next($).load(rl::mo_relaxed)) {
			RL_ASSERT(i < NODES && n < NODES);
			own(nodes[i]);
			order[n++] = i;
		}
		for (uint32_t k = 1; k <= n; k++) {
			uint32_t i = order[k % n]; // the old top last
			lfpi_stack_push(&s, i, i);
		}
	}

	void after() { all_back(); }
};

// pop_all's release half: a popper that finds the stack emptied by it
// sees what the emptier wrote before (lfp_trim's odd trim_seq relies on
// it). Nobody pushes, so an empty pop read pop_all's head.
struct stack_pop_all_publishes
	: rl::test_suite<stack_pop_all_publishes, 2>, stack_base {
	rl::var<int> note;

	void before()
	{
		init();
		note($) = 0;
	}

	void thread(unsigned id)
	{
		if (id == 0) {
			note($) = 1;
			lfpi_stack_pop_all(&s);
			return;
		}
		for (int k = 0; k < 2; k++) {
			uint32_t r = 0, i = lfpi_stack_pop(&s, &r);

			if (i == LFPI_NIL) {
				RL_ASSERT(note($) == 1);
				return;
			}
			own(nodes[i]);
		}
	}
};

// A reader walks the stack while one thread pushes nodes 0, 1, 2 onto
// it, one at a time: the walk counts what it finds below the head it read,
// and with the head's acquire that is every node pushed before it (the
// snapshot lfp_stats and the audit take). Nobody pops, so no cycle.
struct stack_walk_snapshot
	: rl::test_suite<stack_walk_snapshot, 2>, stack_base {
	void before() { lfpi_stack_init(&s, &nodes[0].next, sizeof(node)); }

	static int count(uint32_t idx, void *arg)
	{
		uint32_t *c = static_cast<uint32_t *>(arg);

		RL_ASSERT(idx < NODES && *c < NODES);
		c[1 + *c] = idx;
		++*c;
		return 0;
	}

	void thread(unsigned id)
	{
		if (id == 0) {
			for (uint32_t i = 0; i < NODES; i++)
				lfpi_stack_push(&s, i, i);
			return;
		}
		uint32_t c[1 + NODES] = {0};

		lfpi_stack_walk(&s, count, c);
		// Pushed 0, 1, 2: a walk from node k finds k, k-1, ..., 0.
		for (uint32_t j = 0; j < c[0]; j++)
			RL_ASSERT(c[1 + j] == c[0] - 1 - j);
	}
};

// The depot: 4 slots in magazines of 2, handed between threads.
constexpr uint32_t SLOTS = 4, MAGS = 4, MAG_SIZE = 2;

struct depot_base {
	node slots[SLOTS]; // only payload and owned are used
	struct lfpi_depot d;
	alignas(8) unsigned char mem[MAGS * (sizeof(struct lfpi_mag) +
					     MAG_SIZE * sizeof(uint32_t))];

	void init()
	{
		lfpi_depot_init(&d, mem, MAGS, MAG_SIZE);
		RL_ASSERT(lfpi_depot_bytes(MAGS, MAG_SIZE) == sizeof(mem));
		for (uint32_t m = 0; m < MAGS; m++)
			new (lfpi_depot_mag(&d, m)) lfpi_mag;
		for (uint32_t i = 0; i < SLOTS; i++) {
			slots[i].payload($) = 0;
			slots[i].owned($).store(0, rl::mo_relaxed);
		}
	}

	~depot_base()
	{
		for (uint32_t m = 0; m < MAGS; m++)
			lfpi_depot_mag(&d, m)->~lfpi_mag();
	}

	void own_all(const uint32_t *idx, uint32_t n)
	{
		for (uint32_t j = 0; j < n; j++) {
			RL_ASSERT(idx[j] < SLOTS);
			own(slots[idx[j]]);
		}
	}

	static int mark(uint32_t idx, void *arg)
	{
		uint32_t *seen = static_cast<uint32_t *>(arg);

		RL_ASSERT(idx < SLOTS && !(*seen & 1u << idx));
		*seen |= 1u << idx;
		return 0;
	}

	// Every slot in the depot's loaded magazines, once; and every
	// magazine ever used on one of its stacks, once (none lost).
	void all_back()
	{
		uint32_t seen = 0, mags = 0, n = 0;

		lfpi_depot_walk(&d, mark, &seen);
		RL_ASSERT(seen == (1u << SLOTS) - 1);
		for (struct lfpi_stack *st : {&d.full, &d.empty})
			for (uint32_t m = stack_idx(st->head($).load(rl::mo_relaxed));
			     m != LFPI_NIL;
			     m = lfpi_depot_mag(&d, m)->next($).load(
				     rl::mo_relaxed)) {
				RL_ASSERT(m < MAGS && !(mags & 1u << m));
				mags |= 1u << m;
				n++;
			}
		RL_ASSERT(n == d.bump($).load(rl::mo_relaxed));
	}
};

// Two threads load magazines, use their slots and store them back (with
// the spare magazine a cache keeps), one a magazine, the other two at
// once; a third takes one slot alone and
// stores it as a magazine of one, then takes every magazine and puts
// them back: the magazines' counts and slots travel through the stacks'
// orders, and so must the slots' payloads.
struct depot_exchange : rl::test_suite<depot_exchange, 3>, depot_base {
	void before()
	{
		uint32_t a[2] = {0, 1}, b[2] = {2, 3}, spare = LFPI_NIL, r = 0;

		init();
		RL_ASSERT(lfpi_depot_store(&d, a, 2, &spare, &r));
		RL_ASSERT(lfpi_depot_store(&d, b, 2, &spare, &r));
	}

	void thread(unsigned id)
	{
		uint32_t out[MAG_SIZE], spare = LFPI_NIL, r = 0, n;

		if (id == 0) {
			n = lfpi_depot_load(&d, out, &spare, &r);
			RL_ASSERT(n <= MAG_SIZE);
			own_all(out, n);
			if (n)
				RL_ASSERT(lfpi_depot_store(&d, out, n, &spare, &r));
			lfpi_depot_put_spare(&d, spare);
			return;
		}
		if (id == 1) {
			// Two loads in a row: the second magazine emptied goes
			// back to the depot (the first is the spare); two
			// stores into magazines from the depot; the spare
			// given back at the end, as a cache's teardown does.
			uint32_t out2[MAG_SIZE], n2, none = LFPI_NIL;

			n = lfpi_depot_load(&d, out, &spare, &r);
			n2 = lfpi_depot_load(&d, out2, &spare, &r);
			RL_ASSERT(n <= MAG_SIZE && n2 <= MAG_SIZE);
			own_all(out, n);
			own_all(out2, n2);
			if (n)
				RL_ASSERT(lfpi_depot_store(&d, out, n, &none, &r));
			if (n2)
				RL_ASSERT(lfpi_depot_store(&d, out2, n2, &none,
							   &r));
			lfpi_depot_put_spare(&d, spare);
			return;
		}
		uint32_t one = lfpi_depot_take_one(&d, &r);

		if (one != LFPI_NIL) {
			own_all(&one, 1);
			RL_ASSERT(lfpi_depot_store(&d, &one, 1, &spare, &r));
		}
		uint32_t first = lfpi_depot_take_all(&d);

		lfpi_depot_walk_from(&d, first, visit, this);
		lfpi_depot_put_back(&d, first);
	}

	static int visit(uint32_t idx, void *arg)
	{
		static_cast<depot_exchange *>(arg)->own_all(&idx, 1);
		return 0;
	}

	void after() { all_back(); }
};

// The depot's readers while one thread stores magazines of 1, 2 and 1
// slots (the depot's magazines come from its bump index, in order):
// lfpi_depot_slots (lfp_stats) counts the slots below the head it read,
// 0, 1, 3 or 4, and so does a walk.
struct depot_readers : rl::test_suite<depot_readers, 2>, depot_base {
	void before() { init(); }

	static int count(uint32_t idx, void *arg)
	{
		(void)idx;
		++*static_cast<uint32_t *>(arg);
		return 0;
	}

	static bool below_a_head(uint64_t n)
	{
		return n == 0 || n == 1 || n == 3 || n == 4;
	}

	void thread(unsigned id)
	{
		static const uint32_t idx[2] = {0, 1};
		static const uint32_t sizes[3] = {1, 2, 1};

		if (id == 0) {
			for (uint32_t n : sizes) {
				uint32_t spare = LFPI_NIL, r = 0;

				RL_ASSERT(lfpi_depot_store(&d, idx, n, &spare, &r));
			}
			return;
		}
		uint32_t walked = 0;

		RL_ASSERT(below_a_head(lfpi_depot_slots(&d)));
		lfpi_depot_walk(&d, count, &walked);
		RL_ASSERT(below_a_head(walked));
	}
};

// The bare list: lfp_alloc and lfp_free of a bare pool pop and push
// its free list inline (lfpi_bare_alloc, lfpi_bare_free), while the
// library's own paths push slots onto it (the shared path, deferred
// releases) and take it whole (lfp_trim). Objects of 256 bytes, so that
// the exact division of lfpi_bare_free is a shift.
typedef lfpm_object bare_obj;

struct bare_handoff : rl::test_suite<bare_handoff, 3> {
	bare_obj objs[NODES];
	_Atomic(uint32_t) meta[NODES];
	_Atomic(uint32_t) limit;
	struct lfpi_stack s;
	struct lfpi_pool_hot h;

	void before()
	{
		static_assert(sizeof(bare_obj) == 256, "a power of two");
		lfpi_stack_init(&s, meta, sizeof(meta[0]));
		limit($).store(NODES, rl::mo_relaxed);
		h.num = 0;
		h.bare = 1;
		h.head = &s.head;
		h.meta = meta;
		h.limit = &limit;
		h.objs = reinterpret_cast<char *>(objs);
		h.stride = sizeof(bare_obj);
		h.inv = 1; // q = off; idx = off >> 8, rotated: exact for 256
		h.shift = 8;
		for (uint32_t i = NODES; i-- > 0;) {
			objs[i].payload($) = 0;
			objs[i].owned($).store(0, rl::mo_relaxed);
			lfpi_stack_push(&s, i, i);
		}
	}

	static void use(bare_obj &o) { lfpm_own(o); }

	void thread(unsigned id)
	{
		struct lfp_pool *pool = reinterpret_cast<struct lfp_pool *>(this);

		if (id < 2) {
			for (int k = 0; k < 2; k++) {
				void *p = lfpi_bare_alloc(&h, pool);

				if (!p)
					continue;
				use(*static_cast<bare_obj *>(p));
				RL_ASSERT(lfpi_bare_free(&h, pool, p) == 0);
			}
			return;
		}
		uint32_t r = 0, i = lfpi_stack_pop(&s, &r);

		if (i != LFPI_NIL) {
			use(objs[i]);
			lfpi_stack_push(&s, i, i);
		}
		uint32_t first = lfpi_stack_pop_all(&s), last = first;

		for (uint32_t j = first; j != LFPI_NIL;
		     j = meta[j]($).load(rl::mo_relaxed)) {
			use(objs[j]);
			last = j;
		}
		if (first != LFPI_NIL)
			lfpi_stack_push(&s, first, last);
	}

	void after()
	{
		uint32_t seen = 0;

		for (uint32_t i = stack_idx(s.head($).load(rl::mo_relaxed));
		     i != LFPI_NIL; i = meta[i]($).load(rl::mo_relaxed)) {
			RL_ASSERT(i < NODES && !(seen & 1u << i));
			seen |= 1u << i;
		}
		RL_ASSERT(seen == (1u << NODES) - 1);
	}
};

} // namespace

// The out-of-line halves the bare paths call: an empty list is
// exhaustion here (no growth), and no test frees a foreign pointer.
void *lfpi_alloc_slow(struct lfp_pool *pool)
{
	(void)pool;
	return nullptr;
}

int lfpi_free_slow(struct lfp_pool *pool, void *obj)
{
	(void)pool;
	(void)obj;
	RL_ASSERT(!"a bare release went out of line");
	return 0;
}

int main(int argc, char **argv)
{
	// Short ones first: a weakened order is tried on each in turn.
	static const lfpm_test tests[] = {
		{"stack_handoff", 20000, lfpm_run<stack_handoff>, false},
		{"stack_pop_all_relinks", 5000,
		 lfpm_run<stack_pop_all_relinks>, false},
		{"stack_pop_all_publishes", 5000,
		 lfpm_run<stack_pop_all_publishes>, false},
		{"stack_walk_snapshot", 5000, lfpm_run<stack_walk_snapshot>,
		 false},
		{"depot_readers", 5000, lfpm_run<depot_readers>, false},
		{"bare_handoff", 20000, lfpm_run<bare_handoff>, false},
		{"depot_exchange", 20000, lfpm_run<depot_exchange>, false},
	};
	static const lfpm_kept kept[] = {
		{"lfpi_stack_pop", LFPM_CAS_SUCCESS, "acquire", "relaxed",
		 "C11 allows no failure order stronger than the success "
		 "order, and the failure's acquire is needed; the protocol "
		 "needs no more (a successful CAS read the head value an "
		 "acquire load read: the tag makes each value written once)",
		 false, nullptr},
		{"lfpi_bare_alloc", LFPM_CAS_SUCCESS, "acquire", "relaxed",
		 "as in lfpi_stack_pop, whose pop it is", false, nullptr},
	};

	static const char *const units[] = {
		"src/lists/stack.h", "src/lists/stack.c", "src/lists/depot.h",
		"src/lists/depot.c", "include/lfpool/inline.h:lfpi_bare_alloc",
		"include/lfpool/inline.h:lfpi_bare_free",
	};

	static const lfpm_fault faults[] = {
		{"LFPI_FAULT_POP_KEEPS_TAG", &lfpm_fault_pop_keeps_tag},
		{"LFPI_FAULT_POP_ALL_KEEPS_TAG", &lfpm_fault_pop_all_keeps_tag},
	};
	const size_t nfaults = sizeof(faults) / sizeof(faults[0]);

	return lfpm_main(argc, argv, "lists", units,
			 sizeof(units) / sizeof(units[0]), tests,
			 sizeof(tests) / sizeof(tests[0]), kept,
			 sizeof(kept) / sizeof(kept[0]), faults, nfaults);
}
