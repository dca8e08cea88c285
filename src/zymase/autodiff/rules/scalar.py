"""Dialect-neutral derivative rules for scalar floating-point operations.

Each rule lists one adjoint expression per operand: ``f(E, P, dy)`` returns the
contribution ``dy * d(result)/d(operand)`` built with the emitter ``E`` from the
primal values ``P.arg(i)`` / ``P.res()``. Dialect modules bind these rules to op
classes (``arith.mulf``, ``llvm.fmul``) or to function names (``sin``, ``llvm.sin``).
"""

from __future__ import annotations

import math as _m

from zymase.autodiff.registry import ScalarRule

R = ScalarRule


def _recip_sqrt_one_minus_sq(E, x):
    one = E.const_like(1.0, x)
    return E.fn("sqrt", E.sub(one, E.square(x)))


def _erf_partial(E, x, dy):
    return E.mul(dy, E.mul(E.const_like(2.0 / _m.sqrt(_m.pi), dy), E.fn("exp", E.neg(E.square(x)))))


# ----- arithmetic ---------------------------------------------------------------
FADD = R(lambda E, P, dy: dy, lambda E, P, dy: dy, name="fadd")
FSUB = R(lambda E, P, dy: dy, lambda E, P, dy: E.neg(dy), name="fsub")
FMUL = R(lambda E, P, dy: E.mul(dy, P.arg(1)), lambda E, P, dy: E.mul(P.arg(0), dy), name="fmul")


def _fdiv_divisor_partial(E, P, dy):
    """-dy a / b^2. As -dy (a / b) / b when the quotient is at hand or cheaply kept (the
    reverse sweep of a loop body that divides by a per-iteration value: projecting by a
    depth). As (dy / b) a / b from the operands when only the dividend varies (normalizing
    by a norm): the quotient would be recomputed, one division per element, while 1/b is
    computed once. Scaling by 1/b twice, not by 1/b^2, keeps b^2 from overflowing."""
    if P.varies(0) and not P.varies(1):
        return fdiv_divisor_partial_from_operands(E, P, dy)
    return fdiv_divisor_partial_from_quotient(E, P, dy)


def fdiv_divisor_partial_from_operands(E, P, dy):
    """-dy a / b^2 as (dy / b) a / b, reading the operands only."""
    inv = E.div(E.const_like(1.0, dy), P.arg(1))
    return E.neg(E.mul(E.mul(E.mul(dy, inv), P.arg(0)), inv))


def fdiv_divisor_partial_from_quotient(E, P, dy):
    """-dy a / b^2 as -dy (a / b) / b, reading the quotient and the divisor."""
    inv = E.div(E.const_like(1.0, dy), P.arg(1))
    return E.neg(E.mul(E.mul(dy, P.res()), inv))


# a / b: both adjoints scale by 1/b, one division (the same 1/b for both operands, and out
# of the loop when b is loop-invariant) instead of two per element; the derivative moves
# by the rounding of 1/b only.
def fdiv_rule(divisor_partial) -> R:
    """The rule of a / b with this partial for b (the one for a is dy / b)."""
    return R(
        lambda E, P, dy: E.mul(dy, E.div(E.const_like(1.0, dy), P.arg(1))),
        divisor_partial,
        name="fdiv",
        singular=True,
        regular_if=((1, "nonzero"),),
        finite_value_if=((1, "nonzero"),),
    )


