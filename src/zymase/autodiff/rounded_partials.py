"""Which primal values the reverse sweep reads behind an arithmetic fence.

Every adjoint sum carries ``reassoc nsz`` (``flavor.Emitter.accumulate``: reductions in
reverse loops vectorize), and LLVM takes an add's ``reassoc`` as leave to reassociate
with its operands' own adds whatever their flags (InstCombine's FAddCombine looks one
level into each operand, InstSimplify folds ``(X - Y) + Y`` to ``X``, the code
generator ``fma(a, b, c) + d`` to ``fma(a, b, c + d)``). A partial that is a primal sum
becomes an operand of an adjoint sum as soon as the adjoint it multiplies folds to a
constant (the seed 1 of a returned value, a shadow the caller set to 1), and then lost
its rounding: ``k = rint(a)`` written ``(a + C) - C`` met the seed and became ``a``, the
weight ``x - y`` met ``y`` and became ``x`` (sessions 34, 35). Such a partial is read
behind ``llvm.arithmetic.fence``, which no fold looks through.

The fence also stops the loop vectorizer (it is not an intrinsic it can widen), so it is
left out where the adjoint cannot fold to a constant: where it depends on a shadow
element the reverse of a loop reads anew in each iteration (``loop_variant``); the
product with such an adjoint is never an add LLVM can look into. Products and
quotients are never fenced: reassociated they move by an ulp, not by a cancellation.
"""

from __future__ import annotations

from zymase.ir import BlockArgument, Operation, SSAValue, llvm

_SUMS = (llvm.FAddOp, llvm.FSubOp)
_FUSED = ("llvm.fmuladd.", "llvm.fma.")
# (the ops whose value is fixed when their operands are: arithmetic and conversions)
_PURE = (llvm.FAddOp, llvm.FSubOp, llvm.FMulOp, llvm.FDivOp, llvm.FNegOp, llvm.FPExtOp, llvm.FPTruncOp,
         llvm.SIToFPOp, llvm.ExtractValueOp, llvm.InsertValueOp)
# how far back an adjoint's expression is followed before it counts as maybe constant
_DEPTH = 24


def is_rounded_sum(v: SSAValue) -> bool:
    """Whether primal value ``v`` is a float sum, difference or fused multiply-add that
    the program did not allow to reassociate, or the negation of one (``acc + -(a - b)``
    becomes ``acc - (a - b)``; the negation of a product is no more exposed than the
    product)."""
    if isinstance(v, BlockArgument):
        return False
    op = v.owner
    if isinstance(op, llvm.FNegOp):
        return is_rounded_sum(op.operands[0])
    if isinstance(op, _SUMS):
        flags = op.properties.get("fastmathFlags")
        return not (isinstance(flags, llvm.FastMathAttr) and any(str(f) in ("reassoc", "fast") for f in flags.data))
    return isinstance(op, llvm.CallIntrinsicOp) and op.intrin.data.startswith(_FUSED)


class ConstantAdjoints:
    """Whether an adjoint value of the reverse sweep may fold to a constant once LLVM
    has inlined the derivative into its caller. ``loop_variant`` holds the values of the
    reverse sweep read from memory at an address that changes with a loop's iteration
    (shadow elements, and primal values computed from such loads: ``primal_varies``):
    those never fold, nor does a product or sum with one of them. Anything else unknown
    (a block argument, another load, a cell's value) may. ``in_cycle(v)``: whether
    primal value ``v`` is computed inside a loop."""

    def __init__(self, in_cycle):
        self.in_cycle = in_cycle
        self.loop_variant: set[SSAValue] = set()
        self._memo: dict[SSAValue, bool] = {}
        self._varies: dict[SSAValue, bool] = {}

    def primal_varies(self, v: SSAValue, depth: int = 0) -> bool:
        """Whether primal value ``v`` depends on a load from an address computed anew in
        each iteration of a loop (then no constant folding makes it a constant)."""
        if isinstance(v, BlockArgument) or depth > _DEPTH:
            return False
        found = self._varies.get(v)
        if found is None:
            op = v.owner
            if isinstance(op, llvm.LoadOp):
                found = self.in_cycle(op.operands[0])
            elif isinstance(op, llvm.SelectOp):
                found = all(self.primal_varies(x, depth + 1) for x in op.operands[1:])
            elif isinstance(op, _PURE) or isinstance(op, llvm.CallIntrinsicOp):
                found = any(self.primal_varies(x, depth + 1) for x in op.operands)
            else:
                found = False
            self._varies[v] = found
        return found

    def may_be_constant(self, v: SSAValue, depth: int = 0) -> bool:
        if v in self.loop_variant:
            return False
        if isinstance(v, BlockArgument) or depth > _DEPTH:
            return True
        found = self._memo.get(v)
        if found is None:
            found = self._memo[v] = self._of_op(v.owner, depth)
        return found

    def _of_op(self, op: Operation, depth: int) -> bool:
        if isinstance(op, llvm.SelectOp):  # (either side may be the one taken)
            return any(self.may_be_constant(x, depth + 1) for x in op.operands[1:])
        if isinstance(op, _PURE) or (isinstance(op, llvm.CallIntrinsicOp) and op.intrin.data.startswith("llvm.")):
            return all(self.may_be_constant(x, depth + 1) for x in op.operands)
        return True
