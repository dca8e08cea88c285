"""Python API: second and higher derivatives of njit functions: ``hessian``, ``hvp``,
and every composition of transforms (``grad(grad(f))``, ``vjp(grad(f))``,
``jacfwd(hessian(f))``, ``grad(grad(grad(f)))`` ...).

``hessian(f)`` and ``hvp(f)`` use one nested kernel per (function, argument types)
(``KernelSpec.inner`` in :mod:`zymase.frontends.numba`): a forward-mode request over the
function's reverse kernel, whose source still calls ``__enzyme_autodiff``; the C path's
marker rounds differentiate the inner request first and then the outer one over the
gradient code. One call takes a tangent for every float argument and returns the
gradient and its tangent (a Hessian-vector product); at width N (vector forward mode
over the reverse kernel: one reverse sweep, N tangent lanes) N tangents, so a Hessian is
one call per ``CHUNK`` input elements. ``jvp(grad(f))`` and ``jacfwd/jacrev/jacobian(grad(f))`` use the same kernel.

Every other composition is built on the path njit code that calls a transform takes:
``grad``, ``value_and_grad``, ``hessian`` and ``hvp`` objects are callable from njit code
(:class:`SecondOrder` here, ``api.Transformed``), so a transform ``T`` of another one
``g`` is ``T`` of :func:`composed` ``(g)``, a generated njit function that calls ``g``.
Its kernel links ``g``'s kernel source (``frontends/numba.with_called_kernels``) and the
marker rounds differentiate inner requests first: ``grad(grad(f))`` and
``vjp(grad(f))`` are reverse over reverse, ``grad(grad(grad(f)))`` reverse over reverse
over reverse, ``jacfwd(hessian(f))`` and ``jvp(hvp(f))`` forward over the njit Hessian
(forward over forward over reverse), at any depth.
"""

from __future__ import annotations

import numpy as np

from zymase import api
from zymase.api import (
    _arity_error, _copy, _direct, _grad_activity, _is_real_number, _label, _np_dtype, _options, _param_names,
    _short, _tangent_activity, _typeof, _with_defaults, _with_shadow_type, _zeros,
)
from zymase.api_aliasing import check_aliased_arguments, njit_overlap_checks
from zymase.api_outputs import CHUNK, _flatten, _input_leaves, _picked, _width, _zero_tangent, assemble_forward
from zymase.errors import ZymaseError
from zymase.frontends import numba as zn


def is_transform(f) -> bool:
    """``f`` is a transform njit code can call (``grad``, ``value_and_grad``,
    ``hessian``, ``hvp``, and compositions of these)."""
    return isinstance(f, (api.Transformed, SecondOrder))


def _is_plain_grad(f) -> bool:
    """``grad(f)`` of an njit function: its second derivatives have a forward-over-
    reverse kernel of their own (jvp, the Jacobians)."""
    return (isinstance(f, api.Transformed) and not f.with_value
            and not hasattr(f.disp.py_func, "zymase_composes"))


def label(f) -> str:
    """How messages name a transform: ``grad(f)``, ``hessian(grad(f), 1)``."""
    inner = zn.function_label(f.disp).strip("'")
    nums = f.argnums[0] if f.single else f.argnums
    return f"{f.api}({inner})" if f.single and nums == 0 else f"{f.api}({inner}, argnums={nums})"


def not_built(f, api_name: str) -> ZymaseError:
    """The error for a composition zymase does not build (the Laplacian of a
    transform: Laplacian mode differentiates njit functions only)."""
    return ZymaseError(f"{api_name} of {label(f)} would be a third derivative, which zymase does not build: "
                       f"zymase.{api_name} takes an njit function, and {label(f)} is a derivative zymase made",
                       hint=f"np.trace(zymase.hessian(...)) of it gives the same number; or take the {api_name} "
                       "of the njit function itself")


#: (kind, api, function, argnums, options) -> the njit function that calls such a transform
_composed: dict = {}