FDIV = fdiv_rule(_fdiv_divisor_partial)
FNEG = R(lambda E, P, dy: E.neg(dy), name="fneg")
# freeze(x) is x wherever x is a defined value (it only pins undef/poison to some value),
# so the tangent and the adjoint pass through unchanged.
FREEZE = R(lambda E, P, dy: dy, name="freeze")
# llvm.arithmetic.fence(x) is x: it only keeps the optimizer from reassociating across it
# (clang's __arithmetic_fence; the reverse sweep's rounded partials, autodiff/rounded_partials,
# which a derivative of the derivative differentiates again)
FENCE = R(lambda E, P, dy: dy, name="arithmetic.fence")
# llvm.canonicalize(x) is x but for a signaling NaN, which it quiets (and denormals under a
# flushing floating-point mode, which the derivatives do not model): clang's
# __builtin_canonicalize, and the vectorizable barrier autodiff/rounded_partials puts in
# place of a fence
CANONICALIZE = R(lambda E, P, dy: dy, name="canonicalize")
# frem(a, b) = a - b * trunc(a / b): d/da = 1, d/db = -trunc(a / b).
FREM = R(
    lambda E, P, dy: dy,
    lambda E, P, dy: E.neg(E.mul(dy, E.fn("trunc", E.div(P.arg(0), P.arg(1))))),
    name="frem",
    singular=True,
    regular_if=((1, "nonzero"),),
    finite_value_if=((1, "nonzero"),),
)


class _FloatConversion(ScalarRule):
    """fpext / fptrunc: the adjoint is converted back to the operand's type, the
    tangent forward to the result's type (linearity alone would keep the types)."""

    def __init__(self):
        super().__init__(lambda E, P, dy: E.fconv(dy, P.arg_type(0)), name="fconv")

    def forward(self, ctx, op, tangents):
        t = tangents[0]
        return [None if t is None else ctx.E.fconv(t, op.results[0].type)]


FCONV = _FloatConversion()

def _away_from_origin(E, P, term):
    """``term`` where hypot's result is nonzero, 0 at the origin."""
    return E.select(E.fcmp("oeq", P.res(), E.zero(term.type)), E.zero(term.type), term)


def _times_power_of_two(fname: str) -> ScalarRule:
    """``fname(x, n) = x * 2^n`` (ldexp, scalbn, scalbln): the partial in x is ``fname(dy, n)``,
    exact; the integer n has none."""
    return R(lambda E, P, dy: E.fn(fname, dy, P.arg(1)), None, bounded=True)


