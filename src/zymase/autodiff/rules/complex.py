"""Rules for C's complex functions on ``double _Complex``: the multiplication and
division helpers clang calls (``__muldc3``, ``__divdc3``) and the holomorphic functions
of ``<complex.h>`` that ``std::complex<double>`` also calls (``cexp``, ``clog``,
``csqrt``, ``cpow``, the trigonometric and hyperbolic ones).

On x86-64 each complex argument is passed as its two doubles and the result comes back
as ``{double, double}`` (a float aggregate, see :mod:`zymase.autodiff.type_rules`). A
holomorphic ``g`` has a complex derivative ``D = g'(z)``, so the tangent is ``D * dz``
and, written on real and imaginary parts, the adjoint is ``conj(D) * dr``. The ``float``
and ``long double`` forms use other conventions (``<2 x float>``, memory) and keep no
rule: they are refused where they meet active data."""

from __future__ import annotations

from collections.abc import Callable

from zymase.autodiff.registry import REGISTRY, Rule
from zymase.errors import ZymaseError
from zymase.ir import DenseArrayBase, i64, llvm, location_of

Complex = tuple  # (real, imaginary) SSA values


def _mul(E, p: Complex, q: Complex) -> Complex:
    (a, b), (c, d) = p, q
    return E.sub(E.mul(a, c), E.mul(b, d)), E.add(E.mul(a, d), E.mul(b, c))


def _inverse(E, q: Complex) -> Complex:
    c, d = q
    norm = E.add(E.mul(c, c), E.mul(d, d))
    return E.div(c, norm), E.neg(E.div(d, norm))


def _conj_mul(E, D: Complex, u: Complex) -> Complex:
    """``conj(D) * u``: the adjoint of the input from the adjoint ``u`` of the result."""
    (dr, di), (ur, ui) = D, u
    return E.add(E.mul(dr, ur), E.mul(di, ui)), E.sub(E.mul(dr, ui), E.mul(di, ur))


def _part(E, value, i: int):
    return E.v(llvm.ExtractValueOp(DenseArrayBase.from_list(i64, [i]), value, value.type.types.data[i]))


# Each derivative gets the emitter, the complex arguments and the complex result (as
# primal values) and returns one complex partial per argument.
Partials = Callable[..., list[Complex]]


def _log(E, z: Complex) -> Complex:
    x, y = z
    return E.fn("log", E.fn("hypot", x, y)), E.fn("atan2", y, x)


def _sin(E, z):
    x, y = z
    return E.mul(E.fn("sin", x), E.fn("cosh", y)), E.mul(E.fn("cos", x), E.fn("sinh", y))


def _cos(E, z):
    x, y = z
    return E.mul(E.fn("cos", x), E.fn("cosh", y)), E.neg(E.mul(E.fn("sin", x), E.fn("sinh", y)))


def _sinh(E, z):
    x, y = z
    return E.mul(E.fn("sinh", x), E.fn("cos", y)), E.mul(E.fn("cosh", x), E.fn("sin", y))


def _cosh(E, z):
    x, y = z
    return E.mul(E.fn("cosh", x), E.fn("cos", y)), E.mul(E.fn("sinh", x), E.fn("sin", y))


def _one_plus_or_minus_square(E, r: Complex, sign: float) -> Complex:
    """``1 + sign * r^2`` (tan' = 1 + tan^2, tanh' = 1 - tanh^2)."""
    re, im = _mul(E, r, r)
    one = E.const_like(1.0, re)
    if sign > 0:
        return E.add(one, re), im
    return E.sub(one, re), E.neg(im)


