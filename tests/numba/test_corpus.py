"""Every corpus function in reverse mode (with pre-AD optimization, and without it for
every third function), every other one in forward mode, against central finite
differences (all of them both ways with ZYMASE_TEST_ALL_LEVELS=1)."""

import os

import numpy as np
import pytest

import zymase
from njit_corpus import CORPUS
from njit_fd import assert_close, copy_args, differentiable, fd_directional, fd_grad


def _rtol(args):
    f32 = any(getattr(a, "dtype", None) == np.float32 or isinstance(a, np.float32) for a in args)
    return 2e-2 if f32 else 1e-6


# every function with pre-AD optimization, every third one also without (all of them
# without with ZYMASE_TEST_ALL_LEVELS=1): the no-preopt builds are the suite's slowest
_NAMES = sorted(CORPUS)
_ALL = os.environ.get("ZYMASE_TEST_ALL_LEVELS") == "1"
GRAD_CASES = [(n, True) for n in _NAMES] + [(n, False) for i, n in enumerate(_NAMES) if _ALL or i % 3 == 0]


@pytest.mark.parametrize(("name", "preopt"), GRAD_CASES,
                         ids=[f"{n}-{'preopt' if p else 'no-preopt'}" for n, p in GRAD_CASES])
def test_grad_matches_fd(name, preopt):
    f, make = CORPUS[name]
    args = make()
    nums = tuple(i for i, a in enumerate(args) if differentiable(a))
    g = zymase.grad(f, argnums=nums, preopt=preopt)
    got = g(*copy_args(args))
    assert isinstance(got, tuple) and len(got) == len(nums)
    for i, gi in zip(nums, got):
        want = fd_grad(f.py_func, args, i)
        assert_close(gi, want, _rtol(args), what=f"{name} d/d arg{i}")
        if isinstance(args[i], np.ndarray):
            assert gi.shape == args[i].shape and gi.dtype == args[i].dtype


# forward mode on every other function (all of them with ZYMASE_TEST_ALL_LEVELS=1): reverse
# mode above covers every one (the suite's time)
@pytest.mark.parametrize("name", [n for i, n in enumerate(_NAMES) if _ALL or i % 2 == 1])
def test_jvp_matches_fd(name):
    f, make = CORPUS[name]
    args = make()
    rng = np.random.default_rng(7)
    tangents = []
    for a in args:
        if not differentiable(a):
            tangents.append(None)
        elif isinstance(a, np.ndarray):
            tangents.append(rng.standard_normal(a.shape).astype(a.dtype))
        elif isinstance(a, tuple):
            tangents.append(tuple(float(v) for v in rng.standard_normal(len(a))))
        else:
            tangents.append(type(a)(rng.standard_normal()))
    value, tangent = zymase.jvp(f, copy_args(args), tuple(tangents))
    assert_close(value, f.py_func(*copy_args(args)), 1e-6 if _rtol(args) < 1e-3 else 1e-4)
    want = fd_directional(f.py_func, args, tangents)
    assert_close(tangent, want, _rtol(args), what=f"{name} jvp")
