"""Derivative rules of ``jax.custom_vjp`` / ``jax.custom_jvp`` calls (users' and JAX's own): the marker
custom_calls of ``frontends/jax_custom_rules.py``, whose called computations are the
primal and the rule lowered to StableHLO, applied as ``jax.grad`` / ``jax.jvp`` apply them.

* custom_vjp, reverse: a copy of ``fwd`` on the call's operands gives the residuals
  (residuals that are inputs passed through are read where they are), a copy of ``bwd``
  on the residuals and the result adjoints gives the operands' adjoints. The copy of
  ``fwd`` repeats the primal's ops, which CSE merges with the primal's own copy. Forward
  mode is refused, as JAX refuses it.
* custom_jvp, forward: a copy of the ``jvp`` function on the operands and their tangents
  (zeros where inactive).
* custom_jvp, reverse: JAX transposes the linear tangent part of the jvp rule; here that
  is zymase's reverse mode of the ``jvp`` function with respect to its tangent arguments
  only (primal inputs constant), run with zero tangents (the map is linear in them) and
  zero seeds for the primal outputs.

* ``jax.lax.custom_linear_solve`` (``@zymase.linear_solve``, called computations
  ``[zeros, solve, transpose_solve]``, each taking every operand): a zero whose
  derivative is the solve's, which is linear in its right-hand side: its tangent is the
  solve of the right-hand side's tangent and its cotangent the transposed solve of the
  result's, as JAX's rule transposes it; the values it closes over (the factors) get
  nothing, as in JAX.

Traced values a rule closes over are passed to its functions first (``captured`` in the
marker's config). Differentiating with respect to a value the custom function closes over
is refused, as JAX refuses it for custom_vjp: the rule says nothing about such values.
"""

from __future__ import annotations

import json
import weakref

from zymase.autodiff import hlo as hlo_ad
from zymase.autodiff.registry import Rule
from zymase.autodiff.rules.stablehlo_regions import inline
from zymase.errors import ZymaseError
from zymase.ir import ModuleOp, StringAttr, func
from zymase.ir import stablehlo as hlo


def _config(op) -> dict:
    return json.loads(op.backend_config.data)


def _functions(module, op) -> list[func.FuncOp]:
    names = hlo.called_computations(op)
    table = {f.sym_name.data: f for f in module.ops if isinstance(f, func.FuncOp)}
    return [table[n] for n in names]


def _kind(op) -> str:
    return "jax.custom_vjp" if op.call_target_name.data == hlo.CUSTOM_VJP_TARGET else "jax.custom_jvp"


def _refuse(op, what: str, hint: str, function: str | None = None):
    config = _config(op)
    defined = f" (defined at {config['defined']})" if config.get("defined") else ""
    raise ZymaseError(f"'{config['rule']}' has a {_kind(op)} rule{defined}: {what}", construct=_kind(op),
                      function=function, location=config.get("called"), hint=hint)


def _refuse_closed_over(ctx, op) -> None:
    consts = _config(op)["consts"]
    if any(ctx.wants(v) for v in op.operands[:consts]):
        _refuse(op, "zymase would differentiate with respect to a value the function closes over (or a "
                    "nondiff_argnums argument), which the rule does not cover",
                "pass the value to the custom function as a differentiable argument", ctx.function)


def _captured(ctx, op, function: int) -> list:
    """The operands the rule's ``function``-th called computation takes first: traced
    values its rule closes over (``frontends/jax_custom_rules._function``)."""
    return [ctx.primal(op.operands[k]) for k in _config(op)["captured"][function]]


class _CustomRule(Rule):
    def propagates(self, op, index):
        config = _config(op)
        consts = config["consts"]
        if index < consts:  # reached only to refuse: see _refuse_closed_over
            return hlo.is_float_tensor(op.operands[index].type)
        return config["float_in"][index - consts]


class CustomVJP(_CustomRule):
    def reverse(self, ctx, op, dys):
        _refuse_closed_over(ctx, op)
        config = _config(op)
        consts, E = config["consts"], ctx.E
        _, fwd, bwd = _functions(E.module, op)
        operands = [ctx.primal(v) for v in op.operands]
        outs, _, _ = inline(E, fwd.body, _captured(ctx, op, 1) + operands[consts:])
        made = iter(outs[:len(outs) - len(op.results)])
        # forwarded residuals count the closed-over constants among the operands
        residuals = [next(made) if k is None else operands[k] for k in config["forwarded"]]
        cts = [dy if dy is not None else E.zero(r.type)
               for r, dy, is_float in zip(op.results, dys, config["float_out"]) if is_float]
        adjoints = iter(inline(E, bwd.body, _captured(ctx, op, 2) + residuals + cts)[0])
        return [None] * consts + [next(adjoints) if is_float else None for is_float in config["float_in"]]

    def forward(self, ctx, op, tangents):
        _refuse(op, "its rule has no forward mode (JAX refuses jax.jvp of it too)",
                "use reverse mode (zymase.jax.grad / vjp), or give the function a jax.custom_jvp rule",
                ctx.function)