PARTIALS: dict[str, tuple[int, Partials]] = {
    "__muldc3": (2, lambda E, z, w, r: [w, z]),
    "__divdc3": (2, lambda E, z, w, r: [_inverse(E, w), _mul(E, (E.neg(r[0]), E.neg(r[1])), _inverse(E, w))]),
    "cexp": (1, lambda E, z, r: [r]),
    "clog": (1, lambda E, z, r: [_inverse(E, z)]),
    "csqrt": (1, lambda E, z, r: [_inverse(E, (E.add(r[0], r[0]), E.add(r[1], r[1])))]),
    "csin": (1, lambda E, z, r: [_cos(E, z)]),
    "ccos": (1, lambda E, z, r: [(E.neg(_sin(E, z)[0]), E.neg(_sin(E, z)[1]))]),
    "ctan": (1, lambda E, z, r: [_one_plus_or_minus_square(E, r, +1)]),
    "csinh": (1, lambda E, z, r: [_cosh(E, z)]),
    "ccosh": (1, lambda E, z, r: [_sinh(E, z)]),
    "ctanh": (1, lambda E, z, r: [_one_plus_or_minus_square(E, r, -1)]),
    # z^w = exp(w log z): d/dz = w z^w / z, d/dw = z^w log z
    "cpow": (2, lambda E, z, w, r: [_mul(E, w, _mul(E, r, _inverse(E, z))), _mul(E, r, _log(E, z))]),
}


class ComplexRule(Rule):
    """A complex function of ``count`` complex arguments (``2 * count`` double operands)
    returning ``{double, double}``."""

    def __init__(self, name: str, count: int, partials: Partials):
        self.name = name
        self.count = count
        self.partials = partials

    def _applies(self, op) -> bool:
        t = op.results[0].type if op.results else None
        return (isinstance(t, llvm.LLVMStructType) and len(t.types.data) == 2
                and all(str(x) == "f64" for x in t.types.data)
                and len(op.operands) == 2 * self.count and all(str(o.type) == "f64" for o in op.operands))

    def propagates(self, op, index):
        return str(op.operands[index].type) == "f64" or not self._applies(op)

    def _check(self, ctx, op) -> None:
        if not self._applies(op):
            raise ZymaseError(
                f"'{self.name}' is called with a signature other than the x86-64 one for double "
                "_Complex (each complex as two doubles, the result as {double, double}); zymase has "
                "no derivative for it",
                construct=f"call to '{self.name}'",
                function=getattr(ctx, "fname", None),
                location=location_of(op),
                hint="compute with double _Complex / std::complex<double> on x86-64",
            )

    def _derivatives(self, ctx, op) -> list[Complex]:
        E = ctx.E
        args = [ctx.primal(o) for o in op.operands]
        zs = [(args[2 * k], args[2 * k + 1]) for k in range(self.count)]
        r = ctx.primal(op.results[0])
        return self.partials(E, *zs, (_part(E, r, 0), _part(E, r, 1)))

    def forward(self, ctx, op, tangents):
        self._check(ctx, op)
        if all(t is None for t in tangents):
            return [None]
        E = ctx.E
        total = None
        for k, D in enumerate(self._derivatives(ctx, op)):
            tx, ty = tangents[2 * k], tangents[2 * k + 1]
            if tx is None and ty is None:
                continue
            dz = (tx if tx is not None else E.zero(op.operands[2 * k].type),
                  ty if ty is not None else E.zero(op.operands[2 * k + 1].type))
            term = _mul(E, D, dz)
            total = term if total is None else (E.add(total[0], term[0]), E.add(total[1], term[1]))
        assert total is not None
        out = E.zero(op.results[0].type)
        for i, part in enumerate(total):
            out = E.v(llvm.InsertValueOp(DenseArrayBase.from_list(i64, [i]), out, part))
        return [out]

    def reverse(self, ctx, op, dys):
        self._check(ctx, op)
        dy = dys[0]
        if dy is None:
            return [None] * len(op.operands)
        E = ctx.E
        u = (_part(E, dy, 0), _part(E, dy, 1))
        adjoints: list = []
        for k, D in enumerate(self._derivatives(ctx, op)):
            wanted = [ctx.wants(op.operands[2 * k]), ctx.wants(op.operands[2 * k + 1])]
            if not any(wanted):
                adjoints += [None, None]
                continue
            dx, dy_ = _conj_mul(E, D, u)
            adjoints += [dx if wanted[0] else None, dy_ if wanted[1] else None]
        return adjoints


for _name, (_count, _partials) in PARTIALS.items():
    REGISTRY.register_function(_name, ComplexRule(_name, _count, _partials))
