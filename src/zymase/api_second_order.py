"""Python API: second derivatives of njit functions, forward over reverse in the engine:
``hessian``, ``hvp`` and the compositions ``grad(grad(f))``, ``jacfwd(grad(f))``
(``jacrev``/``jacobian`` of a gradient too) and ``jvp(grad(f), ...)``.

Each (function, argument types) gets one nested kernel (``KernelSpec.inner`` in
:mod:`zymase.frontends.numba`): a forward-mode request over the function's reverse
kernel, whose source still calls ``__enzyme_autodiff``; the C path's marker rounds
differentiate the inner request first and then the outer one over the gradient code.
One call takes a tangent for every float argument and returns the gradient with
respect to every float argument and that gradient's tangent (a Hessian-vector
product); a Hessian is one call per input element (no vector mode yet), never finite
differences or reverse sweeps per row.

Reverse over reverse (``vjp(grad(f))``) and third order are refused with a ZymaseError.
"""

from __future__ import annotations

import numpy as np

from zymase import api
from zymase.api import (
    _arity_error, _copy, _direct, _grad_activity, _is_real_number, _label, _np_dtype, _options, _param_names,
    _short, _tangent_activity, _typeof, _with_defaults, _with_shadow_type, _zeros,
)
from zymase.api_outputs import _flatten, _picked, _zero_tangent, assemble_forward
from zymase.errors import ZymaseError
from zymase.frontends import numba as zn


class SecondGrad:
    """``grad(grad(f, i), j)`` of a float-valued ``f`` whose ``i``-th argument is a
    float: the derivative of that gradient with respect to argument(s) ``j``, computed
    forward over reverse. Callable from Python (not from njit code)."""

    def __init__(self, inner: api.Transformed, argnums):
        self.inner = inner
        self.argnums = api._argnums(argnums, len(inner.names))
        self.single = isinstance(argnums, (int, np.integer))

    def __call__(self, *args):
        g = self.inner
        args = _complete(g.disp, g.names, args)
        prim = _types(g, args)
        k = g.argnums[0]
        from numba.core import types

        if not (g.single and isinstance(prim[k], types.Float)):
            what = (f"the gradient with respect to {_label(g.names, k)}, which is {prim[k]}" if g.single
                    else f"a tuple of gradients (argnums={g.argnums})")
            raise ZymaseError(f"grad of grad({zn.function_label(g.disp)}) needs grad to return a float, but it "
                              f"returns {what}",
                              hint="for second derivatives with respect to arrays use zymase.hessian(f) or "
                              "zymase.jacfwd(zymase.grad(f))")
        return _second_derivative(g.disp, g.options, g.names, args, g.argnums, True, self.argnums, self.single,
                                  "grad")


def is_transform(f) -> bool:
    """``f`` is what ``grad``/``value_and_grad``/``grad(grad(...))`` returned."""
    return isinstance(f, (api.Transformed, SecondGrad))


def not_built(f, api_name: str) -> ZymaseError:
    """The error for a composition zymase does not build."""
    if isinstance(f, SecondGrad):
        return ZymaseError(f"{api_name} of grad(grad({zn.function_label(f.inner.disp)})) would be a third "
                           "derivative, which zymase does not build",
                           hint="second derivatives: zymase.hessian(f), zymase.hvp(f), zymase.grad(zymase.grad(f))")
    if f.with_value:
        return ZymaseError(f"{api_name} of value_and_grad({zn.function_label(f.disp)}) is not built",
                           hint=f"differentiate the gradient alone: zymase.{api_name}(zymase.grad(f))")
    if api_name == "vjp":
        return ZymaseError(f"vjp of grad({zn.function_label(f.disp)}) would be reverse over reverse, which zymase "
                           "does not build",
                           hint="jvp(grad(f), primals, tangents) or hvp(f) give the same second derivatives, "
                           "forward over reverse")
    return ZymaseError(f"{api_name} of grad({zn.function_label(f.disp)}) would be a third derivative, which "
                       "zymase does not build", hint="second derivatives: zymase.hessian(f) or zymase.hvp(f)")


def grad_of(f, argnums):
    """``zymase.grad(f)`` for a transform ``f``."""
    if isinstance(f, api.Transformed) and not f.with_value:
        return SecondGrad(f, argnums)
    raise not_built(f, "grad")


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
        self.disp, self.prim = disp, prim
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
        self.plan, self.fn = _direct(disp, prim, tuple(outer), "fwd", opts, inner=self.inner)

    def __call__(self, primals, tangents):
        """(value, gradient per argument, the gradient's tangent per argument) for one
        tangent per argument (None: zero); None for integer arguments."""
        kargs, shadows, dshadows = [], [], []
        acts = iter(self.plan.activities)
        for x, t, ty, inner in zip(primals, tangents, self.prim, self.inner.activities):
            kargs.append(_copy(x))
            if zn.has_shadow(next(acts)):
                kargs.append(_zero_tangent(x) if t is None else _with_shadow_type(_copy(t), ty))
            s = ds = None
            if zn.has_shadow(inner):
                s, ds = _zeros(x), _zeros(x)
                kargs.append(s)
                if zn.has_shadow(next(acts)):
                    kargs.append(ds)
            shadows.append(s)
            dshadows.append(ds)
        kargs.append(_np_dtype(self.rt)(1.0))
        r = self.fn(*kargs)
        half = len(r) // 2
        grads = _picked(self.inner.activities, shadows, iter(r[1:half]))
        return r[0], grads, _picked(self.inner.activities, dshadows, iter(r[half + 1:]))


