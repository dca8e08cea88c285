"""Helpers for AD tests on MLIR: wrap functions with enzyme.autodiff/fwddiff drivers
and compare against central finite differences."""

from __future__ import annotations

import math

ACT = "#enzyme<activity enzyme_{}>"


def acts(*names: str) -> str:
    return "[" + ", ".join(ACT.format(n) for n in names) + "]"


def drivers(name: str, n: int, t: str = "f64") -> str:
    """``@d_<name>`` (reverse: all n float args active, returns n derivatives) and
    ``@t<i>_<name>`` (forward: tangent along argument i) for a function
    ``@<name>(n x t) -> t``."""
    args = ", ".join(f"%a{i}: {t}" for i in range(n))
    vals = ", ".join(f"%a{i}" for i in range(n))
    types = ", ".join([t] * n)
    out = [
        f"func.func @d_{name}({args}) -> ({types}) {{",
        f"  %one = arith.constant 1.0 : {t}",
        f"  %r:{n} = enzyme.autodiff @{name}({vals}, %one) {{activity = {acts(*['active'] * n)}, "
        f"ret_activity = {acts('activenoneed')}}} : ({types}, {t}) -> ({types})",
        "  func.return " + ", ".join(f"%r#{i}" for i in range(n)) + f" : {types}",
        "}",
    ]
    for i in range(n):
        fargs = []
        for j in range(n):
            fargs += [f"%a{j}", "%one" if i == j else "%zero"]
        out += [
            f"func.func @t{i}_{name}({args}) -> {t} {{",
            f"  %one = arith.constant 1.0 : {t}",
            f"  %zero = arith.constant 0.0 : {t}",
            f"  %r = enzyme.fwddiff @{name}({', '.join(fargs)}) {{activity = {acts(*['dup'] * n)}, "
            f"ret_activity = {acts('dupnoneed')}}} : ({', '.join([t] * (2 * n))}) -> {t}",
            f"  func.return %r : {t}",
            "}",
        ]
    return "\n".join(out)


def central_fd(f, xs, i, h=1e-6):
    a = list(xs)
    b = list(xs)
    a[i] += h
    b[i] -= h
    return (f(*a) - f(*b)) / (2 * h)


def close(a, b, rtol=1e-6, atol=1e-8):
    return math.isclose(a, b, rel_tol=rtol, abs_tol=atol)