def composed(f):
    """An njit function with ``f``'s parameters (and defaults) that returns ``f(...)``:
    what a transform of the transform ``f`` differentiates. One per kind of transform,
    function, argnums and options, so equal compositions share their kernels."""
    import numba

    key = (type(f).__name__, f.api, f.disp, f.argnums, f.single, tuple(sorted(f.options.items())))
    w = _composed.get(key)
    if w is None:
        glue = api._Names(f.params)
        inner_n = glue.fresh("transform")
        env = {inner_n: f}
        sig = list(f.params)
        for k, value in enumerate(f.defaults):
            i = len(sig) - len(f.defaults) + k
            env[glue.fresh(f"default_{f.params[i]}")] = value
            sig[i] += f"={list(env)[-1]}"
        name = glue.fresh(f"{f.api}_" + "".join(c if c.isalnum() and c.isascii() or c == "_" else "_"
                                                for c in f.disp.py_func.__name__))
        fn = api._exec(f"def {name}({', '.join(sig)}):\n    return {inner_n}({', '.join(f.params)})\n", env, name)
        fn.__qualname__ = label(f)  # messages about it name the composition
        fn.zymase_composes = f
        w = _composed[key] = numba.njit(fn)
    return w


def grad_of(f, argnums, with_value: bool, preopt, cache, strong_zero, tape_limit):
    """``grad``/``value_and_grad`` of a transform: reverse mode over its kernel (the
    disk cache follows ``f``'s unless asked)."""
    cache = f.options["cache"] if cache is None else cache
    disp, opts = _options(composed(f), preopt, cache, strong_zero, tape_limit)
    return api.Transformed(disp, argnums, with_value=with_value, options=opts)


# --------------------------------------------------------------------------------------
# The nested kernel
# --------------------------------------------------------------------------------------


def _shadow_tangent_activity(act):
    """Forward-mode activity of a gradient shadow: tangents where the reverse kernel
    writes (its duplicated arrays), constant elsewhere."""
    if isinstance(act, tuple):
        return tuple(_shadow_tangent_activity(a) for a in act)
    return zn.DUP if act in (zn.DUP, zn.DUPNONEED) else zn.CONST


class _Nested:
    """The forward-over-reverse kernel of one function at one set of argument types."""

    def __init__(self, disp, opts, names, prim, api_name: str):
        self.disp, self.prim, self.opts = disp, prim, opts
        self.rt = api._check_result(disp, prim, need_float=True, api=api_name)
        acts = []
        for i, t in enumerate(prim):
            try:
                acts.append(_grad_activity(t, _label(names, i)))
            except ZymaseError:  # integers: constant
                acts.append(api._const_activity(t))
        spec = zn.KernelSpec("rev", tuple(acts), preopt=opts["preopt"], strong_zero=opts["strong_zero"])
        # the inner kernel as the gradient would compile it (arrays that receive
        # differentiated data promoted to duplicated), so its activities are known
        self.inner = zn.get_kernel(disp, prim, spec, cache=opts["cache"], promote=True).spec
        outer = []
        for t, a in zip(prim, self.inner.activities):
            outer.append(_tangent_activity(t))
            if zn.has_shadow(a):
                outer.append(_shadow_tangent_activity(a))
        outer.append(zn.CONST)  # the seed
        #: the outer request's activities (a tangent, or N at width N, per shadowed slot)
        self.activities = tuple(outer)
        self._widths: dict = {}

    def at(self, width: int = 1):
        """(plan, caller) of the kernel at ``width``, compiled on first use: a Hessian
        of n > 1 inputs needs only the vector kernel, hvp only the width-1 one."""
        hit = self._widths.get(width)
        if hit is None:
            hit = self._widths[width] = _direct(self.disp, self.prim, self.activities, "fwd", self.opts,
                                                inner=self.inner, width=width)
        return hit

    def __call__(self, primals, tangents):
        """(value, gradient per argument, the gradient's tangent per argument) for one
        tangent per argument (None: zero); None for integer arguments."""
        value, grads, per_lane = self.push_lanes(primals, [tangents])
        return value, grads, per_lane[0]

    def push_lanes(self, primals, lanes: list):
        """(value, gradient per argument, per lane the gradient's tangent per argument)
        for ``lanes``, each one tangent per argument (None: zero): one call of the
        kernel at width ``len(lanes)``, so one reverse sweep (one primal, one tape) and
        N-wide tangent arithmetic, not N calls."""
        width = len(lanes)
        _, fn = self.at(width)
        kargs, shadows, dshadows = [], [], []
        acts = iter(self.activities)
        for i, (x, ty, inner) in enumerate(zip(primals, self.prim, self.inner.activities)):
            kargs.append(_copy(x))
            if zn.has_shadow(next(acts)):
                for tangents in lanes:
                    t = tangents[i]
                    kargs.append(_zero_tangent(x) if t is None else _with_shadow_type(_copy(t), ty))
            s, ds = None, [None] * width
            if zn.has_shadow(inner):
                s = _zeros(x)
                kargs.append(s)
                if zn.has_shadow(next(acts)):
                    ds = [_zeros(x) for _ in lanes]
                    kargs += ds
            shadows.append(s)
            dshadows.append(ds)
        kargs.append(_np_dtype(self.rt)(1.0))
        r = fn(*kargs)
        # the reverse kernel's values (its value, then the active leaves' derivatives),
        # then their tangents lane by lane
        h = len(r) // (1 + width)
        grads = _picked(self.inner.activities, shadows, iter(r[1:h]))
        per_lane = [_picked(self.inner.activities, [ds[k] for ds in dshadows], iter(r[h * (k + 1) + 1:h * (k + 2)]))
                    for k in range(width)]
        return r[0], grads, per_lane


