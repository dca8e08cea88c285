"""Zero the shadows of globals where the program asks for a derivative.

A global that holds active data gets one shadow global for the whole program
(``autodiff/memory._shadow_global``). A derivative treats a global's value at the call as
a constant, so its shadow must be zero there: otherwise what a reverse call left in it
(the adjoint of that initial value) or a forward call (its tangent) is added into the
next call of a function that reads the global before writing it (state carried across
calls, ``acc += x[i]``), silently. The shadows are zeroed before each call of a
derivative the program asked for (a marker; in split mode at ``__enzyme_augmentfwd``, for
the reverse sweep that follows), not in a callee's derivative, which shares them with its
caller's sweep. Shadows that may hold pointers (a struct with a pointer
field, bytes) are left alone: a pointer's shadow set by one call may be meant for the next.
"""

from __future__ import annotations

from zymase.analysis.layout import size_align
from zymase.ir import IntegerAttr, IntegerType, ModuleOp, i1, i8, i64, is_float_type, llvm

SHADOW_PREFIX = "__zymase_shadow_"


def _plain_data(t) -> bool:
    """Floats and integers (not bytes, which may hold anything) all the way down."""
    if isinstance(t, llvm.LLVMStructType):
        return all(_plain_data(x) for x in t.types.data)
    if isinstance(t, llvm.LLVMArrayType):
        return _plain_data(t.type)
    if isinstance(t, IntegerType):
        return t.width.data > 8
    return is_float_type(t)


def shadows_reached(module: ModuleOp, names: list[str]) -> list[llvm.GlobalOp]:
    """The shadow globals (of plain data) that the derivatives ``names`` or the functions
    they call take the address of, in module order."""
    tops = {op.sym_name.data: op for op in module.body.block.ops if getattr(op, "sym_name", None) is not None}
    shadows = {n: op for n, op in tops.items() if n.startswith(SHADOW_PREFIX) and isinstance(op, llvm.GlobalOp)}
    if not shadows:
        return []
    found: set[str] = set()
    seen: set[str] = set()
    work = list(names)
    while work:
        fname = work.pop()
        fop = tops.get(fname)
        if fname in seen or not isinstance(fop, llvm.FuncOp):
            continue
        seen.add(fname)
        for op in fop.walk():
            if isinstance(op, llvm.AddressOfOp):
                sym = op.global_name.root_reference.data
                if sym in shadows:
                    found.add(sym)
                elif isinstance(tops.get(sym), llvm.FuncOp):
                    work.append(sym)
            elif isinstance(op, llvm.CallOp) and op.callee is not None:
                work.append(op.callee.root_reference.data)
    return [g for n, g in shadows.items() if n in found and _plain_data(g.global_type)]


def zero_shadows(module: ModuleOp, names: list[str], emit) -> None:
    """Zero the shadows of the globals the derivatives ``names`` reach, with ``emit``
    (inserts an op where the program's call is, returns its result, if any)."""
    for g in shadows_reached(module, names):
        ptr = emit(llvm.AddressOfOp(g.sym_name.data, llvm.LLVMPointerType()))
        nbytes = emit(llvm.ConstantOp(IntegerAttr(size_align(g.global_type)[0], i64), i64))
        zero = emit(llvm.ConstantOp(IntegerAttr(0, i8), i8))
        no = emit(llvm.ConstantOp(IntegerAttr(0, i1), i1))
        emit(llvm.CallIntrinsicOp("llvm.memset.p0.i64", [ptr, zero, nbytes, no], []))
