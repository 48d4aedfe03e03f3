/* SPDX-License-Identifier: MIT */
// lfpool.h must be valid C++ as well as C11: cxx_header.test compiles
// this with every C++ compiler at hand, -std=c++17 -Wall -Wextra -pedantic
// -Werror, and runs it. It needs no library: the header alone is on trial.
#include <lfpool.h>

#include <type_traits>

// The null handle is an lfp_handle, zero, and usable in constant
// expressions; the declarations keep their C types.
constexpr lfp_handle null_handle = LFP_NULL_HANDLE;
static_assert(null_handle.bits == 0, "LFP_NULL_HANDLE is zero");
static_assert(std::is_same<decltype(LFP_NULL_HANDLE), lfp_handle>::value,
	      "LFP_NULL_HANDLE is an lfp_handle");
static_assert(std::is_same<decltype(lfp_alloc(nullptr)), void *>::value,
	      "lfp_alloc returns void *");
static_assert(std::is_same<decltype(lfp_handle_of(nullptr, nullptr)),
			   lfp_handle>::value,
	      "lfp_handle_of returns lfp_handle");

static lfp_handle pass(lfp_handle h)
{
	return h;
}

int main()
{
	lfp_handle h = LFP_NULL_HANDLE;
	lfp_handle named = { UINT64_C(7) << 32 | 42 };

	if (!lfp_handle_is_null(h) || !lfp_handle_is_null(pass(LFP_NULL_HANDLE)))
		return 1;
	if (lfp_handle_is_null(named) || lfp_handle_index(named) != 42 ||
	    lfp_handle_gen(named) != 7)
		return 2;
	if (lfp_handle_index(LFP_NULL_HANDLE) || lfp_handle_gen(h))
		return 3;
	return 0;
}
