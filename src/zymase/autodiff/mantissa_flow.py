"""Which integers made from the bits of an active float still vary continuously with it:
those that carry bits of its mantissa.

A float's bits read as an integer (``bitcast double %x to i64``) are never active, so a
number made of them (``(double)bits * 0x1p-52``, the "fast log2"; ``(double)hx`` of
fdlibm's high word) would get derivative 0 although it moves with x between powers of
two. Its exponent and sign bits alone are piecewise constant in x (``(bits >> 52) &
0x7ff``, ``bits >> 63``): a zero derivative is right for them. ``varying_bits`` tracks,
for each integer computed from such bits, the mask of its bit positions that may vary
continuously: shifts and masks move and drop mantissa bits, carries of add/sub/mul spread
them upward, other arithmetic to every bit. ``refusals._float_bits_made_float_again``
refuses a conversion to a float (``sitofp``/``uitofp``) of a value that keeps any.

The other way round, an integer rounded from an active float (``fptosi``) that becomes
the low bits of a float's pattern (``bitcast``) makes a float that moves with x in steps
of a few units in the last place (Schraudolph's exp: ``bits = (int64_t)(a * x + b)``):
its derivative is 0 almost everywhere but its slope is exp's, and neither is what the
program means; ``refusals._rounded_into_mantissa`` refuses it. Shifted into the exponent
only (``(uint64_t)(k + 1023) << 52``, 2^k) it is piecewise constant, and fine.
"""

from __future__ import annotations

from zymase.analysis.trip_count import constant_int
from zymase.autodiff.flavor import Flavor
from zymase.ir import IntegerType, Operation, SSAValue, llvm

# explicit mantissa bits of each float width (bf16, f16, f32, f64, x86 fp80)
_MANTISSA_BITS = {"bf16": 7, "f16": 10, "f32": 23, "f64": 52, "f80": 63}

# bitwise ops: bit j of the result depends only on bit j of the operands
_BITWISE = ("llvm.and", "llvm.or", "llvm.xor")
# carries move dependence upward only: bit j depends on operand bits <= j
_CARRYING = ("llvm.add", "llvm.sub", "llvm.mul")
# the result depends on its operands' bits but not on a float's continuously
_STOP = ("llvm.icmp", "llvm.store", "llvm.call", "llvm.sitofp", "llvm.uitofp", "llvm.bitcast")


def mantissa_mask(float_type) -> int:
    """The mask of the mantissa bits of ``float_type``'s bit pattern (0 if unknown)."""
    return (1 << _MANTISSA_BITS.get(str(float_type), 0)) - 1


def varying_bits(bits: SSAValue, flavor: Flavor, start: int | None = None) -> dict[SSAValue, int]:
    """For ``bits``, an integer holding a float's bit pattern, and every integer
    computed from it (through branches too): the mask of its bits that may vary
    continuously with the float (values not in the result vary nowhere). ``start``
    overrides the mask of ``bits`` itself (every bit of an integer rounded from a float)."""
    source = bits.owner.operands[0].type if isinstance(bits.owner, llvm.BitcastOp) else None
    masks: dict[SSAValue, int] = {bits: mantissa_mask(source) if start is None else start}
    work = [bits]
    while work:
        value = work.pop()
        for use in value.uses:
            user = use.operation
            if user.successors:  # block arguments of the successors receiving the value
                for successor, operands in zip(user.successors, flavor.successor_operands(user)):
                    for arg, passed in zip(successor.args, operands):
                        if passed is value and _widen(masks, arg, masks[value]):
                            work.append(arg)
                continue
            if user.name in _STOP or not user.results or not isinstance(user.results[0].type, IntegerType):
                continue
            result = user.results[0]
            if _widen(masks, result, _transfer(user, masks)):
                work.append(result)
    return masks


def _widen(masks: dict[SSAValue, int], value: SSAValue, mask: int) -> bool:
    """Join ``mask`` into ``value``'s; whether it grew."""
    old = masks.get(value, 0)
    if mask | old == old:
        return False
    masks[value] = mask | old
    return True


def _transfer(op: Operation, masks: dict[SSAValue, int]) -> int:
    """The varying bits of ``op``'s integer result from those of its operands."""
    width = op.results[0].type.width.data
    full = (1 << width) - 1
    ins = [masks.get(o, 0) for o in op.operands]
    constant = [None if (c := constant_int(o)) is None else c & full for o in op.operands]
    if op.name in _BITWISE:
        if op.name == "llvm.and" and constant[1] is not None:  # a constant mask keeps only its own bits
            return ins[0] & constant[1]
        if op.name == "llvm.and" and constant[0] is not None:
            return ins[1] & constant[0]
        return (ins[0] | ins[1]) & full
    if op.name in ("llvm.lshr", "llvm.ashr") and constant[1] is not None:
        shifted = ins[0] >> constant[1]
        if op.name == "llvm.ashr" and ins[0] >> (width - 1) & 1:  # a varying sign bit is replicated
            shifted |= full & ~((1 << max(width - 1 - constant[1], 0)) - 1)
        return shifted & full
    if op.name == "llvm.shl" and constant[1] is not None:
        return (ins[0] << constant[1]) & full
    if op.name == "llvm.trunc":
        return ins[0] & full
    if op.name == "llvm.zext":
        return ins[0]
    if op.name == "llvm.sext":
        source_width = op.operands[0].type.width.data
        return ins[0] | (full & ~((1 << source_width) - 1) if ins[0] >> (source_width - 1) & 1 else 0)
    if op.name == "llvm.select":
        return ins[1] | ins[2]
    joined = 0
    for m in ins:
        joined |= m
    if not joined:
        return 0
    if op.name in _CARRYING:
        lowest = joined & -joined
        return full & ~(lowest - 1)
    return full
