"""Rounding to an integer by adding and subtracting a large constant, made a value
without derivative before AD.

``(a + 0x1.8p52) - 0x1.8p52`` is ``rint(a)`` in double: the sum's unit in the last place
is at least 1, so the addition drops a's fraction (musl's ``exp``/``rint``, fdlibm's
``TWO52``, Cephes' range reductions: ``kd = z + shift; kd -= shift``; the addition may
be contracted with a product into ``llvm.fmuladd``). Differentiated
operation by operation the pair is the identity, so the rounded value got a's
derivative, not rint's zero: ``sin(3x - k) + k x`` gave 3 cos(..) + k + 3x instead of
3 cos(..) + k (session 34). The result is passed through ``enzyme.ignore_derivatives``
(lowered to the value itself after AD), so the primal keeps its bits.

The constant must be at least 2^(p-1) in magnitude, p the precision of the float type
(2^52 for double, 2^23 for float), and the same value added and then subtracted (or
subtracted and added, or added as its negation); the sum may pass through a local slot
(a ``volatile`` one, as code that guards the rounding against the optimizer writes).
The shift may also be read from a constant table of such values, or chosen between such
constants: fdlibm's ``rint`` adds and subtracts ``TWO52[sx]``, sx the sign bit, and got
rint's argument's derivative, silently, at every level (session 35); the two reads must
then be the same value (the same load, or loads of the same element of the table).
"""

from __future__ import annotations

import re
import struct

from zymase.analysis.memory import is_marker
from zymase.ir import FloatAttr, Operation, Region, StringAttr, is_float_type, llvm
from zymase.ir import enzyme as ez
from zymase.ir.fast_ops import call_intrinsic
from zymase.analysis.op_classes import is_a

# the precision (significand bits, the implicit one included) of each float type
_PRECISION = {"f16": 11, "f32": 24, "f64": 53, "f80": 64}


def stop_rounding_shifts(region: Region, module: Operation | None = None) -> int:
    """Put ``enzyme.ignore_derivatives`` after every rounding pair of ``region``;
    returns how many. ``module``: where the constant tables a shift may be read from are
    (the region may be a copy outside it)."""
    tables = _Tables(module)
    count = 0
    for block in region.blocks:
        for op in list(block.ops):
            if not is_a(op, (llvm.FAddOp, llvm.FSubOp)) or not is_float_type(op.results[0].type):
                continue
            if not _rounds(op, tables):
                continue
            stop = ez.IgnoreDerivativesOp(op.results[0])
            stop.location = op.location
            # and behind an arithmetic fence: adjoint sums may reassociate (autodiff/flavor
            # accumulate), and LLVM took that as leave to reassociate into the rounding
            # when the sum met it (k * x's adjoint is k at a seed of 1: (a + C) - C + 1
            # became a + (1 - C), then a * a + 1 from fmuladd(a, a, C): 2.69 for 3)
            fence = call_intrinsic(f"llvm.arithmetic.fence.{op.results[0].type}", [stop.results[0]],
                                   [op.results[0].type])
            fence.location = op.location
            block.insert_op_after(stop, op)
            block.insert_op_after(fence, stop)
            op.results[0].replace_all_uses_with(fence.results[0])
            stop.operands = [op.results[0]]  # (replace_all_uses_with also rewired these two)
            fence.operands = [stop.results[0]]
            count += 1
    return count


class _Tables:
    """The module's constant globals by name, looked up when a shift is read from one
    (through the module's symbol index: no scan of the module per function)."""

    def __init__(self, module: Operation | None):
        self.module = module

    def get(self, name: str) -> Operation | None:
        if self.module is None:
            return None
        from zymase.autodiff.module_symbols import find_symbol

        glob = find_symbol(self.module, name)
        return glob if isinstance(glob, llvm.GlobalOp) and glob.constant is not None else None


