"""``llvm.intr.*`` ops -> ``llvm.call_intrinsic``, before AD and before writing LLVM IR.

MLIR's llvm dialect spells intrinsics as ops (``llvm.intr.sqrt(%x) : (f64) -> f64``,
``"llvm.intr.memcpy"(%d, %s, %n) <{isVolatile = false}>``); LLVM IR read by zymase
spells them as calls (``llvm.call_intrinsic "llvm.sqrt.f64"``), and that is what the
engine knows: math intrinsics find their rule by base name (rules/libm.py), and
``llvm.memcpy``/``memmove``/``memset`` calls are the memory transfers ShadowCode
mirrors on shadows. So each math or memory intrinsic op becomes that call, with
LLVM's overload suffix (``llvm.powi.f64.i32``, ``llvm.memcpy.p0.p0.i64``) and the
op's fast-math flags. Other ``llvm.intr.*`` ops are left alone (the engine refuses
them by name where they are active).
"""

from __future__ import annotations

from zymase.errors import ZymaseError
from zymase.ir import (
    Attribute,
    IntegerAttr,
    IntegerType,
    Operation,
    VectorType,
    i1,
    llvm,
    location_of,
)

__all__ = ["intrinsic_ops_to_calls"]

#: math intrinsics, and which operand types name the overload besides the result's
_MATH = {
    **dict.fromkeys(("sqrt", "exp", "exp2", "log", "log2", "log10", "sin", "cos", "pow", "fabs", "fma",
                     "fmuladd", "maxnum", "minnum", "maximum", "minimum", "copysign", "floor", "ceil",
                     "round", "trunc"), ()),
    "powi": (1,),
}
_MEMORY = {"memcpy": (0, 1, 2), "memmove": (0, 1, 2), "memset": (0, 2)}


def intrinsic_ops_to_calls(module: Operation) -> None:
    for op in list(module.walk()):
        if not op.name.startswith("llvm.intr."):
            continue
        base = op.name[len("llvm.intr."):]
        if base in _MATH:
            overloads = [op.results[0].type, *(op.operands[i].type for i in _MATH[base])]
            call = llvm.CallIntrinsicOp(_name(op, base, overloads), list(op.operands), [op.results[0].type])
            flags = op.properties.get("fastmathFlags")
            if flags is not None:
                call.properties["fastmathFlags"] = flags
        elif base in _MEMORY:
            volatile = op.properties.get("isVolatile")
            flag = llvm.ConstantOp(IntegerAttr(int(volatile.value.data) if volatile is not None else 0, i1), i1)
            op.parent_block().insert_op_before(flag, op)
            overloads = [op.operands[i].type for i in _MEMORY[base]]
            call = llvm.CallIntrinsicOp(_name(op, base, overloads), [*op.operands, flag.result], [])
        else:
            continue
        op.parent_block().insert_op_before(call, op)
        for old, new in zip(op.results, call.results):
            old.replace_all_uses_with(new)
        op.parent_block().erase_op(op)


def _name(op: Operation, base: str, overloads: list[Attribute]) -> str:
    return ".".join(["llvm", base, *(_suffix(op, t) for t in overloads)])


def _suffix(op: Operation, t: Attribute) -> str:
    """LLVM's overload suffix: ``f64``, ``i32``, ``p0``, ``v4f64``."""
    if isinstance(t, VectorType):
        return f"v{t.get_shape()[0]}{_suffix(op, t.element_type)}"
    if isinstance(t, llvm.LLVMPointerType):
        return "p0"
    if isinstance(t, IntegerType):
        return f"i{t.width.data}"
    names = {"f16": "f16", "f32": "f32", "f64": "f64", "bf16": "bf16", "f80": "f80"}
    if str(t) in names:
        return names[str(t)]
    parent = op.parent_op()
    while parent is not None and not hasattr(parent, "sym_name"):
        parent = parent.parent_op()
    raise ZymaseError(f"'{op.name}' on type {t} has no LLVM intrinsic overload", construct=op.name,
                      function=parent.sym_name.data if parent is not None else None, location=location_of(op),
                      hint="use f16/f32/f64 scalars or vectors of them")
