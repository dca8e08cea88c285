"""Python API: ``jvp``, ``vjp``, ``jacfwd``, ``jacrev`` and ``jacobian`` of njit
functions whose result is a float, a float array or a (nested) tuple of these, with
JAX's semantics and output shapes.

A float result is differentiated directly (the kernel's return slot carries the seed or
the tangent). Any other result goes through an *output writer*: a generated njit
function ``w(*params, out0, out1, ...)`` that calls the function and copies each leaf
of its result into an output array (a float into a one-element array). Forward mode
reads the result's tangent from the shadows of those arrays; reverse mode seeds their
shadows with the cotangent. That is Enzyme's idiom for vector outputs (``Duplicated``
output arrays), so the engine differentiates the function and the copy as one.

Jacobians are assembled column by column (``jacfwd``: one vector forward call per
:data:`CHUNK` input elements, Enzyme's ``enzyme_width``) or row by row (``jacrev``: one
vector reverse call per :data:`CHUNK` output elements, one forward sweep and one tape
each); the last chunk is padded with zero (co)tangents, so one kernel serves every chunk.
"""

from __future__ import annotations

import numpy as np

from zymase import api
from zymase.api import (
    _arity_error, _check_shadow, _const_activity, _copy, _direct, _exec, _grad_activity, _is_float_array,
    _is_real_number, _is_zero, _label, _Names, _np_dtype, _options, _param_names, _short, _tangent_activity,
    _typeof, _with_defaults, _with_shadow_type, _zeros,
)
from zymase.api_aliasing import check_aliased_arguments
from zymase.errors import VectorModeRefused, ZymaseError
from zymase.frontends import numba as zn

#: Basis directions per kernel call when assembling a Jacobian: the vector
#: width (fewer when the input has fewer elements). Eight doubles are two AVX-512 or
#: four AVX2 registers' worth of lanes, and a wider kernel costs compile time.
CHUNK = 8


# --------------------------------------------------------------------------------------
# Values as trees: tuples of float scalars and arrays
# --------------------------------------------------------------------------------------



def _with_zero_shadows(primals, activities) -> tuple[list, list]:
    """The kernel arguments for a reverse call: a copy of each primal, followed by a zeroed
    shadow (for the derivative to add into) where its activity has one; and those shadows
    (None where there is none)."""
    kargs, shadows = [], []
    for x, a in zip(primals, activities):
        x = _copy(x)
        kargs.append(x)
        shadow = _zeros(x) if zn.has_shadow(a) else None
        if shadow is not None:
            kargs.append(shadow)
        shadows.append(shadow)
    return kargs, shadows

def _flatten(v) -> list:
    """The leaves of a value (tuples walked, in order)."""
    if isinstance(v, tuple):
        return [leaf for x in v for leaf in _flatten(x)]
    return [v]


def _unflatten(like, leaves):
    """``like``'s tuple structure filled from the iterator ``leaves``."""
    if isinstance(like, tuple):
        return tuple(_unflatten(x, leaves) for x in like)
    return next(leaves)


def _zero_tangent(x):
    """A zero tangent for a value: zero arrays and zeros of the scalars' own type
    (integers keep their value: their slots are constant)."""
    if isinstance(x, tuple):
        return tuple(_zero_tangent(v) for v in x)
    if isinstance(x, (float, np.floating)):
        return type(x)(0.0)
    return _zeros(x)


def _basis(like, leaf: int, element: int):
    """A tangent shaped like ``like`` that is 1 at one element of one float leaf."""
    leaves = _flatten(_zero_tangent(like))
    t = leaves[leaf]
    if isinstance(t, np.ndarray):
        t = t.copy()
        t.reshape(-1)[element] = 1
    else:
        t = type(t)(1.0)
    leaves[leaf] = t
    return _unflatten(like, iter(leaves))


# --------------------------------------------------------------------------------------
# The result's type and the output writer
# --------------------------------------------------------------------------------------


