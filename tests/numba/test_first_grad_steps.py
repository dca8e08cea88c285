"""What a gradient called from Python does once rather than on every call, and what the
first call does no more than it needs (issue 29, the first-call target and the cost of
each call; bench/numba_first_call.py measures the time). Counts, not seconds."""

import math
import subprocess
import sys

import numba
import numpy as np
import pytest
from numba import njit

import zymase
from zymase.errors import ZymaseError


def test_the_first_grad_makes_the_engines_dataclasses_in_xdsl_imports_window():
    # issue 29: the first zymase.grad imports the engine, and its first call more of it;
    # the dataclasses they define outside zymase/ir/xdsl_import.py's window (KernelSpec,
    # NumbaIR, CFG, Timings, ... 16 of them) had their methods' source compiled in every
    # process, 12-18 ms of a first call
    code = """
import dataclasses, sys
made = []
process = dataclasses._process_class

def recording(cls, *args, **kwargs):
    window = sys.modules.get("zymase.ir.xdsl_import")
    made.append((cls.__module__, cls.__qualname__, bool(window and window._depth)))
    return process(cls, *args, **kwargs)

dataclasses._process_class = recording
import numba, numpy as np
import zymase

@numba.njit
def f(x):
    return np.sum(x * x)

assert zymase.grad(f, cache=False)(np.ones(3)).tolist() == [2.0, 2.0, 2.0]
ours = [(m, q) for m, q, _ in made if m.startswith("zymase")]
outside = [f"{m}.{q}" for m, q, inside in made if m.startswith("zymase") and not inside]
assert len(ours) > 10, ours
print("outside", outside)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "outside []", out.stdout


@njit
def _weighted_square(a, x, w):
    s = 0.0
    for i in range(x.shape[0]):
        s += w[i] * x[i] * x[i]
    return a * s


class _CountingTypeof:
    """numba.typeof, counting its calls (the API asks it by attribute)."""

    def __init__(self, monkeypatch):
        self.calls = 0
        typeof = numba.typeof

        def counted(*args, **kwargs):
            self.calls += 1
            return typeof(*args, **kwargs)

        monkeypatch.setattr(numba, "typeof", counted)


@pytest.mark.parametrize("preopt", [True, False])
def test_a_call_with_argument_types_seen_before_does_not_type_them_again(monkeypatch, preopt):
    # issue 29 (the cost of each call): every call from Python typed each argument with
    # Numba's typeof, checked the types, looked the plan up by Numba types and built the
    # result's slots: 80 of the 82 us of a call of kpp's gradient at its smallest size
    g = zymase.grad(_weighted_square, (0, 1), cache=False, preopt=preopt)
    typeof = _CountingTypeof(monkeypatch)
    rng = np.random.default_rng(5)
    for k in range(3):
        x, w = rng.uniform(0.5, 1.5, 7), rng.uniform(size=7)
        a = 0.25 + k
        ga, gx = g(a, x, w)
        assert math.isclose(ga, float(np.sum(w * x * x)), rel_tol=1e-14)
        np.testing.assert_allclose(gx, 2 * a * w * x, rtol=1e-14)
        assert typeof.calls == 3, typeof.calls  # the three arguments, typed on the first call only
    # other types are typed (and compiled) anew, and keep their own answers
    x32, w32 = x.astype(np.float32), w.astype(np.float32)
    ga32, gx32 = g(np.float32(0.5), x32, w32)
    assert typeof.calls == 6, typeof.calls
    assert gx32.dtype == np.float32
    np.testing.assert_allclose(gx32, 2 * 0.5 * w32 * x32, rtol=1e-6)
    assert math.isclose(ga32, float(np.sum(w32 * x32 * x32)), rel_tol=1e-6)
    ga, gx = g(0.5, x, w)  # the float64 signature again: nothing typed
    assert typeof.calls == 6, typeof.calls
    np.testing.assert_allclose(gx, 2 * 0.5 * w * x, rtol=1e-14)


def test_arguments_without_a_quick_type_are_typed_and_checked_on_every_call():
    g = zymase.grad(_weighted_square, 1, cache=False)
    x = np.linspace(0.5, 1.5, 8)
    strided = x[::2]  # a non-contiguous view is refused, each time it is passed
    for _ in range(2):
        with pytest.raises(ZymaseError, match="non-contiguous array"):
            g(1.0, strided, np.ones(4))
    np.testing.assert_allclose(g(1.0, np.ascontiguousarray(strided), np.ones(4)), 2 * strided, rtol=1e-14)
    # an integer weight array (constant data, a key of its own) and a Python int that
    # does not fit int64 (no quick key: Numba types it, uint64)
    np.testing.assert_allclose(g(1.0, x, np.ones(8, dtype=np.int64)), 2 * x, rtol=1e-14)
    np.testing.assert_allclose(g(2**63, x, np.ones(8)), 2.0 * 2**63 * x, rtol=1e-14)


@njit
def _scale_into(x, y):
    for i in range(x.shape[0]):
        y[i] = x[i] * y[i]
    return np.sum(y)


def test_overlapping_arguments_are_refused_when_the_types_were_seen_before():
    # the types of (x, x) are those of (x, y): the quick path still tests the arrays
    g = zymase.grad(_scale_into, 0, cache=False)
    x, y = np.linspace(1.0, 2.0, 5), np.full(5, 3.0)
    np.testing.assert_allclose(g(x, y.copy()), y, rtol=1e-15)
    with pytest.raises(ZymaseError, match="share memory"):
        g(x, x)
    with pytest.raises(ZymaseError, match="share memory"):
        g(x[1:], x[:-1])
