"""Property tests: random compositions of the supported ops, compiled through the
MLIR path; reverse mode against central finite differences, forward mode against
reverse mode, primal against a Python evaluation of the same expression."""

from __future__ import annotations

import math
import sys
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mlir"))

import zymase.mlir  # noqa: E402
from adhelpers import central_fd, drivers  # noqa: E402

NVARS = 3

# Unary ops that are smooth and defined on all reals (composed with a safe inner map).
UNARY = {
    "sin": (lambda u: math.sin(u), "math.sin {u}"),
    "cos": (lambda u: math.cos(u), "math.cos {u}"),
    "tanh": (lambda u: math.tanh(u), "math.tanh {u}"),
    "atan": (lambda u: math.atan(u), "math.atan {u}"),
    "erf": (lambda u: math.erf(u), "math.erf {u}"),
    "neg": (lambda u: -u, "arith.negf {u}"),
}
BINARY = {
    "add": (lambda a, b: a + b, "arith.addf {a}, {b}"),
    "sub": (lambda a, b: a - b, "arith.subf {a}, {b}"),
    "mul": (lambda a, b: a * b, "arith.mulf {a}, {b}"),
}


def exprs(depth: int):
    leaf = st.one_of(
        st.integers(0, NVARS - 1).map(lambda i: ("var", i)),
        st.floats(-2, 2, allow_nan=False).map(lambda c: ("const", round(c, 3))),
    )
    if depth == 0:
        return leaf
    sub = exprs(depth - 1)
    return st.one_of(
        leaf,
        st.tuples(st.sampled_from(sorted(UNARY)), sub).map(lambda t: ("un", *t)),
        st.tuples(st.sampled_from(sorted(BINARY)), sub, sub).map(lambda t: ("bin", *t)),
        # u / (1 + v^2), exp(tanh u), sqrt(1 + u^2), log(1 + u^2), (1 + u^2)^c
        st.tuples(sub, sub).map(lambda t: ("safediv", *t)),
        sub.map(lambda u: ("exptanh", u)),
        sub.map(lambda u: ("sqrt1p", u)),
        sub.map(lambda u: ("log1psq", u)),
        st.tuples(sub, st.floats(-1.5, 1.5, allow_nan=False)).map(lambda t: ("pow1p", t[0], round(t[1], 2))),
        st.tuples(sub, sub, sub, sub).map(lambda t: ("select", *t)),
    )


class Gen:
    """Emits MLIR for an expression and evaluates it in Python."""

    def __init__(self):
        self.lines: list[str] = []
        self.k = 0
        self.margins: list[float] = []

    def fresh(self) -> str:
        self.k += 1
        return f"%v{self.k}"

    def emit(self, rhs: str) -> str:
        v = self.fresh()
        self.lines.append(f"  {v} = {rhs} : f64")
        return v

    def const(self, c: float) -> str:
        v = self.fresh()
        self.lines.append(f"  {v} = arith.constant {float(c)!r} : f64")
        return v

    def one_plus_sq(self, u: str) -> str:
        return self.emit(f"arith.addf {self.const(1.0)}, {self.emit(f'arith.mulf {u}, {u}')}")

    def build(self, e, xs) -> tuple[str, float]:
        kind = e[0]
        if kind == "var":
            return f"%a{e[1]}", xs[e[1]]
        if kind == "const":
            return self.const(e[1]), e[1]
        if kind == "un":
            u, uv = self.build(e[2], xs)
            f, text = UNARY[e[1]]
            return self.emit(text.format(u=u)), f(uv)
        if kind == "bin":
            a, av = self.build(e[2], xs)
            b, bv = self.build(e[3], xs)
            f, text = BINARY[e[1]]
            return self.emit(text.format(a=a, b=b)), f(av, bv)
        if kind == "safediv":
            a, av = self.build(e[1], xs)
            b, bv = self.build(e[2], xs)
            return self.emit(f"arith.divf {a}, {self.one_plus_sq(b)}"), av / (1 + bv * bv)
        if kind == "exptanh":
            u, uv = self.build(e[1], xs)
            return self.emit(f"math.exp {self.emit(f'math.tanh {u}')}"), math.exp(math.tanh(uv))
        if kind == "sqrt1p":
            u, uv = self.build(e[1], xs)
            return self.emit(f"math.sqrt {self.one_plus_sq(u)}"), math.sqrt(1 + uv * uv)
        if kind == "log1psq":
            u, uv = self.build(e[1], xs)
            return self.emit(f"math.log {self.one_plus_sq(u)}"), math.log(1 + uv * uv)
        if kind == "pow1p":
            u, uv = self.build(e[1], xs)
            return self.emit(f"math.powf {self.one_plus_sq(u)}, {self.const(e[2])}"), (1 + uv * uv) ** e[2]
        if kind == "select":
            p, pv = self.build(e[1], xs)
            q, qv = self.build(e[2], xs)
            a, av = self.build(e[3], xs)
            b, bv = self.build(e[4], xs)
            c = self.fresh()
            self.lines.append(f"  {c} = arith.cmpf olt, {p}, {q} : f64")
            v = self.fresh()
            self.lines.append(f"  {v} = arith.select {c}, {a}, {b} : f64")
            self.margins.append(abs(pv - qv))
            return v, av if pv < qv else bv
        raise AssertionError(kind)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    st.lists(exprs(3), min_size=4, max_size=4),
    st.lists(st.floats(-1.5, 1.5, allow_nan=False), min_size=NVARS, max_size=NVARS),
)
def test_random_compositions(trees, xs):
    parts, expected = [], []
    for n, tree in enumerate(trees):
        g = Gen()
        v, val = g.build(tree, xs)
        # Finite differences are meaningless next to a select's switching point.
        assume(all(m > 1e-3 for m in g.margins))
        expected.append(val)
        args = ", ".join(f"%a{i}: f64" for i in range(NVARS))
        parts.append(f"func.func @e{n}({args}) -> f64 {{\n" + "\n".join(g.lines) + f"\n  func.return {v} : f64\n}}")
        parts.append(drivers(f"e{n}", NVARS))
    cm = zymase.mlir.compile("\n".join(parts), opt_level=1)
    for n in range(len(trees)):
        f = getattr(cm, f"e{n}")
        assert math.isclose(f(*xs), expected[n], rel_tol=1e-12, abs_tol=1e-12)
        grad = getattr(cm, f"d_e{n}")(*xs)
        scale = max(1.0, max(abs(g) for g in grad))
        for i in range(NVARS):
            fd = central_fd(f, xs, i, h=1e-5)
            assert abs(grad[i] - fd) <= 1e-5 * scale, (n, i, grad[i], fd, trees[n])
            tangent = getattr(cm, f"t{i}_e{n}")(*xs)
            assert math.isclose(tangent, grad[i], rel_tol=1e-10, abs_tol=1e-12 * scale), (n, i)