def _result_type(disp, argtypes, api_name: str):
    """Numba's type for ``disp``'s result at ``argtypes``; refused unless it is a float,
    a float array (of rank 1 or more) or a tuple of these."""
    rt = zn.numba_ir(disp, tuple(argtypes)).restype
    bad = _bad_leaf(rt)
    if bad is not None:
        names = _param_names(disp)
        ints = [_label(names, i) for i, t in enumerate(argtypes) if api._has_integer_leaf(t)]
        because = f" ({', '.join(ints)} {'is' if len(ints) == 1 else 'are'} integer)" if ints else ""
        raise ZymaseError(
            f"{api_name} needs {zn.function_label(disp)} to return a float, a float array or a tuple of these, "
            f"but it returns {rt}" + (f" (the part {bad})" if str(bad) != str(rt) else "") + because,
            hint="return float64 or float32 values (x.astype(np.float64)); integer results have no derivative")
    return rt


def _bad_leaf(ty):
    """The first part of a result type that has no tangent (None: every part has)."""
    from numba.core import types

    if isinstance(ty, types.BaseTuple):
        return next((b for t in ty.types if (b := _bad_leaf(t)) is not None), None)
    if isinstance(ty, types.Float) or (_is_float_array(ty) and ty.ndim > 0):
        return None
    return ty


def _leaf_types(ty) -> list:
    from numba.core import types

    if isinstance(ty, types.BaseTuple):
        return [leaf for t in ty.types for leaf in _leaf_types(t)]
    return [ty]


_writers: dict = {}


def _writer(disp, rt):
    """The njit output writer of ``disp`` for result type ``rt`` (see the module's
    docstring), compiled once per pair."""
    import numba
    from numba.core import types

    key = (disp, rt)
    if key in _writers:
        return _writers[key]
    names = _param_names(disp)
    glue = _Names(names)
    f_n, r_n = glue.fresh("f"), glue.fresh("r")
    lines = [f"    {r_n} = {f_n}({', '.join(names)})"]
    outs = []

    def write(ty, expr):
        if isinstance(ty, types.BaseTuple):
            for i, t in enumerate(ty.types):
                write(t, f"{expr}[{i}]")
            return
        out = glue.fresh(f"out{len(outs)}")
        outs.append(out)
        if isinstance(ty, types.Float):
            lines.append(f"    {out}[0] = {expr}")
            return
        # explicit loops: `out[...] = v` compiles to broadcasting machinery ten times
        # larger, for the same copy
        v = glue.fresh("v")
        idx = [glue.fresh(f"i{d}") for d in range(ty.ndim)]
        lines.append(f"    {v} = {expr}")
        for d, i in enumerate(idx):
            lines.append("    " * (d + 1) + f"for {i} in range({out}.shape[{d}]):")
        lines.append("    " * (ty.ndim + 1) + f"{out}[{', '.join(idx)}] = {v}[{', '.join(idx)}]")

    write(rt, r_n)
    name = glue.fresh("".join(c if c.isalnum() and c.isascii() or c == "_" else "_" for c in disp.py_func.__name__))
    src = f"def {name}({', '.join(names + outs)}):\n" + "\n".join(lines) + "\n"
    fn = _exec(src, {f_n: disp}, name)
    # messages about the writer name the user's function
    fn.__qualname__ = disp.py_func.__qualname__
    w = _writers[key] = numba.njit(fn)
    return w


# --------------------------------------------------------------------------------------
# One function at one point: forward and reverse calls through its output writer
# --------------------------------------------------------------------------------------