class CustomJVP(_CustomRule):
    def forward(self, ctx, op, tangents):
        _refuse_closed_over(ctx, op)
        config = _config(op)
        consts, E = config["consts"], ctx.E
        _, jvp = _functions(E.module, op)
        inputs = [ctx.primal(v) for v in op.operands[consts:]]
        ins = [t if t is not None else E.zero(v.type)
               for v, t, is_float in zip(op.operands[consts:], tangents[consts:], config["float_in"]) if is_float]
        outs = inline(E, jvp.body, _captured(ctx, op, 1) + inputs + ins)[0]
        made = iter(outs[len(op.results):])
        return [next(made) if is_float else None for is_float in config["float_out"]]

    def reverse(self, ctx, op, dys):
        _refuse_closed_over(ctx, op)
        config = _config(op)
        consts, E = config["consts"], ctx.E
        _, jvp = _functions(E.module, op)
        transpose = _tangent_transpose(jvp, sum(config["float_in"]), ctx.function)
        inputs = [ctx.primal(v) for v in op.operands[consts:]]
        zero_tangents = [E.zero(v.type) for v, is_float in zip(op.operands[consts:], config["float_in"]) if is_float]
        primal_seeds = [E.zero(r.type) for r in op.results if hlo.is_float_tensor(r.type)]
        seeds = [dy if dy is not None else E.zero(r.type)
                 for r, dy, is_float in zip(op.results, dys, config["float_out"]) if is_float]
        outs = inline(E, transpose.body, _captured(ctx, op, 1) + inputs + zero_tangents + primal_seeds + seeds)[0]
        adjoints = iter(outs[len(outs) - len(zero_tangents):])
        return [None] * consts + [next(adjoints) if is_float else None for is_float in config["float_in"]]


class LinearSolve(Rule):
    """The marked solve of ``frontends/jax_linear_solve`` (see the module doc)."""

    def propagates(self, op, index):
        return index >= _config(op)["consts"]

    def _apply(self, ctx, op, which: int, values, like) -> list:
        """The ``which``-th called computation on the factors and ``values`` (zeros, of the
        types of ``like``, where None)."""
        consts, E = _config(op)["consts"], ctx.E
        function = _functions(E.module, op)[which]
        operands = [ctx.primal(v) for v in op.operands[:consts]]
        ins = [d if d is not None else E.zero(v.type) for v, d in zip(like, values)]
        return inline(E, function.body, operands + ins)[0]

    def forward(self, ctx, op, tangents):
        consts = _config(op)["consts"]
        return self._apply(ctx, op, 1, tangents[consts:], op.operands[consts:])

    def reverse(self, ctx, op, dys):
        return [None] * _config(op)["consts"] + self._apply(ctx, op, 2, dys, op.results)


# transposed jvp functions, by the function (calls of one traced custom function share it)
_TRANSPOSED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _tangent_transpose(jvp: func.FuncOp, n_tangents: int, function: str) -> func.FuncOp:
    """The reverse mode (``autodiff/hlo.reverse``) of a custom_jvp rule's function with
    respect to its ``n_tangents`` trailing (tangent) arguments, as the ``@main`` of a module
    of its own: ``(inputs, tangents, seeds of its float results) -> (results, tangent
    adjoints)``; made once per function (it is copied where it is used)."""
    if jvp not in _TRANSPOSED:
        _TRANSPOSED[jvp] = _transposed(jvp, n_tangents, function)
    return _TRANSPOSED[jvp]


def _transposed(jvp: func.FuncOp, n_tangents: int, function: str) -> func.FuncOp:
    copy = jvp.clone()
    copy.sym_name = StringAttr("main")
    # the functions of the markers it holds (a linear solve's), themselves inlined already
    table = {f.sym_name.data: f for f in jvp.parent_op().ops if isinstance(f, func.FuncOp)}
    called, work = [], [jvp]
    while work:
        for name in hlo_ad.marker_functions(work.pop()):
            if table[name] not in called:
                called.append(table[name])
                work.append(table[name])
    module = ModuleOp([copy, *(f.clone() for f in called)])
    n_inputs = len(copy.body.blocks[0].args)
    hlo_ad.reverse(module, [False] * (n_inputs - n_tangents) + [True] * n_tangents, function)
    return hlo_ad.main_function(module)


CUSTOM_RULES = {hlo.CUSTOM_VJP_TARGET: CustomVJP(), hlo.CUSTOM_JVP_TARGET: CustomJVP(),
                hlo.LINEAR_SOLVE_TARGET: LinearSolve()}
