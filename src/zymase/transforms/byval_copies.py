"""By-value aggregate parameters (``byval``) get their callee-side copy written out.

A ``byval(T)`` pointer parameter points to a copy of the caller's object that the
callee owns: the callee may overwrite it (LLVM's tail-recursion elimination does, when
it turns ``f(sub(a), ...)`` into a loop that stores the next quadrant's descriptor into
its own parameters) without the caller ever seeing it. The derivative functions zymase
generates take plain pointers, and inlining substitutes the caller's pointer for the
parameter, so that copy would be lost: the callee would overwrite the caller's struct,
and the caller's later calls would read the clobbered one. Before differentiation, a
body that may write through such a parameter therefore makes the copy itself (an
``alloca T`` and a ``memcpy`` at its entry, used in place of the parameter); its shadow
then follows from the ordinary alloca and memcpy rules.
"""

from __future__ import annotations

from zymase.analysis.memory import derived_uses, is_marker, memory_kind
from zymase.analysis.layout import size_align
from zymase.ir import Block, IntegerAttr, Operation, i1, i64, llvm


def _written_through(param, successor_operands) -> bool:
    """Whether the body may write memory through ``param`` (or let a call do it)."""
    for ptr, op in derived_uses(param, successor_operands):
        kind = memory_kind(op)
        if kind == "load" or is_marker(op):
            continue
        if kind == "store" and op.ptr is ptr and op.value is not ptr:
            return True
        if kind == "memcpy" and op.operands[1] is ptr and op.operands[0] is not ptr:
            continue
        return True  # a store of the address, a memcpy/memset into it, any other use
    return False


def byval_types(fop: Operation) -> dict[int, object]:
    """Parameter position -> pointee type, for the ``byval`` parameters of ``fop``."""
    attrs = fop.properties.get("arg_attrs") if isinstance(fop, llvm.FuncOp) else None
    if attrs is None:
        return {}
    return {i: d.data["llvm.byval"] for i, d in enumerate(attrs.data) if "llvm.byval" in d.data}


def copy_byval_params(fop: Operation, entry: Block, successor_operands) -> int:
    """In ``entry`` (the entry block of a copy of ``fop``'s body), give each ``byval``
    parameter that the body may write through its own copy; returns how many.
    ``successor_operands(term)`` lists, per successor of a terminator, the values it
    passes to that block (the flavor's)."""
    count = 0
    for i, typ in byval_types(fop).items():
        param = entry.args[i]
        if not _written_through(param, successor_operands):
            continue
        size, align = size_align(typ)
        first = entry.first_op
        one = llvm.ConstantOp(IntegerAttr(1, i64), i64)
        slot = llvm.AllocaOp(one.results[0], typ, alignment=align)
        nbytes = llvm.ConstantOp(IntegerAttr(size, i64), i64)
        volatile = llvm.ConstantOp(IntegerAttr(0, i1), i1)
        copy = llvm.CallIntrinsicOp("llvm.memcpy.p0.p0.i64",
                                    [slot.results[0], param, nbytes.results[0], volatile.results[0]], [])
        for op in (one, slot, nbytes, volatile, copy):
            entry.insert_op_before(op, first)
        param.replace_all_uses_with(slot.results[0])
        copy.operands = [slot.results[0], param, nbytes.results[0], volatile.results[0]]
        count += 1
    return count