_nested_cache: dict = {}


def _nested(disp, opts, names, args, api_name: str) -> _Nested:
    prim = tuple(_typeof(x, _label(names, i)) for i, x in enumerate(args))
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


def _types(g, args):
    return tuple(_typeof(x, _label(g.names, i)) for i, x in enumerate(args))


def _second_derivative(disp, opts, names, args, gnums, gsingle, jnums, jsingle, api_name):
    """``jacfwd(grad(f, gnums), jnums)(*args)`` forward over reverse, shaped as JAX's."""
    nested = _nested(disp, opts, names, args, api_name)
    for k in set(gnums) | set(jnums):
        _grad_activity(nested.prim[k], _label(names, k))  # integers have no derivative
    grad_like = args[gnums[0]] if gsingle else tuple(args[k] for k in gnums)
    dtypes = [np.asarray(v).dtype for v in _flatten(grad_like)]

    def columns(_k, lanes):  # one lane per call: nested kernels have no vector mode
        return [_flatten(_picked_grads(nested(args, tangents)[2], gnums, gsingle)) for tangents in lanes]

    return assemble_forward(args, jnums, jsingle, grad_like, dtypes, columns)


def _picked_grads(dgrads, gnums, gsingle):
    return dgrads[gnums[0]] if gsingle else tuple(dgrads[k] for k in gnums)


def jacobian_of(f, argnums, api_name: str):
    """``jacfwd``/``jacrev``/``jacobian`` of ``grad(f)``: forward over reverse (the
    Jacobian of a gradient is the same matrix whichever way it is built)."""
    if not (isinstance(f, api.Transformed) and not f.with_value):
        raise not_built(f, api_name)
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
    """``jvp(grad(f), primals, tangents)``: (the gradient, its tangent), forward over
    reverse."""
    if not (isinstance(f, api.Transformed) and not f.with_value):
        raise not_built(f, api_name)
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


def hessian(f, argnums=0, *, preopt: bool = True, cache: bool | None = None, strong_zero: bool = True,
            sparse: bool = False):
    """The Hessian of a float-valued njit function with respect to argument(s)
    ``argnums``, like ``jax.hessian``: shape ``x.shape + x.shape`` for an int
    ``argnums``; for a tuple, a tuple of tuples whose block ``(i, j)`` has shape
    ``args[i].shape + args[j].shape``. Forward over reverse in the engine, one
    Hessian-vector product per input element (no vector mode yet). ``sparse=True``
    (a 1-D array argument): a ``scipy.sparse`` matrix from one Hessian-vector product
    per colour of the pattern found in the IR (:mod:`zymase.api_sparse`)."""
    if is_transform(f):
        raise not_built(f, "hessian")
    if sparse:
        from zymase.api_sparse import sparse_hessian

        return sparse_hessian(f, argnums, (preopt, cache, strong_zero))
    disp, opts = _options(f, preopt, cache, strong_zero)
    names = _param_names(disp)
    nums = api._argnums(argnums, len(names))
    single = isinstance(argnums, (int, np.integer))

    def hessian_fn(*args):
        args = _complete(disp, names, args)
        return _second_derivative(disp, opts, names, args, nums, single, nums, single, "hessian")

    return hessian_fn


def hvp(f, argnums=0, *, preopt: bool = True, cache: bool | None = None, strong_zero: bool = True):
    """``hvp(f)(*args, v)``: the Hessian of a float-valued njit function with respect
    to argument(s) ``argnums`` times ``v`` (shaped like that argument; a tuple for a
    tuple ``argnums``), forward over reverse: one call of the nested kernel, the cost
    of a few gradients. The result is shaped like ``v``."""
    if is_transform(f):
        raise not_built(f, "hvp")
    disp, opts = _options(f, preopt, cache, strong_zero)
    names = _param_names(disp)
    nums = api._argnums(argnums, len(names))
    single = isinstance(argnums, (int, np.integer))

    def hvp_fn(*args_and_v):
        if not args_and_v:
            raise ZymaseError(f"hvp of {zn.function_label(disp)} takes the arguments and then the vector",
                              hint="hvp(f)(x, v)")
        args, v = _complete(disp, names, args_and_v[:-1]), args_and_v[-1]
        if single:
            vs = (v,)
        elif not isinstance(v, tuple) or len(v) != len(nums):
            raise ZymaseError(f"hvp with argnums={nums} takes a tuple of {len(nums)} vectors, got "
                              f"{type(v).__name__} {_short(v)}", hint="pass one vector per differentiated argument")
        else:
            vs = v
        nested = _nested(disp, opts, names, args, "hvp")
        tangents = [None] * len(args)
        for k, vk in zip(nums, vs):
            _grad_activity(nested.prim[k], _label(names, k))
            tangents[k] = _check_vector(args[k], vk, _label(names, k), "hvp")
        _, _, dgrads = nested(args, tangents)
        return dgrads[nums[0]] if single else tuple(dgrads[k] for k in nums)

    return hvp_fn
