"""Python API: ``zymase.laplacian(f)(x, ...)``, the trace of the Hessian of a
float-valued njit function with respect to its first argument (a 1-D float array).

Computed as the collapsed forward Laplacian: one Laplacian-mode kernel
(autodiff/laplacian.py) carries, per float value, the value once, its gradient along
N unit directions (N lanes of vector forward mode) and one summed second-order term,
the Laplacian lane. x of size d is seeded min(d, CHUNK) directions per call, so up to
d = CHUNK one call computes the Laplacian and the primal runs once; a matrix times a
vector (Numba's gemv) takes every lane at once, one gemm (rules/numba_linalg.py).

Where Laplacian mode refuses the function (what vector forward mode does not handle,
such as scf or BLAS calls other than gemv on active memory, or a product whose second-order
term it does not build), Taylor mode is kept: forward over forward, one jet per unit
direction (``v''= u^T H u``, both levels seeded with the same ``u = e_i``), summed by an
njit loop. Neither forms the Hessian or runs a reverse sweep. ``chosen`` records which
path a (function, argument types) took and why.

Several calls (Taylor: one per direction; chunks beyond CHUNK) read the same arguments,
so ``f`` must not write into them: every array argument is typed read-only, and a
function that writes into one is refused when Numba types it.
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


#: the most directions one Laplacian-mode call takes: x of size d is seeded
#: min(d, CHUNK) unit directions per call (one kernel per such width), so up to
#: d = CHUNK the primal runs once; beyond, ceil(d / CHUNK) calls each repeat it
CHUNK = 64


class _Collapsed:
    """The collapsed forward Laplacian (autodiff/laplacian.py): per chunk width N a
    Laplacian-mode kernel with N gradient lanes and the Laplacian lane, and the njit
    loop that seeds the lanes with N unit directions per call and sums the Laplacian
    lane over the chunks of x."""

    def __init__(self, disp, opts, prim, width: int):
        rt = _check_result(disp, prim, need_float=True, api="laplacian")
        self.dtype = _np_dtype(rt)
        self.disp, self.opts, self.prim = disp, opts, prim
        self.loops: dict = {}
        self.entries: dict = {}  # chunk width -> the loop's compiled entry point (_entry_point)
        self._loop(width)  # compiled now: a refusal is known before the first result

    def _loop(self, width: int):
        consts = tuple(api._const_activity(t) for t in self.prim[1:])
        plan, _ = api._direct(self.disp, self.prim, (zn.DUP,) + consts, "fwd", self.opts, width=width + 1,
                              laplacian=True)
        others = [f"a{i}" for i in range(1, len(self.prim))]
        params = ", ".join(["x"] + others)
        rest = "".join(", " + a for a in others)
        lanes = [f"s{k}" for k in range(width + 1)]  # s{width}: the Laplacian lane's seed, zero
        # one allocation for every lane's seed (rows of one matrix: views, not arrays)
        alloc = f"    seeds = np.zeros(({width + 1}, n), x.dtype)\n" + "".join(
            f"    {s} = seeds[{k}]\n" for k, s in enumerate(lanes))
        seed = "".join(f"        if c + {k} < n:\n            s{k}[c + {k}] = v\n" for k in range(width))
        # the kernel returns (value, Laplacian lane)
        src = (f"def laplacian_chunks({params}):\n"
               "    n = x.shape[0]\n"
               + alloc +
               "    total = 0.0\n"
               f"    for c in range(0, n, {width}):\n"
               "        v = 1.0\n" + seed +
               f"        total += call((x, {', '.join(lanes)}{rest}))[1]\n"
               "        v = 0.0\n" + seed +
               "    return total\n")
        import numba

        loop = self.loops[width] = numba.njit(_exec(src, {"call": plan.call, "np": np}, "laplacian_chunks"))
        return loop

    def __call__(self, args):
        width = _chunk_width(args[0].shape[0])
        loop = self.loops.get(width)
        if loop is None:
            loop = self._loop(width)
        out = self.dtype(loop(*args))
        self.entries[width] = _entry_point(loop)
        return out

    def quick(self, args):
        """A call whose argument types were seen (``_quick_key``): the arrays as given,
        through the loop's compiled entry point."""
        entry = self.entries.get(_chunk_width(args[0].shape[0]))
        if entry is None:
            return self(_read_only(args))
        return self.dtype(entry(*args))


def _entry_point(loop):
    """The compiled entry point of an njit function typed once (for the read-only
    argument types ``_read_only`` gives), called without Numba's dispatcher, which
    would need fresh read-only views of the arguments at every call and types read-only
    arrays on a slower path than writable ones: 5-6 us of a 20 us call (d = 4, width
    256, CPU time). The entry point unboxes arrays without looking at
    their flags, so the caller's own arrays are passed as they are: ``_quick_key`` has
    checked that they have the types the loop was compiled for (read-only aside: the
    code, compiled for read-only arrays, does not write into them). None (the dispatcher
    then) if the loop has more than one signature."""
    sigs = loop.signatures
    return loop.overloads[sigs[0]].entry_point if len(sigs) == 1 else None