_nested_cache: dict = {}


def _nested(disp, opts, names, args, api_name: str) -> _Nested:
    prim = tuple(_typeof(x, _label(names, i)) for i, x in enumerate(args))
    check_aliased_arguments(disp, names, args, api_name)
    return _nested_at(disp, opts, names, prim, api_name)


def _nested_at(disp, opts, names, prim: tuple, api_name: str) -> _Nested:
    key = (disp, prim, tuple(sorted(opts.items())))
    n = _nested_cache.get(key)
    if n is None:
        n = _nested_cache[key] = _Nested(disp, opts, names, prim, api_name)
    return n


def _complete(disp, names, args):
    args = _with_defaults(disp, names, tuple(args), "pass every positional argument")
    if len(args) != len(names):
        raise _arity_error(disp, names, len(args), "pass every positional argument")
    return args


def _second_derivative(disp, opts, names, args, gnums, gsingle, jnums, jsingle, api_name):
    """``jacfwd(grad(f, gnums), jnums)(*args)`` forward over reverse, shaped as JAX's."""
    nested = _nested(disp, opts, names, args, api_name)
    for k in set(gnums) | set(jnums):
        _grad_activity(nested.prim[k], _label(names, k))  # integers have no derivative
    grad_like = args[gnums[0]] if gsingle else tuple(args[k] for k in gnums)
    dtypes = [np.asarray(v).dtype for v in _flatten(grad_like)]

    def columns(_k, lanes):  # one vector forward-over-reverse call per chunk of columns
        return [_flatten(_picked_grads(dgrads, gnums, gsingle)) for dgrads in nested.push_lanes(args, lanes)[2]]

    width = _width(max(int(np.prod(s)) for _, _, s in _input_leaves(args, jnums)))
    return assemble_forward(args, jnums, jsingle, grad_like, dtypes, columns, width)


def _picked_grads(dgrads, gnums, gsingle):
    return dgrads[gnums[0]] if gsingle else tuple(dgrads[k] for k in gnums)


def jacobian_of(f, argnums, api_name: str):
    """``jacfwd``/``jacrev``/``jacobian`` of ``grad(f)`` (``_is_plain_grad``): forward
    over reverse (the Jacobian of a gradient is the same matrix whichever way it is
    built)."""
    jnums = api._argnums(argnums, len(f.names))
    jsingle = isinstance(argnums, (int, np.integer))

    def jacobian_of_grad(*args):
        args = _complete(f.disp, f.names, args)
        return _second_derivative(f.disp, f.options, f.names, args, f.argnums, f.single, jnums, jsingle, api_name)

    return jacobian_of_grad


