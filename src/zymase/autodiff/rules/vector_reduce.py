"""Derivative rules of LLVM's floating-point vector reductions: ``llvm.vector.reduce.fadd``
and ``fmul`` (a start value and a vector), ``fmax``/``fmin`` and ``fmaximum``/``fminimum``
(a vector). They are what vectorized loops sum, multiply and take extrema with (clang's
-O2 pipeline under -ffast-math, IR given to ``zymase opt``; ``zymase cc`` leaves
vectorization until after AD and never meets them before).

The rules work lane by lane (``extractelement``/``insertelement``, which LLVM folds back
into vector code): the sum passes its adjoint to every lane and to the start; the product
gives lane ``k`` the product of the start and the other lanes (prefix and suffix products,
no division, so a zero lane is right); an extremum gives its derivative to the first lane
equal to the result, as the scalar ``fmax`` rule gives it to one operand (none when the
result is NaN).
"""

from __future__ import annotations

from zymase.autodiff.registry import REGISTRY, Rule
from zymase.ir import IntegerType, i32, llvm, llvm_ext

i1 = IntegerType(1)


def _lanes(E, vector) -> list:
    count = vector.type.get_shape()[0]
    return [E.v(llvm_ext.ExtractElementOp(vector, E.iconst(k, i32))) for k in range(count)]


def _vector(E, like_type, values: list):
    out = E.zero(like_type)
    for k, value in enumerate(values):
        out = E.v(llvm.InsertElementOp(out, value, E.iconst(k, i32)))
    return out


def _first_equal(E, lanes: list, result) -> list:
    """Per lane, an i1 that is true for the first lane equal to ``result`` only."""
    found = E.iconst(0, i1)
    first = []
    for lane in lanes:
        equal = E.fcmp("oeq", lane, result)
        first.append(E.select(found, E.iconst(0, i1), equal))
        found = E.select(equal, E.iconst(1, i1), found)
    return first


class VectorReduceRule(Rule):
    """One ``llvm.vector.reduce.<kind>`` intrinsic."""

    handles_vectors = True

    def __init__(self, kind: str):
        self.kind = kind
        self.with_start = kind in ("fadd", "fmul")

    def propagates(self, op, index):
        return True

    def _partials(self, ctx, op) -> tuple:
        """(d result / d start or None, [d result / d lane k]) at the primal values."""
        E = ctx.E
        operands = [ctx.primal(o) for o in op.operands]
        lanes = _lanes(E, operands[-1])
        if self.kind == "fadd":
            one = E.const_like(1.0, operands[0])
            return one, [one] * len(lanes)
        if self.kind == "fmul":
            start = operands[0]
            prefix = [start]  # prefix[k]: start * lanes before k
            for lane in lanes:
                prefix.append(E.mul(prefix[-1], lane))
            partials = [None] * len(lanes)
            suffix = None  # the product of the lanes after k
            for k in reversed(range(len(lanes))):
                partials[k] = prefix[k] if suffix is None else E.mul(prefix[k], suffix)
                suffix = lanes[k] if suffix is None else E.mul(lanes[k], suffix)
            return suffix, partials  # d/dstart: the product of every lane
        result = ctx.primal(op.results[0])
        one, zero = E.const_like(1.0, result), E.const_like(0.0, result)
        return None, [E.select(first, one, zero) for first in _first_equal(E, lanes, result)]

    def forward(self, ctx, op, tangents):
        if all(t is None for t in tangents):
            return [None]
        E = ctx.E
        d_start, d_lanes = self._partials(ctx, op)
        total = None
        if self.with_start and tangents[0] is not None:
            total = tangents[0] if self.kind == "fadd" else E.mul(d_start, tangents[0])
        if tangents[-1] is not None:
            for partial, t in zip(d_lanes, _lanes(E, tangents[-1])):
                term = t if self.kind == "fadd" else E.mul(partial, t)
                total = term if total is None else E.add(total, term)
        return [total]

    def reverse(self, ctx, op, dys):
        dy = dys[0]
        if dy is None:
            return [None] * len(op.operands)
        E = ctx.E
        d_start, d_lanes = self._partials(ctx, op)
        adjoints: list = [None] * len(op.operands)
        if self.with_start and ctx.wants(op.operands[0]):
            adjoints[0] = dy if self.kind == "fadd" else E.mul(dy, d_start)
        if ctx.wants(op.operands[-1]):
            lanes = [dy if self.kind == "fadd" else E.mul(dy, partial) for partial in d_lanes]
            adjoints[-1] = _vector(E, op.operands[-1].type, lanes)
        return adjoints


for _kind in ("fadd", "fmul", "fmax", "fmin", "fmaximum", "fminimum"):
    REGISTRY.register_function(f"vector.reduce.{_kind}", VectorReduceRule(_kind))


class HorizontalAddRule(Rule):
    """The x86 horizontal add and subtract of two vectors (``_mm_hadd_pd``,
    ``_mm256_hadd_pd``: ``llvm.x86.sse3.hadd.pd``, ``llvm.x86.avx.hadd.pd.256``, the ``ps``
    forms and ``hsub``), what Eigen's ``predux`` sums AVX packets with under
    ``-march=native``. Within each 128-bit block the result holds the sums (differences) of
    adjacent lanes of the first operand's block, then of the second's; linear, so the
    tangent is the same instruction on the tangents, and each adjoint lane goes back to the
    two lanes it came from (negated for the second lane of a difference)."""

    handles_vectors = True

    def __init__(self, subtract: bool):
        self.subtract = subtract

    def propagates(self, op, index):
        return True

    @staticmethod
    def _sources(t) -> list[tuple[int, int]]:
        """Per result lane: (operand, first lane of the pair)."""
        count = t.get_shape()[0]
        block = 128 // t.element_type.bitwidth
        out = []
        for start in range(0, count, block):
            for operand in (0, 1):
                out += [(operand, start + 2 * k) for k in range(block // 2)]
        return out

    def forward(self, ctx, op, tangents):
        if all(t is None for t in tangents):
            return [None]
        E = ctx.E
        t = op.results[0].type
        args = [d if d is not None else E.zero(t) for d in tangents]
        return [E.v(llvm.CallIntrinsicOp(op.intrin.data, args, [t]))]

    def reverse(self, ctx, op, dys):
        dy = dys[0]
        if dy is None:
            return [None, None]
        E = ctx.E
        t = op.results[0].type
        lanes = _lanes(E, dy)
        parts: list[list] = [[None] * t.get_shape()[0] for _ in (0, 1)]
        for d, (operand, first) in zip(lanes, self._sources(t)):
            parts[operand][first] = d
            parts[operand][first + 1] = E.neg(d) if self.subtract else d
        return [_vector(E, t, parts[k]) if ctx.wants(op.operands[k]) else None for k in (0, 1)]


for _kind in ("hadd", "hsub"):
    for _name in (f"x86.sse3.{_kind}.pd", f"x86.sse3.{_kind}.ps", f"x86.avx.{_kind}.pd.256",
                  f"x86.avx.{_kind}.ps.256"):
        REGISTRY.register_function(_name, HorizontalAddRule(_kind == "hsub"))
