"""The run-time check that a pointer read from memory has a shadow where derivatives go
through it.

A shadow struct's pointer field is the shadow of the primal's field. Users of Enzyme
sometimes leave it NULL for data they want no derivative of (``struct P dp = {NULL, dy}``
for ``struct P p = {x, y}``); the derivative then reads ``x``'s tangent or adds ``x``'s
adjoints through null, a segfault (Enzyme's too: its shadow of constant data must point
at memory, a zeroed buffer, where the adjoints go unread). A null shadow cannot mean
"constant" in general: a scratch buffer written and read back through a null shadow would
lose the derivative that flows through it. So where a pointer is read from shadowed
memory and its shadow with it, and some access derived from it (through GEPs, casts,
selects and block arguments) goes through that shadow, the derivative checks right
there that the shadow is not null where the pointer is not: otherwise the program stops
with one ``zymase: error:`` line naming the access, the function and (with ``-g``) the
source line. At the load, not at each access: a load hoisted out of a loop takes its
check with it (a check in the loop body kept the loop from being vectorized). A field
given NULL that is loaded but used on no path of this run is refused too.
"""

from __future__ import annotations

import hashlib

from zymase.analysis.memory import derived_uses, memory_kind
from zymase.autodiff.module_symbols import find_symbol
from zymase.autodiff.type_rules import carries_derivatives
from zymase.errors import ZymaseError
from zymase.ir import IntegerAttr, IntegerType, Operation, SSAValue, StringAttr, i64, llvm, location_of

NULL_SHADOW_CHECK = "__zymase_null_shadow_check"

_CHECK = """
builtin.module {
  llvm.func internal @__zymase_null_shadow_check(%shadow: !llvm.ptr, %has_primal: i1, %msg: !llvm.ptr, %len: i64) {
    %null = llvm.mlir.zero : !llvm.ptr
    %no_shadow = llvm.icmp "eq" %shadow, %null : !llvm.ptr
    %bad = llvm.and %no_shadow, %has_primal : i1
    llvm.cond_br %bad, ^report, ^fine
  ^report:
    llvm.call @__zymase_null_shadow(%msg, %len) : (!llvm.ptr, i64) -> ()
    llvm.unreachable
  ^fine:
    llvm.return
  }
  llvm.func internal @__zymase_null_shadow(%msg: !llvm.ptr, %len: i64) attributes {passthrough = ["noinline", "cold"]} {
    %fd = llvm.mlir.constant(2 : i32) : i32
    %w = llvm.call @write(%fd, %msg, %len) : (i32, !llvm.ptr, i64) -> i64
    llvm.call @abort() : () -> ()
    llvm.unreachable
  }
}
"""


def dereferences_shadow(gen, op: Operation) -> SSAValue | None:
    """The pointer operand of memory op ``op`` through whose shadow the derivative code
    reads or writes (an active float loaded, a float or pointer stored, a pointer with a
    shadow loaded, bytes copied or set), if any."""
    act = gen.act
    kind = memory_kind(op)
    if kind == "load" and op.ptr in act.shadowed:
        r = op.results[0]
        if (carries_derivatives(r.type) and act.is_active(r)) or r in act.shadowed:
            return op.ptr
    elif kind == "store" and op.ptr in act.shadowed:
        if carries_derivatives(op.value.type) or op.value.type == llvm.LLVMPointerType():
            return op.ptr
    elif kind in ("memcpy", "memset") and op.operands[0] in act.shadowed:
        return op.operands[0]
    return None


def first_dereference(gen, load: Operation) -> Operation | None:
    """An access whose derivative goes through the shadow of the pointer ``load`` reads
    (derived from it through GEPs, casts, selects and block arguments), if any."""
    successor_operands = gen.ctx.flavor.successor_operands
    for v, op in derived_uses(load.results[0], successor_operands):
        if memory_kind(op) is not None and dereferences_shadow(gen, op) is v:
            return op
    return None


def check_loaded_shadow(gen, load: Operation) -> None:
    """Right after the shadow of the pointer ``load`` reads from shadowed memory was
    loaded (emitted with ``gen``, a ``ShadowCode``): when the derivative goes through
    that shadow somewhere, check that it is not null where the pointer is not."""
    from zymase.autodiff.forward_split import SplitForwardGenerator

    if isinstance(gen, SplitForwardGenerator):
        return  # (its tangent code may not touch primal pointers, which may be NULL then)
    pointer = load.results[0]
    shadow, primal = gen.smap.get(pointer), gen.vmap.get(pointer)
    if shadow is None or primal is None:
        return
    access = first_dereference(gen, load)
    if access is None:
        return
    module, E = gen.ctx.module, gen.E
    location = location_of(access) or location_of(load)
    hint = ("give every pointer field of a shadow struct a shadow, never NULL: for data without derivatives a "
            "zeroed buffer as large as the data (reverse mode adds its adjoints there); keep enzyme_const "
            "pointers out of structs that hold duplicated ones")
    if location is None:
        hint += "; compile with -g to see the source line in this message"
    text = ZymaseError(
        "a pointer read from memory (a field of a struct, an element of an array of pointers) has a NULL "
        "shadow where the pointer is not NULL, and the derivative reads or writes through it: a shadow struct "
        "given with NULL in that field, or an enzyme_const pointer stored next to duplicated ones in a struct "
        "whose fields zymase cannot tell apart (copied whole, passed to a recursive function)",
        construct=_describe(access), function=gen.fname, location=location, hint=hint).format() + "\n"
    data = text.encode()
    label = f"__zymase_null_shadow_message.{hashlib.sha1(data).hexdigest()[:12]}"
    if find_symbol(module, label) is None:
        module.body.block.add_op(llvm.GlobalOp(llvm.LLVMArrayType(len(data), IntegerType(8)), label, "private",
                                               constant=True, value=StringAttr(text)))
    from zymase.autodiff.memcpy_adjoint import _add_once

    gen._declare("write", [IntegerType(32), llvm.LLVMPointerType(), i64], i64)
    gen._declare("abort", [], llvm.LLVMVoidType())
    check = _add_once(module, NULL_SHADOW_CHECK, _CHECK, "<zymase null-shadow check>")
    message = E.v(llvm.AddressOfOp(label, llvm.LLVMPointerType()))
    # (the primal pointer only compared, here: transforms/omp_dead_stores removes the
    # stores of a recomputed region through a pointer whose other uses are comparisons)
    has_primal = E.v(llvm.ICmpOp(primal, E.v(llvm.ZeroOp.build(result_types=[llvm.LLVMPointerType()])),
                                 IntegerAttr(1, i64)))
    E.insert(llvm.CallOp(check, shadow, has_primal, message, E.v(llvm.ConstantOp(IntegerAttr(len(data), i64), i64))))


def _describe(op: Operation) -> str:
    from zymase.analysis.memory import callee_name, intrinsic_base_name

    kind = memory_kind(op)
    if kind in ("load", "store"):
        return kind
    return f"call @{callee_name(op) or intrinsic_base_name(op) or kind}"