def _rounds(op: Operation, tables: _Tables) -> bool:
    """Whether ``op`` undoes a large constant that its operand added: ``(a + C) - C``,
    ``(a - C) + C``, ``(C + a) - C``, ``(a + C) + (-C)``."""
    outer = _signed_constant(op, 1)  # what op adds: +C for fadd, -C for fsub
    if outer is None:
        return _rounds_by_shift_value(op, tables)
    inner_op = _stored_through_local(op.operands[0]) or op.operands[0].owner
    if isinstance(inner_op, (llvm.FAddOp, llvm.FSubOp)):
        inner = _signed_constant(inner_op, 1)
        if inner is None and isinstance(inner_op, llvm.FAddOp):
            inner = _signed_constant(inner_op, 0)
    elif _is_fused_multiply_add(inner_op):  # a * b + C, contracted (clang's -ffp-contract=on)
        inner = _signed_constant(inner_op, 2)
    else:
        return False
    precision = _PRECISION.get(str(op.results[0].type))
    return (inner is not None and precision is not None and inner == -outer
            and abs(inner) >= 2.0 ** (precision - 1))


def _stored_through_local(value) -> Operation | None:
    """For a load of a local slot (``volatile double t = a + C;``, which keeps the sum
    from being folded) whose only stores store the result of one op: that op."""
    load = value.owner
    if not isinstance(load, llvm.LoadOp) or not isinstance(load.ptr.owner, llvm.AllocaOp):
        return None
    stored = {use.operation.value.owner for use in load.ptr.uses
              if isinstance(use.operation, llvm.StoreOp) and use.index == 1}
    others = [use for use in load.ptr.uses
              if not (isinstance(use.operation, (llvm.StoreOp, llvm.LoadOp)) and use.index == len(use.operation.operands) - 1)
              and not is_marker(use.operation)]
    if len(stored) != 1 or others:
        return None  # (a slot whose address escapes, or that holds several values)
    only = next(iter(stored))
    return only if isinstance(only, Operation) else None


def _is_fused_multiply_add(op) -> bool:
    return isinstance(op, llvm.CallIntrinsicOp) and op.intrin.data.startswith(("llvm.fmuladd.", "llvm.fma."))


def _signed_constant(op: Operation, index: int) -> float | None:
    """The constant that ``op`` adds through operand ``index`` (negated when an fsub
    subtracts it), if that operand is a constant."""
    owner = op.operands[index].owner
    if not isinstance(owner, llvm.ConstantOp) or not isinstance(owner.value, FloatAttr):
        return None
    value = owner.value.value.data
    return -value if isinstance(op, llvm.FSubOp) and index == 1 else value


def _rounds_by_shift_value(op: Operation, tables: _Tables) -> bool:
    """Whether ``op`` undoes a shift ``c`` that is not a literal but the same value as the
    one its operand added, every value of which is at least 2^(p-1) in magnitude (a
    table of such constants, a choice between them): ``(a + c) - c``, ``(c + a) - c``,
    ``(a - c) + c``, ``fmuladd(x, y, c) - c``."""
    precision = _PRECISION.get(str(op.results[0].type))
    magnitudes = _shift_magnitudes(op.operands[1], tables)
    if precision is None or not magnitudes or min(magnitudes) < 2.0 ** (precision - 1):
        return False
    inner_op = _stored_through_local(op.operands[0]) or op.operands[0].owner
    if isinstance(op, llvm.FSubOp):  # c added before
        if isinstance(inner_op, llvm.FAddOp):
            candidates = inner_op.operands
        elif _is_fused_multiply_add(inner_op):
            candidates = inner_op.operands[2:3]
        else:
            return False
    elif isinstance(inner_op, llvm.FSubOp):  # c subtracted before, added now
        candidates = inner_op.operands[1:2]
    else:
        return False
    return any(_same_value(c, op.operands[1], tables) for c in candidates)


#: ops without side effects whose results are equal when their operands are (and loads
#: from constant tables, checked apart)
_PURE = (llvm.SExtOp, llvm.ZExtOp, llvm.TruncOp, llvm.LShrOp, llvm.AShrOp, llvm.ShlOp, llvm.AndOp, llvm.OrOp,
         llvm.XOrOp, llvm.AddOp, llvm.SubOp, llvm.MulOp, llvm.GEPOp, llvm.AddressOfOp, llvm.SelectOp,
         llvm.ICmpOp, llvm.BitcastOp)


