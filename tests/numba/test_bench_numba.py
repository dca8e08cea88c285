"""The three workloads of bench/numba/ (GMM, Fisher-KPP, LSTM) at tiny sizes: zymase's
gradient of each njit objective against finite differences, entry by entry. Correctness
only: the timings are bench/numba/run.py's business. JAX is not needed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "numba"


def _load(name: str):
    """A bench module under a private name (bench/numba is not a package, and its module
    names are too generic for sys.path); `common` is loaded the same way first."""
    full = f"_zymase_bench_numba_{name}"
    if full in sys.modules:
        return sys.modules[full]
    spec = importlib.util.spec_from_file_location(full, BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[full] = mod
    spec.loader.exec_module(mod)
    return mod


common = _load("common")


@pytest.mark.parametrize("name", ["gmm", "kpp", "lstm"])
def test_workload_gradient_matches_finite_differences(name):
    import zymase

    mod = _load(name)
    args = mod.make_inputs(**mod.TINY)
    snapshot = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    mod.objective(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])  # Numba first, as a user
    grads = common.as_tuple(zymase.grad(mod.objective, mod.ARGNUMS)(*args), mod.ARGNUMS)
    for a, b in zip(args, snapshot):  # the objectives must not modify their inputs
        np.testing.assert_array_equal(a, b)

    assert len(grads) == len(mod.ARGNUMS)
    for i, g in zip(mod.ARGNUMS, grads):
        what = f"{name}: d/d{mod.ARGNAMES[mod.ARGNUMS.index(i)]}"
        if isinstance(args[i], np.ndarray):
            assert isinstance(g, np.ndarray) and g.shape == args[i].shape, what
            entries = range(args[i].size)  # tiny sizes: check every entry
        else:
            entries = [0]
        scale = float(np.max(np.abs(g)))
        assert scale > 0.0, f"{what} is identically zero"
        for k in entries:
            ad = float(np.ravel(g)[k])
            fd = common.fd_entry(mod.objective, args, i, k)
            assert abs(ad - fd) <= 1e-6 * max(abs(fd), 1e-2 * scale) + 1e-12, \
                f"{what}[{k}]: zymase {ad!r}, finite differences {fd!r}"


def test_finite_difference_check_catches_a_wrong_gradient():
    """The runner's check must flag a gradient that is slightly off."""
    mod = _load("kpp")
    args = mod.make_inputs(**mod.TINY)
    good = tuple(common.fd_entry(mod.objective, args, i, 0) for i in (0, 1))
    rows = common.fd_check(mod.objective, args, (0, 1), ("D", "r"), (good[0] * (1 + 1e-3), good[1]))
    assert [r["ok"] for r in rows] == [False, True]