class _Linear:
    """``f`` at ``primals`` with kernels over its output writer. Every float argument
    carries a tangent (forward) or receives a cotangent (reverse), whichever arguments
    a caller selects: one kernel per function, types and mode serves ``jvp``, ``vjp``
    and every ``argnums`` of the Jacobians."""

    def __init__(self, disp, opts, primals: tuple, api_name: str):
        self.disp, self.opts, self.api = disp, opts, api_name
        self.names = _param_names(disp)
        self.primals = primals
        self.prim = tuple(_typeof(x, _label(self.names, i)) for i, x in enumerate(primals))
        self.rt = _result_type(disp, self.prim, api_name)
        # the value at this point: its shapes size the output arrays
        self.value = disp(*(_copy(x) for x in primals))
        self.out_leaves = [np.asarray(v) for v in _flatten(self.value)]
        self.out_dtypes = [_np_dtype(t.dtype if hasattr(t, "dtype") else t) for t in _leaf_types(self.rt)]
        self.writer = _writer(disp, self.rt)

    def _buffers(self):
        # a float result goes into a one-element array
        return [np.zeros(v.shape if v.ndim else (1,), dt) for v, dt in zip(self.out_leaves, self.out_dtypes)]

    def _out_types(self, bufs):
        import numba

        return tuple(numba.typeof(b) for b in bufs)

    def _leaf_value(self, buf, like):
        return buf[0] if like.ndim == 0 else buf

    def push(self, tangents) -> tuple[list, list]:
        """(result leaves, their tangents) for one tangent per argument (None: zero)."""
        values, lanes = self.push_lanes([tangents])
        return values, lanes[0]

    def push_lanes(self, lanes: list) -> tuple[list, list]:
        """(result leaves, per lane their tangents) for ``lanes``, each one tangent per
        argument (None: zero): one vector forward call at width ``len(lanes)``, or one
        call per lane where vector mode does not cover ``f`` (:func:`_vector_kernel`)."""
        width = len(lanes)
        acts = tuple(_tangent_activity(t) for t in self.prim)
        bufs = self._buffers()
        dbufs = [self._buffers() for _ in lanes]
        kernel = _vector_kernel(self, "fwd", width, lambda: _direct(
            self.writer, self.prim + self._out_types(bufs), acts + (zn.DUP,) * len(bufs), "fwd", self.opts,
            promote=True, width=width))
        if kernel is None:
            pushed = [self.push_lanes([lane]) for lane in lanes]
            return pushed[0][0], [tangents[0] for _, tangents in pushed]
        plan, fn = kernel
        kargs = []
        for i, (x, ty, act) in enumerate(zip(self.primals, self.prim, plan.activities)):
            kargs.append(_copy(x))
            if zn.has_shadow(act):
                for tangents in lanes:
                    t = tangents[i]
                    kargs.append(_zero_tangent(x) if t is None else _with_shadow_type(_copy(t), ty))
        for o, b in enumerate(bufs):
            kargs += [b, *(d[o] for d in dbufs)]
        fn(*kargs)
        return ([self._leaf_value(b, v) for b, v in zip(bufs, self.out_leaves)],
                [[self._leaf_value(b, v) for b, v in zip(d, self.out_leaves)] for d in dbufs])

    def reverse_activities(self) -> tuple:
        acts = []
        for i, t in enumerate(self.prim):
            try:
                acts.append(_grad_activity(t, _label(self.names, i)))
            except ZymaseError:  # integers: no cotangent (None)
                acts.append(_const_activity(t))
        return tuple(acts)

    def pull(self, cotangents: list) -> tuple:
        """One cotangent per argument (None for integers) for one cotangent per result
        leaf (already checked and of the leaves' dtypes)."""
        return self.pull_lanes([cotangents])[0]

    def pull_lanes(self, lanes: list) -> list[tuple]:
        """Per lane, :meth:`pull` of its cotangents: one vector reverse call at width
        ``len(lanes)`` (one forward sweep, one tape)."""
        width = len(lanes)
        acts = self.reverse_activities()
        bufs = self._buffers()
        kernel = _vector_kernel(self, "rev", width, lambda: _direct(
            self.writer, self.prim + self._out_types(bufs), acts + (zn.DUP,) * len(bufs), "rev", self.opts,
            promote=True, width=width))
        if kernel is None:
            return [self.pull_lanes([lane])[0] for lane in lanes]
        plan, fn = kernel
        kargs, lane_shadows = [], [[] for _ in lanes]
        for x, a in zip(self.primals, plan.activities):
            kargs.append(_copy(x))
            for shadows in lane_shadows:
                shadow = _zeros(x) if zn.has_shadow(a) else None
                if shadow is not None:
                    kargs.append(shadow)
                shadows.append(shadow)
        for o, b in enumerate(bufs):
            kargs += [b, *(np.array(c[o], dtype=b.dtype).reshape(b.shape) for c in lanes)]
        r = fn(*kargs)
        # the kernel returns each active leaf's derivative once per lane, lane by lane
        per_leaf = r[1:]
        return [_picked(acts, shadows, iter(per_leaf[k::width])) for k, shadows in enumerate(lane_shadows)]


#: (writer, argument types, mode) whose vector kernel vector mode refused: their
#: Jacobians take one lane per call without compiling (and failing) again
_refused_vector_kernels: set = set()


