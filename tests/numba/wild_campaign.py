"""njit_wild.py's functions against central finite differences, run by name (not in the
default suite: over a hundred Numba compiles and kernels, about 10-20 s of CPU each):

    pytest -q -n 2 tests/numba/wild_campaign.py [-k NAME]
    ZYMASE_WILD_NO_PREOPT=1 ...   (also grad with preopt=False: twice the time)

Each function at three random points: ``grad`` of every float argument (``vjp`` with a
random cotangent for array and tuple results) against central differences of the
function (of the cotangent's dot product with it), and ``jvp`` along a random direction
against the directional difference. Float leaves are scalars, float arrays, tuples of
these and the float fields of structured arrays. A refusal (``ZymaseError``) passes when
it is one ``zymase: error:`` line; anything else fails.
"""

import os

import numpy as np
import pytest

import zymase
from njit_wild import WILD, WILD26
from zymase.errors import ZymaseError

#: float64 arguments that the function computes with in float32
LOW_PRECISION = {"astype_cast"}
PREOPTS = (True, False) if os.environ.get("ZYMASE_WILD_NO_PREOPT") == "1" else (True,)
#: names also checked with hessian, hvp, jacfwd and jacrev (every name with
#: ZYMASE_WILD_ALL_TRANSFORMS=1)
ALL_TRANSFORMS = set(WILD) if os.environ.get("ZYMASE_WILD_ALL_TRANSFORMS") == "1" else set(WILD26)


def _leaves(v) -> list[float]:
    if isinstance(v, tuple):
        return [e for x in v for e in _leaves(x)]
    if isinstance(v, np.ndarray):
        if v.dtype.names:
            return [float(e) for n in v.dtype.names if v.dtype[n].kind == "f" for e in v[n].ravel()]
        return [float(e) for e in v.ravel()] if v.dtype.kind == "f" else []
    return [float(v)] if isinstance(v, (float, np.floating)) else []


def _with_leaves(v, vals, k=0):
    """(v with its float leaves replaced by vals[k:], the next k); arrays keep their order."""
    if isinstance(v, tuple):
        out = []
        for x in v:
            y, k = _with_leaves(x, vals, k)
            out.append(y)
        return tuple(out), k
    if isinstance(v, np.ndarray):
        w = v.copy(order="A")
        if v.dtype.names:
            for n in v.dtype.names:
                if v.dtype[n].kind == "f":
                    w[n] = np.reshape(vals[k:k + v[n].size], v[n].shape)
                    k += v[n].size
            return w, k
        if v.dtype.kind == "f":
            w[...] = np.reshape(vals[k:k + v.size], v.shape)
            return w, k + v.size
        return w, k
    if isinstance(v, (float, np.floating)):
        return type(v)(vals[k]), k + 1
    return v, k


def _copy(args):
    return tuple(_with_leaves(a, _leaves(a))[0] for a in args)


def _is_f32(v) -> bool:
    return any(_is_f32(x) for x in v) if isinstance(v, tuple) else getattr(v, "dtype", None) == np.float32


def _fd_grads(g, args, nums, h):
    out = []
    for i in nums:
        base = _leaves(args[i])
        gi = []
        for k in range(len(base)):
            step = h * max(1.0, abs(base[k]))
            vals = []
            for s in (step, -step):
                moved = list(base)
                moved[k] += s
                a = list(_copy(args))
                a[i] = _with_leaves(args[i], moved)[0]
                vals.append(g(*a))
            gi.append((vals[0] - vals[1]) / (2 * step))
        out.append(np.array(gi))
    return out


def _close(got, want, rtol, what):
    got, want = np.asarray(got, float), np.asarray(want, float)
    scale = max(1.0, float(np.max(np.abs(want))) if want.size else 1.0)
    assert got.shape == want.shape and np.all(np.abs(got - want) <= rtol * scale), \
        f"{what}: got {got.tolist()} want {want.tolist()}"


