"""libm calls that return results through pointers, rewritten before AD into calls that
return values plus ordinary stores (issue 24 item 6).

The engine moves derivatives through SSA values and through loads and stores; a call that
writes through a pointer hides the stored value from both. So, in the body about to be
differentiated (a copy: the primal function is untouched):

- ``sincos(x, s, c)`` (also ``sincosf``, ``sincosl`` and glibc's internal ``__sincos``
  spellings) becomes ``*s = llvm.sin(x); *c = llvm.cos(x)``. The stored values are active,
  so the store rules give forward ``ds = cos(x) dx``, ``dc = -sin(x) dx`` written to the
  shadows, and reverse ``dx += cos(x) s_adj - sin(x) c_adj`` with the pointed-to adjoints
  consumed (zeroed) as for any store. glibc's sincos runs the same code as sin and cos (the
  same results, bit for bit, in each precision), so the primal values do not change; LLVM's
  code generator fuses the pair into one sincos call again.
- ``modf``, ``frexp`` and ``remquo`` (each precision) write their pointer output into a
  fresh stack slot, which is then loaded and stored through the caller's pointer:
  ``r = modf(x, tmp); *ip = *tmp``. The call's value keeps its derivative rule
  (autodiff/rules/scalar.py) and touches no memory that may hold derivatives; the copied
  value (modf's integral part, an integer exponent or quotient) is inactive, so when the
  caller's memory has a shadow, forward mode sets that shadow to 0 and reverse mode drops
  its adjoint, as for a store of a constant.
"""

from __future__ import annotations

from zymase.analysis.memory import callee_name
from zymase.analysis.op_classes import is_a
from zymase.ir import IntegerAttr, Operation, Region, i32, i64, llvm

#: sincos spellings (``__sincos``: glibc's internal name, which compilers may emit)
SINCOS = {"sincos", "sincosf", "sincosl", "__sincos", "__sincosf", "__sincosl"}

_FLOATS = ("f32", "f64", "f80")

#: functions with one pointer output: name -> index of the pointer operand
POINTER_OUTPUT = {
    **{"modf" + s: 1 for s in ("", "f", "l")},
    **{"frexp" + s: 1 for s in ("", "f", "l")},
    **{"remquo" + s: 2 for s in ("", "f", "l")},
}


def _split_sincos(call: Operation) -> None:
    x, sin_ptr, cos_ptr = call.operands
    t = x.type
    new: list[Operation] = []
    for name, ptr in (("sin", sin_ptr), ("cos", cos_ptr)):
        value = llvm.CallIntrinsicOp(f"llvm.{name}.{t}", [x], [t])
        new += [value, llvm.StoreOp(value.results[0], ptr)]
    block = call.parent_block()
    for op in new:
        op.location = call.location
        block.insert_op_before(op, call)
    block.erase_op(call)


def _output_through_slot(call: Operation, index: int, entry_first: Operation) -> None:
    out = call.operands[index]
    # modf's integral part has the result's type; frexp's exponent and remquo's quotient are ints
    typ = call.results[0].type if callee_name(call).startswith("modf") else i32
    one = llvm.ConstantOp(IntegerAttr(1, i64), i64)
    slot = llvm.AllocaOp(one.results[0], typ)
    block = entry_first.parent_block()
    for op in (one, slot):
        op.location = call.location
        block.insert_op_before(op, entry_first)
    operands = list(call.operands)
    operands[index] = slot.results[0]
    call.operands = operands
    # a `tail` call promises not to touch the caller's stack, which the slot now is
    if "TailCallKind" in call.properties:
        call.properties["TailCallKind"] = llvm.TailCallKindAttr(llvm.TailCallKind.NONE)
    load = llvm.LoadOp(slot.results[0], typ)
    store = llvm.StoreOp(load.results[0], out)
    after = call.next_op
    for op in (load, store):
        op.location = call.location
        call.parent_block().insert_op_before(op, after)


def expose_libm_outputs(region: Region) -> int:
    """Rewrite the pointer-writing libm calls of ``region`` (a function body copy, LLVM
    dialect) as described above; returns how many were rewritten."""
    calls = [op for block in region.blocks for op in block.ops
             if is_a(op, llvm.CallOp) and (callee_name(op) in SINCOS or callee_name(op) in POINTER_OUTPUT)]
    # A call of another shape (a mismatched declaration) is left alone: the engine then
    # refuses it as an external function writing through pointers (autodiff/common.py).
    rewritten = 0
    for call in calls:
        if callee_name(call) in SINCOS and len(call.operands) == 3 and str(call.operands[0].type) in _FLOATS:
            _split_sincos(call)
            rewritten += 1
    # the stack slots go first in the entry block (after the sincos calls are gone: one
    # of them may have been its first op)
    entry_first = region.blocks[0].first_op
    for call in calls:
        index = POINTER_OUTPUT.get(callee_name(call))
        if index is not None and len(call.operands) == index + 1 and call.results:
            _output_through_slot(call, index, entry_first)
            rewritten += 1
    return rewritten