def _vector_kernel(lin, mode: str, width: int, request):
    """``request()``: the (plan, caller) of a width-``width`` kernel that zymase chose
    (jacfwd/jacrev chunk their columns); None where vector mode refuses a construct of
    the function (:class:`VectorModeRefused`: a Numba linear-algebra helper, say), and
    the caller makes one width-1 call per lane instead, which covers everything width 1
    does. Width 1 itself, and any other error, propagate."""
    key = (lin.writer, lin.prim, mode)
    if width > 1 and key in _refused_vector_kernels:
        return None
    try:
        return request()
    except VectorModeRefused:
        if width == 1:
            raise
        _refused_vector_kernels.add(key)
        return None


def _picked(acts, shadows, outs):
    """Per argument, its derivative: the kernel's outputs (in order) for active floats,
    the shadows for arrays, None for constants."""
    def pick(a, s):
        if isinstance(a, tuple):
            return tuple(pick(ai, si) for ai, si in zip(a, s))
        if a == zn.ACTIVE:
            return next(outs)
        if a in (zn.DUP, zn.DUPNONEED):
            return s
        return None

    return tuple(pick(a, s) for a, s in zip(acts, shadows))


def _check_cotangent(ct, like, what: str):
    """``ct`` as a cotangent for a result (part) ``like``: the same tuple structure,
    arrays of the same shape, real numbers for floats. Returns its leaves."""
    if isinstance(like, tuple):
        if not isinstance(ct, tuple):
            raise ZymaseError(f"the cotangent of {what} is {type(ct).__name__}, but the result is a tuple of "
                              f"{len(like)}", hint="pass a tuple with one cotangent per part of the result")
        if len(ct) != len(like):
            raise ZymaseError(f"the cotangent of {what} is a tuple of {len(ct)}, but the result is a tuple of "
                              f"{len(like)}", hint="pass a tuple with one cotangent per part of the result")
        return [leaf for i, (c, v) in enumerate(zip(ct, like)) for leaf in _check_cotangent(c, v, f"{what}[{i}]")]
    if isinstance(like, np.ndarray) and like.ndim > 0:
        if not isinstance(ct, np.ndarray) or ct.dtype.kind not in "iuf":
            raise ZymaseError(f"the cotangent of {what} is {type(ct).__name__} {_short(ct)}, but the result is an "
                              f"array of shape {like.shape}", hint="pass a real array shaped like the result")
        if ct.shape != like.shape:
            raise ZymaseError(f"the cotangent of {what} has shape {ct.shape}, but the result has shape {like.shape}",
                              hint="pass an array shaped like the result")
        return [ct]
    if not _is_real_number(ct):
        raise ZymaseError(f"the cotangent of {what} is {type(ct).__name__} {_short(ct)}, but the result is a float",
                          hint="pass a real number")
    return [ct]


# --------------------------------------------------------------------------------------
# jvp and vjp
# --------------------------------------------------------------------------------------


