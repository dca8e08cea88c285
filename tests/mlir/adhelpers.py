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



def vector_requests(name: str, params: list[tuple[str, str]], result: str | None, width: int) -> str:
    """Requests at vector ``width`` for ``@<name>``, whose parameters are ``params``
    ((type, activity): ``dup``, ``active`` or ``const``) and whose result is ``result``
    (a float type, or None). ``@fv<width>_<name>`` (forward): each parameter followed
    by its ``width`` tangents or shadows if not const; returns the result's ``width``
    tangents. ``@dv<width>_<name>`` (reverse): each parameter followed by its ``width``
    shadows if dup, then ``width`` seeds; returns each active parameter's ``width``
    derivatives. Width 1 leaves the attribute out (the scalar requests)."""
    fwd_in, rev_in, rev_out = [], [], []
    for i, (t, a) in enumerate(params):
        fwd_in.append((f"%p{i}", t))
        rev_in.append((f"%p{i}", t))
        lanes = [(f"%d{i}_{k}", t) for k in range(width)]
        if a != "const":
            fwd_in += lanes
        if a == "dup":
            rev_in += lanes
        if a == "active":
            rev_out += [t] * width
    fwd_out = [result] * width if result else []
    if result:
        rev_in += [(f"%s{k}", result) for k in range(width)]
    fwd_acts = acts(*params_acts(params, forward=True))
    rev_acts = acts(*params_acts(params, forward=False))
    attr = f", width = {width} : i64" if width > 1 else ""

    def request(kind, fname, ins, outs, activity, ret):
        names = ["%r"] if len(outs) == 1 else [f"%r#{k}" for k in range(len(outs))]
        head = "" if not outs else "%r = " if len(outs) == 1 else f"%r:{len(outs)} = "
        types = ", ".join(outs)
        return "\n".join([
            f"func.func @{fname}({', '.join(f'{v}: {t}' for v, t in ins)}) -> ({types}) {{",
            f"  {head}enzyme.{kind} @{name}({', '.join(v for v, _ in ins)}) {{activity = {activity}, "
            f"ret_activity = {ret}{attr}}} : ({', '.join(t for _, t in ins)}) -> ({types})",
            f"  func.return {', '.join(names)} : {types}" if outs else "  func.return",
            "}",
        ])

    return "\n".join([
        request("fwddiff", f"fv{width}_{name}", fwd_in, fwd_out, fwd_acts, acts("dupnoneed") if result else "[]"),
        request("autodiff", f"dv{width}_{name}", rev_in, rev_out, rev_acts, acts("activenoneed") if result else "[]"),
    ])


def params_acts(params: list[tuple[str, str]], *, forward: bool) -> list[str]:
    """The request activities of ``params`` (see ``vector_requests``): forward mode
    gives an active float a tangent as ``dup``."""
    return ["dup" if forward and a == "active" else a for _, a in params]


def vector_drivers(name: str, n: int, width: int, t: str = "f64") -> str:
    """``vector_requests`` for ``@<name>(n x t) -> t``, every argument active."""
    return vector_requests(name, [(t, "active")] * n, t, width)


def function_text(text: str, name: str) -> str:
    """The definition of ``func.func @<name>`` in MLIR ``text`` (from its line to the
    first ``}`` at the start of a line), to reuse another test's function."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"func.func @{name}("))
    end = next(i for i in range(start, len(lines)) if lines[i] == "}")
    return "\n".join(lines[start:end + 1])