def _check_vector(x, v, what: str, api_name: str):
    """``v`` as a tangent for the argument value ``x``: same structure and shapes, real
    numbers; returned in ``x``'s dtypes."""
    if isinstance(x, tuple):
        if not isinstance(v, tuple) or len(v) != len(x):
            raise ZymaseError(f"{api_name}'s vector for {what} must be a tuple of {len(x)}, like the argument, "
                              f"got {type(v).__name__} {_short(v)}", hint="pass a vector shaped like the argument")
        return tuple(_check_vector(a, b, f"{what}[{i}]", api_name) for i, (a, b) in enumerate(zip(x, v)))
    if isinstance(x, np.ndarray):
        if not isinstance(v, np.ndarray) or v.dtype.kind not in "iuf":
            raise ZymaseError(f"{api_name}'s vector for {what} is {type(v).__name__} {_short(v)}, but the argument "
                              f"is an array of shape {x.shape}", hint="pass a real array shaped like the argument")
        if v.shape != x.shape:
            raise ZymaseError(f"{api_name}'s vector for {what} has shape {v.shape}, but the argument has shape "
                              f"{x.shape}", hint="pass a vector shaped like the argument")
        return np.ascontiguousarray(v, dtype=x.dtype)
    if not _is_real_number(v):
        raise ZymaseError(f"{api_name}'s vector for {what} is {type(v).__name__} {_short(v)}, but the argument is a "
                          "float", hint="pass a real number")
    return v


def jvp_of(f, primals, tangents, api_name: str):
    """``jvp(grad(f), primals, tangents)`` (``_is_plain_grad``): (the gradient, its
    tangent), forward over reverse."""
    for what, v in (("primals", primals), ("tangents", tangents)):
        if not isinstance(v, (tuple, list)):
            raise ZymaseError(f"jvp takes '{what}' as a tuple with one entry per parameter of "
                              f"{zn.function_label(f.disp)}, got {type(v).__name__}",
                              hint="jvp(grad(f), (x, a), (dx, da)); a single argument is (x,)")
    if len(primals) != len(tangents):
        raise ZymaseError(f"jvp got {len(primals)} primals but {len(tangents)} tangents",
                          hint="'tangents' holds one tangent (or None) per primal")
    args = _complete(f.disp, f.names, primals)
    tangents = tuple(tangents) + (None,) * (len(args) - len(tangents))
    nested = _nested(f.disp, f.options, f.names, args, api_name)
    checked = []
    for i, (x, t, ty) in enumerate(zip(args, tangents, nested.prim)):
        has = zn.has_shadow(_tangent_activity(ty))
        checked.append(_check_vector(x, t, _label(f.names, i), "jvp") if t is not None and has else None)
    _, grads, dgrads = nested(args, checked)
    if f.single:
        return grads[f.argnums[0]], dgrads[f.argnums[0]]
    return tuple(grads[k] for k in f.argnums), tuple(dgrads[k] for k in f.argnums)


# --------------------------------------------------------------------------------------
# hessian and hvp
# --------------------------------------------------------------------------------------