def jvp(f, primals, tangents, *, preopt: bool = True, cache: bool | None = None,
        strong_zero: bool = True):
    """``(f(*primals), J @ tangents)`` in forward mode, like ``jax.jvp``: ``primals``
    and ``tangents`` are tuples (or lists) with one entry per parameter. A tangent of
    ``None`` holds an argument constant; integer arguments take ``None`` (or zero). The
    primal arrays are not modified (f runs on copies).

    ``f`` may return a float, a float array or a tuple of these; the tangent has the
    result's structure. ``jvp(zymase.grad(f), ...)`` is a Hessian-vector product,
    forward over reverse (see :mod:`zymase.api_second_order`)."""
    from zymase import api_second_order

    if api_second_order._is_plain_grad(f):
        return api_second_order.jvp_of(f, primals, tangents, "jvp")
    if api_second_order.is_transform(f):  # forward over the transform's kernel
        f, cache = api_second_order.composed(f), f.options["cache"] if cache is None else cache
    disp, opts = _options(f, preopt, cache, strong_zero)
    names = _param_names(disp)
    for what, v in (("primals", primals), ("tangents", tangents)):
        if not isinstance(v, (tuple, list)):
            raise ZymaseError(f"jvp takes '{what}' as a tuple with one entry per parameter of "
                              f"{zn.function_label(disp)}, got {type(v).__name__}",
                              hint="jvp(f, (x, a), (dx, da)); a single argument is (x,)")
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise ZymaseError(f"jvp got {len(primals)} primals but {len(tangents)} tangents",
                          hint="'tangents' holds one tangent (or None) per primal")
    given = len(primals)
    primals = _with_defaults(disp, names, primals, "'primals' holds one value per parameter")
    tangents = tangents + (None,) * (len(primals) - given)
    if len(primals) != len(names):
        raise _arity_error(disp, names, len(primals), "'primals' holds one value per parameter")
    prim, acts = [], []
    for i, (x, t) in enumerate(zip(primals, tangents)):
        what = _label(names, i)
        ty = _typeof(x, what)
        act = _const_activity(ty) if t is None else _tangent_activity(ty)
        if t is not None and not zn.has_shadow(act) and not _is_zero(t):
            raise ZymaseError(f"{what} has type {ty}, which has no tangent, but its tangent is {_short(t)}",
                              hint="integers are constant: pass None as their tangent (or pass floats)")
        if zn.has_shadow(act):
            _check_shadow(x, t, what)
        prim.append(ty)
        acts.append(act)
    prim = tuple(prim)
    from numba.core import types

    rt = _result_type(disp, prim, "jvp")
    check_aliased_arguments(disp, names, primals, "jvp")
    if not isinstance(rt, types.Float):
        lin = _Linear(disp, opts, primals, "jvp")
        values, dvalues = lin.push(tuple(None if not zn.has_shadow(a) else t for t, a in zip(tangents, acts)))
        return _unflatten(lin.value, iter(values)), _unflatten(lin.value, iter(dvalues))
    # a constant array whose pointers meet differentiated ones gets a zero tangent
    plan, fn = _direct(disp, prim, tuple(acts), "fwd", opts, promote=True)
    kargs = []
    for x, t, ty, act in zip(primals, tangents, prim, plan.activities):
        kargs.append(_copy(x))
        if zn.has_shadow(act):
            kargs.append(_zeros(x) if t is None else _with_shadow_type(_copy(t), ty))
    value, tangent = fn(*kargs)
    return value, tangent


def vjp(f, *primals, preopt: bool = True, cache: bool | None = None,
        strong_zero: bool = True, tape_limit: int | str | None = None):
    """``(f(*primals), vjp_fn)`` like ``jax.vjp``: ``vjp_fn(cotangent)`` returns one
    cotangent per primal (``None`` for integers). The cotangent has the structure of
    ``f``'s result: a float, an array of the result's shape, or a tuple of these. Works
    on copies of the primals. ``tape_limit`` as in :func:`zymase.api.grad`."""
    from zymase import api_second_order

    if api_second_order.is_transform(f):  # reverse over the transform's kernel
        f, cache = api_second_order.composed(f), f.options["cache"] if cache is None else cache
    disp, opts = _options(f, preopt, cache, strong_zero, tape_limit)
    names = _param_names(disp)
    given = len(primals)
    primals = _with_defaults(disp, names, primals, "pass one primal per parameter")
    if len(primals) != len(names):
        raise _arity_error(disp, names, len(primals), "pass one primal per parameter")
    prim = tuple(_typeof(x, _label(names, i)) for i, x in enumerate(primals))
    rt = _result_type(disp, prim, "vjp")
    check_aliased_arguments(disp, names, primals, "vjp")
    from numba.core import types

    if not isinstance(rt, types.Float):
        lin = _Linear(disp, opts, tuple(_copy(x) for x in primals), "vjp")
        result = f"{zn.function_label(disp)}'s result"

        def vjp_structured(cotangent):
            leaves = _check_cotangent(cotangent, lin.value, result)
            return lin.pull(leaves)[:given]

        return lin.value, vjp_structured
    saved = tuple(_copy(x) for x in primals)
    value = disp(*(_copy(x) for x in saved))
    acts = []
    for i, t in enumerate(prim):
        try:
            acts.append(_grad_activity(t, _label(names, i)))
        except ZymaseError:
            acts.append(_const_activity(t))
    acts = tuple(acts)

    def vjp_fn(cotangent):
        if not _is_real_number(cotangent):
            raise ZymaseError(f"the 'cotangent' of {zn.function_label(disp)}'s float result is "
                              f"{type(cotangent).__name__} {_short(cotangent)}, not a real number",
                              hint="pass a float, e.g. vjp_fn(1.0)")
        plan, fn = _direct(disp, prim, acts, "rev", opts)
        kargs, shadows = _with_zero_shadows(saved, acts)
        kargs.append(_np_dtype(rt)(cotangent))
        r = fn(*kargs)
        return _picked(acts, shadows, iter(r[1:]))[:given]

    return value, vjp_fn


