"""Rules for C's complex functions on ``double _Complex`` and ``float _Complex``: the
multiplication and division helpers clang calls (``__muldc3``, ``__divdc3``, ``__mulsc3``,
``__divsc3``), the holomorphic functions of ``<complex.h>`` that ``std::complex`` also
calls (``cexp``, ``clog``, ``csqrt``, ``cpow``, the trigonometric and hyperbolic ones, and
their ``f`` forms) and ``carg``/``cargf`` and ``cabsf`` (``cabs`` is ``hypot``, in libm.py).

On x86-64 a ``double _Complex`` argument is passed as its two doubles and the result comes
back as ``{double, double}`` (a float aggregate, see :mod:`zymase.autodiff.type_rules`); a
``float _Complex`` is one ``<2 x float>`` (the helpers take its parts as four floats) and
comes back as ``<2 x float>``. A holomorphic ``g`` has a complex derivative ``D = g'(z)``,
so the tangent is ``D * dz`` and, written on real and imaginary parts, the adjoint is
``conj(D) * dr``. The ``long double`` forms pass through memory and keep no rule: they are
refused where they meet active data."""

from __future__ import annotations

from collections.abc import Callable

from zymase.autodiff.registry import REGISTRY, Rule
from zymase.errors import ZymaseError
from zymase.autodiff.type_rules import is_float_vector
from zymase.ir import DenseArrayBase, i32, i64, llvm, llvm_ext, location_of

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


# Where a complex argument's parts are among a call's operands: ``(i, j)``, two scalar
# operands, or ``(i,)``, one ``<2 x T>`` operand (lanes 0 and 1).
Slot = tuple


def complex_slots(op, count: int) -> list[Slot] | None:
    """The slots of the ``count`` complex arguments of a call in one of the x86-64 forms
    (all parts of one float type), or None when the call has another signature."""
    slots: list[Slot] = []
    element = None
    i, operands = 0, list(op.operands)
    while i < len(operands):
        t = operands[i].type
        if is_float_vector(t) and t.get_shape()[0] == 2:
            slots.append((i,))
            part, i = t.element_type, i + 1
        elif str(t) in ("f32", "f64") and i + 1 < len(operands) and operands[i + 1].type == t:
            slots.append((i, i + 1))
            part, i = t, i + 2
        else:
            return None
        if element is not None and part != element:
            return None
        element = part
    return slots if len(slots) == count and element is not None else None


def _complex_result(t) -> bool:
    """``{T, T}`` or ``<2 x T>`` for a float type ``T``."""
    if isinstance(t, llvm.LLVMStructType):
        return len(t.types.data) == 2 and t.types.data[0] == t.types.data[1] and str(t.types.data[0]) in ("f32", "f64")
    return is_float_vector(t) and t.get_shape()[0] == 2


def _parts(E, value) -> Complex:
    """The real and imaginary parts of a ``{T, T}`` or ``<2 x T>`` value."""
    if isinstance(value.type, llvm.LLVMStructType):
        return _part(E, value, 0), _part(E, value, 1)
    return tuple(E.v(llvm_ext.ExtractElementOp(value, E.iconst(k, i32))) for k in (0, 1))


def _pack(E, t, parts: Complex):
    """A ``{T, T}`` or ``<2 x T>`` value of type ``t`` from its parts."""
    out = E.zero(t)
    for k, part in enumerate(parts):
        if isinstance(t, llvm.LLVMStructType):
            out = E.v(llvm.InsertValueOp(DenseArrayBase.from_list(i64, [k]), out, part))
        else:
            out = E.v(llvm.InsertElementOp(out, part, E.iconst(k, i32)))
    return out


def _signature_error(name: str, ctx, op) -> ZymaseError:
    return ZymaseError(
        f"'{name}' is called with a signature other than the x86-64 ones for double _Complex / "
        "float _Complex (a double complex as two doubles, a float complex as <2 x float>, the result "
        "as {double, double} or <2 x float>); zymase has no derivative for it",
        construct=f"call to '{name}'",
        function=getattr(ctx, "fname", None),
        location=location_of(op),
        hint="compute with double _Complex / std::complex<double> or their float forms on x86-64",
    )