class SecondOrder:
    """``hessian(f)`` / ``hvp(f)``: callable from Python and from njit code (a Newton
    step written in njit), like ``api.Transformed``. From njit code they take one
    argument number (a float or a float array; tuples of blocks are built in Python
    only): the Hessian is an njit loop of forward-over-reverse calls, one per input
    element, filling ``x.shape + x.shape`` (from Python, past one chunk, the same loop
    at width ``CHUNK``: :meth:`_chunked_hessian`); the Hessian-vector product is one call."""

    def __init__(self, disp, opts: dict, argnums, api_name: str):
        self.disp, self.options, self.api = disp, opts, api_name
        self.names = _param_names(disp)
        self.argnums = api._argnums(argnums, len(self.names))
        self.single = isinstance(argnums, (int, np.integer))
        if api_name == "hvp":  # hvp(f)(*args, v): every argument, then the vector
            self.params, self.defaults = self.names + [api._Names(self.names).fresh("v")], ()
        else:
            self.params, self.defaults = self.names, disp.py_func.__defaults__ or ()
        me = self

        def typer(*argtys):
            return me._impl(argtys)

        self.trampoline = api._njit_entry(disp, self.params, self.defaults, api_name, typer)
        # (the disk cache key of a function given this transform as an argument covers it)
        self.trampoline.zymase_transform = self
        #: (argument types, width) -> the njit Hessian loop Python calls (_chunked_hessian)
        self._chunk_loops: dict = {}

    @property
    def _numba_type_(self):
        from numba.core import types

        return types.Dispatcher(self.trampoline)

    # -- from Python -------------------------------------------------------------------

    def __call__(self, *args):
        if self.api == "hessian":
            args = _complete(self.disp, self.names, args)
            _nested(self.disp, self.options, self.names, args, "hessian")  # overlapping arguments refused
            h = self._chunked_hessian(args)
            if h is not None:
                return h
            return _second_derivative(self.disp, self.options, self.names, args, self.argnums, self.single,
                                      self.argnums, self.single, "hessian")
        if not args:
            raise ZymaseError(f"hvp of {zn.function_label(self.disp)} takes the arguments and then the vector",
                              hint="hvp(f)(x, v)")
        args, v = _complete(self.disp, self.names, args[:-1]), args[-1]
        nums = self.argnums
        if self.single:
            vs = (v,)
        elif not isinstance(v, tuple) or len(v) != len(nums):
            raise ZymaseError(f"hvp with argnums={nums} takes a tuple of {len(nums)} vectors, got "
                              f"{type(v).__name__} {_short(v)}", hint="pass one vector per differentiated argument")
        else:
            vs = v
        nested = _nested(self.disp, self.options, self.names, args, "hvp")
        tangents = [None] * len(args)
        for k, vk in zip(nums, vs):
            _grad_activity(nested.prim[k], _label(self.names, k))
            tangents[k] = _check_vector(args[k], vk, _label(self.names, k), "hvp")
        _, _, dgrads = nested(args, tangents)
        return dgrads[nums[0]] if self.single else tuple(dgrads[k] for k in nums)

    # -- from njit code ----------------------------------------------------------------

    def _njit_checks(self, argtys):
        """The differentiated argument's number and type, checked for a call from njit
        code at ``argtys``."""
        from numba.core import types

        if len(argtys) != len(self.params):
            raise ZymaseError(f"{label(self)} takes {len(self.params)} arguments ({', '.join(self.params)}), "
                              f"got {len(argtys)} in njit code", hint="pass every positional argument")
        if not self.single:
            raise ZymaseError(f"{label(self)} is called inside njit code, where {self.api} takes one argument "
                              "number", hint=f"use an int argnums inside njit code, or call {self.api} with "
                              f"argnums={self.argnums} from Python")
        k = self.argnums[0]
        for i, t in enumerate(argtys[:len(self.names)]):
            api._check_type(t, _label(self.names, i))
        ty = argtys[k]
        _grad_activity(ty, _label(self.names, k))  # integers have no derivative
        if isinstance(ty, types.BaseTuple):
            raise ZymaseError(f"{label(self)} is called inside njit code with respect to {_label(self.names, k)}, "
                              "a tuple; inside njit code it takes a float or a float array",
                              hint=f"call {self.api} from Python for a tuple (its blocks as a tuple of tuples), "
                              "or pass the parts as separate arguments")
        if self.api == "hvp":
            vt = argtys[-1]
            same = (vt == ty if isinstance(ty, types.Float) else
                    isinstance(vt, types.Array) and (vt.dtype, vt.ndim) == (ty.dtype, ty.ndim))
            if not same:
                raise ZymaseError(f"hvp's vector for {_label(self.names, k)} has type {vt}, but the argument has "
                                  f"type {ty}", hint="pass a vector of the argument's shape and dtype")
        return k, ty

    def _impl(self, argtys, width: int = 1):
        """njit source calling the nested kernel (see the class docstring); a Hessian
        with respect to an array at ``width`` > 1 takes its columns ``width`` at a time
        (one vector call per chunk, the last padded with zero tangents)."""
        from numba.core import types

        argtys = tuple(t.literal_type if isinstance(t, types.Literal) else t for t in argtys)
        k, ty = self._njit_checks(argtys)
        prim = argtys[:len(self.names)]
        nested = _nested_at(self.disp, self.options, self.names, prim, self.api)
        glue = api._Names(self.params)
        np_n, call_n, seed_n, dt_n = (glue.fresh(b) for b in ("np", "call", "seed_t", "dt"))
        env = {np_n: np, call_n: nested.at(width)[0].call, seed_n: _np_dtype(nested.rt),
               dt_n: _np_dtype(ty.dtype if isinstance(ty, types.Array) else ty)}

        def call(tangents: list, dk_lanes: list | None = None) -> tuple[list, list]:
            """Lines calling the kernel with ``tangents`` (one per lane) on argument k,
            and per lane the expression of the gradient's tangent on argument k (the
            zeroed arrays ``dk_lanes`` when given, else new ones)."""
            lines, kargs, acts, dks = [], [], iter(nested.activities), [None] * len(tangents)
            for i, (t, inner) in enumerate(zip(prim, nested.inner.activities)):
                x = self.params[i]
                # f runs on a copy of its arguments, as from Python: a hessian's column
                # after the first would otherwise be taken where f's writes moved them
                kargs.append(api._copy_expr(t, x))
                if zn.has_shadow(next(acts)):
                    kargs += tangents if i == k else [_zero_expr(t, x, np_n) for _ in tangents]
                if zn.has_shadow(inner):
                    s = glue.fresh(f"s{i}")
                    lines.append(f"{s} = {api._shadow_expr(t, x, np_n)}")
                    kargs.append(s)
                    if zn.has_shadow(next(acts)):
                        if i == k and dk_lanes is not None:
                            ds = dk_lanes
                        else:
                            ds = [glue.fresh(f"ds{i}_") for _ in tangents]
                            lines += [f"{d} = {api._shadow_expr(t, x, np_n)}" for d in ds]
                        kargs += ds
                        dks = ds if i == k else dks
            r = glue.fresh("r")
            lines.append(f"{r} = {call_n}(({', '.join(kargs)}, {seed_n}(1.0)))")
            if isinstance(ty, types.Float):  # its tangent is in the result: (value, grads, their tangents)
                before = sum(len(zn.active_leaves(t, a)) for t, a in zip(prim[:k], nested.inner.activities[:k]))
                half = 1 + sum(len(zn.active_leaves(t, a)) for t, a in zip(prim, nested.inner.activities))
                dks = [f"{r}[{half * (lane + 1) + 1 + before}]" for lane in range(len(tangents))]
            return lines, dks

        x = self.params[k]
        # arrays that overlap at run time where f writes: refused, as for grad
        body, checks_env = njit_overlap_checks(self.disp, self.names, prim, self.api, glue.fresh("overlap"),
                                               glue.fresh("error"))
        env.update(checks_env)
        if self.api == "hvp":
            v = self.params[-1]
            if isinstance(ty, types.Array):
                # a run-time check in glue that every caller at these types shares: the
                # message names the transform and argument, not a caller (typing errors do)
                err_n = glue.fresh("error")
                env[err_n] = ZymaseError
                message = (f"{label(self)} inside njit code: its vector differs in shape from "
                           f"{_label(self.names, k)}; hint: pass a vector shaped like the argument")
                body.append(f"if {v}.shape != {x}.shape:")
                body.append(f"    raise {err_n}({message!r})")
            # a copy of the vector: it is the tangent of argument k, which f may write
            # (the caller's vector was overwritten, silently: session 26)
            lines, dks = call([f"{v}.copy()" if isinstance(ty, types.Array) else f"{dt_n}({v})"])
            body += lines + [f"return {dks[0]}"]
        elif isinstance(ty, types.Float):
            lines, dks = call([f"{dt_n}(1.0)"])
            body += lines + [f"return {dks[0]}"]
        else:
            # the lanes' unit tangents and their results are the slices of two arrays,
            # written through flat views (one expression per lane in the call: Numba's
            # compile of this glue grows with its statements, a reshape costing most);
            # past the last column a lane is zero (padding)
            n, h, j, i, lane, e, d, ef, df = (glue.fresh(b) for b in ("n", "h", "j", "i", "lane", "e", "d", "ef",
                                                                         "df"))
            lines, _ = call([f"{e}[{q}]" for q in range(width)], [f"{d}[{q}]" for q in range(width)])
            body += [f"{n} = {x}.size", f"{h} = {np_n}.zeros(({n}, {n}), {dt_n})",
                     f"{e} = {np_n}.zeros(({width},) + {x}.shape, {dt_n})", f"{ef} = {e}.reshape(({width}, {n}))",
                     f"{d} = {np_n}.zeros(({width},) + {x}.shape, {dt_n})", f"{df} = {d}.reshape(({width}, {n}))",
                     f"for {j} in range(0, {n}, {width}):",
                     f"    for {lane} in range({width}):",
                     f"        for {i} in range({n}):",
                     f"            {ef}[{lane}, {i}] = 0.0",
                     f"            {df}[{lane}, {i}] = 0.0",
                     f"        if {j} + {lane} < {n}:",
                     f"            {ef}[{lane}, {j} + {lane}] = 1.0"]
            body += ["    " + ln for ln in lines]
            body += [f"    for {lane} in range(min({width}, {n} - {j})):",
                     f"        for {i} in range({n}):",
                     f"            {h}[{i}, {j} + {lane}] = {df}[{lane}, {i}]"]
            body.append(f"return {h}.reshape({x}.shape + {x}.shape)")
        impl_n = glue.fresh("impl")
        src = f"def {impl_n}({', '.join(self.params)}):\n" + "".join(f"    {ln}\n" for ln in body)
        return api._exec(src, env, impl_n)

    def _chunked_hessian(self, args):
        """From Python, the Hessian with respect to one float array: the njit loop of
        :meth:`_impl` at width ``CHUNK``, all chunks in one njit call, compiled once per
        argument types (a Python loop over the chunks cost more than the kernel for a
        small function: 60 us of assembly per chunk against 3 us for Rosenbrock at
        n = 64). None where that loop does not apply (tuple ``argnums``, a tuple or
        float argument, types njit glue refuses) or does not pay (one chunk): the
        caller assembles the columns in Python."""
        import numba

        k = self.argnums[0]
        if not (self.single and isinstance(args[k], np.ndarray) and args[k].dtype.kind == "f"):
            return None
        if args[k].size <= CHUNK:
            # one chunk: one call assembled in Python costs less than compiling the
            # loop (about 0.5 s of CPU on the first call)
            return None
        try:
            argtys = tuple(_typeof(a, _label(self.names, i)) for i, a in enumerate(args))
            self._njit_checks(argtys)
        except ZymaseError:
            return None
        width = _width(args[k].size)
        key = (argtys, width)
        fn = self._chunk_loops.get(key)
        if fn is None:
            fn = self._chunk_loops[key] = numba.njit(no_cfunc_wrapper=True)(self._impl(argtys, width))
        return fn(*args)


