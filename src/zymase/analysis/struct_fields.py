"""The fields of local structs told apart, for the memory half of activity analysis.

A local struct (an ``alloca``) whose address goes only through GEPs and casts to loads,
stores into it and memsets, or into a field of another such struct that holds nothing
else there, has each access at a known byte offset ``c + m*k`` (``m`` the stride of an
array of structs indexed at run time): a load of a pointer can then be matched with the
stores that can have written it. :meth:`zymase.analysis.memory.MemoryModel.constant_field_pointers`
uses it to find the fields into which only constant pointers are stored (an enzyme_const
pointer next to a duplicated one in ``struct P p = {x, y}``), which must not be shadowed.
"""

from __future__ import annotations

import math

from zymase.analysis.layout import store_size
from zymase.analysis.memory import callee_name, is_marker, memory_kind
from zymase.analysis.type_deductions import gep_offset
from zymase.ir import BlockArgument, Operation, SSAValue, llvm, llvm_ext


def slot_field_stores(root: Operation, depth: int = 0) -> tuple[list, dict, list] | None:
    """The stores into the ``alloca`` ``root`` as ``(c, m, bytes, value)`` (the store's
    address is ``root`` plus ``c + m*k`` bytes for some integer ``k``; ``m`` is 0 at a
    constant offset), the same ``(c, m)`` of each pointer into it and its loads as
    ``(c, m, bytes, load)``, when its address is used only through GEPs and casts by
    loads, stores into it, memsets and markers, or kept in a field of another such local
    struct (``struct Out o = {&in, n}``) that holds only it there, and followed through
    the loads of that field; None when it goes anywhere else (a call, a copy, a phi,
    memory). Then a load at ``(c, m)`` reads what one of the stores overlapping it (modulo
    the strides) wrote, the slot's initial contents (undefined) or a memset's bytes (never
    a shadowed pointer): the fields of a struct, or of each struct of an array indexed at
    run time, told apart (:meth:`MemoryModel.constant_field_pointers`)."""
    work, offsets, stores, loads = [(root.results[0], (0, 0))], {}, [], []
    while work:
        v, (c, m) = work.pop()
        if v in offsets:
            continue
        offsets[v] = (c, m)
        for use in v.uses:
            op = use.operation
            kind = memory_kind(op)
            if kind == "derive":
                step = gep_offset(op) if isinstance(op, llvm.GEPOp) else (0, 0)
                if step is None or callee_name(op) is not None:
                    return None
                work.append((op.results[0], (c + step[0], math.gcd(m, step[1]))))
            elif kind == "load":
                loads.append((c, m, store_size(op.results[0].type), op))
            elif is_marker(op) or (kind == "memset" and op.operands[0] is v):
                continue
            elif kind == "store" and op.ptr is v and op.value is not v:
                stores.append((c, m, store_size(op.value.type), op.value))
            elif kind == "store" and op.value is v and depth < 2:
                held = _loaded_back(op, root, depth)
                if held is None:
                    return None
                work += [(r, (c, m)) for r in held]
            else:
                return None
    return stores, offsets, loads


def _loaded_back(store: Operation, root: Operation, depth: int) -> list[SSAValue] | None:
    """The pointers loaded back from where ``store`` keeps an address into ``root``: a
    field of another local struct (:func:`slot_field_stores`) into which nothing else is
    stored; None otherwise."""
    outer = alloca_of(store.ptr)
    fields = slot_field_stores(outer, depth + 1) if outer is not None and outer is not root else None
    if fields is None or store.ptr not in fields[1]:
        return None
    at, size = fields[1][store.ptr], store_size(store.value.type)
    for c, m, nbytes, value in fields[0]:
        meets = field_overlap(at, size, (c, m), nbytes)
        if meets == "apart" or isinstance(value.owner, (llvm.ZeroOp, llvm.UndefOp, llvm_ext.PoisonOp)):
            continue
        if meets != "same" or value is not store.value:
            return None
    held = []
    for c, m, nbytes, load in fields[2]:
        meets = field_overlap((c, m), nbytes, at, size)
        if meets == "same":
            held.append(load.results[0])
        elif meets == "partly":
            return None
    return held


def alloca_of(ptr: SSAValue) -> Operation | None:
    """The ``alloca`` that ``ptr`` is derived from through GEPs and casts, if any."""
    for _ in range(64):
        if isinstance(ptr, BlockArgument):
            return None
        op = ptr.owner
        kind = memory_kind(op)
        if kind == "alloca":
            return op
        if kind != "derive" or callee_name(op) is not None:
            return None
        ptr = op.operands[0]
    return None


def field_overlap(load: tuple[int, int], nbytes: int, store: tuple[int, int], size: int) -> str:
    """How a load of ``nbytes`` at ``(c, m)`` (:func:`slot_field_stores`) meets a store of
    ``size`` bytes at another ``(c, m)``: ``"same"`` (the same bytes), ``"apart"`` (never
    the same bytes, whatever the run-time indices) or ``"partly"``."""
    period = math.gcd(load[1], store[1])
    start = store[0] - load[0]  # where the store starts, relative to the load
    if period:
        start %= period
        if start == 0 and size == nbytes:
            return "same"
        return "apart" if nbytes <= start and start + size <= period else "partly"
    if start == 0 and size == nbytes:
        return "same"
    return "apart" if start + size <= 0 or nbytes <= start else "partly"