# --------------------------------------------------------------------------------------
# Jacobians
# --------------------------------------------------------------------------------------


def _columns(n: int, width: int = 1):
    """Basis indices 0..n-1 in chunks of ``width`` (the last one possibly shorter)."""
    for start in range(0, n, width):
        yield range(start, min(start + width, n))


def _width(n: int) -> int:
    """The vector width of the forward calls for ``n`` basis directions."""
    return max(1, min(CHUNK, n))


def _input_leaves(args, nums):
    """(argument index, leaf index, shape) of every float leaf of the selected arguments."""
    return [(k, j, np.shape(leaf)) for k in nums for j, leaf in enumerate(_flatten(args[k]))]


def assemble_forward(args, nums, single: bool, out_like, out_dtypes, tangent_columns, width: int = 1):
    """A Jacobian built column by column, shaped as JAX's: ``out_like``'s structure
    with each leaf replaced by (for an int ``argnums``) the selected argument's
    structure of ``out.shape + in.shape`` blocks, or a tuple over ``argnums`` of those.
    ``tangent_columns(k, lanes)`` returns per lane the output tangent leaves, for
    ``lanes`` (chunks of ``width``) each one tangent per argument (basis vectors on
    argument ``k``; a padding lane of the last chunk is all None: zero)."""
    outs = [np.asarray(v) for v in _flatten(out_like)]
    blocks = {}
    for k, j, shape in _input_leaves(args, nums):
        size = int(np.prod(shape))
        mats = [np.zeros((o.size, size), dt) for o, dt in zip(outs, out_dtypes)]
        for chunk in _columns(size, width):
            lanes = []
            for e in chunk:
                tangents = [None] * len(args)
                tangents[k] = _basis(args[k], j, e)
                lanes.append(tangents)
            lanes += [[None] * len(args) for _ in range(width - len(chunk))]
            for e, cols in zip(chunk, tangent_columns(k, lanes)):
                for m, col in zip(mats, cols):
                    m[:, e] = np.asarray(col).reshape(-1)
        for o_i, (m, o) in enumerate(zip(mats, outs)):
            blocks[(o_i, k, j)] = m.reshape(o.shape + shape)
    return _jacobian_tree(args, nums, single, out_like, blocks)


def _assemble_reverse(args, nums, single: bool, lin: _Linear):
    """The Jacobian row by row: one vector reverse call per :data:`CHUNK` output
    elements; blocks shaped and arranged as :func:`assemble_forward`'s."""
    outs = lin.out_leaves
    leaves_in = _input_leaves(args, nums)
    mats = {(o_i, k, j): np.zeros((o.size, int(np.prod(shape))), dt)
            for o_i, (o, dt) in enumerate(zip(outs, lin.out_dtypes)) for k, j, shape in leaves_in}
    width = _width(max(o.size for o in outs))
    for o_i, o in enumerate(outs):
        for chunk in _columns(o.size, width):
            lanes = []
            for e in chunk:
                seeds = [np.zeros(v.shape, dt) for v, dt in zip(outs, lin.out_dtypes)]
                seeds[o_i].reshape(-1)[e] = 1
                lanes.append(seeds)
            # the last chunk padded with zero cotangents: one kernel for every chunk
            lanes += [[np.zeros(v.shape, dt) for v, dt in zip(outs, lin.out_dtypes)]
                      for _ in range(width - len(chunk))]
            for e, grads in zip(chunk, lin.pull_lanes(lanes)):
                for k, j, _ in leaves_in:
                    mats[(o_i, k, j)][e, :] = np.asarray(_flatten(grads[k])[j]).reshape(-1)
    blocks = {(o_i, k, j): mats[(o_i, k, j)].reshape(outs[o_i].shape + shape)
              for o_i in range(len(outs)) for k, j, shape in leaves_in}
    return _jacobian_tree(args, nums, single, lin.value, blocks)


def _jacobian_tree(args, nums, single, out_like, blocks):
    """Blocks keyed (output leaf, argument, argument leaf) arranged as JAX arranges a
    Jacobian (0-d blocks as NumPy scalars)."""
    counter = iter(range(len(_flatten(out_like))))

    def block(b):
        return b[()] if b.ndim == 0 else b

    def per_output(_leaf):
        o_i = next(counter)
        per_arg = [_unflatten(args[k], iter(block(blocks[(o_i, k, j)]) for j in range(len(_flatten(args[k])))))
                   for k in nums]
        return per_arg[0] if single else tuple(per_arg)

    def walk(like):
        if isinstance(like, tuple):
            return tuple(walk(x) for x in like)
        return per_output(like)

    return walk(out_like)


