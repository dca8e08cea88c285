"""Tapes of derivatives that are differentiated again (nested differentiation): the
runtime text ``lower_to_llvm`` adds for indexed caches marked ``zymase.tape = "heap"``.

Such a tape must be memory the outer derivative can shadow, so it is not kept in the
spare-buffer globals of first-order tapes (``__zymase_tape_site``, whose atomics and
``{ptr, i64}`` aggregates the engine cannot differentiate through): its reserve is
``__zymase_cache_grow`` (grow by ``__zymase_tape_realloc``, the fields stored back in
the handle; inlined by the outer ``prepare``), and it is released on return by
``__zymase_tape_free``. Those two take blocks from and give them back to a pool of spare
malloc blocks, ``__zymase_tape_pool`` (a lock word, then the slots), so that a derivative
of a derivative called in a loop reuses its tapes instead of faulting fresh pages in at
every call, which for a Hessian-vector product at n = 10^5 cost 2-3 times the rest of
the call. The engine does not look inside them: they are realloc and free to it
(``analysis/memory.TAPE_POOL``), and forward mode takes the shadow tape from the pool too.
"""

from __future__ import annotations

from zymase.analysis.memory import TAPE_POOL
from zymase.ir import i64, llvm

CACHE_GROW = "__zymase_cache_grow"  # a "heap" cache's reserve: realloc, fields in the handle
TAPE_FREE, TAPE_REALLOC = sorted(TAPE_POOL)  # "__zymase_tape_free", "__zymase_tape_realloc"
TAPE_POOL_GLOBAL = "__zymase_tape_pool"
_TAPE_POOL_SLOTS = 8
TAPE_POOL_TYPE = llvm.LLVMArrayType(1 + _TAPE_POOL_SLOTS, i64)  # lock, then slots
HEAP_TAPE = "heap"  # prefix of a "heap" cache's name (no global behind it)

# A tape that cannot grow (malloc or realloc returned NULL: a tape of many GB, or a limit
# on the address space) ends the program with a message instead of a segfault at the
# first store into it; the reporter is out of line and cold, so the pushes inlined at
# every site only gain a compare on their growth path
TAPE_OUT_OF_MEMORY = "__zymase_tape_out_of_memory"
TAPE_OUT_OF_MEMORY_GLOBAL = "__zymase_tape_out_of_memory_message"
TAPE_OUT_OF_MEMORY_MESSAGE = (
    "zymase: error: out of memory while a derivative recorded its tape (the values its reverse sweep "
    "reads back); hint: bound the tape with --tape-limit=SIZE or ZYMASE_TAPE_LIMIT (loops are then "
    "reversed by checkpointing), or differentiate a smaller problem\n")

