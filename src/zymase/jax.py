"""zymase for JAX functions: ``grad``, ``value_and_grad``, ``vjp``, ``jvp``.

``zymase.jax.jit(f)`` is ``f`` for JAX's transformations with zymase's reverse mode
inside: ``jax.grad(zymase.jax.jit(f))`` runs zymase's derivative (a ``jax.custom_vjp``
whose backward pass is the derivative module). ``zymase.jax.grad(f)(x)`` lowers ``f`` to StableHLO with JAX, differentiates the
StableHLO with zymase (``autodiff/hlo.py``) and runs the derivative with XLA as part
of the JAX program (``frontends/jax.py``). The results are JAX arrays; the functions
returned here can be called inside ``jax.jit``. Requires the ``jax`` extra
(``pip install zymase[jax]``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from zymase.errors import ZymaseError

try:
    import jax
    import jax.numpy as jnp
    import numpy as np
except ImportError:  # pragma: no cover - depends on the installation
    raise ZymaseError("zymase.jax needs JAX", construct="import zymase.jax",
                      hint="pip install 'zymase[jax]' (jax==0.10.2)") from None

from zymase.frontends import jax as front
from zymase.frontends.jax import ShapedArray

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "jit"]


def _argnums_tuple(argnums, nargs: int, f) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for n in nums:
        if not -nargs <= n < nargs:
            raise ZymaseError(f"argnums {n} is out of range for {nargs} argument(s)",
                              function=front.python_name(f), hint="count the positional arguments from 0")
    return tuple(n % nargs for n in nums)


def _slots(args, argnums):
    """Flatten the arguments; which leaves belong to the differentiated arguments."""
    leaves, in_tree = jax.tree_util.tree_flatten(tuple(args))
    # Python numbers become (weakly typed) arrays, as under jax.jit
    leaves = [x if hasattr(x, "shape") and hasattr(x, "dtype") else jnp.asarray(x) for x in leaves]
    active = []
    for i, a in enumerate(args):
        n = len(jax.tree_util.tree_leaves(a))
        active += [i in argnums] * n
    return leaves, in_tree, active


def _without_aux_derivatives(f):
    """``f`` returning ``(output, aux)`` with ``aux`` behind ``jax.lax.stop_gradient``: one
    program computes the value, the aux and the gradient, and no derivative flows through
    aux (its zero seeds cannot meet a singular partial there). Named as ``f`` for messages."""

    @functools.wraps(f)
    def output_and_aux(*args):
        result = f(*args)
        if not (isinstance(result, (tuple, list)) and len(result) == 2):
            raise ZymaseError("has_aux=True needs the function to return a pair (output, aux)",
                              function=front.python_name(f), hint="return (value, aux), or pass has_aux=False")
        out, aux = result
        return out, jax.tree_util.tree_map(jax.lax.stop_gradient, aux)

    return output_and_aux


def value_and_grad(f, argnums: int | Sequence[int] = 0, has_aux: bool = False):
    """``(f(*args), gradient)`` of a scalar-valued JAX function, like ``jax.value_and_grad``;
    with ``has_aux``, ``f`` returns ``(output, aux)`` and the result is ``((output, aux),
    gradient)``."""
    target = _without_aux_derivatives(f) if has_aux else f

    def wrapper(*args):
        nums = _argnums_tuple(argnums, len(args), f)
        leaves, in_tree, active = _slots(args, nums)
        front.require_float_leaves([x for x, a in zip(leaves, active) if a], "the differentiated arguments", f)
        out_tree, out_avals = front.lower(target, leaves, in_tree)
        aux_tree = None
        if has_aux:
            out_part, aux_tree = jax.tree_util.treedef_children(out_tree)
            n_out = out_part.num_leaves
        else:
            n_out = out_tree.num_leaves
        if n_out != 1 or out_avals[0].shape != () or not jnp.issubdtype(out_avals[0].dtype, jnp.floating):
            raise ZymaseError("grad needs a function returning one float scalar" + (" (and its aux)" if has_aux else ""),
                              function=front.python_name(f), hint="use zymase.jax.vjp for other outputs")
        text = front.derivative_module(target, leaves, in_tree, "reverse", active)
        grads_avals = [ShapedArray(x.shape, x.dtype) for x, a in zip(leaves, active) if a]
        # the output's seed is 1; aux's float leaves take zeros (behind stop_gradient)
        seeds = [jnp.ones((), out_avals[0].dtype)] + [jnp.zeros(a.shape, a.dtype) for a in out_avals[1:] if _is_float(a)]
        outs = front.run(text, [*leaves, *seeds], [*out_avals, *grads_avals])
        value, flat_grads = outs[0], list(outs[len(out_avals):])
        if has_aux:
            value = (value, jax.tree_util.tree_unflatten(aux_tree, list(outs[1:len(out_avals)])))
        # the module returns the active leaves in argument order, whatever the order (or
        # repetition) of argnums: argnums=(1, 0) gave argument 0's gradients to argument 1
        by_position = {}
        for n in sorted(set(nums)):
            count = len(jax.tree_util.tree_leaves(args[n]))
            by_position[n] = jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(args[n]), flat_grads[:count])
            flat_grads = flat_grads[count:]
        return value, (by_position[nums[0]] if isinstance(argnums, int) else tuple(by_position[n] for n in nums))

    return wrapper


def grad(f, argnums: int | Sequence[int] = 0, has_aux: bool = False):
    """The gradient of a scalar-valued JAX function, like ``jax.grad``; with ``has_aux``,
    ``(gradient, aux)``."""
    vg = value_and_grad(f, argnums, has_aux)
    if has_aux:
        def grad_and_aux(*args):
            (_, aux), g = vg(*args)
            return g, aux

        return grad_and_aux
    return lambda *args: vg(*args)[1]


def _float_mask(leaves, what: str, f) -> list[bool]:
    """Which argument leaves carry derivatives: the float ones. Integer and boolean leaves
    get float0 zeros, as in jax.vjp/jax.jvp (they were refused); complex ones are refused
    (zymase has no complex derivatives), as are float8 ones."""
    active = [front.float_leaf(x) for x in leaves]
    front.require_float_leaves([x for x, a in zip(leaves, active)
                                if a or jnp.issubdtype(jax.typeof(x).dtype, jnp.inexact)], what, f)
    return active


def _float0_like(x):
    return np.zeros(np.shape(x), dtype=jax.dtypes.float0)


def vjp(f, *primals):
    """``(f(*primals), vjp_fn)`` like ``jax.vjp``: ``vjp_fn(cotangent)`` returns one
    cotangent per primal argument (float0 zeros for integer and boolean ones)."""
    leaves, in_tree, _ = _slots(primals, tuple(range(len(primals))))
    active = _float_mask(leaves, "the arguments of vjp", f)
    out_tree, out_avals = front.lower(f, leaves, in_tree)
    value = jax.jit(f)(*primals)

    def vjp_fn(cotangent):
        # the derivative takes seeds for float outputs only: integer outputs' float0
        # cotangents (what jax.vjp's callers pass) carry nothing
        seeds = [s for s, aval in zip(jax.tree_util.tree_leaves(cotangent), out_avals) if _is_float(aval)]
        text = front.derivative_module(f, leaves, in_tree, "reverse", active)
        avals = [ShapedArray(x.shape, x.dtype) for x, a in zip(leaves, active) if a]
        outs = front.run(text, [*leaves, *seeds], [*out_avals, *avals])
        grads = iter(outs[len(out_avals):])
        flat = [next(grads) if a else _float0_like(x) for x, a in zip(leaves, active)]
        return tuple(jax.tree_util.tree_unflatten(in_tree, flat))

    return value, vjp_fn


def jvp(f, primals, tangents):
    """``(f(*primals), tangent of the output)`` like ``jax.jvp`` (forward mode); integer
    and boolean primals take float0 tangents, as in JAX."""
    leaves, in_tree, _ = _slots(primals, tuple(range(len(primals))))
    active = _float_mask(leaves, "the arguments of jvp", f)
    tangent_leaves = [jnp.asarray(t) for t, a in zip(jax.tree_util.tree_leaves(tuple(tangents)), active) if a]
    out_tree, out_avals = front.lower(f, leaves, in_tree)
    text = front.derivative_module(f, leaves, in_tree, "forward", active)
    float_avals = [a for a in out_avals if _is_float(a)]
    outs = front.run(text, [*leaves, *tangent_leaves], [*out_avals, *float_avals])
    n = len(out_avals)
    # integer outputs have no tangent in the module; jax.jvp gives them float0 zeros
    found = iter(outs[n:])
    out_tangents = [next(found) if _is_float(a) else _float0_like(a) for a in out_avals]
    return (jax.tree_util.tree_unflatten(out_tree, outs[:n]), jax.tree_util.tree_unflatten(out_tree, out_tangents))


def _is_float(aval) -> bool:
    return jnp.issubdtype(aval.dtype, jnp.inexact)


def jit(f):
    """``f`` jitted, with zymase's reverse mode as its derivative: ``jax.grad``,
    ``jax.vjp`` and ``jax.value_and_grad`` of the result (and of code that calls it,
    inside ``jax.jit`` or not) run the StableHLO derivative zymase generates. Integer
    arguments get zero (float0) cotangents. Forward mode (``jax.jvp``) is refused by
    JAX for such functions (custom_vjp)."""

    @jax.custom_vjp
    def wrapped(*args):
        return f(*args)

    def forward_pass(*args):
        return f(*args), args

    def backward_pass(args, cotangent):
        leaves, in_tree, _ = _slots(args, tuple(range(len(args))))
        active = [front.float_leaf(x) for x in leaves]
        out_tree, out_avals = front.lower(f, leaves, in_tree)
        seeds = [c for c, a in zip(jax.tree_util.tree_leaves(cotangent), out_avals)
                 if jnp.issubdtype(a.dtype, jnp.floating)]
        text = front.derivative_module(f, leaves, in_tree, "reverse", active)
        grad_avals = [ShapedArray(x.shape, x.dtype) for x, a in zip(leaves, active) if a]
        outs = front.run(text, [*leaves, *seeds], [*out_avals, *grad_avals])
        grads = iter(outs[len(out_avals):])
        flat = [next(grads) if a else _float0_like(x) for x, a in zip(leaves, active)]
        return tuple(jax.tree_util.tree_unflatten(in_tree, flat))

    wrapped.defvjp(forward_pass, backward_pass)
    return jax.jit(wrapped)