# ----- math functions, by neutral name ------------------------------------------
MATH: dict[str, ScalarRule] = {
    "sqrt": R(lambda E, P, dy: E.div(dy, E.mul(E.const_like(2.0, dy), P.res()))),
    "cbrt": R(lambda E, P, dy: E.div(dy, E.mul(E.const_like(3.0, dy), E.square(P.res())))),
    # rsqrt(x) = x^(-1/2) (math.rsqrt): d/dx = -rsqrt(x) / (2 x)
    "rsqrt": R(lambda E, P, dy: E.mul(dy, E.div(P.res(), E.mul(E.const_like(-2.0, dy), P.arg(0))))),
    "exp": R(lambda E, P, dy: E.mul(dy, P.res())),
    "exp2": R(lambda E, P, dy: E.mul(dy, E.mul(P.res(), E.const_like(_m.log(2.0), dy)))),
    "expm1": R(lambda E, P, dy: E.mul(dy, E.add(P.res(), E.const_like(1.0, dy)))),
    "log": R(lambda E, P, dy: E.div(dy, P.arg(0))),
    "log2": R(lambda E, P, dy: E.div(dy, E.mul(P.arg(0), E.const_like(_m.log(2.0), dy)))),
    "log10": R(lambda E, P, dy: E.div(dy, E.mul(P.arg(0), E.const_like(_m.log(10.0), dy)))),
    "log1p": R(lambda E, P, dy: E.div(dy, E.add(P.arg(0), E.const_like(1.0, dy)))),
    # pow(x, a): d/dx = a * x^(a-1); d/da = pow(x, a) * log(x).
    "pow": R(
        lambda E, P, dy: E.mul(
            dy, E.mul(P.arg(1), E.fn("pow", P.arg(0), E.sub(P.arg(1), E.const_like(1.0, dy))))
        ),
        lambda E, P, dy: E.mul(dy, E.mul(P.res(), E.fn("log", P.arg(0)))),
    ),
    # powi(x, n) with an integer n: d/dx = n * x^(n-1).
    "powi": R(
        lambda E, P, dy: E.mul(
            dy,
            E.mul(
                E.sitofp(P.arg(1), dy.type),
                E.fn("powi", P.arg(0), E.isub(P.arg(1), E.iconst(1, P.arg_type(1)))),
            ),
        ),
        None,
    ),
    "sin": R(lambda E, P, dy: E.mul(dy, E.fn("cos", P.arg(0)))),
    "cos": R(lambda E, P, dy: E.neg(E.mul(dy, E.fn("sin", P.arg(0))))),
    "tan": R(lambda E, P, dy: E.mul(dy, E.add(E.const_like(1.0, dy), E.square(P.res())))),
    "asin": R(lambda E, P, dy: E.div(dy, _recip_sqrt_one_minus_sq(E, P.arg(0)))),
    "acos": R(lambda E, P, dy: E.neg(E.div(dy, _recip_sqrt_one_minus_sq(E, P.arg(0))))),
    "atan": R(lambda E, P, dy: E.div(dy, E.add(E.const_like(1.0, dy), E.square(P.arg(0))))),
    # atan2(a, b): d/da = b / (a^2 + b^2), d/db = -a / (a^2 + b^2).
    "atan2": R(
        lambda E, P, dy: E.div(E.mul(dy, P.arg(1)), E.add(E.square(P.arg(0)), E.square(P.arg(1)))),
        lambda E, P, dy: E.neg(
            E.div(E.mul(dy, P.arg(0)), E.add(E.square(P.arg(0)), E.square(P.arg(1))))
        ),
    ),
    # asinh' = 1/sqrt(x^2 + 1), acosh' = 1/sqrt(x^2 - 1), atanh' = 1/(1 - x^2)
    "asinh": R(lambda E, P, dy: E.div(dy, E.fn("sqrt", E.add(E.square(P.arg(0)), E.const_like(1.0, dy))))),
    "acosh": R(lambda E, P, dy: E.div(dy, E.fn("sqrt", E.sub(E.square(P.arg(0)), E.const_like(1.0, dy))))),
    "atanh": R(lambda E, P, dy: E.div(dy, E.sub(E.const_like(1.0, dy), E.square(P.arg(0))))),
    "sinh": R(lambda E, P, dy: E.mul(dy, E.fn("cosh", P.arg(0)))),
    "cosh": R(lambda E, P, dy: E.mul(dy, E.fn("sinh", P.arg(0)))),
    "tanh": R(lambda E, P, dy: E.mul(dy, E.sub(E.const_like(1.0, dy), E.square(P.res())))),
    # erf' = 2/sqrt(pi) exp(-x^2) = -erfc'
    "erf": R(lambda E, P, dy: _erf_partial(E, P.arg(0), dy)),
    "erfc": R(lambda E, P, dy: E.neg(_erf_partial(E, P.arg(0), dy))),
    # log|Gamma(x)|' = digamma(x); Gamma' = Gamma digamma (zymase.autodiff.special)
    "lgamma": R(lambda E, P, dy: E.mul(dy, E.fn("digamma", P.arg(0)))),
    "tgamma": R(lambda E, P, dy: E.mul(dy, E.mul(P.res(), E.fn("digamma", P.arg(0))))),
    # hypot(a, b) = r: d/da = a / r, d/db = b / r. At the origin hypot is a cone, not
    # differentiable; its partials are taken as 0 there (the centre of its subgradients)
    # rather than 0/0: hypot(x - x, y) then has derivative 0 in x in both modes, as the
    # function has (issue 23 fuzz seed 700278).
    "hypot": R(
        lambda E, P, dy: _away_from_origin(E, P, E.div(E.mul(dy, P.arg(0)), P.res())),
        lambda E, P, dy: _away_from_origin(E, P, E.div(E.mul(dy, P.arg(1)), P.res())),
    ),
    # bounded: the partials below are 0 or +-1 whatever the primal values, so a zero
    # adjoint stays zero without a strong-zero guard
    "fabs": R(lambda E, P, dy: E.mul(dy, E.sign(P.arg(0))), bounded=True),
    # copysign(a, b) = |a| * sign(b): d/da = sign(a) * sign(b); no derivative in b.
    "copysign": R(lambda E, P, dy: E.mul(dy, E.mul(E.sign(P.arg(0)), E.sign(P.arg(1)))), None, bounded=True),
    # fmin/fmax: the derivative follows the chosen operand (ties go to the second).
    "fmin": R(
        lambda E, P, dy: E.select(E.fcmp("olt", P.arg(0), P.arg(1)), dy, E.zero(dy.type)),
        lambda E, P, dy: E.select(E.fcmp("olt", P.arg(0), P.arg(1)), E.zero(dy.type), dy),
        bounded=True,
    ),
    "fmax": R(
        lambda E, P, dy: E.select(E.fcmp("ogt", P.arg(0), P.arg(1)), dy, E.zero(dy.type)),
        lambda E, P, dy: E.select(E.fcmp("ogt", P.arg(0), P.arg(1)), E.zero(dy.type), dy),
        bounded=True,
    ),
    # fdim(a, b) = a - b where a > b, else +0
    "fdim": R(
        lambda E, P, dy: E.select(E.fcmp("ogt", P.arg(0), P.arg(1)), dy, E.zero(dy.type)),
        lambda E, P, dy: E.select(E.fcmp("ogt", P.arg(0), P.arg(1)), E.neg(dy), E.zero(dy.type)),
        bounded=True,
    ),
    # remainder(a, b) = a - n b with n = a / b rounded to the nearest integer, ties to even
    # (rint in the default rounding mode): d/da = 1, d/db = -n (a jump where n changes)
    "remainder": R(
        lambda E, P, dy: dy,
        lambda E, P, dy: E.neg(E.mul(dy, E.fn("rint", E.div(P.arg(0), P.arg(1))))),
        name="remainder",
        singular=True,
        regular_if=((1, "nonzero"),),
        finite_value_if=((1, "nonzero"),),
    ),
    "fma": R(
        lambda E, P, dy: E.mul(dy, P.arg(1)),
        lambda E, P, dy: E.mul(P.arg(0), dy),
        lambda E, P, dy: dy,
    ),
    "fmod": FREM,
    # ldexp(x, n) = scalbn(x, n) = scalbln(x, n) = x * 2^n, exactly: d/dx = 2^n, so the
    # adjoint scales the same way (by the same function: scalbln's n is a long); n is an integer
    "ldexp": _times_power_of_two("ldexp"),
    "scalbn": _times_power_of_two("scalbn"),
    "scalbln": _times_power_of_two("scalbln"),
    # frexp(x, &e) = m with x = m * 2^e, e constant between powers of two: dm/dx = 2^-e,
    # computed as m / x (exact: m and x differ by a power of two). The int e written through
    # the pointer has no derivative (transforms/libm_outputs.py). At x = 0 the exponent jumps
    # and there is no derivative (m / x is NaN).
    "frexp": R(lambda E, P, dy: E.mul(dy, E.div(P.res(), P.arg(0))), None, singular=True,
               regular_if=((0, "nonzero"),), finite_value_if=None),
    # modf(x, &ip) returns the fractional part x - trunc(x): d/dx = 1. The integral part
    # stored through the pointer has derivative 0 (transforms/libm_outputs.py stores it as
    # an inactive value, so an active destination gets a zero shadow / loses its adjoint).
    "modf": R(lambda E, P, dy: dy, None, bounded=True),
    # remquo(x, y, &q) = x - n y, n = x / y rounded to nearest (ties to even): d/dx = 1,
    # d/dy = -n. n is recovered as rint((x - r) / y) from the result r, since q holds only
    # the low bits of n (and its sign); the int q has no derivative.
    "remquo": R(
        lambda E, P, dy: dy,
        lambda E, P, dy: E.neg(E.mul(dy, E.fn("rint", E.div(E.sub(P.arg(0), P.res()), P.arg(1))))),
        None,
        singular=True,
        regular_if=((1, "nonzero"),),
        finite_value_if=((1, "nonzero"),),
    ),
    # nextafter(x, y) / nexttoward(x, y) is x moved by one ulp toward y: a step of one ulp
    # is the rounding of the result, so d/dx = 1; the derivative in y is zero (y only picks
    # the direction of the step).
    "nextafter": R(lambda E, P, dy: dy, None, bounded=True),
    "nexttoward": R(lambda E, P, dy: dy, None, bounded=True),
    # exp10(x) = 10^x: d/dx = ln(10) 10^x
    "exp10": R(lambda E, P, dy: E.mul(dy, E.mul(P.res(), E.const_like(_m.log(10.0), dy)))),
}
# Functions whose value or partials are infinite or NaN at some finite arguments (a pole,
# the edge of the domain: sqrt' at 0, log at 0, asin' at 1): strong zeros guard their
# adjoint terms (registry.ScalarRule), unless the operands listed are known to be
# positive (or at least 0) where the op is used (analysis.finiteness): log(1 + exp(x))
# needs no guard. Per function: (partials regular if, value finite if); the value of
# cbrt and atan2 is finite everywhere (None), that of sqrt at arguments >= 0.
# The other functions are finite at finite arguments, overflow aside.
_POSITIVE_ARG = ((0, "positive"),)
SINGULAR = {
    "sqrt": (_POSITIVE_ARG, ((0, "nonneg"),)), "rsqrt": (_POSITIVE_ARG, _POSITIVE_ARG), "cbrt": (_POSITIVE_ARG, None), "log": (_POSITIVE_ARG, _POSITIVE_ARG),
    "log2": (_POSITIVE_ARG, _POSITIVE_ARG), "log10": (_POSITIVE_ARG, _POSITIVE_ARG),
    "log1p": (((0, "nonneg"),), ((0, "nonneg"),)), "pow": (_POSITIVE_ARG, _POSITIVE_ARG),
    "powi": (_POSITIVE_ARG, _POSITIVE_ARG), "tan": ((), ()), "asin": ((), ()), "acos": ((), ()),
    "atan2": ((), None), "acosh": ((), ()), "atanh": ((), ()), "lgamma": ((), ()),
    "tgamma": ((), ()),
}
for _name, (_regular_if, _finite_if) in SINGULAR.items():
    MATH[_name].singular = True
    MATH[_name].regular_if = _regular_if
    MATH[_name].finite_value_if = _finite_if

