/* SPDX-License-Identifier: MIT */
// lfpool.hpp without exceptions and RTTI: built with -fno-exceptions
// -fno-rtti, this program uses the main API (pools, caches, handles,
// unique_ptr, destroy by handle, for_each, a cache that outlives its
// pool, pool_resource), checks that a pool that cannot be made by its
// constructor prints why (as what() says it: the field at fault and
// lfp_strerror's text) and aborts, and initialises an engine in two
// phases through the factories (create), whose failures are returned,
// not fatal. A plain program: it exits non-zero on a failure.
#include <lfpool.hpp>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#ifdef __cpp_exceptions
#error "cxx_noexcept.cc is built with -fno-exceptions"
#endif

namespace
{

int failures;

#define EXPECT(cond)                                                           \
	do {                                                                   \
		if (!(cond)) {                                                 \
			std::fprintf(stderr, "%s:%d: expected %s\n", __FILE__, \
				     __LINE__, #cond);                         \
			failures++;                                            \
		}                                                              \
	} while (0)

// Non-trivial, and its constructor is not noexcept: make takes the path
// that would release the slot if it threw.
struct named {
	static long made, gone;
	std::string name;

	explicit named(const char *n) : name(n)
	{
		made++;
	}
	~named()
	{
		gone++;
	}
};
long named::made, named::gone;

void pools_caches_handles()
{
	{
		lfp::pool<named> pool(4);
		named *a = pool.make("a name longer than the small buffer");
		lfp::handle<named> h = pool.handle_of(a);

		EXPECT(a && a->name.size() > 20);
		EXPECT(h && pool.resolve(h) == a);
		pool.destroy(a);
		EXPECT(!pool.resolve(h));
		EXPECT(named::gone == 1);

		lfp::cache<named> cache(pool);
		named *b = cache.make("b");
		EXPECT(b && pool.handle_of(b) != h);
		{
			lfp::unique_ptr<named> u = pool.make_unique("u");

			EXPECT(u && u->name == "u");
		}
		EXPECT(named::gone == 2);
		named *c = cache.make("c"), *d = cache.make("d"),
		      *e = cache.make("e");
		EXPECT(c && d && e);
		EXPECT(!cache.make("exhausted") && !pool.make("exhausted"));
		EXPECT(pool.stats().live == 4);
		cache.destroy(b);
		pool.destroy(c);
		// d and e are left for the pool to destroy.
	}
	EXPECT(named::made == 6 && named::gone == 6);
}

void handles_walks_late_caches()
{
	named::made = named::gone = 0;
	lfp::cache<named> *late;
	{
		lfp::pool<named> pool(8);
		named *a = pool.make("a");
		lfp::handle<named> h = pool.handle_of(a);
		int seen = 0;

		pool.make("b");
		EXPECT(pool.for_each([&](named &n, lfp::handle<named> nh) {
			seen++;
			EXPECT(pool.resolve(nh) == &n);
		}) == 0);
		EXPECT(seen == 2);
		EXPECT(pool.for_each([](named &n) { return n.name == "b"; }) ==
		       1);
		EXPECT(pool.destroy(h) && !pool.destroy(h));
		EXPECT(named::gone == 1);

		late = new lfp::cache<named>(pool);
		lfp::cache_unique_ptr<named> u = late->make_unique("u");
		EXPECT(u && late->stats().allocs == 1);
		EXPECT(late->destroy(pool.handle_of(u.release())));
		late->make("left for the pool");
	}
	EXPECT(named::made == 4 && named::gone == 4);
	delete late; // the pool took its C cache: nothing to do
}

void memory_resource()
{
	lfp::pool_resource res(64, 1000);
	{
		std::pmr::vector<int> v(&res);

		for (int i = 0; i < 10000; i++)
			v.push_back(i);
		EXPECT(v[9999] == 9999);
		EXPECT(res.stats().live == 0); // 40000 bytes: upstream's
		std::pmr::string s("a string longer than fifteen", &res);
		EXPECT(res.stats().live == 1);
	}
	EXPECT(res.stats().live == 0);
	EXPECT(res.is_equal(res));
}

// make() in a child, whose stderr is read whole: the constructor must
// print want, a line, and abort.
template <class F> void expect_abort_saying(F make, const std::string &want)
{
	std::string said;
	int fds[2], status = 0;
	char buf[256];
	ssize_t n;
	pid_t pid;

	if (pipe(fds) != 0) {
		std::perror("pipe");
		failures++;
		return;
	}
	std::fflush(nullptr);
	pid = fork();
	if (pid == 0) {
		dup2(fds[1], 2);
		close(fds[0]);
		make();
		_exit(0); // not reached: the constructor aborts
	}
	close(fds[1]);
	while ((n = read(fds[0], buf, sizeof(buf))) > 0)
		said.append(buf, static_cast<std::size_t>(n));
	close(fds[0]);
	EXPECT(waitpid(pid, &status, 0) == pid);
	EXPECT(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
	// Under qemu-user, the emulator itself says last how the child
	// ended ("qemu: uncaught target signal 6 (Aborted) ..."): not the
	// library's words.
	const char *emulator = std::getenv("LFP_EMULATOR");
	std::size_t q = said.rfind("\nqemu: uncaught target signal ");
	if (emulator && *emulator && q != std::string::npos)
		said.erase(q + 1);
	if (said != want + "\n") {
		std::fprintf(stderr, "printed: %s\nwanted:  %s\n", said.c_str(),
			     want.c_str());
		failures++;
	}
}

// The words check_cxx expects of what(): the class and the step, the
// field at fault with its value if any, lfp_strerror's text, strerror's.
std::string failure_text(const char *what, const char *field, int err)
{
	std::string s = what;

	if (field)
		s += std::string(": ") + field;
	return s + ": " + lfp_strerror(-err) + ": " + std::strerror(err);
}

// The line a failed constructor prints says why, as what() does with
// exceptions: lfp_strerror's text and the field of the configuration at
// fault, with its value.
void creation_failure_says_why()
{
	expect_abort_saying([] { lfp::pool<int> pool(0); },
			    failure_text("lfp::pool<T>: lfp_create",
					 "capacity 0", EINVAL));
	expect_abort_saying([] { lfp::pool_resource res(0, 16); },
			    failure_text("lfp::pool_resource: lfp_create",
					 "obj_size 0", EINVAL));
	expect_abort_saying(
		[] {
			lfp_config c{};

			c.capacity = 8;
			c.cache_size = 4;
			c.batch_size = 9;
			lfp::pool<int> pool(c);
		},
		failure_text("lfp::pool<T>: lfp_create", "batch_size 9",
			     EINVAL));
	expect_abort_saying([] { lfp::family fam({ 64, 32 }, { 4, 4 }); },
			    failure_text("lfp::family: lfp_family_create",
					 "sizes", EINVAL));
	expect_abort_saying(
		[] {
			lfp::pool<int> empty;
			lfp::cache<int> cache(empty);
		},
		failure_text("lfp::cache<T>: lfp_cache_create", nullptr,
			     EINVAL));
}

// An engine's systems: constructed empty with the engine, made by
// Init, which may fail and be called again, given up by Shutdown.
struct particle {
	float pos[3], vel[3], life;
};

struct engine {
	lfp::pool<particle> particles;
	lfp::cache<particle> render;
	lfp::family messages;
	lfp::family_cache mailbox;

	int init(std::uint32_t n, std::size_t message_size) noexcept
	{
		int err;

		// -EBUSY: made already, and kept as it is.
		if ((err = lfp::pool<particle>::create(n, particles)))
			return err;
		if ((err = lfp::cache<particle>::create(particles, render)) ||
		    (err = lfp::family::create({ 32, message_size }, { n, n },
					       messages)) ||
		    (err = lfp::family_cache::create(messages, mailbox)))
			shutdown();
		return err;
	}

	void shutdown() noexcept
	{
		mailbox.reset();
		render.reset();
		messages.reset();
		particles.reset();
	}
};

// Made before main, with nothing to fail: an empty pool at namespace
// scope, as an engine's globals are.
lfp::pool<particle> global_particles;

void two_phase_init()
{
	engine e;

	EXPECT(!e.particles && !e.render && !e.messages && !e.mailbox);
	EXPECT(!e.render.make() && !e.mailbox.alloc(8));
	EXPECT(!global_particles && !global_particles.make());

	// Each step fails in turn, and leaves everything empty.
	EXPECT(e.init(0, 64) == -EINVAL);
	EXPECT(!e.particles && !e.render && !e.messages && !e.mailbox);
	EXPECT(e.init(16, 16) == -EINVAL); // classes not increasing
	EXPECT(!e.particles && !e.render && !e.messages && !e.mailbox);

	EXPECT(e.init(16, 64) == 0);
	EXPECT(e.particles && e.render && e.messages && e.mailbox);
	particle *p = e.render.make();
	void *m = e.mailbox.alloc(40);
	EXPECT(p && p->life == 0.0f && e.particles.stats().live == 1);
	EXPECT(m && e.messages.class_of(m) == 1);
	EXPECT(e.init(16, 64) == -EBUSY); // kept as it was
	EXPECT(e.particles.resolve(e.particles.handle_of(p)) == p);
	EXPECT(e.mailbox.free(m) == 0);
	e.render.destroy(p);

	// Shutdown, and Init again with other sizes.
	e.shutdown();
	EXPECT(!e.particles && !e.render && !e.messages && !e.mailbox);
	EXPECT(e.init(4, 256) == 0);
	EXPECT(e.particles.stats().capacity == 4);
	EXPECT(e.messages.class_size(1) == 256);

	EXPECT(lfp::pool<particle>::create(8u, global_particles) == 0);
	EXPECT(global_particles && global_particles.make());
	global_particles.reset();
	EXPECT(!global_particles);
}

} // namespace

int main()
{
	creation_failure_says_why();
	two_phase_init();
	pools_caches_handles();
	handles_walks_late_caches();
	memory_resource();
	if (failures)
		std::fprintf(stderr, "cxx_noexcept: %d failures\n", failures);
	return failures ? 1 : 0;
}
