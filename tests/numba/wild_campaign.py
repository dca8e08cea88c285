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
from njit_wild import WILD
from zymase.errors import ZymaseError

#: float64 arguments that the function computes with in float32
LOW_PRECISION = {"astype_cast"}
PREOPTS = (True, False) if os.environ.get("ZYMASE_WILD_NO_PREOPT") == "1" else (True,)


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


@pytest.mark.parametrize("name", sorted(WILD))
def test_wild(name):
    f, make, kind = WILD[name]
    rng = np.random.default_rng(0)
    for _ in range(3):
        try:
            _check_point(name, f, make(rng), kind, rng)
        except ZymaseError as err:
            msg = err.format()
            assert msg.startswith("zymase: error: ") and "\n" not in msg, msg
            # in the user's terms: no mangled Numba function, no kernel name
            assert "_ZN" not in msg and "__zymase_kernel" not in msg, msg
            return