class ComplexRule(Rule):
    """A complex function of ``count`` complex arguments returning a complex."""

    handles_vectors = True

    def __init__(self, name: str, count: int, partials: Partials):
        self.name = name
        self.count = count
        self.partials = partials

    def _slots(self, op) -> list[Slot] | None:
        if not op.results or not _complex_result(op.results[0].type):
            return None
        return complex_slots(op, self.count)

    def propagates(self, op, index):
        return self._slots(op) is None or str(op.operands[index].type) != "i1"

    def _check(self, ctx, op) -> list[Slot]:
        slots = self._slots(op)
        if slots is None:
            raise _signature_error(self.name, ctx, op)
        return slots

    def _argument(self, E, values, slot: Slot) -> Complex:
        if len(slot) == 2:
            return values[slot[0]], values[slot[1]]
        return _parts(E, values[slot[0]])

    def _derivatives(self, ctx, op, slots) -> list[Complex]:
        E = ctx.E
        args = [ctx.primal(o) for o in op.operands]
        zs = [self._argument(E, args, slot) for slot in slots]
        return self.partials(E, *zs, _parts(E, ctx.primal(op.results[0])))

    def forward(self, ctx, op, tangents):
        slots = self._check(ctx, op)
        if all(t is None for t in tangents):
            return [None]
        E = ctx.E
        total = None
        for slot, D in zip(slots, self._derivatives(ctx, op, slots)):
            if all(tangents[i] is None for i in slot):
                continue
            given = [tangents[i] if tangents[i] is not None else E.zero(op.operands[i].type) for i in range(len(op.operands))]
            term = _mul(E, D, self._argument(E, given, slot))
            total = term if total is None else (E.add(total[0], term[0]), E.add(total[1], term[1]))
        assert total is not None
        return [_pack(E, op.results[0].type, total)]

    def reverse(self, ctx, op, dys):
        slots = self._check(ctx, op)
        dy = dys[0]
        if dy is None:
            return [None] * len(op.operands)
        E = ctx.E
        u = _parts(E, dy)
        adjoints: list = [None] * len(op.operands)
        for slot, D in zip(slots, self._derivatives(ctx, op, slots)):
            wanted = [ctx.wants(op.operands[i]) for i in slot]
            if not any(wanted):
                continue
            d_re, d_im = _conj_mul(E, D, u)
            if len(slot) == 2:
                adjoints[slot[0]] = d_re if wanted[0] else None
                adjoints[slot[1]] = d_im if wanted[1] else None
            else:
                adjoints[slot[0]] = _pack(E, op.operands[slot[0]].type, (d_re, d_im))
        return adjoints


class ComplexToRealRule(Rule):
    """A real function of one complex argument, ``carg`` (``atan2(im, re)``) or ``cabsf``
    (``hypot(re, im)``), with partials ``(d/dre, d/dim)`` from the parts and the result."""

    handles_vectors = True

    def __init__(self, name: str, partials):
        self.name = name
        self.partials = partials

    def _slot(self, op) -> Slot | None:
        slots = complex_slots(op, 1) if op.results and str(op.results[0].type) in ("f32", "f64") else None
        return slots[0] if slots else None

    def propagates(self, op, index):
        return True

    def _check(self, ctx, op) -> Slot:
        slot = self._slot(op)
        if slot is None:
            raise _signature_error(self.name, ctx, op)
        return slot

    def _partials(self, ctx, op, slot) -> Complex:
        E = ctx.E
        args = [ctx.primal(o) for o in op.operands]
        z = (args[slot[0]], args[slot[1]]) if len(slot) == 2 else _parts(E, args[slot[0]])
        return self.partials(E, z, ctx.primal(op.results[0]))

    def forward(self, ctx, op, tangents):
        slot = self._check(ctx, op)
        if all(t is None for t in tangents):
            return [None]
        E = ctx.E
        given = [t if t is not None else E.zero(o.type) for t, o in zip(tangents, op.operands)]
        dz = (given[slot[0]], given[slot[1]]) if len(slot) == 2 else _parts(E, given[slot[0]])
        p_re, p_im = self._partials(ctx, op, slot)
        return [E.add(E.mul(p_re, dz[0]), E.mul(p_im, dz[1]))]

    def reverse(self, ctx, op, dys):
        slot = self._check(ctx, op)
        dy = dys[0]
        adjoints: list = [None] * len(op.operands)
        if dy is None or not any(ctx.wants(op.operands[i]) for i in slot):
            return adjoints
        E = ctx.E
        p_re, p_im = self._partials(ctx, op, slot)
        d_re, d_im = E.mul(dy, p_re), E.mul(dy, p_im)
        if len(slot) == 2:
            adjoints[slot[0]], adjoints[slot[1]] = d_re, d_im
        else:
            adjoints[slot[0]] = _pack(E, op.operands[slot[0]].type, (d_re, d_im))
        return adjoints


def _arg_partials(E, z, r):
    x, y = z
    norm = E.add(E.mul(x, x), E.mul(y, y))
    return E.neg(E.div(y, norm)), E.div(x, norm)


def _abs_partials(E, z, r):
    x, y = z
    return E.div(x, r), E.div(y, r)


# the float forms: the multiplication helpers by their own names, the functions with "f"
_FLOAT_NAMES = {"__muldc3": "__mulsc3", "__divdc3": "__divsc3"}
for _name, (_count, _partials) in PARTIALS.items():
    REGISTRY.register_function(_name, ComplexRule(_name, _count, _partials))
    _float_name = _FLOAT_NAMES.get(_name, _name + "f")
    REGISTRY.register_function(_float_name, ComplexRule(_float_name, _count, _partials))
for _name, _partials in (("carg", _arg_partials), ("cargf", _arg_partials), ("cabsf", _abs_partials)):
    REGISTRY.register_function(_name, ComplexToRealRule(_name, _partials))
