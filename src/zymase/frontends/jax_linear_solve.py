"""``jax.lax.custom_linear_solve`` (under ``jnp.linalg.solve`` and ``inv``) lowered so
that zymase's derivative of the StableHLO is the solve's (issue 28).

JAX lowers ``custom_linear_solve`` to its ``solve`` function alone, and
``jnp.linalg.solve`` factors ``stop_gradient(a)`` for it: the matrix reaches the
derivative only through ``matvec``, which JAX's rule differentiates (implicitly: ``dx =
solve(db - dA x)``) and the lowered program does not contain. Differentiating the lowered
program therefore gave a zero derivative with respect to ``a``. While zymase lowers a
function (the context variable ``frontends/jax.py`` sets) the primitive lowers instead to

    x0 = stop_gradient(solve(b));  d = solve(b - matvec(x0));  x = x0 + (d - stop_gradient(d))

whose value is ``x0`` exactly (``d - d``) and whose derivative is ``solve(db - dA x0)``,
JAX's, provided ``solve`` is linear in its right-hand side: the ``solve`` jaxpr is
checked for that (operations on values depending on the right-hand side must be linear
in them: data movement, sums, products with something independent, triangular solves
with an independent matrix) and refused otherwise (the iterative solvers of
``jax.scipy.sparse.linalg`` run loops whose steps depend on it). Outside zymase's
lowering JAX's own lowering applies.
"""

from __future__ import annotations

import contextvars
import functools

from jax import lax
from jax._src import core
from jax._src.interpreters import mlir as jax_mlir
from jax._src.lax.control_flow.solves import _custom_linear_solve_impl, _split_linear_solve_args, linear_solve_p

from zymase.errors import ZymaseError

# linear in every float operand (the others must not depend on the right-hand side)
_MOVES = {"transpose", "reshape", "squeeze", "expand_dims", "broadcast_in_dim", "convert_element_type", "copy",
          "copy_p", "slice", "concatenate", "pad", "rev", "add", "sub", "neg", "add_any", "reduce_sum"}
# operands that must not depend on the right-hand side
_INDEPENDENT = {"gather": (1,), "select_n": (0,), "dynamic_slice": (1, 2, 3, 4, 5, 6, 7, 8),
                "dynamic_update_slice": (2, 3, 4, 5, 6, 7, 8), "triangular_solve": (0,), "div": (1,)}
# linear in each operand when the other one does not depend on the right-hand side
_BILINEAR = {"mul", "dot_general"}
_CALLS = {"jit", "pjit", "closed_call", "core_call"}


def _nonlinear_use(jaxpr, depends: list[bool]) -> str | None:
    """The first primitive in ``jaxpr`` that is not linear in the inputs marked in
    ``depends``, or None; outputs' dependence is tracked through nested calls."""
    dependent = {v for v, d in zip(jaxpr.invars, depends) if d}
    for eqn in jaxpr.eqns:
        flags = [not isinstance(v, core.Literal) and v in dependent for v in eqn.invars]
        if not any(flags):
            continue
        name = eqn.primitive.name
        if name in _CALLS:
            inner = eqn.params.get("jaxpr") or eqn.params.get("call_jaxpr")
            inner = getattr(inner, "jaxpr", inner)
            found = _nonlinear_use(inner, flags)
            if found is not None:
                return found
        elif name in _BILINEAR:
            if all(flags):
                return name
        elif name in _INDEPENDENT:
            if any(flags[i] for i in _INDEPENDENT[name] if i < len(flags)):
                return name
        elif name not in _MOVES:
            return name
        dependent.update(eqn.outvars)
    return None


def _implicit_solve(*args, const_lengths, jaxprs):
    params, b = _split_linear_solve_args(args, const_lengths)

    def solve(rhs):
        return core.jaxpr_as_fun(jaxprs.solve)(*params.solve, *rhs)

    x0 = [lax.stop_gradient(x) for x in solve(b)]
    products = core.jaxpr_as_fun(jaxprs.matvec)(*params.matvec, *x0)
    step = solve([bi - ax for bi, ax in zip(b, products)])
    return [x + (d - lax.stop_gradient(d)) for x, d in zip(x0, step)]


def register(marking: contextvars.ContextVar) -> None:
    """Lower ``custom_linear_solve`` as above while ``marking`` is set (zymase lowering)."""
    jax_lowering = jax_mlir.lower_fun(_custom_linear_solve_impl, multiple_results=True)

    def lower(ctx, *args, const_lengths, jaxprs):
        if not marking.get():
            return jax_lowering(ctx, *args, const_lengths=const_lengths, jaxprs=jaxprs)
        solve = jaxprs.solve.jaxpr
        depends = [False] * const_lengths.solve + [True] * (len(solve.invars) - const_lengths.solve)
        found = _nonlinear_use(solve, depends)
        if found is not None:
            raise ZymaseError(f"the solve of a jax.lax.custom_linear_solve applies '{found}' to the right-hand "
                              "side, so zymase cannot differentiate it as a linear solve",
                              construct="jax.lax.custom_linear_solve",
                              hint="use jnp.linalg.solve or jax.scipy.linalg.lu_solve (iterative solvers of "
                                   "jax.scipy.sparse.linalg are not supported)")
        implicit = functools.partial(_implicit_solve, const_lengths=const_lengths, jaxprs=jaxprs)
        return jax_mlir.lower_fun(implicit, multiple_results=True)(ctx, *args)

    jax_mlir.register_lowering(linear_solve_p, lower, cacheable=False)
