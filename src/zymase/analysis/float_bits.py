"""The bits of an active float made a float again through integers (MLIR): refused.

``arith.bitcast`` of a float to an integer leaves the values derivatives flow through:
integers are never active, so a float rebuilt from those bits (``arith.bitcast`` back,
``arith.sitofp``/``uitofp`` of them, after any integer arithmetic: a sign flipped with
``xori``, the fast inverse square root's magic constant) was taken as a constant and its
derivative lost without a word (session 32's probes: the round trip ``bitcast(bitcast(x))
* x`` gave ``x``, not ``2x``). Integers that only feed comparisons or indices (a sign
test on the bits) stay allowed: their derivative is zero. The LLVM path has its own
account of float bits in integers (type analysis, ``autodiff/memory``).
"""

from __future__ import annotations

from zymase.errors import ZymaseError
from zymase.ir import BlockArgument, IntegerType, IndexType, SSAValue, arith, is_float_type, location_of

_TO_FLOAT = (arith.BitcastOp, arith.SIToFPOp, arith.UIToFPOp)


def refuse_float_bits_returning(blocks, act, fname: str) -> None:
    """Raise if a float is built from integers holding the bits of an active float."""
    for b in blocks:
        for op in b.ops:
            if isinstance(op, _TO_FLOAT) and is_float_type(op.results[0].type) and _is_integer(op.operands[0]):
                source = _active_float_bits(op.operands[0], act.varied, set())
                if source is not None:
                    raise ZymaseError(
                        f"'{op.name}' makes a float from the bits of an active float (taken by "
                        f"'{source.name}'): integers carry no derivative, so it would be lost",
                        construct=op.name,
                        function=fname,
                        location=location_of(op),
                        hint="compute on the float itself (math.absf, math.copysign, arith.negf) "
                        "rather than on its bits",
                    )


def _is_integer(v: SSAValue) -> bool:
    return isinstance(v.type, (IntegerType, IndexType))


def _active_float_bits(v: SSAValue, varied, seen: set):
    """The ``arith.bitcast`` of an active float that integer ``v`` is computed from, if any."""
    if v in seen or isinstance(v, BlockArgument):
        return None  # (loop-carried integers are not followed)
    seen.add(v)
    op = v.owner
    if isinstance(op, arith.BitcastOp) and is_float_type(op.operands[0].type):
        return op if op.operands[0] in varied else None
    for o in op.operands:
        if _is_integer(o):
            found = _active_float_bits(o, varied, seen)
            if found is not None:
                return found
    return None