def _check_point(name, f, args, kind, rng):
    nums = tuple(i for i, a in enumerate(args) if _leaves(a))
    low = _is_f32(args) or name in LOW_PRECISION
    rtol = 3e-2 if low else 2e-5
    h = 1e-2 if _is_f32(args) else 1e-3 if low else 1e-6
    value = f(*_copy(args))
    cot = None if kind == "float" else rng.standard_normal(len(_leaves(value if isinstance(value, tuple) else (value,))))

    def g(*a):
        r = f(*a)
        return float(r) if cot is None else float(np.dot(_leaves(r if isinstance(r, tuple) else (r,)), cot))

    want = _fd_grads(g, args, nums, h)
    if cot is None:
        for preopt in PREOPTS:
            got = zymase.grad(f, argnums=nums, preopt=preopt)(*_copy(args))
            for j, i in enumerate(nums):
                _close(_leaves(got[j]) if isinstance(got[j], (tuple, np.ndarray)) else [float(got[j])], want[j],
                       rtol, f"grad (preopt={preopt}) of argument {i}")
    else:
        _, pull = zymase.vjp(f, *_copy(args))
        ct = pull(_with_leaves(value, list(cot))[0])
        for j, i in enumerate(nums):
            _close(_leaves(ct[i]) if isinstance(ct[i], (tuple, np.ndarray)) else [float(ct[i])], want[j], rtol,
                   f"vjp of argument {i}")
    tangents, directions = [], []
    for a in args:
        n = len(_leaves(a))
        t = list(rng.standard_normal(n)) if n else None
        tangents.append(None if t is None else _with_leaves(a, t)[0])
        if t is not None:
            directions.append(np.array(t))
    _, d = zymase.jvp(f, _copy(args), tuple(tangents))
    dflat = _leaves(d if isinstance(d, tuple) else (d,))
    got = dflat[0] if cot is None else float(np.dot(dflat, cot))
    _close([got], [sum(float(np.dot(w, t)) for w, t in zip(want, directions))], 5 * rtol, "jvp")


def _check_second_order_and_jacobians(f, args, kind, rng, rtol, h):
    """hessian and hvp (float results) or jacfwd and jacrev (array and tuple results)
    with respect to the first float or float-array argument, against central
    differences of grad (checked by _check_point) or of the function."""
    k = next((i for i, a in enumerate(args) if isinstance(a, (float, np.floating))
              or (isinstance(a, np.ndarray) and a.dtype.kind == "f" and not a.dtype.names)), None)
    if k is None:
        return
    base = np.atleast_1d(np.asarray(args[k], dtype=float)).ravel()
    n = base.size

    def moved(j, s):
        a = list(_copy(args))
        a[k] = _with_leaves(args[k], list(base + s * np.eye(n)[j]))[0]
        return a

    def fd_columns(fn):
        cols = []
        for j in range(n):
            step = h * max(1.0, abs(base[j]))
            cols.append((np.asarray(fn(*moved(j, step)), float).ravel()
                         - np.asarray(fn(*moved(j, -step)), float).ravel()) / (2 * step))
        return np.array(cols).T  # (outputs, inputs)

    if kind == "float":
        g = zymase.grad(f, argnums=k)
        want = fd_columns(lambda *a: g(*a))
        got = np.asarray(zymase.hessian(f, argnums=k)(*_copy(args)), float).reshape(n, n)
        _close(got.ravel(), want.ravel(), 10 * rtol, "hessian")
        v = rng.standard_normal(n)
        vk = v.reshape(np.shape(args[k])) if isinstance(args[k], np.ndarray) else float(v[0])
        got = np.asarray(zymase.hvp(f, argnums=k)(*_copy(args), vk), float).ravel()
        _close(got, want @ v, 10 * rtol, "hvp")
        return
    want = fd_columns(lambda *a: np.array(_leaves(f(*a) if isinstance(f(*a), tuple) else (f(*a),))))
    for jac in (zymase.jacfwd, zymase.jacrev):
        blocks = jac(f, argnums=k)(*_copy(args))
        blocks = blocks if isinstance(blocks, tuple) else (blocks,)
        got = np.concatenate([np.asarray(b, float).reshape(-1, n) for b in blocks])
        _close(got.ravel(), want.ravel(), 10 * rtol, jac.__name__)


@pytest.mark.parametrize("name", sorted(WILD))
def test_wild(name):
    f, make, kind = WILD[name]
    rng = np.random.default_rng(0)
    for _ in range(3):
        try:
            args = make(rng)
            _check_point(name, f, args, kind, rng)
            if name in ALL_TRANSFORMS:
                low = _is_f32(args) or name in LOW_PRECISION
                _check_second_order_and_jacobians(f, args, kind, rng, 3e-2 if low else 2e-5,
                                                  1e-2 if _is_f32(args) else 1e-3 if low else 1e-5)
        except ZymaseError as err:
            msg = err.format()
            assert msg.startswith("zymase: error: ") and "\n" not in msg, msg
            # in the user's terms: no mangled Numba function, no kernel name
            assert "_ZN" not in msg and "__zymase_kernel" not in msg, msg
            return
