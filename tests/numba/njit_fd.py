"""Finite differences over the float leaves of njit arguments (scalars, arrays, tuples)."""

import numpy as np


def copy_args(args):
    return tuple(_copy(a) for a in args)


def _copy(a):
    if isinstance(a, np.ndarray):
        return a.copy()
    if isinstance(a, tuple):
        return tuple(_copy(v) for v in a)
    return a


def is_float_leaf(v) -> bool:
    return isinstance(v, (float, np.floating)) or (isinstance(v, np.ndarray) and v.dtype.kind == "f")


def differentiable(v) -> bool:
    if isinstance(v, tuple):
        return all(is_float_leaf(x) for x in v)
    return is_float_leaf(v)


def _perturb(v, k, h):
    """``v`` with its k-th float entry moved by h (v: float, array or tuple of floats)."""
    if isinstance(v, np.ndarray):
        w = v.copy()
        w.flat[k] += h
        return w
    if isinstance(v, tuple):
        return tuple(x + h if i == k else x for i, x in enumerate(v))
    return type(v)(v + h)


def _size(v):
    return v.size if isinstance(v, np.ndarray) else len(v) if isinstance(v, tuple) else 1


def _eps(v):
    dt = v.dtype if isinstance(v, np.ndarray) else np.asarray(v).dtype
    return 1e-2 if dt == np.float32 else 1e-5


def fd_grad(f, args, i):
    """Central differences of f with respect to argument i, shaped like it."""
    v = args[i]
    h = _eps(v)
    out = np.zeros(_size(v))
    for k in range(_size(v)):
        a = list(copy_args(args))
        a[i] = _perturb(v, k, h)
        fp = float(f(*a))
        a = list(copy_args(args))
        a[i] = _perturb(v, k, -h)
        fm = float(f(*a))
        out[k] = (fp - fm) / (2 * h)
    if isinstance(v, np.ndarray):
        return out.reshape(v.shape)
    if isinstance(v, tuple):
        return tuple(out)
    return out[0]


def fd_directional(f, args, tangents):
    """Central difference of f along ``tangents`` (None for constant arguments)."""
    h = min(_eps(a) for a, t in zip(args, tangents) if t is not None)

    def moved(s):
        out = []
        for a, t in zip(copy_args(args), tangents):
            if t is None:
                out.append(a)
            elif isinstance(a, tuple):
                out.append(tuple(type(x)(x + s * dx) for x, dx in zip(a, t)))
            elif isinstance(a, np.ndarray):
                out.append((a + s * t).astype(a.dtype))
            else:
                out.append(type(a)(a + s * t))
        return out

    return (float(f(*moved(h))) - float(f(*moved(-h)))) / (2 * h)


def assert_close(got, want, rtol, atol=1e-9, what=""):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), (what, got, want)
        for g, w in zip(got, want):
            assert_close(g, w, rtol, atol, what)
        return
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64),
                               rtol=rtol, atol=atol, err_msg=what)
