"""Python API: ``zymase.laplacian(f)(x, *args)``, the trace of the Hessian of a
float-valued njit function with respect to its first argument (a 1-D float array),
computed in Taylor mode: second-order forward (forward over forward) in the engine.

Why Taylor mode and not a separate forward-Laplacian transform: the engine already
builds forward over forward for any code it differentiates (loops, memory, Numba's
allocations, libm), so every construct it handles or refuses is handled or refused the
same way here. One nested kernel carries, per float value, the value ``v``, the
tangent ``v'`` along a direction ``u`` and the second-order term ``v'' = u^T H u``;
both levels are seeded with the same ``u = e_i`` (one buffer: the inner tangent and the
outer one are the same numbers, so LLVM may merge the two first-order channels), and
an njit loop sums ``v''`` over ``i = 0..n-1``. No Hessian-vector product (no reverse
sweep, no tape) is involved. The n directions are n calls of the jet kernel; when the
engine gets a vector forward mode, the loop becomes one sweep of width n (the value
computed once, an n-vector of first derivatives and one summed second-order term per
value: the collapsed forward Laplacian).

The kernel calls ``f`` once per direction, so ``f`` must not write into its arguments:
every array argument is typed read-only, and a function that writes into one is
refused when Numba types it.
"""

from __future__ import annotations

import numpy as np

from zymase import api
from zymase.api import _check_result, _exec, _label, _np_dtype, _options, _param_names, _typeof
from zymase.api_second_order import _complete, is_transform, not_built
from zymase.errors import ZymaseError
from zymase.frontends import numba as zn


def _read_only(v):
    """``v`` with every array replaced by a read-only view (tuples walked), so Numba
    types the arrays as read-only and refuses code that writes into them."""
    if isinstance(v, np.ndarray):
        view = v.view()
        view.flags.writeable = False
        return view
    if isinstance(v, tuple):
        return tuple(_read_only(a) for a in v)
    return v


def _check_x(disp, names, x):
    """The differentiated argument: a 1-D C-contiguous float32/float64 array."""
    what = f"{_label(names, 0)} of {zn.function_label(disp)}"
    if not isinstance(x, np.ndarray):
        raise ZymaseError(f"laplacian differentiates {what}, which must be a 1-D float array, got "
                          f"{type(x).__name__} {api._short(x)}",
                          hint="for a scalar x use zymase.grad(zymase.grad(f)); pass x as np.array([...])")
    if x.ndim != 1 or x.dtype not in (np.float32, np.float64):
        raise ZymaseError(f"laplacian differentiates {what}, which must be a 1-D float32 or float64 array, got "
                          f"an array of shape {x.shape} and dtype {x.dtype}",
                          hint="pass x.ravel().astype(np.float64) and reshape it inside f")
    return np.ascontiguousarray(x)


class _Jet:
    """The forward-over-forward kernel of one function at one set of argument types,
    and the njit loop that sums its second-order terms over the unit directions."""

    def __init__(self, disp, opts, names, prim):
        rt = _check_result(disp, prim, need_float=True, api="laplacian")
        self.dtype = _np_dtype(rt)
        consts = tuple(api._const_activity(t) for t in prim[1:])
        inner = zn.KernelSpec("fwd", (zn.DUP,) + consts, preopt=opts["preopt"], strong_zero=opts["strong_zero"])
        # the inner kernel's arguments: x, its tangent, the other arguments; the outer
        # request gives x and x's inner tangent tangents of their own
        outer = (zn.DUP, zn.DUP) + consts
        plan, _ = api._direct(disp, prim, outer, "fwd", opts, inner=inner)
        others = [f"a{i}" for i in range(1, len(prim))]
        params = ", ".join(["x"] + others)
        rest = "".join(", " + a for a in others)
        # kernel arguments: x, x's outer tangent, x's inner tangent, the tangent of that,
        # the others; the kernel returns (value, tangent, outer tangents of both)
        src = (f"def laplacian_loop({params}):\n"
               "    n = x.shape[0]\n"
               "    u = np.zeros(n, x.dtype)\n"
               "    zero = np.zeros(n, x.dtype)\n"
               "    total = 0.0\n"
               "    for i in range(n):\n"
               "        u[i] = 1.0\n"
               f"        total += call((x, u, u, zero{rest}))[3]\n"
               "        u[i] = 0.0\n"
               "    return total\n")
        import numba

        # called from Python only: no C-callable wrapper to build
        self.loop = numba.njit(no_cfunc_wrapper=True)(_exec(src, {"call": plan.call, "np": np}, "laplacian_loop"))

    def __call__(self, args):
        return self.dtype(self.loop(*args))


_jets: dict = {}


def laplacian(f, *, preopt: bool = True, cache: bool | None = None, strong_zero: bool = True):
    """``laplacian(f)(x, *args)``: the trace of the Hessian of a float-valued njit
    function ``f`` with respect to its first argument ``x`` (a 1-D float32/float64
    array), a float of ``f``'s result type. Taylor mode in the engine (forward over
    forward, one jet per unit direction, summed in njit code): no Hessian is formed and
    no reverse sweep is run. ``f`` must not write into its arguments."""
    if is_transform(f):
        raise not_built(f, "laplacian")
    disp, opts = _options(f, preopt, cache, strong_zero)
    names = _param_names(disp)
    if not names:
        raise ZymaseError(f"laplacian differentiates the first argument of {zn.function_label(disp)}, which takes "
                          "none", hint="laplacian(f)(x, *args) with x a 1-D float array")

    def laplacian_fn(*args):
        args = _complete(disp, names, args)
        x = _check_x(disp, names, args[0])
        args = _read_only((x,) + tuple(args[1:]))
        prim = tuple(_typeof(v, _label(names, i)) for i, v in enumerate(args))
        key = (disp, prim, tuple(sorted(opts.items())))
        jet = _jets.get(key)
        if jet is None:
            try:
                jet = _jets[key] = _Jet(disp, opts, names, prim)
            except ZymaseError as err:
                raise _written_argument(err, disp, args) from None
        return jet(args)

    return laplacian_fn


def _written_argument(err: ZymaseError, disp, args) -> ZymaseError:
    """A typing error that only the read-only argument types cause (Numba finds no
    ``setitem`` for a read-only array), said in laplacian's terms; other errors as
    they are."""
    if not err.message.startswith("Numba cannot compile"):
        return err
    writable = tuple(_typeof(v, "argument") for v in _writable(args))
    try:
        zn.numba_ir(disp, writable)
    except ZymaseError:
        return err  # not about the argument types
    return ZymaseError(f"laplacian calls {zn.function_label(disp)} once per direction, so it must not write into "
                       "its arguments, but it does (Numba refuses the write into a read-only array)",
                       construct="array store into an argument", function=zn.function_label(disp).strip("'"),
                       location=err.location, hint="write into a copy (y = x.copy()) or a new array inside the function")


def _writable(v):
    if isinstance(v, np.ndarray):
        return v.copy()
    if isinstance(v, tuple):
        return tuple(_writable(a) for a in v)
    return v