def _zero_expr(ty, expr: str, np_name: str) -> str:
    """njit source for a zero tangent of a value of type ``ty``."""
    from numba.core import types

    if api._is_float_array(ty):
        return f"{np_name}.zeros_like({expr})"
    if isinstance(ty, types.Float):
        return f"{np_name}.{ty}(0.0)"
    if isinstance(ty, types.BaseTuple):
        return "(" + "".join(_zero_expr(t, f"{expr}[{i}]", np_name) + ", " for i, t in enumerate(ty.types)) + ")"
    return expr


def hessian(f, argnums=0, *, preopt: bool = True, cache: bool | None = None, strong_zero: bool = True,
            sparse: bool = False):
    """The Hessian of a float-valued njit function with respect to argument(s)
    ``argnums``, like ``jax.hessian``: shape ``x.shape + x.shape`` for an int
    ``argnums``; for a tuple, a tuple of tuples whose block ``(i, j)`` has shape
    ``args[i].shape + args[j].shape``. Forward over reverse in the engine at width 8:
    one vector call (one reverse sweep, eight tangent lanes) per eight input elements. ``sparse=True``
    (a 1-D array argument): a ``scipy.sparse`` matrix from one Hessian-vector product
    per colour of the pattern found in the IR (:mod:`zymase.api_sparse`). The result is
    callable from njit code (:class:`SecondOrder`); ``f`` may itself be a transform
    (``hessian(grad(f))``, third derivatives)."""
    if is_transform(f):
        f, cache = composed(f), f.options["cache"] if cache is None else cache
    if sparse:
        from zymase.api_sparse import sparse_hessian

        return sparse_hessian(f, argnums, (preopt, cache, strong_zero))
    disp, opts = _options(f, preopt, cache, strong_zero)
    return SecondOrder(disp, opts, argnums, "hessian")


def hvp(f, argnums=0, *, preopt: bool = True, cache: bool | None = None, strong_zero: bool = True):
    """``hvp(f)(*args, v)``: the Hessian of a float-valued njit function with respect
    to argument(s) ``argnums`` times ``v`` (shaped like that argument; a tuple for a
    tuple ``argnums``), forward over reverse: one call of the nested kernel, the cost
    of a few gradients. The result is shaped like ``v``. Callable from njit code
    (:class:`SecondOrder`); ``f`` may itself be a transform."""
    if is_transform(f):
        f, cache = composed(f), f.options["cache"] if cache is None else cache
    disp, opts = _options(f, preopt, cache, strong_zero)
    return SecondOrder(disp, opts, argnums, "hvp")
