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

The step's ``solve`` is itself marked (``stablehlo.custom_call @zymase.linear_solve``,
when zymase marks custom rules and the call has a ``transpose_solve``): its called
computations are the solve and the transposed solve, and
``autodiff/rules/stablehlo_custom.LinearSolve`` differentiates it as JAX's rule does,
the tangent being the solve of the right-hand side's tangent, the cotangent the
transposed solve of the result's (for ``jnp.linalg.solve``: triangular solves with the
LU factors transposed and the permutation inverted by a sort and applied as a gather,
where zymase's own adjoint of ``solve``'s ``b[perm]`` was an unfused scatter-add). As in
JAX, nothing flows to the values the solve closes over (the factors).
"""

from __future__ import annotations

import contextvars
import functools

from jax import lax
from jax._src import core
from jax._src.interpreters import mlir as jax_mlir
from jax._src.lax.control_flow.solves import _custom_linear_solve_impl, _split_linear_solve_args, linear_solve_p

from zymase.errors import ZymaseError
from zymase.frontends import jax_custom_rules
from zymase.ir.stablehlo import LINEAR_SOLVE_TARGET

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
    if _markable(jaxprs, b):
        # x0 - Z(A x0 - b), Z zero with the solve's derivative: x0 exactly (x - 0 is x for
        # every x), and the primal neither forms the residual nor solves it
        excess = [ax - bi for bi, ax in zip(b, products)]
        zeros = _marked_solve_p.bind(*params.solve, *params.transpose_solve, *excess, jaxprs=jaxprs,
                                     n_solve=len(params.solve))
        return [x - z for x, z in zip(x0, zeros)]
    step = solve([bi - ax for bi, ax in zip(b, products)])
    return [x + (d - lax.stop_gradient(d)) for x, d in zip(x0, step)]


def _markable(jaxprs, rhs) -> bool:
    """Whether the step's solve is marked: JAX's reverse rule needs ``transpose_solve``
    (without it zymase differentiates the solve's own ops), and the marker's functions
    are lowered as a custom rule's are. Also inside the functions of other custom rules
    (``jnp.linalg.slogdet``'s jvp solves with the tangent), whose copies carry it along."""
    if jaxprs.transpose_solve is None or not jax_custom_rules.lowering_for_zymase():
        return False
    closed_over_tracers = any(isinstance(c, core.Tracer) for j in (jaxprs.solve, jaxprs.transpose_solve)
                              for c in j.consts)
    return not closed_over_tracers and all(jax_custom_rules.is_float(core.typeof(x)) for x in rhs)


# the step's solve while zymase lowers: a marker whose functions are the solve and its transpose
_marked_solve_p = core.Primitive("zymase_linear_solve")
_marked_solve_p.multiple_results = True
_marked_solve_p.def_abstract_eval(lambda *args, jaxprs, n_solve: jaxprs.solve.out_avals)


def _lower_marked_solve(ctx, *args, jaxprs, n_solve):
    """``@zymase.linear_solve`` on (solve's params, transpose_solve's params, rhs), calling
    ``[zeros, solve, transpose_solve]``, each taking every operand: the first is its value
    (``autodiff/hlo.strip_custom_rules`` replaces a marker by its first function), the
    others its derivative (``autodiff/rules/stablehlo_custom.LinearSolve``)."""
    in_avals = list(ctx.avals_in)
    n_params = len(in_avals) - len(jaxprs.solve.out_avals)  # the rest is the right-hand side
    solve_fn, transpose_fn = core.jaxpr_as_fun(jaxprs.solve), core.jaxpr_as_fun(jaxprs.transpose_solve)

    def zeros(*xs):
        return [lax.full(a.shape, 0, a.dtype) for a in jaxprs.solve.out_avals]

    def solve(*xs):
        return solve_fn(*xs[:n_solve], *xs[n_params:])

    def transpose(*xs):
        return transpose_fn(*xs[n_solve:n_params], *xs[n_params:])

    functions = jax_custom_rules.lower_rule_functions(ctx, [("zymase_linear_solve_value", zeros, in_avals),
                                                            ("zymase_linear_solve", solve, in_avals),
                                                            ("zymase_linear_solve_transpose", transpose, in_avals)])
    config = {"rule": "jax.lax.custom_linear_solve", "defined": None, "called": jax_custom_rules.call_site(ctx),
              "consts": n_params}
    return jax_custom_rules.marker(ctx, LINEAR_SOLVE_TARGET, args, functions, config)


jax_mlir.register_lowering(_marked_solve_p, _lower_marked_solve, cacheable=False)


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
