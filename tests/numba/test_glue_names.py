"""User parameters named like the names zymase's generated Python glue uses.

Guards issue 23 item 1: ``grad`` built its wrapper with shadow names ``s0, s1, ...``
and globals ``call``, ``np``, ...; a user parameter ``s1`` was overwritten with zeros
(a wrong gradient, or out-of-bounds writes when the arrays differ in length) and one
named ``call`` was a Numba typing error.

The names tried are collected from the glue the generator actually writes (every
identifier in its source), so a new internal name is tested as soon as it exists.
"""

import ast
import functools

import numpy as np
import pytest
from numba import njit

import zymase
from zymase import Active, Duplicated, api


@njit
def sq(s1, s2):
    d = s1[0] - s2[0]
    return d * d


@njit
def two_sums(s1, s2):
    return np.sum(s1) + np.sum(s2)


def test_parameter_named_like_a_shadow_keeps_its_value():
    g = zymase.grad(sq, argnums=1)(np.array([0.3]), np.array([1.0]))
    np.testing.assert_allclose(g, [1.4], rtol=1e-12)


def test_parameter_named_like_a_shadow_with_other_lengths():
    a, b = np.linspace(0.0, 1.0, 3), np.linspace(0.0, 1.0, 1000)
    g0, g1 = zymase.grad(two_sums, argnums=(0, 1))(a, b)
    np.testing.assert_allclose(g0, np.ones(3))
    np.testing.assert_allclose(g1, np.ones(1000))
    np.testing.assert_allclose(zymase.grad(two_sums, argnums=1)(a, b), np.ones(1000))


def _baseline(a, b):
    return np.sum(a * a) * b


def _run(entry, f, args):
    """Call API entry point ``entry`` on ``f`` at ``args`` (arrays even positions,
    floats odd), differentiating every argument; returns d f / d args[k] for each k
    (the dot product with all-ones tangents for jvp/fwddiff)."""
    n = len(args)
    if entry in ("grad", "value_and_grad"):
        out = getattr(zymase, entry)(f, argnums=tuple(range(n)))(*args)
        return list(out[1] if entry == "value_and_grad" else out)
    if entry == "vjp":
        _, fn = zymase.vjp(f, *args)
        return list(fn(1.0))
    if entry == "autodiff":
        wrapped, shadows = [], []
        for a in args:
            if isinstance(a, np.ndarray):
                shadows.append(np.zeros_like(a))
                wrapped.append(Duplicated(a, shadows[-1]))
            else:
                shadows.append(None)
                wrapped.append(Active(a))
        r = zymase.autodiff(f, *wrapped)
        return [s if s is not None else d for s, d in zip(shadows, r)]
    tangents = [np.ones_like(a) if isinstance(a, np.ndarray) else 1.0 for a in args]
    if entry == "jvp":
        return zymase.jvp(f, tuple(args), tuple(tangents))[1]
    return zymase.fwddiff(f, *(Duplicated(a, t) for a, t in zip(args, tangents)))


ENTRIES = ["grad", "value_and_grad", "jvp", "vjp", "autodiff", "fwddiff"]


@functools.cache
def _glue_identifiers(entry) -> list[str]:
    """Every identifier in the Python source zymase generates for ``entry``."""
    api.glue_sources.clear()
    _run(entry, njit(_baseline), [np.array([0.5, 1.5]), 2.0])
    names = set()
    for src in api.glue_sources:
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.Name):
                names.add(node.id)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.FunctionDef):
                names.add(node.name)
    assert names, "the generator wrote no glue"
    return sorted(names - {"a", "b"})


def _function_of(params):
    """sum_k (k+1) * g(p_k) with g = sum(p*p) for arrays (even k), p*p for floats."""
    numpy = "numpy_for_test"  # not "np": a parameter may be called that
    assert numpy not in params
    terms = [f"{k + 1}.0 * {numpy}.sum({p} * {p})" if k % 2 == 0 else f"{k + 1}.0 * {p} * {p}"
             for k, p in enumerate(params)]
    src = f"def f({', '.join(params)}):\n    return " + " + ".join(terms) + "\n"
    ns = {}
    exec(compile(src, "<test function>", "exec"), {numpy: np}, ns)
    return njit(ns["f"])


# every entry with the names in one order; in the other order (a clobbered name then sits
# at other positions) for grad and jvp, one reverse-mode and one forward-mode entry (the
# suite's time)
@pytest.mark.parametrize("entry,order", [(e, "forward") for e in ENTRIES]
                         + [("grad", "reversed"), ("jvp", "reversed")])
def test_every_glue_name_as_a_parameter(entry, order):
    names = _glue_identifiers(entry)
    if order == "reversed":
        names = names[::-1]
    f = _function_of(names)
    # arrays of different lengths: a clobbered shadow writes out of bounds
    args = [np.linspace(0.1, 0.9, 2 + k) if k % 2 == 0 else 0.3 + 0.1 * k for k in range(len(names))]
    expected = [2.0 * (k + 1) * a for k, a in enumerate(args)]
    got = _run(entry, f, [a.copy() if isinstance(a, np.ndarray) else a for a in args])
    if entry in ("jvp", "fwddiff"):
        want = sum(np.sum(e) for e in expected)
        np.testing.assert_allclose(got, want, rtol=1e-12)
        return
    assert len(got) == len(names)
    for name, g, e in zip(names, got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-12, err_msg=f"parameter '{name}'")