def _jacobian_transform(f, argnums, opts_in, api_name: str, direction: str):
    """The function ``jacfwd``/``jacrev``/``jacobian`` return."""
    from zymase import api_second_order

    if api_second_order._is_plain_grad(f):
        return api_second_order.jacobian_of(f, argnums, api_name)
    if api_second_order.is_transform(f):  # jacfwd(hessian(f)): over the transform's kernel
        opts_in = (opts_in[0], f.options["cache"] if opts_in[1] is None else opts_in[1], opts_in[2])
        f = api_second_order.composed(f)
    disp, opts = _options(f, *opts_in)
    names = _param_names(disp)
    nums = api._argnums(argnums, len(names))
    single = isinstance(argnums, (int, np.integer))

    def jacobian_fn(*args):
        args = _with_defaults(disp, names, args, "pass every positional argument")
        if len(args) != len(names):
            raise _arity_error(disp, names, len(args), "pass every positional argument")
        check_aliased_arguments(disp, names, args, api_name)
        lin = _Linear(disp, opts, tuple(_copy(a) for a in args), api_name)
        for k in nums:
            _grad_activity(lin.prim[k], _label(names, k))  # integers have no derivative
        forward = direction == "fwd"
        if direction == "auto":
            n_in = sum(int(np.prod(s)) for _, _, s in _input_leaves(args, nums))
            forward = n_in <= sum(o.size for o in lin.out_leaves)
        if forward:
            width = _width(max(int(np.prod(s)) for _, _, s in _input_leaves(args, nums)))
            return assemble_forward(args, nums, single, lin.value, lin.out_dtypes,
                                    lambda k, lanes: lin.push_lanes(lanes)[1], width)
        return _assemble_reverse(args, nums, single, lin)

    jacobian_fn.__name__ = f"{api_name}_{disp.py_func.__name__}"
    jacobian_fn.zymase_transform = f"{api_name}({zn.function_label(disp).strip(chr(39))})"
    return jacobian_fn


def jacfwd(f, argnums=0, *, preopt: bool = True, cache: bool | None = None, strong_zero: bool = True,
           sparse: bool = False):
    """The Jacobian of ``f`` with respect to argument(s) ``argnums`` by forward mode,
    like ``jax.jacfwd``: one vector forward call per :data:`CHUNK` input elements. A block has shape ``out.shape + in.shape``; tuple results
    and tuple ``argnums`` give tuples as JAX does. ``jacfwd(zymase.grad(f))`` is the
    Hessian, forward over reverse. ``sparse=True`` (a 1-D array argument, a 1-D array
    result): a ``scipy.sparse`` matrix from one forward call per colour of the pattern
    found in the IR (:mod:`zymase.api_sparse`)."""
    if sparse:
        from zymase.api_sparse import sparse_jacfwd

        return sparse_jacfwd(f, argnums, (preopt, cache, strong_zero))
    return _jacobian_transform(f, argnums, (preopt, cache, strong_zero), "jacfwd", "fwd")


def jacrev(f, argnums=0, *, preopt: bool = True, cache: bool | None = None, strong_zero: bool = True):
    """The Jacobian by reverse mode, like ``jax.jacrev``: one vector reverse call per
    :data:`CHUNK` output elements. Shapes as :func:`jacfwd`'s.
    ``jacrev(zymase.grad(f))`` is computed forward over reverse (the same matrix)."""
    return _jacobian_transform(f, argnums, (preopt, cache, strong_zero), "jacrev", "rev")


def jacobian(f, argnums=0, *, preopt: bool = True, cache: bool | None = None, strong_zero: bool = True):
    """The Jacobian by whichever of :func:`jacfwd` (one call per input element) and
    :func:`jacrev` (one per output element) makes fewer calls, forward on a tie."""
    return _jacobian_transform(f, argnums, (preopt, cache, strong_zero), "jacobian", "auto")


# njit code may call jvp (and is told why not vjp): their overloads (zymase.api_in_njit)
from zymase import api_in_njit  # noqa: E402 - it imports this module's functions

api_in_njit.register()
