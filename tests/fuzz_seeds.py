#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the seed corpus of fuzz_pool.c into tests/fuzz-corpus/.

Each seed is a small program in the input language that fuzz_pool.c
reads (see its header and fz_step): a configuration of pool 0, then
calls. The seeds reach every call and policy at least once, so that the
fuzzer starts from inputs that get deep into the library.

Usage: fuzz_seeds.py [DIR]   (default: fuzz-corpus beside this script)
"""
import os
import sys

# Indices into the tables of fuzz_pool.c.
SIZES = [0, 1, 2, 3, 7, 8, 13, 16, 24, 48, 64, 100, 4096, 5000,
         'SIZE_MAX', 'SIZE_MAX/2']
ALIGNS = [0, 1, 2, 4, 8, 16, 32, 64, 128, 4096, 3, 24, 1 << 20,
          1 << 62, 'SIZE_MAX', 8192]
CAPS = [0, 1, 2, 3, 4, 5, 8, 16, 31, 64, 100, 257, 1000, 65536,
        'LFP_MAX_CAPACITY', 'UINT32_MAX']
CACHE_SIZES = [0, 1, 2, 3, 4, 8, 64, 4097]

NULL, GROW, RECLAIM, ABORT, BAD_POLICY = 0, 1, 2, 3, 4
NO_CACHE, STRICT, POISON = 1, 2, 4
CTOR, ON_ALLOC, ON_FREE = 1, 2, 4
# Max capacity choices (fz_pick_max).
MAX_NONE, MAX_SAME, MAX_X2, MAX_PLUS1, MAX_MINUS1, MAX_X16, MAX_HUGE = range(7)
# Caller memory (fz_memory): none, or exact, short, long, off by 8...
MEM_NONE = 1
MEM_EXACT, MEM_SHORT, MEM_LONG, MEM_OFF8, MEM_OFF32, MEM_OFF64, MEM_ZERO = (
    k << 2 for k in range(7))


def size(n):
    """obj_size byte: 1..128 directly, else an entry of SIZES."""
    if isinstance(n, int) and 1 <= n <= 128:
        return 0x80 | (n - 1)
    return SIZES.index(n)


def cap(n):
    if isinstance(n, int) and 1 <= n <= 128:
        return 0x80 | (n - 1)
    return CAPS.index(n)


def config(obj=32, align=0, capacity=16, maxsel=MAX_NONE, flags=0,
           unknown_flag=None, cache=0, batch=0, exhaust=NULL,
           reclaim=True, tries=0, hooks=0, mem=MEM_NONE):
    # An unknown flag is one of the bits 3..18.
    fl = flags | (8 | (unknown_flag - 3) << 4
                  if unknown_flag is not None else 0)
    ex = exhaust | (0 if reclaim else 8)
    return bytes([size(obj), ALIGNS.index(align), cap(capacity), maxsel,
                  fl, CACHE_SIZES.index(cache), batch, ex, tries, hooks,
                  mem]) + (bytes([40]) if mem == MEM_LONG else b'')


def op(code, pool=0):
    """The byte for pool operation `code` (0..19) on pool 0 or 1."""
    for b in range(pool << 7, (pool << 7) + 128):
        if b % 20 == code and not 0x60 <= (b & 0x7f) <= 0x63:
            return bytes([b])
    raise ValueError(code)


def rare(code, pool=0):
    return bytes([pool << 7 | 0x60 | code])


# Pointer picks (fz_pick_ptr): kind, then a 16-bit number.
LIVE, INTERIOR, STALE, PNULL, LOCAL, HEAP, FOREIGN, BELOW, END, SLOT, \
    BEYOND = 0, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13


def ptr(kind, r=0, sub=0):
    return bytes([kind | sub << 4, r & 0xff, r >> 8])


def alloc(n=1, pool=0):
    return op(0, pool) * n


def free(kind=LIVE, r=0, pool=0, sub=0):
    return op(3, pool) + ptr(kind, r, sub)


def bulk_alloc(n, pool=0):
    return op(5, pool) + bytes([n])


def bulk_free(ptrs, pool=0):
    return op(6, pool) + bytes([len(ptrs)]) + b''.join(ptrs)


def cache(action, k=0, pool=0, extra=b''):
    return op(7, pool) + bytes([k << 3 | action]) + extra


C_CREATE, C_DESTROY, C_ALLOC, C_FREE, C_FLUSH, C_FREE_HANDLE = 0, 1, 2, 4, 6, 7
# Handle picks (fz_pick_handle).
H_LIVE, H_STALE, H_NULL, H_EVEN, H_LATER, H_BEYOND, H_ODD, H_RANDOM = range(8)


def handle(kind, r=0, extra=b''):
    return bytes([kind, r & 0xff, r >> 8]) + extra


def resolve(h, pool=0):
    return op(9, pool) + bytes([1]) + h


def free_handle(h, pool=0):
    return op(9, pool) + bytes([0]) + h


def query(p, idx=0, pool=0):
    return op(10, pool) + p + bytes([idx & 0xff, idx >> 8])


def reserve(sel, r=0, pool=0):
    return op(11, pool) + bytes([r & 0xff, r >> 8, sel])


def trim(pool=0):
    return op(12, pool)


def foreach(actions, begin=0, end=None, pool=0):
    if end is None:
        head = bytes([begin & 0xff, begin >> 8, 1])
    else:
        head = bytes([begin & 0xff, begin >> 8, 0, end & 0xff, end >> 8])
    return op(13, pool) + head + bytes(actions)


V_GO, V_FREE, V_FREE_HANDLE, V_STOP, V_ALLOC = 0, 4, 5, 6, 7


def cache_alloc(k=0, pool=0):
    # op 14 allocates through cache[op / 32 % 3].
    for b in range(pool << 7, (pool << 7) + 128):
        if b % 20 == 14 and b // 32 % 3 == k and not 0x60 <= (b & 0x7f) <= 0x63:
            return bytes([b])
    raise ValueError(k)


def barrier(pool=0):
    return op(15, pool)


def audit(pool=0):
    return op(16, pool)


def in_thread(calls, pool=0):
    """Run `calls` (1..8 calls, already encoded) in a new thread."""
    n, body = calls
    return op(17, pool) + bytes([n - 1]) + body


def free_by_handle(kind=LIVE, r=0, pool=0):
    return op(18, pool) + ptr(kind, r)


def create(cfg, pool=1):
    return rare(0, pool) + cfg


def destroy(pool=1):
    return rare(1, pool)


def null_calls():
    return rare(2)


def deferred(kind=LIVE, r=0, pool=0, sub=0):
    return rare(3, pool) + b'\0' + ptr(kind, r, sub)


# Reclaim callback answers (fz_reclaim): bit 0 release a victim, bit 1
# give up, bit 2 release by handle; a victim takes one more byte.
def reclaim(free_victim, give_up=False, by_handle=False, victim=0):
    b = (1 if free_victim else 0) | (2 if give_up else 0) | \
        (4 if by_handle else 0)
    return bytes([b, victim]) if free_victim else bytes([b])


def churn(n, pool=0):
    out = b''
    for i in range(n):
        out += alloc(2, pool) + free(LIVE, i * 7, pool)
    return out


SEEDS = {
    'basic': config(hooks=CTOR | ON_ALLOC | ON_FREE) + alloc(5) +
    free(LIVE, 1) + free(LIVE, 2) + free(LIVE, 0) + alloc(2) + audit(),
    'no-cache': config(flags=NO_CACHE) + alloc(6) + free(LIVE, 3) +
    free(STALE) + free(LIVE) + alloc(3) + audit(),
    'strict': config(flags=STRICT, capacity=8) + alloc(8) + alloc() +
    free(LIVE, 5) + free(STALE) + alloc(),
    'exhaust-null': config(capacity=4) + alloc(6) + free(LIVE) + alloc(2),
    'exhaust-grow': config(capacity=4, maxsel=MAX_X16, exhaust=GROW,
                           hooks=CTOR) + bulk_alloc(64) + alloc(3) +
    free(LIVE, 9) + alloc(),
    'grow-reserve': config(capacity=3, maxsel=MAX_X16, exhaust=GROW) +
    reserve(0, 5) + alloc(10) + reserve(1) + reserve(2) + reserve(4) +
    reserve(5) + alloc(4) + audit(),
    'reclaim': config(capacity=4, exhaust=RECLAIM, tries=2) + alloc(4) +
    alloc() + reclaim(True, victim=2) + alloc() + reclaim(False) +
    reclaim(True, by_handle=True, victim=1) + alloc() + reclaim(False) +
    reclaim(False) + audit(),
    'reclaim-gives-up': config(capacity=2, exhaust=RECLAIM, tries=5) +
    alloc(2) + alloc() + reclaim(False, give_up=True) + alloc() +
    reclaim(True, give_up=True, victim=1) + alloc(),
    'reclaim-bulk': config(capacity=5, exhaust=RECLAIM, tries=1) +
    alloc(3) + bulk_alloc(9) + reclaim(True, victim=0) + reclaim(True, victim=3) +
    reclaim(False),
    'exhaust-abort': config(capacity=4, exhaust=ABORT) + alloc(10) +
    bulk_alloc(5) + free(LIVE) + alloc(2),
    'memory-exact': config(capacity=20, mem=MEM_EXACT) + alloc(21) +
    trim() + free(LIVE, 4) + audit(),
    'memory-short': config(mem=MEM_SHORT) + alloc(2),
    'memory-zero': config(mem=MEM_ZERO) + alloc(2),
    'memory-long': config(obj=100, mem=MEM_LONG) + alloc(3) + free(LIVE),
    'memory-misaligned': config(mem=MEM_OFF8) + alloc() +
    create(config(align=128, mem=MEM_OFF64)) + alloc(2, pool=1),
    'memory-grow': config(capacity=4, maxsel=MAX_X2, exhaust=GROW,
                          mem=MEM_EXACT) + alloc(9) + trim() + audit(),
    'align-4096': config(obj=13, align=4096, capacity=5) + alloc(5) +
    free(INTERIOR, 1, sub=3) + query(ptr(INTERIOR, 2, sub=5), 3) + audit(),
    'bad-configs': config(obj=0) + alloc() +
    create(config(align=3)) + create(config(capacity=0)) +
    create(config(capacity='UINT32_MAX')) +
    create(config(unknown_flag=9)) + create(config(cache=4097)) +
    create(config(cache=2, batch=0x81)) +
    create(config(exhaust=BAD_POLICY)) +
    create(config(exhaust=RECLAIM, reclaim=False)) +
    create(config(capacity=8, maxsel=MAX_MINUS1)) +
    create(config(obj='SIZE_MAX')) + create(config(obj='SIZE_MAX/2')) +
    create(config(align=1 << 62, capacity=1)) +
    create(config(align=1 << 62, capacity=1, maxsel=MAX_X2)),
    'huge-capacity': config(obj=1, capacity='LFP_MAX_CAPACITY') + alloc() +
    create(config(capacity=65536)) + alloc(3, pool=1) +
    create(config(capacity=4, maxsel=MAX_HUGE, exhaust=GROW)),
    'caches': config(capacity=40, cache=4, batch=2) + cache(C_CREATE, 0) +
    cache(C_CREATE, 1) + cache(C_CREATE, 2) + cache(C_ALLOC, 0) * 6 +
    cache(C_ALLOC, 1) * 3 + cache(C_FREE, 1, extra=ptr(LIVE, 2)) +
    cache(C_FREE, 0, extra=ptr(LIVE, 4)) + cache(C_FLUSH, 0) +
    cache(C_FREE, 2, extra=ptr(STALE)) + cache_alloc(2) +
    cache(C_DESTROY, 1) + alloc(30) + audit(),
    'cache-1': config(capacity=6, cache=1, batch=1) + alloc(3) +
    free(LIVE) + free(LIVE) + alloc(5) + audit(),
    'cache-steal': config(capacity=6, flags=NO_CACHE, cache=3) +
    cache(C_CREATE, 0) + cache(C_ALLOC, 0) * 3 +
    cache(C_FREE, 0, extra=ptr(LIVE)) + cache(C_FREE, 0, extra=ptr(LIVE)) +
    alloc(5) + audit(),
    'handles': config(capacity=8) + alloc(4) +
    resolve(handle(H_LIVE, 1)) + free_handle(handle(H_LIVE, 2)) +
    free_handle(handle(H_STALE)) + resolve(handle(H_STALE)) +
    free_handle(handle(H_NULL)) + free_handle(handle(H_EVEN, 1)) +
    free_handle(handle(H_LATER)) + free_handle(handle(H_BEYOND, 3)) +
    free_handle(handle(H_ODD, 7, b'\x05')) +
    free_handle(handle(H_RANDOM, 0, b'\x01\x00\x00\x00\x03\x00\x00\x00')) +
    free_by_handle(LIVE, 1) + audit(),
    'cache-handles': config(capacity=8) + cache(C_CREATE, 1) + alloc(3) +
    cache(C_FREE_HANDLE, 1, extra=handle(H_LIVE, 1)) +
    cache(C_FREE_HANDLE, 1, extra=handle(H_STALE)) + audit(),
    'bulk-free': config(capacity=16) + bulk_alloc(10) +
    bulk_free([ptr(LIVE, 0), ptr(LIVE, 0), ptr(PNULL), ptr(INTERIOR, 1, 1),
               ptr(LIVE, 3), ptr(HEAP), ptr(STALE), ptr(SLOT, 15)]) + audit(),
    'foreach': config(capacity=12, hooks=ON_FREE) + alloc(10) +
    foreach([V_GO, V_FREE, V_GO, V_FREE_HANDLE, V_ALLOC, V_GO, V_GO, V_GO,
             V_GO, V_GO, V_GO]) + foreach([V_GO, V_STOP | 24]) +
    audit(),
    'foreach-range': config(capacity=20) + alloc(15) + free(LIVE, 3) +
    foreach([V_GO] * 8, begin=3, end=11) + foreach([], begin=9, end=4) +
    foreach([V_FREE] * 3, begin=17, end=300),
    'trim': config(obj=4096, capacity=40) + alloc(40) +
    bulk_free([ptr(LIVE, i) for i in range(30)]) + trim() + alloc(5) +
    trim() + audit(),
    'grow-trim': config(obj=5000, capacity=8, maxsel=MAX_X16, exhaust=GROW,
                        hooks=CTOR) + alloc(40) +
    bulk_free([ptr(LIVE, i) for i in range(25)]) + trim() + reserve(1) +
    alloc(20) + trim() + audit(),
    'deferred': config(capacity=6) + alloc(6) + deferred(LIVE, 1) +
    deferred(LIVE, 2) + deferred(STALE) + alloc() + barrier() + alloc(2) +
    audit(),
    'deferred-bad': config(capacity=6) + alloc(2) + deferred(PNULL) +
    deferred(INTERIOR, 0, sub=1) + deferred(HEAP) + deferred(SLOT, 5) + audit(),
    'two-pools': config(capacity=8) + create(config(capacity=8, obj=64)) +
    alloc(3) + alloc(3, pool=1) + free(FOREIGN, 1) +
    free(FOREIGN, 2, pool=1) + query(ptr(FOREIGN)) + destroy() + alloc(2),
    'null-calls': config() + null_calls() + alloc() + null_calls(),
    'queries': config(obj=24, align=8, capacity=10, maxsel=MAX_X2) +
    alloc(4) + query(ptr(LIVE, 1), 3) + query(ptr(INTERIOR, 2, 7), 9) +
    query(ptr(BELOW, 0, 2), 20) + query(ptr(END)) + query(ptr(SLOT, 15)) +
    query(ptr(BEYOND, 0, 3)) + query(ptr(LOCAL)) + query(ptr(STALE)),
    'bad-frees': config(obj=24, capacity=10, maxsel=MAX_X2, exhaust=GROW) +
    alloc(3) + free(PNULL) + free(LOCAL) + free(HEAP) + free(BELOW) +
    free(END) + free(SLOT, 13) + free(BEYOND, 0, sub=5) + free(INTERIOR, 1, sub=9) +
    free(LIVE, 1) + free(STALE) + free(STALE) + audit(),
    'churn': config(obj=8, capacity=20, cache=4, batch=1) + churn(40) +
    audit(),
    'churn-strict-no-cache': config(capacity=9, flags=NO_CACHE | STRICT) +
    churn(30) + audit(),
    'hooks-grow': config(capacity=2, maxsel=MAX_X16, exhaust=GROW,
                         hooks=CTOR | ON_ALLOC | ON_FREE) + alloc(20) +
    foreach([V_FREE] * 20) + alloc(20) + audit(),
    'thread': config(capacity=10, cache=2, batch=1) + alloc(3) +
    in_thread((4, alloc(2) + free(LIVE, 1) + free(LIVE, 0))) + alloc(8) +
    in_thread((3, free(LIVE, 2) + deferred(LIVE, 3) + alloc())) + audit(),
    'thread-no-cache': config(capacity=4, flags=NO_CACHE) +
    cache(C_CREATE, 0) + in_thread((2, cache(C_ALLOC, 0) * 2)) +
    alloc(3) + audit(),
    'poison': config(obj=24, capacity=12, flags=POISON) + churn(12) +
    bulk_free([ptr(LIVE, i) for i in range(6)]) + alloc(4) + audit(),
    'poison-trim': config(obj=4096, capacity=12, flags=POISON | NO_CACHE) +
    alloc(12) + bulk_free([ptr(LIVE, i) for i in range(10)]) + trim() +
    alloc(10) + audit(),
    'poison-ctor-grow': config(obj=13, capacity=2, maxsel=MAX_X16,
                               exhaust=GROW, flags=POISON, hooks=CTOR) +
    alloc(9) + free(LIVE, 2) + free(LIVE, 5) + alloc(3) + audit(),
    'poison-memory-deferred': config(capacity=6, flags=POISON,
                                     mem=MEM_EXACT) + alloc(6) +
    deferred(LIVE, 1) + barrier() + alloc() + audit(),
    'destroy-with-caches': config(capacity=8) + cache(C_CREATE, 0) +
    cache(C_ALLOC, 0) + alloc(2) + destroy(0) + null_calls(),
    'recreate': config(capacity=4) + alloc(4) + create(config(capacity=4),
                                                      pool=0) + alloc(4),
}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here,
                                                             'fuzz-corpus')
    os.makedirs(out, exist_ok=True)
    for name, data in sorted(SEEDS.items()):
        with open(os.path.join(out, name), 'wb') as f:
            f.write(data)
    print(f'{len(SEEDS)} seeds written to {out}')


if __name__ == '__main__':
    main()