def _same_value(a, b, tables: _Tables, depth: int = 8) -> bool:
    """Whether ``a`` and ``b`` are certainly the same value: the same SSA value, equal
    constants, or the same pure op (or load of a constant table) of the same values."""
    if a is b:
        return True
    x, y = a.owner, b.owner
    if depth == 0 or not isinstance(x, Operation) or not isinstance(y, Operation) or type(x) is not type(y):
        return False
    if isinstance(x, llvm.ConstantOp):
        return x.value == y.value and a.type == b.type
    if isinstance(x, llvm.LoadOp):
        if x.ptr is y.ptr and _written_once_before(x.ptr, (x, y)):
            return True  # a local slot (--no-preopt's locals) read twice after its one store
        if _constant_table(x.ptr, tables) is None:
            return False
    elif not isinstance(x, _PURE):
        return False
    return (a.type == b.type and x.properties == y.properties and x.attributes == y.attributes
            and len(x.operands) == len(y.operands)
            and all(_same_value(p, q, tables, depth - 1) for p, q in zip(x.operands, y.operands)))


def _written_once_before(ptr, loads) -> bool:
    """Whether ``ptr`` is a local slot stored to once, in the function's entry block,
    before ``loads`` (which then read that one value), and used by nothing else."""
    slot = ptr.owner
    if not isinstance(slot, llvm.AllocaOp):
        return False
    stores = [use.operation for use in ptr.uses if isinstance(use.operation, llvm.StoreOp) and use.index == 1]
    others = [use for use in ptr.uses
              if not (isinstance(use.operation, (llvm.StoreOp, llvm.LoadOp)) and use.index == len(use.operation.operands) - 1)
              and not is_marker(use.operation)]
    if len(stores) != 1 or others:
        return False
    store, entry = stores[0], slot.parent_block()
    if store.parent_block() is not entry:
        return False
    order = {op: k for k, op in enumerate(entry.ops)}
    return all(load.parent_block() is not entry or order[load] > order[store] for load in loads)


def _shift_magnitudes(value, tables: _Tables) -> list[float] | None:
    """The magnitudes ``value`` may take: a float constant's, a choice between
    constants', or every element of the constant table it is loaded from; None when
    they are not known."""
    owner = value.owner
    if isinstance(owner, llvm.ConstantOp):
        return [abs(owner.value.value.data)] if isinstance(owner.value, FloatAttr) else None
    if isinstance(owner, llvm.SelectOp):
        first, second = _shift_magnitudes(owner.operands[1], tables), _shift_magnitudes(owner.operands[2], tables)
        return first + second if first and second else None
    if isinstance(owner, llvm.LoadOp):
        return _constant_table(owner.ptr, tables)
    return None


_TABLE_ELEMENT = re.compile(r"^(?:double|float) (\S+)$")


def _constant_table(ptr, tables: _Tables) -> list[float] | None:
    """The magnitudes of a constant global's float elements, when ``ptr`` points into one
    of ``tables`` (the global itself, or an element of it); None otherwise."""
    base = ptr.owner
    while isinstance(base, llvm.GEPOp):
        base = base.ptr.owner
    if not isinstance(base, llvm.AddressOfOp):
        return None
    glob = tables.get(base.global_name.root_reference.data)
    if glob is None:
        return None
    init = glob.attributes.get("zymase.llvm_init")
    if isinstance(init, StringAttr):
        text = init.data.strip()
        if not (text.startswith("[") and text.endswith("]")):
            return None
        values = []
        for element in text[1:-1].split(","):
            m = _TABLE_ELEMENT.match(element.strip())
            value = _float_literal(m.group(1)) if m else None
            if value is None:
                return None
            values.append(abs(value))
        return values or None
    if isinstance(glob.value, FloatAttr):  # a scalar constant global
        return [abs(glob.value.value.data)]
    return None


def _float_literal(text: str) -> float | None:
    """An LLVM float literal (``4.5e15``, ``0x4330000000000000``: doubles' bits in hex)."""
    try:
        if text.startswith("0x") and len(text) == 18:
            return struct.unpack("<d", int(text[2:], 16).to_bytes(8, "little"))[0]
        return float(text)
    except (ValueError, OverflowError):
        return None