MATH["fmuladd"] = MATH["fma"]
# fma's partials are products: right lane by lane on vectors of floats (llvm.fmuladd.v4f64)
MATH["fma"].handles_vectors = True
MATH["minnum"] = MATH["minimum"] = MATH["fmin"]
MATH["maxnum"] = MATH["maximum"] = MATH["fmax"]
# so are fmin's and fmax's (a compare and a select per lane: llvm.maxnum.v2f64, what a
# vectorized fmax loop takes before its llvm.vector.reduce.fmax, rules/vector_reduce.py)
MATH["fmin"].handles_vectors = MATH["fmax"].handles_vectors = True
# and fabs's and copysign's (the sign of each lane, llvm.copysign on the vector: _mm_andnot_pd
# with the sign mask, which instcombine makes llvm.fabs.v2f64)
MATH["fabs"].handles_vectors = MATH["copysign"].handles_vectors = True
# and sqrt's (dy / (2 sqrt x) per lane: Eigen's normalized() takes llvm.sqrt.v2f64 of the
# squared norm and a zero lane; strong zeros guard the vector term, registry._needs_guard)
MATH["sqrt"].handles_vectors = True

# Piecewise-constant functions: zero derivative, so they are never active.
ZERO = R()
ZERO.handles_vectors = True  # (no derivative, lane by lane too: llvm.floor.v4f64)
# logb(x) is the exponent of x as a float (ilogb, an int, needs no rule)
for _name in ("floor", "ceil", "round", "roundeven", "trunc", "rint", "nearbyint", "lround", "llround", "logb"):
    MATH[_name] = ZERO