# llvm-dialect functions, added to the module's cache runtime (lower_to_llvm); malloc,
# realloc, free and malloc_usable_size are declared there
HEAP_TAPE_RUNTIME = f"""
  llvm.func internal @{CACHE_GROW}(%handle: !llvm.ptr, %need: i64) {{
    %cap_p = llvm.getelementptr %handle[0, 1] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(ptr, i64)>
    %cap = llvm.load %cap_p : !llvm.ptr -> i64
    %full = llvm.icmp "ugt" %need, %cap : i64
    llvm.cond_br %full, ^grow, ^keep
  ^grow:
    %two = llvm.mlir.constant(2 : i64) : i64
    %doubled = llvm.mul %cap, %two : i64
    %newcap = llvm.call_intrinsic "llvm.umax.i64"(%doubled, %need) : (i64, i64) -> i64
    %old = llvm.load %handle : !llvm.ptr -> !llvm.ptr
    %new = llvm.call @{TAPE_REALLOC}(%old, %newcap) : (!llvm.ptr, i64) -> !llvm.ptr
    llvm.store %new, %handle : !llvm.ptr, !llvm.ptr
    llvm.store %newcap, %cap_p : i64, !llvm.ptr
    llvm.br ^keep
  ^keep:
    llvm.return
  }}
  llvm.func internal @{TAPE_REALLOC}(%p: !llvm.ptr, %n: i64) -> !llvm.ptr {{
    %null = llvm.mlir.zero : !llvm.ptr
    %fresh = llvm.icmp "eq" %p, %null : !llvm.ptr
    llvm.cond_br %fresh, ^lock, ^grow
  ^grow:
    %r = llvm.call @realloc(%p, %n) : (!llvm.ptr, i64) -> !llvm.ptr
    %lost = llvm.icmp "eq" %r, %null : !llvm.ptr
    llvm.cond_br %lost, ^out_of_memory, ^grown
  ^grown:
    llvm.return %r : !llvm.ptr
  ^out_of_memory:
    llvm.call @{TAPE_OUT_OF_MEMORY}(%n) : (i64) -> ()
    llvm.unreachable
  ^lock:
    %zero = llvm.mlir.constant(0 : i64) : i64
    %one = llvm.mlir.constant(1 : i64) : i64
    %pool = llvm.mlir.addressof @{TAPE_POOL_GLOBAL} : !llvm.ptr
    %held = llvm.atomicrmw xchg %pool, %one acquire : !llvm.ptr, i64
    %got = llvm.icmp "eq" %held, %zero : i64
    llvm.cond_br %got, ^scan(%one : i64), ^new
  ^scan(%i: i64):
    %end = llvm.mlir.constant({_TAPE_POOL_SLOTS + 1} : i64) : i64
    %more = llvm.icmp "ult" %i, %end : i64
    llvm.cond_br %more, ^look, ^unlock
  ^look:
    %slot = llvm.getelementptr %pool[%i] : (!llvm.ptr, i64) -> !llvm.ptr, i64
    %b = llvm.load %slot : !llvm.ptr -> !llvm.ptr
    %next = llvm.add %i, %one : i64
    %empty = llvm.icmp "eq" %b, %null : !llvm.ptr
    llvm.cond_br %empty, ^scan(%next : i64), ^size
  ^size:
    %have = llvm.call @malloc_usable_size(%b) : (!llvm.ptr) -> i64
    %fits = llvm.icmp "uge" %have, %n : i64
    llvm.cond_br %fits, ^take, ^scan(%next : i64)
  ^take:
    llvm.store %null, %slot : !llvm.ptr, !llvm.ptr
    %u1 = llvm.atomicrmw xchg %pool, %zero release : !llvm.ptr, i64
    llvm.return %b : !llvm.ptr
  ^unlock:
    %u2 = llvm.atomicrmw xchg %pool, %zero release : !llvm.ptr, i64
    llvm.br ^new
  ^new:
    %m = llvm.call @malloc(%n) : (i64) -> !llvm.ptr
    %none_left = llvm.icmp "eq" %m, %null : !llvm.ptr
    llvm.cond_br %none_left, ^out_of_memory, ^fresh_block
  ^fresh_block:
    llvm.return %m : !llvm.ptr
  }}
  llvm.func internal @{TAPE_FREE}(%p: !llvm.ptr) {{
    %null = llvm.mlir.zero : !llvm.ptr
    %none = llvm.icmp "eq" %p, %null : !llvm.ptr
    llvm.cond_br %none, ^out, ^lock
  ^lock:
    %zero = llvm.mlir.constant(0 : i64) : i64
    %one = llvm.mlir.constant(1 : i64) : i64
    %pool = llvm.mlir.addressof @{TAPE_POOL_GLOBAL} : !llvm.ptr
    %held = llvm.atomicrmw xchg %pool, %one acquire : !llvm.ptr, i64
    %got = llvm.icmp "eq" %held, %zero : i64
    llvm.cond_br %got, ^scan(%one : i64), ^drop
  ^scan(%i: i64):
    %end = llvm.mlir.constant({_TAPE_POOL_SLOTS + 1} : i64) : i64
    %more = llvm.icmp "ult" %i, %end : i64
    llvm.cond_br %more, ^look, ^unlock
  ^look:
    %slot = llvm.getelementptr %pool[%i] : (!llvm.ptr, i64) -> !llvm.ptr, i64
    %b = llvm.load %slot : !llvm.ptr -> !llvm.ptr
    %next = llvm.add %i, %one : i64
    %empty = llvm.icmp "eq" %b, %null : !llvm.ptr
    llvm.cond_br %empty, ^keep, ^scan(%next : i64)
  ^keep:
    llvm.store %p, %slot : !llvm.ptr, !llvm.ptr
    %u1 = llvm.atomicrmw xchg %pool, %zero release : !llvm.ptr, i64
    llvm.br ^out
  ^unlock:
    %u2 = llvm.atomicrmw xchg %pool, %zero release : !llvm.ptr, i64
    llvm.br ^drop
  ^drop:
    llvm.call @free(%p) : (!llvm.ptr) -> ()
    llvm.br ^out
  ^out:
    llvm.return
  }}
"""