def _chunk_width(d: int) -> int:
    return max(1, min(d, CHUNK))


class _Jet:
    """Taylor mode, the path kept for what Laplacian mode refuses: the
    forward-over-forward kernel of one function at one set of argument types, and the
    njit loop that sums its second-order terms over the unit directions."""

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
        self.entry = None

    def __call__(self, args):
        out = self.dtype(self.loop(*args))
        self.entry = _entry_point(self.loop)
        return out

    def quick(self, args):
        """As :meth:`_Collapsed.quick`."""
        if self.entry is None:
            return self(_read_only(args))
        return self.dtype(self.entry(*args))


_jets: dict = {}


def laplacian(f, *, preopt: bool = True, cache: bool | None = None, strong_zero: bool = True):
    """``laplacian(f)(x, *args)``: the trace of the Hessian of a float-valued njit
    function ``f`` with respect to its first argument ``x`` (a 1-D float32/float64
    array), a float of ``f``'s result type. The collapsed forward Laplacian in the
    engine (value, gradient lanes and one Laplacian lane per value; Taylor mode where
    it refuses the function): no Hessian is formed and no reverse sweep is run. ``f``
    must not write into its arguments."""
    if is_transform(f):
        raise not_built(f, "laplacian")
    disp, opts = _options(f, preopt, cache, strong_zero)
    names = _param_names(disp)
    if not names:
        raise ZymaseError(f"laplacian differentiates the first argument of {zn.function_label(disp)}, which takes "
                          "none", hint="laplacian(f)(x, *args) with x a 1-D float array")

    seen: dict = {}  # _quick_key of the arguments -> the jet checked and built for them

    def laplacian_fn(*args):
        quick = _quick_key(args, len(names))
        jet = seen.get(quick) if quick is not None else None
        if jet is not None:
            return jet.quick(args)
        args = _complete(disp, names, args)
        x = _check_x(disp, names, args[0])
        args = _read_only((x,) + tuple(args[1:]))
        prim = tuple(_typeof(v, _label(names, i)) for i, v in enumerate(args))
        key = (disp, prim, tuple(sorted(opts.items())))
        jet = _jets.get(key)
        if jet is None:
            jet = _jets[key] = _build(disp, opts, names, prim, args)
        if quick is not None:
            seen[quick] = jet
        return jet(args)

    return laplacian_fn


_SCALARS = (float, int, bool, np.float64, np.float32, np.int64, np.int32)
# NumPy's flag bits (ndarray.flags.num) that decide an array's Numba type: its layout
# and alignment (not OWNDATA or WRITEABLE: the entry point takes writable arrays too)
_C_CONTIGUOUS, _F_CONTIGUOUS, _ALIGNED = 0x1, 0x2, 0x100
_LAYOUT_FLAGS = _C_CONTIGUOUS | _F_CONTIGUOUS | _ALIGNED


def _quick_key(args: tuple, n_params: int):
    """A key that determines the Numba types of ``args`` (so a call whose key was seen
    needs no checks and no typing: ``numba.typeof`` costs more than a small MLP's
    Laplacian), or None where it does not: defaults to fill in, tuples, other objects,
    and an ``x`` that ``_check_x`` would copy (not C-contiguous)."""
    if len(args) != n_params or not args:
        return None
    key = []
    for i, a in enumerate(args):
        t = type(a)
        if t is np.ndarray:
            # the dtype itself (byte order included) and the flags as one integer: a
            # third of the time of reading them one by one (0.14 against 0.42 us an array)
            flags = a.flags.num & _LAYOUT_FLAGS
            if i == 0 and not flags & _C_CONTIGUOUS:
                return None
            key.append((a.dtype, a.ndim, flags))
        elif t in _SCALARS:
            if t is int and not -(2 ** 63) <= a < 2 ** 63:
                return None  # Numba types it uint64 or refuses it: not int's usual int64
            key.append(t)
        else:
            return None
    return tuple(key)


#: what the last compilation chose, per (function, argument types): "collapsed" or
#: "taylor" with the refusal that sent it there (for tests and the bench)
chosen: dict = {}


def _build(disp, opts, names, prim, args):
    """The collapsed forward Laplacian; where Laplacian mode refuses the function (a
    construct vector mode does not handle: BLAS memory calls with shadows, scf, a
    registered derivative, an op without a second-order term), Taylor mode, which
    handles what forward over forward handles."""
    try:
        out = _Collapsed(disp, opts, prim, _chunk_width(args[0].shape[0]))
        chosen[(disp, prim)] = ("collapsed", None)
        return out
    except ZymaseError as collapsed_err:
        try:
            out = _Jet(disp, opts, names, prim)
        except ZymaseError as err:
            raise _written_argument(err, disp, args) from None
        chosen[(disp, prim)] = ("taylor", collapsed_err)
        return out


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
